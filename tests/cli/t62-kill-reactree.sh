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
reference_run "$T/template" "deliver it" triples
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

kill_each_point "$T/template" "deliver it" triples
finish
