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

int al_git_fail(const char *what)
{
	const git_error *e = git_error_last();
	const char *why = e && e->message ? e->message : "unknown error";

	if (al_git_filters_stopped()) /* an interrupt stopped a filter driver: not git's failure */
		return al_err(AL_EINTR, "%s: %s", what, why);

	/* the indexes git writes that libgit2 cannot read: say how to have another */
	if (strstr(why, "extension: 'sdir'"))
		return al_err(AL_ERROR, "%s: %s (git's sparse index; 'git sparse-checkout init "
			      "--no-sparse-index' keeps the sparse checkout in an index ailoop "
			      "reads)", what, why);
	if (strstr(why, "extension: 'link'"))
		return al_err(AL_ERROR, "%s: %s (git's split index; 'git config core.splitIndex "
			      "false && git update-index --no-split-index' makes it whole)", what,
			      why);
	/* an index damaged (by an agent, a tool that died writing it): git rebuilds one from HEAD */
	if (strstr(why, "invalid data in index") || strstr(why, "failed to parse index") ||
	    strstr(why, "failed to read index"))
		return al_err(AL_ERROR, "%s: %s (the index, .git/index, is damaged: 'rm .git/index "
			      "&& git reset' makes it anew from HEAD and leaves the work tree as it "
			      "is)", what, why);
	if (strstr(why, "extensions.objectformat"))
		return al_err(AL_ERROR, "%s: %s (a repository of SHA-256 object names, which "
			      "libgit2 %d.%d does not read)", what, why, LIBGIT2_VER_MAJOR,
			      LIBGIT2_VER_MINOR);
	return al_err(AL_ERROR, "%s: %s", what, why);
}

/* Whether `dir` (with or without its final slash) is the current directory. */
static bool is_cwd(const char *dir)
{
	struct stat a, b;

	return dir && stat(dir, &a) == 0 && stat(".", &b) == 0 && a.st_dev == b.st_dev &&
	       a.st_ino == b.st_ino;
}

/*
 * libgit2 found no repository to open: there is none, or (a .git here) it
 * is another user's, which libgit2 refuses as git does ("dubious
 * ownership"), saying only that it found none.
 */
static int not_found(void)
{
	struct stat st;
	char *cwd;
	int rc;

	if (lstat(".git", &st) < 0 || st.st_uid == geteuid())
		return al_err(AL_ENOTFOUND, "not a git repository (run 'git init' and make a "
			      "first commit)");
	cwd = getcwd(NULL, 0);
	rc = al_err(AL_ENOTFOUND, "the git repository here is owned by another user (uid %u), "
		    "which git does not trust; to trust it: git config --global --add "
		    "safe.directory '%s'", (unsigned)st.st_uid, cwd ? cwd : ".");
	free(cwd);
	return rc;
}

void al_git_lib_version(int *major, int *minor, int *rev)
{
	git_libgit2_version(major, minor, rev);
}

int al_git_open(struct al_git **out)
{
	struct al_git *g;
	static bool initialised;
	int rc;

	*out = NULL;
	if (!initialised) {
		git_libgit2_init();
		/* no fsync of each object and ref: a commit has durable points (fsutil.h) */
		/*
		 * ailoop builds each commit from a tree it has just written on a
		 * parent it has just read: re-checking that they exist costs a
		 * pack-directory refresh per object and proves nothing.
		 */
		git_libgit2_opts(GIT_OPT_ENABLE_STRICT_OBJECT_CREATION, 0);
		/*
		 * Writing a tree from the index reads every tree below the root
		 * back, to rebuild the index's tree cache. libgit2 keeps trees
		 * of up to 4 KiB in its object cache; a directory of a hundred
		 * files makes a bigger one, which would be read, inflated and
		 * hashed again at each commit although it did not change.
		 */
		git_libgit2_opts(GIT_OPT_SET_CACHE_OBJECT_LIMIT, (int)GIT_OBJECT_TREE,
				 (size_t)1 << 20);
		/*
		 * libgit2's object cache may grow to 256 MiB, which a run of
		 * thousands of iterations reaches bit by bit (10,000 iterations:
		 * 9.7 MB to 65 MB resident) though a commit needs only the trees
		 * on its way and its parent. 16 MiB holds every tree of a
		 * 20,000-file work tree (about 1 MiB) many times over.
		 */
		git_libgit2_opts(GIT_OPT_SET_CACHE_MAX_SIZE, (ssize_t)AL_GIT_CACHE_MAX);
		al_git_filters_register();
		initialised = true;
	}
	g = al_calloc(1, sizeof(*g));
	g->watch_off = getenv("AILOOP_WATCH") && !strcmp(getenv("AILOOP_WATCH"), "0");
	if ((rc = git_repository_open_ext(&g->repo, ".", 0, NULL)) < 0) {
		free(g);
		if (rc != GIT_ENOTFOUND) /* a repository, but not one libgit2 can open */
			return al_git_fail("cannot open the git repository");
		return not_found();
	}
	if (git_repository_is_bare(g->repo)) {
		al_git_free(g);
		return al_err(AL_ENOTFOUND, "the repository has no work tree");
	}
	if (!is_cwd(git_repository_workdir(g->repo))) {
		rc = al_err(AL_ENOTFOUND, ".ai-loop must be at the root of the git repository "
			    "('%s'), not below it", git_repository_workdir(g->repo));
		al_git_free(g);
		return rc;
	}
	al_git_gate_pack_refresh(g->repo); /* counts the usual two stores: before the third */
	g->recent = al_git_recent_add(g->repo);
	*out = g;
	return 0;
}

void al_git_show_only(void)
{
	git_libgit2_opts(GIT_OPT_ENABLE_STRICT_HASH_VERIFICATION, 0);
}

void al_git_free(struct al_git *g)
{
	if (!g)
		return;
#ifdef AILOOP_TEST_HOOKS
	if (getenv("AILOOP_CACHE_REPORT")) { /* what the object cache holds, and may */
		ssize_t used = 0, allowed = 0;

		git_libgit2_opts(GIT_OPT_GET_CACHED_MEMORY, &used, &allowed);
		fprintf(stderr, "ailoop: object cache: %zd of %zd bytes\n", used, allowed);
	}
#endif
	git_signature_free(g->author);
	git_signature_free(g->committer);
	free(g->branch_ref);
	al_strv_free(g->skipped, g->nskipped);
	al_watch_free(g->watch);
	al_git_staged_drop(g);
	al_git_prestage_free(g);
	for (size_t i = 0; i < AL_ARRAY_SIZE(g->outside); i++)
		free(g->outside[i].path);
	git_repository_free(g->repo);
	free(g);
}

const char *al_git_dir(struct al_git *g)
{
	return git_repository_path(g->repo);
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
		return al_git_fail("cannot read HEAD");
	if (oid)
		git_oid_tostr(oid, AL_OID_HEX, git_reference_target(head));
	if (branch && git_reference_is_branch(head))
		*branch = al_strdup(git_reference_shorthand(head));
	git_reference_free(head);
	return 0;
}

/* HEAD: its branch ("refs/heads/…", NULL if detached) and commit (*born false: none yet). */
static int head_state(struct al_git *g, char **ref, git_oid *tip, bool *born)
{
	git_reference *head = NULL;

	*ref = NULL;
	*born = true;
	if (git_reference_lookup(&head, g->repo, "HEAD") < 0)
		return al_git_fail("cannot read HEAD");
	if (git_reference_type(head) == GIT_REFERENCE_SYMBOLIC) {
		*ref = al_strdup(git_reference_symbolic_target(head));
		*born = git_reference_name_to_id(tip, g->repo, *ref) == 0;
	} else {
		git_oid_cpy(tip, git_reference_target(head));
	}
	git_reference_free(head);
	return 0;
}

int al_git_follow(struct al_git *g)
{
	char *ref;
	git_oid tip;
	bool born;
	int rc = head_state(g, &ref, &tip, &born);

	if (rc == 0 && !born)
		rc = al_err(AL_ENOTFOUND, "the repository has no commit yet (make a first commit)");
	if (rc < 0) {
		free(ref);
		return rc;
	}
	free(g->branch_ref);
	g->branch_ref = ref;
	g->last = tip;
	g->following = true;
	return 0;
}

static const char *branch_name(const char *ref)
{
	return al_starts_with(ref, "refs/heads/") ? ref + strlen("refs/heads/") : ref;
}

/* 1 if `tip` is ailoop's last commit or has it as an ancestor, 0 if not, or an error. */
static int contains_last(struct al_git *g, const git_oid *tip)
{
	int rc;

	if (git_oid_equal(tip, &g->last))
		return 1;
	rc = git_graph_descendant_of(g->repo, tip, &g->last);
	return rc < 0 ? al_git_fail("cannot read the history") : rc;
}

/*
 * A parallel child's git commands are for its own worktree, not the main
 * one, where they would move the run's branch: the way back says where.
 */
static void in_worktree(struct al_strbuf *sb, const struct al_git *g)
{
	if (git_repository_is_worktree(g->repo))
		al_strbuf_addf(sb, "in the worktree %s, ", git_repository_workdir(g->repo));
}

/* HEAD is on `ref` (NULL: detached at `tip`), not where the run commits. */
static int switched(struct al_git *g, const char *ref, const git_oid *tip)
{
	struct al_strbuf sb = AL_STRBUF_INIT;
	const char *run = g->branch_ref ? branch_name(g->branch_ref) : NULL;
	char last[13], at[13] = "";
	int ahead = -1; /* 1: the run's commits and more, 0: the run's last commit, -1: neither */

	git_oid_tostr(last, sizeof(last), &g->last);
	if (tip) {
		int has = contains_last(g, tip);

		if (has < 0)
			return has;
		ahead = !has ? -1 : git_oid_equal(tip, &g->last) ? 0 : 1;
		git_oid_tostr(at, sizeof(at), tip);
	}
	if (ref)
		al_strbuf_addf(&sb, "HEAD is on branch '%s'", branch_name(ref));
	else
		al_strbuf_addf(&sb, "HEAD is detached at %s", at);
	if (run)
		al_strbuf_addf(&sb, ", not on the run's branch '%s'", run);
	else
		al_strbuf_addf(&sb, ", but the run works on a detached HEAD (at %s)", last);
	al_strbuf_adds(&sb, ": an agent switched branches, and ailoop committed nothing; ");
	in_worktree(&sb, g);
	if (run && ahead == 1)
		al_strbuf_addf(&sb, "to keep the commits made there, go back with 'git branch -f %s "
			       "%s && git checkout %s'", run, ref ? branch_name(ref) : at, run);
	else if (run)
		al_strbuf_addf(&sb, "go back with 'git checkout %s' (%s)", run,
			       ahead == 0 ? "the work tree comes along"
					  : "first keep what you need from where HEAD is");
	else
		al_strbuf_addf(&sb, "go back with 'git checkout --detach %s'", ahead == 1 ? at : last);
	al_strbuf_adds(&sb, ", then resume the run");
	al_err(AL_EMOVED, "%s", sb.buf);
	al_strbuf_release(&sb);
	return AL_EMOVED;
}

/* The run's branch (or detached HEAD) no longer holds ailoop's last commit. */
static int moved(struct al_git *g, const git_oid *tip, const char *own_dir)
{
	struct al_strbuf sb = AL_STRBUF_INIT;
	char last[13], at[13] = "";

	git_oid_tostr(last, sizeof(last), &g->last);
	if (tip)
		git_oid_tostr(at, sizeof(at), tip);
	if (!g->branch_ref)
		al_strbuf_addf(&sb, "HEAD was moved to %s, which does not contain", at);
	else if (tip)
		al_strbuf_addf(&sb, "the run's branch '%s' was moved to %s, which does not contain",
			       branch_name(g->branch_ref), at);
	else
		al_strbuf_addf(&sb, "the run's branch '%s' was deleted, with",
			       branch_name(g->branch_ref));
	al_strbuf_addf(&sb, " ailoop's last commit %s: an agent reset or rewrote it, and ailoop "
		       "committed nothing; ", last);
	in_worktree(&sb, g);
	al_strbuf_addf(&sb, "put it back with 'git reset --soft %s", last);
	if (own_dir)
		al_strbuf_addf(&sb, " && git checkout %s -- %s' (the run's files as committed; the "
			       "rest of the work tree stays as it is)", last, own_dir);
	else
		al_strbuf_adds(&sb, "' (the work tree stays as it is)");
	al_strbuf_adds(&sb, ", then resume the run");
	al_err(AL_EMOVED, "%s", sb.buf);
	al_strbuf_release(&sb);
	return AL_EMOVED;
}

/* Whether HEAD (`ref`, `tip`) is where the run commits; AL_EMOVED says how not. */
static int check_head(struct al_git *g, const char *ref, const git_oid *tip, bool born,
		      const char *own_dir)
{
	int rc;

	if (!g->following)
		return 0;
	if (ref && g->branch_ref ? strcmp(ref, g->branch_ref) : ref != g->branch_ref)
		return switched(g, ref, born ? tip : NULL);
	if (!born)
		return moved(g, NULL, own_dir);
	rc = contains_last(g, tip);
	return rc == 0 ? moved(g, tip, own_dir) : rc < 0 ? rc : 0;
}

int al_git_check_head(struct al_git *g, const char *own_dir)
{
	char *ref = NULL;
	git_oid tip;
	bool born;
	int rc;

	if (!g->following)
		return 0;
	if ((rc = head_state(g, &ref, &tip, &born)) == 0)
		rc = check_head(g, ref, &tip, born, own_dir);
	free(ref);
	return rc;
}

int al_git_check_holds(struct al_git *g, const char *hex, const char *own_dir)
{
	git_oid last, tip = g->last;
	int rc;

	if (!g->following || git_oid_fromstr(&last, hex) < 0)
		return 0;
	g->last = last;
	rc = al_git_check_head(g, own_dir);
	g->last = tip; /* it holds: the run goes on from HEAD as it follows it */
	return rc;
}

/*
 * Files of a run that never go into history: lock files; the event log
 * and the working memory, which only grow; the cache of condition results,
 * which only grows and is keyed by the trees it was computed on; and
 * agents' logs and prompts (logs/), which can be large and say nothing the
 * outputs and messages do not; the pages `ailoop report` writes of them.
 */
bool al_git_unrecorded(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return al_starts_with(path, ".ai-loop/runs/") &&
	       (!strcmp(base, "lock") || al_ends_with(base, ".lock") ||
		!strcmp(base, "events.jsonl") || !strcmp(base, AL_MEMORY_FILE) ||
		!strcmp(base, AL_COND_CACHE_FILE) || !strcmp(base, "report.html") ||
		!strcmp(base, "report.md") || strstr(path, "/logs/"));
}

bool al_git_sparse(git_index *index, const char *path)
{
	const git_index_entry *e = index ? git_index_get_bypath(index, path, 0) : NULL;

	return e && (e->flags_extended & GIT_INDEX_ENTRY_SKIP_WORKTREE);
}

int al_git_dirty(struct al_git *g, char **path)
{
	git_status_options opts;
	git_status_list *list = NULL;
	git_index *index = NULL;
	int dirty = 0;

	*path = NULL;
	al_git_watch_early(g);
	git_status_options_init(&opts, GIT_STATUS_OPTIONS_VERSION);
	opts.show = GIT_STATUS_SHOW_INDEX_AND_WORKDIR;
	/*
	 * UPDATE_INDEX, as `git status` does: files whose stat data the index
	 * has wrong (a copied or restored tree) are hashed once here, not again
	 * in every later pass over the tree.
	 */
	opts.flags = GIT_STATUS_OPT_INCLUDE_UNTRACKED | GIT_STATUS_OPT_RECURSE_UNTRACKED_DIRS |
		     GIT_STATUS_OPT_EXCLUDE_SUBMODULES | GIT_STATUS_OPT_UPDATE_INDEX;
	if (git_status_list_new(&list, g->repo, &opts) < 0)
		return al_git_fail("cannot read the status of the work tree");
	if (git_repository_index(&index, g->repo) < 0)
		index = NULL;
	for (size_t i = 0; i < git_status_list_entrycount(list) && !dirty; i++) {
		const git_status_entry *e = git_status_byindex(list, i);
		const git_diff_delta *d = e->index_to_workdir ? e->index_to_workdir : e->head_to_index;
		const char *p = d ? d->new_file.path : NULL;

		/* ailoop's own run files are not the user's work to protect */
		if (e->status == GIT_STATUS_CURRENT || !p || al_starts_with(p, ".ai-loop/runs/") ||
		    (e->status == GIT_STATUS_WT_DELETED && al_git_sparse(index, p)))
			continue;
		*path = al_strdup(p);
		dirty = 1;
	}
	/* nothing to commit, not even run files: the first commit can trust the watch */
	if (git_status_list_entrycount(list) == 0 && index)
		al_git_watch_from_clean(g, index);
	git_index_free(index);
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

/* Whether some branch's name is below `name/` (git keeps refs as files: name cannot be one). */
static bool branches_below(struct al_git *g, const char *name)
{
	git_reference_iterator *it = NULL;
	git_reference *ref = NULL;
	char *glob = al_xprintf("refs/heads/%s/*", name);
	bool found = git_reference_iterator_glob_new(&it, g->repo, glob) == 0 &&
		     git_reference_next(&ref, it) == 0;

	git_reference_free(ref);
	git_reference_iterator_free(it);
	free(glob);
	git_error_clear();
	return found;
}

char *al_git_branch_free_name(struct al_git *g, const char *name, char **blocker)
{
	char *candidate;

	*blocker = NULL;
	/* a branch named as one of its directories ("ai-loop" for "ai-loop/x"): no suffix helps */
	for (const char *slash = strchr(name, '/'); slash; slash = strchr(slash + 1, '/')) {
		char *dir = al_strndup(name, (size_t)(slash - name));

		if (al_git_branch_exists(g, dir)) {
			*blocker = dir;
			return NULL;
		}
		free(dir);
	}
	candidate = al_strdup(name);
	for (int n = 2; al_git_branch_exists(g, candidate) || branches_below(g, candidate); n++) {
		free(candidate);
		candidate = al_xprintf("%s-%d", name, n);
	}
	return candidate;
}

int al_git_branch_create(struct al_git *g, const char *name)
{
	git_reference *head = NULL, *branch = NULL;
	git_commit *commit = NULL;
	int rc = 0;

	if (git_repository_head(&head, g->repo) < 0 ||
	    git_commit_lookup(&commit, g->repo, git_reference_target(head)) < 0 ||
	    git_branch_create(&branch, g->repo, name, commit, 0) < 0 ||
	    git_repository_set_head(g->repo, git_reference_name(branch)) < 0)
		rc = al_git_fail("cannot create the branch");
	al_durable_written();
	git_reference_free(branch);
	git_commit_free(commit);
	git_reference_free(head);
	return rc;
}

/* A file in the way of a checkout: the first one's path is kept (payload). */
static int in_the_way(git_checkout_notify_t why, const char *path, const git_diff_file *baseline,
		      const git_diff_file *target, const git_diff_file *workdir, void *payload)
{
	char **first = payload;

	(void)why;
	(void)baseline;
	(void)target;
	(void)workdir;
	if (!*first)
		*first = al_strdup(path);
	return 0;
}

/*
 * The path of the linked worktree that has branch `ref` (a full name)
 * checked out, or NULL: a checkout of it here would fail half-way, with
 * the work tree and index set to its tree and HEAD left where it was.
 */
static char *checked_out_elsewhere(git_repository *repo, const char *ref)
{
	git_strarray names = { NULL, 0 };
	char *found = NULL;

	if (git_worktree_list(&names, repo) < 0)
		return NULL;
	for (size_t i = 0; i < names.count && !found; i++) {
		git_worktree *wt = NULL;
		git_repository *other = NULL;
		git_reference *head = NULL;

		if (git_worktree_lookup(&wt, repo, names.strings[i]) == 0 &&
		    git_worktree_validate(wt) == 0 &&
		    git_repository_open_from_worktree(&other, wt) == 0 &&
		    git_reference_lookup(&head, other, "HEAD") == 0 &&
		    git_reference_type(head) == GIT_REFERENCE_SYMBOLIC &&
		    !strcmp(git_reference_symbolic_target(head), ref))
			found = al_strdup(git_worktree_path(wt));
		git_reference_free(head);
		git_repository_free(other);
		git_worktree_free(wt);
	}
	git_strarray_dispose(&names);
	git_error_clear();
	return found;
}

int al_git_checkout(struct al_git *g, const char *name, char **conflict)
{
	git_checkout_options opts;
	git_reference *branch = NULL;
	git_object *target = NULL;
	char *first = NULL;
	int rc = 0;

	git_checkout_options_init(&opts, GIT_CHECKOUT_OPTIONS_VERSION);
	opts.checkout_strategy = GIT_CHECKOUT_SAFE;
	opts.notify_flags = GIT_CHECKOUT_NOTIFY_CONFLICT;
	opts.notify_cb = in_the_way;
	opts.notify_payload = &first;
	if (git_branch_lookup(&branch, g->repo, name, GIT_BRANCH_LOCAL) < 0)
		return al_err(AL_ENOTFOUND, "branch '%s' does not exist", name);
	if ((first = checked_out_elsewhere(g->repo, git_reference_name(branch)))) {
		rc = al_err(AL_ENOTFOUND, "branch '%s' is checked out in the worktree '%s': go on "
			    "there ('cd %s'), or remove that worktree first ('git worktree remove "
			    "%s')", name, first, first, first);
		free(first);
		git_reference_free(branch);
		return rc;
	}
	if (git_reference_peel(&target, branch, GIT_OBJECT_COMMIT) < 0 ||
	    git_checkout_tree(g->repo, target, &opts) < 0 ||
	    git_repository_set_head(g->repo, git_reference_name(branch)) < 0)
		rc = al_git_fail("cannot check out the run's branch");
	al_durable_written();
	if (rc < 0 && conflict)
		*conflict = first;
	else
		free(first);
	git_object_free(target);
	git_reference_free(branch);
	return rc;
}

/* Whether `path` is `dir` or below it. */
bool al_git_below(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	return !strncmp(path, dir, n) && (path[n] == '/' || !path[n]);
}

/* What restore_paths() puts back of what differs from the tree. */
enum restore_what {
	RESTORE_ALL,          /* every path */
	RESTORE_IGNORE_FILES, /* the .gitignore files only */
	RESTORE_UNIGNORED,    /* every path but those the tree lacks that are ignored */
};

/* Whether `path`'s last component is .gitignore. */
static bool ignore_file(const char *path)
{
	const char *base = strrchr(path, '/');

	return !strcmp(base ? base + 1 : path, ".gitignore");
}

/*
 * Puts the work tree and the index back to `tree` at the paths that
 * differ from it (tracked or not; ignored files are not the tree's), but
 * below `keep`, and only below `only` (each may be NULL), as `what` says.
 * A file the tree lacks that is ignored is kept (RESTORE_UNIGNORED): it is
 * taken out of the index only.
 */
static int restore_paths(struct al_git *g, git_tree *tree, const char *keep, const char *only,
			 enum restore_what what)
{
	git_diff_options dopts;
	git_checkout_options copts;
	git_diff *diff = NULL;
	git_index *index = NULL;
	char **paths = NULL, *spec[] = { (char *)only };
	size_t n = 0;
	bool untracked = false;
	int rc = 0;

	git_diff_options_init(&dopts, GIT_DIFF_OPTIONS_VERSION);
	dopts.flags = GIT_DIFF_INCLUDE_UNTRACKED | GIT_DIFF_RECURSE_UNTRACKED_DIRS |
		      GIT_DIFF_INCLUDE_TYPECHANGE;
	if (only) {
		dopts.pathspec.strings = spec;
		dopts.pathspec.count = 1;
	}
	if (git_diff_tree_to_workdir_with_index(&diff, g->repo, tree, &dopts) < 0 ||
	    git_repository_index(&index, g->repo) < 0) {
		rc = al_git_fail("cannot compare the work tree with the commit to restore");
		goto done;
	}
	paths = al_calloc(2 * git_diff_num_deltas(diff) + 1, sizeof(*paths));
	for (size_t i = 0; i < git_diff_num_deltas(diff) && rc == 0; i++) {
		const git_diff_delta *d = git_diff_get_delta(diff, i);
		const char *path = d->new_file.path;
		int ignored = 0;

		if ((keep && al_git_below(path, keep)) || (only && !al_git_below(path, only)) ||
		    (what == RESTORE_IGNORE_FILES && !ignore_file(path) &&
		     !ignore_file(d->old_file.path)))
			continue;
		if (what == RESTORE_UNIGNORED &&
		    (d->status == GIT_DELTA_ADDED || d->status == GIT_DELTA_UNTRACKED) &&
		    git_ignore_path_is_ignored(&ignored, g->repo, path) == 0 && ignored) {
			if (git_index_get_bypath(index, path, 0)) {
				rc = git_index_remove_bypath(index, path);
				untracked = true;
			}
			continue;
		}
		paths[n++] = al_strdup(path);
		if (strcmp(d->old_file.path, path))
			paths[n++] = al_strdup(d->old_file.path);
	}
	if (rc == 0 && untracked && (rc = git_index_write(index)) < 0)
		rc = al_git_fail("cannot restore the work tree");
	if (rc < 0 || !n)
		goto done;
	git_checkout_options_init(&copts, GIT_CHECKOUT_OPTIONS_VERSION);
	copts.checkout_strategy = GIT_CHECKOUT_FORCE | GIT_CHECKOUT_REMOVE_UNTRACKED |
				  GIT_CHECKOUT_DISABLE_PATHSPEC_MATCH;
	copts.paths.strings = paths;
	copts.paths.count = n;
	if (git_checkout_tree(g->repo, (git_object *)tree, &copts) < 0)
		rc = al_git_fail("cannot restore the work tree");
	al_durable_written();
done:
	for (size_t i = 0; i < n; i++)
		free(paths[i]);
	free(paths);
	git_index_free(index);
	git_diff_free(diff);
	return rc;
}

int al_git_restore_tree(struct al_git *g, git_tree *tree, const char *keep, const char *only)
{
	return restore_paths(g, tree, keep, only, RESTORE_ALL);
}

int al_git_restore_from_head(struct al_git *g, const char *dir, char hex[8])
{
	git_oid head = { { 0 } };
	git_commit *commit = NULL;
	git_tree *tree = NULL;
	git_tree_entry *entry = NULL;
	int rc = AL_ENOTFOUND;

	if (git_reference_name_to_id(&head, g->repo, "HEAD") == 0 &&
	    git_commit_lookup(&commit, g->repo, &head) == 0 && git_commit_tree(&tree, commit) == 0 &&
	    git_tree_entry_bypath(&entry, tree, dir) == 0)
		rc = al_git_restore_tree(g, tree, NULL, dir);
	git_oid_tostr(hex, 8, &head);
	if (rc == AL_ENOTFOUND)
		git_error_clear();
	git_tree_entry_free(entry);
	git_tree_free(tree);
	git_commit_free(commit);
	return rc;
}

int al_git_snapshot(struct al_git *g, const char *own_dir, char tree_hex[AL_OID_HEX])
{
	git_index *index = NULL;
	git_oid tip, tree;
	char *ref = NULL;
	bool born;
	int rc;

	if ((rc = head_state(g, &ref, &tip, &born)) < 0)
		return rc;
	free(ref);
	/* the index holds more than a commit's tree now: the next commit writes it whole */
	g->index_commit_known = false;
	if (git_repository_index(&index, g->repo) < 0 ||
	    al_git_stage_all(g, index, own_dir, born && git_oid_equal(&tip, &g->last)) < 0 ||
	    git_index_write_tree(&tree, index) < 0)
		rc = al_git_fail("cannot record the work tree");
	else
		git_oid_tostr(tree_hex, AL_OID_HEX, &tree);
	git_index_free(index);
	return rc;
}

int al_git_rollback(struct al_git *g, const char *commit_hex, const char *tree_hex,
		    const char *keep)
{
	const char *hex = tree_hex ? tree_hex : commit_hex;
	git_object *obj = NULL;
	git_tree *tree = NULL;
	git_oid oid;
	int rc;

	if (!hex || strlen(hex) != GIT_OID_HEXSZ || git_oid_fromstrn(&oid, hex, strlen(hex)) < 0 ||
	    git_object_lookup(&obj, g->repo, &oid, tree_hex ? GIT_OBJECT_TREE : GIT_OBJECT_COMMIT) < 0)
		return al_err(AL_EINVALID, "cannot restore the work tree to %s '%s': it is not one of "
			      "this repository", tree_hex ? "tree" : "commit", hex ? hex : "");
	if (git_object_peel((git_object **)&tree, obj, GIT_OBJECT_TREE) < 0)
		rc = al_git_fail("cannot compare the work tree with the commit to restore");
	/*
	 * the .gitignore files first: what else is put back (or left alone,
	 * ignored) is decided by the rules of the start, not the ones the
	 * transaction wrote
	 */
	else if ((rc = restore_paths(g, tree, keep, NULL, RESTORE_IGNORE_FILES)) == 0)
		rc = restore_paths(g, tree, keep, NULL, RESTORE_UNIGNORED);
	git_tree_free(tree);
	git_object_free(obj);
	return rc;
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
	if ((rc = head_state(g, &ref, &tip, &born)) < 0 ||
	    (rc = check_head(g, ref, &tip, born, own_dir)) < 0)
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
	if (!g->author) {
		if (signature(&g->author, g->repo, "AUTHOR") < 0 ||
		    signature(&g->committer, g->repo, "COMMITTER") < 0) {
			rc = al_git_fail("cannot make the commit's signature");
			goto done;
		}
		/* the reflog's, as git writes it: found once, not in the config at each move */
		git_repository_set_ident(g->repo, g->committer->name, g->committer->email);
	}
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
