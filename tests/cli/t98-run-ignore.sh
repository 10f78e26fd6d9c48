#!/usr/bin/env bash
# .ai-loop/runs/.gitignore keeps the files ailoop never commits out of
# history. One an older ailoop wrote lacks the newer entries (the report's
# page): they are added, and the user's own lines stay. Another run's files
# stay as HEAD has them in this run's commits (a paused run's state is
# newer than its last commit: t30), by the watch and a full scan alike.
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

# other_runs NAME [ENV]: a run whose agent changes, besides the code, the
# files of runs other than its own: one's state edited and a file of it
# removed, a new one's file made, a third one's directory removed
other_runs() {
	R=$TEST_TMP/$1
	loop_repo "$R" item-1
	one_loop "$R" others.md "max_iterations: 3"
	cat >"$R/.ai-loop/agents/others.md" <<'MD'
---
name: others
command: >-
  echo changed >>.ai-loop/runs/run_20000101_001/run-state.md &&
  rm .ai-loop/runs/run_20000101_001/notes.md &&
  mkdir -p .ai-loop/runs/run_20000101_002 && echo new >.ai-loop/runs/run_20000101_002/x.md &&
  rm -r .ai-loop/runs/run_20000101_003 && : >todo.txt
---
MD
	for n in 1 3; do
		mkdir -p "$R/.ai-loop/runs/run_20000101_00$n"
		printf 'status: paused\n' >"$R/.ai-loop/runs/run_20000101_00$n/run-state.md"
		printf 'notes\n' >"$R/.ai-loop/runs/run_20000101_00$n/notes.md"
	done
	commit_all "$R"
	cd "$R"
	env ${2:-} AILOOP_WATCH_TRACE=1 "$AILOOP" run --quiet "empty the todo list" >/dev/null 2>"$TEST_TMP/$1.err" && rc=0 || rc=$?
	expect_eq "$rc" 0 "$1: the run completes"
	expect_eq "$(git diff --name-only main HEAD -- .ai-loop/runs | grep /run_2000)" "" \
		"$1: the commits leave the other runs' files as they were"
	expect_eq "$(git status --porcelain | tr '\n' ' ')" \
		" D .ai-loop/runs/run_20000101_001/notes.md  M .ai-loop/runs/run_20000101_001/run-state.md  D .ai-loop/runs/run_20000101_003/notes.md  D .ai-loop/runs/run_20000101_003/run-state.md ?? .ai-loop/runs/run_20000101_002/ " \
		"$1: their changes stay in the work tree"
	expect_eq "$(git show HEAD:todo.txt)" "" "$1: the agent's change to the code is committed"
}
other_runs watched
expect_not_in "$(cat "$TEST_TMP/watched.err")" "staging: full scan" "watched: every commit staged by the watch"
other_runs scanned AILOOP_WATCH=0
expect_not_in "$(cat "$TEST_TMP/scanned.err")" "staging: watched" "scanned: every commit scans"
finish
