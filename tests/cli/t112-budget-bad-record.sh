#!/usr/bin/env bash
# The record of agent calls (logs/agent-calls) is a file an agent can write
# to. A line in it that is not a time (a number near the end of a 64-bit
# integer, words, a sign) is no call: it is ignored and named once, and no
# wait grows from it (a huge time overflowed the hourly window's end: a
# busy loop, at 100% CPU, "waiting" for 2562047787516374 hours).
. "$(dirname "$0")/lib.sh"

R=$TEST_TMP/bad-record
loop_repo "$R" a b c
# the actuator fixes an item, and on its first call writes into the record
cat >"$R/.ai-loop/agents/scribble.md" <<'MD'
---
name: scribble
command: [sh, -c, 'f=$AILOOP_RUN_DIR/logs/agent-calls; [ -e scribbled ] || { printf "9223372036854775000\n9223372036854775807\nsoon\n" >>"$f"; : >scribbled; }; exec sh .ai-loop/agents/fix.sh']
---
Fix one item.
MD
echo scribbled >"$R/.gitignore"
one_loop "$R" scribble.md "max_iterations: 10"
printf 'limits: {max_agent_calls_per_hour: 2}\n' >>"$R/.ai-loop/flow.yaml"
commit_all "$R"
cd "$R"

# three items: two calls fill the hour's window, the third waits an hour
export AILOOP_TEST_CLOCK=$TEST_TMP/clock
T0=1800000000
echo $T0 >"$AILOOP_TEST_CLOCK"
"$AILOOP" run "fix all" >"$TEST_TMP/out" 2>"$TEST_TMP/err" &
pid=$!
i=0
while ! grep -q "waiting to start" "$TEST_TMP/err" 2>/dev/null && kill -0 $pid 2>/dev/null &&
	[ $i -lt 1200 ]; do
	sleep 0.05
	i=$((i + 1))
done
err=$(cat "$TEST_TMP/err")
expect_in "$err" "waiting to start actuator '.ai-loop/agents/scribble.md' of node 'fix' (iteration 3) for 1:00:00" \
	"the third call waits an hour, as the two real calls say"
echo $((T0 + 3600)) >"$AILOOP_TEST_CLOCK"
timeout -s KILL 60 tail --pid=$pid -f /dev/null && pass || fail "the run ends once the window has room"
kill -9 $pid 2>/dev/null
wait $pid && rc=0 || rc=$?
out=$(cat "$TEST_TMP/out") err=$(cat "$TEST_TMP/err")
expect_rc 0 "the run completes"
expect_eq "$(grep -c . todo.txt)" 0 "every item fixed"
for n in 2 3 4; do
	expect_eq "$(printf '%s\n' "$err" | grep -c "line $n of '.*/logs/agent-calls'")" 1 \
		"line $n named once"
done
expect_in "$err" "ailoop: warning: ignoring line 2 of '.ai-loop/runs/" "a warning"
expect_in "$err" "logs/agent-calls': '9223372036854775000' is not a time" "it says what the line holds"
expect_in "$err" "'soon' is not a time" "words are no time"
run "$AILOOP" status --json
expect_eq "$(printf '%s' "$out" | jq -r .budget.agent_calls)" 3 "the bad lines are no calls"

finish
