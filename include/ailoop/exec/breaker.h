#ifndef AILOOP_BREAKER_H
#define AILOOP_BREAKER_H

#include "ailoop/base/strbuf.h"
#include "ailoop/store/state.h"

#include <stdbool.h>
#include <stddef.h>

/*
 * The circuit breaker of a loop node (either form). After each iteration's
 * commit it looks at what the iteration did:
 *
 *   progress    a sensor turned pass, a sensor metric changed its value, or
 *               a file of the work tree changed (the code id of HEAD, the
 *               tree without .ai-loop/runs/, differs from the last
 *               iteration's); for a loop without sensors (ReAcTree form)
 *               also a child that ended otherwise than in the iteration
 *               before;
 *   same error  the failing sensors' outputs, normalised (see
 *               al_breaker_normalise), hash the same as the iteration
 *               before's.
 *
 * `no_progress_limit` iterations in a row without progress, or
 * `same_error_limit` in a row with the same error, open it: the node and
 * the run become `blocked` (AL_EBLOCKED, exit 4) and stop where they are,
 * resumable. One iteration before either limit it is half-open (logged).
 * A limit of 0 turns that check off. Its state is the node's (in its
 * orchestrator-output.md), so it survives a kill; reopening a blocked node
 * (which only `ailoop resume` does) resets it.
 */
/* (the limits' defaults: model/flow.h; the breaker's state: store/state.h) */

/* How one iteration moved the breaker. */
enum al_breaker_change {
	AL_BREAKER_SAME,      /* no change of state */
	AL_BREAKER_TO_CLOSED, /* progress after it was half-open */
	AL_BREAKER_TO_HALF_OPEN,
	AL_BREAKER_TO_OPEN,
};

/*
 * Counts one iteration: `progress` as defined above, `error` the hash of
 * its failing output (NULL if nothing failed), which becomes the one the
 * next iteration is compared with. A limit of 0 is off.
 */
enum al_breaker_change al_breaker_count(struct al_breaker *b, int no_progress_limit,
					int same_error_limit, bool progress, const char *error);

/* Back to closed with nothing counted; what was last seen stays the baseline. */
void al_breaker_reset(struct al_breaker *b);

/*
 * Whether measurement `now` improved on `before` (both as in
 * al_breaker.sensors): a sensor turned pass, or a metric that both have
 * changed its value. NULL `before` (nothing measured yet) is progress.
 */
bool al_breaker_sensors_progress(const char *before, const char *now);

/*
 * Failing output as the same-error check compares it: what varies from
 * one run of the same failure to the next is replaced by '#' (clock
 * times, dates, durations with their unit such as "0.52s" or "12 ms",
 * hex numbers and hash-like words of 8 or more hex digits), and trailing
 * blanks of lines dropped. Counts stay ("3 failed" and "2 failed" differ:
 * that is progress, not the same error).
 */
void al_breaker_normalise(struct al_strbuf *out, const char *text, size_t len);

struct al_node_run;

/*
 * After the commit of iteration `nr->st.label` of a loop node: looks at
 * what the iteration did and counts it (with `count` false, only records
 * the baseline: the first measurement, or the tree at the loop's start).
 * Logs changes of state (events and progress). Returns 0, or AL_EBLOCKED
 * with the message when the breaker opened; the caller records the node
 * as blocked.
 */
int al_breaker_iteration(struct al_node_run *nr, bool count);

/*
 * A loop node continued from disk: if it is blocked, `ailoop resume` was
 * asked to go on, so the breaker is reset (said on the progress and in the
 * event log) and the node runs again. Returns 0 or an error of the save.
 */
int al_breaker_resume(struct al_node_run *nr);

#endif
