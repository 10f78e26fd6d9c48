#include "ailoop/model/episode_rank.h"
#include "ailoop/base/alloc.h"
#include "ailoop/base/util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/*
 * BM25 over the episode index. An episode's document is its goal, node
 * path and root task; the query is the asking node's. Each episode's terms
 * are hashed once, as the index is parsed (the store keeps the parsed
 * index while its ref stays), so a ranking is one pass over integers.
 */
const char *const al_episode_outcome_names[3] = { "success", "failure", "blocked" };

/*
 * Words too common in tasks to tell one from another. A short list: BM25's
 * idf already weighs down what every episode says.
 */
static const char *const stop_words[] = {
	"a",    "an",   "and",  "are",  "as",   "at",   "be",   "by",   "for",  "from",
	"has",  "have", "in",   "into", "is",   "it",   "its",  "of",   "on",   "or",
	"that", "the",  "this", "to",   "was",  "were", "will", "with", "all",  "so",
};

/*
 * A byte of a word, lowercased, or 0: ASCII letters and digits, and every
 * byte beyond ASCII (so words of other scripts stay words). A table: the
 * index of ten thousand episodes is a few megabytes, tokenized byte by byte.
 */
static unsigned char word_table[256];

/*
 * The stop words, every one of 2 to 4 letters, each packed into an integer
 * (its bytes, the first lowest), in an open-addressing set: a short word of
 * the index is looked up with one multiplication, not compared with each.
 */
#define STOP_SLOTS 64
static uint32_t stop_set[STOP_SLOTS];

static uint32_t pack_word(const unsigned char *w, size_t len)
{
	uint32_t k = 0;

	for (size_t i = 0; i < len; i++)
		k |= (uint32_t)word_table[w[i]] << (8 * i);
	return k;
}

static size_t stop_slot(uint32_t k)
{
	return (size_t)((k * 2654435761u) >> 26); /* the top 6 bits: STOP_SLOTS */
}

static void word_table_init(void)
{
	for (int c = 0; c < 256; c++)
		word_table[c] = (unsigned char)((c >= 'A' && c <= 'Z') ? c - 'A' + 'a'
						: ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
						   c >= 0x80) ? c : 0);
	for (size_t i = 0; i < AL_ARRAY_SIZE(stop_words); i++) {
		uint32_t k = pack_word((const unsigned char *)stop_words[i], strlen(stop_words[i]));
		size_t j = stop_slot(k);

		while (stop_set[j])
			j = (j + 1) % STOP_SLOTS;
		stop_set[j] = k;
	}
}

/* (every stop word has 2 to 4 letters: a longer word is looked at no further) */
static bool stop_word(const unsigned char *w, size_t len)
{
	uint32_t k;

	if (len > 4)
		return false;
	k = pack_word(w, len); /* never 0: a word's bytes are not */
	for (size_t j = stop_slot(k); stop_set[j]; j = (j + 1) % STOP_SLOTS)
		if (stop_set[j] == k)
			return true;
	return false;
}

void al_episode_terms(const char *text, size_t len, void (*fn)(uint32_t term, void *data),
		      void *data)
{
	const unsigned char *p = (const unsigned char *)text, *end = p + len;

	if (!word_table['a'])
		word_table_init();
	while (p < end) {
		const unsigned char *start;
		uint32_t h = 2166136261u;
		size_t wl;

		while (p < end && !word_table[*p])
			p++;
		start = p;
		for (; p < end && word_table[*p]; p++)
			h = (h ^ word_table[*p]) * 16777619u;
		wl = (size_t)(p - start);
		if (wl < 2 || stop_word(start, wl))
			continue;
		fn(h, data);
	}
}

/* ---- the index ---------------------------------------------------------- */

static void add_term(uint32_t term, void *data)
{
	struct al_episode_index *x = data;

	x->terms[x->nterms++] = term;
}

/* A term a byte at most: enough room for every term of `len` bytes. */
static void ensure_terms(struct al_episode_index *x, size_t *alloc, size_t len)
{
	if (x->nterms + len / 2 + 1 <= *alloc)
		return;
	*alloc = (x->nterms + len / 2 + 1) * 2;
	x->terms = al_realloc(x->terms, *alloc * sizeof(*x->terms));
}

static bool hex_id(const char *s)
{
	size_t i;

	for (i = 0; s[i]; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return i == AL_EPISODE_ID_LEN;
}

/*
 * Splits `line` (`len` bytes) into its nine fields in place; false if it
 * is not an episode. len[i] is the length of field i.
 */
static bool parse_line(struct al_episode_entry *e, char *line, size_t ll, size_t len[9])
{
	char *f[9], *end = line + ll, *p = line, *tab;
	size_t n = 0;

	for (;;) {
		if (n == 9)
			return false; /* a tenth field */
		tab = memchr(p, '\t', (size_t)(end - p));
		f[n] = p;
		len[n++] = (size_t)((tab ? tab : end) - p);
		if (!tab)
			break;
		*tab = '\0';
		p = tab + 1;
	}
	if (n != 9 || !hex_id(f[0]) || !*f[1] || !*f[2])
		return false;
	e->id = f[0];
	e->run = f[1];
	e->node = f[2];
	e->type = f[3];
	e->date = f[5];
	e->goal = f[7];
	e->root_task = f[8];
	for (n = 0; n < AL_ARRAY_SIZE(al_episode_outcome_names); n++)
		if (!strcmp(f[4], al_episode_outcome_names[n]))
			break;
	if (n == AL_ARRAY_SIZE(al_episode_outcome_names))
		return false;
	e->outcome = (enum al_episode_outcome)n;
	e->iterations = strtol(f[6], &end, 10);
	return *f[6] && !*end && e->iterations >= 0;
}

/* What finding the terms of one entry after another keeps: the room, and the last root task's terms. */
struct terms_seen {
	size_t alloc;
	const char *root; /* the last root task, its terms at root_first */
	size_t root_first, root_n;
};

/* Entry `e`'s terms (its fields' lengths `flen`), appended to the index's. */
static void find_terms(struct al_episode_index *x, struct al_episode_entry *e,
		       const size_t flen[9], struct terms_seen *t)
{
	e->first_term = (uint32_t)x->nterms;
	ensure_terms(x, &t->alloc, flen[7] + flen[2] + flen[8] + 3);
	al_episode_terms(e->goal, flen[7], add_term, x);
	al_episode_terms(e->node, flen[2], add_term, x);
	/* a run's episodes share its task: its terms are copied, not found again */
	if (t->root && !strcmp(t->root, e->root_task)) {
		memmove(x->terms + x->nterms, x->terms + t->root_first,
			t->root_n * sizeof(*x->terms));
		x->nterms += t->root_n;
	} else {
		t->root = e->root_task;
		t->root_first = x->nterms;
		al_episode_terms(e->root_task, flen[8], add_term, x);
		t->root_n = x->nterms - t->root_first;
	}
	e->nterms = (uint32_t)(x->nterms - e->first_term);
}

struct al_episode_index *al_episode_index_parse(const char *text, size_t len, bool terms)
{
	struct al_episode_index *x = al_calloc(1, sizeof(*x));
	struct terms_seen seen = { 0 };
	size_t nalloc = 0, total = 0;
	char *p, *end;
	int lineno = 1;

	x->text = al_malloc(len + 1);
	memcpy(x->text, text, len);
	x->text[len] = '\0';
	end = x->text + len;
	p = memchr(x->text, '\n', len);
	if (p)
		*p++ = '\0';
	else
		p = end;
	/* (a NUL in the header makes it shorter: it then does not compare equal) */
	if (strcmp(x->text, AL_EPISODES_HEADER) && strcmp(x->text, AL_EPISODES_HEADER "\r")) {
		x->bad_header = true;
		return x;
	}
	for (char *next; p < end; p = next) {
		char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t ll = (size_t)((nl ? nl : end) - p), flen[9];
		struct al_episode_entry e = { .at = (size_t)(p - x->text), .len = ll };

		next = nl ? nl + 1 : end;
		lineno++;
		if (nl)
			*nl = '\0';
		if (ll && p[ll - 1] == '\r')
			p[--ll] = '\0';
		if (!ll)
			continue;
		/* a NUL inside: a damaged line */
		if (memchr(p, '\0', ll) || !parse_line(&e, p, ll, flen)) {
			if (!x->bad++)
				x->bad_line = lineno;
			continue;
		}
		if (terms) {
			find_terms(x, &e, flen, &seen);
			total += e.nterms;
		}
		AL_GROW(x->v, x->n, nalloc);
		x->v[x->n++] = e;
	}
	x->avg_len = x->n ? (double)total / (double)x->n : 0;
	return x;
}

void al_episode_index_free(struct al_episode_index *x)
{
	if (!x)
		return;
	free(x->v);
	free(x->terms);
	free(x->text);
	free(x);
}

/* ---- ranking ------------------------------------------------------------ */

/* The query's distinct terms, an open-addressing set (size a power of two). */
struct qset {
	uint32_t *term;
	int *slot;   /* index into df/tf, -1 if empty */
	size_t mask;
	size_t n;
};

static long qset_find(const struct qset *s, uint32_t t)
{
	for (size_t i = t & s->mask;; i = (i + 1) & s->mask) {
		if (s->slot[i] < 0)
			return -1;
		if (s->term[i] == t)
			return s->slot[i];
	}
}

static void qset_add(uint32_t t, void *data)
{
	struct qset *s = data;
	size_t i = t & s->mask;

	for (; s->slot[i] >= 0; i = (i + 1) & s->mask)
		if (s->term[i] == t)
			return;
	s->term[i] = t;
	s->slot[i] = (int)s->n++;
}

/* A term of the query (its index in df, idf) and how often an episode has it. */
struct term_count {
	uint32_t term, n;
};

static int hit_cmp(const void *pa, const void *pb)
{
	const struct al_episode_hit *a = pa, *b = pb;

	if (a->score != b->score)
		return a->score > b->score ? -1 : 1;
	if (a->e->outcome != b->e->outcome)
		return a->e->outcome < b->e->outcome ? -1 : 1;
	return a->e > b->e ? -1 : a->e < b->e; /* the newer (later in the index) first */
}

static void sift_down(struct al_episode_hit *h, size_t n, size_t i)
{
	for (;;) {
		size_t worst = i, l = 2 * i + 1, r = l + 1;
		struct al_episode_hit t;

		if (l < n && hit_cmp(&h[l], &h[worst]) > 0)
			worst = l;
		if (r < n && hit_cmp(&h[r], &h[worst]) > 0)
			worst = r;
		if (worst == i)
			return;
		t = h[i];
		h[i] = h[worst];
		h[worst] = t;
		i = worst;
	}
}

/*
 * Moves the best `k` of the `n` hits to the front, in no order, and
 * returns k: a heap of the best so far, its worst on top, that most hits
 * of a large index leave as it is. Sorting them all cost more than the
 * rest of a ranking; hit_cmp is a total order, so the best k are the same
 * k a sort puts first.
 */
static size_t keep_best(struct al_episode_hit *h, size_t n, size_t k)
{
	for (size_t i = k / 2; i-- > 0;)
		sift_down(h, k, i);
	for (size_t i = k; i < n; i++)
		if (hit_cmp(&h[i], &h[0]) < 0) {
			h[0] = h[i];
			sift_down(h, k, 0);
		}
	return k;
}

void al_episode_rank(struct al_episode_hit **out, size_t *nout, const struct al_episode_index *x,
		     const struct al_episode_query *q)
{
	al_episode_rank_best(out, nout, x, q, 0);
}

void al_episode_rank_best(struct al_episode_hit **out, size_t *nout,
			  const struct al_episode_index *x, const struct al_episode_query *q,
			  size_t max)
{
	size_t qlen = q->text ? strlen(q->text) : 0, cap = 16, nhits = 0;
	struct qset s = { 0 };
	size_t *df = NULL, *tf = NULL, *touched = NULL, ntouched, *first = NULL, ncand = 0;
	size_t nfound = 0, found_alloc = 0;
	struct term_count *found = NULL; /* the query's terms of each candidate, in order */
	double *idf = NULL;
	struct al_episode_hit *hits = NULL;

	*out = NULL;
	*nout = 0;
	if (!x || !x->n || !qlen)
		return;
	while (cap < qlen) /* at most a term per two bytes: the set stays half empty */
		cap *= 2;
	s.term = al_calloc(cap, sizeof(*s.term));
	s.slot = al_malloc(cap * sizeof(*s.slot));
	memset(s.slot, 0xff, cap * sizeof(*s.slot));
	s.mask = cap - 1;
	al_episode_terms(q->text, qlen, qset_add, &s);
	if (!s.n)
		goto done;
	df = al_calloc(s.n, sizeof(*df));
	tf = al_calloc(s.n, sizeof(*tf));
	touched = al_calloc(s.n, sizeof(*touched)); /* the query's terms an episode has */
	idf = al_calloc(s.n, sizeof(*idf));
	hits = al_malloc(x->n * sizeof(*hits));
	first = al_malloc((x->n + 1) * sizeof(*first));
	/*
	 * One pass over every term of the index: the document frequencies
	 * (over the whole index: the same scores for every asker), and the
	 * query's terms of each episode that may be given, kept with their
	 * counts to be scored once the frequencies are known.
	 */
	for (size_t d = 0; d < x->n; d++) {
		const struct al_episode_entry *e = &x->v[d];

		ntouched = 0;
		for (uint32_t k = 0; k < e->nterms; k++) {
			long j = qset_find(&s, x->terms[e->first_term + k]);

			if (j >= 0 && !tf[j]++)
				touched[ntouched++] = (size_t)j;
		}
		if (ntouched && !(q->exclude_run && !strcmp(e->run, q->exclude_run)) &&
		    (q->include_failures || e->outcome == AL_EPISODE_SUCCESS)) {
			hits[ncand].e = e;
			first[ncand++] = nfound;
			for (size_t t = 0; t < ntouched; t++) {
				AL_GROW(found, nfound, found_alloc);
				found[nfound++] = (struct term_count){ (uint32_t)touched[t],
								      (uint32_t)tf[touched[t]] };
			}
		}
		for (size_t t = 0; t < ntouched; t++) {
			df[touched[t]]++;
			tf[touched[t]] = 0; /* clean for the next episode */
		}
	}
	first[ncand] = nfound;
	for (size_t j = 0; j < s.n; j++)
		idf[j] = log(1.0 + ((double)x->n - (double)df[j] + 0.5) / ((double)df[j] + 0.5));
	for (size_t c = 0; c < ncand; c++) {
		const struct al_episode_entry *e = hits[c].e;
		double score = 0, norm;

		norm = AL_BM25_K1 * (1.0 - AL_BM25_B + AL_BM25_B * (double)e->nterms /
				     (x->avg_len > 0 ? x->avg_len : 1.0));
		for (size_t t = first[c]; t < first[c + 1]; t++) {
			double f = (double)found[t].n;

			score += idf[found[t].term] * f * (AL_BM25_K1 + 1.0) / (f + norm);
		}
		if (score > 0)
			hits[nhits++] = (struct al_episode_hit){ e, score };
	}
	if (max && nhits > max)
		nhits = keep_best(hits, nhits, max);
	qsort(hits, nhits, sizeof(*hits), hit_cmp);
	if (nhits) {
		*out = hits;
		*nout = nhits;
		hits = NULL;
	}
done:
	free(hits);
	free(df);
	free(first);
	free(found);
	free(tf);
	free(touched);
	free(idf);
	free(s.term);
	free(s.slot);
}
