#!/usr/bin/env bash
# Past episodes are read from the store as it is on disk at each prompt:
# when `git gc` or `git repack` moves them into a pack while a run goes on,
# the next prompt still has them, what worked included; an episode whose
# file's object is missing is given without it, and an index whose object
# is missing is a damaged store, a warning once, the run going on.
. "$(dirname "$0")/lib.sh"
. "$FIXTURES/episodes/store.sh"

# episode_repo DIR ITEM...: a loop `fix` whose controller (judge) and
# actuator (act) name {episodes-section} and keep their prompts in $PROMPTS
episode_repo() {
	local dir=$1
	loop_repo "$@"
	cp "$FIXTURES"/episodes/judge.* "$FIXTURES"/episodes/act.* "$dir/.ai-loop/agents/"
	one_loop "$dir" act.md "max_iterations: 5" .ai-loop/agents/judge.md
}
export AILOOP
# hide OBJECT / unhide: its loose file moved away for a while (finish checks
# the repository whole)
hide() { local o; o=$(git rev-parse "$1"); hidden=.git/objects/${o:0:2}/${o:2}; mv "$hidden" "$TEST_TMP/hidden"; }
unhide() { mv "$TEST_TMP/hidden" "$hidden"; }

# --- packed while the run goes on ----------------------------------------------
R=$TEST_TMP/repo
episode_repo "$R" item-1 item-2
commit_all "$R"
cd "$R"
add_episode run_20261120_100000_1 fix success "empty the todo list of parser items" \
	"empty the todo list" "removed the items one at a time with sed" >/dev/null
expect_eq "$(git count-objects -v | sed -n 's/^in-pack: //p')" 0 "the store is loose at first"
# the actuator's first call packs every object and removes the loose ones
printf 'git repack -a -d -q\n' >"$TEST_TMP/repack.sh"
export PROMPTS=$TEST_TMP/packed
mkdir -p "$PROMPTS"
ACT_HOOK=$TEST_TMP/repack.sh run "$AILOOP" run "empty the todo list"
expect_rc 0 "a run whose objects were packed after its first prompts"
expect_not_in "$err" "episodes" "no warning"
expect_eq "$(git count-objects -v | sed -n 's/^in-pack: //p' | grep -c '^[1-9]')" 1 \
	"the agent packed the store"
expect_in "$(cat "$PROMPTS/controller-1.md")" \
	"- What worked: removed the items one at a time with sed" "read loose"
expect_in "$(cat "$PROMPTS/controller-2.md")" \
	"- What worked: removed the items one at a time with sed" "and read again once packed"
expect_in "$(cat "$PROMPTS/actuator-2.md")" \
	"- What worked: removed the items one at a time with sed" "the actuator's too"

# --- an episode's file whose object is missing ----------------------------------
R=$TEST_TMP/repo2
episode_repo "$R" item-1
commit_all "$R"
cd "$R"
id=$(add_episode run_20261120_100000_1 fix success "empty the todo list of parser items" \
	"empty the todo list" "GONE-SUMMARY")
hide "refs/ailoop/episodes:runs/run_20261120_100000_1/$id.json"
export PROMPTS=$TEST_TMP/nofile
mkdir -p "$PROMPTS"
run "$AILOOP" run "empty the todo list"
expect_rc 0 "a run whose episode's file is missing"
first=$(cat "$PROMPTS/controller-1.md")
expect_in "$first" "### fix (run run_20261120_100000_1, " "the episode is given"
expect_in "$first" "- Task: empty the todo list of parser items" "with its task"
expect_not_in "$first" "GONE-SUMMARY" "without what its file would have said"
unhide

# --- an index whose object is missing --------------------------------------------
R=$TEST_TMP/repo3
episode_repo "$R" item-1 item-2
commit_all "$R"
cd "$R"
add_episode run_20261120_100000_1 fix success "empty the todo list of parser items" \
	"empty the todo list" "A-SUMMARY" >/dev/null
hide refs/ailoop/episodes:index.tsv
export PROMPTS=$TEST_TMP/noindex
mkdir -p "$PROMPTS"
run "$AILOOP" run "empty the todo list"
expect_rc 0 "a run whose episode index is missing"
expect_eq "$(grep -c "warning: episodes are left out: refs/ailoop/episodes is damaged: 'index.tsv' is not in" <<<"$err")" \
	1 "one warning, however many prompts"
expect_not_in "$(cat "$PROMPTS/controller-1.md")" "Past episodes" "no section"
expect_not_in "$(cat "$PROMPTS/actuator-1.md")" "Past episodes" "no section for the actuator"
unhide

finish
