#!/usr/bin/env bash
# A parallel child's worktree removed under it: child a's agent removes
# sibling b's worktree and deletes its branch while b works. The run
# pauses with exit 1 (an agent's doing, as for HEAD moved), naming the
# worktree and the branch removed and the way on, not with an internal
# error (70); `ailoop resume` makes them again and the run completes
# (what the agent wrote in the removed worktree is gone with it).
# Removed without its branch, the message names the worktree alone.
. "$(dirname "$0")/lib.sh"

# removed_repo NAME WHAT: a parallel node (worktrees) whose child a
# removes b's worktree, and with WHAT=branch b's branch too, once
removed_repo() {
	R=$TEST_TMP/$1
	new_repo "$R"
	mkdir -p "$R/.ai-loop/agents"
	cat >"$R/.ai-loop/agents/a.sh" <<SH
main=\$(cd "\$AILOOP_RUN_DIR/../../.." && pwd)
wt=\$AILOOP_RUN_DIR/worktrees/b
if [ ! -e "\$main/removed-once" ]; then
	while [ ! -f "\$wt/b-started" ]; do sleep 0.1; done
	touch "\$main/removed-once"
	git -C "\$main" worktree remove --force "\$wt"
	[ "$2" != branch ] || git -C "\$main" branch -D -q "\$(git -C "\$main" branch --format='%(refname:short)' | grep -- '--b\$')"
	touch "\$main/removed-done"
fi
echo a >a.txt
SH
	cat >"$R/.ai-loop/agents/a.md" <<'MD'
---
name: a
command: sh .ai-loop/agents/a.sh
---
MD
	# b, the first time, works until a has removed all it removes (a minute at most)
	cat >"$R/.ai-loop/agents/b.sh" <<'SH'
main=$(cd "$AILOOP_RUN_DIR/../../.." && pwd)
echo b >b.txt
if [ ! -e "$main/b-ran-once" ]; then
	touch "$main/b-ran-once" b-started
	i=0
	while [ ! -e "$main/removed-done" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
fi
SH
	cat >"$R/.ai-loop/agents/b.md" <<'MD'
---
name: b
command: sh .ai-loop/agents/b.sh
---
MD
	cat >"$R/.ai-loop/flow.yaml" <<'YAML'
version: 1
flow:
  id: par
  type: parallel
  isolation: worktree
  children:
    - {id: a, agent: .ai-loop/agents/a.md}
    - {id: b, agent: .ai-loop/agents/b.md}
YAML
	printf 'removed-once\nremoved-done\nb-ran-once\nb-started\n' >"$R/.gitignore"
	commit_all "$R"
	cd "$R" || exit 1
}

removed_repo both branch
run "$AILOOP" run --quiet "work"
expect_rc 1 "a sibling's worktree and branch removed: the run pauses, not an internal error"
expect_in "$err" "parallel child 'par/b': its worktree '$R/.ai-loop/runs/" "the error names the worktree"
expect_in "$err" "and its branch 'ai-loop/work--b' were removed while it worked" \
	"and the branch removed with it"
expect_in "$err" "ailoop resume" "and the way on"
expect_not_in "$err" "HEAD' not found" "not libgit2's words for it"
expect_eq "$(sed -n 's/^status: //p' .ai-loop/runs/run_*/run-state.md)" "paused" "the run is paused"
run "$AILOOP" resume
expect_rc 0 "the resume makes them again and completes"
expect_eq "$(git show HEAD:a.txt)" "a" "a's work is merged"
expect_eq "$(sed -n 's/^children-done: //p' .ai-loop/runs/run_*/nodes/par/orchestrator-output.md)" \
	"cc" "both children end complete"
expect_eq "$(git worktree list | wc -l | tr -d ' ')" 1 "no worktree is left"

removed_repo worktree-only keep
run "$AILOOP" run --quiet "work"
expect_rc 1 "a sibling's worktree removed: the run pauses"
expect_in "$err" "parallel child 'par/b': its worktree '$R/.ai-loop/runs/" "the error names the worktree"
expect_in "$err" "was removed while it worked" "alone"
expect_not_in "$err" "its branch" "the branch, still there, is not named"
run "$AILOOP" resume
expect_rc 0 "the resume completes"
expect_eq "$(git show HEAD:a.txt)" "a" "a's work is merged"
expect_eq "$(sed -n 's/^children-done: //p' .ai-loop/runs/run_*/nodes/par/orchestrator-output.md)" \
	"cc" "both children end complete"

finish
