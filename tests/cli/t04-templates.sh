#!/usr/bin/env bash
# The templates in flows/ and agents/ (what `ailoop setup` installs) are
# valid, draw as graphs, and plan the claude command lines they promise.
. "$(dirname "$0")/lib.sh"

for flow in "$AILOOP_SRC"/flows/*.yaml; do
	name=$(basename "$flow" .yaml)
	R=$TEST_TMP/$name
	new_repo "$R"
	mkdir -p "$R/.ai-loop/agents"
	cp "$AILOOP_SRC"/agents/*.md "$R/.ai-loop/agents/"
	cp "$flow" "$R/.ai-loop/flow.yaml"
	cd "$R"
	run "$AILOOP" validate
	expect_rc 0 "template $name validates"
	run "$AILOOP" graph --format dot
	expect_rc 0 "template $name draws"
	printf '%s\n' "$out" | dot -Tsvg >/dev/null 2>&1 && pass || fail "template $name renders"
	mkdir -p "$TEST_TMP/bin"
	printf '#!/bin/sh\nexit 0\n' >"$TEST_TMP/bin/claude"
	chmod +x "$TEST_TMP/bin/claude"
	run env PATH="$TEST_TMP/bin:$PATH" "$AILOOP" run --dry-run "make the tests pass"
	expect_rc 0 "template $name plans"
	if grep -q 'controller: .ai-loop/agents/loop-controller' "$flow"; then
		expect_in "$out" "claude -p --model=opus --permission-mode acceptEdits --tools=Read,Grep,Glob,Write --allowedTools=Read,Grep,Glob,Write" \
			"template $name controller command"
	fi
	if grep -q 'sensors: \[.ai-loop/agents/loop-sensor-tests.md\]' "$flow"; then
		expect_in "$out" "sensor tests: .ai-loop/agents/loop-sensor-tests.md" "template $name sensor"
		expect_in "$out" "\$ sh -c 'make test'" "template $name runs the tests itself"
	fi
	if [ "$name" = reactree-tdd ]; then
		expect_in "$out" "make test" "template $name checks the tests itself"
	fi
done
finish
