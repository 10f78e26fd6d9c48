#!/usr/bin/env bash
# Agents at the edges: a SIGINT at any instant pauses the run, also between
# two agents; a process an agent detaches with setsid does not outlive its
# step; a prompt too long for a command-line argument and an output path
# turned into a directory are agent errors, not a paused run; an agent
# that fails on a full disk pauses the run; FIFOs an agent leaves where
# ailoop writes do not hold it; an index an agent damaged pauses the run
# with the way to mend it.
. "$(dirname "$0")/lib.sh"

# --- SIGINT at random instants of a loop of trivial agents: exit 3, paused -------
export STOP=$TEST_TMP/stop
R=$TEST_TMP/fast
loop_repo "$R" a
cat >"$R/.ai-loop/agents/until-stop.md" <<'MD'
---
name: until-stop
command: >-
  if [ -e "$STOP" ]; then printf -- '---\ntarget-met: true\n---\nstop\n';
  else printf -- '---\ntarget-met: false\n---\n## Action Plan\n\nonce more\n'; fi
---
Decides to go on until the test says stop.
MD
# (a loop that changes nothing: its circuit breaker is off, the test ends it)
one_loop "$R" noop.md "max_iterations: 10000, no_progress_limit: 0, same_error_limit: 0" .ai-loop/agents/until-stop.md
commit_all "$R"
RANDOM=45
for trial in $(seq 10); do
	w=$TEST_TMP/fast-$trial
	cp -a "$R" "$w"
	cd "$w"
	rm -f "$STOP"
	"$AILOOP" run --quiet x >/dev/null 2>"$TEST_TMP/err" &
	pid=$!
	wait_for .ai-loop/runs/.gitignore
	sleep "0.$(printf '%03d' $((RANDOM % 600 + 10)))"
	kill -INT "$pid"
	i=0 # a lost signal would let the run go on: end it, then see it fail
	while kill -0 "$pid" 2>/dev/null && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
	touch "$STOP"
	wait "$pid" && rc=0 || rc=$?
	expect_eq "$rc" 3 "trial $trial: SIGINT at a random instant exits 3"
	expect_eq "$("$AILOOP" status --json | jq -r .status)" paused "trial $trial: the run is paused"
	touch "$STOP"
	run "$AILOOP" resume
	expect_rc 0 "trial $trial: the paused run resumes and finishes"
	labels=$(triples "$w" | awk '{ print $1 }')
	expect_eq "$(printf '%s\n' "$labels" | sort -n | uniq | tr '\n' ' ')" \
		"$(seq 0 "$(printf '%s\n' "$labels" | wc -l | awk '{ print $1 - 1 }')" | tr '\n' ' ')" \
		"trial $trial: every label once, none missing"
	expect_eq "$(git status --porcelain)" "" "trial $trial: the tree is clean"
	cd "$TEST_TMP"
	rm -rf "$w"
done

# --- an agent detaches a process with setsid: it is stopped, and says so -----------
R=$TEST_TMP/detach
loop_repo "$R" a
cat >"$R/.ai-loop/agents/detach.md" <<'MD'
---
name: detach
command: >-
  setsid sh -c 'echo $$ >"$DETACHED"; sleep 1; echo late >late.txt' &
  while [ ! -s "$DETACHED" ]; do sleep 0.01; done; sh .ai-loop/agents/fix.sh
---
Fixes one item, and leaves a detached process that writes later.
MD
one_loop "$R" detach.md
commit_all "$R"
cd "$R"
export DETACHED=$TEST_TMP/detached
run "$AILOOP" run "fix all"
expect_rc 0 "the run with a detaching agent completes"
expect_in "$err" "that actuator '.ai-loop/agents/detach.md' left running after it exited" \
	"the leftover process is named as stopped"
kill -0 "$(cat "$DETACHED")" 2>/dev/null && fail "the detached process outlived the run" || pass
sleep 1.5
[ ! -e late.txt ] && pass || fail "the detached process wrote to the tree after the run"
expect_eq "$(git status --porcelain)" "" "the tree stays as the run left it"
expect_in "$(cat .ai-loop/runs/run_*/nodes/fix/logs/actuator.log)" "ailoop: stopped process" \
	"the agent's log names the process"

# --- an agent that asks on the terminal: it fails at once, never stopped unseen ------------
# ailoop in a terminal (script(1) gives it one); the agent reads an answer
# from /dev/tty, as git asking for a password or an editor would. In a
# session of its own it has no terminal: the read fails, and so does the
# agent, at once. (In ailoop's session the terminal stopped it (SIGTTIN)
# and the run waited for it without end.)
if command -v script >/dev/null; then
	R=$TEST_TMP/tty
	loop_repo "$R" a
	cat >"$R/.ai-loop/agents/ask.md" <<'MD'
---
name: ask
command: 'read -r answer </dev/tty && echo "answered $answer" >answered.txt'
---
Asks on the terminal.
MD
	one_loop "$R" ask.md "max_iterations: 1"
	commit_all "$R"
	cd "$R"
	run timeout -k 5 60 script -qec "'$AILOOP' run --quiet 'ask me'" /dev/null
	expect_eq "$(run_status)" error "an agent asking on the terminal: the run ends in an agent error"
	expect_in "$out" "actuator" "the agent is named"
	expect_in "$(cat .ai-loop/runs/run_*/nodes/fix/logs/actuator.log)" "No such device or address" \
		"the agent could not open a terminal"
	[ ! -e answered.txt ] && pass || fail "the agent read an answer"
else
	echo "skipped: no script(1) to give ailoop a terminal"
fi

# --- a prompt too long for `prompt: arg`: an agent error -------------------------------
R=$TEST_TMP/long
loop_repo "$R" a
mkdir -p "$TEST_TMP/bin"
printf '#!/bin/sh\necho ran\n' >"$TEST_TMP/bin/by-arg"
chmod +x "$TEST_TMP/bin/by-arg"
printf -- '---\nname: arg-agent\nrunner: by-arg\n---\nThe task: {task}\n' \
	>"$R/.ai-loop/agents/arg-agent.md"
cat >"$R/.ai-loop/flow.yaml" <<'YAML'
version: 1
runners:
  by-arg:
    command: [by-arg]
    prompt: arg
flow:
  id: fix
  type: loop
  controller: builtin:all-pass
  sensors: [.ai-loop/agents/sensor.md]
  actuator: {agent: .ai-loop/agents/arg-agent.md}
YAML
commit_all "$R"
cd "$R"
head -c 200000 /dev/zero | tr '\0' x >"$TEST_TMP/task"
run env PATH="$TEST_TMP/bin:$PATH" "$AILOOP" run --task-file "$TEST_TMP/task"
expect_rc 1 "a prompt over the argument limit fails the run (fail-fast)"
expect_in "$err" "actuator '.ai-loop/agents/arg-agent.md': its prompt (" "the error names the agent"
expect_in "$err" "too long for a command-line argument of runner 'by-arg'" "the error says why"
expect_in "$err" "prompt: stdin" "the error says what to do"
expect_eq "$("$AILOOP" status --json | jq -r .status)" error "the run ended in error"

# --- an output path turned into a directory: an agent error ---------------------------
R=$TEST_TMP/dirout
loop_repo "$R" a b
cat >"$R/.ai-loop/agents/dirout.md" <<'MD'
---
name: dirout
command: mkdir -p "$AILOOP_OUTPUT/sub"; echo x >"$AILOOP_OUTPUT/sub/f"
---
Leaves a directory where its output goes.
MD
one_loop "$R" dirout.md "max_iterations: 2"
commit_all "$R"
cp -a "$R" "$R-continue"
cd "$R"
run "$AILOOP" run x
expect_rc 1 "an output path turned into a directory fails the run (fail-fast)"
expect_in "$err" "actuator '.ai-loop/agents/dirout.md' left a directory at its output path" \
	"the error names the agent and the path"
expect_eq "$("$AILOOP" status --json | jq -r .status)" error "the run ended in error"
R=$R-continue
one_loop "$R" dirout.md "max_iterations: 2" "" "termination: {on_error: continue}"
commit_all "$R"
cd "$R"
run "$AILOOP" run x
expect_not_in "$err" "paused" "with on_error continue the loop goes on"
expect_eq "$(grep -c 'left a directory at its output path' <<<"$err" | awk '$1 >= 2 { print "yes" }')" \
	yes "each iteration's failure is an agent error"
expect_eq "$("$AILOOP" status --json | jq -r .status)" max-iterations-reached \
	"the loop ran to its limit"

# --- an agent that fails on a full disk (or quota): the machine's failure, not
# the agent's, so the run pauses (even with on_error: continue), and the
# resume runs the step again: the history is a run's that never ran short
export FULL=$TEST_TMP/full
R=$TEST_TMP/full-disk
loop_repo "$R" a b
cat >"$R/.ai-loop/agents/short.md" <<'MD'
---
name: short
command: >-
  if [ -s "$FULL" ]; then echo "sed: couldn't flush stdout: $(cat "$FULL")" >&2; : >"$FULL"; exit 4;
  else sh .ai-loop/agents/fix.sh; fi
---
Fixes one item, unless the disk is full.
MD
one_loop "$R" short.md "" "" "termination: {on_error: continue}"
commit_all "$R"
cp -a "$R" "$R-reference"
(cd "$R-reference" && "$AILOOP" run --quiet x >/dev/null 2>&1)
for said in "No space left on device" "Disk quota exceeded"; do
	rm -rf "$R-$said"
	cp -a "$R" "$R-$said"
	cd "$R-$said"
	echo "$said" >"$FULL"
	run "$AILOOP" run x
	expect_rc 70 "$said: the run stops as on its own full disk"
	expect_in "$err" "actuator '.ai-loop/agents/short.md' failed with exit status 4, and its output says \"$said\"" \
		"$said: the error names the agent and what it said"
	expect_in "$out" "is paused: continue it with 'ailoop resume" "$said: the run is paused"
	run "$AILOOP" resume
	expect_rc 0 "$said: the resume once there is room completes the run"
	expect_eq "$(triples "$R-$said")" "$(triples "$R-reference")" "$said: the history of a run never short"
	expect_eq "$(git status --porcelain)" "" "$said: nothing left uncommitted"
done

# --- an agent leaves FIFOs where ailoop writes next (its output, its log, the
# state's scratch file): an open for writing would wait for a reader for
# ever; they are replaced as links are, and the run completes
R=$TEST_TMP/fifos
loop_repo "$R" a b
cat >"$R/.ai-loop/agents/fifos.md" <<'MD'
---
name: fifos
command: >-
  sh .ai-loop/agents/fix.sh;
  d=$(dirname "$AILOOP_OUTPUT");
  for f in "$AILOOP_OUTPUT" "$d/logs/actuator.log" "$d/orchestrator-output.md.lock"; do
  rm -f "$f"; mkfifo "$f"; done
---
Fixes one item, and leaves FIFOs behind.
MD
one_loop "$R" fifos.md
commit_all "$R"
cd "$R"
run timeout 60 "$AILOOP" run x
expect_rc 0 "FIFOs where ailoop writes: the run completes, without waiting for a reader"
expect_eq "$(find .ai-loop -type p)" "" "FIFOs where ailoop writes: each replaced by a file"
expect_eq "$(git status --porcelain)" "" "FIFOs where ailoop writes: nothing left uncommitted"

# --- an output written by one call and not by the next ---------------------------------
# Each call starts from an empty output file: what one call wrote never
# passes for the next one's output, and a symbolic link an agent left there
# is removed, never written through.
R=$TEST_TMP/stale-output
loop_repo "$R" a
printf 'kept\n' >"$TEST_TMP/outside.md"
cat >"$R/.ai-loop/agents/once.md" <<MD
---
name: once
command: n=\$((\$(cat .calls 2>/dev/null || echo 0) + 1)); echo \$n >.calls; case \$n in 1) echo "written by call 1" >"\$AILOOP_OUTPUT" ;; 2) ln -sf "$TEST_TMP/outside.md" "\$AILOOP_OUTPUT" ;; *) echo "printed by call \$n" ;; esac
---
Writes its output once, then links it out, then only prints.
MD
echo .calls >"$R/.gitignore"
one_loop "$R" once.md "max_iterations: 3"
commit_all "$R"
cd "$R"
run "$AILOOP" run x
expect_rc 1 "the loop ran its three iterations, its target not met"
# output N: the actuator's output as iteration N committed it
output() {
	git show "$(git log -1 --format=%H --grep="^\[iteration\] $1\$"):$(ls -d .ai-loop/runs/run_*)/nodes/fix/actuator-output.md"
}
expect_eq "$(output 1)" "written by call 1" "the output a call wrote is its output"
expect_eq "$(output 2)" "$TEST_TMP/outside.md" "a call that linked its output elsewhere: the link is committed"
expect_eq "$(output 3)" "printed by call 3" "the next call's output is what it printed, not the link's"
expect_eq "$(cat "$TEST_TMP/outside.md")" "kept" "the file the link named is left as it was"

# --- an index an agent damaged: the run pauses, says how to mend it, and resumes -----
R=$TEST_TMP/damaged-index
new_repo "$R" && mkdir -p "$R/.ai-loop/agents"
printf -- '---\nname: damage\ncommand: head -c 200 /dev/zero >.git/index; echo x >>README\n---\n' \
	>"$R/.ai-loop/agents/damage.md"
printf -- '---\nname: changed\ncommand: grep -q x README\n---\n' >"$R/.ai-loop/agents/changed.md"
printf 'version: 1\nflow:\n  id: m\n  type: loop\n  controller: builtin:all-pass\n  sensors: [.ai-loop/agents/changed.md]\n  actuator: {agent: .ai-loop/agents/damage.md}\n' \
	>"$R/.ai-loop/flow.yaml"
commit_all "$R"
cd "$R"
run "$AILOOP" run x
expect_rc 70 "an agent damaged the index: the run pauses"
expect_in "$err" "(the index, .git/index, is damaged: 'rm .git/index && git reset' makes it anew from HEAD and leaves the work tree as it is)" \
	"an agent damaged the index: how to mend it"
rm .git/index && git reset -q
run "$AILOOP" resume
expect_rc 0 "the index made anew: the run resumes and completes"
expect_eq "$(git show HEAD:README | tail -1)" x "the agent's change is committed"

finish
