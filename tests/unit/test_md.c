#include "ailoop/model/md.h"
#include "ailoop/base/fsutil.h"
#include "unit.h"

static struct al_md md = AL_MD_INIT;

static void setup(void)
{
	unit_enter_tmpdir();
}

static void teardown(void)
{
	al_md_release(&md);
	unit_leave_tmpdir();
}

TestSuite(md, .init = setup, .fini = teardown);

/* Finishes `fm`, adds `body` and writes the result to `path`. */
static void write_fm(struct al_fm *fm, const char *body, const char *path)
{
	struct al_strbuf sb = AL_STRBUF_INIT;

	al_fm_finish(fm, &sb);
	al_strbuf_adds(&sb, body);
	cr_assert_eq(al_write_atomic(path, sb.buf, sb.len), 0, "%s", al_errmsg());
	al_strbuf_release(&sb);
}

static const char *file_text(const char *path)
{
	static struct al_strbuf sb = AL_STRBUF_INIT;

	al_strbuf_reset(&sb);
	cr_assert_eq(al_strbuf_read_file(&sb, path, 0), 0);
	return sb.buf;
}

/* Strings a task, a summary or a sensor's text may well be. */
static const char *const tricky[] = {
	"plain words",
	"it's \"quoted\" both 'ways'",
	"run $(rm -rf /) and `id` and ${HOME}",
	"line one\nline two\n",
	"no final newline\nhere",
	"two final newlines\n\n",
	"\nleading newline",
	"  leading spaces",
	"trailing spaces  ",
	"  indented first line\nsecond\n",
	"trailing spaces on a line  \nnext",
	"true", "false", "yes", "No", "on", "off", "y", "~",
	"5", "-3", "1.2", "1e3", "0x1F", "0o17", ".inf", "-.Inf", ".NaN",
	"null", "Null", "NULL", "",
	"2026-11-21", "12:30:45", "1_000",
	"# x", "a: b", "a #b", "key:", "- item", "? q", "[1, 2]", "{a: 1}", "*alias",
	"&anchor", "!tag", "%directive", "@at", "`tick", "| pipe", "> gt", ",comma",
	"---", "...", "--- inside\n---\n...\nlines",
	"tab\there", "\ttab first",
	"ünïcödé — “quotes” 日本語 😀",
	"back\\slash \\n not a newline",
	"control \x01 and \x7f",
	"carriage\rreturn", "crlf\r\nlines\r\n", "next\xc2\x85line", "line\xe2\x80\xa8separator",
	"bom\xef\xbb\xbfinside", "multi\nline\twith tab\n", "space before \nbreak",
};

Test(md, strings_round_trip_exactly)
{
	struct al_fm *fm = al_fm_new();
	char key[16];

	for (size_t i = 0; i < AL_ARRAY_SIZE(tricky); i++) {
		snprintf(key, sizeof(key), "k%zu", i);
		al_fm_str(fm, key, tricky[i]);
	}
	al_fm_str(fm, "absent", NULL);
	write_fm(fm, "The body.\n", "x.md");
	cr_assert_eq(al_md_read(&md, "x.md"), 0, "%s\n%s", al_errmsg(), file_text("x.md"));
	for (size_t i = 0; i < AL_ARRAY_SIZE(tricky); i++) {
		const struct al_val *v;

		snprintf(key, sizeof(key), "k%zu", i);
		v = al_md_get(&md, key);
		cr_assert_not_null(v, "%s missing", key);
		cr_assert_eq(v->kind, AL_VAL_SCALAR);
		cr_assert_str_eq(v->str, tricky[i], "in:\n%s", file_text("x.md"));
		cr_assert_not_null(al_md_str(&md, key), "'%s' reads as null", tricky[i]);
	}
	cr_assert_null(al_md_get(&md, "absent"), "a NULL value leaves the key out");
	cr_assert_eq(md.body_len, strlen("The body.\n"));
	cr_assert(!memcmp(md.body, "The body.\n", md.body_len));
}

Test(md, strings_that_look_typed_are_not_read_as_numbers_or_booleans)
{
	struct al_fm *fm = al_fm_new();
	long long n;
	bool b;

	al_fm_str(fm, "s-true", "true");
	al_fm_str(fm, "s-five", "5");
	al_fm_str(fm, "s-null", "null");
	al_fm_str(fm, "s-empty", "");
	al_fm_int(fm, "i", -42);
	al_fm_bool(fm, "b", true);
	al_fm_bool(fm, "f", false);
	write_fm(fm, "", "x.md");
	cr_assert_eq(al_md_read(&md, "x.md"), 0, "%s", al_errmsg());
	cr_assert_not(al_md_bool(&md, "s-true", &b));
	cr_assert_not(al_md_int(&md, "s-five", &n));
	cr_assert_str_eq(al_md_str(&md, "s-null"), "null");
	cr_assert_str_eq(al_md_str(&md, "s-empty"), "");
	cr_assert(al_md_int(&md, "i", &n));
	cr_assert_eq(n, -42);
	cr_assert(al_md_bool(&md, "b", &b));
	cr_assert(b);
	cr_assert(al_md_bool(&md, "f", &b));
	cr_assert_not(b);
	cr_assert_null(al_md_str(&md, "missing"));
	cr_assert_not(al_md_int(&md, "missing", &n));
}

Test(md, long_lines_are_not_folded)
{
	struct al_strbuf s = AL_STRBUF_INIT;
	struct al_fm *fm = al_fm_new();
	const char *text;

	for (int i = 0; i < 500; i++)
		al_strbuf_addf(&s, "word%d ", i);
	al_strbuf_adds(&s, "end");
	al_fm_str(fm, "long", s.buf);
	write_fm(fm, "", "x.md");
	text = file_text("x.md");
	cr_assert_not_null(strstr(text, s.buf), "folded:\n%s", text);
	cr_assert_eq(al_md_read(&md, "x.md"), 0, "%s", al_errmsg());
	cr_assert_str_eq(al_md_str(&md, "long"), s.buf);
	al_strbuf_release(&s);
}

Test(md, lists_and_nested_maps_round_trip)
{
	static const char *const items[] = { "delivery", "delivery/implement", "true", "a: b",
					     "two\nlines" };
	struct al_fm *fm = al_fm_new();
	const struct al_val *v, *inner;

	al_fm_list(fm, "stack", items, AL_ARRAY_SIZE(items));
	al_fm_list(fm, "empty", NULL, 0);
	al_fm_begin_map(fm, "metrics");
	al_fm_int(fm, "failed", 3);
	al_fm_str(fm, "note", "it's: \"fine\"");
	al_fm_begin_map(fm, "inner");
	al_fm_bool(fm, "deep", true);
	al_fm_end_map(fm);
	al_fm_end_map(fm);
	al_fm_str(fm, "after", "still top level");
	write_fm(fm, "body\n", "x.md");
	cr_assert_eq(al_md_read(&md, "x.md"), 0, "%s\n%s", al_errmsg(), file_text("x.md"));

	v = al_md_get(&md, "stack");
	cr_assert_not_null(v);
	cr_assert_eq(v->kind, AL_VAL_SEQ);
	cr_assert_eq(v->n, AL_ARRAY_SIZE(items));
	for (size_t i = 0; i < v->n; i++)
		cr_assert_str_eq(v->items[i]->str, items[i]);
	v = al_md_get(&md, "empty");
	cr_assert_not_null(v);
	cr_assert_eq(v->kind, AL_VAL_SEQ);
	cr_assert_eq(v->n, 0);

	v = al_md_get(&md, "metrics");
	cr_assert_not_null(v);
	cr_assert_eq(v->kind, AL_VAL_MAP);
	cr_assert_str_eq(al_val_get(v, "failed")->str, "3");
	cr_assert_str_eq(al_val_get(v, "note")->str, "it's: \"fine\"");
	inner = al_val_get(v, "inner");
	cr_assert_not_null(inner);
	cr_assert_eq(inner->kind, AL_VAL_MAP);
	cr_assert_str_eq(al_val_get(inner, "deep")->str, "true");
	cr_assert_str_eq(al_md_str(&md, "after"), "still top level");
	cr_assert_null(al_md_get(&md, "failed"), "nested keys are not top-level ones");
}

Test(md, output_is_fenced_front_matter)
{
	struct al_strbuf sb = AL_STRBUF_INIT;
	struct al_fm *fm = al_fm_new();

	al_fm_str(fm, "status", "running");
	al_fm_int(fm, "iteration", 2);
	al_fm_str(fm, "task", "multi\nline\n");
	al_fm_finish(fm, &sb);
	cr_assert(al_starts_with(sb.buf, "---\nstatus: running\niteration: 2\ntask: |"),
		  "%s", sb.buf);
	cr_assert(al_ends_with(sb.buf, "\n---\n"), "%s", sb.buf);
	cr_assert_null(strstr(sb.buf, "..."), "%s", sb.buf);
	al_strbuf_release(&sb);

	fm = al_fm_new();
	al_fm_finish(fm, &sb);
	unit_write("empty.md", sb.buf);
	cr_assert_eq(al_md_read(&md, "empty.md"), 0, "%s: %s", al_errmsg(), sb.buf);
	cr_assert_null(al_md_get(&md, "x"));
	al_strbuf_release(&sb);
}

Test(md, values_ending_in_dots_read_back_whole)
{
	/* the last value is where a document end "..." would follow */
	static const char *const values[] = { "wait...", "...", "a\n...", "kept\n\n", "x\n...\n" };
	struct al_strbuf sb = AL_STRBUF_INIT;

	for (size_t i = 0; i < sizeof(values) / sizeof(*values); i++) {
		struct al_fm *fm = al_fm_new();

		al_fm_str(fm, "first", "a");
		al_fm_str(fm, "last", values[i]);
		al_fm_finish(fm, &sb);
		unit_write("dots.md", sb.buf);
		cr_assert_eq(al_md_read(&md, "dots.md"), 0, "%s: %s", al_errmsg(), sb.buf);
		cr_assert_str_eq(al_md_str(&md, "last"), values[i], "%s", sb.buf);
		cr_assert_str_eq(al_md_str(&md, "first"), "a", "%s", sb.buf);
		al_md_release(&md);
		al_strbuf_setlen(&sb, 0);
	}
	al_strbuf_release(&sb);
}

Test(md, a_missing_file_is_not_found)
{
	cr_assert_eq(al_md_read(&md, "nope.md"), AL_ENOTFOUND);
	cr_assert_not_null(strstr(al_errmsg(), "nope.md"), "%s", al_errmsg());
	al_md_release(&md);
	cr_assert_eq(al_md_read(&md, "nodir/nope.md"), AL_ENOTFOUND);
	al_md_release(&md);
	unit_write("file", "x");
	cr_assert_eq(al_md_read(&md, "file/nope.md"), AL_ENOTFOUND);
}

Test(md, a_file_without_front_matter_is_all_body)
{
	unit_write("x.md", "# Title\n\nJust text.\n---\nnot: front matter\n");
	cr_assert_eq(al_md_read(&md, "x.md"), 0, "%s", al_errmsg());
	cr_assert_null(md.doc);
	cr_assert_null(al_md_get(&md, "not"));
	cr_assert_null(al_md_str(&md, "not"));
	cr_assert_eq(md.body_len, strlen(md.text));
	cr_assert_str_eq(md.body, "# Title\n\nJust text.\n---\nnot: front matter\n");
	al_md_release(&md);

	unit_write("empty.md", "");
	cr_assert_eq(al_md_read(&md, "empty.md"), 0, "%s", al_errmsg());
	cr_assert_eq(md.body_len, 0);
}

Test(md, unclosed_front_matter_is_invalid_at_1_1)
{
	unit_write("x.md", "---\nstatus: running\n\nbody without a closing fence\n");
	cr_assert_eq(al_md_read(&md, "x.md"), AL_EINVALID);
	cr_assert(al_starts_with(al_errmsg(), "x.md:1:1: "), "%s", al_errmsg());
	cr_assert_not_null(strstr(al_errmsg(), "never closed"), "%s", al_errmsg());
}

Test(md, broken_yaml_is_reported_with_file_line_and_column)
{
	/* lines count from the top of the file, not of the front matter */
	unit_write("x.md", "---\na: 1\nb: c: d\n---\nbody\n");
	cr_assert_eq(al_md_read(&md, "x.md"), AL_EINVALID);
	cr_assert(al_starts_with(al_errmsg(), "x.md:3:5: "), "%s", al_errmsg());
	al_md_release(&md);

	unit_write("y.md", "---\nstatus: running\nlabel: '1.2\n---\nbody\n");
	cr_assert_eq(al_md_read(&md, "y.md"), AL_EINVALID);
	/* reported at the quote that is never closed */
	cr_assert(al_starts_with(al_errmsg(), "y.md:3:8: "), "%s", al_errmsg());
	cr_assert_not_null(strstr(al_errmsg(), "never closed"), "%s", al_errmsg());
	al_md_release(&md);

	/* a duplicate key is found where it is */
	unit_write("z.md", "---\nstatus: a\nstatus: b\n---\n");
	cr_assert_eq(al_md_read(&md, "z.md"), AL_EINVALID);
	cr_assert(al_starts_with(al_errmsg(), "z.md:3:1: "), "%s", al_errmsg());
}

Test(md, front_matter_that_is_not_a_mapping_is_invalid)
{
	unit_write("x.md", "---\n- a\n- b\n---\nbody\n");
	cr_assert_eq(al_md_read(&md, "x.md"), AL_EINVALID);
	cr_assert(al_starts_with(al_errmsg(), "x.md:2:1: "), "%s", al_errmsg());
	cr_assert_not_null(strstr(al_errmsg(), "mapping"), "%s", al_errmsg());
	al_md_release(&md);

	unit_write("y.md", "---\njust a string\n---\n");
	cr_assert_eq(al_md_read(&md, "y.md"), AL_EINVALID);
	cr_assert(al_starts_with(al_errmsg(), "y.md:2:1: "), "%s", al_errmsg());
}

/* --- al_md_section ------------------------------------------------------ */

static char *section(const char *body, const char *heading)
{
	return al_md_section(body, strlen(body), heading);
}

Test(md, section_is_found_case_insensitively_up_to_the_next_heading)
{
	static const char body[] = "# Controller output\n\nIntro.\n\n"
				   "## action plan\n\n\n"
				   "1. Add the model.\n"
				   "   - with validation\n"
				   "### A sub-heading stays\n"
				   "2. Test it.\n\n\n"
				   "## Next Section\nnot part of it\n";
	char *s = section(body, "Action Plan");

	cr_assert_not_null(s);
	cr_assert_str_eq(s, "1. Add the model.\n   - with validation\n### A sub-heading stays\n"
			    "2. Test it.");
	free(s);
	s = section(body, "next section");
	cr_assert_str_eq(s, "not part of it");
	free(s);
	cr_assert_null(section(body, "Missing"));
	cr_assert_null(section(body, "Action"), "a prefix of a heading is not the heading");
	cr_assert_null(section(body, "Controller output"), "'# ' is not a '## ' heading");
}

Test(md, section_ignores_headings_inside_code_fences)
{
	static const char body[] = "## Action Plan\n"
				   "Write this file:\n"
				   "```markdown\n"
				   "## Not a heading\n"
				   "```\n"
				   "~~~\n"
				   "## Nor this\n"
				   "~~~\n"
				   "Then commit.\n"
				   "## Risks\n"
				   "none\n";
	char *s = section(body, "action plan");

	cr_assert_str_eq(s, "Write this file:\n```markdown\n## Not a heading\n```\n~~~\n"
			    "## Nor this\n~~~\nThen commit.");
	free(s);
	cr_assert_null(section(body, "Not a heading"));
}

Test(md, section_keeps_the_first_lines_indentation)
{
	static const char body[] = "## Action Plan   \n\n  \n    indented code\n  text\n\n";
	char *s = section(body, "Action Plan");

	cr_assert_str_eq(s, "    indented code\n  text");
	free(s);
}

Test(md, section_at_the_end_without_a_newline_and_empty_sections)
{
	char *s = section("intro\n## Action Plan\nlast line", "action plan");

	cr_assert_str_eq(s, "last line");
	free(s);
	s = section("## Action Plan\n## Next\nx\n", "Action Plan");
	cr_assert_str_eq(s, "", "an empty section is found, and empty");
	free(s);
	s = section("## Action Plan", "Action Plan");
	cr_assert_str_eq(s, "");
	free(s);
	cr_assert_null(section("", "Action Plan"));
	cr_assert_null(section("##Action Plan\nx\n", "Action Plan"));
}

Test(md, trim_lines_drops_blank_lines_around_but_keeps_indentation)
{
	static const char text[] = " \n\t\n\n  first\n\n  second  \n \n\t";
	char *s = al_md_trim_lines(text, strlen(text));

	cr_assert_str_eq(s, "  first\n\n  second");
	free(s);
	s = al_md_trim_lines(" \n\n \t", 5);
	cr_assert_str_eq(s, "");
	free(s);
	s = al_md_trim_lines("abc", 2);
	cr_assert_str_eq(s, "ab", "only `len` bytes are read");
	free(s);
	s = al_md_trim_lines("   x", 4);
	cr_assert_str_eq(s, "   x");
	free(s);
}

Test(md, section_heading_may_close_with_hashes)
{
	const char body[] = "intro\n## Action Plan ##\n\nfix a\n## Notes\nx\n";
	char *plan = al_md_section(body, sizeof(body) - 1, "Action Plan");

	cr_assert_not_null(plan);
	cr_assert_str_eq(plan, "fix a");
	free(plan);
}

Test(md, bytes_that_are_not_utf8_are_written_as_replacement_characters)
{
	struct al_fm *fm = al_fm_new();
	static const char *const list[] = { "na\xefve", "ok" };

	al_fm_str(fm, "summary", "caf\xe9 fixed");
	al_fm_str(fm, "multi", "line \xff\nline 2\n");
	al_fm_list(fm, "files", list, 2);
	write_fm(fm, "Body caf\xe9.\n", "x.md");
	cr_assert_eq(al_md_read(&md, "x.md"), 0, "%s", al_errmsg());
	cr_assert_str_eq(al_md_str(&md, "summary"), "caf\xef\xbf\xbd fixed");
	cr_assert_str_eq(al_md_str(&md, "multi"), "line \xef\xbf\xbd\nline 2\n");
	cr_assert_str_eq(al_md_get(&md, "files")->items[0]->str, "na\xef\xbf\xbd" "ve");
	cr_assert(!memcmp(md.body, "Body caf\xe9.\n", md.body_len), "the body keeps its bytes");
}

Test(md, a_byte_order_mark_before_the_front_matter_is_skipped)
{
	unit_write("x.md", "\xef\xbb\xbf---\ntarget-met: true\n---\nbody\n");
	cr_assert_eq(al_md_read(&md, "x.md"), 0, "%s", al_errmsg());
	cr_assert_str_eq(al_md_str(&md, "target-met"), "true");
}

Test(md, front_matter_that_is_not_utf8_is_read_with_replacement_characters)
{
	unit_write("x.md", "---\ntarget-met: false\nsummary: caf\xe9\n---\nBody caf\xe9.\n");
	cr_assert_eq(al_md_read(&md, "x.md"), 0, "%s", al_errmsg());
	cr_assert_str_eq(al_md_str(&md, "summary"), "caf\xef\xbf\xbd");
	cr_assert_eq(md.body_len, strlen("Body caf\xe9.\n"));
	cr_assert(!memcmp(md.body, "Body caf\xe9.\n", md.body_len), "the body keeps its bytes");
}
