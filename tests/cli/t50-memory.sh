#!/usr/bin/env bash
# Working memory: `ailoop memory` outside and inside a run, agents writing it
# by command and by a `memory:` map in their output, the runner recording
# its sensors there, and {memory-section} showing it in prompts.
. "$(dirname "$0")/lib.sh"

# --- the command on its own ------------------------------------------------
unset AILOOP_RUN_DIR
run "$AILOOP" memory get plan
expect_rc 64 "memory outside a run is a usage error"
expect_eq "$err" "ailoop: error: ailoop memory works inside a run: AILOOP_RUN_DIR is not set" \
	"memory outside a run says why"
expect_eq "$out" "" "memory outside a run prints nothing"
run "$AILOOP" memory --help
expect_rc 0 "memory --help"
expect_in "$out" "usage: ailoop memory get KEY | set KEY VALUE [--json] | list [--json]" \
	"memory --help shows the usage"
expect_in "$out" "64 usage error" "memory --help documents the exit codes"
run "$AILOOP" --help
expect_in "$out" "memory     read and write the working memory" "main help lists memory"

run_dir=$TEST_TMP/run
mkdir -p "$run_dir"
export AILOOP_RUN_DIR=$run_dir
run "$AILOOP" memory
expect_rc 64 "memory without a command"
expect_in "$err" "usage: ailoop memory" "memory without a command shows the usage"
run "$AILOOP" memory forget x
expect_rc 64 "unknown memory command"
expect_in "$err" "ailoop: error: unknown memory command 'forget' (get, set or list)" \
	"unknown memory command is named"
run "$AILOOP" memory set onlykey
expect_rc 64 "set without a value"
run "$AILOOP" memory get --json k
expect_rc 64 "get takes no --json"
expect_in "$err" "option '--json' does not apply to 'memory get'" "get --json is refused"
run "$AILOOP" memory get absent
expect_rc 1 "absent key: exit 1"
expect_eq "$out$err" "" "absent key prints nothing"

run "$AILOOP" memory set plan "fix the parser"
expect_rc 0 "set a string"
run "$AILOOP" memory get plan
expect_eq "$out" "fix the parser" "get returns what set stored"
run "$AILOOP" memory set plan "then the lexer"
run "$AILOOP" memory get plan
expect_eq "$out" "then the lexer" "the last write of a key wins"
run "$AILOOP" memory set limits '{"max": 3, "names": ["a", "b"]}' --json
expect_rc 0 "set --json"
run "$AILOOP" memory get limits
expect_eq "$out" '{"max":3,"names":["a","b"]}' "a JSON value prints as compact JSON"
run "$AILOOP" memory set --json neg -- -1.5
expect_rc 0 "a value beginning with - after --"
run "$AILOOP" memory set count 7 --json
run "$AILOOP" memory set broken '{"max": ' --json
expect_rc 64 "bad JSON is a usage error"
expect_in "$err" "ailoop: error: the value of 'broken' is not JSON:" "bad JSON says so"
run "$AILOOP" memory get broken
expect_rc 1 "bad JSON stored nothing"
run "$AILOOP" memory set "" x
expect_rc 64 "empty key"
expect_in "$err" "ailoop: error: a memory key cannot be empty" "empty key says so"
run "$AILOOP" memory set "$(printf 'a\tb')" x
expect_rc 64 "key with a control character"
expect_in "$err" "has a control character" "control character in a key says so"
run "$AILOOP" memory set "$(head -c 257 /dev/zero | tr '\0' k)" x
expect_rc 64 "key too long"
expect_in "$err" "is too long (257 bytes, at most 256)" "long key says so"

run "$AILOOP" memory list
expect_rc 0 "list"
expect_eq "$out" "count	7
limits	{\"max\":3,\"names\":[\"a\",\"b\"]}
neg	-1.5
plan	then the lexer" "list prints key<TAB>value in key order"
run "$AILOOP" memory list --json
expect_rc 0 "list --json"
expect_eq "$(printf '%s' "$out" | jq -c .)" \
	'{"count":7,"limits":{"max":3,"names":["a","b"]},"neg":-1.5,"plan":"then the lexer"}' \
	"list --json is one object with the values' types"
expect_eq "$(jq -r .agent "$run_dir/memory.jsonl" | sort -u)" "ailoop memory" \
	"entries name their writer"
expect_eq "$(jq -r '[.timestamp, .knowledge_type, .confidence] | @tsv' \
	"$run_dir/memory.jsonl" | sed 's/^2[0-9-]*T[0-9:]*Z/TS/' | sort -u)" \
	"TS	observation	verified" "entries carry the seed's fields"

# a value with a newline, a tab, a backslash and a terminal escape: one line each, escaped
run "$AILOOP" memory set zz "$(printf 'two\nlines\tand \\ \033[2J')"
expect_rc 0 "set a value with control characters"
run "$AILOOP" memory list
expect_eq "$(printf '%s\n' "$out" | tail -1)" 'zz	two\nlines\tand \\ \x1b[2J' \
	"list escapes control characters, one entry a line"
run "$AILOOP" memory get zz
expect_eq "$out" "$(printf 'two\nlines\tand \\ \033[2J')" "get prints the value as it is"
run "$AILOOP" memory list --json
expect_eq "$(printf '%s' "$out" | jq -r .zz)" "$(printf 'two\nlines\tand \\ \033[2J')" \
	"list --json keeps the value exact"

AILOOP_RUN_DIR=$TEST_TMP/gone run "$AILOOP" memory list
expect_rc 66 "a run directory that does not exist"
expect_in "$err" "ailoop: error: no run directory '$TEST_TMP/gone' (AILOOP_RUN_DIR)" \
	"a missing run directory is named"
mkdir -p "$TEST_TMP/linked"
printf 'precious\n' >"$TEST_TMP/victim"
ln -s "$TEST_TMP/victim" "$TEST_TMP/linked/memory.jsonl"
AILOOP_RUN_DIR=$TEST_TMP/linked run "$AILOOP" memory set k v
expect_rc 66 "a linked memory file is refused"
expect_in "$err" "ailoop: error: '$TEST_TMP/linked/memory.jsonl' is a symbolic link: the working \
memory must be a file of the run's directory" "a linked memory file says why"
expect_eq "$(cat "$TEST_TMP/victim")" "precious" "a linked memory file: its target is untouched"
unset AILOOP_RUN_DIR

# --- inside a run ----------------------------------------------------------
R=$TEST_TMP/repo
loop_repo "$R" item-1 item-2 item-3
cat >"$R/.ai-loop/agents/memo.md" <<'MD'
---
name: memo
command: [sh, .ai-loop/agents/memo.sh]
---
Fix one item. What the run knows:
{memory-section}
MD
# fixes the first item; records it by command and by its output's memory map
cat >"$R/.ai-loop/agents/memo.sh" <<'SH'
#!/bin/sh
item=$(grep . todo.txt | head -n 1)
grep -vxF -- "$item" todo.txt >todo.txt.new || true
mv todo.txt.new todo.txt
"$AILOOP" memory set last-fixed "$item" || exit 1
"$AILOOP" memory get sensors.scope.status >>"$MEMO_SEEN" || echo "(none)" >>"$MEMO_SEEN"
n=$("$AILOOP" memory get fixed-count || echo 0)
cat >"$AILOOP_OUTPUT" <<OUT
---
summary: fixed $item
memory:
  fixed-count: $((n + 1))
  "fixed.$item": true
  flag: on
  details: {item: $item, left: [$(grep . todo.txt | tr '\n' ',' | sed 's/,$//')]}
  quoted: "42"
  "bad	key": skipped
---
Removed $item.
OUT
SH
one_loop "$R" memo.md "max_iterations: 5"
commit_all "$R"
cd "$R"
export MEMO_SEEN=$TEST_TMP/seen AILOOP
run "$AILOOP" run "empty the todo list"
expect_rc 0 "a run whose agent uses memory"
rd=$(ls -d .ai-loop/runs/run_*)
mem=$rd/memory.jsonl
[ -f "$mem" ] && pass || fail "memory.jsonl in the run's directory"
expect_eq "$(tr '\n' ' ' <"$MEMO_SEEN")" "fail fail fail " \
	"an agent reads the runner's sensor status through ailoop memory get"
expect_eq "$(jq -r 'select(.key == "last-fixed") | .value' "$mem" | tr '\n' ' ')" \
	"item-1 item-2 item-3 " "ailoop memory set inside a run appends to memory.jsonl"
expect_eq "$(jq -r 'select(.key == "last-fixed") | .agent' "$mem" | sort -u)" \
	"memo" "an agent's ailoop memory set names the agent"
expect_eq "$(jq -r 'select(.key == "fixed-count") | "\(.value) \(.agent)"' "$mem" |
	tr '\n' ' ')" "1 memo 2 memo 3 memo " "the output's memory map is written, by the agent's name"
expect_eq "$(jq -c 'select(.key == "fixed.item-1" or .key == "flag") | .value' "$mem" | sort -u |
	tr '\n' ' ')" '"on" true ' "true is JSON's true; on, yes, no stay text, as a condition compares them"
expect_eq "$(jq -c 'select(.key == "details") | .value' "$mem" | tail -n 1)" \
	'{"item":"item-3","left":[]}' "non-scalar memory values are stored as JSON"
expect_eq "$(jq -c 'select(.key == "fixed.item-2") | .value' "$mem")" "true" \
	"a plain true is a JSON boolean"
expect_eq "$(jq -c 'select(.key == "quoted") | .value' "$mem" | sort -u)" '"42"' \
	"a quoted scalar stays a string"
expect_in "$err" "memory entry of '$rd/nodes/fix/actuator-output.md' skipped: memory key" \
	"an invalid key of a memory map is skipped with a note"
expect_eq "$(jq -r 'select(.key == "sensors.scope.status") | .value' "$mem" | tr '\n' ' ')" \
	"fail fail fail pass " "the runner writes sensors.<name>.status after each measurement"
expect_eq "$(jq -c 'select(.key == "sensors.scope.remaining") | .value' "$mem" | tr '\n' ' ')" \
	"3 2 1 0 " "the runner writes each metric, as a JSON number"
expect_eq "$(jq -r 'select(.key == "sensors.scope.status") | "\(.agent) \(.knowledge_type)"' \
	"$mem" | sort -u)" "ailoop sensor" "the runner's entries name it"

prompt=$(cat "$rd/nodes/fix/logs/actuator.prompt.md")
expect_in "$prompt" "What the run knows:
## Working memory

What this run's agents and sensors recorded (key: value):

- details: {\"item\":\"item-2\",\"left\":[\"item-3\"]}
- fixed-count: 2
- fixed.item-1: true
- fixed.item-2: true
- flag: on
- last-fixed: item-2
- quoted: 42
- sensors.scope.remaining: 1
- sensors.scope.status: fail
(\`ailoop memory get KEY\` prints a value in full)" \
	"{memory-section} shows the memory as the agent starts"

AILOOP_RUN_DIR=$PWD/$rd run "$AILOOP" memory get fixed-count
expect_eq "$out" "3" "the memory outlives the run"
expect_eq "$(git ls-files "$rd" | grep -c memory.jsonl)" 0 "memory.jsonl is never committed"
expect_eq "$(git status --porcelain)" "" "memory.jsonl stays out of git status"

# memory: that is not a mapping is ignored with a note
cd "$TEST_TMP"
R2=$TEST_TMP/repo2
loop_repo "$R2" item-1
cat >"$R2/.ai-loop/agents/listy.md" <<'MD'
---
name: listy
command: [sh, .ai-loop/agents/listy.sh]
---
Empty memory: {memory-section}
MD
cat >"$R2/.ai-loop/agents/listy.sh" <<'SH'
#!/bin/sh
: >todo.txt
printf -- '---\nsummary: done\nmemory: [a, b]\n---\n' >"$AILOOP_OUTPUT"
SH
one_loop "$R2" listy.md "max_iterations: 3"
commit_all "$R2"
cd "$R2"
run "$AILOOP" run "empty it"
expect_rc 0 "a run whose agent's memory is a list"
expect_in "$err" "'memory' in '.ai-loop/runs/" "a memory list is named"
expect_in "$err" "is a list, not a mapping: ignored" "a memory list is ignored"
rd=$(ls -d .ai-loop/runs/run_*)
expect_eq "$(jq -r .key "$rd/memory.jsonl" | sort -u | tr '\n' ' ')" \
	"nodes.fix.iterations nodes.fix.status sensors.scope.remaining sensors.scope.status " "only the runner's entries"
expect_in "$(cat "$rd/nodes/fix/logs/actuator.prompt.md")" \
	"Empty memory: ## Working memory

What this run's agents and sensors recorded (key: value):

- sensors.scope.remaining: 1" "{memory-section} inline"

# an agent sensor (through a runner): its status and its metrics map
cd "$TEST_TMP"
R3=$TEST_TMP/repo3
loop_repo "$R3" item-1 item-2
cat >"$R3/.ai-loop/agents/judge.md" <<'MD'
---
name: judge
runner: sense
---
Judge the todo list.
MD
cat >"$R3/.ai-loop/agents/judge.sh" <<'SH'
#!/bin/sh
n=$(grep -c . todo.txt || true)
[ "$n" -eq 0 ] && st=pass || st=fail
printf -- '---\nstatus: %s\nmetrics:\n  left: %s\n  mood: "ok"\nmemory:\n  judged: yes\n---\n' \
	"$st" "$n" >"$AILOOP_OUTPUT"
SH
cat >"$R3/.ai-loop/flow.yaml" <<'YAML'
version: 1
runners:
  sense: {command: [sh, .ai-loop/agents/judge.sh], prompt: stdin}
flow:
  id: fix
  type: loop
  controller: builtin:all-pass
  sensors: [.ai-loop/agents/judge.md]
  actuator: {agent: .ai-loop/agents/fixer.md}
YAML
commit_all "$R3"
cd "$R3"
run "$AILOOP" run "fix"
expect_rc 0 "a run with an agent sensor"
rd=$(ls -d .ai-loop/runs/run_*)
expect_eq "$(jq -c 'select(.key | startswith("sensors.judge.")) | [.key, .value]' \
	"$rd/memory.jsonl" | tr '\n' ' ')" \
	'["sensors.judge.status","fail"] ["sensors.judge.left",2] ["sensors.judge.mood","ok"] '\
'["sensors.judge.status","fail"] ["sensors.judge.left",1] ["sensors.judge.mood","ok"] '\
'["sensors.judge.status","pass"] ["sensors.judge.left",0] ["sensors.judge.mood","ok"] ' \
	"an agent sensor's status and metrics are written after each measurement"
expect_eq "$(jq -c 'select(.key == "judged") | [.agent, .value]' "$rd/memory.jsonl" | sort -u)" \
	'["judge","yes"]' "an agent sensor's memory map is written too, yes as the text yes"

finish
