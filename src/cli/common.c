#include "ailoop/cli/cli.h"
#include "ailoop/exec/exec.h"
#include "ailoop/git/git.h"
#include "ailoop/store/run.h"
#include "ailoop/base/fsutil.h"
#include "ailoop/base/strbuf.h"
#include "ailoop/base/util.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The command main() runs, whose usage and help its options print. */
static const struct al_command *running;

void al_cli_running(const struct al_command *cmd)
{
	running = cmd;
}

void al_cli_usage(FILE *out, const struct al_command *cmd)
{
	fprintf(out, "usage: ailoop %s %s\n", cmd->name, cmd->usage);
}

void al_cli_help(FILE *out, const struct al_command *cmd)
{
	al_cli_usage(out, cmd);
	fprintf(out, "\n%s.\n\n%s", cmd->summary, cmd->help);
}

int al_cli_operands(int argc, char **argv, int min, int max)
{
	int n = argc - optind;

	if (n >= min && n <= max)
		return 0;
	if (n > max)
		fprintf(stderr, "ailoop: error: unexpected operand '%s'\n", argv[optind + max]);
	else
		fprintf(stderr, "ailoop: error: missing operand\n");
	al_cli_usage(stderr, running);
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
		  int *exit_code)
{
	const struct al_command *cmd = running;
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

void al_cli_ignore_runs(struct al_git *git)
{
	if (al_git_ignore_runs(git) < 0)
		fprintf(stderr, "ailoop: warning: cannot add the run's ignore rules to the "
			"repository's info/exclude (%s): on another branch, 'git add -A' would "
			"add the run's logs and event log\n", al_errmsg());
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

static int count_run_commits(const char *oid, const char *message, int64_t time, void *data)
{
	struct al_iteration it;
	size_t *count = data;
	int stop = 0;

	(void)oid;
	(void)time;
	++*count;
	if (al_iteration_parse(&it, message)) {
		stop = al_iteration_starts_run(&it);
		al_iteration_release(&it);
	}
	return stop;
}

/*
 * What else of .ai-loop the last commit has and the work tree lost (the
 * flow, the agents, the runs' .gitignore: an agent that removed .ai-loop
 * whole), each path after a space.
 */
static void lost_beside(const char *run_dir, struct al_strbuf *paths)
{
	struct al_git *g = NULL;

	if (al_git_open(&g) < 0)
		return;
	al_cli_lost(g, "HEAD", ".ai-loop", AL_RUNS_DIR, NULL, paths);
	al_cli_lost(g, "HEAD", AL_RUNS_DIR, run_dir, NULL, paths);
	al_git_free(g);
}

void al_cli_damage_advice(const char *run_dir, const char *run_id)
{
	struct al_strbuf also = AL_STRBUF_INIT;

	lost_beside(run_dir, &also);
	fprintf(stderr, "ailoop: the run's state is damaged; what was committed is safe. Restore "
		"the run's files%s from its last commit and continue:\n"
		"    git checkout HEAD -- %s%s && ailoop resume %s\n",
		also.len ? " (and what else of .ai-loop is gone)" : "", run_dir,
		also.len ? also.buf : "", run_id);
	al_strbuf_release(&also);
}

/* Prints how the run ended and what to do with its branch; the exit status. */
int al_cli_report_run(struct al_exec *ex, int rc, bool json)
{
	const char *status = ex->run->st.status, *branch = ex->run->st.branch;
	const char *base = ex->run->st.base_branch;
	size_t commits = 0;
	int code;

	if (rc == AL_EINTR)
		code = AL_EXIT_INTERRUPTED;
	else if (rc < 0 && rc != AL_EAGENT)
		code = al_cli_exit_code(rc);
	else if (!strcmp(status, "complete"))
		code = AL_EXIT_OK;
	else if (!strcmp(status, "timeout"))
		code = AL_EXIT_TIMEOUT;
	else if (!strcmp(status, "blocked"))
		code = AL_EXIT_BLOCKED;
	else
		code = AL_EXIT_FAILED;
	if (rc < 0)
		fprintf(stderr, "ailoop: %s: %s\n", rc == AL_EINTR ? "interrupted"
			: rc == AL_EBLOCKED ? "blocked" : "error",
			rc == AL_EINTR ? "the run is paused" : al_errmsg());
	al_git_walk(ex->git, "HEAD", NULL, count_run_commits, &commits);
	if (json) {
		json_t *o = json_pack("{s:s, s:s, s:s?, s:s?, s:I, s:i}", "run_id",
				      ex->run->st.run_id, "status", status, "branch", branch,
				      "base_branch", base, "commits", (json_int_t)commits,
				      "exit_code", code);
		char *text = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);

		printf("%s\n", text);
		free(text);
		json_decref(o);
		return code;
	}
	if (rc == AL_EINVALID) {
		al_cli_damage_advice(ex->run->dir, ex->run->st.run_id);
		return code;
	}
	if (rc == AL_EBLOCKED) {
		printf("run %s is blocked: once you have dealt with the cause above, "
		       "'ailoop resume %s' goes on (and resets an open circuit breaker)\n",
		       ex->run->st.run_id, ex->run->st.run_id);
		return code;
	}
	if (code == AL_EXIT_INTERRUPTED || (rc < 0 && rc != AL_EAGENT)) {
		printf("run %s is paused: continue it with 'ailoop resume %s'\n",
		       ex->run->st.run_id, ex->run->st.run_id);
		return code;
	}
	printf("run %s: %s\n", ex->run->st.run_id, status);
	if (rc == AL_EAGENT && al_exec_retry(ex->run, true) == 0)
		printf("  retry:        ailoop resume %s (runs the step that failed again)\n",
		       ex->run->st.run_id);
	printf("  branch:       %s\n  base branch:  %s\n  commits:      %zu\n",
	       branch ? branch : "(detached HEAD)", base ? base : "-", commits);
	if (branch && base && strcmp(branch, base)) {
		printf("  land:         ailoop land %s (its change on %s, one commit)\n",
		       ex->run->st.run_id, base);
		printf("  merge:        ailoop land --merge %s (keeping its history)\n",
		       ex->run->st.run_id);
		printf("  diff:         git diff %s...%s\n", base, branch);
		printf("  discard:      git checkout %s && git branch -D %s\n", base, branch);
	}
	return code;
}

int al_cli_interval(const char *text, int *ms)
{
	char *end = NULL;
	double s = strtod(text, &end);

	if (end == text || *end || !(s >= 0.1 && s <= 3600))
		return al_cli_fail(AL_EXIT_USAGE, "--interval takes seconds from 0.1 to 3600, not '%s'",
				   text);
	*ms = (int)(s * 1000 + 0.5);
	return 0;
}

int al_cli_run_exit_code(const char *status)
{
	if (!strcmp(status, "complete"))
		return AL_EXIT_OK;
	if (!strcmp(status, "timeout"))
		return AL_EXIT_TIMEOUT;
	if (!strcmp(status, "blocked"))
		return AL_EXIT_BLOCKED;
	if (!strcmp(status, "paused") || !strcmp(status, "running"))
		return AL_EXIT_INTERRUPTED;
	return AL_EXIT_FAILED;
}
