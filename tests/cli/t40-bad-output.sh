#!/usr/bin/env bash
# Agents write unreadable front matter (LLMs often write bad YAML): a
# controller's `target-met: [x`, an agent sensor's `status: [x`. Each is an
# ordinary agent error that names the file: exit 1 under fail-fast, and with
# on_error: continue the agent is simply asked again and the run completes.
. "$(dirname "$0")/lib.sh"

export CALLS=$TEST_TMP/calls
# A controller that writes broken front matter on its first call only.
bad_controller() {
	cat >"$1/.ai-loop/agents/bad-ctl.md" <<'MD'
---
name: bad-ctl
command: sh .ai-loop/agents/bad-ctl.sh
---
Decide.
MD
	cat >"$1/.ai-loop/agents/bad-ctl.sh" <<'SH'
n=$(cat "$CALLS/ctl" 2>/dev/null || echo 0)
echo $((n + 1)) >"$CALLS/ctl"
if [ "$n" -eq 0 ]; then
	printf -- '---\ntarget-met: [x\n---\nThinking...\n' >"$AILOOP_OUTPUT"
	exit 0
fi
exec sh .ai-loop/agents/plan.sh 1
SH
}

# --- a controller -------------------------------------------------------------------------
for mode in fail-fast continue; do
	R=$TEST_TMP/ctl-$mode
	mkdir -p "$CALLS" && rm -f "$CALLS/ctl"
	loop_repo "$R" a b
	bad_controller "$R"
	one_loop "$R" fixer.md "" .ai-loop/agents/bad-ctl.md "termination: {on_error: $mode}"
	commit_all "$R"
	cd "$R"
	run "$AILOOP" run "fix"
	if [ $mode = fail-fast ]; then
		expect_rc 1 "broken controller front matter is an agent error (fail-fast)"
		expect_in "$err" "ailoop: error: controller output unreadable: " "says what failed"
		expect_in "$err" "nodes/fix/controller-output.md:2:" "names the file and line"
		expect_not_in "$err" "out of memory" "no internal error"
		expect_in "$(cat .ai-loop/runs/run_*/run-state.md)" "status: error" "the run is in error"
		expect_eq "$(cat todo.txt)" "a
b" "nothing was acted on"
	else
		expect_rc 0 "broken controller front matter, on_error: continue: the run completes"
		expect_eq "$(cat "$CALLS/ctl")" 4 "the controller was asked again"
		expect_in "$err" "controller failed: controller output unreadable: " \
			"the failure is reported"
		expect_eq "$(cat todo.txt)" "" "every item was fixed"
		expect_in "$(git log --format=%s)" \
			"iteration 1 — controller failed: controller output unreadable: .ai-loop/runs/" \
			"the commit says what failed, in readable text"
	fi
done

# --- an agent sensor (through a runner) -----------------------------------------------------
mkdir -p "$TEST_TMP/bin"
cat >"$TEST_TMP/bin/sense" <<'SH'
#!/bin/sh
n=$(cat "$CALLS/sensor" 2>/dev/null || echo 0)
echo $((n + 1)) >"$CALLS/sensor"
if [ "$n" -eq 0 ]; then
	printf -- '---\nstatus: [x\n---\n'
elif [ -s todo.txt ]; then
	printf -- '---\nstatus: fail\n---\nitems left\n'
else
	printf -- '---\nstatus: pass\n---\nnothing left\n'
fi
SH
chmod +x "$TEST_TMP/bin/sense"
for mode in fail-fast continue; do
	R=$TEST_TMP/sensor-$mode
	rm -f "$CALLS/sensor"
	loop_repo "$R" a
	cat >"$R/.ai-loop/agents/judge.md" <<'MD'
---
name: judge
runner: sense
---
Judge the todo list.
MD
	cat >"$R/.ai-loop/flow.yaml" <<YAML
version: 1
defaults:
  termination: {on_error: $mode}
runners:
  sense: {command: [sense], prompt: stdin}
flow:
  id: fix
  type: loop
  controller: builtin:all-pass
  sensors: [.ai-loop/agents/judge.md]
  actuator: {agent: .ai-loop/agents/fixer.md}
YAML
	commit_all "$R"
	cd "$R"
	run env PATH="$TEST_TMP/bin:$PATH" "$AILOOP" run "fix"
	if [ $mode = fail-fast ]; then
		expect_rc 1 "broken sensor front matter is an agent error (fail-fast)"
		expect_in "$err" "ailoop: error: sensor 'judge': " "names the sensor"
		expect_in "$err" "nodes/fix/sensor-judge-output.md:2:" "names the file and line"
		expect_not_in "$err" "out of memory" "no internal error (sensor)"
	else
		expect_rc 0 "broken sensor front matter, on_error: continue: the run completes"
		expect_in "$(cat "$R"/.ai-loop/runs/run_*/events.jsonl)" "sensor 'judge': " \
			"the sensor's failure is recorded"
		expect_eq "$(cat todo.txt)" "" "the item was fixed"
	fi
done

finish
