#include "ailoop/proc/proc.h"
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

extern char **environ;

struct child {
	const struct al_proc_spec *spec;
	struct al_proc_result *res;
	pid_t pid;
	int pidfd;           /* -1: poll waitid() in slices instead */
	int out_fd, err_fd, in_fd;
	size_t in_off;
	bool exited;         /* main process is a zombie, not yet reaped */
	bool done;           /* reaped, pipes closed */
	int64_t start;
	int64_t deadline;    /* when it is stopped; 0 = none (yet) */
	bool started;        /* spec->started seen (or none to wait for) */
	int64_t kill_at;     /* when SIGTERM turns into SIGKILL; 0 = not pending */
	bool killed;         /* SIGKILL sent: the grace is over */
	int64_t drain_until; /* after exit: stop waiting for pipes held by strays */
};

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* What /proc/<pid>/stat says of a process. */
struct pstat {
	char state;              /* 'Z' for a zombie */
	pid_t ppid, pgid;
	unsigned long long start; /* field 22: start time, in clock ticks since boot */
};

static bool read_stat(pid_t pid, struct pstat *out)
{
	char path[64], buf[1024], *p;
	long ppid, pgid;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	/* the name may hold anything, ')' too: the fields follow its last ')' */
	if (!(p = strrchr(buf, ')')) ||
	    sscanf(p + 1, " %c %ld %ld %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s "
		   "%*s %*s %llu", &out->state, &ppid, &pgid, &out->start) != 4)
		return false;
	out->ppid = (pid_t)ppid;
	out->pgid = (pid_t)pgid;
	return true;
}

struct pids {
	pid_t *v;
	size_t n, alloc;
};

static void pids_add(struct pids *l, pid_t pid)
{
	for (size_t i = 0; i < l->n; i++)
		if (l->v[i] == pid)
			return;
	AL_GROW(l->v, l->n + 1, l->alloc);
	l->v[l->n++] = pid;
}

static bool pids_has(const struct pids *l, pid_t pid)
{
	for (size_t i = 0; l && i < l->n; i++)
		if (l->v[i] == pid)
			return true;
	return false;
}

static pid_t *all_pids(void);

/*
 * Adds the children of `pid` to `out`: from /proc/<pid>/task/<tid>/children,
 * or, on kernels without it, by a scan of every process's parent.
 */
static void add_children(struct pids *out, pid_t pid)
{
	char dir[64];
	struct dirent *e;
	bool listed = false;
	pid_t *all;
	DIR *d;

	snprintf(dir, sizeof(dir), "/proc/%ld/task", (long)pid);
	for (d = opendir(dir); d && (e = readdir(d));) {
		char path[400], buf[4096], *p, *end;
		ssize_t n;
		int fd;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s/children", dir, e->d_name);
		if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
			continue;
		listed = true;
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		buf[n > 0 ? n : 0] = '\0';
		for (p = buf;; p = end) {
			long child = strtol(p, &end, 10);

			if (end == p)
				break;
			pids_add(out, (pid_t)child);
		}
	}
	if (d)
		closedir(d);
	if (listed || !(all = all_pids()))
		return;
	for (size_t i = 0; all[i]; i++) {
		struct pstat ps;

		if (read_stat(all[i], &ps) && ps.ppid == pid)
			pids_add(out, all[i]);
	}
	free(all);
}

#define KEY_VAR "AILOOP_AGENT_KEY"

/*
 * "AILOOP_AGENT_KEY=<random hex>", the same for every agent this process
 * starts, and in its record of them: after a kill, resume knows what
 * ailoop started by it even where no pid was recorded yet (a kill between
 * the start and the record), and no process that merely names the run.
 */
static const char *agent_key(void)
{
	static char entry[sizeof(KEY_VAR) + 33];
	unsigned char bytes[16];

	if (!*entry) {
		if (getrandom(bytes, sizeof(bytes), 0) != (ssize_t)sizeof(bytes)) {
			uint64_t seed = (uint64_t)al_now_ms() ^ ((uint64_t)getpid() << 32);

			for (size_t i = 0; i < sizeof(bytes); i++, seed = seed * 6364136223846793005ULL + 1)
				bytes[i] = (unsigned char)(seed >> 56);
		}
		memcpy(entry, KEY_VAR "=", sizeof(KEY_VAR));
		for (size_t i = 0; i < sizeof(bytes); i++)
			snprintf(entry + sizeof(KEY_VAR) + 2 * i, 3, "%02x", bytes[i]);
	}
	return entry;
}

/*
 * The environment: ours, with the spec's NAME=value entries on top, and
 * the agent key for a recorded child.
 */
static char **make_env(const char *const *extra, bool keyed)
{
	size_t n = 0, k = 0, m = 0;
	char **env;

	while (environ[n])
		n++;
	while (extra && extra[m])
		m++;
	env = al_calloc(n + m + 2, sizeof(*env));
	for (size_t i = 0; i < n; i++) {
		const char *eq = strchr(environ[i], '=');
		size_t len = eq ? (size_t)(eq - environ[i]) + 1 : strlen(environ[i]);
		bool replaced = false;

		for (size_t j = 0; j < m && !replaced; j++)
			replaced = !strncmp(extra[j], environ[i], len);
		replaced |= keyed && !strncmp(environ[i], KEY_VAR "=", sizeof(KEY_VAR));
		if (!replaced)
			env[k++] = environ[i];
	}
	for (size_t j = 0; j < m; j++)
		env[k++] = (char *)extra[j];
	if (keyed)
		env[k++] = (char *)agent_key();
	return env;
}

/*
 * The path of a program named without a slash, looked up in PATH once:
 * posix_spawnp would try every PATH entry at every spawn. NULL if not found
 * (posix_spawnp then reports it as usual).
 */
static const char *resolve(const char *prog)
{
	static struct al_strmap cache = AL_STRMAP_INIT;
	static const char *cached_path;
	const char *path = getenv("PATH");
	char *found;

	if (strchr(prog, '/'))
		return prog;
	if (path != cached_path) { /* PATH changed: forget what was found */
		for (size_t i = 0; i < cache.cap; i++) {
			free((char *)cache.slots[i].key);
			free(cache.slots[i].val);
		}
		al_strmap_release(&cache);
		cached_path = path;
	}
	found = al_strmap_get(&cache, prog);
	if (found)
		return found;
	found = al_proc_find(prog);
	if (found)
		al_strmap_put(&cache, al_strdup(prog), found);
	return found;
}

static void spawn_failed(struct child *c, int err)
{
	al_strbuf_addf(&c->res->log, "ailoop: cannot run '%s': %s\n", c->spec->argv[0],
		       strerror(err));
	c->res->exit_code = 127;
	c->done = true;
}

/*
 * The signals a child gets at their default action: all but those ailoop
 * found ignored as it started (`nohup`, a shell's background job), which
 * stay ignored across the exec, as a shell leaves them. The ones ailoop
 * itself handles or ignores go back to the default whatever it found.
 * Named, each costs the child one system call before its exec: glibc asks
 * after every other one first, and then sets it again.
 */
static const sigset_t *child_defaults(void)
{
	static sigset_t defaults;
	static bool known;

	if (known)
		return &defaults;
	sigfillset(&defaults);
	for (int sig = 1; sig < NSIG; sig++) {
		struct sigaction sa;

		if (sig != SIGPIPE && sig != SIGINT && sig != SIGTERM && sig != SIGHUP &&
		    sigaction(sig, NULL, &sa) == 0 && sa.sa_handler == SIG_IGN)
			sigdelset(&defaults, sig);
	}
	known = true;
	return &defaults;
}

static int spawn(struct child *c)
{
	int out[2] = { -1, -1 }, err[2] = { -1, -1 }, in[2] = { -1, -1 }, rc = 0, e;
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t mask;
	const char *path;
	char **env;

	c->out_fd = c->err_fd = c->in_fd = c->pidfd = -1;
	c->start = al_now_ms();
	if (pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0 ||
	    (c->spec->input && pipe2(in, O_CLOEXEC) < 0)) {
		rc = al_err(AL_ERROR, "cannot create pipes: %s", strerror(errno));
		goto done;
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, out[1], 1);
	posix_spawn_file_actions_adddup2(&fa, err[1], 2);
	if (c->spec->input)
		posix_spawn_file_actions_adddup2(&fa, in[0], 0);
	else
		posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	if (c->spec->cwd)
		posix_spawn_file_actions_addchdir_np(&fa, c->spec->cwd);
	posix_spawnattr_init(&attr);
	sigemptyset(&mask);
	posix_spawnattr_setsigmask(&attr, &mask);
	posix_spawnattr_setsigdefault(&attr, child_defaults());
	/*
	 * A session of its own, which is a process group of its own too: no
	 * controlling terminal, so an agent that asks on /dev/tty (git for a
	 * password, an editor, a confirmation) fails at once instead of being
	 * stopped by the terminal, unseen, until its deadline or forever.
	 */
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK |
				 POSIX_SPAWN_SETSIGDEF);
	env = make_env(c->spec->env, c->spec->record != NULL);
	path = resolve(c->spec->argv[0]);
	if (path)
		e = posix_spawn(&c->pid, path, &fa, &attr, (char *const *)c->spec->argv, env);
	else
		e = posix_spawnp(&c->pid, c->spec->argv[0], &fa, &attr,
				 (char *const *)c->spec->argv, env);
	free(env);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	if (e) {
		if (e == ENOENT || e == EACCES || e == ENOEXEC || e == E2BIG)
			spawn_failed(c, e);
		else
			rc = al_err(AL_ERROR, "cannot start '%s': %s", c->spec->argv[0], strerror(e));
		goto done;
	}
	c->pidfd = (int)pidfd_open(c->pid, 0);
	c->out_fd = out[0];
	c->err_fd = err[0];
	out[0] = err[0] = -1;
	if (c->spec->input) {
		c->in_fd = in[1];
		in[1] = -1;
		fcntl(c->in_fd, F_SETFL, O_NONBLOCK);
	}
done:
	close_fd(&out[0]);
	close_fd(&out[1]);
	close_fd(&err[0]);
	close_fd(&err[1]);
	close_fd(&in[0]);
	close_fd(&in[1]);
	return rc;
}

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

/* Children ailoop had before it started any agent: not the agents' to answer for. */
static struct pids foreign;

/*
 * Once every agent of a batch has exited, kills what they left running out
 * of their process groups (setsid, a double fork). ailoop is a subreaper,
 * so those orphans are its children now, or below them: anything below
 * ailoop that is not one of the agents' zombies, nor in one of their groups
 * (check_exit killed those, al_proc_reap_group reaps them), is such a stray.
 * Returns how many; each is named in `log`.
 */
static int kill_strays(const struct child *cs, size_t n, struct al_strbuf *log)
{
	struct pids seen = { 0 };
	int found = 0;

	for (int64_t until = al_now_ms() + 2000; al_now_ms() < until;) {
		struct pids below = { 0 };
		struct timespec ms = { 0, 5000000 };
		bool left = false;

		add_children(&below, getpid());
		for (size_t i = 0; i < below.n; i++) { /* the list grows as it is walked */
			pid_t pid = below.v[i];
			bool agent = false, grouped = false;
			struct pstat ps;

			for (size_t k = 0; k < n; k++)
				agent |= cs[k].pid == pid;
			if (agent || pids_has(&foreign, pid) || !read_stat(pid, &ps))
				continue;
			add_children(&below, pid);
			for (size_t k = 0; k < n; k++)
				grouped |= cs[k].pid > 0 && ps.pgid == cs[k].pid;
			if (ps.state == 'Z') {
				if (ps.ppid == getpid())
					waitpid(pid, NULL, WNOHANG);
				continue;
			}
			if (grouped)
				continue;
			left = true;
			if (!pids_has(&seen, pid)) {
				char path[64], name[64] = "?";
				ssize_t len;
				int fd;

				pids_add(&seen, pid);
				found++;
				snprintf(path, sizeof(path), "/proc/%ld/comm", (long)pid);
				if ((fd = open(path, O_RDONLY | O_CLOEXEC)) >= 0) {
					len = read(fd, name, sizeof(name) - 1);
					name[len > 0 ? len : 0] = '\0';
					name[strcspn(name, "\n")] = '\0';
					close(fd);
				}
				al_strbuf_addf(log, "\nailoop: stopped process %ld (%s), which was left "
					       "running outside the agent's process group\n", (long)pid, name);
			}
			kill(pid, SIGKILL);
			if (ps.ppid == getpid())
				waitpid(pid, NULL, WNOHANG);
		}
		free(below.v);
		if (!left)
			break;
		nanosleep(&ms, NULL);
	}
	free(seen.v);
	return found;
}

/*
 * Writes the agent key ("key <hex>") and the agents' pids and start times,
 * for a resume after ailoop is killed; called before they start (the key,
 * written only the first time) and after. The file stays open and is
 * rewritten in place (down to the key once the agents are reaped): no file
 * is made or removed per step.
 */
static void record(const char *path, const struct child *cs, size_t n)
{
	static char *open_path;
	static int fd = -1;
	static off_t size = -1; /* what the file holds; -1: not known */
	struct al_strbuf sb = AL_STRBUF_INIT;

	if (!open_path || strcmp(open_path, path)) {
		if (fd >= 0)
			close(fd);
		free(open_path);
		open_path = al_strdup(path);
		fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644);
		size = -1;
	}
	al_strbuf_addf(&sb, "key %s\n", agent_key() + sizeof(KEY_VAR));
	if (!n && size == (off_t)sb.len) { /* the key alone, there already */
		al_strbuf_release(&sb);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		struct pstat ps;

		if (cs[i].pid > 0 && read_stat(cs[i].pid, &ps))
			al_strbuf_addf(&sb, "%ld %llu\n", (long)cs[i].pid, ps.start);
	}
	/*
	 * Best effort: without it a resume finds fewer leftovers. A truncation
	 * costs ext4 a journalled orphan-list update: only when it shrinks.
	 */
	if (fd >= 0) {
		if (pwrite(fd, sb.buf, sb.len, 0) != (ssize_t)sb.len ||
		    ((size < 0 || size > (off_t)sb.len) && ftruncate(fd, (off_t)sb.len) < 0))
			size = -1;
		else
			size = (off_t)sb.len;
	}
	al_strbuf_release(&sb);
}

int al_proc_run_all(const struct al_proc_spec *specs, struct al_proc_result *results, size_t n)
{
	struct child *cs = al_calloc(n, sizeof(*cs));
	int rc = 0, signals_seen = 0; /* one since the run started stops these too */
	static bool prepared;
	bool strays_done = false;
	size_t i;

	if (!prepared) {
		add_children(&foreign, getpid());
		/* without it (old kernels) orphans go to PID 1 */
		prctl(PR_SET_CHILD_SUBREAPER, 1);
		/* a child that stops reading its stdin must not kill us: EPIPE instead */
		signal(SIGPIPE, SIG_IGN);
		prepared = true;
	}

	for (i = 0; i < n; i++) {
		results[i] = (struct al_proc_result)AL_PROC_RESULT_INIT;
		results[i].interrupted = al_signals_count() > 0; /* then none is started */
		cs[i].spec = &specs[i];
		cs[i].res = &results[i];
		cs[i].deadline = specs[i].deadline_ms;
		cs[i].started = !specs[i].started;
	}
	if (al_signals_count()) {
		free(cs);
		return AL_EINTR;
	}
	if (n && specs[0].record)
		record(specs[0].record, cs, 0); /* the key, before any agent has it */
	/* what the step wrote so far survives a power loss before an agent acts on it */
	if (!al_durable_relaxed() && (rc = al_durable_point()) < 0) {
		free(cs);
		return rc;
	}
	for (i = 0; i < n; i++)
		if ((rc = spawn(&cs[i])) < 0)
			break;
	if (n && specs[0].record)
		record(specs[0].record, cs, n);
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
			results[0].strays = kill_strays(cs, n, &results[0].log);
			strays_done = true;
		}
	}
	idle_left = false;
	if (n && specs[0].record)
		record(specs[0].record, cs, 0); /* all reaped: the key alone */
	free(cs);
	if (rc < 0)
		return rc;
	for (i = 0; i < n; i++)
		if (results[i].interrupted)
			return AL_EINTR;
	return 0;
}

int al_proc_run(const struct al_proc_spec *spec, struct al_proc_result *result)
{
	return al_proc_run_all(spec, result, 1);
}

void al_proc_result_release(struct al_proc_result *r)
{
	al_strbuf_release(&r->out);
	al_strbuf_release(&r->log);
}

char *al_proc_find(const char *prog)
{
	const char *path = getenv("PATH"), *p;
	struct al_strbuf sb = AL_STRBUF_INIT;
	struct stat st;

	if (strchr(prog, '/'))
		return access(prog, X_OK) == 0 ? al_strdup(prog) : NULL;
	for (p = path ? path : "/usr/bin:/bin"; *p;) {
		size_t len = strcspn(p, ":");

		al_strbuf_reset(&sb);
		al_strbuf_addf(&sb, "%.*s/%s", (int)len, len ? p : ".", prog);
		if (stat(sb.buf, &st) == 0 && S_ISREG(st.st_mode) && access(sb.buf, X_OK) == 0)
			return al_strbuf_detach(&sb, NULL);
		p += len + (p[len] == ':');
	}
	al_strbuf_release(&sb);
	return NULL;
}

bool al_proc_in_path(const char *prog)
{
	char *found = al_proc_find(prog);

	free(found);
	return found != NULL;
}

static bool environ_has(pid_t pid, const char *entry)
{
	struct al_strbuf path = AL_STRBUF_INIT, env = AL_STRBUF_INIT;
	size_t len = strlen(entry);
	bool found = false;

	al_strbuf_addf(&path, "/proc/%ld/environ", (long)pid);
	if (al_strbuf_read_file(&env, path.buf, 0) == 0) {
		for (const char *p = env.buf; p < env.buf + env.len; p += strlen(p) + 1) {
			if (!strncmp(p, entry, len) && p[len] == '\0') {
				found = true;
				break;
			}
		}
	}
	al_strbuf_release(&path);
	al_strbuf_release(&env);
	return found;
}

/* Pids of /proc, or NULL without /proc. Caller frees; ends with 0. */
static pid_t *all_pids(void)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	pid_t *pids = NULL;
	size_t n = 0, alloc = 0;

	if (!d)
		return NULL;
	while ((e = readdir(d))) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);

		if (*end || pid <= 0)
			continue;
		AL_GROW(pids, n + 1, alloc);
		pids[n++] = (pid_t)pid;
	}
	closedir(d);
	AL_GROW(pids, n, alloc);
	pids[n] = 0;
	return pids;
}

/* Whether process `pid` is still the one that started at `start`, and alive. */
static bool same_process(pid_t pid, unsigned long long start)
{
	struct pstat ps;

	return read_stat(pid, &ps) && ps.start == start && ps.state != 'Z';
}

int al_proc_kill_recorded(const char *record, const char *entry)
{
	struct al_strbuf text = AL_STRBUF_INIT, key = AL_STRBUF_INIT;
	struct pids victims = { 0 }, recorded = { 0 };
	pid_t *all, me = getpid();
	int found;

	if (al_strbuf_read_file(&text, record, 0) < 0) {
		al_strbuf_release(&text);
		return 0; /* none recorded: no agent was at work */
	}
	for (const char *p = text.buf; *p;) {
		char *end;
		long pid = strtol(p, &end, 10);
		unsigned long long start = strtoull(end, &end, 10);

		if (!strncmp(p, "key ", 4) && !key.len) {
			end = (char *)p + 4 + strcspn(p + 4, "\n");
			al_strbuf_addf(&key, KEY_VAR "=%.*s", (int)(end - p - 4), p + 4);
		} else if (pid > 0 && (pid_t)pid != me) {
			pids_add(&recorded, (pid_t)pid);
			if (same_process((pid_t)pid, start))
				pids_add(&victims, (pid_t)pid);
		}
		p = end + strcspn(end, "\n");
		p += *p == '\n';
	}
	/* each recorded agent still alive, whatever is below it, and its group */
	for (size_t i = 0; i < victims.n; i++)
		add_children(&victims, victims.v[i]);
	all = all_pids();
	for (size_t i = 0; all && all[i]; i++) {
		struct pstat ps;

		/*
		 * The group of an agent that died before it, and whatever holds
		 * the key (an agent started but not recorded yet): ours only if
		 * it names the run too
		 */
		if (all[i] != me && !pids_has(&victims, all[i]) && read_stat(all[i], &ps) &&
		    ps.state != 'Z' && environ_has(all[i], entry) &&
		    (pids_has(&recorded, ps.pgid) || (key.len && environ_has(all[i], key.buf))))
			pids_add(&victims, all[i]);
	}
	free(all);
	for (size_t i = 0; i < victims.n; i++) {
		struct pstat ps;

		/*
		 * A recorded agent's group at once, first: a process forked
		 * since the walk above is in it, and the kernel lets nothing
		 * fork out of a group being killed.
		 */
		if (read_stat(victims.v[i], &ps) && pids_has(&recorded, ps.pgid))
			kill(-ps.pgid, SIGKILL);
		kill(victims.v[i], SIGKILL);
	}
	found = (int)victims.n;
	/* wait (at most 2 s) until they are gone: dead, or zombies of another parent */
	for (int64_t until = al_now_ms() + 2000; al_now_ms() < until;) {
		struct timespec ms = { 0, 5000000 };
		bool left = false;

		for (size_t i = 0; i < victims.n && !left; i++) {
			struct pstat ps;

			left = read_stat(victims.v[i], &ps) && ps.state != 'Z';
		}
		if (!left)
			break;
		nanosleep(&ms, NULL);
	}
	unlink(record);
	free(victims.v);
	free(recorded.v);
	al_strbuf_release(&text);
	al_strbuf_release(&key);
	return found;
}

bool al_proc_remove_unheld(const char *path)
{
	return !al_proc_file_in_use(path) && unlink(path) == 0;
}

bool al_proc_file_in_use(const char *path)
{
	struct stat target;
	bool used = false;
	pid_t *pids;

	if (stat(path, &target) < 0)
		return false; /* no file: nobody holds it, and no walk of /proc */
	pids = all_pids();
	for (size_t i = 0; pids && pids[i] && !used; i++) {
		struct al_strbuf dir = AL_STRBUF_INIT;
		struct dirent *e;
		DIR *d;

		al_strbuf_addf(&dir, "/proc/%ld/fd", (long)pids[i]);
		d = opendir(dir.buf);
		while (d && (e = readdir(d)) && !used) {
			struct al_strbuf fd = AL_STRBUF_INIT;
			struct stat st;

			al_strbuf_addf(&fd, "%s/%s", dir.buf, e->d_name);
			used = stat(fd.buf, &st) == 0 && st.st_dev == target.st_dev &&
			       st.st_ino == target.st_ino;
			al_strbuf_release(&fd);
		}
		if (d)
			closedir(d);
		al_strbuf_release(&dir);
	}
	free(pids);
	return used;
}
