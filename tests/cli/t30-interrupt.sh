#!/usr/bin/env bash
# Interruption: SIGINT during an actuator pauses the run (exit 3) with the
# agent's whole process group gone, and resume finishes it as if nothing
# had happened; a second SIGINT kills at once; a second ailoop on the same
# run is refused (exit 75); `run` with a run to resume asks or refuses.
# SIGHUP pauses too, unless it was ignored as ailoop started (nohup).
# After SIGKILL, resume stops the agents the run left, recorded or not,
# and all of an agent's group, however fast it forks.
. "$(dirname "$0")/lib.sh"

export GATE=$TEST_TMP/gate STARTED=$TEST_TMP/started

gated_repo() {
	R=$TEST_TMP/$1
	loop_repo "$R" a b
	one_loop "$R" gated.md
	commit_all "$R"
	cd "$R"
}

# the reference: the same run, never interrupted
gated_repo reference
run "$AILOOP" run "fix all"
expect_rc 0 "reference run"
ref_triples=$(triples "$R")
ref_tree=$(code_tree "$R")

# --- SIGINT while the actuator works -------------------------------------------------
gated_repo interrupted
touch "$GATE"
rm -f "$STARTED"
"$AILOOP" run "fix all" >"$TEST_TMP/out" 2>"$TEST_TMP/err" &
pid=$!
wait_for "$STARTED" && pass || fail "the actuator started"
agent=$(head -1 "$STARTED")
run "$AILOOP" status --json
expect_eq "$(printf '%s\n' "$out" | jq -r .stopped)" "false" "a live run is not stopped"
expect_in "$(printf '%s\n' "$out" | jq -r .locked_by)" "ailoop pid $pid" "a live run is locked by its process"
# the time spent goes on while an agent works, between two saves of the state
sleep 2
run "$AILOOP" status --json
[ "$(printf '%s\n' "$out" | jq -r .budget.wall_seconds)" -ge 2 ] && pass ||
	fail "a live run's time spent counts the agent at work: $(printf '%s\n' "$out" | jq -c .budget)"
run "$AILOOP" status
expect_in "$out" "time spent:   " "status shows the time spent"
kill -INT "$pid"
wait "$pid" && rc=0 || rc=$?
expect_eq "$rc" 3 "SIGINT exits 3"
expect_in "$(cat "$TEST_TMP/out")" "paused" "the outcome says paused"
expect_in "$(cat "$TEST_TMP/out")" "ailoop resume" "the outcome says how to go on"
expect_in "$(cat .ai-loop/runs/run_*/run-state.md)" "status: paused" "run-state says paused"
group_gone "$agent" && pass || fail "the agent's process group is gone"
[ ! -e .ai-loop/runs/run_*/lock ] || [ -z "$("$AILOOP" status --json | jq -r '.locked_by // empty')" ] &&
	pass || fail "no live lock after the interruption"
run "$AILOOP" status
expect_in "$out" ": paused" "status shows paused"
expect_not_in "$out" "stopped:" "a paused run is not said to be stopped"
rm -f "$GATE"
run "$AILOOP" resume
expect_rc 0 "resume after SIGINT"
expect_in "$err" "resuming run run_" "resume says what it continues"
expect_eq "$(triples "$R")" "$ref_triples" "same history as without the interruption"
expect_eq "$(code_tree "$R")" "$ref_tree" "same tree as without the interruption"
expect_eq "$(git status --porcelain)" "" "clean tree after resume"
run git fsck --strict
expect_rc 0 "fsck after interrupt and resume"
run "$AILOOP" resume
expect_rc 66 "nothing left to resume"
expect_in "$err" "no run to resume" "nothing-to-resume message"

# --- a second SIGINT does not wait for a stubborn agent -------------------------------
gated_repo stubborn
touch "$GATE"
rm -f "$STARTED"
STUBBORN=1 "$AILOOP" run "fix all" >/dev/null 2>&1 &
pid=$!
wait_for "$STARTED" && pass || fail "the stubborn actuator started"
agent=$(head -1 "$STARTED")
kill -INT "$pid"
sleep 0.5
start=$(date +%s%N)
kill -INT "$pid"
wait "$pid" && rc=0 || rc=$?
elapsed=$((($(date +%s%N) - start) / 1000000))
expect_eq "$rc" 3 "second SIGINT still exits 3"
[ "$elapsed" -lt 3000 ] && pass || fail "second SIGINT waited ${elapsed} ms for the agent"
group_gone "$agent" && pass || fail "the stubborn agent was killed"
expect_in "$(cat .ai-loop/runs/run_*/run-state.md)" "status: paused" "paused after the second SIGINT"
rm -f "$GATE"

# --- two resumes of one run: one proceeds, the other is refused --------------------------
touch "$GATE"
rm -f "$STARTED"
"$AILOOP" resume >"$TEST_TMP/out1" 2>"$TEST_TMP/err1" &
first=$!
wait_for "$STARTED" && pass || fail "the first resume is at work"
run "$AILOOP" resume
expect_rc 75 "second resume of a locked run"
expect_in "$err" "is locked by ailoop pid $first on " "refusal names the holder"
run "$AILOOP" resume "$(ls .ai-loop/runs | grep run_)"
expect_rc 75 "second resume by id"
run "$AILOOP" run --new "meanwhile"
expect_rc 75 "no second run in the same work tree"
expect_in "$err" "is locked by ailoop pid $first" "a live run blocks a new one"
rm -f "$GATE"
wait "$first" && rc=0 || rc=$?
expect_eq "$rc" 0 "the first resume finishes"
expect_eq "$(triples "$R")" "$ref_triples" "history after the contested resume"

# killed_in_agent NAME [SETUP]: a run in $TEST_TMP/NAME (SETUP, if given,
# changes it first) killed (SIGKILL) while its actuator waits on the gate;
# its pid, and the agent's (orphan)
killed_in_agent() {
	gated_repo "$1"
	[ -z "${2:-}" ] || "$2"
	touch "$GATE"
	rm -f "$STARTED"
	"$AILOOP" run "fix all" >/dev/null 2>&1 &
	pid=$!
	wait_for "$STARTED" && pass || fail "$1: the actuator of the run to kill started"
	orphan=$(head -1 "$STARTED")
	kill -KILL "$pid"
	wait "$pid" 2>/dev/null
}

# resume_stops_orphan WHAT: resume stops the agent the killed run left (before
# it starts its own), says so, and finishes the run as if nothing happened
resume_stops_orphan() {
	local first i=0
	"$AILOOP" resume >"$TEST_TMP/out1" 2>"$TEST_TMP/err1" &
	first=$!
	while [ "$(wc -l <"$STARTED")" -lt 2 ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
	group_gone "$orphan" && pass || fail "$1: resume stopped the agent the killed run left"
	expect_in "$(cat "$TEST_TMP/err1")" "the interrupted run left running" "$1: resume says it stopped it"
	rm -f "$GATE"
	wait "$first" && rc=0 || rc=$?
	expect_eq "$rc" 0 "$1: the resume finishes"
	expect_eq "$(triples "$R")" "$ref_triples" "$1: the history of a run never killed"
}

# --- SIGKILL of ailoop: the agent it leaves running is stopped by resume --------------
killed_in_agent killed
kill -0 "$orphan" 2>/dev/null && pass || fail "the agent outlived ailoop (as it can)"
expect_in "$(cat .ai-loop/runs/run_*/lock)" "ailoop pid $pid on " "a stale lock names the dead holder"
run "$AILOOP" status --json
expect_eq "$(printf '%s\n' "$out" | jq -r .locked_by)" "null" "a dead holder's lock is no lock"
expect_eq "$(printf '%s\n' "$out" | jq -r .stopped)" "true" "a running run no process holds is stopped"
expect_eq "$(printf '%s\n' "$out" | jq -r .status)" "interrupted" "and interrupted, as \`ailoop runs\` says"
run "$AILOOP" status
expect_in "$out" "stopped:      no ailoop process runs it" "status says no process runs it"
expect_in "$out" "'ailoop resume' goes on with it" "status says how to go on"
resume_stops_orphan "SIGKILL"

# --- a new run (or the resume of another) first stops the agents a killed run left -----
# Left at work, they would change the work tree under it, their work in its
# commits. The new run's agents get another gate: the orphan waits on its own.
killed_in_agent beside-new
GATE=$TEST_TMP/gate-new run "$AILOOP" run --new --from-here "another"
expect_rc 0 "a new run beside a killed one completes"
group_gone "$orphan" && pass || fail "the new run stopped the agent the killed run left"
expect_in "$(head -1 <<<"$err")" "the interrupted run left running (run_" \
	"it says so, naming the run, before anything else"
# kill_in_actuator ARGS...: `ailoop run ARGS` here, killed (SIGKILL) once its
# actuator waits on the gate; the agent it leaves in $orphan
kill_in_actuator() {
	local started
	started=$(cat "$STARTED" 2>/dev/null | wc -l)
	"$AILOOP" run "$@" >/dev/null 2>&1 &
	pid=$!
	i=0
	while [ "$(cat "$STARTED" 2>/dev/null | wc -l)" -le "$started" ] && [ $i -lt 200 ]; do
		sleep 0.05
		i=$((i + 1))
	done
	orphan=$(sed -n "$((started + 1))p" "$STARTED")
	kill -KILL "$pid"
	wait "$pid" 2>/dev/null
}

# two runs on one branch, both killed: the second one's start stops the first
# one's agent, the first one's resume the second one's
gated_repo beside-resume
touch "$GATE"
rm -f "$STARTED"
kill_in_actuator --no-branch "fix all"
first_id=$(ls .ai-loop/runs | grep run_)
first_orphan=$orphan
kill_in_actuator --new --no-branch "another"
group_gone "$first_orphan" && pass || fail "the second run's start stopped the first one's agent"
kill -0 "$orphan" 2>/dev/null && pass || fail "the second run's agent outlived it"
GATE=$TEST_TMP/gate-new run "$AILOOP" resume "$first_id"
expect_rc 0 "the first run's resume completes"
group_gone "$orphan" && pass || fail "the first run's resume stopped the second one's agent"
second_id=$(ls .ai-loop/runs | grep run_ | grep -v "$first_id")
expect_in "$err" "the interrupted run left running ($second_id)" "the resume says so, naming that run"
rm -f "$GATE"

# two runs on two branches, both killed: the first one's resume cannot check
# its branch out over the second one's unfinished state, and says whose it is
gated_repo two-branches
touch "$GATE"
rm -f "$STARTED"
kill_in_actuator "fix all"
first_id=$(ls .ai-loop/runs | grep run_)
kill_in_actuator --new --from-here "another"
second_id=$(ls .ai-loop/runs | grep run_ | grep -v "$first_id")
GATE=$TEST_TMP/gate-new run "$AILOOP" resume "$first_id"
expect_rc 70 "two branches: the first run's resume is refused"
expect_in "$err" "the unfinished state of run $second_id is in the way" "two branches: whose state is in the way"
expect_in "$err" "resume that run first ('ailoop resume $second_id')" "two branches: the way out"
expect_not_in "$err" "git branch -f" "two branches: no advice to move a branch"
GATE=$TEST_TMP/gate-new run "$AILOOP" resume "$second_id"
expect_rc 0 "two branches: the second run resumes first"
GATE=$TEST_TMP/gate-new run "$AILOOP" resume "$first_id"
expect_rc 0 "two branches: then the first one"
expect_eq "$(triples "$R")" "$ref_triples" "two branches: the first run's history"
rm -f "$GATE"

# --- SIGKILL between an agent's start and its record: resume still stops it ------------
killed_in_agent unrecorded
rec=$(echo .ai-loop/runs/run_*/logs/agents)
expect_eq "$(head -c 4 "$rec")" "key " "the record holds the key the agents carry"
sed -i 2,\$d "$rec" # the key alone: as if killed before the agent's pid was written
resume_stops_orphan "SIGKILL before the agent's pid was recorded"

# --- SIGKILL while the agent forks all the time: resume stops its whole group,
# the processes it forks while it is being stopped included
# forker_agent: the actuator forks while the gate is there (gated.md, replaced)
forker_agent() {
	cat >.ai-loop/agents/gated.md <<'MD'
---
name: forker
command: >-
  echo $$ >>"$STARTED";
  while [ -e "$GATE" ]; do sleep 1 & sleep 0.002; done;
  sh .ai-loop/agents/fix.sh
---
Forks while the gate is there, then fixes one item.
MD
	commit_all "$R" "forks"
}
for trial in $(seq ${FORK_TRIALS:-5}); do
	killed_in_agent "forker-$trial" forker_agent
	resume_stops_orphan "SIGKILL of an agent that forks, trial $trial"
done

# paused_in_actuator NAME [SIGNAL]: a run in $TEST_TMP/NAME stopped by SIGNAL
# (TERM) while its actuator waits on the gate; its exit status in $rc
paused_in_actuator() {
	gated_repo "$1"
	touch "$GATE"
	rm -f "$STARTED"
	"$AILOOP" run "fix all" >/dev/null 2>&1 &
	pid=$!
	wait_for "$STARTED"
	kill -"${2:-TERM}" "$pid"
	wait "$pid" && rc=0 || rc=$?
}

# --- resume from another branch: the run's branch is checked out ----------------------
paused_in_actuator elsewhere INT
rm -f "$GATE"
git stash -q -u          # the user puts the run's unfinished step aside
git checkout -q main     # and goes back to their branch: the run is not here
[ ! -e .ai-loop/runs/*/run-state.md ] && pass || fail "the run's state left with its branch"
run "$AILOOP" resume
expect_rc 0 "resume finds the run on its branch"
expect_in "$err" "is on branch ai-loop/fix-all: checking it out" "resume says where the run is"
expect_eq "$(git rev-parse --abbrev-ref HEAD)" "ai-loop/fix-all" "the run's branch is checked out"
expect_eq "$(triples "$R")" "$ref_triples" "the run finished from its last commit"

# --- the run's branch is checked out in another worktree: said, nothing touched ---------
paused_in_actuator linked INT
rm -f "$GATE"
git stash -q -u
git checkout -q main
git worktree add -q "$TEST_TMP/linked-wt" ai-loop/fix-all
before=$(git status --porcelain)
run "$AILOOP" resume
expect_rc 66 "resume while the run's branch is checked out elsewhere"
expect_in "$err" "branch 'ai-loop/fix-all' is checked out in the worktree '$TEST_TMP/linked-wt'" \
	"the worktree that has it is named"
expect_in "$err" "git worktree remove $TEST_TMP/linked-wt" "with the ways on"
expect_not_in "$err" "git branch -f" "and no advice meant for a branch an agent moved"
expect_eq "$(git rev-parse --abbrev-ref HEAD)" "main" "HEAD stays where it was"
expect_eq "$(git status --porcelain)" "$before" "and the work tree and index are untouched"
git worktree remove "$TEST_TMP/linked-wt"
run "$AILOOP" resume
expect_rc 0 "once the worktree is gone, the resume checks the branch out"
expect_eq "$(triples "$R")" "$ref_triples" "and finishes the run"

# --- `ailoop run` while a run can be resumed ------------------------------------------
paused_in_actuator pending
expect_eq "$rc" 3 "SIGTERM exits 3 too"
rm -f "$GATE"
run "$AILOOP" run "something else"
expect_rc 64 "run refuses while a run can be resumed"
expect_in "$err" "'ailoop resume'" "refusal names resume"
expect_in "$err" "--new" "refusal names --new"
# on a terminal it asks: an answer neither r nor n refuses, as without one
run script -qec "$AILOOP run 'something else'" /dev/null <<<"x"
expect_rc 64 "another answer: refused"
expect_in "$out" "can be resumed: continue it with 'ailoop resume'" "another answer: the refusal"
expect_eq "$(ls .ai-loop/runs | grep -c run_)" 1 "another answer: no run started"
# "r" resumes
run script -qec "$AILOOP run 'something else'" /dev/null <<<"r"
expect_rc 0 "answering r on a terminal resumes"
expect_in "$out" "Resume it (Enter) or start a new run (n)? [R/n]" "the question"
expect_eq "$(triples "$R")" "$ref_triples" "the resumed run finished"
# and --new starts another
printf 'c\n' >>todo.txt
commit_all "$R" "more to do"
run "$AILOOP" run --new --quiet "another"
expect_rc 0 "--new starts a new run"
expect_eq "$(ls .ai-loop/runs | grep -c run_)" 2 "two runs"
# on a terminal, "n" starts a new run too
paused_in_actuator answer-new
rm -f "$GATE"
run script -qec "$AILOOP run --quiet --from-here 'something else'" /dev/null <<<"n"
expect_rc 0 "answering n on a terminal starts a new run"
expect_eq "$(ls .ai-loop/runs | grep -c run_)" 2 "answering n: two runs"
expect_eq "$(git rev-parse --abbrev-ref HEAD)" ai-loop/something-else "answering n: the new run's branch"

# --- a new run while another is paused leaves the paused run's state alone ------------
# Paused in its actuator, the run's state is in the work tree, newer than its
# last commit. The new run (on a branch from it) does not commit that state:
# the paused run resumes at its actuator, not again from its last commit.
paused_in_actuator beside
expect_eq "$rc" 3 "beside: the first run is paused"
paused=$(ls .ai-loop/runs | grep run_)
paused_state=$(git status --porcelain -- ".ai-loop/runs/$paused")
[ -n "$paused_state" ] && pass || fail "beside: the paused run's state is newer than its commit"
rm -f "$GATE"
run "$AILOOP" run --new --from-here --quiet "another"
expect_rc 0 "beside: the new run completes"
expect_eq "$(git diff --name-only ai-loop/fix-all HEAD -- ".ai-loop/runs/$paused")" "" \
	"beside: the new run's commits leave the paused run's files as its branch has them"
expect_eq "$(git status --porcelain -- ".ai-loop/runs/$paused")" "$paused_state" \
	"beside: the paused run's state is still in the work tree"
run "$AILOOP" resume "$paused"
expect_rc 0 "beside: the paused run resumes"
expect_eq "$(grep -m1 -o 'fix [a-z]*' <<<"$err")" "fix actuator" "beside: the resume starts at the actuator"
expect_eq "$(triples "$R")" "$ref_triples" "beside: the paused run's history"
expect_eq "$(git status --porcelain)" "" "beside: a clean tree at the end"

# --- SIGHUP: a pause, unless ignored as ailoop started (nohup) -------------------------
for how in caught ignored; do
	gated_repo "hup-$how"
	touch "$GATE"
	rm -f "$STARTED"
	if [ $how = ignored ]; then
		(trap '' HUP && exec "$AILOOP" run "fix all") >"$TEST_TMP/out" 2>"$TEST_TMP/err" &
	else
		"$AILOOP" run "fix all" >"$TEST_TMP/out" 2>"$TEST_TMP/err" &
	fi
	pid=$!
	wait_for "$STARTED" && pass || fail "SIGHUP $how: the actuator started"
	kill -HUP "$pid"
	sleep 0.3
	rm -f "$GATE"
	wait "$pid" && rc=0 || rc=$?
	if [ $how = caught ]; then
		expect_eq "$rc" 3 "SIGHUP pauses the run (exit 3)"
	else
		expect_eq "$rc" 0 "SIGHUP ignored as ailoop started (nohup): the run goes on and completes"
		expect_eq "$(triples "$R")" "$ref_triples" "SIGHUP ignored: the history of a run never interrupted"
	fi
done


# --- an agent run by a shell has its grace: `sh -c` dies of SIGTERM at once,
# the program it started saves its work (SIGKILL only after 5 s, or at a
# second signal) ----------------------------------------------------------------------
# grace_repo NAME SAVE-SECONDS: a sequence of one action whose agent, under
# `sh -c`, traps SIGTERM and takes SAVE-SECONDS to save
grace_repo() {
	R=$TEST_TMP/$1
	new_repo "$R"
	mkdir -p "$R/.ai-loop/agents"
	cat >"$R/.ai-loop/agents/saver.sh" <<SH
trap 'echo saving >>saved.log; sleep $2; echo saved >>saved.log; exit 0' TERM
echo working >started.log
while :; do sleep 0.05; done
SH
	printf -- '---\nname: saver\ncommand: "cd . && sh .ai-loop/agents/saver.sh; echo done"\n---\n' \
		>"$R/.ai-loop/agents/saver.md"
	printf 'version: 1\nflow:\n  id: s\n  type: sequence\n  children: [{id: w, skill: w, agent: .ai-loop/agents/saver.md}]\n' \
		>"$R/.ai-loop/flow.yaml"
	commit_all "$R"
	cd "$R" || exit 1
	"$AILOOP" run "save" >/dev/null 2>&1 &
	pid=$!
	wait_for "$R/started.log"
}
grace_repo grace 1
kill -INT "$pid"
wait "$pid" && rc=0 || rc=$?
expect_eq "$rc" 3 "a shell-run agent paused"
expect_eq "$(cat saved.log 2>/dev/null | tr '\n' ' ')" "saving saved " \
	"the program under the agent's shell saved its work before ailoop exited"
grace_repo second 30
kill -INT "$pid"
sleep 0.5
SECONDS=0
kill -INT "$pid"
wait "$pid" && rc=0 || rc=$?
expect_eq "$rc" 3 "a second Ctrl-C pauses too"
[ "$SECONDS" -lt 5 ] && pass || fail "a second Ctrl-C kills at once, not after the grace ($SECONDS s)"
expect_eq "$(cat saved.log 2>/dev/null | tr '\n' ' ')" "saving " "the agent was killed as it saved"

finish
