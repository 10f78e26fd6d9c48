#!/usr/bin/env bash
# `ailoop report` in a real browser (headless Chromium): the demo's page
# shows every iteration, its charts and statuses; and text an agent or a
# user wrote (task, agent output, commit messages, file names) full of
# <script>, onerror= and javascript: links stays text: no script runs.
. "$(dirname "$0")/lib.sh"

# --- Chromium: Debian's package, installed here if it can be -----------------------
if ! command -v chromium >/dev/null; then
	if [ "$(id -u)" = 0 ]; then
		flock /tmp/ailoop-chromium-install.lock apt-get install -y chromium >/dev/null 2>&1
	elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
		flock /tmp/ailoop-chromium-install.lock sudo apt-get install -y chromium >/dev/null 2>&1
	fi
fi
if ! command -v chromium >/dev/null; then
	echo "skipped: no chromium"
	exit 77
fi
build=${AILOOP_BUILD:-$(dirname "$AILOOP")}
shots=$build/report-screenshots
mkdir -p "$shots"
# chromium PAGE [ARGS]: the page as headless Chromium leaves it
chromium_run() {
	local page=$1
	shift
	timeout 120 chromium --headless --no-sandbox --disable-gpu --disable-dev-shm-usage \
		--user-data-dir="$TEST_TMP/chromium" "$@" "file://$page" 2>/dev/null
}

# the harness runs scripts where a page lets it: without this, "no script
# ran" would prove nothing
printf '<!DOCTYPE html><title>before</title><body><script>document.title="RAN"</script>\n' \
	>"$TEST_TMP/control.html"
expect_in "$(chromium_run "$TEST_TMP/control.html" --dump-dom)" "<title>RAN</title>" \
	"the browser runs a page's script when allowed"

# --- the demo's page ----------------------------------------------------------------
run env TMPDIR="$TEST_TMP" AILOOP="$AILOOP" "$AILOOP_SRC/scripts/demo.sh"
expect_rc 0 "demo"
demo=$(ls -d "$TEST_TMP"/ailoop-demo.*)
repos+=("$demo")
cd "$demo"
run "$AILOOP" report
expect_rc 0 "report of the demo"
page=$out
dom=$(chromium_run "$page" --dump-dom)
expect_eq "$(grep -o 'class="iteration[^"]*" [^>]*data-label="[^"]*"' <<<"$dom" |
	sed 's/.*data-label="//; s/"$//' | tr '\n' ' ')" \
	"0 1.0 1.1 1.2 1 2.0 2.1 2.2 2 3.0 3.1 3.2 3 4 " "the DOM: one entry per iteration, labelled"
expect_eq "$(grep -o '<svg class="chart metric"' <<<"$dom" | wc -l)" 2 "the DOM: one chart per metric"
expect_eq "$(grep -o 'data-status="complete"' <<<"$dom" | wc -l)" 4 \
	"the DOM: the iterations that completed a loop"
expect_in "$dom" '<td id="status"><span class="badge st-complete">complete</span>' \
	"the DOM: the run's status"
chromium_run "$page" --hide-scrollbars --window-size=1200,2400 \
	--screenshot="$shots/demo.png" >/dev/null
[ -s "$shots/demo.png" ] && pass || fail "a screenshot of the demo's page in $shots"

# --- hostile text everywhere ---------------------------------------------------------
R=$TEST_TMP/hostile
new_repo "$R"
cd "$R"
mkdir -p .ai-loop/agents
xss_img="\"><img src=x onerror=document.title='PWNED-img'>"
xss_script="<script>document.title='PWNED-script'</script>"
xss_link="[click](javascript:document.title='PWNED-link') <a href=\"javascript:document.title='PWNED-a'\">go</a>"
cat >.ai-loop/agents/hostile-sensor.md <<'MD'
---
name: hostile
command: sh .ai-loop/agents/hostile-sensor.sh
metrics:
  note: 'note: (\S+)'
  files: 'files: (\d+)'
---
MD
cat >.ai-loop/agents/hostile-sensor.sh <<'SH'
echo "note: <script>document.title='PWNED-sensor'</script>"
echo "files: $(ls | wc -l)"
exit 1
SH
cat >.ai-loop/agents/hostile-controller.md <<'MD'
---
name: hostile-controller
command: sh .ai-loop/agents/hostile-controller.sh
---
Decide.
MD
cat >.ai-loop/agents/hostile-controller.sh <<'SH'
cat >"$AILOOP_OUTPUT" <<'OUT'
---
target-met: false
---
## Action Plan

<script>document.title='PWNED-plan'</script>
"><img src=x onerror=document.title='PWNED-plan-img'>
[click](javascript:document.title='PWNED-plan-link') <a href="javascript:document.title='PWNED-plan-a'">go</a>
OUT
SH
cat >.ai-loop/agents/hostile-actuator.md <<'MD'
---
name: hostile-actuator
command: sh .ai-loop/agents/hostile-actuator.sh
---
Act.
MD
cat >.ai-loop/agents/hostile-actuator.sh <<'SH'
n=$AILOOP_ITERATION
echo x >"\"><img src=x onerror=document.title='PWNED-file$n'>.txt"
echo x >"<svg onload=document.title='PWNED-svg$n'>.txt"
echo x >"javascript:document.title='PWNED-jsfile$n'"
printf '%s\n' "<script>document.title='PWNED-out'</script> \"><img src=x onerror=document.title='PWNED-out-img'> [x](javascript:document.title='PWNED-out-link')" >"$AILOOP_OUTPUT"
SH
cat >.ai-loop/flow.yaml <<'YAML'
version: 1
flow:
  id: hostile
  type: loop
  controller: .ai-loop/agents/hostile-controller.md
  sensors: [.ai-loop/agents/hostile-sensor.md]
  actuator: {strategy: direct, agent: .ai-loop/agents/hostile-actuator.md}
  termination: {max_iterations: 2}
YAML
commit_all "$R"
run "$AILOOP" run "fix $xss_script $xss_img $xss_link"
expect_rc 1 "the hostile run ends at its iteration limit"
expect_in "$(git log --format=%s -1 HEAD~1)" "<script>document.title='PWNED-out'</script>" \
	"the commit subject holds the agent's script"
expect_in "$(git show --stat --format= HEAD~1)" "onerror=" "the commit holds the hostile file names"

run "$AILOOP" report
expect_rc 0 "report of the hostile run"
page=$out
html=$(cat "$page")
expect_not_in "$html" "<script" "no <script> element in the page"
expect_not_in "$html" "<img" "no <img> element in the page"
expect_not_in "$html" "<svg onload" "no <svg onload> in the page"
grep -qE '<[^>]*[[:space:]](href|src|on[a-z]+)=' "$page" &&
	fail "an element of the page has a link, a source or a handler" || pass
expect_in "$html" "fix &lt;script&gt;document.title=&#39;PWNED-script&#39;&lt;/script&gt; &quot;&gt;&lt;img" \
	"the task, escaped"
expect_in "$html" "&lt;script&gt;document.title=&#39;PWNED-out&#39;&lt;/script&gt;" \
	"the agent's output and commit subject, escaped"
expect_in "$html" "&lt;script&gt;document.title=&#39;PWNED-plan&#39;&lt;/script&gt;" \
	"the controller's plan, escaped"
expect_in "$html" "&quot;&gt;&lt;img src=x onerror=document.title=&#39;PWNED-file1&#39;&gt;.txt" \
	"file names, escaped"
expect_in "$html" "note=&lt;script&gt;document.title=&#39;PWNED-sensor&#39;&lt;/script&gt;" \
	"a sensor's detail, escaped"
grep -qE 'https?:' "$page" && fail "the page names a URL" || pass

dom=$(chromium_run "$page" --dump-dom)
expect_in "$dom" "<title>ailoop report run_" "the DOM: the title is the page's own"
expect_not_in "$(grep -o '<title>[^<]*</title>' <<<"$dom")" "PWNED" "the DOM: no payload set the title"
expect_not_in "$dom" "<script" "the DOM: no script element"
expect_not_in "$dom" "<img" "the DOM: no img element"
expect_not_in "$dom" "<a " "the DOM: no link"
grep -qE '<[^>]*[[:space:]](href|src|on[a-z]+)=' <<<"$dom" &&
	fail "the DOM: an element has a link, a source or a handler" || pass
expect_in "$dom" "&lt;script&gt;document.title='PWNED-out'&lt;/script&gt;" \
	"the DOM: the payloads are text"
chromium_run "$page" --hide-scrollbars --window-size=1200,2400 \
	--screenshot="$shots/hostile.png" >/dev/null
[ -s "$shots/hostile.png" ] && pass || fail "a screenshot of the hostile page in $shots"

run "$AILOOP" report --format md
md=$(cat "$out")
expect_not_in "$md" "<script" "Markdown: no raw <script>"
expect_not_in "$md" "<img" "Markdown: no raw <img>"
grep -qP '(?<!\\)\]\(javascript:' <<<"$md" && fail "Markdown: a javascript: link" || pass
expect_in "$md" "&lt;script&gt;document.title='PWNED-out'&lt;/script&gt;" "Markdown: the payloads are text"

finish
