#include "ailoop/model/runner.h"
#include "ailoop/base/strbuf.h"
#include "ailoop/base/util.h"

#include <stdlib.h>
#include <string.h>

const char *const al_prompt_mode_names[3] = { "stdin", "arg", "file" };
const char *const al_stream_names[5] = { "text", "claude-json", "codex-json", "gemini-json",
					 "opencode-json" };

/*
 * Flags checked against each CLI's --help: claude 2.1, codex exec 0.171,
 * gemini 0.61, opencode run 1.18 (each run for real by tests/cli/t75,
 * t123-t125); aider's from its documentation. The README ("Runner
 * presets") says what each one does with an agent file.
 */
static const char *const claude_argv[] = {
	"claude", "-p", "--model={model}", "--permission-mode", "acceptEdits",
	"--tools={tool-names}", "--allowedTools={tools}",
	"--disallowedTools={disallowed-tools}", "{session}",
	"--output-format", "stream-json", "--verbose", NULL,
};
static const char *const codex_argv[] = {
	"codex", "exec", "--model={model}", "--sandbox", "workspace-write", "--color", "never",
	"{session}", "--skip-git-repo-check", "--json", "-", NULL,
};
static const char *const gemini_argv[] = {
	"gemini", "--model={model}", "--approval-mode", "{approval-mode}", "--skip-trust",
	"{session}", "--output-format", "json", "--prompt", "Carry out the instructions given above.", NULL,
};
static const char *const aider_argv[] = {
	"aider", "--model={model}", "--yes-always", "--no-auto-commits", "--no-gitignore",
	"--no-check-update", "--no-show-release-notes", "--no-pretty", "--no-stream",
	"--message-file", "{prompt-file}", NULL,
};
/*
 * The prompt on stdin reaches the model whole, as the user's message; given
 * with --file it arrived as a read result, cut at 2,000 lines and 2,000
 * characters a line.
 */
static const char *const opencode_argv[] = {
	"opencode", "run", "--model={model}", "{session}", "--format", "json", NULL,
};

static const char *const claude_fresh[] = { "--no-session-persistence", NULL };
static const char *const claude_resume[] = { "--resume", "{session-id}", NULL };
static const char *const codex_fresh[] = { "--ephemeral", NULL };
static const char *const codex_resume[] = { "resume", "{session-id}", "-c",
					    "sandbox_mode=\"workspace-write\"", NULL };
static const char *const opencode_resume[] = { "--session", "{session-id}", NULL };

/* What {session} gives for each output format, in al_stream's order (runner.h). */
static const struct al_runner_session stream_sessions[] = {
	{ NULL, NULL, NULL, false },
	{ claude_fresh, NULL, claude_resume, false },
	{ codex_fresh, NULL, codex_resume, true },
	{ NULL, NULL, claude_resume, false },
	{ NULL, NULL, opencode_resume, false },
};

static const struct al_runner builtins[] = {
	{ "claude", claude_argv, AL_PROMPT_STDIN, "npm install -g @anthropic-ai/claude-code",
	  { NULL, 0, 0 }, false, AL_MODELS_CLAUDE, AL_STREAM_CLAUDE, { 0 }, false },
	{ "codex", codex_argv, AL_PROMPT_STDIN, "npm install -g @openai/codex",
	  { NULL, 0, 0 }, false, AL_MODELS_OPENAI, AL_STREAM_CODEX, { 0 }, false },
	{ "gemini", gemini_argv, AL_PROMPT_STDIN, "npm install -g @google/gemini-cli",
	  { NULL, 0, 0 }, false, AL_MODELS_GEMINI, AL_STREAM_GEMINI, { 0 }, false },
	{ "aider", aider_argv, AL_PROMPT_FILE, "python3 -m pip install aider-install && aider-install",
	  { NULL, 0, 0 }, false, AL_MODELS_ANY, AL_STREAM_TEXT, { 0 }, false },
	{ "opencode", opencode_argv, AL_PROMPT_STDIN, "npm install -g opencode-ai",
	  { NULL, 0, 0 }, false, AL_MODELS_PROVIDER, AL_STREAM_OPENCODE, { 0 }, false },
};

const struct al_runner_session *al_runner_session(const struct al_runner *r)
{
	return r->has_session ? &r->session : &stream_sessions[r->output];
}

bool al_runner_session_chosen(const struct al_runner *r)
{
	const char *const *start = al_runner_session(r)->start;

	for (size_t i = 0; start && start[i]; i++)
		if (strstr(start[i], "{session-id}"))
			return true;
	return false;
}

/* Frees the lists of a runner's own `session:` (flow.c allocates them). */
static void session_release(struct al_runner *r)
{
	if (!r->has_session)
		return;
	free((void *)r->session.fresh);
	free((void *)r->session.start);
	free((void *)r->session.resume);
	memset(&r->session, 0, sizeof(r->session));
	r->has_session = false;
}

void al_runners_init(struct al_runners *rs)
{
	memset(rs, 0, sizeof(*rs));
	for (size_t i = 0; i < AL_ARRAY_SIZE(builtins); i++)
		*al_runners_get(rs, builtins[i].name) = builtins[i];
}

void al_runners_release(struct al_runners *rs)
{
	for (size_t i = 0; i < rs->n; i++) {
		if (rs->v[i].owns_argv)
			free((void *)rs->v[i].argv);
		session_release(&rs->v[i]);
	}
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

static bool starts(const char *s, const char *prefix)
{
	return !strncmp(s, prefix, strlen(prefix));
}

/* Claude Code's aliases (optionally "[1m]") and full names. */
static bool claude_model(const char *m)
{
	static const char *const aliases[] = { "sonnet", "opus", "haiku", "fable", "opusplan",
					       "default" };
	size_t len = strcspn(m, "[");

	for (size_t i = 0; i < AL_ARRAY_SIZE(aliases); i++)
		if (strlen(aliases[i]) == len && !strncmp(m, aliases[i], len))
			return true;
	return starts(m, "claude-");
}

static bool openai_model(const char *m)
{
	return starts(m, "gpt-") || starts(m, "chatgpt-") || starts(m, "codex-") ||
	       (m[0] == 'o' && m[1] >= '1' && m[1] <= '9');
}

static bool gemini_model(const char *m)
{
	return starts(m, "gemini-") || starts(m, "gemma-");
}

const char *al_runner_model_problem(const struct al_runner *r, const char *model)
{
	const char *slash = strchr(model, '/');

	switch (r->models) {
	case AL_MODELS_ANY:
		return NULL;
	case AL_MODELS_CLAUDE:
		/* a Bedrock or Vertex name still names Claude */
		if (openai_model(model) || gemini_model(model) ||
		    (slash && !strstr(model, "claude") && !strstr(model, "anthropic")))
			return "a Claude model: an alias (sonnet, opus, haiku) or a name "
			       "(claude-...)";
		return NULL;
	case AL_MODELS_OPENAI:
		if (claude_model(model) || gemini_model(model))
			return "an OpenAI model (such as gpt-5) or one of its configured "
			       "provider's";
		return NULL;
	case AL_MODELS_GEMINI:
		if (claude_model(model) || openai_model(model) || slash)
			return "a Gemini model (such as gemini-2.5-pro, or auto, pro, flash)";
		return NULL;
	case AL_MODELS_PROVIDER:
		if (!slash || slash == model || !slash[1])
			return "provider/model (such as anthropic/claude-sonnet-4-5)";
		return NULL;
	}
	return NULL;
}

bool al_runner_uses(const struct al_runner *r, const char *name)
{
	size_t len = strlen(name);

	for (size_t i = 0; r->argv && r->argv[i]; i++)
		for (const char *p = strchr(r->argv[i], '{'); p; p = strchr(p + 1, '{'))
			if (!strncmp(p + 1, name, len) && p[len + 1] == '}')
				return true;
	return false;
}

/*
 * Calls fn for each tool of a comma-separated list: the entry as written
 * (trimmed) and the length of its name (without the "(pattern)"). Commas
 * inside the parentheses do not split.
 */
static void each_tool(const char *tools, void (*fn)(const char *, size_t, size_t, void *),
		      void *data)
{
	const char *p = tools;

	while (p && *p) {
		const char *start, *end, *name_end;
		int depth = 0;

		while (*p == ' ' || *p == ',')
			p++;
		start = p;
		while (*p && (depth || *p != ',')) {
			depth += *p == '(' ? 1 : *p == ')' ? -(depth > 0) : 0;
			p++;
		}
		for (end = p; end > start && end[-1] == ' ';)
			end--;
		name_end = start + strcspn(start, "(");
		if (name_end > end)
			name_end = end;
		while (name_end > start && name_end[-1] == ' ')
			name_end--;
		if (name_end > start)
			fn(start, (size_t)(end - start), (size_t)(name_end - start), data);
	}
}

struct names {
	struct al_strbuf sb;
	const char *want;
	bool found;
};

static bool listed(const char *list, const char *name, size_t len)
{
	for (const char *p = list; p && *p;) {
		size_t n = strcspn(p, ",");

		if (n == len && !memcmp(p, name, len))
			return true;
		p += n + (p[n] == ',');
	}
	return false;
}

static void add_name(const char *name, size_t entry_len, size_t len, void *data)
{
	struct names *n = data;

	(void)entry_len;
	if (n->want)
		n->found |= strlen(n->want) == len && !memcmp(n->want, name, len);
	else if (!listed(n->sb.buf, name, len))
		al_strbuf_addf(&n->sb, "%s%.*s", n->sb.len ? "," : "", (int)len, name);
}

bool al_tools_include(const char *tools, const char *name)
{
	struct names n = { AL_STRBUF_INIT, name, false };

	each_tool(tools, add_name, &n);
	return n.found;
}

struct command_allowed {
	const char *program;
	bool yes;
};

/* "Bash" whole, or "Bash(PROGRAM" followed by ' ', ':', '*' or ')' */
static void allows(const char *entry, size_t len, size_t name_len, void *data)
{
	struct command_allowed *c = data;
	size_t plen = strlen(c->program);

	if (name_len != 4 || memcmp(entry, "Bash", 4))
		return;
	c->yes |= len == 4 || (len > 5 + plen && entry[4] == '(' &&
			       !memcmp(entry + 5, c->program, plen) &&
			       strchr(" :*)", entry[5 + plen]));
}

bool al_tools_allow_command(const char *tools, const char *program)
{
	struct command_allowed c = { program, false };

	if (!tools)
		return true; /* every tool */
	each_tool(tools, allows, &c);
	return c.yes;
}

/* The tools' names, each once: "Read,Bash(git *),Bash(ls)" gives "Read,Bash". */
static char *tool_names(const char *tools)
{
	struct names n = { AL_STRBUF_INIT, NULL, false };

	if (!tools)
		return NULL;
	each_tool(tools, add_name, &n);
	return al_strbuf_detach(&n.sb, NULL);
}

/* A template's values: what each placeholder becomes. */
struct values {
	const struct al_runner_vars *v;
	char *tool_names;
	const char *approval_mode;
	const char *session_id; /* the session {session-id} names */
};

/*
 * The value of placeholder `name`, NULL if it is none. *given is set when
 * even an empty value keeps its argument (tools given as an empty list).
 */
static const char *lookup(const struct values *x, const char *name, size_t len, bool *given)
{
	static const char *const names[] = { "model", "tools", "tool-names", "disallowed-tools",
					     "approval-mode", "prompt", "prompt-file", "session-id" };
	const struct al_runner_vars *v = x->v;
	const char *values[] = { v->model, v->tools, x->tool_names, v->disallowed_tools,
				 x->approval_mode, v->prompt, v->prompt_file, x->session_id };

	for (size_t i = 0; i < AL_ARRAY_SIZE(names); i++)
		if (strlen(names[i]) == len && !memcmp(names[i], name, len)) {
			*given = values[i] && (*values[i] || values[i] == x->tool_names);
			return values[i] ? values[i] : "";
		}
	return NULL;
}

/*
 * Expands one template argument. Returns NULL when it had placeholders and
 * none of them was given: such an argument ("--model={model}") is dropped.
 */
static char *expand(const char *arg, const struct values *x, bool *used_prompt,
		    bool *used_file)
{
	struct al_strbuf sb = AL_STRBUF_INIT;
	bool any = false, filled = false;

	for (const char *p = arg; *p;) {
		const char *close = *p == '{' ? strchr(p, '}') : NULL;
		bool given = false;
		const char *val = close ? lookup(x, p + 1, (size_t)(close - p - 1), &given) : NULL;

		if (!val) {
			al_strbuf_addch(&sb, *p++);
			continue;
		}
		any = true;
		filled |= given;
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

/* The session arguments {session} stands for (runner.h): NULL for none. */
static const char *const *session_list(const struct al_runner *r, struct values *x)
{
	const struct al_runner_session *s = al_runner_session(r);

	if (!x->v->session_keep)
		return s->fresh;
	if (x->v->session && *x->v->session && s->resume) {
		x->session_id = x->v->session;
		return s->resume;
	}
	x->session_id = x->v->session_new;
	return s->start;
}

static size_t list_len(const char *const *list)
{
	size_t n = 0;

	while (list && list[n])
		n++;
	return n;
}

char **al_runner_argv(const struct al_runner *r, const struct al_runner_vars *vars)
{
	struct values x = { vars, tool_names(vars->tools), "auto_edit", NULL };
	const char *const *session = session_list(r, &x);
	size_t n = list_len(r->argv), k = 0;
	bool used_prompt = false, used_file = false;
	char **argv;

	/* the shell when its role may need it, unless its tools leave Bash out */
	if (vars->commands && (!vars->tools || al_tools_include(vars->tools, "Bash")))
		x.approval_mode = "yolo";
	/* each argument may be {session}, which is the session's list */
	argv = al_calloc(n * (list_len(session) + 1) + 2, sizeof(*argv));
	for (size_t i = 0; i < n; i++) {
		bool is_session = !strcmp(r->argv[i], "{session}");
		size_t m = is_session ? list_len(session) : 1;

		for (size_t j = 0; j < m; j++) {
			char *a = expand(is_session ? session[j] : r->argv[i], &x, &used_prompt,
					 &used_file);

			if (a)
				argv[k++] = a;
		}
	}
	if (r->prompt == AL_PROMPT_ARG && !used_prompt)
		argv[k++] = al_strdup(vars->prompt ? vars->prompt : "");
	else if (r->prompt == AL_PROMPT_FILE && !used_file)
		argv[k++] = al_strdup(vars->prompt_file ? vars->prompt_file : "");
	argv[k] = NULL;
	free(x.tool_names);
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
