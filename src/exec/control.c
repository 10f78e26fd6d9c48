#include "ailoop/exec/breaker.h"
#include "ailoop/exec/condition_eval.h"
#include "ailoop/exec/exec.h"
#include "ailoop/exec/feedback.h"
#include "ailoop/store/memory.h"
#include "ailoop/base/signals.h"
#include "ailoop/base/util.h"

#include <stdlib.h>
#include <string.h>

/*
 * The control nodes of ReAcTree (SPEC §3.1): sequence, fallback,
 * conditional, transaction and the loop-until form of loop. Each is a
 * state machine over its orchestrator-output.md, like the sensor-form loop:
 *
 *   conditional:  condition -> children (the branch) -> done
 *   sequence, fallback, transaction:  children (child k, k+1, …) -> done
 *   transaction that fails:  … -> rollback -> commit
 *   loop-until:  children -> condition -> commit -> children (next iteration) …
 *
 * The child being run is written before it starts; a child that ended
 * keeps its final state, so a run killed after it ended but before its
 * parent moved on gets the child's result back from disk, and nothing runs
 * twice. Control nodes make no commit of their own, but for a loop's
 * iteration, a transaction's rollback and the run's end at the root.
 */

static size_t nkids(const struct al_node_run *nr)
{
	if (nr->n->type != AL_NODE_CONDITIONAL)
		return nr->n->nchildren;
	if (!nr->st.branch)
		return 0;
	return (!strcmp(nr->st.branch, "true") ? nr->n->then_branch : nr->n->else_branch) ? 1 : 0;
}

static const struct al_node *kid(const struct al_node_run *nr, size_t k)
{
	if (nr->n->type != AL_NODE_CONDITIONAL)
		return nr->n->children[k];
	return !strcmp(nr->st.branch, "true") ? nr->n->then_branch : nr->n->else_branch;
}

/* The label its children run in: a loop's iteration, else the node's own entry. */
static const char *kids_label(const struct al_node_run *nr)
{
	return nr->n->type == AL_NODE_LOOP ? nr->st.label : nr->parent_label;
}

static int finish(struct al_node_run *nr, const char *status, const char *message)
{
	al_feedback_abandon(nr);
	/* a loop's last iteration is committed like the others */
	return al_node_finish(nr, status, message, nr->n->type == AL_NODE_LOOP, NULL);
}

/* Whether a transaction rolls back when a child ended for `reason`. */
static bool rolls_back(const struct al_node *n, const char *reason)
{
	unsigned why = !strcmp(reason, "timeout") ? AL_ROLLBACK_TIMEOUT
		     : !strcmp(reason, "error")   ? AL_ROLLBACK_ERROR
						  : AL_ROLLBACK_FAILURE;

	return n->type == AL_NODE_TRANSACTION && (n->rollback_on & why);
}

/* The node fails for `reason`: a transaction may roll back first. */
static int fail(struct al_node_run *nr, const char *reason, const char *message)
{
	if (rolls_back(nr->n, reason)) {
		al_set_str(&nr->st.status, reason);
		al_set_str(&nr->st.summary, message);
		nr->st.phase = AL_PHASE_ROLLBACK;
		return al_node_save(nr);
	}
	return finish(nr, reason, message);
}

/* Every child has run (or there was none to run). */
static int children_done(struct al_node_run *nr)
{
	char msg[160];
	size_t n = nkids(nr);

	switch (nr->n->type) {
	case AL_NODE_FALLBACK:
		snprintf(msg, sizeof(msg), "all %zu children failed", n);
		return finish(nr, "failed", msg);
	case AL_NODE_LOOP:
		nr->st.phase = AL_PHASE_CONDITION;
		return al_node_save(nr);
	case AL_NODE_CONDITIONAL: /* a missing branch is success */
		snprintf(msg, sizeof(msg), "condition %s: no branch to run", nr->st.branch);
		return finish(nr, "complete", msg);
	case AL_NODE_TRANSACTION:
		al_run_event(nr->ex->run, "transaction_commit", "{s:s, s:s}", "node", nr->n->path,
			     "label", nr->st.label);
		/* fall through */
	default:
		snprintf(msg, sizeof(msg), "all %zu children succeeded", n);
		return finish(nr, "complete", msg);
	}
}

/* Runs the current child, and moves on as the node's type says. */
static int run_child(struct al_node_run *nr)
{
	struct al_result res;
	const struct al_node *c;
	char *msg;
	int rc;

	if ((rc = al_feedback_step(nr, false)) != 0)
		return rc < 0 ? rc : 0;
	if ((size_t)nr->st.child >= nkids(nr))
		return children_done(nr);
	if (al_node_timed_out(nr)) {
		if (nr->n->type == AL_NODE_LOOP)
			al_run_event(nr->ex->run, "loop_timeout", "{s:s, s:i}", "node", nr->n->path,
				     "iteration", nr->st.iteration);
		return fail(nr, "timeout", "timed out before its next child");
	}
	c = kid(nr, (size_t)nr->st.child);
	rc = al_exec_node(nr->ex, c, nr->task, kids_label(nr), false, nr->deadline, &res);
	if (rc == AL_EFEEDBACK) { /* feedback from below: this node may be its handler */
		int took = al_feedback_step(nr, true);

		return took < 0 ? took : took ? 0 : rc;
	}
	if (rc < 0)
		return rc; /* interrupted, or the run failed below */
	/* the child's own summary is in its result-output.md: one level's worth here */
	msg = al_xprintf("%s: %s", c->id, res.reason);
	switch (nr->n->type) {
	case AL_NODE_FALLBACK:
		rc = res.success ? finish(nr, "complete", msg) : 0;
		break;
	case AL_NODE_CONDITIONAL: /* the branch's result is the node's */
		rc = res.success ? finish(nr, "complete", msg) : fail(nr, res.reason, msg);
		break;
	case AL_NODE_LOOP: /* a failing child does not stop the iteration (recovery) */
		if (nr->st.brk)
			nr->st.child = (int)nkids(nr) - 1; /* break_loop: after the current child */
		break;
	default: /* sequence, transaction */
		rc = res.success ? 0 : fail(nr, res.reason, msg);
		break;
	}
	al_result_release(&res);
	free(msg);
	if (rc < 0 || al_node_state_final(&nr->st) || nr->st.phase != AL_PHASE_CHILDREN)
		return rc;
	nr->st.child++;
	return al_node_save(nr);
}

static int eval(struct al_node_run *nr, const struct al_condition *cond, bool *result)
{
	struct al_exec *ex = nr->ex;
	char code[65] = "";
	const char *envp[] = { NULL, NULL, NULL, NULL };
	char *run_dir = al_xprintf("AILOOP_RUN_DIR=%s", ex->run->abs_dir);
	char *node_path = al_xprintf("AILOOP_NODE_PATH=%s", nr->n->path);
	char *run_id = al_xprintf("AILOOP_RUN_ID=%s", ex->run->st.run_id);
	struct al_cond_env env = {
		.memory = ex->memory, .envp = envp, .deadline_ms = nr->deadline,
		.cache = ex->cond_cache, .node_path = nr->n->path, .tree = code,
		.record = ex->agents_file,
	};
	int rc;

	envp[0] = run_dir;
	envp[1] = node_path;
	envp[2] = run_id;
	/* every step commits, so HEAD's tree is the tree a condition sees */
	if (al_git_code_id(ex->git, code) < 0)
		code[0] = '\0';
	rc = al_condition_eval(cond, &env, result);
	free(run_dir);
	free(node_path);
	free(run_id);
	return rc;
}

/* A conditional chooses its branch once: the choice is written before it runs. */
static int choose(struct al_node_run *nr)
{
	struct al_strbuf what = AL_STRBUF_INIT;
	bool met = false;
	int rc = eval(nr, nr->n->condition, &met);

	if (rc == AL_ETIMEOUT)
		return fail(nr, "timeout", al_errmsg());
	if (rc == AL_EINTR)
		return rc;
	if (rc < 0) { /* no commit of its own says why: the note does */
		al_progress_note(nr->ex->progress, "ailoop: [%s] %s: %s", nr->st.label, nr->n->path,
				 al_errmsg());
		return fail(nr, "failed", al_errmsg());
	}
	al_condition_describe(nr->n->condition, &what);
	al_run_event(nr->ex->run, "conditional_eval", "{s:s, s:s, s:s, s:b}", "node",
		     nr->n->path, "label", nr->st.label, "condition", what.buf, "result", met);
	al_progress_note(nr->ex->progress, "ailoop: [%s] %s: %s: %s", nr->st.label, nr->n->path,
			 what.buf, met ? "true" : "false");
	al_strbuf_release(&what);
	al_set_str(&nr->st.branch, met ? "true" : "false");
	nr->st.child = 0;
	nr->st.phase = AL_PHASE_CHILDREN;
	return al_node_save(nr);
}

/* A loop-until's iteration has run its children: does the loop end? */
static int judge(struct al_node_run *nr)
{
	const struct al_node *n = nr->n;
	bool met = false, leave;
	char msg[160];
	int rc;

	if (nr->st.brk) {
		leave = met = true;
	} else if (n->exit_on == AL_EXIT_MANUAL_BREAK) {
		char *key = al_xprintf("loop.%s.break", n->id);
		const char *v = al_memory_get(nr->ex->memory, key);

		leave = met = v && !strcmp(v, "true");
		free(key);
	} else if (n->condition) {
		if ((rc = eval(nr, n->condition, &met)) == AL_ETIMEOUT)
			return finish(nr, "timeout", al_errmsg());
		if (rc < 0)
			return rc == AL_EINTR ? rc : finish(nr, "failed", al_errmsg());
		leave = met == (n->exit_on == AL_EXIT_CONDITION_TRUE);
	} else {
		leave = false;
	}
	al_run_event(nr->ex->run, "loop_iteration", "{s:s, s:s, s:i, s:b}", "node", n->path,
		     "label", nr->st.label, "iteration", nr->st.iteration, "condition_met", met);
	if (leave) {
		snprintf(msg, sizeof(msg), "%s after %d iteration%s",
			 nr->st.brk ? "break_loop" : n->exit_on == AL_EXIT_MANUAL_BREAK
			 ? "manual break" : "exit condition met", nr->st.iteration,
			 nr->st.iteration == 1 ? "" : "s");
		al_run_event(nr->ex->run, "loop_complete", "{s:s, s:i}", "node", n->path,
			     "iterations", nr->st.iteration);
		return finish(nr, "complete", msg);
	}
	if (nr->st.iteration >= n->max_iterations) {
		/* SPEC: only a loop with a condition fails at its limit; a manual break may never come */
		bool until = n->condition != NULL;

		snprintf(msg, sizeof(msg), "%s (%d)", until ? "max iterations reached"
			 : "all iterations ran", n->max_iterations);
		al_run_event(nr->ex->run, until ? "loop_max_iterations" : "loop_complete",
			     "{s:s, s:i}", "node", n->path, "iterations", nr->st.iteration);
		return finish(nr, until ? "max-iterations-reached" : "complete", msg);
	}
	snprintf(msg, sizeof(msg), "iteration %d: %s", nr->st.iteration,
		 n->condition || n->exit_on == AL_EXIT_MANUAL_BREAK ? "exit condition not met"
								 : "done");
	al_set_str(&nr->st.summary, msg);
	nr->st.phase = AL_PHASE_COMMIT;
	return al_node_save(nr);
}

/* A transaction that failed: the work tree goes back to its start, and a commit says so. */
static int rollback(struct al_node_run *nr)
{
	struct al_exec *ex = nr->ex;
	char *msg;
	int rc = al_git_rollback(ex->git, nr->st.base_commit, nr->st.base_tree, AL_RUNS_DIR);

	if (rc < 0)
		return rc;
	al_run_event(ex->run, "transaction_rollback", "{s:s, s:s, s:s, s:s}", "node",
		     nr->n->path, "label", nr->st.label, "to", nr->st.base_commit, "reason",
		     nr->st.summary ? nr->st.summary : "");
	msg = al_xprintf("rollback: %s", nr->st.summary ? nr->st.summary : nr->st.status);
	al_utf8_cut(msg, 200);
	al_progress_note(ex->progress, "ailoop: [%s] %s: rolled back to %.12s", nr->st.label,
			 nr->n->path, nr->st.base_commit);
	rc = al_node_finish(nr, nr->st.status, msg, true, NULL);
	free(msg);
	return rc;
}

static int commit(struct al_node_run *nr, bool *done)
{
	int rc = al_node_commit(nr, NULL), blocked;

	if (rc < 0)
		return rc;
	if (al_node_state_final(&nr->st)) {
		*done = true;
		return 0;
	}
	/* a loop's next iteration, unless its circuit breaker opens on this one */
	blocked = al_breaker_iteration(nr, true);
	if (blocked < 0 && blocked != AL_EBLOCKED)
		return blocked;
	nr->st.iteration++;
	free(nr->st.label);
	nr->st.label = al_label_for(nr->parent_label, nr->st.iteration);
	nr->st.child = 0;
	nr->st.brk = false;
	nr->st.phase = AL_PHASE_CHILDREN;
	al_set_str(&nr->st.summary, NULL);
	if (blocked == AL_EBLOCKED) { /* it waits there, blocked, for `ailoop resume` */
		char *msg = al_strdup(al_errmsg());

		al_set_str(&nr->st.status, "blocked");
		al_set_str(&nr->st.summary, nr->st.breaker.reason);
		if ((rc = al_node_save(nr)) == 0)
			rc = al_err(AL_EBLOCKED, "%s", msg);
		free(msg);
		return rc;
	}
	return al_node_save(nr);
}

/*
 * A transaction's start: the work tree a rollback goes back to, as a tree
 * (it may hold what HEAD does not: an uncommitted change the run was
 * allowed to start with, a fix made while it was stopped), and HEAD.
 */
static int mark_base(struct al_node_run *nr)
{
	struct al_exec *ex = nr->ex;
	char *branch = NULL, oid[AL_OID_HEX], tree[AL_OID_HEX];
	int rc = al_git_head(ex->git, &branch, oid);

	free(branch);
	if (rc == 0)
		rc = al_git_snapshot(ex->git, ex->isolated ? NULL : ex->run->dir, tree);
	if (rc < 0)
		return rc;
	nr->st.base_commit = al_strdup(oid);
	nr->st.base_tree = al_strdup(tree);
	al_run_event(nr->ex->run, "transaction_start", "{s:s, s:s, s:s}", "node", nr->n->path,
		     "label", nr->st.label, "base", oid);
	return al_node_save(nr);
}

int al_control_run(struct al_exec *ex, const struct al_node *n, const char *task,
		   const char *parent_label, int64_t deadline, struct al_result *res)
{
	struct al_node_run nr;
	bool done = false;
	int rc = al_node_begin(&nr, ex, n, task, parent_label, false, deadline,
			       n->type == AL_NODE_CONDITIONAL ? AL_PHASE_CONDITION
							      : AL_PHASE_CHILDREN,
			       n->type == AL_NODE_LOOP ? 1 : 0);

	if (rc < 0)
		return rc;
	if (n->type == AL_NODE_TRANSACTION && !nr.st.base_commit)
		rc = mark_base(&nr);
	if (rc == 0 && n->type == AL_NODE_LOOP && nr.resumed)
		rc = al_breaker_resume(&nr);
	while (!done && rc == 0) {
		if (al_signals_count()) { /* the safe point between two steps */
			rc = AL_EINTR;
			break;
		}
		switch (nr.st.phase) {
		case AL_PHASE_CONDITION:
			if (n->type == AL_NODE_CONDITIONAL)
				rc = choose(&nr);
			else
				rc = judge(&nr);
			break;
		case AL_PHASE_CHILDREN: rc = run_child(&nr); break;
		case AL_PHASE_ROLLBACK: rc = rollback(&nr); break;
		case AL_PHASE_COMMIT: rc = commit(&nr, &done); break;
		case AL_PHASE_DONE: done = true; break;
		default:
			rc = al_err(AL_EINVALID, "'%s' is damaged: phase %s is not a %s node's",
				    nr.state_path, al_phase_names[nr.st.phase],
				    al_node_type_name(n->type));
		}
	}
	return al_node_end(&nr, rc, res);
}
