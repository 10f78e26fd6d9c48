#include "ailoop/cli/cli.h"
#include "ailoop/store/run_view.h"
#include "ailoop/exec/exec.h"
#include "ailoop/base/fsutil.h"
#include "ailoop/store/history.h"
#include "ailoop/proc/proc.h"
#include "ailoop/base/sha256.h"
#include "ailoop/base/signals.h"
#include "ailoop/proc/slurm.h"
#include "ailoop/base/strbuf.h"
#include "ailoop/base/util.h"
#include <dirent.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*
 * A run whose status says it ended may still lack its last commit: ailoop
 * writes the final status first so that the commit carries it. Then the
 * tip of its branch is one of its own commits, but not the last one; such
 * a run is finished by resuming it.
 */
static bool last_commit_missing(struct al_git *git, const struct al_run *run)
{
	struct al_node_state st;
	struct al_iteration tip;
	char *path, *msg = NULL, *rev;
	bool missing = false;

	if (!run->st.active_node_path)
		return false;
	path = al_xprintf("%s/nodes/%s/orchestrator-output.md", run->dir,
			  run->st.active_node_path);
	rev = run->st.branch ? al_xprintf("refs/heads/%s", run->st.branch) : al_strdup("HEAD");
	if (al_node_state_read(&st, path) == 0) {
		if (st.phase == AL_PHASE_COMMIT && al_node_state_final(&st) &&
		    al_git_message(git, rev, &msg) == 0 && al_iteration_parse(&tip, msg)) {
			missing = !al_iteration_is(&tip, run->st.run_id, st.node_path, st.label,
						   st.status);
			al_iteration_release(&tip);
		}
		al_node_state_release(&st);
	}
	free(msg);
	free(rev);
	free(path);
	return missing;
}

static bool resumable(struct al_git *git, const struct al_run *run)
{
	return al_status_resumable(run->st.status) || (git && last_commit_missing(git, run));
}

/*
 * The newest resumable run that no live ailoop holds, or NULL. When every
 * resumable run is held, *locked says by whom (caller frees): another
 * ailoop is on it, which is not the same as there being nothing to resume.
 */
static char *find_resumable(struct al_git *git, char **locked, char **damaged)
{
	char **ids, *found = NULL;
	size_t n;

	if (locked)
		*locked = NULL;
	if (damaged)
		*damaged = NULL;
	if (al_runs_list(&ids, &n) < 0)
		return NULL;
	for (size_t i = 0; i < n && !found; i++) {
		struct al_run *run;
		char *holder;

		if (al_run_open(&run, ids[i]) < 0) {
			if (damaged && !*damaged)
				*damaged = al_xprintf("%s\n%s", ids[i], al_errmsg());
			continue;
		}
		holder = al_run_lock_holder(run->dir);
		if (!holder && resumable(git, run))
			found = al_strdup(ids[i]);
		else if (holder && locked && !*locked && al_status_resumable(run->st.status))
			*locked = al_xprintf("run %s is locked by %s", ids[i], holder);
		free(holder);
		al_run_free(run);
	}
	al_runs_list_free(ids, n);
	if (found && locked) {
		free(*locked);
		*locked = NULL;
	}
	if (found && damaged) {
		free(*damaged);
		*damaged = NULL;
	}
	return found;
}

/*
 * What a killed ailoop can leave behind: agents still at work, and git
 * lock files that would refuse every commit.
 */
static int cleanup_after_crash(struct al_git *git, const struct al_run *run)
{
	/* the run's directory, not its id: ids repeat from one repository to another */
	char *entry = al_xprintf("AILOOP_RUN_DIR=%s", run->abs_dir);
	char *logs = al_xprintf("%s/" AL_RUN_AGENTS_DIR, run->dir);
	const char *base = strrchr(AL_RUN_AGENTS_FILE, '/') + 1;
	int agents = 0, locks;
	struct dirent *e;
	DIR *d = opendir(logs);

	/* the main process's record, and one per parallel child process */
	while (d && (e = readdir(d))) {
		if (!strncmp(e->d_name, base, strlen(base)) &&
		    (!e->d_name[strlen(base)] || e->d_name[strlen(base)] == '.')) {
			char *record = al_xprintf("%s/%s", logs, e->d_name);

			agents += al_proc_kill_recorded(record, entry);
			free(record);
		}
	}
	if (d)
		closedir(d);
	free(entry);
	free(logs);
	if (agents)
		fprintf(stderr, "ailoop: stopped %d process%s the interrupted run left running "
			"(%s)\n", agents, agents == 1 ? "" : "es", run->st.run_id);
	/* and its Slurm job steps (executor slurm), which run on other hosts */
	logs = al_xprintf("%s/" AL_RUN_SLURM_DIR, run->dir);
	agents = al_slurm_cancel_left(logs);
	free(logs);
	if (agents)
		fprintf(stderr, "ailoop: cancelled %d slurm job%s the interrupted run left running "
			"(%s)\n", agents, agents == 1 ? "" : "s", run->st.run_id);
	locks = al_git_clear_stale_locks(git, run->st.branch);
	if (locks)
		fprintf(stderr, "ailoop: removed %d stale git lock file%s\n", locks,
			locks == 1 ? "" : "s");
	return 0;
}

/*
 * The same for every other run a killed ailoop left (its status says it
 * was not done, and no live ailoop holds it), before a run starts or
 * resumes here: their agents would go on changing the work tree under it,
 * and their work would land in its commits. `except`: the run being
 * resumed, cleaned up on its own.
 */
static void cleanup_others(struct al_git *git, const char *except)
{
	char **ids;
	size_t n;

	if (al_runs_list(&ids, &n) < 0)
		return;
	for (size_t i = 0; i < n; i++) {
		struct al_run *run;
		char *holder;

		if ((except && !strcmp(ids[i], except)) || al_run_open(&run, ids[i]) < 0)
			continue;
		holder = al_run_lock_holder(run->dir);
		if (!holder && al_status_resumable(run->st.status))
			cleanup_after_crash(git, run);
		free(holder);
		al_run_free(run);
	}
	al_runs_list_free(ids, n);
}

/*
 * Checks out `branch`, for run `id`. What is in the way may be the state of
 * another run, interrupted where HEAD is, newer than its last commit: the
 * message says which run, for the way out is not to commit it. Else, with
 * HEAD on branch `current`, it says how to keep what an agent committed
 * there (it may have moved HEAD).
 */
static int checkout_for(struct al_git *git, const char *branch, const char *id,
			const char *current)
{
	char *conflict = NULL, *other = NULL, *why;
	const char *runs, *end;
	int rc = al_git_checkout(git, branch, &conflict);

	if (rc == 0 || rc == AL_ENOTFOUND) /* or checked out in another worktree: said */
		return rc;
	runs = conflict && al_starts_with(conflict, AL_RUNS_DIR "/") ? conflict + sizeof(AL_RUNS_DIR)
								      : NULL;
	if (runs && (end = strchr(runs, '/')) && strncmp(runs, id, (size_t)(end - runs)))
		other = al_strndup(runs, (size_t)(end - runs));
	why = al_strdup(al_errmsg());
	if (other)
		rc = al_err(rc, "cannot check out branch '%s' for run %s: the unfinished state of "
			    "run %s is in the way ('%s'); resume that run first ('ailoop resume "
			    "%s'), or put its state aside ('git stash -u') and resume this one",
			    branch, id, other, conflict, other);
	else if (current)
		rc = al_err(rc, "%s; HEAD is on branch '%s': if an agent committed there on top "
			    "of the run, keep its commits with 'git branch -f %s %s && git "
			    "checkout %s', else commit or stash what is in the way; then resume "
			    "the run", why, current, branch, current, branch);
	free(why);
	free(other);
	free(conflict);
	return rc;
}

struct run_start {
	const char *run_id;
	char oid[AL_OID_HEX];
};

/* The commit the run started on (its [run-start]): stops the walk there. */
static int find_run_start(const char *oid, const char *message, int64_t time, void *data)
{
	struct run_start *start = data;
	struct al_iteration it;
	int stop = 0;

	(void)time;
	if (al_iteration_parse(&it, message)) {
		stop = al_iteration_starts_run(&it) &&
		       (!it.run_id || !strcmp(it.run_id, start->run_id));
		if (stop)
			snprintf(start->oid, sizeof(start->oid), "%s", oid);
		al_iteration_release(&it);
	}
	return stop;
}

/* Whether the tree of `rev` has the flow at `flow`. */
static bool has_flow(struct al_git *git, const char *rev, const char *flow)
{
	struct al_strbuf text = AL_STRBUF_INIT;
	bool has = al_git_read(git, rev, flow, &text) == 0;

	al_strbuf_release(&text);
	return has;
}

/*
 * What of the run's flow and the files it names the work tree lost under
 * `rev`, each after a space: the paths `named_in` (the flow's text) names,
 * or with the flow gone (NULL), the flow and all that .ai-loop lost.
 */
static void lost_definitions(struct al_git *git, const char *rev, const char *flow,
			     const char *named_in, struct al_strbuf *lost)
{
	/* one outside .ai-loop (--flow) */
	if (!named_in && !al_starts_with(flow, ".ai-loop/") && has_flow(git, rev, flow))
		al_strbuf_addf(lost, " %s", flow);
	al_cli_lost(git, rev, ".ai-loop", AL_RUNS_DIR, named_in, lost);
}

/*
 * The run's flow, or a file it names, is gone from the work tree (an
 * agent's doing): where git still has it, at HEAD, or else (its deletion
 * committed with the step) in the commit the run started on, and how to
 * restore it.
 */
static void lost_advice(struct al_git *git, const struct al_run *run)
{
	struct run_start start = { .run_id = run->st.run_id, .oid = "" };
	struct al_strbuf lost = AL_STRBUF_INIT, text = AL_STRBUF_INIT;
	const char *rev = "HEAD", *flow = run->st.flow, *named_in;
	bool flow_gone = al_strbuf_read_file(&text, flow, 0) < 0;

	named_in = flow_gone ? NULL : text.buf ? text.buf : "";
	lost_definitions(git, rev, flow, named_in, &lost);
	if (!lost.len || (flow_gone && !has_flow(git, rev, flow))) {
		al_strbuf_reset(&lost);
		al_git_walk(git, "HEAD", NULL, find_run_start, &start);
		rev = *start.oid ? start.oid : NULL;
		if (rev)
			lost_definitions(git, rev, flow, named_in, &lost);
	}
	/* a flow git does not have cannot be restored, and the rest is of no use without it */
	if (lost.len && (!flow_gone || has_flow(git, rev, flow)))
		fprintf(stderr, "ailoop: the run's %s in %s: git checkout %s --%s && "
			"ailoop resume %s\n", flow_gone ? "flow is" : "files the flow names are",
			rev == start.oid ? "the commit it started on" : "its last commit", rev,
			lost.buf, run->st.run_id);
	al_strbuf_release(&text);
	al_strbuf_release(&lost);
}

/*
 * Checks out the run's branch. A run killed right after it started may
 * have recorded a branch it never made: then nothing was committed yet, and
 * the branch is made where the run started.
 */
static int enter_branch(struct al_git *git, const struct al_run *run)
{
	char *current = NULL;
	int rc = 0;

	if (!run->st.branch)
		return 0;
	if (al_git_head(git, &current, NULL) == 0 && current && !strcmp(current, run->st.branch))
		goto done;
	if (al_git_branch_exists(git, run->st.branch))
		rc = checkout_for(git, run->st.branch, run->st.run_id, current);
	else if (current && run->st.base_branch && !strcmp(current, run->st.base_branch))
		rc = al_git_branch_create(git, run->st.branch);
	else if (current) /* the run is here, on another branch: maybe its own, renamed */
		rc = al_err(AL_ENOTFOUND, "the run's branch '%s' does not exist, and HEAD is on "
			    "branch '%s', not on the run's base branch '%s': if '%s' is the run's "
			    "branch renamed, name it back with 'git branch -m %s %s'; then resume "
			    "the run", run->st.branch, current,
			    run->st.base_branch ? run->st.base_branch : "-", current, current,
			    run->st.branch);
	else
		rc = al_err(AL_ENOTFOUND, "the run's branch '%s' does not exist (and HEAD is not "
			    "on its base branch '%s')", run->st.branch,
			    run->st.base_branch ? run->st.base_branch : "-");
done:
	free(current);
	return rc;
}

static bool run_here(const char *id)
{
	char *path = al_xprintf("%s/%s/run-state.md", AL_RUNS_DIR, id);
	bool here = al_file_exists(path);

	free(path);
	return here;
}

/*
 * The newest resumable run that HEAD holds and the work tree lacks (an
 * agent's `rm -rf .ai-loop/runs`, then a kill): NULL if none.
 */
static char *run_gone_from_tree(struct al_git *git)
{
	char **ids = NULL, *found = NULL;
	size_t n = 0;

	if (al_git_ls(git, "HEAD", AL_RUNS_DIR, &ids, &n) < 0)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		struct al_strbuf text = AL_STRBUF_INIT;
		struct al_run_state st;
		char *path = al_xprintf("%s/%s/run-state.md", AL_RUNS_DIR, ids[i]);

		if (al_starts_with(ids[i], "run_") && !al_file_exists(path) &&
		    al_git_read(git, "HEAD", path, &text) == 0 &&
		    al_run_state_parse(&st, path, text.buf, text.len) == 0) {
			if (al_status_resumable(st.status) &&
			    (!found || al_run_id_cmp(ids[i], found) > 0)) {
				free(found);
				found = al_strdup(ids[i]);
			}
			al_run_state_release(&st);
		}
		al_strbuf_release(&text);
		free(path);
	}
	al_strv_free(ids, n);
	return found;
}

/* `lock_fd`: the work tree's lock if the caller holds it, else -1 */
/*
 * The newest run, ended: killed after its last commit, it is over, but its
 * root's episode may not be recorded yet.
 */
static void record_ended(struct al_git *git)
{
	struct al_run *run = NULL;
	char **ids = NULL;
	size_t n = 0;

	if (al_runs_list(&ids, &n) == 0 && n && al_run_open(&run, ids[0]) == 0)
		al_exec_ended_run_episode(git, run);
	al_run_free(run);
	al_runs_list_free(ids, n);
}

static int resume(const char *id, bool force, bool json, bool quiet, int lock_fd)
{
	struct al_diags diags = AL_DIAGS_INIT;
	struct al_progress progress;
	struct al_exec ex = { 0 };
	struct al_result res = { 0 };
	struct al_flow *flow = NULL;
	struct al_git *git = NULL;
	struct al_run *run = NULL;
	char *picked = NULL, *locked = NULL, *damaged = NULL, *elsewhere = NULL, sha[65];
	int rc, code = 0, own_lock = -1;
	bool named = id, retry = false;

	if ((rc = al_git_open(&git)) < 0) {
		code = al_cli_fail(AL_EXIT_NOINPUT, "%s", al_errmsg());
		goto done;
	}
	/* before a run is picked or a branch checked out: another may be live here */
	if (lock_fd < 0 && (code = al_cli_lock_worktree(git, &own_lock)) != 0)
		goto done;
	if (lock_fd < 0)
		lock_fd = own_lock;
	al_cli_ignore_runs(git); /* a run an older ailoop started */
	if (id && !run_here(id)) {
		picked = al_run_on_branches(git, id, true, &elsewhere);
		id = picked ? picked : id;
	} else if (!id && !(id = picked = find_resumable(git, &locked, &damaged)) && !locked) {
		id = picked = al_run_on_branches(git, NULL, true, &elsewhere);
	}
	if (id && elsewhere) {
		/* its directory is on its branch: check that out first */
		fprintf(stderr, "ailoop: run %s is on branch %s: checking it out\n", id, elsewhere);
		if ((rc = checkout_for(git, elsewhere, id, NULL)) < 0) {
			code = al_cli_fail(al_cli_exit_code(rc), "%s", al_errmsg());
			goto done;
		}
	}
	if (!id) {
		if (locked) {
			code = al_cli_fail(AL_EXIT_TEMPFAIL, "%s", locked);
		} else if (damaged) { /* the newest run we cannot read may be the one */
			char *nl = strchr(damaged, '\n'), *dir;

			*nl = '\0';
			code = al_cli_fail(AL_EXIT_DATAERR, "%s", nl + 1);
			dir = al_xprintf("%s/%s", AL_RUNS_DIR, damaged);
			al_cli_damage_advice(dir, damaged);
			free(dir);
		} else if ((picked = run_gone_from_tree(git))) {
			code = al_cli_fail(AL_EXIT_NOINPUT, "the files of run %s are gone from the work "
					   "tree (something removed them), but its last commit holds "
					   "them: put them back, then resume:\n    git checkout HEAD -- "
					   "%s && ailoop resume %s", picked, AL_RUNS_DIR, picked);
		} else {
			record_ended(git);
			code = al_cli_fail(AL_EXIT_NOINPUT, "no run to resume in %s", AL_RUNS_DIR);
		}
		goto done;
	}
	if ((rc = al_run_open(&run, id)) < 0) {
		code = al_cli_fail(al_cli_exit_code(rc), "%s", al_errmsg());
		if (rc == AL_EINVALID) {
			char *dir = al_xprintf("%s/%s", AL_RUNS_DIR, id);

			al_cli_damage_advice(dir, id);
			free(dir);
		}
		goto done;
	}
	al_signals_install(); /* from here on a signal pauses the run, whenever it comes */
	if ((rc = al_run_lock(run)) < 0) {
		code = al_cli_fail(al_cli_exit_code(rc), "%s", al_errmsg());
		goto done;
	}
	al_worktree_lock_name(lock_fd, run->st.run_id);
	if (cleanup_after_crash(git, run) < 0) {
		code = al_cli_fail(AL_EXIT_SOFTWARE, "%s", al_errmsg());
		goto done;
	}
	cleanup_others(git, run->st.run_id);
	/* a run that an agent's error ended is tried again when it is named */
	retry = !resumable(git, run) && named && al_exec_retry(run, true) == 0;
	if (!resumable(git, run) && !retry) {
		code = al_cli_fail(AL_EXIT_USAGE, "run %s is %s: there is nothing to resume",
				   run->st.run_id, run->st.status);
		goto done;
	}
	if ((rc = enter_branch(git, run)) < 0 || (rc = al_git_follow(git)) < 0 ||
	    (rc = al_exec_catch_up(git, run)) < 0) {
		code = al_cli_fail(al_cli_exit_code(rc), "%s", al_errmsg());
		goto done;
	}
	if ((code = al_cli_load_flow(run->st.flow, &diags, &flow)) != 0) {
		lost_advice(git, run);
		goto done;
	}
	al_sha256_hex(flow->text, flow->text_len, sha);
	if (run->st.flow_sha256 && strcmp(sha, run->st.flow_sha256)) {
		bool limits_only = run->st.flow_sha256_except_limits &&
				   !strcmp(run->st.flow_sha256_except_limits,
					   al_flow_sha256_except_limits(flow));

		if (limits_only) {
			fprintf(stderr, "ailoop: %s changed since run %s started in its limits "
				"or hooks only: going on with them as they are now\n", flow->file,
				run->st.run_id);
		} else if (!force) {
			code = al_cli_fail(AL_EXIT_DATAERR, "%s changed since run %s started: resume "
					   "with --force to go on with the flow as it is now",
					   flow->file, run->st.run_id);
			goto done;
		}
		free(run->st.flow_sha256);
		run->st.flow_sha256 = al_strdup(sha);
	}
	if ((rc = al_exec_check_flow(flow)) < 0) {
		code = al_cli_fail(al_cli_exit_code(rc), "%s", al_errmsg());
		goto done;
	}
	if (!strcmp(run->st.status, "blocked"))
		fprintf(stderr, "ailoop: run %s was blocked (by a circuit breaker or a spent budget): "
			"resetting the breakers and acting again\n", run->st.run_id);
	if (al_status_resumable(run->st.status)) {
		free(run->st.status);
		run->st.status = al_strdup("running");
	}
	if (retry)
		fprintf(stderr, "ailoop: run %s ended in an agent's error: running the step that "
			"failed again, as the next iteration\n", run->st.run_id);
	if ((rc = retry ? al_exec_retry(run, false) : al_run_save(run)) < 0) {
		code = al_cli_fail(AL_EXIT_SOFTWARE, "%s", al_errmsg());
		goto done;
	}
	al_progress_init(&progress, quiet);
	al_progress_note(&progress, "ailoop: resuming run %s at %s", run->st.run_id,
			 run->st.active_node_path ? run->st.active_node_path : "its start");
	ex.flow = flow;
	ex.git = git;
	ex.run = run;
	ex.progress = &progress;
	ex.resuming = true;
	rc = al_exec_run(&ex, &res);
	al_progress_end(&progress);
	code = al_cli_report_run(&ex, rc, json);
	if (rc != AL_EINTR && !(rc < 0 && rc != AL_EAGENT))
		al_run_unlock(run);
	al_result_release(&res);
done:
	al_run_free(run);
	al_worktree_unlock(own_lock);
	al_flow_free(flow);
	al_diags_release(&diags);
	al_git_free(git);
	free(picked);
	free(locked);
	free(damaged);
	free(elsewhere);
	return code;
}

static int refuse_new(const char *id)
{
	return al_cli_fail(AL_EXIT_USAGE, "run %s can be resumed: continue it with 'ailoop "
			   "resume', or start another with 'ailoop run --new'", id);
}

bool al_cli_check_resumable(bool new_run, bool json, int lock_fd, int *code)
{
	struct al_git *git = NULL;
	char *id, *locked, answer[16] = "";
	bool handled = true;

	*code = 0;
	if (al_git_open(&git) < 0)
		return false;
	id = find_resumable(git, &locked, NULL);
	if (locked) { /* one work tree, one live run: two would commit each other's work */
		*code = al_cli_fail(AL_EXIT_TEMPFAIL, "%s: wait for it to end, or stop it", locked);
		free(locked);
	} else if (id && !new_run && isatty(0) && isatty(2)) {
		fprintf(stderr, "ailoop: run %s was interrupted. Resume it (Enter) or start a new "
			"run (n)? [R/n] ", id);
		if (!fgets(answer, sizeof(answer), stdin))
			answer[0] = '\0';
		if (answer[0] == 'n' || answer[0] == 'N')
			new_run = true;
		else if (strchr("rRyY\n", answer[0]) && answer[0]) {
			al_git_free(git); /* resume opens the repository its way */
			git = NULL;
			*code = resume(id, false, json, false, lock_fd);
		}
		else
			*code = refuse_new(id);
	} else if (id && !new_run) {
		*code = refuse_new(id);
	}
	if (!locked && (!id || new_run)) {
		cleanup_others(git, NULL); /* a new run starts */
		handled = false;
	}
	al_git_free(git);
	free(id);
	return handled;
}

int cmd_resume(int argc, char **argv)
{
	static const struct option longs[] = {
		{ "force", no_argument, NULL, 'F' },
		{ "json", no_argument, NULL, 'j' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 0 },
		{ NULL, 0, NULL, 0 },
	};
	bool force = false, json = false, quiet = false;
	int c, code = 0;

	while ((c = al_cli_getopt(argc, argv, "q", longs, &code)) != -1) {
		if (c == '?')
			return code;
		if (c == 'F')
			force = true;
		else if (c == 'j')
			json = true;
		else if (c == 'q')
			quiet = true;
	}
	if ((code = al_cli_operands(argc, argv, 0, 1)) || (code = al_cli_enter_repo()))
		return code;
	return resume(optind < argc ? argv[optind] : NULL, force, json, quiet, -1);
}
