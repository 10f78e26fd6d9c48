#!/usr/bin/env bash
# The kill test of a parallel node with isolation: worktree: a sequence
# runs an action, a parallel node of two actions in worktrees (each
# writing a file of its own), and an action. The run is killed at every
# crash point of its reference run (the children's processes' and the
# merges' included); one `ailoop resume` must end it like the reference:
# the same commits (merge commits included), the same tree, a clean
# `git fsck --strict` and work tree, no worktree left, the same status.
# Then the same for a loop whose parallel node runs twice: the second
# run's children start from its start commit, their old branches made
# again. And a parallel root whose children both fail: its end commit,
# at the label of its start commit, is the resume's first. And one whose
# children's merges conflict, which a resolver agent resolves.
. "$(dirname "$0")/lib.sh"

T=$TEST_TMP
loop_repo "$T/template" x
scripted_agents "$T/template" action
worktree_children "$T/template"
cat >"$T/plan" <<'PLAN'
creates "$skill-$AILOOP_ITERATION.txt"
PLAN
export PLAN=$T/plan
unset TRAIL
commit_all "$T/template"

# the run branch's own line of commits in order, then every commit sorted
# (the children's, on their branches, come in either order), then how many
# worktrees are left
canonical() {
	git -C "$1" log --first-parent --reverse --format=%s | sed 's/ — .*//'
	triples "$1" | sort
	git -C "$1" worktree list | wc -l
}

reference_run "$T/template" "deliver it" canonical
expect_eq "$ref_rc $ref_status" "0 complete" "the reference run succeeds"
expect_eq "$(git log --first-parent --reverse --format=%s | sed -n 's/^ai-loop\[.*\]: iteration //p' | tr '\n' ,)" \
	"0 — did first,0 — merge a,0 — merge b,0 — did last,0 — all 3 children succeeded," \
	"the reference run's line: the merges of the children, in child order"
expect_eq "$(git log --format=%s ai-loop/deliver-it--a | sed -n 1p)" "ai-loop[main > par > a]: iteration 0 — did a" \
	"a child's commit is on its branch"
expect_eq "$(git worktree list | wc -l)" "1" "no worktree is left"
expect_eq "$(git ls-files | grep -v '^\.ai-loop/' | tr '\n' ' ')" \
	"README a-0.txt b-0.txt first-0.txt last-0.txt todo.txt " "the reference run's files"
grep -q merge-checkout "$T/points" && pass || fail "the merges' crash points are counted"

kill_each_point "$T/template" "deliver it" canonical lock_free

# --- a parallel node in a loop: each child lists what its worktree holds
# (but its own file, which a killed run of the same action may have left)
loop_repo "$T/rounds" x
scripted_agents "$T/rounds" action
cat >"$T/rounds/.ai-loop/flow.yaml" <<'YAML'
version: 1
defaults:
  action_agent: .ai-loop/agents/action.md
flow:
  id: main
  type: loop
  max_iterations: 2
  children:
    - id: par
      type: parallel
      isolation: worktree
      children:
        - {id: a, skill: a}
        - {id: b, skill: b}
YAML
cat >"$T/plan" <<'PLAN'
seen=$(ls *.txt | grep -vx "$skill-$AILOOP_ITERATION.txt" | tr '\n' ' ')
echo "$seen" >"$skill-$AILOOP_ITERATION.txt"
PLAN
commit_all "$T/rounds"
reference_run "$T/rounds" "deliver it" canonical
expect_eq "$ref_rc $ref_status" "0 complete" "the reference run of the loop succeeds"
expect_eq "$(cat a-2.txt)" "a-1.txt b-1.txt todo.txt " "the second round's child sees what the first round merged"
kill_each_point "$T/rounds" "deliver it" canonical lock_free

# --- the run is a parallel node in worktrees whose children both fail: no
# child commits and nothing is merged, so its end commit is the first one
# the resume makes (at the label of its start commit, which is not its end)
loop_repo "$T/failing" x
scripted_agents "$T/failing" action
cat >"$T/failing/.ai-loop/flow.yaml" <<'YAML'
version: 1
defaults:
  action_agent: .ai-loop/agents/action.md
flow:
  id: par
  type: parallel
  isolation: worktree
  success_threshold: 1
  failure_threshold: 2
  children:
    - {id: a, skill: a}
    - {id: b, skill: b}
YAML
echo fails >"$T/plan"
commit_all "$T/failing"
reference_run "$T/failing" "deliver it" canonical
expect_eq "$ref_rc $ref_status" "1 failed" "the reference run of failing children fails"
expect_eq "$(git log --format=%s -1)" "ai-loop[par]: iteration 0 — 2 of 2 children failed" \
	"the reference run's end is committed"
kill_each_point "$T/failing" "deliver it" canonical lock_free

# --- two children change the same line: their second merge conflicts, and a
# resolver agent resolves it in a worktree of its own (on_conflict: agent)
new_repo "$T/conflict"
mkdir -p "$T/conflict/.ai-loop/agents"
printf 'one\ntwo\nthree\nfour\n' >"$T/conflict/shared.txt"
# (each agent writes the whole file: a kill leaves no temporary file, as sed -i's)
for w in A B AB; do
	printf -- '---\nname: write-%s\ncommand: printf "one\\n%s\\nthree\\nfour\\n" >shared.txt\n---\n' \
		"$w" "$w" >"$T/conflict/.ai-loop/agents/write-$w.md"
done
cat >"$T/conflict/.ai-loop/flow.yaml" <<'YAML'
version: 1
flow:
  id: par
  type: parallel
  isolation: worktree
  on_conflict: {agent: .ai-loop/agents/write-AB.md}
  children:
    - {id: a, agent: .ai-loop/agents/write-A.md}
    - {id: b, agent: .ai-loop/agents/write-B.md}
YAML
commit_all "$T/conflict"
reference_run "$T/conflict" "deliver it" canonical
expect_eq "$ref_rc $ref_status" "0 complete" "the reference run with a conflict succeeds"
expect_eq "$(tr '\n' , <shared.txt)" "one,AB,three,four," "the reference run's merge is the resolver's"
expect_eq "$(git log --merges --format=%s | grep -c 'resolved by .ai-loop/agents/write-AB.md')" 1 \
	"the reference run's second merge is resolved"
kill_each_point "$T/conflict" "deliver it" canonical lock_free

finish
