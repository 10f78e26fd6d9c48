#include "ailoop/model/price.h"

#include <string.h>

/*
 * List prices per million tokens (input, output, cache read, cache write)
 * as the vendors publish them; flow.yaml's `prices:` wins over any entry.
 * A family's entry covers its dated and numbered releases.
 */
static const struct al_price builtin[] = {
	{ "claude-opus-4-5", 5, 25, 0.5, 6.25 },
	{ "claude-opus", 15, 75, 1.5, 18.75 },
	{ "claude-sonnet", 3, 15, 0.3, 3.75 },
	{ "claude-3-7-sonnet", 3, 15, 0.3, 3.75 },
	{ "claude-3-5-sonnet", 3, 15, 0.3, 3.75 },
	{ "claude-haiku", 1, 5, 0.1, 1.25 },
	{ "claude-3-5-haiku", 0.8, 4, 0.08, 1 },
	{ "gpt-5-nano", 0.05, 0.4, 0.005, 0 },
	{ "gpt-5-mini", 0.25, 2, 0.025, 0 },
	{ "gpt-5", 1.25, 10, 0.125, 0 },
	{ "gpt-4.1-mini", 0.4, 1.6, 0.1, 0 },
	{ "gpt-4.1", 2, 8, 0.5, 0 },
	{ "o4-mini", 1.1, 4.4, 0.275, 0 },
	{ "o3", 2, 8, 0.5, 0 },
	{ "gemini-2.5-flash-lite", 0.1, 0.4, 0.025, 0 },
	{ "gemini-2.5-flash", 0.3, 2.5, 0.075, 0 },
	{ "gemini-2.5-pro", 1.25, 10, 0.31, 0 },
};

static const struct al_price *longest(const struct al_price *v, size_t n, const char *model,
				      const struct al_price *best)
{
	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(v[i].model);

		if (!strncmp(model, v[i].model, len) && (!best || len > strlen(best->model)))
			best = &v[i];
	}
	return best;
}

const struct al_price *al_price_find(const struct al_price *own, size_t nown, const char *model)
{
	const struct al_price *p;

	if (!model)
		return NULL;
	/* the flow's own first: any entry of it outranks the table */
	if ((p = longest(own, nown, model, NULL)))
		return p;
	if (strchr(model, '/')) /* provider/model (opencode) */
		model = strchr(model, '/') + 1;
	return longest(builtin, sizeof(builtin) / sizeof(builtin[0]), model, NULL);
}

double al_price_cost(const struct al_price *p, const struct al_tokens *t)
{
	return ((double)t->input * p->input + (double)t->output * p->output +
		(double)t->cache_read * p->cache_read + (double)t->cache_write * p->cache_write) /
	       1e6;
}
