/*
 * What the watch tells staging (git_stage.c): the paths that changed since
 * the last commit, trusted only while the index, the configuration and the
 * ignore files outside the work tree are as this process left them.
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

/*
 * The watch leaves alone what holds none of a run's files (not_run_files),
 * and ignored directories that hold no tracked file, except the runs',
 * whose files are committed whatever is ignored.
 */
static bool watch_skip(const char *rel, void *data)
{
	struct al_git *g = data;
	git_index *index = NULL;
	char *dir;
	size_t pos;
	int ignored = 0;
	bool skip;

	if (al_starts_with(rel, AL_RUNS_DIR "/"))
		return al_git_not_run_files(rel) || al_git_sibling_dir(rel);
	if (al_git_below(AL_RUNS_DIR, rel))
		return false; /* .ai-loop, .ai-loop/runs: the way to them */
	dir = al_xprintf("%s/", rel);
	skip = git_ignore_path_is_ignored(&ignored, g->repo, dir) == 0 && ignored &&
	       git_repository_index(&index, g->repo) == 0 &&
	       git_index_find_prefix(&pos, index, dir) != 0;
	git_index_free(index);
	free(dir);
	return skip;
}

/* What directory `rel` is to the watch: left out (watch_skip), a nested repository, or watched. */
static enum al_watch_kind watch_kind(const char *rel, void *data)
{
	if (watch_skip(rel, data))
		return AL_WATCH_SKIP;
	return al_git_nested_repo(rel) ? AL_WATCH_REPO : AL_WATCH_DIR;
}

/* Whether a file's stat data says it is as it was (its inode, size and mtime). */
static bool same_file(const struct stat *a, const struct stat *b)
{
	return a->st_ino == b->st_ino && a->st_size == b->st_size &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

/* Whether the index file is as this process last left it. */
static bool index_ours(struct al_git *g, git_index *index)
{
	struct stat st;

	return g->index_known && stat(git_index_path(index), &st) == 0 && same_file(&st, &g->index_st);
}

void al_git_index_left(struct al_git *g, git_index *index)
{
	g->index_known = stat(git_index_path(index), &g->index_st) == 0;
	git_oid_cpy(&g->index_sum, git_index_checksum(index));
}

/*
 * Whether the index file, rewritten since this process left it, holds the
 * entries it left (paths, modes, objects, stages, flags), and the index in
 * memory is still the one it left: what an agent's `git status` does, which
 * rewrites the index with the stat data of the files it found racy. The
 * watch then knows every change since, and the index in memory is the one
 * to stage on. Anything more (an entry added, removed or changed) is left
 * to the full scan.
 */
static bool index_same(struct al_git *g, git_index *index)
{
	size_t n = git_index_entrycount(index);
	git_index *disk = NULL;
	bool same;

	if (!g->index_known || !git_oid_equal(git_index_checksum(index), &g->index_sum) ||
	    git_index_open(&disk, git_index_path(index)) < 0)
		return false;
	same = git_index_entrycount(disk) == n &&
	       git_index_reuc_entrycount(disk) == git_index_reuc_entrycount(index) &&
	       git_index_name_entrycount(disk) == git_index_name_entrycount(index);
	for (size_t i = 0; same && i < n; i++) {
		const git_index_entry *a = git_index_get_byindex(index, i);
		const git_index_entry *b = git_index_get_byindex(disk, i);

		same = a->mode == b->mode && a->flags == b->flags &&
		       (a->flags_extended & GIT_INDEX_ENTRY_EXTENDED_FLAGS) ==
			       (b->flags_extended & GIT_INDEX_ENTRY_EXTENDED_FLAGS) &&
		       git_oid_equal(&a->id, &b->id) && !strcmp(a->path, b->path);
	}
	git_index_free(disk);
	return same;
}

/* The files of g->outside, by index. */
enum { OUT_EXCLUDE, OUT_GLOBAL_IGNORE, OUT_CONFIG, OUT_CONFIG_WORKTREE, OUT_CONFIG_GLOBAL,
       OUT_CONFIG_XDG, OUT_CONFIG_SYSTEM };

/* $XDG_CONFIG_HOME/git/NAME, else ~/.config/git/NAME; NULL if neither is set. */
static char *xdg_git_path(const char *name)
{
	const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");

	if (xdg && *xdg)
		return al_xprintf("%s/git/%s", xdg, name);
	return home && *home ? al_xprintf("%s/.config/git/%s", home, name) : NULL;
}

static void outside_paths(struct al_git *g)
{
	const char *home = getenv("HOME");
	git_buf sys = GIT_BUF_INIT;

	g->outside[OUT_EXCLUDE].path = al_xprintf("%sinfo/exclude", git_repository_commondir(g->repo));
	g->outside[OUT_CONFIG].path = al_xprintf("%sconfig", git_repository_commondir(g->repo));
	g->outside[OUT_CONFIG_WORKTREE].path = al_xprintf("%sconfig.worktree",
							  git_repository_path(g->repo));
	g->outside[OUT_CONFIG_GLOBAL].path = home && *home ? al_xprintf("%s/.gitconfig", home) : NULL;
	g->outside[OUT_CONFIG_XDG].path = xdg_git_path("config");
	g->outside[OUT_CONFIG_SYSTEM].path =
		al_strdup(git_config_find_system(&sys) == 0 ? sys.ptr : "/etc/gitconfig");
	git_buf_dispose(&sys);
	git_error_clear();
}

/*
 * The global ignore file libgit2 reads: core.excludesFile, else git/ignore
 * in $XDG_CONFIG_HOME or ~/.config (NULL if there is no such place).
 */
static char *global_ignore_path(git_repository *repo)
{
	git_config *cfg = NULL;
	git_buf buf = GIT_BUF_INIT;
	char *path;

	if (git_repository_config_snapshot(&cfg, repo) == 0 &&
	    git_config_get_path(&buf, cfg, "core.excludesfile") == 0)
		path = al_strdup(buf.ptr);
	else
		path = xdg_git_path("ignore");
	git_buf_dispose(&buf);
	git_config_free(cfg);
	git_error_clear();
	return path;
}

/* Whether file `f` is not as it was; it remembers it as it is now. */
static bool outside_file_changed(struct outside_file *f)
{
	struct stat st;
	bool there = f->path && stat(f->path, &st) == 0,
	     changed = there != f->there || (there && !same_file(&st, &f->st));

	f->there = there;
	if (there)
		f->st = st;
	return changed;
}

/*
 * libgit2 reads what the configuration says once and keeps it: core.fileMode,
 * core.symlinks, core.ignoreCase for the index, core.excludesFile for the
 * ignore rules, the rest in the repository's cache. An agent's `git config`
 * between two commits must count for the next one, as it does for git.
 */
static void config_reread(struct al_git *g, git_index *index)
{
	git_config *cfg = NULL;

	if (git_repository_config(&cfg, g->repo) == 0)
		git_repository_set_config(g->repo, cfg); /* drops what was read of it */
	git_config_free(cfg);
	git_attr_cache_flush(g->repo);
	git_index_set_caps(index, GIT_INDEX_CAPABILITY_FROM_OWNER);
	free(g->outside[OUT_GLOBAL_IGNORE].path);
	g->outside[OUT_GLOBAL_IGNORE].path = global_ignore_path(g->repo);
	git_error_clear();
}

/*
 * Whether a file outside the work tree that says what is recorded (an
 * ignore file, git's configuration) changed since the last staging; it
 * remembers them as they are now. The watch does not see them: a rule
 * dropped there makes a file that did not change no longer ignored, and
 * the configuration may change how every file is recorded.
 */
static bool outside_changed(struct al_git *g, git_index *index)
{
	bool first = !g->outside_known, config = false, changed = false;

	if (first) {
		outside_paths(g);
		g->outside_known = true;
	}
	for (size_t i = OUT_CONFIG; i < AL_ARRAY_SIZE(g->outside); i++)
		config |= outside_file_changed(&g->outside[i]);
	if (config && !first)
		config_reread(g, index);
	else if (first)
		g->outside[OUT_GLOBAL_IGNORE].path = global_ignore_path(g->repo);
	changed |= outside_file_changed(&g->outside[OUT_EXCLUDE]);
	changed |= outside_file_changed(&g->outside[OUT_GLOBAL_IGNORE]);
	return changed || config;
}

/* A new watch (any old one dropped), or full scans from now on if none can start. */
void al_git_watch_start(struct al_git *g)
{
	al_git_prestage_drop(g); /* kept against the old watch's events */
	al_watch_free(g->watch);
	if (!(g->watch = al_watch_start(watch_kind, g)))
		g->watch_off = true; /* no inotify, or its limit reached: full scans */
	g->watch_pid = getpid();
}

/*
 * What the watch saw change since the last commit, into *paths: true if
 * it can be trusted for this commit — the watch ran since this process's
 * last commit, nothing overflowed, HEAD (`head_ours`) and the index are as
 * this process left them (no parallel sibling, no checkout in between; an
 * index rewritten with the same entries, *kept, counts as left), and no
 * file outside the work tree that says what is recorded (an ignore file,
 * git's configuration) changed.
 * Otherwise the caller scans the whole tree, starting a new watch first,
 * for the next commit.
 */
bool al_git_watch_changes(struct al_git *g, git_index *index, bool head_ours, char ***paths,
			  size_t *n, bool *kept)
{
	bool trusted, excluded = outside_changed(g, index);
	char **late;
	size_t nlate;

	*paths = NULL;
	*n = 0;
	*kept = false;
	if (g->watch_off) {
		al_git_prestage_drop(g);
		return false;
	}
	if (g->watch && g->watch_pid != getpid()) { /* a forked child: its parent's watch */
		al_watch_free(g->watch);
		g->watch = NULL;
	}
	if (g->watch && al_watch_take(g->watch, paths, n, &late, &nlate) == 0) {
		trusted = head_ours && !excluded &&
			  (index_ours(g, index) || (*kept = index_same(g, index)));
		al_git_prestage_settle(g, late, nlate);
		al_strv_free(late, nlate);
		if (trusted)
			return true;
		al_strv_free(*paths, *n); /* the full scan sees it all */
		*paths = NULL;
		*n = 0;
	} else if (g->watch) { /* no longer trusted: a new one, before the scan */
		al_watch_free(g->watch);
		g->watch = NULL;
	}
	al_git_prestage_drop(g); /* the full scan stages every file itself */
	return false;
}

void al_git_watch_off(struct al_git *g)
{
	al_git_prestage_drop(g);
	al_watch_free(g->watch);
	g->watch = NULL;
	g->watch_off = true;
}

void al_git_watch_done(struct al_git *g)
{
	al_git_prestage_drop(g);
	if (g->watch && g->watch_pid == getpid())
		al_watch_release(g->watch); /* closed with the repository, quickly */
}

void al_git_watch_early(struct al_git *g)
{
	if (!g->watch_off && !g->watch)
		al_git_watch_start(g);
}

void al_git_watch_from_clean(struct al_git *g, git_index *index)
{
	if (!g->watch)
		return;
	al_git_index_left(g, index);
	g->gitlinks_known = false; /* read from disk: the first staging counts them */
	outside_changed(g, index); /* as they are now */
	/* nothing staged, nothing changed: the index holds HEAD's tree */
	g->index_commit_known = git_reference_name_to_id(&g->index_commit, g->repo, "HEAD") == 0;
}
