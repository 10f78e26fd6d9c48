#ifndef AILOOP_EXEC_H
#define AILOOP_EXEC_H

#include "ailoop/model/flow.h"
#include "ailoop/git/git.h"
#include "ailoop/store/history.h"
#include "ailoop/store/memory.h"
#include "ailoop/base/progress.h"
#include "ailoop/store/run.h"
#include "ailoop/store/state.h"

#include <stdbool.h>
#include <stdint.h>

/*
 * In a run's directory, the pids and start times of the agents at work
 * (logs/ is never committed): what a resume may kill after ailoop was.
 */
#define AL_RUN_AGENTS_DIR "logs"
#define AL_RUN_AGENTS_FILE AL_RUN_AGENTS_DIR "/agents"
/* executor slurm: a file per running job step (slurm.h), out of history */
#define AL_RUN_SLURM_DIR AL_RUN_AGENTS_DIR "/slurm"

/*
 * The recursive executor. al_exec_node() runs any node; each node type has
 * its executor (the sensor-form loop in loop.c). A node keeps its progress
 * in its orchestrator-output.md, so running a node whose state is on disk
 * continues it: resuming a run is running it again.
 *
 * Errors: AL_EINTR means ailoop was interrupted and the step that was
 * running will run again on resume; AL_EAGENT with on_error fail-fast means
 * the run has ended in error and its last commit is made.
 */
struct al_result {
	bool success;
	const char *reason; /* complete, max-iterations-reached, timeout, failed, error, … */
	int iterations;
	char *summary;      /* one line */
};

/*
 * One node being executed, whatever its type: its state on disk and in
 * memory, its task, its clock. al_node_begin() reads the state back when
 * it belongs to this entry of the node (so running it continues it) or
 * starts it afresh; al_node_end() hands the result to the parent.
 *
 * The label: a loop's iterations are labelled below the label of the
 * iteration they run in ("2.1", "2.2"); every other node runs in, and
 * commits with, the label of its nearest enclosing loop iteration ("0"
 * outside any loop). A node is entered at most once per such iteration,
 * so (node path, label) names one entry of one node.
 */
struct al_node_run {
	struct al_exec *ex;
	const struct al_node *n;
	struct al_node_state st;
	char *dir;          /* nodes/<node-path> */
	char *state_path;   /* its orchestrator-output.md */
	char *task;
	const char *parent_label; /* NULL at the top */
	int64_t deadline;   /* 0 = none: the enclosing one and the node's own */
	int64_t entry_ms;
	int64_t base_elapsed;
	bool root;
	bool resumed;       /* state read back from disk: its next commit may exist */
	struct al_sensor_outputs *outputs; /* its sensors' outputs, kept (sensor.h) */
};

/* A node being executed, innermost last: for results written on the way out. */
struct al_frame {
	const struct al_node *node;
	struct al_node_state *st;
	const char *dir;
	const char *task;
	struct al_node_run *nr;
};

/* What agent calls cost since the last commit: its [cost] line (history.h). */
struct al_spend {
	double usd;          /* reported and estimated */
	long long input, output; /* tokens, cache reads and writes in input */
	int calls, estimated, unknown;
};

struct al_exec {
	struct al_flow *flow;
	struct al_git *git;
	struct al_run *run;
	struct al_progress *progress;
	char *root;      /* the repository root, absolute */
	char *agents_file; /* <run>/AL_RUN_AGENTS_FILE: see al_proc_spec.record */
	struct al_memory *memory; /* the run's working memory; NULL outside al_exec_run */
	bool resuming;   /* nodes on the run's stack must have their state; cleared once
			  * the innermost of them is resumed or a frame ends */
	char **resume_stack; /* that stack, as the run left it */
	size_t nresume_stack;
	size_t commits;  /* commits made by this process */
	char last_commit[AL_OID_HEX]; /* the last of them, for the hooks (hooks.h) */
	bool run_committed; /* the run has a commit: the next is not its first */
	bool start_unsaved; /* run-state.md lacks the run's first commit (start-commit) */
	bool start_searched; /* for that commit, made by another process (exec.c) */
	struct al_cond_cache *cond_cache;  /* condition results (SPEC §3.2) */
	struct al_frame frames[AL_FLOW_MAX_DEPTH];
	size_t nframes;
	/*
	 * In a parallel child process (parallel.c): the frames below
	 * `base_frame` are the parent process's, which alone ends the run;
	 * `commit_lock` (an flock's descriptor) serializes commits with the
	 * siblings; a resumed node's commit may exist anywhere between HEAD
	 * and `commits_since` (the parallel node's start), as a sibling may
	 * have committed after it.
	 */
	size_t base_frame;
	int commit_lock;
	const char *commits_since;
	bool outer_break; /* break_loop ran for a loop of the parent process's */
	bool isolated;    /* in a parallel child's worktree: commits leave the run's files out */
	struct al_spend spend; /* since this process's last commit */
};

/* Runs (or continues) the run's root node; sets the run's final status. */
int al_exec_run(struct al_exec *ex, struct al_result *res);

/*
 * Sets how ex->git's commits find what changed: a flow with agents of
 * executor slurm, which may write to the work tree from other hosts,
 * scans the whole tree at each commit.
 */
void al_exec_watch_policy(struct al_exec *ex);

/*
 * Runs `node` with `task` as its setpoint; `parent_label` is NULL for the
 * root; `child_entry` when a composite actuator enters it; `deadline` is
 * the enclosing deadline (al_now_ms() clock, 0 = none).
 */
int al_exec_node(struct al_exec *ex, const struct al_node *node, const char *task,
		 const char *parent_label, bool child_entry, int64_t deadline,
		 struct al_result *res);
/* The executors of the node types (loop.c, control.c, action.c). */
int al_loop_run(struct al_exec *ex, const struct al_node *node, const char *task,
		const char *parent_label, bool child_entry, int64_t deadline,
		struct al_result *res);
int al_control_run(struct al_exec *ex, const struct al_node *node, const char *task,
		   const char *parent_label, int64_t deadline, struct al_result *res);
int al_action_run(struct al_exec *ex, const struct al_node *node, const char *task,
		  const char *parent_label, int64_t deadline, struct al_result *res);
int al_parallel_run(struct al_exec *ex, const struct al_node *node, const char *task,
		    const char *parent_label, int64_t deadline, struct al_result *res);

/*
 * Starts or continues node `n` (see struct al_node_run) and pushes its
 * frame. A fresh node starts in `phase` with `iteration`; its task.md and
 * state are written before it enters the run's execution stack.
 */
int al_node_begin(struct al_node_run *nr, struct al_exec *ex, const struct al_node *n,
		  const char *task, const char *parent_label, bool child_entry,
		  int64_t deadline, enum al_phase phase, int iteration);
/* Writes the node's state, with the time spent on it. */
int al_node_save(struct al_node_run *nr);
/*
 * Writes the time spent on the node into its state on disk, and nothing
 * else of it: the state in memory may be between two of its writes. For a
 * node that stops without saving its state (paused, blocked, waiting),
 * whose time must still count at the resume (limits.max_wall_seconds, a
 * node's timeout_seconds). Never fails: a clock not kept is a warning's
 * worth at most, and none is given.
 */
void al_node_keep_clock(const struct al_node_run *nr);
/*
 * The node has ended with `status`: writes its result-output.md (`body`
 * under the common head, or a summary of `message`), and moves it to its
 * last commit (`commit`) or to done.
 */
int al_node_finish(struct al_node_run *nr, const char *status, const char *message,
		   bool commit, const char *body);
/*
 * The node's commit of its current label: `sensors` the [sensors] line
 * (may be NULL). When the node's status is final, whatever must precede
 * its last commit is written first (its end event; the run's end at the
 * root; every frame's result when it ends the run in error).
 */
int al_node_commit(struct al_node_run *nr, const char *sensors);
/*
 * Whether the node, resumed, finds the commit of its current label made
 * already: by the ailoop that stopped, which died before its next state
 * write (or a restart brought the run's files back to that commit).
 */
bool al_node_committed(struct al_node_run *nr);
/*
 * Pops the frame; for `rc` 0, fills `res` from the state and leaves the
 * execution stack (the root stays on it); for an error that pauses or
 * blocks the run (not AL_EAGENT), keeps the node's clock. Frees what begin allocated. Returns
 * `rc`, or an error of its own.
 */
int al_node_end(struct al_node_run *nr, int rc, struct al_result *res);
/*
 * Records the episode of a node that ended (episode.c), after its end is
 * durable and before its parent moves on: a kill in between records it
 * when the resumed parent ends the node again. Never fails the run: a
 * store it cannot write is a warning.
 */
void al_node_episode(struct al_node_run *nr);
/*
 * The root's episode of `run`, ended (its status final), if a kill after
 * its last commit kept it from being recorded: `ailoop resume` finds no
 * run to resume then, and records it.
 */
void al_exec_ended_run_episode(struct al_git *g, struct al_run *run);
/* Whether the node runs with deadline passed (then it should end in timeout). */
bool al_node_timed_out(const struct al_node_run *nr);
/* Child of a node's iteration label: "<parent>.<k>", or "<k>" at the top. */
char *al_label_for(const char *parent, int k);

/*
 * Commits `f`. With `may_exist` (the node's state was read back from disk),
 * not if HEAD is already that node's commit of that label.
 */
int al_exec_commit(struct al_exec *ex, const struct al_commit_fields *f, bool may_exist);
/* Whether the commit of `f` exists already: made by an ailoop that died before recording it. */
bool al_exec_committed(struct al_exec *ex, const struct al_commit_fields *f);
/* Whether the run's first commit, the one that adds its directory, is in HEAD's history. */
bool al_exec_run_recorded(struct al_exec *ex);

/*
 * Ends the run in error (on_error fail-fast): writes result-output.md of
 * every node being executed and the run's status, for the last commit.
 */
void al_exec_fail_frames(struct al_exec *ex, const char *message);

/*
 * Opens a run that ended in an agent's error (on_error fail-fast) again,
 * so that resuming it runs the step that failed once more, as the next
 * iteration of the node it failed in (the error keeps its commit and its
 * label). With `check_only`, writes nothing. AL_ENOTFOUND if the run did
 * not end that way. Written innermost node last and the run's status
 * after it: killed in between, it is done again.
 */
int al_exec_retry(struct al_run *run, bool check_only);

/*
 * Before a resume, what an agent did to the run's history and files
 * before the run stopped. If the branch no longer holds the run's last
 * commit (an agent's reset or amend) while the run's files are from it,
 * AL_EMOVED with the way back (going on would skip the labels lost). If
 * the state of a node of `run` is older on disk than in the last commit
 * (an agent checked out an earlier commit's files, and the run stopped
 * before ailoop wrote them again), puts the run's files back as that
 * commit has them and reads the run's state again, so that the run goes
 * on from its last commit, not from an earlier one: 1. Else 0.
 */
int al_exec_catch_up(struct al_git *git, struct al_run *run);

void al_result_release(struct al_result *res);

/*
 * The front matter of a node's result-output.md (status, target-met,
 * termination-reason, run and node ids and paths, iterations-executed) and
 * its title; the body's sections follow. `reason` NULL: the status's.
 */
struct al_strbuf;
void al_exec_result_head(struct al_strbuf *out, const struct al_exec *ex,
			 const struct al_node *node, const char *status, const char *reason,
			 bool target_met, int iterations);

/*
 * Checks, before anything starts, that the executor can run the flow: every
 * runner the agents need installed (AL_ENORUNNER, with how to install it).
 */
int al_exec_check_flow(const struct al_flow *flow);
/*
 * What `ailoop validate` warns of: the flow's own warnings (al_flow_warnings)
 * and command agents whose program is not on PATH or not executable.
 */
void al_exec_warnings(struct al_flow *flow, struct al_diags *w);

#endif
