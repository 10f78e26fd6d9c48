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

/* (git_repo.h) */
int al_git_head_state(struct al_git *g, char **ref, git_oid *tip, bool *born)
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
	int rc = al_git_head_state(g, &ref, &tip, &born);

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
int al_git_check_head_at(struct al_git *g, const char *ref, const git_oid *tip, bool born,
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
	if ((rc = al_git_head_state(g, &ref, &tip, &born)) == 0)
		rc = al_git_check_head_at(g, ref, &tip, born, own_dir);
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

int al_git_ignore_runs(struct al_git *g)
{
	static const char *const entries[] = AL_RUNS_UNRECORDED;
	struct al_strbuf sb = AL_STRBUF_INIT, line = AL_STRBUF_INIT;
	git_buf info = GIT_BUF_INIT;
	char *path = NULL;
	size_t old;
	int rc = 0;

	/* the common directory's: one for every worktree of the repository, as git reads it */
	if (git_repository_item_path(&info, g->repo, GIT_REPOSITORY_ITEM_INFO) < 0) {
		rc = al_git_fail("cannot find the repository's info directory");
		goto done;
	}
	path = al_xprintf("%sexclude", info.ptr);
	if (al_strbuf_read_file(&sb, path, 0) < 0) {
		if (errno != ENOENT) {
			rc = al_err(AL_ERROR, "cannot read '%s': %s", path,
				    al_strbuf_read_strerror(errno));
			goto done;
		}
		if ((rc = al_mkdirs(info.ptr)) < 0)
			goto done;
	}
	old = sb.len;
	for (size_t i = 0; i < sizeof(entries) / sizeof(*entries); i++) {
		al_strbuf_reset(&line);
		al_strbuf_addf(&line, "/%s/**/%s", AL_RUNS_DIR, entries[i]);
		if (al_has_line(sb.buf ? sb.buf : "", line.buf))
			continue;
		if (sb.len && sb.buf[sb.len - 1] != '\n')
			al_strbuf_addch(&sb, '\n');
		if (sb.len == old)
			al_strbuf_adds(&sb, "# ailoop: files of runs that stay out of history, "
				       "on every branch\n");
		al_strbuf_addf(&sb, "%s\n", line.buf);
	}
	if (sb.len != old)
		rc = al_write_atomic(path, sb.buf, sb.len);
done:
	git_buf_dispose(&info);
	al_strbuf_release(&sb);
	al_strbuf_release(&line);
	free(path);
	return rc;
}
