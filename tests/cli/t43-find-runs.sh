#!/usr/bin/env bash
# Finding runs where they are: a --no-branch run on a detached HEAD killed
# with SIGKILL resumes; `ailoop log RUN-ID` and `ailoop status` on the base
# branch find a run on its ai-loop/* branch; `ailoop log` in a shallow clone
# shows what the clone holds and says what is missing. A run whose branch
# was renamed is refused with the way to name it back. A run's id is not
# one a run on another branch has; a branch in the way of the run's is
# refused before anything is written; two --no-branch runs on one branch
# each have their own log and report.
. "$(dirname "$0")/lib.sh"

export GATE=$TEST_TMP/gate STARTED=$TEST_TMP/started

# --- --no-branch on a detached HEAD, killed mid-run, resumes ---------------------------
R=$TEST_TMP/detached
loop_repo "$R" a b
one_loop "$R" gated.md
commit_all "$R"
cd "$R"
git checkout -q --detach
start=$(git rev-parse HEAD)
touch "$GATE"
rm -f "$STARTED"
"$AILOOP" run --no-branch "fix all" >"$TEST_TMP/out" 2>"$TEST_TMP/err" &
pid=$!
wait_for "$STARTED" && pass || fail "the detached run is at work"
expect_in "$(cat "$TEST_TMP/err")" "on a detached HEAD" "the run says it is on a detached HEAD"
kill -KILL "$pid"
wait "$pid" 2>/dev/null
# the gate opens once the resumed actuator waits at it: the orphan never acts
"$AILOOP" resume >"$TEST_TMP/out" 2>"$TEST_TMP/err" &
pid=$!
i=0
while [ "$(wc -l <"$STARTED")" -lt 2 ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i + 1)); done
rm -f "$GATE"
wait "$pid" && rc=0 || rc=$?
out=$(cat "$TEST_TMP/out") err=$(cat "$TEST_TMP/err")
expect_rc 0 "a --no-branch run on a detached HEAD resumes after SIGKILL"
expect_in "$out" "(detached HEAD)" "the outcome says it is on no branch"
expect_eq "$(labels "$R")" "0 1 2 3" "its history is whole"
expect_eq "$(git rev-parse --abbrev-ref HEAD)" "HEAD" "HEAD stays detached"
expect_eq "$(git rev-list --count "$start"..HEAD)" 4 "the commits are on top of where it started"
expect_eq "$(git branch --list 'ai-loop/*')" "" "no branch was made"
expect_eq "$(git status --porcelain)" "" "clean tree after the resume"
run "$AILOOP" log "$(ls .ai-loop/runs | grep '^run_')" --oneline
expect_rc 0 "log of the detached run"
expect_in "$out" "target met" "log shows its last commit"

# --- log RUN-ID and status from the base branch ------------------------------------
R=$TEST_TMP/base
loop_repo "$R" a b
one_loop "$R" fixer.md
commit_all "$R"
cd "$R"
run "$AILOOP" run --quiet "fix all"
expect_rc 0 "the run"
id=$(ls .ai-loop/runs | grep '^run_')
git checkout -q main
[ ! -e ".ai-loop/runs/$id/run-state.md" ] && pass || fail "the run's state is not on main"
run "$AILOOP" log "$id" --oneline
expect_rc 0 "log RUN-ID on the base branch"
expect_eq "$(printf '%s\n' "$out" | awk '{print $2}' | tr '\n' ' ')" "0 1 2 3 " \
	"log RUN-ID shows the run's commits from its branch"
expect_not_in "$err" "lost" "log RUN-ID does not say the state is lost"
run "$AILOOP" log --oneline
expect_rc 0 "log on the base branch, which has no ailoop commits"
expect_eq "$(printf '%s\n' "$out" | awk '{print $2}' | tr '\n' ' ')" "0 1 2 3 " \
	"log on the base branch shows the run status shows, from its branch"
run "$AILOOP" status
expect_rc 0 "status on the base branch"
expect_in "$out" "run $id: complete" "status finds the run on its branch"
expect_in "$out" "read from:    the last commit of ai-loop/fix-all" "status says where it read it"
expect_in "$out" "fix                              3" "status shows the run's nodes"
run "$AILOOP" status "$id" --json
expect_rc 0 "status RUN-ID --json on the base branch"
expect_eq "$(printf '%s\n' "$out" | jq -r .from_branch)" "ai-loop/fix-all" "from_branch names the branch"
expect_eq "$(printf '%s\n' "$out" | jq -r '.nodes[0].status')" "complete" "the node's state from the branch"
run "$AILOOP" status run_20000101_001
expect_rc 66 "status of a run that is nowhere"
expect_in "$err" "no run 'run_20000101_001'" "status names the missing run"
run "$AILOOP" log run_20000101_001
expect_rc 66 "log of a run that is nowhere"

# on the run's own branch, a state file that is missing is damage, not elsewhere
git checkout -q ai-loop/fix-all
rm ".ai-loop/runs/$id/run-state.md"
run "$AILOOP" status "$id"
expect_rc 65 "status of a run whose state is missing on its own branch"
expect_in "$err" "the run's state is lost" "status says the state is lost"
expect_not_in "$out" "read from" "status does not read the branch it is on as elsewhere"
git checkout -q -- .ai-loop
git checkout -q main

# a run merged into the base branch is here; a newer one on its branch wins
git merge -q --no-edit ai-loop/fix-all
printf 'c\n' >>todo.txt
commit_all "$R" "more to do"
run "$AILOOP" run --new --quiet "fix more"
expect_rc 0 "the second run"
id2=$(git show HEAD:.ai-loop/runs --name-only | grep -v "^$id" | grep '^run_' | tr -d /)
git checkout -q main
run "$AILOOP" status
expect_in "$out" "run $id2: complete" "status shows the newest run, on its branch"
run "$AILOOP" status "$id"
expect_in "$out" "run $id: complete" "status of the merged run reads the work tree"
expect_not_in "$out" "read from" "the merged run is read from the work tree"

# --- log in a shallow clone ---------------------------------------------------------
git clone -q --depth 1 --branch ai-loop/fix-all "file://$R/.git" "$TEST_TMP/shallow" 2>/dev/null
cd "$TEST_TMP/shallow"
run "$AILOOP" log --oneline
expect_rc 0 "log in a clone of depth 1"
expect_in "$out" "3          fix — target met" "the clone's commit is shown"
expect_in "$err" "this clone is shallow" "log says the history is cut"
expect_in "$err" "git fetch --unshallow" "log says how to get the rest"
run "$AILOOP" log "$id"
expect_rc 0 "log RUN-ID in a clone of depth 1"
run "$AILOOP" status
expect_rc 0 "status in a shallow clone"
git clone -q --depth 30 --branch ai-loop/fix-all "file://$R/.git" "$TEST_TMP/deep" 2>/dev/null
cd "$TEST_TMP/deep"
run "$AILOOP" log --oneline
expect_rc 0 "log in a clone deep enough"
expect_eq "$(printf '%s\n' "$out" | awk '{print $2}' | tr '\n' ' ')" "0 1 2 3 " "the whole run"
expect_not_in "$err" "shallow" "no note when the run is whole"

# --- the run's branch renamed while it was paused ------------------------------------
R=$TEST_TMP/renamed
loop_repo "$R" a b
one_loop "$R" fixer.md
commit_all "$R"
cd "$R"
cp -a "$R" "$TEST_TMP/renamed-ref"
(cd "$TEST_TMP/renamed-ref" &&
	AILOOP_CRASH_LOG="$TEST_TMP/renamed-points" "$AILOOP" run --quiet "fix all" >/dev/null 2>&1)
# killed just after its second commit (a kill leaves it as a pause does)
at=$(grep -n ' committed$' "$TEST_TMP/renamed-points" | sed -n 2p | cut -d: -f1)
(AILOOP_CRASH_AT=$at "$AILOOP" run --quiet "fix all" >/dev/null 2>&1)
git branch -m ai-loop/fix-all mine
run "$AILOOP" resume
expect_rc 66 "a renamed branch: refused"
expect_in "$err" "the run's branch 'ai-loop/fix-all' does not exist, and HEAD is on branch 'mine'" \
	"a renamed branch: what is wrong"
expect_in "$err" "name it back with 'git branch -m mine ai-loop/fix-all'" "a renamed branch: the way out"
git checkout -q --detach
run "$AILOOP" resume
expect_rc 66 "a renamed branch, on a detached HEAD: refused"
expect_in "$err" "the run's branch 'ai-loop/fix-all' does not exist (and HEAD is not on its base branch 'main')" \
	"a renamed branch, on a detached HEAD: what is wrong"
git checkout -q mine
git branch -m mine ai-loop/fix-all
run "$AILOOP" resume
expect_rc 0 "named back: the resume completes"
expect_eq "$(triples "$R")" "$(triples "$TEST_TMP/renamed-ref")" "named back: the run's history"

# --- a run id taken on another branch is not free ------------------------------------
R=$TEST_TMP/ids
new_repo "$R"
command_agents "$R" 'test -f fixed' 'touch fixed'
one_loop "$R" act.md
commit_all "$R"
git -C "$R" worktree add -q "$TEST_TMP/ids-wt" -b other
(cd "$TEST_TMP/ids-wt" && "$AILOOP" run --quiet "first task" >/dev/null 2>&1)
cd "$R"
run "$AILOOP" run --quiet "second task"
expect_rc 0 "a second run, beside the first one's worktree"
first=$(git ls-tree --name-only ai-loop/first-task .ai-loop/runs/ | grep run_)
second=$(git ls-tree --name-only ai-loop/second-task .ai-loop/runs/ | grep run_)
[ -n "$first" ] && [ "$first" != "$second" ] && pass ||
	fail "the run on another branch keeps its id: the new run has another ($first, $second)"

# --- a branch in the way of the run's: refused, nothing written ------------------------
R=$TEST_TMP/in-the-way
new_repo "$R"
command_agents "$R" 'test -f fixed' 'touch fixed'
one_loop "$R" act.md
commit_all "$R"
cd "$R"
git branch ai-loop
run "$AILOOP" run "fix it"
expect_rc 64 "a branch named ai-loop: the run is refused"
expect_in "$err" "the branch 'ai-loop' is in the way of the run's branch 'ai-loop/fix-it': git cannot have both; rename it ('git branch -m ai-loop NEW') or run with --no-branch" \
	"a branch named ai-loop: which, and what to do"
expect_eq "$(git status --porcelain)" "" "a branch named ai-loop: nothing is written"
git branch -D -q ai-loop
git branch ai-loop/fix-it/sub
run "$AILOOP" run --quiet "fix it"
expect_rc 0 "a branch below the run's name: the run takes the next name"
expect_eq "$(git branch --show-current)" "ai-loop/fix-it-2" "a branch below the run's name: ai-loop/fix-it-2"

# --- two --no-branch runs on one branch: each its own log and report -------------------
R=$TEST_TMP/shared-branch
new_repo "$R"
command_agents "$R" 'test -f fixed' 'touch fixed'
one_loop "$R" act.md
commit_all "$R"
cd "$R"
run "$AILOOP" run --quiet --no-branch "one"
expect_rc 0 "the first --no-branch run"
one=$(git log -1 --format=%B | sed -n 's/^\[run\] //p')
git rm -q fixed && git commit -q -m undo
run "$AILOOP" run --quiet --no-branch "two"
expect_rc 0 "the second --no-branch run, on the same branch"
run "$AILOOP" log "$one" --oneline
expect_eq "$(printf '%s\n' "$out" | cut -d' ' -f1 | tr '\n' ' ')" \
	"$(git log --format=%h --abbrev=9 --reverse --grep="^\[run\] $one\$" | tr '\n' ' ')" \
	"log of the first run: its own commits, not the second's above them"
run "$AILOOP" report "$one" --format md -o "$TEST_TMP/one.md"
expect_in "$(cat "$TEST_TMP/one.md")" "| iterations | 3 |" "report of the first run: its iterations"
expect_not_in "$(cat "$TEST_TMP/one.md")" "git merge main" "report of a run on its base branch: nothing to merge"

finish
