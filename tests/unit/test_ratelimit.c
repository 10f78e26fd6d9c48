#include "ailoop/proc/ratelimit.h"
#include "unit.h"

#include <stdlib.h>
#include <string.h>

/*
 * When a provider's limit resets, as the CLIs' messages say, read as of
 * T0: 2027-01-15 08:00:00 UTC, 09:00 in Paris, midnight in Los Angeles.
 */
#define T0 1800000000LL

static long long reset(const char *text)
{
	return (long long)al_ratelimit_reset(text, strlen(text), T0);
}

TestSuite(ratelimit);

Test(ratelimit, claude_names_its_zone)
{
	cr_assert_eq(reset("You've hit your limit · resets 3pm (Europe/Paris)"), 1800021600LL);
	cr_assert_eq(reset("You've hit your session limit · resets 3am (America/Los_Angeles)"),
		     1800010800LL);
	cr_assert_eq(reset("resets 8:30am (UTC)\n/login to switch"), T0 + 1800);
	cr_assert_eq(reset("You've hit your limit · resets Jan 30, 11:30am (Asia/Kolkata)"),
		     1801288800LL, "a date without its year: this year's");
	cr_assert_eq(reset("Your limit will reset at 1pm (Etc/GMT+5)"), T0 + 10 * 3600,
		     "1pm at UTC-5 is 18:00 UTC");
	cr_assert_eq(reset("Claude AI usage limit reached|1800003600"), T0 + 3600);
	cr_assert_eq(reset("Claude AI usage limit reached|1800003600000"), T0 + 3600, "in ms");
}

Test(ratelimit, a_time_of_day_is_the_next_or_just_past)
{
	/* 11:30pm in Los Angeles half an hour ago: a reset past, not 23.5 hours ahead */
	cr_assert_eq(reset("resets 11:30pm (America/Los_Angeles)"), T0 - 1800);
	cr_assert_eq(reset("resets 7am (UTC)"), T0 - 3600, "an hour ago: past");
	/* 1am in Paris, 8 hours gone: tomorrow's */
	cr_assert_eq(reset("resets 1am (Europe/Paris)"), T0 + 16 * 3600);
	cr_assert_eq(reset("resets 11pm (Europe/Paris)"), T0 + 14 * 3600, "tonight");
	cr_assert_eq(reset("resets Jan 2, 9am (UTC)"), 1798880400LL,
		     "a date without its year: of the year nearest, past");
	cr_assert_eq(reset("resets Dec 31, 9am (UTC)"), 1798880400LL - 2 * 86400,
		     "last year's, nearer than this year's");
}

Test(ratelimit, codex_in_the_machines_zone)
{
	cr_assert_eq(setenv("TZ", "UTC", 1), 0);
	cr_assert_eq(reset("You've hit your usage limit. Try again at 3:05 PM."), T0 + 7 * 3600 + 300);
	cr_assert_eq(reset("You've hit your usage limit. Upgrade to Plus to continue using Codex "
			   "(https://chatgpt.com/explore/plus), or try again at Jul 5th, 2027 8:19 PM."),
		     1814818740LL);
	cr_assert_eq(reset("■ You've hit your usage limit. Upgrade to Pro "
			   "(https://openai.com/chatgpt/pricing) or try again in 5 days 22 hours 11\n"
			   "minutes."),
		     T0 + 5 * 86400 + 22 * 3600 + 11 * 60, "far ahead, over a line break");
	cr_assert_eq(reset("try again in 2 hours 5 minutes"), T0 + 2 * 3600 + 300);
	cr_assert_eq(reset("Rate limit reached. Please try again in 1.5s."), T0 + 2);
	cr_assert_eq(setenv("TZ", "America/Los_Angeles", 1), 0);
	cr_assert_eq(reset("Try again at 3:05 AM."), 1800010800LL + 300, "in the machine's zone");
	cr_assert_str_eq(getenv("TZ"), "America/Los_Angeles", "its zone is left as it was");
	cr_assert_eq(reset("resets 3pm (Europe/Paris)"), 1800021600LL);
	cr_assert_str_eq(getenv("TZ"), "America/Los_Angeles", "also after another's");
}

Test(ratelimit, what_names_no_reset)
{
	const char *none[] = {
		"",
		"Error: 429 Too Many Requests",
		"resets 3pm (Mars/Olympus)",  /* a zone the TZ database does not hold */
		"resets 3pm (Europe/../../etc/passwd)",
		"resets 13pm", "resets 0am", "resets 3:75pm", "resets 25:00", "resets soon",
		"resets 3 times a day", "resets Feb 30, 3pm (UTC)", "resets Jan 3pm",
		"try again in a while", "try again in 9999999 days", "try again at noon",
		"limit reached|abc", "limit reached|99999999999999999999",
		"try again at Jul 5th, 2031 8:19 PM", /* years ahead: garbage */
	};

	for (size_t i = 0; i < sizeof(none) / sizeof(*none); i++)
		cr_assert_eq(reset(none[i]), 0, "'%s' gave %lld", none[i], reset(none[i]));
	/* cut at every byte: never more than it says, and never a crash */
	{
		const char *s = "resets Jan 30, 11:30am (Asia/Kolkata) try again in 2 hours";

		for (size_t n = 0; n <= strlen(s); n++)
			(void)al_ratelimit_reset(s, n, T0);
	}
}

Test(ratelimit, the_last_counts)
{
	cr_assert_eq(reset("resets 3pm (UTC)\n...\nYou've hit your limit · resets 4pm (UTC)"),
		     T0 + 8 * 3600);
}

Test(ratelimit, a_claude_stream_that_refuses)
{
	const char *rejected =
		"{\"type\":\"rate_limit_event\",\"rate_limit_info\":{\"status\":\"allowed_warning\","
		"\"resetsAt\":1800001000}}\n"
		"{\"type\":\"rate_limit_event\",\"rate_limit_info\":{\"status\":\"rejected\","
		"\"resetsAt\":1800002000}}\n"
		"{\"type\":\"rate_limit_event\",\"rate_limit_info\":{\"status\":\"allowed\","
		"\"resetsAt\":1800009000}}\n"
		"{\"type\":\"result\",\"is_error\":true,\"result\":\"resets 3pm (UTC)\"}\n";
	const char *allowed = "{\"type\":\"rate_limit_event\",\"rate_limit_info\":{\"status\":"
			      "\"allowed\",\"resetsAt\":1800009000}}\n";
	const char *text = "You've hit your limit · resets 9am (UTC)";
	struct al_ratelimit rl;

	al_ratelimit_read(&rl, AL_STREAM_CLAUDE, rejected, strlen(rejected), rejected,
			  strlen(rejected), T0);
	cr_assert(rl.rejected);
	cr_assert_eq(rl.reset_at, 1800002000, "the refusal's reset, not the text's nor another's");
	al_ratelimit_read(&rl, AL_STREAM_CLAUDE, allowed, strlen(allowed), allowed, strlen(allowed),
			  T0);
	cr_assert_not(rl.rejected);
	cr_assert_eq(rl.reset_at, 0, "an allowed window's reset is none");
	al_ratelimit_read(&rl, AL_STREAM_TEXT, text, strlen(text), text, strlen(text), T0);
	cr_assert_not(rl.rejected);
	cr_assert_eq(rl.reset_at, T0 + 3600, "a message's");
}
