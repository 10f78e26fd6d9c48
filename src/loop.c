#include "ailoop/exec.h"
#include "ailoop/fsutil.h"
#include "ailoop/invoke.h"
#include "ailoop/md.h"
#include "ailoop/sensor.h"
#include "ailoop/sha256.h"
#include "ailoop/signals.h"
#include "ailoop/util.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/*
 * The sensor–controller–actuator loop (SPEC §4) as a state machine whose
 * state is the node's orchestrator-output.md:
 *
 *   measure -> commit -> controller -> actuate -> measure -> commit -> …
 *
 * Each phase is written before the next one starts, so a run killed at any
 * instant continues at the phase it was in: that step runs again, and a
 * commit that was already made is recognised at HEAD and not made twice.
 */
struct loop {
	struct al_exec *ex;
	const struct al_node *n;
	struct al_node_state st;
	char *dir;
	char *state_path;
	char *task;
	const char *parent_label;
	int64_t deadline;
	int64_t entry_ms;
	int64_t base_elapsed;
	bool root;
	bool resumed; /* state read back from disk: its next commit may exist */
};

static char *label_for(const char *parent, int k)
{
	return parent ? al_xprintf("%s.%d", parent, k) : al_xprintf("%d", k);
}

/* Whether a stored label belongs to this entry of the node. */
static bool label_matches(const char *label, const char *parent)
{
	size_t n;

	if (!parent)
		return !strchr(label, '.');
	n = strlen(parent);
	return !strncmp(label, parent, n) && label[n] == '.' && !strchr(label + n + 1, '.');
}

static int save(struct loop *lp)
{
	lp->st.elapsed_ms = lp->base_elapsed + (al_now_ms() - lp->entry_ms);
	return al_node_state_write(&lp->st, lp->state_path, lp->task);
}

static void set_str(char **field, const char *value)
{
	free(*field);
	*field = value ? al_strdup(value) : NULL;
}

static char *path_in(const struct loop *lp, const char *file)
{
	return al_xprintf("%s/%s", lp->dir, file);
}

/* The first meaningful line of an agent's output: what it did. */
static char *summarize(const char *path, const char *fallback)
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
	return out;
}

static int write_result(struct loop *lp, const char *message)
{
	struct al_strbuf sb = AL_STRBUF_INIT, now = AL_STRBUF_INIT;
	struct al_readings r;
	char *path = path_in(lp, "result-output.md"), *ctl = path_in(lp, "controller-output.md");
	struct al_md md = AL_MD_INIT;
	int rc;

	al_exec_result_head(&sb, lp->ex, lp->n, lp->st.status, lp->st.target_met,
			    lp->st.iteration > 0 ? lp->st.iteration - 1 : 0);
	al_sensors_read(lp->n, lp->dir, &r);
	al_readings_line(&r, &now);
	al_strbuf_addf(&sb, "## Summary\n\n%s\n\n## Metrics Delta\n\n- at entry: %s\n- now: %s\n\n"
		       "## Key Observations for Parent Controller\n\n", message,
		       lp->st.initial_sensors ? lp->st.initial_sensors : "none",
		       now.len ? now.buf : "none");
	if (al_md_read(&md, ctl) == 0 && md.body_len) {
		char *plan = al_md_section(md.body, md.body_len, "Action Plan");

		if (plan && *plan && !lp->st.target_met)
			al_strbuf_addf(&sb, "What the controller still asked for:\n\n%s\n", plan);
		else
			al_strbuf_adds(&sb, lp->st.target_met ? "The target is met.\n"
							      : "No action plan was left.\n");
		free(plan);
	} else {
		al_strbuf_addf(&sb, "%s\n", message);
	}
	rc = al_write_atomic(path, sb.buf, sb.len);
	al_md_release(&md);
	al_readings_release(&r);
	al_strbuf_release(&sb);
	al_strbuf_release(&now);
	free(path);
	free(ctl);
	return rc;
}

/* The node has ended: record how, and move to its last commit. */
static int finish(struct loop *lp, const char *status, const char *message)
{
	int rc;

	set_str(&lp->st.status, status);
	set_str(&lp->st.summary, message);
	if ((rc = write_result(lp, message)) < 0)
		return rc;
	lp->st.phase = AL_PHASE_COMMIT;
	return save(lp);
}

/*
 * Before a node's last commit: when it ends the run (the root, or an error
 * with on_error fail-fast), the run's final status and events are written
 * now, so that the commit carries them and nothing is written after it.
 * Done in the commit step, after the node's own final state, so that a run
 * killed anywhere in between redoes it on resume.
 */
static int before_last_commit(struct loop *lp)
{
	const char *status = lp->st.status, *message = lp->st.summary ? lp->st.summary : "";

	al_run_event(lp->ex->run, "node_complete", "{s:s, s:s, s:i, s:s}", "node", lp->n->path,
		     "status", status, "iterations", lp->st.iteration > 0 ? lp->st.iteration - 1 : 0,
		     "summary", message);
	if (!strcmp(status, "error")) {
		al_exec_fail_frames(lp->ex, message);
		return 0;
	}
	if (!lp->root)
		return 0;
	set_str(&lp->ex->run->st.status, status);
	al_run_event(lp->ex->run, "run_end", "{s:s}", "status", status);
	return al_run_save(lp->ex->run);
}

/* An agent failed: fail-fast ends the node (and run); continue moves on. */
static int agent_failed(struct loop *lp, const char *what, enum al_phase next)
{
	char *msg = al_strdup(al_errmsg());
	int rc;

	if (lp->deadline && al_now_ms() >= lp->deadline) {
		free(msg);
		return 0; /* stopped by the node's deadline: the loop ends in timeout */
	}
	if (lp->ex->flow->on_error == AL_ON_ERROR_FAIL_FAST) {
		lp->st.failed = true; /* what `ailoop resume RUN-ID` runs again */
		lp->st.failed_phase = lp->st.phase;
		rc = finish(lp, "error", msg);
	} else {
		char *summary = al_xprintf("%s failed: %s", what, msg);

		al_progress_note(lp->ex->progress, "ailoop: %s (on_error: continue)", summary);
		al_run_event(lp->ex->run, "agent_error", "{s:s, s:s, s:s}", "node", lp->n->path,
			     "label", lp->st.label, "error", msg);
		set_str(&lp->st.summary, summary);
		lp->st.phase = next;
		rc = save(lp);
		free(summary);
	}
	free(msg);
	return rc;
}

static int measure(struct loop *lp)
{
	int rc;

	if (lp->st.iteration == 0 && lp->st.child_entry) {
		rc = al_sensors_stub(lp->n, lp->dir);
		set_str(&lp->st.summary, "initial entry (sensors skipped)");
	} else {
		rc = al_sensors_measure(lp->ex, lp->n, lp->dir, lp->st.label, lp->task,
					lp->deadline);
		if (rc == AL_EAGENT)
			return agent_failed(lp, "sensor", AL_PHASE_COMMIT);
		if (lp->st.iteration == 0)
			set_str(&lp->st.summary, "initial measurement");
	}
	if (rc < 0)
		return rc;
	al_run_event(lp->ex->run, "sensors", "{s:s, s:s}", "node", lp->n->path, "label",
		     lp->st.label);
	/*
	 * Not saved: killed before the commit, the node measures again, and a
	 * commit that was made is found at HEAD. One state write less per step.
	 */
	lp->st.phase = AL_PHASE_COMMIT;
	return 0;
}

static int commit(struct loop *lp, bool *done)
{
	struct al_strbuf line = AL_STRBUF_INIT;
	struct al_readings r;
	struct al_commit_fields f;
	int rc;

	al_sensors_read(lp->n, lp->dir, &r);
	al_readings_line(&r, &line);
	al_readings_release(&r);
	f = (struct al_commit_fields){ lp->n->path, lp->st.label, lp->st.status,
				       lp->st.target_met, line.buf,
				       lp->st.summary ? lp->st.summary : "-" };
	al_run_event(lp->ex->run, "loop_iteration", "{s:s, s:s, s:s, s:s}", "node", lp->n->path,
		     "label", lp->st.label, "status", lp->st.status, "sensors", line.buf);
	/* an agent that moved HEAD stops the run before anything is written for the commit */
	rc = al_git_check_head(lp->ex->git, lp->ex->run->dir);
	if (rc == 0 && al_node_state_final(&lp->st))
		rc = before_last_commit(lp);
	if (rc == 0)
		rc = al_exec_commit(lp->ex, &f, lp->resumed);
	lp->resumed = false;
	if (rc == 0 && lp->st.iteration == 0)
		set_str(&lp->st.initial_sensors, line.len ? line.buf : "none");
	al_strbuf_release(&line);
	if (rc < 0)
		return rc;
	if (al_node_state_final(&lp->st)) {
		*done = true; /* nothing more is written: the tree stays as committed */
		return 0;
	}
	lp->st.iteration++;
	free(lp->st.label);
	lp->st.label = label_for(lp->parent_label, lp->st.iteration);
	lp->st.phase = AL_PHASE_CONTROLLER;
	set_str(&lp->st.summary, NULL);
	return save(lp);
}

/* builtin:all-pass: met iff every sensor passes; the plan lists the rest. */
static int all_pass(struct loop *lp, const struct al_readings *r, const char *out)
{
	struct al_strbuf sb = AL_STRBUF_INIT;
	struct al_fm *fm = al_fm_new();
	size_t passing = 0;
	int rc;

	for (size_t i = 0; i < r->n; i++)
		passing += !strcmp(r->v[i].status, "pass");
	al_fm_bool(fm, "target-met", passing == r->n);
	al_fm_str(fm, "controller", AL_BUILTIN_ALL_PASS);
	al_fm_finish(fm, &sb);
	al_strbuf_addf(&sb, "\n# Controller Output\n\n## Assessment\n\n%zu of %zu sensors pass.\n",
		       passing, r->n);
	if (passing < r->n) {
		al_strbuf_adds(&sb, "\n## Action Plan\n\nMake these failing sensors pass:\n");
		for (size_t i = 0; i < r->n; i++) {
			struct al_md md = AL_MD_INIT;
			char *path = al_sensor_output_path(lp->dir, r->v[i].name), *tail;

			if (!strcmp(r->v[i].status, "pass")) {
				free(path);
				continue;
			}
			al_strbuf_addf(&sb, "\n### %s: %s%s%s%s\n\nFrom %s:\n\n", r->v[i].name,
				       r->v[i].status, r->v[i].detail ? " (" : "",
				       r->v[i].detail ? r->v[i].detail : "", r->v[i].detail ? ")" : "",
				       path);
			if (al_md_read(&md, path) == 0) {
				size_t start = md.body_len > 2000 ? md.body_len - 2000 : 0;

				while (start && start < md.body_len && md.body[start - 1] != '\n')
					start++; /* from the start of a line */
				tail = al_md_trim_lines(md.body + start, md.body_len - start);
				al_strbuf_addf(&sb, "%s\n", tail);
				free(tail);
			}
			al_md_release(&md);
			free(path);
		}
	}
	rc = al_write_atomic(out, sb.buf, sb.len);
	al_strbuf_release(&sb);
	return rc;
}

static int decide(struct loop *lp)
{
	struct al_exec *ex = lp->ex;
	char *out = path_in(lp, "controller-output.md"), *input = NULL;
	struct al_readings r;
	struct al_md md = AL_MD_INIT;
	bool met = false;
	int rc;

	al_sensors_read(lp->n, lp->dir, &r);
	if (lp->n->builtin_all_pass) {
		al_progress_step(ex->progress, lp->st.label, lp->n->path, "controller", "%s",
				 AL_BUILTIN_ALL_PASS);
		rc = all_pass(lp, &r, out);
	} else {
		struct al_strbuf section = AL_STRBUF_INIT;
		struct al_call call;
		struct al_call_ctx ctx = {
			.agent = lp->n->controller.agent, .role = AL_ROLE_CONTROLLER, .node = lp->n,
			.label = lp->st.label, .dir = lp->dir, .output = out, .task = lp->task,
			.deadline_ms = lp->deadline,
		};

		if (r.all_pass && ex->flow->converge_model)
			ctx.model = ex->flow->converge_model;
		if (lp->n->child) {
			char *child_dir = al_run_node_dir(ex->run, lp->n->child->path);

			input = al_xprintf("%s/result-output.md", child_dir);
			free(child_dir);
			ctx.input = al_file_exists(input) ? input : NULL;
		}
		al_sensors_section(&section, lp->n, lp->dir);
		ctx.sensors_section = section.buf;
		al_progress_step(ex->progress, lp->st.label, lp->n->path, "controller", "%s%s%s",
				 lp->n->controller.path, ctx.model ? " with model " : "",
				 ctx.model ? ctx.model : "");
		rc = al_call_run(ex, &ctx, &call);
		al_call_release(&call);
		al_strbuf_release(&section);
	}
	al_readings_release(&r);
	if (rc == 0) {
		rc = al_md_read(&md, out);
		if (rc == 0 && !al_md_bool(&md, "target-met", &met))
			rc = al_err(AL_EAGENT, "controller output '%s' has no readable 'target-met' "
				    "(true or false) in its front matter", out);
		else if (rc < 0)
			rc = al_err(AL_EAGENT, "controller output unreadable: %s", al_errmsg());
		al_md_release(&md);
	}
	free(out);
	free(input);
	if (rc == AL_EAGENT) {
		/* with on_error continue, a failed decision skips this actuation */
		if (lp->st.iteration > lp->n->max_iterations &&
		    ex->flow->on_error == AL_ON_ERROR_CONTINUE)
			return finish(lp, "max-iterations-reached", "max iterations reached");
		return agent_failed(lp, "controller", AL_PHASE_MEASURE);
	}
	if (rc < 0)
		return rc;
	al_run_event(ex->run, "controller", "{s:s, s:s, s:b}", "node", lp->n->path, "label",
		     lp->st.label, "target_met", met);
	lp->st.target_met = met;
	if (met)
		return finish(lp, "complete", "target met");
	if (lp->st.iteration > lp->n->max_iterations) {
		char msg[64];

		snprintf(msg, sizeof(msg), "max iterations reached (%d)", lp->n->max_iterations);
		return finish(lp, "max-iterations-reached", msg);
	}
	lp->st.phase = AL_PHASE_ACTUATE;
	return save(lp);
}

/* The controller's action plan: the child's task, verbatim. */
static char *action_plan(const struct loop *lp)
{
	char *path = path_in(lp, "controller-output.md"), *plan = NULL;
	struct al_md md = AL_MD_INIT;

	if (al_md_read(&md, path) == 0) {
		plan = al_md_section(md.body, md.body_len, "Action Plan");
		if (!plan)
			plan = al_md_trim_lines(md.body, md.body_len);
	}
	al_md_release(&md);
	free(path);
	if (plan && *plan) { /* text ends in a newline: `while read` sees the last line */
		char *line_ended = al_xprintf("%s\n", plan);

		free(plan);
		plan = line_ended;
	}
	return plan ? plan : al_strdup("");
}

static int actuate(struct loop *lp)
{
	struct al_exec *ex = lp->ex;
	char *summary = NULL;
	int rc;

	if (lp->n->strategy == AL_STRATEGY_COMPOSITE) {
		struct al_result res;
		char *plan = action_plan(lp);

		rc = al_exec_node(ex, lp->n->child, plan, lp->st.label, true, lp->deadline, &res);
		free(plan);
		if (rc < 0)
			return rc; /* interrupted, or the run failed below */
		summary = al_xprintf("%s: %s after %d iteration%s", lp->n->child->id, res.reason,
				     res.iterations, res.iterations == 1 ? "" : "s");
		al_result_release(&res);
	} else {
		char *in = path_in(lp, "controller-output.md"), *out = path_in(lp, "actuator-output.md");
		struct al_call call;
		struct al_call_ctx ctx = {
			.agent = lp->n->actuator.agent, .role = AL_ROLE_ACTUATOR, .node = lp->n,
			.label = lp->st.label, .dir = lp->dir, .input = in, .output = out,
			.task = lp->task, .deadline_ms = lp->deadline,
		};

		al_progress_step(ex->progress, lp->st.label, lp->n->path, "actuator", "%s",
				 lp->n->actuator.path);
		rc = al_call_run(ex, &ctx, &call);
		al_call_release(&call);
		if (rc == 0)
			summary = summarize(out, "actuation");
		free(in);
		free(out);
		if (rc == AL_EAGENT)
			return agent_failed(lp, "actuator", AL_PHASE_MEASURE);
		if (rc < 0)
			return rc;
	}
	al_run_event(ex->run, "actuator", "{s:s, s:s, s:s}", "node", lp->n->path, "label",
		     lp->st.label, "summary", summary);
	set_str(&lp->st.summary, summary);
	free(summary);
	lp->st.phase = AL_PHASE_MEASURE;
	return save(lp);
}

static int start(struct loop *lp, const char *task, bool child_entry)
{
	struct al_exec *ex = lp->ex;
	struct al_strbuf sb = AL_STRBUF_INIT;
	char now[32], task_sha[65], *task_path = path_in(lp, "task.md");
	int rc = al_node_state_read(&lp->st, lp->state_path);
	bool ours = rc == 0 && !strcmp(lp->st.run_id, ex->run->st.run_id) &&
		    !strcmp(lp->st.node_path, lp->n->path) &&
		    label_matches(lp->st.label, lp->parent_label);

	if (rc == AL_EINVALID)
		goto done;
	if (ours) { /* continuing: the task it was given is on disk, byte for byte */
		char sha[65];

		rc = al_strbuf_read_file(&sb, task_path, 0);
		if (rc < 0) {
			rc = al_err(AL_EINVALID, "'%s' is missing: the task of node '%s' is lost",
				    task_path, lp->n->path);
			goto done;
		}
		al_sha256_hex(sb.buf, sb.len, sha);
		if (lp->st.task_sha256 && strcmp(sha, lp->st.task_sha256)) {
			rc = al_err(AL_EINVALID, "'%s' is damaged: it is not the task node '%s' "
				    "was given", task_path, lp->n->path);
			goto done;
		}
		lp->task = al_strbuf_detach(&sb, NULL);
		lp->resumed = true;
		if (ex->resuming && ex->nresume_stack &&
		    !strcmp(ex->resume_stack[ex->nresume_stack - 1], lp->n->path))
			ex->resuming = false; /* the innermost resumed frame: what follows is new */
		al_run_event(ex->run, "node_resume", "{s:s, s:s, s:s}", "node", lp->n->path,
			     "label", lp->st.label, "phase", al_phase_names[lp->st.phase]);
		rc = al_run_enter(ex->run, lp->n->path);
		goto done;
	}
	if (ex->resuming) {
		for (size_t i = 0; i < ex->nresume_stack; i++) {
			if (strcmp(ex->resume_stack[i], lp->n->path))
				continue;
			rc = al_err(AL_EINVALID, "'%s' does not hold the state of node '%s', which "
				    "the run was executing", lp->state_path, lp->n->path);
			goto done;
		}
	}
	al_node_state_release(&lp->st);
	al_timestamp(now);
	lp->task = al_strdup(task);
	lp->st.run_id = al_strdup(ex->run->st.run_id);
	lp->st.node_id = al_strdup(lp->n->id);
	lp->st.node_path = al_strdup(lp->n->path);
	lp->st.parent_path = al_strdup(lp->n->parent ? lp->n->parent->path : "root");
	lp->st.level = lp->n->depth;
	lp->st.label = label_for(lp->parent_label, 0);
	lp->st.phase = AL_PHASE_MEASURE;
	lp->st.status = al_strdup("running");
	lp->st.child_entry = child_entry;
	lp->st.max_iterations = lp->n->max_iterations;
	lp->st.started_at = al_strdup(now);
	al_sha256_hex(lp->task, strlen(lp->task), task_sha);
	lp->st.task_sha256 = al_strdup(task_sha);
	if ((rc = al_mkdirs(lp->dir)) < 0 ||
	    (rc = al_write_atomic(task_path, lp->task, strlen(lp->task))) < 0 || (rc = save(lp)) < 0)
		goto done;
	/* the state first: a stack naming a node without state would be damage */
	rc = al_run_enter(ex->run, lp->n->path);
	al_run_event(ex->run, "node_start", "{s:s, s:s, s:i}", "node", lp->n->path, "label",
		     lp->st.label, "max_iterations", lp->n->max_iterations);
	al_progress_note(ex->progress, "ailoop: [%s] %s: loop starts (at most %d iterations)",
			 lp->st.label, lp->n->path, lp->n->max_iterations);
done:
	al_strbuf_release(&sb);
	free(task_path);
	return rc;
}

int al_loop_run(struct al_exec *ex, const struct al_node *n, const char *task,
		const char *parent_label, bool child_entry, int64_t deadline,
		struct al_result *res)
{
	struct loop lp = { .ex = ex, .n = n, .parent_label = parent_label };
	bool done = false;
	int rc;

	lp.dir = al_run_node_dir(ex->run, n->path);
	lp.state_path = path_in(&lp, "orchestrator-output.md");
	lp.root = n == ex->flow->root;
	lp.entry_ms = al_now_ms(); /* the node's clock: time spent before is in its state */
	if ((rc = start(&lp, task, child_entry)) < 0)
		goto out;
	ex->frames[ex->nframes++] = (struct al_frame){ n, &lp.st, lp.dir, lp.task };
	lp.entry_ms = al_now_ms();
	lp.base_elapsed = lp.st.elapsed_ms;
	lp.deadline = deadline;
	if (n->timeout_seconds) {
		int64_t own = lp.entry_ms + (int64_t)n->timeout_seconds * 1000 - lp.base_elapsed;

		if (!lp.deadline || own < lp.deadline)
			lp.deadline = own;
	}
	while (!done && rc == 0) {
		if (al_signals_count()) { /* the safe point between two steps */
			rc = AL_EINTR;
			break;
		}
		if (lp.st.phase != AL_PHASE_COMMIT && lp.deadline && al_now_ms() >= lp.deadline) {
			char msg[96];

			snprintf(msg, sizeof(msg), "timed out in phase %s",
				 al_phase_names[lp.st.phase]);
			rc = finish(&lp, "timeout", msg);
			continue;
		}
		switch (lp.st.phase) {
		case AL_PHASE_MEASURE: rc = measure(&lp); break;
		case AL_PHASE_COMMIT: rc = commit(&lp, &done); break;
		case AL_PHASE_CONTROLLER: rc = decide(&lp); break;
		case AL_PHASE_ACTUATE: rc = actuate(&lp); break;
		}
	}
	ex->nframes--;
	ex->resuming = false; /* a frame ended: the stack the run was resumed at is passed */
	if (rc < 0)
		goto out;
	if (!strcmp(lp.st.status, "error")) { /* fail-fast: the run ends here */
		rc = al_err(AL_EAGENT, "%s", lp.st.summary ? lp.st.summary : "agent error");
		goto out;
	}
	res->success = !strcmp(lp.st.status, "complete");
	res->reason = al_status_name(lp.st.status);
	res->iterations = lp.st.iteration > 0 ? lp.st.iteration - 1 : 0;
	res->summary = al_strdup(lp.st.summary ? lp.st.summary : "");
	if (!lp.root)
		rc = al_run_leave(ex->run);
out:
	al_node_state_release(&lp.st);
	free(lp.dir);
	free(lp.state_path);
	free(lp.task);
	return rc;
}
