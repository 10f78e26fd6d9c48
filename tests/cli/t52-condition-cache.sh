#!/usr/bin/env bash
# The cache of condition results (<run-dir>/conditions.jsonl) stays out of
# history and out of `git status`, as the event log does: it only grows and
# is keyed by the trees it was computed on.
. "$(dirname "$0")/lib.sh"

R=$TEST_TMP/repo
loop_repo "$R" item-1 item-2
one_loop "$R" caching.md "max_iterations: 5"
# an actuator that fixes an item and adds to the cache, as a condition would
cat >"$R/.ai-loop/agents/caching.md" <<'MD'
---
name: caching
command: [sh, -c, 'echo "{\"node\":\"fix\"}" >>"$AILOOP_RUN_DIR/conditions.jsonl" && sh .ai-loop/agents/fix.sh']
---
MD
commit_all "$R"
cd "$R"

run "$AILOOP" run "empty the todo list"
expect_rc 0 "the run completes"
run_dir=$(ls -d .ai-loop/runs/run_*)
expect_eq "$(wc -l <"$run_dir/conditions.jsonl")" 2 "the cache holds what was appended"
expect_eq "$(git log --all --format=%H -- "$run_dir/conditions.jsonl")" "" \
	"no commit holds the cache"
expect_eq "$(git ls-tree -r --name-only HEAD -- "$run_dir" | grep -c nodes/fix/)" 6 \
	"the run's other files are committed"
expect_eq "$(git status --porcelain)" "" "git status does not show the cache"
expect_in "$(cat .ai-loop/runs/.gitignore)" "conditions.jsonl" ".gitignore names the cache"
finish
