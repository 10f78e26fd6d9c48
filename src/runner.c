#include "ailoop/runner.h"
#include "ailoop/strbuf.h"
#include "ailoop/util.h"

#include <stdlib.h>
#include <string.h>

const char *const al_prompt_mode_names[3] = { "stdin", "arg", "file" };

/*
 * Flags checked against each CLI's --help: claude 2.1, codex exec,
 * gemini, opencode run; aider's from its documentation.
 */
static const char *const claude_argv[] = {
	"claude", "-p", "--model={model}", "--permission-mode", "acceptEdits",
	"--allowedTools={tools}", "--disallowedTools={disallowed-tools}",
	"--output-format", "text", NULL,
};
static const char *const codex_argv[] = {
	"codex", "exec", "--model={model}", "--sandbox", "workspace-write",
	"--skip-git-repo-check", "--color", "never", "-", NULL,
};
static const char *const gemini_argv[] = {
	"gemini", "--model={model}", "--approval-mode", "auto_edit", "--skip-trust",
	"--output-format", "text", "--prompt", "Carry out the instructions given above.", NULL,
};
static const char *const aider_argv[] = {
	"aider", "--model={model}", "--yes-always", "--no-auto-commits", "--no-pretty",
	"--no-stream", "--message-file", "{prompt-file}", NULL,
};
static const char *const opencode_argv[] = {
	"opencode", "run", "--model={model}",
	"Carry out the instructions in the attached file.", "--file", "{prompt-file}", NULL,
};

static const struct al_runner builtins[] = {
	{ "claude", claude_argv, AL_PROMPT_STDIN, "npm install -g @anthropic-ai/claude-code",
	  { NULL, 0, 0 }, false },
	{ "codex", codex_argv, AL_PROMPT_STDIN, "npm install -g @openai/codex",
	  { NULL, 0, 0 }, false },
	{ "gemini", gemini_argv, AL_PROMPT_STDIN, "npm install -g @google/gemini-cli",
	  { NULL, 0, 0 }, false },
	{ "aider", aider_argv, AL_PROMPT_FILE, "python3 -m pip install aider-install && aider-install",
	  { NULL, 0, 0 }, false },
	{ "opencode", opencode_argv, AL_PROMPT_FILE, "npm install -g opencode-ai",
	  { NULL, 0, 0 }, false },
};

void al_runners_init(struct al_runners *rs)
{
	memset(rs, 0, sizeof(*rs));
	for (size_t i = 0; i < AL_ARRAY_SIZE(builtins); i++)
		*al_runners_get(rs, builtins[i].name) = builtins[i];
}

void al_runners_release(struct al_runners *rs)
{
	for (size_t i = 0; i < rs->n; i++)
		if (rs->v[i].owns_argv)
			free((void *)rs->v[i].argv);
	free(rs->v);
	memset(rs, 0, sizeof(*rs));
}

struct al_runner *al_runners_find(const struct al_runners *rs, const char *name)
{
	for (size_t i = 0; i < rs->n; i++)
		if (!strcmp(rs->v[i].name, name))
			return &rs->v[i];
	return NULL;
}

struct al_runner *al_runners_get(struct al_runners *rs, const char *name)
{
	struct al_runner *r = al_runners_find(rs, name);

	if (r)
		return r;
	AL_GROW(rs->v, rs->n, rs->alloc);
	r = &rs->v[rs->n++];
	memset(r, 0, sizeof(*r));
	r->name = name;
	return r;
}

char *al_runners_names(const struct al_runners *rs)
{
	struct al_strbuf sb = AL_STRBUF_INIT;

	for (size_t i = 0; i < rs->n; i++)
		al_strbuf_addf(&sb, "%s%s", i ? ", " : "", rs->v[i].name);
	return al_strbuf_detach(&sb, NULL);
}

static const char *lookup(const struct al_runner_vars *v, const char *name, size_t len)
{
	static const char *const names[] = { "model", "tools", "disallowed-tools", "prompt",
					     "prompt-file" };
	const char *values[] = { v->model, v->tools, v->disallowed_tools, v->prompt,
				 v->prompt_file };

	for (size_t i = 0; i < AL_ARRAY_SIZE(names); i++)
		if (strlen(names[i]) == len && !memcmp(names[i], name, len))
			return values[i] ? values[i] : "";
	return NULL;
}

/*
 * Expands one template argument. Returns NULL when it had placeholders and
 * all of them were empty: such an argument ("--model={model}") is dropped.
 */
static char *expand(const char *arg, const struct al_runner_vars *v, bool *used_prompt,
		    bool *used_file)
{
	struct al_strbuf sb = AL_STRBUF_INIT;
	bool any = false, filled = false;

	for (const char *p = arg; *p;) {
		const char *close = *p == '{' ? strchr(p, '}') : NULL;
		const char *val = close ? lookup(v, p + 1, (size_t)(close - p - 1)) : NULL;

		if (!val) {
			al_strbuf_addch(&sb, *p++);
			continue;
		}
		any = true;
		filled |= *val != '\0';
		if (!strncmp(p, "{prompt}", 8))
			*used_prompt = true;
		if (!strncmp(p, "{prompt-file}", 13))
			*used_file = true;
		al_strbuf_adds(&sb, val);
		p = close + 1;
	}
	if (any && !filled) {
		al_strbuf_release(&sb);
		return NULL;
	}
	return al_strbuf_detach(&sb, NULL);
}

char **al_runner_argv(const struct al_runner *r, const struct al_runner_vars *vars)
{
	size_t n = 0, k = 0;
	bool used_prompt = false, used_file = false;
	char **argv;

	while (r->argv[n])
		n++;
	argv = al_calloc(n + 2, sizeof(*argv));
	for (size_t i = 0; i < n; i++) {
		char *a = expand(r->argv[i], vars, &used_prompt, &used_file);

		if (a)
			argv[k++] = a;
	}
	if (r->prompt == AL_PROMPT_ARG && !used_prompt)
		argv[k++] = al_strdup(vars->prompt ? vars->prompt : "");
	else if (r->prompt == AL_PROMPT_FILE && !used_file)
		argv[k++] = al_strdup(vars->prompt_file ? vars->prompt_file : "");
	argv[k] = NULL;
	return argv;
}

void al_argv_free(char **argv)
{
	if (!argv)
		return;
	for (size_t i = 0; argv[i]; i++)
		free(argv[i]);
	free(argv);
}
