#!/usr/bin/env bash
# Progress on stderr: one plain line per step when not on a terminal; on a
# terminal a live line (node, label, role, elapsed time) redrawn while an
# agent works, in colour unless NO_COLOR is set.
. "$(dirname "$0")/lib.sh"

export GATE=$TEST_TMP/gate STARTED=$TEST_TMP/started
R=$TEST_TMP/repo
loop_repo "$R" a
one_loop "$R" gated.md
commit_all "$R"
cd "$R"

# not a terminal: plain lines, no escape sequences
cp -a "$R" "$TEST_TMP/plain"
cd "$TEST_TMP/plain"
run "$AILOOP" run "fix"
expect_rc 0 "run with stderr to a file"
expect_in "$err" "ailoop: [1] fix actuator: .ai-loop/agents/gated.md" "a line per step"
expect_not_in "$err" $'\033' "no escape sequences off a terminal"
expect_eq "$(printf '%s\n' "$out" | grep -c .)" 8 "stdout holds only the outcome"

# a terminal: the live line keeps time while the actuator works (about 1.5 s)
cd "$R"
touch "$GATE"
(wait_for "$STARTED" && sleep 1.5 && rm -f "$GATE") &
run env -u NO_COLOR TERM=xterm script -qec "$AILOOP run fix" /dev/null
wait
expect_rc 0 "run on a terminal"
expect_in "$out" $'\r\033[K' "the live line is redrawn in place"
expect_in "$out" "[1] fix actuator: .ai-loop/agents/gated.md 0:01" "it shows the elapsed time"
expect_in "$out" $'\033[1m' "in colour on a terminal"

git checkout -q main
git branch -D -q ai-loop/fix
rm -rf .ai-loop/runs
run env NO_COLOR=1 script -qec "$AILOOP run fix" /dev/null
expect_rc 0 "run on a terminal with NO_COLOR"
expect_not_in "$out" $'\033[1m' "NO_COLOR: no colour"
expect_in "$out" $'\r\033[K' "NO_COLOR still redraws the line"

finish
