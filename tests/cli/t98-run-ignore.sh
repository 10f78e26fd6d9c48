#!/usr/bin/env bash
# .ai-loop/runs/.gitignore keeps the files ailoop never commits out of
# history. One an older ailoop wrote lacks the newer entries (the report's
# page): they are added, and the user's own lines stay.
. "$(dirname "$0")/lib.sh"

R=$TEST_TMP/repo
loop_repo "$R" item-1
one_loop "$R" fixer.md "max_iterations: 3"
mkdir -p "$R/.ai-loop/runs"
printf '# ailoop: files of runs that stay out of history\nlock\n*.lock\nevents.jsonl\nmy-notes.txt' \
	>"$R/.ai-loop/runs/.gitignore"
commit_all "$R"
cd "$R"

run "$AILOOP" run "empty the todo list"
expect_rc 0 "the run completes"
ignore=$(cat .ai-loop/runs/.gitignore)
expect_in "$ignore" "report.html" "the report's page is added"
expect_in "$ignore" "logs/" "the agents' logs are added"
expect_in "$ignore" "my-notes.txt" "the user's line stays"
expect_eq "$(grep -c '^lock$' .ai-loop/runs/.gitignore)" 1 "an entry already there is not repeated"
expect_eq "$(git show HEAD:.ai-loop/runs/.gitignore)" "$ignore" "the run commits it"
run "$AILOOP" report
expect_rc 0 "the report is written"
expect_eq "$(git status --porcelain)" "" "git status does not show the page"

# a .gitignore that cannot be read: the run says so and starts nothing
R2=$TEST_TMP/repo2
loop_repo "$R2" item-1
one_loop "$R2" fixer.md "max_iterations: 3"
mkdir -p "$R2/.ai-loop/runs/.gitignore"
touch "$R2/.ai-loop/runs/.gitignore/keep"
commit_all "$R2"
cd "$R2"
run "$AILOOP" run "empty the todo list"
expect_rc 70 "an unreadable .gitignore"
expect_in "$err" "ailoop: error: cannot read '.ai-loop/runs/.gitignore'" "says which file"
expect_eq "$(git log --oneline | wc -l)" 2 "nothing is committed"
expect_eq "$(ls .ai-loop/runs)" "" "no run is started"
finish
