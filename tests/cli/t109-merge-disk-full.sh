#!/usr/bin/env bash
# The disk fills up while a merge of a worktree child writes the child's
# files into the main work tree: the run pauses with the disk's error, and
# the file the checkout was writing is left half written. ailoop knows the
# files its own checkout was writing (a record in the git directory, made
# before the checkout), so once space is freed one resume writes that file
# whole and finishes the run, as a run never short would have. A change of
# the user's to such a file meanwhile is still theirs: the merge refuses
# to overwrite it.
. "$(dirname "$0")/lib.sh"

DISK=$TEST_TMP/disk
mkdir -p "$DISK"
mount -t tmpfs -o size=8M tmpfs "$DISK" 2>"$TEST_TMP/mount.err" ||
	{ echo "skipped: cannot mount a tmpfs here ($(head -c 200 "$TEST_TMP/mount.err"))"; exit 77; }
trap 'if [ "$BASHPID" = "$test_shell" ]; then cd /; umount "$DISK"; rm -rf "$TEST_TMP"; fi' EXIT
export FILLER=$DISK/filler

# big_repo DIR: a parallel node in worktrees whose one child writes big.bin
# (1 MiB that does not compress, the same each time) and then fills the
# disk up to $FREE_KIB KiB free beyond what its commit needs: the merge's
# checkout of big.bin runs short
big_repo() {
	new_repo "$1"
	mkdir -p "$1/.ai-loop/agents"
	head -c 1048576 /dev/urandom >"$TEST_TMP/big.bin"
	printf -- '---\nname: big\ncommand: sh .ai-loop/agents/big.sh\n---\n' >"$1/.ai-loop/agents/big.md"
	cat >"$1/.ai-loop/agents/big.sh" <<SH
cp "$TEST_TMP/big.bin" big.bin
avail=\$(df -k --output=avail "$DISK" | tail -1)
keep=\$((1024 + \${FREE_KIB:-0}))
[ "\$avail" -le "\$keep" ] || fallocate -l \$(((avail - keep) * 1024)) "$FILLER"
SH
	printf 'version: 1\nflow:\n  id: par\n  type: parallel\n  isolation: worktree\n  children:\n' >"$1/.ai-loop/flow.yaml"
	printf '    - {id: a, skill: a, agent: .ai-loop/agents/big.md}\n' >>"$1/.ai-loop/flow.yaml"
	commit_all "$1"
}

short=0
for free in $(seq 64 64 960); do
	R=$DISK/repo
	rm -rf "$R" "$FILLER"
	big_repo "$R"
	cd "$R"
	FREE_KIB=$free run "$AILOOP" run --quiet "big"
	if [ "$rc" -ne 0 ]; then
		expect_eq "$rc" 70 "$free KiB: the run stops with exit 70"
		expect_in "$err" "No space left on device" "$free KiB: the error says the disk is full"
		if [ -e big.bin ] && ! cmp -s big.bin "$TEST_TMP/big.bin"; then
			short=$((short + 1))
		fi
		rm -f "$FILLER"
		run "$AILOOP" resume
		expect_rc 0 "$free KiB: one resume once space is back finishes the run"
	fi
	cmp -s big.bin "$TEST_TMP/big.bin" && pass || fail "$free KiB: big.bin whole in the work tree"
	expect_eq "$(git status --porcelain)" "" "$free KiB: nothing left uncommitted"
	expect_eq "$(git worktree list | wc -l)" 1 "$free KiB: no worktree left"
	expect_eq "$(git fsck --strict --no-dangling 2>&1)" "" "$free KiB: git fsck --strict at the end"
	cd "$TEST_TMP"
	rm -rf "$R"
done
[ "$short" -ge 3 ] && pass || fail "the merge's checkout ran short in some runs ($short)"

# --- the user changes the half-written file while the run is paused: theirs -------------
R=$DISK/repo
rm -rf "$R" "$FILLER"
big_repo "$R"
cd "$R"
FREE_KIB=256 run "$AILOOP" run --quiet "big"
expect_rc 70 "the merge's checkout runs short"
[ -e big.bin ] && ! cmp -s big.bin "$TEST_TMP/big.bin" && pass || fail "big.bin is left half written"
rm -f "$FILLER"
echo user >big.bin
run "$AILOOP" resume
expect_rc 1 "the user's change to the file is not taken for ailoop's"
expect_in "$err" "your change to 'big.bin' in the main work tree would be overwritten" "the error names the file"
expect_eq "$(cat big.bin)" "user" "the user's change is kept"
rm big.bin # the user lets the child's version stand
run "$AILOOP" resume
expect_rc 0 "then the resume finishes the run"
cmp -s big.bin "$TEST_TMP/big.bin" && pass || fail "big.bin whole in the work tree"
expect_eq "$(git status --porcelain)" "" "nothing left uncommitted"
cd "$TEST_TMP"
rm -rf "$R"

finish
