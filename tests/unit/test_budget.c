#include "ailoop/budget.h"
#include "ailoop/flow.h"
#include "ailoop/util.h"

#include "unit.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

/* An agent's failure with `text` as its output. */
static bool limited_by(const struct al_flow *f, const char *text, int exit_code)
{
	struct al_proc_result r = AL_PROC_RESULT_INIT;
	bool hit;

	r.exit_code = exit_code;
	al_strbuf_adds(&r.log, text);
	hit = al_rate_limited(f, &r);
	al_proc_result_release(&r);
	return hit;
}

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
	cr_assert_not(al_rate_limited(&f, &r));
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
