#include "flow_loader.h"
#include "ailoop/base/strbuf.h"
#include "ailoop/base/util.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>/*
 * A node's keys: the table of those each type accepts (a key outside it
 * reported with the nearest known one as a hint), and each key read
 * (loader_field): children, sensors, actuator, termination, the action's
 * agent, on_conflict and the rest. flow_node.c works out the node's type
 * before and checks the whole node after.
 */

/* Keys each node type accepts, beside the ones every node has. */
static const char *const common_keys[] = {
	"id", "node_id", "type", "description", "timeout_seconds", "termination", "executor",
	"slurm", "episodes",
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

bool loader_in_set(const char *key, const char *const *keys, size_t n)
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
	snprintf(where, sizeof(where), "%s%s node",
		 n->type == AL_NODE_LOOP ? (n->sensor_form ? "a sensor-form " : "a ReAcTree ")
		 : n->type == AL_NODE_ACTION ? "an " : "a ",
		 al_node_type_name(n->type));
	al_check_unknown_key(&l->c, key, all, m, where);
}

/* The value of `key` unless it is absent or null: a null value reads as absent. */
const struct al_val *loader_given(const struct al_val *map, const char *key)
{
	const struct al_val *v = al_val_get(map, key);

	return v && !al_val_is_null(v) ? v : NULL;
}

/* The id written in node `v` if it is `id`; NULL if `id` was generated. */
static const struct al_val *written_id(const struct al_val *v, const char *id)
{
	const struct al_val *idv = loader_given(v, "id");

	if (!idv)
		idv = loader_given(v, "node_id");
	return idv && idv->kind == AL_VAL_SCALAR && !strcmp(idv->str, id) ? idv : NULL;
}

/*
 * Node `v` has the same `id` as its sibling `first`: say so at the id, or at
 * the node when its id was generated (the user never wrote it).
 */
void loader_duplicate_id(struct loader *l, const char *id, const struct al_val *v,
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

void loader_agent_ref(struct loader *l, struct al_agent_ref *ref, const char *path,
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
	loader_agent_ref(l, ref, s, v->pos);
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
			loader_duplicate_id(l, kid->id, v->items[i], first);
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
	if (strategy < 0 && !loader_given(v, "strategy"))
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
	/*
	 * every node takes the first three (a budget covers the subtree), only
	 * loops the others, the exit gate only the sensor form
	 */
	static const char *const keys[] = { "timeout_seconds", "max_cost_usd", "max_tokens",
					    "max_iterations", "no_progress_limit",
					    "same_error_limit", "exit_gate" };
	static const char *const gates[] = { "controller", "dual" };
	bool loop = n->type == AL_NODE_LOOP;
	int e;

	if (!al_check_kind(&l->c, v, AL_VAL_MAP, "termination"))
		return;
	for (size_t i = 0; i < v->n; i++) {
		const struct al_val *k = AL_VAL_KEY(v, i), *val = AL_VAL_VALUE(v, i);
		bool loop_key = false;

		for (size_t j = 3; j < AL_ARRAY_SIZE(keys); j++)
			loop_key |= !strcmp(k->str, keys[j]);
		if (loop_key && !loop) {
			loader_error(l, k->pos, "'%s' is for loop nodes only (this is a %s node)",
			      k->str, al_node_type_name(n->type));
		} else if (!strcmp(k->str, "max_iterations")) {
			*max_it = val;
		} else if (!strcmp(k->str, "timeout_seconds")) {
			*timeout = val;
		} else if (!strcmp(k->str, "max_cost_usd")) {
			loader_read_money(l, val, k->str, &n->max_cost_usd);
		} else if (!strcmp(k->str, "max_tokens")) {
			loader_read_tokens(l, val, k->str, &n->max_tokens);
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
			al_check_unknown_key(&l->c, k, keys, loop ? AL_ARRAY_SIZE(keys) : 3,
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
		loader_agent_ref(l, &n->action_agent, s, v->pos);
		return;
	}
	k = kebab(s);
	if (!*k) {
		loader_error(l, v->pos, "agent name '%s' has no letters or digits", s);
		free(k);
		return;
	}
	loader_agent_ref(l, &n->action_agent, loader_own(l, al_xprintf(".ai-loop/agents/%s.md", k)), v->pos);
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

void loader_field(struct loader *l, struct al_node *n, const struct al_val *k,
			const struct al_val *v, const struct al_val **max_it,
			const struct al_val **timeout)
{
	static const char *const exits[] = { "condition_true", "condition_false", "manual_break" };
	const char *key = k->str;
	struct keyset ks = type_keys(n);
	int e;

	if (!strcmp(key, "id") || !strcmp(key, "node_id") || !strcmp(key, "type") ||
	    !strcmp(key, "executor") || !strcmp(key, "slurm") || !strcmp(key, "episodes"))
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
	if (!loader_in_set(key, ks.keys, ks.n)) {
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
