#!/usr/bin/env bash
# An agent that sets the work tree back to an earlier commit
# (`git checkout HEAD~K -- .`) also sets back the run's own files, which
# every commit records. Whether the run goes on, is paused (SIGINT) or is
# killed (SIGKILL) before ailoop writes its state again, the run ends as
# the same run without the checkout ends: the same iterations committed,
# each once, in order, and the run complete; a resume says that it put the
# run's files back. In one loop and in a loop inside a loop, where the
# checkout goes back past the inner loop's entry.
. "$(dirname "$0")/lib.sh"

T=$TEST_TMP

# project DIR SHAPE BACK STOP: a counting loop to 5 (SHAPE one: one loop;
# two: a loop whose actuator is a loop) whose actuator, once (at count 3),
# checks out the tree of BACK commits before (none: does not) and then
# sends STOP (none, INT or KILL) to ailoop
project() {
	local dir=$1 shape=$2 back=$3 stop=$4 revert= signal=
	[ "$back" = none ] || revert="git checkout -q HEAD~$back -- .; echo 3 >count;"
	[ "$stop" = none ] || signal="kill -$stop \$PPID; sleep 5;"
	new_repo "$dir"
	command_agents "$dir" 'c=$(cat count); echo "count $c"; test "$c" -ge 5' \
		"c=\$(cat count); if [ \$c = 3 ] && mkdir \"$dir.once\" 2>/dev/null; then :; $revert $signal fi; echo \$((c + 1)) >count"
	echo 0 >"$dir/count"
	if [ "$shape" = one ]; then
		one_loop "$dir" act.md "max_iterations: 8"
	else
		two_loops "$dir" act.md "max_iterations: 8" "max_iterations: 3"
	fi
	(cd "$dir" && git add -A && git commit -q -m "count from 0")
}

# labels DIR: the labels of the run's commits, oldest first
labels() {
	git -C "$1" log --reverse --format=%s |
		sed -n 's/^ai-loop\[[^]]*\]: iteration \([^ ]*\) .*/\1/p' | tr '\n' ' '
}

for case in "one 2" "two 2" "two 4"; do
	set -- $case
	shape=$1 back=$2
	project "$T/$shape-$back-ref" "$shape" none none
	(cd "$T/$shape-$back-ref" && "$AILOOP" run --quiet count >/dev/null 2>&1)
	want=$(labels "$T/$shape-$back-ref")
	for stop in none INT KILL; do
		R=$T/$shape-$back-$stop
		what="$shape loop(s), HEAD~$back, $stop"
		project "$R" "$shape" "$back" "$stop"
		cd "$R"
		run "$AILOOP" run --quiet count
		case $stop in
		none) expect_rc 0 "$what: the run goes on past the agent's checkout" ;;
		INT) expect_rc 3 "$what: the run pauses" ;;
		KILL) expect_eq "$rc" 137 "$what: ailoop is killed" ;;
		esac
		if [ "$stop" != none ]; then
			run "$AILOOP" resume
			expect_rc 0 "$what: the resume ends the run"
			expect_in "$err" "set back to an earlier commit" \
				"$what: the resume says the run's files were set back"
		fi
		expect_eq "$(labels "$R")" "$want" "$what: the iterations of the run left alone, each once"
		expect_eq "$(cat count)" 5 "$what: the count reached"
		expect_in "$(git show HEAD:.ai-loop/runs/"$(ls .ai-loop/runs | grep run_)"/run-state.md)" \
			"status: complete" "$what: the run is complete in its last commit"
		expect_eq "$(git status --porcelain)" "" "$what: nothing is left out of the last commit"
	done
done

# a run of an older ailoop, whose states count no steps, resumes as before
R=$T/old
project "$R" one none KILL
cd "$R"
run "$AILOOP" run --quiet count
expect_eq "$rc" 137 "old states: ailoop is killed"
state=$(ls -d .ai-loop/runs/run_*)/nodes/fix/orchestrator-output.md
sed -i '/^step: /d' "$state"
git add -A && git commit -q -m "an older ailoop's state"
run "$AILOOP" resume
expect_rc 0 "old states: the resume ends the run"
expect_not_in "$err" "set back" "old states: nothing is put back"
expect_eq "$(cat count)" 5 "old states: the count reached"

finish
