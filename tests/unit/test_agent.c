#include "ailoop/model/agent.h"
#include "ailoop/model/md.h"
#include "ailoop/base/util.h"

#include "unit.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

/* --- al_split_front_matter ---------------------------------------------- */

struct split {
	bool ok;
	const char *fm;
	size_t fm_len;
	int fm_line;
	const char *body;
	size_t body_len;
};

static struct split split(const char *text)
{
	struct split s;

	s.ok = al_split_front_matter(text, strlen(text), &s.fm, &s.fm_len, &s.fm_line, &s.body,
				     &s.body_len);
	return s;
}

static void assert_span(const char *p, size_t len, const char *want)
{
	cr_assert_not_null(p);
	cr_assert_eq(len, strlen(want), "length %zu of [%.*s], expected [%s]", len, (int)len, p,
		     want);
	cr_assert(!memcmp(p, want, len), "[%.*s], expected [%s]", (int)len, p, want);
}

Test(front_matter, none)
{
	static const char text[] = "Just a prompt.\n---\nwith a rule\n";
	struct split s = split(text);

	cr_assert(s.ok);
	cr_assert_null(s.fm);
	cr_assert_eq(s.fm_len, 0);
	cr_assert_eq(s.fm_line, 0);
	cr_assert_eq(s.body, text);
	cr_assert_eq(s.body_len, strlen(text));

	s = split("");
	cr_assert(s.ok);
	cr_assert_null(s.fm);
	cr_assert_eq(s.body_len, 0);

	/* four dashes are a rule, not a fence */
	s = split("----\nname: x\n----\nbody\n");
	cr_assert(s.ok);
	cr_assert_null(s.fm);
}

Test(front_matter, simple)
{
	struct split s = split("---\nname: x\nmodel: y\n---\nThe prompt.\n");

	cr_assert(s.ok);
	assert_span(s.fm, s.fm_len, "name: x\nmodel: y\n");
	cr_assert_eq(s.fm_line, 2);
	assert_span(s.body, s.body_len, "The prompt.\n");
}

Test(front_matter, empty)
{
	struct split s = split("---\n---\nbody\n");

	cr_assert(s.ok);
	cr_assert_not_null(s.fm, "an empty front matter is still one");
	cr_assert_eq(s.fm_len, 0);
	cr_assert_eq(s.fm_line, 2);
	assert_span(s.body, s.body_len, "body\n");
}

Test(front_matter, unclosed)
{
	cr_assert_not(split("---\nname: x\n").ok);
	cr_assert_not(split("---\nname: x\n--\nbody\n").ok);
	cr_assert_not(split("---\n").ok);
}

Test(front_matter, crlf_and_trailing_blanks)
{
	struct split s = split("---\r\nname: x\r\n---\r\nbody\r\n");

	cr_assert(s.ok);
	assert_span(s.fm, s.fm_len, "name: x\r\n");
	assert_span(s.body, s.body_len, "body\r\n");

	s = split("--- \nname: x\n---\t\nbody\n");
	cr_assert(s.ok);
	assert_span(s.fm, s.fm_len, "name: x\n");
	assert_span(s.body, s.body_len, "body\n");
}

Test(front_matter, dots_close_it_too)
{
	struct split s = split("---\nname: x\n...\nbody\n");

	cr_assert(s.ok);
	assert_span(s.fm, s.fm_len, "name: x\n");
	assert_span(s.body, s.body_len, "body\n");
}

Test(front_matter, closing_fence_at_the_end_and_rules_in_the_body)
{
	struct split s = split("---\na: 1\n---");

	cr_assert(s.ok);
	assert_span(s.fm, s.fm_len, "a: 1\n");
	cr_assert_eq(s.body_len, 0);

	s = split("---\na: 1\n---\nx\n---\ny\n");
	cr_assert(s.ok);
	assert_span(s.fm, s.fm_len, "a: 1\n");
	assert_span(s.body, s.body_len, "x\n---\ny\n");
}

/* --- al_agents_load ----------------------------------------------------- */

static struct al_agents agents;
static struct al_diags diags = AL_DIAGS_INIT;

static void setup(void)
{
	memset(&agents, 0, sizeof(agents));
	unit_enter_tmpdir();
}

static void teardown(void)
{
	al_agents_release(&agents);
	al_diags_release(&diags);
	unit_leave_tmpdir();
}

TestSuite(agent, .init = setup, .fini = teardown);

static const struct al_pos flow_ref = { "flow.yaml", 7, 15 };

/* Writes `text` to `path` and loads it. */
static struct al_agent *load(const char *path, const char *text)
{
	if (text)
		unit_write(path, text);
	return al_agents_load(&agents, path, flow_ref, &diags);
}

/* The first capture of `re` in `subject`, in a static buffer. */
static const char *capture(pcre2_code *re, const char *subject)
{
	static char buf[64];
	pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, NULL);
	PCRE2_SIZE len = sizeof(buf);
	int rc = pcre2_match(re, (PCRE2_SPTR)subject, strlen(subject), 0, 0, md, NULL);

	buf[0] = '\0';
	if (rc < 2 || pcre2_substring_copy_bynumber(md, 1, (PCRE2_UCHAR *)buf, &len) < 0)
		snprintf(buf, sizeof(buf), "(no match)");
	pcre2_match_data_free(md);
	return buf;
}

static bool matches(pcre2_code *re, const char *subject)
{
	pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, NULL);
	int rc = pcre2_match(re, (PCRE2_SPTR)subject, strlen(subject), 0, 0, md, NULL);

	pcre2_match_data_free(md);
	return rc > 0;
}

Test(agent, reads_every_key_of_the_front_matter)
{
	struct al_agent *a = load(".ai-loop/agents/unit-tests.md",
				  "---\n"
				  "name: unit-tests\n"
				  "description: Runs the unit tests\n"
				  "tools: Read, Write,  Bash\n"
				  "disallowedTools: [WebFetch, WebSearch]\n"
				  "model: haiku\n"
				  "runner: codex\n"
				  "command: make test\n"
				  "timeout: 600\n"
				  "target: all tests pass\n"
				  "metrics:\n"
				  "  passed: '(\\d+) passed'\n"
				  "  failed: '(\\d+) failed'\n"
				  "pass_if: '^OK$'\n"
				  "fail_if: FAIL\n"
				  "color: blue\n"
				  "---\n"
				  "Run the tests in {artifacts-path}.\n");

	unit_assert_ndiags(&diags, 0);
	cr_assert(a->loaded);
	cr_assert_str_eq(a->path, ".ai-loop/agents/unit-tests.md");
	cr_assert_str_eq(a->name, "unit-tests");
	cr_assert_str_eq(a->description, "Runs the unit tests");
	cr_assert_str_eq(a->tools, "Read,Write,Bash");
	cr_assert_str_eq(a->disallowed_tools, "WebFetch,WebSearch");
	cr_assert_str_eq(a->model, "haiku");
	cr_assert_str_eq(a->runner, "codex");
	cr_assert_eq(a->runner_pos.line, 7);
	cr_assert_eq(a->runner_pos.col, 9);
	cr_assert(al_ends_with(a->runner_pos.file, "unit-tests.md"));
	cr_assert_str_eq(a->command_sh, "make test");
	cr_assert_null(a->command_argv);
	cr_assert(al_agent_is_command(a));
	cr_assert_eq(a->timeout, 600);
	cr_assert_str_eq(a->target, "all tests pass");
	cr_assert_eq(a->nmetrics, 2);
	cr_assert_str_eq(a->metrics[0].name, "passed");
	cr_assert_str_eq(a->metrics[1].name, "failed");
	cr_assert_str_eq(capture(a->metrics[0].re, "12 passed, 3 failed"), "12");
	cr_assert_str_eq(capture(a->metrics[1].re, "12 passed, 3 failed"), "3");
	cr_assert(matches(a->pass_if, "OK"));
	cr_assert_not(matches(a->pass_if, "NOT OK"));
	cr_assert(matches(a->fail_if, "1 FAIL"));
	assert_span(a->body, a->body_len, "Run the tests in {artifacts-path}.\n");
	cr_assert_not_null(a->doc);
	cr_assert_eq(agents.n, 1);
}

Test(agent, tools_and_command_as_lists)
{
	struct al_agent *a = load("a.md", "---\n"
					  "tools:\n  - Read\n  - Bash(git status)\n"
					  "disallowedTools: 'WebFetch,WebSearch'\n"
					  "command: [sh, -c, 'exit 0']\n"
					  "---\n");

	unit_assert_ndiags(&diags, 0);
	cr_assert(a->loaded, "a command needs no prompt");
	cr_assert_str_eq(a->tools, "Read,Bash(git status)");
	cr_assert_str_eq(a->disallowed_tools, "WebFetch,WebSearch");
	cr_assert_null(a->command_sh);
	cr_assert_not_null(a->command_argv);
	cr_assert_str_eq(a->command_argv[0], "sh");
	cr_assert_str_eq(a->command_argv[1], "-c");
	cr_assert_str_eq(a->command_argv[2], "exit 0");
	cr_assert_null(a->command_argv[3]);
	cr_assert(al_agent_is_command(a));
	cr_assert_eq(a->body_len, 0);
}

Test(agent, a_plain_prompt_needs_no_front_matter)
{
	struct al_agent *a = load("plain.md", "You are a careful reviewer.\n");

	unit_assert_ndiags(&diags, 0);
	cr_assert(a->loaded);
	cr_assert_null(a->doc);
	cr_assert_null(a->name);
	cr_assert_null(a->tools);
	cr_assert_null(a->runner);
	cr_assert_eq(a->timeout, 0);
	cr_assert_not(al_agent_is_command(a));
	assert_span(a->body, a->body_len, "You are a careful reviewer.\n");
}

Test(agent, errors_are_reported_in_the_agent_file_where_they_are)
{
	struct al_agent *a = load(".ai-loop/agents/bad.md",
				  "---\n"                   /* 1 */
				  "name: bad name\n"        /* 2 */
				  "timeout: soon\n"         /* 3 */
				  "tools: {a: 1}\n"         /* 4 */
				  "metrics:\n"              /* 5 */
				  "  count: '\\d+'\n"       /* 6 */
				  "  bad key: '(x)'\n"      /* 7 */
				  "pass_if: '(('\n"         /* 8 */
				  "colour: red\n"           /* 9 */
				  "command: ''\n"           /* 10 */
				  "fail_if: [a]\n"          /* 11 */
				  "model: [m]\n"            /* 12 */
				  "---\n"
				  "Prompt.\n");

	cr_assert_not(a->loaded);
	unit_assert_ndiags(&diags, 10);
	for (size_t i = 0; i < diags.n; i++)
		cr_assert_str_eq(diags.v[i].pos.file, ".ai-loop/agents/bad.md");
	unit_assert_diag(&diags, NULL, 2, 7, "agent name 'bad name' must be letters, digits");
	unit_assert_diag(&diags, NULL, 3, 10, "'timeout' must be a whole number, not a string");
	unit_assert_diag(&diags, NULL, 4, 8,
			 "'tools' must be a list or a comma-separated string, not a mapping");
	unit_assert_diag(&diags, NULL, 6, 10, "metric 'count' needs a capture group");
	unit_assert_diag(&diags, NULL, 7, 3, "metric name 'bad key' must be letters");
	/* "((": PCRE2 stops at the end, offset 2: the closing quote */
	unit_assert_diag(&diags, NULL, 8, 13, "invalid regular expression in 'pass_if'");
	unit_assert_diag(&diags, NULL, 9, 1,
			 "unknown key 'colour' in agent front matter (did you mean 'color'?)");
	unit_assert_diag(&diags, NULL, 10, 10, "'command' must not be empty");
	unit_assert_diag(&diags, NULL, 11, 10, "'fail_if' must be a string, not a list");
	unit_assert_diag(&diags, NULL, 12, 8, "'model' must be a string, not a list");
}

Test(agent, timeout_range_and_empty_command_list)
{
	struct al_agent *a = load("t.md", "---\ntimeout: 0\ncommand: []\n---\nprompt\n");

	cr_assert_not(a->loaded);
	unit_assert_ndiags(&diags, 2);
	unit_assert_diag(&diags, "t.md", 2, 10, "'timeout' must be between 1 and 604800 (got 0)");
	unit_assert_diag(&diags, "t.md", 3, 10, "'command' must not be empty");
	cr_assert_null(a->command_argv);
}

Test(agent, front_matter_lines_count_from_the_file)
{
	struct al_agent *a = load("s.md", "---\nname: x\nbad: a: b\n---\nprompt\n");

	cr_assert_not(a->loaded);
	unit_assert_ndiags(&diags, 1);
	unit_assert_diag(&diags, "s.md", 3, 7, "mapping values are not allowed");
	/* the first line of the front matter is line 2 */
	al_diags_release(&diags);
	a = load("first.md", "---\ntimeout: x\n---\nprompt\n");
	unit_assert_diag(&diags, "first.md", 2, 10, "'timeout' must be a whole number");
	/* and CRLF files count the same */
	al_diags_release(&diags);
	a = load("crlf.md", "---\r\nname: x\r\ntimeout: x\r\n---\r\nprompt\r\n");
	unit_assert_ndiags(&diags, 1);
	unit_assert_diag(&diags, "crlf.md", 3, 10, "'timeout' must be a whole number");
}

Test(agent, duplicate_keys_and_anchors_in_front_matter)
{
	struct al_agent *a = load("d.md", "---\nname: x\nname: y\nmodel: &m haiku\n---\nprompt\n");

	cr_assert_not(a->loaded);
	unit_assert_ndiags(&diags, 2);
	unit_assert_diag(&diags, "d.md", 3, 1, "duplicate key 'name'");
	unit_assert_diag(&diags, "d.md", 4, 8, "anchors are not supported");
}

Test(agent, front_matter_must_be_a_mapping)
{
	struct al_agent *a = load("l.md", "---\n- a\n- b\n---\nprompt\n");

	cr_assert_not(a->loaded);
	unit_assert_ndiags(&diags, 1);
	unit_assert_diag(&diags, "l.md", 2, 1, "front matter must be a mapping of keys, not a list");
}

Test(agent, unclosed_front_matter)
{
	struct al_agent *a = load("u.md", "---\nname: x\n\nprompt\n");

	cr_assert_not(a->loaded);
	unit_assert_ndiags(&diags, 1);
	unit_assert_diag(&diags, "u.md", 1, 1, "front matter opened with '---' is never closed");
}

Test(agent, not_utf8)
{
	struct al_agent *a = load("b.md", "---\nname: \xff\n---\nprompt\n");

	cr_assert_not(a->loaded);
	unit_assert_ndiags(&diags, 1);
	unit_assert_diag(&diags, "b.md", 2, 7, "agent file is not UTF-8 text");
}

Test(agent, neither_prompt_nor_command)
{
	struct al_agent *a = load("n.md", "---\nname: x\n---\n  \n\n\t\n");

	cr_assert_not(a->loaded);
	unit_assert_ndiags(&diags, 1);
	unit_assert_diag(&diags, "n.md", 1, 1, "agent file has neither a prompt nor a 'command'");
	a = load("empty.md", "");
	cr_assert_not(a->loaded);
	unit_assert_ndiags(&diags, 2);
	unit_assert_diag(&diags, "empty.md", 1, 1, "neither a prompt nor a 'command'");
}

Test(agent, missing_file_is_reported_at_each_reference)
{
	struct al_pos second = { "flow.yaml", 12, 9 };
	struct al_agent *a = load(".ai-loop/agents/nope.md", NULL), *b;

	cr_assert_not(a->loaded);
	unit_assert_ndiags(&diags, 1);
	unit_assert_diag(&diags, "flow.yaml", 7, 15,
			 "agent file '.ai-loop/agents/nope.md' does not exist");
	b = al_agents_load(&agents, ".ai-loop/agents/nope.md", second, &diags);
	cr_assert_eq(a, b, "one agent per path");
	cr_assert_eq(agents.n, 1);
	unit_assert_ndiags(&diags, 2);
	unit_assert_diag(&diags, "flow.yaml", 12, 9,
			 "agent file '.ai-loop/agents/nope.md' does not exist");

	/* a path through a file is missing too */
	unit_write("README", "hello\n");
	a = load("README/x.md", NULL);
	cr_assert_not(a->loaded);
	unit_assert_diag(&diags, "flow.yaml", 7, 15, "agent file 'README/x.md' does not exist");
}

Test(agent, unreadable_and_oversized_files_are_reported_at_the_reference)
{
	struct al_strbuf big = AL_STRBUF_INIT;
	struct al_agent *a;

	cr_assert_eq(mkdir("adir.md", 0777), 0);
	a = load("adir.md", NULL);
	cr_assert_not(a->loaded);
	unit_assert_ndiags(&diags, 1);
	unit_assert_diag(&diags, "flow.yaml", 7, 15, "cannot read agent file 'adir.md'");

	while (big.len <= AL_AGENT_MAX_BYTES)
		al_strbuf_adds(&big, "All work and no play makes Jack a dull boy.\n");
	a = load("big.md", big.buf);
	cr_assert_not(a->loaded);
	unit_assert_ndiags(&diags, 2);
	unit_assert_diag(&diags, "flow.yaml", 7, 15, "agent file 'big.md' is larger than 1 MiB");
	al_strbuf_release(&big);
}

Test(agent, a_file_named_twice_is_loaded_once)
{
	struct al_pos second = { "flow.yaml", 20, 3 };
	struct al_agent *a = load("twice.md", "---\ntimeout: never\n---\nprompt\n"), *b;

	unit_assert_ndiags(&diags, 1);
	/* rewriting the file does not matter: it is not read again */
	unit_write("twice.md", "---\ntimeout: 5\n---\nprompt\n");
	b = al_agents_load(&agents, "twice.md", second, &diags);
	cr_assert_eq(a, b);
	cr_assert_eq(agents.n, 1);
	unit_assert_ndiags(&diags, 1);
	cr_assert_not(b->loaded);

	b = load("other.md", "prompt\n");
	cr_assert_neq(a, b);
	cr_assert_eq(agents.n, 2);
	cr_assert(b->loaded);
	cr_assert_eq(al_agents_load(&agents, "other.md", second, &diags), b);
	cr_assert_eq(agents.n, 2);
}

Test(agent, release_is_idempotent)
{
	load("x.md", "prompt\n");
	al_agents_release(&agents);
	cr_assert_eq(agents.n, 0);
	cr_assert_null(agents.v);
	al_agents_release(&agents);
}

Test(agent, model_per_runner)
{
	struct al_agent *a = load(".ai-loop/agents/m.md",
				  "---\n"                                  /* 1 */
				  "model:\n"                               /* 2 */
				  "  claude: sonnet\n"                     /* 3 */
				  "  codex: gpt-5\n"                       /* 4 */
				  "tools: Read, Bash(git *)\n"             /* 5 */
				  "---\n"
				  "Prompt.\n");
	struct al_pos pos = { NULL, 0, 0 };

	cr_assert(a->loaded);
	cr_assert_null(a->model, "no model for every runner");
	cr_assert_eq(a->nmodels, 2);
	cr_assert_str_eq(al_agent_model(a, "claude", &pos), "sonnet");
	cr_assert_eq(pos.line, 3);
	cr_assert_eq(pos.col, 11);
	cr_assert_str_eq(al_agent_model(a, "codex", &pos), "gpt-5");
	cr_assert_eq(pos.line, 4);
	cr_assert_null(al_agent_model(a, "gemini", NULL), "none given: the runner's default");
	cr_assert_eq(a->tools_pos.line, 5);
	cr_assert_eq(a->tools_pos.col, 1);

	a = load(".ai-loop/agents/one.md", "---\nmodel: opus\n---\nPrompt.\n");
	cr_assert_str_eq(al_agent_model(a, "codex", &pos), "opus", "one model for every runner");
	cr_assert_eq(pos.line, 2);
	cr_assert_eq(pos.col, 8);

	a = load(".ai-loop/agents/bad.md", "---\nmodel: {claude: [a]}\n---\nPrompt.\n");
	cr_assert_not(a->loaded);
	unit_assert_diag(&diags, NULL, 2, 17, "'claude' must be a string, not a list");
}

Test(agent, metrics_of_a_sum_a_count_and_a_default)
{
	struct al_agent *a = load("m.md", "---\n"
					  "command: make test\n"
					  "metrics:\n"
					  "  passed: {pattern: 'ok (\\d+)', sum: true}\n"
					  "  failed: {pattern: '^--- FAIL', count: true}\n"
					  "  errors: {pattern: '(\\d+) errors', default: 0}\n"
					  "---\n");
	char *v;

	unit_assert_ndiags(&diags, 0);
	cr_assert_eq(a->nmetrics, 3);
	cr_assert_eq(al_metric_read(&a->metrics[0], "ok 2\nok 3\nok x\n", 15, &v), 0);
	cr_assert_str_eq(v, "5");
	free(v);
	cr_assert_eq(al_metric_read(&a->metrics[0], "none", 4, &v), 0);
	cr_assert_null(v, "a sum of no match is unknown");
	cr_assert_eq(al_metric_read(&a->metrics[1], "ok", 2, &v), 0);
	cr_assert_str_eq(v, "0");
	free(v);
	cr_assert_eq(al_metric_read(&a->metrics[2], "ok", 2, &v), 0);
	cr_assert_str_eq(v, "0");
	free(v);
	cr_assert_eq(al_metric_read(&a->metrics[2], "4 errors", 8, &v), 0);
	cr_assert_str_eq(v, "4");
	free(v);
}

Test(agent, a_metric_map_that_cannot_be_read)
{
	struct al_agent *a = load("bad.md", "---\n"
					    "command: make test\n"
					    "metrics:\n"
					    "  a: {sum: true}\n"                          /* 4 */
					    "  b: {pattern: '(x)', sum: true, count: true}\n" /* 5 */
					    "  c: {pattern: '(x)', sums: true}\n"          /* 6 */
					    "  d: {pattern: 'x'}\n"                        /* 7 */
					    "  e: {pattern: 'x', count: yes please}\n"     /* 8 */
					    "---\n");

	cr_assert_not(a->loaded);
	unit_assert_diag(&diags, NULL, 4, 6, "metric 'a' needs a 'pattern'");
	unit_assert_diag(&diags, NULL, 5, 6, "metric 'b' is either a 'sum' or a 'count', not both");
	unit_assert_diag(&diags, NULL, 6, 23, "unknown key 'sums' in metric (did you mean 'sum'?)");
	unit_assert_diag(&diags, NULL, 7, 16, "metric 'd' needs a capture group around the value "
			 "(or 'count: true' to count its matches)");
	unit_assert_diag(&diags, NULL, 8, 28, "'count' must be true or false");
}
