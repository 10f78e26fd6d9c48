#ifndef AILOOP_CLI_H
#define AILOOP_CLI_H

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>

/*
 * The command line: one cmd_<name>() per subcommand (src/cli/), each
 * returning the process exit status. Only main() and the commands exit.
 */
enum al_exit {
	AL_EXIT_OK = 0,
	AL_EXIT_FAILED = 1,       /* flow finished without success */
	AL_EXIT_TIMEOUT = 2,      /* a node's timeout expired */
	AL_EXIT_INTERRUPTED = 3,  /* SIGINT/SIGTERM; run paused, resumable */
	AL_EXIT_BLOCKED = 4,      /* circuit breaker; resumable */
	AL_EXIT_USAGE = 64,
	AL_EXIT_DATAERR = 65,     /* invalid flow or agent file */
	AL_EXIT_NOINPUT = 66,     /* a needed file is missing */
	AL_EXIT_UNAVAILABLE = 69, /* an agent runner is not installed */
	AL_EXIT_SOFTWARE = 70,    /* internal error */
	AL_EXIT_TEMPFAIL = 75,    /* locked by another live ailoop */
};

/* The line of a commit `ailoop land` made that names the run, as a git trailer. */
#define AL_LAND_TRAILER "Ailoop-Run: "

struct al_command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *usage;   /* options and arguments after the name */
	const char *summary; /* one line */
	const char *help;    /* the rest of `ailoop help NAME` */
};

extern const struct al_command al_commands[];
const struct al_command *al_command_find(const char *name);

int cmd_validate(int argc, char **argv);
int cmd_graph(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_resume(int argc, char **argv);
int cmd_status(int argc, char **argv);
int cmd_log(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_memory(int argc, char **argv);
int cmd_episodes(int argc, char **argv);
int cmd_setup(int argc, char **argv);
int cmd_land(int argc, char **argv);
int cmd_agent(int argc, char **argv);
/*
 * `ailoop episodes search TEXT... [--json] [--limit N]` (argv[0] is the
 * subcommand's name): the episodes ranked for TEXT, with their scores.
 */
int al_cmd_episodes_search(int argc, char **argv);
int cmd_runs(int argc, char **argv);
int cmd_clean(int argc, char **argv);

/*
 * The command main() runs (al_commands, main.c): the one whose usage and
 * help al_cli_getopt and al_cli_operands print. Set before its function runs.
 */
void al_cli_running(const struct al_command *cmd);

/*
 * Option parsing shared by the commands: getopt_long with our own messages.
 * Returns the option, or -1 at the end. `-h`/`--help` print the running command's
 * help and make *exit_code 0; an unknown option or a missing argument
 * prints the usage and makes it 64. In both cases the return is '?'.
 */
int al_cli_getopt(int argc, char **argv, const char *shorts, const struct option *longs,
		  int *exit_code);

void al_cli_usage(FILE *out, const struct al_command *cmd);
/*
 * Checks the number of operands left after the options: 0 if it is from
 * `min` to `max`, else names the first operand too many (or says one is
 * missing), prints the running command's usage and returns 64.
 */
int al_cli_operands(int argc, char **argv, int min, int max);
void al_cli_help(FILE *out, const struct al_command *cmd);
/* "ailoop: error: …" on stderr; returns `code` for `return al_cli_fail(...)`. */
int al_cli_fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The exit status for an AL_E* error code. */
int al_cli_exit_code(int err);
/* Colour only on a terminal and never when NO_COLOR is set. */
bool al_cli_color(FILE *f);

/*
 * Watching a run (status --watch, log --follow): --interval's seconds,
 * from 0.1 to 3600, into *ms; otherwise says so and returns 64.
 */
#define AL_CLI_INTERVAL_MS 1000
int al_cli_interval(const char *text, int *ms);
/*
 * How a run that is no longer going ended, as the exit status `ailoop run`
 * gives: 0 complete, 2 timeout, 3 paused (or stopped: killed), 4 blocked,
 * 1 anything else.
 */
int al_cli_run_exit_code(const char *status);

/*
 * Finds the repository root (the nearest directory up from the current one
 * that holds .ai-loop or .git) and makes it the current directory, so that
 * paths in flows resolve. `*flow` (as the user gave it, or NULL for the
 * default .ai-loop/flow.yaml) is rewritten relative to the root. Caller
 * frees *flow_out.
 */
int al_cli_enter_root(const char *flow, char **flow_out);

/* Enters the repository root (al_cli_enter_root) for commands without a
 * flow. Returns 0 or the exit status, after saying why. */
int al_cli_enter_repo(void);

struct al_diags;
struct al_flow;
/*
 * Enters the root and loads the flow (--flow or the default), printing the
 * diagnostics or error. Returns 0 with *out set, or the exit status.
 */
int al_cli_load_flow(const char *flow_arg, struct al_diags *diags, struct al_flow **out);

struct al_git;
struct al_strbuf;
/*
 * The paths under `dir` in the tree of `rev` that the work tree lost, but
 * `skip`, each after a space: one gone whole (a directory with all it
 * held) is named once; below a directory still there, what it lost. With
 * `named_in` (a flow's text), only the paths it names, or a directory of
 * one.
 */
void al_cli_lost(struct al_git *g, const char *rev, const char *dir, const char *skip,
		 const char *named_in, struct al_strbuf *paths);

/*
 * The run's never-committed files ignored on every branch (al_git_ignore_runs);
 * when that fails, a warning: the run goes on.
 */
void al_cli_ignore_runs(struct al_git *git);

/* How to recover a run whose state files are damaged (on stderr). */
void al_cli_damage_advice(const char *run_dir, const char *run_id);

struct al_exec;
/* Prints how a run ended (text or JSON) and returns the exit status. */
int al_cli_report_run(struct al_exec *ex, int rc, bool json);
/*
 * Before a new run, with the work tree's lock held (`lock_fd`): unless
 * `new_run`, if an interrupted run could be resumed,
 * asks on a terminal whether to resume it (and does) or start anew, and
 * elsewhere fails naming 'ailoop resume' and --new. Returns true, with the
 * exit status in *code, when the command should stop there.
 */
bool al_cli_check_resumable(bool new_run, bool json, int lock_fd, int *code);

struct al_git;
/*
 * Takes the work tree's lock (al_worktree_lock) for `run` and `resume`.
 * Returns 0 with *fd set, or the exit status (75 naming the holder) after
 * saying why.
 */
int al_cli_lock_worktree(struct al_git *git, int *fd);


#endif
