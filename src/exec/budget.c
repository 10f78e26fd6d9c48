#include "ailoop/exec/budget.h"
#include "ailoop/model/check.h"
#include "ailoop/base/fsutil.h"
#include "ailoop/proc/ratelimit.h"
#include "ailoop/base/signals.h"
#include "ailoop/store/state.h"
#include "ailoop/base/strbuf.h"
#include "ailoop/base/util.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define HOUR 3600
/* The last second of the year 9999: a later "time" in the record is no time. */
#define TIME_MAX 253402300799LL

/* The test clock's file, or NULL: the real clock. */
static const char *test_clock(void)
{
#ifdef AILOOP_TEST_HOOKS
	const char *v = getenv("AILOOP_TEST_CLOCK");

	return v && *v ? v : NULL;
#else
	return NULL;
#endif
}

int64_t al_budget_now(void)
{
	const char *file = test_clock();

	/* `echo T >FILE` empties the file first: such a read is taken again */
	for (int tries = 0; file && tries < 1000; tries++) {
		FILE *f = fopen(file, "r");
		long long t;
		bool got = f && fscanf(f, "%lld", &t) == 1;

		if (!f)
			break;
		fclose(f);
		if (got)
			return t;
		nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
	}
	return file ? 0 : (int64_t)time(NULL);
}

/*
 * A run's record of agent calls as one process has read it: how far, how
 * many calls, and the start times of those of the last hour, oldest first
 * (times[first..n)). Each read takes in only the lines appended since, by
 * this process or a parallel sibling, so that an agent call costs the same
 * at a run's millionth call as at its first.
 */
struct calls_seen {
	dev_t dev;
	ino_t ino;
	off_t end; /* the complete lines read end here */
	long lines; /* complete lines read */
	long calls;
	int64_t *times;
	size_t first, n, alloc;
	struct al_budget_costs costs; /* what the calls recorded with their node cost */
	bool old_costs; /* and costs holds those of an earlier version's record */
};

static void seen_release(struct calls_seen *s)
{
	free(s->times);
	al_budget_costs_release(&s->costs);
	memset(s, 0, sizeof(*s));
}

/* Adds a start time to the hour's, in order (siblings' lines may interleave). */
static void seen_add(struct calls_seen *s, int64_t t)
{
	size_t i;

	if (s->first > s->alloc / 2) { /* the dropped half is reused */
		memmove(s->times, s->times + s->first, (s->n - s->first) * sizeof(*s->times));
		s->n -= s->first;
		s->first = 0;
	}
	AL_GROW(s->times, s->n, s->alloc);
	for (i = s->n; i > s->first && s->times[i - 1] > t; i--)
		s->times[i] = s->times[i - 1];
	s->times[i] = t;
	s->n++;
}

/*
 * The time a line of the record gives, at `line` (`len` bytes without its
 * newline): false unless it is digits alone, of a time up to the year 9999.
 * An agent can write to the record: what it writes there must not make a
 * wait overflow.
 */
bool al_budget_parse_time(const char *line, size_t len, int64_t *out)
{
	int64_t t = 0;

	if (!len)
		return false;
	for (size_t i = 0; i < len; i++) {
		if (line[i] < '0' || line[i] > '9' || t > (TIME_MAX - (line[i] - '0')) / 10)
			return false;
		t = t * 10 + (line[i] - '0');
	}
	*out = t;
	return true;
}

/* Whether `s` (`len` bytes) is 1 to `max` digits. */
static bool digits(const char *s, size_t len, size_t max)
{
	if (!len || len > max)
		return false;
	for (size_t i = 0; i < len; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return true;
}

/* The digits of `s` (`len` bytes, digits() said so) as a number. */
static long long number(const char *s, size_t len)
{
	long long v = 0;

	for (size_t i = 0; i < len; i++)
		v = v * 10 + (s[i] - '0');
	return v;
}

/* Whether `s` (`len` bytes) is a node's path: ids of letters, digits, '_' and '-', and '/'. */
static bool node_path(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (!(s[i] >= 'a' && s[i] <= 'z') && !(s[i] >= 'A' && s[i] <= 'Z') &&
		    !(s[i] >= '0' && s[i] <= '9') && !strchr("_-/", s[i]))
			return false;
	return len > 0;
}

/* A call's cost, as the line written when it ended gives it. */
struct call_cost {
	double usd;
	long long tokens;
	bool unknown;
	const char *node; /* NULL: a line of an earlier version, which did not name it */
	size_t node_len;
};

/*
 * Whether `s` (`len` bytes) is what follows a call's start time on the line
 * written when it ended: "USD KIND IN OUT NODE" (al_budget_call_end),
 * dollars of up to 1e9, reported|estimated|unknown, two counts of tokens
 * and the node's path, or "USD KIND IN OUT" as an earlier version wrote it.
 */
static bool parse_cost(const char *s, size_t len, struct call_cost *c)
{
	static const char *const kinds[] = { "reported", "estimated", "unknown" };
	const char *end = s + len, *f[5];
	size_t n[5], k = 0, point;
	bool kind = false;

	for (const char *p = s; k < 5; k++) {
		const char *sp = memchr(p, ' ', (size_t)(end - p));

		f[k] = p;
		n[k] = (size_t)((sp ? sp : end) - p);
		if (!sp) {
			k++;
			break;
		}
		p = sp + 1;
	}
	if (k < 4 || f[k - 1] + n[k - 1] != end || (k == 5 && !node_path(f[4], n[4])))
		return false;
	for (size_t i = 0; i < AL_ARRAY_SIZE(kinds); i++)
		kind |= n[1] == strlen(kinds[i]) && !memcmp(f[1], kinds[i], n[1]);
	for (point = 0; point < n[0] && f[0][point] != '.'; point++)
		;
	/* up to 1e9 dollars: nine digits, then a fraction of up to nine */
	if (!kind || !digits(f[0], point, 9) ||
	    (point < n[0] && !digits(f[0] + point + 1, n[0] - point - 1, 9)) ||
	    !digits(f[2], n[2], 15) || !digits(f[3], n[3], 15))
		return false;
	c->usd = (double)number(f[0], point);
	if (point < n[0])
		c->usd += (double)number(f[0] + point + 1, n[0] - point - 1) /
			  pow(10, (double)(n[0] - point - 1));
	c->tokens = number(f[2], n[2]) + number(f[3], n[3]);
	c->unknown = f[1][0] == 'u';
	c->node = k == 5 ? f[4] : NULL;
	c->node_len = k == 5 ? n[4] : 0;
	return true;
}

/*
 * A line of the record: a call's start (a time alone: *call), or its end
 * (the time, then its cost in *c: not a call). False if it is neither.
 */
static bool parse_line(const char *line, size_t len, int64_t *t, bool *call, struct call_cost *c)
{
	const char *sp = memchr(line, ' ', len);
	size_t n = sp ? (size_t)(sp - line) : len;

	*call = !sp;
	return al_budget_parse_time(line, n, t) && (!sp || parse_cost(sp + 1, len - n - 1, c));
}

/* Names a line of the record that is no call's, once: each line is read once. */
static void bad_line(struct al_progress *p, const char *path, long n, const char *line,
		     size_t len)
{
	char shown[48];
	size_t k;

	if (!p)
		return;
	/* what an agent wrote, shown without what a terminal would obey */
	for (k = 0; k < len && k < sizeof(shown) - 1; k++)
		shown[k] = line[k] >= ' ' && line[k] < 0x7f ? line[k] : '?';
	shown[k] = '\0';
	al_progress_end(p);
	fprintf(stderr, "ailoop: warning: ignoring line %ld of '%s': '%s%s' is not a %s\n", n,
		path, shown, k < len ? "..." : "", memchr(line, ' ', len) ? "call's record" : "time");
}

/*
 * Brings `s` up to date with the record `fd` (locked) as of `now`. A last
 * line without its newline (a write cut short by a kill) is no call, and
 * is cut off with `fix`. A record that is another file, or shorter than
 * what was read (made anew), is read from its start. A line that is no
 * time is no call, named on `p` if not NULL.
 */
static int seen_update(struct calls_seen *s, int fd, const char *path, int64_t now, bool fix,
		       struct al_progress *p)
{
	struct al_strbuf sb = AL_STRBUF_INIT;
	char buf[4096];
	struct stat st;
	size_t end;
	ssize_t got;
	off_t off;
	int rc = 0;

	if (fstat(fd, &st) < 0)
		return al_err(AL_ERROR, "cannot read '%s': %s", path, strerror(errno));
	if (st.st_dev != s->dev || st.st_ino != s->ino || st.st_size < s->end) {
		seen_release(s);
		s->dev = st.st_dev;
		s->ino = st.st_ino;
	}
	/*
	 * A call "in the future" was recorded before the clock moved back:
	 * it counts as made now, no later, or the wait for the window's room
	 * would last as long as the clock went back (sorted: the latest last).
	 */
	for (size_t i = s->n; i > s->first && s->times[i - 1] > now; i--)
		s->times[i - 1] = now;
	for (off = s->end; (got = pread(fd, buf, sizeof(buf), off)) > 0; off += got)
		al_strbuf_add(&sb, buf, (size_t)got);
	if (got < 0) {
		rc = al_err(AL_ERROR, "cannot read '%s': %s", path, strerror(errno));
		goto done;
	}
	for (end = sb.len; end > 0 && sb.buf[end - 1] != '\n'; end--)
		;
	if (fix && end < sb.len && ftruncate(fd, s->end + (off_t)end) < 0) {
		rc = al_err(AL_ERROR, "cannot write '%s': %s", path, strerror(errno));
		goto done;
	}
	for (size_t i = 0; i < end;) {
		char *nl = memchr(sb.buf + i, '\n', end - i);
		size_t len = (size_t)(nl - sb.buf) - i;
		struct call_cost c;
		int64_t t;
		bool call;

		s->lines++;
		if (!parse_line(sb.buf + i, len, &t, &call, &c)) {
			bad_line(p, path, s->lines, sb.buf + i, len);
		} else if (call) {
			s->calls++;
			if (t > now - HOUR)
				seen_add(s, t < now ? t : now);
		} else if (c.node) { /* without: an earlier version's, in its own record */
			al_budget_costs_add(&s->costs, c.node, c.node_len, c.usd, c.tokens, c.unknown);
		}
		i += len + 1;
	}
	s->end += (off_t)end;
	while (s->first < s->n && s->times[s->first] <= now - HOUR)
		s->first++;
done:
	al_strbuf_release(&sb);
	return rc;
}

/* The clock moved back `back` seconds while this process waited: its times move with it. */
static void seen_shift(struct calls_seen *s, int64_t back)
{
	for (size_t i = s->first; i < s->n; i++)
		s->times[i] -= back;
}

/* The calls of the last hour in `s`. */
static size_t seen_in_hour(const struct calls_seen *s)
{
	return s->n - s->first;
}

/* When the hourly window of `per_hour` calls, full, has room again. */
static int64_t seen_room_at(const struct calls_seen *s, int per_hour)
{
	return s->times[s->n - (size_t)per_hour] + HOUR;
}

int al_budget_read(const char *run_dir, int per_hour, struct al_budget_use *use)
{
	char *path = al_xprintf("%s/" AL_BUDGET_FILE, run_dir);
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC), rc = 0;
	struct calls_seen s = { 0 };

	memset(use, 0, sizeof(*use));
	if (fd >= 0) {
		rc = seen_update(&s, fd, path, al_budget_now(), false, NULL);
		close(fd);
	} else if (errno != ENOENT) {
		rc = al_err(AL_ERROR, "cannot open '%s': %s", path, strerror(errno));
	}
	use->calls = s.calls;
	use->calls_last_hour = (long)seen_in_hour(&s);
	if (per_hour && seen_in_hour(&s) >= (size_t)per_hour)
		use->wait_until = seen_room_at(&s, per_hour);
	seen_release(&s);
	free(path);
	return rc;
}

/* The time ailoop has spent on the run: the root node's clock. */
static int64_t active_ms(const struct al_exec *ex)
{
	const struct al_node_run *root = ex->nframes ? ex->frames[0].nr : NULL;

	return root ? root->base_elapsed + (al_now_ms() - root->entry_ms) : 0;
}

/*
 * The root's clock, written into its state on disk after a wait: a wait
 * counts as time spent (limits.max_wall_seconds), and a run blocked or
 * paused while waiting saves no node's state on the way out.
 */
static void keep_clock(const struct al_exec *ex)
{
	/* a parallel child's process leaves the root's state to the run's */
	if (ex->nframes && !ex->base_frame)
		al_node_keep_clock(ex->frames[0].nr);
}

void al_budget_span(char *buf, size_t size, int64_t s)
{
	if (s >= HOUR)
		snprintf(buf, size, "%lld:%02lld:%02lld", (long long)(s / HOUR),
			 (long long)(s % HOUR / 60), (long long)(s % 60));
	else
		snprintf(buf, size, "%lld:%02lld", (long long)(s / 60), (long long)(s % 60));
}

int al_budget_wait(struct al_exec *ex, int64_t until, const char *what, int64_t deadline_ms,
		   int64_t *back)
{
	struct al_progress *p = ex->progress;
	int max_wall = ex->flow->max_wall_seconds, rc = 0;
	int64_t now, left = until - al_budget_now();

	while ((now = al_budget_now()) < until) {
		struct pollfd pfd = { al_signals_fd(), POLLIN, 0 };
		int step = test_clock() ? 50 : 1000;
		int64_t to_deadline = deadline_ms ? deadline_ms - al_now_ms() : INT64_MAX;

		if (until - now > left) {
			if (back)
				*back += until - now - left;
			until = now + left;
		}
		left = until - now;
		if (al_signals_count()) {
			rc = AL_EINTR;
			break;
		}
		if (to_deadline <= 0) {
			rc = AL_ETIMEOUT;
			break;
		}
		if (max_wall && active_ms(ex) / 1000 >= max_wall)
			break;
		if (to_deadline < step)
			step = (int)to_deadline + 1;
		if (p) {
			char span[32];
			char *line = al_xprintf("%s:", what);

			al_budget_span(span, sizeof(span), until - now);
			al_progress_live(p, line, span);
			free(line);
		}
		if (poll(&pfd, pfd.fd >= 0 ? 1 : 0, step) < 0 && errno != EINTR)
			break;
	}
	if (p && p->tty && p->live) {
		fputs("\r\033[K", stderr);
		p->live = false;
	}
	keep_clock(ex);
	return rc ? rc : al_signals_count() ? AL_EINTR : 0;
}

int al_budget_blocked(struct al_exec *ex, const char *limit, const char *how, const char *what,
		      const char *fmt, ...)
{
	struct al_strbuf msg = AL_STRBUF_INIT;
	va_list ap;
	int rc;

	va_start(ap, fmt);
	al_strbuf_vaddf(&msg, fmt, ap);
	va_end(ap);
	al_run_event(ex->run, "budget_exhausted", "{s:s, s:s, s:s}", "limit", limit, "call", what,
		     "message", msg.buf);
	rc = al_err(AL_EBLOCKED, "%s, before %s: %s in %s and continue with 'ailoop resume %s'",
		    msg.buf, what, how, ex->flow->file, ex->run->st.run_id);
	al_strbuf_release(&msg);
	return rc;
}

/* A spent budget of `limits:`: the advice is to raise it there. */
#define blocked(ex, limit, what, ...) \
	al_budget_blocked(ex, limit, "raise 'limits." limit "'", what, __VA_ARGS__)

/* The record this process reads before each call (a forked sibling starts with its parent's). */
static struct calls_seen seen;

int al_budget_acquire(struct al_exec *ex, const char *what, int64_t deadline_ms,
		      int64_t *started)
{
	const struct al_flow *f = ex->flow;
	char *path = al_xprintf("%s/" AL_BUDGET_FILE, ex->run->dir);
	int fd = al_open_run_file(path, O_RDWR | O_APPEND, "the record of agent calls"), rc = 0;
	bool announced = false;

	if (fd < 0) {
		free(path);
		return fd;
	}
	for (;;) {
		int64_t now = al_budget_now(), spent, back = 0;
		size_t n;
		char line[32];
		int len;

		if (flock(fd, LOCK_EX) < 0) {
			rc = al_err(AL_ERROR, "cannot lock '%s': %s", path, strerror(errno));
			break;
		}
		if ((rc = seen_update(&seen, fd, path, now, true, ex->progress)) < 0)
			break;
		n = seen_in_hour(&seen);
		spent = active_ms(ex) / 1000;
		if (f->max_agent_calls && seen.calls >= f->max_agent_calls) {
			rc = blocked(ex, "max_agent_calls", what, "agent-call budget spent: %ld agent "
				     "call%s made, limits.max_agent_calls is %d", seen.calls,
				     seen.calls == 1 ? "" : "s", f->max_agent_calls);
		} else if (f->max_wall_seconds && spent >= f->max_wall_seconds) {
			rc = blocked(ex, "max_wall_seconds", what, "time budget spent: the run has "
				     "run %lld s, limits.max_wall_seconds is %d", (long long)spent,
				     f->max_wall_seconds);
		} else if (f->max_agent_calls_per_hour && n >= (size_t)f->max_agent_calls_per_hour) {
			int64_t until = seen_room_at(&seen, f->max_agent_calls_per_hour);
			char left[32], *head;

			flock(fd, LOCK_UN); /* others may read, and wait too */
			al_budget_span(left, sizeof(left), until - now);
			head = al_xprintf("ailoop: %zu agent calls in the last hour "
					  "(limits.max_agent_calls_per_hour: %d): waiting to start %s",
					  n, f->max_agent_calls_per_hour, what);
			if (!announced) {
				al_run_event(ex->run, "rate_limit_wait", "{s:s, s:i, s:i, s:i}", "call",
					     what, "calls_last_hour", (int)n, "limit",
					     f->max_agent_calls_per_hour, "seconds", (int)(until - now));
				if (!ex->progress || !ex->progress->tty)
					al_progress_note(ex->progress, "%s for %s", head, left);
				announced = true;
			}
			rc = al_budget_wait(ex, until, head, deadline_ms, &back);
			free(head);
			seen_shift(&seen, back);
			if (rc == AL_ETIMEOUT)
				rc = al_err(AL_ETIMEOUT, "the node's deadline came while %s waited for "
					    "the hourly limit (limits.max_agent_calls_per_hour)", what);
			if (rc < 0)
				break;
			continue;
		}
		if (rc < 0)
			break;
		len = snprintf(line, sizeof(line), "%lld\n", (long long)now);
		if (write(fd, line, (size_t)len) != len)
			rc = al_err(AL_ERROR, "cannot write '%s': %s", path, strerror(errno));
		else if (started)
			*started = now;
		break;
	}
	close(fd); /* and the lock with it */
	free(path);
	return rc;
}

int al_budget_costs_read(struct al_exec *ex, const struct al_budget_costs **out)
{
	char *path = al_xprintf("%s/" AL_BUDGET_FILE, ex->run->dir);
	int fd = al_open_run_file(path, O_RDWR | O_APPEND, "the record of agent calls"), rc = 0;

	/* not locked: a line being written, not yet whole, is read at the next check */
	if (fd < 0 || (rc = seen_update(&seen, fd, path, al_budget_now(), false,
					ex->progress)) < 0)
		goto done;
	if (!seen.old_costs) {
		al_budget_costs_read_old(&seen.costs, ex->run->dir);
		seen.old_costs = true;
	}
	*out = &seen.costs;
done:
	if (fd >= 0)
		close(fd);
	free(path);
	return fd < 0 ? fd : rc;
}

/*
 * Cuts off the end of the record `fd` (locked) after its last newline: a
 * line a kill cut short, no call's, which the next line must not join.
 */
static void cut_torn(int fd)
{
	char buf[512];
	struct stat st;
	off_t end;
	char last;

	if (fstat(fd, &st) < 0 || st.st_size == 0 || pread(fd, &last, 1, st.st_size - 1) != 1 ||
	    last == '\n')
		return;
	for (end = st.st_size; end > 0;) {
		off_t from = end > (off_t)sizeof(buf) ? end - (off_t)sizeof(buf) : 0;
		ssize_t got = pread(fd, buf, (size_t)(end - from), from);

		if (got != end - from)
			return;
		while (got > 0 && buf[got - 1] != '\n')
			got--;
		if (got > 0) {
			end = from + got;
			break;
		}
		end = from;
	}
	if (ftruncate(fd, end) < 0)
		return; /* the next line joins the torn one, and is named and ignored */
}

void al_budget_call_end(struct al_run *run, const char *node, int64_t started, double usd,
			const char *kind, long long in, long long out)
{
	char *path = al_xprintf("%s/" AL_BUDGET_FILE, run->dir);
	char *line = al_xprintf("%lld %.6f %s %lld %lld %s\n", (long long)started,
				isfinite(usd) && usd >= 0 && usd < 1e9 ? usd : 0, kind, in, out, node);
	int fd = al_open_run_file(path, O_RDWR | O_APPEND, "the record of agent calls");

#ifdef AILOOP_TEST_HOOKS
	if (getenv("AILOOP_TEST_KILL_BEFORE_COST")) /* a crash between a call's end and its record */
		kill(getpid(), SIGKILL);
#endif
	/*
	 * Under the lock, as a call's start is written: a reader cuts off a
	 * line it finds torn. A record lost (a full disk) is a cost not
	 * counted, not a run stopped.
	 */
	if (fd >= 0) {
		ssize_t w = -1;

		if (flock(fd, LOCK_EX) == 0) {
			cut_torn(fd);
			w = write(fd, line, strlen(line));
		}
		(void)w;
		close(fd);
	}
	free(line);
	free(path);
}
