#include "ailoop/base/fsutil.h"
#include "ailoop/base/paths.h"
#include "ailoop/base/strbuf.h"
#include "ailoop/base/util.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

bool al_fsync_enabled(void)
{
	static int enabled = -1;

	if (enabled < 0) {
		const char *v = getenv("AILOOP_FSYNC");

		enabled = !(v && !strcmp(v, "0"));
	}
	return enabled;
}

/* Whether ailoop wrote something since the last durable point. */
static bool unsynced;

static int deferred[4];
static size_t ndeferred;

void al_close_later(int fd)
{
	if (ndeferred == sizeof(deferred) / sizeof(deferred[0]))
		close(fd); /* no agent between so many writes: freed now */
	else
		deferred[ndeferred++] = fd;
}

void al_free_later(const char *path)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);

	if (fd >= 0)
		al_close_later(fd);
}

void al_close_deferred(void)
{
	while (ndeferred)
		close(deferred[--ndeferred]);
}

void al_durable_written(void)
{
	unsynced = true;
}

int al_durable_point(void)
{
	static int fd = -1;

	if (!unsynced || !al_fsync_enabled())
		return 0;
	if (fd < 0)
		fd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || syncfs(fd) < 0)
		return al_err(AL_ERROR, "cannot make what ailoop wrote durable: %s",
			      strerror(errno));
	unsynced = false;
	return 0;
}

static bool relaxed;

void al_durable_relax(bool on)
{
	relaxed = on;
}

bool al_durable_relaxed(void)
{
	return relaxed;
}

const char *al_boot_id(void)
{
	static char id[64];
	static int known = -1;

	if (known < 0) {
		int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
		ssize_t n = fd < 0 ? -1 : read(fd, id, sizeof(id) - 1);

		if (fd >= 0)
			close(fd);
		while (n > 0 && (id[n - 1] == '\n' || id[n - 1] == ' '))
			n--;
		id[n > 0 ? n : 0] = '\0';
		known = n > 0;
	}
	return known ? id : NULL;
}

const char *al_says_disk_full(const char *text, size_t len)
{
	static const char *const said[] = { "No space left on device", "Disk quota exceeded" };

	for (size_t i = 0; i < sizeof(said) / sizeof(*said); i++)
		if (len && memmem(text, len, said[i], strlen(said[i])))
			return said[i];
	return NULL;
}

int al_write_all(int fd, const char *p, size_t len)
{
	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/*
 * open(2) that follows no symbolic link on the way, for a path relative to
 * the repository's root (.ai-loop, .ai-loop/runs and a run's directory are
 * real directories, checked when the run starts): ELOOP where there is
 * one, a directory's or the file's own. Elsewhere (a parallel child in a
 * worktree writes its run's files by their absolute path), and on a
 * kernel without openat2(2), open(2) as it is (O_NOFOLLOW as given).
 */
static int open_no_links(const char *path, int flags, mode_t mode)
{
#ifdef SYS_openat2
	static bool missing;
	struct open_how how = { .flags = (uint64_t)flags, .mode = flags & O_CREAT ? mode : 0,
				.resolve = RESOLVE_NO_SYMLINKS };
	int fd;

	if (path[0] != '/' && !missing) {
		fd = (int)syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof(how));
		if (fd >= 0 || errno != ENOSYS)
			return fd;
		missing = true;
	}
#endif
	return open(path, flags, mode);
}

/* A path of a run's file, relative to the repository's root (below AL_RUNS_DIR). */
static bool runs_path(const char *path)
{
	return path[0] != '/' && al_starts_with(path, AL_RUNS_DIR "/");
}

bool al_clear_way(const char *path)
{
	char *p = al_strdup(path);
	char *run_end = runs_path(path) ? strchr(p + sizeof(AL_RUNS_DIR), '/') : NULL;
	bool removed = false;
	struct stat st;

	if (run_end) /* the directories below the run's own */
		for (char *slash = strchr(run_end + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
			*slash = '\0';
			if (lstat(p, &st) == 0 && !S_ISDIR(st.st_mode) && unlink(p) == 0)
				removed = true;
			*slash = '/';
		}
	free(p);
	return removed;
}

/*
 * The first directory on the way to `path` (a run's file) that is a
 * symbolic link, in a static buffer; NULL if none. What is below the run's
 * directory al_clear_way() removes; above it (.ai-loop, .ai-loop/runs,
 * the run's own directory, all checked when the run started) only the
 * user can put it back.
 */
static const char *dir_link(const char *path)
{
	static char p[PATH_MAX];
	struct stat st;

	if (!runs_path(path) || (size_t)snprintf(p, sizeof(p), "%s", path) >= sizeof(p))
		return NULL;
	for (char *slash = strchr(p, '/'); slash; slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		if (lstat(p, &st) == 0 && S_ISLNK(st.st_mode))
			return p;
		*slash = '/';
	}
	return NULL;
}

static int link_in_the_way(const char *link)
{
	return al_err(AL_ENOTFOUND, "'%s' is a symbolic link (an agent's?): ailoop writes a run's "
		      "files into real directories of the repository, never through a link to "
		      "elsewhere; put the directory back (as the last commit has it: 'rm %s && "
		      "git checkout HEAD -- %s'), then resume the run", link, link, link);
}

/* An agent's directory where a run's file goes: removed (only ailoop writes there). */
static void clear_dir(const char *path)
{
	struct stat st;

	if (runs_path(path) && lstat(path, &st) == 0 && S_ISDIR(st.st_mode))
		al_remove_tree(path);
}

/*
 * open(2) of a file ailoop writes in a run's directories, which makes the
 * directory it goes in if that has gone: an agent may remove a node's
 * directory or its logs (the run's whole directory it cannot: its lock
 * is checked after every agent call, al_run_files_gone). What was in it
 * is written again as the run goes on, or restored from the last commit.
 */
static int open_in_dir(const char *path, int flags, mode_t mode)
{
	int fd = open_no_links(path, flags, mode);
	const char *slash;
	char *dir;

	if (fd < 0 && (errno == ELOOP || errno == ENOTDIR) && al_clear_way(path))
		fd = open_no_links(path, flags, mode);
	if (fd < 0 && errno == EISDIR && runs_path(path)) { /* an agent's directory there */
		clear_dir(path);
		fd = open_no_links(path, flags, mode);
	}
	if (fd >= 0 || errno != ENOENT || !(slash = strrchr(path, '/')) || slash == path)
		return fd;
	dir = al_strndup(path, (size_t)(slash - path));
	if (!al_dir_exists(dir) && al_mkdirs(dir) == 0)
		fd = open_no_links(path, flags, mode);
	else
		errno = ENOENT;
	free(dir);
	return fd;
}

int al_write_atomic(const char *path, const void *data, size_t len)
{
	struct al_strbuf lock = AL_STRBUF_INIT;
	int fd, rc = 0;

	al_strbuf_addf(&lock, "%s.lock", path);
	if (dir_link(path)) {
		rc = link_in_the_way(dir_link(path));
		goto done;
	}
	clear_dir(lock.buf);
	fd = open(lock.buf, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0 && errno == EEXIST) {
		unlink(lock.buf); /* left by a writer that died */
		fd = open(lock.buf, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	}
	if (fd < 0) {
		rc = al_err(AL_ERROR, "cannot write '%s': %s", lock.buf, strerror(errno));
		goto done;
	}
	if (al_write_all(fd, data, len) < 0) {
		rc = al_err(AL_ERROR, "cannot write '%s': %s", lock.buf, strerror(errno));
		close(fd);
		unlink(lock.buf);
		goto done;
	}
	close(fd);
	al_crash_point("before rename");
	clear_dir(path);
	if (rename(lock.buf, path) < 0) {
		rc = al_err(AL_ERROR, "cannot rename '%s' to '%s': %s", lock.buf, path,
			    strerror(errno));
		unlink(lock.buf);
		goto done;
	}
	al_durable_written();
	al_crash_point(path);
done:
	al_strbuf_release(&lock);
	return rc;
}

/* The files written in place since the last commit staged them (by inode). */
static struct {
	dev_t dev;
	ino_t ino;
} *rewritten;
static size_t nrewritten, rewritten_alloc;

bool al_rewritten(const struct stat *st)
{
	for (size_t i = 0; i < nrewritten; i++)
		if (rewritten[i].ino == st->st_ino && rewritten[i].dev == st->st_dev)
			return true;
	return false;
}

/* The run's files commits take as they are, until written again (al_as_is_note). */
static char **removed;
static size_t nremoved, removed_alloc;

void al_as_is_note(const char *path)
{
	if (al_as_is_noted(path))
		return;
	AL_GROW(removed, nremoved, removed_alloc);
	removed[nremoved++] = al_strdup(path);
}

bool al_as_is_noted(const char *path)
{
	for (size_t i = 0; i < nremoved; i++) { /* the path, or below it */
		size_t n = strlen(removed[i]);

		if (!strncmp(path, removed[i], n) && (path[n] == '/' || !path[n]))
			return true;
	}
	return false;
}

/* A file ailoop writes again is no longer one it removed. */
static void removed_forget(const char *path)
{
	for (size_t i = 0; i < nremoved; i++)
		if (!strcmp(removed[i], path)) {
			free(removed[i]);
			removed[i] = removed[--nremoved];
			return;
		}
}

void al_rewritten_clear(void)
{
	nrewritten = 0;
}

static void remember_rewritten(const struct stat *st)
{
	if (al_rewritten(st))
		return;
	AL_GROW(rewritten, nrewritten, rewritten_alloc);
	rewritten[nrewritten].dev = st->st_dev;
	rewritten[nrewritten++].ino = st->st_ino;
}

void al_rewritten_forget(const struct stat *st)
{
	for (size_t i = 0; i < nrewritten; i++)
		if (rewritten[i].ino == st->st_ino && rewritten[i].dev == st->st_dev) {
			rewritten[i] = rewritten[--nrewritten];
			return;
		}
}

/* After `len` bytes written over a file of `st`: cuts its old tail, if it has one. */
static int cut(int fd, size_t len, const struct stat *st)
{
	return st->st_size > (off_t)len ? ftruncate(fd, (off_t)len) : 0;
}

/*
 * The scratch file X.lock of a state file X, opened for writing over: made
 * if missing; one that is not a plain file of one link (an agent's link,
 * or its FIFO, which O_NONBLOCK opens at once or not at all) is replaced.
 * Returns the descriptor, or -1 with errno set.
 */
static int open_scratch(const char *lock, struct stat *st)
{
	int fd = open_in_dir(lock, O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);

	if (fd < 0 && errno == ELOOP && dir_link(lock))
		return -1;
	if (fd >= 0 && fstat(fd, st) == 0 && S_ISREG(st->st_mode) && st->st_nlink == 1)
		return fd;
	if (fd >= 0)
		close(fd);
	if (unlink(lock) < 0 && errno != ENOENT)
		return -1;
	fd = open(lock, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd >= 0 && fstat(fd, st) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

int al_write_state(const char *path, const void *data, size_t len)
{
	struct al_strbuf lock = AL_STRBUF_INIT;
	struct stat st;
	int fd, rc = 0;

	al_strbuf_addf(&lock, "%s.lock", path);
	if ((fd = open_scratch(lock.buf, &st)) < 0) {
		rc = dir_link(lock.buf) ? link_in_the_way(dir_link(lock.buf))
					: al_err(AL_ERROR, "cannot write '%s': %s", lock.buf,
						 strerror(errno));
		goto done;
	}
	if (al_write_all(fd, data, len) < 0 || cut(fd, len, &st) < 0) {
		rc = al_err(AL_ERROR, "cannot write '%s': %s", lock.buf, strerror(errno));
		close(fd);
		goto done;
	}
	close(fd);
	al_crash_point("before rename");
	/*
	 * The two names trade files: X holds the new text, X.lock the old one,
	 * its inode written over next time. A filesystem without the exchange
	 * (or an X not there yet) takes the rename, which costs an inode.
	 */
	clear_dir(path);
	if (renameat2(AT_FDCWD, lock.buf, AT_FDCWD, path, RENAME_EXCHANGE) < 0 &&
	    rename(lock.buf, path) < 0) {
		rc = al_err(AL_ERROR, "cannot rename '%s' to '%s': %s", lock.buf, path,
			    strerror(errno));
		goto done;
	}
	/* X's inode alternates between two: its stat data alone may not tell a new text */
	remember_rewritten(&st);
	removed_forget(path);
	al_durable_written();
	al_crash_point(path);
done:
	al_strbuf_release(&lock);
	return rc;
}

int al_write_in_place(const char *path, const void *data, size_t len)
{
	/* (an agent's FIFO there would hold a plain open until someone reads it) */
	int fd;
	size_t half = len / 2;
	struct stat st;

	fd = open_in_dir(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
	if (fd < 0 && errno == ELOOP && dir_link(path))
		return link_in_the_way(dir_link(path));
	if (fd < 0 && (errno == ELOOP || errno == ENXIO))
		return al_write_atomic(path, data, len); /* a symbolic link, a FIFO: replaced */
	if (fd < 0)
		return al_err(AL_ERROR, "cannot write '%s': %s", path, strerror(errno));
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1) {
		close(fd);
		return al_write_atomic(path, data, len);
	}
	/* over the old bytes, then cut: no truncation to 0 first, which ext4
	 * answers with a flush of the file at close (auto_da_alloc) */
	if (al_write_all(fd, data, half) < 0)
		goto fail;
	al_crash_point("torn write");
	if (al_write_all(fd, (const char *)data + half, len - half) < 0 || cut(fd, len, &st) < 0)
		goto fail;
	close(fd);
	remember_rewritten(&st);
	removed_forget(path);
	al_durable_written();
	al_crash_point(path);
	return 0;
fail:
	close(fd);
	return al_err(AL_ERROR, "cannot write '%s': %s", path, strerror(errno));
}

int al_append_line(int *fd, const char *path, const char *line, size_t len)
{
	if (*fd < 0)
		*fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC,
			   0644);
	if (*fd < 0)
		return al_err(AL_ERROR, "cannot open '%s': %s", path, strerror(errno));
	if (al_write_all(*fd, line, len) < 0)
		return al_err(AL_ERROR, "cannot append to '%s': %s", path, strerror(errno));
	al_durable_written();
	return 0;
}

int al_mkdirs(const char *path)
{
	char *p;
	int rc = 0;

	if (*path && al_dir_exists(path))
		return 0; /* the common case: one stat, not one mkdir a component */
	p = al_strdup(path);

	for (char *s = *p ? p + 1 : p; ; s++) { /* "" fails in mkdir, as in mkdir -p */
		char c = *s;

		if (c != '/' && c != '\0')
			continue;
		*s = '\0';
		if (mkdir(p, 0755) < 0 && errno != EEXIST) {
			rc = al_err(AL_ERROR, "cannot create directory '%s': %s", p, strerror(errno));
			break;
		}
		*s = c;
		if (!c)
			break;
	}
	if (!rc && !al_dir_exists(path))
		rc = al_err(AL_ERROR, "'%s' exists and is not a directory", path);
	free(p);
	return rc;
}

bool al_file_exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

bool al_dir_exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int al_remove(const char *path)
{
	if (unlink(path) < 0 && errno != ENOENT)
		return al_err(AL_ERROR, "cannot remove '%s': %s", path, strerror(errno));
	return 0;
}

/* Whether absolute `path`, written out (`.` and `..` as text), is `root` or below it. */
static bool below(const char *root, const char *path)
{
	struct al_strbuf norm = AL_STRBUF_INIT;
	size_t rlen = strlen(root);
	bool in;

	for (const char *p = path; *p;) {
		size_t len = strcspn(p, "/");

		if (len == 2 && !strncmp(p, "..", 2)) {
			char *slash = strrchr(norm.buf, '/');

			al_strbuf_setlen(&norm, slash ? (size_t)(slash - norm.buf) : 0);
		} else if (len && !(len == 1 && *p == '.')) {
			al_strbuf_addch(&norm, '/');
			al_strbuf_add(&norm, p, len);
		}
		p += len;
		while (*p == '/')
			p++;
	}
	in = !strcmp(root, "/") || (!strncmp(norm.buf, root, rlen) &&
				    (norm.buf[rlen] == '\0' || norm.buf[rlen] == '/'));
	al_strbuf_release(&norm);
	return in;
}

enum al_path_place al_path_place(const char *path, char **real)
{
	char root[PATH_MAX], resolved[PATH_MAX];
	struct al_strbuf abs = AL_STRBUF_INIT;
	enum al_path_place place = AL_PATH_INSIDE;

	*real = NULL;
	if (!realpath(".", root))
		return AL_PATH_OUTSIDE; /* no root to be inside of */
	if (*path == '/')
		al_strbuf_adds(&abs, path);
	else
		al_strbuf_addf(&abs, "%s/%s", root, path);
	if (!below(root, abs.buf))
		place = AL_PATH_OUTSIDE;
	else if (realpath(path, resolved) && !below(root, resolved)) {
		place = AL_PATH_LINK_OUTSIDE;
		*real = al_strdup(resolved);
	}
	al_strbuf_release(&abs);
	return place;
}

int al_open_run_file(const char *path, int flags, const char *what)
{
	int fd = open(path, flags | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
	struct stat st;

	if (fd < 0 && errno == ELOOP)
		return al_err(AL_ENOTFOUND, "'%s' is a symbolic link: %s must be a file of the run's "
			      "directory, in the repository; remove the link", path, what);
	if (fd < 0)
		return al_err(errno == ENOENT ? AL_ENOTFOUND : AL_ERROR, "cannot open %s '%s': %s",
			      what, path, strerror(errno));
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return al_err(AL_ENOTFOUND, "'%s' is not a plain file: %s must be one; remove it",
			      path, what);
	}
	return fd;
}

int al_refuse_symlink(const char *path)
{
	struct stat st;

	if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode))
		return al_err(AL_ENOTFOUND, "'%s' is a symbolic link: ailoop writes a run's state "
			      "there, which must stay in the repository; make it a directory", path);
	return 0;
}

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	return (type == FTW_DP ? rmdir(path) : unlink(path)) < 0 && errno != ENOENT ? -1 : 0;
}

int al_remove_tree(const char *path)
{
	struct stat st;

	if (lstat(path, &st) < 0 || !S_ISDIR(st.st_mode))
		return al_remove(path);
	if (nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS) < 0)
		return al_err(AL_ERROR, "cannot remove '%s': %s", path, strerror(errno));
	return 0;
}

int al_empty_path(const char *path)
{
	struct stat st;
	int fd;

	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : al_err(AL_ERROR, "cannot read '%s': %s", path,
						    strerror(errno));
	/*
	 * Cut in place rather than removed: on ext4 the inode a removal frees,
	 * and the write after it makes again, is most of what it costs.
	 */
	if (S_ISREG(st.st_mode) && st.st_nlink == 1) {
		if (st.st_size == 0)
			return 0;
		fd = open(path, O_WRONLY | O_TRUNC | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (fd >= 0) {
			close(fd);
			al_durable_written();
			return 0;
		}
	}
	return al_remove_tree(path);
}

bool al_fs_type_shared(unsigned long type)
{
	static const unsigned long types[] = {
		0x6969,     /* NFS */
		0x517B,     /* SMB */
		0xFF534D42, /* CIFS */
		0xFE534D42, /* SMB2 */
		0x0BD00BD0, /* Lustre */
		0x47504653, /* GPFS */
		0x00C36400, /* CephFS */
		0x19830326, /* BeeGFS */
		0x01021997, /* 9p */
		0x5346414F, /* AFS */
		0x7461636F, /* OCFS2 */
		0x01161970, /* GFS2 */
		0xAAD7AAEA, /* PanFS */
		0x65735546, /* FUSE (sshfs, …) */
	};

	for (size_t i = 0; i < AL_ARRAY_SIZE(types); i++)
		if ((type & 0xFFFFFFFFUL) == types[i])
			return true;
	return false;
}
