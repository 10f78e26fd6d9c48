#!/usr/bin/env bash
# Agents through runners: the claude preset's exact command line, the
# prompt on stdin with its placeholders filled, stdout becoming the output,
# the environment, runners: overrides, models.converge, and exit 69 when a
# runner's program is missing.
. "$(dirname "$0")/lib.sh"

# A fake `claude`: records its arguments and stdin, answers on stdout.
mkdir -p "$TEST_TMP/bin"
cat >"$TEST_TMP/bin/claude" <<'SH'
#!/bin/sh
n=$(ls "$CALLS" | grep -c "[0-9].argv$")
printf '%s\n' "$@" >"$CALLS/$n.argv"
cat >"$CALLS/$n.stdin"
env | grep '^AILOOP_' | sort >"$CALLS/$n.env"
case "$AILOOP_ROLE" in
controller)
	if grep -qx a todo.txt; then
		printf -- '---\ntarget-met: false\n---\n## Action Plan\n\nremove a\n'
	else
		printf -- '---\ntarget-met: true\n---\nDone.\n'
	fi ;;
actuator) grep -vx a todo.txt >t.new; mv t.new todo.txt; echo "removed a from the list" ;;
esac
SH
chmod +x "$TEST_TMP/bin/claude"
export CALLS=$TEST_TMP/calls
mkdir -p "$CALLS"

R=$TEST_TMP/repo
loop_repo "$R" a
cat >"$R/.ai-loop/agents/llm-controller.md" <<'MD'
---
name: llm-controller
model: opus
tools: Read, Write
---
Decide for {node-path} at {iteration} of {run-id}.
Task: {task}
Sensors:
{sensors-section}
Write {output-path}. Unknown {placeholder} stays.
MD
cat >"$R/.ai-loop/agents/llm-actuator.md" <<'MD'
---
name: llm-actuator
tools: [Read, Edit]
disallowedTools: Bash
---
Carry out the plan in {input-path}; artifacts in {artifacts-path}.
MD
cat >"$R/.ai-loop/flow.yaml" <<'YAML'
version: 1
models: {converge: haiku}
flow:
  id: fix
  type: loop
  controller: .ai-loop/agents/llm-controller.md
  sensors: [.ai-loop/agents/sensor.md]
  actuator: {strategy: direct, agent: .ai-loop/agents/llm-actuator.md}
YAML
commit_all "$R"
cd "$R"

# without the program: exit 69, with the way to install it, before anything
run env PATH=/usr/bin:/bin "$AILOOP" run "remove a"
expect_rc 69 "runner not installed"
expect_in "$err" "runs with 'claude', which is not installed" "names the missing program"
expect_in "$err" "npm install -g @anthropic-ai/claude-code" "gives the install hint"
expect_eq "$(git branch --list 'ai-loop/*')" "" "nothing started: no branch"
[ ! -d .ai-loop/runs ] && pass || fail "nothing started: no run directory"

# the plan, without running anything
run env PATH="$TEST_TMP/bin:$PATH" "$AILOOP" run --dry-run "remove a"
expect_rc 0 "dry run"
expect_in "$out" "claude -p --model=opus --permission-mode acceptEdits --tools=Read,Write --allowedTools=Read,Write --no-session-persistence --output-format stream-json --verbose < <prompt>" \
	"dry run shows the controller's command line"
expect_in "$out" "--disallowedTools=Bash" "dry run shows disallowed tools"
expect_in "$out" "sh .ai-loop/agents/sensor.sh" "dry run shows the sensor command"
[ ! -d .ai-loop/runs ] && pass || fail "dry run started nothing"
[ -z "$(ls "$CALLS")" ] && pass || fail "dry run ran an agent"
# the same plan as JSON, for scripts
run env PATH="$TEST_TMP/bin:$PATH" "$AILOOP" run --dry-run --json "remove a"
expect_rc 0 "dry run --json"
expect_eq "$(printf '%s' "$out" | jq -r '[.dry_run, .task, .root.path, .root.type] | @tsv')" \
	"true	remove a	fix	loop" "the plan's head as JSON"
expect_eq "$(printf '%s' "$out" | jq -r '.root.agents[] | "\(.role) \(.file)"' | tr '\n' ',')" \
	"sensor .ai-loop/agents/sensor.md,controller .ai-loop/agents/llm-controller.md,actuator .ai-loop/agents/llm-actuator.md," \
	"every agent of the plan, with its role"
expect_eq "$(printf '%s' "$out" | jq -r '.root.agents[1].argv | join(" ")')" \
	"claude -p --model=opus --permission-mode acceptEdits --tools=Read,Write --allowedTools=Read,Write --no-session-persistence --output-format stream-json --verbose < <prompt>" \
	"the controller's command line as an array"
[ ! -d .ai-loop/runs ] && pass || fail "dry run --json started nothing"
run env PATH="$TEST_TMP/bin:$PATH" "$AILOOP" run --dry-run --json "$(printf 'remove \377 a')"
expect_rc 0 "dry run --json of a task with a byte that is not UTF-8"
expect_eq "$(printf '%s' "$out" | jq -r .task)" "remove � a" "the byte is shown as U+FFFD"

run env PATH="$TEST_TMP/bin:$PATH" "$AILOOP" run "remove a"
expect_rc 0 "run through the claude runner"
expect_eq "$(cat "$CALLS/0.argv" | tr '\n' ' ')" \
	"-p --model=opus --permission-mode acceptEdits --tools=Read,Write --allowedTools=Read,Write --no-session-persistence --output-format stream-json --verbose " \
	"controller argv (claude preset, model and tools from the agent file)"
expect_eq "$(cat "$CALLS/1.argv" | tr '\n' ' ')" \
	"-p --permission-mode acceptEdits --tools=Read,Edit --allowedTools=Read,Edit --disallowedTools=Bash --no-session-persistence --output-format stream-json --verbose " \
	"actuator argv (no model: no --model)"
# the second decision sees every sensor pass: it converges on models.converge
expect_in "$(cat "$CALLS/2.argv" | tr '\n' ' ')" "--model=haiku" "converging controller uses haiku"
prompt=$(cat "$CALLS/0.stdin")
run_id=$(ls .ai-loop/runs)
expect_in "$prompt" "Decide for fix at 1 of $run_id." "placeholders filled"
expect_in "$prompt" "Task: remove a" "{task} filled"
expect_in "$prompt" "- scope: .ai-loop/runs/$run_id/nodes/fix/sensor-scope-output.md (target: nothing left to fix in scope)" \
	"{sensors-section} lists sensors with output and target"
expect_in "$prompt" "Write .ai-loop/runs/$run_id/nodes/fix/controller-output.md." "{output-path}"
expect_in "$prompt" "Unknown {placeholder} stays." "unknown placeholders stay"
expect_in "$(cat "$CALLS/1.stdin")" "plan in .ai-loop/runs/$run_id/nodes/fix/controller-output.md" \
	"actuator input is the controller output"
env1=$(cat "$CALLS/1.env")
for v in "AILOOP_ROLE=actuator" "AILOOP_NODE_PATH=fix" "AILOOP_NODE_ID=fix" "AILOOP_ITERATION=1" \
	"AILOOP_RUN_ID=$run_id" "AILOOP_RUN_DIR=$R/.ai-loop/runs/$run_id" \
	"AILOOP_ARTIFACTS=$R/.ai-loop/runs/$run_id/nodes/fix" \
	"AILOOP_INPUT=$R/.ai-loop/runs/$run_id/nodes/fix/controller-output.md" \
	"AILOOP_OUTPUT=$R/.ai-loop/runs/$run_id/nodes/fix/actuator-output.md" \
	"AILOOP_TASK_FILE=$R/.ai-loop/runs/$run_id/nodes/fix/task.md" \
	"AILOOP_PROMPT_FILE=$R/.ai-loop/runs/$run_id/nodes/fix/logs/actuator.prompt.md"; do
	expect_in "$env1" "$v" "environment $v"
done
expect_eq "$(cat .ai-loop/runs/$run_id/nodes/fix/actuator-output.md)" "removed a from the list" \
	"stdout became the output file"
expect_eq "$(git log --format=%s -1 HEAD~1)" "ai-loop[fix]: iteration 1 — removed a from the list" \
	"the output's first line is the action summary"

# runners: overrides a preset; an agent may name its own runner
R=$TEST_TMP/custom
loop_repo "$R" a
cat >"$TEST_TMP/bin/my-agent" <<'SH'
#!/bin/sh
printf '%s\n' "$@" >"$CALLS/custom.argv"
printf -- '---\ntarget-met: true\n---\n'
SH
chmod +x "$TEST_TMP/bin/my-agent"
cat >"$R/.ai-loop/agents/custom.md" <<'MD'
---
name: custom
runner: mine
model: big
---
Decide.
MD
cat >"$R/.ai-loop/flow.yaml" <<'YAML'
version: 1
runners:
  mine:
    command: [my-agent, --model, "{model}", --prompt-file]
    prompt: file
flow:
  id: fix
  type: loop
  controller: .ai-loop/agents/custom.md
  actuator: {agent: .ai-loop/agents/fixer.md}
YAML
commit_all "$R"
cd "$R"
run env PATH="$TEST_TMP/bin:$PATH" "$AILOOP" run "use my runner"
expect_rc 0 "custom runner"
expect_eq "$(head -3 "$CALLS/custom.argv" | tr '\n' ' ')" "--model big --prompt-file " \
	"custom runner argv"
expect_in "$(tail -1 "$CALLS/custom.argv")" "logs/controller.prompt.md" \
	"prompt: file passes the prompt file last"

finish
