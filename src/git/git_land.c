#include "git_repo.h"
#include "ailoop/base/fsutil.h"
#include "ailoop/base/util.h"

#include <git2.h>
#include <stdlib.h>
#include <string.h>

/* A finished run's change put on its base branch (`ailoop land`). */

/* What the land works on: the two tips, where they met, and their trees. */
struct land {
	git_reference *onto_ref;
	git_commit *onto, *from;
	git_tree *onto_tree, *from_tree, *base_tree, *theirs;
	git_index *merged;
	git_oid base;
};

static void land_release(struct land *l)
{
	git_index_free(l->merged);
	git_tree_free(l->theirs);
	git_tree_free(l->base_tree);
	git_tree_free(l->from_tree);
	git_tree_free(l->onto_tree);
	git_commit_free(l->from);
	git_commit_free(l->onto);
	git_reference_free(l->onto_ref);
}

/*
 * The tree of `from` with directory `keep` as the merge base has it (or
 * without it, where the base lacks it): the run's net change but its own
 * files, which stay off the branch it lands on.
 */
static int without_dir(struct al_git *g, struct land *l, const char *keep)
{
	git_tree_entry *in_base = NULL, *in_from = NULL;
	git_tree_update up = { 0 };
	git_oid id;
	int rc = 0;

	git_tree_entry_bypath(&in_from, l->from_tree, keep);
	git_tree_entry_bypath(&in_base, l->base_tree, keep);
	git_error_clear();
	up.path = keep;
	if (in_base) {
		up.action = GIT_TREE_UPDATE_UPSERT;
		git_oid_cpy(&up.id, git_tree_entry_id(in_base));
		up.filemode = git_tree_entry_filemode(in_base);
	} else {
		up.action = GIT_TREE_UPDATE_REMOVE;
	}
	if ((in_base || in_from) &&
	    git_tree_create_updated(&id, g->repo, l->from_tree, 1, &up) < 0)
		rc = al_git_fail("cannot leave the run's files out of its change");
	else if (git_tree_lookup(&l->theirs, g->repo,
				 in_base || in_from ? &id : git_tree_id(l->from_tree)) < 0)
		rc = al_git_fail("cannot read the run's tree");
	git_tree_entry_free(in_base);
	git_tree_entry_free(in_from);
	return rc;
}

/* Both tips, where they met, and their trees. */
static int land_read(struct al_git *g, struct land *l, const char *onto, const char *from)
{
	git_reference *from_ref = NULL;
	git_commit *base = NULL;
	int rc = 0;

	if (git_branch_lookup(&l->onto_ref, g->repo, onto, GIT_BRANCH_LOCAL) < 0) {
		git_error_clear();
		return al_err(AL_ENOTFOUND, "the base branch '%s' does not exist", onto);
	}
	if (git_branch_lookup(&from_ref, g->repo, from, GIT_BRANCH_LOCAL) < 0) {
		git_error_clear();
		return al_err(AL_ENOTFOUND, "the run's branch '%s' does not exist", from);
	}
	if (git_commit_lookup(&l->onto, g->repo, git_reference_target(l->onto_ref)) < 0 ||
	    git_commit_lookup(&l->from, g->repo, git_reference_target(from_ref)) < 0 ||
	    git_merge_base(&l->base, g->repo, git_commit_id(l->onto), git_commit_id(l->from)) < 0 ||
	    git_commit_lookup(&base, g->repo, &l->base) < 0 ||
	    git_commit_tree(&l->onto_tree, l->onto) < 0 ||
	    git_commit_tree(&l->from_tree, l->from) < 0 || git_commit_tree(&l->base_tree, base) < 0)
		rc = al_git_fail("cannot read the branches to land");
	git_commit_free(base);
	git_reference_free(from_ref);
	return rc;
}

/* The first path the merge left in conflict, into *conflict. */
static int first_conflict(git_index *index, char **conflict)
{
	git_index_conflict_iterator *it = NULL;
	const git_index_entry *a, *o, *t;

	if (git_index_conflict_iterator_new(&it, index) == 0 &&
	    git_index_conflict_next(&a, &o, &t, it) == 0)
		*conflict = al_strdup(o ? o->path : t ? t->path : a->path);
	git_index_conflict_iterator_free(it);
	git_error_clear();
	return AL_ECONFLICT;
}

/* The work tree and index, clean at `old`, made `tree`'s, as git's checkout does. */
static int check_out(struct al_git *g, git_tree *old, git_tree *tree)
{
	git_checkout_options opts;

	git_checkout_options_init(&opts, GIT_CHECKOUT_OPTIONS_VERSION);
	opts.checkout_strategy = GIT_CHECKOUT_SAFE;
	opts.baseline = old;
	if (git_checkout_tree(g->repo, (const git_object *)tree, &opts) < 0)
		return al_git_fail("cannot update the work tree");
	return 0;
}

int al_git_land(struct al_git *g, const struct al_git_land_opts *o, char oid[AL_OID_HEX],
		char **conflict)
{
	struct land l = { 0 };
	git_signature *author = NULL, *committer = NULL;
	const git_commit *parents[2];
	git_tree *tree = NULL;
	git_reference *moved = NULL;
	git_oid tree_id, id;
	char *elsewhere = NULL, *log = NULL;
	bool here;
	int rc;

	*conflict = NULL;
	if ((rc = land_read(g, &l, o->onto, o->from)) < 0)
		goto done;
	here = git_branch_is_head(l.onto_ref) == 1;
	if (!here && !o->dry_run && (elsewhere = al_git_checked_out_elsewhere(g->repo,
							       git_reference_name(l.onto_ref)))) {
		rc = al_err(AL_EUSAGE, "the base branch '%s' is checked out in the worktree '%s': "
			    "land from there ('cd %s && ailoop land %s')", o->onto, elsewhere,
			    elsewhere, o->run_id);
		goto done;
	}
	if ((rc = without_dir(g, &l, o->keep_out)) < 0)
		goto done;
	if (git_merge_trees(&l.merged, g->repo, l.base_tree, l.onto_tree, l.theirs, NULL) < 0) {
		rc = al_git_fail("cannot merge the run's change");
		goto done;
	}
	if (git_index_has_conflicts(l.merged)) {
		rc = first_conflict(l.merged, conflict);
		goto done;
	}
	if (git_index_write_tree_to(&tree_id, l.merged, g->repo) < 0 ||
	    git_tree_lookup(&tree, g->repo, &tree_id) < 0) {
		rc = al_git_fail("cannot write the landed tree");
		goto done;
	}
	if (git_oid_equal(&tree_id, git_tree_id(l.onto_tree))) {
		rc = 1; /* the base branch has it all already */
		goto done;
	}
	if (o->dry_run)
		goto done;
	parents[0] = l.onto;
	parents[1] = l.from;
	if (al_git_signature(&author, g->repo, "AUTHOR") < 0 ||
	    al_git_signature(&committer, g->repo, "COMMITTER") < 0 ||
	    al_git_create_commit(&id, g->repo, author, committer, o->message, tree,
				 o->merge ? 2 : 1, parents) < 0) {
		rc = al_git_fail("cannot commit the run's change");
		goto done;
	}
	/* the objects on disk before the branch names them */
	al_durable_written();
	if ((rc = al_durable_point()) < 0 || (here && (rc = check_out(g, l.onto_tree, tree)) < 0))
		goto done;
	log = al_xprintf("ailoop land: run %s%s", o->run_id, o->merge ? " (merge)" : "");
	/* fails if anything moved it since it was read */
	if (git_reference_create_matching(&moved, g->repo, git_reference_name(l.onto_ref), &id, 1,
					  git_commit_id(l.onto), log) < 0) {
		rc = al_git_fail("cannot move the base branch");
		goto done;
	}
	al_durable_written();
	if ((rc = al_durable_point()) < 0)
		goto done;
	git_oid_tostr(oid, AL_OID_HEX, &id);
done:
	free(elsewhere);
	free(log);
	git_reference_free(moved);
	git_tree_free(tree);
	git_signature_free(author);
	git_signature_free(committer);
	land_release(&l);
	return rc;
}

int al_git_branch_delete(struct al_git *g, const char *name)
{
	git_reference *ref = NULL;
	int rc = 0;

	if (git_branch_lookup(&ref, g->repo, name, GIT_BRANCH_LOCAL) < 0) {
		git_error_clear();
		return 0; /* gone already */
	}
	if (git_branch_delete(ref) < 0) {
		char *what = al_xprintf("cannot delete the branch '%s'", name);

		rc = al_git_fail(what);
		free(what);
	}
	git_reference_free(ref);
	return rc;
}
