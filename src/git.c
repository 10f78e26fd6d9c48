#include "ailoop/git.h"
#include "ailoop/fsutil.h"
#include "ailoop/git_packs.h"
#include "ailoop/condition.h"
#include "ailoop/memory.h"
#include "ailoop/proc.h"
#include "ailoop/sha256.h"
#include "ailoop/strbuf.h"
#include "ailoop/util.h"
#include "ailoop/watch.h"

#include <git2.h>
#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct al_git {
	git_repository *repo;
	git_signature *author;    /* who commits, worked out once */
	git_signature *committer;
	/* where the run commits (al_git_follow): a branch, or a detached HEAD */
	bool following;
	char *branch_ref; /* "refs/heads/…", NULL for a detached HEAD */
	git_oid last;     /* ailoop's last commit there, or HEAD when following began */
	char **skipped;   /* nested repositories without a commit, warned about once */
	size_t nskipped, skipped_alloc;
	/* what changed in the work tree since the last commit (stage_all) */
	struct al_watch *watch; /* NULL: none yet, or none possible */
	pid_t watch_pid;        /* the process it belongs to (not a forked child) */
	bool watch_off;         /* AILOOP_WATCH=0, or inotify failed: a full scan every time */
	struct stat index_st;   /* the index file as this process last left it */
	bool index_known;
};

static int fail(const char *what)
{
	const git_error *e = git_error_last();

	return al_err(AL_ERROR, "%s: %s", what, e && e->message ? e->message : "unknown error");
}

/* Whether `dir` (with or without its final slash) is the current directory. */
static bool is_cwd(const char *dir)
{
	struct stat a, b;

	return dir && stat(dir, &a) == 0 && stat(".", &b) == 0 && a.st_dev == b.st_dev &&
	       a.st_ino == b.st_ino;
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
		initialised = true;
	}
	g = al_calloc(1, sizeof(*g));
	g->watch_off = getenv("AILOOP_WATCH") && !strcmp(getenv("AILOOP_WATCH"), "0");
	if (git_repository_open_ext(&g->repo, ".", 0, NULL) < 0) {
		free(g);
		return al_err(AL_ENOTFOUND, "not a git repository (run 'git init' and make a "
			      "first commit)");
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
	al_git_gate_pack_refresh(g->repo);
	*out = g;
	return 0;
}

void al_git_free(struct al_git *g)
{
	if (!g)
		return;
	git_signature_free(g->author);
	git_signature_free(g->committer);
	free(g->branch_ref);
	al_strv_free(g->skipped, g->nskipped);
	al_watch_free(g->watch);
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
		return fail("cannot read HEAD");
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
		return fail("cannot read HEAD");
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
	return rc < 0 ? fail("cannot read the history") : rc;
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
		       "committed nothing; put it back with 'git reset --soft %s", last, last);
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

/*
 * Files of a run that never go into history: lock files; the event log
 * and the working memory, which only grow; the cache of condition results,
 * which only grows and is keyed by the trees it was computed on; and
 * agents' logs and prompts (logs/), which can be large and say nothing the
 * outputs and messages do not; the pages `ailoop report` writes of them.
 */
static bool unrecorded(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return al_starts_with(path, ".ai-loop/runs/") &&
	       (!strcmp(base, "lock") || al_ends_with(base, ".lock") ||
		!strcmp(base, "events.jsonl") || !strcmp(base, AL_MEMORY_FILE) ||
		!strcmp(base, AL_COND_CACHE_FILE) || !strcmp(base, "report.html") ||
		!strcmp(base, "report.md") || strstr(path, "/logs/"));
}

int al_git_dirty(struct al_git *g, char **path)
{
	git_status_options opts;
	git_status_list *list = NULL;
	int dirty = 0;

	*path = NULL;
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
		return fail("cannot read the status of the work tree");
	for (size_t i = 0; i < git_status_list_entrycount(list) && !dirty; i++) {
		const git_status_entry *e = git_status_byindex(list, i);
		const git_diff_delta *d = e->index_to_workdir ? e->index_to_workdir : e->head_to_index;
		const char *p = d ? d->new_file.path : NULL;

		/* ailoop's own run files are not the user's work to protect */
		if (e->status == GIT_STATUS_CURRENT || !p || al_starts_with(p, ".ai-loop/runs/"))
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

char *al_git_branch_free_name(struct al_git *g, const char *name)
{
	char *candidate = al_strdup(name);

	for (int n = 2; al_git_branch_exists(g, candidate); n++) {
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
		rc = fail("cannot create the branch");
	al_durable_written();
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
	al_durable_written();
	git_object_free(target);
	git_reference_free(branch);
	return rc;
}

/* Whether `path` is `dir` or below it. */
static bool below(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	return !strncmp(path, dir, n) && (path[n] == '/' || !path[n]);
}

int al_git_restore(struct al_git *g, const char *commit_hex, const char *keep)
{
	git_diff_options dopts;
	git_checkout_options copts;
	git_oid oid;
	git_commit *commit = NULL;
	git_tree *tree = NULL;
	git_diff *diff = NULL;
	char **paths = NULL;
	size_t n = 0;
	int rc = 0;

	if (!commit_hex || git_oid_fromstrn(&oid, commit_hex, strlen(commit_hex)) < 0 ||
	    strlen(commit_hex) != GIT_OID_HEXSZ || git_commit_lookup(&commit, g->repo, &oid) < 0)
		return al_err(AL_EINVALID, "cannot restore the tree of commit '%s': it is not a "
			      "commit of this repository", commit_hex ? commit_hex : "");
	/* what differs from it, tracked or not (ignored files are not the tree's) */
	git_diff_options_init(&dopts, GIT_DIFF_OPTIONS_VERSION);
	dopts.flags = GIT_DIFF_INCLUDE_UNTRACKED | GIT_DIFF_RECURSE_UNTRACKED_DIRS |
		      GIT_DIFF_INCLUDE_TYPECHANGE;
	if (git_commit_tree(&tree, commit) < 0 ||
	    git_diff_tree_to_workdir_with_index(&diff, g->repo, tree, &dopts) < 0) {
		rc = fail("cannot compare the work tree with the commit to restore");
		goto done;
	}
	paths = al_calloc(2 * git_diff_num_deltas(diff) + 1, sizeof(*paths));
	for (size_t i = 0; i < git_diff_num_deltas(diff); i++) {
		const git_diff_delta *d = git_diff_get_delta(diff, i);

		if (keep && below(d->new_file.path, keep))
			continue;
		paths[n++] = al_strdup(d->new_file.path);
		if (strcmp(d->old_file.path, d->new_file.path))
			paths[n++] = al_strdup(d->old_file.path);
	}
	if (!n)
		goto done;
	git_checkout_options_init(&copts, GIT_CHECKOUT_OPTIONS_VERSION);
	copts.checkout_strategy = GIT_CHECKOUT_FORCE | GIT_CHECKOUT_REMOVE_UNTRACKED |
				  GIT_CHECKOUT_DISABLE_PATHSPEC_MATCH;
	copts.paths.strings = paths;
	copts.paths.count = n;
	if (git_checkout_tree(g->repo, (git_object *)tree, &copts) < 0)
		rc = fail("cannot restore the work tree");
	al_durable_written();
done:
	for (size_t i = 0; i < n; i++)
		free(paths[i]);
	free(paths);
	git_diff_free(diff);
	git_tree_free(tree);
	git_commit_free(commit);
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
 * A blob of `buf`, written only if the object store lacks it: libgit2's
 * loose store makes a temporary file for every object written, then
 * deletes it when the object is there already, which on ext4 costs an
 * inode made and freed. Most of a run's files repeat a text seen before.
 */
static int write_blob(git_oid *id, git_repository *repo, const char *buf, size_t len)
{
	git_odb *odb = NULL;
	int rc, there;

	if ((rc = git_odb_hash(id, buf, len, GIT_OBJECT_BLOB)) < 0 ||
	    (rc = git_repository_odb(&odb, repo)) < 0)
		return rc;
	there = git_odb_exists(odb, id);
	git_odb_free(odb);
	return there ? 0 : git_blob_create_from_buffer(id, repo, buf, len);
}

/*
 * ailoop's own files under .ai-loop/runs/ are plain LF text it has just
 * written: they become blobs directly, without the attribute lookups and
 * filters that a user's file needs (they are most of what changes in an
 * iteration, and that machinery is most of a commit's cost).
 */
static int add_own_file(git_index *index, git_repository *repo, const char *path)
{
	struct al_strbuf sb = AL_STRBUF_INIT;
	git_index_entry e;
	struct stat st;
	int rc;

	if (lstat(path, &st) < 0 || !S_ISREG(st.st_mode) ||
	    al_strbuf_read_file(&sb, path, 0) < 0) {
		al_strbuf_release(&sb);
		return git_index_add_bypath(index, path); /* let libgit2 say what it is */
	}
	memset(&e, 0, sizeof(e));
	e.path = path;
	e.mode = st.st_mode & S_IXUSR ? GIT_FILEMODE_BLOB_EXECUTABLE : GIT_FILEMODE_BLOB;
	e.file_size = (uint32_t)st.st_size;
	e.mtime.seconds = (int32_t)st.st_mtim.tv_sec;
	e.mtime.nanoseconds = (uint32_t)st.st_mtim.tv_nsec;
	e.ctime.seconds = (int32_t)st.st_ctim.tv_sec;
	e.ctime.nanoseconds = (uint32_t)st.st_ctim.tv_nsec;
	e.dev = (uint32_t)st.st_dev;
	e.ino = (uint32_t)st.st_ino;
	e.uid = st.st_uid;
	e.gid = st.st_gid;
	rc = write_blob(&e.id, repo, sb.buf, sb.len);
	if (rc == 0)
		rc = git_index_add(index, &e);
	if (rc == 0)
		al_rewritten_forget(&st); /* staged: the index holds what it holds */
	al_strbuf_release(&sb);
	return rc;
}

/* Whether the work tree file may differ from its index entry. */
static bool stat_differs(const git_index_entry *e, const struct stat *st)
{
	return !e || al_rewritten(st) || e->file_size != (uint32_t)st->st_size ||
	       e->mtime.seconds != (int32_t)st->st_mtim.tv_sec ||
	       e->mtime.nanoseconds != (uint32_t)st->st_mtim.tv_nsec ||
	       e->ino != (uint32_t)st->st_ino;
}

/* Stages the files ailoop wrote under `dir` (recursively), lock files aside. */
static int stage_own_files(git_index *index, git_repository *repo, const char *dir)
{
	struct dirent *de;
	DIR *d = opendir(dir);
	int rc = 0;

	if (!d)
		return 0; /* no run directory (yet): nothing of ours to stage */
	while (rc == 0 && (de = readdir(d))) {
		struct al_strbuf path = AL_STRBUF_INIT;
		struct stat st;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		al_strbuf_addf(&path, "%s/%s", dir, de->d_name);
		if (lstat(path.buf, &st) == 0) {
			if (S_ISDIR(st.st_mode) && strcmp(de->d_name, "logs") &&
			    strcmp(de->d_name, "worktrees")) /* parallel children's */
				rc = stage_own_files(index, repo, path.buf);
			else if (S_ISREG(st.st_mode) && !unrecorded(path.buf) &&
				 stat_differs(git_index_get_bypath(index, path.buf, 0), &st))
				rc = add_own_file(index, repo, path.buf);
		}
		al_strbuf_release(&path);
	}
	closedir(d);
	return rc;
}

/*
 * A git repository in the work tree that the index does not know (an agent
 * cloned or made one): recorded as `git add` records it, a gitlink to the
 * commit checked out in it. One without a commit has nothing to link to:
 * it is left out, and said so once.
 */
static int add_nested_repo(struct al_git *g, git_index *index, const char *path)
{
	char *dir = al_strndup(path, strlen(path) - 1);
	git_repository *sub = NULL;
	git_oid head;
	int rc = 0;

	if (git_repository_open(&sub, dir) == 0 &&
	    git_reference_name_to_id(&head, sub, "HEAD") == 0) {
		rc = git_index_add_bypath(index, dir);
	} else {
		size_t i = 0;

		while (i < g->nskipped && strcmp(g->skipped[i], dir))
			i++;
		if (i == g->nskipped) {
			fprintf(stderr, "ailoop: warning: '%s' is a git repository without a commit: "
				"it is left out of the run's commits until it has one\n", dir);
			AL_GROW(g->skipped, g->nskipped, g->skipped_alloc);
			g->skipped[g->nskipped++] = al_strdup(dir);
		}
	}
	git_repository_free(sub);
	free(dir);
	return rc;
}

/*
 * Gitlinks (submodules, nested repositories) whose repository has another
 * commit checked out now. The status pass leaves submodules out (scanning
 * their work trees would cost a status of each), so their HEADs are read
 * here and recorded as `git add -A` records them; one whose directory is
 * gone is removed, one not checked out (no repository there) stays.
 */
static int stage_gitlinks(git_index *index, size_t *staged)
{
	int rc = 0;

	for (size_t i = 0; i < git_index_entrycount(index) && rc == 0; i++) {
		const git_index_entry *e = git_index_get_byindex(index, i);
		git_repository *sub = NULL;
		git_index_entry moved;
		struct stat st;
		char *path;

		if (e->mode != GIT_FILEMODE_COMMIT || git_index_entry_stage(e))
			continue;
		path = al_strdup(e->path); /* the entry, path and all, goes when replaced */
		moved = *e;
		moved.path = path;
		if (lstat(path, &st) < 0 && errno == ENOENT) {
			++*staged;
			rc = git_index_remove_bypath(index, path);
			i--; /* the next entry took its place */
		} else if (git_repository_open(&sub, path) == 0 &&
			   git_reference_name_to_id(&moved.id, sub, "HEAD") == 0 &&
			   !git_oid_equal(&moved.id, &e->id)) {
			++*staged;
			rc = git_index_add(index, &moved);
		}
		git_repository_free(sub);
		free(path);
	}
	return rc;
}

/*
 * Brings the index in line with the work tree. ailoop's own files are
 * staged first and the index written, so that the status pass that finds
 * everything else (what agents changed) sees them as unchanged and does not
 * hash them again: libgit2 re-hashes every file newer than the index.
 */
static int stage_changes(struct al_git *g, git_index *index, const char *own_dir,
			 size_t *staged)
{
	git_repository *repo = g->repo;
	git_status_options opts;
	git_status_list *list = NULL;
	int rc = 0;

	if (own_dir && ((rc = stage_own_files(index, repo, own_dir)) < 0 ||
			(rc = git_index_write(index)) < 0))
		return rc;
	*staged = 0;
	git_status_options_init(&opts, GIT_STATUS_OPTIONS_VERSION);
	opts.show = GIT_STATUS_SHOW_WORKDIR_ONLY;
	opts.flags = GIT_STATUS_OPT_INCLUDE_UNTRACKED | GIT_STATUS_OPT_RECURSE_UNTRACKED_DIRS |
		     GIT_STATUS_OPT_EXCLUDE_SUBMODULES;
	if ((rc = git_status_list_new(&list, repo, &opts)) < 0)
		return rc;
	for (size_t i = 0; i < git_status_list_entrycount(list) && rc == 0; i++) {
		const git_status_entry *e = git_status_byindex(list, i);
		const git_diff_delta *d = e->index_to_workdir;
		const char *path;

		if (!d)
			continue;
		path = d->new_file.path ? d->new_file.path : d->old_file.path;
		if (unrecorded(path))
			continue;
		++*staged;
		if (e->status & GIT_STATUS_WT_DELETED)
			rc = git_index_remove_bypath(index, path);
		else if (al_starts_with(path, ".ai-loop/runs/"))
			rc = add_own_file(index, repo, path);
		else if (al_ends_with(path, "/")) /* only a repository is listed as a directory */
			rc = add_nested_repo(g, index, path);
		else
			rc = git_index_add_bypath(index, path);
	}
	git_status_list_free(list);
	return rc < 0 ? rc : stage_gitlinks(index, staged);
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

	if (git_reference_create_matching(&moved, g->repo, ref ? ref : "HEAD", id, 1, old, log) < 0)
		rc = fail("cannot move the branch to the new commit");
	git_reference_free(moved);
	free(log);
	return rc;
}

/*
 * The watched way (watch.h): only the paths the watch saw change are
 * staged, each as the status pass would: gone (a file, or a directory and
 * all below it) is removed; a file (or symbolic link) is added if tracked
 * or not ignored, after any directory it replaced; a directory replaces a
 * file, its contents coming as paths of their own. Anything unusual (a
 * .gitignore changed, an error) fails, and the full scan follows.
 */
static int stage_path(struct al_git *g, git_index *index, const char *path)
{
	const git_index_entry *e = git_index_get_bypath(index, path, 0);
	bool tracked = e != NULL, gitlink = e && e->mode == GIT_FILEMODE_COMMIT;
	const char *base = strrchr(path, '/');
	char *dir = al_xprintf("%s/", path);
	struct stat st;
	size_t pos;
	int ignored = 0, rc = 0;

	base = base ? base + 1 : path;
	if (unrecorded(path) || gitlink) {
		/* not recorded; a gitlink: stage_gitlinks() reads its HEAD */
	} else if (!strcmp(base, ".gitignore")) {
		rc = -1; /* what is ignored changed: only a full scan knows what that adds */
	} else if (lstat(path, &st) < 0) {
		if (errno != ENOENT && errno != ENOTDIR)
			rc = -1;
		else if (!tracked || (rc = git_index_remove_bypath(index, path)) == 0)
			rc = git_index_remove_directory(index, path, 0);
	} else if (S_ISDIR(st.st_mode)) {
		if (tracked)
			rc = git_index_remove_bypath(index, path);
	} else {
		if (git_index_find_prefix(&pos, index, dir) == 0)
			rc = git_index_remove_directory(index, path, 0);
		if (rc == 0 && !tracked)
			rc = git_ignore_path_is_ignored(&ignored, g->repo, path);
		if (rc == 0 && (tracked || !ignored)) {
			if (!al_starts_with(path, ".ai-loop/runs/"))
				rc = git_index_add_bypath(index, path);
			else if (stat_differs(git_index_get_bypath(index, path, 0), &st))
				rc = add_own_file(index, g->repo, path);
		}
	}
	free(dir);
	return rc;
}

/* Nested repositories left out for want of a commit that have one now. */
static int stage_skipped(struct al_git *g, git_index *index)
{
	int rc = 0;

	for (size_t i = 0; i < g->nskipped && rc == 0; i++) {
		git_repository *sub = NULL;
		git_oid head;

		if (!git_index_get_bypath(index, g->skipped[i], 0) &&
		    git_repository_open(&sub, g->skipped[i]) == 0 &&
		    git_reference_name_to_id(&head, sub, "HEAD") == 0)
			rc = git_index_add_bypath(index, g->skipped[i]);
		git_repository_free(sub);
	}
	return rc;
}

static int stage_paths(struct al_git *g, git_index *index, const char *own_dir, char **paths,
		       size_t n)
{
	size_t staged = 0;
	int rc = own_dir ? stage_own_files(index, g->repo, own_dir) : 0;

	for (size_t i = 0; i < n && rc == 0; i++)
		rc = stage_path(g, index, paths[i]);
	if (rc == 0)
		rc = stage_skipped(g, index);
	return rc < 0 ? rc : stage_gitlinks(index, &staged);
}

/* The watch leaves alone agents' logs, and ignored directories that hold no tracked file. */
static bool watch_skip(const char *rel, void *data)
{
	struct al_git *g = data;
	const char *base = strrchr(rel, '/');
	git_index *index = NULL;
	char *dir;
	size_t pos;
	int ignored = 0;
	bool skip;

	if (al_starts_with(rel, ".ai-loop/runs/") && base && !strcmp(base + 1, "logs"))
		return true;
	dir = al_xprintf("%s/", rel);
	skip = git_ignore_path_is_ignored(&ignored, g->repo, dir) == 0 && ignored &&
	       git_repository_index(&index, g->repo) == 0 &&
	       git_index_find_prefix(&pos, index, dir) != 0;
	git_index_free(index);
	free(dir);
	return skip;
}

/* Whether the index file is as this process last left it. */
static bool index_ours(struct al_git *g, git_index *index)
{
	struct stat st;

	return g->index_known && stat(git_index_path(index), &st) == 0 &&
	       st.st_ino == g->index_st.st_ino && st.st_size == g->index_st.st_size &&
	       st.st_mtim.tv_sec == g->index_st.st_mtim.tv_sec &&
	       st.st_mtim.tv_nsec == g->index_st.st_mtim.tv_nsec;
}

static void index_left(struct al_git *g, git_index *index)
{
	g->index_known = stat(git_index_path(index), &g->index_st) == 0;
}

/*
 * What the watch saw change since the last commit, into *paths: true if
 * it can be trusted for this commit — the watch ran since this process's
 * last commit, nothing overflowed, HEAD (`head_ours`) and the index are as
 * this process left them (no parallel sibling, no checkout in between).
 * Otherwise the caller scans the whole tree, and a watch is (re)started
 * first, for the next commit.
 */
static bool watch_changes(struct al_git *g, git_index *index, bool head_ours, char ***paths,
			  size_t *n)
{
	bool trusted;

	*paths = NULL;
	*n = 0;
	if (g->watch_off)
		return false;
	if (g->watch && g->watch_pid != getpid()) { /* a forked child: its parent's watch */
		al_watch_free(g->watch);
		g->watch = NULL;
	}
	if (g->watch && al_watch_take(g->watch, paths, n) == 0) {
		trusted = head_ours && index_ours(g, index);
		if (trusted)
			return true;
		al_strv_free(*paths, *n); /* the full scan sees it all */
		*paths = NULL;
		*n = 0;
		return false;
	}
	al_watch_free(g->watch);
	if (!(g->watch = al_watch_start(watch_skip, g)))
		g->watch_off = true; /* no inotify, or its limit reached: full scans */
	g->watch_pid = getpid();
	return false;
}

/* Which way a commit staged, on stderr with AILOOP_WATCH_TRACE (test builds only). */
static void trace_staging(const char *how)
{
#ifdef AILOOP_TEST_HOOKS
	if (getenv("AILOOP_WATCH_TRACE"))
		fprintf(stderr, "ailoop: staging: %s\n", how);
#else
	(void)how;
#endif
}

/*
 * stage_paths() of what the watch saw, or stage_changes(), written to the
 * index. The work tree may change under a full scan: an agent of a
 * parallel sibling renames its temporary file away, or rewrites a file,
 * between the status pass that lists a file and the read that hashes it.
 * That is no error of the run: the pass starts again from the index on
 * disk, a little later, a few times.
 */
static int stage_all(struct al_git *g, git_index *index, const char *own_dir, bool head_ours)
{
	size_t staged = 1, n;
	char **paths;
	bool reread = false;
	int rc = -1;

	if (watch_changes(g, index, head_ours, &paths, &n)) {
		rc = git_index_read(index, false);
		if (rc == 0)
			rc = stage_paths(g, index, own_dir, paths, n);
		if (rc == 0)
			rc = git_index_write(index);
		al_strv_free(paths, n);
		if (rc == 0) {
			index_left(g, index);
			al_rewritten_clear();
			trace_staging("watched");
			return 0;
		}
		reread = true; /* the scan starts from the index on disk */
	}
	trace_staging("full scan");
	for (int attempt = 0; attempt < 6 && rc < 0; attempt++) {
		if (attempt)
			usleep(10000u << attempt); /* 20 ms, doubling: 0.62 s in all */
		rc = git_index_read(index, attempt > 0 || reread);
		if (rc == 0)
			rc = stage_changes(g, index, own_dir, &staged);
		if (rc == 0 && staged)
			rc = git_index_write(index);
	}
	if (rc == 0) {
		index_left(g, index);
		al_rewritten_clear(); /* staged: their index entries hold what they hold */
	}
	return rc;
}

int al_git_commit_all(struct al_git *g, const char *message, const char *own_dir,
		      char oid[AL_OID_HEX])
{
	git_index *index = NULL;
	git_tree *tree = NULL;
	git_commit *parent = NULL;
	git_signature *author = NULL, *committer = NULL;
	git_oid tree_oid, commit_oid;
	char *ref = NULL;
	git_oid tip;
	bool born;
	int rc = 0;

	/* an agent may have moved HEAD: the run commits where it is, or nowhere */
	if ((rc = head_state(g, &ref, &tip, &born)) < 0 ||
	    (rc = check_head(g, ref, &tip, born, own_dir)) < 0)
		goto done;
	if (git_repository_index(&index, g->repo) < 0 ||
	    stage_all(g, index, own_dir, git_oid_equal(&tip, &g->last)) < 0 ||
	    git_index_write_tree(&tree_oid, index) < 0 ||
	    git_tree_lookup(&tree, g->repo, &tree_oid) < 0) {
		rc = fail("cannot stage the work tree");
		goto done;
	}
	al_crash_point("staged");
	if (git_commit_lookup(&parent, g->repo, &tip) < 0) {
		rc = fail("cannot read HEAD");
		goto done;
	}
	if (!g->author) {
		if (signature(&g->author, g->repo, "AUTHOR") < 0 ||
		    signature(&g->committer, g->repo, "COMMITTER") < 0) {
			rc = fail("cannot make the commit's signature");
			goto done;
		}
	}
	/* the time of each commit is its own */
	if (git_signature_new(&author, g->author->name, g->author->email, time(NULL), 0) < 0 ||
	    git_signature_new(&committer, g->committer->name, g->committer->email, time(NULL),
			      0) < 0 ||
	    git_commit_create(&commit_oid, g->repo, NULL, author, committer, NULL, message,
			      tree, 1, (const git_commit **)&parent) < 0) {
		rc = fail("cannot commit");
		goto done;
	}
	/* the objects and the index are on disk before the ref that names them */
	al_durable_written();
	if ((rc = al_durable_point()) < 0 || (rc = move_head(g, ref, &commit_oid, &tip, message)) < 0)
		goto done;
	al_durable_written();
	if ((rc = al_durable_point()) < 0)
		goto done;
	if (oid)
		git_oid_tostr(oid, AL_OID_HEX, &commit_oid);
	g->last = commit_oid;
	al_crash_point("committed"); /* before any state records the commit */
done:
	free(ref);
	git_signature_free(author);
	git_signature_free(committer);
	git_commit_free(parent);
	git_tree_free(tree);
	git_index_free(index);
	return rc;
}

int al_git_message_time(struct al_git *g, const char *rev, char **message, int64_t *time)
{
	git_object *obj = NULL;
	git_commit *commit = NULL;
	int rc = 0;

	*message = NULL;
	if (git_revparse_single(&obj, g->repo, rev) < 0)
		return al_err(AL_ENOTFOUND, "no revision '%s'", rev);
	if (git_object_peel((git_object **)&commit, obj, GIT_OBJECT_COMMIT) < 0) {
		rc = fail("not a commit");
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
		return fail("cannot read a commit");
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

int al_git_code_id(struct al_git *g, char hex[65])
{
	struct al_strbuf sb = AL_STRBUF_INIT;
	git_object *obj = NULL;
	git_tree *tree = NULL, *own = NULL;
	const git_tree_entry *e;
	int rc = 0;

	if (git_revparse_single(&obj, g->repo, "HEAD") < 0 ||
	    git_object_peel((git_object **)&tree, obj, GIT_OBJECT_TREE) < 0) {
		rc = al_err(AL_ENOTFOUND, "no commit at HEAD");
		goto done;
	}
	list_entries(&sb, tree, "", ".ai-loop");
	e = git_tree_entry_byname(tree, ".ai-loop");
	if (e && git_tree_entry_type(e) == GIT_OBJECT_TREE &&
	    git_tree_lookup(&own, g->repo, git_tree_entry_id(e)) == 0)
		list_entries(&sb, own, ".ai-loop/", "runs");
	al_sha256_hex(sb.buf ? sb.buf : "", sb.len, hex);
done:
	al_strbuf_release(&sb);
	git_tree_free(own);
	git_tree_free(tree);
	git_object_free(obj);
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
		if (paths[i] && al_file_exists(paths[i]) && !al_proc_file_in_use(paths[i]) &&
		    unlink(paths[i]) == 0)
			removed++;
		free(paths[i]);
	}
	return removed;
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
		return fail("cannot list the branches");
	while ((err = git_branch_next(&ref, &type, it)) == 0) {
		const char *name = git_reference_shorthand(ref);

		if (al_starts_with(name, prefix))
			push_name(names, n, &alloc, name);
		git_reference_free(ref);
	}
	git_branch_iterator_free(it);
	return err == GIT_ITEROVER ? 0 : fail("cannot list the branches");
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
		rc = fail("cannot compare a commit with its parent");
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
