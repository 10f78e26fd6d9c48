#ifndef AILOOP_RUN_H
#define AILOOP_RUN_H

#include "ailoop/base/paths.h"
#include "ailoop/store/state.h"

#include <stdbool.h>
#include <stddef.h>

/*
 * A run: its directory .ai-loop/runs/run_YYYYMMDD_NNN/, its run-state.md,
 * its lock and its event log. Every node's artifacts live in
 * nodes/<node-path>/ below the run directory.
 */
/* (AL_RUNS_DIR: base/paths.h) */

struct al_run {
	struct al_run_state st; /* what run-state.md says */
	char *dir;              /* .ai-loop/runs/<id>, relative to the root */
	char *abs_dir;          /* the same, absolute, for agents' environment */
	char *state_path;
	char *events_path;
	int lock_fd;
	int events_fd;          /* events.jsonl, open for appending once used */
	/*
	 * In a parallel child process: run-state.md is the parent process's
	 * (its stack stops at the parallel node), so saving, entering and
	 * leaving write nothing.
	 */
	bool forked;
};

/*
 * Creates a new run directory with the next free id for today, takes its
 * lock and writes its run-state.md. The other fields of `st` (task, flow, branch…) are
 * copied in; status starts as running. An id is free if no directory of
 * the runs has it, nor any of the `ntaken` ids of `taken` (runs elsewhere:
 * on branches not checked out).
 */
int al_run_create(struct al_run **out, const struct al_run_state *st, char *const *taken,
		  size_t ntaken);
/* Opens an existing run by id and reads its state. */
int al_run_open(struct al_run **out, const char *id);
void al_run_free(struct al_run *run);

/*
 * Takes the run's lock (flock on <dir>/lock, holding "pid host"). Returns
 * AL_ELOCKED, naming the holder, if a live ailoop has it; a lock left by a
 * dead process is simply taken over. Held until al_run_free().
 */
int al_run_lock(struct al_run *run);
/* Removes the lock file (at the end of a run) and releases the lock. */
void al_run_unlock(struct al_run *run);
/*
 * Whether the run's lock file, which git does not track, was removed while
 * held: then so were its other untracked files (an agent's `git clean -x`).
 */
bool al_run_files_gone(const struct al_run *run);
/*
 * Who holds the lock of run directory `dir`, or NULL if nobody (or an
 * ailoop of this host that is gone: what it left holding the lock lets go
 * in a moment, and al_run_lock() waits for it). Caller frees.
 */
char *al_run_lock_holder(const char *dir);

/*
 * The work tree's lock: one live ailoop per work tree. `run` and `resume`
 * take it before they look at anything (flock on <git-dir>/ailoop.lock,
 * which is never committed and exists before .ai-loop/runs does) and hold
 * it until they end; it dies with a killed process. The file says "ailoop
 * pid N on HOST", and ", run ID" once the run is known. Returns AL_ELOCKED,
 * naming the holder, if a live process has it; *fd is the lock, closed-on-exec.
 */
int al_worktree_lock(int *fd, const char *git_dir);
/* Adds the run's id to what the lock file says of its holder. */
void al_worktree_lock_name(int fd, const char *run_id);
/* Empties the lock file (no stale holder to read) and lets go. fd < 0: nothing. */
void al_worktree_unlock(int fd);

int al_run_save(struct al_run *run);
/* Pushes/pops the execution stack and saves. */
int al_run_enter(struct al_run *run, const char *node_path);
int al_run_leave(struct al_run *run);

/* <dir>/nodes/<node-path>. Caller frees. */
char *al_run_node_dir(const struct al_run *run, const char *node_path);

/*
 * Appends one line to events.jsonl: {"ts":…,"event":type, …} where the rest
 * is built from a jansson pack format ("{s:s, s:i}") and its arguments.
 */
void al_run_event(struct al_run *run, const char *type, const char *fmt, ...);

/* Orders run ids by date, then number: > 0 if `a` is the newer. */
int al_run_id_cmp(const char *a, const char *b);

/* Run ids under .ai-loop/runs, newest first. */
int al_runs_list(char ***ids, size_t *n);
void al_runs_list_free(char **ids, size_t n);

#endif
