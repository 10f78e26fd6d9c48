#!/usr/bin/env bash
# scripts/bench.sh quick works: it runs every measurement on small sizes and
# prints its one table of figures, goals and the shell loop beside ailoop.
# No timing is checked: only that the bench runs and reports.
. "$(dirname "$0")/lib.sh"

for tool in jq perl; do
	command -v $tool >/dev/null || { echo "t95: no $tool: the bench cannot run here"; exit 77; }
done
run env TMPDIR="$TEST_TMP" "$AILOOP_SRC/scripts/bench.sh" quick
expect_rc 0 "scripts/bench.sh quick"
expect_in "$out" "figure" "the table's header"
for figure in "overhead per iteration, fsync off" "overhead per iteration, fsync on" \
	"parallel node, 8 children x 1 s" "conditions, 10,000 evaluations" \
	"resume to 1st agent, 3 iterations" "resume to 1st agent, 200 iterations" \
	"status, 200 iterations" "log, first line, 200 iterations" "log, all 200 iterations" \
	"flow parse + validate, 1000 nodes" "flow parse + validate, 2000 nodes" \
	"flow, 2000 / 1000 nodes (ratio)"; do
	expect_in "$out" "$figure" "the table has the figure '$figure'"
done
# (a difference of two timings: on a loaded machine it can come out below zero)
expect_eq "$(printf '%s\n' "$out" | grep -c '^overhead per iteration.* -\?[0-9.]\+ \+-\?[0-9.]\+ \+-\?[0-9.]\+$')" 2 \
	"the overheads have a figure for ailoop and the shell loop, and their ratio"
# the large repository's figures, on a small one
run env TMPDIR="$TEST_TMP" FILES=300 N=4 REPS=1 "$AILOOP_SRC/scripts/bench.sh" bigrepo
expect_rc 0 "scripts/bench.sh bigrepo"
expect_in "$out" "300 tracked files, 4 iterations" "bigrepo says what it measured"
for how in "watched tree" "full scan"; do
	expect_eq "$(printf '%s\n' "$out" | grep -c "^  run start to its first agent, $how  *[0-9.]\+ ms$")" 1 \
		"bigrepo has the run's start, $how"
	expect_eq "$(printf '%s\n' "$out" | grep -c "^  overhead per iteration, $how  *-\?[0-9.]\+ ms  (-\?[0-9.]\+ x git status")" 1 \
		"bigrepo has the overhead per iteration beside git status, $how"
done
run env TMPDIR="$TEST_TMP" "$AILOOP_SRC/scripts/bench.sh" slow
expect_rc 64 "an unknown mode"
expect_in "$err" "usage: scripts/bench.sh" "an unknown mode is told the usage"

finish
