#!/usr/bin/env bash
# The kill test of the ends other than success (the other kill tests'
# runs complete): a loop that reaches max_iterations, a ReAcTree root that
# fails (a fallback whose every child fails, the first a parallel node
# whose children both fail), and a loop ended by its actuator's error are killed with
# SIGKILL at every crash point of their reference runs; one `ailoop
# resume` must end each as its reference ended: the same exit code and
# status, the same commits, the same tree, a clean `git fsck --strict` and
# work tree.
. "$(dirname "$0")/lib.sh"

T=$TEST_TMP

# --- max iterations: an actuator that changes nothing ------------------------------
loop_repo "$T/max" a b
one_loop "$T/max" noop.md "max_iterations: 2"
commit_all "$T/max"
reference_run "$T/max" "fix all" triples
expect_eq "$ref_rc $ref_status" "1 max-iterations-reached" "the loop's reference run reaches its limit"
kill_each_point "$T/max" "fix all" triples

# --- a failing root: each child of the fallback fails ------------------------------
new_repo "$T/failed"
scripted_agents "$T/failed" action
cat >"$T/failed/.ai-loop/flow.yaml" <<'YAML'
version: 1
flow:
  id: main
  type: sequence
  children:
    - {id: first, skill: first}
    - id: tries
      type: fallback
      children:
        - id: both
          type: parallel
          isolation: shared
          success_threshold: 1
          failure_threshold: 2
          children:
            - {id: one, skill: try-one}
            - {id: two, skill: try-two}
        - {id: three, skill: try-three}
YAML
cat >"$T/plan" <<'PLAN'
case $skill in
try-*) fails ;;
*) creates "$skill.txt" ;;
esac
PLAN
export PLAN=$T/plan
unset TRAIL
commit_all "$T/failed"
# the history, the parallel children's commits (made in either order) as a set
canonical() {
	triples "$1" | grep -v ' main/tries/both/'
	triples "$1" | grep ' main/tries/both/' | sort
}
reference_run "$T/failed" "deliver it" canonical
expect_eq "$ref_rc $ref_status" "1 failed" "the failing root's reference run fails"
expect_eq "$(git log --format=%s -1)" "ai-loop[main]: iteration 0 — tries: failed" \
	"the failing root's end is committed"
kill_each_point "$T/failed" "deliver it" canonical lock_free

# --- an actuator's error ends the run ----------------------------------------------
loop_repo "$T/error" a b
one_loop "$T/error" failing.md "max_iterations: 3"
commit_all "$T/error"
reference_run "$T/error" "fix all" triples
expect_eq "$ref_rc $ref_status" "1 error" "the erring actuator's reference run ends in its error"
kill_each_point "$T/error" "fix all" triples

finish
