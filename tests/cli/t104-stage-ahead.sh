#!/usr/bin/env bash
# While an agent or a sensor runs, ailoop stages ahead what the watch saw
# change (git_prestage.c): the next commit takes those files from what was
# kept. A file changed again after that (here by the sensor, rewriting
# what the actuator wrote with text of the same size, at once: in the same
# clock tick, mostly) must be committed as the work tree has it at the
# commit, never as it was when staged ahead.
. "$(dirname "$0")/lib.sh"

N=30
export AILOOP_WATCH_TRACE=1

# loop_project DIR: the actuator writes n, kept.txt and both.txt; the
# sensor rewrites both.txt (same size) before it measures
loop_project() {
	local dir=$1
	new_repo "$dir"
	mkdir -p "$dir/.ai-loop/agents"
	echo 0 >"$dir/n"
	printf 'A0000\n' >"$dir/both.txt"
	cat >"$dir/.ai-loop/agents/sensor.md" <<EOF
---
name: count
command: 'n=\$(cat n); printf "S%04d\\n" "\$n" >both.txt; echo "at \$n"; test "\$n" -ge $N'
---
EOF
	cat >"$dir/.ai-loop/agents/actuator.md" <<'EOF'
---
name: step
command: 'n=$(($(cat n) + 1)); echo "$n" >n; printf "A%04d\n" "$n" >both.txt; printf "kept %d\n" "$n" >kept.txt'
---
EOF
	cat >"$dir/.ai-loop/flow.yaml" <<EOF
version: 1
flow:
  id: count
  type: loop
  controller: builtin:all-pass
  sensors: [.ai-loop/agents/sensor.md]
  actuator: {strategy: direct, agent: .ai-loop/agents/actuator.md}
  termination: {max_iterations: $((N + 5))}
EOF
	git -C "$dir" add -A && git -C "$dir" commit -q -m "the loop"
}

# contents DIR: each ailoop commit's n, kept.txt and both.txt, one line each
contents() {
	local c
	for c in $(git -C "$1" rev-list --reverse HEAD --grep '^ai-loop\['); do
		printf '%s %s %s\n' "$(git -C "$1" show "$c:n")" \
			"$(git -C "$1" show "$c:kept.txt" 2>/dev/null || echo -)" \
			"$(git -C "$1" show "$c:both.txt")"
	done
}

loop_project "$TEST_TMP/ahead"
cd "$TEST_TMP/ahead"
run "$AILOOP" run "count"
expect_rc 0 "a run that stages ahead: completes"
ahead_err=$err
expect_eq "$(cat n)" "$N" "the loop counted to $N"

# each commit: n, then kept.txt ("kept N", or - before the first
# actuation), then both.txt as the sensor rewrote it
bad=$(contents . | awk '$1 == 0 { if ($2 != "-" || $3 != "S0000") print; next }
	$2 != "kept" || $3 != $1 || $4 != sprintf("S%04d", $1)')
expect_eq "$bad" "" "each commit holds the files as the work tree had them"
expect_eq "$(contents . | wc -l)" "$((N + 2))" "a commit per measurement, and the last judgement's"
expect_eq "$(git status --porcelain)" "" "the last commit holds the whole work tree"

# it did stage ahead: the actuator's kept.txt, and the controller's output
n_kept=$(grep -c 'staged ahead: kept.txt' <<<"$ahead_err")
[ "$n_kept" -ge $((N / 2)) ] && pass || fail "kept.txt staged ahead in most commits ($n_kept)"
n_ctl=$(grep -c 'staged ahead: .*controller-output.md' <<<"$ahead_err")
[ "$n_ctl" -ge $((N / 2)) ] && pass || fail "the controller's output staged ahead ($n_ctl)"
cd /

# the same run with full scans: the same contents
loop_project "$TEST_TMP/scanned"
cd "$TEST_TMP/scanned"
AILOOP_WATCH=0 run "$AILOOP" run "count"
expect_rc 0 "a full-scan run: completes"
expect_not_in "$err" "staged ahead" "full scans stage nothing ahead"
cd /
diff <(contents "$TEST_TMP/ahead") <(contents "$TEST_TMP/scanned") >"$TEST_TMP/diff" &&
	pass || { fail "staged ahead: the same files in every commit as full scans"; head -20 "$TEST_TMP/diff" >&2; }

# no blob is left that nothing names but those of files changed again
git -C "$TEST_TMP/ahead" fsck --strict >/dev/null 2>&1 && pass || fail "git fsck --strict"

finish
