#include "ailoop/cli/cli.h"
#include "ailoop/store/run_view.h"
#include "ailoop/exec/exec.h"
#include "ailoop/base/fsutil.h"
#include "ailoop/git/git.h"
#include "ailoop/store/run.h"
#include "ailoop/base/sha256.h"
#include "ailoop/base/signals.h"
#include "ailoop/base/util.h"
#include "ailoop/model/runner.h"
#include "ailoop/proc/proc.h"

#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct run_opts {
	const char *flow;
	const char *task_file;
	bool new_run, no_branch, allow_dirty, dry_run, json, quiet, from_here;
};

/*
 * "Make the tests pass!" -> "make-the-tests-pass", at most 50 characters,
 * cut at a word: a longer task ends at the last whole word that fits.
 */
static char *slug(const char *task)
{
	struct al_strbuf sb = AL_STRBUF_INIT;
	const char *p = task;

	for (; *p && sb.len < 50; p++) {
		unsigned char c = (unsigned char)*p;

		if (isalnum(c) && c < 0x80)
			al_strbuf_addch(&sb, tolower(c));
		else if (sb.len && sb.buf[sb.len - 1] != '-')
			al_strbuf_addch(&sb, '-');
	}
	/* cut in a word (the next character goes on with it): back to its start */
	if (isalnum((unsigned char)*p) && (unsigned char)*p < 0x80 && sb.buf[sb.len - 1] != '-' &&
	    memrchr(sb.buf, '-', sb.len))
		al_strbuf_setlen(&sb, (size_t)((char *)memrchr(sb.buf, '-', sb.len) - sb.buf));
	while (sb.len && sb.buf[sb.len - 1] == '-')
		al_strbuf_setlen(&sb, sb.len - 1);
	if (!sb.len)
		al_strbuf_adds(&sb, "run");
	return al_strbuf_detach(&sb, NULL);
}

static int read_task(const char *arg, const char *file, char **out)
{
	struct al_strbuf sb = AL_STRBUF_INIT;

	*out = NULL;
	if (file && arg)
		return al_cli_fail(AL_EXIT_USAGE, "give the task as an argument or with "
				   "--task-file, not both");
	if (file && al_strbuf_read_file(&sb, file, 16u << 20) < 0) {
		int e = errno;

		al_strbuf_release(&sb);
		return al_cli_fail(AL_EXIT_NOINPUT, "cannot read the task file '%s': %s", file,
				   al_strbuf_read_strerror(e));
	}
	if (arg && !strcmp(arg, "-")) {
		char buf[65536];
		ssize_t n;

		while ((n = read(0, buf, sizeof(buf))) != 0) {
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0) {
				int e = errno;

				al_strbuf_release(&sb);
				return al_cli_fail(AL_EXIT_NOINPUT,
						   "cannot read the task from standard input: %s",
						   strerror(e));
			}
			al_strbuf_add(&sb, buf, (size_t)n);
		}
	} else if (arg) {
		al_strbuf_adds(&sb, arg);
	}
	/* blank is empty: agents asked to do nothing cost as much as any */
	if (!sb.len || strspn(sb.buf, " \t\r\n\v\f") == sb.len) {
		al_strbuf_release(&sb);
		return al_cli_fail(AL_EXIT_USAGE, "the task is empty");
	}
	if (strlen(sb.buf) != sb.len) { /* the task is a C string everywhere after this */
		al_strbuf_release(&sb);
		return al_cli_fail(AL_EXIT_USAGE, "the task contains a NUL byte: give text");
	}
	*out = al_strbuf_detach(&sb, NULL);
	return 0;
}

static void print_arg(const char *a)
{
	bool plain = *a != '\0';

	for (const char *p = a; *p; p++)
		plain &= isalnum((unsigned char)*p) || strchr("-_./=:,@+{}", *p);
	if (plain) {
		fputs(a, stdout);
		return;
	}
	putchar('\'');
	for (const char *p = a; *p; p++)
		fputs(*p == '\'' ? "'\\''" : (char[]){ *p, 0 }, stdout);
	putchar('\'');
}

/* The command line an agent runs as at its first call (a runner's, its prompt as <prompt>). */
static char **agent_argv(const struct al_flow *flow, const char *role, const struct al_agent *a)
{
	const struct al_runner *r;
	struct al_runner_vars vars = { 0 };
	char **argv;
	size_t n = 0;

	if (a->command_sh || a->command_argv) {
		const char *const *from = a->command_argv ? (const char *const *)a->command_argv
							 : (const char *const[]){ "sh", "-c", a->command_sh, NULL };

		while (from[n])
			n++;
		argv = al_calloc(n + 1, sizeof(*argv));
		for (size_t i = 0; i < n; i++)
			argv[i] = al_strdup(from[i]);
		return argv;
	}
	r = al_runners_find(&flow->runners, a->runner ? a->runner : flow->default_runner);
	vars.model = al_agent_model(a, r->name, NULL);
	vars.tools = a->tools;
	vars.disallowed_tools = a->disallowed_tools;
	vars.commands = strcmp(role, "controller") != 0;
	vars.prompt = "<prompt>";
	vars.prompt_file = "<prompt-file>";
	/* an agent that continues its session: its first call's, which keeps it
	 * (a later one resumes it: --resume ID) */
	vars.session_keep = a->session_continue;
	vars.session_new = "<session-id>"; /* one ailoop chooses, for a runner that gives it */
	argv = al_runner_argv(r, &vars);
	if (r->prompt == AL_PROMPT_STDIN) { /* shown as a redirection */
		while (argv[n])
			n++;
		argv = al_realloc(argv, (n + 3) * sizeof(*argv));
		argv[n] = al_strdup("<");
		argv[n + 1] = al_strdup("<prompt>");
		argv[n + 2] = NULL;
	}
	return argv;
}

/* The plan as JSON (--dry-run --json): the node's agents and the nodes below. */
static json_t *plan_json(const struct al_flow *flow, const struct al_node *n);

static void add_agent_json(json_t *agents, const struct al_flow *flow, const char *role,
			   const char *name, const struct al_agent_ref *ref)
{
	char **argv = agent_argv(flow, role, ref->agent);
	json_t *args = json_array();

	for (size_t i = 0; argv[i]; i++)
		json_array_append_new(args, json_string(argv[i]));
	json_array_append_new(agents, json_pack("{s:s, s:s?, s:s, s:o}", "role", role, "name",
						name, "file", ref->path, "argv", args));
	al_argv_free(argv);
}

static json_t *plan_json(const struct al_flow *flow, const struct al_node *n)
{
	json_t *o = json_pack("{s:s, s:s}", "path", n->path, "type", al_node_type_name(n->type));
	json_t *agents = json_array(), *children = json_array();
	struct al_strbuf cond = AL_STRBUF_INIT;

	if (n->type == AL_NODE_LOOP)
		json_object_set_new(o, "max_iterations", json_integer(n->max_iterations));
	if (n->timeout_seconds)
		json_object_set_new(o, "timeout_seconds", json_integer(n->timeout_seconds));
	if (n->condition) {
		al_condition_describe(n->condition, &cond);
		json_object_set_new(o, "condition", json_string(cond.buf));
	}
	al_strbuf_release(&cond);
	if (n->type == AL_NODE_LOOP && n->sensor_form) {
		for (size_t i = 0; i < n->nsensors; i++)
			add_agent_json(agents, flow, "sensor", n->sensors[i].name, &n->sensors[i].ref);
		if (!n->builtin_all_pass)
			add_agent_json(agents, flow, "controller", NULL, &n->controller);
		if (n->strategy == AL_STRATEGY_DIRECT)
			add_agent_json(agents, flow, "actuator", NULL, &n->actuator);
		else
			json_array_append_new(children, plan_json(flow, n->child));
	} else if (n->type == AL_NODE_ACTION && !n->break_loop) {
		add_agent_json(agents, flow, "action", NULL, &n->action_agent);
	}
	if (n->then_branch)
		json_object_set_new(o, "then", plan_json(flow, n->then_branch));
	if (n->else_branch)
		json_object_set_new(o, "else", plan_json(flow, n->else_branch));
	for (size_t i = 0; i < n->nchildren; i++)
		json_array_append_new(children, plan_json(flow, n->children[i]));
	json_object_set_new(o, "agents", agents);
	json_object_set_new(o, "children", children);
	return o;
}

static void print_agent(const struct al_flow *flow, const char *role, const char *name,
			const struct al_agent_ref *ref, int depth)
{
	char **argv = agent_argv(flow, role, ref->agent);

	printf("%*s%s%s%s: %s\n%*s  $ ", depth * 2, "", role, name ? " " : "", name ? name : "",
	       ref->path, depth * 2, "");
	for (size_t i = 0; argv[i]; i++) {
		printf("%s", i ? " " : "");
		if (!strcmp(argv[i], "<") && argv[i + 1] && !strcmp(argv[i + 1], "<prompt>")) {
			fputs("< <prompt>", stdout); /* the redirection agent_argv() shows */
			i++;
		} else {
			print_arg(argv[i]);
		}
	}
	putchar('\n');
	al_argv_free(argv);
}

static void print_plan(const struct al_flow *flow, const struct al_node *n, int depth);

static void print_sensor_loop(const struct al_flow *flow, const struct al_node *n, int depth)
{
	printf("%*s%s: %s loop, at most %d iteration%s", depth * 2, "", n->path,
	       n->sensors_parallel ? "parallel-sensor" : "sensor", n->max_iterations,
	       n->max_iterations == 1 ? "" : "s");
	if (n->timeout_seconds)
		printf(", timeout %ds", n->timeout_seconds);
	putchar('\n');
	for (size_t i = 0; i < n->nsensors; i++)
		print_agent(flow, "sensor", n->sensors[i].name, &n->sensors[i].ref, depth + 1);
	if (n->builtin_all_pass)
		printf("%*scontroller: %s\n", depth * 2 + 2, "", AL_BUILTIN_ALL_PASS);
	else
		print_agent(flow, "controller", NULL, &n->controller, depth + 1);
	if (n->strategy == AL_STRATEGY_DIRECT) {
		print_agent(flow, "actuator", NULL, &n->actuator, depth + 1);
	} else {
		printf("%*sactuator: the child loop, with the action plan as its task\n",
		       depth * 2 + 2, "");
		print_plan(flow, n->child, depth + 1);
	}
}

/* A ReAcTree node: its kind, what decides, then its children. */
static void print_control(const struct al_flow *flow, const struct al_node *n, int depth)
{
	static const char *const exits[] = { "condition_true", "condition_false", "manual_break" };
	struct al_strbuf cond = AL_STRBUF_INIT;

	if (n->condition)
		al_condition_describe(n->condition, &cond);
	printf("%*s%s: %s", depth * 2, "", n->path,
	       n->type == AL_NODE_LOOP ? "loop-until" : al_node_type_name(n->type));
	if (n->type == AL_NODE_LOOP)
		printf(", at most %d iteration%s, exit on %s", n->max_iterations,
		       n->max_iterations == 1 ? "" : "s", exits[n->exit_on]);
	if (cond.len)
		printf(" (%s)", cond.buf);
	if (n->type == AL_NODE_ACTION && n->skill)
		printf(", skill %s", n->skill);
	if (n->timeout_seconds)
		printf(", timeout %ds", n->timeout_seconds);
	putchar('\n');
	al_strbuf_release(&cond);
	if (n->type == AL_NODE_ACTION) {
		if (n->break_loop)
			printf("%*sends the nearest loop\n", depth * 2 + 2, "");
		else
			print_agent(flow, "action", NULL, &n->action_agent, depth + 1);
	}
	if (n->then_branch || n->else_branch) {
		printf("%*sthen: %s\n", depth * 2 + 2, "", n->then_branch ? "" : "(nothing)");
		if (n->then_branch)
			print_plan(flow, n->then_branch, depth + 2);
		printf("%*selse: %s\n", depth * 2 + 2, "", n->else_branch ? "" : "(nothing)");
		if (n->else_branch)
			print_plan(flow, n->else_branch, depth + 2);
	}
	for (size_t i = 0; i < n->nchildren; i++)
		print_plan(flow, n->children[i], depth + 1);
}

static void print_plan(const struct al_flow *flow, const struct al_node *n, int depth)
{
	if (n->type == AL_NODE_LOOP && n->sensor_form)
		print_sensor_loop(flow, n, depth);
	else
		print_control(flow, n, depth);
}

/*
 * The run whose branch `current` is (its state here names it as its own,
 * and another branch as its base), or NULL. Caller frees; *base its base
 * branch (caller frees).
 */
static char *run_of_branch(const char *current, char **base)
{
	char **ids = NULL, *found = NULL;
	size_t n = 0;

	*base = NULL;
	if (!current || al_runs_list(&ids, &n) < 0)
		n = 0;
	for (size_t i = 0; i < n && !found; i++) {
		char *path = al_xprintf("%s/%s/run-state.md", AL_RUNS_DIR, ids[i]);
		struct al_run_state st;

		if (al_run_state_read(&st, path) == 0) {
			if (st.branch && st.base_branch && !strcmp(st.branch, current) &&
			    strcmp(st.base_branch, current)) {
				found = al_strdup(ids[i]);
				*base = al_strdup(st.base_branch);
			}
			al_run_state_release(&st);
		}
		free(path);
	}
	al_runs_list_free(ids, n);
	return found;
}

/*
 * A new run from another run's branch starts where that run started, on
 * its base branch: built on the other run's commits, it would carry its
 * state files and bookkeeping, and land them with its own. Checks that
 * branch out (refusing, with both ways on, when a paused run's state is in
 * the way); --from-here keeps HEAD. Returns 0 or the exit status.
 */
static int start_from_base(const struct run_opts *o, struct al_git *git, char **base,
			   char oid[AL_OID_HEX])
{
	char *other, *other_base = NULL, *conflict = NULL;
	int rc, code = 0;

	if (o->no_branch || o->from_here || !(other = run_of_branch(*base, &other_base)))
		return 0;
	if (!al_git_branch_exists(git, other_base))
		goto done; /* its base branch is gone: nowhere else to start */
	if (!o->quiet)
		fprintf(stderr, "ailoop: HEAD is on run %s's branch %s: the new run starts from its base "
			"branch %s (--from-here starts it from %s)\n", other, *base, other_base,
			*base);
	if ((rc = al_git_checkout(git, other_base, &conflict)) < 0) {
		char *why = conflict ? al_xprintf("'%s' is in the way", conflict)
				     : al_strdup(al_errmsg());

		code = al_cli_fail(conflict ? AL_EXIT_USAGE : al_cli_exit_code(rc),
				   "cannot check out %s, run %s's base branch, to start from it: %s; "
				   "resume run %s first, or start from here with --from-here",
				   other_base, other, why, other);
		free(why);
		goto done;
	}
	free(*base);
	*base = NULL;
	if ((rc = al_git_head(git, base, oid)) < 0)
		code = al_cli_fail(AL_EXIT_SOFTWARE, "%s", al_errmsg());
done:
	free(other);
	free(other_base);
	free(conflict);
	return code;
}

static int start_run(const struct run_opts *o, struct al_flow *flow, char *task)
{
	struct al_run_state init = { 0 };
	struct al_progress progress;
	struct al_exec ex = { 0 };
	struct al_result res = { 0 };
	struct al_git *git = NULL;
	struct al_run *run = NULL;
	char oid[AL_OID_HEX], sha[65], *base = NULL, *branch = NULL, *dirty = NULL, *name;
	char **taken = NULL;
	size_t ntaken = 0;
	int rc, code, lock_fd = -1;

	if ((rc = al_git_open(&git)) < 0 || (rc = al_git_head(git, &base, oid)) < 0) {
		code = al_cli_fail(AL_EXIT_NOINPUT, "%s", al_errmsg());
		goto done;
	}
	/* before anything is looked at: two ailoops started at once must not both go on */
	if ((code = al_cli_lock_worktree(git, &lock_fd)) != 0 ||
	    al_cli_check_resumable(o->new_run, o->json, lock_fd, &code))
		goto done;
	al_cli_ignore_runs(git); /* before the clean check: what it reads is as the run has it */
	if (!o->allow_dirty && (rc = al_git_dirty(git, &dirty)) != 0) {
		code = rc < 0 ? al_cli_fail(AL_EXIT_SOFTWARE, "%s", al_errmsg())
			      : al_cli_fail(AL_EXIT_USAGE, "the work tree has uncommitted changes "
					    "('%s'): commit or stash them, or pass --allow-dirty", dirty);
		goto done;
	}
	if ((code = start_from_base(o, git, &base, oid)) != 0)
		goto done;
	if (o->no_branch && base) {
		branch = al_strdup(base);
	} else if (!o->no_branch) {
		char *s = slug(task), *blocker = NULL;

		name = al_xprintf("ai-loop/%s", s);
		branch = al_git_branch_free_name(git, name, &blocker);
		free(s);
		if (!branch) { /* before anything of the run is written */
			code = al_cli_fail(AL_EXIT_USAGE, "the branch '%s' is in the way of the run's "
					   "branch '%s': git cannot have both; rename it ('git branch "
					   "-m %s NEW') or run with --no-branch", blocker, name,
					   blocker);
			free(blocker);
			free(name);
			goto done;
		}
		free(name);
	} /* else no branch: the run follows a detached HEAD */
	if (!base)
		base = al_strndup(oid, 12);
	al_sha256_hex(flow->text, flow->text_len, sha);
	init.task = task;
	init.flow = flow->file;
	init.flow_sha256 = sha;
	init.flow_sha256_except_limits = (char *)al_flow_sha256_except_limits(flow);
	init.branch = branch;
	init.base_branch = base;
	al_signals_install(); /* from here on a signal pauses the run, whenever it comes */
	/* a run id another branch's run has is not free, though its directory is not here */
	al_run_branch_ids(git, &taken, &ntaken);
	rc = al_run_create(&run, &init, taken, ntaken);
	al_strv_free(taken, ntaken);
	/* the run records its branch first: a resume can make a branch never made */
	if (rc < 0 ||
	    (!o->no_branch && (rc = al_git_branch_create(git, branch)) < 0) ||
	    (rc = al_git_follow(git)) < 0) {
		code = al_cli_fail(al_cli_exit_code(rc), "%s", al_errmsg());
		goto done;
	}
	al_worktree_lock_name(lock_fd, run->st.run_id);
	al_progress_init(&progress, o->quiet);
	if (!o->no_branch)
		al_progress_note(&progress, "ailoop: run %s on branch %s (from %s)",
				 run->st.run_id, branch, base);
	else
		al_progress_note(&progress, "ailoop: run %s on %s", run->st.run_id,
				 branch ? branch : "a detached HEAD");
	ex.flow = flow;
	ex.git = git;
	ex.run = run;
	ex.progress = &progress;
	rc = al_exec_run(&ex, &res);
	al_progress_end(&progress);
	code = al_cli_report_run(&ex, rc, o->json);
	if (code != AL_EXIT_INTERRUPTED && rc != AL_EINTR && !(rc < 0 && rc != AL_EAGENT))
		al_run_unlock(run);
	al_result_release(&res);
done:
	al_run_free(run);
	al_worktree_unlock(lock_fd);
	al_git_free(git);
	free(base);
	free(branch);
	free(dirty);
	return code;
}

/* The run's limits (`limits:`), or that it has none: what a run may spend. */
static void print_limits(const struct al_flow *f)
{
	struct al_strbuf sb = AL_STRBUF_INIT;

	if (f->max_agent_calls)
		al_strbuf_addf(&sb, ", %d agent calls", f->max_agent_calls);
	if (f->max_wall_seconds)
		al_strbuf_addf(&sb, ", %d s of the run's time", f->max_wall_seconds);
	if (f->max_agent_calls_per_hour)
		al_strbuf_addf(&sb, ", %d agent calls an hour", f->max_agent_calls_per_hour);
	if (f->max_cost_usd > 0)
		al_strbuf_addf(&sb, ", $%.2f", f->max_cost_usd);
	if (f->max_tokens)
		al_strbuf_addf(&sb, ", %lld tokens", f->max_tokens);
	if (sb.len)
		printf("limits: at most %s\n\n", sb.buf + 2);
	else
		printf("limits: none: the run may make any number of agent calls (limits: in "
		       "flow.yaml)\n\n");
	al_strbuf_release(&sb);
}

/*
 * Each runner program the flow's agents need that is not installed, once,
 * with the agents that need it and how to install it: NULL-terminated.
 */
static char **missing_runners(const struct al_flow *flow)
{
	char **v = al_calloc(flow->agents.n + 1, sizeof(*v));
	size_t n = 0;

	for (size_t i = 0; i < flow->agents.n; i++) {
		const struct al_agent *a = flow->agents.v[i];
		const struct al_runner *r;
		struct al_strbuf sb = AL_STRBUF_INIT;
		size_t k = 0;

		if (!a->loaded || al_agent_is_command(a))
			continue;
		r = al_runners_find(&flow->runners, a->runner ? a->runner : flow->default_runner);
		if (!r || al_proc_in_path(r->argv[0]))
			continue;
		al_strbuf_addf(&sb, "runner '%s' is not installed ('%s' is not in PATH)", r->name,
			       r->argv[0]);
		while (k < n && strncmp(v[k], sb.buf, sb.len))
			k++;
		if (k == n) {
			if (r->install)
				al_strbuf_addf(&sb, "; install it: %s", r->install);
			al_strbuf_addf(&sb, "; agents: %s", a->path);
			v[n++] = al_strbuf_detach(&sb, NULL);
			continue;
		}
		al_strbuf_release(&sb);
		al_strbuf_adds(&sb, v[k]); /* one more agent of that runner */
		al_strbuf_addf(&sb, ", %s", a->path);
		free(v[k]);
		v[k] = al_strbuf_detach(&sb, NULL);
	}
	if (!n) {
		free(v);
		return NULL;
	}
	return v;
}

static json_t *missing_json(char **missing)
{
	json_t *a = json_array();

	for (size_t i = 0; missing && missing[i]; i++)
		json_array_append_new(a, json_string(missing[i]));
	return a;
}

/*
 * `ailoop run fix the test`: the shell made the task words, of which the
 * run would take one; what to type instead, the words quoted for sh.
 */
static int unquoted_task(int n, char **words)
{
	struct al_strbuf sb = AL_STRBUF_INIT;

	al_strbuf_addch(&sb, '"');
	for (int i = 0; i < n; i++) {
		if (i)
			al_strbuf_addch(&sb, ' ');
		for (const char *p = words[i]; *p; p++) {
			if (strchr("\\\"$`", *p))
				al_strbuf_addch(&sb, '\\');
			al_strbuf_addch(&sb, *p);
		}
	}
	al_strbuf_addch(&sb, '"');
	fprintf(stderr, "ailoop: error: the task is one operand: quote it, as in\n"
		"  ailoop run %s\n", sb.buf);
	al_cli_usage(stderr, al_command_find("run"));
	al_strbuf_release(&sb);
	return AL_EXIT_USAGE;
}

int cmd_run(int argc, char **argv)
{
	static const struct option longs[] = {
		{ "flow", required_argument, NULL, 'f' },
		{ "task-file", required_argument, NULL, 't' },
		{ "new", no_argument, NULL, 'N' },
		{ "no-branch", no_argument, NULL, 'B' },
		{ "allow-dirty", no_argument, NULL, 'D' },
		{ "dry-run", no_argument, NULL, 'n' },
		{ "json", no_argument, NULL, 'j' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "from-here", no_argument, NULL, 'H' },
		{ "help", no_argument, NULL, 0 },
		{ NULL, 0, NULL, 0 },
	};
	struct run_opts o = { 0 };
	struct al_diags diags = AL_DIAGS_INIT;
	struct al_flow *flow = NULL;
	char *task = NULL, **missing = NULL;
	int c, rc, code = 0;

	while ((c = al_cli_getopt(argc, argv, "f:nq", longs, &code)) != -1) {
		switch (c) {
		case '?': return code;
		case 'f': o.flow = optarg; break;
		case 't': o.task_file = optarg; break;
		case 'N': o.new_run = true; break;
		case 'B': o.no_branch = true; break;
		case 'D': o.allow_dirty = true; break;
		case 'n': o.dry_run = true; break;
		case 'j': o.json = true; break;
		case 'q': o.quiet = true; break;
		case 'H': o.from_here = true; break;
		}
	}
	if (!o.task_file && argc - optind > 1)
		return unquoted_task(argc - optind, argv + optind);
	if ((code = al_cli_operands(argc, argv, o.task_file ? 0 : 1, 1)))
		return code;
	if ((code = read_task(optind < argc ? argv[optind] : NULL, o.task_file, &task)) != 0)
		return code;
	if ((code = al_cli_load_flow(o.flow, &diags, &flow)) != 0)
		goto done;
	/* a dry run plans a flow whose CLIs are not installed yet, and says which */
	if ((rc = al_exec_check_flow(flow)) < 0 && !(o.dry_run && rc == AL_ENORUNNER)) {
		code = al_cli_fail(al_cli_exit_code(rc), "%s", al_errmsg());
		goto done;
	}
	if (rc == AL_ENORUNNER)
		missing = missing_runners(flow);
	if (o.dry_run && o.json) {
		struct al_strbuf utf8 = AL_STRBUF_INIT; /* JSON holds text: a task's other bytes as U+FFFD */
		json_t *plan;
		char *text;

		al_utf8_repair(&utf8, task, strlen(task));
		plan = json_pack("{s:b, s:s, s:s, s:o, s:o}", "dry_run", 1, "flow", flow->file, "task",
				 utf8.buf ? utf8.buf : "", "root", plan_json(flow, flow->root),
				 "not_installed", missing_json(missing));
		text = plan ? json_dumps(plan, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
		al_strbuf_release(&utf8);
		json_decref(plan);
		if (!text) {
			code = al_cli_fail(AL_EXIT_SOFTWARE, "cannot write the plan as JSON");
			goto done;
		}
		printf("%s\n", text);
		free(text);
		goto done;
	}
	if (o.dry_run) {
		printf("dry run of %s (nothing is executed)\ntask: %s\n", flow->file, task);
		print_limits(flow);
		print_plan(flow, flow->root, 0);
		for (size_t i = 0; missing && missing[i]; i++)
			fprintf(stderr, "ailoop: warning: %s\n", missing[i]);
		if (missing)
			fputs("ailoop: warning: a run would stop before its first agent call "
			      "(exit 69) until it is installed\n", stderr);
		goto done;
	}
	code = start_run(&o, flow, task);
done:
	for (size_t i = 0; missing && missing[i]; i++)
		free(missing[i]);
	free(missing);
	free(task);
	al_flow_free(flow);
	al_diags_release(&diags);
	return code;
}
