#!/usr/bin/env bash
# Outputs read as language models write them. A controller's front matter
# after a line of prose, in a ```yaml fence, spelled target_met: read as it
# is, no second call, and committed in the form ailoop reads. An output
# that stays unreadable (prose only) makes ailoop ask the same agent again
# once, told what was wrong and shown the lines it must begin with: the
# retry is an agent call (budgets count it), noted and recorded; a second
# slip is then the agent's error. The same for an agent sensor's status.
. "$(dirname "$0")/lib.sh"

export CALLS=$TEST_TMP/calls
mkdir -p "$CALLS"

# A controller scripted by $CTL_SHAPES: one word per call (the last repeats):
# good, fenced (prose, then front matter in a yaml fence, target_met),
# prose (no front matter at all).
controller() {
	cat >"$1/.ai-loop/agents/ctl.md" <<'MD'
---
name: ctl
command: sh .ai-loop/agents/ctl.sh
---
Decide.
MD
	cat >"$1/.ai-loop/agents/ctl.sh" <<'SH'
n=$(cat "$CALLS/ctl" 2>/dev/null || echo 0)
echo $((n + 1)) >"$CALLS/ctl"
grep -q "ailoop could not read the output you wrote" "$AILOOP_PROMPT_FILE" &&
	cp "$AILOOP_PROMPT_FILE" "$CALLS/reminded.md"
set -- $CTL_SHAPES
shift $((n < $# ? n : $# - 1))
case $1 in
fenced)
	if [ -s todo.txt ]; then met=false; else met=true; fi
	printf 'Here is my assessment.\n\n```yaml\ntarget_met: %s\n```\n\n## Action Plan\n- fix the next item\n' \
		"$met" >"$AILOOP_OUTPUT" ;;
prose)
	printf 'I think the target is not met yet.\n\n```\n2 items left\n```\n' >"$AILOOP_OUTPUT" ;;
*)
	exec sh .ai-loop/agents/plan.sh 1 ;;
esac
SH
}

agent_calls() { grep -c '"agent_call":true' .ai-loop/runs/run_*/events.jsonl; }

# --- a slip read as it is: no second call ------------------------------------------------
R=$TEST_TMP/fenced
loop_repo "$R" a b
controller "$R"
one_loop "$R" fixer.md "" .ai-loop/agents/ctl.md
commit_all "$R"
cd "$R"
rm -f "$CALLS/ctl"
CTL_SHAPES=fenced run "$AILOOP" run "fix"
expect_rc 0 "front matter after prose, in a fence, spelled target_met: the run completes"
expect_eq "$(cat "$CALLS/ctl")" 3 "one controller call an iteration, none asked again"
expect_not_in "$err" "asking it again" "nothing was asked again"
expect_eq "$(cat todo.txt)" "" "every item was fixed"
out_md=$(git show HEAD~1:"$(cd .ai-loop/runs/run_* && pwd | sed "s|^$R/||")/nodes/fix/controller-output.md")
expect_eq "$(printf '%s\n' "$out_md" | head -3)" "---
target-met: false
---" "the committed output is in the form ailoop reads"
expect_in "$out_md" "Here is my assessment." "the prose is kept"
expect_in "$out_md" "- fix the next item" "the action plan is kept"
expect_not_in "$out_md" '```' "no fence is left"

# --- prose only: asked again once, with the reminder, and the answer counts --------------
R=$TEST_TMP/retry
loop_repo "$R" a
controller "$R"
one_loop "$R" fixer.md "" .ai-loop/agents/ctl.md
commit_all "$R"
cd "$R"
rm -f "$CALLS/ctl" "$CALLS/reminded.md"
CTL_SHAPES="prose good" run "$AILOOP" run "fix"
expect_rc 0 "a controller asked again after prose only: the run completes"
expect_eq "$(cat "$CALLS/ctl")" 3 "asked again once, then once more at the next iteration"
expect_in "$err" "controller output '" "the slip is shown"
expect_in "$err" "unreadable: it has no front matter" "what was wrong is shown"
expect_in "$err" "asking it again (1 of 1)" "the retry is shown"
expect_in "$(cat "$CALLS/reminded.md" 2>/dev/null)" "it has no front matter" \
	"the agent is told what was wrong"
expect_in "$(cat "$CALLS/reminded.md" 2>/dev/null)" "---
target-met: false
---" "and shown the first lines"
expect_eq "$(grep -c '"event":"format_retry"' .ai-loop/runs/run_*/events.jsonl)" 1 \
	"the retry is recorded"
expect_eq "$(agent_calls)" 4 "the retry is an agent call (2 controllers, 1 retry, 1 actuator)"
expect_eq "$(cat todo.txt)" "" "the item was fixed"

# --- the retry counts against the budget -----------------------------------------------
R=$TEST_TMP/budget
loop_repo "$R" a
controller "$R"
one_loop "$R" fixer.md "" .ai-loop/agents/ctl.md
sed -i '1a limits: {max_agent_calls: 1}' "$R/.ai-loop/flow.yaml"
commit_all "$R"
cd "$R"
rm -f "$CALLS/ctl"
CTL_SHAPES="prose good" run "$AILOOP" run "fix"
expect_rc 4 "a retry past the agent-call budget blocks the run"
expect_in "$err" "agent-call budget spent: 1 agent call made" "the budget counted the first call"
expect_eq "$(cat "$CALLS/ctl")" 1 "the retry was not made past the budget"

# --- prose twice: the agent's error, after one retry -------------------------------------
R=$TEST_TMP/twice
loop_repo "$R" a
controller "$R"
one_loop "$R" fixer.md "" .ai-loop/agents/ctl.md
commit_all "$R"
cd "$R"
rm -f "$CALLS/ctl"
CTL_SHAPES=prose run "$AILOOP" run "fix"
expect_rc 1 "prose twice: the controller failed (fail-fast)"
expect_eq "$(cat "$CALLS/ctl")" 2 "asked exactly once more"
expect_in "$err" "(asked again, it wrote no better)" "the error says it was asked again"

# --- format_retries: 2 in defaults, 0 in the agent file -----------------------------------
R=$TEST_TMP/retries
loop_repo "$R" a
controller "$R"
one_loop "$R" fixer.md "" .ai-loop/agents/ctl.md "format_retries: 2"
commit_all "$R"
cd "$R"
rm -f "$CALLS/ctl"
CTL_SHAPES="prose prose good" run "$AILOOP" run "fix"
expect_rc 0 "defaults.format_retries: 2 asks twice"
expect_in "$err" "asking it again (2 of 2)" "the second retry is shown"
sed -i 's/^name: ctl$/name: ctl\nformat_retries: 0/' .ai-loop/agents/ctl.md
commit_all "$R"
rm -f "$CALLS/ctl"
CTL_SHAPES="prose good" run "$AILOOP" run --from-here "again"
expect_rc 1 "the agent file's format_retries: 0 wins over the flow's"
expect_eq "$(cat "$CALLS/ctl")" 1 "not asked again"
printf 'format_retries: 9\n' >"$TEST_TMP/x" # out of range
sed -i 's/^format_retries: 0$/format_retries: 9/' .ai-loop/agents/ctl.md
run "$AILOOP" validate
expect_rc 65 "format_retries out of range is a configuration error"
expect_in "$err" "ctl.md:3:" "named where it is"

# --- an agent sensor that forgets its status is asked again -------------------------------
mkdir -p "$TEST_TMP/bin"
cat >"$TEST_TMP/bin/sense" <<'SH'
#!/bin/sh
n=$(cat "$CALLS/sensor" 2>/dev/null || echo 0)
echo $((n + 1)) >"$CALLS/sensor"
if [ "$n" -eq 0 ]; then
	printf 'All tests pass, I believe.\n'
elif [ -s todo.txt ]; then
	printf -- 'Measured.\n   ---\n   Status: FAIL\n   ---\nitems left\n'
else
	printf -- '```markdown\n---\nstatus: pass\n---\nnothing left\n```\n'
fi
SH
chmod +x "$TEST_TMP/bin/sense"
R=$TEST_TMP/sensor
rm -f "$CALLS/sensor"
loop_repo "$R" a
cat >"$R/.ai-loop/agents/judge.md" <<'MD'
---
name: judge
runner: sense
---
Judge the todo list.
MD
cat >"$R/.ai-loop/flow.yaml" <<'YAML'
version: 1
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
expect_rc 0 "an agent sensor asked again after prose only: the run completes"
expect_in "$err" "sensor judge output '" "the sensor's slip is shown"
expect_in "$err" "asking it again (1 of 1)" "the sensor is asked again"
expect_eq "$(cat "$CALLS/sensor")" 3 "asked again once, then measured after the fix"
expect_eq "$(cat todo.txt)" "" "the item was fixed"
expect_in "$(git log --format=%B)" "judge: fail" "an indented, capitalised status reads as fail"

finish
