#!/usr/bin/env bash
# How long `ailoop validate` takes on generated flows of 1,000 to 10,000
# nodes (conditionals with an action and a sequence each, conditions with
# regular expressions, shared agent files), and whether it grows linearly.
#
#   ./scripts/bench-validate.sh          AILOOP=path to use a built binary
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)

if [ -z "${AILOOP:-}" ]; then
	cmake -S "$src" -B "$src/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build "$src/build" -j "$(nproc 2>/dev/null || echo 2)" --target ailoop >/dev/null
	AILOOP=$src/build/ailoop
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ailoop-bench-validate.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/.ai-loop/agents"
printf -- '---\nname: worker\n---\nDo {task}.\n' >"$tmp/.ai-loop/agents/worker.md"
printf -- '---\nname: checker\n---\nCheck {task}.\n' >"$tmp/.ai-loop/agents/checker.md"

# flow NODES: a root sequence of NODES/4 groups of four nodes each (NODES + 1 nodes)
flow() {
	awk -v groups=$(($1 / 4)) 'BEGIN {
		print "version: 1\nflow:\n  id: root\n  type: sequence\n  children:"
		for (i = 1; i <= groups; i++)
			printf "    - {id: c%d, type: conditional, condition: {key: k%d, operator: matches_regex, value: \"^v[0-9]+\\\\.%d$\"}, then: {id: t, skill: build_%d, agent: .ai-loop/agents/worker.md}, else: {id: e, type: sequence, children: [{id: s, skill: check_%d, agent: .ai-loop/agents/checker.md}]}}\n", i, i, i, i, i
	}'
}

# best of five, in milliseconds
time_validate() {
	local best=999999 t0 t1 ms
	for _ in 1 2 3 4 5; do
		t0=$(date +%s%N)
		"$AILOOP" validate --flow "$1" >/dev/null
		t1=$(date +%s%N)
		ms=$(((t1 - t0) / 1000))
		[ "$ms" -lt "$best" ] && best=$ms
	done
	echo "$best"
}

cd "$tmp"
printf '%8s %10s %12s %14s\n' nodes bytes "time (ms)" "µs per node"
for n in 1000 2500 5000 10000; do
	flow "$n" >"flow-$n.yaml"
	"$AILOOP" validate --flow "flow-$n.yaml" | grep -q "ok: $((n + 1)) nodes" ||
		{ echo "bench-validate: the $n-node flow did not validate" >&2; exit 1; }
	us=$(time_validate "flow-$n.yaml")
	printf '%8d %10d %12.1f %14.2f\n' "$n" "$(wc -c <"flow-$n.yaml")" \
		"$(echo "$us / 1000" | bc -l)" "$(echo "$us / $n" | bc -l)"
done
