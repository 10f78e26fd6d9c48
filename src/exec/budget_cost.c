#include "ailoop/exec/budget.h"
#include "ailoop/base/fsutil.h"
#include "ailoop/store/run.h"
#include "ailoop/base/strbuf.h"
#include "ailoop/base/util.h"

#include <jansson.h>
#include <math.h>
#include <string.h>
#include <unistd.h>

/* What the calls of a subtree (or of the run) have cost so far. */
struct spent {
	double usd;
	long long tokens;
	long unknown, calls;
};

void al_budget_cost_record(struct al_run *run, const char *node_path, double usd,
			   long long tokens, const char *kind)
{
	char *path = al_xprintf("%s/" AL_COST_FILE, run->dir);
	json_t *o = json_pack("{s:s, s:f, s:I, s:s}", "node", node_path, "usd", usd, "tokens",
			      (json_int_t)tokens, "cost", kind);
	char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
	int fd = -1;

	if (text) {
		struct al_strbuf line = AL_STRBUF_INIT;

		al_strbuf_addf(&line, "%s\n", text);
		/* a record lost (a full disk) is a budget counted short, not a run stopped */
		al_append_line(&fd, path, line.buf, line.len);
		al_strbuf_release(&line);
	}
	if (fd >= 0)
		close(fd);
	free(text);
	json_decref(o);
	free(path);
}

/* Whether a call of node `path` is in the subtree of `top` (NULL: the run). */
static bool under(const char *path, const char *top)
{
	size_t n = top ? strlen(top) : 0;

	return !top || (!strncmp(path, top, n) && (path[n] == '\0' || path[n] == '/'));
}

static void sum(const struct al_strbuf *record, const char *top, struct spent *s)
{
	const char *p = record->buf, *end = p + record->len;

	memset(s, 0, sizeof(*s));
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		json_t *o = nl ? json_loadb(p, (size_t)(nl - p), 0, NULL) : NULL;
		const char *node = json_string_value(json_object_get(o, "node"));
		const char *kind = json_string_value(json_object_get(o, "cost"));
		double usd = json_number_value(json_object_get(o, "usd"));
		json_int_t tokens = json_integer_value(json_object_get(o, "tokens"));

		/* a line cut by a crash, or not ours: no call of any budget's */
		if (node && kind && under(node, top)) {
			s->calls++;
			s->usd += isfinite(usd) && usd >= 0 && usd <= 1e9 ? usd : 0;
			s->tokens += tokens >= 0 && tokens <= 1000000000000000LL ? tokens : 0;
			s->unknown += !strcmp(kind, "unknown");
		}
		json_decref(o);
		p = nl ? nl + 1 : end;
	}
}

/* The budget `usd`/`tokens` of node `node` (NULL: the run's limits) against `s`. */
static int check(struct al_exec *ex, const struct spent *s, double usd, long long tokens,
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
	struct al_strbuf record = AL_STRBUF_INIT;
	struct spent s;
	char *path = al_xprintf("%s/" AL_COST_FILE, ex->run->dir);
	int rc = 0;
	bool any = f->max_cost_usd > 0 || f->max_tokens > 0;

	for (const struct al_node *n = node; n && !any; n = n->parent)
		any = n->max_cost_usd > 0 || n->max_tokens > 0;
	if (!any || al_strbuf_read_file(&record, path, 0) < 0)
		goto done; /* no budget, or no call yet */
	sum(&record, NULL, &s);
	if ((rc = check(ex, &s, f->max_cost_usd, f->max_tokens, NULL, what)) < 0)
		goto done;
	if (f->unknown_cost_blocks && f->max_cost_usd > 0 && s.unknown) {
		rc = al_budget_blocked(ex, "limits.unknown_cost", "give their models a price under 'prices:' "
			       "or set limits.unknown_cost: count", what,
			       "%ld agent call%s of unknown cost, and limits.unknown_cost is block",
			       s.unknown, s.unknown == 1 ? "" : "s");
		goto done;
	}
	for (const struct al_node *n = node; n && rc == 0; n = n->parent) {
		if (n->max_cost_usd <= 0 && n->max_tokens <= 0)
			continue;
		sum(&record, n->path, &s);
		rc = check(ex, &s, n->max_cost_usd, n->max_tokens, n->path, what);
	}
done:
	al_strbuf_release(&record);
	free(path);
	return rc;
}
