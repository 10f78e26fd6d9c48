#ifndef AILOOP_RUN_VIEW_H
#define AILOOP_RUN_VIEW_H

#include "ailoop/git.h"
#include "ailoop/state.h"

#include <stddef.h>

/*
 * (src/cli/) A run as `status` and `report` read it: its run-state.md and every node's
 * orchestrator-output.md, from the work tree, or from the last commit of
 * its branch when that branch is not checked out.
 */
struct al_run_nodes {
	struct al_node_state *v; /* parents before children */
	size_t n, alloc;
	char **errors;           /* damaged state files */
	size_t nerrors, errors_alloc;
};

struct al_run_view {
	struct al_run_state st;
	struct al_run_nodes nodes;
	char *dir;    /* .ai-loop/runs/<id> */
	char *from;   /* the branch it was read from when not checked out, else NULL */
	char *holder; /* who holds the run's lock, or NULL */
};

/*
 * Reads run `id`, or the newest run (here or on a branch) if `id` is NULL.
 * `git` may be NULL (then only the work tree is looked at). AL_ENOTFOUND
 * (al_errmsg() says so) when there is no such run or no run at all.
 * Release with al_run_view_release() in every case.
 */
int al_run_view_load(struct al_run_view *out, struct al_git *git, const char *id);
void al_run_view_release(struct al_run_view *v);

#endif
