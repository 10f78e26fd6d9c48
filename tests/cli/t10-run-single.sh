#!/usr/bin/env bash
# A single-level loop that converges after three actuations: the exact
# history, the artifacts, the result, and history that git and ailoop agree on.
. "$(dirname "$0")/lib.sh"

R=$TEST_TMP/repo
loop_repo "$R" item-1 item-2 item-3
one_loop "$R" fixer.md "max_iterations: 5"
commit_all "$R"
cd "$R"

run "$AILOOP" run "empty the todo list"
expect_rc 0 "converging run"
expect_in "$out" "run run_" "outcome names the run"
expect_in "$out" ": complete" "outcome says complete"
expect_in "$out" "branch:       ai-loop/empty-the-todo-list" "outcome names the branch"
expect_in "$out" "base branch:  main" "outcome names the base branch"
expect_in "$out" "commits:      5" "outcome counts the commits"
expect_in "$out" "land:         ailoop land run_" "outcome offers to land the run first"
expect_in "$out" "merge:        ailoop land --merge run_" "outcome gives the merge command"
expect_in "$out" "git diff main...ai-loop/empty-the-todo-list" "outcome gives the diff command"
expect_in "$out" "git branch -D ai-loop/empty-the-todo-list" "outcome gives the discard command"
expect_in "$err" "[1] fix actuator: .ai-loop/agents/fixer.md" "progress names each step"

expect_eq "$(git log --reverse --format=%s main..HEAD)" "ai-loop[fix]: iteration 0 — initial measurement
ai-loop[fix]: iteration 1 — fixed item-1
ai-loop[fix]: iteration 2 — fixed item-2
ai-loop[fix]: iteration 3 — fixed item-3
ai-loop[fix]: iteration 4 — target met" "commit subjects"
expect_eq "$(git rev-parse --abbrev-ref HEAD)" "ai-loop/empty-the-todo-list" "branch checked out"
expect_eq "$(cat todo.txt)" "" "the actuator's work is committed"
expect_eq "$(git status --porcelain)" "" "the work tree is clean after the run"
run git fsck --strict
expect_rc 0 "git fsck --strict"

# the last commit, byte for byte
expect_eq "$(git log -1 --format=%B)" "ai-loop[fix]: iteration 4 — target met

[node-path] fix
[level] 0
[iteration] 4
[status] complete
[target-met] true
[sensors] scope: pass (remaining=0)
[action] target met
[run] $(ls .ai-loop/runs)" "final commit message"
expect_eq "$(git log --format=%B main..HEAD | grep -c '^\[run-start\] true')" 1 \
	"one commit, the run's first, says it starts the run"
expect_in "$(git log -1 --format=%B main..HEAD~4)" "[run-start] true" "the first commit starts the run"
expect_eq "$(git log --format=%B -1 HEAD~3 | sed -n 's/^\[sensors\] //p')" \
	"scope: fail (remaining=2)" "sensors line of iteration 1"

# every subject and body line matches the readers' patterns of SPEC §6
subj='^ai-loop\[(.+?)\]:\s*iteration\s+(\S+)\s*(?:—|--|-)\s*(.+)$'
bad=$(git log --format=%s main..HEAD | grep -cvP "$subj" || true)
expect_eq "$bad" 0 "subjects match the SPEC pattern"
bad=$(git log --format=%b main..HEAD | grep . | grep -cvP '^\[(\w[\w-]*)\]\s*(.+)$' || true)
expect_eq "$bad" 0 "body lines match the SPEC pattern"
bad=$(git log --format=%b main..HEAD | sed -n 's/^\[sensors\] //p' | tr ',' '\n' | sed 's/^ //' |
	grep -cvP '^(\w[\w-]*):\s*(pass|fail|partial|pending)(?:\s*\((.+)\))?$' || true)
expect_eq "$bad" 0 "sensor entries match the SPEC pattern"

# artifacts
run_dir=$(ls -d .ai-loop/runs/run_*)
node=$run_dir/nodes/fix
for f in run-state.md events.jsonl nodes/fix/orchestrator-output.md nodes/fix/task.md \
	nodes/fix/sensor-scope-output.md nodes/fix/controller-output.md \
	nodes/fix/actuator-output.md nodes/fix/result-output.md nodes/fix/logs/actuator.log \
	nodes/fix/logs/sensor-scope.log nodes/fix/logs/actuator.prompt.md; do
	[ -f "$run_dir/$f" ] && pass || fail "missing artifact $f"
done
[ ! -e "$run_dir/lock" ] && pass || fail "lock file left behind"
expect_in "$(cat "$node/result-output.md")" "status: complete" "result status"
expect_in "$(cat "$node/result-output.md")" "termination-reason: target-met" "result reason"
expect_in "$(cat "$node/result-output.md")" "iterations-executed: 3" "result iterations"
for section in "## Summary" "## Metrics Delta" "## Key Observations for Parent Controller"; do
	expect_in "$(cat "$node/result-output.md")" "$section" "result has $section"
done
expect_in "$(cat "$run_dir/run-state.md")" "status: complete" "run-state status"
expect_in "$(cat "$run_dir/run-state.md")" "flow-sha256: $(sha256sum .ai-loop/flow.yaml | cut -c1-64)" \
	"run-state records the flow's sha256"
expect_in "$(cat "$node/sensor-scope-output.md")" "exit-code: 0" "sensor output records the exit code"
expect_in "$(cat "$node/sensor-scope-output.md")" "## Command" "sensor output shows the command"
expect_in "$(cat "$node/sensor-scope-output.md")" "remaining: 0" "sensor output shows the output"
expect_in "$(cat "$node/sensor-scope-output.md")" "duration-ms: " "sensor output records the duration"
# one JSON object per line
run jq -e . "$run_dir/events.jsonl"
if command -v jq >/dev/null; then expect_rc 0 "events.jsonl is JSON lines"; fi
expect_eq "$(jq -r .event "$run_dir/events.jsonl" | grep -vx agent | uniq | tr '\n' ' ')" \
	"run_start node_start loop_start sensors loop_iteration controller actuator sensors loop_iteration \
controller actuator sensors loop_iteration controller actuator sensors loop_iteration \
controller loop_iteration node_complete run_end " "one event per step"
expect_eq "$(jq -r 'select(.event == "agent") | .role' "$run_dir/events.jsonl" | sort | uniq -c |
	awk '{printf "%s %s ", $1, $2}')" "3 actuator 4 sensor " "an agent event per agent call, with its role"
expect_eq "$(jq -r 'select(.event == "controller") | .target_met' "$run_dir/events.jsonl" |
	tr '\n' ' ')" "false false false true " "the controller's decisions"

# ailoop log rebuilds the same history from the commits
run "$AILOOP" log --json
expect_rc 0 "log --json"
expect_eq "$(printf '%s\n' "$out" | sed -n 's/^ *"label": "\(.*\)",$/\1/p' | tr '\n' ' ')" \
	"0 1 2 3 4 " "log --json labels round-trip"
run "$AILOOP" log --oneline
expect_rc 0 "log --oneline"
expect_eq "$(printf '%s\n' "$out" | wc -l)" 5 "log --oneline has one line per iteration"
expect_in "$out" "fix — fixed item-2" "log --oneline shows summaries"
run "$AILOOP" log
expect_in "$out" "sensor scope: fail (remaining=3)" "log shows sensors"
run "$AILOOP" log --node nosuch
expect_eq "$out" "" "log --node filters"

run "$AILOOP" status
expect_rc 0 "status"
expect_in "$out" ": complete" "status shows the run status"
expect_in "$out" "fix" "status lists the node"
expect_in "$out" "4 of 5" "status shows iteration of max"
run "$AILOOP" status --json
expect_in "$out" '"status": "complete"' "status --json"
expect_in "$out" '"node_path": "fix"' "status --json lists nodes"

finish
