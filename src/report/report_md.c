#include "ailoop/report/report.h"
#include "ailoop/store/episode_recall.h"
#include "ailoop/exec/invoke.h"
#include "ailoop/base/util.h"

#include <stdlib.h>
#include <string.h>

/*
 * `s` in a table cell of GitHub Markdown: on one line, with the characters
 * that would end the cell, start markup or raw HTML made inert.
 */
static void cell(struct al_strbuf *out, const char *s)
{
	for (; s && *s; s++) {
		switch (*s) {
		case '\n': case '\r': case '\t': al_strbuf_addch(out, ' '); break;
		case '|': al_strbuf_adds(out, "\\|"); break;
		case '<': al_strbuf_adds(out, "&lt;"); break;
		case '>': al_strbuf_adds(out, "&gt;"); break;
		case '&': al_strbuf_adds(out, "&amp;"); break;
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
	const char *end = r->ended_at ? r->ended_at : st->updated_at;
	struct al_strbuf sb = AL_STRBUF_INIT;
	char *next = al_report_next_command(r);
	json_t *given; /* which episodes each agent was given */
	long secs = al_report_seconds(st->started_at, end);

	al_strbuf_adds(out, "# ailoop run ");
	cell(out, st->run_id);
	al_strbuf_adds(out, "\n\n| | |\n|---|---|\n");
	row(out, "task", st->task);
	row(out, "flow", st->flow);
	al_strbuf_addf(&sb, "%s (from %s)", st->branch ? st->branch : "-",
		       st->base_branch ? st->base_branch : "-");
	row(out, "branch", sb.buf);
	row(out, "status", st->status);
	if (r->reason)
		row(out, "reason", r->reason);
	row(out, "started", st->started_at);
	row(out, "ended", end);
	al_strbuf_reset(&sb);
	if (secs >= 0)
		al_report_duration(&sb, (int64_t)secs * 1000);
	row(out, "wall time", sb.buf);
	al_strbuf_reset(&sb);
	al_strbuf_addf(&sb, "%zu", r->nsteps);
	row(out, "iterations", sb.buf);
	al_strbuf_reset(&sb);
	if (r->events)
		al_strbuf_addf(&sb, "%zu", r->agent_calls);
	row(out, "agent calls", r->events ? sb.buf : "unknown (no events.jsonl here)");
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

static void tree(struct al_strbuf *out, const struct al_report *r)
{
	const struct al_run_nodes *ns = &r->view->nodes;

	al_strbuf_adds(out, "\n## Flow\n\n| node | type | iteration | label | status |\n"
		       "|---|---|---|---|---|\n");
	for (size_t i = 0; i < ns->n; i++) {
		const struct al_node_state *s = &ns->v[i];

		al_strbuf_adds(out, "| ");
		for (int l = 0; l < s->level; l++)
			al_strbuf_adds(out, "&nbsp;&nbsp;");
		cell(out, s->node_path);
		al_strbuf_adds(out, " | ");
		cell(out, s->type ? s->type : "loop");
		if (!s->type || !strcmp(s->type, "loop"))
			al_strbuf_addf(out, " | %d of %d | ", s->iteration, s->max_iterations);
		else
			al_strbuf_adds(out, " | - | ");
		cell(out, s->label);
		al_strbuf_adds(out, " | ");
		cell(out, s->status);
		al_strbuf_adds(out, " |\n");
	}
}

static void step_row(struct al_strbuf *out, const struct al_report_step *s)
{
	const char *mark = al_report_mark(s);
	int added = 0, deleted = 0;

	al_strbuf_adds(out, "| ");
	for (int l = 0; l < s->it.level; l++)
		al_strbuf_adds(out, "&nbsp;&nbsp;");
	cell(out, s->it.label);
	al_strbuf_adds(out, " | ");
	cell(out, s->it.node_path);
	al_strbuf_adds(out, " | ");
	if (mark)
		al_strbuf_addf(out, "**%s** ", mark);
	cell(out, s->it.status);
	al_strbuf_addf(out, " | `%.9s` ", s->it.oid);
	cell(out, s->it.summary);
	if (s->error) {
		al_strbuf_adds(out, " — ");
		cell(out, s->error);
	}
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
	al_strbuf_adds(out, " | ");
	if (s->decided) {
		al_strbuf_adds(out, s->target_met ? "target met" : "not met");
		if (s->plan) {
			al_strbuf_adds(out, ": ");
			cell(out, s->plan);
		}
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
			al_strbuf_addf(out, "| %s | ", al_role_names[i]);
			al_report_duration(out, r->role_ms[i]);
			al_strbuf_adds(out, " |\n");
		}
	}
	al_strbuf_adds(out, "\n## Iterations\n\n| label | node | status | commit | files | sensors "
		       "| controller | agents |\n|---|---|---|---|---|---|---|---|\n");
	for (size_t i = 0; i < r->nsteps; i++)
		step_row(out, &r->steps[i]);
}
