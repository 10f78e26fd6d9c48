#include "flow_loader.h"
#include "ailoop/base/strbuf.h"
#include "ailoop/base/util.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/*
 * The nodes of a flow: each type has its own table of keys, and a key
 * outside it is reported with the nearest known key as a hint.
 */
static const char *const type_names[] = {
	"loop", "sequence", "fallback", "parallel", "conditional", "action", "transaction",
};

const char *al_node_type_name(enum al_node_type type)
{
	return type_names[type];
}

const char *loader_own(struct loader *l, char *s)
{
	AL_GROW(l->owned, l->nowned, l->owned_alloc);
	l->owned[l->nowned++] = s;
	return s;
}

void loader_error(struct loader *l, struct al_pos pos, const char *fmt, ...)
{
	struct al_strbuf sb = AL_STRBUF_INIT;
	va_list ap;

	va_start(ap, fmt);
	al_strbuf_vaddf(&sb, fmt, ap);
	va_end(ap);
	al_check_error(&l->c, pos, "%s", sb.buf);
	al_strbuf_release(&sb);
}

/* Keys each node type accepts, beside the ones every node has. */
static const char *const common_keys[] = {
	"id", "node_id", "type", "description", "timeout_seconds", "termination", "executor",
	"slurm",
};
static const char *const loop_sensor_keys[] = {
	"controller", "sensors", "sensors_parallel", "actuator", "max_iterations",
};
static const char *const loop_reactree_keys[] = {
	"condition", "exit_on", "children", "max_iterations",
};
static const char *const children_keys[] = { "children" };
static const char *const parallel_keys[] = {
	"children", "success_threshold", "failure_threshold", "max_concurrency", "isolation",
	"on_conflict",
};
static const char *const conditional_keys[] = {
	"condition", "true_branch", "then", "false_branch", "else",
};
static const char *const action_keys[] = {
	"agent", "skill", "task", "args", "target", "message", "feedback_enabled",
	"output_to_memory",
};
static const char *const transaction_keys[] = { "children", "rollback_on" };

struct keyset {
	const char *const *keys;
	size_t n;
};

static struct keyset type_keys(const struct al_node *n)
{
	struct keyset k = { NULL, 0 };

#define KEYS(a) (k.keys = (a), k.n = AL_ARRAY_SIZE(a))
	switch (n->type) {
	case AL_NODE_LOOP: n->sensor_form ? KEYS(loop_sensor_keys) : KEYS(loop_reactree_keys); break;
	case AL_NODE_SEQUENCE:
	case AL_NODE_FALLBACK: KEYS(children_keys); break;
	case AL_NODE_PARALLEL: KEYS(parallel_keys); break;
	case AL_NODE_CONDITIONAL: KEYS(conditional_keys); break;
	case AL_NODE_ACTION: KEYS(action_keys); break;
	case AL_NODE_TRANSACTION: KEYS(transaction_keys); break;
	}
#undef KEYS
	return k;
}

static bool in_set(const char *key, const char *const *keys, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(key, keys[i]))
			return true;
	return false;
}

static void unknown_key(struct loader *l, const struct al_node *n, const struct al_val *key)
{
	struct keyset k = type_keys(n);
	const char *all[32];
	size_t m = 0;
	char where[64];

	for (size_t i = 0; i < AL_ARRAY_SIZE(common_keys); i++)
		all[m++] = common_keys[i];
	for (size_t i = 0; i < k.n; i++)
		all[m++] = k.keys[i];
	snprintf(where, sizeof(where), "%s%s node", n->type == AL_NODE_LOOP ? (n->sensor_form ? "a sensor-form " : "a ReAcTree ") : n->type == AL_NODE_ACTION ? "an " : "a ", type_names[n->type]);
	al_check_unknown_key(&l->c, key, all, m, where);
}

/* The value of `key` unless it is absent or null: a null value reads as absent. */
static const struct al_val *given(const struct al_val *map, const char *key)
{
	const struct al_val *v = al_val_get(map, key);

	return v && !al_val_is_null(v) ? v : NULL;
}

/* The id written in node `v` if it is `id`; NULL if `id` was generated. */
static const struct al_val *written_id(const struct al_val *v, const char *id)
{
	const struct al_val *idv = given(v, "id");

	if (!idv)
		idv = given(v, "node_id");
	return idv && idv->kind == AL_VAL_SCALAR && !strcmp(idv->str, id) ? idv : NULL;
}

/*
 * Node `v` has the same `id` as its sibling `first`: say so at the id, or at
 * the node when its id was generated (the user never wrote it).
 */
static void duplicate_id(struct loader *l, const char *id, const struct al_val *v,
			 const struct al_val *first)
{
	const struct al_val *mine = written_id(v, id), *theirs = written_id(first, id);
	int line = theirs ? theirs->pos.line : first->pos.line;

	if (!mine)
		loader_error(l, v->pos, "this node's generated id '%s' is the id of its sibling at "
		      "line %d: give it an 'id'", id, line);
	else if (!theirs)
		loader_error(l, mine->pos, "duplicate id '%s' among siblings (generated for the node "
		      "at line %d)", id, line);
	else
		loader_error(l, mine->pos, "duplicate id '%s' among siblings (first at line %d)", id, line);
}

/*
 * "RSpec Specialist" -> "rspec-specialist", "DevOps Specialist" ->
 * "devops-specialist", "TestOracle" -> "test-oracle": a name of one word is
 * split where its case changes, a name of several words only between them.
 */
static char *kebab(const char *name)
{
	struct al_strbuf sb = AL_STRBUF_INIT;
	bool one_word = !name[strcspn(name, " \t_-")];

	for (const char *p = name; *p; p++) {
		unsigned char ch = (unsigned char)*p;

		if (isalnum(ch)) {
			if (one_word && isupper(ch) && p > name && islower((unsigned char)p[-1]))
				al_strbuf_addch(&sb, '-');
			al_strbuf_addch(&sb, tolower(ch));
		} else if (sb.len && sb.buf[sb.len - 1] != '-') {
			al_strbuf_addch(&sb, '-');
		}
	}
	while (sb.len && sb.buf[sb.len - 1] == '-')
		al_strbuf_setlen(&sb, sb.len - 1);
	return al_strbuf_detach(&sb, NULL);
}

static void agent_ref(struct loader *l, struct al_agent_ref *ref, const char *path,
		      struct al_pos pos)
{
	ref->path = path;
	ref->pos = pos;
	ref->agent = al_agents_load(&l->flow->agents, path, pos, l->c.diags);
	if (!ref->agent->loaded)
		l->c.errors++; /* already reported, in the agent file or at `pos` */
}

/* A path-valued key naming an agent file. */
void loader_agent_key(struct loader *l, struct al_agent_ref *ref, const struct al_val *v,
		      const char *key)
{
	const char *s;

	if (!al_check_string(&l->c, v, key, &s))
		return;
	if (!*s) {
		loader_error(l, v->pos, "'%s' must name an agent file", key);
		return;
	}
	agent_ref(l, ref, s, v->pos);
}


/* Reads `children`; ids are checked for clashes among the siblings. */
static void parse_children(struct loader *l, struct al_node *n, const struct al_val *v)
{
	struct al_strmap seen = AL_STRMAP_INIT;

	if (!al_check_kind(&l->c, v, AL_VAL_SEQ, "children"))
		return;
	n->children = al_calloc(v->n, sizeof(*n->children));
	for (size_t i = 0; i < v->n; i++) {
		struct al_node *kid = loader_node(l, v->items[i], n, (int)i + 1);
		const struct al_val *first;

		if (!kid)
			continue;
		n->children[n->nchildren++] = kid;
		first = al_strmap_put(&seen, kid->id, (void *)v->items[i]);
		if (first != v->items[i])
			duplicate_id(l, kid->id, v->items[i], first);
	}
	al_strmap_release(&seen);
}

static void parse_sensors(struct loader *l, struct al_node *n, const struct al_val *v)
{
	struct al_strmap names = AL_STRMAP_INIT;

	if (!al_check_kind(&l->c, v, AL_VAL_SEQ, "sensors"))
		return;
	n->sensors = al_calloc(v->n, sizeof(*n->sensors));
	for (size_t i = 0; i < v->n; i++) {
		struct al_sensor *s = &n->sensors[n->nsensors];
		const struct al_val *item = v->items[i];
		const char *base;

		if (item->kind != AL_VAL_SCALAR || al_val_is_null(item)) {
			loader_error(l, item->pos, "each sensor must be the path of an agent file, not %s",
			      al_val_describe(item));
			continue;
		}
		loader_agent_key(l, &s->ref, item, "sensors");
		if (!s->ref.path)
			continue;
		n->nsensors++;
		if (s->ref.agent->loaded && s->ref.agent->name) {
			s->name = s->ref.agent->name;
			continue;
		}
		base = strrchr(s->ref.path, '/');
		base = base ? base + 1 : s->ref.path;
		s->name = loader_own(l, al_strndup(base, al_ends_with(base, ".md") ? strlen(base) - 3
									  : strlen(base)));
		if (!al_id_valid(s->name))
			loader_error(l, item->pos, "sensor name '%s' (from the file name) must be letters, "
			      "digits, '_' and '-': give the agent a 'name'", s->name);
	}
	for (size_t i = 0; i < n->nsensors; i++)
		if (strlen(n->sensors[i].name) > AL_ID_MAX)
			loader_error(l, n->sensors[i].ref.pos, "sensor name is %zu characters long: at "
			      "most %d (it names the sensor's output file)",
			      strlen(n->sensors[i].name), AL_ID_MAX);
	for (size_t i = 0; i < n->nsensors; i++) {
		struct al_sensor *first = al_strmap_put(&names, n->sensors[i].name, &n->sensors[i]);

		if (first != &n->sensors[i])
			loader_error(l, n->sensors[i].ref.pos, "sensor name '%s' is used twice in this "
			      "loop (first at line %d)", n->sensors[i].name, first->ref.pos.line);
	}
	al_strmap_release(&names);
}

static void parse_actuator(struct loader *l, struct al_node *n, const struct al_val *v)
{
	static const char *const keys[] = { "strategy", "agent", "child" };
	static const char *const strategies[] = { "direct", "composite" };
	const struct al_val *agent = NULL, *child = NULL, *agent_k = NULL, *child_k = NULL;
	int strategy = -1;

	if (!al_check_kind(&l->c, v, AL_VAL_MAP, "actuator"))
		return; /* a null one is missing: check_node says so */
	for (size_t i = 0; i < v->n; i++) {
		const struct al_val *k = AL_VAL_KEY(v, i), *val = AL_VAL_VALUE(v, i);

		if (!strcmp(k->str, "strategy")) {
			al_check_enum(&l->c, val, "strategy", strategies, 2, &strategy);
		} else if (!strcmp(k->str, "agent")) {
			agent = al_val_is_null(val) ? NULL : val;
			agent_k = k;
		} else if (!strcmp(k->str, "child")) {
			child = al_val_is_null(val) ? NULL : val;
			child_k = k;
		} else {
			al_check_unknown_key(&l->c, k, keys, AL_ARRAY_SIZE(keys), "actuator");
		}
	}
	if (strategy < 0 && !given(v, "strategy"))
		strategy = child ? AL_STRATEGY_COMPOSITE : AL_STRATEGY_DIRECT;
	if (strategy < 0)
		return;
	n->strategy = (enum al_strategy)strategy;
	if (n->strategy == AL_STRATEGY_COMPOSITE) {
		if (!child)
			loader_error(l, v->pos, "a composite actuator needs a 'child' node");
		else
			n->child = loader_node(l, child, n, 1);
		if (agent)
			loader_error(l, agent_k->pos, "a composite actuator runs its child, not an 'agent'");
	} else {
		if (!agent)
			loader_error(l, v->pos, "a direct actuator needs an 'agent'");
		else
			loader_agent_key(l, &n->actuator, agent, "agent");
		if (child)
			loader_error(l, child_k->pos, "a direct actuator runs an agent: use strategy "
			      "composite for a 'child'");
	}
}

static void parse_termination(struct loader *l, struct al_node *n, const struct al_val *v,
			      const struct al_val **max_it, const struct al_val **timeout)
{
	/* only loops take the keys after timeout_seconds, the exit gate only the sensor form */
	static const char *const keys[] = { "timeout_seconds", "max_iterations",
					    "no_progress_limit", "same_error_limit", "exit_gate" };
	static const char *const gates[] = { "controller", "dual" };
	bool loop = n->type == AL_NODE_LOOP;
	int e;

	if (!al_check_kind(&l->c, v, AL_VAL_MAP, "termination"))
		return;
	for (size_t i = 0; i < v->n; i++) {
		const struct al_val *k = AL_VAL_KEY(v, i), *val = AL_VAL_VALUE(v, i);
		bool loop_key = false;

		for (size_t j = 1; j < AL_ARRAY_SIZE(keys); j++)
			loop_key |= !strcmp(k->str, keys[j]);
		if (loop_key && !loop) {
			loader_error(l, k->pos, "'%s' is for loop nodes only (this is a %s node)",
			      k->str, type_names[n->type]);
		} else if (!strcmp(k->str, "max_iterations")) {
			*max_it = val;
		} else if (!strcmp(k->str, "timeout_seconds")) {
			*timeout = val;
		} else if (!strcmp(k->str, "no_progress_limit")) {
			al_check_int(&l->c, val, k->str, 0, 100000, &n->no_progress_limit);
		} else if (!strcmp(k->str, "same_error_limit")) {
			al_check_int(&l->c, val, k->str, 0, 100000, &n->same_error_limit);
		} else if (!strcmp(k->str, "exit_gate")) {
			if (!n->sensor_form)
				loader_error(l, k->pos, "'exit_gate' is for loops with sensors and a "
				      "controller (this loop runs children)");
			else if (al_check_enum(&l->c, val, k->str, gates, 2, &e))
				n->exit_gate_dual = e == 1;
		} else {
			al_check_unknown_key(&l->c, k, keys, loop ? AL_ARRAY_SIZE(keys) : 1,
					     "termination");
		}
	}
}

static void parse_rollback_on(struct loader *l, struct al_node *n, const struct al_val *v)
{
	static const char *const names[] = { "failure", "timeout", "error" };
	const char **list;
	size_t count;

	if (!al_check_string_list(&l->c, v, "rollback_on", &list, &count))
		return;
	n->rollback_on = 0;
	for (size_t i = 0; i < count; i++) {
		size_t k = 0;

		while (k < AL_ARRAY_SIZE(names) && strcmp(list[i], names[k]))
			k++;
		if (k == AL_ARRAY_SIZE(names))
			loader_error(l, v->items[i]->pos,
			      "unknown rollback_on '%s' (expected failure, timeout or error)", list[i]);
		else
			n->rollback_on |= 1u << k;
	}
	free(list);
}

/* An action's `agent`: a path, or a name meaning .ai-loop/agents/<kebab>.md. */
static void action_agent(struct loader *l, struct al_node *n, const struct al_val *v)
{
	const char *s;
	char *k;

	if (!al_check_string(&l->c, v, "agent", &s))
		return;
	if (strchr(s, '/') || al_ends_with(s, ".md")) {
		agent_ref(l, &n->action_agent, s, v->pos);
		return;
	}
	k = kebab(s);
	if (!*k) {
		loader_error(l, v->pos, "agent name '%s' has no letters or digits", s);
		free(k);
		return;
	}
	agent_ref(l, &n->action_agent, loader_own(l, al_xprintf(".ai-loop/agents/%s.md", k)), v->pos);
	free(k);
}

/* A parallel node's `on_conflict`: fail, skip, or {agent: PATH} (a resolver agent). */
static void parse_on_conflict(struct loader *l, struct al_node *n, const struct al_val *v)
{
	static const char *const modes[] = { "fail", "skip" };
	const struct al_val *agent = NULL;
	int e;

	if (v->kind != AL_VAL_MAP) {
		if (v->kind == AL_VAL_SCALAR) {
			if (al_check_enum(&l->c, v, "on_conflict", modes, 2, &e))
				n->on_conflict = (enum al_on_conflict)e;
		} else {
			loader_error(l, v->pos, "on_conflict must be fail, skip or {agent: PATH}");
		}
		return;
	}
	for (size_t i = 0; i < v->n; i++) {
		if (!strcmp(AL_VAL_KEY(v, i)->str, "agent"))
			agent = AL_VAL_VALUE(v, i);
		else
			loader_error(l, AL_VAL_KEY(v, i)->pos, "unknown key '%s' in on_conflict "
				     "(expected: agent)", AL_VAL_KEY(v, i)->str);
	}
	if (!agent) {
		loader_error(l, v->pos, "on_conflict needs 'agent: PATH' (the resolver agent)");
		return;
	}
	n->on_conflict = AL_CONFLICT_AGENT;
	loader_agent_key(l, &n->resolver, agent, "agent");
}

static void parse_field(struct loader *l, struct al_node *n, const struct al_val *k,
			const struct al_val *v, const struct al_val **max_it,
			const struct al_val **timeout)
{
	static const char *const exits[] = { "condition_true", "condition_false", "manual_break" };
	const char *key = k->str;
	struct keyset ks = type_keys(n);
	int e;

	if (!strcmp(key, "id") || !strcmp(key, "node_id") || !strcmp(key, "type") ||
	    !strcmp(key, "executor") || !strcmp(key, "slurm"))
		return; /* read before the walk */
	if (!strcmp(key, "description")) {
		al_check_string(&l->c, v, key, &n->description);
		return;
	}
	if (!strcmp(key, "timeout_seconds")) {
		*timeout = v;
		return;
	}
	if (!strcmp(key, "termination")) {
		parse_termination(l, n, v, max_it, timeout);
		return;
	}
	if (!in_set(key, ks.keys, ks.n)) {
		unknown_key(l, n, k);
		return;
	}
	if (!strcmp(key, "controller")) {
		const char *s;

		if (!al_check_string(&l->c, v, key, &s)) {
			; /* reported, or null: check_node says it is missing */
		} else if (al_starts_with(s, "builtin:")) {
			if (strcmp(s, AL_BUILTIN_ALL_PASS))
				loader_error(l, v->pos, "unknown builtin controller '%s' (the builtin is '%s')",
				      s, AL_BUILTIN_ALL_PASS);
			n->builtin_all_pass = true;
			n->controller.path = s;
			n->controller.pos = v->pos;
		} else {
			loader_agent_key(l, &n->controller, v, key);
		}
	} else if (!strcmp(key, "sensors")) {
		parse_sensors(l, n, v);
	} else if (!strcmp(key, "sensors_parallel")) {
		al_check_bool(&l->c, v, key, &n->sensors_parallel);
	} else if (!strcmp(key, "actuator")) {
		parse_actuator(l, n, v);
	} else if (!strcmp(key, "max_iterations")) {
		*max_it = v;
	} else if (!strcmp(key, "condition")) {
		n->condition = al_condition_parse(&l->c, v);
	} else if (!strcmp(key, "exit_on")) {
		if (al_check_enum(&l->c, v, key, exits, 3, &e))
			n->exit_on = (enum al_exit_on)e;
	} else if (!strcmp(key, "children")) {
		parse_children(l, n, v);
	} else if (!strcmp(key, "success_threshold")) {
		al_check_int(&l->c, v, key, 1, 100000, &n->success_threshold);
	} else if (!strcmp(key, "failure_threshold")) {
		al_check_int(&l->c, v, key, 1, 100000, &n->failure_threshold);
	} else if (!strcmp(key, "max_concurrency")) {
		al_check_int(&l->c, v, key, 1, 1024, &n->max_concurrency);
	} else if (!strcmp(key, "isolation")) {
		static const char *const isolations[] = { "shared", "worktree" };

		if (al_check_enum(&l->c, v, key, isolations, 2, &e))
			n->isolation = (enum al_isolation)(AL_ISOLATION_SHARED + e);
	} else if (!strcmp(key, "on_conflict")) {
		parse_on_conflict(l, n, v);
	} else if (!strcmp(key, "true_branch") || !strcmp(key, "then")) {
		if (n->then_branch)
			loader_error(l, k->pos, "'then' and 'true_branch' are the same: give one");
		else if (al_check_kind(&l->c, v, AL_VAL_MAP, key))
			n->then_branch = loader_node(l, v, n, 1);
	} else if (!strcmp(key, "false_branch") || !strcmp(key, "else")) {
		if (n->else_branch)
			loader_error(l, k->pos, "'else' and 'false_branch' are the same: give one");
		else if (al_check_kind(&l->c, v, AL_VAL_MAP, key))
			n->else_branch = loader_node(l, v, n, 2);
	} else if (!strcmp(key, "agent")) {
		action_agent(l, n, v);
	} else if (!strcmp(key, "skill") || !strcmp(key, "task")) {
		if (n->skill)
			loader_error(l, k->pos, "'skill' and 'task' are the same: give one");
		else
			al_check_string(&l->c, v, key, &n->skill);
	} else if (!strcmp(key, "args")) {
		al_check_string(&l->c, v, key, &n->args);
	} else if (!strcmp(key, "target")) {
		al_check_string(&l->c, v, key, &n->target);
	} else if (!strcmp(key, "message")) {
		al_check_string(&l->c, v, key, &n->message);
	} else if (!strcmp(key, "feedback_enabled")) {
		al_check_bool(&l->c, v, key, &n->feedback_enabled);
	} else if (!strcmp(key, "output_to_memory")) {
		al_check_string(&l->c, v, key, &n->output_to_memory);
	} else if (!strcmp(key, "rollback_on")) {
		parse_rollback_on(l, n, v);
	}
}

/* Works out the type: `type` (any case), else action if it has skill/agent. */
static bool node_type(struct loader *l, struct al_node *n, const struct al_val *v)
{
	const struct al_val *t = al_val_get(v, "type");
	const char *hint;

	if (!t || al_val_is_null(t)) {
		if (al_val_get(v, "skill") || al_val_get(v, "task") || al_val_get(v, "agent")) {
			n->type = AL_NODE_ACTION;
			return true;
		}
		loader_error(l, v->pos, "node needs a 'type' (one of: loop, sequence, fallback, "
		      "parallel, conditional, action, transaction)");
		return false;
	}
	if (t->kind != AL_VAL_SCALAR) {
		loader_error(l, t->pos, "'type' must be a string, not %s", al_val_describe(t));
		return false;
	}
	for (size_t i = 0; i < AL_ARRAY_SIZE(type_names); i++) {
		if (!strcasecmp(t->str, type_names[i])) {
			n->type = (enum al_node_type)i;
			return true;
		}
	}
	{
		char lower[64];
		size_t i;

		for (i = 0; t->str[i] && i < sizeof(lower) - 1; i++)
			lower[i] = (char)tolower((unsigned char)t->str[i]);
		lower[i] = '\0';
		hint = al_closest(lower, type_names, AL_ARRAY_SIZE(type_names));
	}
	if (hint)
		loader_error(l, t->pos, "unknown node type '%s' (did you mean '%s'?)", t->str, hint);
	else
		loader_error(l, t->pos, "unknown node type '%s' (expected loop, sequence, fallback, "
		      "parallel, conditional, action or transaction)", t->str);
	return false;
}

static void node_id(struct loader *l, struct al_node *n, const struct al_val *v, int position)
{
	const struct al_val *id = al_val_get(v, "id"), *nid = al_val_get(v, "node_id");

	if (id && nid) {
		const struct al_val *second = NULL; /* the key written last */

		for (size_t i = 0; i < v->n; i++)
			if (!strcmp(AL_VAL_KEY(v, i)->str, "id") ||
			    !strcmp(AL_VAL_KEY(v, i)->str, "node_id"))
				second = AL_VAL_KEY(v, i);
		loader_error(l, second->pos, "'id' and 'node_id' are the same: give one");
	}
	if (!id)
		id = nid;
	if (id && !al_val_is_null(id)) {
		if (id->kind != AL_VAL_SCALAR) {
			loader_error(l, id->pos, "'id' must be a string, not %s", al_val_describe(id));
		} else if (!al_id_valid(id->str)) {
			loader_error(l, id->pos, "invalid id '%s': use letters, digits, '_' and '-', "
			      "starting with a letter or digit", id->str);
		} else if (strlen(id->str) > AL_ID_MAX) {
			loader_error(l, id->pos, "id is %zu characters long: at most %d (it names the "
			      "node's directory and goes into commit subjects)", strlen(id->str),
			      AL_ID_MAX);
		} else {
			n->id = id->str;
			return;
		}
	}
	n->id = loader_own(l, al_xprintf("%s-%d", type_names[n->type], position));
	n->id_generated = true;
}

/* The mapping that node `b`, a branch written as `key` or its synonym, came from. */
static const struct al_val *branch(const struct al_val *v, const struct al_node *b,
				   const char *key)
{
	const struct al_val *w = given(v, key);

	if (w && w->pos.line == b->pos.line && w->pos.col == b->pos.col)
		return w;
	return given(v, !strcmp(key, "then") ? "true_branch" : "false_branch");
}

static bool has_any(const struct al_val *v, const char *const *keys, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (al_val_get(v, keys[i]))
			return true;
	return false;
}

/*
 * Whether node `n` can change the code: it, or a node under it, has an
 * actuator (a sensor-form loop) or is an action that runs an agent.
 * Sensors and conditions only measure.
 */
static bool writes(const struct al_node *n)
{
	if ((n->type == AL_NODE_LOOP && n->sensor_form) ||
	    (n->type == AL_NODE_ACTION && !n->break_loop))
		return true;
	for (size_t i = 0; i < al_node_nkids(n); i++)
		if (writes(al_node_kid(n, i)))
			return true;
	return false;
}

/*
 * A parallel node's isolation: its own `isolation:`, else
 * defaults.parallel_isolation, else a worktree each when a child can
 * write (writers that share one work tree race, and see each other's
 * half-done edits), else shared (a worktree would only cost time).
 */
static enum al_isolation default_isolation(const struct loader *l, const struct al_node *n)
{
	if (l->flow->parallel_isolation != AL_ISOLATION_DEFAULT)
		return l->flow->parallel_isolation;
	for (size_t i = 0; i < n->nchildren; i++)
		if (writes(n->children[i]))
			return AL_ISOLATION_WORKTREE;
	return AL_ISOLATION_SHARED;
}

static void check_node(struct loader *l, struct al_node *n, const struct al_val *v,
		       const struct al_val *max_it, const struct al_val *timeout)
{
	if (n->type == AL_NODE_LOOP) {
		n->max_iterations = AL_DEFAULT_MAX_ITERATIONS;
		if (max_it)
			al_check_int(&l->c, max_it, "max_iterations", 1, 100000, &n->max_iterations);
	}
	if (timeout)
		al_check_int(&l->c, timeout, "timeout_seconds", 0, 30 * 24 * 3600,
			     &n->timeout_seconds);

	switch (n->type) {
	case AL_NODE_LOOP:
		if (n->exit_gate_dual && !n->nsensors && given(v, "termination"))
			loader_error(l, al_val_get(given(v, "termination"), "exit_gate")->pos,
			      "exit_gate 'dual' needs sensors: the loop completes when its "
			      "controller says the target is met and every sensor passes");
		if (n->sensor_form) {
			if (!given(v, "controller"))
				loader_error(l, v->pos, "loop needs a 'controller' (an agent file or %s)",
				      AL_BUILTIN_ALL_PASS);
			if (!given(v, "actuator"))
				loader_error(l, v->pos, "loop needs an 'actuator'");
		} else if (!given(v, "children") || !n->nchildren) {
			/* children that are there but wrong were reported themselves */
			if (!given(v, "children"))
				loader_error(l, v->pos, "loop needs 'controller', 'sensors' and 'actuator', "
				      "or 'children'");
			else if (given(v, "children")->kind == AL_VAL_SEQ && !given(v, "children")->n)
				loader_error(l, given(v, "children")->pos, "loop has no children");
		} else if (n->exit_on == AL_EXIT_MANUAL_BREAK && given(v, "condition")) {
			loader_error(l, given(v, "condition")->pos, "a 'condition' is not used with "
			      "exit_on 'manual_break': the loop ends when memory 'loop.%s.break' is "
			      "true", n->id);
		} else if (n->exit_on != AL_EXIT_MANUAL_BREAK && given(v, "exit_on") &&
			   !given(v, "condition")) {
			loader_error(l, given(v, "exit_on")->pos, "exit_on '%s' needs a 'condition'",
			      n->exit_on == AL_EXIT_CONDITION_TRUE ? "condition_true"
								   : "condition_false");
		}
		break;
	case AL_NODE_SEQUENCE:
	case AL_NODE_FALLBACK:
	case AL_NODE_PARALLEL:
	case AL_NODE_TRANSACTION:
		if (!given(v, "children"))
			loader_error(l, v->pos, "%s node needs 'children'", type_names[n->type]);
		else if (given(v, "children")->kind == AL_VAL_SEQ && !given(v, "children")->n)
			loader_error(l, given(v, "children")->pos, "%s node has no children",
			      type_names[n->type]);
		if (n->success_threshold > (int)n->nchildren && n->nchildren)
			loader_error(l, al_val_get(v, "success_threshold")->pos,
			      "success_threshold %d is more than the %zu children",
			      n->success_threshold, n->nchildren);
		if (n->failure_threshold > (int)n->nchildren && n->nchildren)
			loader_error(l, al_val_get(v, "failure_threshold")->pos,
			      "failure_threshold %d is more than the %zu children",
			      n->failure_threshold, n->nchildren);
		if (n->type == AL_NODE_PARALLEL && n->isolation == AL_ISOLATION_DEFAULT)
			n->isolation = default_isolation(l, n);
		if (n->type == AL_NODE_PARALLEL && n->isolation != AL_ISOLATION_WORKTREE &&
		    al_val_get(v, "on_conflict"))
			loader_error(l, al_val_get(v, "on_conflict")->pos,
				     "on_conflict needs 'isolation: worktree' (shared children "
				     "have nothing to merge)");
		if (n->type == AL_NODE_TRANSACTION && !al_val_get(v, "rollback_on"))
			n->rollback_on = AL_ROLLBACK_FAILURE | AL_ROLLBACK_TIMEOUT;
		break;
	case AL_NODE_CONDITIONAL:
		if (!given(v, "condition"))
			loader_error(l, v->pos, "conditional node needs a 'condition'");
		if (n->then_branch && n->else_branch && !strcmp(n->then_branch->id, n->else_branch->id))
			duplicate_id(l, n->else_branch->id, branch(v, n->else_branch, "else"),
				     branch(v, n->then_branch, "then"));
		break;
	case AL_NODE_ACTION:
		if (n->skill && !strcmp(n->skill, "break_loop")) {
			const struct al_node *up = n->parent;

			while (up && up->type != AL_NODE_LOOP)
				up = up->parent;
			if (!up)
				loader_error(l, v->pos, "'break_loop' ends the nearest loop around it, "
				      "and this action is in none");
			n->break_loop = true;
			break;
		}
		/* a missing defaults.action_agent is reported there, once */
		if (!n->action_agent.path && l->default_action.path)
			n->action_agent = l->default_action;
		else if (!n->action_agent.path)
			agent_ref(l, &n->action_agent, l->flow->action_agent, v->pos);
		break;
	}
}

struct al_node *loader_node(struct loader *l, const struct al_val *v, struct al_node *parent,
			    int position)
{
	static const char *const sensor_form[] = { "controller", "sensors", "actuator",
						   "sensors_parallel" };
	static const char *const reactree_form[] = { "children", "condition", "exit_on" };
	const struct al_val *max_it = NULL, *timeout = NULL;
	bool mixed = false;
	struct al_node *n;

	if (v->kind != AL_VAL_MAP) {
		loader_error(l, v->pos, "a node must be a mapping, not %s", al_val_describe(v));
		return NULL;
	}
	n = al_calloc(1, sizeof(*n));
	n->pos = v->pos;
	n->parent = parent;
	n->depth = parent ? parent->depth + 1 : 0;
	n->strategy = AL_STRATEGY_DIRECT;
	n->no_progress_limit = l->flow->no_progress_limit; /* defaults.termination */
	n->same_error_limit = l->flow->same_error_limit;
	if (!node_type(l, n, v)) {
		node_id(l, n, v, position); /* its id may be wrong too */
		free(n);
		return NULL;
	}
	node_id(l, n, v, position);
	/* before the children, which inherit them */
	n->slurm = parent ? parent->slurm : l->flow->slurm;
	if (given(v, "executor"))
		al_slurm_read_executor(&l->c, given(v, "executor"), &n->slurm);
	if (given(v, "slurm"))
		al_slurm_read(&l->c, given(v, "slurm"), &n->slurm);
	n->path = parent ? al_xprintf("%s/%s", parent->path, n->id) : al_strdup(n->id);
	if (strlen(n->path) > AL_NODE_PATH_MAX &&
	    (!parent || strlen(parent->path) <= AL_NODE_PATH_MAX)) /* said once, at the first */
		loader_error(l, v->pos, "the path of this node from the root is %zu characters long: "
		      "at most %d (it names the node's directory): use shorter ids",
		      strlen(n->path), AL_NODE_PATH_MAX);
	l->flow->node_count++;
	if (n->depth > l->flow->max_depth)
		l->flow->max_depth = n->depth;
	if (n->depth >= AL_FLOW_MAX_DEPTH) {
		loader_error(l, v->pos, "flow nesting deeper than %d levels", AL_FLOW_MAX_DEPTH);
		return n;
	}
	if (n->type == AL_NODE_LOOP) {
		bool s = has_any(v, sensor_form, AL_ARRAY_SIZE(sensor_form));
		bool r = has_any(v, reactree_form, AL_ARRAY_SIZE(reactree_form));

		n->sensor_form = s || !r;
		/*
		 * A ReAcTree loop ends by its condition, a break or max_iterations:
		 * its retries repeat identical attempts by design, so its circuit
		 * breaker is off unless its termination or the flow's defaults
		 * give a limit (parse_termination, below, reads the node's).
		 */
		if (!n->sensor_form && !l->flow->breaker_limits_given)
			n->no_progress_limit = n->same_error_limit = 0;
		mixed = s && r;
		if (mixed)
			loader_error(l, v->pos, "a loop has either 'controller'/'sensors'/'actuator' or "
			      "'children'/'condition', not both");
	}
	for (size_t i = 0; i < v->n; i++) {
		/* the keys of the other form were reported just above */
		if (mixed && in_set(AL_VAL_KEY(v, i)->str, reactree_form,
				    AL_ARRAY_SIZE(reactree_form)))
			continue;
		parse_field(l, n, AL_VAL_KEY(v, i), AL_VAL_VALUE(v, i), &max_it, &timeout);
	}
	check_node(l, n, v, max_it, timeout);
	return n;
}

void loader_node_free(struct al_node *n)
{
	if (!n)
		return;
	for (size_t i = 0; i < n->nchildren; i++)
		loader_node_free(n->children[i]);
	free(n->children);
	loader_node_free(n->child);
	loader_node_free(n->then_branch);
	loader_node_free(n->else_branch);
	al_condition_free(n->condition);
	free(n->sensors);
	free(n->path);
	free(n);
}
