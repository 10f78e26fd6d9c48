#!/usr/bin/env bash
# The durable points (what survives a power loss), seen in the system
# calls of a run with fsync on: a commit's objects and index reach the
# disk (syncfs) before the ref that names them moves; the run's first
# commit marks, before its objects, that a restart may tear them (t76),
# then that HEAD holds the run's state, and its ref reaches the disk
# before anything records the commit. From then on agents start
# without a sync of their own (a restart restores the run's files from
# HEAD: t76), and each commit has one point: its intent to move the ref,
# written in the mark, reaches the disk with its objects (and with the
# last commit's move), and a restart that lost the move finds the commit
# from it (t76). Before the first commit, what a step wrote reaches the
# disk before an agent starts. The mark goes, after a sync, when the run
# ends. With AILOOP_FSYNC=0 nothing is synced.
. "$(dirname "$0")/lib.sh"

command -v strace >/dev/null || { echo "skipped: no strace"; exit 77; }
strace -f -o /dev/null true 2>/dev/null || { echo "skipped: strace cannot trace here"; exit 77; }

R=$TEST_TMP/repo
loop_repo "$R" a b c
one_loop "$R" fixer.md
commit_all "$R"
cp -a "$R" "$TEST_TMP/nosync"
cd "$R"
# (LeakSanitizer cannot work under ptrace: a sanitizer build checks leaks elsewhere)
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0
AILOOP_FSYNC=1 strace -f -y -e trace=syncfs,fsync,rename,link,unlink,execve,pwrite64 -o "$TEST_TMP/trace" \
	"$AILOOP" run --quiet "fix all" >/dev/null 2>&1 && rc=0 || rc=$?
expect_eq "$rc" 0 "the traced run completes"
main=$(head -1 "$TEST_TMP/trace" | awk '{ print $1 }')

# the main process's syncfs, renames and links (of objects apart), the mark, and the agents' starts, in order
events=$(awk -v main="$main" '
	/ = -1 / { next } # (libgit2 tries a link first, then renames)
	$1 == main && $2 ~ /^syncfs\(/ { print "sync"; next }
	$1 == main && $2 ~ /^fsync\(/ { print "fsync"; next }
	$1 == main && /refs\/heads\/.*\.lock", / && $2 ~ /^rename\(/ { print "ref"; next }
	$1 == main && /ailoop-restorable\.lock", / && $2 ~ /^rename\(/ { print "mark"; next }
	$1 == main && /ailoop-restorable"/ && $2 ~ /^unlink\(/ { print "unmark"; next }
	$1 == main && $2 ~ /^pwrite64\([0-9]+<.*\/ailoop-restorable>/ { print "intent"; next }
	$2 ~ /^pwrite64\(/ { next }
	$1 == main && $2 ~ /^link\(/ && /\/objects\/[0-9a-f][0-9a-f]\// { print "object"; next }
	$1 == main && $2 ~ /^(rename|link)\(/ { print "write"; next }
	$1 != main && /execve\(".*\/sh", \["sh", "\.ai-loop\/agents\// { print "agent" }' "$TEST_TMP/trace")
commits=$(git log --format=%s | grep -c '^ai-loop\[fix\]')
expect_eq "$(printf '%s\n' "$events" | grep -c '^ref$')" "$commits" "each commit moves the branch once"
expect_eq "$(printf '%s\n' "$events" | grep -B1 '^ref$' | grep -vc -e '^ref$' -e '^--$' -e '^sync$')" 0 \
	"the objects and index are synced before the branch moves"
expect_eq "$(printf '%s\n' "$events" | grep -c '^mark$')" 2 \
	"the run's first commit marks twice: pending, then the run's state as in HEAD"
expect_eq "$(printf '%s\n' "$events" | grep -m1 -A1 '^mark$' | tr '\n' ' ')" "mark sync " \
	"the pending mark is synced on its own, before the first commit writes an object"
expect_eq "$(printf '%s\n' "$events" | awk '/^mark$/ { exit } /^object$/ { n++ } END { print n + 0 }')" 0 \
	"no object is written before it"
expect_eq "$(printf '%s\n' "$events" | grep -m1 -A2 '^ref$' | tr '\n' ' ')" "ref mark sync " \
	"by the run's first commit, whose branch is synced before anything else is written"
expect_eq "$(printf '%s\n' "$events" | grep -c '^intent$')" $((commits - 1)) \
	"every later commit writes its intent"
expect_eq "$(printf '%s\n' "$events" | awk '/^ref$/ { if (refs++ && (prev2 != "intent" || prev != "sync")) bad++ } { prev2 = prev; prev = $0 } END { print bad + 0 }')" 0 \
	"in the mark, and synced with the objects, before the branch moves"
agents=$(printf '%s\n' "$events" | grep -c '^agent$')
[ "$agents" -ge 6 ] && pass || fail "only $agents agent starts traced"
expect_eq "$(printf '%s\n' "$events" | awk '/^ref$/ { exit } /^agent$/ { if (last != "sync") bad++; next } { last = $0 } END { print bad + 0 }')" 0 \
	"before it, every agent starts after a sync of what its step wrote"
between=$(printf '%s\n' "$events" | awk '/^ref$/ { refs++; if (refs > 1) { syncs += pending; pending = 0 } next } refs && /^sync$/ { pending++ } END { print syncs + 0 }')
expect_eq "$between" "$commits" "after it, the first commit's sync of its branch and each later commit's one sync are the only ones"
expect_eq "$(printf '%s\n' "$events" | tail -3 | tr '\n' ' ')" "sync unmark sync " \
	"at the end the mark goes after what the run wrote last is synced, and its removal is synced"
[ ! -e .git/ailoop-restorable ] && pass || fail "the mark is left behind"

cd "$TEST_TMP/nosync"
AILOOP_FSYNC=0 strace -f -e trace=syncfs,fsync -o "$TEST_TMP/trace0" \
	"$AILOOP" run --quiet "fix all" >/dev/null 2>&1 && rc=0 || rc=$?
expect_eq "$rc" 0 "the run without fsync completes"
expect_eq "$(grep -c -e 'syncfs(' -e ' fsync(' "$TEST_TMP/trace0")" 0 "AILOOP_FSYNC=0 syncs nothing"
finish
