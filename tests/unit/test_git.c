#include "ailoop/git/git.h"
#include "ailoop/base/fsutil.h"
#include "unit.h"

#include <fcntl.h>

/* The parts of git.c a transaction and the condition cache stand on. */
static struct al_git *g;

static void setup(void)
{
	unit_hang_guard(30);
	unit_enter_git_tmpdir();
	unit_sh("git init -q -b main . && printf 'a\\n' >a.txt && printf 'b\\n' >b.txt && "
	   "mkdir -p .ai-loop/runs/r sub && printf 'x\\n' >.ai-loop/runs/r/state && "
	   "printf 'k\\n' >.ai-loop/flow.yaml && printf 's\\n' >sub/s.txt && "
	   "git add -A && git commit -q -m one");
	cr_assert_eq(al_git_open(&g), 0, "%s", al_errmsg());
}

static void teardown(void)
{
	al_git_free(g);
	unit_leave_tmpdir();
}

TestSuite(git, .init = setup, .fini = teardown);

static char *head(void)
{
	char *branch = NULL, oid[AL_OID_HEX];

	cr_assert_eq(al_git_head(g, &branch, oid), 0);
	free(branch);
	return al_strdup(oid);
}

Test(git, code_id_ignores_the_runs_and_follows_the_code)
{
	char one[65], two[65], three[65];

	cr_assert_eq(al_git_code_id(g, one), 0, "%s", al_errmsg());
	unit_sh("printf 'y\\n' >.ai-loop/runs/r/state && git commit -q -am runs");
	cr_assert_eq(al_git_code_id(g, two), 0);
	cr_assert_str_eq(one, two, "a commit of ailoop's runs alone is the same code");
	unit_sh("printf 'k2\\n' >.ai-loop/flow.yaml && git commit -q -am flow");
	cr_assert_eq(al_git_code_id(g, three), 0);
	cr_assert_str_neq(two, three, "the flow is code");
	unit_sh("chmod +x a.txt && git commit -q -am mode");
	cr_assert_eq(al_git_code_id(g, one), 0);
	cr_assert_str_neq(one, three, "a mode change is a change");
}

Test(git, restore_puts_back_the_tree_of_a_commit_but_the_runs)
{
	char *base = head(), *before = NULL;
	FILE *p;
	char buf[4096];
	size_t n;

	p = popen("git ls-files -s | grep -v 'ai-loop/runs/' | sort", "r");
	n = fread(buf, 1, sizeof(buf) - 1, p);
	buf[n] = '\0';
	pclose(p);
	before = al_strdup(buf);
	unit_sh("printf 'changed\\n' >>a.txt && chmod +x b.txt && rm -r sub && mkdir -p new/deep && "
	   "printf 'n\\n' >new/deep/n.txt && ln -s a.txt link && printf 'z\\n' >.ai-loop/runs/r/state "
	   "&& git add -A && git commit -q -m work && printf 'u\\n' >untracked.txt");
	cr_assert_eq(al_git_rollback(g, base, NULL, ".ai-loop/runs"), 0, "%s", al_errmsg());
	cr_assert_str_eq(unit_read("a.txt"), "a\n", "content back");
	cr_assert_str_eq(unit_read("sub/s.txt"), "s\n", "deleted directory back");
	cr_assert_neq(access("new", F_OK), 0, "new directories gone");
	cr_assert_neq(access("untracked.txt", F_OK), 0, "untracked files gone");
	cr_assert_neq(access("link", F_OK), 0, "new symlinks gone");
	cr_assert_str_eq(unit_read(".ai-loop/runs/r/state"), "z\n", "the runs are not rolled back");
	unit_sh("test ! -x b.txt");
	unit_sh("git add -A . ':!.ai-loop/runs'");
	p = popen("git ls-files -s | grep -v 'ai-loop/runs/' | sort", "r");
	n = fread(buf, 1, sizeof(buf) - 1, p);
	buf[n] = '\0';
	pclose(p);
	cr_assert_str_eq(buf, before, "the index is the commit's, byte for byte");
	cr_assert_eq(al_git_rollback(g, base, NULL, ".ai-loop/runs"), 0, "restoring twice is harmless");
	cr_assert_eq(al_git_rollback(g, "not-a-commit", NULL, NULL), AL_EINVALID);
	free(before);
	free(base);
}

/*
 * A file of the run written over in place with the same size within one
 * clock tick keeps its size, mtime and inode: the commit must still take
 * its new content (the file's times are set back to say so).
 */
Test(git, a_same_size_rewrite_in_the_same_tick_is_committed)
{
	const char *path = ".ai-loop/runs/r/out.md";
	struct timespec times[2];
	char oid[AL_OID_HEX];
	struct stat st;

	cr_assert_eq(al_write_in_place(path, "aaaa\n", 5), 0, "%s", al_errmsg());
	cr_assert_eq(al_git_commit_all(g, "first", ".ai-loop/runs/r", oid), 0, "%s", al_errmsg());
	cr_assert_eq(stat(path, &st), 0);
	cr_assert_eq(al_write_in_place(path, "bbbb\n", 5), 0, "%s", al_errmsg());
	times[0] = st.st_atim;
	times[1] = st.st_mtim;
	cr_assert_eq(utimensat(AT_FDCWD, path, times, 0), 0);
	cr_assert_eq(al_git_commit_all(g, "second", ".ai-loop/runs/r", oid), 0, "%s", al_errmsg());
	unit_sh("test \"$(git show HEAD:.ai-loop/runs/r/out.md)\" = bbbb");
	unit_sh("test -z \"$(git status --porcelain)\"");
}

/*
 * The pack store reads objects/pack again only when it changed: objects
 * that `git gc` moved into a new pack, their loose files pruned, while the
 * repository is open are still found.
 */
Test(git, objects_packed_while_open_are_found)
{
	char oid[AL_OID_HEX];

	unit_write("a.txt", "before gc\n");
	cr_assert_eq(al_git_commit_all(g, "before", ".ai-loop/runs/r", oid), 0, "%s", al_errmsg());
	unit_sh("git gc -q --prune=now && test -z \"$(find .git/objects -path '*/objects/[0-9a-f][0-9a-f]/*')\"");
	unit_write("a.txt", "after gc\n");
	cr_assert_eq(al_git_commit_all(g, "after", ".ai-loop/runs/r", oid), 0, "%s", al_errmsg());
	unit_sh("test \"$(git log --format=%s | head -2 | tr '\\n' ,)\" = after,before,");
	unit_sh("git fsck --strict --no-dangling 2>&1 && test -z \"$(git status --porcelain)\"");
}

/*
 * A commit that fails after staging (here the branch's ref is locked)
 * leaves its changes in the index: the next commit of the process takes
 * them too, not only what the watch saw since.
 */
Test(git, a_failed_commit_leaves_nothing_out_of_the_next)
{
	char oid[AL_OID_HEX];

	unit_write("a.txt", "first\n");
	cr_assert_eq(al_git_commit_all(g, "first", ".ai-loop/runs/r", oid), 0, "%s", al_errmsg());
	unit_write("a.txt", "staged, not committed\n");
	unit_write(".git/refs/heads/main.lock", "");
	cr_assert_lt(al_git_commit_all(g, "fails", ".ai-loop/runs/r", oid), 0);
	unit_sh("rm .git/refs/heads/main.lock");
	unit_write("b.txt", "second\n");
	cr_assert_eq(al_git_commit_all(g, "second", ".ai-loop/runs/r", oid), 0, "%s", al_errmsg());
	unit_sh("test \"$(git show HEAD:a.txt)\" = 'staged, not committed'");
	unit_sh("test \"$(git show HEAD:b.txt)\" = second");
	unit_sh("test -z \"$(git status --porcelain)\"");
}

/*
 * With core.ignorecase the index takes "A.txt" for "a.txt"; the tree of
 * each commit is still the index's (the first commit starts the watch,
 * the next ones are staged from it).
 */
Test(git, an_index_that_ignores_case_makes_the_tree)
{
	char oid[AL_OID_HEX];

	unit_sh("git config core.ignorecase true");
	al_git_free(g);
	cr_assert_eq(al_git_open(&g), 0, "%s", al_errmsg());
	unit_write("b.txt", "one\n");
	cr_assert_eq(al_git_commit_all(g, "first", ".ai-loop/runs/r", oid), 0, "%s", al_errmsg());
	unit_write("A.txt", "upper\n");
	cr_assert_eq(al_git_commit_all(g, "second", ".ai-loop/runs/r", oid), 0, "%s", al_errmsg());
	unit_sh("test \"$(git ls-tree --name-only HEAD -- a.txt A.txt)\" = "
		"\"$(git ls-files -s -- a.txt A.txt | cut -f2)\"");
	unit_sh("test \"$(git write-tree)\" = \"$(git rev-parse 'HEAD^{tree}')\"");
}
