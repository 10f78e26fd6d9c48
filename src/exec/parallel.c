#include "ailoop/exec/condition_eval.h"
#include "ailoop/exec/exec.h"
#include "parallel_int.h"
#include "ailoop/base/fsutil.h"
#include "ailoop/store/history.h"
#include "ailoop/exec/invoke.h"
#include "ailoop/git/git.h"
#include "ailoop/base/progress.h"
#include "ailoop/store/memory.h"
#include "ailoop/base/signals.h"
#include "ailoop/base/util.h"
#include "ailoop/git/worktree.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <sys/stat.h>
#include <unistd.h>

/*
 * The parallel node (SPEC §3.1): its children run at once, each in an
 * ailoop process of its own (forked), at most max_concurrency at a time.
 * It succeeds once success_threshold children succeeded (default all) and
 * fails once failure_threshold failed (default 1) or success has become
 * impossible; the children still running are then stopped and skipped.
 *
 *   children (start them, wait, record each end) -> done
 *
 * Its state's children-done has one character per child: '.' not
 * finished, 'c' succeeded, 'f' failed, 's' skipped (stopped or never
 * started once the node had its result). Each end is written as soon as
 * this process learns of it, before anything else happens; a resume starts
 * again only the children still at '.', which continue from their own
 * state on disk. A child's agent error ends the run (fail-fast): the other
 * children pause, and a retry (al_exec_retry) runs the failed step again
 * and continues them.
 * Once the node has its result, the unfinished children are marked 's'
 * first, then stopped (SIGTERM: a child pauses its agents as for an
 * interrupt), and then their own states are made final (status skipped),
 * so that a kill anywhere in between ends the same way on resume.
 *
 * A child process writes its nodes' states, the events and its commits,
 * never run-state.md (the execution stack stops at the parallel node);
 * commits are serialized by an flock. It reports its end by its exit
 * code, and how many commits it made and an error through a pipe.
 *
 * With `isolation: worktree`, each child works in a git worktree of its
 * own (<run>/worktrees/<child>, on branch <run branch>--<child> made from
 * the node's start commit), made before it starts and kept until the run
 * completes: its agents, sensors and commits happen there, while its
 * states and events are written in the run's directory as usual (absolute
 * paths). Its commits leave the run's files out: those are the parent's.
 * Once the node has its result, the children that succeeded are merged
 * into the run's branch in child order, a merge commit each (al_parallel_merge()).
 * Before an unfinished child starts or continues, what the user changed
 * in the main work tree (with --allow-dirty, or while the run was
 * stopped) is brought into its worktree (carry()).
 */

enum { KID_COMPLETE, KID_FAILED, KID_INTERRUPTED, KID_ERROR };

struct kid {
	pid_t pid;       /* 0: not started (or reaped) */
	int fd;          /* read end of its message pipe (non-blocking); -2 once it closed */
	struct al_strbuf msg;
};

/* Reads what the child has written to its pipe so far; at its end, closes it. */
static void drain(struct kid *kid)
{
	char buf[4096];
	ssize_t r;

	if (kid->fd < 0)
		return;
	while ((r = read(kid->fd, buf, sizeof(buf))) > 0 && kid->msg.len < 65536)
		al_strbuf_add(&kid->msg, buf, (size_t)r);
	if (r == 0) {
		close(kid->fd);
		kid->fd = -2; /* closed: the child is reaped on its own */
	}
}

static int success_needed(const struct al_node *n)
{
	return n->success_threshold ? n->success_threshold : (int)n->nchildren;
}

static int failures_allowed(const struct al_node *n)
{
	return n->failure_threshold ? n->failure_threshold : 1;
}

static int count(const struct al_node_run *nr, char c)
{
	int k = 0;

	for (const char *p = nr->st.done; *p; p++)
		k += *p == c;
	return k;
}

/* The node's result once it has one: NULL while undecided. */
static const char *verdict(const struct al_node_run *nr, char *msg, size_t size)
{
	const struct al_node *n = nr->n;
	int ok = count(nr, 'c'), failed = count(nr, 'f'), open = count(nr, '.');

	if (ok >= success_needed(n)) {
		snprintf(msg, size, "%d of %zu children succeeded", ok, n->nchildren);
		return "complete";
	}
	if (failed >= failures_allowed(n)) {
		snprintf(msg, size, "%d of %zu children failed", failed, n->nchildren);
		return "failed";
	}
	if (ok + open < success_needed(n)) {
		snprintf(msg, size, "%d of %zu children succeeded: %d needed", ok, n->nchildren,
			 success_needed(n));
		return "failed";
	}
	return NULL;
}

static char *agents_record(const struct al_exec *ex, const struct al_node *c)
{
	char *path = al_xprintf("%s/" AL_RUN_AGENTS_FILE ".%s", ex->run->dir, c->path);

	for (char *p = path + strlen(path) - strlen(c->path); *p; p++)
		if (*p == '/')
			*p = '.';
	return path;
}

static bool isolated(const struct al_node *n)
{
	return n->isolation == AL_ISOLATION_WORKTREE;
}

/* How many children of parallel nodes with worktrees, at or below `n`, have id `id`. */
static size_t worktree_ids(const struct al_node *n, const char *id)
{
	size_t uses = 0;

	for (size_t i = 0; i < al_node_nkids(n); i++) {
		const struct al_node *kid = al_node_kid(n, i);

		uses += (n->type == AL_NODE_PARALLEL && isolated(n) && !strcmp(kid->id, id)) +
			worktree_ids(kid, id);
	}
	return uses;
}

/*
 * The child's key among the run's worktrees and branches: its id, or, if
 * a child of another parallel node with worktrees has the same id (two
 * such nodes may run at once), its path with '+' for '/'. Ids have
 * neither '+' nor '.', so no key is another's, nor a resolver's
 * `<key>.resolve`.
 */
char *al_parallel_wt_key(const struct al_node *c)
{
	const struct al_node *root = c;
	char *key;

	while (root->parent)
		root = root->parent;
	if (worktree_ids(root, c->id) < 2)
		return al_strdup(c->id);
	key = al_strdup(c->path);
	for (char *p = key; *p; p++)
		if (*p == '/')
			*p = '+';
	return key;
}

/* The child's worktree, its branch and git's name for it. Caller frees. */
static char *wt_path(const struct al_exec *ex, const struct al_node *c)
{
	char *key = al_parallel_wt_key(c), *path = al_xprintf("%s/" AL_WORKTREES_DIR "/%s", ex->run->abs_dir, key);

	free(key);
	return path;
}

char *al_parallel_wt_branch(const struct al_exec *ex, const struct al_node *c)
{
	const char *b = ex->run->st.branch;
	char *key = al_parallel_wt_key(c), *branch = b && *b ? al_xprintf("%s--%s", b, key)
						 : al_xprintf("ai-loop/%s--%s", ex->run->st.run_id, key);

	free(key);
	return branch;
}

char *al_parallel_wt_name(const struct al_exec *ex, const struct al_node *c)
{
	char *key = al_parallel_wt_key(c), *name = al_xprintf("ailoop-%s-%s", ex->run->st.run_id, key);

	free(key);
	return name;
}

/*
 * The child process moves into its worktree: the run's files are named by
 * absolute paths from then on, and its commits leave them out.
 */
static int enter_worktree(struct al_exec *ex, const struct al_node *c)
{
	char *path = wt_path(ex, c);
	int rc = 0;

	if (chdir(path) < 0) {
		rc = al_err(AL_ERROR, "cannot enter worktree '%s': %s", path, strerror(errno));
		free(path);
		return rc;
	}
	free(ex->root);
	ex->root = path;
	free(ex->run->dir);
	ex->run->dir = al_strdup(ex->run->abs_dir);
	free(ex->run->state_path);
	ex->run->state_path = al_xprintf("%s/run-state.md", ex->run->dir);
	free(ex->run->events_path);
	ex->run->events_path = al_xprintf("%s/events.jsonl", ex->run->dir);
	ex->isolated = true;
	ex->run_committed = true; /* its commits do not add the run's directory */
	return 0;
}

/*
 * A child in a worktree that failed with `rc`: if its worktree is gone
 * (an agent's `git worktree remove`, a sibling's among them), that is
 * the failure, named with what was removed, and an agent's doing like
 * HEAD moved (AL_EMOVED: the run pauses; a resume makes them again),
 * not the internal error libgit2's missing HEAD would be.
 */
static int worktree_gone(struct al_node_run *nr, const struct al_node *c, struct al_git *git,
			 int rc)
{
	char *path = wt_path(nr->ex, c), *branch = al_parallel_wt_branch(nr->ex, c);

	if (!al_dir_exists(path)) {
		bool kept = git && al_git_branch_exists(git, branch);

		rc = al_err(AL_EMOVED, "parallel child '%s': its worktree '%s'%s%s%s removed while "
			    "it worked (as 'git worktree remove' does): the run is paused, and "
			    "'ailoop resume' makes %s again from the parallel node's start",
			    c->path, path, kept ? "" : " and its branch '", kept ? "" : branch,
			    kept ? " was" : "' were", kept ? "it" : "them");
	}
	free(path);
	free(branch);
	return rc;
}

/*
 * The child process: its own git handle, working memory, condition cache,
 * agents' record and signal pipe (nothing of the parent's that holds a
 * file offset or a libgit2 object), then the child node, then its exit.
 */
static void kid_main(struct al_node_run *nr, size_t k, int msg_fd, pid_t parent)
{
	struct al_exec *ex = nr->ex;
	const struct al_node *c = nr->n->children[k];
	struct al_git *git = NULL;
	struct al_result res = { 0 };
	char *lock, *cache, *text;
	int rc, code = 0;

	prctl(PR_SET_PDEATHSIG, SIGKILL); /* killed with the parent, like one process */
	if (getppid() != parent)
		_exit(128 + SIGKILL);
	setpgid(0, 0); /* the parent alone passes a Ctrl-C on, once */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	al_signals_forked();
	ex->run->forked = true;
	ex->progress->tty = ex->progress->live = false; /* one line per step */
	ex->base_frame = ex->nframes;
	ex->commits_since = nr->st.base_commit;
	ex->commits = 0;
	rc = isolated(nr->n) ? enter_worktree(ex, c) : 0;
	if (!isolated(nr->n)) /* its siblings' nodes are theirs to commit */
		al_git_leave_siblings(nr->dir, c->id);
	if (ex->isolated) /* its commits do not carry the run's state (git.h) */
		al_durable_relax(false);
	ex->agents_file = agents_record(ex, c);
	al_memory_free(ex->memory);
	al_cond_cache_free(ex->cond_cache);
	ex->memory = NULL;
	ex->cond_cache = NULL;
	cache = al_xprintf("%s/" AL_COND_CACHE_FILE, ex->run->dir);
	if (rc == 0)
		rc = al_git_open(&git);
	if (rc == 0)
		rc = al_git_follow(git);
	if (rc == 0) {
		ex->git = git;
		al_exec_watch_policy(ex);
		lock = al_xprintf("%s/ailoop-commit.lock", al_git_dir(git));
		ex->commit_lock = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
		if (ex->commit_lock < 0)
			rc = al_err(AL_ERROR, "cannot open '%s': %s", lock, strerror(errno));
		free(lock);
	}
	if (rc == 0)
		rc = al_memory_open(&ex->memory, ex->run->dir);
	if (rc == 0)
		rc = al_cond_cache_open(&ex->cond_cache, cache);
	free(cache);
	if (rc == 0)
		rc = al_exec_node(ex, c, nr->task, nr->parent_label, false, nr->deadline, &res);
	if (rc < 0 && rc != AL_EINTR && ex->isolated)
		rc = worktree_gone(nr, c, git, rc);
	if (rc == 0)
		rc = al_durable_point(); /* what the child wrote last, before the parent reads it */
	if (rc == 0)
		code = res.success ? KID_COMPLETE : KID_FAILED;
	else if (rc == AL_EINTR)
		code = KID_INTERRUPTED;
	else
		code = KID_ERROR;
	/* what the parent adds up: the commits made here, and an error */
	text = al_xprintf("%zu %d %d %s", ex->commits, ex->outer_break, rc,
			  rc < 0 && rc != AL_EINTR ? al_errmsg() : "");
	if (write(msg_fd, text, strlen(text)) < 0)
		text[0] = '\0'; /* the parent is gone */
	free(text);
	al_progress_end(ex->progress);
	fflush(NULL);
	_exit(code);
}

/*
 * The user's changes in the main work tree (`changes`) reach child `k`'s
 * worktree before it starts or continues; AL_ECONFLICT if the child
 * changed the same file otherwise. `existing`: only if its worktree is
 * there already (a resumed child), else it is made first.
 */
static int carry(struct al_node_run *nr, size_t k, const struct al_wt_changes *changes,
		 bool existing)
{
	const struct al_node *c = nr->n->children[k];
	char *path = wt_path(nr->ex, c);
	int rc = 0;

	if (al_worktree_changes_count(changes) && (!existing || al_dir_exists(path))) {
		rc = al_worktree_carry(changes, path, c->id);
		if (rc > 0)
			al_run_event(nr->ex->run, "parallel_carry", "{s:s, s:s, s:i}", "node",
				     nr->n->path, "child", c->id, "files", rc);
		rc = rc < 0 ? rc : 0;
	}
	free(path);
	return rc;
}

static int start(struct al_node_run *nr, struct kid *kids, size_t k,
		 const struct al_wt_changes *changes)
{
	int fds[2];
	pid_t pid, parent = getpid();

	if (isolated(nr->n)) { /* its worktree first: made here, one at a time */
		const struct al_node *c = nr->n->children[k];
		char *path = wt_path(nr->ex, c), *name = al_parallel_wt_name(nr->ex, c);
		char *branch = al_parallel_wt_branch(nr->ex, c);
		int rc = al_worktree_ensure(path, name, branch, nr->st.base_commit);

		if (rc == 0)
			rc = carry(nr, k, changes, false);
		free(path);
		free(name);
		free(branch);
		if (rc < 0)
			return rc;
	}

	/* the agents of a child that dies come here, to be reaped */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) < 0)
		return al_err(AL_ERROR, "cannot start child '%s': %s", nr->n->children[k]->id,
			      strerror(errno));
	al_progress_end(nr->ex->progress);
	al_crash_setup(); /* the crash points' count is shared with the child */
	fflush(NULL); /* nothing buffered is written twice */
	if ((pid = fork()) < 0) {
		close(fds[0]);
		close(fds[1]);
		return al_err(AL_ERROR, "cannot start child '%s': %s", nr->n->children[k]->id,
			      strerror(errno));
	}
	if (pid == 0) {
		close(fds[0]);
		kid_main(nr, k, fds[1], parent);
	}
	close(fds[1]);
	setpgid(pid, pid); /* the child does it too: whichever runs first */
	kids[k].pid = pid;
	kids[k].fd = fds[0];
	return 0;
}

/*
 * A child ran break_loop for a loop around the parallel node: the loop
 * learns it here, before the child's end is recorded (killed in between,
 * the child's action is found done on resume, and the loop knows).
 */
static int outer_break(struct al_node_run *nr)
{
	struct al_exec *ex = nr->ex;

	for (size_t i = ex->nframes - 1; i-- > 0;) {
		struct al_node_run *loop = ex->frames[i].nr;

		if (ex->frames[i].node->type != AL_NODE_LOOP)
			continue;
		loop->st.brk = true;
		return al_node_save(loop);
	}
	return 0;
}

/* The child has exited with `status`: records its end, and returns an error it reported. */
static int ended(struct al_node_run *nr, struct kid *kid, size_t k, int status)
{
	const struct al_node *c = nr->n->children[k];
	pid_t pid = kid->pid;
	char *end = NULL;
	long code = 0;
	int rc = 0, brk = 0;

	/*
	 * "<commits> <break_loop> <rc> <message>", written just before the
	 * child exited: it may have come after the pipe was last read.
	 */
	drain(kid);
	if (kid->msg.len) {
		nr->ex->commits += strtoul(kid->msg.buf, &end, 10);
		brk = (int)strtol(end, &end, 10);
		code = strtol(end, &end, 10);
	}
	if (kid->fd >= 0)
		close(kid->fd);
	kid->fd = -1;
	kid->pid = 0;
	if (brk && (rc = outer_break(nr)) < 0) {
		al_strbuf_release(&kid->msg);
		return rc;
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == KID_COMPLETE) {
		nr->st.done[k] = 'c';
	} else if (WIFEXITED(status) && WEXITSTATUS(status) == KID_FAILED) {
		nr->st.done[k] = 'f';
	} else if (WIFEXITED(status) && WEXITSTATUS(status) == KID_INTERRUPTED) {
		if (nr->st.done[k] == '.') /* stopped by a signal: it continues on resume */
			rc = AL_EINTR;
	} else if (WIFEXITED(status) && WEXITSTATUS(status) == KID_ERROR) {
		if (code < 0 && code > -1000 && end && *end == ' ')
			rc = al_err((int)code, "%s", end + 1);
		else
			rc = al_err(AL_ERROR, "parallel child '%s' failed", c->path);
	} else {
		rc = al_err(AL_ERROR, "parallel child '%s' (process %ld) died: %s", c->path,
			    (long)pid, WIFSIGNALED(status) ? strsignal(WTERMSIG(status))
								: "exit status unknown");
	}
	al_strbuf_release(&kid->msg);
	return rc;
}

static void signal_all(struct kid *kids, size_t n, int sig)
{
	for (size_t i = 0; i < n; i++)
		if (kids[i].pid > 0)
			kill(kids[i].pid, sig);
}

/* Waits for something to happen: a child's message or exit, or a signal. */
static void wait_some(struct kid *kids, size_t n)
{
	struct pollfd fds[n + 1];
	size_t m = 0;
	int timeout = 1000;

	for (size_t i = 0; i < n; i++) {
		if (kids[i].pid > 0 && kids[i].fd == -2)
			timeout = 5; /* its pipe closed: its exit is a moment away */
		if (kids[i].pid <= 0 || kids[i].fd < 0)
			continue;
		fds[m].fd = kids[i].fd;
		fds[m++].events = POLLIN;
	}
	if (al_signals_fd() >= 0) {
		fds[m].fd = al_signals_fd();
		fds[m++].events = POLLIN;
	}
	/* a pipe closes when its child exits, which wakes this up */
	if (poll(fds, m, timeout) > 0)
		al_signals_drain();
	for (size_t i = 0; i < n; i++)
		if (kids[i].pid > 0)
			drain(&kids[i]);
}

/* Marks every unfinished child skipped, before any is stopped. */
static int decide(struct al_node_run *nr)
{
	for (char *p = nr->st.done; *p; p++)
		if (*p == '.')
			*p = 's';
	return al_node_save(nr);
}

/* Makes the state of a skipped child (or a node below it) final, so that no resume continues it. */
static int skip_state(struct al_node_run *nr, const struct al_node *c)
{
	struct al_exec *ex = nr->ex;
	struct al_node_state st;
	struct al_strbuf task = AL_STRBUF_INIT, result = AL_STRBUF_INIT;
	char *dir = al_run_node_dir(ex->run, c->path);
	char *state = al_xprintf("%s/orchestrator-output.md", dir);
	char *task_path = al_xprintf("%s/task.md", dir);
	char *result_path = al_xprintf("%s/result-output.md", dir);
	int rc = al_node_state_read(&st, state);

	if (rc < 0) /* never started */
		rc = rc == AL_ENOTFOUND ? 0 : rc;
	else if (!strcmp(st.run_id, ex->run->st.run_id) && !al_node_state_final(&st) &&
		 al_strbuf_read_file(&task, task_path, 0) == 0) {
		al_set_str(&st.status, "skipped");
		al_set_str(&st.summary, "stopped: the parallel node had its result");
		/* (a node below the child was working when the child was stopped) */
		st.phase = AL_PHASE_DONE;
		al_exec_result_head(&result, ex, c, "skipped", NULL, false, st.iteration);
		al_strbuf_addf(&result, "## Summary\n\nStopped: parallel node '%s' had its result "
			       "before this %s ended.\n", nr->n->id,
			       c->parent == nr->n ? "child" : "node");
		rc = al_write_state(result_path, result.buf, result.len);
		if (rc == 0)
			rc = al_node_state_write(&st, state, task.buf);
	}
	al_node_state_release(&st);
	al_strbuf_release(&task);
	al_strbuf_release(&result);
	free(result_path);
	free(task_path);
	free(state);
	free(dir);
	return rc;
}

/* skip_state() of a skipped child and of every node below it. */
struct skip_walk {
	struct al_node_run *nr;
	int rc;
};

static void skip_below(struct al_node *n, void *data)
{
	struct skip_walk *w = data;

	if (w->rc == 0)
		w->rc = skip_state(w->nr, n);
}
/*
 * A child's task, written again if an agent removed it (a sibling's, in
 * the main work tree's run directory) before a commit held it: its state
 * says it ran with this node's task, which is every child's.
 */
static int keep_child_task(struct al_node_run *nr, const struct al_node *c)
{
	char *dir = al_run_node_dir(nr->ex->run, c->path);
	char *state = al_xprintf("%s/orchestrator-output.md", dir);
	char *task = al_xprintf("%s/task.md", dir);
	int rc = 0;

	if (al_file_exists(state) && !al_file_exists(task) && nr->task)
		rc = al_write_state(task, nr->task, strlen(nr->task));
	free(task);
	free(state);
	free(dir);
	return rc;
}

/* The node has its result: the skipped children's states, the event, the end. */
static int conclude(struct al_node_run *nr, int err)
{
	const struct al_node *n = nr->n;
	json_t *skipped = json_array();
	const char *status;
	char msg[512]; /* a conflict names files, branches and why a resolver failed */
	int rc = 0;

	for (size_t k = 0; k < n->nchildren && rc == 0; k++) {
		rc = keep_child_task(nr, n->children[k]);
		if (rc < 0 || nr->st.done[k] != 's')
			continue;
		struct skip_walk w = { nr, 0 };

		json_array_append_new(skipped, json_string(n->children[k]->id));
		al_flow_walk(n->children[k], skip_below, &w);
		rc = w.rc;
	}
	if (rc < 0) {
		json_decref(skipped);
		return rc;
	}
	if (json_array_size(skipped))
		al_run_event(nr->ex->run, "parallel_stop", "{s:s, s:s, s:O}", "node", n->path,
			     "label", nr->st.label, "skipped", skipped);
	json_decref(skipped);
	if (err == AL_EAGENT) /* a child ended the run in error: so does the node */
		return al_node_finish(nr, "error", al_errmsg(), true, NULL);
	if (isolated(n)) {
		bool conflict;

		if ((rc = al_parallel_merge(nr, &conflict, msg, sizeof(msg))) < 0)
			return rc;
		if (conflict)
			return al_node_finish(nr, "failed", msg, false, NULL);
	}
	if (!(status = verdict(nr, msg, sizeof(msg)))) {
		status = "failed"; /* every child ended, and neither threshold was reached */
		snprintf(msg, sizeof(msg), "%d of %zu children succeeded: %d needed",
			 count(nr, 'c'), n->nchildren, success_needed(n));
	}
	if (strcmp(status, "complete") && al_node_timed_out(nr))
		status = "timeout"; /* its children ran out of its time */
	return al_node_finish(nr, status, msg, false, NULL);
}

/* Runs the children: starts them, waits, records their ends, stops them. */
static int run_children(struct al_node_run *nr)
{
	const struct al_node *n = nr->n;
	size_t nk = n->nchildren, running = 0, next = 0;
	size_t limit = n->max_concurrency ? (size_t)n->max_concurrency : nk;
	struct kid *kids = al_calloc(nk ? nk : 1, sizeof(*kids));
	struct al_wt_changes *changes = NULL;
	int rc = 0, signals_seen = al_signals_count();
	bool stopping = verdict(nr, (char[200]){ 0 }, 200) != NULL;

	if (stopping && !count(nr, 's') && count(nr, '.'))
		rc = decide(nr); /* killed between a result and its record */
	/*
	 * The user's changes in the main work tree reach every unfinished
	 * child's worktree, those made already first: a conflict stops the
	 * node before any child starts.
	 */
	if (rc == 0 && !stopping && isolated(n) && count(nr, '.'))
		rc = al_worktree_changes(&changes, AL_RUNS_DIR);
	for (size_t k = 0; k < nk && rc == 0 && changes; k++)
		if (nr->st.done[k] == '.')
			rc = carry(nr, k, changes, true);
	for (size_t k = 0; k < nk; k++)
		kids[k].fd = -1;
	for (;;) {
		char msg[200];

		while (!stopping && rc == 0 && running < limit && !al_signals_count()) {
			while (next < nk && nr->st.done[next] != '.')
				next++;
			if (next == nk)
				break;
			if ((rc = start(nr, kids, next, changes)) < 0)
				break;
			al_progress_note(nr->ex->progress, "ailoop: [%s] %s: child %s started",
					 nr->st.label, n->path, n->children[next]->id);
			next++;
			running++;
		}
		if (rc < 0 && !stopping) { /* the others pause: a resume continues them */
			stopping = true;
			if (rc != AL_EBLOCKED) /* a spent budget lets the calls made end */
				signal_all(kids, nk, SIGTERM);
		}
		if (!running)
			break;
		wait_some(kids, nk);
		if (al_signals_count() > signals_seen) { /* passed on, once each */
			signal_all(kids, nk, SIGINT);
			signals_seen = al_signals_count();
			stopping = true;
		}
		for (size_t k = 0; k < nk; k++) {
			int status, err;
			pid_t got;

			if (kids[k].pid <= 0)
				continue;
			while ((got = waitpid(kids[k].pid, &status, WNOHANG)) < 0 && errno == EINTR)
				;
			if (got != kids[k].pid)
				continue;
			running--;
			/*
			 * An agent's error ends the run: the others pause, as for an
			 * interrupt, and a retry continues them with the failed child.
			 */
			err = ended(nr, &kids[k], k, status);
			if (err < 0 && (rc == 0 || rc == AL_EINTR))
				rc = err;
			if ((err = al_node_save(nr)) < 0 && rc == 0)
				rc = err;
			if (rc < 0 && !stopping) {
				stopping = true;
				if (rc != AL_EBLOCKED)
					signal_all(kids, nk, SIGTERM);
			}
		}
		if (!stopping && rc == 0 && verdict(nr, msg, sizeof(msg))) {
			stopping = true;
			if ((rc = decide(nr)) == 0)
				signal_all(kids, nk, SIGTERM);
		}
	}
	free(kids);
	al_worktree_changes_free(changes);
	if (rc == 0 && al_signals_count() && count(nr, '.'))
		rc = AL_EINTR;
	if (rc < 0 && rc != AL_EAGENT)
		return rc; /* the node stays in its children: a resume continues them */
	return conclude(nr, rc);
}

int al_parallel_run(struct al_exec *ex, const struct al_node *n, const char *task,
		    const char *parent_label, int64_t deadline, struct al_result *res)
{
	struct al_node_run nr;
	bool done = false;
	int rc = al_node_begin(&nr, ex, n, task, parent_label, false, deadline,
			       AL_PHASE_CHILDREN, 0);

	if (rc < 0)
		return rc;
	if (!nr.st.done || strlen(nr.st.done) != n->nchildren) {
		char *branch = NULL, oid[AL_OID_HEX];

		/*
		 * Worktree children branch off here: the run's first commit
		 * (its directory, [run-start]) must be below all of them, or
		 * `ailoop log` and the run's count, which stop there, would
		 * miss every commit made before it. No commit yet: one now.
		 */
		if (isolated(n) && !ex->isolated && !al_exec_run_recorded(ex)) {
			al_set_str(&nr.st.summary, "start: the children work in worktrees");
			rc = al_node_commit(&nr, NULL);
		}
		/* where it starts: its children's commits are all above it */
		if (rc == 0 && (rc = al_git_head(ex->git, &branch, oid)) == 0) {
			al_set_str(&nr.st.base_commit, oid);
			free(nr.st.done);
			nr.st.done = al_calloc(n->nchildren + 1, 1);
			memset(nr.st.done, '.', n->nchildren);
			rc = al_node_save(&nr);
		}
		free(branch);
	}
	/*
	 * The children's state goes into no commit of HEAD's until they are
	 * merged; but a restart may tear the objects they (and the merges)
	 * write in the repository's store, which would be named when written
	 * again: a pending mark, in place at every entry, merges included.
	 */
	if (rc == 0 && isolated(n) && !ex->isolated &&
	    (rc = al_git_unmark_restorable(ex->git)) == 0)
		rc = al_git_mark_pending(ex->git);
	while (!done && rc == 0) {
		if (al_signals_count()) {
			rc = AL_EINTR;
			break;
		}
		switch (nr.st.phase) {
		case AL_PHASE_CHILDREN: rc = run_children(&nr); break;
		case AL_PHASE_COMMIT: /* at the root: the run's end; or a child's error */
			rc = al_node_commit(&nr, NULL);
			done = true;
			break;
		case AL_PHASE_DONE: done = true; break;
		default:
			rc = al_err(AL_EINVALID, "'%s' is damaged: phase %s is not a parallel node's",
				    nr.state_path, al_phase_names[nr.st.phase]);
		}
	}
	return al_node_end(&nr, rc, res);
}
