#!/usr/bin/env bash
# Deadlines and agent errors: a node's timeout stops its agent and ends the
# node in `timeout` (exit 2 at the root, the parent carries on below it);
# on_error: continue lets a loop go on after an agent fails, fail-fast (the
# default) ends the run in error.
. "$(dirname "$0")/lib.sh"

export GATE=$TEST_TMP/gate STARTED=$TEST_TMP/started
touch "$GATE" # the gated actuator never finishes here

# --- the root's timeout: exit 2 ------------------------------------------------
R=$TEST_TMP/root
loop_repo "$R" a b
one_loop "$R" gated.md "timeout_seconds: 1"
commit_all "$R"
cd "$R"
rm -f "$STARTED"
run "$AILOOP" run "never done"
expect_rc 2 "root timeout exits 2"
expect_in "$out" ": timeout" "outcome says timeout"
expect_eq "$(triples "$R" | tail -1)" "1 fix timeout" "the last commit records the timeout"
expect_in "$(git log -1 --format=%s)" "timed out in phase actuate" "subject says where time ran out"
expect_in "$(cat .ai-loop/runs/run_*/nodes/fix/result-output.md)" "status: timeout" \
	"result-output says timeout"
expect_in "$(cat .ai-loop/runs/run_*/run-state.md)" "status: timeout" "run-state says timeout"
group_gone "$(head -1 "$STARTED")" && pass || fail "the actuator was stopped"
expect_eq "$(git status --porcelain)" "" "clean tree after a timeout"

# --- a child's timeout: the parent re-measures and carries on ---------------------------
R=$TEST_TMP/child
loop_repo "$R" a b
two_loops "$R" gated.md "timeout_seconds: 1" "max_iterations: 1"
commit_all "$R"
cd "$R"
run "$AILOOP" run "never done"
expect_rc 1 "a child's timeout does not stop its parent"
expect_eq "$(triples "$R" | tr '\n' ',')" "0 outer running,1.0 outer/inner running,\
1.1 outer/inner timeout,1 outer running,2 outer max-iterations-reached," \
	"the parent went on after the child's timeout"
expect_in "$(git log --format=%s -1 HEAD~1)" "inner: timeout after 0 iterations" \
	"the parent's commit names the child's result"

rm -f "$GATE"

# --- on_error: continue carries on after an agent fails ------------------------------------
R=$TEST_TMP/continue
loop_repo "$R" a b
one_loop "$R" failing.md "max_iterations: 2" "" "termination: {on_error: continue}"
commit_all "$R"
cd "$R"
run "$AILOOP" run "keep trying"
expect_rc 1 "continue ends at max iterations"
expect_eq "$(triples "$R" | tr '\n' ',')" \
	"0 fix running,1 fix running,2 fix running,3 fix max-iterations-reached," \
	"every iteration ran despite the failures"
expect_in "$(git log --format=%s -1 HEAD~1)" \
	"iteration 2 — actuator failed: actuator '.ai-loop/agents/failing.md' failed with exit status 3" \
	"the failure is the iteration's summary"
expect_in "$err" "(on_error: continue)" "progress says the loop goes on"
expect_in "$(cat .ai-loop/runs/run_*/events.jsonl)" '"event":"agent_error"' "the event log has it"

# a controller that fails under continue: the actuation is skipped
R=$TEST_TMP/continue-controller
loop_repo "$R" a
one_loop "$R" fixer.md "max_iterations: 1" .ai-loop/agents/no-verdict.md \
	"termination: {on_error: continue}"
commit_all "$R"
cd "$R"
run "$AILOOP" run "decide"
expect_rc 1 "continue after a controller without a verdict"
expect_in "$(git log --format=%s -1 HEAD~1)" "controller failed: controller output" \
	"the failed decision is recorded"
expect_eq "$(cat todo.txt)" "a" "no actuation without a decision"

# --- fail-fast (the default) ends the run at the first failure ----------------------------
R=$TEST_TMP/failfast
loop_repo "$R" a b
sed 's/on_error: continue/on_error: fail-fast/' "$TEST_TMP/continue/.ai-loop/flow.yaml" \
	>"$R/.ai-loop/flow.yaml"
commit_all "$R"
cd "$R"
run "$AILOOP" run "stop at once"
expect_rc 1 "fail-fast ends in error"
expect_eq "$(triples "$R" | tr '\n' ',')" "0 fix running,1 fix error," "stopped at the first failure"
expect_in "$(cat .ai-loop/runs/run_*/run-state.md)" "status: error" "run status error"

finish
