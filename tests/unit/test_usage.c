#include "ailoop/proc/usage.h"
#include "unit.h"

/*
 * What each CLI printed (tests/fixtures/usage), read into one record.
 * Captured from the real CLIs, each a call's whole stdout, its paths made
 * neutral: claude-stream.jsonl (claude -p --output-format stream-json),
 * codex.jsonl (codex exec --json), gemini.json (gemini -o json) and
 * opencode.jsonl (opencode run --format json), the last three an actuator
 * of t123, t124 and t125 against the scripted APIs (tests/fixtures/model-
 * api), whose usage each request is known: 1000 + seq input tokens, 200
 * read from a cache, 30 written to it, 50 output of which 10 reasoning,
 * where the protocol counts them. Written from the CLIs' documented
 * formats, as no scripted API makes them fail so: claude-rate-limited.jsonl,
 * codex-failed.jsonl, gemini-error.json.
 */
static struct al_strbuf fixture;

static const char *load(const char *name)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/usage/%s", FIXTURES, name);
	al_strbuf_reset(&fixture);
	cr_assert_eq(al_strbuf_read_file(&fixture, path, 0), 0, "%s", path);
	return fixture.buf;
}

static void read_fixture(struct al_usage *u, enum al_stream f, const char *name)
{
	load(name);
	al_usage_read(u, f, fixture.buf, fixture.len);
}

Test(usage, claude_stream_json)
{
	struct al_usage u = AL_USAGE_INIT;

	read_fixture(&u, AL_STREAM_CLAUDE, "claude-stream.jsonl");
	cr_assert(u.known);
	cr_assert_str_eq(u.text.buf, "I wrote my answer to /home/user/project/out.md.");
	cr_assert_str_eq(u.session, "6e3c5b6e-5778-40ec-b35b-a4078da675dc");
	cr_assert_str_eq(u.model, "claude-sonnet-5-5");
	cr_assert_eq(u.tokens.input, 300);
	cr_assert_eq(u.tokens.output, 60);
	cr_assert(u.cost_reported);
	cr_assert_float_eq(u.cost_usd, 0.0012, 1e-9);
	cr_assert_null(u.error);
	cr_assert_eq(u.rate, AL_RATE_NONE);
	al_usage_release(&u);
}

Test(usage, claude_rate_limited)
{
	struct al_usage u = AL_USAGE_INIT;

	read_fixture(&u, AL_STREAM_CLAUDE, "claude-rate-limited.jsonl");
	cr_assert_eq(u.rate, AL_RATE_REJECTED, "rejected outranks the warning before it");
	cr_assert_eq(u.resets_at, 1795874400);
	cr_assert_str_eq(u.error, "Claude AI usage limit reached|1795874400");
	al_usage_release(&u);
}

Test(usage, codex_json)
{
	struct al_usage u = AL_USAGE_INIT;

	read_fixture(&u, AL_STREAM_CODEX, "codex.jsonl");
	cr_assert(u.known);
	cr_assert_str_eq(u.session, "01a22067-4ea8-7af0-8f0f-d8627d344933");
	cr_assert_str_eq(u.text.buf, "I wrote my answer to /home/user/project/.ai-loop/runs/"
			 "run_20260101_001/nodes/delivery/implement/actuator-output.md.");
	/* five requests: input_tokens 1230 + seq each, of which 200 read from a cache, 30 written */
	cr_assert_eq(u.tokens.input, 5110, "input_tokens less those read from a cache and written to it");
	cr_assert_eq(u.tokens.cache_read, 1000);
	cr_assert_eq(u.tokens.cache_write, 150);
	cr_assert_eq(u.tokens.output, 250, "output_tokens, the reasoning among them");
	cr_assert_eq(u.tokens.reasoning, 50);
	cr_assert_not(u.cost_reported, "codex gives no cost");
	al_usage_release(&u);
	read_fixture(&u, AL_STREAM_CODEX, "codex-failed.jsonl");
	cr_assert_not(u.known);
	cr_assert(strstr(u.error, "usage limit"), "%s", u.error);
	al_usage_release(&u);
}

Test(usage, gemini_json)
{
	struct al_usage u = AL_USAGE_INIT;

	read_fixture(&u, AL_STREAM_GEMINI, "gemini.json");
	cr_assert(u.known);
	cr_assert_str_eq(u.session, "487a2de5-127a-44a4-ab60-edfa559fc4f2");
	cr_assert_str_eq(u.text.buf, "I wrote my answer to /home/user/project/.ai-loop/runs/"
			 "run_20260101_001/nodes/delivery/implement/actuator-output.md.");
	cr_assert_str_eq(u.model, "gemini-2.5-pro");
	/* five requests: prompt 6110 of which 1000 cached, "input" the rest */
	cr_assert_eq(u.tokens.input, 5110);
	cr_assert_eq(u.tokens.cache_read, 1000);
	cr_assert_eq(u.tokens.output, 250, "the candidates and the thoughts");
	cr_assert_eq(u.tokens.reasoning, 50);
	cr_assert_not(u.cost_reported, "gemini gives no cost");
	al_usage_release(&u);
	read_fixture(&u, AL_STREAM_GEMINI, "gemini-error.json");
	cr_assert_not(u.known);
	cr_assert(strstr(u.error, "Quota exceeded"));
	al_usage_release(&u);
}

Test(usage, opencode_json)
{
	struct al_usage u = AL_USAGE_INIT;

	read_fixture(&u, AL_STREAM_OPENCODE, "opencode.jsonl");
	cr_assert(u.known);
	cr_assert_str_eq(u.session, "ses_ddf96f38fffemGGyTyaZsMDAdt");
	cr_assert_str_eq(u.text.buf, "I wrote my answer to /home/user/project/.ai-loop/runs/"
			 "run_20260101_001/nodes/delivery/implement/actuator-output.md.",
			 "the last step's text");
	/* five steps (requests): prompt_tokens less the cached, completion_tokens */
	cr_assert_eq(u.tokens.input, 5145);
	cr_assert_eq(u.tokens.output, 250, "the output and the reasoning");
	cr_assert_eq(u.tokens.cache_read, 1000);
	cr_assert_eq(u.tokens.cache_write, 0);
	cr_assert_eq(u.tokens.reasoning, 50);
	cr_assert(u.cost_reported, "at the price of opencode's configuration");
	cr_assert_float_eq(u.cost_usd, 0.019185, 1e-9);
	al_usage_release(&u);
}

/* A step's text after another step's: the later one is the answer. */
Test(usage, opencode_later_step_text)
{
	struct al_usage u = AL_USAGE_INIT;
	static const char out[] =
		"{\"type\":\"text\",\"sessionID\":\"ses_1\",\"part\":{\"text\":\"Let me read it.\"}}\n"
		"{\"type\":\"step_finish\",\"part\":{\"tokens\":{\"input\":5,\"output\":1}}}\n"
		"{\"type\":\"text\",\"part\":{\"text\":\"Done.\"}}\n";

	al_usage_read(&u, AL_STREAM_OPENCODE, out, sizeof(out) - 1);
	cr_assert_str_eq(u.text.buf, "Done.");
	cr_assert_str_eq(u.session, "ses_1");
	al_usage_release(&u);
}

Test(usage, text_and_garbage)
{
	struct al_usage u = AL_USAGE_INIT;
	const char *junk = "Error: not logged in\n{\"type\":\n";

	al_usage_read(&u, AL_STREAM_TEXT, "hello\n", 6);
	cr_assert_str_eq(u.text.buf, "hello\n");
	cr_assert_not(u.known);
	al_usage_release(&u);
	for (int f = AL_STREAM_CLAUDE; f <= AL_STREAM_OPENCODE; f++) {
		al_usage_read(&u, (enum al_stream)f, junk, strlen(junk));
		cr_assert_str_eq(u.text.buf, junk, "%s: what is not the stream stays as printed",
				 al_stream_names[f]);
		cr_assert_not(u.known);
		al_usage_release(&u);
	}
	/* figures no call has: not counted */
	al_usage_read(&u, AL_STREAM_CODEX,
		      "{\"type\":\"turn.completed\",\"usage\":{\"input_tokens\":-5,\"output_tokens\":1e300}}",
		      75);
	cr_assert_eq(u.tokens.input, 0);
	cr_assert_eq(u.tokens.output, 0);
	al_usage_release(&u);
}

/* Every fixture cut at every byte: no crash, and never more than the whole says. */
Test(usage, cut_at_every_byte)
{
	static const struct {
		const char *name;
		enum al_stream f;
	} all[] = {
		{ "claude-stream.jsonl", AL_STREAM_CLAUDE }, { "claude-rate-limited.jsonl", AL_STREAM_CLAUDE },
		{ "codex.jsonl", AL_STREAM_CODEX },          { "codex-failed.jsonl", AL_STREAM_CODEX },
		{ "gemini.json", AL_STREAM_GEMINI },         { "gemini-error.json", AL_STREAM_GEMINI },
		{ "opencode.jsonl", AL_STREAM_OPENCODE },
	};

	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
		struct al_usage whole = AL_USAGE_INIT;
		char *text;
		size_t len;

		read_fixture(&whole, all[i].f, all[i].name);
		text = al_strdup(fixture.buf);
		len = fixture.len;
		for (size_t cut = 0; cut < len; cut++) {
			struct al_usage u = AL_USAGE_INIT;
			char *part = al_strndup(text, cut); /* exactly `cut` bytes in the heap */

			al_usage_read(&u, all[i].f, part, cut);
			cr_assert(u.text.buf, "%s cut at %zu", all[i].name, cut);
			cr_assert_leq(u.tokens.input, whole.tokens.input, "%s at %zu", all[i].name, cut);
			cr_assert_leq(u.tokens.output, whole.tokens.output, "%s at %zu", all[i].name, cut);
			cr_assert_leq(u.cost_usd, whole.cost_usd + 1e-12, "%s at %zu", all[i].name, cut);
			al_usage_release(&u);
			free(part);
		}
		free(text);
		al_usage_release(&whole);
	}
}

/*
 * What each CLI prints (on stderr, exiting non-zero) when told to resume
 * a session it does not have: the real CLIs' words, the ids made up.
 */
Test(usage, a_lost_session_in_each_cli_s_words)
{
	static const char *const lost[] = {
		"No conversation found with session ID: 0f6e0b0c-5a4e-4c7e-9d1a-2b3c4d5e6f70\n",
		("Error: thread/resume: thread/resume failed: no rollout found for thread id "
		 "11111111-2222-3333-4444-555555555555 (code -32600)\n"),
		"Error resuming session: No previous sessions found for this project.\n",
		"\033[91m\033[1mError: \033[0mSession not found\n",
		"No saved session found with title \"11111111-2222-3333-4444-555555555555\".\n",
	};
	static const char *const other[] = {
		"Error: 429 Too Many Requests\n", "session started\n", "",
		"the sessions were found wanting\n",
	};

	for (size_t i = 0; i < AL_ARRAY_SIZE(lost); i++)
		cr_assert(al_usage_session_lost(lost[i], strlen(lost[i])), "%s", lost[i]);
	for (size_t i = 0; i < AL_ARRAY_SIZE(other); i++)
		cr_assert_not(al_usage_session_lost(other[i], strlen(other[i])), "%s", other[i]);
}
