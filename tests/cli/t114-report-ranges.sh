#!/usr/bin/env bash
# `ailoop report` over values at the ends of their ranges: metrics near
# the largest doubles, which overflow the chart's span when subtracted,
# are still drawn with finite coordinates and shown as they are; agents'
# times in events.jsonl too large or negative to be real are shown as
# unknown and counted nowhere.
. "$(dirname "$0")/lib.sh"

# coords FILE: every coordinate and size attribute of the page's SVG that is
# not a plain finite number
coords() {
	grep -oE ' (x|y|x1|y1|x2|y2|cx|cy|width|height)="[^"]*"' "$1" |
		grep -vE '="-?[0-9]+(\.[0-9]+)?"' || true
}

# --- metrics at ±1e308 ------------------------------------------------------------
R=$TEST_TMP/huge
loop_repo "$R" a b c
# the value from the items left: 3, 2, 1, 0 (and 0 again as the loop ends)
cat >"$R/.ai-loop/agents/huge.sh" <<'SH'
n=$(grep -c . todo.txt || true)
case $n in 3) v=1e308 ;; 2) v=-1e308 ;; 1) v=7 ;; *) v=-1.7976931348623157e308 ;; esac
echo "value: $v"
SH
printf -- "---\nname: huge\ncommand: sh .ai-loop/agents/huge.sh\nmetrics:\n  value: 'value: (\\\\S+)'\n---\n" \
	>"$R/.ai-loop/agents/huge.md"
cat >"$R/.ai-loop/flow.yaml" <<'YAML'
version: 1
flow:
  id: fix
  type: loop
  controller: builtin:all-pass
  sensors: [.ai-loop/agents/sensor.md, .ai-loop/agents/huge.md]
  actuator: {strategy: direct, agent: .ai-loop/agents/fixer.md}
YAML
commit_all "$R"
cd "$R"
run "$AILOOP" run --quiet "fix all"
expect_rc 0 "the run with huge metrics"
run "$AILOOP" report
expect_rc 0 "report of the run with huge metrics"
page=$out
expect_eq "$(grep -o 'class="chart metric"' "$page" | wc -l)" 2 "a chart for each metric"
expect_eq "$(coords "$page")" "" "every coordinate of the charts is a finite number"
line=$(sed -n '/huge: value/,/<\/svg>/p' "$page" | grep -o '<polyline class="line" points="[^"]*"')
expect_eq "$(printf '%s\n' "$line" | sed 's/.*points="//; s/"$//' | tr ' ' '\n' | grep -c ,)" 5 \
	"the value's line has a point per commit of the loop"
# the line spans the chart: from its top (1e308) to its bottom (-1.79e308)
ys=$(printf '%s\n' "$line" | sed 's/.*points="//; s/"$//' | tr ' ' '\n' | cut -d, -f2 | tr '\n' ' ')
expect_eq "$ys" "12.0 114.9 63.5 156.0 156.0 " "the points where their values put them"
html=$(cat "$page")
expect_in "$html" ": 1e+308</title>" "a huge value is shown as it is"
expect_in "$html" ": -1.79769e+308</title>" "the lowest double is shown as it is"
expect_in "$html" ">-1.79769e+308</text>" "the axis names the lowest value"

# --- agents' times out of range in events.jsonl ---------------------------------------
R=$TEST_TMP/times
loop_repo "$R" a b
one_loop "$R" fixer.md
commit_all "$R"
cd "$R"
run "$AILOOP" run --quiet "fix all"
expect_rc 0 "the run whose events are then edited"
events=$(ls -d .ai-loop/runs/run_*)/events.jsonl
# two of the largest, whose sum overflows, a negative time, an exit status past an int
for ms in 9223372036854775807 9223372036854775807 -5000000; do
	printf '{"event":"agent","node":"fix","label":"1","role":"actuator","name":null,"ms":%s,"exit":0,"timed_out":false,"agent_call":true}\n' \
		"$ms" >>"$events"
done
printf '{"event":"agent","node":"fix","label":"2","role":"actuator","name":null,"ms":40,"exit":99999999999,"timed_out":false,"agent_call":true}\n' >>"$events"
run "$AILOOP" report
expect_rc 0 "report of events out of range"
page=$out
html=$(cat "$page")
expect_eq "$(coords "$page")" "" "every size of the time per role is a finite number"
expect_not_in "$html" 'width="-' "no bar of a negative width"
expect_not_in "$html" "-5000000" "no negative time"
expect_not_in "$html" "2562047" "no time summed past its range"
expect_eq "$(grep -o '<li>actuator: time unknown</li>' "$page" | wc -l)" 3 \
	"each time out of range is shown as unknown"
expect_in "$html" "<li>actuator: 40 ms, exit -1</li>" "an exit status past an int is shown as -1"
bar=$(sed -n '/class="chart roles"/,/<\/svg>/p' "$page" |
	grep -o '>actuator</text><rect class="bar" x="80" y="[0-9]*" width="[0-9.]*"' |
	sed 's/.*width="//; s/"$//')
[ -n "$bar" ] && awk -v w="$bar" 'BEGIN { exit !(w > 0 && w <= 440) }' && pass ||
	fail "the actuators' bar is within the chart ($bar)"
run "$AILOOP" report --format md
expect_rc 0 "Markdown report of events out of range"
md=$(cat "$out")
expect_not_in "$md" "-5000000" "Markdown: no negative time"
expect_in "$md" "| actuator | " "Markdown: the actuators' time"
expect_not_in "$md" "| actuator | time unknown |" "Markdown: the actuators' time counts the real times"

finish
