#!/usr/bin/env bash
# Parallel children share the work tree: one child's agent keeps writing
# a temporary file and renaming it away, and rewriting a file in place,
# while a sibling loop commits iteration after iteration. A file that
# vanishes or shrinks between the listing and the hashing of a commit is
# no error of the run: every commit is made, and the run completes.
. "$(dirname "$0")/lib.sh"

R=$TEST_TMP/repo
loop_repo "$R" $(seq 1 40)
head -c 200000 /dev/zero | tr '\0' x >"$R/big.txt"
cat >"$R/.ai-loop/agents/churn.md" <<'AGENT'
---
name: churn
command: [sh, -c, 'end=$(($(date +%s) + 5)); i=0; while [ "$(date +%s)" -lt "$end" ]; do i=$((i + 1)); mkdir -p scratch/d; for j in 1 2 3 4 5 6 7 8; do echo "$j" >scratch/d/f$j; done; rm -rf scratch; echo "$i" >churn.tmp; mv churn.tmp churn.txt; head -c $((200000 - i % 7 * 20000)) /dev/zero | tr "\\0" y >big.txt; done; echo done >"$AILOOP_OUTPUT"']
---
Churns the work tree.
AGENT
cat >"$R/.ai-loop/flow.yaml" <<'YAML'
version: 1
flow:
  id: par
  type: parallel
  children:
    - {id: churn, skill: churn, agent: .ai-loop/agents/churn.md}
    - id: fix
      type: loop
      max_iterations: 60
      controller: builtin:all-pass
      sensors: [.ai-loop/agents/sensor.md]
      actuator: {strategy: direct, agent: .ai-loop/agents/fixer.md}
YAML
commit_all "$R"
cd "$R"
run "$AILOOP" run --quiet "churn and fix"
expect_rc 0 "the run completes while a sibling's agent churns the work tree"
expect_eq "$err" "" "and says nothing of it"
expect_eq "$(run_status)" complete "its status"
expect_eq "$(git log --format=%s | grep -c '^ai-loop\[par > fix\]')" 42 \
	"every iteration of the loop is a commit"
expect_eq "$(git show HEAD:todo.txt)" "" "the loop's work is all committed"
expect_eq "$(git status --porcelain)" "" "the work tree is clean"
git fsck --strict >/dev/null 2>&1 && pass || fail "git fsck"
finish
