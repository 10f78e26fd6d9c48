#!/usr/bin/env bash
# The dual exit gate (termination.exit_gate: dual): a loop is complete only
# when its controller says the target is met and every sensor passes in
# the same iteration. A controller that claims target-met while a sensor
# fails is refused: the loop goes on, the refusal is logged, and the
# controller is told why in its next prompt (the actuator in its input).
. "$(dirname "$0")/lib.sh"

# a controller that always says the target is met, keeping each prompt
liar() {
	cat >"$1/.ai-loop/agents/liar.md" <<'MD'
---
name: liar
command: 'cp "$AILOOP_PROMPT_FILE" "$PROMPTS/prompt-$AILOOP_ITERATION"; printf -- "---\ntarget-met: true\n---\n# Controller\n\nAll done.\n" >"$AILOOP_OUTPUT"'
---
Judge the sensors: {sensors-section}
MD
}

gate_repo() {
	R=$TEST_TMP/$1
	export PROMPTS=$TEST_TMP/$1-prompts
	mkdir -p "$PROMPTS"
	loop_repo "$R" a b
	liar "$R"
	one_loop "$R" fixer.md "max_iterations: ${3:-5}${2:+, exit_gate: $2}" .ai-loop/agents/liar.md
	commit_all "$R"
	cd "$R"
}

# --- without the gate, the controller's word ends the loop (as before) ------------
gate_repo plain ""
run "$AILOOP" run "fix all"
expect_rc 0 "a single gate trusts the controller"
expect_eq "$(labels "$R")" "0 1" "it ends at the first judgement"
expect_eq "$(grep -c . todo.txt)" 2 "with the work undone"

# --- the dual gate refuses a lying controller until the sensors pass --------------
gate_repo dual dual
run "$AILOOP" run "fix all"
expect_rc 0 "the loop completes once the sensors pass"
expect_eq "$(labels "$R")" "0 1 2 3" "two refusals, then complete"
expect_eq "$(grep -c . todo.txt || true)" 0 "the work is done"
expect_in "$err" "the exit gate (dual) refuses" "the refusal is shown"
events=$(cat .ai-loop/runs/run_*/events.jsonl)
expect_eq "$(printf '%s\n' "$events" | jq -r 'select(.event == "exit_gate_refused") | .label' |
	tr '\n' ' ')" "1 2 " "each refusal is logged with its iteration"
expect_in "$(printf '%s\n' "$events" | jq -r 'select(.event == "exit_gate_refused") | .failing' |
	head -1)" "scope: fail (remaining=2)" "the event names the failing sensor"
expect_not_in "$(cat "$PROMPTS/prompt-1")" "exit gate" "the first prompt has no refusal"
expect_in "$(cat "$PROMPTS/prompt-2")" "The exit gate (termination.exit_gate: dual) refused the end of the loop in iteration 1" \
	"the next prompt tells the controller why"
expect_in "$(cat "$PROMPTS/prompt-2")" "scope: fail (remaining=2)" "and which sensor fails"
expect_in "$(cat "$PROMPTS/prompt-3")" "in iteration 2" "each prompt tells of the last refusal"
expect_in "$(git show HEAD~2:.ai-loop/runs/$(ls .ai-loop/runs | grep run_)/nodes/fix/controller-output.md)" \
	"## Exit Gate" "the refusal is in the controller's output of that iteration"
expect_eq "$(git log -1 --format=%B HEAD~1 | sed -n 's/^\[target-met\] //p')" "false" \
	"a refused iteration is not target-met"
result=$(cat .ai-loop/runs/run_*/nodes/fix/result-output.md)
expect_in "$result" "status: complete" "the result is complete"
expect_not_in "$(cat .ai-loop/runs/run_*/nodes/fix/orchestrator-output.md)" "exit-gate-refused" \
	"the note is gone once the controller was told"

# --- a refused last iteration ends at max iterations, not complete ----------------
gate_repo short dual 1
run "$AILOOP" run "fix all"
expect_rc 1 "refused at the last judgement: max iterations"
expect_in "$out" "max-iterations-reached" "the outcome says so"
expect_eq "$(labels "$R")" "0 1 2" "one actuation, then the refused final judgement"

finish
