#include "ailoop/git/worktree.h"
#include "worktree_int.h"
#include "ailoop/base/fsutil.h"
#include "ailoop/git/git.h"
#include "ailoop/proc/proc.h"
#include "ailoop/base/paths.h"
#include "ailoop/base/strbuf.h"
#include "ailoop/base/util.h"

#include <git2.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <dirent.h>

/*
 * A parallel child's worktree and its merge back (isolation: worktree).
 * Everything here is idempotent, so that a kill at any instant and a
 * resume end as an uninterrupted run: a worktree that exists is kept, a
 * half-made one made again, and a branch already in HEAD's history is
 * not merged twice.
 */
int al_wt_fail(const char *what)
{
	const git_error *e = git_error_last();

	return al_err(AL_ERROR, "%s: %s", what, e && e->message ? e->message : "unknown error");
}

int al_wt_open(git_repository **repo)
{
	git_libgit2_init(); /* counted: balanced by git_libgit2_shutdown() */
	al_git_filters_register(); /* a shutdown to no user drops it */
	if (git_repository_open_ext(repo, ".", 0, NULL) < 0) {
		git_libgit2_shutdown();
		return al_wt_fail("cannot open the repository");
	}
	return 0;
}

void al_wt_close(git_repository *repo)
{
	git_repository_free(repo);
	git_libgit2_shutdown();
}
/* The worktrees directory holds a .gitignore of "*": git never sees it, nor what is in it. */
static int ignore_parent(const char *path)
{
	char *dir = al_strdup(path), *slash = strrchr(dir, '/'), *ignore;
	int rc = 0;

	if (slash)
		*slash = '\0';
	ignore = al_xprintf("%s/.gitignore", dir);
	if (al_mkdirs(dir) < 0)
		rc = al_err(AL_ERROR, "cannot create '%s': %s", dir, strerror(errno));
	else if (access(ignore, F_OK) < 0)
		rc = al_write_atomic(ignore, "*\n", 2);
	free(ignore);
	free(dir);
	return rc;
}

/* Forgets worktree `name` (a kill left it half-made, or it is done with). */
static int prune(git_repository *repo, const char *name, bool directory)
{
	git_worktree *wt = NULL;
	git_worktree_prune_options opts = GIT_WORKTREE_PRUNE_OPTIONS_INIT;
	int rc = 0;

	if (git_worktree_lookup(&wt, repo, name) < 0)
		return 0; /* git has no record of it */
	opts.flags = GIT_WORKTREE_PRUNE_VALID | GIT_WORKTREE_PRUNE_LOCKED |
		     (directory ? GIT_WORKTREE_PRUNE_WORKING_TREE : 0);
	if (git_worktree_prune(wt, &opts) < 0)
		rc = al_wt_fail("cannot remove a worktree");
	git_worktree_free(wt);
	return rc;
}

/* Removes lock file `path` if a kill left it (no process has it open). */
static void clear_lock(char *path)
{
	al_proc_remove_unheld(path);
	free(path);
}

/* Whether commit `tip` is `base` or has it in its history. */
static bool holds(git_repository *repo, const git_oid *tip, const git_oid *base)
{
	return tip && (git_oid_equal(tip, base) || git_graph_descendant_of(repo, tip, base) == 1);
}

/*
 * The child's branch from an earlier run of its node (in a loop, or a
 * later parallel node with a child of the same id): its worktree goes,
 * and so does the branch if the new start commit `base` holds it
 * (merged); unmerged (the child failed), it stays for inspection as
 * `<branch>.<short id>` (ids have no '.'). The child then starts afresh
 * from `base`.
 */
static int set_aside(git_repository *repo, git_reference *ref, const git_oid *base,
		     const char *name, const char *path)
{
	const git_oid *tip = git_reference_target(ref);
	git_reference *moved = NULL;
	char hex[8], *aside;
	int rc;

	if ((rc = prune(repo, name, false)) < 0 || (rc = al_remove_tree(path)) < 0)
		return rc;
	/* (not git_branch_delete() nor git_branch_move(): they leak in libgit2 1.5) */
	if (holds(repo, base, tip))
		return git_reference_delete(ref) < 0 ? al_wt_fail("cannot delete a merged child's branch")
						     : 0;
	git_oid_tostr(hex, sizeof(hex), tip);
	aside = al_xprintf("%s.%s", git_reference_name(ref), hex);
	if (git_reference_rename(&moved, ref, aside, 1, "ailoop: set aside, its node runs again") <
	    0)
		rc = al_wt_fail("cannot set a child's old branch aside");
	git_reference_free(moved);
	free(aside);
	return rc;
}

int al_worktree_ensure(const char *path, const char *name, const char *branch,
		       const char *base_hex)
{
	git_repository *repo = NULL, *sub = NULL;
	git_reference *ref = NULL;
	git_commit *base = NULL;
	git_worktree *wt = NULL;
	git_worktree_add_options opts;
	git_oid oid;
	char *dotgit = al_xprintf("%s/.git", path), *admin = NULL, *ready = NULL;
	int rc;

	git_worktree_add_options_init(&opts, GIT_WORKTREE_ADD_OPTIONS_VERSION);
	if ((rc = al_wt_open(&repo)) < 0)
		goto done;
	admin = al_xprintf("%sworktrees/%s", git_repository_commondir(repo), name);
	ready = al_xprintf("%s/ailoop-ready", admin);
	/* what a kill left locked: the branch, the worktree's index and HEAD */
	clear_lock(al_xprintf("%srefs/heads/%s.lock", git_repository_commondir(repo), branch));
	clear_lock(al_xprintf("%s/index.lock", admin));
	clear_lock(al_xprintf("%s/HEAD.lock", admin));
	if (git_oid_fromstr(&oid, base_hex) < 0) {
		rc = al_err(AL_ERROR, "bad start commit '%s' for worktree '%s'", base_hex, name);
		goto done;
	}
	if (git_branch_lookup(&ref, repo, branch, GIT_BRANCH_LOCAL) == 0 &&
	    !holds(repo, git_reference_target(ref), &oid)) {
		rc = set_aside(repo, ref, &oid, name, path);
		git_reference_free(ref);
		ref = NULL;
		if (rc < 0)
			goto done;
	}
	if (!ref) { /* none, or set aside: made at the start commit */
		if (git_commit_lookup(&base, repo, &oid) < 0 ||
		    git_branch_create(&ref, repo, branch, base, 0) < 0) {
			rc = al_wt_fail("cannot create the child's branch");
			goto done;
		}
	}
	if (access(ready, F_OK) == 0 && access(dotgit, F_OK) == 0 &&
	    git_repository_open(&sub, path) == 0 && git_worktree_lookup(&wt, repo, name) == 0)
		goto done; /* there: the child continues in it */
	/* half-made (killed while made), or never made: (again) from nothing */
	if ((rc = prune(repo, name, false)) < 0 || (rc = al_remove_tree(admin)) < 0 ||
	    (rc = al_remove_tree(path)) < 0 || (rc = ignore_parent(path)) < 0)
		goto done;
	opts.ref = ref;
	if (git_worktree_add(&wt, repo, name, path, &opts) < 0) {
		char *why;

		rc = al_wt_fail("cannot create the child's worktree");
		/* no half-made worktree left for git to trip on (HEAD at nothing: a full disk) */
		why = al_strdup(al_errmsg());
		if (prune(repo, name, false) == 0 && al_remove_tree(admin) == 0)
			al_remove_tree(path);
		al_err(rc, "%s", why);
		free(why);
		goto done;
	}
	/* made whole: the mark says so, once all of it is on disk */
	al_durable_written();
	if ((rc = al_durable_point()) == 0 && (rc = al_write_atomic(ready, "", 0)) == 0)
		rc = al_durable_point();
done:
	free(ready);
	free(admin);
	git_worktree_free(wt);
	git_repository_free(sub);
	git_commit_free(base);
	git_reference_free(ref);
	if (repo)
		al_wt_close(repo);
	free(dotgit);
	return rc;
}

/* Removes worktree `name` unless a repository an agent made there must keep it (*kept). */
static int remove_one(git_repository *repo, const char *name, bool *kept)
{
	git_worktree *wt = NULL;

	*kept = false;
	if (git_worktree_lookup(&wt, repo, name) == 0)
		al_worktree_move_repos(repo, wt, kept);
	git_worktree_free(wt);
	git_error_clear();
	return *kept ? 0 : prune(repo, name, true);
}

int al_worktree_remove(const char *name)
{
	git_repository *repo = NULL;
	bool kept;
	int rc = al_wt_open(&repo);

	if (rc == 0) {
		rc = remove_one(repo, name, &kept);
		al_wt_close(repo);
	}
	return rc;
}

int al_worktree_remove_all(const char *dir)
{
	git_repository *repo = NULL;
	git_strarray names = { 0 };
	char *real = realpath(dir, NULL);
	bool any_kept = false;
	int rc = 0;

	if (!real)
		return 0; /* no worktrees */
	if ((rc = al_wt_open(&repo)) < 0) {
		free(real);
		return rc;
	}
	if (git_worktree_list(&names, repo) < 0)
		rc = al_wt_fail("cannot list the worktrees");
	for (size_t i = 0; rc == 0 && i < names.count; i++) {
		git_worktree *wt = NULL;
		bool kept = false;

		if (git_worktree_lookup(&wt, repo, names.strings[i]) == 0 &&
		    al_starts_with(git_worktree_path(wt), real)) {
			rc = remove_one(repo, names.strings[i], &kept);
			any_kept = any_kept || kept;
		}
		git_worktree_free(wt);
	}
	git_strarray_dispose(&names);
	al_wt_close(repo);
	if (rc == 0 && !any_kept)
		rc = al_remove_tree(real);
	free(real);
	return rc;
}
int al_worktree_conflicted(const char *path, const char *name, const char *branch)
{
	git_repository *repo = NULL, *sub = NULL;
	git_reference *head = NULL, *tmp = NULL, *theirs_ref = NULL;
	git_commit *ours = NULL;
	git_worktree *wt = NULL;
	git_annotated_commit *theirs = NULL;
	git_worktree_add_options opts;
	git_merge_options mo;
	git_checkout_options co;
	char *admin = NULL;
	int rc;

	git_worktree_add_options_init(&opts, GIT_WORKTREE_ADD_OPTIONS_VERSION);
	git_merge_options_init(&mo, GIT_MERGE_OPTIONS_VERSION);
	git_checkout_options_init(&co, GIT_CHECKOUT_OPTIONS_VERSION);
	if ((rc = al_wt_open(&repo)) < 0)
		return rc;
	admin = al_xprintf("%sworktrees/%s", git_repository_commondir(repo), name);
	clear_lock(al_xprintf("%srefs/heads/%s.lock", git_repository_commondir(repo), name));
	/* whatever a kill left of an earlier one goes: it is made from nothing */
	if ((rc = prune(repo, name, false)) < 0 || (rc = al_remove_tree(admin)) < 0 ||
	    (rc = al_remove_tree(path)) < 0 || (rc = ignore_parent(path)) < 0)
		goto done;
	if (git_repository_head(&head, repo) < 0 ||
	    git_commit_lookup(&ours, repo, git_reference_target(head)) < 0 ||
	    git_branch_lookup(&theirs_ref, repo, branch, GIT_BRANCH_LOCAL) < 0) {
		rc = al_wt_fail("cannot read the branches to merge");
		goto done;
	}
	/* a branch only to make it: the worktree's HEAD is then detached, the branch gone */
	if (git_branch_create(&tmp, repo, name, ours, 1) < 0) {
		rc = al_wt_fail("cannot create the resolver's worktree");
		goto done;
	}
	opts.ref = tmp;
	if (git_worktree_add(&wt, repo, name, path, &opts) < 0 ||
	    git_repository_open(&sub, path) < 0 ||
	    git_repository_set_head_detached(sub, git_commit_id(ours)) < 0 ||
	    git_reference_delete(tmp) < 0) { /* (git_branch_delete() leaks in libgit2 1.5, as above) */
		rc = al_wt_fail("cannot create the resolver's worktree");
		goto done;
	}
	/* the merge as git makes it: the conflicts written with their markers */
	co.checkout_strategy = GIT_CHECKOUT_FORCE | GIT_CHECKOUT_ALLOW_CONFLICTS |
			       GIT_CHECKOUT_CONFLICT_STYLE_MERGE;
	co.our_label = git_reference_shorthand(head);
	co.their_label = branch;
	if (git_annotated_commit_from_revspec(&theirs, sub, branch) < 0 ||
	    git_merge(sub, (const git_annotated_commit **)&theirs, 1, &mo, &co) < 0)
		rc = al_wt_fail("cannot write the conflicted merge");
done:
	git_annotated_commit_free(theirs);
	git_worktree_free(wt);
	git_repository_free(sub);
	git_commit_free(ours);
	git_reference_free(theirs_ref);
	git_reference_free(tmp);
	git_reference_free(head);
	free(admin);
	al_wt_close(repo);
	return rc;
}
