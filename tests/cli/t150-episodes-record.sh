#!/usr/bin/env bash
# Episodes: a nested run records one episode per finished node under
# refs/ailoop/episodes (the index's nine fields, the episode's JSON, one
# commit each, in the order the nodes ended), and nothing of them on the
# run's branch; they survive `git branch -D` of that branch and
# `git gc --prune=now`. A damaged ref (no commit, no index.tsv, a line that
# cannot be read) is a warning once, the run goes on and exits 0, and the
# ref is left as it was.
. "$(dirname "$0")/lib.sh"

nested_flow() {
	cat >"$1/.ai-loop/flow.yaml" <<'YAML'
version: 1
flow:
  id: delivery
  type: loop
  controller: .ai-loop/agents/planner.md
  sensors: [.ai-loop/agents/sensor.md]
  actuator:
    strategy: composite
    child:
      id: implement
      type: loop
      controller: builtin:all-pass
      sensors: [.ai-loop/agents/sensor.md]
      actuator: {strategy: direct, agent: .ai-loop/agents/fixer.md}
      termination: {max_iterations: 5}
  termination: {max_iterations: 5}
YAML
}

R=$TEST_TMP/nested
loop_repo "$R" a b c
nested_flow "$R"
commit_all "$R"
cd "$R" || exit 1
run "$AILOOP" run "deliver everything"
expect_rc 0 "the nested run"
run_id=$(ls .ai-loop/runs)
index=$(git show refs/ailoop/episodes:index.tsv)
expect_eq "$(printf '%s\n' "$index" | head -1)" "# ailoop episodes v1" "the index's first line"
expect_eq "$(printf '%s\n' "$index" | sed 1d | cut -f2-5,7-9 | tr '\t' '|')" \
"$run_id|delivery/implement|loop|success|2|- a - b|deliver everything
$run_id|delivery/implement|loop|success|1|- c|deliver everything
$run_id|delivery|loop|success|2|deliver everything|deliver everything" \
	"one episode per finished node, in the order they ended: the inner loop's two entries, then the root"
# ids: the first 12 hex digits of sha256(run \n node \n instance), the
# instance the label of the parent's iteration, the run's branch and start
state_field() { sed -n "s/^$1: '\\{0,1\\}\\([^']*\\)'\\{0,1\\}\$/\\1/p" .ai-loop/runs/"$run_id"/run-state.md; }
id_of() {
	printf '%s\n%s\n%s\n%s\n%s' "$run_id" "$1" "$2" "$(state_field branch)" "$(state_field started-at)" |
		sha256sum | cut -c1-12
}
expect_eq "$(printf '%s\n' "$index" | sed 1d | cut -f1 | tr '\n' ' ')" \
	"$(id_of delivery/implement 1) $(id_of delivery/implement 2) $(id_of delivery '') " \
	"each id is the hash of its run, node and instance"
bad_dates=$(printf '%s\n' "$index" | sed 1d | cut -f6 | grep -cv '^[0-9]\{4\}-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9]Z$' || true)
expect_eq "$bad_dates" 0 "each date is an ISO 8601 UTC time"
expect_eq "$(git log --format=%s refs/ailoop/episodes)" \
"episode $(id_of delivery ''): delivery of run $run_id, success
episode $(id_of delivery/implement 2): delivery/implement of run $run_id, success
episode $(id_of delivery/implement 1): delivery/implement of run $run_id, success" \
	"one commit per episode, in a chain"
expect_eq "$(git rev-list --max-parents=0 refs/ailoop/episodes | wc -l)" 1 "the chain has one root"
root=$(id_of delivery '')
json=$(git show "refs/ailoop/episodes:runs/$run_id/$root.json")
expect_eq "$(jq -r '[.id, .run, .node, .type, .goal, .root_task, .outcome, .reason, .iterations] | join("|")' <<<"$json")" \
	"$root|$run_id|delivery|loop|deliver everything|deliver everything|success|complete|2" \
	"the root's episode"
expect_eq "$(jq -r '[.steps[] | .label] | join(" ")' <<<"$json")" "0 1 2 3" \
	"its steps: its own iterations' commits"
expect_eq "$(jq -r '.steps[1] | [.action, .sensors_before, .sensors_after] | join("|")' <<<"$json")" \
	"implement: complete after 2 iterations|scope: fail (remaining=3)|scope: fail (remaining=1)" \
	"a step says what was done and what the sensors said before and after"
expect_eq "$(jq -r '.first_commit' <<<"$json")" "$(git rev-list --reverse HEAD | sed -n 3p)" \
	"its first commit is the run's first"
expect_eq "$(jq -r '.last_commit' <<<"$json")" "$(git rev-parse HEAD)" "its last commit is the run's last"
expect_eq "$(jq -r '[.agent_calls, .tokens.input, .tokens.output, .cost_usd, .flow_sha256 == ($sha)] | map(tostring) | join(" ")' \
	--arg sha "$(sha256sum .ai-loop/flow.yaml | cut -d' ' -f1)" <<<"$json")" "6 0 0 null true" \
	"agent calls (its planner, sensors, the fixer below), no tokens, an unknown cost, the flow's digest"
expect_eq "$(jq -r '.reasoning' <<<"$json")" "# Decision

Nothing left in scope." "the last controller's reasoning"
inner=$(git show "refs/ailoop/episodes:runs/$run_id/$(id_of delivery/implement 2).json")
expect_eq "$(jq -r '[.goal, .summary, (.steps | length), .agent_calls] | map(tostring) | join("|")' <<<"$inner")" \
	"- c
|fixed c|3|1" "an inner loop's episode: its task, its actuator's last summary, its steps"
expect_eq "$(jq -r '[.started, .ended] | map(test("^[0-9-]+T[0-9:]+Z$")) | all' <<<"$inner")" true \
	"start and end times"
# nothing of them on the run's branch
branch=$(git rev-parse --abbrev-ref HEAD)
expect_eq "$(git log --format=%s "$branch" | grep -c '^episode ' || true)" 0 \
	"no episode commit on the run's branch"
expect_eq "$(git ls-tree -r --name-only "$branch" | grep -c 'index.tsv\|\.json$' || true)" 0 \
	"no episode file on the run's branch"
expect_eq "$(git status --porcelain)" "" "the work tree is clean"

# the ref survives the branch's deletion and a gc that prunes everything unreachable
tip=$(git rev-parse refs/ailoop/episodes)
git checkout -q main && git branch -q -D "$branch" && git gc -q --prune=now 2>/dev/null
expect_eq "$(git rev-parse refs/ailoop/episodes)" "$tip" "the ref is where it was"
run "$AILOOP" episodes show "$root"
expect_rc 0 "an episode of the deleted branch is shown after gc"
expect_eq "$(jq -r .node <<<"$out")" delivery "its JSON is whole"
git fsck --strict --no-dangling >/dev/null 2>&1 && pass || fail "fsck after gc"

# a second run (of main's todo list again) adds its episodes to the chain
run "$AILOOP" run --quiet "deliver the rest"
expect_rc 0 "a second run"
expect_eq "$(git show refs/ailoop/episodes:index.tsv | sed 1d | cut -f2 | uniq -c | awk '{print $1}' | tr '\n' ' ')" \
	"3 3 " "the second run's three episodes follow the first run's"
expect_eq "$(git rev-parse refs/ailoop/episodes~3)" "$tip" "on top of the first run's"

# --- a node that fails: its episode says so, and why ----------------------
F=$TEST_TMP/failing
new_repo "$F"
mkdir -p "$F/.ai-loop/agents"
printf -- "---\nname: act\ncommand: 'echo broken >&2; exit 3'\n---\n" >"$F/.ai-loop/agents/act.md"
cat >"$F/.ai-loop/flow.yaml" <<'YAML'
version: 1
flow:
  id: main
  type: sequence
  children:
    - {id: step, agent: .ai-loop/agents/act.md}
YAML
commit_all "$F"
cd "$F" || exit 1
run "$AILOOP" run --quiet "break it"
expect_rc 1 "a run whose action fails"
expect_eq "$(git show refs/ailoop/episodes:index.tsv | sed 1d | cut -f3-5 | tr '\t\n' '| ')" \
	"main/step|action|failure main|sequence|failure " "the action's and the sequence's episodes are failures"
step=$(git show refs/ailoop/episodes:index.tsv | sed -n 2p | cut -f1)
run "$AILOOP" episodes show "$step"
expect_in "$(jq -r '"\(.reason) \(.summary)"' <<<"$out")" \
	"failed action '.ai-loop/agents/act.md' failed with exit status 3" "its reason and what happened"

# --- a damaged ref: a warning once, the run goes on, the ref is left alone --
damaged() { # NAME how: the run of a fresh repository whose ref is damaged so
	local name=$1 d=$TEST_TMP/$1
	loop_repo "$d" a b c
	nested_flow "$d"
	commit_all "$d"
	cd "$d" || exit 1
	case $name in
	blob) git update-ref refs/ailoop/episodes "$(echo not a commit | git hash-object -w --stdin)" ;;
	no-index) git update-ref refs/ailoop/episodes "$(git commit-tree -m x "$(git mktree </dev/null)")" ;;
	bad-line)
		printf '# ailoop episodes v1\nnot a line of nine fields\n' >"$TEST_TMP/index.tsv"
		blob=$(git hash-object -w "$TEST_TMP/index.tsv")
		tree=$(printf '100644 blob %s\tindex.tsv\n' "$blob" | git mktree)
		git update-ref refs/ailoop/episodes "$(git commit-tree -m x "$tree")" ;;
	esac
	before=$(git rev-parse refs/ailoop/episodes)
	run "$AILOOP" run --quiet "deliver everything"
	expect_rc 0 "$name: the run goes on"
	expect_eq "$(grep -c 'warning: .*episodes are not recorded' <<<"$err")" 1 "$name: one warning"
	expect_eq "$(git rev-parse refs/ailoop/episodes)" "$before" "$name: the ref is left as it was"
	expect_eq "$(git rev-parse HEAD:todo.txt)" "$(git hash-object /dev/null)" "$name: the work is done"
}
damaged blob
expect_in "$err" "'refs/ailoop/episodes' names no commit" "blob: the warning says why"
damaged no-index
expect_in "$err" "'refs/ailoop/episodes' has no index.tsv" "no-index: the warning says why"
damaged bad-line
expect_in "$err" "line 2 of index.tsv cannot be read" "bad-line: the warning says why"
run "$AILOOP" episodes list
expect_rc 65 "list of a damaged ref"
expect_in "$err" "line 2 of index.tsv cannot be read" "list says why"
# --- episodes: enabled: false, for the flow or for a node's subtree -------------------
R=$TEST_TMP/off
loop_repo "$R" a b
nested_flow "$R"
printf 'episodes:\n  enabled: false\n' >>"$R/.ai-loop/flow.yaml"
commit_all "$R"
cd "$R" || exit 1
run "$AILOOP" run "deliver everything"
expect_rc 0 "a run with episodes off"
git rev-parse -q --verify refs/ailoop/episodes >/dev/null && fail "episodes off: nothing is recorded" ||
	pass
R=$TEST_TMP/inner-off
loop_repo "$R" a b
nested_flow "$R"
sed -i 's/^      termination: {max_iterations: 5}$/&\n      episodes: {enabled: false}/' "$R/.ai-loop/flow.yaml"
commit_all "$R"
cd "$R" || exit 1
run "$AILOOP" run "deliver everything"
expect_rc 0 "a run with the inner loop's episodes off"
expect_eq "$(git show refs/ailoop/episodes:index.tsv | sed 1d | cut -f3 | tr '\n' ' ')" "delivery " \
	"the inner loop's subtree records none, the root its own"
finish
