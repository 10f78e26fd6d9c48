/*
 * A repository an agent made in a child's worktree (`git init` or a
 * clone, and commits there): the child's commit records a gitlink to it,
 * as `git add -A` does, but its objects are in that directory alone, which
 * goes with the worktree. With isolation: shared it would be in the main
 * work tree, where git found it; so once the child is merged, it moves
 * there, into the gitlink's place (the empty directory the merge's
 * checkout made). Where that place holds anything else (a repository of
 * the user's), or the child is not merged, the worktree is kept instead,
 * and the run says so: no commit of an agent's is lost with it.
 */
#include "worktree_int.h"
#include "ailoop/base/fsutil.h"
#include "ailoop/base/util.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Whether `path` of the main work tree is an empty directory in the repository (no link). */
static bool empty_place(const char *path)
{
	struct stat sb;
	struct dirent *de;
	DIR *d = NULL;
	char *real = NULL;
	bool empty = lstat(path, &sb) == 0 && S_ISDIR(sb.st_mode) &&
		     al_path_place(path, &real) == AL_PATH_INSIDE && (d = opendir(path));

	while (empty && (de = readdir(d)))
		empty = !strcmp(de->d_name, ".") || !strcmp(de->d_name, "..");
	if (d)
		closedir(d);
	free(real);
	return empty;
}

/* Whether HEAD's tree of the main repository records a gitlink at `path`. */
static bool linked(git_tree *head, const char *path)
{
	git_tree_entry *e = NULL;
	bool yes = head && git_tree_entry_bypath(&e, head, path) == 0 &&
		   git_tree_entry_filemode(e) == GIT_FILEMODE_COMMIT;

	git_tree_entry_free(e);
	return yes;
}

void al_worktree_move_repos(git_repository *repo, git_worktree *wt, bool *kept)
{
	const char *dir = git_worktree_path(wt);
	git_repository *sub = NULL;
	git_index *index = NULL;
	git_object *head = NULL;
	git_tree *tree = NULL;

	*kept = false;
	/* the gitlinks its commits recorded are in its index (a half-made one has none) */
	if (git_repository_open_from_worktree(&sub, wt) < 0 ||
	    git_repository_index(&index, sub) < 0) {
		git_error_clear();
		git_repository_free(sub);
		return;
	}
	if (git_revparse_single(&head, repo, "HEAD^{tree}") == 0)
		tree = (git_tree *)head;
	git_error_clear();
	for (size_t i = 0; i < git_index_entrycount(index); i++) {
		const git_index_entry *e = git_index_get_byindex(index, i);
		char *from, *dotgit;
		struct stat sb;

		if (e->mode != GIT_FILEMODE_COMMIT)
			continue;
		from = al_xprintf("%s/%s", dir, e->path);
		dotgit = al_xprintf("%s/.git", from);
		if (lstat(dotgit, &sb) == 0) { /* a repository there, not just the gitlink's directory */
			const char *why = !linked(tree, e->path) ? "the run's branch does not record it"
					  : !empty_place(e->path) ? "the main work tree holds something else there"
					  : rename(from, e->path) < 0 ? strerror(errno)
					  : NULL;

			if (why) {
				fprintf(stderr, "ailoop: warning: worktree '%s' is kept: '%s' there is a "
					"repository an agent made, which cannot move to the main work "
					"tree (%s)\n", dir, e->path, why);
				*kept = true;
			}
		}
		free(dotgit);
		free(from);
	}
	git_object_free(head);
	git_index_free(index);
	git_repository_free(sub);
}
