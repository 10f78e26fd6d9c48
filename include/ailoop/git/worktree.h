#ifndef AILOOP_WORKTREE_H
#define AILOOP_WORKTREE_H

#include <stdbool.h>
#include <stddef.h>

/*
 * A parallel node's children in worktrees (isolation: worktree, SPEC
 * §3.1): each child works in a git worktree of its own, on a branch made
 * from the node's start commit, and the children that succeeded are
 * merged back, one merge commit each. All of it works on the repository
 * whose work tree is the current directory.
 */

/* <run_dir>/worktrees: where a run's worktrees live (ignored by git). */
#define AL_WORKTREES_DIR "worktrees"

/*
 * Makes sure worktree `name` exists at `path` (absolute), on branch
 * `branch`, which is made at commit `base_hex` if it does not exist. An
 * existing worktree is kept as it is (a resumed child continues in it);
 * one left half-made by a kill is made again. A branch that does not hold
 * `base_hex` is from an earlier run of the node: its worktree is removed
 * and the branch made anew, the old one deleted if `base_hex` holds it,
 * else kept as `<branch>.<short id>`.
 */
int al_worktree_ensure(const char *path, const char *name, const char *branch,
		       const char *base_hex);

/* Removes worktree `name` (its directory and git's record of it); keeps its branch. */
int al_worktree_remove(const char *name);

/* Removes every worktree under directory `dir` (a run's worktrees/), and the directory. */
int al_worktree_remove_all(const char *dir);

/*
 * Merges branch `branch` into the checked-out branch: a three-way merge,
 * a commit with both parents and `message`, and the work tree and index
 * brought to it (ailoop's run files aside). Returns 1 if made; 0 if
 * nothing was to be made (the branch is in HEAD's history already, as on
 * a resume after the merge); 2 on a conflict, with *conflicts the
 * conflicting files (", "-separated, caller frees), everything left as it
 * was; an error < 0.
 */
int al_worktree_merge(const char *branch, const char *message, char **conflicts);

/*
 * on_conflict {agent: PATH}: makes worktree `name` at `path` (absolute)
 * anew, at HEAD's commit (detached), with branch `branch` merged into it
 * as git merges: the conflicting files hold conflict markers, for a
 * resolver agent to edit. Whatever an earlier one left is removed first.
 */
int al_worktree_conflicted(const char *path, const char *name, const char *branch);

/*
 * As al_worktree_merge, with each conflicting file taken from directory
 * `dir` (the resolver's worktree; a file gone there is deleted by the
 * merge, a symbolic link is merged as that link). Returns 2 if a file
 * there still holds a conflict marker line ("<<<<<<< ", "=======",
 * ">>>>>>> "), or is neither a file nor a link, or lies beyond a link or
 * a file where its directory was, with *left saying so ("conflict markers
 * in a.txt", caller frees), everything left as it was.
 */
int al_worktree_merge_resolved(const char *branch, const char *message, const char *dir,
			       char **left);

/*
 * The user's changes in the main work tree (the current directory): what
 * differs there from HEAD's tree, tracked changes and untracked files that
 * are not ignored, leaving out the paths under `skip` (the runs' files).
 * A child's worktree does not see the main work tree; these are what a
 * child started or resumed there must see: with --allow-dirty, the changes
 * the run started with; on a resume, what the user changed while the run
 * was stopped (a fix for a failed agent). Free with al_worktree_changes_free.
 */
struct al_wt_changes;
int al_worktree_changes(struct al_wt_changes **out, const char *skip);
size_t al_worktree_changes_count(const struct al_wt_changes *ch);
void al_worktree_changes_free(struct al_wt_changes *ch);

/*
 * Brings `ch` into the worktree at `path` (of child `child`, for the
 * message): a file that already holds the change is left alone (brought
 * before, or the child made the same change), one that still holds HEAD's
 * content gets the change. A file the child changed otherwise is a
 * conflict: AL_ECONFLICT naming the file and the worktree, and nothing is
 * written. Returns how many files it wrote (or removed), or an error < 0.
 */
int al_worktree_carry(const struct al_wt_changes *ch, const char *path, const char *child);

#endif
