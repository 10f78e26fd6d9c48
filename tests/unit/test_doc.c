#include "ailoop/model/doc.h"
#include "ailoop/base/strbuf.h"
#include "ailoop/base/util.h"

#include "unit.h"

#include <criterion/criterion.h>
#include <string.h>

/* Parses `text` as file "t.yaml"; the text must outlive the document. */
static int parse(struct al_doc **out, struct al_diags *d, const char *text, int line_offset)
{
	return al_doc_parse(out, d, "t.yaml", text, strlen(text), line_offset);
}

static void assert_pos(const struct al_val *v, int line, int col)
{
	cr_assert_not_null(v);
	cr_assert_eq(v->pos.line, line, "line %d, expected %d", v->pos.line, line);
	cr_assert_eq(v->pos.col, col, "col %d, expected %d", v->pos.col, col);
}

static void assert_scalar(const struct al_val *v, const char *str, int line, int col)
{
	cr_assert_not_null(v);
	cr_assert_eq(v->kind, AL_VAL_SCALAR);
	cr_assert_str_eq(v->str, str);
	cr_assert_eq(v->len, strlen(str));
	assert_pos(v, line, col);
}

/* A plain scalar made by hand, for the value readers' edge cases. */
static struct al_val plain(const char *s)
{
	struct al_val v = { .kind = AL_VAL_SCALAR, .style = AL_STYLE_PLAIN, .str = s,
			    .len = strlen(s) };
	return v;
}

Test(doc, scalars_lists_and_mappings_with_positions)
{
	static const char text[] = "name: demo\n"
				   "items:\n"
				   "  - one\n"
				   "  - 'two'\n"
				   "map: {a: 1, b: [x, y]}\n";
	struct al_diags d = AL_DIAGS_INIT;
	struct al_doc *doc;
	const struct al_val *root, *items, *map, *b;

	cr_assert_eq(parse(&doc, &d, text, 0), 0);
	unit_assert_ndiags(&d, 0);
	cr_assert_str_eq(doc->file, "t.yaml");
	root = doc->root;
	cr_assert_eq(root->kind, AL_VAL_MAP);
	cr_assert_eq(root->n, 3);
	assert_pos(root, 1, 1);
	assert_scalar(AL_VAL_KEY(root, 0), "name", 1, 1);
	assert_scalar(AL_VAL_VALUE(root, 0), "demo", 1, 7);
	assert_scalar(AL_VAL_KEY(root, 1), "items", 2, 1);

	items = al_val_get(root, "items");
	cr_assert_eq(items->kind, AL_VAL_SEQ);
	cr_assert_eq(items->n, 2);
	assert_pos(items, 3, 3);
	assert_scalar(items->items[0], "one", 3, 5);
	assert_scalar(items->items[1], "two", 4, 5);

	map = al_val_get(root, "map");
	cr_assert_eq(map->kind, AL_VAL_MAP);
	cr_assert_eq(map->n, 2);
	assert_pos(map, 5, 6);
	assert_scalar(AL_VAL_KEY(map, 0), "a", 5, 7);
	assert_scalar(AL_VAL_VALUE(map, 0), "1", 5, 10);
	assert_scalar(AL_VAL_KEY(map, 1), "b", 5, 13);
	b = al_val_get(map, "b");
	cr_assert_eq(b->kind, AL_VAL_SEQ);
	assert_pos(b, 5, 16);
	assert_scalar(b->items[0], "x", 5, 17);
	assert_scalar(b->items[1], "y", 5, 20);

	cr_assert_null(al_val_get(root, "missing"));
	cr_assert_null(al_val_get(items, "one"), "a list has no keys");
	cr_assert_null(al_val_get(NULL, "name"));
	al_doc_free(doc);
	al_diags_release(&d);
}

Test(doc, positions_count_characters_not_bytes)
{
	static const char text[] = "\xc3\xa9t\xc3\xa9: [\xe4\xb8\xad, x]\n";
	struct al_diags d = AL_DIAGS_INIT;
	struct al_doc *doc;
	const struct al_val *seq;

	cr_assert_eq(parse(&doc, &d, text, 0), 0);
	seq = AL_VAL_VALUE(doc->root, 0);
	assert_pos(seq, 1, 6);
	assert_scalar(seq->items[0], "\xe4\xb8\xad", 1, 7);
	assert_scalar(seq->items[1], "x", 1, 10);
	al_doc_free(doc);
	al_diags_release(&d);
}

Test(doc, records_the_style_of_each_value)
{
	static const char text[] = "plain: a\n"
				   "single: 'b'\n"
				   "double: \"c\"\n"
				   "literal: |\n  d\n"
				   "folded: >\n  e\n"
				   "flow: [f]\n"
				   "block:\n  - g\n"
				   "fmap: {h: i}\n"
				   "bmap:\n  j: k\n";
	struct al_diags d = AL_DIAGS_INIT;
	struct al_doc *doc;
	const struct al_val *r;

	cr_assert_eq(parse(&doc, &d, text, 0), 0);
	r = doc->root;
	cr_assert_eq(al_val_get(r, "plain")->style, AL_STYLE_PLAIN);
	cr_assert_eq(al_val_get(r, "single")->style, AL_STYLE_SINGLE);
	cr_assert_eq(al_val_get(r, "double")->style, AL_STYLE_DOUBLE);
	cr_assert_eq(al_val_get(r, "literal")->style, AL_STYLE_BLOCK);
	cr_assert_str_eq(al_val_get(r, "literal")->str, "d\n");
	cr_assert_eq(al_val_get(r, "folded")->style, AL_STYLE_BLOCK);
	cr_assert_eq(al_val_get(r, "flow")->style, AL_STYLE_FLOW);
	cr_assert_eq(al_val_get(r, "block")->style, AL_STYLE_BLOCK_COLLECTION);
	cr_assert_eq(al_val_get(r, "fmap")->style, AL_STYLE_FLOW);
	cr_assert_eq(al_val_get(r, "bmap")->style, AL_STYLE_BLOCK_COLLECTION);
	cr_assert_eq(r->style, AL_STYLE_BLOCK_COLLECTION);
	al_doc_free(doc);
	al_diags_release(&d);
}

Test(doc, reads_json_with_tabs_and_no_space_after_colons)
{
	static const char text[] = "{\n"
				   "\t\"version\":1,\n"
				   "\t\"flow\":{\"id\":\"a\",\"children\":[{\"type\":\"action\"},true,null]}\n"
				   "}\n";
	struct al_diags d = AL_DIAGS_INIT;
	struct al_doc *doc;
	const struct al_val *r, *flow, *kids;
	long long n = 0;
	bool b = false;

	cr_assert_eq(parse(&doc, &d, text, 0), 0, "%s", unit_diags_text(&d));
	r = doc->root;
	cr_assert_eq(r->kind, AL_VAL_MAP);
	cr_assert_eq(r->style, AL_STYLE_FLOW);
	cr_assert_eq(r->n, 2);
	assert_scalar(AL_VAL_KEY(r, 0), "version", 2, 2);
	cr_assert_eq(AL_VAL_KEY(r, 0)->style, AL_STYLE_DOUBLE);
	assert_scalar(AL_VAL_VALUE(r, 0), "1", 2, 12);
	cr_assert(al_val_int(AL_VAL_VALUE(r, 0), &n));
	cr_assert_eq(n, 1);
	flow = al_val_get(r, "flow");
	assert_pos(flow, 3, 9);
	assert_scalar(al_val_get(flow, "id"), "a", 3, 15);
	kids = al_val_get(flow, "children");
	cr_assert_eq(kids->kind, AL_VAL_SEQ);
	cr_assert_eq(kids->n, 3);
	cr_assert_str_eq(al_val_get(kids->items[0], "type")->str, "action");
	cr_assert(al_val_bool(kids->items[1], &b));
	cr_assert(b);
	cr_assert(al_val_is_null(kids->items[2]));
	al_doc_free(doc);
	al_diags_release(&d);
}

Test(doc, empty_documents_have_no_root)
{
	static const char *const empties[] = { "", "# only a comment\n", "\n\n   \n" };
	struct al_diags d = AL_DIAGS_INIT;
	struct al_doc *doc;

	for (size_t i = 0; i < AL_ARRAY_SIZE(empties); i++) {
		cr_assert_eq(parse(&doc, &d, empties[i], 0), 0);
		cr_assert_not_null(doc);
		cr_assert_null(doc->root, "document %zu", i);
		al_doc_free(doc);
	}
	/* an explicit start with nothing after it is one null value */
	cr_assert_eq(parse(&doc, &d, "---\n", 0), 0);
	cr_assert(al_val_is_null(doc->root));
	al_doc_free(doc);
	unit_assert_ndiags(&d, 0);
	al_doc_free(NULL);
	al_diags_release(&d);
}

Test(doc, refuses_a_second_document)
{
	struct al_diags d = AL_DIAGS_INIT;
	struct al_doc *doc = (void *)1;

	cr_assert_eq(parse(&doc, &d, "a: 1\n---\nb: 2\n", 0), AL_EINVALID);
	cr_assert_null(doc);
	unit_assert_ndiags(&d, 1);
	unit_assert_diag(&d, "t.yaml", 2, 1, "only one YAML document");
	al_diags_release(&d);

	/* one explicit document is fine, with or without an end marker */
	cr_assert_eq(parse(&doc, &d, "---\na: 1\n...\n", 0), 0);
	cr_assert_str_eq(al_val_get(doc->root, "a")->str, "1");
	al_doc_free(doc);
	cr_assert_eq(parse(&doc, &d, "---\na: 1\n...\n---\nb: 2\n", 0), AL_EINVALID);
	cr_assert_null(doc);
	unit_assert_diag(&d, "t.yaml", 4, 1, "only one YAML document");
	al_diags_release(&d);
}

Test(doc, refuses_anchors_and_aliases_where_they_are)
{
	static const char anchors[] = "a: &x 1\n"
				      "c: &m {k: v}\n"
				      "d: &s [1]\n";
	static const char text[] = "a: &x 1\n"
				   "b: *x\n"
				   "c: &m {k: v}\n"
				   "d: &s [1]\n";
	struct al_diags d = AL_DIAGS_INIT;
	struct al_doc *doc;

	/* anchors leave the tree whole, so the reader can go on and report the rest */
	cr_assert_eq(parse(&doc, &d, anchors, 0), AL_EINVALID);
	cr_assert_not_null(doc);
	cr_assert_eq(doc->root->n, 3);
	cr_assert_str_eq(al_val_get(doc->root, "a")->str, "1");
	cr_assert_eq(al_val_get(doc->root, "c")->kind, AL_VAL_MAP);
	cr_assert_eq(al_val_get(doc->root, "d")->kind, AL_VAL_SEQ);
	unit_assert_ndiags(&d, 3);
	unit_assert_diag(&d, "t.yaml", 1, 4, "anchors are not supported ('&x')");
	unit_assert_diag(&d, "t.yaml", 2, 4, "anchors are not supported ('&m')");
	unit_assert_diag(&d, "t.yaml", 3, 4, "anchors are not supported ('&s')");
	al_doc_free(doc);
	al_diags_release(&d);

	/*
	 * an alias leaves a hole that a reader would report again as a missing
	 * value: no tree, but every YAML problem is still reported
	 */
	doc = (void *)1;
	cr_assert_eq(parse(&doc, &d, text, 0), AL_EINVALID);
	cr_assert_null(doc);
	unit_assert_ndiags(&d, 4);
	unit_assert_diag(&d, "t.yaml", 1, 4, "anchors are not supported ('&x')");
	unit_assert_diag(&d, "t.yaml", 2, 4, "aliases are not supported ('*x')");
	unit_assert_diag(&d, "t.yaml", 3, 4, "anchors are not supported ('&m')");
	unit_assert_diag(&d, "t.yaml", 4, 4, "anchors are not supported ('&s')");
	al_doc_free(doc);
	al_diags_release(&d);
}

Test(doc, a_self_referencing_alias_is_no_cycle, .timeout = 10)
{
	struct al_diags d = AL_DIAGS_INIT;
	struct al_doc *doc;

	doc = (void *)1;
	cr_assert_eq(parse(&doc, &d, "&a [*a, *a]\n", 0), AL_EINVALID);
	cr_assert_null(doc, "no tree with holes where the aliases were");
	unit_assert_ndiags(&d, 3);
	unit_assert_diag(&d, NULL, 1, 1, "'&a'");
	unit_assert_diag(&d, NULL, 1, 5, "'*a'");
	unit_assert_diag(&d, NULL, 1, 9, "'*a'");
	al_doc_free(doc);
	al_diags_release(&d);
}

Test(doc, reports_duplicate_keys_in_small_mappings)
{
	struct al_diags d = AL_DIAGS_INIT;
	struct al_doc *doc;

	cr_assert_eq(parse(&doc, &d, "a: 1\nb: 2\na: 3\nsub: {x: 1, x: 2}\n", 0), AL_EINVALID);
	cr_assert_not_null(doc);
	unit_assert_ndiags(&d, 2);
	unit_assert_diag(&d, "t.yaml", 3, 1, "duplicate key 'a'");
	unit_assert_diag(&d, "t.yaml", 4, 13, "duplicate key 'x'");
	/* the same key in different mappings is no duplicate */
	al_doc_free(doc);
	al_diags_release(&d);
	cr_assert_eq(parse(&doc, &d, "a: {k: 1}\nb: {k: 1}\nk: 0\n", 0), 0);
	unit_assert_ndiags(&d, 0);
	al_doc_free(doc);
	al_diags_release(&d);
}

Test(doc, reports_duplicate_keys_in_large_mappings)
{
	struct al_strbuf text = AL_STRBUF_INIT;
	struct al_diags d = AL_DIAGS_INIT;
	struct al_doc *doc;

	/* 100 distinct keys: no duplicates, whatever the lookup */
	for (int i = 0; i < 100; i++)
		al_strbuf_addf(&text, "k%d: %d\n", i, i);
	cr_assert_eq(parse(&doc, &d, text.buf, 0), 0);
	unit_assert_ndiags(&d, 0);
	cr_assert_eq(doc->root->n, 100);
	cr_assert_str_eq(al_val_get(doc->root, "k99")->str, "99");
	al_doc_free(doc);

	/* repeats of early and late keys, past the 32-key switch to a map */
	al_strbuf_addf(&text, "k0: again\n");   /* line 101 */
	al_strbuf_addf(&text, "k31: again\n");  /* line 102 */
	al_strbuf_addf(&text, "k32: again\n");  /* line 103 */
	al_strbuf_addf(&text, "k99: again\n");  /* line 104 */
	al_strbuf_addf(&text, "k100: new\n");   /* line 105 */
	al_strbuf_addf(&text, "k100: again\n"); /* line 106 */
	cr_assert_eq(parse(&doc, &d, text.buf, 0), AL_EINVALID);
	unit_assert_ndiags(&d, 5);
	unit_assert_diag(&d, NULL, 101, 1, "duplicate key 'k0'");
	unit_assert_diag(&d, NULL, 102, 1, "duplicate key 'k31'");
	unit_assert_diag(&d, NULL, 103, 1, "duplicate key 'k32'");
	unit_assert_diag(&d, NULL, 104, 1, "duplicate key 'k99'");
	unit_assert_diag(&d, NULL, 106, 1, "duplicate key 'k100'");
	al_doc_free(doc);
	al_diags_release(&d);

	/* exactly 33 keys, the 33rd repeating the first: the switch itself */
	al_strbuf_reset(&text);
	for (int i = 0; i < 32; i++)
		al_strbuf_addf(&text, "k%d: %d\n", i, i);
	al_strbuf_addf(&text, "k0: again\n");
	cr_assert_eq(parse(&doc, &d, text.buf, 0), AL_EINVALID);
	unit_assert_ndiags(&d, 1);
	unit_assert_diag(&d, NULL, 33, 1, "duplicate key 'k0'");
	al_doc_free(doc);
	al_diags_release(&d);
	al_strbuf_release(&text);
}

Test(doc, refuses_keys_that_are_not_scalars)
{
	struct al_diags d = AL_DIAGS_INIT;
	struct al_doc *doc;

	/* a key with no name cannot be read: no tree, every such key reported */
	doc = (void *)1;
	cr_assert_eq(parse(&doc, &d, "ok: 1\n? [a, b]\n: 1\n? {c: d}\n: 2\n", 0), AL_EINVALID);
	cr_assert_null(doc);
	unit_assert_ndiags(&d, 2);
	unit_assert_diag(&d, "t.yaml", 2, 3, "mapping keys must be plain strings");
	unit_assert_diag(&d, "t.yaml", 4, 3, "mapping keys must be plain strings");
	al_doc_free(doc);
	al_diags_release(&d);
	doc = (void *)1;
	cr_assert_eq(parse(&doc, &d, "{[x]: 1}\n", 0), AL_EINVALID);
	cr_assert_null(doc);
	unit_assert_ndiags(&d, 1);
	unit_assert_diag(&d, "t.yaml", 1, 2, "mapping keys must be plain strings");
	al_doc_free(doc);
	al_diags_release(&d);
}

static void parse_deep(const char *open, const char *close, int levels, int want_rc)
{
	struct al_strbuf text = AL_STRBUF_INIT;
	struct al_diags d = AL_DIAGS_INIT;
	struct al_doc *doc;

	for (int i = 0; i < levels; i++)
		al_strbuf_adds(&text, open);
	for (int i = 0; close && i < levels; i++)
		al_strbuf_adds(&text, close);
	al_strbuf_addch(&text, '\n');
	cr_assert_eq(parse(&doc, &d, text.buf, 0), want_rc, "%d levels of %s:%s", levels, open,
		     unit_diags_text(&d));
	if (want_rc == 0) {
		int depth = 0;
		const struct al_val *v = doc->root;

		while (v->kind != AL_VAL_SCALAR && v->n) {
			v = v->kind == AL_VAL_SEQ ? v->items[0] : AL_VAL_VALUE(v, 0);
			depth++;
		}
		cr_assert_geq(depth, levels - 1);
		al_doc_free(doc);
	} else {
		cr_assert_null(doc);
		unit_assert_ndiags(&d, 1);
		cr_assert(strstr(d.v[0].msg, "nesting deeper than 400 levels"), "%s",
			  unit_diags_text(&d));
	}
	al_diags_release(&d);
	al_strbuf_release(&text);
}

Test(doc, refuses_nesting_deeper_than_the_limit_without_recursing, .timeout = 30)
{
	struct al_diags d = AL_DIAGS_INIT;
	struct al_strbuf text = AL_STRBUF_INIT;
	struct al_doc *doc;

	/* 10000 unclosed '[': stopped at the limit, at the bracket that passes it */
	for (int i = 0; i < 10000; i++)
		al_strbuf_addch(&text, '[');
	cr_assert_eq(parse(&doc, &d, text.buf, 0), AL_EINVALID);
	cr_assert_null(doc);
	unit_assert_ndiags(&d, 1);
	unit_assert_diag(&d, "t.yaml", 1, AL_DOC_MAX_DEPTH + 1, "nesting deeper than 400 levels");
	al_diags_release(&d);
	al_strbuf_release(&text);

	parse_deep("[", "]", 10000, AL_EINVALID);
	parse_deep("{a: ", "}", 10000, AL_EINVALID);
	parse_deep("[", "]", AL_DOC_MAX_DEPTH, 0);
	parse_deep("[", "]", AL_DOC_MAX_DEPTH + 1, AL_EINVALID);
	parse_deep("- ", NULL, 1000, AL_EINVALID);
}

Test(doc, deep_block_mappings_are_refused_at_their_line, .timeout = 30)
{
	struct al_strbuf text = AL_STRBUF_INIT;
	struct al_diags d = AL_DIAGS_INIT;
	struct al_doc *doc;

	for (int i = 0; i < 500; i++) {
		for (int j = 0; j < i; j++)
			al_strbuf_adds(&text, " ");
		al_strbuf_adds(&text, "a:\n");
	}
	cr_assert_eq(parse(&doc, &d, text.buf, 0), AL_EINVALID);
	cr_assert_null(doc);
	unit_assert_ndiags(&d, 1);
	/* the 401st mapping starts at its first key: line 401, column 401 */
	unit_assert_diag(&d, "t.yaml", 401, 401, "nesting deeper than 400 levels");
	al_diags_release(&d);
	al_strbuf_release(&text);
}

Test(doc, syntax_errors_are_reported_where_they_are)
{
	struct al_diags d = AL_DIAGS_INIT;
	struct al_doc *doc = (void *)1;

	cr_assert_eq(parse(&doc, &d, "a: 1\nb: c: d\n", 0), AL_EINVALID);
	cr_assert_null(doc, "no tree after a syntax error");
	unit_assert_ndiags(&d, 1);
	unit_assert_diag(&d, "t.yaml", 2, 5, "mapping values are not allowed");
	al_diags_release(&d);

	cr_assert_eq(parse(&doc, &d, "a:\n\tb: 1\n", 0), AL_EINVALID);
	unit_assert_ndiags(&d, 1);
	unit_assert_diag(&d, "t.yaml", 2, 1, "cannot start any token");
	al_diags_release(&d);

	/* a '[' left open: reported at the bracket, with the line that showed it */
	cr_assert_eq(parse(&doc, &d, "a: [1, 2\nb: 3\n", 0), AL_EINVALID);
	unit_assert_ndiags(&d, 1);
	unit_assert_diag(&d, "t.yaml", 1, 4, "this flow sequence is never closed "
			 "(did not find expected ',' or ']' before line 2)");
	al_diags_release(&d);

	/* errors of the reader (bad UTF-8) come as a byte offset */
	cr_assert_eq(parse(&doc, &d, "a: 1\nb: \xc3\xa9\xff\n", 0), AL_EINVALID);
	unit_assert_ndiags(&d, 1);
	unit_assert_diag(&d, "t.yaml", 2, 5, "");
	al_diags_release(&d);
}

Test(doc, line_offset_moves_every_position)
{
	struct al_diags d = AL_DIAGS_INIT;
	struct al_doc *doc;

	cr_assert_eq(parse(&doc, &d, "a: 1\nb: [x]\n", 4), 0);
	cr_assert_eq(doc->line_offset, 4);
	assert_pos(doc->root, 5, 1);
	assert_scalar(AL_VAL_VALUE(doc->root, 0), "1", 5, 4);
	assert_scalar(al_val_get(doc->root, "b")->items[0], "x", 6, 5);
	al_doc_free(doc);

	cr_assert_eq(parse(&doc, &d, "a: 1\na: 2\n", 10), AL_EINVALID);
	unit_assert_diag(&d, "t.yaml", 12, 1, "duplicate key 'a'");
	al_doc_free(doc);
	al_diags_release(&d);

	/* the line named in the message moves too */
	cr_assert_eq(parse(&doc, &d, "x: 1\ny: [1,\nz: a: b\n", 10), AL_EINVALID);
	unit_assert_ndiags(&d, 1);
	unit_assert_diag(&d, "t.yaml", 12, 4, "this flow sequence is never closed "
			 "(did not find expected ',' or ']' before line 13)");
	al_diags_release(&d);

	cr_assert_eq(parse(&doc, &d, "x: 1\n\xff\n", 3), AL_EINVALID);
	unit_assert_diag(&d, "t.yaml", 5, 1, "");
	al_diags_release(&d);
}

Test(doc, strings_with_nul_are_refused)
{
	static const char text[] = "a: \"x\\0y\"\n";
	struct al_diags d = AL_DIAGS_INIT;
	struct al_doc *doc;

	cr_assert_eq(parse(&doc, &d, text, 0), AL_EINVALID);
	unit_assert_ndiags(&d, 1);
	/* at the escape that makes the NUL */
	unit_assert_diag(&d, "t.yaml", 1, 6, "strings must not contain NUL characters");
	al_doc_free(doc);
	al_diags_release(&d);
}

Test(doc, int_reads_plain_decimal_integers)
{
	static const struct {
		const char *s;
		bool ok;
		long long n;
	} cases[] = {
		{ "5", true, 5 },
		{ "+5", true, 5 },
		{ "-5", true, -5 },
		{ "0", true, 0 },
		{ "-0", true, 0 },
		{ "007", true, 7 },
		{ "1800", true, 1800 },
		{ "999999999999999999", true, 999999999999999999LL },
		/* too large: saturates, so that range checks reject it */
		{ "1000000000000000000", true, 999999999999999999LL },
		{ "99999999999999999999999999", true, 999999999999999999LL },
		{ "-99999999999999999999999999", true, -999999999999999999LL },
		{ "9223372036854775808", true, 999999999999999999LL },
		{ "-", false, 0 },
		{ "+", false, 0 },
		{ "", false, 0 },
		{ "5a", false, 0 },
		{ "1.0", false, 0 },
		{ "0x1F", false, 0 },
		{ "1e3", false, 0 },
		{ " 5", false, 0 },
		{ "--5", false, 0 },
		{ "five", false, 0 },
	};

	for (size_t i = 0; i < AL_ARRAY_SIZE(cases); i++) {
		struct al_val v = plain(cases[i].s);
		long long n = 12345;

		cr_assert_eq(al_val_int(&v, &n), cases[i].ok, "'%s'", cases[i].s);
		if (cases[i].ok)
			cr_assert_eq(n, cases[i].n, "'%s' read as %lld", cases[i].s, n);
		else
			cr_assert_eq(n, 12345, "'%s' must leave *out alone", cases[i].s);
	}
	cr_assert_not(al_val_int(NULL, &(long long){ 0 }));
}

Test(doc, int_refuses_quoted_numbers_and_collections)
{
	struct al_diags d = AL_DIAGS_INIT;
	struct al_doc *doc;
	const struct al_val *r;
	long long n;

	cr_assert_eq(parse(&doc, &d, "a: '5'\nb: \"5\"\nc: [5]\nd: 5\ne: |\n  5\n", 0), 0);
	r = doc->root;
	cr_assert_not(al_val_int(al_val_get(r, "a"), &n));
	cr_assert_not(al_val_int(al_val_get(r, "b"), &n));
	cr_assert_not(al_val_int(al_val_get(r, "c"), &n));
	cr_assert_not(al_val_int(al_val_get(r, "e"), &n));
	cr_assert(al_val_int(al_val_get(r, "d"), &n));
	cr_assert_eq(n, 5);
	cr_assert_str_eq(al_val_describe(al_val_get(r, "a")), "a string");
	cr_assert_str_eq(al_val_describe(al_val_get(r, "d")), "a number");
	al_doc_free(doc);
	al_diags_release(&d);
}

Test(doc, bool_reads_yaml_words_in_any_case)
{
	static const char *const yes[] = { "true", "True", "TRUE", "yes", "Yes", "on", "ON" };
	static const char *const no[] = { "false", "False", "no", "NO", "off", "Off" };
	static const char *const neither[] = { "1", "0", "y", "n", "t", "truth", "", "nope" };
	bool b;

	for (size_t i = 0; i < AL_ARRAY_SIZE(yes); i++) {
		struct al_val v = plain(yes[i]);

		b = false;
		cr_assert(al_val_bool(&v, &b), "'%s'", yes[i]);
		cr_assert(b, "'%s'", yes[i]);
	}
	for (size_t i = 0; i < AL_ARRAY_SIZE(no); i++) {
		struct al_val v = plain(no[i]);

		b = true;
		cr_assert(al_val_bool(&v, &b), "'%s'", no[i]);
		cr_assert_not(b, "'%s'", no[i]);
	}
	for (size_t i = 0; i < AL_ARRAY_SIZE(neither); i++) {
		struct al_val v = plain(neither[i]);

		cr_assert_not(al_val_bool(&v, &b), "'%s'", neither[i]);
	}
	{
		struct al_val v = plain("true");

		v.style = AL_STYLE_SINGLE;
		cr_assert_not(al_val_bool(&v, &b), "a quoted 'true' is a string");
		v.style = AL_STYLE_DOUBLE;
		cr_assert_not(al_val_bool(&v, &b));
		cr_assert_not(al_val_bool(NULL, &b));
	}
}

Test(doc, null_is_plain_tilde_null_or_nothing)
{
	struct al_diags d = AL_DIAGS_INIT;
	struct al_doc *doc;
	const struct al_val *r;

	cr_assert_eq(parse(&doc, &d,
			   "a:\nb: ~\nc: null\nd: Null\ne: NULL\nf: nULL\ng: ''\nh: 'null'\n"
			   "i: []\nj: {}\nk: \"\"\n",
			   0),
		     0);
	r = doc->root;
	cr_assert(al_val_is_null(al_val_get(r, "a")));
	cr_assert(al_val_is_null(al_val_get(r, "b")));
	cr_assert(al_val_is_null(al_val_get(r, "c")));
	cr_assert(al_val_is_null(al_val_get(r, "d")));
	cr_assert(al_val_is_null(al_val_get(r, "e")));
	cr_assert_not(al_val_is_null(al_val_get(r, "f")));
	cr_assert_not(al_val_is_null(al_val_get(r, "g")), "'' is an empty string");
	cr_assert_not(al_val_is_null(al_val_get(r, "h")));
	cr_assert_not(al_val_is_null(al_val_get(r, "i")));
	cr_assert_not(al_val_is_null(al_val_get(r, "j")));
	cr_assert_not(al_val_is_null(al_val_get(r, "k")));
	cr_assert_not(al_val_is_null(NULL));
	cr_assert_str_eq(al_val_describe(al_val_get(r, "a")), "nothing");
	cr_assert_str_eq(al_val_describe(al_val_get(r, "i")), "a list");
	cr_assert_str_eq(al_val_describe(al_val_get(r, "j")), "a mapping");
	cr_assert_str_eq(al_val_describe(al_val_get(r, "g")), "a string");
	cr_assert_str_eq(al_val_describe(NULL), "nothing");
	al_doc_free(doc);
	al_diags_release(&d);
}

Test(doc, describe_names_numbers_and_booleans_only_when_plain)
{
	struct al_val v = plain("yes");

	cr_assert_str_eq(al_val_describe(&v), "a boolean");
	v = plain("-12");
	cr_assert_str_eq(al_val_describe(&v), "a number");
	v.style = AL_STYLE_DOUBLE;
	cr_assert_str_eq(al_val_describe(&v), "a string");
}

/* The column of byte `offset` of the value of key `key` in `text`. */
static int col_at(const char *text, int line_offset, const char *key, size_t offset)
{
	struct al_diags d = AL_DIAGS_INIT;
	struct al_doc *doc;
	int col;

	cr_assert_eq(parse(&doc, &d, text, line_offset), 0, "%s", unit_diags_text(&d));
	col = al_val_col_at(doc, al_val_get(doc->root, key), offset);
	al_doc_free(doc);
	al_diags_release(&d);
	return col;
}

Test(doc, col_at_in_plain_scalars)
{
	cr_assert_eq(col_at("key: hello world\n", 0, "key", 0), 6);
	cr_assert_eq(col_at("key: hello world\n", 0, "key", 6), 12);
	cr_assert_eq(col_at("x: 1\nkey: hello world\n", 0, "key", 6), 12);
	/* é is two bytes, one column */
	cr_assert_eq(col_at("k: \xc3\xa9\xc3\xa9 x\n", 0, "k", 5), 7);
	/* a tab before the value is one column */
	cr_assert_eq(col_at("k:\tab(c\n", 0, "k", 2), 6);
	/* the end of the text: one past the last character */
	cr_assert_eq(col_at("k: abc\n", 0, "k", 3), 7);
	/* a collection has only its own column */
	cr_assert_eq(col_at("k: x\nl: [ab, cd(e]\n", 0, "l", 3), 4);
}

Test(doc, col_at_in_single_quoted_scalars)
{
	/* 'it''s (x': the doubled quote is one character of the value */
	cr_assert_eq(col_at("k: 'it''s (x'\n", 0, "k", 0), 5);
	cr_assert_eq(col_at("k: 'it''s (x'\n", 0, "k", 3), 9);
	cr_assert_eq(col_at("k: 'it''s (x'\n", 0, "k", 5), 11);
	cr_assert_eq(col_at("k: '''''(x'\n", 0, "k", 2), 9);
}

Test(doc, col_at_in_double_quoted_scalars)
{
	/* "a\\b(": the escaped backslash is one byte of the value */
	cr_assert_eq(col_at("k: \"a\\\\b(\"\n", 0, "k", 3), 9);
	/* \u00e9 is 2 bytes, \u4e2d is 3, each 6 columns of source */
	cr_assert_eq(col_at("k: \"\\u00e9\\u4e2d(x\"\n", 0, "k", 0), 5);
	cr_assert_eq(col_at("k: \"\\u00e9\\u4e2d(x\"\n", 0, "k", 2), 11);
	cr_assert_eq(col_at("k: \"\\u00e9\\u4e2d(x\"\n", 0, "k", 5), 17);
	cr_assert_eq(col_at("k: \"\\u00E9(\"\n", 0, "k", 2), 11);
	/* \x41 is one byte, \n one byte, \U0001F600 four */
	cr_assert_eq(col_at("k: \"\\x41\\n(\"\n", 0, "k", 2), 11);
	cr_assert_eq(col_at("k: \"\\U0001F600(\"\n", 0, "k", 4), 15);
	/* \" and \t */
	cr_assert_eq(col_at("k: \"\\\"\\t(\"\n", 0, "k", 2), 9);
	/* literal UTF-8 inside quotes */
	cr_assert_eq(col_at("k: \"\xc3\xa9(\"\n", 0, "k", 2), 6);
}

Test(doc, col_at_falls_back_to_the_scalar_when_unknowable)
{
	/* multi-line: no single column */
	cr_assert_eq(col_at("k: 'ab\n  cd('\n", 0, "k", 4), 4);
	cr_assert_eq(col_at("k: ab\n  cd(\n", 0, "k", 4), 4);
	/* block scalars */
	cr_assert_eq(col_at("k: |\n  abc(\n", 0, "k", 3), 4);
	cr_assert_eq(col_at("k: >\n  abc(\n", 0, "k", 3), 4);
}

Test(doc, col_at_honours_the_line_offset)
{
	cr_assert_eq(col_at("x: 1\nk: 'a(b'\n", 3, "k", 1), 6);
	cr_assert_eq(col_at("x: 1\nk: \"\\\\(\"\n", 7, "k", 1), 7);
}
