#!/usr/bin/env bash
# Two runs in two worktrees of one repository record their episodes at the
# same moment: each, having read refs/ailoop/episodes, waits for the other
# to have read it too (a hook of test builds), so one of them finds the ref
# moved, reads it again and retries. Both runs' episodes land, once each, in
# one chain without merges; the runs' ids are alike (each work tree numbers
# its own), their episodes' ids are not.
. "$(dirname "$0")/lib.sh"

T=$TEST_TMP
new_repo "$T/main"
scripted_agents "$T/main" action
cat >"$T/main/.ai-loop/flow.yaml" <<'YAML'
version: 1
flow:
  id: main
  type: sequence
  children:
    - {id: first, skill: one}
    - {id: second, skill: two}
YAML
cat >"$T/plan" <<'PLAN'
case $skill in
one) creates one.txt ;;
two) creates two.txt ;;
esac
PLAN
export PLAN=$T/plan
unset TRAIL
commit_all "$T/main"
git -C "$T/main" worktree add -q -b left "$T/left"
git -C "$T/main" worktree add -q -b right "$T/right"
mkdir "$T/meet"

export AILOOP_TEST_EPISODE_MEET=$T/meet:2
(cd "$T/left" && "$AILOOP" run --quiet "task left" >"$T/left.out" 2>&1; echo $? >"$T/left.rc") &
(cd "$T/right" && "$AILOOP" run --quiet "task right" >"$T/right.out" 2>&1; echo $? >"$T/right.rc") &
wait
unset AILOOP_TEST_EPISODE_MEET
expect_eq "$(cat "$T/left.rc") $(cat "$T/right.rc")" "0 0" "both runs succeed"
expect_not_in "$(cat "$T/left.out" "$T/right.out")" "episode" "neither says anything of episodes"
expect_eq "$(ls "$T/left/.ai-loop/runs")" "$(ls "$T/right/.ai-loop/runs")" \
	"each work tree numbered its run alike"
[ "$(grep -c . "$T/meet/retries" 2>/dev/null)" -ge 1 ] && pass ||
	fail "no writer found the ref moved"

cd "$T/main" || exit 1
index=$(git show refs/ailoop/episodes:index.tsv | sed 1d)
expect_eq "$(printf '%s\n' "$index" | cut -f3,9 | LC_ALL=C sort | tr '\t\n' '| ')" \
	"main|task left main|task right main/first|task left main/first|task right main/second|task left main/second|task right " \
	"each run's three episodes are in the index"
expect_eq "$(printf '%s\n' "$index" | cut -f1 | sort -u | wc -l)" 6 "six ids, all different"
expect_eq "$(git rev-list refs/ailoop/episodes | wc -l) $(git rev-list --merges refs/ailoop/episodes | wc -l)" \
	"6 0" "one commit per episode, in one chain"
for id in $(printf '%s\n' "$index" | cut -f1); do
	run=$(printf '%s\n' "$index" | awk -F'\t' -v id="$id" '$1 == id { print $2 }')
	git cat-file -e "refs/ailoop/episodes:runs/$run/$id.json" 2>/dev/null && pass ||
		fail "episode $id has no file"
done
# the worktrees' runs are listed from any work tree
run "$AILOOP" episodes list
expect_rc 0 "list from the main work tree"
expect_eq "$(printf '%s\n' "$out" | wc -l)" 6 "six episodes listed"
finish
