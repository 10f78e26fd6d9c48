#include "flow_loader.h"
#include "ailoop/base/util.h"

#include <string.h>

/*
 * `episodes:`, at the top of the flow and in any node: which past
 * episodes (store/episode_recall.h) a node's agents are given. A node's
 * keys override what it inherits, from its parent or else from the top.
 */
const char *const al_episodes_role_names[3] = { "sensor", "controller", "action" };

void al_episodes_config_init(struct al_episodes_config *cfg)
{
	cfg->enabled = true;
	cfg->max_tokens = AL_EPISODES_MAX_TOKENS;
	cfg->roles = AL_EPISODES_CONTROLLER | AL_EPISODES_ACTION;
	cfg->include_failures = true;
}

static void read_roles(struct loader *l, const struct al_val *v, unsigned *roles)
{
	unsigned r = 0;
	bool ok = true;

	if (!al_check_kind(&l->c, v, AL_VAL_SEQ, "roles"))
		return;
	for (size_t i = 0; i < v->n; i++) {
		int e;

		if (al_check_enum(&l->c, v->items[i], "role", al_episodes_role_names,
				  AL_ARRAY_SIZE(al_episodes_role_names), &e))
			r |= 1u << e;
		else
			ok = false;
	}
	if (ok)
		*roles = r;
}

void loader_episodes(struct loader *l, const struct al_val *v, struct al_episodes_config *cfg)
{
	static const char *const keys[] = { "enabled", "max_tokens", "roles", "include_failures" };

	if (!al_check_kind(&l->c, v, AL_VAL_MAP, "episodes"))
		return;
	for (size_t i = 0; i < v->n; i++) {
		const struct al_val *k = AL_VAL_KEY(v, i), *val = AL_VAL_VALUE(v, i);

		if (!strcmp(k->str, "enabled"))
			al_check_bool(&l->c, val, k->str, &cfg->enabled);
		else if (!strcmp(k->str, "max_tokens"))
			al_check_int(&l->c, val, k->str, 0, AL_EPISODES_MAX_TOKENS_LIMIT,
				     &cfg->max_tokens);
		else if (!strcmp(k->str, "roles"))
			read_roles(l, val, &cfg->roles);
		else if (!strcmp(k->str, "include_failures"))
			al_check_bool(&l->c, val, k->str, &cfg->include_failures);
		else
			al_check_unknown_key(&l->c, k, keys, AL_ARRAY_SIZE(keys), "episodes");
	}
}

bool al_episodes_enabled(const struct al_flow *flow, const struct al_node *node)
{
	return node ? node->episodes.enabled : flow->episodes.enabled;
}
