#ifndef AILOOP_CONDITION_H
#define AILOOP_CONDITION_H

#include "ailoop/base/paths.h"
#include "ailoop/model/check.h"

#include <pcre2.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Conditions of conditional and loop nodes: checks of working memory,
 * sensor results, files or a command's exit status, combined with all,
 * any and not.
 */
enum al_cond_kind { AL_COND_CHECK, AL_COND_ALL, AL_COND_ANY, AL_COND_NOT };

enum al_cond_type {
	AL_COND_OBSERVATION, /* observation_check: a working memory key */
	AL_COND_TEST_RESULT, /* a sensor's status or metric */
	AL_COND_FILE_EXISTS, /* a path glob */
	AL_COND_COMMAND,     /* command / custom: exit status 0 is true */
};

enum al_op {
	AL_OP_EQUALS, AL_OP_NOT_EQUALS, AL_OP_CONTAINS, AL_OP_NOT_CONTAINS,
	AL_OP_GREATER_THAN, AL_OP_LESS_THAN, AL_OP_GREATER_OR_EQUAL, AL_OP_LESS_OR_EQUAL,
	AL_OP_MATCHES_REGEX, AL_OP_EXISTS, AL_OP_NOT_EXISTS,
};

struct al_condition {
	enum al_cond_kind kind;
	struct al_pos pos;
	/* AL_COND_CHECK */
	enum al_cond_type type;
	enum al_op op;
	const char *key;
	const char *value;      /* the text of any scalar, NULL if absent */
	const char *path;       /* file_exists */
	const char **argv;      /* command as a list (NULL-terminated) */
	const char *expression; /* command as a string: sh -c */
	pcre2_code *re;         /* matches_regex, compiled at load */
	int cache_ttl_seconds;  /* default 300, 0 disables */
	/* all / any / not */
	struct al_condition **subs;
	size_t nsubs;
};

#define AL_COND_DEFAULT_TTL 300

extern const char *const al_op_names[11];
extern const char *const al_cond_type_names[5];

/* Reads a condition; problems go to `c`. Returns NULL if it had errors. */
struct al_condition *al_condition_parse(struct al_check *c, const struct al_val *v);
void al_condition_free(struct al_condition *cond);

/* Writes a one-line rendering ("tests.status equals passing"). */
struct al_strbuf;
void al_condition_describe(const struct al_condition *cond, struct al_strbuf *out);

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
