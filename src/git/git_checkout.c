#include "git_repo.h"
#include "ailoop/base/fsutil.h"
#include "ailoop/git/git_packs.h"
#include "ailoop/base/paths.h"
#include "ailoop/proc/proc.h"
#include "ailoop/base/strbuf.h"
#include "ailoop/base/util.h"
#include "ailoop/git/watch.h"

#include <git2.h>
#include <errno.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Branches, checkouts, and a tree restored in the work tree (rollback, a snapshot). */

bool al_git_branch_exists(struct al_git *g, const char *name)
{
	git_reference *ref = NULL;
	bool found = git_branch_lookup(&ref, g->repo, name, GIT_BRANCH_LOCAL) == 0;

	git_reference_free(ref);
	return found;
}

/* Whether some branch's name is below `name/` (git keeps refs as files: name cannot be one). */
static bool branches_below(struct al_git *g, const char *name)
{
	git_reference_iterator *it = NULL;
	git_reference *ref = NULL;
	char *glob = al_xprintf("refs/heads/%s/*", name);
	bool found = git_reference_iterator_glob_new(&it, g->repo, glob) == 0 &&
		     git_reference_next(&ref, it) == 0;

	git_reference_free(ref);
	git_reference_iterator_free(it);
	free(glob);
	git_error_clear();
	return found;
}

char *al_git_branch_free_name(struct al_git *g, const char *name, char **blocker)
{
	char *candidate;

	*blocker = NULL;
	/* a branch named as one of its directories ("ai-loop" for "ai-loop/x"): no suffix helps */
	for (const char *slash = strchr(name, '/'); slash; slash = strchr(slash + 1, '/')) {
		char *dir = al_strndup(name, (size_t)(slash - name));

		if (al_git_branch_exists(g, dir)) {
			*blocker = dir;
			return NULL;
		}
		free(dir);
	}
	candidate = al_strdup(name);
	for (int n = 2; al_git_branch_exists(g, candidate) || branches_below(g, candidate); n++) {
		free(candidate);
		candidate = al_xprintf("%s-%d", name, n);
	}
	return candidate;
}

int al_git_branch_create(struct al_git *g, const char *name)
{
	git_reference *head = NULL, *branch = NULL;
	git_commit *commit = NULL;
	int rc = 0;

	if (git_repository_head(&head, g->repo) < 0 ||
	    git_commit_lookup(&commit, g->repo, git_reference_target(head)) < 0 ||
	    git_branch_create(&branch, g->repo, name, commit, 0) < 0 ||
	    git_repository_set_head(g->repo, git_reference_name(branch)) < 0)
		rc = al_git_fail("cannot create the branch");
	al_durable_written();
	git_reference_free(branch);
	git_commit_free(commit);
	git_reference_free(head);
	return rc;
}

/* A file in the way of a checkout: the first one's path is kept (payload). */
static int in_the_way(git_checkout_notify_t why, const char *path, const git_diff_file *baseline,
		      const git_diff_file *target, const git_diff_file *workdir, void *payload)
{
	char **first = payload;

	(void)why;
	(void)baseline;
	(void)target;
	(void)workdir;
	if (!*first)
		*first = al_strdup(path);
	return 0;
}

/*
 * The path of the linked worktree that has branch `ref` (a full name)
 * checked out, or NULL: a checkout of it here would fail half-way, with
 * the work tree and index set to its tree and HEAD left where it was.
 */
char *al_git_checked_out_elsewhere(git_repository *repo, const char *ref)
{
	git_strarray names = { NULL, 0 };
	char *found = NULL;

	if (git_worktree_list(&names, repo) < 0)
		return NULL;
	for (size_t i = 0; i < names.count && !found; i++) {
		git_worktree *wt = NULL;
		git_repository *other = NULL;
		git_reference *head = NULL;

		if (git_worktree_lookup(&wt, repo, names.strings[i]) == 0 &&
		    git_worktree_validate(wt) == 0 &&
		    git_repository_open_from_worktree(&other, wt) == 0 &&
		    git_reference_lookup(&head, other, "HEAD") == 0 &&
		    git_reference_type(head) == GIT_REFERENCE_SYMBOLIC &&
		    !strcmp(git_reference_symbolic_target(head), ref))
			found = al_strdup(git_worktree_path(wt));
		git_reference_free(head);
		git_repository_free(other);
		git_worktree_free(wt);
	}
	git_strarray_dispose(&names);
	git_error_clear();
	return found;
}

int al_git_checkout(struct al_git *g, const char *name, char **conflict)
{
	git_checkout_options opts;
	git_reference *branch = NULL;
	git_object *target = NULL;
	char *first = NULL;
	int rc = 0;

	git_checkout_options_init(&opts, GIT_CHECKOUT_OPTIONS_VERSION);
	opts.checkout_strategy = GIT_CHECKOUT_SAFE;
	opts.notify_flags = GIT_CHECKOUT_NOTIFY_CONFLICT;
	opts.notify_cb = in_the_way;
	opts.notify_payload = &first;
	if (git_branch_lookup(&branch, g->repo, name, GIT_BRANCH_LOCAL) < 0)
		return al_err(AL_ENOTFOUND, "branch '%s' does not exist", name);
	if ((first = al_git_checked_out_elsewhere(g->repo, git_reference_name(branch)))) {
		rc = al_err(AL_ENOTFOUND, "branch '%s' is checked out in the worktree '%s': go on "
			    "there ('cd %s'), or remove that worktree first ('git worktree remove "
			    "%s')", name, first, first, first);
		free(first);
		git_reference_free(branch);
		return rc;
	}
	if (git_reference_peel(&target, branch, GIT_OBJECT_COMMIT) < 0 ||
	    git_checkout_tree(g->repo, target, &opts) < 0 ||
	    git_repository_set_head(g->repo, git_reference_name(branch)) < 0)
		rc = al_git_fail("cannot check out the run's branch");
	al_durable_written();
	if (rc < 0 && conflict)
		*conflict = first;
	else
		free(first);
	git_object_free(target);
	git_reference_free(branch);
	return rc;
}

/* Whether `path` is `dir` or below it. */
bool al_git_below(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	return !strncmp(path, dir, n) && (path[n] == '/' || !path[n]);
}

/* What restore_paths() puts back of what differs from the tree. */
enum restore_what {
	RESTORE_ALL,          /* every path */
	RESTORE_IGNORE_FILES, /* the .gitignore files only */
	RESTORE_UNIGNORED,    /* every path but those the tree lacks that are ignored */
};

/* Whether `path`'s last component is .gitignore. */
static bool ignore_file(const char *path)
{
	const char *base = strrchr(path, '/');

	return !strcmp(base ? base + 1 : path, ".gitignore");
}

/*
 * Puts the work tree and the index back to `tree` at the paths that
 * differ from it (tracked or not; ignored files are not the tree's), but
 * below `keep`, and only below `only` (each may be NULL), as `what` says.
 * A file the tree lacks that is ignored is kept (RESTORE_UNIGNORED): it is
 * taken out of the index only.
 */
static int restore_paths(struct al_git *g, git_tree *tree, const char *keep, const char *only,
			 enum restore_what what)
{
	git_diff_options dopts;
	git_checkout_options copts;
	git_diff *diff = NULL;
	git_index *index = NULL;
	char **paths = NULL, *spec[] = { (char *)only };
	size_t n = 0;
	bool untracked = false;
	int rc = 0;

	git_diff_options_init(&dopts, GIT_DIFF_OPTIONS_VERSION);
	dopts.flags = GIT_DIFF_INCLUDE_UNTRACKED | GIT_DIFF_RECURSE_UNTRACKED_DIRS |
		      GIT_DIFF_INCLUDE_TYPECHANGE;
	if (only) {
		dopts.pathspec.strings = spec;
		dopts.pathspec.count = 1;
	}
	if (git_diff_tree_to_workdir_with_index(&diff, g->repo, tree, &dopts) < 0 ||
	    git_repository_index(&index, g->repo) < 0) {
		rc = al_git_fail("cannot compare the work tree with the commit to restore");
		goto done;
	}
	paths = al_calloc(2 * git_diff_num_deltas(diff) + 1, sizeof(*paths));
	for (size_t i = 0; i < git_diff_num_deltas(diff) && rc == 0; i++) {
		const git_diff_delta *d = git_diff_get_delta(diff, i);
		const char *path = d->new_file.path;
		int ignored = 0;

		if ((keep && al_git_below(path, keep)) || (only && !al_git_below(path, only)) ||
		    (what == RESTORE_IGNORE_FILES && !ignore_file(path) &&
		     !ignore_file(d->old_file.path)))
			continue;
		if (what == RESTORE_UNIGNORED &&
		    (d->status == GIT_DELTA_ADDED || d->status == GIT_DELTA_UNTRACKED) &&
		    git_ignore_path_is_ignored(&ignored, g->repo, path) == 0 && ignored) {
			if (git_index_get_bypath(index, path, 0)) {
				rc = git_index_remove_bypath(index, path);
				untracked = true;
			}
			continue;
		}
		paths[n++] = al_strdup(path);
		if (strcmp(d->old_file.path, path))
			paths[n++] = al_strdup(d->old_file.path);
	}
	if (rc == 0 && untracked && (rc = git_index_write(index)) < 0)
		rc = al_git_fail("cannot restore the work tree");
	if (rc < 0 || !n)
		goto done;
	git_checkout_options_init(&copts, GIT_CHECKOUT_OPTIONS_VERSION);
	copts.checkout_strategy = GIT_CHECKOUT_FORCE | GIT_CHECKOUT_REMOVE_UNTRACKED |
				  GIT_CHECKOUT_DISABLE_PATHSPEC_MATCH;
	copts.paths.strings = paths;
	copts.paths.count = n;
	if (git_checkout_tree(g->repo, (git_object *)tree, &copts) < 0)
		rc = al_git_fail("cannot restore the work tree");
	al_durable_written();
done:
	for (size_t i = 0; i < n; i++)
		free(paths[i]);
	free(paths);
	git_index_free(index);
	git_diff_free(diff);
	return rc;
}

int al_git_restore_tree(struct al_git *g, git_tree *tree, const char *keep, const char *only)
{
	return restore_paths(g, tree, keep, only, RESTORE_ALL);
}

int al_git_restore_from_head(struct al_git *g, const char *dir, char hex[8])
{
	git_oid head = { { 0 } };
	git_commit *commit = NULL;
	git_tree *tree = NULL;
	git_tree_entry *entry = NULL;
	int rc = AL_ENOTFOUND;

	if (git_reference_name_to_id(&head, g->repo, "HEAD") == 0 &&
	    git_commit_lookup(&commit, g->repo, &head) == 0 && git_commit_tree(&tree, commit) == 0 &&
	    git_tree_entry_bypath(&entry, tree, dir) == 0)
		rc = al_git_restore_tree(g, tree, NULL, dir);
	git_oid_tostr(hex, 8, &head);
	if (rc == AL_ENOTFOUND)
		git_error_clear();
	git_tree_entry_free(entry);
	git_tree_free(tree);
	git_commit_free(commit);
	return rc;
}

int al_git_snapshot(struct al_git *g, const char *own_dir, char tree_hex[AL_OID_HEX])
{
	git_index *index = NULL;
	git_oid tip, tree;
	char *ref = NULL;
	bool born;
	int rc;

	if ((rc = al_git_head_state(g, &ref, &tip, &born)) < 0)
		return rc;
	free(ref);
	/* the index holds more than a commit's tree now: the next commit writes it whole */
	g->index_commit_known = false;
	if (git_repository_index(&index, g->repo) < 0 ||
	    al_git_stage_all(g, index, own_dir, born && git_oid_equal(&tip, &g->last)) < 0 ||
	    git_index_write_tree(&tree, index) < 0)
		rc = al_git_fail("cannot record the work tree");
	else
		git_oid_tostr(tree_hex, AL_OID_HEX, &tree);
	git_index_free(index);
	return rc;
}

int al_git_rollback(struct al_git *g, const char *commit_hex, const char *tree_hex,
		    const char *keep)
{
	const char *hex = tree_hex ? tree_hex : commit_hex;
	git_object *obj = NULL;
	git_tree *tree = NULL;
	git_oid oid;
	int rc;

	if (!hex || strlen(hex) != GIT_OID_HEXSZ || git_oid_fromstrn(&oid, hex, strlen(hex)) < 0 ||
	    git_object_lookup(&obj, g->repo, &oid, tree_hex ? GIT_OBJECT_TREE : GIT_OBJECT_COMMIT) < 0)
		return al_err(AL_EINVALID, "cannot restore the work tree to %s '%s': it is not one of "
			      "this repository", tree_hex ? "tree" : "commit", hex ? hex : "");
	if (git_object_peel((git_object **)&tree, obj, GIT_OBJECT_TREE) < 0)
		rc = al_git_fail("cannot compare the work tree with the commit to restore");
	/*
	 * the .gitignore files first: what else is put back (or left alone,
	 * ignored) is decided by the rules of the start, not the ones the
	 * transaction wrote
	 */
	else if ((rc = restore_paths(g, tree, keep, NULL, RESTORE_IGNORE_FILES)) == 0)
		rc = restore_paths(g, tree, keep, NULL, RESTORE_UNIGNORED);
	git_tree_free(tree);
	git_object_free(obj);
	return rc;
}
