#ifndef AILOOP_GIT_REPO_H
#define AILOOP_GIT_REPO_H

/*
 * What git.c (the repository, HEAD, branches, commits), git_stage.c (what
 * a commit stages) and git_history.c (what is read back) share: the
 * handle's insides; not part of the git module's contract.
 */
#include "ailoop/git/git.h"

#include <git2.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <sys/types.h>

/* The cap of libgit2's object cache for a long-running process (git.c). */
#define AL_GIT_CACHE_MAX ((size_t)16 << 20)

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
	git_oid index_sum;      /* and its checksum */
	bool index_known;
	size_t gitlinks;        /* the nested repositories in the index, when known */
	bool gitlinks_known;
	/*
	 * The paths the last staging took from the watch, sorted, when they
	 * hold every change it made to the index (al_git_write_tree); else NULL.
	 */
	char **staged;
	size_t nstaged;
	/*
	 * The commit whose tree the index holds, when this process knows it:
	 * its last commit, or HEAD as the clean-tree check found it. A tree
	 * is made from the staged paths only on that commit (a staging whose
	 * commit then failed leaves more in the index than the paths say).
	 */
	git_oid index_commit;
	bool index_commit_known;
	/*
	 * The files outside the work tree that say what a commit records,
	 * which the watch does not see, as they were at the last staging: the
	 * ignore files (<common-dir>/info/exclude, and the global one:
	 * core.excludesFile, or git/ignore in the XDG configuration directory)
	 * and git's configuration files (the repository's, its worktree's, the
	 * global and XDG ones, the system's). Their paths are worked out once,
	 * the global ignore file's again when the configuration changes
	 * (NULL: none).
	 */
	struct outside_file {
		char *path;
		struct stat st;
		bool there;
	} outside[7];
	bool outside_known;
	/*
	 * The mark that the run's state can be restored from HEAD after a
	 * restart is on disk (git_restart.c), for the run in this directory.
	 */
	bool restorable;
	bool pending; /* the mark before the run's first commit here (al_git_mark_pending) */
	size_t mark_len;   /* the mark's own lines, before its intents' slots */
	unsigned long intents; /* the commits intended under this mark */
	/* staging ahead while agents run (git_prestage.c) */
	struct al_prestaged *pre; /* what was kept, sorted once settled */
	size_t npre, pre_alloc;
	char **todo; /* the paths the last peek returned, to hash */
	size_t ntodo, todo_next;
	char *todo_checked; /* al_git_beyond_link()'s last directory */
	/* al_git_code_id() of a commit, kept: asked at each step */
	git_oid code_commit;
	char code_hex[65];
	bool code_known;
	/* the trees and commit of the last commit, read back from memory (git_recent.c) */
	struct al_git_recent *recent;
};

/*
 * The trees and commit objects a commit writes, kept to be read back
 * (git_recent.c): al_git_recent_add() puts a store above `repo`'s others
 * (NULL: it could not, and nothing is kept; the repository frees it);
 * what the loose objects wrote between al_git_recent_begin() and
 * al_git_recent_end() is served from memory until the end of the commit
 * after. Both take NULL.
 */
struct al_git_recent *al_git_recent_add(git_repository *repo);
/*
 * Writes object `id` of `data`, which the repository is known to lack,
 * through the loose objects without looking it up again (libgit2 looks
 * every object it writes up, twice when it is not found): 0 or libgit2's
 * error.
 */
int al_git_recent_write_new(struct al_git_recent *r, const git_oid *id, const void *data,
			    size_t len, git_object_t type);
void al_git_recent_begin(struct al_git_recent *r);
void al_git_recent_end(struct al_git_recent *r);

/*
 * Who commits (g->author, g->committer): from the environment, then the
 * config, then ailoop's own; worked out once.
 */
int al_git_identity(struct al_git *g);

/* An error from libgit2's last one, `what` first: AL_ERROR. */
int al_git_fail(const char *what);

/* Whether `path` is `dir` or below it. */
bool al_git_below(const char *path, const char *dir);

/* Whether a path of the run's files never goes into history (git.c). */
bool al_git_unrecorded(const char *path);

/*
 * Whether a sparse checkout leaves `path` out of the work tree (its index
 * entry is skip-worktree, git.c). libgit2's status does not know the flag
 * and lists such a file as deleted; git leaves it alone, and so does ailoop.
 */
bool al_git_sparse(git_index *index, const char *path);

/*
 * A file of the run's own, at `path`, staged as the index entry of what
 * it holds now (ailoop's files are staged directly, git_blob.c).
 */
int al_git_add_own_file(struct al_git *g, git_index *index, const char *path);
/* Any other file of the work tree, whose stat data is `st` (git_blob.c). */
int al_git_add_file(struct al_git *g, git_index *index, const char *path, const struct stat *st);
/*
 * Whether a directory on the way to `path` is a symbolic link, or no
 * directory (git_stage.c); `*checked` keeps the last one found free of
 * them, for the next path (the caller frees it).
 */
bool al_git_beyond_link(const char *path, char **checked);
/* The blob of `len` bytes at `buf`, written only if the store lacks it (git_blob.c). */
int al_git_write_blob(struct al_git *g, git_oid *id, const char *buf, size_t len);

/* The filter that runs the repository's filter drivers' commands (git_filter.c). */
#define AL_GIT_DRIVER_FILTER "ailoop-driver"

/*
 * Staging ahead (git_prestage.c). al_git_prestage_step() is the idle work
 * of the waits for agents (al_proc_set_idle): one file's blob at a time.
 * A commit's staging takes the watch's paths with those reported since
 * the last peek (`late`), settles what was kept with them, asks
 * al_git_prestaged() for the blob of a file whose stat data is `st`, and
 * drops the rest once staged.
 */
bool al_git_prestage_step(struct al_git *g, bool fresh);
void al_git_prestage_settle(struct al_git *g, char **late, size_t nlate);
bool al_git_prestaged(struct al_git *g, const char *path, const struct stat *st, git_oid *id);
void al_git_prestage_drop(struct al_git *g);
void al_git_prestage_free(struct al_git *g);
/*
 * The run's own files an agent removed or replaced (git_own.c), in the
 * run's directory `own_dir`: al_git_own_gone() stages `path` (a file, or a
 * directory and all below it) as gone, but for the run's own files, put
 * back as the index has them; al_git_own_tampered() tells a link, or a
 * directory where the index has a file, that al_git_own_replaced() clears
 * away first; al_git_own_from_head() puts back, before a full scan, what
 * HEAD has and the work tree lost; al_git_runs_as_head() keeps a worktree
 * child's index of the runs as HEAD has it.
 */
int al_git_own_gone(struct al_git *g, git_index *index, const char *path, const char *own_dir);
bool al_git_own_tampered(git_index *index, const char *path, const char *own_dir);
int al_git_own_replaced(struct al_git *g, git_index *index, const char *path,
			const char *own_dir);
int al_git_own_from_head(struct al_git *g, const char *own_dir);
/*
 * A child of a shared parallel node leaves its siblings' node directories
 * to them (al_git_leave_siblings, git_siblings.c). Whether directory
 * `dir` (relative to the work tree's root) is, or is below, one of them.
 */
bool al_git_sibling_dir(const char *dir);
/* Whether this process leaves any out. */
bool al_git_siblings_left(void);
/*
 * The paths the status pass walks then (sorted, each a file or a
 * directory and all below it): everything but the siblings' directories.
 * Free with al_strv_free.
 */
int al_git_siblings_paths(git_index *index, char ***out, size_t *nout);
int al_git_runs_as_head(struct al_git *g);

/*
 * Stages the work tree into `index` (own_dir: the run's directory, its
 * files staged directly; head_ours: HEAD is where this process's last
 * commit left it) and writes the index.
 */
int al_git_stage_all(struct al_git *g, git_index *index, const char *own_dir, bool head_ours);

/*
 * The tree of the index, into *out: `parent` (the tree the index held
 * before the staging; NULL if not known) with the staged paths updated
 * when the last staging left them (g->staged, then dropped), else the
 * whole index written as a tree.
 */
int al_git_write_tree(struct al_git *g, git_index *index, const git_tree *parent, git_oid *out);
/* Says how a commit staged or made its tree (AILOOP_WATCH_TRACE, test builds). */
void al_git_trace(const char *what, const char *how);
/* Forgets the paths the last staging left. */
void al_git_staged_drop(struct al_git *g);
/* Keeps al_git_code_id() of `commit`, whose tree is `tree`. */
void al_git_code_id_of(struct al_git *g, const git_oid *commit, const git_tree *tree);

/*
 * Makes the work tree like `tree` where it differs (untracked files too,
 * not ignored ones), but for the paths below `keep`, or only below `only`
 * (either may be NULL).
 */
int al_git_restore_tree(struct al_git *g, git_tree *tree, const char *keep, const char *only);

/*
 * Marks (on disk, durable at the next point) that HEAD now holds the
 * state of the run in `own_dir`: a restart before the mark is taken away
 * (al_git_unmark_restorable) restores the run's files from HEAD.
 */
int al_git_mark_restorable(struct al_git *g, const char *own_dir);

/*
 * Under the mark, writes that `ref` is to move from `old` to commit `id`,
 * to be durable with the commit's objects (at the point before the move):
 * the move itself is then made durable by the next point, not one of its
 * own, for a restart that lost it finds the commit again from the intent
 * (al_git_recover_restart). Nonzero: no intent written (no mark, or it
 * could not be), and the move must be made durable at once.
 */
int al_git_intend(struct al_git *g, const char *ref, const git_oid *old, const git_oid *id);

/*
 * A run's first commit may trust a watch too: al_git_watch_early() starts
 * it before the status pass that finds the work tree clean (so whatever
 * changes after that pass is seen), and al_git_watch_from_clean(), once
 * the pass found nothing at all to commit, notes the index and the
 * ignore files outside the work tree as they are, which the first commit then checks as
 * any later one does. Without the second call the first commit scans.
 */
void al_git_watch_early(struct al_git *g);
void al_git_watch_from_clean(struct al_git *g, git_index *index);

/* (git.c) HEAD: its branch ("refs/heads/…", NULL if detached) and commit (*born false: none yet). */
int al_git_head_state(struct al_git *g, char **ref, git_oid *tip, bool *born);

/* (git.c) Whether HEAD (`ref`, `tip`) is where the run commits; AL_EMOVED says how not. */
int al_git_check_head_at(struct al_git *g, const char *ref, const git_oid *tip, bool born,
			 const char *own_dir);

/* (git_stage.c) */
/*
 * Whether `rel`, a directory under the runs, holds none of a run's files:
 * agents' logs (at any depth), or a run's parallel children's worktrees
 * (at its top: below, a node may be named so).
 */
bool al_git_not_run_files(const char *rel);
/* (git_stage.c) */
/*
 * Whether directory `dir` holds a repository of its own as git sees one:
 * a .git entry that opens as a repository (an empty .git directory, or a
 * .git file naming a directory that is gone, is none).
 */
bool al_git_nested_repo(const char *dir);
/* (git_stage_watch.c) */
/*
 * What the watch saw change since the last commit, into *paths: true if
 * it can be trusted for this commit — the watch ran since this process's
 * last commit, nothing overflowed, HEAD (`head_ours`) and the index are as
 * this process left them (no parallel sibling, no checkout in between; an
 * index rewritten with the same entries, *kept, counts as left), and no
 * file outside the work tree that says what is recorded (an ignore file,
 * git's configuration) changed.
 * Otherwise the caller scans the whole tree, starting a new watch first,
 * for the next commit.
 */
bool al_git_watch_changes(struct al_git *g, git_index *index, bool head_ours, char ***paths,
			  size_t *n, bool *kept);
/* (git_stage_watch.c) */
void al_git_index_left(struct al_git *g, git_index *index);
/* (git_stage_watch.c) */
/* A new watch (any old one dropped), or full scans from now on if none can start. */
void al_git_watch_start(struct al_git *g);

/* (git_commit.c) Who commits, now: GIT_<who>_NAME/EMAIL, then the config, then ailoop's own. */
int al_git_signature(git_signature **out, git_repository *repo, const char *who);
/*
 * (git_checkout.c) The path of the linked worktree that has branch `ref`
 * (a full name) checked out, or NULL. Caller frees.
 */
char *al_git_checked_out_elsewhere(git_repository *repo, const char *ref);

#endif
