#include "ailoop/base/fsutil.h"
#include "unit.h"

#include <fcntl.h>

static void setup(void)
{
	unit_enter_tmpdir();
}

static void teardown(void)
{
	unit_leave_tmpdir();
}

TestSuite(fsutil, .init = setup, .fini = teardown);

static const char *file_text(const char *path)
{
	static struct al_strbuf sb = AL_STRBUF_INIT;

	al_strbuf_reset(&sb);
	cr_assert_eq(al_strbuf_read_file(&sb, path, 0), 0, "cannot read %s", path);
	return sb.buf;
}

static bool exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

Test(fsutil, write_atomic_creates_and_replaces)
{
	static const char binary[] = "a\0b\nc";
	struct al_strbuf sb = AL_STRBUF_INIT;

	cr_assert_eq(al_write_atomic("f.md", "first version\n", 14), 0, "%s", al_errmsg());
	cr_assert_str_eq(file_text("f.md"), "first version\n");
	cr_assert_eq(al_write_atomic("f.md", "v2", 2), 0, "%s", al_errmsg());
	cr_assert_str_eq(file_text("f.md"), "v2", "replaced, not appended or overlaid");
	cr_assert_not(exists("f.md.lock"), "no lock file is left behind");

	cr_assert_eq(al_write_atomic("f.md", "", 0), 0);
	cr_assert_str_eq(file_text("f.md"), "");
	cr_assert_eq(al_write_atomic("f.md", binary, sizeof(binary) - 1), 0);
	cr_assert_eq(al_strbuf_read_file(&sb, "f.md", 0), 0);
	cr_assert_eq(sb.len, sizeof(binary) - 1);
	cr_assert(!memcmp(sb.buf, binary, sb.len));
	al_strbuf_release(&sb);
}

Test(fsutil, write_atomic_never_changes_the_old_file_in_place)
{
	char buf[32] = { 0 };
	int fd;

	cr_assert_eq(al_write_atomic("f", "old content", 11), 0);
	fd = open("f", O_RDONLY);
	cr_assert_geq(fd, 0);
	cr_assert_eq(al_write_atomic("f", "new", 3), 0);
	/* a reader that opened the old file still sees all of it */
	cr_assert_eq(read(fd, buf, sizeof(buf) - 1), 11);
	cr_assert_str_eq(buf, "old content");
	close(fd);
	cr_assert_str_eq(file_text("f"), "new");
}

Test(fsutil, write_atomic_removes_a_stale_lock)
{
	unit_write("state.md", "old\n");
	unit_write("state.md.lock", "half written by a writer that died");
	cr_assert_eq(al_write_atomic("state.md", "new\n", 4), 0, "%s", al_errmsg());
	cr_assert_str_eq(file_text("state.md"), "new\n");
	cr_assert_not(exists("state.md.lock"));

	/* also when the file itself was never written */
	unit_write("fresh.md.lock", "x");
	cr_assert_eq(al_write_atomic("fresh.md", "y", 1), 0, "%s", al_errmsg());
	cr_assert_str_eq(file_text("fresh.md"), "y");
	cr_assert_not(exists("fresh.md.lock"));
}

Test(fsutil, write_atomic_into_a_missing_directory_fails)
{
	cr_assert_eq(al_write_atomic("no/such/dir/f", "x", 1), AL_ERROR);
	cr_assert_not_null(strstr(al_errmsg(), "no/such/dir/f"), "%s", al_errmsg());
	cr_assert_not(exists("no"));
}

/* a run's artifact or state whose directory an agent removed: the directory is made again */
Test(fsutil, run_files_are_written_where_their_directory_has_gone)
{
	cr_assert_eq(al_write_in_place("gone/logs/a.log", "a\n", 2), 0);
	cr_assert_eq(al_write_state("gone/node/state.md", "s\n", 2), 0);
	cr_assert_str_eq(unit_read("gone/logs/a.log"), "a\n");
	cr_assert_str_eq(unit_read("gone/node/state.md"), "s\n");
}

Test(fsutil, write_atomic_over_a_directory_fails_and_cleans_up)
{
	cr_assert_eq(mkdir("d", 0755), 0);
	cr_assert_eq(al_write_atomic("d", "x", 1), AL_ERROR);
	cr_assert_not_null(strstr(al_errmsg(), "'d'"), "%s", al_errmsg());
	cr_assert_not(exists("d.lock"), "the lock file is removed after a failure");
	cr_assert(al_dir_exists("d"));
}

Test(fsutil, fsync_is_on_by_default)
{
	unsetenv("AILOOP_FSYNC");
	cr_assert(al_fsync_enabled());
}

Test(fsutil, fsync_off_with_zero)
{
	setenv("AILOOP_FSYNC", "0", 1);
	cr_assert_not(al_fsync_enabled());
	cr_assert_eq(al_write_atomic("f", "x", 1), 0);
	cr_assert_str_eq(file_text("f"), "x");
}

Test(fsutil, fsync_on_with_anything_else)
{
	setenv("AILOOP_FSYNC", "1", 1);
	cr_assert(al_fsync_enabled());
}

Test(fsutil, mkdirs_makes_every_level)
{
	char abs[PATH_MAX + 16];

	cr_assert_eq(al_mkdirs("a/b/c"), 0, "%s", al_errmsg());
	cr_assert(al_dir_exists("a/b/c"));
	cr_assert_eq(al_mkdirs("a/b/c"), 0, "existing directories are fine");
	cr_assert_eq(al_mkdirs("a/b/d/"), 0, "a trailing slash is fine");
	cr_assert(al_dir_exists("a/b/d"));
	cr_assert_eq(al_mkdirs("a//e"), 0);
	cr_assert(al_dir_exists("a/e"));
	snprintf(abs, sizeof(abs), "%s/x/y", unit_dir);
	cr_assert_eq(al_mkdirs(abs), 0, "%s", al_errmsg());
	cr_assert(al_dir_exists("x/y"));
	cr_assert_eq(al_mkdirs("."), 0);
}

Test(fsutil, mkdirs_on_a_file_fails)
{
	unit_write("f", "a file");
	cr_assert_eq(al_mkdirs("f"), AL_ERROR);
	cr_assert_not_null(strstr(al_errmsg(), "'f'"), "%s", al_errmsg());
	cr_assert_eq(al_mkdirs("f/sub"), AL_ERROR);
	cr_assert_not_null(strstr(al_errmsg(), "f/sub"), "%s", al_errmsg());
	cr_assert_eq(al_mkdirs("a/f/sub"), 0);
	cr_assert_str_eq(file_text("f"), "a file");
}

Test(fsutil, append_line_adds_records_at_the_end)
{
	int fd = -1, missing = -1;

	cr_assert_eq(al_append_line(&fd, "events.jsonl", "{\"a\":1}\n", 8), 0, "%s", al_errmsg());
	cr_assert_eq(al_append_line(&fd, "events.jsonl", "{\"b\":2}\n", 8), 0);
	cr_assert_eq(al_append_line(&fd, "events.jsonl", "", 0), 0);
	cr_assert_str_eq(file_text("events.jsonl"), "{\"a\":1}\n{\"b\":2}\n");
	close(fd);
	cr_assert_eq(al_append_line(&missing, "missing/events.jsonl", "x\n", 2), AL_ERROR);
	cr_assert_not_null(strstr(al_errmsg(), "missing/events.jsonl"), "%s", al_errmsg());
}

Test(fsutil, exists_and_remove)
{
	unit_write("f", "x");
	cr_assert_eq(mkdir("d", 0755), 0);
	cr_assert(al_file_exists("f"));
	cr_assert_not(al_file_exists("d"));
	cr_assert_not(al_file_exists("nope"));
	cr_assert(al_dir_exists("d"));
	cr_assert_not(al_dir_exists("f"));
	cr_assert_not(al_dir_exists("nope"));
	cr_assert_eq(al_remove("f"), 0);
	cr_assert_not(exists("f"));
	cr_assert_eq(al_remove("f"), 0, "a missing file is not an error");
	cr_assert_eq(al_remove("d"), AL_ERROR, "a directory is not a file");
	cr_assert(al_dir_exists("d"));
}

Test(fsutil, mkdirs_of_an_empty_path_fails)
{
	cr_assert_eq(al_mkdirs(""), AL_ERROR);
	cr_assert_not_null(strstr(al_errmsg(), "''"), "%s", al_errmsg());
}

Test(fsutil, path_place_resolves_dots_as_text_and_links_on_disk)
{
	char *real;

	cr_assert_eq(mkdir("root", 0755), 0);
	unit_write("outside.md", "x");
	cr_assert_eq(chdir("root"), 0);
	unit_write("a/b.md", "x");
	cr_assert_eq(symlink("../outside.md", "out.md"), 0);
	cr_assert_eq(symlink("a", "in"), 0);
	cr_assert_eq(symlink("../../outside.md", "a/deep.md"), 0);

	cr_assert_eq(al_path_place("a/b.md", &real), AL_PATH_INSIDE);
	cr_assert_eq(al_path_place("no/such/file.md", &real), AL_PATH_INSIDE, "not there: as written");
	cr_assert_eq(al_path_place("a/../a/./b.md", &real), AL_PATH_INSIDE);
	cr_assert_eq(al_path_place("in/b.md", &real), AL_PATH_INSIDE, "a link that stays inside");
	cr_assert_eq(al_path_place("../outside.md", &real), AL_PATH_OUTSIDE);
	cr_assert_eq(al_path_place("a/../../outside.md", &real), AL_PATH_OUTSIDE);
	cr_assert_eq(al_path_place("..", &real), AL_PATH_OUTSIDE);
	cr_assert_eq(al_path_place("/etc/passwd", &real), AL_PATH_OUTSIDE);
	cr_assert_eq(al_path_place("/", &real), AL_PATH_OUTSIDE);
	cr_assert_null(real);
	cr_assert_eq(al_path_place("out.md", &real), AL_PATH_LINK_OUTSIDE);
	cr_assert(al_ends_with(real, "/outside.md"), "%s", real);
	free(real);
	cr_assert_eq(al_path_place("in/deep.md", &real), AL_PATH_LINK_OUTSIDE);
	free(real);
}

Test(fsutil, path_place_takes_absolute_paths_inside_the_root)
{
	char cwd[PATH_MAX], *path, *real;

	cr_assert_not_null(getcwd(cwd, sizeof(cwd)));
	unit_write("f.md", "x");
	path = al_xprintf("%s/f.md", cwd);
	cr_assert_eq(al_path_place(path, &real), AL_PATH_INSIDE);
	free(path);
	path = al_xprintf("%s-other/f.md", cwd); /* a sibling that shares the prefix */
	cr_assert_eq(al_path_place(path, &real), AL_PATH_OUTSIDE);
	free(path);
}

Test(fsutil, refuse_symlink_names_the_link)
{
	cr_assert_eq(mkdir("dir", 0755), 0);
	cr_assert_eq(symlink("dir", "link"), 0);
	cr_assert_eq(al_refuse_symlink("dir"), 0);
	cr_assert_eq(al_refuse_symlink("missing"), 0, "what is not there is made later");
	cr_assert_eq(al_refuse_symlink("link"), AL_ENOTFOUND);
	cr_assert(strstr(al_errmsg(), "'link' is a symbolic link"), "%s", al_errmsg());
}

Test(fsutil, append_line_never_writes_through_a_link)
{
	int fd = -1;

	unit_write("target", "kept\n");
	cr_assert_eq(symlink("target", "log"), 0);
	cr_assert_lt(al_append_line(&fd, "log", "x\n", 2), 0);
	cr_assert_str_eq(file_text("target"), "kept\n");
}

Test(fsutil, write_in_place_keeps_the_inode_and_cuts_the_old_tail)
{
	struct stat before, after;

	cr_assert_eq(al_write_in_place("out.md", "a longer first version\n", 23), 0, "%s",
		     al_errmsg());
	cr_assert_str_eq(file_text("out.md"), "a longer first version\n");
	cr_assert_eq(stat("out.md", &before), 0);
	cr_assert_eq(al_write_in_place("out.md", "short\n", 6), 0, "%s", al_errmsg());
	cr_assert_str_eq(file_text("out.md"), "short\n", "nothing of the longer old text is left");
	cr_assert_eq(stat("out.md", &after), 0);
	cr_assert_eq(after.st_ino, before.st_ino, "written over, not replaced");
	cr_assert_not(exists("out.md.lock"));
	cr_assert_eq(al_write_in_place("out.md", "", 0), 0);
	cr_assert_str_eq(file_text("out.md"), "");
}

Test(fsutil, write_in_place_replaces_links_instead_of_writing_through_them)
{
	struct stat st;

	unit_write("target", "the agent's own file\n");
	cr_assert_eq(symlink("target", "sym.md"), 0);
	cr_assert_eq(al_write_in_place("sym.md", "ours\n", 5), 0, "%s", al_errmsg());
	cr_assert_str_eq(file_text("target"), "the agent's own file\n", "the link's target is intact");
	cr_assert_eq(lstat("sym.md", &st), 0);
	cr_assert(S_ISREG(st.st_mode), "the symbolic link was replaced by a file");
	cr_assert_str_eq(file_text("sym.md"), "ours\n");

	cr_assert_eq(link("target", "hard.md"), 0);
	cr_assert_eq(al_write_in_place("hard.md", "ours\n", 5), 0, "%s", al_errmsg());
	cr_assert_str_eq(file_text("target"), "the agent's own file\n", "the other link is intact");
	cr_assert_str_eq(file_text("hard.md"), "ours\n");
}

Test(fsutil, write_in_place_errors_name_the_file)
{
	unit_write("file", "x");
	cr_assert_eq(al_write_in_place("file/f", "x", 1), AL_ERROR);
	cr_assert_not_null(strstr(al_errmsg(), "file/f"), "%s", al_errmsg());
	cr_assert_eq(mkdir("d", 0755), 0);
	cr_assert_eq(al_write_in_place("d", "x", 1), AL_ERROR);
	cr_assert(al_dir_exists("d"));
}

Test(fsutil, files_written_in_place_are_remembered_until_cleared)
{
	struct stat a, b;

	al_rewritten_clear();
	unit_write("b.md", "b\n");
	cr_assert_eq(al_write_in_place("a.md", "a\n", 2), 0);
	cr_assert_eq(stat("a.md", &a), 0);
	cr_assert_eq(stat("b.md", &b), 0);
	cr_assert(al_rewritten(&a), "a file written in place is remembered");
	cr_assert_not(al_rewritten(&b), "a file written otherwise is not");
	al_rewritten_clear();
	cr_assert_not(al_rewritten(&a), "until the commit that staged it");
}

Test(fsutil, write_state_trades_two_inodes_and_keeps_its_scratch)
{
	struct stat first, second, third;

	cr_assert_eq(al_write_state("state.md", "one\n", 4), 0, "%s", al_errmsg());
	cr_assert_str_eq(file_text("state.md"), "one\n");
	cr_assert_eq(stat("state.md", &first), 0);
	cr_assert_eq(al_write_state("state.md", "a longer two\n", 13), 0, "%s", al_errmsg());
	cr_assert_str_eq(file_text("state.md"), "a longer two\n");
	cr_assert_str_eq(file_text("state.md.lock"), "one\n", "the scratch holds the old text");
	cr_assert_eq(stat("state.md", &second), 0);
	cr_assert_neq(second.st_ino, first.st_ino, "the new text is another inode");
	cr_assert_eq(al_write_state("state.md", "3\n", 2), 0, "%s", al_errmsg());
	cr_assert_str_eq(file_text("state.md"), "3\n", "nothing of the longer old text is left");
	cr_assert_eq(stat("state.md", &third), 0);
	cr_assert_eq(third.st_ino, first.st_ino, "the two inodes trade places: none is made");
	cr_assert(al_rewritten(&third), "a state file's new text is remembered for staging");
	al_rewritten_clear();
}

Test(fsutil, write_state_replaces_a_scratch_that_is_a_link)
{
	unit_write("target", "the agent's own file\n");
	cr_assert_eq(symlink("target", "s.md.lock"), 0);
	cr_assert_eq(al_write_state("s.md", "ours\n", 5), 0, "%s", al_errmsg());
	cr_assert_str_eq(file_text("target"), "the agent's own file\n", "the link's target is intact");
	cr_assert_str_eq(file_text("s.md"), "ours\n");
	cr_assert_eq(link("target", "s.md.lock"), 0);
	cr_assert_eq(al_write_state("s.md", "again\n", 6), 0, "%s", al_errmsg());
	cr_assert_str_eq(file_text("target"), "the agent's own file\n", "the other link is intact");
	cr_assert_str_eq(file_text("s.md"), "again\n");
	al_rewritten_clear();
}

Test(fsutil, write_state_errors_name_the_file)
{
	unit_write("file", "x");
	cr_assert_eq(al_write_state("file/s.md", "x", 1), AL_ERROR);
	cr_assert_not_null(strstr(al_errmsg(), "file/s.md.lock"), "%s", al_errmsg());
	cr_assert_eq(mkdir("d.md.lock", 0755), 0);
	cr_assert_eq(al_write_state("d.md", "x", 1), AL_ERROR);
	cr_assert_not_null(strstr(al_errmsg(), "d.md.lock"), "%s", al_errmsg());
	cr_assert_not(exists("d.md"), "nothing was written");
}
