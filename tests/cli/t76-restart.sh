#!/usr/bin/env bash
# A restart of the machine (a power loss) while a run is between two
# commits. From the run's first commit on, agents start without a durable
# point of their own (t66): what the run wrote since its last commit may
# be lost or torn on disk. That commit marks, in the git directory, that
# HEAD holds the run's state (this boot, the run's directory); after a
# restart (another boot) `ailoop resume` restores the run's files from
# HEAD, as a kill just after that commit would have left them, while the
# agents' work since then stays in the work tree as the disk kept it.
#
# At every crash point of a nested loop, and of a parallel node whose
# children share the work tree, the run is killed and then what a power
# loss may do is done to it: the mark's boot is made an earlier one, each
# of the run's files that differ from HEAD is torn (half of it, then
# zeros) or lost, its logs get a torn last line, and every other time
# git's index is torn. One resume must end
# the run as the run left alone ends (exit, status, tree), with every
# commit made before the kill still there (none lost) and no label twice,
# a clean `git fsck --strict` and work tree. The steps since the last
# commit run again: an agent whose work was done but not yet committed
# may be asked again (the fixer below then finds one item fewer to fix).
. "$(dirname "$0")/lib.sh"

[ -r /proc/sys/kernel/random/boot_id ] || { echo "skipped: the boot cannot be told here"; exit 77; }
T=$TEST_TMP
export AILOOP_FSYNC=1
restarts=0

# lose_move: the branch's move to the run's last commit, made durable only by
# the next commit's point (t66), lost: its ref file as before the move (and
# its reflog's last line gone), or torn
moves_lost=0
lose_move() {
	local intent old new ref
	intent=$(grep '^intent ' .git/ailoop-restorable | sort -k2,2n | tail -1)
	[ -n "$intent" ] || return 0
	read -r _ _ _ old new ref <<<"$intent"
	[ "$(git rev-parse -q --verify "$ref")" = "$new" ] || return 0
	moves_lost=$((moves_lost + 1))
	if [ $((moves_lost % 2)) -eq 1 ]; then
		printf '%s\n' "$old" >".git/$ref"
		sed -i '$d' ".git/logs/$ref"
		[ "$ref" = HEAD ] || sed -i '$d' .git/logs/HEAD
	else
		printf '\0\0\0\0' >".git/$ref"
	fi
}

# tear_index [INDEX]: git's index torn, half of it then zeros
tear_index() {
	local index=${1:-.git/index}
	{ head -c $(($(stat -c %s "$index") / 2)) "$index"; printf '\0\0\0\0'; } >"$index.torn"
	mv "$index.torn" "$index"
}

# power_loss: after a kill, what a power loss may leave of what the run wrote since its last commit
power_loss() {
	[ -e .git/ailoop-restorable ] || return 0
	restarts=$((restarts + 1))
	sed -i 's/^boot .*/boot 00000000-0000-0000-0000-000000000000/' .git/ailoop-restorable
	# pending (before the first commit here): what the run wrote was synced, objects aside
	grep -q '^run ' .git/ailoop-restorable || return 0
	git status --porcelain --untracked-files=all -- .ai-loop/runs | cut -c4- | awk '{ print NR, $0 }' |
		while read -r n path; do
			[ -f "$path" ] || continue
			if [ $((n % 3)) -eq 0 ]; then
				rm -f "$path"
			else
				{ head -c $(($(stat -c %s "$path") / 2)) "$path"; printf '\0\0\0\0'; } >"$path.torn"
				mv "$path.torn" "$path"
			fi
		done
	for log in .ai-loop/runs/*/events.jsonl .ai-loop/runs/*/memory.jsonl; do
		[ ! -f "$log" ] || printf '{"torn' >>"$log"
	done
	[ $((restarts % 2)) -eq 1 ] || tear_index # as a commit wrote it, every other restart
	lose_move # (last: what differs from HEAD is what differs from the commit the run made)
}

# restarted: the kill's commits (in $before), then a power loss
restarted() {
	before=$(triples .)
	power_loss
}

# none_lost HISTORY: every commit made before the kill is still there, and no label twice
none_lost() {
	[ -z "$before" ] || [ "${1#"$before"}" != "$1" ] || return 1
	[ -z "$(printf '%s\n' "$1" | awk '{ print $1, $2 }' | sort | uniq -d)" ]
}

# --- a loop whose actuator is a loop ----------------------------------------------------
loop_repo "$T/nested" a b c
two_loops "$T/nested" fixer.md
commit_all "$T/nested"
reference_run "$T/nested" "fix all" triples
expect_eq "$ref_rc $ref_status" "0 complete" "the reference run succeeds"
[ ! -e .git/ailoop-restorable ] && pass || fail "a run that ended left its mark"
cp "$T/points" "$T/nested-points"
nested_ref=$ref_triples
kill_each_point "$T/nested" "fix all" triples restarted none_lost
[ "$restarts" -gt 20 ] && pass || fail "only $restarts restarts simulated"
[ "$moves_lost" -gt 10 ] && pass || fail "only $moves_lost moves of the branch lost"
nested_restarts=$restarts

# --- rounds of a parallel node whose children share the work tree ------------------
loop_repo "$T/parallel" x
scripted_agents "$T/parallel" action
parallel_rounds "$T/parallel"
printf 'creates "$skill-$AILOOP_ITERATION.txt"\n' >"$T/plan"
export PLAN=$T/plan
commit_all "$T/parallel"
settled() {
	local i=0
	while ! flock -n .git/ailoop.lock true && [ $i -lt 100 ]; do sleep 0.02; i=$((i + 1)); done
	[ $i -lt 100 ] && restarted
}
reference_run "$T/parallel" "deliver it" triples
expect_eq "$ref_rc $ref_status" "0 complete" "the parallel reference run succeeds"
kill_each_point "$T/parallel" "deliver it" triples settled none_lost
[ "$((restarts - nested_restarts))" -gt 20 ] && pass || fail "only $((restarts - nested_restarts)) restarts simulated"

# --- what the restart looks like --------------------------------------------------------
# the resume says what it did; a kill in this boot restores nothing
w=$T/one
rm -rf "$w" && cp -a "$T/nested" "$w" && cd "$w"
point=$(grep ' running .*/logs/actuator.log' "$T/nested-points" | sed -n 3p | cut -d' ' -f1)
rc=$({ AILOOP_CRASH_AT=$point "$AILOOP" run --quiet "fix all" >/dev/null 2>&1; echo $?; } 2>/dev/null)
expect_eq "$rc" 137 "killed while its third fixer works"
grep -q "^boot $(cat /proc/sys/kernel/random/boot_id)\$" .git/ailoop-restorable && pass ||
	fail "the mark names this boot"
cp -a "$w" "$T/same-boot"
cp -a "$w" "$T/stuck"
cp -a "$w" "$T/index-stuck"
head=$(git rev-parse --short=7 HEAD)
branch=$(git symbolic-ref HEAD)
lost=$moves_lost
power_loss
: >.git/index.lock # a restart can leave git's lock files too
: >".git/$branch.lock"
tear_index
[ "$moves_lost" -gt "$lost" ] && pass || fail "the branch's last move lost"
run "$AILOOP" resume
expect_rc 0 "the resume after the restart"
expect_in "$err" "the machine restarted before $branch was on disk at the run's last commit ($head): it is there again" \
	"the resume says it moved the branch again"
expect_in "$err" "the machine restarted while git's index was written: it is made again from HEAD" \
	"the resume says it made git's index again"
expect_in "$err" "the machine restarted while run $(ls .ai-loop/runs | grep run_) was between two commits: its files are as its last commit ($head) left them" \
	"the resume says what it restored"
expect_eq "$(tail -c 1 .ai-loop/runs/run_*/events.jsonl | od -An -c | tr -d ' ')" '\n' \
	"the torn line of the events is ended"
[ ! -e .git/ailoop-restorable ] && pass || fail "the mark is left behind"
cd "$T/same-boot"
run "$AILOOP" resume
expect_rc 0 "the resume after a kill in this boot"
expect_not_in "$err" "restarted" "a kill in this boot restores nothing"

# --- a commit the restart tore did not happen: the branch stays, the torn objects go ---------
cd "$T" && rm -rf torn && cp -a "$T/stuck" torn && cd torn
read -r _ _ _ old new ref <<<"$(grep '^intent ' .git/ailoop-restorable | sort -k2,2n | tail -1)"
expect_eq "$(git rev-parse "$ref")" "$new" "the killed run's last commit has its intent in the mark"
blob=$(git diff-tree -r "$old" "$new" -- todo.txt .ai-loop/runs | awk '{ print $4 }' | head -1)
tear() { # tear OBJECT: its loose file, as a restart may leave it
	local f=.git/objects/${1:0:2}/${1:2}
	rm -f "$f" && printf '\0\0\0\0' >"$f"
}
tear "$new"
tear "$blob"
printf '%s\n' "$old" >".git/$ref"
sed -i 's/^boot .*/boot 00000000-0000-0000-0000-000000000000/' .git/ailoop-restorable
before=$(triples .)
run "$AILOOP" resume
expect_rc 0 "the resume after a restart that tore the last commit"
expect_not_in "$err" "it is there again" "the torn commit is not taken"
expect_in "$err" "its files are as its last commit (${old:0:7}) left them" "the run goes on from the one before"
[ ! -e ".git/objects/${new:0:2}/${new:2}" ] && pass || fail "the torn commit's object is left"
none_lost "$(triples .)" && pass || fail "a commit lost, or a label twice"
expect_eq "$(run_status)" complete "the run ends"
git fsck --strict >/dev/null 2>&1 && pass || fail "git fsck after the torn commit: $(git fsck --strict 2>&1 | head -3)"

# the same, the ref's file torn too, and no intent before (the first after
# the mark): the branch goes back to the commit before
cd "$T" && rm -rf torn-ref && cp -a "$T/stuck" torn-ref && cd torn-ref
tear "$new"
tear "$blob"
git update-ref "$ref" "$old" && before=$(triples .)
printf '\0\0\0\0' >".git/$ref"
sed -i "/^intent [0-9]* [0-9]* [0-9a-f]* $old /s/./x/g" .git/ailoop-restorable
expect_eq "$(grep -c '^intent ' .git/ailoop-restorable)" 1 "one intent left in the mark"
sed -i 's/^boot .*/boot 00000000-0000-0000-0000-000000000000/' .git/ailoop-restorable
run "$AILOOP" resume
expect_rc 0 "the resume after a restart that tore the last commit and the branch's file"
expect_in "$err" "before $ref was on disk at the run's last commit (${old:0:7}): it is there again" \
	"the branch is on the commit before the torn one again"
none_lost "$(triples .)" && pass || fail "torn ref: a commit lost, or a label twice"
expect_eq "$(run_status)" complete "torn ref: the run ends"
git fsck --strict >/dev/null 2>&1 && pass || fail "git fsck after the torn ref: $(git fsck --strict 2>&1 | head -3)"

# --- an object torn after the last durable point, written again: it is written anew --------
# The agent's work reached the disk, the blob ailoop made of it just before
# the restart did not: written again by the resumed commit, libgit2 would
# keep the torn file as it is, and the commit would name it.
# torn_later MARK-STATE: a file the agent wrote, its blob torn, the boot another; one resume
torn_later() {
	printf 'the agent wrote this before the restart\n' >notes.txt
	local blob
	blob=$(git hash-object notes.txt)
	mkdir -p ".git/objects/${blob:0:2}" && printf '\0\0\0\0' >".git/objects/${blob:0:2}/${blob:2}"
	sed -i 's/^boot .*/boot 00000000-0000-0000-0000-000000000000/' .git/ailoop-restorable
	before=$(triples .)
	run "$AILOOP" resume
	expect_rc 0 "$1: the resume after a restart that tore an object"
	none_lost "$(triples .)" && pass || fail "$1: a commit lost, or a label twice"
	expect_eq "$(run_status)" complete "$1: the run ends"
	expect_eq "$(git show HEAD:notes.txt 2>&1)" "the agent wrote this before the restart" \
		"$1: the agent's file is committed"
	git fsck --strict >/dev/null 2>&1 && pass || fail "$1: git fsck: $(git fsck --strict 2>&1 | head -3)"
}
# after the newest intent, whose commit reads whole (the next had not reached its intent)
cd "$T" && rm -rf torn-later && cp -a "$T/stuck" torn-later && cd torn-later
grep -q '^run ' .git/ailoop-restorable && pass || fail "the killed run's mark names its directory"
torn_later "after the intents"
# before the run's first commit: the mark is pending (what the run wrote was synced before each agent)
cd "$T" && rm -rf torn-first && cp -a "$T/nested" torn-first && cd torn-first
point=$(grep -m1 ' staged$' "$T/nested-points" | cut -d' ' -f1)
rc=$({ AILOOP_CRASH_AT=$point "$AILOOP" run --quiet "fix all" >/dev/null 2>&1; echo $?; } 2>/dev/null)
expect_eq "$rc" 137 "killed as its first commit staged"
expect_eq "$(git log --format=%s | grep -c '^ai-loop')" 0 "before the commit"
expect_eq "$(sed -n 's/^\(boot\|since\) .*/\1/p' .git/ailoop-restorable | tr '\n' ' ')" "boot since " \
	"the mark is pending"
torn_later "the first commit"

# a parallel node whose children work in worktrees: the mark is pending while they do
loop_repo "$T/wt" x
scripted_agents "$T/wt" action
worktree_children "$T/wt"
commit_all "$T/wt"
reference_run "$T/wt" "deliver it" triples
expect_eq "$ref_rc $ref_status" "0 complete" "the worktree reference run succeeds"
cd "$T" && rm -rf torn-wt && cp -a "$T/wt" torn-wt && cd torn-wt
point=$(grep -n 'ailoop-restorable$' "$T/points" | sed -n 3p | cut -d: -f1)
rc=$({ AILOOP_CRASH_AT=$point "$AILOOP" run --quiet "deliver it" >/dev/null 2>&1; echo $?; } 2>/dev/null)
expect_eq "$rc" 137 "killed as the parallel node marks"
expect_eq "$(sed -n 's/^\(boot\|since\) .*/\1/p' .git/ailoop-restorable | tr '\n' ' ')" "boot since " \
	"the mark is pending while the children work in worktrees"
blob=$(echo "made by a" | git hash-object --stdin)
mkdir -p ".git/objects/${blob:0:2}" && printf '\0\0\0\0' >".git/objects/${blob:0:2}/${blob:2}"
sed -i 's/^boot .*/boot 00000000-0000-0000-0000-000000000000/' .git/ailoop-restorable
run "$AILOOP" resume
expect_rc 0 "the resume after a restart that tore a child's blob"
expect_eq "$(run_status)" complete "worktrees: the run ends"
expect_eq "$(git show HEAD:a-0.txt 2>&1)" "made by a" "the child's file is merged whole"
git fsck --strict >/dev/null 2>&1 && pass || fail "worktrees: git fsck: $(git fsck --strict 2>&1 | head -3)"
# a child killed as its commit staged, its worktree's index torn by the restart (and locked)
cd "$T" && rm -rf torn-wt-index && cp -a "$T/wt" torn-wt-index && cd torn-wt-index
point=$(grep -n ' staged$' "$T/points" | sed -n 2p | cut -d: -f1)
AILOOP_CRASH_AT=$point "$AILOOP" run --quiet "deliver it" >/dev/null 2>&1
i=0
while ! flock -n .git/ailoop.lock true && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
[ $i -lt 100 ] && pass || fail "the run is still going after its child's kill"
n=0
for index in .git/worktrees/*/index; do
	[ -f "$index" ] || continue
	tear_index "$index" && : >"$index.lock" && n=$((n + 1))
done
[ "$n" -gt 0 ] && pass || fail "no worktree's index to tear"
sed -i 's/^boot .*/boot 00000000-0000-0000-0000-000000000000/' .git/ailoop-restorable
run "$AILOOP" resume
expect_rc 0 "the resume after a restart that tore a worktree's index"
expect_in "$err" "the machine restarted while git's index of worktree $PWD/.ai-loop/runs/" \
	"the resume says it made the worktree's index again"
expect_eq "$(run_status)" complete "torn worktree index: the run ends"
expect_eq "$(triples . | sort)" "$(printf '%s\n' "$ref_triples" | sort)" \
	"torn worktree index: the run ends as the one left alone (its children's commits in either order)"
git fsck --strict >/dev/null 2>&1 && pass || fail "torn worktree index: git fsck: $(git fsck --strict 2>&1 | head -3)"

# --- a run that pauses leaves no mark: a later restart keeps its pause --------------------
cd "$T" && rm -rf paused && cp -a "$T/nested" paused && cd paused
cat >.ai-loop/agents/slow.md <<'MD'
---
name: slow
command: 'sleep 30'
---
MD
two_loops . slow.md
commit_all .
"$AILOOP" run --quiet "fix all" >/dev/null 2>&1 &
pid=$!
wait_for .git/ailoop-restorable 10
kill -INT "$pid"
wait "$pid" && rc=0 || rc=$?
expect_eq "$rc $(run_status)" "3 paused" "the run pauses on Ctrl-C"
[ ! -e .git/ailoop-restorable ] && pass || fail "a paused run left its mark"

# --- a mark that cannot be read: run and resume stop before they look at anything ----------------
cd "$T" && rm -rf unreadable && cp -a "$T/nested" unreadable && cd unreadable
mkdir -p .git/ailoop-restorable/x
run "$AILOOP" run --quiet "fix all"
expect_rc 70 "a mark that cannot be read"
expect_in "$err" "ailoop-restorable': Is a directory" "says which file and why"
expect_eq "$(git log --oneline | wc -l)" 2 "and nothing was committed"

# --- a mark that cannot be written: the run pauses at its first commit, the resume goes on ------
cd "$T" && rm -rf unwritable && cp -a "$T/nested" unwritable && cd unwritable
mkdir .git/ailoop-restorable.lock
run "$AILOOP" run --quiet "fix all"
expect_rc 70 "a mark that cannot be written"
expect_in "$err" "ailoop-restorable.lock': File exists" "says which file and why"
expect_eq "$(run_status)" paused "the run is paused"
rmdir .git/ailoop-restorable.lock
run "$AILOOP" resume
expect_rc 0 "the resume once it can be written"
expect_eq "$(triples .)" "$nested_ref" "and the run ends as the one left alone"

# --- a mark that cannot be removed (immutable): resume stops and says so -------------------
cd "$T/stuck"
if chattr +i .git/ailoop-restorable 2>/dev/null; then
	run "$AILOOP" resume
	chattr -i .git/ailoop-restorable
	expect_rc 70 "a mark that cannot be removed"
	expect_in "$err" "cannot remove" "says so"
	run "$AILOOP" resume
	expect_rc 0 "the resume once it can be"
	# a torn index that cannot be removed: the resume stops and says so, then goes on
	cd "$T/index-stuck"
	tear_index
	sed -i 's/^boot .*/boot 00000000-0000-0000-0000-000000000000/' .git/ailoop-restorable
	chattr +i .git/index
	run "$AILOOP" resume
	chattr -i .git/index
	expect_rc 70 "a torn index that cannot be removed"
	expect_in "$err" "cannot remove '$PWD/.git/index'" "says which file"
	run "$AILOOP" resume
	expect_rc 0 "the resume once it can be"
	expect_in "$err" "git's index was written: it is made again from HEAD" "and makes it again"
else
	echo "skipped: chattr +i does not work here (the mark that cannot be removed)"
fi
finish
