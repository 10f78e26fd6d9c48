#!/usr/bin/env bash
# `ailoop episodes list/show/forget`: the list (all, one node's, --json),
# an episode shown whole, forgetting by id, by date and by run (a commit
# "forget <n> episodes" on the ref, whose history keeps them), and the
# errors: an unknown id (66, nothing forgotten), a bad date or command line
# (64), a repository without episodes (an empty list). A task with tabs,
# newlines and escape sequences stays one line of nine fields in the index
# and reaches the terminal as text.
. "$(dirname "$0")/lib.sh"

T=$TEST_TMP
new_repo "$T/r"
scripted_agents "$T/r" action
cat >"$T/r/.ai-loop/flow.yaml" <<'YAML'
version: 1
flow:
  id: main
  type: sequence
  children:
    - {id: first, skill: one}
    - {id: second, skill: two}
YAML
printf 'case $skill in one) creates one.txt ;; two) creates two.txt ;; esac\n' >"$T/plan"
export PLAN=$T/plan
unset TRAIL
commit_all "$T/r"
cd "$T/r" || exit 1

run "$AILOOP" episodes list
expect_rc 0 "list without episodes"
expect_eq "$out" "" "an empty list"
run "$AILOOP" episodes list --json
expect_eq "$out" "[]" "an empty JSON list"
run "$AILOOP" episodes show 0123456789ab
expect_rc 66 "show without episodes"
run "$AILOOP" episodes forget --run run_x
expect_rc 0 "forget without episodes"
expect_eq "$out" "forgot 0 episodes" "nothing to forget"

"$AILOOP" run --quiet "$(printf 'first\ttask\nwith \033[31mcolour')" >/dev/null 2>&1
git checkout -q main
sleep 1.1 # the second run's episodes end a second later at least
"$AILOOP" run --quiet "second task" >/dev/null 2>&1
git checkout -q main
runs=$(ls .ai-loop/runs 2>/dev/null; git for-each-ref --format='%(refname)' refs/heads/ai-loop)
index=$(git show refs/ailoop/episodes:index.tsv | sed 1d)
expect_eq "$(printf '%s\n' "$index" | awk -F'\t' '{ print NF }' | sort -u)" 9 "nine fields a line"
expect_eq "$(printf '%s\n' "$index" | sed -n 3p | cut -f8)" "$(printf 'first task with \033[31mcolour')" \
	"tabs and newlines of a goal are spaces"
run1=$(printf '%s\n' "$index" | sed -n 1p | cut -f2)
run2=$(printf '%s\n' "$index" | sed -n 4p | cut -f2)

run "$AILOOP" episodes list
expect_rc 0 "list"
expect_eq "$(printf '%s\n' "$out" | wc -l)" 6 "six episodes"
expect_eq "$(printf '%s\n' "$out" | sed -n 3p | awk '{ print $3, $4 }')" "success main" \
	"a line: id, date, outcome, node, run, goal"
expect_not_in "$out" "$(printf '\033')" "no escape sequence reaches the terminal"
run "$AILOOP" episodes list --node main/second --json
expect_eq "$(jq -r '.[] | "\(.node) \(.run) \(.outcome) \(.type)"' <<<"$out")" \
	"main/second $run1 success action
main/second $run2 success action" "--node keeps one node's, as JSON"
first=$(printf '%s\n' "$index" | sed -n 1p | cut -f1)
run "$AILOOP" episodes show "$first"
expect_rc 0 "show"
expect_eq "$(jq -r '"\(.id) \(.node) \(.outcome) \(.steps | length)"' <<<"$out")" \
	"$first main/first success 1" "the episode as JSON"

# errors: nothing is written
tip=$(git rev-parse refs/ailoop/episodes)
run "$AILOOP" episodes show 0123456789ab
expect_rc 66 "show of an unknown id"
expect_in "$err" "no episode '0123456789ab'" "it names the id"
run "$AILOOP" episodes forget "$first" 0123456789ab
expect_rc 66 "forget of an unknown id among known ones"
expect_eq "$(git rev-parse refs/ailoop/episodes)" "$tip" "nothing is forgotten"
run "$AILOOP" episodes forget --before yesterday
expect_rc 64 "a bad date"
run "$AILOOP" episodes forget
expect_rc 64 "forget of nothing"
run "$AILOOP" episodes forget "$first" --run "$run1"
expect_rc 64 "ids and --run at once"
run "$AILOOP" episodes show
expect_rc 64 "show without an id"
run "$AILOOP" episodes show "$first" --json
expect_rc 64 "--json to show"
run "$AILOOP" episodes search x
expect_rc 0 "search is a subcommand"
run "$AILOOP" episodes frobnicate
expect_rc 64 "an unknown subcommand"
expect_in "$err" "unknown episodes command 'frobnicate' (list, show, search or forget)" \
	"names the subcommands"
run "$AILOOP" episodes
expect_rc 64 "no command"
expect_eq "$(git rev-parse refs/ailoop/episodes)" "$tip" "none of them wrote"

# forget by id: a commit of the ref without it, whose history keeps it
run "$AILOOP" episodes forget "$first"
expect_rc 0 "forget an id"
expect_eq "$out" "forgot 1 episode" "it says how many"
expect_eq "$(git log -1 --format=%s refs/ailoop/episodes)" "forget 1 episodes" "the commit"
expect_eq "$(git rev-parse refs/ailoop/episodes~1)" "$tip" "on top of the last"
expect_eq "$(git show refs/ailoop/episodes:index.tsv | grep -c "^$first" || true)" 0 "its line is gone"
git cat-file -e "refs/ailoop/episodes:runs/$run1/$first.json" 2>/dev/null &&
	fail "its file is still there" || pass
git cat-file -e "refs/ailoop/episodes~1:runs/$run1/$first.json" && pass ||
	fail "the history of the ref keeps it"
run "$AILOOP" episodes show "$first"
expect_rc 66 "a forgotten episode is not shown"

# by date: those that ended before the second run's first
date2=$(printf '%s\n' "$index" | sed -n 4p | cut -f6)
run "$AILOOP" episodes forget --before "$date2"
expect_eq "$out" "forgot 2 episodes" "--before forgets the first run's other two"
expect_eq "$(git show refs/ailoop/episodes:index.tsv | sed 1d | cut -f2 | sort -u)" "$run2" \
	"the second run's are left"
git cat-file -e "refs/ailoop/episodes:runs/$run1" 2>/dev/null && fail "the first run's folder stays" || pass
run "$AILOOP" episodes forget --before 2000-01-01
expect_eq "$out" "forgot 0 episodes" "none before 2000"
expect_eq "$(git log -1 --format=%s refs/ailoop/episodes)" "forget 2 episodes" "no commit for none"

# by run, from a subdirectory
mkdir -p sub && cd sub
run "$AILOOP" episodes forget --run "$run2"
expect_eq "$out" "forgot 3 episodes" "--run forgets a run's"
expect_eq "$(git show refs/ailoop/episodes:index.tsv)" "# ailoop episodes v1" "the index is left empty"
run "$AILOOP" episodes list --json
expect_eq "$out" "[]" "and the list"
finish
