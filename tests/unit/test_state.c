#include "ailoop/store/state.h"
#include "unit.h"

#include <regex.h>

static void setup(void)
{
	unit_enter_tmpdir();
}

static void teardown(void)
{
	unit_leave_tmpdir();
}

TestSuite(state, .init = setup, .fini = teardown);

static const char *file_text(const char *path)
{
	static struct al_strbuf sb = AL_STRBUF_INIT;

	al_strbuf_reset(&sb);
	cr_assert_eq(al_strbuf_read_file(&sb, path, 0), 0);
	return sb.buf;
}

/* The file at `path` with its line starting with `prefix` removed or replaced. */
static void edit_line(const char *path, const char *prefix, const char *replacement)
{
	struct al_strbuf out = AL_STRBUF_INIT;
	const char *p = file_text(path);
	bool found = false;

	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) + 1 : strlen(p);

		if (!found && !strncmp(p, prefix, strlen(prefix))) {
			found = true;
			if (replacement)
				al_strbuf_addf(&out, "%s\n", replacement);
		} else {
			al_strbuf_add(&out, p, len);
		}
		p += len;
	}
	cr_assert(found, "no line '%s' in %s", prefix, path);
	unit_write(path, out.buf);
	al_strbuf_release(&out);
}

/* --- node state --------------------------------------------------------- */

static const char task[] = "Build it \"right\": don't `rm -rf` $(anything)\n\n## Action Plan\n"
			   "---\nkeep: this\n";

static struct al_node_state sample_node(void)
{
	struct al_node_state st = {
		.run_id = "run_20261121_001",
		.node_id = "implement",
		.node_path = "delivery/implement",
		.parent_path = "delivery",
		.level = 1,
		.iteration = 3,
		.label = "2.10", /* not the number 2.1 */
		.phase = AL_PHASE_ACTUATE,
		.status = "running",
		.child_entry = true,
		.max_iterations = 7,
		.summary = "said \"done\"\nthen: 'left'",
		.target_met = true,
		.elapsed_ms = 123456789012LL,
		.started_at = "2026-11-21T10:00:00Z",
		.initial_sensors = "unit: fail (3 failed), lint: pass",
	};

	return st;
}

Test(state, node_state_round_trips_every_field)
{
	struct al_node_state in = sample_node(), out;
	const char *text;
	char *body;

	cr_assert_eq(al_node_state_write(&in, "orchestrator-output.md", task), 0, "%s",
		     al_errmsg());
	cr_assert_eq(al_node_state_read(&out, "orchestrator-output.md"), 0, "%s", al_errmsg());
	cr_assert_str_eq(out.run_id, in.run_id);
	cr_assert_str_eq(out.node_id, in.node_id);
	cr_assert_str_eq(out.node_path, in.node_path);
	cr_assert_str_eq(out.parent_path, in.parent_path);
	cr_assert_eq(out.level, in.level);
	cr_assert_eq(out.iteration, in.iteration);
	cr_assert_str_eq(out.label, in.label);
	cr_assert_eq(out.phase, in.phase);
	cr_assert_str_eq(out.status, in.status);
	cr_assert_eq(out.child_entry, in.child_entry);
	cr_assert_eq(out.max_iterations, in.max_iterations);
	cr_assert_str_eq(out.summary, in.summary);
	cr_assert_eq(out.target_met, in.target_met);
	cr_assert_eq(out.elapsed_ms, in.elapsed_ms);
	cr_assert_str_eq(out.started_at, in.started_at);
	cr_assert_str_eq(out.initial_sensors, in.initial_sensors);
	cr_assert_not(al_node_state_final(&out));
	al_node_state_release(&out);
	cr_assert_null(out.run_id, "release resets");
	al_node_state_release(&out);

	/* the task is the body, verbatim, for people */
	text = file_text("orchestrator-output.md");
	body = al_xprintf("---\n\n# Task (setpoint)\n\n%s\n", task);
	cr_assert(al_ends_with(text, body), "%s", text);
	cr_assert_not_null(strstr(text, "\nphase: actuate\n"), "%s", text);
	free(body);
}

Test(state, node_state_keeps_the_phase_whose_agent_failed)
{
	struct al_node_state in = sample_node(), out;

	cr_assert_eq(al_node_state_write(&in, "orchestrator-output.md", task), 0);
	cr_assert_eq(al_node_state_read(&out, "orchestrator-output.md"), 0);
	cr_assert_not(out.failed, "no failure unless one is written");
	cr_assert_null(strstr(file_text("orchestrator-output.md"), "failed-phase"));
	al_node_state_release(&out);
	in.failed = true;
	in.failed_phase = AL_PHASE_CONTROLLER;
	cr_assert_eq(al_node_state_write(&in, "orchestrator-output.md", task), 0);
	cr_assert_eq(al_node_state_read(&out, "orchestrator-output.md"), 0);
	cr_assert(out.failed);
	cr_assert_eq(out.failed_phase, AL_PHASE_CONTROLLER);
	al_node_state_release(&out);
}

Test(state, node_state_keeps_what_a_session_counted_with_the_session)
{
	struct al_node_state in = sample_node(), out;

	al_node_state_set_session(&in, "actuator", "s1");
	al_node_state_set_session(&in, "controller", "s2");
	al_node_state_set_session_totals(&in, "actuator", "10 2 3 0 1");
	al_node_state_set_session_totals(&in, "sensor-x", "1 1 1 1 1"); /* no session: none */
	cr_assert_null(al_node_state_session_totals(&in, "sensor-x"));
	cr_assert_eq(al_node_state_write(&in, "orchestrator-output.md", task), 0, "%s", al_errmsg());
	cr_assert_eq(al_node_state_read(&out, "orchestrator-output.md"), 0, "%s", al_errmsg());
	cr_assert_str_eq(al_node_state_session(&out, "actuator"), "s1");
	cr_assert_str_eq(al_node_state_session_totals(&out, "actuator"), "10 2 3 0 1");
	cr_assert_null(al_node_state_session_totals(&out, "controller"));
	/* the same session goes on with its count; another starts without one */
	al_node_state_set_session(&out, "actuator", "s1");
	cr_assert_str_eq(al_node_state_session_totals(&out, "actuator"), "10 2 3 0 1");
	al_node_state_set_session(&out, "actuator", "s3");
	cr_assert_null(al_node_state_session_totals(&out, "actuator"));
	al_node_state_release(&out);
	/* the controller's session alone: no session-totals: map */
	al_node_state_set_session(&in, "actuator", NULL);
	cr_assert_eq(al_node_state_write(&in, "orchestrator-output.md", task), 0);
	cr_assert_null(strstr(file_text("orchestrator-output.md"), "session-totals"));
	{
		struct al_node_state spare = { 0 }; /* in's strings are not its own */

		al_node_state_move_sessions(&spare, &in);
		al_node_state_release(&spare);
	}
}

Test(state, node_state_every_phase_and_the_defaults)
{
	for (int ph = 0; ph < 4; ph++) {
		struct al_node_state in = {
			.run_id = "r", .node_id = "root", .node_path = "root",
			.label = "0", .phase = (enum al_phase)ph, .status = "complete",
		}, out;

		cr_assert_eq(al_node_state_write(&in, "o.md", NULL), 0, "%s", al_errmsg());
		cr_assert_eq(al_node_state_read(&out, "o.md"), 0, "%s", al_errmsg());
		cr_assert_eq(out.phase, (enum al_phase)ph, "phase %s", al_phase_names[ph]);
		cr_assert_str_eq(out.parent_path, "root", "the root's parent is 'root'");
		cr_assert_eq(out.iteration, 0);
		cr_assert_eq(out.level, 0);
		cr_assert_not(out.child_entry);
		cr_assert_not(out.target_met);
		cr_assert_null(out.summary);
		cr_assert_null(out.started_at);
		cr_assert_null(out.initial_sensors);
		cr_assert(al_node_state_final(&out), "complete is final");
		al_node_state_release(&out);
	}
	cr_assert_str_eq(al_phase_names[AL_PHASE_MEASURE], "measure");
	cr_assert_str_eq(al_phase_names[AL_PHASE_COMMIT], "commit");
	cr_assert_str_eq(al_phase_names[AL_PHASE_CONTROLLER], "controller");
	cr_assert_str_eq(al_phase_names[AL_PHASE_ACTUATE], "actuate");
}

Test(state, node_state_missing_file_is_not_found)
{
	struct al_node_state st;

	cr_assert_eq(al_node_state_read(&st, "nodes/x/orchestrator-output.md"), AL_ENOTFOUND);
	cr_assert_null(st.run_id);
}

/* Writes the sample, applies one edit, and expects it to be damaged. */
static void expect_damaged(const char *prefix, const char *replacement, const char *fragment)
{
	struct al_node_state in = sample_node(), out;

	cr_assert_eq(al_node_state_write(&in, "o.md", task), 0);
	edit_line("o.md", prefix, replacement);
	cr_assert_eq(al_node_state_read(&out, "o.md"), AL_EINVALID, "after editing '%s'", prefix);
	cr_assert_not_null(strstr(al_errmsg(), "o.md"), "%s", al_errmsg());
	cr_assert_not_null(strstr(al_errmsg(), fragment), "%s", al_errmsg());
	cr_assert_null(out.run_id, "nothing is left to free");
	cr_assert_null(out.label);
}

Test(state, damaged_node_state_names_the_file_and_key)
{
	expect_damaged("run-id:", NULL, "'run-id'");
	expect_damaged("node-id:", NULL, "'node-id'");
	expect_damaged("node-path:", NULL, "'node-path'");
	expect_damaged("label:", NULL, "'label'");
	expect_damaged("status:", NULL, "'status'");
	expect_damaged("status:", "status: ~", "'status'");
	expect_damaged("phase:", NULL, "phase");
	expect_damaged("phase:", "phase: dancing", "phase");
	expect_damaged("iteration:", NULL, "iteration");
	expect_damaged("iteration:", "iteration: -1", "iteration");
	expect_damaged("iteration:", "iteration: three", "iteration");
	/* reported where the bracket that is never closed opens */
	expect_damaged("label:", "label: [unclosed", "o.md:3:8: ");
}

Test(state, node_state_without_front_matter_is_damaged)
{
	struct al_node_state st;

	unit_write("o.md", "# Task\n\nno front matter\n");
	cr_assert_eq(al_node_state_read(&st, "o.md"), AL_EINVALID);
	cr_assert_not_null(strstr(al_errmsg(), "'o.md'"), "%s", al_errmsg());
}

Test(state, node_state_parses_from_text_as_from_its_file)
{
	struct al_node_state in = sample_node(), out;
	const char *text;

	cr_assert_eq(al_node_state_write(&in, "o.md", task), 0, "%s", al_errmsg());
	text = file_text("o.md");
	cr_assert_eq(al_node_state_parse(&out, "branch:o.md", text, strlen(text)), 0, "%s",
		     al_errmsg());
	cr_assert_str_eq(out.node_path, in.node_path);
	cr_assert_str_eq(out.label, in.label);
	cr_assert_eq(out.phase, in.phase);
	cr_assert_eq(out.iteration, in.iteration);
	al_node_state_release(&out);
	cr_assert_eq(al_node_state_parse(&out, "branch:o.md", "# Task\n", 7), AL_EINVALID);
	cr_assert_not_null(strstr(al_errmsg(), "'branch:o.md'"), "%s", al_errmsg());
	cr_assert_null(out.run_id, "nothing is left to free");
}

/* --- run state ---------------------------------------------------------- */

Test(state, run_state_round_trips_every_field)
{
	char *stack[] = { "delivery", "delivery/implement", "delivery/implement/unit-tests", NULL };
	struct al_run_state in = {
		.run_id = "run_20261121_002",
		.status = "paused",
		.active_node_path = "delivery/implement/unit-tests",
		.stack = stack,
		.nstack = 3,
		.branch = "ai-loop/build-it",
		.base_branch = "main",
		.task = "Build it \"right\":\n  - don't `rm -rf` $(x)\n'quoted'\n",
		.flow = ".ai-loop/flow.yaml",
		.flow_sha256 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
		.started_at = "2026-11-21T10:00:00Z",
		.updated_at = NULL,
	}, out;
	char now[32];

	cr_assert_eq(al_run_state_write(&in, "run-state.md"), 0, "%s", al_errmsg());
	cr_assert_not_null(in.updated_at, "writing sets updated-at");
	cr_assert_eq(al_run_state_read(&out, "run-state.md"), 0, "%s", al_errmsg());
	cr_assert_str_eq(out.run_id, in.run_id);
	cr_assert_str_eq(out.status, in.status);
	cr_assert_str_eq(out.active_node_path, in.active_node_path);
	cr_assert_eq(out.nstack, 3);
	for (size_t i = 0; i < 3; i++)
		cr_assert_str_eq(out.stack[i], stack[i]);
	cr_assert_str_eq(out.branch, in.branch);
	cr_assert_str_eq(out.base_branch, in.base_branch);
	cr_assert_str_eq(out.task, in.task);
	cr_assert_str_eq(out.flow, in.flow);
	cr_assert_str_eq(out.flow_sha256, in.flow_sha256);
	cr_assert_str_eq(out.started_at, in.started_at);
	cr_assert_str_eq(out.updated_at, in.updated_at);
	al_timestamp(now);
	cr_assert_eq(strncmp(out.updated_at, now, 10), 0, "updated-at %s is not today (%s)",
		     out.updated_at, now);
	cr_assert_not_null(strstr(file_text("run-state.md"), "ailoop resume run_20261121_002"));
	free(in.updated_at);
	al_run_state_release(&out);
	cr_assert_null(out.stack);
	al_run_state_release(&out);
}

Test(state, run_state_optional_fields_and_an_empty_stack)
{
	struct al_run_state in = { .run_id = "r", .status = "running", .task = "",
				   .flow = "flow.yaml" }, out;

	cr_assert_eq(al_run_state_write(&in, "rs.md"), 0, "%s", al_errmsg());
	cr_assert_eq(al_run_state_read(&out, "rs.md"), 0, "%s", al_errmsg());
	cr_assert_str_eq(out.task, "", "an empty task is a task");
	cr_assert_eq(out.nstack, 0);
	cr_assert_null(out.active_node_path);
	cr_assert_null(out.branch);
	cr_assert_null(out.base_branch);
	cr_assert_null(out.flow_sha256);
	cr_assert_null(out.started_at);
	cr_assert_not_null(out.updated_at);
	free(in.updated_at);
	al_run_state_release(&out);
}

Test(state, damaged_run_state_names_the_file_and_key)
{
	static const char *const keys[] = { "run-id", "status", "task", "flow" };
	struct al_run_state in = { .run_id = "r", .status = "running", .task = "t",
				   .flow = "flow.yaml" }, out;

	for (size_t i = 0; i < AL_ARRAY_SIZE(keys); i++) {
		char prefix[32], want[32];

		cr_assert_eq(al_run_state_write(&in, "rs.md"), 0);
		snprintf(prefix, sizeof(prefix), "%s:", keys[i]);
		snprintf(want, sizeof(want), "'%s'", keys[i]);
		edit_line("rs.md", prefix, NULL);
		cr_assert_eq(al_run_state_read(&out, "rs.md"), AL_EINVALID);
		cr_assert_not_null(strstr(al_errmsg(), "'rs.md'"), "%s", al_errmsg());
		cr_assert_not_null(strstr(al_errmsg(), want), "%s", al_errmsg());
		cr_assert_null(out.run_id);
	}
	cr_assert_eq(al_run_state_write(&in, "rs.md"), 0);
	edit_line("rs.md", "execution-stack:", "execution-stack: not a list");
	cr_assert_eq(al_run_state_read(&out, "rs.md"), AL_EINVALID);
	cr_assert_not_null(strstr(al_errmsg(), "'execution-stack'"), "%s", al_errmsg());
	cr_assert_null(out.run_id);
	cr_assert_eq(al_run_state_read(&out, "missing.md"), AL_ENOTFOUND);
	free(in.updated_at);
}

/* --- statuses and time --------------------------------------------------- */

Test(state, resumable_statuses)
{
	static const char *const yes[] = { "running", "paused", "blocked" };
	static const char *const no[] = { "complete", "max-iterations-reached", "timeout",
					  "error", "skipped", "", "Running" };

	for (size_t i = 0; i < AL_ARRAY_SIZE(yes); i++)
		cr_assert(al_status_resumable(yes[i]), "%s", yes[i]);
	for (size_t i = 0; i < AL_ARRAY_SIZE(no); i++)
		cr_assert_not(al_status_resumable(no[i]), "%s", no[i]);
}

Test(state, status_name_is_static_and_unknown_ones_are_errors)
{
	static const char *const known[] = { "running", "paused", "complete",
					     "max-iterations-reached", "timeout", "error",
					     "blocked", "skipped" };
	char buf[32];

	for (size_t i = 0; i < AL_ARRAY_SIZE(known); i++) {
		snprintf(buf, sizeof(buf), "%s", known[i]);
		cr_assert_str_eq(al_status_name(buf), known[i]);
		cr_assert_neq((void *)al_status_name(buf), (void *)buf, "not the caller's copy");
	}
	cr_assert_str_eq(al_status_name("weird"), "error");
	cr_assert_str_eq(al_status_name(""), "error");
}

Test(state, timestamp_is_utc_iso_8601)
{
	regex_t re;
	char ts[32];

	al_timestamp(ts);
	cr_assert_eq(regcomp(&re, "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$",
			     REG_EXTENDED | REG_NOSUB),
		     0);
	cr_assert_eq(regexec(&re, ts, 0, NULL, 0), 0, "%s", ts);
	regfree(&re);
}
