#!/usr/bin/env bash
# Text that is not what ailoop expects: bytes that are not UTF-8 in agent
# output, the task, sensor output and file names (stored safely, the run
# completes); a FIFO where a file is expected (refused, no hang); a UTF-8
# byte order mark (accepted); a NUL byte in a task (refused); the task file
# of a child ends in a newline, so that `while read` sees its last line;
# control characters in an agent's summary reach neither the terminal nor
# the commit subject; a value ending in "..." (YAML's end of a document)
# is read back whole.
. "$(dirname "$0")/lib.sh"

# valid_utf8 TEXT: whether TEXT is well-formed UTF-8
valid_utf8() {
	printf '%s' "$1" | iconv -f UTF-8 -t UTF-8 >/dev/null 2>&1
}
latin1_task=$(printf 'fix caf\351 now')

# --- Latin-1 in the task, an actuator's first output line and a file name ---------------------
R=$TEST_TMP/latin1
loop_repo "$R" a b
cat >"$R/.ai-loop/agents/latin1.md" <<'MD'
---
name: latin1
command: sh .ai-loop/agents/latin1.sh
---
An actuator that writes Latin-1: as the first line of its output, then in
its front matter.
MD
cat >"$R/.ai-loop/agents/latin1.sh" <<'SH'
sh .ai-loop/agents/fix.sh
if [ "$AILOOP_ITERATION" = 1 ]; then
	printf 'caf\351 fixed\nmore\n' >"$AILOOP_OUTPUT"
else
	printf -- '---\nsummary: caf\351 summarized\n---\nmore \351\n' >"$AILOOP_OUTPUT"
fi
printf 'x\n' >"$(printf 'na\357ve')-$AILOOP_ITERATION.txt"
SH
one_loop "$R" latin1.md
commit_all "$R"
cd "$R"
run "$AILOOP" run "$latin1_task"
expect_rc 0 "a run with Latin-1 in the task and in agent output completes"
expect_not_in "$err" "out of memory" "no internal error (Latin-1)"
log=$(git log --format=%B)
valid_utf8 "$log" && pass || fail "commit messages are UTF-8"
expect_in "$(git log -1 --skip=2 --format=%s)" "— caf� fixed" \
	"an invalid byte of the first line becomes U+FFFD in the subject"
expect_in "$(git log -1 --skip=1 --format=%s)" "— caf� summarized" \
	"an invalid byte of the front matter's summary becomes U+FFFD in the subject"
run_dir=$(ls -d .ai-loop/runs/run_*)
expect_eq "$(cat "$run_dir/nodes/fix/task.md")" "$latin1_task" "task.md holds the task's bytes"
state=$(cat "$run_dir/run-state.md")
valid_utf8 "$state" && pass || fail "run-state.md is UTF-8"
expect_in "$state" "task: fix caf� now" "run-state.md has the task, made UTF-8"
expect_eq "$(git ls-tree --name-only HEAD | grep -c '^"na\\357ve-')" 2 \
	"files named in Latin-1 are committed"
run "$AILOOP" log
expect_rc 0 "ailoop log reads the history"
expect_in "$out" "caf� fixed" "ailoop log shows the summary"
run "$AILOOP" status
expect_rc 0 "ailoop status reads the run"

# --- a task in Latin-1 through a file and stdin; a pause and resume -----------------------
R=$TEST_TMP/latin1-resume
loop_repo "$R" a b
one_loop "$R" gated.md
commit_all "$R"
cd "$R"
export GATE=$TEST_TMP/gate STARTED=$TEST_TMP/started
printf '%s' "$latin1_task" >"$TEST_TMP/task.txt"
touch "$GATE"
"$AILOOP" run --quiet --task-file "$TEST_TMP/task.txt" >/dev/null 2>&1 &
pid=$!
wait_for "$STARTED" && pass || fail "the actuator started"
kill -INT "$pid"
wait "$pid"
rm -f "$GATE"
run "$AILOOP" resume
expect_rc 0 "a run with a Latin-1 task resumes and completes"
expect_eq "$(cat .ai-loop/runs/run_*/nodes/fix/task.md)" "$latin1_task" \
	"task.md holds the task's bytes after resume"

# --- sensor output that is not UTF-8: fail_if, pass_if and metrics still match --------------
R=$TEST_TMP/sensor
loop_repo "$R" a
cat >"$R/.ai-loop/agents/fails.md" <<'MD'
---
name: fails
command: printf 'caf\351 count 3\n1 test FAILED\n\000after a NUL byte\n'
fail_if: 'FAILED'
metrics:
  count: 'count (\d+)'
  word: '^(\S+) count'
---
MD
cat >"$R/.ai-loop/agents/passes.md" <<'MD'
---
name: passes
command: printf 'caf\351 ALL OK\n'; exit 1
pass_if: 'ALL OK'
---
MD
cat >"$R/.ai-loop/flow.yaml" <<'YAML'
version: 1
flow:
  id: fix
  type: loop
  controller: builtin:all-pass
  sensors: [.ai-loop/agents/fails.md, .ai-loop/agents/passes.md]
  actuator: {agent: .ai-loop/agents/noop.md}
  termination: {max_iterations: 1}
YAML
commit_all "$R"
cd "$R"
run "$AILOOP" run "sense"
expect_rc 1 "fail_if matches output that is not UTF-8: no false pass"
dir=$(ls -d .ai-loop/runs/run_*/nodes/fix)
fails=$(tr -d '\000' <"$dir/sensor-fails-output.md") # the output keeps its NUL bytes
expect_in "$fails" "status: fail" "fail_if decides on output that is not UTF-8"
expect_in "$fails" "count: '3'" "a metric is read from output that is not UTF-8"
expect_in "$(cat "$dir/sensor-passes-output.md")" "status: pass" \
	"pass_if decides on output that is not UTF-8"
expect_in "$fails" "$(printf '1 test FAILED')" "the output is kept"
[ "$(grep -ac "$(printf 'caf\351')" "$dir/sensor-fails-output.md")" -eq 1 ] && pass ||
	fail "the output's own bytes are kept"
expect_in "$(tr -d '\0' <"$dir/sensor-fails-output.md")" "FAILED
after a NUL byte" "the output after a NUL byte is kept"

# --- a value that ends in "...", as YAML ends a document: read back whole -----------------
R=$TEST_TMP/dots
loop_repo "$R" a
cat >"$R/.ai-loop/agents/dots.md" <<'MD'
---
name: dots
command: 'echo "state: wait..."'
metrics:
  state: 'state: (\S+)'
---
MD
cat >"$R/.ai-loop/flow.yaml" <<'YAML'
version: 1
flow:
  id: fix
  type: loop
  controller: builtin:all-pass
  sensors: [.ai-loop/agents/dots.md]
  actuator: {agent: .ai-loop/agents/noop.md}
  termination: {max_iterations: 2}
YAML
commit_all "$R"
cd "$R"
run "$AILOOP" run "sense"
expect_rc 0 "a passing sensor whose metric ends in '...' passes"
dir=$(ls -d .ai-loop/runs/run_*/nodes/fix)
expect_in "$(cat "$dir/sensor-dots-output.md")" "  state: wait...
---" "the metric is kept whole, the front matter closed"
expect_in "$(git log -1 --format=%s)" "target met" "the run ends at its first measurement"

# --- a FIFO where a file is expected --------------------------------------------------------
R=$TEST_TMP/fifo
loop_repo "$R" a
one_loop "$R" fixer.md
commit_all "$R"
cd "$R"
mkfifo "$TEST_TMP/task.fifo"
run timeout 10 "$AILOOP" run --task-file "$TEST_TMP/task.fifo"
expect_rc 66 "a FIFO as --task-file is refused"
expect_in "$err" "ailoop: error: cannot read the task file '$TEST_TMP/task.fifo': not a regular file" \
	"says the task file is not a regular file"
mv .ai-loop/agents/fixer.md "$TEST_TMP/fixer.md"
mkfifo .ai-loop/agents/fixer.md
run timeout 10 "$AILOOP" validate
expect_rc 65 "a FIFO as an agent file is refused"
expect_in "$err" "cannot read agent file '.ai-loop/agents/fixer.md': not a regular file" \
	"says the agent file is not a regular file"
rm .ai-loop/agents/fixer.md
mv "$TEST_TMP/fixer.md" .ai-loop/agents/fixer.md
mv .ai-loop/flow.yaml "$TEST_TMP/flow.yaml"
mkfifo .ai-loop/flow.yaml
run timeout 10 "$AILOOP" validate
expect_rc 65 "a FIFO as flow.yaml is refused"
expect_in "$err" "cannot read the flow: not a regular file" "says the flow is not a regular file"
rm .ai-loop/flow.yaml
mv "$TEST_TMP/flow.yaml" .ai-loop/flow.yaml

# --- a UTF-8 byte order mark in flow.yaml and an agent file --------------------------------
bom=$(printf '\357\273\277')
for f in .ai-loop/flow.yaml .ai-loop/agents/fixer.md; do
	{ printf '%s' "$bom"; cat "$f"; } >"$TEST_TMP/bom" && mv "$TEST_TMP/bom" "$f"
done
run "$AILOOP" validate
expect_rc 0 "a flow and an agent file that start with a byte order mark are valid"
sed -i 's/^command: .*/command: [sh, missing.sh]\ntimout: 3/' .ai-loop/agents/fixer.md
run "$AILOOP" validate
expect_rc 65 "the front matter after a byte order mark is read"
expect_in "$err" "unknown key 'timout'" "the front matter after a byte order mark is checked"
git checkout -q .ai-loop/agents/fixer.md
{ printf '%s' "$bom"; cat .ai-loop/agents/fixer.md; } >"$TEST_TMP/bom" &&
	mv "$TEST_TMP/bom" .ai-loop/agents/fixer.md
commit_all "$R" "byte order marks"
run "$AILOOP" run "fix with a byte order mark"
expect_rc 0 "a run with byte order marks completes"
expect_eq "$(cat todo.txt)" "" "the agent file's command ran"

# --- a NUL byte in the task ----------------------------------------------------------------
printf 'fix\0this\n' >"$TEST_TMP/nul.txt"
run "$AILOOP" run --new --task-file "$TEST_TMP/nul.txt"
expect_rc 64 "a task file with a NUL byte is refused"
expect_in "$err" "ailoop: error: the task contains a NUL byte" "says the task has a NUL byte"
run sh -c "printf 'fix\\0this' | '$AILOOP' run --new -"
expect_rc 64 "a task on stdin with a NUL byte is refused"
expect_in "$err" "ailoop: error: the task contains a NUL byte" "says the stdin task has a NUL byte"

# --- a child's task file ends in a newline -----------------------------------------------
R=$TEST_TMP/newline
loop_repo "$R" a b
cat >"$R/.ai-loop/agents/reader.md" <<'MD'
---
name: reader
command: while read -r line; do echo "$line"; done <"$AILOOP_TASK_FILE" >>"$SEEN"; sh .ai-loop/agents/fix.sh
---
Reads its task with while read.
MD
two_loops "$R" reader.md "" "" .ai-loop/agents/planner.md
commit_all "$R"
cd "$R"
export SEEN=$TEST_TMP/seen
run "$AILOOP" run "fix both"
expect_rc 0 "a two-level run completes"
expect_in "$(cat "$SEEN")" "- b" "an agent reading its task with while read sees the last line"
expect_eq "$(tail -c1 .ai-loop/runs/run_*/nodes/outer/inner/task.md | od -An -c | tr -d ' ')" '\n' \
	"the child's task.md ends in a newline"

# --- an agent's summary with escape sequences: not on the terminal, not in the commit ----
R=$TEST_TMP/escapes
new_repo "$R"
command_agents "$R" 'test -f done' 'touch done; printf "\\033]0;owned\\007\\033[2Jfixed\\rFAKE: all passed\\n"'
one_loop "$R" act.md
commit_all "$R"
cd "$R"
run "$AILOOP" run "fix"
expect_rc 0 "an agent that prints escape sequences: the run completes"
printf '%s' "$err" | grep -q "$(printf '[\033\007\r]')" && fail "a control character reached the terminal" || pass
expect_in "$err" "fixed FAKE: all passed" "the summary, its control characters as spaces"
git log --format=%s | grep -q "$(printf '[\033\007\r]')" && fail "a control character reached a commit subject" || pass

finish
