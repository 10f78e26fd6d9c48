#ifndef AILOOP_REPORT_H
#define AILOOP_REPORT_H

#include "ailoop/git/git.h"
#include "ailoop/store/history.h"
#include "ailoop/store/run_view.h"
#include "ailoop/base/strbuf.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * `ailoop report`: one page per run, built from what the run keeps: its
 * commits (each iteration, the sensor and controller outputs in its tree,
 * the files it changed), run-state.md and the nodes' states, and
 * events.jsonl for the agents' wall times and why the run stopped.
 *
 * Everything in it came from agents or users and is untrusted: the HTML
 * page escapes all of it with al_report_escape() and allows no script.
 */
struct al_report_metric {
	char *sensor;
	char *name;
	double value;
};

/* The longest wall time of an agent the report believes: a year. */
#define AL_REPORT_MS_MAX ((int64_t)366 * 24 * 3600 * 1000)

struct al_report_agent {
	char *role;  /* sensor, controller, actuator, action */
	char *name;  /* the sensor's name, or NULL */
	int64_t ms;  /* -1: unknown (events.jsonl gave no time a run could take) */
	int exit_code;
	bool timed_out;
};

/* One iteration: a commit of the run. */
struct al_report_step {
	struct al_iteration it;
	bool decided;       /* a controller decided this iteration */
	bool target_met;    /* what it said */
	char *plan;         /* the head of its output (its action plan), or NULL */
	char *error;        /* an agent's failure (on_error: continue), or NULL */
	struct al_git_file_stat *files;
	size_t nfiles;
	struct al_report_metric *metrics;
	size_t nmetrics, metrics_alloc;
	struct al_report_agent *agents;
	size_t nagents, agents_alloc;
	struct al_run_cost cost;  /* its agent calls' (agent_usage events) */
	char *resumed;      /* the run stopped in this iteration and was resumed: why it stopped */
	char *tail;         /* a failing sensor's output, its last lines; NULL if none */
	size_t plan_at;     /* where its controller's plan stands: before the inner iterations
			       it started (steps[plan_at]), else its own index */
};

/* The run's cost after each agent call, in the order they ended. */
struct al_report_cost_point {
	double usd;        /* the sum so far */
	const char *label; /* the iteration of the call (a step's, or NULL) */
};

enum { AL_REPORT_ROLES = 4 }; /* al_role_names */

struct al_report {
	const struct al_run_view *view;
	char *rev;            /* where its commits were read: "refs/heads/…" or HEAD */
	struct al_report_step *steps;
	size_t nsteps;
	char *reason;         /* why it paused or failed, from the events; NULL if none */
	char *ended_at;       /* its last event's time, or NULL */
	size_t agent_calls;    /* as budgets count them: command sensors are not */
	size_t calls_stopped;  /* of them, stopped with the run before they ended */
	int64_t role_ms[AL_REPORT_ROLES];
	bool events;          /* events.jsonl was there (not in a clone of the branch) */
	const char *status;   /* the run's status as shown: "interrupted" for a run that says
				 it is running but no process holds its lock */
	struct al_run_tally tally;  /* time at work, pauses, the cost in all (as status shows) */
	struct al_report_cost_point *costs;
	size_t ncosts, costs_alloc;
};

/*
 * Reads the run `view` describes: its commits through `git`, its events.
 * Returns 0, or AL_ENOTFOUND when its branch is gone.
 */
int al_report_load(struct al_report *r, struct al_git *git, const struct al_run_view *view);
void al_report_release(struct al_report *r);

/* The whole page: HTML with inline styles and SVG, or Markdown. */
void al_report_html(struct al_strbuf *out, const struct al_report *r);
void al_report_md(struct al_strbuf *out, const struct al_report *r);

/* `s` as HTML text or a quoted attribute's value: & < > " ' escaped. */
void al_report_escape(struct al_strbuf *out, const char *s);

/* --- shared by the writers (report_*.c) ---------------------------------- */

/* Seconds from `from` to `to` (2026-11-21T10:00:00Z), or -1. */
long al_report_seconds(const char *from, const char *to);
/* "1h 02m", "3m 05s", "12.3s", "450 ms"; "time unknown" for a negative `ms`. */
void al_report_duration(struct al_strbuf *out, int64_t ms);
/* The command that continues or finishes the run, or NULL. Caller frees. */
char *al_report_next_command(const struct al_report *r);
/* Whether a step's status marks it as failed, timed out or paused. */
const char *al_report_mark(const struct al_report_step *s);


/* report_svg.c: the pictures, as inline SVG. */
/* One metric of one node's sensor over its iterations, with its target line. */
void al_report_svg_metric(struct al_strbuf *out, const struct al_report *r, const char *node,
			  const char *sensor, const char *metric);
/* A sensor's verdict in each of its node's iterations, as coloured cells. */
void al_report_svg_strip(struct al_strbuf *out, const struct al_report *r, const char *node,
			 const char *sensor);
/* The agents' time per role, as bars. */
void al_report_svg_roles(struct al_strbuf *out, const struct al_report *r);
/* The run's cost as it grew, call after call. */
void al_report_svg_cost(struct al_strbuf *out, const struct al_report *r);
/* How many points one metric of a node's sensor has (a chart needs two). */
size_t al_report_metric_points(const struct al_report *r, const char *node, const char *sensor,
			       const char *metric, double *last);

/* "$0.1234 (12.4k in, 1.1k out)", with what is estimated or unknown. */
void al_report_cost_text(struct al_strbuf *out, const struct al_run_cost *c);
/* The cost of node `path`'s subtree over the run. */
void al_report_node_cost(struct al_run_cost *out, const struct al_report *r, const char *path);
/* When the run ended (its last event), or NULL while a process runs it. */
const char *al_report_end(const struct al_report *r);
/* Its wall time (until now while it runs), and how much of it was work and pauses. */
void al_report_times(struct al_strbuf *out, const struct al_report *r);
/* The agent calls: how many, and how many the run stopped in. */
void al_report_calls(struct al_strbuf *out, const struct al_report *r);
/*
 * The iteration whose sensors a step's controller judged: the one before
 * it in its loop ("1.2" for "1.3"), or NULL. Caller frees.
 */
char *al_report_judged(const struct al_report_step *s);
/* A step's status as shown: an iteration whose node went on after it is "done", not "running". */
const char *al_report_step_status(const struct al_report_step *s);
/* A node's status as shown: a node of an interrupted run does not run. */
const char *al_report_node_status(const struct al_report *r, const struct al_node_state *s);
/* An iteration of a loop shown as "N of MAX", never past MAX. */
int al_report_iteration_shown(const struct al_node_state *s);

#endif
