#!/usr/bin/env bash
# Random changes, as an agent might make them in any mix (files written
# over directories, directories over links, links over files, moves), each
# run once watched and once with a full scan per commit: every commit must
# hold the same work tree both ways, and the last one all of it.
. "$(dirname "$0")/lib.sh"

STEPS=40
export STEP SEED

# project DIR: a repository whose loop calls the random agent STEPS times
project() {
	mkdir -p "$1/.ai-loop/agents" "$1/w"
	git -C "$1" init -q -b main
	echo x >"$1/w/keep"
	printf -- '---\nname: random\ncommand: bash %s\n---\n' "$FIXTURES/watch/random.sh" \
		>"$1/.ai-loop/agents/random.md"
	printf -- '---\nname: steps\ncommand: s=$(cat "$STEP"); echo "at $s"; test $s -ge %d\n---\n' \
		"$STEPS" >"$1/.ai-loop/agents/steps.md"
	cat >"$1/.ai-loop/flow.yaml" <<YAML
version: 1
flow:
  id: random
  type: loop
  controller: builtin:all-pass
  sensors: [.ai-loop/agents/steps.md]
  actuator: {strategy: direct, agent: .ai-loop/agents/random.md}
  termination: {max_iterations: $STEPS, no_progress_limit: 0, same_error_limit: 0}
YAML
	git -C "$1" add -A
	git -C "$1" commit -q -m "random changes"
}

# trees DIR: the tree of w/ at each commit, oldest first
trees() {
	local c
	for c in $(git -C "$1" rev-list --reverse HEAD); do
		git -C "$1" rev-parse "$c:w" 2>/dev/null || echo none
	done
}

for SEED in 1 2 3 4; do
	for way in watched scanned; do
		project "$TEST_TMP/$SEED-$way"
		STEP=$TEST_TMP/$SEED-$way.step
		echo 0 >"$STEP"
		(cd "$TEST_TMP/$SEED-$way" &&
			if [ $way = scanned ]; then export AILOOP_WATCH=0; fi &&
			"$AILOOP" run --quiet "random changes" >/dev/null 2>"$TEST_TMP/$SEED-$way.err")
		expect_eq "$?" 0 "seed $SEED, $way: the run completes"
	done
	diff <(trees "$TEST_TMP/$SEED-watched") <(trees "$TEST_TMP/$SEED-scanned") >/dev/null &&
		pass || fail "seed $SEED: the watched commits hold the trees a full scan's hold"
	expect_eq "$(git -C "$TEST_TMP/$SEED-watched" status --porcelain)" "" \
		"seed $SEED: the last watched commit holds the whole work tree"
done
finish
