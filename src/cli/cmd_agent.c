#include "ailoop/cli/cli.h"
#include "ailoop/exec/exec.h"
#include "ailoop/exec/invoke.h"
#include "ailoop/exec/sensor.h"
#include "ailoop/base/fsutil.h"
#include "ailoop/base/progress.h"
#include "ailoop/base/signals.h"
#include "ailoop/base/util.h"
#include "ailoop/git/git.h"
#include "ailoop/model/md.h"
#include "ailoop/store/memory.h"
#include "ailoop/store/run.h"

#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*
 * `ailoop agent FILE [--node PATH]`: one call of one agent of the flow, as
 * a run makes it (its prompt, environment, command line and the reading of
 * its output), to try an agent file before a whole run. Nothing is
 * committed and no run's state is touched: the call gets a run directory
 * of its own in a temporary directory, removed after it unless --keep.
 * What the agent changes in the work tree stays there.
 */

struct agent_opts {
	const char *flow, *node, *task, *input;
	bool keep;
};

static bool names(const struct al_agent_ref *ref, const char *path)
{
	return ref->path && ref->agent && !strcmp(ref->path, path);
}

/* Where `path` is used in `node`: its role (and sensor), or -1; `*agent`: the agent. */
static int role_in(const struct al_node *node, const char *path, const struct al_sensor **sensor,
		   const struct al_agent **agent)
{
	for (size_t i = 0; i < node->nsensors; i++)
		if (names(&node->sensors[i].ref, path)) {
			*sensor = &node->sensors[i];
			*agent = node->sensors[i].ref.agent;
			return AL_ROLE_SENSOR;
		}
	if (names(&node->controller, path)) {
		*agent = node->controller.agent;
		return AL_ROLE_CONTROLLER;
	}
	if (names(&node->actuator, path)) {
		*agent = node->actuator.agent;
		return AL_ROLE_ACTUATOR;
	}
	if (names(&node->action_agent, path)) {
		*agent = node->action_agent.agent;
		return AL_ROLE_ACTION;
	}
	return -1;
}

struct find {
	const char *path;
	const struct al_node *node;
};

static void find_user(struct al_node *n, void *data)
{
	struct find *f = data;
	const struct al_sensor *s;
	const struct al_agent *a;

	if (!f->node && role_in(n, f->path, &s, &a) >= 0)
		f->node = n;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

/* What the run would read from the output: a sensor's status and metrics, a controller's verdict. */
static void print_parsed(const struct al_agent *a, enum al_role role, const char *output,
			 bool keep)
{
	struct al_md md = AL_MD_INIT;
	const struct al_val *metrics;
	char *summary;

	if (al_md_read(&md, output) < 0) {
		printf("output: none that reads\n");
		al_md_release(&md);
		return;
	}
	if (keep)
		printf("output: %s\n", output);
	if (role == AL_ROLE_SENSOR) {
		printf("status: %s\n", al_md_str(&md, "status") ? al_md_str(&md, "status") : "(none)");
		metrics = al_md_get(&md, "metrics");
		if (metrics && metrics->kind != AL_VAL_MAP)
			metrics = NULL;
		for (size_t i = 0; metrics && i < metrics->n; i++) {
			const struct al_val *v = AL_VAL_VALUE(metrics, i);

			if (v->kind == AL_VAL_SCALAR && !al_val_is_null(v))
				printf("metric %s: %s\n", AL_VAL_KEY(metrics, i)->str, v->str);
		}
		/* what the file leaves out is what a pattern did not find: the thing to fix */
		for (size_t i = 0; i < a->nmetrics; i++) {
			const struct al_val *v = metrics ? al_val_get(metrics, a->metrics[i].name) : NULL;

			if (!v || v->kind != AL_VAL_SCALAR || al_val_is_null(v))
				printf("metric %s: null (its pattern matched nothing)\n",
				       a->metrics[i].name);
		}
	} else if (role == AL_ROLE_CONTROLLER) {
		printf("target-met: %s\n", al_md_str(&md, "target-met") ? al_md_str(&md, "target-met")
									  : "(none)");
		printf("action plan: %s\n", strstr(md.body ? md.body : "", "## Action Plan")
						    ? "given" : "none");
	}
	summary = al_output_summary(output, "(none)");
	printf("summary: %s\n", summary);
	free(summary);
	al_md_release(&md);
}

/* The call, in the flow `flow` loaded from the root, of the agent at `path`. */
static int try_agent(const struct agent_opts *o, struct al_flow *flow, const char *path)
{
	struct find f = { path, NULL };
	const struct al_sensor *sensor = NULL;
	const struct al_agent *agent = NULL;
	struct al_node one;
	struct al_exec ex = { 0 };
	struct al_progress progress;
	struct al_run *run = NULL;
	struct al_call call = { 0 };
	struct al_call_ctx ctx;
	char tmpl[PATH_MAX] = "", cwd[PATH_MAX];
	char *dir = NULL, *output = NULL, *task = NULL, *logs = NULL;
	const char *tmp = getenv("TMPDIR");
	int role, rc, code = 0;

	if (o->node) {
		f.node = al_flow_find(flow, o->node);
		if (!f.node)
			return al_cli_fail(AL_EXIT_USAGE, "no node '%s' in %s", o->node, flow->file);
	} else {
		al_flow_walk(flow->root, find_user, &f);
		if (!f.node)
			return al_cli_fail(AL_EXIT_USAGE, "no node of %s uses '%s' (its agents are "
					   "named by their path from the repository's root)",
					   flow->file, path);
	}
	role = role_in(f.node, path, &sensor, &agent);
	if (role < 0)
		return al_cli_fail(AL_EXIT_USAGE, "node '%s' does not use '%s'", f.node->path, path);
	snprintf(tmpl, sizeof(tmpl), "%s/ailoop-agent.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if ((rc = al_git_open(&ex.git)) < 0) {
		*tmpl = '\0';
		code = al_cli_fail(al_cli_exit_code(rc), "%s", al_errmsg());
		goto done;
	}
	if (!mkdtemp(tmpl) || !getcwd(cwd, sizeof(cwd))) {
		code = al_cli_fail(AL_EXIT_SOFTWARE, "cannot make a directory for the call in "
				   "'%s': %s", tmp && *tmp ? tmp : "/tmp", strerror(errno));
		*tmpl = '\0';
		goto done;
	}
	run = al_calloc(1, sizeof(*run));
	run->lock_fd = run->events_fd = -1;
	run->st.run_id = al_strdup("agent-try");
	run->st.task = al_strdup(o->task);
	run->st.status = al_strdup("running");
	run->dir = al_strdup(tmpl);
	run->abs_dir = al_strdup(tmpl);
	run->state_path = al_xprintf("%s/run-state.md", tmpl);
	run->events_path = al_xprintf("%s/events.jsonl", tmpl);
	dir = al_xprintf("%s/nodes/%s", tmpl, f.node->path);
	al_progress_init(&progress, false);
	ex.flow = flow;
	ex.run = run;
	ex.progress = &progress;
	ex.root = al_strdup(cwd);
	ex.agents_file = al_xprintf("%s/" AL_RUN_AGENTS_FILE, tmpl);
	logs = al_xprintf("%s/" AL_RUN_AGENTS_DIR, tmpl);
	task = al_xprintf("%s/task.md", dir); /* AILOOP_TASK_FILE, as a node's entry writes it */
	if ((rc = al_mkdirs(logs)) < 0 || (rc = al_mkdirs(dir)) < 0 ||
	    (rc = al_write_atomic(task, o->task, strlen(o->task))) < 0 ||
	    (rc = al_memory_open(&ex.memory, tmpl)) < 0) {
		code = al_cli_fail(AL_EXIT_SOFTWARE, "%s", al_errmsg());
		goto done;
	}
	printf("agent %s: the %s of node '%s'%s%s%s\n", path, al_role_names[role], f.node->path,
	       sensor ? " (sensor '" : "", sensor ? sensor->name : "", sensor ? "')" : "");
	al_signals_install();
	if (role == AL_ROLE_SENSOR) {
		/* the node with this one sensor: measured, its output written and read, as a run does */
		one = *f.node;
		one.sensors = (struct al_sensor *)sensor;
		one.nsensors = 1;
		one.sensors_parallel = false;
		rc = al_sensors_measure(&ex, &one, dir, "1", o->task, 0, true, NULL);
		output = al_sensor_output_path(dir, sensor->name);
	} else {
		output = al_xprintf("%s/%s-output.md", dir, al_role_names[role]);
		ctx = (struct al_call_ctx){
			.agent = agent, .role = role,
			.node = f.node, .label = "1", .dir = dir, .input = o->input,
			.output = output, .task = o->task,
		};
		rc = al_call_run(&ex, &ctx, &call);
		al_call_release(&call);
	}
	al_progress_end(&progress);
	print_parsed(agent, role, output, o->keep);
	/* an agent that failed ends a run in error, exit 1: so does its try */
	if (rc < 0)
		code = al_cli_fail(rc == AL_EAGENT ? AL_EXIT_FAILED : al_cli_exit_code(rc), "%s",
				   al_errmsg());
	if (o->keep)
		printf("files of the call (prompt, log, output): %s\n", tmpl);
done:
	if (ex.git)
		al_git_free(ex.git);
	al_memory_free(ex.memory);
	free(ex.root);
	free(ex.agents_file);
	al_run_free(run);
	if (*tmpl && !o->keep)
		nftw(tmpl, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	free(dir);
	free(logs);
	free(task);
	free(output);
	return code;
}

int cmd_agent(int argc, char **argv)
{
	static const struct option longs[] = {
		{ "flow", required_argument, NULL, 'f' },
		{ "node", required_argument, NULL, 'n' },
		{ "task", required_argument, NULL, 't' },
		{ "input", required_argument, NULL, 'i' },
		{ "keep", no_argument, NULL, 'k' },
		{ "help", no_argument, NULL, 0 },
		{ NULL, 0, NULL, 0 },
	};
	struct agent_opts o = { .task = "try this agent" };
	struct al_diags diags = AL_DIAGS_INIT;
	struct al_flow *flow = NULL;
	char *path = NULL, *input = NULL;
	int c, code = 0;

	while ((c = al_cli_getopt(argc, argv, "f:", longs, &code)) != -1) {
		switch (c) {
		case '?': return code;
		case 'f': o.flow = optarg; break;
		case 'n': o.node = optarg; break;
		case 't': o.task = optarg; break;
		case 'i': o.input = optarg; break;
		case 'k': o.keep = true; break;
		}
	}
	if ((code = al_cli_operands(argc, argv, 1, 1)))
		return code;
	/* FILE as the flow names it, from the repository's root; --input from here */
	path = al_strdup(argv[optind] + (al_starts_with(argv[optind], "./") ? 2 : 0));
	if (o.input)
		input = realpath(o.input, NULL);
	if (o.input && !input) {
		code = al_cli_fail(AL_EXIT_NOINPUT, "cannot read the input '%s'", o.input);
		goto done;
	}
	o.input = input;
	if ((code = al_cli_load_flow(o.flow, &diags, &flow)) == 0)
		code = try_agent(&o, flow, path);
done:
	al_flow_free(flow);
	al_diags_release(&diags);
	free(path);
	free(input);
	return code;
}
