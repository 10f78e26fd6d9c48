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
 * A worktree child's branch merged back into the main work tree: the
 * merge's own checkout of the paths it changes, a conflict left for the
 * resolver, a change of the user's never overwritten.
 */

/* The conflicting files of a merge's index, ", "-separated. */
static char *conflict_list(git_index *index)
{
	struct al_strbuf sb = AL_STRBUF_INIT;
	git_index_conflict_iterator *it = NULL;
	const git_index_entry *anc, *ours, *theirs;

	if (git_index_conflict_iterator_new(&it, index) < 0)
		return al_strdup("?");
	while (git_index_conflict_next(&anc, &ours, &theirs, it) == 0) {
		const git_index_entry *e = ours ? ours : theirs ? theirs : anc;

		al_strbuf_addf(&sb, "%s%s", sb.len ? ", " : "", e->path);
	}
	git_index_conflict_iterator_free(it);
	if (!sb.len)
		al_strbuf_adds(&sb, "?");
	return al_strbuf_detach(&sb, NULL);
}

/*
 * Whether a directory on the way to `path` below `root` is there as
 * something else (a symbolic link, a file): whatever is written or
 * removed at `path` would go through it. That one's path from `root` goes
 * to `way` if given. A missing directory is not in the way (it is made).
 */
bool al_wt_way_blocked(const char *root, const char *path, struct al_strbuf *way)
{
	struct al_strbuf dir = AL_STRBUF_INIT;
	struct stat st;
	bool blocked = false;

	for (const char *slash = strchr(path, '/'); slash && !blocked; slash = strchr(slash + 1, '/')) {
		al_strbuf_reset(&dir);
		al_strbuf_addf(&dir, "%s/%.*s", root, (int)(slash - path), path);
		if (lstat(dir.buf, &st) < 0)
			break;
		blocked = !S_ISDIR(st.st_mode);
		if (blocked && way) {
			al_strbuf_reset(way);
			al_strbuf_add(way, path, (size_t)(slash - path));
		}
	}
	al_strbuf_release(&dir);
	return blocked;
}

/* The paths that differ between two trees: what the merge changes in the work tree. */
static int changed_paths(git_repository *repo, git_tree *a, git_tree *b, git_strarray *out)
{
	git_diff *diff = NULL;
	size_t n;

	if (git_diff_tree_to_tree(&diff, repo, a, b, NULL) < 0)
		return al_wt_fail("cannot compare the merge with HEAD");
	n = git_diff_num_deltas(diff);
	out->strings = al_calloc(n ? n : 1, sizeof(char *));
	out->count = 0;
	for (size_t i = 0; i < n; i++) {
		const git_diff_delta *d = git_diff_get_delta(diff, i);

		out->strings[out->count++] = al_strdup(d->new_file.path ? d->new_file.path
									: d->old_file.path);
	}
	git_diff_free(diff);
	return 0;
}

/* True if text `buf` holds a conflict marker line ("<<<<<<< ", "=======", ">>>>>>> "). */
static bool has_markers(const char *buf, size_t len)
{
	for (size_t i = 0; i < len;) {
		const char *line = buf + i, *nl = memchr(line, '\n', len - i);
		size_t n = nl ? (size_t)(nl - line) : len - i;

		if (n && line[n - 1] == '\r')
			n--;
		if ((n >= 8 && (!memcmp(line, "<<<<<<< ", 8) || !memcmp(line, ">>>>>>> ", 8))) ||
		    (n == 7 && !memcmp(line, "=======", 7)))
			return true;
		i = nl ? (size_t)(nl - buf) + 1 : len;
	}
	return false;
}

/*
 * Takes each conflicting file of `merged` from directory `dir` (the
 * resolver's worktree): its content as the merge's, a symbolic link as
 * that link (never read through), or gone if the file is. What cannot be
 * taken goes to *left, a clause saying what the resolver left (files that
 * still hold conflict markers; what is neither a file nor a link, or lies
 * beyond a link or file on its way), and the index keeps those conflicts.
 */
static int take_resolved(git_repository *repo, git_index *merged, const char *dir, char **left)
{
	struct al_strbuf bad = AL_STRBUF_INIT, marked = AL_STRBUF_INIT, odd = AL_STRBUF_INIT;
	struct al_strbuf way = AL_STRBUF_INIT;
	git_index_conflict_iterator *it = NULL;
	const git_index_entry *anc, *ours, *theirs;
	git_index_entry *entries = NULL;
	size_t n = 0;
	int rc = 0;

	if (git_index_conflict_iterator_new(&it, merged) < 0)
		return al_wt_fail("cannot read the merge's conflicts");
	while (git_index_conflict_next(&anc, &ours, &theirs, it) == 0) {
		const git_index_entry *e = ours ? ours : theirs ? theirs : anc;

		entries = al_realloc(entries, (n + 1) * sizeof(*entries));
		memset(&entries[n], 0, sizeof(*entries));
		entries[n].path = al_strdup(e->path);
		entries[n].mode = e->mode;
		n++;
	}
	git_index_conflict_iterator_free(it);
	for (size_t i = 0; i < n && rc == 0; i++) {
		git_index_entry *e = &entries[i];
		char *file = al_xprintf("%s/%s", dir, e->path), target[4096];
		struct al_strbuf text = AL_STRBUF_INIT;
		struct stat sb;
		ssize_t len;
		bool take = false;

		if (al_wt_way_blocked(dir, e->path, &way)) { /* lstat() would look through it */
			al_strbuf_addf(&odd, "%s'%s' beyond '%s', which is no directory",
				       odd.len ? ", " : "", e->path, way.buf);
		} else if (lstat(file, &sb) < 0) { /* the resolver deleted it */
			if (git_index_conflict_remove(merged, e->path) < 0)
				rc = al_wt_fail("cannot resolve a conflict");
		} else if (S_ISLNK(sb.st_mode)) {
			if ((len = readlink(file, target, sizeof(target))) < 0) {
				rc = al_err(AL_ERROR, "cannot read '%s': %s", file, strerror(errno));
			} else {
				al_strbuf_add(&text, target, (size_t)len);
				e->mode = GIT_FILEMODE_LINK;
				take = true;
			}
		} else if (!S_ISREG(sb.st_mode)) {
			al_strbuf_addf(&odd, "%s'%s' as neither a file nor a symbolic link",
				       odd.len ? ", " : "", e->path);
		} else if ((rc = al_strbuf_read_file(&text, file, 0)) < 0) {
			/* said */
		} else if (has_markers(text.buf, text.len)) {
			al_strbuf_addf(&marked, "%s%s", marked.len ? ", " : "", e->path);
		} else {
			if (e->mode == GIT_FILEMODE_LINK) /* a link in conflict, resolved as a file */
				e->mode = GIT_FILEMODE_BLOB;
			take = true;
		}
		if (take && (git_blob_create_from_buffer(&e->id, repo, text.buf, text.len) < 0 ||
			     git_index_conflict_remove(merged, e->path) < 0 ||
			     git_index_add(merged, e) < 0))
			rc = al_wt_fail("cannot resolve a conflict");
		al_strbuf_release(&text);
		free(file);
	}
	for (size_t i = 0; i < n; i++)
		free((char *)entries[i].path);
	free(entries);
	if (marked.len)
		al_strbuf_addf(&bad, "conflict markers in %s", marked.buf);
	if (odd.len)
		al_strbuf_addf(&bad, "%s%s", bad.len ? ", and " : "", odd.buf);
	*left = bad.len ? al_strbuf_detach(&bad, NULL) : NULL;
	al_strbuf_release(&way);
	al_strbuf_release(&odd);
	al_strbuf_release(&marked);
	return rc;
}

/*
 * A path as a commit would record it: the blob's id, whether it is a
 * symbolic link; present false if absent (or a directory or submodule).
 */
struct recorded {
	bool present, link;
	git_oid id;
};

static void tree_recorded(struct recorded *r, git_tree *tree, const char *path)
{
	git_tree_entry *e = NULL;

	r->present = r->link = false;
	if (git_tree_entry_bypath(&e, tree, path) < 0)
		return;
	if (git_tree_entry_type(e) == GIT_OBJECT_BLOB) {
		r->present = true;
		r->link = git_tree_entry_filemode(e) == GIT_FILEMODE_LINK;
		git_oid_cpy(&r->id, git_tree_entry_id(e));
	}
	git_tree_entry_free(e);
}

/*
 * `path` in the main work tree as `git add` would record it, compared as
 * `git status` compares it: a regular file through git's filters (an eol
 * rule, a clean command such as Git LFS's), whose checkout converted it.
 */
static int work_recorded(struct recorded *r, git_repository *repo, const char *path)
{
	git_filter_list *fl = NULL;
	git_buf clean = GIT_BUF_INIT;
	struct stat sb;
	char target[4096];
	ssize_t len;
	int rc;

	r->present = r->link = false;
	if (lstat(path, &sb) < 0)
		return errno == ENOENT || errno == ENOTDIR
			       ? 0 : al_err(AL_ERROR, "cannot read '%s': %s", path, strerror(errno));
	if (S_ISLNK(sb.st_mode)) {
		if ((len = readlink(path, target, sizeof(target))) < 0)
			return al_err(AL_ERROR, "cannot read '%s': %s", path, strerror(errno));
		r->link = true;
		rc = git_odb_hash(&r->id, target, (size_t)len, GIT_OBJECT_BLOB);
	} else if (S_ISREG(sb.st_mode)) {
		/* (not git_repository_hashfile(): it leaks the content when a filter fails) */
		if ((rc = git_filter_list_load(&fl, repo, NULL, path, GIT_FILTER_TO_ODB,
					       GIT_FILTER_ALLOW_UNSAFE)) == 0 &&
		    (rc = git_filter_list_apply_to_file(&clean, fl, repo, path)) == 0)
			rc = git_odb_hash(&r->id, clean.ptr, clean.size, GIT_OBJECT_BLOB);
		git_buf_dispose(&clean);
		git_filter_list_free(fl);
	} else {
		return 0; /* a directory where a file was: as git sees it, the file is gone */
	}
	if (rc < 0)
		return al_wt_fail("cannot compare the main work tree with the merge");
	r->present = true;
	return 0;
}

static bool same_recorded(const struct recorded *a, const struct recorded *b)
{
	return a->present == b->present &&
	       (!a->present || (a->link == b->link && git_oid_equal(&a->id, &b->id)));
}

static bool listed(const git_strarray *paths, const char *path)
{
	for (size_t i = 0; i < paths->count; i++)
		if (!strcmp(paths->strings[i], path))
			return true;
	return false;
}

/*
 * A directory on the way to `path` of the merge that is something else in
 * the main work tree (the user's symbolic link, or file), unless the merge
 * replaces it itself (then it is one of `paths`, checked as a file): the
 * checkout would write through the link, as git never does, or fail.
 */
static int in_the_way(const git_strarray *paths, const char *path, const char *branch)
{
	struct al_strbuf way = AL_STRBUF_INIT;
	struct stat st;
	int rc = 0;

	if (al_wt_way_blocked(".", path, &way) && !listed(paths, way.buf))
		rc = al_err(AL_ECONFLICT, "your %s '%s' in the main work tree is in the way of '%s', "
			    "which the merge of branch '%s' writes: ailoop writes nothing through a "
			    "link nor over your file; move it elsewhere, then resume",
			    lstat(way.buf, &st) == 0 && S_ISLNK(st.st_mode) ? "symbolic link" : "file",
			    way.buf, path, branch);
	al_strbuf_release(&way);
	return rc;
}

/*
 * Before a merge writes `paths` into the main work tree: each must hold
 * HEAD's content there, or the merge's already (a kill after the checkout;
 * the user's change that a child carried and committed), or the start of
 * the merge's that a checkout of it cut short left (worktree_torn.c).
 * Anything else is the user's uncommitted change, which the checkout
 * would overwrite.
 */
static int keeps_user_changes(git_repository *repo, const git_oid *head, git_tree *ours,
			      git_tree *merged, const git_strarray *paths, const char *branch)
{
	struct al_torn torn;
	int rc = 0;

	al_torn_load(&torn, repo, head);
	for (size_t i = 0; i < paths->count && rc == 0; i++) {
		struct recorded here, before, after;

		if (!strncmp(paths->strings[i], AL_RUNS_DIR "/", strlen(AL_RUNS_DIR) + 1))
			continue; /* the run's own files: left as they are */
		if ((rc = in_the_way(paths, paths->strings[i], branch)) < 0)
			break;
		tree_recorded(&before, ours, paths->strings[i]);
		tree_recorded(&after, merged, paths->strings[i]);
		if ((rc = work_recorded(&here, repo, paths->strings[i])) == 0 &&
		    !same_recorded(&here, &before) && !same_recorded(&here, &after) &&
		    !al_torn_here(&torn, repo, paths->strings[i]))
			rc = al_err(AL_ECONFLICT, "your change to '%s' in the main work tree would be "
				    "overwritten by the merge of branch '%s': commit it elsewhere or "
				    "undo it, then resume", paths->strings[i], branch);
	}
	al_torn_release(&torn);
	return rc;
}

/*
 * The runs' files of the merge are ours, whatever the child's branch did
 * to them (its agent's own commit of something in their place): the run
 * writes its state in the main work tree, and the child's commits carry
 * none of it (git_stage.c). Conflicts there go first, then the merged tree
 * takes ours' directory of the runs.
 */
static int conflicts_out_of_runs(git_index *merged)
{
	git_index_conflict_iterator *it = NULL;
	const git_index_entry *a, *o, *t;
	char **paths = NULL;
	size_t n = 0, alloc = 0;
	int rc = 0;

	if (git_index_conflict_iterator_new(&it, merged) < 0)
		return -1;
	while (git_index_conflict_next(&a, &o, &t, it) == 0) {
		const char *path = a ? a->path : o ? o->path : t->path;

		if (al_starts_with(path, AL_RUNS_DIR "/")) {
			AL_GROW(paths, n, alloc);
			paths[n++] = al_strdup(path);
		}
	}
	git_index_conflict_iterator_free(it);
	for (size_t i = 0; i < n && rc == 0; i++)
		rc = git_index_conflict_remove(merged, paths[i]);
	al_strv_free(paths, n);
	return rc;
}

static int runs_ours(git_repository *repo, git_commit *ours, git_oid *tree_oid)
{
	git_tree *merged = NULL, *own = NULL;
	git_tree_entry *runs = NULL;
	git_tree_update up = { 0 };
	int rc;

	if ((rc = git_tree_lookup(&merged, repo, tree_oid)) < 0 ||
	    (rc = git_commit_tree(&own, ours)) < 0)
		goto done;
	up.path = AL_RUNS_DIR;
	if (git_tree_entry_bypath(&runs, own, AL_RUNS_DIR) == 0) {
		up.action = GIT_TREE_UPDATE_UPSERT;
		git_oid_cpy(&up.id, git_tree_entry_id(runs));
		up.filemode = git_tree_entry_filemode(runs);
	} else {
		up.action = GIT_TREE_UPDATE_REMOVE;
	}
	rc = git_tree_create_updated(tree_oid, repo, merged, 1, &up);
done:
	git_error_clear();
	git_tree_entry_free(runs);
	git_tree_free(own);
	git_tree_free(merged);
	return rc;
}

static int merge_into(const char *branch, const char *message, const char *resolved,
		      char **conflicts)
{
	git_repository *repo = NULL;
	git_reference *head = NULL, *theirs_ref = NULL, *moved = NULL;
	git_commit *ours = NULL, *theirs = NULL;
	git_index *merged = NULL;
	git_tree *tree = NULL, *ours_tree = NULL;
	git_signature *sig = NULL;
	git_strarray paths = { 0 };
	git_oid tree_oid, commit_oid;
	git_checkout_options co;
	int rc;

	*conflicts = NULL;
	git_checkout_options_init(&co, GIT_CHECKOUT_OPTIONS_VERSION);
	if ((rc = al_wt_open(&repo)) < 0)
		return rc;
	if (git_repository_head(&head, repo) < 0 ||
	    git_commit_lookup(&ours, repo, git_reference_target(head)) < 0 ||
	    git_branch_lookup(&theirs_ref, repo, branch, GIT_BRANCH_LOCAL) < 0 ||
	    git_commit_lookup(&theirs, repo, git_reference_target(theirs_ref)) < 0) {
		rc = al_wt_fail("cannot read the branches to merge");
		goto done;
	}
	/* in HEAD's history already: merged before a kill, or nothing done */
	if (git_oid_equal(git_commit_id(ours), git_commit_id(theirs)) ||
	    git_graph_descendant_of(repo, git_commit_id(ours), git_commit_id(theirs)) == 1) {
		al_torn_forget(repo);
		rc = 0;
		goto done;
	}
	if (git_merge_commits(&merged, repo, ours, theirs, NULL) < 0 ||
	    conflicts_out_of_runs(merged) < 0) {
		rc = al_wt_fail("cannot merge");
		goto done;
	}
	if (git_index_has_conflicts(merged) && resolved &&
	    (rc = take_resolved(repo, merged, resolved, conflicts)) < 0)
		goto done;
	if (git_index_has_conflicts(merged)) {
		if (!*conflicts)
			*conflicts = conflict_list(merged);
		rc = 2;
		goto done;
	}
	if (git_index_write_tree_to(&tree_oid, merged, repo) < 0 ||
	    runs_ours(repo, ours, &tree_oid) < 0 ||
	    git_tree_lookup(&tree, repo, &tree_oid) < 0 || git_commit_tree(&ours_tree, ours) < 0) {
		rc = al_wt_fail("cannot write the merged tree");
		goto done;
	}
	/* the work tree and index: the files the merge changes, and only those */
	if ((rc = changed_paths(repo, ours_tree, tree, &paths)) < 0 ||
	    (rc = keeps_user_changes(repo, git_commit_id(ours), ours_tree, tree, &paths,
				     branch)) < 0)
		goto done;
	if (paths.count) {
		/* a file it half writes (a full disk, a kill) is then known as ailoop's */
		if ((rc = al_torn_record(repo, git_commit_id(ours), &tree_oid, &paths)) < 0)
			goto done;
		co.checkout_strategy = GIT_CHECKOUT_FORCE | GIT_CHECKOUT_DISABLE_PATHSPEC_MATCH;
		co.paths = paths;
		if (git_checkout_tree(repo, (git_object *)tree, &co) < 0) {
			rc = al_wt_fail("cannot write the merge to the work tree");
			goto done;
		}
	}
	al_crash_point("merge-checkout");
	if (git_signature_default(&sig, repo) < 0 &&
	    git_signature_now(&sig, "ailoop", "ailoop@localhost") < 0) {
		rc = al_wt_fail("cannot make the merge's signature");
		goto done;
	}
	if (al_git_create_commit(&commit_oid, repo, sig, sig, message, tree, 2,
				 (const git_commit *[]){ ours, theirs }) < 0) {
		rc = al_wt_fail("cannot commit the merge");
		goto done;
	}
	al_durable_written();
	if ((rc = al_durable_point()) < 0)
		goto done;
	if (git_reference_create_matching(&moved, repo, git_reference_name(head), &commit_oid, 1,
					  git_commit_id(ours), "merge: ailoop") < 0) {
		rc = al_wt_fail("cannot move the branch to the merge");
		goto done;
	}
	al_durable_written();
	if ((rc = al_durable_point()) < 0)
		goto done;
	al_crash_point("merged");
	rc = 1;
	al_torn_forget(repo);
done:
	for (size_t i = 0; i < paths.count; i++)
		free(paths.strings[i]);
	free(paths.strings);
	git_signature_free(sig);
	git_tree_free(ours_tree);
	git_tree_free(tree);
	git_index_free(merged);
	git_commit_free(theirs);
	git_commit_free(ours);
	git_reference_free(moved);
	git_reference_free(theirs_ref);
	git_reference_free(head);
	al_wt_close(repo);
	return rc;
}

int al_worktree_merge(const char *branch, const char *message, char **conflicts)
{
	return merge_into(branch, message, NULL, conflicts);
}

int al_worktree_merge_resolved(const char *branch, const char *message, const char *dir,
			       char **left)
{
	return merge_into(branch, message, dir, left);
}
