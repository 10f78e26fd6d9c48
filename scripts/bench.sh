#!/usr/bin/env bash
# ailoop's own costs, each beside its goal and beside the seed-style shell
# loop (a bash loop that runs the same trivial agents, keeps its state with
# jq and commits with `git add -A && git commit`), measured on this machine
# in this run. One table; the ratio to the shell loop is what counts on a
# noisy machine. Timings are medians of several repetitions.
#
#   overhead    a single-level loop of trivial command agents (sensor and
#               actuator) runs N iterations; the same agent processes run N
#               times alone; the difference divided by N (fsync off and on)
#   parallel    a parallel node of 8 children that each sleep 1 s
#   conditions  10,000 evaluations over a memory of 100,000 keys
#               (tests/bench/bench_conditions.c)
#   resume      a run of L iterations (its history made synthetically:
#               a few real iterations, L more commits by git fast-import
#               (in one pack: a real run leaves loose objects until `git gc`),
#               its event log, memory and agent-call record grown to match)
#               killed, then `ailoop resume` until its first agent starts
#   status      `ailoop status` on that run
#   log         `ailoop log` on that run: its first line, and all of it
#   flow parse  `ailoop validate` of generated flows of 10,000 and 20,000 nodes
#               (the fastest of at least 5 runs each: their ratio, the
#               loader's linearity, is what a shared machine's noise blurs)
#   report      `ailoop report` of a run of R=1000 iterations (one metric): the
#               page's size, the time to write it, and the time headless
#               Chromium takes to show it beyond its own start (if installed)
#
#   ./scripts/bench.sh             N=200 iterations, L=10,000, 5 repetitions
#   ./scripts/bench.sh quick       N=10, L=200, 3 repetitions, flows of 1,000 and
#                                  2,000 nodes: checks that the bench works
#   ./scripts/bench.sh conditions  only the conditions
#   ./scripts/bench.sh report      only the report
#   ./scripts/bench.sh overhead    only the overhead per iteration (N=200, 5 repetitions)
#   ./scripts/bench.sh bigrepo     only the overhead per iteration in a repository
#                                  of FILES=20,000 tracked files, one file changed
#                                  per iteration, beside one `git status --porcelain`,
#                                  and apart from it the run's start to its first agent
#   ./scripts/bench.sh worktree    only a parallel child's worktree: made,
#                                  merged and removed by ailoop vs the git CLI
#                                  in a repository of F=20,000 files
#   ./scripts/bench.sh parallel-many  only a parallel node of trivial shared
#                                  children, N=100 and N=400 of them (M=, at most
#                                  8 at a time): the cost per child of each, which
#                                  must not grow with the number of siblings
#   ./scripts/bench.sh episodes    only the retrieval of past episodes: E=10,000
#                                  episodes in refs/ailoop/episodes (made by git
#                                  fast-import: a pack, and the same objects loose),
#                                  the first {episodes-section} of a process (median
#                                  of REPS=5 processes; goal < 20 ms in both), each
#                                  later one, one without the ref, and (loose)
#                                  recording one more as a node's end does
#                                  (tests/bench/bench_episodes.c)
#   N=500 L=20000 REPS=7 AILOOP=path ./scripts/bench.sh
#   PROFILE=1 ./scripts/bench.sh   then where the instructions go (callgrind)
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
mode=${1:-full}

# spread DIR: the directories made in DIR are placed as ext4 places a
# top-level one, each in a block group of its own (chattr +T, the top of a
# hierarchy for its Orlov allocator), not in DIR's. ext4 without a journal
# skips, at every file it makes, each inode freed in that group in the last
# minutes: a run made where a test suite or an earlier bench had just
# removed thousands of files timed that scan, not the run (ailoop's processor
# time per iteration of the counting loop: 3.0-3.2 ms there, 2.1 ms in a
# spread directory beside it, 1.8 ms on a new filesystem). Where the
# filesystem has no such flag, nothing changes.
spread() { chattr +T "$1" 2>/dev/null || true; }

# --- worktree: a parallel child's worktree, made, merged and removed -----------
# In a repository of F tracked files, a parallel node of one child that
# changes one file runs with isolation: worktree and with isolation:
# shared; the difference is ailoop's cost of the child's worktree (made,
# merged back with a merge commit, removed). Beside it: `git worktree add`
# + `git merge --no-ff` + `git worktree remove` of the same change by the
# git CLI (the child's own commit is not timed in either). Goal: 1.5x.
bench_worktree() {
	local f=${F:-20000} reps=${REPS:-3} tmp t0 t1 t2 i ours=() shared=() cli=() d
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/ailoop-bench-wt.XXXXXX")
	trap 'rm -rf "$tmp"' RETURN
	spread "$tmp"
	if [ -z "${AILOOP:-}" ]; then
		cmake -S "$src" -B "$src/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
		cmake --build "$src/build" -j 2 --target ailoop >/dev/null
		AILOOP=$src/build/ailoop
	fi
	export GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@example.com
	export GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@example.com
	export GIT_CONFIG_NOSYSTEM=1 HOME=$tmp NO_COLOR=1 AILOOP_FSYNC=0
	mkdir -p "$tmp/template/.ai-loop/agents"
	(
		cd "$tmp/template"
		git init -q -b main
		for ((i = 0; i < f; i++)); do
			[ $((i % 100)) -eq 0 ] && mkdir -p "d$((i / 100))"
			echo "file $i" >"d$((i / 100))/f$i.txt"
		done
		printf -- '---\nname: edit\ncommand: sh -c "echo changed >>d0/f0.txt; echo done"\n---\nEdit.\n' \
			>.ai-loop/agents/edit.md
		git config gc.auto 0 # no gc in the background of what is timed
		git add -A && git commit -q -m "$f files"
		git gc -q
	)
	flow() {
		printf 'version: 1\nflow:\n  id: par\n  type: parallel\n  isolation: %s\n  children:\n' "$1"
		printf '    - {id: a, skill: edit, agent: .ai-loop/agents/edit.md}\n'
	}
	for ((i = 0; i < reps; i++)); do
		for mode in worktree shared; do
			d=$tmp/$mode-$i
			cp -a "$tmp/template" "$d"
			flow $mode >"$d/.ai-loop/flow.yaml"
			git -C "$d" add -A && git -C "$d" commit -q -m flow
			t0=$(date +%s%N)
			(cd "$d" && "$AILOOP" run --quiet "bench" >/dev/null 2>&1) ||
				{ echo "bench: the $mode run failed" >&2; return 1; }
			t1=$(date +%s%N)
			if [ $mode = worktree ]; then ours+=($((t1 - t0))); else shared+=($((t1 - t0))); fi
		done
		d=$tmp/cli-$i
		cp -a "$tmp/template" "$d"
		(
			cd "$d"
			t0=$(date +%s%N)
			git worktree add -q -b child ../cli-wt-$i HEAD
			t1=$(date +%s%N)
			echo changed >>"../cli-wt-$i/d0/f0.txt"
			git -C "../cli-wt-$i" commit -q -am change
			t2=$(date +%s%N)
			git merge -q --no-ff -m merge child
			git worktree remove "../cli-wt-$i"
			echo $((t1 - t0 + $(date +%s%N) - t2))
		) >"$tmp/cli-$i.ns"
		cli+=("$(cat "$tmp/cli-$i.ns")")
	done
	med() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
	local w s c
	w=$(med "${ours[@]}") s=$(med "${shared[@]}") c=$(med "${cli[@]}")
	awk -v w="$w" -v s="$s" -v c="$c" -v f="$f" -v r="$reps" 'BEGIN {
		printf "worktree bench: %d tracked files, medians of %d\n", f, r
		printf "  ailoop run, isolation: worktree   %8.1f ms\n", w / 1e6
		printf "  ailoop run, isolation: shared     %8.1f ms\n", s / 1e6
		printf "  ailoop worktree cost (difference) %8.1f ms\n", (w - s) / 1e6
		printf "  git worktree add + merge + remove %8.1f ms\n", c / 1e6
		printf "  ratio (goal <= 1.5)               %8.2f\n", (w - s) / c
	}'
}
if [ "$mode" = worktree ]; then
	bench_worktree
	exit
fi

# --- parallel-many: the cost of a shared child beside many siblings ------------
# A parallel node (isolation: shared, at most 8 children at a time) of N
# children whose agent does nothing, for N=100 and N=M (400): the run's
# wall time and processor time (ailoop's processes and the agents) per
# child. Each child commits once; its commit scans the work tree, and what
# that scan reads must not grow with the siblings' node directories.
# Goal: the per-child figures of both within 1.5x of each other.
bench_parallel_many() {
	local tmp n d t0 t1 cpu reps=${REPS:-3} i
	local -A wall_of cpu_of
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/ailoop-bench-pm.XXXXXX")
	trap 'rm -rf "$tmp"' RETURN
	spread "$tmp"
	if [ -z "${AILOOP:-}" ]; then
		cmake -S "$src" -B "$src/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
		cmake --build "$src/build" -j 2 --target ailoop >/dev/null
		AILOOP=$src/build/ailoop
	fi
	export GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@example.com
	export GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@example.com
	export GIT_CONFIG_NOSYSTEM=1 HOME=$tmp NO_COLOR=1 AILOOP_FSYNC=0 TIMEFORMAT='%R %U %S'
	for n in ${N:-100} ${M:-400}; do
		local walls=() cpus=()
		for ((i = 0; i < reps; i++)); do
			d=$tmp/many-$n-$i
			mkdir -p "$d/.ai-loop/agents"
			git -C "$d" init -q -b main
			printf -- '---\nname: noop\ncommand: "true"\n---\nNothing.\n' \
				>"$d/.ai-loop/agents/noop.md"
			{
				printf 'version: 1\nflow:\n  id: many\n  type: parallel\n'
				printf '  isolation: shared\n  max_concurrency: 8\n  children:\n'
				awk -v n="$n" 'BEGIN { for (i = 1; i <= n; i++)
					printf "    - {id: c%d, agent: .ai-loop/agents/noop.md}\n", i }'
			} >"$d/.ai-loop/flow.yaml"
			git -C "$d" add -A && git -C "$d" commit -q -m "$n children"
			# wall, user and system seconds of the run and all it waited for
			read -r t0 t1 cpu < <({ time (cd "$d" && "$AILOOP" run --quiet "many" \
				>/dev/null 2>&1); } 2>&1) ||
				{ echo "bench: the run of $n children failed" >&2; return 1; }
			[ "$(git -C "$d" log --format=%s | grep -c '^ai-loop\[many > c')" = "$n" ] ||
				{ echo "bench: the run did not commit its $n children" >&2; return 1; }
			walls+=("$t0") cpus+=("$(awk -v u="$t1" -v s="$cpu" 'BEGIN { print u + s }')")
			rm -rf "$d"
		done
		wall_of[$n]=$(printf '%s\n' "${walls[@]}" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
		cpu_of[$n]=$(printf '%s\n' "${cpus[@]}" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
	done
	echo "parallel-many bench: trivial shared children, at most 8 at a time, medians of $reps"
	for n in ${N:-100} ${M:-400}; do
		awk -v n="$n" -v w="${wall_of[$n]}" -v c="${cpu_of[$n]}" 'BEGIN {
			printf "  %4d children: %7.2f s wall, %7.2f s cpu; per child %6.1f ms wall, %6.1f ms cpu\n",
				n, w, c, w * 1000 / n, c * 1000 / n }'
	done
	awk -v a="${wall_of[${N:-100}]}" -v na="${N:-100}" -v b="${wall_of[${M:-400}]}" -v nb="${M:-400}" \
		-v ca="${cpu_of[${N:-100}]}" -v cb="${cpu_of[${M:-400}]}" 'BEGIN {
		printf "  per child, %d / %d children: %.2f wall, %.2f cpu (goal <= 1.5)\n",
			nb, na, (b / nb) / (a / na), (cb / nb) / (ca / na) }'
}
# --- episodes: retrieval of past episodes ----------------------------------------
# E episodes of goals drawn from a vocabulary of coding tasks, eight a run
# (a flow's nodes and their loops' entries), each with its file, one commit
# on refs/ailoop/episodes as the store keeps them. The figures are the
# process's processor time (and the first one's wall time): on a machine
# shared with other work the wall clock counts their turns too.
bench_episodes() {
	local e=${E:-10000} reps=${REPS:-5} tmp i
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/ailoop-bench-ep.XXXXXX")
	trap 'rm -rf "$tmp"' RETURN
	if [ -z "${BENCH_EPISODES:-}" ]; then
		cmake -S "$src" -B "$src/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DAILOOP_BENCH=ON >/dev/null
		cmake --build "$src/build" -j 2 --target bench_episodes >/dev/null
		BENCH_EPISODES=$src/build/tests/bench/bench_episodes
	fi
	git init -q "$tmp/store" && git init -q "$tmp/none"
	LC_ALL=C awk -v n="$e" 'BEGIN {
		srand(44)
		split("parser lexer tests fail pass empty input crash memory leak cache http " \
		      "server client timeout retry config yaml json schema index query slow " \
		      "database migration login session token auth refactor module api docs " \
		      "build warning flaky race lock thread queue worker report chart page " \
		      "unicode path windows signal kill resume branch commit merge conflict", w, " ")
		nw = length(w)
		idx = "# ailoop episodes v1\n"
		for (i = 1; i <= n; i++) {
			k = 6 + int(rand() * 14); goal = ""
			for (j = 0; j < k; j++) goal = goal (j ? " " : "") w[1 + int(rand() * nw)]
			id = sprintf("%012x", i); run = sprintf("run_20261120_%06d_1", int((i - 1) / 8))
			node = "fix/" w[1 + int(rand() * nw)]; out = (i % 5 ? "success" : "failure")
			idx = idx sprintf("%s\t%s\t%s\tloop\t%s\t2026-11-20T10:00:00Z\t%d\t%s\t%s\n",
				id, run, node, out, 1 + i % 7, goal, "ship the release")
			json = sprintf("{\"id\":\"%s\",\"run\":\"%s\",\"node\":\"%s\",\"goal\":\"%s\"," \
				"\"outcome\":\"%s\",\"summary\":\"changed %s in three files and ran the tests\"," \
				"\"reasoning\":\"the sensors showed %s failing\"}", id, run, node, goal, out,
				w[1 + i % nw], w[1 + (i * 7) % nw])
			files[i] = sprintf("M 100644 inline runs/%s/%s.json\ndata %d\n%s\n", run, id,
				length(json), json)
		}
		printf "commit refs/ailoop/episodes\ncommitter bench <bench@example.com> 0 +0000\n"
		printf "data 17\nepisodes: bench\n\n"
		printf "M 100644 inline index.tsv\ndata %d\n%s\n", length(idx), idx
		for (i = 1; i <= n; i++) printf "%s", files[i]
	}' | git -C "$tmp/store" fast-import --quiet
	# fast-import's pack holds the index whole and the episodes' files as
	# deltas of each other, 50 deep at most, as `git gc` leaves a store that
	# grew a commit an episode; before any gc a run's store is loose objects,
	# which read faster. Both are timed.
	git init -q "$tmp/loose"
	git -C "$tmp/loose" unpack-objects -q <"$(ls "$tmp"/store/.git/objects/pack/*.pack)"
	git -C "$tmp/loose" update-ref refs/ailoop/episodes "$(git -C "$tmp/store" rev-parse refs/ailoop/episodes)"
	echo "episodes: retrieval from $e stored episodes (median of $reps processes)"
	local store ok=0
	for store in store loose; do
		[ "$store" = store ] && echo " in a pack (as after git gc):" || echo " loose (as a run writes them):"
		for i in $(seq "$reps"); do
			# (loose: each process records one more there, as a node's end does)
			"$BENCH_EPISODES" "$tmp/$store" "$tmp/none" 200 \
				$([ "$store" = loose ] && echo "$tmp/loose") >"$tmp/out-$i" || true
		done
		head -n 1 "$tmp/out-1"
		for i in 2 3 4 5; do
			for f in "$tmp"/out-*; do sed -n "${i}p" "$f"; done | sort -t: -k2 -n |
				sed -n "$(((reps + 1) / 2))p"
		done >"$tmp/medians"
		cat "$tmp/medians"
		grep -q 'first retrieval' "$tmp/medians" &&
			awk '/first retrieval/ { exit !($(NF - 8) + 0 < 20) }' "$tmp/medians" || ok=1
	done
	return $ok
}
if [ "$mode" = episodes ]; then
	bench_episodes
	exit
fi
if [ "$mode" = parallel-many ]; then
	bench_parallel_many
	exit
fi
case $mode in
full) N=${N:-200} L=${L:-10000} REPS=${REPS:-5} FLOW_NODES=${FLOW_NODES:-10000} ;;
quick) N=${N:-10} L=${L:-200} REPS=${REPS:-3} FLOW_NODES=${FLOW_NODES:-1000} ;;
conditions | report) ;;
bigrepo) N=${N:-100} REPS=${REPS:-3} ;;
overhead) N=${N:-200} REPS=${REPS:-5} ;;
*) echo "usage: scripts/bench.sh [quick | overhead | conditions | report | bigrepo | worktree | parallel-many | episodes]" >&2; exit 64 ;;
esac

# 10,000 evaluations over a memory of 100,000 keys (BENCH_CONDITIONS: a built binary)
build_conditions() {
	if [ -z "${BENCH_CONDITIONS:-}" ]; then
		cmake -S "$src" -B "$src/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DAILOOP_BENCH=ON >/dev/null
		cmake --build "$src/build" -j "$(nproc 2>/dev/null || echo 2)" --target bench_conditions >/dev/null
		BENCH_CONDITIONS=$src/build/tests/bench/bench_conditions
	fi
}
if [ "$mode" = conditions ]; then
	build_conditions
	"$BENCH_CONDITIONS" 10000
	exit
fi

if [ -z "${AILOOP:-}" ]; then
	cmake -S "$src" -B "$src/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build "$src/build" -j "$(nproc 2>/dev/null || echo 2)" --target ailoop >/dev/null
	AILOOP=$src/build/ailoop
fi
for tool in git jq perl; do
	command -v $tool >/dev/null || { echo "bench: needs $tool" >&2; exit 69; }
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ailoop-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
spread "$tmp"
export GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@example.com
export GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@example.com
export GIT_CONFIG_NOSYSTEM=1 HOME=$tmp NO_COLOR=1

now_ns() { date +%s%N; }

# count_flow MAX: the counting loop's flow (its sensor and actuator are
# .ai-loop/agents/sensor.md and actuator.md), at most MAX iterations
count_flow() {
	cat >.ai-loop/flow.yaml <<YAML
version: 1
flow:
  id: count
  type: loop
  controller: builtin:all-pass
  sensors: [.ai-loop/agents/sensor.md]
  actuator: {strategy: direct, agent: .ai-loop/agents/actuator.md}
  termination: {max_iterations: $1}
YAML
}

# increment_agent: the actuator that adds one to ./count
increment_agent() {
	printf -- '---\nname: increment\ncommand: echo $(($(cat count) + 1)) >count\n---\n' \
		>.ai-loop/agents/actuator.md
}

# the report of a run of R iterations: goals 5 MB, 1 s to write, 2 s to show
report() {
	local r=${R:-1000} t size page shown empty shown_cpu empty_cpu TIMEFORMAT='%R %U %S'
	mkdir -p "$tmp/report/.ai-loop/agents"
	cd "$tmp/report"
	git init -q -b main
	echo 0 >count
	cat >.ai-loop/agents/sensor.md <<MD
---
name: count
command: 'echo "count: \$(cat count)"; test "\$(cat count)" -ge $r'
metrics:
  count: 'count: (\d+)'
---
MD
	increment_agent
	count_flow "$r"
	git add -A
	git commit -q -m "count from 0"
	AILOOP_FSYNC=0 "$AILOOP" run --quiet "count to $r" >/dev/null
	t=$({ time "$AILOOP" report >"$tmp/page"; } 2>&1)
	page=$(cat "$tmp/page")
	size=$(stat -c %s "$page")
	printf 'report of %d iterations: %.2f MB (goal < 5 MB), written in %d ms (goal < 1000 ms),\n' \
		"$(git log --format=%s | grep -c '^ai-loop\[')" "$(echo "$size / 1048576" | bc -l)" \
		"$(echo "$t" | awk '{ printf "%d", $1 * 1000 }')"
	printf '  %d ms of CPU time\n' "$(echo "$t" | awk '{ printf "%d", ($2 + $3) * 1000 }')"
	command -v chromium >/dev/null || { echo "  (no chromium: not shown in a browser)"; return; }
	echo '<!DOCTYPE html><title>empty</title>' >"$tmp/empty.html"
	shown() { # "wall cpu": ms headless Chromium takes to load, lay out and dump a page
		local t
		t=$({ time chromium --headless --no-sandbox --disable-gpu --disable-dev-shm-usage \
			--user-data-dir="$tmp/chromium" --dump-dom "file://$1" >/dev/null 2>&1; } 2>&1)
		echo "$t" | awk '{ printf "%d %d\n", $1 * 1000, ($2 + $3) * 1000 }'
	}
	shown "$tmp/empty.html" >/dev/null # its first start sets up its profile
	read -r empty empty_cpu < <(shown "$tmp/empty.html")
	read -r shown shown_cpu < <(shown "$page")
	printf '  shown by headless Chromium in %d ms beyond its %d ms start (goal < 2000 ms);\n' \
		$((shown - empty)) "$empty"
	printf '  CPU time %d ms beyond its start (what counts on a shared machine: load %s)\n' \
		$((shown_cpu - empty_cpu)) "$(cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo ?)"
}
if [ "$mode" = report ]; then
	report
	exit
fi

# the overhead per iteration in a repository of FILES tracked files (1,000 per
# directory) where the agent changes one file per iteration, beside the time of
# one `git status --porcelain` there (taken before each run, so that both see
# the machine as it is then); with the watch of the work tree (the default)
# and with a full scan per iteration (AILOOP_WATCH=0). The sensor notes the
# time as it starts at the count of 0 and of N: between the two, N iterations
# whose agents a shell loop runs the same way, so what ailoop adds to each;
# before the first, the run's start (the check that the tree is clean, the
# watch's first walk), which a run pays once, reported apart.
bigrepo() {
	local files=${FILES:-20000} n=$N reps=$REPS dir=$tmp/bigrepo t0 base watch
	local -A start span
	local stamps=$tmp/stamps statuses=$tmp/statuses sensor
	mkdir -p "$dir/.ai-loop/agents"
	cd "$dir"
	git init -q -b main
	# no gc in the background of what is timed: `git commit` would start one
	# (20,000 loose objects), which packs them and then removes them all
	git config gc.auto 0
	awk -v n="$files" 'BEGIN { for (i = 0; i < n; i++) {
		d = sprintf("d%02d", int(i / 1000)); if (i % 1000 == 0) system("mkdir -p " d)
		f = sprintf("%s/f%05d.txt", d, i); print "file " i > f; close(f) } }'
	echo 0 >count
	sensor='c=$(cat count); case $c in 0|'"$n"') date +%s%N >>"$BENCH_STAMPS";; esac; echo "count $c"; test "$c" -ge '"$n"
	printf -- '---\nname: count\ncommand: '"'"'%s'"'"'\n---\n' "$sensor" >.ai-loop/agents/sensor.md
	increment_agent
	count_flow "$n"
	git add -A
	git commit -q -m "count from 0 beside $files files"
	git status --porcelain >/dev/null
	export BENCH_STAMPS=$stamps
	# stamps_span: the time from the first stamp to the last
	stamps_span() { echo $(($(tail -1 "$stamps") - $(head -1 "$stamps"))); }
	base=$(for _ in $(seq "$reps"); do
		echo 0 >count
		: >"$stamps"
		sh -c "$sensor" >/dev/null || true
		for _ in $(seq "$n"); do
			sh -c 'echo $(($(cat count) + 1)) >count'
			sh -c "$sensor" >/dev/null || true
		done
		stamps_span
	done | median)
	git checkout -q -- count
	mkdir -p "$tmp/old-runs"
	: >"$statuses"
	for watch in 1 0; do
		for _ in $(seq "$reps"); do
			# the last run's files moved away, not removed (see fresh_dir)
			[ -d .ai-loop/runs ] && mv .ai-loop/runs "$(mktemp -d "$tmp/old-runs/r.XXXXXX")"
			git checkout -q -f main
			# git status rewrites the index while an entry is as new as the
			# index (to the second, as git compares them), as the checkout
			# left `count`: a second later an untimed status rewrites it, and
			# the timed one only reads, as a status does in a settled tree
			sleep 1
			git status --porcelain >/dev/null
			time_ns git status --porcelain >>"$statuses"
			: >"$stamps"
			t0=$(now_ns)
			AILOOP_WATCH=$watch AILOOP_FSYNC=0 "$AILOOP" run --quiet "count to $n" >/dev/null
			[ "$(cat count)" = "$n" ] && [ "$(wc -l <"$stamps")" = 2 ] ||
				{ echo "bench: the loop did not reach $n" >&2; exit 1; }
			echo "$(($(head -1 "$stamps") - t0)) $(stamps_span)"
		done >"$tmp/runs-$watch"
		start[$watch]=$(cut -d' ' -f1 "$tmp/runs-$watch" | median)
		span[$watch]=$(cut -d' ' -f2 "$tmp/runs-$watch" | median)
	done
	status=$(median <"$statuses")
	echo "$files tracked files, $n iterations, medians of $reps, fsync off:"
	printf '  %-44s %6.1f ms\n' "git status --porcelain" "$(ms "$status")"
	for watch in 1 0; do
		local how
		how=$([ $watch = 1 ] && echo "watched tree" || echo "full scan")
		printf '  %-44s %6.1f ms\n' "run start to its first agent, $how" "$(ms "${start[$watch]}")"
		printf '  %-44s %6.1f ms  (%.2f x git status; goal <= 0.33)\n' "overhead per iteration, $how" \
			"$(awk -v t="${span[$watch]}" -v b="$base" -v n="$n" 'BEGIN { printf "%.1f", (t - b) / n / 1e6 }')" \
			"$(awk -v t="${span[$watch]}" -v b="$base" -v n="$n" -v s="$status" 'BEGIN { printf "%.2f", (t - b) / n / s }')"
	done
}

# median of the numbers on stdin
median() { sort -n | awk '{ v[NR] = $1 } END { print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# ms NS: nanoseconds as milliseconds, one decimal
ms() { awk -v ns="$1" 'BEGIN { printf "%.1f", ns / 1e6 }'; }

# time_ns CMD...: wall time of one run of CMD, output thrown away
time_ns() {
	local t0 t1
	t0=$(now_ns)
	"$@" >/dev/null 2>&1 || true
	t1=$(now_ns)
	echo $((t1 - t0))
}

# median_ns CMD...: the median of REPS runs
median_ns() {
	for _ in $(seq "$REPS"); do time_ns "$@"; done | median
}

# fastest_ns N CMD...: the fastest of N runs, for a ratio of two costs that
# only the program makes (a shared machine's noise only ever adds time)
fastest_ns() {
	local n=$1
	shift
	for _ in $(seq "$n"); do time_ns "$@"; done | sort -n | head -1
}
if [ "$mode" = bigrepo ]; then
	bigrepo
	exit
fi

# first_line_ns CMD...: the time until CMD prints its first line (it is then killed)
first_line_ns() {
	perl -MTime::HiRes=time -e '
		my $t = time; my $pid = open(my $f, "-|", @ARGV) or die "bench: $ARGV[0]: $!\n";
		my $line = <$f>; my $ns = (time - $t) * 1e9;
		kill 9, $pid; close $f; defined $line or die "bench: no output from @ARGV\n";
		printf "%.0f\n", $ns;' "$@"
}

rows=()
# row FIGURE GOAL AILOOP SHELL: one line of the table ("-": no such figure)
row() {
	local ratio=-
	if [ "$4" != - ] && [ "$3" != - ]; then
		ratio=$(awk -v a="$3" -v s="$4" 'BEGIN { if (s + 0 > 0) printf "%.2f", a / s; else printf "-" }')
	fi
	rows+=("$(printf '%-44s %-14s %-12s %-12s %s' "$1" "$2" "$3" "$4" "$ratio")")
}

# --- the counting loop: ailoop's overhead per iteration ----------------------

sensor='c=$(cat count); echo "count $c"; test "$c" -ge '"$N"
actuator='echo $(($(cat count) + 1)) >count'

# make_repo DIR: the counting project and its flow
make_repo() {
	mkdir -p "$1/.ai-loop/agents"
	cd "$1"
	git init -q -b main
	echo 0 >count
	cat >.ai-loop/agents/sensor.md <<MD
---
name: count
command: '$sensor'
---
MD
	cat >.ai-loop/agents/actuator.md <<MD
---
name: increment
command: '$actuator'
---
MD
	count_flow "$N"
	git add -A
	git commit -q -m "count from 0"
}

# fresh_dir: a new directory for one timed run. The runs before it are
# not removed until the bench ends: on ext4, making an inode costs a scan
# past every inode freed in the last minutes, so removing a run's
# thousands of files just before the next would time ext4's scan, not the
# loop (ailoop makes about 15 inodes an iteration, mostly git's loose objects)
fresh_dir() { mktemp -d "$tmp/loop.XXXXXX"; }

# settled: what the runs before wrote is on disk before the next is timed.
# A durable point (syncfs) writes out everything of the filesystem not yet
# written: without this, the first one of a run with fsync on would write
# the thousands of files the run just before left to the kernel's flusher
# (fsync off, the shell loop), and time that, not the run.
settled() { sync; }

# the same processes, N times, without ailoop
baseline() {
	make_repo "$(fresh_dir)"
	settled
	local t0 t1
	t0=$(now_ns)
	sh -c "$sensor" >/dev/null || true
	for _ in $(seq "$N"); do
		sh -c "$actuator"
		sh -c "$sensor" >/dev/null || true
	done
	t1=$(now_ns)
	echo $((t1 - t0))
}

# with_ailoop FSYNC: wall time of the whole run
with_ailoop() {
	make_repo "$(fresh_dir)"
	settled
	local t0 t1
	t0=$(now_ns)
	AILOOP_FSYNC=$1 "$AILOOP" run --quiet "count to $N" >/dev/null
	t1=$(now_ns)
	[ "$(cat count)" = "$N" ] || { echo "bench: the loop did not reach $N" >&2; exit 1; }
	echo $((t1 - t0))
}

# the seeds' way: the same agents in a bash loop, state in JSON by jq, git CLI commits
shell_loop() {
	make_repo "$(fresh_dir)"
	settled
	local t0 t1 i=0 out
	t0=$(now_ns)
	jq -n '{iteration: 0, status: "running"}' >state.json
	while :; do
		out=$(sh -c "$sensor" 2>&1) && break
		[ "$i" -ge "$N" ] && break
		sh -c "$actuator"
		i=$((i + 1))
		jq --argjson i "$i" --arg out "$out" '.iteration = $i | .sensors = $out' state.json \
			>state.json.tmp && mv state.json.tmp state.json
		git add -A && git commit -q -m "iteration $i: $out"
	done
	jq '.status = "complete"' state.json >state.json.tmp && mv state.json.tmp state.json
	t1=$(now_ns)
	[ "$(cat count)" = "$N" ] || { echo "bench: the shell loop did not reach $N" >&2; exit 1; }
	echo $((t1 - t0))
}

# per_iteration TOTAL BASE: milliseconds of overhead per iteration
per_iteration() { awk -v t="$1" -v b="$2" -v n="$N" 'BEGIN { printf "%.2f", (t - b) / n / 1e6 }'; }

# One repetition of each in turn, not all of one then all of the next: what
# one run leaves the filesystem (on ext4 without a journal, freed inodes a
# later run's new ones are slower to find for minutes) falls on all alike.
times_base=() times_shell=() times_off=() times_on=()
for _ in $(seq "$REPS"); do
	times_base+=("$(baseline)")
	times_shell+=("$(shell_loop)")
	times_off+=("$(with_ailoop 0)")
	times_on+=("$(with_ailoop 1)")
done
base=$(printf '%s\n' "${times_base[@]}" | median)
shell_ms=$(per_iteration "$(printf '%s\n' "${times_shell[@]}" | median)" "$base")
row "overhead per iteration, fsync off (ms)" - \
	"$(per_iteration "$(printf '%s\n' "${times_off[@]}" | median)" "$base")" "$shell_ms"
row "overhead per iteration, fsync on (ms)" "<= 2" \
	"$(per_iteration "$(printf '%s\n' "${times_on[@]}" | median)" "$base")" "$shell_ms"
print_table() {
	printf '%-44s %-14s %-12s %-12s %s\n' figure goal ailoop "shell loop" "ailoop/shell"
	printf '%s\n' "${rows[@]}"
}
if [ "$mode" = overhead ]; then
	print_table
	exit
fi

# --- a parallel node of 8 actions that each sleep 1 s ------------------------

mkdir -p "$tmp/parallel/.ai-loop/agents"
cd "$tmp/parallel"
git init -q -b main
printf -- '---\nname: nap\ncommand: sleep 1\n---\n' >.ai-loop/agents/nap.md
{
	# shared, as the shell loop beside it (worktrees are the `worktree` bench's)
	printf 'version: 1\nflow:\n  id: naps\n  type: parallel\n  isolation: shared\n  children:\n'
	for i in 1 2 3 4 5 6 7 8; do
		printf '    - {id: nap-%d, agent: .ai-loop/agents/nap.md}\n' "$i"
	done
} >.ai-loop/flow.yaml
git add -A
git commit -q -m "naps"
t0=$(now_ns)
AILOOP_FSYNC=0 "$AILOOP" run --quiet "sleep" >/dev/null
t1=$(now_ns)
[ "$(git log --format=%s | grep -c '^ai-loop\[naps > nap-')" = 8 ] ||
	{ echo "bench: the parallel node did not commit its 8 children" >&2; exit 1; }
mkdir -p "$tmp/parallel-shell"
cd "$tmp/parallel-shell"
git init -q -b main
t2=$(now_ns)
for i in 1 2 3 4 5 6 7 8; do sleep 1 & done
wait
for i in 1 2 3 4 5 6 7 8; do git commit -q --allow-empty -m "nap $i"; done
t3=$(now_ns)
row "parallel node, 8 children x 1 s (ms)" "~1000" "$(ms $((t1 - t0)))" "$(ms $((t3 - t2)))"

# --- conditions ----------------------------------------------------------------

if [ "$mode" = full ] || [ -n "${BENCH_CONDITIONS:-}" ]; then
	build_conditions
	# (it exits 1 over its budget: the table shows the figure all the same)
	cond=$({ "$BENCH_CONDITIONS" 10000 || true; } | sed -n 's/.* in \([0-9.]*\) ms.*/\1/p' | head -1)
	row "conditions, 10,000 evaluations (ms)" "< 50" "${cond:--}" -
else
	row "conditions, 10,000 evaluations (ms)" "< 50" "(full mode)" -
fi

# --- a long run: resume, status, log ---------------------------------------------

# the counting project whose agents, with AL_STAMP set, write the time they
# start to that file and kill ailoop (-9): the end of a resume's measurement
make_long() {
	mkdir -p "$1/.ai-loop/agents"
	cd "$1"
	git init -q -b main
	echo 0 >count
	cat >.ai-loop/agents/sensor.md <<'MD'
---
name: count
command: 'if [ -n "$AL_STAMP" ]; then date +%s%N >"$AL_STAMP"; kill -9 $PPID; exit 1; fi; c=$(cat count); if [ "$c" -ge "$AL_STOP_AT" ]; then kill -9 $PPID; fi; echo "count $c"; false'
---
MD
	cat >.ai-loop/agents/actuator.md <<'MD'
---
name: increment
command: 'if [ -n "$AL_STAMP" ]; then date +%s%N >"$AL_STAMP"; kill -9 $PPID; exit 1; fi; echo $(($(cat count) + 1)) >count'
---
MD
	cat >.ai-loop/flow.yaml <<'YAML'
version: 1
flow:
  id: count
  type: loop
  controller: builtin:all-pass
  sensors: [.ai-loop/agents/sensor.md]
  actuator: {strategy: direct, agent: .ai-loop/agents/actuator.md}
  termination: {max_iterations: 100000}
YAML
	git add -A
	git commit -q -m "count from 0"
	# a few real iterations, then killed in the sensor
	(AL_STOP_AT=3 AILOOP_FSYNC=0 "$AILOOP" run --quiet "count" >/dev/null 2>&1 || true) 2>/dev/null
	[ -d .ai-loop/runs ] && git log -1 --format=%s | grep -q '^ai-loop\[count\]' ||
		{ echo "bench: the run to grow did not start" >&2; exit 1; }
}

# grow DIR ITERATIONS: ITERATIONS more commits of the run between its first
# commit and the others (git fast-import), and its files grown to match
grow() {
	cd "$1"
	local run_dir start branch run_id prev c
	run_dir=$(ls -d .ai-loop/runs/run_*)
	run_id=${run_dir##*/}
	branch=$(git symbolic-ref --short HEAD)
	start=$(git log --format=%H --grep='^\[run-start\] true' -1)
	LC_ALL=C awk -v n="$2" -v start="$start" -v run="$run_id" 'BEGIN {
		for (i = 1; i <= n; i++) {
			msg = sprintf("ai-loop[count]: iteration %d — actuation\n\n[node-path] count\n" \
				"[level] 0\n[iteration] %d\n[status] running\n[target-met] false\n" \
				"[sensors] count: fail (exit 1)\n[action] actuation\n[run] %s\n", i, i, run)
			printf "commit refs/bench/grown\ncommitter bench <bench@example.com> %d +0000\n", \
				1700000000 + i
			printf "data %d\n%s\n", length(msg), msg
			if (i == 1) printf "from %s\n", start
			printf "\n"
		}
	}' | MALLOC_TOP_PAD_=268435456 git fast-import --quiet # (its many small allocations: few brk calls)
	prev=$(git rev-parse refs/bench/grown)
	for c in $(git rev-list --reverse "$start..HEAD"); do
		prev=$(git log -1 --format=%B "$c" | git commit-tree "$c^{tree}" -p "$prev")
	done
	# as ailoop's own commit moves it (resume checks the branch still holds
	# the run's last commit the reflog names)
	git update-ref -m "commit: $(git log -1 --format=%s "$prev")" "refs/heads/$branch" "$prev"
	git update-ref -d refs/bench/grown
	# its event log, memory and agent calls, as long as those of a run this
	# long: what the real iterations (0, 1 and 2) added, again and again
	perl -e '
		my ($dir, $n) = @ARGV;
		for my $file ("events.jsonl", "memory.jsonl", "logs/agent-calls") {
			my $path = "$dir/$file";
			open(my $in, "<", $path) or next; my @lines = <$in>; close $in;
			my $block = join("", grep { !/"run_start"|"run_resume"/ } @lines);
			open(my $out, ">", "$path.grown") or die;
			print $out $block for 1 .. $n / 3;
			print $out @lines; close $out;
			rename("$path.grown", $path) or die;
		}' "$run_dir" "$2"
}

# resume_ns DIR: one resume of a copy of DIR, until its first agent starts
resume_ns() {
	rm -rf "$tmp/copy"
	cp -a "$1" "$tmp/copy"
	cd "$tmp/copy"
	rm -f "$tmp/stamp"
	local t0
	t0=$(now_ns)
	(AL_STAMP=$tmp/stamp AILOOP_FSYNC=0 "$AILOOP" resume >/dev/null 2>&1 || true) 2>/dev/null
	[ -s "$tmp/stamp" ] || { echo "bench: the resumed run started no agent" >&2; exit 1; }
	echo $(($(cat "$tmp/stamp") - t0))
}

# the seeds' way to resume: read the iteration from the state, start the agent
shell_resume_ns() {
	cd "$1"
	jq -n --argjson i "$L" '{iteration: $i, status: "running"}' >state.json
	rm -f "$tmp/stamp"
	local t0
	t0=$(now_ns)
	bash -c 'i=$(jq -r .iteration state.json); [ "$(jq -r .status state.json)" = running ] &&
		sh -c "date +%s%N >\"$0\""' "$tmp/stamp"
	echo $(($(cat "$tmp/stamp") - t0))
}

t0=$(now_ns)
make_long "$tmp/short"
cp -a "$tmp/short" "$tmp/long"
grow "$tmp/long" "$L"
t1=$(now_ns)
commits=$(git -C "$tmp/long" rev-list --count HEAD)
[ "$commits" -gt "$L" ] || { echo "bench: the grown run has $commits commits" >&2; exit 1; }

short_resume=$(for _ in $(seq "$REPS"); do resume_ns "$tmp/short"; done | median)
long_resume=$(for _ in $(seq "$REPS"); do resume_ns "$tmp/long"; done | median)
shell_resume=$(for _ in $(seq "$REPS"); do shell_resume_ns "$tmp/long"; done | median)
row "resume to 1st agent, 3 iterations (ms)" "< 50" "$(ms "$short_resume")" "$(ms "$shell_resume")"
row "resume to 1st agent, $L iterations (ms)" "< 50" "$(ms "$long_resume")" "$(ms "$shell_resume")"

# killed runs: status and log read them as they are
for d in short long; do
	rm -rf "$tmp/$d.read"
	cp -a "$tmp/$d" "$tmp/$d.read"
done
cd "$tmp/long.read"
status=$(median_ns "$AILOOP" status)
shell_status=$(median_ns jq . state.json)
row "status, $L iterations (ms)" "< 50" "$(ms "$status")" "$(ms "$shell_status")"
cd "$tmp/short.read"
short_first=$(for _ in $(seq "$REPS"); do first_line_ns "$AILOOP" log --oneline; done | median)
cd "$tmp/long.read"
first=$(for _ in $(seq "$REPS"); do first_line_ns "$AILOOP" log --oneline; done | median)
shell_first=$(for _ in $(seq "$REPS"); do
	first_line_ns git log --reverse --format='%h %s'; done | median)
whole=$(median_ns "$AILOOP" log --oneline)
shell_whole=$(median_ns git log --reverse --format='%h %s')
[ "$("$AILOOP" log --oneline | wc -l)" -gt "$L" ] ||
	{ echo "bench: ailoop log did not print the whole run" >&2; exit 1; }
row "log, first line, 3 iterations (ms)" "< 50" "$(ms "$short_first")" -
row "log, first line, $L iterations (ms)" "< 50" "$(ms "$first")" "$(ms "$shell_first")"
row "log, all $L iterations (ms)" "streams" "$(ms "$whole")" "$(ms "$shell_whole")"

# --- large flows ---------------------------------------------------------------

mkdir -p "$tmp/flows"
cd "$tmp/flows"
# short names: 20,000 nodes stay under the flow file's limit of 1 MiB
printf -- '---\nname: worker\n---\nDo {task}.\n' >w.md
printf -- '---\nname: checker\n---\nCheck {task}.\n' >c.md
# flow NODES: a root sequence of NODES/4 groups of four nodes (a conditional
# with a regular expression, an action, a sequence and its action): NODES + 1 nodes
flow() {
	awk -v groups=$(($1 / 4)) 'BEGIN {
		print "version: 1\nflow:\n  id: root\n  type: sequence\n  children:"
		for (i = 1; i <= groups; i++)
			printf "  - {id: c%d, type: conditional, condition: {key: k%d, operator: matches_regex, value: \"^v%d$\"}, then: {id: t, agent: w.md}, else: {id: e, type: sequence, children: [{id: s, agent: c.md}]}}\n", i, i, i
	}'
}
declare -A parse
for n in "$FLOW_NODES" $((2 * FLOW_NODES)); do
	flow "$n" >"flow-$n.yaml"
	"$AILOOP" validate --flow "flow-$n.yaml" | grep -q "ok: $((n + 1)) nodes" ||
		{ echo "bench: the $n-node flow did not validate" >&2; exit 1; }
	parse[$n]=$(fastest_ns $((REPS > 5 ? REPS : 5)) "$AILOOP" validate --flow "flow-$n.yaml")
done
row "flow parse + validate, $FLOW_NODES nodes (ms)" "< 100" "$(ms "${parse[$FLOW_NODES]}")" -
row "flow parse + validate, $((2 * FLOW_NODES)) nodes (ms)" - "$(ms "${parse[$((2 * FLOW_NODES))]}")" -
row "flow, $((2 * FLOW_NODES)) / $FLOW_NODES nodes (ratio)" "<= 2.2" \
	"$(awk -v a="${parse[$((2 * FLOW_NODES))]}" -v b="${parse[$FLOW_NODES]}" 'BEGIN { printf "%.2f", a / b }')" -

# --- the table -------------------------------------------------------------------

echo "ailoop $("$AILOOP" --version 2>/dev/null | head -1 | awk '{print $NF}'), $(uname -m), $(nproc 2>/dev/null || echo ?) cores," \
	"medians of $REPS; loop of $N iterations; long run made in $(ms $((t1 - t0))) ms"
print_table

if [ -n "${PROFILE:-}" ] && command -v valgrind >/dev/null && command -v callgrind_annotate >/dev/null; then
	rm -rf "$tmp/profile"
	make_repo "$tmp/profile"
	AILOOP_FSYNC=0 valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.out" \
		"$AILOOP" run --quiet "count to $N" >/dev/null 2>"$tmp/valgrind.log"
	callgrind_annotate --inclusive=yes "$tmp/cg.out" 2>/dev/null >"$tmp/cg.txt"
	total_ir=$(sed -n 's/^ *\([0-9,]*\) .*PROGRAM TOTALS.*/\1/p' "$tmp/cg.txt" | tr -d ,)
	echo "where ailoop's own instructions go (callgrind, inclusive, $N iterations):"
	for fn in git_libgit2_init al_git_commit_all al_write_atomic al_proc_run_all \
		al_call_prepare al_sensors_read al_md_read al_flow_load al_git_message; do
		ir=$(grep -E "[ :]$fn( |$)" "$tmp/cg.txt" | head -1 | awk '{print $1}' | tr -d ,)
		[ -n "$ir" ] && printf '  %-20s %5.1f%%  (%d instructions per iteration)\n' "$fn" \
			"$(echo "100 * $ir / $total_ir" | bc -l)" $((ir / N))
	done
fi

[ "$mode" != full ] || report
