#!/usr/bin/env bash
# `ailoop setup` on a terminal (driven through a pty with script(1)): Enter
# accepts every default, answers shape the flow, bad answers are asked
# again, overlapping sensors are warned about, the tree is shown, and "n"
# writes nothing.
. "$(dirname "$0")/lib.sh"

if ! script -qec true /dev/null >/dev/null 2>&1 </dev/null; then
	echo "t71-setup-tty.sh: skipped: script(1) cannot drive a pty here"
	exit 0
fi

# tty DIR ANSWERS ARGS...: runs setup in DIR on a pty, typing the lines of
# ANSWERS (each followed by Enter)
tty() {
	local dir=$1 answers=$2
	shift 2
	err=
	out=$(cd "$dir" && printf '%s\n' "$answers" |
		timeout 60 script -qec "$(printf '%q ' "$AILOOP" setup "$@")" /dev/null) && rc=0 || rc=$?
	out=${out//$'\r'/}
}

project() {
	new_repo "$1"
	printf 'test:\n\ttrue\n' >"$1/Makefile"
}

# Enter accepts every default: the same files as --yes.
project "$TEST_TMP/yes"
(cd "$TEST_TMP/yes" && "$AILOOP" setup --yes >/dev/null 2>&1)
project "$TEST_TMP/enter"
tty "$TEST_TMP/enter" $'\n\n\n\n\n\n\n\n\n\n\n\n'
expect_rc 0 "setup on a terminal, Enter to everything"
expect_in "$out" "how many levels of loops (1-3) [1]:" "setup asks how many levels"
expect_in "$out" "level 1 of 1: id [deliver]:" "setup asks the level's id"
expect_in "$out" "sensor 1 name [tests]:" "setup suggests the detected sensor's name"
expect_in "$out" "command of 'tests' [make test]:" "setup suggests the detected command"
expect_in "$out" "target of 'tests' [every test passes]:" "setup suggests a target"
expect_in "$out" "max iterations of 'deliver' [10]:" "setup asks the iterations"
expect_in "$out" "runner (claude, codex, gemini, aider, opencode) [claude]:" "setup asks the runner"
expect_in "$out" "  deliver: loop, at most 10 iterations" "setup shows the tree"
expect_in "$out" "write .ai-loop/ with this flow? (Y/n) [Y]:" "setup asks before writing"
expect_in "$out" "Created   .ai-loop/flow.yaml" "Enter writes the flow"
for f in flow.yaml agents/loop-sensor-tests.md agents/loop-actuator.md .setup-manifest; do
	cmp -s "$TEST_TMP/yes/.ai-loop/$f" "$TEST_TMP/enter/.ai-loop/$f" && pass ||
		fail "Enter to everything writes the same $f as --yes"
done

# Answers: two levels, own ids, sensors, limits, runner; bad answers asked again.
project "$TEST_TMP/answers"
answers=(
	5 2                   # levels: 5 is refused
	"bad id" outer        # level 1 id
	unit $'make\xff' "make unit" $'\xfe' "unit tests pass"  # replaces the detected sensor
	unit2 "make unit"     # the same command twice
	""                    # target of unit2: the default
	""                    # no more sensors
	x 4                   # max iterations: x is refused
	inner                 # level 2 id
	n                     # drop the LLM review sensor
	unit "make unit" ""   # the parent's sensor again
	""                    # no more
	2                     # max iterations
	gpt codex             # runner: gpt is refused
	y
)
tty "$TEST_TMP/answers" "$(printf '%s\n' "${answers[@]}")"
expect_rc 0 "setup with answers"
expect_in "$out" "  give 1, 2 or 3" "a bad number of levels is asked again"
expect_in "$out" "  an id is letters, digits, '_' and '-'" "a bad id is asked again"
expect_in "$out" "  a number from 1 to 1000" "bad iterations are asked again"
expect_in "$out" "  unknown runner 'gpt'" "an unknown runner is asked again"
expect_in "$out" "  a command is one line of UTF-8 text" "a command that is not UTF-8 is asked again"
expect_in "$out" "  a target is one line of UTF-8 text" "a target that is not UTF-8 is asked again"
expect_in "$out" "ailoop: warning: sensors 'unit' and 'unit2' of level 'outer' run the same command 'make unit'" \
	"the same command twice is warned about"
expect_in "$out" "ailoop: warning: sensor 'unit' of level 'outer' is repeated in its child 'inner': it runs in both loops" \
	"a sensor repeated in the child is warned about"
expect_in "$out" "flow (template nested, runner codex):" "the tree names template and runner"
expect_in "$out" "    sensor unit: \$ make unit  (target: unit tests pass)" "the tree shows the sensors"
expect_in "$out" "  \`-- inner: loop, at most 2 iterations" "the tree shows the child"
flow=$(cat "$TEST_TMP/answers/.ai-loop/flow.yaml")
expect_in "$flow" "runner: codex" "the runner answer is written"
expect_in "$flow" "id: outer" "the id answer is written"
expect_in "$flow" "max_iterations: 4" "the iterations answer is written"
expect_not_in "$flow" "loop-sensor-review.md" "the dropped sensor is not in the flow"
expect_in "$(cat "$TEST_TMP/answers/.ai-loop/agents/loop-sensor-unit.md")" "target: 'unit tests pass'" \
	"the target answer is written"
(cd "$TEST_TMP/answers" && "$AILOOP" validate >/dev/null 2>&1) && pass || fail "the answered flow validates"

# "n" at the end writes nothing.
project "$TEST_TMP/no"
tty "$TEST_TMP/no" $'\n\n\n\n\n\n\n\nn'
expect_rc 1 "setup answered no"
expect_in "$out" "setup cancelled: nothing written" "setup says it wrote nothing"
test ! -e "$TEST_TMP/no/.ai-loop" && pass || fail "setup answered no writes nothing"

# With --yes a terminal is not asked anything.
project "$TEST_TMP/yes-tty"
tty "$TEST_TMP/yes-tty" "" --yes
expect_rc 0 "setup --yes on a terminal"
expect_not_in "$out" "how many levels" "--yes asks nothing"
expect_in "$out" "Created   .ai-loop/flow.yaml" "--yes writes the flow"

finish
