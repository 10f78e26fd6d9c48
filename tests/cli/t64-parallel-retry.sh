#!/usr/bin/env bash
# An agent's error (fail-fast) inside a parallel child ends the run in
# error, as it does in a loop anywhere else; once the agent is fixed,
# `ailoop resume RUN-ID` runs that child again (its failed step as its
# next iteration), the node finishes, and the flow goes on. Children
# that had finished do not run again; a sibling the error stopped
# continues.
. "$(dirname "$0")/lib.sh"

export TRAIL=$TEST_TMP/trail CALLS=$TEST_TMP/calls GATE=$TEST_TMP/gate PIDS=$TEST_TMP/pids
mkdir -p "$CALLS"
times_ran() { grep -cx "$1" "$TRAIL"; }

# flaky_repo NAME FLAKY-COMMAND: before, a parallel node of a quick action,
# an action waiting at $GATE, and a sensor-form loop whose actuator runs
# FLAKY-COMMAND, then after
flaky_repo() {
	R=$TEST_TMP/$1
	: >"$TRAIL"
	rm -f "$CALLS"/*
	loop_repo "$R" a b
	printf -- '---\nname: flaky\ncommand: %s\n---\nFails once.\n' "$2" >"$R/.ai-loop/agents/flaky.md"
	cat >"$R/.ai-loop/flow.yaml" <<'YAML'
version: 1
flow:
  id: main
  type: sequence
  children:
    - {id: before, skill: before, agent: .ai-loop/agents/step.md}
    - id: par
      type: parallel
      children:
        - {id: quick, skill: quick, agent: .ai-loop/agents/step.md}
        - {id: waits, skill: wait-w, agent: .ai-loop/agents/step.md}
        - id: fix
          type: loop
          controller: builtin:all-pass
          sensors: [.ai-loop/agents/sensor.md]
          actuator: {strategy: direct, agent: .ai-loop/agents/flaky.md}
    - {id: after, skill: after, agent: .ai-loop/agents/step.md}
YAML
	commit_all "$R"
	cd "$R"
}

# --- the reference: the agent never fails -------------------------------------------------
flaky_repo reference 'sh .ai-loop/agents/fix.sh'
run "$AILOOP" run "fix it"
expect_rc 0 "the reference run"
ref_triples=$(triples "$R" | sort)
ref_tree=$(code_tree "$R" | grep -v flaky.md)

# --- the actuator exits abnormally once -----------------------------------------------------
flaky_repo flaky 'if [ ! -e "$CALLS/flaky" ]; then touch "$CALLS/flaky"; echo "flaked" >&2; exit 3; fi; exec sh .ai-loop/agents/fix.sh'
touch "$GATE" # the waiting sibling is still at work when the error comes
run "$AILOOP" run "fix it"
expect_rc 1 "an actuator's error in a parallel child ends the run (fail-fast)"
expect_in "$err" "failed with exit status 3" "the agent's error is reported"
id=$(basename .ai-loop/runs/run_*)
expect_in "$(cat .ai-loop/runs/"$id"/run-state.md)" "status: error" "the run ended in error"
# the child works in a worktree (it writes): its error's commit is on its branch
expect_eq "$(triples "$R" ai-loop/fix-it--fix | grep -c 'main/par/fix error')" 1 \
	"the child's error is committed (on the child's branch)"
expect_eq "$(triples "$R" | grep -c '0 main/par error')" 1 \
	"the parallel node's end of the run is committed"
expect_in "$(cat .ai-loop/runs/"$id"/nodes/main/par/orchestrator-output.md)" "children-done: c.." \
	"neither the failed child nor the stopped sibling counts as finished"
expect_eq "$(git status --porcelain)" "" "the error's commit holds everything"
rm -f "$GATE"
run "$AILOOP" resume "$id"
expect_rc 0 "resume RUN-ID retries the child and the run completes"
expect_in "$err" "running the step that failed again" "resume says it retries"
expect_eq "$(times_ran before) $(times_ran quick) $(times_ran after)" "1 1 1" \
	"what had finished did not run again"
expect_eq "$(triples "$R" | tail -2 | tr '\n' ',')" "0 main/after complete,0 main complete," \
	"the parallel node completes and the sequence goes on"
expect_in "$(cat .ai-loop/runs/"$id"/nodes/main/par/result-output.md)" "status: complete" \
	"the parallel node's result is complete"
expect_eq "$(triples "$R" | grep -c 'main/par/fix complete')" 1 "the retried child completes"
expect_eq "$(triples "$R" | grep -c 'main/par/waits complete')" 1 "the stopped sibling completes"
expect_eq "$(label_paths "$R" | tr ',' '\n' | sort | uniq -d)" "" "no label of a node twice"
expect_eq "$(code_tree "$R" | grep -v flaky.md)" "$ref_tree" "the same tree as the run without the error"
expect_eq "$(times_ran wait-w)" 2 "the sibling the error stopped ran again"
expect_eq "$(triples "$R" | grep -c -e ' error$')" 2 \
	"the error's commits stay: the child's, and the parallel node's that ended the run"
expect_eq "$(git status --porcelain)" "" "clean tree after the retry"
git fsck --strict >/dev/null 2>&1 && pass || fail "git fsck --strict"

# --- the actuator's command is missing, then installed ----------------------------------------
flaky_repo missing 'sh .ai-loop/agents/not-yet.sh'
run "$AILOOP" run "fix it"
expect_rc 1 "a missing agent program in a parallel child ends the run in error"
id=$(basename .ai-loop/runs/run_*)
run "$AILOOP" resume
expect_rc 66 "resume without the run's id does not retry an error"
expect_in "$err" "no run to resume" "and says so"
cp .ai-loop/agents/fix.sh .ai-loop/agents/not-yet.sh
run "$AILOOP" resume "$id"
expect_rc 0 "resume RUN-ID runs the child again once its agent exists"
expect_eq "$(triples "$R" | tail -2 | tr '\n' ',')" "0 main/after complete,0 main complete," \
	"the flow goes on after the parallel node"
expect_eq "$(times_ran quick) $(times_ran after)" "1 1" "nothing that ended ran again"

finish
