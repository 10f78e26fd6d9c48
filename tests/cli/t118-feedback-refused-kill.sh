#!/usr/bin/env bash
# A refused feedback is recorded once, killed or not: a run whose check
# asks the build for a fix it never makes (refused after two rounds),
# killed (AILOOP_CRASH_AT) right after the refusal is recorded in
# feedback.jsonl and at the points after it, then resumed: the sender
# runs again and asks again, and the refusal is the one already recorded
# (said again as it was), not a second one ("the pair has had its 2
# rounds"): feedback.jsonl and
# its commit go through the same states as the run left alone, which
# fails the same way.
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
build) echo draft >build.txt ;;
check) printf -- '---\nfeedback: {to: build, type: FIX_REQUEST, message: still broken}\n---\nasked\n' >"$AILOOP_OUTPUT" ;;
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
YAML
commit_all "$T/template"

states() { jq -r '"\(.id):\(.status)"' .ai-loop/runs/run_*/feedback.jsonl | uniq | tr '\n' ' '; }
committed() {
	git show "HEAD:$(ls -d .ai-loop/runs/run_*)/feedback.jsonl" | jq -r '"\(.id):\(.status)"' |
		uniq | tr '\n' ' '
}

cp -a "$T/template" "$T/reference"
cd "$T/reference" || exit 1
rc=$({ AILOOP_CRASH_LOG="$T/points" "$AILOOP" run --quiet "fix it" >/dev/null 2>&1; echo $?; } 2>/dev/null)
expect_eq "$rc" 1 "the reference run fails: the feedback is refused"
ref_states=$(states)
expect_eq "$ref_states" "fb-1:queued fb-1:delivered fb-1:processing fb-1:verifying fb-1:queued fb-1:delivered fb-1:processing fb-1:verifying fb-1:failed " \
	"the reference run records the refusal once"
expect_eq "$(committed)" "$ref_states" "and commits it"
ref_triples=$(triples "$T/reference")

# the refusal's record is the last "feedback recorded"; it and the points after it
last=$(grep -n 'feedback recorded' "$T/points" | tail -1 | cut -d: -f1)
[ -n "$last" ] && pass || fail "the refusal's crash point is passed"
total=$(wc -l <"$T/points")
for n in $(seq "$last" "$total"); do
	w=$T/work
	rm -rf "$w"
	cp -a "$T/template" "$w"
	cd "$w" || exit 1
	{ AILOOP_CRASH_AT=$n "$AILOOP" run --quiet "fix it" >/dev/null 2>&1; } 2>/dev/null
	rc=$({ "$AILOOP" resume >/dev/null 2>"$T/resume.err"; echo $?; } 2>/dev/null)
	# killed after the run's last commit: it ended, failed, as the reference
	[ "$rc" -eq 66 ] && grep -q "no run to resume" "$T/resume.err" && rc=1
	problems=""
	[ "$rc" -eq 1 ] || problems+=" exit $rc ($(cat "$T/resume.err"))"
	[ "$(states)" = "$ref_states" ] || problems+=" feedback: $(states)"
	[ "$(committed)" = "$ref_states" ] || problems+=" committed: $(committed)"
	[ "$(triples "$w")" = "$ref_triples" ] || problems+=" commits: $(triples "$w" | tr '\n' ,)"
	if grep -q "refused" "$T/resume.err"; then
		problems+=" the resume refused it again: $(cat "$T/resume.err")"
	fi
	[ -z "$(git status --porcelain)" ] || problems+=" work tree not clean"
	if [ -n "$problems" ]; then
		fail "killed at point $n ($(sed -n "${n}p" "$T/points")):$problems"
	else
		pass
	fi
	check_history "$w"
done

finish
