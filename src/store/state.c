#include "ailoop/store/state.h"
#include "ailoop/model/flow.h"
#include "ailoop/base/fsutil.h"
#include "ailoop/model/md.h"
#include "ailoop/base/util.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

const char *const al_phase_names[AL_PHASE_COUNT] = {
	"measure", "commit", "controller", "actuate", "children", "condition", "rollback", "done",
};

const char *const al_breaker_state_names[3] = { "closed", "half-open", "open" };

void al_breaker_release(struct al_breaker *b)
{
	free(b->tree);
	free(b->sensors);
	free(b->children);
	free(b->error);
	free(b->reason);
	memset(b, 0, sizeof(*b));
}

static char *dup_or_null(const char *s)
{
	return s ? al_strdup(s) : NULL;
}

/* A required string: its absence means the file was damaged. */
static int need(const struct al_md *md, const char *path, const char *key, char **out)
{
	const char *v = al_md_str(md, key);

	if (!v)
		return al_err(AL_EINVALID, "'%s' is damaged: no '%s' in its front matter", path, key);
	*out = al_strdup(v);
	return 0;
}

static char *map_str(const struct al_val *map, const char *key)
{
	const struct al_val *v = al_val_get(map, key);

	return v && v->kind == AL_VAL_SCALAR && !al_val_is_null(v) ? al_strdup(v->str) : NULL;
}

static int map_int(const struct al_val *map, const char *key)
{
	char *s = map_str(map, key), *end = NULL;
	long n = s ? strtol(s, &end, 10) : 0;

	if (!s || *end || n < 0 || n > 1000000)
		n = 0;
	free(s);
	return (int)n;
}

/* A loop's `breaker:` map; an older state without one has a closed breaker. */
static void breaker_from(struct al_breaker *b, const struct al_val *map)
{
	char *state;

	if (!map || map->kind != AL_VAL_MAP)
		return;
	state = map_str(map, "state");
	for (int i = 0; state && i < 3; i++)
		if (!strcmp(state, al_breaker_state_names[i]))
			b->state = (enum al_breaker_state)i;
	free(state);
	b->no_progress = map_int(map, "no-progress");
	b->same_error = map_int(map, "same-error");
	b->tree = map_str(map, "tree");
	b->sensors = map_str(map, "sensors");
	b->children = map_str(map, "children");
	b->error = map_str(map, "error-hash");
	b->reason = map_str(map, "reason");
}

static void breaker_write(struct al_fm *fm, const struct al_breaker *b)
{
	if (!b->tree && !b->sensors && !b->children && b->state == AL_BREAKER_CLOSED)
		return; /* not a loop, or one that has not counted yet */
	al_fm_begin_map(fm, "breaker");
	al_fm_str(fm, "state", al_breaker_state_names[b->state]);
	al_fm_int(fm, "no-progress", b->no_progress);
	al_fm_int(fm, "same-error", b->same_error);
	if (b->reason)
		al_fm_str(fm, "reason", b->reason);
	if (b->tree)
		al_fm_str(fm, "tree", b->tree);
	if (b->error)
		al_fm_str(fm, "error-hash", b->error);
	if (b->sensors)
		al_fm_str(fm, "sensors", b->sensors);
	if (b->children)
		al_fm_str(fm, "children", b->children);
	al_fm_end_map(fm);
}

/*
 * `sessions:`, who -> session id, and `session-totals:`, who -> what the
 * CLI counted in it so far; an entry that is not a string is none, and
 * totals without their session are none.
 */
static void sessions_from(struct al_node_state *st, const struct al_val *map, const struct al_val *totals)
{
	for (size_t i = 0; map && map->kind == AL_VAL_MAP && i < map->n; i++) {
		const struct al_val *v = AL_VAL_VALUE(map, i);

		if (v->kind == AL_VAL_SCALAR && !al_val_is_null(v) && *v->str)
			al_node_state_set_session(st, AL_VAL_KEY(map, i)->str, v->str);
	}
	for (size_t i = 0; totals && totals->kind == AL_VAL_MAP && i < totals->n; i++) {
		const struct al_val *v = AL_VAL_VALUE(totals, i);

		if (v->kind == AL_VAL_SCALAR && !al_val_is_null(v) && *v->str)
			al_node_state_set_session_totals(st, AL_VAL_KEY(totals, i)->str, v->str);
	}
}

static void sessions_write(struct al_fm *fm, const struct al_node_state *st)
{
	bool totals = false;

	if (!st->nsessions)
		return;
	al_fm_begin_map(fm, "sessions");
	for (size_t i = 0; i < st->nsessions; i++) {
		al_fm_str(fm, st->sessions[i].who, st->sessions[i].id);
		totals |= st->sessions[i].totals != NULL;
	}
	al_fm_end_map(fm);
	if (!totals)
		return;
	al_fm_begin_map(fm, "session-totals");
	for (size_t i = 0; i < st->nsessions; i++)
		if (st->sessions[i].totals)
			al_fm_str(fm, st->sessions[i].who, st->sessions[i].totals);
	al_fm_end_map(fm);
}

static void sessions_release(struct al_node_state *st)
{
	for (size_t i = 0; i < st->nsessions; i++) {
		free(st->sessions[i].who);
		free(st->sessions[i].id);
		free(st->sessions[i].totals);
	}
	free(st->sessions);
	st->sessions = NULL;
	st->nsessions = 0;
}

const char *al_node_state_session(const struct al_node_state *st, const char *who)
{
	for (size_t i = 0; i < st->nsessions; i++)
		if (!strcmp(st->sessions[i].who, who))
			return st->sessions[i].id;
	return NULL;
}

void al_node_state_set_session(struct al_node_state *st, const char *who, const char *id)
{
	size_t i = 0;

	while (i < st->nsessions && strcmp(st->sessions[i].who, who))
		i++;
	if (i < st->nsessions && !id) {
		free(st->sessions[i].who);
		free(st->sessions[i].id);
		free(st->sessions[i].totals);
		st->sessions[i] = st->sessions[--st->nsessions];
		return;
	}
	if (!id)
		return;
	if (i == st->nsessions) {
		st->sessions = al_realloc(st->sessions, (i + 1) * sizeof(*st->sessions));
		st->sessions[i].who = al_strdup(who);
		st->sessions[i].id = NULL;
		st->sessions[i].totals = NULL;
		st->nsessions++;
	}
	if (st->sessions[i].id && strcmp(st->sessions[i].id, id)) {
		/* another session: what the CLI counted was the last one's */
		free(st->sessions[i].totals);
		st->sessions[i].totals = NULL;
	}
	free(st->sessions[i].id);
	st->sessions[i].id = al_strdup(id);
}

const char *al_node_state_session_totals(const struct al_node_state *st, const char *who)
{
	for (size_t i = 0; i < st->nsessions; i++)
		if (!strcmp(st->sessions[i].who, who))
			return st->sessions[i].totals;
	return NULL;
}

void al_node_state_set_session_totals(struct al_node_state *st, const char *who, const char *totals)
{
	for (size_t i = 0; i < st->nsessions; i++)
		if (!strcmp(st->sessions[i].who, who)) {
			free(st->sessions[i].totals);
			st->sessions[i].totals = totals ? al_strdup(totals) : NULL;
			return;
		}
}

void al_node_state_move_sessions(struct al_node_state *to, struct al_node_state *from)
{
	sessions_release(to);
	to->sessions = from->sessions;
	to->nsessions = from->nsessions;
	from->sessions = NULL;
	from->nsessions = 0;
}

/* The fields of an orchestrator-output.md that `md` holds (read with result `rc`). */
static int node_state_from(struct al_node_state *st, struct al_md *md, const char *path, int rc)
{
	const char *phase;
	long long n;

	if (rc < 0)
		goto done;
	if ((rc = need(md, path, "run-id", &st->run_id)) < 0 ||
	    (rc = need(md, path, "node-id", &st->node_id)) < 0 ||
	    (rc = need(md, path, "node-path", &st->node_path)) < 0 ||
	    (rc = need(md, path, "label", &st->label)) < 0 ||
	    (rc = need(md, path, "status", &st->status)) < 0)
		goto done;
	st->parent_path = dup_or_null(al_md_str(md, "parent-node-path"));
	st->summary = dup_or_null(al_md_str(md, "summary"));
	st->started_at = dup_or_null(al_md_str(md, "started-at"));
	st->initial_sensors = dup_or_null(al_md_str(md, "initial-sensors"));
	st->task_sha256 = dup_or_null(al_md_str(md, "task-sha256"));
	st->type = dup_or_null(al_md_str(md, "type"));
	st->branch = dup_or_null(al_md_str(md, "branch"));
	st->base_commit = dup_or_null(al_md_str(md, "base-commit"));
	st->base_tree = dup_or_null(al_md_str(md, "base-tree"));
	st->done = dup_or_null(al_md_str(md, "children-done"));
	st->gate_note = dup_or_null(al_md_str(md, "exit-gate-refused"));
	breaker_from(&st->breaker, al_md_get(md, "breaker"));
	sessions_from(st, al_md_get(md, "sessions"), al_md_get(md, "session-totals"));
	phase = al_md_str(md, "phase");
	for (st->phase = 0; phase && st->phase < AL_PHASE_COUNT; st->phase++)
		if (!strcmp(phase, al_phase_names[st->phase]))
			break;
	if (!phase || st->phase == AL_PHASE_COUNT || !al_md_int(md, "iteration", &n) || n < 0 || n > 1000000) {
		rc = al_err(AL_EINVALID, "'%s' is damaged: its phase or iteration is unreadable", path);
		goto done;
	}
	st->iteration = (int)n;
	if (al_md_int(md, "level", &n)) {
		if (n < 0 || n > AL_FLOW_MAX_DEPTH) {
			rc = al_err(AL_EINVALID, "'%s' is damaged: its level %lld is not one a "
				    "flow has", path, n);
			goto done;
		}
		st->level = (int)n;
	}
	if (al_md_int(md, "max-iterations", &n))
		st->max_iterations = (int)n;
	if (al_md_int(md, "elapsed-ms", &n))
		st->elapsed_ms = n;
	if (al_md_int(md, "step", &n) && n > 0)
		st->step = n;
	if (al_md_int(md, "child", &n) && n >= 0 && n < 1000000)
		st->child = (int)n;
	al_md_bool(md, "break", &st->brk);
	al_md_bool(md, "child-entry", &st->child_entry);
	al_md_bool(md, "target-met", &st->target_met);
	phase = al_md_str(md, "failed-phase");
	for (int i = 0; phase && i < AL_PHASE_COUNT; i++) {
		if (!strcmp(phase, al_phase_names[i])) {
			st->failed = true;
			st->failed_phase = (enum al_phase)i;
		}
	}
done:
	if (rc < 0)
		al_node_state_release(st);
	al_md_release(md);
	return rc;
}

int al_node_state_read(struct al_node_state *st, const char *path)
{
	struct al_md md = AL_MD_INIT;

	memset(st, 0, sizeof(*st));
	return node_state_from(st, &md, path, al_md_read(&md, path));
}

int al_node_state_parse(struct al_node_state *st, const char *name, const char *text,
			size_t len)
{
	struct al_md md = AL_MD_INIT;

	memset(st, 0, sizeof(*st));
	return node_state_from(st, &md, name, al_md_parse(&md, name, al_strndup(text, len), len));
}

int al_node_state_write(struct al_node_state *st, const char *path, const char *task)
{
	struct al_strbuf sb = AL_STRBUF_INIT;
	struct al_fm *fm = al_fm_new();
	int rc;

	st->step++;

	al_fm_int(fm, "iteration", st->iteration);
	al_fm_str(fm, "label", st->label);
	al_fm_str(fm, "phase", al_phase_names[st->phase]);
	al_fm_str(fm, "status", st->status);
	if (st->type)
		al_fm_str(fm, "type", st->type);
	al_fm_int(fm, "max-iterations", st->max_iterations);
	al_fm_str(fm, "run-id", st->run_id);
	al_fm_str(fm, "node-id", st->node_id);
	al_fm_str(fm, "node-path", st->node_path);
	al_fm_str(fm, "parent-node-path", st->parent_path ? st->parent_path : "root");
	al_fm_int(fm, "level", st->level);
	al_fm_bool(fm, "child-entry", st->child_entry);
	al_fm_bool(fm, "target-met", st->target_met);
	al_fm_str(fm, "summary", st->summary);
	al_fm_int(fm, "elapsed-ms", st->elapsed_ms);
	al_fm_int(fm, "step", st->step);
	al_fm_str(fm, "started-at", st->started_at);
	al_fm_str(fm, "initial-sensors", st->initial_sensors);
	al_fm_str(fm, "task-sha256", st->task_sha256);
	if (st->failed)
		al_fm_str(fm, "failed-phase", al_phase_names[st->failed_phase]);
	if (st->phase >= AL_PHASE_CHILDREN || st->child) /* a control node's */
		al_fm_int(fm, "child", st->child);
	if (st->branch)
		al_fm_str(fm, "branch", st->branch);
	if (st->brk)
		al_fm_bool(fm, "break", true);
	if (st->base_commit)
		al_fm_str(fm, "base-commit", st->base_commit);
	if (st->base_tree)
		al_fm_str(fm, "base-tree", st->base_tree);
	if (st->done)
		al_fm_str(fm, "children-done", st->done);
	if (st->gate_note)
		al_fm_str(fm, "exit-gate-refused", st->gate_note);
	breaker_write(fm, &st->breaker);
	sessions_write(fm, st);
	al_fm_finish(fm, &sb);
	al_strbuf_addf(&sb, "\n# Task (setpoint)\n\n%s\n", task ? task : "");
	rc = al_write_state(path, sb.buf, sb.len);
	al_strbuf_release(&sb);
	return rc;
}

void al_node_state_release(struct al_node_state *st)
{
	free(st->run_id);
	free(st->node_id);
	free(st->node_path);
	free(st->parent_path);
	free(st->label);
	free(st->status);
	free(st->summary);
	free(st->started_at);
	free(st->initial_sensors);
	free(st->task_sha256);
	free(st->type);
	free(st->branch);
	free(st->base_commit);
	free(st->base_tree);
	free(st->done);
	free(st->gate_note);
	al_breaker_release(&st->breaker);
	sessions_release(st);
	memset(st, 0, sizeof(*st));
}

bool al_node_state_final(const struct al_node_state *st)
{
	/* blocked by its circuit breaker: it goes on when the run is resumed */
	return st->status && strcmp(st->status, "running") != 0 && strcmp(st->status, "blocked");
}

/* The fields of a run-state.md that `md` holds (read with result `rc`). */
static int run_state_from(struct al_run_state *st, struct al_md *md, const char *path, int rc)
{
	const struct al_val *stack;

	if (rc < 0)
		goto done;
	if ((rc = need(md, path, "run-id", &st->run_id)) < 0 ||
	    (rc = need(md, path, "status", &st->status)) < 0 ||
	    (rc = need(md, path, "task", &st->task)) < 0 ||
	    (rc = need(md, path, "flow", &st->flow)) < 0)
		goto done;
	if (strcmp(al_status_name(st->status), st->status)) { /* not one ailoop writes */
		rc = al_err(AL_EINVALID, "'%s' is damaged: unknown status '%s'", path, st->status);
		goto done;
	}
	st->active_node_path = dup_or_null(al_md_str(md, "active-node-path"));
	st->branch = dup_or_null(al_md_str(md, "branch"));
	st->base_branch = dup_or_null(al_md_str(md, "base-branch"));
	st->flow_sha256 = dup_or_null(al_md_str(md, "flow-sha256"));
	st->flow_sha256_except_limits = dup_or_null(al_md_str(md, "flow-sha256-except-limits"));
	st->started_at = dup_or_null(al_md_str(md, "started-at"));
	st->updated_at = dup_or_null(al_md_str(md, "updated-at"));
	st->start_commit = dup_or_null(al_md_str(md, "start-commit"));
	stack = al_md_get(md, "execution-stack");
	if (stack && stack->kind == AL_VAL_SEQ) {
		st->stack = al_calloc(stack->n + 1, sizeof(*st->stack));
		for (size_t i = 0; i < stack->n; i++)
			if (stack->items[i]->kind == AL_VAL_SCALAR)
				st->stack[st->nstack++] = al_strdup(stack->items[i]->str);
	} else if (stack && !al_val_is_null(stack)) {
		rc = al_err(AL_EINVALID, "'%s' is damaged: 'execution-stack' is not a list", path);
	}
done:
	if (rc < 0)
		al_run_state_release(st);
	al_md_release(md);
	return rc;
}

int al_run_state_read(struct al_run_state *st, const char *path)
{
	struct al_md md = AL_MD_INIT;

	memset(st, 0, sizeof(*st));
	return run_state_from(st, &md, path, al_md_read(&md, path));
}

int al_run_state_parse(struct al_run_state *st, const char *name, const char *text, size_t len)
{
	struct al_md md = AL_MD_INIT;

	memset(st, 0, sizeof(*st));
	return run_state_from(st, &md, name, al_md_parse(&md, name, al_strndup(text, len), len));
}


int al_run_state_write(struct al_run_state *st, const char *path)
{
	struct al_strbuf sb = AL_STRBUF_INIT;
	struct al_fm *fm = al_fm_new();
	char now[32];
	int rc;

	al_timestamp(now);
	free(st->updated_at);
	st->updated_at = al_strdup(now);
	al_fm_str(fm, "run-id", st->run_id);
	al_fm_str(fm, "status", st->status);
	al_fm_str(fm, "active-node-path", st->active_node_path);
	al_fm_list(fm, "execution-stack", (const char *const *)st->stack, st->nstack);
	al_fm_str(fm, "branch", st->branch);
	al_fm_str(fm, "base-branch", st->base_branch);
	al_fm_str(fm, "task", st->task);
	al_fm_str(fm, "flow", st->flow);
	al_fm_str(fm, "flow-sha256", st->flow_sha256);
	al_fm_str(fm, "flow-sha256-except-limits", st->flow_sha256_except_limits);
	al_fm_str(fm, "started-at", st->started_at);
	al_fm_str(fm, "updated-at", st->updated_at);
	al_fm_str(fm, "start-commit", st->start_commit);
	al_fm_finish(fm, &sb);
	al_strbuf_addf(&sb, "\n# Run %s\n\nResume an interrupted run with `ailoop resume %s`.\n",
		       st->run_id, st->run_id);
	rc = al_write_state(path, sb.buf, sb.len);
	al_strbuf_release(&sb);
	return rc;
}

void al_run_state_release(struct al_run_state *st)
{
	for (size_t i = 0; i < st->nstack; i++)
		free(st->stack[i]);
	free(st->stack);
	free(st->run_id);
	free(st->status);
	free(st->active_node_path);
	free(st->branch);
	free(st->base_branch);
	free(st->task);
	free(st->flow);
	free(st->flow_sha256);
	free(st->flow_sha256_except_limits);
	free(st->started_at);
	free(st->updated_at);
	free(st->start_commit);
	memset(st, 0, sizeof(*st));
}

bool al_status_resumable(const char *status)
{
	return !strcmp(status, "running") || !strcmp(status, "paused") ||
	       !strcmp(status, "blocked");
}

const char *al_status_name(const char *status)
{
	static const char *const names[] = { "running", "paused", "complete",
					      "max-iterations-reached", "timeout", "error",
					      "blocked", "skipped", "failed" };

	for (size_t i = 0; i < AL_ARRAY_SIZE(names); i++)
		if (!strcmp(status, names[i]))
			return names[i];
	return "error";
}
