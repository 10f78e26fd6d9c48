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
