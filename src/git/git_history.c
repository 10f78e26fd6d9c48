/*
 * Reading history: commit messages, walks, files and trees at a
 * revision, branches, diffstats, and the code's identity for the
 * condition cache.
 */
#include "git_repo.h"
#include "ailoop/base/sha256.h"
#include "ailoop/base/strbuf.h"
#include "ailoop/base/util.h"

#include <git2.h>
#include <git2/sys/odb_backend.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int al_git_message_time(struct al_git *g, const char *rev, char **message, int64_t *time)
{
	git_object *obj = NULL;
	git_commit *commit = NULL;
	int rc = 0;

	*message = NULL;
	if (git_revparse_single(&obj, g->repo, rev) < 0)
		return al_err(AL_ENOTFOUND, "no revision '%s'", rev);
	if (git_object_peel((git_object **)&commit, obj, GIT_OBJECT_COMMIT) < 0) {
		rc = al_git_fail("not a commit");
	} else {
		*message = al_strdup(git_commit_message(commit));
		*time = (int64_t)git_commit_time(commit);
	}
	git_commit_free(commit);
	git_object_free(obj);
	return rc;
}

int al_git_message(struct al_git *g, const char *rev, char **message)
{
	int64_t time;

	return al_git_message_time(g, rev, message, &time);
}

/*
 * A shallow clone lacks the parents of its oldest commits, and libgit2 (up
 * to 1.6) walks no history that is cut: there, follow first parents until
 * one is missing. ailoop's own history is linear.
 */
static int walk_shallow(struct al_git *g, const git_oid *start, al_git_walk_fn fn, void *data)
{
	git_commit *c = NULL, *parent = NULL;
	int rc = 0;

	if (git_commit_lookup(&c, g->repo, start) < 0)
		return al_git_fail("cannot read a commit");
	while (c) {
		char hex[AL_OID_HEX];

		git_oid_tostr(hex, sizeof(hex), git_commit_id(c));
		rc = fn(hex, git_commit_message(c), (int64_t)git_commit_time(c), data);
		if (rc || git_commit_parentcount(c) == 0 || git_commit_parent(&parent, c, 0) < 0)
			parent = NULL; /* the end, or the clone's edge */
		git_commit_free(c);
		c = parent;
		parent = NULL;
	}
	return rc;
}

bool al_git_is_shallow(struct al_git *g)
{
	return git_repository_is_shallow(g->repo) == 1;
}

int al_git_walk(struct al_git *g, const char *rev, const char *hide, al_git_walk_fn fn,
		void *data)
{
	git_revwalk *walk = NULL;
	git_object *obj = NULL;
	git_oid oid;
	int rc = 0, err;

	if (git_revparse_single(&obj, g->repo, rev) < 0)
		return al_err(AL_ENOTFOUND, "no revision '%s'", rev);
	if (!hide && al_git_is_shallow(g)) {
		rc = walk_shallow(g, git_object_id(obj), fn, data);
		goto done;
	}
	if (git_revwalk_new(&walk, g->repo) < 0 || git_revwalk_push(walk, git_object_id(obj)) < 0) {
		rc = al_git_fail("cannot walk the history");
		goto done;
	}
	git_revwalk_sorting(walk, GIT_SORT_TOPOLOGICAL | GIT_SORT_TIME);
	if (hide) {
		git_object *h = NULL;

		if (git_revparse_single(&h, g->repo, hide) == 0)
			git_revwalk_hide(walk, git_object_id(h));
		git_object_free(h);
	}
	while ((err = git_revwalk_next(&oid, walk)) == 0) {
		git_commit *c = NULL;
		char hex[AL_OID_HEX];

		if (git_commit_lookup(&c, g->repo, &oid) < 0) {
			rc = al_git_fail("cannot read a commit");
			break;
		}
		git_oid_tostr(hex, sizeof(hex), &oid);
		rc = fn(hex, git_commit_message(c), (int64_t)git_commit_time(c), data);
		git_commit_free(c);
		if (rc)
			break;
	}
	if (err < 0 && err != GIT_ITEROVER)
		rc = al_git_fail("cannot walk the history");
done:
	git_revwalk_free(walk);
	git_object_free(obj);
	return rc;
}

/*
 * A revision; a full object id without looking for a reference of that
 * name first (several file system calls each, for readers of many commits).
 */
static int lookup_rev(git_object **out, struct al_git *g, const char *rev)
{
	git_oid oid;

	if (strlen(rev) == AL_OID_HEX - 1 && git_oid_fromstr(&oid, rev) == 0)
		return git_object_lookup(out, g->repo, &oid, GIT_OBJECT_ANY);
	return git_revparse_single(out, g->repo, rev);
}

int al_git_run_last_commit(struct al_git *g, const char *run_id, char hex[AL_OID_HEX])
{
	git_reflog *log = NULL;
	char *trailer = al_xprintf("\n[run] %s", run_id);
	size_t tl = strlen(trailer);
	int rc = AL_ENOTFOUND;

	/* AL_EINVALID: found, but the branch never held it */
	if (git_reflog_read(&log, g->repo, g->branch_ref ? g->branch_ref : "HEAD") < 0)
		git_error_clear();
	/* entry 0 is the newest; an agent's own commits may be above, a few of them */
	for (size_t i = 0; log && i < git_reflog_entrycount(log) && i < 1000 && rc == AL_ENOTFOUND; i++) {
		const git_reflog_entry *e = git_reflog_entry_byindex(log, i);
		const char *what = git_reflog_entry_message(e), *msg, *at;
		git_commit *c = NULL;

		if (!what || !al_starts_with(what, "commit: ai-loop[") ||
		    git_commit_lookup(&c, g->repo, git_reflog_entry_id_new(e)) < 0) {
			git_error_clear();
			continue;
		}
		msg = git_commit_message(c);
		if ((at = strstr(msg, trailer)) && (at[tl] == '\n' || !at[tl])) {
			/*
			 * The branch held it if the next move started there: libgit2
			 * writes the entry before it moves the ref, and a move that
			 * failed (a full disk, a kill) leaves an entry the ref never
			 * followed.
			 */
			const git_reflog_entry *next = i ? git_reflog_entry_byindex(log, i - 1) : NULL;

			rc = next && git_oid_equal(git_reflog_entry_id_old(next), git_commit_id(c))
				     ? 0 : AL_EINVALID;
			if (rc == 0)
				git_oid_tostr(hex, AL_OID_HEX, git_commit_id(c));
		}
		git_commit_free(c);
	}
	git_reflog_free(log);
	free(trailer);
	return rc < 0 ? AL_ENOTFOUND : rc;
}

int al_git_ref_id(struct al_git *g, const char *ref, char hex[AL_OID_HEX])
{
	git_oid oid;
	int rc = git_reference_name_to_id(&oid, g->repo, ref);

	if (rc == GIT_ENOTFOUND) {
		git_error_clear();
		return al_err(AL_ENOTFOUND, "no reference '%s'", ref);
	}
	if (rc < 0)
		return al_err(AL_EINVALID, "cannot read reference '%s': %s", ref,
			      git_error_last() ? git_error_last()->message : "unknown error");
	git_oid_tostr(hex, AL_OID_HEX, &oid);
	return 0;
}

int al_git_read(struct al_git *g, const char *rev, const char *path, struct al_strbuf *out)
{
	git_object *obj = NULL;
	git_tree *tree = NULL;
	git_tree_entry *entry = NULL;
	git_blob *blob = NULL;
	int rc = 0;

	if (lookup_rev(&obj, g, rev) < 0 ||
	    git_object_peel((git_object **)&tree, obj, GIT_OBJECT_TREE) < 0) {
		rc = al_err(AL_ENOTFOUND, "no revision '%s'", rev);
		goto done;
	}
	if (git_tree_entry_bypath(&entry, tree, path) < 0 ||
	    git_blob_lookup(&blob, g->repo, git_tree_entry_id(entry)) < 0) {
		rc = al_err(AL_ENOTFOUND, "'%s' is not in '%s'", path, rev);
		goto done;
	}
	al_strbuf_add(out, git_blob_rawcontent(blob), (size_t)git_blob_rawsize(blob));
done:
	git_blob_free(blob);
	git_tree_entry_free(entry);
	git_tree_free(tree);
	git_object_free(obj);
	return rc;
}

/*
 * The blob `id` as its store holds it, not hashed again: hashing a blob
 * of megabytes costs more than inflating it, and zlib's own check already
 * catches a damaged object. (A store of packs looks for packs made since
 * it last did, as libgit2's own lookup does.) 1 if no store has it as a blob.
 */
static int read_unhashed(struct al_git *g, const git_oid *id,
			 void (*fn)(const char *buf, size_t len, void *data), void *data)
{
	git_odb *odb = NULL;
	git_odb_backend *b;
	int rc = 1;

	if (git_repository_odb(&odb, g->repo) < 0)
		return 1;
	for (size_t i = 0; rc && i < git_odb_num_backends(odb); i++) {
		void *buf = NULL;
		size_t len = 0;
		git_object_t type = GIT_OBJECT_INVALID;

		if (git_odb_get_backend(&b, odb, i) < 0 || !b->read ||
		    b->read(&buf, &len, &type, b, id) < 0)
			continue;
		if (type == GIT_OBJECT_BLOB) {
			fn(buf, len, data);
			rc = 0;
		}
		git_odb_backend_data_free(b, buf);
	}
	git_error_clear();
	git_odb_free(odb);
	return rc;
}

int al_git_read_shown(struct al_git *g, const char *rev, const char *path,
		      void (*fn)(const char *buf, size_t len, void *data), void *data)
{
	git_object *obj = NULL;
	git_tree *tree = NULL;
	git_tree_entry *entry = NULL;
	int rc = 0;

	if (lookup_rev(&obj, g, rev) < 0 ||
	    git_object_peel((git_object **)&tree, obj, GIT_OBJECT_TREE) < 0)
		rc = al_err(AL_ENOTFOUND, "no revision '%s'", rev);
	else if (git_tree_entry_bypath(&entry, tree, path) < 0 ||
		 read_unhashed(g, git_tree_entry_id(entry), fn, data))
		rc = al_err(AL_ENOTFOUND, "'%s' is not in '%s'", path, rev);
	git_tree_entry_free(entry);
	git_tree_free(tree);
	git_object_free(obj);
	return rc;
}

/* "name id" of each entry of `tree` but `skip`, under `prefix`. */
static void list_entries(struct al_strbuf *out, const git_tree *tree, const char *prefix,
			 const char *skip)
{
	char hex[GIT_OID_HEXSZ + 1];

	for (size_t i = 0; i < git_tree_entrycount(tree); i++) {
		const git_tree_entry *e = git_tree_entry_byindex(tree, i);

		if (!strcmp(git_tree_entry_name(e), skip))
			continue;
		git_oid_tostr(hex, sizeof(hex), git_tree_entry_id(e));
		al_strbuf_addf(out, "%s%s %o %s\n", prefix, git_tree_entry_name(e),
			       (unsigned)git_tree_entry_filemode(e), hex);
	}
}

void al_git_code_id_of(struct al_git *g, const git_oid *commit, const git_tree *tree)
{
	struct al_strbuf sb = AL_STRBUF_INIT;
	git_tree *own = NULL;
	const git_tree_entry *e;

	list_entries(&sb, tree, "", ".ai-loop");
	e = git_tree_entry_byname(tree, ".ai-loop");
	if (e && git_tree_entry_type(e) == GIT_OBJECT_TREE &&
	    git_tree_lookup(&own, g->repo, git_tree_entry_id(e)) == 0)
		list_entries(&sb, own, ".ai-loop/", "runs");
	al_sha256_hex(sb.buf ? sb.buf : "", sb.len, g->code_hex);
	g->code_commit = *commit;
	g->code_known = true;
	al_strbuf_release(&sb);
	git_tree_free(own);
}

int al_git_code_id(struct al_git *g, char hex[65])
{
	git_oid head;
	git_commit *commit = NULL;
	git_tree *tree = NULL;

	if (git_reference_name_to_id(&head, g->repo, "HEAD") < 0)
		return al_err(AL_ENOTFOUND, "no commit at HEAD");
	/* asked at every step of a loop: the commit just made is known */
	if (!g->code_known || !git_oid_equal(&head, &g->code_commit)) {
		if (git_commit_lookup(&commit, g->repo, &head) < 0 ||
		    git_commit_tree(&tree, commit) < 0) {
			git_commit_free(commit);
			return al_err(AL_ENOTFOUND, "no commit at HEAD");
		}
		al_git_code_id_of(g, &head, tree);
		git_tree_free(tree);
		git_commit_free(commit);
	}
	memcpy(hex, g->code_hex, 65);
	return 0;
}

static void push_name(char ***names, size_t *n, size_t *alloc, const char *name)
{
	AL_GROW(*names, *n, *alloc);
	(*names)[(*n)++] = al_strdup(name);
}

int al_git_branches(struct al_git *g, const char *prefix, char ***names, size_t *n)
{
	git_branch_iterator *it = NULL;
	git_reference *ref;
	git_branch_t type;
	size_t alloc = 0;
	int err;

	*names = NULL;
	*n = 0;
	if (git_branch_iterator_new(&it, g->repo, GIT_BRANCH_LOCAL) < 0)
		return al_git_fail("cannot list the branches");
	while ((err = git_branch_next(&ref, &type, it)) == 0) {
		const char *name = git_reference_shorthand(ref);

		if (al_starts_with(name, prefix))
			push_name(names, n, &alloc, name);
		git_reference_free(ref);
	}
	git_branch_iterator_free(it);
	return err == GIT_ITEROVER ? 0 : al_git_fail("cannot list the branches");
}

int al_git_ls(struct al_git *g, const char *rev, const char *dir, char ***names, size_t *n)
{
	git_object *obj = NULL;
	git_tree *tree = NULL, *sub = NULL;
	git_tree_entry *entry = NULL;
	size_t alloc = 0;

	*names = NULL;
	*n = 0;
	if (git_revparse_single(&obj, g->repo, rev) < 0 ||
	    git_object_peel((git_object **)&tree, obj, GIT_OBJECT_TREE) < 0) {
		git_object_free(obj);
		return al_err(AL_ENOTFOUND, "no revision '%s'", rev);
	}
	if (git_tree_entry_bypath(&entry, tree, dir) == 0 &&
	    git_tree_lookup(&sub, g->repo, git_tree_entry_id(entry)) == 0)
		for (size_t i = 0; i < git_tree_entrycount(sub); i++)
			push_name(names, n, &alloc, git_tree_entry_name(git_tree_entry_byindex(sub, i)));
	git_tree_free(sub);
	git_tree_entry_free(entry);
	git_tree_free(tree);
	git_object_free(obj);
	return 0;
}

int al_git_diffstat(struct al_git *g, const char *rev, const char *skip,
		    struct al_git_file_stat **out, size_t *n)
{
	git_object *obj = NULL;
	git_commit *commit = NULL, *parent = NULL;
	git_tree *tree = NULL, *parent_tree = NULL;
	git_diff *diff = NULL;
	struct al_git_file_stat *v = NULL;
	size_t count = 0, alloc = 0, skip_len = skip ? strlen(skip) : 0;
	int rc = 0;

	if (lookup_rev(&obj, g, rev) < 0 ||
	    git_object_peel((git_object **)&commit, obj, GIT_OBJECT_COMMIT) < 0) {
		rc = al_err(AL_ENOTFOUND, "no commit '%s'", rev);
		goto done;
	}
	if (git_commit_tree(&tree, commit) < 0 ||
	    (git_commit_parentcount(commit) && (git_commit_parent(&parent, commit, 0) < 0 ||
						git_commit_tree(&parent_tree, parent) < 0)) ||
	    git_diff_tree_to_tree(&diff, g->repo, parent_tree, tree, NULL) < 0) {
		/* a shallow clone's oldest commit has no parent to compare with */
		rc = al_git_fail("cannot compare a commit with its parent");
		goto done;
	}
	for (size_t i = 0; i < git_diff_num_deltas(diff); i++) {
		const git_diff_delta *d = git_diff_get_delta(diff, i);
		const char *path = d->new_file.path ? d->new_file.path : d->old_file.path;
		git_patch *patch = NULL;
		git_blob *old_blob = NULL, *new_blob = NULL;
		size_t added = 0, deleted = 0;
		struct al_git_file_stat *f;
		bool binary;

		if (skip && !strncmp(path, skip, skip_len) &&
		    (path[skip_len] == '/' || !path[skip_len]))
			continue;
		/* from the blobs, without the path: no attribute files read for each */
		if (!git_oid_is_zero(&d->old_file.id))
			git_blob_lookup(&old_blob, g->repo, &d->old_file.id);
		if (!git_oid_is_zero(&d->new_file.id))
			git_blob_lookup(&new_blob, g->repo, &d->new_file.id);
		binary = (old_blob && git_blob_is_binary(old_blob)) ||
			 (new_blob && git_blob_is_binary(new_blob));
		if (!binary && git_patch_from_blobs(&patch, old_blob, "", new_blob, "",
						    NULL) == 0)
			git_patch_line_stats(NULL, &added, &deleted, patch);
		git_patch_free(patch);
		git_blob_free(old_blob);
		git_blob_free(new_blob);
		AL_GROW(v, count, alloc);
		f = &v[count++];
		f->path = al_strdup(path);
		f->added = (int)added;
		f->deleted = (int)deleted;
		f->binary = binary;
	}
done:
	git_diff_free(diff);
	git_tree_free(parent_tree);
	git_tree_free(tree);
	git_commit_free(parent);
	git_commit_free(commit);
	git_object_free(obj);
	if (rc < 0) {
		al_git_diffstat_free(v, count);
		v = NULL;
		count = 0;
	}
	*out = v;
	*n = count;
	return rc;
}

void al_git_diffstat_free(struct al_git_file_stat *files, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(files[i].path);
	free(files);
}
