#include "ailoop/cli/cli.h"
#include "ailoop/base/strbuf.h"
#include "ailoop/base/util.h"
#include "ailoop/git/git.h"
#include "ailoop/store/episode_recall.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

/*
 * `ailoop episodes search TEXT`: the ranking a node's agents get
 * ({episodes-section}), with its scores, for TEXT as the query: to see
 * what a run would be given, and why.
 */
#define DEFAULT_LIMIT 20

static json_t *hit_json(const struct al_episode_hit *h)
{
	const struct al_episode_entry *e = h->e;

	return json_pack("{s:s, s:f, s:s, s:s, s:s, s:s, s:s, s:I, s:s, s:s}", "id", e->id,
			 "score", h->score, "run", e->run, "node", e->node, "type", e->type,
			 "outcome", al_episode_outcome_names[e->outcome], "date", e->date,
			 "iterations", (json_int_t)e->iterations, "goal", e->goal, "root_task",
			 e->root_task);
}

static void print_hit(struct al_strbuf *out, const struct al_episode_hit *h)
{
	const struct al_episode_entry *e = h->e;

	al_strbuf_addf(out, "%7.3f  %s  %-7s  ", h->score, e->id,
		       al_episode_outcome_names[e->outcome]);
	al_episodes_oneline(out, e->date, strlen(e->date), 40);
	al_strbuf_adds(out, "  ");
	al_episodes_oneline(out, e->node, strlen(e->node), 200);
	al_strbuf_adds(out, " (");
	al_episodes_oneline(out, e->run, strlen(e->run), 200);
	al_strbuf_adds(out, ")\n         ");
	al_episodes_oneline(out, e->goal, strlen(e->goal), 120);
	al_strbuf_addch(out, '\n');
}

int al_cmd_episodes_search(int argc, char **argv)
{
	static const struct option longs[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "limit", required_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 0 },
		{ NULL, 0, NULL, 0 },
	};
	struct al_strbuf query = AL_STRBUF_INIT, out = AL_STRBUF_INIT;
	struct al_episode_query q = { NULL, NULL, true };
	struct al_episode_hit *hits = NULL;
	struct al_git *git = NULL;
	const struct al_episode_index *x;
	bool json = false;
	long limit = DEFAULT_LIMIT;
	size_t n = 0;
	int c, code = 0;
	char *end;

	while ((c = al_cli_getopt(argc, argv, "n:", longs, &code)) != -1) {
		if (c == '?')
			return code;
		if (c == 'j') {
			json = true;
		} else if (c == 'n') {
			limit = strtol(optarg, &end, 10);
			if (!*optarg || *end || limit < 1 || limit > 1000000)
				return al_cli_fail(AL_EXIT_USAGE, "--limit must be a number from 1 "
						   "to 1000000, not '%s'", optarg);
		}
	}
	if ((code = al_cli_operands(argc, argv, 1, 1000)) || (code = al_cli_enter_repo()))
		return code;
	for (int i = optind; i < argc; i++) {
		if (query.len)
			al_strbuf_addch(&query, ' ');
		al_strbuf_adds(&query, argv[i]);
	}
	if (al_git_open(&git) < 0) {
		code = al_cli_fail(AL_EXIT_SOFTWARE, "%s", al_errmsg());
		goto done;
	}
	al_git_show_only();
	x = al_episodes_recall_index(git, NULL);
	q.text = query.buf;
	al_episode_rank(&hits, &n, x, &q);
	if ((size_t)limit < n)
		n = (size_t)limit;
	if (json) {
		json_t *arr = json_array();
		char *text;

		for (size_t i = 0; i < n; i++)
			json_array_append_new(arr, hit_json(&hits[i]));
		text = json_dumps(arr, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(6));
		al_strbuf_addf(&out, "%s\n", text ? text : "[]");
		free(text);
		json_decref(arr);
	} else {
		for (size_t i = 0; i < n; i++)
			print_hit(&out, &hits[i]);
		if (!n)
			fprintf(stderr, "ailoop: no episode matches '%s'%s\n", query.buf,
				x ? "" : " (no episodes are recorded)");
	}
	fwrite(out.buf, 1, out.len, stdout);
done:
	free(hits);
	al_git_free(git);
	al_strbuf_release(&query);
	al_strbuf_release(&out);
	return code;
}
