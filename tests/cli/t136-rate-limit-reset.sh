#!/usr/bin/env bash
# An agent that hits its provider's limit and says when it resets (claude's
# stream-json rate_limit_event rejected with resetsAt, claude's "resets 3pm
# (Europe/Paris)", codex's "try again at ...") is run again at that time
# and a margin of 30 s, not after the doubling back-off; at most
# limits.rate_limit_max_wait_seconds away, then again. A reset past is a
# margin's wait. The wait is recorded: a kill and a resume wait what
# remains. A warning that the limit is near is told, not waited on.
# Time is the test's clock (AILOOP_TEST_CLOCK, honoured by test builds only).
. "$(dirname "$0")/lib.sh"

export AILOOP_TEST_CLOCK=$TEST_TMP/clock TZ=UTC
T0=1800000000 # 2027-01-15 08:00:00 UTC, 09:00 in Paris
echo $T0 >"$AILOOP_TEST_CLOCK"

calls() { grep -c '^[0-9]*$' .ai-loop/runs/run_*/logs/agent-calls; }
events() { cat .ai-loop/runs/run_*/events.jsonl; }
# waiting FILE TEXT: until FILE holds TEXT
waiting() {
	local i=0
	while ! grep -qF "$2" "$1" 2>/dev/null && [ $i -lt 300 ]; do
		sleep 0.05
		i=$((i + 1))
	done
	grep -qF "$2" "$1"
}
# still PID: the run is still waiting a moment later
still() { sleep 0.5; kill -0 "$1" 2>/dev/null; }

# limited_repo NAME FAILS SAYS LIMITS: a loop fixing a and b whose actuator
# is a claude-like CLI (stream-json) that prints SAYS and exits 1 the first
# FAILS times; then it prints $TEST_TMP/NAME.warn, if there is one, and fixes
limited_repo() {
	R=$TEST_TMP/$1
	local count=$TEST_TMP/$1.count
	: >"$count"
	printf '%s\n' "$3" >"$TEST_TMP/$1.says"
	loop_repo "$R" a b
	cat >"$R/.ai-loop/agents/claude.sh" <<SH
cat >/dev/null
echo x >>"$count"
if [ \$(wc -l <"$count") -le $2 ]; then cat "$TEST_TMP/$1.says"; exit 1; fi
[ ! -f "$TEST_TMP/$1.warn" ] || cat "$TEST_TMP/$1.warn"
exec sh .ai-loop/agents/fix.sh
SH
	printf -- '---\nname: limited\nrunner: fake\n---\nFix one.\n' >"$R/.ai-loop/agents/limited.md"
	one_loop "$R" limited.md "max_iterations: 5"
	printf 'runners:\n  fake: {command: [sh, .ai-loop/agents/claude.sh], prompt: stdin, output: claude-json}\nlimits: {%s}\n' \
		"${4:-rate_limit_backoff_seconds: 60}" >>"$R/.ai-loop/flow.yaml"
	commit_all "$R"
	cd "$R"
}
ACT="actuator '.ai-loop/agents/limited.md' of node 'fix' (iteration 1)"

# --- the stream says rejected, and when the limit resets: the wait ends there ------------
# (the flow's pattern matches nothing: the stream alone says it is a rate limit)
limited_repo stream 1 '{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":1800000100,"rateLimitType":"five_hour"}}
{"type":"result","subtype":"success","is_error":true,"result":"Request refused","session_id":"s1"}' \
	"rate_limit_pattern: 'slow down'"
: >"$TEST_TMP/err" # not the last run's, before this one's starts
"$AILOOP" run "fix all" >"$TEST_TMP/out" 2>"$TEST_TMP/err" &
pid=$!
waiting "$TEST_TMP/err" "retrying in" && pass || fail "the rejected call waits"
expect_in "$(cat "$TEST_TMP/err")" \
	"ailoop: $ACT hit a rate limit (attempt 1) that resets at 2027-01-15 08:01 UTC: retrying in 2:10" \
	"until the reset and the margin, not the 60 s back-off"
expect_eq "$(events | jq -c 'select(.event == "rate_limit_wait") | [.reset_at, .seconds, .capped]')" \
	"[1800000100,130,false]" "a rate_limit_wait event says when it resets"
expect_eq "$(events | jq -c 'select(.event == "rate_limited") | [.attempt, .backoff_seconds, .reset_at]')" \
	"[1,130,1800000100]" "and the rate_limited event"
echo $((T0 + 129)) >"$AILOOP_TEST_CLOCK"
still $pid && pass || fail "a second before its end, it still waits"
expect_eq "$(calls)" 1 "no call while it waits"
expect_eq "$(cat $(find .ai-loop/runs -name '*.rate-limit'))" "$((T0 + 130)) $((T0 + 100))" \
	"the wait is recorded beside the call's log: its end and the reset"
echo $((T0 + 130)) >"$AILOOP_TEST_CLOCK"
wait $pid && rc=0 || rc=$?
out=$(cat "$TEST_TMP/out") err=$(cat "$TEST_TMP/err")
expect_rc 0 "at the reset the call is made again, and the run completes"
expect_eq "$(calls)" 3 "the refused call, its retry and the next item's"
expect_eq "$(grep -c . todo.txt)" 0 "every item fixed"
expect_eq "$(find .ai-loop/runs -name '*.rate-limit')" "" "the wait's record goes once waited"

# --- a message naming the reset in a zone; a kill and a resume wait what remains ---------
echo $T0 >"$AILOOP_TEST_CLOCK"
limited_repo message 1 "You've hit your limit · resets 10am (Europe/Paris)"
: >"$TEST_TMP/err" # not the last run's, before this one's starts
"$AILOOP" run "fix all" >"$TEST_TMP/out" 2>"$TEST_TMP/err" &
pid=$!
waiting "$TEST_TMP/err" "retrying in" && pass || fail "the limited call waits"
expect_in "$(cat "$TEST_TMP/err")" "that resets at 2027-01-15 09:00 UTC: retrying in 1:00:30" \
	"10am in Paris is 09:00 UTC"
{ kill -9 $pid && wait $pid; } 2>/dev/null
echo $((T0 + 1800)) >"$AILOOP_TEST_CLOCK"
: >"$TEST_TMP/err"
"$AILOOP" resume >"$TEST_TMP/out" 2>"$TEST_TMP/err" &
pid=$!
waiting "$TEST_TMP/err" "waiting what remains" && pass || fail "the resumed run waits too"
expect_in "$(cat "$TEST_TMP/err")" \
	"ailoop: $ACT hit a rate limit that resets at 2027-01-15 09:00 UTC: waiting what remains, 30:30" \
	"what remains of it"
expect_eq "$(events | jq -c 'select(.event == "rate_limit_wait") | [.reset_at, .seconds, .resumed]' | tail -1)" \
	"[1800003600,1830,true]" "a rate_limit_wait event of the resume"
still $pid && pass || fail "it still waits"
expect_eq "$(calls)" 1 "no call started while waiting"
echo $((T0 + 3630)) >"$AILOOP_TEST_CLOCK"
wait $pid && rc=0 || rc=$?
out=$(cat "$TEST_TMP/out") err=$(cat "$TEST_TMP/err")
expect_rc 0 "the resumed run completes once the limit has reset"
expect_eq "$(calls)" 3 "the call made again once"
expect_eq "$(grep -c . todo.txt)" 0 "every item fixed"

# --- a reset further than rate_limit_max_wait_seconds: waits that long, then tries -------
echo $T0 >"$AILOOP_TEST_CLOCK"
limited_repo capped 1 "You've hit your usage limit. Upgrade to Pro or try again at Jan 20th, 2027 8:00 AM." \
	"rate_limit_max_wait_seconds: 600"
: >"$TEST_TMP/err" # not the last run's, before this one's starts
"$AILOOP" run "fix all" >"$TEST_TMP/out" 2>"$TEST_TMP/err" &
pid=$!
waiting "$TEST_TMP/err" "retrying in" && pass || fail "the limited call waits"
expect_in "$(cat "$TEST_TMP/err")" \
	"that resets at 2027-01-20 08:00 UTC, later than limits.rate_limit_max_wait_seconds (600 s) lets it wait: retrying in 10:00, and waiting again if it is refused" \
	"it says it waits the limit only"
expect_eq "$(events | jq -c 'select(.event == "rate_limit_wait") | [.seconds, .capped]')" "[600,true]" \
	"the event says so too"
echo $((T0 + 600)) >"$AILOOP_TEST_CLOCK"
wait $pid && rc=0 || rc=$?
expect_rc 0 "tried again after 10 minutes, it goes through"

# --- a reset past: a margin's wait; a warning: no wait -------------------------------------
echo $T0 >"$AILOOP_TEST_CLOCK"
limited_repo past 1 "You've hit your limit · resets 7:30am (UTC)"
printf '%s\n' '{"type":"rate_limit_event","rate_limit_info":{"status":"allowed_warning","resetsAt":1800003600,"rateLimitType":"five_hour","utilization":0.9}}' \
	>"$TEST_TMP/past.warn"
: >"$TEST_TMP/err" # not the last run's, before this one's starts
"$AILOOP" run "fix all" >"$TEST_TMP/out" 2>"$TEST_TMP/err" &
pid=$!
waiting "$TEST_TMP/err" "retrying in" && pass || fail "the limited call waits"
expect_in "$(cat "$TEST_TMP/err")" "that resets at 2027-01-15 07:30 UTC: retrying in 0:30" \
	"a reset half an hour past: the margin"
echo $((T0 + 30)) >"$AILOOP_TEST_CLOCK"
wait $pid && rc=0 || rc=$?
out=$(cat "$TEST_TMP/out") err=$(cat "$TEST_TMP/err")
expect_rc 0 "the run completes, not waiting on the warnings"
expect_in "$err" \
	"ailoop: [1] fix: warning: actuator '.ai-loop/agents/limited.md' is close to its provider's rate limit, which resets at 2027-01-15 09:00 UTC" \
	"a warning is told"
expect_eq "$(events | jq -c 'select(.event == "rate_limit_warning") | [.label, .role, .reset_at]' | head -1)" \
	'["1","actuator",1800003600]' "and recorded"

# --- Ctrl-C ends a wait; a record of it that does not read (an agent's) is no wait -------
echo $T0 >"$AILOOP_TEST_CLOCK"
limited_repo scribbled 1 "You've hit your limit · resets 10am (UTC)"
: >"$TEST_TMP/err"
"$AILOOP" run "fix all" >"$TEST_TMP/out" 2>"$TEST_TMP/err" &
pid=$!
waiting "$TEST_TMP/err" "retrying in 2:00:30" && pass || fail "the limited call waits"
kill -INT $pid
wait $pid && rc=0 || rc=$?
out=$(cat "$TEST_TMP/out") err=$(cat "$TEST_TMP/err")
expect_rc 3 "Ctrl-C ends the wait: the run is paused"
record=$(find .ai-loop/runs -name '*.rate-limit')
expect_eq "$(cat "$record")" "$((T0 + 7230)) $((T0 + 7200))" "the wait stays recorded for the resume"
echo soon >"$record"
run "$AILOOP" resume
expect_rc 0 "the resumed run does not wait"
expect_not_in "$err" "waiting what remains" "for a record that is no time"
[ ! -e "$record" ] && pass || fail "the record is removed"

# --- a bad limit -------------------------------------------------------------------------------
sed -i 's/^limits: .*/limits: {rate_limit_max_wait_seconds: 0}/' .ai-loop/flow.yaml
run "$AILOOP" validate
expect_rc 65 "a wait of at most 0 s"
expect_in "$err" "rate_limit_max_wait_seconds" "names the key"

finish
