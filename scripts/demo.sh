#!/usr/bin/env bash
# The demo: ailoop fixes a tiny C library whose tests fail, with a two-level
# flow of scripted agents (offline, no LLM). The outer loop measures the
# whole test suite and picks the next failing test; the inner loop fixes
# that test until it passes. Every iteration becomes a commit; the demo
# ends by showing `ailoop log` and `ailoop status`.
#
#   ./scripts/demo.sh            installs what building ailoop needs (not
#                                what the tests need), builds, runs
#   AILOOP=path ./scripts/demo.sh   uses an ailoop binary already built
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)

if [ -z "${AILOOP:-}" ]; then
	"$src/scripts/bootstrap.sh" build
	cmake -S "$src" -B "$src/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build "$src/build" -j "$(nproc 2>/dev/null || echo 2)" --target ailoop >/dev/null
	AILOOP=$src/build/ailoop
fi

demo=$(mktemp -d "${TMPDIR:-/tmp}/ailoop-demo.XXXXXX")
cd "$demo"
git init -q -b main
git config user.name "ailoop demo"
git config user.email "demo@example.com"

# --- the project: three functions, three bugs, three failing tests -----------
cat >mathlib.c <<'C'
int add(int a, int b) { return a - b; }
int sub(int a, int b) { return b - a; }
int mul(int a, int b) { return a + b; }
C
cat >test_mathlib.c <<'C'
#include <stdio.h>

int add(int a, int b);
int sub(int a, int b);
int mul(int a, int b);

static int passed, failed;

static void check(const char *name, int got, int want)
{
	if (got == want) {
		passed++;
		printf("ok   %s\n", name);
	} else {
		failed++;
		printf("FAIL %s: got %d, want %d\n", name, got, want);
	}
}

int main(void)
{
	check("add", add(2, 3), 5);
	check("sub", sub(5, 3), 2);
	check("mul", mul(4, 3), 12);
	printf("%d passed, %d failed\n", passed, failed);
	return failed != 0;
}
C
cat >Makefile <<'MK'
test: test_mathlib
	./test_mathlib
test_mathlib: mathlib.c test_mathlib.c
	cc -o $@ mathlib.c test_mathlib.c
.PHONY: test
MK
printf 'test_mathlib\n' >.gitignore

# --- the agents: command sensors and scripted controller and actuator ----------
mkdir -p .ai-loop/agents
cat >.ai-loop/agents/tests.md <<'MD'
---
name: tests
description: The whole test suite.
command: make -s test
target: every test passes
metrics:
  failed: '(\d+) failed'
  passed: '(\d+) passed'
---
MD
cat >.ai-loop/agents/pick-test.sh <<'SH'
#!/bin/sh
# Outer controller: done when no test fails, else plan the first failure.
out="$AILOOP_ARTIFACTS/sensor-tests-output.md"
name=$(sed -n 's/^FAIL \([a-z]*\):.*/\1/p' "$out" | head -n 1)
if [ -z "$name" ]; then
	printf -- '---\ntarget-met: true\n---\nEvery test passes.\n' >"$AILOOP_OUTPUT"
else
	printf -- '---\ntarget-met: false\n---\n%s\n\n## Action Plan\n\nMake the failing test pass.\ntest: %s\n' \
		"$(grep -c '^FAIL' "$out") tests fail." "$name" >"$AILOOP_OUTPUT"
fi
SH
cat >.ai-loop/agents/pick-test.md <<'MD'
---
name: pick-test
command: sh .ai-loop/agents/pick-test.sh
---
Pick the next failing test.
MD
cat >.ai-loop/agents/one-test.sh <<'SH'
#!/bin/sh
# Inner sensor: passes when the test this loop's task names passes.
name=$(sed -n 's/^test: //p' "$AILOOP_TASK_FILE")
result=$(make -s test | grep "^[A-Za-z]*  *$name\b")
echo "$result"
[ "$result" = "ok   $name" ]
SH
cat >.ai-loop/agents/one-test.md <<'MD'
---
name: one-test
description: The test named in this loop's task.
command: sh .ai-loop/agents/one-test.sh
target: the planned test passes
---
MD
cat >.ai-loop/agents/fix-bug.sh <<'SH'
#!/bin/sh
# Inner actuator: rewrites the body of the function the task names.
name=$(sed -n 's/^test: //p' "$AILOOP_TASK_FILE")
case "$name" in
add) op='+' ;;
sub) op='-' ;;
mul) op='*' ;;
*) echo "no test named in the task" >&2; exit 1 ;;
esac
sed -i "s/^int $name(int a, int b) { return .*; }$/int $name(int a, int b) { return a $op b; }/" mathlib.c
printf -- '---\nsummary: %s now returns a %s b\n---\n' "$name" "$op" >"$AILOOP_OUTPUT"
SH
cat >.ai-loop/agents/fix-bug.md <<'MD'
---
name: fix-bug
command: sh .ai-loop/agents/fix-bug.sh
---
Fix the function the test exercises.
MD
cat >.ai-loop/flow.yaml <<'YAML'
version: 1
flow:
  id: suite
  type: loop
  controller: .ai-loop/agents/pick-test.md
  sensors: [.ai-loop/agents/tests.md]
  actuator:
    strategy: composite
    child:
      id: fix
      type: loop
      controller: builtin:all-pass
      sensors: [.ai-loop/agents/one-test.md]
      actuator: {strategy: direct, agent: .ai-loop/agents/fix-bug.md}
      termination: {max_iterations: 3}
  termination: {max_iterations: 5}
YAML
git add -A
git commit -q -m "A tiny math library whose tests fail"

banner() {
	if [ -t 1 ]; then printf '\n\033[1m== %s\033[0m\n' "$*"; else printf '\n== %s\n' "$*"; fi
}
banner "a project whose tests fail ($demo)"
make -s test || true
banner "ailoop validate"
"$AILOOP" validate
banner "ailoop run \"make the tests pass\""
"$AILOOP" run "make the tests pass"
banner "the tests now"
make -s test
banner "ailoop log"
"$AILOOP" log
banner "ailoop status"
"$AILOOP" status
banner "git log --oneline"
git log --oneline --graph
printf '\nThe demo repository is %s; remove it when done.\n' "$demo"
