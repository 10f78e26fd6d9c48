#!/usr/bin/env bash
# session: continue. An agent of `session: continue` continues, at each
# call in its node, the CLI session of its previous call there (--resume ID
# for a runner that prints claude's JSON); one of `session: fresh` (the
# default) never does, and its CLI keeps no session
# (--no-session-persistence). The id is kept in the node's state, so a
# killed run's resume continues it; a session the CLI no longer finds is
# started anew once, with a warning. session: continue on an agent with no
# session (a command) is a warning of validate.
. "$(dirname "$0")/lib.sh"

mkdir -p "$TEST_TMP/bin"
export CALLS=$TEST_TMP/calls SESSIONS=$TEST_TMP/sessions
mkdir -p "$SESSIONS"
# a claude-like CLI: stream-json with a session id; it records each call's
# role, iteration and arguments, and knows the sessions it started
cat >"$TEST_TMP/bin/fake-claude" <<'SH'
#!/bin/sh
cat >/dev/null
echo "$AILOOP_ROLE $AILOOP_ITERATION $*" >>"$CALLS"
sid= prev=
for a; do [ "$prev" = --resume ] && sid=$a; prev=$a; done
if [ -n "$sid" ] && [ ! -e "$SESSIONS/$sid" ]; then
	echo "No conversation found with session ID: $sid" >&2
	exit 1
fi
if [ -z "$sid" ]; then
	echo >>"$SESSIONS.count"
	sid=s$(wc -l <"$SESSIONS.count" | tr -d ' ')-$AILOOP_ROLE
	touch "$SESSIONS/$sid"
fi
if [ "$AILOOP_ROLE" = actuator ]; then
	sed 1d todo.txt >todo.new && mv todo.new todo.txt
	answer='---\nsummary: removed one\n---\nRemoved one.'
	[ "${LOSE:-}" != 1 ] || rm -f "$SESSIONS"/*-actuator # the CLI loses its sessions
elif [ -s todo.txt ]; then
	answer='---\ntarget-met: false\n---\nNot yet.\n\n## Action Plan\n- remove one'
else
	answer='---\ntarget-met: true\n---\nDone.'
fi
printf '{"type":"system","subtype":"init","session_id":"%s"}\n' "$sid"
printf '{"type":"result","subtype":"success","is_error":false,"result":"%s","session_id":"%s","total_cost_usd":0.001,"usage":{"input_tokens":10,"output_tokens":5}}\n' "$answer" "$sid"
SH
chmod +x "$TEST_TMP/bin/fake-claude"
export PATH="$TEST_TMP/bin:$PATH"

R=$TEST_TMP/repo
loop_repo "$R" a b c
printf -- '---\nname: ctl\nrunner: fake\n---\nDecide.\n' >"$R/.ai-loop/agents/ctl.md"
printf -- '---\nname: act\nrunner: fake\nsession: continue\n---\nAct.\n' >"$R/.ai-loop/agents/act.md"
cat >"$R/.ai-loop/flow.yaml" <<'YAML'
version: 1
runners:
  fake: {command: [fake-claude, '{session}', --verbose], prompt: stdin, output: claude-json}
flow:
  id: fix
  type: loop
  controller: .ai-loop/agents/ctl.md
  sensors: [.ai-loop/agents/sensor.md]
  actuator: {strategy: direct, agent: .ai-loop/agents/act.md}
  termination: {max_iterations: 5}
YAML
commit_all "$R"
cd "$R"
run "$AILOOP" validate
expect_rc 0 "the flow is valid"
expect_not_in "$err" "session" "a runner with {session} and claude's JSON: no warning"

run "$AILOOP" run "empty the list"
expect_rc 0 "a run whose actuator continues its session completes"
calls() { grep "^$1 " "$CALLS" | cut -d' ' -f3- | tr '\n' '|'; }
expect_eq "$(calls actuator)" "--verbose|--resume s2-actuator --verbose|--resume s2-actuator --verbose|" \
	"the actuator's first call is fresh and keeps its session; the next ones resume it"
expect_eq "$(calls controller)" \
	"$(printf -- '--no-session-persistence --verbose|%.0s' 1 2 3 4)" \
	"a controller of session: fresh never resumes, and its CLI keeps no session"
expect_in "$(cat .ai-loop/runs/run_*/nodes/fix/orchestrator-output.md)" \
	"sessions:
  actuator: s2-actuator" "the node's state keeps the actuator's session"
expect_eq "$(jq -rs '[.[] | select(.event == "agent_usage" and .role == "actuator") | .session] | join(" ")' \
	.ai-loop/runs/run_*/events.jsonl)" "s2-actuator s2-actuator s2-actuator" "every call was in that session"

# --- killed and resumed: the session goes on -----------------------------------------
git checkout -q main
printf 'a\nb\nc\n' >todo.txt && commit_all "$R" "again"
: >"$CALLS"
# the kill points of the same run, each named; the last before the second actuator call
AILOOP_CRASH_LOG=$TEST_TMP/points "$AILOOP" run --quiet "points" >/dev/null 2>&1
git checkout -q -f main
: >"$CALLS"
n=$(awk '$2 == "running" && /\/logs\/actuator.log$/ { print $1 }' "$TEST_TMP/points" | sed -n 2p)
n=$((${n:-2} - 1))
[ "$n" -gt 1 ] && pass || { fail "no kill point before the second actuation"; grep -n running "$TEST_TMP/points" >&2; }
run env AILOOP_CRASH_AT="$n" "$AILOOP" run --quiet "killed"
expect_rc 137 "killed before the actuator's second call"
expect_eq "$(calls actuator)" "--verbose|" "one actuator call before the kill"
run "$AILOOP" resume
expect_rc 0 "the resumed run completes"
first=$(ls "$SESSIONS" | grep actuator | sort -t- -k1.2n | tail -1)
expect_eq "$(calls actuator)" "--verbose|--resume $first --verbose|--resume $first --verbose|" \
	"after the resume, the actuator continues the session it had before the kill"

# --- a session the CLI no longer finds: a new one, once, with a warning -----------------
git checkout -q -f main
printf 'a\nb\nc\n' >todo.txt && commit_all "$R" "once more"
: >"$CALLS"
LOSE=1 run "$AILOOP" run "lost sessions"
expect_rc 0 "a run whose CLI loses its sessions completes"
expect_in "$err" "warning: actuator '.ai-loop/agents/act.md' could not continue its session" \
	"the lost session is a warning"
expect_in "$err" "starting a new session" "and a new one is started"
a=$(calls actuator)
expect_eq "$(printf '%s' "$a" | tr '|' '\n' | grep -c -- '--resume')" 2 \
	"each resume the CLI could not serve was tried once"
expect_eq "$(printf '%s' "$a" | tr '|' '\n' | grep -vc -- '--resume')" 3 \
	"and run fresh: three fresh calls in all"
expect_eq "$(jq -rs '[.[] | select(.event == "session_lost")] | length' \
	"$(ls -d .ai-loop/runs/run_* | tail -1)/events.jsonl")" 2 "each a session_lost event"

# --- session: continue where there is no session: a warning of validate ----------------
git checkout -q -f main
printf -- '---\nname: scope\ncommand: sh .ai-loop/agents/sensor.sh\nsession: continue\n---\n' \
	>.ai-loop/agents/sensor.md
printf -- '---\nname: ctl\nrunner: fake\nsession: sometimes\n---\nDecide.\n' >.ai-loop/agents/bad.md
run "$AILOOP" validate
expect_rc 0 "a session on a command agent is no error"
expect_in "$err" ".ai-loop/agents/sensor.md:4:10: warning: agent file '.ai-loop/agents/sensor.md' runs a command, which has no session to continue" \
	"but a warning at its place"
sed -i 's|controller: .ai-loop/agents/ctl.md|controller: .ai-loop/agents/bad.md|' .ai-loop/flow.yaml
run "$AILOOP" validate
expect_rc 65 "an unknown session value is an error"
expect_in "$err" ".ai-loop/agents/bad.md:4:10: error:" "at its place"
expect_in "$err" "sometimes" "naming the value"
finish
