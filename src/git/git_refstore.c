#include "git_repo.h"
#include "ailoop/git/refstore.h"
#include "ailoop/base/util.h"

#include <git2.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Files under a ref of their own: a chain of commits moved compare-and-swap. */

int al_git_ref_tip(struct al_git *g, const char *ref, char hex[AL_OID_HEX])
{
	git_reference *r = NULL, *resolved = NULL;
	git_commit *c = NULL;
	int rc = 0, err;

	err = git_reference_lookup(&r, g->repo, ref);
	if (err == GIT_ENOTFOUND) {
		git_error_clear();
		return al_err(AL_ENOTFOUND, "no ref '%s'", ref);
	}
	if (err < 0)
		return al_err(AL_EINVALID, "'%s' cannot be read: %s", ref,
			      git_error_last() ? git_error_last()->message : "unknown error");
	if (git_reference_resolve(&resolved, r) < 0 ||
	    git_commit_lookup(&c, g->repo, git_reference_target(resolved)) < 0) {
		rc = al_err(AL_EINVALID, "'%s' names no commit", ref);
		git_error_clear();
		goto done;
	}
	git_oid_tostr(hex, AL_OID_HEX, git_commit_id(c));
done:
	git_commit_free(c);
	git_reference_free(resolved);
	git_reference_free(r);
	return rc;
}

/* The updates of git_tree_create_updated() for `edits`, their blobs written. */
static int updates_of(git_repository *repo, const struct al_git_edit *edits, size_t n,
		      git_tree_update *ups)
{
	for (size_t i = 0; i < n; i++) {
		memset(&ups[i], 0, sizeof(ups[i]));
		ups[i].path = edits[i].path;
		if (!edits[i].data) {
			ups[i].action = GIT_TREE_UPDATE_REMOVE;
			continue;
		}
		ups[i].action = GIT_TREE_UPDATE_UPSERT;
		ups[i].filemode = GIT_FILEMODE_BLOB;
		if (git_blob_create_from_buffer(&ups[i].id, repo, edits[i].data, edits[i].len) < 0)
			return al_git_fail("cannot write a blob");
	}
	return 0;
}

int al_git_ref_append(struct al_git *g, const char *ref, const char *parent,
		      const struct al_git_edit *edits, size_t n, const char *message,
		      char hex[AL_OID_HEX])
{
	git_tree_update *ups = al_calloc(n ? n : 1, sizeof(*ups));
	git_commit *base = NULL;
	git_tree *base_tree = NULL, *tree = NULL;
	git_signature *author = NULL, *committer = NULL;
	git_reference *moved = NULL;
	git_oid parent_oid, tree_oid, id;
	bool has_parent = parent && *parent;
	int rc, err;

	if (has_parent && (git_oid_fromstr(&parent_oid, parent) < 0 ||
			   git_commit_lookup(&base, g->repo, &parent_oid) < 0 ||
			   git_commit_tree(&base_tree, base) < 0)) {
		rc = al_git_fail("cannot read the commit to build on");
		goto done;
	}
	if ((rc = updates_of(g->repo, edits, n, ups)) < 0 || (rc = al_git_identity(g)) < 0)
		goto done;
	if (!base_tree) { /* the first commit: an empty tree to update */
		git_treebuilder *bld = NULL;

		err = git_treebuilder_new(&bld, g->repo, NULL);
		if (err == 0)
			err = git_treebuilder_write(&tree_oid, bld);
		git_treebuilder_free(bld);
		if (err < 0 || git_tree_lookup(&base_tree, g->repo, &tree_oid) < 0) {
			rc = al_git_fail("cannot write a tree");
			goto done;
		}
	}
	if (git_tree_create_updated(&tree_oid, g->repo, base_tree, n, ups) < 0 ||
	    git_tree_lookup(&tree, g->repo, &tree_oid) < 0) {
		rc = al_git_fail("cannot write a tree");
		goto done;
	}
	if (git_signature_new(&author, g->author->name, g->author->email, time(NULL), 0) < 0 ||
	    git_signature_new(&committer, g->committer->name, g->committer->email, time(NULL),
			      0) < 0 ||
	    al_git_create_commit(&id, g->repo, author, committer, message, tree, base ? 1 : 0,
				 (const git_commit **)&base) < 0) {
		rc = al_git_fail("cannot commit");
		goto done;
	}
	/*
	 * Checked under the ref's lock: a zero id for "none" (libgit2 checks
	 * a new ref's absence only before it takes the lock, so two creating
	 * it at once would both succeed, the second overwriting the first)
	 */
	if (!has_parent)
		memset(&parent_oid, 0, sizeof(parent_oid));
	err = git_reference_create_matching(&moved, g->repo, ref, &id, 1, &parent_oid, message);
	if (err == GIT_EMODIFIED || err == GIT_EEXISTS || err == GIT_ELOCKED) {
		git_error_clear();
		rc = al_err(AL_EMOVED, "'%s' moved meanwhile", ref);
		goto done;
	}
	if (err < 0) {
		rc = al_git_fail("cannot move the ref");
		goto done;
	}
	git_oid_tostr(hex, AL_OID_HEX, &id);
done:
	git_reference_free(moved);
	git_signature_free(author);
	git_signature_free(committer);
	git_tree_free(tree);
	git_tree_free(base_tree);
	git_commit_free(base);
	free(ups);
	return rc;
}
