#ifndef AILOOP_GIT_H
#define AILOOP_GIT_H

#include "ailoop/base/strbuf.h"

#include <stdbool.h>
#include <stdint.h>

/*
 * The run's history, through libgit2 (the only module that sees it). Every
 * failure's message carries libgit2's own reason (al_errmsg()).
 */
#define AL_OID_HEX 41 /* 40 hex digits and a NUL */

struct al_git;
struct git_repository;
struct git_oid;
struct git_signature;
struct git_tree;
struct git_commit;

/*
 * Makes libgit2 run the repository's filter drivers (filter.<driver>.clean
 * and .smudge, Git LFS's among them) as git does (git_filter.c). Called
 * once libgit2 is initialised; again does nothing.
 */
void al_git_filters_register(void);
/*
 * Whether an interrupt of ailoop stopped a filter driver (one that had not
 * finished AL_PROC_GRACE_MS after it, or at a second one): the git
 * operation it was part of failed for that, and al_git_fail says AL_EINTR.
 */
bool al_git_filters_stopped(void);

/* libgit2's version as loaded at run time, for `ailoop --version`. */
void al_git_lib_version(int *major, int *minor, int *rev);

/* Opens the repository whose work tree is the current directory. */
int al_git_open(struct al_git **out);
void al_git_free(struct al_git *g);
/*
 * For a process that only shows what it reads (log, report): objects are
 * not hashed again as they are read, as git log does not hash them.
 */
void al_git_show_only(void);
/* The work tree's own git directory (".git/", or .git/worktrees/NAME/). */
const char *al_git_dir(struct al_git *g);

/*
 * The checked-out branch ("main"; NULL with HEAD detached, caller frees)
 * and commit. Returns AL_ENOTFOUND if the repository has no commit yet.
 */
int al_git_head(struct al_git *g, char **branch, char oid[AL_OID_HEX]);

/*
 * Whether the work tree differs from HEAD (untracked files count; files
 * under .ai-loop/runs/, ailoop's own, do not). Returns 1 dirty (with *path the first change,
 * caller frees), 0 clean, or an error.
 */
int al_git_dirty(struct al_git *g, char **path);

/*
 * Adds to the repository's info/exclude what of a run is never committed
 * (AL_RUNS_UNRECORDED below .ai-loop/runs), those of its lines missing:
 * the runs' .gitignore is on the runs' branches only, and once another
 * branch is checked out a run's event log, logs and locks stay in the work
 * tree, where a 'git add -A' would commit them. info/exclude holds for
 * every branch and is never committed.
 */
int al_git_ignore_runs(struct al_git *g);

bool al_git_branch_exists(struct al_git *g, const char *name);
/*
 * `name`, or name-2, name-3… : the first that no branch has and none is
 * below (name/…). Caller frees. NULL if a branch is named as one of its
 * directories, which git cannot have beside it: *blocker is that name
 * (caller frees).
 */
char *al_git_branch_free_name(struct al_git *g, const char *name, char **blocker);
/* Creates branch `name` at HEAD and checks it out, keeping the work tree. */
int al_git_branch_create(struct al_git *g, const char *name);
/*
 * Checks out an existing branch; refuses to overwrite local changes, and
 * then sets *conflict (if given; caller frees) to the first file in the way.
 */
int al_git_checkout(struct al_git *g, const char *branch, char **conflict);

/*
 * Takes where HEAD is now, a branch or a detached commit, as where the run
 * commits: from then on al_git_commit_all() commits there only, on top of
 * its own last commit or of commits an agent made on top of it.
 */
int al_git_follow(struct al_git *g);

/*
 * AL_EMOVED if HEAD has left what al_git_follow() took (an agent checked
 * out another branch or commit) or no longer contains ailoop's last commit
 * (an agent reset the branch): the message names both and says how to put
 * HEAD back (restoring `own_dir`, the run's files, may be NULL). 0 if HEAD
 * is where it should be, or nothing is followed.
 */
int al_git_check_head(struct al_git *g, const char *own_dir);

/*
 * Commits the whole work tree (respecting .gitignore, leaving out lock
 * files under .ai-loop/runs/) on top of HEAD, whatever agents committed
 * meanwhile (AL_EMOVED, committing nothing, if al_git_check_head() says
 * HEAD moved). Repositories inside the work tree are recorded as gitlinks
 * to the commit checked out in them, as `git add -A` does. `own_dir` (may be NULL) is a directory of files ailoop itself
 * wrote, under .ai-loop/runs/, staged directly for speed. Author and committer come from GIT_AUTHOR_NAME/EMAIL and
 * GIT_COMMITTER_NAME/EMAIL, then the git config, then "ailoop <ailoop@localhost>".
 */
int al_git_commit_all(struct al_git *g, const char *message, const char *own_dir,
		      char oid[AL_OID_HEX]);
/*
 * In a forked child of a parallel node whose children share the work tree
 * (`node_dir`: the parallel node's directory, relative to the work tree's
 * root; `own`: the child's id): from now on this process's stagings, and
 * its watch, leave out the other children's node directories below
 * `node_dir`, which each of them commits itself and the parallel node's
 * own commit scans, so that a child's commit costs the same whatever the
 * number of its siblings. Processes forked from this one inherit it.
 */
void al_git_leave_siblings(const char *node_dir, const char *own);
/*
 * From now on each commit scans the whole work tree instead of trusting a
 * watch of it: for agents that may write to it from other hosts, whose
 * changes inotify does not report here.
 */
void al_git_watch_off(struct al_git *g);
/*
 * The run's last commit is made: the watch is let go now, so that the
 * kernel frees it while the run ends (a commit after this scans).
 */
void al_git_watch_done(struct al_git *g);
/*
 * The waits for agents stage ahead what the watch has seen change (the
 * idle work of al_proc_set_idle, git_prestage.c): a commit then stages
 * those files from what was kept. NULL: no more.
 */
void al_git_stage_ahead(struct al_git *g);

/*
 * git_commit_create() without a ref to update, failing (a libgit2 error
 * set) unless the commit object is in the store: libgit2 1.5 reports
 * success when it could not write it (a full disk), and a branch must
 * never name a missing commit.
 */
int al_git_create_commit(struct git_oid *id, struct git_repository *repo,
			 const struct git_signature *author, const struct git_signature *committer,
			 const char *message, const struct git_tree *tree, size_t nparents,
			 const struct git_commit **parents);

/*
 * The tree the work tree would be committed as now (a transaction's
 * start, which may hold what no commit holds yet: a user's uncommitted
 * change, a fix made while the run was stopped): staged, and written as a
 * tree object, but not committed.
 */
int al_git_snapshot(struct al_git *g, const char *own_dir, char tree_hex[AL_OID_HEX]);
/*
 * Puts the work tree and the index back to tree `tree_hex`, or to the
 * tree of commit `commit_hex` if it is NULL (a transaction's rollback):
 * changed files get their content and mode back, deleted ones return,
 * files added since (tracked or not) are removed. The .gitignore files
 * come back first, and what their rules ignore is left as it is, a file
 * the tree lacks taken out of the index only; so is everything below
 * `keep` (may be NULL).
 */
int al_git_rollback(struct al_git *g, const char *commit_hex, const char *tree_hex,
		    const char *keep);
/*
 * Puts the files below `dir` back as HEAD's commit has them (those it
 * lacks removed, ignored ones kept), its abbreviated id in `hex`.
 * AL_ENOTFOUND, with nothing changed, if that commit has no `dir`.
 */
int al_git_restore_from_head(struct al_git *g, const char *dir, char hex[8]);

/*
 * A restart of the machine (a power loss) while a run was between two
 * commits may leave its files torn or older than what ailoop wrote last,
 * and without a durable point before each agent starts (fsutil.h) that
 * is allowed: the run's first commit marks that HEAD holds its state
 * (<git-dir>/ailoop-restorable: this boot, the run's directory), and
 * al_git_recover_restart(), as run and resume take the work tree's lock,
 * finds the mark of an earlier boot and restores the run's files from
 * HEAD, as a kill just after that commit would have left them; first,
 * from the intents later commits wrote in the mark, it moves the branch
 * again to a commit whose move the restart lost (al_git_intend), and it
 * removes the loose objects written since the last durable point (since
 * HEAD's commit, or a pending mark's time) that no longer read whole. The
 * mark of this boot (a killed ailoop's) is only taken away, once what the
 * killed process wrote is durable. al_git_unmark_restorable(): the
 * state written from now on is not in the next commit (the run pauses
 * or ends, or a parallel node's children write it in their worktrees),
 * so it is made durable, and the mark taken away, first.
 */
int al_git_recover_restart(struct al_git *g);
int al_git_unmark_restorable(struct al_git *g);

/*
 * Before the run's first commit in this process (or a parallel node's
 * children in worktrees and its merges) writes an object: marks, durable
 * before any object is written, that a restart from now on may tear loose
 * objects, which a commit would otherwise name as they are when it writes
 * the same ones again (libgit2 keeps the file of an object that is there);
 * al_git_recover_restart() removes those that no longer read whole. A mark there already (a
 * sibling's, sharing the work tree) says as much.
 */
int al_git_mark_pending(struct al_git *g);

/*
 * An identity of the code at HEAD: the hash of its tree's entries but
 * ailoop's runs (.ai-loop/runs/), which every commit changes. Equal ids,
 * the same files: what a cached condition result was computed on.
 */
int al_git_code_id(struct al_git *g, char hex[65]);

/* The full message of a revision ("HEAD", a branch, an id). Caller frees. */
int al_git_message(struct al_git *g, const char *rev, char **message);
/* The same, and the commit's time (seconds since the epoch). */
int al_git_message_time(struct al_git *g, const char *rev, char **message, int64_t *time);

/*
 * Calls `fn` for each commit reachable from `rev`, newest first, until it
 * returns non-zero (which is then returned). `hide` (may be NULL) and its
 * ancestors are left out. In a shallow clone (and without `hide`), it
 * follows first parents as far as the clone reaches.
 */
typedef int (*al_git_walk_fn)(const char *oid, const char *message, int64_t time, void *data);
int al_git_walk(struct al_git *g, const char *rev, const char *hide, al_git_walk_fn fn,
		void *data);
/* Whether the repository is a shallow clone (its oldest commits lack their parents). */
bool al_git_is_shallow(struct al_git *g);

/*
 * Removes lock files a killed ailoop left in the repository (the index's,
 * HEAD's, `branch`'s), which would stop every later commit: only those no
 * process holds open. Returns how many were removed.
 */
int al_git_clear_stale_locks(struct al_git *g, const char *branch);

/* Local branches whose names start with `prefix`. Free with al_strv_free. */
int al_git_branches(struct al_git *g, const char *prefix, char ***names, size_t *n);
/* The names in directory `dir` of the tree of `rev` (none if it is absent). */
int al_git_ls(struct al_git *g, const char *rev, const char *dir, char ***names, size_t *n);

/*
 * The last commit ailoop made for run `run_id` on the branch it follows
 * (al_git_follow), as the branch's reflog remembers it, if the branch
 * moved on from it since: the newest entry of a commit of ailoop's
 * ("commit: ai-loop[…") that carries the run's trailer, with a later
 * entry that moved the branch from it (by an agent's commit on top, or
 * its reset). AL_ENOTFOUND if there is none (or no reflog), or if the
 * branch never got to it (its move failed).
 */
int al_git_run_last_commit(struct al_git *g, const char *run_id, char hex[AL_OID_HEX]);
/*
 * Whether HEAD holds commit `hex` (is it or descends from it): 0 if it
 * does, else AL_EMOVED with the way to put the branch back to it (as a
 * commit finds an agent's reset), the run's files in `own_dir`.
 */
int al_git_check_holds(struct al_git *g, const char *hex, const char *own_dir);

/*
 * The object reference `ref` ("refs/ailoop/episodes") names, without
 * peeling it. AL_ENOTFOUND if there is no such reference; AL_EINVALID
 * (libgit2's reason in the message) if it cannot be read.
 */
int al_git_ref_id(struct al_git *g, const char *ref, char hex[AL_OID_HEX]);

/* The content of `path` in the tree of `rev`. AL_ENOTFOUND if absent. */
int al_git_read(struct al_git *g, const char *rev, const char *path, struct al_strbuf *out);
/*
 * As al_git_read(), for what is only shown (a prompt's past episodes),
 * never built on: the blob is not hashed again as it is read, and its
 * bytes are lent to `fn`, valid during the call only.
 */
int al_git_read_shown(struct al_git *g, const char *rev, const char *path,
		      void (*fn)(const char *buf, size_t len, void *data), void *data);

/* One file a commit changed: lines added and deleted (0 and 0 if binary). */
struct al_git_file_stat {
	char *path;
	int added, deleted;
	bool binary;
};

/*
 * The files commit `rev` changed against its first parent (every file of
 * a root commit), leaving out those under directory `skip` (NULL: none).
 * Free with al_git_diffstat_free().
 */
int al_git_diffstat(struct al_git *g, const char *rev, const char *skip,
		    struct al_git_file_stat **out, size_t *n);
void al_git_diffstat_free(struct al_git_file_stat *files, size_t n);

/* What al_git_land() lands, where, and how. */
struct al_git_land_opts {
	const char *onto;     /* the base branch */
	const char *from;     /* the run's branch */
	const char *keep_out; /* the directory none of whose changes land (.ai-loop/runs) */
	const char *message;
	const char *run_id;   /* for the reflog and messages */
	bool merge;           /* a merge commit of both tips, else one commit on `onto` */
	bool dry_run;         /* only whether it would land: 0 yes, 1 landed already, a conflict */
};

/*
 * Puts the change of branch `from` since it left `onto` on `onto`: the
 * three-way merge of the two tips' trees, `from`'s with `keep_out` as their
 * merge base has it, committed with `onto`'s tip as its parent (and
 * `from`'s, with `merge`). Where `onto` is checked out here, the work tree
 * and index follow (they must be clean: the caller checks), as git's would.
 * Returns 0 with `oid` the new commit; 1, writing nothing, if `onto` has
 * the change already; AL_ECONFLICT, writing nothing, with *conflict the
 * first path in conflict (caller frees); AL_ENOTFOUND if a branch is
 * missing; AL_EUSAGE if `onto` is checked out in another worktree.
 */
int al_git_land(struct al_git *g, const struct al_git_land_opts *o, char oid[AL_OID_HEX],
		char **conflict);

/* Deletes local branch `name` (none: nothing to do); git refuses one checked out. */
int al_git_branch_delete(struct al_git *g, const char *name);

#endif
