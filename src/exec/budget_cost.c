#include "ailoop/exec/budget.h"
#include "ailoop/base/fsutil.h"
#include "ailoop/store/run.h"
#include "ailoop/base/strbuf.h"
#include "ailoop/base/util.h"

#include <jansson.h>
#include <math.h>
#include <string.h>
#include <unistd.h>

/* What the calls of one node have cost. */
struct al_budget_node_cost {
	char *node;
	struct al_budget_spent spent;
};

void al_budget_costs_add(struct al_budget_costs *c, const char *node, size_t len, double usd,
			 long long tokens, bool unknown)
{
	struct al_budget_node_cost *e = NULL;

	/* a run has few nodes beside its calls: the latest, likeliest, first */
	for (size_t i = c->n; i > 0 && !e; i--)
		if (!strncmp(c->v[i - 1].node, node, len) && c->v[i - 1].node[len] == '\0')
			e = &c->v[i - 1];
	if (!e) {
		AL_GROW(c->v, c->n, c->alloc);
		e = &c->v[c->n++];
		memset(e, 0, sizeof(*e));
		e->node = al_strndup(node, len);
	}
	e->spent.calls++;
	e->spent.usd += usd;
	e->spent.tokens += tokens;
	e->spent.unknown += unknown;
}

void al_budget_costs_release(struct al_budget_costs *c)
{
	for (size_t i = 0; i < c->n; i++)
		free(c->v[i].node);
	free(c->v);
	memset(c, 0, sizeof(*c));
}

/* Whether a call of node `path` is in the subtree of `top` (NULL: the run). */
static bool under(const char *path, const char *top)
{
	size_t n = top ? strlen(top) : 0;

	return !top || (!strncmp(path, top, n) && (path[n] == '\0' || path[n] == '/'));
}

void al_budget_costs_sum(const struct al_budget_costs *c, const char *top,
			 struct al_budget_spent *s)
{
	for (size_t i = 0; i < c->n; i++) {
		if (!under(c->v[i].node, top))
			continue;
		s->usd += c->v[i].spent.usd;
		s->tokens += c->v[i].spent.tokens;
		s->calls += c->v[i].spent.calls;
		s->unknown += c->v[i].spent.unknown;
	}
}

void al_budget_costs_read_old(struct al_budget_costs *c, const char *run_dir)
{
	struct al_strbuf record = AL_STRBUF_INIT;
	char *path = al_xprintf("%s/" AL_BUDGET_OLD_COST_FILE, run_dir);

	/* none: a run of this version */
	if (al_strbuf_read_file(&record, path, 0) < 0)
		goto done;
	for (const char *p = record.buf, *end = p + record.len; p < end;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		json_t *o = nl ? json_loadb(p, (size_t)(nl - p), 0, NULL) : NULL;
		const char *node = json_string_value(json_object_get(o, "node"));
		const char *kind = json_string_value(json_object_get(o, "cost"));
		double usd = json_number_value(json_object_get(o, "usd"));
		json_int_t tokens = json_integer_value(json_object_get(o, "tokens"));

		/* a line cut by a crash, or not ours: no call of any budget's */
		if (node && kind)
			al_budget_costs_add(c, node, strlen(node),
					    isfinite(usd) && usd >= 0 && usd <= 1e9 ? usd : 0,
					    tokens >= 0 && tokens <= 1000000000000000LL ? tokens : 0,
					    !strcmp(kind, "unknown"));
		json_decref(o);
		p = nl ? nl + 1 : end;
	}
done:
	al_strbuf_release(&record);
	free(path);
}

/* The budget `usd`/`tokens` of node `node` (NULL: the run's limits) against `s`. */
static int check(struct al_exec *ex, const struct al_budget_spent *s, double usd, long long tokens,
		 const char *node, const char *what)
{
	bool money = usd > 0 && s->usd >= usd;
	char where[600], how[700];

	if (!money && !(tokens > 0 && s->tokens >= tokens))
		return 0;
	if (node)
		snprintf(where, sizeof(where), "termination.%s of node '%s'",
			 money ? "max_cost_usd" : "max_tokens", node);
	else
		snprintf(where, sizeof(where), "limits.%s", money ? "max_cost_usd" : "max_tokens");
	snprintf(how, sizeof(how), "raise %s", where);
	if (money)
		return al_budget_blocked(ex, where, how, what, "cost budget spent: $%.4f for %ld call%s%s, "
				 "%s is $%.4f", s->usd, s->calls, s->calls == 1 ? "" : "s",
				 s->unknown ? " (and some of unknown cost)" : "", where, usd);
	return al_budget_blocked(ex, where, how, what, "token budget spent: %lld tokens for %ld call%s, "
			 "%s is %lld", s->tokens, s->calls, s->calls == 1 ? "" : "s", where, tokens);
}

int al_budget_cost_check(struct al_exec *ex, const struct al_node *node, const char *what)
{
	const struct al_flow *f = ex->flow;
	const struct al_budget_costs *costs;
	struct al_budget_spent s = { 0 };
	bool any = f->max_cost_usd > 0 || f->max_tokens > 0;
	int rc;

	for (const struct al_node *n = node; n && !any; n = n->parent)
		any = n->max_cost_usd > 0 || n->max_tokens > 0;
	if (!any)
		return 0;
	if ((rc = al_budget_costs_read(ex, &costs)) < 0)
		return rc;
	al_budget_costs_sum(costs, NULL, &s);
	if ((rc = check(ex, &s, f->max_cost_usd, f->max_tokens, NULL, what)) < 0)
		return rc;
	if (f->unknown_cost_blocks && f->max_cost_usd > 0 && s.unknown)
		return al_budget_blocked(ex, "limits.unknown_cost", "give their models a price under "
					 "'prices:' or set limits.unknown_cost: count", what,
					 "%ld agent call%s of unknown cost, and limits.unknown_cost "
					 "is block", s.unknown, s.unknown == 1 ? "" : "s");
	for (const struct al_node *n = node; n && rc == 0; n = n->parent) {
		if (n->max_cost_usd <= 0 && n->max_tokens <= 0)
			continue;
		memset(&s, 0, sizeof(s));
		al_budget_costs_sum(costs, n->path, &s);
		rc = check(ex, &s, n->max_cost_usd, n->max_tokens, n->path, what);
	}
	return rc;
}
