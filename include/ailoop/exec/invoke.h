#ifndef AILOOP_INVOKE_H
#define AILOOP_INVOKE_H

#include "ailoop/model/agent.h"
#include "ailoop/exec/exec.h"
#include "ailoop/proc/proc.h"
#include "ailoop/proc/usage.h"
#include "ailoop/store/state.h"

/*
 * One agent at work: its prompt (the agent file's body with placeholders
 * filled), its command line (the runner's template, or the agent's own
 * `command`), its environment, its output file and its log.
 *
 * The task reaches agents through the prompt, {task} and AILOOP_TASK_FILE,
 * never through a shell command line.
 */
enum al_role { AL_ROLE_SENSOR, AL_ROLE_CONTROLLER, AL_ROLE_ACTUATOR, AL_ROLE_ACTION };

extern const char *const al_role_names[4];

struct al_call_ctx {
	const struct al_agent *agent;
	enum al_role role;
	const char *name;       /* the sensor's name, for file names; else NULL */
	const struct al_node *node;
	const char *label;
	const char *dir;        /* the node's artifacts directory */
	const char *input;      /* input file path, or NULL */
	const char *output;     /* output file path */
	const char *task;
	const char *model;      /* NULL: the agent's own */
	const char *sensors_section;
	const char *notice;     /* ailoop's word to the agent (an exit gate's refusal), or NULL */
	int64_t deadline_ms;    /* the node's deadline, 0 = none */
	bool keep_output;       /* the caller writes the output file itself */
	const char *cwd;        /* where the agent runs (absolute); NULL: here */
	/*
	 * Where the agent's CLI session is kept, for an agent of `session:
	 * continue` (its node's state); NULL: nowhere, every call is fresh.
	 */
	struct al_node_state *sessions;
};

struct al_call {
	struct al_proc_spec spec;
	struct al_proc_result res;
	const struct al_call_ctx *ctx;
	char **argv;
	char **env;
	struct al_strbuf prompt;
	char *log_path;
	char *prompt_path;
	int timeout_s;
	struct al_progress *progress;
	struct al_memory *memory; /* where the output's `memory:` map goes; may be NULL */
	struct al_run *run;       /* where the "agent" event goes (its wall time); may be NULL */
	char *slurm_job_file;     /* executor slurm: where its step writes its job id; else NULL */
	char *format_why;         /* what made its output unreadable (AL_EFORMAT), or NULL */
	enum al_stream stream;    /* what its program prints */
	struct al_usage usage;    /* what it printed, read (al_call_finish) */
	const struct al_flow *flow; /* its prices */
	const char *model;        /* the model asked for, or NULL: the CLI's own */
	struct al_spend *spend;   /* where its cost is added; may be NULL */
	char *session_key;        /* its entry in ctx->sessions, for an agent that continues */
	char *resumed;            /* the session it continues, or NULL: a new one */
	char *session_chosen;     /* the id ailoop gave a new session ({session-id}), or NULL */
	char *session_totals;     /* what its CLI counted in that session, or NULL */
	bool cumulative;          /* its CLI's usage counts the session's earlier calls too */
	bool session_lost;        /* the CLI could not find that session (al_call_refresh) */
	int64_t started;          /* its start in logs/agent-calls; 0: not an agent call */
	char *wait_path;          /* the record of its wait for a rate limit's reset */
};

/*
 * Builds prompt, argv and environment; writes the prompt file. An agent
 * call is then counted against the run's budgets (al_budget_acquire), which
 * may wait, or return AL_EBLOCKED.
 */
int al_call_prepare(struct al_call *call, struct al_exec *ex, const struct al_call_ctx *ctx);
/*
 * After the process ended: writes its log, records an "agent" event (role,
 * name, wall time, exit status, timeout) in the run's event log, and writes
 * its stdout as the output file if it wrote none (unless keep_output).
 * Returns AL_EAGENT (with a message naming the agent and its log) if it
 * failed or timed out. An
 * agent that succeeded and whose output's front matter has a `memory:`
 * map has each of its entries written to working memory.
 */
int al_call_finish(struct al_call *call);
/*
 * `rc`, what finishing `call` returned: a controller's or an agent sensor's
 * output whose front matter ailoop cannot read, even as models write it
 * (output.h), is AL_EFORMAT, and the same agent is asked again, up to its
 * format_retries, told what was wrong and shown the lines its output must
 * begin with; each time is an agent call (budgets count it), noted and
 * recorded as a "format_retry" event. Still unreadable: AL_EAGENT. Any other
 * `rc` is returned as it is.
 */
int al_call_reformat(struct al_exec *ex, struct al_call *call, int rc);
/*
 * `rc`, what finishing `call` returned: a call that continued a session
 * its CLI could not find (session_lost) is run once more in a new
 * session, with a warning; any other `rc` is returned as it is.
 */
int al_call_refresh(struct al_exec *ex, struct al_call *call, int rc);
void al_call_release(struct al_call *call);

/*
 * Prepare, run and finish one agent. AL_EINTR if interrupted. An agent
 * that hit a rate limit is run again after a back-off (see budget.h).
 */
int al_call_run(struct al_exec *ex, const struct al_call_ctx *ctx, struct al_call *call);
/*
 * `call` ran and hit a rate limit (al_rate_limited): writes its log, waits
 * the back-off of retry `attempt` (0-based) and runs it again, as often as
 * it hits one; then finishes it.
 */
int al_call_retry(struct al_exec *ex, struct al_call *call, int attempt);
/*
 * `call` ran as a Slurm step (executor slurm) and Slurm, not the agent,
 * ended it (al_slurm_failed): writes its log, cancels the step's job and
 * runs it once more. Returns 0 if it did not fail so or ran again (its
 * result in call->res), else what preparing or running it returned.
 */
int al_call_slurm_retry(struct al_exec *ex, struct al_call *call);
/* Whether the call is an agent call (all but command sensors), for budgets. */
bool al_call_is_agent(const struct al_call_ctx *ctx);

/* The {sensors-section} of a node: each sensor's name, output and target. */
void al_sensors_section(struct al_strbuf *out, const struct al_node *node, const char *dir);

/*
 * What an agent did, in one line for a commit subject: its output's
 * front matter `summary`, else the first line of its body that is not a
 * heading or a fence, else `fallback`; at most 100 characters, UTF-8.
 */
char *al_output_summary(const char *path, const char *fallback);

#endif
