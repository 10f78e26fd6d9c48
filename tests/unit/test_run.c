#include "ailoop/store/run.h"
#include "ailoop/base/fsutil.h"
#include "unit.h"

#include <jansson.h>
#include <regex.h>
#include <sys/wait.h>
#include <time.h>

static struct al_run *run;

static void setup(void)
{
	unit_hang_guard(30);
	unit_enter_tmpdir();
	run = NULL;
}

static void teardown(void)
{
	al_run_free(run);
	unit_leave_tmpdir();
}

TestSuite(run, .init = setup, .fini = teardown);

static const struct al_run_state params = {
	.task = "Add a \"User\" model\nwith validation",
	.flow = ".ai-loop/flow.yaml",
	.flow_sha256 = "ab12",
	.branch = "ai-loop/add-a-user-model",
	.base_branch = "main",
};

/* Today's prefix of run ids, as ailoop makes them (local time). */
static const char *today(void)
{
	static char buf[32];
	time_t t = time(NULL);
	struct tm tm;

	localtime_r(&t, &tm);
	strftime(buf, sizeof(buf), "run_%Y%m%d_", &tm);
	return buf;
}

static char *id_for(int n)
{
	return al_xprintf("%s%03d", today(), n);
}

static const char *file_text(const char *path)
{
	static struct al_strbuf sb = AL_STRBUF_INIT;

	al_strbuf_reset(&sb);
	cr_assert_eq(al_strbuf_read_file(&sb, path, 0), 0, "cannot read %s", path);
	return sb.buf;
}

/* --- creating and opening ----------------------------------------------- */

Test(run, create_makes_the_directory_state_and_lock)
{
	struct al_run_state st;
	char *id = id_for(1), *dir, *lock, *pid;

	cr_assert_eq(al_run_create(&run, &params, NULL, 0), 0, "%s", al_errmsg());
	cr_assert_str_eq(run->st.run_id, id);
	dir = al_xprintf(".ai-loop/runs/%s", id);
	cr_assert_str_eq(run->dir, dir);
	cr_assert(al_dir_exists(dir));
	cr_assert_eq(run->abs_dir[0], '/');
	cr_assert(al_ends_with(run->abs_dir, dir), "%s", run->abs_dir);
	cr_assert(al_dir_exists(run->abs_dir));
	cr_assert(al_ends_with(run->state_path, "/run-state.md"));
	cr_assert(al_ends_with(run->events_path, "/events.jsonl"));

	cr_assert_eq(al_run_state_read(&st, run->state_path), 0, "%s", al_errmsg());
	cr_assert_str_eq(st.run_id, id);
	cr_assert_str_eq(st.status, "running");
	cr_assert_str_eq(st.task, params.task);
	cr_assert_str_eq(st.flow, params.flow);
	cr_assert_str_eq(st.flow_sha256, params.flow_sha256);
	cr_assert_str_eq(st.branch, params.branch);
	cr_assert_str_eq(st.base_branch, params.base_branch);
	cr_assert_not_null(st.started_at);
	cr_assert_eq(st.nstack, 0);
	al_run_state_release(&st);

	lock = al_xprintf("%s/lock", dir);
	pid = al_xprintf("pid %ld ", (long)getpid());
	cr_assert_not_null(strstr(file_text(lock), pid), "lock: %s", file_text(lock));
	free(id);
	free(dir);
	free(lock);
	free(pid);
}

Test(run, ids_count_up_within_a_day)
{
	struct al_run *second = NULL, *third = NULL;
	char *id1 = id_for(1), *id2 = id_for(2), *id6 = id_for(6), *id7 = id_for(7);
	char *dir6 = al_xprintf(".ai-loop/runs/%s", id6);
	char **ids;
	size_t n;

	cr_assert_eq(al_run_create(&run, &params, NULL, 0), 0, "%s", al_errmsg());
	cr_assert_eq(al_run_create(&second, &params, NULL, 0), 0, "%s", al_errmsg());
	cr_assert_str_eq(run->st.run_id, id1);
	cr_assert_str_eq(second->st.run_id, id2);

	/* a gap and another day's runs: the next is one past today's highest */
	cr_assert_eq(mkdir(dir6, 0755), 0);
	cr_assert_eq(mkdir(".ai-loop/runs/run_20000101_042", 0755), 0);
	cr_assert_eq(al_run_create(&third, &params, NULL, 0), 0, "%s", al_errmsg());
	cr_assert_str_eq(third->st.run_id, id7);

	/* a directory without run-state.md (a run that died unborn) is no run */
	unit_write(".ai-loop/runs/run_20000101_042/run-state.md",
		   "---\nrun-id: run_20000101_042\nstatus: complete\ntask: t\nflow: f\n---\n");
	cr_assert_eq(al_runs_list(&ids, &n), 0);
	cr_assert_eq(n, 4);
	cr_assert_str_eq(ids[0], id7, "newest first");
	cr_assert_str_eq(ids[3], "run_20000101_042");
	al_runs_list_free(ids, n);
	al_run_free(second);
	al_run_free(third);
	free(id1);
	free(id2);
	free(id6);
	free(id7);
	free(dir6);
}

Test(run, list_without_runs_is_empty)
{
	char **ids = (char **)1;
	size_t n = 1;

	cr_assert_eq(al_runs_list(&ids, &n), 0);
	cr_assert_eq(n, 0);
	cr_assert_null(ids);
	unit_write(".ai-loop/runs/.gitkeep", "");
	unit_mkdirs(".ai-loop/runs/not-a-run/");
	cr_assert_eq(al_runs_list(&ids, &n), 0);
	cr_assert_eq(n, 0, "only run_* directories are runs");
	al_runs_list_free(ids, n);
}

Test(run, open_reads_an_existing_run)
{
	struct al_run *again = NULL;
	char *id;

	cr_assert_eq(al_run_create(&run, &params, NULL, 0), 0, "%s", al_errmsg());
	id = al_strdup(run->st.run_id);
	cr_assert_eq(al_run_open(&again, id), 0, "%s", al_errmsg());
	cr_assert_str_eq(again->st.run_id, id);
	cr_assert_str_eq(again->st.task, params.task);
	cr_assert_str_eq(again->dir, run->dir);
	cr_assert_eq(again->lock_fd, -1, "opening does not lock");
	al_run_free(again);
	free(id);
}

Test(run, open_refuses_unknown_and_odd_ids)
{
	static const char *const bad[] = { "run_19990101_001", "", ".", "..", "../runs",
					   "a/b" };
	struct al_run *r = (struct al_run *)1;

	unit_mkdirs(".ai-loop/runs/");
	for (size_t i = 0; i < AL_ARRAY_SIZE(bad); i++) {
		cr_assert_eq(al_run_open(&r, bad[i]), AL_ENOTFOUND, "'%s'", bad[i]);
		cr_assert_null(r);
	}
}

Test(run, open_of_a_run_without_its_state_is_invalid)
{
	struct al_run *r = NULL;

	unit_mkdirs(".ai-loop/runs/run_20261121_001/");
	cr_assert_eq(al_run_open(&r, "run_20261121_001"), AL_EINVALID);
	cr_assert_null(r);
	cr_assert_not_null(strstr(al_errmsg(), "run-state.md"), "%s", al_errmsg());

	unit_write(".ai-loop/runs/run_20261121_001/run-state.md", "---\nrun-id: x\n---\n");
	cr_assert_eq(al_run_open(&r, "run_20261121_001"), AL_EINVALID);
	cr_assert_null(r);
}

/* --- the lock ----------------------------------------------------------- */

/*
 * Runs `fn` in a forked child and returns its exit status. The child ends
 * with _exit so that nothing of the test's process is run twice.
 */
static int in_child(int (*fn)(void *), void *data)
{
	pid_t pid = fork();
	int status;

	cr_assert_geq(pid, 0);
	if (pid == 0)
		_exit(fn(data));
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status), "child died: %d", status);
	return WEXITSTATUS(status);
}

/* In a child: 0 if locking the run is refused with a message naming `pid`. */
static int try_lock_refused(void *data)
{
	const char *id = data;
	struct al_run *r = NULL;
	char want[64];
	int rc;

	if (al_run_open(&r, id) < 0)
		return 10;
	rc = al_run_lock(r);
	snprintf(want, sizeof(want), "pid %ld", (long)getppid());
	if (rc != AL_ELOCKED)
		return 11;
	if (!strstr(al_errmsg(), want) || !strstr(al_errmsg(), id))
		return 12;
	if (r->lock_fd != -1)
		return 13;
	al_run_free(r);
	return 0;
}

/* In a child: takes the lock and exits holding it, without unlocking. */
static int lock_and_die(void *data)
{
	struct al_run *r = NULL;

	if (al_run_open(&r, data) < 0)
		return 10;
	if (al_run_lock(r) < 0)
		return 11;
	return 0; /* exits with the lock file still naming this process */
}

Test(run, a_held_lock_is_refused_to_another_process)
{
	char *id;

	cr_assert_eq(al_run_create(&run, &params, NULL, 0), 0, "%s", al_errmsg());
	id = al_strdup(run->st.run_id);
	cr_assert_eq(in_child(try_lock_refused, id), 0);
	free(id);
}

Test(run, a_lock_left_by_a_dead_process_is_taken_over)
{
	char *id, *lock, *holder, *me;

	cr_assert_eq(al_run_create(&run, &params, NULL, 0), 0, "%s", al_errmsg());
	id = al_strdup(run->st.run_id);
	lock = al_xprintf("%s/lock", run->dir);
	al_run_free(run); /* lets go of the lock, leaves the file */
	run = NULL;
	cr_assert(al_file_exists(lock));

	cr_assert_eq(in_child(lock_and_die, id), 0);
	me = al_xprintf("ailoop pid %ld on ", (long)getpid());
	cr_assert_not(al_starts_with(file_text(lock), me), "the child's pid is in the lock");
	cr_assert_eq(al_run_open(&run, id), 0, "%s", al_errmsg());
	holder = al_run_lock_holder(run->dir);
	cr_assert_null(holder, "a dead process holds nothing: %s", holder);
	cr_assert_eq(al_run_lock(run), 0, "%s", al_errmsg());
	cr_assert(al_starts_with(file_text(lock), me), "%s", file_text(lock));
	free(me);
	free(id);
	free(lock);
}

Test(run, lock_holder_names_the_live_holder)
{
	char *holder, *want;

	cr_assert_eq(al_run_create(&run, &params, NULL, 0), 0, "%s", al_errmsg());
	holder = al_run_lock_holder(run->dir);
	want = al_xprintf("ailoop pid %ld on ", (long)getpid());
	cr_assert_not_null(holder);
	cr_assert(al_starts_with(holder, want), "%s", holder);
	cr_assert_neq(holder[strlen(holder) - 1], '\n');
	free(holder);
	free(want);

	al_run_unlock(run);
	cr_assert_eq(run->lock_fd, -1);
	holder = al_xprintf("%s/lock", run->dir);
	cr_assert_not(al_file_exists(holder), "unlocking removes the lock file");
	free(holder);
	cr_assert_null(al_run_lock_holder(run->dir));
	al_run_unlock(run); /* twice is harmless */
	cr_assert_null(al_run_lock_holder("no/such/dir"));
}

/* --- the work tree's lock ------------------------------------------------ */

/* In a child: 0 if the work tree's lock is refused naming the parent and `data`. */
static int try_worktree_refused(void *data)
{
	char want[64];
	int fd;

	if (al_worktree_lock(&fd, "gitdir/") != AL_ELOCKED || fd != -1)
		return 11;
	snprintf(want, sizeof(want), "locked by ailoop pid %ld on ", (long)getppid());
	if (!strstr(al_errmsg(), want) || !strstr(al_errmsg(), (const char *)data))
		return 12;
	return 0;
}

/* In a child: takes the work tree's lock and exits holding it. */
static int worktree_lock_and_die(void *data)
{
	int fd;

	(void)data;
	return al_worktree_lock(&fd, "gitdir/") < 0 ? 11 : 0;
}

Test(run, the_worktree_lock_admits_one_process_and_names_it)
{
	int fd, again;

	cr_assert_eq(al_mkdirs("gitdir"), 0);
	cr_assert_eq(al_worktree_lock(&fd, "gitdir/"), 0, "%s", al_errmsg());
	cr_assert_geq(fd, 0);
	cr_assert_eq(in_child(try_worktree_refused, "ailoop pid"), 0);
	al_worktree_lock_name(fd, "run_20261123_007");
	cr_assert(strstr(file_text("gitdir/ailoop.lock"), ", run run_20261123_007\n"), "%s",
		  file_text("gitdir/ailoop.lock"));
	cr_assert_eq(in_child(try_worktree_refused, ", run run_20261123_007"), 0);
	/* one process, a second descriptor: refused too (flock is per open file) */
	cr_assert_eq(al_worktree_lock(&again, "gitdir/"), AL_ELOCKED);
	al_worktree_unlock(fd);
	cr_assert_str_eq(file_text("gitdir/ailoop.lock"), "", "no name is left behind");
	cr_assert_eq(al_worktree_lock(&fd, "gitdir/"), 0, "%s", al_errmsg());
	al_worktree_unlock(fd);
	al_worktree_unlock(-1); /* harmless */
}

Test(run, the_worktree_lock_of_a_dead_process_is_taken)
{
	char *me;
	int fd;

	cr_assert_eq(al_mkdirs("gitdir"), 0);
	cr_assert_eq(in_child(worktree_lock_and_die, NULL), 0);
	cr_assert_neq(file_text("gitdir/ailoop.lock")[0], '\0', "the dead holder's name stays");
	cr_assert_eq(al_worktree_lock(&fd, "gitdir/"), 0, "%s", al_errmsg());
	me = al_xprintf("ailoop pid %ld on ", (long)getpid());
	cr_assert(al_starts_with(file_text("gitdir/ailoop.lock"), me), "%s",
		  file_text("gitdir/ailoop.lock"));
	free(me);
	al_worktree_unlock(fd);
}

Test(run, a_worktree_lock_that_cannot_be_opened_says_why)
{
	int fd;

	cr_assert_lt(al_worktree_lock(&fd, "no/such/dir/"), 0);
	cr_assert_eq(fd, -1);
	cr_assert(strstr(al_errmsg(), "cannot open 'no/such/dir/ailoop.lock'"), "%s", al_errmsg());
}

/* --- the execution stack ------------------------------------------------ */

static void assert_saved_stack(const char *active, size_t n, ...)
{
	struct al_run_state st;
	va_list ap;

	cr_assert_eq(al_run_state_read(&st, run->state_path), 0, "%s", al_errmsg());
	if (active)
		cr_assert_str_eq(st.active_node_path, active);
	else
		cr_assert_null(st.active_node_path, "%s", st.active_node_path);
	cr_assert_eq(st.nstack, n, "saved stack of %zu, expected %zu", st.nstack, n);
	va_start(ap, n);
	for (size_t i = 0; i < n; i++)
		cr_assert_str_eq(st.stack[i], va_arg(ap, const char *));
	va_end(ap);
	al_run_state_release(&st);
}

Test(run, enter_and_leave_keep_the_stack_in_run_state)
{
	cr_assert_eq(al_run_create(&run, &params, NULL, 0), 0, "%s", al_errmsg());
	cr_assert_eq(al_run_enter(run, "delivery"), 0);
	assert_saved_stack("delivery", 1, "delivery");
	cr_assert_eq(al_run_enter(run, "delivery/implement"), 0);
	cr_assert_eq(al_run_enter(run, "delivery/implement/tests"), 0);
	assert_saved_stack("delivery/implement/tests", 3, "delivery", "delivery/implement",
			   "delivery/implement/tests");
	cr_assert_eq(al_run_leave(run), 0);
	assert_saved_stack("delivery/implement", 2, "delivery", "delivery/implement");
	cr_assert_eq(al_run_leave(run), 0);
	cr_assert_eq(al_run_leave(run), 0);
	assert_saved_stack(NULL, 0);
	cr_assert_eq(al_run_leave(run), 0, "leaving an empty stack is harmless");
	assert_saved_stack(NULL, 0);
}

Test(run, entering_a_node_already_on_the_stack_resumes_there)
{
	cr_assert_eq(al_run_create(&run, &params, NULL, 0), 0, "%s", al_errmsg());
	cr_assert_eq(al_run_enter(run, "a"), 0);
	cr_assert_eq(al_run_enter(run, "a/b"), 0);
	cr_assert_eq(al_run_enter(run, "a/b/c"), 0);
	cr_assert_eq(al_run_enter(run, "a/b"), 0);
	assert_saved_stack("a/b", 2, "a", "a/b");
	cr_assert_eq(al_run_enter(run, "a/d"), 0);
	assert_saved_stack("a/d", 3, "a", "a/b", "a/d");
}

Test(run, the_stack_survives_reopening)
{
	struct al_run *again = NULL;

	cr_assert_eq(al_run_create(&run, &params, NULL, 0), 0, "%s", al_errmsg());
	cr_assert_eq(al_run_enter(run, "root"), 0);
	cr_assert_eq(al_run_enter(run, "root/child"), 0);
	cr_assert_eq(al_run_open(&again, run->st.run_id), 0, "%s", al_errmsg());
	cr_assert_str_eq(again->st.active_node_path, "root/child");
	cr_assert_eq(again->st.nstack, 2);
	cr_assert_eq(al_run_leave(again), 0);
	cr_assert_eq(al_run_enter(again, "root/other"), 0);
	al_run_free(again);
	assert_saved_stack("root/other", 2, "root", "root/other");
}

Test(run, node_dir_is_under_the_run)
{
	char *d, *want;

	cr_assert_eq(al_run_create(&run, &params, NULL, 0), 0, "%s", al_errmsg());
	d = al_run_node_dir(run, "delivery/implement");
	want = al_xprintf(".ai-loop/runs/%s/nodes/delivery/implement", run->st.run_id);
	cr_assert_str_eq(d, want);
	free(d);
	free(want);
}

/* --- events ------------------------------------------------------------- */

Test(run, events_are_one_json_object_per_line)
{
	regex_t ts_re;
	const char *text, *p;
	json_t *lines[3];
	size_t n = 0;

	cr_assert_eq(al_run_create(&run, &params, NULL, 0), 0, "%s", al_errmsg());
	al_run_event(run, "run_start", "{s:s, s:i}", "task", "two\nlines \"quoted\"", "depth",
		     2);
	al_run_event(run, "iteration", "{s:s, s:b, s:f}", "label", "1.2", "target-met", 1,
		     "cost", 0.5);
	al_run_event(run, "run_end", NULL);

	text = file_text(run->events_path);
	cr_assert_eq(regcomp(&ts_re, "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}Z$",
			     REG_EXTENDED | REG_NOSUB),
		     0);
	for (p = text; *p; n++) {
		const char *nl = strchr(p, '\n');
		json_error_t err;
		const char *key;
		json_t *v;
		void *it;

		cr_assert_not_null(nl, "the last line is not ended: %s", p);
		cr_assert_lt(n, 3, "more than 3 lines:\n%s", text);
		lines[n] = json_loadb(p, (size_t)(nl - p), 0, &err);
		cr_assert_not_null(lines[n], "line %zu is not JSON (%s):\n%s", n + 1, err.text, text);
		cr_assert(json_is_object(lines[n]));
		it = json_object_iter(lines[n]);
		key = json_object_iter_key(it);
		cr_assert_str_eq(key, "ts", "ts comes first:\n%s", text);
		v = json_object_get(lines[n], "ts");
		cr_assert(json_is_string(v));
		cr_assert_eq(regexec(&ts_re, json_string_value(v), 0, NULL, 0), 0, "ts %s",
			     json_string_value(v));
		cr_assert(json_is_string(json_object_get(lines[n], "event")));
		p = nl + 1;
	}
	regfree(&ts_re);
	cr_assert_eq(n, 3);

	cr_assert_str_eq(json_string_value(json_object_get(lines[0], "event")), "run_start");
	cr_assert_str_eq(json_string_value(json_object_get(lines[0], "task")),
			 "two\nlines \"quoted\"");
	cr_assert_eq(json_integer_value(json_object_get(lines[0], "depth")), 2);
	cr_assert_str_eq(json_string_value(json_object_get(lines[1], "event")), "iteration");
	cr_assert_str_eq(json_string_value(json_object_get(lines[1], "label")), "1.2");
	cr_assert(json_is_true(json_object_get(lines[1], "target-met")));
	cr_assert_float_eq(json_real_value(json_object_get(lines[1], "cost")), 0.5, 1e-9);
	cr_assert_str_eq(json_string_value(json_object_get(lines[2], "event")), "run_end");
	cr_assert_eq(json_object_size(lines[2]), 2);
	for (size_t i = 0; i < n; i++)
		json_decref(lines[i]);
}

Test(run, a_lost_event_log_does_not_stop_the_run)
{
	cr_assert_eq(al_run_create(&run, &params, NULL, 0), 0, "%s", al_errmsg());
	cr_assert_eq(mkdir(run->events_path, 0755), 0); /* cannot be opened for writing */
	al_run_event(run, "run_start", "{s:s}", "k", "v");
	cr_assert(al_dir_exists(run->events_path));
}

Test(run, list_orders_numbers_past_999)
{
	const char *names[] = { "run_20261121_999", "run_20261121_1000", "run_20261120_5000" };
	char **ids;
	size_t n;

	for (size_t i = 0; i < 3; i++) {
		char *p = al_xprintf(".ai-loop/runs/%s/run-state.md", names[i]);

		unit_write(p, "---\nrun-id: x\nstatus: complete\ntask: t\nflow: f\n---\n");
		free(p);
	}
	cr_assert_eq(al_runs_list(&ids, &n), 0);
	cr_assert_eq(n, 3);
	cr_assert_str_eq(ids[0], "run_20261121_1000", "newest first");
	cr_assert_str_eq(ids[1], "run_20261121_999");
	cr_assert_str_eq(ids[2], "run_20261120_5000");
	al_runs_list_free(ids, n);
}
