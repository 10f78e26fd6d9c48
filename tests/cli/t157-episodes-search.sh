#!/usr/bin/env bash
# `ailoop episodes search TEXT` ranks the recorded episodes as agents are
# given them, with their scores (`ailoop episodes search`;
# `ailoop episodes` dispatches to it); `ailoop status` and the report say
# which episodes each agent of a run was given.
. "$(dirname "$0")/lib.sh"
. "$FIXTURES/episodes/store.sh"
search() { run "$AILOOP" episodes search "$@"; }

R=$TEST_TMP/repo
loop_repo "$R" item-1
cp "$FIXTURES"/episodes/judge.* "$FIXTURES"/episodes/act.* "$R/.ai-loop/agents/"
one_loop "$R" act.md "max_iterations: 5" .ai-loop/agents/judge.md
commit_all "$R"
cd "$R"

search parser tests
expect_rc 0 "a search without episodes"
expect_eq "$out" "" "nothing is listed without episodes"
expect_in "$err" "no episode matches 'parser tests' (no episodes are recorded)" "and it says so"

old=$(EP_DATE=2026-11-20T10:00:00Z add_episode run_20261120_100000_1 fix success \
	"make the parser tests pass" "fix the parser" "rewrote the tokenizer")
new=$(EP_DATE=2026-11-21T10:00:00Z add_episode run_20261121_100000_1 fix failure \
	"make the parser tests pass" "fix the parser" "gave up")
docs=$(add_episode run_20261121_110000_1 docs success "write the user guide" "document it" \
	"wrote it")
long=$(EP_DATE=2026-11-22T10:00:00Z add_episode run_20261122_100000_1 "fix/inner" success \
	"the parser tests pass again after the lexer handles empty input and long lines" \
	"fix the parser" "handled empty input")
search parser tests
expect_rc 0 "a search"
expect_eq "$(awk 'NR % 2 == 1 {print $2, $3}' <<<"$out" | tr '\n' ' ')" \
	"$old success $new failure $long success " \
	"best first: shorter goals outrank longer ones, successes failures at equal score; the unrelated is left out"
expect_in "$out" "$old  success  2026-11-20T10:00:00Z  fix (run_20261120_100000_1)
         make the parser tests pass" "each hit: score, id, outcome, date, node (run), then its goal"
first=$(awk 'NR == 1 {print $1}' <<<"$out")
third=$(awk 'NR == 5 {print $1}' <<<"$out")
awk -v a="$first" -v b="$third" 'BEGIN { exit !(a + 0 > b + 0 && b + 0 > 0) }' && pass ||
	fail "scores fall with the rank ($first, $third)"

search --json parser tests
expect_rc 0 "a search as JSON"
expect_eq "$(jq -r '.[] | "\(.id) \(.outcome) \(.run) \(.node) \(.iterations)"' <<<"$out" | tr '\n' ' ')" \
	"$old success run_20261120_100000_1 fix 2 $new failure run_20261121_100000_1 fix 2 $long success run_20261122_100000_1 fix/inner 2 " \
	"--json: every hit with the index's fields"
expect_eq "$(jq -r '.[0] | [.goal, .root_task, .type, .date] | join("|")' <<<"$out")" \
	"make the parser tests pass|fix the parser|loop|2026-11-20T10:00:00Z" "--json: goal, root task, type, date"
expect_eq "$(jq -r '[.[].score] | (.[0] >= .[1] and .[1] >= .[2] and .[2] > 0)' <<<"$out")" "true" \
	"--json: the scores, best first"

search --limit 1 parser
expect_eq "$(grep -c . <<<"$out")" "2" "--limit 1 lists one episode"
search --limit 0 parser
expect_rc 64 "--limit 0 is a usage error"
expect_in "$err" "--limit must be a number from 1 to 1000000, not '0'" "and says why"
search
expect_rc 64 "search needs its text"
search --json the and of
expect_eq "$out" "[]" "words every task has match nothing"

# --- status and the report ---------------------------------------------------
export PROMPTS=$TEST_TMP/prompts AILOOP
mkdir -p "$PROMPTS"
run "$AILOOP" run "fix the parser"
expect_rc 0 "a run given episodes"
# the query of the loop's agents: its task, its path, the run's task
search --json "fix the parser" fix "fix the parser"
# the run has just recorded its own episode, which its agents could not be given
given=$(jq -r --arg run "$(ls .ai-loop/runs | grep '^run_' | tail -1)" \
	'[.[] | select(.run != $run) | .id] | join(", ")' <<<"$out")
expect_eq "$given" "$old, $new, $long" "the run's ranking, from search"
run "$AILOOP" status
expect_in "$out" "  episodes:     fix controller: $given (" \
	"status names the episodes the controller was given"
expect_in "$out" "  episodes:     fix actuator: $given (" "and the actuator's"
expect_eq "$(grep -c '^  episodes:' <<<"$out")" "2" "a line per agent"
run "$AILOOP" status --json
expect_eq "$(jq -r '.episodes_given[] | "\(.node) \(.role) \(.ids | length) \(.bytes > 0)"' <<<"$out" |
	tr '\n' ' ')" "fix controller 3 true fix actuator 3 true " "status --json: episodes_given"
run "$AILOOP" report --format md -o "$TEST_TMP/report.md"
expect_rc 0 "a report"
expect_in "$(cat "$TEST_TMP/report.md")" "| episodes | fix controller: $given (" \
	"the Markdown report says which episodes each agent was given"
run "$AILOOP" report -o "$TEST_TMP/report.html"
expect_in "$(cat "$TEST_TMP/report.html")" "<tr><th>episodes</th><td>fix actuator: $given (" \
	"and the HTML report"

finish
