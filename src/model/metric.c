#include "ailoop/model/metric.h"
#include "ailoop/model/check.h"
#include "ailoop/base/signals.h"
#include "ailoop/base/util.h"

#include <stdlib.h>
#include <string.h>

/* A scan of a text by a metric's pattern: the steps of all its matches. */
struct scan {
	long steps;
	bool interrupted;
};

/* Before each step of the pattern (PCRE2_AUTO_CALLOUT): a negative value ends the match. */
static int scan_step(pcre2_callout_block *block, void *data)
{
	struct scan *sc = data;

	(void)block;
	if (al_signals_count()) {
		sc->interrupted = true;
		return PCRE2_ERROR_CALLOUT;
	}
	return ++sc->steps > AL_REGEX_SCAN_LIMIT ? PCRE2_ERROR_CALLOUT : 0;
}

/* What the matches so far make: the last one's group, a sum, a count. */
struct tally {
	enum al_metric_of of;
	char *last;
	double sum;
	long count;
};

/* One match's first group, `len` bytes at `s` (NULL: the group is unset). */
static void tally_add(struct tally *t, const char *s, size_t len)
{
	char *v = s ? al_strndup(s, len) : al_strdup(""), *end;
	double x;

	t->count++;
	if (t->of == AL_METRIC_SUM) {
		/* a group that is not a number adds nothing: the others still count */
		x = strtod(v, &end);
		if (end != v && !*end)
			t->sum += x;
	}
	free(t->last);
	t->last = v;
}

/*
 * The matches in one fragment of valid UTF-8 of a text, `frag` of `len`
 * bytes (`options`: where it sits in the text), added to `t`. The last
 * pcre2_match() result: PCRE2_ERROR_NOMATCH once every match is found,
 * another one < 0 if the pattern gave up.
 */
static int capture_in(pcre2_code *re, const char *frag, size_t len, uint32_t options,
		      pcre2_match_data *md, pcre2_match_context *mc, struct tally *t)
{
	size_t off = 0;
	int m = PCRE2_ERROR_NOMATCH;

	while (off <= len && (m = pcre2_match(re, (PCRE2_SPTR)frag, len, off, options, md, mc)) > 0) {
		PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);

		if (m < 2 || ov[2] == PCRE2_UNSET)
			tally_add(t, NULL, 0);
		else
			tally_add(t, frag + ov[2], ov[3] - ov[2]);
		if (ov[1] > off) {
			off = ov[1];
			continue;
		}
		/* an empty match: on from the next character */
		for (off++; off < len && (frag[off] & 0xc0) == 0x80; off++)
			;
	}
	return off > len ? PCRE2_ERROR_NOMATCH : m;
}

/*
 * The whole scan, every match of it, is bounded as one match of a
 * condition is: at AL_REGEX_SCAN_LIMIT steps, or a match past the match
 * limits, the pattern gives up; an interrupt stops it between any two
 * steps. Output is bytes: the
 * pattern is matched in each fragment of valid UTF-8 (a boundary neither
 * the start nor the end of a line), as PCRE2_MATCH_INVALID_UTF would, but
 * without checking the rest of the text again at each match: a scan of
 * 1 MiB of output with 30,000 matches took 27 s.
 */
static int scan(pcre2_code *re, const char *text, size_t len, struct tally *t)
{
	pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, NULL);
	pcre2_match_context *mc = pcre2_match_context_create(NULL);
	struct scan sc = { 0, false };
	size_t start = 0, flen = al_utf8_valid_len(text, len);
	int m, rc = 0;

	if (!md || !mc)
		al_die_oom();
	pcre2_set_match_limit(mc, AL_REGEX_MATCH_LIMIT);
	pcre2_set_depth_limit(mc, AL_REGEX_DEPTH_LIMIT);
	pcre2_set_callout(mc, scan_step, &sc);
	for (;;) {
		uint32_t options = PCRE2_NO_UTF_CHECK | (start ? PCRE2_NOTBOL : 0) |
				   (start + flen < len ? PCRE2_NOTEOL : 0);

		m = capture_in(re, text + start, flen, options, md, mc, t);
		if (m != PCRE2_ERROR_NOMATCH) {
			rc = sc.interrupted ? AL_EINTR : 1;
			break;
		}
		/* past the bytes that are not UTF-8, to the next fragment */
		for (start += flen, flen = 0; start < len && !flen;) {
			start++;
			flen = al_utf8_valid_len(text + start, len - start);
		}
		if (start >= len)
			break;
	}
	pcre2_match_context_free(mc);
	pcre2_match_data_free(md);
	return rc;
}

int al_metric_read(const struct al_metric *m, const char *text, size_t len, char **out)
{
	struct tally t = { m->of, NULL, 0, 0 };
	int rc = scan(m->re, text, len, &t);

	*out = NULL;
	if (rc == 0 && t.count) {
		if (m->of == AL_METRIC_LAST)
			*out = t.last, t.last = NULL;
		else if (m->of == AL_METRIC_COUNT)
			*out = al_xprintf("%ld", t.count);
		else
			*out = al_xprintf("%.15g", t.sum);
	} else if (rc == 0 && m->of == AL_METRIC_COUNT) {
		*out = al_strdup("0"); /* no line of the kind: none of them */
	}
	if (rc == 0 && !*out && m->dflt)
		*out = al_strdup(m->dflt);
	free(t.last);
	return rc;
}
