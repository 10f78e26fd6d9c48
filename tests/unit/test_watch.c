#include "ailoop/git/watch.h"
#include "unit.h"

/* `data` names the directory to leave out; one holding a .git entry is a repository */
static enum al_watch_kind skip_named(const char *rel, void *data)
{
	struct al_strbuf git = AL_STRBUF_INIT;
	struct stat st;
	bool repo;

	if (data && !strcmp(rel, (const char *)data))
		return AL_WATCH_SKIP;
	al_strbuf_addf(&git, "%s/.git", rel);
	repo = lstat(git.buf, &st) == 0;
	al_strbuf_release(&git);
	return repo ? AL_WATCH_REPO : AL_WATCH_DIR;
}

/* Paths joined by spaces, freed. */
static char *joined(char **paths, size_t n)
{
	struct al_strbuf sb = AL_STRBUF_INIT;

	for (size_t i = 0; i < n; i++)
		al_strbuf_addf(&sb, "%s%s", i ? " " : "", paths[i]);
	al_strv_free(paths, n);
	return sb.buf ? al_strbuf_detach(&sb, NULL) : al_strdup("");
}

/* The paths the watch reports now, joined by spaces; "broken" if it cannot be trusted. */
static char *taken(struct al_watch *w)
{
	char **paths;
	size_t n;

	if (al_watch_take(w, &paths, &n, NULL, NULL) < 0)
		return al_strdup("broken");
	return joined(paths, n);
}

static void expect_taken(struct al_watch *w, const char *want)
{
	char *got = taken(w);

	cr_assert_str_eq(got, want);
	free(got);
}

static struct al_watch *started(void *skip)
{
	struct al_watch *w = al_watch_start(skip_named, skip);

	cr_assert_not_null(w, "the watch starts: %s", strerror(errno));
	return w;
}

Test(watch, reports_changed_new_and_removed_files_once_each, .init = unit_enter_tmpdir,
     .fini = unit_leave_tmpdir)
{
	struct al_watch *w;

	unit_write("a.txt", "a\n");
	unit_write("sub/b.txt", "b\n");
	w = started(NULL);
	expect_taken(w, "");
	unit_write("a.txt", "changed\n");
	unit_write("a.txt", "changed again\n");
	unit_write("c.txt", "new\n");
	cr_assert_eq(unlink("sub/b.txt"), 0);
	cr_assert_eq(chmod("c.txt", 0755), 0);
	expect_taken(w, "a.txt c.txt sub/b.txt");
	expect_taken(w, ""); /* each change is reported once */
	al_watch_free(w);
}

Test(watch, tells_what_changed_again_after_a_peek, .init = unit_enter_tmpdir,
     .fini = unit_leave_tmpdir)
{
	struct al_watch *w;
	char **paths, **late;
	size_t n, nlate;
	char *got;

	unit_write("a.txt", "a\n");
	w = started(NULL);
	unit_write("a.txt", "changed\n");
	unit_write("b.txt", "new\n");
	cr_assert_eq(al_watch_peek(w, &paths, &n), 0);
	got = joined(paths, n);
	cr_assert_str_eq(got, "a.txt b.txt");
	free(got);
	cr_assert_eq(al_watch_peek(w, &paths, &n), 0);
	got = joined(paths, n);
	cr_assert_str_eq(got, "", "a peek returns each report once");
	free(got);
	unit_write("b.txt", "changed after the peek\n");
	unit_write("c.txt", "new after the peek\n");
	cr_assert_eq(al_watch_take(w, &paths, &n, &late, &nlate), 0);
	got = joined(late, nlate);
	cr_assert_str_eq(got, "b.txt c.txt");
	free(got);
	got = joined(paths, n);
	cr_assert_str_eq(got, "a.txt b.txt c.txt", "a take returns what a peek saw too");
	free(got);
	/* no peek since the take: everything is late */
	unit_write("a.txt", "again\n");
	cr_assert_eq(al_watch_take(w, &paths, &n, &late, &nlate), 0);
	got = joined(late, nlate);
	cr_assert_str_eq(got, "a.txt");
	free(got);
	al_strv_free(paths, n);
	al_watch_free(w);
}

Test(watch, is_not_trusted_once_released, .init = unit_enter_tmpdir, .fini = unit_leave_tmpdir)
{
	struct al_watch *w;

	unit_write("a.txt", "a\n");
	w = started(NULL);
	al_watch_release(w);
	unit_write("a.txt", "changed\n");
	expect_taken(w, "broken");
	al_watch_free(w);
}

Test(watch, a_peek_fails_once_the_watch_is_not_trusted, .init = unit_enter_tmpdir,
     .fini = unit_leave_tmpdir)
{
	struct al_watch *w;
	char **paths;
	size_t n;

	cr_assert_eq(mkdir("sub", 0755), 0);
	w = started(NULL);
	cr_assert_eq(rename("sub", "moved"), 0);
	cr_assert_eq(al_watch_peek(w, &paths, &n), -1);
	cr_assert_null(paths);
	cr_assert_eq(al_watch_take(w, &paths, &n, NULL, NULL), -1);
	al_watch_free(w);
}

Test(watch, reports_what_a_new_directory_holds_and_watches_it, .init = unit_enter_tmpdir,
     .fini = unit_leave_tmpdir)
{
	struct al_watch *w = started(NULL);

	unit_write("n/m/x.txt", "x\n");
	expect_taken(w, "n n/m n/m/x.txt");
	unit_write("n/m/y.txt", "y\n");
	expect_taken(w, "n/m/y.txt");
	al_watch_free(w);
}

Test(watch, leaves_out_git_and_skipped_directories, .init = unit_enter_tmpdir,
     .fini = unit_leave_tmpdir)
{
	struct al_watch *w;

	unit_write(".git/HEAD", "ref: refs/heads/main\n");
	unit_write("build/out.o", "o\n");
	w = started("build");
	unit_write(".git/index", "i\n");
	unit_write("build/out.o", "o2\n");
	unit_write("kept.txt", "k\n");
	expect_taken(w, "kept.txt");
	al_watch_free(w);
}

Test(watch, is_not_trusted_after_a_directory_moved, .init = unit_enter_tmpdir,
     .fini = unit_leave_tmpdir)
{
	struct al_watch *w;

	unit_write("sub/b.txt", "b\n");
	w = started(NULL);
	cr_assert_eq(rename("sub", "moved"), 0);
	expect_taken(w, "broken");
	unit_write("c.txt", "c\n");
	expect_taken(w, "broken"); /* it stays so */
	al_watch_free(w);
}

Test(watch, is_not_trusted_when_a_repository_appears, .init = unit_enter_tmpdir,
     .fini = unit_leave_tmpdir)
{
	struct al_watch *w = started(NULL);

	unit_write("nested/.git/HEAD", "ref: refs/heads/main\n");
	expect_taken(w, "broken");
	al_watch_free(w);
}

Test(watch, is_not_trusted_after_an_overflow, .init = unit_enter_tmpdir,
     .fini = unit_leave_tmpdir)
{
	struct al_watch *w;

	setenv("AILOOP_WATCH_MAX_EVENTS", "5", 1);
	w = started(NULL);
	for (int i = 0; i < 10; i++) {
		char name[32];

		snprintf(name, sizeof(name), "f%d.txt", i);
		unit_write(name, "x\n");
	}
	expect_taken(w, "broken");
	al_watch_free(w);
}

Test(watch, fails_at_the_watch_limit, .init = unit_enter_tmpdir, .fini = unit_leave_tmpdir)
{
	struct al_watch *w;

	unit_write("a/x.txt", "x\n");
	setenv("AILOOP_WATCH_MAX_DIRS", "1", 1);
	cr_assert_null(al_watch_start(skip_named, NULL), "two directories, a limit of one");
	cr_assert_eq(errno, ENOSPC);
	setenv("AILOOP_WATCH_MAX_DIRS", "2", 1);
	w = started(NULL);
	unit_write("b/y.txt", "y\n"); /* a third directory */
	expect_taken(w, "broken");
	al_watch_free(w);
}

Test(watch, knows_whether_what_it_left_out_would_be_left_out_now, .init = unit_enter_tmpdir,
     .fini = unit_leave_tmpdir)
{
	char skip[] = "ign";
	struct al_watch *w;

	unit_write("ign/a.txt", "a\n");
	unit_write("kept/b.txt", "b\n");
	w = started(skip);
	cr_assert(al_watch_skips_hold(w), "nothing changed: the same directories left out");
	unit_write("ign/c.txt", "c\n");
	expect_taken(w, ""); /* left out: not watched */
	skip[0] = '\0'; /* ign is no longer to be left out (a rule dropped, a file tracked) */
	cr_assert_not(al_watch_skips_hold(w), "a directory it left out would be watched now");
	al_watch_free(w);
}
