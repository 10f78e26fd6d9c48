#!/usr/bin/env bash
# Numbers in `ailoop report` that add up and read in order: an iteration
# whose node went on is "done", not "running"; an iteration's controller
# verdict stands before the sensors measured after it, and an outer
# loop's plan before the inner iterations it started; a loop that reached
# its limit is never "iteration 3 of 2"; no role without an agent shows
# "0 ms"; a failing sensor's last output lines are shown; a pause and the
# resume after it are marked, and the wall time says what of it was work;
# a metric with one point is a value, not a chart; a run killed outright
# (nothing wrote that it stopped) is "interrupted", in the report's header
# and in status; and the Markdown page shows "&&", not "&amp;&amp;"; the next step of a
# complete run is `ailoop land`.
. "$(dirname "$0")/lib.sh"

# --- a nested run, paused by Ctrl-C and resumed -------------------------------------
export GATE=$TEST_TMP/gate STARTED=$TEST_TMP/started
R=$TEST_TMP/nested
loop_repo "$R" a b c
two_loops "$R" gated.md "" "" .ai-loop/agents/planner.md
commit_all "$R"
cd "$R"
touch "$GATE"
"$AILOOP" run "fix a && b" >/dev/null 2>&1 &
pid=$!
wait_for "$STARTED" && pass || fail "the actuator started"
sleep 1
kill -INT "$pid"
wait "$pid" && rc=0 || rc=$?
expect_eq "$rc" 3 "the run is paused"
rm -f "$GATE"
run "$AILOOP" resume
expect_rc 0 "the resumed run completes"
run "$AILOOP" report --format md
expect_rc 0 "the Markdown report"
md=$(cat "$out")
rows=$(printf '%s\n' "$md" | sed -n '/^## Iterations/,$p')
expect_not_in "$rows" "| running |" "no finished iteration says running"
expect_in "$rows" "| &nbsp;&nbsp;1.1 | outer/inner | done |" "an iteration its node went on after is done"
expect_in "$rows" "| label | node | status | commit | controller | files | sensors | agents | cost |" \
	"the controller's verdict before the sensors measured after it"
line() { printf '%s\n' "$rows" | grep -n -- "$1" | head -1 | cut -d: -f1; }
plan=$(line '^| 1 | outer | decides | | on 0: not met: - a - b')
inner=$(line '^| &nbsp;&nbsp;1.0 | outer/inner |')
outer=$(line '^| 1 | outer | done |')
[ -n "$plan" ] && [ -n "$inner" ] && [ "$plan" -lt "$inner" ] && pass ||
	fail "the outer plan stands before the inner iterations it started ($plan, $inner)"
[ -n "$outer" ] && [ "$inner" -lt "$outer" ] && pass || fail "the outer iteration's commit after them"
expect_in "$rows" "| 1 | outer | done |" "the outer iteration's own row"
expect_in "$(printf '%s\n' "$rows" | grep '^| 1 | outer | done |')" "| decided above |" \
	"its verdict is not said twice"
pause=$(printf '%s\n' "$rows" | grep -nF '**paused** | | interrupted; resumed here' | cut -d: -f1)
resumed=$(line '^| &nbsp;&nbsp;1.1 | outer/inner |')
[ -n "$pause" ] && [ "$pause" -lt "$resumed" ] && pass ||
	fail "the pause is marked before the iteration the resume went on with ($pause, $resumed)"
expect_in "$rows" "scope: fail (remaining=3) — output: scope: remaining: 3" \
	"a failing sensor's last output lines"
expect_in "$md" ", 1 pause of " "the wall time counts the pause"
expect_in "$md" "at work" "and what of it was work"
expect_not_in "$md" "| action | 0 ms |" "no role no agent played"
expect_not_in "$md" "&amp;" "Markdown: no HTML character references"
expect_in "$md" "| task | fix a && b |" "Markdown: && as it is typed"
expect_in "$md" "| next | ailoop land run\\_" "the next step of a complete run is to land it"
run "$AILOOP" report
html=$(cat "$out")
expect_in "$html" 'data-label="1.1" data-status="done"' "HTML: a finished iteration is done"
expect_not_in "$html" 'data-status="running"' "HTML: none says running"
expect_in "$html" "fix a &amp;&amp; b" "HTML escapes it"
expect_not_in "$html" ">action</text>" "HTML: no bar for a role no agent played"
expect_in "$html" '<div class="pause" style="margin-left:2em">paused (interrupted), resumed here</div>' \
	"HTML: the pause marked"
sec=$(printf '%s\n' "$html" | sed -n '/data-label="1" data-status="done"/,/<\/section>/p')
ctl=$(printf '%s\n' "$html" | grep -n '<section class="decision" style="margin-left:0em"><h3><span class="label">1</span> outer decides' | cut -d: -f1)
first=$(printf '%s\n' "$html" | grep -n 'data-label="1.0"' | cut -d: -f1)
[ -n "$ctl" ] && [ "$ctl" -lt "$first" ] && pass || fail "HTML: the outer plan before the inner iterations"
sec=$(printf '%s\n' "$html" | sed -n '/data-label="1.2" data-status/,/<\/section>/p')
c=$(printf '%s' "$sec" | grep -bo 'controller on the sensors of 1.1: target' | head -1 | cut -d: -f1)
s=$(printf '%s' "$sec" | grep -bo 'sensor scope:' | head -1 | cut -d: -f1)
[ -n "$c" ] && [ -n "$s" ] && [ "$c" -lt "$s" ] && pass || fail "HTML: the verdict before the sensors ($c, $s)"

# --- a loop that reaches its limit ----------------------------------------------------
R=$TEST_TMP/limit
loop_repo "$R" a
one_loop "$R" noop.md "max_iterations: 2"
commit_all "$R"
cd "$R"
run "$AILOOP" run "fix a"
expect_rc 1 "the loop reaches its limit"
run "$AILOOP" report --format md
expect_in "$(cat "$out")" "| fix | loop | 2 of 2 |" "Markdown: the limit, not past it"
run "$AILOOP" report
expect_in "$(cat "$out")" "<b>fix</b> loop, iteration 2 of 2," "HTML: the limit, not past it"

# --- killed outright: nothing wrote that it stopped -----------------------------------
R=$TEST_TMP/killed
loop_repo "$R" a
one_loop "$R" gated.md
commit_all "$R"
cd "$R"
rm -f "$STARTED"
touch "$GATE"
"$AILOOP" run "fix a && keep &amp; as typed" >/dev/null 2>&1 &
pid=$!
wait_for "$STARTED" && pass || fail "the actuator started"
sleep 1
run "$AILOOP" report --format md
md=$(cat "$out")
expect_in "$md" "| status | running |" "at work: running"
expect_in "$md" "| ended | - (at work now) |" "at work: not ended"
expect_in "$md" "| agent calls | 1 |" "at work: the call going on is not a stopped one"
wall=$(printf '%s\n' "$md" | sed -n 's/^| wall time | \([0-9]*\)s |$/\1/p')
[ -n "$wall" ] && [ "$wall" -ge 1 ] && pass || fail "at work: the wall time runs until now ($wall)"
run "$AILOOP" status
expect_in "$out" "agent calls:  1
" "status: the call going on is not a stopped one"
kill -KILL "$pid"
wait "$pid" 2>/dev/null
kill -KILL "$(head -1 "$STARTED")" 2>/dev/null
rm -f "$GATE"
expect_eq "$(sed -n 's/^status: //p' .ai-loop/runs/run_*/run-state.md)" "running" "its state says running"
run "$AILOOP" status
expect_in "$out" "run $(ls .ai-loop/runs | grep '^run_'): interrupted" "status: interrupted"
run "$AILOOP" report
html=$(cat "$out")
expect_in "$html" '<span class="badge st-interrupted">interrupted</span></h1>' "HTML: the header says interrupted"
expect_not_in "$html" 'class="badge st-running"' "HTML: nothing says running"
expect_in "$html" '<h3>fix › scope: remaining</h3>
<p class="value">1</p>' "a metric with one point (the first measurement) is a value"
expect_not_in "$html" 'class="chart metric"' "not a chart"
run "$AILOOP" report --format md
md=$(cat "$out")
expect_in "$md" "| status | interrupted: no ailoop process runs it" "Markdown: interrupted"
expect_in "$md" "| task | fix a && keep \&amp; as typed |" \
	"Markdown: a reference the task typed stays text (escaped), && is as typed"

finish
