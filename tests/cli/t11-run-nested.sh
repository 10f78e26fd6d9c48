#!/usr/bin/env bash
# Nested loops: the exact order of (label, node-path) pairs for two and
# three levels, the child's task is the parent's action plan verbatim, the
# parent re-measures after every child, and sensors_parallel measures at once.
. "$(dirname "$0")/lib.sh"

# plan_section FILE: the "## Action Plan" section without its blank edges
plan_section() {
	awk '/^## /{ if (on) exit; if ($0 == "## Action Plan") { on = 1; next } } on' |
		sed -e '/./,$!d' | sed -e ':a' -e '/^\n*$/{$d;N;ba' -e '}'
}

# --- two levels ------------------------------------------------------------
R=$TEST_TMP/two
loop_repo "$R" a b c
cat >"$R/.ai-loop/flow.yaml" <<'YAML'
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
commit_all "$R"
cd "$R"
run "$AILOOP" run "deliver everything"
expect_rc 0 "two-level run"
expect_eq "$(label_paths "$R")" "0 delivery, 1.0 delivery/implement, 1.1 delivery/implement, \
1.2 delivery/implement, 1.3 delivery/implement, 1 delivery, 2.0 delivery/implement, \
2.1 delivery/implement, 2.2 delivery/implement, 2 delivery, 3 delivery" "two-level order"
expect_eq "$(git log --format=%s -1 HEAD~9)" \
	"ai-loop[delivery > implement]: iteration 1.0 — initial entry (sensors skipped)" \
	"child entry subject"
expect_eq "$(git log --format=%B -1 HEAD~9 | sed -n 's/^\[sensors\] //p')" "scope: pending" \
	"child entry has pending sensors"
expect_eq "$(git log --format=%B -1 HEAD~9 | sed -n 's/^\[level\] //p')" "1" "child level"
run_dir=$(ls -d .ai-loop/runs/run_*)
# at every child entry, the child's task file is the parent's plan, verbatim
for rev in $(git log --format=%H --grep='initial entry'); do
	plan=$(git show "$rev:$run_dir/nodes/delivery/controller-output.md" | plan_section)
	task=$(git show "$rev:$run_dir/nodes/delivery/implement/task.md")
	expect_eq "$task" "$plan" "child task equals the parent's action plan at ${rev:0:7}"
done
expect_eq "$(git show "HEAD~9:$run_dir/nodes/delivery/implement/task.md")" "- a
- b" "first action plan"
# after every child, the parent measured again: its count is the tree's
for rev in $(git log --format=%H --grep='^\[node-path\] delivery$'); do
	left=$(git show "$rev:todo.txt" | grep -c . || true)
	expect_eq "$(git log --format=%B -1 "$rev" | sed -n 's/^\[sensors\] //p')" \
		"scope: $([ "$left" -eq 0 ] && echo pass || echo fail) (remaining=$left)" \
		"parent measurement at $(git log --format=%B -1 "$rev" | sed -n 's/^\[iteration\] //p')"
done
expect_eq "$(git log --format=%s -1 HEAD~1)" \
	"ai-loop[delivery]: iteration 2 — implement: complete after 1 iteration" \
	"parent commit after the child names its result"
[ -f "$run_dir/nodes/delivery/implement/result-output.md" ] && pass ||
	fail "child result-output.md"
expect_in "$(cat "$run_dir/nodes/delivery/implement/result-output.md")" \
	"parent-node-path: delivery" "child result names its parent"
expect_in "$(cat "$run_dir/nodes/delivery/logs/controller.prompt.md")" \
	"implement/result-output.md" "parent controller is shown the child's result"
run git fsck --strict
expect_rc 0 "git fsck after two levels"
run "$AILOOP" log --json
expect_eq "$(printf '%s\n' "$out" | jq -r '.[].label' | tr '\n' ' ')" \
	"0 1.0 1.1 1.2 1.3 1 2.0 2.1 2.2 2 3 " "log --json labels"
run "$AILOOP" log --node delivery/implement --oneline
expect_eq "$(printf '%s\n' "$out" | wc -l)" 7 "log --node keeps one node"
run "$AILOOP" log --node implement
expect_rc 66 "log --node with a node's id, not its path"
expect_in "$err" "no commit of node 'implement' in the run" "the node is named"
expect_in "$err" "the root here is 'delivery'" "and how paths begin"
run "$AILOOP" log --node delivery/implement/x --json
expect_rc 66 "log --json --node of no node"
expect_eq "$out" "[]" "log --json stays JSON"

# --- three levels, parallel sensors at the root --------------------------------
R=$TEST_TMP/three
loop_repo "$R" a b c
export RENDEZVOUS=$TEST_TMP/rv
mkdir -p "$RENDEZVOUS"
three_loops "$R"
# the root measures with two more sensors, all at once
sed -i 's|^  sensors: \[\(.*\)\]$|  sensors: [\1, .ai-loop/agents/meet-a.md, .ai-loop/agents/meet-b.md]\n  sensors_parallel: true|' \
	"$R/.ai-loop/flow.yaml"
commit_all "$R"
cd "$R"
run "$AILOOP" run "release it"
expect_rc 0 "three-level run"
expect_eq "$(label_paths "$R")" "0 release, 1.0 release/feature, 1.1.0 release/feature/step, \
1.1.1 release/feature/step, 1.1.2 release/feature/step, 1.1 release/feature, \
1.2.0 release/feature/step, 1.2.1 release/feature/step, 1.2.2 release/feature/step, \
1.2 release/feature, 1.3 release/feature, 1 release, 2.0 release/feature, \
2.1.0 release/feature/step, 2.1.1 release/feature/step, 2.1.2 release/feature/step, \
2.1 release/feature, 2.2 release/feature, 2 release, 3 release" "three-level order"
expect_eq "$(git log --format=%s -1 HEAD~17)" \
	"ai-loop[release > feature > step]: iteration 1.1.0 — initial entry (sensors skipped)" \
	"grandchild subject shows the path"
expect_eq "$(git log --format=%B -1 HEAD~17 | sed -n 's/^\[level\] //p')" "2" "grandchild level"
expect_in "$(git log --format=%B -1 HEAD | sed -n 's/^\[sensors\] //p')" \
	"scope: pass (remaining=0), meet-a: pass, meet-b: pass" "parallel sensors met each other"
run_dir=$(ls -d .ai-loop/runs/run_*)
expect_eq "$(git show "HEAD~17:$run_dir/nodes/release/feature/step/task.md")" "- a" \
	"grandchild's task is the child's plan"
expect_eq "$(git status --porcelain)" "" "clean tree after three levels"
run git fsck --strict
expect_rc 0 "git fsck after three levels"

# the same flow with sequential sensors cannot make them meet
sed -i 's/sensors_parallel: true/sensors_parallel: false/' .ai-loop/flow.yaml
git checkout -q main
R2=$TEST_TMP/three-seq
git clone -q "$R" "$R2"
cd "$R2" && git checkout -q main
sed -i 's/sensors_parallel: true/sensors_parallel: false/' .ai-loop/flow.yaml
sed -i 's/^  id: release/  id: release\n  termination: {max_iterations: 1}/' .ai-loop/flow.yaml
commit_all "$R2" "sequential sensors"
export RENDEZVOUS=$TEST_TMP/rv2
mkdir -p "$RENDEZVOUS"
run "$AILOOP" run --quiet "release it"
expect_in "$(git log --format=%B -1 main..HEAD --grep='iteration 0 ' | sed -n 's/^\[sensors\] //p')" \
	"meet-a: fail" "sequential sensors measure one at a time"

finish
