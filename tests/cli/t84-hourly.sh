#!/usr/bin/env bash
# limits.max_agent_calls_per_hour: a sliding window of the agent calls'
# start times, kept in the run directory. When it is full, ailoop waits
# until the oldest call leaves it; a kill and a resume wait what remains.
# No wait, for the window or a rate limit's back-off, outlasts the node's
# timeout (exit 2) or the run's time budget (exit 4).
# Time is the test's clock (AILOOP_TEST_CLOCK, honoured by test builds only):
# nothing here waits an hour.
. "$(dirname "$0")/lib.sh"

export AILOOP_TEST_CLOCK=$TEST_TMP/clock
T0=1800000000
echo $T0 >"$AILOOP_TEST_CLOCK"

calls() { wc -l <.ai-loop/runs/run_*/logs/agent-calls | tr -d ' '; }
events() { cat .ai-loop/runs/run_*/events.jsonl; }
# waiting FILE: until FILE says ailoop waits for the window
waiting() {
	local i=0
	while ! grep -q "waiting to start" "$1" 2>/dev/null && [ $i -lt 200 ]; do
		sleep 0.05
		i=$((i + 1))
	done
	grep -q "waiting to start" "$1"
}

R=$TEST_TMP/hourly
loop_repo "$R" a b c d
one_loop "$R" fixer.md "max_iterations: 10"
printf 'limits: {max_agent_calls_per_hour: 2}\n' >>"$R/.ai-loop/flow.yaml"
commit_all "$R"
cd "$R"

# two calls at T0, then the third waits for T0 + 3600
"$AILOOP" run "fix all" >"$TEST_TMP/out1" 2>"$TEST_TMP/err1" &
pid=$!
waiting "$TEST_TMP/err1" && pass || fail "the third call waits for the window"
expect_in "$(cat "$TEST_TMP/err1")" \
	"ailoop: 2 agent calls in the last hour (limits.max_agent_calls_per_hour: 2): waiting to start actuator '.ai-loop/agents/fixer.md' of node 'fix' (iteration 3) for 1:00:00" \
	"the message says how long"
expect_eq "$(calls)" 2 "two calls made"
expect_eq "$(cat todo.txt | tr '\n' ' ')" "c d " "two items fixed"
run "$AILOOP" status
expect_in "$out" "2 in the last hour, of 2 (limits.max_agent_calls_per_hour)" "status shows the window"
expect_in "$out" "hourly limit: the next agent call waits 3600 s" "status shows the wait"
expect_in "$(events)" '"event":"rate_limit_wait"' "wait event"

# killed while it waits; time moves on half an hour
{ kill -9 $pid && wait $pid; } 2>/dev/null
echo $((T0 + 1800)) >"$AILOOP_TEST_CLOCK"
"$AILOOP" resume >"$TEST_TMP/out2" 2>"$TEST_TMP/err2" &
pid=$!
waiting "$TEST_TMP/err2" && pass || fail "the resumed run waits too"
expect_in "$(cat "$TEST_TMP/err2")" "for 30:00" "it waits what remains"
expect_eq "$(calls)" 2 "no call started while waiting"
sleep 0.3
kill -0 $pid 2>/dev/null && pass || fail "still waiting"

# the window frees one call at T0 + 3600, the next at T0 + 3600 too
echo $((T0 + 3600)) >"$AILOOP_TEST_CLOCK"
wait $pid && rc=0 || rc=$?
out=$(cat "$TEST_TMP/out2") err=$(cat "$TEST_TMP/err2")
expect_rc 0 "the resumed run completes once the window has room"
expect_eq "$(calls)" 4 "four calls in all"
expect_eq "$(grep -c . todo.txt)" 0 "every item fixed"
expect_eq "$(labels "$R")" "0 1 2 3 4 5" "no label skipped or repeated"

# an interrupt ends the wait: the run is paused
R=$TEST_TMP/hourint
loop_repo "$R" a b c
one_loop "$R" fixer.md "max_iterations: 10"
printf 'limits: {max_agent_calls_per_hour: 1}\n' >>"$R/.ai-loop/flow.yaml"
commit_all "$R"
cd "$R"
"$AILOOP" run "fix all" >"$TEST_TMP/out3" 2>"$TEST_TMP/err3" &
pid=$!
waiting "$TEST_TMP/err3" && pass || fail "the second call waits"
kill -INT $pid
wait $pid && rc=0 || rc=$?
out=$(cat "$TEST_TMP/out3") err=$(cat "$TEST_TMP/err3")
expect_rc 3 "interrupted while waiting"
expect_eq "$(run_status)" paused "the run is paused"

# on a terminal: a countdown, redrawn as time passes
if script -qec true /dev/null >/dev/null 2>&1 </dev/null; then
	R=$TEST_TMP/hourtty
	loop_repo "$R" a b
	one_loop "$R" fixer.md "max_iterations: 10"
	printf 'limits: {max_agent_calls_per_hour: 1}\n' >>"$R/.ai-loop/flow.yaml"
	commit_all "$R"
	cd "$R"
	echo $T0 >"$AILOOP_TEST_CLOCK"
	tty_out=$TEST_TMP/tty.out
	timeout 60 script -qefc "$(printf '%q ' "$AILOOP" run "fix all")" "$tty_out" \
		</dev/null >/dev/null 2>&1 &
	pid=$!
	i=0
	while ! grep -q "waiting to start.*: 1:00:00" "$tty_out" 2>/dev/null && [ $i -lt 200 ]; do
		sleep 0.05
		i=$((i + 1))
	done
	expect_in "$(cat "$tty_out")" "(limits.max_agent_calls_per_hour: 1): waiting to start actuator '.ai-loop/agents/fixer.md' of node 'fix' (iteration 2): 1:00:00" \
		"a countdown on a terminal"
	echo $((T0 + 1)) >"$AILOOP_TEST_CLOCK"
	i=0
	while ! grep -q "59:59" "$tty_out" 2>/dev/null && [ $i -lt 200 ]; do
		sleep 0.05
		i=$((i + 1))
	done
	expect_in "$(cat "$tty_out")" "): 59:59" "the countdown moves with the clock"
	echo $((T0 + 3600)) >"$AILOOP_TEST_CLOCK"
	wait $pid && rc=0 || rc=$?
	out=$(cat "$tty_out") err=""
	expect_rc 0 "the run on a terminal completes"
else
	echo "t84-hourly.sh: the terminal check skipped: script(1) cannot drive a pty here"
fi

# --- waits end at the node's timeout and at the run's time budget ---------------------
# (the test clock stands still: only those end the waits)
for case in timeout budget backoff; do
	R=$TEST_TMP/wait-$case
	loop_repo "$R" a b c d
	case $case in
	timeout)
		one_loop "$R" fixer.md "max_iterations: 10, timeout_seconds: 2"
		printf 'limits: {max_agent_calls_per_hour: 2}\n' >>"$R/.ai-loop/flow.yaml" ;;
	budget)
		one_loop "$R" fixer.md "max_iterations: 10"
		printf 'limits: {max_agent_calls_per_hour: 2, max_wall_seconds: 2}\n' >>"$R/.ai-loop/flow.yaml" ;;
	backoff)
		printf -- '---\nname: limited\ncommand: echo "429 too many requests" >&2; exit 1\n---\n' \
			>"$R/.ai-loop/agents/limited.md"
		one_loop "$R" limited.md "max_iterations: 10, timeout_seconds: 2"
		printf 'limits: {rate_limit_backoff_seconds: 600}\n' >>"$R/.ai-loop/flow.yaml" ;;
	esac
	commit_all "$R"
	cd "$R"
	start=$(date +%s)
	run timeout -s KILL 60 "$AILOOP" run "fix all"
	took=$(($(date +%s) - start))
	case $case in
	budget) expect_rc 4 "the hourly wait ends at the run's time budget: blocked" ;;
	*) expect_rc 2 "the $case wait ends at the node's timeout" ;;
	esac
	[ "$took" -lt 20 ] && pass || fail "the $case wait ended within seconds ($took s)"
	[ "$case" = budget ] || continue
	# the wait was time spent: status says so, and a resume blocks at once
	run "$AILOOP" status --json
	[ "$(printf '%s' "$out" | jq -r .budget.wall_seconds)" -ge 2 ] && pass ||
		fail "status counts the wait as time spent: $(printf '%s' "$out" | jq -c .budget)"
	start=$(date +%s)
	run timeout -s KILL 60 "$AILOOP" resume
	expect_rc 4 "resumed without a higher budget: blocked again"
	expect_in "$err" "time budget spent" "for the time budget"
	[ $(($(date +%s) - start)) -lt 2 ] && pass || fail "the resume spent no budget again"
done
expect_in "$err" "hit a rate limit (attempt 1): retrying in 600 s" "the back-off was under way"

finish
