#ifndef AILOOP_UTIL_H
#define AILOOP_UTIL_H

#include "ailoop/base/alloc.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Error codes returned (negated) by every fallible function. 0 is success.
 * The human-readable reason of the last failure is kept by al_err() and read
 * with al_errmsg(), in the manner of libgit2's git_error_last().
 */
enum {
	AL_OK = 0,
	AL_ERROR = -1,       /* generic failure; the message says what */
	AL_ENOTFOUND = -2,   /* a needed file or object does not exist */
	AL_EINVALID = -3,    /* invalid flow, agent file or state file */
	AL_ETIMEOUT = -4,    /* a deadline expired */
	AL_EINTR = -5,       /* interrupted by SIGINT/SIGTERM */
	AL_ELOCKED = -6,     /* held by another live process */
	AL_ENORUNNER = -7,   /* an agent runner's program is not installed */
	AL_EUSAGE = -8,      /* bad command line */
	AL_EAGENT = -9,      /* an agent failed (exit status, no output, …) */
	AL_EBLOCKED = -10,   /* blocked: a circuit breaker opened or a budget ran out */
	AL_EMOVED = -11,     /* an agent moved HEAD off the run's branch, reset it, or
				removed the run's untracked files */
	AL_EFEEDBACK = -12,  /* an action queued feedback: its handler (feedback.h) takes over */
	AL_ECONFLICT = -13,  /* the user's change conflicts with the run's work; the run pauses */
	AL_EFORMAT = -14,    /* an agent's output its role cannot read (invoke.c asks again) */
};

/*
 * Records the message of a failure and returns `code`. The arguments may
 * point into the current message: al_err(c, "in x: %s", al_errmsg()).
 */
int al_err(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The message of the last al_err(), or "" if none. */
const char *al_errmsg(void);

char *al_xprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));


bool al_starts_with(const char *s, const char *prefix);
/* Whether `text` has `line` as one of its lines (a last line without its newline too). */
bool al_has_line(const char *text, const char *line);
bool al_ends_with(const char *s, const char *suffix);

/* Frees `n` strings and the array that holds them. */
void al_strv_free(char **v, size_t n);
/* Sorts `n` strings in byte order (strcmp), as git orders paths. */
void al_strv_sort(char **v, size_t n);
/* Whether the `n` strings of `v`, sorted so, hold `s`. */
bool al_strv_has(char *const *v, size_t n, const char *s);

/* Edit distance, for "did you mean" hints. */
size_t al_levenshtein(const char *a, const char *b);
/* The candidate closest to `word` if it is close enough to be a likely typo. */
const char *al_closest(const char *word, const char *const *candidates, size_t n);

/*
 * Checks that `s` is UTF-8 text: well-formed sequences and no NUL or other
 * control characters but tab, LF, CR. On failure returns false and sets the
 * 1-based line and column (in characters) of the first offending byte.
 */
bool al_utf8_text(const char *s, size_t len, int *line, int *col);

struct al_strbuf;
/* Whether `s` is well-formed UTF-8 (any characters, NUL included). */
bool al_utf8_valid(const char *s, size_t len);
/* The length of the longest prefix of `s` that is well-formed UTF-8. */
size_t al_utf8_valid_len(const char *s, size_t len);
/*
 * Appends `s` to `out` as well-formed UTF-8: each byte that does not begin
 * a well-formed sequence becomes U+FFFD. For text of arbitrary bytes (agent
 * output, a task, file names) that goes where only UTF-8 is taken: YAML
 * front matter, commit messages, JSON.
 */
void al_utf8_repair(struct al_strbuf *out, const char *s, size_t len);

/* Shortens `s` in place to at most `max` bytes, not splitting a character. */
void al_utf8_cut(char *s, size_t max);

/* 64-bit FNV-1a. */
uint64_t al_hash(const char *s, size_t len);

/*
 * A map from strings to pointers. Keys are not copied: they must outlive
 * the map. Used where quadratic scans would make large flows slow.
 */
struct al_strmap_slot {
	const char *key;
	void *val;
};
struct al_strmap {
	struct al_strmap_slot *slots;
	size_t n, cap;
};
#define AL_STRMAP_INIT { NULL, 0, 0 }
/* Adds `key` unless present; returns the value now stored under it. */
void *al_strmap_put(struct al_strmap *map, const char *key, void *val);
void *al_strmap_get(const struct al_strmap *map, const char *key);
void al_strmap_release(struct al_strmap *map);

/*
 * Crash points, for the tests of crash safety: with AILOOP_CRASH_AT=N in
 * the environment, the N-th point reached kills the run with SIGKILL, as a
 * power cut would: the ailoop process and every process below it (a
 * parallel node's child processes, agents). The points are counted across
 * all the run's ailoop processes, so N names one point whichever process
 * reaches it. AILOOP_CRASH_LOG=FILE appends each point's number and name.
 * Points sit where a crash is most dangerous: around state writes, between
 * a commit and the state that records it, while agents run. Without those
 * variables a point costs one branch.
 */
void al_crash_point(const char *name);
/* Sets the count up in this process, before it forks the processes that share it. */
void al_crash_setup(void);

/* Monotonic milliseconds, for durations and deadlines. */
int64_t al_now_ms(void);
/* The current UTC time as 2026-11-21T10:00:00Z. */
void al_timestamp(char buf[32]);

#endif
