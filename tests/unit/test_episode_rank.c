#include "ailoop/model/episode_rank.h"
#include "unit.h"

#include <math.h>

#define HEADER AL_EPISODES_HEADER "\n"

static struct al_episode_index *parse(const char *text)
{
	return al_episode_index_parse(text, strlen(text), true);
}

/* id run node outcome goal root: one line of the index */
static void line(struct al_strbuf *sb, const char *id, const char *run, const char *node,
		 const char *outcome, const char *goal, const char *root)
{
	al_strbuf_addf(sb, "%s\t%s\t%s\tloop\t%s\t2026-11-20T10:00:00Z\t2\t%s\t%s\n", id, run, node,
		       outcome, goal, root);
}

static size_t rank(struct al_episode_hit **hits, const struct al_episode_index *x,
		   const char *query, const char *exclude, bool failures)
{
	struct al_episode_query q = { query, exclude, failures };
	size_t n;

	al_episode_rank(hits, &n, x, &q);
	return n;
}

Test(episode_rank, parses_the_nine_fields)
{
	struct al_episode_index *x = parse(HEADER "0123456789ab\trun_1\tfix/inner\tloop\tsuccess\t"
					   "2026-11-20T10:00:00Z\t3\tfix the parser\tship it\r\n");

	cr_assert_not(x->bad_header);
	cr_assert_eq(x->n, 1);
	cr_assert_eq(x->bad, 0);
	cr_assert_str_eq(x->v[0].id, "0123456789ab");
	cr_assert_str_eq(x->v[0].run, "run_1");
	cr_assert_str_eq(x->v[0].node, "fix/inner");
	cr_assert_str_eq(x->v[0].type, "loop");
	cr_assert_eq(x->v[0].outcome, AL_EPISODE_SUCCESS);
	cr_assert_str_eq(x->v[0].date, "2026-11-20T10:00:00Z");
	cr_assert_eq(x->v[0].iterations, 3);
	cr_assert_str_eq(x->v[0].goal, "fix the parser");
	cr_assert_str_eq(x->v[0].root_task, "ship it", "a CR at the line's end is not the field's");
	/* fix parser fix inner ship: "the" and "it" are left out */
	cr_assert_eq(x->v[0].nterms, 5);
	al_episode_index_free(x);
}

Test(episode_rank, bad_lines_are_counted_and_skipped)
{
	struct al_strbuf sb = AL_STRBUF_INIT;
	struct al_episode_index *x;

	al_strbuf_adds(&sb, HEADER);
	line(&sb, "0123456789ab", "run_1", "a", "success", "good one", "");
	al_strbuf_adds(&sb, "0123456789ab\trun_1\ta\tloop\tsuccess\t2026\t2\tonly eight\n");
	line(&sb, "0123456789AB", "run_1", "a", "success", "upper-case id", "");
	line(&sb, "0123456789a", "run_1", "a", "success", "short id", "");
	line(&sb, "0123456789ab", "run_1", "a", "won", "unknown outcome", "");
	line(&sb, "0123456789ab", "", "a", "success", "no run", "");
	al_strbuf_adds(&sb, "0123456789ab\trun_1\ta\tloop\tfailure\t2026\tmany\tbad count\t\n");
	al_strbuf_adds(&sb, "0123456789ab\trun_1\ta\tloop\tfailure\t2026\t1\tten\tfields\tx\n");
	{
		static const char nul[] = "0123456789ab\trun_1\ta\tloop\tfailure\t2026\t1\tnul\0b\t\n";

		al_strbuf_add(&sb, nul, sizeof(nul) - 1);
	}
	al_strbuf_adds(&sb, "\n");
	line(&sb, "ba9876543210", "run_2", "b", "blocked", "last one", "");
	x = al_episode_index_parse(sb.buf, sb.len, true);
	cr_assert_eq(x->n, 2, "the two good lines: %zu", x->n);
	cr_assert_str_eq(x->v[1].goal, "last one");
	cr_assert_eq(x->v[1].outcome, AL_EPISODE_BLOCKED);
	cr_assert_eq(x->bad, 8, "%zu", x->bad);
	cr_assert_eq(x->bad_line, 3, "the first bad line, counting the header");
	al_episode_index_free(x);
	al_strbuf_release(&sb);
}

Test(episode_rank, a_wrong_header_reads_nothing)
{
	struct al_episode_index *x = parse("# ailoop episodes v2\n0123456789ab\tr\tn\tloop\t"
					   "success\td\t1\tg\t\n");
	struct al_episode_hit *hits;

	cr_assert(x->bad_header);
	cr_assert_eq(x->n, 0);
	cr_assert_eq(rank(&hits, x, "g", NULL, true), 0);
	cr_assert_null(hits);
	al_episode_index_free(x);
	x = al_episode_index_parse("", 0, true);
	cr_assert(x->bad_header, "an empty blob is no index");
	al_episode_index_free(x);
}

Test(episode_rank, bm25_score)
{
	struct al_strbuf sb = AL_STRBUF_INIT;
	struct al_episode_index *x;
	struct al_episode_hit *hits;
	/* alpha is in one of two episodes; the first has 3 terms, the average is 2.5 */
	double idf = log(1.0 + (2 - 1 + 0.5) / (1 + 0.5));
	double want = idf * 1 * (1.2 + 1) / (1 + 1.2 * (1 - 0.75 + 0.75 * 3 / 2.5));

	al_strbuf_adds(&sb, HEADER);
	line(&sb, "00000000000a", "run_1", "zz", "success", "alpha beta", "");
	line(&sb, "00000000000b", "run_1", "zz", "success", "gamma", "");
	x = al_episode_index_parse(sb.buf, sb.len, true);
	cr_assert_float_eq(x->avg_len, 2.5, 1e-12);
	cr_assert_eq(rank(&hits, x, "Alpha, and THE alpha!", NULL, true), 1,
		     "an episode without a term of the query scores 0 and is not given");
	cr_assert_str_eq(hits[0].e->id, "00000000000a");
	cr_assert_float_eq(hits[0].score, want, 1e-12, "%.12f, not %.12f", hits[0].score, want);
	free(hits);
	cr_assert_eq(rank(&hits, x, "the and of", NULL, true), 0, "stop words alone match nothing");
	cr_assert_eq(rank(&hits, x, "", NULL, true), 0);
	cr_assert_eq(rank(&hits, x, "a b c", NULL, true), 0, "one-letter words are no terms");
	al_episode_index_free(x);
	al_strbuf_release(&sb);
}

Test(episode_rank, rarer_and_shorter_rank_higher)
{
	struct al_strbuf sb = AL_STRBUF_INIT;
	struct al_episode_index *x;
	struct al_episode_hit *hits;

	al_strbuf_adds(&sb, HEADER);
	line(&sb, "00000000000a", "run_1", "fix", "success", "parser tests fail on empty input", "");
	line(&sb, "00000000000b", "run_1", "fix", "success", "parser tests fail", "");
	line(&sb, "00000000000c", "run_1", "docs", "success", "write the user guide", "");
	line(&sb, "00000000000d", "run_1", "fix", "success",
	     "parser parser tests fail on empty input and on long input with many words", "");
	x = al_episode_index_parse(sb.buf, sb.len, true);
	cr_assert_eq(rank(&hits, x, "fix the parser tests", NULL, true), 3);
	cr_assert_str_eq(hits[0].e->id, "00000000000b", "the shortest of equal matches first");
	cr_assert_str_eq(hits[1].e->id, "00000000000a");
	cr_assert_str_eq(hits[2].e->id, "00000000000d");
	cr_assert_gt(hits[0].score, hits[1].score);
	free(hits);
	al_episode_index_free(x);
	al_strbuf_release(&sb);
}

Test(episode_rank, successes_first_then_the_newest)
{
	struct al_strbuf sb = AL_STRBUF_INIT;
	struct al_episode_index *x;
	struct al_episode_hit *hits;

	al_strbuf_adds(&sb, HEADER);
	line(&sb, "00000000000a", "run_1", "fix", "failure", "parser", "");
	line(&sb, "00000000000b", "run_2", "fix", "success", "parser", "");
	line(&sb, "00000000000c", "run_3", "fix", "blocked", "parser", "");
	line(&sb, "00000000000d", "run_4", "fix", "success", "parser", "");
	line(&sb, "00000000000e", "run_5", "fix", "failure", "parser", "");
	x = al_episode_index_parse(sb.buf, sb.len, true);
	cr_assert_eq(rank(&hits, x, "parser", NULL, true), 5);
	cr_assert_str_eq(hits[0].e->id, "00000000000d", "the newer success");
	cr_assert_str_eq(hits[1].e->id, "00000000000b");
	cr_assert_str_eq(hits[2].e->id, "00000000000e", "then failures, the newer first");
	cr_assert_str_eq(hits[3].e->id, "00000000000a");
	cr_assert_str_eq(hits[4].e->id, "00000000000c", "blocked last");
	free(hits);
	cr_assert_eq(rank(&hits, x, "parser", NULL, false), 2, "include_failures false: successes only");
	cr_assert_eq(hits[0].e->outcome, AL_EPISODE_SUCCESS);
	cr_assert_eq(hits[1].e->outcome, AL_EPISODE_SUCCESS);
	free(hits);
	cr_assert_eq(rank(&hits, x, "parser", "run_4", true), 4, "never the asking run's own");
	cr_assert_str_eq(hits[0].e->id, "00000000000b");
	free(hits);
	al_episode_index_free(x);
	al_strbuf_release(&sb);
}

Test(episode_rank, terms_of_text_beyond_ascii)
{
	struct al_strbuf sb = AL_STRBUF_INIT;
	struct al_episode_index *x;
	struct al_episode_hit *hits;

	al_strbuf_adds(&sb, HEADER);
	line(&sb, "00000000000a", "run_1", "n1", "success", "réparer l'analyseur", "");
	line(&sb, "00000000000b", "run_1", "n2", "success", "reparer", "");
	x = al_episode_index_parse(sb.buf, sb.len, true);
	cr_assert_eq(rank(&hits, x, "RÉPARER", NULL, true), 0, "only ASCII letters are lowercased");
	cr_assert_eq(rank(&hits, x, "réparer", NULL, true), 1);
	cr_assert_str_eq(hits[0].e->id, "00000000000a");
	free(hits);
	cr_assert_eq(rank(&hits, x, "node n2", NULL, true), 1, "the node path is searched too");
	cr_assert_str_eq(hits[0].e->id, "00000000000b");
	free(hits);
	al_episode_index_free(x);
	al_strbuf_release(&sb);
}

Test(episode_rank, the_best_few_are_the_ranking_s_first)
{
	struct al_strbuf sb = AL_STRBUF_INIT;
	static const char *const words[] = { "parser", "lexer", "cache", "tests", "http" };
	struct al_episode_index *x;
	struct al_episode_hit *all, *best;
	size_t n, k;
	struct al_episode_query q = { "parser lexer cache tests", NULL, true };

	al_strbuf_adds(&sb, HEADER);
	/* ties of score among outcomes and ages, every 7th one a failure */
	for (int i = 0; i < 300; i++) {
		char id[13], run[16], goal[64];

		snprintf(id, sizeof(id), "%012x", i);
		snprintf(run, sizeof(run), "run_%d", i);
		snprintf(goal, sizeof(goal), "%s %s %s", words[i % 5], words[(i * 3) % 5],
			 words[(i / 7) % 5]);
		line(&sb, id, run, "fix", i % 7 ? "success" : "failure", goal, "ship");
	}
	x = al_episode_index_parse(sb.buf, sb.len, true);
	al_episode_rank(&all, &n, x, &q);
	cr_assert_gt(n, 200);
	for (k = 1; k <= n + 1; k += k < 20 ? 1 : 37) {
		size_t m;

		al_episode_rank_best(&best, &m, x, &q, k);
		cr_assert_eq(m, k < n ? k : n);
		for (size_t i = 0; i < m; i++)
			cr_assert_eq(best[i].e, all[i].e, "hit %zu of the best %zu", i, k);
		free(best);
	}
	al_episode_rank_best(&best, &k, x, &q, 0);
	cr_assert_eq(k, n, "0: every one");
	free(best);
	free(all);
	al_episode_index_free(x);
	al_strbuf_release(&sb);
}

Test(episode_rank, stop_words_in_any_case_and_words_like_them)
{
	struct al_episode_index *x = parse(HEADER "0123456789ab\trun_1\tfix\tloop\tsuccess\t"
					   "2026-11-20T10:00:00Z\t3\tThe FROM With thee fro wit\t\n");

	/* fix thee fro wit: The, FROM and With are stop words, the others not */
	cr_assert_eq(x->v[0].nterms, 4);
	al_episode_index_free(x);
}
