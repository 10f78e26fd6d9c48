#include "ailoop/store/episodes.h"
#include "ailoop/git/refstore.h"
#include "ailoop/base/alloc.h"
#include "ailoop/base/fsutil.h"
#include "ailoop/base/sha256.h"
#include "ailoop/base/util.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Each finished node's episode, under refs/ailoop/episodes (episodes.h). */

/* how often a writer reads a ref that moved under it again before it gives up */
#define MOVED_RETRIES 50

void al_episode_id(char out[13], const char *run, const char *node, const char *instance)
{
	char *text = al_xprintf("%s\n%s\n%s", run, node, instance ? instance : "");
	char hex[65];

	al_sha256_hex(text, strlen(text), hex);
	memcpy(out, hex, 12);
	out[12] = '\0';
	free(text);
}

const char *al_episode_outcome(const char *status)
{
	if (!strcmp(status, "complete"))
		return "success";
	return !strcmp(status, "blocked") ? "blocked" : "failure";
}

/*
 * A text field as UTF-8 that holds no TAB, CR or LF (a line of the index
 * stays one line of nine fields), at most `max` bytes, cut between
 * characters. Caller frees.
 */
static char *field(const char *s, size_t max)
{
	struct al_strbuf sb = AL_STRBUF_INIT;
	size_t start = 0;

	al_utf8_repair(&sb, s ? s : "", strlen(s ? s : ""));
	for (size_t i = 0; i < sb.len; i++)
		if (sb.buf[i] == '\t' || sb.buf[i] == '\r' || sb.buf[i] == '\n')
			sb.buf[i] = ' ';
	/* a task's last newline is no part of it */
	al_strbuf_rtrim(&sb);
	while (sb.buf[start] == ' ')
		start++;
	memmove(sb.buf, sb.buf + start, sb.len - start + 1);
	al_utf8_cut(sb.buf, max);
	return al_strbuf_detach(&sb, NULL);
}

/* Valid UTF-8, at most `max` bytes (0: no limit), NULL kept: for the JSON. Caller frees. */
static char *text_of(const char *s, size_t max)
{
	struct al_strbuf sb = AL_STRBUF_INIT;

	if (!s)
		return NULL;
	al_utf8_repair(&sb, s, strlen(s));
	if (max)
		al_utf8_cut(sb.buf, max);
	return al_strbuf_detach(&sb, NULL);
}

static void line_of(struct al_strbuf *out, const struct al_episode *ep)
{
	const char *text[] = { ep->run, ep->node, ep->type, ep->outcome };
	char *goal = field(ep->goal, AL_EPISODE_GOAL_MAX);
	char *root = field(ep->root_task, AL_EPISODE_ROOT_TASK_MAX);

	al_strbuf_adds(out, ep->id);
	for (size_t i = 0; i < AL_ARRAY_SIZE(text); i++) {
		char *f = field(text[i], 200);

		al_strbuf_addf(out, "\t%s", f);
		free(f);
	}
	al_strbuf_addf(out, "\t%s\t%d\t%s\t%s\n", ep->ended, ep->iterations, goal, root);
	free(goal);
	free(root);
}

/* json_t of a string that may be NULL (null then), made valid UTF-8 and cut at `max`. */
static json_t *jstr(const char *s, size_t max)
{
	char *t = text_of(s, max);
	json_t *j = t ? json_string(t) : json_null();

	free(t);
	return j ? j : json_null();
}

static char *json_of(const struct al_episode *ep)
{
	json_t *o = json_object(), *steps = json_array(), *tokens;
	char *text, *line;

	json_object_set_new(o, "id", json_string(ep->id));
	json_object_set_new(o, "run", jstr(ep->run, 0));
	json_object_set_new(o, "node", jstr(ep->node, 0));
	json_object_set_new(o, "type", jstr(ep->type, 0));
	json_object_set_new(o, "goal", jstr(ep->goal, AL_EPISODE_GOAL_MAX));
	json_object_set_new(o, "root_task", jstr(ep->root_task, AL_EPISODE_ROOT_TASK_MAX));
	json_object_set_new(o, "outcome", jstr(ep->outcome, 0));
	json_object_set_new(o, "reason", jstr(ep->reason, 0));
	json_object_set_new(o, "iterations", json_integer(ep->iterations));
	for (size_t i = 0; i < ep->nsteps; i++) {
		const struct al_episode_step *s = &ep->steps[i];
		json_t *step = json_object();

		json_object_set_new(step, "label", jstr(s->label, 0));
		json_object_set_new(step, "action", jstr(s->action, AL_EPISODE_TEXT_MAX));
		json_object_set_new(step, "sensors_before", jstr(s->sensors_before, 0));
		json_object_set_new(step, "sensors_after", jstr(s->sensors_after, 0));
		json_array_append_new(steps, step);
	}
	json_object_set_new(o, "steps", steps);
	json_object_set_new(o, "summary", jstr(ep->summary, AL_EPISODE_TEXT_MAX));
	json_object_set_new(o, "reasoning", jstr(ep->reasoning, AL_EPISODE_TEXT_MAX));
	json_object_set_new(o, "first_commit", jstr(ep->first_commit, 0));
	json_object_set_new(o, "last_commit", jstr(ep->last_commit, 0));
	json_object_set_new(o, "started", jstr(ep->started, 0));
	json_object_set_new(o, "ended", jstr(ep->ended, 0));
	json_object_set_new(o, "duration_ms", json_integer(ep->duration_ms));
	json_object_set_new(o, "agent_calls", json_integer(ep->agent_calls));
	tokens = json_pack("{s:I, s:I}", "input", (json_int_t)ep->tokens_in, "output",
			   (json_int_t)ep->tokens_out);
	json_object_set_new(o, "tokens", tokens ? tokens : json_null());
	json_object_set_new(o, "cost_usd", ep->cost_known ? json_real(ep->cost_usd) : json_null());
	json_object_set_new(o, "flow_sha256", jstr(ep->flow_sha256, 0));
	text = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(o);
	if (!text)
		al_die_oom();
	line = al_xprintf("%s\n", text);
	free(text);
	return line;
}

int al_episodes_parse(const char *text, size_t len, struct al_episode_index **out)
{
	struct al_episode_index *x = al_episode_index_parse(text, len, false);
	int rc = 0;

	if (x->bad_header)
		rc = al_err(AL_EINVALID, "%s does not start with '%s'", AL_EPISODES_INDEX,
			    AL_EPISODES_HEADER);
	else if (x->bad)
		rc = al_err(AL_EINVALID, "line %d of %s cannot be read", x->bad_line,
			    AL_EPISODES_INDEX);
	if (rc < 0) {
		al_episode_index_free(x);
		x = NULL;
	}
	*out = x;
	return rc;
}

/*
 * The ref's tip (`tip` "" without the ref) and its index's text (just the
 * header without it): AL_EINVALID, with what is wrong, if it is damaged.
 */
static int read_store(struct al_git *g, char tip[AL_OID_HEX], struct al_strbuf *index)
{
	int rc = al_git_ref_tip(g, AL_EPISODES_REF, tip);

	if (rc == AL_ENOTFOUND) {
		tip[0] = '\0';
		al_strbuf_addf(index, "%s\n", AL_EPISODES_HEADER);
		return 0;
	}
	if (rc < 0)
		return rc;
	if (al_git_read(g, tip, AL_EPISODES_INDEX, index) < 0)
		return al_err(AL_EINVALID, "'%s' has no %s", AL_EPISODES_REF, AL_EPISODES_INDEX);
	return 0;
}

/* Whether the index (read whole: a damaged one is AL_EINVALID) has a line of `id`. */
static int index_has(const struct al_strbuf *index, const char *id)
{
	struct al_episode_index *x;
	int rc = al_episodes_parse(index->buf, index->len, &x);

	for (size_t i = 0; rc == 0 && i < x->n; i++)
		rc = !strcmp(x->v[i].id, id);
	al_episode_index_free(x);
	return rc;
}

/*
 * A writer that found the ref moved waits a moment, one of its own (its
 * pid and the clock: rand() is the process's, not to be seeded here).
 */
static void back_off(int attempt)
{
	unsigned long r = (unsigned long)getpid() * 2654435761UL + (unsigned long)al_now_ms();
	struct timespec ts = { 0, (long)(1 + r % (unsigned long)(2 + attempt)) * 1000000L };

	nanosleep(&ts, NULL);
}

/*
 * Test builds (AILOOP_TEST_HOOKS): with AILOOP_TEST_EPISODE_MEET=DIR:N, a
 * writer that has read the ref waits (10 s at most) until N writers have,
 * so that all but one find it moved; each retry is a line of DIR/retries.
 */
static void test_meet(int attempt)
{
#ifdef AILOOP_TEST_HOOKS
	const char *v = getenv("AILOOP_TEST_EPISODE_MEET"), *colon;
	char *dir, *path;
	long want;
	int fd = -1;

	if (!v || !(colon = strrchr(v, ':')))
		return;
	dir = al_strndup(v, (size_t)(colon - v));
	want = atol(colon + 1);
	path = al_xprintf("%s/%s", dir, attempt ? "retries" : "met");
	if (al_append_line(&fd, path, "x\n", 2) == 0)
		close(fd);
	for (int i = 0; !attempt && i < 1000; i++) {
		struct al_strbuf sb = AL_STRBUF_INIT;
		bool all = al_strbuf_read_file(&sb, path, 0) == 0 && (long)sb.len >= 2 * want;
		struct timespec ts = { 0, 10000000L };

		al_strbuf_release(&sb);
		if (all)
			break;
		nanosleep(&ts, NULL);
	}
	free(path);
	free(dir);
#else
	(void)attempt;
#endif
}

int al_episode_record(struct al_git *g, const struct al_episode *ep)
{
	struct al_strbuf index = AL_STRBUF_INIT, msg = AL_STRBUF_INIT;
	char tip[AL_OID_HEX], hex[AL_OID_HEX];
	char *json = json_of(ep), *path = al_xprintf("runs/%s/%s.json", ep->run, ep->id);
	char *node = field(ep->node, 200), *run = field(ep->run, 200);
	int rc = AL_EMOVED;

	al_strbuf_addf(&msg, "episode %s: %s of run %s, %s\n", ep->id, node, run, ep->outcome);
	for (int attempt = 0; rc == AL_EMOVED && attempt < MOVED_RETRIES; attempt++) {
		struct al_git_edit edits[2];

		if (attempt)
			back_off(attempt);
		al_strbuf_reset(&index);
		if ((rc = read_store(g, tip, &index)) < 0 || (rc = index_has(&index, ep->id)) != 0)
			break;
		test_meet(attempt);
		line_of(&index, ep);
		edits[0] = (struct al_git_edit){ AL_EPISODES_INDEX, index.buf, index.len };
		edits[1] = (struct al_git_edit){ path, json, strlen(json) };
		/*
		 * A point once per episode, not per attempt: a retry happens
		 * only when another process moved the ref at the same instant,
		 * and a run's crash points must be the same from run to run.
		 */
		if (!attempt)
			al_crash_point("episode written");
		rc = al_git_ref_append(g, AL_EPISODES_REF, tip, edits, 2, msg.buf, hex);
		if (rc == 0)
			al_crash_point("episode recorded");
	}
	if (rc == AL_EMOVED)
		rc = al_err(AL_ERROR, "'%s' kept moving: episode %s is not recorded",
			    AL_EPISODES_REF, ep->id);
	al_strbuf_release(&index);
	al_strbuf_release(&msg);
	free(json);
	free(path);
	free(node);
	free(run);
	return rc;
}

int al_episodes_load(struct al_git *g, struct al_episode_index **out)
{
	struct al_strbuf index = AL_STRBUF_INIT;
	char tip[AL_OID_HEX];
	int rc = read_store(g, tip, &index);

	*out = NULL;
	if (rc == 0 && !tip[0])
		rc = al_err(AL_ENOTFOUND, "no episodes recorded ('%s' does not exist)",
			    AL_EPISODES_REF);
	if (rc == 0)
		rc = al_episodes_parse(index.buf, index.len, out);
	al_strbuf_release(&index);
	return rc;
}

int al_episode_show(struct al_git *g, const char *id, struct al_strbuf *out)
{
	struct al_episode_index *x;
	char tip[AL_OID_HEX];
	int rc = al_episodes_load(g, &x);

	if (rc == AL_ENOTFOUND)
		return al_err(AL_ENOTFOUND, "no episode '%s'", id);
	if (rc < 0)
		return rc;
	rc = al_err(AL_ENOTFOUND, "no episode '%s'", id);
	for (size_t i = 0; i < x->n; i++) {
		char *path;

		if (strcmp(x->v[i].id, id))
			continue;
		path = al_xprintf("runs/%s/%s.json", x->v[i].run, x->v[i].id);
		if ((rc = al_git_ref_tip(g, AL_EPISODES_REF, tip)) == 0 &&
		    (rc = al_git_read(g, tip, path, out)) == AL_ENOTFOUND)
			rc = al_err(AL_EINVALID, "'%s' has no %s", AL_EPISODES_REF, path);
		free(path);
		break;
	}
	al_episode_index_free(x);
	return rc;
}

int al_episodes_forget(struct al_git *g, al_episode_pick_fn drop, void *data, size_t *count)
{
	struct al_strbuf index = AL_STRBUF_INIT, kept = AL_STRBUF_INIT, msg = AL_STRBUF_INIT;
	struct al_episode_index *x = NULL;
	struct al_git_edit *edits = NULL;
	char **paths = NULL;
	char tip[AL_OID_HEX], hex[AL_OID_HEX];
	size_t ne = 0;
	int rc = AL_EMOVED;

	*count = 0;
	for (int attempt = 0; rc == AL_EMOVED && attempt < MOVED_RETRIES; attempt++) {
		const char *eol;

		for (size_t i = 0; i < ne; i++)
			free(paths[i]);
		al_episode_index_free(x);
		x = NULL;
		ne = 0;
		al_strbuf_reset(&index);
		al_strbuf_reset(&kept);
		if (attempt)
			back_off(attempt);
		if ((rc = read_store(g, tip, &index)) < 0)
			break;
		if (!tip[0]) {
			rc = 0;
			break;
		}
		if ((rc = al_episodes_parse(index.buf, index.len, &x)) < 0)
			break;
		free(paths);
		free(edits);
		paths = al_calloc(x->n + 1, sizeof(*paths));
		edits = al_calloc(x->n + 1, sizeof(*edits));
		/* the header and the lines kept as they are, byte for byte */
		eol = memchr(index.buf, '\n', index.len);
		al_strbuf_add(&kept, index.buf, eol ? (size_t)(eol - index.buf) + 1 : index.len);
		for (size_t i = 0; i < x->n; i++) {
			const struct al_episode_entry *e = &x->v[i];

			if (!drop(e, data)) {
				al_strbuf_add(&kept, index.buf + e->at, e->len);
				al_strbuf_adds(&kept, "\n");
				continue;
			}
			paths[ne] = al_xprintf("runs/%s/%s.json", e->run, e->id);
			edits[ne] = (struct al_git_edit){ paths[ne], NULL, 0 };
			ne++;
		}
		if (!ne) {
			rc = 0;
			break;
		}
		edits[ne] = (struct al_git_edit){ AL_EPISODES_INDEX, kept.buf, kept.len };
		al_strbuf_reset(&msg);
		al_strbuf_addf(&msg, "forget %zu episodes\n", ne);
		rc = al_git_ref_append(g, AL_EPISODES_REF, tip, edits, ne + 1, msg.buf, hex);
		if (rc == 0)
			*count = ne;
	}
	if (rc == AL_EMOVED)
		rc = al_err(AL_ERROR, "'%s' kept moving: nothing is forgotten", AL_EPISODES_REF);
	for (size_t i = 0; i < ne; i++)
		free(paths[i]);
	free(paths);
	free(edits);
	al_episode_index_free(x);
	al_strbuf_release(&index);
	al_strbuf_release(&kept);
	al_strbuf_release(&msg);
	return rc;
}
