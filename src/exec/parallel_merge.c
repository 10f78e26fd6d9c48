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
#include <unistd.h>/*
 * A parallel node's children with worktrees (isolation: worktree) merged
 * back, one by one, into the main work tree: a merge commit each, and a
 * conflict handed to the node's resolver agent.
 */

/*
 * A merge commit's message: at the node's path and label, saying
 * `summary`, with [merge] naming child `c` and [merge-branch] `branch`, so
 * that readers tell it from the node's iterations (history.h).
 */
static void merge_message(struct al_strbuf *text, const struct al_node_run *nr,
			  const struct al_node *c, const char *branch, const char *summary)
{
	struct al_commit_fields f = { 0 };

	f.node_path = nr->n->path;
	f.label = nr->st.label;
	f.status = "running";
	f.summary = summary;
	f.sensors = "";
	f.run_id = nr->ex->run->st.run_id;
	f.merge = c->id;
	f.merge_branch = branch;
	al_commit_message(text, &f);
}

/*
 * on_conflict {agent: PATH}: child `c`'s merge conflicts in `files`. The
 * resolver agent works in a worktree of its own (<run>/worktrees/<child>.resolve,
 * at the run branch's commit, the conflicted merge written there with its
 * markers), with the actuator role and its artifacts in
 * <node>/resolve.<child>; then the merge is made with its files, unless it
 * failed or left a marker: *msg says why, and the resolver's worktree stays.
 * Returns 1 if merged, 0 if not, AL_EINTR or an error < 0 (then a resume
 * makes the resolver's worktree again and runs it again).
 */
static int resolve(struct al_node_run *nr, const struct al_node *c, const char *branch,
		   const char *here, const char *files, char *msg, size_t size)
{
	struct al_exec *ex = nr->ex;
	const struct al_node *n = nr->n;
	char *key = al_parallel_wt_key(c);
	char *path = al_xprintf("%s/" AL_WORKTREES_DIR "/%s.resolve", ex->run->abs_dir, key);
	char *name = al_xprintf("ailoop-%s-%s.resolve", ex->run->st.run_id, key);
	char *dir = al_xprintf("%s/resolve.%s", nr->dir, c->id);
	char *out = al_xprintf("%s/resolve-output.md", dir), *task_path = al_xprintf("%s/task.md", dir);
	char *task = al_xprintf("Resolve the merge conflict in %s, between branch '%s' (ours, the "
				"run's branch) and branch '%s' (theirs, child '%s' of parallel node "
				"'%s'). The working directory holds the merge with git's conflict "
				"markers: edit %s so that they hold both changes as they should and "
				"no conflict marker line is left. Do not commit.\n",
				files, here, branch, c->id, n->path, files);
	char *summary = al_xprintf("merge %s, resolved by %s", c->id, n->resolver.path);
	char *left = NULL;
	struct al_strbuf text = AL_STRBUF_INIT;
	struct al_call call;
	struct al_call_ctx ctx = {
		.agent = n->resolver.agent, .role = AL_ROLE_ACTUATOR, .node = n,
		.label = nr->st.label, .dir = dir, .output = out, .task = task,
		.deadline_ms = nr->deadline, .cwd = path,
	};
	int rc;

	if ((rc = al_mkdirs(dir)) < 0 || (rc = al_write_atomic(task_path, task, strlen(task))) < 0 ||
	    (rc = al_worktree_conflicted(path, name, branch)) < 0)
		goto done;
	al_run_event(ex->run, "parallel_resolve", "{s:s, s:s, s:s, s:s}", "node", n->path, "child",
		     c->id, "agent", n->resolver.path, "files", files);
	al_progress_step(ex->progress, nr->st.label, n->path, "resolve", "%s: %s",
			 n->resolver.path, files);
	rc = al_call_run(ex, &ctx, &call);
	al_call_release(&call);
	if (rc == AL_EAGENT) {
		snprintf(msg, size, "conflict: %s differ between '%s' and '%s'; resolver failed: %s",
			 files, here, branch, al_errmsg());
		rc = 0;
		goto done;
	}
	if (rc < 0)
		goto done;
	merge_message(&text, nr, c, branch, summary);
	rc = al_worktree_merge_resolved(branch, text.buf, path, &left);
	if (rc == 2) {
		snprintf(msg, size, "conflict: %s differ between '%s' and '%s'; the resolver left %s",
			 files, here, branch, left);
		rc = 0;
	} else if (rc >= 0) {
		if (rc == 1) {
			ex->commits++;
			al_run_event(ex->run, "parallel_merge", "{s:s, s:s, s:s, s:s}", "node",
				     n->path, "child", c->id, "branch", branch, "resolver",
				     n->resolver.path);
		}
		rc = al_worktree_remove(name);
		rc = rc < 0 ? rc : 1;
	}
done:
	al_strbuf_release(&text);
	free(left);
	free(summary);
	free(task);
	free(task_path);
	free(out);
	free(dir);
	free(name);
	free(path);
	free(key);
	return rc;
}

/*
 * Merges the children that succeeded into the branch checked out here, in
 * child order, a merge commit each; removes the worktree of each merged.
 * A conflict: on_conflict fail stops there (the node fails with `conflict`
 * in *msg), skip leaves that child unmerged. Done again after a kill,
 * it finds the merges made and makes the rest.
 */
int al_parallel_merge(struct al_node_run *nr, bool *conflict, char *msg, size_t size)
{
	struct al_exec *ex = nr->ex;
	const struct al_node *n = nr->n;
	char *here = NULL, oid[AL_OID_HEX];
	int rc = al_git_head(ex->git, &here, oid);

	*conflict = false;
	for (size_t k = 0; k < n->nchildren && rc >= 0 && !*conflict; k++) {
		const struct al_node *c = n->children[k];
		char *branch, *name, *files = NULL, *summary;
		struct al_strbuf text = AL_STRBUF_INIT;

		if (nr->st.done[k] != 'c')
			continue; /* failed or stopped: its branch stays as it is */
		branch = al_parallel_wt_branch(ex, c);
		name = al_parallel_wt_name(ex, c);
		summary = al_xprintf("merge %s", c->id);
		merge_message(&text, nr, c, branch, summary);
		rc = al_worktree_merge(branch, text.buf, &files);
		if (rc == 2) {
			al_run_event(ex->run, "parallel_conflict", "{s:s, s:s, s:s, s:s}", "node",
				     n->path, "child", c->id, "branch", branch, "files", files);
			if (n->on_conflict == AL_CONFLICT_AGENT) {
				rc = resolve(nr, c, branch, here ? here : oid, files, msg, size);
				*conflict = rc == 0; /* not resolved: as on_conflict fail */
				if (rc == 1)
					rc = al_worktree_remove(name);
			} else if (n->on_conflict == AL_CONFLICT_FAIL) {
				snprintf(msg, size, "conflict: %s differ between '%s' and '%s'", files,
					 here ? here : oid, branch);
				*conflict = true;
				rc = 0;
			} else {
				al_progress_note(ex->progress, "ailoop: [%s] %s: child %s not merged: "
						 "conflict in %s", nr->st.label, n->path, c->id, files);
				rc = 0;
			}
		} else if (rc >= 0) {
			if (rc == 1) {
				ex->commits++;
				al_run_event(ex->run, "parallel_merge", "{s:s, s:s, s:s}", "node",
					     n->path, "child", c->id, "branch", branch);
			}
			rc = al_worktree_remove(name);
		}
		free(files);
		free(summary);
		al_strbuf_release(&text);
		free(name);
		free(branch);
	}
	free(here);
	return rc < 0 ? rc : 0;
}
