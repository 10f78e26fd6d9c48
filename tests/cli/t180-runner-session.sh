#!/usr/bin/env bash
# A runner's `session:`: how a CLI ailoop has no preset for keeps sessions,
# so its agents of session: continue continue them too. `fresh` is what a
# fresh agent's call gets, `start` the first call of one that continues
# ({session-id}: an id ailoop chooses, a UUID), `resume` its later calls
# (with the id), and `cumulative_usage: true` says the CLI's usage of a
# resumed session counts its earlier calls too: each call is counted what
# it added. A runner that prints text continues the session whose id it
# was given. Mistakes in `session:` are errors at their place; an agent of
# session: continue whose runner cannot resume is a warning of validate.
. "$(dirname "$0")/lib.sh"

mkdir -p "$TEST_TMP/bin"
export CALLS=$TEST_TMP/calls SESSIONS=$TEST_TMP/sessions
mkdir -p "$SESSIONS"
# a CLI that takes --session-id ID (a new session of that id) or --resume
# ID, prints claude's stream-json (as fake-cli) or text (as fake-plain),
# and whose usage is the session's running count: 10 input and 5 output
# tokens a call
cat >"$TEST_TMP/bin/fake-cli" <<'SH'
#!/bin/sh
cat >/dev/null
echo "$AILOOP_ROLE $AILOOP_ITERATION $*" >>"$CALLS"
sid= prev=
for a; do
	case $prev in --session-id | --resume) sid=$a ;; esac
	case $a in --session-id=*) sid=${a#*=} ;; esac
	prev=$a
done
case " $* " in
*" --resume "*) [ -e "$SESSIONS/$sid" ] || { echo "no session $sid" >&2; exit 1; } ;;
*" --session-id"*) [ ! -e "$SESSIONS/$sid" ] || { echo "session $sid exists" >&2; exit 1; } ;;
esac
if [ -z "$sid" ]; then
	echo >>"$SESSIONS.count"
	sid=f$(wc -l <"$SESSIONS.count" | tr -d ' ')
fi
echo >>"$SESSIONS/$sid"
n=$(wc -l <"$SESSIONS/$sid" | tr -d ' ')
if [ "$AILOOP_ROLE" = actuator ]; then
	sed 1d todo.txt >todo.new && mv todo.new todo.txt
	answer='---\nsummary: removed one\n---\nRemoved one.'
elif [ -s todo.txt ]; then
	answer='---\ntarget-met: false\n---\nNot yet.\n\n## Action Plan\n- remove one'
else
	answer='---\ntarget-met: true\n---\nDone.'
fi
if [ "$(basename "$0")" = fake-plain ]; then
	printf '%b\n' "$answer"
	exit 0
fi
printf '{"type":"system","subtype":"init","session_id":"%s"}\n' "$sid"
printf '{"type":"result","subtype":"success","is_error":false,"result":"%s","session_id":"%s","usage":{"input_tokens":%d,"output_tokens":%d}}\n' \
	"$answer" "$sid" $((10 * n)) $((5 * n))
SH
chmod +x "$TEST_TMP/bin/fake-cli"
ln -s fake-cli "$TEST_TMP/bin/fake-plain"
export PATH="$TEST_TMP/bin:$PATH"

R=$TEST_TMP/repo
loop_repo "$R" a b c
printf -- '---\nname: ctl\nrunner: mine\n---\nDecide.\n' >"$R/.ai-loop/agents/ctl.md"
printf -- '---\nname: act\nrunner: mine\nsession: continue\n---\nAct.\n' >"$R/.ai-loop/agents/act.md"
cat >"$R/.ai-loop/flow.yaml" <<'YAML'
version: 1
runners:
  mine:
    command: [fake-cli, '{session}', --verbose]
    prompt: stdin
    output: claude-json
    session:
      fresh: [--no-save]
      start: [--session-id, '{session-id}']
      resume: [--resume, '{session-id}']
      cumulative_usage: true
  plain:
    command: [fake-plain, '{session}']
    prompt: stdin
    session: {start: ['--session-id={session-id}'], resume: [--resume, '{session-id}']}
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
expect_rc 0 "a flow whose runner says how its CLI keeps sessions is valid"
expect_not_in "$err" "session" "a runner that can resume: no warning"
run "$AILOOP" run --dry-run "empty the list"
expect_rc 0 "the dry run"
expect_in "$out" "fake-cli --session-id '<session-id>' --verbose" \
	"the dry run shows the actuator's first call starting a session of an id ailoop chooses"
expect_in "$out" "fake-cli --no-save --verbose" "and the controller's call keeping none"

run "$AILOOP" run "empty the list"
expect_rc 0 "a run whose actuator continues its session through the runner's session: completes"
uuid='[0-9a-f]\{8\}-[0-9a-f]\{4\}-4[0-9a-f]\{3\}-[89ab][0-9a-f]\{3\}-[0-9a-f]\{12\}'
sid=$(sed -n "s/^actuator 1 --session-id \($uuid\) --verbose\$/\1/p" "$CALLS")
[ -n "$sid" ] && pass || fail "the actuator's first call starts a session of a UUID ailoop chose: $(cat "$CALLS")"
expect_eq "$(grep '^actuator' "$CALLS" | sed "s/$sid/ID/" | cut -d' ' -f2- | tr '\n' '|')" \
	"1 --session-id ID --verbose|2 --resume ID --verbose|3 --resume ID --verbose|" \
	"the actuator's later calls resume that session"
expect_eq "$(grep '^controller' "$CALLS" | cut -d' ' -f3- | sort -u)" "--no-save --verbose" \
	"the fresh controller's calls get the runner's fresh arguments"
expect_eq "$(sed -n '/^sessions:/,/^[^ ]/s/^  actuator: //p' .ai-loop/runs/run_*/nodes/fix/orchestrator-output.md)" \
	"$sid" "the node's state keeps the session"
events=$(cat .ai-loop/runs/run_*/events.jsonl)
expect_eq "$(jq -rs '[.[] | select(.event == "agent_usage" and .role == "actuator") | "\(.input)/\(.output)"] | join(" ")' <<<"$events")" \
	"10/5 10/5 10/5" "cumulative_usage: each resumed call counts what it added, not the session's running count"
expect_eq "$(jq -rs '[.[] | select(.event == "agent_usage" and .role == "controller") | .input] | unique | join(" ")' <<<"$events")" \
	"10" "a fresh call counts its own usage"

# --- a runner that prints text continues the session whose id it chose -----------------
git checkout -q -f main
printf 'a\nb\n' >todo.txt
sed -i 's/^runner: mine$/runner: plain/' .ai-loop/agents/act.md
git commit -qam "plain actuator"
: >"$CALLS"
run "$AILOOP" validate
expect_not_in "$err" "session" "a text runner whose start gives the id: no warning"
run "$AILOOP" run "empty the list"
expect_rc 0 "a run whose text runner continues its session completes"
sid=$(sed -n "s/^actuator 1 --session-id=\($uuid\)\$/\1/p" "$CALLS")
[ -n "$sid" ] && pass || fail "the text runner's first call gets the id ailoop chose: $(cat "$CALLS")"
expect_eq "$(grep '^actuator' "$CALLS" | sed "s/$sid/ID/" | cut -d' ' -f2- | tr '\n' '|')" \
	"1 --session-id=ID|2 --resume ID|" "its next call resumes it"
expect_eq "$(sed -n '/^sessions:/,/^[^ ]/s/^  actuator: //p' "$(ls -d .ai-loop/runs/run_* | tail -1)"/nodes/fix/orchestrator-output.md)" \
	"$sid" "the node's state keeps the id ailoop chose"

# --- a runner that cannot resume: a warning of validate ---------------------------------
git checkout -q -f main
sed -i 's/^runners:$/&\n  once:\n    command: [fake-cli, "{session}"]\n    output: claude-json\n    session: {fresh: [--no-save]}/' .ai-loop/flow.yaml
sed -i '/^flow:$/,$d' .ai-loop/flow.yaml
cat >>.ai-loop/flow.yaml <<'YAML'
flow:
  id: fix
  type: loop
  controller: .ai-loop/agents/ctl.md
  sensors: [.ai-loop/agents/sensor.md]
  actuator: {strategy: direct, agent: .ai-loop/agents/act.md}
YAML
sed -i 's/^runner: plain$/runner: once/' .ai-loop/agents/act.md
run "$AILOOP" validate
expect_rc 0 "session: continue on a runner that cannot resume is no error"
expect_in "$err" ".ai-loop/agents/act.md:4:10: warning: runner 'once' has no way to resume a session" \
	"but a warning at the agent's session:"

# --- mistakes in session: errors at their place -----------------------------------------
git checkout -q -f main
cat >.ai-loop/flow.yaml <<'YAML'
version: 1
runners:
  mine:
    command: [fake-cli, '{session}']
    output: claude-json
    session:
      fresh: [--id, '{session-id}']
      resume: [--resume]
      resum: [--resume, '{session-id}']
      cumulative_usage: sometimes
  nowhere:
    command: [fake-cli]
    session: {resume: [--resume, '{session-id}']}
  odd:
    command: [fake-cli, '{session}']
    session: [--resume]
flow: {id: a, agent: .ai-loop/agents/act.md}
YAML
run "$AILOOP" validate
expect_rc 65 "mistakes in a runner's session: are errors"
expect_in "$err" ".ai-loop/flow.yaml:7:14: error: runner 'mine': a fresh agent has no session, so 'fresh' cannot hold {session-id}" \
	"fresh with an id"
expect_in "$err" ".ai-loop/flow.yaml:8:15: error: runner 'mine': 'resume' must hold {session-id}" \
	"resume without the id"
expect_in "$err" ".ai-loop/flow.yaml:9:7: error: unknown key 'resum' in session" "an unknown key"
expect_in "$err" ".ai-loop/flow.yaml:10:25: error:" "cumulative_usage not a boolean"
expect_in "$err" ".ai-loop/flow.yaml:13:14: error: runner 'nowhere' has a 'session' but no {session} argument" \
	"a session: with no {session} to put it"
expect_in "$err" ".ai-loop/flow.yaml:16:14: error:" "a session: that is no map"
finish
