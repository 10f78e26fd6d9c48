#include "git_repo.h"
#include "ailoop/base/fsutil.h"
#include "ailoop/proc/proc.h"
#include "ailoop/base/paths.h"
#include "ailoop/base/strbuf.h"
#include "ailoop/base/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/*
 * The mark that HEAD holds a run's state (git.h): "boot <id>\nrun <dir>\n"
 * in the git directory, where it is never committed and stays with the
 * work tree whatever branch is checked out. Two slots follow, each the
 * intent of a commit in turn, "intent <n> <time> <old> <new> <ref>\n" padded
 * with newlines: written in place before the commit's durable point, one
 * slot is always whole on disk for the commit before, whose branch move
 * the point being written may not yet have made durable. Before the run's
 * first commit in a process, the mark is pending: "boot <id>\nsince
 * <time>\n", the objects written from then on may be torn by a restart.
 */
#define MARK_FILE "ailoop-restorable"
#define SLOT_SIZE 512

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
	if (rc == 0) {
		g->restorable = true;
		g->pending = false;
		g->mark_len = strlen(text);
		g->intents = 0;
	}
	free(text);
	free(path);
	return rc;
}

int al_git_mark_pending(struct al_git *g)
{
	const char *boot = al_boot_id();
	char *path, *text;
	int rc = 0;

	if (!boot || g->restorable || g->pending)
		return 0;
	path = mark_path(g);
	if (access(path, F_OK) < 0) {
		text = al_xprintf("boot %s\nsince %lld\n", boot, (long long)time(NULL));
		if ((rc = al_write_atomic(path, text, strlen(text))) == 0) {
			g->pending = true;
			al_durable_written();
			rc = al_durable_point();
		}
		free(text);
	}
	free(path);
	return rc;
}

int al_git_intend(struct al_git *g, const char *ref, const git_oid *old, const git_oid *id)
{
	char slot[SLOT_SIZE], from[GIT_OID_HEXSZ + 1], to[GIT_OID_HEXSZ + 1], *path;
	int n, fd, rc = -1;

	if (!g->restorable)
		return -1;
	n = snprintf(slot, sizeof(slot), "intent %lu %lld %s %s %s\n", g->intents + 1,
		     (long long)time(NULL), git_oid_tostr(from, sizeof(from), old),
		     git_oid_tostr(to, sizeof(to), id), ref ? ref : "HEAD");
	if (n < 0 || (size_t)n >= sizeof(slot))
		return -1; /* a ref name too long for a slot: this move is synced at once */
	memset(slot + n, '\n', sizeof(slot) - (size_t)n);
	path = mark_path(g);
	fd = open(path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0 && pwrite(fd, slot, sizeof(slot),
			      (off_t)(g->mark_len + (g->intents % 2) * SLOT_SIZE)) == SLOT_SIZE) {
		g->intents++;
		al_durable_written();
		rc = 0;
	}
	if (fd >= 0)
		close(fd);
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

	if (!g || (!g->restorable && !g->pending))
		return 0;
	path = mark_path(g);
	rc = unmark(path);
	free(path);
	if (rc == 0) {
		g->restorable = false;
		g->pending = false;
		al_durable_relax(false);
	}
	return rc;
}

/*
 * The mark's run directory, if it is one a run of this repository could
 * have; NULL for a pending mark, whose time is in *since.
 */
static const char *run_dir_of(const char *text, const char **boot, long long *since)
{
	static char dir[4096], id[64];

	*boot = NULL;
	*since = -1;
	if (sscanf(text, "boot %63s\nsince %lld\n", id, since) == 2) {
		*boot = id;
		return NULL;
	}
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
	char hex[8];
	int rc;

	end_torn_lines(dir);
	rc = al_git_restore_from_head(g, dir, hex);
	if (rc == 0)
		fprintf(stderr, "ailoop: the machine restarted while run %s was between two "
			"commits: its files are as its last commit (%s) left them\n",
			strrchr(dir, '/') + 1, hex);
	/* a run HEAD does not have ran with every durable point: nothing to restore */
	return rc == AL_ENOTFOUND ? 0 : rc;
}

/* A commit's intent, read back from the mark. */
struct intent {
	unsigned long n;
	long long time; /* when it was written */
	git_oid old, id;
	char ref[SLOT_SIZE];
};

/* The intents in the slots after the mark's own lines, in the order they were written. */
static size_t read_intents(const char *text, size_t len, struct intent out[2])
{
	const char *slots = memchr(text, '\n', len);
	size_t n = 0;

	slots = slots ? memchr(slots + 1, '\n', len - (size_t)(slots + 1 - text)) : NULL;
	for (size_t i = 0; slots && i < 2; i++) {
		size_t at = (size_t)(slots + 1 - text) + i * SLOT_SIZE;
		char slot[SLOT_SIZE + 1], old[GIT_OID_HEXSZ + 1], id[GIT_OID_HEXSZ + 1];
		struct intent *in = &out[n];

		if (at + SLOT_SIZE > len)
			break;
		memcpy(slot, text + at, SLOT_SIZE);
		slot[SLOT_SIZE] = '\0';
		/* torn, or not written yet: whatever does not read whole is no intent */
		if (sscanf(slot, "intent %lu %lld %40[0-9a-f] %40[0-9a-f] %511[^\n]", &in->n,
			   &in->time, old, id, in->ref) == 5 &&
		    git_oid_fromstr(&in->old, old) == 0 && git_oid_fromstr(&in->id, id) == 0 &&
		    (al_starts_with(in->ref, "refs/heads/") || !strcmp(in->ref, "HEAD")))
			n++;
	}
	if (n == 2 && out[0].n > out[1].n) {
		struct intent t = out[0];

		out[0] = out[1];
		out[1] = t;
	}
	return n;
}

/*
 * Whether object `id` reads whole (inflated, its hash checked). With
 * `drop`, a loose one whose content the restart tore (not one the system
 * failed to read) is removed: libgit2 would keep it as it is when the
 * same object is written again, and a commit would name it torn.
 */
/* Whether libgit2's last error is of what it read, not of the system that read it. */
static bool content_error(void)
{
	const git_error *e = git_error_last();

	return e && e->klass != GIT_ERROR_OS && e->klass != GIT_ERROR_NOMEMORY;
}

static bool object_whole(git_repository *repo, git_odb *odb, const git_oid *id, bool drop)
{
	git_odb_object *obj = NULL;
	int rc = git_odb_read(&obj, odb, id);

	git_odb_object_free(obj);
	if (rc == 0)
		return true;
	if (drop && rc != GIT_ENOTFOUND && content_error()) {
		char hex[GIT_OID_HEXSZ + 1];
		char *file = al_xprintf("%sobjects/%.2s/%s", git_repository_commondir(repo),
					git_oid_tostr(hex, sizeof(hex), id), hex + 2);

		if (unlink(file) == 0)
			al_durable_written();
		free(file);
	}
	return false;
}

/* Whether every object of tree `id` that `base` (may be NULL) lacks reads whole. */
static bool tree_whole(git_repository *repo, git_odb *odb, const git_oid *id, git_tree *base)
{
	git_tree *tree = NULL;
	bool whole = git_tree_lookup(&tree, repo, id) == 0; /* read whole, its hash checked */

	for (size_t i = 0; whole && i < git_tree_entrycount(tree); i++) {
		const git_tree_entry *e = git_tree_entry_byindex(tree, i);
		const git_tree_entry *b = base ? git_tree_entry_byname(base, git_tree_entry_name(e))
					       : NULL;
		git_tree *sub = NULL;

		if (b && git_oid_equal(git_tree_entry_id(b), git_tree_entry_id(e)))
			continue; /* the parent's, whole since its commit's point */
		switch (git_tree_entry_type(e)) {
		case GIT_OBJECT_TREE:
			if (b && git_tree_entry_type(b) == GIT_OBJECT_TREE)
				git_tree_lookup(&sub, repo, git_tree_entry_id(b));
			whole = tree_whole(repo, odb, git_tree_entry_id(e), sub);
			git_tree_free(sub);
			break;
		case GIT_OBJECT_BLOB:
			whole = object_whole(repo, odb, git_tree_entry_id(e), false);
			break;
		default: /* a nested repository's commit, not in this store */
			break;
		}
	}
	git_tree_free(tree);
	return whole;
}

/*
 * Removes the loose objects written since `since` that the restart tore:
 * those of a commit that did not happen (its intent was written before
 * the point that would have made them durable, the last commit's after
 * it), found by their time, for a torn tree hides what is below it.
 */
static void drop_torn_since(git_repository *repo, long long since)
{
	git_odb *odb = NULL;

	if (git_repository_odb(&odb, repo) < 0)
		return;
	for (int i = 0; i < 256; i++) {
		char *path = al_xprintf("%sobjects/%02x", git_repository_commondir(repo), i);
		DIR *d = opendir(path);
		struct dirent *e;

		while (d && (e = readdir(d))) {
			char hex[GIT_OID_HEXSZ + 1];
			struct stat st;
			git_oid id;

			if (strlen(e->d_name) != GIT_OID_HEXSZ - 2)
				continue;
			snprintf(hex, sizeof(hex), "%02x", i);
			memcpy(hex + 2, e->d_name, GIT_OID_HEXSZ - 2);
			hex[GIT_OID_HEXSZ] = '\0';
			if (git_oid_fromstr(&id, hex) == 0 &&
			    fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
			    st.st_mtime >= since)
				object_whole(repo, odb, &id, true);
		}
		if (d)
			closedir(d);
		free(path);
	}
	git_odb_free(odb);
}

/* Takes the entries that name commit `id` out of the reflogs of `ref` and HEAD. */
static void drop_from_reflogs(git_repository *repo, const char *ref, const git_oid *id)
{
	const char *names[] = { ref, "HEAD" };

	for (size_t k = 0; k < (strcmp(ref, "HEAD") ? 2u : 1u); k++) {
		git_reflog *log = NULL;
		size_t dropped = 0;

		if (git_reflog_read(&log, repo, names[k]) < 0)
			continue;
		for (size_t i = git_reflog_entrycount(log); i-- > 0;)
			if (git_oid_equal(git_reflog_entry_id_new(git_reflog_entry_byindex(log, i)), id) &&
			    git_reflog_drop(log, i, 1) == 0)
				dropped++;
		if (dropped && git_reflog_write(log) == 0)
			al_durable_written();
		git_reflog_free(log);
	}
}

/* Whether commit `id`, on `parent`, and all it adds to it read whole. */
static bool commit_whole(git_repository *repo, const git_oid *id, const git_oid *parent)
{
	git_commit *commit = NULL, *before = NULL;
	git_tree *base = NULL;
	git_odb *odb = NULL;
	bool whole = git_repository_odb(&odb, repo) == 0 &&
		     git_commit_lookup(&commit, repo, id) == 0 && /* read whole, its hash checked */
		     git_commit_parentcount(commit) == 1 &&
		     git_oid_equal(git_commit_parent_id(commit, 0), parent) &&
		     git_commit_lookup(&before, repo, parent) == 0 &&
		     git_commit_tree(&base, before) == 0 &&
		     tree_whole(repo, odb, git_commit_tree_id(commit), base);

	git_odb_free(odb);
	git_tree_free(base);
	git_commit_free(before);
	git_commit_free(commit);
	return whole;
}

/* Where ref `name` points: 1 (*now), 0 if its file is torn or gone, -1 if it is symbolic. */
static int ref_target(git_repository *repo, const char *name, git_oid *now)
{
	git_reference *ref = NULL;
	int rc = 0;

	if (git_reference_lookup(&ref, repo, name) == 0)
		rc = git_reference_type(ref) == GIT_REFERENCE_DIRECT ? 1 : -1;
	if (rc > 0)
		git_oid_cpy(now, git_reference_target(ref));
	git_reference_free(ref);
	return rc;
}

/* Moves ref `name` to `id` again, over a file that may be torn. */
static int move_again(struct al_git *g, const char *name, const git_oid *id, bool torn)
{
	git_reference *moved = NULL;
	char hex[8];
	int rc = 0;

	if (torn) { /* libgit2 will not replace a ref it cannot read */
		char *file = al_xprintf("%s%s", strcmp(name, "HEAD") ? git_repository_commondir(g->repo)
								    : git_repository_path(g->repo),
					name);

		if (unlink(file) < 0 && errno != ENOENT)
			rc = al_err(AL_ERROR, "cannot remove '%s': %s", file, strerror(errno));
		free(file);
		if (rc < 0)
			return rc;
	}
	if (git_reference_create(&moved, g->repo, name, id, 1,
				 "ailoop: the run's commit, found again after a restart") < 0)
		return al_git_fail("cannot move the branch to the run's last commit");
	git_reference_free(moved);
	al_durable_written();
	fprintf(stderr, "ailoop: the machine restarted before %s was on disk at the run's last "
		"commit (%s): it is there again\n", name, git_oid_tostr(hex, sizeof(hex), id));
	return 0;
}

/*
 * git's index of `repo` (`whose`: "" or " of worktree <path>"), torn by
 * the restart as a commit wrote it (it is written anew at every commit,
 * durable at the commit's point): made again from HEAD, whose files the
 * next commit hashes again. git would not read it.
 */
static int repair_index(git_repository *repo, const char *whose)
{
	char *path = al_xprintf("%sindex", git_repository_path(repo));
	git_index *index = NULL;
	git_commit *commit = NULL;
	git_tree *tree = NULL;
	git_oid head;
	int rc = 0;

	if (git_index_open(&index, path) == 0 || !content_error())
		goto done; /* whole (or gone), or not to be read: the run says so later */
	if (unlink(path) < 0) {
		rc = al_err(AL_ERROR, "cannot remove '%s': %s", path, strerror(errno));
		goto done;
	}
	git_index_free(index);
	index = NULL;
	if (git_repository_index(&index, repo) < 0 ||
	    (git_reference_name_to_id(&head, repo, "HEAD") == 0 &&
	     (git_commit_lookup(&commit, repo, &head) < 0 ||
	      git_commit_tree(&tree, commit) < 0 || git_index_read_tree(index, tree) < 0)) ||
	    git_index_write(index) < 0) {
		rc = al_git_fail("cannot make git's index again");
		goto done;
	}
	al_durable_written();
	fprintf(stderr, "ailoop: the machine restarted while git's index%s was written: "
		"it is made again from HEAD\n", whose);
done:
	git_tree_free(tree);
	git_commit_free(commit);
	git_index_free(index);
	free(path);
	return rc;
}

/*
 * The index of the work tree, then of each worktree (a parallel node's
 * children commit in theirs, their lock files left by the restart gone).
 */
static int repair_indexes(struct al_git *g)
{
	git_strarray names = { 0 };
	int rc = repair_index(g->repo, "");

	if (rc == 0 && git_worktree_list(&names, g->repo) < 0)
		names.count = 0;
	for (size_t i = 0; rc == 0 && i < names.count; i++) {
		git_worktree *wt = NULL;
		git_repository *repo = NULL;

		if (git_worktree_lookup(&wt, g->repo, names.strings[i]) == 0 &&
		    git_repository_open_from_worktree(&repo, wt) == 0) {
			char *lock = al_xprintf("%sindex.lock", git_repository_path(repo));
			char *whose = al_xprintf(" of worktree %s", git_worktree_path(wt));

			al_proc_remove_unheld(lock);
			rc = repair_index(repo, whose);
			free(whose);
			free(lock);
		}
		git_repository_free(repo);
		git_worktree_free(wt);
	}
	git_strarray_dispose(&names);
	return rc;
}

/* The time of the commit at HEAD, or 0 (from the start) if it cannot be read. */
static long long head_time(git_repository *repo)
{
	git_commit *commit = NULL;
	long long t = 0;
	git_oid id;

	if (git_reference_name_to_id(&id, repo, "HEAD") == 0 &&
	    git_commit_lookup(&commit, repo, &id) == 0)
		t = (long long)git_commit_time(commit);
	git_commit_free(commit);
	return t;
}

/*
 * A restart may have lost a branch's moves since the last durable point
 * (or torn the ref's file): each intent, in turn, whose ref names its old
 * commit (or cannot be read) and whose commit reads whole, moves the ref
 * there, as the run had. An intent whose commit did not reach the disk
 * whole leaves the ref where it is: the commit did not happen, and its
 * move leaves the reflogs; *torn_since is then the time from which the
 * objects the restart tore were written (drop_torn_since, after).
 */
static int roll_forward(struct al_git *g, const char *text, size_t len, long long *torn_since)
{
	struct intent in[2];
	size_t n = read_intents(text, len, in);
	int rc = 0;

	for (size_t i = 0; i < n && rc == 0; i++) {
		git_commit *old = NULL;
		long long since = in[i].time - 1; /* its objects were written since… */
		git_oid now;
		int at = ref_target(g->repo, in[i].ref, &now);

		if (at < 0 || (at > 0 && !git_oid_equal(&now, &in[i].old)))
			continue; /* moved on, or a symbolic ref: as the run left it */
		if (al_starts_with(in[i].ref, "refs/heads/"))
			al_git_clear_stale_locks(g, in[i].ref + strlen("refs/heads/"));
		if (commit_whole(g->repo, &in[i].id, &in[i].old)) {
			rc = move_again(g, in[i].ref, &in[i].id, at == 0);
			continue;
		}
		/* …the commit before was made (its time), and the intent before written */
		if (git_commit_lookup(&old, g->repo, &in[i].old) == 0 &&
		    (long long)git_commit_time(old) - 1 < since)
			since = (long long)git_commit_time(old) - 1;
		if (i > 0 && in[i - 1].time - 1 < since)
			since = in[i - 1].time - 1;
		if (since < *torn_since)
			*torn_since = since;
		drop_from_reflogs(g->repo, in[i].ref, &in[i].id);
		/* a torn ref: the commit the run was on, the one before (made durable then) */
		if (at == 0 && old)
			rc = move_again(g, in[i].ref, &in[i].old, true);
		git_commit_free(old);
	}
	return rc;
}

int al_git_recover_restart(struct al_git *g)
{
	struct al_strbuf text = AL_STRBUF_INIT;
	const char *dir, *boot, *now = al_boot_id();
	char *path = mark_path(g);
	long long since, torn_since = LLONG_MAX;
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
	dir = run_dir_of(text.buf ? text.buf : "", &boot, &since);
	if (boot && (dir || since >= 0) && (!now || strcmp(boot, now))) {
		/*
		 * The objects written since the last durable point (HEAD's
		 * commit's, or the pending mark's) may be torn, those of a
		 * commit that had not reached its intent too, and those of an
		 * intent's commit that did not happen: one pass over them all.
		 */
		al_git_clear_stale_locks(g, NULL); /* a restart left them: nobody holds them */
		if (dir && (rc = roll_forward(g, text.buf, text.len, &torn_since)) == 0)
			since = head_time(g->repo);
		if (rc == 0)
			drop_torn_since(g->repo, since - 1 < torn_since ? since - 1 : torn_since);
		if (rc == 0)
			rc = repair_indexes(g);
		if (dir && rc == 0)
			rc = restore_run(g, dir);
	}
	/* this boot's: the killed process's writes are all in the page cache */
	if (rc == 0)
		rc = unmark(path);
done:
	al_strbuf_release(&text);
	free(path);
	return rc;
}
