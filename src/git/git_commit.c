#include "git_repo.h"
#include "ailoop/base/fsutil.h"
#include "ailoop/git/git_packs.h"
#include "ailoop/base/paths.h"
#include "ailoop/proc/proc.h"
#include "ailoop/base/strbuf.h"
#include "ailoop/base/util.h"
#include "ailoop/git/watch.h"

#include <git2.h>
#include <errno.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The run's commits: who makes them, what they hold, HEAD moved to them. */

/* Identity from the environment, then config, then ailoop's own. */
int al_git_signature(git_signature **out, git_repository *repo, const char *who)
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

int al_git_identity(struct al_git *g)
{
	if (g->author)
		return 0;
	if (al_git_signature(&g->author, g->repo, "AUTHOR") < 0 ||
	    al_git_signature(&g->committer, g->repo, "COMMITTER") < 0) {
		git_signature_free(g->author);
		g->author = NULL;
		return al_git_fail("cannot make the commit's signature");
	}
	/* the reflog's, as git writes it: found once, not in the config at each move */
	git_repository_set_ident(g->repo, g->committer->name, g->committer->email);
	return 0;
}

/*
 * Moves the branch HEAD names (or a detached HEAD) from `old` to the new
 * commit, as `git commit` does, reflog and all; it fails if anything else
 * moved it in between.
 */
static int move_head(struct al_git *g, const char *ref, const git_oid *id, const git_oid *old,
		     const char *message)
{
	const char *eol = strchr(message, '\n');
	char *log = al_xprintf("commit: %.*s", (int)(eol ? (size_t)(eol - message) : strlen(message)),
			       message);
	git_reference *moved = NULL;
	int rc = 0;

	if (ref) { /* its file, replaced by the move: freed while the next agent works */
		char *path = al_xprintf("%s%s", git_repository_commondir(g->repo), ref);

		al_free_later(path);
		free(path);
	}
	if (git_reference_create_matching(&moved, g->repo, ref ? ref : "HEAD", id, 1, old, log) < 0)
		rc = al_git_fail("cannot move the branch to the new commit");
	git_reference_free(moved);
	free(log);
	return rc;
}

int al_git_create_commit(git_oid *id, git_repository *repo, const git_signature *author,
			 const git_signature *committer, const char *message, const git_tree *tree,
			 size_t nparents, const git_commit **parents)
{
	git_odb *odb = NULL;
	bool written;

	if (git_commit_create(id, repo, NULL, author, committer, NULL, message, tree, nparents,
			      parents) < 0)
		return -1;
	written = git_repository_odb(&odb, repo) == 0 && git_odb_exists(odb, id);
	git_odb_free(odb);
	if (!written) {
		struct statvfs fs;
		bool full = statvfs(git_repository_path(repo), &fs) == 0 &&
			    (geteuid() ? fs.f_bavail : fs.f_bfree) * fs.f_frsize < ((size_t)1 << 20);

		git_error_set_str(GIT_ERROR_ODB, full ? "the commit object could not be written: "
							"No space left on device"
						      : "the commit object could not be written");
		return -1;
	}
	return 0;
}

int al_git_commit_all(struct al_git *g, const char *message, const char *own_dir,
		      char oid[AL_OID_HEX])
{
	git_index *index = NULL;
	git_tree *tree = NULL, *parent_tree = NULL;
	git_commit *parent = NULL;
	git_signature *author = NULL, *committer = NULL;
	git_oid tree_oid, commit_oid;
	char *ref = NULL;
	git_oid tip;
	bool born, on_parent, intended;
	int rc = 0;

	/* an agent may have moved HEAD: the run commits where it is, or nowhere */
	if ((rc = al_git_head_state(g, &ref, &tip, &born)) < 0 ||
	    (rc = al_git_check_head_at(g, ref, &tip, born, own_dir)) < 0)
		goto done;
	if (git_commit_lookup(&parent, g->repo, &tip) < 0 ||
	    git_commit_tree(&parent_tree, parent) < 0) {
		rc = al_git_fail("cannot read HEAD");
		goto done;
	}
	/* the run's first commit here: a restart from now on may tear the objects it writes */
	if (own_dir && (rc = al_git_mark_pending(g)) < 0)
		goto done;
	on_parent = g->index_commit_known && git_oid_equal(&g->index_commit, &tip);
	g->index_commit_known = false; /* until this commit is made */
	al_git_recent_begin(g->recent);
	if (git_repository_index(&index, g->repo) < 0 ||
	    al_git_stage_all(g, index, own_dir, git_oid_equal(&tip, &g->last)) < 0) {
		rc = al_git_fail("cannot stage the work tree");
		goto done;
	}
	if ((rc = al_git_write_tree(g, index, on_parent ? parent_tree : NULL, &tree_oid)) < 0)
		goto done;
	if (git_tree_lookup(&tree, g->repo, &tree_oid) < 0) {
		rc = al_git_fail("cannot stage the work tree");
		goto done;
	}
	al_crash_point("staged");
	if ((rc = al_git_identity(g)) < 0)
		goto done;
	/* the time of each commit is its own */
	if (git_signature_new(&author, g->author->name, g->author->email, time(NULL), 0) < 0 ||
	    git_signature_new(&committer, g->committer->name, g->committer->email, time(NULL),
			      0) < 0 ||
	    al_git_create_commit(&commit_oid, g->repo, author, committer, message, tree, 1,
				 (const git_commit **)&parent) < 0) {
		rc = al_git_fail("cannot commit");
		goto done;
	}
	/*
	 * The objects and the index are on disk before the ref that names
	 * them; with them, under the mark, the intent to move it, and the
	 * last commit's move: this commit's is durable at the next point.
	 */
	intended = al_git_intend(g, ref, &tip, &commit_oid) == 0;
	al_durable_written();
	if ((rc = al_durable_point()) < 0 || (rc = move_head(g, ref, &commit_oid, &tip, message)) < 0)
		goto done;
	/* from the run's first commit on, the run's state is in each commit */
	if (own_dir && !g->restorable && (rc = al_git_mark_restorable(g, own_dir)) < 0)
		goto done;
	al_durable_written();
	if (!intended && (rc = al_durable_point()) < 0)
		goto done;
	if (g->restorable)
		al_durable_relax(true);
	if (oid)
		git_oid_tostr(oid, AL_OID_HEX, &commit_oid);
	g->last = commit_oid;
	g->index_commit = commit_oid;
	g->index_commit_known = true;
	al_git_code_id_of(g, &commit_oid, tree);
	al_crash_point("committed"); /* before any state records the commit */
done:
	al_git_recent_end(g->recent);
	free(ref);
	git_signature_free(author);
	git_signature_free(committer);
	git_commit_free(parent);
	git_tree_free(parent_tree);
	git_tree_free(tree);
	git_index_free(index);
	return rc;
}

int al_git_clear_stale_locks(struct al_git *g, const char *branch)
{
	const char *gitdir = git_repository_path(g->repo);
	char *paths[3];
	int removed = 0;

	paths[0] = al_xprintf("%sindex.lock", gitdir);
	paths[1] = al_xprintf("%sHEAD.lock", gitdir);
	paths[2] = branch ? al_xprintf("%srefs/heads/%s.lock", gitdir, branch) : NULL;
	for (size_t i = 0; i < 3; i++) {
		if (paths[i] && al_proc_remove_unheld(paths[i]))
			removed++;
		free(paths[i]);
	}
	return removed;
}
