#!/usr/bin/env bash
# The command line itself: help, version, usage errors and their exit codes.
. "$(dirname "$0")/lib.sh"

run "$AILOOP" --help
expect_rc 0 "--help"
expect_in "$out" "usage: ailoop <command>" "--help shows usage"
expect_in "$out" "validate" "--help lists validate"
expect_in "$out" "75  the run is locked" "--help documents exit codes"

run "$AILOOP" --version
expect_rc 0 "--version"
expect_in "$out" "ailoop " "--version prints the name"

run "$AILOOP"
expect_rc 64 "no command"

run "$AILOOP" frobnicate
expect_rc 64 "unknown command"
expect_in "$err" "unknown command 'frobnicate'" "unknown command message"

run "$AILOOP" --frob
expect_rc 64 "unknown global option"
expect_in "$err" "unknown option '--frob'" "unknown global option message"

for cmd in validate graph; do
	run "$AILOOP" help "$cmd"
	expect_rc 0 "help $cmd"
	expect_in "$out" "usage: ailoop $cmd" "help $cmd shows usage"
	run "$AILOOP" "$cmd" --help
	expect_rc 0 "$cmd --help"
	expect_in "$out" "usage: ailoop $cmd" "$cmd --help shows usage"
	run "$AILOOP" "$cmd" --bogus
	expect_rc 64 "$cmd --bogus"
	expect_in "$err" "unknown option '--bogus'" "$cmd unknown option message"
	expect_in "$err" "usage: ailoop $cmd" "$cmd unknown option shows usage"
	run "$AILOOP" "$cmd" -q
	expect_rc 64 "$cmd -q"
	expect_in "$err" "unknown option '-q'" "$cmd unknown short option"
	run "$AILOOP" "$cmd" --flow
	expect_rc 64 "$cmd --flow without value"
	expect_in "$err" "needs a value" "$cmd missing value message"
done

# help has a --help too (SPEC §1: every subcommand has one): the list of commands
for arg in --help help; do
	run "$AILOOP" help "$arg"
	expect_rc 0 "help $arg"
	expect_in "$out" "usage: ailoop <command>" "help $arg shows the commands"
done

run "$AILOOP" help nosuch
expect_rc 64 "help for an unknown command"

# operands too many or missing: the reason, then the usage
for opt in --version --help; do
	run "$AILOOP" "$opt" extra
	expect_rc 64 "$opt with an operand"
	expect_in "$err" "unexpected operand 'extra' after $opt" "$opt names the operand"
done
run "$AILOOP" status a b
expect_rc 64 "status with two operands"
expect_in "$err" "unexpected operand 'b'" "the operand too many is named"
expect_in "$err" "usage: ailoop status" "and the usage follows"
run "$AILOOP" validate extra
expect_rc 64 "validate with an operand"
expect_in "$err" "unexpected operand 'extra'" "validate names the operand"
run "$AILOOP" run
expect_rc 64 "run without a task"
expect_in "$err" "missing operand" "run says the task is missing"
run "$AILOOP" log --branch ai-loop/x run_20260101_001
expect_rc 64 "log with a run and --branch"
expect_in "$err" "a RUN-ID ('run_20260101_001') and --branch cannot both be given" \
	"log says why a run and a branch do not go together"

run "$AILOOP" graph --format svg
expect_rc 64 "unknown graph format"
expect_in "$err" "unknown format 'svg'" "graph format message"

# cmake --install puts the binary in PREFIX/bin
run cmake --install "$(dirname "$AILOOP")" --prefix "$TEST_TMP/prefix"
expect_rc 0 "cmake --install"
run "$TEST_TMP/prefix/bin/ailoop" --version
expect_rc 0 "the installed binary runs"
expect_in "$out" "ailoop " "the installed binary is ailoop"

# no flow: exit 66 and the way out
mkdir -p "$TEST_TMP/empty/.git"
cd "$TEST_TMP/empty"
run "$AILOOP" validate
expect_rc 66 "validate without a flow"
expect_in "$err" "run 'ailoop setup' first" "missing flow names setup"
run "$AILOOP" validate --flow nope.yaml
expect_rc 66 "validate --flow missing file"
expect_in "$err" "no flow at 'nope.yaml'" "missing --flow file is named"

finish
