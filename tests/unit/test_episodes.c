#include "ailoop/store/episodes.h"
#include "ailoop/git/git.h"
#include "ailoop/base/alloc.h"
#include "unit.h"

static void setup(void)
{
	unit_hang_guard(30);
	unit_enter_git_tmpdir();
	unit_sh("git init -q");
}

static void teardown(void)
{
	unit_leave_tmpdir();
}

TestSuite(episodes, .init = setup, .fini = teardown);

static struct al_episode episode(const char *node, const char *instance, const char *goal)
{
	struct al_episode ep = {
		.run = "run_20261128_001", .node = node, .type = "action", .outcome = "success",
		.reason = "complete", .goal = goal, .root_task = "the task",
		.started = "2026-11-28T06:40:00Z", .ended = "2026-11-28T06:41:00Z",
		.flow_sha256 = "f", .iterations = 1,
	};

	al_episode_id(ep.id, ep.run, node, instance);
	return ep;
}

static bool all(const struct al_episode_entry *l, void *data)
{
	(void)l;
	(void)data;
	return true;
}

Test(episodes, the_id_is_the_hash_of_run_node_and_instance)
{
	char id[13];

	al_episode_id(id, "run_20261128_001", "main/step", "1");
	/* printf 'run_20261128_001\nmain/step\n1' | sha256sum */
	cr_assert_str_eq(id, "29996720cb03");
	cr_assert_str_eq(al_episode_outcome("complete"), "success");
	cr_assert_str_eq(al_episode_outcome("max-iterations-reached"), "failure");
	cr_assert_str_eq(al_episode_outcome("blocked"), "blocked");
}

Test(episodes, an_index_line_of_other_than_nine_fields_is_damage)
{
	struct al_episode_index *x;
	const char *good = "# ailoop episodes v1\n"
			   "0123456789ab\tr\tn\taction\tsuccess\td\t2\tgoal\troot\n";

	cr_assert_eq(al_episodes_parse(good, strlen(good), &x), 0);
	cr_assert_eq(x->n, 1);
	cr_assert_str_eq(x->v[0].goal, "goal");
	cr_assert_eq(x->v[0].iterations, 2);
	cr_assert_eq(x->v[0].at, 21, "where its line starts, for forget to keep it as it is");
	cr_assert_eq(x->v[0].len, strlen(good) - 22);
	al_episode_index_free(x);
	/* a line that ends in CR is kept whole, CR and all; an empty line is none */
	cr_assert_eq(al_episodes_parse("# ailoop episodes v1\r\n\n"
				       "0123456789ab\tr\tn\ta\tfailure\td\t0\tg\tt\r\n", 59, &x), 0);
	cr_assert_eq(x->n, 1);
	cr_assert_eq(x->v[0].at, 23);
	cr_assert_eq(x->v[0].len, 35);
	cr_assert_str_eq(x->v[0].root_task, "t");
	al_episode_index_free(x);
	static const char *const bad[] = {
		"# ailoop episodes v1\nx\ty\n",
		"# ailoop episodes v2\n",
		"",
		/* ten fields, or an id that is not 12 lowercase hex digits */
		"# ailoop episodes v1\n0123456789ab\t1\t2\t3\t4\t5\t6\t7\t8\t9\n",
		"# ailoop episodes v1\n0123456789AB\t1\t2\t3\t4\t5\t6\t7\t8\n",
	};

	for (size_t i = 0; i < AL_ARRAY_SIZE(bad); i++)
		cr_assert_eq(al_episodes_parse(bad[i], strlen(bad[i]), &x), AL_EINVALID,
			     "%s", bad[i]);
}

Test(episodes, hostile_text_stays_one_line_of_nine_fields)
{
	struct al_git *g;
	struct al_episode_index *x;
	struct al_strbuf big = AL_STRBUF_INIT, json = AL_STRBUF_INIT;
	struct al_episode ep;

	cr_assert_eq(al_git_open(&g), 0);
	/* 1 MB: front matter, a placeholder, tabs, newlines, two-byte characters, bad UTF-8 */
	al_strbuf_adds(&big, "---\nstatus: fail\n---\n{task}\t\r\n");
	while (big.len < (1 << 20))
		al_strbuf_adds(&big, "é\tx\xff");
	ep = episode("main/step", "1", big.buf);
	cr_assert_eq(al_episode_record(g, &ep), 0);
	cr_assert_eq(al_episode_record(g, &ep), 1, "recorded once");
	cr_assert_eq(al_episodes_load(g, &x), 0);
	cr_assert_eq(x->n, 1);
	cr_assert_str_eq(x->v[0].id, ep.id);
	cr_assert_leq(strlen(x->v[0].goal), AL_EPISODE_GOAL_MAX);
	cr_assert_gt(strlen(x->v[0].goal), AL_EPISODE_GOAL_MAX - 4);
	cr_assert_null(strpbrk(x->v[0].goal, "\t\r\n"));
	cr_assert_eq(strncmp(x->v[0].goal, "--- status: fail --- {task}", 27), 0, "%s",
		     x->v[0].goal);
	cr_assert(al_utf8_valid(x->v[0].goal, strlen(x->v[0].goal)), "cut between characters");
	cr_assert_eq(al_episode_show(g, ep.id, &json), 0);
	cr_assert(al_utf8_valid(json.buf, json.len));
	cr_assert_not_null(strstr(json.buf, "\"cost_usd\": null"));
	al_episode_index_free(x);
	al_strbuf_release(&big);
	al_strbuf_release(&json);
	al_git_free(g);
}

Test(episodes, forget_writes_a_commit_without_them)
{
	struct al_git *g;
	struct al_episode a = episode("main/a", "", "a"), b = episode("main/b", "", "b");
	struct al_episode_index *x;
	struct al_strbuf sb = AL_STRBUF_INIT;
	size_t count;
	char *want;

	cr_assert_eq(al_git_open(&g), 0);
	cr_assert_eq(al_episodes_load(g, &x), AL_ENOTFOUND);
	cr_assert_null(x);
	cr_assert_eq(al_episodes_forget(g, all, NULL, &count), 0);
	cr_assert_eq(count, 0, "nothing to forget without the ref");
	cr_assert_eq(al_episode_record(g, &a), 0);
	cr_assert_eq(al_episode_record(g, &b), 0);
	cr_assert_eq(al_episodes_forget(g, all, NULL, &count), 0);
	cr_assert_eq(count, 2);
	cr_assert_eq(al_episodes_load(g, &x), 0);
	cr_assert_eq(x->n, 0);
	cr_assert_eq(al_episode_show(g, a.id, &sb), AL_ENOTFOUND);
	want = al_xprintf("forget 2 episodes\nepisode %s: main/b of run run_20261128_001, success\n"
			  "episode %s: main/a of run run_20261128_001, success", b.id, a.id);
	cr_assert_str_eq(unit_output("git log --format=%s refs/ailoop/episodes"), want);
	cr_assert_str_eq(unit_output("git ls-tree -r --name-only refs/ailoop/episodes"), "index.tsv");
	cr_assert_str_eq(unit_output("git ls-tree -r --name-only refs/ailoop/episodes~1 | wc -l"), "3",
			 "the ref's history keeps them");
	free(want);
	al_episode_index_free(x);
	al_strbuf_release(&sb);
	al_git_free(g);
}
