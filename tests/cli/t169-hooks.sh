#!/usr/bin/env bash
# hooks: in flow.yaml: on_iteration after each commit, on_node_end when a
# node ends, on_blocked and on_run_end when the run stops; each a command
# (a string for sh -c, or a list) told the event as JSON on stdin and the
# run's variables in its environment, run in the repository's root, its
# output in the run's logs/hooks.log. A slow hook is stopped at its
# timeout and the run goes on; a failing one is a warning and a
# hook_failed event, never the run's failure; a run paused by a signal
# runs on_run_end too, which a second signal stops; a bad hooks block is
# an error of validate at its place.
. "$(dirname "$0")/lib.sh"

export HOOKS_OUT=$TEST_TMP/hooks
mkdir -p "$HOOKS_OUT"
R=$TEST_TMP/repo
loop_repo "$R" a b
one_loop "$R" fixer.md
cat >>"$R/.ai-loop/flow.yaml" <<'YAML'
hooks:
  on_iteration: 'cat >"$HOOKS_OUT/iter-$AILOOP_LABEL.json"; env | grep -a ^AILOOP_ | sort >"$HOOKS_OUT/iter-$AILOOP_LABEL.env"'
  on_node_end: [sh, -c, 'cat >"$HOOKS_OUT/node-end.json"; echo "$AILOOP_NODE $AILOOP_LABEL $AILOOP_STATUS" >>"$HOOKS_OUT/node-end.txt"']
  on_blocked: 'touch "$HOOKS_OUT/blocked"'
  on_run_end: 'cat >"$HOOKS_OUT/run-end.json"; pwd >"$HOOKS_OUT/run-end.pwd"; echo printed by the hook'
YAML
commit_all "$R"
cp -a "$R" "$TEST_TMP/slow"
cp -a "$R" "$TEST_TMP/failing"
cp -a "$R" "$TEST_TMP/bytes"
cd "$R"

run "$AILOOP" run "fix both"
expect_rc 0 "the run with hooks completes"
run_id=$(ls .ai-loop/runs | grep '^run_')
# one on_iteration a commit: labels 0 (the first measurement), 1, 2 and the end (3)
expect_eq "$(cd "$HOOKS_OUT" && ls iter-*.json | tr '\n' ' ')" "iter-0.json iter-1.json iter-2.json iter-3.json " \
	"on_iteration ran after each commit"
j=$HOOKS_OUT/iter-1.json
expect_eq "$(jq -r '[.hook, .run_id, .task, .node, .label, .status, .summary] | join("|")' "$j")" \
	"on_iteration|$run_id|fix both|fix|1|running|fixed a" "its JSON names the iteration"
expect_eq "$(jq -r .commit "$j")" "$(git log --format=%H --grep='^\[iteration\] 1$')" \
	"and its commit"
expect_in "$(jq -r .sensors "$HOOKS_OUT/iter-0.json")" "scope: fail" "and the sensors"
expect_eq "$(jq -r .branch "$j")" "ai-loop/fix-both" "and the branch"
env1=$(cat "$HOOKS_OUT/iter-1.env")
expect_in "$env1" "AILOOP_HOOK=on_iteration" "the environment names the hook"
expect_in "$env1" "AILOOP_RUN_ID=$run_id" "the run"
expect_in "$env1" "AILOOP_NODE=fix" "the node"
expect_in "$env1" "AILOOP_LABEL=1" "the label"
expect_in "$env1" "AILOOP_STATUS=running" "the status"
expect_in "$env1" "AILOOP_TASK=fix both" "the task"
expect_in "$env1" "AILOOP_COMMIT=$(jq -r .commit "$j")" "the commit"
expect_in "$env1" "AILOOP_RUN_DIR=$R/.ai-loop/runs/$run_id" "the run's directory"
expect_eq "$(cat "$HOOKS_OUT/node-end.txt")" "fix 3 complete" "on_node_end (a list) ran once, after the last commit (label 3)"
expect_eq "$(jq -r '[.hook, .status, .iterations] | join(" ")' "$HOOKS_OUT/node-end.json")" \
	"on_node_end complete 2" "its JSON"
expect_eq "$(jq -r '[.hook, .status, .commits] | join(" ")' "$HOOKS_OUT/run-end.json")" \
	"on_run_end complete 4" "on_run_end ran with the run's status"
expect_eq "$(cat "$HOOKS_OUT/run-end.pwd")" "$R" "in the repository's root"
[ ! -e "$HOOKS_OUT/blocked" ] && pass || fail "on_blocked did not run for a run that was not blocked"
expect_in "$(cat ".ai-loop/runs/$run_id/logs/hooks.log")" "printed by the hook" \
	"a hook's output goes to the run's logs/hooks.log"
expect_not_in "$err" "printed by the hook" "not to the terminal"
expect_eq "$("$AILOOP" status --json | jq .budget.agent_calls)" 2 "hooks are no agent calls"
expect_eq "$(git status --porcelain)" "" "the work tree is clean after the run"

# a task that is not UTF-8: the JSON shows its bytes as U+FFFD, the environment as they are
cd "$TEST_TMP/bytes"
export HOOKS_OUT=$TEST_TMP/hooks-bytes
mkdir -p "$HOOKS_OUT"
printf 'fix \377 both\n' >"$TEST_TMP/task"
run "$AILOOP" run --task-file "$TEST_TMP/task"
expect_rc 0 "a run of a task that is not UTF-8, with hooks, completes"
expect_eq "$(jq -r .task "$HOOKS_OUT/run-end.json")" "fix � both" "the hook's JSON holds the task, repaired"
expect_in "$(cat "$HOOKS_OUT/iter-1.env")" "AILOOP_TASK=fix $(printf '\377') both" \
	"AILOOP_TASK holds its bytes"
export HOOKS_OUT=$TEST_TMP/hooks

# a slow hook (that ignores SIGTERM) is stopped at its timeout: the run goes on
cd "$TEST_TMP/slow"
sed -i '/^hooks:/,$d' .ai-loop/flow.yaml
cat >>.ai-loop/flow.yaml <<'YAML'
hooks:
  timeout_seconds: 1
  on_iteration: 'trap "" TERM; echo $$ >>"$HOOKS_OUT/slow-pids"; sleep 30'
YAML
commit_all . "a slow hook"
start=$(date +%s%3N)
run "$AILOOP" run "fix both"
took=$(($(date +%s%3N) - start))
expect_rc 0 "a run whose hook times out completes"
[ "$took" -lt 15000 ] && pass || fail "four hooks of 1 s (and 1 s to stop each) held the run $took ms"
expect_eq "$(wc -l <"$HOOKS_OUT/slow-pids")" 4 "each ran"
for pid in $(cat "$HOOKS_OUT/slow-pids"); do
	group_gone "$pid" && pass || fail "the hook's process group $pid is gone"
done
expect_in "$err" "ailoop: warning: hook on_iteration ('trap \"\" TERM;" "a warning names the hook"
expect_in "$err" "timed out after 1 s, stopped" "and says it timed out"
events=$(ls .ai-loop/runs/run_*/events.jsonl)
expect_eq "$(jq -r 'select(.event == "hook_failed") | [.hook, .timed_out] | join(" ")' "$events" | sort | uniq -c | awk '{$1=$1} 1')" \
	"4 on_iteration true" "each is a hook_failed event"
expect_eq "$(git log --format=%s | grep -c '^ai-loop\[')" 4 "every commit was made"

# failing hooks: a non-zero exit, a program not found: warnings, the run's own exit
cd "$TEST_TMP/failing"
sed -i '/^hooks:/,$d' .ai-loop/flow.yaml
cat >>.ai-loop/flow.yaml <<'YAML'
limits:
  max_agent_calls: 1
hooks:
  on_blocked: 'cat >"$HOOKS_OUT/blocked.json"; echo "blocked: $AILOOP_REASON" >"$HOOKS_OUT/blocked.env"; echo no luck >&2; exit 3'
  on_run_end: [no-such-program-for-hooks, --now]
YAML
commit_all . "failing hooks"
run "$AILOOP" run "fix both"
expect_rc 4 "a blocked run exits 4 whatever its hooks did"
expect_eq "$(jq -r '[.hook, .status] | join(" ")' "$HOOKS_OUT/blocked.json")" "on_blocked blocked" \
	"on_blocked ran with the event"
expect_in "$(jq -r .reason "$HOOKS_OUT/blocked.json")" "max_agent_calls" "which says why"
expect_in "$(cat "$HOOKS_OUT/blocked.env")" "blocked: " "AILOOP_REASON too"
expect_in "$err" "ailoop: warning: hook on_blocked (" "the failing hook is a warning"
expect_in "$err" "failed: exit 3" "with its exit status"
expect_in "$err" "ailoop: warning: hook on_run_end ('no-such-program-for-hooks') failed: exit 127" \
	"a hook that is not found is a warning"
events=$(ls .ai-loop/runs/run_*/events.jsonl)
expect_eq "$(jq -r 'select(.event == "hook_failed") | "\(.hook) \(.exit_code)"' "$events" | tr '\n' ' ')" \
	"on_blocked 3 on_run_end 127 " "each is a hook_failed event"
log=$(cat .ai-loop/runs/run_*/logs/hooks.log)
expect_in "$log" "no luck" "the failing hook's output is in hooks.log"
expect_in "$log" "on_run_end: no-such-program-for-hooks: exit 127" "and how each ended"
expect_eq "$(run_status)" "blocked" "the run is blocked, as it would be without hooks"
# the limit raised and the hooks changed: resume needs no --force, and runs the new hooks
sed -i -e 's/max_agent_calls: 1/max_agent_calls: 10/' \
	-e 's/^  on_run_end: .*/  on_run_end: '"'"'echo "$AILOOP_STATUS" >"$HOOKS_OUT\/resumed-end"'"'"'/' .ai-loop/flow.yaml
run "$AILOOP" resume
expect_rc 0 "a run whose limits and hooks changed resumes without --force"
expect_in "$err" "changed since run run_" "saying the flow changed"
expect_in "$err" "in its limits or hooks only" "in what"
expect_eq "$(cat "$HOOKS_OUT/resumed-end")" "complete" "the hooks are the flow's as it is now"

# parallel children in worktrees: their hooks run in their processes, and
# what they print is in the run's one logs/hooks.log
P=$TEST_TMP/parallel
new_repo "$P"
scripted_agents "$P" action
worktree_children "$P"
cat >>"$P/.ai-loop/flow.yaml" <<'YAML'
hooks:
  on_iteration: 'echo "$AILOOP_NODE" >>"$HOOKS_OUT/parallel"; echo "hook of $AILOOP_NODE"'
YAML
commit_all "$P"
cd "$P"
run "$AILOOP" run "go"
expect_rc 0 "a run with parallel children in worktrees and a hook completes"
expect_eq "$(sort "$HOOKS_OUT/parallel" | tr '\n' ' ')" "main main/first main/last main/par/a main/par/b " \
	"on_iteration ran for each commit, the children's too"
log=$(cat .ai-loop/runs/run_*/logs/hooks.log)
for node in main/first main/par/a main/par/b main/last; do
	expect_in "$log" "hook of $node" "the run's hooks.log holds what the hook of $node printed"
done

# a run paused by SIGTERM (a shutdown, a scheduler) or Ctrl-C is told too:
# on_run_end runs with status paused; a second signal stops a slow hook
export GATE=$TEST_TMP/gate STARTED=$TEST_TMP/started
for case in told stopped; do
	R=$TEST_TMP/paused-$case
	loop_repo "$R" a b
	one_loop "$R" gated.md
	if [ $case = told ]; then
		hook='cat >"$HOOKS_OUT/paused-end.json"; echo "$AILOOP_STATUS" >"$HOOKS_OUT/paused-end.status"'
	else
		hook='echo $$ >"$HOOKS_OUT/slow-end.pid"; sleep 60'
	fi
	printf 'hooks:\n  timeout_seconds: 120\n  on_run_end: %s\n' "'$hook'" >>"$R/.ai-loop/flow.yaml"
	commit_all "$R"
	cd "$R"
	touch "$GATE"
	rm -f "$STARTED"
	start=$(date +%s)
	"$AILOOP" run "fix both" >/dev/null 2>"$TEST_TMP/paused.err" &
	pid=$!
	wait_for "$STARTED" && pass || fail "$case: the actuator started"
	kill -TERM "$pid"
	if [ $case = stopped ]; then
		wait_for "$HOOKS_OUT/slow-end.pid" 30 && pass || fail "the slow hook started after the pause"
		kill -TERM "$pid"
	fi
	wait "$pid" && rc=0 || rc=$?
	expect_eq "$rc" 3 "$case: SIGTERM pauses the run (exit 3)"
	expect_eq "$(run_status)" "paused" "$case: the run is paused"
	rm -f "$GATE"
done
expect_eq "$(cat "$HOOKS_OUT/paused-end.status")" "paused" "on_run_end ran for the paused run"
expect_eq "$(jq -r '[.hook, .status] | join(" ")' "$HOOKS_OUT/paused-end.json")" "on_run_end paused" \
	"its JSON says paused"
expect_eq "$(jq -r .summary "$HOOKS_OUT/paused-end.json")" "interrupted: the run is paused" "and why"
[ $(($(date +%s) - start)) -lt 60 ] && pass || fail "a second signal stopped the slow hook (not its 60 s)"
group_gone "$(cat "$HOOKS_OUT/slow-end.pid")" && pass || fail "the slow hook's process group is gone"
expect_in "$(cat .ai-loop/runs/run_*/logs/hooks.log)" "stopped: the run was interrupted" \
	"hooks.log says how it ended"
expect_not_in "$(cat "$TEST_TMP/paused.err")" "hook on_run_end" "a hook stopped so is no warning"
cd "$TEST_TMP/paused-told"
run "$AILOOP" resume
expect_rc 0 "the paused run resumes and completes"
expect_eq "$(cat "$HOOKS_OUT/paused-end.status")" "complete" "and on_run_end is told again"

# a bad hooks block: errors of validate at file:line:col
V=$TEST_TMP/invalid
loop_repo "$V" a
one_loop "$V" fixer.md
cat >>"$V/.ai-loop/flow.yaml" <<'YAML'
hooks:
  on_iteraton: 'echo typo'
  timeout_seconds: 0
  on_node_end: []
  on_blocked: {run: this}
  on_run_end: '   '
YAML
cd "$V"
run "$AILOOP" validate
expect_rc 65 "validate refuses a bad hooks block"
expect_in "$err" ".ai-loop/flow.yaml:9:3: error: unknown key 'on_iteraton' in hooks (did you mean 'on_iteration'?)" \
	"an unknown hook, at its place, with a suggestion"
expect_in "$err" ".ai-loop/flow.yaml:10:20: error:" "a timeout out of range, at its value"
expect_in "$err" ".ai-loop/flow.yaml:11:16: error: hook 'on_node_end' must name a program first" \
	"an empty list"
expect_in "$err" ".ai-loop/flow.yaml:12:15: error: hook 'on_blocked' must be a command (a string or a list), not a mapping" \
	"a mapping"
expect_in "$err" ".ai-loop/flow.yaml:13:15: error: hook 'on_run_end' is an empty command" \
	"a blank command"
sed -i '/^hooks:/,$d' .ai-loop/flow.yaml
printf 'hooks: [on_run_end]\n' >>.ai-loop/flow.yaml
run "$AILOOP" validate
expect_in "$err" ".ai-loop/flow.yaml:8:8: error: 'hooks' must be a mapping, not a list" "hooks must be a mapping"

finish
