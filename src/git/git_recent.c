/*
 * The trees and the commit objects of this process's last two commits,
 * kept in memory for the next commit to read back. A commit's parent and
 * the trees on the way down to each changed path are the ones the last
 * commit wrote, which libgit2 writes without keeping them in its object
 * cache: each would be found, read and inflated from a loose object
 * again, a handful of system calls and an inflate apiece every commit.
 *
 * A backend of the object database, above the loose objects and the
 * packs: it writes each object through the loose objects' backend and,
 * while a commit is made, keeps a copy of each tree and commit that
 * backend wrote, never of a write that failed, so that what it serves is
 * what the store holds. It knows of no object's existence: whether an
 * object is on disk is always asked on disk.
 */
#include "git_repo.h"
#include "ailoop/base/util.h"

#include <git2/sys/odb_backend.h>
#include <stdlib.h>
#include <string.h>

/* What one commit keeps at most: a few trees of any size. */
#define RECENT_MAX_BYTES ((size_t)4 << 20)

struct recent_object {
	git_oid id;
	git_object_t type;
	size_t len;
	void *data;
	unsigned long commit; /* the commit that wrote it (al_git_recent_begin) */
};

struct al_git_recent {
	git_odb_backend parent;
	git_odb_backend *loose; /* where objects are written */
	bool recording;         /* a commit is being made */
	unsigned long commit;   /* the commits begun */
	size_t bytes;           /* what the commit being made keeps */
	struct recent_object *objs;
	size_t nobjs, objs_alloc;
};

/* Drops what commits before `oldest` wrote. */
static void forget_before(struct al_git_recent *r, unsigned long oldest)
{
	size_t k = 0;

	for (size_t i = 0; i < r->nobjs; i++) {
		if (r->objs[i].commit >= oldest)
			r->objs[k++] = r->objs[i];
		else
			free(r->objs[i].data);
	}
	r->nobjs = k;
}

static const struct recent_object *find(const struct al_git_recent *r, const git_oid *id)
{
	for (size_t i = 0; i < r->nobjs; i++)
		if (git_oid_equal(&r->objs[i].id, id))
			return &r->objs[i];
	return NULL;
}

static int recent_read(void **data, size_t *len, git_object_t *type, git_odb_backend *backend,
		       const git_oid *id)
{
	const struct recent_object *o = find((struct al_git_recent *)backend, id);

	if (!o)
		return GIT_ENOTFOUND;
	if (!(*data = git_odb_backend_data_alloc(backend, o->len ? o->len : 1)))
		return -1;
	memcpy(*data, o->data, o->len);
	*len = o->len;
	*type = o->type;
	return 0;
}

static int recent_read_header(size_t *len, git_object_t *type, git_odb_backend *backend,
			      const git_oid *id)
{
	const struct recent_object *o = find((struct al_git_recent *)backend, id);

	if (!o)
		return GIT_ENOTFOUND;
	*len = o->len;
	*type = o->type;
	return 0;
}

/* Writes through the loose objects, and keeps a copy of what they wrote. */
static int recent_write(git_odb_backend *backend, const git_oid *id, const void *data,
			size_t len, git_object_t type)
{
	struct al_git_recent *r = (struct al_git_recent *)backend;
	struct recent_object *o;
	int rc = r->loose->write(r->loose, id, data, len, type);

	if (rc == 0 && r->recording && (type == GIT_OBJECT_TREE || type == GIT_OBJECT_COMMIT) &&
	    r->bytes + len <= RECENT_MAX_BYTES && !find(r, id)) {
		AL_GROW(r->objs, r->nobjs, r->objs_alloc);
		o = &r->objs[r->nobjs++];
		git_oid_cpy(&o->id, id);
		o->type = type;
		o->len = len;
		o->data = al_malloc(len ? len : 1);
		memcpy(o->data, data, len);
		o->commit = r->commit;
		r->bytes += len;
	}
	return rc;
}

/* Streams (blobs) go to the loose objects: nothing of them is kept. */
static int recent_writestream(git_odb_stream **out, git_odb_backend *backend,
			      git_object_size_t size, git_object_t type)
{
	(void)out;
	(void)backend;
	(void)size;
	(void)type;
	return GIT_PASSTHROUGH;
}

/* Nothing of its own to list: every object it holds is a loose one too. */
static int recent_foreach(git_odb_backend *backend, git_odb_foreach_cb cb, void *payload)
{
	(void)backend;
	(void)cb;
	(void)payload;
	return 0;
}

static void recent_free(git_odb_backend *backend)
{
	struct al_git_recent *r = (struct al_git_recent *)backend;

	forget_before(r, (unsigned long)-1);
	free(r->objs);
	free(r);
}

struct al_git_recent *al_git_recent_add(git_repository *repo)
{
	struct al_git_recent *r = NULL;
	git_odb *odb = NULL;
	git_odb_backend *b, *loose = NULL;

	if (git_repository_odb(&odb, repo) < 0)
		goto done;
	/* the loose objects: the store that writes (alternates are listed after) */
	for (size_t i = 0; !loose && i < git_odb_num_backends(odb); i++)
		if (git_odb_get_backend(&b, odb, i) == 0 && b->write)
			loose = b;
	if (!loose)
		goto done;
	r = al_calloc(1, sizeof(*r));
	git_odb_init_backend(&r->parent, GIT_ODB_BACKEND_VERSION);
	r->loose = loose;
	r->parent.read = recent_read;
	r->parent.read_header = recent_read_header;
	r->parent.write = recent_write;
	r->parent.writestream = recent_writestream;
	r->parent.foreach = recent_foreach;
	r->parent.free = recent_free;
	/* above the packs (2) and the loose objects (1): asked first */
	if (git_odb_add_backend(odb, &r->parent, 100) < 0) {
		free(r);
		r = NULL;
	}
done:
	git_odb_free(odb);
	git_error_clear();
	return r;
}

int al_git_recent_write_new(struct al_git_recent *r, const git_oid *id, const void *data,
			    size_t len, git_object_t type)
{
	return recent_write(&r->parent, id, data, len, type);
}

void al_git_recent_begin(struct al_git_recent *r)
{
	if (!r)
		return;
	/* the last commit's objects stay: this one reads them back */
	forget_before(r, r->commit);
	r->commit++;
	r->bytes = 0;
	r->recording = true;
}

void al_git_recent_end(struct al_git_recent *r)
{
	if (r)
		r->recording = false;
}
