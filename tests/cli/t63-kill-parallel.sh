#!/usr/bin/env bash
# The kill test for a parallel node (as t62-kill-reactree.sh is for the
# other ReAcTree nodes): a loop-until inside a sequence runs a parallel
# node of two actions and a sensor-form loop, all in the one work tree
# (isolation: shared). The run is killed
# at every crash point of its reference run, counted across all its
# processes (the coordinator and the parallel node's child processes);
# the crash kills the whole run, as a power cut would: every ailoop
# process and agent. One `ailoop resume` must then end it like the
# reference: the same (label, node, status) commits (the parallel
# children's in any order among themselves), the same tree, a clean
# `git fsck --strict` and work tree, the same status and exit code.
# Then the coordinator alone is killed while the children run: its
# children die with it, and resume finishes the run.
. "$(dirname "$0")/lib.sh"

T=$TEST_TMP
loop_repo "$T/template" x
scripted_agents "$T/template" action
parallel_rounds "$T/template" # (t68 is the kill test of children in worktrees)
# every action writes a file of its own, the same each time it runs
cat >"$T/plan" <<'PLAN'
creates "$skill-$AILOOP_ITERATION.txt"
[ -z "${NAP:-}" ] || [ "$skill" != b ] || naps "$NAP"
PLAN
export PLAN=$T/plan
unset TRAIL NAP
commit_all "$T/template"

# canonical: the commits, those of the parallel node's children sorted
# within each stretch of them (they commit in either order)
canonical() {
	triples "$1" | awk '
		function flush() { if (n) { cmd = "sort"; for (i = 1; i <= n; i++) print b[i] | cmd; close(cmd); n = 0 } }
		$2 ~ /^main\/rounds\/par\// { b[++n] = $0; next }
		{ flush(); print }
		END { flush() }'
}

# the reference, with every crash point it passes logged
reference_run "$T/template" "deliver it" canonical
expect_eq "$ref_rc $ref_status" "0 complete" "the reference run succeeds"
expect_eq "$(printf '%s\n' "$ref_triples" | tr '\n' ,)" "0 main/first complete,\
1 main/rounds/par/a complete,1 main/rounds/par/b complete,1.0 main/rounds/par/fix running,\
1.1 main/rounds/par/fix running,1.2 main/rounds/par/fix complete,\
1 main/rounds complete,0 main/last complete,0 main complete," "the reference run's path"
expect_eq "$(git ls-files | grep -v '^\.ai-loop/' | tr '\n' ' ')" \
	"README a-1.txt b-1.txt first-0.txt last-0.txt todo.txt " "the reference run's files"
expect_eq "$(cut -d' ' -f1 "$T/points" | sort -n | uniq -d)" "" \
	"each crash point has a number of its own across the run's processes"
expect_eq "$(sort -n "$T/points" | tail -1 | cut -d' ' -f1)" "$total" "and they are counted without a gap"
[ "$total" -gt 80 ] && pass || fail "only $total crash points in the reference run"

# no process of the killed run is left: its work tree's lock is free
# (a killed process lets go of its locks an instant after it is reaped)
kill_each_point "$T/template" "deliver it" canonical lock_free

# --- SIGKILL of the coordinator alone while its children run -----------------------------
# Its child processes die with it (PDEATHSIG); the agent at work is
# orphaned and stopped by the resume. A resume that comes while a dying
# child still holds the work tree's lock says the run is busy (exit 75)
# and changes nothing; the next one finishes the run, and no child's
# commit is lost or made twice.
w=$T/coordinator
rm -rf "$w"
cp -a "$T/template" "$w"
cd "$w"
export TRAIL=$T/coordinator.trail NAP=30
"$AILOOP" run --quiet "deliver it" >/dev/null 2>&1 &
pid=$!
i=0
until [ -e b-1.txt ] && triples "$w" | grep -q '1.2 main/rounds/par/fix complete' &&
	triples "$w" | grep -q '1 main/rounds/par/a complete' || [ $i -ge 600 ]; do
	sleep 0.05
	i=$((i + 1))
done
[ $i -lt 600 ] && pass || fail "the children did not get going"
children=$(pgrep -P "$pid" | tr '\n' ' ')
{ kill -KILL "$pid" && wait "$pid"; } 2>/dev/null
unset NAP
tries=0 busy=0
while :; do
	tries=$((tries + 1))
	rc=$({ "$AILOOP" resume >/dev/null 2>"$T/resume.err"; echo $?; } 2>/dev/null)
	[ "$rc" -eq 75 ] && [ $tries -lt 100 ] || break
	grep -q "is locked by\|wait for it to end" "$T/resume.err" && busy=$((busy + 1)) ||
		fail "exit 75 without saying who holds the run: $(cat "$T/resume.err")"
	sleep 0.05
done
expect_eq "$rc" 0 "resume finishes the run whose coordinator was killed ($busy busy first)"
for c in $children; do
	[ ! -e "/proc/$c" ] || [ "$(awk '{print $3}' "/proc/$c/stat" 2>/dev/null)" = Z ] ||
		fail "child process $c outlived its coordinator"
done
pass
expect_in "$(cat "$T/resume.err")" "ailoop: stopped " "resume stops the orphaned agent"
echo "coordinator killed: $busy busy resume(s) before the one that finished"
expect_eq "$(canonical "$w")" "$ref_triples" "the same commits as the reference"
expect_eq "$(code_tree "$w")" "$ref_tree" "the same tree as the reference"
expect_eq "$(grep -cx a "$TRAIL") $(grep -cx b "$TRAIL")" "1 2" \
	"the finished child did not run again, the killed one did"
git fsck --strict >/dev/null 2>&1 && pass || fail "git fsck --strict after the coordinator's kill"
expect_eq "$(git status --porcelain)" "" "the tree ends clean"
unset TRAIL

finish
