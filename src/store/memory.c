#include "ailoop/store/memory.h"
#include "ailoop/base/fsutil.h"
#include "ailoop/base/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define READ_CHUNK (1u << 20)
#define SECTION_VALUE_MAX 200   /* bytes of a value shown per line of {memory-section} */
#define SECTION_ENTRIES_MAX 200 /* lines of {memory-section} */

/* One key's newest value: the text al_memory_get() returns, and whether it was a string. */
struct entry {
	char *key;
	char *value;
	bool str;
};

struct al_memory {
	char *path;
	int fd;           /* O_RDWR | O_APPEND: reads with pread, appends whole lines */
	pid_t pid;        /* the process that opened fd */
	off_t offset;     /* end of the last complete line read into the index */
	struct al_strmap index; /* key -> struct entry, which owns the key */
	struct al_strbuf buf; /* bytes read past `offset` */
};

/* --- the index ----------------------------------------------------------- */

/* Makes `value` (taken) the newest value of `key`. */
static void put(struct al_memory *m, const char *key, char *value, bool str)
{
	struct entry *e = al_strmap_get(&m->index, key);

	if (!e) {
		e = al_calloc(1, sizeof(*e));
		e->key = al_strdup(key);
		al_strmap_put(&m->index, e->key, e);
	}
	free(e->value);
	e->value = value;
	e->str = str;
}

static const struct entry *lookup(const struct al_memory *m, const char *key)
{
	return al_strmap_get(&m->index, key);
}

static void clear(struct al_memory *m)
{
	for (size_t i = 0; i < m->index.cap; i++) {
		struct entry *e = m->index.slots[i].val;

		if (!e)
			continue;
		free(e->key);
		free(e->value);
		free(e);
	}
	al_strmap_release(&m->index);
}

/* The text of a value: a string as itself, anything else as compact JSON. */
static char *value_text(json_t *v, bool *str)
{
	char *text;

	*str = json_is_string(v);
	if (*str)
		return al_strndup(json_string_value(v), json_string_length(v));
	text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(15));
	if (!text)
		al_die_oom();
	return text;
}

/* --- reading what writers appended ---------------------------------------- */

/* Why `key` is not a valid key (with the byte at fault in *at), or NULL. */
static const char *key_problem(const char *key, size_t len, size_t *at)
{
	*at = 0;
	if (!len)
		return "a memory key cannot be empty";
	if (len > AL_MEMORY_KEY_MAX)
		return "is too long";
	if (!al_utf8_valid(key, len))
		return "is not valid UTF-8";
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)key[i];

		*at = i + 1;
		if (c < 0x20 || c == 0x7f || (c == 0xc2 && (unsigned char)key[i + 1] >= 0x80 &&
					      (unsigned char)key[i + 1] < 0xa0))
			return "has a control character";
	}
	return NULL;
}

int al_memory_check_key(const char *key)
{
	size_t len = strlen(key), at;
	const char *why = key_problem(key, len, &at);
	struct al_strbuf shown = AL_STRBUF_INIT;
	int rc;

	if (!why)
		return 0;
	if (!len)
		return al_err(AL_EINVALID, "%s", why);
	al_utf8_repair(&shown, key, len > 40 ? 40 : len);
	for (size_t i = 0; i < shown.len; i++)
		if ((unsigned char)shown.buf[i] < 0x20 || shown.buf[i] == 0x7f)
			shown.buf[i] = '?';
	if (len > AL_MEMORY_KEY_MAX)
		rc = al_err(AL_EINVALID, "memory key '%s…' is too long (%zu bytes, at most %d)",
			    shown.buf, len, AL_MEMORY_KEY_MAX);
	else if (at)
		rc = al_err(AL_EINVALID, "memory key '%s%s' %s (byte %zu)", shown.buf,
			    len > 40 ? "…" : "", why, at);
	else
		rc = al_err(AL_EINVALID, "memory key '%s%s' %s", shown.buf, len > 40 ? "…" : "",
			    why);
	al_strbuf_release(&shown);
	return rc;
}

/* One line of the file; a line that is not an entry (a writer died in it) is skipped. */
static void read_line(struct al_memory *m, const char *line, size_t len)
{
	json_t *o = json_loadb(line, len, 0, NULL), *key, *value;
	size_t at;
	bool str;

	if (!o)
		return;
	key = json_object_get(o, "key");
	value = json_object_get(o, "value");
	if (json_is_string(key) && value &&
	    strlen(json_string_value(key)) == json_string_length(key) &&
	    !key_problem(json_string_value(key), json_string_length(key), &at)) {
		char *text = value_text(value, &str);

		put(m, json_string_value(key), text, str);
	}
	json_decref(o);
}

/*
 * Reads what was appended since the last call, complete lines only: a line
 * being written (or left half-written by a writer that died) is read again
 * next time, by when it is whole or followed by another.
 */
static int catch_up(struct al_memory *m)
{
	struct stat st;
	off_t pos;

	if (fstat(m->fd, &st) < 0)
		return al_err(AL_ERROR, "cannot read '%s': %s", m->path, strerror(errno));
	if (st.st_size < m->offset) { /* truncated by hand: start over */
		clear(m);
		m->offset = 0;
	}
	al_strbuf_reset(&m->buf);
	pos = m->offset;
	while (pos < st.st_size) {
		size_t want = (size_t)(st.st_size - pos) < READ_CHUNK ? (size_t)(st.st_size - pos)
								      : READ_CHUNK;
		const char *p, *end, *nl;
		ssize_t got;

		al_strbuf_grow(&m->buf, want);
		got = pread(m->fd, m->buf.buf + m->buf.len, want, pos);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return al_err(AL_ERROR, "cannot read '%s': %s", m->path, strerror(errno));
		if (got == 0)
			break;
		al_strbuf_setlen(&m->buf, m->buf.len + (size_t)got);
		pos += got;
		p = m->buf.buf;
		end = p + m->buf.len;
		while ((nl = memchr(p, '\n', (size_t)(end - p)))) {
			if (nl > p)
				read_line(m, p, (size_t)(nl - p));
			p = nl + 1;
		}
		m->offset += p - m->buf.buf;
		/* keep the unfinished line for the next chunk */
		memmove(m->buf.buf, p, (size_t)(end - p));
		al_strbuf_setlen(&m->buf, (size_t)(end - p));
	}
	al_strbuf_reset(&m->buf);
	return 0;
}

/* --- the interface -------------------------------------------------------- */

static int open_file(struct al_memory *m)
{
	int fd = al_open_run_file(m->path, O_RDWR | O_APPEND, "the working memory");

	if (fd < 0)
		return fd;
	if (m->fd >= 0)
		close(m->fd);
	m->fd = fd;
	m->pid = getpid();
	return 0;
}

int al_memory_open(struct al_memory **out, const char *run_dir)
{
	struct al_memory *m = al_calloc(1, sizeof(*m));
	int rc;

	*out = NULL;
	m->fd = -1;
	al_strbuf_init(&m->buf);
	m->path = al_xprintf("%s/" AL_MEMORY_FILE, run_dir);
	if ((rc = open_file(m)) < 0) {
		al_memory_free(m);
		return rc;
	}
	*out = m;
	return 0;
}

void al_memory_free(struct al_memory *m)
{
	if (!m)
		return;
	if (m->fd >= 0)
		close(m->fd);
	clear(m);
	al_strbuf_release(&m->buf);
	free(m->path);
	free(m);
}

const char *al_memory_get(struct al_memory *m, const char *key)
{
	const struct entry *e;

	catch_up(m); /* a file that cannot be read keeps what was read before */
	e = lookup(m, key);
	return e ? e->value : NULL;
}


/* Whether the file at the path is no longer the one open. */
static bool replaced(const struct al_memory *m)
{
	struct stat path, open;

	if (fstat(m->fd, &open) < 0)
		return true;
	if (stat(m->path, &path) < 0)
		return errno == ENOENT;
	return path.st_ino != open.st_ino || path.st_dev != open.st_dev;
}

/* Appends `line` (ending in '\n') under the file's lock; indexes `key`. */
static int append(struct al_memory *m, const char *line, size_t len, const char *key,
		  json_t *value)
{
	struct al_strbuf sb = AL_STRBUF_INIT;
	struct stat st;
	char *text;
	bool whole, str;
	int rc = 0;

	/* a forked child would share the parent's lock: it takes its own */
	if (m->pid != getpid() && (rc = open_file(m)) < 0)
		return rc;
	if (replaced(m)) { /* deleted, or another file put in its place: write that one */
		if ((rc = open_file(m)) < 0)
			return rc;
		clear(m);
		m->offset = 0;
	}
	while (flock(m->fd, LOCK_EX) < 0)
		if (errno != EINTR)
			return al_err(AL_ERROR, "cannot lock '%s': %s", m->path, strerror(errno));
	/* everything before this line is read first, so this line is the newest */
	if ((rc = catch_up(m)) < 0)
		goto unlock;
	/* a writer killed mid-line left no newline: end its line, which readers skip */
	whole = fstat(m->fd, &st) == 0 && st.st_size == m->offset;
	if (!whole)
		al_strbuf_addch(&sb, '\n');
	al_strbuf_add(&sb, line, len);
	if (al_write_all(m->fd, sb.buf, sb.len) < 0) {
		rc = al_err(AL_ERROR, "cannot append to '%s': %s", m->path, strerror(errno));
		goto unlock;
	}
	text = value_text(value, &str);
	put(m, key, text, str);
	/* only this line was added (as every writer locks): no need to read it back */
	if (whole && fstat(m->fd, &st) == 0 && st.st_size == m->offset + (off_t)len)
		m->offset += (off_t)len;
unlock:
	flock(m->fd, LOCK_UN);
	al_durable_written(); /* at the next durable point (fsutil.h) */
	al_strbuf_release(&sb);
	return rc;
}

int al_memory_set_json(struct al_memory *m, const char *key, json_t *value, const char *agent,
		       const char *knowledge_type)
{
	json_t *entry;
	char now[32], *text, *line;
	size_t len;
	int rc;

	if ((rc = al_memory_check_key(key)) < 0)
		return rc;
	al_timestamp(now);
	entry = json_pack("{s:s, s:s, s:s, s:s, s:O, s:s}", "timestamp", now, "agent",
			  agent ? agent : "ailoop", "knowledge_type",
			  knowledge_type ? knowledge_type : "observation", "key", key, "value", value,
			  "confidence", "verified");
	if (!entry)
		return al_err(AL_EINVALID, "memory entry '%s': its agent or type is not valid UTF-8",
			      key);
	text = json_dumps(entry, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(entry);
	if (!text)
		al_die_oom();
	len = strlen(text);
	if (len > AL_MEMORY_ENTRY_MAX) {
		free(text);
		return al_err(AL_EINVALID, "the value of memory key '%s' is too long (%zu bytes, at "
			      "most %d)", key, len, AL_MEMORY_ENTRY_MAX);
	}
	line = al_xprintf("%s\n", text);
	rc = append(m, line, len + 1, key, value);
	free(line);
	free(text);
	return rc;
}

int al_memory_set(struct al_memory *m, const char *key, const char *value, bool json,
		  const char *agent, const char *knowledge_type)
{
	json_error_t error;
	json_t *v;
	int rc;

	if (json) {
		v = json_loads(value, JSON_DECODE_ANY, &error);
		if (!v)
			return al_err(AL_EINVALID, "the value of '%s' is not JSON: %s (at character "
				      "%d)", key, error.text, error.position);
	} else {
		v = json_string(value);
		if (!v)
			return al_err(AL_EINVALID, "the value of '%s' is not valid UTF-8", key);
	}
	rc = al_memory_set_json(m, key, v, agent, knowledge_type);
	json_decref(v);
	return rc;
}

void al_memory_refresh(struct al_memory *m)
{
	catch_up(m);
}

const char *al_memory_peek(struct al_memory *m, const char *key)
{
	const struct entry *e = lookup(m, key);

	return e ? e->value : NULL;
}

uint64_t al_memory_peek_version(const struct al_memory *m)
{
	return (uint64_t)m->offset;
}

uint64_t al_memory_version(struct al_memory *m)
{
	catch_up(m);
	return (uint64_t)m->offset;
}

static int by_key(const void *a, const void *b)
{
	return strcmp((*(const struct entry *const *)a)->key, (*(const struct entry *const *)b)->key);
}

/* The entries in key order; caller frees the array (not the entries). */
static const struct entry **sorted(struct al_memory *m)
{
	const struct entry **v = al_calloc(m->index.n + 1, sizeof(*v));
	size_t k = 0;

	for (size_t i = 0; i < m->index.cap; i++)
		if (m->index.slots[i].val)
			v[k++] = m->index.slots[i].val;
	qsort(v, k, sizeof(*v), by_key);
	return v;
}

void al_memory_each(struct al_memory *m, void (*fn)(const char *key, const char *value,
						    void *data), void *data)
{
	const struct entry **v;

	catch_up(m);
	v = sorted(m);
	for (size_t i = 0; i < m->index.n; i++)
		fn(v[i]->key, v[i]->value, data);
	free(v);
}

size_t al_memory_count(struct al_memory *m)
{
	catch_up(m);
	return m->index.n;
}

json_t *al_memory_object(struct al_memory *m)
{
	json_t *o = json_object();
	const struct entry **v;

	catch_up(m);
	v = sorted(m);
	for (size_t i = 0; i < m->index.n; i++) {
		json_t *val = v[i]->str ? json_string(v[i]->value)
					: json_loads(v[i]->value, JSON_DECODE_ANY, NULL);

		json_object_set_new(o, v[i]->key, val ? val : json_null());
	}
	free(v);
	return o;
}

/* `s` on one line, at most `max` bytes of it. */
static void add_one_line(struct al_strbuf *out, const char *s, size_t max)
{
	size_t len = strlen(s), shown = len > max ? max : len;
	char *cut = al_strndup(s, shown);

	al_utf8_cut(cut, shown);
	for (const char *p = cut; *p; p++) {
		if (*p == '\n')
			al_strbuf_adds(out, "\\n");
		else if (*p == '\r' || *p == '\t')
			al_strbuf_addch(out, ' ');
		else
			al_strbuf_addch(out, *p);
	}
	if (shown < len)
		al_strbuf_addf(out, "… (%zu bytes)", len);
	free(cut);
}

void al_memory_section(struct al_memory *m, const struct al_memory_view *view,
		       struct al_strbuf *out)
{
	const struct entry **v;
	size_t kept = 0, shown = 0;

	catch_up(m);
	v = sorted(m);
	for (size_t i = 0; i < m->index.n; i++) {
		/* a null is no fact: a metric a sensor did not show, a key let go of */
		if ((!v[i]->str && !strcmp(v[i]->value, "null")) ||
		    (view && view->keep && !view->keep(v[i]->key, view->data)))
			continue;
		if (!kept++)
			al_strbuf_adds(out, "## Working memory\n\nWhat this run's agents and sensors "
				       "recorded (key: value):\n\n");
		if (shown == SECTION_ENTRIES_MAX)
			continue;
		shown++;
		al_strbuf_adds(out, "- ");
		add_one_line(out, v[i]->key, AL_MEMORY_KEY_MAX);
		al_strbuf_adds(out, ": ");
		add_one_line(out, v[i]->value, SECTION_VALUE_MAX);
		al_strbuf_addch(out, '\n');
	}
	free(v);
	if (shown < kept)
		al_strbuf_addf(out, "(%zu of %zu entries shown%s)\n", shown, kept,
			       view && view->shell ? "; `ailoop memory list` prints all, `ailoop "
						     "memory get KEY` one in full" : "");
	else if (kept && view && view->shell)
		al_strbuf_adds(out, "(`ailoop memory get KEY` prints a value in full)\n");
}
