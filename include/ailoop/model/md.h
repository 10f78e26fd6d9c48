#ifndef AILOOP_MD_H
#define AILOOP_MD_H

#include "ailoop/base/diag.h"
#include "ailoop/model/doc.h"
#include "ailoop/base/strbuf.h"

#include <stdbool.h>

/*
 * Markdown files with YAML front matter: the state and artifact files of a
 * run. Front matter is written through libyaml's emitter, so any string
 * (a task with quotes, newlines, `$(…)`) round-trips exactly.
 */

/* --- writing ------------------------------------------------------------ */
struct al_fm;

/* Starts front matter; add keys in order, then al_fm_finish(). */
struct al_fm *al_fm_new(void);
/* A string value; NULL leaves the key out. */
void al_fm_str(struct al_fm *fm, const char *key, const char *value);
void al_fm_int(struct al_fm *fm, const char *key, long long value);
void al_fm_bool(struct al_fm *fm, const char *key, bool value);
void al_fm_list(struct al_fm *fm, const char *key, const char *const *items, size_t n);
/* A nested mapping: al_fm_str() etc. go into it until al_fm_end_map(). */
void al_fm_begin_map(struct al_fm *fm, const char *key);
void al_fm_end_map(struct al_fm *fm);
/* Appends "---\n<yaml>---\n" to `out` and frees `fm`. */
void al_fm_finish(struct al_fm *fm, struct al_strbuf *out);

/* --- reading ------------------------------------------------------------ */
struct al_md {
	char *text;
	size_t len;
	struct al_doc *doc; /* NULL if the file has no front matter */
	const char *body;
	size_t body_len;
	struct al_diags diags;
};

#define AL_MD_INIT { NULL, 0, NULL, NULL, 0, AL_DIAGS_INIT }

/*
 * Reads `path`. Returns 0; AL_ENOTFOUND if it does not exist; AL_EINVALID
 * if its front matter is broken or not a mapping (al_errmsg() says where,
 * as FILE:LINE:COL). Release with al_md_release() in every case.
 */
int al_md_read(struct al_md *md, const char *path);
/* The same for text read elsewhere (a blob of history): takes `text`. */
int al_md_parse(struct al_md *md, const char *path, char *text, size_t len);
void al_md_release(struct al_md *md);

/* A top-level front matter value, or NULL. */
const struct al_val *al_md_get(const struct al_md *md, const char *key);
/* A top-level scalar's text, or NULL if absent or not a scalar. */
const char *al_md_str(const struct al_md *md, const char *key);
bool al_md_bool(const struct al_md *md, const char *key, bool *out);
bool al_md_int(const struct al_md *md, const char *key, long long *out);

/*
 * The text of the `## heading` section of a Markdown body, up to the next
 * "## " heading outside code fences, without the blank lines around it;
 * NULL if there is none. Caller frees.
 */
char *al_md_section(const char *body, size_t len, const char *heading);
/* `s` without leading blank lines and trailing whitespace. Caller frees. */
char *al_md_trim_lines(const char *s, size_t len);

/*
 * Splits Markdown into front matter and body. `*fm` and `*fm_len` delimit
 * the YAML between the `---` lines (fm is NULL if the text has none) and
 * `*fm_line` is the 1-based line it starts on. Returns false if the front
 * matter is opened but never closed.
 */
bool al_split_front_matter(const char *text, size_t len, const char **fm, size_t *fm_len,
			   int *fm_line, const char **body, size_t *body_len);

#endif
