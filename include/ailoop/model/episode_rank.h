#ifndef AILOOP_EPISODE_RANK_H
#define AILOOP_EPISODE_RANK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Past episodes ranked against a node's goal: the index of the episode
 * store (refs/ailoop/episodes, its `index.tsv`) parsed, and BM25 over it.
 * Pure: no git, no files; the store's reading is store/episode_recall.h.
 *
 * The index is "# ailoop episodes v1", then one line an episode, oldest
 * first, of nine TAB-separated fields:
 * id run node type outcome date iterations goal root_task.
 */
#define AL_EPISODES_HEADER "# ailoop episodes v1"
#define AL_EPISODE_ID_LEN 12

/* BM25's parameters: term frequency saturation and length normalisation. */
#define AL_BM25_K1 1.2
#define AL_BM25_B 0.75

enum al_episode_outcome { AL_EPISODE_SUCCESS, AL_EPISODE_FAILURE, AL_EPISODE_BLOCKED };

/* One line of the index; the strings point into the index's own copy of the text. */
struct al_episode_entry {
	const char *id, *run, *node, *type, *date, *goal, *root_task;
	enum al_episode_outcome outcome;
	long iterations;
	size_t at, len;              /* its line in the text parsed: offset, bytes (no LF, CR kept) */
	uint32_t first_term, nterms; /* its terms, in the index's `terms` (if asked for) */
};

struct al_episode_index {
	char *text;               /* the blob, split in place */
	struct al_episode_entry *v;
	size_t n;
	uint32_t *terms;          /* every episode's terms, hashed, one after the other */
	size_t nterms;
	double avg_len;           /* terms an episode, on average */
	size_t bad;               /* lines skipped: not nine fields, a bad id or outcome */
	int bad_line;             /* the first of them (1-based), 0 if none */
	bool bad_header;          /* the first line is not AL_EPISODES_HEADER: nothing read */
};

/*
 * Parses `len` bytes of an index, the one reading of it: the ranking's,
 * and the store's, which takes any bad line for damage. Never fails on
 * its content: bad lines are counted (bad, bad_line) and skipped, a wrong
 * header leaves it empty (bad_header). The terms are found only if
 * `terms` (a ranking needs them; a list or a writer does not). Free with
 * al_episode_index_free().
 */
struct al_episode_index *al_episode_index_parse(const char *text, size_t len, bool terms);
void al_episode_index_free(struct al_episode_index *x);

/* Who asks, and what they may be given. */
struct al_episode_query {
	const char *text;          /* the node's goal, node path and root task */
	const char *exclude_run;   /* never this run's episodes (may be NULL) */
	bool include_failures;     /* false: successes only */
};

struct al_episode_hit {
	const struct al_episode_entry *e;
	double score;
};

/*
 * The episodes whose score is above 0, best first: by BM25 score
 * (k1 1.2, b 0.75, the statistics of the whole index), at equal score
 * successes before failures before blocked, then the newest first.
 * *out is allocated (free() it), NULL when *n is 0.
 */
void al_episode_rank(struct al_episode_hit **out, size_t *n, const struct al_episode_index *x,
		     const struct al_episode_query *q);
/* The same, only the best `max` of them (every one if max is 0). */
void al_episode_rank_best(struct al_episode_hit **out, size_t *n,
			  const struct al_episode_index *x, const struct al_episode_query *q,
			  size_t max);

/*
 * Calls `fn` for each term of `text` (words of ASCII letters and digits,
 * and bytes beyond ASCII, lowercased; words of one byte and common English
 * words left out), with its hash.
 */
void al_episode_terms(const char *text, size_t len, void (*fn)(uint32_t term, void *data),
		      void *data);

extern const char *const al_episode_outcome_names[3];

#endif
