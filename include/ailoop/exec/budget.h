#ifndef AILOOP_BUDGET_H
#define AILOOP_BUDGET_H

#include "ailoop/exec/exec.h"
#include "ailoop/proc/proc.h"

#include <pcre2.h>
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
 * start time, then "USD KIND IN OUT", its cost in dollars, how that is
 * known (reported, estimated or unknown) and its tokens in (cache
 * included) and out; that line is no call, and one whose cost does not
 * read so is named as the others are. The file is never committed (logs/),
 * so restoring the run's files from git does not give calls back.
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
 * rate_limit_max_wait_seconds away. Its failure is not the node's. Each
 * attempt is an agent call.
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
 * After the call that started at `started` ended: its cost `usd`, `kind`
 * ("reported", "estimated" or "unknown") and tokens `in` and `out`, as a
 * line of its own. A line lost (a full disk) is a cost not shown there.
 */
void al_budget_call_end(struct al_run *run, int64_t started, double usd, const char *kind,
			long long in, long long out);

/*
 * Cost budgets (budget_cost.c): limits.max_cost_usd and max_tokens for the
 * run, termination.max_cost_usd and max_tokens for a node's subtree. Each
 * agent call's cost is a line of AL_COST_FILE (its node, dollars, tokens,
 * and whether the cost was reported, estimated or unknown), so that a
 * resume and a parallel node's children count every call. Estimated costs
 * count; unknown ones are named, and block the run with
 * limits.unknown_cost: block.
 */
#define AL_COST_FILE AL_RUN_AGENTS_DIR "/agent-costs"

/*
 * A spent budget (`limit` names it in the "budget_exhausted" event; `how`
 * says how to go on): AL_EBLOCKED, with the message of `fmt` and the way
 * to continue the run.
 */
int al_budget_blocked(struct al_exec *ex, const char *limit, const char *how, const char *what,
		      const char *fmt, ...) __attribute__((format(printf, 5, 6)));

void al_budget_cost_record(struct al_run *run, const char *node_path, double usd,
			   long long tokens, const char *kind);
/*
 * Before an agent call of `node` starts: AL_EBLOCKED (naming the limit and
 * how to go on) if the run's or an enclosing node's budget is spent.
 */
int al_budget_cost_check(struct al_exec *ex, const struct al_node *node, const char *what);

/*
 * Whether an agent's failure `r` is a rate limit: its output (stdout and
 * stderr) matches the flow's pattern, or, printed in claude's `stream`,
 * says the request was rejected for it (rate_limit_event). *reset_at (if
 * not NULL) is then when the limit resets, as the stream or the message
 * says (proc/ratelimit.h), or 0 if neither says.
 */
bool al_rate_limited(const struct al_flow *flow, enum al_stream stream,
		     const struct al_proc_result *r, int64_t *reset_at);

/* How long after a provider's reset a call tries again: its clock may be ahead of ours. */
#define AL_RATE_LIMIT_RESET_MARGIN 30

/*
 * Waits before the `attempt`-th (0-based) retry of a rate-limited agent:
 * until `reset_at` and the margin (a reset past: the margin alone), at
 * most limits.rate_limit_max_wait_seconds; with no reset known
 * (`reset_at` 0), the back-off, doubling. A wait for a reset is recorded
 * in the file `record` (if not NULL) until it has been waited, for
 * al_rate_limit_resume. No longer than the run's time budget lasts;
 * AL_EINTR if interrupted, AL_ETIMEOUT if the node's deadline
 * `deadline_ms` came first.
 */
int al_rate_limit_wait(struct al_exec *ex, const char *what, int attempt, int64_t reset_at,
		       const char *record, int64_t deadline_ms);
/*
 * Before a call starts: waits what remains of a wait for a reset that
 * `record` holds (a run killed or interrupted while it waited), at most
 * limits.rate_limit_max_wait_seconds from now; 0 at once if there is none,
 * or it is past. As al_rate_limit_wait returns.
 */
int al_rate_limit_resume(struct al_exec *ex, const char *what, const char *record,
			 int64_t deadline_ms);

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
