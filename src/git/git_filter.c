/*
 * The repository's filter drivers: the `filter` attribute names a driver,
 * whose `filter.<driver>.clean` command git runs on a file's content as it
 * is added, and `smudge` as it is checked out (Git LFS is one: the clean
 * command stores the content aside and gives git a pointer). libgit2 runs
 * no such command, so without this ailoop would commit such a file's
 * content where `git add` commits its pointer, and check out the pointer
 * where git writes the content. As git does: the command runs with `sh`,
 * in the work tree, `%f` replaced by the file's path quoted; a driver
 * without the command passes the content through, and so does one whose
 * command fails, unless `filter.<driver>.required` is set, which makes
 * either an error. (`process`, git's long-running form, is not spoken: Git
 * LFS configures `clean` and `smudge` beside it.)
 */
#include "git_repo.h"
#include "ailoop/base/fsutil.h"
#include "ailoop/proc/proc.h"
#include "ailoop/base/signals.h"
#include "ailoop/base/strbuf.h"
#include "ailoop/base/util.h"

#include <git2.h>
#include <git2/sys/filter.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#define FILTER_NAME AL_GIT_DRIVER_FILTER

extern char **environ;

/* What check() finds for a file, for stream() */
struct driver {
	char *name, *command; /* command NULL: none (a required driver's error) */
	bool required;
};

/*
 * The content goes to a file as it comes, the command's output to another,
 * and that file on to the next stream: a file of gigabytes (what Git LFS
 * holds) never is in memory.
 */
struct driver_stream {
	git_writestream base;
	git_writestream *next;
	struct driver d;
	char *path, *workdir, *gitdir;
	bool clean;      /* to the object store (else to the work tree: smudge) */
	int in_fd;       /* the content; -1: the scratch file could not be made */
	int in_errno;    /* why the content could not be kept there; 0: it is */
	char said[4096]; /* the start of what the command wrote to stderr */
	size_t said_len;
	bool stopped; /* killed as ailoop was interrupted */
};

/* `text` with each %f replaced by `path` in single quotes, as git quotes it. */
static char *with_path(const char *text, const char *path)
{
	struct al_strbuf sb = AL_STRBUF_INIT;

	for (const char *p = text; *p; p++) {
		if (p[0] != '%' || p[1] != 'f') {
			al_strbuf_add(&sb, p, 1);
			continue;
		}
		al_strbuf_adds(&sb, "'");
		for (const char *q = path; *q; q++)
			if (*q == '\'')
				al_strbuf_adds(&sb, "'\\''");
			else
				al_strbuf_addch(&sb, *q);
		al_strbuf_adds(&sb, "'");
		p++;
	}
	return al_strbuf_detach(&sb, NULL);
}

/* A file of the git directory, gone from it at once: it is ours while open. */
static int scratch(const char *gitdir)
{
	char *path = al_xprintf("%sailoop-filter-XXXXXX", gitdir);
	int fd = mkostemp(path, O_CLOEXEC);

	if (fd >= 0)
		unlink(path);
	free(path);
	return fd;
}

/*
 * The environment of a command: ailoop's, with git's terminal prompts off.
 * A driver that needs credentials (git-lfs fetching an object) fails at
 * once instead of waiting for an answer nobody is there to type.
 */
static char **command_env(void)
{
	size_t n = 0, k = 0;
	char **env;

	while (environ[n])
		n++;
	env = al_calloc(n + 2, sizeof(*env));
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], "GIT_TERMINAL_PROMPT=", 20))
			env[k++] = environ[i];
	env[k] = "GIT_TERMINAL_PROMPT=0";
	return env;
}

/* Keeps the start of what the command says in ds->said. */
static void keep_said(struct driver_stream *ds, const char *buf, size_t n)
{
	size_t room = sizeof(ds->said) - ds->said_len;

	if (n > room)
		n = room;
	memcpy(ds->said + ds->said_len, buf, n);
	ds->said_len += n;
}

/* AL_PROC_GRACE_MS after ailoop was first interrupted (0: it was not) */
static int64_t stop_at;
static bool stopped_any; /* a driver was stopped so */

bool al_git_filters_stopped(void)
{
	return stopped_any;
}

/* Whether an interrupt of ailoop stops the driver now; *wait: ms until it does. */
static bool stop_now(int *wait)
{
	int signals = al_signals_count();
	int64_t now = al_now_ms();

	*wait = -1;
	if (!signals)
		return false;
	if (!stop_at)
		stop_at = now + AL_PROC_GRACE_MS;
	if (signals > 1 || now >= stop_at)
		return true;
	*wait = (int)(stop_at - now);
	return false;
}

/*
 * Reads what the command says until it has exited. An interrupt of ailoop
 * gives the drivers AL_PROC_GRACE_MS more to finish (a second one, none);
 * then the command's session is killed and ds->stopped set: the commit
 * fails, and the run pauses as at any interrupt, instead of waiting on a
 * driver that hangs.
 */
static void wait_command(struct driver_stream *ds, pid_t pid, int err_fd)
{
	int pidfd = (int)pidfd_open(pid, 0), wait;
	char buf[4096];
	ssize_t n;

	while (pidfd >= 0) {
		struct pollfd p[2] = { { .fd = err_fd, .events = POLLIN },
				       { .fd = pidfd, .events = POLLIN } };

		if (!ds->stopped && stop_now(&wait)) {
			kill(-pid, SIGKILL);
			ds->stopped = stopped_any = true;
		}
		if (poll(p, 2, ds->stopped ? -1 : wait) < 0 && errno != EINTR)
			break;
		if (p[0].revents) {
			n = read(err_fd, buf, sizeof(buf));
			if (n > 0)
				keep_said(ds, buf, (size_t)n);
			else if (n == 0 || errno != EINTR)
				err_fd = -1; /* its end: poll ignores it from now on */
		}
		if (p[1].revents) {
			/* it has exited (not yet reaped: its group is still its own): what
			 * it left running goes, and what it said is in the pipe, read below */
			kill(-pid, SIGKILL);
			break;
		}
	}
	if (pidfd >= 0)
		close(pidfd);
	/* the rest, to its end (without a pidfd, all of it: the command's end) */
	while (err_fd >= 0 && ((n = read(err_fd, buf, sizeof(buf))) > 0 ||
			       (n < 0 && errno == EINTR)))
		if (n > 0)
			keep_said(ds, buf, (size_t)n);
}

/*
 * Runs the command on the content, its output into `out_fd`; its exit
 * status (-1: could not be run). What it says on stderr comes through a
 * pipe (a file could not hold it on a full disk, when it matters most),
 * read to its end, its start kept in ds->said. In a session of its own,
 * so that a Ctrl-C meant for the run does not fail the commit it is part
 * of, with no terminal to ask anything on, and with no signal blocked or
 * ignored whatever ailoop's own state.
 */
static int run_command(struct driver_stream *ds, int out_fd)
{
	char *line = with_path(ds->d.command, ds->path);
	char *argv[] = { "sh", "-c", line, NULL }, **env = command_env();
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t none, all;
	int status = -1, err[2];
	pid_t pid;

	/* what it leaves running becomes ailoop's to kill and reap, as an agent's does */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	if (pipe2(err, O_CLOEXEC) < 0) {
		free(env);
		free(line);
		return -1;
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, ds->in_fd, 0);
	posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
	posix_spawn_file_actions_adddup2(&fa, err[1], 2);
	posix_spawn_file_actions_addchdir_np(&fa, ds->workdir);
	posix_spawnattr_init(&at);
	sigemptyset(&none);
	sigfillset(&all);
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setsigdefault(&at, &all);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK |
					      POSIX_SPAWN_SETSIGDEF);
	if (posix_spawn(&pid, "/bin/sh", &fa, &at, argv, env) == 0) {
		close(err[1]);
		err[1] = -1;
		wait_command(ds, pid, err[0]);
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
		al_proc_reap_group(pid); /* what it left running, killed: no zombie stays */
		status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	}
	posix_spawnattr_destroy(&at);
	posix_spawn_file_actions_destroy(&fa);
	close(err[0]);
	if (err[1] >= 0)
		close(err[1]);
	free(env);
	free(line);
	return status;
}

/*
 * The file from its start to the next stream: 0, the next stream's error,
 * or 1 if the file could not be read.
 */
static int pass_on(int fd, git_writestream *next)
{
	char buf[65536];
	ssize_t n;
	int rc = 0;

	if (lseek(fd, 0, SEEK_SET) != 0)
		return 1;
	while (rc == 0 && ((n = read(fd, buf, sizeof(buf))) > 0 || (n < 0 && errno == EINTR)))
		if (n > 0)
			rc = next->write(next, buf, (size_t)n);
	return rc == 0 && n < 0 ? 1 : rc;
}

/* The driver's failure, as libgit2's error: the commit (or checkout) stops with it. */
static int driver_error(const struct driver_stream *ds, const char *how)
{
	char *msg = al_xprintf("the %s filter '%s' of '%s' %s", ds->clean ? "clean" : "smudge",
			       ds->d.name, ds->path, how);

	git_error_set_str(GIT_ERROR_FILTER, msg);
	free(msg);
	return -1;
}

/*
 * What a failed command said: a full disk's words make its failure the
 * machine's (an error, as for ailoop's own writes: the run pauses, and
 * resumes once there is room); anything else goes to stderr, as git shows
 * it. Returns the full disk's words, or NULL.
 */
static const char *said(const struct driver_stream *ds, int status)
{
	const char *full = al_says_disk_full(ds->said, ds->said_len);

	if (!full)
		fprintf(stderr, "ailoop: the %s filter '%s' of '%s' failed (exit status %d)%s%.*s",
			ds->clean ? "clean" : "smudge", ds->d.name, ds->path, status,
			ds->said_len ? ":\n" : "\n", (int)ds->said_len, ds->said);
	return full;
}

/*
 * The command's output to the next stream (pass_on's result); *failed: 0,
 * or how the command failed (its exit status; -1: not run). *full: the
 * words a command that failed for want of room said.
 */
static int filtered(struct driver_stream *ds, int *failed, const char **full)
{
	int out_fd = scratch(ds->gitdir), rc = 0;

	*full = NULL;
	*failed = out_fd < 0 || ds->in_errno || lseek(ds->in_fd, 0, SEEK_SET) != 0
			  ? -1
			  : run_command(ds, out_fd);
	if (*failed == 0)
		rc = pass_on(out_fd, ds->next);
	else if (*failed > 0 && !ds->stopped)
		*full = said(ds, *failed);
	if (out_fd >= 0)
		close(out_fd);
	return rc;
}

static int stream_write(git_writestream *s, const char *buf, size_t len)
{
	struct driver_stream *ds = (struct driver_stream *)s;

	if (!ds->in_errno && al_write_all(ds->in_fd, buf, len) < 0)
		ds->in_errno = errno; /* the command is not run: the driver fails */
	return 0;
}

static int stream_close(git_writestream *s)
{
	struct driver_stream *ds = (struct driver_stream *)s;
	const char *full = NULL;
	int rc = 0, failed = -1;

	if (ds->d.command)
		rc = filtered(ds, &failed, &full);
	if (rc == 0 && ds->stopped) /* never the content unfiltered in its place */
		return driver_error(ds, "was stopped: ailoop was interrupted");
	if (rc == 0 && full) {
		char *how = al_xprintf("failed: it says \"%s\"", full);

		rc = driver_error(ds, how);
		free(how);
		return rc;
	}
	if (rc == 0 && failed && ds->d.required)
		return driver_error(ds, !ds->d.command ? "has no command"
					: failed < 0   ? "could not be run"
						       : "failed");
	if (rc == 0 && failed) /* not required: the content as it was */
		rc = ds->in_errno ? 1 : pass_on(ds->in_fd, ds->next);
	if (rc == 1) {
		char *how = al_xprintf("could not be run: its input and output files in the git "
				       "directory: %s", strerror(ds->in_errno ? ds->in_errno : errno));

		rc = driver_error(ds, how);
		free(how);
	}
	if (rc == 0)
		rc = ds->next->close(ds->next);
	return rc;
}

static void stream_free(git_writestream *s)
{
	struct driver_stream *ds = (struct driver_stream *)s;

	if (ds->in_fd >= 0)
		close(ds->in_fd);
	free(ds->d.name);
	free(ds->d.command);
	free(ds->path);
	free(ds->workdir);
	free(ds->gitdir);
	free(ds);
}

/* filter.<driver>.<key> of `cfg` (a snapshot: one read of the configuration a file) */
static char *config_string(git_config *cfg, const char *driver, const char *key)
{
	git_buf value = GIT_BUF_INIT;
	char *name = al_xprintf("filter.%s.%s", driver, key), *out = NULL;

	if (cfg && git_config_get_string_buf(&value, cfg, name) == 0 && value.size)
		out = al_strdup(value.ptr);
	git_buf_dispose(&value);
	free(name);
	return out;
}

static bool config_bool(git_config *cfg, const char *driver, const char *key)
{
	char *name = al_xprintf("filter.%s.%s", driver, key);
	int value = 0;

	if (!cfg || git_config_get_bool(&value, cfg, name) < 0)
		value = 0;
	free(name);
	return value;
}

static int check(git_filter *self, void **payload, const git_filter_source *src,
		 const char **attr_values)
{
	const char *name = attr_values[0];
	git_repository *repo = git_filter_source_repo(src);
	bool clean = git_filter_source_mode(src) == GIT_FILTER_TO_ODB;
	git_config *cfg = NULL;
	struct driver *d;
	char *command;
	bool required;

	(void)self;
	if (!repo || !git_repository_workdir(repo) || GIT_ATTR_IS_TRUE(name) ||
	    GIT_ATTR_IS_FALSE(name) || GIT_ATTR_IS_UNSPECIFIED(name))
		return GIT_PASSTHROUGH;
	if (git_repository_config_snapshot(&cfg, repo) < 0)
		cfg = NULL;
	command = config_string(cfg, name, clean ? "clean" : "smudge");
	required = config_bool(cfg, name, "required");
	git_config_free(cfg);
	if (!command && !required)
		return GIT_PASSTHROUGH; /* no such driver here: git leaves the content as it is */
	d = al_calloc(1, sizeof(*d));
	d->name = al_strdup(name);
	d->command = command;
	d->required = required;
	*payload = d;
	return 0;
}

static int stream(git_writestream **out, git_filter *self, void **payload,
		  const git_filter_source *src, git_writestream *next)
{
	struct driver_stream *ds = al_calloc(1, sizeof(*ds));
	const struct driver *d = *payload;
	git_repository *repo = git_filter_source_repo(src);

	(void)self;
	ds->base.write = stream_write;
	ds->base.close = stream_close;
	ds->base.free = stream_free;
	ds->next = next;
	ds->d.name = al_strdup(d->name);
	ds->d.command = d->command ? al_strdup(d->command) : NULL;
	ds->d.required = d->required;
	ds->path = al_strdup(git_filter_source_path(src));
	ds->workdir = al_strdup(git_repository_workdir(repo));
	ds->gitdir = al_strdup(git_repository_path(repo));
	ds->in_fd = scratch(ds->gitdir);
	ds->in_errno = ds->in_fd < 0 ? errno : 0;
	ds->clean = git_filter_source_mode(src) == GIT_FILTER_TO_ODB;
	*out = &ds->base;
	return 0;
}

static void cleanup(git_filter *self, void *payload)
{
	struct driver *d = payload;

	(void)self;
	if (d) {
		free(d->name);
		free(d->command);
		free(d);
	}
}

static git_filter driver_filter = {
	.version = GIT_FILTER_VERSION,
	.attributes = "filter",
	.check = check,
	.stream = stream,
	.cleanup = cleanup,
};

void al_git_filters_register(void)
{
	if (!git_filter_lookup(FILTER_NAME))
		git_filter_register(FILTER_NAME, &driver_filter, GIT_FILTER_DRIVER_PRIORITY);
}
