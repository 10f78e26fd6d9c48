#!/usr/bin/env bash
# executor: slurm on a real single-node cluster: a loop whose agents run as
# job steps gives the same commits and tree as the same loop run locally,
# records each step's job id, and a SIGINT during a step pauses the run
# with no job left in the queue; resume finishes it. An agent's timeout
# cancels its step, and counts from its start, not from its time in the
# queue; after ailoop is killed (SIGKILL) during a step, resume
# cancels the job it left and finishes the run. Job steps may write from
# other hosts, which inotify does not see: every commit scans.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/slurm-cluster.sh"
slurm_start

export GATE=$TEST_TMP/gate STARTED=$TEST_TMP/started

# the reference: the loop run locally
R=$TEST_TMP/local
loop_repo "$R" item-1 item-2 item-3
one_loop "$R" fixer.md "max_iterations: 5"
commit_all "$R"
cd "$R"
run "$AILOOP" run "empty the todo list"
expect_rc 0 "local run"
ref_subjects=$(git log --reverse --format=%s main..HEAD)
ref_triples=$(triples "$R")
ref_tree=$(code_tree "$R" | grep -v flow.yaml)

# --- the same loop with executor: slurm --------------------------------------------------
R=$TEST_TMP/slurm
loop_repo "$R" item-1 item-2 item-3
one_loop "$R" fixer.md "max_iterations: 5" "" "executor: slurm"
commit_all "$R"
cd "$R"
AILOOP_WATCH_TRACE=1 run "$AILOOP" run "empty the todo list"
expect_rc 0 "run on slurm"
# job steps may write from other hosts, which inotify does not see
expect_in "$err" "staging: full scan" "on slurm: commits scan the work tree"
expect_eq "$(grep -c 'staging: watched' <<<"$err")" 0 "on slurm: no commit trusts a watch"
expect_eq "$(git log --reverse --format=%s main..HEAD)" "$ref_subjects" "same commit subjects as locally"
expect_eq "$(triples "$R")" "$ref_triples" "same commits as locally"
expect_eq "$(code_tree "$R" | grep -v flow.yaml)" "$ref_tree" "same tree as locally (but the flow)"
events=$(cat .ai-loop/runs/run_*/events.jsonl)
expect_eq "$(grep -c '"event":"slurm_step"' <<<"$events")" 7 \
	"every agent (3 actuators, 4 sensor runs) ran as a slurm job step"
expect_in "$events" '"role":"actuator","name":null,"job":' "the event records the actuator's job id"
expect_eq "$(ls .ai-loop/runs/run_*/logs/slurm | wc -l)" 0 "no step file left after the run"
expect_eq "$(git log --name-only --format= main..HEAD | grep -c /slurm/)" 0 "no step file in history"
expect_queue_drained "the run"
run git fsck --strict
expect_rc 0 "fsck after a run on slurm"
check_history "$R"

# gated_step NAME: a run in $TEST_TMP/NAME (R) whose actuator waits on slurm
# while $GATE exists; its ailoop's pid and the step's job id
gated_step() {
	R=$TEST_TMP/$1
	loop_repo "$R" a b
	one_loop "$R" gated.md "" "" "executor: slurm"
	commit_all "$R"
	cd "$R"
	touch "$GATE"
	rm -f "$STARTED"
	"$AILOOP" run "fix all" >"$TEST_TMP/out" 2>"$TEST_TMP/err" &
	pid=$!
	wait_for "$STARTED" 30 && pass || fail "$1: the actuator started on slurm"
	for _ in $(seq 50); do [ -n "$(ls .ai-loop/runs/run_*/logs/slurm 2>/dev/null)" ] && break; sleep 0.1; done
	job=$(squeue -h -o %i -n fix | head -n 1)
}

# --- SIGINT during a long step: paused, no job left, resumable ---------------------------
gated_step interrupted
[ -n "$job" ] && pass || fail "the step is in squeue under the node's name"
run "$AILOOP" status
expect_in "$out" "slurm step:   job $job: fix actuator" "status shows the running step's job id"
run "$AILOOP" status --json
expect_eq "$(jq -r '.slurm_steps[0].job' <<<"$out")" "$job" "status --json shows the job id"
kill -INT "$pid"
wait "$pid" && rc=0 || rc=$?
expect_eq "$rc" 3 "SIGINT exits 3 (paused)"
expect_in "$(cat .ai-loop/runs/run_*/run-state.md)" "status: paused" "run-state says paused"
expect_queue_drained "the interruption"
expect_in "$(cat .ai-loop/runs/run_*/events.jsonl)" '"end":"cancelled"' "the step is recorded as cancelled"
rm -f "$GATE"
run "$AILOOP" resume
expect_rc 0 "resume after SIGINT"
expect_eq "$(cat todo.txt)" "" "the resumed run finished the work"
expect_queue_drained "the resumed run"
check_history "$R"

# --- an agent's timeout cancels its step -------------------------------------------------
R=$TEST_TMP/timeout
loop_repo "$R" a
cat >"$R/.ai-loop/agents/slow.md" <<'MD'
---
name: slow
timeout: 2
command: echo "$SLURM_JOB_ID" >>"$STARTED"; sleep 300
---
An actuator that does not finish in time.
MD
one_loop "$R" slow.md "" "" "executor: slurm"
commit_all "$R"
cd "$R"
rm -f "$STARTED"
run "$AILOOP" run "too slow"
expect_rc 1 "a timed-out agent on slurm is an agent error"
expect_in "$err" "did not finish in time and was stopped" "the timeout is reported"
expect_queue_drained "the timeout"
expect_in "$(cat .ai-loop/runs/run_*/events.jsonl)" '"end":"timed out"' "the step is recorded as timed out"
expect_in "$(cat .ai-loop/runs/run_*/events.jsonl)" '"role":"actuator","name":null,"job":' \
	"the timed-out step's job id is recorded"

# --- time a step waits in the queue is not the agent's: its timeout counts from its start --
R=$TEST_TMP/queued
loop_repo "$R" a
sed -i 's/^name: scope$/&\ntimeout: 3/' "$R/.ai-loop/agents/sensor.md"
sed -i 's/^name: fixer$/&\ntimeout: 3/' "$R/.ai-loop/agents/fixer.md"
one_loop "$R" fixer.md "" "" "executor: slurm"
commit_all "$R"
cd "$R"
scontrol update NodeName="$(hostname -s)" State=DRAIN Reason="a queue for t77"
"$AILOOP" run "fix a" >"$TEST_TMP/out" 2>"$TEST_TMP/err" &
pid=$!
for _ in $(seq 100); do [ -n "$(squeue -h -t PD)" ] && break; sleep 0.1; done
expect_eq "$(squeue -h -t PD -o %j)" "fix" "the sensor's step waits in the queue"
sleep 5 # longer than the agents' timeout of 3 s
scontrol update NodeName="$(hostname -s)" State=RESUME
wait "$pid" && rc=0 || rc=$?
expect_eq "$rc" 0 "agents that waited in the queue longer than their timeout: the run completes"
expect_not_in "$(cat "$TEST_TMP/err")" "did not finish in time" "no timeout while queued"
expect_eq "$(cat todo.txt)" "" "the queued agents did their work"
check_history "$R"

# --- ailoop killed during a step: resume cancels the job it left -------------------------
gated_step killed
kill -KILL "$pid"
wait "$pid" 2>/dev/null
run "$AILOOP" status
expect_in "$out" "slurm step:   job $job: fix actuator" "status shows the step the killed run left"
rm -f "$GATE"
run "$AILOOP" resume
expect_rc 0 "resume after SIGKILL"
expect_in "$err" "cancelled 1 slurm job the interrupted run left running" "resume cancels the job left"
expect_eq "$(squeue -h -j "$job" 2>/dev/null | wc -l)" 0 "the job left is gone"
expect_eq "$(cat todo.txt)" "" "the resumed run finished the work"
expect_queue_drained "the resumed run"
check_history "$R"

finish
