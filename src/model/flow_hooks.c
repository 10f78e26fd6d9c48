#include "flow_loader.h"
#include "ailoop/base/alloc.h"
#include "ailoop/base/util.h"

#include <stdlib.h>
#include <string.h>

/*
 * `hooks:` of flow.yaml: commands ailoop runs when something happens in a
 * run (exec/hooks.c runs them). Each is a string, run by `sh -c` as a
 * shell line (a pipe, a redirection, $AILOOP_… expanded), or a list, run
 * as that program with those arguments.
 */
const char *const al_hook_names[AL_HOOK_EVENTS] = {
	"on_iteration", "on_node_end", "on_blocked", "on_run_end",
};

static void read_command(struct loader *l, const struct al_val *v, enum al_hook_event e)
{
	struct al_hooks *h = &l->flow->hooks;
	const char *name = al_hook_names[e];
	const char **argv;
	size_t n;

	if (v->kind == AL_VAL_SCALAR) {
		if (!al_check_string(&l->c, v, name, &h->text[e]))
			return;
		if (!*h->text[e] || strspn(h->text[e], " \t\n") == strlen(h->text[e])) {
			loader_error(l, v->pos, "hook '%s' is an empty command", name);
			return;
		}
		argv = al_calloc(4, sizeof(*argv));
		argv[0] = "sh";
		argv[1] = "-c";
		argv[2] = h->text[e];
	} else if (v->kind != AL_VAL_SEQ) {
		loader_error(l, v->pos, "hook '%s' must be a command (a string or a list), not %s",
			     name, al_val_describe(v));
		return;
	} else if (!al_check_string_list(&l->c, v, name, &argv, &n)) {
		return;
	} else if (!n || !*argv[0]) {
		loader_error(l, v->pos, "hook '%s' must name a program first", name);
		free(argv);
		return;
	} else {
		h->text[e] = argv[0];
	}
	free(h->argv[e]);
	h->argv[e] = argv;
}

void loader_hooks(struct loader *l, const struct al_val *v)
{
	static const char *const keys[] = { "on_iteration", "on_node_end", "on_blocked",
					    "on_run_end", "timeout_seconds" };

	if (!al_check_kind(&l->c, v, AL_VAL_MAP, "hooks"))
		return;
	for (size_t i = 0; i < v->n; i++) {
		const struct al_val *key = AL_VAL_KEY(v, i), *val = AL_VAL_VALUE(v, i);
		size_t e = 0;

		while (e < AL_HOOK_EVENTS && strcmp(key->str, al_hook_names[e]))
			e++;
		if (e < AL_HOOK_EVENTS) {
			if (!al_val_is_null(val)) /* null: no hook, as when absent */
				read_command(l, val, (enum al_hook_event)e);
		} else if (!strcmp(key->str, "timeout_seconds")) {
			al_check_int(&l->c, val, key->str, 1, AL_HOOK_TIMEOUT_MAX,
				     &l->flow->hooks.timeout_seconds);
		} else {
			al_check_unknown_key(&l->c, key, keys, AL_ARRAY_SIZE(keys), "hooks");
		}
	}
}

void loader_hooks_free(struct al_hooks *hooks)
{
	for (size_t e = 0; e < AL_HOOK_EVENTS; e++) {
		free(hooks->argv[e]);
		hooks->argv[e] = NULL;
	}
}
