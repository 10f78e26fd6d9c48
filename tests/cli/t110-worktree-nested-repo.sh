#!/usr/bin/env bash
# A worktree child's agent makes a git repository of its own in a
# subdirectory and commits there: the merge records the gitlink, and the
# repository moves into the main work tree where the gitlink is, as `git
# add -A` found it there with isolation: shared, instead of going with
# the child's worktree. Where it cannot (the main work tree holds a
# repository of the user's there, the child is not merged, the rename
# fails), the child's worktree is kept, and the run says so.
. "$(dirname "$0")/lib.sh"

# gitlink REV PATH: the commit a tree records for PATH, if a gitlink
gitlink() { git ls-tree "$1" -- "$2" | awk '$1 == "160000" { print $3 }'; }

# nest_repo NAME ISOLATION [CHILD]: a parallel node whose child `a` makes
# the repository vendor/lib with one commit (and a line of CHILD, if
# given, after it); then runs it
nest_repo() {
	R=$TEST_TMP/$1
	new_repo "$R"
	cd "$R"
	mkdir -p .ai-loop/agents
	printf -- '---\nname: nest\ncommand: sh .ai-loop/agents/nest.sh\n---\n' >.ai-loop/agents/nest.md
	cat >.ai-loop/agents/nest.sh <<'SH'
g() { git -C vendor/lib -c user.name=lib -c user.email=lib@example.com "$@"; }
mkdir -p vendor/lib && git init -q vendor/lib && echo mine >vendor/lib/f && g add f && g commit -q -m "the agent's"
echo a >a.txt
SH
	printf -- '---\nname: other\ncommand: echo b >a.txt\n---\n' >.ai-loop/agents/other.md
	printf 'version: 1\nflow:\n  id: par\n  type: parallel\n  isolation: %s\n' "$2" >.ai-loop/flow.yaml
	[ -z "${3:-}" ] || printf '  on_conflict: skip\n  children:\n    - %s\n' "$3" >>.ai-loop/flow.yaml
	[ -n "${3:-}" ] || printf '  children:\n' >>.ai-loop/flow.yaml
	printf '    - {id: a, skill: a, agent: .ai-loop/agents/nest.md}\n' >>.ai-loop/flow.yaml
	eval "${SETUP:-}"
	commit_all "$R"
	run "$AILOOP" run "nest"
}

for isolation in shared worktree; do
	nest_repo "nest-$isolation" "$isolation"
	expect_rc 0 "$isolation: the run completes"
	expect_eq "$(git -C vendor/lib log --format=%s 2>&1)" "the agent's" "$isolation: the agent's repository is in the main work tree, its commit there"
	expect_eq "$(gitlink HEAD vendor/lib)" "$(git -C vendor/lib rev-parse HEAD 2>&1)" "$isolation: the gitlink names its commit"
	expect_eq "$(cat vendor/lib/f 2>&1)" "mine" "$isolation: its file is there"
	expect_eq "$(git status --porcelain)" "" "$isolation: git status clean"
	expect_eq "$(git worktree list | wc -l)" 1 "$isolation: no worktree left"
done

# --- killed once the merge is made, before the worktree goes: the resume moves it ---------
nest_repo killed-points worktree >/dev/null
points=$TEST_TMP/points
git checkout -q main && git branch -q -D ai-loop/nest ai-loop/nest--a && git worktree prune &&
	rm -rf .ai-loop/runs vendor
AILOOP_CRASH_LOG=$points "$AILOOP" run --quiet "nest" >/dev/null 2>&1
n=$(grep -n -m1 ' merged$' "$points" | cut -d: -f1)
git checkout -q main && git branch -q -D ai-loop/nest ai-loop/nest--a && git worktree prune &&
	rm -rf .ai-loop/runs vendor
rc=$({ AILOOP_CRASH_AT=$n "$AILOOP" run --quiet "nest" >/dev/null 2>&1; echo $?; } 2>/dev/null)
expect_eq "$rc" 137 "killed: once the merge is made"
run "$AILOOP" resume
expect_rc 0 "killed: the resume completes"
expect_eq "$(git -C vendor/lib log --format=%s 2>&1)" "the agent's" "killed: the agent's repository is in the main work tree"
expect_eq "$(git worktree list | wc -l)" 1 "killed: no worktree left"
expect_eq "$(git status --porcelain)" "" "killed: git status clean"

# --- the main work tree holds a repository of the user's there: the child's is kept ----------
SETUP='git init -q vendor/lib && echo theirs >vendor/lib/f && git -C vendor/lib add f && git -C vendor/lib commit -q -m "the user'"'"'s"'
nest_repo kept worktree
expect_rc 0 "kept: the run completes"
wt=$(ls -d "$R"/.ai-loop/runs/run_*/worktrees/a)
expect_in "$err" "ailoop: warning: worktree '$wt' is kept: 'vendor/lib' there is a repository an agent made, which cannot move to the main work tree (the main work tree holds something else there)" \
	"kept: the run says which worktree is kept, and why"
expect_eq "$(git -C vendor/lib log --format=%s)" "the user's" "kept: the user's repository is as it was"
expect_eq "$(git -C "$wt/vendor/lib" log --format=%s 2>&1)" "the agent's" "kept: the agent's repository is in the kept worktree"
expect_eq "$(gitlink "$(git log --merges -1 --format=%H)" vendor/lib)" "$(git -C "$wt/vendor/lib" rev-parse HEAD 2>&1)" \
	"kept: the merge's gitlink names the agent's commit, in the kept worktree"
expect_eq "$(git worktree list | wc -l)" 2 "kept: git lists the kept worktree"

# --- the child is not merged (its a.txt conflicts with the child before it): its
# repository stays with its worktree when the run completes
SETUP=
nest_repo unmerged worktree "{id: b, skill: b, agent: .ai-loop/agents/other.md}"
expect_rc 0 "unmerged: the run completes"
wt=$(ls -d "$R"/.ai-loop/runs/run_*/worktrees/a)
expect_in "$err" "ailoop: warning: worktree '$wt' is kept: 'vendor/lib' there is a repository an agent made, which cannot move to the main work tree (the run's branch does not record it)" \
	"unmerged: the run says which worktree is kept, and why"
expect_eq "$(git -C "$wt/vendor/lib" log --format=%s 2>&1)" "the agent's" "unmerged: the agent's repository is in the kept worktree"
[ ! -e vendor/lib ] && pass || fail "unmerged: nothing of it in the main work tree"

# --- the repository cannot be moved (the agent made it on a mount point of its
# own): kept, with the reason
SETUP='sed -i "1a mkdir -p vendor/lib && mount -t tmpfs -o size=1M tmpfs vendor/lib && touch \"$TEST_TMP/mounted\"" .ai-loop/agents/nest.sh'
nest_repo mounted worktree
if [ -e "$TEST_TMP/mounted" ]; then
	wt=$(ls -d "$R"/.ai-loop/runs/run_*/worktrees/a)
	expect_rc 0 "mounted: the run completes"
	expect_in "$err" "ailoop: warning: worktree '$wt' is kept: 'vendor/lib' there is a repository an agent made, which cannot move to the main work tree (Device or resource busy)" \
		"mounted: the run says which worktree is kept, and why"
	expect_eq "$(git -C "$wt/vendor/lib" log --format=%s 2>&1)" "the agent's" "mounted: the agent's repository is in the kept worktree"
	umount "$wt/vendor/lib"
else
	echo "(a repository on a mount point: not tried, no tmpfs can be mounted here)"
fi

finish
