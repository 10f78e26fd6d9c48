#!/usr/bin/env bash
# ailoop writes a run's state only inside the repository, where git records
# it: a symbolic link in its place (.ai-loop, .ai-loop/runs, a run's
# directory, its lock) is refused with exit 66 and the link's name, and the
# place it points to is left exactly as it was. Agent files outside the
# repository are refused by `run` as by `validate` (exit 65), and never
# reach an agent.
. "$(dirname "$0")/lib.sh"

export GATE=$TEST_TMP/gate STARTED=$TEST_TMP/started
OUT=$TEST_TMP/outside

# snapshot DIR: every file below DIR with its content, to compare later
snapshot() {
	(cd "$1" && find . -print | LC_ALL=C sort && find . -type f -exec cat {} +)
}

# repo NAME: a repository with a one-level loop, ready to run
repo() {
	R=$TEST_TMP/$1
	loop_repo "$R" item-1
	one_loop "$R" fixer.md "max_iterations: 2"
}

# refused WHAT LINK: the run just made was refused because LINK is a link
refused() {
	expect_rc 66 "$1: refused"
	expect_in "$err" "ailoop: error: '$2' is a symbolic link" "$1: names the link"
	expect_eq "$(snapshot "$OUT")" "$before" "$1: nothing outside the repository changed"
}

# --- .ai-loop/runs is a link out of the repository -------------------------------------
mkdir -p "$OUT/runs" && printf 'keep\n' >"$OUT/runs/keep.txt"
before=$(snapshot "$OUT")
repo runs-link
ln -s "$OUT/runs" "$R/.ai-loop/runs"
commit_all "$R"
cd "$R"
commits=$(git rev-list --count --all)
run "$AILOOP" run "fix"
refused "a linked .ai-loop/runs" ".ai-loop/runs"
expect_eq "$(git rev-list --count --all)" "$commits" "linked runs: no commit"
expect_eq "$(git branch --list 'ai-loop/*')" "" "linked runs: no branch"
expect_eq "$(git status --porcelain)" "" "linked runs: the work tree is untouched"

# --- .ai-loop is a link, inside the repository: state would not be committed ----------
repo ai-loop-link
mv "$R/.ai-loop" "$R/config"
ln -s config "$R/.ai-loop"
commit_all "$R"
cd "$R"
run "$AILOOP" validate
expect_rc 0 "a linked .ai-loop still validates"
run "$AILOOP" run "fix"
expect_rc 66 "a linked .ai-loop: refused"
expect_in "$err" "ailoop: error: '.ai-loop' is a symbolic link" "a linked .ai-loop: named"
expect_eq "$(ls config)" "$(printf 'agents\nflow.yaml')" "a linked .ai-loop: no run made"

# --- .ai-loop is a link out of the repository: its agents are outside ------------------
repo ai-loop-out
rm -rf "${OUT:?}"/*
mv "$R/.ai-loop" "$OUT/ai-loop"
ln -s "$OUT/ai-loop" "$R/.ai-loop"
commit_all "$R"
before=$(snapshot "$OUT")
cd "$R"
run "$AILOOP" run "fix"
expect_rc 65 "a .ai-loop outside: its agent files are refused"
expect_in "$err" "flow.yaml:6:13: error: agent file '.ai-loop/agents/sensor.md' is a symbolic link to '$OUT/ai-loop/agents/sensor.md', outside the repository" \
	"a .ai-loop outside: the sensor is named where the flow names it"
expect_eq "$(snapshot "$OUT")" "$before" "a .ai-loop outside: nothing there changed"
rm -rf "${OUT:?}"/*

# --- agent files outside the repository never reach an agent ---------------------------
repo agent-out
printf -- '---\nname: spy\ncommand: touch %s/spied\n---\n' "$TEST_TMP" >"$TEST_TMP/spy.md"
ln -s "$TEST_TMP/spy.md" "$R/.ai-loop/agents/spy.md"
sed -i 's|agent: .ai-loop/agents/fixer.md|agent: .ai-loop/agents/spy.md|' "$R/.ai-loop/flow.yaml"
commit_all "$R"
cd "$R"
commits=$(git rev-list --count --all)
run "$AILOOP" run "fix"
expect_rc 65 "a linked agent file: refused"
expect_in "$err" "agent file '.ai-loop/agents/spy.md' is a symbolic link to '$TEST_TMP/spy.md'" \
	"a linked agent file: named with where it leads"
sed -i 's|agent: .ai-loop/agents/spy.md|agent: ../spy.md|' .ai-loop/flow.yaml
run "$AILOOP" run --allow-dirty "fix"
expect_rc 65 "an agent path with '..': refused"
expect_in "$err" "agent file '../spy.md' is outside the repository" "'..' path: named"
[ ! -e "$TEST_TMP/spied" ] && pass || fail "no agent from outside the repository ran"
expect_eq "$(git rev-list --count --all)" "$commits" "refused agent files: no commit"

# --- a paused run whose directory or lock has become a link ----------------------------
P=$TEST_TMP/paused
loop_repo "$P" item-1
one_loop "$P" gated.md "max_iterations: 2"
commit_all "$P"
cd "$P"
touch "$GATE"
"$AILOOP" run --quiet "fix" >/dev/null 2>&1 &
pid=$!
wait_for "$STARTED" && pass || fail "the gated actuator started"
kill -INT "$pid"
wait "$pid"
rm -f "$GATE"
run_id=$(ls .ai-loop/runs | grep run_)
run_dir=.ai-loop/runs/$run_id
[ -f "$run_dir/lock" ] && pass || fail "a paused run keeps its lock file"

# copy NAME: a fresh copy of the paused repository
copy() {
	R=$TEST_TMP/$1
	cp -a "$P" "$R"
	cd "$R"
}

copy lock-link
mkdir -p "$OUT" && printf 'precious\n' >"$OUT/victim"
before=$(snapshot "$OUT")
rm "$run_dir/lock"
ln -s "$OUT/victim" "$run_dir/lock"
run "$AILOOP" resume
refused "a linked lock" "$run_dir/lock"
expect_in "$(cat "$run_dir/run-state.md")" "status: paused" "a linked lock: the run is as it was"
run "$AILOOP" status
expect_rc 0 "status with a linked lock"
expect_eq "$(snapshot "$OUT")" "$before" "status left the lock's target alone"

copy run-dir-link
rm -rf "${OUT:?}"/*
mv "$run_dir" "$OUT/run"
ln -s "$OUT/run" "$run_dir"
before=$(snapshot "$OUT")
run "$AILOOP" resume
refused "a linked run directory" "$run_dir"

# the event log is a record: a link in its place is not written through, and the
# run goes on
copy events-link
rm -rf "${OUT:?}"/*
printf 'precious\n' >"$OUT/victim"
before=$(snapshot "$OUT")
rm -f "$run_dir/events.jsonl"
ln -s "$OUT/victim" "$run_dir/events.jsonl"
run "$AILOOP" resume
expect_rc 0 "a linked event log: the run still finishes"
expect_eq "$(snapshot "$OUT")" "$before" "a linked event log: its target is untouched"

finish
