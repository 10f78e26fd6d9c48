#!/usr/bin/env bash
# The repository's filter drivers run as git runs them: a file whose
# `filter` attribute names a driver is committed as its clean command
# makes it (what `git add` commits: `git status` stays clean) and checked
# out as its smudge command makes it; %f is the file's path, quoted. A
# driver without commands, or whose command fails, passes the content
# through, unless it is required: then the commit fails, the run pauses,
# and a resume once the driver works completes it. Git LFS, the driver
# most repositories have, stores what an agent made aside and commits its
# pointer.
. "$(dirname "$0")/lib.sh"

# filtered NAME ACTUATOR-SCRIPT: a repository whose *.txt files have the
# driver `up` (configured by the caller), a one-shot loop whose actuator runs
# the script and whose sensor passes once `done` exists
filtered() {
	R=$TEST_TMP/$1
	new_repo "$R"
	mkdir -p "$R/.ai-loop/agents"
	printf -- '---\nname: done\ncommand: test -f done\n---\n' >"$R/.ai-loop/agents/sensor.md"
	printf -- '---\nname: act\ncommand: [sh, .ai-loop/agents/act.sh]\n---\n' >"$R/.ai-loop/agents/act.md"
	printf '%s\n' "$2" >"$R/.ai-loop/agents/act.sh"
	one_loop "$R" act.md "max_iterations: 2"
	echo '*.txt filter=up' >"$R/.gitattributes"
	printf 'first\n' >"$R/notes.txt"
	cd "$R"
}

# --- clean on commit, smudge on checkout ---------------------------------------------
filtered upper 'echo hello >>notes.txt; touch done'
git config filter.up.clean 'tr a-z A-Z'
git config filter.up.smudge 'tr A-Z a-z'
commit_all "$R"
run "$AILOOP" run --quiet "say hello"
expect_rc 0 "clean: the run completes"
expect_eq "$(git show HEAD:notes.txt | tr '\n' ' ')" "FIRST HELLO " "clean: the commit holds what the clean command made"
expect_eq "$(git status --porcelain)" "" "clean: git status sees the commit's content"
expect_eq "$(cat notes.txt | tr '\n' ' ')" "first hello " "clean: the work tree as the agent left it"
# the resume of a run found on its branch checks it out, smudged
git checkout -q main
git branch -q -m ai-loop/say-hello done-run
filtered upper-resume 'echo hello >>notes.txt'
git config filter.up.clean 'tr a-z A-Z'
git config filter.up.smudge 'tr A-Z a-z'
commit_all "$R"
AILOOP_CRASH_LOG=$TEST_TMP/points "$AILOOP" run --quiet "say hello" >/dev/null 2>&1
at=$(grep -n ' committed$' "$TEST_TMP/points" | sed -n 2p | cut -d: -f1)
git checkout -q -f main
git branch -q -D ai-loop/say-hello
rm -rf .ai-loop/runs
(AILOOP_CRASH_AT=$at "$AILOOP" run --quiet "say hello" >/dev/null 2>&1)
git checkout -q -f main
git clean -fdq
run "$AILOOP" resume
expect_rc 1 "smudge: the resumed run ends (max iterations)"
expect_in "$err" "checking it out" "smudge: the resume checked the run's branch out"
expect_eq "$(head -2 notes.txt | tr '\n' ' ')" "first hello " "smudge: the file as the smudge command makes it"
expect_eq "$(git status --porcelain)" "" "smudge: git status clean"

# --- %f: the path, quoted ------------------------------------------------------------
filtered path "echo one >\"it's.txt\"; touch done"
git config filter.up.clean 'tr a-z A-Z <%f'
commit_all "$R"
run "$AILOOP" run --quiet "quote"
expect_rc 0 "%f: the run completes"
expect_eq "$(git show "HEAD:it's.txt")" "ONE" "%f: the command read the file by its quoted path"

# --- drivers that do nothing: the content as it is ------------------------------------
filtered absent 'echo hello >>notes.txt; touch done'
commit_all "$R"
run "$AILOOP" run --quiet "no driver"
expect_rc 0 "no driver: the run completes"
expect_eq "$(git show HEAD:notes.txt | tr '\n' ' ')" "first hello " "no driver: the content as it is"
filtered failing 'echo hello >>notes.txt; touch done'
git config filter.up.clean 'exit 3'
commit_all "$R"
run "$AILOOP" run --quiet "failing driver"
expect_rc 0 "a failing driver, not required: the run completes"
expect_eq "$(git show HEAD:notes.txt | tr '\n' ' ')" "first hello " "a failing driver: the content as it is"

# --- a required driver that fails: the run pauses; fixed, it resumes --------------------
filtered required 'echo hello >>notes.txt; touch done'
git config filter.up.clean 'tr a-z A-Z'
git config filter.up.required true
commit_all "$R"
git config filter.up.clean 'exit 3'
run "$AILOOP" run --quiet "required"
expect_rc 70 "a required driver that fails: exit 70"
expect_in "$err" "the clean filter 'up' of 'notes.txt' failed" "it names the driver and the file"
expect_eq "$("$AILOOP" status --json | jq -r .status)" paused "the run is paused"
git config --unset filter.up.clean
run "$AILOOP" resume
expect_rc 70 "a required driver without a clean command: exit 70"
expect_in "$err" "the clean filter 'up' of 'notes.txt' has no command" "it says so"
git config filter.up.clean 'tr a-z A-Z'
run "$AILOOP" resume
expect_rc 0 "the driver fixed: the resume completes"
expect_eq "$(git show HEAD:notes.txt | tr '\n' ' ')" "FIRST HELLO " "required: the commit holds the clean content"
expect_eq "$(git status --porcelain)" "" "required: git status clean"

# --- no room on the disk: the run pauses; with room, it resumes ------------------------
# The agent writes a 1 MB file for the driver and fills the disk up to
# FREE_KIB KiB free: 64, no room for ailoop to keep the content aside for
# the command; 1500, room for that, but not for the command's output, which
# fails saying so. Either way the failure is the machine's, not the driver's.
DISK=$TEST_TMP/disk
mkdir -p "$DISK"
if mount -t tmpfs -o size=6M tmpfs "$DISK" 2>/dev/null; then
	trap 'if [ "$BASHPID" = "$test_shell" ]; then cd /; umount "$DISK"; rm -rf "$TEST_TMP"; fi' EXIT
	export FREE_KIB
	for FREE_KIB in 64 1500; do
		rm -rf "$DISK"/*
		# (the repository is $DISK/full: the filler beside it)
		TEST_TMP=$DISK filtered full 'yes abcdefgh | head -c 1000000 >big.txt
avail=$(df -k --output=avail . | tail -1)
[ -e ../filler ] || fallocate -l $(((avail - FREE_KIB) * 1024)) ../filler
touch done'
		git config filter.up.clean 'tr a-z A-Z'
		commit_all "$R"
		run "$AILOOP" run --quiet "fill"
		expect_rc 70 "$FREE_KIB KiB free: exit 70"
		if [ "$FREE_KIB" = 64 ]; then
			expect_in "$err" "the clean filter 'up' of 'big.txt' could not be run: its input and output files in the git directory: No space left on device" \
				"$FREE_KIB KiB free: it says which filter, and why"
		else
			expect_in "$err" "the clean filter 'up' of 'big.txt' failed: it says \"No space left on device\"" \
				"$FREE_KIB KiB free: it says which filter, and what the command said"
		fi
		expect_eq "$("$AILOOP" status --json | jq -r .status)" paused "$FREE_KIB KiB free: the run is paused"
		rm -f "$DISK/filler"
		run "$AILOOP" resume
		expect_rc 0 "$FREE_KIB KiB free, then room again: the resume completes"
		expect_eq "$(git show HEAD:big.txt | head -c 8)" "ABCDEFGH" \
			"$FREE_KIB KiB free, then room again: the clean content committed"
		expect_eq "$(git status --porcelain)" "" "$FREE_KIB KiB free, then room again: git status clean"
		cd /
	done
else
	echo "skipped: no tmpfs to fill (a filter driver on a full disk)"
fi

# --- a driver that hangs: an interrupt stops it; fixed, the run resumes -------------------
# The clean command writes its pid, then waits far longer than the test: a
# Ctrl-C gives it AL_PROC_GRACE_MS (5 s) and then kills its session, the
# commit fails for the interrupt (exit 3, paused) and a resume commits.
# A second Ctrl-C kills it at once.
for signals in 1 2; do
	filtered "hang$signals" 'echo hello >>notes.txt; touch done'
	git config filter.up.clean 'tr a-z A-Z'
	commit_all "$R"
	git config filter.up.clean "echo \$\$ >>$TEST_TMP/hang$signals.pid; exec sleep 1000"
	("$AILOOP" run --quiet "hang" >"$TEST_TMP/hang.out" 2>&1; echo $? >"$TEST_TMP/hang$signals.rc") \
		>/dev/null 2>&1 &
	if wait_for "$TEST_TMP/hang$signals.pid" 30; then
		pkill -INT -f "ailoop run --quiet hang"
		[ "$signals" = 1 ] || { sleep 0.5; pkill -INT -f "ailoop run --quiet hang"; }
		wait_for "$TEST_TMP/hang$signals.rc" 60
	fi
	expect_eq "$(cat "$TEST_TMP/hang$signals.rc" 2>/dev/null)" 3 "$signals interrupt(s) during a driver that hangs: exit 3"
	# (a driver run again as the run pauses is killed at once: its pid may not be there)
	pids=$(cat "$TEST_TMP/hang$signals.pid" 2>/dev/null)
	[ -n "$pids" ] && ! kill -0 $pids 2>/dev/null && pass || fail "the hanging driver was killed"
	# (what a failure leaves running goes before the next check)
	pkill -KILL -f "ailoop run --quiet hang"
	[ -z "$pids" ] || kill -KILL $pids 2>/dev/null
	expect_eq "$(run_status)" paused "$signals interrupt(s): the run is paused"
	git config filter.up.clean 'tr a-z A-Z'
	run "$AILOOP" resume
	expect_rc 0 "$signals interrupt(s), the driver fixed: the resume completes"
	expect_eq "$(git show HEAD:notes.txt | tr '\n' ' ')" "FIRST HELLO " "$signals interrupt(s): the commit holds the clean content"
	expect_eq "$(git status --porcelain)" "" "$signals interrupt(s): git status clean"
done

# --- a driver that leaves a process behind: it is stopped with the driver ------------------
# (it holds the driver's stderr: read to its end, that would be the
# leftover's end, a thousand seconds later)
filtered leftover 'echo hello >>notes.txt; touch done'
git config filter.up.clean 'tr a-z A-Z'
commit_all "$R"
git config filter.up.clean "sleep 1000 & echo \$! >>$TEST_TMP/leftover.pid; tr a-z A-Z"
run timeout -k 5 60 "$AILOOP" run --quiet "leftover"
expect_rc 0 "a driver that leaves a process running: the run completes"
expect_eq "$(git show HEAD:notes.txt | tr '\n' ' ')" "FIRST HELLO " "the driver's output is committed"
pids=$(cat "$TEST_TMP/leftover.pid" 2>/dev/null)
[ -n "$pids" ] && ! kill -0 $pids 2>/dev/null && pass || fail "what the driver left running was stopped"
[ -z "$pids" ] || kill -KILL $pids 2>/dev/null

# --- a driver runs with no terminal to prompt on ------------------------------------------
# git's credential prompts are off (GIT_TERMINAL_PROMPT=0) and the command
# leads a session of its own, with no controlling terminal: a driver that
# would ask for a password (git-lfs fetching an object) fails at once.
filtered prompt 'echo hello >>notes.txt; touch done'
git config filter.up.clean 'tr a-z A-Z'
commit_all "$R"
git config filter.up.clean "{ echo \"prompt=\$GIT_TERMINAL_PROMPT\"; ps -o sid= -p \$\$ | tr -d ' '; echo \$\$; : </dev/tty && echo tty; } >$TEST_TMP/prompt.txt 2>/dev/null; tr a-z A-Z"
run "$AILOOP" run --quiet "prompt"
expect_rc 0 "a driver with no terminal: the run completes"
expect_eq "$(sed -n 1p "$TEST_TMP/prompt.txt")" "prompt=0" "git's terminal prompts are off for drivers"
expect_eq "$(sed -n 2p "$TEST_TMP/prompt.txt")" "$(sed -n 3p "$TEST_TMP/prompt.txt")" "a driver leads a session of its own"
expect_not_in "$(cat "$TEST_TMP/prompt.txt")" "tty" "a driver cannot open a terminal"

# --- Git LFS ---------------------------------------------------------------------------
if ! git lfs version >/dev/null 2>&1; then
	echo "skipped: git-lfs is not installed (scripts/bootstrap.sh installs it)"
else
	R=$TEST_TMP/lfs
	new_repo "$R"
	cd "$R"
	git lfs install --local >/dev/null
	git lfs track '*.bin' >/dev/null
	mkdir -p .ai-loop/agents
	printf -- '---\nname: done\ncommand: test -f done\n---\n' >.ai-loop/agents/sensor.md
	printf -- '---\nname: act\ncommand: head -c 100000 /dev/urandom >data.bin; touch done\n---\n' \
		>.ai-loop/agents/act.md
	one_loop "$R" act.md "max_iterations: 2"
	commit_all "$R"
	run "$AILOOP" run --quiet "make data"
	expect_rc 0 "lfs: the run completes"
	expect_eq "$(git show HEAD:data.bin | head -1)" "version https://git-lfs.github.com/spec/v1" \
		"lfs: the commit holds the pointer"
	expect_in "$(git show HEAD:data.bin)" "oid sha256:$(sha256sum data.bin | cut -c1-64)" \
		"lfs: the pointer names the agent's file"
	expect_eq "$(git lfs ls-files --name-only)" "data.bin" "lfs: git lfs sees it"
	expect_eq "$(git status --porcelain)" "" "lfs: git status clean"
fi

finish
