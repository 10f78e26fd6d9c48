#!/usr/bin/env bash
# Resume: one `ailoop resume` always finishes a killed run, also when it was
# killed in the first entry of a child loop that is entered again later;
# and resume's sweep for what a killed ailoop left running stops only the
# processes ailoop started. A run started with --new on the branch of a run
# killed just after its first commit, itself killed before its own, makes
# that commit on resume: the other run's is not taken for it. Killed just
# after a commit, before the next state write, the resume does not measure
# again what the commit holds.
. "$(dirname "$0")/lib.sh"

# --- killed in a child's first entry, at each kind of point: one resume ---------
# outer enters inner three times, with one item each time (so that an agent
# the kill left running, which may finish its work, does no other item's)
T=$TEST_TMP
loop_repo "$T/counter" a b c
two_loops "$T/counter" fixer.md "" "" .ai-loop/agents/planner-one.md
commit_all "$T/counter"
cp -a "$T/counter" "$T/reference"
(cd "$T/reference" && AILOOP_CRASH_LOG="$T/points" "$AILOOP" run --quiet x >/dev/null 2>&1)
ref_triples=$(triples "$T/reference")
expect_eq "$(triples "$T/reference" | awk '$2 == "outer/inner" { print $1 }' | cut -d. -f1 | uniq |
	tr '\n' ' ')" "1 2 3 " "the reference enters the child three times"
# the first entry: from inner's first task.md to the first point of outer after it
first=$(grep -n 'nodes/outer/inner/task.md$' "$T/points" | head -1 | cut -d: -f1)
last=$(awk -v f="$first" 'NR > f && /nodes\/outer\/logs\// { print NR; exit }' "$T/points")
for kind in "inner/task.md" "inner/orchestrator-output.md" "run-state.md" "staged" "committed" \
	"running .*inner/logs/actuator.log" "running .*inner/logs/sensor-scope.log" \
	"inner/controller-output.md" "inner/result-output.md" "before rename"; do
	n=$(awk -v f="$((first - 1))" -v l="$last" -v k="[ /]$kind\$" \
		'NR >= f && NR < l && $0 ~ k { print NR; exit }' "$T/points")
	[ -n "$n" ] || { fail "no '$kind' point in the child's first entry"; continue; }
	w=$T/w-$n
	cp -a "$T/counter" "$w"
	cd "$w"
	rc=$({ AILOOP_CRASH_AT=$n "$AILOOP" run --quiet x >/dev/null 2>&1; echo $?; } 2>/dev/null)
	expect_eq "$rc" 137 "killed at point $n ($kind) of the child's first entry"
	run "$AILOOP" resume
	expect_rc 0 "one resume after a kill at point $n ($kind) finishes the run"
	expect_not_in "$err" "does not hold the state" "no stale resume check at point $n"
	expect_eq "$(triples "$w")" "$ref_triples" "history after a kill at point $n ($kind)"
	expect_eq "$("$AILOOP" status --json | jq -r .status)" complete "status after point $n"
	cd "$T"
	rm -rf "$w"
done

# --- the sweep stops the killed run's agent, and no other process ---------------------
export GATE=$TEST_TMP/gate STARTED=$TEST_TMP/started
R=$TEST_TMP/killed
loop_repo "$R" a b
one_loop "$R" gated.md
commit_all "$R"
cd "$R"
touch "$GATE"
"$AILOOP" run "fix all" >/dev/null 2>&1 &
pid=$!
wait_for "$STARTED" && pass || fail "the actuator started"
agent=$(head -1 "$STARTED")
run_dir=$(tr '\0' '\n' <"/proc/$agent/environ" | sed -n 's/^AILOOP_RUN_DIR=//p')
expect_in "$run_dir" "/.ai-loop/runs/run_" "the agent is told its run directory"
kill -KILL "$pid"
wait "$pid" 2>/dev/null
# a process ailoop did not start, which names the run's directory too
env AILOOP_RUN_DIR="$run_dir" sleep 60 &
unrelated=$!
"$AILOOP" resume >"$TEST_TMP/out" 2>"$TEST_TMP/err" &
resumed=$!
i=0
while [ "$(wc -l <"$STARTED")" -lt 2 ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
group_gone "$agent" && pass || fail "resume stopped the agent the killed run left running"
kill -0 "$unrelated" 2>/dev/null && pass ||
	fail "resume killed a process it did not start (whose environment names the run)"
expect_in "$(cat "$TEST_TMP/err")" "the interrupted run left running" \
	"resume says what it stopped"
rm -f "$GATE"
wait "$resumed" && rc=0 || rc=$?
expect_eq "$rc" 0 "the resume finishes the run"
kill -0 "$unrelated" 2>/dev/null && pass || fail "the unrelated process outlived the resume"
kill "$unrelated"
wait "$unrelated" 2>/dev/null
expect_eq "$("$AILOOP" status --json | jq -r .status)" complete "the resumed run is complete"
expect_eq "$(git status --porcelain)" "" "the record of agents is not committed"

# --- killed just after each commit: the resume does not measure again -------------
# Every sensor run is counted: the killed run's and its resume's together are
# the reference's.
R=$T/measured
loop_repo "$R" a b c
one_loop "$R" fixer.md
sed -i 's|^command: .*|command: echo x >>"$SENSOR_RUNS"; sh .ai-loop/agents/sensor.sh|' "$R/.ai-loop/agents/sensor.md"
commit_all "$R"
cp -a "$R" "$T/measured-ref"
export SENSOR_RUNS=$T/sensor-runs
(cd "$T/measured-ref" && AILOOP_CRASH_LOG="$T/measured-points" "$AILOOP" run --quiet x >/dev/null 2>&1)
ref_runs=$(wc -l <"$SENSOR_RUNS")
ref_measured=$(triples "$T/measured-ref")
# (the last commit ends the run: nothing to resume)
for n in $(grep -n ' committed$' "$T/measured-points" | cut -d: -f1 | sed '$d'); do
	w=$T/measured-$n
	cp -a "$R" "$w"
	rm -f "$SENSOR_RUNS"
	(cd "$w" && AILOOP_CRASH_AT=$n "$AILOOP" run --quiet x >/dev/null 2>&1)
	(cd "$w" && "$AILOOP" resume >/dev/null 2>"$T/measured-err") && rc=0 || rc=$?
	expect_eq "$rc" 0 "killed just after commit $n: one resume completes"
	expect_eq "$(triples "$w")" "$ref_measured" "killed just after commit $n: the history"
	expect_eq "$(wc -l <"$SENSOR_RUNS")" "$ref_runs" "killed just after commit $n: no measurement again"
	expect_in "$(cat "$T/measured-err")" "sensors: measured before the stop, as committed" \
		"killed just after commit $n: the resume says so"
done
unset SENSOR_RUNS

# --- the same commit of another run below: not this run's ------------------------
R=$T/two-runs
loop_repo "$R" a b
one_loop "$R" fixer.md
commit_all "$R"
cd "$R"
AILOOP_CRASH_LOG="$T/two-points" "$AILOOP" run --quiet first >/dev/null 2>&1
git checkout -q main
git branch -q -D ai-loop/first
rm -rf .ai-loop/runs/run_*
committed=$(grep -n ' committed$' "$T/two-points" | head -1 | cut -d: -f1)
(AILOOP_CRASH_AT=$committed "$AILOOP" run --quiet first >/dev/null 2>&1)
expect_eq "$(labels "$R")" "0" "two runs: the first is killed just after its first commit"
cp -a "$R" "$T/two-copy"
(cd "$T/two-copy" && AILOOP_CRASH_LOG="$T/second-points" "$AILOOP" run --new --from-here --quiet second >/dev/null 2>&1)
staged=$(grep -n ' staged$' "$T/second-points" | head -1 | cut -d: -f1)
(AILOOP_CRASH_AT=$staged "$AILOOP" run --new --from-here --quiet second >/dev/null 2>&1)
expect_eq "$(git rev-parse --abbrev-ref HEAD)" ai-loop/second "two runs: the second works on a branch from it"
expect_eq "$(labels "$R")" "0" "two runs: the second is killed before its first commit"
run "$AILOOP" resume
expect_rc 0 "two runs: the resume completes the second"
second=$("$AILOOP" status --json | jq -r .run_id)
expect_eq "$(git log --format=%B | awk -v r="$second" '/^\[iteration\] /{l=$2} /^\[run\] /{if ($2 == r) print l}' |
	sort -n | tr '\n' ' ')" "0 1 2 3 " "two runs: the second's history has its own first commit"

finish
