#!/usr/bin/env bash
# One record of what each call cost: the line logs/agent-calls gets as a
# call ends (its start, dollars, how known, tokens in and out, its node),
# which the cost budgets sum; logs/agent-costs is no longer written. A run
# begun by an earlier ailoop, whose costs are in logs/agent-costs and whose
# lines of agent-calls have no node, is resumed with what it spent counted
# once: the old calls from agent-costs, the new from agent-calls. A crash
# between a call's end and its record, or during the record's write,
# leaves that call's cost uncounted: once at most, never twice; a line
# cut short is cut off before the next is written, which would join it.
. "$(dirname "$0")/lib.sh"

mkdir -p "$TEST_TMP/bin"
# a codex-like CLI at $3.10 a call: its actuator fixes the first item
cat >"$TEST_TMP/bin/fake-codex" <<'SH'
#!/bin/sh
cat >/dev/null
if [ "$AILOOP_ROLE" = actuator ]; then
	sed -i 1d todo.txt
	# with TORN=1, a line cut short in the record, as a kill leaves one
	[ "${TORN:-}" = 1 ] && printf '1800000000 3.1' >>"$AILOOP_RUN_DIR/logs/agent-calls"
	answer='---\nsummary: removed one\n---\nRemoved one.'
else
	answer='---\ntarget-met: false\n---\nNot yet.\n\n## Action Plan\n- remove one'
	[ -s todo.txt ] || answer='---\ntarget-met: true\n---\nDone.'
fi
printf '{"type":"thread.started","thread_id":"th-%s"}\n' "$AILOOP_ITERATION"
printf '{"type":"item.completed","item":{"id":"i1","type":"agent_message","text":"%s"}}\n' "$answer"
printf '{"type":"turn.completed","usage":{"input_tokens":1200000,"cached_input_tokens":200000,"output_tokens":100000}}\n'
SH
chmod +x "$TEST_TMP/bin/fake-codex"
export PATH="$TEST_TMP/bin:$PATH"

R=$TEST_TMP/repo
loop_repo "$R" a b
printf -- '---\nname: ctl\nrunner: fake\nmodel: m\n---\nDecide.\n' >"$R/.ai-loop/agents/ctl.md"
printf -- '---\nname: act\nrunner: fake\nmodel: m\n---\nAct.\n' >"$R/.ai-loop/agents/act.md"
flow() {
	cat >"$R/.ai-loop/flow.yaml" <<YAML
version: 1
runners:
  fake: {command: [fake-codex, '--model={model}'], prompt: stdin, output: codex-json}
prices: {m: {input: 2, output: 10, cache_read: 0.5}}
limits: {max_cost_usd: $1}
flow:
  id: fix
  type: loop
  controller: .ai-loop/agents/ctl.md
  sensors: [.ai-loop/agents/sensor.md]
  actuator: {strategy: direct, agent: .ai-loop/agents/act.md}
YAML
}
flow 5
commit_all "$R"
cd "$R"
run "$AILOOP" run "remove all"
expect_rc 4 "blocked once \$6.20 is spent"
expect_in "$err" "cost budget spent: \$6.2000 for 2 calls" "two calls counted"
dir=$(ls -d .ai-loop/runs/run_* | tail -1)
expect_eq "$(ls "$dir/logs/agent-costs" 2>/dev/null)" "" "no second record of the costs"
expect_eq "$(grep -c ' fix$' "$dir/logs/agent-calls")" 2 "each call's record names its node"

# --- the run as an earlier ailoop left it: costs in agent-costs, no node in agent-calls --------
sed -i -E 's/^([0-9]+ [^ ]+ [a-z]+ [0-9]+ [0-9]+) .*$/\1/' "$dir/logs/agent-calls"
for _ in 1 2; do
	printf '{"node":"fix","usd":3.1000000000000001,"tokens":1300000,"cost":"estimated"}\n'
done >"$dir/logs/agent-costs"
expect_eq "$(grep -c ' fix$' "$dir/logs/agent-calls")" 0 "the old format's lines"
run "$AILOOP" resume
expect_rc 4 "the old run's costs count on resume"
expect_in "$err" "cost budget spent: \$6.2000 for 2 calls" "read from logs/agent-costs"
expect_not_in "$err" "warning" "the old lines are no bad lines"
flow 12
run "$AILOOP" resume
expect_rc 4 "two more calls, then blocked again"
expect_in "$err" "cost budget spent: \$12.4000 for 4 calls, limits.max_cost_usd is \$12.0000" \
	"the old calls and the new, each once"
expect_eq "$(grep -c ' fix$' "$dir/logs/agent-calls")" 2 "the new calls in agent-calls"
expect_eq "$(wc -l <"$dir/logs/agent-costs" | tr -d ' ')" 2 "agent-costs is not written to"
flow 50
run "$AILOOP" resume
expect_rc 0 "raised, the run completes"
expect_eq "$("$AILOOP" status --json | jq -r .budget.cost.calls)" 5 "status counts from the events"

# --- a crash between a call's end and its record ------------------------------------------------
git checkout -q -f main
# the same flow and items as main: a fresh run
AILOOP_TEST_KILL_BEFORE_COST=1 run "$AILOOP" run "remove all again"
expect_rc 137 "killed as the first call ended"
dir=$(ls -d .ai-loop/runs/run_* | tail -1)
expect_eq "$(grep -c ' ' "$dir/logs/agent-calls")" 0 "the killed call has no record"
# and a crash while a record was written: a line cut short
printf '1800000000 3.100000 estimated 1200' >>"$dir/logs/agent-calls"
run "$AILOOP" resume
expect_rc 4 "blocked once \$6.20 is spent by calls whose record was written"
expect_in "$err" "cost budget spent: \$6.2000 for 2 calls" "the killed call and the cut line count for nothing"
expect_not_in "$err" "warning" "the cut line is cut off, not named"
expect_eq "$(grep -c ' fix$' "$dir/logs/agent-calls")" 2 "two records"
expect_eq "$(grep -c . "$dir/logs/agent-calls")" 5 "three starts, two ends, no cut line"

# --- a line cut short in the record as a call ends: the call's own line does not join it ----------
git checkout -q -f main
TORN=1 run "$AILOOP" run "remove all, torn"
expect_rc 4 "blocked once \$6.20 is spent"
expect_in "$err" "for 2 calls, limits.max_cost_usd is \$5.0000, before controller '.ai-loop/agents/ctl.md' of node 'fix' (iteration 2)" \
	"the actuator's call counted"
expect_not_in "$err" "warning" "its line whole, no bad line"
dir=$(ls -d .ai-loop/runs/run_* | tail -1)
expect_eq "$(grep -c ' fix$' "$dir/logs/agent-calls")" 2 "two records"

finish
