#!/usr/bin/env bash
# Watching a run from another terminal: `ailoop status --watch` shows the
# run again as it goes (off a terminal, each new state once; on one, the
# screen cleared and drawn again) and exits when the run ends, with the
# status `ailoop run` gives (0 complete, 4 blocked); `ailoop log --follow`
# prints each iteration as its commit lands and exits when the run ends.
. "$(dirname "$0")/lib.sh"

R=$TEST_TMP/repo
loop_repo "$R" a b c d
# each actuation takes a second: the iterations land one by one
printf -- '---\nname: slow\ncommand: [sh, -c, "sleep 1; exec sh .ai-loop/agents/fix.sh"]\n---\nFix one item, slowly.\n' \
	>"$R/.ai-loop/agents/slow.md"
one_loop "$R" slow.md
commit_all "$R"
cp -a "$R" "$TEST_TMP/blocked"
cd "$R"

# started_run: `ailoop run` in the background, once its first commit is made
started_run() {
	"$AILOOP" run --quiet fix >/dev/null 2>&1 &
	run_pid=$!
	local i=0
	until git log -1 --format=%s 2>/dev/null | grep -q '^ai-loop\['; do
		sleep 0.05
		i=$((i + 1))
		[ $i -lt 400 ] || { fail "the run made no commit in 20 s"; return 1; }
	done
}

# stamped FILE CMD...: CMD's output lines into FILE, each after the time it came (ms)
stamped() {
	local file=$1
	shift
	"$@" | while IFS= read -r line; do printf '%s %s\n' "$(date +%s%3N)" "$line"; done >"$file"
	return "${PIPESTATUS[0]}"
}

started_run
stamped "$TEST_TMP/watch" "$AILOOP" status --watch --interval 0.2 &
watch_pid=$!
stamped "$TEST_TMP/follow" "$AILOOP" log --follow --oneline --interval 0.2 &
follow_pid=$!
wait $run_pid && pass || fail "the run completes"
end=$(date +%s%3N)
wait $watch_pid && rc=0 || rc=$?
out=$(cut -d' ' -f2- "$TEST_TMP/watch")
expect_rc 0 "status --watch exits 0 once the run completed"
wait $follow_pid && pass || fail "log --follow exits 0 once the run ended"
for f in watch follow; do
	last=$(tail -1 "$TEST_TMP/$f" | cut -d' ' -f1)
	[ $((last - end)) -lt 3000 ] && pass || fail "$f ends within 3 s of the run: $((last - end)) ms"
done

# status --watch: the states the run went through, each once, the last the run's end
states=$(printf '%s\n' "$out" | grep -c '^run run_')
[ "$states" -ge 4 ] && pass || fail "status --watch shows the run as it goes: $states states"
# about 25 looks at 0.2 s: an unchanged state is not printed again
[ "$states" -le 16 ] && pass || fail "status --watch printed $states states, not only new ones"
expect_in "$out" "running" "a state of the run at work"
expect_eq "$(printf '%s\n' "$out" | grep '^run run_' | tail -1 | cut -d' ' -f3)" "complete" \
	"the last state shown is the run's end"
expect_in "$out" "2 of 10" "a later iteration is shown"
expect_eq "$(printf '%s\n' "$out" | grep -A1000 '^run run_' | grep -c '^run run_.*complete')" 1 \
	"the end is shown once"

# log --follow: what `ailoop log` prints after the run, line for line, as it came
expect_eq "$(cut -d' ' -f2- "$TEST_TMP/follow")" "$("$AILOOP" log --oneline)" \
	"log --follow printed every iteration of the run"
first=$(head -1 "$TEST_TMP/follow" | cut -d' ' -f1)
last=$(tail -1 "$TEST_TMP/follow" | cut -d' ' -f1)
[ $((last - first)) -ge 2000 ] && pass ||
	fail "log --follow printed the iterations as they landed: $((last - first)) ms from first to last"
expect_eq "$(wc -l <"$TEST_TMP/follow")" "$(git log --format=%s | grep -c '^ai-loop\[')" \
	"each commit printed once"

# a run that is over: on a terminal, drawn once on a cleared screen
run python3 "$FIXTURES/pty/term.py" "$TEST_TMP/tty" 80 -- "$AILOOP" status --watch
expect_rc 0 "status --watch of a completed run"
expect_in "$(cat "$TEST_TMP/tty")" $'\033[H\033[2J' "on a terminal the screen is cleared and drawn again"
expect_in "$(cat "$TEST_TMP/tty")" "complete" "with the run's state"
run "$AILOOP" log --follow --oneline
expect_rc 0 "log --follow of a run that is over prints it and exits"
expect_eq "$out" "$("$AILOOP" log --oneline)" "as log does"

# a run that is blocked (its budget of agent calls spent): exit 4
cd "$TEST_TMP/blocked"
sed -i '1a limits:\n  max_agent_calls: 2' .ai-loop/flow.yaml
commit_all . "a budget of two calls"
started_run
run "$AILOOP" status --watch --interval 0.2
wait $run_pid
expect_rc 4 "status --watch of a run that ends blocked exits 4, as the run does"
expect_in "$out" "blocked" "and shows it blocked"

run "$AILOOP" status --watch --interval 0
expect_rc 64 "an interval below 0.1 s is a usage error"
expect_in "$err" "--interval takes seconds from 0.1 to 3600, not '0'" "which says so"
run "$AILOOP" log --follow --interval soon
expect_rc 64 "an interval that is no number is a usage error"

finish
