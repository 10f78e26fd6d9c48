#!/usr/bin/env bash
# The kill test: a three-level run of scripted agents, killed with SIGKILL
# at many instants and resumed, must end exactly like the same run left
# alone: the same (label, node, status) sequence, no label twice and none
# missing, the same tree, a clean `git fsck --strict`, status complete.
# One resume per kill, always: a run that needs a second try is a failure.
#
# Kill points (AILOOP_CRASH_AT: state and artifact writes before and after
# their rename, the commit staged and made but not yet recorded, agents at
# work): every point of the first entry of each child loop, each kind of
# point of the later entries and of the root, every point of the run's
# start and end; kills at random instants; and kills during the resume
# itself.
. "$(dirname "$0")/lib.sh"

T=$TEST_TMP
loop_repo "$T/template" a b c d
three_loops "$T/template"
commit_all "$T/template"

# the reference, with every crash point it passes logged
cp -a "$T/template" "$T/reference"
(cd "$T/reference" && AILOOP_CRASH_LOG="$T/points" "$AILOOP" run --quiet "release it" >/dev/null)
ref_triples=$(triples "$T/reference")
ref_tree=$(code_tree "$T/reference")
total=$(wc -l <"$T/points")
expect_eq "$(printf '%s\n' "$ref_triples" | wc -l)" 24 "the reference run's length"
[ "$total" -gt 300 ] && pass || fail "only $total crash points in the reference run"

tried=0 recovered=0

# kill_and_resume NAME RUN-ENV RESUME-ENV: one kill point, then one resume
# (two if RESUME-ENV kills the first)
kill_and_resume() {
	local name=$1 run_env=$2 resume_env=$3 w=$T/work rc tries=0 problems="" kills=1
	[ -z "$resume_env" ] || kills=2
	rm -rf "$w"
	cp -a "$T/template" "$w"
	cd "$w"
	if [ "${run_env%% *}" = "after" ]; then # a kill at a random instant
		"$AILOOP" run --quiet "release it" >/dev/null 2>&1 &
		local pid=$!
		sleep "${run_env#after }"
		kill -KILL "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null && rc=0 || rc=$?
	else # (in a command substitution: the shell says nothing of the kill)
		rc=$({ env $run_env "$AILOOP" run --quiet "release it" >/dev/null 2>&1; echo $?; } 2>/dev/null)
	fi
	while [ "$rc" -ne 0 ] && [ "$tries" -lt "$kills" ]; do
		tries=$((tries + 1))
		rc=$({ env $resume_env "$AILOOP" resume >/dev/null 2>"$T/resume.err"; echo $?; } 2>/dev/null)
		resume_env=""
		if [ "$rc" -eq 66 ] && grep -q "no run to resume" "$T/resume.err"; then
			if "$AILOOP" status >/dev/null 2>&1; then
				rc=0 # killed after its last commit: the run is over
			else # killed before the run existed: the user runs it again
				"$AILOOP" run --quiet "release it" >/dev/null 2>"$T/resume.err" &&
					rc=0 || rc=$?
			fi
		fi
	done
	tried=$((tried + 1))
	[ "$rc" -eq 0 ] || problems="$problems exit=$rc($(head -c 300 "$T/resume.err"))"
	[ "$(triples "$w")" = "$ref_triples" ] || problems="$problems history"
	[ "$(code_tree "$w")" = "$ref_tree" ] || problems="$problems tree"
	git fsck --strict >/dev/null 2>&1 || problems="$problems fsck"
	[ -z "$(git status --porcelain)" ] || problems="$problems dirty"
	[ "$("$AILOOP" status --json 2>/dev/null | jq -r .status)" = complete ] ||
		problems="$problems status"
	if [ -z "$problems" ]; then
		recovered=$((recovered + 1))
		pass
	else
		fail "kill at $name:$problems"
		diff <(printf '%s\n' "$ref_triples") <(triples "$w") | head -10 >&2
	fi
}

# Each point of the reference run as "N node entry kind": the node it
# belongs to (the one whose file it writes; the innermost node at work for
# a commit or the run's state), which entry of that node it is in, and its
# kind (what is written, or which agent runs) without the run and node.
awk '{ n[NR] = $1; $1 = ""; t[NR] = substr($0, 2) }
END {
	cur = "-"
	for (i = 1; i <= NR; i++) {
		s = t[i]; pre = ""
		if (s == "before rename" && i < NR) { pre = "before rename of "; s = t[i + 1] }
		if (s ~ /^running /) { pre = pre "running "; s = substr(s, 9) }
		file = s; sub(/^.*\//, "", file)
		who = cur
		if (match(s, /\/nodes\/[^ ]*$/)) {
			who = substr(s, RSTART + 7); sub(/\/(logs\/)?[^\/]*$/, "", who)
			if (pre == "" && file == "task.md") entry[who]++
			if (pre !~ /^before/) cur = who
		}
		e = entry[who] + (pre ~ /^before/ && file == "task.md")
		printf "%s %s %d %s%s\n", n[i], who, e ? e : 1, pre, file
	}
}' "$T/points" >"$T/kinds"
expect_eq "$(awk '$2 ~ /\// && $3 > 1 { print $2 }' "$T/kinds" | sort -u | tr '\n' ' ')" \
	"release/feature release/feature/step " "both children are entered more than once"

# 1. every point of the first entry of each child loop: what a resume
#    finds there, it must leave as soon as it is past it (the child's next
#    entry starts afresh)
# 2. each kind of point of the later entries of each child, and of the
#    root, at one of its occurrences (taken in turn, so spread over them)
# 3. every point of the run's start and end, where the run and its branch
#    are made and its final status is written: the most delicate instants
{
	awk '$2 ~ /\// && $3 == 1 { print $1 }' "$T/kinds"
	awk '$2 !~ /\// || $3 > 1 {
		key = $2 " " ($3 > 1) " " substr($0, index($0, $4))
		if (++seen[key] == 1 + NR % 3 || !(key in pick)) pick[key] = $1
	} END { for (k in pick) print pick[k] }' "$T/kinds"
	seq 1 12
	seq $((total - 11)) "$total"
} | sort -n | uniq >"$T/selected"
for n in $(cat "$T/selected"); do
	kill_and_resume "point $n ($(sed -n "${n}p" "$T/kinds" | cut -d' ' -f2-))" \
		"AILOOP_CRASH_AT=$n" ""
done

# 4. killed again while resuming
for n in 40 120 200 280; do
	kill_and_resume "point $n, then again 5 points into the resume" \
		"AILOOP_CRASH_AT=$n" "AILOOP_CRASH_AT=5"
done

# 5. at random instants (the reference run takes about a second)
RANDOM=7
for _ in $(seq 10); do
	kill_and_resume "a random instant" "after 0.$(printf '%03d' $((RANDOM % 900 + 20)))" ""
done

# 6. a run that ends in error (on_error fail-fast), killed at every point
#    it has: the error's last commit, and the results and run status that
#    go with it, must be there exactly once whatever the instant
loop_repo "$T/failing" a b
two_loops "$T/failing" failing.md
commit_all "$T/failing"
cp -a "$T/failing" "$T/failing-ref"
(cd "$T/failing-ref" && AILOOP_CRASH_LOG="$T/failing-points" "$AILOOP" run --quiet x >/dev/null 2>&1)
fail_triples=$(triples "$T/failing-ref")
expect_eq "$(printf '%s\n' "$fail_triples" | tail -1)" "1.1 outer/inner error" "the failing reference"
for n in $(seq 1 "$(wc -l <"$T/failing-points")"); do
	w=$T/work
	rm -rf "$w"
	cp -a "$T/failing" "$w"
	cd "$w"
	rc=$({ AILOOP_CRASH_AT=$n "$AILOOP" run --quiet x >/dev/null 2>&1; echo $?; } 2>/dev/null)
	[ "$rc" -ne 137 ] || # one resume, which ends the run
		rc=$({ "$AILOOP" resume >/dev/null 2>&1; echo $?; } 2>/dev/null)
	[ "$rc" -eq 66 ] && ! "$AILOOP" status >/dev/null 2>&1 &&
		rc=$({ "$AILOOP" run --quiet x >/dev/null 2>&1; echo $?; } 2>/dev/null)
	tried=$((tried + 1))
	if [ "$(triples "$w")" = "$fail_triples" ] && [ -z "$(git status --porcelain)" ] &&
		[ "$("$AILOOP" status --json | jq -r .status)" = error ]; then
		recovered=$((recovered + 1))
		pass
	else
		fail "kill at point $n of the failing run ($(sed -n "${n}p" "$T/failing-points"))"
	fi
done

echo "kill test: tried $tried kill points, $recovered recovered"
[ "$tried" -ge 50 ] && pass || fail "only $tried kill points tried"
finish
