#!/usr/bin/env bash
# A parallel node's default isolation: a worktree each when a child can
# write (it, or a node under it, has an actuator or is an action), else
# one shared work tree; `isolation:` on the node and
# defaults.parallel_isolation decide instead when given. A child in a
# worktree sees what the user changed in the main work tree: the
# uncommitted changes a run started with (--allow-dirty), and a fix made
# while the run was stopped, brought in on `ailoop resume`; a change that
# meets the child's own edit of the same file, or that a merge would
# overwrite, stops the resume with an error naming it, and nothing is lost.
. "$(dirname "$0")/lib.sh"

export RV CALLS=$TEST_TMP/calls
mkdir -p "$CALLS"

child_branches() { git branch --list 'ai-loop/*--*' --format='%(refname:short)' | tr '\n' ' '; }

# agent NAME COMMAND: .ai-loop/agents/NAME.md, an agent that runs COMMAND
# (without a single quote: it is quoted so in the YAML)
agent() { printf -- "---\nname: %s\ncommand: '%s'\n---\n" "$1" "$2" >".ai-loop/agents/$1.md"; }

# par_flow CHILD...: the flow, a parallel node `par` of the children (YAML
# list items, each of one or more lines) with no isolation key; committed
par_flow() {
	printf 'version: 1\nflow:\n  id: par\n  type: parallel\n  children:\n' >.ai-loop/flow.yaml
	printf '    - %s\n' "$@" >>.ai-loop/flow.yaml
	commit_all .
}

# fix_loop AGENT: a sensor-form loop child `fix` whose actuator is AGENT
fix_loop() {
	printf 'id: fix\n      type: loop\n      controller: builtin:all-pass\n      sensors: [.ai-loop/agents/sensor.md]\n      actuator: {strategy: direct, agent: .ai-loop/agents/%s.md}' "$1"
}

# iso_repo NAME: a repository with the scripted agents, the editing action
# of the worktree tests and a sensor `peek` that passes only if x.txt,
# written by a sibling, is not where it looks; the test writes the flow
iso_repo() {
	R=$TEST_TMP/$1 RV=$TEST_TMP/$1.rv
	mkdir -p "$RV"
	loop_repo "$R" item
	cp "$FIXTURES"/worktree/edit.* "$FIXTURES"/worktree/peek.* "$R/.ai-loop/agents/"
	cd "$R"
}

# flow_head [NODE-KEY] [DEFAULTS-LINE]: a flow's lines up to its parallel
# node `par`'s children
flow_head() {
	echo "version: 1"
	[ -z "${2:-}" ] || printf 'defaults:\n  %s\n' "$2"
	printf 'flow:\n  id: par\n  type: parallel\n'
	[ -z "${1:-}" ] || printf '  %s\n' "$1"
}

# writers_flow [NODE-KEY] [DEFAULTS-LINE]: a parallel node whose child x
# writes x.txt and whose child watch, a loop, measures with peek
writers_flow() {
	{
		flow_head "$@"
		cat <<'YAML'
  children:
    - {id: x, skill: see-x-watch, agent: .ai-loop/agents/edit.md}
    - id: watch
      type: loop
      controller: builtin:all-pass
      sensors: [.ai-loop/agents/peek.md]
      actuator: {strategy: direct, agent: .ai-loop/agents/noop.md}
      max_iterations: 2
YAML
	} >.ai-loop/flow.yaml
	commit_all .
	touch "$RV/watch" # (x waits for no one)
}

# measuring_flow [NODE-KEY] [DEFAULTS-LINE]: a parallel node whose
# children only measure: conditionals with a condition and no branch
measuring_flow() {
	{
		flow_head "$@"
		cat <<'YAML'
  children:
    - id: has-readme
      type: conditional
      condition: {type: file_exists, path: README, operator: exists}
    - id: readme-says-hello
      type: conditional
      condition: {type: command, command: [grep, -q, hello, README]}
YAML
	} >.ai-loop/flow.yaml
	commit_all .
}

# --- writers: a worktree each, by default -----------------------------------------------
iso_repo writers
writers_flow
run "$AILOOP" run "writers"
expect_rc 0 "children that write: the run completes"
expect_eq "$(child_branches)" "ai-loop/writers--watch ai-loop/writers--x " \
	"writing children get worktrees by default: a branch each"
expect_eq "$(merged_children .)" "$(printf 'par x\npar watch')" "each child is merged back"
expect_in "$(git log --format=%B | grep '^\[sensors\]')" "peek: pass" \
	"a child's sensor does not see its sibling's edit"
expect_eq "$(cat x.txt)" "x" "the sibling's file is merged afterwards"
expect_eq "$(git worktree list | wc -l | tr -d ' ')" "1" "the worktrees go when the run completes"

# --- children that only measure share the work tree ---------------------------------------
iso_repo measuring
measuring_flow
run "$AILOOP" run "measuring"
expect_rc 0 "children that only measure: the run completes"
expect_eq "$(child_branches)" "" "children that only measure get no worktree"
expect_eq "$(git log --merges --format=%s)" "" "and nothing is merged"

# --- the node's key and defaults.parallel_isolation decide when given ----------------------
iso_repo node-shared
writers_flow "isolation: shared"
run "$AILOOP" run "node shared"
expect_rc 1 "isolation: shared on the node: the sensor sees its sibling's file, so never passes"
expect_eq "$(child_branches)" "" "isolation: shared on the node: no worktree"

iso_repo default-shared
writers_flow "" "parallel_isolation: shared"
run "$AILOOP" run "default shared"
expect_eq "$(child_branches)" "" "defaults.parallel_isolation shared: no worktree for writers"

iso_repo node-over-default
writers_flow "isolation: worktree" "parallel_isolation: shared"
run "$AILOOP" run "node over default"
expect_rc 0 "the node's isolation beats defaults.parallel_isolation"
expect_eq "$(child_branches)" "ai-loop/node-over-default--watch ai-loop/node-over-default--x " \
	"isolation: worktree on the node: worktrees despite the default"

iso_repo measuring-worktree
measuring_flow "" "parallel_isolation: worktree"
run "$AILOOP" run "measuring worktree"
expect_rc 0 "defaults.parallel_isolation worktree for measuring children: the run completes"
expect_eq "$(child_branches)" \
	"ai-loop/measuring-worktree--has-readme ai-loop/measuring-worktree--readme-says-hello " \
	"defaults.parallel_isolation worktree: measuring children get worktrees too"

# --- a fix made in the main work tree reaches the child's worktree on resume ----------------
# child fix's actuator runs tools/fix-tool.sh, missing at first, and
# reads mode.txt (tracked), which says "broken": the user adds the one
# (untracked) and edits the other (tracked), then resumes
iso_repo fix
agent tool 'grep -qx ok mode.txt || { echo "mode.txt says $(cat mode.txt)" >&2; exit 4; }; sh tools/fix-tool.sh'
echo broken >mode.txt
echo one >shared.txt
par_flow "{id: quick, skill: line-1-quick, agent: .ai-loop/agents/edit.md}" "$(fix_loop tool)"
run "$AILOOP" run "fix"
expect_rc 1 "the child's agent fails: the run ends in error"
expect_in "$(cat .ai-loop/runs/run_*/nodes/par/fix/logs/actuator.log)" "mode.txt says broken" \
	"the agent failed on the tracked file"
id=$(basename .ai-loop/runs/run_*)
mkdir -p tools
cp .ai-loop/agents/fix.sh tools/fix-tool.sh
sed -i 's|\. "$(dirname "$0")/scope.sh"|. .ai-loop/agents/scope.sh|' tools/fix-tool.sh
echo ok >mode.txt
run "$AILOOP" resume "$id"
expect_rc 0 "resume: the child sees the user's fix and completes"
expect_in "$(cat .ai-loop/runs/"$id"/events.jsonl)" '"event":"parallel_carry"' \
	"the carry-over is an event"
expect_eq "$(git show HEAD:mode.txt)" "ok" "the user's change to a tracked file is in the merged tree"
expect_eq "$(git show HEAD:tools/fix-tool.sh | head -1)" "#!/bin/sh" \
	"the user's new file is in the merged tree"
expect_eq "$(git show HEAD:todo.txt)" "" "the child did its work"
expect_eq "$(git show HEAD:shared.txt)" "quick" "the sibling's work is merged too"
expect_eq "$(git status --porcelain)" "" "clean tree after the resume"
# (the root's label 0 is committed twice, at the error and at the end, as
# with shared children: a root that ends the run in error is committed)
expect_eq "$(label_paths . | tr ',' '\n' | sed 's/^ //' | grep ' par/' | sort | uniq -d)" "" \
	"no iteration label of a child twice: the merges are not iterations"
expect_eq "$(merged_children . | tr '\n' ',')" "par quick,par fix," "a merge commit per child"
expect_in "$("$AILOOP" log --oneline)" "merge fix" "ailoop log shows the merge"
expect_in "$("$AILOOP" log)" "[merge] child fix from branch ai-loop/fix--fix" \
	"ailoop log says a merge commit is a child's merge"
expect_eq "$("$AILOOP" log --json | jq -r '[.[] | select(.merge) | .merge] | join(",")')" \
	"quick,fix" "ailoop log --json marks the merges"

# --- the user's change meets the child's own edit: an error, nothing lost -------------------
iso_repo conflict
agent flaky 'if [ ! -e "$CALLS/flaky" ]; then touch "$CALLS/flaky"; echo child >notes.txt; exit 3; fi; exec sh .ai-loop/agents/fix.sh'
par_flow "$(fix_loop flaky)"
run "$AILOOP" run "conflict"
expect_rc 1 "the child's agent fails after it wrote notes.txt"
id=$(basename .ai-loop/runs/run_*)
wt=$PWD/.ai-loop/runs/$id/worktrees/fix
expect_eq "$(cat "$wt/notes.txt")" "child" "the child's edit is in its worktree"
echo user >notes.txt
run "$AILOOP" resume "$id"
expect_rc 1 "resume: the user's change conflicts with the child's"
expect_in "$err" "ailoop: error: your change to 'notes.txt' in the main work tree conflicts with child 'fix'" \
	"the error names the file and the child"
expect_in "$err" "$wt" "the error names the worktree"
expect_eq "$(cat notes.txt)" "user" "the user's change is kept"
expect_eq "$(cat "$wt/notes.txt")" "child" "the child's edit is kept"
expect_eq "$(run_status)" "paused" "the run is paused, resumable"
rm notes.txt # the user lets the child's version stand
run "$AILOOP" resume
expect_rc 0 "once the user's change is gone, resume completes the run"
expect_eq "$(git show HEAD:notes.txt)" "child" "the child's edit is merged"
expect_eq "$(git status --porcelain)" "" "clean tree after the resume"

# --- a merge never overwrites the user's uncommitted change --------------------------------
# killed once x's merge has written x.txt, before it is committed; the user
# then edits x.txt, and the merge made again on resume would overwrite it
iso_repo overwrite
agent wx "echo x >x.txt"
agent wy "echo y >y.txt"
par_flow "{id: x, skill: x, agent: .ai-loop/agents/wx.md}" "{id: y, skill: y, agent: .ai-loop/agents/wy.md}"
cp -a . "$TEST_TMP/overwrite-points"
(cd "$TEST_TMP/overwrite-points" &&
	AILOOP_CRASH_LOG="$TEST_TMP/points" "$AILOOP" run --quiet "overwrite" >/dev/null 2>&1)
n=$(grep -n -m1 merge-checkout "$TEST_TMP/points" | cut -d: -f1)
rc=$({ AILOOP_CRASH_AT=$n "$AILOOP" run --quiet "overwrite" >/dev/null 2>&1; echo $?; } 2>/dev/null)
expect_eq "$rc" 137 "killed in the first merge, its files written, not committed"
echo user >x.txt
run "$AILOOP" resume
expect_rc 1 "resume: the merge would overwrite the user's change"
expect_in "$err" "ailoop: error: your change to 'x.txt' in the main work tree would be overwritten by the merge of branch 'ai-loop/overwrite--x'" \
	"the error names the file and the branch"
expect_eq "$(cat x.txt)" "user" "the user's change is kept"
expect_eq "$(run_status)" "paused" "the run is paused, resumable"
rm x.txt
run "$AILOOP" resume
expect_rc 0 "once the user's change is gone, resume merges both children"
expect_eq "$(cat x.txt) $(cat y.txt)" "x y" "both children's files are merged"
expect_eq "$(merged_children . | tr '\n' ',')" "par x,par y," "a merge commit each, once"
expect_eq "$(git status --porcelain)" "" "clean tree after the resume"

# --- --allow-dirty: the children see the changes the run started with ----------------------
iso_repo dirty
agent sees 'test -e extra.txt && grep -q dirty README && echo seen >"seen-$AILOOP_NODE_ID.txt"'
par_flow "{id: a, skill: look, agent: .ai-loop/agents/sees.md}" "{id: b, skill: look, agent: .ai-loop/agents/sees.md}"
echo dirty >>README
echo extra >extra.txt
run "$AILOOP" run --allow-dirty "dirty"
expect_rc 0 "--allow-dirty: each child in a worktree sees the uncommitted changes"
expect_eq "$(child_branches)" "ai-loop/dirty--a ai-loop/dirty--b " "the children had worktrees"
expect_eq "$(git show HEAD:seen-a.txt) $(git show HEAD:seen-b.txt)" "seen seen" \
	"both children saw the changes"
expect_eq "$(git show HEAD:extra.txt)" "extra" "the untracked file is in the run's last commit"
expect_eq "$(git show HEAD:README | tail -1)" "dirty" "so is the change to a tracked file"
expect_eq "$(git status --porcelain)" "" "clean tree at the end"

finish
