#!/usr/bin/env bash
# A parallel node killed (SIGKILL) or interrupted (SIGINT) while its
# children run: one `ailoop resume` runs again only the children that had
# not finished, stops what the killed run left running, and ends with the
# same commits (the children's in any order) and the same tree as a run
# that was never stopped. A child stopped by a threshold stays skipped.
# Its flows pin `isolation: shared` (one work tree, where the children's
# files meet); the same with worktrees is t68's.
. "$(dirname "$0")/lib.sh"

export TRAIL RENDEZVOUS PIDS GATE=$TEST_TMP/gate

# par_repo NAME: before, then a parallel node of two quick actions, one
# that waits while $GATE exists and a sensor-form loop, then after
par_repo() {
	R=$TEST_TMP/$1
	TRAIL=$TEST_TMP/$1.trail RENDEZVOUS=$TEST_TMP/$1.rv PIDS=$TEST_TMP/$1.pids
	mkdir -p "$RENDEZVOUS"
	loop_repo "$R" one two
	cat >"$R/.ai-loop/flow.yaml" <<'YAML'
version: 1
flow:
  id: main
  type: sequence
  children:
    - {id: before, skill: before, agent: .ai-loop/agents/step.md}
    - id: par
      type: parallel
      isolation: shared
      children:
        - {id: quick-a, skill: quick-a, agent: .ai-loop/agents/step.md}
        - {id: quick-b, skill: quick-b, agent: .ai-loop/agents/step.md}
        - {id: gated, skill: gate-g, agent: .ai-loop/agents/step.md}
        - id: fix
          type: loop
          controller: builtin:all-pass
          sensors: [.ai-loop/agents/sensor.md]
          actuator: {strategy: direct, agent: .ai-loop/agents/fixer.md}
    - {id: after, skill: after, agent: .ai-loop/agents/step.md}
YAML
	commit_all "$R"
	cd "$R"
}

sorted_triples() { triples "$R" | sort; }
times_ran() { grep -cx "$1" "$TRAIL"; }

# starts the run in the background with the gate closed, and waits until
# every child but the gated one has committed
start_gated() {
	touch "$GATE"
	"$AILOOP" run "in parallel" >"$TEST_TMP/out" 2>"$TEST_TMP/err" &
	pid=$!
	local i=0
	until [ "$(triples "$R" | grep -c -e 'par/quick-. complete' -e 'par/fix complete')" = 3 ] &&
		[ -s "$PIDS" ] || [ $i -ge 600 ]; do
		sleep 0.05
		i=$((i + 1))
	done
	[ $i -lt 600 ] && pass || fail "the children did not get going: $(cat "$TEST_TMP/err")"
}

# the reference: never stopped
par_repo reference
run "$AILOOP" run "in parallel"
expect_rc 0 "reference run"
ref_triples=$(sorted_triples)
ref_tree=$(code_tree "$R")
expect_eq "$(triples "$R" | tail -2 | tr '\n' ',')" "0 main/after complete,0 main complete," \
	"after the parallel node, the sequence goes on"

# --- SIGKILL while the gated child works --------------------------------------------------
par_repo killed
start_gated
{ kill -KILL "$pid" && wait "$pid"; } 2>/dev/null
agent=$(head -1 "$PIDS")
# the children die with it: the work tree's lock is free again
i=0
while ! flock -n .git/ailoop.lock true && [ $i -lt 300 ]; do sleep 0.05; i=$((i + 1)); done
GATE=$TEST_TMP/open run "$AILOOP" resume # the old agent still waits at the old gate
expect_rc 0 "one resume finishes the killed run"
expect_in "$err" "ailoop: stopped " "resume stops the agent the killed child left"
group_gone "$agent" && pass || fail "the gated agent of the killed run is gone"
expect_eq "$(times_ran before) $(times_ran quick-a) $(times_ran quick-b) $(times_ran after)" \
	"1 1 1 1" "finished children did not run again"
expect_eq "$(times_ran gate-g)" "2" "the unfinished child ran again"
expect_eq "$(sorted_triples)" "$ref_triples" "the same commits as the run never stopped"
expect_eq "$(code_tree "$R")" "$ref_tree" "the same tree as the run never stopped"
expect_eq "$(git status --porcelain)" "" "the tree ends clean"
expect_eq "$(cat .ai-loop/runs/run_*/logs/agents* | grep -v '^key ')" "" "no agent is recorded at work"
rm -f "$GATE"

# --- SIGINT: the children pause with the run; resume completes it -------------------------
par_repo interrupted
start_gated
kill -INT "$pid"
wait "$pid" && rc=0 || rc=$?
expect_eq "$rc" 3 "SIGINT pauses the run (exit 3)"
expect_in "$(cat "$TEST_TMP/out")" "paused" "the outcome says paused"
group_gone "$(head -1 "$PIDS")" && pass || fail "the gated agent was stopped"
expect_in "$(cat .ai-loop/runs/run_*/nodes/main/par/orchestrator-output.md)" "children-done: cc.c" \
	"the finished children are recorded, the gated one is not"
rm -f "$GATE"
run "$AILOOP" resume
expect_rc 0 "resume after SIGINT completes the run"
expect_eq "$(times_ran quick-a) $(times_ran quick-b) $(times_ran gate-g)" "1 1 2" \
	"only the interrupted child ran again"
expect_eq "$(sorted_triples)" "$ref_triples" "the same commits as the run never stopped"
expect_eq "$(code_tree "$R")" "$ref_tree" "the same tree as the run never stopped"

# --- a child process that dies pauses the run; resume runs it again -------------------------
par_repo child-killed
start_gated
for child in $(pgrep -P "$pid"); do kill -KILL "$child"; done
wait "$pid" && rc=0 || rc=$?
expect_eq "$rc" 70 "a child process that died pauses the run (exit 70, internal error)"
expect_in "$(cat "$TEST_TMP/err")" "ailoop: error: parallel child 'main/par/gated' (process " \
	"the error names the child"
expect_in "$(cat "$TEST_TMP/err")" "died: Killed" "and how it died"
expect_in "$(cat .ai-loop/runs/run_*/run-state.md)" "status: paused" "the run is paused"
GATE=$TEST_TMP/open run "$AILOOP" resume
expect_rc 0 "resume finishes the run"
expect_in "$err" "ailoop: stopped " "resume stops the agent the dead child left"
expect_eq "$(times_ran quick-a) $(times_ran gate-g)" "1 2" "only the dead child ran again"
expect_eq "$(sorted_triples)" "$ref_triples" "the same commits as the run never stopped"
rm -f "$GATE"

# --- an agent in a child moves HEAD: the run pauses with the way back ---------------------
R=$TEST_TMP/moved
TRAIL=$TEST_TMP/moved.trail RENDEZVOUS=$TEST_TMP/moved.rv PIDS=$TEST_TMP/moved.pids
loop_repo "$R" one
cat >"$R/.ai-loop/flow.yaml" <<'YAML'
version: 1
flow:
  id: par
  type: parallel
  isolation: shared
  children:
    - {id: mover, skill: detach-m, agent: .ai-loop/agents/step.md}
    - {id: waiter, skill: gate-w, agent: .ai-loop/agents/step.md}
YAML
commit_all "$R"
cd "$R"
touch "$GATE"
run "$AILOOP" run "moved"
expect_rc 1 "HEAD moved by a child's agent pauses the run"
expect_in "$err" "ailoop: error: HEAD is detached" "the child's message reaches the user"
expect_eq "$(sed -n 's/^children-done: //p' .ai-loop/runs/run_*/nodes/par/orchestrator-output.md)" \
	".." "neither child is recorded as finished"
group_gone "$(head -1 "$PIDS")" && pass || fail "the sibling's agent was stopped"
rm -f "$GATE"
git checkout -q ai-loop/moved
run "$AILOOP" resume
expect_rc 0 "resume after HEAD is put back"
expect_eq "$(triples "$R" | sort | tr '\n' ',')" "0 par complete,0 par/mover complete,0 par/waiter complete," \
	"each child committed once"
expect_eq "$(times_ran detach-m) $(times_ran gate-w)" "1 2" "the mover's agent did not run again"

# --- a child's commit is found below a sibling's: not made twice -------------------------
# (the parent died after both children committed, before it recorded
# either: their states say "commit", and only one commit can be HEAD)
R=$TEST_TMP/recommit
TRAIL=$TEST_TMP/recommit.trail RENDEZVOUS=$TEST_TMP/recommit.rv PIDS=$TEST_TMP/recommit.pids
loop_repo "$R" one
cat >"$R/.ai-loop/flow.yaml" <<'YAML'
version: 1
flow:
  id: main
  type: sequence
  children:
    - id: par
      type: parallel
      isolation: shared
      children:
        - {id: a, skill: quick-a, agent: .ai-loop/agents/step.md}
        - {id: b, skill: quick-b, agent: .ai-loop/agents/step.md}
    - {id: then, skill: gate-then, agent: .ai-loop/agents/step.md}
YAML
commit_all "$R"
cd "$R"
touch "$GATE"
"$AILOOP" run "in parallel" >"$TEST_TMP/out" 2>"$TEST_TMP/err" &
pid=$!
for i in $(seq 600); do grep -qx gate-then "$TRAIL" 2>/dev/null && break; sleep 0.05; done
{ kill -KILL "$pid" && wait "$pid"; } 2>/dev/null
run_dir=$(ls -d .ai-loop/runs/run_*)
sed -i 's/^children-done: cc$/children-done: ../; s/^phase: done$/phase: children/; s/^status: complete$/status: running/' \
	"$run_dir/nodes/main/par/orchestrator-output.md"
sed -i 's/^child: 1$/child: 0/' "$run_dir/nodes/main/orchestrator-output.md"
for c in a b; do
	expect_eq "$(sed -n 's/^phase: //p' "$run_dir/nodes/main/par/$c/orchestrator-output.md")" "commit" \
		"child $c is in its commit phase"
done
i=0
while ! flock -n .git/ailoop.lock true && [ $i -lt 300 ]; do sleep 0.05; i=$((i + 1)); done
GATE=$TEST_TMP/open run "$AILOOP" resume
expect_rc 0 "resume with both children's commits made but not recorded"
expect_eq "$(triples "$R" | sort | tr '\n' ',')" \
	"0 main complete,0 main/par/a complete,0 main/par/b complete,0 main/then complete," \
	"each child's commit once"
expect_eq "$(times_ran quick-a) $(times_ran quick-b)" "1 1" "no agent ran again"
rm -f "$GATE"

# --- a child skipped by a threshold stays skipped after a kill ----------------------------
R=$TEST_TMP/skipped
TRAIL=$TEST_TMP/skipped.trail RENDEZVOUS=$TEST_TMP/skipped.rv PIDS=$TEST_TMP/skipped.pids
loop_repo "$R" one
cat >"$R/.ai-loop/flow.yaml" <<'YAML'
version: 1
flow:
  id: main
  type: sequence
  children:
    - id: par
      type: parallel
      isolation: shared
      success_threshold: 1
      children:
        - {id: quick, skill: quick, agent: .ai-loop/agents/step.md}
        - {id: held, skill: hold-h, agent: .ai-loop/agents/step.md}
    - {id: then, skill: gate-then, agent: .ai-loop/agents/step.md}
YAML
commit_all "$R"
cd "$R"
touch "$GATE"
"$AILOOP" run "in parallel" >"$TEST_TMP/out" 2>"$TEST_TMP/err" &
pid=$!
for i in $(seq 600); do grep -qx gate-then "$TRAIL" 2>/dev/null && break; sleep 0.05; done
{ kill -KILL "$pid" && wait "$pid"; } 2>/dev/null
rm -f "$GATE"
i=0
while ! flock -n .git/ailoop.lock true && [ $i -lt 300 ]; do sleep 0.05; i=$((i + 1)); done
run "$AILOOP" resume
expect_rc 0 "resume after the threshold stopped a child"
# (stopped early, it may not have started its agent at all)
expect_eq "$(($(times_ran hold-h) <= 1)) $(times_ran quick)" "1 1" "the skipped child does not run again"
expect_eq "$(triples "$R" | tr '\n' ',')" \
	"0 main/par/quick complete,0 main/then complete,0 main complete," \
	"no commit of the skipped child"
expect_in "$(cat .ai-loop/runs/run_*/nodes/main/par/held/orchestrator-output.md)" \
	"status: skipped" "the skipped child's state is final"

finish
