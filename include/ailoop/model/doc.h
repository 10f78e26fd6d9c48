#ifndef AILOOP_DOC_H
#define AILOOP_DOC_H

#include "ailoop/base/diag.h"

#include <stdbool.h>
#include <stddef.h>

/*
 * A YAML (or JSON) document as ailoop's own tree of values, each with the
 * file, line and column it came from. This is the only module that sees
 * libyaml. Aliases and anchors are refused (`&a [*a]` is a cycle and
 * `*a` repeated is a billion laughs), as are documents nested deeper than
 * AL_DOC_MAX_DEPTH, duplicate keys and keys that are not scalars.
 */
#define AL_DOC_MAX_DEPTH 400

enum al_val_kind { AL_VAL_SCALAR, AL_VAL_SEQ, AL_VAL_MAP };
enum al_val_style { AL_STYLE_PLAIN, AL_STYLE_SINGLE, AL_STYLE_DOUBLE,
		    AL_STYLE_BLOCK, AL_STYLE_FLOW, AL_STYLE_BLOCK_COLLECTION };

struct al_val {
	enum al_val_kind kind;
	enum al_val_style style;
	struct al_pos pos;
	/* scalar: text, NUL-terminated (NUL bytes inside are refused) */
	const char *str;
	size_t len;
	/* sequence: n items; mapping: n pairs stored key, value, key, value… */
	struct al_val **items;
	size_t n;
};

struct al_doc {
	struct al_val *root; /* NULL for an empty document */
	const char *file;    /* interned in the al_diags given to the parser */
	const char *text;    /* the source, borrowed: must outlive the doc */
	size_t len;
	int line_offset;
	struct arena *arena;
};

/*
 * Parses `text` (of `file`, as registered in `d`) into `*out`. Lines are
 * reported `line_offset` lines further down, for documents embedded in a
 * larger file (front matter). Returns 0, or AL_EINVALID after adding
 * diagnostics to `d`. A document whose problems leave its tree whole
 * (anchors, duplicate keys) is still returned, so that its reader can go on
 * and report the rest; after a syntax error, an alias (whose value is left
 * out) or a key that is not a scalar (which has no name to read) *out is
 * NULL.
 */
int al_doc_parse(struct al_doc **out, struct al_diags *d, const char *file,
		 const char *text, size_t len, int line_offset);
void al_doc_free(struct al_doc *doc);

/* The value of `key` in mapping `map`, or NULL. */
const struct al_val *al_val_get(const struct al_val *map, const char *key);
#define AL_VAL_KEY(map, i) ((map)->items[2 * (i)])
#define AL_VAL_VALUE(map, i) ((map)->items[2 * (i) + 1])

/* A plain `~`, `null`, `Null`, `NULL` or empty scalar. */
bool al_val_is_null(const struct al_val *v);
/* "a string", "a list", "a mapping", "null": for "expected X, got Y". */
const char *al_val_describe(const struct al_val *v);
/* An unquoted decimal integer. Returns false if `v` is not one. */
bool al_val_int(const struct al_val *v, long long *out);
/* true/false/yes/no/on/off in any case, unquoted. */
bool al_val_bool(const struct al_val *v, bool *out);

/*
 * The source column of byte `offset` of scalar `v`'s text, accounting for
 * quotes and escapes; the scalar's own column when that cannot be known
 * (multi-line and block scalars).
 */
int al_val_col_at(const struct al_doc *doc, const struct al_val *v, size_t offset);

#endif
