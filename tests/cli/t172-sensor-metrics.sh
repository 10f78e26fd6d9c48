#!/usr/bin/env bash
# The sensors setup writes read what each detected test runner prints: a
# Python project of requirements.txt and tests/ is found, and its pytest
# sensor says failed=0 once every test passes, where pytest prints no
# "failed"; cargo's passed is the sum of every `test result:` line, the
# doc-tests' too; `node --test`'s counts come from its `# pass N` lines.
# Each runner is a stand-in printing what the real one printed
# (tests/fixtures/sensors/) for the code broken, then fixed.
. "$(dirname "$0")/lib.sh"

S=$FIXTURES/sensors
mkdir -p "$TEST_TMP/bin"
export PATH="$TEST_TMP/bin:$PATH"
# stand_in NAME FAIL-OUTPUT PASS-OUTPUT: NAME prints the one or the other
stand_in() {
	cat >"$TEST_TMP/bin/$1" <<SH
#!/bin/sh
if grep -q fixed code.txt; then cat '$S/$3'; else cat '$S/$2'; exit 1; fi
SH
	chmod +x "$TEST_TMP/bin/$1"
}
stand_in pytest pytest-fail.txt pytest-pass.txt
stand_in cargo cargo-fail.txt cargo-pass.txt
stand_in npm node-test-fail.txt node-test-pass.txt

# converge NAME FILE CONTENT COMMAND FIRST LAST: a project of FILE is set
# up, its detected COMMAND measured broken (FIRST) and fixed (LAST)
converge() {
	local R=$TEST_TMP/$1
	new_repo "$R"
	mkdir -p "$R/tests"
	printf '%s' "$3" >"$R/$2"
	echo 'def test_x(): pass' >"$R/tests/test_x.py"
	echo broken >"$R/code.txt"
	cd "$R"
	run "$AILOOP" setup --template demo --max-iterations 3
	expect_rc 0 "$1: setup"
	expect_in "$err" "detected test command: $4" "$1: '$4' is detected"
	cat >.ai-loop/agents/loop-actuator.md <<'MD'
---
name: loop-actuator
command: "echo fixed >code.txt && echo 'fixed code.txt' >\"$AILOOP_OUTPUT\""
---
MD
	git add -A && git commit -qm "ailoop setup"
	run "$AILOOP" run "fix the code"
	expect_rc 0 "$1: the run converges"
	expect_eq "$(git log --reverse --format=%B | grep -m1 '^\[sensors\]')" "[sensors] tests: fail ($5)" \
		"$1: the failing measurement"
	expect_in "$(git log -1 --format=%B)" "[sensors] tests: pass ($6)" "$1: the passing measurement"
	expect_eq "$(jq -r 'select(.key == "sensors.tests.failed") | .value' .ai-loop/runs/run_*/memory.jsonl |
		tr '\n' ' ')" "1 0 " "$1: failed in working memory is 1, then 0, not null"
	cd "$TEST_TMP"
}
converge pytest requirements.txt 'requests' pytest \
	"passed=3; failed=1; errors=0" "passed=3; failed=0; errors=0"
converge cargo Cargo.toml '[package]' "cargo test" "passed=4; failed=1" "passed=5; failed=0"
converge node package.json '{"scripts": {"test": "node --test"}}' "npm test" \
	"passed=5; failed=1" "passed=5; failed=0"

# A sensor given on the command line gets its runner's metrics too, and a
# Makefile's test target those of the runner it runs.
R=$TEST_TMP/given
new_repo "$R"
printf 'test:\n\tpython3 -m pytest -q\n' >"$R/Makefile"
cd "$R"
run "$AILOOP" setup --sensor unit='go test ./...'
expect_rc 0 "setup with a sensor of go test"
expect_in "$(cat .ai-loop/agents/loop-sensor-unit.md)" "failed: {pattern: '(?m)^\\s*--- FAIL:', count: true}" \
	"go test's sensor counts the failed tests"
run "$AILOOP" setup --force
expect_in "$(cat .ai-loop/agents/loop-sensor-tests.md)" "default: 0" \
	"make test running pytest reads pytest's summary"
finish
