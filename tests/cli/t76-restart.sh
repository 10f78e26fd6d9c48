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
# zeros) or lost, and its logs get a torn last line. One resume must end
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

# power_loss: after a kill, what a power loss may leave of what the run wrote since its last commit
power_loss() {
	[ -e .git/ailoop-restorable ] || return 0
	restarts=$((restarts + 1))
	sed -i 's/^boot .*/boot 00000000-0000-0000-0000-000000000000/' .git/ailoop-restorable
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
}

# restart_each_point TEMPLATE TASK [SETTLED]: kill_each_point's loop
# (lib.sh), with a power loss after each kill and the checks above
restart_each_point() {
	local template=$1 task=$2 settled=${3:-true} w=$TEST_TMP/kill n problems before after
	for n in $(seq 1 "$total"); do
		rm -rf "$w"
		cp -a "$template" "$w"
		cd "$w"
		problems=""
		rc=$({ AILOOP_CRASH_AT=$n "$AILOOP" run --quiet "$task" >/dev/null 2>&1; echo $?; } 2>/dev/null)
		[ "$rc" -eq 137 ] || problems="$problems not-killed($rc)"
		$settled || problems="$problems not-settled"
		before=$(triples "$w")
		power_loss
		rc=$({ "$AILOOP" resume >/dev/null 2>"$TEST_TMP/resume.err"; echo $?; } 2>/dev/null)
		if [ "$rc" -eq 66 ] && grep -q "no run to resume" "$TEST_TMP/resume.err"; then
			if "$AILOOP" status >/dev/null 2>&1; then
				rc=$ref_rc
			else
				rc=$({ "$AILOOP" run --quiet "$task" >/dev/null 2>"$TEST_TMP/resume.err"; echo $?; } 2>/dev/null)
			fi
		fi
		after=$(triples "$w")
		[ "$rc" -eq "$ref_rc" ] || problems="$problems exit=$rc($(head -c 300 "$TEST_TMP/resume.err"))"
		[ "${after#"$before"}" != "$after" ] || [ -z "$before" ] || problems="$problems lost-commits"
		[ -z "$(printf '%s\n' "$after" | awk '{ print $1, $2 }' | sort | uniq -d)" ] ||
			problems="$problems label-twice"
		[ "$(code_tree "$w")" = "$ref_tree" ] || problems="$problems tree"
		git fsck --strict >/dev/null 2>&1 || problems="$problems fsck"
		[ -z "$(git status --porcelain)" ] || problems="$problems dirty"
		[ "$(run_status)" = "$ref_status" ] || problems="$problems status($(run_status))"
		if [ -z "$problems" ]; then
			pass
		else
			fail "restart after the kill at point $n ($(sed -n "${n}p" "$TEST_TMP/points")):$problems"
			diff <(printf '%s\n' "$before") <(printf '%s\n' "$after") | head -10 >&2
		fi
	done
}

# --- a loop whose actuator is a loop ----------------------------------------------------
loop_repo "$T/nested" a b c
two_loops "$T/nested" fixer.md
commit_all "$T/nested"
reference_run "$T/nested" "fix all" triples
expect_eq "$ref_rc $ref_status" "0 complete" "the reference run succeeds"
[ ! -e .git/ailoop-restorable ] && pass || fail "a run that ended left its mark"
cp "$T/points" "$T/nested-points"
restart_each_point "$T/nested" "fix all"
[ "$restarts" -gt 20 ] && pass || fail "only $restarts restarts simulated"
nested_restarts=$restarts

# --- a parallel node whose children share the work tree ------------------------------------
loop_repo "$T/parallel" x
scripted_agents "$T/parallel" action
cat >"$T/parallel/.ai-loop/flow.yaml" <<'YAML'
version: 1
flow:
  id: main
  type: sequence
  children:
    - {id: first, skill: first}
    - id: par
      type: parallel
      isolation: shared
      children:
        - {id: a, skill: a}
        - {id: b, skill: b}
        - id: fix
          type: loop
          controller: builtin:all-pass
          sensors: [.ai-loop/agents/sensor.md]
          actuator: {strategy: direct, agent: .ai-loop/agents/fixer.md}
    - {id: last, skill: last}
YAML
printf 'creates "$skill-$AILOOP_ITERATION.txt"\n' >"$T/plan"
export PLAN=$T/plan
commit_all "$T/parallel"
settled() {
	local i=0
	while ! flock -n .git/ailoop.lock true && [ $i -lt 100 ]; do sleep 0.02; i=$((i + 1)); done
	[ $i -lt 100 ]
}
reference_run "$T/parallel" "deliver it" triples
expect_eq "$ref_rc $ref_status" "0 complete" "the parallel reference run succeeds"
restart_each_point "$T/parallel" "deliver it" settled
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
power_loss
: >.git/index.lock # a restart can leave git's lock files too
head=$(git rev-parse --short=7 HEAD)
run "$AILOOP" resume
expect_rc 0 "the resume after the restart"
expect_in "$err" "the machine restarted while run $(ls .ai-loop/runs | grep run_) was between two commits: its files are as its last commit ($head) left them" \
	"the resume says what it restored"
expect_eq "$(tail -c 1 .ai-loop/runs/run_*/events.jsonl | od -An -c | tr -d ' ')" '\n' \
	"the torn line of the events is ended"
[ ! -e .git/ailoop-restorable ] && pass || fail "the mark is left behind"
cd "$T/same-boot"
run "$AILOOP" resume
expect_rc 0 "the resume after a kill in this boot"
expect_not_in "$err" "restarted" "a kill in this boot restores nothing"

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
finish
