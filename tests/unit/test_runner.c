#include "ailoop/model/runner.h"
#include "unit.h"

/* The argv as one string, arguments in brackets: "[a] [b c]". */
static char *joined(char **argv)
{
	struct al_strbuf sb = AL_STRBUF_INIT;

	for (size_t i = 0; argv[i]; i++)
		al_strbuf_addf(&sb, "%s[%s]", i ? " " : "", argv[i]);
	al_argv_free(argv);
	return al_strbuf_detach(&sb, NULL);
}

static char *expand(const char *const *tmpl, enum al_prompt_mode mode,
		    const struct al_runner_vars *vars)
{
	struct al_runner r = { .name = "test", .argv = tmpl, .prompt = mode };

	return joined(al_runner_argv(&r, vars));
}

#define assert_expands(tmpl, mode, vars, want)                                          \
	do {                                                                           \
		char *got_ = expand((tmpl), (mode), (vars));                           \
		cr_assert_str_eq(got_, (want));                                        \
		free(got_);                                                            \
	} while (0)

static const char *const full[] = {
	"agent", "--model={model}", "--tools", "{tools}", "--deny={disallowed-tools}",
	"literal", NULL,
};

Test(runner, placeholders_are_expanded)
{
	struct al_runner_vars v = { .model = "sonnet", .tools = "Read,Write",
				    .disallowed_tools = "Bash" };

	assert_expands(full, AL_PROMPT_STDIN, &v,
		       "[agent] [--model=sonnet] [--tools] [Read,Write] [--deny=Bash] [literal]");
}

Test(runner, arguments_whose_placeholders_are_all_empty_are_dropped)
{
	struct al_runner_vars none = { 0 }, empty = { .model = "", .tools = "" };

	assert_expands(full, AL_PROMPT_STDIN, &none, "[agent] [--tools] [literal]");
	assert_expands(full, AL_PROMPT_STDIN, &empty, "[agent] [--tools] [literal]");
}

Test(runner, an_argument_with_one_filled_placeholder_is_kept)
{
	static const char *const tmpl[] = { "x", "--pair={model}:{tools}", NULL };
	struct al_runner_vars v = { .tools = "Read" };

	assert_expands(tmpl, AL_PROMPT_STDIN, &v, "[x] [--pair=:Read]");
	v = (struct al_runner_vars){ .model = "m", .tools = "t" };
	assert_expands(tmpl, AL_PROMPT_STDIN, &v, "[x] [--pair=m:t]");
}

Test(runner, unknown_braces_and_literals_are_kept_as_written)
{
	static const char *const tmpl[] = {
		"x", "{x}", "--opt={unknown}", "{", "}", "{model", "a{}b", "{{model}}", "",
		"$(id)", NULL,
	};
	struct al_runner_vars v = { .model = "m" };

	assert_expands(tmpl, AL_PROMPT_STDIN, &v,
		       "[x] [{x}] [--opt={unknown}] [{] [}] [{model] [a{}b] [{m}] [] [$(id)]");
	/* an unknown one is not a placeholder: the argument stays */
	v.model = NULL;
	assert_expands(tmpl, AL_PROMPT_STDIN, &v,
		       "[x] [{x}] [--opt={unknown}] [{] [}] [{model] [a{}b] [] [$(id)]");
}

Test(runner, values_are_not_expanded_again)
{
	static const char *const tmpl[] = { "x", "--model={model}", NULL };
	struct al_runner_vars v = { .model = "{tools} $(id)", .tools = "no" };

	assert_expands(tmpl, AL_PROMPT_STDIN, &v, "[x] [--model={tools} $(id)]");
}

Test(runner, prompt_modes_append_the_prompt_or_its_file)
{
	static const char *const plain[] = { "agent", "-p", NULL };
	struct al_runner_vars v = { .prompt = "Do it; don't \"stop\"\nnow",
				    .prompt_file = "/tmp/run/prompt.md" };

	assert_expands(plain, AL_PROMPT_STDIN, &v, "[agent] [-p]");
	assert_expands(plain, AL_PROMPT_ARG, &v, "[agent] [-p] [Do it; don't \"stop\"\nnow]");
	assert_expands(plain, AL_PROMPT_FILE, &v, "[agent] [-p] [/tmp/run/prompt.md]");
}

Test(runner, prompt_placeholders_put_it_where_the_template_says)
{
	static const char *const arg[] = { "agent", "--message={prompt}", "--yes", NULL };
	static const char *const file[] = { "agent", "--file", "{prompt-file}", "--yes", NULL };
	struct al_runner_vars v = { .prompt = "the prompt", .prompt_file = "p.md" };

	assert_expands(arg, AL_PROMPT_ARG, &v, "[agent] [--message=the prompt] [--yes]");
	assert_expands(file, AL_PROMPT_FILE, &v, "[agent] [--file] [p.md] [--yes]");
	/* the other placeholder does not count as the prompt's place */
	assert_expands(arg, AL_PROMPT_FILE, &v, "[agent] [--message=the prompt] [--yes] [p.md]");
	assert_expands(file, AL_PROMPT_ARG, &v, "[agent] [--file] [p.md] [--yes] [the prompt]");
}

/* --- presets ------------------------------------------------------------ */

Test(runner, the_five_presets_are_built_in)
{
	static const char *const names[] = { "claude", "codex", "gemini", "aider", "opencode" };
	struct al_runners rs;
	char *list;

	al_runners_init(&rs);
	cr_assert_eq(rs.n, 5);
	for (size_t i = 0; i < AL_ARRAY_SIZE(names); i++) {
		struct al_runner *r = al_runners_find(&rs, names[i]);
		struct al_runner_vars v = { .model = "some-model", .prompt = "p",
					    .prompt_file = "/abs/prompt.md" };
		char **argv;
		bool has_model = false, has_file = false;

		cr_assert_not_null(r, "%s", names[i]);
		cr_assert_str_eq(r->name, names[i]);
		cr_assert_not_null(r->argv);
		cr_assert_str_eq(r->argv[0], names[i], "runs its own program");
		cr_assert_not_null(r->install);
		cr_assert_gt(strlen(r->install), 5, "%s has an install hint", names[i]);
		cr_assert_null(r->pos.file, "built in");
		argv = al_runner_argv(r, &v);
		for (size_t k = 0; argv[k]; k++) {
			has_model |= strstr(argv[k], "some-model") != NULL;
			has_file |= !strcmp(argv[k], "/abs/prompt.md");
		}
		cr_assert(has_model, "%s passes the model", names[i]);
		cr_assert_eq(has_file, r->prompt == AL_PROMPT_FILE, "%s", names[i]);
		al_argv_free(argv);

		/* without a model, no model flag */
		v.model = NULL;
		argv = al_runner_argv(r, &v);
		for (size_t k = 0; argv[k]; k++)
			cr_assert_null(strstr(argv[k], "{model}"), "%s: %s", names[i], argv[k]);
		al_argv_free(argv);
	}
	list = al_runners_names(&rs);
	cr_assert_str_eq(list, "claude, codex, gemini, aider, opencode");
	free(list);
	al_runners_release(&rs);
	cr_assert_eq(rs.n, 0);
}

/* The preset `name`'s argv for `v`, as one string. */
static char *preset(const char *name, const struct al_runner_vars *v)
{
	struct al_runners rs;
	char *got;

	al_runners_init(&rs);
	got = joined(al_runner_argv(al_runners_find(&rs, name), v));
	al_runners_release(&rs);
	return got;
}

#define assert_preset(name, vars, want)                                                 \
	do {                                                                           \
		char *got_ = preset((name), (vars));                                   \
		cr_assert_str_eq(got_, (want));                                        \
		free(got_);                                                            \
	} while (0)

Test(runner, claude_gets_its_tools_and_the_prompt_on_stdin)
{
	struct al_runners rs;
	struct al_runner_vars v = { .model = "opus", .tools = "Read,Edit",
				    .disallowed_tools = "Bash(rm:*)", .prompt = "p" };

	assert_preset("claude", &v,
		      "[claude] [-p] [--model=opus] [--permission-mode] [acceptEdits] "
		      "[--tools=Read,Edit] [--allowedTools=Read,Edit] "
		      "[--disallowedTools=Bash(rm:*)] [--no-session-persistence] "
		      "[--output-format] [stream-json] [--verbose]");
	v = (struct al_runner_vars){ 0 };
	assert_preset("claude", &v,
		      "[claude] [-p] [--permission-mode] [acceptEdits] [--no-session-persistence] "
		      "[--output-format] [stream-json] [--verbose]");
	al_runners_init(&rs);
	cr_assert_eq(al_runners_find(&rs, "claude")->prompt, AL_PROMPT_STDIN);
	al_runners_release(&rs);
}

Test(runner, claude_offers_only_the_tools_and_approves_their_patterns)
{
	struct al_runner_vars v = { .tools = "Read,Bash(git *),Bash(ls:*, pwd),Grep" };

	/* --tools takes bare names, once each; the patterns go to --allowedTools */
	assert_preset("claude", &v,
		      "[claude] [-p] [--permission-mode] [acceptEdits] [--tools=Read,Bash,Grep] "
		      "[--allowedTools=Read,Bash(git *),Bash(ls:*, pwd),Grep] "
		      "[--no-session-persistence] [--output-format] [stream-json] [--verbose]");
}

Test(runner, claude_with_an_empty_tools_list_gets_no_tools)
{
	struct al_runner_vars v = { .tools = "" };

	assert_preset("claude", &v,
		      "[claude] [-p] [--permission-mode] [acceptEdits] [--tools=] "
		      "[--no-session-persistence] [--output-format] [stream-json] [--verbose]");
}

Test(runner, codex_runs_ephemeral_and_takes_no_tools)
{
	struct al_runner_vars v = { .model = "gpt-5", .tools = "Read", .disallowed_tools = "Bash",
				    .commands = true };

	assert_preset("codex", &v,
		      "[codex] [exec] [--model=gpt-5] [--sandbox] [workspace-write] [--color] [never] "
		      "[--ephemeral] [--skip-git-repo-check] [--json] [-]");
}

/*
 * {session}: a fresh agent's CLI keeps no session; one that continues its
 * session keeps it, and resumes it once it has an id.
 */
Test(runner, each_preset_continues_a_session_its_own_way)
{
	static const struct {
		const char *runner, *fresh, *first, *resumed;
	} cases[] = {
		{ "claude",
		  "[claude] [-p] [--permission-mode] [acceptEdits] [--no-session-persistence] "
		  "[--output-format] [stream-json] [--verbose]",
		  "[claude] [-p] [--permission-mode] [acceptEdits] [--output-format] [stream-json] "
		  "[--verbose]",
		  "[claude] [-p] [--permission-mode] [acceptEdits] [--resume] [S-1] "
		  "[--output-format] [stream-json] [--verbose]" },
		{ "codex",
		  "[codex] [exec] [--sandbox] [workspace-write] [--color] [never] [--ephemeral] "
		  "[--skip-git-repo-check] [--json] [-]",
		  "[codex] [exec] [--sandbox] [workspace-write] [--color] [never] "
		  "[--skip-git-repo-check] [--json] [-]",
		  /* resume does not take the sandbox of exec: it is given again */
		  "[codex] [exec] [--sandbox] [workspace-write] [--color] [never] [resume] [S-1] "
		  "[-c] [sandbox_mode=\"workspace-write\"] [--skip-git-repo-check] [--json] [-]" },
		{ "gemini",
		  "[gemini] [--approval-mode] [auto_edit] [--skip-trust] [--output-format] [json] "
		  "[--prompt] [Carry out the instructions given above.]",
		  "[gemini] [--approval-mode] [auto_edit] [--skip-trust] [--output-format] [json] "
		  "[--prompt] [Carry out the instructions given above.]",
		  "[gemini] [--approval-mode] [auto_edit] [--skip-trust] [--resume] [S-1] "
		  "[--output-format] [json] [--prompt] [Carry out the instructions given above.]" },
		{ "opencode", "[opencode] [run] [--format] [json]", "[opencode] [run] [--format] [json]",
		  "[opencode] [run] [--session] [S-1] [--format] [json]" },
		{ "aider", NULL, NULL, NULL },
	};

	for (size_t i = 0; i < AL_ARRAY_SIZE(cases); i++) {
		struct al_runner_vars fresh = { .session = "S-1" }; /* an id alone continues nothing */
		struct al_runner_vars first = { .session_keep = true };
		struct al_runner_vars resumed = { .session_keep = true, .session = "S-1" };
		char *a = preset(cases[i].runner, &fresh), *b = preset(cases[i].runner, &first);
		char *c = preset(cases[i].runner, &resumed);

		if (!cases[i].fresh) { /* aider prints text: no session at all */
			cr_assert_str_eq(a, b);
			cr_assert_str_eq(b, c);
			cr_assert_null(strstr(c, "S-1"));
		} else {
			cr_assert_str_eq(a, cases[i].fresh, "%s", cases[i].runner);
			cr_assert_str_eq(b, cases[i].first, "%s", cases[i].runner);
			cr_assert_str_eq(c, cases[i].resumed, "%s", cases[i].runner);
		}
		free(a);
		free(b);
		free(c);
	}
}

Test(runner, a_flows_runner_places_the_session_where_its_template_says)
{
	static const char *const tmpl[] = { "my-cli", "{session}", "--json", NULL };
	struct al_runner r = { .name = "mine", .argv = tmpl, .output = AL_STREAM_CLAUDE };
	struct al_runner_vars v = { .session_keep = true, .session = "abc" };
	char *got = joined(al_runner_argv(&r, &v));

	cr_assert_str_eq(got, "[my-cli] [--resume] [abc] [--json]");
	free(got);
	r.output = AL_STREAM_TEXT; /* text names no session: nothing to resume */
	got = joined(al_runner_argv(&r, &v));
	cr_assert_str_eq(got, "[my-cli] [--json]");
	free(got);
	cr_assert(al_runner_uses(&r, "session"));
}

/*
 * A runner's own session: its lists in place of its output format's:
 * fresh, start (with the id ailoop chose) and resume (with the session's),
 * each argument expanded as the command's are.
 */
Test(runner, a_runners_own_session_replaces_its_formats)
{
	static const char *const tmpl[] = { "my-cli", "{session}", "--json", NULL };
	static const char *const fresh[] = { "--no-save", NULL };
	static const char *const start[] = { "--session-id={session-id}", "--model={model}", NULL };
	static const char *const resume[] = { "--resume", "{session-id}", NULL };
	struct al_runner r = { .name = "mine", .argv = tmpl, .output = AL_STREAM_CLAUDE,
			       .has_session = true, .session = { fresh, start, resume, true } };
	struct al_runner_vars v = { .session = "abc" };
	char *got;

	cr_assert_eq(al_runner_session(&r), &r.session);
	got = joined(al_runner_argv(&r, &v));
	cr_assert_str_eq(got, "[my-cli] [--no-save] [--json]");
	free(got);
	v.session_keep = true;
	got = joined(al_runner_argv(&r, &v));
	cr_assert_str_eq(got, "[my-cli] [--resume] [abc] [--json]");
	free(got);
	v.session = NULL;
	v.session_new = "u-1";
	v.model = "m";
	got = joined(al_runner_argv(&r, &v));
	cr_assert_str_eq(got, "[my-cli] [--session-id=u-1] [--model=m] [--json]");
	free(got);
	/* no id chosen: the argument that would carry it is left out */
	v.session_new = NULL;
	got = joined(al_runner_argv(&r, &v));
	cr_assert_str_eq(got, "[my-cli] [--model=m] [--json]");
	free(got);
	/* no resume: every call of an agent that continues is a first */
	r.session.resume = NULL;
	v.session = "abc";
	got = joined(al_runner_argv(&r, &v));
	cr_assert_str_eq(got, "[my-cli] [--model=m] [--json]");
	free(got);
	/* without its own, the format's: claude-json's, codex-json's cumulative usage */
	r.has_session = false;
	cr_assert_str_eq(al_runner_session(&r)->fresh[0], "--no-session-persistence");
	cr_assert_not(al_runner_session(&r)->cumulative_usage);
	r.output = AL_STREAM_CODEX;
	cr_assert(al_runner_session(&r)->cumulative_usage);
	r.output = AL_STREAM_TEXT;
	cr_assert_null(al_runner_session(&r)->resume);
}

Test(runner, gemini_gets_the_shell_only_where_commands_may_run)
{
	struct al_runner_vars v = { .model = "gemini-2.5-pro", .commands = true };
	const char *tail = "[--skip-trust] [--output-format] [json] [--prompt] "
			   "[Carry out the instructions given above.]";
	char *want;

	/* a sensor or actuator with no tools restriction: every tool, the shell too */
	want = al_xprintf("[gemini] [--model=gemini-2.5-pro] [--approval-mode] [yolo] %s", tail);
	assert_preset("gemini", &v, want);
	/* ... or one whose tools include Bash, with or without a pattern */
	v.tools = "Read,Bash(npm test)";
	assert_preset("gemini", &v, want);
	free(want);
	/* tools without Bash: edits only */
	want = al_xprintf("[gemini] [--approval-mode] [auto_edit] %s", tail);
	v = (struct al_runner_vars){ .tools = "Read,Edit", .commands = true };
	assert_preset("gemini", &v, want);
	/* a controller never runs commands */
	v = (struct al_runner_vars){ .tools = "Read,Bash" };
	assert_preset("gemini", &v, want);
	v.tools = NULL;
	assert_preset("gemini", &v, want);
	free(want);
}

Test(runner, aider_and_opencode_command_lines)
{
	struct al_runner_vars v = { .model = "sonnet", .prompt_file = "/r/p.md", .tools = "Read" };

	assert_preset("aider", &v,
		      "[aider] [--model=sonnet] [--yes-always] [--no-auto-commits] [--no-gitignore] "
		      "[--no-check-update] [--no-show-release-notes] [--no-pretty] [--no-stream] "
		      "[--message-file] [/r/p.md]");
	v.model = "anthropic/claude-sonnet-4-5";
	assert_preset("opencode", &v,
		      "[opencode] [run] [--model=anthropic/claude-sonnet-4-5] [--format] [json]");
}

Test(runner, tool_names_are_matched_without_their_patterns)
{
	cr_assert(al_tools_include("Read,Bash", "Bash"));
	cr_assert(al_tools_include("Read, Bash(git *)", "Bash"));
	cr_assert(al_tools_include("Bash(a, b),Edit", "Edit"), "a comma in a pattern does not split");
	cr_assert_not(al_tools_include("Read,BashOutput", "Bash"));
	cr_assert_not(al_tools_include("Read,Edit(Bash)", "Bash"));
	cr_assert_not(al_tools_include("", "Bash"));
	cr_assert_not(al_tools_include(NULL, "Bash"));
}

Test(runner, templates_say_which_placeholders_they_use)
{
	struct al_runners rs;

	al_runners_init(&rs);
	cr_assert(al_runner_uses(al_runners_find(&rs, "claude"), "tools"));
	cr_assert(al_runner_uses(al_runners_find(&rs, "claude"), "tool-names"));
	cr_assert(al_runner_uses(al_runners_find(&rs, "claude"), "disallowed-tools"));
	for (const char *const *n = (const char *const[]){ "codex", "gemini", "aider", "opencode",
							   NULL }; *n; n++) {
		cr_assert_not(al_runner_uses(al_runners_find(&rs, *n), "tools"), "%s", *n);
		cr_assert_not(al_runner_uses(al_runners_find(&rs, *n), "disallowed-tools"), "%s", *n);
		cr_assert(al_runner_uses(al_runners_find(&rs, *n), "model"), "%s", *n);
	}
	cr_assert_not(al_runner_uses(al_runners_find(&rs, "claude"), "tool"), "whole names only");
	al_runners_release(&rs);
}

Test(runner, each_preset_takes_the_models_of_its_program)
{
	static const struct {
		const char *runner, *model;
		bool ok;
	} cases[] = {
		{ "claude", "sonnet", true },  { "claude", "opus", true },
		{ "claude", "haiku", true },   { "claude", "claude-sonnet-4-5", true },
		{ "claude", "sonnet[1m]", true },
		{ "claude", "us.anthropic.claude-sonnet-4-5-v1:0", true },
		{ "claude", "arn:aws:bedrock:us-east-1:1:inference-profile/anthropic.claude", true },
		{ "claude", "gpt-5", false },  { "claude", "o3", false },
		{ "claude", "gemini-2.5-pro", false },
		{ "claude", "openai/gpt-5", false },
		{ "codex", "gpt-5", true },    { "codex", "o4-mini", true },
		{ "codex", "gpt-oss:20b", true },
		{ "codex", "sonnet", false },  { "codex", "opus", false },
		{ "codex", "haiku", false },   { "codex", "claude-opus-4-1", false },
		{ "codex", "gemini-2.5-pro", false },
		{ "gemini", "gemini-2.5-pro", true }, { "gemini", "flash", true },
		{ "gemini", "auto", true },
		{ "gemini", "sonnet", false }, { "gemini", "claude-sonnet-4-5", false },
		{ "gemini", "gpt-5", false },  { "gemini", "google/gemini-2.5-pro", false },
		{ "opencode", "anthropic/claude-sonnet-4-5", true },
		{ "opencode", "openai/gpt-5", true },
		{ "opencode", "sonnet", false }, { "opencode", "gpt-5", false },
		{ "opencode", "/gpt-5", false }, { "opencode", "openai/", false },
		{ "aider", "sonnet", true },   { "aider", "gpt-5", true },
		{ "aider", "openrouter/x/y", true },
	};
	struct al_runners rs;
	struct al_runner *mine;

	al_runners_init(&rs);
	for (size_t i = 0; i < AL_ARRAY_SIZE(cases); i++) {
		const char *p = al_runner_model_problem(al_runners_find(&rs, cases[i].runner),
							cases[i].model);

		cr_assert_eq(p == NULL, cases[i].ok, "%s with %s: %s", cases[i].runner,
			     cases[i].model, p ? p : "ok");
	}
	cr_assert_str_eq(al_runner_model_problem(al_runners_find(&rs, "opencode"), "sonnet"),
			 "provider/model (such as anthropic/claude-sonnet-4-5)");
	/* a runner the flow defines takes any model */
	mine = al_runners_get(&rs, "mine");
	cr_assert_null(al_runner_model_problem(mine, "sonnet"));
	al_runners_release(&rs);
}

Test(runner, aider_reads_the_prompt_file_once)
{
	struct al_runners rs;
	struct al_runner_vars v = { .prompt_file = "/r/prompt.md" };
	char *got;

	al_runners_init(&rs);
	got = joined(al_runner_argv(al_runners_find(&rs, "aider"), &v));
	cr_assert(al_ends_with(got, "[--message-file] [/r/prompt.md]"), "%s", got);
	cr_assert_eq(strstr(got, "/r/prompt.md"), strrchr(got, '[') + 1, "given once: %s", got);
	free(got);
	al_runners_release(&rs);
}

Test(runner, get_adds_and_find_finds)
{
	struct al_runners rs;
	struct al_runner *r;
	const char **argv;

	al_runners_init(&rs);
	cr_assert_null(al_runners_find(&rs, "mine"));
	r = al_runners_get(&rs, "mine");
	cr_assert_not_null(r);
	cr_assert_str_eq(r->name, "mine");
	cr_assert_null(r->argv, "a new runner is empty");
	cr_assert_null(r->install);
	cr_assert_eq(rs.n, 6);
	argv = al_calloc(3, sizeof(*argv));
	argv[0] = "my-agent";
	argv[1] = "--go";
	r->argv = argv;
	r->owns_argv = true; /* freed by al_runners_release */
	r->prompt = AL_PROMPT_ARG;
	cr_assert_eq(al_runners_find(&rs, "mine"), r);
	cr_assert_eq(al_runners_get(&rs, "mine"), r, "get does not add twice");
	cr_assert_eq(rs.n, 6);

	/* getting a built-in one returns it, to be overridden */
	r = al_runners_get(&rs, "codex");
	cr_assert_str_eq(r->argv[0], "codex");
	cr_assert_eq(rs.n, 6);

	/* many more: the earlier ones are still found */
	for (int i = 0; i < 40; i++) {
		static char names[40][8];

		snprintf(names[i], sizeof(names[i]), "r%d", i);
		al_runners_get(&rs, names[i]);
	}
	cr_assert_eq(rs.n, 46);
	cr_assert_str_eq(al_runners_find(&rs, "mine")->argv[0], "my-agent");
	cr_assert_not_null(al_runners_find(&rs, "r39"));
	al_runners_release(&rs);
}

Test(runner, prompt_mode_names)
{
	cr_assert_str_eq(al_prompt_mode_names[AL_PROMPT_STDIN], "stdin");
	cr_assert_str_eq(al_prompt_mode_names[AL_PROMPT_ARG], "arg");
	cr_assert_str_eq(al_prompt_mode_names[AL_PROMPT_FILE], "file");
}

Test(runner, which_tools_let_an_agent_run_a_program)
{
	cr_assert(al_tools_allow_command(NULL, "ailoop"), "no tools named: every tool");
	cr_assert(al_tools_allow_command("Read, Bash", "ailoop"));
	cr_assert(al_tools_allow_command("Read, Bash(make:*), Bash(ailoop memory:*)", "ailoop"));
	cr_assert(al_tools_allow_command("Bash(make test)", "make"));
	cr_assert_not(al_tools_allow_command("Read, Bash(make:*)", "ailoop"));
	cr_assert_not(al_tools_allow_command("Read, Bash(makefile:*)", "make"));
	cr_assert_not(al_tools_allow_command("Read, Write", "make"));
	cr_assert_not(al_tools_allow_command("Bashful", "make"));
}
