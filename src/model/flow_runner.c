#include "flow_loader.h"
#include "ailoop/base/util.h"

#include <stdlib.h>
#include <string.h>

/*
 * A runner's `session:`: how its CLI keeps sessions, in the terms the
 * presets have by their output format (runner.h, struct
 * al_runner_session), so that a CLI ailoop has no preset for can continue
 * one too.
 */

static bool holds_id(const char *const *list)
{
	for (size_t i = 0; list && list[i]; i++)
		if (strstr(list[i], "{session-id}"))
			return true;
	return false;
}

/* The list at `v` into *out (freeing what was there); false if it is none. */
static bool read_list(struct loader *l, const struct al_val *v, const char *key,
		      const char *const **out)
{
	const char **list;
	size_t n;

	if (!al_check_string_list(&l->c, v, key, &list, &n))
		return false;
	free((void *)*out);
	*out = list;
	return true;
}

void loader_runner_session(struct loader *l, struct al_runner *r, const struct al_val *v)
{
	static const char *const keys[] = { "fresh", "start", "resume", "cumulative_usage" };
	struct al_runner_session *s = &r->session;

	if (!al_check_kind(&l->c, v, AL_VAL_MAP, "session"))
		return;
	/* what it does not say, it does not do: no output format's lists */
	if (!r->has_session)
		memset(s, 0, sizeof(*s));
	r->has_session = true;
	for (size_t i = 0; i < v->n; i++) {
		const struct al_val *key = AL_VAL_KEY(v, i), *val = AL_VAL_VALUE(v, i);

		if (!strcmp(key->str, "fresh")) {
			if (read_list(l, val, "fresh", &s->fresh) && holds_id(s->fresh))
				loader_error(l, val->pos, "runner '%s': a fresh agent has no session, "
					     "so 'fresh' cannot hold {session-id}", r->name);
		} else if (!strcmp(key->str, "start")) {
			read_list(l, val, "start", &s->start);
		} else if (!strcmp(key->str, "resume")) {
			if (read_list(l, val, "resume", &s->resume) && !holds_id(s->resume))
				loader_error(l, val->pos, "runner '%s': 'resume' must hold "
					     "{session-id}, the id of the session to resume", r->name);
		} else if (!strcmp(key->str, "cumulative_usage")) {
			al_check_bool(&l->c, val, "cumulative_usage", &s->cumulative_usage);
		} else {
			al_check_unknown_key(&l->c, key, keys, AL_ARRAY_SIZE(keys), "session");
		}
	}
}
