#!/usr/bin/env bash
# logs/agent-calls, the record of agent calls, has a call's start time as
# a line of its own when it starts and, once a call whose CLI reported its
# usage ends, a line of that start time followed by the call's cost in
# dollars, how it is known (reported, estimated, unknown), its tokens
# in and out and its node's path. That line is no call: the call budgets
# count what they counted, and the cost budgets sum it.
# A line that reads as neither is named once and ignored.
. "$(dirname "$0")/lib.sh"

mkdir -p "$TEST_TMP/bin"
# a codex-like CLI: its usage, no cost; with SCRIBBLE=1 its actuator writes
# two lines that are no call's record into the record
cat >"$TEST_TMP/bin/fake-codex" <<'SH'
#!/bin/sh
cat >/dev/null
if [ "$AILOOP_ROLE" = actuator ]; then
	grep -v '^a$' todo.txt >todo.new || true
	mv todo.new todo.txt
	answer='---\nsummary: removed a\n---\nRemoved a.'
	if [ "${SCRIBBLE:-}" = 1 ]; then
		printf '1800000000 1.5 free 1 2\n1800000000 -1 unknown 1 2\n' \
			>>"$AILOOP_RUN_DIR/logs/agent-calls"
	fi
else
	answer='---\ntarget-met: false\n---\nNot yet.\n\n## Action Plan\n- remove a'
	[ -s todo.txt ] || answer='---\ntarget-met: true\n---\nDone.'
fi
printf '{"type":"thread.started","thread_id":"th-%s"}\n' "$AILOOP_ITERATION"
printf '{"type":"item.completed","item":{"id":"i1","type":"agent_message","text":"%s"}}\n' "$answer"
printf '{"type":"turn.completed","usage":{"input_tokens":1200000,"cached_input_tokens":200000,"output_tokens":100000}}\n'
SH
chmod +x "$TEST_TMP/bin/fake-codex"
export PATH="$TEST_TMP/bin:$PATH"

R=$TEST_TMP/repo
loop_repo "$R" a
printf -- '---\nname: ctl\nrunner: fake\nmodel: priced\n---\nDecide.\n' >"$R/.ai-loop/agents/ctl.md"
printf -- '---\nname: act\nrunner: fake\nmodel: free\n---\nAct.\n' >"$R/.ai-loop/agents/act.md"
cat >"$R/.ai-loop/flow.yaml" <<YAML
version: 1
runners:
  fake: {command: [fake-codex, '--model={model}'], prompt: stdin, output: codex-json}
prices: {priced: {input: 2, output: 10, cache_read: 0.5}}
flow:
  id: fix
  type: loop
  controller: .ai-loop/agents/ctl.md
  sensors: [.ai-loop/agents/sensor.md]
  actuator: {strategy: direct, agent: .ai-loop/agents/act.md}
YAML
commit_all "$R"
cd "$R"
run "$AILOOP" run "remove a"
expect_rc 0 "the run completes"
record=$(cat .ai-loop/runs/run_*/logs/agent-calls)
starts=$(printf '%s\n' "$record" | grep -E '^[0-9]+$')
ends=$(printf '%s\n' "$record" | grep ' ')
expect_eq "$(printf '%s\n' "$starts" | wc -l | tr -d ' ')" 3 "a line for each call as it starts"
# 1,000,000 in at $2 + 200,000 cached at $0.5 + 100,000 out at $10 = $3.10
expect_eq "$(printf '%s\n' "$ends" | cut -d' ' -f2-)" "3.100000 estimated 1200000 100000 fix
0.000000 unknown 1200000 100000 fix
3.100000 estimated 1200000 100000 fix" \
	"and one as it ends: its cost, how it is known, its tokens in (cache included) and out, its node"
expect_eq "$(printf '%s\n' "$ends" | cut -d' ' -f1)" "$starts" "each beginning with its call's start"
expect_eq "$(ls .ai-loop/runs/run_*/logs/agent-costs 2>/dev/null)" "" "the one record of the calls' costs"
expect_eq "$(jq -rs '[.[] | select(.event == "agent_usage") | .cost] | join(" ")' \
	.ai-loop/runs/run_*/events.jsonl)" "estimated unknown estimated" "agent_usage events as before"
run "$AILOOP" status --json
expect_eq "$(printf '%s' "$out" | jq -r .budget.agent_calls)" 3 "the lines of costs are no calls"
expect_not_in "$err" "warning" "nor warnings"

# --- lines that read as neither are named once, and are no calls ----------------------------
git checkout -q main
echo a >todo.txt && commit_all "$R" "again"
printf 'limits: {max_agent_calls: 3}\n' >>.ai-loop/flow.yaml && commit_all "$R" "a budget"
SCRIBBLE=1 run "$AILOOP" run "remove a again"
expect_rc 0 "a run whose record an agent wrote into completes, within its 3 calls"
expect_eq "$(printf '%s\n' "$err" | grep -c "is not a call's record")" 2 "each bad line named once"
expect_in "$err" "'1800000000 1.5 free 1 2' is not a call's record" "saying what it holds"
expect_in "$err" "'1800000000 -1 unknown 1 2' is not a call's record" "a negative cost is none"

finish
