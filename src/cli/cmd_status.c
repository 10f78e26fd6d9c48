#include "ailoop/cli/cli.h"
#include "ailoop/exec/budget.h"
#include "ailoop/exec/exec.h"
#include "ailoop/exec/feedback.h"
#include "ailoop/model/flow.h"
#include "ailoop/git/git.h"
#include "ailoop/store/episode_recall.h"
#include "ailoop/store/run.h"
#include "ailoop/store/run_view.h"
#include "ailoop/store/state.h"
#include "ailoop/base/strbuf.h"
#include "ailoop/base/util.h"

#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* What the run has used of its budgets, and the flow's limits (0: none, or unknown). */
struct budget {
	struct al_budget_use use;
	struct al_run_tally tally; /* time, calls that ended, cost: as the report counts */
	int64_t seconds;
	int max_calls, max_seconds, per_hour;
	bool live; /* a process holds the run's lock */
};

/*
 * The time ailoop worked on the run, as the report counts it: from the
 * event log, where every start and resume begins a stretch, so a stop
 * that saved no node's clock (Ctrl-C in an agent's call) loses none of
 * it. A run read from its branch has no event log here: the root's clock
 * as its last commit holds it.
 */
static int64_t seconds_spent(const struct al_run_view *v, const struct al_run_tally *t)
{
	const struct al_node_state *root = v->nodes.n ? &v->nodes.v[0] : NULL;

	if (t->events)
		return t->active_s;
	return root ? root->elapsed_ms / 1000 : 0;
}

static void read_budget(struct budget *b, const struct al_run_view *v)
{
	const struct al_run_state *st = &v->st;
	struct al_diags diags = AL_DIAGS_INIT;
	struct al_flow *flow = NULL;
	char *dir = al_xprintf("%s/%s", AL_RUNS_DIR, st->run_id);

	memset(b, 0, sizeof(*b));
	if (st->flow && al_flow_load(&flow, st->flow, &diags) == 0) {
		b->max_calls = flow->max_agent_calls;
		b->max_seconds = flow->max_wall_seconds;
		b->per_hour = flow->max_agent_calls_per_hour;
	}
	if (al_budget_read(dir, b->per_hour, &b->use) < 0)
		memset(&b->use, 0, sizeof(b->use));
	b->live = v->holder && !v->from;
	al_run_tally_read(&b->tally, dir, b->live);
	b->seconds = seconds_spent(v, &b->tally);
	al_flow_free(flow);
	al_diags_release(&diags);
	free(dir);
}

static json_t *limit_json(int limit)
{
	return limit ? json_integer(limit) : json_null();
}

static json_t *cost_json(const struct al_run_cost *c)
{
	return json_pack("{s:f, s:f, s:I, s:I, s:I, s:I, s:I}", "usd", c->usd, "estimated_usd",
			 c->estimated_usd, "input_tokens", (json_int_t)c->input, "output_tokens",
			 (json_int_t)c->output, "calls", (json_int_t)c->calls, "estimated",
			 (json_int_t)c->estimated, "unknown", (json_int_t)c->unknown);
}

static json_t *budget_json(const struct budget *b)
{
	int64_t wait = b->use.wait_until ? b->use.wait_until - al_budget_now() : 0;

	return json_pack("{s:I, s:o, s:I, s:o, s:I, s:o, s:I, s:o}", "agent_calls",
			 (json_int_t)b->use.calls, "max_agent_calls", limit_json(b->max_calls),
			 "wall_seconds", (json_int_t)b->seconds, "max_wall_seconds",
			 limit_json(b->max_seconds), "agent_calls_last_hour",
			 (json_int_t)b->use.calls_last_hour, "max_agent_calls_per_hour",
			 limit_json(b->per_hour), "hourly_wait_seconds",
			 (json_int_t)(wait > 0 ? wait : 0), "cost",
			 cost_json(&b->tally.cost));
}

static void print_budget(const struct budget *b)
{
	int64_t wait = b->use.wait_until ? b->use.wait_until - al_budget_now() : 0;
	const struct al_run_cost *c = &b->tally.cost;
	/* a run at work has a call going on: only a stopped run's are stopped */
	long stopped = b->tally.events && !b->live ? b->use.calls - b->tally.calls_ended : 0;

	printf("  agent calls:  %ld", b->use.calls);
	if (b->max_calls)
		printf(" of %d (limits.max_agent_calls)", b->max_calls);
	if (stopped > 0) /* started, and stopped with the run before they ended */
		printf(", %ld stopped before %s ended", stopped, stopped == 1 ? "it" : "they");
	if (b->per_hour)
		printf("; %ld in the last hour, of %d (limits.max_agent_calls_per_hour)",
		       b->use.calls_last_hour, b->per_hour);
	printf("\n  time spent:   %lld s", (long long)b->seconds);
	if (b->max_seconds)
		printf(" of %d (limits.max_wall_seconds)", b->max_seconds);
	if (b->tally.pauses)
		printf(", %ld pause%s of %lld s in all not counted", b->tally.pauses,
		       b->tally.pauses == 1 ? "" : "s", (long long)b->tally.paused_s);
	printf("\n");
	if (wait > 0)
		printf("  hourly limit: the next agent call waits %lld s\n", (long long)wait);
	if (c->calls) {
		printf("  cost:         $%.4f (%lld tokens in, %lld out, over %ld calls", c->usd,
		       c->input, c->output, c->calls);
		if (c->estimated)
			printf("; %ld estimated at list prices, $%.4f", c->estimated,
			       c->estimated_usd);
		if (c->unknown)
			printf("; %ld of unknown cost", c->unknown);
		printf(")\n");
		if (c->estimated)
			printf("                an estimate is what the API would charge, not a "
			       "subscription's bill\n");
	}
}

/* The feedback still open (feedback.h), for --json. */
static json_t *feedback_json(const struct al_feedback_log *log)
{
	json_t *open = json_array();

	for (size_t i = 0; i < log->n; i++)
		if (al_feedback_is_open(log->items[i]))
			json_array_append(open, log->items[i]);
	return open;
}

/* A field of a feedback record, "-" if it is not a string (a damaged record). */
static const char *field(const json_t *f, const char *key)
{
	const char *s = json_string_value(json_object_get(f, key));

	return s ? s : "-";
}

static void print_feedback(const struct al_feedback_log *log)
{
	size_t open = 0;

	for (size_t i = 0; i < log->n; i++) {
		const json_t *f = log->items[i];

		if (!al_feedback_is_open(f))
			continue;
		if (!open++)
			printf("  feedback:\n");
		printf("    %s %s -> %s: %s, %s (round %d of %d)\n", field(f, "id"), field(f, "from"),
		       field(f, "to"), field(f, "type"), field(f, "status"),
		       (int)json_integer_value(json_object_get(f, "round")), AL_FEEDBACK_MAX_ROUNDS);
	}
	if (!open)
		printf("  feedback:     none open%s\n", log->n ? "" : " (none sent)");
}

/* The run's feedback.jsonl: from its branch when that is not checked out. */
static void read_feedback(struct al_feedback_log *log, const struct al_run_view *v,
			  struct al_git *git)
{
	struct al_strbuf text = AL_STRBUF_INIT;
	char *rev, *path;

	if (!v->from) {
		al_feedback_log_read(log, v->dir);
		return;
	}
	rev = al_xprintf("refs/heads/%s", v->from);
	path = al_xprintf("%s/%s", v->dir, AL_FEEDBACK_FILE);
	if (git && al_git_read(git, rev, path, &text) == 0)
		al_feedback_log_parse(log, text.buf, text.len);
	al_strbuf_release(&text);
	free(path);
	free(rev);
}

/*
 * The Slurm job steps running now (executor slurm): each step writes
 * "<job id> <node path> <role> [<sensor>]" to a file of the run's logs/slurm/
 * directory, which ailoop removes when the step ends.
 */
static json_t *slurm_steps(const char *run_id)
{
	char *dir = al_xprintf("%s/%s/" AL_RUN_SLURM_DIR, AL_RUNS_DIR, run_id);
	json_t *steps = json_array();
	DIR *d = opendir(dir);
	struct dirent *e;

	while (d && (e = readdir(d))) {
		char *path, line[2048];
		FILE *f;
		long job;
		int used = 0;

		if (e->d_name[0] == '.')
			continue;
		path = al_xprintf("%s/%s", dir, e->d_name);
		f = fopen(path, "r");
		free(path);
		if (!f)
			continue;
		if (fgets(line, sizeof(line), f) && sscanf(line, "%ld %n", &job, &used) == 1 && used) {
			line[strcspn(line, "\n")] = '\0';
			json_array_append_new(steps, json_pack("{s:I, s:s}", "job", (json_int_t)job,
							       "step", line + used));
		}
		fclose(f);
	}
	if (d)
		closedir(d);
	free(dir);
	return steps;
}

/*
 * Whether a run that says it is running (in its directory here, not read
 * from another branch's commit) has no process holding its lock: one that
 * died in a way that wrote nothing (SIGKILL, out of memory, a restart).
 */
/* The episodes each agent was given last (episode_recall.h). */
static json_t *episodes_given(const char *run_id)
{
	char *dir = al_xprintf("%s/%s", AL_RUNS_DIR, run_id);
	json_t *given = al_episodes_given_read(dir);

	free(dir);
	return given;
}

static bool stopped(const struct al_run_state *st, const char *from)
{
	return !from && !strcmp(st->status, "running");
}

static int print_json(const struct al_run_state *st, const struct al_run_nodes *ns, const char *holder,
		      const char *from, const struct budget *b, const struct al_feedback_log *fb)
{
	json_t *o = json_object(), *stack = json_array(), *nodes = json_array(), *errs = json_array();
	char *text;

	for (size_t i = 0; i < st->nstack; i++)
		json_array_append_new(stack, json_string(st->stack[i]));
	for (size_t i = 0; i < ns->n; i++) {
		const struct al_node_state *s = &ns->v[i];
		struct al_run_cost cost;

		json_array_append_new(nodes, json_pack("{s:s, s:s, s:s, s:i, s:i, s:s, s:s, s:b}",
						       "node_path", s->node_path, "type",
						       s->type ? s->type : "loop", "label", s->label,
						       "iteration", s->iteration, "max_iterations",
						       s->max_iterations, "phase",
						       al_phase_names[s->phase], "status", s->status,
						       "target_met", s->target_met));
		al_run_tally_subtree(&cost, &b->tally, s->node_path);
		json_object_set_new(json_array_get(nodes, json_array_size(nodes) - 1), "cost",
				    cost_json(&cost));
		if (!s->type || !strcmp(s->type, "loop"))
			json_object_set_new(json_array_get(nodes, json_array_size(nodes) - 1),
					    "breaker", json_pack("{s:s, s:i, s:i, s:s?}", "state",
					    al_breaker_state_names[s->breaker.state],
					    "no_progress", s->breaker.no_progress, "same_error",
					    s->breaker.same_error, "reason", s->breaker.reason));
	}
	for (size_t i = 0; i < ns->nerrors; i++)
		json_array_append_new(errs, json_string(ns->errors[i]));
	json_object_set_new(o, "run_id", json_string(st->run_id));
	/* as `ailoop runs` and the text say: a run no live ailoop holds is not running */
	json_object_set_new(o, "status", json_string(!holder && stopped(st, from) ? "interrupted"
										  : st->status));
	json_object_set_new(o, "branch", st->branch ? json_string(st->branch) : json_null());
	json_object_set_new(o, "base_branch",
			    st->base_branch ? json_string(st->base_branch) : json_null());
	json_object_set_new(o, "task", json_string(st->task));
	json_object_set_new(o, "flow", json_string(st->flow));
	json_object_set_new(o, "active_node_path", st->active_node_path
				   ? json_string(st->active_node_path) : json_null());
	json_object_set_new(o, "execution_stack", stack);
	json_object_set_new(o, "started_at", json_string(st->started_at ? st->started_at : ""));
	json_object_set_new(o, "updated_at", json_string(st->updated_at ? st->updated_at : ""));
	json_object_set_new(o, "locked_by", holder ? json_string(holder) : json_null());
	json_object_set_new(o, "stopped", json_boolean(!holder && stopped(st, from)));
	json_object_set_new(o, "from_branch", from ? json_string(from) : json_null());
	json_object_set_new(o, "budget", budget_json(b));
	json_object_set_new(o, "open_feedback", feedback_json(fb));
	json_object_set_new(o, "slurm_steps", slurm_steps(st->run_id));
	json_object_set_new(o, "episodes_given", episodes_given(st->run_id));
	json_object_set_new(o, "nodes", nodes);
	json_object_set_new(o, "damaged", errs);
	text = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	printf("%s\n", text);
	free(text);
	json_decref(o);
	return 0;
}

static void nap(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/*
 * A node's cost over its subtree, "$0.1234", with "*" when some of it is
 * estimated and "?" when some calls' cost is unknown (ORed into *marks
 * as 1 and 2 for the legend); "-" when no call of it reported usage.
 */
static void node_cost(char *buf, size_t size, const struct al_run_tally *t, const char *path,
		      int *marks)
{
	struct al_run_cost c;

	al_run_tally_subtree(&c, t, path);
	if (!c.calls) {
		snprintf(buf, size, "-");
		return;
	}
	snprintf(buf, size, "$%.4f%s%s", c.usd, c.estimated ? "*" : "", c.unknown ? "?" : "");
	*marks |= (c.estimated ? 1 : 0) | (c.unknown ? 2 : 0);
}

/* A loop's circuit breaker, after its status. */
static void breaker_text(const struct al_breaker *b)
{
	printf("  breaker %s", al_breaker_state_names[b->state]);
	if (b->no_progress || b->same_error)
		printf(" (%d without progress, %d with the same error)", b->no_progress,
		       b->same_error);
	if (b->state == AL_BREAKER_OPEN && b->reason)
		printf(": %s", b->reason);
}

static void print_text(const struct al_run_state *st, const struct al_run_nodes *ns, const char *holder,
		       const char *from, const struct budget *b, const struct al_feedback_log *fb)
{
	const char *task = st->task, *nl = strchr(task, '\n');
	json_t *steps;
	int marks = 0;

	/* a run that says it is running, whose lock no process holds, is not */
	printf("run %s: %s\n", st->run_id, !holder && stopped(st, from) ? "interrupted"
									  : st->status);
	printf("  task:         %.*s%s\n", nl ? (int)(nl - task) : (int)strlen(task), task,
	       nl ? " …" : "");
	printf("  flow:         %s\n", st->flow);
	if (st->branch)
		printf("  branch:       %s (from %s)\n", st->branch,
		       st->base_branch ? st->base_branch : "-");
	printf("  started:      %s\n  updated:      %s\n",
	       st->started_at ? st->started_at : "-",
	       st->updated_at ? st->updated_at : "-");
	if (st->active_node_path)
		printf("  active node:  %s\n", st->active_node_path);
	if (holder)
		printf("  locked by:    %s\n", holder);
	else if (stopped(st, from))
		printf("  stopped:      no ailoop process runs it (killed, or its machine "
		       "restarted): 'ailoop resume' goes on with it\n");
	steps = slurm_steps(st->run_id);
	for (size_t i = 0; i < json_array_size(steps); i++)
		printf("  slurm step:   job %" JSON_INTEGER_FORMAT ": %s\n",
		       json_integer_value(json_object_get(json_array_get(steps, i), "job")),
		       json_string_value(json_object_get(json_array_get(steps, i), "step")));
	json_decref(steps);
	if (from)
		printf("  read from:    the last commit of %s (not checked out)\n", from);
	print_budget(b);
	print_feedback(fb);
	steps = episodes_given(st->run_id);
	for (size_t i = 0; i < json_array_size(steps); i++) {
		struct al_strbuf line = AL_STRBUF_INIT;

		al_episodes_given_line(&line, json_array_get(steps, i));
		printf("  episodes:     %s\n", line.buf);
		al_strbuf_release(&line);
	}
	json_decref(steps);
	printf("\n  %-32s %-8s %-11s %-10s %-10s %s\n", "node", "label", "iteration", "phase",
	       "cost", "status");
	for (size_t i = 0; i < ns->n; i++) {
		const struct al_node_state *s = &ns->v[i];
		char it[32], cost[32];

		if (s->type && strcmp(s->type, "loop")) /* runs once in its label */
			snprintf(it, sizeof(it), "%s", s->type);
		else /* the last measurement after the last actuation is one more than the limit */
			snprintf(it, sizeof(it), "%d of %d",
				 s->max_iterations > 0 && s->iteration > s->max_iterations
					 ? s->max_iterations : s->iteration,
				 s->max_iterations);
		node_cost(cost, sizeof(cost), &b->tally, s->node_path, &marks);
		printf("  %*s%-*s %-8s %-11s %-10s %-10s %s", s->level * 2, "", 32 - s->level * 2,
		       s->node_path, s->label, it, al_phase_names[s->phase], cost, s->status);
		if (!s->type || !strcmp(s->type, "loop"))
			breaker_text(&s->breaker);
		putchar('\n');
	}
	if (marks & 1)
		printf("  * of it estimated at API list prices (not a subscription's bill)\n");
	if (marks & 2)
		printf("  ? some calls of unknown cost, counted as $0\n");
	for (size_t i = 0; i < ns->nerrors; i++)
		printf("  damaged: %s\n", ns->errors[i]);
}

/*
 * What a watcher counts as a new state: the run's status and lock, and
 * each node's place (label, iteration, phase, status). The times shown
 * move every second and are not a new state.
 */
static char *state_key(const struct al_run_view *v)
{
	struct al_strbuf sb = AL_STRBUF_INIT;

	al_strbuf_addf(&sb, "%s %s %s\n", v->st.status, v->holder ? v->holder : "-",
		       v->st.active_node_path ? v->st.active_node_path : "-");
	for (size_t i = 0; i < v->nodes.n; i++) {
		const struct al_node_state *s = &v->nodes.v[i];

		al_strbuf_addf(&sb, "%s %s %d %d %s %d\n", s->node_path, s->label, s->iteration,
			       (int)s->phase, s->status, (int)s->breaker.state);
	}
	return al_strbuf_detach(&sb, NULL);
}

/*
 * status --watch: the status of run `id` (the newest if NULL) again every
 * `interval_ms`, by the command itself, until no ailoop process works on
 * the run; on a terminal the screen is cleared and drawn again, elsewhere
 * a state is printed only when it differs from the last one. Ctrl-C ends
 * it (the run goes on). The exit status says how the run ended.
 */
static int watch(const char *id, bool json, int interval_ms)
{
	struct al_git *git = NULL;
	bool tty = isatty(1);
	char *run_id = id ? al_strdup(id) : NULL, *last = NULL;
	int code = 0;

	if (al_git_open(&git) < 0)
		git = NULL;
	for (;;) {
		struct al_run_view view;
		char *args[] = { "status", run_id, json ? "--json" : NULL, NULL };
		char *key;
		bool going;
		int rc = al_run_view_load(&view, git, run_id);

		if (rc < 0) {
			code = al_cli_fail(al_cli_exit_code(rc), "%s", al_errmsg());
			al_run_view_release(&view);
			break;
		}
		if (!run_id) /* the run watched stays the one first found */
			run_id = al_strdup(view.st.run_id);
		going = view.holder && !view.from && !strcmp(view.st.status, "running");
		key = state_key(&view);
		if (tty || !last || strcmp(key, last)) {
			args[1] = run_id;
			if (tty)
				fputs("\033[H\033[2J", stdout);
			else if (last)
				putchar('\n');
			optind = 0; /* getopt starts afresh for the command's own parse */
			code = cmd_status(json ? 3 : 2, args);
			fflush(stdout);
		}
		free(last);
		last = key;
		if (code == 0 && !going)
			code = al_cli_run_exit_code(view.st.status);
		al_run_view_release(&view);
		if (code || !going)
			break;
		nap(interval_ms);
	}
	free(last);
	free(run_id);
	al_git_free(git);
	return code;
}

int cmd_status(int argc, char **argv)
{
	static const struct option longs[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "watch", no_argument, NULL, 'w' },
		{ "interval", required_argument, NULL, 'i' },
		{ "help", no_argument, NULL, 0 },
		{ NULL, 0, NULL, 0 },
	};
	struct al_run_view view;
	struct budget budget;
	struct al_feedback_log feedback = { 0 };
	struct al_git *git = NULL;
	bool json = false, watching = false;
	int c, rc, code = 0, interval_ms = AL_CLI_INTERVAL_MS;

	while ((c = al_cli_getopt(argc, argv, "", longs, &code)) != -1) {
		switch (c) {
		case '?': return code;
		case 'j': json = true; break;
		case 'w': watching = true; break;
		case 'i':
			if ((code = al_cli_interval(optarg, &interval_ms)))
				return code;
			break;
		}
	}
	if ((code = al_cli_operands(argc, argv, 0, 1)) || (code = al_cli_enter_repo()))
		return code;
	if (watching)
		return watch(optind < argc ? argv[optind] : NULL, json, interval_ms);
	if (al_git_open(&git) < 0)
		git = NULL;
	rc = al_run_view_load(&view, git, optind < argc ? argv[optind] : NULL);
	if (rc < 0) {
		code = al_cli_fail(al_cli_exit_code(rc), "%s", al_errmsg());
	} else {
		read_budget(&budget, &view);
		read_feedback(&feedback, &view, git);
		if (json)
			print_json(&view.st, &view.nodes, view.holder, view.from, &budget,
				   &feedback);
		else
			print_text(&view.st, &view.nodes, view.holder, view.from, &budget,
				   &feedback);
	}
	if (rc >= 0)
		al_run_tally_release(&budget.tally);
	al_feedback_log_release(&feedback);
	al_run_view_release(&view);
	al_git_free(git);
	return code;
}
