#ifndef AILOOP_PROC_INT_H
#define AILOOP_PROC_INT_H

/*
 * What the files of proc share, and no one else: proc.c starts a process,
 * proc_wait.c runs a batch of them to their end (the wait loop and its
 * idle work), proc_sweep.c finds what they left (strays, the record of the
 * agents for a resume after a kill, files still held open).
 */
#include "ailoop/base/strbuf.h"
#include "ailoop/proc/proc.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <unistd.h>

struct child {
	const struct al_proc_spec *spec;
	struct al_proc_result *res;
	pid_t pid;
	int pidfd;           /* -1: poll waitid() in slices instead */
	int out_fd, err_fd, in_fd;
	size_t in_off;
	bool exited;         /* main process is a zombie, not yet reaped */
	bool done;           /* reaped, pipes closed */
	int64_t start;
	int64_t deadline;    /* when it is stopped; 0 = none (yet) */
	bool started;        /* spec->started seen (or none to wait for) */
	int64_t kill_at;     /* when SIGTERM turns into SIGKILL; 0 = not pending */
	bool killed;         /* SIGKILL sent: the grace is over */
	int64_t drain_until; /* after exit: stop waiting for pipes held by strays */
};

static inline void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* (proc.c) Starts `c`; a program that cannot start is a done child with exit 127. */
int proc_spawn(struct child *c);

#define KEY_VAR "AILOOP_AGENT_KEY"
/* (proc_sweep.c) "AILOOP_AGENT_KEY=<hex>", in the environment of every agent this process starts. */
const char *proc_agent_key(void);
/* (proc_sweep.c) Notes the children ailoop has before it starts any agent: none is a stray. */
void proc_note_foreign(void);
/* (proc_sweep.c) Kills what the exited agents `cs` left running; how many, each named in `log`. */
int proc_kill_strays(const struct child *cs, size_t n, struct al_strbuf *log);
/* (proc_sweep.c) Writes the agents' record at `path` (the key alone while n is 0). */
void proc_record(const char *path, const struct child *cs, size_t n);

#endif
