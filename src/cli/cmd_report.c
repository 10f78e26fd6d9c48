#include "ailoop/cli/cli.h"
#include "ailoop/base/fsutil.h"
#include "ailoop/report/report.h"
#include "ailoop/store/run_view.h"
#include "ailoop/base/util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* `path` from the current directory, as an absolute path. Caller frees. */
static char *absolute(const char *path)
{
	char cwd[PATH_MAX];

	if (path[0] == '/' || !getcwd(cwd, sizeof(cwd)))
		return al_strdup(path);
	return al_xprintf("%s/%s", cwd, path);
}

/* -o names a file in a directory that exists. Returns 0 or the exit status. */
static int check_output(const char *path)
{
	char *dir = al_strdup(path), *slash = strrchr(dir, '/');
	int code = 0;

	if (slash)
		*(slash == dir ? slash + 1 : slash) = '\0';
	if (al_dir_exists(path))
		code = al_cli_fail(AL_EXIT_USAGE, "'%s' is a directory: -o takes the page's file name",
				   path);
	else if (slash && !al_dir_exists(dir))
		code = al_cli_fail(AL_EXIT_NOINPUT, "no directory '%s' to write '%s' in", dir,
				   path + (slash - dir) + 1);
	free(dir);
	return code;
}

/*
 * Writes the page to `path`: a new file in its place, as a whole, if it
 * is a regular file or is not there; else into what is there (a device,
 * a FIFO, a symbolic link's target), which a rename would replace.
 */
static int write_page(const char *path, const struct al_strbuf *page)
{
	struct stat st;
	int fd, rc, e;

	if (path && (lstat(path, &st) < 0 || S_ISREG(st.st_mode)))
		return al_write_atomic(path, page->buf, page->len);
	fd = path ? open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644) : STDOUT_FILENO;
	rc = fd < 0 || al_write_all(fd, page->buf, page->len) < 0 ? -1 : 0;
	e = errno;
	if (path && fd >= 0 && close(fd) < 0 && rc == 0) {
		rc = -1;
		e = errno;
	}
	return rc < 0 ? al_err(AL_ERROR, "cannot write '%s': %s", path ? path : "the output",
				strerror(e)) : 0;
}

int cmd_report(int argc, char **argv)
{
	static const struct option longs[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "format", required_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 0 },
		{ NULL, 0, NULL, 0 },
	};
	const char *output = NULL, *format = "html";
	struct al_strbuf page = AL_STRBUF_INIT;
	struct al_report report = { 0 };
	struct al_run_view view = { 0 };
	struct al_git *git = NULL;
	char *path = NULL;
	int c, rc, code = 0;

	while ((c = al_cli_getopt(argc, argv, "o:", longs, &code)) != -1) {
		switch (c) {
		case '?': return code;
		case 'o': output = optarg; break;
		case 'f': format = optarg; break;
		}
	}
	if (strcmp(format, "html") && strcmp(format, "md"))
		return al_cli_fail(AL_EXIT_USAGE, "unknown format '%s' (html or md)", format);
	if ((code = al_cli_operands(argc, argv, 0, 1)))
		return code;
	/* "-": the page on the standard output, for a pipe */
	if (output && strcmp(output, "-")) { /* relative to where the user is, before the root */
		path = absolute(output);
		if ((code = check_output(path)))
			goto done;
	}
	if ((code = al_cli_enter_repo()))
		goto done;
	if ((rc = al_git_open(&git)) < 0) {
		code = al_cli_fail(AL_EXIT_NOINPUT, "%s", al_errmsg());
		goto done;
	}
	al_git_show_only(); /* what a report reads is shown, never built on */
	if ((rc = al_run_view_load(&view, git, optind < argc ? argv[optind] : NULL)) < 0 ||
	    (rc = al_report_load(&report, git, &view)) < 0) {
		code = al_cli_fail(al_cli_exit_code(rc), "%s", al_errmsg());
		goto done;
	}
	if (!path && !output) {
		/* a run read from its branch has no directory here yet */
		if ((rc = al_mkdirs(view.dir)) < 0) {
			code = al_cli_fail(AL_EXIT_SOFTWARE, "%s", al_errmsg());
			goto done;
		}
		char *rel = al_xprintf("%s/report.%s", view.dir, format);

		path = absolute(rel);
		free(rel);
	}
	if (!strcmp(format, "md"))
		al_report_md(&page, &report);
	else
		al_report_html(&page, &report);
	if ((rc = write_page(path, &page)) < 0) {
		code = al_cli_fail(AL_EXIT_SOFTWARE, "%s", al_errmsg());
		goto done;
	}
	if (path)
		printf("%s\n", path);
done:
	al_report_release(&report);
	al_run_view_release(&view);
	al_git_free(git);
	al_strbuf_release(&page);
	free(path);
	return code;
}
