#!/usr/bin/env bash
# `ailoop report`: one self-contained page per run (HTML, or Markdown with
# --format md) with the run, its flow tree, every iteration and charts of
# the sensors' metrics; paused and failed runs say why.
. "$(dirname "$0")/lib.sh"

# --- the demo's run ----------------------------------------------------------------
run env TMPDIR="$TEST_TMP" AILOOP="$AILOOP" "$AILOOP_SRC/scripts/demo.sh"
expect_rc 0 "demo"
demo=$(ls -d "$TEST_TMP"/ailoop-demo.*)
repos+=("$demo")
cd "$demo"
id=$(ls .ai-loop/runs | grep '^run_')
page=$demo/.ai-loop/runs/$id/report.html

run "$AILOOP" report
expect_rc 0 "report of the newest run"
expect_eq "$out" "$page" "the report prints where it wrote the page"
[ -s "$page" ] && pass || fail "the page is written in the run's directory"
html=$(cat "$page")
expect_in "$html" "Content-Security-Policy" "the page forbids what it does not need"
expect_in "$html" "script-src 'none'" "no script may run"
expect_not_in "$html" "<script" "the page has no script"
grep -qE 'https?:' "$page" && fail "the page names a URL: $(grep -oE 'https?:[^ ]*' "$page")" || pass
grep -qE '(src|href)=' "$page" && fail "the page links to something" || pass
expect_eq "$(grep -o 'class="iteration[^"]*" [^>]*data-label="[^"]*"' "$page" |
	sed 's/.*data-label="//; s/"$//' | tr '\n' ' ')" \
	"0 1.0 1.1 1.2 1 2.0 2.1 2.2 2 3.0 3.1 3.2 3 4 " "one entry per iteration, labelled"
expect_in "$html" "make the tests pass" "the task"
expect_in "$html" "ai-loop/make-the-tests-pass (from main)" "the branch and its base"
expect_in "$html" "<td id=\"status\"><span class=\"badge st-complete\">complete</span>" "the status"
expect_in "$html" "ailoop land run_" "how to land a complete run"
expect_in "$html" "<b>fix</b> loop, iteration 2 of 3, label 3.2" "the flow tree with iterations"
expect_in "$html" "add now returns a + b" "commit subjects"
expect_in "$html" "mathlib.c +1 −1" "the files an iteration changed"
expect_in "$html" "sensor tests: <span class=\"s-fail\">fail</span> (failed=2; passed=1)" \
	"every sensor's verdict"
expect_in "$html" "controller on the sensors of 3.0: target not met" \
	"the controller's verdict, and the iteration whose sensors it judged"
expect_in "$html" "test: add" "the head of the controller's plan"
expect_in "$html" "<li>actuator: " "the agents' wall times"
expect_eq "$(grep -o 'class="chart metric"' "$page" | wc -l)" 2 "one chart per metric"
expect_in "$html" "suite › tests: failed" "the chart names its metric"
expect_in "$html" 'class="target"' "the chart has its target line"
expect_eq "$(grep -o 'class="chart strip"' "$page" | wc -l)" 2 "a pass/fail strip per sensor"
expect_in "$html" 'class="chart roles"' "time per role"
expect_eq "$(git status --porcelain)" "" "the page is ignored"

run "$AILOOP" report "$id" --format md
expect_rc 0 "markdown report"
expect_eq "$out" "$demo/.ai-loop/runs/$id/report.md" "the Markdown page's path"
md=$(cat "$demo/.ai-loop/runs/$id/report.md")
expect_in "$md" "| status | complete |" "Markdown: the status"
expect_in "$md" "## Iterations" "Markdown: the iterations"
expect_in "$md" "| &nbsp;&nbsp;3.1 | suite/fix | done |" "Markdown: nested labels"
expect_in "$md" "tests: fail (failed=3; passed=0)" "Markdown: the sensors"
expect_not_in "$md" "<svg" "Markdown: no pictures"
calls=$("$AILOOP" status "$id" | sed -n 's/^ *agent calls: *\([0-9]*\).*/\1/p')
[ "$calls" -gt 0 ] && pass || fail "status counts the demo's agent calls ($calls)"
expect_in "$md" "| agent calls | $calls |" "the report counts agent calls as status does (command sensors are not)"

(cd .ai-loop && run "$AILOOP" report -o ../mine.html && echo "$rc $out" >"$TEST_TMP/o")
expect_eq "$(cat "$TEST_TMP/o")" "0 $demo/.ai-loop/../mine.html" "-o is relative to the current directory"
[ -s "$demo/mine.html" ] && pass || fail "-o writes there"
rm -f "$demo/mine.html"
run "$AILOOP" report --output "$TEST_TMP/long.md" --format md
expect_rc 0 "--output is -o's long form"
grep -q "^## Iterations" "$TEST_TMP/long.md" && pass || fail "--output writes the page there"

run "$AILOOP" report -o "$TEST_TMP/missing/page.html"
expect_rc 66 "-o in a directory that does not exist"
expect_in "$err" "ailoop: error: no directory '$TEST_TMP/missing' to write 'page.html' in" \
	"says which directory is missing"
run "$AILOOP" report -o "$TEST_TMP"
expect_rc 64 "-o naming a directory"
expect_in "$err" "ailoop: error: '$TEST_TMP' is a directory: -o takes the page's file name" \
	"says -o takes a file"

run "$AILOOP" report --format pdf
expect_rc 64 "an unknown format"
expect_in "$err" "ailoop: error: unknown format 'pdf' (html or md)" "says which formats exist"
run "$AILOOP" report run_19990101_001
expect_rc 66 "an unknown run"
expect_in "$err" "ailoop: error: no run 'run_19990101_001'" "says which run is missing"
run "$AILOOP" report a b
expect_rc 64 "two runs"

# the run's branch alone, cloned: no events, the rest from its commits
git clone -q --branch ai-loop/make-the-tests-pass "$demo" "$TEST_TMP/clone"
cd "$TEST_TMP/clone"
run "$AILOOP" report
expect_rc 0 "report in a clone of the branch"
expect_eq "$(grep -o 'data-label=' "$out" | wc -l)" 14 "the clone's page has every iteration"
expect_in "$(cat "$out")" "unknown (no events.jsonl here)" "agent calls are unknown without events"

# --- a run without metrics, and a failed run -------------------------------------------
R=$TEST_TMP/failed
loop_repo "$R" a
sed -i '/^metrics:/,/^  remaining/d' "$R/.ai-loop/agents/sensor.md"
one_loop "$R" failing.md
commit_all "$R"
cd "$R"
run "$AILOOP" run "fix all"
expect_rc 1 "the failing run fails"
run "$AILOOP" report
expect_rc 0 "report of a failed run"
html=$(cat "$out")
expect_not_in "$html" 'class="chart metric"' "no metric, no chart"
expect_not_in "$html" '<h2>Metrics' "no metric, no Metrics section"
expect_in "$html" "<td id=\"status\"><span class=\"badge st-error\">" "the failed status"
expect_in "$html" "failed with exit status 3" "the reason it failed"
expect_in "$html" 'mark-failed' "the failed iteration is marked"

# --- a paused run ------------------------------------------------------------------
export GATE=$TEST_TMP/gate STARTED=$TEST_TMP/started
R=$TEST_TMP/paused
loop_repo "$R" a b
one_loop "$R" gated.md
commit_all "$R"
cd "$R"
touch "$GATE"
"$AILOOP" run "fix all" >/dev/null 2>&1 &
pid=$!
wait_for "$STARTED" && pass || fail "the actuator started"
kill -INT "$pid"
wait "$pid" && rc=0 || rc=$?
expect_eq "$rc" 3 "the run is paused"
rm -f "$GATE"
run "$AILOOP" report
expect_rc 0 "report of a paused run"
html=$(cat "$out")
expect_in "$html" "st-paused\">paused</span>" "the paused status"
expect_in "$html" "<td id=\"reason\" class=\"pre\">interrupted</td>" "why it paused"
id=$(ls .ai-loop/runs | grep '^run_')
expect_in "$html" "ailoop resume $id" "how to resume it"
run "$AILOOP" report --format md
expect_in "$(cat "$out")" "| reason | interrupted |" "Markdown: why it paused"

finish
