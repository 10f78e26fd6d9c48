#include "ailoop/cli/cli.h"
#include "ailoop/store/episodes.h"
#include "ailoop/base/alloc.h"
#include "ailoop/base/util.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

/*
 * `ailoop episodes`: the episodes recorded under refs/ailoop/episodes,
 * listed, shown, forgotten. Read and written through git alone: no run, no
 * lock, any work tree of the repository.
 */

/* A field of the index as a terminal gets it: no control character reaches it as a command. */
static void print_safe(const char *s, size_t max)
{
	size_t n = 0;

	for (; *s && n < max; s++, n++) {
		unsigned char c = (unsigned char)*s;

		putchar(c < 0x20 || c == 0x7f ? '?' : c);
	}
	if (*s) /* cut: the rest of a character dropped with it */
		fputs("...", stdout);
}

static int list(struct al_git *g, const char *node, bool json)
{
	struct al_episode_index *x;
	json_t *arr = json_array();
	int rc = al_episodes_load(g, &x);

	if (rc == AL_ENOTFOUND) /* none recorded yet: an empty list */
		rc = 0;
	if (rc < 0) {
		json_decref(arr);
		return al_cli_fail(al_cli_exit_code(rc), "%s", al_errmsg());
	}
	for (size_t i = 0; x && i < x->n; i++) {
		const struct al_episode_entry *l = &x->v[i];
		const char *outcome = al_episode_outcome_names[l->outcome];

		if (node && strcmp(l->node, node))
			continue;
		if (json) {
			json_array_append_new(arr, json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:I, "
							     "s:s, s:s}", "id", l->id, "run", l->run,
							     "node", l->node, "type", l->type,
							     "outcome", outcome, "date", l->date,
							     "iterations", (json_int_t)l->iterations,
							     "goal", l->goal, "root_task", l->root_task));
			continue;
		}
		printf("%s  %s  %-7s  ", l->id, l->date, outcome);
		print_safe(l->node, 60);
		fputs("  ", stdout);
		print_safe(l->run, 40);
		fputs("  ", stdout);
		print_safe(l->goal, 60);
		putchar('\n');
	}
	if (json) {
		char *text = json_dumps(arr, JSON_INDENT(2) | JSON_PRESERVE_ORDER);

		if (!text)
			al_die_oom();
		printf("%s\n", text);
		free(text);
	}
	json_decref(arr);
	al_episode_index_free(x);
	return AL_EXIT_OK;
}

static int show(struct al_git *g, const char *id)
{
	struct al_strbuf sb = AL_STRBUF_INIT;
	int rc = al_episode_show(g, id, &sb);

	if (rc == 0)
		fwrite(sb.buf, 1, sb.len, stdout);
	al_strbuf_release(&sb);
	return rc < 0 ? al_cli_fail(al_cli_exit_code(rc), "%s", al_errmsg()) : AL_EXIT_OK;
}

/* What `forget` takes out: the ids named, or those before a date, or of a run. */
struct pick {
	char **ids;
	size_t nids;
	const char *before, *run;
};

static bool picked(const struct al_episode_entry *l, void *data)
{
	const struct pick *p = data;

	for (size_t i = 0; i < p->nids; i++)
		if (!strcmp(l->id, p->ids[i]))
			return true;
	if (p->before && strcmp(l->date, p->before) < 0)
		return true;
	return p->run && !strcmp(l->run, p->run);
}

/* A date of --before: 2026-11-28, or a time in it as the index writes it (…T06:40:00Z). */
static bool is_date(const char *s)
{
	static const char form[] = "dddd-dd-ddTdd:dd:ddZ";
	size_t len = strlen(s);

	if (len != 10 && len != sizeof(form) - 1)
		return false;
	for (size_t i = 0; i < len; i++)
		if (form[i] == 'd' ? !(s[i] >= '0' && s[i] <= '9') : s[i] != form[i])
			return false;
	return true;
}

static int forget(struct al_git *g, struct pick *p)
{
	struct al_episode_index *x = NULL;
	size_t count;
	int rc = al_episodes_load(g, &x);

	/* every id named must be one: a typo forgets nothing */
	for (size_t i = 0; rc >= 0 && i < p->nids; i++) {
		size_t k;

		for (k = 0; k < x->n && strcmp(x->v[k].id, p->ids[i]); k++)
			;
		if (k == x->n) {
			al_episode_index_free(x);
			return al_cli_fail(AL_EXIT_NOINPUT, "no episode '%s'", p->ids[i]);
		}
	}
	al_episode_index_free(x);
	if (rc == AL_ENOTFOUND) {
		printf("forgot 0 episodes\n");
		return AL_EXIT_OK;
	}
	if (rc < 0 || (rc = al_episodes_forget(g, picked, p, &count)) < 0)
		return al_cli_fail(al_cli_exit_code(rc), "%s", al_errmsg());
	printf("forgot %zu episode%s\n", count, count == 1 ? "" : "s");
	return AL_EXIT_OK;
}

int cmd_episodes(int argc, char **argv)
{
	static const struct option longs[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "node", required_argument, NULL, 'n' },
		{ "before", required_argument, NULL, 'b' },
		{ "run", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 0 },
		{ NULL, 0, NULL, 0 },
	};
	struct pick p = { 0 };
	const char *sub, *node = NULL;
	struct al_git *g = NULL;
	bool json = false;
	int c, code = 0, rc;

	if (argc > 1 && !strcmp(argv[1], "search")) /* options of its own */
		return al_cmd_episodes_search(argc - 1, argv + 1);
	while ((c = al_cli_getopt(argc, argv, "", longs, &code)) != -1) {
		if (c == '?')
			return code;
		if (c == 'j')
			json = true;
		else if (c == 'n')
			node = optarg;
		else if (c == 'b')
			p.before = optarg;
		else if (c == 'r')
			p.run = optarg;
	}
	if (optind >= argc) {
		al_cli_usage(stderr, al_command_find("episodes"));
		return AL_EXIT_USAGE;
	}
	sub = argv[optind++];
	if (strcmp(sub, "list") && strcmp(sub, "show") && strcmp(sub, "forget")) {
		al_cli_fail(AL_EXIT_USAGE, "unknown episodes command '%s' (list, show, search or forget)",
			    sub);
		al_cli_usage(stderr, al_command_find("episodes"));
		return AL_EXIT_USAGE;
	}
	if ((json || node) && strcmp(sub, "list"))
		return al_cli_fail(AL_EXIT_USAGE, "options '--json' and '--node' apply to "
				   "'episodes list' only");
	if ((p.before || p.run) && strcmp(sub, "forget"))
		return al_cli_fail(AL_EXIT_USAGE, "options '--before' and '--run' apply to "
				   "'episodes forget' only");
	if (!strcmp(sub, "list"))
		code = al_cli_operands(argc, argv, 0, 0);
	else if (!strcmp(sub, "show"))
		code = al_cli_operands(argc, argv, 1, 1);
	else if ((p.before != NULL) + (p.run != NULL) + (optind < argc) != 1)
		return al_cli_fail(AL_EXIT_USAGE, "'episodes forget' takes IDs, --before DATE or "
				   "--run RUN-ID, one of them");
	if (code)
		return code;
	if (p.before && !is_date(p.before))
		return al_cli_fail(AL_EXIT_USAGE, "'%s' is not a date (2026-11-28, or "
				   "2026-11-28T06:40:00Z)", p.before);
	if ((code = al_cli_enter_repo()))
		return code;
	if ((rc = al_git_open(&g)) < 0)
		return al_cli_fail(AL_EXIT_NOINPUT, "%s", al_errmsg());
	if (!strcmp(sub, "list")) {
		code = list(g, node, json);
	} else if (!strcmp(sub, "show")) {
		code = show(g, argv[optind]);
	} else {
		p.ids = argv + optind;
		p.nids = (size_t)(argc - optind);
		code = forget(g, &p);
	}
	al_git_free(g);
	if (fflush(stdout) != 0 && code == AL_EXIT_OK)
		code = al_cli_fail(AL_EXIT_SOFTWARE, "cannot write the output");
	return code;
}
