#include "ailoop/cli/cli.h"
#include "ailoop/git/git.h"
#include "ailoop/git/worktree.h"
#include "ailoop/store/run.h"
#include "ailoop/store/runs.h"
#include "ailoop/base/fsutil.h"
#include "ailoop/base/strbuf.h"
#include "ailoop/base/util.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* `ailoop clean`: finished, landed runs removed: branches, worktrees, directories. */

struct clean_opts {
	long days; /* -1: any age */
	bool dry_run, force;
};

/* Seconds since the epoch of a run's "2026-11-28T06:50:12Z", or -1. */
static int64_t parse_time(const char *s)
{
	struct tm tm = { 0 };
	const char *end = s ? strptime(s, "%Y-%m-%dT%H:%M:%S", &tm) : NULL;

	return end ? (int64_t)timegm(&tm) : -1;
}

static int find_land(const char *oid, const char *message, int64_t time, void *data)
{
	(void)oid;
	(void)time;
	return strstr(message, (const char *)data) != NULL;
}

/*
 * Whether `ailoop land` put the run's change on its base branch: a commit
 * there since the run's branch left it says so (AL_LAND_TRAILER). Its base
 * branch may have changed the same files since, so that the change would
 * no longer apply as it is.
 */
static bool landed_on(struct al_git *git, const struct al_run_state *st)
{
	char *line = al_xprintf("\n" AL_LAND_TRAILER "%s\n", st->run_id);
	char *rev = al_xprintf("refs/heads/%s", st->base_branch);
	char *hide = al_xprintf("refs/heads/%s", st->branch);
	bool found = al_git_walk(git, rev, hide, find_land, line) == 1;

	free(line);
	free(rev);
	free(hide);
	return found;
}

/*
 * Why run `e` stays (into *why, caller frees), or NULL: it may go. The
 * checked-out branch's run always stays; one not finished, or whose
 * change its base branch lacks, unless --force.
 */
static char *kept_why(struct al_git *git, const struct al_run_entry *e, const char *current,
		      const struct clean_opts *o)
{
	const struct al_run_state *st = &e->st;
	struct al_git_land_opts land = { st->base_branch, st->branch, AL_RUNS_DIR, "",
					 st->run_id, false, true };
	char oid[AL_OID_HEX], *conflict = NULL;
	int rc;

	if (current && !strcmp(current, st->branch))
		return al_xprintf("its branch %s is checked out", st->branch);
	if (o->force)
		return NULL;
	if (al_status_resumable(st->status))
		return al_xprintf("%s, not finished: 'ailoop resume %s', or --force", st->status,
				  st->run_id);
	if (!e->from || !st->base_branch)
		return NULL; /* its branch is gone: nothing of it to land */
	rc = al_git_land(git, &land, oid, &conflict);
	free(conflict);
	if (rc == 1 || landed_on(git, st))
		return NULL;
	return al_xprintf("its change is not on %s: 'ailoop land %s', or --force",
			  st->base_branch, st->run_id);
}

/* The run's worktrees, its children's branches, its branch and its directory. */
static int remove_run(struct al_git *git, const struct al_run_entry *e, struct al_strbuf *what,
		      bool dry_run)
{
	const char *id = e->st.run_id, *branch = e->st.branch;
	char *dir = al_xprintf("%s/%s", AL_RUNS_DIR, id), *wts = al_xprintf("%s/worktrees", dir);
	char *prefix = al_xprintf("%s--", branch), **children = NULL, **tracked = NULL;
	size_t nchildren = 0, ntracked = 0;
	int rc = 0;

	if (al_git_branches(git, prefix, &children, &nchildren) < 0)
		nchildren = 0;
	/* a directory the checked-out commit holds is that branch's, not the run's to remove */
	if (al_git_ls(git, "HEAD", dir, &tracked, &ntracked) < 0)
		ntracked = 0;
	if (al_dir_exists(wts))
		al_strbuf_addf(what, " worktrees,");
	for (size_t i = 0; i < nchildren; i++)
		al_strbuf_addf(what, " %s,", children[i]);
	if (e->from)
		al_strbuf_addf(what, " %s,", branch);
	if (!ntracked && al_dir_exists(dir))
		al_strbuf_addf(what, " %s,", dir);
	if (what->len)
		al_strbuf_setlen(what, what->len - 1);
	if (dry_run)
		goto done;
	if (al_dir_exists(wts) && (rc = al_worktree_remove_all(wts)) < 0)
		goto done;
	for (size_t i = 0; rc == 0 && i < nchildren; i++)
		rc = al_git_branch_delete(git, children[i]);
	if (rc == 0 && e->from)
		rc = al_git_branch_delete(git, branch);
	/* a worktree kept for a repository an agent made there keeps the directory too */
	if (rc == 0 && !ntracked && al_dir_exists(dir) && !al_dir_exists(wts))
		rc = al_remove_tree(dir);
done:
	al_strv_free(children, nchildren);
	al_strv_free(tracked, ntracked);
	free(prefix);
	free(wts);
	free(dir);
	return rc;
}

static int clean(struct al_git *git, const struct clean_opts *o)
{
	struct al_run_list list = { 0 };
	char *current = NULL;
	int64_t now = time(NULL);
	size_t removed = 0, kept = 0;
	int rc, code = 0;

	if ((rc = al_runs_all(git, &list)) < 0) {
		code = al_cli_fail(AL_EXIT_SOFTWARE, "%s", al_errmsg());
		goto done;
	}
	al_git_head(git, &current, NULL);
	for (size_t i = 0; i < list.n && !code; i++) {
		const struct al_run_entry *e = &list.v[i];
		const struct al_run_state *st = &e->st;
		int64_t at = parse_time(st->updated_at ? st->updated_at : st->started_at);
		struct al_strbuf what = AL_STRBUF_INIT;
		char *why;

		/* a --no-branch run is its base branch's history: nothing of its own to remove */
		if (!st->branch || (st->base_branch && !strcmp(st->branch, st->base_branch)))
			continue;
		if (o->days >= 0 && (at < 0 || now - at < o->days * 86400))
			continue;
		if ((why = kept_why(git, e, current, o))) {
			printf("kept run %s: %s\n", st->run_id, why);
			free(why);
			kept++;
			continue;
		}
		if ((rc = remove_run(git, e, &what, o->dry_run)) < 0)
			code = al_cli_fail(AL_EXIT_SOFTWARE, "run %s: %s", st->run_id, al_errmsg());
		else
			printf("%s run %s:%s\n", o->dry_run ? "would remove" : "removed", st->run_id,
			       what.len ? what.buf : " (nothing left of it)");
		removed += rc == 0;
		al_strbuf_release(&what);
	}
	if (!code)
		printf("%s %zu run%s, kept %zu\n", o->dry_run ? "would remove" : "removed", removed,
		       removed == 1 ? "" : "s", kept);
done:
	free(current);
	al_run_list_release(&list);
	return code;
}

int cmd_clean(int argc, char **argv)
{
	static const struct option longs[] = {
		{ "older-than", required_argument, NULL, 'o' },
		{ "dry-run", no_argument, NULL, 'n' },
		{ "force", no_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 0 },
		{ NULL, 0, NULL, 0 },
	};
	struct clean_opts o = { -1, false, false };
	struct al_git *git = NULL;
	char *end;
	int c, rc, code = 0, lock_fd = -1;

	while ((c = al_cli_getopt(argc, argv, "n", longs, &code)) != -1) {
		switch (c) {
		case '?': return code;
		case 'n': o.dry_run = true; break;
		case 'f': o.force = true; break;
		case 'o':
			errno = 0;
			o.days = strtol(optarg, &end, 10);
			if (errno || end == optarg || *end || o.days < 0 || o.days > 100000)
				return al_cli_fail(AL_EXIT_USAGE, "--older-than takes a number of days "
						   "(0-100000), not '%s'", optarg);
			break;
		}
	}
	if ((code = al_cli_operands(argc, argv, 0, 0)) || (code = al_cli_enter_repo()))
		return code;
	if ((rc = al_git_open(&git)) < 0) {
		code = al_cli_fail(AL_EXIT_NOINPUT, "%s", al_errmsg());
		goto done;
	}
	/* no run at work here while its branches and files go */
	if ((code = al_cli_lock_worktree(git, &lock_fd)) == 0)
		code = clean(git, &o);
done:
	al_worktree_unlock(lock_fd);
	al_git_free(git);
	return code;
}
