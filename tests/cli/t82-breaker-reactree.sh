#!/usr/bin/env bash
# The circuit breaker of a ReAcTree loop (children and a condition, no
# sensors) is off unless its termination or defaults.termination gives a
# limit: a retry loop repeats identical attempts by design and runs to its
# max_iterations. With a limit, iterations that change no file and whose
# children end as before open it (exit 4, blocked); children whose results
# change are progress; resume resets it. A breaker inside a composite actuator blocks
# the whole run and resumes there. The termination keys of the breaker and
# the exit gate are validated, each error at its FILE:LINE:COL.
. "$(dirname "$0")/lib.sh"

export TRAIL=$TEST_TMP/trail GO=$TEST_TMP/go
tries() { grep -c . "$TRAIL" 2>/dev/null || echo 0; }

# --- without a limit, a ReAcTree loop that changes nothing runs its iterations -----
R=$TEST_TMP/retry
new_repo "$R"
scripted_agents "$R" act
cat >"$R/.ai-loop/flow.yaml" <<'YAML'
version: 1
flow:
  id: retry
  type: loop
  condition: {type: observation_check, key: done, operator: equals, value: "yes"}
  max_iterations: 4
  children:
    - id: note
      type: action
      agent: .ai-loop/agents/note.md
YAML
cat >"$R/.ai-loop/agents/note.md" <<'MD'
---
name: note
command: [sh, -c, 'printf -- "---\\nmemory:\\n  tried: %s\\n---\\n" "$AILOOP_ITERATION" >"$AILOOP_OUTPUT"']
---
Try once more.
MD
commit_all "$R"
cd "$R"
run "$AILOOP" run "try until done"
expect_rc 1 "a retry loop writing only working memory runs to max_iterations"
expect_in "$out" "max-iterations-reached" "and ends there, not blocked"
expect_not_in "$err" "circuit breaker" "no breaker without a limit"
expect_eq "$(run_status)" "max-iterations-reached" "the run ends as a retry that never succeeded does"
expect_eq "$(git log --format=%s | grep -c '^ai-loop\[retry > note\]')" 4 "four attempts"
sed -i 's/^version: 1$/version: 1\ndefaults:\n  termination: {same_error_limit: 2, no_progress_limit: 2}/' .ai-loop/flow.yaml
commit_all "$R"
run "$AILOOP" run "again, with a limit in defaults"
expect_rc 4 "defaults.termination's limit turns the breaker on"
expect_in "$err" "circuit breaker open at node 'retry'" "the breaker opened"

# --- with its limit, a ReAcTree loop that changes nothing: blocked after 3 iterations ---
R=$TEST_TMP/poll
new_repo "$R"
scripted_agents "$R" act
cat >"$TEST_TMP/plan-go" <<'SH'
if [ -e "$GO" ]; then creates done.txt; fi
SH
export PLAN=$TEST_TMP/plan-go
cat >"$R/.ai-loop/flow.yaml" <<'YAML'
version: 1
flow:
  id: poll
  type: loop
  condition: {type: file_exists, path: done.txt, operator: exists}
  max_iterations: 10
  termination: {no_progress_limit: 3}
  children:
    - {id: look, agent: .ai-loop/agents/act.md, skill: look}
YAML
commit_all "$R"
cd "$R"
run "$AILOOP" run "wait for done"
expect_rc 4 "a ReAcTree loop without progress is blocked"
expect_eq "$(tries)" 3 "after exactly three iterations"
expect_in "$err" "circuit breaker open at node 'poll': no progress in 3 iterations (1 to 3): no file changed and every child ended as before" \
	"the message says what did not change"
expect_eq "$(run_status)" "blocked" "the run is blocked"
expect_eq "$("$AILOOP" status --json | jq -r '.nodes[] | select(.node_path == "poll") | .status')" \
	"blocked" "the loop is blocked"
expect_eq "$("$AILOOP" status --json | jq -r '.nodes[] | select(.node_path == "poll/look") | has("breaker")')" \
	"false" "an action has no breaker"
touch "$GO"
run "$AILOOP" resume
expect_rc 0 "resumed, the child now makes progress: complete"
expect_in "$err" "circuit breaker reset" "the reset is said"
expect_eq "$(tries)" 4 "one more iteration did it"
expect_eq "$(run_status)" "complete" "the run completes"
rm -f "$GO"

# --- children whose results change are progress ------------------------------------
R=$TEST_TMP/flip
: >"$TRAIL"
new_repo "$R"
scripted_agents "$R" act
cat >"$TEST_TMP/plan-flip" <<'SH'
if [ $((n % 2)) -eq 1 ]; then fails; fi
SH
export PLAN=$TEST_TMP/plan-flip
cat >"$R/.ai-loop/flow.yaml" <<'YAML'
version: 1
flow:
  id: flip
  type: loop
  condition: {type: file_exists, path: done.txt, operator: exists}
  max_iterations: 6
  children:
    - {id: try, agent: .ai-loop/agents/act.md, skill: try}
YAML
commit_all "$R"
cd "$R"
run "$AILOOP" run "flip"
expect_rc 1 "a child that fails and succeeds by turns is not blocked"
expect_in "$out" "max-iterations-reached" "it runs to max iterations"
expect_eq "$(tries)" 6 "all six iterations ran"

# --- a breaker in a composite child blocks the run; resume goes on there ----------
R=$TEST_TMP/nested
export CALLS=$TEST_TMP/nested-calls
loop_repo "$R" a b
cat >"$R/.ai-loop/agents/idle.md" <<'MD'
---
name: idle
command: 'echo x >>"$CALLS"; if [ -e "$GO" ]; then sh .ai-loop/agents/fix.sh; else echo "looked, changed nothing"; fi'
---
MD
two_loops "$R" idle.md "max_iterations: 8" "max_iterations: 3"
commit_all "$R"
cd "$R"
run "$AILOOP" run "nested"
expect_rc 4 "the inner loop's breaker blocks the run"
expect_in "$err" "circuit breaker open at node 'outer/inner': no progress in 3 iterations (1.1 to 1.3)" \
	"the message names the inner node and its labels"
expect_eq "$("$AILOOP" status --json | jq -r '[.nodes[] | .node_path + "=" + .status] | join(" ")')" \
	"outer=running outer/inner=blocked" "the inner node is blocked, the outer waits"
expect_eq "$("$AILOOP" status --json | jq -r '.execution_stack | join(" ")')" "outer outer/inner" \
	"the stack stays where the run stopped"
touch "$GO"
run "$AILOOP" resume
expect_rc 0 "resumed with progress: the run completes"
expect_eq "$(labels "$R")" "0 1.0 1.1 1.2 1.3 1.4 1.5 1.6 1 2" "inner goes on at 1.4, no label twice"
rm -f "$GO"

# --- a breaker in a parallel child blocks the run; the others pause ------------------
R=$TEST_TMP/par
export CALLS=$TEST_TMP/par-calls
loop_repo "$R" a b
cp "$TEST_TMP/nested/.ai-loop/agents/idle.md" "$R/.ai-loop/agents/"
cat >"$R/.ai-loop/flow.yaml" <<'YAML'
version: 1
flow:
  id: par
  type: parallel
  children:
    - id: fix
      type: loop
      controller: builtin:all-pass
      sensors: [.ai-loop/agents/sensor.md]
      actuator: {strategy: direct, agent: .ai-loop/agents/idle.md}
      termination: {max_iterations: 10}
    - {id: slow, agent: .ai-loop/agents/step.md, skill: sleep-2}
YAML
commit_all "$R"
cd "$R"
run "$AILOOP" run "in parallel"
expect_rc 4 "a parallel child's breaker blocks the run"
expect_in "$err" "circuit breaker open at node 'par/fix'" "the message names the child"
expect_eq "$(run_status)" "blocked" "the run is blocked"
touch "$GO"
run "$AILOOP" resume
expect_rc 0 "resumed with progress: both children complete"
expect_in "$err" "[4] par/fix: circuit breaker reset" "the child's breaker is reset"
expect_eq "$("$AILOOP" status --json | jq -r '[.nodes[] | .status] | join(" ")')" \
	"complete complete complete" "every node completes"
rm -f "$GO"

# --- validation ---------------------------------------------------------------------
R=$TEST_TMP/valid
loop_repo "$R" a
cd "$R"
check_flow() { # NAME EXPECTED-POSITION EXPECTED-MESSAGE, flow on stdin
	cat >"$TEST_TMP/$1.yaml"
	run "$AILOOP" validate --flow "$TEST_TMP/$1.yaml"
	expect_rc 65 "$1 is refused"
	expect_in "$err" "$1.yaml:$2: error: $3" "$1: message at its position"
}
check_flow negative 8:36 "'no_progress_limit' must not be negative" <<'YAML'
version: 1
flow:
  id: fix
  type: loop
  controller: builtin:all-pass
  sensors: [.ai-loop/agents/sensor.md]
  actuator: {strategy: direct, agent: .ai-loop/agents/noop.md}
  termination: {no_progress_limit: -1}
YAML
check_flow gate-kind 8:28 "unknown exit_gate 'both' (expected one of: controller, dual)" <<'YAML'
version: 1
flow:
  id: fix
  type: loop
  controller: builtin:all-pass
  sensors: [.ai-loop/agents/sensor.md]
  actuator: {strategy: direct, agent: .ai-loop/agents/noop.md}
  termination: {exit_gate: both}
YAML
check_flow gate-nosensors 7:28 "exit_gate 'dual' needs sensors" <<'YAML'
version: 1
flow:
  id: fix
  type: loop
  controller: builtin:all-pass
  actuator: {strategy: direct, agent: .ai-loop/agents/noop.md}
  termination: {exit_gate: dual}
YAML
check_flow gate-reactree 6:17 "'exit_gate' is for loops with sensors and a controller" <<'YAML'
version: 1
flow:
  id: rep
  type: loop
  children: [{id: a, agent: .ai-loop/agents/noop.md}]
  termination: {exit_gate: dual}
YAML
check_flow seq-limit 5:17 "'same_error_limit' is for loop nodes only (this is a sequence node)" <<'YAML'
version: 1
flow:
  id: s
  type: sequence
  termination: {same_error_limit: 2}
  children: [{id: a, agent: .ai-loop/agents/noop.md}]
YAML
check_flow typo 8:17 "unknown key 'no_progress_limt' in termination (did you mean 'no_progress_limit'?)" <<'YAML'
version: 1
flow:
  id: fix
  type: loop
  controller: builtin:all-pass
  sensors: [.ai-loop/agents/sensor.md]
  actuator: {strategy: direct, agent: .ai-loop/agents/noop.md}
  termination: {no_progress_limt: 2}
YAML
cat >"$TEST_TMP/ok.yaml" <<'YAML'
version: 1
flow:
  id: fix
  type: loop
  controller: builtin:all-pass
  sensors: [.ai-loop/agents/sensor.md]
  actuator: {strategy: direct, agent: .ai-loop/agents/noop.md}
  termination: {no_progress_limit: 0, same_error_limit: 2, exit_gate: dual}
YAML
run "$AILOOP" validate --flow "$TEST_TMP/ok.yaml"
expect_rc 0 "the breaker's limits and the exit gate validate"

finish
