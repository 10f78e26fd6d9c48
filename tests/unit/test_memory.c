#include "ailoop/store/memory.h"
#include "unit.h"

#include <fcntl.h>
#include <sys/wait.h>

static void setup(void)
{
	setenv("AILOOP_FSYNC", "0", 1);
	unit_enter_tmpdir();
}

static void teardown(void)
{
	unit_leave_tmpdir();
}

TestSuite(memory, .init = setup, .fini = teardown);

#if defined(__SANITIZE_ADDRESS__)
#define SLOWDOWN 5 /* AddressSanitizer's checks on every access */
#else
#define SLOWDOWN 1
#endif

static struct al_memory *open_here(void)
{
	struct al_memory *m;

	cr_assert_eq(al_memory_open(&m, "."), 0, "%s", al_errmsg());
	return m;
}

static void append_raw(const char *text)
{
	int fd = open(AL_MEMORY_FILE, O_WRONLY | O_APPEND | O_CREAT, 0644);

	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

Test(memory, set_get_and_overwrite)
{
	struct al_memory *m = open_here();

	cr_assert_null(al_memory_get(m, "plan"));
	cr_assert_eq(al_memory_set(m, "plan", "fix the parser", false, "planner", NULL), 0);
	cr_assert_str_eq(al_memory_get(m, "plan"), "fix the parser");
	cr_assert_eq(al_memory_set(m, "plan", "then the lexer", false, NULL, NULL), 0);
	cr_assert_str_eq(al_memory_get(m, "plan"), "then the lexer");
	cr_assert_eq(al_memory_count(m), 1);
	al_memory_free(m);

	/* a new handle reads the file: the last write wins there too */
	m = open_here();
	cr_assert_str_eq(al_memory_get(m, "plan"), "then the lexer");
	al_memory_free(m);
}

Test(memory, entries_carry_the_seed_fields)
{
	struct al_memory *m = open_here();
	struct al_strbuf sb = AL_STRBUF_INIT;
	json_t *o;

	cr_assert_eq(al_memory_set(m, "k", "v", false, "tester", "fact"), 0);
	cr_assert_eq(al_strbuf_read_file(&sb, AL_MEMORY_FILE, 0), 0);
	cr_assert(al_ends_with(sb.buf, "}\n"));
	o = json_loads(sb.buf, 0, NULL);
	cr_assert_not_null(o);
	cr_assert_str_eq(json_string_value(json_object_get(o, "agent")), "tester");
	cr_assert_str_eq(json_string_value(json_object_get(o, "knowledge_type")), "fact");
	cr_assert_str_eq(json_string_value(json_object_get(o, "key")), "k");
	cr_assert_str_eq(json_string_value(json_object_get(o, "value")), "v");
	cr_assert_str_eq(json_string_value(json_object_get(o, "confidence")), "verified");
	cr_assert(al_ends_with(json_string_value(json_object_get(o, "timestamp")), "Z"));
	json_decref(o);
	al_strbuf_release(&sb);
	al_memory_free(m);
}

Test(memory, json_values)
{
	struct al_memory *m = open_here();
	json_t *o, *v = json_pack("{s:i, s:[b, n]}", "a", 1, "b", 1);

	cr_assert_eq(al_memory_set(m, "n", "42", true, NULL, NULL), 0);
	cr_assert_eq(al_memory_set(m, "t", "true", true, NULL, NULL), 0);
	cr_assert_eq(al_memory_set(m, "s", "\"quoted\"", true, NULL, NULL), 0);
	cr_assert_eq(al_memory_set(m, "r", "0.1", true, NULL, NULL), 0);
	cr_assert_eq(al_memory_set_json(m, "o", v, NULL, NULL), 0);
	json_decref(v);
	cr_assert_eq(al_memory_set(m, "text", "42", false, NULL, NULL), 0);
	cr_assert_eq(al_memory_set(m, "bad", "{nope", true, NULL, NULL), AL_EINVALID);
	cr_assert(strstr(al_errmsg(), "the value of 'bad' is not JSON"), "%s", al_errmsg());
	cr_assert_null(al_memory_get(m, "bad"));

	cr_assert_str_eq(al_memory_get(m, "n"), "42");
	cr_assert_str_eq(al_memory_get(m, "t"), "true");
	cr_assert_str_eq(al_memory_get(m, "s"), "quoted");
	cr_assert_str_eq(al_memory_get(m, "r"), "0.1");
	cr_assert_str_eq(al_memory_get(m, "o"), "{\"a\":1,\"b\":[true,null]}");
	al_memory_free(m);

	/* read back from the file by another handle, types kept */
	m = open_here();
	o = al_memory_object(m);
	cr_assert(json_is_integer(json_object_get(o, "n")));
	cr_assert(json_is_string(json_object_get(o, "text")));
	cr_assert(json_is_true(json_object_get(o, "t")));
	cr_assert(json_is_object(json_object_get(o, "o")));
	cr_assert_str_eq(al_memory_get(m, "o"), "{\"a\":1,\"b\":[true,null]}");
	json_decref(o);
	al_memory_free(m);
}

Test(memory, bad_keys_are_refused)
{
	struct al_memory *m = open_here();
	char long_key[AL_MEMORY_KEY_MAX + 2];

	cr_assert_eq(al_memory_set(m, "", "v", false, NULL, NULL), AL_EINVALID);
	cr_assert_str_eq(al_errmsg(), "a memory key cannot be empty");
	memset(long_key, 'k', sizeof(long_key) - 1);
	long_key[sizeof(long_key) - 1] = '\0';
	cr_assert_eq(al_memory_set(m, long_key, "v", false, NULL, NULL), AL_EINVALID);
	cr_assert(strstr(al_errmsg(), "is too long (257 bytes, at most 256)"), "%s", al_errmsg());
	long_key[AL_MEMORY_KEY_MAX] = '\0';
	cr_assert_eq(al_memory_set(m, long_key, "v", false, NULL, NULL), 0, "256 bytes are fine");
	cr_assert_eq(al_memory_set(m, "a\nb", "v", false, NULL, NULL), AL_EINVALID);
	cr_assert(strstr(al_errmsg(), "'a?b' has a control character (byte 2)"), "%s", al_errmsg());
	cr_assert_eq(al_memory_set(m, "x\xc2\x85", "v", false, NULL, NULL), AL_EINVALID,
		     "C1 control");
	cr_assert_eq(al_memory_set(m, "bad\xff", "v", false, NULL, NULL), AL_EINVALID);
	cr_assert(strstr(al_errmsg(), "is not valid UTF-8"), "%s", al_errmsg());
	cr_assert_eq(al_memory_set(m, "ok", "bad\xff", false, NULL, NULL), AL_EINVALID);
	cr_assert(strstr(al_errmsg(), "the value of 'ok' is not valid UTF-8"), "%s", al_errmsg());
	cr_assert_eq(al_memory_set(m, "clé.ü", "v", false, NULL, NULL), 0, "UTF-8 keys");
	cr_assert_eq(al_memory_count(m), 2);
	al_memory_free(m);
}

Test(memory, too_long_an_entry_is_refused)
{
	struct al_memory *m = open_here();
	size_t n = AL_MEMORY_ENTRY_MAX + 1;
	char *big = al_malloc(n + 1);

	memset(big, 'x', n);
	big[n] = '\0';
	cr_assert_eq(al_memory_set(m, "big", big, false, NULL, NULL), AL_EINVALID);
	cr_assert(strstr(al_errmsg(), "the value of memory key 'big' is too long"), "%s",
		  al_errmsg());
	cr_assert_null(al_memory_get(m, "big"));
	free(big);
	al_memory_free(m);
}

Test(memory, partial_last_line_waits_for_its_end)
{
	struct al_memory *m;

	append_raw("{\"key\":\"a\",\"value\":1}\n{\"key\":\"b\",\"val");
	m = open_here();
	cr_assert_str_eq(al_memory_get(m, "a"), "1");
	cr_assert_null(al_memory_get(m, "b"));
	append_raw("ue\":2}\n");
	cr_assert_str_eq(al_memory_get(m, "b"), "2", "the line read once whole");
	al_memory_free(m);
}

Test(memory, damaged_lines_are_skipped)
{
	struct al_memory *m;

	append_raw("{\"key\":\"a\",\"value\":1}\n"
		   "not json at all\n"
		   "{\"key\":\"a\",\"va\n"          /* a writer killed mid-line, then ended */
		   "[1,2]\n"                         /* not an object */
		   "{\"key\":42,\"value\":1}\n"      /* not a string key */
		   "{\"key\":\"\",\"value\":1}\n"    /* an empty key */
		   "{\"key\":\"nv\"}\n"              /* no value */
		   "\n"
		   "{\"key\":\"b\",\"value\":\"x\"}\n");
	m = open_here();
	cr_assert_str_eq(al_memory_get(m, "a"), "1");
	cr_assert_str_eq(al_memory_get(m, "b"), "x");
	cr_assert_null(al_memory_get(m, "nv"));
	cr_assert_eq(al_memory_count(m), 2);
	al_memory_free(m);
}

Test(memory, a_writer_ends_a_line_a_killed_writer_left)
{
	struct al_memory *m;
	struct al_strbuf sb = AL_STRBUF_INIT;

	append_raw("{\"key\":\"a\",\"value\":1}\n{\"key\":\"lost\",\"value\":\"half");
	m = open_here();
	cr_assert_eq(al_memory_set(m, "b", "2", true, NULL, NULL), 0);
	cr_assert_str_eq(al_memory_get(m, "b"), "2");
	cr_assert_null(al_memory_get(m, "lost"));
	cr_assert_eq(al_strbuf_read_file(&sb, AL_MEMORY_FILE, 0), 0);
	cr_assert(strstr(sb.buf, "\"half\n{\"timestamp\""), "%s", sb.buf);
	al_memory_free(m);

	m = open_here(); /* a fresh reader agrees */
	cr_assert_str_eq(al_memory_get(m, "b"), "2");
	cr_assert_str_eq(al_memory_get(m, "a"), "1");
	cr_assert_eq(al_memory_count(m), 2);
	al_memory_free(m);
	al_strbuf_release(&sb);
}

Test(memory, second_handle_sees_writes_and_version_changes)
{
	struct al_memory *w = open_here(), *r = open_here();
	uint64_t v0 = al_memory_version(r), v1, v2;

	cr_assert_eq(al_memory_version(w), v0);
	cr_assert_eq(al_memory_set(w, "k", "one", false, NULL, NULL), 0);
	cr_assert_str_eq(al_memory_get(r, "k"), "one");
	v1 = al_memory_version(r);
	cr_assert_neq(v1, v0);
	cr_assert_eq(al_memory_version(r), v1, "no change, same version");
	cr_assert_eq(al_memory_version(w), v1, "every reader agrees on the version");
	cr_assert_eq(al_memory_set(w, "k", "two", false, NULL, NULL), 0);
	v2 = al_memory_version(r);
	cr_assert_neq(v2, v1);
	cr_assert_str_eq(al_memory_get(r, "k"), "two");
	/* and the other way round */
	cr_assert_eq(al_memory_set(r, "j", "from r", false, NULL, NULL), 0);
	cr_assert_str_eq(al_memory_get(w, "j"), "from r");
	cr_assert_neq(al_memory_version(w), v2);
	al_memory_free(w);
	al_memory_free(r);
}

static bool not_zeta(const char *key, void *data)
{
	(void)data;
	return strcmp(key, "zeta") != 0;
}

static const struct al_memory_view shell = { NULL, NULL, true };
static const struct al_memory_view no_shell = { not_zeta, NULL, false };

static void collect(const char *key, const char *value, void *data)
{
	al_strbuf_addf(data, "%s=%s;", key, value);
}

Test(memory, each_and_section_in_key_order)
{
	struct al_memory *m = open_here();
	struct al_strbuf sb = AL_STRBUF_INIT;
	char *big = al_malloc(1001);

	al_memory_section(m, &shell, &sb);
	cr_assert_str_eq(sb.buf, "", "no heading over nothing");
	al_strbuf_reset(&sb);
	cr_assert_eq(al_memory_set(m, "zeta", "last", false, NULL, NULL), 0);
	cr_assert_eq(al_memory_set(m, "alpha", "two\nlines", false, NULL, NULL), 0);
	cr_assert_eq(al_memory_set(m, "mid", "[1,2]", true, NULL, NULL), 0);
	al_memory_each(m, collect, &sb);
	cr_assert_str_eq(sb.buf, "alpha=two\nlines;mid=[1,2];zeta=last;");
	al_strbuf_reset(&sb);
	cr_assert_eq(al_memory_set(m, "gone", "null", true, NULL, NULL), 0);
	al_memory_section(m, &shell, &sb);
	cr_assert_str_eq(sb.buf, "## Working memory\n\nWhat this run's agents and sensors "
				 "recorded (key: value):\n\n"
				 "- alpha: two\\nlines\n- mid: [1,2]\n- zeta: last\n"
				 "(`ailoop memory get KEY` prints a value in full)\n");
	al_strbuf_reset(&sb);
	al_memory_section(m, &no_shell, &sb);
	cr_assert_null(strstr(sb.buf, "ailoop memory"), "no command to an agent without a shell");
	cr_assert_null(strstr(sb.buf, "- zeta"), "a key the view leaves out");
	cr_assert(strstr(sb.buf, "- alpha: "), "%s", sb.buf);
	memset(big, 'b', 1000);
	big[1000] = '\0';
	cr_assert_eq(al_memory_set(m, "big", big, false, NULL, NULL), 0);
	al_strbuf_reset(&sb);
	al_memory_section(m, &shell, &sb);
	cr_assert(strstr(sb.buf, "- big: bbbb"), "%s", sb.buf);
	cr_assert(strstr(sb.buf, "b… (1000 bytes)\n"), "%s", sb.buf);
	cr_assert_lt(sb.len, 600, "a long value is cut");
	free(big);
	al_strbuf_release(&sb);
	al_memory_free(m);
}

Test(memory, section_of_many_entries_is_bounded)
{
	struct al_memory *m = open_here();
	struct al_strbuf sb = AL_STRBUF_INIT;
	char key[32];

	for (int i = 0; i < 500; i++) {
		snprintf(key, sizeof(key), "k%03d", i);
		cr_assert_eq(al_memory_set(m, key, "v", false, NULL, NULL), 0);
	}
	al_memory_section(m, &shell, &sb);
	cr_assert(strstr(sb.buf, "- k000: v\n"));
	cr_assert_null(strstr(sb.buf, "- k499"));
	cr_assert(strstr(sb.buf, "(200 of 500 entries shown; `ailoop memory list`"), "%s", sb.buf);
	al_strbuf_release(&sb);
	al_memory_free(m);
}

Test(memory, a_deleted_file_is_made_again_by_the_next_write)
{
	struct al_memory *m = open_here(), *fresh;

	cr_assert_eq(al_memory_set(m, "a", "1", false, NULL, NULL), 0);
	cr_assert_eq(unlink(AL_MEMORY_FILE), 0);
	cr_assert_eq(al_memory_set(m, "b", "2", false, NULL, NULL), 0);
	cr_assert_null(al_memory_get(m, "a"), "what was deleted is forgotten");
	cr_assert_str_eq(al_memory_get(m, "b"), "2");
	fresh = open_here();
	cr_assert_null(al_memory_get(fresh, "a"));
	cr_assert_str_eq(al_memory_get(fresh, "b"), "2", "written to the file at the path");
	al_memory_free(fresh);
	al_memory_free(m);
}

Test(memory, missing_run_directory)
{
	struct al_memory *m = (struct al_memory *)1;

	cr_assert_eq(al_memory_open(&m, "no/such/run"), AL_ENOTFOUND);
	cr_assert_null(m);
	cr_assert(strstr(al_errmsg(), "cannot open the working memory 'no/such/run/memory.jsonl'"),
		  "%s", al_errmsg());
	al_memory_free(NULL);
}

Test(memory, concurrent_writers_lose_nothing)
{
	enum { WRITERS = 8, KEYS = 1000 };
	struct al_memory *m;
	pid_t pids[WRITERS];
	char key[32], value[32];

	for (int w = 0; w < WRITERS; w++) {
		pids[w] = fork();
		cr_assert_geq(pids[w], 0);
		if (pids[w] == 0) {
			struct al_memory *mine;
			int bad = 0;

			if (al_memory_open(&mine, ".") < 0)
				_exit(2);
			for (int i = 0; i < KEYS; i++) {
				snprintf(key, sizeof(key), "w%d.k%d", w, i);
				snprintf(value, sizeof(value), "%d", w * KEYS + i);
				bad |= al_memory_set(mine, key, value, i % 2, NULL, NULL) < 0;
				if (i % 100 == 0) /* readers and writers at once */
					bad |= !al_memory_get(mine, key);
			}
			al_memory_free(mine);
			_exit(bad);
		}
	}
	for (int w = 0; w < WRITERS; w++) {
		int status;

		cr_assert_eq(waitpid(pids[w], &status, 0), pids[w]);
		cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "writer %d failed", w);
	}
	m = open_here();
	cr_assert_eq(al_memory_count(m), WRITERS * KEYS);
	for (int w = 0; w < WRITERS; w++)
		for (int i = 0; i < KEYS; i++) {
			const char *got;

			snprintf(key, sizeof(key), "w%d.k%d", w, i);
			snprintf(value, sizeof(value), "%d", w * KEYS + i);
			got = al_memory_get(m, key);
			cr_assert(got && !strcmp(got, value), "%s: %s, expected %s", key,
				  got ? got : "(none)", value);
		}
	al_memory_free(m);
}

Test(memory, forked_children_share_a_handle_safely)
{
	enum { CHILDREN = 4, KEYS = 300 };
	struct al_memory *m = open_here();
	pid_t pids[CHILDREN];
	char key[32];

	cr_assert_eq(al_memory_set(m, "before", "fork", false, NULL, NULL), 0);
	for (int c = 0; c < CHILDREN; c++) {
		pids[c] = fork();
		cr_assert_geq(pids[c], 0);
		if (pids[c] == 0) {
			int bad = 0;

			for (int i = 0; i < KEYS; i++) {
				snprintf(key, sizeof(key), "c%d.%d", c, i);
				bad |= al_memory_set(m, key, "x", false, NULL, NULL) < 0;
			}
			_exit(bad || strcmp(al_memory_get(m, "before"), "fork"));
		}
	}
	for (int i = 0; i < KEYS; i++) { /* the parent writes meanwhile */
		snprintf(key, sizeof(key), "p.%d", i);
		cr_assert_eq(al_memory_set(m, key, "y", false, NULL, NULL), 0);
	}
	for (int c = 0; c < CHILDREN; c++) {
		int status;

		cr_assert_eq(waitpid(pids[c], &status, 0), pids[c]);
		cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child %d failed", c);
	}
	cr_assert_eq(al_memory_count(m), 1 + (CHILDREN + 1) * KEYS);
	cr_assert_str_eq(al_memory_get(m, "c3.299"), "x");
	al_memory_free(m);
}

