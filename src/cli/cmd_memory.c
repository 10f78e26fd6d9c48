#include "ailoop/cli/cli.h"
#include "ailoop/base/fsutil.h"
#include "ailoop/store/memory.h"
#include "ailoop/base/util.h"

#include <stdlib.h>
#include <string.h>

/*
 * A key or value on one line of `key<TAB>value`: a newline, tab or backslash
 * in it is written as C writes it, any other control character as \xNN, so
 * that each entry is one line and nothing reaches the terminal as a
 * command (an escape sequence an agent stored). --json gives values exact.
 */
static void print_escaped(const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '\n')
			fputs("\\n", stdout);
		else if (c == '\t')
			fputs("\\t", stdout);
		else if (c == '\\')
			fputs("\\\\", stdout);
		else if (c < 0x20 || c == 0x7f)
			printf("\\x%02x", c);
		else
			putchar(c);
	}
}

static void print_entry(const char *key, const char *value, void *data)
{
	(void)data;
	print_escaped(key); /* checked when set, but memory.jsonl is a file an agent can edit */
	putchar('\t');
	print_escaped(value);
	putchar('\n');
}

static int list(struct al_memory *m, bool json)
{
	json_t *o;
	char *text;

	if (!json) {
		al_memory_each(m, print_entry, NULL);
		return AL_EXIT_OK;
	}
	o = al_memory_object(m);
	text = json_dumps(o, JSON_INDENT(2) | JSON_SORT_KEYS | JSON_REAL_PRECISION(15));
	json_decref(o);
	if (!text)
		return al_cli_fail(AL_EXIT_SOFTWARE, "out of memory");
	printf("%s\n", text);
	free(text);
	return AL_EXIT_OK;
}

int cmd_memory(int argc, char **argv)
{
	static const struct option longs[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 0 },
		{ NULL, 0, NULL, 0 },
	};
	static const struct {
		const char *name;
		int operands; /* after the name */
		bool json;    /* takes --json */
	} subs[] = { { "get", 1, false }, { "set", 2, true }, { "list", 0, true } };
	const char *run_dir = getenv("AILOOP_RUN_DIR"), *sub, *agent = getenv("AILOOP_AGENT");
	struct al_memory *m = NULL;
	bool json = false;
	size_t k;
	int c, code = 0, rc;

	while ((c = al_cli_getopt(argc, argv, "", longs, &code)) != -1) {
		if (c == '?')
			return code;
		if (c == 'j')
			json = true;
	}
	if (optind >= argc) {
		al_cli_usage(stderr, al_command_find("memory"));
		return AL_EXIT_USAGE;
	}
	sub = argv[optind++];
	for (k = 0; k < AL_ARRAY_SIZE(subs) && strcmp(subs[k].name, sub); k++)
		;
	if (k == AL_ARRAY_SIZE(subs)) {
		al_cli_fail(AL_EXIT_USAGE, "unknown memory command '%s' (get, set or list)", sub);
		al_cli_usage(stderr, al_command_find("memory"));
		return AL_EXIT_USAGE;
	}
	if (json && !subs[k].json)
		return al_cli_fail(AL_EXIT_USAGE, "option '--json' does not apply to 'memory %s'",
				   sub);
	if ((code = al_cli_operands(argc, argv, subs[k].operands, subs[k].operands)))
		return code;
	if (!run_dir || !*run_dir)
		return al_cli_fail(AL_EXIT_USAGE, "ailoop memory works inside a run: "
				   "AILOOP_RUN_DIR is not set");
	if (k < 2 && al_memory_check_key(argv[optind]) < 0)
		return al_cli_fail(AL_EXIT_USAGE, "%s", al_errmsg());
	if ((rc = al_memory_open(&m, run_dir)) == AL_ENOTFOUND && !al_dir_exists(run_dir))
		return al_cli_fail(AL_EXIT_NOINPUT, "no run directory '%s' (AILOOP_RUN_DIR)",
				   run_dir);
	if (rc < 0)
		return al_cli_fail(al_cli_exit_code(rc), "%s", al_errmsg());

	if (k == 0) {
		const char *value = al_memory_get(m, argv[optind]);

		if (value)
			printf("%s\n", value);
		code = value ? AL_EXIT_OK : AL_EXIT_FAILED;
	} else if (k == 1) {
		rc = al_memory_set(m, argv[optind], argv[optind + 1], json,
				   agent && *agent ? agent : "ailoop memory", NULL);
		code = rc == AL_EINVALID ? al_cli_fail(AL_EXIT_USAGE, "%s", al_errmsg())
		     : rc < 0 ? al_cli_fail(al_cli_exit_code(rc), "%s", al_errmsg())
		     : AL_EXIT_OK;
	} else {
		code = list(m, json);
	}
	al_memory_free(m);
	if (fflush(stdout) != 0 && code == AL_EXIT_OK)
		code = al_cli_fail(AL_EXIT_SOFTWARE, "cannot write the output");
	return code;
}
