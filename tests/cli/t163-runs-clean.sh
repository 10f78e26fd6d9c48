#!/usr/bin/env bash
# ailoop runs lists every run of the repository, read from its branch
# whether or not that is checked out; ailoop clean removes the finished runs
# whose change is on their base branch (their branch, their children's
# branches and worktrees, their directory), keeps and names the others
# unless --force, and with --dry-run only says what it would remove.
. "$(dirname "$0")/lib.sh"

R=$TEST_TMP/repo
loop_repo "$R" a b
one_loop "$R" fixer.md
commit_all "$R"
cd "$R"
run "$AILOOP" run --quiet "fix all"
expect_rc 0 "the first run"
landed=$(ls .ai-loop/runs | grep '^run_')
run "$AILOOP" land
expect_rc 0 "the first run lands"
git checkout -q main
printf 'c\n' >>todo.txt
commit_all "$R" "more to do"
run "$AILOOP" run --quiet "fix c"
expect_rc 0 "the second run"
unlanded=$(git log -1 --format=%B | sed -n 's/^\[run\] //p')
git checkout -q main
printf 'd\n' >>todo.txt
commit_all "$R" "still more"
cp -a "$R" "$TEST_TMP/ref"
(cd "$TEST_TMP/ref" &&
	AILOOP_CRASH_LOG="$TEST_TMP/points" "$AILOOP" run --quiet "fix later" >/dev/null 2>&1)
at=$(grep -n ' committed$' "$TEST_TMP/points" | sed -n 2p | cut -d: -f1)
(AILOOP_CRASH_AT=$at "$AILOOP" run --quiet "fix later" >/dev/null 2>&1)
paused=$(git log -1 --format=%B | sed -n 's/^\[run\] //p')
git checkout -q main

# --- runs: every run, from its branch --------------------------------------------------
run "$AILOOP" runs
expect_rc 0 "runs"
expect_in "$out" "RUN                STATUS" "runs has a header"
expect_in "$(printf '%s\n' "$out" | grep "$landed")" "complete" "the landed run is complete"
expect_in "$(printf '%s\n' "$out" | grep "$landed")" "ai-loop/fix-all" "with its branch"
expect_in "$(printf '%s\n' "$out" | grep "$landed")" "fix all" "and its task"
expect_in "$(printf '%s\n' "$out" | grep "$paused")" "interrupted" "the killed run is interrupted, as status says"
run "$AILOOP" runs --json
expect_rc 0 "runs --json"
expect_eq "$(printf '%s\n' "$out" | jq -r '[.[].run_id] | join(" ")')" "$landed $unlanded $paused" \
	"every run, oldest first"
expect_eq "$(printf '%s\n' "$out" | jq -r '[.[].read_from] | join(" ")')" \
	"ai-loop/fix-all ai-loop/fix-c ai-loop/fix-later" "each read from its branch"
expect_eq "$(printf '%s\n' "$out" | jq -r '.[0] | "\(.status) \(.iterations) \(.agent_calls) \(.base_branch)"')" \
	"complete 3 2 main" "status, iterations, agent calls and base branch"
expect_in "$(printf '%s\n' "$out" | jq -r '.[0].started_at')" "T" "when it started"

# a child's branch set aside and a worktree, as a parallel node leaves them
git branch ai-loop/fix-all--a ai-loop/fix-all
git branch ai-loop/fix-all--a.1234567 ai-loop/fix-all
git worktree add -q ".ai-loop/runs/$landed/worktrees/a" ai-loop/fix-all--a

# --- clean ----------------------------------------------------------------------------
run "$AILOOP" clean --dry-run
expect_rc 0 "clean --dry-run"
expect_in "$out" "would remove run $landed: worktrees, ai-loop/fix-all--a, ai-loop/fix-all--a.1234567, ai-loop/fix-all, .ai-loop/runs/$landed" \
	"dry run: what it would remove of the landed run"
expect_in "$out" "kept run $unlanded: its change is not on main: 'ailoop land $unlanded', or --force" \
	"dry run: a run not landed is kept"
expect_in "$out" "kept run $paused: running, not finished: 'ailoop resume $paused', or --force" \
	"dry run: a run not finished is kept"
expect_eq "$(git branch --list 'ai-loop/*' | wc -l)" 5 "dry run: no branch removed"
[ -d ".ai-loop/runs/$landed" ] && pass || fail "dry run: no directory removed"
run "$AILOOP" clean --older-than 1
expect_rc 0 "clean --older-than 1"
expect_in "$out" "removed 0 runs, kept 0" "runs of today are not older than a day"
run "$AILOOP" clean --older-than x
expect_rc 64 "clean --older-than x"
expect_in "$err" "--older-than takes a number of days" "says what it takes"
run "$AILOOP" clean
expect_rc 0 "clean"
expect_in "$out" "removed run $landed" "the landed run is removed"
expect_in "$out" "removed 1 run, kept 2" "the summary"
expect_eq "$(git branch --list 'ai-loop/fix-all*')" "" "its branch and its children's are gone"
[ ! -e ".ai-loop/runs/$landed" ] && pass || fail "its directory is gone"
expect_eq "$(git worktree list | wc -l)" 1 "its worktree is gone"
expect_eq "$(git status --porcelain)" "" "the work tree is clean"
run "$AILOOP" runs --json
expect_eq "$(printf '%s\n' "$out" | jq -r '[.[].run_id] | join(" ")')" "$unlanded $paused" "runs lists the others"

# the branch of a run is checked out in another worktree: git refuses to delete it
git worktree add -q "$TEST_TMP/other" ai-loop/fix-c
run "$AILOOP" clean --force
expect_rc 70 "a branch checked out in another worktree"
expect_in "$err" "cannot delete the branch 'ai-loop/fix-c'" "says which"
git worktree remove "$TEST_TMP/other"
# the run whose branch is checked out here stays, even with --force
git checkout -q ai-loop/fix-later
run "$AILOOP" clean --force
expect_rc 0 "clean --force"
expect_in "$out" "kept run $paused: its branch ai-loop/fix-later is checked out" "the checked-out run stays"
expect_in "$out" "removed run $unlanded" "a run not landed goes with --force"
git checkout -q main
run "$AILOOP" clean --force
expect_in "$out" "removed run $paused" "a run not finished goes with --force"
expect_eq "$(git branch --list 'ai-loop/*')" "" "no run branch is left"
run "$AILOOP" runs
expect_in "$out" "no runs" "runs says there are none"

# the runs cannot be read
rm -rf .ai-loop/runs
printf 'x\n' >.ai-loop/runs
run "$AILOOP" runs
expect_rc 70 "runs of an unreadable runs directory"
expect_in "$err" "cannot read .ai-loop/runs" "says what it cannot read"
finish
