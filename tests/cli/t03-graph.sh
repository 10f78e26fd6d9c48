#!/usr/bin/env bash
# `ailoop graph`: the flow as Mermaid (default) or Graphviz DOT. The DOT
# output must render with the real `dot`; bad formats are usage errors and
# invalid flows exit 65 without drawing anything.
. "$(dirname "$0")/lib.sh"

repo="$TEST_TMP/repo"
new_repo "$repo"
mkdir -p "$repo/.ai-loop/agents" "$repo/src/deep"
cd "$repo"

cat >.ai-loop/agents/controller.md <<'EOF'
---
name: controller
---
Decide whether the target is met.
EOF
cat >.ai-loop/agents/unit-tests.md <<'EOF'
---
name: unit-tests
command: [make, test]
---
EOF
cat >.ai-loop/agents/lint.md <<'EOF'
---
command: make lint
---
EOF
cat >.ai-loop/agents/actuator.md <<'EOF'
Change the code until the tests pass.
EOF
cat >.ai-loop/agents/action.md <<'EOF'
Do the task.
EOF

# two levels: an outer loop whose actuator is an inner loop
cat >.ai-loop/flow.yaml <<'EOF'
version: 1
flow:
  id: delivery
  type: loop
  controller: .ai-loop/agents/controller.md
  sensors: [.ai-loop/agents/unit-tests.md]
  actuator:
    strategy: composite
    child:
      id: implement
      type: loop
      controller: builtin:all-pass
      sensors:
        - .ai-loop/agents/unit-tests.md
        - .ai-loop/agents/lint.md
      actuator:
        strategy: direct
        agent: .ai-loop/agents/actuator.md
      termination: {max_iterations: 7}
  termination:
    max_iterations: 3
    timeout_seconds: 600
EOF

# --- Mermaid, the default --------------------------------------------------
run "$AILOOP" graph
expect_rc 0 "graph"
mermaid=$out
expect_eq "$(printf '%s\n' "$out" | head -1)" "flowchart TD" "mermaid header"
expect_in "$out" 'n0["delivery<br/>loop · max 3 iterations · timeout 600s"]' "outer loop vertex"
expect_in "$out" 'n1["implement<br/>loop · max 7 iterations"]' "inner loop vertex"
expect_in "$out" 'n0 -->|actuator| n1' "composite edge"
expect_in "$out" 'n0_s1[/"sensor unit-tests' "outer sensor"
expect_in "$out" 'n1_s2[/"sensor lint' "inner sensor named after its file"
expect_in "$out" 'n0_c{{"controller<br/>.ai-loop/agents/controller.md"}}' "outer controller"
expect_in "$out" 'n1_c{{"controller<br/>builtin:all-pass"}}' "builtin controller"
expect_in "$out" 'n1_a(["actuator<br/>.ai-loop/agents/actuator.md"])' "direct actuator"
expect_in "$out" 'n1 -.->|measures| n1_s1' "dashed sensor edge"
expect_eq "$err" "" "graph writes nothing to stderr"
expect_eq "$(printf '%s\n' "$out" | grep -c '^  n[0-9]*\[')" 2 "one box per node"

run "$AILOOP" graph --format mermaid
expect_rc 0 "graph --format mermaid"
expect_eq "$out" "$mermaid" "mermaid is the default"

# from a subdirectory: the repository root is found
cd src/deep
run "$AILOOP" graph
expect_rc 0 "graph from a subdirectory"
expect_eq "$out" "$mermaid" "same graph from a subdirectory"
cd "$repo"

# --- DOT, rendered by graphviz ---------------------------------------------
run "$AILOOP" graph --format dot
expect_rc 0 "graph --format dot"
dotsrc=$out
expect_in "$out" "digraph flow {" "dot header"
expect_in "$out" 'n0 -> n1 [label="actuator"];' "dot composite edge"
expect_in "$out" 'n0 -> n0_s1 [label="measures", style=dashed];' "dot dashed edge"

if command -v dot >/dev/null 2>&1; then
	printf '%s\n' "$dotsrc" >"$TEST_TMP/flow.dot"
	run dot -Tsvg "$TEST_TMP/flow.dot"
	expect_rc 0 "dot -Tsvg renders the graph"
	expect_eq "$err" "" "dot has no warnings"
	expect_in "$out" "<svg" "an SVG document"
	for id in delivery implement; do
		expect_in "$out" ">$id</text>" "SVG shows node $id"
	done
	expect_in "$out" "builtin:all&#45;pass" "SVG shows the builtin controller"
	expect_eq "$(printf '%s\n' "$out" | grep -c 'class="node"')" 8 "SVG has every vertex"
	expect_eq "$(printf '%s\n' "$out" | grep -c 'class="edge"')" 7 "SVG has every edge"
else
	fail "graphviz 'dot' is not installed (apt-get install graphviz)"
fi

# labels that need escaping still render
cat >"$TEST_TMP/odd.yaml" <<'EOF'
flow:
  id: odd
  type: sequence
  children:
    - id: quote
      skill: 'say "hi" <b>#1</b> & back\slash'
    - id: cond
      type: conditional
      condition: {key: k, operator: equals, value: 'a"b\'}
      then: {skill: x}
EOF
cp "$TEST_TMP/odd.yaml" .ai-loop/odd.yaml
run "$AILOOP" graph --flow .ai-loop/odd.yaml
expect_rc 0 "graph of escaped labels"
expect_in "$out" 'skill say #quot;hi#quot; #lt;b#gt;#35;1#lt;/b#gt; #amp; back\slash' "mermaid escapes"
expect_not_in "$out" '"hi"' "no raw quotes in mermaid labels"
run "$AILOOP" graph --flow .ai-loop/odd.yaml --format dot
expect_rc 0 "dot of escaped labels"
expect_in "$out" 'skill say \"hi\" <b>#1</b> & back\\slash' "dot escapes"
if command -v dot >/dev/null 2>&1; then
	printf '%s\n' "$out" >"$TEST_TMP/odd.dot"
	run dot -Tsvg "$TEST_TMP/odd.dot"
	expect_rc 0 "dot renders escaped labels"
	expect_eq "$err" "" "dot has no warnings for escaped labels"
	expect_in "$out" 'say &quot;hi&quot; &lt;b&gt;#1&lt;/b&gt; &amp; back\slash' "SVG shows the skill as written"
	expect_in "$out" 'if k equals a&quot;b\' "SVG shows the condition as written"
fi

# --- usage errors -----------------------------------------------------------
run "$AILOOP" graph --format svg
expect_rc 64 "graph --format svg"
expect_in "$err" "unknown format 'svg' (use mermaid, dot or tree)" "svg is refused"
expect_eq "$out" "" "nothing drawn for a bad format"

run "$AILOOP" graph --format
expect_rc 64 "graph --format without a value"
expect_in "$err" "needs a value" "missing format value"

run "$AILOOP" graph extra
expect_rc 64 "graph with an operand"
expect_in "$err" "usage: ailoop graph" "operand shows usage"

# --- invalid and missing flows ----------------------------------------------
cat >.ai-loop/bad.yaml <<'EOF'
flow:
  id: broken
  type: sequense
EOF
run "$AILOOP" graph --flow .ai-loop/bad.yaml
expect_rc 65 "graph of an invalid flow"
expect_in "$err" ".ai-loop/bad.yaml:3:9: error: unknown node type 'sequense' (did you mean 'sequence'?)" "invalid flow position"
expect_eq "$out" "" "nothing drawn for an invalid flow"

run "$AILOOP" graph --flow .ai-loop/bad.yaml --format dot
expect_rc 65 "dot of an invalid flow"
expect_eq "$out" "" "no dot for an invalid flow"

cat >.ai-loop/missing-agent.yaml <<'EOF'
flow: {id: a, skill: x, agent: .ai-loop/agents/nobody.md}
EOF
run "$AILOOP" graph --flow .ai-loop/missing-agent.yaml
expect_rc 65 "graph of a flow naming a missing agent"
expect_in "$err" "agent file '.ai-loop/agents/nobody.md' does not exist" "missing agent named"

run "$AILOOP" graph --flow nope.yaml
expect_rc 66 "graph of a missing flow"
expect_in "$err" "no flow at 'nope.yaml'" "missing flow named"

finish
