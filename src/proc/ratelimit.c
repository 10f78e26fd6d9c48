#include "ailoop/proc/ratelimit.h"
#include "ailoop/proc/usage.h"
#include "ailoop/base/util.h"

#include <ctype.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#define DAY 86400
/* No reset is further away: a later one is a message's garbage. */
#define MAX_AHEAD (400LL * DAY)
/*
 * A time of day that went by less than this long ago is a reset past (the
 * message rounds it, or came a moment before it), not tomorrow's.
 */
#define PAST 3600

/* A moment as a message writes it. */
struct when {
	int year, mon, day; /* year 0: not given; mon 0 (and day): no date */
	int hour, min;
	char zone[64];      /* "" : the machine's */
};

/* A cursor over the text after an anchor. */
struct cur {
	const char *p, *end;
};

static void spaces(struct cur *c)
{
	while (c->p < c->end && isspace((unsigned char)*c->p))
		c->p++;
}

/* Whether the cursor is at `word` (any case), which it then passes. */
static bool word(struct cur *c, const char *w)
{
	size_t n = strlen(w);

	if ((size_t)(c->end - c->p) < n || strncasecmp(c->p, w, n))
		return false;
	c->p += n;
	return true;
}

/* A number of 1 to `max` digits (more is no number, but a message's garbage). */
static bool number(struct cur *c, int max, long long *out)
{
	const char *p = c->p;
	long long v = 0;

	while (p < c->end && isdigit((unsigned char)*p) && p - c->p < max)
		v = v * 10 + (*p++ - '0');
	if (p == c->p || (p < c->end && isdigit((unsigned char)*p)))
		return false;
	c->p = p;
	*out = v;
	return true;
}

static bool month(struct cur *c, int *out)
{
	static const char *const names[] = { "jan", "feb", "mar", "apr", "may", "jun",
					     "jul", "aug", "sep", "oct", "nov", "dec" };

	for (int i = 0; i < 12; i++) {
		struct cur at = *c;

		if (word(&at, names[i])) {
			while (at.p < at.end && isalpha((unsigned char)*at.p)) /* "January" */
				at.p++;
			if (at.p < at.end && *at.p == '.')
				at.p++;
			*c = at;
			*out = i + 1;
			return true;
		}
	}
	return false;
}

/* "Jan 30, " or "Jul 5th, 2026 ": a date, its year if given. */
static bool date(struct cur *c, struct when *w)
{
	struct cur at = *c;
	long long day, year;

	if (!month(&at, &w->mon))
		return false;
	spaces(&at);
	if (!number(&at, 2, &day) || day < 1 || day > 31)
		return false;
	w->day = (int)day;
	(void)(word(&at, "st") || word(&at, "nd") || word(&at, "rd") || word(&at, "th"));
	if (at.p < at.end && *at.p == ',')
		at.p++;
	spaces(&at);
	{
		struct cur y = at;

		/* a year, not the hour of "Jan 30, 11:30am" */
		if (number(&y, 4, &year) && y.p - at.p == 4 && (y.p == y.end || *y.p != ':')) {
			w->year = (int)year;
			at = y;
			if (at.p < at.end && *at.p == ',')
				at.p++;
			spaces(&at);
		}
	}
	*c = at;
	return true;
}

/* "3pm", "8:30pm", "3:05 PM", "15:05": a time of day. */
static bool clock_time(struct cur *c, struct when *w)
{
	long long h, m = 0;
	bool minutes = false, pm;

	if (!number(c, 2, &h))
		return false;
	if (c->p < c->end && *c->p == ':') {
		c->p++;
		if (c->end - c->p < 2 || !isdigit((unsigned char)c->p[0]) || !number(c, 2, &m) || m > 59)
			return false;
		minutes = true;
	}
	spaces(c);
	if (word(c, "am") || word(c, "a.m.")) {
		pm = false;
	} else if (word(c, "pm") || word(c, "p.m.")) {
		pm = true;
	} else {
		/* a 24-hour time has its minutes: "resets 3 times" is no time */
		if (!minutes || h > 23)
			return false;
		w->hour = (int)h;
		w->min = (int)m;
		return true;
	}
	if (h < 1 || h > 12)
		return false;
	w->hour = (int)(h % 12 + (pm ? 12 : 0));
	w->min = (int)m;
	return true;
}

/* " (Europe/Paris)": a zone's name, if it is one the TZ database holds. */
static bool zone(struct cur *c, struct when *w, bool *unknown)
{
	struct cur at = *c;
	const char *start, *dir = getenv("TZDIR");
	char path[512], magic[4];
	size_t n;
	int fd;

	spaces(&at);
	if (at.p >= at.end || *at.p != '(')
		return false;
	start = ++at.p;
	while (at.p < at.end && (isalnum((unsigned char)*at.p) || strchr("/_+-.", *at.p)))
		at.p++;
	n = (size_t)(at.p - start);
	if (at.p >= at.end || *at.p != ')' || !n)
		return false;
	*unknown = true;
	/* a name, not a way out of the database's directory */
	if (n >= sizeof(w->zone) || *start == '/' || memmem(start, n, "..", 2))
		return true;
	memcpy(w->zone, start, n);
	w->zone[n] = '\0';
	snprintf(path, sizeof(path), "%s/%s", dir && *dir ? dir : "/usr/share/zoneinfo", w->zone);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	*unknown = fd < 0 || read(fd, magic, 4) != 4 || memcmp(magic, "TZif", 4);
	if (fd >= 0)
		close(fd);
	c->p = at.p + 1;
	return true;
}

/*
 * Calls `fn` with the zone `name` ("": the machine's) as the process's,
 * then puts the process's back. ailoop runs no threads, and the children
 * it starts afterwards inherit the environment as it was.
 */
static int64_t in_zone(const char *name, int64_t (*fn)(const struct when *, int64_t),
		       const struct when *w, int64_t now)
{
	char *old = getenv("TZ") ? al_strdup(getenv("TZ")) : NULL, tz[80];
	int64_t t;

	if (*name) {
		snprintf(tz, sizeof(tz), ":%s", name);
		setenv("TZ", tz, 1);
		tzset();
	}
	t = fn(w, now);
	if (*name) {
		if (old)
			setenv("TZ", old, 1);
		else
			unsetenv("TZ");
		tzset();
	}
	free(old);
	return t;
}

/* The moment of `w`'s time of day on that day (mktime counts a day past the month's on), or -1. */
static int64_t moment(const struct when *w, int year, int mon, int day)
{
	struct tm t = { 0 };
	time_t s;

	t.tm_year = year - 1900;
	t.tm_mon = mon - 1;
	t.tm_mday = day;
	t.tm_hour = w->hour;
	t.tm_min = w->min;
	t.tm_isdst = -1;
	s = mktime(&t);
	/* "Feb 30" is no date (mktime made it March 2nd) */
	if (s == (time_t)-1 || (w->mon && (t.tm_mon != mon - 1 || t.tm_mday != day)))
		return -1;
	return (int64_t)s;
}

static int64_t nearer(int64_t a, int64_t b, int64_t now)
{
	if (a < 0)
		return b;
	if (b < 0)
		return a;
	return llabs(b - now) < llabs(a - now) ? b : a;
}

/* `w` in the process's zone, as of `now`. */
static int64_t resolve(const struct when *w, int64_t now)
{
	time_t n = (time_t)now;
	struct tm today;
	int64_t best = -1;

	if (!localtime_r(&n, &today))
		return 0;
	if (!w->mon) {
		/* the first of yesterday's, today's, tomorrow's no more than PAST gone */
		for (int d = -1; d <= 1 && best < now - PAST; d++)
			best = moment(w, today.tm_year + 1900, today.tm_mon + 1, today.tm_mday + d);
		best = best < now - PAST ? -1 : best;
	} else if (!w->year) {
		for (int y = -1; y <= 1; y++)
			best = nearer(best, moment(w, today.tm_year + 1900 + y, w->mon,
						   w->day), now);
	} else {
		best = moment(w, w->year, w->mon, w->day);
	}
	return best;
}

/* "resets 3pm (Europe/Paris)", "try again at Jul 5th, 2026 8:19 PM": a moment. */
static int64_t absolute(struct cur c, int64_t now)
{
	struct when w = { 0 };
	bool unknown = false;
	int64_t t;

	(void)date(&c, &w);
	if (!clock_time(&c, &w))
		return 0;
	if (zone(&c, &w, &unknown) && unknown)
		return 0;
	t = in_zone(w.zone, resolve, &w, now);
	return t > 0 && t - now < MAX_AHEAD ? t : 0;
}

/* "2 days 17 hours 14 minutes", "20s", "1m30s": a span from now. */
static int64_t relative(struct cur c, int64_t now)
{
	static const struct {
		const char *unit;
		int64_t s;
	} units[] = { /* longer names first: "minutes" before "m", "ms" before "m" */
		{ "days", DAY }, { "day", DAY }, { "d", DAY }, { "hours", 3600 }, { "hour", 3600 },
		{ "hrs", 3600 }, { "hr", 3600 }, { "h", 3600 }, { "minutes", 60 }, { "minute", 60 },
		{ "mins", 60 }, { "min", 60 }, { "ms", 0 }, { "m", 60 }, { "seconds", 1 },
		{ "second", 1 }, { "secs", 1 }, { "sec", 1 }, { "s", 1 },
	};
	int64_t span = 0;
	int parts = 0;

	for (;;) {
		long long n, frac;
		size_t i;

		spaces(&c);
		if (parts && word(&c, "and"))
			spaces(&c);
		if (!number(&c, 6, &n))
			break;
		if (c.p < c.end && *c.p == '.') { /* "1.5s": a second more */
			c.p++;
			if (!number(&c, 9, &frac))
				break;
			n++;
		}
		spaces(&c);
		for (i = 0; i < AL_ARRAY_SIZE(units); i++) {
			struct cur at = c;

			if (word(&at, units[i].unit) &&
			    (at.p == at.end || !isalpha((unsigned char)*at.p))) {
				c = at;
				break;
			}
		}
		if (i == AL_ARRAY_SIZE(units))
			break;
		span += n * units[i].s;
		parts++;
		if (c.p < c.end && *c.p == ',')
			c.p++;
	}
	return parts && span < MAX_AHEAD ? now + span : 0;
}

/* "usage limit reached|1749924000": the moment itself (seconds or milliseconds). */
static int64_t epoch(struct cur c, int64_t now)
{
	long long t;

	if (!number(&c, 13, &t))
		return 0;
	if (t > 100000000000LL)
		t /= 1000;
	return t > 0 && t - now < MAX_AHEAD ? t : 0;
}

int64_t al_ratelimit_reset(const char *text, size_t len, int64_t now)
{
	static const struct {
		const char *anchor;
		int64_t (*read)(struct cur, int64_t);
	} forms[] = {
		{ "resets ", absolute },	{ "reset at ", absolute },
		{ "try again at ", absolute }, { "try again in ", relative },
		{ "resets in ", relative },
		{ "limit reached|", epoch },
	};
	const char *end = text + len;
	int64_t last = 0;

	for (const char *p = text; p < end; p++) {
		for (size_t i = 0; i < AL_ARRAY_SIZE(forms); i++) {
			size_t n = strlen(forms[i].anchor);
			int64_t t;

			if ((size_t)(end - p) < n || strncasecmp(p, forms[i].anchor, n))
				continue;
			if ((t = forms[i].read((struct cur){ p + n, end }, now)) > 0)
				last = t;
		}
	}
	return last;
}

void al_ratelimit_read(struct al_ratelimit *rl, enum al_stream stream, const char *out,
		       size_t out_len, const char *log, size_t log_len, int64_t now)
{
	memset(rl, 0, sizeof(*rl));
	out = out ? out : "";
	log = log ? log : "";
	if (stream == AL_STREAM_CLAUDE) {
		struct al_usage u = AL_USAGE_INIT;

		al_usage_read(&u, stream, out, out_len);
		rl->rejected = u.rate == AL_RATE_REJECTED;
		if (rl->rejected)
			rl->reset_at = u.resets_at;
		al_usage_release(&u);
	}
	if (!rl->reset_at)
		rl->reset_at = al_ratelimit_reset(log, log_len, now);
}
