# Helpers for the end-to-end tests: sourced by every tests/cli/tNN-*.sh.
# Each test runs the real binary ($AILOOP) in throwaway directories and
# asserts on what a user sees: exit codes, output, files and git history.
set -u

: "${AILOOP:?set AILOOP to the ailoop binary}"
: "${AILOOP_SRC:=$(cd "$(dirname "$0")/../.." && pwd)}"
FIXTURES="$AILOOP_SRC/tests/fixtures"
export NO_COLOR=1 AILOOP_FSYNC="${AILOOP_FSYNC:-0}"
# every commit built from the watched paths is checked against the whole index (git_tree.c)
export AILOOP_CHECK_TREES=1
export GIT_AUTHOR_NAME=test GIT_AUTHOR_EMAIL=test@example.com
export GIT_COMMITTER_NAME=test GIT_COMMITTER_EMAIL=test@example.com
export GIT_CONFIG_NOSYSTEM=1

TEST_TMP=$(mktemp -d "${TMPDIR:-/tmp}/ailoop-test.XXXXXX")
# only the test's own shell cleans up, not a subshell that inherits the trap
test_shell=$$
trap 'if [ "$BASHPID" = "$test_shell" ]; then rm -rf "$TEST_TMP"; fi' EXIT
export HOME="$TEST_TMP/home" # no user git config leaks in
mkdir -p "$HOME"
failures=0
checks=0

fail() {
	printf 'FAIL: %s\n' "$*" >&2
	failures=$((failures + 1))
}

pass() {
	checks=$((checks + 1))
}

# run CMD...: runs it, keeping stdout in $out, stderr in $err, status in $rc.
run() {
	out=$("$@" 2>"$TEST_TMP/stderr") && rc=0 || rc=$?
	err=$(cat "$TEST_TMP/stderr")
}

expect_rc() {
	local want=$1 what=$2
	if [ "$rc" -eq "$want" ]; then pass; else
		fail "$what: exit $rc, expected $want"
		printf '%s\n' "--- stdout:" "$out" "--- stderr:" "$err" >&2
	fi
}

expect_in() {
	local haystack=$1 needle=$2 what=$3
	case "$haystack" in
	*"$needle"*) pass ;;
	*) fail "$what: expected to find [$needle] in:"; printf '%s\n' "$haystack" >&2 ;;
	esac
}

expect_not_in() {
	local haystack=$1 needle=$2 what=$3
	case "$haystack" in
	*"$needle"*) fail "$what: did not expect [$needle] in:"; printf '%s\n' "$haystack" >&2 ;;
	*) pass ;;
	esac
}

expect_eq() {
	if [ "$1" = "$2" ]; then pass; else
		fail "$3: got [$1], expected [$2]"
	fi
}

# new_repo DIR: a git repository with one commit, ready for ailoop.
repos=()
new_repo() {
	repos+=("$1")
	mkdir -p "$1" && git -C "$1" init -q -b main &&
		printf 'hello\n' >"$1/README" &&
		git -C "$1" add README && git -C "$1" commit -q -m "initial commit"
}

# check_history DIR: what every repository ailoop worked in must satisfy:
# `git fsck --strict` is clean, and every ailoop commit (on any branch)
# matches the patterns SPEC §6 gives readers.
check_history() {
	local dir=$1 bad
	[ -d "$dir/.git" ] || return 0
	git -C "$dir" fsck --strict >/dev/null 2>&1 && pass || fail "git fsck --strict in $dir"
	bad=$(git -C "$dir" log --all --format=%s | grep '^ai-loop\[' |
		grep -cvP '^ai-loop\[(.+?)\]:\s*iteration\s+(\S+)\s*(?:—|--|-)\s*(.+)$' || true)
	[ "$bad" -eq 0 ] && pass || fail "$bad commit subjects in $dir do not match SPEC §6"
	bad=$(git -C "$dir" log --all --format='@@@%s%n%b' |
		awk '/^@@@/ { ours = /^@@@ai-loop\[/; next } ours && NF' |
		grep -cvP '^\[(\w[\w-]*)\]\s*(.+)$' || true)
	[ "$bad" -eq 0 ] && pass || fail "$bad commit body lines in $dir do not match SPEC §6"
}

finish() {
	for repo in "${repos[@]}"; do
		check_history "$repo"
	done
	if [ "$failures" -gt 0 ]; then
		printf '%s: %d of %d checks failed\n' "$(basename "$0")" "$failures" \
			$((failures + checks)) >&2
		exit 1
	fi
	printf '%s: %d checks passed\n' "$(basename "$0")" "$checks"
}

# loop_repo DIR ITEM...: a repository holding the scripted agents of
# tests/fixtures/agents in .ai-loop/agents and a todo.txt of ITEMs; the
# test writes .ai-loop/flow.yaml and then calls commit_all DIR.
loop_repo() {
	local dir=$1
	shift
	new_repo "$dir" && mkdir -p "$dir/.ai-loop/agents" &&
		cp "$FIXTURES"/agents/* "$dir/.ai-loop/agents/" &&
		printf '%s\n' "$@" >"$dir/todo.txt"
}

# one_loop DIR ACTUATOR [TERMINATION] [CONTROLLER] [DEFAULT]: the flow of
# a one-level loop `fix` in DIR: the scope sensor, CONTROLLER (default
# builtin:all-pass), ACTUATOR (a file of tests/fixtures/agents) acting
# directly; TERMINATION ("max_iterations: 2") and one DEFAULT line
# ("termination: {on_error: continue}") if given.
one_loop() {
	{
		echo "version: 1"
		[ -z "${5:-}" ] || printf 'defaults:\n  %s\n' "$5"
		cat <<YAML
flow:
  id: fix
  type: loop
  controller: ${4:-builtin:all-pass}
  sensors: [.ai-loop/agents/sensor.md]
  actuator: {strategy: direct, agent: .ai-loop/agents/$2}
YAML
		[ -z "${3:-}" ] || printf '  termination: {%s}\n' "$3"
	} >"$1/.ai-loop/flow.yaml"
}

# command_agents DIR SENSOR ACTUATOR: in DIR, the sensor `count` and the
# actuator act.md (for one_loop), each a shell command without a single quote
command_agents() {
	mkdir -p "$1/.ai-loop/agents" &&
		printf -- "---\nname: count\ncommand: '%s'\n---\n" "$2" >"$1/.ai-loop/agents/sensor.md" &&
		printf -- "---\nname: act\ncommand: '%s'\n---\n" "$3" >"$1/.ai-loop/agents/act.md"
}

# two_loops DIR ACTUATOR [INNER-TERMINATION] [OUTER-TERMINATION]
# [OUTER-CONTROLLER]: `outer` (OUTER-CONTROLLER, default builtin:all-pass,
# over the scope sensor) whose actuator is the loop `inner`, which acts
# through ACTUATOR
two_loops() {
	cat >"$1/.ai-loop/flow.yaml" <<YAML
version: 1
flow:
  id: outer
  type: loop
  controller: ${5:-builtin:all-pass}
  sensors: [.ai-loop/agents/sensor.md]
  actuator:
    strategy: composite
    child:
      id: inner
      type: loop
      controller: builtin:all-pass
      sensors: [.ai-loop/agents/sensor.md]
      actuator: {strategy: direct, agent: .ai-loop/agents/$2}
${3:+      termination: {$3\}}
${4:+  termination: {$4\}}
YAML
}

# parallel_rounds DIR: a loop-until inside a sequence runs a parallel node
# of two actions (`action` agents, which do what $PLAN says) and a
# sensor-form loop, all in the one work tree (isolation: shared)
parallel_rounds() {
	cat >"$1/.ai-loop/flow.yaml" <<'YAML'
version: 1
flow:
  id: main
  type: sequence
  children:
    - {id: first, skill: first}
    - id: rounds
      type: loop
      max_iterations: 2
      condition: {type: file_exists, path: "b-*.txt"}
      children:
        - id: par
          type: parallel
          isolation: shared
          children:
            - {id: a, skill: a}
            - {id: b, skill: b}
            - id: fix
              type: loop
              controller: builtin:all-pass
              sensors: [.ai-loop/agents/sensor.md]
              actuator: {strategy: direct, agent: .ai-loop/agents/fixer.md}
    - {id: last, skill: last}
YAML
}

# worktree_children DIR: a sequence runs an action, a parallel node of two
# actions in worktrees (`action` agents, which do what $PLAN says), and an
# action
worktree_children() {
	cat >"$1/.ai-loop/flow.yaml" <<'YAML'
version: 1
defaults:
  action_agent: .ai-loop/agents/action.md
flow:
  id: main
  type: sequence
  children:
    - {id: first, skill: first}
    - id: par
      type: parallel
      isolation: worktree
      children:
        - {id: a, skill: a}
        - {id: b, skill: b}
    - {id: last, skill: last}
YAML
}

# three_loops DIR: release > feature > step; the root plans
# two items at a time, feature one, step fixes it
three_loops() {
	cat >"$1/.ai-loop/flow.yaml" <<YAML
version: 1
flow:
  id: release
  type: loop
  controller: .ai-loop/agents/planner.md
  sensors: [.ai-loop/agents/sensor.md]
  actuator:
    strategy: composite
    child:
      id: feature
      type: loop
      controller: .ai-loop/agents/planner-one.md
      sensors: [.ai-loop/agents/sensor.md]
      actuator:
        strategy: composite
        child:
          id: step
          type: loop
          controller: builtin:all-pass
          sensors: [.ai-loop/agents/sensor.md]
          actuator: {strategy: direct, agent: .ai-loop/agents/fixer.md}
YAML
}

commit_all() {
	git -C "$1" add -A && git -C "$1" commit -q -m "${2:-set up}"
}

# subjects DIR: "label node-path" of every ailoop commit, oldest first
labels() {
	git -C "$1" log --reverse --format=%B | sed -n 's/^\[iteration\] //p' | tr '\n' ' ' |
		sed 's/ $//'
}

# label_paths DIR: "label node-path, ..." of each ailoop iteration commit,
# oldest first. A merge commit ([merge] CHILD: a parallel node with worktrees
# merging a child's branch) carries its node's path and label but is not an
# iteration of it, so it is left out: no label is committed twice holds over
# iterations.
label_paths() {
	git -C "$1" log --reverse --format='@@@%n%B' |
		awk 'function out() { if (l != "" && !m) { printf "%s%s %s", sep, l, p; sep=", " } l=""; m=0 }
		     /^@@@$/{out()} /^\[node-path\] /{p=$2} /^\[iteration\] /{l=$2} /^\[merge\] /{m=1}
		     END{out()}'
}

# triples DIR [REV]: "label node-path status" of each ailoop iteration
# commit of HEAD (or REV), oldest first (merge commits left out, as in
# label_paths)
triples() {
	git -C "$1" log --reverse --format='@@@%n%B' "${2:-HEAD}" |
		awk 'function out() { if (l != "" && !m) print l, p, s; l=""; m=0 }
		     /^@@@$/{out()} /^\[node-path\] /{p=$2} /^\[iteration\] /{l=$2}
		     /^\[status\] /{s=$2} /^\[merge\] /{m=1} END{out()}'
}

# merged_children DIR: "node-path child" of each merge commit, oldest first
merged_children() {
	git -C "$1" log --reverse --format=%B |
		awk '/^\[node-path\] /{p=$2} /^\[merge\] /{print p, $2}'
}

# code_tree DIR: the tree at HEAD without ailoop's run directories, whose
# files record timings and resumes and so differ between runs
code_tree() {
	git -C "$1" ls-tree -r HEAD | grep -v '	\.ai-loop/runs/'
}

# wait_for FILE [SECONDS]: until FILE exists and is not empty
wait_for() {
	local i=0
	while [ ! -s "$1" ] && [ $i -lt $((${2:-10} * 20)) ]; do
		sleep 0.05
		i=$((i + 1))
	done
	[ -s "$1" ]
}

# group_gone PGID: no process is left in that process group
group_gone() {
	# (ps -g selects sessions, not process groups; zombies are gone already)
	! ps -e -o pgid=,stat= | awk -v g="$1" '$1 == g && $2 !~ /^Z/ { found = 1 } END { exit !found }'
}

# scripted_agents DIR NAME...: agents .ai-loop/agents/NAME.md in DIR that
# run tests/fixtures/agents/scripted.sh (driven by $PLAN, logging to
# $TRAIL); "action" is the default action agent
scripted_agents() {
	local dir=$1 name
	shift
	mkdir -p "$dir/.ai-loop/agents" && cp "$FIXTURES/agents/scripted.sh" "$dir/.ai-loop/agents/"
	for name in "$@"; do
		printf -- '---\nname: %s\ncommand: sh .ai-loop/agents/scripted.sh %s\n---\n%s\n' \
			"$name" "$name" "Do the action the task names." >"$dir/.ai-loop/agents/$name.md"
	done
}

# run_status: the status of the last run in the current directory
run_status() {
	"$AILOOP" status --json 2>/dev/null | jq -r .status
}

# kill_each_point TEMPLATE TASK HISTORY [SETTLED [KEPT]]: the kill tests' loop.
# reference_run TEMPLATE TASK HISTORY: a copy of TEMPLATE ($TEST_TMP/reference,
# the current directory then) runs TASK with every crash point it passes
# logged in $TEST_TMP/points; sets what kill_each_point compares with:
# $ref_rc, $ref_triples (by the command HISTORY), $ref_tree, $ref_status,
# and $total, the number of crash points
reference_run() {
	local r=$TEST_TMP/reference
	rm -rf "$r" "$TEST_TMP/points"
	cp -a "$1" "$r"
	cd "$r"
	ref_rc=$({ AILOOP_CRASH_LOG="$TEST_TMP/points" "$AILOOP" run --quiet "$2" >/dev/null 2>&1; echo $?; })
	ref_triples=$($3 "$r")
	ref_tree=$(code_tree "$r")
	ref_status=$(run_status)
	total=$(wc -l <"$TEST_TMP/points")
}

# lock_free: no process of a killed run is left, after a moment: it held
# the work tree's lock (a parallel child dies with its parent, not at once);
# the SETTLED of kill_each_point for flows with parallel nodes
lock_free() {
	local i=0
	while ! flock -n .git/ailoop.lock true && [ $i -lt 100 ]; do sleep 0.02; i=$((i + 1)); done
	[ $i -lt 100 ]
}

# For each crash point 1..$total, a copy of the repository TEMPLATE runs
# TASK with AILOOP_CRASH_AT; the killed run is resumed once (killed before
# the run existed, it is run again) and must end as the reference did:
# $ref_rc, $ref_triples (as the command HISTORY prints a repository's
# history), $ref_tree and $ref_status, with a clean `git fsck --strict`
# and work tree. SETTLED, if given, is a command that must succeed after
# the kill (no process of the run left). KEPT, if given, is a command given
# the history after the resume, that succeeds if it is the one wanted
# (without: the reference's). Counts in $tried and $recovered.
same_history() { [ "$1" = "$ref_triples" ]; }
kill_each_point() {
	local template=$1 task=$2 history=$3 settled=${4:-true} kept=${5:-same_history}
	local w=$TEST_TMP/kill n problems status
	tried=0 recovered=0
	for n in $(seq 1 "$total"); do
		rm -rf "$w"
		cp -a "$template" "$w"
		cd "$w"
		problems=""
		# (in a command substitution: the shell says nothing of the kill)
		rc=$({ AILOOP_CRASH_AT=$n "$AILOOP" run --quiet "$task" >/dev/null 2>&1; echo $?; } 2>/dev/null)
		[ "$rc" -eq 137 ] || problems="$problems not-killed($rc)"
		$settled || problems="$problems not-settled"
		rc=$({ "$AILOOP" resume >/dev/null 2>"$TEST_TMP/resume.err"; echo $?; } 2>/dev/null)
		if [ "$rc" -eq 66 ] && grep -q "no run to resume" "$TEST_TMP/resume.err"; then
			if "$AILOOP" status >/dev/null 2>&1; then # killed after its last commit: the run is over
				rc=$ref_rc # (its status is checked below)
			else # killed before the run existed: the user runs it again
				rc=$({ "$AILOOP" run --quiet "$task" >/dev/null 2>"$TEST_TMP/resume.err"; echo $?; } 2>/dev/null)
			fi
		fi
		tried=$((tried + 1))
		[ "$rc" -eq "$ref_rc" ] || problems="$problems exit=$rc($(head -c 300 "$TEST_TMP/resume.err"))"
		$kept "$($history "$w")" || problems="$problems history"
		[ "$(code_tree "$w")" = "$ref_tree" ] || problems="$problems tree"
		git fsck --strict >/dev/null 2>&1 || problems="$problems fsck"
		[ -z "$(git status --porcelain)" ] || problems="$problems dirty"
		status=$(run_status)
		[ "$status" = "$ref_status" ] || problems="$problems status($status)"
		if [ -z "$problems" ]; then
			recovered=$((recovered + 1))
			pass
		else
			fail "kill at point $n ($(sed -n "${n}p" "$TEST_TMP/points")):$problems"
			diff <(printf '%s\n' "$ref_triples") <($history "$w") | head -10 >&2
		fi
	done
	echo "kill test: tried $tried kill points, $recovered recovered ($SECONDS s)"
}
