#ifndef AILOOP_PROC_H
#define AILOOP_PROC_H

#include "ailoop/base/strbuf.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * Agents and command sensors as real subprocesses. Each child is started
 * with posix_spawnp in a session (so a process group) of its own, with no
 * controlling terminal, its stdin, stdout and stderr through pipes that
 * are read with poll(). A deadline on the
 * monotonic clock sends SIGTERM to the whole group, then SIGKILL after the
 * grace period; an interrupt (see signals.h) does the same to every child,
 * a second one kills at once, and one that came before the call starts
 * none. When a child's main process exits, whatever it left running in its
 * group is killed, and once all have exited so is whatever they detached
 * from their groups (ailoop is a child subreaper), so no agent outlives
 * its step and nothing writes to the tree while ailoop commits. Children
 * are always reaped.
 */
#define AL_PROC_OUT_MAX (16u << 20) /* stdout kept in memory */
#define AL_PROC_LOG_MAX (1u << 20)  /* tail of stdout+stderr kept for logs/ */
#define AL_PROC_GRACE_MS 5000

struct al_proc_spec {
	const char *name;        /* what it is, e.g. "actuator" (crash points) */
	const char *const *argv; /* argv[0] is looked up in PATH */
	const char *const *env;  /* "NAME=value" set on top of the environment */
	const char *cwd;         /* where it runs; NULL: ailoop's own directory */
	const char *input;       /* written to stdin; NULL means /dev/null */
	size_t input_len;
	int64_t deadline_ms;     /* on al_now_ms()'s clock; 0 = none */
	/*
	 * With `started` set (a job step that may wait in a queue first, and
	 * writes that file as it starts), `timeout_ms` counts from when the
	 * file appears; deadline_ms only caps it.
	 */
	const char *started;
	int64_t timeout_ms;
	int grace_ms;            /* SIGTERM to SIGKILL; 0 = AL_PROC_GRACE_MS */
	/* called about once a second while waiting, e.g. for a live status line */
	void (*tick)(void *data);
	void *tick_data;
	/*
	 * A file that holds this process's agent key ("key <hex>", which the
	 * children get as AILOOP_AGENT_KEY) and, while the children run,
	 * "pid start-time" of each (start time: field 22 of /proc/<pid>/stat),
	 * so that after ailoop is killed a resume stops its agents and no
	 * other process. Only the first spec's is used; NULL: none.
	 */
	const char *record;
	/*
	 * Runs though ailoop was interrupted already (a hook at the run's
	 * end, the run paused by Ctrl-C or SIGTERM): only a further signal
	 * stops it. Read from the first spec.
	 */
	bool after_interrupt;
};

struct al_proc_result {
	int exit_code;        /* exit status, or 128 + the signal that ended it */
	bool timed_out;       /* the deadline expired and the group was stopped */
	bool interrupted;     /* stopped because ailoop was interrupted */
	int64_t duration_ms;
	struct al_strbuf out; /* stdout, its first AL_PROC_OUT_MAX bytes */
	bool out_truncated;
	struct al_strbuf log; /* the last AL_PROC_LOG_MAX bytes of stdout+stderr */
	bool log_truncated;
	/*
	 * Processes left running out of the child's process group (setsid),
	 * killed before the call returned; named in `log`. Counted in the
	 * first result of a batch, whichever child left them.
	 */
	int strays;
};

/*
 * Waits (at most 2 s) until nothing is left of a killed process group.
 * ailoop is a child subreaper, so the group's orphans become its children
 * as their parents die, and are reaped here rather than left to a PID 1
 * that may not reap.
 */
void al_proc_reap_group(pid_t pgid);

#define AL_PROC_RESULT_INIT { 0, false, false, 0, AL_STRBUF_INIT, false, AL_STRBUF_INIT, false, 0 }

/*
 * Runs `n` children at once and waits for all of them; `results` are
 * initialised here (pass fresh ones, release them after). A program that
 * cannot be found ends with exit code 127 and a note in its log, as in a
 * shell. Returns 0, AL_EINTR if an interrupt stopped them (results are
 * filled in either way), or AL_ERROR if a child could not be started.
 */
int al_proc_run_all(const struct al_proc_spec *specs, struct al_proc_result *results, size_t n);
int al_proc_run(const struct al_proc_spec *spec, struct al_proc_result *result);
/*
 * Work for the waits: while children run, `work` is called between looks
 * at them whenever nothing of theirs is ready, one short piece at a time,
 * until it returns false (it is called afresh, `fresh` true, for each
 * batch). It must start no process of its own. NULL: none.
 */
void al_proc_set_idle(bool (*work)(void *arg, bool fresh), void *arg);
void al_proc_result_release(struct al_proc_result *r);

/* True if `prog` names an executable, directly or through PATH. */
bool al_proc_in_path(const char *prog);
/* Its path, the way execvp would find it, or NULL. Caller frees. */
char *al_proc_find(const char *prog);

/*
 * Kills (SIGKILL) the children a killed ailoop left running, as `record`
 * (see al_proc_spec) lists them: each one still alive with the start time
 * recorded, whatever is below it, and the processes whose environment
 * holds `entry` ("AILOOP_RUN_DIR=/…") and either are in the process group
 * of one recorded or hold the recorded agent key (an agent started just
 * before ailoop was killed, its pid not written yet). They must not go on
 * editing the tree while the run is resumed; no other process is
 * touched. Waits until they are gone, then removes `record`. Returns how
 * many were found.
 */
int al_proc_kill_recorded(const char *record, const char *entry);

/* Whether any process has `path` open (a lock file being written). */
bool al_proc_file_in_use(const char *path);
/* Removes `path` (a lock file a kill or a restart left) if no process has it open. */
bool al_proc_remove_unheld(const char *path);

#endif
