#include "ailoop/exec/feedback.h"
#include "ailoop/exec/exec.h"
#include "ailoop/base/fsutil.h"
#include "ailoop/model/md.h"
#include "ailoop/store/memory.h"
#include "ailoop/base/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*
 * FEEDBACK edges (feedback.h). A feedback moves through
 *
 *   queued      the sender's output asked; its action commits, then hands
 *               AL_EFEEDBACK up to the handler, through the nodes between
 *   delivered   the handler has it: the run's stack is cut back to it
 *   processing  the handler's children from the target on lost their state
 *               and run again; the target's agents see the feedback
 *   verifying   the handler reached the child that holds the sender
 *   resolved    the sender succeeded without new feedback to the target
 *   failed      it did not, after AL_FEEDBACK_MAX_ROUNDS rounds (or failed,
 *               or its handler ended first)
 *
 * Each step is written to feedback.jsonl after what it stands for is done
 * and before anything that depends on it, so a run killed anywhere does
 * the step again on resume: delivering a feedback twice removes states
 * that nothing has written since.
 */

const char *const al_feedback_types[4] = {
	"FIX_REQUEST", "CONTEXT_REQUEST", "DEPENDENCY_MISSING", "ARCHITECTURE_ISSUE",
};

static const char *const priorities[] = { "low", "medium", "high", "critical" };

static const char *str(const json_t *f, const char *key)
{
	const char *s = json_string_value(json_object_get(f, key));

	return s ? s : "";
}

static int num(const json_t *f, const char *key)
{
	return (int)json_integer_value(json_object_get(f, key));
}

static int bad(const char *file, const struct al_val *v, const char *fmt, const char *arg)
{
	char *what = al_xprintf(fmt, arg);
	int rc = al_err(AL_EINVALID, "%s:%d:%d: feedback: %s", file, v->pos.line, v->pos.col,
			what);

	free(what);
	return rc;
}

static bool one_of(const char *s, const char *const *set, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(s, set[i]))
			return true;
	return false;
}

/* A text of the sender's output `file` as its record keeps it: cut at AL_FEEDBACK_TEXT_MAX. */
static json_t *kept_text(const struct al_val *x, const char *file)
{
	size_t len = strlen(x->str);
	char *cut, *text;
	json_t *j;

	if (len <= AL_FEEDBACK_TEXT_MAX)
		return json_string(x->str);
	cut = al_strndup(x->str, AL_FEEDBACK_TEXT_MAX);
	al_utf8_cut(cut, AL_FEEDBACK_TEXT_MAX);
	text = al_xprintf("%s [cut: %zu bytes in all, in %s]", cut, len, file);
	j = json_string(text);
	free(text);
	free(cut);
	return j;
}

/* A feedback's message, quoted in a message of ailoop's: its start. */
static char *quoted(const json_t *f)
{
	const char *msg = str(f, "message");
	char *q = al_strdup(msg);

	al_utf8_cut(q, AL_FEEDBACK_QUOTE_MAX);
	if (strlen(q) < strlen(msg)) {
		char *more = al_xprintf("%s...", q);

		free(q);
		q = more;
	}
	return q;
}

int al_feedback_parse(const struct al_val *v, const char *file, json_t **out)
{
	static const char *const required[] = { "to", "type", "message" };
	static const char *const optional[] = { "suggested_fix", "priority" };
	json_t *f;

	*out = NULL;
	if (v->kind != AL_VAL_MAP)
		return bad(file, v, "expected a mapping {to, type, message, suggested_fix, "
			   "priority}, got %s", al_val_describe(v));
	f = json_object();
	for (size_t i = 0; i < AL_ARRAY_SIZE(required); i++) {
		const struct al_val *x = al_val_get(v, required[i]);

		if (!x || al_val_is_null(x)) {
			json_decref(f);
			return bad(file, v, "'%s' is missing", required[i]);
		}
		if (x->kind != AL_VAL_SCALAR) {
			json_decref(f);
			return bad(file, x, "expected a string, got %s", al_val_describe(x));
		}
		json_object_set_new(f, required[i], kept_text(x, file));
	}
	for (size_t i = 0; i < AL_ARRAY_SIZE(optional); i++) {
		const struct al_val *x = al_val_get(v, optional[i]);

		if (!x || al_val_is_null(x))
			continue;
		if (x->kind != AL_VAL_SCALAR) {
			json_decref(f);
			return bad(file, x, "expected a string, got %s", al_val_describe(x));
		}
		json_object_set_new(f, optional[i], kept_text(x, file));
	}
	if (!one_of(str(f, "type"), al_feedback_types, AL_ARRAY_SIZE(al_feedback_types))) {
		const struct al_val *x = al_val_get(v, "type");

		json_decref(f);
		return bad(file, x, "unknown type '%s' (FIX_REQUEST, CONTEXT_REQUEST, "
			   "DEPENDENCY_MISSING or ARCHITECTURE_ISSUE)", x->str);
	}
	if (!json_object_get(f, "priority"))
		json_object_set_new(f, "priority", json_string("medium"));
	if (!one_of(str(f, "priority"), priorities, AL_ARRAY_SIZE(priorities))) {
		const struct al_val *x = al_val_get(v, "priority");

		json_decref(f);
		return bad(file, x, "unknown priority '%s' (low, medium, high or critical)", x->str);
	}
	json_object_set_new(f, "output", json_string(file));
	*out = f;
	return 0;
}

struct find_id {
	const char *id;
	struct al_node *found;
};

static void match_id(struct al_node *n, void *data)
{
	struct find_id *f = data;

	if (!f->found && !strcmp(n->id, f->id))
		f->found = n;
}

static size_t index_in(const struct al_node *parent, const struct al_node *child)
{
	for (size_t i = 0; i < parent->nchildren; i++)
		if (parent->children[i] == child)
			return i;
	return (size_t)-1;
}

/* The nodes control.c runs, through which AL_EFEEDBACK reaches its handler. */
static bool passes(const struct al_node *n)
{
	switch (n->type) {
	case AL_NODE_SEQUENCE:
	case AL_NODE_FALLBACK:
	case AL_NODE_TRANSACTION:
	case AL_NODE_CONDITIONAL:
		return true;
	case AL_NODE_LOOP:
		return !n->sensor_form;
	default:
		return false;
	}
}

int al_feedback_route(const struct al_flow *flow, const struct al_node *sender, json_t *fb)
{
	char to[AL_NODE_PATH_MAX + 1];
	struct find_id find = { to, NULL };
	const struct al_node *target, *cur = sender;

	snprintf(to, sizeof(to), "%s", str(fb, "to")); /* the record's own is replaced below */
	if (!(find.found = al_flow_find(flow, to)))
		al_flow_walk(flow->root, match_id, &find);
	if (!(target = find.found))
		return al_err(AL_EINVALID, "%s: feedback to '%s': no such node in the flow",
			      str(fb, "output"), to);
	json_object_set_new(fb, "to", json_string(target->path));
	json_object_set_new(fb, "from", json_string(sender->path));
	if (target == sender)
		return al_err(AL_EINVALID, "%s: feedback to '%s': a node cannot send feedback to "
			      "itself", str(fb, "output"), to);
	for (const struct al_node *p = cur->parent; p; cur = p, p = p->parent) {
		size_t idx = index_in(p, cur), t;

		if (p == target && passes(p) && p->type != AL_NODE_CONDITIONAL && p->nchildren) {
			t = 0; /* an ancestor: its children run again from the first */
		} else if ((p->type == AL_NODE_SEQUENCE || p->type == AL_NODE_TRANSACTION) &&
			   target->parent == p && (t = index_in(p, target)) < idx) {
			; /* an earlier sibling (of the sender or of one of its ancestors) */
		} else if (p == target) {
			return al_err(AL_EINVALID, "%s: feedback to '%s': a %s node cannot be run "
				      "again for feedback (only a sequence, fallback, transaction or "
				      "loop without sensors)", str(fb, "output"), to,
				      al_node_type_name(p->type));
		} else if (!passes(p)) {
			return al_err(AL_EINVALID, "%s: feedback to '%s': it would cross %s node "
				      "'%s', which feedback does not pass", str(fb, "output"), to,
				      al_node_type_name(p->type), p->path);
		} else {
			continue;
		}
		json_object_set_new(fb, "handler", json_string(p->path));
		json_object_set_new(fb, "restart", json_integer((json_int_t)t));
		json_object_set_new(fb, "upto", json_integer((json_int_t)idx));
		return 0;
	}
	return al_err(AL_EINVALID, "%s: feedback to '%s': it is neither an ancestor of '%s' nor "
		      "an earlier sibling in a sequence", str(fb, "output"), to, sender->path);
}

bool al_feedback_is_open(const json_t *f)
{
	const char *s = str(f, "status");

	return strcmp(s, "resolved") && strcmp(s, "failed");
}

int al_feedback_log_parse(struct al_feedback_log *log, const char *text, size_t len)
{
	const char *p = text, *end = text + len;

	memset(log, 0, sizeof(*log));
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		json_t *rec = n ? json_loadb(p, n, 0, NULL) : NULL;
		const char *id = json_string_value(json_object_get(rec, "id"));
		size_t i;

		p += n + 1;
		if (!id) { /* a line cut short by a kill: the step is done again */
			json_decref(rec);
			continue;
		}
		for (i = 0; i < log->n && strcmp(str(log->items[i], "id"), id); i++)
			;
		if (i < log->n) {
			json_decref(log->items[i]);
		} else {
			log->items = al_realloc(log->items, (log->n + 1) * sizeof(*log->items));
			log->n++;
		}
		log->items[i] = rec;
		log->last = rec;
	}
	return 0;
}

int al_feedback_log_read(struct al_feedback_log *log, const char *run_dir)
{
	struct al_strbuf sb = AL_STRBUF_INIT;
	char *path = al_xprintf("%s/%s", run_dir, AL_FEEDBACK_FILE);
	int rc = al_file_exists(path) ? al_strbuf_read_file(&sb, path, 0) : 0;

	free(path);
	memset(log, 0, sizeof(*log));
	if (rc == 0)
		rc = al_feedback_log_parse(log, sb.buf ? sb.buf : "", sb.len);
	al_strbuf_release(&sb);
	return rc;
}

void al_feedback_log_release(struct al_feedback_log *log)
{
	for (size_t i = 0; i < log->n; i++)
		json_decref(log->items[i]);
	free(log->items);
	memset(log, 0, sizeof(*log));
}

int al_feedback_admit(const struct al_feedback_log *log, json_t *fb)
{
	const char *from = str(fb, "from"), *to = str(fb, "to");
	int depth = 1, rounds = 0;

	for (size_t i = 0; i < log->n; i++) {
		const json_t *f = log->items[i];

		if (!strcmp(str(f, "from"), from) && !strcmp(str(f, "to"), to))
			rounds += num(f, "round");
		if (!al_feedback_is_open(f))
			continue;
		if (!strcmp(str(f, "to"), to) || !strcmp(str(f, "from"), to))
			return al_err(AL_EINVALID, "feedback from '%s' to '%s' refused: a cycle "
				      "('%s' is already in open feedback %s from '%s' to '%s')", from,
				      to, to, str(f, "id"), str(f, "from"), str(f, "to"));
		depth++;
	}
	if (depth > AL_FEEDBACK_MAX_DEPTH)
		return al_err(AL_EINVALID, "feedback from '%s' to '%s' refused: a chain of %d "
			      "feedback, deeper than %d", from, to, depth, AL_FEEDBACK_MAX_DEPTH);
	if (rounds >= AL_FEEDBACK_MAX_ROUNDS)
		return al_err(AL_EINVALID, "feedback from '%s' to '%s' refused: the pair has had "
			      "its %d rounds", from, to, AL_FEEDBACK_MAX_ROUNDS);
	json_object_set_new(fb, "depth", json_integer(depth));
	return 0;
}

/* --- the executor's side ------------------------------------------------ */

/* Writes `f` in `status` as the feedback's new state, and says so in the events. */
static int record(struct al_exec *ex, json_t *f, const char *status, const char *reason)
{
	struct al_strbuf line = AL_STRBUF_INIT;
	char now[32], *path, *text, *event;
	int fd = -1, rc;

	al_timestamp(now);
	json_object_set_new(f, "status", json_string(status));
	json_object_set_new(f, "ts", json_string(now));
	if (reason)
		json_object_set_new(f, "reason", json_string(reason));
	text = json_dumps(f, JSON_COMPACT | JSON_PRESERVE_ORDER);
	if (!text)
		return al_err(AL_ERROR, "cannot write feedback %s", str(f, "id"));
	path = al_xprintf("%s/%s", ex->run->dir, AL_FEEDBACK_FILE);
	al_strbuf_addf(&line, "%s\n", text);
	rc = al_append_line(&fd, path, line.buf, line.len); /* durable at the next point */
	al_strbuf_release(&line);
	if (fd >= 0)
		close(fd);
	free(path);
	free(text);
	al_crash_point("feedback recorded");
	event = al_xprintf("feedback_%s", status);
	al_run_event(ex->run, event, "{s:s, s:s, s:s, s:s, s:i, s:s?}", "id", str(f, "id"),
		     "from", str(f, "from"), "to", str(f, "to"), "type", str(f, "type"), "round",
		     num(f, "round"), "reason", reason);
	free(event);
	if (rc == 0)
		al_progress_note(ex->progress, "ailoop: feedback %s %s -> %s (%s, round %d): %s",
				 str(f, "id"), str(f, "from"), str(f, "to"), str(f, "type"),
				 num(f, "round"), status);
	return rc;
}

/* The open feedback that `from` verifies now, or NULL. */
static json_t *verified_by(const struct al_feedback_log *log, const char *from)
{
	for (size_t i = 0; i < log->n; i++)
		if (!strcmp(str(log->items[i], "status"), "verifying") &&
		    !strcmp(str(log->items[i], "from"), from))
			return log->items[i];
	return NULL;
}

/* Feedback `from` queued in `label` whose action was killed before it ended: it runs again. */
static json_t *queued_by(const struct al_feedback_log *log, const char *from, const char *label)
{
	for (size_t i = 0; i < log->n; i++)
		if (!strcmp(str(log->items[i], "status"), "queued") &&
		    !strcmp(str(log->items[i], "from"), from) &&
		    !strcmp(str(log->items[i], "label"), label))
			return log->items[i];
	return NULL;
}

/*
 * A refusal recorded for the sender's entry in `label` as the log's last
 * line: killed after the record and before the sender's end, the sender
 * ran again and asked again. Its refusal is that one, not another (which
 * would count the pair's rounds again, and say so, in a second failed
 * record). Any other feedback recorded since would come after it.
 */
static const json_t *refused_in(const struct al_feedback_log *log, const char *from,
				const char *label)
{
	const json_t *f = log->last;

	return f && !strcmp(str(f, "status"), "failed") && !strcmp(str(f, "from"), from) &&
		       !strcmp(str(f, "refused"), label) ? f : NULL;
}

/* The sender's node fails with `msg`, which the user sees. */
static void refuse(struct al_node_run *nr, const char **status, char **summary, const char *msg)
{
	/* an error, which --quiet does not hide */
	al_progress_end(nr->ex->progress);
	fprintf(stderr, "ailoop: error: %s\n", msg);
	al_run_event(nr->ex->run, "feedback_invalid", "{s:s, s:s}", "node", nr->n->path,
		     "message", msg);
	*status = "failed";
	free(*summary);
	*summary = al_strdup(msg);
	al_utf8_cut(*summary, 400);
}

int al_feedback_after_action(struct al_node_run *nr, const struct al_md *md, const char *output,
			     const char **status, char **summary)
{
	struct al_exec *ex = nr->ex;
	struct al_feedback_log log;
	const struct al_val *v = md && nr->n->feedback_enabled ? al_md_get(md, "feedback") : NULL;
	json_t *fb = NULL, *old, *again;
	const json_t *done;
	char *msg;
	int rc;

	if (v && al_val_is_null(v))
		v = NULL;
	if ((rc = al_feedback_log_read(&log, ex->run->dir)) < 0)
		return rc;
	old = verified_by(&log, nr->n->path);
	again = queued_by(&log, nr->n->path, nr->st.label);
	if (v && (al_feedback_parse(v, output, &fb) < 0 ||
		  al_feedback_route(ex->flow, nr->n, fb) < 0)) {
		refuse(nr, status, summary, al_errmsg());
		json_decref(fb);
		fb = NULL;
		if (old)
			rc = record(ex, old, "failed", "its sender's feedback was invalid");
		goto out;
	}
	if (fb && (done = refused_in(&log, nr->n->path, nr->st.label))) {
		refuse(nr, status, summary, str(done, "reason"));
		goto out;
	}
	if (again && fb && !strcmp(str(fb, "to"), str(again, "to"))) {
		/* asked again after a kill: the same feedback, as it was queued */
		json_object_update(again, fb);
		rc = record(ex, again, "queued", NULL);
		free(*summary);
		*summary = al_xprintf("feedback to '%s' (%s)", str(again, "to"), str(again, "type"));
		goto out;
	}
	if (again) { /* asked otherwise after a kill: the first asking is void */
		if ((rc = record(ex, again, "failed", "its sender ran again and asked otherwise")) < 0)
			goto out;
	}
	if (old && fb && !strcmp(str(fb, "to"), str(old, "to"))) {
		if (num(old, "round") >= AL_FEEDBACK_MAX_ROUNDS) {
			char *q = quoted(fb);

			msg = al_xprintf("feedback %s from '%s' to '%s' still unresolved after %d "
					 "rounds: %s", str(old, "id"), str(old, "from"),
					 str(old, "to"), AL_FEEDBACK_MAX_ROUNDS, q);
			free(q);
			json_object_set_new(old, "refused", json_string(nr->st.label));
			rc = record(ex, old, "failed", msg);
			refuse(nr, status, summary, msg);
			free(msg);
			goto out;
		}
		/* another round: the same feedback, queued again with what the sender says now */
		json_object_update(old, fb);
		json_object_set_new(old, "round", json_integer(num(old, "round") + 1));
		json_object_set_new(old, "label", json_string(nr->st.label));
		rc = record(ex, old, "queued", NULL);
		msg = al_xprintf("feedback to '%s' (%s, round %d)", str(old, "to"),
				 str(old, "type"), num(old, "round"));
		free(*summary);
		*summary = msg;
		goto out;
	}
	if (old) {
		bool ok = !strcmp(*status, "complete");

		msg = ok ? NULL : al_xprintf("verification failed: %s", *summary ? *summary : "");
		rc = record(ex, old, ok ? "resolved" : "failed", msg);
		free(msg);
		if (rc < 0)
			goto out;
		json_object_set_new(old, "status", json_string(ok ? "resolved" : "failed"));
	}
	if (!fb)
		goto out;
	if (al_feedback_admit(&log, fb) < 0) {
		msg = al_strdup(al_errmsg());
		json_object_set_new(fb, "id", json_sprintf("fb-%zu", log.n + 1));
		json_object_set_new(fb, "round", json_integer(0));
		json_object_set_new(fb, "refused", json_string(nr->st.label));
		rc = record(ex, fb, "failed", msg);
		refuse(nr, status, summary, msg);
		free(msg);
		goto out;
	}
	json_object_set_new(fb, "id", json_sprintf("fb-%zu", log.n + 1));
	json_object_set_new(fb, "round", json_integer(1));
	json_object_set_new(fb, "label", json_string(nr->st.label));
	for (size_t i = ex->nframes; i-- > 0;)
		if (!strcmp(ex->frames[i].node->path, str(fb, "handler")))
			json_object_set_new(fb, "handler_label",
					    json_string(ex->frames[i].st->label));
	rc = record(ex, fb, "queued", NULL);
	free(*summary);
	*summary = al_xprintf("feedback to '%s' (%s)", str(fb, "to"), str(fb, "type"));
out:
	json_decref(fb);
	al_feedback_log_release(&log);
	return rc;
}

/* Whether the feedback's handler is on the stack of this process, in its label. */
static bool handler_runs(const struct al_exec *ex, const json_t *f)
{
	for (size_t i = ex->base_frame; i < ex->nframes; i++)
		if (!strcmp(ex->frames[i].node->path, str(f, "handler")) &&
		    !strcmp(ex->frames[i].st->label, str(f, "handler_label")))
			return true;
	return false;
}

int al_feedback_pending(struct al_node_run *nr)
{
	struct al_feedback_log log;
	int rc = al_feedback_log_read(&log, nr->ex->run->dir);

	for (size_t i = 0; rc == 0 && i < log.n; i++) {
		json_t *f = log.items[i];

		if (strcmp(str(f, "status"), "queued") || strcmp(str(f, "from"), nr->n->path) ||
		    strcmp(str(f, "label"), nr->st.label))
			continue;
		if (handler_runs(nr->ex, f))
			rc = AL_EFEEDBACK;
		else /* never so, as routing found the handler above: said, not left open */
			rc = record(nr->ex, f, "failed", "its handler is not running");
	}
	al_feedback_log_release(&log);
	return rc;
}

struct forget {
	struct al_run *run;
	int rc;
};

static void forget_state(struct al_node *n, void *data)
{
	struct forget *f = data;
	char *dir = al_run_node_dir(f->run, n->path);
	char *path = al_xprintf("%s/orchestrator-output.md", dir);

	al_as_is_note(path); /* committed as gone, not put back (git_own.c) */
	if (unlink(path) < 0 && errno != ENOENT && f->rc == 0)
		f->rc = al_err(AL_ERROR, "cannot remove '%s': %s", path, strerror(errno));
	free(path);
	free(dir);
}

static void note_state(struct al_node *n, void *data)
{
	char *dir = al_run_node_dir(data, n->path);
	char *path = al_xprintf("%s/orchestrator-output.md", dir);

	al_as_is_note(path);
	free(path);
	free(dir);
}

void al_feedback_note_removed(struct al_exec *ex)
{
	struct al_feedback_log log;

	if (al_feedback_log_read(&log, ex->run->dir) < 0)
		return;
	for (size_t i = 0; i < log.n; i++) {
		json_t *f = log.items[i];
		struct al_node *h = strcmp(str(f, "status"), "processing")
					    ? NULL : al_flow_find(ex->flow, str(f, "handler"));

		for (size_t k = (size_t)num(f, "restart"); h && k <= (size_t)num(f, "upto") &&
							  k < h->nchildren; k++)
			al_flow_walk(h->children[k], note_state, ex->run);
	}
	al_feedback_log_release(&log);
}

/* The handler's children from `restart` to `upto` lose their state: they run again. */
static int deliver(struct al_node_run *nr, json_t *f)
{
	struct al_exec *ex = nr->ex;
	struct forget forget = { ex->run, 0 };
	size_t restart = (size_t)num(f, "restart"), upto = (size_t)num(f, "upto");
	char *key, *text;
	int rc;

	ex->resuming = false; /* the stack the run was resumed at is cut back to here */
	for (size_t i = restart; i <= upto && i < nr->n->nchildren; i++)
		al_flow_walk(nr->n->children[i], forget_state, &forget);
	if (forget.rc < 0)
		return forget.rc;
	al_crash_point("feedback states removed");
	key = al_xprintf("feedback.%s", strrchr(str(f, "to"), '/') ? strrchr(str(f, "to"), '/') + 1
								   : str(f, "to"));
	text = json_dumps(f, JSON_COMPACT | JSON_PRESERVE_ORDER);
	if (al_memory_set(ex->memory, key, text, true, "ailoop", "feedback") < 0)
		al_progress_note(ex->progress, "ailoop: %s: %s", key, al_errmsg());
	free(text);
	free(key);
	nr->st.child = (int)restart;
	nr->st.phase = AL_PHASE_CHILDREN;
	if ((rc = al_node_save(nr)) < 0)
		return rc;
	return record(ex, f, "processing", NULL);
}

static bool handled_here(const json_t *f, const struct al_node_run *nr)
{
	return al_feedback_is_open(f) && !strcmp(str(f, "handler"), nr->n->path) &&
	       !strcmp(str(f, "handler_label"), nr->st.label);
}

int al_feedback_step(struct al_node_run *nr, bool caught)
{
	struct al_exec *ex = nr->ex;
	struct al_feedback_log log;
	int rc = al_feedback_log_read(&log, ex->run->dir), acted = 0;

	for (size_t i = 0; rc == 0 && i < log.n; i++) {
		json_t *f = log.items[i];
		const char *s = str(f, "status");

		if (!handled_here(f, nr))
			continue;
		if (!strcmp(s, "queued") && caught) {
			/* the nodes between it and the sender left the stack without a word */
			if ((rc = al_run_enter(ex->run, nr->n->path)) < 0 ||
			    (rc = record(ex, f, "delivered", NULL)) < 0)
				break;
			s = "delivered";
		}
		if (!strcmp(s, "delivered")) {
			if ((rc = deliver(nr, f)) < 0)
				break;
			acted = 1;
			s = "processing";
		}
		if (!strcmp(s, "processing") && nr->st.child == num(f, "upto"))
			rc = record(ex, f, "verifying", NULL);
	}
	al_feedback_log_release(&log);
	return rc < 0 ? rc : acted;
}

void al_feedback_abandon(struct al_node_run *nr)
{
	struct al_feedback_log log;
	char *why;

	if (al_feedback_log_read(&log, nr->ex->run->dir) < 0)
		return;
	why = al_xprintf("'%s' ended (%s) before it was resolved", nr->n->path, nr->st.status);
	for (size_t i = 0; i < log.n; i++)
		if (handled_here(log.items[i], nr))
			record(nr->ex, log.items[i], "failed", why);
	free(why);
	al_feedback_log_release(&log);
}

void al_feedback_section(const struct al_run *run, const char *node_path, struct al_strbuf *out)
{
	struct al_feedback_log log;
	bool any = false;

	if (al_feedback_log_read(&log, run->dir) < 0)
		return;
	for (size_t i = 0; i < log.n; i++) {
		const json_t *f = log.items[i];
		const char *to = str(f, "to");
		size_t len = strlen(to);

		if (!al_feedback_is_open(f) || !strcmp(str(f, "status"), "queued") ||
		    strncmp(node_path, to, len) || (node_path[len] && node_path[len] != '/'))
			continue;
		if (!any)
			al_strbuf_adds(out, "## Feedback\n\nYour earlier work was sent back to you:\n");
		any = true;
		al_strbuf_addf(out, "\n### %s from '%s' (priority %s, round %d of %d)\n\n%s\n",
			       str(f, "type"), str(f, "from"), str(f, "priority"), num(f, "round"),
			       AL_FEEDBACK_MAX_ROUNDS, str(f, "message"));
		if (*str(f, "suggested_fix"))
			al_strbuf_addf(out, "\nSuggested fix: %s\n", str(f, "suggested_fix"));
	}
	al_feedback_log_release(&log);
}
