#!/usr/bin/env bash
# Budgets of a run (limits.max_agent_calls, limits.max_wall_seconds): the
# agent call past the limit does not start, the run is blocked (exit 4),
# and `ailoop resume` after raising the limit in flow.yaml goes on where it
# stopped. Command sensors are not agent calls; parallel children share
# one count. The record of agent calls replaced by a symbolic link or a
# FIFO is refused (exit 66), never written through.
. "$(dirname "$0")/lib.sh"

calls_file() { echo .ai-loop/runs/run_*/logs/agent-calls; }
calls() { wc -l <$(calls_file) | tr -d ' '; }
events() { cat .ai-loop/runs/run_*/events.jsonl; }

# budget_repo NAME LIMITS: a loop that fixes a b c d one per actuation
budget_repo() {
	R=$TEST_TMP/$1
	loop_repo "$R" a b c d
	one_loop "$R" fixer.md "max_iterations: 10"
	[ -z "$2" ] || printf 'limits: {%s}\n' "$2" >>"$R/.ai-loop/flow.yaml"
	commit_all "$R"
	cd "$R"
}

# --- the labels a run without limits makes ---------------------------------------
budget_repo free ""
run "$AILOOP" run "fix all"
expect_rc 0 "run without limits"
free_labels=$(labels "$R")
expect_eq "$(calls)" 4 "agent calls are counted without limits too (command sensors are not)"
run "$AILOOP" status
expect_in "$out" "agent calls:  4" "status shows the calls made"

# --- max_agent_calls: blocked after exactly the limit -----------------------------
budget_repo calls "max_agent_calls: 2"
run "$AILOOP" run "fix all"
expect_rc 4 "run past its agent-call budget"
expect_in "$err" "ailoop: blocked: agent-call budget spent: 2 agent calls made, limits.max_agent_calls is 2" \
	"the message names the budget"
expect_in "$err" "raise 'limits.max_agent_calls' in .ai-loop/flow.yaml and continue with 'ailoop resume run_" \
	"the message says what to do"
expect_in "$out" "is blocked: once you have dealt with the cause above, 'ailoop resume" "the outcome says blocked"
expect_eq "$(calls)" 2 "exactly the limit of agent calls made"
expect_eq "$(cat todo.txt | tr '\n' ' ')" "c d " "two actuations ran"
expect_eq "$(run_status)" blocked "run status blocked"
expect_in "$(events)" '"event":"budget_exhausted","limit":"max_agent_calls"' "budget event"
expect_in "$(events)" '"event":"run_blocked"' "run_blocked event"
run "$AILOOP" status
expect_in "$out" "agent calls:  2 of 2 (limits.max_agent_calls)" "status shows the budget use"
run "$AILOOP" status --json
expect_eq "$(echo "$out" | jq -c '.budget | [.agent_calls, .max_agent_calls]')" "[2,2]" \
	"status --json shows the budget use"

run "$AILOOP" resume
expect_rc 4 "resume without raising the limit is blocked again"
expect_eq "$(calls)" 2 "and starts no agent"

sed -i 's/max_agent_calls: 2/max_agent_calls: 10/' .ai-loop/flow.yaml
run "$AILOOP" resume
expect_rc 0 "resume with a raised limit completes"
expect_in "$err" "changed since run" "resume says the flow changed"
expect_in "$err" "in its limits or hooks only" "and that only its limits did"
expect_eq "$(calls)" 4 "every actuation made once"
expect_eq "$(grep -c . todo.txt)" 0 "every item fixed"
expect_eq "$(labels "$R")" "$free_labels" "the same commits as a run without limits"

# --- a flow changed beyond its limits is still refused -----------------------------
budget_repo changed "max_agent_calls: 1"
run "$AILOOP" run "fix all"
expect_rc 4 "blocked at one call"
sed -i 's/max_agent_calls: 1/max_agent_calls: 10/; s/max_iterations: 10/max_iterations: 9/' \
	.ai-loop/flow.yaml
run "$AILOOP" resume
expect_rc 65 "resume of a flow changed beyond its limits"
expect_in "$err" "resume with --force" "the message names --force"

# --- LLM sensors are agent calls ------------------------------------------------------
R=$TEST_TMP/llm
loop_repo "$R" a b
cat >"$R/.ai-loop/agents/judge.md" <<'MD'
---
name: judge
runner: fake
---
Judge.
MD
cat >"$R/.ai-loop/flow.yaml" <<'YAML'
version: 1
runners:
  fake: {command: [sh, -c, 'cat >/dev/null; echo "---"; echo "status: pass"; echo "---"'], prompt: stdin}
limits: {max_agent_calls: 3}
flow:
  id: fix
  type: loop
  controller: builtin:all-pass
  sensors: [.ai-loop/agents/sensor.md, .ai-loop/agents/judge.md]
  actuator: {strategy: direct, agent: .ai-loop/agents/fixer.md}
YAML
commit_all "$R"
cd "$R"
run "$AILOOP" run "fix all"
expect_rc 4 "LLM sensor calls count"
# judge (0), fixer (1), judge (1), then fixer of iteration 2 is the 4th
expect_eq "$(calls)" 3 "sensor agent, actuator, sensor agent"
expect_in "$err" "before actuator '.ai-loop/agents/fixer.md' of node 'fix' (iteration 2)" \
	"the message names the call that did not start"

# --- sensors measured at once: those counted run, the rest wait for the resume ------
R=$TEST_TMP/llm2
loop_repo "$R" a
cp "$TEST_TMP/llm/.ai-loop/agents/judge.md" "$R/.ai-loop/agents/"
sed 's/name: judge/name: judge2/' "$R/.ai-loop/agents/judge.md" >"$R/.ai-loop/agents/judge2.md"
sed 's/max_agent_calls: 3/max_agent_calls: 1/; s/judge.md\]/judge.md, .ai-loop\/agents\/judge2.md]\n  sensors_parallel: true/' \
	"$TEST_TMP/llm/.ai-loop/flow.yaml" >"$R/.ai-loop/flow.yaml"
commit_all "$R"
cd "$R"
run "$AILOOP" run "judge at once"
expect_rc 4 "two LLM sensors at once, one call left"
expect_eq "$(calls)" 1 "one sensor counted"
expect_eq "$(ls .ai-loop/runs/run_*/nodes/fix/logs/ | grep -c 'sensor-judge.*log')" 1 \
	"and it alone ran"
sed -i 's/max_agent_calls: 1/max_agent_calls: 10/' .ai-loop/flow.yaml
run "$AILOOP" resume
expect_rc 0 "resume measures again and completes"
# the first run's judge, then judge and judge2 at 0, the actuator, judge and judge2 at 1
expect_eq "$(calls)" 6 "every call counted once"

# --- parallel children share the count --------------------------------------------------
R=$TEST_TMP/par
export TRAIL=$TEST_TMP/par.trail
loop_repo "$R" item
scripted_agents "$R" action
{
	printf 'version: 1\nlimits: {max_agent_calls: 2}\nflow:\n  id: par\n  type: parallel\n  children:\n'
	for s in one two three; do
		printf '    - {id: %s, skill: %s}\n' "$s" "$s"
	done
} >"$R/.ai-loop/flow.yaml"
commit_all "$R"
cd "$R"
run "$AILOOP" run "in parallel"
expect_rc 4 "parallel children past the budget"
expect_eq "$(calls)" 2 "exactly two calls among three children"
expect_eq "$(wc -l <"$TRAIL" | tr -d ' ')" 2 "two actions ran"
expect_eq "$(run_status)" blocked "the parallel run is blocked"
sed -i 's/max_agent_calls: 2/max_agent_calls: 3/' .ai-loop/flow.yaml
run "$AILOOP" resume
expect_rc 0 "resume runs the third"
expect_eq "$(sort "$TRAIL" | tr '\n' ' ')" "one three two " "each child ran once"
expect_eq "$(calls)" 3 "three calls in all"

# --- max_wall_seconds ---------------------------------------------------------------------
R=$TEST_TMP/wall
loop_repo "$R" a b c
cat >"$R/.ai-loop/agents/slow.md" <<'MD'
---
name: slow
command: sleep 4.2; sh .ai-loop/agents/fix.sh
---
Fix one item, slowly.
MD
one_loop "$R" slow.md "max_iterations: 10"
printf 'limits: {max_wall_seconds: 4}\n' >>"$R/.ai-loop/flow.yaml"
commit_all "$R"
cd "$R"
run "$AILOOP" run "fix slowly"
expect_rc 4 "run past its time budget"
expect_in "$err" "ailoop: blocked: time budget spent: the run has run " "the message says the time"
expect_in "$err" " s, limits.max_wall_seconds is 4, before actuator" "and names the time budget"
expect_eq "$(calls)" 1 "one actuation started in time"
expect_in "$(events)" '"limit":"max_wall_seconds"' "budget event for the time"
sed -i 's/max_wall_seconds: 4/max_wall_seconds: 60/' .ai-loop/flow.yaml
run "$AILOOP" resume
expect_rc 0 "resume with more time completes"
expect_eq "$(calls)" 3 "three actuations in all"

# --- the time before a Ctrl-C counts after the resume ---------------------------------------
R=$TEST_TMP/wall-paused
loop_repo "$R" a b
one_loop "$R" gated.md
printf 'limits: {max_wall_seconds: 6}\n' >>"$R/.ai-loop/flow.yaml"
commit_all "$R"
cd "$R"
export GATE=$TEST_TMP/gate STARTED=$TEST_TMP/started
touch "$GATE"
rm -f "$STARTED"
"$AILOOP" run --quiet "fix slowly" >/dev/null 2>&1 &
pid=$!
wait_for "$STARTED" && pass || fail "the gated actuator started"
sleep 6.5
kill -INT "$pid"
wait "$pid" && rc=0 || rc=$?
expect_eq "$rc" 3 "the run is paused"
rm -f "$GATE"
run "$AILOOP" resume
expect_rc 4 "the resume finds the time budget spent by the work before the pause"
expect_in "$err" "time budget spent: the run has run " "counting the time before the Ctrl-C"
expect_in "$err" " s, limits.max_wall_seconds is 6, before actuator" "and naming the limit"

# --- the record of agent calls replaced by a link or a FIFO: refused ---------------------
for kind in link fifo; do
	budget_repo "record-$kind" "max_agent_calls: 1"
	run "$AILOOP" run --quiet "fix all"
	expect_rc 4 "record-$kind: blocked by the budget"
	f=$(calls_file)
	rm -f "$f"
	if [ $kind = link ]; then
		echo precious >"$TEST_TMP/victim" && ln -s "$TEST_TMP/victim" "$f"
	else
		mkfifo "$f"
	fi
	sed -i 's/max_agent_calls: 1/max_agent_calls: 100/' .ai-loop/flow.yaml
	run "$AILOOP" resume
	expect_rc 66 "record-$kind: refused"
	case $kind in
	link)
		expect_in "$err" "is a symbolic link: the record of agent calls must be a file of the run's directory" \
			"a linked record: why"
		expect_eq "$(cat "$TEST_TMP/victim")" precious "a linked record: its target is untouched" ;;
	fifo)
		expect_in "$err" "is not a plain file: the record of agent calls must be one; remove it" \
			"a FIFO for the record: why" ;;
	esac
	rm -f "$f"
	run "$AILOOP" resume
	expect_rc 0 "record-$kind: removed, the run resumes and completes"
done

finish
