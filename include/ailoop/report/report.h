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
	int64_t role_ms[AL_REPORT_ROLES];
	bool events;          /* events.jsonl was there (not in a clone of the branch) */
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

#endif
