#ifndef AILOOP_SLURM_H
#define AILOOP_SLURM_H

#include "ailoop/model/executor.h"
#include "ailoop/proc/proc.h"

#include <stdbool.h>

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
