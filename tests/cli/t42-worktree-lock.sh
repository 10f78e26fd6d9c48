#!/usr/bin/env bash
# One live ailoop per work tree: two `ailoop run` started at the same
# instant, or a `resume` of another run while one is live, leave exactly
# one at work; the other exits 75 naming the holder and has written
# nothing (no run directory, no branch, no checkout).
. "$(dirname "$0")/lib.sh"

export GATE=$TEST_TMP/gate STARTED=$TEST_TMP/started
BARRIER=$TEST_TMP/barrier
mkfifo "$BARRIER"

# together CMD...: runs CMD in the background once `release` is called,
# at the same instant as the others: opening a FIFO to read waits for a writer
together() {
	exec sh -c ': <"$0"; exec "$@"' "$BARRIER" "$@"
}

# release: lets every `together` go at once (and any late one at once too)
release() {
	sleep 0.2
	exec 3<>"$BARRIER"
}

# pick_winner P1 P2: waits until one of them ends (the loser), and sets
# winner/loser to their pids and lerr to the loser's stderr
pick_winner() {
	local i=0
	while kill -0 "$1" 2>/dev/null && kill -0 "$2" 2>/dev/null && [ $i -lt 200 ]; do
		sleep 0.05
		i=$((i + 1))
	done
	if kill -0 "$1" 2>/dev/null; then winner=$1 loser=$2 lerr=$TEST_TMP/err2
	else winner=$2 loser=$1 lerr=$TEST_TMP/err1; fi
}

gated_repo() {
	R=$TEST_TMP/$1
	loop_repo "$R" a b
	one_loop "$R" gated.md
	commit_all "$R"
	cd "$R"
}

# paused_run TASK: a run of TASK here, paused (SIGINT) while its agent works
paused_run() {
	local pid
	touch "$GATE"
	rm -f "$STARTED"
	"$AILOOP" run "$1" >/dev/null 2>&1 &
	pid=$!
	wait_for "$STARTED"
	kill -INT "$pid"
	wait "$pid" 2>/dev/null
}

# --- two runs started together: one runs, the other is refused untouched -------------
for trial in 1 2 3 4 5 6 7 8 9 10; do
	gated_repo race$trial
	touch "$GATE"
	rm -f "$STARTED"
	together "$AILOOP" run "fix all" >"$TEST_TMP/out1" 2>"$TEST_TMP/err1" &
	p1=$!
	together "$AILOOP" run "fix all" >"$TEST_TMP/out2" 2>"$TEST_TMP/err2" &
	p2=$!
	release
	# the loser ends at once; the winner waits at its gate
	pick_winner $p1 $p2
	exec 3>&-
	wait $loser && rc=0 || rc=$?
	expect_eq "$rc" 75 "trial $trial: the second run started at once exits 75"
	expect_in "$(cat "$lerr")" "is locked by ailoop pid $winner on " \
		"trial $trial: the refusal names the live ailoop"
	wait_for "$STARTED" && pass || fail "trial $trial: the winner is at work"
	expect_eq "$(ls .ai-loop/runs | grep -c '^run_')" 1 "trial $trial: one run directory"
	expect_eq "$(git branch --list 'ai-loop/*' | wc -l)" 1 "trial $trial: one ai-loop branch"
	rm -f "$GATE"
	wait $winner && rc=0 || rc=$?
	expect_eq "$rc" 0 "trial $trial: the winner finishes"
	expect_eq "$(git status --porcelain)" "" "trial $trial: clean tree after the winner"
	expect_eq "$(labels "$R")" "0 1 2 3" "trial $trial: the winner's history is whole"
done

# --- while a run is live, nothing else starts, even with --new ---------------------------
gated_repo live
touch "$GATE"
rm -f "$STARTED"
"$AILOOP" run "fix all" >"$TEST_TMP/out1" 2>"$TEST_TMP/err1" &
first=$!
wait_for "$STARTED" && pass || fail "the live run is at work"
run "$AILOOP" run --new "another"
expect_rc 75 "run --new while a run is live"
expect_in "$err" "is locked by ailoop pid $first on " "run --new names the holder"
expect_in "$err" "run_" "the holder's run is named"
run "$AILOOP" run --no-branch --new "another"
expect_rc 75 "run --no-branch while a run is live"
expect_eq "$(ls .ai-loop/runs | grep -c '^run_')" 1 "no second run directory"
rm -f "$GATE"
wait "$first" && rc=0 || rc=$?
expect_eq "$rc" 0 "the live run finishes"

# --- resume OTHER-ID while a run is live: refused, nothing checked out ----------------
gated_repo other
paused_run "first task"
first_id=$(ls .ai-loop/runs | grep '^run_')
first_branch=$(git branch --show-current)
git stash -q -u
git checkout -q main
rm -f "$STARTED"
"$AILOOP" run --new "second task" >"$TEST_TMP/out1" 2>"$TEST_TMP/err1" &
second=$!
wait_for "$STARTED" && pass || fail "the second run is at work"
live_branch=$(git branch --show-current)
run "$AILOOP" resume "$first_id"
expect_rc 75 "resume of another run while one is live"
expect_in "$err" "is locked by ailoop pid $second on " "resume OTHER-ID names the holder"
expect_not_in "$err" "checking it out" "resume OTHER-ID does not check out its branch"
expect_eq "$(git branch --show-current)" "$live_branch" "the live run's branch stays checked out"
run "$AILOOP" resume
expect_rc 75 "resume without an id while a run is live"
expect_eq "$(git branch --show-current)" "$live_branch" "still the live run's branch"
rm -f "$GATE"
wait "$second" && rc=0 || rc=$?
expect_eq "$rc" 0 "the live run finishes undisturbed"
expect_eq "$(labels "$R")" "0 1 2 3" "the live run's history is whole"
run "$AILOOP" resume "$first_id"
expect_rc 0 "the other run resumes once the live one ended"
expect_eq "$(git branch --show-current)" "$first_branch" "on the resumed run's branch"

# --- two resumes started together: one resumes, the other is refused -----------------
for trial in 1 2 3; do
	gated_repo resume$trial
	paused_run "fix all"
	git stash -q -u
	git checkout -q main
	rm -f "$STARTED"
	together "$AILOOP" resume >"$TEST_TMP/out1" 2>"$TEST_TMP/err1" &
	p1=$!
	together "$AILOOP" resume >"$TEST_TMP/out2" 2>"$TEST_TMP/err2" &
	p2=$!
	release
	pick_winner $p1 $p2
	exec 3>&-
	wait $loser && rc=0 || rc=$?
	expect_eq "$rc" 75 "resume trial $trial: the second resume exits 75"
	expect_in "$(cat "$lerr")" "is locked by ailoop pid $winner on " \
		"resume trial $trial: the refusal names the live ailoop"
	rm -f "$GATE"
	wait $winner && rc=0 || rc=$?
	expect_eq "$rc" 0 "resume trial $trial: the winner finishes"
	expect_eq "$(labels "$R")" "0 1 2 3" "resume trial $trial: one history"
done

# --- a lock held by a process that names nobody; a lock file that cannot be opened ----
gated_repo foreign
flock .git/ailoop.lock sleep 30 &
holder=$!
i=0
while flock -n .git/ailoop.lock true && [ $i -lt 100 ]; do # until the holder has it
	sleep 0.05
	i=$((i + 1))
done
run "$AILOOP" run "fix all"
expect_rc 75 "a work tree locked by another process"
expect_in "$err" "the work tree is locked by another process" "an unnamed holder is still named a holder"
[ ! -e .ai-loop/runs ] && pass || fail "nothing written while locked by another process"
run "$AILOOP" resume
expect_rc 75 "resume in a work tree locked by another process"
kill "$holder"
wait "$holder" 2>/dev/null
rm -f .git/ailoop.lock
mkdir .git/ailoop.lock
run "$AILOOP" run "fix all"
expect_rc 70 "a lock file that is a directory"
expect_in "$err" "cannot open '" "the lock file that cannot be opened is named"
expect_in "$err" "ailoop.lock': " "the lock file's name and why"
[ ! -e .ai-loop/runs ] && pass || fail "nothing written without the lock"
rmdir .git/ailoop.lock
printf 'keep\n' >"$TEST_TMP/outside"
ln -s "$TEST_TMP/outside" .git/ailoop.lock
run "$AILOOP" run "fix all"
expect_rc 70 "a lock file that is a symbolic link"
expect_in "$err" "cannot open '" "the linked lock file is named"
expect_eq "$(cat "$TEST_TMP/outside")" "keep" "the link's target is not written"
[ ! -e .ai-loop/runs ] && pass || fail "nothing written through a linked lock"
rm .git/ailoop.lock

# --- a lock its named holder, gone, left held: a process it was starting holds it -------
# (killed as it started an agent, ailoop leaves the child holding the lock
# until its exec closes it; a parallel child, until the parent's death
# reaches it): waited for a moment, then named for what it is
gone_holder() { # SECONDS [LOCK]: holds LOCK that long, in the name of a gone ailoop
	local dead lock=${2:-.git/ailoop.lock}
	dead=$(sh -c 'echo $$')
	sh -c 'exec 9>>"$3"; flock -x 9; printf "ailoop pid %s on %s, run run_x\n" "$1" "$(hostname)" >"$3"; exec sleep "$2"' \
		sh "$dead" "$1" "$lock" &
	holder=$!
	i=0
	until grep -q "^ailoop pid $dead " "$lock" 2>/dev/null || [ $i -ge 100 ]; do
		sleep 0.05
		i=$((i + 1))
	done
}
gated_repo gone
gone_holder 1
run "$AILOOP" run "fix all"
expect_rc 0 "a lock a gone holder's leftover let go of within a second: the run waits, then runs"
expect_eq "$(cat todo.txt)" "" "and does its work"
wait "$holder"
gated_repo gone-long
gone_holder 30
run "$AILOOP" run "fix all"
expect_rc 75 "a lock a gone holder's leftover keeps: exit 75"
expect_in "$err" ", which is gone: a process it started holds the lock ('fuser -v " \
	"it says the holder is gone and how to find what holds the lock"
[ ! -e .ai-loop/runs ] && pass || fail "nothing written while the leftover holds the lock"
kill "$holder"
wait "$holder" 2>/dev/null
run "$AILOOP" run "fix all"
expect_rc 0 "once it is gone, the run runs"
# the same for a run's own lock, at its resume
gated_repo gone-run
paused_run "fix all"
rm -f "$GATE"
gone_holder 1 ".ai-loop/runs/$(ls .ai-loop/runs | grep '^run_')/lock"
run "$AILOOP" resume
expect_rc 0 "a run's lock a gone holder's leftover let go of within a second: the resume waits, then runs"
expect_eq "$(cat todo.txt)" "" "and the run is done"
wait "$holder"

# --- stderr closed: ailoop's messages go nowhere, not into the lock it holds ----------------
# (the first file opened would take descriptor 2: the work tree's lock,
# which `status` reads for its holder)
R=$TEST_TMP/closed
loop_repo "$R" a
cat >"$R/.ai-loop/agents/peek.md" <<MD
---
name: peek
command: 'cat .git/ailoop.lock >"$TEST_TMP/lock-seen"; sh .ai-loop/agents/fix.sh'
---
MD
one_loop "$R" peek.md
commit_all "$R"
cd "$R"
"$AILOOP" run "fix all" >"$TEST_TMP/closed.out" 2>&-
expect_eq "$?" 0 "a run with stderr closed completes"
expect_in "$(cat "$TEST_TMP/lock-seen")" "ailoop pid " "the lock names its holder"
expect_not_in "$(cat "$TEST_TMP/lock-seen")" "ailoop: [" "and holds none of the run's messages"
expect_in "$(cat "$TEST_TMP/closed.out")" "complete" "stdout still has the run's summary"

finish
