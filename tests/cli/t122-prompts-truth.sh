#!/usr/bin/env bash
# Prompts that tell the truth. Every flow template `ailoop setup` writes is
# run with its own agent files through the claude preset, the `claude` on
# PATH a script that plays each role as a model would and checks the prompt
# it is given at every iteration: every path it names exists (but the
# output it is to write), no sentence points at an empty placeholder, and
# no tool the text asks the agent to use is outside the tools its runner
# is given. The controller of a direct loop reads what the actuator did
# last; agents below the root see the run's task beside their own; the
# review sensor is given the commit to diff against; the memory block has
# its own heading and only the node's own keys.
. "$(dirname "$0")/lib.sh"

export CALLS=$TEST_TMP/calls
mkdir -p "$TEST_TMP/bin"
cat >"$TEST_TMP/bin/claude" <<'SH'
#!/bin/bash
# a model behind the claude CLI: checks its prompt, then plays its role
prompt=$(cat)
allowed=
for a in "$@"; do case $a in --allowedTools=*) allowed=${a#--allowedTools=} ;; esac; done
role=$AILOOP_ROLE out=$AILOOP_OUTPUT
rel_out=${out#"$PWD/"}
where="$AILOOP_NODE_PATH $role${AILOOP_SENSOR:+ $AILOOP_SENSOR} $AILOOP_ITERATION"
viol() { printf '%s: %s\n' "$where" "$1" >>"$CALLS/violations"; }
n=$(ls "$CALLS" | grep -c "^prompt-")
printf '%s\n' "$prompt" >"$CALLS/prompt-$n-$role-${AILOOP_NODE_PATH//\//_}-$AILOOP_ITERATION"
# every path named exists, but the output
while read -r p; do
	[ -z "$p" ] || [ "$p" = "$out" ] || [ "$p" = "$rel_out" ] || [ -e "$p" ] ||
		viol "names '$p', which does not exist"
done < <(grep -oE "(^|[ \`(])(/|\.ai-loop/)[A-Za-z0-9._/-]+" <<<"$prompt" |
	sed 's/^[ `(]//; s/[.,:;)]*$//' |
	grep -E "^(\.ai-loop/|$TEST_TMP)" | sort -u)
grep -nE " (in|is|at|from) \.?$|\`\`|commit \.|\{[a-z-]+\}" <<<"$prompt" | while read -r l; do
	viol "an empty or unfilled placeholder: $l"
done
shell() { [[ ",$allowed," == *",Bash,"* || ",$allowed," == *",Bash($1"* ]]; }
grep -q "git diff" <<<"$prompt" && ! shell "git diff" && viol "asks for git diff, tools: $allowed"
grep -q "ailoop memory" <<<"$prompt" && ! shell ailoop && viol "names ailoop memory, tools: $allowed"
grep -q "build and test commands" <<<"$prompt" && ! shell make &&
	viol "may run the tests, tools: $allowed"
passes() { make -s test >/dev/null 2>&1; }
count=$(($(cat "$CALLS/n-$role-${AILOOP_NODE_PATH//\//_}" 2>/dev/null || echo 0) + 1))
echo $count >"$CALLS/n-$role-${AILOOP_NODE_PATH//\//_}"
case $role in
controller)
	if passes && [ "$count" -ge 3 ]; then
		printf -- '---\ntarget-met: true\n---\nThe tests pass.\n' >"$out"
	else
		printf -- '---\ntarget-met: false\n---\nNot yet.\n\n## Action Plan\n\nMake add return the sum.\n' >"$out"
	fi ;;
sensor)
	if passes; then s=pass; else s=fail; fi
	printf -- '---\nstatus: %s\n---\nReviewed.\n' "$s" >"$out" ;;
actuator | action)
	if [ "$count" -ge 2 ] || grep -q "Change the code" <<<"$prompt"; then
		printf 'add() { echo $(($1 + $2)); }\n' >calc.sh
	fi
	printf 'Edited calc.sh.\n' >"$out" ;;
esac
SH
chmod +x "$TEST_TMP/bin/claude"
export PATH="$TEST_TMP/bin:$PATH"

project() {
	new_repo "$1"
	printf 'add() { echo $(($1 - $2)); }\n' >"$1/calc.sh"
	printf '. ./calc.sh\n[ "$(add 2 2)" = 4 ]\n' >"$1/test.sh"
	printf 'test:\n\tsh test.sh\n' >"$1/Makefile"
	commit_all "$1"
}

for t in single nested three-level tdd reactree-tdd; do
	R=$TEST_TMP/$t
	project "$R"
	cd "$R"
	run "$AILOOP" setup --yes --template "$t"
	expect_rc 0 "setup --template $t"
	commit_all "$R" setup
	rm -rf "$CALLS" && mkdir -p "$CALLS"
	run "$AILOOP" run "make add add"
	expect_rc 0 "template $t: the run completes"
	expect_eq "$(cat "$CALLS/violations" 2>/dev/null)" "" "template $t: every prompt tells the truth"
	calls=$(ls "$CALLS" | grep -c "^prompt-")
	[ "$calls" -ge 2 ] && pass || fail "template $t: only $calls agent calls"
	cp -a "$CALLS" "$TEST_TMP/calls-$t"
done

# --- what the prompts say -----------------------------------------------------------
cd "$TEST_TMP/single"
CALLS=$TEST_TMP/calls-single
ctl() { cat "$CALLS"/prompt-*-controller-deliver-"$1"; }
expect_not_in "$(ctl 1)" "What the actuator did last" "the first decision: no sentence about an actuator that has not acted"
expect_in "$(ctl 2)" "What the actuator did last is in .ai-loop/runs/" "the next: the controller reads the actuator's output"
expect_in "$(ctl 2)" "/nodes/deliver/actuator-output.md" "the actuator's output file"
expect_not_in "$(ctl 2)" "## The run's task" "the root's agents are not told their own task twice"
act=$(cat "$CALLS"/prompt-*-actuator-deliver-1)
expect_in "$act" "## Working memory" "the actuator's memory block has its heading"
expect_in "$act" "- sensors.tests.status: fail" "the node's own sensor"
expect_not_in "$act" ": null" "no null values"
expect_in "$(sed -n '/^tools:/p' .ai-loop/agents/loop-actuator.md)" "Bash(make:*)" \
	"setup lets the actuator run the detected test command"

cd "$TEST_TMP/nested"
CALLS=$TEST_TMP/calls-nested
inner=$(cat "$CALLS"/prompt-*-sensor-delivery_implement-1.1 2>/dev/null | head -200)
expect_in "$inner" "## The run's task" "an inner agent sees the run's task"
expect_in "$inner" "make add add" "the user's own words"
expect_in "$inner" "git diff $(git rev-parse main)" "the review diffs against the commit the run started from"
expect_in "$inner" "started from \`main\`" "and names the base branch"
outer=$(cat "$CALLS"/prompt-*-controller-delivery-2)
expect_in "$outer" "Its last result is in .ai-loop/runs/" "the outer controller reads the child's result"
expect_not_in "$(cat "$CALLS"/prompt-*-controller-delivery-1)" "Its last result" "not before there is one"
expect_in "$(cat "$CALLS"/prompt-*-actuator-delivery_implement-1.1)" "- sensors.tests.status: fail" \
	"an inner node's agents see the enclosing loop's readings"
expect_in "$outer" "## Working memory" "the outer controller has a memory block"
expect_not_in "$outer" "sensors.review." "but not the inner loop's readings"

finish
