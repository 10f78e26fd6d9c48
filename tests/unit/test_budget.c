#include "ailoop/exec/budget.h"
#include "ailoop/exec/rate_wait.h"
#include "ailoop/exec/exec.h"
#include "ailoop/model/flow.h"
#include "ailoop/store/run.h"
#include "ailoop/base/util.h"

#include "unit.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* An agent's failure with `text` as its output. */
static bool limited_by(const struct al_flow *f, const char *text, int exit_code)
{
	struct al_proc_result r = AL_PROC_RESULT_INIT;
	bool hit;

	r.exit_code = exit_code;
	al_strbuf_adds(&r.log, text);
	hit = al_rate_limited(f, AL_STREAM_TEXT, &r, NULL);
	al_proc_result_release(&r);
	return hit;
}

TestSuite(budget, .fini = unit_leave_tmpdir);

Test(budget, default_rate_limit_pattern)
{
	struct al_flow f;

	memset(&f, 0, sizeof(f));
	f.rate_limit_re = al_rate_limit_default();
	cr_assert_not_null(f.rate_limit_re);
	cr_assert(limited_by(&f, "Error: 429 Too Many Requests\n", 1));
	cr_assert(limited_by(&f, "API Error: Rate limit reached for requests", 1));
	cr_assert(limited_by(&f, "{\"type\":\"rate_limit_error\"}", 1));
	cr_assert(limited_by(&f, "Claude AI usage limit reached|1700000000", 1));
	cr_assert(limited_by(&f, "overloaded_error: Overloaded", 1));
	cr_assert(limited_by(&f, "RATE-LIMIT exceeded", 1));
	cr_assert(limited_by(&f, "You've hit your limit · resets 3pm (Europe/Paris)", 1));
	cr_assert(limited_by(&f, "You've hit your session limit · resets 8:30pm (Asia/Tokyo)", 1));
	cr_assert_not(limited_by(&f, "Error: 429 rate limit", 0), "an agent that succeeded");
	cr_assert_not(limited_by(&f, "tests failed: 4290 assertions", 1), "429 as a word only");
	cr_assert_not(limited_by(&f, "segmentation fault", 139));
	pcre2_code_free(f.rate_limit_re);
}

Test(budget, a_timeout_is_no_rate_limit)
{
	struct al_flow f;
	struct al_proc_result r = AL_PROC_RESULT_INIT;

	memset(&f, 0, sizeof(f));
	f.rate_limit_re = al_rate_limit_default();
	r.exit_code = 143;
	r.timed_out = true;
	al_strbuf_adds(&r.log, "429");
	cr_assert_not(al_rate_limited(&f, AL_STREAM_TEXT, &r, NULL));
	al_proc_result_release(&r);
	pcre2_code_free(f.rate_limit_re);
}

Test(budget, read_counts_calls_and_the_window)
{
	struct al_budget_use use;
	long long now = (long long)al_budget_now();
	char text[256];

	unit_enter_tmpdir();
	cr_assert_eq(al_budget_read("run", 2, &use), 0, "no file: nothing used");
	cr_assert_eq(use.calls, 0);
	/* two calls long ago, three in the last hour, and one cut short by a kill */
	snprintf(text, sizeof(text), "100\n200\n%lld\n%lld\n%lld\n%lld", now - 3000, now - 10,
		 now - 20, now);
	unit_write("run/" AL_BUDGET_FILE, text);
	cr_assert_eq(al_budget_read("run", 2, &use), 0);
	cr_assert_eq(use.calls, 5, "a torn last line is no call");
	cr_assert_eq(use.calls_last_hour, 3);
	/* the window has room again when the second newest of it is an hour old */
	cr_assert_eq(use.wait_until, now - 20 + 3600);
	cr_assert_eq(al_budget_read("run", 4, &use), 0);
	cr_assert_eq(use.wait_until, 0, "room in the window");
}

/* Appends `text` to `path`, as a sibling process would. */
static void append(const char *path, const char *text)
{
	FILE *f = fopen(path, "a");

	cr_assert_not_null(f);
	cr_assert_eq(fputs(text, f) >= 0, true);
	cr_assert_eq(fclose(f), 0);
}

Test(budget, each_call_reads_what_was_appended_since)
{
	struct al_flow f;
	struct al_run run;
	struct al_exec ex;
	const char *calls = "run/" AL_BUDGET_FILE;

	unit_enter_tmpdir();
	memset(&f, 0, sizeof(f));
	memset(&run, 0, sizeof(run));
	memset(&ex, 0, sizeof(ex));
	run.dir = "run";
	run.events_path = "run/events.jsonl";
	run.events_fd = -1;
	ex.flow = &f;
	ex.run = &run;
	f.max_agent_calls = 5;
	unit_write(calls, "");
	cr_assert_eq(al_budget_acquire(&ex, "a", 0, NULL), 0);
	append(calls, "100\n200\n");
	cr_assert_eq(al_budget_acquire(&ex, "b", 0, NULL), 0, "4 calls of 5: two a sibling made");
	append(calls, "30"); /* a sibling killed while it wrote */
	cr_assert_eq(al_budget_acquire(&ex, "c", 0, NULL), 0, "the torn line is no call");
	cr_assert_null(strstr(unit_read(calls), "\n30"), "and is cut off: %s", unit_read(calls));
	cr_assert_eq(al_budget_acquire(&ex, "d", 0, NULL), AL_EBLOCKED, "the fifth call was the last");
	/* a record made anew (shorter than what was read) is read from its start */
	unit_write(calls, "100\n");
	cr_assert_eq(al_budget_acquire(&ex, "e", 0, NULL), 0);
	if (run.events_fd >= 0)
		close(run.events_fd);
}

/*
 * A line that is not a time (a number out of range, words, a sign) is no
 * call: an agent can write into the record, and a time near the end of
 * int64_t overflowed the window's end and spun the wait.
 */
Test(budget, a_line_that_is_no_time_is_ignored)
{
	struct al_budget_use use;
	long long now = (long long)al_budget_now();
	char text[512];

	unit_enter_tmpdir();
	snprintf(text, sizeof(text), "100\n9223372036854775000\n99999999999999999999\nabc\n-5\n"
		 "12x\n\n%lld\n", now - 10);
	unit_write("run/" AL_BUDGET_FILE, text);
	cr_assert_eq(al_budget_read("run", 1, &use), 0);
	cr_assert_eq(use.calls, 2, "only the two times are calls: %ld", use.calls);
	cr_assert_eq(use.calls_last_hour, 1);
	cr_assert_eq(use.wait_until, now - 10 + 3600);
}

/*
 * After the clock moves back, the calls recorded before are "in the
 * future": each counts as made now, no later, so the window's room comes
 * an hour from now at the latest, never 28:30:00 away.
 */
Test(budget, a_call_in_the_future_counts_as_made_now)
{
	struct al_budget_use use;
	long long now = 1800000000;
	char text[128];

	unit_enter_tmpdir();
	snprintf(text, sizeof(text), "%lld\n", now);
	unit_write("clock", text);
	cr_assert_eq(setenv("AILOOP_TEST_CLOCK", "clock", 1), 0);
	/* one call 27.5 hours ahead, one 10 minutes ahead, one 10 minutes ago */
	snprintf(text, sizeof(text), "%lld\n%lld\n%lld\n", now + 99000, now + 600, now - 600);
	unit_write("run/" AL_BUDGET_FILE, text);
	cr_assert_eq(al_budget_read("run", 1, &use), 0);
	cr_assert_eq(use.calls_last_hour, 3, "every call counts");
	cr_assert_eq(use.wait_until, now + 3600, "the wait is an hour at most: %lld s",
		     (long long)(use.wait_until - now));
	cr_assert_eq(al_budget_read("run", 3, &use), 0);
	cr_assert_eq(use.wait_until, now - 600 + 3600, "the oldest of the hour still leaves first");
}

/*
 * A call's end (its start, then "USD KIND IN OUT") is no call; a line
 * that begins with a time and goes on otherwise is no record at all.
 */
Test(budget, a_call_end_is_no_call)
{
	struct al_budget_use use;
	long long now = (long long)al_budget_now();
	char text[1024];

	unit_enter_tmpdir();
	snprintf(text, sizeof(text), "%lld\n%lld 0.031200 reported 12400 1100\n"
		 "%lld\n%lld 0 unknown 0 0\n"
		 "%lld 1.5 free 1 2\n%lld -1 unknown 1 2\n%lld 1e3 unknown 1 2\n"
		 "%lld 1.5 unknown 1\n%lld 1.5 unknown 1 2 3\n%lld 1.5 unknown 1 9999999999999999\n"
		 "%lld 1234567890.5 estimated 1 2\n%lld 1. estimated 1 2\n",
		 now - 10, now - 10, now - 5, now - 5, now, now, now, now, now, now, now, now);
	unit_write("run/" AL_BUDGET_FILE, text);
	cr_assert_eq(al_budget_read("run", 3, &use), 0);
	cr_assert_eq(use.calls, 2, "two calls, their ends and the bad lines none: %ld", use.calls);
	cr_assert_eq(use.calls_last_hour, 2);
}

/* The costs by node: a subtree holds its descendants', not a node's whose id it only begins. */
Test(budget, costs_are_summed_by_subtree)
{
	struct al_budget_costs c = { 0 };
	struct al_budget_spent s = { 0 };

	al_budget_costs_add(&c, "fix", 3, 1, 10, false);
	al_budget_costs_add(&c, "fix/a/b", 7, 8, 80, false);
	al_budget_costs_add(&c, "fix/a", 5, 2, 20, false);
	al_budget_costs_add(&c, "fixer/x", 5, 4, 40, true); /* "fixer", of a longer string */
	al_budget_costs_add(&c, "fix/a/b", 7, 16, 160, false);
	al_budget_costs_sum(&c, NULL, &s);
	cr_assert(s.usd == 31 && s.tokens == 310 && s.calls == 5 && s.unknown == 1);
	memset(&s, 0, sizeof(s));
	al_budget_costs_sum(&c, "fix", &s);
	cr_assert(s.usd == 27 && s.tokens == 270 && s.calls == 4 && s.unknown == 0);
	memset(&s, 0, sizeof(s));
	al_budget_costs_sum(&c, "fix/a", &s);
	cr_assert(s.usd == 26 && s.calls == 3);
	memset(&s, 0, sizeof(s));
	al_budget_costs_sum(&c, "fixer", &s);
	cr_assert(s.usd == 4 && s.calls == 1 && s.unknown == 1);
	cr_assert_eq(c.n, 4, "one entry a node");
	al_budget_costs_release(&c);
}

/* An earlier version's record: JSON lines, of which a cut or foreign one is no call. */
Test(budget, an_old_record_of_costs_is_read)
{
	struct al_budget_costs c = { 0 };
	struct al_budget_spent s = { 0 };

	unit_enter_tmpdir();
	al_budget_costs_read_old(&c, "run");
	cr_assert_eq(c.n, 0, "none: a run of this version");
	unit_write("run/" AL_BUDGET_OLD_COST_FILE,
		   "{\"node\":\"fix\",\"usd\":3.1,\"tokens\":1300000,\"cost\":\"estimated\"}\n"
		   "{\"node\":\"fix/a\",\"usd\":0.0,\"tokens\":5,\"cost\":\"unknown\"}\n"
		   "{\"node\":\"fix\",\"usd\":-7,\"tokens\":-1,\"cost\":\"reported\"}\n"
		   "not json\n"
		   "{\"node\":\"fix\",\"usd\":1}\n"
		   "{\"node\":\"fix\",\"usd\":100,\"tokens\":1,\"cost\":\"reported\"");
	al_budget_costs_read_old(&c, "run");
	al_budget_costs_sum(&c, "fix", &s);
	cr_assert(s.usd == 3.1 && s.tokens == 1300005 && s.calls == 3 && s.unknown == 1,
		  "$%f %lld tokens %ld calls", s.usd, s.tokens, s.calls);
	al_budget_costs_release(&c);
}
