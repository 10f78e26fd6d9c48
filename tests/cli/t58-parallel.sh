#!/usr/bin/env bash
# The parallel node: its children run at once as processes of their own
# (at most max_concurrency); success_threshold and failure_threshold decide
# as soon as they can, and the children still running are then stopped,
# with no process left, and recorded as skipped; the children's commits
# are serialized; it runs inside a sequence inside a loop-until, and a
# sensor-form loop runs as one of its children. Its flows pin
# `isolation: shared` where they check the commits of children that fail
# (with worktrees, those stay on the children's branches: t67) and the
# serialization of commits in one work tree; the loop-until and break_loop
# flows take the default (worktrees: their children write).
. "$(dirname "$0")/lib.sh"

export TRAIL RENDEZVOUS PIDS

# par_repo NAME THRESHOLDS SKILL...: a repository whose flow is a parallel
# node `par` (THRESHOLDS: extra keys, e.g. "success_threshold: 1") with
# one action per SKILL (its id); then runs it
par_repo() {
	local name=$1 attrs=$2 skill
	shift 2
	R=$TEST_TMP/$name
	TRAIL=$TEST_TMP/$name.trail RENDEZVOUS=$TEST_TMP/$name.rv PIDS=$TEST_TMP/$name.pids
	mkdir -p "$RENDEZVOUS"
	loop_repo "$R" item
	{
		printf 'version: 1\nflow:\n  id: par\n  type: parallel\n  isolation: shared\n'
		[ -z "$attrs" ] || printf '  %s\n' "$attrs"
		printf '  children:\n'
		for skill in "$@"; do
			printf '    - {id: %s, skill: %s, agent: .ai-loop/agents/step.md}\n' \
				"$skill" "$skill"
		done
	} >"$R/.ai-loop/flow.yaml"
	commit_all "$R"
	cd "$R"
	start=$(date +%s)
	run "$AILOOP" run "in parallel"
	took=$(($(date +%s) - start))
}

ran() { sort "$TRAIL" | tr '\n' ' '; }
commits() { triples "$R" | sort | tr '\n' ','; }
state_of() { sed -n 's/^status: //p' "$(ls -d .ai-loop/runs/run_*)/nodes/par/$1/orchestrator-output.md"; }
no_agent_left() {
	local pid
	[ -s "$PIDS" ] || return 0
	for pid in $(cat "$PIDS"); do
		group_gone "$pid" || return 1
	done
}

# --- defaults: all run at once (two rendezvous), all must succeed -------------------------
par_repo all "" meet-a-b meet-b-a plain
expect_rc 0 "all children succeed: the node succeeds"
expect_eq "$(ran)" "meet-a-b meet-b-a plain " "every child ran once"
expect_eq "$(commits)" "0 par complete,0 par/meet-a-b complete,0 par/meet-b-a complete,0 par/plain complete," \
	"each child's commit, then the run's end"
expect_eq "$(triples "$R" | tail -1)" "0 par complete" "the run's end comes last"
expect_in "$err" "child meet-a-b started" "progress names the children started"
expect_eq "$(git status --porcelain)" "" "the tree ends clean"
expect_eq "$(sed -n 's/^children-done: //p' .ai-loop/runs/run_*/nodes/par/orchestrator-output.md)" \
	"ccc" "children-done records each end"

# --- success_threshold 1 of 3: the first success stops the others --------------------------
par_repo first "success_threshold: 1" quick hold-x hold-y
expect_rc 0 "one success is enough"
expect_eq "$(commits)" "0 par complete,0 par/quick complete," \
	"only the finished child committed"
[ "$took" -lt 20 ] && pass || fail "the others were stopped, not waited for (${took}s)"
expect_eq "$(state_of hold-x)" "skipped" "a stopped child is recorded as skipped"
expect_in "$(cat .ai-loop/runs/run_*/events.jsonl)" '"event":"parallel_stop"' "parallel_stop event"
expect_in "$(grep parallel_stop .ai-loop/runs/run_*/events.jsonl)" '"skipped":["hold-x","hold-y"]' \
	"the event names the skipped children"
expect_in "$(cat .ai-loop/runs/run_*/nodes/par/hold-x/result-output.md)" "status: skipped" \
	"the skipped child's result says so"
no_agent_left && pass || fail "no agent of a stopped child is left"
expect_eq "$(git status --porcelain)" "" "the tree ends clean after stopping"

# --- a stopped child's nodes below it are skipped too: none stays "running" ---------------
R=$TEST_TMP/below
TRAIL=$TEST_TMP/below.trail PIDS=$TEST_TMP/below.pids
loop_repo "$R" item
cat >"$R/.ai-loop/flow.yaml" <<'YAML'
version: 1
flow:
  id: par
  type: parallel
  isolation: shared
  success_threshold: 1
  children:
    - id: seq
      type: sequence
      children:
        - {id: first, skill: plain-first, agent: .ai-loop/agents/step.md}
        - {id: held, skill: hold-held, agent: .ai-loop/agents/step.md}
    - {id: later, skill: sleep-1, agent: .ai-loop/agents/step.md}
YAML
commit_all "$R"
cd "$R"
run "$AILOOP" run "in parallel"
expect_rc 0 "one success is enough, with a sequence stopped half-way"
expect_eq "$(state_of seq)" "skipped" "the stopped sequence is skipped"
expect_eq "$(state_of seq/held)" "skipped" "and so is the action it was running"
expect_in "$(cat .ai-loop/runs/run_*/nodes/par/seq/held/orchestrator-output.md)" "phase: done" \
	"whose state is final"
expect_in "$(git show "HEAD:$(ls -d .ai-loop/runs/run_*)/nodes/par/seq/held/orchestrator-output.md")" \
	"status: skipped" "as the last commit records it"
expect_eq "$(state_of seq/first)" "complete" "what the sequence finished stays complete"
run "$AILOOP" status --json
expect_eq "$(printf '%s' "$out" | jq -r '[.nodes[] | select(.status == "running")] | length')" 0 \
	"status shows no node running in the finished run"
no_agent_left && pass || fail "no agent of the stopped sequence is left"

# --- failure_threshold 2: one failure is not enough, two are ------------------------------
par_repo tolerate "success_threshold: 2
  failure_threshold: 2" fail-now ok1 sleep-1 hold-v
expect_rc 0 "one failure under failure_threshold 2 does not fail the node"
expect_eq "$(commits)" "0 par complete,0 par/fail-now failed,0 par/ok1 complete,0 par/sleep-1 complete," \
	"the failure is committed; two successes end the node"
expect_eq "$(state_of hold-v)" "skipped" "the fourth child is no longer needed"
no_agent_left && pass || fail "no agent of the stopped child is left"

par_repo two-fail "success_threshold: 1
  failure_threshold: 2" fail-1 fail-2 hold-z
expect_rc 1 "two failures under failure_threshold 2 fail the node"
expect_eq "$(commits)" "0 par failed,0 par/fail-1 failed,0 par/fail-2 failed," \
	"both failures committed, then the node's failure"
expect_in "$(ran)" "fail-1 fail-2 " "both failing children ran"
expect_eq "$(state_of hold-z)" "skipped" "the running child is skipped"
[ "$took" -lt 20 ] && pass || fail "the running child was stopped at once (${took}s)"
no_agent_left && pass || fail "no agent of the stopped child is left"
expect_in "$(cat .ai-loop/runs/run_*/run-state.md)" "status: failed" "the run failed"

# --- success becomes impossible: all needed (the default), one fails -----------------------
par_repo impossible "" hold-p fail-q hold-r
expect_rc 1 "a failure when every child must succeed fails the node at once"
expect_eq "$(commits)" "0 par failed,0 par/fail-q failed," "only the failure is committed"
[ "$took" -lt 20 ] && pass || fail "the others were stopped at once (${took}s)"
expect_eq "$(state_of hold-p) $(state_of hold-r)" "skipped skipped" "both others are skipped"
expect_in "$(cat .ai-loop/runs/run_*/nodes/par/result-output.md)" "children failed" \
	"the node's result says why"
no_agent_left && pass || fail "no agent of the stopped children is left"

par_repo needs-three "success_threshold: 3
  failure_threshold: 3" ok fail-1 fail-2 hold-w
expect_rc 1 "success_threshold 3 of 4 fails once two failed"
expect_eq "$(commits)" "0 par failed,0 par/fail-1 failed,0 par/fail-2 failed,0 par/ok complete," \
	"failed before failure_threshold was reached"
expect_eq "$(state_of hold-w)" "skipped" "the child still running is skipped"
no_agent_left && pass || fail "no agent of the stopped child is left"

# --- an agent's error (on_error fail-fast) in a child ends the run in error ----------------
R=$TEST_TMP/error
TRAIL=$TEST_TMP/error.trail RENDEZVOUS=$TEST_TMP/error.rv PIDS=$TEST_TMP/error.pids
loop_repo "$R" item
cat >"$R/.ai-loop/flow.yaml" <<'YAML'
version: 1
flow:
  id: par
  type: parallel
  isolation: shared
  children:
    - id: broken
      type: loop
      controller: builtin:all-pass
      sensors: [.ai-loop/agents/sensor.md]
      actuator: {strategy: direct, agent: .ai-loop/agents/failing.md}
    - {id: hold-e, skill: hold-e, agent: .ai-loop/agents/step.md}
YAML
commit_all "$R"
cd "$R"
run "$AILOOP" run "error"
expect_rc 1 "an agent's error in a child ends the run"
expect_in "$err" "error: actuator '.ai-loop/agents/failing.md' failed with exit status 3" \
	"the agent's error is reported"
expect_eq "$(triples "$R" | tr '\n' ',')" "0 par/broken running,1 par/broken error,0 par error," \
	"the child's error commit, then the run's last commit"
expect_in "$(cat .ai-loop/runs/run_*/run-state.md)" "status: error" "the run ended in error"
expect_eq "$(state_of hold-e)" "running" "the sibling still running pauses: a retry continues it"
no_agent_left && pass || fail "no agent of the stopped sibling is left"
run "$AILOOP" resume
expect_rc 66 "a plain resume leaves a run in error alone"

# --- max_concurrency 1: one at a time, in order ----------------------------------------------
par_repo one-by-one "max_concurrency: 1" solo-1 solo-2 solo-3
expect_rc 0 "max_concurrency 1"
expect_eq "$(tr '\n' ' ' <"$TRAIL")" "solo-1 solo-2 solo-3 " "one after the other, in order"
[ ! -e "$RENDEZVOUS/overlaps" ] && pass || fail "two ran at once: $(cat "$RENDEZVOUS/overlaps")"
par_repo two-by-two "max_concurrency: 2" meet-a-b meet-b-a solo-3
expect_rc 0 "max_concurrency 2 runs two at once"
expect_eq "$(tail -1 "$TRAIL")" "solo-3" "the third starts when one of the first two ended"

# --- a parallel node in a sequence in a loop-until; a sensor-form loop as its child --------
R=$TEST_TMP/nested
TRAIL=$TEST_TMP/nested.trail RENDEZVOUS=$TEST_TMP/nested.rv PIDS=$TEST_TMP/nested.pids
mkdir -p "$RENDEZVOUS"
loop_repo "$R" one two
cat >"$R/.ai-loop/flow.yaml" <<'YAML'
version: 1
flow:
  id: rounds
  type: loop
  max_iterations: 2
  children:
    - id: seq
      type: sequence
      children:
        - {id: before, skill: before, agent: .ai-loop/agents/step.md}
        - id: par
          type: parallel
          children:
            - {id: side, skill: side, agent: .ai-loop/agents/step.md}
            - id: fix
              type: loop
              controller: builtin:all-pass
              sensors: [.ai-loop/agents/sensor.md]
              actuator: {strategy: direct, agent: .ai-loop/agents/fixer.md}
        - {id: after, skill: after, agent: .ai-loop/agents/step.md}
YAML
commit_all "$R"
cd "$R"
run "$AILOOP" run "nested"
expect_rc 0 "parallel inside a sequence inside a loop-until"
expect_eq "$(tr '\n' ' ' <"$TRAIL" | sed 's/side after/X after/g; s/side //g; s/X/side/g')" \
	"before side after before side after " "each round runs the sequence, the parallel node in it"
expect_eq "$(commits)" "$(printf '%s\n' "1 rounds running" "1 rounds/seq/before complete" \
	"1 rounds/seq/par/side complete" "1.0 rounds/seq/par/fix running" \
	"1.1 rounds/seq/par/fix running" "1.2 rounds/seq/par/fix running" \
	"1.3 rounds/seq/par/fix complete" "1 rounds/seq/after complete" \
	"2 rounds complete" "2 rounds/seq/before complete" "2 rounds/seq/par/side complete" \
	"2.0 rounds/seq/par/fix running" "2.1 rounds/seq/par/fix complete" "2 rounds/seq/after complete" | sort | tr '\n' ',')" \
	"every commit of both rounds, the sensor-form loop's in its own labels"
expect_eq "$(cat todo.txt)" "" "the sensor-form loop fixed every item"
expect_eq "$(git status --porcelain)" "" "the tree ends clean"

# --- break_loop in a parallel child ends the loop around the parallel node ----------------
R=$TEST_TMP/break
TRAIL=$TEST_TMP/break.trail RENDEZVOUS=$TEST_TMP/break.rv PIDS=$TEST_TMP/break.pids
loop_repo "$R" item
cat >"$R/.ai-loop/flow.yaml" <<'YAML'
version: 1
flow:
  id: rounds
  type: loop
  max_iterations: 3
  children:
    - id: par
      type: parallel
      children:
        - {id: stop, skill: break_loop}
        - {id: side, skill: side, agent: .ai-loop/agents/step.md}
    - {id: rest, skill: rest, agent: .ai-loop/agents/step.md}
YAML
commit_all "$R"
cd "$R"
run "$AILOOP" run "break"
expect_rc 0 "break_loop from a parallel child"
expect_eq "$(tr '\n' ' ' <"$TRAIL")" "side " \
	"the loop ends once its current child, the parallel node, ended"
expect_in "$(triples "$R" | tail -1)" "1 rounds complete" "one iteration, then the loop's end"

# --- parallel in parallel: all five processes at once; a parallel node's timeout --------
R=$TEST_TMP/deep
TRAIL=$TEST_TMP/deep.trail RENDEZVOUS=$TEST_TMP/deep.rv PIDS=$TEST_TMP/deep.pids
mkdir -p "$RENDEZVOUS"
loop_repo "$R" item
cat >"$R/.ai-loop/flow.yaml" <<'YAML'
version: 1
flow:
  id: outer
  type: parallel
  isolation: shared
  children:
    - {id: a, skill: meet-a-b, agent: .ai-loop/agents/step.md}
    - id: inner
      type: parallel
      isolation: shared
      children:
        - {id: b, skill: meet-b-c, agent: .ai-loop/agents/step.md}
        - {id: c, skill: meet-c-a, agent: .ai-loop/agents/step.md}
    - id: slow
      type: parallel
      isolation: shared
      timeout_seconds: 5
      children:
        - {id: s1, skill: hold-s1, agent: .ai-loop/agents/step.md}
YAML
commit_all "$R"
cd "$R"
run "$AILOOP" run "deep"
expect_rc 1 "a child that timed out fails the outer node"
expect_eq "$(commits)" "0 outer failed,0 outer/a complete,0 outer/inner/b complete,0 outer/inner/c complete,0 outer/slow/s1 timeout," \
	"the nested children meet (all ran at once) and commit"
expect_in "$(cat .ai-loop/runs/run_*/nodes/outer/slow/orchestrator-output.md)" "status: timeout" \
	"the parallel node whose time ran out ends in timeout"
no_agent_left && pass || fail "the timed-out agent is gone"

finish
