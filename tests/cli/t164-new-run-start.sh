#!/usr/bin/env bash
# A new run started while HEAD is on another run's branch says so and
# starts from that run's base branch, unless --from-here; a paused run's
# state in the way of that checkout is refused with both ways on. On a
# terminal, the question whether to resume shows that Enter resumes it, and
# after "n" the new run has the task typed on the command line.
. "$(dirname "$0")/lib.sh"

R=$TEST_TMP/repo
loop_repo "$R" a b
one_loop "$R" fixer.md
commit_all "$R"
cd "$R"
run "$AILOOP" run --quiet "fix all"
expect_rc 0 "the first run"
first=$(ls .ai-loop/runs | grep '^run_')
expect_eq "$(git branch --show-current)" "ai-loop/fix-all" "HEAD is on the first run's branch"
run "$AILOOP" run "fix again"
expect_rc 0 "a second run from the first run's branch"
expect_in "$err" "HEAD is on run $first's branch ai-loop/fix-all: the new run starts from its base branch main (--from-here starts it from ai-loop/fix-all)" \
	"the run says where it starts"
expect_in "$out" "base branch:  main" "its base branch is the first run's"
expect_eq "$(git merge-base --is-ancestor ai-loop/fix-all HEAD && echo yes || echo no)" no \
	"the second run's branch does not hold the first run's commits"
git checkout -q ai-loop/fix-all
printf 'd\n' >>todo.txt
commit_all "$R" "on the run's branch"
run "$AILOOP" run --from-here --quiet "fix d"
expect_rc 0 "--from-here"
expect_not_in "$err" "starts from its base branch" "--from-here says nothing of the base branch"
expect_eq "$(git merge-base --is-ancestor ai-loop/fix-all HEAD && echo yes || echo no)" yes \
	"--from-here starts from the run's branch"

# a paused run's uncommitted state is in the way of checking out main
R=$TEST_TMP/paused
loop_repo "$R" a b
one_loop "$R" fixer.md
commit_all "$R"
cp -a "$R" "$TEST_TMP/ref"
(cd "$TEST_TMP/ref" &&
	AILOOP_CRASH_LOG="$TEST_TMP/points" "$AILOOP" run --quiet "fix all" >/dev/null 2>&1)
# killed as its controller writes, after its second commit: its state is newer than that
at=$(awk '/ committed$/ { c++ } c == 2 && /controller-output.md$/ { print NR; exit }' "$TEST_TMP/points")
cd "$R"
(AILOOP_CRASH_AT=$at "$AILOOP" run --quiet "fix all" >/dev/null 2>&1)
paused=$(ls .ai-loop/runs | grep '^run_')
[ -n "$(git status --porcelain -- .ai-loop/runs)" ] && pass || fail "the paused run's state is newer than its commit"
run "$AILOOP" run --new "another"
expect_rc 64 "a new run where the paused run's state is in the way"
expect_in "$err" "cannot check out main, run $paused's base branch, to start from it" "says what it cannot do"
expect_in "$err" "resume run $paused first, or start from here with --from-here" "and the ways on"
expect_eq "$(git branch --show-current)" "ai-loop/fix-all" "HEAD stays"
expect_eq "$(ls .ai-loop/runs | grep -c '^run_')" 1 "no run started"

# on a terminal: Enter resumes, "n" starts the typed task
if script -qec true /dev/null >/dev/null 2>&1 </dev/null; then
	run script -qec "$AILOOP run --quiet --from-here 'the typed task'" /dev/null <<<"n"
	expect_rc 0 "n starts a new run"
	expect_in "$out" "Resume it (Enter) or start a new run (n)? [R/n]" "the question shows Enter resumes"
	expect_eq "$("$AILOOP" status --json | jq -r .task)" "the typed task" "the new run has the typed task"
	expect_eq "$(git branch --show-current)" "ai-loop/the-typed-task" "on its own branch"
	git checkout -q ai-loop/fix-all
	run script -qec "$AILOOP run --quiet 'yet another'" /dev/null <<<""
	expect_rc 0 "Enter resumes"
	expect_eq "$("$AILOOP" status "$paused" --json | jq -r .status)" "complete" "the paused run is resumed"
	expect_eq "$(ls .ai-loop/runs | grep -c '^run_')" 2 "no third run"
fi
finish
