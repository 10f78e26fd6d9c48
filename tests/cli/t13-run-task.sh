#!/usr/bin/env bash
# The task is data, never code: whatever it holds reaches the agents byte
# for byte through AILOOP_TASK_FILE, and nothing in it is executed.
. "$(dirname "$0")/lib.sh"

task_repo() {
	R=$TEST_TMP/$1
	loop_repo "$R" a
	one_loop "$R" task-copy.md
	commit_all "$R"
	cd "$R"
}

export SEEN_TASK=$TEST_TMP/seen-task
nasty='fix $(touch pwned) and `touch pwned2`; rm -rf "$HOME" '"'quoted'"' \"dq\" \\n
second line with $HOME and ${PATH} and | pipes > redirect
	tab-indented; trailing spaces   '
printf '%s' "$nasty" >"$TEST_TMP/task.txt"

# as an argument
task_repo arg
run "$AILOOP" run "$nasty"
expect_rc 0 "run with a hostile task argument"
run cmp "$SEEN_TASK" "$TEST_TMP/task.txt"
expect_rc 0 "the agent got the argument byte for byte"
for f in pwned pwned2; do
	[ ! -e "$R/$f" ] && [ ! -e "$f" ] && pass || fail "'$f' was created: the task was executed"
done
run "$AILOOP" status --json
expect_eq "$(printf '%s\n' "$out" | jq -j .task)" "$(cat "$TEST_TMP/task.txt")" \
	"run-state keeps the task exactly"
expect_in "$(cat .ai-loop/runs/run_*/nodes/fix/logs/actuator.prompt.md)" "Task file: " \
	"the prompt names the task file"
rm -f "$SEEN_TASK"

# from a file
task_repo file
run "$AILOOP" run --task-file "$TEST_TMP/task.txt"
expect_rc 0 "run with --task-file"
run cmp "$SEEN_TASK" "$TEST_TMP/task.txt"
expect_rc 0 "the agent got the task file byte for byte"
expect_eq "$(git rev-parse --abbrev-ref HEAD)" \
	"ai-loop/fix-touch-pwned-and-touch-pwned2-rm-rf-home-quoted" "branch slug from the task"
rm -f "$SEEN_TASK"

# from standard input
task_repo stdin
run "$AILOOP" run - <"$TEST_TMP/task.txt"
expect_rc 0 "run with the task on stdin"
run cmp "$SEEN_TASK" "$TEST_TMP/task.txt"
expect_rc 0 "the agent got stdin byte for byte"
[ ! -e "$R/pwned" ] && pass || fail "stdin task was executed"

# usage errors
run "$AILOOP" run
expect_rc 64 "run without a task"
run "$AILOOP" run ""
expect_rc 64 "run with an empty task"
expect_in "$err" "the task is empty" "empty task message"
run "$AILOOP" run " 	 "
expect_rc 64 "run with a blank task"
expect_in "$err" "the task is empty" "a blank task is an empty one"
printf '\n\n' >"$TEST_TMP/blank.txt"
run "$AILOOP" run --task-file "$TEST_TMP/blank.txt"
expect_rc 64 "a task file of empty lines is an empty task"
run "$AILOOP" run - <"$TEST_TMP/blank.txt"
expect_rc 64 "so is standard input of empty lines"
run "$AILOOP" run - <"$TEST_TMP"
expect_rc 66 "standard input that cannot be read"
expect_in "$err" "cannot read the task from standard input: Is a directory" "says why"
run "$AILOOP" run --task-file "$TEST_TMP/task.txt" "and an argument"
expect_rc 64 "task twice"
run "$AILOOP" run --task-file "$TEST_TMP/nope.txt"
expect_rc 66 "missing task file"
expect_in "$err" "cannot read the task file" "missing task file message"
run "$AILOOP" run one two
expect_rc 64 "two tasks"

finish
