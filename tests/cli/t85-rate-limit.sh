#!/usr/bin/env bash
# limits.rate_limit_pattern: an agent that fails with output that matches it
# (by default the usual "rate limit", "usage limit", "429", "overloaded"
# messages) is run again after a back-off (rate_limit_backoff_seconds,
# doubling), and its failure is not the node's. The back-off ends at an
# interrupt. A bad pattern is an error of the flow at its position.
. "$(dirname "$0")/lib.sh"

export COUNT
calls() { wc -l <.ai-loop/runs/run_*/logs/agent-calls | tr -d ' '; }
events() { cat .ai-loop/runs/run_*/events.jsonl; }

# limited_repo NAME FAILS SAYS LIMITS: a loop fixing a and b whose actuator
# says SAYS on stderr and exits 1 the first FAILS times
limited_repo() {
	R=$TEST_TMP/$1
	COUNT=$TEST_TMP/$1.count
	: >"$COUNT"
	loop_repo "$R" a b
	cat >"$R/.ai-loop/agents/limited.sh" <<SH
echo x >>"\$COUNT"
if [ \$(wc -l <"\$COUNT") -le $2 ]; then echo "$3" >&2; exit 1; fi
exec sh .ai-loop/agents/fix.sh
SH
	printf -- '---\nname: limited\ncommand: [sh, .ai-loop/agents/limited.sh]\n---\nFix one.\n' \
		>"$R/.ai-loop/agents/limited.md"
	one_loop "$R" limited.md "max_iterations: 5"
	printf 'limits: {%s}\n' "$4" >>"$R/.ai-loop/flow.yaml"
	commit_all "$R"
	cd "$R"
}

# --- retried after the back-off, doubling; the run succeeds ------------------------
limited_repo retried 2 "Error: 429 rate limit exceeded" "rate_limit_backoff_seconds: 1"
start=$(date +%s)
run "$AILOOP" run "fix all"
took=$(($(date +%s) - start))
expect_rc 0 "a rate-limited agent retried until it works"
expect_in "$err" "ailoop: actuator '.ai-loop/agents/limited.md' of node 'fix' (iteration 1) hit a rate limit (attempt 1): retrying in 1 s" \
	"the first back-off"
expect_in "$err" "hit a rate limit (attempt 2): retrying in 2 s" "the back-off doubles"
[ "$took" -ge 3 ] && pass || fail "the back-offs were waited (took $took s)"
expect_eq "$(grep -c '"event":"rate_limited"' .ai-loop/runs/run_*/events.jsonl)" 2 \
	"a rate_limited event per back-off"
expect_eq "$(grep -c . todo.txt)" 0 "every item fixed"
expect_eq "$(labels "$R")" "0 1 2 3" "the retries made no commits"
expect_not_in "$(git log --format=%B)" "failed" "no failure recorded"
expect_eq "$(calls)" 4 "every attempt is an agent call"

# --- other failures are failures ---------------------------------------------------------
limited_repo other 1 "Error: disk full" "rate_limit_backoff_seconds: 1"
run "$AILOOP" run "fix all"
expect_rc 1 "a failure that is no rate limit"
expect_eq "$(wc -l <"$COUNT" | tr -d ' ')" 1 "is not retried"
expect_not_in "$err" "rate limit" "and not called one"

# --- the default pattern: overloaded, usage limit -----------------------------------------
limited_repo overloaded 1 "API Error: Overloaded" "rate_limit_backoff_seconds: 1"
run "$AILOOP" run "fix all"
expect_rc 0 "overloaded is a rate limit"
limited_repo usage 1 "Claude usage limit reached" "rate_limit_backoff_seconds: 1"
run "$AILOOP" run "fix all"
expect_rc 0 "a usage limit is a rate limit"

# --- a pattern of the flow's own ------------------------------------------------------------
limited_repo own 1 "please slow down" "rate_limit_pattern: 'slow down', rate_limit_backoff_seconds: 1"
run "$AILOOP" run "fix all"
expect_rc 0 "the flow's pattern"
limited_repo own429 1 "Error: 429" "rate_limit_pattern: 'slow down', rate_limit_backoff_seconds: 1"
run "$AILOOP" run "fix all"
expect_rc 1 "replaces the default one"

# --- an LLM sensor that hits a rate limit -----------------------------------------------------
R=$TEST_TMP/sensor
COUNT=$TEST_TMP/sensor.count
: >"$COUNT"
loop_repo "$R" a
cat >"$R/.ai-loop/agents/judge.sh" <<'SH'
cat >/dev/null
echo x >>"$COUNT"
if [ $(wc -l <"$COUNT") -le 1 ]; then echo "rate_limit_error" >&2; exit 1; fi
printf -- '---\nstatus: pass\n---\nfine\n'
SH
printf -- '---\nname: judge\nrunner: fake\n---\nJudge.\n' >"$R/.ai-loop/agents/judge.md"
cat >"$R/.ai-loop/flow.yaml" <<'YAML'
version: 1
runners:
  fake: {command: [sh, .ai-loop/agents/judge.sh], prompt: stdin}
limits: {rate_limit_backoff_seconds: 1}
flow:
  id: fix
  type: loop
  controller: builtin:all-pass
  sensors: [.ai-loop/agents/sensor.md, .ai-loop/agents/judge.md]
  sensors_parallel: true
  actuator: {strategy: direct, agent: .ai-loop/agents/fixer.md}
YAML
commit_all "$R"
cd "$R"
run "$AILOOP" run "fix all"
expect_rc 0 "a rate-limited sensor agent is retried"
expect_in "$err" "sensor judge '.ai-loop/agents/judge.md' of node 'fix' (iteration 0) hit a rate limit" \
	"the sensor's back-off"

# --- an interrupt ends the back-off: the run is paused, and resumes ----------------------------
limited_repo interrupted 1 "429 Too Many Requests" "rate_limit_backoff_seconds: 600"
"$AILOOP" run "fix all" >"$TEST_TMP/out" 2>"$TEST_TMP/err" &
pid=$!
i=0
while ! grep -q "retrying in 600 s" "$TEST_TMP/err" && [ $i -lt 200 ]; do
	sleep 0.05
	i=$((i + 1))
done
start=$(date +%s)
kill -INT $pid
wait $pid && rc=0 || rc=$?
out=$(cat "$TEST_TMP/out") err=$(cat "$TEST_TMP/err")
expect_rc 3 "interrupted in the back-off"
[ $(($(date +%s) - start)) -le 3 ] && pass || fail "the back-off ended at once"
expect_eq "$(run_status)" paused "the run is paused"
run "$AILOOP" resume
expect_rc 0 "the resumed run runs the agent again"
expect_eq "$(grep -c . todo.txt)" 0 "and completes"

# --- a bad pattern ----------------------------------------------------------------------------------
R=$TEST_TMP/bad
loop_repo "$R" a
one_loop "$R" fixer.md
printf 'limits:\n  rate_limit_pattern: "rate (limit"\n' >>"$R/.ai-loop/flow.yaml"
commit_all "$R"
cd "$R"
line=$(grep -n rate_limit_pattern .ai-loop/flow.yaml | cut -d: -f1)
run "$AILOOP" validate
expect_rc 65 "a bad rate_limit_pattern"
expect_in "$err" ".ai-loop/flow.yaml:$line:" "reported at its line"
expect_in "$err" "error: invalid regular expression in 'rate_limit_pattern'" "with what is wrong"
run "$AILOOP" run "fix all"
expect_rc 65 "a run refuses it"
sed -i '/^limits:/,$d' .ai-loop/flow.yaml
printf 'limits: {rate_limit_backoff_seconds: 0}\n' >>.ai-loop/flow.yaml
run "$AILOOP" validate
expect_rc 65 "a back-off of 0 s"
expect_in "$err" "rate_limit_backoff_seconds" "names the key"

finish
