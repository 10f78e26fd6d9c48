#!/usr/bin/env bash
# The semantics of ReAcTree's control nodes, case by case in the manner of
# BehaviorTree.CPP's tests: where sequence and fallback stop; loop-until
# with each exit_on, failing children, break_loop, max_iterations and
# timeout; conditionals nested three deep and missing branches; all, any
# and not; transactions that roll back (byte for byte, modes too) and
# rollback_on; and trees that mix them with the sensor-form loop. Every
# action is tests/fixtures/agents/scripted.sh, whose plan each case gives.
. "$(dirname "$0")/lib.sh"

# tree NAME: a repository for one case (todo.txt holds a and b), its flow
# from standard input; the agents' plan is empty until `plan` gives one
tree() {
	R=$TEST_TMP/$1
	loop_repo "$R" a b
	scripted_agents "$R" action
	cat >"$R/.ai-loop/flow.yaml"
	export TRAIL=$TEST_TMP/$1.trail PLAN=$TEST_TMP/$1.plan
	: >"$TRAIL"
	: >"$PLAN"
}

plan() { cat >"$PLAN"; }

# go: runs the case; $path is the actions that ran, in order
go() {
	[ -z "$(git -C "$R" status --porcelain)" ] || commit_all "$R"
	cd "$R" || exit 1
	run "$AILOOP" run --quiet "exercise the tree"
	path=$(tr '\n' ' ' <"$TRAIL" | sed 's/ $//')
}

# commits_of NODE-PATH: "label status" of each commit of that node
commits_of() {
	triples "$R" | awk -v p="$1" '$2 == p { printf "%s%s %s", sep, $1, $3; sep = "," }'
}

all_triples() { triples "$R" | tr '\n' ,; }

expect_run() {
	expect_rc "$1" "$3: exit code"
	expect_eq "$(run_status)" "$2" "$3: the run's status"
	expect_eq "$(git status --porcelain)" "" "$3: the work tree is clean"
}

# --- sequence and fallback

tree sequence-stops <<'YAML'
version: 1
flow:
  id: s
  type: sequence
  children: [{id: a, skill: a}, {id: b, skill: b}, {id: c, skill: c}]
YAML
plan <<'PLAN'
case $skill in b) fails ;; esac
PLAN
go
expect_eq "$path" "a b" "sequence: stops at the first failing child"
expect_eq "$(all_triples)" "0 s/a complete,0 s/b failed,0 s failed," "sequence: the commits"
expect_run 1 failed "sequence that fails"

tree fallback-stops <<'YAML'
version: 1
flow:
  id: f
  type: fallback
  children: [{id: a, skill: a}, {id: b, skill: b}, {id: c, skill: c}, {id: d, skill: d}]
YAML
plan <<'PLAN'
case $skill in a) fails ;; b) says_fail ;; esac
PLAN
go
expect_eq "$path" "a b c" "fallback: stops at the first succeeding child"
expect_eq "$(all_triples)" "0 f/a failed,0 f/b failed,0 f/c complete,0 f complete," "fallback: the commits"
expect_run 0 complete "fallback that succeeds"

tree fallback-all-fail <<'YAML'
version: 1
flow:
  id: f
  type: fallback
  children: [{id: a, skill: a}, {id: b, skill: b}]
YAML
plan <<'PLAN'
fails
PLAN
go
expect_eq "$path" "a b" "fallback: tries every child"
expect_run 1 failed "fallback whose children all fail"

# --- loop-until

tree until-true <<'YAML'
version: 1
flow:
  id: l
  type: loop
  max_iterations: 5
  exit_on: condition_true
  condition: {key: tests.status, operator: equals, value: passing}
  children: [{id: t, skill: t}, {id: u, skill: u}]
YAML
plan <<'PLAN'
case $skill:$n in t:3) mem tests.status passing ;; t:*) mem tests.status failing ;; u:1) fails ;; u:2) says_fail ;; esac
PLAN
go
expect_eq "$path" "t u t u t u" "until condition_true: every child runs each iteration, failing ones too"
expect_eq "$(all_triples)" "1 l/t complete,1 l/u failed,1 l running,2 l/t complete,2 l/u failed,2 l running,\
3 l/t complete,3 l/u complete,3 l complete," "until condition_true: one commit per action and iteration"
expect_run 0 complete "until condition_true"

tree until-false <<'YAML'
version: 1
flow:
  id: l
  type: loop
  max_iterations: 5
  exit_on: condition_false
  condition: {type: file_exists, path: "pending/*.txt"}
  children: [{id: w, skill: w}]
YAML
plan <<'PLAN'
case $skill:$n in w:1) creates pending/one.txt; creates pending/two.txt ;; w:2) rm pending/one.txt ;; w:*) rm -r pending ;; esac
PLAN
go
expect_eq "$(commits_of l)" "1 running,2 running,3 complete" "until condition_false: while files are pending"
expect_run 0 complete "until condition_false"

tree until-manual-break <<'YAML'
version: 1
flow:
  id: watch
  type: loop
  max_iterations: 5
  exit_on: manual_break
  children: [{id: w, skill: w}]
YAML
plan <<'PLAN'
case $skill:$n in w:1) mem loop.watch.break false ;; w:3) mem loop.watch.break true ;; esac
PLAN
go
expect_eq "$path" "w w w" "manual_break: until an agent sets loop.<id>.break to true"
expect_eq "$(commits_of watch)" "1 running,2 running,3 complete" "manual_break: three iterations"
expect_run 0 complete "manual_break"

# the same loop entered again (an outer loop's next iteration): the break
# an agent set in its last entry ended that entry, not this one
tree manual-break-again <<'YAML'
version: 1
flow:
  id: outer
  type: loop
  max_iterations: 2
  children:
    - id: inner
      type: loop
      max_iterations: 3
      exit_on: manual_break
      children: [{id: w, skill: w}]
YAML
plan <<'PLAN'
case $skill:$n in w:2) mem loop.inner.break true ;; esac
PLAN
go
expect_eq "$path" "w w w w w" \
	"manual_break entered again: broken after two, then its three iterations"
expect_eq "$(commits_of outer/inner)" "1.1 running,1.2 complete,2.1 running,2.2 running,2.3 complete" \
	"manual_break entered again: the inner loop's commits"
expect_run 0 complete "manual_break entered again"

# a manual break that never comes: the loop has no condition, so it ran
# its iterations and succeeds (SPEC §3.1), and what follows it runs
tree manual-break-never <<'YAML'
version: 1
flow:
  id: s
  type: sequence
  children:
    - id: poll
      type: loop
      max_iterations: 2
      exit_on: manual_break
      children: [{id: w, skill: w}]
    - {id: after, skill: after}
YAML
go
expect_eq "$path" "w w after" "manual_break never set: the loop's iterations, then its sibling"
expect_eq "$(commits_of s/poll)" "1 running,2 complete" "manual_break never set: the loop succeeds"
expect_run 0 complete "a manual break that never comes"

tree until-max <<'YAML'
version: 1
flow:
  id: l
  type: loop
  max_iterations: 2
  condition: {key: never.set, operator: exists}
  children: [{id: w, skill: w}]
YAML
go
expect_eq "$path" "w w" "max_iterations with a condition: runs them all"
expect_eq "$(commits_of l)" "1 running,2 max-iterations-reached" "max_iterations with a condition: the last commit"
expect_run 1 max-iterations-reached "max_iterations with a condition"

tree repeat <<'YAML'
version: 1
flow:
  id: l
  type: loop
  max_iterations: 3
  children: [{id: w, skill: w}]
YAML
plan <<'PLAN'
fails
PLAN
go
expect_eq "$path" "w w w" "no condition: repeats max_iterations times"
expect_eq "$(commits_of l)" "1 running,2 running,3 complete" "no condition: succeeds, failing child or not"
expect_run 0 complete "a repeating loop"

tree break-loop <<'YAML'
version: 1
flow:
  id: l
  type: loop
  max_iterations: 5
  children:
    - {id: a, skill: a}
    - id: s
      type: sequence
      children: [{id: b, skill: b}, {id: stop, skill: break_loop}, {id: c, skill: c}]
    - {id: d, skill: d}
YAML
go
expect_eq "$path" "a b c" "break_loop: its sequence finishes, then the loop ends (d never runs)"
expect_eq "$(commits_of l)" "1 complete" "break_loop: one iteration, a success"
expect_not_in "$(all_triples)" "l/s/stop" "break_loop: runs no agent and makes no commit"
expect_eq "$(sed -n 's/^termination-reason: //p' .ai-loop/runs/run_*/nodes/l/result-output.md)" break_loop \
	"break_loop: the loop's result says so"
expect_run 0 complete "break_loop"

tree break-inner <<'YAML'
version: 1
flow:
  id: outer
  type: loop
  max_iterations: 2
  children:
    - id: inner
      type: loop
      max_iterations: 3
      children: [{id: a, skill: a}, {id: stop, skill: break_loop}, {id: b, skill: b}]
    - {id: c, skill: c}
YAML
go
expect_eq "$path" "a c a c" "break_loop: ends the nearest loop only"
expect_eq "$(commits_of outer/inner)" "1.1 complete,2.1 complete" "break_loop: inner labels"
expect_run 0 complete "break_loop in a nested loop"

tree timeout <<'YAML'
version: 1
flow:
  id: slow
  type: loop
  max_iterations: 10
  timeout_seconds: 1
  children: [{id: nap, skill: nap}]
YAML
plan <<'PLAN'
naps 0.4
PLAN
start=$(date +%s)
go
expect_rc 2 "timeout: exit 2 at the root"
expect_eq "$(run_status)" "timeout" "timeout: the run's status"
expect_eq "$(triples "$R" | tail -1)" "$(triples "$R" | tail -1 | cut -d' ' -f1) slow timeout" \
	"timeout: the loop's last commit"
[ $(($(date +%s) - start)) -lt 6 ] && pass || fail "timeout: the loop ends soon after its time"
expect_eq "$(git status --porcelain)" "" "timeout: the work tree is clean"

# --- conditionals

tree nested-conditionals <<'YAML'
version: 1
flow:
  id: main
  type: sequence
  children:
    - {id: setup, skill: setup}
    - id: c1
      type: conditional
      condition: {key: level1, operator: equals, value: ready}
      then:
        id: c2
        type: conditional
        condition: {key: level2, operator: greater_than, value: 10}
        then: {id: wrong2, skill: wrong2}
        else:
          id: c3
          type: conditional
          condition: {key: level3, operator: matches_regex, value: '^v\d+$'}
          then: {id: deep, skill: deep}
          else: {id: wrong3, skill: wrong3}
      else: {id: wrong1, skill: wrong1}
    - id: none
      type: conditional
      condition: {key: level1, operator: equals, value: no}
      then: {id: wrong4, skill: wrong4}
    - {id: last, skill: last}
YAML
plan <<'PLAN'
case $skill in setup) mem level1 ready; mem level2 7; mem level3 v12 ;; esac
PLAN
go
expect_eq "$path" "setup deep last" "conditionals: true, false, true three deep; a missing branch is success"
expect_in "$(all_triples)" "0 main/c1/c2/c3/deep complete," "conditionals: the deep action's commit"
expect_run 0 complete "nested conditionals"

tree combinators <<'YAML'
version: 1
flow:
  id: main
  type: sequence
  children:
    - {id: setup, skill: setup}
    - id: c-all
      type: conditional
      condition: {all: [{key: a, operator: equals, value: 1}, {key: b, operator: equals, value: 2}]}
      then: {id: all-yes, skill: all-yes}
      else: {id: all-no, skill: all-no}
    - id: c-all2
      type: conditional
      condition: {all: [{key: a, operator: equals, value: 1}, {key: b, operator: equals, value: 9}]}
      then: {id: all2-yes, skill: all2-yes}
      else: {id: all2-no, skill: all2-no}
    - id: c-any
      type: conditional
      condition: {any: [{key: a, operator: equals, value: 5}, {type: file_exists, path: README}]}
      then: {id: any-yes, skill: any-yes}
      else: {id: any-no, skill: any-no}
    - id: c-any2
      type: conditional
      condition: {any: [{key: a, operator: equals, value: 5}, {type: file_exists, path: nope*}]}
      then: {id: any2-yes, skill: any2-yes}
      else: {id: any2-no, skill: any2-no}
    - id: c-not
      type: conditional
      condition: {not: {key: a, operator: equals, value: 5}}
      then: {id: not-yes, skill: not-yes}
      else: {id: not-no, skill: not-no}
    - id: c-mix
      type: conditional
      condition:
        all:
          - any: [{key: b, operator: less_than, value: 1}, {key: c, operator: exists}]
          - not: {any: [{key: d, operator: exists}, {type: command, command: [false]}]}
      then: {id: mix-yes, skill: mix-yes}
      else: {id: mix-no, skill: mix-no}
YAML
plan <<'PLAN'
case $skill in setup) mem a 1; mem b 2; mem c x ;; esac
PLAN
go
expect_eq "$path" "setup all-yes all2-no any-yes any2-no not-yes mix-yes" "all, any and not, nested"
expect_run 0 complete "conditions combined"

# a condition that cannot be evaluated fails the conditional, and says why
tree condition-broken <<'YAML'
version: 1
flow:
  id: main
  type: fallback
  children:
    - id: c
      type: conditional
      condition: {type: command, command: [no-such-prog]}
      then: {id: yes, skill: yes}
    - {id: after, skill: after}
YAML
commit_all "$R"
cd "$R" && run "$AILOOP" run "exercise the tree"
expect_eq "$(tr '\n' ' ' <"$TRAIL" | sed 's/ $//')" "after" "a broken condition: the conditional fails, the fallback goes on"
expect_in "$err" "main/c: condition at .ai-loop/flow.yaml:8:18: cannot run 'no-such-prog'" \
	"a broken condition: where and why, on the terminal"
expect_run 0 complete "a broken condition in a fallback"

# --- transactions

# tx_tree NAME: the case of a transaction of w and x in a fallback, then after
tx_tree() {
	tree "$1" <<'YAML'
version: 1
flow:
  id: main
  type: fallback
  children:
    - id: tx
      type: transaction
      children: [{id: w, skill: w}, {id: x, skill: x}]
    - {id: after, skill: after}
YAML
}

tx_tree rollback
mkdir -p "$R/bin" "$R/docs"
printf '#!/bin/sh\necho hi\n' >"$R/bin/tool" && chmod 755 "$R/bin/tool"
printf 'guide\n' >"$R/docs/guide.md"
ln -s docs/guide.md "$R/GUIDE"
printf 'no newline' >"$R/raw.bin"
commit_all "$R"
before=$(code_tree "$R")
plan <<'PLAN'
case $skill in
w)
	echo changed >>README; rm todo.txt; chmod 644 bin/tool; rm -r docs; ln -sf README GUIDE
	creates new/dir/file.txt; printf '\001\002' >raw.bin ;;
x) says_fail ;;
esac
PLAN
go
expect_eq "$path" "w x after" "rollback: the transaction fails, the fallback goes on"
expect_eq "$(all_triples)" "0 main/tx/w complete,0 main/tx/x failed,0 main/tx failed,0 main/after complete,0 main complete," \
	"rollback: a rollback commit between the actions"
expect_eq "$(git log --format=%s | grep -c rollback)" 1 "rollback: its commit says so"
expect_eq "$(code_tree "$R")" "$before" "rollback: the tree is byte for byte what it was"
expect_eq "$(stat -c %a bin/tool) $(readlink GUIDE) $(cat docs/guide.md) $(cat raw.bin) $(cat todo.txt | tr '\n' ' ')" \
	"755 docs/guide.md guide no newline a b " "rollback: the work tree has its files, modes and links back"
[ ! -e new ] && pass || fail "rollback: the new files and directories are gone"
expect_run 0 complete "rollback"

tree rollback-on <<'YAML'
version: 1
flow:
  id: main
  type: fallback
  children:
    - id: plain
      type: transaction
      rollback_on: [timeout]
      children: [{id: w, skill: w}, {id: x, skill: x}]
    - id: timed
      type: transaction
      rollback_on: [timeout]
      timeout_seconds: 1
      children: [{id: y, skill: y}, {id: z, skill: z}]
YAML
plan <<'PLAN'
case $skill in w) creates kept.txt ;; x) fails ;; y) creates gone.txt ;; z) naps 3 ;; esac
PLAN
go
expect_eq "$path" "w x y z" "rollback_on: both transactions run"
expect_eq "$(all_triples)" "0 main/plain/w complete,0 main/plain/x failed,0 main/timed/y complete,\
0 main/timed/z timeout,0 main/timed timeout,0 main failed," \
	"rollback_on [timeout]: a failure ends it without a commit, a timeout rolls back"
[ -e kept.txt ] && git cat-file -e HEAD:kept.txt 2>/dev/null && pass ||
	fail "rollback_on [timeout]: a plain failure does not roll back"
[ ! -e gone.txt ] && pass || fail "rollback_on [timeout]: a timeout rolls back"
expect_in "$(git log --format=%s | grep rollback | wc -l)" 1 "rollback_on: one rollback commit, the timeout's"
expect_run 1 failed "rollback_on"

# the state at the start is what comes back: uncommitted changes the run
# was allowed to start with stay, whatever the transaction did to them
tx_tree rollback-dirty
commit_all "$R"
plan <<'PLAN'
case $skill in w) echo "the transaction's" >>README; creates w.txt ;; x) fails ;; esac
PLAN
cd "$R" && echo "my uncommitted edit" >>README && echo "my notes" >notes.txt
run "$AILOOP" run --quiet --allow-dirty "exercise the tree"
expect_rc 0 "rollback over uncommitted changes: the run completes"
expect_eq "$(tr '\n' ' ' <README) $(cat notes.txt)" "hello my uncommitted edit  my notes" \
	"rollback over uncommitted changes: they are as they were at the start"
[ ! -e w.txt ] && pass || fail "rollback over uncommitted changes: the transaction's new file is gone"
expect_eq "$(git show HEAD:notes.txt)" "my notes" "rollback over uncommitted changes: the last commit holds them"

# the .gitignore files come back first: a file the transaction made and
# ignored is removed, an ignored file it un-ignored (and so committed) stays
tx_tree rollback-ignores
printf 'local.env\n' >"$R/.gitignore"
commit_all "$R"
printf 'SECRET=mine\n' >"$R/local.env"
plan <<'PLAN'
case $skill in w) echo generated >gen.txt; printf 'gen.txt\n' >.gitignore ;; x) fails ;; esac
PLAN
go
expect_eq "$path" "w x after" "rollback of .gitignore changes: the transaction fails, the fallback goes on"
[ ! -e gen.txt ] && pass || fail "rollback of .gitignore changes: the file the transaction made and ignored is gone"
expect_eq "$(cat local.env 2>&1)" "SECRET=mine" "rollback of .gitignore changes: the ignored file of the start is kept"
expect_eq "$(cat .gitignore) $(git ls-tree --name-only HEAD local.env gen.txt)" "local.env " \
	"rollback of .gitignore changes: the rules of the start, and neither file in the last commit"
expect_run 0 complete "rollback of .gitignore changes"

# --- mixed trees

# sensor_over NAME CHILDREN: the case of a sensor-form loop over a sequence of CHILDREN
sensor_over() {
	tree "$1" <<YAML
version: 1
flow:
  id: fix
  type: loop
  controller: builtin:all-pass
  sensors: [.ai-loop/agents/sensor.md]
  actuator:
    strategy: composite
    child:
      id: work
      type: sequence
      children: $2
YAML
}

sensor_over sensor-over-sequence '[{id: look, skill: look}, {id: mend, skill: mend}]'
plan <<'PLAN'
case $skill in mend) sed -i 1d todo.txt ;; esac
PLAN
go
expect_eq "$path" "look mend look mend" "sensor-form loop over a sequence: one pass per item"
expect_eq "$(label_paths "$R")" "0 fix, 1 fix/work/look, 1 fix/work/mend, 1 fix, 2 fix/work/look, \
2 fix/work/mend, 2 fix, 3 fix" "sensor-form loop over a sequence: the actions have the iteration's label"
expect_eq "$(commits_of fix)" "0 running,1 running,2 running,3 complete" "sensor-form loop over a sequence: the loop's commits"
expect_eq "$(cat todo.txt)" "" "sensor-form loop over a sequence: everything fixed"
expect_run 0 complete "sensor-form loop over a sequence"

# break_loop below a sensor-form loop's actuation: the loop ends in it,
# after one actuation, and says so
sensor_over sensor-break '[{id: mend, skill: mend}, {id: stop, skill: break_loop}]'
plan <<'PLAN'
case $skill in mend) sed -i 1d todo.txt ;; esac
PLAN
go
expect_eq "$path" "mend" "break_loop below a sensor-form loop: one actuation"
result=$(sed -n '/^termination-reason/p; /^iterations-executed/p; /^target-met/p' \
	.ai-loop/runs/run_*/nodes/fix/result-output.md | tr '\n' ' ')
expect_eq "$result" "target-met: false termination-reason: break_loop iterations-executed: 1 " \
	"break_loop below a sensor-form loop: the result says how it ended, and after how many"
expect_eq "$(AILOOP_RUN_DIR=$(ls -d "$PWD"/.ai-loop/runs/run_*) "$AILOOP" memory get nodes.fix.iterations)" 1 \
	"break_loop below a sensor-form loop: working memory's count"
expect_run 0 complete "break_loop below a sensor-form loop"

tree until-over-sensor <<'YAML'
version: 1
flow:
  id: rounds
  type: loop
  max_iterations: 2
  children:
    - {id: add, skill: add}
    - id: fix
      type: loop
      controller: builtin:all-pass
      sensors: [.ai-loop/agents/sensor.md]
      actuator:
        strategy: composite
        child: {id: mend, skill: mend}
YAML
plan <<'PLAN'
case $skill in add) echo "item-$n" >>todo.txt ;; mend) sed -i 1d todo.txt ;; esac
PLAN
go
expect_eq "$path" "add mend mend mend add mend" "loop-until over a sensor-form loop"
expect_eq "$(commits_of rounds/fix)" "1.0 running,1.1 running,1.2 running,1.3 running,1.4 complete,2.0 running,2.1 running,2.2 complete" \
	"loop-until over a sensor-form loop: labels nest"
expect_eq "$(commits_of rounds)" "1 running,2 complete" "loop-until over a sensor-form loop: its iterations"
expect_run 0 complete "loop-until over a sensor-form loop"

finish
