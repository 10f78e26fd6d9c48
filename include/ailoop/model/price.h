#ifndef AILOOP_PRICE_H
#define AILOOP_PRICE_H

#include <stdbool.h>
#include <stddef.h>

/*
 * What a model's tokens cost, in US dollars per million tokens, for the
 * calls whose CLI reports no cost (codex, gemini; opencode without a
 * configured price): an estimate at the vendor's list prices, which
 * `prices:` in flow.yaml overrides. For a subscription, an estimate of
 * what the API would have billed, not a bill.
 */
/* The tokens of a call (or of many), as its CLI counts them. */
struct al_tokens {
	long long input;       /* not read from a cache */
	long long output;
	long long cache_read;
	long long cache_write;
	long long reasoning;   /* of the output, where the CLI counts it apart */
};

struct al_price {
	const char *model; /* a name, or the start of one ("claude-sonnet") */
	double input, output, cache_read, cache_write;
};

/*
 * The price of `model`: the entry of `own` (the flow's prices) or of the
 * built-in table whose name is the longest start of `model`; NULL if none.
 */
const struct al_price *al_price_find(const struct al_price *own, size_t nown, const char *model);

/* What `t` costs at price `p`. */
double al_price_cost(const struct al_price *p, const struct al_tokens *t);

#endif
