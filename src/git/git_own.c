/*
 * The run's own files that an agent removed or replaced (a node's
 * directory, `git restore --source=main .`, a link or a directory in
 * their place): staging puts them back as the index, or HEAD, has them,
 * instead of committing them as gone (git_stage.c). design.md: "An agent
 * may remove or replace the files of the run that git does track".
 */
#include "git_repo.h"
#include "ailoop/base/fsutil.h"
#include "ailoop/base/paths.h"
#include "ailoop/base/util.h"

#include <git2.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/*
 * A file of the run's own (under `own_dir`, or the runs' .gitignore) that
 * the index tracks and the work tree lost: an agent removed it (a node's
 * directory, `git restore --source=main .`), unless noted to be taken as
 * it is (al_as_is_note(): ailoop's own removal, an agent's output as its
 * call left it). Such a file is put back as the index has it, not
 * committed as gone: a node's task, a finished node's result and state
 * are written once, and a resume needs them.
 */
static bool restorable(const char *path, const char *own_dir)
{
	return ((own_dir && al_git_below(path, own_dir)) || !strcmp(path, AL_RUNS_DIR "/.gitignore")) &&
	       !al_git_unrecorded(path) && !al_as_is_noted(path);
}

/*
 * Clears the way to `path`, a file of the run's own: what stands where a
 * directory goes (al_clear_way()), and a directory, a link or anything not
 * plain where `path` goes, an agent's all (ailoop writes only plain files
 * and directories there).
 */
static int clear_way(const char *path)
{
	struct stat st;

	al_clear_way(path);
	if (lstat(path, &st) < 0)
		return 0;
	if (S_ISDIR(st.st_mode))
		return al_remove_tree(path);
	if (!S_ISREG(st.st_mode) && unlink(path) < 0)
		return al_err(AL_ERROR, "cannot remove '%s': %s", path, strerror(errno));
	return 0;
}

/* Writes blob `id` to `path`, as the run's files are written (the directory made if gone). */
static int put_back(struct al_git *g, const git_oid *id, const char *path)
{
	git_blob *blob = NULL;
	int rc = git_blob_lookup(&blob, g->repo, id);

	if (rc == 0 && (rc = clear_way(path)) == 0)
		rc = al_write_in_place(path, git_blob_rawcontent(blob), (size_t)git_blob_rawsize(blob));
	git_blob_free(blob);
	return rc;
}

/*
 * Whether `path`, below the run's directory, is what no run file is: a
 * symbolic link or something else not plain (ailoop writes none there), or
 * a directory where the index has a file. restore_own() then puts the
 * run's files back in its place (al_git_own_replaced()).
 */
bool al_git_own_tampered(git_index *index, const char *path, const char *own_dir)
{
	struct stat st;

	if (!own_dir || !al_git_below(path, own_dir) || !strcmp(path, own_dir) ||
	    al_as_is_noted(path) || lstat(path, &st) < 0)
		return false;
	if (S_ISDIR(st.st_mode))
		return git_index_get_bypath(index, path, 0) != NULL;
	return !S_ISREG(st.st_mode);
}

static int restore_own_file(struct al_git *g, git_index *index, const git_index_entry *e)
{
	char *path = al_strdup(e->path); /* the entry goes as the index changes */
	int rc = put_back(g, &e->id, path);

	if (rc == 0) /* and what an agent's directory in its place added below it */
		rc = git_index_remove_directory(index, path, 0);
	if (rc == 0)
		rc = al_git_add_own_file(g, index, path);
	free(path);
	return rc;
}

/*
 * Stages `path` as gone (a file, or a directory and everything below it),
 * but for the run's own files (restorable()), which are put back as the
 * index has them: removed below a directory in one go, then added again.
 */
int al_git_own_gone(struct al_git *g, git_index *index, const char *path, const char *own_dir)
{
	const git_index_entry *e = git_index_get_bypath(index, path, 0);
	char *dir = al_xprintf("%s/", path);
	struct kept {
		char *path;
		git_oid id;
	} *kept = NULL;
	size_t n = 0, alloc = 0, pos;
	int rc = 0;

	if (e) {
		free(dir);
		return restorable(path, own_dir) ? restore_own_file(g, index, e)
						 : git_index_remove_bypath(index, path);
	}
	if (git_index_find_prefix(&pos, index, dir) == 0)
		for (; (e = git_index_get_byindex(index, pos)) && al_starts_with(e->path, dir); pos++)
			if (restorable(e->path, own_dir)) {
				AL_GROW(kept, n, alloc);
				kept[n].path = al_strdup(e->path);
				git_oid_cpy(&kept[n++].id, &e->id);
			}
	rc = git_index_remove_directory(index, path, 0);
	for (size_t i = 0; i < n; i++) {
		if (rc == 0 && (rc = put_back(g, &kept[i].id, kept[i].path)) == 0)
			rc = al_git_add_own_file(g, index, kept[i].path);
		free(kept[i].path);
	}
	free(kept);
	free(dir);
	return rc;
}

/* A walk of HEAD's tree of the run's directory (al_git_own_from_head). */
struct restore_walk {
	struct al_git *g;
	const char *own_dir;
	int rc;
};

/* Puts back one file of the run's own that HEAD has and the work tree lost. */
static int restore_from_tree(const char *root, const git_tree_entry *te, void *data)
{
	struct restore_walk *w = data;
	char *path = al_xprintf("%s/%s%s", w->own_dir, root, git_tree_entry_name(te));
	struct stat st;

	if (git_tree_entry_type(te) == GIT_OBJECT_TREE && al_git_sibling_dir(path)) {
		free(path);
		return 1; /* a sibling's, whose commit puts it back */
	}
	if (git_tree_entry_type(te) == GIT_OBJECT_BLOB && lstat(path, &st) < 0 &&
	    (errno == ENOENT || errno == ENOTDIR) && restorable(path, w->own_dir))
		w->rc = put_back(w->g, git_tree_entry_id(te), path);
	free(path);
	return w->rc < 0 ? -1 : 0;
}

/*
 * Before a full scan: the files of the run's own that HEAD has and the
 * work tree lost are put back (restorable()). The index cannot tell them
 * where an agent changed it too (`git restore --staged`, `git rm
 * --cached`); HEAD is the run's last commit (al_git_check_head).
 */
int al_git_own_from_head(struct al_git *g, const char *own_dir)
{
	struct restore_walk w = { g, own_dir, 0 };
	git_object *tree = NULL, *ignore = NULL;
	char *spec = al_xprintf("HEAD:%s", own_dir);

	if (git_revparse_single(&tree, g->repo, spec) == 0 &&
	    git_object_type(tree) == GIT_OBJECT_TREE &&
	    git_tree_walk((git_tree *)tree, GIT_TREEWALK_PRE, restore_from_tree, &w) < 0 &&
	    w.rc == 0)
		w.rc = -1;
	if (w.rc == 0 && !al_file_exists(AL_RUNS_DIR "/.gitignore") &&
	    git_revparse_single(&ignore, g->repo, "HEAD:" AL_RUNS_DIR "/.gitignore") == 0 &&
	    git_object_type(ignore) == GIT_OBJECT_BLOB)
		w.rc = put_back(g, git_object_id(ignore), AL_RUNS_DIR "/.gitignore");
	git_object_free(ignore);
	git_object_free(tree);
	free(spec);
	git_error_clear();
	return w.rc;
}

/*
 * A parallel child in a worktree of its own: the runs' entries of the
 * index are HEAD's again, whatever an agent did to them there (`git
 * restore --staged`, `git rm --cached`): its commits leave the runs' files
 * as they were, and its merge takes nothing of them back.
 */
int al_git_runs_as_head(struct al_git *g)
{
	char *paths[] = { AL_RUNS_DIR };
	git_strarray spec = { paths, 1 };
	git_object *head = NULL;
	int rc = 0;

	if (git_revparse_single(&head, g->repo, "HEAD") == 0)
		rc = git_reset_default(g->repo, head, &spec);
	git_object_free(head);
	return rc < 0 ? al_git_fail("cannot keep the runs' files in the index as HEAD has them")
		      : 0;
}

int al_git_own_replaced(struct al_git *g, git_index *index, const char *path, const char *own_dir)
{
	int rc = clear_way(path);

	return rc < 0 ? rc : al_git_own_gone(g, index, path, own_dir);
}
