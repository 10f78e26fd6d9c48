#!/usr/bin/env bash
# Episodic memory end to end: a first run records its loop's episode under
# refs/ailoop/episodes, and a second run of a similar task, started later
# from the base branch, gives its controller and actuator that episode in
# their prompts ({episodes-section}); and the episode outlives the first
# run's branch.
. "$(dirname "$0")/lib.sh"

R=$TEST_TMP/repo
loop_repo "$R" item-1 item-2
cp "$FIXTURES"/episodes/judge.* "$FIXTURES"/episodes/act.* "$R/.ai-loop/agents/"
one_loop "$R" act.md "max_iterations: 5" .ai-loop/agents/judge.md
commit_all "$R"
cd "$R"
export AILOOP

export PROMPTS=$TEST_TMP/first
mkdir -p "$PROMPTS"
run "$AILOOP" run "empty the todo list of parser items"
expect_rc 0 "the first run"
first_run=$(ls .ai-loop/runs | grep '^run_')
expect_not_in "$(cat "$PROMPTS/controller-1.md")" "## Past episodes" \
	"the first run has no episode to be given"
expect_eq "$(git show refs/ailoop/episodes:index.tsv | sed 1d | cut -f2,3,5 | tr '\t' ' ')" \
	"$first_run fix success" "the first run recorded its loop's episode"
git checkout -q main
git branch -D -q "$(git for-each-ref --format='%(refname:short)' refs/heads/ai-loop/)"

export PROMPTS=$TEST_TMP/second
mkdir -p "$PROMPTS"
run "$AILOOP" run "empty the todo list"
expect_rc 0 "the second run, its first run's branch deleted"
second=$(cat "$PROMPTS/controller-1.md")
expect_in "$second" "## Past episodes" "the second run's controller is given past episodes"
expect_in "$second" "### fix (run $first_run, " "the first run's episode, where it came from"
expect_in "$second" "): success after " "how it ended"
expect_in "$second" "- Task: empty the todo list of parser items" "and its task"
expect_in "$(cat "$PROMPTS/actuator-1.md")" "### fix (run $first_run, " "the actuator is given it too"

finish
