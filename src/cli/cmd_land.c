#include "ailoop/cli/cli.h"
#include "ailoop/git/git.h"
#include "ailoop/store/run.h"
#include "ailoop/store/run_view.h"
#include "ailoop/base/strbuf.h"
#include "ailoop/base/util.h"

#include <stdlib.h>
#include <string.h>

/* `ailoop land`: a finished run's change on its base branch, as one commit or a merge. */

/* The value of `key`'s line ("[sensors] ") in a commit message, or NULL. Caller frees. */
static char *trailer(const char *message, const char *key)
{
	size_t n = strlen(key);

	for (const char *p = message; p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (!strncmp(p, key, n)) {
			const char *eol = strchr(p + n, '\n');

			return al_strndup(p + n, eol ? (size_t)(eol - p - n) : strlen(p + n));
		}
	return NULL;
}

/* The [sensors] line of commit `rev`, or NULL. Caller frees. */
static char *sensors_at(struct al_git *git, const char *rev)
{
	char *msg = NULL, *s;

	if (!rev || al_git_message(git, rev, &msg) < 0)
		return NULL;
	s = trailer(msg, "[sensors] ");
	free(msg);
	return s;
}

static int count_commits(const char *oid, const char *message, int64_t time, void *data)
{
	(void)oid;
	(void)message;
	(void)time;
	++*(size_t *)data;
	return 0;
}

/*
 * The landed commit's message: the task's first line as the subject (cut
 * at a word), then the run, how it ended, and its sensors before and after.
 */
static char *land_message(struct al_git *git, const struct al_run_view *v, const char *rev)
{
	const struct al_run_state *st = &v->st;
	const char *task = st->task, *eol = strchr(task, '\n');
	size_t len = eol ? (size_t)(eol - task) : strlen(task), commits = 0;
	char *before = sensors_at(git, st->start_commit), *after = sensors_at(git, rev);
	struct al_strbuf sb = AL_STRBUF_INIT;

	if (len > 72) { /* a subject git shows whole */
		size_t cut = 69;

		while (cut > 20 && task[cut] != ' ')
			cut--;
		al_strbuf_addf(&sb, "%.*s...", (int)cut, task);
	} else {
		al_strbuf_add(&sb, task, len);
	}
	al_git_walk(git, rev, st->base_branch, count_commits, &commits);
	al_strbuf_addf(&sb, "\n\nailoop run %s on %s: %s after %d iteration%s of its root "
		       "node, %zu commit%s.\n", st->run_id, st->branch, st->status,
		       v->nodes.n ? v->nodes.v[0].iteration : 0,
		       v->nodes.n && v->nodes.v[0].iteration == 1 ? "" : "s", commits,
		       commits == 1 ? "" : "s");
	if (eol || len > 72)
		al_strbuf_addf(&sb, "\nTask:\n%s\n", task);
	if (before || after)
		al_strbuf_addf(&sb, "\nSensors before: %s\nSensors after:  %s\n",
			       before ? before : "-", after ? after : "-");
	al_strbuf_rtrim(&sb);
	al_strbuf_addf(&sb, "\n\n" AL_LAND_TRAILER "%s\n", st->run_id); /* for 'ailoop clean' */
	free(before);
	free(after);
	return al_strbuf_detach(&sb, NULL);
}

/* Why run `v` cannot land (and the exit status), or 0. */
static int refuse(struct al_git *git, const struct al_run_view *v)
{
	const struct al_run_state *st = &v->st;
	char *current = NULL, *dirty = NULL;
	int code = 0, rc;

	if (al_status_resumable(st->status))
		return al_cli_fail(AL_EXIT_USAGE, "run %s is %s, not finished: go on with 'ailoop "
				   "resume %s', and land it once it ends", st->run_id, st->status,
				   st->run_id);
	if (!st->branch || !st->base_branch || !strcmp(st->branch, st->base_branch))
		return al_cli_fail(AL_EXIT_USAGE, "run %s committed on %s itself (--no-branch): "
				   "its change is there already", st->run_id,
				   st->branch ? st->branch : "a detached HEAD");
	al_git_head(git, &current, NULL);
	if (current && !strcmp(current, st->base_branch) && (rc = al_git_dirty(git, &dirty)) != 0)
		code = rc < 0 ? al_cli_fail(AL_EXIT_SOFTWARE, "%s", al_errmsg())
			      : al_cli_fail(AL_EXIT_USAGE, "the work tree has uncommitted changes "
					    "('%s'), and landing updates it: commit or stash them",
					    dirty);
	free(current);
	free(dirty);
	return code;
}

static int land(struct al_git *git, const struct al_run_view *v, bool merge)
{
	const struct al_run_state *st = &v->st;
	char *rev = al_xprintf("refs/heads/%s", st->branch), *message = NULL, *conflict = NULL;
	struct al_git_land_opts o = { st->base_branch, st->branch, AL_RUNS_DIR, NULL,
				      st->run_id, merge, false };
	char oid[AL_OID_HEX];
	int rc, code = 0;

	message = land_message(git, v, rev);
	o.message = message;
	rc = al_git_land(git, &o, oid, &conflict);
	if (rc == 1) {
		printf("run %s: %s has its change already; nothing to land\n", st->run_id,
		       st->base_branch);
	} else if (rc == AL_ECONFLICT) {
		code = al_cli_fail(AL_EXIT_FAILED, "run %s does not land on %s: %s changed '%s' "
				   "since the run started, and so did the run; nothing was written. "
				   "Bring %s into the run's branch ('git checkout %s && git merge %s', "
				   "resolve, commit) and land again", st->run_id, st->base_branch,
				   st->base_branch, conflict ? conflict : "?", st->base_branch,
				   st->branch, st->base_branch);
	} else if (rc < 0) {
		code = al_cli_fail(al_cli_exit_code(rc), "%s", al_errmsg());
	} else {
		printf("landed run %s on %s as %.9s: %s, without .ai-loop/runs\n", st->run_id,
		       st->base_branch, oid, merge ? "a merge of its branch" : "one commit of its change");
		printf("  the run's branch %s stays: 'ailoop clean' removes it\n", st->branch);
	}
	free(conflict);
	free(message);
	free(rev);
	return code;
}

int cmd_land(int argc, char **argv)
{
	static const struct option longs[] = {
		{ "merge", no_argument, NULL, 'm' },
		{ "help", no_argument, NULL, 0 },
		{ NULL, 0, NULL, 0 },
	};
	struct al_run_view view = { 0 };
	struct al_git *git = NULL;
	bool merge = false;
	int c, rc, code = 0, lock_fd = -1;

	while ((c = al_cli_getopt(argc, argv, "", longs, &code)) != -1) {
		if (c == '?')
			return code;
		merge = true;
	}
	if ((code = al_cli_operands(argc, argv, 0, 1)) || (code = al_cli_enter_repo()))
		return code;
	if ((rc = al_git_open(&git)) < 0) {
		code = al_cli_fail(AL_EXIT_NOINPUT, "%s", al_errmsg());
		goto done;
	}
	/* a run at work here is not finished, and nothing may move its branches meanwhile */
	if ((code = al_cli_lock_worktree(git, &lock_fd)) != 0)
		goto done;
	if ((rc = al_run_view_load(&view, git, optind < argc ? argv[optind] : NULL)) < 0) {
		code = al_cli_fail(al_cli_exit_code(rc), "%s", al_errmsg());
		goto done;
	}
	if (!(code = refuse(git, &view)))
		code = land(git, &view, merge);
done:
	al_run_view_release(&view);
	al_worktree_unlock(lock_fd);
	al_git_free(git);
	return code;
}
