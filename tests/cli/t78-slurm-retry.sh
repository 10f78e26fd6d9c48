#!/usr/bin/env bash
# A job step that Slurm ends (scancel of the running step, as a node failure
# or a preemption would) is run once more, and the run completes as
# without it; Slurm ending it a second time is an agent error. An agent's
# own failure on Slurm is not retried.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/slurm-cluster.sh"
slurm_start

export GATE=$TEST_TMP/gate STARTED=$TEST_TMP/started

# an actuator that says its job id, waits while the gate is there, then fixes an item
slurm_repo() {
	R=$TEST_TMP/$1
	loop_repo "$R" a b
	cat >"$R/.ai-loop/agents/stepped.sh" <<'SH'
#!/bin/sh
echo "$SLURM_JOB_ID" >>"$STARTED"
while [ -e "$GATE" ]; do sleep 0.1; done
exec sh "$(dirname "$0")/fix.sh"
SH
	cat >"$R/.ai-loop/agents/stepped.md" <<'MD'
---
name: stepped
command: [sh, .ai-loop/agents/stepped.sh]
---
An actuator that waits for the test's gate.
MD
	one_loop "$R" stepped.md "max_iterations: 4" "" "executor: slurm"
	commit_all "$R"
	cd "$R"
}

# the n-th line of $STARTED, once it is there
nth_job() {
	for _ in $(seq 300); do
		[ "$(wc -l 2>/dev/null <"$STARTED" || echo 0)" -ge "$1" ] && break
		sleep 0.1
	done
	sed -n "${1}p" "$STARTED" 2>/dev/null
}

# the reference: the same loop, nobody cancels anything
slurm_repo reference
rm -f "$STARTED" "$GATE"
run "$AILOOP" run "fix all"
expect_rc 0 "reference run"
ref_triples=$(triples "$R")

# --- Slurm ends the first step once: it runs again, the run completes -------------------
slurm_repo once
rm -f "$STARTED"
touch "$GATE"
"$AILOOP" run "fix all" >"$TEST_TMP/out" 2>"$TEST_TMP/err" &
pid=$!
job=$(nth_job 1)
[ -n "$job" ] && pass || fail "the first step started"
scancel "$job"
job2=$(nth_job 2)
[ -n "$job2" ] && [ "$job2" != "$job" ] && pass || fail "the step ran again as a new job ($job, $job2)"
rm -f "$GATE"
wait "$pid" && rc=0 || rc=$?
expect_eq "$rc" 0 "the run completes after one step killed by slurm"
expect_in "$(cat "$TEST_TMP/err")" "Slurm ended the step of actuator '.ai-loop/agents/stepped.md'" \
	"progress says slurm ended the step"
expect_in "$(cat "$TEST_TMP/err")" "running it once more" "progress says it runs again"
expect_eq "$(triples "$R")" "$ref_triples" "same commits as without the kill"
expect_in "$(cat .ai-loop/runs/run_*/events.jsonl)" "\"job\":$job,\"end\":\"failed by slurm\"" \
	"the killed step is recorded as failed by slurm"
expect_queue_drained "the run"
check_history "$R"

# --- Slurm ends it twice: an agent error ----------------------------------------------
slurm_repo twice
rm -f "$STARTED"
touch "$GATE"
"$AILOOP" run "fix all" >"$TEST_TMP/out" 2>"$TEST_TMP/err" &
pid=$!
scancel "$(nth_job 1)"
scancel "$(nth_job 2)"
wait "$pid" && rc=0 || rc=$?
rm -f "$GATE"
expect_eq "$rc" 1 "a step ended by slurm twice fails the run"
expect_in "$(cat "$TEST_TMP/err")" "ailoop: error: " "an error is reported"
expect_in "$(cat "$TEST_TMP/err")" "Slurm ended its step again after one retry" \
	"the error says slurm ended the step twice"
expect_in "$(cat "$TEST_TMP/err")" "CANCELLED AT" "the error quotes slurmstepd's reason"
expect_eq "$(wc -l <"$STARTED")" 2 "the step ran twice, not more"
expect_in "$(cat .ai-loop/runs/run_*/run-state.md)" "status: error" "the run ended in an agent error"
expect_queue_drained "the error"
check_history "$R"

# --- the agent's own failure is not slurm's: no retry ----------------------------------
R=$TEST_TMP/failing
loop_repo "$R" a
one_loop "$R" failing.md "" "" "executor: slurm"
commit_all "$R"
cd "$R"
run "$AILOOP" run "fix all"
expect_rc 1 "an agent that fails on slurm fails the run"
expect_in "$err" "failed with exit status" "the agent's own exit status is reported"
expect_not_in "$err" "running it once more" "the agent's own failure is not retried"

finish
