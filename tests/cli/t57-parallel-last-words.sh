#!/usr/bin/env bash
# A parallel child that ends in error writes its error to its parent just
# before it exits. The parent must report that error, and its exit code,
# even when the child wrote and exited after the parent last read the
# child's pipe: the parent then finds the child gone before it has read
# its last words. strace opens that window at every turn of the parent's
# wait: each poll returns at once as if nothing were ready, and each read
# returns only after a pause, during which the child writes and exits.
. "$(dirname "$0")/lib.sh"

command -v strace >/dev/null || { echo "skipped: no strace"; exit 77; }
strace -o /dev/null -e inject=read:delay_exit=1000 true 2>/dev/null ||
	{ echo "skipped: strace cannot inject delays here"; exit 77; }

# (LeakSanitizer cannot work under ptrace: a sanitizer build checks leaks elsewhere)
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0

R=$TEST_TMP/repo
new_repo "$R"
command_agents "$R" 'exit 1' 'sleep 0.2; echo "broken" >&2; exit 3'
cat >"$R/.ai-loop/flow.yaml" <<'YAML'
version: 1
flow:
  id: par
  type: parallel
  children:
    - id: fix
      type: loop
      controller: builtin:all-pass
      sensors: [.ai-loop/agents/sensor.md]
      actuator: {strategy: direct, agent: .ai-loop/agents/act.md}
YAML
commit_all "$R"
cd "$R"

for turn in 1 2 3; do
	git checkout -q main
	rm -rf .ai-loop/runs
	git worktree prune
	git for-each-ref --format='%(refname:short)' refs/heads/ai-loop | xargs -r git branch -q -D
	run strace -o /dev/null -e inject=poll:retval=0 -e inject=read:delay_exit=20000 \
		"$AILOOP" run --quiet "fix it"
	expect_rc 1 "turn $turn: the child's error is the run's (not an internal error)"
	expect_in "$err" "actuator '.ai-loop/agents/act.md' failed with exit status 3" \
		"turn $turn: the child's error is reported"
	expect_not_in "$err" "parallel child 'par/fix' failed" "turn $turn: not a bare 'failed'"
done

finish
