#!/usr/bin/env bash
# Past episodes in prompts: a loop's controller and actuator are given the
# episodes of earlier runs most like their task ({episodes-section}), in
# rank order (successes before failures at equal score), never those of
# their own run, within episodes.max_tokens; an unrelated episode is not
# given; `episodes:` turns it off, picks the roles and leaves failures out,
# at the top of the flow and per node; which episodes each agent was given
# is an episodes_given event.
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
export PROMPTS=$TEST_TMP/prompts AILOOP
mkdir -p "$PROMPTS"

# --- the similar episode is given, the unrelated one not ---------------------
R=$TEST_TMP/repo
episode_repo "$R" item-1 item-2
commit_all "$R"
cd "$R"
similar=$(add_episode run_20261120_100000_1 fix success "empty the todo list of parser items" \
	"empty the todo list" "removed the items one at a time with sed" \
	"the scope sensor counts the lines left")
unrelated=$(add_episode run_20261120_110000_1 deploy success \
	"publish the documentation website to production" "release version 2" \
	"UNRELATED-SUMMARY")
failed=$(add_episode run_20261120_120000_1 fix failure "empty the todo list of parser items" \
	"empty the todo list" "FAILED-ATTEMPT")
# the actuator's first call records two more: one of this very run, one of another
cat >"$TEST_TMP/hook.sh" <<HOOK
. "$FIXTURES/episodes/store.sh"
add_episode "\$AILOOP_RUN_ID" fix success "empty the todo list" "empty the todo list" \
	OWN-RUN-SUMMARY >/dev/null
EP_DATE=2026-11-27T08:00:00Z add_episode run_20261127_080000_1 fix success \
	"empty the todo list of parser items" "empty the todo list" LATE-ARRIVAL >/dev/null
HOOK
ACT_HOOK=$TEST_TMP/hook.sh run "$AILOOP" run "empty the todo list"
expect_rc 0 "a run given past episodes"
expect_not_in "$err" "episodes" "episodes that read well raise no warning"
rd=$(ls -d .ai-loop/runs/run_*)
run_id=$(basename "$rd")
first=$(cat "$PROMPTS/controller-1.md")
expect_in "$first" "Judge whether the todo list is empty.

## Past episodes

Episodes of earlier runs whose tasks are most like this one, most similar first" \
	"the controller's prompt has the section where its file names it"
expect_in "$first" "### fix (run run_20261120_100000_1, 2026-11-20T10:00:00Z): success after 2 iterations

- Task: empty the todo list of parser items
- What worked: removed the items one at a time with sed
- Controller's reasoning: the scope sensor counts the lines left" \
	"an entry says where it came from, its task and what worked"
expect_not_in "$first" "UNRELATED-SUMMARY" "an unrelated episode is not given"
expect_not_in "$first" "deploy" "nothing of the unrelated episode is given"
expect_in "$first" "- What was done: FAILED-ATTEMPT" "a failure is given, saying what was done"
s_at=$(grep -n "removed the items one at a time" "$PROMPTS/controller-1.md" | cut -d: -f1)
f_at=$(grep -n "FAILED-ATTEMPT" "$PROMPTS/controller-1.md" | cut -d: -f1)
[ -n "$s_at" ] && [ -n "$f_at" ] && [ "$s_at" -lt "$f_at" ] && pass ||
	fail "a success comes before a failure of the same score ($s_at, $f_at)"
expect_in "$(cat "$PROMPTS/actuator-1.md")" "removed the items one at a time with sed" \
	"the actuator (an action) is given them too"
last=$(cat "$PROMPTS/controller-2.md")
expect_in "$last" "LATE-ARRIVAL" "an episode recorded during the run is given at the next call"
expect_not_in "$last" "OWN-RUN-SUMMARY" "an episode of the run itself is never given"
late=$(grep -n "LATE-ARRIVAL" "$PROMPTS/controller-2.md" | cut -d: -f1)
s_at=$(grep -n "removed the items one at a time" "$PROMPTS/controller-2.md" | cut -d: -f1)
[ -n "$late" ] && [ -n "$s_at" ] && [ "$late" -lt "$s_at" ] && pass ||
	fail "of two episodes of the same score the newer comes first ($late, $s_at)"
ev=$(jq -c 'select(.event == "episodes_given" and .label == "1" and .role == "controller")
	| [.node, .agent, (.ids | join(" ")), (.bytes > 0)]' "$rd/events.jsonl")
expect_eq "$ev" "[\"fix\",\".ai-loop/agents/judge.md\",\"$similar $failed\",true]" \
	"an episodes_given event names the node, the agent and the episodes given"
expect_eq "$(jq -r 'select(.event == "episodes_given") | .role' "$rd/events.jsonl" | sort -u |
	tr '\n' ' ')" "actuator controller " "each agent given episodes has its event"
expect_eq "$(jq -r 'select(.event == "episodes_given") | .ids[]' "$rd/events.jsonl" |
	grep -c "$unrelated")" "0" "no event names the unrelated episode"
expect_eq "$(git for-each-ref --format='%(refname)' refs/ailoop/)" "refs/ailoop/episodes" \
	"the run leaves the episode store as it found it"

# --- the budget ----------------------------------------------------------
cd "$TEST_TMP"
R2=$TEST_TMP/repo2
episode_repo "$R2" item-1
sed -i '1a episodes: {max_tokens: 150}' "$R2/.ai-loop/flow.yaml"
commit_all "$R2"
cd "$R2"
long=$(printf 'step %.0s' $(seq 1 30))
EP_DATE=2026-11-21T10:00:00Z add_episode run_20261121_100000_1 fix success \
	"empty the todo list" "empty the todo list" "FIRST-FIT $long" >/dev/null
EP_DATE=2026-11-22T10:00:00Z add_episode run_20261122_100000_1 fix success \
	"empty the todo list" "empty the todo list" "SECOND-FIT $long" >/dev/null
rm -f "$PROMPTS"/*
run "$AILOOP" run "empty the todo list"
expect_rc 0 "a run with a small episode budget"
rd=$(ls -d .ai-loop/runs/run_*)
p=$(cat "$PROMPTS/controller-1.md")
expect_in "$p" "SECOND-FIT" "the best episode fills the budget first"
expect_not_in "$p" "FIRST-FIT" "an episode past the budget is not given"
bytes=$(jq -r 'select(.event == "episodes_given" and .role == "controller") | .bytes' \
	"$rd/events.jsonl" | head -n 1)
[ -n "$bytes" ] && [ "$bytes" -le 600 ] && [ "$bytes" -gt 300 ] && pass ||
	fail "the section stays within max_tokens * 4 bytes (150 tokens): $bytes"
section=$(sed -n '/^## Past episodes/,/^Nothing more/p' "$PROMPTS/controller-1.md" | sed '$d')
[ "$(printf '%s' "$section" | sed -e :a -e '/^\n*$/{$d;N;ba' -e '}' | wc -c)" -le 600 ] && pass ||
	fail "the section in the prompt is within the budget"

# a budget too small for a single entry: no section, no event
sed -i 's/max_tokens: 150/max_tokens: 20/' .ai-loop/flow.yaml
commit_all "$R2"
rm -f "$PROMPTS"/*
printf 'item-1\n' >todo.txt && commit_all "$R2"
run "$AILOOP" run --new "empty the todo list"
expect_rc 0 "a run whose budget fits no episode"
expect_not_in "$(cat "$PROMPTS/controller-1.md")" "Past episodes" \
	"no section when not one episode fits"
expect_in "$(cat "$PROMPTS/controller-1.md")" "Judge whether the todo list is empty.

Nothing more." "an empty section leaves no trace in the prompt"

# --- episodes: off, per node, roles, failures -------------------------------
cd "$TEST_TMP"
R3=$TEST_TMP/repo3
episode_repo "$R3" item-1
sed -i '1a episodes: {enabled: false}' "$R3/.ai-loop/flow.yaml"
commit_all "$R3"
cd "$R3"
run "$AILOOP" run "empty the todo list"
expect_rc 0 "a run without a store of episodes"
expect_not_in "$err" "episodes" "a repository without episodes: no word of them"
add_episode run_20261120_100000_1 fix success "empty the todo list" "empty the todo list" \
	"SUCCESS-SUMMARY" >/dev/null
add_episode run_20261120_120000_1 fix failure "empty the todo list" "empty the todo list" \
	"FAILURE-SUMMARY" >/dev/null
rm -f "$PROMPTS"/*
printf 'item-1\n' >todo.txt && commit_all "$R3"
run "$AILOOP" run --new "empty the todo list"
expect_rc 0 "a run of a flow with episodes off"
rd=$(ls -dt .ai-loop/runs/run_* | head -n 1)
expect_not_in "$(cat "$PROMPTS/controller-1.md" "$PROMPTS/actuator-1.md")" "Past episodes" \
	"enabled: false gives no section"
expect_eq "$(grep -c episodes_given "$rd/events.jsonl")" "0" "enabled: false gives no event"

# the node turns them on again, for its controller only, successes only
sed -i 's/^  id: fix$/  id: fix\n  episodes: {enabled: true, roles: [controller], include_failures: false}/' \
	.ai-loop/flow.yaml
run "$AILOOP" validate
expect_rc 0 "a node's episodes: validates"
printf 'item-1\n' >todo.txt && commit_all "$R3"
rm -f "$PROMPTS"/*
run "$AILOOP" run --new "empty the todo list"
expect_rc 0 "a run whose node turns episodes on"
expect_in "$(cat "$PROMPTS/controller-1.md")" "SUCCESS-SUMMARY" "a node's enabled: true overrides the top's"
expect_not_in "$(cat "$PROMPTS/controller-1.md")" "FAILURE-SUMMARY" \
	"include_failures: false leaves failures out"
expect_not_in "$(cat "$PROMPTS/actuator-1.md")" "Past episodes" \
	"roles: [controller] gives the actuator none"

finish
