#include "ailoop/exec/invoke.h"
#include "invoke_int.h"
#include "ailoop/exec/budget.h"
#include "ailoop/exec/rate_wait.h"
#include "ailoop/exec/feedback.h"
#include "ailoop/base/fsutil.h"
#include "ailoop/git/git.h"
#include "ailoop/model/md.h"
#include "ailoop/model/output.h"
#include "ailoop/store/run.h"
#include "ailoop/model/runner.h"
#include "ailoop/base/sha256.h"
#include "ailoop/proc/slurm.h"
#include "ailoop/base/util.h"

#include <ctype.h>
#include <jansson.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

const char *const al_role_names[4] = { "sensor", "controller", "actuator", "action" };

char *al_call_absolute(const struct al_exec *ex, const char *rel)
{
	if (rel && rel[0] == '/') /* a parallel child's in its worktree */
		return al_strdup(rel);
	return rel ? al_xprintf("%s/%s", ex->root, rel) : al_strdup("");
}

void al_sensors_section(struct al_strbuf *out, const struct al_node *node, const char *dir)
{
	for (size_t i = 0; i < node->nsensors; i++) {
		const struct al_sensor *s = &node->sensors[i];
		const struct al_agent *a = s->ref.agent;

		al_strbuf_addf(out, "- %s: %s/sensor-%s-output.md", s->name, dir, s->name);
		if (a && a->target)
			al_strbuf_addf(out, " (target: %s)", a->target);
		al_strbuf_addch(out, '\n');
	}
	if (!node->nsensors)
		al_strbuf_adds(out, "(this loop has no sensors)\n");
}
static void add_env(char ***env, size_t *n, const char *key, const char *value)
{
	*env = al_realloc(*env, (*n + 2) * sizeof(**env));
	(*env)[(*n)++] = al_xprintf("%s=%s", key, value ? value : "");
	(*env)[*n] = NULL;
}

/*
 * Linux refuses to start a program given one argument longer than 32 pages
 * (MAX_ARG_STRLEN): a prompt passed as one (`prompt: arg`) must fit.
 */
static int check_args(const struct al_call *call, const char *runner)
{
	size_t max = 32 * (size_t)sysconf(_SC_PAGESIZE);

	for (size_t i = 0; call->argv[i]; i++)
		if (strlen(call->argv[i]) >= max)
			return al_err(AL_EAGENT, "%s '%s': its prompt (%zu bytes) is too long for a "
				      "command-line argument of runner '%s' (less than %zu bytes): "
				      "give the runner 'prompt: stdin' or 'prompt: file'",
				      al_role_names[call->ctx->role], call->ctx->agent->path,
				      call->prompt.len, runner, max);
	return 0;
}

bool al_call_is_agent(const struct al_call_ctx *c)
{
	return !(c->role == AL_ROLE_SENSOR && c->keep_output);
}

/* "actuator 'x.md' of node 'a/b' (iteration 2)", for messages. */
static char *call_name(const struct al_call_ctx *c)
{
	return al_xprintf("%s%s%s '%s' of node '%s' (iteration %s)", al_role_names[c->role],
			  c->name ? " " : "", c->name ? c->name : "", c->agent->path,
			  c->node->path, c->label);
}

/*
 * A wait before a call (the hourly limit, a rate limit's back-off) that
 * the node's deadline ended (AL_ETIMEOUT) is an agent stopped at that
 * deadline: AL_EAGENT, the call timed out. Any other `rc` is passed on.
 */
static int stopped_waiting(struct al_call *call, int rc)
{
	if (rc != AL_ETIMEOUT)
		return rc;
	call->res.timed_out = true;
	return al_err(AL_EAGENT, "%s", al_errmsg());
}

/*
 * The id of a new session, for a runner whose `start` gives the CLI one
 * ({session-id}): a UUID (the form such CLIs take) hashed from the run,
 * the node, the agent, its iteration and the time, so no two calls share
 * one.
 */
static char *session_id(const struct al_exec *ex, const struct al_call_ctx *c,
			const struct al_call *call)
{
	char *seed = al_xprintf("%s %s %s %s %lld", ex->run->st.run_id, c->node->path,
				call->session_key, c->label, (long long)al_now_ms());
	char hex[65];

	al_sha256_hex(seed, strlen(seed), hex);
	free(seed);
	/* version 4, variant 10xx */
	return al_xprintf("%.8s-%.4s-4%.3s-%c%.3s-%.12s", hex, hex + 8, hex + 13,
			  "89ab"[hex[16] % 4], hex + 17, hex + 20);
}

int al_call_prepare(struct al_call *call, struct al_exec *ex, const struct al_call_ctx *c)
{
	const struct al_agent *a = c->agent;
	char *task_file, *abs_dir, *abs_in, *abs_out, *abs_task, *abs_prompt, *logs;
	const char *suffix = c->name ? c->name : "";
	size_t nenv = 0;
	int64_t now = al_now_ms(), deadline;
	int rc;

	memset(call, 0, sizeof(*call));
	call->ctx = c;
	call->run = ex->run;
	call->flow = ex->flow;
	call->spend = &ex->spend;
	call->usage = (struct al_usage)AL_USAGE_INIT;
	al_strbuf_init(&call->prompt);
	logs = al_xprintf("%s/logs", c->dir);
	call->log_path = al_xprintf("%s/%s%s%s.log", logs, al_role_names[c->role],
				    *suffix ? "-" : "", suffix);
	call->prompt_path = al_xprintf("%s/%s%s%s.prompt.md", logs, al_role_names[c->role],
				       *suffix ? "-" : "", suffix);
	call->wait_path = al_xprintf("%s/%s%s%s.rate-limit", logs, al_role_names[c->role],
				     *suffix ? "-" : "", suffix);
	task_file = al_xprintf("%s/task.md", c->dir);
	if ((rc = al_mkdirs(logs)) < 0)
		goto done;
	al_call_render_prompt(call, ex, task_file);
	if ((rc = al_write_in_place(call->prompt_path, call->prompt.buf, call->prompt.len)) < 0)
		goto done;
	/*
	 * No earlier output may pass for this call's, nor a directory an agent
	 * left at the output path. A CLI's is removed, so that its write tool
	 * creates it (Claude Code's Write refuses to overwrite a file the agent
	 * has not read); a script's is emptied in place, which spares ext4 an
	 * inode freed and made again (0.4 ms of an iteration, fsync on)
	 */
	if (!c->keep_output && (rc = al_agent_is_command(a) ? al_empty_path(c->output)
							    : al_remove_tree(c->output)) < 0)
		goto done;
	if (c->keep_output && al_dir_exists(c->output)) {
		al_as_is_note(c->output); /* an agent's directory there: committed as gone */
		if ((rc = al_remove_tree(c->output)) < 0)
			goto done;
	}

	if (a->command_sh) {
		const char *argv[] = { "sh", "-c", a->command_sh, NULL };

		call->argv = al_calloc(4, sizeof(*call->argv));
		for (int i = 0; i < 3; i++)
			call->argv[i] = al_strdup(argv[i]);
	} else if (a->command_argv) {
		size_t n = 0;

		while (a->command_argv[n])
			n++;
		call->argv = al_calloc(n + 1, sizeof(*call->argv));
		for (size_t i = 0; i < n; i++)
			call->argv[i] = al_strdup(a->command_argv[i]);
	} else {
		const struct al_runner *r = al_runners_find(
			&ex->flow->runners, a->runner ? a->runner : ex->flow->default_runner);
		struct al_runner_vars vars = {
			.model = c->model ? c->model : al_agent_model(a, r->name, NULL),
			.tools = a->tools,
			.disallowed_tools = a->disallowed_tools,
			.commands = c->role != AL_ROLE_CONTROLLER,
			.prompt = call->prompt.buf,
			.prompt_file = call->prompt_path,
		};

		if (a->session_continue && c->sessions) {
			call->session_key = al_xprintf("%s%s%s", al_role_names[c->role],
						       c->name ? "-" : "", c->name ? c->name : "");
			vars.session_keep = true;
			vars.session = al_node_state_session(c->sessions, call->session_key);
			call->resumed = vars.session ? al_strdup(vars.session) : NULL;
			if (!call->resumed && al_runner_session_chosen(r))
				vars.session_new = call->session_chosen = session_id(ex, c, call);
		}
		call->cumulative = al_runner_session(r)->cumulative_usage;
		call->argv = al_runner_argv(r, &vars);
		call->stream = r->output;
		call->model = vars.model;
		if (r->prompt == AL_PROMPT_STDIN) {
			call->spec.input = call->prompt.buf;
			call->spec.input_len = call->prompt.len;
		}
		if ((rc = check_args(call, r->name)) < 0)
			goto done;
	}

	abs_dir = al_call_absolute(ex, c->dir);
	abs_in = c->input ? al_call_absolute(ex, c->input) : al_strdup("");
	abs_out = al_call_absolute(ex, c->output);
	abs_task = al_call_absolute(ex, task_file);
	abs_prompt = al_call_absolute(ex, call->prompt_path);
	add_env(&call->env, &nenv, "AILOOP_RUN_ID", ex->run->st.run_id);
	add_env(&call->env, &nenv, "AILOOP_RUN_DIR", ex->run->abs_dir);
	add_env(&call->env, &nenv, "AILOOP_NODE_PATH", c->node->path);
	add_env(&call->env, &nenv, "AILOOP_NODE_ID", c->node->id);
	add_env(&call->env, &nenv, "AILOOP_ITERATION", c->label);
	add_env(&call->env, &nenv, "AILOOP_ROLE", al_role_names[c->role]);
	add_env(&call->env, &nenv, "AILOOP_AGENT", a->name ? a->name : a->path);
	add_env(&call->env, &nenv, "AILOOP_ARTIFACTS", abs_dir);
	add_env(&call->env, &nenv, "AILOOP_INPUT", abs_in);
	add_env(&call->env, &nenv, "AILOOP_OUTPUT", abs_out);
	add_env(&call->env, &nenv, "AILOOP_TASK_FILE", abs_task);
	add_env(&call->env, &nenv, "AILOOP_PROMPT_FILE", abs_prompt);
	if (c->name)
		add_env(&call->env, &nenv, "AILOOP_SENSOR", c->name);
	free(abs_dir);
	free(abs_in);
	free(abs_out);
	free(abs_task);
	free(abs_prompt);

	call->timeout_s = a->timeout ? a->timeout : ex->flow->agent_timeout_seconds;
	deadline = now + (int64_t)call->timeout_s * 1000;
	if (c->deadline_ms && c->deadline_ms < deadline)
		deadline = c->deadline_ms;
	if (c->node->slurm.on) {
		/*
		 * A job step on the cluster, named after the node, in this
		 * directory (shared with the nodes: al_exec_check_flow), with a
		 * time limit of the deadline's minutes: ailoop's own comes first.
		 * Neither counts the time the step waits in the queue.
		 */
		char cwd[PATH_MAX], hash[65], *what, *dir;
		int64_t left_s = (deadline - now + 999) / 1000;

		what = al_xprintf("%s %s%s%s", c->node->path, al_role_names[c->role],
				  c->name ? " " : "", c->name ? c->name : "");
		al_sha256_hex(what, strlen(what), hash);
		hash[16] = '\0';
		dir = al_xprintf("%s/" AL_RUN_SLURM_DIR, ex->run->abs_dir);
		call->slurm_job_file = al_xprintf("%s/%s", dir, hash);
		rc = al_mkdirs(dir);
		free(dir);
		add_env(&call->env, &nenv, "AILOOP_SLURM_JOB_FILE", call->slurm_job_file);
		add_env(&call->env, &nenv, "AILOOP_SLURM_WHAT", what);
		free(what);
		if (rc < 0)
			goto done;
		unlink(call->slurm_job_file); /* a killed run's: the step's clock starts with its own */
		call->argv = al_slurm_argv(&c->node->slurm, call->argv, c->node->path,
					   left_s > INT_MAX ? INT_MAX : (int)left_s,
					   c->cwd ? c->cwd
						  : getcwd(cwd, sizeof(cwd)) ? cwd : ex->root);
	}
	call->spec.name = call->log_path;
	call->spec.argv = (const char *const *)call->argv;
	call->spec.env = (const char *const *)call->env;
	call->spec.cwd = c->cwd;
	call->spec.deadline_ms = deadline;
	if (call->slurm_job_file) { /* its time counts once the step starts, not in the queue */
		call->spec.started = call->slurm_job_file;
		call->spec.timeout_ms = (int64_t)call->timeout_s * 1000;
		call->spec.deadline_ms = c->deadline_ms;
	}
	call->spec.tick = al_progress_tick;
	call->spec.tick_data = ex->progress;
	call->spec.record = ex->agents_file;
	call->progress = ex->progress;
	call->memory = ex->memory;
	call->res = (struct al_proc_result)AL_PROC_RESULT_INIT;
	if (al_call_is_agent(c)) {
		char *what = call_name(c);

		/* then what remains of a wait for a reset that a kill or an interrupt cut short */
		if ((rc = al_budget_cost_check(ex, c->node, what)) == 0)
			rc = stopped_waiting(call, al_rate_limit_resume(ex, what, call->wait_path,
									c->deadline_ms));
		if (rc == 0)
			rc = stopped_waiting(call, al_budget_acquire(ex, what, c->deadline_ms,
								     &call->started));
		free(what);
	}
done:
	free(task_file);
	free(logs);
	return rc;
}

/* A YAML value as JSON: plain scalars that read as numbers, booleans or null as those. */
static json_t *yaml_to_json(const struct al_val *v)
{
	json_t *j;

	if (v->kind == AL_VAL_SEQ) {
		j = json_array();
		for (size_t i = 0; i < v->n; i++)
			json_array_append_new(j, yaml_to_json(v->items[i]));
		return j;
	}
	if (v->kind == AL_VAL_MAP) {
		j = json_object();
		for (size_t i = 0; i < v->n; i++)
			json_object_set_new(j, AL_VAL_KEY(v, i)->str, yaml_to_json(AL_VAL_VALUE(v, i)));
		return j;
	}
	if (v->style == AL_STYLE_PLAIN) {
		if (al_val_is_null(v))
			return json_null();
		/*
		 * JSON's booleans and numbers only: `yes` stays the text an agent
		 * wrote, as a condition's `value: yes` is that text too.
		 */
		j = json_loads(v->str, JSON_DECODE_ANY, NULL);
		if (json_is_number(j) || json_is_boolean(j))
			return j;
		json_decref(j);
	}
	j = json_stringn(v->str, v->len);
	return j ? j : json_null();
}

/*
 * The `memory:` map of an agent's output front matter, into working memory.
 * An entry that cannot be kept (a bad key) is skipped with a note: the
 * agent did its work, and its other entries still count.
 */
static int remember_output(struct al_call *call)
{
	const struct al_call_ctx *c = call->ctx;
	const char *who = c->agent->name ? c->agent->name : c->agent->path; /* = AILOOP_AGENT */
	struct al_md md = AL_MD_INIT;
	const struct al_val *map;
	int rc = 0;

	if (!call->memory || al_md_read(&md, c->output) < 0 || !(map = al_md_get(&md, "memory")))
		goto done;
	if (map->kind != AL_VAL_MAP) {
		al_progress_note(call->progress, "ailoop: [%s] %s: %s '%s': 'memory' in '%s' is %s, "
				 "not a mapping: ignored", c->label, c->node->path,
				 al_role_names[c->role], c->agent->path, c->output,
				 al_val_describe(map));
		goto done;
	}
	for (size_t i = 0; i < map->n && rc == 0; i++) {
		json_t *value = yaml_to_json(AL_VAL_VALUE(map, i));

		rc = al_memory_set_json(call->memory, AL_VAL_KEY(map, i)->str, value, who,
					"observation");
		if (rc == AL_EINVALID) {
			al_progress_note(call->progress, "ailoop: [%s] %s: %s '%s': memory entry of "
					 "'%s' skipped: %s", c->label, c->node->path,
					 al_role_names[c->role], c->agent->path, c->output,
					 al_errmsg());
			rc = 0;
		}
		json_decref(value);
	}
done:
	al_md_release(&md);
	return rc;
}

/*
 * What an agent that failed says when its disk or quota was full: the
 * C library's words for ENOSPC and EDQUOT (in an English locale), which
 * the tools an agent runs print. Such a failure is the machine's, not the
 * agent's: the run pauses, and once there is room the step runs again.
 */
static const char *disk_full(const struct al_proc_result *r)
{
	return al_says_disk_full(r->log.buf, r->log.len);
}

/*
 * Whether the output file stands as the call's output: the agent wrote it
 * (al_call_prepare removed it), and it is not empty unless so is what the
 * agent printed.
 */
static bool output_stands(const char *path, size_t printed)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode) && (st.st_size > 0 || !printed);
}

/* The key an agent of this role must give in its output's front matter, or NULL. */
static const char *needed_key(const struct al_call_ctx *c)
{
	if (c->role == AL_ROLE_CONTROLLER)
		return "target-met";
	if (c->role == AL_ROLE_SENSOR && !c->keep_output)
		return "status";
	return NULL;
}

/*
 * The output read as a model writes it and kept in the form ailoop reads
 * (output.h); AL_EFORMAT, the reason in call->format_why, if its role
 * cannot read it.
 */
static int settle_output(struct al_call *call)
{
	const struct al_call_ctx *c = call->ctx;
	const char *key = needed_key(c);
	struct al_strbuf why = AL_STRBUF_INIT;
	int rc;

	if (!key)
		return 0;
	rc = al_output_settle(c->output, key, &why);
	if (rc == AL_EINVALID) {
		free(call->format_why);
		call->format_why = al_strbuf_detach(&why, NULL);
		rc = al_err(AL_EFORMAT, "%s%s%s output '%s' unreadable: %s (agent: %s, log: %s)",
			    al_role_names[c->role], c->name ? " " : "", c->name ? c->name : "",
			    c->output, call->format_why, c->agent->path, call->log_path);
	}
	al_strbuf_release(&why);
	return rc;
}

int al_call_finish(struct al_call *call)
{
	const struct al_call_ctx *c = call->ctx;
	struct al_proc_result *r = &call->res;
	struct al_strbuf log = AL_STRBUF_INIT;
	const char *who = al_role_names[c->role], *full;
	char why[256] = "";
	bool slurm_failed = false;
	long job = 0;
	int rc = 0;

	if (call->slurm_job_file) {
		/* a step that outlives its call (pause, timeout, Slurm's failure) is cancelled */
		job = al_slurm_job_read(call->slurm_job_file);
		slurm_failed = al_slurm_failed(r, why, sizeof(why));
		if (r->interrupted || r->timed_out || slurm_failed || r->exit_code)
			al_slurm_cancel(job);
		unlink(call->slurm_job_file);
		if (call->run && job)
			al_run_event(call->run, "slurm_step", "{s:s, s:s, s:s, s:s?, s:I, s:s}",
				     "node", c->node->path, "label", c->label, "role", who, "name",
				     c->name, "job", (json_int_t)job, "end",
				     r->interrupted ? "cancelled" : r->timed_out ? "timed out" :
				     slurm_failed ? "failed by slurm" : "exited");
	}
	/* what the agent left at its output is its output: committed as it is */
	if (!c->keep_output)
		al_as_is_note(c->output);
	/* before anything is written there: into removed directories, or lost */
	if (call->run && al_run_files_gone(call->run))
		return al_err(AL_EMOVED, "%s '%s' removed the run's files that git does not track "
			      "(in %s: its lock, event log, working memory and agents' logs), as "
			      "'git clean -x' does; ailoop stopped there, and the run's commits are "
			      "safe. Resume the run to go on without what they held (should its "
			      "committed files have gone too: git checkout HEAD -- %s, then resume)",
			      who, c->agent->path, call->run->dir, call->run->dir);
	if (r->log_truncated)
		al_strbuf_adds(&log, "[ailoop: earlier output dropped, the last 1 MiB follows]\n");
	al_strbuf_add(&log, r->log.buf, r->log.len);
	rc = al_write_in_place(call->log_path, log.buf, log.len);
	al_strbuf_release(&log);
	if (rc < 0)
		return rc;
	if (call->run && !r->interrupted)
		al_run_event(call->run, "agent", "{s:s, s:s, s:s, s:s?, s:I, s:i, s:b, s:b}", "node",
			     c->node->path, "label", c->label, "role", who, "name", c->name, "ms",
			     (json_int_t)r->duration_ms, "exit", r->exit_code, "timed_out",
			     r->timed_out, "agent_call", al_call_is_agent(c));
	if (r->strays)
		al_progress_note(call->progress, "ailoop: [%s] %s: stopped %d process%s that %s '%s' "
				 "left running after it exited (log: %s)", c->label, c->node->path,
				 r->strays, r->strays == 1 ? "" : "es", who, c->agent->path,
				 call->log_path);
	if (r->interrupted)
		return AL_EINTR;
	al_call_count_usage(call);
	if (call->resumed && r->exit_code && al_usage_session_lost(r->log.buf, r->log.len)) {
		/* the id is the CLI's no more: forgotten, and the call runs again, anew */
		al_node_state_set_session(c->sessions, call->session_key, NULL);
		call->session_lost = true;
		return al_err(AL_EAGENT, "%s '%s' could not continue its session %s: its CLI "
			      "does not find it (log: %s)", who, c->agent->path, call->resumed,
			      call->log_path);
	}
	/* the id the CLI printed, else the one ailoop gave it */
	if (call->session_key && (call->usage.session || call->session_chosen)) {
		al_node_state_set_session(c->sessions, call->session_key,
					  call->usage.session ? call->usage.session
							      : call->session_chosen);
		if (call->session_totals)
			al_node_state_set_session_totals(c->sessions, call->session_key,
							 call->session_totals);
	}
	if (al_dir_exists(c->output))
		return al_err(AL_EAGENT, "%s '%s' left a directory at its output path '%s' "
			      "(log: %s)", who, c->agent->path, c->output, call->log_path);
	/* an agent that wrote no output (or an empty one) answered in its final text */
	if (!c->keep_output && !output_stands(c->output, call->usage.text.len) &&
	    (rc = al_write_in_place(c->output, call->usage.text.buf, call->usage.text.len)) < 0)
		return rc;
	if (slurm_failed)
		return al_err(AL_EAGENT, "%s '%s': Slurm ended its step again after one retry "
			      "(job %ld: %s) (log: %s)", who, c->agent->path, job, why,
			      call->log_path);
	if (r->timed_out && !c->keep_output)
		return al_err(AL_EAGENT, "%s '%s' did not finish in time and was stopped (log: %s)",
			      who, c->agent->path, call->log_path);
	if (c->keep_output)
		return 0; /* a command sensor: its exit status is its measurement */
	if (r->exit_code == 127 && !r->duration_ms && !r->out.len)
		return al_err(AL_EAGENT, "%s '%s': cannot run '%s' (log: %s)", who,
			      c->agent->path, call->argv[0], call->log_path);
	if (r->exit_code && (full = disk_full(r)))
		return al_err(AL_ERROR, "%s '%s' failed with exit status %d, and its output says "
			      "\"%s\" (log: %s): once there is room, resume the run, and the step "
			      "runs again", who, c->agent->path, r->exit_code, full, call->log_path);
	if (r->exit_code)
		return al_err(AL_EAGENT, "%s '%s' failed with exit status %d%s%s (log: %s)", who,
			      c->agent->path, r->exit_code, call->usage.error ? ": " : "",
			      call->usage.error ? call->usage.error : "", call->log_path);
	if ((rc = settle_output(call)) < 0)
		return rc;
	return remember_output(call);
}

void al_call_release(struct al_call *call)
{
	al_argv_free(call->argv);
	al_argv_free(call->env);
	al_strbuf_release(&call->prompt);
	al_proc_result_release(&call->res);
	free(call->log_path);
	free(call->prompt_path);
	free(call->wait_path);
	free(call->slurm_job_file);
	free(call->format_why);
	al_usage_release(&call->usage);
	free(call->session_key);
	free(call->resumed);
	free(call->session_chosen);
	free(call->session_totals);
	memset(call, 0, sizeof(*call));
}

int al_call_retry(struct al_exec *ex, struct al_call *call, int attempt)
{
	const struct al_call_ctx *ctx = call->ctx;
	int rc;

	do {
		char *what = call_name(ctx);
		int64_t reset_at;

		al_rate_limited(ex->flow, call->stream, &call->res, &reset_at);
		al_call_finish(call); /* its log, for the record; its failure is not the node's */
		rc = stopped_waiting(call, al_rate_limit_wait(ex, what, attempt++, reset_at,
							      call->wait_path, ctx->deadline_ms));
		free(what);
		if (rc == AL_EAGENT)
			return rc;
		al_call_release(call);
		if (rc < 0)
			return rc;
		if ((rc = al_call_prepare(call, ex, ctx)) < 0)
			return rc;
		rc = al_proc_run(&call->spec, &call->res);
		if (rc < 0 && rc != AL_EINTR)
			return rc;
	} while (rc == 0 && al_rate_limited(ex->flow, call->stream, &call->res, NULL));
	return al_call_finish(call);
}

int al_call_slurm_retry(struct al_exec *ex, struct al_call *call)
{
	const struct al_call_ctx *ctx = call->ctx;
	char why[256];
	int rc;

	if (!call->slurm_job_file || !al_slurm_failed(&call->res, why, sizeof(why)))
		return 0;
	al_progress_note(call->progress, "ailoop: [%s] %s: Slurm ended the step of %s '%s' (%s): "
			 "running it once more", ctx->label, ctx->node->path,
			 al_role_names[ctx->role], ctx->agent->path, why);
	al_call_finish(call); /* its log and its job cancelled; its failure is not the node's */
	al_call_release(call);
	if ((rc = al_call_prepare(call, ex, ctx)) < 0)
		return rc;
	return al_proc_run(&call->spec, &call->res);
}

/* A prepared call run, run again as Slurm's failure or a rate limit asks, and finished. */
static int run_prepared(struct al_exec *ex, struct al_call *call)
{
	int rc = al_proc_run(&call->spec, &call->res);

	if (rc == 0)
		rc = al_call_slurm_retry(ex, call);
	if (rc < 0 && rc != AL_EINTR)
		return rc;
	if (rc == 0 && al_call_is_agent(call->ctx) &&
	    al_rate_limited(ex->flow, call->stream, &call->res, NULL))
		return al_call_retry(ex, call, 0);
	return al_call_finish(call);
}

/* What an agent asked again is told: what was wrong, and the first lines ailoop reads. */
static void add_reminder(struct al_strbuf *out, const struct al_call_ctx *c, const char *why)
{
	if (c->notice)
		al_strbuf_addf(out, "%s\n\n", c->notice);
	al_strbuf_addf(out, "ailoop could not read the output you wrote: %s. Write your output "
		       "file again; it must begin with exactly these lines, with no text, code "
		       "fence or indentation before them:\n\n", why);
	if (c->role == AL_ROLE_CONTROLLER)
		al_strbuf_adds(out, "---\ntarget-met: false\n---\n\n(target-met: true when the "
			       "target is met, false otherwise; your assessment and action plan "
			       "follow the second '---')");
	else
		al_strbuf_adds(out, "---\nstatus: fail\n---\n\n(status: pass, fail or partial; "
			       "your report follows the second '---')");
}

static int format_retries(const struct al_exec *ex, const struct al_agent *a)
{
	return a->format_retries >= 0 ? a->format_retries : ex->flow->format_retries;
}

int al_call_reformat(struct al_exec *ex, struct al_call *call, int rc)
{
	const struct al_call_ctx *c = call->ctx;
	struct al_call_ctx again;
	int retries;

	if (rc != AL_EFORMAT)
		return rc; /* `call` may have been let go of (a wait interrupted) */
	again = *c;
	retries = format_retries(ex, c->agent);

	for (int attempt = 1; rc == AL_EFORMAT && attempt <= retries; attempt++) {
		struct al_strbuf notice = AL_STRBUF_INIT;

		al_progress_note(call->progress, "ailoop: [%s] %s: %s: asking it again (%d of %d)",
				 c->label, c->node->path, al_errmsg(), attempt, retries);
		al_run_event(ex->run, "format_retry", "{s:s, s:s, s:s, s:s?, s:s, s:i}", "node",
			     c->node->path, "label", c->label, "role", al_role_names[c->role],
			     "name", c->name, "why", call->format_why, "attempt", attempt);
		add_reminder(&notice, c, call->format_why);
		again.notice = notice.buf;
		al_call_release(call);
		rc = al_call_prepare(call, ex, &again);
		if (rc == 0)
			rc = run_prepared(ex, call);
		call->ctx = c; /* `again` ends here; the caller's outlives the call */
		al_strbuf_release(&notice);
	}
	if (rc == AL_EFORMAT) /* asked as often as it may be: the agent failed */
		rc = al_err(AL_EAGENT, "%s%s", al_errmsg(),
			    retries ? " (asked again, it wrote no better)" : "");
	return rc;
}

int al_call_refresh(struct al_exec *ex, struct al_call *call, int rc)
{
	const struct al_call_ctx *c = call->ctx;

	if (rc != AL_EAGENT || !call->session_lost)
		return rc;
	al_progress_note(call->progress, "ailoop: [%s] %s: warning: %s: starting a new session",
			 c->label, c->node->path, al_errmsg());
	al_run_event(ex->run, "session_lost", "{s:s, s:s, s:s, s:s?, s:s}", "node",
		     c->node->path, "label", c->label, "role", al_role_names[c->role], "name",
		     c->name, "session", call->resumed);
	al_call_release(call);
	if ((rc = al_call_prepare(call, ex, c)) < 0)
		return rc;
	return run_prepared(ex, call);
}

int al_call_run(struct al_exec *ex, const struct al_call_ctx *ctx, struct al_call *call)
{
	int rc;

	if ((rc = al_call_prepare(call, ex, ctx)) < 0)
		return rc;
	rc = al_call_refresh(ex, call, run_prepared(ex, call));
	return al_call_reformat(ex, call, rc);
}

char *al_output_summary(const char *path, const char *fallback)
{
	struct al_md md = AL_MD_INIT;
	const char *s = NULL, *p, *end;
	char *out = NULL;

	if (al_md_read(&md, path) == 0) {
		s = al_md_str(&md, "summary");
		for (p = md.body, end = md.body + md.body_len; !s && p < end;) {
			const char *nl = memchr(p, '\n', (size_t)(end - p));
			const char *eol = nl ? nl : end, *q = p;

			while (q < eol && isspace((unsigned char)*q))
				q++;
			if (q < eol && *q != '#' && strncmp(q, "---", 3) && strncmp(q, "```", 3)) {
				out = al_strndup(q, (size_t)(eol - q));
				break;
			}
			p = nl ? nl + 1 : end;
		}
	}
	if (!out)
		out = al_strdup(s ? s : fallback);
	al_utf8_cut(out, 100); /* a commit subject, not the whole story */
	al_md_release(&md);
	if (!al_utf8_valid(out, strlen(out))) { /* it goes into YAML, JSON and git */
		struct al_strbuf utf8 = AL_STRBUF_INIT;

		al_utf8_repair(&utf8, out, strlen(out));
		free(out);
		out = al_strbuf_detach(&utf8, NULL);
	}
	/* and onto the terminal: an escape sequence, a carriage return is no summary's */
	for (char *c = out; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = ' ';
	return out;
}
