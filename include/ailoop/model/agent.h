#ifndef AILOOP_AGENT_H
#define AILOOP_AGENT_H

#include "ailoop/base/diag.h"
#include "ailoop/model/doc.h"
#include "ailoop/model/metric.h"
#include "ailoop/base/util.h"

#include <pcre2.h>
#include <stdbool.h>
#include <stddef.h>

/*
 * An agent file: Markdown whose YAML front matter says how to run it and
 * whose body is the prompt. Besides the keys of Claude Code agent files
 * (name, description, tools, disallowedTools, model) ailoop reads runner,
 * command, timeout and, for sensors, target, metrics, pass_if and fail_if.
 */
#define AL_AGENT_MAX_BYTES (1024 * 1024)

/*
 * How often an agent whose output its role cannot read (a controller's
 * `target-met`, a sensor's `status`) is asked again, told what was wrong:
 * `format_retries` of the agent file or of the flow's `defaults`.
 */
#define AL_DEFAULT_FORMAT_RETRIES 1
#define AL_MAX_FORMAT_RETRIES 5

/* One entry of `model: {claude: sonnet, codex: gpt-5}`. */
struct al_agent_model {
	const char *runner;
	const char *model;
	struct al_pos runner_pos, pos;
};

struct al_agent {
	char *path;    /* relative to the repository root */
	bool loaded;   /* false if missing or invalid (already reported) */
	char *text;
	size_t text_len;
	struct al_doc *doc; /* front matter, NULL if there is none */

	const char *name;
	const char *description;
	const char *model;       /* for every runner; NULL if none or given per runner */
	struct al_pos model_pos;
	struct al_agent_model *models; /* `model` as a map keyed by runner */
	size_t nmodels;
	const char *runner;      /* NULL: the flow's default runner */
	struct al_pos runner_pos;
	char *tools;             /* comma-separated, NULL if not given */
	char *disallowed_tools;
	struct al_pos tools_pos, disallowed_pos; /* of the keys */
	const char *command_sh;  /* `command` as a string: run with sh -c */
	const char **command_argv; /* `command` as a list, NULL-terminated */
	struct al_pos command_pos; /* of its value */
	int timeout;             /* seconds, 0 = the flow's default */
	int format_retries;      /* -1 = the flow's default (format_retries below) */
	/*
	 * `session: continue`: each call of this agent in a node continues the
	 * CLI session of its previous call there (runner.h, {session});
	 * `fresh` (the default): every call starts a new one.
	 */
	bool session_continue;
	struct al_pos session_pos; /* of the value */
	const char *target;
	struct al_metric *metrics;
	size_t nmetrics;
	pcre2_code *pass_if;
	pcre2_code *fail_if;

	const char *body; /* the prompt (points into text) */
	size_t body_len;
};

extern const char *const al_session_names[2]; /* "fresh", "continue" */

/* The agents a flow refers to, each loaded once. */
struct al_agents {
	struct al_agent **v;
	size_t n, alloc;
	struct al_strmap by_path;
};

/*
 * Reads the agent file at `path`. Problems in the file are reported in it;
 * a missing file is reported at `ref` (where it was named). Returns the
 * agent, loaded or not, owned by `agents`.
 */
struct al_agent *al_agents_load(struct al_agents *agents, const char *path,
				struct al_pos ref, struct al_diags *d);
void al_agents_release(struct al_agents *agents);

/* True if the agent runs a command itself rather than through a runner. */
static inline bool al_agent_is_command(const struct al_agent *a)
{
	return a->command_sh || a->command_argv;
}

/*
 * The model the agent asks of runner `runner`: its entry in a per-runner
 * map (none: NULL, the runner's default), else its one `model`. *pos (if
 * not NULL) is where the file gives it.
 */
const char *al_agent_model(const struct al_agent *a, const char *runner, struct al_pos *pos);

struct al_check;
/* Reads a map runner -> model (`{claude: sonnet}`) into *out; returns how many. */
size_t al_read_models(struct al_check *c, const struct al_val *map, struct al_agent_model **out);
const struct al_agent_model *al_models_find(const struct al_agent_model *v, size_t n,
					    const char *runner);

#endif
