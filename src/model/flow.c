#include "flow_loader.h"
#include "ailoop/base/sha256.h"
#include "ailoop/base/strbuf.h"
#include "ailoop/base/util.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/*
 * Loading walks the document once, in order, reporting every problem it
 * meets and carrying on, so that `ailoop validate` shows them all. This
 * file reads the file and its top-level sections; flow_node.c the nodes,
 * where each node type has its own table of keys.
 */

pcre2_code *al_rate_limit_default(void)
{
	PCRE2_SIZE off;
	int code;

	return pcre2_compile((PCRE2_SPTR)AL_RATE_LIMIT_PATTERN, PCRE2_ZERO_TERMINATED,
			     PCRE2_UTF | PCRE2_MATCH_INVALID_UTF, &code, &off, NULL);
}

/* A price in dollars per million tokens: a number from 0 to 10,000. */
static void read_price(struct loader *l, const struct al_val *v, const char *key, double *out)
{
	char *end = NULL;
	double d = v->kind == AL_VAL_SCALAR ? strtod(v->str, &end) : -1;

	if (v->kind != AL_VAL_SCALAR || end == v->str || *end || !(d >= 0 && d <= 10000))
		loader_error(l, v->pos, "'%s' must be dollars per million tokens (a number from 0 "
			     "to 10000), not '%s'", key, v->kind == AL_VAL_SCALAR ? v->str
									 : al_val_describe(v));
	else
		*out = d;
}

/* prices: {MODEL: {input: $, output: $, cache_read: $, cache_write: $}} per million tokens */
static void parse_prices(struct loader *l, const struct al_val *v)
{
	static const char *const keys[] = { "input", "output", "cache_read", "cache_write" };
	struct al_flow *f = l->flow;

	if (!al_check_kind(&l->c, v, AL_VAL_MAP, "prices"))
		return;
	f->prices = al_calloc(v->n + 1, sizeof(*f->prices));
	for (size_t i = 0; i < v->n; i++) {
		const struct al_val *m = AL_VAL_VALUE(v, i);
		struct al_price *p = &f->prices[f->nprices++];

		p->model = AL_VAL_KEY(v, i)->str;
		if (!al_check_kind(&l->c, m, AL_VAL_MAP, p->model))
			continue;
		for (size_t j = 0; j < m->n; j++) {
			const struct al_val *k = AL_VAL_KEY(m, j), *val = AL_VAL_VALUE(m, j);
			double *at = !strcmp(k->str, "input") ? &p->input
				     : !strcmp(k->str, "output") ? &p->output
				     : !strcmp(k->str, "cache_read") ? &p->cache_read
				     : !strcmp(k->str, "cache_write") ? &p->cache_write : NULL;

			if (at)
				read_price(l, val, k->str, at);
			else
				al_check_unknown_key(&l->c, k, keys, AL_ARRAY_SIZE(keys), "prices");
		}
	}
}

/*
 * The limits a node's termination may raise to let a blocked run go on,
 * as `limits:` are: the circuit breakers' and the cost budgets.
 */
static bool breaker_limit(const struct al_val *key)
{
	return key->kind == AL_VAL_SCALAR &&
	       (!strcmp(key->str, "no_progress_limit") || !strcmp(key->str, "same_error_limit") ||
		!strcmp(key->str, "max_cost_usd") || !strcmp(key->str, "max_tokens"));
}

void loader_read_money(struct loader *l, const struct al_val *v, const char *key, double *out)
{
	char *end = NULL;
	double d = v->kind == AL_VAL_SCALAR ? strtod(v->str, &end) : -1;

	if (v->kind != AL_VAL_SCALAR || end == v->str || *end || !(d >= 0 && d <= 1e9))
		loader_error(l, v->pos, "'%s' must be a number of dollars from 0 to 1e9, not '%s'", key,
			     v->kind == AL_VAL_SCALAR ? v->str : al_val_describe(v));
	else
		*out = d;
}

void loader_read_tokens(struct loader *l, const struct al_val *v, const char *key,
			long long *out)
{
	long long n;

	if (!al_val_int(v, &n) || n < 0 || n > 1000000000000000LL)
		loader_error(l, v->pos, "'%s' must be a whole number of tokens from 0 to 1e15, not "
			     "'%s'", key, v->kind == AL_VAL_SCALAR ? v->str : al_val_describe(v));
	else
		*out = n;
}

static void parse_section(struct loader *l, const struct al_val *k, const struct al_val *v)
{
	static const char *const default_keys[] = { "runner", "agent_timeout_seconds",
						    "action_agent", "termination", "executor",
						    "slurm", "parallel_isolation",
						    "format_retries" };
	static const char *const on_error[] = { "fail-fast", "continue" };
	struct al_flow *f = l->flow;
	const char *name = k->str;

	if (!al_check_kind(&l->c, v, AL_VAL_MAP, name))
		return;
	for (size_t i = 0; i < v->n; i++) {
		const struct al_val *key = AL_VAL_KEY(v, i), *val = AL_VAL_VALUE(v, i);
		const char *s = key->str;
		int e;

		if (!strcmp(name, "runners")) {
			loader_runner(l, key, val);
		} else if (!strcmp(name, "models")) {
			static const char *const keys[] = { "converge" };

			if (strcmp(s, "converge"))
				al_check_unknown_key(&l->c, key, keys, 1, "models");
			else if (val->kind == AL_VAL_MAP)
				f->nconverge_models = al_read_models(&l->c, val, &f->converge_models);
			else if (al_check_string(&l->c, val, s, &f->converge_model))
				f->converge_pos = val->pos;
		} else if (!strcmp(name, "limits")) {
			static const char *const keys[] = {
				"max_agent_calls_per_hour", "max_agent_calls", "max_wall_seconds",
				"max_cost_usd", "max_tokens", "unknown_cost",
				"rate_limit_pattern", "rate_limit_backoff_seconds",
				"rate_limit_max_wait_seconds",
			};

			if (!strcmp(s, "max_agent_calls_per_hour")) {
				al_check_int(&l->c, val, s, 0, 1000000, &f->max_agent_calls_per_hour);
			} else if (!strcmp(s, "max_cost_usd")) {
				loader_read_money(l, val, s, &f->max_cost_usd);
			} else if (!strcmp(s, "max_tokens")) {
				loader_read_tokens(l, val, s, &f->max_tokens);
			} else if (!strcmp(s, "unknown_cost")) {
				static const char *const ways[] = { "count", "block" };

				if (al_check_enum(&l->c, val, s, ways, 2, &e))
					f->unknown_cost_blocks = e == 1;
			} else if (!strcmp(s, "max_agent_calls")) {
				al_check_int(&l->c, val, s, 0, 100000000, &f->max_agent_calls);
			} else if (!strcmp(s, "max_wall_seconds")) {
				al_check_int(&l->c, val, s, 0, 365 * 24 * 3600, &f->max_wall_seconds);
			} else if (!strcmp(s, "rate_limit_backoff_seconds")) {
				al_check_int(&l->c, val, s, 1, AL_RATE_LIMIT_BACKOFF_MAX,
					     &f->rate_limit_backoff_seconds);
			} else if (!strcmp(s, "rate_limit_max_wait_seconds")) {
				al_check_int(&l->c, val, s, 1, AL_RATE_LIMIT_MAX_WAIT_MAX,
					     &f->rate_limit_max_wait_seconds);
			} else if (!strcmp(s, "rate_limit_pattern")) {
				pcre2_code_free(f->rate_limit_re);
				f->rate_limit_re = al_check_regex(&l->c, val, s);
			} else {
				al_check_unknown_key(&l->c, key, keys, AL_ARRAY_SIZE(keys), "limits");
			}
		} else if (!strcmp(s, "runner")) {
			if (al_check_string(&l->c, val, s, &f->default_runner))
				f->default_runner_pos = val->pos;
		} else if (!strcmp(s, "agent_timeout_seconds")) {
			al_check_int(&l->c, val, s, 1, 7 * 24 * 3600, &f->agent_timeout_seconds);
		} else if (!strcmp(s, "format_retries")) {
			al_check_int(&l->c, val, s, 0, AL_MAX_FORMAT_RETRIES, &f->format_retries);
		} else if (!strcmp(s, "executor")) {
			al_slurm_read_executor(&l->c, val, &f->slurm);
		} else if (!strcmp(s, "slurm")) {
			al_slurm_read(&l->c, val, &f->slurm);
		} else if (!strcmp(s, "action_agent")) {
			loader_agent_key(l, &l->default_action, val, s);
			if (l->default_action.path)
				f->action_agent = l->default_action.path;
		} else if (!strcmp(s, "parallel_isolation")) {
			static const char *const isolations[] = { "shared", "worktree" };

			if (al_check_enum(&l->c, val, s, isolations, 2, &e))
				f->parallel_isolation = (enum al_isolation)(AL_ISOLATION_SHARED + e);
		} else if (!strcmp(s, "termination")) {
			static const char *const keys[] = { "on_error", "no_progress_limit",
							    "same_error_limit" };

			if (!al_check_kind(&l->c, val, AL_VAL_MAP, s))
				continue;
			for (size_t j = 0; j < val->n; j++) {
				const struct al_val *tk = AL_VAL_KEY(val, j), *tv = AL_VAL_VALUE(val, j);

				if (breaker_limit(tk))
					f->breaker_limits_given = true;
				if (!strcmp(tk->str, "no_progress_limit"))
					al_check_int(&l->c, tv, tk->str, 0, 100000, &f->no_progress_limit);
				else if (!strcmp(tk->str, "same_error_limit"))
					al_check_int(&l->c, tv, tk->str, 0, 100000, &f->same_error_limit);
				else if (strcmp(tk->str, "on_error"))
					al_check_unknown_key(&l->c, tk, keys, AL_ARRAY_SIZE(keys),
							     "defaults.termination");
				else if (al_check_enum(&l->c, tv, "on_error", on_error, 2, &e))
					f->on_error = (enum al_on_error)e;
			}
		} else {
			al_check_unknown_key(&l->c, key, default_keys, AL_ARRAY_SIZE(default_keys),
					     "defaults");
		}
	}
}

/* A value's tree, kinds and text, with the lengths that keep it unambiguous. */

/* `v` as text that tells trees apart; without the breakers' limits if `except` */
static void serialize(struct al_strbuf *out, const struct al_val *v, bool except)
{
	size_t n = v->kind == AL_VAL_SCALAR ? v->len : v->n;
	char num[24], *p = num + sizeof(num);

	for (size_t i = 0; except && v->kind == AL_VAL_MAP && i < v->n; i++)
		n -= breaker_limit(AL_VAL_KEY(v, i)); /* a limit added is no other change */

	/* "<kind>:<n>:" as al_strbuf_addf() would write it, without its cost per value */
	*--p = ':';
	do
		*--p = (char)('0' + n % 10);
	while (n /= 10);
	*--p = ':';
	*--p = (char)('0' + (int)v->kind);
	al_strbuf_add(out, p, (size_t)(num + sizeof(num) - p));
	if (v->kind == AL_VAL_SCALAR)
		al_strbuf_add(out, v->str, v->len);
	else if (v->kind == AL_VAL_MAP)
		for (size_t i = 0; i < v->n; i++) {
			if (except && breaker_limit(AL_VAL_KEY(v, i)))
				continue;
			serialize(out, AL_VAL_KEY(v, i), except);
			serialize(out, AL_VAL_VALUE(v, i), except);
		}
	else
		for (size_t i = 0; i < v->n; i++)
			serialize(out, v->items[i], except);
}

/*
 * What `ailoop resume` compares to let a run go on after its limits were
 * raised: the flow's tree without `limits:` and the circuit breakers'
 * limits (comments and layout aside), nor `hooks:`, which only tell of
 * the run.
 * Worked out when first asked for: `ailoop validate` never needs it.
 */
const char *al_flow_sha256_except_limits(struct al_flow *f)
{
	const struct al_val *root = f->doc ? f->doc->root : NULL;
	struct al_strbuf sb = AL_STRBUF_INIT;

	if (f->sha256_except_limits[0])
		return f->sha256_except_limits;
	for (size_t i = 0; root && root->kind == AL_VAL_MAP && i < root->n; i++)
		if (strcmp(AL_VAL_KEY(root, i)->str, "limits") &&
		    strcmp(AL_VAL_KEY(root, i)->str, "hooks")) {
			serialize(&sb, AL_VAL_KEY(root, i), true);
			serialize(&sb, AL_VAL_VALUE(root, i), true);
		}
	al_sha256_hex(sb.buf ? sb.buf : "", sb.len, f->sha256_except_limits);
	al_strbuf_release(&sb);
	return f->sha256_except_limits;
}

static const char *const top_keys[] = {
	"version", "defaults", "runners", "models", "limits", "prices", "flow", "root_node",
	"workflow_name", "workflow_type", "description", "episodes", "hooks",
};

static void check_model(struct loader *l, const struct al_runner *r, const char *model,
			struct al_pos pos)
{
	const char *takes = model ? al_runner_model_problem(r, model) : NULL;

	if (takes)
		loader_error(l, pos, "runner '%s' cannot take model '%s': it takes %s (give a "
			     "model per runner: model: {claude: sonnet, codex: gpt-5})", r->name,
			     model, takes);
}

const char *al_flow_converge_model(const struct al_flow *f, const struct al_agent *a,
				   struct al_pos *pos)
{
	const struct al_agent_model *m = NULL;

	if (a && f->nconverge_models)
		m = al_models_find(f->converge_models, f->nconverge_models,
				   a->runner ? a->runner : f->default_runner);
	if (pos)
		*pos = m ? m->pos : f->converge_pos;
	return m ? m->model : f->converge_model;
}

/*
 * One models.converge goes to every controller of a loop that converges:
 * their runners must take it (the entries of a map are checked each
 * against its own runner).
 */
static void check_converge(struct loader *l, const struct al_node *n)
{
	const struct al_flow *f = l->flow;
	const struct al_agent *a = n ? n->controller.agent : NULL;

	if (!n)
		return;
	if (a && a->loaded && !al_agent_is_command(a)) {
		const struct al_runner *r = al_runners_find(&f->runners, a->runner ? a->runner :
							    f->default_runner);
		const char *takes = r ? al_runner_model_problem(r, f->converge_model) : NULL;

		if (takes)
			loader_error(l, f->converge_pos, "runner '%s' of controller '%s' cannot take "
				     "model '%s': it takes %s", r->name, a->path, f->converge_model,
				     takes);
	}
	check_converge(l, n->child);
	for (size_t i = 0; i < n->nchildren; i++)
		check_converge(l, n->children[i]);
	check_converge(l, n->then_branch);
	check_converge(l, n->else_branch);
}

/*
 * Runners must exist for every agent that is not a command, and take the
 * models the agent asks of them.
 */
static void check_runners(struct loader *l)
{
	struct al_flow *f = l->flow;
	char *names = NULL;

	if (!al_runners_find(&f->runners, f->default_runner)) {
		names = al_runners_names(&f->runners);
		loader_error(l, f->default_runner_pos, "unknown runner '%s' (known: %s)",
		      f->default_runner, names);
	}
	for (size_t i = 0; i < f->agents.n; i++) {
		const struct al_agent *a = f->agents.v[i];
		const struct al_runner *r;

		if (!a->loaded)
			continue;
		for (size_t k = 0; k < a->nmodels; k++) {
			const struct al_agent_model *m = &a->models[k];

			r = al_runners_find(&f->runners, m->runner);
			if (r) {
				check_model(l, r, m->model, m->pos);
				continue;
			}
			if (!names)
				names = al_runners_names(&f->runners);
			loader_error(l, m->runner_pos, "unknown runner '%s' in 'model' (known: %s)",
				     m->runner, names);
		}
		r = al_runners_find(&f->runners, a->runner ? a->runner : f->default_runner);
		if (r && a->model && !al_agent_is_command(a))
			check_model(l, r, a->model, a->model_pos);
		if (!a->runner || al_runners_find(&f->runners, a->runner))
			continue;
		if (!names)
			names = al_runners_names(&f->runners);
		loader_error(l, a->runner_pos, "unknown runner '%s' (known: %s)", a->runner, names);
	}
	for (size_t k = 0; k < f->nconverge_models; k++) {
		const struct al_agent_model *m = &f->converge_models[k];
		const struct al_runner *r = al_runners_find(&f->runners, m->runner);

		if (r) {
			check_model(l, r, m->model, m->pos);
			continue;
		}
		if (!names)
			names = al_runners_names(&f->runners);
		loader_error(l, m->runner_pos, "unknown runner '%s' in 'converge' (known: %s)",
			     m->runner, names);
	}
	if (f->converge_model)
		check_converge(l, f->root);
	free(names);
}

static int read_text(struct al_flow *f, const char *file, struct al_diags *d)
{
	struct al_strbuf sb = AL_STRBUF_INIT;
	struct al_pos at = { NULL, 1, 1 };
	int line, col;

	if (al_strbuf_read_file(&sb, file, AL_FLOW_MAX_BYTES) < 0) {
		int e = errno;

		al_strbuf_release(&sb);
		if (e == ENOENT)
			return al_err(AL_ENOTFOUND, "no flow at '%s'", file);
		at.file = al_diags_source(d, file, NULL, 0);
		if (e == EFBIG)
			al_diags_add(d, at, "flow file is larger than 1 MiB");
		else
			al_diags_add(d, at, "cannot read the flow: %s", al_strbuf_read_strerror(e));
		return AL_EINVALID;
	}
	al_strbuf_strip_bom(&sb);
	f->text = al_strbuf_detach(&sb, &f->text_len);
	at.file = al_diags_source(d, file, NULL, 0);
	if (!al_utf8_text(f->text, f->text_len, &line, &col)) {
		at.line = line;
		at.col = col;
		al_diags_add(d, at, "flow file is not UTF-8 text (binary data?)");
		return AL_EINVALID;
	}
	al_diags_source(d, file, f->text, f->text_len);
	return 0;
}

int al_flow_load(struct al_flow **out, const char *file, struct al_diags *d)
{
	struct al_flow *f = al_calloc(1, sizeof(*f));
	struct loader l = { { d, NULL, 0 }, f, { NULL, { NULL, 0, 0 }, NULL }, NULL, 0, 0 };
	const struct al_val *root, *node = NULL, *node_key = NULL;
	size_t reported = d->n;
	struct al_pos at;
	int err;

	*out = NULL;
	f->file = al_strdup(file);
	f->diags = d;
	f->agent_timeout_seconds = AL_DEFAULT_AGENT_TIMEOUT;
	f->format_retries = AL_DEFAULT_FORMAT_RETRIES;
	f->no_progress_limit = AL_DEFAULT_NO_PROGRESS_LIMIT;
	f->same_error_limit = AL_DEFAULT_SAME_ERROR_LIMIT;
	f->rate_limit_backoff_seconds = AL_RATE_LIMIT_BACKOFF_DEFAULT;
	f->rate_limit_max_wait_seconds = AL_RATE_LIMIT_MAX_WAIT_DEFAULT;
	f->action_agent = AL_DEFAULT_ACTION_AGENT;
	f->hooks.timeout_seconds = AL_HOOK_TIMEOUT_DEFAULT;
	f->default_runner = "claude";
	al_episodes_config_init(&f->episodes);
	al_runners_init(&f->runners);

	if ((err = read_text(f, file, d)) < 0)
		goto done;
	at.file = al_diags_source(d, file, NULL, 0);
	at.line = at.col = 1;
	if ((err = al_doc_parse(&f->doc, d, file, f->text, f->text_len, 0)) < 0)
		l.c.errors++;
	if (!f->doc)
		goto done;
	l.c.doc = f->doc;
	root = f->doc->root;
	if (!root || al_val_is_null(root)) {
		al_diags_add(d, at, "flow file is empty");
		err = AL_EINVALID;
		goto done;
	}
	if (root->kind != AL_VAL_MAP) {
		al_diags_add(d, root->pos, "a flow file must be a mapping of keys, not %s",
			     al_val_describe(root));
		err = AL_EINVALID;
		goto done;
	}
	/* sections first: the node walk needs the runners and defaults */
	for (size_t i = 0; i < root->n; i++) {
		const struct al_val *k = AL_VAL_KEY(root, i), *v = AL_VAL_VALUE(root, i);
		long long version;

		if (!strcmp(k->str, "defaults") || !strcmp(k->str, "runners") ||
		    !strcmp(k->str, "models") || !strcmp(k->str, "limits")) {
			parse_section(&l, k, v);
		} else if (!strcmp(k->str, "prices")) {
			parse_prices(&l, v);
		} else if (!strcmp(k->str, "episodes")) {
			loader_episodes(&l, v, &f->episodes);
		} else if (!strcmp(k->str, "hooks")) {
			loader_hooks(&l, v);
		} else if (!strcmp(k->str, "version")) {
			if (v->kind != AL_VAL_SCALAR || al_val_is_null(v))
				loader_error(&l, v->pos, "'version' must be 1, not %s", al_val_describe(v));
			else if (!al_val_int(v, &version))
				loader_error(&l, v->pos, "'version' must be the whole number 1, not %s "
					     "('%s')", al_val_describe(v), v->str);
			else if (version != 1)
				loader_error(&l, v->pos, "unsupported flow version '%s' (this ailoop reads "
				      "version 1)", v->str);
		} else if (!strcmp(k->str, "flow") || !strcmp(k->str, "root_node")) {
			if (node_key) {
				loader_error(&l, k->pos, "'flow' and 'root_node' are the same: give one");
			} else {
				node_key = k;
				node = v;
			}
		} else if (!strcmp(k->str, "workflow_name")) {
			al_check_string(&l.c, v, k->str, &f->workflow_name);
		} else if (!strcmp(k->str, "workflow_type") || !strcmp(k->str, "description")) {
			const char *ignored;

			al_check_string(&l.c, v, k->str, &ignored);
		} else {
			al_check_unknown_key(&l.c, k, top_keys, AL_ARRAY_SIZE(top_keys),
					     "the flow file");
		}
	}
	if (!node)
		loader_error(&l, root->pos, "the flow file needs a 'flow' (the root node)");
	else if (al_val_is_null(node))
		loader_error(&l, node_key->pos, "'%s' is empty: it must be the root node", node_key->str);
	else
		f->root = loader_node(&l, node, NULL, 1);
	check_runners(&l);
	if (!f->rate_limit_re)
		f->rate_limit_re = al_rate_limit_default();
	/* agent files report their problems (and their absence) straight to d */
	err = l.c.errors || d->n > reported ? AL_EINVALID : 0;
done:
	f->owned = l.owned;
	f->nowned = l.nowned;
	if (err < 0) {
		al_flow_free(f);
		return err;
	}
	*out = f;
	return 0;
}

void al_flow_free(struct al_flow *f)
{
	if (!f)
		return;
	loader_node_free(f->root);
	al_agents_release(&f->agents);
	al_runners_release(&f->runners);
	free(f->converge_models);
	free(f->prices);
	loader_hooks_free(&f->hooks);
	al_doc_free(f->doc);
	pcre2_code_free(f->rate_limit_re);
	for (size_t i = 0; i < f->nowned; i++)
		free(f->owned[i]);
	free(f->owned);
	free(f->text);
	free(f->file);
	free(f);
}

size_t al_node_nkids(const struct al_node *n)
{
	return (n->child != NULL) + (n->then_branch != NULL) + (n->else_branch != NULL) +
	       n->nchildren;
}

struct al_node *al_node_kid(const struct al_node *n, size_t i)
{
	if (n->child && !i--)
		return n->child;
	if (n->then_branch && !i--)
		return n->then_branch;
	if (n->else_branch && !i--)
		return n->else_branch;
	return i < n->nchildren ? n->children[i] : NULL;
}

void al_flow_walk(struct al_node *root, void (*fn)(struct al_node *, void *), void *data)
{
	size_t k;

	if (!root)
		return;
	fn(root, data);
	k = al_node_nkids(root);
	for (size_t i = 0; i < k; i++)
		al_flow_walk(al_node_kid(root, i), fn, data);
}

struct al_node *al_flow_find(const struct al_flow *flow, const char *path)
{
	struct al_node *n = flow->root;
	const char *p = path;

	if (!n)
		return NULL;
	for (;;) {
		size_t len = strcspn(p, "/"), k;
		struct al_node *next = NULL;

		if (strlen(n->id) != len || memcmp(n->id, p, len))
			return NULL;
		if (!p[len])
			return n;
		p += len + 1;
		len = strcspn(p, "/");
		k = al_node_nkids(n);
		for (size_t i = 0; i < k && !next; i++) {
			struct al_node *kid = al_node_kid(n, i);

			if (strlen(kid->id) == len && !memcmp(kid->id, p, len))
				next = kid;
		}
		if (!next)
			return NULL;
		n = next;
	}
}

static void warn_tools(struct al_diags *w, const struct al_agent *a, const struct al_runner *r,
		       struct al_pos pos, const char *key, const char *what)
{
	pos.file = al_diags_source(w, pos.file, a->text, a->text_len);
	al_diags_add(w, pos, "runner '%s' has no way to enforce '%s': agent file '%s' may %s",
		     r->name, key, a->path, what);
}

/* `session: continue` on an agent with no CLI session: every call of it is a new one. */
static void warn_session(struct al_diags *w, const struct al_agent *a, const struct al_runner *r)
{
	struct al_pos pos = a->session_pos;

	pos.file = al_diags_source(w, pos.file, a->text, a->text_len);
	if (!r)
		al_diags_add(w, pos, "agent file '%s' runs a command, which has no session to "
			     "continue: 'session: continue' is ignored", a->path);
	else if (!al_runner_uses(r, "session"))
		al_diags_add(w, pos, "runner '%s' has no {session} argument: 'session: continue' "
			     "of agent file '%s' is ignored", r->name, a->path);
	else if (!al_runner_session(r)->resume)
		al_diags_add(w, pos, "runner '%s' has no way to resume a session (no 'resume' in "
			     "its 'session'): 'session: continue' of agent file '%s' is ignored",
			     r->name, a->path);
	else
		al_diags_add(w, pos, "runner '%s' prints text (no 'output:' JSON), which names no "
			     "session: 'session: continue' of agent file '%s' is ignored", r->name,
			     a->path);
}

/*
 * A call can resume a session when its runner puts `resume` in its command
 * and learns the session's id: from the JSON it prints, or from `start`,
 * where ailoop chose it.
 */
static bool can_resume(const struct al_runner *r)
{
	return al_runner_uses(r, "session") && al_runner_session(r)->resume &&
	       (r->output != AL_STREAM_TEXT || al_runner_session_chosen(r));
}

void al_flow_warnings(const struct al_flow *f, struct al_diags *w)
{
	for (size_t i = 0; i < f->agents.n; i++) {
		const struct al_agent *a = f->agents.v[i];
		const struct al_runner *r;

		if (!a->loaded)
			continue;
		if (al_agent_is_command(a)) {
			if (a->session_continue)
				warn_session(w, a, NULL);
			continue;
		}
		r = al_runners_find(&f->runners, a->runner ? a->runner : f->default_runner);
		if (!r)
			continue;
		if (a->session_continue && !can_resume(r))
			warn_session(w, a, r);
		if (a->tools && !al_runner_uses(r, "tools") && !al_runner_uses(r, "tool-names"))
			warn_tools(w, a, r, a->tools_pos, "tools", "use tools it does not list");
		if (a->disallowed_tools && !al_runner_uses(r, "disallowed-tools"))
			warn_tools(w, a, r, a->disallowed_pos, "disallowedTools",
				   "use the tools it disallows");
	}
}
