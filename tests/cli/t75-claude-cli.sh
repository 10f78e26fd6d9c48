#!/usr/bin/env bash
# The real claude CLI end to end: a two-level flow whose sensors,
# controllers and actuator are all `claude -p` processes run through the
# claude runner preset, against a scripted Messages API on 127.0.0.1
# (tests/fixtures/model-api/anthropic.js) that acts through the CLI's own
# tools as a model follows the prompt: every agent offered the Write tool
# writes its output file with it, at every iteration and in the child loop
# too (Claude Code's Write refuses a file that exists and was not read in
# the session: ailoop removes an output before its agent runs). The
# actuator (session: continue) resumes its session at its second call, and
# the API finds the first call's prompt and its own replies sent again.
# The CLI (@anthropic-ai/claude-code, pinned) is installed once from
# npm into a cache outside the checkout; without npm the test is skipped
# (exit 77, which ctest reports as skipped).
real_home=$HOME # lib.sh gives the test a HOME of its own
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/agent-cli.sh" # expect_usage_per_call

CLAUDE_CODE_VERSION=2.1.330
SKIP=77

skip() {
	echo "$(basename "$0"): skipped: $*"
	exit "$SKIP"
}

# --- the CLI, installed once per version ----------------------------------
cache=${XDG_CACHE_HOME:-$real_home/.cache}/ailoop-tests
install_dir=$cache/claude-code-$CLAUDE_CODE_VERSION
claude_bin=$install_dir/node_modules/.bin/claude

installed() {
	[ -x "$claude_bin" ] &&
		"$claude_bin" --version 2>/dev/null | grep -q "^$CLAUDE_CODE_VERSION "
}

install_cli() {
	local tmp
	command -v npm >/dev/null && command -v node >/dev/null || skip "npm not installed"
	mkdir -p "$cache" || skip "cannot create $cache"
	# one installer at a time; the others wait and find it installed
	exec 9>"$cache/claude-code.lock"
	command -v flock >/dev/null && flock -w 600 9
	installed && return 0
	timeout 30 npm view "@anthropic-ai/claude-code@$CLAUDE_CODE_VERSION" version \
		--cache "$cache/npm" --fetch-retries=0 --fetch-timeout=20000 >/dev/null 2>&1 ||
		skip "npm unreachable"
	tmp=$(mktemp -d "$cache/claude-code.XXXXXX")
	if ! timeout 600 npm install --prefix "$tmp" --cache "$cache/npm" --no-audit --no-fund \
		--loglevel=error "@anthropic-ai/claude-code@$CLAUDE_CODE_VERSION" >"$TEST_TMP/npm.log" 2>&1; then
		rm -rf "$tmp"
		fail "npm install @anthropic-ai/claude-code@$CLAUDE_CODE_VERSION"
		cat "$TEST_TMP/npm.log" >&2
		finish
	fi
	rm -rf "$install_dir" && mv "$tmp" "$install_dir"
}

installed || install_cli
installed && pass || { fail "claude $CLAUDE_CODE_VERSION runs after installing"; finish; }

# --- the scripted Messages API --------------------------------------------
R=$TEST_TMP/repo
api_log=$TEST_TMP/api.jsonl
port_file=$TEST_TMP/port
new_repo "$R"
node "$FIXTURES/model-api/anthropic.js" "$R" "$port_file" "$api_log" 300 \
	2>"$TEST_TMP/server.err" &
server=$!
trap 'kill "$server" 2>/dev/null; if [ "$BASHPID" = "$test_shell" ]; then rm -rf "$TEST_TMP"; fi' EXIT
wait_for "$port_file" 10 || { fail "the scripted API listens"; cat "$TEST_TMP/server.err" >&2; finish; }

export PATH="$install_dir/node_modules/.bin:$PATH"
export ANTHROPIC_BASE_URL="http://127.0.0.1:$(cat "$port_file")"
export ANTHROPIC_API_KEY=sk-ant-test-not-a-key
export CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_AUTOUPDATER=1 DISABLE_TELEMETRY=1
export DISABLE_ERROR_REPORTING=1 DISABLE_BUG_COMMAND=1 CLAUDE_CODE_DISABLE_TERMINAL_TITLE=1
export API_TIMEOUT_MS=30000 BASH_DEFAULT_TIMEOUT_MS=20000
export NO_PROXY=127.0.0.1,localhost no_proxy=127.0.0.1,localhost
# nothing of the caller's own claude set-up (models, accounts, a session
# the tests may run inside of)
unset ANTHROPIC_AUTH_TOKEN ANTHROPIC_MODEL ANTHROPIC_SMALL_FAST_MODEL ANTHROPIC_CUSTOM_HEADERS \
	ANTHROPIC_DEFAULT_SONNET_MODEL ANTHROPIC_DEFAULT_HAIKU_MODEL ANTHROPIC_DEFAULT_OPUS_MODEL \
	CLAUDE_CODE_SUBAGENT_MODEL CLAUDE_CONFIG_DIR CLAUDECODE CLAUDE_CODE_ENTRYPOINT \
	CLAUDE_CODE_USE_BEDROCK CLAUDE_CODE_USE_VERTEX CLAUDE_CODE_USE_FOUNDRY
[ "$(command -v claude)" = "$claude_bin" ] && pass || fail "the pinned claude is the one on PATH"
export TMPDIR=$TEST_TMP/tmp # the CLI keeps sockets and scratch files there
mkdir -p "$TMPDIR"

# --- a two-level flow of claude agents ------------------------------------
mkdir -p "$R/.ai-loop/agents"
agent() { # agent FILE FRONT-MATTER-LINES BODY
	printf -- '---\n%s\n---\n%s\n' "$2" "$3" >"$R/.ai-loop/agents/$1"
}
sensor_body='Check that greeting.txt says "hello, world". Write your output file
with front matter `status: pass` or `status: fail`, then what you found.'
controller_body='Sensors (name: output file):
{sensors-section}
Read every sensor output. Write your output file (or, without the Write
tool, answer) with front matter `target-met: true` when every sensor
passes; else `target-met: false` and an "## Action Plan". Judge and plan
only: edit no other file.'
agent review.md "name: review
tools: Read, Grep, Glob, Write
model: sonnet
target: greeting.txt says hello, world" "$sensor_body"
agent check.md "name: check
tools: [Read, Grep, Write]
model: sonnet
target: greeting.txt says hello, world" "$sensor_body"
agent outer-controller.md "name: outer-controller
tools: Read, Grep, Glob, Write
model: sonnet" "$controller_body"
agent inner-controller.md "name: inner-controller
tools: [Read, Glob]
model: sonnet" "$controller_body"
agent fixer.md "name: fixer
tools: Read, Write, Edit, Bash
disallowedTools: WebFetch, WebSearch
session: continue
model: sonnet" 'Carry out this plan, editing files as needed:

{task}

Write your output file with front matter `summary:` saying what you changed.'
cat >"$R/.ai-loop/flow.yaml" <<'YAML'
version: 1
defaults:
  runner: claude
  agent_timeout_seconds: 60
models:
  converge: haiku
flow:
  id: outer
  type: loop
  controller: .ai-loop/agents/outer-controller.md
  sensors: [.ai-loop/agents/review.md]
  actuator:
    strategy: composite
    child:
      id: inner
      type: loop
      controller: .ai-loop/agents/inner-controller.md
      sensors: [.ai-loop/agents/check.md]
      actuator: {strategy: direct, agent: .ai-loop/agents/fixer.md}
      termination: {max_iterations: 4}
  termination: {max_iterations: 3}
YAML
commit_all "$R"
cd "$R"

start=$SECONDS
run timeout 240 "$AILOOP" run "greet the world"
expect_rc 0 "a two-level flow of real claude agents converges"
echo "$(basename "$0"): the run took $((SECONDS - start)) s"
if [ "$rc" -ne 0 ]; then
	for f in .ai-loop/runs/run_*/nodes/outer/logs/*.log \
		.ai-loop/runs/run_*/nodes/outer/inner/logs/*.log; do
		[ -f "$f" ] && printf -- '--- %s:\n%s\n' "$f" "$(tail -n 20 "$f")" >&2
	done
	cat "$TEST_TMP/server.err" >&2
fi
[ -s "$api_log" ] && pass || fail "the CLI sent its requests to the scripted API"

# q JQ-FILTER: over the recorded requests, as one array
q() {
	jq -rs "$1" "$api_log"
}

# --- the loop: commits and labels -----------------------------------------
expect_eq "$(label_paths "$R")" \
	"0 outer, 1.0 outer/inner, 1.1 outer/inner, 1.2 outer/inner, 1.3 outer/inner, 1 outer, 2 outer" \
	"the labels and node paths of the commits, oldest first"
expect_eq "$(run_status)" "complete" "the run is complete"
expect_eq "$(git log --format=%B -1 | sed -n 's/^\[target-met\] //p')" "true" \
	"the last commit has the outer target met"
expect_eq "$(git log --format=%B -1 | sed -n 's/^\[sensors\] //p')" "review: pass" \
	"the last commit: the outer sensor, a claude agent, passes"
expect_eq "$(git log --format=%B -1 --grep='^\[iteration\] 0$' | sed -n 's/^\[sensors\] //p')" \
	"review: fail" "0: the outer sensor, a claude agent, fails with no greeting.txt"
expect_eq "$(git log --format=%B -1 --grep='^\[iteration\] 1.1$' | sed -n 's/^\[sensors\] //p')" \
	"check: fail" "1.1: the inner sensor, a claude agent, fails on the typo"
expect_eq "$(git log --format=%B -1 --grep='^\[iteration\] 1.2$' | sed -n 's/^\[sensors\] //p')" \
	"check: pass" "1.2: the inner sensor passes once the typo is fixed"
expect_in "$(git log --format=%s -1 --grep='^\[iteration\] 1.1$')" "— wrote greeting.txt" \
	"1.1's subject is the actuator's summary"
expect_in "$(git log --format=%s -1 --grep='^\[iteration\] 1.2$')" \
	"— fixed greeting.txt and noted it" "1.2's subject is the actuator's summary"

# --- files changed through the CLI's own tools ----------------------------
expect_eq "$(cat greeting.txt 2>/dev/null)" "hello, world" \
	"the actuator's Write and Edit tools made greeting.txt"
expect_eq "$(cat CHANGES.txt 2>/dev/null)" "fixed the greeting" \
	"the actuator's Bash tool wrote CHANGES.txt"
expect_eq "$(git show "$(git log --format=%H -1 --grep='^\[iteration\] 1.1$'):greeting.txt" 2>&1)" \
	"hello, wrld" "the Write tool's content is committed at 1.1"
expect_eq "$(git show "$(git log --format=%H -1 --grep='^\[iteration\] 1.2$'):greeting.txt" 2>&1)" \
	"hello, world" "the Edit tool's fix is committed at 1.2"
expect_eq "$(q '[.[] | select(.role == "actuator") | .results[] | "\(.name):\(.is_error)"] | join(" ")')" \
	"Read:true Write:false Write:false Read:false Edit:false Bash:false Write:false" \
	"the actuator's tool calls ran, in order (the first Read finds no file; each call ends writing its output)"

# --- outputs written with the CLI's Write tool, as the prompts say ---------
writes() { # the Writes of output files named $1, as label:is_error
	q "[.[] | . as \$r | .results[]? | select(.name == \"Write\" and ((.path // \"\") | endswith(\"/$1\")))
		| \"\(\$r.label):\(.is_error)\"] | join(\" \")"
}
expect_eq "$(writes sensor-review-output.md)" "0:false 1:false" \
	"the outer sensor wrote its output with Write at both its measurements"
expect_eq "$(writes sensor-check-output.md)" "1.1:false 1.2:false" \
	"the child loop's sensor wrote its output with Write, the second iteration too"
expect_eq "$(writes controller-output.md)" "1:false 2:false" \
	"the outer controller wrote its decision with Write at both its iterations"
expect_eq "$(writes actuator-output.md)" "1.1:false 1.2:false" "the actuator wrote its report with Write"
expect_not_in "$err" "asking it again" "no output needed asking for again"
expect_eq "$(q '[.[] | select(.output_existed == true) | "\(.label) \(.role)"] | join(", ")')" "" \
	"no agent found its output file there as it started: ailoop removed it, not emptied it"
expect_eq "$(q '[.[] | select(.output_existed == false)] | length')" 11 "checked at each of the 11 calls"

# --- usage and cost, as the CLI reported them --------------------------------
expect_usage_per_call reported
expect_in "$(git log --format=%B -1 --grep='^\[iteration\] 1.1$')" "[cost] \$0." "the iteration's commit says what it cost"

# --- the actuator's session, continued (session: continue) ----------------------
actuator_continues outer/inner

# --- every agent was a real claude -p process ------------------------------
expect_eq "$(q '[.[] | select(.role != null and .step == 0) | "\(.label) \(.role)\(if .name then " " + .name else "" end)"] | join(", ")')" \
	"0 sensor review, 1 controller, 1.1 controller, 1.1 actuator, 1.1 sensor check, 1.2 controller, \
1.2 actuator, 1.2 sensor check, 1.3 controller, 1 sensor review, 2 controller" \
	"one CLI conversation per agent call, in the loop's order"
expect_eq "$(q '[.[] | select(.role != null and .stream != true)] | length')" "0" \
	"the agents' requests stream (SSE)"
expect_eq "$(q '[.[] | select(.error)] | length')" "0" "the scripted API understood every request"

# --- the converge model ----------------------------------------------------
expect_eq "$(q '[.[] | select(.decision) | "\(.label) \(.decision.met) \(.model | test("haiku"))"] | join(", ")')" \
	"1 false false, 1.1 false false, 1.2 false false, 1.3 true true, 2 true true" \
	"controllers ask for the converge model (haiku) exactly when every sensor passes"
expect_eq "$(q '[.[] | select(.decision.met == false) | .model] | unique | join(" ")')" \
	"$(q '[.[] | select(.role == "actuator") | .model] | unique | join(" ")')" \
	"a controller otherwise asks for its own model (sonnet), as the actuator does"
expect_in "$out$err" "with model haiku" "the progress names the converge model"

# --- tools: restricts what an agent may do ---------------------------------
offered=$(q '[.[] | select(.role == "sensor" or .role == "controller") | .tools[]
	| select(. == "Edit" or . == "Bash" or . == "NotebookEdit" or . == "MultiEdit")]
	| unique | join(" ")')
expect_eq "$offered" "" \
	"tools-restriction: sensors and controllers (tools: Read, Grep, Glob, Write) are offered no Edit or Bash"
expect_eq "$(q '[.[] | select(.node == "outer/inner" and .role == "controller") | .tools[] | select(. == "Write")] | length')" \
	"0" "tools-restriction: the inner controller (tools: Read, Glob) is offered no Write"
expect_eq "$(q '[.[] | select(.decision.write_refused != null) | .decision.write_refused] | unique | join(" ")')" "true" \
	"tools-restriction: the CLI refuses the inner controller's Write"
[ ! -e controller-was-here.txt ] && [ -z "$(git log --all --format=%h -- controller-was-here.txt)" ] &&
	pass || fail "tools-restriction: no controller wrote controller-was-here.txt"
expect_eq "$(q '[.[] | select(.role == "actuator") | .tools[] | select(. == "WebFetch" or . == "WebSearch")] | length')" \
	"0" "disallowedTools: the actuator is offered no WebFetch or WebSearch"
expect_eq "$(q '[.[] | select(.role == "actuator") | .tools | (index("Write") != null and index("Edit") != null and index("Bash") != null)] | unique | join(" ")')" \
	"true" "the actuator (tools: Read, Write, Edit, Bash) is offered Write, Edit and Bash"

# the CLI ran headless in the test's own HOME: nothing of it in the real one
[ -d "$HOME/.claude" ] && pass || fail "the CLI kept its state in the test's HOME"

finish
