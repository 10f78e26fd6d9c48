#!/usr/bin/env bash
# An agent that moves HEAD off the run's branch (checks out another branch,
# resets the branch behind ailoop's last commit): ailoop commits nothing
# anywhere, pauses the run with an error naming both branches or commits
# and what to do, exits 1, and resume goes on once the user has put the
# branch back. So for an agent that removes the run's untracked files
# (`git clean -x`). An agent that commits on the run's branch is fine.
. "$(dirname "$0")/lib.sh"

# once_agent DIR NAME COMMAND: an actuator that fixes one item, and runs
# COMMAND (a shell line) the first time only
once_agent() {
	local marker=$TEST_TMP/$2.done
	cat >"$1/.ai-loop/agents/$2.md" <<MD
---
name: $2
command: >-
  sh .ai-loop/agents/fix.sh &&
  if [ ! -e $marker ]; then touch $marker; $3; fi
---
Fixes one item, and does something to git once.
MD
}

run "$AILOOP" --help
expect_in "$out" "or an agent moved HEAD off the run's branch (the run is paused)" \
	"--help says what exit 1 also means"
expect_in "$out" "or removed the run's untracked files, as git clean -x does (paused)" \
	"--help says exit 1 is also for an agent's git clean -x"

# an actuator that switches to a new branch
R=$TEST_TMP/switch
loop_repo "$R" a b
once_agent "$R" switcher "git checkout -q -b other"
one_loop "$R" switcher.md
commit_all "$R"
cd "$R"
base=$(git rev-parse HEAD)
run "$AILOOP" run "fix it"
expect_rc 1 "branch switch: an agent error"
expect_in "$err" "HEAD is on branch 'other', not on the run's branch 'ai-loop/fix-it'" \
	"branch switch: the error names both branches"
expect_in "$err" "git checkout ai-loop/fix-it" "branch switch: says how to go back"
expect_in "$out" "is paused: continue it with 'ailoop resume" "branch switch: the run is paused"
expect_in "$(cat .ai-loop/runs/run_*/run-state.md)" "status: paused" "branch switch: run-state paused"
expect_eq "$(git rev-parse --abbrev-ref HEAD)" "other" "branch switch: HEAD left where the agent put it"
expect_eq "$(git rev-parse other)" "$(git rev-parse ai-loop/fix-it)" \
	"branch switch: no ailoop commit on the other branch"
expect_eq "$(git log --format=%s "$base"..ai-loop/fix-it | grep -c '^ai-loop')" "1" \
	"branch switch: the run's branch keeps its commit"
grep -qx b todo.txt && ! grep -qx a todo.txt && pass ||
	fail "branch switch: the agent's work is still in the work tree"
# the user goes back; resume continues the iteration and completes
git checkout -q ai-loop/fix-it
run "$AILOOP" resume
expect_rc 0 "branch switch: resume after switching back"
expect_eq "$(labels "$R")" "0 1 2 3" "branch switch: every iteration on the run's branch"
expect_eq "$(git rev-parse other)" "$(git rev-parse ai-loop/fix-it~3)" \
	"branch switch: nothing was committed on the other branch"
expect_eq "$(cat todo.txt)" "" "branch switch: the work was kept"
expect_eq "$(git status --porcelain)" "" "branch switch: clean tree after the run"

# without switching back, resume checks the run's branch out (the work tree comes along)
R=$TEST_TMP/switch-resume
loop_repo "$R" a
once_agent "$R" switcher "git checkout -q -b other"
one_loop "$R" switcher.md
commit_all "$R"
rm -f "$TEST_TMP/switcher.done"
cd "$R"
run "$AILOOP" run "fix it"
expect_rc 1 "switch, resume at once: the switch is caught"
run "$AILOOP" resume
expect_rc 0 "switch, resume at once: resume completes"
expect_eq "$(git rev-parse --abbrev-ref HEAD)" "ai-loop/fix-it" "switch, resume at once: back on the run's branch"
expect_eq "$(labels "$R")" "0 1 2" "switch, resume at once: the iteration is committed"
expect_eq "$(git log --format=%s other | grep -c '^ai-loop')" "1" \
	"switch, resume at once: nothing committed on the other branch"

# an agent that commits on the branch it switched to: the advice keeps its commit
R=$TEST_TMP/switch-commit
loop_repo "$R" a b
once_agent "$R" switcher "git checkout -q -b other && git add -A && git commit -q -m 'agent: on other'"
one_loop "$R" switcher.md
commit_all "$R"
rm -f "$TEST_TMP/switcher.done"
cd "$R"
run "$AILOOP" run "fix it"
expect_rc 1 "switch and commit: caught"
expect_in "$err" "git branch -f ai-loop/fix-it other" "switch and commit: says how to keep the agent's commits"
# resume cannot check the run's branch out over the agent's commit: it says how
run "$AILOOP" resume
expect_rc 70 "switch and commit: resume without following the advice is refused"
expect_in "$err" "HEAD is on branch 'other': if an agent committed there on top of the run, keep its commits with 'git branch -f ai-loop/fix-it other && git checkout ai-loop/fix-it'" \
	"switch and commit: resume's refusal says how to go back"
expect_eq "$(git rev-parse --abbrev-ref HEAD)" "other" "switch and commit: the refused resume left HEAD alone"
git branch -f ai-loop/fix-it other && git checkout -q ai-loop/fix-it
run "$AILOOP" resume
expect_rc 0 "switch and commit: resume after following the advice"
expect_in "$(git log --format=%s)" "agent: on other" "switch and commit: the agent's commit is in the run"
expect_eq "$(labels "$R")" "0 1 2 3" "switch and commit: every iteration committed"

# an agent that detaches HEAD
R=$TEST_TMP/detach
loop_repo "$R" a
once_agent "$R" detacher "git checkout -q --detach"
one_loop "$R" detacher.md
commit_all "$R"
cd "$R"
run "$AILOOP" run "fix it"
expect_rc 1 "detached HEAD: caught"
expect_in "$err" "HEAD is detached at" "detached HEAD: says so"
expect_in "$err" "not on the run's branch 'ai-loop/fix-it'" "detached HEAD: names the run's branch"

# an agent that resets the run's branch behind ailoop's last commit
R=$TEST_TMP/reset
loop_repo "$R" a b
once_agent "$R" resetter "git reset -q --hard HEAD~1"
one_loop "$R" resetter.md
commit_all "$R"
cd "$R"
run "$AILOOP" run "fix it"
last=$(git rev-parse --short=12 ORIG_HEAD)
expect_rc 1 "reset: an agent error"
expect_in "$err" "the run's branch 'ai-loop/fix-it' was moved to $(git rev-parse --short=12 HEAD), which does not contain ailoop's last commit $last" \
	"reset: the error names both commits"
expect_in "$err" "git reset --soft $last" "reset: says how to put it back"
expect_eq "$(git log --format=%s | grep -c '^ai-loop')" "0" "reset: nothing committed on top of the reset"
id=$(ls .ai-loop/runs | head -1)
git reset -q --soft "$last" && git checkout -q "$last" -- ".ai-loop/runs/$id"
run "$AILOOP" resume
expect_rc 0 "reset: resume after putting it back"
expect_eq "$(labels "$R")" "0 1 2 3" "reset: no label lost or repeated"
expect_eq "$(cat todo.txt)" "" "reset: the run completes its work"

# --no-branch on a detached HEAD: the run follows the detached HEAD
R=$TEST_TMP/detached-run
loop_repo "$R" a
once_agent "$R" brancher "git checkout -q -b other"
one_loop "$R" brancher.md
commit_all "$R"
rm -f "$TEST_TMP/brancher.done"
cd "$R"
git checkout -q --detach
run "$AILOOP" run --no-branch "fix it"
expect_rc 1 "detached run: a switch to a branch is caught"
expect_in "$err" "HEAD is on branch 'other', but the run works on a detached HEAD" \
	"detached run: the error says the run is on a detached HEAD"
git checkout -q --detach other
run "$AILOOP" resume
expect_rc 0 "detached run: resumes on the detached HEAD"
expect_eq "$(git rev-parse --abbrev-ref HEAD)" "HEAD" "detached run: HEAD still detached"
expect_eq "$(labels "$R")" "0 1 2" "detached run: every iteration committed"

# an agent that deletes the run's branch
R=$TEST_TMP/deleted
loop_repo "$R" a
once_agent "$R" deleter2 "git update-ref -d refs/heads/ai-loop/fix-it"
one_loop "$R" deleter2.md
commit_all "$R"
cd "$R"
run "$AILOOP" run "fix it"
expect_rc 1 "deleted branch: caught"
expect_in "$err" "the run's branch 'ai-loop/fix-it' was deleted, with ailoop's last commit" \
	"deleted branch: says so"
expect_in "$err" "put it back with 'git reset --soft " "deleted branch: says how to put it back"

# a run on a detached HEAD whose HEAD an agent moves back
R=$TEST_TMP/detached-reset
loop_repo "$R" a
once_agent "$R" backer "git reset -q --soft HEAD~1"
one_loop "$R" backer.md
commit_all "$R"
cd "$R"
git checkout -q --detach
run "$AILOOP" run --no-branch "fix it"
expect_rc 1 "detached run moved back: caught"
expect_in "$err" "HEAD was moved to $(git rev-parse --short=12 HEAD), which does not contain ailoop's last commit" \
	"detached run moved back: names the commits"

# --no-branch: the run's branch is the one it started on
R=$TEST_TMP/nobranch
loop_repo "$R" a
once_agent "$R" brancher "git checkout -q -b other"
one_loop "$R" brancher.md
commit_all "$R"
rm -f "$TEST_TMP/brancher.done"
cd "$R"
run "$AILOOP" run --no-branch "fix it"
expect_rc 1 "--no-branch: a switch is caught"
expect_in "$err" "HEAD is on branch 'other', not on the run's branch 'main'" "--no-branch: names main"

# a parallel child's agent detaches HEAD in its worktree: the way back is
# a command for that worktree (in the main one it would move the run's
# branch), and the message says where
R=$TEST_TMP/worktree
new_repo "$R"
mkdir -p "$R/.ai-loop/agents"
printf 'one\ntwo\nthree\nfour\n' >"$R/shared.txt"
cp "$FIXTURES"/worktree/edit.md "$FIXTURES"/worktree/edit.sh "$R/.ai-loop/agents/"
printf -- '---\nname: mover\ncommand: sh .ai-loop/agents/edit.sh && git checkout -q --detach\n---\n' \
	>"$R/.ai-loop/agents/mover.md"
cat >"$R/.ai-loop/flow.yaml" <<'YAML'
version: 1
flow:
  id: par
  type: parallel
  isolation: worktree
  children:
    - {id: a, skill: line-1-A, agent: .ai-loop/agents/mover.md}
    - {id: b, skill: line-4-B, agent: .ai-loop/agents/edit.md}
YAML
commit_all "$R"
cd "$R"
run "$AILOOP" run "move it"
expect_rc 1 "a child's detached HEAD: an agent's doing"
wt=$(cd .ai-loop/runs/run_*/worktrees/a && pwd -P)/
expect_in "$err" "in the worktree $wt, go back with 'git checkout ai-loop/move-it--a'" \
	"a child's detached HEAD: the way back names the child's worktree"
expect_eq "$(git rev-parse --abbrev-ref HEAD)" "ai-loop/move-it" "a child's detached HEAD: the main work tree stays"
(cd "$wt" && git checkout -q ai-loop/move-it--a)
run "$AILOOP" resume
expect_rc 0 "a child's detached HEAD: resume once it is back"
expect_eq "$(tr '\n' , <shared.txt)" "A,two,three,B," "a child's detached HEAD: both children merged"
expect_eq "$(git status --porcelain)" "" "a child's detached HEAD: clean tree after the run"

# an actuator that removes the run's untracked files (its lock, event log,
# memory, logs) with `git clean -x`: caught as soon as it exits, before
# anything is written where they were; resume goes on without them
R=$TEST_TMP/clean
loop_repo "$R" a b
once_agent "$R" cleaner "git clean -fdxq"
one_loop "$R" cleaner.md
commit_all "$R"
cd "$R"
run "$AILOOP" run "fix it"
expect_rc 1 "git clean -x: an agent's doing"
expect_in "$err" "actuator '.ai-loop/agents/cleaner.md' removed the run's files that git does not track" \
	"git clean -x: the error names the agent"
expect_in "$err" "as 'git clean -x' does; ailoop stopped there, and the run's commits are safe" \
	"git clean -x: the error says what happened and that the commits are safe"
expect_in "$out" "is paused: continue it with 'ailoop resume" "git clean -x: the run is paused"
# (a blob staged ahead while the agent worked, never committed, is dangling)
expect_eq "$(git fsck --strict --no-dangling 2>&1)" "" "git clean -x: git fsck --strict"
run "$AILOOP" resume
expect_rc 0 "git clean -x: resume completes the run"
expect_eq "$(cat todo.txt)" "" "git clean -x: the work was done"
expect_eq "$(git status --porcelain)" "" "git clean -x: clean tree after the run"

# an agent that commits by itself on the run's branch is fine
R=$TEST_TMP/self
loop_repo "$R" a b
one_loop "$R" self-commit.md
commit_all "$R"
cd "$R"
run "$AILOOP" run "fix it"
expect_rc 0 "agent commits on the run's branch: allowed"
expect_eq "$(git log --format=%s | grep -c '^agent: fixed one item itself')" "2" \
	"agent commits on the run's branch: kept"

finish
