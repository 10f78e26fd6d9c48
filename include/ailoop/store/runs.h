#ifndef AILOOP_RUNS_H
#define AILOOP_RUNS_H

#include "ailoop/git/git.h"
#include "ailoop/store/state.h"

#include <stddef.h>

/*
 * Every run of the repository, for `ailoop runs` and `ailoop clean`: a run
 * whose branch exists is read from that branch's last commit (checked out
 * or not), through libgit2; any other run whose state is in the work tree
 * (--no-branch, or its branch gone) from there.
 */
struct al_run_entry {
	struct al_run_state st;
	char *from;     /* the branch it was read from, or NULL: the work tree */
	int iterations; /* the root node's, or -1 if its state cannot be read */
};

struct al_run_list {
	struct al_run_entry *v; /* oldest first */
	size_t n, alloc;
};

/* Fills `out` (zeroed first); release it with al_run_list_release() in every case. */
int al_runs_all(struct al_git *git, struct al_run_list *out);
void al_run_list_release(struct al_run_list *l);

#endif
