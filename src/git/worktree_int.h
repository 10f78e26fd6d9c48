#ifndef AILOOP_WORKTREE_INT_H
#define AILOOP_WORKTREE_INT_H

/*
 * What worktree.c shares with the parts of the worktree module split out
 * of it; not part of the module's contract (ailoop/worktree.h).
 */
#include "ailoop/base/strbuf.h"

#include <git2.h>
#include <stdbool.h>
#include <stddef.h>

/*
 * A file a merge's checkout left half written (worktree_torn.c). A
 * checkout of a merge onto HEAD that did not finish, as recorded:
 */
struct al_torn {
	git_tree *tree; /* the merge's tree; NULL: none was cut short */
	struct al_strbuf text; /* the record; its paths from `at`, each ending with '\0' */
	size_t at;
};

/*
 * Records, durably, that a checkout of the merge `tree` onto commit
 * `head` is about to write `paths`: call before the checkout writes.
 */
int al_torn_record(git_repository *repo, const git_oid *head, const git_oid *tree,
		   const git_strarray *paths);

/* Reads the record, if it is of a merge onto `head` (else t->tree is NULL). Release it. */
void al_torn_load(struct al_torn *t, git_repository *repo, const git_oid *head);
void al_torn_release(struct al_torn *t);

/*
 * Whether `path` of the main work tree (the current directory) is one the
 * recorded checkout was writing, and holds the start of (or all) what it
 * writes there: ailoop's own half-written file.
 */
bool al_torn_here(const struct al_torn *t, git_repository *repo, const char *path);

/* The merge is made: the record goes (a kill may leave it; HEAD's move makes it void). */
void al_torn_forget(git_repository *repo);

/*
 * Before worktree `wt` goes: each repository an agent made there that
 * HEAD records a gitlink to (its child is merged) moves into the main
 * work tree (the current directory), into the empty directory the merge's
 * checkout made for it (worktree_nested.c). *kept: one could not, and the
 * worktree must stay (said on stderr).
 */
void al_worktree_move_repos(git_repository *repo, git_worktree *wt, bool *kept);

/* (worktree.c) al_err() with libgit2's message of the last failure; returns AL_ERROR. */
int al_wt_fail(const char *what);
/* (worktree.c) The repository of the current directory, libgit2 initialised; al_wt_close() ends both. */
int al_wt_open(git_repository **repo);
void al_wt_close(git_repository *repo);

/*
 * (worktree_merge.c) Whether a directory on the way to `path` below `root`
 * is something else (a symbolic link, a file); its path to `way` if given.
 */
bool al_wt_way_blocked(const char *root, const char *path, struct al_strbuf *way);

#endif
