#include "../../src/git/git_repo.h"
#include "ailoop/git/watch.h"
#include "unit.h"

#include <unistd.h>

/*
 * Staging ahead (git_prestage.c): what the idle work keeps of a file, and
 * when a commit may use it. The stat data a test passes is the file's as
 * it was staged ahead, so only the watch's report tells it is stale.
 */
static struct al_git *g;

static void setup(void)
{
	char oid[AL_OID_HEX];

	unit_hang_guard(30);
	unit_enter_git_tmpdir();
	unit_sh("git init -q -b main . && printf 'a\\n' >a.txt && mkdir -p .ai-loop/runs/r && "
		"printf 'x\\n' >.ai-loop/runs/r/state && printf 'ignored.txt\\n' >.gitignore && "
		"git add -A && git commit -q -m one");
	cr_assert_eq(al_git_open(&g), 0, "%s", al_errmsg());
	/* the first commit starts the watch, and marks the run restorable */
	unit_write("a.txt", "first\n");
	cr_assert_eq(al_git_commit_all(g, "first", ".ai-loop/runs/r", oid), 0, "%s", al_errmsg());
	cr_assert(g->watch && g->restorable, "the watch runs, the mark is on disk");
}

static void teardown(void)
{
	al_git_free(g);
	unit_leave_tmpdir();
}

TestSuite(git_prestage, .init = setup, .fini = teardown);

/* The idle work of one wait for agents, to its end. */
static void stage_ahead(void)
{
	bool fresh = true;

	while (al_git_prestage_step(g, fresh))
		fresh = false;
}

/* What a commit's staging does first: take the watch's paths, settle what was kept. */
static void settle(void)
{
	char **paths, **late;
	size_t n, nlate;

	cr_assert_eq(al_watch_take(g->watch, &paths, &n, &late, &nlate), 0);
	al_git_prestage_settle(g, late, nlate);
	al_strv_free(paths, n);
	al_strv_free(late, nlate);
}

static struct stat stat_of(const char *path)
{
	struct stat st;

	cr_assert_eq(lstat(path, &st), 0, "%s", path);
	return st;
}

static void expect_blob(const char *path, const struct stat *st, const char *text)
{
	git_oid id, want;

	cr_assert(al_git_prestaged(g, path, st, &id), "%s was staged ahead", path);
	cr_assert_eq(git_odb_hash(&want, text, strlen(text), GIT_OBJECT_BLOB), 0);
	cr_assert(git_oid_equal(&id, &want), "%s: the blob of what it held", path);
}

Test(git_prestage, keeps_the_blob_of_what_did_not_change_again)
{
	struct stat a, b;
	git_oid id;

	unit_write("a.txt", "aaaa\n");
	unit_write("b.txt", "new\n");
	stage_ahead();
	a = stat_of("a.txt");
	b = stat_of("b.txt");
	unit_write("a.txt", "bbbb\n"); /* the same size, after it was staged ahead */
	settle();
	cr_assert_not(al_git_prestaged(g, "a.txt", &a, &id), "reported since: stale");
	expect_blob("b.txt", &b, "new\n");
	b.st_mtim.tv_nsec ^= 1;
	cr_assert_not(al_git_prestaged(g, "b.txt", &b, &id), "other stat data: stale");
}

Test(git_prestage, a_second_wait_stages_again_what_changed_since_the_first)
{
	struct stat a;
	git_oid id;

	unit_write("a.txt", "one\n");
	stage_ahead();
	unit_write("a.txt", "two\n");
	stage_ahead(); /* the next agent's wait: the change is seen before the commit */
	a = stat_of("a.txt");
	settle();
	expect_blob("a.txt", &a, "two\n");
	cr_assert(al_git_prestaged(g, "a.txt", &a, &id));
}

Test(git_prestage, leaves_state_files_ignored_files_and_links_to_the_commit)
{
	struct stat st;
	git_oid id;

	unit_write(".ai-loop/runs/r/orchestrator-output.md", "state\n");
	unit_write(".ai-loop/runs/r/controller-output.md", "plan\n");
	unit_write("ignored.txt", "ignored\n");
	unit_write("linked.txt", "two names\n");
	cr_assert_eq(link("linked.txt", "other-name.txt"), 0);
	cr_assert_eq(symlink("a.txt", "symlink.txt"), 0);
	stage_ahead();
	settle();
	st = stat_of(".ai-loop/runs/r/orchestrator-output.md");
	cr_assert_not(al_git_prestaged(g, ".ai-loop/runs/r/orchestrator-output.md", &st, &id),
		      "a state file is written again before any commit");
	st = stat_of(".ai-loop/runs/r/controller-output.md");
	expect_blob(".ai-loop/runs/r/controller-output.md", &st, "plan\n");
	st = stat_of("ignored.txt");
	cr_assert_not(al_git_prestaged(g, "ignored.txt", &st, &id), "ignored: never recorded");
	st = stat_of("linked.txt");
	cr_assert_not(al_git_prestaged(g, "linked.txt", &st, &id), "two names: the commit scans");
	st = stat_of("symlink.txt");
	cr_assert_not(al_git_prestaged(g, "symlink.txt", &st, &id), "a link: libgit2 stages it");
}

/* A directory an agent replaced by a link to one outside: nothing is read through it. */
Test(git_prestage, reads_nothing_through_a_link_in_the_path)
{
	struct stat st;
	git_oid id;

	unit_sh("mkdir -p outside sub && printf 'secret\\n' >outside/f.txt && printf 'x\\n' >sub/f.txt");
	stage_ahead(); /* sub/f.txt is seen now */
	settle();
	unit_write("sub/f.txt", "changed\n");
	unit_sh("rm -r sub && ln -s outside sub");
	stage_ahead();
	st = stat_of("sub/f.txt"); /* through the link */
	cr_assert_not(al_git_prestaged(g, "sub/f.txt", &st, &id), "not staged ahead through a link");
}

Test(git_prestage, a_new_gitattributes_makes_everything_kept_stale)
{
	struct stat b;
	git_oid id;

	unit_write("b.txt", "text\n");
	stage_ahead();
	b = stat_of("b.txt");
	unit_write(".gitattributes", "*.txt text eol=crlf\n");
	settle();
	cr_assert_not(al_git_prestaged(g, "b.txt", &b, &id), "the filters may have changed");
}

Test(git_prestage, nothing_is_staged_ahead_without_a_trusted_watch)
{
	struct stat b;
	git_oid id;

	unit_write("b.txt", "text\n");
	al_git_watch_off(g);
	stage_ahead();
	b = stat_of("b.txt");
	cr_assert_not(al_git_prestaged(g, "b.txt", &b, &id));
}

/* The commits with staging ahead are those without: their trees are the index's. */
Test(git_prestage, commits_take_what_was_staged_ahead)
{
	char oid[AL_OID_HEX];

	unit_write("b.txt", "ahead\n");
	unit_write(".ai-loop/runs/r/controller-output.md", "plan\n");
	stage_ahead();
	cr_assert_eq(al_git_commit_all(g, "second", ".ai-loop/runs/r", oid), 0, "%s", al_errmsg());
	unit_sh("test \"$(git show HEAD:b.txt)\" = ahead");
	unit_sh("test \"$(git show HEAD:.ai-loop/runs/r/controller-output.md)\" = plan");
	unit_sh("test -z \"$(git status --porcelain)\" && git fsck --strict --no-dangling 2>&1");
}

/* An agent's `git gc --prune=now` removes a blob nothing names yet: the commit writes it again. */
Test(git_prestage, a_blob_pruned_since_is_written_again)
{
	char oid[AL_OID_HEX];
	struct stat b;
	git_oid id;

	unit_write("b.txt", "pruned\n");
	stage_ahead();
	unit_sh("git gc -q --prune=now");
	b = stat_of("b.txt");
	cr_assert_eq(al_git_commit_all(g, "second", ".ai-loop/runs/r", oid), 0, "%s", al_errmsg());
	cr_assert_not(al_git_prestaged(g, "b.txt", &b, &id), "dropped once staged");
	unit_sh("test \"$(git show HEAD:b.txt)\" = pruned && git fsck --strict --no-dangling 2>&1");
}

/* Once the run's last commit let the watch go, a commit still takes everything (by a scan). */
Test(git_prestage, a_commit_after_the_watch_is_let_go_scans)
{
	char oid[AL_OID_HEX];

	al_git_watch_done(g);
	unit_write("b.txt", "after\n");
	unit_write("a.txt", "changed\n");
	cr_assert_eq(al_git_commit_all(g, "second", ".ai-loop/runs/r", oid), 0, "%s", al_errmsg());
	unit_sh("test \"$(git show HEAD:b.txt)\" = after && test \"$(git show HEAD:a.txt)\" = changed");
	unit_sh("test -z \"$(git status --porcelain)\"");
}
