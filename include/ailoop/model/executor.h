#ifndef AILOOP_EXECUTOR_H
#define AILOOP_EXECUTOR_H

#include "ailoop/model/check.h"

#include <stdbool.h>

/*
 * A node's `executor:` and `slurm:` settings as the flow gives them
 * (proc/slurm.h starts the job steps). `executor: slurm`: the agents of a subtree started through `srun`, each
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

#endif
