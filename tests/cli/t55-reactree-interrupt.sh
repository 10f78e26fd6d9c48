#!/usr/bin/env bash
# Ctrl-C in a ReAcTree run: the action at work is stopped, the run pauses
# (exit 3), and one `ailoop resume` runs that action again and goes on;
# what had ended does not run again.
. "$(dirname "$0")/lib.sh"

export TRAIL=$TEST_TMP/trail GATE=$TEST_TMP/gate
R=$TEST_TMP/repo
loop_repo "$R" a
cat >"$R/.ai-loop/flow.yaml" <<'YAML'
version: 1
flow:
  id: main
  type: sequence
  children:
    - {id: first, skill: first, agent: .ai-loop/agents/step.md}
    - id: pick
      type: fallback
      children:
        - {id: slow, skill: wait-gate, agent: .ai-loop/agents/step.md}
        - {id: never, skill: never, agent: .ai-loop/agents/step.md}
    - {id: last, skill: last, agent: .ai-loop/agents/step.md}
YAML
commit_all "$R"
cd "$R"

touch "$GATE"
"$AILOOP" run "go" >"$TEST_TMP/out" 2>"$TEST_TMP/err" &
pid=$!
i=0
until grep -q wait-gate "$TRAIL" 2>/dev/null || [ $i -gt 200 ]; do sleep 0.05; i=$((i + 1)); done
kill -INT $pid
wait $pid && rc=0 || rc=$?
expect_eq "$rc" 3 "Ctrl-C pauses the run"
expect_in "$(cat .ai-loop/runs/run_*/run-state.md)" "status: paused" "the run is paused"
expect_in "$(cat .ai-loop/runs/run_*/run-state.md)" "- main/pick/slow" "its stack reaches the action"
rm "$GATE"
run "$AILOOP" resume
expect_rc 0 "one resume finishes the run"
expect_eq "$(tr '\n' ' ' <"$TRAIL")" "first wait-gate wait-gate last " \
	"the interrupted action runs again, the rest once"
expect_eq "$(triples "$R" | tr '\n' ',')" \
	"0 main/first complete,0 main/pick/slow complete,0 main/last complete,0 main complete," \
	"each action committed once"
expect_eq "$(git status --porcelain)" "" "clean tree"

finish
