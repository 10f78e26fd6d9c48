#!/usr/bin/env bash
# Git repositories inside the work tree: one an agent makes (a clone, a
# `git init`) is recorded as `git add -A` records it, a gitlink to the
# commit checked out in it, and moves with it; one without a commit is left
# out with a warning, once; a registered submodule whose checkout an agent
# moves gets the new commit in the iteration's commit.
. "$(dirname "$0")/lib.sh"

# script_agent DIR NAME: an actuator that fixes one item and then runs the
# shell lines on standard input with the item it fixed in $item
script_agent() {
	printf -- '---\nname: %s\ncommand: sh .ai-loop/agents/%s.sh\n---\nFixes one item.\n' \
		"$2" "$2" >"$1/.ai-loop/agents/$2.md"
	{
		echo '. .ai-loop/agents/scope.sh; item=$(remaining | head -n 1)'
		echo 'sh .ai-loop/agents/fix.sh || exit 1'
		cat
	} >"$1/.ai-loop/agents/$2.sh"
}

# gitlink DIR REV PATH: the commit a tree records for PATH, if a gitlink
gitlink() {
	git -C "$1" ls-tree "$2" -- "$3" | awk '$1 == "160000" { print $3 }'
}

# an agent that makes a repository, commits in it, then removes it
R=$TEST_TMP/nested
loop_repo "$R" a b c
script_agent "$R" nest <<'SH'
g() { git -C vendor/lib -c user.name=lib -c user.email=lib@example.com "$@"; }
case "$item" in
a) git init -q vendor/lib && echo one >vendor/lib/f && g add f && g commit -q -m one ;;
b) echo two >vendor/lib/f && g commit -q -a -m two ;;
c) rm -rf vendor/lib ;;
esac
SH
one_loop "$R" nest.md
commit_all "$R"
cd "$R"
run "$AILOOP" run "fix it"
expect_rc 0 "nested repository: the run completes"
expect_not_in "$err" "invalid path" "nested repository: no invalid path"
one=$(git log --format=%H --grep='^\[iteration\] 1$' -1)
two=$(git log --format=%H --grep='^\[iteration\] 2$' -1)
three=$(git log --format=%H --grep='^\[iteration\] 3$' -1)
expect_eq "$(gitlink "$R" "$one" vendor/lib | wc -c)" "41" \
	"nested repository: recorded as a gitlink"
[ -n "$(gitlink "$R" "$two" vendor/lib)" ] &&
	[ "$(gitlink "$R" "$one" vendor/lib)" != "$(gitlink "$R" "$two" vendor/lib)" ] && pass ||
	fail "nested repository: a commit in it moves the gitlink"
expect_eq "$(git ls-tree "$three" -- vendor/lib)" "" "nested repository: removed, it leaves the tree"
expect_eq "$(git ls-tree -r HEAD --name-only | grep -c '^vendor/lib/')" "0" \
	"nested repository: its files are not in the superproject"
expect_eq "$(git status --porcelain)" "" "nested repository: clean tree at the end"

# a repository without a commit: left out, with one warning
R=$TEST_TMP/empty
loop_repo "$R" a b
script_agent "$R" empty <<'SH'
[ -d vendor/empty ] || git init -q vendor/empty
echo "$item" >>vendor/empty/notes
SH
one_loop "$R" empty.md
commit_all "$R"
cd "$R"
run "$AILOOP" run "fix it"
expect_rc 0 "repository without a commit: the run completes"
expect_eq "$(printf '%s\n' "$err" | grep -c "warning: 'vendor/empty' is a git repository without a commit")" \
	"1" "repository without a commit: warned about once"
expect_eq "$(git ls-tree -r HEAD --name-only | grep -c '^vendor/')" "0" \
	"repository without a commit: left out of the commits"
expect_eq "$(labels "$R")" "0 1 2 3" "repository without a commit: every iteration committed"

# a registered submodule whose checkout the actuator moves
L=$TEST_TMP/lib
new_repo "$L"
echo two >"$L/README" && git -C "$L" commit -q -a -m two
R=$TEST_TMP/super
loop_repo "$R" a b
git -C "$R" -c protocol.file.allow=always submodule add -q "$L" sub
script_agent "$R" pin <<'SH'
[ "$item" = a ] && git -C sub checkout -q HEAD~1
exit 0
SH
one_loop "$R" pin.md
commit_all "$R"
cd "$R"
old=$(git -C sub rev-parse HEAD~1)
run "$AILOOP" run "fix it"
expect_rc 0 "submodule: the run completes"
one=$(git log --format=%H --grep='^\[iteration\] 1$' -1)
expect_eq "$(gitlink "$R" "$one" sub)" "$old" "submodule: the iteration's commit records the new gitlink"
expect_eq "$(gitlink "$R" HEAD sub)" "$old" "submodule: and so does the last"
expect_eq "$(git status --porcelain)" "" "submodule: clean tree at the end"
expect_in "$(git show HEAD:.gitmodules)" "path = sub" "submodule: .gitmodules kept"

finish
