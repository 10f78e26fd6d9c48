#include "ailoop/git/worktree.h"
#include "unit.h"

#include <fcntl.h>

/*
 * A child's worktree and branch when its parallel node runs again: the
 * branch of the current run is kept, an earlier run's is made anew.
 */
static char wt[PATH_MAX];

/* A repository with commits `one` and `two` (tags), on branch main. */
static void setup(void)
{
	unit_hang_guard(30);
	unit_enter_git_tmpdir();
	unit_sh("git init -q -b main . && echo 1 >f.txt && git add f.txt && git commit -qm one && "
	   "git tag one && echo 2 >f.txt && git commit -qam two && git tag two");
	cr_assert_not_null(getcwd(wt, sizeof(wt) - 16));
	strcat(wt, "/wt/kid");
}

static void teardown(void)
{
	unit_leave_tmpdir();
}

TestSuite(worktree, .init = setup, .fini = teardown);

/* Whether two commands print the same. */
static bool same(const char *a, const char *b)
{
	char *first = al_strdup(unit_output(a));
	bool eq = strcmp(first, unit_output(b)) == 0;

	free(first);
	return eq;
}

static void ensure(const char *base)
{
	char hex[64];

	snprintf(hex, sizeof(hex), "%s", unit_output(base));
	cr_assert_eq(al_worktree_ensure(wt, "kid", "run--kid", hex), 0, "%s", al_errmsg());
}

Test(worktree, a_branch_of_this_run_is_kept)
{
	ensure("git rev-parse two");
	unit_sh("cd wt/kid && echo kid >k.txt && git add k.txt && git commit -qm kid");
	ensure("git rev-parse two"); /* a resume */
	cr_assert_str_eq(unit_output("git log -1 --format=%s run--kid"), "kid");
	cr_assert_str_eq(unit_output("cat wt/kid/k.txt"), "kid");
}

Test(worktree, a_merged_branch_is_made_anew)
{
	ensure("git rev-parse one");
	unit_sh("echo old >wt/kid/left.txt");
	ensure("git rev-parse two"); /* the node runs again, from two */
	cr_assert(same("git rev-parse run--kid", "git rev-parse two"));
	cr_assert_str_eq(unit_output("git branch --list 'run--kid.*'"), "", "nothing set aside");
	cr_assert_str_eq(unit_output("cat wt/kid/f.txt"), "2", "the worktree is at the new start");
	cr_assert_eq(access("wt/kid/left.txt", F_OK), -1, "the old worktree is gone");
	cr_assert_str_eq(unit_output("git worktree list | wc -l"), "2");
}

Test(worktree, an_unmerged_branch_is_set_aside)
{
	char aside[128];

	ensure("git rev-parse one");
	unit_sh("cd wt/kid && echo failed >k.txt && git add k.txt && git commit -qm failed");
	snprintf(aside, sizeof(aside), "run--kid.%s", unit_output("git rev-parse --short=7 run--kid"));
	ensure("git rev-parse two");
	cr_assert_str_eq(unit_output("git branch --list 'run--kid.*' --format='%(refname:short)'"), aside);
	cr_assert_str_eq(unit_output("git log -1 --format=%s --branches='run--kid.*'"), "failed", "its work is kept");
	cr_assert(same("git rev-parse run--kid", "git rev-parse two"));
	cr_assert_eq(access("wt/kid/k.txt", F_OK), -1, "the child starts afresh");
}

Test(worktree, a_branch_that_cannot_move_is_an_error)
{
	int fd;

	ensure("git rev-parse one");
	unit_sh("cd wt/kid && echo failed >k.txt && git add k.txt && git commit -qm failed");
	/* another process's ref update in progress: its lock is open */
	fd = open(".git/refs/heads/run--kid.lock", O_CREAT | O_WRONLY, 0644);
	cr_assert_geq(fd, 0);
	cr_assert_lt(al_worktree_ensure(wt, "kid", "run--kid", unit_output("git rev-parse two")), 0);
	cr_assert(strstr(al_errmsg(), "cannot set a child's old branch aside"), "%s", al_errmsg());
	cr_assert_str_eq(unit_output("git log -1 --format=%s run--kid"), "failed", "nothing lost");
	close(fd);
	unlink(".git/refs/heads/run--kid.lock");
	ensure("git rev-parse two"); /* and done once the lock is gone */
	cr_assert_str_eq(unit_output("git log -1 --format=%s --branches='run--kid.*'"), "failed");
}

Test(worktree, a_merged_branch_that_cannot_go_is_an_error)
{
	int fd;

	ensure("git rev-parse one");
	fd = open(".git/refs/heads/run--kid.lock", O_CREAT | O_WRONLY, 0644);
	cr_assert_geq(fd, 0);
	cr_assert_lt(al_worktree_ensure(wt, "kid", "run--kid", unit_output("git rev-parse two")), 0);
	cr_assert(strstr(al_errmsg(), "cannot delete a merged child's branch"), "%s", al_errmsg());
	close(fd);
}

Test(worktree, a_bad_start_commit_is_an_error)
{
	cr_assert_lt(al_worktree_ensure(wt, "kid", "run--kid", "not-a-commit"), 0);
	cr_assert(strstr(al_errmsg(), "bad start commit 'not-a-commit'"), "%s", al_errmsg());
}
