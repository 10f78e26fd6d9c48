#!/usr/bin/env bash
# ailoop stages only what the watch of the work tree saw change, and falls
# back to a full scan when the watch cannot be trusted; either way each
# commit holds exactly the tree a full scan makes. A scripted agent changes
# files in every way an agent can, one way per iteration; the same run with
# AILOOP_WATCH=0 (a full scan per commit) must make the same trees.
. "$(dirname "$0")/lib.sh"

STEPS=15
export AILOOP_WATCH_TRACE=1

# repo NAME: the project the agent works on, and its loop of STEPS iterations
repo() {
	R=$TEST_TMP/$1
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
}

# trees DIR: each ailoop commit's tree, the run's own files aside: "mode type id path" lines
trees() {

	local c
	for c in $(git -C "$1" rev-list --reverse HEAD); do
		echo "== $(git -C "$1" log -1 --format=%s "$c" | sed 's/^ai-loop\[[^]]*\]//')"
		git -C "$1" ls-tree -r "$c" | grep -v '	\.ai-loop/runs/'
	done
}

# watched: each run in its own repository; $STEP counts the agent's steps
export STEP
STEP=$TEST_TMP/step-watched
repo watched
cd "$R"
AILOOP_WATCH_MAX_EVENTS=400 run "$AILOOP" run "mutate the tree"
expect_rc 0 "watched run: completes"
watched_err=$err
expect_eq "$(cat "$STEP")" "$STEPS" "watched run: the agent took every step"

STEP=$TEST_TMP/step-scanned
repo scanned
cd "$R"
AILOOP_WATCH=0 run "$AILOOP" run "mutate the tree"
expect_rc 0 "full-scan run: completes"
scanned_err=$err

diff <(trees "$TEST_TMP/watched") <(trees "$TEST_TMP/scanned") >"$TEST_TMP/diff" &&
	pass || { fail "watched commits: the same trees as a full scan's"; head -40 "$TEST_TMP/diff" >&2; }
expect_eq "$(git -C "$TEST_TMP/watched" rev-list --count HEAD)" \
	"$(git -C "$TEST_TMP/scanned" rev-list --count HEAD)" "watched commits: as many as a full scan's"
for r in watched scanned; do
	expect_eq "$(git -C "$TEST_TMP/$r" status --porcelain)" "" \
		"$r run: the last commit holds the whole work tree"
done

# the watch did the work, and gave way where it could not be trusted
watched_n=$(grep -c 'staging: watched' <<<"$watched_err")
[ "$watched_n" -ge 8 ] && pass || fail "watched run: most commits staged by the watch ($watched_n)"
expect_in "$watched_err" "staging: full scan" "watched run: the first commit (and overflows) scan"
expect_not_in "$scanned_err" "staging: watched" "AILOOP_WATCH=0: every commit scans"
# the steps whose commit must have fallen back: the overflow, a directory
# moved, .gitignore changed, a repository appearing
full=$(grep -c 'staging: full scan' <<<"$watched_err")
[ "$full" -ge 5 ] && pass || fail "watched run: untrusted steps fall back to a full scan ($full)"
expect_in "$(git -C "$TEST_TMP/watched" ls-tree HEAD sub)" "160000 commit" \
	"a nested repository: recorded as a gitlink"
expect_in "$(git -C "$TEST_TMP/watched" ls-tree HEAD skip.log)" "skip.log" \
	"a file no longer ignored: recorded"
expect_eq "$(git -C "$TEST_TMP/watched" ls-tree HEAD ignored-dir)" "" "an ignored directory: left out"

finish
