#!/usr/bin/env bash
# Agents write unreadable front matter (LLMs often write bad YAML): a
# controller's `target-met: [x`, an agent sensor's `status: [x`. With
# format_retries: 0 (t120 asks again), each is an ordinary agent error that
# names the file: exit 1 under fail-fast, and with on_error: continue the
# agent is simply asked again at the next iteration and the run completes.
# An action whose output cannot be read (its front matter may say `status:
# fail`) has failed, never succeeded.
. "$(dirname "$0")/lib.sh"

export CALLS=$TEST_TMP/calls
# A controller that writes broken front matter on its first call only.
bad_controller() {
	cat >"$1/.ai-loop/agents/bad-ctl.md" <<'MD'
---
name: bad-ctl
command: sh .ai-loop/agents/bad-ctl.sh
format_retries: 0
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
		expect_in "$err" "ailoop: error: controller output '.ai-loop/runs/" "says what failed"
		expect_in "$err" "nodes/fix/controller-output.md' unreadable: its front matter is not valid YAML: line 2, column " "names the file and line"
		expect_not_in "$err" "out of memory" "no internal error"
		expect_in "$(cat .ai-loop/runs/run_*/run-state.md)" "status: error" "the run is in error"
		expect_eq "$(cat todo.txt)" "a
b" "nothing was acted on"
		id=$(basename .ai-loop/runs/run_*)
		expect_in "$out" "retry:        ailoop resume $id" "the way to retry is printed"
		run "$AILOOP" resume
		expect_rc 66 "a plain resume does not retry a run that ended in error"
		run "$AILOOP" run --quiet "another"
		expect_rc 0 "a run that ended in error does not hold up the next one"
		git checkout -q "ai-loop/fix"
		echo 1 >"$CALLS/ctl" # as the failed run left it
		run "$AILOOP" resume "$id"
		expect_rc 0 "resume RUN-ID runs the failed controller again and completes"
		expect_in "$err" "running the step that failed again" "the retry says so"
		expect_eq "$(cat "$CALLS/ctl")" 4 "the controller ran again (3 decisions)"
		expect_eq "$(cat todo.txt)" "" "every item was fixed after the retry"
		expect_eq "$(labels "$R")" "0 1 2 3 4" "the error keeps its label; the retry is the next"
		expect_in "$(git log --format=%B -1 HEAD~3)" "[status] error" "the error's commit stays"
		expect_eq "$(git status --porcelain)" "" "clean tree after the retry"
		run "$AILOOP" resume "$id"
		expect_rc 64 "a completed retry is not retried again"
	else
		expect_rc 0 "broken controller front matter, on_error: continue: the run completes"
		expect_eq "$(cat "$CALLS/ctl")" 4 "the controller was asked again"
		expect_in "$err" "controller failed: controller output '" \
			"the failure is reported"
		expect_eq "$(cat todo.txt)" "" "every item was fixed"
		expect_in "$(git log --format=%s)" \
			"iteration 1 — controller failed: controller output '.ai-loop/runs/" \
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
  format_retries: 0
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
		expect_in "$err" "ailoop: error: sensor judge output '" "names the sensor"
		expect_in "$err" "nodes/fix/sensor-judge-output.md' unreadable: its front matter is not valid YAML: line 2, column" "names the file and line"
		expect_not_in "$err" "out of memory" "no internal error (sensor)"
	else
		expect_rc 0 "broken sensor front matter, on_error: continue: the run completes"
		expect_in "$(cat "$R"/.ai-loop/runs/run_*/events.jsonl)" "sensor judge output '" \
			"the sensor's failure is recorded"
		expect_eq "$(cat todo.txt)" "" "the item was fixed"
	fi
done

# --- resume RUN-ID after an actuator's error deep in a nested run ---------------------------
# the inner actuator fails once (fail-fast); a retry runs it again as inner's
# next iteration, and every enclosing loop goes on as if nothing had happened
R=$TEST_TMP/nested-retry
loop_repo "$R" a b
cat >"$R/.ai-loop/agents/flaky.md" <<'MD'
---
name: flaky
command: 'if [ ! -e "$CALLS/flaky" ]; then touch "$CALLS/flaky"; echo "flaked" >&2; exit 3; fi; exec sh .ai-loop/agents/fix.sh'
---
Fails once.
MD
two_loops "$R" flaky.md
commit_all "$R"
cd "$R"
rm -f "$CALLS/flaky"
run "$AILOOP" run "fix"
expect_rc 1 "an actuator's error ends the run (fail-fast)"
id=$(basename .ai-loop/runs/run_*)
expect_eq "$(triples "$R" | tail -1)" "1.1 outer/inner error" "the error is committed"
run "$AILOOP" resume "$id"
expect_rc 0 "resume RUN-ID retries the actuator deep in the run and completes"
expect_eq "$(triples "$R" | head -4 | tr '\n' ',')" \
	"0 outer running,1.0 outer/inner running,1.1 outer/inner error,1.2 outer/inner running," \
	"the retry is the failed node's next iteration"
expect_eq "$(triples "$R" | tail -1)" "2 outer complete" "the enclosing loop completes"
expect_eq "$(label_paths "$R" | tr ',' '\n' | sort | uniq -d)" "" "no label twice"
expect_eq "$(cat todo.txt)" "" "every item was fixed"
expect_eq "$(git status --porcelain)" "" "clean tree after the retry"
expect_in "$("$AILOOP" status)" "complete" "status says complete"

# --- the retry killed at each of its first crash points: one more resume mends it ------------
rm -rf "$TEST_TMP/errored"
git -C "$R" reset -q --hard HEAD~5 # back to the error's commit
expect_eq "$(triples "$R" | tail -1)" "1.1 outer/inner error" "the errored run again"
cp -a "$R" "$TEST_TMP/errored"
want=$(triples "$R" | tr '\n' ',')
rm -f "$CALLS/flaky" && touch "$CALLS/flaky"
(cd "$TEST_TMP/errored" && "$AILOOP" resume "$id" >/dev/null 2>&1)
want=$(triples "$TEST_TMP/errored" | tr '\n' ',')
for n in $(seq 1 12); do
	W=$TEST_TMP/retry-kill
	rm -rf "$W"
	cp -a "$R" "$W"
	cd "$W"
	rc=$({ AILOOP_CRASH_AT=$n "$AILOOP" resume "$id" >/dev/null 2>&1; echo $?; } 2>/dev/null)
	[ "$rc" -eq 137 ] || { expect_eq "$rc" 0 "the retry ends before crash point $n"; continue; }
	run "$AILOOP" resume "$id"
	expect_rc 0 "a retry killed at point $n: resume RUN-ID finishes it"
	expect_eq "$(triples "$W" | tr '\n' ',')" "$want" "a retry killed at point $n: one history"
	expect_eq "$(git status --porcelain)" "" "a retry killed at point $n: clean tree"
done
cd "$R"

# --- an action's unreadable output: a failure, not a success -------------------------
R=$TEST_TMP/action-bad
new_repo "$R" && mkdir -p "$R/.ai-loop/agents"
cat >"$R/.ai-loop/agents/action.md" <<'MD'
---
name: act
command: [sh, -c, 'printf -- "---\\nstatus: fail\\nsummary: the build: broken\\n---\\nThe build failed.\\n" >"$AILOOP_OUTPUT"']
---
Do it.
MD
cat >"$R/.ai-loop/flow.yaml" <<'YAML'
version: 1
flow:
  id: main
  type: fallback
  children:
    - {id: first, skill: build}
    - {id: second, skill: other}
YAML
commit_all "$R"
cd "$R"
run "$AILOOP" run "build it"
expect_rc 1 "actions whose output cannot be read: both fail, and so does the fallback"
expect_in "$err" "main/first: its output is unreadable: .ai-loop/runs/" "the failure says why, on the terminal"
expect_in "$err" "action-output.md:3:19: mapping values are not allowed" "and names the file, line and column"
expect_eq "$(git log --format=%s -1)" "ai-loop[main]: iteration 0 — all 2 children failed" \
	"the second child ran after the first failed"

# --- an output file too large to hold whole: committed, streamed -------------------------
# (an agent's output file of 150 MB, with 120 MB of address space for
# ailoop: a build with AddressSanitizer needs far more, and is not limited)
R=$TEST_TMP/big-output
new_repo "$R" && mkdir -p "$R/.ai-loop/agents"
command_agents "$R" 'test -f done' 'touch done; head -c 150000000 /dev/zero | tr "\\0" x >"$AILOOP_OUTPUT"'
one_loop "$R" act.md
commit_all "$R"
cd "$R"
if ldd "$AILOOP" 2>/dev/null | grep -q libasan; then
	run "$AILOOP" run --quiet "make it big"
else
	run bash -c 'ulimit -v 120000 && exec "$0" run --quiet "make it big"' "$AILOOP"
fi
expect_rc 0 "an agent's output of 150 MB: the run completes within 120 MB"
expect_eq "$(git cat-file -s "HEAD~1:$(ls -d .ai-loop/runs/run_*)/nodes/fix/actuator-output.md")" 150000000 \
	"an agent's output of 150 MB: committed whole"

finish
