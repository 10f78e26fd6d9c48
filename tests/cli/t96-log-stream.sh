#!/usr/bin/env bash
# `ailoop log` starts from the run's first commit, which run-state.md
# records (start-commit), and prints every iteration in order as it reads
# it; when that record is missing or wrong, it walks the history as before
# and prints the same.
. "$(dirname "$0")/lib.sh"

T=$TEST_TMP
loop_repo "$T/nested" a b c
two_loops "$T/nested" fixer.md
commit_all "$T/nested"
cd "$T/nested"
run "$AILOOP" run --quiet "fix all"
expect_rc 0 "the nested run completes"
state=$(ls -d .ai-loop/runs/run_*)/run-state.md
start=$(git log --format=%H --grep='^\[run-start\] true' -1)
expect_eq "$(sed -n 's/^start-commit: //p' "$state")" "$start" \
	"run-state.md records the run's first commit"
expect_eq "$(git show HEAD:"$state" | sed -n 's/^start-commit: //p')" "$start" \
	"the run's last commit holds that record"

# every ailoop commit, oldest first: "label node-path" as git shows them
want=$(git log --reverse --format=%B | awk '/^\[node-path\] /{p=$2} /^\[iteration\] /{print $2, p}')
oneline() { "$AILOOP" log --oneline | awk '{print $2, $3}'; }
run "$AILOOP" log --oneline
expect_rc 0 "log --oneline"
expect_eq "$(printf '%s\n' "$out" | awk '{print $2, $3}')" "$want" \
	"log prints every iteration, oldest first"
expect_eq "$(printf '%s\n' "$out" | head -1 | cut -d' ' -f1)" "${start:0:9}" \
	"log's first line is the run's first commit"
text=$("$AILOOP" log)
json=$("$AILOOP" log --json)
expect_eq "$(printf '%s' "$json" | jq -r '.[] | "\(.label) \(.node_path)"')" "$want" \
	"log --json holds every iteration, oldest first"
expect_eq "$(printf '%s' "$json" | jq -r '.[0].commit')" "$start" "log --json starts at the first commit"
inner_json=$("$AILOOP" log --json --node outer/inner)
expect_eq "$(printf '%s' "$inner_json" | jq -r '.[] | .node_path' | sort -u)" "outer/inner" \
	"log --json --node leaves out the root's commits, the first one too"
expect_eq "$(printf '%s' "$inner_json" | jq length)" "$(printf '%s\n' "$want" | grep -c ' outer/inner$')" \
	"log --json --node keeps every commit of the child"
run "$AILOOP" log --json --node nothing/here
expect_eq "$out" "[]" "log --json of a node without commits is an empty array"
printf '%s' "$json" | jq -e 'type == "array"' >/dev/null && pass || fail "log --json is a JSON array"

# the same, read by the walk: the record removed from the last commit (amended)
cp -a "$T/nested" "$T/walked"
cd "$T/walked"
sed -i '/^start-commit: /d' "$state"
git add -A && git commit -q --amend --no-edit
expect_eq "$(oneline)" "$want" "without the record, log walks the history and prints the same"
expect_eq "$("$AILOOP" log --json | jq -c 'map(del(.commit, .time))' | sha256sum)" \
	"$(printf '%s' "$json" | jq -c 'map(del(.commit, .time))' | sha256sum)" \
	"without the record, log --json is the same"
expect_eq "$("$AILOOP" log | grep -v '^ *commit ')" "$(printf '%s\n' "$text" | grep -v '^ *commit ')" \
	"without the record, the text log is the same"

# a record that names another commit (history rewritten): not trusted
cp -a "$T/nested" "$T/wrong"
cd "$T/wrong"
sed -i "s/^start-commit: .*/start-commit: $(git rev-parse main)/" "$state"
git add -A && git commit -q --amend --no-edit
expect_eq "$(oneline)" "$want" "a record naming a commit that is not the run's first is not trusted"
sed -i "s/^start-commit: .*/start-commit: not-a-commit/" "$state"
git add -A && git commit -q --amend --no-edit
expect_eq "$(oneline)" "$want" "a record that is not a commit id is not trusted"

# an agent's commit on top of the run's: log starts from the same first commit
cd "$T/nested"
echo more >more.txt
git add more.txt && git commit -q -m "an agent's own commit"
expect_eq "$(oneline)" "$want" "an agent's commit on top leaves the log as it was"

# a second run on the same branch: its log holds its own commits only
cd "$T/nested"
printf 'd\n' >>todo.txt
git add -A && git commit -q -m "one more item"
run "$AILOOP" run --quiet --new "fix the rest"
expect_rc 0 "a second run completes"
second=$(git log --format=%H --grep='^\[run-start\] true' -1)
expect_eq "$("$AILOOP" log --oneline | head -1 | cut -d' ' -f1)" "${second:0:9}" \
	"the second run's log starts at its own first commit"
expect_eq "$("$AILOOP" log --json | jq -r '.[].commit' | grep -c "^${start}$")" 0 \
	"the second run's log leaves out the first run's commits"

# a run of one commit (a single action): the record is not written after
# it, so the work tree is clean and the log shows the one commit
R=$T/single
new_repo "$R"
mkdir -p "$R/.ai-loop/agents"
printf -- '---\nname: act\ncommand: echo hi >out.txt\n---\n' >"$R/.ai-loop/agents/act.md"
printf 'version: 1\nflow:\n  id: one\n  type: action\n  agent: .ai-loop/agents/act.md\n' \
	>"$R/.ai-loop/flow.yaml"
commit_all "$R"
cd "$R"
run "$AILOOP" run --quiet "act once"
expect_rc 0 "a run of one commit completes"
expect_eq "$(git status --porcelain)" "" "a run of one commit leaves the work tree clean"
expect_eq "$("$AILOOP" log --oneline | wc -l)" 1 "its log shows its one commit"

# run_start, run_state: the first commit and the run-state.md of the run here
run_start() { git log --format=%H --grep='^\[run-start\] true' -1; }
run_state() { echo "$(ls -d .ai-loop/runs/run_*)/run-state.md"; }
# expect_recorded WHAT: the last commit's run-state.md records the run's first commit
expect_recorded() {
	expect_eq "$(git show HEAD:"$(run_state)" | sed -n 's/^start-commit: //p')" "$(run_start)" "$1"
}

# count_repo DIR KILL: a counting loop to 9 whose agent kills ailoop
# (SIGKILL) once the count reaches KILL
count_repo() {
	new_repo "$1"
	mkdir -p "$1/.ai-loop/agents"
	echo 0 >"$1/count"
	printf -- "---\nname: count\ncommand: 'c=\$(cat count); echo \"count \$c\"; test \$c -ge 9'\n---\n" \
		>"$1/.ai-loop/agents/sensor.md"
	printf -- "---\nname: step\ncommand: 'c=\$(cat count); [ \$c -lt %s ] || kill -9 \$PPID; echo \$((c + 1)) >count'\n---\n" \
		"$2" >"$1/.ai-loop/agents/step.md"
	one_loop "$1" step.md "max_iterations: 9"
	commit_all "$1"
	cd "$1"
}

# a run killed in its fourth iteration: run-state.md is not written at
# every iteration, but the second commit already carries the record
count_repo "$T/killed" 3
run "$AILOOP" run --quiet "count"
expect_rc 137 "the counting run is killed by its agent"
expect_recorded "a killed run's last commit records its first commit"
expect_eq "$("$AILOOP" log --oneline | head -1 | cut -d' ' -f1)" "$(run_start | cut -c1-9)" \
	"the killed run's log starts at its first commit"

# killed right after its first commit, before any record: the resume
# finds that commit, and its next commit carries the record
count_repo "$T/early-ref" 99
AILOOP_CRASH_LOG="$T/early-points" "$AILOOP" run --quiet "count" >/dev/null 2>&1
point=$(grep -m1 ' committed$' "$T/early-points" | cut -d' ' -f1)
count_repo "$T/early" 99
AILOOP_CRASH_AT=$point run "$AILOOP" run --quiet "count"
expect_rc 137 "a run killed right after its first commit"
expect_eq "$(git log --format=%H -1)" "$(run_start)" "the killed run has its first commit only"
expect_eq "$(sed -n 's/^start-commit: //p' "$(run_state)")" "" "the killed run has no record yet"
run "$AILOOP" resume
expect_rc 0 "its resume completes"
expect_recorded "the resumed run's commits record its first commit"

# a run begun by the children of a parallel node (other processes): the
# root's own commit records the first one
R=$T/children-first
new_repo "$R"
mkdir -p "$R/.ai-loop/agents"
printf -- '---\nname: a\ncommand: echo a >a.txt\n---\n' >"$R/.ai-loop/agents/a.md"
printf -- '---\nname: b\ncommand: echo b >b.txt\n---\n' >"$R/.ai-loop/agents/b.md"
cat >"$R/.ai-loop/flow.yaml" <<'YAML'
version: 1
flow:
  id: top
  type: parallel
  isolation: shared
  children:
  - {id: a, agent: .ai-loop/agents/a.md}
  - {id: b, agent: .ai-loop/agents/b.md}
YAML
commit_all "$R"
cd "$R"
run "$AILOOP" run --quiet "both"
expect_rc 0 "a parallel root's run completes"
expect_eq "$(git log -1 --format=%H "$(run_start)" --grep='^\[node-path\] top/')" "$(run_start)" \
	"a child made the run's first commit"
expect_recorded "the root's commit records the child's first commit"

finish
