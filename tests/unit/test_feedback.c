#include "ailoop/exec/feedback.h"
#include "ailoop/model/flow.h"
#include "ailoop/model/md.h"
#include "ailoop/base/util.h"

#include "unit.h"

#include <criterion/criterion.h>
#include <string.h>

/*
 * FEEDBACK edges: the `feedback:` map of an output read and checked, its
 * route through the flow, feedback.jsonl read back, and what may be queued.
 */
static struct al_diags diags = AL_DIAGS_INIT;
static struct al_flow *flow;
static struct al_md md = AL_MD_INIT;

static void setup(void)
{
	unit_enter_tmpdir();
	unit_write(".ai-loop/agents/action.md", "Do the task.\n");
	unit_write(".ai-loop/flow.yaml",
		   "version: 1\n"
		   "flow:\n"
		   "  id: s\n"
		   "  type: sequence\n"
		   "  children:\n"
		   "    - {id: a, skill: a}\n"
		   "    - id: t\n"
		   "      type: sequence\n"
		   "      children:\n"
		   "        - {id: c, skill: c, feedback_enabled: true}\n"
		   "        - {id: d, skill: d, feedback_enabled: true}\n"
		   "    - id: p\n"
		   "      type: parallel\n"
		   "      children:\n"
		   "        - {id: e, skill: e, feedback_enabled: true}\n"
		   "    - id: f\n"
		   "      type: fallback\n"
		   "      children:\n"
		   "        - {id: g, skill: g, feedback_enabled: true}\n");
	cr_assert_eq(al_flow_load(&flow, ".ai-loop/flow.yaml", &diags), 0, "%s",
		     unit_diags_text(&diags));
}

static void teardown(void)
{
	al_md_release(&md);
	al_flow_free(flow);
	flow = NULL;
	al_diags_release(&diags);
	unit_leave_tmpdir();
}

TestSuite(feedback, .init = setup, .fini = teardown);

/* Parses the front matter `fm` of out.md; returns what al_feedback_parse returned. */
static int parse(const char *fm, json_t **fb)
{
	char *text = al_xprintf("---\n%s---\nbody\n", fm);

	al_md_release(&md);
	cr_assert_eq(al_md_parse(&md, "out.md", text, strlen(text)), 0, "%s", al_errmsg());
	return al_feedback_parse(al_md_get(&md, "feedback"), "out.md", fb);
}

static const char *s(const json_t *f, const char *key)
{
	return json_string_value(json_object_get(f, key));
}

Test(feedback, parses_every_field)
{
	json_t *fb;

	cr_assert_eq(parse("feedback:\n  to: a\n  type: FIX_REQUEST\n  message: m\n"
			   "  suggested_fix: x\n  priority: critical\n", &fb), 0, "%s", al_errmsg());
	cr_assert_str_eq(s(fb, "to"), "a");
	cr_assert_str_eq(s(fb, "type"), "FIX_REQUEST");
	cr_assert_str_eq(s(fb, "message"), "m");
	cr_assert_str_eq(s(fb, "suggested_fix"), "x");
	cr_assert_str_eq(s(fb, "priority"), "critical");
	cr_assert_str_eq(s(fb, "output"), "out.md");
	json_decref(fb);
}

Test(feedback, priority_defaults_to_medium)
{
	json_t *fb;

	cr_assert_eq(parse("feedback: {to: a, type: CONTEXT_REQUEST, message: m}\n", &fb), 0);
	cr_assert_str_eq(s(fb, "priority"), "medium");
	cr_assert_null(json_object_get(fb, "suggested_fix"));
	json_decref(fb);
}

Test(feedback, every_type_is_accepted)
{
	for (size_t i = 0; i < AL_ARRAY_SIZE(al_feedback_types); i++) {
		char *fm = al_xprintf("feedback: {to: a, type: %s, message: m}\n",
				      al_feedback_types[i]);
		json_t *fb;

		cr_assert_eq(parse(fm, &fb), 0, "%s", al_feedback_types[i]);
		json_decref(fb);
		free(fm);
	}
}

Test(feedback, malformed_feedback_is_reported_at_its_place)
{
	static const struct {
		const char *fm;
		const char *msg;
	} cases[] = {
		{ "feedback: [a]\n", "out.md:2:11: feedback: expected a mapping" },
		{ "feedback: x\n", "out.md:2:11: feedback: expected a mapping" },
		{ "feedback: {type: FIX_REQUEST, message: m}\n", "out.md:2:11: feedback: 'to' is missing" },
		{ "feedback: {to: a, message: m}\n", "'type' is missing" },
		{ "feedback: {to: a, type: FIX_REQUEST}\n", "'message' is missing" },
		{ "feedback: {to: a, type: FIX_REQUEST, message: ~}\n", "'message' is missing" },
		{ "feedback: {to: [a], type: FIX_REQUEST, message: m}\n",
		  "out.md:2:16: feedback: expected a string, got a list" },
		{ "feedback: {to: a, type: fix_request, message: m}\n",
		  "out.md:2:25: feedback: unknown type 'fix_request'" },
		{ "feedback: {to: a, type: FIX_REQUEST, message: m, priority: now}\n",
		  "unknown priority 'now'" },
		{ "feedback: {to: a, type: FIX_REQUEST, message: m, suggested_fix: {a: 1}}\n",
		  "expected a string, got a mapping" },
	};

	for (size_t i = 0; i < AL_ARRAY_SIZE(cases); i++) {
		json_t *fb = NULL;

		cr_assert_eq(parse(cases[i].fm, &fb), AL_EINVALID, "%s", cases[i].fm);
		cr_assert_null(fb);
		cr_assert(strstr(al_errmsg(), cases[i].msg), "%s: got [%s], expected [%s]",
			  cases[i].fm, al_errmsg(), cases[i].msg);
	}
}

/* Routes feedback from node `from` to `to`: what al_feedback_route returned, and the record. */
static int route(const char *from, const char *to, json_t **fb)
{
	*fb = json_pack("{s:s, s:s}", "to", to, "output", "out.md");
	return al_feedback_route(flow, al_flow_find(flow, from), *fb);
}

Test(feedback, routes_to_an_earlier_sibling_of_an_ancestor)
{
	json_t *fb;

	cr_assert_eq(route("s/t/d", "a", &fb), 0, "%s", al_errmsg());
	cr_assert_str_eq(s(fb, "to"), "s/a");
	cr_assert_str_eq(s(fb, "from"), "s/t/d");
	cr_assert_str_eq(s(fb, "handler"), "s");
	cr_assert_eq(json_integer_value(json_object_get(fb, "restart")), 0);
	cr_assert_eq(json_integer_value(json_object_get(fb, "upto")), 1);
	json_decref(fb);
}

Test(feedback, routes_to_an_earlier_sibling_by_path)
{
	json_t *fb;

	cr_assert_eq(route("s/t/d", "s/t/c", &fb), 0, "%s", al_errmsg());
	cr_assert_str_eq(s(fb, "handler"), "s/t");
	cr_assert_eq(json_integer_value(json_object_get(fb, "restart")), 0);
	cr_assert_eq(json_integer_value(json_object_get(fb, "upto")), 1);
	json_decref(fb);
}

Test(feedback, routes_to_an_ancestor)
{
	json_t *fb;

	cr_assert_eq(route("s/t/d", "s", &fb), 0, "%s", al_errmsg());
	cr_assert_str_eq(s(fb, "handler"), "s");
	cr_assert_eq(json_integer_value(json_object_get(fb, "restart")), 0);
	cr_assert_eq(json_integer_value(json_object_get(fb, "upto")), 1);
	json_decref(fb);
	cr_assert_eq(route("s/f/g", "f", &fb), 0, "%s", al_errmsg());
	cr_assert_str_eq(s(fb, "handler"), "s/f");
	json_decref(fb);
	/* through a fallback to an earlier sibling of it */
	cr_assert_eq(route("s/f/g", "t", &fb), 0, "%s", al_errmsg());
	cr_assert_str_eq(s(fb, "handler"), "s");
	cr_assert_eq(json_integer_value(json_object_get(fb, "restart")), 1);
	cr_assert_eq(json_integer_value(json_object_get(fb, "upto")), 3);
	json_decref(fb);
}

Test(feedback, refuses_what_it_cannot_route)
{
	static const struct {
		const char *from, *to, *msg;
	} cases[] = {
		{ "s/t/c", "nowhere", "out.md: feedback to 'nowhere': no such node in the flow" },
		{ "s/t/c", "c", "a node cannot send feedback to itself" },
		{ "s/t/c", "d", "feedback to 'd': it is neither an ancestor of 's/t/c' nor an "
				"earlier sibling in a sequence" },
		{ "s/p/e", "a", "it would cross parallel node 's/p', which feedback does not pass" },
		{ "s/p/e", "p", "a parallel node cannot be run again for feedback" },
		{ "s/t/c", "s/p/e", "neither an ancestor of 's/t/c' nor an earlier sibling" },
	};

	for (size_t i = 0; i < AL_ARRAY_SIZE(cases); i++) {
		json_t *fb;

		cr_assert_eq(route(cases[i].from, cases[i].to, &fb), AL_EINVALID, "%s -> %s",
			     cases[i].from, cases[i].to);
		cr_assert(strstr(al_errmsg(), cases[i].msg), "got [%s], expected [%s]",
			  al_errmsg(), cases[i].msg);
		json_decref(fb);
	}
}

Test(feedback, the_log_keeps_the_last_state_of_each_id)
{
	static const char text[] =
		"{\"id\":\"fb-1\",\"status\":\"queued\",\"from\":\"s/b\",\"to\":\"s/a\",\"round\":1}\n"
		"{\"id\":\"fb-2\",\"status\":\"queued\",\"from\":\"s/c\",\"to\":\"s/a\",\"round\":1}\n"
		"{\"id\":\"fb-1\",\"status\":\"resolved\",\"from\":\"s/b\",\"to\":\"s/a\",\"round\":1}\n"
		"{\"id\":\"fb-2\",\"status\":\"deliv"; /* cut short by a kill */
	struct al_feedback_log log;

	cr_assert_eq(al_feedback_log_parse(&log, text, strlen(text)), 0);
	cr_assert_eq(log.n, 2);
	cr_assert_str_eq(s(log.items[0], "status"), "resolved");
	cr_assert_not(al_feedback_is_open(log.items[0]));
	cr_assert_str_eq(s(log.items[1], "status"), "queued");
	cr_assert(al_feedback_is_open(log.items[1]));
	al_feedback_log_release(&log);
}

Test(feedback, a_missing_log_is_empty)
{
	struct al_feedback_log log;

	cr_assert_eq(al_feedback_log_read(&log, "no-such-run"), 0);
	cr_assert_eq(log.n, 0);
	al_feedback_log_release(&log);
}

/* Whether feedback from→to may join the log `text`; its depth in *depth. */
static int admit(const char *text, const char *from, const char *to, int *depth)
{
	struct al_feedback_log log;
	json_t *fb = json_pack("{s:s, s:s}", "from", from, "to", to);
	int rc;

	cr_assert_eq(al_feedback_log_parse(&log, text, strlen(text)), 0);
	rc = al_feedback_admit(&log, fb);
	*depth = (int)json_integer_value(json_object_get(fb, "depth"));
	json_decref(fb);
	al_feedback_log_release(&log);
	return rc;
}

#define REC(id, status, from, to, round)                                                  \
	"{\"id\":\"" id "\",\"status\":\"" status "\",\"from\":\"" from "\",\"to\":\"" to      \
	"\",\"round\":" #round "}\n"

Test(feedback, depth_counts_the_open_chain)
{
	int depth;

	cr_assert_eq(admit("", "s/e", "s/d", &depth), 0);
	cr_assert_eq(depth, 1);
	cr_assert_eq(admit(REC("fb-1", "processing", "s/e", "s/d", 1)
			   REC("fb-2", "resolved", "s/x", "s/y", 1), "s/d", "s/c", &depth), 0);
	cr_assert_eq(depth, 2);
	cr_assert_eq(admit(REC("fb-1", "processing", "s/e", "s/d", 1)
			   REC("fb-2", "processing", "s/d", "s/c", 1), "s/c", "s/b", &depth), 0);
	cr_assert_eq(depth, 3);
}

Test(feedback, a_chain_deeper_than_three_is_refused)
{
	int depth;

	cr_assert_eq(admit(REC("fb-1", "processing", "s/e", "s/d", 1)
			   REC("fb-2", "processing", "s/d", "s/c", 1)
			   REC("fb-3", "processing", "s/c", "s/b", 1), "s/b", "s/a", &depth),
		     AL_EINVALID);
	cr_assert(strstr(al_errmsg(), "refused: a chain of 4 feedback, deeper than 3"), "%s",
		  al_errmsg());
}

Test(feedback, a_cycle_is_refused)
{
	int depth;

	cr_assert_eq(admit(REC("fb-1", "verifying", "s/t/d", "s/a", 1), "s/t/c", "s/a", &depth),
		     AL_EINVALID);
	cr_assert(strstr(al_errmsg(), "feedback from 's/t/c' to 's/a' refused: a cycle ('s/a' "
				      "is already in open feedback fb-1 from 's/t/d' to 's/a')"),
		  "%s", al_errmsg());
	cr_assert_eq(admit(REC("fb-1", "processing", "s/c", "s/b", 1), "s/b", "s/c", &depth),
		     AL_EINVALID);
	cr_assert(strstr(al_errmsg(), "a cycle"), "%s", al_errmsg());
}

Test(feedback, a_pair_has_two_rounds)
{
	int depth;

	cr_assert_eq(admit(REC("fb-1", "resolved", "s/b", "s/a", 1), "s/b", "s/a", &depth), 0);
	cr_assert_eq(admit(REC("fb-1", "failed", "s/b", "s/a", 2), "s/b", "s/a", &depth),
		     AL_EINVALID);
	cr_assert(strstr(al_errmsg(), "the pair has had its 2 rounds"), "%s", al_errmsg());
	cr_assert_eq(admit(REC("fb-1", "failed", "s/b", "s/a", 2), "s/c", "s/a", &depth), 0);
}
