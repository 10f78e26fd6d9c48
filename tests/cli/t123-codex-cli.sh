#!/usr/bin/env bash
# The real codex CLI end to end: the two-level flow `ailoop setup
# --template nested --runner codex` writes (its reviewer at both levels),
# every sensor, controller and actuator a `codex exec` process through the
# codex preset with the templates' models, against a scripted Responses API
# on 127.0.0.1 (tests/fixtures/model-api/openai-responses.js) that acts
# through codex's own tools (exec_command, apply_patch) as a model follows
# the prompt. The actuator continues its session (codex exec resume): its
# second call sent the first one's turns again, and costs what its own
# requests add, where codex's usage counts the first call's too. Codex
# (@openai/codex, pinned) is installed once from npm into a cache outside
# the checkout; without npm the test is skipped (exit 77).
real_home=$HOME # lib.sh gives the test a HOME of its own
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/agent-cli.sh"

CODEX_VERSION=0.171.0
cli_install codex @openai/codex "$CODEX_VERSION" codex
pass

R=$TEST_TMP/repo
api_log=$TEST_TMP/api.jsonl
new_repo "$R"
export PATH="$(dirname "$cli_bin"):$PATH"
export CODEX_HOME=$HOME/.codex LOCAL_API_KEY=sk-test-not-a-key
export NO_PROXY=127.0.0.1,localhost no_proxy=127.0.0.1,localhost
unset OPENAI_API_KEY OPENAI_BASE_URL CODEX_API_KEY
export TMPDIR=$TEST_TMP/tmp
mkdir -p "$TMPDIR" "$CODEX_HOME"
[ "$(command -v codex)" = "$cli_bin" ] && pass || fail "the pinned codex is the one on PATH"

# codex_config PORT: the scripted API as codex's only model provider, and
# none of its other look-ups
codex_config() {
	cat >"$CODEX_HOME/config.toml" <<TOML
model_provider = "local"

[model_providers.local]
name = "scripted"
base_url = "http://127.0.0.1:$1/v1"
env_key = "LOCAL_API_KEY"
wire_api = "responses"

[analytics]
enabled = false

[features]
plugins = false
TOML
}

nested_flow codex
cd "$R"
run "$AILOOP" validate
expect_not_in "$err" "warning" "the flow setup --runner codex writes has nothing validate warns about"
# a tool list codex cannot enforce is kept as a comment, and validate says so
# of one written by hand
expect_in "$(cat .ai-loop/agents/*.md)" "# tools:" "setup keeps the tool lists as comments"
sed -i 's/^# tools:/tools:/' .ai-loop/agents/*.md
run "$AILOOP" validate
expect_in "$err" "runner 'codex' has no way to enforce 'tools'" \
	"tools-restriction: validate says codex cannot restrict an agent's tools"
sed -i 's/^tools:/# tools:/' .ai-loop/agents/*.md

start=$SECONDS
run_in_netns openai-responses.js codex_config timeout 400 "$AILOOP" run 'make greeting.txt say "hello, world"'
expect_rc 0 "a two-level flow of real codex agents converges"
echo "$(basename "$0"): the run took $((SECONDS - start)) s"
[ "$rc" -eq 0 ] || { printf "%s\n" "$out" "$err" >&2; show_logs; }
[ -s "$api_log" ] && pass || { fail "codex sent its requests to the scripted API"; finish; }
expect_nested_run codex
expect_usage_per_call estimated
actuator_continues delivery/implement
# codex counts a resumed session's earlier requests in its usage: the
# actuator's second call is what its own requests add (expect_usage_per_call
# above), the count so far is kept with the session
expect_eq "$(sed -n "/^session-totals:/,/^[^ ]/s/^  actuator: '\(.*\)'\$/\1/p" \
	.ai-loop/runs/run_*/nodes/delivery/implement/orchestrator-output.md)" \
	"$(q '[.[] | select(.role == "actuator") | .usage] | "\(map(.input) | add) \(map(.output) | add) \(map(.cache_read) | add) \(map(.cache_write) | add) \(map(.reasoning) | add)"')" \
	"the node's state keeps what codex counted in the actuator's session: its two calls' requests"

# the templates' models are ones this codex knows: it offers apply_patch
# only to a model it has metadata for
expect_eq "$(q '[.[] | select(.role != null) | .model] | unique | join(" ")')" "gpt-5.5" \
	"every agent asks for the templates' codex model"
expect_eq "$(q '[.[] | select(.role != null) | (.tools | index("apply_patch") != null)] | unique | join(" ")')" "true" \
	"codex offers apply_patch to every agent"

# the CLI ran in the test's HOME: nothing of it in the real one
[ -f "$CODEX_HOME/config.toml" ] && pass || fail "codex kept its configuration in the test's HOME"
expect_eq "$(find "$CODEX_HOME" -path '*sessions*' -type f | wc -l)" 1 \
	"--ephemeral: codex saved no session but the actuator's (session: continue)"

finish
