#include "ailoop/store/runs.h"
#include "ailoop/store/run.h"
#include "ailoop/base/fsutil.h"
#include "ailoop/base/strbuf.h"
#include "ailoop/base/util.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>

/* The root node's iteration from the tree of `rev`: its one directory under nodes/. */
static int root_iteration_at(struct al_git *git, const char *rev, const char *dir)
{
	char *nodes = al_xprintf("%s/nodes", dir), **names = NULL, *path = NULL;
	struct al_strbuf text = AL_STRBUF_INIT;
	struct al_node_state ns;
	size_t n = 0;
	int it = -1;

	if (al_git_ls(git, rev, nodes, &names, &n) == 0 && n) {
		path = al_xprintf("%s/%s/orchestrator-output.md", nodes, names[0]);
		if (al_git_read(git, rev, path, &text) == 0 &&
		    al_node_state_parse(&ns, path, text.buf, text.len) == 0) {
			it = ns.iteration;
			al_node_state_release(&ns);
		}
	}
	al_strv_free(names, n);
	al_strbuf_release(&text);
	free(nodes);
	free(path);
	return it;
}

/* The same from the work tree. */
static int root_iteration_here(const char *dir)
{
	char *nodes = al_xprintf("%s/nodes", dir), *path = NULL;
	struct al_node_state ns;
	DIR *d = opendir(nodes);
	struct dirent *e;
	int it = -1;

	while (d && (e = readdir(d)) && !path)
		if (e->d_name[0] != '.')
			path = al_xprintf("%s/%s/orchestrator-output.md", nodes, e->d_name);
	if (d)
		closedir(d);
	if (path && al_node_state_read(&ns, path) == 0) {
		it = ns.iteration;
		al_node_state_release(&ns);
	}
	free(nodes);
	free(path);
	return it;
}

static bool listed(const struct al_run_list *l, const char *id)
{
	for (size_t i = 0; i < l->n; i++)
		if (!strcmp(l->v[i].st.run_id, id))
			return true;
	return false;
}

static struct al_run_entry *add(struct al_run_list *l)
{
	AL_GROW(l->v, l->n, l->alloc);
	memset(&l->v[l->n], 0, sizeof(l->v[l->n]));
	return &l->v[l->n++];
}

/* The runs of branch `branch`: those whose state at its tip names it as theirs. */
static void from_branch(struct al_git *git, struct al_run_list *out, const char *branch)
{
	char *rev = al_xprintf("refs/heads/%s", branch), **ids = NULL;
	size_t n = 0;

	if (al_git_ls(git, rev, AL_RUNS_DIR, &ids, &n) < 0)
		n = 0;
	for (size_t i = 0; i < n; i++) {
		char *dir = al_xprintf("%s/%s", AL_RUNS_DIR, ids[i]);
		char *path = al_xprintf("%s/run-state.md", dir);
		struct al_strbuf text = AL_STRBUF_INIT;
		struct al_run_state st;

		if (al_starts_with(ids[i], "run_") && !listed(out, ids[i]) &&
		    al_git_read(git, rev, path, &text) == 0 &&
		    al_run_state_parse(&st, path, text.buf, text.len) == 0) {
			if (st.branch && !strcmp(st.branch, branch)) {
				struct al_run_entry *e = add(out);

				e->st = st;
				e->from = al_strdup(branch);
				e->iterations = root_iteration_at(git, rev, dir);
			} else {
				al_run_state_release(&st);
			}
		}
		al_strbuf_release(&text);
		free(path);
		free(dir);
	}
	al_strv_free(ids, n);
	free(rev);
}

static int cmp_entries(const void *a, const void *b)
{
	return al_run_id_cmp(((const struct al_run_entry *)a)->st.run_id,
			     ((const struct al_run_entry *)b)->st.run_id);
}

int al_runs_all(struct al_git *git, struct al_run_list *out)
{
	char **branches = NULL, **ids = NULL;
	size_t nb = 0, n = 0;
	int rc;

	memset(out, 0, sizeof(*out));
	if (git && (rc = al_git_branches(git, "ai-loop/", &branches, &nb)) < 0)
		return rc;
	for (size_t b = 0; b < nb; b++)
		from_branch(git, out, branches[b]);
	al_strv_free(branches, nb);
	if ((rc = al_runs_list(&ids, &n)) < 0)
		return rc;
	for (size_t i = 0; i < n; i++) {
		struct al_run_entry *e;
		struct al_run_state st;
		char *dir = al_xprintf("%s/%s", AL_RUNS_DIR, ids[i]);
		char *path = al_xprintf("%s/run-state.md", dir);

		if (!listed(out, ids[i]) && al_run_state_read(&st, path) == 0) {
			e = add(out);
			e->st = st;
			e->iterations = root_iteration_here(dir);
		}
		free(path);
		free(dir);
	}
	al_runs_list_free(ids, n);
	if (out->n)
		qsort(out->v, out->n, sizeof(*out->v), cmp_entries);
	return 0;
}

void al_run_list_release(struct al_run_list *l)
{
	for (size_t i = 0; i < l->n; i++) {
		al_run_state_release(&l->v[i].st);
		free(l->v[i].from);
	}
	free(l->v);
	memset(l, 0, sizeof(*l));
}
