#include "ailoop/model/doc.h"
#include "ailoop/base/strbuf.h"
#include "ailoop/base/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

/* All values and strings of a document live in one arena, freed at once. */
struct arena {
	struct arena *next;
	size_t used, size;
	char data[];
};

static void *arena_alloc(struct arena **a, size_t n)
{
	struct arena *cur = *a;

	n = (n + 15) & ~(size_t)15;
	if (!cur || cur->size - cur->used < n) {
		size_t size = n > 65536 ? n : 65536;

		cur = al_malloc(sizeof(*cur) + size);
		cur->next = *a;
		cur->used = 0;
		cur->size = size;
		*a = cur;
	}
	cur->used += n;
	return cur->data + cur->used - n;
}

static void arena_free(struct arena *a)
{
	while (a) {
		struct arena *next = a->next;

		free(a);
		a = next;
	}
}

struct frame {
	struct al_val *val;
	struct al_val **items;
	size_t n, alloc;
	struct al_strmap keys; /* only for large mappings */
	bool drop_value;       /* the key before it was a duplicate: left out */
};

struct builder {
	struct al_doc *doc;
	struct al_diags *diags;
	struct frame *stack;
	size_t depth, alloc;
	int errors; /* problems of content: the tree is still whole */
	int holes;  /* aliases: the tree misses their values, so none is returned */
	int fatal;  /* the parse stopped: there is no tree */
};

static struct al_pos mark_pos(const struct builder *b, yaml_mark_t m)
{
	struct al_pos p = { b->doc->file, (int)m.line + 1 + b->doc->line_offset,
			    (int)m.column + 1 };
	return p;
}

static struct al_val *new_val(struct builder *b, enum al_val_kind kind, yaml_mark_t m)
{
	struct al_val *v = arena_alloc(&b->doc->arena, sizeof(*v));

	memset(v, 0, sizeof(*v));
	v->kind = kind;
	v->pos = mark_pos(b, m);
	v->str = "";
	return v;
}

static bool key_seen(struct frame *f, const struct al_val *key)
{
	size_t pairs = f->n / 2;

	if (pairs < 32) {
		for (size_t i = 0; i < pairs; i++)
			if (!strcmp(f->items[2 * i]->str, key->str))
				return true;
		return false;
	}
	if (!f->keys.n)
		for (size_t i = 0; i < pairs; i++)
			al_strmap_put(&f->keys, f->items[2 * i]->str, f->items[2 * i]);
	return al_strmap_put(&f->keys, key->str, (void *)key) != key;
}

static void attach(struct builder *b, struct al_val *v)
{
	struct frame *f;

	if (!b->depth) {
		b->doc->root = v;
		return;
	}
	f = &b->stack[b->depth - 1];
	if (f->drop_value) {
		f->drop_value = false;
		return;
	}
	if (f->val->kind == AL_VAL_MAP && f->n % 2 == 0) {
		if (v->kind != AL_VAL_SCALAR) {
			al_diags_add(b->diags, v->pos, "mapping keys must be plain strings");
			b->errors++;
			b->holes++; /* the key has no name to check */
		} else if (key_seen(f, v)) {
			/* the first value counts: readers never see the second */
			al_diags_add(b->diags, v->pos, "duplicate key '%s'", v->str);
			b->errors++;
			f->drop_value = true;
			return;
		}
	}
	AL_GROW(f->items, f->n, f->alloc);
	f->items[f->n++] = v;
}

static void push(struct builder *b, struct al_val *v)
{
	attach(b, v);
	AL_GROW(b->stack, b->depth, b->alloc);
	memset(&b->stack[b->depth], 0, sizeof(b->stack[0]));
	b->stack[b->depth++].val = v;
}

static void pop(struct builder *b)
{
	struct frame *f = &b->stack[--b->depth];
	struct al_val *v = f->val;

	v->items = arena_alloc(&b->doc->arena, f->n * sizeof(*v->items));
	if (f->n)
		memcpy(v->items, f->items, f->n * sizeof(*v->items));
	v->n = v->kind == AL_VAL_MAP ? f->n / 2 : f->n;
	free(f->items);
	al_strmap_release(&f->keys);
}

static struct al_val *scalar(struct builder *b, const yaml_event_t *ev)
{
	struct al_val *v = new_val(b, AL_VAL_SCALAR, ev->start_mark);
	size_t len = ev->data.scalar.length;
	const char *nul;
	char *s;

	switch (ev->data.scalar.style) {
	case YAML_SINGLE_QUOTED_SCALAR_STYLE: v->style = AL_STYLE_SINGLE; break;
	case YAML_DOUBLE_QUOTED_SCALAR_STYLE: v->style = AL_STYLE_DOUBLE; break;
	case YAML_LITERAL_SCALAR_STYLE:
	case YAML_FOLDED_SCALAR_STYLE: v->style = AL_STYLE_BLOCK; break;
	default: v->style = AL_STYLE_PLAIN; break;
	}
	nul = memchr(ev->data.scalar.value, '\0', len);
	if (nul) { /* an escape such as "\0": point at it */
		struct al_pos at = v->pos;

		at.col = al_val_col_at(b->doc, v, (size_t)(nul - (const char *)ev->data.scalar.value));
		al_diags_add(b->diags, at, "strings must not contain NUL characters");
		b->errors++;
	}
	s = arena_alloc(&b->doc->arena, len + 1);
	memcpy(s, ev->data.scalar.value, len);
	s[len] = '\0';
	v->str = s;
	v->len = len;
	return v;
}

static bool refuse_anchor(struct builder *b, const yaml_event_t *ev, const yaml_char_t *anchor)
{
	if (!anchor)
		return false;
	al_diags_add(b->diags, mark_pos(b, ev->start_mark),
		     "YAML anchors are not supported ('&%s'): write the value out", anchor);
	b->errors++;
	return true;
}

/* The byte of the text that mark `m` stands for (marks count characters). */
static size_t mark_offset(const struct builder *b, yaml_mark_t m)
{
	const char *p = b->doc->text, *end = b->doc->text + b->doc->len;

	for (size_t line = 0; p < end && line < m.line; p++)
		if (*p == '\n')
			line++;
	for (size_t col = 0; p < end && col < m.column && *p != '\n'; col++) {
		p++;
		while (p < end && (*p & 0xc0) == 0x80)
			p++;
	}
	return (size_t)(p - b->doc->text);
}

static void parser_error(struct builder *b, const yaml_parser_t *p)
{
	struct al_strbuf msg = AL_STRBUF_INIT;
	yaml_mark_t m = p->problem_mark;

	if (p->error == YAML_MEMORY_ERROR)
		al_die_oom();
	al_strbuf_adds(&msg, p->problem ? p->problem : "malformed YAML");
	if (p->context)
		al_strbuf_addf(&msg, " (%s at line %d)", p->context,
			       (int)p->context_mark.line + 1 + b->doc->line_offset);
	if (p->error == YAML_READER_ERROR) {
		/* the reader reports a byte offset, not a line */
		m.line = 0;
		m.column = 0;
		for (size_t i = 0; i < p->problem_offset && i < b->doc->len; i++) {
			if (b->doc->text[i] == '\n') {
				m.line++;
				m.column = 0;
			} else if ((b->doc->text[i] & 0xc0) != 0x80) {
				m.column++;
			}
		}
	} else if (p->context && mark_offset(b, m) >= b->doc->len) {
		/* the file ended inside something: show where that starts */
		const char *what = strstr(p->context, " a ");

		m = p->context_mark;
		if (what && (strstr(what, "quoted scalar") || strstr(what, " flow "))) {
			al_strbuf_reset(&msg);
			al_strbuf_addf(&msg, "this %s is never closed (the file ends first)", what + 3);
		}
	} else if (p->context && !strcmp(p->context, "while scanning a simple key")) {
		m = p->context_mark; /* the key that has no ':' after it */
	} else if (p->context && strstr(p->context, " flow ") && p->problem &&
		   m.line > p->context_mark.line && b->doc->text[mark_offset(b, m)] == ':') {
		/*
		 * A block key on a later line inside a '[' or '{': the bracket
		 * was left open, and that is where the mistake is.
		 */
		al_strbuf_reset(&msg);
		al_strbuf_addf(&msg, "this %s is never closed (%s before line %d)",
			       strstr(p->context, " flow ") + 1, p->problem,
			       (int)m.line + 1 + b->doc->line_offset);
		m = p->context_mark;
	} else if (p->problem && !strcmp(p->problem, "mapping values are not allowed in this context")) {
		al_strbuf_adds(&msg, " (check the indentation, or quote a value that contains ': ')");
	}
	al_diags_add(b->diags, mark_pos(b, m), "%s", msg.buf);
	al_strbuf_release(&msg);
	b->fatal++;
}

int al_doc_parse(struct al_doc **out, struct al_diags *d, const char *file,
		 const char *text, size_t len, int line_offset)
{
	struct builder b = { 0 };
	yaml_parser_t parser;
	yaml_event_t ev;
	int docs = 0, done = 0;

	*out = NULL;
	b.doc = al_calloc(1, sizeof(*b.doc));
	b.doc->file = al_diags_source(d, file, NULL, 0);
	b.doc->text = text;
	b.doc->len = len;
	b.doc->line_offset = line_offset;
	b.diags = d;

	if (!yaml_parser_initialize(&parser))
		al_die_oom();
	yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
	yaml_parser_set_encoding(&parser, YAML_UTF8_ENCODING);

	while (!done) {
		if (!yaml_parser_parse(&parser, &ev)) {
			parser_error(&b, &parser);
			break;
		}
		switch (ev.type) {
		case YAML_STREAM_END_EVENT:
			done = 1;
			break;
		case YAML_DOCUMENT_START_EVENT:
			if (++docs > 1) {
				al_diags_add(d, mark_pos(&b, ev.start_mark),
					     "only one YAML document is allowed here");
				b.fatal++;
				done = 1;
			}
			break;
		case YAML_ALIAS_EVENT:
			al_diags_add(d, mark_pos(&b, ev.start_mark),
				     "YAML aliases are not supported ('*%s'): write the value out",
				     ev.data.alias.anchor);
			b.errors++;
			b.holes++;
			attach(&b, new_val(&b, AL_VAL_SCALAR, ev.start_mark));
			break;
		case YAML_SCALAR_EVENT:
			refuse_anchor(&b, &ev, ev.data.scalar.anchor);
			attach(&b, scalar(&b, &ev));
			break;
		case YAML_SEQUENCE_START_EVENT:
		case YAML_MAPPING_START_EVENT: {
			int is_map = ev.type == YAML_MAPPING_START_EVENT;
			struct al_val *v;

			refuse_anchor(&b, &ev, is_map ? ev.data.mapping_start.anchor
						      : ev.data.sequence_start.anchor);
			if (b.depth >= AL_DOC_MAX_DEPTH) {
				al_diags_add(d, mark_pos(&b, ev.start_mark),
					     "nesting deeper than %d levels", AL_DOC_MAX_DEPTH);
				b.fatal++;
				done = 1;
				break;
			}
			v = new_val(&b, is_map ? AL_VAL_MAP : AL_VAL_SEQ, ev.start_mark);
			if (is_map ? ev.data.mapping_start.style == YAML_FLOW_MAPPING_STYLE
				   : ev.data.sequence_start.style == YAML_FLOW_SEQUENCE_STYLE)
				v->style = AL_STYLE_FLOW;
			else
				v->style = AL_STYLE_BLOCK_COLLECTION;
			push(&b, v);
			break;
		}
		case YAML_SEQUENCE_END_EVENT:
		case YAML_MAPPING_END_EVENT:
			pop(&b);
			break;
		default:
			break;
		}
		yaml_event_delete(&ev);
	}
	while (b.depth)
		pop(&b);
	free(b.stack);
	yaml_parser_delete(&parser);
	if (b.fatal || b.holes) {
		al_doc_free(b.doc);
		return AL_EINVALID;
	}
	*out = b.doc;
	return b.errors ? AL_EINVALID : 0;
}

void al_doc_free(struct al_doc *doc)
{
	if (!doc)
		return;
	arena_free(doc->arena);
	free(doc);
}

const struct al_val *al_val_get(const struct al_val *map, const char *key)
{
	if (!map || map->kind != AL_VAL_MAP)
		return NULL;
	for (size_t i = 0; i < map->n; i++)
		if (!strcmp(AL_VAL_KEY(map, i)->str, key))
			return AL_VAL_VALUE(map, i);
	return NULL;
}

bool al_val_is_null(const struct al_val *v)
{
	static const char *const nulls[] = { "", "~", "null", "Null", "NULL" };

	if (!v || v->kind != AL_VAL_SCALAR || v->style != AL_STYLE_PLAIN)
		return false;
	for (size_t i = 0; i < AL_ARRAY_SIZE(nulls); i++)
		if (!strcmp(v->str, nulls[i]))
			return true;
	return false;
}

const char *al_val_describe(const struct al_val *v)
{
	if (!v || al_val_is_null(v))
		return "nothing";
	switch (v->kind) {
	case AL_VAL_SEQ: return "a list";
	case AL_VAL_MAP: return "a mapping";
	default: break;
	}
	if (v->style == AL_STYLE_PLAIN) {
		long long n;
		bool b;

		char *end;

		if (al_val_int(v, &n))
			return "a number";
		if (al_val_bool(v, &b))
			return "a boolean";
		errno = 0;
		if (v->len && (strtod(v->str, &end), !*end) && !errno &&
		    strspn(v->str, "+-0123456789.eE") == v->len)
			return "a decimal number";
	}
	return "a string";
}

bool al_val_int(const struct al_val *v, long long *out)
{
	const char *p;
	long long n = 0;
	int sign = 1;

	if (!v || v->kind != AL_VAL_SCALAR || v->style != AL_STYLE_PLAIN || !v->len)
		return false;
	p = v->str;
	if (*p == '-' || *p == '+')
		sign = *p++ == '-' ? -1 : 1;
	if (!*p)
		return false;
	for (; *p; p++) {
		if (*p < '0' || *p > '9')
			return false;
		if (n > (999999999999999999LL - (*p - '0')) / 10)
			n = 999999999999999999LL; /* saturate: range checks reject it */
		else
			n = n * 10 + (*p - '0');
	}
	*out = sign * n;
	return true;
}

bool al_val_bool(const struct al_val *v, bool *out)
{
	static const char *const yes[] = { "true", "yes", "on" }, *const no[] = { "false", "no", "off" };

	if (!v || v->kind != AL_VAL_SCALAR || v->style != AL_STYLE_PLAIN)
		return false;
	for (size_t i = 0; i < AL_ARRAY_SIZE(yes); i++) {
		if (!strcasecmp(v->str, yes[i])) {
			*out = true;
			return true;
		}
		if (!strcasecmp(v->str, no[i])) {
			*out = false;
			return true;
		}
	}
	return false;
}

/* Number of bytes a YAML double-quoted escape starting at `p` decodes to. */
static size_t escape_width(const char *p, const char *end, size_t *raw)
{
	unsigned long cp = 0;
	size_t digits = 0;

	*raw = 2;
	if (p + 1 >= end)
		return 1;
	switch (p[1]) {
	case 'x': digits = 2; break;
	case 'u': digits = 4; break;
	case 'U': digits = 8; break;
	case 'N': case '_': return 2; /* U+0085, U+00A0 */
	case 'L': case 'P': return 3; /* U+2028, U+2029 */
	default: return 1;
	}
	for (size_t i = 0; i < digits && p + 2 + i < end; i++) {
		char c = p[2 + i];

		cp = cp * 16 + (unsigned long)(c >= 'a' ? c - 'a' + 10 : c >= 'A' ? c - 'A' + 10 : c - '0');
	}
	*raw = 2 + digits;
	return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
}

int al_val_col_at(const struct al_doc *doc, const struct al_val *v, size_t offset)
{
	const char *p = doc->text, *end = doc->text + doc->len;
	int line = 1 + doc->line_offset, col = 1;
	size_t decoded = 0;

	if (v->kind != AL_VAL_SCALAR || v->style == AL_STYLE_BLOCK)
		return v->pos.col;
	/* find the scalar's first byte */
	while (p < end && line < v->pos.line)
		if (*p++ == '\n')
			line++;
	while (p < end && col < v->pos.col) {
		p++;
		while (p < end && (*p & 0xc0) == 0x80)
			p++;
		col++;
	}
	if (v->style != AL_STYLE_PLAIN && p < end) {
		p++; /* the opening quote */
		col++;
	}
	while (p < end && decoded < offset) {
		size_t raw = 1, width = 1, cols = 1;

		if (*p == '\n')
			return v->pos.col; /* multi-line: no single column */
		if (v->style == AL_STYLE_SINGLE && *p == '\'') {
			raw = cols = 2;
		} else if (v->style == AL_STYLE_DOUBLE && *p == '\\') {
			width = escape_width(p, end, &raw);
			cols = raw; /* an escape is written in ASCII: a column a byte */
		} else {
			while (p + raw < end && (p[raw] & 0xc0) == 0x80)
				raw++, width++;
		}
		decoded += width;
		p += raw;
		col += (int)cols;
	}
	return col;
}
