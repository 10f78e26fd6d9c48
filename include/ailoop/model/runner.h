#ifndef AILOOP_RUNNER_H
#define AILOOP_RUNNER_H

#include "ailoop/base/diag.h"

#include <stdbool.h>
#include <stddef.h>

/*
 * Runner presets: how to start an agent CLI headless so that it can edit
 * files. A command template may hold {model}, {tools} (the agent's
 * `tools` as written: "Read,Bash(git *)"), {tool-names} (the tools alone:
 * "Read,Bash"), {disallowed-tools}, {approval-mode} ("yolo" for an agent
 * that may have to run commands, else "auto_edit"), {prompt} and
 * {prompt-file}; an argument whose placeholders all expand to nothing is
 * left out (so "--model={model}" vanishes when there is no model), except
 * that a `tools` given as an empty list keeps "--tools={tool-names}": no
 * tools. The prompt goes to standard input, is the last argument ({prompt}
 * where the template says), or is a file whose path is the last argument
 * ({prompt-file} where the template says).
 *
 * {session}, an argument of its own, becomes the arguments that carry an
 * agent's CLI session (struct al_runner_session): for an agent of
 * `session: fresh`, `fresh`; for one of `session: continue`, `start` at its
 * first call and `resume` once its node's state keeps the id of its
 * previous call; {session-id} there is that id (or, in `start`, one
 * ailoop chose for a CLI that takes it). A runner's `session:` says them;
 * without it they are its output format's (al_stream_session): claude-json
 * fresh --no-session-persistence, resume --resume ID; codex-json fresh
 * --ephemeral, resume `resume ID -c sandbox_mode="workspace-write"` after
 * `exec` and its own options, as resume does not inherit the sandbox, its
 * usage cumulative; gemini-json resume --resume ID; opencode-json resume
 * --session ID; text none.
 */
enum al_prompt_mode { AL_PROMPT_STDIN, AL_PROMPT_ARG, AL_PROMPT_FILE };

/* What a runner's program prints: text, or one of the CLIs' JSON (usage.h reads it). */
enum al_stream { AL_STREAM_TEXT, AL_STREAM_CLAUDE, AL_STREAM_CODEX, AL_STREAM_GEMINI,
		 AL_STREAM_OPENCODE };

/* "text", "claude-json", "codex-json", "gemini-json", "opencode-json" */
extern const char *const al_stream_names[5];

/* Which models a runner's program takes; ANY for runners a flow defines. */
enum al_models {
	AL_MODELS_ANY,
	AL_MODELS_CLAUDE,   /* an alias (sonnet, opus, haiku) or claude-... */
	AL_MODELS_OPENAI,   /* not a Claude or Gemini model */
	AL_MODELS_GEMINI,   /* not a Claude or OpenAI model */
	AL_MODELS_PROVIDER, /* provider/model */
};

/* How a runner's CLI keeps sessions: each list NULL-terminated, or NULL for none. */
struct al_runner_session {
	const char *const *fresh;  /* an agent of session: fresh */
	const char *const *start;  /* the first call of one that continues; may hold {session-id} */
	const char *const *resume; /* a later call of it, with {session-id}; NULL: none resumes */
	/* the usage a resumed session prints counts its earlier calls too */
	bool cumulative_usage;
};

struct al_runner {
	const char *name;
	const char *const *argv; /* NULL-terminated template */
	enum al_prompt_mode prompt;
	const char *install; /* how to install the program, for the error */
	struct al_pos pos;   /* where the flow defines it; file NULL if built in */
	bool owns_argv;
	enum al_models models;
	enum al_stream output; /* what its program prints (usage.h): text unless a preset's */
	struct al_runner_session session; /* the flow's `session:` if has_session */
	bool has_session;
};

struct al_runners {
	struct al_runner *v;
	size_t n, alloc;
};

/* The sessions of runner `r`: its own `session:`, else its output format's. */
const struct al_runner_session *al_runner_session(const struct al_runner *r);
/* True if a session's first call gives the CLI an id ailoop chose: {session-id} in `start`. */
bool al_runner_session_chosen(const struct al_runner *r);

/* Fills `rs` with the built-in presets: claude, codex, gemini, aider, opencode. */
void al_runners_init(struct al_runners *rs);
void al_runners_release(struct al_runners *rs);
struct al_runner *al_runners_find(const struct al_runners *rs, const char *name);
/*
 * The runner called `name`, added (empty) if it is not there yet. `name`
 * is not copied: it must live as long as `rs` (the flow's document does).
 */
struct al_runner *al_runners_get(struct al_runners *rs, const char *name);
/* Comma-separated names, for error messages. Caller frees. */
char *al_runners_names(const struct al_runners *rs);

extern const char *const al_prompt_mode_names[3];

/*
 * NULL if runner `r` can take `model`, else what it takes instead (a
 * phrase to follow "it takes ").
 */
const char *al_runner_model_problem(const struct al_runner *r, const char *model);

/* True if the runner's template has placeholder `name` ("tools", ...). */
bool al_runner_uses(const struct al_runner *r, const char *name);

/* True if the comma-separated `tools` name tool `name`, with or without a (pattern). */
bool al_tools_include(const char *tools, const char *name);
/*
 * True if `tools` (NULL: every tool) let an agent run `program` in its
 * shell: the whole of Bash, or a pattern for it ("Bash(make:*)" for make).
 */
bool al_tools_allow_command(const char *tools, const char *program);

/* What fills a runner template's placeholders. NULL means empty. */
struct al_runner_vars {
	const char *model;
	const char *tools;
	const char *disallowed_tools;
	bool commands;           /* its role may run commands: sensor, actuator, action */
	const char *prompt;      /* for prompt: arg */
	const char *prompt_file; /* for prompt: file */
	bool session_keep;       /* the agent continues its sessions: none is thrown away */
	const char *session;     /* the session to resume ({session}), or NULL */
	const char *session_new; /* the id a first call's {session-id} gives, or NULL */
};

/*
 * Expands the runner's template into a NULL-terminated argv (caller frees
 * each string and the array). The prompt or prompt file is appended as the
 * last argument when the template has no {prompt}/{prompt-file} for it.
 */
char **al_runner_argv(const struct al_runner *r, const struct al_runner_vars *vars);
void al_argv_free(char **argv);

#endif
