#!/usr/bin/env bash
# executor and slurm keys: bad values are errors at their file:line:col;
# `executor` is inherited by a subtree and `executor: local` takes a part
# of it back; a work tree on a local filesystem is refused where the
# partition has nodes other than this host (unless slurm.shared_fs says it
# is shared); no srun is a clear error; and a parallel node of 4 writing
# children gives the same commits and tree on Slurm as locally.
. "$(dirname "$0")/lib.sh"

# --- bad values, found by `validate` (no cluster needed) --------------------------------
R=$TEST_TMP/bad
loop_repo "$R" a
cat >"$R/.ai-loop/flow.yaml" <<'YAML'
version: 1
defaults:
  executor: cluster
  slurm: {partition: "a b", nodes: 2}
flow:
  id: fix
  type: loop
  executor: [slurm]
  slurm:
    time: soon
    cpus_per_task: 0
    mem_per_cpu: lots
    extra_args: [--exclusive, {a: 1}]
    shared_fs: maybe
  sensors: [.ai-loop/agents/sensor.md]
  actuator: {strategy: direct, agent: .ai-loop/agents/fixer.md}
YAML
cd "$R"
run "$AILOOP" validate
expect_rc 65 "a flow with bad executor and slurm values is invalid"
expect_in "$err" "flow.yaml:3:13: error: " "defaults.executor's position"
expect_in "$err" "'executor'" "the bad executor is named"
expect_in "$err" "flow.yaml:4:22: error: slurm partition 'a b' is not a name" "a bad partition"
expect_in "$err" "flow.yaml:4:29: error: unknown key 'nodes' in slurm" "an unknown slurm key's position"
expect_in "$err" "flow.yaml:8:13: error: " "a node's bad executor's position"
expect_in "$err" "flow.yaml:10:11: error: 'time' must be a Slurm time limit (minutes, or [days-]hours:minutes:seconds), not 'soon'" "a bad time"
expect_in "$err" "flow.yaml:11:20: error: " "a bad cpus_per_task"
expect_in "$err" "flow.yaml:12:18: error: 'mem_per_cpu' must be a size such as 500M or 2G" \
	"a bad mem_per_cpu"
expect_in "$err" "flow.yaml:13:31: error: 'extra_args' must be a list of strings" "a bad extra_args"
expect_in "$err" "flow.yaml:14:16: error: " "a bad shared_fs"

# --- no srun: a clear error before anything runs ----------------------------------------
R=$TEST_TMP/nosrun
loop_repo "$R" a
one_loop "$R" fixer.md "" "" "executor: slurm"
commit_all "$R"
cd "$R"
mkdir -p "$TEST_TMP/bin"
ln -s "$(command -v sh)" "$TEST_TMP/bin/sh"
out=$(PATH=$TEST_TMP/bin "$AILOOP" run "fix" 2>"$TEST_TMP/stderr") && rc=0 || rc=$?
err=$(cat "$TEST_TMP/stderr")
expect_rc 69 "executor slurm without srun"
expect_in "$err" "ailoop: error: node 'fix' has executor slurm, and 'srun' is not installed" \
	"the error names the node and srun"
expect_eq "$(ls .ai-loop/runs 2>/dev/null | wc -l)" 0 "no run was started"

# a partition `wide` with a second node (down, never used) besides this host
host=$(hostname -s)
SLURM_EXTRA_CONF="NodeName=ailoop-far-node NodeAddr=127.0.0.2 CPUs=1 State=DOWN
PartitionName=wide Nodes=$host,ailoop-far-node Default=NO MaxTime=INFINITE State=UP"
. "$AILOOP_SRC/tests/cli/slurm-cluster.sh"
slurm_start

# --- the work tree's filesystem --------------------------------------------------------
R=$TEST_TMP/wide
loop_repo "$R" a
one_loop "$R" fixer.md "" "" "executor: slurm
  slurm: {partition: wide}"
commit_all "$R"
cd "$R"
fstype=$(stat -f -c %T .)
run "$AILOOP" run "fix"
case "$fstype" in
nfs*|cifs|smb*|lustre|gpfs|ceph|fuse*|v9fs|afs|ocfs2|gfs2)
	expect_rc 0 "a shared filesystem is accepted" ;;
*)
	expect_rc 65 "a local work tree with a partition of other nodes"
	expect_in "$err" "ailoop: error: node 'fix': executor slurm: the work tree '$R' is on a local filesystem" \
		"the error names the node and the work tree"
	expect_in "$err" "partition 'wide' has nodes other than this host ('ailoop-far-node')" \
		"the error names the partition and another node"
	expect_in "$err" "shared_fs: true" "the error says how to vouch for the filesystem"
	expect_eq "$(ls .ai-loop/runs 2>/dev/null | wc -l)" 0 "no run was started" ;;
esac
# a partition the cluster does not have
one_loop "$R" fixer.md "" "" "executor: slurm
  slurm: {partition: nosuch}"
commit_all "$R"
run "$AILOOP" run "fix"
expect_rc 65 "an unknown partition"
expect_in "$err" "ailoop: error: node 'fix': executor slurm: slurm partition 'nosuch' has no nodes" \
	"the error names the partition"
# the user vouches for it: it runs (on this host, the only node up)
one_loop "$R" fixer.md "" "" "executor: slurm
  slurm: {partition: wide, shared_fs: true, time: 5, cpus_per_task: 1, mem_per_cpu: 100M, extra_args: [--nodelist=$host]}"
commit_all "$R"
run "$AILOOP" run "fix"
expect_rc 0 "slurm.shared_fs: true runs on the partition"
expect_in "$(cat .ai-loop/runs/run_*/events.jsonl)" '"event":"slurm_step"' "the steps ran on slurm"

# --- inheritance: defaults.executor slurm, a child takes `executor: local` --------------
R=$TEST_TMP/inherit
loop_repo "$R" a
cat >"$R/.ai-loop/agents/where.md" <<'MD'
---
name: where
command: echo "${SLURM_JOB_ID:-local}" >>"where-$AILOOP_NODE_ID.txt"
---
Says where it ran.
MD
cat >"$R/.ai-loop/flow.yaml" <<'YAML'
version: 1
defaults:
  executor: slurm
flow:
  id: seq
  type: sequence
  children:
    - {id: on-cluster, agent: .ai-loop/agents/where.md}
    - {id: here, executor: local, agent: .ai-loop/agents/where.md}
YAML
commit_all "$R"
cd "$R"
run "$AILOOP" run "where"
expect_rc 0 "a sequence of actions, one local"
[ "$(cat where-on-cluster.txt)" -gt 0 ] 2>/dev/null && pass ||
	fail "the action that inherits defaults.executor ran as a slurm job ($(cat where-on-cluster.txt))"
expect_eq "$(cat where-here.txt)" "local" "executor: local runs the action here"

# --- a parallel node of 4 writing children: the same on slurm as locally ---------------
par_repo() {
	R=$TEST_TMP/$1
	loop_repo "$R" a
	cat >"$R/.ai-loop/agents/writer.md" <<'MD'
---
name: writer
command: printf '%s\n' "$AILOOP_NODE_ID" >"out-$AILOOP_NODE_ID.txt"
---
Writes its own file.
MD
	{
		printf 'version: 1\nflow:\n  id: par\n  type: parallel\n'
		shift
		[ $# -eq 0 ] || printf '  %s\n' "$@"
		printf '  children:\n'
		for c in w1 w2 w3 w4; do
			printf '    - {id: %s, agent: .ai-loop/agents/writer.md}\n' "$c"
		done
	} >"$R/.ai-loop/flow.yaml"
	commit_all "$R"
	cd "$R"
	run "$AILOOP" run "write in parallel"
}
par_repo par-local "isolation: shared"
expect_rc 0 "parallel run locally"
ref_commits=$(triples "$R" | sort)
ref_tree=$(code_tree "$R" | grep -v flow.yaml)
par_repo par-slurm "isolation: shared" "executor: slurm"
expect_rc 0 "parallel run on slurm"
expect_eq "$(triples "$R" | sort)" "$ref_commits" "the same commits on slurm as locally"
expect_eq "$(code_tree "$R" | grep -v flow.yaml)" "$ref_tree" "the same tree on slurm as locally"
expect_eq "$(grep -c '"event":"slurm_step"' .ai-loop/runs/run_*/events.jsonl)" 4 \
	"each child's agent ran as a slurm step"
expect_queue_drained "the parallel run"
check_history "$R"

# the same with each child in its own worktree, merged back
par_repo par-wt-local "isolation: worktree"
expect_rc 0 "parallel run in worktrees locally"
ref_commits=$(triples "$R" | sort)
ref_tree=$(code_tree "$R" | grep -v flow.yaml)
expect_eq "$(git log --merges --format=%s | wc -l)" 4 "one merge commit per child"
par_repo par-wt-slurm "isolation: worktree" "executor: slurm"
expect_rc 0 "parallel run in worktrees on slurm"
expect_eq "$(triples "$R" | sort)" "$ref_commits" "worktrees: the same commits on slurm as locally"
expect_eq "$(code_tree "$R" | grep -v flow.yaml)" "$ref_tree" "worktrees: the same tree on slurm as locally"
expect_eq "$(git ls-tree --name-only ai-loop/write-in-parallel--w3 | grep out-)" "out-w3.txt" \
	"worktrees: a child's step wrote in its own worktree, committed on its branch"
expect_eq "$(git worktree list | wc -l)" 1 "worktrees: none left after the run"
expect_queue_drained "the run in worktrees"
check_history "$R"

# a conflict's resolver runs as a slurm step too, in its own worktree
R=$TEST_TMP/resolve-slurm
export RV=$TEST_TMP/resolve-slurm.rv
mkdir -p "$RV"
loop_repo "$R" a
printf 'one\ntwo\n' >"$R/shared.txt"
printf -- '---\nname: line\ncommand: echo "$AILOOP_NODE_ID" >shared.txt\n---\nEdit.\n' \
	>"$R/.ai-loop/agents/line.md"
cat >"$R/.ai-loop/agents/resolver.md" <<'MD'
---
name: resolver
command: 'pwd >"$RV/resolver-cwd"; echo "$SLURM_JOB_ID" >"$RV/resolver-job"; echo both >shared.txt'
---
Resolve.
MD
cat >"$R/.ai-loop/flow.yaml" <<'YAML'
version: 1
flow:
  id: par
  type: parallel
  executor: slurm
  on_conflict: {agent: .ai-loop/agents/resolver.md}
  children:
    - {id: a, agent: .ai-loop/agents/line.md}
    - {id: b, agent: .ai-loop/agents/line.md}
YAML
commit_all "$R"
cd "$R"
run "$AILOOP" run "resolve on slurm"
expect_rc 0 "a conflict resolved by a resolver on slurm"
expect_eq "$(cat shared.txt)" "both" "the resolver's file is merged"
expect_eq "$(cat "$RV/resolver-cwd")" "$(cd .ai-loop/runs/run_* && pwd)/worktrees/b.resolve" \
	"the resolver's step ran in its worktree"
[ "$(cat "$RV/resolver-job")" -gt 0 ] 2>/dev/null && pass ||
	fail "the resolver ran as a slurm job ($(cat "$RV/resolver-job"))"
expect_eq "$(grep -c '"event":"slurm_step"' .ai-loop/runs/run_*/events.jsonl)" 3 \
	"the children's and the resolver's agents ran as slurm steps"
expect_queue_drained "the run"

finish
