#include "ailoop/proc/proc.h"
#include "proc_int.h"
#include "ailoop/base/fsutil.h"
#include "ailoop/base/signals.h"
#include "ailoop/base/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/random.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
/* Cuts the log down to its last AL_PROC_LOG_MAX bytes. */
static void trim_log(struct al_proc_result *r)
{
	size_t drop;

	if (r->log.len <= AL_PROC_LOG_MAX)
		return;
	drop = r->log.len - AL_PROC_LOG_MAX;
	memmove(r->log.buf, r->log.buf + drop, AL_PROC_LOG_MAX);
	al_strbuf_setlen(&r->log, AL_PROC_LOG_MAX);
	r->log_truncated = true;
}

/* Keeps the head of stdout and, in `log`, the tail of everything. */
static void take(struct child *c, const char *buf, size_t n, bool is_stdout)
{
	struct al_proc_result *r = c->res;

	if (is_stdout) {
		size_t room = AL_PROC_OUT_MAX - r->out.len;

		al_strbuf_add(&r->out, buf, n < room ? n : room);
		if (n > room)
			r->out_truncated = true;
	}
	al_strbuf_add(&r->log, buf, n);
	if (r->log.len > 2 * AL_PROC_LOG_MAX) /* trimmed in bulk, and once more at the end */
		trim_log(r);
}

static void drain(struct child *c, int *fd, bool is_stdout)
{
	char buf[65536];
	ssize_t n = read(*fd, buf, sizeof(buf));

	if (n > 0)
		take(c, buf, (size_t)n, is_stdout);
	else if (n == 0 || (errno != EINTR && errno != EAGAIN))
		close_fd(fd);
}

static void feed(struct child *c)
{
	const struct al_proc_spec *s = c->spec;
	ssize_t n = write(c->in_fd, s->input + c->in_off, s->input_len - c->in_off);

	if (n > 0)
		c->in_off += (size_t)n;
	if ((n < 0 && errno != EAGAIN && errno != EINTR) || c->in_off >= s->input_len)
		close_fd(&c->in_fd); /* all written, or the child closed its stdin */
}

static void signal_group(struct child *c, int sig)
{
	if (c->pid > 0 && !c->done)
		kill(-c->pid, sig);
}

static void stop(struct child *c, int64_t now)
{
	if (c->exited || c->kill_at)
		return;
	signal_group(c, SIGTERM);
	c->kill_at = now + (c->spec->grace_ms ? c->spec->grace_ms : AL_PROC_GRACE_MS);
}

static void check_exit(struct child *c, int64_t now)
{
	siginfo_t info;

	if (c->exited)
		return;
	memset(&info, 0, sizeof(info));
	/* WNOWAIT leaves a zombie: its pid, so its group id, cannot be reused yet */
	if (waitid(P_PID, (id_t)c->pid, &info, WEXITED | WNOHANG | WNOWAIT) < 0 ||
	    info.si_pid != c->pid)
		return;
	c->exited = true;
	c->drain_until = now + 2000;
	/*
	 * Strays the agent left behind in its group are killed; while it is
	 * being stopped they have the rest of its grace: a shell's `sh -c`
	 * dies of SIGTERM at once, the program it ran may take seconds to
	 * save its work (reap() waits for them).
	 */
	if (c->kill_at && !c->killed) {
		if (c->kill_at > c->drain_until)
			c->drain_until = c->kill_at;
	} else {
		signal_group(c, SIGKILL);
	}
}

/*
 * What is left of a stopped agent's group after its leader exited: until
 * it is gone, the grace ends (then SIGKILL) or a second signal says now.
 */
static void wait_group(pid_t pgid, int64_t until)
{
	struct timespec ms = { 0, 10000000 };

	while (kill(-pgid, 0) == 0 && al_now_ms() < until && al_signals_count() < 2) {
		while (waitpid(-pgid, NULL, WNOHANG) > 0)
			;
		nanosleep(&ms, NULL);
	}
	kill(-pgid, SIGKILL);
}

/* (proc.h) When this returns, no process of the agent can touch the tree. */
void al_proc_reap_group(pid_t pgid)
{
	int64_t until = al_now_ms() + 2000;
	struct timespec ms = { 0, 1000000 };

	while (kill(-pgid, 0) == 0 && al_now_ms() < until) {
		while (waitpid(-pgid, NULL, WNOHANG) > 0)
			;
		nanosleep(&ms, NULL);
	}
}

static void reap(struct child *c, int64_t now)
{
	int status;

	while (waitpid(c->pid, &status, 0) < 0 && errno == EINTR)
		;
	if (c->kill_at && !c->killed)
		wait_group(c->pid, c->kill_at);
	al_proc_reap_group(c->pid);
	if (WIFEXITED(status))
		c->res->exit_code = WEXITSTATUS(status);
	else if (WIFSIGNALED(status))
		c->res->exit_code = 128 + WTERMSIG(status);
	c->res->duration_ms = now - c->start;
	trim_log(c->res);
	close_fd(&c->pidfd);
	close_fd(&c->in_fd);
	close_fd(&c->out_fd);
	close_fd(&c->err_fd);
	c->done = true;
}

static int64_t next_wakeup(const struct child *cs, size_t n, int64_t now)
{
	int64_t wake = now + 1000;

	for (size_t i = 0; i < n; i++) {
		const struct child *c = &cs[i];

		if (c->done)
			continue;
		if (c->deadline && !c->kill_at && !c->exited && c->deadline < wake)
			wake = c->deadline;
		if (c->kill_at && c->kill_at < wake)
			wake = c->kill_at;
		if (c->exited && c->drain_until < wake)
			wake = c->drain_until;
		if (c->pidfd < 0 && !c->exited && now + 20 < wake)
			wake = now + 20;
	}
	return wake;
}

/* al_proc_set_idle(): the work, and whether some is left in this batch */
static bool (*idle_work)(void *arg, bool fresh);
static void *idle_arg;
static bool idle_left, idle_fresh;

void al_proc_set_idle(bool (*work)(void *arg, bool fresh), void *arg)
{
	idle_work = work;
	idle_arg = arg;
	idle_left = false;
}

/* One round of the loop: wait for something, then react to it. */
static void step(struct child *cs, size_t n, int *signals_seen)
{
	struct pollfd fds[4 * n + 1];
	struct child *owner[4 * n + 1];
	int kind[4 * n + 1];
	int64_t now = al_now_ms(), wake;
	size_t m = 0;
	int timeout, ready;

	for (size_t i = 0; i < n; i++) {
		struct child *c = &cs[i];
		int *fd[4] = { &c->out_fd, &c->err_fd, &c->in_fd, &c->pidfd };

		if (c->done)
			continue;
		for (int k = 0; k < 4; k++) {
			if (*fd[k] < 0 || (k == 3 && c->exited))
				continue;
			fds[m].fd = *fd[k];
			fds[m].events = k == 2 ? POLLOUT : POLLIN;
			owner[m] = c;
			kind[m++] = k;
		}
	}
	if (al_signals_fd() >= 0) {
		fds[m].fd = al_signals_fd();
		fds[m].events = POLLIN;
		owner[m] = NULL;
		kind[m++] = -1;
	}
	wake = next_wakeup(cs, n, now);
	timeout = wake > now ? (int)(wake - now) : 0;
	ready = poll(fds, m, idle_left ? 0 : timeout);
	if (ready < 0 && errno != EINTR)
		return;
	if (ready == 0 && idle_left) { /* nothing to answer: a piece of the idle work */
		idle_left = idle_work(idle_arg, idle_fresh);
		idle_fresh = false;
		return;
	}
	now = al_now_ms();
	for (size_t i = 0; i < m; i++) {
		struct child *c = owner[i];

		if (!fds[i].revents)
			continue;
		switch (kind[i]) {
		case 0: drain(c, &c->out_fd, true); break;
		case 1: drain(c, &c->err_fd, false); break;
		case 2: feed(c); break;
		case 3: check_exit(c, now); break;
		default: al_signals_drain(); break;
		}
	}
	if (al_signals_count() > *signals_seen) {
		bool force = al_signals_count() >= 2;

		*signals_seen = al_signals_count();
		for (size_t i = 0; i < n; i++) {
			if (cs[i].done)
				continue;
			cs[i].res->interrupted = true;
			if (force)
				signal_group(&cs[i], SIGKILL);
			else
				stop(&cs[i], now);
		}
	}
	for (size_t i = 0; i < n; i++) {
		struct child *c = &cs[i];

		if (c->done)
			continue;
		if (c->pidfd < 0)
			check_exit(c, now);
		if (!c->started && access(c->spec->started, F_OK) == 0) {
			int64_t from_start = now + c->spec->timeout_ms;

			c->started = true;
			if (!c->deadline || from_start < c->deadline)
				c->deadline = from_start;
		}
		if (c->deadline && now >= c->deadline && !c->exited && !c->kill_at) {
			c->res->timed_out = true;
			stop(c, now);
		}
		if (c->kill_at && now >= c->kill_at && !c->exited) {
			signal_group(c, SIGKILL);
			c->killed = true;
			c->kill_at = now + 60000;
		}
		if (c->exited && (c->out_fd < 0 && c->err_fd < 0 ? true : now >= c->drain_until))
			reap(c, now);
	}
	if (cs[0].spec->tick)
		cs[0].spec->tick(cs[0].spec->tick_data);
}


int al_proc_run_all(const struct al_proc_spec *specs, struct al_proc_result *results, size_t n)
{
	struct child *cs = al_calloc(n, sizeof(*cs));
	/* one since the run started stops these too, but for a hook at its end */
	int rc = 0, signals_seen = n && specs[0].after_interrupt ? al_signals_count() : 0;
	static bool prepared;
	bool strays_done = false;
	size_t i;

	if (!prepared) {
		proc_note_foreign();
		/* without it (old kernels) orphans go to PID 1 */
		prctl(PR_SET_CHILD_SUBREAPER, 1);
		/* a child that stops reading its stdin must not kill us: EPIPE instead */
		signal(SIGPIPE, SIG_IGN);
		prepared = true;
	}

	for (i = 0; i < n; i++) {
		results[i] = (struct al_proc_result)AL_PROC_RESULT_INIT;
		results[i].interrupted = al_signals_count() > signals_seen; /* then none is started */
		cs[i].spec = &specs[i];
		cs[i].res = &results[i];
		cs[i].deadline = specs[i].deadline_ms;
		cs[i].started = !specs[i].started;
	}
	if (al_signals_count() > signals_seen) {
		free(cs);
		return AL_EINTR;
	}
	if (n && specs[0].record)
		proc_record(specs[0].record, cs, 0); /* the key, before any agent has it */
	/* what the step wrote so far survives a power loss before an agent acts on it */
	if (!al_durable_relaxed() && (rc = al_durable_point()) < 0) {
		free(cs);
		return rc;
	}
	for (i = 0; i < n; i++)
		if ((rc = proc_spawn(&cs[i])) < 0)
			break;
	if (n && specs[0].record)
		proc_record(specs[0].record, cs, n);
	al_close_deferred(); /* while they work */
	idle_left = rc == 0 && n && idle_work;
	idle_fresh = true;
	if (rc == 0 && n) { /* a crash while agents are at work */
		char point[300];

		snprintf(point, sizeof(point), "running %s", specs[0].name ? specs[0].name
									   : specs[0].argv[0]);
		al_crash_point(point);
	}
	if (rc < 0) { /* stop the ones already started */
		for (size_t k = 0; k < i; k++)
			if (!cs[k].done)
				signal_group(&cs[k], SIGKILL);
	}
	for (;;) {
		bool all_done = true;

		for (size_t k = 0; k < n; k++)
			all_done &= cs[k].done || (rc < 0 && !cs[k].pid);
		if (all_done)
			break;
		step(cs, n, &signals_seen);
		all_done = !strays_done;
		for (size_t k = 0; k < n; k++)
			all_done &= cs[k].exited || cs[k].done || !cs[k].pid;
		if (all_done) { /* before the step counts as finished */
			results[0].strays = proc_kill_strays(cs, n, &results[0].log);
			strays_done = true;
		}
	}
	idle_left = false;
	if (n && specs[0].record)
		proc_record(specs[0].record, cs, 0); /* all reaped: the key alone */
	free(cs);
	if (rc < 0)
		return rc;
	for (i = 0; i < n; i++)
		if (results[i].interrupted)
			return AL_EINTR;
	return 0;
}
