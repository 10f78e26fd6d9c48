#!/usr/bin/env bash
# A metric's pattern is bounded over the whole of a measurement, as a
# condition's match is: its every match together, not each alone. A
# pattern that backtracks at every line of a large output (each match
# under the match limit, ((?:a|aa)+c|a) over 100 KB of lines of a's) ran
# for many minutes and did not let Ctrl-C pause the run. Now the metric
# is missing, and says why, and an interrupt pauses the run at once.
# The checks are on the outcome, not on times: the runs are given a
# minute each, where the measurement took ten before.
. "$(dirname "$0")/lib.sh"

R=$TEST_TMP/runaway
loop_repo "$R" a b
# the scope sensor, with its output followed by 104 KB of lines of a's;
# it leaves `measured` once its output is written
cat >"$R/.ai-loop/agents/runaway.md" <<'MD'
---
name: scope
command: 'sh .ai-loop/agents/sensor.sh; rc=$?; yes aaaaaaaaaaaaaaaaaaaaaaaaa | head -n 4000; : >measured; exit $rc'
metrics:
  remaining: 'remaining: (\d+)'
  runaway: '((?:a|aa)+c|a)'
  again: '((?:a|aa)+c|a)'
  more: '((?:a|aa)+c|a)'
---
MD
echo measured >"$R/.gitignore"
one_loop "$R" fixer.md "max_iterations: 10"
sed -i 's|\.ai-loop/agents/sensor\.md|.ai-loop/agents/runaway.md|' "$R/.ai-loop/flow.yaml"
commit_all "$R"
cd "$R"

run timeout -s KILL 60 "$AILOOP" run "fix all"
expect_rc 0 "the run completes: no measurement runs on and on"
expect_in "$err" "sensor 'scope': metric 'runaway' is missing: its pattern took more than 10000000 steps over the output (104" \
	"the metric is missing, and the user is told why"
expect_in "$err" "scope: fail (remaining=1" "the metrics of bounded patterns are read as before"
expect_eq "$(grep -c . todo.txt)" 0 "every item fixed"
out_file=$(ls .ai-loop/runs/run_*/nodes/fix/sensor-scope-output.md)
expect_not_in "$(sed -n '/^metrics:/,/^---/p' "$out_file")" "runaway" "the output file has no value for it"
expect_in "$(sed -n '/^metrics:/,/^---/p' "$out_file")" "remaining: '0'" "and the value of the other"
expect_eq "$(jq -c 'select(.key == "sensors.scope.runaway") | .value' .ai-loop/runs/run_*/memory.jsonl | sort -u)" \
	"null" "working memory has no value for it"

# Ctrl-C once the sensor's command has written its output: the run pauses
R=$TEST_TMP/runaway-int
loop_repo "$R" a b
cp "$TEST_TMP/runaway/.ai-loop/agents/runaway.md" "$R/.ai-loop/agents/"
echo measured >"$R/.gitignore"
one_loop "$R" fixer.md "max_iterations: 10"
sed -i 's|\.ai-loop/agents/sensor\.md|.ai-loop/agents/runaway.md|' "$R/.ai-loop/flow.yaml"
commit_all "$R"
cd "$R"
timeout -s KILL 60 "$AILOOP" run "fix all" >"$TEST_TMP/out" 2>"$TEST_TMP/err" &
pid=$!
i=0
while [ ! -e measured ] && [ $i -lt 1200 ]; do
	sleep 0.05
	i=$((i + 1))
done
[ -e measured ] && pass || fail "the sensor measured"
kill -INT $pid
wait $pid && rc=0 || rc=$?
out=$(cat "$TEST_TMP/out") err=$(cat "$TEST_TMP/err")
expect_rc 3 "the interrupt pauses the run, the measurement under way or not"
expect_eq "$(run_status)" paused "the run is paused"
run timeout -s KILL 60 "$AILOOP" resume
expect_rc 0 "the resumed run measures again and completes"
expect_eq "$(grep -c . todo.txt)" 0 "every item fixed"

finish
