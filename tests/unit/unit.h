#ifndef AILOOP_TESTS_UNIT_H
#define AILOOP_TESTS_UNIT_H

/*
 * Helpers shared by the Criterion tests: throwaway directories, files
 * written from strings, and lookups in a set of diagnostics. Criterion runs
 * every test in its own process, so a test may chdir freely.
 */
#include "ailoop/base/diag.h"
#include "ailoop/base/strbuf.h"
#include "ailoop/base/util.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char unit_dir[PATH_MAX];

/* Creates every missing parent directory of `path`. */
static inline void unit_mkdirs(const char *path)
{
	char buf[PATH_MAX];

	cr_assert_lt(strlen(path), sizeof(buf));
	memcpy(buf, path, strlen(path) + 1);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		cr_assert(mkdir(buf, 0777) == 0 || errno == EEXIST, "mkdir %s", buf);
		*p = '/';
	}
}

/* Writes `text` to `path` (relative to the current directory). */
static inline void unit_write(const char *path, const char *text)
{
	FILE *f;

	unit_mkdirs(path);
	f = fopen(path, "w");
	cr_assert_not_null(f, "cannot write %s", path);
	cr_assert_eq(fwrite(text, 1, strlen(text), f), strlen(text));
	cr_assert_eq(fclose(f), 0);
}

/* Runs shell command `cmd`, which must succeed. */
static inline void unit_sh(const char *cmd)
{
	cr_assert_eq(system(cmd), 0, "%s", cmd);
}

/* What is left to read of `f`, into `buf` (cut to its `size`), as a string. */
static inline const char *unit_slurp(FILE *f, char *buf, size_t size)
{
	size_t n = fread(buf, 1, size - 1, f);

	buf[n] = '\0';
	return buf;
}

/* The content of a file (a static buffer). */
static inline const char *unit_read(const char *path)
{
	static char buf[4096];
	FILE *f = fopen(path, "r");

	cr_assert_not_null(f, "cannot read %s", path);
	unit_slurp(f, buf, sizeof(buf));
	fclose(f);
	return buf;
}

/* What shell command `cmd` prints, its last newline cut (a static buffer). */
static inline const char *unit_output(const char *cmd)
{
	static char buf[4096];
	FILE *p = popen(cmd, "r");
	size_t n;

	cr_assert_not_null(p, "%s", cmd);
	n = strlen(unit_slurp(p, buf, sizeof(buf)));
	pclose(p);
	if (n && buf[n - 1] == '\n')
		buf[n - 1] = '\0';
	return buf;
}

/* A fresh directory under /tmp, made the current directory. */
static inline void unit_enter_tmpdir(void)
{
	snprintf(unit_dir, sizeof(unit_dir), "%s/ailoop-unit.XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	cr_assert_not_null(mkdtemp(unit_dir));
	cr_assert_eq(chdir(unit_dir), 0);
}

/* A fresh directory, as above, for a repository git commands make: who commits in it. */
static inline void unit_enter_git_tmpdir(void)
{
	unit_enter_tmpdir();
	setenv("GIT_AUTHOR_NAME", "t", 1);
	setenv("GIT_AUTHOR_EMAIL", "t@t", 1);
	setenv("GIT_COMMITTER_NAME", "t", 1);
	setenv("GIT_COMMITTER_EMAIL", "t@t", 1);
}

static inline int unit_rm(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static inline void unit_leave_tmpdir(void)
{
	if (!unit_dir[0])
		return;
	if (chdir("/") == 0)
		nftw(unit_dir, unit_rm, 16, FTW_DEPTH | FTW_PHYS);
	unit_dir[0] = '\0';
}

/*
 * A hang guard for tests that run processes or wait: SIGALRM ends the
 * test, which Criterion reports as a crash. Criterion's own .timeout is
 * not used because its runner leaks a timeout request when two tests with
 * one run at once (BoxFort's bxfi_cancel_timeout), and the sanitizer build
 * fails on that leak.
 */
static inline void unit_hang_guard(unsigned seconds)
{
	alarm(seconds);
}

/* Every diagnostic, one per line as "LINE:COL: MSG", for failure messages. */
static inline const char *unit_diags_text(const struct al_diags *d)
{
	static struct al_strbuf sb = AL_STRBUF_INIT;

	al_strbuf_reset(&sb);
	for (size_t i = 0; i < d->n; i++)
		al_strbuf_addf(&sb, "\n  %s:%d:%d: %s", d->v[i].pos.file, d->v[i].pos.line,
			       d->v[i].pos.col, d->v[i].msg);
	return sb.buf;
}

/*
 * The diagnostic at `line`:`col` whose message contains `fragment` (and
 * whose file ends with `file`, unless that is NULL), or NULL.
 */
static inline const struct al_diag *unit_find_diag(const struct al_diags *d, const char *file,
						   int line, int col, const char *fragment)
{
	for (size_t i = 0; i < d->n; i++) {
		const struct al_diag *e = &d->v[i];

		if (e->pos.line != line || e->pos.col != col || !strstr(e->msg, fragment))
			continue;
		if (file && !al_ends_with(e->pos.file, file))
			continue;
		return e;
	}
	return NULL;
}

#define unit_assert_diag(d, file, line, col, fragment)                                   \
	cr_assert_not_null(unit_find_diag((d), (file), (line), (col), (fragment)),       \
			   "no diagnostic %s:%d:%d containing \"%s\"; got:%s",            \
			   (file) ? (file) : "*", (line), (col), (fragment),              \
			   unit_diags_text(d))

#define unit_assert_ndiags(d, want)                                                       \
	cr_assert_eq((d)->n, (size_t)(want), "expected %d diagnostics, got %zu:%s",       \
		     (int)(want), (d)->n, unit_diags_text(d))

#endif
