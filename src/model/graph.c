#include "ailoop/model/graph.h"
#include "ailoop/base/util.h"

#include <string.h>

struct graph {
	enum al_graph_format format;
	struct al_strbuf *out;
	int next_id;
};

/* Label text is escaped for the target: Mermaid entities or DOT escapes. */
static void add_escaped(struct graph *g, const char *s)
{
	for (; *s; s++) {
		if (g->format == AL_GRAPH_MERMAID) {
			switch (*s) {
			case '"': al_strbuf_adds(g->out, "#quot;"); break;
			case '<': al_strbuf_adds(g->out, "#lt;"); break;
			case '>': al_strbuf_adds(g->out, "#gt;"); break;
			case '#': al_strbuf_adds(g->out, "#35;"); break;
			case '&': al_strbuf_adds(g->out, "#amp;"); break;
			case '\n': al_strbuf_adds(g->out, "<br/>"); break;
			default: al_strbuf_addch(g->out, *s); break;
			}
		} else {
			switch (*s) {
			case '"': al_strbuf_adds(g->out, "\\\""); break;
			case '\\': al_strbuf_adds(g->out, "\\\\"); break;
			case '\n': al_strbuf_adds(g->out, "\\n"); break;
			default: al_strbuf_addch(g->out, *s); break;
			}
		}
	}
}

enum shape { SHAPE_NODE, SHAPE_SENSOR, SHAPE_CONTROLLER, SHAPE_AGENT };

static void vertex(struct graph *g, const char *id, enum shape shape, const char *label)
{
	static const char *const mermaid_open[] = { "[\"", "[/\"", "{{\"", "([\"" };
	static const char *const mermaid_close[] = { "\"]", "\"/]", "\"}}", "\"])" };
	static const char *const dot_shape[] = { "box", "parallelogram", "hexagon", "ellipse" };

	if (g->format == AL_GRAPH_MERMAID) {
		al_strbuf_addf(g->out, "  %s%s", id, mermaid_open[shape]);
		add_escaped(g, label);
		al_strbuf_addf(g->out, "%s\n", mermaid_close[shape]);
	} else {
		al_strbuf_addf(g->out, "  %s [shape=%s, label=\"", id, dot_shape[shape]);
		add_escaped(g, label);
		al_strbuf_adds(g->out, "\"];\n");
	}
}

static void edge(struct graph *g, const char *from, const char *to, const char *label,
		 bool dashed)
{
	if (g->format == AL_GRAPH_MERMAID) {
		if (dashed)
			al_strbuf_addf(g->out, "  %s -.->|%s| %s\n", from, label, to);
		else
			al_strbuf_addf(g->out, "  %s -->|%s| %s\n", from, label, to);
	} else {
		al_strbuf_addf(g->out, "  %s -> %s [label=\"%s\"%s];\n", from, to, label,
			       dashed ? ", style=dashed" : "");
	}
}

static void node_label(const struct al_node *n, struct al_strbuf *sb)
{
	al_strbuf_addf(sb, "%s\n%s", n->id, al_node_type_name(n->type));
	if (n->type == AL_NODE_LOOP)
		al_strbuf_addf(sb, " · max %d iteration%s", n->max_iterations,
			       n->max_iterations == 1 ? "" : "s");
	if (n->timeout_seconds)
		al_strbuf_addf(sb, " · timeout %ds", n->timeout_seconds);
	if (n->type == AL_NODE_PARALLEL) {
		if (n->success_threshold)
			al_strbuf_addf(sb, " · succeed at %d", n->success_threshold);
		if (n->failure_threshold)
			al_strbuf_addf(sb, " · fail at %d", n->failure_threshold);
		if (n->max_concurrency)
			al_strbuf_addf(sb, " · %d at a time", n->max_concurrency);
	}
	if (n->condition) {
		static const char *const exits[] = { "until", "while", "until break" };

		al_strbuf_addf(sb, "\n%s ", n->type == AL_NODE_LOOP ? exits[n->exit_on] : "if");
		al_condition_describe(n->condition, sb);
	}
	if (n->type == AL_NODE_ACTION) {
		if (n->skill)
			al_strbuf_addf(sb, "\nskill %s", n->skill);
		if (n->action_agent.path)
			al_strbuf_addf(sb, "\nagent %s", n->action_agent.path);
	}
}

static void emit(struct graph *g, const struct al_node *n, const char *id)
{
	struct al_strbuf label = AL_STRBUF_INIT;
	char sub[48], kid[32];

	node_label(n, &label);
	vertex(g, id, SHAPE_NODE, label.buf);
	if (n->type == AL_NODE_LOOP && n->sensor_form) {
		for (size_t i = 0; i < n->nsensors; i++) {
			al_strbuf_reset(&label);
			al_strbuf_addf(&label, "sensor %s\n%s", n->sensors[i].name,
				       n->sensors[i].ref.path);
			snprintf(sub, sizeof(sub), "%s_s%zu", id, i + 1);
			vertex(g, sub, SHAPE_SENSOR, label.buf);
			edge(g, id, sub, "measures", true);
		}
		if (n->controller.path) {
			al_strbuf_reset(&label);
			al_strbuf_addf(&label, "controller\n%s", n->controller.path);
			snprintf(sub, sizeof(sub), "%s_c", id);
			vertex(g, sub, SHAPE_CONTROLLER, label.buf);
			edge(g, id, sub, "decides", true);
		}
		if (n->strategy == AL_STRATEGY_DIRECT && n->actuator.path) {
			al_strbuf_reset(&label);
			al_strbuf_addf(&label, "actuator\n%s", n->actuator.path);
			snprintf(sub, sizeof(sub), "%s_a", id);
			vertex(g, sub, SHAPE_AGENT, label.buf);
			edge(g, id, sub, "acts", false);
		}
	}
	al_strbuf_release(&label);
	for (size_t i = 0, k = al_node_nkids(n); i < k; i++) {
		const struct al_node *c = al_node_kid(n, i);
		char num[24];
		const char *what = num;

		snprintf(kid, sizeof(kid), "n%d", g->next_id++);
		if (c == n->child)
			what = "actuator";
		else if (c == n->then_branch)
			what = "then";
		else if (c == n->else_branch)
			what = "else";
		else
			snprintf(num, sizeof(num), "%zu", i + 1 - (n->child != NULL) -
				 (n->then_branch != NULL) - (n->else_branch != NULL));
		edge(g, id, kid, what, false);
		emit(g, c, kid);
	}
}

/*
 * The plain-text tree `ailoop setup` shows: a node a line ("fix: loop, at
 * most 5 iterations"), its sensors, controller and actuator below it, and
 * its children under "`-- ", each level four columns further in.
 */
static void tree(const struct al_node *n, int ind, const char *edge_name, struct al_strbuf *out)
{
	struct al_strbuf label = AL_STRBUF_INIT;
	const char *nl;

	node_label(n, &label);
	nl = strchr(label.buf, '\n');
	if (ind)
		al_strbuf_addf(out, "%*s`-- %s%s", ind - 4, "", edge_name ? edge_name : "",
			       edge_name ? ": " : "");
	else
		al_strbuf_adds(out, "  ");
	/* "fix\nloop · max 5 iterations\nuntil …" as "fix: loop, at most 5 iterations; until …" */
	al_strbuf_add(out, label.buf, (size_t)(nl - label.buf));
	al_strbuf_adds(out, ": ");
	for (const char *p = nl + 1; *p; p++) {
		if (*p == '\n')
			al_strbuf_adds(out, "; ");
		else if (!strncmp(p, " \xc2\xb7 max ", 8) && (p += 7))
			al_strbuf_adds(out, ", at most ");
		else if (!strncmp(p, " \xc2\xb7 ", 4) && (p += 3))
			al_strbuf_adds(out, ", ");
		else
			al_strbuf_addch(out, *p);
	}
	al_strbuf_addch(out, '\n');
	al_strbuf_release(&label);
	ind += ind ? 0 : 2;
	for (size_t i = 0; n->sensor_form && i < n->nsensors; i++) {
		const struct al_agent *a = n->sensors[i].ref.agent;

		if (a && a->command_sh)
			al_strbuf_addf(out, "%*s  sensor %s: $ %s  (target: %s)\n", ind, "",
				       n->sensors[i].name, a->command_sh,
				       a->target ? a->target : "its command passes");
		else
			al_strbuf_addf(out, "%*s  sensor %s: %s\n", ind, "", n->sensors[i].name,
				       n->sensors[i].ref.path);
	}
	if (n->sensor_form && n->controller.path)
		al_strbuf_addf(out, "%*s  controller: %s\n", ind, "", n->controller.path);
	if (n->sensor_form && n->strategy == AL_STRATEGY_DIRECT && n->actuator.path)
		al_strbuf_addf(out, "%*s  actuator: %s\n", ind, "", n->actuator.path);
	for (size_t i = 0, k = al_node_nkids(n); i < k; i++) {
		const struct al_node *c = al_node_kid(n, i);

		tree(c, ind + 4, c == n->then_branch ? "then" : c == n->else_branch ? "else" : NULL,
		     out);
	}
}

void al_graph_write(const struct al_flow *flow, enum al_graph_format format,
		    struct al_strbuf *out)
{
	struct graph g = { format, out, 1 };

	if (format == AL_GRAPH_TREE) {
		al_strbuf_addf(out, "flow %s:\n", flow->file);
		if (flow->root)
			tree(flow->root, 0, NULL, out);
		return;
	}

	if (format == AL_GRAPH_MERMAID)
		al_strbuf_adds(out, "flowchart TD\n");
	else
		al_strbuf_adds(out, "digraph flow {\n  rankdir=TB;\n"
			       "  node [fontname=\"Helvetica\"];\n"
			       "  edge [fontname=\"Helvetica\", fontsize=10];\n");
	if (flow->root)
		emit(&g, flow->root, "n0");
	if (format == AL_GRAPH_DOT)
		al_strbuf_adds(out, "}\n");
}
