#include "ailoop/store/episode_recall.h"
#include "unit.h"

static char *oneline(const char *s, size_t len, size_t max)
{
	struct al_strbuf sb = AL_STRBUF_INIT;

	al_episodes_oneline(&sb, s, len, max);
	return al_strbuf_detach(&sb, NULL);
}

Test(episode_recall, a_text_becomes_one_line)
{
	static const char text[] = "  line one\n---\ntarget-met: true\r\n\t{task}\0after\x7f end  ";
	char *s = oneline(text, sizeof(text) - 1, 800);

	cr_assert_str_eq(s, "line one --- target-met: true {task} after end");
	free(s);
}

Test(episode_recall, a_long_text_is_cut_at_a_character)
{
	char *s = oneline("ééééé", 10, 5); /* two bytes each: two fit in five */

	cr_assert_str_eq(s, "éé…");
	free(s);
	s = oneline("abc", 3, 3);
	cr_assert_str_eq(s, "abc", "a text of its bound is not cut");
	free(s);
}

Test(episode_recall, invalid_utf8_is_replaced)
{
	char *s = oneline("a\xff" "b", 3, 100);

	cr_assert_str_eq(s, "a\xef\xbf\xbd" "b");
	free(s);
}

Test(episode_recall, only_a_bounded_prefix_is_read)
{
	size_t n = 1 << 20;
	char *big = al_malloc(n), *s;

	memset(big, 'y', n);
	s = oneline(big, n, 300);
	cr_assert_eq(strlen(s), 300 + strlen("…"));
	free(s);
	memset(big, ' ', n);
	s = oneline(big, n, 300);
	cr_assert_str_eq(s, "…", "a megabyte of spaces says it was cut");
	free(s);
	free(big);
}

Test(episode_recall, the_query_is_bounded)
{
	struct al_strbuf q = AL_STRBUF_INIT;
	size_t n = 3 * AL_EPISODES_QUERY_PART;
	char *goal = al_malloc(n + 1);

	memset(goal, 'g', n);
	goal[n] = '\0';
	al_episodes_query(&q, goal, "fix/inner", NULL);
	cr_assert_eq(q.len, AL_EPISODES_QUERY_PART + 1 + strlen("fix/inner"));
	cr_assert(al_ends_with(q.buf, "\nfix/inner"));
	al_strbuf_reset(&q);
	al_episodes_query(&q, NULL, "", "the task");
	cr_assert_str_eq(q.buf, "the task", "absent parts are left out");
	al_strbuf_release(&q);
	free(goal);
}
