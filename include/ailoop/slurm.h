#ifndef AILOOP_SLURM_H
#define AILOOP_SLURM_H

#include "ailoop/check.h"
#include "ailoop/proc.h"

#include <stdbool.h>

/*
 * `executor: slurm`: the agents of a subtree started through `srun`, each
 * as a job step named after its node path, while ailoop stays the one
 * coordinator on this host (state, commits). The step writes its job id
 * to a file in the run directory (logs/slurm/<hash>: "<job id> <node path>
 * <role>"), which `ailoop status` lists and ailoop reads to record the id
 * and to `scancel` a step that outlives its call (pause, timeout, kill).
 */
struct al_slurm {
	bool on;                       /* executor: slurm (else local) */
	const char *partition;         /* NULL: the cluster's default */
	const char *time;              /* Slurm's time format; NULL: from the agent timeout */
	int cpus_per_task;             /* 0: not given */
	const char *mem_per_cpu;       /* e.g. "2G"; NULL: not given */
	const struct al_val *extra_args; /* a sequence of strings, or NULL */
	bool shared_fs;                /* the user says the work tree is shared */
};

/* The `executor:` value; true if it was read. */
bool al_slurm_read_executor(struct al_check *c, const struct al_val *v, struct al_slurm *s);
/* The `slurm:` map over `s` (what it inherits), key by key. */
void al_slurm_read(struct al_check *c, const struct al_val *v, struct al_slurm *s);

/*
 * `argv` as a Slurm job step: `srun --job-name=<job_name> ... --chdir=<cwd>
 * -- sh -c <write the job id to job_file> ailoop-step argv...`. Frees argv.
 */
char **al_slurm_argv(const struct al_slurm *s, char **argv, const char *job_name,
		     int timeout_s, const char *cwd);

/*
 * Whether `dir` can be used by the nodes of the partition: always if
 * shared_fs, or if every node of the partition is this host, or if it is
 * on a network or cluster filesystem. AL_EINVALID with a message if not.
 */
int al_slurm_check_fs(const struct al_slurm *s, const char *dir);

/*
 * Whether Slurm, not the program, ended a step that exited non-zero: a
 * step or job cancelled, preempted, lost with its node, or one that could
 * not be allocated or launched. Its line of the log goes in `why`.
 */
bool al_slurm_failed(const struct al_proc_result *r, char *why, size_t size);

/* The job id in a step's job file, or 0. */
long al_slurm_job_read(const char *file);
/* Cancels job `job` (scancel), waiting for scancel itself only. */
void al_slurm_cancel(long job);
/* Cancels every job whose file is in `dir` (left by a killed ailoop), and removes the files. */
int al_slurm_cancel_left(const char *dir);

#endif
