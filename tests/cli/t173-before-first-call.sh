#!/usr/bin/env bash
# Before the first paid call: `run --dry-run` prints the plan of a flow
# whose CLI is not installed and says which is missing; `setup --runner X`
# writes, for every runner and template, a flow that `validate` has no
# warning about; and every flow setup writes has limits, which the dry run
# shows.
. "$(dirname "$0")/lib.sh"

R=$TEST_TMP/project
new_repo "$R"
printf 'test:\n\t@true\n' >"$R/Makefile"
git -C "$R" add Makefile && git -C "$R" commit -qm make
cd "$R"

for runner in claude codex gemini aider opencode; do
	for template in single nested three-level tdd reactree-tdd demo; do
		rm -rf .ai-loop
		run "$AILOOP" setup --yes --force --runner "$runner" --template "$template"
		expect_rc 0 "setup --runner $runner --template $template"
		run "$AILOOP" validate
		expect_rc 0 "$runner $template validates"
		expect_not_in "$err" "warning" "setup --runner $runner --template $template writes no flow validate warns about"
		expect_in "$(cat .ai-loop/flow.yaml)" "  max_agent_calls: 200" "the $template flow limits the agent calls"
		expect_in "$(cat .ai-loop/flow.yaml)" "  max_wall_seconds: 14400" "the $template flow limits the run's time"
	done
done
# the tool lists stay, as comments, for a runner that cannot enforce them
expect_in "$(cat .ai-loop/agents/loop-actuator.md)" \
	"# runner 'opencode' cannot enforce a tool list:
# tools: Read, Edit, Write, Grep, Glob, Bash(make:*)" "the actuator's tools are a comment for opencode"

# No CLI of the flow is installed (PATH holds none): the dry run still
# prints the whole plan, names what is missing, and exits 0.
rm -rf .ai-loop
run "$AILOOP" setup --yes --runner gemini --template nested
git add -A && git commit -qm setup
mkdir -p "$TEST_TMP/nobin"
for tool in git sh make; do ln -sf "$(command -v $tool)" "$TEST_TMP/nobin/$tool"; done
run env PATH="$TEST_TMP/nobin" "$AILOOP" run --dry-run "make the tests pass"
expect_rc 0 "a dry run of a flow whose CLI is not installed"
expect_in "$out" "controller: .ai-loop/agents/loop-controller-outer.md" "the plan is printed"
expect_in "$out" "gemini" "with the command lines of the missing CLI"
expect_in "$out" "limits: at most 200 agent calls, 14400 s of the run's time" "the plan shows the limits"
expect_in "$err" "warning: runner 'gemini' is not installed ('gemini' is not in PATH); install it: npm install -g @google/gemini-cli; agents: .ai-loop/agents/loop-controller-outer.md, " \
	"the dry run names the runner that is missing, and its agents"
expect_in "$err" "a run would stop before its first agent call (exit 69)" "and what a run would do"
run env PATH="$TEST_TMP/nobin" "$AILOOP" run --dry-run --json "make the tests pass"
expect_rc 0 "a dry run as JSON of a flow whose CLI is not installed"
expect_eq "$(printf '%s' "$out" | jq -r '.not_installed[0]' | cut -c1-40)" "runner 'gemini' is not installed ('gemin" \
	"the JSON plan names what is not installed"
# a real run still stops before anything
run env PATH="$TEST_TMP/nobin" "$AILOOP" run "make the tests pass"
expect_rc 69 "a run of a flow whose CLI is not installed"

# A flow without limits: the dry run says so.
sed -i '/^limits:/,/^  max_wall_seconds/d' .ai-loop/flow.yaml
git commit -qam "no limits"
run env PATH="$TEST_TMP/nobin" "$AILOOP" run --dry-run "make the tests pass"
expect_in "$out" "limits: none: the run may make any number of agent calls" "a dry run says a flow is unlimited"
finish
