#!/usr/bin/env bash
# A command sensor that cannot run is no failing test. `validate` warns of a
# command whose program is not on PATH (past `cd DIR &&`, `env`,
# assignments). At a node's first measurement a sensor whose command exits
# 127 or 126 stops the run before any agent is paid for (exit 69, naming the
# sensor, its command and the shell's words), paused: once the agent file is
# fixed, `ailoop resume` goes on. Later in a run (an agent removed the tool)
# it is the sensor's error, not a `fail`.
. "$(dirname "$0")/lib.sh"

export CALLS=$TEST_TMP/calls
mkdir -p "$CALLS"

sensor_file() { # DIR COMMAND
	cat >"$1/.ai-loop/agents/tests.md" <<MD
---
name: tests
command: $2
---
MD
}

flow() {
	cat >"$1/.ai-loop/flow.yaml" <<'YAML'
version: 1
flow:
  id: fix
  type: loop
  controller: builtin:all-pass
  sensors: [.ai-loop/agents/tests.md]
  actuator: {strategy: direct, agent: .ai-loop/agents/counted.md}
  termination: {max_iterations: 5}
YAML
	cat >"$1/.ai-loop/agents/counted.md" <<'MD'
---
name: counted
command: 'echo x >>"$CALLS/actuator"; sh .ai-loop/agents/fix.sh'
---
MD
}

# --- validate warns ------------------------------------------------------------------
R=$TEST_TMP/typo
loop_repo "$R" a
flow "$R"
sensor_file "$R" "pytestt -q"
commit_all "$R"
cd "$R"
run "$AILOOP" validate
expect_rc 0 "a program not on PATH is a warning, not an error"
expect_in "$err" ".ai-loop/agents/tests.md:3:10: warning: '.ai-loop/agents/tests.md' runs 'pytestt', which is not on PATH" \
	"validate names the program, where the command is"
for cmd in "cd sub && FOO=1 env pytestt" "BAR=x pytestt --fast"; do
	sensor_file "$R" "'$cmd'"
	run "$AILOOP" validate
	expect_in "$err" "runs 'pytestt', which is not on PATH" "found past the prefix in: $cmd"
done
for cmd in "sh .ai-loop/agents/sensor.sh" "cd sub && make test" "'\$HOME/bin/x'" "[git, status]"; do
	sensor_file "$R" "$cmd"
	run "$AILOOP" validate
	expect_not_in "$err" "warning" "no warning for: $cmd"
done
sensor_file "$R" "[/nonexistent/pytest, -q]"
run "$AILOOP" validate
expect_in "$err" "runs '/nonexistent/pytest', which is not an executable file" "an absolute path is checked"

# --- the first measurement: exit 69, no agent call, resumable once fixed ----------------
sensor_file "$R" "pytestt -q"
commit_all "$R"
run "$AILOOP" run "fix"
expect_rc 69 "a sensor that cannot run stops the run (exit 69)"
expect_in "$err" "sensor 'tests' cannot run its command 'pytestt -q' (exit 127: " "names the sensor and command"
expect_in "$err" "pytestt: not found" "gives the shell's words"
expect_in "$err" "fix the command in '.ai-loop/agents/tests.md'" "says what to fix"
expect_eq "$(cat "$CALLS/actuator" 2>/dev/null | wc -l)" 0 "no agent was called"
expect_eq "$(run_status)" "paused" "the run is paused"
sensor_file "$R" "sh .ai-loop/agents/sensor.sh"
commit_all "$R" "fix the sensor"
run "$AILOOP" resume
expect_rc 0 "fixed, the run resumes and completes"
expect_eq "$(cat "$CALLS/actuator" | wc -l)" 1 "one actuator call fixed the item"
expect_eq "$(cat todo.txt)" "" "the item was fixed"

# --- not executable: 126 ---------------------------------------------------------------
R=$TEST_TMP/noexec
loop_repo "$R" a
flow "$R"
printf '#!/bin/sh\nexit 0\n' >"$R/check.sh"
sensor_file "$R" "./check.sh"
commit_all "$R"
cd "$R"
run "$AILOOP" run "fix"
expect_rc 69 "a sensor whose command is not executable stops the run"
expect_in "$err" "(exit 126: " "exit 126 named"

# --- later in the run: the sensor's error, not a fail --------------------------------------
R=$TEST_TMP/removed
loop_repo "$R" a b
flow "$R"
cat >"$R/check.sh" <<'SH'
#!/bin/sh
exec sh .ai-loop/agents/sensor.sh
SH
chmod +x "$R/check.sh"
sensor_file "$R" "./check.sh"
cat >"$R/.ai-loop/agents/counted.md" <<'MD'
---
name: counted
command: 'echo x >>"$CALLS/actuator"; rm -f check.sh; sh .ai-loop/agents/fix.sh'
---
MD
commit_all "$R"
cd "$R"
rm -f "$CALLS/actuator"
run "$AILOOP" run "fix"
expect_rc 1 "a sensor the actuator broke is the sensor's error (fail-fast)"
expect_in "$err" "sensor 'tests' cannot run its command './check.sh' (exit 127" "named as such"
expect_not_in "$err" "fix the command in" "no advice meant for a typo"
expect_eq "$(run_status)" "error" "the run ended in error, not as a failing test"
expect_eq "$(cat "$CALLS/actuator" | wc -l)" 1 "the actuator was not called again"

finish
