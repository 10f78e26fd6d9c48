#include "ailoop/exec/breaker.h"
#include "ailoop/exec/exec.h"
#include "ailoop/exec/hooks.h"
#include "ailoop/base/fsutil.h"
#include "ailoop/model/md.h"
#include "ailoop/store/memory.h"
#include "ailoop/exec/sensor.h"
#include "ailoop/base/sha256.h"
#include "ailoop/base/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * The life of a node of any type: its state on disk, its place on the
 * run's execution stack, its commits and its result. The node types'
 * executors (loop.c, control.c, action.c) are state machines over it.
 */

char *al_label_for(const char *parent, int k)
{
	return parent ? al_xprintf("%s.%d", parent, k) : al_xprintf("%d", k);
}

static bool is_loop(const struct al_node *n)
{
	return n->type == AL_NODE_LOOP;
}

/* Whether a stored label belongs to this entry of the node. */
static bool label_matches(const struct al_node *n, const char *label, const char *parent)
{
	size_t len;

	if (!is_loop(n)) /* it runs in its parent's label */
		return !strcmp(label, parent ? parent : "0");
	if (!parent)
		return !strchr(label, '.');
	len = strlen(parent);
	return !strncmp(label, parent, len) && label[len] == '.' && !strchr(label + len + 1, '.');
}

int al_node_save(struct al_node_run *nr)
{
	nr->st.elapsed_ms = nr->base_elapsed + (al_now_ms() - nr->entry_ms);
	return al_node_state_write(&nr->st, nr->state_path, nr->task);
}

void al_node_keep_clock(const struct al_node_run *nr)
{
	int64_t ms = nr->base_elapsed + (al_now_ms() - nr->entry_ms);
	struct al_node_state st;

	if (al_node_state_read(&st, nr->state_path) < 0)
		return;
	if (!strcmp(st.run_id, nr->ex->run->st.run_id) && !strcmp(st.node_path, nr->n->path) &&
	    ms > st.elapsed_ms) {
		st.elapsed_ms = ms;
		al_node_state_write(&st, nr->state_path, nr->task);
	}
	al_node_state_release(&st);
}

/* Continues the node from its state on disk: the task it was given is there, byte for byte. */
static int reopen(struct al_node_run *nr, const char *task, const char *task_path)
{
	struct al_exec *ex = nr->ex;
	struct al_strbuf sb = AL_STRBUF_INIT;
	char sha[65];

	/*
	 * Gone (an agent removed it before the node's first commit held it):
	 * the task its parent gives it again is the one, if its digest says so
	 */
	if (al_strbuf_read_file(&sb, task_path, 0) < 0) {
		al_strbuf_reset(&sb);
		if (task)
			al_sha256_hex(task, strlen(task), sha);
		if (!task || !nr->st.task_sha256 || strcmp(sha, nr->st.task_sha256) ||
		    al_write_state(task_path, task, strlen(task)) < 0) {
			al_strbuf_release(&sb);
			return al_err(AL_EINVALID, "'%s' is missing: the task of node '%s' is lost",
				      task_path, nr->n->path);
		}
		al_strbuf_adds(&sb, task);
	}
	al_sha256_hex(sb.buf, sb.len, sha);
	if (nr->st.task_sha256 && strcmp(sha, nr->st.task_sha256)) {
		al_strbuf_release(&sb);
		return al_err(AL_EINVALID, "'%s' is damaged: it is not the task node '%s' was given",
			      task_path, nr->n->path);
	}
	nr->task = al_strbuf_detach(&sb, NULL);
	nr->resumed = true;
	if (ex->resuming && ex->nresume_stack &&
	    !strcmp(ex->resume_stack[ex->nresume_stack - 1], nr->n->path))
		ex->resuming = false; /* the innermost resumed frame: what follows is new */
	al_run_event(ex->run, "node_resume", "{s:s, s:s, s:s}", "node", nr->n->path, "label",
		     nr->st.label, "phase", al_phase_names[nr->st.phase]);
	return al_run_enter(ex->run, nr->n->path);
}

/* memory's loop.<id>.break back to false, if an agent left it true */
static int clear_break(struct al_node_run *nr)
{
	char *key = al_xprintf("loop.%s.break", nr->n->id);
	const char *v = nr->ex->memory ? al_memory_get(nr->ex->memory, key) : NULL;
	int rc = 0;

	if (v && !strcmp(v, "true"))
		rc = al_memory_set(nr->ex->memory, key, "false", true, "ailoop", "loop");
	free(key);
	return rc;
}

static int fresh(struct al_node_run *nr, const char *task, bool child_entry, enum al_phase phase,
		 int iteration, const char *task_path)
{
	struct al_exec *ex = nr->ex;
	const struct al_node *n = nr->n;
	char now[32], task_sha[65];
	int64_t steps = nr->st.step; /* of its last entry, if it had one */
	struct al_node_state last = { 0 };
	int rc;

	if (ex->resuming) {
		for (size_t i = 0; i < ex->nresume_stack; i++)
			if (!strcmp(ex->resume_stack[i], n->path))
				return al_err(AL_EINVALID, "'%s' does not hold the state of node "
					      "'%s', which the run was executing", nr->state_path,
					      n->path);
	}
	/* its agents' sessions go on from one entry to the next, as its steps do */
	al_node_state_move_sessions(&last, &nr->st);
	al_node_state_release(&nr->st);
	al_node_state_move_sessions(&nr->st, &last);
	al_timestamp(now);
	nr->task = al_strdup(task);
	nr->st.run_id = al_strdup(ex->run->st.run_id);
	nr->st.node_id = al_strdup(n->id);
	nr->st.type = al_strdup(al_node_type_name(n->type));
	nr->st.node_path = al_strdup(n->path);
	nr->st.parent_path = al_strdup(n->parent ? n->parent->path : "root");
	nr->st.level = n->depth;
	nr->st.iteration = iteration;
	nr->st.label = is_loop(n) ? al_label_for(nr->parent_label, iteration)
				  : al_strdup(nr->parent_label ? nr->parent_label : "0");
	nr->st.phase = phase;
	nr->st.step = steps; /* its steps go on: this entry's state is newer than the last's */
	nr->st.status = al_strdup("running");
	nr->st.child_entry = child_entry;
	nr->st.max_iterations = is_loop(n) ? n->max_iterations : 0;
	nr->st.started_at = al_strdup(now);
	al_sha256_hex(nr->task, strlen(nr->task), task_sha);
	nr->st.task_sha256 = al_strdup(task_sha);
	if (is_loop(n) && !n->sensor_form) /* the tree it starts from: its breaker's baseline */
		al_breaker_iteration(nr, false);
	/*
	 * A break an agent set in the loop's last entry ended that entry, not
	 * this one; gone before the state says it began, so a kill between
	 * the two enters it afresh again.
	 */
	if (n->type == AL_NODE_LOOP && n->exit_on == AL_EXIT_MANUAL_BREAK &&
	    (rc = clear_break(nr)) < 0)
		return rc;
	if ((rc = al_mkdirs(nr->dir)) < 0 ||
	    (rc = al_write_state(task_path, nr->task, strlen(nr->task))) < 0 ||
	    (rc = al_node_save(nr)) < 0)
		return rc;
	/* the state first: a stack naming a node without state would be damage */
	rc = al_run_enter(ex->run, n->path);
	al_run_event(ex->run, "node_start", "{s:s, s:s, s:s}", "node", n->path, "label",
		     nr->st.label, "type", al_node_type_name(n->type));
	if (n->type == AL_NODE_LOOP)
		al_run_event(ex->run, "loop_start", "{s:s, s:s, s:i}", "node", n->path, "label",
			     nr->st.label, "max_iterations", n->max_iterations);
	if (n->type == AL_NODE_LOOP)
		al_progress_note(ex->progress, "ailoop: [%s] %s: loop starts (at most %d "
				 "iterations)", nr->st.label, n->path, n->max_iterations);
	else if (n->type != AL_NODE_ACTION) /* an action's step says it all */
		al_progress_note(ex->progress, "ailoop: [%s] %s: %s starts", nr->st.label, n->path,
				 al_node_type_name(n->type));
	return rc;
}

static void release(struct al_node_run *nr)
{
	al_sensor_outputs_forget(nr);
	al_node_state_release(&nr->st);
	free(nr->dir);
	free(nr->state_path);
	free(nr->task);
	nr->dir = nr->state_path = nr->task = NULL;
}

int al_node_begin(struct al_node_run *nr, struct al_exec *ex, const struct al_node *n,
		  const char *task, const char *parent_label, bool child_entry,
		  int64_t deadline, enum al_phase phase, int iteration)
{
	char *task_path;
	bool ours;
	int rc;

	memset(nr, 0, sizeof(*nr));
	nr->ex = ex;
	nr->n = n;
	nr->parent_label = parent_label;
	nr->root = n == ex->flow->root;
	nr->dir = al_run_node_dir(ex->run, n->path);
	nr->state_path = al_xprintf("%s/orchestrator-output.md", nr->dir);
	nr->entry_ms = al_now_ms(); /* the node's clock: time spent before is in its state */
	task_path = al_xprintf("%s/task.md", nr->dir);
	rc = al_node_state_read(&nr->st, nr->state_path);
	ours = rc == 0 && !strcmp(nr->st.run_id, ex->run->st.run_id) &&
	       !strcmp(nr->st.node_path, n->path) &&
	       label_matches(n, nr->st.label, parent_label);
	if (rc != AL_EINVALID)
		rc = ours ? reopen(nr, task, task_path)
			  : fresh(nr, task, child_entry, phase, iteration, task_path);
	free(task_path);
	if (rc < 0) {
		release(nr);
		return rc;
	}
	ex->frames[ex->nframes++] = (struct al_frame){ n, &nr->st, nr->dir, nr->task, nr };
	nr->entry_ms = al_now_ms();
	nr->base_elapsed = nr->st.elapsed_ms;
	nr->deadline = deadline;
	if (n->timeout_seconds) {
		int64_t own = nr->entry_ms + (int64_t)n->timeout_seconds * 1000 - nr->base_elapsed;

		if (!nr->deadline || own < nr->deadline)
			nr->deadline = own;
	}
	return 0;
}

bool al_node_timed_out(const struct al_node_run *nr)
{
	return nr->deadline && al_now_ms() >= nr->deadline;
}

/*
 * How many iterations the node ran: a result's iterations-executed. A
 * sensor-form loop's iteration 0 is the first measurement, and it ends in
 * the controller of the iteration after its last actuation, or in the
 * actuation itself (break_loop below it).
 */
static int iterations_of(const struct al_node_run *nr)
{
	if (is_loop(nr->n) && nr->n->sensor_form && !nr->st.brk)
		return nr->st.iteration > 0 ? nr->st.iteration - 1 : 0;
	return nr->st.iteration;
}

/* What a node that ended tells the run: its end event, and working memory. */
static void ended(struct al_node_run *nr)
{
	const char *status = nr->st.status;
	bool ok = !strcmp(status, "complete");
	char *key = al_xprintf("nodes.%s.status", nr->n->id), iterations[16];

	snprintf(iterations, sizeof(iterations), "%d", iterations_of(nr));
	if (al_memory_set(nr->ex->memory, key, status, false, "ailoop", "node_result") == 0) {
		free(key);
		key = al_xprintf("nodes.%s.iterations", nr->n->id);
		al_memory_set(nr->ex->memory, key, iterations, true, "ailoop", "node_result");
	}
	free(key);
	al_run_event(nr->ex->run, ok ? "node_complete" : "node_failed",
		     "{s:s, s:s, s:s, s:i, s:s}", "node", nr->n->path, "label", nr->st.label,
		     "status", status, "iterations", iterations_of(nr), "summary",
		     nr->st.summary ? nr->st.summary : "");
}

static void node_end_hook(struct al_node_run *nr)
{
	al_hook_run(nr->ex, AL_HOOK_NODE_END, "{s:s, s:s, s:s, s:i, s:s}", "node", nr->n->path,
		    "label", nr->st.label, "status", nr->st.status, "iterations", iterations_of(nr),
		    "summary", nr->st.summary ? nr->st.summary : "");
}

int al_node_finish(struct al_node_run *nr, const char *status, const char *message,
		   bool commit, const char *body)
{
	struct al_strbuf sb = AL_STRBUF_INIT;
	char *path = al_xprintf("%s/result-output.md", nr->dir);
	int rc;

	/* either may be the node's own field, which setting it frees */
	al_set_str(&nr->st.status, status);
	al_set_str(&nr->st.summary, message);
	al_exec_result_head(&sb, nr->ex, nr->n, nr->st.status,
			    nr->st.brk && !strcmp(nr->st.status, "complete") ? "break_loop" : NULL,
			    nr->st.target_met,
			    iterations_of(nr));
	if (body)
		al_strbuf_adds(&sb, body);
	else
		al_strbuf_addf(&sb, "## Summary\n\n%s\n", nr->st.summary);
	rc = al_write_state(path, sb.buf, sb.len);
	al_strbuf_release(&sb);
	free(path);
	if (rc < 0)
		return rc;
	/* the root commits its end: the run's final status goes into history */
	nr->st.phase = commit || nr->root ? AL_PHASE_COMMIT : AL_PHASE_DONE;
	if (nr->st.phase == AL_PHASE_DONE)
		ended(nr);
	rc = al_node_save(nr);
	if (rc == 0 && nr->st.phase == AL_PHASE_DONE) /* no commit of its own to wait for */
		node_end_hook(nr);
	return rc;
}

/*
 * Before a node's last commit: when it ends the run (the root, or an error
 * with on_error fail-fast), the run's final status and events are written
 * now, so that the commit carries them and nothing is written after it.
 * Done in the commit step, after the node's own final state, so that a run
 * killed anywhere in between redoes it on resume.
 */
static int before_last_commit(struct al_node_run *nr)
{
	struct al_exec *ex = nr->ex;
	const char *status = nr->st.status;

	ended(nr);
	if (!strcmp(status, "error")) {
		al_exec_fail_frames(ex, nr->st.summary ? nr->st.summary : "");
		return 0;
	}
	if (!nr->root)
		return 0;
	al_set_str(&ex->run->st.status, status);
	al_run_event(ex->run, "run_end", "{s:s}", "status", status);
	return al_run_save(ex->run);
}

static struct al_commit_fields commit_fields(const struct al_node_run *nr, const char *sensors)
{
	struct al_commit_fields f = { nr->n->path, nr->st.label, nr->st.status, nr->st.target_met,
				      sensors, nr->st.summary ? nr->st.summary : "-",
				      nr->ex->run->st.run_id, false, NULL, NULL, NULL };

	return f;
}

bool al_node_committed(struct al_node_run *nr)
{
	struct al_commit_fields f = commit_fields(nr, NULL);

	return nr->resumed && al_exec_committed(nr->ex, &f);
}

/* The hooks of a commit this process just made: the iteration's, and the node's end. */
static void commit_hooks(struct al_node_run *nr, const char *sensors)
{
	struct al_exec *ex = nr->ex;

	al_hook_run(ex, AL_HOOK_ITERATION, "{s:s, s:s, s:s, s:b, s:s, s:s, s:s}", "node",
		    nr->n->path, "label", nr->st.label, "status", nr->st.status, "target_met",
		    nr->st.target_met, "summary", nr->st.summary ? nr->st.summary : "", "sensors",
		    sensors ? sensors : "", "commit", ex->last_commit);
	if (al_node_state_final(&nr->st))
		node_end_hook(nr);
}

int al_node_commit(struct al_node_run *nr, const char *sensors)
{
	struct al_exec *ex = nr->ex;
	struct al_commit_fields f = commit_fields(nr, sensors);
	size_t made = ex->commits;
	int rc;

	/* an agent that moved HEAD stops the run before anything is written for the commit */
	rc = al_git_check_head(ex->git, ex->run->dir);
	if (rc == 0 && al_node_state_final(&nr->st))
		rc = before_last_commit(nr);
	if (rc == 0)
		rc = al_exec_commit(ex, &f, nr->resumed);
	nr->resumed = false;
	/* not for a commit a resume found made: its hooks ran (or were lost with the kill) */
	if (rc == 0 && ex->commits > made)
		commit_hooks(nr, sensors);
	return rc;
}

int al_node_end(struct al_node_run *nr, int rc, struct al_result *res)
{
	struct al_exec *ex = nr->ex;

	ex->nframes--;
	ex->resuming = false; /* a frame ended: the stack the run was resumed at is passed */
	/* paused or blocked: the time until it stopped counts at the resume (an
	 * agent's error ended the run, its state committed as it was) */
	if (rc < 0 && rc != AL_EAGENT)
		al_node_keep_clock(nr);
	if (rc == 0)
		al_node_episode(nr);
	if (rc == 0 && !strcmp(nr->st.status, "error")) /* fail-fast: the run ends here */
		rc = al_err(AL_EAGENT, "%s", nr->st.summary ? nr->st.summary : "agent error");
	if (rc == 0) {
		res->success = !strcmp(nr->st.status, "complete");
		res->reason = al_status_name(nr->st.status);
		res->iterations = iterations_of(nr);
		res->summary = al_strdup(nr->st.summary ? nr->st.summary : "");
		if (!nr->root)
			rc = al_run_leave(ex->run);
	}
	release(nr);
	return rc;
}
