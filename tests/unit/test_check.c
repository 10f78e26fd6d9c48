#include "ailoop/model/check.h"
#include "ailoop/model/doc.h"

#include "unit.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

/* A parsed document and a checker over it, for one test. */
struct fixture {
	struct al_diags d;
	struct al_doc *doc;
	struct al_check c;
};

static void load(struct fixture *f, const char *text)
{
	memset(f, 0, sizeof(*f));
	cr_assert_eq(al_doc_parse(&f->doc, &f->d, "c.yaml", text, strlen(text), 0), 0, "%s",
		     unit_diags_text(&f->d));
	f->c.diags = &f->d;
	f->c.doc = f->doc;
}

static const struct al_val *val(struct fixture *f, const char *key)
{
	const struct al_val *v = al_val_get(f->doc->root, key);

	cr_assert_not_null(v, "no key %s", key);
	return v;
}

static void release(struct fixture *f)
{
	al_doc_free(f->doc);
	al_diags_release(&f->d);
}

Test(check, kind_accepts_the_kind_and_reads_null_as_absent)
{
	struct fixture f;

	load(&f, "list: [a]\nmap: {a: 1}\nnone: ~\nempty:\nstr: x\n");
	cr_assert(al_check_kind(&f.c, val(&f, "list"), AL_VAL_SEQ, "list"));
	cr_assert(al_check_kind(&f.c, val(&f, "map"), AL_VAL_MAP, "map"));
	cr_assert_not(al_check_kind(&f.c, val(&f, "none"), AL_VAL_SEQ, "none"));
	cr_assert_not(al_check_kind(&f.c, val(&f, "empty"), AL_VAL_MAP, "empty"));
	cr_assert_not(al_check_kind(&f.c, NULL, AL_VAL_MAP, "missing"));
	cr_assert_eq(f.c.errors, 0);
	unit_assert_ndiags(&f.d, 0);

	cr_assert_not(al_check_kind(&f.c, val(&f, "str"), AL_VAL_SEQ, "str"));
	cr_assert_not(al_check_kind(&f.c, val(&f, "list"), AL_VAL_MAP, "list"));
	cr_assert_not(al_check_kind(&f.c, val(&f, "map"), AL_VAL_SCALAR, "map"));
	cr_assert_eq(f.c.errors, 3);
	unit_assert_diag(&f.d, "c.yaml", 5, 6, "'str' must be a list, not a string");
	unit_assert_diag(&f.d, "c.yaml", 1, 7, "'list' must be a mapping, not a list");
	unit_assert_diag(&f.d, "c.yaml", 2, 6, "'map' must be a string, not a mapping");
	release(&f);
}

Test(check, string_points_into_the_document)
{
	struct fixture f;
	const char *s = NULL;

	load(&f, "a: 'hello'\nb: [x]\nc: 12\n");
	cr_assert(al_check_string(&f.c, val(&f, "a"), "a", &s));
	cr_assert_str_eq(s, "hello");
	cr_assert_eq(s, val(&f, "a")->str);
	cr_assert(al_check_string(&f.c, val(&f, "c"), "c", &s), "a number is text too");
	cr_assert_str_eq(s, "12");
	s = NULL;
	cr_assert_not(al_check_string(&f.c, val(&f, "b"), "b", &s));
	cr_assert_null(s);
	unit_assert_ndiags(&f.d, 1);
	unit_assert_diag(&f.d, "c.yaml", 2, 4, "'b' must be a string, not a list");
	release(&f);
}

Test(check, int_checks_type_and_range)
{
	struct fixture f;
	int n = -1;

	load(&f, "ok: 7\nlow: 0\nneg: -3\nhigh: 11\nword: ten\nquoted: '5'\nfloat: 1.5\n"
		 "huge: 99999999999999999999\nnone: ~\nlist: [1]\nplus: +10\n");
	cr_assert(al_check_int(&f.c, val(&f, "ok"), "ok", 1, 10, &n));
	cr_assert_eq(n, 7);
	cr_assert(al_check_int(&f.c, val(&f, "plus"), "plus", 1, 10, &n));
	cr_assert_eq(n, 10);
	n = 42;
	cr_assert_not(al_check_int(&f.c, val(&f, "none"), "none", 1, 10, &n));
	cr_assert_eq(n, 42, "a null leaves the default");
	unit_assert_ndiags(&f.d, 0);

	cr_assert_not(al_check_int(&f.c, val(&f, "low"), "low", 1, 10, &n));
	cr_assert_not(al_check_int(&f.c, val(&f, "neg"), "neg", 0, 10, &n));
	cr_assert_not(al_check_int(&f.c, val(&f, "high"), "high", 1, 10, &n));
	cr_assert_not(al_check_int(&f.c, val(&f, "word"), "word", 1, 10, &n));
	cr_assert_not(al_check_int(&f.c, val(&f, "quoted"), "quoted", 1, 10, &n));
	cr_assert_not(al_check_int(&f.c, val(&f, "float"), "float", 1, 10, &n));
	cr_assert_not(al_check_int(&f.c, val(&f, "huge"), "huge", 1, 2147483647, &n));
	cr_assert_not(al_check_int(&f.c, val(&f, "list"), "list", 1, 10, &n));
	cr_assert_eq(n, 42, "a bad value leaves the default");
	cr_assert_eq(f.c.errors, 8);
	unit_assert_ndiags(&f.d, 8);
	unit_assert_diag(&f.d, "c.yaml", 2, 6, "'low' must be between 1 and 10 (got 0)");
	unit_assert_diag(&f.d, "c.yaml", 3, 6, "'neg' must not be negative (got -3)");
	unit_assert_diag(&f.d, "c.yaml", 4, 7, "'high' must be between 1 and 10 (got 11)");
	unit_assert_diag(&f.d, "c.yaml", 5, 7, "'word' must be a whole number, not a string");
	unit_assert_diag(&f.d, "c.yaml", 6, 9, "'quoted' must be a whole number, not a string");
	unit_assert_diag(&f.d, "c.yaml", 7, 8, "'float' must be a whole number, not a decimal number");
	unit_assert_diag(&f.d, "c.yaml", 8, 7, "(got 99999999999999999999)");
	unit_assert_diag(&f.d, "c.yaml", 10, 7, "'list' must be a whole number, not a list");
	release(&f);
}

Test(check, bool_reads_words_only)
{
	struct fixture f;
	bool b = false;

	load(&f, "y: yes\nn: False\none: 1\nword: maybe\nq: 'true'\nnone: ~\n");
	cr_assert(al_check_bool(&f.c, val(&f, "y"), "y", &b));
	cr_assert(b);
	cr_assert(al_check_bool(&f.c, val(&f, "n"), "n", &b));
	cr_assert_not(b);
	cr_assert_not(al_check_bool(&f.c, val(&f, "none"), "none", &b));
	unit_assert_ndiags(&f.d, 0);
	cr_assert_not(al_check_bool(&f.c, val(&f, "one"), "one", &b));
	cr_assert_not(al_check_bool(&f.c, val(&f, "word"), "word", &b));
	cr_assert_not(al_check_bool(&f.c, val(&f, "q"), "q", &b));
	unit_assert_ndiags(&f.d, 3);
	unit_assert_diag(&f.d, "c.yaml", 3, 6, "'one' must be true or false, not a number");
	unit_assert_diag(&f.d, "c.yaml", 4, 7, "'word' must be true or false, not a string");
	unit_assert_diag(&f.d, "c.yaml", 5, 4, "'q' must be true or false, not a string");
	release(&f);
}

Test(check, enum_hints_at_the_nearest_name_or_lists_them)
{
	static const char *const names[] = { "direct", "composite" };
	struct fixture f;
	int i = -1;

	load(&f, "a: composite\nb: direkt\nc: banana\nd: [direct]\n");
	cr_assert(al_check_enum(&f.c, val(&f, "a"), "strategy", names, 2, &i));
	cr_assert_eq(i, 1);
	i = -1;
	cr_assert_not(al_check_enum(&f.c, val(&f, "b"), "strategy", names, 2, &i));
	cr_assert_not(al_check_enum(&f.c, val(&f, "c"), "strategy", names, 2, &i));
	cr_assert_not(al_check_enum(&f.c, val(&f, "d"), "strategy", names, 2, &i));
	cr_assert_eq(i, -1);
	unit_assert_ndiags(&f.d, 3);
	unit_assert_diag(&f.d, "c.yaml", 2, 4, "unknown strategy 'direkt' (did you mean 'direct'?)");
	unit_assert_diag(&f.d, "c.yaml", 3, 4,
			 "unknown strategy 'banana' (expected one of: direct, composite)");
	unit_assert_diag(&f.d, "c.yaml", 4, 4, "must be a string, not a list");
	release(&f);
}

Test(check, string_list_reports_each_bad_item)
{
	struct fixture f;
	const char **list = NULL;
	size_t n = 99;

	load(&f, "good: [a, 'b c', 3]\nbad: [x, [y], ~, {z: 1}, w]\nempty: []\nstr: abc\n");
	cr_assert(al_check_string_list(&f.c, val(&f, "good"), "good", &list, &n));
	cr_assert_eq(n, 3);
	cr_assert_str_eq(list[0], "a");
	cr_assert_str_eq(list[1], "b c");
	cr_assert_str_eq(list[2], "3");
	cr_assert_null(list[3]);
	free(list);

	cr_assert(al_check_string_list(&f.c, val(&f, "empty"), "empty", &list, &n));
	cr_assert_eq(n, 0);
	cr_assert_null(list[0]);
	free(list);
	unit_assert_ndiags(&f.d, 0);

	/* the good items are kept, each bad one reported */
	cr_assert(al_check_string_list(&f.c, val(&f, "bad"), "bad", &list, &n));
	cr_assert_eq(n, 2);
	cr_assert_str_eq(list[0], "x");
	cr_assert_str_eq(list[1], "w");
	cr_assert_null(list[2]);
	free(list);
	unit_assert_ndiags(&f.d, 3);
	cr_assert_eq(f.c.errors, 3);
	unit_assert_diag(&f.d, "c.yaml", 2, 10, "items of 'bad' must be strings, not a list");
	unit_assert_diag(&f.d, "c.yaml", 2, 15, "items of 'bad' must be strings, not nothing");
	unit_assert_diag(&f.d, "c.yaml", 2, 18, "items of 'bad' must be strings, not a mapping");

	list = NULL;
	cr_assert_not(al_check_string_list(&f.c, val(&f, "str"), "str", &list, &n));
	cr_assert_null(list);
	unit_assert_diag(&f.d, "c.yaml", 4, 6, "'str' must be a list, not a string");
	release(&f);
}

Test(check, regex_compiles_and_reports_errors_at_their_column)
{
	struct fixture f;
	pcre2_code *re;

	load(&f, "ok: 'passed: (\\d+)'\n"
		 "open: a(b\n"
		 "single: 'it''s(x'\n"
		 "double: \"\\\\d\\\\d(x\"\n"
		 "range: '[z-a]'\n"
		 "none: ~\n"
		 "list: [a]\n");
	re = al_check_regex(&f.c, val(&f, "ok"), "ok");
	cr_assert_not_null(re);
	pcre2_code_free(re);
	cr_assert_null(al_check_regex(&f.c, val(&f, "none"), "none"));
	unit_assert_ndiags(&f.d, 0);

	cr_assert_null(al_check_regex(&f.c, val(&f, "open"), "open"));
	cr_assert_null(al_check_regex(&f.c, val(&f, "single"), "single"));
	cr_assert_null(al_check_regex(&f.c, val(&f, "double"), "double"));
	cr_assert_null(al_check_regex(&f.c, val(&f, "range"), "range"));
	cr_assert_null(al_check_regex(&f.c, val(&f, "list"), "list"));
	unit_assert_ndiags(&f.d, 5);
	/* PCRE2 points after the text it could not use: the end of "a(b" */
	unit_assert_diag(&f.d, "c.yaml", 2, 10,
			 "invalid regular expression in 'open': missing closing parenthesis");
	/* it''s(x: the end, offset 6, is column 17, after the quote pair */
	unit_assert_diag(&f.d, "c.yaml", 3, 17, "invalid regular expression in 'single'");
	/* \\d\\d(x in source is \d\d(x: the end, offset 6, is column 18 */
	unit_assert_diag(&f.d, "c.yaml", 4, 18, "invalid regular expression in 'double'");
	/* [z-a]: offset 3, the 'a', column 12 */
	unit_assert_diag(&f.d, "c.yaml", 5, 12, "range out of order");
	unit_assert_diag(&f.d, "c.yaml", 7, 7, "'list' must be a string, not a list");
	release(&f);
}

Test(check, unknown_key_hints_only_near_names)
{
	static const char *const known[] = { "timeout", "runner", "model" };
	struct fixture f;

	load(&f, "timout: 1\nbanana: 2\n");
	al_check_unknown_key(&f.c, AL_VAL_KEY(f.doc->root, 0), known, 3, "agent front matter");
	al_check_unknown_key(&f.c, AL_VAL_KEY(f.doc->root, 1), known, 3, "agent front matter");
	cr_assert_eq(f.c.errors, 2);
	unit_assert_ndiags(&f.d, 2);
	cr_assert_str_eq(f.d.v[0].msg,
			 "unknown key 'timout' in agent front matter (did you mean 'timeout'?)");
	cr_assert_eq(f.d.v[0].pos.line, 1);
	cr_assert_eq(f.d.v[0].pos.col, 1);
	cr_assert_str_eq(f.d.v[1].msg, "unknown key 'banana' in agent front matter");
	cr_assert_eq(f.d.v[1].pos.line, 2);
	release(&f);
}

Test(check, error_counts_and_formats)
{
	struct fixture f;
	struct al_pos at = { "other.md", 3, 9 };

	load(&f, "a: 1\n");
	al_check_error(&f.c, at, "bad %s number %d", "thing", 42);
	cr_assert_eq(f.c.errors, 1);
	unit_assert_diag(&f.d, "other.md", 3, 9, "bad thing number 42");
	release(&f);
}
