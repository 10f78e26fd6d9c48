#include "ailoop/cli/cli.h"
#include "ailoop/exec/budget.h"
#include "ailoop/git/git.h"
#include "ailoop/store/run.h"
#include "ailoop/store/runs.h"
#include "ailoop/base/fsutil.h"
#include "ailoop/base/strbuf.h"
#include "ailoop/base/util.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

/* `ailoop runs`: every run of the repository, checked out or not. */

/*
 * The agent calls the run made, from its call log (logs/, never committed,
 * stays in the work tree when its branch is not checked out); -1 if that
 * is not here (a clone).
 */
static long agent_calls(const char *id)
{
	char *dir = al_xprintf("%s/%s", AL_RUNS_DIR, id), *logs = al_xprintf("%s/logs", dir);
	struct al_budget_use use;
	long calls = -1;

	if (al_dir_exists(logs) && al_budget_read(dir, 0, &use) == 0)
		calls = use.calls;
	free(logs);
	free(dir);
	return calls;
}

/*
 * What the run is: its state's status, but a run that says "running" that
 * no live ailoop holds was killed (as ailoop status says it).
 */
static const char *status_of(const struct al_run_entry *e)
{
	char *dir, *holder;
	bool held;

	if (strcmp(e->st.status, "running"))
		return e->st.status;
	dir = al_xprintf("%s/%s", AL_RUNS_DIR, e->st.run_id);
	holder = al_run_lock_holder(dir);
	held = holder != NULL;
	free(dir);
	free(holder);
	return held ? "running" : "interrupted";
}

static int print_json(const struct al_run_list *l)
{
	json_t *a = json_array();
	char *text;

	for (size_t i = 0; i < l->n; i++) {
		const struct al_run_entry *e = &l->v[i];
		struct al_strbuf task = AL_STRBUF_INIT; /* JSON holds text: other bytes as U+FFFD */
		long calls = agent_calls(e->st.run_id);

		al_utf8_repair(&task, e->st.task, strlen(e->st.task));
		json_array_append_new(a, json_pack("{s:s, s:s, s:s, s:s?, s:s?, s:s?, s:s?, s:o, "
						   "s:o, s:s?}", "run_id", e->st.run_id, "task",
						   task.buf ? task.buf : "", "status", status_of(e),
						   "branch", e->st.branch, "base_branch",
						   e->st.base_branch, "started_at", e->st.started_at,
						   "updated_at", e->st.updated_at, "iterations",
						   e->iterations < 0 ? json_null()
								     : json_integer(e->iterations),
						   "agent_calls", calls < 0 ? json_null()
									    : json_integer(calls),
						   "read_from", e->from));
		al_strbuf_release(&task);
	}
	text = json_dumps(a, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(a);
	if (!text)
		return al_cli_fail(AL_EXIT_SOFTWARE, "cannot write the runs as JSON");
	printf("%s\n", text);
	free(text);
	return 0;
}

/* One line a run: its task's first line cut to what is left of 100 columns. */
static void print_text(const struct al_run_list *l)
{
	if (!l->n) {
		printf("no runs: start one with 'ailoop run \"TASK\"'\n");
		return;
	}
	printf("%-18s %-22s %5s %6s  %-16s  %-28s %s\n", "RUN", "STATUS", "ITER", "CALLS",
	       "STARTED", "BRANCH", "TASK");
	for (size_t i = 0; i < l->n; i++) {
		const struct al_run_entry *e = &l->v[i];
		const char *task = e->st.task, *eol = strchr(task, '\n');
		const char *started = e->st.started_at ? e->st.started_at : "-";
		long calls = agent_calls(e->st.run_id);
		int len = eol ? (int)(eol - task) : (int)strlen(task);
		char iter[16] = "-", ncalls[24] = "-";

		if (e->iterations >= 0)
			snprintf(iter, sizeof(iter), "%d", e->iterations);
		if (calls >= 0)
			snprintf(ncalls, sizeof(ncalls), "%ld", calls);
		/* 2026-11-28T06:50:12Z as 2026-11-28 06:50 */
		printf("%-18s %-22s %5s %6s  %.10s %.5s  %-28s %.*s%s\n", e->st.run_id, status_of(e),
		       iter, ncalls, started, strlen(started) > 11 ? started + 11 : "",
		       e->st.branch ? e->st.branch : "(detached HEAD)", len > 40 ? 37 : len, task,
		       len > 40 || eol ? "..." : "");
	}
}

int cmd_runs(int argc, char **argv)
{
	static const struct option longs[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 0 },
		{ NULL, 0, NULL, 0 },
	};
	struct al_run_list list = { 0 };
	struct al_git *git = NULL;
	bool json = false;
	int c, rc, code = 0;

	while ((c = al_cli_getopt(argc, argv, "", longs, &code)) != -1) {
		if (c == '?')
			return code;
		json = true;
	}
	if ((code = al_cli_operands(argc, argv, 0, 0)) || (code = al_cli_enter_repo()))
		return code;
	if ((rc = al_git_open(&git)) < 0) {
		code = al_cli_fail(AL_EXIT_NOINPUT, "%s", al_errmsg());
		goto done;
	}
	al_git_show_only(); /* what it reads is shown, never built on */
	if ((rc = al_runs_all(git, &list)) < 0)
		code = al_cli_fail(AL_EXIT_SOFTWARE, "%s", al_errmsg());
	else if (json)
		code = print_json(&list);
	else
		print_text(&list);
done:
	al_run_list_release(&list);
	al_git_free(git);
	return code;
}
