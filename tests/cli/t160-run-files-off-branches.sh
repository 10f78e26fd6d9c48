#!/usr/bin/env bash
# A run's files that are never committed (events.jsonl, the agents' logs,
# locks, the report's page) stay out of git on every branch, not only on
# the run's, whose .ai-loop/runs/.gitignore says so: after 'git checkout
# main' the run's directory is left with them, and a routine 'git add -A'
# must not commit them there. The run adds the rules to .git/info/exclude,
# which holds for every branch and is never committed, also in a
# repository set up before.
. "$(dirname "$0")/lib.sh"

R=$TEST_TMP/repo
loop_repo "$R" item-1
one_loop "$R" fixer.md "max_iterations: 3"
commit_all "$R"
cd "$R"
run "$AILOOP" run "empty the todo list"
expect_rc 0 "the run completes"
id=$(ls .ai-loop/runs | grep '^run_')
run "$AILOOP" report
expect_rc 0 "the report is written"
git checkout -q main
[ -f ".ai-loop/runs/$id/events.jsonl" ] && pass || fail "the event log stays in the work tree"
git add -A
expect_eq "$(git status --porcelain)" "" "git add -A on main adds nothing of the run"
expect_eq "$(grep -c 'ai-loop/runs' .git/info/exclude)" 8 "the rules are in .git/info/exclude"
# a second run adds them once
git checkout -q -b again
run "$AILOOP" run --new --no-branch "empty the todo list"
expect_rc 0 "a second run completes"
expect_eq "$(grep -c 'ai-loop/runs' .git/info/exclude)" 8 "the rules are not repeated"
expect_in "$(cat .git/info/exclude)" "# ailoop:" "the rules say whose they are"

# .git/info/exclude that cannot be read: the run goes on, and says what it could not do
R2=$TEST_TMP/repo2
loop_repo "$R2" item-1
one_loop "$R2" fixer.md "max_iterations: 3"
commit_all "$R2"
cd "$R2"
rm -f .git/info/exclude
mkdir -p .git/info/exclude
run "$AILOOP" run "empty the todo list"
expect_rc 0 "the run completes without the rules"
expect_in "$err" "ailoop: warning: cannot add the run's ignore rules to" "says what it could not do"
expect_in "$err" "info/exclude" "names the file"
finish
