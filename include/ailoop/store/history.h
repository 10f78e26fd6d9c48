#ifndef AILOOP_HISTORY_H
#define AILOOP_HISTORY_H

#include "ailoop/git/git.h"
#include "ailoop/base/strbuf.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * The structured commit messages that make `git log` the run history
 * (SPEC §6): writing them, and reading them back with the regular
 * expressions the specification gives readers.
 */
struct al_sensor_status {
	char *name;
	char *status; /* pass, fail, partial, pending */
	char *detail; /* NULL if none */
};

struct al_iteration {
	char oid[AL_OID_HEX];
	int64_t time;
	char *display;   /* "delivery > implement" */
	char *label;     /* "1.2" */
	char *summary;
	char *node_path; /* "delivery/implement" */
	int level;
	char *status;
	bool target_met;
	char *action;
	char *run_id;    /* NULL in commits of older versions */
	bool run_start;
	char *merge;        /* a merge commit: the child merged ([merge]); NULL for an iteration */
	char *merge_branch; /* and its branch ([merge-branch]) */
	char *cost;         /* what its agent calls cost ([cost]), or NULL */
	struct al_sensor_status *sensors;
	size_t nsensors;
};

/* What one commit records. `sensors` is "name: status (detail), …" or NULL. */
struct al_commit_fields {
	const char *node_path;
	const char *label;
	const char *status;
	bool target_met;
	const char *sensors;
	const char *summary;
	const char *run_id; /* [run]: whose commit it is; may be NULL */
	bool run_start;     /* [run-start]: the run's first commit, where a walk back stops */
	/*
	 * [merge] and [merge-branch]: a parallel node's merge of child
	 * `merge` from branch `merge_branch` (isolation: worktree). It has the
	 * node's path and label, but it is not an iteration of the node:
	 * readers that look for an iteration's commit skip it.
	 */
	const char *merge;
	const char *merge_branch;
	const char *cost;   /* [cost]: "$0.0312 (12.4k in, 1.1k out)"; NULL: no agent call */
};

void al_commit_message(struct al_strbuf *out, const struct al_commit_fields *f);

/* Appends "name: status (detail)" to a sensors line, keeping it parseable. */
void al_sensors_line_add(struct al_strbuf *line, const char *name, const char *status,
			 const char *detail);

/*
 * Whether the commit is its run's first ([run-start]; in commits of older
 * versions, which have no [run], iteration 0 of a level-0 node).
 */
bool al_iteration_starts_run(const struct al_iteration *it);

/*
 * Whether the commit is the one node `node_path` of run `run_id` makes at
 * `label` with `status`. Neither a merge (which carries its parallel
 * node's path and label) is, nor a parallel node's start commit
 * ("running") its end, which has the same label, nor the commit of
 * another run of the same flow below this one's (a run started with
 * --new on a killed run's branch). A commit of older versions, which have
 * no [run], is taken to be the run's.
 */
bool al_iteration_is(const struct al_iteration *it, const char *run_id, const char *node_path,
		     const char *label, const char *status);

/* Reads a message. Returns false (and fills nothing) if it is not ailoop's. */
bool al_iteration_parse(struct al_iteration *it, const char *message);
void al_iteration_release(struct al_iteration *it);

/*
 * The iterations of the run that ends at `rev`, oldest first: the walk goes
 * back to the run's first commit ([run-start]; for commits of older
 * versions, iteration 0 of a level-0 node), or to the first commit of
 * another run. Commits that are not ailoop's (an agent's own) are skipped.
 * With `run_id`, that run's: later runs' commits above it are passed over
 * (runs that share a branch, with --no-branch).
 */
int al_history_load(struct al_git *g, const char *rev, const char *run_id,
		    struct al_iteration **out, size_t *n);
void al_history_free(struct al_iteration *its, size_t n);

#endif
