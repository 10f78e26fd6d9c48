#ifndef AILOOP_FSUTIL_H
#define AILOOP_FSUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>

/*
 * Files that must survive a crash at any instant. A write goes to X.lock
 * (created O_EXCL) and is renamed over X, so X is always either the old or
 * the new content. A leftover X.lock can only come from a writer that died
 * (the run lock admits one writer), so it is removed. It becomes durable
 * (survives a power loss) at the next al_durable_point().
 */
int al_write_atomic(const char *path, const void *data, size_t len);
/*
 * An artifact a step writes before its phase is recorded (an agent's
 * prompt, log or output, a sensor's or controller's output): written over
 * the file in place, which costs no new inode, no rename and no unlink
 * (on ext4 making and deleting inodes is most of what such a write
 * costs). A kill in the middle leaves the file torn, but then the phase
 * that would read it is not recorded, and resume runs the step that writes
 * it again. Anything that is not a plain file of one link (a symbolic
 * link, a hard link an agent made) is replaced as al_write_atomic() does.
 * Its directory is made if it has gone (an agent removed a node's logs).
 */
int al_write_in_place(const char *path, const void *data, size_t len);
/*
 * Removes what stands where a directory goes on the way to `path`, a run's
 * file given relative to the repository's root: below the run's own
 * directory ailoop keeps only real directories, so a symbolic link or a
 * file there is an agent's (through a link, the run's files would be
 * written wherever it points). Whether anything went.
 */
bool al_clear_way(const char *path);
/*
 * A state file of a run (run-state.md, a node's orchestrator-output.md,
 * result-output.md, task.md), as al_write_atomic() writes it, but the new
 * text goes over the scratch file X.lock, which then trades names with X
 * (renameat2 RENAME_EXCHANGE): X is at every instant its old or its new
 * text, and no inode is made or freed (on ext4, making inodes while many
 * were freed recently is most of what a small write costs). X.lock stays,
 * holding the old text; it is left out of commits as every *.lock is.
 * Its directory is made if it has gone, as al_write_in_place() makes it.
 */
int al_write_state(const char *path, const void *data, size_t len);
/*
 * Whether the file of `st` was written in place since the last
 * al_rewritten_clear(): a rewrite of the same size in the same clock tick
 * keeps size, mtime and inode, so staging must not trust the stat data of
 * such a file. A commit clears the set once it has staged them.
 */
bool al_rewritten(const struct stat *st);
/* A file staged: its stat data in the index is what it has now. */
void al_rewritten_forget(const struct stat *st);
void al_rewritten_clear(void);
/*
 * A tracked file of a run that commits record as the work tree has it
 * (gone, a link, a directory), until ailoop writes it again: one ailoop
 * itself removed (a node's state a feedback edge makes run again), or an
 * agent's output as its call left it. Any other file of a run's own that
 * goes, or is replaced, is an agent's doing, and staging puts it back
 * (git_own.c).
 */
void al_as_is_note(const char *path);
bool al_as_is_noted(const char *path);
/*
 * The durable points: what ailoop wrote since the last one (its files, the
 * objects and index of a commit) reaches the disk in one syncfs(2) of the
 * repository's filesystem, instead of an fsync of each file and directory.
 * They come on both sides of a commit's ref update, before ailoop exits,
 * and before each agent starts unless the points are relaxed.
 * AILOOP_FSYNC=0 skips them (tests).
 */
void al_durable_written(void);
int al_durable_point(void);
/*
 * Relaxed: what ailoop writes between two commits is the run's state the
 * next commit carries, and after a restart of the machine the run's files
 * are restored from the last commit (al_git_recover_restart), so a power
 * loss may lose or tear them: an agent's start needs no durable point.
 */
void al_durable_relax(bool on);
bool al_durable_relaxed(void);
/*
 * A file to close once the next agents have started (al_close_deferred,
 * proc.c): closing the last descriptor of an unlinked file frees it, work
 * better done while an agent runs than before. At most a few are kept.
 * On a filesystem mounted with `discard`, freeing a file that has blocks
 * waits for the device to discard them (ext4: 60-70 us a file here).
 */
void al_close_later(int fd);
/*
 * The file at `path`, about to be replaced by a rename over it (git's
 * lock-file protocol), held open so that the rename only unlinks it and
 * its freeing waits for the next agent's start; nothing if it is not there.
 */
void al_free_later(const char *path);
void al_close_deferred(void);
/* This boot of the machine (Linux's boot_id), NULL where it cannot be told. */
const char *al_boot_id(void);
/*
 * Appends one record with a single write(2) to `path`, opened (O_APPEND)
 * into *fd on first use and kept open, so that a log written at every
 * step costs one write, not an open each time. *fd starts at -1; the
 * caller closes it.
 */
int al_append_line(int *fd, const char *path, const char *line, size_t len);
/* mkdir -p; existing directories are fine. */
int al_mkdirs(const char *path);
bool al_file_exists(const char *path);
bool al_dir_exists(const char *path);
/* Removes a file; a missing one is not an error. */
int al_remove(const char *path);
/*
 * Whether `path` (relative, or absolute) stays inside the current
 * directory (the repository root): as written, with `.` and `..` taken
 * as text, and, if it exists, once every symbolic link is followed.
 * AL_PATH_LINK_OUTSIDE sets *real (caller frees) to where it leads.
 */
enum al_path_place { AL_PATH_INSIDE, AL_PATH_OUTSIDE, AL_PATH_LINK_OUTSIDE };
enum al_path_place al_path_place(const char *path, char **real);
/*
 * Fails (AL_ENOTFOUND: what ailoop needs is not there) if `path` is a symbolic
 * link: for the directories ailoop writes a run's state in, which must be
 * in the repository, where git records them, and never point elsewhere.
 */
int al_refuse_symlink(const char *path);
/*
 * Opens (or makes) a file of a run's state, `what` naming it in messages:
 * the descriptor, or AL_ENOTFOUND for a symbolic link or anything but a
 * plain file there (a FIFO), which ailoop never writes through.
 */
int al_open_run_file(const char *path, int flags, const char *what);
/* Removes a file, or a directory with everything in it (rm -rf). */
int al_remove_tree(const char *path);
/*
 * Leaves `path` absent or an empty regular file: a regular file of one
 * link is cut to nothing in place (an empty one is left alone), anything
 * else removed as by al_remove_tree(). Never writes through a symbolic
 * link, and never empties a file that has other names.
 */
int al_empty_path(const char *path);
/* Whether fsync is on (AILOOP_FSYNC unset or not "0"). */
bool al_fsync_enabled(void);
/*
 * Whether a filesystem of this type (statfs f_type) may be written by
 * other hosts: network and cluster filesystems, and FUSE (sshfs, …). Its
 * writers elsewhere are not seen by this host's inotify.
 */
bool al_fs_type_shared(unsigned long type);

/* Writes all of `len` bytes, going on after EINTR and short writes; -1 (errno) on error. */
int al_write_all(int fd, const char *p, size_t len);

/*
 * The words of the C library's messages for a full disk ("No space left
 * on device", "Disk quota exceeded") if `text` holds them, as a failing
 * program prints them; else NULL. Such a failure is the machine's.
 */
const char *al_says_disk_full(const char *text, size_t len);

#endif
