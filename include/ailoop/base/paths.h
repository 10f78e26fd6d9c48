#ifndef AILOOP_PATHS_H
#define AILOOP_PATHS_H

/*
 * Where ailoop keeps its files in a repository, named once for every
 * layer: the store writes them, the git layer keeps them out of the
 * user's commits and away from the agents' reverts.
 */
/* the runs, each in its directory run_YYYYMMDD_NNN (store/run.h) */
#define AL_RUNS_DIR ".ai-loop/runs"
/* a run's working memory, in its directory (store/memory.h) */
#define AL_MEMORY_FILE "memory.jsonl"
/* a run's cache of condition results, in its directory (exec/condition_eval.h) */
#define AL_COND_CACHE_FILE "conditions.jsonl"
/*
 * What of a run is never committed, as .gitignore patterns relative to a
 * run's directory: only grows (events, memory, the conditions' cache),
 * regenerable (the agents' logs, the report's pages) or held (locks). The
 * runs' .gitignore lists them on a run's branch (store/run.c), and the
 * repository's info/exclude on every branch (al_git_ignore_runs).
 */
#define AL_RUNS_UNRECORDED \
	{ "lock", "*.lock", "events.jsonl", AL_MEMORY_FILE, AL_COND_CACHE_FILE, "logs/", \
	  "report.html", "report.md" }

#endif
