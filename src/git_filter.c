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
#include "ailoop/strbuf.h"
#include "ailoop/util.h"

#include <git2.h>
#include <git2/sys/filter.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define FILTER_NAME "ailoop-driver"

extern char **environ;

/* What check() finds for a file, for stream() */
struct driver {
	char *name, *command; /* command NULL: none (a required driver's error) */
	bool required;
};

struct driver_stream {
	git_writestream base;
	git_writestream *next;
	struct driver d;
	char *path, *workdir, *gitdir;
	bool clean;
	struct al_strbuf in; /* the content, whole: the command reads it from a file */
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

static bool write_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = write(fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		buf += n;
		len -= (size_t)n;
	}
	return true;
}

/*
 * Runs the command on the content, its output into `out_fd`; its exit
 * status (-1: could not be run). In a process group of its own, so that a
 * Ctrl-C meant for the run does not fail the commit it is part of, with
 * no signal blocked or ignored whatever ailoop's own state.
 */
static int run_command(struct driver_stream *ds, int out_fd)
{
	char *line = with_path(ds->d.command, ds->path);
	char *argv[] = { "sh", "-c", line, NULL };
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t none, all;
	int in_fd = scratch(ds->gitdir), status = -1;
	pid_t pid;

	if (in_fd < 0 || !write_all(in_fd, ds->in.buf ? ds->in.buf : "", ds->in.len) ||
	    lseek(in_fd, 0, SEEK_SET) < 0) {
		if (in_fd >= 0)
			close(in_fd);
		free(line);
		return -1;
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, in_fd, 0);
	posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
	posix_spawn_file_actions_addchdir_np(&fa, ds->workdir);
	posix_spawnattr_init(&at);
	posix_spawnattr_setpgroup(&at, 0);
	sigemptyset(&none);
	sigfillset(&all);
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setsigdefault(&at, &all);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
					      POSIX_SPAWN_SETSIGDEF);
	if (posix_spawn(&pid, "/bin/sh", &fa, &at, argv, environ) == 0) {
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
		status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	}
	posix_spawnattr_destroy(&at);
	posix_spawn_file_actions_destroy(&fa);
	close(in_fd);
	free(line);
	return status;
}

/*
 * The command's output to the next stream, once it is all read (a command
 * that fails half way gives the content as it was, nothing of its own);
 * *failed: 0, or how the command failed (its exit status; -1, not run or
 * not read).
 */
static int filtered(struct driver_stream *ds, int *failed)
{
	struct al_strbuf out = AL_STRBUF_INIT;
	int out_fd = scratch(ds->gitdir), rc = 0;
	ssize_t n = 0;

	*failed = out_fd < 0 ? -1 : run_command(ds, out_fd);
	if (*failed == 0 && lseek(out_fd, 0, SEEK_SET) != 0)
		*failed = -1;
	if (*failed == 0) {
		do {
			al_strbuf_grow(&out, 65536);
			n = read(out_fd, out.buf + out.len, 65536);
			if (n > 0)
				al_strbuf_setlen(&out, out.len + (size_t)n);
		} while (n > 0 || (n < 0 && errno == EINTR));
		if (n < 0)
			*failed = -1;
		else if (out.len)
			rc = ds->next->write(ds->next, out.buf, out.len);
	}
	if (out_fd >= 0)
		close(out_fd);
	al_strbuf_release(&out);
	return rc;
}

static int stream_write(git_writestream *s, const char *buf, size_t len)
{
	al_strbuf_add(&((struct driver_stream *)s)->in, buf, len);
	return 0;
}

static int stream_close(git_writestream *s)
{
	struct driver_stream *ds = (struct driver_stream *)s;
	int rc = 0, failed = -1;

	if (ds->d.command)
		rc = filtered(ds, &failed);
	if (rc == 0 && failed && ds->d.required) {
		char *msg = al_xprintf("the %s filter '%s' of '%s' %s", ds->clean ? "clean" : "smudge",
				       ds->d.name, ds->path,
				       !ds->d.command ? "has no command"
				       : failed < 0   ? "could not be run"
						      : "failed");

		git_error_set_str(GIT_ERROR_FILTER, msg);
		free(msg);
		return -1;
	}
	if (rc == 0 && failed && ds->in.len) /* not required: the content as it was */
		rc = ds->next->write(ds->next, ds->in.buf, ds->in.len);
	if (rc == 0)
		rc = ds->next->close(ds->next);
	return rc;
}

static void stream_free(git_writestream *s)
{
	struct driver_stream *ds = (struct driver_stream *)s;

	al_strbuf_release(&ds->in);
	free(ds->d.name);
	free(ds->d.command);
	free(ds->path);
	free(ds->workdir);
	free(ds->gitdir);
	free(ds);
}

static char *config_string(git_repository *repo, const char *driver, const char *key)
{
	git_config *cfg = NULL;
	git_buf value = GIT_BUF_INIT;
	char *name = al_xprintf("filter.%s.%s", driver, key), *out = NULL;

	if (git_repository_config_snapshot(&cfg, repo) == 0 &&
	    git_config_get_string_buf(&value, cfg, name) == 0 && value.size)
		out = al_strdup(value.ptr);
	git_buf_dispose(&value);
	git_config_free(cfg);
	free(name);
	return out;
}

static bool config_bool(git_repository *repo, const char *driver, const char *key)
{
	git_config *cfg = NULL;
	char *name = al_xprintf("filter.%s.%s", driver, key);
	int value = 0;

	if (git_repository_config_snapshot(&cfg, repo) == 0 &&
	    git_config_get_bool(&value, cfg, name) < 0)
		value = 0;
	git_config_free(cfg);
	free(name);
	return value;
}

static int check(git_filter *self, void **payload, const git_filter_source *src,
		 const char **attr_values)
{
	const char *name = attr_values[0];
	git_repository *repo = git_filter_source_repo(src);
	bool clean = git_filter_source_mode(src) == GIT_FILTER_TO_ODB;
	struct driver *d;
	char *command;
	bool required;

	(void)self;
	if (!repo || !git_repository_workdir(repo) || GIT_ATTR_IS_TRUE(name) ||
	    GIT_ATTR_IS_FALSE(name) || GIT_ATTR_IS_UNSPECIFIED(name))
		return GIT_PASSTHROUGH;
	command = config_string(repo, name, clean ? "clean" : "smudge");
	required = config_bool(repo, name, "required");
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
