#include "ailoop/model/md.h"
#include "ailoop/base/util.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

struct al_fm {
	yaml_emitter_t emitter;
	struct al_strbuf yaml;
};

static int collect(void *data, unsigned char *buf, size_t size)
{
	al_strbuf_add(data, buf, size);
	return 1;
}

/* Every event is well-formed by construction: only memory can run out. */
static void emitter_failed(const yaml_emitter_t *emitter)
{
	if (emitter->error == YAML_MEMORY_ERROR)
		al_die_oom();
	fprintf(stderr, "ailoop: fatal: internal error: cannot write front matter: %s\n",
		emitter->problem ? emitter->problem : "unknown libyaml error");
	exit(70);
}

static void emit(struct al_fm *fm, yaml_event_t *ev)
{
	if (!yaml_emitter_emit(&fm->emitter, ev))
		emitter_failed(&fm->emitter);
}

static bool is_fence(const char *line, size_t len, const char *fence)
{
	while (len && (line[len - 1] == '\r' || line[len - 1] == ' ' || line[len - 1] == '\t'))
		len--;
	return len == 3 && !memcmp(line, fence, 3);
}

bool al_split_front_matter(const char *text, size_t len, const char **fm, size_t *fm_len,
			   int *fm_line, const char **body, size_t *body_len)
{
	const char *p = text, *end = text + len, *nl;

	*fm = NULL;
	*fm_len = 0;
	*fm_line = 0;
	*body = text;
	*body_len = len;
	nl = memchr(p, '\n', len);
	if (!nl || !is_fence(p, (size_t)(nl - p), "---"))
		return true;
	p = nl + 1;
	*fm = p;
	*fm_line = 2;
	while (p < end) {
		const char *start = p;

		nl = memchr(p, '\n', (size_t)(end - p));
		p = nl ? nl + 1 : end;
		if (is_fence(start, (size_t)((nl ? nl : end) - start), "---") ||
		    is_fence(start, (size_t)((nl ? nl : end) - start), "...")) {
			*fm_len = (size_t)(start - *fm);
			*body = p;
			*body_len = (size_t)(end - p);
			return true;
		}
	}
	return false;
}

struct al_fm *al_fm_new(void)
{
	struct al_fm *fm = al_calloc(1, sizeof(*fm));
	yaml_event_t ev;

	al_strbuf_init(&fm->yaml);
	if (!yaml_emitter_initialize(&fm->emitter))
		al_die_oom();
	yaml_emitter_set_output(&fm->emitter, collect, &fm->yaml);
	yaml_emitter_set_unicode(&fm->emitter, 1);
	yaml_emitter_set_width(&fm->emitter, -1);
	yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING);
	emit(fm, &ev);
	yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1);
	emit(fm, &ev);
	yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1, YAML_BLOCK_MAPPING_STYLE);
	emit(fm, &ev);
	return fm;
}

/* Strings that a YAML reader would take for null, a boolean or a number. */
static bool looks_typed(const char *s)
{
	static const char *const words[] = {
		"~", "null", "true", "false", "yes", "no", "on", "off", "y", "n",
	};
	char *end;

	if (!*s)
		return true;
	for (size_t i = 0; i < AL_ARRAY_SIZE(words); i++)
		if (!strcasecmp(s, words[i]))
			return true;
	(void)strtod(s, &end);
	if (!*end)
		return true; /* a number, as "1.2" or "1e3" */
	/* YAML 1.1 dates, times and sexagesimals: digits with - : . T Z + */
	if (!isdigit((unsigned char)s[0]))
		return false;
	for (const char *p = s; *p; p++)
		if (!isdigit((unsigned char)*p) && !strchr("-:.TZ+ ", *p))
			return false;
	return true;
}

static void scalar(struct al_fm *fm, const char *s, yaml_scalar_style_t style)
{
	struct al_strbuf utf8 = AL_STRBUF_INIT;
	size_t len = strlen(s);
	yaml_event_t ev;

	/* libyaml takes UTF-8 only; values hold whatever bytes agents wrote */
	if (!al_utf8_valid(s, len)) {
		al_utf8_repair(&utf8, s, len);
		s = utf8.buf;
		len = utf8.len;
	}
	if (!yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)s, (int)len, 1, 1,
					  style))
		al_die_oom(); /* the value is UTF-8: only memory can fail */
	emit(fm, &ev);
	al_strbuf_release(&utf8);
}

static void key(struct al_fm *fm, const char *k)
{
	scalar(fm, k, YAML_PLAIN_SCALAR_STYLE);
}

static void string_value(struct al_fm *fm, const char *v)
{
	if (strchr(v, '\n'))
		scalar(fm, v, YAML_LITERAL_SCALAR_STYLE);
	else if (looks_typed(v))
		scalar(fm, v, YAML_SINGLE_QUOTED_SCALAR_STYLE);
	else
		scalar(fm, v, YAML_ANY_SCALAR_STYLE);
}

void al_fm_str(struct al_fm *fm, const char *k, const char *value)
{
	if (!value)
		return;
	key(fm, k);
	string_value(fm, value);
}

void al_fm_int(struct al_fm *fm, const char *k, long long value)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%lld", value);
	key(fm, k);
	scalar(fm, buf, YAML_PLAIN_SCALAR_STYLE);
}

void al_fm_bool(struct al_fm *fm, const char *k, bool value)
{
	key(fm, k);
	scalar(fm, value ? "true" : "false", YAML_PLAIN_SCALAR_STYLE);
}

void al_fm_list(struct al_fm *fm, const char *k, const char *const *items, size_t n)
{
	yaml_event_t ev;

	key(fm, k);
	yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1, YAML_BLOCK_SEQUENCE_STYLE);
	emit(fm, &ev);
	for (size_t i = 0; i < n; i++)
		string_value(fm, items[i]);
	yaml_sequence_end_event_initialize(&ev);
	emit(fm, &ev);
}

void al_fm_begin_map(struct al_fm *fm, const char *k)
{
	yaml_event_t ev;

	key(fm, k);
	yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1, YAML_BLOCK_MAPPING_STYLE);
	emit(fm, &ev);
}

void al_fm_end_map(struct al_fm *fm)
{
	yaml_event_t ev;

	yaml_mapping_end_event_initialize(&ev);
	emit(fm, &ev);
}

void al_fm_finish(struct al_fm *fm, struct al_strbuf *out)
{
	yaml_event_t ev;

	yaml_mapping_end_event_initialize(&ev);
	emit(fm, &ev);
	yaml_document_end_event_initialize(&ev, 1);
	emit(fm, &ev);
	yaml_stream_end_event_initialize(&ev);
	emit(fm, &ev);
	if (!yaml_emitter_flush(&fm->emitter))
		emitter_failed(&fm->emitter);
	/*
	 * An implicit end still gets "..." after an open-ended block scalar: a
	 * line of its own, not a plain value's last dots ("wait...").
	 */
	if (fm->yaml.len >= 5 && !strcmp(fm->yaml.buf + fm->yaml.len - 5, "\n...\n"))
		al_strbuf_setlen(&fm->yaml, fm->yaml.len - 4);
	al_strbuf_adds(out, "---\n");
	al_strbuf_add(out, fm->yaml.buf, fm->yaml.len);
	al_strbuf_adds(out, "---\n");
	yaml_emitter_delete(&fm->emitter);
	al_strbuf_release(&fm->yaml);
	free(fm);
}

int al_md_read(struct al_md *md, const char *path)
{
	struct al_strbuf sb = AL_STRBUF_INIT;
	size_t len;
	char *text;

	if (al_strbuf_read_file(&sb, path, 64u << 20) < 0) {
		int e = errno;

		al_strbuf_release(&sb);
		if (e == ENOENT || e == ENOTDIR)
			return al_err(AL_ENOTFOUND, "'%s' does not exist", path);
		return al_err(AL_ERROR, "cannot read '%s': %s", path, al_strbuf_read_strerror(e));
	}
	al_strbuf_strip_bom(&sb); /* agents write their output files */
	text = al_strbuf_detach(&sb, &len);
	return al_md_parse(md, path, text, len);
}

int al_md_parse(struct al_md *md, const char *path, char *text, size_t len)
{
	const char *fm;
	size_t fm_len;
	int line;

	md->text = text;
	md->len = len;
	if (!al_split_front_matter(md->text, md->len, &fm, &fm_len, &line, &md->body,
				   &md->body_len))
		return al_err(AL_EINVALID, "%s:1:1: front matter opened with '---' is never closed",
			      path);
	if (!fm)
		return 0;
	if (!al_utf8_valid(fm, fm_len)) {
		/* an agent wrote bytes libyaml refuses: read them as U+FFFD, keep the body's */
		struct al_strbuf sb = AL_STRBUF_INIT;

		al_strbuf_add(&sb, md->text, (size_t)(fm - md->text));
		al_utf8_repair(&sb, fm, fm_len);
		al_strbuf_add(&sb, fm + fm_len, md->len - (size_t)(fm + fm_len - md->text));
		free(md->text);
		md->text = al_strbuf_detach(&sb, &md->len);
		al_split_front_matter(md->text, md->len, &fm, &fm_len, &line, &md->body,
				      &md->body_len);
	}
	al_diags_source(&md->diags, path, NULL, 0);
	if (al_doc_parse(&md->doc, &md->diags, path, fm, fm_len, line - 1) < 0 || !md->doc) {
		const struct al_diag *d = &md->diags.v[0];

		return al_err(AL_EINVALID, "%s:%d:%d: %s", path, d->pos.line, d->pos.col, d->msg);
	}
	if (md->doc->root && md->doc->root->kind != AL_VAL_MAP)
		return al_err(AL_EINVALID, "%s:%d:%d: front matter is not a mapping of keys", path,
			      md->doc->root->pos.line, md->doc->root->pos.col);
	return 0;
}

void al_md_release(struct al_md *md)
{
	al_doc_free(md->doc);
	al_diags_release(&md->diags);
	free(md->text);
	memset(md, 0, sizeof(*md));
}

const struct al_val *al_md_get(const struct al_md *md, const char *k)
{
	return md->doc ? al_val_get(md->doc->root, k) : NULL;
}

const char *al_md_str(const struct al_md *md, const char *k)
{
	const struct al_val *v = al_md_get(md, k);

	return v && v->kind == AL_VAL_SCALAR && !al_val_is_null(v) ? v->str : NULL;
}

bool al_md_bool(const struct al_md *md, const char *k, bool *out)
{
	return al_val_bool(al_md_get(md, k), out);
}

bool al_md_int(const struct al_md *md, const char *k, long long *out)
{
	return al_val_int(al_md_get(md, k), out);
}

/* Whether `line` opens or closes a fenced code block. */
static bool is_fence_line(const char *line, const char *end)
{
	while (line < end && *line == ' ')
		line++;
	return end - line >= 3 && (!strncmp(line, "```", 3) || !strncmp(line, "~~~", 3));
}

char *al_md_section(const char *body, size_t len, const char *heading)
{
	const char *p = body, *end = body + len, *start = NULL;
	size_t hlen = strlen(heading);
	bool fenced = false;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *next = nl ? nl + 1 : end;

		if (is_fence_line(p, next)) {
			fenced = !fenced;
		} else if (!fenced && !strncmp(p, "## ", 3)) {
			const char *h = p + 3, *rest;

			if (start) {
				end = p;
				break;
			}
			while (h < next && *h == ' ')
				h++;
			rest = h + hlen;
			if ((size_t)(next - h) >= hlen && !strncasecmp(h, heading, hlen)) {
				/* "## Action Plan", "## Action Plan ##" */
				while (rest < next && (isspace((unsigned char)*rest) || *rest == '#'))
					rest++;
				if (rest == next)
					start = next;
			}
		}
		p = next;
	}
	if (!start)
		return NULL;
	return al_md_trim_lines(start, (size_t)(end - start));
}

char *al_md_trim_lines(const char *s, size_t len)
{
	const char *p = s, *end = s + len;

	/* drop blank lines before the text, keep the first line's indentation */
	for (const char *q = p; q < end && isspace((unsigned char)*q); q++)
		if (*q == '\n')
			p = q + 1;
	while (end > p && isspace((unsigned char)end[-1]))
		end--;
	return al_strndup(p, (size_t)(end - p));
}
