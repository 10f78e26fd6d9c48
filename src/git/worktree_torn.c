/*
 * The files a merge's checkout was writing into the main work tree when
 * it stopped (the disk ran full, a kill): a record in the git directory,
 * made durable before the checkout writes anything, of HEAD's commit, the
 * merged tree and the paths. While HEAD is still that commit (the merge
 * not made), such a file that holds the start of what the checkout
 * writes there is ailoop's own half-written file, not the user's change:
 * the merge made again writes it whole.
 */
#include "worktree_int.h"
#include "ailoop/base/fsutil.h"
#include "ailoop/base/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char *record_file(git_repository *repo)
{
	return al_xprintf("%sailoop-merge-checkout", git_repository_path(repo));
}

int al_torn_record(git_repository *repo, const git_oid *head, const git_oid *tree,
		   const git_strarray *paths)
{
	struct al_strbuf sb = AL_STRBUF_INIT;
	char hex[GIT_OID_HEXSZ + 1], *file = record_file(repo);
	int rc;

	al_strbuf_addf(&sb, "%s ", git_oid_tostr(hex, sizeof(hex), head));
	al_strbuf_addf(&sb, "%s\n", git_oid_tostr(hex, sizeof(hex), tree));
	for (size_t i = 0; i < paths->count; i++)
		al_strbuf_add(&sb, paths->strings[i], strlen(paths->strings[i]) + 1);
	if ((rc = al_write_atomic(file, sb.buf, sb.len)) == 0)
		rc = al_durable_point();
	al_strbuf_release(&sb);
	free(file);
	return rc;
}

void al_torn_load(struct al_torn *t, git_repository *repo, const git_oid *head)
{
	char *file = record_file(repo);
	git_oid at, tree;

	t->tree = NULL;
	t->at = 2 * GIT_OID_HEXSZ + 2;
	al_strbuf_init(&t->text);
	if (al_strbuf_read_file(&t->text, file, 0) == 0 && t->text.len >= t->at &&
	    git_oid_fromstrn(&at, t->text.buf, GIT_OID_HEXSZ) == 0 && git_oid_equal(&at, head) &&
	    git_oid_fromstrn(&tree, t->text.buf + GIT_OID_HEXSZ + 1, GIT_OID_HEXSZ) == 0 &&
	    git_tree_lookup(&t->tree, repo, &tree) < 0)
		t->tree = NULL;
	git_error_clear();
	free(file);
}

void al_torn_forget(git_repository *repo)
{
	char *file = record_file(repo);

	unlink(file);
	free(file);
}

void al_torn_release(struct al_torn *t)
{
	git_tree_free(t->tree);
	al_strbuf_release(&t->text);
}

/* Compares what a checkout writes, as it comes, with the start of a file. */
struct prefix_stream {
	git_writestream base;
	int fd;
	bool differs, ended; /* ended: the file, before the content */
};

static int prefix_write(git_writestream *s, const char *buf, size_t len)
{
	struct prefix_stream *ps = (struct prefix_stream *)s;
	char chunk[65536];

	while (len && !ps->differs && !ps->ended) {
		ssize_t n = read(ps->fd, chunk, len < sizeof(chunk) ? len : sizeof(chunk));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			ps->differs = true; /* unreadable: not known as ailoop's */
		else if (n == 0)
			ps->ended = true;
		else if (memcmp(chunk, buf, (size_t)n))
			ps->differs = true;
		buf += n > 0 ? n : 0;
		len -= n > 0 ? (size_t)n : 0;
	}
	return 0;
}

static int prefix_close(git_writestream *s)
{
	(void)s;
	return 0;
}

static void prefix_free(git_writestream *s)
{
	(void)s;
}

/* What the checkout writes is the blob through git's filters, as checked out. */
bool al_torn_here(const struct al_torn *t, git_repository *repo, const char *path)
{
	struct prefix_stream ps = { .base = { .write = prefix_write, .close = prefix_close,
					      .free = prefix_free } };
	git_tree_entry *e = NULL;
	git_blob *blob = NULL;
	git_filter_list *fl = NULL;
	bool named = false, torn = false;
	struct stat sb;
	char end;

	for (size_t i = t->at; t->tree && i < t->text.len && !named; i += strlen(t->text.buf + i) + 1)
		named = !strcmp(t->text.buf + i, path);
	if (!named || git_tree_entry_bypath(&e, t->tree, path) < 0 ||
	    git_tree_entry_filemode(e) == GIT_FILEMODE_LINK ||
	    git_blob_lookup(&blob, repo, git_tree_entry_id(e)) < 0 ||
	    git_filter_list_load(&fl, repo, blob, path, GIT_FILTER_TO_WORKTREE,
				 GIT_FILTER_DEFAULT) < 0 ||
	    (ps.fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)) < 0)
		goto done;
	if (fstat(ps.fd, &sb) == 0 && S_ISREG(sb.st_mode) &&
	    git_filter_list_stream_blob(fl, blob, &ps.base) == 0 && !ps.differs)
		torn = ps.ended || read(ps.fd, &end, 1) == 0; /* not longer than the content */
	close(ps.fd);
done:
	git_error_clear();
	git_filter_list_free(fl);
	git_blob_free(blob);
	git_tree_entry_free(e);
	return torn;
}

