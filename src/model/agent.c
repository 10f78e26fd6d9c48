#include "ailoop/model/agent.h"
#include "ailoop/model/check.h"
#include "ailoop/model/md.h"
#include "ailoop/base/fsutil.h"
#include "ailoop/base/strbuf.h"
#include "ailoop/base/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char *const agent_keys[] = {
	"name", "description", "tools", "disallowedTools", "model", "color",
	"runner", "command", "timeout", "target", "metrics", "pass_if", "fail_if",
	"format_retries", "session",
};

const char *const al_session_names[2] = { "fresh", "continue" };

/* `tools` may be a list or, as in Claude Code agent files, "Read, Write". */
static char *read_tools(struct al_check *c, const struct al_val *v, const char *key)
{
	struct al_strbuf sb = AL_STRBUF_INIT;

	if (!v || al_val_is_null(v))
		return NULL;
	if (v->kind == AL_VAL_SCALAR) {
		for (const char *p = v->str; *p; p++)
			if (*p != ' ' || (sb.len && sb.buf[sb.len - 1] != ','))
				al_strbuf_addch(&sb, *p);
		al_strbuf_rtrim(&sb);
	} else if (v->kind == AL_VAL_SEQ) {
		const char **list;
		size_t n;

		if (al_check_string_list(c, v, key, &list, &n)) {
			for (size_t i = 0; i < n; i++)
				al_strbuf_addf(&sb, "%s%s", i ? "," : "", list[i]);
			free(list);
		}
	} else {
		al_check_error(c, v->pos, "'%s' must be a list or a comma-separated string, not %s",
			       key, al_val_describe(v));
		return NULL;
	}
	return al_strbuf_detach(&sb, NULL);
}

size_t al_read_models(struct al_check *c, const struct al_val *v, struct al_agent_model **out)
{
	size_t n = 0;

	*out = al_calloc(v->n ? v->n : 1, sizeof(**out));
	for (size_t i = 0; i < v->n; i++) {
		const struct al_val *k = AL_VAL_KEY(v, i), *m = AL_VAL_VALUE(v, i);
		struct al_agent_model *e = &(*out)[n];

		if (!al_check_string(c, m, k->str, &e->model))
			continue;
		e->runner = k->str;
		e->runner_pos = k->pos;
		e->pos = m->pos;
		n++;
	}
	return n;
}

const struct al_agent_model *al_models_find(const struct al_agent_model *v, size_t n,
					    const char *runner)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(v[i].runner, runner))
			return &v[i];
	return NULL;
}

/* `model: sonnet`, or per runner: `model: {claude: sonnet, codex: gpt-5}`. */
static void read_model(struct al_check *c, struct al_agent *a, const struct al_val *v)
{
	if (v->kind != AL_VAL_MAP) {
		if (al_check_string(c, v, "model", &a->model))
			a->model_pos = v->pos;
		return;
	}
	a->nmodels = al_read_models(c, v, &a->models);
}

const char *al_agent_model(const struct al_agent *a, const char *runner, struct al_pos *pos)
{
	const struct al_agent_model *m = al_models_find(a->models, a->nmodels, runner);

	if (pos)
		*pos = m ? m->pos : a->model_pos;
	return m ? m->model : a->model;
}

static const char *const metric_keys[] = { "pattern", "sum", "count", "default" };

/*
 * One metric: a pattern, or a map of its pattern and how its matches make
 * the value ({pattern: P, sum: true}; count: true; default: 0).
 */
static bool read_metric(struct al_check *c, struct al_metric *m, const struct al_val *k,
			const struct al_val *v)
{
	const struct al_val *pat = v;
	bool sum = false, count = false;
	uint32_t groups = 0;

	if (v->kind == AL_VAL_MAP) {
		pat = NULL;
		for (size_t i = 0; i < v->n; i++) {
			const struct al_val *key = AL_VAL_KEY(v, i), *val = AL_VAL_VALUE(v, i);

			if (!strcmp(key->str, "pattern"))
				pat = val;
			else if (!strcmp(key->str, "sum"))
				al_check_bool(c, val, "sum", &sum);
			else if (!strcmp(key->str, "count"))
				al_check_bool(c, val, "count", &count);
			else if (!strcmp(key->str, "default"))
				al_check_string(c, val, "default", &m->dflt);
			else
				al_check_unknown_key(c, key, metric_keys, AL_ARRAY_SIZE(metric_keys),
						     "metric");
		}
		if (!pat) {
			al_check_error(c, v->pos, "metric '%s' needs a 'pattern'", k->str);
			return false;
		}
		if (sum && count) {
			al_check_error(c, v->pos, "metric '%s' is either a 'sum' or a 'count', "
				       "not both", k->str);
			return false;
		}
	}
	m->re = al_check_regex_scan(c, pat, k->str);
	if (!m->re)
		return false;
	m->of = sum ? AL_METRIC_SUM : count ? AL_METRIC_COUNT : AL_METRIC_LAST;
	pcre2_pattern_info(m->re, PCRE2_INFO_CAPTURECOUNT, &groups);
	if (groups < 1 && !count) {
		al_check_error(c, pat->pos, "metric '%s' needs a capture group around the value "
			       "(or 'count: true' to count its matches)", k->str);
		pcre2_code_free(m->re);
		m->re = NULL;
		return false;
	}
	m->name = k->str;
	return true;
}

static void read_metrics(struct al_check *c, struct al_agent *a, const struct al_val *v)
{
	if (!al_check_kind(c, v, AL_VAL_MAP, "metrics"))
		return;
	a->metrics = al_calloc(v->n, sizeof(*a->metrics));
	for (size_t i = 0; i < v->n; i++) {
		const struct al_val *k = AL_VAL_KEY(v, i);

		if (!al_id_valid(k->str)) {
			al_check_error(c, k->pos, "metric name '%s' must be letters, digits, '_' and '-'",
				       k->str);
			continue;
		}
		if (read_metric(c, &a->metrics[a->nmetrics], k, AL_VAL_VALUE(v, i)))
			a->nmetrics++;
		else
			memset(&a->metrics[a->nmetrics], 0, sizeof(a->metrics[a->nmetrics]));
	}
}

static void read_command(struct al_check *c, struct al_agent *a, const struct al_val *v)
{
	size_t n;

	if (!v || al_val_is_null(v))
		return;
	a->command_pos = v->pos;
	if (v->kind == AL_VAL_SCALAR) {
		if (!*v->str)
			al_check_error(c, v->pos, "'command' must not be empty");
		else
			a->command_sh = v->str;
	} else if (v->kind == AL_VAL_SEQ) {
		if (al_check_string_list(c, v, "command", &a->command_argv, &n) && !n) {
			al_check_error(c, v->pos, "'command' must not be empty");
			free(a->command_argv);
			a->command_argv = NULL;
		}
	} else {
		al_check_error(c, v->pos, "'command' must be a string or a list, not %s",
			       al_val_describe(v));
	}
}

static void read_session(struct al_check *c, struct al_agent *a, const struct al_val *v)
{
	int i;

	if (al_check_enum(c, v, "session", al_session_names, AL_ARRAY_SIZE(al_session_names), &i)) {
		a->session_continue = i == 1;
		a->session_pos = v->pos;
	}
}

static void read_front_matter(struct al_check *c, struct al_agent *a, const struct al_val *root)
{
	if (root->kind != AL_VAL_MAP) {
		al_check_error(c, root->pos, "front matter must be a mapping of keys, not %s",
			       al_val_describe(root));
		return;
	}
	for (size_t i = 0; i < root->n; i++) {
		const struct al_val *k = AL_VAL_KEY(root, i), *v = AL_VAL_VALUE(root, i);
		const char *key = k->str;

		if (!strcmp(key, "name"))
			al_check_string(c, v, key, &a->name);
		else if (!strcmp(key, "description"))
			al_check_string(c, v, key, &a->description);
		else if (!strcmp(key, "model"))
			read_model(c, a, v);
		else if (!strcmp(key, "color"))
			; /* shown by Claude Code; nothing for ailoop */
		else if (!strcmp(key, "runner")) {
			if (al_check_string(c, v, key, &a->runner))
				a->runner_pos = v->pos;
		} else if (!strcmp(key, "tools")) {
			a->tools = read_tools(c, v, key);
			a->tools_pos = k->pos;
		} else if (!strcmp(key, "disallowedTools")) {
			a->disallowed_tools = read_tools(c, v, key);
			a->disallowed_pos = k->pos;
		} else if (!strcmp(key, "command"))
			read_command(c, a, v);
		else if (!strcmp(key, "timeout"))
			al_check_int(c, v, key, 1, 7 * 24 * 3600, &a->timeout);
		else if (!strcmp(key, "format_retries"))
			al_check_int(c, v, key, 0, AL_MAX_FORMAT_RETRIES, &a->format_retries);
		else if (!strcmp(key, "session"))
			read_session(c, a, v);
		else if (!strcmp(key, "target"))
			al_check_string(c, v, key, &a->target);
		else if (!strcmp(key, "metrics"))
			read_metrics(c, a, v);
		else if (!strcmp(key, "pass_if"))
			a->pass_if = al_check_regex(c, v, key);
		else if (!strcmp(key, "fail_if"))
			a->fail_if = al_check_regex(c, v, key);
		else
			al_check_unknown_key(c, k, agent_keys, AL_ARRAY_SIZE(agent_keys),
					     "agent front matter");
	}
	if (a->name && !al_id_valid(a->name))
		al_check_error(c, al_val_get(root, "name")->pos,
			       "agent name '%s' must be letters, digits, '_' and '-'", a->name);
}

static bool has_text(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (s[i] != ' ' && s[i] != '\t' && s[i] != '\n' && s[i] != '\r')
			return true;
	return false;
}

static void load(struct al_agent *a, struct al_pos ref, struct al_diags *d)
{
	struct al_strbuf sb = AL_STRBUF_INIT;
	struct al_check c = { d, NULL, 0 };
	struct al_pos at = { a->path, 1, 1 };
	const char *fm;
	size_t fm_len;
	int line, col;
	char *real;

	/* its text goes to an agent: nothing from outside the repository */
	switch (al_path_place(a->path, &real)) {
	case AL_PATH_INSIDE:
		break;
	case AL_PATH_OUTSIDE:
		al_diags_add(d, ref, "agent file '%s' is outside the repository: agent paths are "
			     "relative to its root and stay in it", a->path);
		return;
	case AL_PATH_LINK_OUTSIDE:
		al_diags_add(d, ref, "agent file '%s' is a symbolic link to '%s', outside the "
			     "repository", a->path, real);
		free(real);
		return;
	}
	if (al_strbuf_read_file(&sb, a->path, AL_AGENT_MAX_BYTES) < 0) {
		if (errno == ENOENT || errno == ENOTDIR)
			al_diags_add(d, ref, "agent file '%s' does not exist", a->path);
		else if (errno == EFBIG)
			al_diags_add(d, ref, "agent file '%s' is larger than 1 MiB", a->path);
		else
			al_diags_add(d, ref, "cannot read agent file '%s': %s", a->path,
				     al_strbuf_read_strerror(errno));
		al_strbuf_release(&sb);
		return;
	}
	al_strbuf_strip_bom(&sb);
	a->text = al_strbuf_detach(&sb, &a->text_len);
	at.file = al_diags_source(d, a->path, NULL, 0);
	if (!al_utf8_text(a->text, a->text_len, &line, &col)) {
		at.line = line;
		at.col = col;
		al_diags_add(d, at, "agent file is not UTF-8 text");
		return;
	}
	al_diags_source(d, a->path, a->text, a->text_len);
	if (!al_split_front_matter(a->text, a->text_len, &fm, &fm_len, &line, &a->body,
				   &a->body_len)) {
		al_diags_add(d, at, "front matter opened with '---' is never closed");
		return;
	}
	if (fm && al_doc_parse(&a->doc, d, a->path, fm, fm_len, line - 1) < 0)
		c.errors++;
	if (fm && !a->doc)
		return; /* unreadable: what it lacks is not known */
	c.doc = a->doc;
	if (a->doc && a->doc->root)
		read_front_matter(&c, a, a->doc->root);
	if (!c.errors && !al_agent_is_command(a) && !has_text(a->body, a->body_len))
		al_check_error(&c, at, "agent file has neither a prompt nor a 'command'");
	a->loaded = c.errors == 0;
}

struct al_agent *al_agents_load(struct al_agents *agents, const char *path,
				struct al_pos ref, struct al_diags *d)
{
	struct al_agent *a = al_strmap_get(&agents->by_path, path);

	if (a) {
		if (!a->text) /* missing: say so at every place that names it */
			load(a, ref, d);
		return a;
	}
	a = al_calloc(1, sizeof(*a));
	a->format_retries = -1;
	a->path = al_strdup(path);
	AL_GROW(agents->v, agents->n, agents->alloc);
	agents->v[agents->n++] = a;
	al_strmap_put(&agents->by_path, a->path, a);
	load(a, ref, d);
	return a;
}

static void agent_free(struct al_agent *a)
{
	for (size_t i = 0; i < a->nmetrics; i++)
		pcre2_code_free(a->metrics[i].re);
	free(a->metrics);
	pcre2_code_free(a->pass_if);
	pcre2_code_free(a->fail_if);
	free(a->command_argv);
	free(a->models);
	free(a->tools);
	free(a->disallowed_tools);
	al_doc_free(a->doc);
	free(a->text);
	free(a->path);
	free(a);
}

void al_agents_release(struct al_agents *agents)
{
	for (size_t i = 0; i < agents->n; i++)
		agent_free(agents->v[i]);
	free(agents->v);
	al_strmap_release(&agents->by_path);
	agents->v = NULL;
	agents->n = agents->alloc = 0;
}
