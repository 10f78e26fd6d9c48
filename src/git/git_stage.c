/*
 * Staging for a commit (al_git_commit_all, git_commit.c): what changed in the
 * work tree goes into the index, by the watch's list of paths when it can
 * be trusted, else by a full status pass; ailoop's own files directly.
 */
#include "git_repo.h"
#include "ailoop/base/fsutil.h"
#include "ailoop/base/paths.h"
#include "ailoop/base/strbuf.h"
#include "ailoop/base/util.h"
#include "ailoop/git/watch.h"
#include "ailoop/git/worktree.h"

#include <git2.h>
#include <git2/sys/index.h>
#include <git2/sys/repository.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Whether the work tree file may differ from its index entry. */
static bool stat_differs(const git_index_entry *e, const struct stat *st)
{
	return !e || al_rewritten(st) || e->file_size != (uint32_t)st->st_size ||
	       e->mtime.seconds != (int32_t)st->st_mtim.tv_sec ||
	       e->mtime.nanoseconds != (uint32_t)st->st_mtim.tv_nsec ||
	       e->ino != (uint32_t)st->st_ino;
}

/*
 * Whether `rel`, a directory under the runs, holds none of a run's files:
 * agents' logs (at any depth), or a run's parallel children's worktrees
 * (at its top: below, a node may be named so).
 */
bool al_git_not_run_files(const char *rel)
{
	const char *base = strrchr(rel, '/');

	return al_starts_with(rel, AL_RUNS_DIR "/") && base &&
	       (!strcmp(base + 1, "logs") || (!strcmp(base + 1, AL_WORKTREES_DIR) &&
					      strchr(rel + sizeof(AL_RUNS_DIR), '/') == base));
}

/*
 * Whether `path` is another run's than the one committing (in its
 * directory `own_dir`), or that run's directory itself. A run paused while
 * this one works has its state in the work tree, newer than its last
 * commit, and resumes from there: this run's commits leave its files as
 * HEAD has them, as the full scan and the watch alike. Without `own_dir`
 * (a parallel child in a worktree of its own, whose run writes its state
 * in the main work tree) every file of the runs is left so: the copies in
 * the worktree are the fork's, and only an agent changes them.
 */
static bool another_runs(const char *path, const char *own_dir)
{
	const char *run = path + sizeof(AL_RUNS_DIR), *end;

	if (!own_dir)
		return al_git_below(path, AL_RUNS_DIR);
	if (!al_starts_with(path, AL_RUNS_DIR "/") || al_git_below(path, own_dir))
		return false;
	end = strchr(run, '/');
	return end ? end > run : al_starts_with(run, "run_");
}

/* Stages the files ailoop wrote under `dir` (recursively), lock files and logs aside. */
static int stage_own_files(struct al_git *g, git_index *index, const char *dir)
{
	struct dirent *de;
	DIR *d = opendir(dir);
	int rc = 0;

	if (!d)
		return 0; /* no run directory (yet): nothing of ours to stage */
	while (rc == 0 && (de = readdir(d))) {
		struct al_strbuf path = AL_STRBUF_INIT;
		struct stat st;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		al_strbuf_addf(&path, "%s/%s", dir, de->d_name);
		if (de->d_type == DT_DIR && al_git_sibling_dir(path.buf)) {
			al_strbuf_release(&path);
			continue; /* a sibling's: not even a stat */
		}
		if (lstat(path.buf, &st) == 0) {
			if (S_ISDIR(st.st_mode) && !al_git_not_run_files(path.buf) &&
			    !al_git_sibling_dir(path.buf))
				rc = stage_own_files(g, index, path.buf);
			else if (S_ISREG(st.st_mode) && !al_git_unrecorded(path.buf) &&
				 stat_differs(git_index_get_bypath(index, path.buf, 0), &st))
				rc = al_git_add_own_file(g, index, path.buf);
		}
		al_strbuf_release(&path);
	}
	closedir(d);
	return rc;
}

/*
 * Whether directory `dir` holds a repository of its own as git sees one:
 * a .git entry that opens as a repository (an empty .git directory, or a
 * .git file naming a directory that is gone, is none).
 */
bool al_git_nested_repo(const char *dir)
{
	char *dotgit = al_xprintf("%s/.git", dir);
	git_repository *sub = NULL;
	struct stat st;
	bool repo = lstat(dotgit, &st) == 0 &&
		    git_repository_open_ext(&sub, dir, GIT_REPOSITORY_OPEN_NO_SEARCH, NULL) == 0;

	git_repository_free(sub);
	free(dotgit);
	git_error_clear();
	return repo;
}

static int add_nested_repo(struct al_git *g, git_index *index, const char *path);

/*
 * Stages what directory `dir` holds, as `git add -A` does: a directory
 * whose .git entry is no repository is one like any other to git, but
 * libgit2's status pass stops at any .git entry. Its files and links not
 * ignored are added, repositories below it as they are anywhere.
 */
static int add_plain_dir(struct al_git *g, git_index *index, const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int rc = 0;

	if (!d)
		return 0; /* gone since the status pass: nothing of it to record */
	while (rc == 0 && (de = readdir(d))) {
		char *path, *slashed;
		struct stat st;
		int ignored = 0;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
		    !strcmp(de->d_name, ".git"))
			continue;
		path = al_xprintf("%s/%s", dir, de->d_name);
		slashed = al_xprintf("%s/", path);
		if (lstat(path, &st) == 0 &&
		    (rc = git_ignore_path_is_ignored(&ignored, g->repo,
						     S_ISDIR(st.st_mode) ? slashed : path)) == 0 &&
		    !ignored) {
			if (S_ISDIR(st.st_mode))
				rc = al_git_nested_repo(path) ? add_nested_repo(g, index, slashed)
						       : add_plain_dir(g, index, path);
			else if (S_ISREG(st.st_mode) || S_ISLNK(st.st_mode))
				rc = git_index_add_bypath(index, path);
		}
		free(slashed);
		free(path);
	}
	closedir(d);
	return rc;
}

/*
 * A git repository in the work tree that the index does not know (an agent
 * cloned or made one): recorded as `git add` records it, a gitlink to the
 * commit checked out in it. One without a commit has nothing to link to:
 * it is left out, and said so once. A .git entry that is no repository
 * makes a plain directory (add_plain_dir).
 */
static int add_nested_repo(struct al_git *g, git_index *index, const char *path)
{
	char *dir = al_strndup(path, strlen(path) - 1);
	git_repository *sub = NULL;
	git_oid head;
	int rc = 0;

	if (git_repository_open(&sub, dir) < 0) {
		rc = add_plain_dir(g, index, dir); /* its .git is no repository */
	} else if (git_reference_name_to_id(&head, sub, "HEAD") == 0) {
		rc = git_index_add_bypath(index, dir);
	} else {
		size_t i = 0;

		while (i < g->nskipped && strcmp(g->skipped[i], dir))
			i++;
		if (i == g->nskipped) {
			fprintf(stderr, "ailoop: warning: '%s' is a git repository without a commit: "
				"it is left out of the run's commits until it has one\n", dir);
			AL_GROW(g->skipped, g->nskipped, g->skipped_alloc);
			g->skipped[g->nskipped++] = al_strdup(dir);
		}
	}
	git_repository_free(sub);
	free(dir);
	return rc;
}

/*
 * Gitlinks (submodules, nested repositories) whose repository has another
 * commit checked out now. The status pass leaves submodules out (scanning
 * their work trees would cost a status of each), so their HEADs are read
 * here and recorded as `git add -A` records them; one whose directory is
 * gone is removed, one not checked out (no repository there) stays.
 */
static int stage_gitlinks(struct al_git *g, git_index *index, size_t *staged)
{
	size_t links = 0;
	int rc = 0;

	g->gitlinks_known = false;
	for (size_t i = 0; i < git_index_entrycount(index) && rc == 0; i++) {
		const git_index_entry *e = git_index_get_byindex(index, i);
		git_repository *sub = NULL;
		git_index_entry moved;
		struct stat st;
		char *path;

		if (e->mode != GIT_FILEMODE_COMMIT || git_index_entry_stage(e))
			continue;
		path = al_strdup(e->path); /* the entry, path and all, goes when replaced */
		moved = *e;
		moved.path = path;
		if (lstat(path, &st) < 0 && errno == ENOENT) {
			++*staged;
			rc = git_index_remove_bypath(index, path);
			i--; /* the next entry took its place */
		} else {
			links++;
			if (git_repository_open(&sub, path) == 0 &&
			    git_reference_name_to_id(&moved.id, sub, "HEAD") == 0 &&
			    !git_oid_equal(&moved.id, &e->id)) {
				++*staged;
				rc = git_index_add(index, &moved);
			}
		}
		git_repository_free(sub);
		free(path);
	}
	if (rc == 0) {
		g->gitlinks = links;
		g->gitlinks_known = true;
	}
	return rc;
}

/*
 * git_index_write(), with the file it replaces freed once the next agent
 * has started (al_free_later): the rename then only unlinks the old index.
 * In a repository of 20,000 files freeing its pages is a quarter of the
 * write's time; on a filesystem mounted with `discard`, freeing any index
 * waits for the device (ext4).
 */
static int index_write(git_index *index)
{
	al_free_later(git_index_path(index));
	return git_index_write(index);
}

/* How deep libgit2's status pass goes: its work tree iterator stops there. */
#define SCAN_MAX_DEPTH 100

/*
 * Whether directory `path` (depth `depth`; "" the root) holds, somewhere
 * the status pass goes (not .git, nor an ignored directory, nor a nested
 * repository), a directory SCAN_MAX_DEPTH deep: `path` is then it.
 */
static bool too_deep(git_repository *repo, struct al_strbuf *path, int depth)
{
	DIR *d = opendir(path->len ? path->buf : ".");
	size_t len = path->len;
	struct dirent *de;
	bool found = false;

	while (d && !found && (de = readdir(d))) {
		struct stat st;
		int ignored = 0;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
		    !strcmp(de->d_name, ".git") ||
		    (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN))
			continue;
		al_strbuf_setlen(path, len);
		al_strbuf_addf(path, "%s/", de->d_name);
		if (lstat(path->buf, &st) < 0 || !S_ISDIR(st.st_mode) ||
		    git_ignore_path_is_ignored(&ignored, repo, path->buf) < 0 || ignored)
			continue;
		al_strbuf_adds(path, ".git");
		if (lstat(path->buf, &st) == 0)
			continue; /* a repository of its own */
		al_strbuf_setlen(path, path->len - 4);
		found = depth + 1 >= SCAN_MAX_DEPTH || too_deep(repo, path, depth + 1);
	}
	if (d)
		closedir(d);
	if (!found)
		al_strbuf_setlen(path, len);
	return found;
}

/*
 * The status pass failed: where it is for want of depth, says so and what
 * to do in libgit2's error, which is what the commit reports.
 */
static void scan_failed(git_repository *repo)
{
	const git_error *e = git_error_last();
	struct al_strbuf path = AL_STRBUF_INIT;

	if (e && e->message && strstr(e->message, "nesting too deep") &&
	    too_deep(repo, &path, 0)) {
		char *slash = path.buf;

		for (int i = 0; i < 3 && slash; i++) /* its first three directories */
			slash = strchr(slash + 1, '/');
		git_error_set(GIT_ERROR_FILESYSTEM, "'%.*s…' holds directories more than %d "
			      "deep, and libgit2, which ailoop stages with, reads no deeper: move "
			      "them higher up or ignore them (.gitignore)",
			      slash ? (int)(slash - path.buf + 1) : (int)path.len, path.buf,
			      SCAN_MAX_DEPTH);
	}
	al_strbuf_release(&path);
}

/*
 * Brings the index in line with the work tree. ailoop's own files are
 * staged first and the index written, so that the status pass that finds
 * everything else (what agents changed) sees them as unchanged and does not
 * hash them again: libgit2 re-hashes every file newer than the index.
 */
static int stage_changes(struct al_git *g, git_index *index, const char *own_dir,
			 size_t *staged)
{
	git_repository *repo = g->repo;
	git_status_options opts;
	git_status_list *list = NULL;
	char **only = NULL;
	size_t nonly = 0;
	int rc = 0;

	if (!own_dir && (rc = al_git_runs_as_head(g)) < 0)
		return rc;
	if (own_dir && ((rc = al_git_own_from_head(g, own_dir)) < 0 ||
			(rc = stage_own_files(g, index, own_dir)) < 0 ||
			(rc = index_write(index)) < 0))
		return rc;
	*staged = 0;
	git_status_options_init(&opts, GIT_STATUS_OPTIONS_VERSION);
	opts.show = GIT_STATUS_SHOW_WORKDIR_ONLY;
	opts.flags = GIT_STATUS_OPT_INCLUDE_UNTRACKED | GIT_STATUS_OPT_RECURSE_UNTRACKED_DIRS |
		     GIT_STATUS_OPT_EXCLUDE_SUBMODULES;
	if (al_git_siblings_left()) { /* a shared parallel child: its siblings' files are theirs */
		al_git_siblings_paths(index, &only, &nonly);
		opts.pathspec.strings = only;
		opts.pathspec.count = nonly;
		opts.flags |= GIT_STATUS_OPT_DISABLE_PATHSPEC_MATCH; /* paths, not patterns */
	}
	rc = (nonly || !al_git_siblings_left()) ? git_status_list_new(&list, repo, &opts) : 0;
	al_strv_free(only, nonly);
	if (rc < 0) {
		scan_failed(repo);
		return rc;
	}
	for (size_t i = 0; list && i < git_status_list_entrycount(list) && rc == 0; i++) {
		const git_status_entry *e = git_status_byindex(list, i);
		const git_diff_delta *d = e->index_to_workdir;
		const char *path;

		if (!d)
			continue;
		path = d->new_file.path ? d->new_file.path : d->old_file.path;
		if (al_git_unrecorded(path) || another_runs(path, own_dir) ||
		    al_git_sparse(index, path))
			continue;
		++*staged;
		if (e->status & GIT_STATUS_WT_DELETED)
			rc = al_git_own_gone(g, index, path, own_dir);
		else if (al_git_own_tampered(index, path, own_dir))
			rc = al_git_own_replaced(g, index, path, own_dir);
		else if (al_starts_with(path, ".ai-loop/runs/"))
			rc = al_git_add_own_file(g, index, path);
		else if (al_ends_with(path, "/")) /* only a repository is listed as a directory */
			rc = add_nested_repo(g, index, path);
		else
			rc = git_index_add_bypath(index, path);
	}
	git_status_list_free(list);
	return rc < 0 ? rc : stage_gitlinks(g, index, staged);
}

/*
 * Whether a changed .gitignore can only ignore more than it did at the
 * last commit: lines added at its end, none a negation ("!"), to the text
 * the index holds (to nothing, for a file that is not there and not
 * ignored itself: a file that is not ignored is in every commit). More
 * ignored changes only files that were not in the last commit, so new
 * since then, so among the paths the watch reports: staging those as
 * usual is what a full scan would do. A rule dropped or changed could
 * un-ignore a file that did not change, which only a full scan finds.
 */
static bool ignores_only_more(git_repository *repo, git_index *index, const char *path)
{
	const git_index_entry *e = git_index_get_bypath(index, path, 0);
	struct al_strbuf now = AL_STRBUF_INIT;
	git_blob *blob = NULL;
	const char *old = "";
	size_t len = 0;
	int ignored = 0;
	bool more = false;

	if (e ? git_blob_lookup(&blob, repo, &e->id) < 0
	      : git_ignore_path_is_ignored(&ignored, repo, path) < 0 || ignored)
		return false;
	if (blob) {
		old = git_blob_rawcontent(blob);
		len = (size_t)git_blob_rawsize(blob);
	}
	if (al_strbuf_read_file(&now, path, 0) == 0 && now.len >= len && !memcmp(now.buf, old, len) &&
	    (!len || old[len - 1] == '\n')) {
		more = true;
		for (const char *p = now.buf + len; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
			if (*p == '!')
				more = false;
	}
	al_strbuf_release(&now);
	git_blob_free(blob);
	return more;
}

/*
 * Whether a directory on the way to `path` is a symbolic link (or no
 * directory at all): what lies there is not in the work tree, as git
 * sees it, though lstat() finds it through the link. `*checked` is the
 * last directory found free of them, so that the sorted paths of one
 * directory cost one walk (the caller frees it).
 */
bool al_git_beyond_link(const char *path, char **checked)
{
	const char *slash = strrchr(path, '/');
	size_t len = slash ? (size_t)(slash - path) : 0, from = 0;
	struct stat st;
	bool link;
	char *dir;

	if (!len)
		return false;
	if (*checked) { /* the same directory, or one below it: what it checked holds */
		size_t have = strlen(*checked);

		if (have == len && !strncmp(*checked, path, len))
			return false;
		if (have < len && !strncmp(*checked, path, have) && path[have] == '/')
			from = have + 1;
	}
	dir = al_strndup(path, len);
	for (char *p = strchr(dir + from, '/');; p = strchr(p + 1, '/')) {
		if (p)
			*p = '\0'; /* each directory on the way, then `dir` itself */
		link = lstat(dir, &st) < 0 || !S_ISDIR(st.st_mode);
		if (link || !p)
			break;
		*p = '/';
	}
	if (link) {
		free(dir);
		return true;
	}
	free(*checked);
	*checked = dir;
	return false;
}

/*
 * The watched way (watch.h): only the paths the watch saw change are
 * staged, each as the status pass would: gone (a file, or a directory and
 * all below it) is removed; a file (or symbolic link) is added if tracked
 * or not ignored, after any directory it replaced; a directory replaces a
 * file, its contents coming as paths of their own; a path beyond a
 * symbolic link (a directory replaced by a link) is gone. A file of the
 * run in `own_dir` is added whatever the ignore rules say, as
 * stage_own_files() adds it. Anything unusual (a .gitignore that may
 * ignore less, an error) fails, and the full scan follows.
 */
static int stage_path(struct al_git *g, git_index *index, const char *own_dir, const char *path,
		      char **checked)
{
	const git_index_entry *e = git_index_get_bypath(index, path, 0);
	bool tracked = e != NULL, gitlink = e && e->mode == GIT_FILEMODE_COMMIT;
	const char *base = strrchr(path, '/');
	char *dir = al_xprintf("%s/", path);
	struct stat st;
	size_t pos;
	int ignored = 0, rc = 0;
	bool gone;

	base = base ? base + 1 : path;
	if (al_git_unrecorded(path) || gitlink || another_runs(path, own_dir) ||
	    al_git_sparse(index, path) || (e && (e->flags & GIT_INDEX_ENTRY_VALID))) {
		/*
		 * not recorded (or not this run's, or left out by a sparse
		 * checkout, or marked `git update-index --assume-unchanged`,
		 * which git add and the status pass leave as the index has
		 * it); a gitlink: stage_gitlinks() reads its HEAD
		 */
	} else if (!strcmp(base, ".gitignore") && !ignores_only_more(g->repo, index, path)) {
		rc = -1; /* what is ignored changed: only a full scan knows what that adds */
	} else if (al_git_own_tampered(index, path, own_dir)) {
		rc = al_git_own_replaced(g, index, path, own_dir);
	} else if ((gone = lstat(path, &st) < 0) && errno != ENOENT && errno != ENOTDIR) {
		rc = -1;
	} else if (gone || al_git_beyond_link(path, checked) ||
		   !(S_ISREG(st.st_mode) || S_ISLNK(st.st_mode) || S_ISDIR(st.st_mode))) {
		/*
		 * gone, or beyond a symbolic link; or a FIFO, a socket, a
		 * device: git records none (and a FIFO's open waits)
		 */
		if (gone)
			rc = al_git_own_gone(g, index, path, own_dir);
		else if (!tracked || (rc = git_index_remove_bypath(index, path)) == 0)
			rc = git_index_remove_directory(index, path, 0);
	} else if (S_ISDIR(st.st_mode)) {
		if (tracked)
			rc = git_index_remove_bypath(index, path);
	} else {
		bool own = own_dir && S_ISREG(st.st_mode) && al_git_below(path, own_dir);

		if (git_index_find_prefix(&pos, index, dir) == 0)
			rc = git_index_remove_directory(index, path, 0);
		if (rc == 0 && !tracked && !own)
			rc = git_ignore_path_is_ignored(&ignored, g->repo, path);
		if (rc == 0 && (tracked || own || !ignored)) {
			if (S_ISREG(st.st_mode) && st.st_nlink > 1 && !own)
				rc = -1; /* a hard link: a write through its other name went unseen */
			else if (!al_starts_with(path, ".ai-loop/runs/"))
				rc = al_git_add_file(g, index, path, &st);
			else if (stat_differs(git_index_get_bypath(index, path, 0), &st))
				rc = al_git_add_own_file(g, index, path);
		}
	}
	free(dir);
	return rc;
}

/* Nested repositories left out for want of a commit that have one now. */
static int stage_skipped(struct al_git *g, git_index *index, size_t *staged)
{
	int rc = 0;

	for (size_t i = 0; i < g->nskipped && rc == 0; i++) {
		git_repository *sub = NULL;
		git_oid head;

		if (!git_index_get_bypath(index, g->skipped[i], 0) &&
		    git_repository_open(&sub, g->skipped[i]) == 0 &&
		    git_reference_name_to_id(&head, sub, "HEAD") == 0) {
			++*staged;
			rc = git_index_add_bypath(index, g->skipped[i]);
		}
		git_repository_free(sub);
	}
	return rc;
}

/*
 * The run's own files come in the watch's list like any other (its
 * directories are watched whatever is ignored: watch_skip), so a commit
 * costs what changed, not a walk of every node's files the run has.
 * *beside: how many entries were staged beyond the paths' own (nested
 * repositories', whose HEAD moved without a file of theirs changing).
 */
static int stage_paths(struct al_git *g, git_index *index, const char *own_dir, char **paths,
		       size_t n, size_t *beside)
{
	char *checked = NULL; /* beyond_link()'s last directory */
	int rc = 0;

	*beside = 0;
	for (size_t i = 0; i < n && rc == 0; i++)
		rc = stage_path(g, index, own_dir, paths[i], &checked);
	free(checked);
	if (rc == 0)
		rc = stage_skipped(g, index, beside);
	/*
	 * The index is as the last staging left it (watch_changes), which
	 * counted its nested repositories, and a path staged from the watch
	 * never adds one: with none, there is no walk of every entry to do.
	 */
	if (rc < 0 || (g->gitlinks_known && !g->gitlinks && !*beside))
		return rc;
	return stage_gitlinks(g, index, beside);
}
/* How a commit staged, or made its tree, on stderr with AILOOP_WATCH_TRACE (test builds only). */
void al_git_trace(const char *what, const char *how)
{
#ifdef AILOOP_TEST_HOOKS
	if (getenv("AILOOP_WATCH_TRACE"))
		fprintf(stderr, "ailoop: %s: %s\n", what, how);
#else
	(void)what;
	(void)how;
#endif
}

/*
 * stage_paths() of what the watch saw, or stage_changes(), written to the
 * index. The work tree may change under a full scan: an agent of a
 * parallel sibling renames its temporary file away, or rewrites a file,
 * between the status pass that lists a file and the read that hashes it.
 * That is no error of the run: the pass starts again from the index on
 * disk, a little later, a few times.
 */
int al_git_stage_all(struct al_git *g, git_index *index, const char *own_dir, bool head_ours)
{
	size_t staged = 1, beside = 0, n;
	char **paths;
	bool reread = false, kept;
	int rc = -1;

	al_git_staged_drop(g);
	if (al_git_watch_changes(g, index, head_ours, &paths, &n, &kept)) {
		/* kept: the file holds what memory does, bar stat data */
		rc = kept ? 0 : git_index_read(index, false);
		if (rc == 0)
			rc = stage_paths(g, index, own_dir, paths, n, &beside);
		if (rc == 0)
			rc = index_write(index);
		if (rc == 0 && !beside) { /* every change is at one of them: the tree can follow */
			g->staged = paths;
			g->nstaged = n;
		} else {
			al_strv_free(paths, n);
		}
		al_git_prestage_drop(g); /* staged, or left to the scan */
		if (rc == 0) {
			al_git_index_left(g, index);
			al_rewritten_clear();
			al_git_trace("staging", "watched");
			return 0;
		}
		reread = true; /* the scan starts from the index on disk */
	}
	al_git_trace("staging", "full scan");
	for (int attempt = 0; attempt < 6 && rc < 0; attempt++) {
		if (attempt)
			usleep(10000u << attempt); /* 20 ms, doubling: 0.62 s in all */
		rc = git_index_read(index, attempt > 0 || reread);
		/*
		 * A new watch, before the scan, for the next commit, where there
		 * is none or the old one left out a directory it would not now
		 * (an ignore rule dropped, a file the index just read tracked
		 * below it).
		 */
		if (attempt == 0 && !g->watch_off && (!g->watch || !al_watch_skips_hold(g->watch)))
			al_git_watch_start(g);
		if (rc == 0)
			rc = stage_changes(g, index, own_dir, &staged);
		if (rc == 0 && staged)
			rc = index_write(index);
	}
	if (rc == 0) {
		al_git_index_left(g, index);
		al_rewritten_clear(); /* staged: their index entries hold what they hold */
	}
	return rc;
}
