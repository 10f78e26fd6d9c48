#include "ailoop/model/output.h"
#include "ailoop/model/doc.h"
#include "ailoop/base/fsutil.h"
#include "ailoop/model/md.h"
#include "ailoop/base/util.h"

#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/*
 * How many places that could hold front matter are tried: an output of
 * thousands of "---" rules is not parsed thousands of times.
 */
#define MAX_CANDIDATES 32

struct line {
	const char *p;
	size_t len; /* without the newline */
};

/* What was wrong, the most telling reason kept: a bad value over a missing key. */
enum why_rank { WHY_NONE, WHY_YAML, WHY_MISSING, WHY_VALUE };

struct search {
	const char *key;
	struct line *lines;
	size_t n;
	int tried;
	struct al_strbuf *out;
	struct al_strbuf *why;
	enum why_rank rank;
};

char *al_output_key(const char *key, size_t len)
{
	struct al_strbuf sb = AL_STRBUF_INIT;

	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)key[i];

		if (c == '_' || c == ' ')
			c = '-';
		if (isupper(c) && i && islower((unsigned char)key[i - 1]))
			al_strbuf_addch(&sb, '-'); /* targetMet */
		al_strbuf_addch(&sb, (char)tolower(c));
	}
	return al_strbuf_detach(&sb, NULL);
}

static size_t indent_of(const struct line *l)
{
	size_t i = 0;

	while (i < l->len && (l->p[i] == ' ' || l->p[i] == '\t'))
		i++;
	return i;
}

static bool is_blank(const struct line *l)
{
	return indent_of(l) == l->len || (indent_of(l) + 1 == l->len && l->p[l->len - 1] == '\r');
}

/* The line's text after its indentation and without trailing blanks. */
static void trimmed(const struct line *l, const char **s, size_t *len)
{
	size_t i = indent_of(l), e = l->len;

	while (e > i && isspace((unsigned char)l->p[e - 1]))
		e--;
	*s = l->p + i;
	*len = e - i;
}

static bool is_marker(const struct line *l, const char *m)
{
	const char *s;
	size_t len;

	trimmed(l, &s, &len);
	return len == strlen(m) && !memcmp(s, m, len);
}

/* A fence opening: 3 or more '`' or '~', then its info word (`*info`). */
static bool fence_open(const struct line *l, char *ch, size_t *width, const char **info,
		       size_t *info_len)
{
	const char *s;
	size_t len, k = 0;

	trimmed(l, &s, &len);
	if (len < 3 || (s[0] != '`' && s[0] != '~'))
		return false;
	while (k < len && s[k] == s[0])
		k++;
	if (k < 3)
		return false;
	*ch = s[0];
	*width = k;
	while (k < len && isspace((unsigned char)s[k]))
		k++;
	*info = s + k;
	*info_len = len - k;
	return !memchr(*info, '`', *info_len);
}

static bool fence_closes(const struct line *l, char ch, size_t width)
{
	const char *s;
	size_t len, k = 0;

	trimmed(l, &s, &len);
	while (k < len && s[k] == ch)
		k++;
	return k >= width && k == len;
}

static bool info_is(const char *info, size_t len, const char *const *words, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strlen(words[i]) == len && !strncasecmp(info, words[i], len))
			return true;
	return false;
}

/* The indentation all the non-blank lines [from, to) share. */
static size_t common_indent(const struct search *s, size_t from, size_t to)
{
	size_t w = SIZE_MAX;

	for (size_t i = from; i < to && i < s->n; i++)
		if (!is_blank(&s->lines[i]) && indent_of(&s->lines[i]) < w)
			w = indent_of(&s->lines[i]);
	return w == SIZE_MAX ? 0 : w;
}

/* Lines [from, to) into `sb`, each without the first `dedent` blanks. */
static void add_lines(struct al_strbuf *sb, const struct search *s, size_t from, size_t to,
		      size_t dedent)
{
	for (size_t i = from; i < to && i < s->n; i++) {
		const struct line *l = &s->lines[i];
		size_t skip = indent_of(l) < dedent ? indent_of(l) : dedent;

		al_strbuf_add(sb, l->p + skip, l->len - skip);
		al_strbuf_addch(sb, '\n');
	}
}

static void say(struct search *s, enum why_rank rank, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void say(struct search *s, enum why_rank rank, const char *fmt, ...)
{
	va_list ap;

	if (rank <= s->rank)
		return;
	s->rank = rank;
	al_strbuf_reset(s->why);
	va_start(ap, fmt);
	al_strbuf_vaddf(s->why, fmt, ap);
	va_end(ap);
}

/* Whether `v` is what a role needs of `key`: target-met a boolean, others any text. */
static bool readable(const char *key, const struct al_val *v)
{
	bool b;

	if (!strcmp(key, "target-met"))
		return al_val_bool(v, &b);
	return v && v->kind == AL_VAL_SCALAR && !al_val_is_null(v);
}

static bool same_value(const struct al_val *a, const struct al_val *b)
{
	return a->kind == AL_VAL_SCALAR && b->kind == AL_VAL_SCALAR && !strcmp(a->str, b->str);
}

/*
 * The length of key `k` as written at the start of the line [at, end),
 * quotes included; 0 when it is not written there as it reads (a key
 * folded over lines, escapes): it is then left as it is.
 */
static size_t raw_key_len(const struct al_val *k, const char *at, const char *end)
{
	if (k->style == AL_STYLE_SINGLE || k->style == AL_STYLE_DOUBLE) {
		if (at + k->len + 2 > end || *at != (k->style == AL_STYLE_SINGLE ? '\'' : '"') ||
		    memcmp(at + 1, k->str, k->len) || at[k->len + 1] != *at)
			return 0;
		return k->len + 2;
	}
	return at + k->len <= end && !memcmp(at, k->str, k->len) ? k->len : 0;
}

/*
 * `fm` with its top-level keys respelled (into `canon`). A key spelled two
 * ways with different values is no answer: false, with the reason said.
 */
static bool respell(struct search *s, const struct al_doc *doc, const char *fm, size_t fm_len,
		   int first_line, struct al_strbuf *canon, bool *changed)
{
	const struct al_val *root = doc->root;
	char **names = al_calloc(root->n + 1, sizeof(*names));
	const char *p = fm, *end = fm + fm_len;
	int line = first_line;
	bool ok = true;

	*changed = false;
	for (size_t i = 0; i < root->n; i++) {
		const struct al_val *k = AL_VAL_KEY(root, i);

		names[i] = al_output_key(k->str, k->len);
		for (size_t j = 0; j < i && ok; j++) {
			if (strcmp(names[i], names[j]))
				continue;
			if (!same_value(AL_VAL_VALUE(root, i), AL_VAL_VALUE(root, j))) {
				say(s, WHY_VALUE, "its front matter gives '%s' twice, as '%s' and "
				    "'%s'", names[i], AL_VAL_KEY(root, j)->str, k->str);
				ok = false;
			}
			free(names[i]); /* the same answer twice: the first stands */
			names[i] = NULL;
			break;
		}
	}
	/* copy line by line, each key at the start of a line spelled anew */
	while (ok && p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p)), *eol = nl ? nl : end;
		size_t skip = 0;

		for (size_t i = 0; i < root->n; i++) {
			const struct al_val *k = AL_VAL_KEY(root, i);

			if (names[i] && k->pos.line == line && k->pos.col == 1 &&
			    strcmp(names[i], k->str)) {
				skip = raw_key_len(k, p, eol);
				if (skip) {
					al_strbuf_adds(canon, names[i]);
					*changed = true;
				}
				break;
			}
		}
		al_strbuf_add(canon, p + skip, (size_t)((nl ? nl + 1 : end) - p - skip));
		p = nl ? nl + 1 : end;
		line++;
	}
	if (ok && fm_len && fm[fm_len - 1] != '\n')
		al_strbuf_addch(canon, '\n');
	for (size_t i = 0; i < root->n; i++)
		free(names[i]);
	free(names);
	return ok;
}

/* Whether the strict reader every later reader uses reads `key` in `text`. */
static bool reads_back(const struct al_strbuf *text, const char *key)
{
	struct al_md md = AL_MD_INIT;
	bool ok = al_md_parse(&md, "output", al_strndup(text->buf, text->len), text->len) == 0 &&
		  readable(key, al_md_get(&md, key));

	al_md_release(&md);
	return ok;
}

/*
 * Tries `fm` (the YAML) and `body` as the output. Returns 1 and fills
 * s->out when its front matter gives a readable key; `canonical`: the text
 * already was this front matter and body, nothing to write.
 */
static int try_one(struct search *s, const struct al_strbuf *fm, const struct al_strbuf *body,
		   int first_line, bool canonical)
{
	struct al_diags diags = AL_DIAGS_INIT;
	struct al_doc *doc = NULL;
	struct al_strbuf canon = AL_STRBUF_INIT;
	const struct al_val *v = NULL;
	bool changed = false;
	int found = 0;

	if (s->tried++ >= MAX_CANDIDATES)
		return 0;
	if (!al_utf8_valid(fm->buf, fm->len)) { /* read as U+FFFD, as al_md_read does */
		struct al_strbuf repaired = AL_STRBUF_INIT;
		int tried;

		al_utf8_repair(&repaired, fm->buf, fm->len);
		tried = try_one(s, &repaired, body, first_line, false);
		al_strbuf_release(&repaired);
		return tried;
	}
	al_diags_source(&diags, "output", NULL, 0);
	if (al_doc_parse(&doc, &diags, "output", fm->buf, fm->len, first_line - 1) < 0 || !doc) {
		if (diags.n)
			say(s, WHY_YAML, "its front matter is not valid YAML: line %d, column %d: %s",
			    diags.v[0].pos.line, diags.v[0].pos.col, diags.v[0].msg);
		goto done;
	}
	if (!doc->root || doc->root->kind != AL_VAL_MAP || !doc->root->n)
		goto done; /* a rule in prose, a heading: not front matter */
	for (size_t i = 0; i < doc->root->n && !v; i++) {
		char *name = al_output_key(AL_VAL_KEY(doc->root, i)->str,
					   AL_VAL_KEY(doc->root, i)->len);

		if (!strcmp(name, s->key))
			v = AL_VAL_VALUE(doc->root, i);
		free(name);
	}
	if (!v) {
		say(s, WHY_MISSING, "its front matter has no '%s'", s->key);
		goto done;
	}
	if (!readable(s->key, v)) {
		if (!strcmp(s->key, "target-met"))
			say(s, WHY_VALUE, "'%s: %s' is neither true nor false", s->key,
			    v->kind == AL_VAL_SCALAR ? v->str : al_val_describe(v));
		else
			say(s, WHY_VALUE, "its '%s' is %s, not a word", s->key,
			    al_val_describe(v));
		goto done;
	}
	if (!respell(s, doc, fm->buf, fm->len, first_line, &canon, &changed))
		goto done;
	found = 1;
	if (canonical && !changed)
		goto done;
	al_strbuf_adds(s->out, "---\n");
	al_strbuf_add(s->out, canon.buf, canon.len);
	al_strbuf_adds(s->out, "---\n");
	al_strbuf_add(s->out, body->buf, body->len);
	found = 2;
	if (!reads_back(s->out, s->key)) { /* a key it could not respell (a flow mapping's) */
		al_strbuf_reset(s->out);
		say(s, WHY_MISSING, "its front matter has no '%s'", s->key);
		found = 0;
	}
done:
	al_strbuf_release(&canon);
	al_doc_free(doc);
	al_diags_release(&diags);
	return found;
}

/*
 * Front matter inside the fence of lines [open, close): "---" first, or
 * (a yaml or bare fence) the fence's text itself.
 */
static int try_fence(struct search *s, size_t open, size_t close, const char *info,
		     size_t info_len)
{
	static const char *const yaml[] = { "yaml", "yml", "" };
	static const char *const md[] = { "markdown", "md", "yaml", "yml", "" };
	struct al_strbuf fm = AL_STRBUF_INIT, body = AL_STRBUF_INIT;
	size_t w = indent_of(&s->lines[open]), k = open + 1;
	int found = 0;

	if (!info_is(info, info_len, md, AL_ARRAY_SIZE(md)))
		return 0;
	while (k < close && is_blank(&s->lines[k]))
		k++;
	if (k < close && is_marker(&s->lines[k], "---")) {
		size_t c = k + 1;

		while (c < close && !is_marker(&s->lines[c], "---") &&
		       !is_marker(&s->lines[c], "..."))
			c++;
		if (c < close) {
			add_lines(&fm, s, k + 1, c, common_indent(s, k + 1, c));
			add_lines(&body, s, 0, open, 0);
			add_lines(&body, s, c + 1, close, w);
			add_lines(&body, s, close + 1, s->n, 0);
			found = try_one(s, &fm, &body, (int)k + 2, false);
		}
	} else if (info_is(info, info_len, yaml, AL_ARRAY_SIZE(yaml))) {
		add_lines(&fm, s, open + 1, close, common_indent(s, open + 1, close));
		add_lines(&body, s, 0, open, 0);
		add_lines(&body, s, close + 1, s->n, 0);
		found = try_one(s, &fm, &body, (int)open + 2, false);
	}
	al_strbuf_release(&fm);
	al_strbuf_release(&body);
	return found;
}

/* Front matter between the "---" of line `open` and the next "---" or "...". */
static int try_rule(struct search *s, size_t open)
{
	struct al_strbuf fm = AL_STRBUF_INIT, body = AL_STRBUF_INIT;
	size_t c = open + 1;
	int found = 0;

	while (c < s->n && !is_marker(&s->lines[c], "---") && !is_marker(&s->lines[c], "..."))
		c++;
	if (c < s->n) {
		add_lines(&fm, s, open + 1, c, common_indent(s, open + 1, c));
		add_lines(&body, s, 0, open, 0);
		add_lines(&body, s, c + 1, s->n, 0);
		/* the whole text's own front matter: nothing to rewrite unless a key is */
		found = try_one(s, &fm, &body, (int)open + 2,
				open == 0 && !indent_of(&s->lines[0]) && s->lines[0].len >= 3);
	}
	al_strbuf_release(&fm);
	al_strbuf_release(&body);
	return found;
}

static int search(struct search *s)
{
	for (size_t i = 0; i < s->n && s->tried < MAX_CANDIDATES; i++) {
		const char *info;
		size_t width, info_len, close;
		char ch;
		int found;

		if (fence_open(&s->lines[i], &ch, &width, &info, &info_len)) {
			for (close = i + 1; close < s->n; close++)
				if (fence_closes(&s->lines[close], ch, width))
					break;
			if ((found = try_fence(s, i, close, info, info_len)))
				return found;
			i = close; /* a fence's text is no place for a rule */
		} else if (is_marker(&s->lines[i], "---") && (found = try_rule(s, i))) {
			return found;
		}
	}
	return 0;
}

int al_output_canonical(struct al_strbuf *out, struct al_strbuf *why, const char *text,
			size_t len, const char *key)
{
	struct search s = { .key = key, .out = out, .why = why };
	const char *p = text, *end = text + len;
	size_t alloc = 0;
	int found;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));

		if (s.n == alloc) {
			alloc = alloc ? 2 * alloc : 64;
			s.lines = al_realloc(s.lines, alloc * sizeof(*s.lines));
		}
		s.lines[s.n++] = (struct line){ p, (size_t)((nl ? nl : end) - p) };
		p = nl ? nl + 1 : end;
	}
	found = search(&s);
	free(s.lines);
	if (found)
		return found - 1;
	if (s.rank == WHY_NONE) {
		al_strbuf_reset(why);
		al_strbuf_adds(why, "it has no front matter (a first line '---', the keys, then a line '---')");
	}
	return AL_EINVALID;
}

int al_output_settle(const char *path, const char *key, struct al_strbuf *why)
{
	struct al_strbuf text = AL_STRBUF_INIT, out = AL_STRBUF_INIT;
	int rc;

	if (al_strbuf_read_file(&text, path, 64u << 20) < 0) {
		int e = errno;

		al_strbuf_release(&text);
		if (e == ENOENT || e == ENOTDIR)
			return al_err(AL_ENOTFOUND, "'%s' does not exist", path);
		return al_err(AL_ERROR, "cannot read '%s': %s", path, al_strbuf_read_strerror(e));
	}
	al_strbuf_strip_bom(&text);
	rc = al_output_canonical(&out, why, text.buf, text.len, key);
	if (rc == 1)
		rc = al_write_in_place(path, out.buf, out.len);
	al_strbuf_release(&text);
	al_strbuf_release(&out);
	return rc;
}
