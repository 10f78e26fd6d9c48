#include "ailoop/cli/cli.h"
#include "ailoop/git/git.h"
#include "ailoop/store/run.h"
#include "ailoop/base/fsutil.h"
#include "ailoop/base/strbuf.h"
#include "ailoop/base/util.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void al_cli_usage(FILE *out, const struct al_command *cmd)
{
	fprintf(out, "usage: ailoop %s %s\n", cmd->name, cmd->usage);
}

void al_cli_help(FILE *out, const struct al_command *cmd)
{
	al_cli_usage(out, cmd);
	fprintf(out, "\n%s.\n\n%s", cmd->summary, cmd->help);
}

int al_cli_operands(int argc, char **argv, int min, int max, const char *cmd)
{
	int n = argc - optind;

	if (n >= min && n <= max)
		return 0;
	if (n > max)
		fprintf(stderr, "ailoop: error: unexpected operand '%s'\n", argv[optind + max]);
	else
		fprintf(stderr, "ailoop: error: missing operand\n");
	al_cli_usage(stderr, al_command_find(cmd));
	return AL_EXIT_USAGE;
}

int al_cli_fail(int code, const char *fmt, ...)
{
	va_list ap;

	fputs("ailoop: error: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return code;
}

int al_cli_getopt(int argc, char **argv, const char *shorts, const struct option *longs,
		  const char *name, int *exit_code)
{
	const struct al_command *cmd = al_command_find(name);
	char spec[64];
	int c, idx = -1;

	snprintf(spec, sizeof(spec), ":h%s", shorts);
	opterr = 0;
	c = getopt_long(argc, argv, spec, longs, &idx);
	if (c == 'h' || (c == 0 && idx >= 0 && !strcmp(longs[idx].name, "help"))) {
		al_cli_help(stdout, cmd);
		*exit_code = AL_EXIT_OK;
		return '?';
	}
	if (c == '?' || c == ':') {
		const char *arg = argv[optind - 1];

		if (c == ':')
			fprintf(stderr, "ailoop: error: option '%s' needs a value\n", arg);
		else if (optopt && !al_starts_with(arg, "--"))
			fprintf(stderr, "ailoop: error: unknown option '-%c'\n", optopt);
		else
			fprintf(stderr, "ailoop: error: unknown option '%s'\n", arg);
		al_cli_usage(stderr, cmd);
		*exit_code = AL_EXIT_USAGE;
		return '?';
	}
	return c;
}

int al_cli_exit_code(int err)
{
	switch (err) {
	case AL_OK: return AL_EXIT_OK;
	case AL_EUSAGE: return AL_EXIT_USAGE;
	case AL_EINVALID: return AL_EXIT_DATAERR;
	case AL_ENOTFOUND: return AL_EXIT_NOINPUT;
	case AL_ENORUNNER: return AL_EXIT_UNAVAILABLE;
	case AL_ELOCKED: return AL_EXIT_TEMPFAIL;
	case AL_ETIMEOUT: return AL_EXIT_TIMEOUT;
	case AL_EINTR: return AL_EXIT_INTERRUPTED;
	case AL_EBLOCKED: return AL_EXIT_BLOCKED;
	case AL_EMOVED: return AL_EXIT_FAILED; /* an agent's doing; the run is paused */
	case AL_ECONFLICT: return AL_EXIT_FAILED; /* the user's change; the run is paused */
	default: return AL_EXIT_SOFTWARE;
	}
}

bool al_cli_color(FILE *f)
{
	const char *no = getenv("NO_COLOR");

	return isatty(fileno(f)) && !(no && *no);
}

static bool is_root(const char *dir)
{
	struct al_strbuf sb = AL_STRBUF_INIT;
	struct stat st;
	bool found;

	al_strbuf_addf(&sb, "%s/.ai-loop", dir);
	found = stat(sb.buf, &st) == 0 && S_ISDIR(st.st_mode);
	if (!found) {
		al_strbuf_reset(&sb);
		al_strbuf_addf(&sb, "%s/.git", dir);
		found = stat(sb.buf, &st) == 0;
	}
	al_strbuf_release(&sb);
	return found;
}

int al_cli_enter_root(const char *flow, char **flow_out)
{
	char cwd[PATH_MAX], root[PATH_MAX];
	struct al_strbuf abs = AL_STRBUF_INIT;
	size_t rlen;

	*flow_out = NULL;
	if (!getcwd(cwd, sizeof(cwd)))
		return al_err(AL_ERROR, "cannot read the current directory: %s", strerror(errno));
	memcpy(root, cwd, sizeof(root));
	while (!is_root(root)) {
		char *slash = strrchr(root, '/');

		if (!slash || slash == root) {
			memcpy(root, cwd, sizeof(root)); /* none: stay where we are */
			break;
		}
		*slash = '\0';
	}
	if (chdir(root) < 0)
		return al_err(AL_ERROR, "cannot enter '%s': %s", root, strerror(errno));
	if (!flow) {
		*flow_out = al_strdup(".ai-loop/flow.yaml");
		return 0;
	}
	if (flow[0] == '/')
		al_strbuf_adds(&abs, flow);
	else
		al_strbuf_addf(&abs, "%s/%s", cwd, flow);
	rlen = strlen(root);
	if (!strncmp(abs.buf, root, rlen) && abs.buf[rlen] == '/')
		*flow_out = al_strdup(abs.buf + rlen + 1);
	else
		*flow_out = al_strbuf_detach(&abs, NULL);
	al_strbuf_release(&abs);
	return 0;
}

int al_cli_enter_repo(void)
{
	char *ignored;

	if (al_cli_enter_root(NULL, &ignored) < 0)
		return al_cli_fail(AL_EXIT_SOFTWARE, "%s", al_errmsg());
	free(ignored);
	return 0;
}

int al_cli_lock_worktree(struct al_git *git, int *fd)
{
	int rc = al_worktree_lock(fd, al_git_dir(git));

	if (rc == AL_ELOCKED)
		return al_cli_fail(AL_EXIT_TEMPFAIL, "%s: wait for it to end, or stop it",
				   al_errmsg());
	/* the first to look at the work tree after a restart: a run's files first */
	if (rc == 0)
		rc = al_git_recover_restart(git);
	return rc < 0 ? al_cli_fail(AL_EXIT_SOFTWARE, "%s", al_errmsg()) : 0;
}

void al_cli_lost(struct al_git *g, const char *rev, const char *dir, const char *skip,
		 const char *named_in, struct al_strbuf *paths)
{
	char **names = NULL;
	size_t n = 0;

	if (al_git_ls(g, rev, dir, &names, &n) < 0)
		n = 0;
	for (size_t i = 0; i < n; i++) {
		char *path = al_xprintf("%s/%s", dir, names[i]);
		struct stat st;

		if (skip && !strcmp(path, skip)) {
			/* not asked for */
		} else if (lstat(path, &st) == 0) {
			if (S_ISDIR(st.st_mode))
				al_cli_lost(g, rev, path, skip, named_in, paths);
		} else if (errno == ENOENT && (!named_in || strstr(named_in, path))) {
			al_strbuf_addf(paths, " %s", path);
		}
		free(path);
	}
	al_strv_free(names, n);
}
