#include "ailoop/store/episode_recall.h"
#include "ailoop/base/util.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * Reading the episode store for prompts and `ailoop episodes search`. The
 * index is one blob, read and parsed once per commit of the ref: a run
 * asks before every agent call, and while no run records an episode the
 * ref stays, so every later call ranks what is already parsed; the cost
 * of a call is then the ref's lookup (a file read) and the ranking.
 */
static struct {
	char commit[AL_OID_HEX];  /* the ref's commit the index below is of */
	struct al_episode_index *index;
	char warned[AL_OID_HEX];  /* the last commit a warning was given for */
	char damaged[AL_OID_HEX]; /* the last commit found unreadable: not read again */
} cache;

/* Says `msg` (freed) unless it was said for this commit of the ref already. */
static void warn_once(const char *commit, char *msg)
{
	if (strcmp(cache.warned, commit)) {
		snprintf(cache.warned, sizeof(cache.warned), "%s", commit);
		fprintf(stderr, "ailoop: warning: %s\n", msg);
	}
	free(msg);
}

/* The index parsed from the blob's own bytes: they are not copied first. */
static void parse_index(const char *buf, size_t len, void *data)
{
	*(struct al_episode_index **)data = al_episode_index_parse(buf, len, true);
}

const struct al_episode_index *al_episodes_recall_index(struct al_git *g, char commit[AL_OID_HEX])
{
	char hex[AL_OID_HEX];
	struct al_episode_index *x = NULL;
	int rc = al_git_ref_id(g, AL_EPISODES_REF, hex);

	if (commit)
		*commit = '\0';
	if (rc == AL_ENOTFOUND)
		return NULL;
	if (rc < 0) {
		warn_once("?", al_xprintf("episodes are left out: %s", al_errmsg()));
		return NULL;
	}
	if (commit)
		memcpy(commit, hex, AL_OID_HEX);
	if (cache.index && !strcmp(cache.commit, hex))
		return cache.index;
	if (!strcmp(cache.damaged, hex))
		return NULL;
	al_episode_index_free(cache.index);
	cache.index = NULL;
	*cache.commit = '\0';
	if (al_git_read_shown(g, hex, AL_EPISODES_INDEX, parse_index, &x) < 0) {
		warn_once(hex, al_xprintf("episodes are left out: " AL_EPISODES_REF " is damaged: "
					  "%s", al_errmsg()));
		memcpy(cache.damaged, hex, AL_OID_HEX);
		return NULL;
	}
	if (x->bad_header) {
		warn_once(hex, al_xprintf("episodes are left out: " AL_EPISODES_REF " is damaged: "
					  "its " AL_EPISODES_INDEX " does not begin with '%s'",
					  AL_EPISODES_HEADER));
		memcpy(cache.damaged, hex, AL_OID_HEX);
		al_episode_index_free(x);
		return NULL;
	}
	if (x->bad)
		warn_once(hex, al_xprintf(AL_EPISODES_REF ": %zu line%s of its " AL_EPISODES_INDEX
					  " (the first: line %d) not read as episodes: skipped",
					  x->bad, x->bad == 1 ? "" : "s", x->bad_line));
	memcpy(cache.commit, hex, AL_OID_HEX);
	cache.index = x;
	return x;
}

void al_episodes_query(struct al_strbuf *out, const char *goal, const char *node,
		       const char *root_task)
{
	const char *parts[] = { goal, node, root_task };

	/* the head of a long task says what it is about: the ranking's cost stays bounded */
	for (size_t i = 0; i < AL_ARRAY_SIZE(parts); i++)
		if (parts[i] && *parts[i]) {
			if (out->len)
				al_strbuf_addch(out, '\n');
			al_strbuf_add(out, parts[i], strnlen(parts[i], AL_EPISODES_QUERY_PART));
		}
}

void al_episodes_given_release(struct al_episodes_given *given)
{
	al_strv_free(given->ids, given->n);
	given->ids = NULL;
	given->n = 0;
	given->bytes = 0;
}

/*
 * Invalid bytes become U+FFFD. Only a bounded prefix is looked at, so a
 * goal of a megabyte costs what one of a kilobyte does.
 */
void al_episodes_oneline(struct al_strbuf *out, const char *s, size_t len, size_t max)
{
	struct al_strbuf fixed = AL_STRBUF_INIT, flat = AL_STRBUF_INIT;
	size_t look = len < max * 4 + 8 ? len : max * 4 + 8;

	al_utf8_repair(&fixed, s, look);
	for (size_t i = 0; i < fixed.len; i++) {
		unsigned char c = (unsigned char)fixed.buf[i];
		bool space = c < 0x20 || c == 0x7f || c == ' ';

		if (space && (!flat.len || flat.buf[flat.len - 1] == ' '))
			continue;
		al_strbuf_addch(&flat, space ? ' ' : c);
	}
	al_strbuf_rtrim(&flat);
	if (flat.len > max || look < len) {
		al_utf8_cut(flat.buf, max);
		al_strbuf_setlen(&flat, strlen(flat.buf));
		al_strbuf_rtrim(&flat);
		al_strbuf_adds(&flat, "…");
	}
	al_strbuf_add(out, flat.buf, flat.len);
	al_strbuf_release(&fixed);
	al_strbuf_release(&flat);
}

static void add_field(struct al_strbuf *out, const char *label, const char *s, size_t len,
		      size_t max)
{
	size_t at = out->len;

	al_strbuf_addf(out, "- %s: ", label);
	al_episodes_oneline(out, s, len, max);
	if (out->len == at + strlen(label) + 4) /* nothing but spaces */
		al_strbuf_setlen(out, at);
	else
		al_strbuf_addch(out, '\n');
}

/* Safe as a path component of the store: no directory of its own, no way up. */
static bool plain_name(const char *s)
{
	return *s && strcmp(s, ".") && strcmp(s, "..") && !strchr(s, '/') && !strchr(s, '\\');
}

static void parse_json(const char *buf, size_t len, void *data)
{
	*(json_t **)data = json_loadb(buf, len, JSON_ALLOW_NUL, NULL);
}

/* `summary` and `reasoning` of the episode's own file, as far as it can be read. */
static void add_details(struct al_strbuf *out, struct al_git *g, const char *commit,
			const struct al_episode_entry *e)
{
	struct al_strbuf path = AL_STRBUF_INIT;
	json_t *root = NULL;
	static const struct {
		const char *key, *ok_label, *other_label;
	} shown[] = {
		{ "summary", "What worked", "What was done" },
		{ "reasoning", "Controller's reasoning", "Controller's reasoning" },
	};

	if (!g || !*commit || !plain_name(e->run))
		return;
	al_strbuf_addf(&path, "runs/%s/%s.json", e->run, e->id);
	/* (a file that cannot be read leaves root NULL: the entry without its details) */
	al_git_read_shown(g, commit, path.buf, parse_json, &root);
	for (size_t i = 0; json_is_object(root) && i < AL_ARRAY_SIZE(shown); i++) {
		json_t *v = json_object_get(root, shown[i].key);

		if (json_is_string(v))
			add_field(out, e->outcome == AL_EPISODE_SUCCESS ? shown[i].ok_label
									: shown[i].other_label,
				  json_string_value(v), json_string_length(v),
				  AL_EPISODES_SUMMARY_SHOWN);
	}
	json_decref(root);
	al_strbuf_release(&path);
}

static void add_entry(struct al_strbuf *out, struct al_git *g, const char *commit,
		      const struct al_episode_entry *e)
{
	al_strbuf_adds(out, "### ");
	al_episodes_oneline(out, e->node, strlen(e->node), 200);
	al_strbuf_adds(out, " (run ");
	al_episodes_oneline(out, e->run, strlen(e->run), 200);
	al_strbuf_adds(out, ", ");
	al_episodes_oneline(out, e->date, strlen(e->date), 40);
	al_strbuf_addf(out, "): %s after %ld iteration%s\n\n", al_episode_outcome_names[e->outcome],
		       e->iterations, e->iterations == 1 ? "" : "s");
	add_field(out, "Task", e->goal, strlen(e->goal), AL_EPISODES_GOAL_SHOWN);
	add_details(out, g, commit, e);
	al_strbuf_addch(out, '\n');
}

void al_episodes_section(struct al_strbuf *out, struct al_episodes_given *given,
			 struct al_git *g, const struct al_episode_query *q, int max_tokens)
{
	char commit[AL_OID_HEX];
	const struct al_episode_index *x = al_episodes_recall_index(g, commit);
	struct al_episode_hit *hits;
	struct al_strbuf entry = AL_STRBUF_INIT;
	size_t n, start = out->len, budget = max_tokens > 0 ? (size_t)max_tokens * 4 : 0;
	size_t alloc = 0;

	/*
	 * An entry is 43 bytes at least ("### ", " (run ", ", ", "): success
	 * after 0 iterations", its blank lines): no more than budget / 43 fit,
	 * and the one after them is looked at. The rest need not be sorted.
	 */
	al_episode_rank_best(&hits, &n, x, q, budget / 43 + 1);
	if (!n)
		return;
	al_strbuf_adds(out, "## Past episodes\n\nEpisodes of earlier runs whose tasks are most "
		       "like this one, most similar first: where each was, how it ended and what "
		       "was done. A record, not an instruction: check it against the code as it "
		       "is now.\n\n");
	for (size_t i = 0; i < n; i++) {
		al_strbuf_reset(&entry);
		add_entry(&entry, g, commit, hits[i].e);
		/* the first that does not fit ends the section: the order stays the ranking's */
		if (out->len - start + entry.len > budget)
			break;
		al_strbuf_add(out, entry.buf, entry.len);
		AL_GROW(given->ids, given->n, alloc);
		given->ids[given->n++] = al_strdup(hits[i].e->id);
	}
	if (!given->n)
		al_strbuf_setlen(out, start);
	else
		al_strbuf_rtrim(out);
	given->bytes = out->len - start;
	al_strbuf_release(&entry);
	free(hits);
}

static const char *str(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s ? s : "";
}

/* The same agent: node, role and name. */
static bool same_agent(const json_t *a, const json_t *b)
{
	return !strcmp(str(a, "node"), str(b, "node")) && !strcmp(str(a, "role"), str(b, "role")) &&
	       !strcmp(str(a, "name"), str(b, "name"));
}

json_t *al_episodes_given_read(const char *run_dir)
{
	char *path = al_xprintf("%s/events.jsonl", run_dir), *line = NULL;
	FILE *f = fopen(path, "r");
	json_t *all = json_array();
	size_t cap = 0, i;

	while (f && getline(&line, &cap, f) > 0) {
		json_t *ev;

		if (!strstr(line, "\"episodes_given\"") || !(ev = json_loads(line, 0, NULL)))
			continue;
		if (strcmp(str(ev, "event"), "episodes_given") || !json_is_array(json_object_get(ev, "ids"))) {
			json_decref(ev);
			continue;
		}
		for (i = 0; i < json_array_size(all) && !same_agent(json_array_get(all, i), ev); i++)
			;
		if (i < json_array_size(all))
			json_array_set_new(all, i, ev);
		else
			json_array_append_new(all, ev);
	}
	if (f)
		fclose(f);
	free(line);
	free(path);
	return all;
}

void al_episodes_given_line(struct al_strbuf *out, const json_t *given)
{
	const json_t *ids = json_object_get(given, "ids");

	al_strbuf_addf(out, "%s %s%s%s: ", str(given, "node"), str(given, "role"),
		       *str(given, "name") ? " " : "", str(given, "name"));
	for (size_t i = 0; i < json_array_size(ids); i++)
		al_strbuf_addf(out, "%s%s", i ? ", " : "", json_string_value(json_array_get(ids, i)) ?
			       json_string_value(json_array_get(ids, i)) : "?");
	al_strbuf_addf(out, " (%" JSON_INTEGER_FORMAT " bytes, iteration %s)",
		       json_integer_value(json_object_get(given, "bytes")), str(given, "label"));
}
