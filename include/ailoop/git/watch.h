#ifndef AILOOP_WATCH_H
#define AILOOP_WATCH_H

#include <stdbool.h>
#include <stddef.h>

/*
 * What changed in the work tree (the current directory) since the last
 * look, known from inotify instead of a scan of every file: the idea of
 * git's fsmonitor. Every directory is watched but .git, and those `kind`
 * leaves out (ignored ones); of a repository of its own, only its ".git"
 * entry. A directory created (or moved in) while watched is watched in
 * turn and everything in it reported.
 *
 * The watch can stop being trusted: a queue overflow, a watch it could not
 * add (the limit reached), a directory moved away (the paths its watches
 * stand for are stale), a repository appearing in the tree or a nested
 * one's ".git" going, a directory
 * made on a filesystem other hosts may write to, any error.
 * al_watch_take() then fails, and the caller scans the whole tree instead
 * (and starts a new watch).
 */
struct al_watch;

/* What the directory `rel` (relative, no final slash) is to the watch. */
enum al_watch_kind {
	AL_WATCH_DIR,  /* watched, and what is below it */
	AL_WATCH_SKIP, /* left unwatched, and what is below it */
	AL_WATCH_REPO, /* a repository of its own: only its ".git" entry is watched */
};
typedef enum al_watch_kind (*al_watch_kind_fn)(const char *rel, void *data);

/*
 * Starts watching; NULL (errno set) if it cannot: no inotify, the watch
 * limit reached, an unreadable directory, a directory on a filesystem
 * other hosts may write to (EREMOTE: their changes raise no event here). The test hook
 * AILOOP_WATCH_MAX_EVENTS=N (test builds only) makes more than N events
 * between two looks count as an overflow, and AILOOP_WATCH_MAX_DIRS=N a
 * watch limit of N directories (=+N: N more than the watch started with).
 */
struct al_watch *al_watch_start(al_watch_kind_fn kind, void *data);
/*
 * The relative paths that changed since the last call (or the start),
 * sorted, each once, into *paths (free with al_strv_free); a path may be a
 * file, a directory created or removed, or gone. With `late`, also those
 * reported since the last al_watch_peek() (all of them if none came
 * since the last take): what changed again after a peek saw it. -1 if
 * the watch cannot be trusted (it stays so).
 */
int al_watch_take(struct al_watch *w, char ***paths, size_t *n, char ***late, size_t *nlate);
/*
 * The paths reported since the last peek or take, sorted, each once (a
 * copy: the next take returns them too). -1 if the watch cannot be trusted.
 */
int al_watch_peek(struct al_watch *w, char ***paths, size_t *n);
/*
 * Whether every directory the watch left out would be left out now: an
 * ignore rule dropped, a file tracked below one, make a new watch due.
 */
bool al_watch_skips_hold(struct al_watch *w);
/*
 * Removes every watch, and the watch is not trusted from now on. The
 * kernel frees them while the caller goes on; closing an instance that
 * still has them waits for that (a grace period of the kernel's, 0.1 to
 * 20 ms), closing one released a few milliseconds before does not.
 */
void al_watch_release(struct al_watch *w);
/* Closes the watch (only this process's descriptor: a forked child's copy leaves the parent's watch alone). */
void al_watch_free(struct al_watch *w);

#endif
