#!/usr/bin/env bash
# The runner presets do what the agent file says: fake claude, codex,
# gemini, aider and opencode programs record the command line ailoop gives
# them; `model:` is mapped per runner and a model a runner cannot take is
# refused by validate (and so by run, before anything starts); tools a
# runner cannot enforce are validate warnings; the prompt's footer gives
# absolute paths.
. "$(dirname "$0")/lib.sh"

# One fake for every runner: records its name, arguments and stdin, and
# answers as the loop's controller or actuator would.
mkdir -p "$TEST_TMP/bin"
cat >"$TEST_TMP/bin/fake-agent" <<'SH'
#!/bin/sh
n=$(ls "$CALLS" | grep -c "argv$")
name=$(basename "$0")
printf '%s\n' "$@" >"$CALLS/$n-$name.argv"
cat >"$CALLS/$n-$name.stdin"
# the prompt file named by aider's --message-file, as it is during the call
prev=
for a in "$@"; do
	[ "$prev" = --message-file ] && cp "$a" "$CALLS/$n-$name.file"
	prev=$a
done
case "$AILOOP_ROLE" in
controller)
	if grep -qx a todo.txt; then
		printf -- '---\ntarget-met: false\n---\n## Action Plan\n\nremove a\n'
	else
		printf -- '---\ntarget-met: true\n---\nDone.\n'
	fi ;;
actuator) grep -vx a todo.txt >t.new; mv t.new todo.txt; echo "removed a" ;;
esac
SH
chmod +x "$TEST_TMP/bin/fake-agent"
for r in claude codex gemini aider opencode; do
	ln -s fake-agent "$TEST_TMP/bin/$r"
done
export PATH="$TEST_TMP/bin:$PATH"
export CALLS=$TEST_TMP/calls

# preset_repo DIR RUNNER: a one-loop flow whose controller and actuator are
# LLM agents with tools, disallowedTools and per-runner models.
preset_repo() {
	loop_repo "$1" a
	cat >"$1/.ai-loop/agents/controller.md" <<'MD'
---
name: controller
tools: Read, Write
model: {claude: sonnet, codex: gpt-5, opencode: openai/gpt-5}
---
Decide.
MD
	cat >"$1/.ai-loop/agents/actuator.md" <<'MD'
---
name: actuator
tools: [Read, Edit, "Bash(git diff:*)", "Bash(make, test)"]
disallowedTools: Bash(rm *)
---
Carry out the plan.
MD
	cat >"$1/.ai-loop/flow.yaml" <<YAML
version: 1
defaults: {runner: $2}
models: {converge: {claude: haiku, codex: gpt-5-mini}}
flow:
  id: fix
  type: loop
  controller: .ai-loop/agents/controller.md
  sensors: [.ai-loop/agents/sensor.md]
  actuator: {strategy: direct, agent: .ai-loop/agents/actuator.md}
YAML
	commit_all "$1"
}

# run_preset RUNNER: runs the flow through RUNNER; argv files in $CALLS.
run_preset() {
	R=$TEST_TMP/$1
	rm -rf "$CALLS"
	mkdir -p "$CALLS"
	preset_repo "$R" "$1"
	cd "$R"
	run "$AILOOP" run "remove a"
	expect_rc 0 "a run through the $1 preset converges"
	run_id=$(ls .ai-loop/runs)
	nodes=$R/.ai-loop/runs/$run_id/nodes/fix
}

argv_of() { tr '\n' ' ' <"$CALLS/$1.argv"; }

# --- claude: --tools restricts, the patterns are pre-approved ------------
run_preset claude
expect_eq "$(argv_of 0-claude)" \
	"-p --model=sonnet --permission-mode acceptEdits --tools=Read,Write --allowedTools=Read,Write --no-session-persistence --output-format stream-json --verbose " \
	"claude controller: its model, tools offered and approved"
expect_eq "$(argv_of 1-claude)" \
	"-p --permission-mode acceptEdits --tools=Read,Edit,Bash --allowedTools=Read,Edit,Bash(git diff:*),Bash(make, test) --disallowedTools=Bash(rm *) --no-session-persistence --output-format stream-json --verbose " \
	"claude actuator: --tools takes bare names once, --allowedTools the patterns"
expect_in "$(argv_of 2-claude)" "-p --model=haiku " \
	"the converging claude controller gets the claude entry of models.converge"
expect_eq "$(ls "$HOME")" "" "claude runs leave nothing in the home directory"
prompt=$(cat "$CALLS/1-claude.stdin")
expect_in "$prompt" "Task file: $nodes/task.md" "footer: the task file as an absolute path"
expect_in "$prompt" "Input: $nodes/controller-output.md" "footer: the input as an absolute path"
expect_in "$prompt" "Write your output to: $nodes/actuator-output.md" \
	"footer: the output as an absolute path"
expect_in "$(cat "$CALLS/0-claude.stdin")" "Write your output to: $nodes/controller-output.md" \
	"footer: the controller's output too"

# --- codex: its own model from the map, no tools ------------------------
run_preset codex
expect_eq "$(argv_of 0-codex)" \
	"exec --model=gpt-5 --sandbox workspace-write --color never --ephemeral --skip-git-repo-check --json - " \
	"codex controller: the codex entry of the model map"
expect_eq "$(argv_of 1-codex)" \
	"exec --sandbox workspace-write --color never --ephemeral --skip-git-repo-check --json - " \
	"codex actuator: no model, no tool flags"
expect_in "$(argv_of 2-codex)" "exec --model=gpt-5-mini " \
	"the converging codex controller gets the codex entry of models.converge"
run "$AILOOP" validate
expect_rc 0 "tools codex cannot enforce are not an error"
expect_in "$err" ".ai-loop/agents/controller.md:3:1: warning: runner 'codex' has no way to enforce 'tools': agent file '.ai-loop/agents/controller.md' may use tools it does not list" \
	"validate warns about the controller's tools, where they are"
expect_in "$err" ".ai-loop/agents/actuator.md:3:1: warning: runner 'codex' has no way to enforce 'tools'" \
	"validate warns about the actuator's tools"
expect_in "$err" ".ai-loop/agents/actuator.md:4:1: warning: runner 'codex' has no way to enforce 'disallowedTools': agent file '.ai-loop/agents/actuator.md' may use the tools it disallows" \
	"validate warns about disallowedTools"
expect_in "$out" ".ai-loop/flow.yaml: ok:" "validate still says ok"

# --- gemini: the shell for the actuator whose tools include Bash ----------
run_preset gemini
expect_eq "$(argv_of 0-gemini)" \
	"--approval-mode auto_edit --skip-trust --output-format json --prompt Carry out the instructions given above. " \
	"gemini controller: no gemini model in the map, edits only"
expect_eq "$(argv_of 1-gemini)" \
	"--approval-mode yolo --skip-trust --output-format json --prompt Carry out the instructions given above. " \
	"gemini actuator that may run Bash: every tool approved"
expect_in "$(cat "$CALLS/1-gemini.stdin")" "Carry out the plan." "gemini reads the prompt on stdin"

# --- aider: the prompt file; opencode: stdin ------------------------------
run_preset aider
expect_eq "$(argv_of 1-aider)" \
	"--yes-always --no-auto-commits --no-gitignore --no-check-update --no-show-release-notes --no-pretty --no-stream --message-file .ai-loop/runs/$run_id/nodes/fix/logs/actuator.prompt.md " \
	"aider: no .gitignore edits, no update checks or release notes"
expect_not_in "$(argv_of 2-aider)" "--model" "no aider entry anywhere: aider's own model"
expect_in "$(cat "$CALLS/1-aider.file" 2>/dev/null)" "Carry out the plan." \
	"aider: the --message-file holds the prompt while aider runs"
expect_in "$(cat "$CALLS/1-aider.file" 2>/dev/null)" "Write your output to: $PWD/.ai-loop/runs/$run_id/nodes/fix/actuator-output.md" \
	"aider: the prompt file ends with ailoop's footer"
expect_eq "$(cat "$CALLS/1-aider.stdin")" "" "aider is given nothing on stdin"
run_preset opencode
expect_eq "$(argv_of 0-opencode)" \
	"run --model=openai/gpt-5 --format json " \
	"opencode: the provider/model of the map, the prompt on stdin"
expect_in "$(cat "$CALLS/1-opencode.stdin")" "Carry out the plan." "opencode reads the prompt on stdin"

# --- models a runner cannot take: validate errors, run refused -----------
R=$TEST_TMP/bad-models
preset_repo "$R" codex
cd "$R"
cat >.ai-loop/agents/actuator.md <<'MD'
---
name: actuator
model: sonnet
---
Act.
MD
commit_all "$R"
run "$AILOOP" validate
expect_rc 65 "a Claude alias for codex is invalid"
expect_in "$err" ".ai-loop/agents/actuator.md:3:8: error: runner 'codex' cannot take model 'sonnet': it takes an OpenAI model" \
	"the error is where the agent file gives the model"
expect_in "$err" "model: {claude: sonnet, codex: gpt-5}" "it says how to give a model per runner"
rm -rf "$CALLS" && mkdir -p "$CALLS"
run "$AILOOP" run "remove a"
expect_rc 65 "run refuses the flow"
expect_in "$err" "actuator.md:3:8: error: runner 'codex' cannot take model 'sonnet'" \
	"run says why"
[ ! -d .ai-loop/runs ] && pass || fail "nothing started: no run directory"
expect_eq "$(git branch --list 'ai-loop/*')" "" "nothing started: no branch"
expect_eq "$(ls "$CALLS")" "" "no agent ran"

cat >.ai-loop/agents/actuator.md <<'MD'
---
name: actuator
runner: opencode
model:
  opencode: gpt-5
  claud: sonnet
---
Act.
MD
run "$AILOOP" validate
expect_rc 65 "opencode without provider/ and an unknown runner in the map"
expect_in "$err" ".ai-loop/agents/actuator.md:5:13: error: runner 'opencode' cannot take model 'gpt-5': it takes provider/model (such as anthropic/claude-sonnet-4-5)" \
	"opencode needs provider/model"
expect_in "$err" ".ai-loop/agents/actuator.md:6:3: error: unknown runner 'claud' in 'model' (known: claude, codex, gemini, aider, opencode)" \
	"an unknown runner in the map is an error at its key"

cat >.ai-loop/agents/actuator.md <<'MD'
---
name: actuator
model: {gemini: gpt-5, claude: gemini-2.5-pro}
---
Act.
MD
run "$AILOOP" validate
expect_rc 65 "entries of the map are checked against their own runner"
expect_in "$err" "actuator.md:3:17: error: runner 'gemini' cannot take model 'gpt-5': it takes a Gemini model" \
	"gemini refuses an OpenAI model"
expect_in "$err" "actuator.md:3:32: error: runner 'claude' cannot take model 'gemini-2.5-pro': it takes a Claude model" \
	"claude refuses a Gemini model"

# models.converge goes to the controller: its runner must take it
cat >.ai-loop/agents/actuator.md <<'MD'
---
name: actuator
---
Act.
MD
sed -i 's/^models: .*/models: {converge: haiku}/' .ai-loop/flow.yaml
run "$AILOOP" validate
expect_rc 65 "a Claude converge model for a codex controller"
expect_in "$err" ".ai-loop/flow.yaml:3:20: error: runner 'codex' of controller '.ai-loop/agents/controller.md' cannot take model 'haiku'" \
	"the error is at models.converge"
sed -i 's/^models: .*/models: {converge: {codex: sonnet, gemni: flash}}/' .ai-loop/flow.yaml
run "$AILOOP" validate
expect_rc 65 "a per-runner converge map is checked too"
expect_in "$err" ".ai-loop/flow.yaml:3:28: error: runner 'codex' cannot take model 'sonnet'" \
	"its entry for codex"
expect_in "$err" ".ai-loop/flow.yaml:3:36: error: unknown runner 'gemni' in 'converge'" \
	"its unknown runner"
expect_in "$err" "ailoop: 2 errors in .ai-loop/flow.yaml" "each problem once"

# a flow's own runner under a preset's name, with another program: any model
cat >.ai-loop/flow.yaml <<'YAML'
version: 1
runners:
  codex:
    command: [my-codex, "--model={model}"]
defaults: {runner: codex}
flow:
  id: fix
  type: loop
  controller: .ai-loop/agents/controller.md
  sensors: [.ai-loop/agents/sensor.md]
  actuator: {strategy: direct, agent: .ai-loop/agents/actuator.md}
YAML
sed -i 's/codex: gpt-5/codex: sonnet/' .ai-loop/agents/controller.md
run "$AILOOP" validate
expect_rc 0 "a runner the flow defines takes any model"

finish
