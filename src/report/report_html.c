#include "ailoop/report/report.h"
#include "ailoop/store/episode_recall.h"
#include "ailoop/base/util.h"

#include <stdlib.h>
#include <string.h>

/*
 * The page needs nothing else: styles inline, pictures inline SVG, no
 * script, no link. The Content-Security-Policy stops whatever escaping
 * might miss: no script, no request, images only as data.
 */
static const char head[] =
	"<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
	"<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
	"style-src 'unsafe-inline'; img-src data:; script-src 'none'\">\n"
	"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";

static const char style[] =
	"<style>\n"
	"body{font:14px/1.45 system-ui,sans-serif;margin:1.5em auto;max-width:72em;color:#222;"
	"padding:0 1em}\n"
	"h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.6em;border-bottom:1px solid #ddd}\n"
	"table.summary th{text-align:left;padding-right:1em;vertical-align:top}\n"
	".pre{white-space:pre-wrap;font-family:monospace;margin:0}\n"
	".badge{display:inline-block;padding:0 .5em;border-radius:.6em;background:#ddd}\n"
	".st-complete{background:#cfc}.st-running{background:#ddf}\n"
	".st-paused,.st-blocked,.st-interrupted,.st-max-iterations-reached{background:#fe9}\n"
	".st-error,.st-failed,.st-timeout{background:#fbb}\n"
	"ul.tree{list-style:none;padding-left:1.2em}ul.tree li{margin:.1em 0}\n"
	/* long runs: the browser lays out only the iterations in view */
	".iteration{content-visibility:auto;contain-intrinsic-size:auto 9em;"
	"border-left:4px solid #9ab;margin:.5em 0;padding:.2em .8em;background:#fafafa}\n"
	".iteration.mark-failed{border-color:#d33;background:#fee}\n"
	".iteration.mark-timeout{border-color:#e80;background:#fff3e0}\n"
	".iteration.mark-paused{border-color:#cb0;background:#ffd}\n"
	".iteration h3{font-size:1em;margin:.2em 0}.oid{font-family:monospace;color:#666}\n"
	".mark{font-weight:bold;color:#b00;text-transform:uppercase}\n"
	".s-pass{color:#070}.s-fail{color:#b00}.s-partial{color:#a60}.s-pending{color:#777}\n"
	"svg.chart{display:block;margin:.3em 0 1em}svg text{font:11px sans-serif;fill:#444}\n"
	"svg .axis{stroke:#999}svg .target{stroke:#2a2;stroke-dasharray:5 4}\n"
	"svg .line{fill:none;stroke:#36c;stroke-width:1.5}svg circle.pass,svg rect.pass{fill:#4a4}\n"
	"svg circle.fail,svg rect.fail{fill:#d44}svg rect.partial{fill:#e90}"
	"svg rect.pending{fill:#bbb}svg .bar{fill:#69c}\n"
	"ul.files,ul.agents,ul.sensors{margin:.2em 0;padding-left:1.4em}\n"
	".decision{border-left:4px dotted #9ab;margin:.5em 0;padding:.2em .8em}\n"
	".pause{color:#860;font-style:italic;margin:.3em 0}.tail{background:#f3f3f3;color:#444}\n"
	"p.value{font-size:1.3em;margin:.2em 0 1em}.cost{color:#555}\n"
	"</style>\n</head>\n<body>\n";

static void esc(struct al_strbuf *out, const char *s)
{
	al_report_escape(out, s);
}

static void badge(struct al_strbuf *out, const char *status)
{
	al_strbuf_adds(out, "<span class=\"badge st-");
	esc(out, status);
	al_strbuf_adds(out, "\">");
	esc(out, status);
	al_strbuf_adds(out, "</span>");
}

static void row(struct al_strbuf *out, const char *name, const char *value, bool pre)
{
	al_strbuf_addf(out, "<tr><th>%s</th><td%s>", name, pre ? " class=\"pre\"" : "");
	esc(out, value ? value : "-");
	al_strbuf_adds(out, "</td></tr>\n");
}

static void summary(struct al_strbuf *out, const struct al_report *r)
{
	const struct al_run_state *st = &r->view->st;
	struct al_strbuf sb = AL_STRBUF_INIT;
	const char *end = al_report_end(r);
	char *next = al_report_next_command(r);
	json_t *given; /* which episodes each agent was given */

	al_strbuf_adds(out, "<h1>ailoop run ");
	esc(out, st->run_id);
	al_strbuf_adds(out, " ");
	badge(out, r->status);
	al_strbuf_adds(out, "</h1>\n<table class=\"summary\">\n");
	row(out, "task", st->task, true);
	row(out, "flow", st->flow, false);
	al_strbuf_addf(&sb, "%s (from %s)", st->branch ? st->branch : "-",
		       st->base_branch ? st->base_branch : "-");
	row(out, "branch", sb.buf, false);
	al_strbuf_adds(out, "<tr><th>status</th><td id=\"status\">");
	badge(out, r->status);
	if (strcmp(r->status, st->status))
		al_strbuf_adds(out, " no ailoop process runs it (killed, or its machine restarted): "
			       "<code>ailoop resume</code> goes on with it");
	al_strbuf_adds(out, "</td></tr>\n");
	if (r->reason) {
		al_strbuf_adds(out, "<tr><th>reason</th><td id=\"reason\" class=\"pre\">");
		esc(out, r->reason);
		al_strbuf_adds(out, "</td></tr>\n");
	}
	row(out, "started", st->started_at, false);
	row(out, "ended", end ? end : "- (at work now)", false);
	al_strbuf_reset(&sb);
	al_report_times(&sb, r);
	row(out, "wall time", sb.len ? sb.buf : NULL, false);
	al_strbuf_reset(&sb);
	al_strbuf_addf(&sb, "%zu", r->nsteps);
	row(out, "iterations", sb.buf, false);
	al_strbuf_reset(&sb);
	al_report_calls(&sb, r);
	row(out, "agent calls", sb.buf, false);
	if (r->tally.cost.calls) {
		al_strbuf_reset(&sb);
		al_report_cost_text(&sb, &r->tally.cost);
		al_strbuf_adds(out, "<tr><th>cost</th><td id=\"cost\">");
		esc(out, sb.buf);
		if (r->tally.cost.estimated)
			al_strbuf_adds(out, "<br><small>estimated: at the API's list prices, not what "
				       "a subscription bills</small>");
		al_strbuf_adds(out, "</td></tr>\n");
	}
	given = al_episodes_given_read(r->view->dir);
	for (size_t i = 0; i < json_array_size(given); i++) {
		struct al_strbuf line = AL_STRBUF_INIT;

		al_episodes_given_line(&line, json_array_get(given, i));
		row(out, "episodes", line.buf, false);
		al_strbuf_release(&line);
	}
	json_decref(given);
	if (r->view->from)
		row(out, "read from", r->view->from, false);
	if (next)
		row(out, "next", next, true);
	al_strbuf_adds(out, "</table>\n");
	al_strbuf_release(&sb);
	free(next);
}

static void tree(struct al_strbuf *out, const struct al_report *r)
{
	const struct al_run_nodes *ns = &r->view->nodes;
	int depth = 0;

	al_strbuf_adds(out, "<h2>Flow</h2>\n");
	for (size_t i = 0; i < ns->n; i++) {
		const struct al_node_state *s = &ns->v[i];
		struct al_run_cost cost;

		for (; depth <= s->level; depth++)
			al_strbuf_adds(out, "<ul class=\"tree\">\n");
		for (; depth > s->level + 1; depth--)
			al_strbuf_adds(out, "</ul>\n");
		al_strbuf_adds(out, "<li class=\"node\"><b>");
		esc(out, s->node_id ? s->node_id : s->node_path);
		al_strbuf_adds(out, "</b> ");
		esc(out, s->type ? s->type : "loop");
		if (!s->type || !strcmp(s->type, "loop"))
			al_strbuf_addf(out, ", iteration %d of %d", al_report_iteration_shown(s),
				       s->max_iterations);
		al_strbuf_adds(out, ", label ");
		esc(out, s->label);
		al_strbuf_adds(out, " ");
		badge(out, al_report_node_status(r, s));
		al_report_node_cost(&cost, r, s->node_path);
		if (cost.calls) {
			struct al_strbuf sb = AL_STRBUF_INIT;

			al_report_cost_text(&sb, &cost);
			al_strbuf_adds(out, " <span class=\"cost\">");
			esc(out, sb.buf);
			al_strbuf_adds(out, "</span>");
			al_strbuf_release(&sb);
		}
		al_strbuf_adds(out, "</li>\n");
	}
	for (; depth > 0; depth--)
		al_strbuf_adds(out, "</ul>\n");
	for (size_t i = 0; i < ns->nerrors; i++) {
		al_strbuf_adds(out, "<p class=\"mark\">damaged: ");
		esc(out, ns->errors[i]);
		al_strbuf_adds(out, "</p>\n");
	}
}

struct series {
	const char *node, *sensor, *metric; /* metric NULL: the sensor's strip */
};

static bool seen(const struct series *v, size_t n, const struct series *x)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(v[i].node, x->node) && !strcmp(v[i].sensor, x->sensor) &&
		    !v[i].metric == !x->metric && (!x->metric || !strcmp(v[i].metric, x->metric)))
			return true;
	return false;
}

static void add_series(struct series **v, size_t *n, size_t *alloc, struct series x)
{
	if (seen(*v, *n, &x))
		return;
	AL_GROW(*v, *n, *alloc);
	(*v)[(*n)++] = x;
}

static void series_title(struct al_strbuf *out, const struct series *x)
{
	al_strbuf_adds(out, "<h3>");
	esc(out, x->node);
	al_strbuf_adds(out, " › ");
	esc(out, x->sensor);
	if (x->metric) {
		al_strbuf_adds(out, ": ");
		esc(out, x->metric);
	}
	al_strbuf_adds(out, "</h3>\n");
}

static void charts(struct al_strbuf *out, const struct al_report *r)
{
	struct series *v = NULL;
	size_t n = 0, alloc = 0;
	bool metrics = false, timed = false;

	for (size_t i = 0; i < r->nsteps; i++) {
		const struct al_report_step *s = &r->steps[i];

		for (size_t k = 0; k < s->nmetrics; k++)
			add_series(&v, &n, &alloc, (struct series){ s->it.node_path,
				   s->metrics[k].sensor, s->metrics[k].name });
		for (size_t k = 0; k < s->it.nsensors; k++)
			add_series(&v, &n, &alloc, (struct series){ s->it.node_path,
				   s->it.sensors[k].name, NULL });
	}
	for (size_t i = 0; i < n; i++)
		metrics |= v[i].metric != NULL;
	if (metrics) {
		al_strbuf_adds(out, "<h2>Metrics</h2>\n<div id=\"metrics\">\n");
		for (size_t i = 0; i < n; i++) {
			double value;

			if (!v[i].metric)
				continue;
			series_title(out, &v[i]);
			/* one point is a value: a line needs two */
			if (al_report_metric_points(r, v[i].node, v[i].sensor, v[i].metric,
						    &value) < 2)
				al_strbuf_addf(out, "<p class=\"value\">%g</p>\n", value);
			else
				al_report_svg_metric(out, r, v[i].node, v[i].sensor,
						     v[i].metric);
		}
		al_strbuf_adds(out, "</div>\n");
	}
	if (n) {
		al_strbuf_adds(out, "<h2>Sensors</h2>\n<div id=\"sensors\">\n");
		for (size_t i = 0; i < n; i++) {
			if (v[i].metric)
				continue;
			series_title(out, &v[i]);
			al_report_svg_strip(out, r, v[i].node, v[i].sensor);
		}
		al_strbuf_adds(out, "</div>\n");
	}
	for (int i = 0; i < AL_REPORT_ROLES; i++)
		timed |= r->role_ms[i] > 0;
	if (timed) {
		al_strbuf_adds(out, "<h2>Time per role</h2>\n");
		al_report_svg_roles(out, r);
	}
	if (r->ncosts > 1) {
		al_strbuf_adds(out, "<h2>Cost</h2>\n");
		al_report_svg_cost(out, r);
	}
	free(v);
}

static void step_sensors(struct al_strbuf *out, const struct al_report_step *s)
{
	if (!s->it.nsensors)
		return;
	al_strbuf_adds(out, "<ul class=\"sensors\">");
	for (size_t k = 0; k < s->it.nsensors; k++) {
		const struct al_sensor_status *ss = &s->it.sensors[k];

		al_strbuf_adds(out, "<li>sensor ");
		esc(out, ss->name);
		al_strbuf_adds(out, ": <span class=\"s-");
		esc(out, ss->status);
		al_strbuf_adds(out, "\">");
		esc(out, ss->status);
		al_strbuf_adds(out, "</span>");
		if (ss->detail) {
			al_strbuf_adds(out, " (");
			esc(out, ss->detail);
			al_strbuf_adds(out, ")");
		}
		al_strbuf_adds(out, "</li>");
	}
	al_strbuf_adds(out, "</ul>\n");
}

static void step_files(struct al_strbuf *out, const struct al_report_step *s)
{
	int added = 0, deleted = 0;

	if (!s->nfiles)
		return;
	for (size_t k = 0; k < s->nfiles; k++) {
		added += s->files[k].added;
		deleted += s->files[k].deleted;
	}
	al_strbuf_addf(out, "<div>%zu file%s changed, +%d −%d</div><ul class=\"files\">",
		       s->nfiles, s->nfiles == 1 ? "" : "s", added, deleted);
	for (size_t k = 0; k < s->nfiles; k++) {
		al_strbuf_adds(out, "<li>");
		esc(out, s->files[k].path);
		if (s->files[k].binary)
			al_strbuf_adds(out, " (binary)");
		else
			al_strbuf_addf(out, " +%d −%d", s->files[k].added, s->files[k].deleted);
		al_strbuf_adds(out, "</li>");
	}
	al_strbuf_adds(out, "</ul>\n");
}

static void step_agents(struct al_strbuf *out, const struct al_report_step *s)
{
	if (!s->nagents)
		return;
	al_strbuf_adds(out, "<ul class=\"agents\">");
	for (size_t k = 0; k < s->nagents; k++) {
		const struct al_report_agent *a = &s->agents[k];

		al_strbuf_adds(out, "<li>");
		esc(out, a->role);
		if (a->name) {
			al_strbuf_adds(out, " ");
			esc(out, a->name);
		}
		al_strbuf_adds(out, ": ");
		al_report_duration(out, a->ms);
		if (a->timed_out)
			al_strbuf_adds(out, " <span class=\"mark\">timed out</span>");
		else if (a->exit_code && strcmp(a->role, "sensor")) /* a sensor's is its verdict */
			al_strbuf_addf(out, ", exit %d", a->exit_code);
		al_strbuf_adds(out, "</li>");
	}
	al_strbuf_adds(out, "</ul>\n");
}

static void step_cost(struct al_strbuf *out, const struct al_report_step *s)
{
	struct al_strbuf sb = AL_STRBUF_INIT;

	if (!s->cost.calls)
		return;
	al_report_cost_text(&sb, &s->cost);
	al_strbuf_adds(out, "<div class=\"cost\">cost: ");
	esc(out, sb.buf);
	al_strbuf_adds(out, "</div>\n");
	al_strbuf_release(&sb);
}

/* A controller's verdict and the head of its plan. */
static void decision(struct al_strbuf *out, const struct al_report_step *s)
{
	char *judged = al_report_judged(s);

	al_strbuf_adds(out, "<div>controller");
	if (judged) {
		al_strbuf_adds(out, " on the sensors of ");
		esc(out, judged);
	}
	al_strbuf_addf(out, ": %s</div>", s->target_met ? "target met" : "target not met");
	free(judged);
	if (s->plan) {
		al_strbuf_adds(out, "<div class=\"pre plan\">");
		esc(out, s->plan);
		al_strbuf_adds(out, "</div>\n");
	}
}

/* The plans that started the inner iterations from steps[i] on, before them. */
static void plans_before(struct al_strbuf *out, const struct al_report *r, size_t i)
{
	for (size_t j = r->nsteps; j-- > i + 1;) {
		const struct al_report_step *s = &r->steps[j];

		if (s->plan_at != i || !s->decided)
			continue;
		al_strbuf_addf(out, "<section class=\"decision\" style=\"margin-left:%dem\">"
			       "<h3><span class=\"label\">", s->it.level * 2);
		esc(out, s->it.label);
		al_strbuf_adds(out, "</span> ");
		esc(out, s->it.node_path);
		al_strbuf_adds(out, " decides</h3>\n");
		decision(out, s);
		al_strbuf_adds(out, "</section>\n");
	}
}

static void timeline(struct al_strbuf *out, const struct al_report *r)
{
	al_strbuf_adds(out, "<h2>Iterations</h2>\n<div id=\"timeline\">\n");
	for (size_t i = 0; i < r->nsteps; i++) {
		const struct al_report_step *s = &r->steps[i];
		const char *mark = al_report_mark(s);

		plans_before(out, r, i);
		if (s->resumed) {
			al_strbuf_addf(out, "<div class=\"pause\" style=\"margin-left:%dem\">"
				       "paused (", s->it.level * 2);
			esc(out, s->resumed);
			al_strbuf_adds(out, "), resumed here</div>\n");
		}
		al_strbuf_addf(out, "<section class=\"iteration%s%s\" style=\"margin-left:%dem\" "
			       "data-label=\"", mark ? " mark-" : "", mark ? mark : "",
			       s->it.level * 2);
		esc(out, s->it.label);
		al_strbuf_adds(out, "\" data-status=\"");
		esc(out, al_report_step_status(s));
		al_strbuf_adds(out, "\">\n<h3><span class=\"label\">");
		esc(out, s->it.label);
		al_strbuf_adds(out, "</span> ");
		esc(out, s->it.node_path);
		al_strbuf_adds(out, " ");
		badge(out, al_report_step_status(s));
		if (mark)
			al_strbuf_addf(out, " <span class=\"mark\">%s</span>", mark);
		if (s->it.target_met)
			al_strbuf_adds(out, " target met");
		al_strbuf_adds(out, "</h3>\n<div><span class=\"subject\">");
		esc(out, s->it.summary);
		al_strbuf_addf(out, "</span> <span class=\"oid\">%.12s</span></div>\n", s->it.oid);
		if (s->error) {
			al_strbuf_adds(out, "<div class=\"mark pre\">");
			esc(out, s->error);
			al_strbuf_adds(out, "</div>\n");
		}
		/* the decision first: it judged the sensors before it, these are after */
		if (s->decided && s->plan_at == i)
			decision(out, s);
		else if (s->decided)
			al_strbuf_adds(out, "<div>controller: decided above</div>");
		step_files(out, s);
		step_sensors(out, s);
		if (s->tail) {
			al_strbuf_adds(out, "<div class=\"pre tail\">");
			esc(out, s->tail);
			al_strbuf_adds(out, "</div>\n");
		}
		step_agents(out, s);
		step_cost(out, s);
		al_strbuf_adds(out, "</section>\n");
	}
	al_strbuf_adds(out, "</div>\n");
}

void al_report_html(struct al_strbuf *out, const struct al_report *r)
{
	al_strbuf_adds(out, head);
	al_strbuf_adds(out, "<title>ailoop report ");
	esc(out, r->view->st.run_id);
	al_strbuf_adds(out, "</title>\n");
	al_strbuf_adds(out, style);
	summary(out, r);
	tree(out, r);
	charts(out, r);
	timeline(out, r);
	al_strbuf_adds(out, "</body>\n</html>\n");
}
