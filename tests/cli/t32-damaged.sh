#!/usr/bin/env bash
# Resume refuses what it cannot continue exactly, says why and what to do,
# and loses nothing committed: a changed flow (unless --force), a truncated
# or hand-edited run-state.md, a deleted node directory, an agent that
# deletes the run directory, the flow or an agent file the flow names.
# Each time the run can then be finished.
. "$(dirname "$0")/lib.sh"

export GATE=$TEST_TMP/gate STARTED=$TEST_TMP/started

# A two-level run paused while the inner actuator works, and its reference.
P=$TEST_TMP/paused
loop_repo "$P" a b
two_loops "$P" gated.md
commit_all "$P"
cp -a "$P" "$TEST_TMP/reference"
(cd "$TEST_TMP/reference" && "$AILOOP" run --quiet "fix" >/dev/null)
ref_triples=$(triples "$TEST_TMP/reference")
ref_tree=$(code_tree "$TEST_TMP/reference")
cd "$P"
touch "$GATE"
rm -f "$STARTED"
"$AILOOP" run --quiet "fix" >/dev/null 2>&1 &
pid=$!
wait_for "$STARTED" && pass || fail "the inner actuator started"
kill -INT "$pid"
wait "$pid"
rm -f "$GATE"
run_id=$(ls .ai-loop/runs | grep run_)
run_dir=.ai-loop/runs/$run_id

# copy NAME: a fresh copy of the paused repository to damage
copy() {
	R=$TEST_TMP/$1
	cp -a "$P" "$R"
	cd "$R"
}

finishes() {
	run "$AILOOP" resume
	expect_rc 0 "$1: resume finishes"
	expect_eq "$(triples "$R")" "$ref_triples" "$1: the history is whole"
	expect_eq "$(code_tree "$R")" "$ref_tree" "$1: the tree is the reference's"
	run git fsck --strict
	expect_rc 0 "$1: fsck"
}

# --- a changed flow is refused unless --force ----------------------------------------
copy changed
sed -i 's/^flow:/description: edited\nflow:/' .ai-loop/flow.yaml
run "$AILOOP" resume
expect_rc 65 "changed flow"
expect_in "$err" ".ai-loop/flow.yaml changed since run $run_id started" "names the flow"
expect_in "$err" "--force" "names --force"
expect_in "$(cat "$run_dir/run-state.md")" "status: paused" "the refused resume changed nothing"
run "$AILOOP" resume --force
expect_rc 0 "resume --force with a changed flow"
expect_in "$(git show "HEAD:$run_dir/run-state.md")" \
	"flow-sha256: $(sha256sum .ai-loop/flow.yaml | cut -c1-64)" "the new flow is recorded"

# --- a truncated run-state.md ----------------------------------------------------
copy truncated
head -c 60 "$run_dir/run-state.md" >"$TEST_TMP/cut" && mv "$TEST_TMP/cut" "$run_dir/run-state.md"
run "$AILOOP" resume
expect_rc 65 "truncated run-state.md"
expect_in "$err" "$run_dir/run-state.md" "names the file"
expect_in "$err" "git checkout HEAD -- $run_dir && ailoop resume $run_id" "says what to do"
run "$AILOOP" resume "$run_id"
expect_rc 65 "truncated run-state.md, by id"
run "$AILOOP" status "$run_id"
expect_rc 65 "status of a damaged run"
git checkout HEAD -- "$run_dir"
finishes "truncated"

# --- a hand-edited run-state.md --------------------------------------------------------
copy edited
sed -i 's/^status: paused/status: sleeping/' "$run_dir/run-state.md"
run "$AILOOP" resume "$run_id"
expect_rc 65 "hand-edited status"
expect_in "$err" "run-state.md' is damaged: unknown status 'sleeping'" "names the bad value"
sed -i 's/^status: sleeping/status: paused/; /^- /d; s/^execution-stack:$/execution-stack: outer/' \
	"$run_dir/run-state.md"
run "$AILOOP" resume "$run_id"
expect_rc 65 "hand-edited stack"
expect_in "$err" "'execution-stack' is not a list" "names the bad stack"
git checkout HEAD -- "$run_dir"
finishes "edited"

# --- a truncated task ------------------------------------------------------------
copy task
printf -- '- ' >"$run_dir/nodes/outer/inner/task.md"
run "$AILOOP" resume
expect_rc 65 "truncated task.md"
expect_in "$err" "nodes/outer/inner/task.md' is damaged: it is not the task node 'outer/inner' was given" \
	"names the task file"
git checkout HEAD -- "$run_dir"
finishes "task"

# --- a deleted node directory ---------------------------------------------------------
copy deleted
rm -rf "$run_dir/nodes/outer/inner"
run "$AILOOP" resume
expect_rc 65 "deleted node directory"
expect_in "$err" "$run_dir/nodes/outer/inner/orchestrator-output.md' does not hold the state of node 'outer/inner'" \
	"names the missing state"
expect_in "$err" "git checkout HEAD -- $run_dir" "says what to do"
git checkout HEAD -- "$run_dir"
finishes "deleted"

# --- an agent deletes .ai-loop/runs while the run goes on -------------------------------
R=$TEST_TMP/deleter
loop_repo "$R" a b
one_loop "$R" deleter.md
commit_all "$R"
cd "$R"
run "$AILOOP" run "fix"
expect_rc 65 "an agent deleted the run directory"
expect_in "$err" "the run's directory '.ai-loop/runs/run_" "names what was deleted"
expect_in "$err" "was deleted while it ran" "says what happened"
run_id=$(git show HEAD --name-only --format= | sed -n 's|^.ai-loop/runs/\(run_[0-9_]*\)/.*|\1|p' | head -1)
expect_in "$err" "git checkout HEAD -- .ai-loop/runs/$run_id" "says how to restore it"
expect_eq "$(triples "$R")" "0 fix running" "what was committed is still there"
git checkout HEAD -- ".ai-loop/runs/$run_id"
sed -i 's/deleter.md/fixer.md/' .ai-loop/flow.yaml
run "$AILOOP" resume --force
expect_rc 0 "the restored run finishes"
expect_eq "$(triples "$R" | tail -1)" "2 fix complete" "to the end"
expect_eq "$(cat todo.txt)" "" "with every item fixed"
run git fsck --strict
expect_rc 0 "fsck after the deletion"

# --- an agent deletes .ai-loop whole: the advice restores the flow and agents too --------
R=$TEST_TMP/wiper
loop_repo "$R" a b
cat >"$R/.ai-loop/agents/wiper.md" <<'MD'
---
name: wiper
command: 'sh .ai-loop/agents/fix.sh; rm -rf .ai-loop'
---
MD
one_loop "$R" wiper.md
commit_all "$R"
cd "$R"
run "$AILOOP" run "fix"
expect_rc 65 "an agent deleted .ai-loop"
run_id=$(git show HEAD --name-only --format= | sed -n 's|^.ai-loop/runs/\(run_[0-9_]*\)/.*|\1|p' | head -1)
restore=$(printf '%s\n' "$err" | grep -o 'git checkout HEAD -- .* &&' | sed 's/ &&$//')
expect_in "$restore" ".ai-loop/runs/$run_id" "the advice restores the run's directory"
expect_in "$restore" ".ai-loop/flow.yaml" "and the flow"
expect_in "$restore" ".ai-loop/agents" "and the agents"
eval "$restore"
expect_eq "$(git status --porcelain -- .ai-loop)" "" "followed, it restores all of .ai-loop"
sed -i 's/wiper.md/fixer.md/' .ai-loop/flow.yaml
run "$AILOOP" resume --force
expect_rc 0 "the restored run finishes"
expect_eq "$(cat todo.txt)" "" "with every item fixed"

# --- an agent deletes the flow alone: the resume says where it is --------------------------
R=$TEST_TMP/noflow
loop_repo "$R" a
cat >"$R/.ai-loop/agents/noflow.md" <<MD
---
name: noflow
command: '[ -e "$TEST_TMP/noflow.once" ] || { touch "$TEST_TMP/noflow.once"; rm .ai-loop/flow.yaml; exit 1; }; sh .ai-loop/agents/fix.sh'
---
MD
one_loop "$R" noflow.md
commit_all "$R"
cd "$R"
run "$AILOOP" run "fix"
expect_rc 1 "an agent that deleted the flow failed"
run_id=$("$AILOOP" status --json | jq -r .run_id)
run "$AILOOP" resume "$run_id"
expect_rc 66 "the resume without its flow: exit 66"
# (the step's error was committed with the deletion: the flow is where the run started)
start=$(git log --format=%H --grep='^\[run-start\] true' -1)
expect_in "$err" "the run's flow is in the commit it started on: git checkout $start -- .ai-loop/flow.yaml && ailoop resume $run_id" \
	"it says where git has the flow, and how to restore it"
restore=$(printf '%s\n' "$err" | grep -o 'git checkout .* &&' | sed 's/ &&$//')
eval "$restore"
expect_eq "$(git status --porcelain -- .ai-loop/flow.yaml)" "A  .ai-loop/flow.yaml" "followed, it brings the flow back"
run "$AILOOP" resume "$run_id"
expect_rc 0 "the flow restored, the resume completes"
expect_eq "$(cat todo.txt)" "" "with every item fixed"
# variant NAME EDIT: in $TEST_TMP/NAME ($R), a one-level loop whose actuator
# is the noflow agent above edited by sed EDIT, with a once-file of its own
variant() {
	R=$TEST_TMP/$1
	loop_repo "$R" a
	sed "s|noflow.once|$1.once|g; $2" "$TEST_TMP/noflow/.ai-loop/agents/noflow.md" \
		>"$R/.ai-loop/agents/noflow.md"
	one_loop "$R" noflow.md
}

# fails_once WHAT: $R committed, its run fails at the actuator's first try
fails_once() {
	commit_all "$R"
	cd "$R"
	run "$AILOOP" run "fix"
	expect_rc 1 "$1"
}

# the flow deleted after the step's commit: HEAD has it
variant noflow-head "s|rm .ai-loop/flow.yaml; ||"
fails_once "an agent that failed once"
rm .ai-loop/flow.yaml
run "$AILOOP" resume "$("$AILOOP" status --json | jq -r .run_id)"
expect_rc 66 "the resume without its flow, which HEAD has: exit 66"
expect_in "$err" "the run's flow is in its last commit: git checkout HEAD -- .ai-loop/flow.yaml" \
	"it says HEAD has the flow"

# a flow git never had (ignored), gone with an agent file git has: the
# flow cannot be restored, so no advice restores the rest alone
variant noflow-ignored "s|rm .ai-loop/flow.yaml|rm .ai-loop/flow.yaml .ai-loop/agents/sensor.md|"
echo .ai-loop/flow.yaml >>"$R/.git/info/exclude"
fails_once "an agent that deleted an ignored flow and the sensor's file failed"
run "$AILOOP" resume "$("$AILOOP" status --json | jq -r .run_id)"
expect_rc 66 "the resume without a flow git never had: exit 66"
expect_not_in "$err" "git checkout" "no advice names a flow git does not have"

# --- an agent deletes an agent file the flow names: the resume says where it is ---------------
variant nosensor "s|rm .ai-loop/flow.yaml|rm .ai-loop/agents/sensor.md|"
fails_once "an agent that deleted the sensor's file failed"
run_id=$("$AILOOP" status --json | jq -r .run_id)
run "$AILOOP" resume "$run_id"
expect_rc 65 "the resume without the sensor's file: exit 65"
expect_in "$err" ".ai-loop/flow.yaml:6:13: error: agent file '.ai-loop/agents/sensor.md' does not exist" \
	"the flow's diagnostic names the file"
start=$(git log --format=%H --grep='^\[run-start\] true' -1)
expect_in "$err" "the run's files the flow names are in the commit it started on: git checkout $start -- .ai-loop/agents/sensor.md && ailoop resume $run_id" \
	"it says where git has the file, and only what the flow names"
restore=$(printf '%s\n' "$err" | grep -o 'git checkout .* &&' | sed 's/ &&$//')
eval "$restore"
run "$AILOOP" resume "$run_id"
expect_rc 0 "the file restored, the resume completes"
expect_eq "$(cat todo.txt)" "" "with every item fixed"
# the agents' directory gone after the step's commit: HEAD has it, named once
variant noagents "s|rm .ai-loop/flow.yaml; ||"
fails_once "an agent that failed once"
rm -r .ai-loop/agents
run "$AILOOP" resume "$("$AILOOP" status --json | jq -r .run_id)"
expect_rc 65 "the resume without the agents' directory, which HEAD has: exit 65"
expect_in "$err" "the run's files the flow names are in its last commit: git checkout HEAD -- .ai-loop/agents && ailoop resume" \
	"it says HEAD has the directory"

finish
