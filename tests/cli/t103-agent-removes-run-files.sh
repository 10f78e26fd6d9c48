#!/usr/bin/env bash
# An agent removes files of the run's own: its node's directory, its logs,
# every node's directory of a nested run, the runs' .gitignore, or all it
# can with `git restore --source=main --staged --worktree`. The run goes
# on: what it writes once (a node's task, a finished node's result and
# state) is put back as the last commit has it, never committed as gone,
# and the run ends with the commits and files of the run left alone. After
# a kill, the resume says how to put back what it cannot.
. "$(dirname "$0")/lib.sh"

# count_repo DIR ACTUATOR-COMMAND: a one-level loop counting to 3
count_repo() {
	new_repo "$1"
	echo 0 >"$1/count"
	command_agents "$1" 'c=$(cat count); echo "count $c"; test "$c" -ge 3' "$2"
	one_loop "$1" act.md "max_iterations: 5"
	commit_all "$1"
}

# run_files DIR: the files of the run at HEAD, its id left out
run_files() {
	git -C "$1" ls-tree -r --name-only HEAD -- .ai-loop/runs | sed 's/run_[0-9_]*/RUN/' |
		tr '\n' ' '
}

# every_commit_has DIR FILE: whether each ailoop commit holds FILE (a path below the run)
every_commit_has() {
	local rev missing=0
	for rev in $(git -C "$1" log --format=%H --grep='^\[run\] '); do
		git -C "$1" ls-tree -r --name-only "$rev" | grep -q "$2" || missing=$((missing + 1))
	done
	echo "$missing"
}

inc='echo $(($(cat count) + 1)) >count'

# --- the reference: the same loop, left alone -----------------------------------
count_repo "$TEST_TMP/ref" "$inc"
cd "$TEST_TMP/ref" || exit 1
run "$AILOOP" run --quiet "count"
expect_rc 0 "the reference run"
ref_labels=$(labels "$TEST_TMP/ref")
ref_files=$(run_files "$TEST_TMP/ref")
expect_in "$ref_files" "nodes/fix/task.md" "the reference commits the node's task"

# --- the agent removes its node's directory at every actuation -------------------
R=$TEST_TMP/nodedir
count_repo "$R" "$inc; rm -rf .ai-loop/runs/*/nodes/fix"
cd "$R" || exit 1
run "$AILOOP" run --quiet "count"
expect_rc 0 "a run whose agent removes its node's directory"
expect_eq "$(labels "$R")" "$ref_labels" "the same iterations as the run left alone"
expect_eq "$(run_files "$R")" "$ref_files" "the last commit holds every file of the run"
expect_eq "$(every_commit_has "$R" 'nodes/fix/task.md')" 0 "every commit holds the node's task"
expect_eq "$(git status --porcelain)" "" "the work tree is clean at the end"

# --- the agent removes its logs: the run writes them again ------------------------
R=$TEST_TMP/logs
count_repo "$R" "$inc; rm -rf .ai-loop/runs/*/nodes/fix/logs"
cd "$R" || exit 1
run "$AILOOP" run --quiet "count"
expect_rc 0 "a run whose agent removes its logs"
expect_eq "$(labels "$R")" "$ref_labels" "logs removed: the same iterations"
[ -e "$(ls -d .ai-loop/runs/run_*)/nodes/fix/logs/actuator.log" ] && pass ||
	fail "the actuator's log is written again"

# --- the runs' .gitignore, and all the run's files through git itself -------------
R=$TEST_TMP/ignore
count_repo "$R" "$inc; rm -f .ai-loop/runs/.gitignore"
cd "$R" || exit 1
run "$AILOOP" run --quiet "count"
expect_rc 0 "a run whose agent removes the runs' .gitignore"
expect_eq "$(run_files "$R")" "$ref_files" "the .gitignore is committed still"
expect_eq "$(git status --porcelain)" "" "and nothing the run keeps out of commits shows"

R=$TEST_TMP/restore
count_repo "$R" "$inc; git restore --source=main --staged --worktree -- .ai-loop/runs"
cd "$R" || exit 1
run "$AILOOP" run --quiet "count"
expect_rc 0 "a run whose agent restores .ai-loop/runs from main, index and all"
expect_eq "$(labels "$R")" "$ref_labels" "git restore: the same iterations"
expect_eq "$(run_files "$R")" "$ref_files" "git restore: the last commit holds every file"
expect_eq "$(every_commit_has "$R" 'runs/.gitignore')" 0 "every commit holds the .gitignore"

# --- nested: the inner agent removes every node's directory ------------------------
nested() {
	loop_repo "$1" a b c
	printf -- '---\nname: gone\ncommand: sh .ai-loop/agents/fix.sh; rm -rf %s\n---\n' \
		"${2:-/dev/null/none}" >"$1/.ai-loop/agents/gone.md"
	two_loops "$1" gone.md "max_iterations: 5" "max_iterations: 5"
	commit_all "$1"
}
nested "$TEST_TMP/nref"
cd "$TEST_TMP/nref" || exit 1
run "$AILOOP" run --quiet "fix all"
expect_rc 0 "the nested reference run"
R=$TEST_TMP/nested
nested "$R" '.ai-loop/runs/*/nodes'
cd "$R" || exit 1
run "$AILOOP" run --quiet "fix all"
expect_rc 0 "a nested run whose inner agent removes every node's directory"
expect_eq "$(label_paths "$R")" "$(label_paths "$TEST_TMP/nref")" "nested: the same iterations"
expect_eq "$(run_files "$R")" "$(run_files "$TEST_TMP/nref")" \
	"nested: the last commit holds every node's files, the finished child's too"
expect_eq "$(every_commit_has "$R" 'nodes/outer/task.md')" 0 "every commit holds the parent's task"
expect_eq "$(git status --porcelain)" "" "nested: the work tree is clean at the end"

# --- a sequence: an agent removes a finished sibling's state, then a kill -----------------
# (the resume's first commit puts it back: it was no feedback edge's doing)
seq_repo() {
	new_repo "$1"
	mkdir -p "$1/.ai-loop/agents"
	printf -- "---\nname: act\ncommand: 'echo \$AILOOP_NODE_ID >>work.txt; %s'\n---\n" "$2" \
		>"$1/.ai-loop/agents/act.md"
	printf 'version: 1\nflow:\n  id: s\n  type: sequence\n  children:\n    - {id: a, agent: act}\n    - {id: b, agent: act}\n    - {id: c, agent: act}\n' \
		>"$1/.ai-loop/flow.yaml"
	commit_all "$1"
}
seq_repo "$TEST_TMP/sref" ":"
cd "$TEST_TMP/sref" || exit 1
run "$AILOOP" run --quiet "three steps"
expect_rc 0 "the sequence left alone"
R=$TEST_TMP/sibling
seq_repo "$R" 'if [ $AILOOP_NODE_ID = b ] && [ ! -e ../sibling.once ]; then touch ../sibling.once; rm -f .ai-loop/runs/*/nodes/s/a/orchestrator-output.md; kill -9 $PPID; sleep 1; fi'
cd "$R" || exit 1
run "$AILOOP" run --quiet "three steps"
expect_rc 137 "b removes a's state and kills ailoop"
run "$AILOOP" resume
expect_rc 0 "the resume completes"
expect_eq "$(run_files "$R")" "$(run_files "$TEST_TMP/sref")" "a's state is committed still"
expect_eq "$("$AILOOP" status --json | jq -r '.nodes[].node_path' | tr '\n' ' ')" "s s/a s/b s/c " \
	"status lists the finished sibling"

# --- a sequence: what an agent puts in place of the run's files ---------------------------
# a finished sibling's directory become a link, then a kill; a finished
# sibling's result become a directory; the agent's own node's directory
# become a link to a directory outside the repository
mkdir -p "$TEST_TMP/outside"
for case in link-killed dir own-link state-dir; do
	case $case in
	state-dir) what='if [ $AILOOP_NODE_ID = b ]; then f=$(ls -d .ai-loop/runs/run_*)/run-state.md; rm -f $f $f.lock; mkdir -p $f/x $f.lock/y; fi' ;;
	link-killed) what='if [ $AILOOP_NODE_ID = b ] && [ ! -e ../lk.once ]; then touch ../lk.once; rm -rf .ai-loop/runs/*/nodes/s/a; ln -s /etc/hostname .ai-loop/runs/$(ls .ai-loop/runs | grep run_)/nodes/s/a; kill -9 $PPID; sleep 1; fi' ;;
	dir) what='if [ $AILOOP_NODE_ID = b ]; then f=$(ls -d .ai-loop/runs/run_*/nodes/s/a)/result-output.md; rm -f $f; mkdir -p $f/x; echo junk >$f/x/y; fi' ;;
	own-link) what="if [ \$AILOOP_NODE_ID = b ]; then d=\$(ls -d .ai-loop/runs/run_*/nodes/s)/b; rm -rf \$d; ln -s $TEST_TMP/outside \$d; fi" ;;
	esac
	R=$TEST_TMP/tamper-$case
	seq_repo "$R" "$what"
	cd "$R" || exit 1
	run "$AILOOP" run --quiet "three steps"
	if [ "$case" = link-killed ]; then
		expect_rc 137 "$case: killed"
		run "$AILOOP" resume
	fi
	expect_rc 0 "$case: the run completes"
	expect_eq "$(run_files "$R")" "$(run_files "$TEST_TMP/sref")" "$case: the run's files, as the run left alone has them"
	expect_eq "$(git ls-tree -r HEAD .ai-loop/runs | grep -c '^120000')" 0 "$case: no link committed"
	expect_eq "$(git status --porcelain)" "" "$case: the tree ends clean"
done
expect_eq "$(ls -A "$TEST_TMP/outside")" "" "nothing of the run was written through the link"

# .ai-loop/runs itself made a link to elsewhere: the run stops at its next
# write (66), never writing through it, and says how to put it back
R=$TEST_TMP/runs-link
seq_repo "$R" 'if [ $AILOOP_NODE_ID = b ]; then mv .ai-loop/runs ../runs-elsewhere; ln -s $PWD/../runs-elsewhere .ai-loop/runs; fi'
cd "$R" || exit 1
run "$AILOOP" run --quiet "three steps"
expect_rc 66 "a link in place of .ai-loop/runs"
expect_in "$err" "'.ai-loop/runs' is a symbolic link (an agent's?)" "the link is named"
expect_in "$err" "rm .ai-loop/runs && git checkout HEAD -- .ai-loop/runs" "with the way back"
expect_not_in "$(cat ../runs-elsewhere/run_*/run-state.md)" "status: complete" \
	"the run's state was not written through the link"

# --- a parallel child in a worktree of its own restores the runs from main ---------------
par_repo() {
	new_repo "$1"
	mkdir -p "$1/.ai-loop/agents"
	printf -- "---\nname: act\ncommand: 'echo \$AILOOP_NODE_ID >\$AILOOP_NODE_ID.txt; if [ \$AILOOP_NODE_ID = a ]; then %s; fi'\n---\n" "$2" \
		>"$1/.ai-loop/agents/act.md"
	printf 'version: 1\nflow:\n  id: main\n  type: sequence\n  children:\n    - {id: first, agent: act}\n    - id: par\n      type: parallel\n      isolation: worktree\n      children: [{id: a, agent: act}, {id: b, agent: act}]\n    - {id: last, agent: act}\n' \
		>"$1/.ai-loop/flow.yaml"
	commit_all "$1"
}
par_repo "$TEST_TMP/pref" ":"
cd "$TEST_TMP/pref" || exit 1
run "$AILOOP" run --quiet "in parallel"
expect_rc 0 "the parallel flow left alone"
for how in "git restore --source=main --staged --worktree -- .ai-loop/runs" "rm -rf .ai-loop/runs" \
	'git rm -rqf .ai-loop/runs; mkdir -p .ai-loop/runs; echo x >.ai-loop/runs/$AILOOP_RUN_ID; git add -A; git commit -qm mine'; do
	R=$TEST_TMP/par-$(printf '%s' "$how" | cksum | cut -d' ' -f1)
	par_repo "$R" "$how"
	cd "$R" || exit 1
	run "$AILOOP" run --quiet "in parallel"
	expect_rc 0 "a worktree child that runs '$how'"
	expect_eq "$(run_files "$R")" "$(run_files "$TEST_TMP/pref")" \
		"'$how' in a child's worktree: the run's files are all in the last commit"
	expect_eq "$(git log --format=%H --diff-filter=D -- .ai-loop/runs | wc -l)" 0 \
		"'$how' in a child's worktree: no commit records a run's file as gone"
	expect_eq "$(git status --porcelain)" "" "'$how' in a child's worktree: the tree ends clean"
done

# a worktree child removes the nodes' states of the main work tree ($AILOOP_RUN_DIR),
# then a kill: the way back the resume names works, though the parallel
# node's task was never committed (its state's digest vouches for the one
# its parent gives it again)
R=$TEST_TMP/par-rundir
par_repo "$R" '[ -e ../prd.once ] || { touch ../prd.once; rm -rf $AILOOP_RUN_DIR/nodes; kill -9 $PPID; sleep 1; }'
cd "$R" || exit 1
run "$AILOOP" run --quiet "in parallel"
run "$AILOOP" resume
expect_rc 65 "the nodes' states gone: the resume says the run's state is damaged"
expect_in "$err" "git checkout HEAD -- .ai-loop/runs/run_" "and names the way back"
git checkout HEAD -- "$(ls -d .ai-loop/runs/run_*)"
run "$AILOOP" resume
expect_rc 0 "the way back works"
# (the sibling b may have ended before the kill, its files in the work tree
# alone, removed with the rest: whether it runs again is the kill's timing)
expect_eq "$(run_files "$R" | tr ' ' '\n' | grep -v '/par/b/' | tr '\n' ' ')" \
	"$(run_files "$TEST_TMP/pref" | tr ' ' '\n' | grep -v '/par/b/' | tr '\n' ' ')" \
	"and the run's files are committed, the parallel node's task too"

# --- nested: the inner agent restores the runs from main, then a kill ----------------------
# (restored at its first call, killed at its second: the commit between
# holds the parent's state, put back, so the resume finds it)
R=$TEST_TMP/nested-kill
nested "$R" '/dev/null/none; if [ ! -e ../nk.1 ]; then touch ../nk.1; git restore --source=main --staged --worktree -- .ai-loop/runs; elif [ ! -e ../nk.2 ]; then touch ../nk.2; kill -9 $PPID; sleep 1; fi'
cd "$R" || exit 1
run "$AILOOP" run --quiet "fix all"
expect_rc 137 "the inner agent restores the runs from main, then ailoop is killed"
expect_eq "$(git log --format=%H --diff-filter=D -- .ai-loop/runs | wc -l)" 0 \
	"nested: no commit records a run's file as gone"
run "$AILOOP" resume
expect_rc 0 "the resume finds the parent's state and completes"
expect_eq "$(run_files "$R")" "$(run_files "$TEST_TMP/nref")" "nested, killed: every node's files committed"

# --- then a kill: the resume says how to put back what it cannot --------------------
R=$TEST_TMP/killed
count_repo "$R" "$inc"'; if [ "$(cat count)" = 2 ] && [ ! -e ../killed.once ]; then
	touch ../killed.once; rm -rf .ai-loop/runs; kill -9 $PPID; fi'
cd "$R" || exit 1
run "$AILOOP" run --quiet "count"
expect_rc 137 "the agent removes every run's files and kills ailoop"
run "$AILOOP" resume
expect_rc 66 "the resume finds no run's files"
run_id=$(git ls-tree --name-only HEAD .ai-loop/runs/ | sed -n 's|.*/\(run_.*\)|\1|p')
expect_in "$err" "the files of run $run_id are gone from the work tree" "the resume names the run"
expect_in "$err" "git checkout HEAD -- .ai-loop/runs && ailoop resume $run_id" \
	"and the way to put them back"
git checkout HEAD -- .ai-loop/runs
run "$AILOOP" resume
expect_rc 0 "resumed after the files are put back"
# the killed actuation's count stays, and it runs again: one iteration fewer
expect_eq "$(labels "$R")" "0 1 2 3" "killed: the iterations of a run killed as its agent works"

R=$TEST_TMP/killed-node
count_repo "$R" "$inc"'; if [ "$(cat count)" = 2 ] && [ ! -e ../killed-node.once ]; then
	touch ../killed-node.once; rm -rf .ai-loop/runs/*/nodes; kill -9 $PPID; fi'
cd "$R" || exit 1
run "$AILOOP" run --quiet "count"
expect_rc 137 "the agent removes the nodes' directories and kills ailoop"
run "$AILOOP" resume
expect_rc 65 "the resume finds the node's state gone"
expect_in "$err" "git checkout HEAD -- .ai-loop/runs/$run_id && ailoop resume $run_id" \
	"and says how to put it back"
git checkout HEAD -- ".ai-loop/runs/$run_id"
run "$AILOOP" resume
expect_rc 0 "resumed after the node's files are put back"
expect_eq "$(labels "$R")" "0 1 2 3" "the node's files removed: the iterations of a killed run"

finish
