#!/usr/bin/env bash
# ReAcTree control flow on the executor: sequence, fallback, loop-until
# without a condition, transaction; the exact path each takes, its
# commits, and a rollback that restores the tree byte for byte.
. "$(dirname "$0")/lib.sh"

export TRAIL=$TEST_TMP/trail
R=$TEST_TMP/repo
loop_repo "$R" item-1
cat >"$R/.ai-loop/flow.yaml" <<'YAML'
version: 1
flow:
  id: main
  type: sequence
  children:
    - {id: a, skill: one, agent: .ai-loop/agents/step.md}
    - id: pick
      type: fallback
      children:
        - {id: f1, skill: fail-1, agent: .ai-loop/agents/step.md}
        - {id: s1, skill: status-fail-1, agent: .ai-loop/agents/step.md}
        - {id: ok, skill: two, agent: .ai-loop/agents/step.md}
        - {id: never, skill: never, agent: .ai-loop/agents/step.md}
    - id: rep
      type: loop
      max_iterations: 2
      children:
        - {id: r, skill: rep, agent: .ai-loop/agents/step.md}
        - {id: rf, skill: fail-rep, agent: .ai-loop/agents/step.md}
    - id: tx
      type: transaction
      children:
        - {id: t1, skill: write-tx, agent: .ai-loop/agents/step.md}
        - {id: t2, skill: fail-tx, agent: .ai-loop/agents/step.md}
    - {id: after, skill: after, agent: .ai-loop/agents/step.md}
YAML
chmod 640 "$R/README"
commit_all "$R"
cd "$R"
before=$(code_tree "$R")

run "$AILOOP" run --dry-run "walk the tree"
expect_rc 0 "a dry run of ReAcTree nodes"
expect_in "$out" "main/pick: fallback" "the plan shows control nodes"
expect_in "$out" "main/rep: loop-until, at most 2 iterations" "the plan shows a loop-until"
expect_in "$out" "main/tx/t2: action, skill fail-tx" "the plan shows actions"

run "$AILOOP" run "walk the tree"
expect_rc 1 "a sequence that fails ends the run without success"
expect_eq "$(tr '\n' ' ' <"$TRAIL")" "one fail-1 status-fail-1 two rep fail-rep rep fail-rep write-tx fail-tx " \
	"the path taken"
expect_eq "$(triples "$R" | tr '\n' ',')" "0 main/a complete,0 main/pick/f1 failed,0 main/pick/s1 failed,\
0 main/pick/ok complete,1 main/rep/r complete,1 main/rep/rf failed,1 main/rep running,\
2 main/rep/r complete,2 main/rep/rf failed,2 main/rep complete,0 main/tx/t1 complete,\
0 main/tx/t2 failed,0 main/tx failed,0 main failed," "one commit per action and loop iteration, a rollback commit, the run's end"
expect_in "$(git log -1 --skip=1 --format=%s)" "rollback" "the rollback commit says so"
expect_eq "$(code_tree "$R")" "$before" "the rollback restored the tree"
expect_eq "$(cat README)" "hello" "the changed file is back"
expect_eq "$(cat todo.txt)" "item-1" "the deleted file is back"
[ ! -e created-write-tx.txt ] && pass || fail "the created file is gone"
expect_eq "$(git status --porcelain)" "" "the work tree is clean"
expect_in "$(grep -o '"event":"[a-z_]*"' .ai-loop/runs/*/events.jsonl | sort -u | tr '\n' ' ')" \
	'"event":"transaction_rollback"' "rollback event"
st=$(cat .ai-loop/runs/*/run-state.md)
expect_in "$st" "status: failed" "the run's status"

rd=$PWD/$(ls -d .ai-loop/runs/run_*)
expect_eq "$(AILOOP_RUN_DIR=$rd "$AILOOP" memory get nodes.pick.status)" "complete" \
	"the runner writes each node's status to working memory"
expect_eq "$(AILOOP_RUN_DIR=$rd "$AILOOP" memory get nodes.rep.iterations)" "2" \
	"and its iterations"
expect_eq "$(AILOOP_RUN_DIR=$rd "$AILOOP" memory get nodes.t2.status)" "failed" "a failed action's"

run "$AILOOP" status
expect_in "$out" "main/pick                      0        fallback    done       -          complete" \
	"status shows a control node, its type and how it ended"
expect_in "$out" "main/rep                       2        2 of 2      commit     -          complete" \
	"status shows a loop's iterations"
run "$AILOOP" log --oneline
expect_in "$out" "main/pick/ok" "log shows actions"
expect_eq "$(printf '%s\n' "$out" | grep -c .)" 14 "log shows every commit of the run"

finish
