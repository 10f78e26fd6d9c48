#!/usr/bin/env bash
# on_conflict: {agent: PATH}: a child's merge that conflicts is given to a
# resolver agent, in a worktree of its own holding the conflicted merge
# with git's markers; the merge is made with its files only if it
# succeeded and left no marker, else the node fails with `conflict` and
# the main work tree is untouched.
. "$(dirname "$0")/lib.sh"

export RV

# res_repo NAME RESOLVER: a repository with an 8-line shared.txt whose
# flow is a parallel node `par` (isolation: worktree, on_conflict: {agent:
# .ai-loop/agents/RESOLVER.md}) of three `edit` actions: a and b change
# line 2, c line 4; then runs it
res_repo() {
	local name=$1 resolver=$2
	R=$TEST_TMP/$name RV=$TEST_TMP/$name.rv
	mkdir -p "$RV"
	new_repo "$R"
	mkdir -p "$R/.ai-loop/agents"
	printf 'one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\n' >"$R/shared.txt"
	cp "$FIXTURES"/worktree/edit.md "$FIXTURES"/worktree/edit.sh "$R/.ai-loop/agents/"
	# the resolvers: each notes where it ran, its task and the markers it saw
	for r in ok markers fail killed interrupted slow; do
		printf -- '---\nname: resolve-%s\ncommand: sh .ai-loop/agents/resolve.sh %s\n%b---\nResolve the conflict.\n' \
			"$r" "$r" "$([ $r = slow ] && echo 'timeout: 1\n')" >"$R/.ai-loop/agents/resolve-$r.md"
	done
	cat >"$R/.ai-loop/agents/resolve.sh" <<'SH'
pwd >"$RV/cwd"
cp "$AILOOP_TASK_FILE" "$RV/task"
cp shared.txt "$RV/seen"
case $1 in
ok) printf 'one\nAB\nthree\nfour\nfive\nsix\nseven\neight\n' >shared.txt ;;
markers) echo "left it" ;;
fail) echo "cannot resolve"; exit 3 ;;
slow) sleep 30 ;;
killed | interrupted) # the first time: half a resolution, then ailoop is killed (or interrupted)
	if [ ! -e "$RV/$1" ]; then
		touch "$RV/$1" half.txt
		echo half >shared.txt
		p=$PPID
		# (the nearest ailoop above: the binary may be a renamed copy)
		while [ "$p" -gt 1 ] && ! grep -q '^ailoop' /proc/$p/comm; do
			p=$(awk '{print $4}' /proc/$p/stat)
		done
		[ "$p" -gt 1 ] && kill -"$([ $1 = killed ] && echo KILL || echo INT)" "$p"
		sleep 5
	fi
	printf 'one\nAB\nthree\nfour\nfive\nsix\nseven\neight\n' >shared.txt
	;;
esac
echo "resolved: $1"
SH
	cat >"$R/.ai-loop/flow.yaml" <<YAML
version: 1
flow:
  id: par
  type: parallel
  isolation: worktree
  on_conflict: {agent: .ai-loop/agents/$resolver.md}
  children:
    - {id: a, skill: line-2-A, agent: .ai-loop/agents/edit.md}
    - {id: b, skill: line-2-B, agent: .ai-loop/agents/edit.md}
    - {id: c, skill: line-4-C, agent: .ai-loop/agents/edit.md}
YAML
	commit_all "$R"
	cd "$R"
	run "$AILOOP" run "resolve"
}

worktrees() { git worktree list | wc -l | tr -d ' '; }
merges() { git log --merges --format=%s | sed 's/.* — //' | tac | tr '\n' ','; }
clean() { git status --porcelain -- . ':!.ai-loop/runs'; }

# --- the resolver writes the resolved file: the merge is made --------------------------------
res_repo ok resolve-ok
expect_rc 0 "a resolver that resolves the conflict: the run completes"
expect_eq "$(merges)" "merge a,merge b, resolved by .ai-loop/agents/resolve-ok.md,merge c," \
	"the conflicting child is merged, the summary names the resolver, the next merged after it"
expect_eq "$(git log --merges --format=%P --grep='resolved by' | awk '{print NF}')" "2" \
	"the resolved merge commit has two parents"
expect_in "$(git log --merges -1 --format=%B --grep='resolved by')" "[node-path] par" \
	"the resolved merge commit carries SPEC §6 trailers"
expect_eq "$(tr '\n' ' ' <shared.txt)" "one AB three C five six seven eight " \
	"the work tree holds the resolved file and the later child's edit"
expect_eq "$(git show HEAD:shared.txt | tr '\n' ' ')" "one AB three C five six seven eight " \
	"and so does the run's last commit"
expect_in "$(cat "$RV/seen")" "<<<<<<< " "the resolver saw git's conflict markers"
expect_in "$(cat "$RV/seen")" "<<<<<<< ai-loop/resolve" "the markers name the run's branch"
expect_in "$(cat "$RV/seen")" ">>>>>>> ai-loop/resolve--b" "and the child's branch"
expect_eq "$(cat "$RV/cwd")" "$(cd .ai-loop/runs/run_* && pwd)/worktrees/b.resolve" \
	"the resolver ran in a worktree of its own under the run's worktrees"
expect_in "$(cat "$RV/task")" "Resolve the merge conflict in shared.txt" "the resolver's task names the file"
expect_in "$(cat "$RV/task")" "'ai-loop/resolve' (ours" "the task names the run's branch"
expect_in "$(cat "$RV/task")" "'ai-loop/resolve--b' (theirs" "the task names the child's branch"
expect_eq "$(clean)" "" "git status is clean"
expect_eq "$(worktrees)" "1" "every worktree, the resolver's too, is gone when the run completes"
expect_eq "$(git worktree prune -n -v)" "" "git worktree prune has nothing to do"
expect_not_in "$(git branch --list)" "resolve--b.resolve" "no branch is left for the resolver's worktree"
expect_in "$(cat .ai-loop/runs/run_*/events.jsonl)" '"event":"parallel_resolve"' "a parallel_resolve event"
[ -s .ai-loop/runs/run_*/nodes/par/resolve.b/logs/actuator.log ] && pass ||
	fail "the resolver's log is in the node's resolve.b directory"

# --- ailoop killed while the resolver works: one resume resolves it again, once ---------------
res_repo killed resolve-killed
expect_rc 137 "ailoop is killed during the resolution"
run "$AILOOP" resume
expect_rc 0 "one resume completes the run"
expect_eq "$(merges)" "merge a,merge b, resolved by .ai-loop/agents/resolve-killed.md,merge c," 	"each child merged once, in child order"
expect_eq "$(tr '\n' ' ' <shared.txt)" "one AB three C five six seven eight " "the resolved merge"
expect_in "$(cat "$RV/seen")" "<<<<<<< " "the resolver's worktree was made again, with the markers"
expect_eq "$(ls half.txt 2>&1 >/dev/null | wc -l | tr -d ' ')" "1" \
	"nothing of the killed resolution is in the work tree"
expect_eq "$(clean)" "" "git status is clean"
expect_eq "$(worktrees)" "1" "the worktrees are gone"

# --- Ctrl-C while the resolver works: the run pauses, resume resolves it again, once -----------
res_repo interrupted resolve-interrupted
expect_rc 3 "ailoop interrupted during the resolution exits 3"
expect_eq "$(run_status)" "paused" "the run is paused"
expect_eq "$(merges)" "merge a," "the child in resolution is not merged"
expect_eq "$(clean)" "" "nothing of the interrupted resolution is in the main work tree"
run "$AILOOP" resume
expect_rc 0 "resume completes the run"
expect_eq "$(merges)" "merge a,merge b, resolved by .ai-loop/agents/resolve-interrupted.md,merge c," \
	"each child merged once, in child order"
expect_eq "$(tr '\n' ' ' <shared.txt)" "one AB three C five six seven eight " "the resolved merge"
expect_eq "$(clean)" "" "git status is clean"
expect_eq "$(worktrees)" "1" "the worktrees are gone"

# --- the resolver runs out of its time: the node fails with conflict ----------------------------
res_repo slow resolve-slow
expect_rc 1 "a resolver that times out: the run fails"
expect_in "$out$err" "conflict: shared.txt differ between 'ai-loop/resolve' and 'ai-loop/resolve--b'; resolver failed" \
	"the conflict says the resolver failed"
expect_in "$out$err" "did not finish in time and was stopped" "the error says it timed out"
expect_eq "$(merges)" "merge a," "the conflicting child is not merged"
expect_eq "$(clean)" "" "the main work tree is clean"
[ -z "$(pgrep -f 'resolve.sh slow')" ] && pass || fail "no resolver process is left"

# --- the resolver leaves markers: the node fails with conflict ---------------------------------
res_repo markers resolve-markers
expect_rc 1 "a resolver that leaves conflict markers: the run fails"
expect_in "$out$err" "conflict: shared.txt differ between 'ai-loop/resolve' and 'ai-loop/resolve--b'; the resolver left conflict markers in shared.txt" \
	"the conflict names the file, both branches and the markers left"
expect_eq "$(merges)" "merge a," "the children before the conflict are merged, none after"
expect_eq "$(tr '\n' ' ' <shared.txt)" "one A three four five six seven eight " \
	"the main work tree is untouched: nothing half-merged"
expect_eq "$(clean)" "" "and clean"
expect_eq "$(sed -n 's/^status: //p' .ai-loop/runs/run_*/nodes/par/orchestrator-output.md)" "failed" \
	"the parallel node failed"
expect_in "$(cat .ai-loop/runs/run_*/worktrees/b.resolve/shared.txt)" "<<<<<<< " \
	"the resolver's worktree is kept for inspection"

# --- the resolver fails: the node fails with conflict -----------------------------------------
res_repo fail resolve-fail
expect_rc 1 "a resolver that exits non-zero: the run fails"
expect_in "$out$err" "conflict: shared.txt differ between 'ai-loop/resolve' and 'ai-loop/resolve--b'; resolver failed" \
	"the conflict says the resolver failed"
expect_eq "$(merges)" "merge a," "the conflicting child is not merged"
expect_eq "$(tr '\n' ' ' <shared.txt)" "one A three four five six seven eight " "the main work tree is untouched"
expect_eq "$(clean)" "" "and clean"

# --- bad values: file:line:col errors ----------------------------------------------------------
R=$TEST_TMP/bad
loop_repo "$R" item
cd "$R"
flow() {
	printf 'version: 1\nflow:\n  id: par\n  type: parallel\n  isolation: worktree\n  on_conflict: %s\n  children:\n    - {id: a, skill: x, agent: .ai-loop/agents/step.md}\n' "$1" >.ai-loop/flow.yaml
}
flow '{agent: .ai-loop/agents/nowhere.md}'
run "$AILOOP" validate
expect_rc 65 "a resolver agent file that is missing is a flow error"
expect_in "$err" ".ai-loop/flow.yaml:6:24: error:" "the error is at the path"
expect_in "$err" "nowhere.md" "the error names the file"
flow '[agent]'
run "$AILOOP" validate
expect_rc 65 "an on_conflict that is a list is a flow error"
expect_in "$err" ".ai-loop/flow.yaml:6:16: error: on_conflict must be fail, skip or {agent: PATH}" \
	"the error says what it may be"
flow '{agnet: .ai-loop/agents/step.md}'
run "$AILOOP" validate
expect_rc 65 "an on_conflict mapping without agent is a flow error"
expect_in "$err" ".ai-loop/flow.yaml:6:17: error: unknown key 'agnet' in on_conflict" "the unknown key is named"
expect_in "$err" ".ai-loop/flow.yaml:6:16: error: on_conflict needs 'agent: PATH'" "the missing agent is said"
flow '{agent: [x]}'
run "$AILOOP" validate
expect_rc 65 "an agent that is not a path is a flow error"
expect_in "$err" ".ai-loop/flow.yaml:6:24: error:" "the error is at the value"
flow '{agent: .ai-loop/agents/step.md}'
run "$AILOOP" validate
expect_rc 0 "on_conflict {agent: PATH} naming an agent file is valid"

finish
