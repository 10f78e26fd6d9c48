#!/usr/bin/env bash
# status, log, report and land without a RUN-ID pick the same run, by one
# rule: the newest run whose state in the work tree names the checked-out
# branch as its own (the run HEAD is on), else the newest run of the
# repository, here or on its branch. After a run is resumed on its branch
# while a newer run is on another, all of them show the resumed one (status
# showed the newer one, log the resumed one); on main, the newest run.
. "$(dirname "$0")/lib.sh"

# commits_of RUN-ID: the run's commits, sorted, each after a space
commits_of() {
	git log --all --format=%H --grep="^\[run\] $1\$" | sort | tr '\n' ' '
}

R=$TEST_TMP/repo
loop_repo "$R" a b
one_loop "$R" fixer.md
commit_all "$R"
cp -a "$R" "$TEST_TMP/ref"
(cd "$TEST_TMP/ref" &&
	AILOOP_CRASH_LOG="$TEST_TMP/points" "$AILOOP" run --quiet "fix all" >/dev/null 2>&1)
at=$(grep -n ' committed$' "$TEST_TMP/points" | sed -n 2p | cut -d: -f1)
cd "$R"
(AILOOP_CRASH_AT=$at "$AILOOP" run --quiet "fix all" >/dev/null 2>&1)
first=$(ls .ai-loop/runs | grep '^run_')
run "$AILOOP" run --new --quiet "fix more"
expect_rc 0 "a second run, while the first is paused"
second=$(git log -1 --format=%B | sed -n 's/^\[run\] //p')
[ -n "$second" ] && [ "$second" != "$first" ] && pass || fail "the second run has its own id"
run "$AILOOP" resume "$first"
expect_rc 0 "the first run resumes on its branch"
expect_eq "$(git branch --show-current)" "ai-loop/fix-all" "HEAD is on the first run's branch"

run "$AILOOP" status
expect_in "$out" "run $first: complete" "status shows the run HEAD is on"
run "$AILOOP" log --json
expect_rc 0 "log"
expect_eq "$(printf '%s\n' "$out" | jq -r '.[].commit' | sort | tr '\n' ' ')" "$(commits_of "$first")" \
	"log shows the run HEAD is on"
run "$AILOOP" report --format md -o "$TEST_TMP/page.md"
expect_rc 0 "report"
expect_in "$(cat "$TEST_TMP/page.md")" "# ailoop run ${first//_/\\_}" "report shows the run HEAD is on"
expect_not_in "$(cat "$TEST_TMP/page.md")" "${second//_/\\_}" "report does not show the other run"

# on the base branch, where no run is, the newest run, found on its branch, for each
git checkout -q main
run "$AILOOP" status
expect_in "$out" "run $second: complete" "on main, status shows the newest run"
run "$AILOOP" log --json
expect_rc 0 "on main, log reads the newest run from its branch"
expect_eq "$(printf '%s\n' "$out" | jq -r '.[].commit' | sort | tr '\n' ' ')" "$(commits_of "$second")" \
	"on main, log shows the newest run"
run "$AILOOP" report --format md -o "$TEST_TMP/page.md"
expect_in "$(cat "$TEST_TMP/page.md")" "# ailoop run ${second//_/\\_}" "on main, report shows the newest run"
run "$AILOOP" help status
expect_in "$out" "status, log, report and land pick the same run" "the help says the rule"
finish
