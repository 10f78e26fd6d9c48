#ifndef AILOOP_OUTPUT_H
#define AILOOP_OUTPUT_H

#include "ailoop/base/strbuf.h"

#include <stddef.h>

/*
 * An agent's output file read as a language model writes it. The front
 * matter a role needs (a controller's `target-met`, a sensor's `status`)
 * is found where models put it: at the top, after a line of prose or blank
 * lines, inside a fenced block (```yaml, ```markdown or a bare fence),
 * indented as a whole; its keys are read in any of the spellings models
 * use (`target_met`, `targetMet`). An output read so is written back in
 * the form every later reader reads (front matter first, its keys spelled
 * as ailoop spells them, the prose kept as its body), so the commit, the
 * report and a resume all see what ailoop decided on.
 */

/*
 * `key` as ailoop spells keys: lower case, words joined by '-'
 * ("target_met", "targetMet", "Target-Met" -> "target-met"). Caller frees.
 */
char *al_output_key(const char *key, size_t len);

/*
 * Finds the front matter in `text` that gives a readable `key` ("target-met"
 * must be true or false, "status" any text) and appends the output in its
 * canonical form to `out`. Returns 0 when the text was canonical already
 * (nothing appended), 1 when `out` holds the rewritten text, AL_EINVALID
 * when no front matter gives a readable `key`: `why` then says what was
 * wrong, in a few words meant for the agent as much as for the user.
 */
int al_output_canonical(struct al_strbuf *out, struct al_strbuf *why, const char *text,
			size_t len, const char *key);

/*
 * The same for the file at `path`, rewritten in place when needed.
 * AL_ENOTFOUND if it does not exist.
 */
int al_output_settle(const char *path, const char *key, struct al_strbuf *why);

#endif
