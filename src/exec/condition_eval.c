#include "ailoop/exec/condition_eval.h"
#include "ailoop/base/fsutil.h"
#include "ailoop/store/memory.h"
#include "ailoop/proc/proc.h"
#include "ailoop/base/strbuf.h"
#include "ailoop/base/util.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/*
 * Conditions at run time. Memory checks are a lookup and a comparison,
 * with nothing allocated; commands run through proc.c and their results
 * are cached in the run directory (see condition.h).
 */

struct entry {
	char *key; /* node, position and text of the check: see cache_key() */
	char *tree;
	uint64_t memory;
	int64_t time;
	bool result;
};

struct al_cond_cache {
	char *path;
	int fd;            /* for appending, opened at the first new result */
	bool need_newline; /* the file ends in a partial line */
	bool linked;       /* a symbolic link: kept in memory only */
	struct al_strmap map;
};

/* ---- working memory ---- */

static const char *lookup(const struct al_cond_env *env, const char *key)
{
	if (env->lookup)
		return env->lookup(env->lookup_data, key);
	/* refreshed once per evaluation (and after each command): see al_condition_eval */
	return env->memory ? al_memory_peek(env->memory, key) : NULL;
}

static uint64_t memory_version(const struct al_cond_env *env)
{
	if (env->lookup)
		return env->version ? env->version(env->lookup_data) : 0;
	return env->memory ? al_memory_peek_version(env->memory) : 0;
}

/*
 * A sensor's status (key "<sensor>") or field ("<sensor>.<field>"), as the
 * runner writes them under sensors.; failing that, the key itself, which
 * agents may write. *status says whether it is a status.
 */
static const char *sensor_value(const struct al_cond_env *env, const char *key, bool *status)
{
	static const char prefix[] = "sensors.", suffix[] = ".status";
	char buf[256], *name = buf;
	size_t len = strlen(key), need;
	bool dot = strchr(key, '.') != NULL;
	const char *v;

	*status = !dot || al_ends_with(key, suffix);
	need = sizeof(prefix) - 1 + len + (dot ? 0 : sizeof(suffix) - 1) + 1;
	if (need > sizeof(buf))
		name = al_malloc(need);
	memcpy(name, prefix, sizeof(prefix) - 1);
	memcpy(name + sizeof(prefix) - 1, key, len);
	memcpy(name + sizeof(prefix) - 1 + len, dot ? "" : suffix, dot ? 1 : sizeof(suffix));
	v = lookup(env, name);
	if (name != buf)
		free(name);
	return v ? v : lookup(env, key);
}

/* ---- operators ---- */

/* A number only if strtod reads all of `s` and it is finite. */
static bool number(const char *s, double *out)
{
	char *end;

	if (!*s || isspace((unsigned char)*s))
		return false;
	*out = strtod(s, &end);
	return !*end && isfinite(*out);
}

/* Sensors say pass / fail, the seeds' flows passing / failing. */
static const char *status_word(const char *s)
{
	if (!strcmp(s, "pass") || !strcmp(s, "passing") || !strcmp(s, "passed"))
		return "pass";
	if (!strcmp(s, "fail") || !strcmp(s, "failing") || !strcmp(s, "failed"))
		return "fail";
	return s;
}

/* <0, 0, >0: numerically when both are numbers, else byte by byte. */
static int order(const char *a, const char *b)
{
	double x, y;

	if (number(a, &x) && number(b, &y))
		return (x > y) - (x < y);
	return strcmp(a, b);
}

/* A failure to match within the limits (a runaway pattern) is no match. */
static bool regex_match(pcre2_code *re, const char *s)
{
	pcre2_match_data *md = pcre2_match_data_create(1, NULL);
	pcre2_match_context *mc = pcre2_match_context_create(NULL);
	int rc;

	if (!md || !mc)
		al_die_oom();
	pcre2_set_match_limit(mc, AL_REGEX_MATCH_LIMIT);
	pcre2_set_depth_limit(mc, AL_REGEX_DEPTH_LIMIT);
	rc = pcre2_match(re, (PCRE2_SPTR)s, strlen(s), 0, 0, md, mc);
	pcre2_match_context_free(mc);
	pcre2_match_data_free(md);
	return rc >= 0;
}

/* The operator applied to a value that may be missing (NULL). */
static bool compare(const struct al_condition *cond, const char *actual, bool status)
{
	const char *want = cond->value;
	enum al_op op = cond->op;

	if (op == AL_OP_EQUALS && !want) /* no operator and no value */
		op = AL_OP_EXISTS;
	if (op == AL_OP_NOT_EXISTS || !actual)
		return op == AL_OP_NOT_EXISTS && !actual;
	if (op == AL_OP_EXISTS)
		return true;
	if (!want)
		return false;
	switch (op) {
	case AL_OP_EQUALS:
	case AL_OP_NOT_EQUALS:
		if (status) {
			actual = status_word(actual);
			want = status_word(want);
		}
		return (order(actual, want) == 0) == (op == AL_OP_EQUALS);
	case AL_OP_CONTAINS:
		return strstr(actual, want) != NULL;
	case AL_OP_NOT_CONTAINS:
		return strstr(actual, want) == NULL;
	case AL_OP_GREATER_THAN:
		return order(actual, want) > 0;
	case AL_OP_LESS_THAN:
		return order(actual, want) < 0;
	case AL_OP_GREATER_OR_EQUAL:
		return order(actual, want) >= 0;
	case AL_OP_LESS_OR_EQUAL:
		return order(actual, want) <= 0;
	case AL_OP_MATCHES_REGEX:
		return cond->re && regex_match(cond->re, actual);
	default:
		return false;
	}
}

/* ---- files and commands ---- */

static void where(const struct al_condition *cond, struct al_strbuf *out)
{
	al_strbuf_addf(out, "%s:%d:%d", cond->pos.file ? cond->pos.file : "-", cond->pos.line,
		       cond->pos.col);
}

static int file_exists(const struct al_condition *cond, bool *result)
{
	glob_t g;
	int rc = glob(cond->path, 0, NULL, &g);

	if (rc == GLOB_NOSPACE)
		al_die_oom();
	*result = (rc == 0 && g.gl_pathc > 0) == (cond->op != AL_OP_NOT_EXISTS);
	globfree(&g);
	return 0;
}

/* Exit status 0 is true; the run's data reaches it only through env->envp. */
static int run_command(const struct al_condition *cond, const struct al_cond_env *env,
		       bool *result)
{
	const char *sh[] = { "sh", "-c", cond->expression, NULL };
	struct al_proc_spec spec = {
		.name = "condition",
		.argv = cond->argv ? cond->argv : sh,
		.env = env->envp,
		.deadline_ms = env->deadline_ms,
		.record = env->record, /* a resume after a kill stops it too */
	};
	struct al_proc_result res = AL_PROC_RESULT_INIT;
	static const char cannot[] = "ailoop: cannot run '";
	struct al_strbuf at = AL_STRBUF_INIT;
	int rc = al_proc_run(&spec, &res);

	where(cond, &at);
	if (rc == AL_EINTR || res.interrupted) {
		rc = al_err(AL_EINTR, "interrupted while the condition at %s ran", at.buf);
	} else if (rc < 0) {
		rc = al_err(rc, "condition at %s: %s", at.buf, al_errmsg());
	} else if (res.timed_out) {
		rc = al_err(AL_ETIMEOUT, "the condition at %s was stopped at the deadline", at.buf);
	} else if (res.exit_code == 127 && al_starts_with(res.log.buf, cannot)) {
		/* proc.c's note when the program could not be started */
		const char *msg = res.log.buf + strlen("ailoop: ");

		rc = al_err(AL_ERROR, "condition at %s: %.*s", at.buf, (int)strcspn(msg, "\n"),
			    msg);
	} else {
		*result = res.exit_code == 0;
	}
	al_strbuf_release(&at);
	al_proc_result_release(&res);
	if (!env->lookup && env->memory) /* the command may have written memory */
		al_memory_refresh(env->memory);
	return rc;
}

/* ---- the cache ---- */

static void cache_key(struct al_strbuf *out, const char *node, const char *pos,
		      const char *text)
{
	al_strbuf_addf(out, "%s\n%s\n%s", node, pos, text);
}

static void remember(struct al_cond_cache *c, const char *key, const char *tree,
		     uint64_t memory, int64_t time, bool result)
{
	struct entry *e = al_strmap_get(&c->map, key);

	if (!e) {
		e = al_calloc(1, sizeof(*e));
		e->key = al_strdup(key);
		al_strmap_put(&c->map, e->key, e);
	}
	free(e->tree);
	e->tree = al_strdup(tree);
	e->memory = memory;
	e->time = time;
	e->result = result;
}

/* Appends one line in one write; a failure only loses the cached result. */
static void append(struct al_cond_cache *c, json_t *line)
{
	struct al_strbuf sb = AL_STRBUF_INIT;
	char *text = json_dumps(line, JSON_COMPACT);

	if (!text || c->linked) {
		free(text);
		return;
	}
	if (c->need_newline) /* after a line cut short */
		al_strbuf_addch(&sb, '\n');
	al_strbuf_adds(&sb, text);
	al_strbuf_addch(&sb, '\n');
	c->need_newline = al_append_line(&c->fd, c->path, sb.buf, sb.len) < 0;
	al_strbuf_release(&sb);
	free(text);
}

static void load_line(struct al_cond_cache *c, const char *line, size_t len)
{
	json_t *j = json_loadb(line, len, 0, NULL);
	const char *node, *pos, *text, *tree;
	json_int_t memory, time;
	int result;

	if (j && json_unpack(j, "{s:s, s:s, s:s, s:s, s:I, s:I, s:b}", "node", &node,
			     "condition", &pos, "check", &text, "tree", &tree, "memory", &memory,
			     "time", &time, "result", &result) == 0) {
		struct al_strbuf key = AL_STRBUF_INIT;

		cache_key(&key, node, pos, text);
		remember(c, key.buf, tree, (uint64_t)memory, time, result);
		al_strbuf_release(&key);
	}
	json_decref(j);
}

/*
 * Opens the file without following a link or waiting on a FIFO: a link in
 * its place (which an agent may have planted) is neither read nor written
 * through, as the event log is not; anything else that is not a regular
 * file is an error. Sets *f, or leaves it NULL for an empty cache.
 */
static int open_file(struct al_cond_cache *c, FILE **f)
{
	int fd = open(c->path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	struct stat st;

	*f = NULL;
	if (fd < 0 && errno == ELOOP) {
		c->linked = true;
		return 0;
	}
	if (fd < 0)
		return errno == ENOENT ? 0 : al_err(AL_ERROR, "cannot read '%s': %s", c->path,
						    strerror(errno));
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return al_err(AL_ERROR, "cannot read '%s': not a regular file", c->path);
	}
	if (!(*f = fdopen(fd, "r")))
		al_die_oom(); /* its only failure with a valid descriptor */
	return 0;
}

int al_cond_cache_open(struct al_cond_cache **out, const char *path)
{
	struct al_cond_cache *c = al_calloc(1, sizeof(*c));
	FILE *f = NULL;
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int rc;

	c->path = al_strdup(path);
	c->fd = -1;
	rc = open_file(c, &f);
	while (f && (n = getline(&line, &cap, f)) > 0) {
		c->need_newline = line[n - 1] != '\n';
		load_line(c, line, (size_t)n);
	}
	if (f && ferror(f))
		rc = al_err(AL_ERROR, "cannot read '%s': %s", path, strerror(errno));
	if (f)
		fclose(f);
	free(line);
	if (rc < 0) {
		al_cond_cache_free(c);
		c = NULL;
	}
	*out = c;
	return rc;
}

void al_cond_cache_free(struct al_cond_cache *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->map.cap; i++) {
		struct entry *e = c->map.slots[i].val;

		if (e) {
			free(e->key);
			free(e->tree);
			free(e);
		}
	}
	al_strmap_release(&c->map);
	if (c->fd >= 0)
		close(c->fd);
	free(c->path);
	free(c);
}

/* A command check, from the cache while a result there is valid. */
static int cached_command(const struct al_condition *cond, const struct al_cond_env *env,
			  bool *result)
{
	struct al_cond_cache *c = env->cache;
	struct al_strbuf pos = AL_STRBUF_INIT, text = AL_STRBUF_INIT, key = AL_STRBUF_INIT;
	const char *node = env->node_path ? env->node_path : "";
	const struct entry *e;
	uint64_t version;
	int64_t now;
	int rc;

	if (!c || !env->tree || cond->cache_ttl_seconds <= 0)
		return run_command(cond, env, result);
	/* read before it runs: a command that writes memory invalidates itself */
	version = memory_version(env);
	now = (int64_t)time(NULL);
	where(cond, &pos);
	al_condition_describe(cond, &text);
	cache_key(&key, node, pos.buf, text.buf);
	e = al_strmap_get(&c->map, key.buf);
	if (e && now >= e->time && now - e->time < cond->cache_ttl_seconds &&
	    e->memory == version && !strcmp(e->tree, env->tree)) {
		*result = e->result;
		rc = 0;
	} else if ((rc = run_command(cond, env, result)) == 0) {
		json_t *line = json_pack("{s:s, s:s, s:s, s:s, s:I, s:I, s:b}", "node", node,
					 "condition", pos.buf, "check", text.buf, "tree", env->tree,
					 "memory", (json_int_t)version, "time", (json_int_t)now,
					 "result", *result);

		remember(c, key.buf, env->tree, version, now, *result);
		if (line) /* NULL if some text is not UTF-8: kept in memory only */
			append(c, line);
		json_decref(line);
	}
	al_strbuf_release(&pos);
	al_strbuf_release(&text);
	al_strbuf_release(&key);
	return rc;
}

/* ---- evaluation ---- */

static int eval(const struct al_condition *cond, const struct al_cond_env *env, bool *result);

int al_condition_eval(const struct al_condition *cond, const struct al_cond_env *env,
		      bool *result)
{
	/* the memory as it is now, read once: each check is then an index lookup */
	if (!env->lookup && env->memory)
		al_memory_refresh(env->memory);
	return eval(cond, env, result);
}

static int eval(const struct al_condition *cond, const struct al_cond_env *env, bool *result)
{
	bool status = false;
	int rc;

	*result = false;
	switch (cond->kind) {
	case AL_COND_NOT:
		if ((rc = eval(cond->subs[0], env, result)) == 0)
			*result = !*result;
		return rc;
	case AL_COND_ALL:
	case AL_COND_ANY:
		/* all: true until a false one; any: false until a true one */
		*result = cond->kind == AL_COND_ALL;
		for (size_t i = 0; i < cond->nsubs; i++) {
			if ((rc = eval(cond->subs[i], env, result)) < 0)
				return rc;
			if (*result != (cond->kind == AL_COND_ALL))
				break;
		}
		return 0;
	case AL_COND_CHECK:
		break;
	}
	switch (cond->type) {
	case AL_COND_OBSERVATION:
		*result = compare(cond, lookup(env, cond->key), false);
		return 0;
	case AL_COND_TEST_RESULT: {
		const char *v = sensor_value(env, cond->key, &status);

		*result = compare(cond, v, status);
		return 0;
	}
	case AL_COND_FILE_EXISTS:
		return file_exists(cond, result);
	case AL_COND_COMMAND:
		return cached_command(cond, env, result);
	}
	return 0;
}
