#include "ailoop/exec/exec.h"
#include "ailoop/exec/condition_eval.h"
#include "ailoop/exec/feedback.h"
#include "ailoop/exec/hooks.h"
#include "ailoop/base/fsutil.h"
#include "ailoop/model/md.h"
#include "ailoop/store/memory.h"
#include "ailoop/proc/proc.h"
#include "ailoop/proc/slurm.h"
#include "ailoop/base/shellcmd.h"
#include "ailoop/base/signals.h"
#include "ailoop/base/util.h"
#include "ailoop/git/worktree.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

static int check_runners(const struct al_flow *flow);

void al_result_release(struct al_result *res)
{
	free(res->summary);
	res->summary = NULL;
}

int al_exec_node(struct al_exec *ex, const struct al_node *node, const char *task,
		 const char *parent_label, bool child_entry, int64_t deadline,
		 struct al_result *res)
{
	int rc;

	memset(res, 0, sizeof(*res));
	if (ex->nframes >= AL_FLOW_MAX_DEPTH)
		return al_err(AL_ERROR, "nesting deeper than %d", AL_FLOW_MAX_DEPTH);
	if (al_signals_count()) /* no node starts once ailoop is interrupted */
		return AL_EINTR;
	switch (node->type) {
	case AL_NODE_LOOP:
		if (node->sensor_form) {
			rc = al_loop_run(ex, node, task, parent_label, child_entry, deadline, res);
			break;
		}
		rc = al_control_run(ex, node, task, parent_label, deadline, res);
		break;
	case AL_NODE_SEQUENCE:
	case AL_NODE_FALLBACK:
	case AL_NODE_CONDITIONAL:
	case AL_NODE_TRANSACTION:
		rc = al_control_run(ex, node, task, parent_label, deadline, res);
		break;
	case AL_NODE_ACTION:
		rc = al_action_run(ex, node, task, parent_label, deadline, res);
		break;
	case AL_NODE_PARALLEL:
		rc = al_parallel_run(ex, node, task, parent_label, deadline, res);
		break;
	default:
		rc = al_err(AL_EINVALID, "node '%s': ailoop run does not execute %s nodes yet",
			    node->path, al_node_type_name(node->type));
		break;
	}
	return rc;
}

struct find_commit {
	const struct al_commit_fields *f;
	bool found;
};

static int is_that_commit(const char *oid, const char *message, int64_t time, void *data)
{
	struct find_commit *fc = data;
	struct al_iteration it;

	(void)oid;
	(void)time;
	if (!al_iteration_parse(&it, message))
		return 0;
	fc->found = al_iteration_is(&it, fc->f->run_id, fc->f->node_path, fc->f->label,
				    fc->f->status);
	al_iteration_release(&it);
	return fc->found;
}

bool al_exec_committed(struct al_exec *ex, const struct al_commit_fields *f)
{
	struct find_commit fc = { f, false };
	char *head_msg = NULL;

	if (ex->commits_since) { /* a sibling may have committed after it */
		al_git_walk(ex->git, "HEAD", ex->commits_since, is_that_commit, &fc);
		return fc.found;
	}
	if (al_git_message(ex->git, "HEAD", &head_msg) == 0)
		is_that_commit(NULL, head_msg, 0, &fc);
	free(head_msg);
	return fc.found;
}

bool al_exec_run_recorded(struct al_exec *ex)
{
	if (!ex->run_committed) {
		struct al_strbuf probe = AL_STRBUF_INIT;
		char *state = al_xprintf("%s/run-state.md", ex->run->dir);

		ex->run_committed = al_git_read(ex->git, "HEAD", state, &probe) == 0;
		al_strbuf_release(&probe);
		free(state);
	}
	return ex->run_committed;
}

struct start_search {
	const char *run_id;
	char oid[AL_OID_HEX];
	int left; /* commits still to look at */
};

static int is_run_start(const char *oid, const char *message, int64_t time, void *data)
{
	struct start_search *s = data;
	struct al_iteration it;

	(void)time;
	if (al_iteration_parse(&it, message)) {
		if (it.run_start && it.run_id && !strcmp(it.run_id, s->run_id))
			snprintf(s->oid, sizeof(s->oid), "%s", oid);
		al_iteration_release(&it);
	}
	return *s->oid || --s->left <= 0;
}

/*
 * A run whose first commit this process did not make, and whose
 * run-state.md has no record of it (start-commit): killed between its
 * first and second commit and resumed, or begun by the children of a
 * parallel node (they are other processes). The first commit this
 * process makes finds it below HEAD, once, so that the commit carries
 * the record. Not found within the walk (a run of an older ailoop, or
 * children that committed more): `ailoop log` walks.
 */
static void recover_start(struct al_exec *ex)
{
	struct start_search s = { ex->run->st.run_id, "", 1000 };

	if (ex->run->forked || ex->run->st.start_commit || !ex->run->st.run_id)
		return;
	if (al_git_walk(ex->git, "HEAD", NULL, is_run_start, &s) >= 0 && *s.oid) {
		ex->run->st.start_commit = al_strdup(s.oid);
		ex->start_unsaved = true;
	}
}

/*
 * The tasks of the nodes under way, written again where an agent removed
 * them before their first commit (staging puts back only what a commit
 * holds): a resume needs each, and it is in memory. One stat a node.
 */
static int keep_tasks(struct al_exec *ex)
{
	int rc = 0;

	for (size_t i = 0; i < ex->nframes && rc == 0; i++) {
		char *path = al_xprintf("%s/task.md", ex->frames[i].dir);

		if (ex->frames[i].task && !al_file_exists(path))
			rc = al_write_state(path, ex->frames[i].task, strlen(ex->frames[i].task));
		free(path);
	}
	return rc;
}

/* "1.2k", "3.4M": a count of tokens at a glance. */
static void tokens(char *out, size_t size, long long n)
{
	if (n < 1000)
		snprintf(out, size, "%lld", n);
	else if (n < 1000000)
		snprintf(out, size, "%.1fk", (double)n / 1e3);
	else
		snprintf(out, size, "%.1fM", (double)n / 1e6);
}

/* "$0.0312 (12.4k in, 1.1k out)", what the calls since the last commit cost */
static const char *spend_line(const struct al_spend *s, char *out, size_t size)
{
	char in[32], o[32];

	tokens(in, sizeof(in), s->input);
	tokens(o, sizeof(o), s->output);
	snprintf(out, size, "$%.4f (%s in, %s out)%s%s", s->usd, in, o,
		 s->estimated ? ", estimated" : "", s->unknown ? ", some unknown" : "");
	return out;
}

int al_exec_commit(struct al_exec *ex, const struct al_commit_fields *f, bool may_exist)
{
	struct al_strbuf msg = AL_STRBUF_INIT;
	struct al_commit_fields fields;
	char oid[AL_OID_HEX], cost[128];
	bool first = false;
	int rc = 0;

	/* parallel siblings commit one at a time, each on top of the others */
	if (ex->base_frame)
		while (flock(ex->commit_lock, LOCK_EX) < 0 && errno == EINTR)
			;
	/* after a resume the commit may exist already: ailoop died after making it */
	if (may_exist && al_exec_committed(ex, f))
		goto done;
	first = !al_exec_run_recorded(ex); /* the run's first commit adds its directory */
	if (!first && !ex->start_searched) {
		ex->start_searched = true;
		recover_start(ex);
	}
	/* the second commit carries where the first is (below) */
	if (ex->start_unsaved && (rc = al_run_save(ex->run)) < 0)
		goto done;
	ex->start_unsaved = false;
	fields = *f;
	fields.run_start = first;
	if (ex->spend.calls)
		fields.cost = spend_line(&ex->spend, cost, sizeof(cost));
	al_commit_message(&msg, &fields);
	if (!ex->isolated && (rc = keep_tasks(ex)) < 0)
		goto done;
	rc = al_git_commit_all(ex->git, msg.buf, ex->isolated ? NULL : ex->run->dir, oid);
	if (rc == 0) {
		memset(&ex->spend, 0, sizeof(ex->spend)); /* in this commit's [cost] */
		ex->commits++;
		memcpy(ex->last_commit, oid, AL_OID_HEX);
		ex->run_committed = true;
		/*
		 * Where `ailoop log` starts, without a walk. It goes into
		 * run-state.md just before the next commit, which carries it
		 * (run-state.md is not written at every iteration): saved now,
		 * it would leave the tree changed after a run of one commit
		 * (whose log needs no shortcut).
		 */
		if (first && !ex->run->forked) {
			free(ex->run->st.start_commit);
			ex->run->st.start_commit = al_strdup(oid);
			ex->start_unsaved = true;
		}
		al_progress_note(ex->progress, "ailoop: [%s] %s: %s%s%s", f->label, f->node_path,
				 f->summary, f->sensors && *f->sensors ? " | " : "",
				 f->sensors ? f->sensors : "");
	}
done:
	if (ex->base_frame)
		flock(ex->commit_lock, LOCK_UN);
	al_strbuf_release(&msg);
	return rc;
}

void al_exec_result_head(struct al_strbuf *out, const struct al_exec *ex,
			 const struct al_node *node, const char *status, const char *reason,
			 bool target_met, int iterations)
{
	struct al_fm *fm = al_fm_new();

	if (!reason)
		reason = !strcmp(status, "complete") ? "target-met"
		       : !strcmp(status, "max-iterations-reached") ? "max-iterations"
		       : status;

	al_fm_str(fm, "status", status);
	al_fm_bool(fm, "target-met", target_met);
	al_fm_str(fm, "termination-reason", reason);
	al_fm_str(fm, "run-id", ex->run->st.run_id);
	al_fm_str(fm, "node-id", node->id);
	al_fm_str(fm, "node-path", node->path);
	al_fm_str(fm, "parent-node-path", node->parent ? node->parent->path : "root");
	al_fm_int(fm, "iterations-executed", iterations);
	al_fm_finish(fm, out);
	al_strbuf_addf(out, "\n# Result: %s\n\n", node->id);
}

/* result-output.md of a node that ended because the run failed below it. */
static void fail_frame(struct al_exec *ex, struct al_frame *f, const char *message)
{
	struct al_strbuf sb = AL_STRBUF_INIT;
	char *path = al_xprintf("%s/result-output.md", f->dir), *state;

	al_exec_result_head(&sb, ex, f->node, "error", NULL, false,
			    f->st->iteration > 0 ? f->st->iteration - 1 : 0);
	al_strbuf_addf(&sb, "## Summary\n\nStopped: the run failed below this node (on_error: "
		       "fail-fast).\n\n## Metrics Delta\n\n(not measured)\n\n"
		       "## Key Observations for Parent Controller\n\n%s\n", message);
	al_write_state(path, sb.buf, sb.len);
	free(f->st->status);
	f->st->status = al_strdup("error");
	state = al_xprintf("%s/orchestrator-output.md", f->dir);
	al_node_state_write(f->st, state, f->task);
	free(state);
	free(path);
	al_strbuf_release(&sb);
}

void al_exec_fail_frames(struct al_exec *ex, const char *message)
{
	/* the innermost frame writes its own result */
	for (size_t i = ex->base_frame; i + 1 < ex->nframes; i++)
		fail_frame(ex, &ex->frames[i], message);
	if (ex->run->forked) /* the parent process ends the run */
		return;
	free(ex->run->st.status);
	ex->run->st.status = al_strdup("error");
	al_run_save(ex->run);
	al_run_event(ex->run, "run_end", "{s:s, s:s}", "status", "error", "error", message);
}

/* "1.2.3" with its last part `k`: "1.2.<k>" */
static char *relabel(const char *label, int k)
{
	const char *dot = strrchr(label, '.');

	return dot ? al_xprintf("%.*s.%d", (int)(dot - label), label, k) : al_xprintf("%d", k);
}

static int reopen_below(struct al_run *run, const char *path, bool check_only);

static bool is_parallel(const struct al_node_state *st)
{
	return st->type && !strcmp(st->type, "parallel");
}

/*
 * Rewrites the state of node `path` of `run` for a retry (see
 * al_exec_retry): `innermost`, the last node of the run's stack. That is
 * the node whose step failed, or a parallel node, below which the failed
 * step is in a child's nodes (a child process has no stack of its own).
 */
static int reopen_node(struct al_run *run, const char *path, bool innermost, bool check_only)
{
	struct al_node_state st;
	struct al_strbuf task = AL_STRBUF_INIT;
	char *dir = al_run_node_dir(run, path), *state = al_xprintf("%s/orchestrator-output.md", dir);
	char *task_path = al_xprintf("%s/task.md", dir);
	int rc = al_node_state_read(&st, state);
	bool open, below;

	if (rc < 0)
		goto done;
	open = !strcmp(st.status, "running"); /* already open: a retry killed half-way */
	below = !st.failed && is_parallel(&st);
	if (open && !below)
		goto done;
	if (!open && (strcmp(st.status, "error") || (innermost && !st.failed && !below))) {
		rc = al_err(AL_ENOTFOUND, "node '%s' did not end in an agent's error", path);
		goto done;
	}
	if (!open && !check_only && (rc = al_strbuf_read_file(&task, task_path, 0)) == 0) {
		if (st.failed) { /* the failed step, as the next iteration: the error keeps its label */
			char *label = relabel(st.label, ++st.iteration);

			free(st.label);
			st.label = label;
			st.phase = st.failed_phase;
			st.failed = false;
			free(st.summary);
			st.summary = NULL;
		} else if (below) { /* its unfinished children run again */
			st.phase = AL_PHASE_CHILDREN;
			free(st.summary);
			st.summary = NULL;
		}
		free(st.status);
		st.status = al_strdup("running");
		rc = al_node_state_write(&st, state, task.buf);
	}
	if (rc == 0 && below) /* after the node itself: the innermost last */
		rc = reopen_below(run, path, check_only);
done:
	al_node_state_release(&st); /* a failed read leaves it empty */
	al_strbuf_release(&task);
	free(task_path);
	free(state);
	free(dir);
	return rc;
}

/* Reopens the nodes below parallel node `path` that the error ended, to any depth. */
static int reopen_below(struct al_run *run, const char *path, bool check_only)
{
	char *dir = al_run_node_dir(run, path);
	DIR *d = opendir(dir);
	struct dirent *e;
	int rc = 0;

	while (d && rc == 0 && (e = readdir(d))) {
		struct al_node_state st;
		char *sub, *state;
		bool ours, step = false;

		if (e->d_name[0] == '.')
			continue;
		sub = al_xprintf("%s/%s", path, e->d_name);
		state = al_xprintf("%s/%s/orchestrator-output.md", dir, e->d_name);
		ours = al_node_state_read(&st, state) == 0 && !strcmp(st.run_id, run->st.run_id) &&
		       (!strcmp(st.status, "error") || !strcmp(st.status, "running"));
		if (ours && !strcmp(st.status, "error") && !st.failed && !is_parallel(&st) &&
		    !check_only) { /* a node around the failed step */
			struct al_strbuf task = AL_STRBUF_INIT;
			char *task_path = al_xprintf("%s/%s/task.md", dir, e->d_name);

			if ((rc = al_strbuf_read_file(&task, task_path, 0)) == 0) {
				free(st.status);
				st.status = al_strdup("running");
				rc = al_node_state_write(&st, state, task.buf);
			}
			al_strbuf_release(&task);
			free(task_path);
		}
		if (ours)
			step = st.failed || is_parallel(&st);
		al_node_state_release(&st);
		if (ours && rc == 0)
			rc = step ? reopen_node(run, sub, true, check_only)
				  : reopen_below(run, sub, check_only);
		free(state);
		free(sub);
	}
	if (d)
		closedir(d);
	free(dir);
	return rc;
}
int al_exec_retry(struct al_run *run, bool check_only)
{
	struct al_run_state *st = &run->st;
	int rc = 0;

	if (strcmp(st->status, "error") || !st->nstack)
		return al_err(AL_ENOTFOUND, "run %s did not end in an agent's error", st->run_id);
	/* check all first, then write from the outside in: the innermost last */
	for (size_t i = 0; i < st->nstack && rc == 0; i++)
		rc = reopen_node(run, st->stack[i], i + 1 == st->nstack, true);
	for (size_t i = 0; i < st->nstack && rc == 0 && !check_only; i++)
		rc = reopen_node(run, st->stack[i], i + 1 == st->nstack, false);
	if (rc < 0 || check_only)
		return rc;
	free(st->status);
	st->status = al_strdup("running");
	return al_run_save(run);
}

/* Whether the state of a node below `dir` is older on disk than in the tree of `rev`. */
static bool behind(struct al_git *git, const char *rev, const char *dir)
{
	struct al_strbuf path = AL_STRBUF_INIT, text = AL_STRBUF_INIT;
	struct al_node_state head, disk;
	char **names;
	size_t n;
	bool older = false;

	al_strbuf_addf(&path, "%s/orchestrator-output.md", dir);
	if (al_git_read(git, rev, path.buf, &text) == 0 &&
	    al_node_state_parse(&head, path.buf, text.buf, text.len) == 0) {
		if (al_node_state_read(&disk, path.buf) == 0) {
			older = disk.step < head.step;
			al_node_state_release(&disk);
		}
		al_node_state_release(&head);
	}
	if (!older && al_git_ls(git, rev, dir, &names, &n) == 0) {
		for (size_t i = 0; i < n && !older; i++) {
			char *sub = al_xprintf("%s/%s", dir, names[i]);

			if (names[i][0] != '.' && strcmp(names[i], "logs") && al_dir_exists(sub))
				older = behind(git, rev, sub);
			free(sub);
		}
		al_strv_free(names, n);
	}
	al_strbuf_release(&path);
	al_strbuf_release(&text);
	return older;
}

int al_exec_catch_up(struct al_git *git, struct al_run *run)
{
	struct al_run_state st;
	char *nodes = al_xprintf("%s/nodes", run->dir), last[AL_OID_HEX], hex[8];
	int rc = 0;

	/*
	 * The branch lost the run's last commit (an agent's reset, or amend),
	 * but the run's files are from it or after: going on would skip the
	 * labels of the commits lost. Set back with the branch, they are not.
	 */
	if (al_git_run_last_commit(git, run->st.run_id, last) == 0 && !behind(git, last, nodes))
		rc = al_git_check_holds(git, last, run->dir);
	if (rc == 0 && behind(git, "HEAD", nodes)) {
		if ((rc = al_git_restore_from_head(git, run->dir, hex)) == 0 &&
		    (rc = al_run_state_read(&st, run->state_path)) == 0) {
			al_run_state_release(&run->st);
			run->st = st;
			fprintf(stderr, "ailoop: run %s's files were set back to an earlier commit's "
				"(by an agent's checkout?): they are put back as its last commit (%s) "
				"has them, and the run goes on from there\n", run->st.run_id, hex);
			rc = 1;
		}
	}
	free(nodes);
	return rc;
}

struct slurm_check {
	int rc;
	const struct al_slurm *done[16]; /* settings already checked */
	size_t ndone;
};

static void check_slurm_node(struct al_node *n, void *data)
{
	struct slurm_check *sc = data;
	char cwd[PATH_MAX];

	if (sc->rc < 0 || !n->slurm.on)
		return;
	for (size_t i = 0; i < sc->ndone; i++)
		if (sc->done[i]->shared_fs == n->slurm.shared_fs &&
		    (sc->done[i]->partition == n->slurm.partition ||
		     (sc->done[i]->partition && n->slurm.partition &&
		      !strcmp(sc->done[i]->partition, n->slurm.partition))))
			return;
	if (!al_proc_in_path("srun"))
		sc->rc = al_err(AL_ENORUNNER, "node '%s' has executor slurm, and 'srun' is not "
				"installed (install Slurm's client commands, or say 'executor: "
				"local')", n->path);
	else if ((sc->rc = al_slurm_check_fs(&n->slurm, getcwd(cwd, sizeof(cwd)) ? cwd : ".")) < 0)
		sc->rc = al_err(sc->rc, "node '%s': %s", n->path, al_errmsg());
	if (sc->ndone < AL_ARRAY_SIZE(sc->done))
		sc->done[sc->ndone++] = &n->slurm;
}

int al_exec_check_flow(const struct al_flow *flow)
{
	struct slurm_check sc = { 0 };
	int rc = check_runners(flow);

	if (rc < 0)
		return rc;
	/* executor slurm: srun there, and the work tree on a filesystem the nodes share */
	al_flow_walk(flow->root, check_slurm_node, &sc);
	return sc.rc;
}

static int check_runners(const struct al_flow *flow)
{
	for (size_t i = 0; i < flow->agents.n; i++) {
		const struct al_agent *a = flow->agents.v[i];
		const struct al_runner *r;

		if (!a->loaded || al_agent_is_command(a))
			continue;
		r = al_runners_find(&flow->runners, a->runner ? a->runner : flow->default_runner);
		if (r && !al_proc_in_path(r->argv[0]))
			return al_err(AL_ENORUNNER,
				      "agent '%s' runs with '%s', which is not installed%s%s%s",
				      a->path, r->argv[0], r->install ? " (install it: " : "",
				      r->install ? r->install : "", r->install ? ")" : "");
	}
	return 0;
}

void al_exec_warnings(struct al_flow *flow, struct al_diags *w)
{
	al_flow_warnings(flow, w);
	/* a command that cannot run: a sensor's would stop the run at its first measurement */
	for (size_t i = 0; i < flow->agents.n; i++) {
		const struct al_agent *a = flow->agents.v[i];
		struct al_pos pos = a->command_pos;
		char *prog;
		bool absolute;

		if (!a->loaded || !al_agent_is_command(a))
			continue;
		prog = a->command_argv ? al_strdup(a->command_argv[0]) : al_shell_program(a->command_sh);
		absolute = prog && prog[0] == '/';
		/* a relative path's meaning depends on where the command changes to */
		if (prog && (absolute ? access(prog, X_OK) < 0
				      : !strchr(prog, '/') && !al_proc_in_path(prog))) {
			pos.file = al_diags_source(w, pos.file, a->text, a->text_len);
			al_diags_add(w, pos, "'%s' runs '%s', which is %s", a->path, prog,
				     absolute ? "not an executable file" : "not on PATH");
		}
		free(prog);
	}
}

static void find_slurm(struct al_node *n, void *data)
{
	*(bool *)data |= n->slurm.on;
}

void al_exec_watch_policy(struct al_exec *ex)
{
	bool slurm = false;

	al_flow_walk(ex->flow->root, find_slurm, &slurm);
	if (slurm)
		al_git_watch_off(ex->git);
	al_git_stage_ahead(ex->git);
}

/* The run stops: on_blocked if it is blocked, then on_run_end whatever the end. */
static void end_hooks(struct al_exec *ex, int rc, const struct al_result *res)
{
	const char *status = ex->run->st.status;
	const char *reason = rc == AL_EINTR ? "interrupted: the run is paused"
			     : rc < 0 ? al_errmsg() : res->summary ? res->summary : "";
	char *why = al_strdup(reason); /* a hook's own message may replace al_errmsg() */

	if (rc == AL_EBLOCKED)
		al_hook_run(ex, AL_HOOK_BLOCKED, "{s:s, s:s}", "status", status, "reason", why);
	al_hook_run(ex, AL_HOOK_RUN_END, "{s:s, s:s, s:I}", "status", status, "summary", why,
		    "commits", (json_int_t)ex->commits);
	free(why);
}

int al_exec_run(struct al_exec *ex, struct al_result *res)
{
	char cwd[PATH_MAX], *logs, *cache;
	int rc, unmarked;

	ex->root = al_strdup(getcwd(cwd, sizeof(cwd)) ? cwd : ".");
	al_exec_watch_policy(ex);
	logs = al_xprintf("%s/" AL_RUN_AGENTS_DIR, ex->run->dir);
	rc = al_mkdirs(logs);
	free(logs);
	ex->agents_file = al_xprintf("%s/" AL_RUN_AGENTS_FILE, ex->run->dir);
	if (rc < 0 || (rc = al_memory_open(&ex->memory, ex->run->dir)) < 0)
		goto done;
	cache = al_xprintf("%s/" AL_COND_CACHE_FILE, ex->run->dir);
	rc = al_cond_cache_open(&ex->cond_cache, cache);
	free(cache);
	if (rc < 0)
		goto done;
	if (ex->resuming) /* before any commit stages what feedback edges removed */
		al_feedback_note_removed(ex);
	if (ex->resuming) { /* entering nodes rewrites the stack: keep how it was */
		ex->nresume_stack = ex->run->st.nstack;
		ex->resume_stack = al_calloc(ex->nresume_stack + 1, sizeof(char *));
		for (size_t i = 0; i < ex->nresume_stack; i++)
			ex->resume_stack[i] = al_strdup(ex->run->st.stack[i]);
	}
	al_run_event(ex->run, ex->resuming ? "run_resume" : "run_start", "{s:s, s:s}", "run",
		     ex->run->st.run_id, "flow", ex->run->st.flow);
	rc = al_exec_node(ex, ex->flow->root, ex->run->st.task, NULL, false, 0, res);
	al_git_watch_done(ex->git); /* no commit follows */
	if (rc < 0 && !al_dir_exists(ex->run->dir)) {
		rc = al_err(AL_EINVALID, "the run's directory '%s' was deleted while it ran (by an "
			    "agent?)", ex->run->dir);
	} else if (rc == AL_EBLOCKED) {
		/* a circuit breaker opened or a budget is spent: resumable (a
		 * resume resets the breaker, or runs the step that did not start) */
		free(ex->run->st.status);
		ex->run->st.status = al_strdup("blocked");
		al_run_save(ex->run);
		al_run_event(ex->run, "run_blocked", "{s:s}", "reason", al_errmsg());
	} else if (rc == AL_EINTR || (rc < 0 && rc != AL_EAGENT)) {
		/* resumable: the step that was running runs again */
		free(ex->run->st.status);
		ex->run->st.status = al_strdup("paused");
		al_run_save(ex->run);
		al_run_event(ex->run, "run_paused", "{s:s}", "reason",
			     rc == AL_EINTR ? "interrupted" : al_errmsg());
	}
	/* else the run ended, and its last commit holds its run_end event */
	if (rc == 0 && res->success) { /* parallel children's worktrees: done with */
		char *wts = al_xprintf("%s/" AL_WORKTREES_DIR, ex->run->dir);

		if (al_worktree_remove_all(wts) < 0)
			fprintf(stderr, "ailoop: warning: %s\n", al_errmsg());
		free(wts);
	}
	end_hooks(ex, rc, res);
done:
	/* what the run wrote last is not in a commit: durable before the mark goes */
	if ((unmarked = al_git_unmark_restorable(ex->git)) < 0 && rc >= 0)
		rc = unmarked;
	al_cond_cache_free(ex->cond_cache);
	ex->cond_cache = NULL;
	al_memory_free(ex->memory);
	ex->memory = NULL;
	free(ex->root);
	ex->root = NULL;
	free(ex->agents_file);
	ex->agents_file = NULL;
	for (size_t i = 0; i < ex->nresume_stack; i++)
		free(ex->resume_stack[i]);
	free(ex->resume_stack);
	ex->resume_stack = NULL;
	ex->nresume_stack = 0;
	return rc;
}
