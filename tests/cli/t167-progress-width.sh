#!/usr/bin/env bash
# Progress that fits the terminal: on a terminal 60 columns wide, a step
# line wider than the screen is cut to the width (at a UTF-8 character,
# counting columns, not bytes) with its clock kept, and redrawn in place:
# the screen holds one copy of it however long the agent works, where it
# held a new one every second. A terminal made narrower (SIGWINCH) is
# followed at the next redraw. The hourly limit's countdown is cut too.
. "$(dirname "$0")/lib.sh"

export GATE=$TEST_TMP/gate STARTED=$TEST_TMP/started
PTY="python3 $FIXTURES/pty/term.py"
SCREEN="python3 $FIXTURES/pty/screen.py"
R=$TEST_TMP/repo
loop_repo "$R" a
# an actuator whose path is long and mostly two-byte characters
agent=".ai-loop/agents/éééééééééééééééééééééééééééééééé-gated.md"
cp "$R/.ai-loop/agents/gated.md" "$R/$agent"
cat >"$R/.ai-loop/flow.yaml" <<YAML
version: 1
flow:
  id: fix
  type: loop
  controller: builtin:all-pass
  sensors: [.ai-loop/agents/sensor.md]
  actuator: {strategy: direct, agent: $agent}
YAML
commit_all "$R"
cd "$R"

# the actuator works about 4.5 s; the terminal is 60 columns wide for 2.5 s, then 40
touch "$GATE"
run $PTY "$TEST_TMP/tty" 60 --resize 2.5 40 --ungate 4.5 -- env TERM=xterm "$AILOOP" run fix
expect_rc 0 "the run on a terminal 60 columns wide completes"
at=$(cat "$TEST_TMP/tty.resize")
screen=$($SCREEN "$TEST_TMP/tty" 60 0 "$at") && pass || fail "the output is UTF-8, cut at characters"
expect_eq "$(printf '%s\n' "$screen" | grep -c 'actuator')" 1 \
	"at 60 columns the screen holds one step line, not one a second"
expect_in "$screen" "ailoop: [1] fix actuator: .ai-loop/agents/" \
	"the line starts as before"

# every redraw of the live line, as shown: at most 59 columns, ending in its clock
draws() { # FILE START END: each live line drawn between START and END, escapes removed,
	# after its width in columns
	python3 - "$@" <<'PY'
import re, sys, unicodedata
data = open(sys.argv[1], "rb").read()[int(sys.argv[2]):int(sys.argv[3])].decode()
for seg in data.split("\r\x1b[K")[1:]:
    seg = re.sub(r"\x1b\[[0-9;]*m", "", re.split(r"[\r\n]", seg)[0])
    if "actuator" in seg:
        print(sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in seg), seg)
PY
}
size=$(stat -c %s "$TEST_TMP/tty")
wide=$(draws "$TEST_TMP/tty" 0 "$at")
expect_eq "$(printf '%s\n' "$wide" | awk '$1 > 59 { n++ } END { print n + 0 }')" 0 \
	"at 60 columns each redraw is at most 59 columns"
expect_in "$wide" "é…" "the line is cut inside the two-byte characters, marked by an ellipsis"
expect_in "$wide" "… 0:02" "the clock is kept"
# the first redraw after the resize may have been written before it: skip it
narrow=$(draws "$TEST_TMP/tty" "$at" "$size" | tail -n +2)
expect_in "$narrow" "0:04" "the line is redrawn after the resize"
expect_eq "$(printf '%s\n' "$narrow" | awk '$1 > 39 { n++ } END { print n + 0 }')" 0 \
	"after the terminal is made 40 columns wide, each redraw is at most 39"

# characters two columns wide (CJK) count as two
W=$TEST_TMP/wide
loop_repo "$W" a
wide=".ai-loop/agents/漢字漢字漢字漢字漢字漢字漢字漢字漢字漢字-gated.md"
cp "$W/.ai-loop/agents/gated.md" "$W/$wide"
one_loop "$W" "${wide#.ai-loop/agents/}"
commit_all "$W"
cd "$W"
touch "$GATE"
rm -f "$STARTED"
run $PTY "$TEST_TMP/wide.tty" 60 --ungate 2.5 -- env TERM=xterm "$AILOOP" run fix
expect_rc 0 "the run with a wide agent path completes"
draws=$(draws "$TEST_TMP/wide.tty" 0 "$(stat -c %s "$TEST_TMP/wide.tty")")
expect_in "$draws" "漢… 0:02" "the line is cut after a whole wide character"
expect_eq "$(printf '%s\n' "$draws" | awk '$1 > 59 { n++ } END { print n + 0 }')" 0 \
	"each redraw is at most 59 columns, a wide character counting two"
expect_eq "$($SCREEN "$TEST_TMP/wide.tty" 60 | grep -c actuator)" 0 "no copy stays on the screen"

# the hourly limit's countdown, redrawn as the clock moves (the test's
# clock, AILOOP_TEST_CLOCK: a look every 50 ms), is cut the same way, the
# time left kept
export AILOOP_TEST_CLOCK=$TEST_TMP/clock
T0=1800000000
echo $T0 >"$AILOOP_TEST_CLOCK"
H=$TEST_TMP/hourly
loop_repo "$H" a b
one_loop "$H" fixer.md
printf 'limits: {max_agent_calls_per_hour: 1}\n' >>"$H/.ai-loop/flow.yaml"
commit_all "$H"
cd "$H"
(
	i=0
	until grep -q 'in the last hour' "$TEST_TMP/hourly.tty" 2>/dev/null || [ $i -ge 400 ]; do
		sleep 0.05
		i=$((i + 1))
	done
	sleep 1
	echo $((T0 + 1)) >"$AILOOP_TEST_CLOCK"
	sleep 1
	echo $((T0 + 3600)) >"$AILOOP_TEST_CLOCK"
) &
clock=$!
run $PTY "$TEST_TMP/hourly.tty" 60 -- env TERM=xterm "$AILOOP" run fix
wait $clock
expect_rc 0 "the run that waited for the hourly limit on a terminal completes"
screen=$($SCREEN "$TEST_TMP/hourly.tty" 60) && pass || fail "the countdown is UTF-8, cut at characters"
expect_eq "$(printf '%s\n' "$screen" | grep -c 'in the last hour')" 0 \
	"no copy of the countdown stays on the screen (it is cleared when the wait ends)"
waits=$(python3 - "$TEST_TMP/hourly.tty" <<'PY'
import re, sys
data = open(sys.argv[1], "rb").read().decode()
for seg in data.split("\r\x1b[K")[1:]:
    seg = re.sub(r"\x1b\[[0-9;]*m", "", re.split(r"[\r\n]", seg)[0])
    if "in the last hour" in seg:
        print(len(seg), seg)
PY
)
expect_in "$waits" "… 1:00:00" "the countdown is cut, the time left kept"
expect_in "$waits" "… 59:59" "and moves with the clock"
expect_eq "$(printf '%s\n' "$waits" | awk '$1 > 59 { n++ } END { print n + 0 }')" 0 \
	"each redraw of the countdown is at most 59 columns"

finish
