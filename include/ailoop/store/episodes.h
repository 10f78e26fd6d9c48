#ifndef AILOOP_STORE_EPISODES_H
#define AILOOP_STORE_EPISODES_H

#include "ailoop/git/git.h"
#include "ailoop/model/episode_rank.h"
#include "ailoop/base/strbuf.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Episodic memory across runs: each finished node's episode, kept in git
 * under refs/ailoop/episodes (never on a run's branch), so that discarding
 * a branch loses none and a push of refs/ailoop/ shares them.
 *
 * The ref names a chain of commits (each one's parent the one before; the
 * first has none) whose tree holds:
 *   index.tsv   "# ailoop episodes v1", then a line per episode, oldest
 *               first: id run node type outcome date iterations goal
 *               root_task, TAB-separated (in text fields TAB, CR and LF
 *               are spaces; goal at most 1000 bytes, root_task 300)
 *   runs/<run>/<id>.json   the whole episode
 * A commit "episode <id>: <node> of run <run>, <outcome>" records one; a
 * commit "forget <n> episodes" takes some out. The ref moves
 * compare-and-swap: a writer that finds it moved reads it again.
 */
#define AL_EPISODES_REF "refs/ailoop/episodes"
#define AL_EPISODES_INDEX "index.tsv"
#define AL_EPISODE_GOAL_MAX 1000
#define AL_EPISODE_ROOT_TASK_MAX 300
#define AL_EPISODE_TEXT_MAX 800 /* summary, reasoning */

/* One step of an episode: an iteration's commit, its action and what the sensors said. */
struct al_episode_step {
	const char *label;
	const char *action;
	const char *sensors_before; /* NULL: none */
	const char *sensors_after;
};

/* An episode to record; the caller owns every string. */
struct al_episode {
	char id[13];
	const char *run, *node, *type;
	const char *outcome; /* success, failure, blocked (al_episode_outcome) */
	const char *reason;  /* the node's status: complete, max-iterations-reached, … */
	const char *goal, *root_task;
	const char *summary, *reasoning;   /* NULL: none */
	const char *first_commit, *last_commit; /* NULL: none */
	const char *started, *ended;       /* ISO 8601 UTC */
	const char *flow_sha256;
	int iterations;
	int64_t duration_ms;
	long agent_calls;
	int64_t tokens_in, tokens_out;
	double cost_usd;
	bool cost_known; /* false: cost_usd is null */
	const struct al_episode_step *steps;
	size_t nsteps;
};

/*
 * The id of one finished node: the first 12 hex digits of the sha256 of
 * run "\n" node "\n" instance, where `instance` is what makes the node's
 * end unique: the executor gives the label of the iteration of its parent
 * it ran in ("" outside any loop), the run's branch and the run's start
 * time, a line each (run ids are numbered per work tree, and two work
 * trees may number two runs alike). A resume computes the same id, and
 * finds it recorded.
 */
void al_episode_id(char out[13], const char *run, const char *node, const char *instance);

/* success for complete, blocked for blocked, failure for any other end. */
const char *al_episode_outcome(const char *status);

/*
 * Records `ep` (a commit on the ref, started if there is none): 0, or 1
 * if its id is in the index already (nothing written). AL_EINVALID if the
 * ref is damaged (names no commit, its tree has no index.tsv, a line of it
 * cannot be read): the message says what, and nothing is written.
 */
int al_episode_record(struct al_git *g, const struct al_episode *ep);

/*
 * The index as the ref's tip holds it, oldest first, without terms (NULL,
 * and AL_ENOTFOUND, without the ref); AL_EINVALID if it is damaged. Free
 * with al_episode_index_free().
 */
int al_episodes_load(struct al_git *g, struct al_episode_index **out);
/*
 * An index's text read as a store must read it (model/episode_rank.h's
 * reading, without terms): AL_EINVALID, naming it, at a wrong header or
 * any line that cannot be read; *out is then NULL.
 */
int al_episodes_parse(const char *text, size_t len, struct al_episode_index **out);

/* Episode `id`'s JSON (runs/<run>/<id>.json), appended to `out`. AL_ENOTFOUND if unknown. */
int al_episode_show(struct al_git *g, const char *id, struct al_strbuf *out);

/*
 * One commit "forget <n> episodes" without those `drop` says yes to
 * (their lines and files); *n how many. Nothing is written when none is.
 */
typedef bool (*al_episode_pick_fn)(const struct al_episode_entry *e, void *data);
int al_episodes_forget(struct al_git *g, al_episode_pick_fn drop, void *data, size_t *n);

#endif
