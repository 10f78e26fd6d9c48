#!/usr/bin/env bash
# FEEDBACK edges: an action with feedback_enabled sends its feedback to an
# earlier node, which runs again with it in its prompt; the sender runs
# again to verify. Resolved in round one; failed after two rounds; chains
# of three resolve, a fourth is refused; a cycle is refused; malformed,
# unknown-type and unknown-target feedback are reported with the output
# file; feedback.jsonl goes into the commits; status shows open feedback.
. "$(dirname "$0")/lib.sh"

# case NAME: a repository whose actions all run the agent fb, whose plan
# ($PLAN, sourced with $node set) the case gives; the flow on stdin
case_repo() {
	R=$TEST_TMP/$1
	new_repo "$R"
	mkdir -p "$R/.ai-loop/agents"
	cat >"$R/.ai-loop/agents/fb.md" <<'MD'
---
name: fb
command: sh .ai-loop/agents/fb.sh
---
Do the step.

{feedback-section}
MD
	cat >"$R/.ai-loop/agents/fb.sh" <<'SH'
node=$AILOOP_NODE_ID
echo "$node" >>"$TRAIL"
# what the prompt says, for the checks: the first feedback's heading
if grep -q '^## Feedback' "$AILOOP_PROMPT_FILE"; then
	had=yes
	sed -n 's/^### //p' "$AILOOP_PROMPT_FILE" | head -1 | sed "s/^/$node sees: /" >>"$TRAIL"
else
	had=no
fi
# feedback TO [TYPE] [MESSAGE]: the output asks TO for a fix
feedback() {
	printf -- '---\nfeedback:\n  to: %s\n  type: %s\n  message: %s\n  suggested_fix: write fixed\n  priority: high\n---\nasked %s\n' \
		"$1" "${2:-FIX_REQUEST}" "${3:-$1 is not fixed}" "$1" >"$AILOOP_OUTPUT"
}
fixed() { grep -q fixed "$1.txt" 2>/dev/null; }
. "$PLAN"
SH
	cat >"$R/.ai-loop/flow.yaml"
	export TRAIL=$TEST_TMP/$1.trail PLAN=$TEST_TMP/$1.plan
	: >"$TRAIL"
	: >"$PLAN"
}

plan() { cat >"$PLAN"; }

go() {
	commit_all "$R"
	cd "$R" || exit 1
	run "$AILOOP" run --quiet "exercise feedback"
	path=$(grep -v ' sees: ' "$TRAIL" | tr '\n' ' ' | sed 's/ $//')
	run_dir=$(ls -d .ai-loop/runs/run_* | tail -1)
}

# the states feedback.jsonl went through, "id:status" each
states() { jq -r '"\(.id):\(.status)"' "$run_dir/feedback.jsonl" | tr '\n' ' ' | sed 's/ $//'; }

# --- resolved in round 1

case_repo resolved <<'YAML'
version: 1
flow:
  id: s
  type: sequence
  children:
    - {id: build, agent: fb}
    - {id: check, agent: fb, feedback_enabled: true}
YAML
plan <<'PLAN'
case $node in
build) if [ $had = yes ]; then echo fixed >build.txt; else echo draft >build.txt; fi ;;
check) fixed build || feedback build ;;
esac
PLAN
go
expect_rc 0 "resolved: the run succeeds"
expect_eq "$path" "build check build check" "resolved: the target runs again, then the sender"
expect_in "$(cat "$TRAIL")" "build sees: FIX_REQUEST from 's/check' (priority high, round 1 of 2)" \
	"resolved: the target's prompt has the feedback"
expect_eq "$(states)" "fb-1:queued fb-1:delivered fb-1:processing fb-1:verifying fb-1:resolved" \
	"resolved: feedback.jsonl has every state"
expect_eq "$(jq -r 'select(.status == "resolved") | "\(.from) \(.to) \(.type) \(.round) \(.suggested_fix)"' \
	"$run_dir/feedback.jsonl")" "s/check s/build FIX_REQUEST 1 write fixed" \
	"resolved: the record says who asked whom for what"
expect_eq "$(git show "HEAD:$run_dir/feedback.jsonl" | wc -l)" 5 \
	"resolved: feedback.jsonl is committed with the last iteration"
expect_eq "$(jq -r 'select(.event | startswith("feedback_")) | .event' "$run_dir/events.jsonl" |
	tr '\n' ' ')" "feedback_queued feedback_delivered feedback_processing feedback_verifying feedback_resolved " \
	"resolved: the events log has the feedback events"
expect_in "$(AILOOP_RUN_DIR=$PWD/$run_dir "$AILOOP" memory get feedback.build)" '"type":"FIX_REQUEST"' \
	"resolved: working memory has the feedback for the target"
expect_eq "$(cat build.txt)" "fixed" "resolved: the target's second work stays"
run "$AILOOP" status
expect_in "$out" "feedback:     none open" "resolved: status shows no open feedback"
expect_eq "$(triples "$R" | awk '{print $2, $3}' | tr '\n' ,)" \
	"s/build complete,s/check complete,s/build complete,s/check complete,s complete," \
	"resolved: each run of a node has its commit"

# --- a 3 MB message: its record keeps 64 KiB of it, and says it was cut

case_repo huge <<'YAML'
version: 1
flow:
  id: s
  type: sequence
  children:
    - {id: build, agent: fb}
    - {id: check, agent: fb, feedback_enabled: true}
YAML
plan <<'PLAN'
case $node in
check) feedback build FIX_REQUEST "$(head -c 3000000 /dev/zero | tr '\0' x)" ;;
esac
PLAN
go
expect_rc 1 "huge: the run fails after two rounds, as any"
expect_eq "$(states)" "fb-1:queued fb-1:delivered fb-1:processing fb-1:verifying fb-1:queued fb-1:delivered fb-1:processing fb-1:verifying fb-1:failed" \
	"huge: every state is recorded"
[ "$(wc -c <"$run_dir/feedback.jsonl")" -lt 1000000 ] && pass ||
	fail "huge: feedback.jsonl is $(wc -c <"$run_dir/feedback.jsonl") bytes"
[ "$(wc -c <"$run_dir/events.jsonl")" -lt 200000 ] && pass ||
	fail "huge: events.jsonl is $(wc -c <"$run_dir/events.jsonl") bytes"
[ "${#err}" -lt 10000 ] && pass || fail "huge: ${#err} bytes on stderr"
note=" [cut: 3000000 bytes in all, in $run_dir/nodes/s/check/action-output.md]"
expect_eq "$(jq -r 'select(.status == "failed") | .message | length' "$run_dir/feedback.jsonl")" \
	$((65536 + ${#note})) "huge: the message keeps 64 KiB, and a note"
expect_in "$(jq -r 'select(.status == "failed") | .message[-200:]' "$run_dir/feedback.jsonl")" \
	"xxx$note" "huge: the message says it was cut, and where the whole is"
expect_in "$err" "still unresolved after 2 rounds: xxxxxxxxxx" "huge: the failure is reported"
expect_in "$err" "xxx..." "huge: quoting the start of the message"
expect_in "$(cat "$TRAIL")" "build sees: FIX_REQUEST from 's/check'" "huge: the target still has it in its prompt"

# --- unresolved after two rounds: failed, and the sender's node fails

case_repo rounds <<'YAML'
version: 1
flow:
  id: s
  type: sequence
  children:
    - {id: build, agent: fb}
    - {id: check, agent: fb, feedback_enabled: true}
YAML
plan <<'PLAN'
case $node in
check) feedback build FIX_REQUEST "still broken" ;;
esac
PLAN
go
expect_rc 1 "rounds: the run fails"
expect_eq "$path" "build check build check build check" "rounds: two rounds, then no more"
expect_eq "$(states)" "fb-1:queued fb-1:delivered fb-1:processing fb-1:verifying fb-1:queued fb-1:delivered fb-1:processing fb-1:verifying fb-1:failed" \
	"rounds: the second round, then failed"
expect_in "$err" "feedback fb-1 from 's/check' to 's/build' still unresolved after 2 rounds: still broken" \
	"rounds: the failure is reported"
expect_eq "$(triples "$R" | tail -2 | awk '{print $2, $3}' | tr '\n' ,)" "s/check failed,s failed," \
	"rounds: the sender's node fails, and the sequence with it"
expect_eq "$(jq -r 'select(.status == "failed") | .round' "$run_dir/feedback.jsonl")" 2 \
	"rounds: it failed in round 2"

# --- a chain of three resolves; a fourth is refused

chain_flow() {
	case_repo "$1" <<'YAML'
version: 1
flow:
  id: s
  type: sequence
  children:
    - {id: a, agent: fb}
    - {id: b, agent: fb, feedback_enabled: true}
    - {id: c, agent: fb, feedback_enabled: true}
    - {id: d, agent: fb, feedback_enabled: true}
    - {id: e, agent: fb, feedback_enabled: true}
YAML
	plan <<'PLAN'
# each node fixes itself when asked, then asks the one before it
prev=$(echo abcde | sed "s/.*\(.\)$node.*/\1/")
[ $had = no ] || echo fixed >$node.txt
[ $node = a ] && [ -n "${A_FIXED:-}" ] && echo fixed >a.txt
if { [ $node = e ] || [ $had = yes ]; } && [ $node != a ] && ! fixed $prev; then
	feedback $prev
fi
PLAN
}

A_FIXED=1 chain_flow chain3
export A_FIXED=1
go
unset A_FIXED
expect_rc 0 "chain of 3: the run succeeds"
expect_eq "$path" "a b c d e d c b c d e" "chain of 3: each target runs again, then each sender"
expect_eq "$(jq -r 'select(.status == "resolved") | "\(.id) \(.from) \(.to) \(.depth)"' \
	"$run_dir/feedback.jsonl" | tr '\n' ,)" "fb-3 s/c s/b 3,fb-2 s/d s/c 2,fb-1 s/e s/d 1," \
	"chain of 3: resolved innermost first"

chain_flow chain4
go
expect_rc 1 "chain of 4: the run fails"
expect_in "$err" "feedback from 's/b' to 's/a' refused: a chain of 4 feedback, deeper than 3" \
	"chain of 4: refused with why"
expect_eq "$(jq -r 'select(.status == "failed") | .id' "$run_dir/feedback.jsonl" | tr '\n' ' ')" \
	"fb-4 fb-1 fb-2 fb-3 " "chain of 4: the refused one and the open ones fail"
expect_eq "$(jq -r 'select(.id == "fb-4") | .status' "$run_dir/feedback.jsonl")" "failed" \
	"chain of 4: the fourth is never queued"

# --- a cycle: feedback to a node that open feedback already targets

case_repo cycle <<'YAML'
version: 1
flow:
  id: s
  type: sequence
  children:
    - {id: a, agent: fb}
    - id: t
      type: sequence
      children:
        - {id: c, agent: fb, feedback_enabled: true}
        - {id: d, agent: fb, feedback_enabled: true}
YAML
plan <<'PLAN'
case $node in
a) [ $had = no ] || echo fixed >a.txt ;;
c) ! fixed a || feedback a CONTEXT_REQUEST "more about a" ;;
d) fixed a || feedback a ;;
esac
PLAN
go
expect_rc 1 "cycle: the run fails"
expect_in "$err" "feedback from 's/t/c' to 's/a' refused: a cycle ('s/a' is already in open feedback fb-1 from 's/t/d' to 's/a')" \
	"cycle: refused with why"
expect_eq "$path" "a c d a c" "cycle: the refused sender is the last to run"

# --- an ancestor as target: its children run again from the first

case_repo ancestor <<'YAML'
version: 1
flow:
  id: s
  type: sequence
  children:
    - {id: a, agent: fb}
    - {id: b, agent: fb, feedback_enabled: true}
YAML
plan <<'PLAN'
case $node in
a) [ $had = no ] || echo fixed >a.txt ;;
b) fixed a || feedback s ARCHITECTURE_ISSUE "replan" ;;
esac
PLAN
go
expect_rc 0 "ancestor: the run succeeds"
expect_eq "$path" "a b a b" "ancestor: its children run again"
expect_in "$(cat "$TRAIL")" "a sees: ARCHITECTURE_ISSUE from 's/b'" \
	"ancestor: its agents see the feedback"

# --- bad feedback is reported with the output file, and the sender fails

bad_case() { # NAME FEEDBACK-YAML [FEEDBACK_ENABLED]
	case_repo "$1" <<YAML
version: 1
flow:
  id: s
  type: sequence
  children:
    - {id: a, agent: fb}
    - {id: b, agent: fb, feedback_enabled: ${3:-true}}
    - {id: z, agent: fb}
YAML
	printf 'case $node in b) printf -- "---\\n%s\\n---\\nbad\\n" >"$AILOOP_OUTPUT" ;; esac\n' "$2" >"$PLAN"
	go
}

bad_case unknown-type 'feedback: {to: a, type: PLEASE, message: m}'
expect_rc 1 "unknown type: the run fails"
expect_in "$err" "ailoop: error: $run_dir/nodes/s/b/action-output.md:2:25: feedback: unknown type 'PLEASE'" \
	"unknown type: reported at its place in the output file"
expect_eq "$path" "a b" "unknown type: the sender's node fails, the sequence stops"
expect_in "$(jq -r 'select(.event == "feedback_invalid") | .message' "$run_dir/events.jsonl")" \
	"unknown type" "unknown type: an event says so"
[ ! -e "$run_dir/feedback.jsonl" ] && pass || fail "unknown type: nothing is queued"

bad_case unknown-target 'feedback: {to: nowhere, type: FIX_REQUEST, message: m}'
expect_rc 1 "unknown target: the run fails"
expect_in "$err" "$run_dir/nodes/s/b/action-output.md: feedback to 'nowhere': no such node in the flow" \
	"unknown target: reported with the output file"

bad_case later-target 'feedback: {to: z, type: FIX_REQUEST, message: m}'
expect_in "$err" "feedback to 'z': it is neither an ancestor of 's/b' nor an earlier sibling in a sequence" \
	"later target: refused"

bad_case malformed 'feedback: [a, b]'
expect_in "$err" "action-output.md:2:11: feedback: expected a mapping" "not a map: reported"
bad_case no-message 'feedback: {to: a, type: FIX_REQUEST}'
expect_in "$err" "feedback: 'message' is missing" "no message: reported"
bad_case nested-message 'feedback: {to: a, type: FIX_REQUEST, message: {x: 1}}'
expect_in "$err" "feedback: expected a string, got a mapping" "a mapping as message: reported"
bad_case bad-priority 'feedback: {to: a, type: FIX_REQUEST, message: m, priority: urgent}'
expect_in "$err" "unknown priority 'urgent'" "unknown priority: reported"
bad_case self 'feedback: {to: b, type: FIX_REQUEST, message: m}'
expect_in "$err" "a node cannot send feedback to itself" "to itself: refused"

bad_case not-enabled 'feedback: {to: a, type: FIX_REQUEST, message: m}' false
expect_rc 0 "without feedback_enabled: feedback is ignored"
expect_eq "$path" "a b z" "without feedback_enabled: nothing runs again"

finish
