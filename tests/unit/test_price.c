#include "ailoop/model/price.h"
#include "unit.h"

Test(price, the_longest_name_that_starts_the_model)
{
	const struct al_price *p = al_price_find(NULL, 0, "claude-opus-4-5-20251101");

	cr_assert_str_eq(p->model, "claude-opus-4-5", "the newer family's price, not claude-opus");
	cr_assert_str_eq(al_price_find(NULL, 0, "claude-opus-4-1")->model, "claude-opus");
	cr_assert_str_eq(al_price_find(NULL, 0, "gpt-5-mini-2025")->model, "gpt-5-mini");
	cr_assert_str_eq(al_price_find(NULL, 0, "openai/gpt-5")->model, "gpt-5", "provider/model");
	cr_assert_null(al_price_find(NULL, 0, "local-model"));
	cr_assert_null(al_price_find(NULL, 0, NULL));
}

Test(price, the_flows_prices_win)
{
	const struct al_price own[] = { { "claude", 1, 2, 0, 0 }, { "local", 0.5, 1, 0, 0 } };

	cr_assert_eq(al_price_find(own, 2, "claude-sonnet-4-5"), &own[0],
		     "any entry of the flow's outranks the table, even a shorter name");
	cr_assert_eq(al_price_find(own, 2, "local-model"), &own[1]);
}

Test(price, cost_of_tokens)
{
	const struct al_price p = { "m", 2, 10, 0.5, 4 };
	const struct al_tokens t = { 1000000, 100000, 200000, 50000, 7 };

	/* $2 + $1 + $0.10 + $0.20; reasoning is in the output already */
	cr_assert_float_eq(al_price_cost(&p, &t), 3.3, 1e-9);
}
