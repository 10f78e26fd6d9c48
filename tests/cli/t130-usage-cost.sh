#!/usr/bin/env bash
# What a run costs. Runners that print a CLI's JSON (output: codex-json,
# claude-json, ...) are read: the final text is the answer an agent that
# wrote no output file gave, and each call's tokens and cost are recorded
# (agent_usage in events.jsonl): the cost the CLI reported, else an
# estimate at the model's price (prices: in flow.yaml over the built-in
# table), else unknown. Each iteration's commit says what its calls cost
# ([cost]), as `ailoop log --json` does, and `ailoop status` sums the run. A stream cut short still gives its
# text. Budgets in dollars and tokens (limits: for the run, termination:
# for a node's subtree) block the call that would start after one is
# spent (exit 4), resumable once raised; unknown_cost: block stops a run
# whose calls' cost cannot be known. A bad price or budget is a
# configuration error at its FILE:LINE:COL.
. "$(dirname "$0")/lib.sh"

mkdir -p "$TEST_TMP/bin"
# a codex-like CLI: JSON lines, the answer in an agent_message, usage without cost
cat >"$TEST_TMP/bin/fake-codex" <<'SH'
#!/bin/sh
cat >/dev/null
if [ "$AILOOP_ROLE" = actuator ]; then
	grep -v '^a$' todo.txt >todo.new || true
	mv todo.new todo.txt
	answer='---\nsummary: removed a\n---\nRemoved a.'
else
	answer='---\ntarget-met: false\n---\nNot yet.\n\n## Action Plan\n- remove a'
	[ -s todo.txt ] || answer='---\ntarget-met: true\n---\nDone.'
fi
printf '{"type":"thread.started","thread_id":"th-%s"}\n' "$AILOOP_ITERATION"
printf '{"type":"item.completed","item":{"id":"i1","type":"agent_message","text":"%s"}}\n' "$answer"
[ "${CUT:-}" = 1 ] && exit 0 # the stream ends before its usage
printf '{"type":"turn.completed","usage":{"input_tokens":1200000,"cached_input_tokens":200000,"output_tokens":100000}}\n'
SH
chmod +x "$TEST_TMP/bin/fake-codex"
export PATH="$TEST_TMP/bin:$PATH"

R=$TEST_TMP/repo
loop_repo "$R" a
printf -- '---\nname: ctl\nrunner: fake\nmodel: local-model\n---\nDecide.\n' >"$R/.ai-loop/agents/ctl.md"
printf -- '---\nname: act\nrunner: fake\nmodel: local-model\n---\nAct.\n' >"$R/.ai-loop/agents/act.md"
flow() {
	cat >"$R/.ai-loop/flow.yaml" <<YAML
version: 1
runners:
  fake: {command: [fake-codex, '--model={model}'], prompt: stdin, output: codex-json}
$1
flow:
  id: fix
  type: loop
  controller: .ai-loop/agents/ctl.md
  sensors: [.ai-loop/agents/sensor.md]
  actuator: {strategy: direct, agent: .ai-loop/agents/act.md}
YAML
}
flow ""
commit_all "$R"
cd "$R"
run "$AILOOP" run "remove a"
expect_rc 0 "a run of a JSON-printing CLI completes"
usage() { jq -rs "[.[] | select(.event == \"agent_usage\") | $1] | join(\" \")" .ai-loop/runs/run_*/events.jsonl; }
expect_eq "$(usage '.cost')" "unknown unknown unknown" \
	"a model with no price, and a CLI that reports no cost: no figure is made up"
expect_eq "$(usage '.model')" "local-model local-model local-model" \
	"the model asked for, where the stream names none"
expect_eq "$(usage '.input')" "1000000 1000000 1000000" "input tokens, cached ones apart"
expect_eq "$(usage '.cache_read')" "200000 200000 200000" "the cached input"
expect_eq "$(usage '.session')" "th-1 th-1 th-2" "each call's session id"
expect_in "$(git log --format=%B -1 HEAD~1)" "[cost] \$0.0000 (2.4M in, 200.0k out), some unknown" \
	"the commit says what it used, and that the cost is unknown"
expect_eq "$(cat todo.txt)" "" "the actuator's answer (its final text) was its output"

# --- prices: gives the model a price: the cost is estimated --------------------------------
git checkout -q main
flow "prices: {local-model: {input: 2, output: 10, cache_read: 0.5}}"
commit_all "$R"
echo a >todo.txt && commit_all "$R" "again"
run "$AILOOP" run "remove a again"
expect_rc 0 "a run with prices"
expect_eq "$(usage '.cost' | tail -c 30)" "estimated estimated estimated" "estimated at the flow's price"
# 1,000,000 in at $2 + 200,000 cached at $0.5 + 100,000 out at $10 = $3.10
expect_eq "$(jq -rs '[.[] | select(.event == "agent_usage") | .cost_usd] | map(tostring) | unique | join(" ")' \
	.ai-loop/runs/run_*002/events.jsonl)" "3.1" "each call's estimate"
expect_in "$(git log --format=%B -1 HEAD~1)" "[cost] \$6.2000 (2.4M in, 200.0k out), estimated" \
	"the iteration's two calls, estimated"
expect_in "$("$AILOOP" log --json)" '"cost": "$6.2000 (2.4M in, 200.0k out), estimated"' "log --json has it"
run "$AILOOP" status
expect_in "$out" "cost:         \$9.3000 (3600000 tokens in, 300000 out, over 3 calls; 3 estimated at list prices, \$9.3000)" \
	"status sums the run's calls"
run "$AILOOP" status --json
expect_eq "$(printf '%s' "$out" | jq -c '.budget.cost | [.usd, .calls, .estimated, .unknown]')" "[9.3,3,3,0]" \
	"status --json too"

# --- a stream cut short: the text it gave, usage unknown ---------------------------------
git checkout -q main
echo a >todo.txt && commit_all "$R" "once more"
CUT=1 run "$AILOOP" run "remove a, cut"
expect_rc 0 "a stream cut before its usage still gives the answer"
expect_eq "$(jq -rs '[.[] | select(.event == "agent_usage") | .known] | unique | join(" ")' \
	.ai-loop/runs/run_*003/events.jsonl)" "false" "its usage is unknown"

# --- budgets in dollars and tokens: the call that would start after a limit is spent does not --
budget_run() { # FLOW-LINES TASK: a fresh run from main with these lines in the flow
	git checkout -q -f main # leaving a blocked run where it stopped
	flow "prices: {local-model: {input: 2, output: 10, cache_read: 0.5}}
$1"
	echo a >todo.txt && commit_all "$R" "$2"
	run "$AILOOP" run "$2"
}
costs() { grep -c ' ' "$(ls -d .ai-loop/runs/run_* | tail -1)/logs/agent-calls"; }
budget_run "limits: {max_cost_usd: 5}" "a dollar budget"
expect_rc 4 "the run is blocked when its cost budget is spent"
expect_in "$err" "cost budget spent: \$6.2000 for 2 calls, limits.max_cost_usd is \$5.0000, before controller" \
	"at the call after the one that spent it"
expect_in "$err" "raise limits.max_cost_usd in .ai-loop/flow.yaml and continue with 'ailoop resume run_" "what to do"
expect_eq "$(costs)" 2 "the blocked call was not made"
sed -i 's/max_cost_usd: 5}/max_cost_usd: 50}/' .ai-loop/flow.yaml
run "$AILOOP" resume
expect_rc 0 "raised, the run resumes and completes"
expect_eq "$(costs)" 3 "the third call, once"

flow_node_budget='  termination: {max_tokens: 2000000}'
git checkout -q main
flow "prices: {local-model: {input: 2, output: 10, cache_read: 0.5}}"
printf '%s\n' "$flow_node_budget" >>.ai-loop/flow.yaml
echo a >todo.txt && commit_all "$R" "a token budget"
run "$AILOOP" run "a token budget"
expect_rc 4 "a node's token budget blocks it"
expect_in "$err" "token budget spent: 2600000 tokens for 2 calls, termination.max_tokens of node 'fix' is 2000000" \
	"the node's budget covers its calls"
expect_eq "$("$AILOOP" status --json | jq -r .status)" "blocked" "the run is blocked"

budget_run "limits: {max_cost_usd: 50, unknown_cost: block}" "unknown costs blocked"
expect_rc 0 "with prices, no cost is unknown"
git checkout -q -f main
flow "limits: {max_cost_usd: 50, unknown_cost: block}"
echo a >todo.txt && commit_all "$R" "no price"
run "$AILOOP" run "no price"
expect_rc 4 "a call of unknown cost blocks the next with unknown_cost: block"
expect_in "$err" "1 agent call of unknown cost, and limits.unknown_cost is block" "named"

# --- a bad price --------------------------------------------------------------------------
flow "prices: {gpt-5: {input: lots}}"
run "$AILOOP" validate
expect_rc 65 "a price that is not a number"
expect_in "$err" ".ai-loop/flow.yaml:4:25: error: 'input' must be dollars per million tokens" \
	"named where it is"
flow "prices: {gpt-5: {inptu: 1}}"
run "$AILOOP" validate
expect_in "$err" "unknown key 'inptu' in prices (did you mean 'input'?)" "an unknown key"
flow "limits: {max_cost_usd: -1, max_tokens: 1.5}"
run "$AILOOP" validate
expect_in "$err" "'max_cost_usd' must be a number of dollars from 0 to 1e9, not '-1'" "a negative budget"
expect_in "$err" "'max_tokens' must be a whole number of tokens from 0 to 1e15, not '1.5'" "a fraction of a token"

finish
