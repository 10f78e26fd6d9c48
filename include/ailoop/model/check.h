#ifndef AILOOP_CHECK_H
#define AILOOP_CHECK_H

#include "ailoop/base/diag.h"
#include "ailoop/model/doc.h"

#include <pcre2.h>
#include <stdbool.h>

/*
 * Typed reads of document values for the loaders of flows and agent files.
 * Each read that fails adds a diagnostic at the value and counts an error,
 * so a loader can go on and report every problem of a file.
 */
struct al_check {
	struct al_diags *diags;
	const struct al_doc *doc;
	int errors;
};

void al_check_error(struct al_check *c, struct al_pos pos, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Reports `key` as unknown, with a "did you mean" from `known`. */
void al_check_unknown_key(struct al_check *c, const struct al_val *key,
			  const char *const *known, size_t n, const char *where);

/* Null values read as absent: these return false without a diagnostic. */
bool al_check_kind(struct al_check *c, const struct al_val *v, enum al_val_kind kind,
		   const char *key);
bool al_check_string(struct al_check *c, const struct al_val *v, const char *key,
		     const char **out);
bool al_check_int(struct al_check *c, const struct al_val *v, const char *key,
		  long long min, long long max, int *out);
bool al_check_bool(struct al_check *c, const struct al_val *v, const char *key, bool *out);
/* A string from a fixed set; `*out` is its index. */
bool al_check_enum(struct al_check *c, const struct al_val *v, const char *key,
		   const char *const *names, size_t n, int *out);
/*
 * A list of strings into a NULL-terminated array that the caller frees; the
 * strings themselves belong to the document.
 */
bool al_check_string_list(struct al_check *c, const struct al_val *v, const char *key,
			  const char ***out, size_t *n);

/*
 * Compiles a PCRE2 pattern; a bad one is reported at the column of the
 * offending character. Returns NULL on error (or for a null value).
 */
pcre2_code *al_check_regex(struct al_check *c, const struct al_val *v, const char *key);

/*
 * A pattern matched over and over, at every match of a whole text (a
 * sensor's metric): compiled for sensor.c, which matches the text's
 * fragments of valid UTF-8 itself (PCRE2_MATCH_INVALID_UTF would check the
 * rest of the text again at each match) and counts every step of the
 * pattern (PCRE2_AUTO_CALLOUT) to bound the whole scan.
 */
pcre2_code *al_check_regex_scan(struct al_check *c, const struct al_val *v, const char *key);

/* Match limits applied to every match of a user pattern. */
#define AL_REGEX_MATCH_LIMIT 1000000
#define AL_REGEX_DEPTH_LIMIT 10000
/* Steps of a scan of a whole text, every match of it together. */
#define AL_REGEX_SCAN_LIMIT (10 * AL_REGEX_MATCH_LIMIT)

/* Whether `s` is an id (or a sensor name): [A-Za-z0-9][A-Za-z0-9_-]*, any length. */
bool al_id_valid(const char *s);

#endif
