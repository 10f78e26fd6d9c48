#include "ailoop/git.h"
#include "ailoop/fsutil.h"
#include "ailoop/util.h"

#include <git2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct al_git {
	git_repository *repo;
};

static int fail(const char *what)
{
	const git_error *e = git_error_last();

	return al_err(AL_ERROR, "%s: %s", what, e && e->message ? e->message : "unknown error");
}

int al_git_open(struct al_git **out)
{
	struct al_git *g;
	static bool initialised;

	*out = NULL;
	if (!initialised) {
		git_libgit2_init();
		if (al_fsync_enabled())
			git_libgit2_opts(GIT_OPT_ENABLE_FSYNC_GITDIR, 1);
		initialised = true;
	}
	g = al_calloc(1, sizeof(*g));
	if (git_repository_open_ext(&g->repo, ".", GIT_REPOSITORY_OPEN_NO_SEARCH, NULL) < 0) {
		free(g);
		return al_err(AL_ENOTFOUND, "not a git repository (run 'git init' and make a "
			      "first commit)");
	}
	if (git_repository_is_bare(g->repo)) {
		al_git_free(g);
		return al_err(AL_ENOTFOUND, "the repository has no work tree");
	}
	*out = g;
	return 0;
}

void al_git_free(struct al_git *g)
{
	if (!g)
		return;
	git_repository_free(g->repo);
	free(g);
}

int al_git_head(struct al_git *g, char **branch, char oid[AL_OID_HEX])
{
	git_reference *head = NULL;
	int rc;

	if (branch)
		*branch = NULL;
	rc = git_repository_head(&head, g->repo);
	if (rc == GIT_EUNBORNBRANCH || rc == GIT_ENOTFOUND)
		return al_err(AL_ENOTFOUND, "the repository has no commit yet (make a first commit)");
	if (rc < 0)
		return fail("cannot read HEAD");
	if (oid)
		git_oid_tostr(oid, AL_OID_HEX, git_reference_target(head));
	if (branch && git_reference_is_branch(head))
		*branch = al_strdup(git_reference_shorthand(head));
	git_reference_free(head);
	return 0;
}

/* ailoop's own lock files never go into history. */
static bool is_lock_file(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return al_starts_with(path, ".ai-loop/runs/") &&
	       (!strcmp(base, "lock") || al_ends_with(base, ".lock"));
}

int al_git_dirty(struct al_git *g, char **path)
{
	git_status_options opts;
	git_status_list *list = NULL;
	int dirty = 0;

	*path = NULL;
	git_status_options_init(&opts, GIT_STATUS_OPTIONS_VERSION);
	opts.show = GIT_STATUS_SHOW_INDEX_AND_WORKDIR;
	opts.flags = GIT_STATUS_OPT_INCLUDE_UNTRACKED | GIT_STATUS_OPT_RECURSE_UNTRACKED_DIRS |
		     GIT_STATUS_OPT_EXCLUDE_SUBMODULES;
	if (git_status_list_new(&list, g->repo, &opts) < 0)
		return fail("cannot read the status of the work tree");
	for (size_t i = 0; i < git_status_list_entrycount(list) && !dirty; i++) {
		const git_status_entry *e = git_status_byindex(list, i);
		const git_diff_delta *d = e->index_to_workdir ? e->index_to_workdir : e->head_to_index;
		const char *p = d ? d->new_file.path : NULL;

		if (e->status == GIT_STATUS_CURRENT || !p || is_lock_file(p))
			continue;
		*path = al_strdup(p);
		dirty = 1;
	}
	git_status_list_free(list);
	return dirty;
}

bool al_git_branch_exists(struct al_git *g, const char *name)
{
	git_reference *ref = NULL;
	bool found = git_branch_lookup(&ref, g->repo, name, GIT_BRANCH_LOCAL) == 0;

	git_reference_free(ref);
	return found;
}

int al_git_branch_create(struct al_git *g, const char *name, char **created)
{
	git_reference *head = NULL, *branch = NULL;
	git_commit *commit = NULL;
	char *candidate = al_strdup(name);
	int rc = 0;

	*created = NULL;
	for (int n = 2; al_git_branch_exists(g, candidate); n++) {
		free(candidate);
		candidate = al_xprintf("%s-%d", name, n);
	}
	if (git_repository_head(&head, g->repo) < 0 ||
	    git_commit_lookup(&commit, g->repo, git_reference_target(head)) < 0 ||
	    git_branch_create(&branch, g->repo, candidate, commit, 0) < 0 ||
	    git_repository_set_head(g->repo, git_reference_name(branch)) < 0) {
		rc = fail("cannot create the branch");
		goto done;
	}
	*created = candidate;
	candidate = NULL;
done:
	free(candidate);
	git_reference_free(branch);
	git_commit_free(commit);
	git_reference_free(head);
	return rc;
}

int al_git_checkout(struct al_git *g, const char *name)
{
	git_checkout_options opts;
	git_reference *branch = NULL;
	git_object *target = NULL;
	int rc = 0;

	git_checkout_options_init(&opts, GIT_CHECKOUT_OPTIONS_VERSION);
	opts.checkout_strategy = GIT_CHECKOUT_SAFE;
	if (git_branch_lookup(&branch, g->repo, name, GIT_BRANCH_LOCAL) < 0)
		return al_err(AL_ENOTFOUND, "branch '%s' does not exist", name);
	if (git_reference_peel(&target, branch, GIT_OBJECT_COMMIT) < 0 ||
	    git_checkout_tree(g->repo, target, &opts) < 0 ||
	    git_repository_set_head(g->repo, git_reference_name(branch)) < 0)
		rc = fail("cannot check out the run's branch");
	git_object_free(target);
	git_reference_free(branch);
	return rc;
}

static int skip_lock_files(const char *path, const char *matched, void *data)
{
	(void)matched;
	(void)data;
	return is_lock_file(path) ? 1 : 0;
}

/* Identity from the environment, then config, then ailoop's own. */
static int signature(git_signature **out, git_repository *repo, const char *who)
{
	char name_var[32], email_var[32];
	const char *name, *email;
	git_signature *def = NULL;
	int rc;

	snprintf(name_var, sizeof(name_var), "GIT_%s_NAME", who);
	snprintf(email_var, sizeof(email_var), "GIT_%s_EMAIL", who);
	name = getenv(name_var);
	email = getenv(email_var);
	if (!name || !*name || !email || !*email) {
		if (git_signature_default(&def, repo) == 0) {
			name = name && *name ? name : def->name;
			email = email && *email ? email : def->email;
		} else {
			name = name && *name ? name : "ailoop";
			email = email && *email ? email : "ailoop@localhost";
		}
	}
	rc = git_signature_now(out, name, email);
	git_signature_free(def);
	return rc;
}

int al_git_commit_all(struct al_git *g, const char *message, char oid[AL_OID_HEX])
{
	git_index *index = NULL;
	git_tree *tree = NULL;
	git_reference *head = NULL;
	git_commit *parent = NULL;
	git_signature *author = NULL, *committer = NULL;
	git_oid tree_oid, commit_oid;
	int rc = 0;

	if (git_repository_index(&index, g->repo) < 0 || git_index_read(index, 0) < 0 ||
	    git_index_add_all(index, NULL, GIT_INDEX_ADD_DEFAULT, skip_lock_files, NULL) < 0 ||
	    git_index_update_all(index, NULL, skip_lock_files, NULL) < 0 ||
	    git_index_write(index) < 0 || git_index_write_tree(&tree_oid, index) < 0 ||
	    git_tree_lookup(&tree, g->repo, &tree_oid) < 0) {
		rc = fail("cannot stage the work tree");
		goto done;
	}
	if (git_repository_head(&head, g->repo) < 0 ||
	    git_commit_lookup(&parent, g->repo, git_reference_target(head)) < 0) {
		rc = fail("cannot read HEAD");
		goto done;
	}
	if (signature(&author, g->repo, "AUTHOR") < 0 ||
	    signature(&committer, g->repo, "COMMITTER") < 0 ||
	    git_commit_create(&commit_oid, g->repo, "HEAD", author, committer, NULL, message,
			      tree, 1, (const git_commit **)&parent) < 0) {
		rc = fail("cannot commit");
		goto done;
	}
	if (oid)
		git_oid_tostr(oid, AL_OID_HEX, &commit_oid);
done:
	git_signature_free(author);
	git_signature_free(committer);
	git_commit_free(parent);
	git_reference_free(head);
	git_tree_free(tree);
	git_index_free(index);
	return rc;
}

int al_git_message(struct al_git *g, const char *rev, char **message)
{
	git_object *obj = NULL;
	git_commit *commit = NULL;
	int rc = 0;

	*message = NULL;
	if (git_revparse_single(&obj, g->repo, rev) < 0)
		return al_err(AL_ENOTFOUND, "no revision '%s'", rev);
	if (git_object_peel((git_object **)&commit, obj, GIT_OBJECT_COMMIT) < 0)
		rc = fail("not a commit");
	else
		*message = al_strdup(git_commit_message(commit));
	git_commit_free(commit);
	git_object_free(obj);
	return rc;
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
	if (git_revwalk_new(&walk, g->repo) < 0 || git_revwalk_push(walk, git_object_id(obj)) < 0) {
		rc = fail("cannot walk the history");
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
			rc = fail("cannot read a commit");
			break;
		}
		git_oid_tostr(hex, sizeof(hex), &oid);
		rc = fn(hex, git_commit_message(c), (int64_t)git_commit_time(c), data);
		git_commit_free(c);
		if (rc)
			break;
	}
	if (err < 0 && err != GIT_ITEROVER)
		rc = fail("cannot walk the history");
done:
	git_revwalk_free(walk);
	git_object_free(obj);
	return rc;
}

int al_git_read(struct al_git *g, const char *rev, const char *path, struct al_strbuf *out)
{
	git_object *obj = NULL;
	git_tree *tree = NULL;
	git_tree_entry *entry = NULL;
	git_blob *blob = NULL;
	int rc = 0;

	if (git_revparse_single(&obj, g->repo, rev) < 0 ||
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
