#include "ailoop/report/report.h"
#include "ailoop/exec/budget.h"
#include "ailoop/exec/invoke.h"
#include "ailoop/model/md.h"
#include "ailoop/store/run.h"
#include "ailoop/exec/sensor.h"
#include "ailoop/base/util.h"

#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PLAN_LINES 3  /* of a controller's output shown */
#define PLAN_MAX 300
#define TAIL_LINES 6  /* of a failing sensor's output shown */
#define TAIL_MAX 600

/* Iteration 0 of a loop measures only: no controller decided it. */
static bool first_of_loop(const char *label)
{
	const char *dot = strrchr(label, '.');

	return !strcmp(dot ? dot + 1 : label, "0");
}

static int read_md(struct al_git *git, const char *oid, const char *path, struct al_md *md)
{
	struct al_strbuf text = AL_STRBUF_INIT;
	int rc = al_git_read(git, oid, path, &text);
	size_t len;
	char *buf;

	if (rc < 0) {
		al_strbuf_release(&text);
		return rc;
	}
	buf = al_strbuf_detach(&text, &len);
	return al_md_parse(md, path, buf, len);
}

/*
 * The head of the action plan (or else of the body): its first lines of
 * text, headings left out.
 */
static char *plan_head(const struct al_md *md)
{
	const char *body = md->body ? md->body : "", *end = body + md->body_len;
	const char *p = body, *plan;
	struct al_strbuf sb = AL_STRBUF_INIT;
	int lines = 0;

	plan = md->body_len ? strstr(body, "## Action Plan") : NULL;
	if (plan && plan < end)
		p = plan;
	while (p < end && lines < PLAN_LINES && sb.len < PLAN_MAX) {
		const char *nl = memchr(p, '\n', (size_t)(end - p)), *eol = nl ? nl : end;

		while (p < eol && (*p == ' ' || *p == '\t'))
			p++;
		if (p < eol && *p != '#' && strncmp(p, "```", 3)) {
			if (sb.len)
				al_strbuf_addch(&sb, '\n');
			al_strbuf_add(&sb, p, (size_t)(eol - p));
			lines++;
		}
		p = nl ? nl + 1 : end;
	}
	al_strbuf_rtrim(&sb);
	if (!sb.len) {
		al_strbuf_release(&sb);
		return NULL;
	}
	al_utf8_cut(sb.buf, PLAN_MAX);
	return al_strbuf_detach(&sb, NULL);
}

static void read_controller(struct al_report_step *s, struct al_git *git, const char *dir)
{
	char *path = al_xprintf("%s/nodes/%s/controller-output.md", dir, s->it.node_path);
	struct al_md md = AL_MD_INIT;

	if (!first_of_loop(s->it.label) && read_md(git, s->it.oid, path, &md) == 0) {
		s->decided = al_md_bool(&md, "target-met", &s->target_met);
		s->plan = plan_head(&md);
	}
	al_md_release(&md);
	free(path);
}

static bool number(const char *text, double *out)
{
	char *end;

	if (!text || !*text)
		return false;
	*out = strtod(text, &end);
	return end != text && !*end && isfinite(*out); /* "nan" and "inf" are no points */
}

/* The last lines of the "## Output" block of a sensor's output file, or NULL. */
static char *output_tail(const struct al_md *md)
{
	const char *body = md->body ? md->body : "", *end = body + md->body_len, *p, *stop;
	int lines = 0;

	if (!md->body_len || !(p = strstr(body, "## Output")) || p >= end ||
	    !(p = strstr(p, "```")) || p >= end || !(p = memchr(p, '\n', (size_t)(end - p))))
		return NULL;
	p++;
	/* the fence that closes the block is the last one of the body */
	for (stop = end - 3; stop > p && strncmp(stop, "```", 3); stop--)
		;
	while (stop > p && (stop[-1] == '\n' || stop[-1] == ' '))
		stop--;
	if (stop <= p)
		return NULL;
	for (const char *q = stop; q > p; q--) {
		if (q[-1] == '\n' && ++lines == TAIL_LINES) {
			p = q;
			break;
		}
	}
	if (stop - p > TAIL_MAX)
		p = stop - TAIL_MAX;
	while (p < stop && (*p & 0xc0) == 0x80) /* not inside a character */
		p++;
	return al_xprintf("%.*s", (int)(stop - p), p);
}

static void add_tail(struct al_report_step *s, const char *sensor, const struct al_md *md)
{
	char *tail = output_tail(md);
	struct al_strbuf sb = AL_STRBUF_INIT;

	if (!tail)
		return;
	if (s->tail)
		al_strbuf_addf(&sb, "%s\n", s->tail);
	al_strbuf_addf(&sb, "%s:\n%s", sensor, tail);
	free(s->tail);
	s->tail = al_strbuf_detach(&sb, NULL);
	free(tail);
}

static void read_metrics(struct al_report_step *s, struct al_git *git, const char *dir)
{
	char *node_dir = al_xprintf("%s/nodes/%s", dir, s->it.node_path);

	for (size_t k = 0; k < s->it.nsensors; k++) {
		char *path = al_sensor_output_path(node_dir, s->it.sensors[k].name);
		struct al_md md = AL_MD_INIT;
		const struct al_val *m;
		bool read = strcmp(s->it.sensors[k].status, "pending") &&
			    read_md(git, s->it.oid, path, &md) == 0;

		if (read && !strcmp(s->it.sensors[k].status, "fail"))
			add_tail(s, s->it.sensors[k].name, &md);
		if (read && (m = al_md_get(&md, "metrics")) && m->kind == AL_VAL_MAP) {
			for (size_t i = 0; i < m->n; i++) {
				const struct al_val *v = AL_VAL_VALUE(m, i);
				struct al_report_metric *x;
				double value;

				if (v->kind != AL_VAL_SCALAR || !number(v->str, &value))
					continue;
				AL_GROW(s->metrics, s->nmetrics, s->metrics_alloc);
				x = &s->metrics[s->nmetrics++];
				x->sensor = al_strdup(s->it.sensors[k].name);
				x->name = al_strdup(AL_VAL_KEY(m, i)->str);
				x->value = value;
			}
		}
		al_md_release(&md);
		free(path);
	}
	free(node_dir);
}

static const char *jstr(json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

/*
 * An agent's wall time from its event, or -1 when it is not one a run
 * could have taken (negative, or past a year): events.jsonl is a file
 * anyone may edit, and its numbers are summed and scaled into the page.
 */
static int64_t event_ms(json_t *ev)
{
	json_t *v = json_object_get(ev, "ms");
	json_int_t ms = json_integer_value(v);

	return json_is_integer(v) && ms >= 0 && ms <= AL_REPORT_MS_MAX ? (int64_t)ms : -1;
}

static void add_agent(struct al_report *r, struct al_report_step *s, json_t *ev)
{
	struct al_report_agent *a;
	const char *role = jstr(ev, "role"), *name = jstr(ev, "name");
	json_int_t exit_code = json_integer_value(json_object_get(ev, "exit"));
	int64_t ms = event_ms(ev);

	/* what budgets count: not a command sensor, which ailoop runs itself */
	if (!json_is_false(json_object_get(ev, "agent_call")))
		r->agent_calls++;
	for (int i = 0; i < AL_REPORT_ROLES && ms >= 0; i++)
		if (role && !strcmp(role, al_role_names[i]))
			/* saturated: no count of events makes the sum wrap */
			r->role_ms[i] = ms > INT64_MAX - r->role_ms[i] ? INT64_MAX
								       : r->role_ms[i] + ms;
	if (!s)
		return;
	AL_GROW(s->agents, s->nagents, s->agents_alloc);
	a = &s->agents[s->nagents++];
	a->role = al_strdup(role ? role : "agent");
	a->name = name ? al_strdup(name) : NULL;
	a->ms = ms;
	a->exit_code = exit_code >= INT_MIN && exit_code <= INT_MAX ? (int)exit_code : -1;
	a->timed_out = json_is_true(json_object_get(ev, "timed_out"));
}

/* A call's cost: its iteration's, and a point of the run's cost as it grew. */
static void add_usage(struct al_report *r, struct al_report_step *s, json_t *ev)
{
	struct al_run_cost one = { 0 };

	al_run_cost_add_event(&one, ev);
	if (s)
		al_run_cost_add(&s->cost, &one);
	AL_GROW(r->costs, r->ncosts, r->costs_alloc);
	r->costs[r->ncosts].usd = (r->ncosts ? r->costs[r->ncosts - 1].usd : 0) + one.usd;
	r->costs[r->ncosts++].label = s ? s->it.label : NULL;
}

/* events.jsonl: agents' times and costs, failures, and why the run stopped. */
static void read_events(struct al_report *r, const struct al_strmap *steps)
{
	char *path = al_xprintf("%s/events.jsonl", r->view->dir);
	struct al_strbuf text = AL_STRBUF_INIT, key = AL_STRBUF_INIT;
	char *line, *next, *stop = NULL; /* why the run stopped last, until it resumed */
	bool resumed = false;

	if (al_strbuf_read_file(&text, path, 0) < 0)
		goto done;
	r->events = true;
	for (line = text.buf; *line; line = next) {
		json_t *ev;
		const char *type, *node, *label, *ts;
		struct al_report_step *s = NULL;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		else
			next = line + strlen(line);
		if (!(ev = json_loads(line, 0, NULL)))
			continue; /* a line cut short by a crash */
		type = jstr(ev, "event");
		node = jstr(ev, "node");
		label = jstr(ev, "label");
		if ((ts = jstr(ev, "ts")))
			al_set_str(&r->ended_at, ts);
		if (node && label) {
			al_strbuf_reset(&key);
			al_strbuf_addf(&key, "%s %s", node, label);
			s = al_strmap_get(steps, key.buf);
		}
		if (!type) {
			json_decref(ev);
			continue;
		}
		if (!strcmp(type, "run_resume")) {
			resumed = true;
		} else if (resumed && s && strcmp(type, "node_resume")) {
			/* the first iteration the resume went on with (a node_resume names
			 * each node on the stack, the outermost first) */
			al_set_str(&s->resumed, stop ? stop : "stopped");
			resumed = false;
			al_set_str(&stop, NULL);
		}
		if (!strcmp(type, "run_paused") || !strcmp(type, "run_blocked"))
			al_set_str(&stop, jstr(ev, "reason") ? jstr(ev, "reason") : type + 4);
		if (!strcmp(type, "agent"))
			add_agent(r, s, ev);
		else if (!strcmp(type, "agent_usage"))
			add_usage(r, s, ev);
		else if (!strcmp(type, "agent_error") && s && jstr(ev, "error"))
			al_set_str(&s->error, jstr(ev, "error"));
		else if (!strcmp(type, "run_paused") && jstr(ev, "reason"))
			al_set_str(&r->reason, jstr(ev, "reason"));
		else if (!strcmp(type, "run_end") && jstr(ev, "error"))
			al_set_str(&r->reason, jstr(ev, "error"));
		else if (!strcmp(type, "run_start") || !strcmp(type, "run_resume"))
			al_set_str(&r->reason, NULL);
		json_decref(ev);
	}
done:
	al_strbuf_release(&text);
	al_strbuf_release(&key);
	free(stop);
	free(path);
}

/*
 * A loop's controller decides at the start of its iteration, and its plan
 * is what the inner iterations before the iteration's commit carried
 * out: it stands before them.
 */
static void place_plans(struct al_report *r)
{
	for (size_t i = 0; i < r->nsteps; i++) {
		struct al_report_step *s = &r->steps[i];
		size_t k = i;

		while (k > 0 && !r->steps[k - 1].it.merge &&
		       strcmp(r->steps[k - 1].it.node_path, s->it.node_path) &&
		       al_run_node_holds(s->it.node_path, r->steps[k - 1].it.node_path))
			k--;
		s->plan_at = s->decided ? k : i;
	}
}

/*
 * The agent calls as status counts them (one source: the run's call
 * record, which budgets count, and events.jsonl for the time and cost):
 * a call the run stopped in has no end event but was made.
 */
static void count_calls(struct al_report *r)
{
	const struct al_run_view *v = r->view;
	struct al_budget_use use;

	al_run_tally_read(&r->tally, v->dir, v->holder && !v->from);
	r->status = !v->from && !v->holder && !strcmp(v->st.status, "running") ? "interrupted"
										: v->st.status;
	if (!r->events || v->from || al_budget_read(v->dir, 0, &use) < 0)
		return;
	if ((size_t)use.calls > r->agent_calls) {
		/* a run at work has a call going on: only a stopped run's are stopped */
		r->calls_stopped = v->holder ? 0 : (size_t)use.calls - r->agent_calls;
		r->agent_calls = (size_t)use.calls;
	}
}

int al_report_load(struct al_report *r, struct al_git *git, const struct al_run_view *view)
{
	const struct al_run_state *st = &view->st;
	struct al_strmap by_label = AL_STRMAP_INIT;
	struct al_iteration *its = NULL;
	char **keys;
	size_t n = 0, kept = 0;
	int rc;

	memset(r, 0, sizeof(*r));
	r->view = view;
	if (view->from)
		r->rev = al_xprintf("refs/heads/%s", view->from);
	else if (st->branch && al_git_branch_exists(git, st->branch))
		r->rev = al_xprintf("refs/heads/%s", st->branch);
	else
		r->rev = al_strdup("HEAD");
	if ((rc = al_history_load(git, r->rev, st->run_id, &its, &n)) < 0)
		return rc;
	r->steps = al_calloc(n + 1, sizeof(*r->steps));
	keys = al_calloc(n + 1, sizeof(*keys));
	for (size_t i = 0; i < n; i++) {
		struct al_report_step *s;

		if (its[i].run_id && strcmp(its[i].run_id, st->run_id)) {
			al_iteration_release(&its[i]); /* another run's */
			continue;
		}
		s = &r->steps[kept];
		s->it = its[i];
		read_controller(s, git, view->dir);
		read_metrics(s, git, view->dir);
		al_git_diffstat(git, s->it.oid, AL_RUNS_DIR, &s->files, &s->nfiles);
		/* a merge has its parallel node's label: the node's events are not its */
		keys[kept] = s->it.merge ? al_xprintf("%s %s merge %s", s->it.node_path,
						      s->it.label, s->it.merge)
					 : al_xprintf("%s %s", s->it.node_path, s->it.label);
		al_strmap_put(&by_label, keys[kept], s);
		kept++;
	}
	free(its); /* its iterations now belong to the steps */
	r->nsteps = kept;
	read_events(r, &by_label);
	place_plans(r);
	count_calls(r);
	al_strmap_release(&by_label);
	al_strv_free(keys, kept);
	return 0;
}

void al_report_release(struct al_report *r)
{
	for (size_t i = 0; i < r->nsteps; i++) {
		struct al_report_step *s = &r->steps[i];

		al_iteration_release(&s->it);
		free(s->plan);
		free(s->error);
		al_git_diffstat_free(s->files, s->nfiles);
		for (size_t k = 0; k < s->nmetrics; k++) {
			free(s->metrics[k].sensor);
			free(s->metrics[k].name);
		}
		free(s->metrics);
		for (size_t k = 0; k < s->nagents; k++) {
			free(s->agents[k].role);
			free(s->agents[k].name);
		}
		free(s->agents);
		free(s->resumed);
		free(s->tail);
	}
	free(r->steps);
	free(r->costs);
	al_run_tally_release(&r->tally);
	free(r->rev);
	free(r->reason);
	free(r->ended_at);
	memset(r, 0, sizeof(*r));
}

void al_report_escape(struct al_strbuf *out, const char *s)
{
	for (; s && *s; s++) {
		switch (*s) {
		case '&': al_strbuf_adds(out, "&amp;"); break;
		case '<': al_strbuf_adds(out, "&lt;"); break;
		case '>': al_strbuf_adds(out, "&gt;"); break;
		case '"': al_strbuf_adds(out, "&quot;"); break;
		case '\'': al_strbuf_adds(out, "&#39;"); break;
		default: al_strbuf_addch(out, *s);
		}
	}
}

static time_t parse_time(const char *s)
{
	struct tm tm = { 0 };

	if (!s || sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
			 &tm.tm_hour, &tm.tm_min, &tm.tm_sec) != 6)
		return (time_t)-1;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	return timegm(&tm);
}

long al_report_seconds(const char *from, const char *to)
{
	time_t a = parse_time(from), b = parse_time(to);

	return a == (time_t)-1 || b == (time_t)-1 || b < a ? -1 : (long)(b - a);
}

void al_report_duration(struct al_strbuf *out, int64_t ms)
{
	int64_t s = ms / 1000;

	if (ms < 0)
		al_strbuf_adds(out, "time unknown");
	else if (ms < 1000)
		al_strbuf_addf(out, "%lld ms", (long long)ms);
	else if (s < 60)
		al_strbuf_addf(out, "%.1fs", (double)ms / 1000);
	else if (s < 3600)
		al_strbuf_addf(out, "%lldm %02llds", (long long)(s / 60), (long long)(s % 60));
	else
		al_strbuf_addf(out, "%lldh %02lldm", (long long)(s / 3600),
			       (long long)(s % 3600 / 60));
}

char *al_report_next_command(const struct al_report *r)
{
	const struct al_run_state *st = &r->view->st;

	if (al_status_resumable(st->status))
		return al_xprintf("ailoop resume %s", st->run_id);
	/* a run on its base branch (--no-branch) has nothing to land */
	if (!strcmp(st->status, "complete") && st->branch &&
	    (!st->base_branch || strcmp(st->base_branch, st->branch)))
		return al_xprintf("ailoop land %s", st->run_id);
	return NULL;
}

const char *al_report_mark(const struct al_report_step *s)
{
	const char *st = s->it.status;

	if (s->error || !strcmp(st, "error") || !strcmp(st, "failed"))
		return "failed";
	if (!strcmp(st, "timeout"))
		return "timeout";
	if (!strcmp(st, "paused") || !strcmp(st, "blocked") || !strcmp(st, "interrupted"))
		return "paused";
	for (size_t i = 0; i < s->nagents; i++)
		if (s->agents[i].timed_out)
			return "timeout";
	return NULL;
}

const char *al_report_step_status(const struct al_report_step *s)
{
	/* its commit ended it; the node's "running" says the node went on */
	return !strcmp(s->it.status, "running") ? "done" : s->it.status;
}

int al_report_iteration_shown(const struct al_node_state *s)
{
	/* the last measurement after the last actuation is one more than the limit */
	return s->max_iterations > 0 && s->iteration > s->max_iterations ? s->max_iterations
									  : s->iteration;
}

void al_report_node_cost(struct al_run_cost *out, const struct al_report *r, const char *path)
{
	al_run_tally_subtree(out, &r->tally, path);
}

void al_report_cost_text(struct al_strbuf *out, const struct al_run_cost *c)
{
	al_strbuf_addf(out, "$%.4f (%lld in, %lld out", c->usd, c->input, c->output);
	if (c->estimated == c->calls && c->calls)
		al_strbuf_adds(out, ", estimated");
	else if (c->estimated)
		al_strbuf_addf(out, ", $%.4f of it estimated", c->estimated_usd);
	if (c->unknown)
		al_strbuf_addf(out, ", %ld call%s of unknown cost", c->unknown,
			       c->unknown == 1 ? "" : "s");
	al_strbuf_adds(out, ")");
}

/* Whole seconds (events.jsonl's times are): "5s", "3m 05s". */
static void seconds(struct al_strbuf *out, int64_t s)
{
	if (s < 60)
		al_strbuf_addf(out, "%llds", (long long)s);
	else
		al_report_duration(out, s * 1000);
}

static bool live(const struct al_report *r)
{
	return r->view->holder && !r->view->from;
}

const char *al_report_end(const struct al_report *r)
{
	if (live(r))
		return NULL;
	return r->ended_at ? r->ended_at : r->view->st.updated_at;
}

void al_report_times(struct al_strbuf *out, const struct al_report *r)
{
	const char *end = al_report_end(r);
	long secs = end ? al_report_seconds(r->view->st.started_at, end) : -1;
	int64_t started = al_run_event_time(r->view->st.started_at), now = (int64_t)time(NULL);

	if (!end && started >= 0 && now >= started) /* a run at work: until now */
		secs = (long)(now - started);
	if (secs < 0)
		return;
	seconds(out, secs);
	if (!r->tally.events || !r->tally.pauses)
		return;
	al_strbuf_adds(out, ": ");
	seconds(out, r->tally.active_s);
	al_strbuf_addf(out, " at work, %ld pause%s of ", r->tally.pauses,
		       r->tally.pauses == 1 ? "" : "s");
	seconds(out, r->tally.paused_s);
}

void al_report_calls(struct al_strbuf *out, const struct al_report *r)
{
	if (!r->events) {
		al_strbuf_adds(out, "unknown (no events.jsonl here)");
		return;
	}
	al_strbuf_addf(out, "%zu", r->agent_calls);
	if (r->calls_stopped)
		al_strbuf_addf(out, " (%zu stopped with the run before %s ended)", r->calls_stopped,
			       r->calls_stopped == 1 ? "it" : "they");
}

const char *al_report_node_status(const struct al_report *r, const struct al_node_state *s)
{
	/* no process runs the run: none of its nodes runs either */
	return !strcmp(s->status, "running") && strcmp(r->status, r->view->st.status) ? r->status
										     : s->status;
}

char *al_report_judged(const struct al_report_step *s)
{
	const char *label = s->it.label, *dot = strrchr(label, '.');
	const char *last = dot ? dot + 1 : label;
	char *end;
	long n = strtol(last, &end, 10);

	if (end == last || *end || n < 1)
		return NULL;
	return al_xprintf("%.*s%ld", (int)(last - label), label, n - 1);
}
