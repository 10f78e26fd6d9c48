#!/usr/bin/env bash
# How runs end without success: max iterations at the root and in a child,
# a controller without a verdict, an agent that fails, an agent that never
# ends, and an agent that commits by itself.
. "$(dirname "$0")/lib.sh"

# flow_repo NAME ACTUATOR [MAX]: a one-level loop repo with that actuator
flow_repo() {
	R=$TEST_TMP/$1
	loop_repo "$R" a b c
	one_loop "$R" "$2" "max_iterations: ${3:-5}" "${4:-}"
	commit_all "$R"
	cd "$R"
}

# --- max iterations at the root: exit 1 ------------------------------------------
flow_repo maxroot noop.md 2
run "$AILOOP" run "try twice"
expect_rc 1 "max iterations at the root"
expect_in "$out" ": max-iterations-reached" "outcome says max iterations"
expect_eq "$(labels "$R")" "0 1 2 3" "labels up to the limit"
expect_eq "$(git log -1 --format=%s)" "ai-loop[fix]: iteration 3 — max iterations reached (2)" \
	"last subject"
expect_eq "$(git log -1 --format=%B | sed -n 's/^\[status\] //p')" "max-iterations-reached" \
	"last status"
result=$(cat .ai-loop/runs/run_*/nodes/fix/result-output.md)
expect_in "$result" "status: max-iterations-reached" "result status"
expect_in "$result" "termination-reason: max-iterations" "result reason"
expect_in "$result" "What the controller still asked for" "result tells the parent what is left"
expect_eq "$(git status --porcelain)" "" "clean tree"
run "$AILOOP" status
expect_in "$out" "fix                              3        2 of 2      commit     -          max-iterations-reached" \
	"status counts the iterations up to the limit, not the last measurement beyond it"

# --- max iterations in a child: the parent carries on ---------------------------
R=$TEST_TMP/maxchild
loop_repo "$R" a b c
two_loops "$R" noop.md "max_iterations: 1" "max_iterations: 2"
commit_all "$R"
cd "$R"
run "$AILOOP" run "try"
expect_rc 1 "run with a child at its limit"
expect_eq "$(labels "$R")" "0 1.0 1.1 1.2 1 2.0 2.1 2.2 2 3" "parent continues after the child"
expect_eq "$(git log --format=%B -1 HEAD~6 | sed -n "s/^\[status\] //p")" \
	"max-iterations-reached" "the child stopped at its limit"
expect_eq "$(git log --format=%s -1 HEAD~5)" \
	"ai-loop[outer]: iteration 1 — inner: max-iterations-reached after 1 iteration" \
	"the parent records the child's result"

# --- a controller output without target-met -------------------------------------
flow_repo noverdict fixer.md 5 .ai-loop/agents/no-verdict.md
run "$AILOOP" run "decide"
expect_rc 1 "controller without a verdict"
expect_in "$err" "controller-output.md' unreadable: it has no front matter" "error names the problem"
expect_in "$err" "(asked again, it wrote no better)" "after asking the controller again once"
expect_in "$err" ".ai-loop/runs/run_" "error names the file"
expect_in "$out" ": error" "outcome says error"
expect_eq "$(git log -1 --format=%B | sed -n 's/^\[status\] //p')" "error" "last commit is the error"
expect_eq "$(labels "$R")" "0 1" "stopped at the first decision"
expect_in "$(cat .ai-loop/runs/run_*/run-state.md)" "status: error" "run status error"
expect_in "$(cat .ai-loop/runs/run_*/nodes/fix/result-output.md)" "status: error" \
	"result-output says error"
expect_eq "$(git status --porcelain)" "" "clean tree after an error"

# --- an agent that exits non-zero -------------------------------------------------
flow_repo failing failing.md
run "$AILOOP" run "fail"
expect_rc 1 "failing actuator"
expect_in "$err" "actuator '.ai-loop/agents/failing.md' failed with exit status 3" \
	"error names the agent and status"
expect_in "$err" "logs/actuator.log" "error points at the log"
expect_in "$(cat .ai-loop/runs/run_*/nodes/fix/logs/actuator.log)" "cannot do it" \
	"log keeps the agent's stderr"
expect_eq "$(git log -1 --format=%B | sed -n 's/^\[status\] //p')" "error" "error committed"
run git fsck --strict
expect_rc 0 "fsck after a failure"

# --- an agent that never exits: stopped at its timeout, with its children ------
flow_repo hang hang.md
export HANG_PIDS=$TEST_TMP/hang-pids
run "$AILOOP" run "wait forever"
expect_rc 1 "hanging actuator"
expect_in "$err" "did not finish in time and was stopped" "timeout message"
[ -s "$HANG_PIDS" ] && pass || fail "the hanging agent recorded its pids"
for pid in $(cat "$HANG_PIDS"); do
	state=$(ps -o stat= -p "$pid" 2>/dev/null || true)
	# ailoop reaps them itself: not even a zombie is left
	[ -z "$state" ] && pass || fail "process $pid of the agent survived ($state)"
done

# --- an agent that commits by itself -----------------------------------------------
flow_repo selfcommit self-commit.md
run "$AILOOP" run "commit yourself"
expect_rc 0 "self-committing actuator"
expect_eq "$(git log --reverse --format=%s main..HEAD | sed -n 2,3p)" \
	"agent: fixed one item itself
ai-loop[fix]: iteration 1 — fixed a" "ailoop commits on top of the agent's commit"
expect_eq "$(labels "$R")" "0 1 2 3 4" "labels unbroken by agent commits"
expect_in "$out" "commits:      8" "commit count includes the agent's"
run "$AILOOP" log --json
expect_eq "$(printf '%s\n' "$out" | jq -r '.[].label' | tr '\n' ' ')" "0 1 2 3 4 " \
	"log skips the agent's commits"
run git fsck --strict
expect_rc 0 "fsck with agent commits"

finish
