#!/usr/bin/env bash
# What an agent does that the watch of the work tree cannot see for itself
# — a directory it left unwatched becoming one whose files are recorded
# (a rule dropped from .gitignore, a file force-added under an ignored
# directory, a nested repository losing its .git), a hard link written
# through its other name, git's configuration changed — still makes the
# commits a full scan (AILOOP_WATCH=0) and `git add -A` make, as does a
# .git entry that is no repository (its directory is a plain one); a file
# marked assume-unchanged is left as the index has it, as git add leaves it;
# and directories deeper than libgit2's status pass reads are named, with
# what to do.
. "$(dirname "$0")/lib.sh"

export AILOOP_WATCH_TRACE=1

# steps_project DIR SETUP STEP...: a repository whose loop's actuator runs
# one STEP (shell) per iteration, SETUP run and committed first; the loop
# ends when every step has run
steps_project() {
	local dir=$1 setup=$2 i=0
	shift 2
	new_repo "$dir" && mkdir -p "$dir/.ai-loop/agents" "$dir/.ai-loop/steps"
	for step in "$@"; do
		i=$((i + 1))
		printf '%s\n' "$step" >"$dir/.ai-loop/steps/$i.sh"
	done
	cat >"$dir/.ai-loop/agents/act.md" <<'MD'
---
name: act
command: 'n=$(($(cat .ai-loop/n 2>/dev/null || echo 0) + 1)); echo $n >.ai-loop/n; sh -e .ai-loop/steps/$n.sh'
---
MD
	printf -- '---\nname: steps\ncommand: test "$(cat .ai-loop/n 2>/dev/null)" = %d\n---\n' "$i" \
		>"$dir/.ai-loop/agents/steps.md"
	cat >"$dir/.ai-loop/flow.yaml" <<YAML
version: 1
flow:
  id: steps
  type: loop
  controller: builtin:all-pass
  sensors: [.ai-loop/agents/steps.md]
  actuator: {strategy: direct, agent: .ai-loop/agents/act.md}
  termination: {max_iterations: $i}
YAML
	(cd "$dir" && eval "$setup" && git add -A && git commit -q -m "set up")
}

# trees DIR: each commit's tree since the set-up, the run's own files aside
trees() {
	local c
	for c in $(git -C "$1" rev-list --reverse HEAD~$(($(git -C "$1" rev-list --count HEAD) - 2))..HEAD); do
		git -C "$1" ls-tree -r "$c" | grep -v '	\.ai-loop/runs/'
		echo ==
	done
}

# both_ways NAME SETUP STEP...: the project run watched ($TEST_TMP/NAME-1,
# how each commit staged in $ways) and with a full scan per commit
# ($TEST_TMP/NAME-0); each completes with nothing left out of its last
# commit, and the two make the same trees
both_ways() {
	local name=$1 watch
	shift
	for watch in 1 0; do
		steps_project "$TEST_TMP/$name-$watch" "$@"
		cd "$TEST_TMP/$name-$watch"
		AILOOP_WATCH=$watch run "$AILOOP" run "take the steps"
		expect_rc 0 "$name (AILOOP_WATCH=$watch): the run completes"
		expect_eq "$(git status --porcelain)" "" \
			"$name (AILOOP_WATCH=$watch): the last commit holds the whole work tree"
		[ $watch = 1 ] && ways=$(grep -o 'staging: .*' <<<"$err" |
			sed 's/staging: watched/w/; s/staging: full scan/f/' | tr -d '\n')
	done
	diff <(trees "$TEST_TMP/$name-1") <(trees "$TEST_TMP/$name-0") >"$TEST_TMP/diff" &&
		pass || { fail "$name: the watched commits make a full scan's trees"; head -20 "$TEST_TMP/diff" >&2; }
	cd "$TEST_TMP/$name-1"
}

# --- directories the watch left out, recorded since -------------------------------
both_ways unignored 'mkdir cache && echo a >cache/a.txt && echo cache/ >.gitignore' \
	'sed -i /cache/d .gitignore' 'echo changed >cache/a.txt' 'echo x >other.txt'
expect_eq "$(git show HEAD:cache/a.txt)" changed "a directory no longer ignored: its later changes are committed"
expect_eq "${ways:1:3}" fww "a rule dropped from .gitignore: a full scan, then a new watch that watches the directory"

both_ways force-added 'echo build/ >.gitignore' \
	'mkdir build && echo a >build/out.txt' 'git add -f build/out.txt' 'echo changed >build/out.txt'
expect_eq "$(git show HEAD:build/out.txt)" changed \
	"a file force-added under an ignored directory: its later changes are committed"
expect_eq "${ways:2:2}" fw "the agent's git add: a full scan, then a new watch that watches the directory"

both_ways unnested '' \
	'git init -q sub && echo a >sub/a.txt' 'rm -rf sub/.git' 'echo changed >sub/a.txt'
expect_eq "$(git show HEAD:sub/a.txt)" changed \
	"a nested repository that lost its .git: its files are committed as the directory's"
expect_eq "${ways:2:1}" f "a nested repository's .git removed: a full scan"

# --- a .git entry that is no repository: the directory is one like any other --------
both_ways not-a-repo '' \
	'mkdir -p lib/.git app && echo code >lib/lib.c && echo "gitdir: ../gone/modules/app" >app/.git && echo code >app/main.c' \
	'echo more >>lib/lib.c && echo new >lib/new.c && echo more >>app/main.c'
expect_eq "$(git ls-tree -r --name-only HEAD -- lib app | tr '\n' ' ')" "app/main.c lib/lib.c lib/new.c " \
	"an empty .git directory, a .git file naming nothing: their directories' files are committed"
expect_eq "$(git show HEAD:lib/lib.c | tr '\n' ' ')" "code more " "and their later changes"
expect_not_in "$err" "without a commit" "and no warning calls them repositories"

# --- a hard link written through its other name ------------------------------------
both_ways hard-link 'echo v1 >a.txt' 'mkdir copy && ln a.txt copy/a.txt' 'echo v2 >>copy/a.txt'
expect_eq "$(git show HEAD:a.txt | tr '\n' ' ')" "v1 v2 " "a hard link written through its other name: both names committed"

# --- git's configuration changed by the agent ----------------------------------------
both_ways config '' \
	'printf "*.gen\n" >"$HOME/excludes" && git config core.excludesFile "$HOME/excludes" && git config core.fileMode false' \
	'echo g >out.gen && echo "#!/bin/sh" >tool.sh && chmod +x tool.sh'
expect_eq "$(git ls-tree HEAD out.gen tool.sh | awk '{ print $1, $4 }')" "100644 tool.sh" \
	"core.excludesFile and core.fileMode set by the agent: honoured from the next commit"
expect_eq "${ways:1:2}" fw "the configuration changed: a full scan, then the watch again"
both_ways config-global '' \
	'git config --global core.excludesFile "$HOME/excludes-global" && printf "*.gen\n" >"$HOME/excludes-global"' \
	'echo g >out.gen && echo kept >kept.txt'
expect_eq "$(git ls-tree --name-only HEAD out.gen kept.txt)" kept.txt \
	"core.excludesFile set in the global configuration by the agent: honoured"
git config --global --unset core.excludesFile

# --- assume-unchanged: left as the index has it, as git add leaves it -------------
both_ways assumed 'echo password=CHANGEME >config.ini' \
	'git update-index --assume-unchanged config.ini' 'echo password=hunter2 >config.ini && echo done >work.txt'
expect_eq "$(git show HEAD:config.ini)" password=CHANGEME \
	"a file marked assume-unchanged: its change is not committed"
expect_eq "$(git ls-files -v config.ini)" "h config.ini" "a file marked assume-unchanged: the mark stays"
expect_eq "$(git show HEAD:work.txt)" done "beside it, the agent's other change is committed"

# --- deeper than the status pass reads: said, and what to do ----------------------------
steps_project "$TEST_TMP/deep" '' 'p=deep; for i in $(seq 101); do p=$p/d; done; mkdir -p $p; echo x >$p/f.txt'
cd "$TEST_TMP/deep"
AILOOP_WATCH=0 run "$AILOOP" run "take the steps"
expect_rc 70 "directories 101 deep: the run pauses"
expect_in "$err" "'deep/d/d/…' holds directories more than 100 deep, and libgit2, which ailoop stages with, reads no deeper: move them higher up or ignore them (.gitignore)" \
	"directories 101 deep: where, and what to do"
echo deep/ >>.gitignore
AILOOP_WATCH=0 run "$AILOOP" resume
expect_rc 0 "directories 101 deep, ignored since: the run resumes and completes"
expect_eq "$(git status --porcelain)" "" "directories 101 deep, ignored since: nothing left out"

finish
