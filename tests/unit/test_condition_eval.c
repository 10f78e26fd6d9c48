#include "ailoop/model/check.h"
#include "ailoop/exec/condition_eval.h"
#include "ailoop/model/doc.h"
#include "ailoop/base/fsutil.h"
#include "ailoop/store/memory.h"
#include "ailoop/base/signals.h"
#include "ailoop/base/strbuf.h"

#include "unit.h"

#include <criterion/criterion.h>
#include <signal.h>
#include <string.h>
#include <time.h>

/* Working memory is read through the lookup callbacks of al_cond_env, over a small table here. */

#define NKEYS 32
static struct {
	const char *keys[NKEYS], *values[NKEYS];
	size_t n;
	uint64_t version;
	int lookups;
} mem;

static void set(const char *key, const char *value)
{
	for (size_t i = 0; i < mem.n; i++) {
		if (!strcmp(mem.keys[i], key)) {
			mem.values[i] = value;
			mem.version++;
			return;
		}
	}
	cr_assert_lt(mem.n, NKEYS);
	mem.keys[mem.n] = key;
	mem.values[mem.n++] = value;
	mem.version++;
}

static const char *table_get(void *data, const char *key)
{
	(void)data;
	mem.lookups++;
	for (size_t i = 0; i < mem.n; i++)
		if (!strcmp(mem.keys[i], key))
			return mem.values[i];
	return NULL;
}

static uint64_t table_version(void *data)
{
	(void)data;
	return mem.version;
}

/* Conditions read from "c: TEXT"; documents and conditions live until the test ends. */
static struct al_diags diags = AL_DIAGS_INIT;
static struct al_doc *docs[64];
static struct al_condition *conds[64];
static size_t ndocs;

static struct al_condition *cond(const char *text)
{
	struct al_strbuf sb = AL_STRBUF_INIT;
	struct al_check check = { &diags, NULL, 0 };
	struct al_condition *c;

	cr_assert_lt(ndocs, AL_ARRAY_SIZE(docs));
	al_strbuf_addf(&sb, "c: %s\n", text);
	cr_assert_eq(al_doc_parse(&docs[ndocs], &diags, "c.yaml", sb.buf, sb.len, 0), 0, "%s",
		     unit_diags_text(&diags));
	check.doc = docs[ndocs];
	c = al_condition_parse(&check, al_val_get(docs[ndocs]->root, "c"));
	cr_assert_not_null(c, "%s:%s", text, unit_diags_text(&diags));
	conds[ndocs++] = c;
	al_strbuf_release(&sb);
	return c;
}

static struct al_cond_env env;

static void setup(void)
{
	memset(&mem, 0, sizeof(mem));
	env = (struct al_cond_env){ .lookup = table_get, .version = table_version };
	unit_enter_tmpdir();
	unit_hang_guard(30);
}

static void teardown(void)
{
	for (size_t i = 0; i < ndocs; i++) {
		al_condition_free(conds[i]);
		al_doc_free(docs[i]);
	}
	ndocs = 0;
	al_diags_release(&diags);
	al_cond_cache_free(env.cache);
	env.cache = NULL;
	unit_leave_tmpdir();
}

TestSuite(condition_eval, .init = setup, .fini = teardown);

/* The result of `text`, which must evaluate without error. */
static bool eval(const char *text)
{
	bool result = true;

	cr_assert_eq(al_condition_eval(cond(text), &env, &result), 0, "%s: %s", text,
		     al_errmsg());
	return result;
}

static const char *file_text(const char *path)
{
	static struct al_strbuf sb = AL_STRBUF_INIT;

	al_strbuf_reset(&sb);
	cr_assert_eq(al_strbuf_read_file(&sb, path, 1 << 20), 0, "cannot read %s", path);
	return sb.buf;
}

#define assert_true(text) cr_assert(eval(text), "%s is false", text)
#define assert_false(text) cr_assert_not(eval(text), "%s is true", text)

Test(condition_eval, equals_and_not_equals_numeric_and_bytewise)
{
	set("n", "10");
	set("s", "passing");
	set("j", "{\"a\":1}");
	assert_true("{key: n, operator: equals, value: 10}");
	assert_true("{key: n, operator: equals, value: '10.0'}"); /* numbers as numbers */
	assert_true("{key: n, operator: equals, value: '1e1'}");
	assert_false("{key: n, operator: equals, value: ' 10'}"); /* not all a number */
	assert_false("{key: n, operator: equals, value: 11}");
	assert_true("{key: s, operator: equals, value: passing}");
	assert_false("{key: s, operator: equals, value: Passing}");
	assert_true("{key: j, operator: equals, value: '{\"a\":1}'}");
	assert_true("{key: n, operator: not_equals, value: 11}");
	assert_false("{key: n, operator: not_equals, value: '10.00'}");
	assert_true("{key: s, operator: not_equals, value: failing}");
	assert_false("{key: s, operator: not_equals, value: passing}");
}

Test(condition_eval, contains_and_not_contains)
{
	set("log", "3 passed, 0 failed");
	assert_true("{key: log, operator: contains, value: '0 failed'}");
	assert_false("{key: log, operator: contains, value: '1 failed'}");
	assert_true("{key: log, operator: not_contains, value: error}");
	assert_false("{key: log, operator: not_contains, value: passed}");
}

Test(condition_eval, orderings_compare_numbers_as_numbers_and_text_by_bytes)
{
	set("cov", "85.5");
	set("ver", "b");
	set("mixed", "10");
	assert_true("{key: cov, operator: greater_than, value: 9}"); /* "85.5" < "9" as text */
	assert_false("{key: cov, operator: greater_than, value: 85.5}");
	assert_true("{key: cov, operator: greater_or_equal, value: 85.5}");
	assert_false("{key: cov, operator: greater_or_equal, value: 100}");
	assert_true("{key: cov, operator: less_than, value: 100}");
	assert_false("{key: cov, operator: less_than, value: 9}");
	assert_true("{key: cov, operator: less_or_equal, value: '85.50'}");
	assert_false("{key: cov, operator: less_or_equal, value: -1}");
	assert_true("{key: ver, operator: greater_than, value: a}");
	assert_true("{key: ver, operator: less_than, value: ba}");
	assert_true("{key: ver, operator: greater_or_equal, value: b}");
	assert_true("{key: ver, operator: less_or_equal, value: b}");
	assert_false("{key: ver, operator: less_than, value: B}");
	/* one side not a number: bytes, "10" < "9x" */
	assert_true("{key: mixed, operator: less_than, value: 9x}");
	assert_false("{key: mixed, operator: less_than, value: 9}");
	set("inf", "inf");
	assert_true("{key: inf, operator: greater_than, value: 1000}"); /* "inf" is text */
	assert_false("{key: inf, operator: greater_than, value: j}");
}

Test(condition_eval, matches_regex)
{
	set("out", "coverage: 91%\nall good");
	assert_true("{key: out, operator: matches_regex, value: 'coverage: 9\\d%'}");
	assert_true("{key: out, operator: matches_regex, value: '(?m)^all good$'}");
	assert_false("{key: out, operator: matches_regex, value: '^all'}");
}

Test(condition_eval, a_runaway_pattern_hits_the_match_limit_and_is_false)
{
	char subject[80];

	/* (a|aa)* splits 60 a's in Fibonacci(60) ways before failing at the b */
	memset(subject, 'a', 60);
	memcpy(subject + 60, "b", 2);
	set("short", "aaaa");
	set("long", subject);
	assert_true("{key: short, operator: matches_regex, value: '^(a|aa)*$'}");
	assert_false("{key: long, operator: matches_regex, value: '^(a|aa)*$'}");
}

Test(condition_eval, exists_and_not_exists)
{
	set("there", "");
	assert_true("{key: there, operator: exists}");
	assert_false("{key: there, operator: not_exists}");
	assert_false("{key: absent, operator: exists}");
	assert_true("{key: absent, operator: not_exists}");
}

Test(condition_eval, a_missing_key_is_false_for_every_operator_but_not_exists)
{
	for (size_t i = 0; i < AL_ARRAY_SIZE(al_op_names); i++) {
		char text[200];

		snprintf(text, sizeof(text), "{key: absent, operator: %s, value: '1'}",
			 al_op_names[i]);
		cr_assert_eq(eval(text), i == AL_OP_NOT_EXISTS, "%s", text);
	}
}

Test(condition_eval, no_operator_means_equals_with_a_value_else_exists)
{
	/* the loader insists on an operator; a condition built in code need not */
	struct al_condition c = { .kind = AL_COND_CHECK, .type = AL_COND_OBSERVATION,
				  .key = "k" };
	bool result = false;

	set("k", "v");
	cr_assert_eq(al_condition_eval(&c, &env, &result), 0);
	cr_assert(result);
	c.value = "v";
	cr_assert_eq(al_condition_eval(&c, &env, &result), 0);
	cr_assert(result);
	c.value = "w";
	cr_assert_eq(al_condition_eval(&c, &env, &result), 0);
	cr_assert_not(result);
	c.key = "absent";
	c.value = NULL;
	cr_assert_eq(al_condition_eval(&c, &env, &result), 0);
	cr_assert_not(result);
}

Test(condition_eval, test_result_reads_what_sensors_write)
{
	set("sensors.unit.status", "pass");
	set("sensors.unit.failed", "0");
	set("lint.status", "fail"); /* an agent's own key, no sensor of that name */
	assert_true("{type: test_result, key: unit, operator: equals, value: pass}");
	assert_true("{type: test_result, key: unit.failed, operator: less_than, value: 1}");
	assert_true("{type: test_result, key: lint.status, operator: equals, value: failing}");
	assert_false("{type: test_result, key: unit.coverage, operator: exists}");
	assert_true("{type: test_result, key: other, operator: not_exists}");
	/* observation_check reads the key as it is */
	assert_false("{key: unit, operator: exists}");
}

Test(condition_eval, sensor_statuses_equal_their_seed_spellings)
{
	set("sensors.unit.status", "pass");
	set("sensors.e2e.status", "fail");
	set("sensors.doc.status", "pending");
	set("sensors.unit.summary", "pass");
	for (size_t i = 0; i < 3; i++) {
		static const char *const pass[] = { "pass", "passing", "passed" };
		static const char *const fail[] = { "fail", "failing", "failed" };
		char text[200];

		snprintf(text, sizeof(text), "{type: test_result, key: unit, operator: equals, value: %s}",
			 pass[i]);
		cr_assert(eval(text), "%s", text);
		snprintf(text, sizeof(text),
			 "{type: test_result, key: e2e.status, operator: equals, value: %s}", fail[i]);
		cr_assert(eval(text), "%s", text);
		snprintf(text, sizeof(text),
			 "{type: test_result, key: e2e, operator: not_equals, value: %s}", fail[i]);
		cr_assert_not(eval(text), "%s", text);
	}
	assert_false("{type: test_result, key: unit, operator: equals, value: failing}");
	assert_true("{type: test_result, key: doc, operator: not_equals, value: passing}");
	assert_true("{type: test_result, key: doc, operator: equals, value: pending}");
	/* only statuses: another field is compared as it is */
	assert_false("{type: test_result, key: unit.summary, operator: equals, value: passing}");
	/* and only by equals / not_equals */
	assert_false("{type: test_result, key: unit, operator: contains, value: passing}");
}

Test(condition_eval, file_exists_with_globs)
{
	unit_write("docs/a.md", "a");
	unit_write("src/x/y.c", "y");
	assert_true("{type: file_exists, path: 'docs/*.md'}");
	assert_true("{type: file_exists, path: 'docs/a.md'}");
	assert_true("{type: file_exists, path: 'src/*/y.[ch]'}");
	assert_true("{type: file_exists, path: 'docs'}");
	assert_false("{type: file_exists, path: 'docs/*.txt'}");
	assert_false("{type: file_exists, path: 'nothing'}");
	assert_false("{type: file_exists, path: 'docs/*.md', operator: not_exists}");
	assert_true("{type: file_exists, path: 'src/*.c', operator: not_exists}");
}

Test(condition_eval, a_command_is_true_when_it_exits_0)
{
	assert_true("{type: command, command: [true]}");
	assert_false("{type: command, command: [false]}");
	assert_true("{type: command, command: [sh, -c, 'exit 0']}");
	assert_false("{type: command, expression: 'exit 3'}");
	unit_write("out.txt", "done\n");
	assert_true("{type: custom, expression: 'grep -q done out.txt'}");
	assert_false("{type: command, command: [grep, -q, missing, out.txt]}");
}

Test(condition_eval, a_command_that_cannot_start_is_an_error)
{
	bool result = true;
	struct al_condition *c = cond("{type: command, command: [no-such-program-xyz, a]}");

	cr_assert_eq(al_condition_eval(c, &env, &result), AL_ERROR);
	cr_assert_str_eq(al_errmsg(), "condition at c.yaml:1:4: cannot run 'no-such-program-xyz': "
				      "No such file or directory");
	cr_assert_not(result);
	/* a shell's 127 is the script's own status: false */
	assert_false("{type: command, expression: 'no-such-program-xyz'}");
}

Test(condition_eval, commands_get_run_data_through_the_environment_only)
{
	const char *envp[] = { "AILOOP_NODE_PATH=root/fix", "AILOOP_TASK=$(touch pwned) {task}",
			       NULL };

	env.envp = envp;
	assert_true("{type: command, expression: 'test \"$AILOOP_NODE_PATH\" = root/fix'}");
	assert_true("{type: command, expression: 'test \"$AILOOP_TASK\" = \"\\$(touch pwned) {task}\"'}");
	assert_true("{type: command, command: [sh, -c, 'test \"$AILOOP_TASK\" != x']}");
	/* placeholders in the script stay as they are written */
	assert_true("{type: command, expression: 'test \"{task}\" = \"{\"task\"}\"'}");
	cr_assert_not(al_file_exists("pwned"));
}

Test(condition_eval, a_command_stopped_at_the_deadline_is_a_timeout)
{
	bool result = true;
	struct al_condition *c = cond("{type: command, expression: 'sleep 10'}");

	env.deadline_ms = al_now_ms() + 200;
	cr_assert_eq(al_condition_eval(c, &env, &result), AL_ETIMEOUT);
	cr_assert(strstr(al_errmsg(), "stopped at the deadline"), "%s", al_errmsg());
	cr_assert_not(result);
}

Test(condition_eval, a_running_command_is_in_the_record_of_live_children)
{
	const char *rec;

	/*
	 * so that a resume after ailoop was killed stops it, as it stops
	 * agents; its pid is written just after the spawn, so the command
	 * may start first: it looks for itself for a while. The agent key is
	 * there from before it starts, and in its environment.
	 */
	env.record = "agents";
	assert_true("{type: command, expression: 'grep -qx \"key ${AILOOP_AGENT_KEY:?}\" agents && "
		    "i=0; until grep -q \"^$$ \" agents || "
		    "[ $i -ge 200 ]; do sleep 0.01; i=$((i + 1)); done; grep -q \"^$$ \" agents'}");
	rec = file_text("agents");
	cr_assert(!strncmp(rec, "key ", 4) && strchr(rec, '\n') == rec + strlen(rec) - 1,
		  "once it is reaped, the key alone: %s", rec);
}

Test(condition_eval, an_interrupt_stops_the_command)
{
	bool result = true;
	struct al_condition *c = cond("{type: command, expression: 'touch started'}");

	al_signals_install();
	raise(SIGINT);
	cr_assert_eq(al_condition_eval(c, &env, &result), AL_EINTR);
	cr_assert_not(al_file_exists("started"));
}

Test(condition_eval, all_any_not_nest)
{
	set("a", "1");
	set("b", "2");
#define A1 "{key: a, operator: equals, value: 1}"
#define A9 "{key: a, operator: equals, value: 9}"
#define B2 "{key: b, operator: equals, value: 2}"
#define B9 "{key: b, operator: equals, value: 9}"
#define C "{key: c, operator: exists}"
	assert_true("{all: [" A1 ", " B2 "]}");
	assert_false("{all: [" A1 ", " B9 "]}");
	assert_false("{all: [" A9 ", " B2 "]}");
	assert_true("{any: [" A9 ", " B2 "]}");
	assert_true("{any: [" A1 ", " B9 "]}");
	assert_false("{any: [" A9 ", " B9 "]}");
	assert_true("{not: " C "}");
	assert_false("{not: {not: " C "}}");
	assert_true("{all: [{any: [" C ", {not: " A9 "}]}, {not: {all: [" A1 ", " C "]}}]}");
	assert_false("{any: [{all: [" A1 ", " C "]}, {not: {any: [" B2 ", " C "]}}]}");
#undef A1
#undef A9
#undef B2
#undef B9
#undef C
}

Test(condition_eval, all_and_any_stop_at_the_first_deciding_check)
{
	set("a", "1");
	assert_true("{any: [{key: a, operator: exists},"
		    " {type: command, expression: 'touch ran-any'}]}");
	assert_false("{all: [{key: b, operator: exists},"
		     " {type: command, expression: 'touch ran-all'}]}");
	unit_write("here", "");
	assert_false("{not: {any: [{type: file_exists, path: 'h*'},"
		     " {type: command, command: [touch, ran-not]}]}}");
	cr_assert_not(al_file_exists("ran-any"));
	cr_assert_not(al_file_exists("ran-all"));
	cr_assert_not(al_file_exists("ran-not"));
	/* undecided: the second one runs */
	assert_true("{any: [{key: b, operator: exists}, {type: command, expression: 'touch ran'}]}");
	cr_assert(al_file_exists("ran"));
}

Test(condition_eval, an_error_inside_a_combination_is_returned)
{
	bool result = true;
	struct al_condition *c = cond("{any: [{key: b, operator: exists},"
				      " {not: {type: command, command: [no-such-program-xyz]}}]}");

	cr_assert_eq(al_condition_eval(c, &env, &result), AL_ERROR);
	cr_assert(strstr(al_errmsg(), "cannot run 'no-such-program-xyz'"), "%s", al_errmsg());
}

/* ---- the cache ---- */

/* A command that counts its runs in `runs` and is true. */
#define COUNTING "{type: command, expression: 'echo x >>runs', cache_ttl_seconds: %d}"

static int runs(void)
{
	struct al_strbuf sb = AL_STRBUF_INIT;
	int n = 0;

	if (al_strbuf_read_file(&sb, "runs", 1 << 20) == 0)
		for (size_t i = 0; i < sb.len; i++)
			n += sb.buf[i] == '\n';
	al_strbuf_release(&sb);
	return n;
}

static struct al_condition *counting(int ttl)
{
	char text[200];

	snprintf(text, sizeof(text), COUNTING, ttl);
	return cond(text);
}

static void eval_c(const struct al_condition *c)
{
	bool result = false;

	cr_assert_eq(al_condition_eval(c, &env, &result), 0, "%s", al_errmsg());
	cr_assert(result);
}

static void open_cache(void)
{
	al_cond_cache_free(env.cache);
	cr_assert_eq(al_cond_cache_open(&env.cache, "conditions.jsonl"), 0, "%s", al_errmsg());
	env.node_path = "root/check";
	env.tree = "tree-1";
}

Test(condition_eval, a_cached_result_is_used_within_its_ttl_on_the_same_tree_and_memory)
{
	struct al_condition *c = counting(300);

	open_cache();
	eval_c(c);
	eval_c(c);
	eval_c(c);
	cr_assert_eq(runs(), 1);
	/* the default TTL caches too */
	c = cond("{type: command, expression: 'echo y >>runs'}");
	eval_c(c);
	eval_c(c);
	cr_assert_eq(runs(), 2);
}

Test(condition_eval, a_cached_result_is_per_node)
{
	struct al_condition *c = counting(300);

	open_cache();
	eval_c(c);
	env.node_path = "root/other";
	eval_c(c);
	eval_c(c);
	cr_assert_eq(runs(), 2);
}

Test(condition_eval, a_changed_tree_or_memory_runs_the_command_again)
{
	struct al_condition *c = counting(300);

	open_cache();
	eval_c(c);
	env.tree = "tree-2";
	eval_c(c);
	cr_assert_eq(runs(), 2);
	eval_c(c);
	cr_assert_eq(runs(), 2);
	set("k", "v");
	eval_c(c);
	cr_assert_eq(runs(), 3);
	eval_c(c);
	cr_assert_eq(runs(), 3);
	/* back to the first tree: its entry was replaced */
	env.tree = "tree-1";
	eval_c(c);
	cr_assert_eq(runs(), 4);
}

Test(condition_eval, a_cached_result_expires_after_its_ttl)
{
	struct al_condition *c = counting(1);
	struct timespec pause = { 1, 100 * 1000 * 1000 };

	open_cache();
	eval_c(c);
	nanosleep(&pause, NULL);
	eval_c(c);
	cr_assert_eq(runs(), 2);
}

Test(condition_eval, ttl_0_or_no_cache_or_no_tree_caches_nothing)
{
	struct al_condition *c = counting(0);

	open_cache();
	eval_c(c);
	eval_c(c);
	cr_assert_eq(runs(), 2);
	cr_assert_not(al_file_exists("conditions.jsonl"));
	c = counting(300);
	env.tree = NULL;
	eval_c(c);
	eval_c(c);
	cr_assert_eq(runs(), 4);
	al_cond_cache_free(env.cache);
	env.cache = NULL;
	env.tree = "tree-1";
	eval_c(c);
	eval_c(c);
	cr_assert_eq(runs(), 6);
}

Test(condition_eval, a_failed_command_is_cached_but_an_error_is_not)
{
	bool result = true;
	struct al_condition *f = cond("{type: command, expression: 'echo x >>runs; exit 1'}");
	struct al_condition *e = cond("{type: command, command: [no-such-program-xyz]}");

	open_cache();
	cr_assert_eq(al_condition_eval(f, &env, &result), 0);
	cr_assert_not(result);
	cr_assert_eq(al_condition_eval(f, &env, &result), 0);
	cr_assert_not(result);
	cr_assert_eq(runs(), 1);
	cr_assert_eq(al_condition_eval(e, &env, &result), AL_ERROR);
	cr_assert_eq(al_condition_eval(e, &env, &result), AL_ERROR);
}

Test(condition_eval, the_cache_survives_reopening_from_its_file)
{
	struct al_condition *c = counting(300);
	struct al_condition *f = cond("{type: command, expression: 'echo x >>runs; exit 1'}");
	bool result = true;

	open_cache();
	eval_c(c);
	cr_assert_eq(al_condition_eval(f, &env, &result), 0);
	cr_assert_eq(runs(), 2);
	open_cache(); /* as a resumed run does */
	eval_c(c);
	cr_assert_eq(al_condition_eval(f, &env, &result), 0);
	cr_assert_not(result);
	cr_assert_eq(runs(), 2);
	/* and still keyed by tree */
	env.tree = "tree-2";
	eval_c(c);
	cr_assert_eq(runs(), 3);
}

Test(condition_eval, the_file_grows_by_one_line_per_new_result)
{
	struct al_condition *c = counting(300);
	struct al_strbuf sb = AL_STRBUF_INIT;
	json_t *j;

	open_cache();
	eval_c(c);
	eval_c(c);
	env.tree = "tree-2";
	eval_c(c);
	cr_assert_eq(al_strbuf_read_file(&sb, "conditions.jsonl", 1 << 20), 0);
	cr_assert_eq(sb.buf[sb.len - 1], '\n');
	j = json_loadb(sb.buf, strchr(sb.buf, '\n') - sb.buf, 0, NULL);
	cr_assert_not_null(j);
	cr_assert_str_eq(json_string_value(json_object_get(j, "node")), "root/check");
	cr_assert_str_eq(json_string_value(json_object_get(j, "condition")), "c.yaml:1:4");
	cr_assert_str_eq(json_string_value(json_object_get(j, "check")), "$ echo x >>runs");
	cr_assert_str_eq(json_string_value(json_object_get(j, "tree")), "tree-1");
	cr_assert(json_is_true(json_object_get(j, "result")));
	json_decref(j);
	{
		size_t lines = 0;

		for (size_t i = 0; i < sb.len; i++)
			lines += sb.buf[i] == '\n';
		cr_assert_eq(lines, 2);
	}
	al_strbuf_release(&sb);
}

Test(condition_eval, a_damaged_cache_line_is_ignored)
{
	struct al_condition *c = counting(300);
	struct al_strbuf sb = AL_STRBUF_INIT;
	char *first;

	open_cache();
	eval_c(c);
	cr_assert_eq(al_strbuf_read_file(&sb, "conditions.jsonl", 1 << 20), 0);
	first = al_strdup(sb.buf);
	/* garbage, a line of the wrong shape, then the good one cut short */
	al_strbuf_reset(&sb);
	al_strbuf_addf(&sb, "not json\n{\"node\": 1}\n\n%.*s", (int)strlen(first) - 10, first);
	unit_write("conditions.jsonl", sb.buf);
	open_cache();
	eval_c(c);
	cr_assert_eq(runs(), 2);
	/* the new line starts on a line of its own: read back, it is a hit */
	open_cache();
	eval_c(c);
	cr_assert_eq(runs(), 2);
	/* the whole good line again, after the damaged ones */
	unit_write("conditions.jsonl", first);
	open_cache();
	eval_c(c);
	cr_assert_eq(runs(), 2);
	free(first);
	al_strbuf_release(&sb);
}

Test(condition_eval, a_cache_from_an_edited_flow_is_not_used_for_another_check)
{
	struct al_condition *c = counting(300);

	open_cache();
	eval_c(c);
	/* same node and position, different text: a flow edited before resume */
	c = cond("{type: command, expression: 'echo y >>runs', cache_ttl_seconds: 300}");
	eval_c(c);
	cr_assert_eq(runs(), 2);
}

Test(condition_eval, file_exists_and_memory_checks_are_not_cached)
{
	struct al_condition *f = cond("{type: file_exists, path: 'new-*'}");
	struct al_condition *m = cond("{key: k, operator: exists}");
	bool result = true;

	open_cache();
	cr_assert_eq(al_condition_eval(f, &env, &result), 0);
	cr_assert_not(result);
	unit_write("new-file", "x"); /* say, a file git ignores: the tree is the same */
	cr_assert_eq(al_condition_eval(f, &env, &result), 0);
	cr_assert(result);
	cr_assert_eq(al_condition_eval(m, &env, &result), 0);
	cr_assert_not(result);
	cr_assert_not(al_file_exists("conditions.jsonl"));
}

Test(condition_eval, a_cache_file_that_is_not_a_regular_file_is_an_error)
{
	struct al_cond_cache *cache = (void *)1;

	cr_assert_eq(mkdir("conditions.jsonl", 0777), 0);
	cr_assert_eq(al_cond_cache_open(&cache, "conditions.jsonl"), AL_ERROR);
	cr_assert_null(cache);
	cr_assert_str_eq(al_errmsg(), "cannot read 'conditions.jsonl': not a regular file");
	/* a FIFO without a writer: refused at once, not waited on */
	cr_assert_eq(mkfifo("fifo.jsonl", 0666), 0);
	cache = (void *)1;
	cr_assert_eq(al_cond_cache_open(&cache, "fifo.jsonl"), AL_ERROR);
	cr_assert_null(cache);
	cr_assert_str_eq(al_errmsg(), "cannot read 'fifo.jsonl': not a regular file");
	al_cond_cache_free(NULL);
}

Test(condition_eval, a_cache_file_that_cannot_be_read_is_an_error)
{
	struct al_cond_cache *cache = (void *)1;

	unit_write("run", "a file, not a directory");
	cr_assert_eq(al_cond_cache_open(&cache, "run/conditions.jsonl"), AL_ERROR);
	cr_assert_null(cache);
	cr_assert_str_eq(al_errmsg(), "cannot read 'run/conditions.jsonl': Not a directory");
}

Test(condition_eval, a_link_in_the_place_of_the_cache_is_neither_read_nor_written_through)
{
	struct al_condition *c = counting(300);
	struct al_strbuf victim = AL_STRBUF_INIT;

	open_cache();
	eval_c(c);
	al_cond_cache_free(env.cache);
	env.cache = NULL;
	/* the victim holds a valid cache line: read through the link, it would be a hit */
	cr_assert_eq(rename("conditions.jsonl", "victim"), 0);
	cr_assert_eq(symlink("victim", "conditions.jsonl"), 0);
	cr_assert_eq(al_strbuf_read_file(&victim, "victim", 1 << 20), 0);
	open_cache();
	eval_c(c);
	cr_assert_eq(runs(), 2);
	eval_c(c); /* still cached in memory */
	cr_assert_eq(runs(), 2);
	cr_assert_str_eq(file_text("victim"), victim.buf);
	al_strbuf_release(&victim);
}

Test(condition_eval, test_result_reads_memory_once_or_twice)
{
	set("sensors.unit.status", "pass");
	mem.lookups = 0;
	assert_true("{type: test_result, key: unit, operator: equals, value: passing}");
	cr_assert_eq(mem.lookups, 1);
	mem.lookups = 0;
	/* absent under sensors.: the key itself */
	assert_false("{type: test_result, key: lint.errors, operator: exists}");
	cr_assert_eq(mem.lookups, 2);
}

Test(condition_eval, a_long_sensor_key_is_read_too)
{
	char key[600], text[800], name[700];

	memset(key, 'k', sizeof(key) - 1);
	key[sizeof(key) - 1] = '\0';
	snprintf(name, sizeof(name), "sensors.%s.status", key);
	set(name, "fail");
	snprintf(text, sizeof(text), "{type: test_result, key: %s, operator: equals, value: failing}",
		 key);
	assert_true(text);
}
