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
	const struct al_val *w = loader_given(v, key);

	if (w && w->pos.line == b->pos.line && w->pos.col == b->pos.col)
		return w;
	return loader_given(v, !strcmp(key, "then") ? "true_branch" : "false_branch");
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
		if (n->exit_gate_dual && !n->nsensors && loader_given(v, "termination"))
			loader_error(l, al_val_get(loader_given(v, "termination"), "exit_gate")->pos,
			      "exit_gate 'dual' needs sensors: the loop completes when its "
			      "controller says the target is met and every sensor passes");
		if (n->sensor_form) {
			if (!loader_given(v, "controller"))
				loader_error(l, v->pos, "loop needs a 'controller' (an agent file or %s)",
				      AL_BUILTIN_ALL_PASS);
			if (!loader_given(v, "actuator"))
				loader_error(l, v->pos, "loop needs an 'actuator'");
		} else if (!loader_given(v, "children") || !n->nchildren) {
			/* children that are there but wrong were reported themselves */
			if (!loader_given(v, "children"))
				loader_error(l, v->pos, "loop needs 'controller', 'sensors' and 'actuator', "
				      "or 'children'");
			else if (loader_given(v, "children")->kind == AL_VAL_SEQ && !loader_given(v, "children")->n)
				loader_error(l, loader_given(v, "children")->pos, "loop has no children");
		} else if (n->exit_on == AL_EXIT_MANUAL_BREAK && loader_given(v, "condition")) {
			loader_error(l, loader_given(v, "condition")->pos, "a 'condition' is not used with "
			      "exit_on 'manual_break': the loop ends when memory 'loop.%s.break' is "
			      "true", n->id);
		} else if (n->exit_on != AL_EXIT_MANUAL_BREAK && loader_given(v, "exit_on") &&
			   !loader_given(v, "condition")) {
			loader_error(l, loader_given(v, "exit_on")->pos, "exit_on '%s' needs a 'condition'",
			      n->exit_on == AL_EXIT_CONDITION_TRUE ? "condition_true"
								   : "condition_false");
		}
		break;
	case AL_NODE_SEQUENCE:
	case AL_NODE_FALLBACK:
	case AL_NODE_PARALLEL:
	case AL_NODE_TRANSACTION:
		if (!loader_given(v, "children"))
			loader_error(l, v->pos, "%s node needs 'children'", type_names[n->type]);
		else if (loader_given(v, "children")->kind == AL_VAL_SEQ && !loader_given(v, "children")->n)
			loader_error(l, loader_given(v, "children")->pos, "%s node has no children",
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
		if (!loader_given(v, "condition"))
			loader_error(l, v->pos, "conditional node needs a 'condition'");
		if (n->then_branch && n->else_branch && !strcmp(n->then_branch->id, n->else_branch->id))
			loader_duplicate_id(l, n->else_branch->id, branch(v, n->else_branch, "else"),
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
			loader_agent_ref(l, &n->action_agent, l->flow->action_agent, v->pos);
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
	if (loader_given(v, "executor"))
		al_slurm_read_executor(&l->c, loader_given(v, "executor"), &n->slurm);
	if (loader_given(v, "slurm"))
		al_slurm_read(&l->c, loader_given(v, "slurm"), &n->slurm);
	n->episodes = parent ? parent->episodes : l->flow->episodes;
	if (loader_given(v, "episodes"))
		loader_episodes(l, loader_given(v, "episodes"), &n->episodes);
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
		if (mixed && loader_in_set(AL_VAL_KEY(v, i)->str, reactree_form,
				    AL_ARRAY_SIZE(reactree_form)))
			continue;
		loader_field(l, n, AL_VAL_KEY(v, i), AL_VAL_VALUE(v, i), &max_it, &timeout);
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
