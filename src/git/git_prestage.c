/*
 * Staging ahead. While agents or sensors run, ailoop only waits, and the
 * machine has a core to spare: the files the watch has reported so far
 * (what the last agent changed, what ailoop wrote for the step) are read,
 * filtered and hashed then, and their blobs written, one file between two
 * looks at the children (al_proc_set_idle). The next commit stages such a
 * file from what was kept, the blob's id and the file's stat data, instead
 * of doing all that on the way from a sensor's end to the next agent's
 * start. What was kept counts only if the watch did not report the file
 * again after the look that found it (al_watch_take's `late`) and its stat
 * data is the same: the watch's order of events, not a clock, says what is
 * stale. Nothing here changes the index; a file never staged so leaves a
 * blob nothing names, as an interrupted `git add` does.
 */
#include "git_repo.h"
#include "ailoop/proc/proc.h"
#include "ailoop/base/paths.h"
#include "ailoop/base/strbuf.h"
#include "ailoop/base/util.h"
#include "ailoop/git/watch.h"

#include <git2.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Larger files are staged at the commit, which streams them. */
#define PRESTAGE_MAX ((size_t)4 << 20)

static struct al_git *ahead; /* the repository the waits stage ahead for */

struct al_prestaged {
	char *path;
	git_oid id;
	struct stat st;
};

static void forget(struct al_git *g, const char *path)
{
	for (size_t i = 0; i < g->npre; i++) {
		if (!strcmp(g->pre[i].path, path)) {
			free(g->pre[i].path);
			g->pre[i] = g->pre[--g->npre];
			return;
		}
	}
}

static bool same_stat(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_mode == b->st_mode &&
	       a->st_nlink == b->st_nlink && a->st_size == b->st_size &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
	       a->st_ctim.tv_sec == b->st_ctim.tv_sec && a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

/*
 * Whether `path` is a run's state file: ailoop writes it again at the
 * next phase, always before the next commit, so its blob now is wasted.
 */
static bool state_file(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return al_starts_with(path, AL_RUNS_DIR "/") &&
	       (!strcmp(base, "orchestrator-output.md") || !strcmp(base, "run-state.md"));
}

/*
 * The blob of one file, as the commit would make it: a run's file as it
 * is, any other through the filters `git add` applies; a file the commit
 * would not record (ignored and untracked), one a filter driver's command
 * would have to run for, or anything but a plain file of one name, is
 * left to the commit.
 */
static void prestage_one(struct al_git *g, const char *path)
{
	struct al_strbuf sb = AL_STRBUF_INIT;
	git_buf filtered = GIT_BUF_INIT;
	git_filter_list *fl = NULL;
	git_index *index = NULL;
	const char *data;
	size_t len;
	struct stat st;
	git_oid id;
	int ignored = 0;

	/* (beyond a link an agent made, a file outside the work tree) */
	if (al_git_unrecorded(path) || state_file(path) || lstat(path, &st) < 0 ||
	    !S_ISREG(st.st_mode) || st.st_nlink != 1 || (size_t)st.st_size > PRESTAGE_MAX ||
	    al_git_beyond_link(path, &g->todo_checked))
		return;
	if (!al_starts_with(path, AL_RUNS_DIR "/") &&
	    (git_repository_index(&index, g->repo) < 0 ||
	     (!git_index_get_bypath(index, path, 0) &&
	      (git_ignore_path_is_ignored(&ignored, g->repo, path) < 0 || ignored)) ||
	     git_filter_list_load(&fl, g->repo, NULL, path, GIT_FILTER_TO_ODB, GIT_FILTER_DEFAULT) <
		     0 ||
	     (fl && git_filter_list_contains(fl, AL_GIT_DRIVER_FILTER))))
		goto done;
	if (al_strbuf_read_file(&sb, path, PRESTAGE_MAX) < 0)
		goto done;
	data = sb.buf;
	len = sb.len;
	if (fl) {
		if (git_filter_list_apply_to_buffer(&filtered, fl, sb.buf, sb.len) < 0)
			goto done;
		data = filtered.ptr;
		len = filtered.size;
	}
	if (al_git_write_blob(g, &id, data, len) == 0) {
		AL_GROW(g->pre, g->npre, g->pre_alloc);
		g->pre[g->npre].path = al_strdup(path);
		g->pre[g->npre].id = id;
		g->pre[g->npre++].st = st;
	}
done:
	git_error_clear();
	git_buf_dispose(&filtered);
	git_filter_list_free(fl);
	git_index_free(index);
	al_strbuf_release(&sb);
}

bool al_git_prestage_step(struct al_git *g, bool fresh)
{
	if (fresh) {
		al_strv_free(g->todo, g->ntodo);
		g->todo = NULL;
		g->ntodo = g->todo_next = 0;
		free(g->todo_checked);
		g->todo_checked = NULL;
		/*
		 * Only under the restart mark: a blob written now and torn by a
		 * power loss is one the restart finds and removes, as it does
		 * any loose object written since the last commit.
		 */
		if (!g->watch || g->watch_pid != getpid() || !g->restorable ||
		    al_watch_peek(g->watch, &g->todo, &g->ntodo) < 0)
			return false;
		/* reported again: what was kept of them is stale, staged or not now */
		for (size_t i = 0; i < g->ntodo; i++)
			forget(g, g->todo[i]);
	}
	if (g->todo_next < g->ntodo)
		prestage_one(g, g->todo[g->todo_next++]);
	return g->todo_next < g->ntodo;
}

static int by_path(const void *a, const void *b)
{
	return strcmp(((const struct al_prestaged *)a)->path, ((const struct al_prestaged *)b)->path);
}

void al_git_prestage_settle(struct al_git *g, char **late, size_t nlate)
{
	for (size_t i = 0; i < nlate; i++) {
		const char *base = strrchr(late[i], '/');

		/* what the filters do to every file may have changed */
		if (!strcmp(base ? base + 1 : late[i], ".gitattributes")) {
			al_git_prestage_drop(g);
			return;
		}
		forget(g, late[i]);
	}
	if (g->npre)
		qsort(g->pre, g->npre, sizeof(*g->pre), by_path);
}

bool al_git_prestaged(struct al_git *g, const char *path, const struct stat *st, git_oid *id)
{
	struct al_prestaged key = { .path = (char *)path };
	const struct al_prestaged *p;
	git_odb *odb = NULL;
	bool there;

	if (!g->npre)
		return false;
	p = bsearch(&key, g->pre, g->npre, sizeof(*g->pre), by_path);
	if (!p || !same_stat(&p->st, st))
		return false;
	/*
	 * Nothing names the blob yet: an agent's `git gc --prune=now` while
	 * it ran removes it. Then the commit writes it again.
	 */
	if (git_repository_odb(&odb, g->repo) < 0)
		return false;
	there = git_odb_exists(odb, &p->id);
	git_odb_free(odb);
	if (there)
		*id = p->id;
	return there;
}

void al_git_prestage_drop(struct al_git *g)
{
	for (size_t i = 0; i < g->npre; i++)
		free(g->pre[i].path);
	g->npre = 0;
	al_strv_free(g->todo, g->ntodo);
	g->todo = NULL;
	g->ntodo = g->todo_next = 0;
	free(g->todo_checked);
	g->todo_checked = NULL;
}

void al_git_prestage_free(struct al_git *g)
{
	if (ahead == g)
		al_git_stage_ahead(NULL);
	al_git_prestage_drop(g);
	free(g->pre);
	g->pre = NULL;
	g->pre_alloc = 0;
}

static bool idle(void *arg, bool fresh)
{
	return al_git_prestage_step(arg, fresh);
}

void al_git_stage_ahead(struct al_git *g)
{
	ahead = g;
	al_proc_set_idle(g ? idle : NULL, g);
}
