#!/usr/bin/env bash
# ailoop land puts a finished run's net change on its base branch as one
# commit (or, with --merge, a merge commit keeping its history), never a
# file of .ai-loop/runs, with a message that says the task, the run, its
# iterations and its sensors before and after; with the base branch checked
# out the work tree follows. It refuses a run not finished, a change that
# conflicts with the base branch's, a dirty work tree, a base branch checked
# out in another worktree, a run on its base branch, and a run that is not.
. "$(dirname "$0")/lib.sh"

# finished_run NAME [ITEMS]: a repository $R with a completed run on ai-loop/fix-all
finished_run() {
	R=$TEST_TMP/$1
	loop_repo "$R" a b
	printf 'one\ntwo\nthree\n' >"$R/notes.txt"
	one_loop "$R" fixer.md
	commit_all "$R"
	cd "$R"
	run "$AILOOP" run "fix all"
	expect_rc 0 "$1: the run completes"
	id=$(ls .ai-loop/runs | grep '^run_')
}

# --- from the run's branch: one commit on main, the work tree untouched -----------------
finished_run squash
expect_in "$out" "land:         ailoop land $id" "the end of the run offers to land it"
main_before=$(git rev-parse main)
run "$AILOOP" land
expect_rc 0 "land"
expect_in "$out" "landed run $id on main" "land says what it did"
expect_eq "$(git rev-parse main~1)" "$main_before" "one commit on main"
expect_eq "$(git rev-list --count main)" 3 "main has one commit more, not the run's"
expect_eq "$(git show main:todo.txt)" "" "the run's change is on main"
expect_eq "$(git ls-tree -r --name-only main -- .ai-loop/runs)" "" "no file of .ai-loop/runs is on main"
expect_eq "$(git diff --name-only main~1 main | tr '\n' ' ')" "todo.txt " "the commit changes what the run changed"
msg=$(git log -1 --format=%B main)
expect_eq "$(git log -1 --format=%s main)" "fix all" "the subject is the task"
expect_in "$msg" "ailoop run $id on ai-loop/fix-all: complete after 3 iterations" "the message says the run and its iterations"
expect_in "$msg" "Sensors before: scope: fail (remaining=2)" "the message gives the sensors before"
expect_in "$msg" "Sensors after:  scope: pass (remaining=0)" "the message gives the sensors after"
expect_eq "$(git branch --show-current)" "ai-loop/fix-all" "HEAD stays on the run's branch"
expect_eq "$(git status --porcelain)" "" "the work tree is untouched"
run "$AILOOP" land "$id"
expect_rc 0 "land again"
expect_in "$out" "main has its change already; nothing to land" "land again: nothing to land"
expect_eq "$(git rev-list --count main)" 3 "land again: no commit"

# --- main checked out and moved on: a three-way merge, the work tree follows -------------
finished_run checked-out
git checkout -q main
printf 'one\ntwo\nthree\nfour\n' >notes.txt
git commit -q -am "more notes"
run "$AILOOP" land
expect_rc 0 "land on main, checked out and moved on"
expect_eq "$(cat todo.txt)" "" "the work tree has the run's change"
expect_eq "$(tail -1 notes.txt)" "four" "and main's own"
expect_eq "$(git status --porcelain)" "" "the work tree and index are main's"
expect_eq "$(git log -1 --format=%s main~1)" "more notes" "the land's parent is main's tip"

# --- --merge: a merge commit, the run's history kept, still no run file on main ----------
finished_run merge
run "$AILOOP" land --merge
expect_rc 0 "land --merge"
expect_in "$out" "a merge of its branch" "land --merge says so"
expect_eq "$(git rev-parse main^2)" "$(git rev-parse ai-loop/fix-all)" "the merge's second parent is the run's tip"
expect_eq "$(git ls-tree -r --name-only main -- .ai-loop/runs)" "" "--merge: no file of .ai-loop/runs on main"
expect_eq "$(git show main:todo.txt)" "" "--merge: the run's change is on main"

# --- refusals --------------------------------------------------------------------------
finished_run refusals
git checkout -q main
printf 'x\n' >stray.txt
run "$AILOOP" land
expect_rc 64 "a dirty work tree on main"
expect_in "$err" "the work tree has uncommitted changes ('stray.txt')" "says which file"
expect_eq "$(git rev-list --count main)" 2 "dirty: nothing landed"
rm stray.txt
printf 'changed\n' >todo.txt
git commit -q -am "main changes todo.txt too"
run "$AILOOP" land
expect_rc 1 "a change that conflicts with main's"
expect_in "$err" "run $id does not land on main: main changed 'todo.txt'" "says where it conflicts"
expect_in "$err" "git checkout ai-loop/fix-all && git merge main" "says how to go on"
expect_eq "$(git log -1 --format=%s main)" "main changes todo.txt too" "conflict: nothing landed"
expect_eq "$(git status --porcelain)" "" "conflict: the work tree is untouched"
git checkout -q ai-loop/fix-all
git worktree add -q "$TEST_TMP/other" main
run "$AILOOP" land
expect_rc 64 "main checked out in another worktree"
expect_in "$err" "the base branch 'main' is checked out in the worktree '$TEST_TMP/other'" "says where"
git worktree remove "$TEST_TMP/other"
run "$AILOOP" land run_20000101_001
expect_rc 66 "no such run"
git branch -q -m main trunk
run "$AILOOP" land
expect_rc 66 "the base branch is gone"
expect_in "$err" "the base branch 'main' does not exist" "says which"
git branch -q -m trunk main

# a paused run is not finished
R=$TEST_TMP/paused
loop_repo "$R" a b
one_loop "$R" fixer.md
commit_all "$R"
cp -a "$R" "$TEST_TMP/paused-ref"
(cd "$TEST_TMP/paused-ref" &&
	AILOOP_CRASH_LOG="$TEST_TMP/points" "$AILOOP" run --quiet "fix all" >/dev/null 2>&1)
at=$(grep -n ' committed$' "$TEST_TMP/points" | sed -n 2p | cut -d: -f1)
cd "$R"
(AILOOP_CRASH_AT=$at "$AILOOP" run --quiet "fix all" >/dev/null 2>&1)
run "$AILOOP" land
expect_rc 64 "a run not finished"
expect_in "$err" "is running, not finished: go on with 'ailoop resume" "says to resume it first"
expect_eq "$(git rev-list --count main)" 2 "not finished: nothing landed"

# a --no-branch run committed on main itself
R=$TEST_TMP/no-branch
loop_repo "$R" a
one_loop "$R" fixer.md
commit_all "$R"
cd "$R"
run "$AILOOP" run --quiet --no-branch "fix all"
run "$AILOOP" land
expect_rc 64 "a --no-branch run"
expect_in "$err" "committed on main itself (--no-branch)" "says why"
finish
