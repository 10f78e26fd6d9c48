#ifndef AILOOP_RUN_VIEW_H
#define AILOOP_RUN_VIEW_H

#include "ailoop/git/git.h"
#include "ailoop/store/state.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * A run as `status` and `report` read it: its run-state.md and every node's
 * orchestrator-output.md, from the work tree, or from the last commit of
 * its branch when that branch is not checked out.
 */
struct al_run_nodes {
	struct al_node_state *v; /* parents before children */
	size_t n, alloc;
	char **errors;           /* damaged state files */
	size_t nerrors, errors_alloc;
};

struct al_run_view {
	struct al_run_state st;
	struct al_run_nodes nodes;
	char *dir;    /* .ai-loop/runs/<id> */
	char *from;   /* the branch it was read from when not checked out, else NULL */
	char *holder; /* who holds the run's lock, or NULL */
};

/*
 * The run a command given no RUN-ID means (status, log, report, land), by
 * one rule: the newest run whose state in the work tree names the
 * checked-out branch (or a detached HEAD) as its own, the run HEAD is on;
 * else the newest run of the repository, here or on its branch. Returns
 * its id (caller frees), with *from the branch to read it from when its
 * branch is not checked out (else NULL; caller frees), or NULL and
 * AL_ENOTFOUND's message when there is no run.
 */
char *al_run_pick(struct al_git *git, char **from);

/*
 * Reads run `id`, or the run al_run_pick() picks if `id` is NULL.
 * `git` may be NULL (then only the work tree is looked at). AL_ENOTFOUND
 * (al_errmsg() says so) when there is no such run or no run at all.
 * Release with al_run_view_release() in every case.
 */
int al_run_view_load(struct al_run_view *out, struct al_git *git, const char *id);
void al_run_view_release(struct al_run_view *v);

/*
 * A run on a branch that is not checked out: its directory is in that
 * branch's history only (not in the work tree), and the state at the tip
 * names the branch as the run's. Returns the newest such run's id (or run
 * `wanted`'s; with `resumable`, only a run that can be resumed), or NULL;
 * caller frees it and *branch.
 */
char *al_run_on_branches(struct al_git *git, const char *wanted, bool resumable, char **branch);
/* The ids of the runs on the run branches (ai-loop/…), checked out or not. Caller frees. */
void al_run_branch_ids(struct al_git *git, char ***ids, size_t *n);

/*
 * What agent calls cost, summed from their agent_usage events: dollars
 * (those estimated at list prices among them), tokens, and how many calls
 * had their cost reported, estimated or unknown.
 */
struct al_run_cost {
	double usd, estimated_usd;
	long long input, output; /* input counts cache reads and writes */
	long calls, estimated, unknown;
};

/* Adds one agent_usage event `ev` to `c`; a figure no call could give counts 0. */
void al_run_cost_add_event(struct al_run_cost *c, const json_t *ev);
void al_run_cost_add(struct al_run_cost *c, const struct al_run_cost *more);
/* Whether node `path`'s subtree holds node `node` (itself, or a descendant). */
bool al_run_node_holds(const char *path, const char *node);

/*
 * A run's figures as `status` and `report` both show them, from its
 * events.jsonl (which a resume appends to, so the sums go on): the time
 * ailoop worked on it (each stretch from a run_start or run_resume to its
 * last event, or to now while `live`), its agent calls that ended, and
 * their cost in all.
 */
struct al_run_tally {
	bool events;        /* events.jsonl was there */
	int64_t active_s;   /* seconds at work */
	int64_t paused_s;   /* seconds between a stop and the resume after it */
	long pauses;        /* stops that a resume followed */
	long calls_ended;   /* agent calls with an end event (a stopped call has none) */
	struct al_run_cost cost;
	struct al_run_node_cost {
		char *node;                  /* the node path an event named */
		struct al_run_cost cost;     /* its own calls' */
	} *nodes;
	size_t nnodes, nodes_alloc;
};

/* Reads it; release with al_run_tally_release() (also after a failed read). */
void al_run_tally_read(struct al_run_tally *out, const char *run_dir, bool live);
void al_run_tally_release(struct al_run_tally *t);
/* The cost of node `path`'s subtree: its calls and its descendants'. */
void al_run_tally_subtree(struct al_run_cost *out, const struct al_run_tally *t, const char *path);
/* Seconds since the epoch of an event's "ts" (2026-11-21T10:00:00Z), or -1. */
int64_t al_run_event_time(const char *ts);

#endif
