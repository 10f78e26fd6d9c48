/*
 * A file of the work tree as a blob and an index entry (git_stage.c
 * stages with them): ailoop's own files directly, a file staged ahead
 * (git_prestage.c) from what was kept, any other through libgit2.
 */
#include "git_repo.h"
#include "ailoop/base/fsutil.h"
#include "ailoop/base/strbuf.h"

#include <git2.h>
#include <string.h>
#include <sys/stat.h>

/*
 * A blob of `buf`, written only if the object store lacks it: libgit2's
 * loose store makes a temporary file for every object written, then
 * deletes it when the object is there already, which on ext4 costs an
 * inode made and freed. Most of a run's files repeat a text seen before.
 * One it lacks is written through the loose objects at once, without the
 * two look-ups libgit2 makes of every object it writes.
 */
int al_git_write_blob(struct al_git *g, git_oid *id, const char *buf, size_t len)
{
	git_odb *odb = NULL;
	int rc, there;

	if ((rc = git_odb_hash(id, buf, len, GIT_OBJECT_BLOB)) < 0 ||
	    (rc = git_repository_odb(&odb, g->repo)) < 0)
		return rc;
	there = git_odb_exists(odb, id);
	git_odb_free(odb);
	if (there)
		return 0;
	return g->recent ? al_git_recent_write_new(g->recent, id, buf, len, GIT_OBJECT_BLOB)
			 : git_blob_create_from_buffer(id, g->repo, buf, len);
}

/*
 * ailoop's own files under .ai-loop/runs/ are plain LF text it has just
 * written: they become blobs directly, without the attribute lookups and
 * filters that a user's file needs (they are most of what changes in an
 * iteration, and that machinery is most of a commit's cost).
 */
#define OWN_FILE_MAX ((size_t)4 << 20)

/* The index entry of a plain file with stat data `st`, its blob's id left to the caller. */
static void entry_of(git_index_entry *e, const char *path, const struct stat *st)
{
	memset(e, 0, sizeof(*e));
	e->path = path;
	e->mode = st->st_mode & S_IXUSR ? GIT_FILEMODE_BLOB_EXECUTABLE : GIT_FILEMODE_BLOB;
	e->file_size = (uint32_t)st->st_size;
	e->mtime.seconds = (int32_t)st->st_mtim.tv_sec;
	e->mtime.nanoseconds = (uint32_t)st->st_mtim.tv_nsec;
	e->ctime.seconds = (int32_t)st->st_ctim.tv_sec;
	e->ctime.nanoseconds = (uint32_t)st->st_ctim.tv_nsec;
	e->dev = (uint32_t)st->st_dev;
	e->ino = (uint32_t)st->st_ino;
	e->uid = st->st_uid;
	e->gid = st->st_gid;
}

int al_git_add_own_file(struct al_git *g, git_index *index, const char *path)
{
	struct al_strbuf sb = AL_STRBUF_INIT;
	git_index_entry e;
	struct stat st;
	int rc = 0;

	/*
	 * one ailoop did not write (an agent's output of any size) goes
	 * through libgit2, which streams a file too large to hold whole
	 */
	if (lstat(path, &st) < 0 || !S_ISREG(st.st_mode) || (size_t)st.st_size > OWN_FILE_MAX)
		return git_index_add_bypath(index, path); /* let libgit2 say what it is */
	entry_of(&e, path, &st);
	if (al_git_prestaged(g, path, &st, &e.id)) {
		al_git_trace("staged ahead", path);
	} else if (al_strbuf_read_file(&sb, path, OWN_FILE_MAX) < 0) {
		al_strbuf_release(&sb);
		return git_index_add_bypath(index, path);
	} else {
		rc = al_git_write_blob(g, &e.id, sb.buf, sb.len);
	}
	if (rc == 0)
		rc = git_index_add(index, &e);
	if (rc == 0)
		al_rewritten_forget(&st); /* staged: the index holds what it holds */
	al_strbuf_release(&sb);
	return rc;
}

/*
 * A file of the work tree outside the runs: as staged ahead while the
 * agents ran, where the index takes an entry as the stat data gives it
 * (no case folding, modes to be trusted, no conflict to resolve); else
 * through libgit2, as `git add` would.
 */
int al_git_add_file(struct al_git *g, git_index *index, const char *path, const struct stat *st)
{
	git_index_entry e;

	if (!S_ISREG(st->st_mode) ||
	    (git_index_caps(index) &
	     (GIT_INDEX_CAPABILITY_IGNORE_CASE | GIT_INDEX_CAPABILITY_NO_FILEMODE)) ||
	    git_index_has_conflicts(index))
		return git_index_add_bypath(index, path);
	entry_of(&e, path, st);
	if (!al_git_prestaged(g, path, st, &e.id))
		return git_index_add_bypath(index, path);
	al_git_trace("staged ahead", path);
	return git_index_add(index, &e);
}
