#include "git_repo.h"
#include "ailoop/fsutil.h"
#include "ailoop/run.h"
#include "ailoop/strbuf.h"
#include "ailoop/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*
 * The mark that HEAD holds a run's state (git.h): "boot <id>\nrun <dir>\n"
 * in the git directory, where it is never committed and stays with the
 * work tree whatever branch is checked out.
 */
#define MARK_FILE "ailoop-restorable"

static char *mark_path(struct al_git *g)
{
	return al_xprintf("%s" MARK_FILE, al_git_dir(g));
}

int al_git_mark_restorable(struct al_git *g, const char *own_dir)
{
	const char *boot = al_boot_id();
	char *path, *text;
	int rc;

	if (!boot) /* a restart could not be told: every agent's start stays a durable point */
		return 0;
	path = mark_path(g);
	text = al_xprintf("boot %s\nrun %s\n", boot, own_dir);
	rc = al_write_atomic(path, text, strlen(text));
	if (rc == 0)
		g->restorable = true;
	free(text);
	free(path);
	return rc;
}

/* Takes the mark away once what was written so far (and the mark's own removal) is durable. */
static int unmark(const char *path)
{
	int rc;

	al_durable_written();
	if ((rc = al_durable_point()) < 0)
		return rc;
	if (unlink(path) < 0 && errno != ENOENT)
		return al_err(AL_ERROR, "cannot remove '%s': %s", path, strerror(errno));
	al_durable_written();
	return al_durable_point();
}

int al_git_unmark_restorable(struct al_git *g)
{
	char *path;
	int rc;

	if (!g || !g->restorable)
		return 0;
	path = mark_path(g);
	rc = unmark(path);
	free(path);
	if (rc == 0) {
		g->restorable = false;
		al_durable_relax(false);
	}
	return rc;
}

/* The mark's run directory, if it is one a run of this repository could have. */
static const char *run_dir_of(const char *text, const char **boot)
{
	static char dir[4096], id[64];

	if (sscanf(text, "boot %63s\nrun %4095s\n", id, dir) != 2)
		return NULL;
	*boot = id;
	if (!al_git_below(dir, AL_RUNS_DIR) || !strcmp(dir, AL_RUNS_DIR) || strstr(dir, ".."))
		return NULL;
	return dir;
}

/*
 * The run's logs (events.jsonl, memory.jsonl, …) are appended to and in no
 * commit: a restart may leave a torn last line, which is ended here so
 * that the next line appended is whole (readers skip the torn one).
 */
static void end_torn_lines(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	while (d && (e = readdir(d))) {
		size_t n = strlen(e->d_name);
		char *path, last;
		int fd;

		if (n < 6 || strcmp(e->d_name + n - 6, ".jsonl"))
			continue;
		path = al_xprintf("%s/%s", dir, e->d_name);
		fd = open(path, O_RDWR | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
		if (fd >= 0 && pread(fd, &last, 1, lseek(fd, 0, SEEK_END) - 1) == 1 && last != '\n' &&
		    al_write_all(fd, "\n", 1) == 0)
			al_durable_written();
		if (fd >= 0)
			close(fd);
		free(path);
	}
	if (d)
		closedir(d);
}

/* Restores the files of the run in `dir` from HEAD, if HEAD has them. */
static int restore_run(struct al_git *g, const char *dir)
{
	git_oid head;
	git_commit *commit = NULL;
	git_tree *tree = NULL;
	git_tree_entry *entry = NULL;
	char hex[8];
	int rc = 0;

	/* a run HEAD does not have ran with every durable point: nothing to restore */
	if (git_reference_name_to_id(&head, g->repo, "HEAD") < 0 ||
	    git_commit_lookup(&commit, g->repo, &head) < 0 || git_commit_tree(&tree, commit) < 0 ||
	    git_tree_entry_bypath(&entry, tree, dir) < 0)
		goto done;
	end_torn_lines(dir);
	al_git_clear_stale_locks(g, NULL); /* a restart left them: nobody holds them */
	if ((rc = al_git_restore_tree(g, tree, NULL, dir)) == 0)
		fprintf(stderr, "ailoop: the machine restarted while run %s was between two "
			"commits: its files are as its last commit (%s) left them\n",
			strrchr(dir, '/') + 1, git_oid_tostr(hex, sizeof(hex), &head));
done:
	git_tree_entry_free(entry);
	git_tree_free(tree);
	git_commit_free(commit);
	return rc;
}

int al_git_recover_restart(struct al_git *g)
{
	struct al_strbuf text = AL_STRBUF_INIT;
	const char *dir, *boot = NULL, *now = al_boot_id();
	char *path = mark_path(g);
	int rc = 0;

	if (al_strbuf_read_file(&text, path, 8192) < 0) {
		if (errno != ENOENT)
			rc = al_err(AL_ERROR, "cannot read '%s': %s", path,
				    al_strbuf_read_strerror(errno));
		goto done;
	}
	/*
	 * A mark torn by the restart was being written when the run's first
	 * commit had not yet made anything relaxed: nothing to restore.
	 */
	dir = run_dir_of(text.buf ? text.buf : "", &boot);
	if (dir && (!now || strcmp(boot, now)))
		rc = restore_run(g, dir);
	/* this boot's: the killed process's writes are all in the page cache */
	if (rc == 0)
		rc = unmark(path);
done:
	al_strbuf_release(&text);
	free(path);
	return rc;
}
