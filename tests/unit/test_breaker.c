#include "ailoop/exec/breaker.h"
#include "ailoop/store/state.h"
#include "ailoop/base/util.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char *normalised(const char *text)
{
	struct al_strbuf sb = AL_STRBUF_INIT;

	al_breaker_normalise(&sb, text, strlen(text));
	return al_strbuf_detach(&sb, NULL);
}

static void expect_norm(const char *text, const char *want)
{
	char *got = normalised(text);

	cr_expect_str_eq(got, want, "normalise [%s]", text);
	free(got);
}

Test(breaker, normalise_drops_times_durations_and_addresses)
{
	expect_norm("Ran 5 tests in 0.013s", "Ran 5 tests in #s");
	expect_norm("took 1234 ms, then 2.5 seconds", "took # ms, then # seconds");
	expect_norm("at 2026-11-23T10:00:00Z: boom", "at #: boom");
	expect_norm("at 2026-11-23 10:00:01.123 boom", "at # boom");
	expect_norm("12:34:56 started", "# started");
	expect_norm("object at 0x7ffd1234abcd", "object at 0x#");
	expect_norm("commit 4a5b6c7d8e9f0a1b failed", "commit # failed");
	expect_norm("trailing   \nnext\t\n", "trailing\nnext\n");
}

Test(breaker, normalise_keeps_counts_and_words)
{
	/* a count that changes is progress, not the same error */
	expect_norm("3 failed, 2 passed", "3 failed, 2 passed");
	expect_norm("test_42 at line 17: expected 64bit", "test_42 at line 17: expected 64bit");
	expect_norm("version 1.2.3", "version 1.2.3");
	expect_norm("deadbeef is a word", "deadbeef is a word"); /* no digit: not a hash */
	expect_norm("3ms", "#ms");
	expect_norm("3 m", "# m");
	expect_norm("3 max", "3 max");
}

Test(breaker, no_progress_opens_at_exactly_the_limit)
{
	struct al_breaker b = { 0 };

	cr_expect_eq(al_breaker_count(&b, 3, 5, false, NULL), AL_BREAKER_SAME);
	cr_expect_eq(b.state, AL_BREAKER_CLOSED);
	cr_expect_eq(al_breaker_count(&b, 3, 5, false, NULL), AL_BREAKER_TO_HALF_OPEN);
	cr_expect_eq(al_breaker_count(&b, 3, 5, false, NULL), AL_BREAKER_TO_OPEN);
	cr_expect_eq(b.no_progress, 3);
	al_breaker_reset(&b);
	cr_expect_eq(b.state, AL_BREAKER_CLOSED);
	cr_expect_eq(b.no_progress, 0);
	al_breaker_release(&b);
}

Test(breaker, progress_closes_a_half_open_breaker)
{
	struct al_breaker b = { 0 };

	al_breaker_count(&b, 3, 5, false, NULL);
	cr_expect_eq(al_breaker_count(&b, 3, 5, false, NULL), AL_BREAKER_TO_HALF_OPEN);
	cr_expect_eq(al_breaker_count(&b, 3, 5, true, NULL), AL_BREAKER_TO_CLOSED);
	cr_expect_eq(b.no_progress, 0);
	/* slow, steady progress never opens it */
	for (int i = 0; i < 100; i++)
		cr_expect_eq(al_breaker_count(&b, 3, 5, i % 2 == 0, NULL) == AL_BREAKER_TO_OPEN, 0);
	al_breaker_release(&b);
}

Test(breaker, the_same_error_opens_it_and_a_different_one_starts_over)
{
	struct al_breaker b = { 0 };

	al_breaker_count(&b, 3, 3, true, "e1"); /* the first time: nothing to compare with */
	cr_expect_eq(b.same_error, 0);
	al_breaker_count(&b, 3, 3, true, "e1");
	cr_expect_eq(b.same_error, 1);
	al_breaker_count(&b, 3, 3, true, "e2");
	cr_expect_eq(b.same_error, 0);
	al_breaker_count(&b, 3, 3, true, "e2");
	cr_expect_eq(al_breaker_count(&b, 3, 3, true, "e2"), AL_BREAKER_TO_HALF_OPEN);
	cr_expect_eq(al_breaker_count(&b, 3, 3, true, "e2"), AL_BREAKER_TO_OPEN);
	al_breaker_release(&b);
}

Test(breaker, a_limit_of_zero_is_off)
{
	struct al_breaker b = { 0 };

	for (int i = 0; i < 50; i++)
		cr_expect_eq(al_breaker_count(&b, 0, 0, false, "same"), AL_BREAKER_SAME);
	cr_expect_eq(b.state, AL_BREAKER_CLOSED);
	al_breaker_release(&b);
}

Test(breaker, sensors_progress_is_a_pass_or_a_metric_that_moved)
{
	cr_expect(al_breaker_sensors_progress(NULL, "unit fail\n"));
	cr_expect_not(al_breaker_sensors_progress("unit fail\n", "unit fail\n"));
	cr_expect(al_breaker_sensors_progress("unit fail\n", "unit pass\n"));
	cr_expect_not(al_breaker_sensors_progress("unit pass\n", "unit fail\n"));
	cr_expect(al_breaker_sensors_progress("unit fail failed=3\n", "unit fail failed=2\n"));
	cr_expect_not(al_breaker_sensors_progress("unit fail failed=3\nlint pass\n",
						  "unit fail failed=3\nlint pass\n"));
	/* a metric that only appears is no move; a stub (pending) to fail is none either */
	cr_expect_not(al_breaker_sensors_progress("unit pending\n", "unit fail failed=3\n"));
	cr_expect(al_breaker_sensors_progress("unit pending\n", "unit pass\n"));
	cr_expect(al_breaker_sensors_progress("a fail x=1\nb fail y=1\n", "a fail x=1\nb fail y=2\n"));
}

Test(breaker, its_state_survives_a_write_and_a_read)
{
	char dir[] = "/tmp/ailoop-breaker-XXXXXX", *path;
	struct al_node_state st = { 0 }, back;

	cr_assert_not_null(mkdtemp(dir));
	path = al_xprintf("%s/orchestrator-output.md", dir);
	st.run_id = al_strdup("run_20261123_001");
	st.node_id = al_strdup("fix");
	st.node_path = al_strdup("fix");
	st.label = al_strdup("4");
	st.status = al_strdup("blocked");
	st.iteration = 4;
	st.breaker.state = AL_BREAKER_OPEN;
	st.breaker.no_progress = 3;
	st.breaker.same_error = 1;
	st.breaker.tree = al_strdup("abc");
	st.breaker.sensors = al_strdup("unit fail failed=3\nlint pass\n");
	st.breaker.error = al_strdup("e1");
	st.breaker.reason = al_strdup("no progress in 3 iterations (1 to 3)");
	st.gate_note = al_strdup("the exit gate refused");
	cr_assert_eq(al_node_state_write(&st, path, "task"), 0);
	cr_assert_eq(al_node_state_read(&back, path), 0);
	cr_expect_eq(back.breaker.state, AL_BREAKER_OPEN);
	cr_expect_eq(back.breaker.no_progress, 3);
	cr_expect_eq(back.breaker.same_error, 1);
	cr_expect_str_eq(back.breaker.tree, "abc");
	cr_expect_str_eq(back.breaker.sensors, "unit fail failed=3\nlint pass\n");
	cr_expect_str_eq(back.breaker.error, "e1");
	cr_expect_str_eq(back.breaker.reason, "no progress in 3 iterations (1 to 3)");
	cr_expect_str_eq(back.gate_note, "the exit gate refused");
	/* blocked is not an end: the node goes on when the run is resumed */
	cr_expect_not(al_node_state_final(&back));
	al_node_state_release(&back);
	al_node_state_release(&st);
	unlink(path);
	rmdir(dir);
	free(path);
}
