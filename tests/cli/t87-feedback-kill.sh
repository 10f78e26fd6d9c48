#!/usr/bin/env bash
# FEEDBACK edges survive SIGKILL: a run whose check sends feedback to the
# build before it (resolved in round one), killed at every crash point it
# passes around the feedback (AILOOP_CRASH_AT: feedback.jsonl written, the
# target's states removed, every state write and commit, agents at work;
# every third point elsewhere, all with KILL_ALL=1) and resumed once,
# ends exactly like the run left alone: the same commits, the same tree,
# feedback.jsonl through the same states, status complete.
. "$(dirname "$0")/lib.sh"

T=$TEST_TMP
new_repo "$T/template"
mkdir -p "$T/template/.ai-loop/agents"
cat >"$T/template/.ai-loop/agents/fb.md" <<'MD'
---
name: fb
command: sh .ai-loop/agents/fb.sh
---
Do the step.

{feedback-section}
MD
cat >"$T/template/.ai-loop/agents/fb.sh" <<'SH'
case $AILOOP_NODE_ID in
build)
	if grep -q '^## Feedback' "$AILOOP_PROMPT_FILE"; then echo fixed >build.txt
	else echo draft >build.txt; fi ;;
check)
	grep -q fixed build.txt || printf -- '---\nfeedback: {to: build, type: FIX_REQUEST, message: not fixed}\n---\nasked\n' >"$AILOOP_OUTPUT" ;;
esac
SH
cat >"$T/template/.ai-loop/flow.yaml" <<'YAML'
version: 1
flow:
  id: s
  type: sequence
  children:
    - {id: build, agent: fb}
    - {id: check, agent: fb, feedback_enabled: true}
    - {id: after, agent: fb}
YAML
commit_all "$T/template"

# feedback.jsonl's states, repeats of a state (a step done again) as one
states() { jq -r '"\(.id):\(.status)"' .ai-loop/runs/run_*/feedback.jsonl | uniq | tr '\n' ' '; }

cp -a "$T/template" "$T/reference"
cd "$T/reference" || exit 1
AILOOP_CRASH_LOG="$T/points" "$AILOOP" run --quiet "fix it" >/dev/null 2>&1
ref_triples=$(triples "$T/reference")
ref_tree=$(code_tree "$T/reference")
ref_states=$(states)
expect_eq "$ref_states" "fb-1:queued fb-1:delivered fb-1:processing fb-1:verifying fb-1:resolved " \
	"the reference run resolves its feedback"
total=$(wc -l <"$T/points")
[ "$total" -gt 40 ] && pass || fail "only $total crash points in the reference run"
grep -q 'feedback recorded' "$T/points" && grep -q 'feedback states removed' "$T/points" &&
	pass || fail "the feedback's own crash points are passed"

# the feedback's own points and those on either side of them; every third
# point elsewhere (all of them with KILL_ALL=1)
near=" $(grep -n 'feedback' "$T/points" | cut -d: -f1 |
	while read -r p; do echo $((p - 1)) "$p" $((p + 1)); done | tr '\n' ' ') "
bad=0
for n in $(seq 1 "$total"); do
	if [ -z "${KILL_ALL:-}" ] && [ "${near#* $n }" = "$near" ] && [ $((n % 3)) -ne 0 ]; then
		continue
	fi
	w=$T/work
	rm -rf "$w"
	cp -a "$T/template" "$w"
	cd "$w" || exit 1
	rc=$({ AILOOP_CRASH_AT=$n "$AILOOP" run --quiet "fix it" >/dev/null 2>&1; echo $?; } 2>/dev/null)
	if [ "$rc" -ne 0 ]; then
		rc=$({ "$AILOOP" resume >/dev/null 2>"$T/resume.err"; echo $?; } 2>/dev/null)
		if [ "$rc" -eq 66 ] && grep -q "no run to resume" "$T/resume.err"; then
			"$AILOOP" status >/dev/null 2>&1 && rc=0 ||
				{ "$AILOOP" run --quiet "fix it" >/dev/null 2>&1 && rc=0 || rc=$?; }
		fi
	fi
	problems=""
	[ "$rc" -eq 0 ] || problems+=" exit $rc ($(cat "$T/resume.err"))"
	[ "$(run_status)" = complete ] || problems+=" status $(run_status)"
	[ "$(triples "$w")" = "$ref_triples" ] || problems+=" commits: $(triples "$w" | tr '\n' ,)"
	[ "$(code_tree "$w")" = "$ref_tree" ] || problems+=" tree"
	[ "$(states)" = "$ref_states" ] || problems+=" feedback: $(states)"
	[ -z "$(git status --porcelain)" ] || problems+=" work tree not clean"
	if [ -n "$problems" ]; then
		bad=$((bad + 1))
		fail "killed at point $n ($(sed -n "${n}p" "$T/points")):$problems"
	else
		pass
	fi
	check_history "$w"
done
[ "$bad" -eq 0 ] && pass || fail "$bad of $total kill points did not end like the reference"

# status shows the feedback open while it is: killed as the build runs again
w=$T/open
cp -a "$T/template" "$w"
cd "$w" || exit 1
n=$(grep -n 'feedback recorded' "$T/points" | sed -n 3p | cut -d: -f1) # after "processing"
rc=$({ AILOOP_CRASH_AT=$n "$AILOOP" run --quiet "fix it" >/dev/null 2>&1; echo $?; } 2>/dev/null)
run "$AILOOP" status
expect_in "$out" "fb-1 s/check -> s/build: FIX_REQUEST, processing (round 1 of 2)" \
	"status: open feedback in text"
run "$AILOOP" status --json
expect_eq "$(printf '%s' "$out" | jq -r '.open_feedback[] | "\(.id) \(.status) \(.to)"')" \
	"fb-1 processing s/build" "status --json: open feedback"
run "$AILOOP" resume
expect_rc 0 "resumed after the kill: the run completes"
expect_eq "$(states)" "$ref_states" "resumed after the kill: the feedback is resolved"

finish
