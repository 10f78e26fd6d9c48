#ifndef AILOOP_PARALLEL_INT_H
#define AILOOP_PARALLEL_INT_H

/* What parallel.c (the children run) and parallel_merge.c (their worktrees merged) share. */
#include "ailoop/exec/exec.h"

#include <stdbool.h>
#include <stddef.h>

/* (parallel.c) A worktree child's branch, and git's name for its worktree. Caller frees. */
char *al_parallel_wt_branch(const struct al_exec *ex, const struct al_node *c);
char *al_parallel_wt_name(const struct al_exec *ex, const struct al_node *c);
/* (parallel.c) */
/*
 * The child's key among the run's worktrees and branches: its id, or, if
 * a child of another parallel node with worktrees has the same id (two
 * such nodes may run at once), its path with '+' for '/'. Ids have
 * neither '+' nor '.', so no key is another's, nor a resolver's
 * `<key>.resolve`.
 */
char *al_parallel_wt_key(const struct al_node *c);
/* (parallel_merge.c) */
/*
 * Merges the children that succeeded into the branch checked out here, in
 * child order, a merge commit each; removes the worktree of each merged.
 * A conflict: on_conflict fail stops there (the node fails with `conflict`
 * in *msg), skip leaves that child unmerged. Done again after a kill,
 * it finds the merges made and makes the rest.
 */
int al_parallel_merge(struct al_node_run *nr, bool *conflict, char *msg, size_t size);

#endif
