#include "ailoop/git/worktree.h"
#include "worktree_int.h"
#include "ailoop/base/fsutil.h"
#include "ailoop/git/git.h"
#include "ailoop/proc/proc.h"
#include "ailoop/base/paths.h"
#include "ailoop/base/strbuf.h"
#include "ailoop/base/util.h"

#include <git2.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <dirent.h>

/*
 * The main work tree's uncommitted changes carried into a new child's
 * worktree, so that the child starts from what the user sees.
 */

/*
 * A path's content as a commit of it would hold it: a regular file's
 * bytes, a symbolic link's target, or nothing if absent.
 */
struct content {
	bool present, link, exec;
	struct al_strbuf data;
};

static int read_content(struct content *c, const char *file)
{
	struct stat sb;
	char target[4096];
	ssize_t len;

	c->present = c->link = c->exec = false;
	al_strbuf_init(&c->data);
	if (lstat(file, &sb) < 0)
		return errno == ENOENT || errno == ENOTDIR
			       ? 0 : al_err(AL_ERROR, "cannot read '%s': %s", file, strerror(errno));
	if (S_ISLNK(sb.st_mode)) {
		if ((len = readlink(file, target, sizeof(target))) < 0)
			return al_err(AL_ERROR, "cannot read '%s': %s", file, strerror(errno));
		al_strbuf_add(&c->data, target, (size_t)len);
		c->link = true;
	} else if (S_ISREG(sb.st_mode)) {
		if (al_strbuf_read_file(&c->data, file, 0) < 0)
			return al_err(AL_ERROR, "cannot read '%s': %s", file,
				      al_strbuf_read_strerror(errno));
		c->exec = (sb.st_mode & 0111) != 0;
	} else {
		return 0; /* a directory where a file was: as git sees it, the file is gone */
	}
	c->present = true;
	return 0;
}

static bool same(const struct content *a, const struct content *b)
{
	if (a->present != b->present)
		return false;
	return !a->present || (a->link == b->link && a->data.len == b->data.len &&
			       !memcmp(a->data.buf, b->data.buf, a->data.len));
}

struct al_wt_change {
	char *path;
	struct content old, new; /* in HEAD, in the main work tree */
};

struct al_wt_changes {
	struct al_wt_change *v;
	size_t n, alloc;
};

void al_worktree_changes_free(struct al_wt_changes *ch)
{
	if (!ch)
		return;
	for (size_t i = 0; i < ch->n; i++) {
		free(ch->v[i].path);
		al_strbuf_release(&ch->v[i].old.data);
		al_strbuf_release(&ch->v[i].new.data);
	}
	free(ch->v);
	free(ch);
}

int al_worktree_changes(struct al_wt_changes **out, const char *skip)
{
	git_repository *repo = NULL;
	git_object *head = NULL;
	git_tree *tree = NULL;
	git_diff *diff = NULL;
	git_diff_options opts;
	struct al_wt_changes *ch = al_calloc(1, sizeof(*ch));
	size_t skip_len = strlen(skip);
	int rc;

	*out = NULL;
	git_diff_options_init(&opts, GIT_DIFF_OPTIONS_VERSION);
	opts.flags = GIT_DIFF_INCLUDE_UNTRACKED | GIT_DIFF_RECURSE_UNTRACKED_DIRS |
		     GIT_DIFF_INCLUDE_TYPECHANGE;
	if ((rc = al_wt_open(&repo)) < 0) {
		al_worktree_changes_free(ch);
		return rc;
	}
	if (git_revparse_single(&head, repo, "HEAD^{tree}") < 0 ||
	    git_tree_lookup(&tree, repo, git_object_id(head)) < 0 ||
	    /* through the index: a file whose stat data it holds is not read again */
	    git_diff_tree_to_workdir_with_index(&diff, repo, tree, &opts) < 0) {
		rc = al_wt_fail("cannot compare the work tree with HEAD");
		goto done;
	}
	for (size_t i = 0; i < git_diff_num_deltas(diff) && rc == 0; i++) {
		const git_diff_delta *d = git_diff_get_delta(diff, i);
		const char *path = d->new_file.path ? d->new_file.path : d->old_file.path;
		struct al_wt_change *c;
		git_blob *blob = NULL;

		if (!strncmp(path, skip, skip_len) && (!path[skip_len] || path[skip_len] == '/'))
			continue; /* the run's own files */
		AL_GROW(ch->v, ch->n, ch->alloc);
		c = &ch->v[ch->n++];
		memset(c, 0, sizeof(*c));
		c->path = al_strdup(path);
		al_strbuf_init(&c->old.data);
		if (d->old_file.mode && !git_oid_is_zero(&d->old_file.id)) {
			if (git_blob_lookup(&blob, repo, &d->old_file.id) < 0) {
				rc = al_wt_fail("cannot read HEAD's files");
				break;
			}
			c->old.present = true;
			c->old.link = d->old_file.mode == GIT_FILEMODE_LINK;
			al_strbuf_add(&c->old.data, git_blob_rawcontent(blob),
				      (size_t)git_blob_rawsize(blob));
			git_blob_free(blob);
		}
		rc = read_content(&c->new, path);
	}
done:
	git_diff_free(diff);
	git_tree_free(tree);
	git_object_free(head);
	al_wt_close(repo);
	if (rc < 0)
		al_worktree_changes_free(ch);
	else
		*out = ch;
	return rc;
}

static int write_content(const char *file, const struct content *c)
{
	char *dir = al_strdup(file), *slash = strrchr(dir, '/');
	int rc = 0;

	if (slash)
		*slash = '\0';
	if (unlink(file) < 0 && errno != ENOENT && errno != EISDIR)
		rc = al_err(AL_ERROR, "cannot replace '%s': %s", file, strerror(errno));
	else if (!c->present)
		rc = 0;
	else if (slash && al_mkdirs(dir) < 0)
		rc = al_err(AL_ERROR, "cannot create '%s': %s", dir, strerror(errno));
	else if (c->link && symlink(c->data.buf, file) < 0)
		rc = al_err(AL_ERROR, "cannot write '%s': %s", file, strerror(errno));
	else if (!c->link && (rc = al_write_atomic(file, c->data.buf, c->data.len)) == 0 &&
		 chmod(file, c->exec ? 0755 : 0644) < 0)
		rc = al_err(AL_ERROR, "cannot write '%s': %s", file, strerror(errno));
	free(dir);
	return rc;
}

int al_worktree_carry(const struct al_wt_changes *ch, const char *path, const char *child)
{
	bool *todo = al_calloc(ch->n ? ch->n : 1, sizeof(bool));
	int rc = 0;

	/* all checked before anything is written: a conflict leaves the worktree as it was */
	for (size_t i = 0; i < ch->n && rc == 0; i++) {
		const struct al_wt_change *c = &ch->v[i];
		char *file = al_xprintf("%s/%s", path, c->path);
		struct content here = { .data = AL_STRBUF_INIT };
		/* the child made a directory on the way a link (or a file): nothing goes through it */
		bool theirs = al_wt_way_blocked(path, c->path, NULL);

		if (!theirs && (rc = read_content(&here, file)) == 0 && !same(&here, &c->new)) {
			if (same(&here, &c->old))
				todo[i] = true;
			else
				theirs = true;
		}
		if (theirs)
			rc = al_err(AL_ECONFLICT, "your change to '%s' in the main work tree conflicts "
				    "with child '%s', which changed it too in its worktree '%s': make "
				    "the two agree (or undo yours), then resume", c->path, child, path);
		al_strbuf_release(&here.data);
		free(file);
	}
	for (size_t i = 0; i < ch->n && rc >= 0; i++) {
		char *file;
		int written;

		if (!todo[i])
			continue;
		file = al_xprintf("%s/%s", path, ch->v[i].path);
		written = write_content(file, &ch->v[i].new);
		rc = written < 0 ? written : rc + 1;
		free(file);
	}
	free(todo);
	return rc;
}

size_t al_worktree_changes_count(const struct al_wt_changes *ch)
{
	return ch ? ch->n : 0;
}
