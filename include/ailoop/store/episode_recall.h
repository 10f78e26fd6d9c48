#ifndef AILOOP_EPISODE_RECALL_H
#define AILOOP_EPISODE_RECALL_H

#include "ailoop/base/strbuf.h"
#include "ailoop/git/git.h"
#include "ailoop/model/episode_rank.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/*
 * Past episodes read back for a node's agents: the index of the episode
 * store (`index.tsv` of the commit refs/ailoop/episodes names) ranked
 * against the node (model/episode_rank.h), and the best of them written
 * as {episodes-section}, with what worked from each episode's own file
 * (`runs/<run>/<id>.json`).
 */
#define AL_EPISODES_REF "refs/ailoop/episodes"
#define AL_EPISODES_INDEX "index.tsv"
/* What an entry of the section shows of each text, in bytes. */
#define AL_EPISODES_GOAL_SHOWN 300
#define AL_EPISODES_SUMMARY_SHOWN 800

/*
 * The index as the ref names it now, parsed once per commit of the ref in
 * a process (kept until the ref moves; do not free). NULL when there are
 * no episodes: no ref (silently), or a ref, commit or index that cannot
 * be read (a warning on stderr, once per commit of the ref). Lines of the
 * index that are not episodes are skipped, with one warning. `commit`
 * (may be NULL) is set to the ref's commit.
 */
const struct al_episode_index *al_episodes_recall_index(struct al_git *g, char commit[AL_OID_HEX]);

/*
 * What a node asks with: its goal, path and the run's task (each may be
 * NULL), each cut at AL_EPISODES_QUERY_PART bytes.
 */
#define AL_EPISODES_QUERY_PART 4000
void al_episodes_query(struct al_strbuf *out, const char *goal, const char *node,
		       const char *root_task);

/*
 * Appends `s` (`len` bytes) as one line of at most `max` bytes of valid
 * UTF-8: control characters and runs of spaces one space, a cut text
 * ending in "…". What the store holds, shown where a line break or a
 * control character would do harm.
 */
void al_episodes_oneline(struct al_strbuf *out, const char *s, size_t len, size_t max);

/* The episodes a section gave: their ids (owned) and the section's length. */
struct al_episodes_given {
	char **ids;
	size_t n;
	size_t bytes;
};
void al_episodes_given_release(struct al_episodes_given *given);

/*
 * {episodes-section} for query `q`: a "## Past episodes" heading, then an
 * entry per episode in rank order (where it came from: node, run, date,
 * outcome, iterations; its goal; what worked, and the controller's last
 * reasoning), as long as the whole stays within `max_tokens` (counted as
 * bytes / 4); the first entry that does not fit ends it. Nothing at all
 * when no episode matches or fits. Every text from the store is one line
 * of valid UTF-8 without control characters, cut to its bound, so that
 * nothing in it can start a block or a front matter of its own.
 */
void al_episodes_section(struct al_strbuf *out, struct al_episodes_given *given,
			 struct al_git *g, const struct al_episode_query *q, int max_tokens);

/*
 * Which episodes each agent of the run in `run_dir` was given, from its
 * "episodes_given" events (events.jsonl): the last of each agent (node,
 * role and sensor name), in the order they first appear, as an array of
 * the events' objects {node, label, role, name, agent, ids, bytes}; empty
 * without any. Caller decrefs.
 */
json_t *al_episodes_given_read(const char *run_dir);
/* One of them as a line: "NODE ROLE: ID, ID (BYTES bytes, iteration LABEL)". */
void al_episodes_given_line(struct al_strbuf *out, const json_t *given);

#endif
