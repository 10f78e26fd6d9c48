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

static int fail(const char *what)
{
	const git_error *e = git_error_last();

	return al_err(AL_ERROR, "%s: %s", what, e && e->message ? e->message : "unknown error");
}

static int open_repo(git_repository **repo)
{
	git_libgit2_init(); /* counted: balanced by git_libgit2_shutdown() */
	al_git_filters_register(); /* a shutdown to no user drops it */
	if (git_repository_open_ext(repo, ".", 0, NULL) < 0) {
		git_libgit2_shutdown();
		return fail("cannot open the repository");
	}
	return 0;
}

static void close_repo(git_repository *repo)
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
		rc = fail("cannot remove a worktree");
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
		return git_reference_delete(ref) < 0 ? fail("cannot delete a merged child's branch")
						     : 0;
	git_oid_tostr(hex, sizeof(hex), tip);
	aside = al_xprintf("%s.%s", git_reference_name(ref), hex);
	if (git_reference_rename(&moved, ref, aside, 1, "ailoop: set aside, its node runs again") <
	    0)
		rc = fail("cannot set a child's old branch aside");
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
	if ((rc = open_repo(&repo)) < 0)
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
			rc = fail("cannot create the child's branch");
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

		rc = fail("cannot create the child's worktree");
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
		close_repo(repo);
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
	int rc = open_repo(&repo);

	if (rc == 0) {
		rc = remove_one(repo, name, &kept);
		close_repo(repo);
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
	if ((rc = open_repo(&repo)) < 0) {
		free(real);
		return rc;
	}
	if (git_worktree_list(&names, repo) < 0)
		rc = fail("cannot list the worktrees");
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
	close_repo(repo);
	if (rc == 0 && !any_kept)
		rc = al_remove_tree(real);
	free(real);
	return rc;
}

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
static bool way_blocked(const char *root, const char *path, struct al_strbuf *way)
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
		return fail("cannot compare the merge with HEAD");
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
		return fail("cannot read the merge's conflicts");
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

		if (way_blocked(dir, e->path, &way)) { /* lstat() would look through it */
			al_strbuf_addf(&odd, "%s'%s' beyond '%s', which is no directory",
				       odd.len ? ", " : "", e->path, way.buf);
		} else if (lstat(file, &sb) < 0) { /* the resolver deleted it */
			if (git_index_conflict_remove(merged, e->path) < 0)
				rc = fail("cannot resolve a conflict");
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
			rc = fail("cannot resolve a conflict");
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
 * A path's content as a commit of it would hold it: a regular file's
 * bytes, a symbolic link's target, or nothing if absent.
 */
struct content {
	bool present, link, exec;
	struct al_strbuf data;
};

static int read_content(struct content *c, const char *file)
{
	struct stat sb;
	char target[4096];
	ssize_t len;

	c->present = c->link = c->exec = false;
	al_strbuf_init(&c->data);
	if (lstat(file, &sb) < 0)
		return errno == ENOENT || errno == ENOTDIR
			       ? 0 : al_err(AL_ERROR, "cannot read '%s': %s", file, strerror(errno));
	if (S_ISLNK(sb.st_mode)) {
		if ((len = readlink(file, target, sizeof(target))) < 0)
			return al_err(AL_ERROR, "cannot read '%s': %s", file, strerror(errno));
		al_strbuf_add(&c->data, target, (size_t)len);
		c->link = true;
	} else if (S_ISREG(sb.st_mode)) {
		if (al_strbuf_read_file(&c->data, file, 0) < 0)
			return al_err(AL_ERROR, "cannot read '%s': %s", file,
				      al_strbuf_read_strerror(errno));
		c->exec = (sb.st_mode & 0111) != 0;
	} else {
		return 0; /* a directory where a file was: as git sees it, the file is gone */
	}
	c->present = true;
	return 0;
}

static bool same(const struct content *a, const struct content *b)
{
	if (a->present != b->present)
		return false;
	return !a->present || (a->link == b->link && a->data.len == b->data.len &&
			       !memcmp(a->data.buf, b->data.buf, a->data.len));
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
		return fail("cannot compare the main work tree with the merge");
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

	if (way_blocked(".", path, &way) && !listed(paths, way.buf))
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
	if ((rc = open_repo(&repo)) < 0)
		return rc;
	if (git_repository_head(&head, repo) < 0 ||
	    git_commit_lookup(&ours, repo, git_reference_target(head)) < 0 ||
	    git_branch_lookup(&theirs_ref, repo, branch, GIT_BRANCH_LOCAL) < 0 ||
	    git_commit_lookup(&theirs, repo, git_reference_target(theirs_ref)) < 0) {
		rc = fail("cannot read the branches to merge");
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
		rc = fail("cannot merge");
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
		rc = fail("cannot write the merged tree");
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
			rc = fail("cannot write the merge to the work tree");
			goto done;
		}
	}
	al_crash_point("merge-checkout");
	if (git_signature_default(&sig, repo) < 0 &&
	    git_signature_now(&sig, "ailoop", "ailoop@localhost") < 0) {
		rc = fail("cannot make the merge's signature");
		goto done;
	}
	if (al_git_create_commit(&commit_oid, repo, sig, sig, message, tree, 2,
				 (const git_commit *[]){ ours, theirs }) < 0) {
		rc = fail("cannot commit the merge");
		goto done;
	}
	al_durable_written();
	if ((rc = al_durable_point()) < 0)
		goto done;
	if (git_reference_create_matching(&moved, repo, git_reference_name(head), &commit_oid, 1,
					  git_commit_id(ours), "merge: ailoop") < 0) {
		rc = fail("cannot move the branch to the merge");
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
	close_repo(repo);
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
	if ((rc = open_repo(&repo)) < 0)
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
		rc = fail("cannot read the branches to merge");
		goto done;
	}
	/* a branch only to make it: the worktree's HEAD is then detached, the branch gone */
	if (git_branch_create(&tmp, repo, name, ours, 1) < 0) {
		rc = fail("cannot create the resolver's worktree");
		goto done;
	}
	opts.ref = tmp;
	if (git_worktree_add(&wt, repo, name, path, &opts) < 0 ||
	    git_repository_open(&sub, path) < 0 ||
	    git_repository_set_head_detached(sub, git_commit_id(ours)) < 0 ||
	    git_reference_delete(tmp) < 0) { /* (git_branch_delete() leaks in libgit2 1.5, as above) */
		rc = fail("cannot create the resolver's worktree");
		goto done;
	}
	/* the merge as git makes it: the conflicts written with their markers */
	co.checkout_strategy = GIT_CHECKOUT_FORCE | GIT_CHECKOUT_ALLOW_CONFLICTS |
			       GIT_CHECKOUT_CONFLICT_STYLE_MERGE;
	co.our_label = git_reference_shorthand(head);
	co.their_label = branch;
	if (git_annotated_commit_from_revspec(&theirs, sub, branch) < 0 ||
	    git_merge(sub, (const git_annotated_commit **)&theirs, 1, &mo, &co) < 0)
		rc = fail("cannot write the conflicted merge");
done:
	git_annotated_commit_free(theirs);
	git_worktree_free(wt);
	git_repository_free(sub);
	git_commit_free(ours);
	git_reference_free(theirs_ref);
	git_reference_free(tmp);
	git_reference_free(head);
	free(admin);
	close_repo(repo);
	return rc;
}

struct al_wt_change {
	char *path;
	struct content old, new; /* in HEAD, in the main work tree */
};

struct al_wt_changes {
	struct al_wt_change *v;
	size_t n, alloc;
};

void al_worktree_changes_free(struct al_wt_changes *ch)
{
	if (!ch)
		return;
	for (size_t i = 0; i < ch->n; i++) {
		free(ch->v[i].path);
		al_strbuf_release(&ch->v[i].old.data);
		al_strbuf_release(&ch->v[i].new.data);
	}
	free(ch->v);
	free(ch);
}

int al_worktree_changes(struct al_wt_changes **out, const char *skip)
{
	git_repository *repo = NULL;
	git_object *head = NULL;
	git_tree *tree = NULL;
	git_diff *diff = NULL;
	git_diff_options opts;
	struct al_wt_changes *ch = al_calloc(1, sizeof(*ch));
	size_t skip_len = strlen(skip);
	int rc;

	*out = NULL;
	git_diff_options_init(&opts, GIT_DIFF_OPTIONS_VERSION);
	opts.flags = GIT_DIFF_INCLUDE_UNTRACKED | GIT_DIFF_RECURSE_UNTRACKED_DIRS |
		     GIT_DIFF_INCLUDE_TYPECHANGE;
	if ((rc = open_repo(&repo)) < 0) {
		al_worktree_changes_free(ch);
		return rc;
	}
	if (git_revparse_single(&head, repo, "HEAD^{tree}") < 0 ||
	    git_tree_lookup(&tree, repo, git_object_id(head)) < 0 ||
	    /* through the index: a file whose stat data it holds is not read again */
	    git_diff_tree_to_workdir_with_index(&diff, repo, tree, &opts) < 0) {
		rc = fail("cannot compare the work tree with HEAD");
		goto done;
	}
	for (size_t i = 0; i < git_diff_num_deltas(diff) && rc == 0; i++) {
		const git_diff_delta *d = git_diff_get_delta(diff, i);
		const char *path = d->new_file.path ? d->new_file.path : d->old_file.path;
		struct al_wt_change *c;
		git_blob *blob = NULL;

		if (!strncmp(path, skip, skip_len) && (!path[skip_len] || path[skip_len] == '/'))
			continue; /* the run's own files */
		AL_GROW(ch->v, ch->n, ch->alloc);
		c = &ch->v[ch->n++];
		memset(c, 0, sizeof(*c));
		c->path = al_strdup(path);
		al_strbuf_init(&c->old.data);
		if (d->old_file.mode && !git_oid_is_zero(&d->old_file.id)) {
			if (git_blob_lookup(&blob, repo, &d->old_file.id) < 0) {
				rc = fail("cannot read HEAD's files");
				break;
			}
			c->old.present = true;
			c->old.link = d->old_file.mode == GIT_FILEMODE_LINK;
			al_strbuf_add(&c->old.data, git_blob_rawcontent(blob),
				      (size_t)git_blob_rawsize(blob));
			git_blob_free(blob);
		}
		rc = read_content(&c->new, path);
	}
done:
	git_diff_free(diff);
	git_tree_free(tree);
	git_object_free(head);
	close_repo(repo);
	if (rc < 0)
		al_worktree_changes_free(ch);
	else
		*out = ch;
	return rc;
}

static int write_content(const char *file, const struct content *c)
{
	char *dir = al_strdup(file), *slash = strrchr(dir, '/');
	int rc = 0;

	if (slash)
		*slash = '\0';
	if (unlink(file) < 0 && errno != ENOENT && errno != EISDIR)
		rc = al_err(AL_ERROR, "cannot replace '%s': %s", file, strerror(errno));
	else if (!c->present)
		rc = 0;
	else if (slash && al_mkdirs(dir) < 0)
		rc = al_err(AL_ERROR, "cannot create '%s': %s", dir, strerror(errno));
	else if (c->link && symlink(c->data.buf, file) < 0)
		rc = al_err(AL_ERROR, "cannot write '%s': %s", file, strerror(errno));
	else if (!c->link && (rc = al_write_atomic(file, c->data.buf, c->data.len)) == 0 &&
		 chmod(file, c->exec ? 0755 : 0644) < 0)
		rc = al_err(AL_ERROR, "cannot write '%s': %s", file, strerror(errno));
	free(dir);
	return rc;
}

int al_worktree_carry(const struct al_wt_changes *ch, const char *path, const char *child)
{
	bool *todo = al_calloc(ch->n ? ch->n : 1, sizeof(bool));
	int rc = 0;

	/* all checked before anything is written: a conflict leaves the worktree as it was */
	for (size_t i = 0; i < ch->n && rc == 0; i++) {
		const struct al_wt_change *c = &ch->v[i];
		char *file = al_xprintf("%s/%s", path, c->path);
		struct content here = { .data = AL_STRBUF_INIT };
		/* the child made a directory on the way a link (or a file): nothing goes through it */
		bool theirs = way_blocked(path, c->path, NULL);

		if (!theirs && (rc = read_content(&here, file)) == 0 && !same(&here, &c->new)) {
			if (same(&here, &c->old))
				todo[i] = true;
			else
				theirs = true;
		}
		if (theirs)
			rc = al_err(AL_ECONFLICT, "your change to '%s' in the main work tree conflicts "
				    "with child '%s', which changed it too in its worktree '%s': make "
				    "the two agree (or undo yours), then resume", c->path, child, path);
		al_strbuf_release(&here.data);
		free(file);
	}
	for (size_t i = 0; i < ch->n && rc >= 0; i++) {
		char *file;
		int written;

		if (!todo[i])
			continue;
		file = al_xprintf("%s/%s", path, ch->v[i].path);
		written = write_content(file, &ch->v[i].new);
		rc = written < 0 ? written : rc + 1;
		free(file);
	}
	free(todo);
	return rc;
}

size_t al_worktree_changes_count(const struct al_wt_changes *ch)
{
	return ch ? ch->n : 0;
}
