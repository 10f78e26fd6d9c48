#!/usr/bin/env bash
# The real gemini CLI end to end: the two-level flow `ailoop setup
# --template nested --runner gemini` writes (its reviewer at both levels),
# every sensor, controller and actuator a `gemini` process through the
# gemini preset with the templates' models, against a scripted Gemini API on
# 127.0.0.1 (tests/fixtures/model-api/gemini.js) that acts through
# gemini-cli's own tools (read_file, write_file, replace, run_shell_command)
# as a model follows the prompt. gemini-cli (@google/gemini-cli, pinned) is
# installed once from npm into a cache outside the checkout; without npm the
# test is skipped (exit 77).
real_home=$HOME # lib.sh gives the test a HOME of its own
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/agent-cli.sh"

GEMINI_CLI_VERSION=0.61.0
cli_install gemini-cli @google/gemini-cli "$GEMINI_CLI_VERSION" gemini
pass

R=$TEST_TMP/repo
api_log=$TEST_TMP/api.jsonl
new_repo "$R"
export PATH="$(dirname "$cli_bin"):$PATH"
export GEMINI_API_KEY=test-not-a-key
export NO_PROXY=127.0.0.1,localhost no_proxy=127.0.0.1,localhost
unset GOOGLE_API_KEY GOOGLE_CLOUD_PROJECT GOOGLE_GENAI_USE_VERTEXAI GOOGLE_APPLICATION_CREDENTIALS \
	GEMINI_MODEL GEMINI_CLI_HOME
export TMPDIR=$TEST_TMP/tmp
mkdir -p "$TMPDIR" "$HOME/.gemini"
[ "$(command -v gemini)" = "$cli_bin" ] && pass || fail "the pinned gemini is the one on PATH"
# an API key as the way in (without it: exit 41), no usage statistics
printf '%s\n' '{"security": {"auth": {"selectedType": "gemini-api-key"}},' \
	' "privacy": {"usageStatisticsEnabled": false}}' >"$HOME/.gemini/settings.json"

# gemini_config PORT: the scripted API as gemini's endpoint
gemini_config() {
	export GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:$1
}

nested_flow gemini
cd "$R"
run "$AILOOP" validate
expect_not_in "$err" "warning" "the flow setup --runner gemini writes has nothing validate warns about"
# a tool list gemini cannot enforce is kept as a comment, and validate says so
# of one written by hand
expect_in "$(cat .ai-loop/agents/*.md)" "# tools:" "setup keeps the tool lists as comments"
sed -i 's/^# tools:/tools:/' .ai-loop/agents/*.md
run "$AILOOP" validate
expect_in "$err" "runner 'gemini' has no way to enforce 'tools'" \
	"tools-restriction: validate says gemini cannot restrict an agent's tools to a list"
sed -i 's/^tools:/# tools:/' .ai-loop/agents/*.md

start=$SECONDS
run_in_netns gemini.js gemini_config timeout 400 "$AILOOP" run 'make greeting.txt say "hello, world"'
expect_rc 0 "a two-level flow of real gemini agents converges"
echo "$(basename "$0"): the run took $((SECONDS - start)) s"
[ "$rc" -eq 0 ] || { printf '%s\n' "$out" "$err" >&2; show_logs; }
[ -s "$api_log" ] && pass || { fail "gemini sent its requests to the scripted API"; finish; }
expect_nested_run gemini
expect_usage_per_call estimated
actuator_continues delivery/implement

# the templates' models, the converge one once every sensor passes
expect_eq "$(q '[.[] | select(.decision) | "\(.label) \(.model)"] | join(", ")')" \
	"1 gemini-2.5-pro, 1.1 gemini-2.5-pro, 1.2 gemini-2.5-pro, 1.3 gemini-2.5-flash, 2 gemini-2.5-flash" \
	"controllers ask for the templates' model, the converge one (gemini-2.5-flash) when every sensor passes"
expect_eq "$(q '[.[] | select(.role == "sensor" or .role == "actuator") | .model] | unique | join(" ")')" \
	"gemini-2.5-pro" "sensors and the actuator ask for the templates' gemini model"

# tools: the approval mode is what gemini can enforce: a controller
# (auto_edit) is offered no shell, the agents that may run commands are
expect_eq "$(q '[.[] | select(.role == "controller") | .tools | index("run_shell_command") != null] | unique | join(" ")')" \
	"false" "tools-restriction: controllers (auto_edit) are offered no shell"
expect_eq "$(q '[.[] | select(.role == "sensor" or .role == "actuator") | .tools | index("run_shell_command") != null] | unique | join(" ")')" \
	"true" "the sensors and the actuator, whose tools name Bash, get the shell (yolo)"
expect_eq "$(cat CHANGES.txt 2>/dev/null)" "fixed the greeting" "the actuator's shell wrote CHANGES.txt"

# what the preset leaves in the home (README, "Runner presets"): gemini
# keeps a transcript of every run under ~/.gemini/tmp
[ -n "$(find "$HOME/.gemini/tmp" -type f 2>/dev/null | head -n 1)" ] && pass ||
	fail "gemini keeps its transcripts under ~/.gemini/tmp, as the README says"

finish
