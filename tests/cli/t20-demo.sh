#!/usr/bin/env bash
# The README's demo runs offline and converges: three failing tests, three
# outer iterations, each fixing one test through the inner loop.
. "$(dirname "$0")/lib.sh"

run env TMPDIR="$TEST_TMP" AILOOP="$AILOOP" "$AILOOP_SRC/scripts/demo.sh"
expect_rc 0 "demo"
expect_in "$out" "0 passed, 3 failed" "the project starts with failing tests"
expect_in "$err" "[0] suite: initial measurement | tests: fail (failed=3; passed=0)" \
	"the outer loop measures three failures"
expect_in "$err" "[1] suite: fix: complete after 1 iteration | tests: fail (failed=2; passed=1)" \
	"one test fixed per outer iteration"
expect_in "$err" "[4] suite: target met | tests: pass (failed=0; passed=3)" "the loop converges"
expect_in "$out" "run run_" "the outcome"
expect_in "$out" ": complete" "the run completes"
expect_in "$out" "3 passed, 0 failed" "the tests pass at the end"
expect_in "$out" "== ailoop log" "the demo shows the log"
expect_in "$out" "  3.1  suite/fix  [running]" "the log shows the inner iterations"
expect_in "$out" "== ailoop status" "the demo shows the status"
demo=$(ls -d "$TEST_TMP"/ailoop-demo.*)
expect_eq "$(git -C "$demo" log --format=%B | sed -n 's/^\[iteration\] //p' | tac | tr '\n' ' ')" \
	"0 1.0 1.1 1.2 1 2.0 2.1 2.2 2 3.0 3.1 3.2 3 4 " "the demo's history"
run git -C "$demo" fsck --strict
expect_rc 0 "fsck of the demo repository"

finish
