#ifndef AILOOP_STATE_H
#define AILOOP_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Where a run is, on disk, so that `ailoop resume` continues it exactly:
 * run-state.md for the run, orchestrator-output.md for each node. Both are
 * Markdown with YAML front matter, written atomically (fsutil.h).
 *
 * A node moves through phases: measure (sensors), commit, controller,
 * actuate, then measure again. A node that has ended stays in phase commit
 * with a final status: once its commit exists it is done, and nothing is
 * written after the run's last commit, so the tree ends clean.
 */
enum al_phase {
	AL_PHASE_MEASURE, AL_PHASE_COMMIT, AL_PHASE_CONTROLLER, AL_PHASE_ACTUATE,
	/* control nodes (sequence, fallback, conditional, transaction, loop-until) */
	AL_PHASE_CHILDREN,  /* running child `child` */
	AL_PHASE_CONDITION, /* evaluating the condition */
	AL_PHASE_ROLLBACK,  /* a transaction restores the tree of its start */
	AL_PHASE_DONE,      /* ended, with nothing to commit */
	AL_PHASE_COUNT
};

extern const char *const al_phase_names[AL_PHASE_COUNT];

/* A loop's circuit breaker as its node's state keeps it (its rules: exec/breaker.h). */
enum al_breaker_state { AL_BREAKER_CLOSED, AL_BREAKER_HALF_OPEN, AL_BREAKER_OPEN };

extern const char *const al_breaker_state_names[3];

struct al_breaker {
	enum al_breaker_state state;
	int no_progress; /* iterations in a row without progress */
	int same_error;  /* iterations in a row whose failing output was the one before's */
	char *tree;      /* code id at the last iteration's commit; NULL: not known */
	char *sensors;   /* the last measurement: "name status metric=value …" a line */
	char *children;  /* ReAcTree form: how each child ended in the last iteration */
	char *error;     /* hash of the last failing output; NULL when nothing failed */
	char *reason;    /* why it opened */
};

void al_breaker_release(struct al_breaker *b);

/* An agent's CLI session, continued by its next call (`session: continue`). */
struct al_session {
	char *who;    /* "controller", "actuator", "action", "sensor-<name>" */
	char *id;     /* the CLI's session id */
	char *totals; /* what a CLI that counts the whole session (codex) counted
			 in it so far, "INPUT OUTPUT CACHE-READ CACHE-WRITE REASONING"; or NULL */
};

struct al_node_state {
	char *run_id;
	char *node_id;
	char *node_path;
	char *parent_path; /* "root" for the root */
	int level;
	int iteration;
	char *label;
	enum al_phase phase;
	char *status;    /* running, or how it ended: complete, error, … */
	bool child_entry;
	int max_iterations;
	char *summary;   /* of the commit to make, or of the last action */
	bool target_met;
	int64_t elapsed_ms; /* time spent on the node, for its timeout */
	/*
	 * The writes of the node's state in the run, over all its entries:
	 * a copy with fewer is older, whatever its iteration (al_exec_catch_up).
	 */
	int64_t step;
	char *started_at;
	char *initial_sensors; /* the [sensors] of iteration 0, for the result */
	char *task_sha256;     /* of task.md, so that a damaged one is noticed */
	bool failed;           /* an agent failed under on_error fail-fast, … */
	enum al_phase failed_phase; /* … in this phase: a retry runs it again */
	char *type;            /* the node's type ("loop", "sequence", …); NULL in older states */
	/* control nodes */
	int child;             /* the child being run (index among the node's children) */
	char *branch;          /* conditional: "true" or "false" once evaluated */
	bool brk;              /* loop: break_loop ran in this iteration */
	char *base_commit;     /* transaction: HEAD at its start */
	char *base_tree;       /* transaction: the work tree at its start, what a rollback restores */
	char *done;            /* parallel: one character per child, '.' running, else its end */
	/* loops */
	struct al_breaker breaker; /* the circuit breaker (breaker.h) */
	char *gate_note;       /* sensor-form loop: why the exit gate refused, for the controller */
	/* the sessions its agents continue (`sessions:`), kept from one entry to the next */
	struct al_session *sessions;
	size_t nsessions;
};

/* Reads a node's state. AL_ENOTFOUND if absent, AL_EINVALID if damaged. */
int al_node_state_read(struct al_node_state *st, const char *path);
/* The same from text read elsewhere (a branch's copy); `name` for messages. */
int al_node_state_parse(struct al_node_state *st, const char *name, const char *text,
			size_t len);
/* Writes it as its next step, with the task as the body, for people reading the file. */
int al_node_state_write(struct al_node_state *st, const char *path, const char *task);
void al_node_state_release(struct al_node_state *st);
bool al_node_state_final(const struct al_node_state *st);
/* The session `who` continues, or NULL. */
const char *al_node_state_session(const struct al_node_state *st, const char *who);
/* Keeps `id` as the session `who` continues; NULL forgets it. */
void al_node_state_set_session(struct al_node_state *st, const char *who, const char *id);
/* What the CLI counted in the session `who` continues so far, or NULL. */
const char *al_node_state_session_totals(const struct al_node_state *st, const char *who);
/* Keeps `totals` for the session `who` continues (which must be kept). */
void al_node_state_set_session_totals(struct al_node_state *st, const char *who, const char *totals);
/* Moves the sessions of `from` into `to` (whose own are let go). */
void al_node_state_move_sessions(struct al_node_state *to, struct al_node_state *from);

struct al_run_state {
	char *run_id;
	char *status; /* running, paused, complete, max-iterations-reached, timeout, error, blocked */
	char *active_node_path;
	char **stack; /* execution-stack: node paths from the root inwards */
	size_t nstack;
	char *branch;
	char *base_branch;
	char *task;
	char *flow;
	char *flow_sha256;
	char *flow_sha256_except_limits; /* al_flow.sha256_except_limits */
	char *started_at;
	char *updated_at;
	char *start_commit; /* the run's first commit, once made: where `ailoop log` starts */
};

int al_run_state_read(struct al_run_state *st, const char *path);
/* The same from text read elsewhere (a branch's copy); `name` for messages. */
int al_run_state_parse(struct al_run_state *st, const char *name, const char *text, size_t len);
/* Sets updated-at to now and writes. */
int al_run_state_write(struct al_run_state *st, const char *path);
void al_run_state_release(struct al_run_state *st);

/* The static name of a final status ("complete", "timeout", …). */
const char *al_status_name(const char *status);

/* Whether a run in this status can be resumed. */
bool al_status_resumable(const char *status);

/* (al_timestamp: base/util.h) */

#endif
