#!/usr/bin/env bash
# What a run cost, where a user looks: `ailoop status` gives each node's
# cost over its subtree and the run's total, with how much is estimated;
# `ailoop report` (HTML and Markdown) the total at the top (an estimate is
# API pricing, not a subscription's bill), each node's and each
# iteration's cost, and a chart of the cost as it grew. The figures come
# from the calls' agent_usage events, so a run stopped by Ctrl-C and
# resumed goes on with its sums; the agent calls and the time at work are
# the same numbers in status and in the report.
. "$(dirname "$0")/lib.sh"

mkdir -p "$TEST_TMP/bin"
# a claude-like CLI (stream-json's result line): the actuator's cost is
# reported ($0.25), the controller's is not, so it is estimated at the
# flow's price (1000 in at $10 + 100 out at $100 a million = $0.02)
cat >"$TEST_TMP/bin/fake-claude" <<'SH'
#!/bin/sh
cat >/dev/null
if [ "$AILOOP_ROLE" = actuator ]; then
	echo $$ >>"$STARTED"
	while [ -e "$GATE" ]; do sleep 0.1; done
	sh .ai-loop/agents/fix.sh
	cost='"total_cost_usd":0.25,'
	[ -n "${UNPRICED:-}" ] && cost= model=m2 # no cost reported, no price: unknown
else
	sh .ai-loop/agents/plan.sh 2
	cost=
fi
printf '{"type":"result","subtype":"success","is_error":false,"result":"done","session_id":"s-%s",%s"usage":{"input_tokens":1000,"output_tokens":100,"cache_read_input_tokens":0,"cache_creation_input_tokens":0},"modelUsage":{"%s":{}}}\n' "$AILOOP_ITERATION" "$cost" "${model:-m1}"
SH
chmod +x "$TEST_TMP/bin/fake-claude"
export PATH="$TEST_TMP/bin:$PATH" GATE=$TEST_TMP/gate STARTED=$TEST_TMP/started

R=$TEST_TMP/repo
loop_repo "$R" a b c
printf -- '---\nname: ctl\nrunner: fake\nmodel: m1\n---\nDecide.\n' >"$R/.ai-loop/agents/ctl.md"
printf -- '---\nname: act\nrunner: fake\nmodel: m1\n---\nAct.\n' >"$R/.ai-loop/agents/act.md"
cat >"$R/.ai-loop/flow.yaml" <<YAML
version: 1
runners:
  fake: {command: [fake-claude], prompt: stdin, output: claude-json}
prices: {m1: {input: 10, output: 100}}
flow:
  id: outer
  type: loop
  controller: .ai-loop/agents/ctl.md
  sensors: [.ai-loop/agents/sensor.md]
  actuator:
    strategy: composite
    child:
      id: inner
      type: loop
      controller: builtin:all-pass
      sensors: [.ai-loop/agents/sensor.md]
      actuator: {strategy: direct, agent: .ai-loop/agents/act.md}
YAML
commit_all "$R"
cd "$R"

# --- Ctrl-C in the first actuator's call ----------------------------------------------
touch "$GATE"
"$AILOOP" run "fix all" >/dev/null 2>&1 &
pid=$!
wait_for "$STARTED" && pass || fail "the actuator started"
sleep 1
kill -INT "$pid"
wait "$pid" && rc=0 || rc=$?
expect_eq "$rc" 3 "the run is paused"
rm -f "$GATE"
run "$AILOOP" status
expect_in "$out" "cost:         \$0.0200 (1000 tokens in, 100 out, over 1 calls; 1 estimated at list prices, \$0.0200)" \
	"paused: the controller's call so far"
expect_in "$out" "an estimate is what the API would charge, not a subscription's bill" \
	"what an estimate is"
expect_in "$out" "agent calls:  2, 1 stopped before it ended" \
	"the actuator's call, stopped by Ctrl-C, was made: the budget counts it, and says it did not end"

run "$AILOOP" resume
expect_rc 0 "the resumed run completes"

# --- status: each node over its subtree, and the total ----------------------------------
ev=$(ls -d .ai-loop/runs/run_*)/events.jsonl
sum() { jq -rs "[.[] | select(.event == \"agent_usage\") | select($1) | .cost_usd] | add * 10000 | round / 10000" "$ev"; }
expect_eq "$(sum 'true')" "0.81" "the calls: three controllers (estimated) and three actuators"
run "$AILOOP" status
expect_rc 0 "status"
expect_in "$out" "cost:         \$0.8100 (6000 tokens in, 600 out, over 6 calls; 3 estimated at list prices, \$0.0600)" \
	"the total goes on after the resume"
expect_in "$out" "agent calls:  7, 1 stopped before it ended" "every call made, the stopped one too"
expect_eq "$(printf '%s\n' "$out" | grep -E '^  +(outer|outer/inner) ' | awk '{print $1, $7}' | tr '\n' ';')" \
	'outer $0.8100*;outer/inner $0.7500;' "each node's cost: the outer's holds the inner's, and is partly estimated"
expect_in "$out" "* of it estimated at API list prices (not a subscription's bill)" "the mark explained"
run "$AILOOP" status --json
expect_eq "$(printf '%s' "$out" | jq -c '[.nodes[] | [.node_path, .cost.usd, .cost.calls, .cost.estimated]]')" \
	'[["outer",0.81,6,3],["outer/inner",0.75,3,0]]' "status --json: each node's cost"
expect_eq "$(printf '%s' "$out" | jq -c '.budget.cost | [.usd, .estimated_usd, .calls, .estimated, .unknown]')" \
	'[0.81,0.06,6,3,0]' "status --json: the total, and how much is estimated"
expect_eq "$(printf '%s' "$out" | jq '.nodes[1].cost.usd')" "$(sum '.node == "outer/inner"')" \
	"the inner node's cost is the sum of its calls"
status_text=$("$AILOOP" status)
secs=$(printf '%s\n' "$status_text" | sed -n 's/^  time spent: *\([0-9]*\) s.*/\1/p')
run_s=$(jq -rs '([.[] | select(.event == "run_paused")][0].ts | fromdate) - (.[0].ts | fromdate)
	+ ((.[-1].ts | fromdate) - ([.[] | select(.event == "run_resume")][0].ts | fromdate))' "$ev")
expect_eq "$secs" "$run_s" "time spent: the time before the Ctrl-C and after the resume"

# --- the report: the same numbers ------------------------------------------------------
run "$AILOOP" report --format md
expect_rc 0 "the Markdown report"
md=$(cat "$out")
expect_in "$md" "| cost | \$0.8100 (6000 in, 600 out, \$0.0600 of it estimated); estimated: at the API's list prices, not what a subscription bills |" \
	"the run's total at the top, and what an estimate is"
expect_in "$md" "| agent calls | 7 (1 stopped with the run before it ended) |" "the calls status counts"
expect_in "$md" "| outer | loop | 3 of 10 | 3 | complete | \$0.8100 (6000 in, 600 out, \$0.0600 of it estimated) |" \
	"the outer node's cost, the inner's within it"
expect_in "$md" "| &nbsp;&nbsp;outer/inner | loop | 2 of 10 | 2.2 | complete | \$0.7500 (3000 in, 300 out) |" \
	"the inner node's cost"
expect_eq "$(printf '%s\n' "$md" | grep -c '| \$0.2500 (1000 in, 100 out) |$')" 3 "each actuator's iteration its call's cost"
expect_eq "$(printf '%s\n' "$md" | grep -c '| \$0.0200 (1000 in, 100 out, estimated) |$')" 3 \
	"each outer iteration its controller's, marked estimated"
expect_in "$md" "at work" "the wall time says what of it was work"
expect_in "$md" "| wall time | " "the wall time"
work=$(printf '%s\n' "$md" | sed -n 's/^| wall time | .*: \([0-9]*\)s at work.*/\1/p')
expect_eq "$work" "$secs" "the report's time at work is status's time spent"
run "$AILOOP" report
expect_rc 0 "the HTML report"
html=$(cat "$out")
expect_in "$html" "<tr><th>cost</th><td id=\"cost\">\$0.8100 (6000 in, 600 out, \$0.0600 of it estimated)<br><small>estimated: at the API's list prices, not what a subscription bills</small>" \
	"HTML: the total at the top"
expect_in "$html" "<b>inner</b> loop, iteration 2 of 10, label 2.2 <span class=\"badge st-complete\">complete</span> <span class=\"cost\">\$0.7500 (3000 in, 300 out)</span>" \
	"HTML: each node's header has its cost"
expect_eq "$(grep -o 'class="chart cost"' "$out" | wc -l)" 1 "HTML: a chart of the cost as it grew"
expect_eq "$(grep -o '<circle class="pass" [^>]*><title>[^<]*</title>' "$out" | grep -c 'title>[0-9.]*: \$')" 6 \
	"one point a call"
expect_in "$html" '<title>3: $0.8100</title>' "the last point is the total"
expect_eq "$(grep -c '<div class="cost">cost: ' "$out")" 6 "each iteration with calls says what they cost"

# --- calls of unknown cost: counted, named, never made up ---------------------------------
git checkout -q main
UNPRICED=1 run "$AILOOP" run --new "fix all, unpriced"
expect_rc 0 "a run whose actuator's cost cannot be known"
run "$AILOOP" status
expect_in "$out" "over 6 calls; 3 estimated at list prices, \$0.0600; 3 of unknown cost)" "the total says how many are unknown"
expect_eq "$(printf '%s\n' "$out" | grep -E '^  +(outer|outer/inner) ' | awk '{print $1, $7}' | tr '\n' ';')" \
	'outer $0.0600*?;outer/inner $0.0000?;' "each node's cost says some of it is unknown"
expect_in "$out" "? some calls of unknown cost, counted as \$0" "the mark explained"
run "$AILOOP" report --format md
expect_in "$(cat "$out")" "| cost | \$0.0600 (6000 in, 600 out, \$0.0600 of it estimated, 3 calls of unknown cost);" \
	"the report's total names them"

finish
