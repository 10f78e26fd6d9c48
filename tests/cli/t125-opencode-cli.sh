#!/usr/bin/env bash
# The real opencode CLI end to end: the two-level flow `ailoop setup
# --template nested --runner opencode` writes (its reviewer at both
# levels), every sensor, controller and actuator an `opencode run` process
# through the opencode preset, against a scripted Chat Completions API on
# 127.0.0.1 (tests/fixtures/model-api/openai-chat.js) that acts through
# opencode's own tools (read, write, edit, bash) as a model follows the
# prompt. The prompt reaches the model whole, as the user's message (given
# with --file it arrived as a read result cut at 2,000 lines). opencode
# (opencode-ai, pinned) is installed once from npm into a cache outside the
# checkout; without npm the test is skipped (exit 77).
real_home=$HOME # lib.sh gives the test a HOME of its own
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/agent-cli.sh"

OPENCODE_VERSION=1.18.33
cli_install opencode opencode-ai "$OPENCODE_VERSION" opencode
pass

R=$TEST_TMP/repo
api_log=$TEST_TMP/api.jsonl
new_repo "$R"
export PATH="$(dirname "$cli_bin"):$PATH"
export OPENCODE_CONFIG=$HOME/opencode.json OPENCODE_DISABLE_MODELS_FETCH=1 OPENCODE_DISABLE_AUTOUPDATE=1
export NO_PROXY=127.0.0.1,localhost no_proxy=127.0.0.1,localhost
unset OPENAI_API_KEY ANTHROPIC_API_KEY OPENCODE_CONFIG_DIR OPENCODE_CONFIG_CONTENT
export TMPDIR=$TEST_TMP/tmp
mkdir -p "$TMPDIR"
[ "$(command -v opencode)" = "$cli_bin" ] && pass || fail "the pinned opencode is the one on PATH"

# opencode_config PORT: the scripted API as opencode's one provider and
# model (the templates name no opencode model: opencode chooses this one)
opencode_config() {
	cat >"$OPENCODE_CONFIG" <<JSON
{
  "\$schema": "https://opencode.ai/config.json",
  "provider": {
    "scripted": {
      "npm": "@ai-sdk/openai-compatible",
      "name": "Scripted",
      "options": {"baseURL": "http://127.0.0.1:$1/v1", "apiKey": "sk-test-not-a-key"},
      "models": {"test-model": {"name": "Test model", "tool_call": true,
        "cost": {"input": 3, "output": 15}, "limit": {"context": 200000, "output": 32000}}}
    }
  },
  "model": "scripted/test-model",
  "small_model": "scripted/test-model",
  "autoupdate": false,
  "share": "disabled"
}
JSON
}

nested_flow opencode
cd "$R"
run "$AILOOP" validate
expect_not_in "$err" "warning" "the flow setup --runner opencode writes has nothing validate warns about"
# a tool list opencode cannot enforce is kept as a comment, and validate says so
# of one written by hand
expect_in "$(cat .ai-loop/agents/*.md)" "# tools:" "setup keeps the tool lists as comments"
sed -i 's/^# tools:/tools:/' .ai-loop/agents/*.md
run "$AILOOP" validate
expect_in "$err" "runner 'opencode' has no way to enforce 'tools'" \
	"tools-restriction: validate says opencode cannot restrict an agent's tools"
sed -i 's/^tools:/# tools:/' .ai-loop/agents/*.md

start=$SECONDS
run_in_netns openai-chat.js opencode_config timeout 400 "$AILOOP" run 'make greeting.txt say "hello, world"'
expect_rc 0 "a two-level flow of real opencode agents converges"
echo "$(basename "$0"): the run took $((SECONDS - start)) s"
[ "$rc" -eq 0 ] || { printf '%s\n' "$out" "$err" >&2; show_logs; }
[ -s "$api_log" ] && pass || { fail "opencode sent its requests to the scripted API"; finish; }
expect_nested_run opencode
expect_usage_per_call reported
actuator_continues delivery/implement

# the prompt arrives whole as the user's own message, not as a file's
# numbered lines: ailoop's footer is there as ailoop wrote it
expect_eq "$(q '[.[] | select(.role != null and .step == 0) | .body.messages | map(select(.role == "user") | .content | if type == "string" then . else map(.text // "") | join("\n") end) | join("\n")
	| test("\n---\nailoop: you are the [a-z]+ .*\nTask file: ") and (test("\n[0-9]+: ") | not)] | unique | join(" ")')" \
	"true" "every agent's prompt reaches the model whole, as the user's message"
expect_eq "$(q '[.[] | select(.role != null) | .model] | unique | join(" ")')" "test-model" \
	"the agents use the model of opencode's configuration (the templates name none for it)"

finish
