#!/usr/bin/env bash
# The task never runs as shell code through a runner: a runner that puts
# {prompt} (or {task}) into the script of `sh -c`, or whose bare `sh -c`
# would take the prompt as its script, is refused by `run` before anything
# starts (exit 65, at its position); the safe form, the prompt as an
# argument after the script, hands the task over byte for byte.
. "$(dirname "$0")/lib.sh"

R=$TEST_TMP/repo
new_repo "$R"
mkdir -p "$R/.ai-loop/agents"
cat >"$R/.ai-loop/agents/say.md" <<'MD'
---
name: say
runner: shell
---
Task: {task}
MD
cat >"$R/.ai-loop/agents/said.md" <<'MD'
---
name: said
command: test -f said.txt
---
MD
# flow RUNNER-COMMAND: a loop whose actuator goes through the runner
# `shell` (prompt: arg) until it has said something
flow() {
	cat >"$R/.ai-loop/flow.yaml" <<YAML
version: 1
runners:
  shell:
    command: $1
    prompt: arg
flow:
  id: say
  type: loop
  controller: builtin:all-pass
  sensors: [.ai-loop/agents/said.md]
  actuator: {agent: .ai-loop/agents/say.md}
  termination: {max_iterations: 1}
YAML
	commit_all "$R" "flow: $1"
}
cd "$R"
task='x"; touch pwned; echo "$(touch pwned2)`touch pwned3`'"'; touch pwned4 #"

# --- the prompt inside the script: refused, nothing runs -------------------------------
flow "[sh, -c, 'printf \"%s\" \"{prompt}\" >said.txt']"
commits=$(git rev-list --count --all)
run "$AILOOP" run "$task"
expect_rc 65 "{prompt} in the script: refused"
expect_in "$err" ".ai-loop/flow.yaml:4:23: error: runner 'shell' puts {prompt} into a shell script" \
	"{prompt} in the script: said where"
expect_eq "$(ls)" "README" "{prompt} in the script: nothing ran, no run was made"
expect_eq "$(git rev-list --count --all)" "$commits" "{prompt} in the script: no commit"

flow "[env, bash, -c]"
run "$AILOOP" run "$task"
expect_rc 65 "a bare sh -c: refused"
expect_in "$err" ".ai-loop/flow.yaml:4:14: error: runner 'shell' runs a shell with -c but no script" \
	"a bare sh -c: said where"
expect_eq "$(ls)" "README" "a bare sh -c: nothing ran"

run "$AILOOP" run --dry-run "$task"
expect_rc 65 "a dry run checks it too"

# --- the prompt as an argument after the script: the task arrives as written ----------
flow "[sh, -c, 'printf \"%s\" \"\$1\" >said.txt', sh, \"{prompt}\"]"
run "$AILOOP" run "$task"
expect_rc 0 "the prompt as an argument: the run succeeds"
expect_in "$(cat said.txt)" "Task: $task" "the agent got the task byte for byte"
for f in pwned pwned2 pwned3 pwned4; do
	[ ! -e "$f" ] && pass || fail "the task ran as shell code: $f exists"
done

finish
