#!/usr/bin/env bash
# limits.max_agent_calls_per_hour after the system clock moves back: the
# calls recorded before are "in the future", and each counts as made now,
# no later. A wait for the hourly window is never longer than the window:
# not 28:30:00 after one call and a jump of 27.5 hours back, and not
# longer when the clock moves back while ailoop waits.
# Time is the test's clock (AILOOP_TEST_CLOCK, honoured by test builds only).
. "$(dirname "$0")/lib.sh"

export AILOOP_TEST_CLOCK=$TEST_TMP/clock
T0=1800000000
echo $T0 >"$AILOOP_TEST_CLOCK"

calls() { wc -l <.ai-loop/runs/run_*/logs/agent-calls | tr -d ' '; }
# waiting FILE N: until FILE has said N times that ailoop waits for the window
# (within 3 minutes: a sanitized build on a loaded machine is slow to get there)
waiting() {
	local i=0
	local n
	while n=$(grep -c "waiting to start" "$1" 2>/dev/null); [ "${n:-0}" -lt "$2" ] &&
		[ $i -lt 3600 ]; do
		sleep 0.05
		i=$((i + 1))
	done
	[ "$(grep -c "waiting to start" "$1")" -ge "$2" ]
}
# ended PID: the process PID ended within 60 s
ended() {
	local i=0
	while kill -0 "$1" 2>/dev/null && [ $i -lt 1200 ]; do
		sleep 0.05
		i=$((i + 1))
	done
	! kill -0 "$1" 2>/dev/null
}

R=$TEST_TMP/clock-back
loop_repo "$R" a b c
one_loop "$R" fixer.md "max_iterations: 10"
printf 'limits: {max_agent_calls_per_hour: 1}\n' >>"$R/.ai-loop/flow.yaml"
commit_all "$R"
cd "$R"

# one call at T0; the second waits for T0 + 3600; killed while it waits
"$AILOOP" run "fix all" >"$TEST_TMP/out1" 2>"$TEST_TMP/err1" &
pid=$!
waiting "$TEST_TMP/err1" 1 && pass || fail "the second call waits for the window"
expect_in "$(cat "$TEST_TMP/err1")" "(iteration 2) for 1:00:00" "an hour"
{ kill -9 $pid && wait $pid; } 2>/dev/null

# the clock moves back 27.5 hours: the call at T0 is in the future
C=$((T0 - 99000))
echo $C >"$AILOOP_TEST_CLOCK"
"$AILOOP" resume >"$TEST_TMP/out2" 2>"$TEST_TMP/err2" &
pid=$!
waiting "$TEST_TMP/err2" 1 && pass || fail "the resumed run waits for the window"
err=$(cat "$TEST_TMP/err2")
expect_in "$err" "(iteration 2) for 1:00:00" "the call in the future counts as made now: an hour"
expect_not_in "$err" "28:30:00" "not the hour plus the 27.5 the clock went back"
run "$AILOOP" status --json
expect_eq "$(printf '%s' "$out" | jq -r .budget.hourly_wait_seconds)" 3600 "status: an hour's wait"
expect_eq "$(calls)" 1 "no call started while waiting"

# while it waits, the clock moves back another day: the wait keeps what was left of it
echo $((C - 86400)) >"$AILOOP_TEST_CLOCK"
sleep 0.5
kill -0 $pid 2>/dev/null && pass || fail "still waiting"
echo $((C - 86400 + 3600)) >"$AILOOP_TEST_CLOCK"
# the second call starts an hour after the wait began; the third waits an hour after it
waiting "$TEST_TMP/err2" 2 && pass || fail "the second call ran, the third waits"
expect_eq "$(calls)" 2 "the second call started once the hour had passed"
expect_in "$(cat "$TEST_TMP/err2")" "(iteration 3) for 1:00:00" "the third call waits an hour"
echo $((C - 86400 + 7200)) >"$AILOOP_TEST_CLOCK"
ended $pid && pass || fail "the run ends once the window has room"
kill -9 $pid 2>/dev/null
wait $pid && rc=0 || rc=$?
out=$(cat "$TEST_TMP/out2") err=$(cat "$TEST_TMP/err2")
expect_rc 0 "the resumed run completes"
expect_eq "$(calls)" 3 "three calls in all"
expect_eq "$(grep -c . todo.txt)" 0 "every item fixed"

finish
