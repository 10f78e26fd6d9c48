#!/usr/bin/env bash
# The durable points (what survives a power loss), seen in the system
# calls of a run with fsync on: a commit's objects and index reach the
# disk (syncfs) before the ref that names them moves, and the ref before
# anything records the commit; what a step wrote reaches it before an
# agent starts. With AILOOP_FSYNC=0 nothing is synced.
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
AILOOP_FSYNC=1 strace -f -e trace=syncfs,fsync,rename,link,execve -o "$TEST_TMP/trace" \
	"$AILOOP" run --quiet "fix all" >/dev/null 2>&1 && rc=0 || rc=$?
expect_eq "$rc" 0 "the traced run completes"
main=$(head -1 "$TEST_TMP/trace" | awk '{ print $1 }')

# the main process's syncfs, renames and links, and the agents' starts, in order
events=$(awk -v main="$main" '
	/ = -1 / { next } # (libgit2 tries a link first, then renames)
	$1 == main && $2 ~ /^syncfs\(/ { print "sync"; next }
	$1 == main && $2 ~ /^fsync\(/ { print "fsync"; next }
	$1 == main && /refs\/heads\/.*\.lock", / && $2 ~ /^rename\(/ { print "ref"; next }
	$1 == main && $2 ~ /^(rename|link)\(/ { print "write"; next }
	$1 != main && /execve\(".*\/sh", \["sh", "\.ai-loop\/agents\// { print "agent" }' "$TEST_TMP/trace")
commits=$(git log --format=%s | grep -c '^ai-loop\[fix\]')
expect_eq "$(printf '%s\n' "$events" | grep -c '^ref$')" "$commits" "each commit moves the branch once"
expect_eq "$(printf '%s\n' "$events" | grep -B1 '^ref$' | grep -vc -e '^ref$' -e '^--$' -e '^sync$')" 0 \
	"the objects and index are synced before the branch moves"
expect_eq "$(printf '%s\n' "$events" | grep -A1 '^ref$' | grep -vc -e '^ref$' -e '^--$' -e '^sync$')" 0 \
	"the branch is synced before anything else is written"
agents=$(printf '%s\n' "$events" | grep -c '^agent$')
[ "$agents" -ge 6 ] && pass || fail "only $agents agent starts traced"
expect_eq "$(printf '%s\n' "$events" | awk '/^agent$/ { if (last != "sync") bad++; next } { last = $0 } END { print bad + 0 }')" 0 \
	"every agent starts after a sync of what its step wrote"
expect_eq "$(printf '%s\n' "$events" | grep -c '^fsync$')" 0 "no file is fsynced one by one"
expect_eq "$(printf '%s\n' "$events" | tail -1)" sync "what the run wrote last is synced before it exits"

cd "$TEST_TMP/nosync"
AILOOP_FSYNC=0 strace -f -e trace=syncfs,fsync -o "$TEST_TMP/trace0" \
	"$AILOOP" run --quiet "fix all" >/dev/null 2>&1 && rc=0 || rc=$?
expect_eq "$rc" 0 "the run without fsync completes"
expect_eq "$(grep -c -e 'syncfs(' -e ' fsync(' "$TEST_TMP/trace0")" 0 "AILOOP_FSYNC=0 syncs nothing"
finish
