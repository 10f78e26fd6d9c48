#include "ailoop/cli.h"
#include "ailoop/budget.h"
#include "ailoop/feedback.h"
#include "ailoop/flow.h"
#include "ailoop/git.h"
#include "ailoop/run.h"
#include "ailoop/state.h"
#include "ailoop/strbuf.h"
#include "ailoop/util.h"

#include <dirent.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

struct nodes {
	struct al_node_state *v;
	size_t n, alloc;
	char **errors; /* damaged state files */
	size_t nerrors, errors_alloc;
};

/* Every orchestrator-output.md under nodes/, parents before children. */
static void collect(struct nodes *out, const char *dir)
{
	struct al_strbuf path = AL_STRBUF_INIT;
	struct al_node_state st;
	struct dirent **entries;
	int n, rc;

	al_strbuf_addf(&path, "%s/orchestrator-output.md", dir);
	rc = al_node_state_read(&st, path.buf);
	if (rc == 0) {
		AL_GROW(out->v, out->n, out->alloc);
		out->v[out->n++] = st;
	} else if (rc != AL_ENOTFOUND) {
		AL_GROW(out->errors, out->nerrors, out->errors_alloc);
		out->errors[out->nerrors++] = al_strdup(al_errmsg());
	}
	n = scandir(dir, &entries, NULL, alphasort);
	for (int i = 0; i < n; i++) {
		struct al_strbuf sub = AL_STRBUF_INIT;

		al_strbuf_addf(&sub, "%s/%s", dir, entries[i]->d_name);
		if (entries[i]->d_name[0] != '.' && strcmp(entries[i]->d_name, "logs") &&
		    entries[i]->d_type == DT_DIR)
			collect(out, sub.buf);
		al_strbuf_release(&sub);
		free(entries[i]);
	}
	if (n >= 0)
		free(entries);
	al_strbuf_release(&path);
}

/* The same from the tree of `rev`: a run whose branch is not checked out. */
static void collect_git(struct nodes *out, struct al_git *git, const char *rev, const char *dir)
{
	struct al_strbuf path = AL_STRBUF_INIT, text = AL_STRBUF_INIT;
	struct al_node_state st;
	char **names;
	size_t n;
	int rc;

	al_strbuf_addf(&path, "%s/orchestrator-output.md", dir);
	if (al_git_read(git, rev, path.buf, &text) == 0) {
		rc = al_node_state_parse(&st, path.buf, text.buf, text.len);
		if (rc == 0) {
			AL_GROW(out->v, out->n, out->alloc);
			out->v[out->n++] = st;
		} else {
			AL_GROW(out->errors, out->nerrors, out->errors_alloc);
			out->errors[out->nerrors++] = al_strdup(al_errmsg());
		}
	}
	if (al_git_ls(git, rev, dir, &names, &n) < 0)
		n = 0;
	for (size_t i = 0; i < n; i++) {
		char *sub = al_xprintf("%s/%s", dir, names[i]);

		if (names[i][0] != '.' && strcmp(names[i], "logs"))
			collect_git(out, git, rev, sub);
		free(sub);
	}
	al_strv_free(names, n);
	al_strbuf_release(&path);
	al_strbuf_release(&text);
}

static void nodes_release(struct nodes *ns)
{
	for (size_t i = 0; i < ns->n; i++)
		al_node_state_release(&ns->v[i]);
	for (size_t i = 0; i < ns->nerrors; i++)
		free(ns->errors[i]);
	free(ns->v);
	free(ns->errors);
}

/* What the run has used of its budgets, and the flow's limits (0: none, or unknown). */
struct budget {
	struct al_budget_use use;
	int64_t seconds;
	int max_calls, max_seconds, per_hour;
};

static void read_budget(struct budget *b, const struct al_run_state *st, const struct nodes *ns)
{
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
	b->seconds = ns->n ? ns->v[0].elapsed_ms / 1000 : 0; /* the root's clock */
	al_flow_free(flow);
	al_diags_release(&diags);
	free(dir);
}

static json_t *limit_json(int limit)
{
	return limit ? json_integer(limit) : json_null();
}

static json_t *budget_json(const struct budget *b)
{
	int64_t wait = b->use.wait_until ? b->use.wait_until - al_budget_now() : 0;

	return json_pack("{s:I, s:o, s:I, s:o, s:I, s:o, s:I}", "agent_calls",
			 (json_int_t)b->use.calls, "max_agent_calls", limit_json(b->max_calls),
			 "wall_seconds", (json_int_t)b->seconds, "max_wall_seconds",
			 limit_json(b->max_seconds), "agent_calls_last_hour",
			 (json_int_t)b->use.calls_last_hour, "max_agent_calls_per_hour",
			 limit_json(b->per_hour), "hourly_wait_seconds",
			 (json_int_t)(wait > 0 ? wait : 0));
}

static void print_budget(const struct budget *b)
{
	int64_t wait = b->use.wait_until ? b->use.wait_until - al_budget_now() : 0;

	printf("  agent calls:  %ld", b->use.calls);
	if (b->max_calls)
		printf(" of %d (limits.max_agent_calls)", b->max_calls);
	if (b->per_hour)
		printf("; %ld in the last hour, of %d (limits.max_agent_calls_per_hour)",
		       b->use.calls_last_hour, b->per_hour);
	printf("\n  time spent:   %lld s", (long long)b->seconds);
	if (b->max_seconds)
		printf(" of %d (limits.max_wall_seconds)", b->max_seconds);
	printf("\n");
	if (wait > 0)
		printf("  hourly limit: the next agent call waits %lld s\n", (long long)wait);
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

static void print_feedback(const struct al_feedback_log *log)
{
	size_t open = 0;

	for (size_t i = 0; i < log->n; i++) {
		const json_t *f = log->items[i];

		if (!al_feedback_is_open(f))
			continue;
		if (!open++)
			printf("  feedback:\n");
		printf("    %s %s -> %s: %s, %s (round %d of %d)\n",
		       json_string_value(json_object_get(f, "id")),
		       json_string_value(json_object_get(f, "from")),
		       json_string_value(json_object_get(f, "to")),
		       json_string_value(json_object_get(f, "type")),
		       json_string_value(json_object_get(f, "status")),
		       (int)json_integer_value(json_object_get(f, "round")), AL_FEEDBACK_MAX_ROUNDS);
	}
	if (!open)
		printf("  feedback:     none open%s\n", log->n ? "" : " (none sent)");
}

static int print_json(const struct al_run_state *st, const struct nodes *ns, const char *holder,
		      const char *from, const struct budget *b, const struct al_feedback_log *fb)
{
	json_t *o = json_object(), *stack = json_array(), *nodes = json_array(), *errs = json_array();
	char *text;

	for (size_t i = 0; i < st->nstack; i++)
		json_array_append_new(stack, json_string(st->stack[i]));
	for (size_t i = 0; i < ns->n; i++) {
		const struct al_node_state *s = &ns->v[i];

		json_array_append_new(nodes, json_pack("{s:s, s:s, s:s, s:i, s:i, s:s, s:s, s:b}",
						       "node_path", s->node_path, "type",
						       s->type ? s->type : "loop", "label", s->label,
						       "iteration", s->iteration, "max_iterations",
						       s->max_iterations, "phase",
						       al_phase_names[s->phase], "status", s->status,
						       "target_met", s->target_met));
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
	json_object_set_new(o, "status", json_string(st->status));
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
	json_object_set_new(o, "from_branch", from ? json_string(from) : json_null());
	json_object_set_new(o, "budget", budget_json(b));
	json_object_set_new(o, "open_feedback", feedback_json(fb));
	json_object_set_new(o, "nodes", nodes);
	json_object_set_new(o, "damaged", errs);
	text = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	printf("%s\n", text);
	free(text);
	json_decref(o);
	return 0;
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

static void print_text(const struct al_run_state *st, const struct nodes *ns, const char *holder,
		       const char *from, const struct budget *b, const struct al_feedback_log *fb)
{
	const char *task = st->task, *nl = strchr(task, '\n');

	printf("run %s: %s\n", st->run_id, st->status);
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
	if (from)
		printf("  read from:    the last commit of %s (not checked out)\n", from);
	print_budget(b);
	print_feedback(fb);
	printf("\n  %-32s %-8s %-11s %-10s %s\n", "node", "label", "iteration", "phase", "status");
	for (size_t i = 0; i < ns->n; i++) {
		const struct al_node_state *s = &ns->v[i];
		char it[32];

		if (s->type && strcmp(s->type, "loop")) /* runs once in its label */
			snprintf(it, sizeof(it), "%s", s->type);
		else
			snprintf(it, sizeof(it), "%d of %d", s->iteration, s->max_iterations);
		printf("  %*s%-*s %-8s %-11s %-10s %s", s->level * 2, "", 32 - s->level * 2,
		       s->node_path, s->label, it, al_phase_names[s->phase], s->status);
		if (!s->type || !strcmp(s->type, "loop"))
			breaker_text(&s->breaker);
		putchar('\n');
	}
	for (size_t i = 0; i < ns->nerrors; i++)
		printf("  damaged: %s\n", ns->errors[i]);
}

int cmd_status(int argc, char **argv)
{
	static const struct option longs[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 0 },
		{ NULL, 0, NULL, 0 },
	};
	struct nodes ns = { 0 };
	struct budget budget;
	struct al_feedback_log feedback = { 0 };
	struct al_run_state branch_st = { 0 };
	const struct al_run_state *st;
	struct al_run *run = NULL;
	struct al_git *git = NULL;
	char **ids = NULL, *holder = NULL, *nodes_dir, *found = NULL, *elsewhere = NULL;
	const char *id;
	bool json = false;
	size_t n = 0;
	int c, rc, code = 0;

	while ((c = al_cli_getopt(argc, argv, "", longs, "status", &code)) != -1) {
		if (c == '?')
			return code;
		json = true;
	}
	if ((code = al_cli_operands(argc, 0, 1, "status")) || (code = al_cli_enter_repo()))
		return code;
	id = optind < argc ? argv[optind] : NULL;
	if (al_runs_list(&ids, &n) < 0)
		n = 0;
	/* runs whose branch is not checked out are on their branches only */
	if (al_git_open(&git) == 0)
		found = al_cli_run_on_branches(git, id, false, &elsewhere);
	if (found && (id || !n || al_run_id_cmp(found, ids[0]) > 0)) {
		char *rev = al_xprintf("refs/heads/%s", elsewhere);
		char *path = al_xprintf("%s/%s/run-state.md", AL_RUNS_DIR, found);
		struct al_strbuf text = AL_STRBUF_INIT;

		rc = al_git_read(git, rev, path, &text);
		if (rc == 0)
			rc = al_run_state_parse(&branch_st, path, text.buf, text.len);
		if (rc == 0) {
			char *fb = al_xprintf("%s/%s/%s", AL_RUNS_DIR, found, AL_FEEDBACK_FILE);

			al_strbuf_reset(&text);
			if (al_git_read(git, rev, fb, &text) == 0)
				al_feedback_log_parse(&feedback, text.buf, text.len);
			free(fb);
			nodes_dir = al_xprintf("%s/%s/nodes", AL_RUNS_DIR, found);
			collect_git(&ns, git, rev, nodes_dir);
			free(nodes_dir);
		}
		al_strbuf_release(&text);
		free(path);
		free(rev);
		if (rc < 0) {
			code = al_cli_fail(al_cli_exit_code(rc), "%s", al_errmsg());
			goto done;
		}
		st = &branch_st;
	} else {
		if (!id && !n) {
			code = al_cli_fail(AL_EXIT_NOINPUT, "no runs in %s: start one with "
					   "'ailoop run \"TASK\"'", AL_RUNS_DIR);
			goto done;
		}
		if ((rc = al_run_open(&run, id ? id : ids[0])) < 0) {
			code = al_cli_fail(al_cli_exit_code(rc), "%s", al_errmsg());
			goto done;
		}
		free(elsewhere);
		elsewhere = NULL;
		holder = al_run_lock_holder(run->dir);
		nodes_dir = al_xprintf("%s/nodes", run->dir);
		collect(&ns, nodes_dir);
		free(nodes_dir);
		al_feedback_log_read(&feedback, run->dir);
		st = &run->st;
	}
	read_budget(&budget, st, &ns);
	if (json)
		print_json(st, &ns, holder, elsewhere, &budget, &feedback);
	else
		print_text(st, &ns, holder, elsewhere, &budget, &feedback);
done:
	al_feedback_log_release(&feedback);
	free(holder);
	nodes_release(&ns);
	al_run_state_release(&branch_st);
	al_run_free(run);
	al_git_free(git);
	al_runs_list_free(ids, n);
	free(found);
	free(elsewhere);
	return code;
}
