#ifndef AILOOP_METRIC_H
#define AILOOP_METRIC_H

#include <pcre2.h>
#include <stdbool.h>
#include <stddef.h>

/*
 * A command sensor's metric: a pattern over its output and how its
 * matches make one value. Test runners print totals last (pytest's
 * `3 passed`), so by default the value is the last match's first group;
 * some print one total per test binary (cargo's `test result:` lines, one
 * for the unit tests, each integration test and the doc-tests), so a
 * metric may add up the first group of every match (`sum`), or count the
 * matches (`count`: go's `--- FAIL:` lines).
 */
enum al_metric_of {
	AL_METRIC_LAST,
	AL_METRIC_SUM,
	AL_METRIC_COUNT,
};

struct al_metric {
	const char *name;
	pcre2_code *re;    /* a capture group around the value, but for a count */
	enum al_metric_of of;
	/*
	 * The value when nothing matches: pytest's summary says nothing of
	 * failures when none failed, so `failed` is 0 then, not unknown.
	 */
	const char *dflt;
};

/*
 * The value of metric `m` in `text` of `len` bytes, in `*out` (NULL: none;
 * the caller frees it). Returns
 * 0; 1 if the pattern gave up (the scan is bounded: AL_REGEX_SCAN_LIMIT
 * steps over all its matches, AL_REGEX_MATCH_LIMIT at one; no value); or
 * AL_EINTR if ailoop was interrupted.
 */
int al_metric_read(const struct al_metric *m, const char *text, size_t len, char **out);

#endif
