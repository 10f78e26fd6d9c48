#include "ailoop/exec/exec.h"
#include "ailoop/store/episodes.h"
#include "ailoop/model/md.h"
#include "ailoop/base/alloc.h"
#include "ailoop/base/fsutil.h"
#include "ailoop/base/util.h"
#include "ailoop/exec/invoke.h"

#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*
 * A finished node's episode, gathered from what the run keeps (its state,
 * the commits it made, events.jsonl) and recorded under refs/ailoop/episodes
 * (store/episodes.h), once the node's end is durable: its last commit is
 * made, or its state says it is done. A run killed before that records it
 * on resume, when the node ends again from its state; the id is the same,
 * so never twice.
 */

/* at most this many of a node's commits are read back, and the last steps kept */
#define WALK_MAX 1000
#define STEPS_MAX 50

/*
 * Whether node `n` records its episode: the one place that decides it,
 * `episodes: enabled` of the flow or of the node's subtree. A flow that
 * cannot be read (NULL) keeps the default: recorded.
 */
static bool recording(const struct al_flow *flow, const struct al_node *n)
{
	return !flow || al_episodes_enabled(flow, n);
}

/* A node that ended, as the run keeps it: what its episode is made of. */
struct ended {
	struct al_git *git;
	struct al_run *run;
	const char *rev;      /* where its commits are: HEAD, or the run's branch */
	const char *path, *type, *dir, *task;
	const char *instance; /* the label of its parent's iteration it ran in; "" for the root */
	const struct al_node_state *st;
	int iterations;
};

/* A damaged store is said once a process; the run goes on without episodes. */
static bool store_damaged;

/* Whether node path `p` is `node` or below it. */
static bool in_subtree(const char *p, const char *node)
{
	size_t len = strlen(node);

	return !strncmp(p, node, len) && (p[len] == '\0' || p[len] == '/');
}

/* Whether label `l` is of the entry `instance` ("" for the root: any). */
static bool in_instance(const char *l, const char *instance)
{
	size_t len = strlen(instance);

	return !*instance || (!strncmp(l, instance, len) && (l[len] == '\0' || l[len] == '.'));
}

struct walk {
	const char *run, *node, *instance;
	struct al_iteration *its; /* newest first */
	size_t n, alloc;
	int seen;
};

/* The node's commits, from HEAD back to the first that is not this entry's. */
static int take(const char *oid, const char *message, int64_t time, void *data)
{
	struct walk *w = data;
	struct al_iteration it;

	(void)time;
	if (++w->seen > WALK_MAX)
		return 1;
	if (!al_iteration_parse(&it, message))
		return 0; /* an agent's own commit */
	if ((it.run_id && strcmp(it.run_id, w->run)) || !in_subtree(it.node_path, w->node) ||
	    !in_instance(it.label, w->instance)) {
		al_iteration_release(&it);
		return 1;
	}
	memcpy(it.oid, oid, AL_OID_HEX);
	if (w->n == w->alloc) {
		w->alloc = w->alloc ? 2 * w->alloc : 16;
		w->its = al_realloc(w->its, w->alloc * sizeof(*w->its));
	}
	w->its[w->n++] = it;
	return it.run_start;
}

static char *sensors_line(const struct al_iteration *it)
{
	struct al_strbuf sb = AL_STRBUF_INIT;

	if (!it->nsensors)
		return NULL;
	for (size_t i = 0; i < it->nsensors; i++)
		al_sensors_line_add(&sb, it->sensors[i].name, it->sensors[i].status,
				    it->sensors[i].detail);
	return al_strbuf_detach(&sb, NULL);
}

/* What the node's agents spent, summed from the events of this entry of it and below. */
struct spent {
	long calls;
	int64_t input, output;
	double usd;
	bool usage, unknown;
};

/* One line of events.jsonl, newest first: true at the node's start, where the walk stops. */
static bool take_event(const struct ended *e, const char *line, struct spent *sp)
{
	bool start = strstr(line, "\"event\":\"node_start\"") != NULL, stop = false;
	const char *type, *node, *label;
	json_t *ev;

	if ((!start && !strstr(line, "\"event\":\"agent")) || !(ev = json_loads(line, 0, NULL)))
		return false;
	type = json_string_value(json_object_get(ev, "event"));
	node = json_string_value(json_object_get(ev, "node"));
	label = json_string_value(json_object_get(ev, "label"));
	if (type && node && label && in_subtree(node, e->path) && in_instance(label, e->instance)) {
		if (start) {
			stop = !strcmp(node, e->path);
		} else if (!strcmp(type, "agent")) {
			sp->calls += json_is_true(json_object_get(ev, "agent_call"));
		} else if (!strcmp(type, "agent_usage")) {
			const char *kind = json_string_value(json_object_get(ev, "cost"));

			sp->usage = true;
			sp->input += json_integer_value(json_object_get(ev, "input"));
			sp->output += json_integer_value(json_object_get(ev, "output"));
			sp->usd += json_number_value(json_object_get(ev, "cost_usd"));
			sp->unknown |= !kind || !strcmp(kind, "unknown");
		}
	}
	json_decref(ev);
	return stop;
}

/*
 * The events are read back from the end of events.jsonl to the node's
 * start, a chunk at a time: a child that ends in every iteration of a
 * long loop reads its own events, not the whole run's again each time.
 */
#define EVENTS_CHUNK 65536

static void spending(const struct ended *e, struct al_episode *ep)
{
	struct spent sp = { 0 };
	int fd = open(e->run->events_path, O_RDONLY | O_CLOEXEC);
	off_t pos = fd < 0 ? 0 : lseek(fd, 0, SEEK_END);
	char *buf = NULL;
	size_t carry = 0; /* the start of buf: a line whose beginning is further back */
	bool stop = false;

	while (!stop && pos > 0) {
		size_t n = pos >= EVENTS_CHUNK ? EVENTS_CHUNK : (size_t)pos, len, line_end;
		char *chunk = al_malloc(n + carry + 1);

		pos -= (off_t)n;
		if (pread(fd, chunk, n, pos) != (ssize_t)n) {
			free(chunk);
			break;
		}
		if (carry)
			memcpy(chunk + n, buf, carry);
		free(buf);
		buf = chunk;
		len = line_end = n + carry;
		buf[len] = '\0';
		for (size_t i = len; i-- > 0 && !stop;) {
			if (buf[i] != '\n')
				continue;
			buf[line_end] = '\0';
			stop = take_event(e, buf + i + 1, &sp);
			line_end = i;
		}
		if (pos == 0 && !stop) { /* the file's first line */
			buf[line_end] = '\0';
			take_event(e, buf, &sp);
		}
		carry = line_end;
	}
	free(buf);
	if (fd >= 0)
		close(fd);
	ep->agent_calls = sp.calls;
	ep->tokens_in = sp.input;
	ep->tokens_out = sp.output;
	ep->cost_usd = sp.usd;
	ep->cost_known = sp.usage && !sp.unknown;
}

/*
 * What an output of the node's says it did: its `## Summary` section (a
 * result's), else its `summary` or first line (al_output_summary); NULL if
 * the file is absent or says nothing.
 */
static char *summary_in(const struct ended *e, const char *name)
{
	char *path = al_xprintf("%s/%s", e->dir, name), *text = NULL;
	struct al_md md = AL_MD_INIT;

	if (al_md_read(&md, path) == 0) {
		text = al_md_section(md.body, md.body_len, "Summary");
		if (text && !*text) {
			free(text);
			text = NULL;
		}
		if (!text)
			text = al_output_summary(path, "");
		if (!*text) {
			free(text);
			text = NULL;
		}
	}
	al_md_release(&md);
	free(path);
	return text;
}

/* The last controller's reasoning: its output's body, which the executor does not read. */
static char *reasoning_of(const struct ended *e)
{
	char *path = al_xprintf("%s/controller-output.md", e->dir), *text = NULL;
	struct al_md md = AL_MD_INIT;

	if (al_md_read(&md, path) == 0 && md.body_len)
		text = al_strndup(md.body, md.body_len);
	al_md_release(&md);
	free(path);
	return text;
}

static void record(const struct ended *e)
{
	struct walk w = { e->run->st.run_id, e->path, e->instance, NULL, 0, 0, 0 };
	struct al_episode ep = { 0 };
	struct al_episode_step *steps;
	char **lines, ended[32], *summary, *reasoning, *instance;
	size_t first, own = 0, nsteps = 0;
	int rc;

	/*
	 * Run ids are numbered per work tree: two worktrees of the repository
	 * (or two clones sharing their episodes) may give the same id to runs
	 * of their own. The run's branch and start time, which its resume
	 * reads back, tell them apart.
	 */
	instance = al_xprintf("%s\n%s\n%s", e->instance, e->run->st.branch ? e->run->st.branch : "",
			      e->run->st.started_at ? e->run->st.started_at : "");
	al_episode_id(ep.id, w.run, e->path, instance);
	free(instance);
	al_timestamp(ended);
	al_git_walk(e->git, e->rev, NULL, take, &w);
	/*
	 * Its steps: its own commits, oldest first, each with the sensors of
	 * the one before; a node that commits nothing itself (a sequence)
	 * has its children's
	 */
	for (size_t i = 0; i < w.n; i++)
		own += !strcmp(w.its[i].node_path, e->path);
	steps = al_calloc(w.n ? w.n : 1, sizeof(*steps));
	lines = al_calloc(w.n + 1, sizeof(*lines));
	for (size_t i = w.n; i-- > 0;) {
		const struct al_iteration *it = &w.its[i];

		if (own && strcmp(it->node_path, e->path))
			continue;
		lines[nsteps] = sensors_line(it);
		steps[nsteps] = (struct al_episode_step){ it->label, it->summary,
							   nsteps ? lines[nsteps - 1] : NULL,
							   lines[nsteps] };
		nsteps++;
	}
	first = nsteps > STEPS_MAX ? nsteps - STEPS_MAX : 0;
	/* what worked: its actuator's last word, else its result's */
	summary = summary_in(e, "actuator-output.md");
	if (!summary)
		summary = summary_in(e, "action-output.md");
	if (!summary)
		summary = summary_in(e, "result-output.md");
	reasoning = reasoning_of(e);
	ep.run = w.run;
	ep.node = e->path;
	ep.type = e->type;
	ep.outcome = al_episode_outcome(e->st->status);
	ep.reason = al_status_name(e->st->status);
	ep.goal = e->task;
	ep.root_task = e->run->st.task ? e->run->st.task : "";
	ep.summary = summary ? summary : e->st->summary;
	ep.reasoning = reasoning;
	ep.first_commit = w.n ? w.its[w.n - 1].oid : NULL;
	ep.last_commit = w.n ? w.its[0].oid : NULL;
	ep.started = e->st->started_at ? e->st->started_at : ended;
	ep.ended = ended;
	ep.flow_sha256 = e->run->st.flow_sha256;
	ep.iterations = e->iterations;
	ep.duration_ms = e->st->elapsed_ms;
	ep.steps = steps + first;
	ep.nsteps = nsteps - first;
	spending(e, &ep);
	rc = al_episode_record(e->git, &ep);
	if (rc == AL_EINVALID) {
		store_damaged = true;
		fprintf(stderr, "ailoop: warning: %s: episodes are not recorded (repair or delete "
			"it: git update-ref -d %s)\n", al_errmsg(), AL_EPISODES_REF);
	} else if (rc < 0) {
		fprintf(stderr, "ailoop: warning: episode %s of node '%s' is not recorded: %s\n",
			ep.id, e->path, al_errmsg());
	}
	for (size_t i = 0; i < nsteps; i++)
		free(lines[i]);
	for (size_t i = 0; i < w.n; i++)
		al_iteration_release(&w.its[i]);
	free(lines);
	free(w.its);
	free(steps);
	free(summary);
	free(reasoning);
}

void al_node_episode(struct al_node_run *nr)
{
	const struct al_node *n = nr->n;
	struct ended e = { nr->ex->git, nr->ex->run, "HEAD", n->path, al_node_type_name(n->type),
			   nr->dir, nr->task, nr->parent_label ? nr->parent_label : "", &nr->st,
			   nr->st.iteration };

	if (!recording(nr->ex->flow, n) || store_damaged || !al_node_state_final(&nr->st))
		return;
	/* a sensor-form loop's iteration 0 measures, and its last only judges (node.c) */
	if (n->type == AL_NODE_LOOP && n->sensor_form && !nr->st.brk)
		e.iterations = nr->st.iteration > 0 ? nr->st.iteration - 1 : 0;
	record(&e);
}

/* Whether the root of the run's flow, as it is now, records its episode. */
static bool root_records(const struct al_run *run)
{
	struct al_diags d = AL_DIAGS_INIT;
	struct al_flow *flow = NULL;
	bool on = true;

	if (run->st.flow && al_flow_load(&flow, run->st.flow, &d) == 0)
		on = recording(flow, flow->root);
	al_flow_free(flow);
	al_diags_release(&d);
	return on;
}

void al_exec_ended_run_episode(struct al_git *g, struct al_run *run)
{
	struct al_node_state st = { 0 };
	struct al_strbuf task = AL_STRBUF_INIT;
	struct al_md result = AL_MD_INIT;
	char *dir, *path, *rev = NULL;
	struct ended e = { 0 };

	if (!run->st.status || !run->st.nstack || al_status_resumable(run->st.status))
		return;
	dir = al_run_node_dir(run, run->st.stack[0]);
	path = al_xprintf("%s/orchestrator-output.md", dir);
	if (al_node_state_read(&st, path) == 0 && al_node_state_final(&st) &&
	    !strcmp(st.run_id, run->st.run_id)) {
		free(path);
		path = al_xprintf("%s/task.md", dir);
		al_strbuf_read_file(&task, path, 0);
		free(path);
		path = al_xprintf("%s/result-output.md", dir);
		if (run->st.branch && al_git_branch_exists(g, run->st.branch))
			rev = al_xprintf("refs/heads/%s", run->st.branch);
		e = (struct ended){ g, run, rev ? rev : "HEAD", st.node_path,
				    st.type ? st.type : "loop", dir, task.buf, "", &st, st.iteration };
		if (al_md_read(&result, path) == 0 && al_md_str(&result, "iterations-executed"))
			e.iterations = atoi(al_md_str(&result, "iterations-executed"));
		if (!store_damaged && root_records(run))
			record(&e);
	}
	al_md_release(&result);
	al_node_state_release(&st);
	al_strbuf_release(&task);
	free(rev);
	free(path);
	free(dir);
}
