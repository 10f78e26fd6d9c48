#!/usr/bin/env bash
# The disk fills up in the middle of a run: the agent of the third
# iteration leaves only K KiB free on a small tmpfs, for K from nothing to
# more than an iteration writes, a page (4 KiB) apart, so that writes fail
# at every step ailoop takes (state, logs, objects, the index, the branch). The run stops with
# a clear error and is paused; once space is freed, one resume finishes it
# with the history of a run that never ran short, and `git fsck --strict`
# (reflogs included) finds nothing wrong at any point (dangling objects
# from a commit that could not be finished are no fault). So does a run
# that starts on a disk already (nearly) full, and a parallel node whose
# children work in worktrees (a worktree half made is not left behind),
# where an agent's own write may be the one that fails.
. "$(dirname "$0")/lib.sh"

DISK=$TEST_TMP/disk
mkdir -p "$DISK"
mount -t tmpfs -o size=6M tmpfs "$DISK" 2>"$TEST_TMP/mount.err" ||
	{ echo "skipped: cannot mount a tmpfs here ($(head -c 200 "$TEST_TMP/mount.err"))"; exit 77; }
trap 'if [ "$BASHPID" = "$test_shell" ]; then cd /; umount "$DISK"; rm -rf "$TEST_TMP"; fi' EXIT
export FILLED=$TEST_TMP/filled FILLER=$DISK/filler

# on_disk MAKE: a new repository $DISK/repo (R), made by MAKE, entered
on_disk() {
	R=$DISK/repo
	rm -rf "$R" "$FILLED" "$FILLER"
	"$1" "$R"
	cd "$R"
}

# fill_to KIB: the disk filled up to KIB KiB free
fill_to() {
	local avail
	avail=$(df -k --output=avail "$DISK" | tail -1)
	[ "$avail" -le "$1" ] || fallocate -l $(((avail - $1) * 1024)) "$FILLER"
}

# count_repo DIR: a loop counting to 5 whose actuator, the first time the
# count reaches 3, fills the disk up to $FREE_KIB KiB free
count_repo() {
	new_repo "$1"
	mkdir -p "$1/.ai-loop/agents"
	cat >"$1/.ai-loop/agents/sensor.md" <<'MD'
---
name: count
command: 'c=$(cat count); echo "count $c"; test "$c" -ge 5'
---
MD
	cat >"$1/.ai-loop/agents/fill.md" <<'MD'
---
name: increment
command: [sh, .ai-loop/agents/fill.sh]
---
MD
	cat >"$1/.ai-loop/agents/fill.sh" <<'SH'
echo $(($(cat count) + 1)) >count
if [ "$(cat count)" = 3 ] && [ -n "${FREE_KIB:-}" ] && [ ! -e "$FILLED" ]; then
	touch "$FILLED"
	avail=$(df -k --output=avail "$(dirname "$FILLER")" | tail -1)
	[ "$avail" -le "$FREE_KIB" ] || fallocate -l $(((avail - FREE_KIB) * 1024)) "$FILLER"
fi
SH
	echo 0 >"$1/count"
	one_loop "$1" fill.md "max_iterations: 8"
	commit_all "$1"
}

count_repo "$TEST_TMP/reference"
cd "$TEST_TMP/reference"
run "$AILOOP" run "count to 5"
expect_rc 0 "the reference run"
ref_triples=$(triples "$TEST_TMP/reference")
ref_tree=$(code_tree "$TEST_TMP/reference")

short=0
for free in $(seq 0 4 256); do # a page apart: every write of an iteration is the one that fails
	on_disk count_repo
	FREE_KIB=$free run "$AILOOP" run --quiet "count to 5"
	if [ "$rc" -ne 0 ]; then
		short=$((short + 1))
		expect_eq "$rc" 70 "$free KiB left: the run stops with exit 70"
		expect_in "$err" "No space left on device" "$free KiB left: the error says the disk is full"
		expect_in "$out$err" "is paused" "$free KiB left: the run is paused"
		expect_eq "$(git fsck --strict --no-dangling 2>&1)" "" "$free KiB left: git fsck --strict after the stop"
	fi
	rm -f "$FILLER"
	if [ "$rc" -ne 0 ]; then
		run "$AILOOP" resume
		expect_rc 0 "$free KiB left: the resume once space is back finishes the run"
	fi
	expect_eq "$(triples "$R")" "$ref_triples" "$free KiB left: the history of a run never short"
	expect_eq "$(code_tree "$R")" "$ref_tree" "$free KiB left: the tree of a run never short"
	expect_eq "$(git fsck --strict --no-dangling 2>&1)" "" "$free KiB left: git fsck --strict at the end"
	expect_eq "$(git status --porcelain)" "" "$free KiB left: nothing left uncommitted"
	cd "$TEST_TMP"
	rm -rf "$R"
done
# most of the amounts are too little for an iteration
[ "$short" -ge 30 ] && pass || fail "the disk ran full in most runs ($short)"

# --- a disk full before the run starts: its first writes fail ---------------------------
for free in 0 4 8 12 16 24 32 48; do
	on_disk count_repo
	fill_to "$free"
	touch "$FILLED" # (the agent fills nothing more)
	run "$AILOOP" run --quiet "count to 5"
	expect_eq "$rc" 70 "$free KiB left at the start: the run stops with exit 70"
	expect_in "$err" "No space left on device" "$free KiB left at the start: the error says so"
	expect_eq "$(git fsck --strict --no-dangling 2>&1)" "" "$free KiB left at the start: git fsck --strict"
	rm -f "$FILLER"
	run "$AILOOP" resume
	if [ "$rc" -eq 66 ]; then # stopped before the run existed: the user runs it again
		run "$AILOOP" run --quiet "count to 5"
	fi
	expect_rc 0 "$free KiB left at the start: the run finishes once space is back"
	expect_eq "$(triples "$R")" "$ref_triples" "$free KiB left at the start: the history of a run never short"
	expect_eq "$(git status --porcelain)" "" "$free KiB left at the start: nothing left uncommitted"
	cd "$TEST_TMP"
	rm -rf "$R"
done

# --- a parallel node in worktrees, on a disk nearly full from the start: its worktrees,
# its children's commits and the merges run short in turn
par_repo() {
	new_repo "$1"
	mkdir -p "$1/.ai-loop/agents"
	printf 'one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\n' >"$1/shared.txt"
	cp "$FIXTURES"/worktree/edit.md "$FIXTURES"/worktree/edit.sh "$1/.ai-loop/agents/"
	printf 'version: 1\nflow:\n  id: par\n  type: parallel\n  isolation: worktree\n  children:\n' \
		>"$1/.ai-loop/flow.yaml"
	for c in a:line-1-A b:line-8-B c:line-4-C; do
		printf '    - {id: %s, skill: %s, agent: .ai-loop/agents/edit.md}\n' "${c%%:*}" "${c#*:}" \
			>>"$1/.ai-loop/flow.yaml"
	done
	commit_all "$1"
}
# An agent may run short too (its sed fails): that pauses the run as well,
# and the resume runs the step again (invoke.c: disk_full).
for free in $(seq 0 16 320); do
	on_disk par_repo
	fill_to "$free"
	run "$AILOOP" run --quiet "in worktrees"
	if [ "$rc" -ne 0 ]; then
		expect_in "$err" "No space left on device" "parallel, $free KiB left: the error says so"
		expect_eq "$(git fsck --strict --no-dangling 2>&1)" "" "parallel, $free KiB left: git fsck --strict after the stop"
		rm -f "$FILLER"
		run "$AILOOP" resume
		[ "$rc" -ne 66 ] || run "$AILOOP" run --quiet "in worktrees"
		expect_rc 0 "parallel, $free KiB left: the run finishes once space is back"
	fi
	expect_eq "$(tr '\n' , <shared.txt)" "A,two,three,C,five,six,seven,B," "parallel, $free KiB left: every child's edit is merged"
	expect_eq "$(git worktree list | wc -l)" 1 "parallel, $free KiB left: no worktree left"
	expect_eq "$(git fsck --strict --no-dangling 2>&1)" "" "parallel, $free KiB left: git fsck --strict at the end"
	expect_eq "$(git status --porcelain)" "" "parallel, $free KiB left: nothing left uncommitted"
	cd "$TEST_TMP"
	rm -rf "$R"
done

finish
