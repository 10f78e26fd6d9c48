#include "ailoop/git/git_packs.h"
#include "ailoop/base/strbuf.h"
#include "ailoop/base/util.h"

#include <git2.h>
#include <git2/sys/odb_backend.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

/* One gated pack store: its own refresh, its directory, what it last saw. */
struct gate {
	git_odb_backend *backend;
	int (*refresh)(git_odb_backend *);
	char *dir;
	struct stat seen;
	struct timespec when;
	bool valid;
};

static struct gate *gates;
static size_t ngates, gates_alloc;

static bool same_dir(const struct stat *a, const struct stat *b)
{
	return a->st_ino == b->st_ino && a->st_dev == b->st_dev && a->st_size == b->st_size &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
	       a->st_ctim.tv_sec == b->st_ctim.tv_sec && a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

static int gated_refresh(git_odb_backend *backend)
{
	struct timespec now;
	struct stat st;
	struct gate *g = NULL;
	int rc;

	for (size_t i = 0; i < ngates && !g; i++)
		if (gates[i].backend == backend)
			g = &gates[i];
	if (!g)
		return 0; /* cannot be: only gated stores call here */
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (stat(g->dir, &st) < 0)
		return g->refresh(backend); /* let libgit2 say what is wrong */
	if (g->valid && same_dir(&st, &g->seen) && now.tv_sec - g->when.tv_sec < 1)
		return 0;
	rc = g->refresh(backend);
	g->seen = st;
	g->when = now;
	g->valid = rc == 0;
	return rc;
}

void al_git_gate_pack_refresh(struct git_repository *repo)
{
	git_odb *odb = NULL;
	git_odb_backend *b, *pack = NULL;
	struct al_strbuf path = AL_STRBUF_INIT;
	struct stat st;
	size_t n, refreshing = 0;

	if (git_repository_odb(&odb, repo) < 0)
		return;
	al_strbuf_addf(&path, "%s/objects/info/alternates", git_repository_commondir(repo));
	n = git_odb_num_backends(odb);
	/* the usual store: the loose objects and the packs, nothing else */
	if (stat(path.buf, &st) < 0 && n == 2) {
		for (size_t i = 0; i < n; i++)
			if (git_odb_get_backend(&b, odb, i) == 0 && b->refresh) {
				refreshing++;
				pack = b;
			}
	}
	if (refreshing == 1 && pack->refresh != gated_refresh) {
		struct gate *g = NULL;

		/* a store at the address of one freed: its gate is stale */
		for (size_t i = 0; i < ngates && !g; i++)
			if (gates[i].backend == pack)
				g = &gates[i];
		if (!g) {
			AL_GROW(gates, ngates, gates_alloc);
			g = &gates[ngates++];
		} else {
			free(g->dir);
		}
		memset(g, 0, sizeof(*g));
		g->backend = pack;
		g->refresh = pack->refresh;
		g->dir = al_xprintf("%sobjects/pack", git_repository_commondir(repo));
		pack->refresh = gated_refresh;
	}
	al_strbuf_release(&path);
	git_odb_free(odb);
}
