#include "ailoop/base/diag.h"
#include "ailoop/base/strbuf.h"
#include "ailoop/base/util.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void al_diags_release(struct al_diags *d)
{
	for (size_t i = 0; i < d->n; i++)
		free(d->v[i].msg);
	for (size_t i = 0; i < d->nsrc; i++) {
		free(d->src[i].file);
		free(d->src[i].text);
	}
	free(d->v);
	free(d->src);
	memset(d, 0, sizeof(*d));
}

static struct al_diag_source *find_source(const struct al_diags *d, const char *file)
{
	for (size_t i = 0; i < d->nsrc; i++)
		if (d->src[i].file == file || !strcmp(d->src[i].file, file))
			return &d->src[i];
	return NULL;
}

const char *al_diags_source(struct al_diags *d, const char *file,
			    const char *text, size_t len)
{
	struct al_diag_source *s = find_source(d, file);

	if (!s) {
		AL_GROW(d->src, d->nsrc, d->src_alloc);
		s = &d->src[d->nsrc++];
		s->file = al_strdup(file);
		s->text = NULL;
		s->len = 0;
	}
	if (text && !s->text) {
		s->text = al_strndup(text, len);
		s->len = len;
	}
	return s->file;
}

void al_diags_add(struct al_diags *d, struct al_pos pos, const char *fmt, ...)
{
	struct al_strbuf sb = AL_STRBUF_INIT;
	struct al_diag *e;
	va_list ap;

	va_start(ap, fmt);
	al_strbuf_vaddf(&sb, fmt, ap);
	va_end(ap);
	AL_GROW(d->v, d->n, d->alloc);
	e = &d->v[d->n];
	e->pos = pos;
	e->pos.file = al_diags_source(d, pos.file ? pos.file : "-", NULL, 0);
	e->file_rank = (size_t)(find_source(d, e->pos.file) - d->src);
	e->msg = al_strbuf_detach(&sb, NULL);
	e->seq = d->n++;
}

static int cmp_diag(const void *pa, const void *pb)
{
	const struct al_diag *a = pa, *b = pb;
	if (a->file_rank != b->file_rank)
		return a->file_rank < b->file_rank ? -1 : 1;
	if (a->pos.line != b->pos.line)
		return a->pos.line < b->pos.line ? -1 : 1;
	if (a->pos.col != b->pos.col)
		return a->pos.col < b->pos.col ? -1 : 1;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

void al_diags_sort(struct al_diags *d)
{
	if (d->n > 1) /* an empty set has no array, which qsort must not be given */
		qsort(d->v, d->n, sizeof(*d->v), cmp_diag);
}

/*
 * Finds line `line` (1-based) of `text`; returns its length, or -1. The
 * cursor (`*at`, on line `*at_line`) is where the last search ended: the
 * diagnostics come sorted, so each search goes on from there rather than
 * from the top, and a file of many errors prints in linear time.
 */
static long find_line(const char *text, size_t len, int line, const char **start,
		      const char **at, int *at_line)
{
	const char *p = text, *end = text + len, *nl;
	int l = 1;

	if (*at && *at_line <= line) {
		p = *at;
		l = *at_line;
	}
	for (; l < line; l++) {
		nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl)
			return -1;
		p = nl + 1;
	}
	*at = p;
	*at_line = line;
	nl = memchr(p, '\n', (size_t)(end - p));
	*start = p;
	len = (size_t)((nl ? nl : end) - p);
	if (len && p[len - 1] == '\r')
		len--;
	return (long)len;
}

static void print_quote(FILE *out, const char *line, long len, int col)
{
	const char *p = line;
	int c = 1;

	fprintf(out, "    %.*s\n    ", (int)len, line);
	/* step over characters, not bytes, as columns count characters */
	while (c < col && p < line + len) {
		fputc(*p == '\t' ? '\t' : ' ', out);
		p++;
		while (p < line + len && (*p & 0xc0) == 0x80)
			p++;
		c++;
	}
	fputs("^\n", out);
}

static void print_as(const struct al_diags *d, FILE *out, const char *paint, const char *kind)
{
	const char *reset = *paint ? "\033[0m" : "";
	const struct al_diag_source *last = NULL;
	const char *at = NULL;
	int at_line = 0;

	for (size_t i = 0; i < d->n; i++) {
		const struct al_diag *e = &d->v[i];
		const struct al_diag_source *s = find_source(d, e->pos.file);
		const char *line = NULL; /* set whenever find_line finds it */
		long len;

		fprintf(out, "%s:%d:%d: %s%s:%s %s\n", e->pos.file, e->pos.line,
			e->pos.col, paint, kind, reset, e->msg);
		if (!s || !s->text || e->pos.line < 1)
			continue;
		if (s != last) {
			last = s;
			at = NULL;
		}
		len = find_line(s->text, s->len, e->pos.line, &line, &at, &at_line);
		if (len >= 0 && len < 400)
			print_quote(out, line, len, e->pos.col);
	}
}

void al_diags_print(const struct al_diags *d, FILE *out, bool color)
{
	print_as(d, out, color ? "\033[1;31m" : "", "error");
}

void al_diags_print_warnings(const struct al_diags *d, FILE *out, bool color)
{
	print_as(d, out, color ? "\033[1;35m" : "", "warning");
}
