#!/usr/bin/env bash
# The small things a newcomer meets: an unquoted task is refused with the
# quoted command to type; an unknown command names the one meant; every
# command's help lists its options one per line and its exit codes;
# validate's summary names the files the errors are in; resume --quiet
# prints no progress; log --json gives times in ISO 8601 as status does; a
# long task's branch name is cut at a word; graph --format tree prints the
# plain-text tree; scripts/bootstrap.sh build installs only what the build
# (and so the demo) needs.
. "$(dirname "$0")/lib.sh"

R=$TEST_TMP/repo
loop_repo "$R" a b c
one_loop "$R" fixer.md "max_iterations: 5"
printf 'limits:\n  max_agent_calls: 1\n' >>"$R/.ai-loop/flow.yaml"
commit_all "$R"
cd "$R"
head=$(git rev-parse HEAD)

# --- run fix the test ---------------------------------------------------------
run "$AILOOP" run fix the 'test$'
expect_rc 64 "an unquoted task"
expect_in "$err" 'the task is one operand: quote it, as in
  ailoop run "fix the test\$"' "the quoted command to type"
expect_eq "$(git rev-parse HEAD) $(git branch --list 'ai-loop/*')" "$head " "nothing was started"

# --- did you mean --------------------------------------------------------------
run "$AILOOP" stauts
expect_rc 64 "an unknown command"
expect_in "$err" "unknown command 'stauts' (did you mean 'status'?)" "names the command meant"
run "$AILOOP" frobnicate
expect_in "$err" "unknown command 'frobnicate'" "a word far from any command"
expect_not_in "$err" "did you mean" "suggests nothing"

# --- help ------------------------------------------------------------------------
for c in setup validate graph run resume status log report agent; do
	run "$AILOOP" "$c" --help
	expect_rc 0 "$c --help"
	expect_in "$out" "
options:
  " "$c --help lists its options"
	expect_in "$out" "exit status: 0 " "$c --help gives its exit codes"
done
run "$AILOOP" resume --help
expect_in "$out" "  -q, --quiet   print no progress" "one option a line"

# --- validate's summary -----------------------------------------------------------
V=$TEST_TMP/invalid
loop_repo "$V" a
one_loop "$V" fixer.md "max_iterations: 5"
printf -- '---\nname: fixer\ntimout: 3\ncommand: [sh, x]\nmetrics: {a: "no group"}\n---\n' >"$V/.ai-loop/agents/fixer.md"
sed -i 's/max_iterations: 5/max_iterations: many/' "$V/.ai-loop/flow.yaml"
cd "$V"
run "$AILOOP" validate
expect_rc 65 "an invalid flow and agent file"
expect_in "$err" "ailoop: 3 errors in .ai-loop/flow.yaml (1), .ai-loop/agents/fixer.md (2)" \
	"the summary names the files the errors are in"
sed -i 's/max_iterations: many/max_iterations: 5/' .ai-loop/flow.yaml
run "$AILOOP" validate
expect_in "$err" "ailoop: 2 errors in .ai-loop/agents/fixer.md" "errors of one agent file"
cd "$R"

# --- resume --quiet ------------------------------------------------------------------
run "$AILOOP" run "fix the items"
expect_rc 4 "the run is blocked by its limit"
sed -i 's/max_agent_calls: 1/max_agent_calls: 50/' .ai-loop/flow.yaml
git commit -qam "raise the limit"
run "$AILOOP" resume --quiet
expect_rc 0 "resume --quiet finishes the run"
expect_not_in "$err" "ailoop: [" "resume --quiet prints no progress"
expect_in "$out" "complete" "the outcome is printed"

# --- log --json --------------------------------------------------------------------------
run "$AILOOP" log --json
expect_rc 0 "log --json"
times=$(printf '%s' "$out" | jq -r '.[].time')
expect_eq "$(printf '%s\n' "$times" | grep -cvE '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$')" 0 \
	"every time is ISO 8601, UTC"
expect_eq "$(printf '%s\n' "$times" | tail -1)" \
	"$(TZ=UTC git log -1 --date=format-local:%Y-%m-%dT%H:%M:%SZ --format=%cd)" "the last commit's time"
expect_eq "$("$AILOOP" status --json | jq -r .started_at | grep -cE '^[0-9-]{10}T[0-9:]{8}Z$')" 1 \
	"as status gives its times"

# --- a long task's branch ---------------------------------------------------------------
B=$TEST_TMP/branch
loop_repo "$B" a
one_loop "$B" noop.md "max_iterations: 1"
commit_all "$B"
cd "$B"
run "$AILOOP" run --dry-run x
run "$AILOOP" run "make the parser accept unicode identifiers everywhere in the grammar"
expect_eq "$(git branch --list 'ai-loop/*' --format='%(refname:short)')" \
	"ai-loop/make-the-parser-accept-unicode-identifiers" "the branch name is cut at a word"

# --- graph --format tree -------------------------------------------------------------------
run "$AILOOP" graph --format tree
expect_rc 0 "graph --format tree"
expect_eq "$out" "flow .ai-loop/flow.yaml:
  fix: loop, at most 1 iteration
    sensor scope: $ sh .ai-loop/agents/sensor.sh  (target: nothing left to fix in scope)
    controller: builtin:all-pass
    actuator: .ai-loop/agents/noop.md" "the plain-text tree"
run "$AILOOP" graph --format svg
expect_rc 64 "an unknown format"
expect_in "$err" "unknown format 'svg' (use mermaid, dot or tree)" "names the formats"

# --- bootstrap build ------------------------------------------------------------------------
S=$TEST_TMP/stubs
mkdir -p "$S"
printf '#!/bin/sh\nexit 1\n' >"$S/dpkg-query"
printf '#!/bin/sh\necho "$@" >>"%s/apt.log"\n' "$TEST_TMP" >"$S/apt-get"
printf '#!/bin/sh\necho 0\n' >"$S/id"
chmod +x "$S"/*
PATH="$S:$PATH" bash "$AILOOP_SRC/scripts/bootstrap.sh" build 2>/dev/null
installed=$(cat "$TEST_TMP/apt.log")
expect_in "$installed" "cmake" "bootstrap build installs what the build needs"
expect_in "$installed" "libgit2-dev" "its libraries"
expect_not_in "$installed" "slurm-wlm" "not what only the tests need"
expect_not_in "$installed" "graphviz" "nor graphviz"
rm "$TEST_TMP/apt.log"
PATH="$S:$PATH" bash "$AILOOP_SRC/scripts/bootstrap.sh" 2>/dev/null
expect_in "$(cat "$TEST_TMP/apt.log")" "slurm-wlm" "bootstrap without build installs the tests' too"
expect_in "$(grep bootstrap "$AILOOP_SRC/scripts/demo.sh")" 'bootstrap.sh" build' \
	"the demo installs what the build needs"
finish
