#include "ailoop/base/fsutil.h"
#include "ailoop/proc/proc.h"
#include "ailoop/base/signals.h"
#include "unit.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

/* Runs `argv` with the given stdin (NULL: /dev/null) and no deadline. */
static int run(struct al_proc_result *r, const char *const *argv, const char *input,
	       size_t input_len)
{
	struct al_proc_spec spec = { .argv = argv, .input = input, .input_len = input_len };

	return al_proc_run(&spec, r);
}

static void setup(void)
{
	unit_hang_guard(30);
	unit_enter_tmpdir();
}

static void teardown(void)
{
	unit_leave_tmpdir();
}

TestSuite(proc, .init = setup, .fini = teardown);

#define SH(script) ((const char *const[]){ "sh", "-c", (script), NULL })

/* `len` bytes of text that never repeats with a short period. */
static char *pattern(size_t len)
{
	char *s = malloc(len + 1);

	cr_assert_not_null(s);
	for (size_t i = 0; i < len; i++)
		s[i] = (i % 61 == 60) ? '\n' : (char)('!' + (i * 7 + i / 61) % 90);
	s[len] = '\0';
	return s;
}

Test(proc, stdout_and_stderr_are_captured)
{
	struct al_proc_result r = AL_PROC_RESULT_INIT;

	cr_assert_eq(run(&r, SH("echo to-out; echo to-err >&2"), NULL, 0), 0);
	cr_assert_eq(r.exit_code, 0);
	cr_assert_str_eq(r.out.buf, "to-out\n", "out holds stdout only");
	cr_assert_not_null(strstr(r.log.buf, "to-out\n"), "log: [%s]", r.log.buf);
	cr_assert_not_null(strstr(r.log.buf, "to-err\n"), "log: [%s]", r.log.buf);
	cr_assert_eq(r.log.len, strlen("to-out\nto-err\n"));
	cr_assert_not(r.timed_out);
	cr_assert_not(r.interrupted);
	cr_assert_not(r.out_truncated);
	cr_assert_not(r.log_truncated);
	cr_assert_geq(r.duration_ms, 0);
	al_proc_result_release(&r);
}

/*
 * A child starts with every signal at its default action, but those
 * ignored as ailoop started (nohup, a shell's background job), which a
 * shell leaves ignored too; the ones ailoop ignores or handles itself go
 * back to the default.
 */
Test(proc, a_child_gets_default_signals_but_those_ignored_from_the_start)
{
	struct al_proc_result r;
	unsigned long long ignored;

	signal(SIGUSR1, SIG_IGN); /* as it was when ailoop started */
	signal(SIGPIPE, SIG_IGN); /* as ailoop sets it */
	signal(SIGINT, SIG_IGN);
	signal(SIGUSR2, SIG_DFL);
	cr_assert_eq(run(&r, SH("sed -n 's/^SigIgn:[[:space:]]*//p' /proc/self/status"), NULL, 0), 0);
	cr_assert_eq(r.exit_code, 0, "%s", r.log.buf);
	ignored = strtoull(r.out.buf, NULL, 16);
	cr_assert(ignored & (1ULL << (SIGUSR1 - 1)), "SIGUSR1 stays ignored: %s", r.out.buf);
	cr_assert_not(ignored & (1ULL << (SIGPIPE - 1)), "SIGPIPE: the default again");
	cr_assert_not(ignored & (1ULL << (SIGINT - 1)), "SIGINT: the default again");
	cr_assert_not(ignored & (1ULL << (SIGUSR2 - 1)), "SIGUSR2: the default");
	al_proc_result_release(&r);
}

Test(proc, exit_codes_and_signals)
{
	struct al_proc_result r = AL_PROC_RESULT_INIT;

	cr_assert_eq(run(&r, SH("exit 7"), NULL, 0), 0, "a failing child is not an error");
	cr_assert_eq(r.exit_code, 7);
	al_proc_result_release(&r);

	r = (struct al_proc_result)AL_PROC_RESULT_INIT;
	cr_assert_eq(run(&r, (const char *const[]){ "false", NULL }, NULL, 0), 0);
	cr_assert_eq(r.exit_code, 1);
	al_proc_result_release(&r);

	r = (struct al_proc_result)AL_PROC_RESULT_INIT;
	cr_assert_eq(run(&r, SH("kill -USR1 $$"), NULL, 0), 0);
	cr_assert_eq(r.exit_code, 128 + SIGUSR1);
	cr_assert_not(r.timed_out);
	al_proc_result_release(&r);
}

Test(proc, a_missing_program_exits_127_with_a_note)
{
	struct al_proc_result r = AL_PROC_RESULT_INIT;

	cr_assert_eq(run(&r, (const char *const[]){ "ailoop-no-such-program", "x", NULL }, NULL,
			 0),
		     0);
	cr_assert_eq(r.exit_code, 127);
	cr_assert_not_null(strstr(r.log.buf, "ailoop-no-such-program"), "log: [%s]", r.log.buf);
	cr_assert_str_eq(r.out.buf, "");
	al_proc_result_release(&r);

	r = (struct al_proc_result)AL_PROC_RESULT_INIT;
	cr_assert_eq(run(&r, (const char *const[]){ "/nonexistent/dir/prog", NULL }, NULL, 0), 0);
	cr_assert_eq(r.exit_code, 127);
	cr_assert_not_null(strstr(r.log.buf, "/nonexistent/dir/prog"), "log: [%s]", r.log.buf);
	al_proc_result_release(&r);
}

Test(proc, stdin_is_delivered_exactly)
{
	static const char input[] = "line one\n  'quoted' \"double\" $(echo no) `no`\n\ttab\0nul";
	struct al_proc_result r = AL_PROC_RESULT_INIT;

	cr_assert_eq(run(&r, (const char *const[]){ "cat", NULL }, input, sizeof(input) - 1), 0);
	cr_assert_eq(r.exit_code, 0);
	cr_assert_eq(r.out.len, sizeof(input) - 1);
	cr_assert(!memcmp(r.out.buf, input, sizeof(input) - 1));
	al_proc_result_release(&r);

	/* no input: stdin is /dev/null, not the test's own */
	r = (struct al_proc_result)AL_PROC_RESULT_INIT;
	cr_assert_eq(run(&r, (const char *const[]){ "wc", "-c", NULL }, NULL, 0), 0);
	cr_assert_eq(atoi(r.out.buf), 0);
	al_proc_result_release(&r);

	/* an empty input is an empty stdin, closed at once */
	r = (struct al_proc_result)AL_PROC_RESULT_INIT;
	cr_assert_eq(run(&r, (const char *const[]){ "wc", "-c", NULL }, "", 0), 0);
	cr_assert_eq(atoi(r.out.buf), 0);
	al_proc_result_release(&r);
}

Test(proc, several_mib_of_stdin_go_through_cat)
{
	size_t len = 6u << 20;
	char *input = pattern(len);
	struct al_proc_result r = AL_PROC_RESULT_INIT;

	cr_assert_eq(run(&r, (const char *const[]){ "cat", NULL }, input, len), 0);
	cr_assert_eq(r.exit_code, 0);
	cr_assert_eq(r.out.len, len);
	cr_assert(!memcmp(r.out.buf, input, len), "stdout differs from stdin");
	cr_assert_not(r.out_truncated);
	free(input);
	al_proc_result_release(&r);
}

Test(proc, a_child_that_never_reads_stdin_does_not_hang)
{
	size_t len = 4u << 20;
	char *input = pattern(len);
	struct al_proc_result r = AL_PROC_RESULT_INIT;

	cr_assert_eq(run(&r, SH("echo ignored"), input, len), 0);
	cr_assert_eq(r.exit_code, 0);
	cr_assert_str_eq(r.out.buf, "ignored\n");
	al_proc_result_release(&r);

	/* alive for a while with a full pipe, then gone */
	r = (struct al_proc_result)AL_PROC_RESULT_INIT;
	cr_assert_eq(run(&r, SH("sleep 0.2; exit 3"), input, len), 0);
	cr_assert_eq(r.exit_code, 3);
	al_proc_result_release(&r);

	/* reads a little, then closes stdin and goes on */
	r = (struct al_proc_result)AL_PROC_RESULT_INIT;
	cr_assert_eq(run(&r, SH("head -c 5; exec 0<&-; sleep 0.1; echo ' end'"), input, len), 0);
	cr_assert_eq(r.exit_code, 0);
	cr_assert_eq(r.out.len, 5 + strlen(" end\n"));
	cr_assert(!memcmp(r.out.buf, input, 5));
	free(input);
	al_proc_result_release(&r);
}

Test(proc, children_get_default_signal_handling)
{
	struct al_proc_result r = AL_PROC_RESULT_INIT;

	/* ailoop ignores SIGPIPE and handles SIGINT; its children must not */
	al_signals_install();
	cr_assert_eq(run(&r, SH("yes | head -n 1"), NULL, 0), 0);
	cr_assert_eq(r.exit_code, 0);
	cr_assert_str_eq(r.out.buf, "y\n", "out: [%s]", r.out.buf);
	cr_assert_null(strstr(r.log.buf, "Broken pipe"), "log: [%s]", r.log.buf);
	al_proc_result_release(&r);
}

Test(proc, env_entries_replace_and_add_variables)
{
	const char *env[] = { "AILOOP_T_OLD=new value", "AILOOP_T_NEW=$(added)", NULL };
	struct al_proc_spec spec = {
		.argv = SH("printf '%s|%s|%s\\n' \"$AILOOP_T_OLD\" \"$AILOOP_T_NEW\" "
			   "\"$AILOOP_T_KEPT\"; env | grep -c '^AILOOP_T_OLD='"),
		.env = env,
	};
	struct al_proc_result r = AL_PROC_RESULT_INIT;

	setenv("AILOOP_T_OLD", "old", 1);
	setenv("AILOOP_T_OLDER", "untouched", 1); /* a longer name, same prefix */
	setenv("AILOOP_T_KEPT", "kept", 1);
	cr_assert_eq(al_proc_run(&spec, &r), 0);
	cr_assert_str_eq(r.out.buf, "new value|$(added)|kept\n1\n");
	al_proc_result_release(&r);

	r = (struct al_proc_result)AL_PROC_RESULT_INIT;
	spec.argv = SH("echo \"$AILOOP_T_OLDER\"");
	cr_assert_eq(al_proc_run(&spec, &r), 0);
	cr_assert_str_eq(r.out.buf, "untouched\n");
	cr_assert_str_eq(getenv("AILOOP_T_OLD"), "old", "the parent's environment is unchanged");
	al_proc_result_release(&r);
}

Test(proc, a_deadline_stops_the_child_with_sigterm)
{
	struct al_proc_spec spec = { .argv = (const char *const[]){ "sleep", "100", NULL },
				     .grace_ms = 200 };
	struct al_proc_result r = AL_PROC_RESULT_INIT;
	int64_t start = al_now_ms();

	spec.deadline_ms = start + 300;
	cr_assert_eq(al_proc_run(&spec, &r), 0);
	cr_assert(r.timed_out);
	cr_assert_not(r.interrupted);
	cr_assert_eq(r.exit_code, 128 + SIGTERM);
	cr_assert_geq(al_now_ms() - start, 290);
	cr_assert_lt(al_now_ms() - start, 5000);
	cr_assert_geq(r.duration_ms, 290);
	cr_assert_lt(r.duration_ms, 5000);
	al_proc_result_release(&r);
}

Test(proc, a_child_that_ignores_sigterm_is_killed_after_the_grace)
{
	struct al_proc_spec spec = { .argv = SH("trap '' TERM; echo ready; sleep 100; echo no"),
				     .grace_ms = 200 };
	struct al_proc_result r = AL_PROC_RESULT_INIT;
	int64_t start = al_now_ms();

	spec.deadline_ms = start + 300;
	cr_assert_eq(al_proc_run(&spec, &r), 0);
	cr_assert(r.timed_out);
	cr_assert_eq(r.exit_code, 128 + SIGKILL);
	cr_assert_str_eq(r.out.buf, "ready\n");
	cr_assert_geq(al_now_ms() - start, 490, "killed before the grace ran out");
	cr_assert_lt(al_now_ms() - start, 5000);
	al_proc_result_release(&r);
}

Test(proc, a_deadline_already_past_still_runs_and_stops)
{
	struct al_proc_spec spec = { .argv = (const char *const[]){ "sleep", "100", NULL },
				     .grace_ms = 100 };
	struct al_proc_result r = AL_PROC_RESULT_INIT;

	spec.deadline_ms = al_now_ms() - 1;
	cr_assert_eq(al_proc_run(&spec, &r), 0);
	cr_assert(r.timed_out);
	cr_assert_eq(r.exit_code, 128 + SIGTERM);
	al_proc_result_release(&r);
}

Test(proc, a_background_grandchild_does_not_outlive_the_step)
{
	struct al_proc_result r = AL_PROC_RESULT_INIT;
	int64_t start = al_now_ms();
	pid_t pid;

	cr_assert_eq(run(&r, SH("sleep 100 & echo $!"), NULL, 0), 0);
	cr_assert_eq(r.exit_code, 0);
	pid = (pid_t)atol(r.out.buf);
	cr_assert_gt(pid, 1, "out: [%s]", r.out.buf);
	cr_assert_lt(al_now_ms() - start, 5000);
	errno = 0;
	cr_assert_eq(kill(pid, 0), -1, "grandchild %ld still exists", (long)pid);
	cr_assert_eq(errno, ESRCH, "grandchild %ld is a zombie or alive", (long)pid);
	al_proc_result_release(&r);
}

Test(proc, a_grandchild_with_closed_pipes_is_stopped_too)
{
	struct al_proc_result r = AL_PROC_RESULT_INIT;
	pid_t pid;

	cr_assert_eq(run(&r, SH("sleep 100 >/dev/null 2>&1 & echo $!"), NULL, 0), 0);
	pid = (pid_t)atol(r.out.buf);
	cr_assert_gt(pid, 1, "out: [%s]", r.out.buf);
	errno = 0;
	cr_assert_eq(kill(pid, 0), -1, "grandchild %ld still exists", (long)pid);
	cr_assert_eq(errno, ESRCH);
	al_proc_result_release(&r);
}

/* `len` bytes of pattern through cat: out keeps all, log the last 1 MiB. */
static void check_log_tail(size_t len)
{
	char *input = pattern(len);
	struct al_proc_result r = AL_PROC_RESULT_INIT;

	cr_assert_eq(run(&r, (const char *const[]){ "cat", NULL }, input, len), 0);
	cr_assert_eq(r.out.len, len);
	cr_assert(!memcmp(r.out.buf, input, len));
	cr_assert_not(r.out_truncated);
	cr_assert(r.log_truncated, "%zu bytes of output", len);
	cr_assert_eq(r.log.len, AL_PROC_LOG_MAX, "log of %zu bytes for %zu bytes of output",
		     r.log.len, len);
	cr_assert(!memcmp(r.log.buf, input + len - AL_PROC_LOG_MAX, AL_PROC_LOG_MAX),
		  "the log is not the tail of the output");
	free(input);
	al_proc_result_release(&r);
}

Test(proc, a_large_stdout_keeps_the_last_mib_in_the_log)
{
	check_log_tail(AL_PROC_LOG_MAX + 1);
	check_log_tail(AL_PROC_LOG_MAX + AL_PROC_LOG_MAX / 2);
	check_log_tail(3 * AL_PROC_LOG_MAX + 12345);
}

Test(proc, a_log_of_exactly_one_mib_is_whole)
{
	char *input = pattern(AL_PROC_LOG_MAX);
	struct al_proc_result r = AL_PROC_RESULT_INIT;

	cr_assert_eq(run(&r, (const char *const[]){ "cat", NULL }, input, AL_PROC_LOG_MAX), 0);
	cr_assert_eq(r.log.len, AL_PROC_LOG_MAX);
	cr_assert_not(r.log_truncated);
	free(input);
	al_proc_result_release(&r);
}

Test(proc, stdout_past_the_memory_limit_is_cut_and_flagged)
{
	struct al_proc_result r = AL_PROC_RESULT_INIT;
	char cmd[64];

	snprintf(cmd, sizeof(cmd), "head -c %u /dev/zero", AL_PROC_OUT_MAX + 4096);
	cr_assert_eq(run(&r, SH(cmd), NULL, 0), 0);
	cr_assert_eq(r.exit_code, 0);
	cr_assert_eq(r.out.len, AL_PROC_OUT_MAX);
	cr_assert(r.out_truncated);
	cr_assert_eq(r.log.len, AL_PROC_LOG_MAX);
	cr_assert(r.log_truncated);
	al_proc_result_release(&r);
}

Test(proc, run_all_of_nothing_returns_at_once)
{
	cr_assert_eq(al_proc_run_all(NULL, NULL, 0), 0);
}

Test(proc, run_all_runs_the_children_at_the_same_time)
{
	/* each one creates its file, then waits for the other two */
	static const char script[] =
		"touch \"$AILOOP_T_DIR/$1\"; "
		"while ! [ -e \"$AILOOP_T_DIR/a\" ] || ! [ -e \"$AILOOP_T_DIR/b\" ] || "
		"! [ -e \"$AILOOP_T_DIR/c\" ]; do sleep 0.01; done; echo \"$1 saw all\"";
	static const char *const names[3] = { "a", "b", "c" };
	struct al_proc_spec specs[3];
	struct al_proc_result res[3] = { AL_PROC_RESULT_INIT, AL_PROC_RESULT_INIT,
					 AL_PROC_RESULT_INIT };
	const char *argv[3][6];
	char env[PATH_MAX + 16];
	const char *envv[] = { env, NULL };
	int64_t deadline;

	snprintf(env, sizeof(env), "AILOOP_T_DIR=%s", unit_dir);
	/* run one after the other, the first would wait until its deadline */
	deadline = al_now_ms() + 4000;
	for (int i = 0; i < 3; i++) {
		argv[i][0] = "sh";
		argv[i][1] = "-c";
		argv[i][2] = script;
		argv[i][3] = "sh";
		argv[i][4] = names[i];
		argv[i][5] = NULL;
		specs[i] = (struct al_proc_spec){ .argv = argv[i], .env = envv,
						  .deadline_ms = deadline, .grace_ms = 100 };
	}
	cr_assert_eq(al_proc_run_all(specs, res, 3), 0);
	for (int i = 0; i < 3; i++) {
		char want[32];

		snprintf(want, sizeof(want), "%s saw all\n", names[i]);
		cr_assert_not(res[i].timed_out, "child %s waited in vain", names[i]);
		cr_assert_eq(res[i].exit_code, 0, "child %s", names[i]);
		cr_assert_str_eq(res[i].out.buf, want);
		al_proc_result_release(&res[i]);
	}
}

Test(proc, run_all_keeps_going_when_one_program_is_missing)
{
	struct al_proc_spec specs[2] = {
		{ .argv = (const char *const[]){ "ailoop-no-such-program", NULL } },
		{ .argv = SH("echo fine") },
	};
	struct al_proc_result res[2] = { AL_PROC_RESULT_INIT, AL_PROC_RESULT_INIT };

	cr_assert_eq(al_proc_run_all(specs, res, 2), 0);
	cr_assert_eq(res[0].exit_code, 127);
	cr_assert_eq(res[1].exit_code, 0);
	cr_assert_str_eq(res[1].out.buf, "fine\n");
	al_proc_result_release(&res[0]);
	al_proc_result_release(&res[1]);
}

static void count_tick(void *data)
{
	(*(int *)data)++;
}

Test(proc, tick_is_called_while_waiting)
{
	int ticks = 0;
	struct al_proc_spec spec = { .argv = SH("sleep 0.1"), .tick = count_tick,
				     .tick_data = &ticks };
	struct al_proc_result r = AL_PROC_RESULT_INIT;

	cr_assert_eq(al_proc_run(&spec, &r), 0);
	cr_assert_geq(ticks, 1);
	al_proc_result_release(&r);
}

Test(proc, an_interrupt_stops_the_children)
{
	/* the child interrupts ailoop (its parent) itself */
	struct al_proc_spec spec = { .argv = SH("kill -INT $PPID; sleep 100"), .grace_ms = 200 };
	struct al_proc_result r = AL_PROC_RESULT_INIT;
	int64_t start = al_now_ms();

	al_signals_install();
	cr_assert_eq(al_proc_run(&spec, &r), AL_EINTR);
	cr_assert(r.interrupted);
	cr_assert_not(r.timed_out);
	cr_assert_eq(r.exit_code, 128 + SIGTERM);
	cr_assert_lt(al_now_ms() - start, 5000);
	al_proc_result_release(&r);
}

Test(proc, an_interrupt_before_the_call_starts_no_child)
{
	/* a Ctrl-C between two agents: the next one is not started at all */
	struct al_proc_spec spec = { .argv = SH("touch started") };
	struct al_proc_result r = AL_PROC_RESULT_INIT;

	al_signals_install();
	raise(SIGINT);
	cr_assert_eq(al_proc_run(&spec, &r), AL_EINTR);
	cr_assert(r.interrupted);
	cr_assert_not(al_file_exists("started"));
	al_proc_result_release(&r);
}

Test(proc, a_process_detached_with_setsid_is_stopped_and_named)
{
	struct al_proc_result r = AL_PROC_RESULT_INIT;
	struct al_strbuf pid = AL_STRBUF_INIT;

	cr_assert_eq(run(&r, SH("setsid sh -c 'echo $$ >detached; exec sleep 100' >/dev/null 2>&1 &"
				"while [ ! -s detached ]; do sleep 0.01; done"), NULL, 0), 0);
	cr_assert_eq(r.strays, 1, "log: %s", r.log.buf);
	cr_assert_eq(al_strbuf_read_file(&pid, "detached", 0), 0);
	errno = 0;
	cr_assert_eq(kill((pid_t)atol(pid.buf), 0), -1, "detached %s still exists", pid.buf);
	cr_assert_eq(errno, ESRCH);
	cr_assert(strstr(r.log.buf, "ailoop: stopped process "), "log: %s", r.log.buf);
	al_strbuf_release(&pid);
	al_proc_result_release(&r);
}

Test(proc, an_agent_that_leaves_nothing_has_no_strays)
{
	struct al_proc_result r = AL_PROC_RESULT_INIT;

	cr_assert_eq(run(&r, SH("sleep 100 & true"), NULL, 0), 0);
	cr_assert_eq(r.strays, 0, "a child in the agent's group is not a stray");
	al_proc_result_release(&r);
}

/* Starts `sleep 100` with `env`, not through al_proc; returns its pid. */
static pid_t start_sleep(char *const env[])
{
	pid_t pid = fork();

	cr_assert_geq(pid, 0);
	if (pid == 0) {
		execve("/bin/sleep", (char *const[]){ "sleep", "100", NULL }, env);
		_exit(127);
	}
	return pid;
}

static unsigned long long start_time(pid_t pid)
{
	struct al_strbuf sb = AL_STRBUF_INIT;
	char path[64];
	unsigned long long start = 0;

	snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
	cr_assert_eq(al_strbuf_read_file(&sb, path, 0), 0);
	cr_assert_eq(sscanf(strrchr(sb.buf, ')') + 2, "%*c %*s %*s %*s %*s %*s %*s %*s %*s %*s "
			    "%*s %*s %*s %*s %*s %*s %*s %*s %*s %llu", &start), 1);
	al_strbuf_release(&sb);
	return start;
}

Test(proc, kill_recorded_stops_recorded_processes_only)
{
	char *const env[] = { "AILOOP_RUN_DIR=/x/run", NULL };
	char *const keyed_env[] = { "AILOOP_RUN_DIR=/x/run", "AILOOP_AGENT_KEY=0123abcd", NULL };
	char *const other_key[] = { "AILOOP_RUN_DIR=/x/run", "AILOOP_AGENT_KEY=0123abce", NULL };
	pid_t agent = start_sleep(env), other = start_sleep(env), stale = start_sleep(env);
	pid_t unrecorded = start_sleep(keyed_env), forged = start_sleep(other_key);
	struct al_strbuf rec = AL_STRBUF_INIT;

	usleep(50000); /* exec'd: the start time is the process's, not the fork's */
	al_strbuf_addf(&rec, "key 0123abcd\n%ld %llu\n%ld %llu\n", (long)agent, start_time(agent),
		       (long)stale, start_time(stale) + 1);
	cr_assert_eq(al_write_atomic("agents", rec.buf, rec.len), 0);
	cr_assert_eq(al_proc_kill_recorded("agents", "AILOOP_RUN_DIR=/x/run"), 2);
	cr_assert_eq(waitpid(agent, NULL, WNOHANG), agent, "the recorded agent was stopped");
	cr_assert_eq(waitpid(unrecorded, NULL, WNOHANG), unrecorded,
		     "an agent with the recorded key was stopped, its pid not recorded yet");
	cr_assert_eq(kill(other, 0), 0, "a process with the run in its environment is not ours");
	cr_assert_eq(kill(forged, 0), 0, "nor one with another key");
	cr_assert_eq(kill(stale, 0), 0, "a pid recorded with another start time is another process");
	cr_assert_not(al_file_exists("agents"), "the record is removed");
	cr_assert_eq(al_proc_kill_recorded("agents", "AILOOP_RUN_DIR=/x/run"), 0);
	kill(other, SIGKILL);
	kill(stale, SIGKILL);
	kill(forged, SIGKILL);
	waitpid(other, NULL, 0);
	waitpid(stale, NULL, 0);
	waitpid(forged, NULL, 0);
	al_strbuf_release(&rec);
}

Test(proc, in_path_finds_executables_only)
{
	char path[PATH_MAX + 32];

	unit_write("bin/tool", "#!/bin/sh\n");
	unit_write("bin/data", "not a program\n");
	unit_mkdirs("bin/adir/");
	cr_assert_eq(chmod("bin/tool", 0755), 0);
	cr_assert_eq(chmod("bin/adir", 0755), 0);
	snprintf(path, sizeof(path), "/nonexistent:%s/bin", unit_dir);
	setenv("PATH", path, 1);

	cr_assert(al_proc_in_path("tool"));
	cr_assert_not(al_proc_in_path("data"), "not executable");
	cr_assert_not(al_proc_in_path("adir"), "a directory");
	cr_assert_not(al_proc_in_path("sh"), "sh is not in this PATH");
	cr_assert(al_proc_in_path("/bin/sh"), "a path is not looked up");
	cr_assert(al_proc_in_path("./bin/tool"));
	cr_assert_not(al_proc_in_path("./bin/data"));
	cr_assert_not(al_proc_in_path("/nonexistent/tool"));
	cr_assert_not(al_proc_in_path("ailoop-no-such-program"));
}
