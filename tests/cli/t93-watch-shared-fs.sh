#!/usr/bin/env bash
# A work tree on a filesystem other hosts may write to (NFS, a cluster
# filesystem, FUSE): inotify reports only what this host's processes do
# there, so no commit trusts a watch of it. A bindfs mount (FUSE) of a
# directory stands for such a filesystem: the agent fixes its item through
# the mount, and also writes to the directory beneath it, as a process on
# another host would; every commit records both, as a full scan does.
. "$(dirname "$0")/lib.sh"

command -v bindfs >/dev/null || { echo "skipped: bindfs is not installed"; exit 77; }
BENEATH=$TEST_TMP/beneath
MOUNT=$TEST_TMP/mount
loop_repo "$BENEATH" item-1 item-2 item-3
one_loop "$BENEATH" remote.md "max_iterations: 5"
printf -- '---\nname: fixer\ncommand: sh .ai-loop/agents/fix.sh && wc -l <todo.txt >>"%s/remote.txt"\n---\n' \
	"$BENEATH" >"$BENEATH/.ai-loop/agents/remote.md"
commit_all "$BENEATH"
mkdir -p "$MOUNT"
bindfs "$BENEATH" "$MOUNT" 2>"$TEST_TMP/bindfs.err" ||
	{ echo "skipped: no FUSE mount here ($(head -c 200 "$TEST_TMP/bindfs.err"))"; exit 77; }
trap 'if [ "$BASHPID" = "$test_shell" ]; then cd /; fusermount -u "$MOUNT"; rm -rf "$TEST_TMP"; fi' EXIT
[ "$(stat -f -c %t "$MOUNT")" = 65735546 ] && pass || fail "the mount is a FUSE filesystem"

cd "$MOUNT"
AILOOP_WATCH_TRACE=1 run "$AILOOP" run "empty the todo list"
expect_rc 0 "a run on a FUSE mount: completes"
expect_in "$err" "staging: full scan" "on a shared filesystem: commits scan the work tree"
expect_eq "$(grep -c 'staging: watched' <<<"$err")" 0 "on a shared filesystem: no commit trusts a watch"
expect_eq "$(git show HEAD:remote.txt | tr '\n' ' ')" "2 1 0 " \
	"what was written beneath the mount is in the run's last commit"
for i in 1 2 3; do
	c=$(git rev-list -1 --grep="iteration $i " HEAD)
	expect_eq "$(git show "$c:remote.txt" | wc -l)" "$i" "iteration $i's commit: what was written beneath it"
done
expect_eq "$(git status --porcelain)" "" "after the run: nothing left uncommitted"

finish
