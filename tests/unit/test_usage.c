#include "ailoop/proc/usage.h"
#include "unit.h"

/* What each CLI printed (tests/fixtures/usage), read into one record. */
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
	cr_assert_str_eq(u.session, "019a2d7a-41c4-78b1-b7cc-a45d62a89cd5");
	cr_assert_str_eq(u.text.buf, "---\nsummary: fixed the greeting\n---\nFixed greeting.txt.");
	cr_assert_eq(u.tokens.input, 3000, "input_tokens less those read from a cache and written to it");
	cr_assert_eq(u.tokens.cache_read, 9000);
	cr_assert_eq(u.tokens.cache_write, 400);
	cr_assert_eq(u.tokens.output, 1100);
	cr_assert_eq(u.tokens.reasoning, 300);
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
	cr_assert_str_eq(u.session, "4b5d2c1e-8f3a-4c6b-9d2e-7a1b3c5d7e9f");
	cr_assert(strstr(u.text.buf, "status: fail"));
	cr_assert_str_eq(u.model, "gemini-2.5-pro");
	cr_assert_eq(u.tokens.input, 8000);
	cr_assert_eq(u.tokens.cache_read, 3000);
	cr_assert_eq(u.tokens.output, 900, "the candidates and the thoughts");
	cr_assert_eq(u.tokens.reasoning, 400);
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
	cr_assert_str_eq(u.session, "ses_494719016ffe85dkDMj0FPRbHK");
	cr_assert_str_eq(u.text.buf, "Fixed greeting.txt.", "the last step's text");
	cr_assert_eq(u.tokens.input, 10200);
	cr_assert_eq(u.tokens.output, 260, "the output and the reasoning");
	cr_assert_eq(u.tokens.cache_read, 5000);
	cr_assert_eq(u.tokens.cache_write, 20);
	cr_assert_eq(u.tokens.reasoning, 10);
	cr_assert(u.cost_reported);
	cr_assert_float_eq(u.cost_usd, 0.0033, 1e-9);
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
	cr_assert_eq(al_stream_find("gemini-json"), AL_STREAM_GEMINI);
	cr_assert_eq(al_stream_find("yaml"), -1);
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
