#!/usr/bin/env bash
# A resume carries the user's changes into an unfinished child's worktree,
# and writes nothing through a symbolic link the child put there: a child
# that replaced the directory sub/ by a link to a directory outside the
# repository, and a user who adds or removes a file of sub/ while the run
# is stopped, meet as a conflict (the error a change to a file the child
# changed too gets), the run paused and nothing written outside.
. "$(dirname "$0")/lib.sh"

export CALLS=$TEST_TMP/calls OUT=$TEST_TMP/outside
mkdir -p "$CALLS" "$OUT"

R=$TEST_TMP/carry-link
loop_repo "$R" item
cd "$R"
mkdir sub
echo keep >sub/keep.txt
echo keep >"$OUT/keep.txt" # what a removal through the link would remove
# child fix's actuator: the first time, sub/ becomes a link to $OUT, and it fails
printf -- "---\nname: flaky\ncommand: '%s'\n---\n" \
	'if [ ! -e "$CALLS/flaky" ]; then touch "$CALLS/flaky"; rm -r sub; ln -s "$OUT" sub; exit 3; fi; exec sh .ai-loop/agents/fix.sh' \
	>.ai-loop/agents/flaky.md
cat >.ai-loop/flow.yaml <<'YAML'
version: 1
flow:
  id: par
  type: parallel
  isolation: worktree
  children:
    - id: fix
      type: loop
      controller: builtin:all-pass
      sensors: [.ai-loop/agents/sensor.md]
      actuator: {strategy: direct, agent: .ai-loop/agents/flaky.md}
YAML
commit_all .
run "$AILOOP" run "carry link"
expect_rc 1 "the child's agent fails after it made sub/ a link"
id=$(basename .ai-loop/runs/run_*)
wt=$PWD/.ai-loop/runs/$id/worktrees/fix
[ -L "$wt/sub" ] && pass || fail "the child's sub is a link in its worktree"

# --- a new file where the child has a link: refused, nothing written through it --------------
echo user >sub/user-new.txt
run "$AILOOP" resume "$id"
expect_rc 1 "resume: the user's new file in sub/ conflicts with the child's link"
expect_in "$err" "ailoop: error: your change to 'sub/user-new.txt' in the main work tree conflicts with child 'fix'" \
	"the error names the file and the child"
expect_in "$err" "$wt" "the error names the worktree"
expect_eq "$(ls "$OUT" | tr '\n' ' ')" "keep.txt " "nothing is written outside the repository"
expect_eq "$(cat sub/user-new.txt)" "user" "the user's file is kept"
[ -L "$wt/sub" ] && pass || fail "the child's link is kept"
expect_eq "$(run_status)" "paused" "the run is paused, resumable"

# --- a removal where the child has a link: refused, nothing removed through it ---------------
rm sub/user-new.txt sub/keep.txt
run "$AILOOP" resume
expect_rc 1 "resume: the user's removal in sub/ conflicts with the child's link"
expect_in "$err" "ailoop: error: your change to 'sub/keep.txt' in the main work tree conflicts with child 'fix'" \
	"the error names the removed file"
expect_eq "$(cat "$OUT/keep.txt")" "keep" "nothing is removed outside the repository"
expect_eq "$(run_status)" "paused" "the run is paused again"

# --- the user undoes theirs: the run completes, the child's link merged as a link -----------
git checkout -q HEAD -- sub/keep.txt
run "$AILOOP" resume
expect_rc 0 "once the user's changes are gone, resume completes the run"
expect_eq "$(git ls-tree HEAD sub | cut -c1-6)" "120000" "the child's link is merged as a link"
expect_eq "$(git show HEAD:todo.txt)" "" "the child did its work"
expect_eq "$(ls "$OUT" | tr '\n' ' ')" "keep.txt " "still nothing written outside the repository"
expect_eq "$(git status --porcelain)" "" "clean tree after the resume"

finish
