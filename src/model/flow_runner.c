#include "flow_loader.h"
#include "ailoop/base/util.h"

#include <stdlib.h>
#include <string.h>

/*
 * A runner of the flow's own (`runners:`): its command line, checked, and
 * its `session:`: how its CLI keeps sessions, in the terms the
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

static bool is_shell(const char *program)
{
	static const char *const shells[] = { "sh", "bash", "dash", "zsh", "ksh", "mksh", "ash",
					      "fish", "csh", "tcsh" };
	const char *base = strrchr(program, '/');

	base = base ? base + 1 : program;
	for (size_t i = 0; i < AL_ARRAY_SIZE(shells); i++)
		if (!strcmp(base, shells[i]))
			return true;
	return false;
}

/*
 * The script of a shell that the template runs with -c (`sh -c SCRIPT`,
 * `env bash -lc SCRIPT`, …), or NULL: text put into it runs as shell code.
 * *bare is set if the shell has -c but no script: what is appended is it.
 */
static const struct al_val *shell_script(const struct al_val *argv, bool *bare)
{
	size_t i = 0;
	bool dash_c = false;

	*bare = false;
	while (i < argv->n && !(argv->items[i]->kind == AL_VAL_SCALAR &&
				is_shell(argv->items[i]->str)))
		i++; /* a wrapper first: env, nice, timeout 60, … */
	if (i == argv->n)
		return NULL;
	for (i++; i < argv->n; i++) {
		const char *a = argv->items[i]->kind == AL_VAL_SCALAR ? argv->items[i]->str : "";

		if (!strcmp(a, "--") || ((a[0] == '-' || a[0] == '+') && a[1] != '-')) {
			if (a[0] == '-' && a[1] != '-' && strchr(a + 1, 'c'))
				dash_c = true;
			if (!strcmp(a + 1, "o") || !strcmp(a + 1, "O"))
				i++; /* -o OPTION */
		} else if (a[0] != '-') {
			return dash_c ? argv->items[i] : NULL; /* the first operand */
		}
	}
	*bare = dash_c;
	return NULL;
}

/*
 * Task text reaches a runner in its prompt: never as shell code, neither
 * where the template says ({prompt}, {task} in the script) nor appended
 * (prompt: arg) as the script that a bare `sh -c` lacks.
 */
static void check_prompt_not_in_shell(struct loader *l, const struct al_val *k,
				      const struct al_val *argv, enum al_prompt_mode mode)
{
	static const char *const holders[] = { "{prompt}", "{task}" };
	bool bare;
	const struct al_val *script = shell_script(argv, &bare);

	for (size_t i = 0; script && i < AL_ARRAY_SIZE(holders); i++)
		if (strstr(script->str, holders[i]))
			loader_error(l, script->pos, "runner '%s' puts %s into a shell script, where "
			      "the task would run as shell code: use prompt: stdin or file, or pass "
			      "it as an argument after the script (\"$1\")", k->str, holders[i]);
	if (bare && mode == AL_PROMPT_ARG)
		loader_error(l, argv->pos, "runner '%s' runs a shell with -c but no script, so the "
		      "prompt (prompt: arg) would be the script and the task would run as shell "
		      "code: give the script, and the prompt after it (\"$1\")", k->str);
}

void loader_runner(struct loader *l, const struct al_val *k, const struct al_val *v)
{
	static const char *const keys[] = { "command", "prompt", "install", "output", "session" };
	struct al_runner *r = al_runners_get(&l->flow->runners, k->str);
	const struct al_val *command = NULL, *output = NULL, *session = NULL;
	int mode;

	if (!al_id_valid(k->str))
		loader_error(l, k->pos, "invalid runner name '%s'", k->str);
	r->pos = k->pos;
	if (!al_check_kind(&l->c, v, AL_VAL_MAP, k->str))
		return;
	for (size_t i = 0; i < v->n; i++) {
		const struct al_val *key = AL_VAL_KEY(v, i), *val = AL_VAL_VALUE(v, i);

		if (!strcmp(key->str, "command")) {
			const char **argv;
			size_t n;

			if (!al_check_string_list(&l->c, val, "command", &argv, &n))
				continue;
			if (!n) {
				loader_error(l, val->pos, "runner command must not be empty");
				free(argv);
				continue;
			}
			command = val;
			/* another program: what the preset's takes says nothing of it */
			if (strcmp(argv[0], r->name))
				r->models = AL_MODELS_ANY;
			if (r->owns_argv)
				free((void *)r->argv);
			r->argv = argv;
			r->owns_argv = true;
		} else if (!strcmp(key->str, "prompt")) {
			if (al_check_enum(&l->c, val, "prompt", al_prompt_mode_names, 3, &mode))
				r->prompt = (enum al_prompt_mode)mode;
		} else if (!strcmp(key->str, "install")) {
			al_check_string(&l->c, val, "install", &r->install);
		} else if (!strcmp(key->str, "session")) {
			session = val;
			loader_runner_session(l, r, val);
		} else if (!strcmp(key->str, "output")) {
			output = val;
			if (al_check_enum(&l->c, val, "output", al_stream_names,
					  AL_ARRAY_SIZE(al_stream_names), &mode))
				r->output = (enum al_stream)mode;
		} else {
			al_check_unknown_key(&l->c, key, keys, AL_ARRAY_SIZE(keys), "runner");
		}
	}
	/* a command of its own prints text unless the runner says otherwise */
	if (command && !output)
		r->output = AL_STREAM_TEXT;
	if (!r->argv)
		loader_error(l, k->pos, "runner '%s' needs a 'command'", k->str);
	else if (command)
		check_prompt_not_in_shell(l, k, command, r->prompt);
	if (r->argv && session && !al_runner_uses(r, "session"))
		loader_error(l, session->pos, "runner '%s' has a 'session' but no {session} "
			     "argument in its command to put it", k->str);
}
