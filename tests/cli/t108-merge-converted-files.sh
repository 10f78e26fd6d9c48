#!/usr/bin/env bash
# A worktree child edits a file that git converts on checkout (an eol
# rule of .gitattributes, a clean/smudge filter as Git LFS's): the merge
# back compares the main work tree's file through git's filters, as `git
# status` does, so the file as checked out is HEAD's, not a change of the
# user's; the run completes with the child's edit merged, as it does with
# isolation: shared, and so does the resume of a run killed once the
# merge had written the file. A real change of the user's to such a file
# is still refused.
. "$(dirname "$0")/lib.sh"

# converted NAME ISOLATION: a repository whose a.txt git converts (the
# caller writes .gitattributes and the configuration through $SETUP), a
# parallel node with one child that appends a line to a.txt; then runs it
converted() {
	R=$TEST_TMP/$1
	new_repo "$R"
	cd "$R"
	mkdir -p .ai-loop/agents
	printf -- '---\nname: append\ncommand: sh .ai-loop/agents/append.sh\n---\n' >.ai-loop/agents/append.md
	printf 'printf "edited\\r\\n" >>a.txt\n' >.ai-loop/agents/append.sh
	printf 'version: 1\nflow:\n  id: par\n  type: parallel\n  isolation: %s\n  children:\n' "$2" >.ai-loop/flow.yaml
	printf '    - {id: a, skill: a, agent: .ai-loop/agents/append.md}\n' >>.ai-loop/flow.yaml
	eval "$SETUP"
	printf 'one\ntwo\n' >a.txt
	commit_all "$R"
	rm a.txt && git checkout -q a.txt # as git checks it out: converted
	expect_eq "$(git status --porcelain)" "" "$1: git status sees no change before the run"
}

for isolation in worktree shared; do
	SETUP='echo "*.txt text eol=crlf" >.gitattributes'
	converted "eol-$isolation" "$isolation"
	expect_eq "$(od -c a.txt | head -1 | grep -c '\\r')" 1 "eol, $isolation: the work tree holds CRLF"
	run "$AILOOP" run "append"
	expect_rc 0 "eol, $isolation: the run completes"
	expect_not_in "$err" "would be overwritten" "eol, $isolation: no change of the user's is seen"
	expect_eq "$(git show HEAD:a.txt | tr '\n' ' ')" "one two edited " "eol, $isolation: the child's edit is merged"
	expect_eq "$(tr -d '\r' <a.txt | tr '\n' ' ')" "one two edited " "eol, $isolation: and in the work tree"
	expect_eq "$(git status --porcelain)" "" "eol, $isolation: git status clean"

	# rev as the clean and the smudge command: the blob holds each line reversed
	SETUP='echo "*.txt filter=rev" >.gitattributes; git config filter.rev.clean rev; git config filter.rev.smudge rev'
	converted "filter-$isolation" "$isolation"
	expect_eq "$(git show HEAD:a.txt | tr '\n' ' ')" "eno owt " "filter, $isolation: the blob is the clean command's"
	expect_eq "$(tr '\n' ' ' <a.txt)" "one two " "filter, $isolation: the work tree the smudge command's"
	run "$AILOOP" run "append"
	expect_rc 0 "filter, $isolation: the run completes"
	expect_not_in "$err" "would be overwritten" "filter, $isolation: no change of the user's is seen"
	expect_eq "$(git show HEAD:a.txt | tr -d '\r' | tr '\n' ' ')" "eno owt detide " "filter, $isolation: the child's edit is merged"
	expect_eq "$(tr -d '\r' <a.txt | tr '\n' ' ')" "one two edited " "filter, $isolation: and in the work tree, smudged"
	expect_eq "$(git status --porcelain)" "" "filter, $isolation: git status clean"
done

# --- killed once the merge has written a.txt, before its commit: the file as
# the checkout converted it is the merge's, and the resume completes; a
# real change of the user's there is still refused
for kind in eol filter; do
	[ "$kind" = eol ] && SETUP='echo "*.txt text eol=crlf" >.gitattributes' ||
		SETUP='echo "*.txt filter=rev" >.gitattributes; git config filter.rev.clean rev; git config filter.rev.smudge rev'
	converted "killed-$kind" worktree
	cp -a . "$TEST_TMP/points-$kind"
	(cd "$TEST_TMP/points-$kind" &&
		AILOOP_CRASH_LOG="$TEST_TMP/points-$kind.log" "$AILOOP" run --quiet "append" >/dev/null 2>&1)
	n=$(grep -n -m1 merge-checkout "$TEST_TMP/points-$kind.log" | cut -d: -f1)
	rc=$({ AILOOP_CRASH_AT=$n "$AILOOP" run --quiet "append" >/dev/null 2>&1; echo $?; } 2>/dev/null)
	expect_eq "$rc" 137 "$kind: killed in the merge, a.txt written, not committed"
	merged=$(cat a.txt)
	echo user >a.txt
	run "$AILOOP" resume
	expect_rc 1 "$kind: the merge would overwrite the user's change"
	expect_in "$err" "your change to 'a.txt' in the main work tree would be overwritten" "$kind: the error says so"
	printf '%s\n' "$merged" >a.txt # the user undoes it
	run "$AILOOP" resume
	expect_rc 0 "$kind: the resume completes"
	expect_eq "$(git show HEAD:a.txt | tr -d '\r' | tr '\n' ' ')" \
		"$([ "$kind" = eol ] && echo "one two edited " || echo "eno owt detide ")" "$kind: the child's edit is merged"
	expect_eq "$(git status --porcelain)" "" "$kind: git status clean"
done

# --- a required clean command that fails in the main work tree (not in the
# child's worktree, whose .git is a file): the merge cannot compare the
# file, the run pauses with the driver's error, and resumes once it works
SETUP='echo "*.txt filter=rev" >.gitattributes; git config filter.rev.clean rev; git config filter.rev.smudge rev'
converted required worktree
git config filter.rev.clean "test ! -d .git && rev"
git config filter.rev.required true
run "$AILOOP" run "append"
expect_rc 70 "required: the run stops"
expect_in "$err" "cannot compare the main work tree with the merge: the clean filter 'rev' of 'a.txt' failed" \
	"required: the error names the driver and the file"
expect_in "$out" "is paused" "required: the run is paused"
git config filter.rev.clean rev
run "$AILOOP" resume
expect_rc 0 "required: the resume completes once the driver works"
expect_eq "$(tr -d '\r' <a.txt | tr '\n' ' ')" "one two edited " "required: the child's edit is merged"
expect_eq "$(git status --porcelain)" "" "required: git status clean"

finish
