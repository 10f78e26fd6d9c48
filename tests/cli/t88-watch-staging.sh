#!/usr/bin/env bash
# ailoop stages only what the watch of the work tree saw change, and falls
# back to a full scan when the watch cannot be trusted; either way each
# commit holds exactly the tree a full scan makes. A scripted agent changes
# files in every way an agent can, one way per iteration; the same run with
# AILOOP_WATCH=0 (a full scan per commit) must make the same trees.
. "$(dirname "$0")/lib.sh"

STEPS=26
export AILOOP_WATCH_TRACE=1

. "$FIXTURES/watch/project.sh"

# watched: each run in its own repository; $STEP counts the agent's steps
export STEP
watch_project watched
AILOOP_WATCH_MAX_EVENTS=400 run "$AILOOP" run "mutate the tree"
expect_rc 0 "watched run: completes"
watched_err=$err
expect_eq "$(cat "$STEP")" "$STEPS" "watched run: the agent took every step"

watch_project scanned
AILOOP_WATCH=0 run "$AILOOP" run "mutate the tree"
expect_rc 0 "full-scan run: completes"
scanned_err=$err

diff <(trees "$TEST_TMP/watched") <(trees "$TEST_TMP/scanned") >"$TEST_TMP/diff" &&
	pass || { fail "watched commits: the same trees as a full scan's"; head -40 "$TEST_TMP/diff" >&2; }
# own_files DIR: each ailoop commit's files of the run (its id aside), and
# the sensor's reading in them
own_files() {
	local c
	for c in $(git -C "$1" rev-list --reverse HEAD); do
		echo "== $(git -C "$1" log -1 --format=%s "$c" | sed 's/^ai-loop\[[^]]*\]//; s/ — .*//')"
		git -C "$1" ls-tree -r --name-only "$c" -- .ai-loop/runs | sed 's/run_[0-9_]*/RUN/'
		git -C "$1" grep -h '^at ' "$c" -- .ai-loop/runs
	done
}
diff <(own_files "$TEST_TMP/watched") <(own_files "$TEST_TMP/scanned") >"$TEST_TMP/diff" &&
	pass || { fail "watched commits: the same files of the run as a full scan's"; head -40 "$TEST_TMP/diff" >&2; }
expect_eq "$(git -C "$TEST_TMP/watched" rev-list --count HEAD)" \
	"$(git -C "$TEST_TMP/scanned" rev-list --count HEAD)" "watched commits: as many as a full scan's"
for r in watched scanned; do
	expect_eq "$(git -C "$TEST_TMP/$r" status --porcelain)" "" \
		"$r run: the last commit holds the whole work tree"
done

# the watch did the work, and gave way where it could not be trusted
watched_n=$(grep -c 'staging: watched' <<<"$watched_err")
[ "$watched_n" -ge 8 ] && pass || fail "watched run: most commits staged by the watch ($watched_n)"
expect_not_in "$scanned_err" "staging: watched" "AILOOP_WATCH=0: every commit scans"
# the steps whose commit must have fallen back: the overflow, a directory
# moved, a rule dropped from .gitignore, a repository appearing, a rule
# dropped from .git/info/exclude, a negation added to a .gitignore, text
# added to a .gitignore's last line, a rule dropped from the global ignore file
full=$(grep -c 'staging: full scan' <<<"$watched_err")
[ "$full" -ge 7 ] && pass || fail "watched run: untrusted steps fall back to a full scan ($full)"
# the tree of a watched commit is the parent's with the changed paths
# updated (AILOOP_CHECK_TREES, set for every test, fails a commit whose
# tree is not the whole index's); a full scan, or a change of kind (a file
# where a directory was), writes the whole index
tree_ways=$(grep -o 'staging: [a-z ]*\|tree: from the [a-z ]*' <<<"$watched_err" |
	sed 's/staging: watched/w/; s/staging: full scan/f/; s/tree: from the changed paths/P/; s/tree: from the whole index/I/' |
	tr -d '\n')
paths_n=$(grep -o P <<<"$tree_ways" | wc -l)
[ "$paths_n" -ge 10 ] && pass || fail "watched run: most trees made from the changed paths ($tree_ways)"
expect_not_in "$tree_ways" "fP" "a full scan's tree: from the whole index"
expect_eq "${tree_ways:0:4}" wPwP "new files in new directories: the tree from the changed paths"
expect_eq "${tree_ways:10:2}" wI "a file replaced by a directory and a directory by a file: the whole index"
expect_not_in "$scanned_err" "tree: from the changed paths" "AILOOP_WATCH=0: every tree from the whole index"
# how each commit staged, one letter each: iteration 0 (the run's first
# commit, from a clean tree), then one per step
ways=$(grep -o 'staging: .*' <<<"$watched_err" | sed 's/staging: watched/w/; s/staging: full scan/f/' | tr -d '\n')
expect_eq "${ways:0:1}" w "the run's first commit trusts the watch started before the tree was found clean"
expect_eq "${ways:17:1}" w "rules only added to .gitignore files: the watch stays trusted"
expect_eq "${ways:18:1}" f "a negation added to a .gitignore: a full scan"
step17=$(git -C "$TEST_TMP/watched" rev-list -1 --grep='iteration 17 ' HEAD)
expect_eq "$(git -C "$TEST_TMP/watched" ls-tree --name-only -r "$step17" -- newdir a.tmp b.txt | tr '\n' ' ')" \
	"b.txt newdir/.gitignore newdir/public " "what the added rules ignore stays out"
expect_in "$(git -C "$TEST_TMP/watched" ls-tree --name-only -r HEAD -- newdir)" "newdir/secret2" \
	"a file the negation un-ignores: recorded"
expect_eq "${ways:20:1}" f "text added to a .gitignore's last line, which had no newline: a full scan"
expect_in "$(git -C "$TEST_TMP/watched" ls-tree --name-only -r HEAD -- nonl)" "nonl/a1" \
	"a file that rule no longer ignores: recorded"
expect_eq "${ways:21:1}" f "a rule dropped from the global ignore file: a full scan"
expect_eq "$(git -C "$TEST_TMP/watched" log --format=%s -- global-1 | sed 's/ — .*//')" \
	"ai-loop[mutate]: iteration 21" "a file the global ignore file no longer ignores: recorded"
expect_eq "$(git -C "$TEST_TMP/watched" ls-tree -r --name-only HEAD -- linked | tr '\n' ' ')" \
	"linked/d linked/e/f " "a directory replaced by a symbolic link: what lies beyond the link is not recorded"
expect_eq "$(cat "$TEST_TMP/step-watched.index" 2>/dev/null)" rewritten "the agent's git status rewrote the index"
expect_eq "${ways:25:1}" w "an index rewritten with the same entries (git status): the watch stays trusted"
expect_eq "${ways:26:1}" f "an entry taken out of the index by the agent's git: a full scan"
expect_eq "$(git -C "$TEST_TMP/watched" ls-tree -r --name-only HEAD -- vendor)" "" \
	"the file it took out, ignored, stays out"
expect_eq "$(git -C "$TEST_TMP/watched" ls-tree HEAD fifo beside.txt)" "" \
	"FIFOs are not recorded, and a tracked file one replaced is gone"
expect_in "$(git -C "$TEST_TMP/watched" ls-tree HEAD sub)" "160000 commit" \
	"a nested repository: recorded as a gitlink"
expect_in "$(git -C "$TEST_TMP/watched" ls-tree HEAD skip.log)" "skip.log" \
	"a file no longer ignored: recorded"
expect_eq "$(git -C "$TEST_TMP/watched" log --format=%s -- ignored-dir | sed 's/ — .*//')" \
	"ai-loop[mutate]: iteration 16" \
	"an ignored directory: left out until .git/info/exclude no longer ignores it"

# a tree not quite clean at the start (another run's file, which the check
# lets pass): the first commit scans, and leaves the file to its run
STEPS=1
watch_project stale
mkdir -p .ai-loop/runs/run_old && echo left >.ai-loop/runs/run_old/note.md
run "$AILOOP" run "mutate the tree"
expect_rc 0 "a run from a tree with another run's file: completes"
expect_eq "$(grep -o 'staging: .*' <<<"$err" | head -1)" "staging: full scan" \
	"a run from a tree with another run's file: the first commit scans"
expect_eq "$(git ls-tree -r --name-only HEAD -- .ai-loop/runs/run_old)" "" \
	"a run from a tree with another run's file: the file is not this run's to record"
expect_eq "$(git status --porcelain -- .ai-loop/runs/run_old)" "?? .ai-loop/runs/run_old/" \
	"a run from a tree with another run's file: it stays in the work tree"

# core.excludesFile names the global ignore file: a rule dropped there scans too
STEPS=1
watch_project configured
printf 'global-*\n' >"$TEST_TMP/excludes" && git config core.excludesFile "$TEST_TMP/excludes"
rm "$XDG_CONFIG_HOME/git/ignore"
printf -- '---\nname: mutate\ncommand: sed -i /^global/d "%s"; echo 1 >"$STEP"\n---\n' \
	"$TEST_TMP/excludes" >.ai-loop/agents/mutate.md
git commit -q -am "drop the rule of core.excludesFile"
run "$AILOOP" run "mutate the tree"
expect_rc 0 "core.excludesFile: the run completes"
expect_eq "$(grep -o 'staging: .*' <<<"$err" | sed -n 2p)" "staging: full scan" \
	"a rule dropped from core.excludesFile: a full scan"
expect_eq "$(git log --format=%s -- global-1 | sed 's/ — .*//')" "ai-loop[mutate]: iteration 1" \
	"a file core.excludesFile no longer ignores: recorded"

# both_ways WHAT SETUP: the project changed by SETUP, run watched
# ($TEST_TMP/WHAT-watched, how each commit staged in $ways) and with a full
# scan per commit ($TEST_TMP/WHAT-scanned); each must end with the run's
# files in its last commit, and the two commit the same files of the run
both_ways() {
	local r
	for r in "$1-watched" "$1-scanned"; do
		watch_project "$r"
		eval "$2" && git commit -q -am "$1"
		if [ "$r" = "$1-watched" ]; then
			run "$AILOOP" run "mutate the tree"
			ways=$(grep -o 'staging: .*' <<<"$err" | sed 's/staging: watched/w/; s/staging: full scan/f/' | tr -d '\n')
		else
			AILOOP_WATCH=0 run "$AILOOP" run "mutate the tree"
		fi
		expect_rc 0 "$r: the run completes"
		expect_eq "$(git status --porcelain)" "" "$r: the last commit holds the run's files"
	done
	diff <(own_files "$TEST_TMP/$1-watched") <(own_files "$TEST_TMP/$1-scanned") >"$TEST_TMP/diff" &&
		pass || { fail "$1: the watched commits hold the run's files a full scan's hold"; head -40 "$TEST_TMP/diff" >&2; }
}

# .gitignore ignores the runs: their files are committed all the same, and
# the watch stays trusted
STEPS=3
both_ways ignored-runs "printf '.ai-loop/runs/\n' >>.gitignore"
expect_eq "$ways" fwwww "ignored runs: the watch stages every commit after the first (the runs' .gitignore, ignored itself, is new)"
expect_in "$(own_files "$TEST_TMP/ignored-runs-watched")" "at 3" "ignored runs: the sensor's readings are committed"

# a node named as a run's worktrees directory is a node like any other
STEPS=2
both_ways worktrees-node "sed -i 's/^  id: mutate\$/  id: worktrees/' .ai-loop/flow.yaml"
expect_in "$(own_files "$TEST_TMP/worktrees-node-watched")" "RUN/nodes/worktrees/sensor-steps-output.md" \
	"a node named worktrees: its files are committed"

finish
