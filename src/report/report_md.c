#include "ailoop/report/report.h"
#include "ailoop/store/episode_recall.h"
#include "ailoop/exec/invoke.h"
#include "ailoop/base/util.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/*
 * `s` in a table cell of GitHub Markdown: on one line, with the characters
 * that would end the cell, start markup or raw HTML made inert. A "&"
 * starts a character reference only before a name or "#", and only then
 * is escaped (by a backslash): a page read as text shows "git checkout
 * main && git merge", not "&amp;&amp;".
 */
static void cell(struct al_strbuf *out, const char *s)
{
	for (; s && *s; s++) {
		switch (*s) {
		case '\n': case '\r': case '\t': al_strbuf_addch(out, ' '); break;
		case '|': al_strbuf_adds(out, "\\|"); break;
		case '<': al_strbuf_adds(out, "&lt;"); break;
		case '>': al_strbuf_adds(out, "&gt;"); break;
		case '&':
			if (isalnum((unsigned char)s[1]) || s[1] == '#')
				al_strbuf_addch(out, '\\');
			al_strbuf_addch(out, '&');
			break;
		case '`': case '*': case '_': case '[': case ']': case '\\':
			al_strbuf_addch(out, '\\');
			al_strbuf_addch(out, *s);
			break;
		default: al_strbuf_addch(out, *s);
		}
	}
}

static void row(struct al_strbuf *out, const char *name, const char *value)
{
	al_strbuf_addf(out, "| %s | ", name);
	cell(out, value && *value ? value : "-");
	al_strbuf_adds(out, " |\n");
}

static void summary(struct al_strbuf *out, const struct al_report *r)
{
	const struct al_run_state *st = &r->view->st;
	const char *end = al_report_end(r);
	struct al_strbuf sb = AL_STRBUF_INIT;
	char *next = al_report_next_command(r);
	json_t *given; /* which episodes each agent was given */

	al_strbuf_adds(out, "# ailoop run ");
	cell(out, st->run_id);
	al_strbuf_adds(out, "\n\n| | |\n|---|---|\n");
	row(out, "task", st->task);
	row(out, "flow", st->flow);
	al_strbuf_addf(&sb, "%s (from %s)", st->branch ? st->branch : "-",
		       st->base_branch ? st->base_branch : "-");
	row(out, "branch", sb.buf);
	al_strbuf_reset(&sb);
	al_strbuf_adds(&sb, r->status);
	if (strcmp(r->status, st->status))
		al_strbuf_adds(&sb, ": no ailoop process runs it (killed, or its machine restarted); "
			       "'ailoop resume' goes on with it");
	row(out, "status", sb.buf);
	if (r->reason)
		row(out, "reason", r->reason);
	row(out, "started", st->started_at);
	row(out, "ended", end ? end : "- (at work now)");
	al_strbuf_reset(&sb);
	al_report_times(&sb, r);
	row(out, "wall time", sb.buf);
	al_strbuf_reset(&sb);
	al_strbuf_addf(&sb, "%zu", r->nsteps);
	row(out, "iterations", sb.buf);
	al_strbuf_reset(&sb);
	al_report_calls(&sb, r);
	row(out, "agent calls", sb.buf);
	if (r->tally.cost.calls) {
		al_strbuf_reset(&sb);
		al_report_cost_text(&sb, &r->tally.cost);
		if (r->tally.cost.estimated)
			al_strbuf_adds(&sb, "; estimated: at the API's list prices, not what a "
				       "subscription bills");
		row(out, "cost", sb.buf);
	}
	given = al_episodes_given_read(r->view->dir);
	for (size_t i = 0; i < json_array_size(given); i++) {
		struct al_strbuf line = AL_STRBUF_INIT;

		al_episodes_given_line(&line, json_array_get(given, i));
		row(out, "episodes", line.buf);
		al_strbuf_release(&line);
	}
	json_decref(given);
	if (r->view->from)
		row(out, "read from", r->view->from);
	if (next)
		row(out, "next", next);
	al_strbuf_release(&sb);
	free(next);
}

static void cost_cell(struct al_strbuf *out, const struct al_run_cost *c)
{
	struct al_strbuf sb = AL_STRBUF_INIT;

	if (c->calls)
		al_report_cost_text(&sb, c);
	cell(out, sb.len ? sb.buf : "-");
	al_strbuf_release(&sb);
}

static void tree(struct al_strbuf *out, const struct al_report *r)
{
	const struct al_run_nodes *ns = &r->view->nodes;

	al_strbuf_adds(out, "\n## Flow\n\n| node | type | iteration | label | status | cost |\n"
		       "|---|---|---|---|---|---|\n");
	for (size_t i = 0; i < ns->n; i++) {
		const struct al_node_state *s = &ns->v[i];
		struct al_run_cost cost;

		al_strbuf_adds(out, "| ");
		for (int l = 0; l < s->level; l++)
			al_strbuf_adds(out, "&nbsp;&nbsp;");
		cell(out, s->node_path);
		al_strbuf_adds(out, " | ");
		cell(out, s->type ? s->type : "loop");
		if (!s->type || !strcmp(s->type, "loop"))
			al_strbuf_addf(out, " | %d of %d | ", al_report_iteration_shown(s),
				       s->max_iterations);
		else
			al_strbuf_adds(out, " | - | ");
		cell(out, s->label);
		al_strbuf_adds(out, " | ");
		cell(out, al_report_node_status(r, s));
		al_strbuf_adds(out, " | ");
		al_report_node_cost(&cost, r, s->node_path);
		cost_cell(out, &cost);
		al_strbuf_adds(out, " |\n");
	}
}

static void indent(struct al_strbuf *out, const struct al_report_step *s)
{
	al_strbuf_adds(out, "| ");
	for (int l = 0; l < s->it.level; l++)
		al_strbuf_adds(out, "&nbsp;&nbsp;");
}

static void decision(struct al_strbuf *out, const struct al_report_step *s)
{
	char *judged = al_report_judged(s);

	if (judged) {
		al_strbuf_adds(out, "on ");
		cell(out, judged);
		al_strbuf_adds(out, ": ");
	}
	free(judged);
	al_strbuf_adds(out, s->target_met ? "target met" : "not met");
	if (s->plan) {
		al_strbuf_adds(out, ": ");
		cell(out, s->plan);
	}
}

/* The plans that started the inner iterations from steps[i] on, before them. */
static void plans_before(struct al_strbuf *out, const struct al_report *r, size_t i)
{
	for (size_t j = r->nsteps; j-- > i + 1;) {
		const struct al_report_step *s = &r->steps[j];

		if (s->plan_at != i || !s->decided)
			continue;
		indent(out, s);
		cell(out, s->it.label);
		al_strbuf_adds(out, " | ");
		cell(out, s->it.node_path);
		al_strbuf_adds(out, " | decides | | ");
		decision(out, s);
		al_strbuf_adds(out, " | | | | |\n");
	}
}

static void step_row(struct al_strbuf *out, const struct al_report *r, size_t i)
{
	const struct al_report_step *s = &r->steps[i];
	const char *mark = al_report_mark(s);
	int added = 0, deleted = 0;

	plans_before(out, r, i);
	if (s->resumed) {
		indent(out, s);
		al_strbuf_adds(out, " | | **paused** | | ");
		cell(out, s->resumed);
		al_strbuf_adds(out, "; resumed here | | | | |\n");
	}
	indent(out, s);
	cell(out, s->it.label);
	al_strbuf_adds(out, " | ");
	cell(out, s->it.node_path);
	al_strbuf_adds(out, " | ");
	if (mark)
		al_strbuf_addf(out, "**%s** ", mark);
	cell(out, al_report_step_status(s));
	al_strbuf_addf(out, " | `%.9s` ", s->it.oid);
	cell(out, s->it.summary);
	if (s->error) {
		al_strbuf_adds(out, " — ");
		cell(out, s->error);
	}
	/* the decision first: it judged the sensors before it, these are after */
	al_strbuf_adds(out, " | ");
	if (s->decided && s->plan_at == i)
		decision(out, s);
	else if (s->decided)
		al_strbuf_adds(out, "decided above");
	for (size_t k = 0; k < s->nfiles; k++) {
		added += s->files[k].added;
		deleted += s->files[k].deleted;
	}
	al_strbuf_addf(out, " | %zu (+%d −%d) | ", s->nfiles, added, deleted);
	for (size_t k = 0; k < s->it.nsensors; k++) {
		al_strbuf_adds(out, k ? ", " : "");
		cell(out, s->it.sensors[k].name);
		al_strbuf_adds(out, ": ");
		cell(out, s->it.sensors[k].status);
		if (s->it.sensors[k].detail) {
			al_strbuf_adds(out, " (");
			cell(out, s->it.sensors[k].detail);
			al_strbuf_adds(out, ")");
		}
	}
	if (s->tail) {
		al_strbuf_adds(out, " — output: ");
		cell(out, s->tail);
	}
	al_strbuf_adds(out, " | ");
	for (size_t k = 0; k < s->nagents; k++) {
		al_strbuf_adds(out, k ? ", " : "");
		cell(out, s->agents[k].name ? s->agents[k].name : s->agents[k].role);
		al_strbuf_adds(out, " ");
		al_report_duration(out, s->agents[k].ms);
		if (s->agents[k].timed_out)
			al_strbuf_adds(out, " **timed out**");
	}
	al_strbuf_adds(out, " | ");
	if (s->cost.calls)
		cost_cell(out, &s->cost);
	al_strbuf_adds(out, " |\n");
}

void al_report_md(struct al_strbuf *out, const struct al_report *r)
{
	bool timed = false;

	summary(out, r);
	tree(out, r);
	for (int i = 0; i < AL_REPORT_ROLES; i++)
		timed |= r->role_ms[i] > 0;
	if (timed) {
		al_strbuf_adds(out, "\n## Time per role\n\n| role | time |\n|---|---|\n");
		for (int i = 0; i < AL_REPORT_ROLES; i++) {
			if (r->role_ms[i] <= 0) /* a role no agent of the flow played */
				continue;
			al_strbuf_addf(out, "| %s | ", al_role_names[i]);
			al_report_duration(out, r->role_ms[i]);
			al_strbuf_adds(out, " |\n");
		}
	}
	al_strbuf_adds(out, "\n## Iterations\n\n| label | node | status | commit | controller "
		       "| files | sensors | agents | cost |\n|---|---|---|---|---|---|---|---|---|\n");
	for (size_t i = 0; i < r->nsteps; i++)
		step_row(out, r, i);
}
