#include "ailoop/store/run_view.h"
#include "ailoop/base/fsutil.h"
#include "ailoop/store/run.h"
#include "ailoop/base/strbuf.h"
#include "ailoop/base/util.h"

#include <dirent.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>

char *al_run_on_branches(struct al_git *git, const char *wanted, bool resumable,
			 char **branch)
{
	char **branches, *found = NULL, *current = NULL;
	size_t nb;

	*branch = NULL;
	if (al_git_branches(git, "ai-loop/", &branches, &nb) < 0)
		return NULL;
	al_git_head(git, &current, NULL);
	for (size_t b = 0; b < nb; b++) {
		char *rev = al_xprintf("refs/heads/%s", branches[b]), **ids = NULL;
		size_t n = 0;

		/* the checked-out branch's runs are here: a file missing is damage */
		if ((!current || strcmp(current, branches[b])) &&
		    al_git_ls(git, rev, AL_RUNS_DIR, &ids, &n) < 0)
			n = 0;
		for (size_t i = 0; i < n; i++) {
			struct al_strbuf text = AL_STRBUF_INIT;
			struct al_run_state st;
			char *path = al_xprintf("%s/%s/run-state.md", AL_RUNS_DIR, ids[i]);

			if (al_starts_with(ids[i], "run_") && !al_file_exists(path) &&
			    (!wanted || !strcmp(wanted, ids[i])) &&
			    al_git_read(git, rev, path, &text) == 0 &&
			    al_run_state_parse(&st, path, text.buf, text.len) == 0) {
				if ((!resumable || al_status_resumable(st.status)) && st.branch &&
				    !strcmp(st.branch, branches[b]) &&
				    (!found || al_run_id_cmp(ids[i], found) > 0)) {
					free(found);
					free(*branch);
					found = al_strdup(ids[i]);
					*branch = al_strdup(branches[b]);
				}
				al_run_state_release(&st);
			}
			al_strbuf_release(&text);
			free(path);
		}
		al_strv_free(ids, n);
		free(rev);
	}
	al_strv_free(branches, nb);
	free(current);
	return found;
}

void al_run_branch_ids(struct al_git *git, char ***ids, size_t *n)
{
	char **branches;
	size_t nb, alloc = 0;

	*ids = NULL;
	*n = 0;
	if (al_git_branches(git, "ai-loop/", &branches, &nb) < 0)
		return;
	for (size_t b = 0; b < nb; b++) {
		char *rev = al_xprintf("refs/heads/%s", branches[b]), **names = NULL;
		size_t k = 0;

		if (al_git_ls(git, rev, AL_RUNS_DIR, &names, &k) < 0)
			k = 0;
		for (size_t i = 0; i < k; i++) {
			AL_GROW(*ids, *n, alloc);
			(*ids)[(*n)++] = names[i];
		}
		free(names);
		free(rev);
	}
	al_strv_free(branches, nb);
}

static void add_error(struct al_run_nodes *out)
{
	AL_GROW(out->errors, out->nerrors, out->errors_alloc);
	out->errors[out->nerrors++] = al_strdup(al_errmsg());
}

/* Every orchestrator-output.md under nodes/, parents before children. */
static void collect(struct al_run_nodes *out, const char *dir)
{
	struct al_strbuf path = AL_STRBUF_INIT;
	struct al_node_state st;
	struct dirent **entries;
	int n, rc;

	al_strbuf_addf(&path, "%s/orchestrator-output.md", dir);
	rc = al_node_state_read(&st, path.buf);
	if (rc == 0) {
		AL_GROW(out->v, out->n, out->alloc);
		out->v[out->n++] = st;
	} else if (rc != AL_ENOTFOUND) {
		add_error(out);
	}
	n = scandir(dir, &entries, NULL, alphasort);
	for (int i = 0; i < n; i++) {
		struct al_strbuf sub = AL_STRBUF_INIT;

		al_strbuf_addf(&sub, "%s/%s", dir, entries[i]->d_name);
		if (entries[i]->d_name[0] != '.' && strcmp(entries[i]->d_name, "logs") &&
		    entries[i]->d_type == DT_DIR)
			collect(out, sub.buf);
		al_strbuf_release(&sub);
		free(entries[i]);
	}
	if (n >= 0)
		free(entries);
	al_strbuf_release(&path);
}

/* The same from the tree of `rev`: a run whose branch is not checked out. */
static void collect_git(struct al_run_nodes *out, struct al_git *git, const char *rev,
			const char *dir)
{
	struct al_strbuf path = AL_STRBUF_INIT, text = AL_STRBUF_INIT;
	struct al_node_state st;
	char **names;
	size_t n;

	al_strbuf_addf(&path, "%s/orchestrator-output.md", dir);
	if (al_git_read(git, rev, path.buf, &text) == 0) {
		if (al_node_state_parse(&st, path.buf, text.buf, text.len) == 0) {
			AL_GROW(out->v, out->n, out->alloc);
			out->v[out->n++] = st;
		} else {
			add_error(out);
		}
	}
	if (al_git_ls(git, rev, dir, &names, &n) < 0)
		n = 0;
	for (size_t i = 0; i < n; i++) {
		char *sub = al_xprintf("%s/%s", dir, names[i]);

		if (names[i][0] != '.' && strcmp(names[i], "logs"))
			collect_git(out, git, rev, sub);
		free(sub);
	}
	al_strv_free(names, n);
	al_strbuf_release(&path);
	al_strbuf_release(&text);
}

static int load_from_branch(struct al_run_view *v, struct al_git *git, const char *id)
{
	char *rev = al_xprintf("refs/heads/%s", v->from);
	char *path = al_xprintf("%s/%s/run-state.md", AL_RUNS_DIR, id);
	struct al_strbuf text = AL_STRBUF_INIT;
	int rc;

	v->dir = al_xprintf("%s/%s", AL_RUNS_DIR, id);
	rc = al_git_read(git, rev, path, &text);
	if (rc == 0)
		rc = al_run_state_parse(&v->st, path, text.buf, text.len);
	if (rc == 0) {
		char *nodes = al_xprintf("%s/nodes", v->dir);

		collect_git(&v->nodes, git, rev, nodes);
		free(nodes);
	}
	al_strbuf_release(&text);
	free(path);
	free(rev);
	return rc;
}

static int load_here(struct al_run_view *v, const char *id)
{
	struct al_run *run;
	char *nodes;
	int rc = al_run_open(&run, id);

	if (rc < 0)
		return rc;
	v->st = run->st; /* taken over */
	memset(&run->st, 0, sizeof(run->st));
	v->dir = al_strdup(run->dir);
	v->holder = al_run_lock_holder(run->dir);
	nodes = al_xprintf("%s/nodes", run->dir);
	collect(&v->nodes, nodes);
	free(nodes);
	al_run_free(run);
	return 0;
}

/* Whether run `id`'s state here names `current` (NULL: a detached HEAD) as its branch. */
static bool runs_on(const char *id, const char *current)
{
	char *path = al_xprintf("%s/%s/run-state.md", AL_RUNS_DIR, id);
	struct al_run_state st;
	bool on = false;

	if (al_run_state_read(&st, path) == 0) {
		on = st.branch && current ? !strcmp(st.branch, current) : !st.branch && !current;
		al_run_state_release(&st);
	}
	free(path);
	return on;
}

char *al_run_pick(struct al_git *git, char **from)
{
	char **ids = NULL, *current = NULL, *found = NULL, *branch = NULL, *picked = NULL;
	size_t n = 0;

	*from = NULL;
	if (al_runs_list(&ids, &n) < 0)
		n = 0;
	if (git && al_git_head(git, &current, NULL) == 0)
		for (size_t i = 0; i < n && !picked; i++)
			if (runs_on(ids[i], current))
				picked = al_strdup(ids[i]);
	/* runs whose branch is not checked out are on their branches only */
	if (!picked && git)
		found = al_run_on_branches(git, NULL, false, &branch);
	if (!picked && found && (!n || al_run_id_cmp(found, ids[0]) > 0)) {
		picked = found;
		found = NULL;
		*from = branch;
		branch = NULL;
	} else if (!picked && n) {
		picked = al_strdup(ids[0]);
	}
	if (!picked)
		al_err(AL_ENOTFOUND, "no runs in %s: start one with 'ailoop run \"TASK\"'",
		       AL_RUNS_DIR);
	al_runs_list_free(ids, n);
	free(current);
	free(found);
	free(branch);
	return picked;
}

int al_run_view_load(struct al_run_view *v, struct al_git *git, const char *id)
{
	char *found = NULL;
	int rc;

	memset(v, 0, sizeof(*v));
	if (!id)
		found = al_run_pick(git, &v->from);
	else if (git) /* runs whose branch is not checked out are on their branches only */
		found = al_run_on_branches(git, id, false, &v->from);
	if (!id && !found)
		rc = AL_ENOTFOUND;
	else if (v->from)
		rc = load_from_branch(v, git, found);
	else
		rc = load_here(v, id ? id : found);
	free(found);
	return rc;
}

void al_run_view_release(struct al_run_view *v)
{
	for (size_t i = 0; i < v->nodes.n; i++)
		al_node_state_release(&v->nodes.v[i]);
	for (size_t i = 0; i < v->nodes.nerrors; i++)
		free(v->nodes.errors[i]);
	free(v->nodes.v);
	free(v->nodes.errors);
	al_run_state_release(&v->st);
	free(v->dir);
	free(v->from);
	free(v->holder);
	memset(v, 0, sizeof(*v));
}

void al_run_cost_add_event(struct al_run_cost *c, const json_t *ev)
{
	const char *kind = json_string_value(json_object_get(ev, "cost"));
	double usd = json_number_value(json_object_get(ev, "cost_usd"));
	static const char *const in[] = { "input", "cache_read", "cache_write" };

	/* events.jsonl is a file anyone may edit: no figure a call could not give */
	if (!(usd >= 0 && usd < 1e9))
		usd = 0;
	c->calls++;
	c->usd += usd;
	for (size_t i = 0; i < sizeof(in) / sizeof(*in); i++) {
		json_int_t n = json_integer_value(json_object_get(ev, in[i]));

		c->input += n > 0 && n < (json_int_t)1e15 ? n : 0;
	}
	if (json_integer_value(json_object_get(ev, "output")) > 0 &&
	    json_integer_value(json_object_get(ev, "output")) < (json_int_t)1e15)
		c->output += json_integer_value(json_object_get(ev, "output"));
	if (kind && !strcmp(kind, "estimated")) {
		c->estimated++;
		c->estimated_usd += usd;
	}
	c->unknown += !kind || !strcmp(kind, "unknown");
}

void al_run_cost_add(struct al_run_cost *c, const struct al_run_cost *more)
{
	c->usd += more->usd;
	c->estimated_usd += more->estimated_usd;
	c->input += more->input;
	c->output += more->output;
	c->calls += more->calls;
	c->estimated += more->estimated;
	c->unknown += more->unknown;
}

bool al_run_node_holds(const char *path, const char *node)
{
	size_t len = strlen(path);

	return !strncmp(path, node, len) && (node[len] == '\0' || node[len] == '/');
}

int64_t al_run_event_time(const char *ts)
{
	struct tm tm = { 0 };

	if (!ts || sscanf(ts, "%4d-%2d-%2dT%2d:%2d:%2d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
			  &tm.tm_hour, &tm.tm_min, &tm.tm_sec) != 6)
		return -1;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	return (int64_t)timegm(&tm);
}

static void add_usage(struct al_run_tally *t, const json_t *ev)
{
	const char *node = json_string_value(json_object_get(ev, "node"));
	size_t i;

	al_run_cost_add_event(&t->cost, ev);
	if (!node)
		return;
	for (i = 0; i < t->nnodes && strcmp(t->nodes[i].node, node); i++)
		;
	if (i == t->nnodes) {
		AL_GROW(t->nodes, t->nnodes, t->nodes_alloc);
		memset(&t->nodes[i], 0, sizeof(t->nodes[i]));
		t->nodes[t->nnodes++].node = al_strdup(node);
	}
	al_run_cost_add_event(&t->nodes[i].cost, ev);
}

void al_run_tally_read(struct al_run_tally *t, const char *run_dir, bool live)
{
	char *path = al_xprintf("%s/events.jsonl", run_dir), *line = NULL;
	FILE *f = fopen(path, "r");
	int64_t start = -1, last = -1, now = (int64_t)time(NULL);
	size_t cap = 0;

	memset(t, 0, sizeof(*t));
	t->events = f != NULL;
	while (f && getline(&line, &cap, f) > 0) {
		json_t *ev = json_loads(line, 0, NULL);
		const char *type = json_string_value(json_object_get(ev, "event"));
		int64_t ts = al_run_event_time(json_string_value(json_object_get(ev, "ts")));

		if (!type) { /* a line cut short by a crash */
			json_decref(ev);
			continue;
		}
		if (ts < 0 || ts < last) /* no time, or a clock set back: no time passed */
			ts = last;
		if (ts >= 0 && (!strcmp(type, "run_start") || !strcmp(type, "run_resume"))) {
			if (start >= 0) { /* the stretch before ended at its last event */
				t->active_s += last - start;
				t->paused_s += ts - last;
				t->pauses++;
			}
			start = ts;
		}
		if (!strcmp(type, "agent") && !json_is_false(json_object_get(ev, "agent_call")))
			t->calls_ended++;
		else if (!strcmp(type, "agent_usage"))
			add_usage(t, ev);
		last = ts;
		json_decref(ev);
	}
	if (start >= 0)
		t->active_s += (live && now > last ? now : last) - start;
	free(line);
	if (f)
		fclose(f);
	free(path);
}

void al_run_tally_release(struct al_run_tally *t)
{
	for (size_t i = 0; i < t->nnodes; i++)
		free(t->nodes[i].node);
	free(t->nodes);
	memset(t, 0, sizeof(*t));
}

void al_run_tally_subtree(struct al_run_cost *out, const struct al_run_tally *t, const char *path)
{
	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < t->nnodes; i++)
		if (al_run_node_holds(path, t->nodes[i].node))
			al_run_cost_add(out, &t->nodes[i].cost);
}
