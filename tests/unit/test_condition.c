#include "ailoop/model/check.h"
#include "ailoop/model/condition.h"
#include "ailoop/model/doc.h"
#include "ailoop/base/strbuf.h"

#include "unit.h"

#include <criterion/criterion.h>
#include <string.h>

/*
 * Conditions are read from the value of `c:` in a small document; the
 * document and the diagnostics live until the test ends.
 */
static struct al_diags diags = AL_DIAGS_INIT;
static struct al_doc *doc;
static struct al_check check;

static struct al_condition *parse(const char *text)
{
	al_doc_free(doc);
	al_diags_release(&diags);
	cr_assert_eq(al_doc_parse(&doc, &diags, "c.yaml", text, strlen(text), 0), 0, "%s",
		     unit_diags_text(&diags));
	check.diags = &diags;
	check.doc = doc;
	check.errors = 0;
	return al_condition_parse(&check, al_val_get(doc->root, "c"));
}

static void cleanup(void)
{
	al_doc_free(doc);
	doc = NULL;
	al_diags_release(&diags);
}

TestSuite(condition, .fini = cleanup);

/* Parses, expects success, and checks the one-line rendering. */
static struct al_condition *parse_ok(const char *text, const char *described)
{
	struct al_condition *cond = parse(text);
	struct al_strbuf sb = AL_STRBUF_INIT;

	cr_assert_not_null(cond, "%s:%s", text, unit_diags_text(&diags));
	unit_assert_ndiags(&diags, 0);
	cr_assert_eq(check.errors, 0);
	al_condition_describe(cond, &sb);
	cr_assert_str_eq(sb.buf, described);
	al_strbuf_release(&sb);
	return cond;
}

/* Parses, expects failure with exactly one diagnostic at line 1. */
static void parse_bad(const char *text, int col, const char *fragment)
{
	struct al_condition *cond = parse(text);

	cr_assert_null(cond, "%s parsed", text);
	cr_assert_gt(check.errors, 0);
	unit_assert_ndiags(&diags, 1);
	unit_assert_diag(&diags, "c.yaml", 1, col, fragment);
}

Test(condition, observation_check_is_the_default_type)
{
	struct al_condition *c =
		parse_ok("c: {key: tests.status, operator: equals, value: passing}\n",
			 "tests.status equals passing");

	cr_assert_eq(c->kind, AL_COND_CHECK);
	cr_assert_eq(c->type, AL_COND_OBSERVATION);
	cr_assert_eq(c->op, AL_OP_EQUALS);
	cr_assert_str_eq(c->key, "tests.status");
	cr_assert_str_eq(c->value, "passing");
	cr_assert_eq(c->cache_ttl_seconds, AL_COND_DEFAULT_TTL);
	cr_assert_eq(c->pos.line, 1);
	cr_assert_eq(c->pos.col, 4);
	cr_assert_null(c->re);
	al_condition_free(c);
}

Test(condition, reads_every_operator)
{
	for (size_t i = 0; i < AL_ARRAY_SIZE(al_op_names); i++) {
		char text[200], want[100];
		struct al_condition *c;

		snprintf(text, sizeof(text),
			 "c: {type: observation_check, key: k, operator: %s, value: '1'}\n",
			 al_op_names[i]);
		if (i == AL_OP_EXISTS || i == AL_OP_NOT_EXISTS)
			snprintf(want, sizeof(want), "k %s", al_op_names[i]);
		else
			snprintf(want, sizeof(want), "k %s 1", al_op_names[i]);
		c = parse_ok(text, want);
		cr_assert_eq(c->op, (enum al_op)i);
		cr_assert_eq(c->re != NULL, i == AL_OP_MATCHES_REGEX);
		al_condition_free(c);
	}
}

Test(condition, exists_needs_no_value_but_others_do)
{
	struct al_condition *c = parse_ok("c: {key: plan.ready, operator: exists}\n",
					  "plan.ready exists");

	cr_assert_null(c->value);
	al_condition_free(c);
	parse_bad("c: {key: k, operator: equals}\n", 4, "operator 'equals' needs a 'value'");
	parse_bad("c: {operator: equals, value: 1}\n", 4, "condition needs a 'key' to check");
	parse_bad("c: {key: k, value: 1}\n", 4, "condition needs an 'operator'");
	parse_bad("c: {key: k, operator: equal, value: 1}\n", 23,
		  "unknown operator 'equal' (did you mean 'equals'?)");
	parse_bad("c: {key: k, operator: equals, value: [1]}\n", 38,
		  "'value' must be a string or a number, not a list");
	cr_assert_null(parse("c: {key: [k], operator: exists}\n"));
	unit_assert_ndiags(&diags, 2);
	unit_assert_diag(&diags, "c.yaml", 1, 10, "'key' must be a string, not a list");
	unit_assert_diag(&diags, "c.yaml", 1, 4, "condition needs a 'key' to check");
}

Test(condition, numbers_and_booleans_are_kept_as_text)
{
	struct al_condition *c = parse_ok("c: {key: coverage, operator: greater_or_equal, value: 80}\n",
					  "coverage greater_or_equal 80");

	cr_assert_str_eq(c->value, "80");
	al_condition_free(c);
	c = parse_ok("c: {key: done, operator: equals, value: true}\n", "done equals true");
	cr_assert_str_eq(c->value, "true");
	al_condition_free(c);
}

Test(condition, test_result_reads_a_sensor)
{
	struct al_condition *c = parse_ok(
		"c: {type: test_result, key: unit-tests.failed, operator: less_than, value: 1}\n",
		"sensor unit-tests.failed less_than 1");

	cr_assert_eq(c->type, AL_COND_TEST_RESULT);
	al_condition_free(c);
}

Test(condition, file_exists_defaults_to_the_exists_operator)
{
	struct al_condition *c = parse_ok("c: {type: file_exists, path: 'docs/*.md'}\n",
					  "docs/*.md exists");

	cr_assert_eq(c->type, AL_COND_FILE_EXISTS);
	cr_assert_eq(c->op, AL_OP_EXISTS);
	cr_assert_str_eq(c->path, "docs/*.md");
	al_condition_free(c);
	c = parse_ok("c: {type: file_exists, path: x, operator: not_exists}\n", "x not_exists");
	cr_assert_eq(c->op, AL_OP_NOT_EXISTS);
	al_condition_free(c);
	parse_bad("c: {type: file_exists}\n", 4, "file_exists condition needs a 'path'");
	parse_bad("c: {type: file_exists, path: x, operator: equals, value: y}\n", 43,
		  "file_exists takes operator exists or not_exists, not 'equals'");
	parse_bad("c: {key: k, operator: exists, path: x}\n", 37,
		  "'path' belongs to file_exists conditions");
}

Test(condition, command_as_a_list_or_a_string)
{
	struct al_condition *c = parse_ok("c: {type: command, command: [make, -q, test]}\n",
					  "$ make -q test");

	cr_assert_eq(c->type, AL_COND_COMMAND);
	cr_assert_not_null(c->argv);
	cr_assert_str_eq(c->argv[0], "make");
	cr_assert_str_eq(c->argv[2], "test");
	cr_assert_null(c->argv[3]);
	cr_assert_null(c->expression);
	al_condition_free(c);

	c = parse_ok("c: {type: command, command: 'test -f out.txt'}\n", "$ test -f out.txt");
	cr_assert_null(c->argv);
	cr_assert_str_eq(c->expression, "test -f out.txt");
	al_condition_free(c);

	/* custom is the seeds' name for it, with an expression */
	c = parse_ok("c: {type: custom, expression: 'grep -q ok log'}\n", "$ grep -q ok log");
	cr_assert_eq(c->type, AL_COND_COMMAND);
	cr_assert_str_eq(c->expression, "grep -q ok log");
	al_condition_free(c);
}

Test(condition, command_mistakes)
{
	parse_bad("c: {type: command}\n", 4, "command condition needs a 'command' or an 'expression'");
	parse_bad("c: {type: command, command: []}\n", 29, "'command' must not be empty");
	parse_bad("c: {type: command, command: [a], expression: b}\n", 4,
		  "give either 'command' or 'expression', not both");
	parse_bad("c: {type: command, command: x, operator: equals}\n", 42,
		  "drop 'operator'");
	parse_bad("c: {key: k, operator: exists, command: x}\n", 40,
		  "'command' and 'expression' belong to command conditions");
	parse_bad("c: {key: k, operator: exists, expression: x}\n", 43,
		  "'command' and 'expression' belong to command conditions");
	cr_assert_null(parse("c: {type: command, command: {a: b}}\n"));
	unit_assert_ndiags(&diags, 2);
	unit_assert_diag(&diags, "c.yaml", 1, 29, "'command' must be a list, not a mapping");
	unit_assert_diag(&diags, "c.yaml", 1, 4, "needs a 'command' or an 'expression'");
}

Test(condition, matches_regex_is_compiled_at_load)
{
	struct al_condition *c =
		parse_ok("c: {key: log, operator: matches_regex, value: '^ok (\\d+)$'}\n",
			 "log matches_regex ^ok (\\d+)$");

	cr_assert_not_null(c->re);
	al_condition_free(c);
	/* "a(b": missing ')' at the end of the pattern, offset 3: the closing quote */
	parse_bad("c: {key: log, operator: matches_regex, value: 'a(b'}\n", 51,
		  "invalid regular expression in 'value'");
}

Test(condition, cache_ttl_can_be_set_or_disabled)
{
	struct al_condition *c =
		parse_ok("c: {key: k, operator: exists, cache_ttl_seconds: 0}\n", "k exists");

	cr_assert_eq(c->cache_ttl_seconds, 0);
	al_condition_free(c);
	c = parse_ok("c: {key: k, operator: exists, cache_ttl_seconds: 60, description: x}\n",
		     "k exists");
	cr_assert_eq(c->cache_ttl_seconds, 60);
	al_condition_free(c);
	parse_bad("c: {key: k, operator: exists, cache_ttl_seconds: -1}\n", 50,
		  "'cache_ttl_seconds' must not be negative");
}

Test(condition, unknown_keys_and_types)
{
	/* a misspelt operator key also leaves the condition without one */
	cr_assert_null(parse("c: {key: k, operater: exists}\n"));
	unit_assert_ndiags(&diags, 2);
	unit_assert_diag(&diags, "c.yaml", 1, 13,
			 "unknown key 'operater' in condition (did you mean 'operator'?)");
	unit_assert_diag(&diags, "c.yaml", 1, 4, "condition needs an 'operator'");
	parse_bad("c: {key: k, operator: exists, valeu: 3}\n", 31,
		  "unknown key 'valeu' in condition (did you mean 'value'?)");
	cr_assert_null(parse("c: {type: file_exist, path: x}\n"));
	unit_assert_diag(&diags, "c.yaml", 1, 11,
			 "unknown condition type 'file_exist' (did you mean 'file_exists'?)");
	parse_bad("c: [key, operator]\n", 4, "'condition' must be a mapping, not a list");
	cr_assert_null(parse("c: ~\n"));
	unit_assert_ndiags(&diags, 0);
	cr_assert_null(parse("c: 'x'\n"));
	unit_assert_ndiags(&diags, 1);
}

Test(condition, all_any_not_nest)
{
	static const char text[] =
		"c:\n"
		"  all:\n"
		"    - {key: a, operator: equals, value: 1}\n"
		"    - any:\n"
		"        - {type: file_exists, path: f}\n"
		"        - not: {type: command, command: [false]}\n"
		"        - not:\n"
		"            not: {key: b, operator: exists}\n";
	struct al_condition *c =
		parse_ok(text, "(a equals 1) and ((f exists) or (not ($ false)) or "
			       "(not (not (b exists))))");
	const struct al_condition *any;

	cr_assert_eq(c->kind, AL_COND_ALL);
	cr_assert_eq(c->nsubs, 2);
	cr_assert_eq(c->pos.line, 2);
	cr_assert_eq(c->pos.col, 3);
	cr_assert_eq(c->subs[0]->kind, AL_COND_CHECK);
	any = c->subs[1];
	cr_assert_eq(any->kind, AL_COND_ANY);
	cr_assert_eq(any->nsubs, 3);
	cr_assert_eq(any->subs[0]->type, AL_COND_FILE_EXISTS);
	cr_assert_eq(any->subs[1]->kind, AL_COND_NOT);
	cr_assert_eq(any->subs[1]->nsubs, 1);
	cr_assert_eq(any->subs[1]->subs[0]->type, AL_COND_COMMAND);
	cr_assert_eq(any->subs[2]->kind, AL_COND_NOT);
	cr_assert_eq(any->subs[2]->subs[0]->kind, AL_COND_NOT);
	cr_assert_str_eq(any->subs[2]->subs[0]->subs[0]->key, "b");
	al_condition_free(c);
}

Test(condition, combination_mistakes)
{
	parse_bad("c: {all: []}\n", 5, "'all' needs a list of conditions");
	parse_bad("c: {any: ~}\n", 5, "'any' needs a list of conditions");
	parse_bad("c: {all: {key: k}}\n", 10, "'all' must be a list, not a mapping");
	parse_bad("c: {not: ~}\n", 5, "'not' needs a condition");
	parse_bad("c: {not: [a]}\n", 10, "'not' must be a mapping, not a list");
	parse_bad("c: {all: [{key: k, operator: exists}], key: x}\n", 40,
		  "'all' stands alone: put other checks inside it");
	/* wherever 'any' is written, the error is at the first key beside it */
	parse_bad("c: {key: x, operator: exists, any: [{key: k, operator: exists}]}\n", 5,
		  "'any' stands alone: put other checks inside it");
	/* an error deep inside fails the whole condition, reported where it is */
	cr_assert_null(parse("c:\n  any:\n    - not:\n        all:\n          - {key: k}\n"));
	unit_assert_ndiags(&diags, 1);
	unit_assert_diag(&diags, "c.yaml", 5, 13, "condition needs an 'operator'");
}

Test(condition, describe_nothing_for_null)
{
	struct al_strbuf sb = AL_STRBUF_INIT;

	al_condition_describe(NULL, &sb);
	cr_assert_str_eq(sb.buf, "");
	al_condition_free(NULL);
}
