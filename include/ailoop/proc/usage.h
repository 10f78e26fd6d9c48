#ifndef AILOOP_USAGE_H
#define AILOOP_USAGE_H

#include "ailoop/base/strbuf.h"
#include "ailoop/model/price.h"
#include "ailoop/model/runner.h"

#include <stdbool.h>
#include <stdint.h>

/*
 * What an agent CLI printed, read in the form its runner prints it: the
 * final text (what a CLI printing text meant: the output an agent that
 * wrote none gave, and the commit subject), the CLI's session id, the
 * tokens and the cost it reports, its error and its rate-limit notices.
 * The four CLIs' JSON modes are read into one record:
 *   claude    -p --output-format stream-json --verbose (or json): lines of
 *             {type: system|assistant|user|rate_limit_event|result}
 *   codex     exec --json: lines of {type: thread.started|item.completed|
 *             turn.completed|turn.failed|error}
 *   gemini    -o json: one object {session_id, response, stats, error}
 *   opencode  run --format json: lines of {type: text|step_finish|error,
 *             sessionID, part}
 * A stream cut short, malformed or of another version gives what it can:
 * the text read so far (the raw output when none could be), usage unknown.
 */
enum al_rate_notice { AL_RATE_NONE, AL_RATE_WARNING, AL_RATE_REJECTED };

struct al_usage {
	bool known;             /* the stream ended with its usage: tokens are the call's */
	struct al_strbuf text;  /* the final text */
	char *session;          /* the CLI's session id, or NULL */
	char *model;            /* the model it reports using (the first of several), or NULL */
	struct al_tokens tokens;
	bool cost_reported;     /* the CLI gave a cost: cost_usd */
	double cost_usd;
	char *error;            /* what the CLI reported as its error, or NULL */
	enum al_rate_notice rate;
	int64_t resets_at;      /* when a rate limit resets, Unix seconds; 0 unknown */
};

#define AL_USAGE_INIT { false, AL_STRBUF_INIT, NULL, NULL, { 0, 0, 0, 0, 0 }, false, 0, NULL, \
			AL_RATE_NONE, 0 }

/* Reads `out`, what a CLI printed in `format` (runner.h), into `u` (AL_USAGE_INIT). */
void al_usage_read(struct al_usage *u, enum al_stream format, const char *out, size_t len);
void al_usage_release(struct al_usage *u);
/*
 * True if what a CLI printed says the session it was to resume does not
 * exist: claude's "No conversation found with session ID", codex's "no
 * rollout found for thread id", gemini's "Error resuming session",
 * opencode's "Session not found", qwen-code's "No saved session found".
 */
bool al_usage_session_lost(const char *out, size_t len);

#endif
