#ifndef AILOOP_CONDITION_EVAL_H
#define AILOOP_CONDITION_EVAL_H

#include "ailoop/base/paths.h"
#include "ailoop/model/condition.h"

#include <stdbool.h>
#include <stdint.h>

/*
 * Evaluating a condition at run time. It reads working memory
 * (observation_check; test_result through the keys sensors write,
 * sensors.<name>.status and sensors.<name>.<metric>), the work tree
 * (file_exists: a glob relative to the current directory, the
 * repository root) and commands (exit status 0 is true), which get the
 * run's data only through their environment.
 */
struct al_memory;
struct al_cond_cache;

struct al_cond_env {
	struct al_memory *memory;
	const char *const *envp;  /* NAME=value for commands (AILOOP_RUN_DIR, …); may be NULL */
	int64_t deadline_ms;      /* for commands, on al_now_ms()'s clock; 0 = none */
	const char *record;       /* for commands: al_proc_spec.record (may be NULL) */
	/* caching (SPEC §3.2); cache NULL = none */
	struct al_cond_cache *cache;
	const char *node_path;    /* the node whose condition it is */
	const char *tree;         /* the work tree's identity now (HEAD's tree id) */
	/*
	 * Optional: when `lookup` is set, memory is read through it (and its
	 * version through `version`, which may be NULL: always 0) instead of
	 * `memory`, e.g. by tests and benchmarks without a run.
	 */
	const char *(*lookup)(void *data, const char *key);
	uint64_t (*version)(void *data);
	void *lookup_data;
};

/*
 * Sets *result. Returns 0, AL_EINTR if ailoop was interrupted while a
 * command ran, AL_ETIMEOUT if a command was stopped at `deadline_ms` (the
 * node's time is up: neither true nor false), or another error (a command
 * that could not start) with a message. all / any stop at the first check
 * that decides them. A missing key is false for every operator but
 * not_exists. A memory check allocates nothing (a regex match its match
 * data).
 *
 * Only command checks are cached (they are what costs): per (node_path,
 * the check's position and text), for its cache_ttl_seconds of wall-clock
 * time (0: never), and used only while `tree` and the memory's version are
 * what they were when it ran; with no `cache` or no `tree`, nothing is.
 * Memory checks are as cheap as a cache lookup, and file_exists is not
 * cached because files git ignores do not change the tree's identity.
 */
int al_condition_eval(const struct al_condition *cond, const struct al_cond_env *env,
		      bool *result);

/*
 * The cache file of a run (<run-dir>/conditions.jsonl), loaded once here;
 * each new result is then appended as one JSON line (never rewritten), the
 * last line of a check wins, a damaged line is ignored. A missing file is
 * an empty cache (created at the first result), and so is a symbolic link
 * in its place, which is never written through; one that cannot be read or
 * is not a regular file is an error. Not for use by several threads.
 */
/* (AL_COND_CACHE_FILE: base/paths.h) */

int al_cond_cache_open(struct al_cond_cache **out, const char *path);
void al_cond_cache_free(struct al_cond_cache *cache);

#endif
