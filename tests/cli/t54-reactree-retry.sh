#!/usr/bin/env bash
# An agent's error (fail-fast) in a sensor-form loop inside ReAcTree nodes:
# the run ends in error with every enclosing node's result written, and
# `ailoop resume RUN-ID` retries the failed step, after which the enclosing
# sequence goes on with its next child; nothing that ended runs again.
. "$(dirname "$0")/lib.sh"

export TRAIL=$TEST_TMP/trail CALLS=$TEST_TMP/calls
mkdir -p "$CALLS"
R=$TEST_TMP/repo
loop_repo "$R" a b
cat >"$R/.ai-loop/agents/flaky.md" <<'MD'
---
name: flaky
command: 'if [ ! -e "$CALLS/flaky" ]; then touch "$CALLS/flaky"; echo "flaked" >&2; exit 3; fi; exec sh .ai-loop/agents/fix.sh'
---
Fails once.
MD
cat >"$R/.ai-loop/flow.yaml" <<'YAML'
version: 1
flow:
  id: main
  type: sequence
  children:
    - {id: before, skill: before, agent: .ai-loop/agents/step.md}
    - id: work
      type: loop
      max_iterations: 2
      children:
        - id: fix
          type: loop
          controller: builtin:all-pass
          sensors: [.ai-loop/agents/sensor.md]
          actuator: {strategy: direct, agent: .ai-loop/agents/flaky.md}
        - {id: note, skill: note, agent: .ai-loop/agents/step.md}
    - {id: after, skill: after, agent: .ai-loop/agents/step.md}
YAML
commit_all "$R"
cd "$R"

run "$AILOOP" run "fix it"
expect_rc 1 "an actuator's error ends the run (fail-fast)"
id=$(basename .ai-loop/runs/run_*)
expect_eq "$(triples "$R" | tail -1)" "1.1 main/work/fix error" "the error is committed"
expect_in "$(cat .ai-loop/runs/"$id"/run-state.md)" "status: error" "the run ended in error"
expect_in "$(cat .ai-loop/runs/"$id"/nodes/main/work/result-output.md)" "status: error" \
	"the enclosing loop-until's result is written"
expect_eq "$(git status --porcelain)" "" "the error's commit holds everything"
run "$AILOOP" resume "$id"
expect_rc 0 "resume RUN-ID retries the step and the run completes"
expect_eq "$(tr '\n' ' ' <"$TRAIL")" "before note note after " "nothing that ended ran again"
expect_eq "$(triples "$R" | tr '\n' ',')" "0 main/before complete,1.0 main/work/fix running,\
1.1 main/work/fix error,1.2 main/work/fix running,1.3 main/work/fix running,1.4 main/work/fix complete,\
1 main/work/note complete,\
1 main/work running,2.0 main/work/fix running,2.1 main/work/fix complete,2 main/work/note complete,\
2 main/work complete,0 main/after complete,0 main complete," \
	"the retry is the failed node's next iteration, and the tree goes on"
expect_eq "$(label_paths "$R" | tr ',' '\n' | sort | uniq -d)" "" "no label of a node twice"
expect_eq "$(git status --porcelain)" "" "clean tree after the retry"

finish
