#ifndef AILOOP_RATE_WAIT_H
#define AILOOP_RATE_WAIT_H

#include "ailoop/exec/exec.h"
#include "ailoop/proc/proc.h"

#include <stdbool.h>
#include <stdint.h>

/*
 * Agents refused by their provider's rate limit: telling such a failure
 * from others, and waiting before the call is made again (until the
 * provider's reset where it says when, across a kill and resume too).
 */

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

#endif
