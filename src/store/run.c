#include "ailoop/store/run.h"
#include "ailoop/base/fsutil.h"
#include "ailoop/base/strbuf.h"
#include "ailoop/base/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static struct al_run *run_alloc(const char *id)
{
	struct al_run *run = al_calloc(1, sizeof(*run));
	char cwd[PATH_MAX];

	run->lock_fd = -1;
	run->events_fd = -1;
	run->dir = al_xprintf("%s/%s", AL_RUNS_DIR, id);
	run->abs_dir = al_xprintf("%s/%s", getcwd(cwd, sizeof(cwd)) ? cwd : ".", run->dir);
	run->state_path = al_xprintf("%s/run-state.md", run->dir);
	run->events_path = al_xprintf("%s/events.jsonl", run->dir);
	return run;
}

static char *dup_or_null(const char *s)
{
	return s ? al_strdup(s) : NULL;
}

/*
 * Keeps the files ailoop never commits out of `git status` too. A
 * .gitignore an older ailoop wrote lacks the newer entries: they are
 * added, and whatever else the user put there stays.
 */
static int ignore_unrecorded(void)
{
	static const char *const entries[] = AL_RUNS_UNRECORDED;
	const char *path = AL_RUNS_DIR "/.gitignore";
	struct al_strbuf sb = AL_STRBUF_INIT;
	size_t old;
	int rc = 0;

	if (al_strbuf_read_file(&sb, path, 0) < 0) {
		if (errno != ENOENT) {
			rc = al_err(AL_ERROR, "cannot read '%s': %s", path,
				    al_strbuf_read_strerror(errno));
			goto done;
		}
		al_strbuf_adds(&sb, "# ailoop: files of runs that stay out of history\n");
	}
	old = sb.len;
	for (size_t i = 0; i < sizeof(entries) / sizeof(*entries); i++) {
		if (al_has_line(sb.buf, entries[i]))
			continue;
		if (sb.len && sb.buf[sb.len - 1] != '\n')
			al_strbuf_addch(&sb, '\n');
		al_strbuf_addf(&sb, "%s\n", entries[i]);
	}
	if (sb.len != old || !al_file_exists(path))
		rc = al_write_atomic(path, sb.buf, sb.len);
done:
	al_strbuf_release(&sb);
	return rc;
}

/* The next number past `id`'s, if it is a run of that day (`prefix`: "run_<date>_"). */
static int past(const char *id, const char *prefix, int next)
{
	return al_starts_with(id, prefix) && atoi(id + strlen(prefix)) >= next
		       ? atoi(id + strlen(prefix)) + 1
		       : next;
}

/* One past today's highest run number, counting runs that died unborn and `taken`. */
static int next_number(const char *date, char *const *taken, size_t ntaken)
{
	char prefix[32];
	DIR *d = opendir(AL_RUNS_DIR);
	struct dirent *e;
	int next = 1;

	snprintf(prefix, sizeof(prefix), "run_%s_", date);
	while (d && (e = readdir(d)))
		next = past(e->d_name, prefix, next);
	if (d)
		closedir(d);
	for (size_t i = 0; i < ntaken; i++)
		next = past(taken[i], prefix, next);
	return next;
}

int al_run_create(struct al_run **out, const struct al_run_state *st, char *const *taken,
		  size_t ntaken)
{
	char date[16], now[32], *id = NULL, *dir;
	struct al_run *run;
	time_t t = time(NULL);
	struct tm tm;
	int next, rc;

	*out = NULL;
	localtime_r(&t, &tm);
	strftime(date, sizeof(date), "%Y%m%d", &tm);
	if ((rc = al_refuse_symlink(".ai-loop")) < 0 || (rc = al_refuse_symlink(AL_RUNS_DIR)) < 0 ||
	    (rc = al_mkdirs(AL_RUNS_DIR)) < 0 || (rc = ignore_unrecorded()) < 0)
		return rc;
	next = next_number(date, taken, ntaken);
	for (;; next++) { /* mkdir is the arbiter between two ailoops starting at once */
		free(id);
		id = al_xprintf("run_%s_%03d", date, next);
		dir = al_xprintf("%s/%s", AL_RUNS_DIR, id);
		rc = mkdir(dir, 0755);
		free(dir);
		if (rc == 0)
			break;
		if (errno != EEXIST) {
			rc = al_err(AL_ERROR, "cannot create the run directory: %s", strerror(errno));
			free(id);
			return rc;
		}
	}
	run = run_alloc(id);
	al_timestamp(now);
	run->st.run_id = id;
	run->st.status = al_strdup("running");
	run->st.task = al_strdup(st->task);
	run->st.flow = al_strdup(st->flow);
	run->st.flow_sha256 = dup_or_null(st->flow_sha256);
	run->st.flow_sha256_except_limits = dup_or_null(st->flow_sha256_except_limits);
	run->st.branch = dup_or_null(st->branch);
	run->st.base_branch = dup_or_null(st->base_branch);
	run->st.started_at = al_strdup(now);
	/* locked before its state exists: no resume can pick it up half made */
	if ((rc = al_run_lock(run)) < 0 || (rc = al_run_save(run)) < 0) {
		al_run_free(run);
		return rc;
	}
	*out = run;
	return 0;
}

int al_run_open(struct al_run **out, const char *id)
{
	struct al_run *run;
	int rc;

	*out = NULL;
	if (!*id || strchr(id, '/') || !strcmp(id, ".") || !strcmp(id, ".."))
		return al_err(AL_ENOTFOUND, "no run '%s'", id);
	run = run_alloc(id);
	if (!al_dir_exists(run->dir)) {
		al_run_free(run);
		return al_err(AL_ENOTFOUND, "no run '%s' in %s", id, AL_RUNS_DIR);
	}
	rc = al_run_state_read(&run->st, run->state_path);
	if (rc == AL_ENOTFOUND)
		rc = al_err(AL_EINVALID, "'%s' is missing: the run's state is lost", run->state_path);
	if (rc < 0) {
		al_run_free(run);
		return rc;
	}
	*out = run;
	return 0;
}

void al_run_free(struct al_run *run)
{
	if (!run)
		return;
	if (run->lock_fd >= 0)
		close(run->lock_fd);
	if (run->events_fd >= 0)
		close(run->events_fd);
	al_run_state_release(&run->st);
	free(run->dir);
	free(run->abs_dir);
	free(run->state_path);
	free(run->events_path);
	free(run);
}

/*
 * Whether `holder`, a lock's "ailoop pid N on HOST...", names a process of
 * this host that is gone. Its flock can outlive it for a moment: a child
 * it was starting holds the descriptor until its exec closes it, and a
 * parallel child until the parent's death reaches it (PR_SET_PDEATHSIG).
 */
static bool holder_gone(const char *holder)
{
	char host[256] = "localhost", named[256];
	long pid;

	if (sscanf(holder, "ailoop pid %ld on %255[^,\n]", &pid, named) != 2 || pid <= 0)
		return false;
	gethostname(host, sizeof(host) - 1);
	return !strcmp(named, host) && kill((pid_t)pid, 0) < 0 && errno == ESRCH;
}

/* How long the lock a gone holder left is waited for. */
#define HOLDER_GONE_WAIT_MS 5000

/*
 * The refusal of a lock held by `holder` (NULL: a process that names
 * nobody), for `what` and `id` ("run " and its id, or "the work tree").
 */
static int locked(const char *what, const char *id, const char *holder, const char *path)
{
	if (holder && holder_gone(holder))
		return al_err(AL_ELOCKED, "%s%s is locked by %s, which is gone: a process it "
			      "started holds the lock ('fuser -v %s' names it)", what, id, holder,
			      path);
	return al_err(AL_ELOCKED, "%s%s is locked by %s", what, id,
		      holder ? holder : "another process");
}

/* What the lock of run directory `dir` names while it is held, or NULL. */
static char *lock_named(const char *dir)
{
	struct al_strbuf path = AL_STRBUF_INIT, who = AL_STRBUF_INIT;
	int fd;
	char *holder = NULL;

	al_strbuf_addf(&path, "%s/lock", dir);
	fd = open(path.buf, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd >= 0 && flock(fd, LOCK_SH | LOCK_NB) < 0 && errno == EWOULDBLOCK) {
		if (al_strbuf_read_file(&who, path.buf, 4096) == 0)
			al_strbuf_rtrim(&who);
		holder = al_strdup(who.len ? who.buf : "another process");
	}
	if (fd >= 0)
		close(fd);
	al_strbuf_release(&path);
	al_strbuf_release(&who);
	return holder;
}

char *al_run_lock_holder(const char *dir)
{
	char *holder = lock_named(dir);

	if (holder && holder_gone(holder)) { /* what it left lets go in a moment */
		free(holder);
		holder = NULL;
	}
	return holder;
}

/*
 * flock on <dir>/lock. Two details make it exact: a holder unlinks the file
 * before it lets go, so a lock taken on an unlinked file is taken again on
 * the current one; and a `status` that peeks (a brief shared lock) is
 * waited out rather than mistaken for a holder.
 */
static int take_lock(const char *path, int *out)
{
	for (int attempt = 0; attempt < 20; attempt++) {
		struct stat held, named;
		int fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);

		if (fd < 0 && errno == ELOOP) /* never truncate what a link points to */
			return al_err(AL_ENOTFOUND, "'%s' is a symbolic link: a run's lock must be a "
				      "file of its own", path);
		if (fd < 0)
			return al_err(AL_ERROR, "cannot open '%s': %s", path, strerror(errno));
		if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
			struct timespec ms = { 0, 5000000 };

			close(fd);
			if (errno != EWOULDBLOCK)
				return al_err(AL_ERROR, "cannot lock '%s': %s", path, strerror(errno));
			nanosleep(&ms, NULL);
			continue;
		}
		if (fstat(fd, &held) == 0 && stat(path, &named) == 0 && held.st_ino == named.st_ino &&
		    held.st_dev == named.st_dev) {
			*out = fd;
			return 0;
		}
		close(fd); /* the file was replaced while we waited: lock the new one */
	}
	return AL_ELOCKED;
}

int al_run_lock(struct al_run *run)
{
	struct al_strbuf path = AL_STRBUF_INIT, me = AL_STRBUF_INIT;
	char host[256] = "localhost";
	int fd = -1, rc;

	al_strbuf_addf(&path, "%s/lock", run->dir);
	/* the run's state must be written in the repository, not through a link */
	if ((rc = al_refuse_symlink(".ai-loop")) < 0 || (rc = al_refuse_symlink(AL_RUNS_DIR)) < 0 ||
	    (rc = al_refuse_symlink(run->dir)) < 0)
		goto done;
	for (int64_t until = al_now_ms() + HOLDER_GONE_WAIT_MS;
	     (rc = take_lock(path.buf, &fd)) == AL_ELOCKED;) {
		struct timespec ms = { 0, 10000000 };
		char *holder = lock_named(run->dir);

		if (!holder && al_now_ms() < until)
			continue; /* let go since take_lock() tried: again */
		if (!holder || !holder_gone(holder) || al_now_ms() >= until) {
			rc = locked("run ", run->st.run_id, holder, path.buf);
			free(holder);
			break;
		}
		free(holder);
		nanosleep(&ms, NULL);
	}
	if (rc < 0)
		goto done;
	/* a dead holder's flock is gone with it: its pid in the file is stale */
	gethostname(host, sizeof(host) - 1);
	al_strbuf_addf(&me, "ailoop pid %ld on %s\n", (long)getpid(), host);
	if (ftruncate(fd, 0) < 0 || pwrite(fd, me.buf, me.len, 0) != (ssize_t)me.len) {
		rc = al_err(AL_ERROR, "cannot write '%s': %s", path.buf, strerror(errno));
		close(fd);
		goto done;
	}
	run->lock_fd = fd;
	rc = ignore_unrecorded(); /* again for a resume: the run may be older */
done:
	al_strbuf_release(&path);
	al_strbuf_release(&me);
	return rc;
}

bool al_run_files_gone(const struct al_run *run)
{
	struct stat st;

	return run->lock_fd >= 0 && fstat(run->lock_fd, &st) == 0 && st.st_nlink == 0;
}

void al_run_unlock(struct al_run *run)
{
	struct al_strbuf path = AL_STRBUF_INIT;

	if (run->lock_fd < 0)
		return;
	al_strbuf_addf(&path, "%s/lock", run->dir);
	unlink(path.buf); /* while still held: nobody can take a half-removed lock */
	close(run->lock_fd);
	run->lock_fd = -1;
	run->events_fd = -1;
	al_strbuf_release(&path);
}

static int write_holder(int fd, const char *run_id)
{
	struct al_strbuf me = AL_STRBUF_INIT;
	char host[256] = "localhost";
	int rc = 0;

	gethostname(host, sizeof(host) - 1);
	al_strbuf_addf(&me, "ailoop pid %ld on %s", (long)getpid(), host);
	if (run_id)
		al_strbuf_addf(&me, ", run %s", run_id);
	al_strbuf_addch(&me, '\n');
	/* a reader that finds the file empty waits for the name */
	if (ftruncate(fd, 0) < 0 || pwrite(fd, me.buf, me.len, 0) != (ssize_t)me.len)
		rc = -1;
	al_strbuf_release(&me);
	return rc;
}

int al_worktree_lock(int *fd, const char *git_dir)
{
	struct al_strbuf path = AL_STRBUF_INIT, who = AL_STRBUF_INIT;
	int64_t until = al_now_ms() + HOLDER_GONE_WAIT_MS;
	int rc = 0;

	*fd = -1;
	al_strbuf_addf(&path, "%sailoop.lock", git_dir);
	/*
	 * The holder writes its name just after it locks: wait for it briefly;
	 * and for the lock a gone holder left a moment longer (holder_gone).
	 */
	for (int attempt = 0;; attempt++) {
		struct timespec ms = { 0, 10000000 };
		int lfd = open(path.buf, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);

		if (lfd < 0) {
			rc = al_err(AL_ERROR, "cannot open '%s': %s", path.buf, strerror(errno));
			goto done;
		}
		if (flock(lfd, LOCK_EX | LOCK_NB) == 0) {
			if (write_holder(lfd, NULL) < 0) {
				rc = al_err(AL_ERROR, "cannot write '%s': %s", path.buf,
					    strerror(errno));
				close(lfd);
				goto done;
			}
			*fd = lfd;
			goto done;
		}
		close(lfd);
		if (errno != EWOULDBLOCK) {
			rc = al_err(AL_ERROR, "cannot lock '%s': %s", path.buf, strerror(errno));
			goto done;
		}
		al_strbuf_reset(&who);
		if (al_strbuf_read_file(&who, path.buf, 4096) == 0)
			al_strbuf_rtrim(&who);
		if (who.len ? !holder_gone(who.buf) || al_now_ms() >= until : attempt >= 100)
			break;
		nanosleep(&ms, NULL);
	}
	rc = locked("the work tree", "", who.len ? who.buf : NULL, path.buf);
done:
	al_strbuf_release(&path);
	al_strbuf_release(&who);
	return rc;
}

void al_worktree_lock_name(int fd, const char *run_id)
{
	if (fd >= 0)
		write_holder(fd, run_id); /* only a name for messages: the flock is the lock */
}

void al_worktree_unlock(int fd)
{
	int ignored;

	if (fd < 0)
		return;
	ignored = ftruncate(fd, 0); /* a name left behind would only be a wrong hint */
	(void)ignored;
	close(fd);
}

int al_run_save(struct al_run *run)
{
	if (run->forked)
		return 0;
	return al_run_state_write(&run->st, run->state_path);
}

int al_run_enter(struct al_run *run, const char *node_path)
{
	struct al_run_state *st = &run->st;

	if (run->forked)
		return 0;
	/* on resume the stack already reaches this node: keep it as it is */
	for (size_t i = 0; i < st->nstack; i++) {
		if (!strcmp(st->stack[i], node_path)) {
			for (size_t j = i + 1; j < st->nstack; j++)
				free(st->stack[j]);
			st->nstack = i + 1;
			goto save;
		}
	}
	st->stack = al_realloc(st->stack, (st->nstack + 2) * sizeof(*st->stack));
	st->stack[st->nstack++] = al_strdup(node_path);
	st->stack[st->nstack] = NULL;
save:
	free(st->active_node_path);
	st->active_node_path = al_strdup(node_path);
	return al_run_save(run);
}

int al_run_leave(struct al_run *run)
{
	struct al_run_state *st = &run->st;

	if (!st->nstack || run->forked)
		return 0;
	free(st->stack[--st->nstack]);
	st->stack[st->nstack] = NULL;
	free(st->active_node_path);
	st->active_node_path = st->nstack ? al_strdup(st->stack[st->nstack - 1]) : NULL;
	return al_run_save(run);
}

char *al_run_node_dir(const struct al_run *run, const char *node_path)
{
	return al_xprintf("%s/nodes/%s", run->dir, node_path);
}

void al_run_event(struct al_run *run, const char *type, const char *fmt, ...)
{
	json_t *obj = NULL, *line;
	json_error_t error;
	char now[32], *text;
	va_list ap;

	if (fmt) {
		va_start(ap, fmt);
		obj = json_vpack_ex(&error, 0, fmt, ap);
		va_end(ap);
	}
	al_timestamp(now);
	line = json_pack("{s:s, s:s}", "ts", now, "event", type);
	if (obj)
		json_object_update(line, obj);
	text = json_dumps(line, JSON_COMPACT | JSON_PRESERVE_ORDER);
	if (text) {
		struct al_strbuf sb = AL_STRBUF_INIT;

		al_strbuf_addf(&sb, "%s\n", text);
		/* the event log is a record, not state: losing it must not stop a run */
		al_append_line(&run->events_fd, run->events_path, sb.buf, sb.len);
		al_strbuf_release(&sb);
		free(text);
	}
	json_decref(obj);
	json_decref(line);
}

int al_run_id_cmp(const char *x, const char *y)
{
	int dates = strncmp(x, y, strlen("run_YYYYMMDD_"));
	long nx, ny;

	if (dates)
		return dates;
	nx = strlen(x) > 13 ? atol(x + 13) : 0; /* the number may pass 999 */
	ny = strlen(y) > 13 ? atol(y + 13) : 0;
	return nx > ny ? 1 : nx < ny ? -1 : strcmp(x, y);
}

static int cmp_desc(const void *a, const void *b)
{
	return al_run_id_cmp(*(char *const *)b, *(char *const *)a);
}

int al_runs_list(char ***ids, size_t *n)
{
	DIR *d = opendir(AL_RUNS_DIR);
	struct dirent *e;
	size_t alloc = 0;

	*ids = NULL;
	*n = 0;
	if (!d)
		return errno == ENOENT ? 0 : al_err(AL_ERROR, "cannot read %s: %s", AL_RUNS_DIR,
						    strerror(errno));
	while ((e = readdir(d))) {
		char *state;
		bool has_state;

		if (!al_starts_with(e->d_name, "run_"))
			continue;
		/* a run's directory without its state (left by a branch switch) is none */
		state = al_xprintf("%s/%s/run-state.md", AL_RUNS_DIR, e->d_name);
		has_state = al_file_exists(state);
		free(state);
		if (!has_state)
			continue;
		AL_GROW(*ids, *n, alloc);
		(*ids)[(*n)++] = al_strdup(e->d_name);
	}
	closedir(d);
	if (*n)
		qsort(*ids, *n, sizeof(**ids), cmp_desc);
	return 0;
}

void al_runs_list_free(char **ids, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(ids[i]);
	free(ids);
}
