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

# An agent that rewrites the branch (reset, amend) before the stop: with the
# run's files from the commits it dropped, resume refuses as the run would
# have (going on would skip their labels) and says how to put the branch
# back, after which the run ends as the run left alone; with the files set
# back along (reset --hard), the run goes on from where the branch is.
project "$T/rewrite-ref" one none none
(cd "$T/rewrite-ref" && "$AILOOP" run --quiet count >/dev/null 2>&1)
want=$(labels "$T/rewrite-ref")
for case in "soft KILL" "amend INT" "hard KILL"; do
	set -- $case
	R=$T/rewrite-$1
	project "$R" one none "$2"
	case $1 in
	soft) tamper="git reset -q --soft HEAD~2" ;;
	amend) tamper="git commit -q --amend -m mine" ;;
	hard) tamper="git reset -q --hard HEAD~2" ;;
	esac
	sed -i "s|then :;|then :; $tamper;|" "$R/.ai-loop/agents/act.md"
	(cd "$R" && git commit -qam "the agent rewrites the branch")
	cd "$R"
	run "$AILOOP" run --quiet count
	run "$AILOOP" resume
	if [ "$1" = hard ]; then
		expect_rc 0 "$1: the resume goes on from the branch as it is"
	else
		expect_rc 1 "$1: the resume refuses the branch that lost the run's last commit"
		expect_in "$err" "does not contain ailoop's last commit" "$1: the resume says why"
		way=$(printf '%s\n' "$err" | sed -n "s/.*put it back with '\([^']*\)'.*/\1/p")
		expect_in "$way" "git reset --soft" "$1: the resume says how to put it back"
		sh -c "$way"
		run "$AILOOP" resume
		expect_rc 0 "$1: after the way back, the resume ends the run"
	fi
	expect_eq "$(labels "$R")" "$want" "$1: the iterations of the run left alone, each once"
	expect_eq "$(cat count)" 5 "$1: the count reached"
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
