#!/usr/bin/env bash
# Where the work tree cannot be watched — inotify's watch limit reached when
# the watch starts (a full scan for every commit from then on), or later as
# the agent makes directories (a full scan for that commit, and a new
# watch) — the commits are those of a full scan (AILOOP_WATCH=0). AILOOP_WATCH_MAX_DIRS (a test hook)
# stands for the kernel's limit.
. "$(dirname "$0")/lib.sh"

STEPS=8
export AILOOP_WATCH_TRACE=1 STEP

# repo NAME: the agent of t88 on a small project, a loop of STEPS iterations
repo() {
	R=$TEST_TMP/$1
	STEP=$TEST_TMP/step-$1
	new_repo "$R"
	mkdir -p "$R/.ai-loop/agents" "$R/vendor" "$R/old/dir" "$R/moved"
	printf '*.log\nvendor/\n' >"$R/.gitignore"
	printf 'kept\n' >"$R/vendor/kept.txt"
	printf 'a\n' >"$R/old/dir/a.txt"
	printf 'plain\n' >"$R/plain.txt"
	printf 'm\n' >"$R/moved/m.txt"
	cp "$FIXTURES/watch/mutate.sh" "$R/.ai-loop/agents/mutate.sh"
	printf -- '---\nname: mutate\ncommand: sh .ai-loop/agents/mutate.sh\n---\n' \
		>"$R/.ai-loop/agents/mutate.md"
	printf -- '---\nname: steps\ncommand: s=$(cat "$STEP" 2>/dev/null || echo 0); echo "at $s"; test $s -ge %d\n---\n' \
		"$STEPS" >"$R/.ai-loop/agents/steps.md"
	cat >"$R/.ai-loop/flow.yaml" <<YAML
version: 1
flow:
  id: mutate
  type: loop
  controller: builtin:all-pass
  sensors: [.ai-loop/agents/steps.md]
  actuator: {strategy: direct, agent: .ai-loop/agents/mutate.md}
  termination: {max_iterations: $STEPS}
YAML
	git -C "$R" add -A && git -C "$R" add -f vendor/kept.txt &&
		git -C "$R" commit -q -m "set up"
	cd "$R"
}

# trees DIR: each ailoop commit's tree, the run's own files aside
trees() {
	local c
	for c in $(git -C "$1" rev-list --reverse HEAD); do
		echo "== $(git -C "$1" log -1 --format=%s "$c" | sed 's/^ai-loop\[[^]]*\]//')"
		git -C "$1" ls-tree -r "$c" | grep -v '	\.ai-loop/runs/'
	done
}

# ways: how each commit staged, one letter each (w watched, f full scan)
ways() { grep -o 'staging: .*' <<<"$err" | sed 's/staging: watched/w/; s/staging: full scan/f/' | tr -d '\n'; }

repo scanned
AILOOP_WATCH=0 run "$AILOOP" run "mutate the tree"
expect_rc 0 "full-scan run: completes"

# --- the limit reached as the watch starts: a full scan for every commit ---------
repo no-watch
AILOOP_WATCH_MAX_DIRS=1 run "$AILOOP" run "mutate the tree"
expect_rc 0 "no watch possible: the run completes"
expect_eq "$(ways)" "$(printf 'f%.0s' $(seq $((STEPS + 2))))" "no watch possible: every commit scans"
diff <(trees "$TEST_TMP/scanned") <(trees "$R") >"$TEST_TMP/diff" &&
	pass || { fail "no watch possible: the trees of a full scan"; head -20 "$TEST_TMP/diff" >&2; }

# --- the limit reached later, by the directories the agent makes -------------------
# (room for two more directories than each watch starts with: the agent's
# deep/er/est of its first step is one too many)
repo late-limit
AILOOP_WATCH_MAX_DIRS=+2 run "$AILOOP" run "mutate the tree"
expect_rc 0 "limit reached later: the run completes"
ways=$(ways)
case $ways in
ffw*) pass ;;
*) fail "limit reached later: the commit of the step that made too many directories scans ($ways)" ;;
esac
expect_in "$ways" "w" "limit reached later: a new watch follows the scan"
diff <(trees "$TEST_TMP/scanned") <(trees "$R") >"$TEST_TMP/diff" &&
	pass || { fail "limit reached later: the trees of a full scan"; head -20 "$TEST_TMP/diff" >&2; }

finish
