#include "setup.h"

#include "ailoop/cli/cli.h"
#include "ailoop/model/flow.h"
#include "ailoop/base/fsutil.h"
#include "ailoop/base/sha256.h"
#include "ailoop/base/strbuf.h"
#include "ailoop/base/util.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/*
 * What `ailoop setup` writes: checked by the flow loader in a scratch copy
 * first, then written idempotently. A file is only replaced when it is
 * still what setup wrote last (.ai-loop/.setup-manifest) or with --force.
 */

/* ---- validation and writing --------------------------------------------- */

/*
 * Loads the flow from a scratch copy of the files, before anything is
 * written: what setup writes must validate. Returns 0, or 70 after printing
 * the loader's errors.
 */
int setup_validate(const struct out_files *o)
{
	const char *tmpdir = getenv("TMPDIR");
	char cwd[PATH_MAX], *tmpl = al_xprintf("%s/ailoop-setup.XXXXXX",
					       tmpdir && *tmpdir ? tmpdir : "/tmp");
	struct al_diags diags = AL_DIAGS_INIT;
	struct al_flow *flow = NULL;
	int err = 0, code = 0;

	if (!getcwd(cwd, sizeof(cwd)) || !mkdtemp(tmpl)) {
		code = al_cli_fail(AL_EXIT_SOFTWARE, "cannot make a scratch directory '%s': %s",
				   tmpl, strerror(errno));
		free(tmpl);
		return code;
	}
	for (size_t i = 0; i < o->n && !err; i++) {
		char *path = al_xprintf("%s/%s", tmpl, o->v[i].path);
		char *slash = strrchr(path, '/');

		*slash = '\0';
		err = al_mkdirs(path);
		*slash = '/';
		if (!err)
			err = al_write_atomic(path, o->v[i].text.buf, o->v[i].text.len);
		free(path);
	}
	if (err < 0)
		code = al_cli_fail(AL_EXIT_SOFTWARE, "%s", al_errmsg());
	else if (chdir(tmpl) < 0)
		code = al_cli_fail(AL_EXIT_SOFTWARE, "cannot enter '%s': %s", tmpl, strerror(errno));
	else {
		if (al_flow_load(&flow, ".ai-loop/flow.yaml", &diags) < 0) {
			al_diags_sort(&diags);
			al_diags_print(&diags, stderr, false);
			code = al_cli_fail(AL_EXIT_SOFTWARE, "the flow setup made does not validate "
					   "(a bug in ailoop)");
		}
		if (chdir(cwd) < 0)
			code = al_cli_fail(AL_EXIT_SOFTWARE, "cannot go back to '%s': %s", cwd,
					   strerror(errno));
	}
	al_flow_free(flow);
	al_diags_release(&diags);
	al_remove_tree(tmpl);
	free(tmpl);
	return code;
}

struct manifest {
	char **paths, **sums;
	size_t n, alloc;
};

static void manifest_add(struct manifest *m, const char *path, const char *sum)
{
	if (m->n == m->alloc) {
		m->alloc = m->alloc ? 2 * m->alloc : 16;
		m->paths = al_realloc(m->paths, m->alloc * sizeof(*m->paths));
		m->sums = al_realloc(m->sums, m->alloc * sizeof(*m->sums));
	}
	m->paths[m->n] = al_strdup(path);
	m->sums[m->n++] = al_strdup(sum);
}

static const char *manifest_get(const struct manifest *m, const char *path)
{
	for (size_t i = 0; i < m->n; i++)
		if (!strcmp(m->paths[i], path))
			return m->sums[i];
	return NULL;
}

static void manifest_release(struct manifest *m)
{
	al_strv_free(m->paths, m->n);
	al_strv_free(m->sums, m->n);
}

/* "SHA256  PATH" lines; anything else is skipped. */
static void manifest_read(struct manifest *m)
{
	struct al_strbuf sb = AL_STRBUF_INIT;

	if (al_strbuf_read_file(&sb, MANIFEST, 1 << 20) < 0) {
		al_strbuf_release(&sb);
		return;
	}
	for (char *p = sb.buf, *eol; p && *p; p = eol ? eol + 1 : NULL) {
		eol = strchr(p, '\n');
		if (eol)
			*eol = '\0';
		if (strlen(p) > 66 && strspn(p, "0123456789abcdef") == 64 && !strncmp(p + 64, "  ", 2)) {
			p[64] = '\0';
			manifest_add(m, p + 66, p);
		}
	}
	al_strbuf_release(&sb);
}

/*
 * 0 if every file of `o` can be written: no file where a directory goes,
 * and no directory where a file goes. Else 66, naming what is in the way,
 * before anything is written: setup writes all of its files or none.
 */
static int nothing_in_the_way(const struct out_files *o)
{
	struct stat st;

	for (size_t i = 0; i < o->n; i++) {
		char *path = al_strdup(o->v[i].path);
		int code = 0;

		for (char *slash = strchr(path, '/'); slash && !code; slash = strchr(slash + 1, '/')) {
			*slash = '\0';
			if (lstat(path, &st) == 0 && !S_ISDIR(st.st_mode))
				code = al_cli_fail(AL_EXIT_NOINPUT, "'%s' is in the way: setup puts a "
						   "directory there (for %s); move it aside and run "
						   "setup again", path, o->v[i].path);
			*slash = '/';
		}
		if (!code && lstat(path, &st) == 0 && S_ISDIR(st.st_mode))
			code = al_cli_fail(AL_EXIT_NOINPUT, "'%s' is a directory, where setup writes "
					   "a file: move it aside and run setup again", path);
		free(path);
		if (code)
			return code;
	}
	return 0;
}

/*
 * Writes each file unless it is already as wanted, or the user changed it
 * since setup wrote it (kept, unless `force`); then the manifest. Says what
 * happened to each on stdout.
 */
int setup_write_files(const struct out_files *o, bool force, size_t *kept)
{
	struct manifest old = { 0 }, now = { 0 };
	struct al_strbuf man = AL_STRBUF_INIT;
	int err = 0, code;

	*kept = 0;
	if ((code = nothing_in_the_way(o)) != 0)
		return code;
	manifest_read(&old);
	for (size_t i = 0; i < o->n && !err; i++) {
		const struct out_file *f = &o->v[i];
		struct al_strbuf disk = AL_STRBUF_INIT;
		const char *was = manifest_get(&old, f->path), *verb;
		char want[65], have[65];
		bool exists;

		al_sha256_hex(f->text.buf, f->text.len, want);
		exists = al_strbuf_read_file(&disk, f->path, 64 << 20) == 0;
		if (exists)
			al_sha256_hex(disk.buf, disk.len, have);
		al_strbuf_release(&disk);
		if (exists && !strcmp(have, want)) {
			verb = "Unchanged";
		} else if (exists && !force && !(was && !strcmp(was, have))) {
			printf("Kept      %s (%s; --force overwrites it)\n", f->path,
			       was ? "changed since setup wrote it" : "not written by setup");
			if (was)
				manifest_add(&now, f->path, was);
			(*kept)++;
			continue;
		} else {
			char *dir = al_strdup(f->path);

			*strrchr(dir, '/') = '\0';
			err = al_mkdirs(dir);
			free(dir);
			if (!err)
				err = al_write_atomic(f->path, f->text.buf, f->text.len);
			if (err)
				break;
			verb = exists ? "Updated" : "Created";
		}
		printf("%-9s %s\n", verb, f->path);
		manifest_add(&now, f->path, want);
	}
	if (!err) {
		al_strbuf_adds(&man, "# Written by 'ailoop setup': the sha256 of each file as setup last\n"
				     "# wrote it, so that it never overwrites a file you changed (unless\n"
				     "# --force). Commit it with the rest of .ai-loop/.\n");
		for (size_t i = 0; i < now.n; i++)
			al_strbuf_addf(&man, "%s  %s\n", now.sums[i], now.paths[i]);
		err = al_write_atomic(MANIFEST, man.buf, man.len);
	}
	al_strbuf_release(&man);
	manifest_release(&old);
	manifest_release(&now);
	return err < 0 ? al_cli_fail(AL_EXIT_SOFTWARE, "%s", al_errmsg()) : 0;
}
