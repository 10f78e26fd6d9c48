/*
 * A child of a parallel node with `isolation: shared` commits in the one
 * work tree its siblings share, and its first commit scans that tree
 * whole (it never trusts its parent's watch). Each sibling commits its
 * own node's files, and the parallel node's own commit (at the run's end)
 * scans everything; so the child's scan, and the watch it starts for its
 * next commit, leave out its siblings' node directories. Without that the
 * scan of each child read every sibling's files: a thousand children cost
 * the square of a thousand (4 min for 1,000 trivial children, 18 s for
 * 250). The directories left out are named in this process (set in the
 * forked child, inherited by the processes it forks for a parallel node
 * of its own): a list of (parallel node's directory, the child's id).
 */
#include "git_repo.h"
#include "ailoop/base/strbuf.h"
#include "ailoop/base/util.h"

#include <dirent.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>

struct siblings {
	char *dir;  /* the parallel node's directory, relative to the work tree's root */
	char *keep; /* the child's own directory's name in it */
};

static struct siblings *scopes;
static size_t nscopes, scopes_alloc;

void al_git_leave_siblings(const char *node_dir, const char *own)
{
	AL_GROW(scopes, nscopes, scopes_alloc);
	scopes[nscopes].dir = al_strdup(node_dir);
	scopes[nscopes].keep = al_strdup(own);
	nscopes++;
}

bool al_git_sibling_dir(const char *dir)
{
	for (size_t i = 0; i < nscopes; i++) {
		size_t n = strlen(scopes[i].dir), k = strlen(scopes[i].keep);
		const char *rest = dir + n + 1;

		if (al_git_below(dir, scopes[i].dir) && dir[n] == '/' &&
		    !(!strncmp(rest, scopes[i].keep, k) && (rest[k] == '/' || !rest[k])))
			return true;
	}
	return false;
}

bool al_git_siblings_left(void)
{
	return nscopes > 0;
}

/* Whether `path` is a directory on the way to a parallel node's directory, or that one. */
static bool on_the_way(const char *path)
{
	for (size_t i = 0; i < nscopes; i++)
		if (al_git_below(scopes[i].dir, path))
			return true;
	return false;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * What directory `dir` ("" for the root) holds, in the work tree or in
 * the index (a tracked file deleted is a change too), added to *paths:
 * each entry but those on the way down (listed below them in turn) and
 * the siblings' directories (a file of the parallel node's own stays).
 * A directory's name ends in '/' while it is listed.
 */
static void list_dir(git_index *index, const char *dir, char ***paths, size_t *n,
		     size_t *alloc)
{
	char **names = NULL, *prefix = *dir ? al_xprintf("%s/", dir) : al_strdup("");
	size_t nnames = 0, names_alloc = 0, plen = strlen(prefix), pos = 0;
	DIR *d = opendir(*dir ? dir : ".");
	struct dirent *de;
	const git_index_entry *e;

	while (d && (de = readdir(d))) {
		bool is_dir = de->d_type == DT_DIR;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
		    !strcmp(de->d_name, ".git"))
			continue;
		if (de->d_type == DT_UNKNOWN) {
			char *path = al_xprintf("%s%s", prefix, de->d_name);
			struct stat st;

			is_dir = lstat(path, &st) == 0 && S_ISDIR(st.st_mode);
			free(path);
		}
		AL_GROW(names, nnames, names_alloc);
		names[nnames++] = al_xprintf("%s%s", de->d_name, is_dir ? "/" : "");
	}
	if (d)
		closedir(d);
	if (*prefix && git_index_find_prefix(&pos, index, prefix) != 0)
		pos = git_index_entrycount(index);
	for (; (e = git_index_get_byindex(index, pos)) && !strncmp(e->path, prefix, plen); pos++) {
		const char *name = e->path + plen, *slash = strchr(name, '/');
		size_t len = slash ? (size_t)(slash - name + 1) : strlen(name);

		if (nnames && !strncmp(names[nnames - 1], name, len) && !names[nnames - 1][len])
			continue; /* the index is sorted: the same directory's next file */
		AL_GROW(names, nnames, names_alloc);
		names[nnames++] = al_strndup(name, len);
	}
	if (nnames)
		qsort(names, nnames, sizeof(*names), by_name);
	for (size_t i = 0; i < nnames; i++) {
		size_t len = strlen(names[i]);
		bool is_dir = names[i][len - 1] == '/';
		char *path;

		if (i && !strcmp(names[i], names[i - 1]))
			continue;
		path = al_xprintf("%s%.*s", prefix, (int)(len - is_dir), names[i]);
		if (on_the_way(path) || (is_dir && al_git_sibling_dir(path))) {
			free(path);
			continue;
		}
		AL_GROW(*paths, *n, *alloc);
		(*paths)[(*n)++] = path;
	}
	al_strv_free(names, nnames);
	free(prefix);
}

int al_git_siblings_paths(git_index *index, char ***out, size_t *nout)
{
	char **ways = NULL;
	size_t nways = 0, ways_alloc = 0, alloc = 0;

	*out = NULL;
	*nout = 0;
	/* the root, and each directory on the way down to a parallel node's, once */
	AL_GROW(ways, nways, ways_alloc);
	ways[nways++] = al_strdup("");
	for (size_t i = 0; i < nscopes; i++) {
		for (const char *p = scopes[i].dir;; p++) {
			if (*p == '/' || !*p) {
				char *way = al_strndup(scopes[i].dir, (size_t)(p - scopes[i].dir));
				bool seen = false;

				for (size_t j = 0; j < nways && !seen; j++)
					seen = !strcmp(ways[j], way);
				if (seen) {
					free(way);
				} else {
					AL_GROW(ways, nways, ways_alloc);
					ways[nways++] = way;
				}
			}
			if (!*p)
				break;
		}
	}
	for (size_t i = 0; i < nways; i++)
		list_dir(index, ways[i], out, nout, &alloc);
	al_strv_free(ways, nways);
	return 0;
}
