#ifndef AILOOP_DIAG_H
#define AILOOP_DIAG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/*
 * Diagnostics for files a user wrote: every error of a file is collected
 * (not just the first) and printed as `FILE:LINE:COL: error: MESSAGE`
 * followed by the source line and a caret under the column.
 *
 * The set also keeps the text of each file it was told about, so that a
 * diagnostic can quote its line long after the parser is gone.
 */
struct al_pos {
	const char *file; /* interned by an al_diags; 1-based line and column */
	int line;
	int col;
};

struct al_diag {
	struct al_pos pos;
	char *msg;
	size_t file_rank; /* order in which its file was registered */
	size_t seq;       /* discovery order, so sorting is stable */
};

struct al_diag_source {
	char *file;
	char *text; /* NULL for files whose lines must not be echoed */
	size_t len;
};

struct al_diags {
	struct al_diag *v;
	size_t n, alloc;
	struct al_diag_source *src;
	size_t nsrc, src_alloc;
};

#define AL_DIAGS_INIT { NULL, 0, 0, NULL, 0, 0 }

void al_diags_release(struct al_diags *d);

/*
 * Returns the set's own copy of `file`, stable for the set's lifetime.
 * With `text`, the file's content is remembered for quoting.
 */
const char *al_diags_source(struct al_diags *d, const char *file,
			    const char *text, size_t len);

void al_diags_add(struct al_diags *d, struct al_pos pos, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Sorts by file (in the order files were registered), line and column. */
void al_diags_sort(struct al_diags *d);

/* Prints every diagnostic; `color` paints "error:" (caller checks TTY). */
void al_diags_print(const struct al_diags *d, FILE *out, bool color);
/* The same, for a set that holds warnings: "FILE:LINE:COL: warning: ...". */
void al_diags_print_warnings(const struct al_diags *d, FILE *out, bool color);

#endif
