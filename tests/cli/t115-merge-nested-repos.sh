#!/usr/bin/env bash
# Worktree children that put git repositories into the tree, merged: one
# adds a submodule, one clones a repository. The merge records each as a
# gitlink and the run completes, under the sanitizers too (libgit2's
# checkout leaks inside libgit2 there: tests/lsan.supp).
. "$(dirname "$0")/lib.sh"

# gitlink DIR REV PATH: the commit a tree records for PATH, if a gitlink
gitlink() {
	git -C "$1" ls-tree "$2" -- "$3" | awk '$1 == "160000" { print $3 }'
}

L=$TEST_TMP/lib
new_repo "$L"
echo two >"$L/README" && git -C "$L" commit -q -a -m two
export LIB=$L
R=$TEST_TMP/repo
new_repo "$R"
scripted_agents "$R" action
worktree_children "$R"
cat >"$TEST_TMP/plan" <<'PLAN'
case $skill in
a) git -c protocol.file.allow=always submodule add -q "$LIB" sub ;;
b) git clone -q "$LIB" vendor/lib ;;
*) creates "$skill.txt" ;;
esac
PLAN
export PLAN=$TEST_TMP/plan
unset TRAIL
commit_all "$R"
cd "$R"
run "$AILOOP" run --quiet "add the library"
expect_rc 0 "the run with the children's repositories completes"
expect_eq "$(merged_children "$R" | tr '\n' ,)" "main/par a,main/par b," "both children are merged"
head=$(git -C "$L" rev-parse HEAD)
expect_eq "$(gitlink "$R" HEAD sub)" "$head" "the submodule's commit is recorded"
expect_in "$(git show HEAD:.gitmodules)" "path = sub" "and its .gitmodules"
expect_eq "$(gitlink "$R" HEAD vendor/lib)" "$head" "the clone is recorded as git add -A records it"
expect_eq "$(git ls-files | grep -v '^\.ai-loop/' | tr '\n' ' ')" \
	".gitmodules README first.txt last.txt sub vendor/lib " "the tree after the run"
expect_eq "$(git status --porcelain)" "" "a clean work tree at the end"

finish
