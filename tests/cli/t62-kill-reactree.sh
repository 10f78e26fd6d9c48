#!/usr/bin/env bash
# The kill test for ReAcTree flows (as t33-kill.sh is for sensor-form
# loops): a flow of loop-until, sequence, fallback, conditional,
# transaction (which rolls back), break_loop and actions, whose conditions
# read files and working memory the agents write, is killed with SIGKILL
# at every crash point of its reference run; one `ailoop resume` must then
# end it exactly like the reference: the same (label, node, status)
# sequence, the same tree, a clean `git fsck --strict` and work tree, the
# same final status and exit code. The agents decide by their skill and
# iteration only, and write what they write idempotently, so an agent that
# runs again after a kill does what it did.
. "$(dirname "$0")/lib.sh"

T=$TEST_TMP
new_repo "$T/template"
scripted_agents "$T/template" action
cat >"$T/template/.ai-loop/flow.yaml" <<'YAML'
version: 1
flow:
  id: main
  type: sequence
  children:
    - id: rounds
      type: loop
      max_iterations: 3
      condition: {type: file_exists, path: "work-2*.txt"}
      children:
        - id: pick
          type: fallback
          children:
            - {id: tx, type: transaction, children: [{id: try, skill: try}]}
            - {id: alt, skill: alt}
        - id: check
          type: conditional
          condition: {key: rounds.ready, operator: equals, value: true}
          then: {id: stop, skill: break_loop}
YAML
printf 'keep me\n' >"$T/template/keep.txt"
# try fails in the first iteration, after changing the tree (rolled back),
# and succeeds in the second, which break_loop then ends
cat >"$T/plan" <<'PLAN'
case $skill in
try)
	creates "work-$AILOOP_ITERATION.txt"
	if [ "$AILOOP_ITERATION" = 2 ]; then mem rounds.ready true; else
		creates junk/file.txt; echo changed >README; rm -f keep.txt; fails
	fi ;;
alt) creates alt.txt ;;
esac
PLAN
export PLAN=$T/plan
unset TRAIL
commit_all "$T/template"

# the reference, with every crash point it passes logged
cp -a "$T/template" "$T/reference"
cd "$T/reference"
ref_rc=$({ AILOOP_CRASH_LOG="$T/points" "$AILOOP" run --quiet "deliver it" >/dev/null 2>&1; echo $?; })
ref_triples=$(triples "$T/reference")
ref_tree=$(code_tree "$T/reference")
ref_status=$(run_status)
total=$(wc -l <"$T/points")
expect_eq "$ref_rc $ref_status" "0 complete" "the reference run succeeds"
expect_eq "$(printf '%s\n' "$ref_triples" | tr '\n' ,)" "1 main/rounds/pick/tx/try failed,\
1 main/rounds/pick/tx failed,1 main/rounds/pick/alt complete,1 main/rounds running,\
2 main/rounds/pick/tx/try complete,2 main/rounds complete,0 main complete," "the reference run's path"
expect_eq "$(git ls-files | grep -v '^\.ai-loop/' | tr '\n' ' ')" \
	"README alt.txt keep.txt work-2.txt " "the reference run's files (the rollback undid try's first)"
expect_eq "$(cat README)" "hello" "the reference run's README is back"
expect_eq "$(git log --format=%s | grep -c 'break_loop after 2 iterations')" 1 \
	"the reference run's loop ends through break_loop"
[ "$total" -gt 100 ] && pass || fail "only $total crash points in the reference run"

tried=0 recovered=0
for n in $(seq 1 "$total"); do
	w=$T/work
	rm -rf "$w"
	cp -a "$T/template" "$w"
	cd "$w"
	problems=""
	# (in a command substitution: the shell says nothing of the kill)
	rc=$({ AILOOP_CRASH_AT=$n "$AILOOP" run --quiet "deliver it" >/dev/null 2>&1; echo $?; } 2>/dev/null)
	[ "$rc" -eq 137 ] || problems="$problems not-killed($rc)"
	rc=$({ "$AILOOP" resume >/dev/null 2>"$T/resume.err"; echo $?; } 2>/dev/null)
	if [ "$rc" -eq 66 ] && grep -q "no run to resume" "$T/resume.err"; then
		if "$AILOOP" status >/dev/null 2>&1; then # killed after its last commit: the run is over
			rc=$ref_rc # (its status is checked below)
		else # killed before the run existed: the user runs it again
			rc=$({ "$AILOOP" run --quiet "deliver it" >/dev/null 2>"$T/resume.err"; echo $?; } 2>/dev/null)
		fi
	fi
	tried=$((tried + 1))
	[ "$rc" -eq "$ref_rc" ] || problems="$problems exit=$rc($(head -c 300 "$T/resume.err"))"
	[ "$(triples "$w")" = "$ref_triples" ] || problems="$problems history"
	[ "$(code_tree "$w")" = "$ref_tree" ] || problems="$problems tree"
	git fsck --strict >/dev/null 2>&1 || problems="$problems fsck"
	[ -z "$(git status --porcelain)" ] || problems="$problems dirty"
	status=$(run_status)
	[ "$status" = "$ref_status" ] || problems="$problems status($status)"
	if [ -z "$problems" ]; then
		recovered=$((recovered + 1))
		pass
	else
		fail "kill at point $n ($(sed -n "${n}p" "$T/points")):$problems"
		diff <(printf '%s\n' "$ref_triples") <(triples "$w") | head -10 >&2
	fi
done
echo "kill test: tried $tried kill points, $recovered recovered ($SECONDS s)"
finish
