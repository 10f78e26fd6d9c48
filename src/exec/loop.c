#include "ailoop/exec/breaker.h"
#include "ailoop/exec/exec.h"
#include "ailoop/base/fsutil.h"
#include "ailoop/exec/invoke.h"
#include "ailoop/model/md.h"
#include "ailoop/exec/sensor.h"
#include "ailoop/base/signals.h"
#include "ailoop/base/util.h"

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

static char *path_in(const struct al_node_run *lp, const char *file)
{
	return al_xprintf("%s/%s", lp->dir, file);
}

/*
 * What a direct actuator did last, for the controller: its output, or the
 * tail of its log when it wrote none (it failed, on_error: continue); NULL
 * before it first acted.
 */
static char *actuator_report(const struct al_node_run *lp)
{
	char *path = path_in(lp, "actuator-output.md");

	if (!al_file_exists(path)) {
		free(path);
		path = path_in(lp, "logs/actuator.log");
	}
	if (al_file_exists(path))
		return path;
	free(path);
	return NULL;
}

/* result-output.md below its head: what a parent's controller reads. */
static void result_body(struct al_node_run *lp, const char *message, struct al_strbuf *sb)
{
	struct al_strbuf now = AL_STRBUF_INIT;
	struct al_readings r;
	char *ctl = path_in(lp, "controller-output.md");
	struct al_md md = AL_MD_INIT;

	al_sensors_read_kept(lp, &r);
	al_readings_line(&r, &now);
	al_strbuf_addf(sb, "## Summary\n\n%s\n\n## Metrics Delta\n\n- at entry: %s\n- now: %s\n\n"
		       "## Key Observations for Parent Controller\n\n", message,
		       lp->st.initial_sensors ? lp->st.initial_sensors : "none",
		       now.len ? now.buf : "none");
	if (al_md_read(&md, ctl) == 0 && md.body_len) {
		char *plan = al_md_section(md.body, md.body_len, "Action Plan");

		if (plan && *plan && !lp->st.target_met)
			al_strbuf_addf(sb, "What the controller still asked for:\n\n%s\n", plan);
		else
			al_strbuf_adds(sb, lp->st.target_met ? "The target is met.\n"
							     : "No action plan was left.\n");
		free(plan);
	} else {
		al_strbuf_addf(sb, "%s\n", message);
	}
	al_md_release(&md);
	al_readings_release(&r);
	al_strbuf_release(&now);
	free(ctl);
}

/* The node has ended: record how, and move to its last commit. */
static int finish(struct al_node_run *lp, const char *status, const char *message)
{
	struct al_strbuf body = AL_STRBUF_INIT;
	int rc;

	result_body(lp, message, &body);
	rc = al_node_finish(lp, status, message, true, body.buf);
	al_strbuf_release(&body);
	return rc;
}

/* An agent failed: fail-fast ends the node (and run); continue moves on. */
static int agent_failed(struct al_node_run *lp, const char *what, enum al_phase next)
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
		al_set_str(&lp->st.summary, summary);
		lp->st.phase = next;
		rc = al_node_save(lp);
		free(summary);
	}
	free(msg);
	return rc;
}

static int measure(struct al_node_run *lp)
{
	int rc;

	al_sensor_outputs_forget(lp); /* measured again now */
	if (al_node_committed(lp)) {
		/*
		 * Measured and committed before the stop: the readings are in
		 * the sensors' output files as committed. Measuring again would
		 * pay for every sensor again, and could read otherwise than the
		 * commit says.
		 */
		if (lp->st.iteration == 0)
			al_set_str(&lp->st.summary, lp->st.child_entry
							    ? "initial entry (sensors skipped)"
							    : "initial measurement");
		al_progress_note(lp->ex->progress, "ailoop: [%s] %s sensors: measured before the "
				 "stop, as committed", lp->st.label, lp->n->path);
		lp->st.phase = AL_PHASE_COMMIT;
		return lp->st.iteration == 0 && lp->st.child_entry
			       ? 0
			       : al_sensors_remember(lp->ex, lp->n, lp->dir);
	}
	if (lp->st.iteration == 0 && lp->st.child_entry) {
		rc = al_sensors_stub(lp->n, lp->dir);
		al_set_str(&lp->st.summary, "initial entry (sensors skipped)");
	} else {
		rc = al_sensors_measure(lp->ex, lp->n, lp->dir, lp->st.label, lp->task,
					lp->deadline,
					lp->st.iteration == (lp->st.child_entry ? 1 : 0), &lp->st);
		if (rc == AL_EAGENT)
			return agent_failed(lp, "sensor", AL_PHASE_COMMIT);
		if (lp->st.iteration == 0)
			al_set_str(&lp->st.summary, "initial measurement");
	}
	if (rc < 0)
		return rc;
	al_run_event(lp->ex->run, "sensors", "{s:s, s:s}", "node", lp->n->path, "label",
		     lp->st.label);
	/*
	 * Not saved: killed before the commit, the node measures again; killed
	 * after it, the resumed node finds the commit (above). One state write
	 * less per step.
	 */
	lp->st.phase = AL_PHASE_COMMIT;
	return 0;
}

/*
 * The circuit breaker opened (its message is al_errmsg()): the node waits,
 * blocked, at the start of its next iteration, and the run stops there.
 * Resuming it resets the breaker (al_breaker_resume).
 */
static int block(struct al_node_run *lp)
{
	char *msg = al_strdup(al_errmsg());
	int rc;

	al_set_str(&lp->st.status, "blocked");
	al_set_str(&lp->st.summary, lp->st.breaker.reason);
	rc = al_node_save(lp);
	if (rc == 0)
		rc = al_err(AL_EBLOCKED, "%s", msg);
	free(msg);
	return rc;
}

static int commit(struct al_node_run *lp, bool *done)
{
	struct al_strbuf line = AL_STRBUF_INIT;
	struct al_readings r;
	int rc, blocked;

	al_sensors_read_kept(lp, &r);
	al_readings_line(&r, &line);
	al_readings_release(&r);
	al_run_event(lp->ex->run, "loop_iteration", "{s:s, s:s, s:s, s:s}", "node", lp->n->path,
		     "label", lp->st.label, "status", lp->st.status, "sensors", line.buf);
	rc = al_node_commit(lp, line.buf);
	if (rc == 0 && lp->st.iteration == 0)
		al_set_str(&lp->st.initial_sensors, line.len ? line.buf : "none");
	al_strbuf_release(&line);
	if (rc < 0)
		return rc;
	if (al_node_state_final(&lp->st)) {
		*done = true; /* nothing more is written: the tree stays as committed */
		return 0;
	}
	/*
	 * The breaker counts the iteration just committed (iteration 0 is the
	 * baseline). After the last actuation only the controller's final
	 * judgement is left: nothing to save by opening it then.
	 */
	blocked = al_breaker_iteration(lp, lp->st.iteration > 0 &&
				       lp->st.iteration < lp->n->max_iterations);
	if (blocked < 0 && blocked != AL_EBLOCKED)
		return blocked;
	lp->st.iteration++;
	free(lp->st.label);
	lp->st.label = al_label_for(lp->parent_label, lp->st.iteration);
	lp->st.phase = AL_PHASE_CONTROLLER;
	al_set_str(&lp->st.summary, NULL);
	if (blocked == AL_EBLOCKED)
		return block(lp);
	return al_node_save(lp);
}

/* builtin:all-pass: met iff every sensor passes (*met); the plan lists the rest. */
static int all_pass(struct al_node_run *lp, const struct al_readings *r, const char *out,
		    bool *met)
{
	struct al_strbuf sb = AL_STRBUF_INIT;
	struct al_fm *fm = al_fm_new();
	size_t passing = 0;
	int rc;

	for (size_t i = 0; i < r->n; i++)
		passing += !strcmp(r->v[i].status, "pass");
	*met = passing == r->n;
	al_fm_bool(fm, "target-met", *met);
	al_fm_str(fm, "controller", AL_BUILTIN_ALL_PASS);
	al_fm_finish(fm, &sb);
	al_strbuf_addf(&sb, "\n# Controller Output\n\n## Assessment\n\n%zu of %zu sensors pass.\n",
		       passing, r->n);
	if (passing < r->n) {
		al_strbuf_adds(&sb, "\n## Action Plan\n\nMake these failing sensors pass:\n");
		for (size_t i = 0; i < r->n; i++) {
			char *path = al_sensor_output_path(lp->dir, r->v[i].name), *tail;
			const struct al_md *md = al_sensor_output(lp, i, &rc);

			if (!strcmp(r->v[i].status, "pass")) {
				free(path);
				continue;
			}
			al_strbuf_addf(&sb, "\n### %s: %s%s%s%s\n\nFrom %s:\n\n", r->v[i].name,
				       r->v[i].status, r->v[i].detail ? " (" : "",
				       r->v[i].detail ? r->v[i].detail : "", r->v[i].detail ? ")" : "",
				       path);
			if (rc == 0) {
				size_t start = md->body_len > 2000 ? md->body_len - 2000 : 0;

				while (start && start < md->body_len && md->body[start - 1] != '\n')
					start++; /* from the start of a line */
				tail = al_md_trim_lines(md->body + start, md->body_len - start);
				al_strbuf_addf(&sb, "%s\n", tail);
				free(tail);
			}
			free(path);
		}
	}
	rc = al_write_in_place(out, sb.buf, sb.len);
	al_strbuf_release(&sb);
	return rc;
}

/*
 * termination.exit_gate dual: the controller said the target is met, but
 * not every sensor passes. The loop goes on; the controller is told why in
 * its next prompt, the actuator in its input (controller-output.md).
 */
static int refuse(struct al_node_run *lp, const struct al_readings *r, const char *out,
		  bool *met)
{
	struct al_strbuf failing = AL_STRBUF_INIT, note = AL_STRBUF_INIT, text = AL_STRBUF_INIT;
	int rc;

	for (size_t i = 0; i < r->n; i++)
		if (strcmp(r->v[i].status, "pass"))
			al_strbuf_addf(&failing, "%s%s: %s%s%s%s", failing.len ? ", " : "",
				       r->v[i].name, r->v[i].status, r->v[i].detail ? " (" : "",
				       r->v[i].detail ? r->v[i].detail : "",
				       r->v[i].detail ? ")" : "");
	al_strbuf_addf(&note, "The exit gate (termination.exit_gate: dual) refused the end of "
		       "the loop in iteration %s: the controller said target-met: true, but not "
		       "every sensor passes (%s). The loop goes on: it is complete only when the "
		       "controller says the target is met and every sensor passes in the same "
		       "iteration.", lp->st.label, failing.buf);
	al_run_event(lp->ex->run, "exit_gate_refused", "{s:s, s:s, s:s}", "node", lp->n->path,
		     "label", lp->st.label, "failing", failing.buf);
	al_progress_note(lp->ex->progress, "ailoop: [%s] %s: the controller says the target is "
			 "met, but %s: the exit gate (dual) refuses, the loop goes on", lp->st.label,
			 lp->n->path, failing.buf);
	al_set_str(&lp->st.gate_note, note.buf);
	rc = al_strbuf_read_file(&text, out, 0);
	if (rc >= 0) {
		al_strbuf_addf(&text, "\n## Exit Gate\n\n%s\n", note.buf);
		rc = al_write_in_place(out, text.buf, text.len);
	}
	*met = false;
	al_strbuf_release(&failing);
	al_strbuf_release(&note);
	al_strbuf_release(&text);
	return rc;
}

static int decide(struct al_node_run *lp)
{
	struct al_exec *ex = lp->ex;
	char *out = path_in(lp, "controller-output.md"), *input = NULL;
	struct al_readings r;
	struct al_md md = AL_MD_INIT;
	bool met = false;
	int rc;

	al_sensors_read_kept(lp, &r);
	if (lp->n->builtin_all_pass) {
		al_progress_step(ex->progress, lp->st.label, lp->n->path, "controller", "%s",
				 AL_BUILTIN_ALL_PASS);
		rc = all_pass(lp, &r, out, &met);
	} else {
		struct al_strbuf section = AL_STRBUF_INIT;
		struct al_call call;
		struct al_call_ctx ctx = {
			.agent = lp->n->controller.agent, .role = AL_ROLE_CONTROLLER, .node = lp->n,
			.label = lp->st.label, .dir = lp->dir, .output = out, .task = lp->task,
			.deadline_ms = lp->deadline, .notice = lp->st.gate_note, .sessions = &lp->st,
		};

		if (r.all_pass)
			ctx.model = al_flow_converge_model(ex->flow, ctx.agent, NULL);
		if (lp->n->child) {
			char *child_dir = al_run_node_dir(ex->run, lp->n->child->path);

			input = al_xprintf("%s/result-output.md", child_dir);
			free(child_dir);
			ctx.input = al_file_exists(input) ? input : NULL;
		} else if (lp->st.iteration > 1) { /* the actuator acted in this entry */
			input = actuator_report(lp);
			ctx.input = input;
		}
		al_sensors_section(&section, lp->n, lp->dir);
		ctx.sensors_section = section.buf;
		al_progress_step(ex->progress, lp->st.label, lp->n->path, "controller", "%s%s%s",
				 lp->n->controller.path, ctx.model ? " with model " : "",
				 ctx.model ? ctx.model : "");
		al_sensor_outputs_forget(lp); /* an agent's turn */
		rc = al_call_run(ex, &ctx, &call);
		al_call_release(&call);
		al_strbuf_release(&section);
	}
	if (rc == 0 && !lp->n->builtin_all_pass) {
		rc = al_md_read(&md, out);
		if (rc == 0 && !al_md_bool(&md, "target-met", &met))
			rc = al_err(AL_EAGENT, "controller output '%s' has no readable 'target-met' "
				    "(true or false) in its front matter", out);
		else if (rc < 0)
			rc = al_err(AL_EAGENT, "controller output unreadable: %s", al_errmsg());
		al_md_release(&md);
	}
	if (rc == 0 && met && lp->n->exit_gate_dual && !r.all_pass)
		rc = refuse(lp, &r, out, &met);
	else if (rc == 0)
		al_set_str(&lp->st.gate_note, NULL); /* the controller has been told */
	al_readings_release(&r);
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
	return al_node_save(lp);
}

/* The controller's action plan: the child's task, verbatim. */
static char *action_plan(const struct al_node_run *lp)
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

static int actuate(struct al_node_run *lp)
{
	struct al_exec *ex = lp->ex;
	char *summary = NULL;
	int rc;

	al_sensor_outputs_forget(lp); /* the actuator's turn, or a child loop's */
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
		if (lp->st.brk) { /* break_loop below: the loop ends, successfully */
			free(summary);
			return finish(lp, "complete", "break_loop");
		}
	} else {
		char *in = path_in(lp, "controller-output.md"), *out = path_in(lp, "actuator-output.md");
		struct al_call call;
		struct al_call_ctx ctx = {
			.agent = lp->n->actuator.agent, .role = AL_ROLE_ACTUATOR, .node = lp->n,
			.label = lp->st.label, .dir = lp->dir, .input = in, .output = out,
			.task = lp->task, .deadline_ms = lp->deadline, .sessions = &lp->st,
		};

		al_progress_step(ex->progress, lp->st.label, lp->n->path, "actuator", "%s",
				 lp->n->actuator.path);
		rc = al_call_run(ex, &ctx, &call);
		al_call_release(&call);
		if (rc == 0)
			summary = al_output_summary(out, "actuation");
		free(in);
		free(out);
		if (rc == AL_EAGENT)
			return agent_failed(lp, "actuator", AL_PHASE_MEASURE);
		if (rc < 0)
			return rc;
	}
	al_run_event(ex->run, "actuator", "{s:s, s:s, s:s}", "node", lp->n->path, "label",
		     lp->st.label, "summary", summary);
	al_set_str(&lp->st.summary, summary);
	free(summary);
	lp->st.phase = AL_PHASE_MEASURE;
	return al_node_save(lp);
}

int al_loop_run(struct al_exec *ex, const struct al_node *n, const char *task,
		const char *parent_label, bool child_entry, int64_t deadline,
		struct al_result *res)
{
	struct al_node_run lp;
	bool done = false;
	int rc = al_node_begin(&lp, ex, n, task, parent_label, child_entry, deadline,
			       AL_PHASE_MEASURE, 0);

	if (rc < 0)
		return rc;
	rc = al_breaker_resume(&lp);
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
		default: rc = al_err(AL_EINVALID, "'%s' is damaged: phase %s is not a loop's",
				     lp.state_path, al_phase_names[lp.st.phase]);
		}
	}
	return al_node_end(&lp, rc, res);
}
