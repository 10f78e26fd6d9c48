#!/usr/bin/env bash
# Children of a parallel node that share the work tree (isolation:
# shared): a child's commit leaves its siblings' node directories to them
# (each commits its own; the parallel node's own commit takes the rest),
# so that a child's commit costs the same however many siblings it has
# (scripts/bench.sh parallel-many). What the child's agent changed, a
# tracked file deleted at the top included, is in its commit all the same;
# nested, a grandchild leaves its uncles' directories too; and the run
# ends with every node's files committed and the tree clean.
. "$(dirname "$0")/lib.sh"

R=$TEST_TMP/repo
loop_repo "$R" item
# first: deletes README, adds new/made.txt, and ends at once; the others
# wait until its commit exists (their node directories are on disk by then)
cat >"$R/.ai-loop/agents/first.md" <<'MD'
---
name: first
command: sh -c 'rm README; mkdir -p new; echo made >new/made.txt'
---
MD
cat >"$R/.ai-loop/agents/later.md" <<'MD'
---
name: later
command: sh -c 'for i in $(seq 300); do git log --format=%s | grep -q "par > first\]" && break; sleep 0.1; done; echo "$AILOOP_NODE_ID" >>later.txt'
---
MD
cat >"$R/.ai-loop/flow.yaml" <<'YAML'
version: 1
flow:
  id: par
  type: parallel
  isolation: shared
  children:
    - {id: first, agent: .ai-loop/agents/first.md}
    - {id: second, agent: .ai-loop/agents/later.md}
    - id: inner
      type: parallel
      isolation: shared
      children:
        - {id: deep, agent: .ai-loop/agents/later.md}
        - {id: deeper, agent: .ai-loop/agents/later.md}
YAML
commit_all "$R"
cd "$R"
run "$AILOOP" run "siblings"
expect_rc 0 "the run completes"
nodes=$(ls -d .ai-loop/runs/run_*)/nodes/par
first=$(git log --format=%H --grep='^\[node-path\] par/first$' -1)
[ -n "$first" ] && pass || fail "the first child committed"
files=$(git show --name-only --format= "$first")
expect_in "$files" "$nodes/first/result-output.md" "the child's commit has its own node's files"
expect_not_in "$files" "$nodes/second/" "the child's commit leaves a sibling's node to it"
expect_not_in "$files" "$nodes/inner/" "nor a sibling's nodes below it"
expect_in "$files" "new/made.txt" "the agent's new file is in its commit"
expect_in "$(git show --name-status --format= "$first")" "D	README" \
	"the tracked file the agent deleted is deleted in its commit"
second=$(git log --format=%H --grep='^\[node-path\] par/second$' -1)
expect_in "$(git show --name-only --format= "$second")" "$nodes/second/result-output.md" \
	"the sibling's own commit has its node's files"
deep=$(git log --format=%H --grep='^\[node-path\] par/inner/deep$' -1)
files=$(git show --name-only --format= "$deep")
expect_in "$files" "$nodes/inner/deep/result-output.md" "a grandchild's commit has its own files"
expect_not_in "$files" "$nodes/second/" "a grandchild leaves its parent's siblings' nodes"
expect_not_in "$files" "$nodes/inner/deeper/" "and its own siblings'"
expect_eq "$(git status --porcelain)" "" "the tree ends clean: every node's files committed"
for node in first second inner inner/deep inner/deeper; do
	git cat-file -e "HEAD:$nodes/$node/result-output.md" 2>/dev/null && pass ||
		fail "HEAD has $node's result"
done
expect_eq "$(git show HEAD:new/made.txt)" "made" "HEAD has the agent's file"
expect_eq "$(wc -l <later.txt | tr -d ' ')" 3 "each later agent ran once"

finish
