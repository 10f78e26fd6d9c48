#include "ailoop/store/run_view.h"
#include "unit.h"

/*
 * The figures status and report share, from events.jsonl: a file anyone
 * may edit, and one a crash may leave cut short.
 */
#define USAGE(ts, node, usd, kind) \
	"{\"ts\":\"" ts "\",\"event\":\"agent_usage\",\"node\":\"" node "\",\"label\":\"1\"," \
	"\"input\":1000,\"output\":100,\"cache_read\":10,\"cache_write\":0,\"cost_usd\":" usd \
	",\"cost\":\"" kind "\"}\n"

Test(run_view, tally_sums_each_stretch_and_each_node)
{
	struct al_run_tally t;
	struct al_run_cost c;

	unit_enter_tmpdir();
	unit_write("run/events.jsonl",
		   "{\"ts\":\"2026-11-21T10:00:00Z\",\"event\":\"run_start\"}\n"
		   "{\"ts\":\"2026-11-21T10:00:02Z\",\"event\":\"agent\",\"agent_call\":true}\n"
		   USAGE("2026-11-21T10:00:02Z", "outer", "0.02", "estimated")
		   "{\"ts\":\"2026-11-21T10:00:03Z\",\"event\":\"agent\",\"agent_call\":false}\n"
		   "{\"ts\":\"2026-11-21T10:00:05Z\",\"event\":\"run_paused\"}\n"
		   "{\"ts\":\"2026-11-21T10:01:05Z\",\"event\":\"run_resume\"}\n"
		   USAGE("2026-11-21T10:01:08Z", "outer/inner", "0.25", "reported")
		   USAGE("2026-11-21T10:01:09Z", "outer/inner/deep", "0", "unknown")
		   USAGE("2026-11-21T10:01:09Z", "outerwear", "1", "reported")
		   "{\"ts\":\"2026-11-21T10:01:10Z\",\"event\":\"run_end\"}\n");
	al_run_tally_read(&t, "run", false);
	cr_assert(t.events);
	cr_assert_eq(t.active_s, 5 + 5, "the two stretches at work, not the pause");
	cr_assert_eq(t.paused_s, 60);
	cr_assert_eq(t.pauses, 1);
	cr_assert_eq(t.calls_ended, 1, "a command sensor's run is no agent call");
	cr_assert_eq(t.cost.calls, 4);
	cr_assert_float_eq(t.cost.usd, 1.27, 1e-9);
	cr_assert_float_eq(t.cost.estimated_usd, 0.02, 1e-9);
	cr_assert_eq(t.cost.estimated, 1);
	cr_assert_eq(t.cost.unknown, 1);
	cr_assert_eq(t.cost.input, 4 * 1010, "cached input counts");
	cr_assert_eq(t.cost.output, 400);
	al_run_tally_subtree(&c, &t, "outer");
	cr_assert_float_eq(c.usd, 0.27, 1e-9, "its descendants' calls, not outerwear's");
	cr_assert_eq(c.calls, 3);
	al_run_tally_subtree(&c, &t, "outer/inner");
	cr_assert_eq(c.calls, 2);
	cr_assert_eq(c.unknown, 1);
	al_run_tally_release(&t);
}

Test(run_view, tally_of_a_damaged_log)
{
	struct al_run_tally t;

	unit_enter_tmpdir();
	unit_write("run/events.jsonl",
		   "{\"ts\":\"2026-11-21T10:00:10Z\",\"event\":\"run_start\"}\n"
		   /* the clock set back: no time passed, the call still counts */
		   USAGE("2026-11-21T09:00:00Z", "fix", "0.5", "reported")
		   USAGE("2026-11-21T10:00:12Z", "fix", "-3", "reported")
		   USAGE("2026-11-21T10:00:12Z", "fix", "1e300", "reported")
		   "{\"event\":\"agent_usage\",\"node\":\"fix\",\"cost_usd\":0.5}\n"
		   "{\"ts\":\"2026-11-21T10:00:14Z\",\"event\":\"agent_us");
	al_run_tally_read(&t, "run", false);
	cr_assert_eq(t.active_s, 2, "from the start to the last time read");
	cr_assert_eq(t.cost.calls, 4, "a call without a time or a kind counts; a cut line does not");
	cr_assert_float_eq(t.cost.usd, 1.0, 1e-9, "a cost no call could have counts as 0");
	cr_assert_eq(t.cost.unknown, 1, "a call without a kind is of unknown cost");
	al_run_tally_release(&t);

	al_run_tally_read(&t, "nowhere", true);
	cr_assert(!t.events);
	cr_assert_eq(t.active_s, 0);
	al_run_tally_release(&t);
}
