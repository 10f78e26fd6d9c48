#include "ailoop/cli.h"
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

static void nodes_release(struct nodes *ns)
{
	for (size_t i = 0; i < ns->n; i++)
		al_node_state_release(&ns->v[i]);
	for (size_t i = 0; i < ns->nerrors; i++)
		free(ns->errors[i]);
	free(ns->v);
	free(ns->errors);
}

static int print_json(const struct al_run *run, const struct nodes *ns, const char *holder)
{
	json_t *o = json_object(), *stack = json_array(), *nodes = json_array(), *errs = json_array();
	char *text;

	for (size_t i = 0; i < run->st.nstack; i++)
		json_array_append_new(stack, json_string(run->st.stack[i]));
	for (size_t i = 0; i < ns->n; i++) {
		const struct al_node_state *s = &ns->v[i];

		json_array_append_new(nodes, json_pack("{s:s, s:s, s:i, s:i, s:s, s:s, s:b}",
						       "node_path", s->node_path, "label", s->label,
						       "iteration", s->iteration, "max_iterations",
						       s->max_iterations, "phase",
						       al_phase_names[s->phase], "status", s->status,
						       "target_met", s->target_met));
	}
	for (size_t i = 0; i < ns->nerrors; i++)
		json_array_append_new(errs, json_string(ns->errors[i]));
	json_object_set_new(o, "run_id", json_string(run->st.run_id));
	json_object_set_new(o, "status", json_string(run->st.status));
	json_object_set_new(o, "branch", run->st.branch ? json_string(run->st.branch) : json_null());
	json_object_set_new(o, "base_branch",
			    run->st.base_branch ? json_string(run->st.base_branch) : json_null());
	json_object_set_new(o, "task", json_string(run->st.task));
	json_object_set_new(o, "flow", json_string(run->st.flow));
	json_object_set_new(o, "active_node_path", run->st.active_node_path
				   ? json_string(run->st.active_node_path) : json_null());
	json_object_set_new(o, "execution_stack", stack);
	json_object_set_new(o, "started_at", json_string(run->st.started_at ? run->st.started_at : ""));
	json_object_set_new(o, "updated_at", json_string(run->st.updated_at ? run->st.updated_at : ""));
	json_object_set_new(o, "locked_by", holder ? json_string(holder) : json_null());
	json_object_set_new(o, "nodes", nodes);
	json_object_set_new(o, "damaged", errs);
	text = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	printf("%s\n", text);
	free(text);
	json_decref(o);
	return 0;
}

static void print_text(const struct al_run *run, const struct nodes *ns, const char *holder)
{
	const char *task = run->st.task, *nl = strchr(task, '\n');

	printf("run %s: %s\n", run->st.run_id, run->st.status);
	printf("  task:         %.*s%s\n", nl ? (int)(nl - task) : (int)strlen(task), task,
	       nl ? " …" : "");
	printf("  flow:         %s\n", run->st.flow);
	if (run->st.branch)
		printf("  branch:       %s (from %s)\n", run->st.branch,
		       run->st.base_branch ? run->st.base_branch : "-");
	printf("  started:      %s\n  updated:      %s\n",
	       run->st.started_at ? run->st.started_at : "-",
	       run->st.updated_at ? run->st.updated_at : "-");
	if (run->st.active_node_path)
		printf("  active node:  %s\n", run->st.active_node_path);
	if (holder)
		printf("  locked by:    %s\n", holder);
	printf("\n  %-32s %-8s %-11s %-10s %s\n", "node", "label", "iteration", "phase", "status");
	for (size_t i = 0; i < ns->n; i++) {
		const struct al_node_state *s = &ns->v[i];
		char it[32];

		snprintf(it, sizeof(it), "%d of %d", s->iteration, s->max_iterations);
		printf("  %*s%-*s %-8s %-11s %-10s %s\n", s->level * 2, "", 32 - s->level * 2,
		       s->node_path, s->label, it, al_phase_names[s->phase], s->status);
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
	struct al_run *run = NULL;
	char **ids = NULL, *holder, *nodes_dir;
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
	if (!id) {
		if (al_runs_list(&ids, &n) < 0 || !n) {
			al_runs_list_free(ids, n);
			return al_cli_fail(AL_EXIT_NOINPUT, "no runs in %s: start one with "
					   "'ailoop run \"TASK\"'", AL_RUNS_DIR);
		}
		id = ids[0];
	}
	if ((rc = al_run_open(&run, id)) < 0) {
		code = al_cli_fail(al_cli_exit_code(rc), "%s", al_errmsg());
		goto done;
	}
	holder = al_run_lock_holder(run->dir);
	nodes_dir = al_xprintf("%s/nodes", run->dir);
	collect(&ns, nodes_dir);
	if (json)
		print_json(run, &ns, holder);
	else
		print_text(run, &ns, holder);
	free(nodes_dir);
	free(holder);
	nodes_release(&ns);
done:
	al_run_free(run);
	al_runs_list_free(ids, n);
	return code;
}
