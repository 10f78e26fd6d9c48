#!/usr/bin/env bash
# A CLI ailoop has no preset for, run through a runner of the flow's own
# (`runners:` in flow.yaml, as the README shows it): qwen-code, a fork of
# gemini-cli that speaks the OpenAI Chat Completions API and prints
# claude's stream-json (`output: claude-json`). The two-level flow `ailoop
# setup --template nested` writes (its reviewer at both levels) with every
# sensor, controller and actuator a `qwen` process, against a scripted
# Chat Completions API on 127.0.0.1 (tests/fixtures/model-api/openai-chat.js)
# that acts through qwen-code's own tools (read_file, write_file, edit,
# run_shell_command) as a model follows the prompt. The runner's session:
# has the actuator (session: continue) continue its qwen session. qwen-code
# (@qwen-code/qwen-code, pinned) is installed once from npm into a cache
# outside the checkout; without npm the test is skipped (exit 77).
real_home=$HOME # lib.sh gives the test a HOME of its own
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/agent-cli.sh"

QWEN_CODE_VERSION=0.24.4
cli_install qwen-code @qwen-code/qwen-code "$QWEN_CODE_VERSION" qwen
pass

R=$TEST_TMP/repo
api_log=$TEST_TMP/api.jsonl
new_repo "$R"
export PATH="$(dirname "$cli_bin"):$PATH"
export OPENAI_API_KEY=sk-test-not-a-key OPENAI_MODEL=test-model QWEN_CODE_SUPPRESS_YOLO_WARNING=1
export NO_PROXY=127.0.0.1,localhost no_proxy=127.0.0.1,localhost
unset OPENAI_BASE_URL DASHSCOPE_API_KEY ANTHROPIC_API_KEY GEMINI_API_KEY QWEN_HOME
export TMPDIR=$TEST_TMP/tmp
mkdir -p "$TMPDIR" "$HOME/.qwen"
[ "$(command -v qwen)" = "$cli_bin" ] && pass || fail "the pinned qwen is the one on PATH"
# an OpenAI-compatible API, and none of qwen's own background agents (its
# memory extractor would read the conversation and act on it) or reports
cat >"$HOME/.qwen/settings.json" <<'JSON'
{
  "security": {"auth": {"selectedType": "openai"}},
  "memory": {"enableManagedAutoMemory": false, "enableManagedAutoDream": false},
  "privacy": {"usageStatisticsEnabled": false}
}
JSON

# qwen_config PORT: the scripted API as qwen's OpenAI endpoint
qwen_config() {
	export OPENAI_BASE_URL="http://127.0.0.1:$1/v1"
}

# the nested template's agents, run by a runner of the flow's own: the
# README's example, its model the one OPENAI_MODEL names (the templates
# name none for it). Its actuator continues its session (session:
# continue) as the runner's session: says qwen does it: --resume ID, a
# fresh agent recording no chat, and the usage of a resumed session
# counting its earlier calls too
nested_flow claude
sed -i 's/^  runner: claude$/  runner: qwen/' "$R/.ai-loop/flow.yaml"
cat >>"$R/.ai-loop/flow.yaml" <<'YAML'
runners:
  qwen:
    command: [qwen, --yolo, "--model={model}", --output-format, stream-json, "{session}"]
    prompt: stdin
    output: claude-json
    session:
      fresh: [--chat-recording=false]
      resume: [--resume, "{session-id}"]
      cumulative_usage: true
prices:
  test-model: {input: 3, output: 15, cache_read: 0.3}
YAML
commit_all "$R"
cd "$R"
expect_eq "$(sed -n 's/^  runner: //p' .ai-loop/flow.yaml)" "qwen" "every agent runs the flow's own qwen runner"
run "$AILOOP" validate
expect_rc 0 "the flow with a runner of its own is valid"
expect_in "$err" "runner 'qwen' has no way to enforce 'tools'" \
	"tools-restriction: validate says a runner with no {tools} in its command cannot restrict an agent's tools"
expect_not_in "$err" "session" "a runner whose session: resumes: no warning for the actuator's session: continue"
run "$AILOOP" run --dry-run 'make greeting.txt say "hello, world"'
expect_in "$out" "qwen --yolo --output-format stream-json --chat-recording=false <" \
	"the runner's command, an argument whose placeholders are all empty left out (no --model=), a fresh agent's session: fresh at {session}"
expect_in "$out" "qwen --yolo --output-format stream-json <" \
	"the actuator's first call keeps its session: nothing at {session}"

start=$SECONDS
run_in_netns openai-chat.js qwen_config timeout 400 "$AILOOP" run 'make greeting.txt say "hello, world"'
expect_rc 0 "a two-level flow of real qwen agents, through a runner of the flow's own, converges"
echo "$(basename "$0"): the run took $((SECONDS - start)) s"
[ "$rc" -eq 0 ] || { printf '%s\n' "$out" "$err" >&2; show_logs; }
[ -s "$api_log" ] && pass || { fail "qwen sent its requests to the scripted API"; finish; }
expect_nested_run qwen
actuator_continues delivery/implement
# qwen's stream-json counts the cached tokens in input_tokens too (claude's
# leaves them out) and the reasoning in output_tokens; it gives no cost:
# ailoop estimates it from prices:. The actuator's second call is counted
# what it sent, not its session's running count (cumulative_usage)
expect_usage_per_call estimated '{input: (.input + .cache_read), output, cache_read, cache_write: 0, reasoning: 0}'

expect_eq "$(q '[.[] | select(.role != null) | .model] | unique | join(" ")')" "test-model" \
	"the agents use the model OPENAI_MODEL names"
expect_eq "$(q '[.[] | select(.role != null) | (.tools | index("write_file") != null and index("edit") != null)] | unique | join(" ")')" \
	"true" "qwen offers its write_file and edit tools to every agent (--yolo)"

finish
