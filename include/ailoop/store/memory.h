#ifndef AILOOP_MEMORY_H
#define AILOOP_MEMORY_H

#include "ailoop/base/paths.h"
#include "ailoop/base/strbuf.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * A run's working memory (SPEC §3.3): <run-dir>/memory.jsonl, one entry a
 * line with the seed's fields (timestamp, agent, knowledge_type, key,
 * value, confidence), append-only, the last write of a key wins. Writers
 * are ailoop, its parallel children and agents (`ailoop memory set`), all
 * at once: each appends one whole line under an flock of the file. Readers
 * keep an index in memory and read only what was appended since they last
 * looked, never the whole file per lookup.
 */
/* (AL_MEMORY_FILE: base/paths.h) */
/* Longest key, in bytes; longest line of the file (one entry), in bytes. */
#define AL_MEMORY_KEY_MAX 256
#define AL_MEMORY_ENTRY_MAX (1 << 20)

struct al_memory;

/*
 * Opens (creating if absent) the memory of the run in `run_dir`:
 * AL_ENOTFOUND if that directory does not exist or the file is a symbolic
 * link. A forked child may go on using its parent's handle: its first
 * write opens the file again, as the lock (an flock) belongs to an open
 * file, which parent and child would otherwise share.
 */
int al_memory_open(struct al_memory **out, const char *run_dir);
void al_memory_free(struct al_memory *m);

/*
 * The newest value of `key`, or NULL if it has none: a JSON string as its
 * text, any other value as compact JSON ("42", "true", "{\"a\":1}"). Reads
 * what other writers appended first. Valid until the next call on `m`.
 */
const char *al_memory_get(struct al_memory *m, const char *key);

/*
 * The same in two steps, for many lookups at one moment (a condition):
 * al_memory_refresh() reads what other writers appended; al_memory_peek()
 * is then a lookup in the index alone, without a system call.
 */
void al_memory_refresh(struct al_memory *m);
const char *al_memory_peek(struct al_memory *m, const char *key);
uint64_t al_memory_peek_version(const struct al_memory *m);

/*
 * Appends an entry. `value` is JSON text when `json` (checked: AL_EINVALID
 * if it is not), else a string. `agent` and `knowledge_type` may be NULL
 * ("ailoop", "observation").
 */
int al_memory_set(struct al_memory *m, const char *key, const char *value, bool json,
		  const char *agent, const char *knowledge_type);
/*
 * The same with a jansson value (borrowed). AL_EINVALID (al_errmsg() says
 * why) for a key that al_memory_check_key() refuses or an entry longer
 * than AL_MEMORY_ENTRY_MAX; AL_ERROR if the file cannot be written. A
 * file deleted (or replaced) since it was opened is made again (or the
 * new one is used), and what the old one held is forgotten.
 */
int al_memory_set_json(struct al_memory *m, const char *key, json_t *value, const char *agent,
		       const char *knowledge_type);

/*
 * Changes whenever the memory does (by any writer): what a cached
 * condition result was computed against. It is the length of the file
 * read so far, so every process reading the same file agrees on it.
 */
uint64_t al_memory_version(struct al_memory *m);

/*
 * A valid key: not empty, at most AL_MEMORY_KEY_MAX bytes of UTF-8, no
 * control characters. Returns 0 or AL_EINVALID with a message.
 */
int al_memory_check_key(const char *key);

/* How many keys have a value. */
size_t al_memory_count(struct al_memory *m);
/* Every key with its newest value as JSON, in one new object (caller decrefs). */
json_t *al_memory_object(struct al_memory *m);

/* Calls `fn` for every key with its newest value, in key order. */
void al_memory_each(struct al_memory *m, void (*fn)(const char *key, const char *value,
						    void *data), void *data);

/* Which entries an agent is shown, and whether it can ask for more. */
struct al_memory_view {
	bool (*keep)(const char *key, void *data); /* NULL: every key */
	void *data;
	bool shell; /* the agent can run `ailoop memory`: the section says how */
};

/*
 * {memory-section}: a "## Working memory" heading, then the entries `view`
 * keeps (NULL: all) as "- key: value" lines, null values left out; nothing
 * at all when no entry is left.
 */
void al_memory_section(struct al_memory *m, const struct al_memory_view *view,
		       struct al_strbuf *out);

#endif
