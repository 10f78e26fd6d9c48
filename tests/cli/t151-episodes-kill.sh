#!/usr/bin/env bash
# Episodes survive SIGKILL: a flow of a sequence, an action and a loop-until
# of an action is killed at every crash point of its reference run (among
# them those before and after each episode's ref update); one
# `ailoop resume` (or, killed after the run's last commit, the resume that
# finds no run to resume) must end it like the reference and leave each
# finished node's episode in the index exactly once.
. "$(dirname "$0")/lib.sh"

T=$TEST_TMP
new_repo "$T/template"
scripted_agents "$T/template" action
cat >"$T/template/.ai-loop/flow.yaml" <<'YAML'
version: 1
flow:
  id: main
  type: sequence
  children:
    - {id: first, skill: one}
    - id: rounds
      type: loop
      max_iterations: 3
      condition: {type: file_exists, path: "two-2.txt"}
      children:
        - {id: step, skill: two}
YAML
cat >"$T/plan" <<'PLAN'
case $skill in
one) creates one.txt ;;
two) creates "two-$AILOOP_ITERATION.txt" ;;
esac
PLAN
export PLAN=$T/plan
unset TRAIL
commit_all "$T/template"

# each episode's node, type, outcome and iterations, sorted, and how many
# ids are there twice (a run killed before it existed is run again: its
# run id, and so its episodes' ids, are not the reference's)
index() { git show refs/ailoop/episodes:index.tsv 2>/dev/null | sed 1d; }
episodes() {
	index | cut -f3-5,7 | sort
	echo "repeated ids: $(index | cut -f1 | sort | uniq -d | wc -l)"
}

reference_run "$T/template" "deliver it" triples
expect_eq "$ref_rc $ref_status" "0 complete" "the reference run succeeds"
ref_episodes=$(episodes)
run_id=$(ls .ai-loop/runs)
# ids: the first 12 hex digits of sha256(run \n node \n instance), the
# instance the label of the parent's iteration, the run's branch and start
state_field() { sed -n "s/^$1: '\\{0,1\\}\\([^']*\\)'\\{0,1\\}\$/\\1/p" .ai-loop/runs/"$run_id"/run-state.md; }
id_of() {
	printf '%s\n%s\n%s\n%s\n%s' "$run_id" "$1" "$2" "$(state_field branch)" "$(state_field started-at)" |
		sha256sum | cut -c1-12
}
# the root's children run in its label, "" (outside any loop)
expect_eq "$(index | cut -f1 | sort | tr '\n' ' ')" \
	"$(for e in "main/first:" "main/rounds/step:1" "main/rounds/step:2" "main/rounds:" "main:"; do
		id_of "${e%:*}" "${e#*:}"; done | sort | tr '\n' ' ')" \
	"the reference records the five nodes' episodes: the action, the loop's two entries of its child, the loop, the root"
expect_eq "$(grep -c ' episode written$' "$TEST_TMP/points") $(grep -c ' episode recorded$' "$TEST_TMP/points")" \
	"5 5" "a crash point before and after each episode's ref update"

# the history as the reference's, and each episode there once
kept_once() {
	same_history "$1" || return 1
	[ "$(episodes)" = "$ref_episodes" ] && return 0
	printf 'episodes after the resume:\n%s\n' "$(episodes)" >&2
	return 1
}
kill_each_point "$T/template" "deliver it" triples true kept_once
[ "$tried" -gt 40 ] && [ "$recovered" -eq "$tried" ] && pass ||
	fail "$recovered of $tried kill points recovered"
finish
