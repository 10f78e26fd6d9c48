#ifndef AILOOP_RATELIMIT_H
#define AILOOP_RATELIMIT_H

#include "ailoop/model/runner.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * When a provider's limit resets, as an agent CLI that hit it says so:
 *   claude   a stream-json rate_limit_event {status: rejected, resetsAt},
 *            else its message: "You've hit your limit · resets 3pm
 *            (Europe/Paris)", "resets Jan 30, 11:30am (Asia/Calcutta)",
 *            "Your limit will reset at 1pm (Etc/GMT+5)", "Claude AI usage
 *            limit reached|1749924000"
 *   codex    "Try again at 3:05 PM.", "or try again at Jul 5th, 2026
 *            8:19 PM." (the machine's zone: the CLI's, which ailoop's
 *            environment is), "try again in 2 days 17 hours 14 minutes."
 * A zone named in parentheses is the TZ database's; one it does not hold
 * makes the time unknown (glibc would take it for UTC). A time without a
 * date is the next one, or one less than an hour gone (a limit that reset
 * a minute ago is past, not tomorrow's); a date without a year, of the year
 * nearest `now`. Of several in the text, the last counts.
 */

/*
 * The reset `text` (`len` bytes) names, in seconds since the epoch, read
 * as of `now`; 0 if it names none it can read.
 */
int64_t al_ratelimit_reset(const char *text, size_t len, int64_t now);

/* What a failed agent printed says of its provider's limit. */
struct al_ratelimit {
	bool rejected;    /* its stream says the request was refused for the limit */
	int64_t reset_at; /* when the limit resets, seconds since the epoch; 0 unknown */
};

/*
 * Reads `out`, what the agent printed on stdout in `stream` (runner.h), and
 * `log`, stdout and stderr, into `rl`: the stream's notice first, then the
 * last reset the log names.
 */
void al_ratelimit_read(struct al_ratelimit *rl, enum al_stream stream, const char *out,
		       size_t out_len, const char *log, size_t log_len, int64_t now);

#endif
