#include "ailoop/exec/rate_wait.h"
#include "ailoop/exec/budget.h"
#include "ailoop/base/fsutil.h"
#include "ailoop/proc/ratelimit.h"
#include "ailoop/base/signals.h"
#include "ailoop/base/strbuf.h"
#include "ailoop/base/util.h"

#include <jansson.h>
#include <pcre2.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

bool al_rate_limited(const struct al_flow *flow, enum al_stream stream,
		     const struct al_proc_result *r, int64_t *reset_at)
{
	struct al_ratelimit rl;
	pcre2_match_data *md;
	pcre2_match_context *mc;
	bool hit = false;

	if (reset_at)
		*reset_at = 0;
	if (!r->exit_code || r->timed_out || r->interrupted)
		return false;
	if (flow->rate_limit_re) {
		md = pcre2_match_data_create_from_pattern(flow->rate_limit_re, NULL);
		mc = pcre2_match_context_create(NULL);
		pcre2_set_match_limit(mc, AL_REGEX_MATCH_LIMIT);
		pcre2_set_depth_limit(mc, AL_REGEX_DEPTH_LIMIT);
		/* the log holds stdout and stderr */
		hit = pcre2_match(flow->rate_limit_re, (PCRE2_SPTR)(r->log.buf ? r->log.buf : ""),
				  r->log.len, 0, 0, md, mc) > 0;
		pcre2_match_context_free(mc);
		pcre2_match_data_free(md);
	}
	if (!hit && stream != AL_STREAM_CLAUDE)
		return false; /* only claude's stream says it outright */
	al_ratelimit_read(&rl, stream, r->out.buf, r->out.len, r->log.buf, r->log.len,
			  al_budget_now());
	if (reset_at && (hit || rl.rejected))
		*reset_at = rl.reset_at;
	return hit || rl.rejected;
}

/* A moment for a message: the machine's date and time of day. */
static void format_when(char *buf, size_t size, int64_t t)
{
	time_t tt = (time_t)t;
	struct tm tm;

	if (!localtime_r(&tt, &tm) || !strftime(buf, size, "%Y-%m-%d %H:%M %Z", &tm))
		snprintf(buf, size, "%lld", (long long)t);
}

/*
 * The record of a wait for a reset (al_rate_limit_resume): "UNTIL RESET",
 * two times. Written as the wait starts, removed once it has been waited.
 * One lost (a full disk) is a resume that tries at once, and waits again
 * if it is refused again.
 */
static void record_write(const char *path, int64_t until, int64_t reset)
{
	char line[64];
	int len = snprintf(line, sizeof(line), "%lld %lld\n", (long long)until, (long long)reset);

	if (path)
		al_write_atomic(path, line, (size_t)len);
}

/* The record at `path`: false if there is none, or none that reads (an agent's). */
static bool record_read(const char *path, int64_t *until, int64_t *reset)
{
	struct al_strbuf sb = AL_STRBUF_INIT;
	const char *sp;
	bool ok;

	if (!path || al_strbuf_read_file(&sb, path, 64) < 0)
		return false;
	sp = memchr(sb.buf, ' ', sb.len);
	ok = sp && sb.len && sb.buf[sb.len - 1] == '\n' &&
	     al_budget_parse_time(sb.buf, (size_t)(sp - sb.buf), until) &&
	     al_budget_parse_time(sp + 1, sb.len - (size_t)(sp + 1 - sb.buf) - 1, reset);
	al_strbuf_release(&sb);
	if (!ok)
		al_remove(path);
	return ok;
}

/* Waits until `until` for a reset recorded at `record`, which goes once waited. */
static int reset_wait(struct al_exec *ex, const char *what, int64_t until, const char *record,
		      int64_t deadline_ms)
{
	int64_t back = 0;
	char *head = al_xprintf("ailoop: %s waits for its provider's limit to reset", what);
	int rc = al_budget_wait(ex, until, head, deadline_ms, &back);

	free(head);
	/* not when the run's time budget ended it: the resume waits the rest */
	if (rc == 0 && al_budget_now() >= until - back && record)
		al_remove(record);
	if (rc == AL_ETIMEOUT)
		return al_err(AL_ETIMEOUT, "%s hit a rate limit, and the node's deadline came "
			      "before it could try again", what);
	return rc ? rc : al_signals_count() ? AL_EINTR : 0;
}

int al_rate_limit_wait(struct al_exec *ex, const char *what, int attempt, int64_t reset_at,
		       const char *record, int64_t deadline_ms)
{
	int64_t s = ex->flow->rate_limit_backoff_seconds, now = al_budget_now(), until;
	int max = ex->flow->rate_limit_max_wait_seconds;
	char head[256], left[32], at[64];
	bool capped;

	if (reset_at) {
		/* a reset already past: a margin's wait, no more */
		until = (reset_at > now ? reset_at : now) + AL_RATE_LIMIT_RESET_MARGIN;
		capped = until - now > max;
		if (capped)
			until = now + max;
		al_budget_span(left, sizeof(left), until - now);
		format_when(at, sizeof(at), reset_at);
		al_run_event(ex->run, "rate_limited", "{s:s, s:i, s:I, s:I}", "call", what,
			     "attempt", attempt + 1, "backoff_seconds", (json_int_t)(until - now),
			     "reset_at", (json_int_t)reset_at);
		al_run_event(ex->run, "rate_limit_wait", "{s:s, s:I, s:I, s:b}", "call", what,
			     "reset_at", (json_int_t)reset_at, "seconds", (json_int_t)(until - now),
			     "capped", capped);
		if (capped)
			al_progress_note(ex->progress, "ailoop: %s hit a rate limit (attempt %d) that "
					 "resets at %s, later than limits.rate_limit_max_wait_seconds "
					 "(%d s) lets it wait: retrying in %s, and waiting again if it "
					 "is refused", what, attempt + 1, at, max, left);
		else
			al_progress_note(ex->progress, "ailoop: %s hit a rate limit (attempt %d) that "
					 "resets at %s: retrying in %s", what, attempt + 1, at, left);
		record_write(record, until, reset_at);
		return reset_wait(ex, what, until, record, deadline_ms);
	}
	for (int i = 0; i < attempt && s < AL_RATE_LIMIT_BACKOFF_MAX; i++)
		s *= 2;
	if (s > AL_RATE_LIMIT_BACKOFF_MAX)
		s = AL_RATE_LIMIT_BACKOFF_MAX;
	al_run_event(ex->run, "rate_limited", "{s:s, s:i, s:i}", "call", what, "attempt",
		     attempt + 1, "backoff_seconds", (int)s);
	snprintf(head, sizeof(head), "ailoop: %s hit a rate limit: retrying", what);
	al_progress_note(ex->progress, "ailoop: %s hit a rate limit (attempt %d): retrying in "
			 "%lld s", what, attempt + 1, (long long)s);
	if (al_budget_wait(ex, al_budget_now() + s, head, deadline_ms, NULL) == AL_ETIMEOUT)
		return al_err(AL_ETIMEOUT, "%s hit a rate limit, and the node's deadline came "
			      "before it could try again", what);
	return al_signals_count() ? AL_EINTR : 0;
}

int al_rate_limit_resume(struct al_exec *ex, const char *what, const char *record,
			 int64_t deadline_ms)
{
	int64_t until, reset, now = al_budget_now();
	int max = ex->flow->rate_limit_max_wait_seconds;
	char left[32], at[64];

	if (!record_read(record, &until, &reset))
		return 0;
	if (until <= now) {
		al_remove(record);
		return 0;
	}
	/* a limit lowered since, a clock moved back: no wait is longer than the limit */
	if (until - now > max)
		until = now + max;
	al_budget_span(left, sizeof(left), until - now);
	format_when(at, sizeof(at), reset);
	al_run_event(ex->run, "rate_limit_wait", "{s:s, s:I, s:I, s:b}", "call", what, "reset_at",
		     (json_int_t)reset, "seconds", (json_int_t)(until - now), "resumed", true);
	al_progress_note(ex->progress, "ailoop: %s hit a rate limit that resets at %s: waiting "
			 "what remains, %s", what, at, left);
	return reset_wait(ex, what, until, record, deadline_ms);
}
