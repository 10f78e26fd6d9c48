#!/usr/bin/env bash
# What `ailoop run` needs from git and does to it: a repository with a
# commit, a clean tree (or --allow-dirty), its own branch (or --no-branch),
# and the outcome as JSON. In a sparse checkout the files it leaves out of
# the work tree are neither changes nor deletions, as git has them.
. "$(dirname "$0")/lib.sh"

write_flow() {
	one_loop "$1" fixer.md
}

# not a repository / no commit yet: exit 66
mkdir -p "$TEST_TMP/plain/.ai-loop/agents"
cp "$FIXTURES"/agents/* "$TEST_TMP/plain/.ai-loop/agents/"
write_flow "$TEST_TMP/plain"
cd "$TEST_TMP/plain"
run "$AILOOP" run "x"
expect_rc 66 "not a git repository"
expect_in "$err" "not a git repository" "not-a-repository message"
git init -q -b main
run "$AILOOP" run "x"
expect_rc 66 "repository without a commit"
expect_in "$err" "no commit yet" "no-commit message"
# a repository libgit2 cannot open: said as such, not "not a repository"
mkdir -p "$TEST_TMP/sha256"
cp -a "$TEST_TMP/plain/.ai-loop" "$TEST_TMP/sha256/"
cd "$TEST_TMP/sha256"
if git init -q -b main --object-format=sha256 2>/dev/null; then
	git add -A && git commit -q -m "sha-256"
	# libgit2's own open of it, which fails, leaks what it matched in the
	# repository's configuration (its fault, not ailoop's, which exits)
	ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 run "$AILOOP" run "x"
	expect_rc 66 "a SHA-256 repository"
	expect_in "$err" "cannot open the git repository: unsupported extension name extensions.objectformat (a repository of SHA-256 object names" \
		"the SHA-256 repository's message"
fi
# a repository of another user: git's "dubious ownership", with its way out
if [ "$(id -u)" = 0 ] && id nobody >/dev/null 2>&1; then
	mkdir -p "$TEST_TMP/owned"
	cp -a "$TEST_TMP/plain/.ai-loop" "$TEST_TMP/owned/"
	cd "$TEST_TMP/owned"
	git init -q -b main && git add -A && git commit -q -m "set up"
	chown -R nobody "$TEST_TMP/owned"
	run "$AILOOP" run "x"
	expect_rc 66 "another user's repository"
	expect_in "$err" "the git repository here is owned by another user (uid $(id -u nobody))" \
		"another user's repository: said as such"
	expect_in "$err" "git config --global --add safe.directory '$TEST_TMP/owned'" \
		"another user's repository: the way to trust it"
	git config --global --add safe.directory "$TEST_TMP/owned"
	run "$AILOOP" run --quiet "x"
	expect_rc 0 "another user's repository, trusted: the run completes"
	chown -R root "$TEST_TMP/owned"
fi
cd "$TEST_TMP/plain"

# .ai-loop below the repository's root: said as such
mkdir -p "$TEST_TMP/mono"
git -C "$TEST_TMP/mono" init -q -b main
mv "$TEST_TMP/plain" "$TEST_TMP/mono/sub"
rm -rf "$TEST_TMP/mono/sub/.git"
git -C "$TEST_TMP/mono" add -A && git -C "$TEST_TMP/mono" commit -q -m "a monorepo"
cd "$TEST_TMP/mono/sub"
run "$AILOOP" run "x"
expect_rc 66 ".ai-loop below the root"
expect_in "$err" ".ai-loop must be at the root of the git repository ('$TEST_TMP/mono/')" \
	"the message names the repository's root"

# a dirty tree is refused, unless --allow-dirty
R=$TEST_TMP/dirty
loop_repo "$R" a
write_flow "$R"
commit_all "$R"
cd "$R"
echo "local edit" >>README
run "$AILOOP" run "x"
expect_rc 64 "dirty tree"
expect_in "$err" "uncommitted changes ('README')" "dirty message names the file"
expect_in "$err" "--allow-dirty" "dirty message gives the way out"
expect_eq "$(git branch --list 'ai-loop/*')" "" "no branch made for a refused run"
run "$AILOOP" run --allow-dirty "x"
expect_rc 0 "--allow-dirty"
expect_in "$(git show HEAD~1:README)" "local edit" "the local change went into the first commit"

# --no-branch commits on the current branch; names are unique
R=$TEST_TMP/nobranch
loop_repo "$R" a
write_flow "$R"
commit_all "$R"
cd "$R"
run "$AILOOP" run --no-branch "fix it"
expect_rc 0 "--no-branch"
expect_eq "$(git rev-parse --abbrev-ref HEAD)" "main" "stayed on main"
expect_eq "$(labels "$R")" "0 1 2" "committed on main"
git checkout -q -b other
printf 'b\n' >todo.txt
commit_all "$R" "new work"
git branch -q ai-loop/fix-it HEAD
git branch -q ai-loop/fix-it-2 HEAD
run "$AILOOP" run --json "fix it"
expect_rc 0 "second run"
expect_eq "$(git rev-parse --abbrev-ref HEAD)" "ai-loop/fix-it-3" "branch name made unique"
expect_eq "$(printf '%s\n' "$out" | jq -r .status)" "complete" "--json status"
expect_eq "$(printf '%s\n' "$out" | jq -r .branch)" "ai-loop/fix-it-3" "--json branch"
expect_eq "$(printf '%s\n' "$out" | jq -r .base_branch)" "other" "--json base branch"
expect_eq "$(printf '%s\n' "$out" | jq -r .commits)" "3" "--json commits"
expect_eq "$(printf '%s\n' "$out" | jq -r .exit_code)" "0" "--json exit code"
expect_eq "$(ls .ai-loop/runs | tr '\n' ' ')" "$(ls .ai-loop/runs | sort | tr '\n' ' ')" "run ids"
expect_eq "$(ls .ai-loop/runs | wc -l)" "2" "second run has its own directory"
expect_in "$(ls .ai-loop/runs | tail -1)" "_002" "run ids count up"
run "$AILOOP" run --quiet --new "fix it"
expect_eq "$err" "" "--quiet prints no progress"

# a parallel node at the root runs, and commits the run's end
R=$TEST_TMP/reactree
loop_repo "$R" a
cat >"$R/.ai-loop/flow.yaml" <<'YAML'
version: 1
flow:
  id: steps
  type: parallel
  children:
    - {skill: one, agent: .ai-loop/agents/step.md}
YAML
commit_all "$R"
cd "$R"
run "$AILOOP" run "x"
expect_rc 0 "a parallel node runs"
expect_in "$out" "commits:      4" "the run's summary counts all of its commits"
# (the child writes, so it works in a worktree: the run's first commit is
# made before the worktree branches off, so that every commit of the run
# is above it; then the child's commit, merged, and the run's end)
expect_eq "$(triples "$R" | sort | tr '\n' ',')" \
	"0 steps complete,0 steps running,0 steps/action-1 complete," \
	"the run's start, the child's commit and the run's end"
git merge-base --is-ancestor ":/start: the children work in worktrees" ":/action-1" && pass ||
	fail "the child's commit is above the run's first commit"
expect_eq "$("$AILOOP" log --oneline | wc -l)" 4 "ailoop log shows all of the run (start, child, merge, end)"
# flows it cannot run
printf 'flow: {id: x, type: loop, controler: y}\n' >.ai-loop/flow.yaml
run "$AILOOP" run "x"
expect_rc 65 "invalid flow"
expect_in "$err" ".ai-loop/flow.yaml:1:" "invalid flow reports positions"
rm .ai-loop/flow.yaml
run "$AILOOP" run "x"
expect_rc 66 "no flow"
expect_in "$err" "run 'ailoop setup' first" "missing flow message"

# An agent that packs the repository and prunes every loose object as it
# works (git gc --prune=now): each commit reads back the trees and the
# commit the one before wrote, kept in memory (git_recent.c), while the
# store on disk holds them only in a pack by then. The run ends with each
# iteration committed, and the history stays whole (git fsck --strict, by
# finish).
R=$TEST_TMP/gc
new_repo "$R"
command_agents "$R" 'n=$(cat n 2>/dev/null || echo 0); echo "n $n"; test "$n" -ge 4' \
	'echo $(($(cat n 2>/dev/null || echo 0) + 1)) >n; git gc -q --prune=now'
one_loop "$R" act.md "max_iterations: 6"
commit_all "$R"
cd "$R"
run "$AILOOP" run "x"
expect_rc 0 "a run whose agent runs git gc --prune=now"
expect_eq "$(git show HEAD:n)" 4 "the last commit holds the agent's count"
expect_eq "$(git log --format=%s main.. | grep -c 'actuation')" 4 "four actuations committed"
expect_eq "$(find .git/objects/pack -name '*.pack' | wc -l)" 1 "git gc packed it all"

# --- a sparse checkout: what it leaves out stays in every commit --------------------
# (the watch's staging, the full scan's: AILOOP_WATCH=0, and with
# --allow-dirty, where the files left out were once committed as deleted)
for how in watched scanned allow-dirty; do
	R=$TEST_TMP/sparse-$how
	loop_repo "$R" a b
	write_flow "$R"
	mkdir -p "$R/docs/big"
	printf 'kept\n' >"$R/docs/big/manual.txt"
	commit_all "$R"
	cd "$R"
	git sparse-checkout set --no-cone '/*' '!/docs/' 2>/dev/null
	[ ! -e docs/big/manual.txt ] && pass || fail "$how: the sparse checkout leaves docs/ out"
	env $([ $how = scanned ] && echo AILOOP_WATCH=0) "$AILOOP" run --quiet \
		$([ $how = allow-dirty ] && echo --allow-dirty) "fix all" >/dev/null 2>"$TEST_TMP/err" &&
		rc=0 || rc=$?
	expect_eq "$rc" 0 "$how: a run in a sparse checkout completes (no change to allow)"
	for c in $(git rev-list main..HEAD); do
		[ "$(git show "$c:docs/big/manual.txt" 2>/dev/null)" = kept ] ||
			fail "$how: commit $c left the file out"
	done
	pass
	expect_eq "$(git ls-files -t docs)" "S docs/big/manual.txt" "$how: still left out of the work tree"
	expect_eq "$(git status --porcelain)" "" "$how: git status clean"
	expect_eq "$(git diff --stat main HEAD -- docs)" "" "$how: the branch changes nothing there"
done
# git's sparse index, which libgit2 cannot read: refused before anything, with the way out
git checkout -q main
git sparse-checkout set --cone --sparse-index .ai-loop 2>/dev/null
run "$AILOOP" run --new "fix all"
expect_rc 70 "a sparse index: refused"
expect_in "$err" "git sparse-checkout init --no-sparse-index" "a sparse index: the way out"
expect_eq "$(git branch --list 'ai-loop/*' | wc -l)" 1 "a sparse index: no run started"
git sparse-checkout init --no-sparse-index 2>/dev/null
run "$AILOOP" run --new --quiet "fix all"
expect_rc 0 "the way out followed: the run completes"
# git's split index, the other one libgit2 cannot read
git checkout -q main
git sparse-checkout disable
git config core.splitIndex true
git update-index --split-index
run "$AILOOP" run --new "fix all"
expect_rc 70 "a split index: refused"
expect_in "$err" "git config core.splitIndex false && git update-index --no-split-index" \
	"a split index: the way out"
git config core.splitIndex false && git update-index --no-split-index
run "$AILOOP" run --new --quiet "fix all"
expect_rc 0 "the way out followed: the run completes"

finish
