#include "ailoop/store/history.h"
#include "unit.h"

static void setup(void)
{
	unit_hang_guard(30);
	unit_enter_tmpdir();
}

static void teardown(void)
{
	unit_leave_tmpdir();
}

TestSuite(history, .init = setup, .fini = teardown);

static char *message(const struct al_commit_fields *f)
{
	struct al_strbuf sb = AL_STRBUF_INIT;

	al_commit_message(&sb, f);
	return al_strbuf_detach(&sb, NULL);
}

/* --- writing ------------------------------------------------------------ */

Test(history, commit_message_has_the_spec_format)
{
	struct al_commit_fields f = {
		.node_path = "delivery/implement",
		.label = "1.2",
		.status = "running",
		.target_met = false,
		.sensors = "typecheck: pass, unit-tests: fail (3 failed)",
		.summary = "add data model",
	};
	char *m = message(&f);

	cr_assert_str_eq(m, "ai-loop[delivery > implement]: iteration 1.2 — add data model\n"
			    "\n"
			    "[node-path] delivery/implement\n"
			    "[level] 1\n"
			    "[iteration] 1.2\n"
			    "[status] running\n"
			    "[target-met] false\n"
			    "[sensors] typecheck: pass, unit-tests: fail (3 failed)\n"
			    "[action] add data model\n");
	free(m);
}

Test(history, a_merge_reads_back_as_a_merge_not_an_iteration)
{
	struct al_commit_fields f = { .node_path = "main/par", .label = "2", .status = "running",
				      .summary = "merge fix", .merge = "fix",
				      .merge_branch = "ai-loop/x--fix" };
	struct al_commit_fields g = { .node_path = "main/par", .label = "2", .status = "complete",
				      .summary = "2 of 2 children succeeded" };
	char *m = message(&f), *n = message(&g);
	struct al_iteration it;

	cr_assert(strstr(m, "\n[merge] fix\n[merge-branch] ai-loop/x--fix\n"));
	cr_assert(al_iteration_parse(&it, m));
	cr_assert_str_eq(it.merge, "fix");
	cr_assert_str_eq(it.merge_branch, "ai-loop/x--fix");
	cr_assert_str_eq(it.label, "2");
	al_iteration_release(&it);
	cr_assert(al_iteration_parse(&it, n));
	cr_assert_null(it.merge, "the node's own commit is no merge");
	al_iteration_release(&it);
	free(m);
	free(n);
}

Test(history, a_commit_is_its_run_node_label_and_status_not_a_start_or_merge_of_them)
{
	struct al_commit_fields start = { .node_path = "par", .label = "0", .status = "running",
					  .summary = "start: the children work in worktrees",
					  .run_id = "run_1" };
	struct al_commit_fields merge = { .node_path = "par", .label = "0", .status = "running",
					  .summary = "merge a", .merge = "a",
					  .merge_branch = "ai-loop/x--a" };
	char *s = message(&start), *m = message(&merge);
	struct al_iteration it;

	cr_assert(al_iteration_parse(&it, s));
	cr_assert(al_iteration_is(&it, "run_1", "par", "0", "running"));
	cr_assert_not(al_iteration_is(&it, "run_1", "par", "0", "failed"), "the start is not the end");
	cr_assert_not(al_iteration_is(&it, "run_1", "par", "1", "running"));
	cr_assert_not(al_iteration_is(&it, "run_1", "par/a", "0", "running"));
	cr_assert_not(al_iteration_is(&it, "run_2", "par", "0", "running"), "another run's");
	al_iteration_release(&it);
	cr_assert(al_iteration_parse(&it, m));
	cr_assert_not(al_iteration_is(&it, "run_1", "par", "0", "running"), "a merge is no iteration");
	al_iteration_release(&it);
	free(s);
	free(m);
}

Test(history, commit_message_level_follows_the_path_depth)
{
	struct al_commit_fields f = { .node_path = "root", .label = "0", .status = "running",
				      .summary = "initial measurement" };
	char *m = message(&f);

	cr_assert_str_eq(m, "ai-loop[root]: iteration 0 — initial measurement\n\n"
			    "[node-path] root\n[level] 0\n[iteration] 0\n[status] running\n"
			    "[target-met] false\n[sensors] none\n[action] initial measurement\n");
	free(m);

	f = (struct al_commit_fields){ .node_path = "a/b/c", .label = "3.1.2",
				       .status = "complete", .target_met = true,
				       .sensors = "", .summary = "done" };
	m = message(&f);
	cr_assert_str_eq(m, "ai-loop[a > b > c]: iteration 3.1.2 — done\n\n"
			    "[node-path] a/b/c\n[level] 2\n[iteration] 3.1.2\n[status] complete\n"
			    "[target-met] true\n[sensors] none\n[action] done\n");
	free(m);
}

Test(history, commit_message_flattens_the_summary)
{
	struct al_commit_fields f = { .node_path = "n", .label = "2", .status = "running",
				      .sensors = "t: pass",
				      .summary = "first line\nsecond\r\nthird\twith tab" };
	char *m = message(&f);

	cr_assert_str_eq(m, "ai-loop[n]: iteration 2 — first line second  third with tab\n\n"
			    "[node-path] n\n[level] 0\n[iteration] 2\n[status] running\n"
			    "[target-met] false\n[sensors] t: pass\n"
			    "[action] first line second  third with tab\n");
	free(m);

	f.summary = "";
	m = message(&f);
	cr_assert(al_starts_with(m, "ai-loop[n]: iteration 2 — -\n\n"), "%s", m);
	cr_assert(al_ends_with(m, "\n[action] -\n"), "%s", m);
	free(m);
}

Test(history, sensors_line_add_keeps_entries_parseable)
{
	struct al_strbuf line = AL_STRBUF_INIT;

	al_sensors_line_add(&line, "typecheck", "pass", NULL);
	cr_assert_str_eq(line.buf, "typecheck: pass");
	al_sensors_line_add(&line, "unit-tests", "fail", "3 failed");
	al_sensors_line_add(&line, "lint", "partial", "");
	al_sensors_line_add(&line, "e2e", "pending", "2 failed, 1 skipped (flaky)\nsee\tlog");
	cr_assert_str_eq(line.buf, "typecheck: pass, unit-tests: fail (3 failed), lint: partial, "
				   "e2e: pending (2 failed 1 skipped flaky see log)");
	al_strbuf_release(&line);
}

/* --- reading ------------------------------------------------------------ */

Test(history, parse_reads_back_every_field)
{
	struct al_strbuf sensors = AL_STRBUF_INIT;
	struct al_commit_fields f = { .node_path = "delivery/implement", .label = "1.2",
				      .status = "complete", .target_met = true,
				      .summary = "add data model\nwith rules" };
	struct al_iteration it;
	char *m;

	al_sensors_line_add(&sensors, "typecheck", "pass", NULL);
	al_sensors_line_add(&sensors, "unit-tests", "fail", "3 failed, (2 new)\nsee log");
	al_sensors_line_add(&sensors, "lint", "partial", "12 warnings");
	al_sensors_line_add(&sensors, "docs", "pending", NULL);
	f.sensors = sensors.buf;
	m = message(&f);
	cr_assert(al_iteration_parse(&it, m), "%s", m);
	cr_assert_str_eq(it.display, "delivery > implement");
	cr_assert_str_eq(it.label, "1.2");
	cr_assert_str_eq(it.summary, "add data model with rules");
	cr_assert_str_eq(it.node_path, "delivery/implement");
	cr_assert_eq(it.level, 1);
	cr_assert_str_eq(it.status, "complete");
	cr_assert(it.target_met);
	cr_assert_str_eq(it.action, "add data model with rules");
	cr_assert_eq(it.nsensors, 4);
	cr_assert_str_eq(it.sensors[0].name, "typecheck");
	cr_assert_str_eq(it.sensors[0].status, "pass");
	cr_assert_null(it.sensors[0].detail);
	cr_assert_str_eq(it.sensors[1].name, "unit-tests");
	cr_assert_str_eq(it.sensors[1].status, "fail");
	cr_assert_str_eq(it.sensors[1].detail, "3 failed 2 new see log");
	cr_assert_str_eq(it.sensors[2].name, "lint");
	cr_assert_str_eq(it.sensors[2].status, "partial");
	cr_assert_str_eq(it.sensors[2].detail, "12 warnings");
	cr_assert_str_eq(it.sensors[3].name, "docs");
	cr_assert_str_eq(it.sensors[3].status, "pending");
	cr_assert_null(it.sensors[3].detail);
	al_iteration_release(&it);
	free(m);
	al_strbuf_release(&sensors);
}

Test(history, parse_with_no_sensors_and_target_not_met)
{
	struct al_commit_fields f = { .node_path = "root", .label = "0", .status = "running",
				      .summary = "initial measurement" };
	struct al_iteration it;
	char *m = message(&f);

	cr_assert(al_iteration_parse(&it, m));
	cr_assert_eq(it.nsensors, 0);
	cr_assert_null(it.sensors);
	cr_assert_not(it.target_met);
	cr_assert_eq(it.level, 0);
	cr_assert_str_eq(it.label, "0");
	al_iteration_release(&it);
	free(m);
}

Test(history, parse_accepts_ascii_separators_in_the_subject)
{
	static const char *const messages[] = {
		"ai-loop[a > b]: iteration 4.1 -- fix the parser\n\n[node-path] a/b\n[level] 1\n",
		"ai-loop[a > b]: iteration 4.1 - fix the parser\n\n[node-path] a/b\n[level] 1\n",
		"ai-loop[a > b]:iteration   4.1—fix the parser\n\n[node-path] a/b\n[level] 1\n",
	};
	struct al_iteration it;

	for (size_t i = 0; i < AL_ARRAY_SIZE(messages); i++) {
		cr_assert(al_iteration_parse(&it, messages[i]), "%s", messages[i]);
		cr_assert_str_eq(it.display, "a > b");
		cr_assert_str_eq(it.label, "4.1");
		cr_assert_str_eq(it.summary, "fix the parser", "%s", messages[i]);
		cr_assert_str_eq(it.node_path, "a/b");
		cr_assert_eq(it.level, 1);
		cr_assert_str_eq(it.status, "running", "a missing [status] reads as running");
		cr_assert_null(it.action);
		al_iteration_release(&it);
	}
}

/* a commit another tool wrote may hold bytes that are not UTF-8: those lines are skipped */
Test(history, parse_skips_lines_that_are_not_utf8)
{
	const char *message = "ai-loop[a]: iteration 2 \xe2\x80\x94 fix it\n\n[node-path] a\n"
			      "[action] bad \xff\xfe bytes\n[status] done\n[run] run_1\n";
	struct al_iteration it;

	cr_assert(al_iteration_parse(&it, message));
	cr_assert_str_eq(it.label, "2");
	cr_assert_str_eq(it.summary, "fix it");
	cr_assert_str_eq(it.node_path, "a");
	cr_assert_null(it.action, "a line with invalid UTF-8 is not taken");
	cr_assert_str_eq(it.status, "done", "the lines after it are");
	cr_assert_str_eq(it.run_id, "run_1");
	al_iteration_release(&it);
	cr_assert_not(al_iteration_parse(&it, "ai-loop[\xc3]: iteration 1 \xe2\x80\x94 x\n\n"
						"[node-path] a\n"),
		      "a subject with invalid UTF-8 is not an iteration's");
}

Test(history, parse_rejects_other_messages)
{
	static const char *const messages[] = {
		"",
		"Initial commit\n",
		"Merge branch 'main'\n\n[node-path] a\n",
		"ai-loop[a]: iteration 1 — looks like ours\n\nbut has no body of ours\n",
		"ai-loop[a]: iteration 1 — only a subject",
		"ai-loop[a]: iteration 1 — subject\n\n[status] running\n[level] 0\n",
		"fix: something\nai-loop[a]: iteration 1 — x\n\n[node-path] a\n",
		"ai-loop[a]: iteration — no label\n\n[node-path] a\n",
		"ai-loop a: iteration 1 — no brackets\n\n[node-path] a\n",
	};
	struct al_iteration it;

	for (size_t i = 0; i < AL_ARRAY_SIZE(messages); i++) {
		memset(&it, 0x5a, sizeof(it));
		cr_assert_not(al_iteration_parse(&it, messages[i]), "accepted: %s", messages[i]);
		cr_assert_null(it.display, "filled in for: %s", messages[i]);
		cr_assert_null(it.node_path);
		cr_assert_eq(it.nsensors, 0);
	}
}

/* --- al_history_load on a real repository ----------------------------- */

static void git(const char *args)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd),
		 "git -c user.name=t -c user.email=t@example.com -c commit.gpgsign=false %s "
		 ">/dev/null 2>&1",
		 args);
	cr_assert_eq(system(cmd), 0, "failed: %s", cmd);
}

static void commit_text(const char *text)
{
	unit_write("msg.txt", text);
	git("commit -q --allow-empty --cleanup=verbatim -F msg.txt");
}

static void commit_iteration(const char *path, const char *label, const char *summary)
{
	struct al_commit_fields f = { .node_path = path, .label = label, .status = "running",
				      .sensors = "t: fail (1 failed)", .summary = summary };
	char *m = message(&f);

	commit_text(m);
	free(m);
}

static void make_repo(void)
{
	git("init -q");
	unit_write(".git/info/exclude", "msg.txt\n");
	commit_text("Initial commit\n");
	/* an earlier run on the same branch */
	commit_iteration("root", "0", "initial measurement");
	commit_iteration("root", "1", "old run's action");
	commit_text("chore: between the runs\n");
	/* the run under test, with an agent's own commit in the middle */
	commit_iteration("root", "0", "initial measurement");
	commit_iteration("root/child", "1.0", "initial entry (sensors skipped)");
	commit_text("agent: edited files by itself\n\nai-loop[x]: iteration 9 — quoted\n");
	commit_iteration("root/child", "1.1", "child action");
	commit_text("ai-loop[root]: iteration 7 — look-alike\n\nno body\n");
	commit_iteration("root", "1", "ran the child");
}

Test(history, load_returns_the_last_run_oldest_first)
{
	static const char *const labels[] = { "0", "1.0", "1.1", "1" };
	static const char *const paths[] = { "root", "root/child", "root/child", "root" };
	struct al_iteration *its = NULL;
	struct al_git *g = NULL;
	size_t n = 0;

	make_repo();
	cr_assert_eq(al_git_open(&g), 0, "%s", al_errmsg());
	cr_assert_eq(al_history_load(g, "HEAD", NULL, &its, &n), 0, "%s", al_errmsg());
	cr_assert_eq(n, 4, "got %zu iterations", n);
	for (size_t i = 0; i < n; i++) {
		cr_assert_str_eq(its[i].label, labels[i]);
		cr_assert_str_eq(its[i].node_path, paths[i]);
		cr_assert_eq(strlen(its[i].oid), 40);
		cr_assert_gt(its[i].time, 0);
		cr_assert_eq(its[i].nsensors, 1);
		cr_assert_str_eq(its[i].sensors[0].detail, "1 failed");
	}
	cr_assert_str_eq(its[3].summary, "ran the child");
	cr_assert_eq(its[1].level, 1);
	al_history_free(its, n);

	/* from an earlier commit: the run as it was then */
	cr_assert_eq(al_history_load(g, "HEAD~3", NULL, &its, &n), 0, "%s", al_errmsg());
	cr_assert_eq(n, 2);
	cr_assert_str_eq(its[0].label, "0");
	cr_assert_str_eq(its[1].label, "1.0");
	al_history_free(its, n);
	al_git_free(g);
}

Test(history, load_without_a_first_iteration_walks_to_the_root)
{
	struct al_iteration *its = NULL;
	struct al_git *g = NULL;
	size_t n = 0;

	git("init -q");
	unit_write(".git/info/exclude", "msg.txt\n");
	commit_text("Initial commit\n");
	commit_iteration("root/child", "1.1", "resumed mid-way");
	commit_iteration("root", "1", "then the root");
	cr_assert_eq(al_git_open(&g), 0, "%s", al_errmsg());
	cr_assert_eq(al_history_load(g, "HEAD", NULL, &its, &n), 0, "%s", al_errmsg());
	cr_assert_eq(n, 2);
	cr_assert_str_eq(its[0].label, "1.1");
	cr_assert_str_eq(its[1].label, "1");
	al_history_free(its, n);
	al_git_free(g);
}

Test(history, load_of_an_unknown_revision_fails)
{
	struct al_iteration *its = (struct al_iteration *)1;
	struct al_git *g = NULL;
	size_t n = 1;

	git("init -q");
	commit_text("Initial commit\n");
	cr_assert_eq(al_git_open(&g), 0, "%s", al_errmsg());
	cr_assert_eq(al_history_load(g, "no-such-branch", NULL, &its, &n), AL_ENOTFOUND);
	cr_assert_null(its);
	cr_assert_eq(n, 0);
	cr_assert_not_null(strstr(al_errmsg(), "no-such-branch"), "%s", al_errmsg());
	cr_assert_eq(al_history_load(g, "HEAD", NULL, &its, &n), 0);
	cr_assert_eq(n, 0, "no ailoop commits, no iterations");
	al_history_free(its, n);
	al_git_free(g);
}

/* --- runs ---------------------------------------------------------------- */

Test(history, run_lines_are_written_and_read_back)
{
	struct al_commit_fields f = { .node_path = "main/a", .label = "0", .status = "complete",
				      .summary = "did one", .run_id = "run_20261123_001",
				      .run_start = true };
	struct al_iteration it;
	char *m = message(&f);

	cr_assert(strstr(m, "[action] did one\n[run] run_20261123_001\n[run-start] true\n"));
	cr_assert(al_iteration_parse(&it, m));
	cr_assert_str_eq(it.run_id, "run_20261123_001");
	cr_assert(it.run_start);
	cr_assert(al_iteration_starts_run(&it), "a [run-start] commit starts its run");
	al_iteration_release(&it);
	free(m);
	f.run_start = false;
	m = message(&f);
	cr_assert(al_iteration_parse(&it, m));
	cr_assert_not(al_iteration_starts_run(&it),
		      "with [run], only [run-start] starts a run, not a level-0 iteration 0");
	al_iteration_release(&it);
	free(m);
	f.run_id = NULL;
	f.node_path = "main";
	m = message(&f);
	cr_assert(al_iteration_parse(&it, m));
	cr_assert(al_iteration_starts_run(&it), "an older commit: its root's iteration 0");
	al_iteration_release(&it);
	free(m);
}
