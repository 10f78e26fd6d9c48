#!/usr/bin/env bash
# The references a newcomer reads name every key ailoop reads: each key of
# an agent file's front matter and of a metric in docs/agent-reference.md,
# each key of flow.yaml (top level, defaults, limits, runners and their
# session, nodes of every type, termination) in docs/flow-reference.md,
# both linked from the README; and the README keeps "Getting started"
# right after "Build and install", its benchmarks in docs/benchmarks.md.
. "$(dirname "$0")/lib.sh"

src=$AILOOP_SRC/src/model
# keys FILE ARRAY: the strings of the C array ARRAY in FILE
keys() {
	sed -n "/$2\[\] = {/,/};/p" "$1" | grep -o '"[A-Za-z_]*"' | tr -d '"'
}
agent_doc=$(cat "$AILOOP_SRC/docs/agent-reference.md")
flow_doc=$(cat "$AILOOP_SRC/docs/flow-reference.md")
readme=$(cat "$AILOOP_SRC/README.md")

n=0
for k in $(keys "$src/agent.c" agent_keys) $(keys "$src/agent.c" metric_keys); do
	expect_in "$agent_doc" "\`$k" "docs/agent-reference.md describes the agent key '$k'"
	n=$((n + 1))
done
[ "$n" -ge 18 ] && pass || fail "the agent keys were found in agent.c ($n)"
n=0
for k in $(keys "$src/flow.c" top_keys) $(keys "$src/flow.c" default_keys) \
	$(sed -n '/"max_agent_calls_per_hour", "max_agent_calls"/,/};/p' "$src/flow.c" | grep -o '"[a-z_]*"' | tr -d '"') \
	$(grep "char \*const keys\[\] = {.*};" "$src/flow_runner.c" | grep -o '"[a-z_]*"' | tr -d '"') \
	$(keys "$src/flow_fields.c" common_keys) $(keys "$src/flow_fields.c" loop_sensor_keys) \
	$(keys "$src/flow_fields.c" loop_reactree_keys) $(keys "$src/flow_fields.c" parallel_keys) \
	$(keys "$src/flow_fields.c" conditional_keys) $(keys "$src/flow_fields.c" action_keys) \
	$(keys "$src/flow_fields.c" transaction_keys) \
	$(sed -n '/"timeout_seconds", "max_cost_usd", "max_tokens",/,/};/p' "$src/flow_fields.c" | grep -o '"[a-z_]*"' | tr -d '"') \
	$(keys "$src/executor.c" keys) $(keys "$src/flow_episodes.c" keys) \
	$(keys "$src/flow_hooks.c" keys); do
	expect_in "$flow_doc" "\`$k" "docs/flow-reference.md describes the flow key '$k'"
	n=$((n + 1))
done
[ "$n" -ge 60 ] && pass || fail "the flow keys were found in the loader ($n)"
expect_in "$flow_doc" "agent_timeout_seconds\` | 1800" "the agent timeout and its default"
expect_in "$readme" "(docs/flow-reference.md)" "the README links the flow reference"
expect_in "$readme" "(docs/agent-reference.md)" "the README links the agent reference"
expect_in "$readme" "(docs/benchmarks.md)" "the README links the benchmarks"
expect_not_in "$readme" "## Performance" "the benchmarks are out of the README"
expect_in "$(cat "$AILOOP_SRC/docs/benchmarks.md")" "## Performance" "they are in docs/benchmarks.md"
expect_eq "$(grep '^## ' "$AILOOP_SRC/README.md" | grep -A1 '^## Build and install' | tail -1)" \
	"## Getting started" "Getting started comes right after Build and install"
expect_in "$readme" "## Using a real claude, codex or gemini account" "the README says how to use a real account"
expect_in "$readme" "rate_limit_pattern: '(?i)rate" "with a rate-limit pattern for the CLIs"
finish
