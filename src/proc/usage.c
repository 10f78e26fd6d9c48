#include "ailoop/proc/usage.h"
#include "ailoop/base/util.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* No call has counted more: a larger figure is a stream's garbage, not a count. */
#define MAX_COUNT 1000000000000000LL
#define MAX_COST 1e9

/* A count at `key` of `o`, 0 when it is none (absent, negative, absurd). */
static long long count(const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);
	double d = json_is_number(v) ? json_number_value(v) : 0;

	return d >= 0 && d <= (double)MAX_COUNT ? (long long)d : 0;
}

static const char *string(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

static void set(char **field, const char *value)
{
	if (value && *value) {
		free(*field);
		*field = al_strdup(value);
	}
}

static void set_text(struct al_usage *u, const char *text)
{
	if (text) {
		al_strbuf_reset(&u->text);
		al_strbuf_adds(&u->text, text);
	}
}

static void add_cost(struct al_usage *u, const json_t *v)
{
	double d = json_number_value(v);

	if (json_is_number(v) && isfinite(d) && d >= 0 && d <= MAX_COST) {
		u->cost_usd += d;
		u->cost_reported = true;
	}
}

/* --- claude ------------------------------------------------------------------ */

/* The text blocks of an assistant message: the final text until a result says it. */
static void claude_assistant(struct al_usage *u, const json_t *ev)
{
	const json_t *content = json_object_get(json_object_get(ev, "message"), "content");
	size_t i;
	json_t *block;
	bool any = false;

	json_array_foreach(content, i, block) {
		const char *t = string(block, "text");

		if (!t || strcmp(string(block, "type") ? string(block, "type") : "", "text"))
			continue;
		if (!any)
			al_strbuf_reset(&u->text);
		any = true;
		al_strbuf_adds(&u->text, t);
	}
}

static void claude_result(struct al_usage *u, const json_t *ev)
{
	const json_t *usage = json_object_get(ev, "usage"), *models = json_object_get(ev, "modelUsage");
	const char *model;
	json_t *m;

	set_text(u, string(ev, "result"));
	set(&u->session, string(ev, "session_id"));
	u->tokens.input = count(usage, "input_tokens");
	u->tokens.output = count(usage, "output_tokens");
	u->tokens.cache_read = count(usage, "cache_read_input_tokens");
	u->tokens.cache_write = count(usage, "cache_creation_input_tokens");
	u->tokens.reasoning = count(json_object_get(usage, "output_tokens_details"),
				    "thinking_tokens");
	u->cost_usd = 0;
	u->cost_reported = false;
	add_cost(u, json_object_get(ev, "total_cost_usd"));
	json_object_foreach((json_t *)models, model, m) {
		set(&u->model, model);
		break;
	}
	if (json_is_true(json_object_get(ev, "is_error")))
		set(&u->error, string(ev, "result") ? string(ev, "result") : string(ev, "subtype"));
	u->known = json_is_object(usage);
}

static void claude_rate(struct al_usage *u, const json_t *ev)
{
	const json_t *info = json_object_get(ev, "rate_limit_info");
	const char *status = string(info, "status");
	long long resets = count(info, "resetsAt");

	if (!status)
		return;
	/*
	 * The reset of the notice that counts: a refusal's, else a warning's.
	 * An "allowed" event comes with every turn, its window's reset of no
	 * interest, and must not pass for the refusal's.
	 */
	if (!strcmp(status, "rejected"))
		u->rate = AL_RATE_REJECTED;
	else if (!strcmp(status, "allowed_warning") && u->rate != AL_RATE_REJECTED)
		u->rate = AL_RATE_WARNING;
	else
		return;
	u->resets_at = resets > 100000000000LL ? resets / 1000 : resets; /* ms or s; 0 unknown */
}

static void claude_event(struct al_usage *u, const json_t *ev)
{
	const char *type = string(ev, "type");

	if (!type)
		return;
	set(&u->session, string(ev, "session_id"));
	if (!strcmp(type, "assistant"))
		claude_assistant(u, ev);
	else if (!strcmp(type, "result"))
		claude_result(u, ev);
	else if (!strcmp(type, "rate_limit_event"))
		claude_rate(u, ev);
	else if (!strcmp(type, "system"))
		set(&u->model, string(ev, "model"));
}

/* --- codex ------------------------------------------------------------------- */

static void codex_event(struct al_usage *u, const json_t *ev)
{
	const char *type = string(ev, "type");
	const json_t *item = json_object_get(ev, "item"), *usage = json_object_get(ev, "usage");

	if (!type)
		return;
	if (!strcmp(type, "thread.started")) {
		set(&u->session, string(ev, "thread_id"));
	} else if (!strcmp(type, "item.completed") && string(item, "type") &&
		   !strcmp(string(item, "type"), "agent_message")) {
		set_text(u, string(item, "text"));
	} else if (!strcmp(type, "turn.completed")) {
		/* input_tokens counts those read from a cache and written to it too */
		long long cached = count(usage, "cached_input_tokens"), in = count(usage, "input_tokens");
		long long written = count(usage, "cache_write_input_tokens");

		u->tokens.cache_read += cached;
		u->tokens.cache_write += written;
		u->tokens.input += in > cached + written ? in - cached - written : 0;
		u->tokens.output += count(usage, "output_tokens");
		u->tokens.reasoning += count(usage, "reasoning_output_tokens");
		u->known = true;
	} else if (!strcmp(type, "turn.failed")) {
		set(&u->error, string(json_object_get(ev, "error"), "message"));
	} else if (!strcmp(type, "error")) {
		set(&u->error, string(ev, "message"));
	}
}

/* --- gemini ------------------------------------------------------------------ */

static void gemini_object(struct al_usage *u, const json_t *o)
{
	const json_t *models = json_object_get(json_object_get(o, "stats"), "models"), *m;
	const json_t *err = json_object_get(o, "error");
	const char *name;

	set(&u->session, string(o, "session_id"));
	set_text(u, string(o, "response"));
	json_object_foreach((json_t *)models, name, m) {
		const json_t *t = json_object_get(m, "tokens");
		long long cached = count(t, "cached");
		long long in = json_object_get(t, "input") ? count(t, "input") + cached
							   : count(t, "prompt");

		if (!u->model)
			set(&u->model, name);
		u->tokens.cache_read += cached;
		u->tokens.input += in > cached ? in - cached : 0;
		/* the thoughts are output too (billed as such), apart from candidates */
		u->tokens.output += count(t, "candidates") + count(t, "thoughts");
		u->tokens.reasoning += count(t, "thoughts");
		u->known = true;
	}
	if (err)
		set(&u->error, json_is_string(err) ? json_string_value(err) : string(err, "message"));
}

/* --- opencode ---------------------------------------------------------------- */

static void opencode_event(struct al_usage *u, const json_t *ev, bool *new_step)
{
	const char *type = string(ev, "type");
	const json_t *part = json_object_get(ev, "part"), *tokens = json_object_get(part, "tokens");
	const json_t *cache = json_object_get(tokens, "cache"), *cost = json_object_get(part, "cost");

	if (!type)
		return;
	set(&u->session, string(ev, "sessionID"));
	if (!strcmp(type, "text") && string(part, "text")) {
		if (*new_step) /* a step's text after another step's: the later one is the answer */
			al_strbuf_reset(&u->text);
		*new_step = false;
		al_strbuf_adds(&u->text, string(part, "text"));
	} else if (!strcmp(type, "step_finish")) {
		u->tokens.input += count(tokens, "input");
		/* the reasoning is output too (billed as such), apart from output */
		u->tokens.output += count(tokens, "output") + count(tokens, "reasoning");
		u->tokens.reasoning += count(tokens, "reasoning");
		u->tokens.cache_read += count(cache, "read");
		u->tokens.cache_write += count(cache, "write");
		/* a cost of 0 is a model with no configured price: not a figure */
		if (json_number_value(cost) > 0)
			add_cost(u, cost);
		u->known = true;
		*new_step = true;
	} else if (!strcmp(type, "error")) {
		const json_t *e = json_object_get(ev, "error");

		set(&u->error, string(json_object_get(e, "data"), "message") ?
			       string(json_object_get(e, "data"), "message") : string(e, "message"));
	}
}

/* --- reading ----------------------------------------------------------------- */

static void one(struct al_usage *u, enum al_stream format, const json_t *ev, bool *new_step)
{
	if (!json_is_object(ev))
		return;
	switch (format) {
	case AL_STREAM_CLAUDE:
		claude_event(u, ev);
		break;
	case AL_STREAM_CODEX:
		codex_event(u, ev);
		break;
	case AL_STREAM_GEMINI:
		gemini_object(u, ev);
		break;
	case AL_STREAM_OPENCODE:
		opencode_event(u, ev, new_step);
		break;
	case AL_STREAM_TEXT:
		break;
	}
}

void al_usage_read(struct al_usage *u, enum al_stream format, const char *out, size_t len)
{
	const char *p = out, *end = out + len;
	bool new_step = false, any = false;
	json_t *whole;

	if (format == AL_STREAM_TEXT) {
		al_strbuf_add(&u->text, out, len);
		return;
	}
	/* one document (claude's json, gemini's pretty-printed object), else one a line */
	whole = json_loadb(out, len, JSON_DECODE_ANY, NULL);
	if (json_is_object(whole)) {
		one(u, format, whole, &new_step);
		any = true;
	}
	json_decref(whole);
	whole = NULL;
	while (!any && p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p)), *eol = nl ? nl : end;
		json_t *ev = eol > p && *p == '{' ? json_loadb(p, (size_t)(eol - p), 0, NULL) : NULL;

		one(u, format, ev, &new_step);
		json_decref(ev);
		p = nl ? nl + 1 : end;
	}
	if (format == AL_STREAM_GEMINI && !any && !u->known) {
		/* a line of the CLI's own before the object */
		const char *brace = memchr(out, '{', len);

		if (brace && (whole = json_loadb(brace, (size_t)(end - brace), 0, NULL)))
			one(u, format, whole, &new_step);
		json_decref(whole);
	}
	if (!u->text.len && !u->known && !u->session)
		al_strbuf_add(&u->text, out, len); /* not what was asked for: as printed */
}

void al_usage_release(struct al_usage *u)
{
	al_strbuf_release(&u->text);
	free(u->session);
	free(u->model);
	free(u->error);
	memset(u, 0, sizeof(*u));
}

/* Whether `s` (of `len` bytes) holds `word`, whatever the case of its letters. */
static bool holds(const char *s, size_t len, const char *word)
{
	size_t n = strlen(word);

	for (size_t i = 0; i + n <= len; i++)
		if (!strncasecmp(s + i, word, n))
			return true;
	return false;
}

bool al_usage_session_lost(const char *out, size_t len)
{
	static const char *const says[] = { "no conversation found", "no rollout found",
					    "error resuming session", "session not found",
					    "no saved session found" };

	for (size_t i = 0; i < sizeof(says) / sizeof(*says); i++)
		if (holds(out, len, says[i]))
			return true;
	return false;
}
