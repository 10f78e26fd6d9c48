#ifndef AILOOP_HOOKS_H
#define AILOOP_HOOKS_H

#include "ailoop/exec/exec.h"

#include <jansson.h>

/*
 * The flow's `hooks:` (model/flow.h), run when something happens in a run:
 * on_iteration after each commit this process makes, on_node_end once a
 * node has its final status (after its last commit, if it makes one),
 * on_blocked when a circuit breaker or a spent budget blocks the run,
 * on_run_end when the run stops (ended, blocked or paused).
 *
 * A hook runs through the proc layer like an agent, in the repository's
 * root and a process group of its own, with the event as JSON on its
 * standard input and the run's variables in its environment; it is no
 * agent call (no budget counts it). Past hooks.timeout_seconds its group
 * is stopped (SIGTERM, SIGKILL a second later), so no hook holds the run
 * up longer than that. What it prints goes to the run's logs/hooks.log. A
 * hook that fails (exits non-zero, times out, cannot be found) is a
 * warning and a `hook_failed` event, never the run's failure. A hook that
 * came due while the run was interrupted (Ctrl-C) does not start.
 */

/*
 * Runs the hook for `event`, if the flow has one, told the event's fields
 * (a jansson pack format for an object, "{s:s, s:i}", and its arguments,
 * as al_run_event takes them; packed only when there is a hook) with the
 * run's own.
 */
void al_hook_run(struct al_exec *ex, enum al_hook_event event, const char *fmt, ...);

#endif
