#!/usr/bin/env bash
# `ailoop agent FILE [--node PATH]` runs one agent of the flow once, as a
# run would — its prompt, environment and output file, the output read as
# the run reads it — and prints what it read, without a commit, a run, or a
# change to any run's state; the agent's own changes stay in the work tree.
. "$(dirname "$0")/lib.sh"
mkdir -p "$TEST_TMP/tmp"
export TMPDIR=$TEST_TMP/tmp

R=$TEST_TMP/project
new_repo "$R"
cd "$R"
mkdir -p .ai-loop/agents
printf 'test:\n\t@echo "== 1 failed, 3 passed in 0.03s =="; exit 1\n' >Makefile
cat >.ai-loop/flow.yaml <<'YAML'
version: 1
flow:
  id: outer
  type: loop
  controller: .ai-loop/agents/judge.md
  sensors: [.ai-loop/agents/tests.md]
  actuator:
    strategy: composite
    child:
      id: inner
      type: loop
      controller: .ai-loop/agents/judge.md
      sensors: [.ai-loop/agents/tests.md]
      actuator: {strategy: direct, agent: .ai-loop/agents/act.md}
YAML
cat >.ai-loop/agents/tests.md <<'MD'
---
name: tests
command: make test
metrics:
  passed: '(\d+) passed'
  failed: {pattern: '(\d+) failed', default: 0}
---
MD
# the controller writes what its environment and prompt hold
cat >.ai-loop/agents/judge.md <<'MD'
---
name: judge
command: 'printf -- "---\ntarget-met: false\n---\nrole %s at %s: %s\n\n## Action Plan\n\nfix it\n" "$AILOOP_ROLE" "$AILOOP_NODE_PATH" "$(cat "$AILOOP_TASK_FILE")" >"$AILOOP_OUTPUT"'
---
MD
cat >.ai-loop/agents/act.md <<'MD'
---
name: act
command: 'echo changed >>code.txt && cat "$AILOOP_INPUT" >input-seen.txt && echo "changed code.txt" >"$AILOOP_OUTPUT"'
---
MD
git add -A && git commit -qm flow
head=$(git rev-parse HEAD)

run "$AILOOP" agent .ai-loop/agents/tests.md
expect_rc 0 "a command sensor runs"
expect_in "$out" "agent .ai-loop/agents/tests.md: the sensor of node 'outer' (sensor 'tests')" "it says the role it ran in"
expect_in "$out" "status: fail" "the sensor's status, as a run reads it"
expect_in "$out" "metric passed: 3
metric failed: 1" "and its metrics"
sed -i 's/  passed: .*/  passed: '"'"'(\\d+) succeeded'"'"'/' .ai-loop/agents/tests.md
run "$AILOOP" agent .ai-loop/agents/tests.md
expect_in "$out" "metric passed: null (its pattern matched nothing)" "a metric its pattern does not find"
git checkout -q .ai-loop/agents/tests.md

run "$AILOOP" agent --node outer/inner --task "make it pass" .ai-loop/agents/judge.md
expect_rc 0 "a controller runs"
expect_in "$out" "the controller of node 'outer/inner'" "in the node asked for"
expect_in "$out" "target-met: false" "its verdict is read"
expect_in "$out" "action plan: given" "and its action plan"
expect_in "$out" "summary: role controller at outer/inner: make it pass" "with the environment and task of a run"

echo "the plan" >"$TEST_TMP/plan.md"
run "$AILOOP" agent --input "$TEST_TMP/plan.md" ./.ai-loop/agents/act.md
expect_rc 0 "an actuator runs"
expect_in "$out" "the actuator of node 'outer/inner'" "the first node that uses it"
expect_in "$out" "summary: changed code.txt" "what would be the commit subject"
expect_eq "$(cat input-seen.txt)" "the plan" "the input reached it"
expect_eq "$(cat code.txt)" "changed" "its change stays in the work tree"
expect_eq "$(git rev-parse HEAD)" "$head" "nothing is committed"
expect_eq "$(git branch --list 'ai-loop/*')" "" "no run branch is made"
expect_eq "$(ls .ai-loop/runs 2>/dev/null)" "" "no run directory is made"
expect_eq "$(ls "$TMPDIR")" "" "the call's directory is removed"

run "$AILOOP" agent --keep --input "$TEST_TMP/plan.md" .ai-loop/agents/act.md
kept=$(printf '%s\n' "$out" | sed -n 's/^files of the call (prompt, log, output): //p')
expect_in "$kept" "$TMPDIR/ailoop-agent." "--keep says where the call's files are"
expect_eq "$(cat "$kept/nodes/outer/inner/actuator-output.md")" "changed code.txt" "--keep keeps the call's files"
rm -rf "$kept"

# what cannot run
run "$AILOOP" agent .ai-loop/agents/none.md
expect_rc 64 "an agent no node uses"
expect_in "$err" "no node of .ai-loop/flow.yaml uses '.ai-loop/agents/none.md'" "says so"
run "$AILOOP" agent --node outer/nope .ai-loop/agents/act.md
expect_rc 64 "a node that does not exist"
expect_in "$err" "no node 'outer/nope'" "says so"
run "$AILOOP" agent --node outer .ai-loop/agents/act.md
expect_rc 64 "a node that does not use the agent"
expect_in "$err" "node 'outer' does not use '.ai-loop/agents/act.md'" "says so"
run "$AILOOP" agent --input "$TEST_TMP/missing.md" .ai-loop/agents/act.md
expect_rc 66 "an input that does not exist"
run env TMPDIR="$TEST_TMP/none" "$AILOOP" agent .ai-loop/agents/act.md
expect_rc 70 "no directory for the call"
expect_in "$err" "cannot make a directory for the call in '$TEST_TMP/none'" "says where"
N=$TEST_TMP/not-git
mkdir -p "$N" && cp -r .ai-loop "$N/"
(cd "$N" && "$AILOOP" agent .ai-loop/agents/act.md >/dev/null 2>"$TEST_TMP/not-git.err")
expect_eq "$?" 66 "outside a git repository"
expect_in "$(cat "$TEST_TMP/not-git.err")" "ailoop: error: " "says why"
# an agent that fails, and a controller whose output cannot be read
printf -- '---\nname: act\ncommand: echo broken; exit 3\n---\n' >.ai-loop/agents/act.md
run "$AILOOP" agent .ai-loop/agents/act.md
expect_rc 1 "an agent that fails"
expect_in "$err" "exit" "the failure is named"
printf -- '---\nname: judge\ncommand: echo no verdict >"$AILOOP_OUTPUT"\nformat_retries: 0\n---\n' >.ai-loop/agents/judge.md
run "$AILOOP" agent .ai-loop/agents/judge.md
expect_rc 1 "a controller whose output gives no verdict"
expect_in "$out" "target-met: (none)" "no verdict is read"
finish
