#include "ailoop/exec/invoke.h"
#include "invoke_int.h"
#include "ailoop/exec/budget.h"
#include "ailoop/exec/feedback.h"
#include "ailoop/base/fsutil.h"
#include "ailoop/git/git.h"
#include "ailoop/model/md.h"
#include "ailoop/model/output.h"
#include "ailoop/store/episode_recall.h"
#include "ailoop/store/run.h"
#include "ailoop/model/runner.h"
#include "ailoop/base/sha256.h"
#include "ailoop/proc/slurm.h"
#include "ailoop/base/util.h"

#include <ctype.h>
#include <jansson.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
/*
 * An agent's prompt: its file's body with the placeholders filled
 * ({task}, {sensors}, {memory.KEY}, …), a paragraph naming only empty
 * ones left out.
 */

/* What fills an agent file's placeholders beyond the call's own fields. */
struct fill {
	const char *task_file;
	const char *memory;
	const char *feedback;
	const char *episodes;
	struct al_strbuf root_section; /* the run's task, below the root; else "" */
	char start[AL_OID_HEX];   /* the commit the run started from */
};

/* The value of placeholder `name`, or NULL to leave "{name}" as written. */
static const char *placeholder(const struct al_call_ctx *c, const struct al_exec *ex,
			       const char *name, size_t len, const struct fill *f)
{
	struct {
		const char *name;
		const char *value;
	} table[] = {
		{ "artifacts-path", c->dir },
		{ "input-path", c->input ? c->input : "" },
		{ "output-path", c->output },
		{ "node-path", c->node->path },
		{ "child-node-id", c->node->child ? c->node->child->id : "" },
		{ "sensors-section", c->sensors_section ? c->sensors_section : "" },
		{ "task", c->task ? c->task : "" },
		{ "task-file", f->task_file },
		{ "iteration", c->label },
		{ "run-id", ex->run->st.run_id },
		{ "memory-section", f->memory },
		{ "feedback-section", f->feedback },
		{ "episodes-section", f->episodes },
		{ "root-task", ex->run->st.task ? ex->run->st.task : "" },
		{ "root-task-section", f->root_section.buf },
		{ "base-branch", ex->run->st.base_branch ? ex->run->st.base_branch : "HEAD" },
		{ "start-commit", f->start },
	};

	for (size_t i = 0; i < AL_ARRAY_SIZE(table); i++)
		if (strlen(table[i].name) == len && !memcmp(table[i].name, name, len))
			return table[i].value;
	return NULL;
}

/*
 * Whether the agent can run `ailoop memory`: a script, or an agent whose
 * role may run commands (as al_runner_argv gives a shell) and whose tools
 * allow that one.
 */
static bool has_shell(const struct al_call_ctx *c)
{
	const struct al_agent *a = c->agent;

	return al_agent_is_command(a) || (c->role != AL_ROLE_CONTROLLER &&
					  al_tools_allow_command(a->tools, "ailoop"));
}

/*
 * Working memory as a node's agents see it: sensors.<name>.* of the
 * sensors of the node and its ancestors, loop.<id>.* and nodes.<id>.* of
 * those nodes, and every key that names no node (what agents shared); not
 * other loops' readings, stale where this node works.
 */
static bool own_key(const char *key, void *data)
{
	const struct al_node *node = data;
	const char *name, *dot;
	size_t len;
	bool sensor = al_starts_with(key, "sensors.");

	if (sensor)
		name = key + 8;
	else if (al_starts_with(key, "loop.") || al_starts_with(key, "nodes."))
		name = strchr(key, '.') + 1;
	else
		return true;
	dot = strchr(name, '.');
	len = dot ? (size_t)(dot - name) : strlen(name);
	for (const struct al_node *n = node; n; n = n->parent) {
		if (!sensor && strlen(n->id) == len && !memcmp(n->id, name, len))
			return true;
		for (size_t i = 0; sensor && i < n->nsensors; i++)
			if (strlen(n->sensors[i].name) == len && !memcmp(n->sensors[i].name, name, len))
				return true;
	}
	return false;
}

static int first_oid(const char *oid, const char *message, int64_t time, void *data)
{
	(void)message;
	(void)time;
	memcpy(data, oid, AL_OID_HEX);
	return 1;
}

/* The commit the run started from: its first commit's parent, or HEAD before it. */
static void start_commit(const struct al_exec *ex, char out[AL_OID_HEX])
{
	char *parent = ex->run->st.start_commit ? al_xprintf("%s^", ex->run->st.start_commit)
						: al_strdup("HEAD");

	*out = '\0';
	if (al_git_walk(ex->git, parent, NULL, first_oid, out) < 0)
		*out = '\0';
	free(parent);
	if (!*out)
		snprintf(out, AL_OID_HEX, "%s", ex->run->st.base_branch ? ex->run->st.base_branch
									 : "HEAD");
}

static bool names(const char *p, size_t len, const char *placeholder)
{
	return memmem(p, len, placeholder, strlen(placeholder)) != NULL;
}

/*
 * {episodes-section}: past episodes like the node's, for the roles its
 * `episodes:` gives them to (a loop's actuator, as a parallel node's
 * resolver, is an action), never the run's own; which ones went to whom
 * is an "episodes_given" event.
 */
static void episodes_section(struct al_strbuf *out, const struct al_call_ctx *c,
			     const struct al_exec *ex)
{
	static const unsigned role_bits[] = {
		[AL_ROLE_SENSOR] = AL_EPISODES_SENSOR, [AL_ROLE_CONTROLLER] = AL_EPISODES_CONTROLLER,
		[AL_ROLE_ACTUATOR] = AL_EPISODES_ACTION, [AL_ROLE_ACTION] = AL_EPISODES_ACTION,
	};
	const struct al_episodes_config *cfg = &c->node->episodes;
	struct al_strbuf query = AL_STRBUF_INIT;
	struct al_episodes_given given = { 0 };
	struct al_episode_query q = { NULL, ex->run->st.run_id, cfg->include_failures };
	json_t *ids;

	if (!cfg->enabled || !(cfg->roles & role_bits[c->role]) || !cfg->max_tokens || !ex->git)
		return;
	al_episodes_query(&query, c->task, c->node->path, ex->run->st.task);
	q.text = query.buf;
	al_episodes_section(out, &given, ex->git, &q, cfg->max_tokens);
	if (given.n) {
		ids = json_array();
		for (size_t i = 0; i < given.n; i++)
			json_array_append_new(ids, json_string(given.ids[i]));
		al_run_event(ex->run, "episodes_given", "{s:s, s:s, s:s, s:s?, s:s, s:o, s:I}",
			     "node", c->node->path, "label", c->label, "role",
			     al_role_names[c->role], "name", c->name, "agent", c->agent->path,
			     "ids", ids, "bytes", (json_int_t)given.bytes);
	}
	al_episodes_given_release(&given);
	al_strbuf_release(&query);
}

/* Whether the paragraph [p, end) is `placeholder` alone, blanks aside. */
static bool only(const char *p, const char *end, const char *placeholder)
{
	size_t len = strlen(placeholder);

	while (p < end && isspace((unsigned char)*p))
		p++;
	while (end > p && isspace((unsigned char)end[-1]))
		end--;
	return (size_t)(end - p) == len && !memcmp(p, placeholder, len);
}

/*
 * The end of the paragraph at `p` (its blank line included), and whether it
 * may stand: a paragraph naming {input-path} is left out of the prompt of
 * a call that has no input, so that no sentence points at nothing; one of
 * {episodes-section} alone, when no episode is given, so that no gap is.
 */
static const char *paragraph(const char *p, const char *end, const struct al_call_ctx *c,
			     const struct fill *f, bool *keep)
{
	const char *q = p;

	while (q < end) {
		const char *nl = memchr(q, '\n', (size_t)(end - q)), *next = nl ? nl + 1 : end;
		bool blank = true;

		for (const char *r = q; r < (nl ? nl : end); r++)
			blank &= *r == ' ' || *r == '\t' || *r == '\r';
		q = next;
		if (blank)
			break;
	}
	*keep = (c->input || !names(p, (size_t)(q - p), "{input-path}")) &&
		(*f->episodes || !only(p, q, "{episodes-section}"));
	return q;
}

static void fill_paragraph(struct al_strbuf *out, const struct al_call_ctx *c,
			   const struct al_exec *ex, const char *p, const char *end,
			   const struct fill *f)
{
	while (p < end) {
		const char *open = memchr(p, '{', (size_t)(end - p)), *close, *val = NULL;

		if (!open) {
			al_strbuf_add(out, p, (size_t)(end - p));
			break;
		}
		al_strbuf_add(out, p, (size_t)(open - p));
		close = memchr(open, '}', (size_t)(end - open));
		if (close)
			val = placeholder(c, ex, open + 1, (size_t)(close - open - 1), f);
		if (val) {
			al_strbuf_adds(out, val);
			p = close + 1;
		} else {
			al_strbuf_addch(out, '{');
			p = open + 1;
		}
	}
}

void al_call_render_prompt(struct al_call *call, const struct al_exec *ex, const char *task_file)
{
	const struct al_call_ctx *c = call->ctx;
	const char *p = c->agent->body, *end = p + c->agent->body_len;
	struct al_strbuf *out = &call->prompt, memory = AL_STRBUF_INIT, feedback = AL_STRBUF_INIT;
	struct al_strbuf episodes = AL_STRBUF_INIT;
	struct fill f = { .task_file = task_file, .root_section = AL_STRBUF_INIT };
	char *abs;

	if (ex->memory && names(p, c->agent->body_len, "{memory-section}")) {
		struct al_memory_view view = { own_key, (void *)c->node, has_shell(c) };

		al_memory_section(ex->memory, &view, &memory);
		al_strbuf_rtrim(&memory);
	}
	if (names(p, c->agent->body_len, "{feedback-section}")) {
		al_feedback_section(ex->run, c->node->path, &feedback);
		al_strbuf_rtrim(&feedback);
	}
	if (names(p, c->agent->body_len, "{episodes-section}"))
		episodes_section(&episodes, c, ex);
	if (names(p, c->agent->body_len, "{start-commit}"))
		start_commit(ex, f.start);
	/* a node below the root works on part of the user's task: shown beside its own */
	if (ex->run->st.task && c->node->parent && (!c->task || strcmp(c->task, ex->run->st.task)))
		al_strbuf_addf(&f.root_section, "## The run's task\n\nThe task the user gave the "
			       "whole run, of which yours is a part:\n\n%s", ex->run->st.task);
	f.memory = memory.buf;
	f.feedback = feedback.buf;
	f.episodes = episodes.buf;
	while (p < end) {
		bool keep;
		const char *next = paragraph(p, end, c, &f, &keep);

		if (keep)
			fill_paragraph(out, c, ex, p, next, &f);
		p = next;
	}
	al_strbuf_release(&memory);
	al_strbuf_release(&feedback);
	al_strbuf_release(&episodes);
	al_strbuf_release(&f.root_section);
	al_strbuf_rtrim(out);
	/*
	 * The facts an agent needs even when its file names no placeholder,
	 * with absolute paths: an agent may change directory.
	 */
	abs = al_call_absolute(ex, task_file);
	al_strbuf_addf(out, "\n\n---\nailoop: you are the %s%s%s of node '%s', iteration %s of run %s.\n"
		       "Task file: %s\n",
		       al_role_names[c->role], c->name ? " " : "", c->name ? c->name : "",
		       c->node->path, c->label, ex->run->st.run_id, abs);
	free(abs);
	if (c->input) {
		abs = al_call_absolute(ex, c->input);
		al_strbuf_addf(out, "Input: %s\n", abs);
		free(abs);
	}
	abs = al_call_absolute(ex, c->output);
	al_strbuf_addf(out, "Write your output to: %s\n", abs);
	free(abs);
	if (c->notice)
		al_strbuf_addf(out, "\n%s\n", c->notice);
}
