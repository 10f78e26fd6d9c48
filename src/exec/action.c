#include "ailoop/exec/exec.h"
#include "ailoop/exec/feedback.h"
#include "ailoop/exec/invoke.h"
#include "ailoop/model/md.h"
#include "ailoop/store/memory.h"
#include "ailoop/base/signals.h"
#include "ailoop/base/util.h"

#include <stdlib.h>
#include <string.h>

/*
 * An action node (SPEC §3.1): one agent invocation, then one commit.
 *
 *   actuate (the agent works) -> commit
 *
 * It succeeds when the agent exits 0 and its output's front matter does
 * not say `status: fail`; any other end is the node's failure, which its
 * parent handles (a sequence stops, a fallback tries the next child, a
 * loop goes on): on_error concerns the sensor-form loop's agents, whose
 * failures nothing else would handle.
 *
 * `skill: break_loop` runs no agent: it marks the nearest enclosing loop,
 * which ends successfully once its current child has ended.
 */

#define OUTPUT_TO_MEMORY_MAX (64 * 1024)

/* The agent's task: what the action is, then the task it works within. */
static char *action_task(const struct al_node *n, const char *task)
{
	struct al_strbuf sb = AL_STRBUF_INIT;

	if (n->description)
		al_strbuf_addf(&sb, "%s\n\n", n->description);
	if (n->message)
		al_strbuf_addf(&sb, "%s\n\n", n->message);
	if (n->skill)
		al_strbuf_addf(&sb, "Skill: %s\n", n->skill);
	if (n->args)
		al_strbuf_addf(&sb, "Arguments: %s\n", n->args);
	if (n->target)
		al_strbuf_addf(&sb, "Target: %s\n", n->target);
	if (!sb.len)
		return al_strdup(task);
	al_strbuf_addf(&sb, "\n## Overall task\n\n%s%s", task,
		       *task && task[strlen(task) - 1] != '\n' ? "\n" : "");
	return al_strbuf_detach(&sb, NULL);
}

static int break_loop(struct al_node_run *nr)
{
	struct al_exec *ex = nr->ex;

	for (size_t i = ex->nframes - 1; i-- > 0;) {
		struct al_node_run *loop = ex->frames[i].nr;
		int rc;

		if (ex->frames[i].node->type != AL_NODE_LOOP)
			continue;
		if (i < ex->base_frame) /* another process runs it: parallel.c tells it */
			ex->outer_break = true;
		loop->st.brk = true; /* the loop's first: killed here, the action runs again */
		if (i >= ex->base_frame && (rc = al_node_save(loop)) < 0)
			return rc;
		al_run_event(ex->run, "break_loop", "{s:s, s:s}", "node", nr->n->path, "loop",
			     loop->n->path);
		return al_node_finish(nr, "complete", "break_loop", false, NULL);
	}
	return al_node_finish(nr, "complete", "break_loop outside any loop: nothing to end",
			      false, NULL);
}


/* `output_to_memory`: the output's body, under that key. */
static void to_memory(struct al_node_run *nr, const struct al_md *md)
{
	char *body = al_md_trim_lines(md->body, md->body_len);

	al_utf8_cut(body, OUTPUT_TO_MEMORY_MAX);
	if (!al_utf8_valid(body, strlen(body))) {
		struct al_strbuf utf8 = AL_STRBUF_INIT;

		al_utf8_repair(&utf8, body, strlen(body));
		free(body);
		body = al_strbuf_detach(&utf8, NULL);
	}
	if (al_memory_set(nr->ex->memory, nr->n->output_to_memory, body, false,
			  nr->n->action_agent.path, "action_output") < 0)
		al_progress_note(nr->ex->progress, "ailoop: %s: output_to_memory: %s",
				 nr->n->path, al_errmsg());
	free(body);
}

static int act(struct al_node_run *nr)
{
	struct al_exec *ex = nr->ex;
	char *out = al_xprintf("%s/action-output.md", nr->dir), *summary = NULL;
	struct al_md md = AL_MD_INIT;
	struct al_call call;
	struct al_call_ctx ctx = {
		.agent = nr->n->action_agent.agent, .role = AL_ROLE_ACTION, .node = nr->n,
		.label = nr->st.label, .dir = nr->dir, .output = out, .task = nr->task,
		.deadline_ms = nr->deadline, .sessions = &nr->st,
	};
	const char *status = "complete";
	bool timed_out;
	int rc;

	if (nr->n->break_loop) {
		free(out);
		return break_loop(nr);
	}
	if (al_node_timed_out(nr)) {
		free(out);
		return al_node_finish(nr, "timeout", "timed out before the action started", true,
				      NULL);
	}
	al_progress_step(ex->progress, nr->st.label, nr->n->path, "action", "%s",
			 nr->n->action_agent.path);
	rc = al_call_run(ex, &ctx, &call);
	timed_out = call.res.timed_out;
	al_call_release(&call);
	if (rc == AL_EAGENT) {
		status = timed_out ? "timeout" : "failed";
		summary = al_strdup(al_errmsg());
		al_utf8_cut(summary, 200);
	} else if (rc < 0) {
		free(out);
		return rc;
	} else if ((rc = al_md_read(&md, out)) == 0) {
		const char *said = al_md_str(&md, "status");

		if (said && !strcmp(said, "fail"))
			status = "failed";
		summary = al_output_summary(out, "action");
		if (nr->n->output_to_memory && !strcmp(status, "complete"))
			to_memory(nr, &md);
	} else if (rc == AL_ENOTFOUND) {
		summary = al_strdup("action");
	} else { /* an output it cannot read may say `status: fail`: not a success */
		status = "failed";
		summary = al_xprintf("its output is unreadable: %s", al_errmsg());
		al_utf8_cut(summary, 200);
		al_progress_note(ex->progress, "ailoop: [%s] %s: %s", nr->st.label, nr->n->path,
				 summary);
	}
	rc = al_feedback_after_action(nr, md.doc ? &md : NULL, out, &status, &summary);
	al_md_release(&md);
	free(out);
	if (rc < 0) {
		free(summary);
		return rc;
	}
	al_run_event(ex->run, "action", "{s:s, s:s, s:s, s:s}", "node", nr->n->path, "label",
		     nr->st.label, "status", status, "summary", summary);
	rc = al_node_finish(nr, status, summary, true, NULL);
	free(summary);
	return rc;
}

int al_action_run(struct al_exec *ex, const struct al_node *n, const char *task,
		  const char *parent_label, int64_t deadline, struct al_result *res)
{
	struct al_node_run nr;
	char *text = action_task(n, task);
	bool done = false;
	int rc = al_node_begin(&nr, ex, n, text, parent_label, false, deadline,
			       AL_PHASE_ACTUATE, 0);

	free(text);
	if (rc < 0)
		return rc;
	while (!done && rc == 0) {
		if (al_signals_count()) {
			rc = AL_EINTR;
			break;
		}
		switch (nr.st.phase) {
		case AL_PHASE_ACTUATE: rc = act(&nr); break;
		case AL_PHASE_COMMIT:
			rc = al_node_commit(&nr, NULL);
			done = true;
			break;
		case AL_PHASE_DONE: done = true; break;
		default:
			rc = al_err(AL_EINVALID, "'%s' is damaged: phase %s is not an action's",
				    nr.state_path, al_phase_names[nr.st.phase]);
		}
	}
	if (rc == 0) /* its feedback goes up to the node that handles it */
		rc = al_feedback_pending(&nr);
	return al_node_end(&nr, rc, res);
}
