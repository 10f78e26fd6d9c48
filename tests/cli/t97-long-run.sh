#!/usr/bin/env bash
# A killed run with a long history (hundreds of iteration commits, as
# scripts/bench.sh makes them): resume finishes it, status reads it, and
# log prints every iteration of it in order, from its first commit on;
# libgit2's object cache has the smaller cap of a long-running process.
. "$(dirname "$0")/lib.sh"

T=$TEST_TMP
R=$T/long
new_repo "$R"
mkdir -p "$R/.ai-loop/agents"
cd "$R"
echo 0 >count
# the sensor passes at 6; with STOP_AT set, it kills ailoop once count reaches it
cat >.ai-loop/agents/sensor.md <<'MD'
---
name: count
command: 'c=$(cat count); if [ -n "$STOP_AT" ] && [ "$c" -ge "$STOP_AT" ]; then kill -9 $PPID; fi; echo "count $c"; test "$c" -ge 6'
---
MD
cat >.ai-loop/agents/actuator.md <<'MD'
---
name: increment
command: 'echo $(($(cat count) + 1)) >count'
---
MD
cat >.ai-loop/flow.yaml <<'YAML'
version: 1
flow:
  id: count
  type: loop
  controller: builtin:all-pass
  sensors: [.ai-loop/agents/sensor.md]
  actuator: {strategy: direct, agent: .ai-loop/agents/actuator.md}
  termination: {max_iterations: 100}
YAML
commit_all "$R"
rc=$({ STOP_AT=3 "$AILOOP" run --quiet count >/dev/null 2>&1; echo $?; } 2>/dev/null)
expect_eq "$rc" 137 "the run is killed in its sensor"

# 400 more iterations between the run's first commit and the others
run_id=$(basename "$(ls -d .ai-loop/runs/run_*)")
branch=$(git symbolic-ref --short HEAD)
start=$(git log --format=%H --grep='^\[run-start\] true' -1)
LC_ALL=C awk -v n=400 -v start="$start" -v run="$run_id" 'BEGIN {
	for (i = 1; i <= n; i++) {
		msg = sprintf("ai-loop[count]: iteration %d — grown\n\n[node-path] count\n[level] 0\n" \
			"[iteration] %d\n[status] running\n[target-met] false\n" \
			"[sensors] count: fail (exit 1)\n[action] grown\n[run] %s\n", i, i, run)
		printf "commit refs/test/grown\ncommitter t <t@example.com> %d +0000\n", 1700000000 + i
		printf "data %d\n%s\n", length(msg), msg
		if (i == 1) printf "from %s\n", start
		printf "\n"
	}
}' | git fast-import --quiet
prev=$(git rev-parse refs/test/grown)
for c in $(git rev-list --reverse "$start..HEAD"); do
	prev=$(git log -1 --format=%B "$c" | git commit-tree "$c^{tree}" -p "$prev")
done
# as ailoop's own commit moves it (resume checks the branch still holds the
# run's last commit the reflog names)
git update-ref -m "commit: $(git log -1 --format=%s "$prev")" "refs/heads/$branch" "$prev"
git update-ref -d refs/test/grown
killed=$(git rev-list --count "$start..HEAD")
expect_eq "$killed" 402 "the grown history holds 400 more commits of the run"

run "$AILOOP" status --json
expect_rc 0 "status of the killed run"
expect_eq "$(printf '%s' "$out" | jq -r .status)" interrupted "status reads the killed run: no process holds it"

run "$AILOOP" resume
expect_rc 0 "resume finishes the killed run"
expect_eq "$(cat count)" 6 "the resumed run counts on from where it was killed"
expect_eq "$("$AILOOP" status --json | jq -r .status)" complete "status after the resume"

run "$AILOOP" log --oneline
expect_rc 0 "log of the long run"
n=$(git rev-list --count "$start^..HEAD")
expect_eq "$(printf '%s\n' "$out" | wc -l)" "$n" "log prints every commit of the run"
expect_eq "$(printf '%s\n' "$out" | head -1 | cut -d' ' -f1)" "${start:0:9}" \
	"log starts at the run's first commit"
expect_eq "$(printf '%s\n' "$out" | sed -n 2p | awk '{print $2, $NF}')" "1 grown" \
	"then the grown commits, oldest first"
expect_in "$(printf '%s\n' "$out" | tail -1)" "target met" "and ends with the run's last commit"
expect_eq "$(printf '%s\n' "$out" | awk '{print $1}' | tac | tr '\n' ' ')" \
	"$(git log --format=%h --abbrev=9 "$start^..HEAD" | tr '\n' ' ')" \
	"log's order is the history's, oldest first"

# libgit2's object cache is capped for a long-running process: 16 MiB, not
# its 256 MiB (10,000 iterations grew the resident size from 9.7 to 65 MB);
# AILOOP_CACHE_REPORT (test builds) prints what it holds and may at the end
AILOOP_CACHE_REPORT=1 "$AILOOP" log --oneline >/dev/null 2>"$T/cache"
read -r used allowed < <(sed -n 's/^ailoop: object cache: \([0-9]*\) of \([0-9]*\) bytes$/\1 \2/p' "$T/cache")
expect_eq "${allowed:-none}" $((16 << 20)) "the object cache's cap is 16 MiB"
[ "${used:-0}" -gt 0 ] && [ "${used:-0}" -le "${allowed:-0}" ] && pass ||
	fail "the log of the long run fills the cache within its cap (${used:-?} bytes)"

finish
