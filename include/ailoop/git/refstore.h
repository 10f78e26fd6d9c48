#ifndef AILOOP_GIT_REFSTORE_H
#define AILOOP_GIT_REFSTORE_H

#include "ailoop/git/git.h"

#include <stddef.h>

/*
 * Files kept in the repository under a ref of their own (ailoop's
 * episodes, refs/ailoop/episodes), beside the branches, so that no branch
 * carries them and deleting one loses none: a chain of commits, each
 * one's tree the files as they are then. The ref moves compare-and-swap,
 * so that two processes writing at once never lose one another's commit.
 * Read them with al_git_read() and al_git_ls() on the tip's id.
 */

/* One file of a new commit's tree: written with `data`, or removed (NULL). */
struct al_git_edit {
	const char *path; /* "runs/run_x/abc.json" */
	const char *data;
	size_t len;
};

/*
 * The commit `ref` names, in `hex`. AL_ENOTFOUND if there is no such ref,
 * AL_EINVALID (the message says why) if it names no commit.
 */
int al_git_ref_tip(struct al_git *g, const char *ref, char hex[AL_OID_HEX]);

/*
 * Makes a commit of the tree of commit `parent` (hex; NULL or "": none,
 * the first commit, on an empty tree) with `edits` applied, and moves
 * `ref` to it from `parent`: AL_EMOVED, the ref left as it is, if the
 * ref no longer names `parent` (or, with none, exists), for the caller to
 * read it again and retry. The objects are written before the ref names
 * them; the new commit's id in `hex`.
 */
int al_git_ref_append(struct al_git *g, const char *ref, const char *parent,
		      const struct al_git_edit *edits, size_t n, const char *message,
		      char hex[AL_OID_HEX]);

#endif
