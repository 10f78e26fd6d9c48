#!/usr/bin/env bash
# Where the work tree cannot be watched — inotify's watch limit reached when
# the watch starts (a full scan for every commit from then on), or later as
# the agent makes directories (a full scan for that commit, and a new
# watch) — the commits are those of a full scan (AILOOP_WATCH=0). AILOOP_WATCH_MAX_DIRS (a test hook)
# stands for the kernel's limit.
. "$(dirname "$0")/lib.sh"

STEPS=8
export AILOOP_WATCH_TRACE=1 STEP

. "$FIXTURES/watch/project.sh"

# ways: how each commit staged, one letter each (w watched, f full scan)
ways() { grep -o 'staging: .*' <<<"$err" | sed 's/staging: watched/w/; s/staging: full scan/f/' | tr -d '\n'; }

watch_project scanned
AILOOP_WATCH=0 run "$AILOOP" run "mutate the tree"
expect_rc 0 "full-scan run: completes"

# --- the limit reached as the watch starts: a full scan for every commit ---------
watch_project no-watch
AILOOP_WATCH_MAX_DIRS=1 run "$AILOOP" run "mutate the tree"
expect_rc 0 "no watch possible: the run completes"
expect_eq "$(ways)" "$(printf 'f%.0s' $(seq $((STEPS + 2))))" "no watch possible: every commit scans"
diff <(trees "$TEST_TMP/scanned") <(trees "$R") >"$TEST_TMP/diff" &&
	pass || { fail "no watch possible: the trees of a full scan"; head -20 "$TEST_TMP/diff" >&2; }

# --- the limit reached later, by the directories the agent makes -------------------
# (room for two more directories than each watch starts with: the agent's
# deep/er/est of its first step is one too many)
watch_project late-limit
AILOOP_WATCH_MAX_DIRS=+2 run "$AILOOP" run "mutate the tree"
expect_rc 0 "limit reached later: the run completes"
ways=$(ways)
case $ways in
ffw*) pass ;;
*) fail "limit reached later: the commit of the step that made too many directories scans ($ways)" ;;
esac
expect_in "$ways" "w" "limit reached later: a new watch follows the scan"
diff <(trees "$TEST_TMP/scanned") <(trees "$R") >"$TEST_TMP/diff" &&
	pass || { fail "limit reached later: the trees of a full scan"; head -20 "$TEST_TMP/diff" >&2; }

finish
