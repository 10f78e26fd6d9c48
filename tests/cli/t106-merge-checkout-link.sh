#!/usr/bin/env bash
# The merge of a worktree child writes nothing through a symbolic link, as
# git's checkout never does: a run stopped before its merges, and a user
# who then puts a link (or a file) of their own where the child's
# gen/file.txt goes, meet as a conflict naming both paths, the run paused
# and nothing written outside the repository; once the user moves it away,
# resume merges. A link the merge itself replaces by a directory is no
# user's: it goes, and the directory is made in its place.
. "$(dirname "$0")/lib.sh"

export OUT=$TEST_TMP/outside
mkdir -p "$OUT"

# stopped_repo NAME: a repository whose parallel node `par` has children x
# (writes gen/file.txt) and y (writes y.txt) in worktrees, killed once both
# are done, just before the first merge's checkout
stopped_repo() {
	local n
	R=$TEST_TMP/$1
	loop_repo "$R" item
	cd "$R"
	printf -- "---\nname: wx\ncommand: '%s'\n---\n" 'rm -f gen; mkdir -p gen && echo child >gen/file.txt' \
		>.ai-loop/agents/wx.md
	printf -- "---\nname: wy\ncommand: '%s'\n---\n" 'echo y >y.txt' >.ai-loop/agents/wy.md
	cat >.ai-loop/flow.yaml <<'YAML'
version: 1
flow:
  id: par
  type: parallel
  isolation: worktree
  children:
    - {id: x, skill: x, agent: .ai-loop/agents/wx.md}
    - {id: y, skill: y, agent: .ai-loop/agents/wy.md}
YAML
	commit_all .
	rm -rf "$TEST_TMP/points-repo" "$TEST_TMP/points"
	cp -a . "$TEST_TMP/points-repo"
	(cd "$TEST_TMP/points-repo" &&
		AILOOP_CRASH_LOG="$TEST_TMP/points" "$AILOOP" run --quiet "stopped" >/dev/null 2>&1)
	n=$(grep -n -m1 merge-checkout "$TEST_TMP/points" | cut -d: -f1)
	rc=$({ AILOOP_CRASH_AT=$((n - 1)) "$AILOOP" run --quiet "stopped" >/dev/null 2>&1; echo $?; } 2>/dev/null)
	expect_eq "$rc" 137 "$1: killed before the first merge's checkout"
	expect_eq "$(git log --merges --format=%s)" "" "$1: nothing merged yet"
}

# --- the user's link where the child's directory goes: refused, nothing written -------------
stopped_repo link
ln -s "$OUT" gen
run "$AILOOP" resume
expect_rc 1 "resume: the merge would write through the user's link"
expect_in "$err" "ailoop: error: your symbolic link 'gen' in the main work tree is in the way of 'gen/file.txt', which the merge of branch 'ai-loop/stopped--x' writes" \
	"the error names the link, the file and the branch"
expect_eq "$(ls -A "$OUT")" "" "nothing is written outside the repository"
[ -L gen ] && pass || fail "the user's link is kept"
expect_eq "$(git log --merges --format=%s)" "" "nothing is merged"
expect_eq "$(run_status)" "paused" "the run is paused, resumable"
rm gen # the user moves it away
run "$AILOOP" resume
expect_rc 0 "once the link is gone, resume merges both children"
expect_eq "$(cat gen/file.txt) $(cat y.txt)" "child y" "both children's files are in the main work tree"
[ -d gen ] && [ ! -L gen ] && pass || fail "gen is a directory"
expect_eq "$(git show HEAD:gen/file.txt)" "child" "and in HEAD, as the tree holds it"
expect_eq "$(merged_children . | tr '\n' ',')" "par x,par y," "a merge commit each"
expect_eq "$(ls -A "$OUT")" "" "still nothing outside the repository"
expect_eq "$(git status --porcelain)" "" "clean tree after the resume"

# --- the user's file there: refused as well, and kept -------------------------------------
stopped_repo file
echo mine >gen
run "$AILOOP" resume
expect_rc 1 "resume: the merge would replace the user's file"
expect_in "$err" "ailoop: error: your file 'gen' in the main work tree is in the way of 'gen/file.txt'" \
	"the error names the file in the way"
expect_eq "$(cat gen)" "mine" "the user's file is kept"
expect_eq "$(run_status)" "paused" "the run is paused, resumable"
mv gen "$TEST_TMP/mine"
run "$AILOOP" resume
expect_rc 0 "once the file is moved, resume merges both children"
expect_eq "$(git show HEAD:gen/file.txt)" "child" "the child's file is merged"

# --- a tracked link that the merge replaces by a directory: no user's, replaced -------------
R=$TEST_TMP/tracked-link
loop_repo "$R" item
cd "$R"
ln -s "$OUT" gen # committed: the link is the branch's, and child x replaces it
printf -- "---\nname: wx\ncommand: '%s'\n---\n" 'rm -f gen; mkdir -p gen && echo child >gen/file.txt' \
	>.ai-loop/agents/wx.md
printf -- "---\nname: wy\ncommand: '%s'\n---\n" 'echo y >y.txt' >.ai-loop/agents/wy.md
cat >.ai-loop/flow.yaml <<'YAML'
version: 1
flow:
  id: par
  type: parallel
  isolation: worktree
  children:
    - {id: x, skill: x, agent: .ai-loop/agents/wx.md}
    - {id: y, skill: y, agent: .ai-loop/agents/wy.md}
YAML
commit_all .
run "$AILOOP" run "tracked link"
expect_rc 0 "a tracked link the child replaced by a directory: the run completes"
[ -d gen ] && [ ! -L gen ] && pass || fail "the link is replaced by the child's directory"
expect_eq "$(git show HEAD:gen/file.txt)" "child" "the child's file is merged"
expect_eq "$(ls -A "$OUT")" "" "nothing is written outside the repository"
expect_eq "$(git status --porcelain)" "" "clean tree at the end"

finish
