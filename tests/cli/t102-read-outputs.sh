#!/usr/bin/env bash
# Where the read commands write, and what they read that is damaged:
# `report -o` writes into a device, a FIFO or a symbolic link's target
# instead of replacing it with a file, and `-o -` is the standard output;
# output that cannot be written (a full disk) fails the command (exit 70)
# with a message, a reader that closes the pipe early does not; a node
# state whose level no flow has is damaged, not read; a feedback record
# with fields that are not text shows '-'.
. "$(dirname "$0")/lib.sh"

R=$TEST_TMP/repo
new_repo "$R"
command_agents "$R" 'c=$(cat count); echo "count $c"; test "$c" -ge 2' 'echo $(($(cat count) + 1)) >count'
echo 0 >"$R/count"
one_loop "$R" act.md "max_iterations: 4"
cd "$R"
git add -A && git commit -q -m "count from 0"
run "$AILOOP" run --quiet count
expect_rc 0 "the run completes"

# --- report -o: what is there is written into, not replaced --------------------------------
# a device of its own (mknod needs root): a failure must not replace /dev/null
if mknod "$TEST_TMP/null" c 1 3 2>/dev/null; then
	run "$AILOOP" report -o "$TEST_TMP/null"
	expect_rc 0 "a report into a device"
	[ -c "$TEST_TMP/null" ] && pass || fail "the device is still a device"
else
	echo "skipped: a report into a device (mknod needs root)"
fi
mkfifo "$TEST_TMP/fifo"
cat "$TEST_TMP/fifo" >"$TEST_TMP/from-fifo" &
reader=$!
run "$AILOOP" report -o "$TEST_TMP/fifo"
expect_rc 0 "a report into a FIFO"
if [ -p "$TEST_TMP/fifo" ]; then pass; else fail "the FIFO is still a FIFO"; kill "$reader"; fi
wait "$reader"
expect_in "$(cat "$TEST_TMP/from-fifo")" "</html>" "the reader got the whole page"
echo old >"$TEST_TMP/target.html"
ln -s "$TEST_TMP/target.html" "$TEST_TMP/link.html"
run "$AILOOP" report -o "$TEST_TMP/link.html"
expect_rc 0 "a report into a symbolic link"
[ -L "$TEST_TMP/link.html" ] && pass || fail "the link is still a link"
expect_in "$(cat "$TEST_TMP/target.html")" "</html>" "the link's target holds the page"
run "$AILOOP" report -o - --format md
expect_rc 0 "a report on the standard output"
expect_in "$out" "# " "-o - prints the page"
[ ! -e ./- ] && [ ! -e "$TEST_TMP/-" ] && pass || fail "-o - makes no file named '-'"
expect_eq "$(git status --porcelain)" "" "-o - leaves the work tree clean"

# --- output that cannot be written -----------------------------------------------------------
if [ -c /dev/full ]; then
	for cmd in "status" "status --json" "log" "log --json" "graph"; do
		# shellcheck disable=SC2086
		"$AILOOP" $cmd >/dev/full 2>"$TEST_TMP/err" && rc=0 || rc=$?
		expect_eq "$rc" 70 "$cmd into a full disk fails"
		expect_in "$(cat "$TEST_TMP/err")" "cannot write the output: No space left on device" \
			"$cmd says why"
	done
fi
rc=$( (trap '' PIPE; "$AILOOP" log 2>"$TEST_TMP/err" | head -c 1 >/dev/null; echo "${PIPESTATUS[0]}") )
expect_in "0 141" "$rc" "a reader that closes the pipe is no failure"
expect_not_in "$(cat "$TEST_TMP/err")" "cannot write" "nor is it reported"

# --- damaged states ---------------------------------------------------------------------------
dir=$(ls -d .ai-loop/runs/run_*)
sed -i 's/^level: .*/level: 1500000000/' "$dir/nodes/fix/orchestrator-output.md"
run "$AILOOP" status
expect_rc 0 "status of a run with a damaged node state"
expect_in "$out" "damaged: " "the node's state is listed as damaged"
run "$AILOOP" report -o "$TEST_TMP/r.html"
expect_rc 0 "the report of a damaged level"
[ "$(stat -c %s "$TEST_TMP/r.html")" -lt 2000000 ] && pass || fail "the report stays small"
git checkout -q -- "$dir"
printf '%s\n' '{"id": "fb-1", "from": null, "to": ["x"], "type": 3, "status": "open", "round": "one"}' \
	>"$dir/feedback.jsonl"
run "$AILOOP" status
expect_rc 0 "status with a damaged feedback record"
expect_not_in "$out" "(null)" "no field prints as (null)"
expect_in "$out" "fb-1 - -> -: -, open" "fields that are not text show '-'"

finish
