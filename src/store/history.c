#include "ailoop/store/history.h"
#include "ailoop/model/check.h"
#include "ailoop/base/util.h"

#include <pcre2.h>
#include <stdlib.h>
#include <string.h>

/* The patterns SPEC §6 gives readers, compiled once. */
static const char subject_pattern[] =
	"^ai-loop\\[(.+?)\\]:\\s*iteration\\s+(\\S+)\\s*(?:—|--|-)\\s*(.+)$";
static const char body_pattern[] = "^\\[(\\w[\\w-]*)\\]\\s*(.+)$";
static const char sensor_pattern[] =
	"(\\w[\\w-]*):\\s*(pass|fail|partial|pending)(?:\\s*\\(([^()]*)\\))?";

static pcre2_code *subject_re, *body_re, *sensor_re;

static pcre2_code *compile(const char *pattern)
{
	PCRE2_SIZE off;
	int code;
	pcre2_code *re = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED,
				       PCRE2_UTF | PCRE2_MATCH_INVALID_UTF | PCRE2_MULTILINE, &code,
				       &off, NULL);

	if (!re)
		abort(); /* a constant pattern: cannot happen */
	/* every commit of a log is matched: compiled to machine code where PCRE2 can */
	(void)pcre2_jit_compile(re, PCRE2_JIT_COMPLETE);
	return re;
}

static void compile_all(void)
{
	if (subject_re)
		return;
	subject_re = compile(subject_pattern);
	body_re = compile(body_pattern);
	sensor_re = compile(sensor_pattern);
}

/* `s` on one line of UTF-8 text: control characters become spaces. */
static void add_clean(struct al_strbuf *out, const char *s, const char *drop)
{
	struct al_strbuf utf8 = AL_STRBUF_INIT;

	al_utf8_repair(&utf8, s ? s : "", s ? strlen(s) : 0);
	for (s = utf8.buf; *s; s++) {
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			al_strbuf_addch(out, ' ');
		else if (!strchr(drop, *s))
			al_strbuf_addch(out, *s);
	}
	al_strbuf_release(&utf8);
}

void al_sensors_line_add(struct al_strbuf *line, const char *name, const char *status,
			 const char *detail)
{
	if (line->len)
		al_strbuf_adds(line, ", ");
	al_strbuf_addf(line, "%s: %s", name, status);
	if (detail && *detail) {
		al_strbuf_adds(line, " (");
		add_clean(line, detail, ",()");
		al_strbuf_addch(line, ')');
	}
}

void al_commit_message(struct al_strbuf *out, const struct al_commit_fields *f)
{
	int level = 0;

	al_strbuf_adds(out, "ai-loop[");
	for (const char *p = f->node_path; *p; p++) {
		if (*p == '/') {
			al_strbuf_adds(out, " > ");
			level++;
		} else {
			al_strbuf_addch(out, *p);
		}
	}
	al_strbuf_addf(out, "]: iteration %s — ", f->label);
	add_clean(out, *f->summary ? f->summary : "-", "");
	al_strbuf_addf(out, "\n\n[node-path] %s\n[level] %d\n[iteration] %s\n[status] %s\n"
		       "[target-met] %s\n[sensors] %s\n[action] ",
		       f->node_path, level, f->label, f->status, f->target_met ? "true" : "false",
		       f->sensors && *f->sensors ? f->sensors : "none");
	add_clean(out, *f->summary ? f->summary : "-", "");
	al_strbuf_addch(out, '\n');
	if (f->run_id)
		al_strbuf_addf(out, "[run] %s\n", f->run_id);
	if (f->run_start)
		al_strbuf_adds(out, "[run-start] true\n");
	if (f->cost)
		al_strbuf_addf(out, "[cost] %s\n", f->cost);
	if (f->merge)
		al_strbuf_addf(out, "[merge] %s\n[merge-branch] %s\n", f->merge,
			       f->merge_branch ? f->merge_branch : "-");
}

static char *group(pcre2_match_data *md, const char *s, int i)
{
	PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);

	if (ov[2 * i] == PCRE2_UNSET)
		return NULL;
	return al_strndup(s + ov[2 * i], ov[2 * i + 1] - ov[2 * i]);
}

static void parse_sensors(struct al_iteration *it, const char *line)
{
	pcre2_match_data *md = pcre2_match_data_create_from_pattern(sensor_re, NULL);
	size_t len = strlen(line), off = 0, alloc = 0;

	while (off < len && pcre2_match(sensor_re, (PCRE2_SPTR)line, len, off, 0, md, NULL) > 0) {
		PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
		struct al_sensor_status *s;

		AL_GROW(it->sensors, it->nsensors, alloc);
		s = &it->sensors[it->nsensors++];
		s->name = group(md, line, 1);
		s->status = group(md, line, 2);
		s->detail = group(md, line, 3);
		off = ov[1] > off ? ov[1] : off + 1;
	}
	pcre2_match_data_free(md);
}

bool al_iteration_parse(struct al_iteration *it, const char *message)
{
	pcre2_match_data *md;
	const char *nl = strchr(message, '\n');
	size_t subject_len = nl ? (size_t)(nl - message) : strlen(message);
	size_t len = strlen(message), off;

	compile_all();
	memset(it, 0, sizeof(*it));
	md = pcre2_match_data_create(8, NULL);
	if (pcre2_match(subject_re, (PCRE2_SPTR)message, subject_len, 0, 0, md, NULL) < 0) {
		pcre2_match_data_free(md);
		return false;
	}
	it->display = group(md, message, 1);
	it->label = group(md, message, 2);
	it->summary = group(md, message, 3);
	off = subject_len;
	while (off < len && pcre2_match(body_re, (PCRE2_SPTR)message, len, off, 0, md, NULL) > 0) {
		PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
		char *key = group(md, message, 1), *value = group(md, message, 2);

		if (!strcmp(key, "node-path") && !it->node_path) {
			it->node_path = value;
			value = NULL;
		} else if (!strcmp(key, "level")) {
			it->level = atoi(value);
		} else if (!strcmp(key, "status") && !it->status) {
			it->status = value;
			value = NULL;
		} else if (!strcmp(key, "target-met")) {
			it->target_met = !strcmp(value, "true");
		} else if (!strcmp(key, "sensors")) {
			parse_sensors(it, value);
		} else if (!strcmp(key, "action") && !it->action) {
			it->action = value;
			value = NULL;
		} else if (!strcmp(key, "run-start")) {
			it->run_start = !strcmp(value, "true");
		} else if (!strcmp(key, "run") && !it->run_id) {
			it->run_id = value;
			value = NULL;
		} else if (!strcmp(key, "merge") && !it->merge) {
			it->merge = value;
			value = NULL;
		} else if (!strcmp(key, "cost") && !it->cost) {
			it->cost = value;
			value = NULL;
		} else if (!strcmp(key, "merge-branch") && !it->merge_branch) {
			it->merge_branch = value;
			value = NULL;
		}
		free(key);
		free(value);
		off = ov[1] > off ? ov[1] : off + 1;
	}
	pcre2_match_data_free(md);
	if (!it->node_path) { /* a look-alike subject without our body */
		al_iteration_release(it);
		return false;
	}
	if (!it->status)
		it->status = al_strdup("running");
	return true;
}

void al_iteration_release(struct al_iteration *it)
{
	for (size_t i = 0; i < it->nsensors; i++) {
		free(it->sensors[i].name);
		free(it->sensors[i].status);
		free(it->sensors[i].detail);
	}
	free(it->sensors);
	free(it->cost);
	free(it->display);
	free(it->label);
	free(it->summary);
	free(it->node_path);
	free(it->status);
	free(it->action);
	free(it->run_id);
	free(it->merge);
	free(it->merge_branch);
	memset(it, 0, sizeof(*it));
}

bool al_iteration_starts_run(const struct al_iteration *it)
{
	if (it->run_id)
		return it->run_start;
	return it->level == 0 && !strcmp(it->label, "0"); /* its root's initial measurement */
}

bool al_iteration_is(const struct al_iteration *it, const char *run_id, const char *node_path,
		     const char *label, const char *status)
{
	return !it->merge && (!it->run_id || !run_id || !strcmp(it->run_id, run_id)) &&
	       !strcmp(it->node_path, node_path) && !strcmp(it->label, label) &&
	       !strcmp(it->status, status);
}

struct collect {
	struct al_iteration *v;
	size_t n, alloc;
	const char *wanted; /* the run asked for, or NULL */
	const char *run_id; /* the run's, from its newest commit */
};

static int collect_one(const char *oid, const char *message, int64_t time, void *data)
{
	struct collect *c = data;
	struct al_iteration it;

	if (!al_iteration_parse(&it, message))
		return 0;
	if (!c->n && c->wanted && (!it.run_id || strcmp(it.run_id, c->wanted))) {
		al_iteration_release(&it); /* a later run's, above the one asked for */
		return 0;
	}
	if (c->n && c->run_id && (!it.run_id || strcmp(it.run_id, c->run_id))) {
		al_iteration_release(&it); /* an earlier run's */
		return 1;
	}
	memcpy(it.oid, oid, AL_OID_HEX);
	it.time = time;
	AL_GROW(c->v, c->n, c->alloc);
	c->v[c->n++] = it;
	if (c->n == 1)
		c->run_id = c->v[0].run_id;
	return al_iteration_starts_run(&c->v[c->n - 1]);
}

int al_history_load(struct al_git *g, const char *rev, const char *run_id,
		    struct al_iteration **out, size_t *n)
{
	struct collect c = { NULL, 0, 0, run_id, NULL };
	int rc = al_git_walk(g, rev, NULL, collect_one, &c);

	if (rc < 0) {
		al_history_free(c.v, c.n);
		*out = NULL;
		*n = 0;
		return rc;
	}
	for (size_t i = 0; i < c.n / 2; i++) { /* oldest first */
		struct al_iteration t = c.v[i];

		c.v[i] = c.v[c.n - 1 - i];
		c.v[c.n - 1 - i] = t;
	}
	*out = c.v;
	*n = c.n;
	return 0;
}

void al_history_free(struct al_iteration *its, size_t n)
{
	for (size_t i = 0; i < n; i++)
		al_iteration_release(&its[i]);
	free(its);
}
