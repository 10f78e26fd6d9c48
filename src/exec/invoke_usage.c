#include "invoke_int.h"
#include "ailoop/exec/budget.h"
#include "ailoop/model/price.h"
#include "ailoop/store/run.h"
#include "ailoop/base/util.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* What an agent call cost: its usage read, priced, recorded and counted. */

/*
 * The CLI said its provider's limit is near (claude's allowed_warning):
 * told and recorded, not waited on; the call went through.
 */
static void rate_warning(const struct al_call *call)
{
	const struct al_call_ctx *c = call->ctx;
	time_t t = (time_t)call->usage.resets_at;
	char at[80] = "";
	struct tm tm;

	if (t && localtime_r(&t, &tm))
		strftime(at, sizeof(at), ", which resets at %Y-%m-%d %H:%M %Z", &tm);
	if (call->run)
		al_run_event(call->run, "rate_limit_warning", "{s:s, s:s, s:s, s:s?, s:I}", "node",
			     c->node->path, "label", c->label, "role", al_role_names[c->role],
			     "name", c->name, "reset_at", (json_int_t)call->usage.resets_at);
	al_progress_note(call->progress, "ailoop: [%s] %s: warning: %s '%s' is close to its "
			 "provider's rate limit%s", c->label, c->node->path, al_role_names[c->role],
			 c->agent->path, at);
}

/*
 * A CLI whose usage of a resumed session counts the earlier calls' too
 * (codex's; a runner's `cumulative_usage`): the call's own is what it
 * adds to the count after the session's last call, kept in the node's
 * state (`session-totals:`); the count after this call is kept once the
 * call is done (call->session_totals).
 */
static void session_share(struct al_call *call)
{
	struct al_tokens *t = &call->usage.tokens;
	const char *kept = NULL;
	long long before[5] = { 0 };
	long long *now[5] = { &t->input, &t->output, &t->cache_read, &t->cache_write, &t->reasoning };

	if (!call->session_key || !call->ctx->sessions || !call->usage.known)
		return;
	free(call->session_totals);
	call->session_totals = al_xprintf("%lld %lld %lld %lld %lld", t->input, t->output,
					  t->cache_read, t->cache_write, t->reasoning);
	if (call->resumed)
		kept = al_node_state_session_totals(call->ctx->sessions, call->session_key);
	/* an unreadable count is none: the session's whole count is the call's */
	if (!kept || sscanf(kept, "%lld %lld %lld %lld %lld", &before[0], &before[1], &before[2],
			    &before[3], &before[4]) != 5)
		return;
	for (int i = 0; i < 5; i++)
		*now[i] = *now[i] > before[i] ? *now[i] - before[i] : 0;
}

/*
 * What the call's program printed, read (usage.h), and what it cost: the
 * CLI's figure, else an estimate at the model's price, else unknown; an
 * "agent_usage" event, and the sum for the next commit's [cost] line.
 */
void al_call_count_usage(struct al_call *call)
{
	const struct al_call_ctx *c = call->ctx;
	struct al_usage *u = &call->usage;
	const struct al_price *p;
	const char *kind = "unknown";
	double usd = 0;

	al_usage_read(u, call->stream, call->res.out.buf, call->res.out.len);
	if (call->stream == AL_STREAM_TEXT)
		return; /* a script or a CLI that prints text: nothing to count */
	if (call->cumulative)
		session_share(call);
	if (!u->model && call->model) /* codex names none: the one asked for */
		u->model = al_strdup(call->model);
	if (u->cost_reported) {
		usd = u->cost_usd;
		kind = "reported";
	} else if (u->known && (p = al_price_find(call->flow ? call->flow->prices : NULL,
						  call->flow ? call->flow->nprices : 0, u->model))) {
		usd = al_price_cost(p, &u->tokens);
		kind = "estimated";
	}
	if (call->run && call->started)
		al_budget_call_end(call->run, c->node->path, call->started, usd, kind,
				   u->tokens.input + u->tokens.cache_read + u->tokens.cache_write,
				   u->tokens.output);
	if (call->spend) {
		call->spend->calls++;
		call->spend->usd += usd;
		call->spend->input += u->tokens.input + u->tokens.cache_read + u->tokens.cache_write;
		call->spend->output += u->tokens.output;
		call->spend->estimated += !strcmp(kind, "estimated");
		call->spend->unknown += !strcmp(kind, "unknown");
	}
	if (call->run)
		al_run_event(call->run, "agent_usage",
			     "{s:s, s:s, s:s, s:s?, s:s?, s:s?, s:b, s:I, s:I, s:I, s:I, s:I, s:f, s:s}",
			     "node", c->node->path, "label", c->label, "role", al_role_names[c->role],
			     "name", c->name, "model", u->model, "session", u->session, "known",
			     u->known, "input", (json_int_t)u->tokens.input, "output",
			     (json_int_t)u->tokens.output, "cache_read", (json_int_t)u->tokens.cache_read,
			     "cache_write", (json_int_t)u->tokens.cache_write, "reasoning",
			     (json_int_t)u->tokens.reasoning, "cost_usd", usd, "cost", kind);
	if (u->rate == AL_RATE_WARNING)
		rate_warning(call);
}
