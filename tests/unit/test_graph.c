#include "ailoop/model/flow.h"
#include "ailoop/model/graph.h"
#include "ailoop/base/strbuf.h"
#include "ailoop/base/util.h"

#include "unit.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <pcre2.h>
#include <string.h>

/*
 * A graph as the checkers read it back: vertices with their shape and
 * label, edges with their label. The checkers assert that the text is well
 * formed for its format and that the graph is a tree rooted at n0.
 */
#define MAX_VERTICES 512

enum shape { BOX, SENSOR, CONTROLLER, AGENT };

struct vertex {
	char id[32];
	enum shape shape;
	char label[512];
	int parents;
};

struct edge {
	char from[32], to[32], label[32];
	bool dashed;
};

struct graph {
	struct vertex v[MAX_VERTICES];
	size_t nv;
	struct edge e[MAX_VERTICES];
	size_t ne;
};

static pcre2_code *compile(const char *pattern)
{
	PCRE2_SIZE off;
	int code;
	pcre2_code *re = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED, PCRE2_UTF, &code,
				       &off, NULL);

	cr_assert_not_null(re, "bad test pattern at %zu: %s", (size_t)off, pattern);
	return re;
}

/* Matches `line` against `re`; copies group i into groups[i-1] (each 512 bytes). */
static bool match(pcre2_code *re, const char *line, char (*groups)[512], int ngroups)
{
	pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, NULL);
	int rc = pcre2_match(re, (PCRE2_SPTR)line, strlen(line), 0, 0, md, NULL);

	for (int i = 1; rc > 0 && i <= ngroups; i++) {
		PCRE2_SIZE len = 512;

		groups[i - 1][0] = '\0';
		if (pcre2_substring_copy_bynumber(md, (uint32_t)i, (PCRE2_UCHAR *)groups[i - 1], &len) < 0)
			groups[i - 1][0] = '\0';
	}
	pcre2_match_data_free(md);
	return rc > 0;
}

static struct vertex *vertex(struct graph *g, const char *id)
{
	for (size_t i = 0; i < g->nv; i++)
		if (!strcmp(g->v[i].id, id))
			return &g->v[i];
	return NULL;
}

/* The checkers return false with the first problem found described here. */
static char problem[1200];

#define PROBLEM(...) (snprintf(problem, sizeof(problem), __VA_ARGS__), false)

/* Copies `src` into the field `dst` of `size` bytes; false if it does not fit. */
static bool copy_field(char *dst, size_t size, const char *src)
{
	size_t len = strlen(src);

	if (len >= size)
		return false;
	memcpy(dst, src, len + 1);
	return true;
}

static bool add_vertex(struct graph *g, const char *id, enum shape shape, const char *label,
		       const char *line)
{
	struct vertex *v;

	if (vertex(g, id))
		return PROBLEM("vertex %s defined twice: %s", id, line);
	if (g->nv == MAX_VERTICES)
		return PROBLEM("too many vertices");
	v = &g->v[g->nv++];
	if (!copy_field(v->id, sizeof(v->id), id) ||
	    !copy_field(v->label, sizeof(v->label), label))
		return PROBLEM("vertex id or label too long: %s", line);
	v->shape = shape;
	v->parents = 0;
	return true;
}

static bool add_edge(struct graph *g, const char *from, const char *to, const char *label,
		     bool dashed)
{
	struct edge *e;

	if (g->ne == MAX_VERTICES)
		return PROBLEM("too many edges");
	e = &g->e[g->ne++];
	if (!copy_field(e->from, sizeof(e->from), from) || !copy_field(e->to, sizeof(e->to), to) ||
	    !copy_field(e->label, sizeof(e->label), label))
		return PROBLEM("edge %s -> %s: a vertex id or label is too long", from, to);
	e->dashed = dashed;
	return true;
}

/* Every edge joins defined vertices, n0 is the root, and each other has one parent. */
static bool check_tree(struct graph *g)
{
	bool reached[MAX_VERTICES] = { false };
	size_t queue[MAX_VERTICES], head = 0, tail = 0;

	if (!g->nv || strcmp(g->v[0].id, "n0"))
		return PROBLEM("the first vertex is not n0");
	for (size_t i = 0; i < g->ne; i++) {
		struct vertex *from = vertex(g, g->e[i].from), *to = vertex(g, g->e[i].to);

		if (!from)
			return PROBLEM("edge from undefined vertex %s", g->e[i].from);
		if (!to)
			return PROBLEM("edge to undefined vertex %s", g->e[i].to);
		to->parents++;
	}
	if (g->v[0].parents)
		return PROBLEM("the root n0 has a parent");
	for (size_t i = 1; i < g->nv; i++)
		if (g->v[i].parents != 1)
			return PROBLEM("vertex %s has %d parents", g->v[i].id, g->v[i].parents);
	/* with one parent each, reaching every vertex from n0 rules out cycles */
	reached[0] = true;
	queue[tail++] = 0;
	while (head < tail) {
		size_t cur = queue[head++];

		for (size_t i = 0; i < g->ne; i++) {
			size_t to;

			if (strcmp(g->e[i].from, g->v[cur].id))
				continue;
			to = (size_t)(vertex(g, g->e[i].to) - g->v);
			if (!reached[to]) {
				reached[to] = true;
				queue[tail++] = to;
			}
		}
	}
	for (size_t i = 0; i < g->nv; i++)
		if (!reached[i])
			return PROBLEM("vertex %s is not reachable from n0", g->v[i].id);
	return true;
}

/*
 * Mermaid, as `ailoop graph` writes it: "flowchart TD", then vertices
 * `ID<open>"label"<close>` with one of four bracket pairs, and edges
 * `ID -->|label| ID` or `ID -.->|label| ID`. Inside a label, '"' never
 * appears raw, '#' only starts an entity, '<' and '>' only make `<br/>`.
 */
static bool mermaid_ok(const char *text, struct graph *g)
{
	static const char *const opens[] = { "[\"", "[/\"", "{{\"", "([\"" };
	static const char *const closes[] = { "\"]", "\"/]", "\"}}", "\"])" };
	pcre2_code *vre = compile("^  ([A-Za-z][A-Za-z0-9_]*)(\\[\"|\\[/\"|\\{\\{\"|\\(\\[\")"
				  "([^\"]*)(\"\\]|\"/\\]|\"\\}\\}|\"\\]\\))$");
	pcre2_code *ere = compile("^  ([A-Za-z][A-Za-z0-9_]*) (-->|-\\.->)\\|([^|\"]+)\\| "
				  "([A-Za-z][A-Za-z0-9_]*)$");
	pcre2_code *entity = compile("#(?!(?:quot|lt|gt|amp|35);)|<(?!br/>)|(?<!<br/)>");
	char m[4][512];
	const char *p = text;
	int lineno = 0;
	bool ok = true;

	memset(g, 0, sizeof(*g));
	if (!al_ends_with(text, "\n"))
		ok = PROBLEM("the text does not end with a newline");
	while (ok && *p) {
		const char *nl = strchr(p, '\n');
		char line[1024];

		snprintf(line, sizeof(line), "%.*s", (int)(nl - p), p);
		p = nl + 1;
		if (++lineno == 1) {
			if (strcmp(line, "flowchart TD"))
				ok = PROBLEM("the first line is not 'flowchart TD': %s", line);
		} else if (match(vre, line, m, 4)) {
			int open = -1, close = -1;

			for (int i = 0; i < 4; i++) {
				if (!strcmp(m[1], opens[i]))
					open = i;
				if (!strcmp(m[3], closes[i]))
					close = i;
			}
			if (open != close)
				ok = PROBLEM("brackets do not pair in line %d: %s", lineno, line);
			else if (match(entity, m[2], NULL, 0))
				ok = PROBLEM("raw '#', '<' or '>' in line %d: %s", lineno, line);
			else
				ok = add_vertex(g, m[0], (enum shape)open, m[2], line);
		} else if (match(ere, line, m, 4)) {
			ok = add_edge(g, m[0], m[3], m[2], !strcmp(m[1], "-.->"));
		} else {
			ok = PROBLEM("line %d is neither a vertex nor an edge: [%s]", lineno, line);
		}
	}
	pcre2_code_free(vre);
	pcre2_code_free(ere);
	pcre2_code_free(entity);
	return ok && check_tree(g);
}

/*
 * DOT, as `ailoop graph --format dot` writes it: a digraph of vertices
 * `ID [shape=S, label="..."];` and edges `A -> B [label="x"(, style=dashed)];`,
 * with '"' and '\' escaped inside labels.
 */
static bool dot_ok(const char *text, struct graph *g)
{
	static const char *const shapes[] = { "box", "parallelogram", "hexagon", "ellipse" };
	pcre2_code *vre = compile("^  ([A-Za-z][A-Za-z0-9_]*) \\[shape=([a-z]+), "
				  "label=\"((?:[^\"\\\\]|\\\\.)*)\"\\];$");
	pcre2_code *ere = compile("^  ([A-Za-z][A-Za-z0-9_]*) -> ([A-Za-z][A-Za-z0-9_]*) "
				  "\\[label=\"([^\"\\\\]+)\"(, style=dashed)?\\];$");
	char m[4][512];
	const char *p = text;
	int lineno = 0;
	bool ok = true, closed = false;

	memset(g, 0, sizeof(*g));
	if (!al_starts_with(text, "digraph flow {\n") || !al_ends_with(text, "\n"))
		ok = PROBLEM("not a digraph ending with a newline");
	while (ok && *p) {
		const char *nl = strchr(p, '\n');
		char line[1024];

		snprintf(line, sizeof(line), "%.*s", (int)(nl - p), p);
		p = nl + 1;
		if (closed) {
			ok = PROBLEM("text after the closing brace: %s", line);
		} else if (++lineno == 1 || !strcmp(line, "  rankdir=TB;") ||
			   al_starts_with(line, "  node [") || al_starts_with(line, "  edge [")) {
			continue;
		} else if (!strcmp(line, "}")) {
			closed = true;
		} else if (match(vre, line, m, 3)) {
			int shape = -1;

			for (int i = 0; i < 4; i++)
				if (!strcmp(m[1], shapes[i]))
					shape = i;
			if (shape < 0)
				ok = PROBLEM("unknown shape in line %d: %s", lineno, line);
			else
				ok = add_vertex(g, m[0], (enum shape)shape, m[2], line);
		} else if (match(ere, line, m, 4)) {
			ok = add_edge(g, m[0], m[1], m[2], m[3][0] != '\0');
		} else {
			ok = PROBLEM("line %d is not DOT as ailoop writes it: [%s]", lineno, line);
		}
	}
	if (ok && !closed)
		ok = PROBLEM("the digraph is not closed");
	pcre2_code_free(vre);
	pcre2_code_free(ere);
	return ok && check_tree(g);
}

#define check_mermaid(text, g) cr_assert(mermaid_ok((text), (g)), "%s in:\n%s", problem, (text))
#define check_dot(text, g) cr_assert(dot_ok((text), (g)), "%s in:\n%s", problem, (text))

static const struct edge *edge(const struct graph *g, const char *from, const char *to)
{
	for (size_t i = 0; i < g->ne; i++)
		if (!strcmp(g->e[i].from, from) && !strcmp(g->e[i].to, to))
			return &g->e[i];
	return NULL;
}

/* The vertex whose label starts with `id` and a line break (`sep`). */
static const struct vertex *node_vertex(const struct graph *g, const char *id, const char *sep)
{
	char prefix[128];

	snprintf(prefix, sizeof(prefix), "%s%s", id, sep);
	for (size_t i = 0; i < g->nv; i++)
		if (al_starts_with(g->v[i].label, prefix))
			return &g->v[i];
	return NULL;
}

static void assert_label_has(const struct vertex *v, const char *text)
{
	cr_assert_not_null(v);
	cr_assert_not_null(strstr(v->label, text), "label of %s lacks [%s]: [%s]", v->id, text,
			   v->label);
}

/* --- flows to draw ------------------------------------------------------- */

static struct al_diags diags = AL_DIAGS_INIT;
static struct al_flow *flow;
static struct al_strbuf out = AL_STRBUF_INIT;

static void setup(void)
{
	unit_enter_tmpdir();
	unit_write(".ai-loop/agents/ctrl.md", "Decide.\n");
	unit_write(".ai-loop/agents/unit.md", "---\nname: unit\ncommand: make test\n---\n");
	unit_write(".ai-loop/agents/lint.md", "---\ncommand: make lint\n---\n");
	unit_write(".ai-loop/agents/act.md", "Act.\n");
	unit_write(".ai-loop/agents/action.md", "Do it.\n");
}

static void teardown(void)
{
	al_flow_free(flow);
	flow = NULL;
	al_diags_release(&diags);
	al_strbuf_release(&out);
	unit_leave_tmpdir();
}

TestSuite(graph, .init = setup, .fini = teardown);

static void load(const char *text)
{
	al_flow_free(flow);
	flow = NULL;
	al_diags_release(&diags);
	unit_write(".ai-loop/flow.yaml", text);
	cr_assert_eq(al_flow_load(&flow, ".ai-loop/flow.yaml", &diags), 0, "%s",
		     unit_diags_text(&diags));
}

static const char *draw(enum al_graph_format format)
{
	al_strbuf_reset(&out);
	al_graph_write(flow, format, &out);
	return out.buf;
}

static const char two_level[] = "flow:\n"
				"  id: outer\n"
				"  type: loop\n"
				"  controller: .ai-loop/agents/ctrl.md\n"
				"  sensors: [.ai-loop/agents/unit.md]\n"
				"  actuator:\n"
				"    strategy: composite\n"
				"    child:\n"
				"      id: inner\n"
				"      type: loop\n"
				"      controller: builtin:all-pass\n"
				"      sensors: [.ai-loop/agents/unit.md, .ai-loop/agents/lint.md]\n"
				"      actuator: {agent: .ai-loop/agents/act.md}\n"
				"      termination: {max_iterations: 7, timeout_seconds: 90}\n"
				"  termination: {max_iterations: 5, timeout_seconds: 120}\n";

Test(graph, mermaid_draws_sensor_form_loops)
{
	struct graph g;
	const struct vertex *v;

	load(two_level);
	check_mermaid(draw(AL_GRAPH_MERMAID), &g);
	cr_assert_eq(g.nv, 8, "2 loops, 3 sensors, 2 controllers, 1 actuator:\n%s", out.buf);

	v = vertex(&g, "n0");
	cr_assert_eq(v->shape, BOX);
	cr_assert_str_eq(v->label, "outer<br/>loop · max 5 iterations · timeout 120s");
	v = vertex(&g, "n0_s1");
	cr_assert_eq(v->shape, SENSOR);
	assert_label_has(v, "sensor unit");
	assert_label_has(v, ".ai-loop/agents/unit.md");
	cr_assert_eq(vertex(&g, "n0_c")->shape, CONTROLLER);
	assert_label_has(vertex(&g, "n0_c"), ".ai-loop/agents/ctrl.md");
	cr_assert_null(vertex(&g, "n0_a"), "a composite loop has no actuator agent");

	v = vertex(&g, "n1");
	cr_assert_eq(v->shape, BOX);
	cr_assert_str_eq(v->label, "inner<br/>loop · max 7 iterations · timeout 90s");
	assert_label_has(vertex(&g, "n1_s2"), "sensor lint");
	assert_label_has(vertex(&g, "n1_c"), "builtin:all-pass");
	cr_assert_eq(vertex(&g, "n1_a")->shape, AGENT);
	assert_label_has(vertex(&g, "n1_a"), "actuator<br/>.ai-loop/agents/act.md");

	cr_assert_str_eq(edge(&g, "n0", "n1")->label, "actuator");
	cr_assert_not(edge(&g, "n0", "n1")->dashed);
	cr_assert_str_eq(edge(&g, "n0", "n0_s1")->label, "measures");
	cr_assert(edge(&g, "n0", "n0_s1")->dashed);
	cr_assert_str_eq(edge(&g, "n0", "n0_c")->label, "decides");
	cr_assert(edge(&g, "n0", "n0_c")->dashed);
	cr_assert_str_eq(edge(&g, "n1", "n1_a")->label, "acts");
	cr_assert_not(edge(&g, "n1", "n1_a")->dashed);
}

Test(graph, dot_draws_sensor_form_loops)
{
	struct graph g;
	const struct vertex *v;

	load(two_level);
	check_dot(draw(AL_GRAPH_DOT), &g);
	cr_assert_eq(g.nv, 8, "%s", out.buf);
	v = vertex(&g, "n0");
	cr_assert_eq(v->shape, BOX);
	cr_assert_str_eq(v->label, "outer\\nloop · max 5 iterations · timeout 120s");
	cr_assert_eq(vertex(&g, "n0_s1")->shape, SENSOR);
	cr_assert_eq(vertex(&g, "n1_c")->shape, CONTROLLER);
	cr_assert_eq(vertex(&g, "n1_a")->shape, AGENT);
	assert_label_has(vertex(&g, "n1"), "inner\\nloop · max 7 iterations");
	cr_assert_str_eq(edge(&g, "n0", "n1")->label, "actuator");
	cr_assert(edge(&g, "n1", "n1_s2")->dashed);
	cr_assert_not(edge(&g, "n1", "n1_a")->dashed);
}

static const char every_type[] =
	"flow:\n"
	"  id: main\n"
	"  type: sequence\n"
	"  children:\n"
	"    - id: choose\n"
	"      type: conditional\n"
	"      condition: {key: plan.ready, operator: equals, value: 'yes'}\n"
	"      then: {id: go, skill: build}\n"
	"      else: {id: wait, skill: plan, agent: .ai-loop/agents/act.md}\n"
	"    - id: fan\n"
	"      type: parallel\n"
	"      success_threshold: 2\n"
	"      failure_threshold: 1\n"
	"      max_concurrency: 2\n"
	"      children: [{id: p1, skill: a}, {id: p2, skill: b}, {id: p3, skill: c}]\n"
	"    - id: tries\n"
	"      type: fallback\n"
	"      children: [{id: f1, skill: a}, {id: f2, skill: b}]\n"
	"    - id: tx\n"
	"      type: transaction\n"
	"      timeout_seconds: 30\n"
	"      children: [{id: t1, skill: a}]\n"
	"    - id: again\n"
	"      type: loop\n"
	"      condition: {type: file_exists, path: done.txt}\n"
	"      exit_on: condition_true\n"
	"      max_iterations: 4\n"
	"      children: [{id: work, skill: a}, {id: stop, skill: break_loop}]\n"
	"    - id: spin\n"
	"      type: loop\n"
	"      exit_on: condition_false\n"
	"      condition: {type: command, command: [test, -f, x]}\n"
	"      children: [{id: s1, skill: a}]\n";

static const char *const every_id[] = {
	"main", "choose", "go", "wait", "fan", "p1", "p2", "p3", "tries", "f1", "f2",
	"tx", "t1", "again", "work", "stop", "spin", "s1",
};

Test(graph, every_node_type_in_both_formats)
{
	struct graph g;

	load(every_type);
	cr_assert_eq(flow->node_count, AL_ARRAY_SIZE(every_id));
	for (int f = 0; f < 2; f++) {
		const char *sep = f ? "\\n" : "<br/>";

		if (f)
			check_dot(draw(AL_GRAPH_DOT), &g);
		else
			check_mermaid(draw(AL_GRAPH_MERMAID), &g);
		cr_assert_eq(g.nv, flow->node_count, "no sensors here, one vertex a node");
		for (size_t i = 0; i < AL_ARRAY_SIZE(every_id); i++)
			cr_assert_not_null(node_vertex(&g, every_id[i], sep), "no vertex for %s:\n%s",
					   every_id[i], out.buf);
		assert_label_has(node_vertex(&g, "main", sep), "sequence");
		assert_label_has(node_vertex(&g, "choose", sep), "conditional");
		assert_label_has(node_vertex(&g, "choose", sep), "if plan.ready equals yes");
		assert_label_has(node_vertex(&g, "go", sep), "skill build");
		assert_label_has(node_vertex(&g, "go", sep), "agent .ai-loop/agents/action.md");
		assert_label_has(node_vertex(&g, "wait", sep), "agent .ai-loop/agents/act.md");
		assert_label_has(node_vertex(&g, "fan", sep),
				 "parallel · succeed at 2 · fail at 1 · 2 at a time");
		assert_label_has(node_vertex(&g, "tries", sep), "fallback");
		assert_label_has(node_vertex(&g, "tx", sep), "transaction · timeout 30s");
		assert_label_has(node_vertex(&g, "again", sep), "loop · max 4 iterations");
		assert_label_has(node_vertex(&g, "again", sep), "until done.txt exists");
		assert_label_has(node_vertex(&g, "spin", sep), "while $ test -f x");
		assert_label_has(node_vertex(&g, "stop", sep), "skill break_loop");
		cr_assert_null(strstr(node_vertex(&g, "stop", sep)->label, "agent "),
			       "break_loop runs no agent");

		/* edges: branches by name, children by position */
		cr_assert_str_eq(edge(&g, node_vertex(&g, "choose", sep)->id,
				      node_vertex(&g, "go", sep)->id)->label, "then");
		cr_assert_str_eq(edge(&g, node_vertex(&g, "choose", sep)->id,
				      node_vertex(&g, "wait", sep)->id)->label, "else");
		cr_assert_str_eq(edge(&g, node_vertex(&g, "fan", sep)->id,
				      node_vertex(&g, "p3", sep)->id)->label, "3");
		cr_assert_str_eq(edge(&g, "n0", node_vertex(&g, "spin", sep)->id)->label, "6");
		cr_assert_str_eq(edge(&g, node_vertex(&g, "again", sep)->id,
				      node_vertex(&g, "stop", sep)->id)->label, "2");
	}
}

Test(graph, labels_are_escaped)
{
	struct graph g;
	const struct vertex *v;

	load("flow:\n"
	     "  type: sequence\n"
	     "  id: root\n"
	     "  children:\n"
	     "    - id: odd\n"
	     "      description: 'not drawn: \"quoted\" <b>'\n"
	     "      skill: 'say \"hi\" <b>#1</b> & \\n back\\slash'\n"
	     "    - id: cond\n"
	     "      type: conditional\n"
	     "      condition: {key: k, operator: equals, value: 'a\"b#c'}\n"
	     "      then: {skill: \"line1\\nline2\"}\n");
	check_mermaid(draw(AL_GRAPH_MERMAID), &g);
	v = node_vertex(&g, "odd", "<br/>");
	assert_label_has(v, "skill say #quot;hi#quot; #lt;b#gt;#35;1#lt;/b#gt; #amp; \\n back\\slash");
	assert_label_has(node_vertex(&g, "cond", "<br/>"), "if k equals a#quot;b#35;c");
	assert_label_has(node_vertex(&g, "action-1", "<br/>"), "skill line1<br/>line2");
	cr_assert_null(strstr(out.buf, "quoted"), "descriptions are not drawn");

	check_dot(draw(AL_GRAPH_DOT), &g);
	v = node_vertex(&g, "odd", "\\n");
	assert_label_has(v, "skill say \\\"hi\\\" <b>#1</b> & \\\\n back\\\\slash");
	assert_label_has(node_vertex(&g, "cond", "\\n"), "if k equals a\\\"b#c");
	assert_label_has(node_vertex(&g, "action-1", "\\n"), "skill line1\\nline2");
}

Test(graph, a_single_action)
{
	struct graph g;

	load("flow: {id: only, skill: x}\n");
	check_mermaid(draw(AL_GRAPH_MERMAID), &g);
	cr_assert_eq(g.nv, 1);
	cr_assert_eq(g.ne, 0);
	cr_assert_str_eq(out.buf, "flowchart TD\n  n0[\"only<br/>action<br/>skill x<br/>"
				  "agent .ai-loop/agents/action.md\"]\n");
	check_dot(draw(AL_GRAPH_DOT), &g);
	cr_assert_eq(g.nv, 1);
}

/* The checkers themselves must catch what they look for. */
static void assert_rejected(const char *text, const char *why)
{
	struct graph g;

	cr_assert_not(mermaid_ok(text, &g), "accepted: %s", text);
	cr_assert_not_null(strstr(problem, why), "[%s] for %s", problem, text);
}

Test(graph, the_mermaid_checker_rejects_what_it_should)
{
	struct graph g;

	cr_assert(mermaid_ok("flowchart TD\n  n0[\"a\"]\n  n0 -->|1| n1\n  n1([\"b\"])\n", &g),
		  "%s", problem);
	assert_rejected("flowchart LR\n  n0[\"a\"]\n", "first line");
	assert_rejected("flowchart TD\n  n0[\"a \"b\" c\"]\n", "neither a vertex nor an edge");
	assert_rejected("flowchart TD\n  n0[\"a\"}}\n", "brackets do not pair");
	assert_rejected("flowchart TD\n  n0[\"a #1\"]\n", "raw '#'");
	assert_rejected("flowchart TD\n  n0[\"a <b>\"]\n", "raw '#', '<'");
	assert_rejected("flowchart TD\n  n0[\"a\"]\n  n0 -->|1| n1\n", "undefined vertex n1");
	assert_rejected("flowchart TD\n  n0[\"a\"]\n  n1[\"b\"]\n", "n1 has 0 parents");
	assert_rejected("flowchart TD\n  n0[\"a\"]\n  n0[\"b\"]\n", "defined twice");
	assert_rejected("flowchart TD\n  n0[\"a\"]\n  n1[\"b\"]\n  n2[\"c\"]\n"
			"  n1 -->|x| n2\n  n2 -->|y| n1\n", "not reachable");
	assert_rejected("flowchart TD\n  n0[\"a\"]\n  n0 --> n0\n", "neither");
	assert_rejected("flowchart TD\n  n0[\"a\"]", "newline");
}

Test(graph, the_dot_checker_rejects_what_it_should)
{
	struct graph g;

	cr_assert(dot_ok("digraph flow {\n  n0 [shape=box, label=\"a\\\"b\"];\n}\n", &g), "%s",
		  problem);
	cr_assert_not(dot_ok("digraph flow {\n  n0 [shape=box, label=\"a\"b\"];\n}\n", &g));
	cr_assert_not(dot_ok("digraph flow {\n  n0 [shape=box, label=\"a\"];\n", &g));
	cr_assert_not(dot_ok("digraph flow {\n  n0 [shape=star, label=\"a\"];\n}\n", &g));
	cr_assert_not(dot_ok("digraph flow {\n  n0 [shape=box, label=\"a\"];\n"
			     "  n0 -> n1 [label=\"1\"];\n}\n", &g));
}

/* --- the fixture corpus -------------------------------------------------- */

Test(graph, every_valid_fixture_draws_as_a_tree)
{
	DIR *dir;
	struct dirent *de;
	int files = 0;

	cr_assert_eq(chdir(FIXTURES "/flows"), 0);
	dir = opendir("valid");
	cr_assert_not_null(dir);
	while ((de = readdir(dir))) {
		char path[600];
		struct graph g;
		size_t boxes = 0;

		if (de->d_name[0] == '.' || !(al_ends_with(de->d_name, ".yaml") ||
					       al_ends_with(de->d_name, ".json")))
			continue;
		snprintf(path, sizeof(path), "valid/%s", de->d_name);
		al_flow_free(flow);
		flow = NULL;
		al_diags_release(&diags);
		cr_assert_eq(al_flow_load(&flow, path, &diags), 0, "%s:%s", path,
			     unit_diags_text(&diags));
		check_mermaid(draw(AL_GRAPH_MERMAID), &g);
		for (size_t i = 0; i < g.nv; i++)
			boxes += g.v[i].shape == BOX && !strchr(g.v[i].id, '_');
		cr_assert_eq(boxes, flow->node_count, "%s: one box per node", path);
		check_dot(draw(AL_GRAPH_DOT), &g);
		files++;
	}
	closedir(dir);
	cr_assert_gt(files, 0, "no valid fixtures");
}
