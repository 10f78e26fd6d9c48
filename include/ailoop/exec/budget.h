#ifndef AILOOP_BUDGET_H
#define AILOOP_BUDGET_H

#include "ailoop/exec/exec.h"
#include "ailoop/proc/proc.h"

#include <stdbool.h>
#include <stdint.h>

/*
 * Budgets and rate limits of a run's agents (flow.yaml `limits:`).
 *
 * Every agent call (controllers, actuators, actions, LLM sensors; command
 * sensors are not agent calls) is recorded before its process starts as
 * one line, its start time in seconds since the epoch, appended to the run's
 * logs/agent-calls under an flock: parallel children and resumes add to
 * the same count, and a line torn by a kill is dropped, its call never
 * having started. A line that is not a time (digits alone, up to the year
 * 9999) is no call: al_budget_acquire names it once as a warning. A call
 * whose CLI reported its usage (a JSON stream) adds a line as it ends: its
 * start time, then "USD KIND IN OUT NODE", its cost in dollars, how that
 * is known (reported, estimated or unknown), its tokens in (cache
 * included) and out, and its node's path; that line is no call, and one
 * whose cost does not read so is named as the others are. It is the one
 * record of what the call cost, which the cost budgets sum. The file is
 * never committed (logs/), so restoring the run's files from git does not
 * give calls back.
 *
 * - max_agent_calls: calls made in the whole run, over every resume;
 * - max_wall_seconds: the time ailoop has spent on the run (the root
 *   node's clock, as its timeout_seconds counts it): time while the run was
 *   paused, blocked or killed does not count, waits for the hourly limit do;
 * - max_agent_calls_per_hour: a sliding window of the recorded start times;
 *   when full, the next call waits until the oldest leaves it, and a resume
 *   after a kill waits what remains, the times being on disk; a time
 *   later than now (the clock moved back) counts as now, so no wait is
 *   longer than the window.
 *
 * A spent budget is AL_EBLOCKED: the run is blocked, the step not begun, and
 * `ailoop resume` after raising the limit in flow.yaml runs it.
 *
 * An agent that fails (non-zero exit) with output that matches
 * rate_limit_pattern (or a claude stream that says the limit refused it)
 * is run again after a back-off of rate_limit_backoff_seconds, doubling
 * with each attempt, at most AL_RATE_LIMIT_BACKOFF_MAX; or, when the CLI
 * says when its limit resets, at that time and a margin, at most
 * rate_limit_max_wait_seconds away (exec/rate_wait.h). Its failure is not
 * the node's. Each attempt is an agent call.
 */
#define AL_BUDGET_FILE AL_RUN_AGENTS_DIR "/agent-calls"
/* (the limits' defaults and bounds: model/flow.h) */

/*
 * Before an agent call starts (`what` names it for messages): blocks if a
 * budget is spent, waits while the hourly window is full (no longer than
 * the run's time budget lasts), then records the call, its start time in
 * *started (if not NULL). AL_EBLOCKED, AL_EINTR if interrupted while
 * waiting, AL_ETIMEOUT if the node's deadline `deadline_ms` (al_now_ms();
 * 0: none) came while it waited, or an I/O error.
 */
int al_budget_acquire(struct al_exec *ex, const char *what, int64_t deadline_ms,
		      int64_t *started);
/*
 * After the call of node `node` that started at `started` ended: its cost
 * `usd`, `kind` ("reported", "estimated" or "unknown") and tokens `in`
 * and `out`, as a line of its own. A line lost (a full disk, a kill
 * before it) is a call whose cost is not counted: at most once, never
 * twice.
 */
void al_budget_call_end(struct al_run *run, const char *node, int64_t started, double usd,
			const char *kind, long long in, long long out);

/* What the calls of a subtree (or of the run) have cost so far. */
struct al_budget_spent {
	double usd;
	long long tokens;
	long unknown, calls;
};

/* The costs recorded so far, by node (budget_cost.c). */
struct al_budget_costs {
	struct al_budget_node_cost *v;
	size_t n, alloc;
};
void al_budget_costs_add(struct al_budget_costs *c, const char *node, size_t len, double usd,
			 long long tokens, bool unknown);
void al_budget_costs_release(struct al_budget_costs *c);
/* Adds the calls of `c` in the subtree of `top` (NULL: the run) to `s`. */
void al_budget_costs_sum(const struct al_budget_costs *c, const char *top,
			 struct al_budget_spent *s);
/*
 * Adds the calls that a run made by an earlier ailoop recorded in
 * AL_BUDGET_OLD_COST_FILE, a JSON line each (node, usd, tokens, cost),
 * where the lines of AL_BUDGET_FILE had no node. That file is no longer
 * written: what it holds precedes every call recorded with its node.
 */
void al_budget_costs_read_old(struct al_budget_costs *c, const char *run_dir);
#define AL_BUDGET_OLD_COST_FILE AL_RUN_AGENTS_DIR "/agent-costs"
/*
 * The costs of the run's calls as this process has read them, brought up
 * to date with the lines appended since it last read (budget.c): a check
 * costs the same at a run's millionth call as at its first. A line that
 * is no call's record is named once on the run's progress.
 */
int al_budget_costs_read(struct al_exec *ex, const struct al_budget_costs **out);

/*
 * Cost budgets (budget_cost.c): limits.max_cost_usd and max_tokens for the
 * run, termination.max_cost_usd and max_tokens for a node's subtree. They
 * sum the calls' lines of AL_BUDGET_FILE (al_budget_call_end), so that a
 * resume and a parallel node's children count every call. Estimated costs
 * count; unknown ones are named, and block the run with
 * limits.unknown_cost: block.
 */

/*
 * A spent budget (`limit` names it in the "budget_exhausted" event; `how`
 * says how to go on): AL_EBLOCKED, with the message of `fmt` and the way
 * to continue the run.
 */
int al_budget_blocked(struct al_exec *ex, const char *limit, const char *how, const char *what,
		      const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/*
 * Before an agent call of `node` starts: AL_EBLOCKED (naming the limit and
 * how to go on) if the run's or an enclosing node's budget is spent.
 */
int al_budget_cost_check(struct al_exec *ex, const struct al_node *node, const char *what);

/*
 * Waits until al_budget_now() reaches `until`, a countdown on a terminal
 * (`what` says what for). AL_EINTR at an interrupt; AL_ETIMEOUT once the
 * node's deadline `deadline_ms` (al_now_ms(); 0: none) comes first. It
 * stops early, returning 0, once the run's time budget is spent, which
 * the caller then finds. A clock that moves back does not make the wait
 * longer: `until` moves back with it, and `*back` (if not NULL) adds how
 * far it went.
 */
int al_budget_wait(struct al_exec *ex, int64_t until, const char *what, int64_t deadline_ms,
		   int64_t *back);

/* `s` seconds as "M:SS" or "H:MM:SS", in `buf`. */
void al_budget_span(char *buf, size_t size, int64_t s);

/*
 * The time (seconds since the epoch) `line` (`len` bytes) gives: false
 * unless it is digits alone, of a time up to the year 9999. Agents can
 * write the run's files: what they write must not make a wait overflow.
 */
bool al_budget_parse_time(const char *line, size_t len, int64_t *out);

/* What a run has used, for `ailoop status`. */
struct al_budget_use {
	long calls;           /* agent calls made */
	long calls_last_hour; /* of which started in the last hour */
	int64_t wait_until;   /* 0, or when the hourly limit lets the next call start */
};
int al_budget_read(const char *run_dir, int per_hour, struct al_budget_use *use);

/*
 * Seconds since the epoch. Test builds (AILOOP_TEST_HOOKS) honour
 * AILOOP_TEST_CLOCK=FILE: the time is the number in that file, which the
 * test moves on, and waits poll it.
 */
int64_t al_budget_now(void);

#endif
