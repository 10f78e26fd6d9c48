#!/usr/bin/env bash
# `ailoop report` over values at the ends of their ranges: metrics near
# the largest doubles, which overflow the chart's span when subtracted,
# are still drawn with finite coordinates and shown as they are.
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

finish
