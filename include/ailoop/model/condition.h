#ifndef AILOOP_CONDITION_H
#define AILOOP_CONDITION_H

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

/* (evaluated at run time by exec/condition_eval.h) */

#endif
