#!/usr/bin/env bash
# The circuit breaker of a sensor-form loop: no progress opens it after
# exactly no_progress_limit iterations (exit 4, run and node blocked, a
# message saying why and what to do); `ailoop status` and the event log
# show it; `ailoop resume` resets it, says so and acts again (and the run
# completes once the agent makes progress); the same failing output opens
# it after same_error_limit iterations even when files change; slow,
# steady progress never opens it; its counters survive a SIGKILL.
. "$(dirname "$0")/lib.sh"

# calls: how many times the actuator ran (it appends to $CALLS)
calls() { grep -c . "$CALLS" 2>/dev/null || echo 0; }

# an actuator that changes nothing until $GO exists, then fixes an item
idle_agent() {
	cat >"$1/.ai-loop/agents/idle.md" <<'MD'
---
name: idle
command: 'echo x >>"$CALLS"; if [ -e "$GO" ]; then sh .ai-loop/agents/fix.sh; else echo "looked, changed nothing"; fi'
---
Fix one item.
MD
}

# --- no progress: blocked after exactly no_progress_limit iterations ---------------
R=$TEST_TMP/stuck
export CALLS=$TEST_TMP/stuck-calls GO=$TEST_TMP/stuck-go
loop_repo "$R" a b
idle_agent "$R"
one_loop "$R" idle.md "max_iterations: 10"
commit_all "$R"
cd "$R"
run "$AILOOP" run "fix all"
expect_rc 4 "a loop without progress is blocked (exit 4)"
expect_eq "$(calls)" 3 "the actuator ran exactly no_progress_limit (3) times"
expect_in "$err" "circuit breaker open at node 'fix': no progress in 3 iterations (1 to 3)" \
	"the message names the node, the reason and the iterations"
expect_in "$err" "ailoop resume run_" "the message says what to do"
expect_in "$err" "no_progress_limit" "the message names the limit to raise"
expect_in "$err" "circuit breaker half-open" "the half-open state is shown"
expect_in "$out" "is blocked" "the outcome says blocked"
expect_eq "$(run_status)" "blocked" "the run is blocked"
expect_eq "$("$AILOOP" status --json | jq -r '.nodes[0].status')" "blocked" "the node is blocked"
expect_eq "$("$AILOOP" status --json | jq -r '.nodes[0].breaker.state')" "open" \
	"status --json shows the breaker open"
expect_eq "$("$AILOOP" status --json | jq -r '.nodes[0].breaker.no_progress')" "3" \
	"status --json counts the iterations without progress"
run "$AILOOP" status
expect_in "$out" "breaker open" "ailoop status shows the breaker open"
expect_in "$out" "no progress in 3 iterations" "ailoop status says why"
events=$(cat .ai-loop/runs/run_*/events.jsonl)
expect_eq "$(printf '%s\n' "$events" | jq -r 'select(.event == "breaker_half_open") | .label')" \
	"2" "half-open is logged once, at iteration 2"
expect_eq "$(printf '%s\n' "$events" | jq -r 'select(.event == "breaker_open") | .reason')" \
	"no progress" "the opening is logged with its reason"
expect_eq "$(printf '%s\n' "$events" | jq -r 'select(.event == "run_blocked") | .event')" \
	"run_blocked" "the run's block is logged"
expect_eq "$(labels "$R")" "0 1 2 3" "every iteration that ran is committed"

# a new run refuses while the blocked one can be resumed
run "$AILOOP" run "another"
expect_rc 64 "run with a blocked run present"
expect_in "$err" "ailoop resume" "names ailoop resume"

# --- resume resets it and acts again: still no progress, blocked again -------------
run "$AILOOP" resume
expect_rc 4 "resumed without progress: blocked again"
expect_in "$err" "was blocked (by a circuit breaker or a spent budget): resetting the breakers and acting again" \
	"resume says it resets the breaker"
expect_in "$err" "circuit breaker reset" "the node says its breaker was reset"
expect_eq "$(calls)" 6 "three more actuations after the reset"
expect_in "$err" "no progress in 3 iterations (4 to 6)" "counted afresh from the resume"
expect_eq "$(cat .ai-loop/runs/run_*/events.jsonl | jq -r 'select(.event == "breaker_reset") | .node')" \
	"fix" "the reset is logged"

# --- resume once the agent can progress: the run completes ------------------------
# (and with the limit raised, as the message says: a change resume lets pass)
touch "$GO"
sed -i 's/max_iterations: 10/max_iterations: 10, no_progress_limit: 4/' .ai-loop/flow.yaml
run "$AILOOP" resume
expect_rc 0 "resumed with progress: complete"
expect_in "$err" "changed since run run_" "resume notes the flow changed"
expect_in "$err" "in its limits or hooks only: going on" "a raised breaker limit needs no --force"
expect_eq "$(calls)" 8 "two actuations fixed the two items"
expect_eq "$(run_status)" "complete" "the run is complete"
expect_eq "$("$AILOOP" status --json | jq -r '.nodes[0].breaker.state')" "closed" \
	"the breaker is closed at the end"
expect_eq "$(labels "$R")" "0 1 2 3 4 5 6 7 8 9" "labels go on without a gap or a repeat"
expect_eq "$(git status --porcelain)" "" "clean tree"

# --- the same failing output opens it, even when files change ----------------------
R=$TEST_TMP/same
export CALLS=$TEST_TMP/same-calls
loop_repo "$R" a
cat >"$R/.ai-loop/agents/flaky.md" <<'MD'
---
name: flaky
command: 'echo x >>"$CALLS"; date +%s%N >>notes.txt; echo "edited notes"'
---
Try something.
MD
# the output differs each time only in a duration and a time of day
cat >"$R/.ai-loop/agents/same.md" <<'MD'
---
name: unit
command: 'echo "FAILED test_login in 0.$(date +%N) s at $(date +%H:%M:%S)"; exit 1'
---
MD
cat >"$R/.ai-loop/flow.yaml" <<'YAML'
version: 1
flow:
  id: fix
  type: loop
  controller: builtin:all-pass
  sensors: [.ai-loop/agents/same.md]
  actuator: {strategy: direct, agent: .ai-loop/agents/flaky.md}
  termination: {max_iterations: 20}
YAML
commit_all "$R"
cd "$R"
run "$AILOOP" run "fix the login"
expect_rc 4 "the same error over and over is blocked"
expect_eq "$(calls)" 5 "after exactly same_error_limit (5) iterations"
expect_in "$err" "the same failing sensor output 5 iterations in a row (1 to 5)" \
	"the message names the same error"
expect_in "$err" "same_error_limit" "the message names the limit to raise"
expect_eq "$(cat .ai-loop/runs/run_*/events.jsonl | jq -r 'select(.event == "breaker_open") | .reason')" \
	"the same error" "the event gives the reason"

# the limits are the loop's own: raised, it goes on; 0 turns a check off
sed -i 's/max_iterations: 20}/max_iterations: 8, same_error_limit: 0}/' .ai-loop/flow.yaml
commit_all "$R" "no same-error check"
run "$AILOOP" run --new "fix the login"
expect_rc 1 "same_error_limit 0: runs to max iterations"
expect_in "$out" "max-iterations-reached" "ended by max iterations"
expect_eq "$(calls)" 13 "eight more actuations"

# --- slow, steady progress never opens it -----------------------------------------
R=$TEST_TMP/slow
export CALLS=$TEST_TMP/slow-calls
loop_repo "$R" a b c d
# fixes an item every third call only: two calls in a row without progress
cat >"$R/.ai-loop/agents/slow.md" <<'MD'
---
name: slow
command: 'echo x >>"$CALLS"; if [ $(($(grep -c . "$CALLS") % 3)) -eq 0 ]; then sh .ai-loop/agents/fix.sh; else echo thinking; fi'
---
Fix one item, slowly.
MD
one_loop "$R" slow.md "max_iterations: 20"
commit_all "$R"
cd "$R"
run "$AILOOP" run "fix slowly"
expect_rc 0 "slow, steady progress completes"
expect_eq "$(calls)" 12 "twelve actuations, never blocked"
events=$(cat .ai-loop/runs/run_*/events.jsonl)
expect_eq "$(printf '%s\n' "$events" | grep -c '"breaker_half_open"')" 4 \
	"half-open each time two calls made no progress"
expect_eq "$(printf '%s\n' "$events" | grep -c '"breaker_closed"')" 4 \
	"closed again by each step of progress"
expect_not_in "$events" "breaker_open\"" "it never opened"

# --- the counters survive a SIGKILL ---------------------------------------------
R=$TEST_TMP/killed
export CALLS=$TEST_TMP/killed-calls
loop_repo "$R" a
# kills ailoop (its parent) on its second call, having changed nothing
cat >"$R/.ai-loop/agents/killer.md" <<'MD'
---
name: killer
command: 'echo x >>"$CALLS"; if [ "$(grep -c . "$CALLS")" -eq 2 ]; then kill -9 $PPID; sleep 1; fi; echo idle'
---
MD
one_loop "$R" killer.md "max_iterations: 10"
commit_all "$R"
cd "$R"
run "$AILOOP" run "die once"
expect_rc 137 "ailoop killed in iteration 2"
run "$AILOOP" resume
expect_rc 4 "resumed: blocked at the same point as without the kill"
expect_in "$err" "no progress in 3 iterations (1 to 3)" "iterations before the kill counted"
expect_eq "$(calls)" 4 "the killed step ran again, and no more"

# --- defaults.termination sets every loop's limits; a loop's own wins ------------
R=$TEST_TMP/defaults
export CALLS=$TEST_TMP/defaults-calls GO=$TEST_TMP/defaults-go
loop_repo "$R" a b
idle_agent "$R"
one_loop "$R" idle.md "max_iterations: 10" "" "termination: {no_progress_limit: 2}"
commit_all "$R"
cd "$R"
run "$AILOOP" run "fix all"
expect_rc 4 "blocked by the flow's default limit"
expect_in "$err" "no progress in 2 iterations (1 to 2)" "after defaults.termination.no_progress_limit"
sed -i 's/max_iterations: 10/max_iterations: 10, no_progress_limit: 4/' .ai-loop/flow.yaml
run "$AILOOP" validate
expect_rc 0 "the loop's own limit beside the default"
rm -rf .ai-loop/runs && git add -A && git commit -qm "own limit"
: >"$CALLS"
run "$AILOOP" run "fix all"
expect_in "$err" "no progress in 4 iterations (1 to 4)" "the loop's own limit wins over the default"
printf 'version: 1\ndefaults:\n  termination: {same_error_limit: -1}\nflow: {id: a, skill: a}\n' \
	>.ai-loop/flow.yaml
run "$AILOOP" validate
expect_rc 65 "a negative default limit"
expect_in "$err" "flow.yaml:3:" "is reported at its position"

finish
