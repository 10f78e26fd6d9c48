#!/usr/bin/env bash
# isolation: worktree: each child of a parallel node works in a git
# worktree of its own (.ai-loop/runs/<id>/worktrees/<child>, on branch
# <run branch>--<child>; by its path, '/' as '+', if a child of another
# parallel node with worktrees has its id), never sees its siblings'
# edits, and the children that succeeded are merged back in child order,
# a merge commit each; the worktrees go when the run completes and stay
# when it fails. A node that runs again starts its children afresh.
. "$(dirname "$0")/lib.sh"

export RV

# wt_repo NAME ATTRS ID:SKILL...: a repository with a 8-line shared.txt
# whose flow is a parallel node `par` with isolation: worktree (ATTRS:
# extra keys) and one `edit` action per ID:SKILL; then runs it
wt_repo() {
	local name=$1 attrs=$2 skill
	shift 2
	R=$TEST_TMP/$name RV=$TEST_TMP/$name.rv
	mkdir -p "$RV"
	new_repo "$R"
	mkdir -p "$R/.ai-loop/agents"
	printf 'one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\n' >"$R/shared.txt"
	cp "$FIXTURES"/worktree/edit.md "$FIXTURES"/worktree/edit.sh "$R/.ai-loop/agents/"
	{
		printf 'version: 1\nflow:\n  id: par\n  type: parallel\n  isolation: %s\n' "${ISOLATION:-worktree}"
		[ -z "$attrs" ] || printf '  %s\n' "$attrs"
		printf '  children:\n'
		for skill in "$@"; do
			printf '    - {id: %s, skill: %s, agent: .ai-loop/agents/edit.md}\n' \
				"${skill%%:*}" "${skill#*:}"
		done
	} >"$R/.ai-loop/flow.yaml"
	commit_all "$R"
	cd "$R"
	run "$AILOOP" run "in worktrees"
}

worktrees() { git worktree list | wc -l | tr -d ' '; }

# script_repo NAME AGENT: a repository $TEST_TMP/NAME (in $R) whose agent
# .ai-loop/agents/AGENT.md runs the shell script read from stdin; the
# test writes the flow
script_repo() {
	R=$TEST_TMP/$1
	new_repo "$R"
	mkdir -p "$R/.ai-loop/agents"
	cat >"$R/.ai-loop/agents/$2.sh"
	printf -- '---\nname: %s\ncommand: sh .ai-loop/agents/%s.sh\n---\n' "$2" "$2" >"$R/.ai-loop/agents/$2.md"
}
merges() { git log --merges --format=%s | sed 's/.* — //' | tac | tr '\n' ','; }

# --- four children, the same file in four places: merged cleanly -------------------------
wt_repo four "" a:line-1-ONE b:line-3-THREE c:line-5-FIVE d:line-7-SEVEN
expect_rc 0 "four children editing one file in different places: the run completes"
expect_eq "$(tr '\n' ' ' <shared.txt)" "ONE two THREE four FIVE six SEVEN eight " "every child's edit is in the merged file"
expect_eq "$(git show HEAD:shared.txt | tr '\n' ' ')" "ONE two THREE four FIVE six SEVEN eight " "and in the run's last commit"
expect_eq "$(merges)" "merge a,merge b,merge c,merge d," "one merge commit per child, in child order"
expect_eq "$(git log --merges --format=%P | awk '{print NF}' | sort -u)" "2" "each merge commit has two parents"
expect_in "$(git log --merges -1 --format=%B)" "[node-path] par" "the merge commit carries SPEC §6 trailers"
# (run-state.md: a run whose first commit is its last records start-commit after it)
expect_eq "$(git status --porcelain -- . ':!.ai-loop/runs')" "" "the work tree ends clean"
expect_eq "$(worktrees)" "1" "the worktrees are removed when the run completes"
expect_eq "$(git worktree prune -n -v)" "" "git worktree prune has nothing to do"
expect_in "$(git branch --list 'ai-loop/*')" "ai-loop/in-worktrees--a" "each child's branch is named after the run's branch"

# --- two children change the same line: on_conflict fail (the default) ---------------------
wt_repo conflict "" a:line-2-A b:line-2-B c:line-4-C
expect_rc 1 "a conflict fails the run"
expect_in "$out$err" "conflict: shared.txt differ between 'ai-loop/in-worktrees' and 'ai-loop/in-worktrees--b'" \
	"the conflict names the file and both branches"
expect_eq "$(merges)" "merge a," "the children before the conflict are merged, none after"
expect_eq "$(tr '\n' ' ' <shared.txt)" "one A three four five six seven eight " \
	"the work tree holds the merges made, nothing half-merged"
expect_eq "$(git status --porcelain -- . ':!.ai-loop/runs')" "" "no conflict markers or other changes are left"
expect_eq "$(sed -n 's/^status: //p' .ai-loop/runs/run_*/nodes/par/orchestrator-output.md)" "failed" \
	"the parallel node failed"
expect_eq "$(worktrees)" "3" "the unmerged children's worktrees stay when the run fails"
[ -d .ai-loop/runs/run_*/worktrees/b ] && pass || fail "the conflicting child's worktree is kept"
[ ! -d .ai-loop/runs/run_*/worktrees/a ] && pass || fail "a merged child's worktree is removed"
expect_in "$(git branch --list 'ai-loop/*')" "ai-loop/in-worktrees--b" "the conflicting child's branch stays"
expect_in "$(cat .ai-loop/runs/run_*/events.jsonl)" '"event":"parallel_conflict"' "a parallel_conflict event"

# --- on_conflict: skip: that child is left unmerged, the others go on ------------------------
wt_repo skip "on_conflict: skip" a:line-2-A b:line-2-B c:line-4-C
expect_rc 0 "on_conflict skip: the run completes"
expect_eq "$(merges)" "merge a,merge c," "the conflicting child is skipped, the next merged"
expect_eq "$(tr '\n' ' ' <shared.txt)" "one A three C five six seven eight " "the merged edits only"
expect_in "$err" "child b not merged: conflict in shared.txt" "the skip is said"
expect_in "$(git branch --list 'ai-loop/*')" "ai-loop/in-worktrees--b" "the skipped child's branch stays"
expect_eq "$(worktrees)" "1" "the worktrees are removed when the run completes"

# --- a child never sees its siblings' edits; a failed child is not merged ---------------------
# (two at a time, z first: y starts only once z's failure is recorded, and x
# waits for y, so z has failed and committed before the node succeeds; with
# all three at once, x and y could finish first and z be stopped instead)
wt_repo see "max_concurrency: 2
  success_threshold: 2
  failure_threshold: 2" z:fail-z x:see-x-y y:see-y-x
expect_rc 0 "two of three children succeed: the node succeeds"
expect_eq "$(cat .ai-loop/runs/run_*/nodes/par/x/result-output.md | sed -n 's/^status: //p')" "complete" \
	"child x did not see y's file, written at the same time"
expect_eq "$(cat .ai-loop/runs/run_*/nodes/par/y/result-output.md | sed -n 's/^status: //p')" "complete" \
	"child y did not see x's file"
expect_eq "$(merges)" "merge x,merge y," "the succeeded children are merged, the failed one not"
expect_eq "$(ls x.txt y.txt 2>&1 | tr '\n' ' ')" "x.txt y.txt " "both children's files are in the main work tree"
expect_in "$(git branch --list 'ai-loop/*')" "ai-loop/in-worktrees--z" "the failed child's branch stays"
expect_in "$(git log --format=%s ai-loop/in-worktrees--z -1)" "ai-loop[par > z]: iteration 0 — action" \
	"its branch holds its commit, for inspection"

# --- isolation: shared is what the parallel node did before -------------------------------
# (one child: two `sed -i` of one file at once in one work tree race)
ISOLATION=shared wt_repo shared "" a:line-2-A
expect_rc 0 "isolation shared: the run completes"
expect_eq "$(git log --merges --format=%s)" "" "shared children make no merge commits"
expect_eq "$(tr '\n' ' ' <shared.txt)" "one A three four five six seven eight " "the edit made in the one work tree"
expect_eq "$(worktrees)" "1" "no worktree was made"

# --- bad values: file:line:col errors ----------------------------------------------------
R=$TEST_TMP/bad
loop_repo "$R" item
cd "$R"
printf 'version: 1\nflow:\n  id: par\n  type: parallel\n  isolation: sandbox\n  children:\n    - {id: a, skill: x, agent: .ai-loop/agents/step.md}\n' >.ai-loop/flow.yaml
run "$AILOOP" validate
expect_rc 65 "a bad isolation value is a flow error"
expect_in "$err" ".ai-loop/flow.yaml:5:14: error:" "the error is at the value"
expect_in "$err" "sandbox" "the error names the value"
printf 'version: 1\nflow:\n  id: par\n  type: parallel\n  isolation: worktree\n  on_conflict: merge\n  children:\n    - {id: a, skill: x, agent: .ai-loop/agents/step.md}\n' >.ai-loop/flow.yaml
run "$AILOOP" validate
expect_rc 65 "a bad on_conflict value is a flow error"
expect_in "$err" ".ai-loop/flow.yaml:6:16: error:" "the on_conflict error is at the value"
printf 'version: 1\nflow:\n  id: par\n  type: parallel\n  isolation: shared\n  on_conflict: skip\n  children:\n    - {id: a, skill: x, agent: .ai-loop/agents/step.md}\n' >.ai-loop/flow.yaml
run "$AILOOP" validate
expect_rc 65 "on_conflict without worktree isolation is a flow error"
expect_in "$err" ".ai-loop/flow.yaml:6:16: error: on_conflict needs 'isolation: worktree'" \
	"the error says what it needs"
printf 'version: 1\ndefaults:\n  parallel_isolation: private\nflow:\n  id: par\n  type: parallel\n  children:\n    - {id: a, skill: x, agent: .ai-loop/agents/step.md}\n' >.ai-loop/flow.yaml
run "$AILOOP" validate
expect_rc 65 "a bad defaults.parallel_isolation is a flow error"
expect_in "$err" ".ai-loop/flow.yaml:3:23: error:" "the defaults error is at the value"

# --- defaults.parallel_isolation: worktree applies to every parallel node --------------------
printf 'version: 1\ndefaults:\n  parallel_isolation: worktree\nflow:\n  id: par\n  type: parallel\n  children:\n    - {id: a, skill: write-a, agent: .ai-loop/agents/step.md}\n    - {id: b, skill: plain, agent: .ai-loop/agents/step.md}\n' >.ai-loop/flow.yaml
commit_all "$R"
run "$AILOOP" run "by default"
expect_rc 0 "defaults.parallel_isolation worktree: the run completes"
expect_eq "$(git log --merges --format=%s | wc -l | tr -d ' ')" "2" "its children were merged"
expect_eq "$(cat created-write-a.txt)" "new" "the child's file is in the main work tree"

# --- a parallel node that runs again (in a loop) --------------------------------------------
# Each run's children start from that run's start commit: what the
# siblings and c did in earlier rounds is in their worktrees. A child's
# branch merged before is made again; an unmerged one (its child failed)
# is set aside as <branch>.<short id>, its work kept. (One child at a
# time: b is done when a fails.)
script_repo again round <<'SH'
# appends to <skill>.txt how many lines it has and how many c.txt has;
# fails as a while there is no c.txt
skill=$(sed -n 's/^Skill: //p' "$AILOOP_TASK_FILE")
echo "$skill: $(cat "$skill.txt" 2>/dev/null | wc -l) mine, $(cat c.txt 2>/dev/null | wc -l) of c" >>"$skill.txt"
[ "$skill" != a ] || [ -e c.txt ]
SH
cat >"$R/.ai-loop/flow.yaml" <<'YAML'
version: 1
flow:
  id: top
  type: loop
  max_iterations: 3
  children:
    - id: par
      type: parallel
      isolation: worktree
      max_concurrency: 1
      children:
        - {id: b, skill: b, agent: .ai-loop/agents/round.md}
        - {id: a, skill: a, agent: .ai-loop/agents/round.md}
    - {id: c, skill: c, agent: .ai-loop/agents/round.md}
YAML
commit_all "$R"
cd "$R"
run "$AILOOP" run "rounds"
expect_rc 0 "a loop of a parallel node in worktrees: the run completes"
expect_eq "$(cat b.txt)" "b: 0 mine, 0 of c
b: 1 mine, 1 of c
b: 2 mine, 2 of c" "each round's child works on that round's start: its earlier work and c's are there"
expect_eq "$(cat a.txt)" "a: 0 mine, 1 of c
a: 1 mine, 2 of c" "a child that failed starts afresh in the next round, its failed work not merged"
aside=$(git branch --list 'ai-loop/rounds--a.*' --format='%(refname:short)')
expect_eq "$aside" "ai-loop/rounds--a.$(git rev-parse --short=7 "$aside" 2>/dev/null)" \
	"the failed child's branch is set aside as <branch>.<short id> when its node runs again"
expect_eq "$(git log -1 --format=%s "$aside" 2>/dev/null | sed 's/ — .*//')" \
	"ai-loop[top > par > a]: iteration 1" "the set-aside branch holds the failed round's commit"
expect_eq "$(git show "$aside:a.txt" 2>/dev/null)" "a: 0 mine, 0 of c" "and its work"
expect_eq "$(git branch --list 'ai-loop/rounds--*' --format='%(refname:short)' | grep -cv '\.')" "2" \
	"each child has one branch of its own name"
git merge-base --is-ancestor ai-loop/rounds--b HEAD && pass || fail "b's branch is its last round's, merged"
expect_eq "$(worktrees)" "1" "no worktree is left"

# --- two parallel nodes with worktrees whose children share ids, at once -----------------
# Each child keys its worktree and branch by its path then (with '+'),
# so none works in another's.
script_repo twins twin <<'SH'
# lists the work tree, waits for the other children, writes <skill>.txt
skill=$(sed -n 's/^Skill: //p' "$AILOOP_TASK_FILE")
ls >"$skill.seen"
sleep 0.5
echo "$skill" >"$skill.txt"
SH
cat >"$R/.ai-loop/flow.yaml" <<'YAML'
version: 1
flow:
  id: top
  type: parallel
  children:
    - id: p1
      type: parallel
      children:
        - {id: a, skill: p1a, agent: .ai-loop/agents/twin.md}
        - {id: b, skill: p1b, agent: .ai-loop/agents/twin.md}
    - id: p2
      type: parallel
      children:
        - {id: a, skill: p2a, agent: .ai-loop/agents/twin.md}
        - {id: c, skill: p2c, agent: .ai-loop/agents/twin.md}
YAML
commit_all "$R"
cd "$R"
run "$AILOOP" run "twins"
expect_rc 0 "two parallel nodes whose children share an id: the run completes"
expect_eq "$(cat p1a.seen p2a.seen | grep -c '^p.a\.')" "2" "each child a saw only its own files"
expect_eq "$(ls p*.txt | tr '\n' ' ')" "p1a.txt p1b.txt p2a.txt p2c.txt " "every child's work is merged"
expect_eq "$(git branch --list 'ai-loop/twins--*' --format='%(refname:short)' | tr '\n' ' ')" \
	"ai-loop/twins--b ai-loop/twins--c ai-loop/twins--p1 ai-loop/twins--p2 ai-loop/twins--top+p1+a ai-loop/twins--top+p2+a " \
	"a shared id's branches are keyed by path, the others by id"
expect_eq "$(worktrees)" "1" "no worktree is left"

# (a loop child's sensor never sees a sibling's edit: t92, with worktrees
# by default, on the node's key, and shared for contrast)

finish
