#include "ailoop/git/watch.h"
#include "ailoop/base/fsutil.h"
#include "ailoop/base/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#define WATCH_MASK                                                                         \
	(IN_CREATE | IN_DELETE | IN_MODIFY | IN_MOVED_FROM | IN_MOVED_TO | IN_ATTRIB |     \
	 IN_CLOSE_WRITE | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR | IN_DONT_FOLLOW |   \
	 IN_EXCL_UNLINK)
/* a nested repository's top directory: only its entries made, removed or moved */
#define REPO_MASK                                                                          \
	(IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF | \
	 IN_ONLYDIR | IN_DONT_FOLLOW | IN_EXCL_UNLINK)

struct al_watch {
	int fd;
	bool broken;           /* no longer trusted */
	char **dirs;           /* by watch descriptor: the directory's relative path */
	bool *repo;            /* by watch descriptor: a nested repository's top */
	size_t ndirs;
	char **skipped;        /* the directories `kind` left out, as they were then */
	size_t nskipped, skipped_alloc;
	char **changed;        /* since the last take, as reported */
	size_t nchanged, changed_alloc;
	size_t peeked;         /* how many of them the last peek returned */
	size_t events, max_events; /* max_events 0: no limit */
	size_t watches, max_watches; /* max_watches 0: the kernel's limit only */
	al_watch_kind_fn kind;
	void *data;
	dev_t local_dev; /* the last device found not to be shared */
	bool local_known;
};

static char *join(const char *dir, const char *name)
{
	return *dir ? al_xprintf("%s/%s", dir, name) : al_strdup(name);
}

static void changed(struct al_watch *w, char *path)
{
	AL_GROW(w->changed, w->nchanged, w->changed_alloc);
	w->changed[w->nchanged++] = path;
}

/*
 * Whether the directory open at `fd` is on a filesystem that other hosts
 * may write to (NFS, a cluster filesystem, FUSE): inotify reports only what
 * this host's processes do there, so the watch cannot be trusted.
 */
static bool on_shared_fs(struct al_watch *w, int fd)
{
	struct stat st;
	struct statfs fs;

	if (fstat(fd, &st) < 0)
		return true;
	if (w->local_known && st.st_dev == w->local_dev)
		return false;
	if (fstatfs(fd, &fs) < 0 || al_fs_type_shared((unsigned long)fs.f_type))
		return true;
	w->local_dev = st.st_dev;
	w->local_known = true;
	return false;
}

/*
 * Watches directory `rel` and those below it; with `report`, each entry
 * found is a change (the directory is new). Marks the watch broken on
 * failure.
 */
static void add_dir(struct al_watch *w, const char *rel, bool report)
{
	enum al_watch_kind kind = *rel ? w->kind(rel, w->data) : AL_WATCH_DIR;
	bool repo = kind == AL_WATCH_REPO;
	DIR *d;
	struct dirent *de;
	int wd;

	if (w->broken)
		return;
	if (repo && report) {
		w->broken = true; /* a repository appeared: the full scan records it */
		return;
	}
	if (kind == AL_WATCH_SKIP) {
		AL_GROW(w->skipped, w->nskipped, w->skipped_alloc);
		w->skipped[w->nskipped++] = al_strdup(rel);
		return;
	}
	if (w->max_watches && w->watches >= w->max_watches) {
		errno = ENOSPC; /* the test hook's watch limit */
		w->broken = true;
		return;
	}
	/*
	 * A nested repository's files are its own (its HEAD is what is
	 * recorded), but its .git going (or coming back) changes what the
	 * directory is: that much of it is watched.
	 */
	wd = inotify_add_watch(w->fd, *rel ? rel : ".", repo ? REPO_MASK : WATCH_MASK);
	if (wd >= 0)
		w->watches++;
	if (wd < 0) {
		/* gone already: its parent reports that; anything else: no trust */
		if (errno != ENOENT && errno != ENOTDIR)
			w->broken = true;
		return;
	}
	if ((size_t)wd >= w->ndirs) {
		size_t n = (size_t)wd * 2 + 16;

		w->dirs = al_realloc(w->dirs, n * sizeof(*w->dirs));
		w->repo = al_realloc(w->repo, n * sizeof(*w->repo));
		memset(w->dirs + w->ndirs, 0, (n - w->ndirs) * sizeof(*w->dirs));
		memset(w->repo + w->ndirs, 0, (n - w->ndirs) * sizeof(*w->repo));
		w->ndirs = n;
	}
	free(w->dirs[wd]);
	w->dirs[wd] = al_strdup(rel);
	w->repo[wd] = repo;
	if (repo)
		return;
	if (!(d = opendir(*rel ? rel : "."))) {
		if (errno != ENOENT && errno != ENOTDIR)
			w->broken = true;
		return;
	}
	if (on_shared_fs(w, dirfd(d))) {
		closedir(d);
		errno = EREMOTE;
		w->broken = true;
		return;
	}
	while ((de = readdir(d)) && !w->broken) {
		char *path;
		bool dir;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (!strcmp(de->d_name, ".git")) { /* git's, not the tree's */
			if (report)
				w->broken = true; /* a repository may have appeared */
			continue;
		}
		if (!report && de->d_type != DT_DIR && de->d_type != DT_UNKNOWN)
			continue; /* a file, and nothing to report: no path to make */
		path = join(rel, de->d_name);
		if (de->d_type == DT_UNKNOWN) {
			struct stat st;

			dir = lstat(path, &st) == 0 && S_ISDIR(st.st_mode);
		} else {
			dir = de->d_type == DT_DIR;
		}
		if (dir)
			add_dir(w, path, report);
		if (report)
			changed(w, path);
		else
			free(path);
	}
	closedir(d);
}

struct al_watch *al_watch_start(al_watch_kind_fn kind, void *data)
{
	struct al_watch *w = al_calloc(1, sizeof(*w));
	int saved;

	w->kind = kind;
	w->data = data;
#ifdef AILOOP_TEST_HOOKS
	{
		const char *v = getenv("AILOOP_WATCH_MAX_EVENTS");

		if (v && *v)
			w->max_events = (size_t)strtoul(v, NULL, 10);
		v = getenv("AILOOP_WATCH_MAX_DIRS"); /* "+N": N more than at the start */
		if (v && *v && *v != '+')
			w->max_watches = (size_t)strtoul(v, NULL, 10);
	}
#endif
	w->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (w->fd < 0) {
		free(w);
		return NULL;
	}
	errno = 0;
	add_dir(w, "", false);
	if (w->broken) {
		saved = errno ? errno : EIO;
		al_watch_free(w);
		errno = saved;
		return NULL;
	}
#ifdef AILOOP_TEST_HOOKS
	{
		const char *v = getenv("AILOOP_WATCH_MAX_DIRS");

		if (v && *v == '+')
			w->max_watches = w->watches + (size_t)strtoul(v + 1, NULL, 10);
	}
#endif
	return w;
}

/* One event of directory `dir`. */
static void event(struct al_watch *w, const struct inotify_event *ev)
{
	const char *dir;

	if (ev->mask & IN_Q_OVERFLOW) {
		w->broken = true;
		return;
	}
	if (ev->mask & IN_IGNORED) { /* the directory is gone: its parent said so */
		if (ev->wd >= 0 && (size_t)ev->wd < w->ndirs && w->dirs[ev->wd]) {
			w->watches--;
			free(w->dirs[ev->wd]);
			w->dirs[ev->wd] = NULL;
		}
		return;
	}
	if (ev->wd < 0 || (size_t)ev->wd >= w->ndirs || !(dir = w->dirs[ev->wd])) {
		w->broken = true;
		return;
	}
	if (ev->mask & IN_MOVE_SELF) {
		/* moved: the paths of its watches (and those below) are stale */
		w->broken = true;
		return;
	}
	if (ev->mask & IN_DELETE_SELF || !ev->len)
		return; /* the parent reports the directory itself */
	if (!strcmp(ev->name, ".git")) {
		w->broken = true; /* a repository appeared or went: the full scan handles it */
		return;
	}
	if (w->repo[ev->wd])
		return; /* a nested repository's own files */
	if ((ev->mask & IN_ISDIR) && (ev->mask & (IN_CREATE | IN_MOVED_TO))) {
		char *path = join(dir, ev->name);

		add_dir(w, path, true);
		changed(w, path);
		return;
	}
	if ((ev->mask & IN_ISDIR) && !(ev->mask & (IN_DELETE | IN_MOVED_FROM)))
		return; /* a directory's own attributes are not recorded */
	changed(w, join(dir, ev->name));
}

bool al_watch_skips_hold(struct al_watch *w)
{
	for (size_t i = 0; i < w->nskipped; i++)
		if (w->kind(w->skipped[i], w->data) != AL_WATCH_SKIP)
			return false;
	return true;
}

/* Reads the events queued so far into w->changed; -1 if the watch is not trusted. */
static int drain(struct al_watch *w)
{
	char buf[64 * 1024] __attribute__((aligned(__alignof__(struct inotify_event))));
	ssize_t len;

	while (!w->broken && (len = read(w->fd, buf, sizeof(buf))) != 0) {
		if (len < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				w->broken = true;
			break;
		}
		for (char *p = buf; p < buf + len && !w->broken;) {
			const struct inotify_event *ev = (const struct inotify_event *)p;

			if (w->max_events && ++w->events > w->max_events)
				w->broken = true; /* the test hook's overflow */
			event(w, ev);
			p += sizeof(*ev) + ev->len;
		}
	}
	return w->broken ? -1 : 0;
}

/* v sorted, each once: the duplicates freed. Returns how many are left. */
static size_t sort_unique(char **v, size_t n)
{
	size_t kept = 0;

	al_strv_sort(v, n);
	for (size_t i = 0; i < n; i++) {
		if (kept && !strcmp(v[kept - 1], v[i]))
			free(v[i]);
		else
			v[kept++] = v[i];
	}
	return kept;
}

/* A sorted copy, each once, of the paths reported since the last peek. */
static void since_peek(struct al_watch *w, char ***paths, size_t *n)
{
	size_t k = w->nchanged - w->peeked;

	*paths = al_calloc(k + 1, sizeof(**paths));
	for (size_t i = 0; i < k; i++)
		(*paths)[i] = al_strdup(w->changed[w->peeked + i]);
	*n = sort_unique(*paths, k);
	w->peeked = w->nchanged;
}

int al_watch_peek(struct al_watch *w, char ***paths, size_t *n)
{
	*paths = NULL;
	*n = 0;
	if (drain(w) < 0)
		return -1;
	since_peek(w, paths, n);
	return 0;
}

int al_watch_take(struct al_watch *w, char ***paths, size_t *n, char ***late, size_t *nlate)
{
	*paths = NULL;
	*n = 0;
	if (late) {
		*late = NULL;
		*nlate = 0;
	}
	if (drain(w) < 0)
		return -1;
	w->events = 0;
	if (late)
		since_peek(w, late, nlate);
	*n = sort_unique(w->changed, w->nchanged);
	*paths = w->changed;
	w->changed = NULL;
	w->nchanged = w->changed_alloc = w->peeked = 0;
	return 0;
}

void al_watch_release(struct al_watch *w)
{
	for (size_t wd = 0; wd < w->ndirs; wd++)
		if (w->dirs[wd])
			inotify_rm_watch(w->fd, (int)wd);
	w->broken = true;
}

void al_watch_free(struct al_watch *w)
{
	if (!w)
		return;
	if (w->fd >= 0)
		close(w->fd);
	al_strv_free(w->dirs, w->ndirs);
	al_strv_free(w->skipped, w->nskipped);
	free(w->repo);
	al_strv_free(w->changed, w->nchanged);
	free(w);
}
