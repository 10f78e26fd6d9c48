#include "setup.h"

#include "ailoop/cli/cli.h"
#include "ailoop/model/detect.h"
#include "ailoop/model/flow.h"
#include "ailoop/model/runner.h"
#include "ailoop/base/shellcmd.h"
#include "ailoop/base/strbuf.h"
#include "ailoop/base/util.h"

#include <stdlib.h>
#include <string.h>

/*
 * The model of `ailoop setup` (levels, sensors) and the flow template it
 * fills: the template's "# setup:" lines give the levels and defaults, and
 * are filled in with the answers.
 */

/* ---- small helpers ---------------------------------------------------- */

void sensors_add(struct sensors *s, const char *name, const char *command,
			const char *target, const char *agent)
{
	struct sensor *x;

	if (s->n == s->alloc) {
		s->alloc = s->alloc ? 2 * s->alloc : 4;
		s->v = al_realloc(s->v, s->alloc * sizeof(*s->v));
	}
	x = &s->v[s->n++];
	x->name = al_strdup(name);
	x->command = command ? al_strdup(command) : NULL;
	x->target = target ? al_strdup(target) : NULL;
	x->agent = agent ? al_strdup(agent) : al_xprintf(".ai-loop/agents/loop-sensor-%s.md", name);
}

void sensors_release(struct sensors *s)
{
	for (size_t i = 0; i < s->n; i++) {
		free(s->v[i].name);
		free(s->v[i].command);
		free(s->v[i].target);
		free(s->v[i].agent);
	}
	free(s->v);
	memset(s, 0, sizeof(*s));
}

void sensors_copy(struct sensors *to, const struct sensors *from)
{
	for (size_t i = 0; i < from->n; i++)
		sensors_add(to, from->v[i].name, from->v[i].command, from->v[i].target,
			    from->v[i].command ? NULL : from->v[i].agent);
}

bool setup_valid_id(const char *s)
{
	return al_id_valid(s) && strlen(s) <= AL_ID_MAX;
}

/* UTF-8 text on one line: no control characters (a tab is fine). */
bool setup_one_line(const char *s)
{
	if (!al_utf8_valid(s, strlen(s)))
		return false;
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 && *s != '\t')
			return false;
	return true;
}

bool setup_blank(const char *s)
{
	return !s[strspn(s, " \t")];
}

/* A YAML scalar for any one-line text: single-quoted. */
static void add_quoted(struct al_strbuf *sb, const char *s)
{
	al_strbuf_addch(sb, '\'');
	for (; *s; s++) {
		if (*s == '\'')
			al_strbuf_addch(sb, '\'');
		al_strbuf_addch(sb, *s);
	}
	al_strbuf_addch(sb, '\'');
}

static void out_add(struct out_files *o, const char *path, struct al_strbuf *text)
{
	if (o->n == o->alloc) {
		o->alloc = o->alloc ? 2 * o->alloc : 8;
		o->v = al_realloc(o->v, o->alloc * sizeof(*o->v));
	}
	o->v[o->n].path = al_strdup(path);
	o->v[o->n].text = *text;
	al_strbuf_init(text);
	o->n++;
}

void setup_out_release(struct out_files *o)
{
	for (size_t i = 0; i < o->n; i++) {
		free(o->v[i].path);
		al_strbuf_release(&o->v[i].text);
	}
	free(o->v);
}

void setup_release(struct setup *s)
{
	free(s->runner);
	for (int i = 0; i < MAX_LEVELS; i++) {
		free(s->levels[i].id);
		sensors_release(&s->levels[i].fixed);
		sensors_release(&s->levels[i].sensors);
	}
	sensors_release(&s->detected);
}

/* The project's test commands (al_detect_tests) as sensors. */
void setup_detect(struct sensors *out)
{
	struct al_test_cmds found = { 0 };

	al_detect_tests(&found);
	for (size_t i = 0; i < found.n; i++)
		sensors_add(out, found.v[i].name, found.v[i].command, SENSOR_TARGET, NULL);
	al_test_cmds_release(&found);
}

/* ---- the template ------------------------------------------------------- */

/* The "# setup: WHAT" marker of a line, or NULL. */
static const char *marker(const char *line, size_t len, size_t *what_len)
{
	const char *m = memmem(line, len, "# setup: ", 9);

	if (!m)
		return NULL;
	*what_len = len - (size_t)(m + 9 - line);
	return m + 9;
}

/* The value of `key: value  # setup: …`, trimmed. */
static char *marked_value(const char *line, const char *mark)
{
	const char *colon = strchr(line, ':');
	const char *b = colon + 1, *e = mark - 2;

	b += strspn(b, " ");
	while (e > b && (e[-1] == ' '))
		e--;
	return al_strndup(b, (size_t)(e - b));
}

static int level_of(const char *what, size_t len, const char *kind)
{
	size_t kl = strlen(kind);
	int lv;

	if (len < 8 + kl || strncmp(what, "level ", 6) || what[6] < '1' ||
	    what[6] > '0' + MAX_LEVELS || what[7] != ' ' || len != 8 + kl ||
	    strncmp(what + 8, kind, kl))
		return 0;
	lv = what[6] - '0';
	return lv;
}

/* Reads the template's levels and defaults from its "# setup:" lines. */
void setup_read_template(struct setup *s)
{
	const char *p = s->flow->text;

	while (*p) {
		const char *eol = strchr(p, '\n');
		size_t len = eol ? (size_t)(eol - p) : strlen(p), wl;
		const char *what = marker(p, len, &wl);
		char *line = al_strndup(p, len);
		int lv;

		if (what) {
			const char *m = line + (what - p) - 9;
			char *val = marked_value(line, m);

			if ((lv = level_of(what, wl, "id"))) {
				al_set_str(&s->levels[lv - 1].id, val);
			} else if ((lv = level_of(what, wl, "max-iterations"))) {
				s->levels[lv - 1].max_iterations = atoi(val);
			} else if ((lv = level_of(what, wl, "sensors"))) {
				struct level *l = &s->levels[lv - 1];
				const char *q = val + (*val == '[');

				l->has_sensors = true;
				while (*q && *q != ']') {
					size_t tl;
					char *t, *name;
					const char *slash;

					q += strspn(q, " ,");
					tl = strcspn(q, " ,]");
					if (!tl)
						continue;
					t = al_strndup(q, tl);
					q += tl;
					if (!strcmp(t, TESTS_SLOT)) {
						l->slot = true;
						free(t);
						continue;
					}
					slash = strrchr(t, '/');
					name = al_strdup(slash ? slash + 1 : t);
					if (al_starts_with(name, "loop-sensor-"))
						memmove(name, name + 12, strlen(name + 12) + 1);
					if (al_ends_with(name, ".md"))
						name[strlen(name) - 3] = '\0';
					sensors_add(&l->fixed, name, NULL, NULL, t);
					free(name);
					free(t);
				}
			} else if (wl == 12 && !strncmp(what, "test-command", 12)) {
				s->test_command = true;
			}
			if (lv > s->nlevels)
				s->nlevels = lv;
			free(val);
		}
		free(line);
		p = eol ? eol + 1 : p + len;
	}
}

/*
 * The test command of templates that check the tests themselves: every
 * sensor's command must pass. Of several, each runs in a shell of its own
 * (sh -c '...'), so that none of its operators, `cd` or comment reaches
 * the others: `false && false || true` would pass.
 */
char *setup_joined_commands(const struct level *l)
{
	struct al_strbuf sb = AL_STRBUF_INIT;
	size_t commands = 0;

	for (size_t i = 0; i < l->sensors.n; i++)
		commands += l->sensors.v[i].command != NULL;
	for (size_t i = 0; i < l->sensors.n; i++) {
		const char *c = l->sensors.v[i].command;

		if (!c)
			continue;
		if (sb.len)
			al_strbuf_adds(&sb, " && ");
		if (commands == 1) {
			al_strbuf_adds(&sb, c);
			continue;
		}
		al_strbuf_adds(&sb, "sh -c '");
		for (; *c; c++)
			if (*c == '\'')
				al_strbuf_adds(&sb, "'\\''");
			else
				al_strbuf_addch(&sb, *c);
		al_strbuf_addch(&sb, '\'');
	}
	return al_strbuf_detach(&sb, NULL);
}

/* The flow: the template with its "# setup:" lines filled in. */
static void render_flow(const struct setup *s, struct al_strbuf *out)
{
	const char *p = s->flow->text;

	while (*p) {
		const char *eol = strchr(p, '\n');
		size_t len = eol ? (size_t)(eol - p) : strlen(p), wl;
		const char *what = marker(p, len, &wl);
		size_t indent = strspn(p, " ");
		const char *colon = memchr(p, ':', len);
		int lv;

		if (!what || !colon) {
			if (!what && len > 9 && al_starts_with(p, "# `ailoop setup` fills"))
				al_strbuf_adds(out, "# Written by `ailoop setup`.");
			else
				al_strbuf_add(out, p, len);
		} else {
			al_strbuf_add(out, p, (size_t)(colon - p) + 1);
			if ((lv = level_of(what, wl, "id"))) {
				al_strbuf_addf(out, " %s", s->levels[lv - 1].id);
			} else if ((lv = level_of(what, wl, "max-iterations"))) {
				al_strbuf_addf(out, " %d", s->levels[lv - 1].max_iterations);
			} else if ((lv = level_of(what, wl, "sensors"))) {
				const struct sensors *ss = &s->levels[lv - 1].sensors;

				if (!ss->n)
					al_strbuf_adds(out, " []");
				for (size_t i = 0; i < ss->n; i++)
					al_strbuf_addf(out, "\n%*s- %s", (int)indent + 2, "", ss->v[i].agent);
			} else if (wl == 6 && !strncmp(what, "runner", 6)) {
				al_strbuf_addf(out, " %s", s->runner);
			} else if (wl == 12 && !strncmp(what, "test-command", 12)) {
				char *cmd = setup_joined_commands(&s->levels[0]);

				al_strbuf_adds(out, " {type: command, expression: ");
				add_quoted(out, cmd);
				al_strbuf_adds(out, "}");
				free(cmd);
			} else {
				al_strbuf_add(out, colon + 1, (size_t)(p + len - colon - 1));
			}
		}
		al_strbuf_addch(out, '\n');
		p = eol ? eol + 1 : p + len;
	}
}

/*
 * A command sensor's agent file, from the template agents/loop-sensor-tests.md,
 * with the metrics that read what its command's test runner prints.
 */
static void render_sensor(const struct sensor *x, struct al_strbuf *out)
{
	const char *p = al_template_find("agents/loop-sensor-tests.md")->text;
	bool in_metrics = false;

	while (*p) {
		const char *eol = strchr(p, '\n');
		size_t len = eol ? (size_t)(eol - p) : strlen(p);

		if (in_metrics && *p == ' ') {
			p = eol ? eol + 1 : p + len;
			continue; /* the template's own metrics */
		}
		in_metrics = false;
		if (al_starts_with(p, "metrics:")) {
			in_metrics = true;
			al_strbuf_adds(out, al_test_metrics(x->command));
			p = eol ? eol + 1 : p + len;
			continue;
		} else if (al_starts_with(p, "name:")) {
			al_strbuf_addf(out, "name: %s", x->name);
		} else if (al_starts_with(p, "command:")) {
			al_strbuf_adds(out, "command: ");
			add_quoted(out, x->command);
		} else if (al_starts_with(p, "target:")) {
			al_strbuf_adds(out, "target: ");
			add_quoted(out, x->target ? x->target : SENSOR_TARGET);
		} else {
			al_strbuf_add(out, p, len);
		}
		al_strbuf_addch(out, '\n');
		p = eol ? eol + 1 : p + len;
	}
}

/*
 * The actuator's agent file: its tools let it run the programs of the
 * project's test commands (`Bash(make:*)`), so that it can check its change.
 */
static void render_actuator(const struct setup *s, const struct al_template *t,
			    struct al_strbuf *out)
{
	struct al_strbuf tools = AL_STRBUF_INIT;
	const char *p = t->text;

	for (int lv = 0; lv < s->nlevels; lv++)
		for (size_t i = 0; i < s->levels[lv].sensors.n; i++) {
			const char *cmd = s->levels[lv].sensors.v[i].command;
			char *prog = cmd ? al_shell_program(cmd) : NULL, *rule;

			if (prog && strspn(prog, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
					   "0123456789._-/+") == strlen(prog)) {
				rule = al_xprintf(", Bash(%s:*)", prog);
				if (!strstr(tools.buf, rule))
					al_strbuf_adds(&tools, rule);
				free(rule);
			}
			free(prog);
		}
	while (*p) {
		const char *eol = strchr(p, '\n');
		size_t len = eol ? (size_t)(eol - p) : strlen(p);

		al_strbuf_add(out, p, len);
		if (al_starts_with(p, "tools:"))
			al_strbuf_add(out, tools.buf, tools.len);
		al_strbuf_addch(out, '\n');
		p = eol ? eol + 1 : p + len;
	}
	al_strbuf_release(&tools);
}

/*
 * An agent file for `runner`: a `tools:` or `disallowedTools:` line the
 * runner has no way to enforce (codex, gemini, aider and opencode have no
 * flag that restricts tools) is kept as a comment, so that the flow setup
 * writes has nothing `ailoop validate` warns about and the list is there
 * for a runner that reads it.
 */
static void for_runner(const char *runner, struct al_strbuf *text)
{
	struct al_runners rs;
	const struct al_runner *r;
	struct al_strbuf out = AL_STRBUF_INIT;
	bool tools, disallowed;
	const char *p = text->buf;

	al_runners_init(&rs);
	r = al_runners_find(&rs, runner);
	tools = !r || al_runner_uses(r, "tools") || al_runner_uses(r, "tool-names");
	disallowed = !r || al_runner_uses(r, "disallowed-tools");
	al_runners_release(&rs);
	if (tools && disallowed)
		return;
	while (*p) {
		const char *eol = strchr(p, '\n');
		size_t len = eol ? (size_t)(eol - p) + 1 : strlen(p);

		if ((!tools && al_starts_with(p, "tools:")) ||
		    (!disallowed && al_starts_with(p, "disallowedTools:")))
			al_strbuf_addf(&out, "# runner '%s' cannot enforce a tool list:\n# ", runner);
		al_strbuf_add(&out, p, len);
		p += len;
	}
	al_strbuf_release(text);
	*text = out;
}

static bool out_has(const struct out_files *o, const char *path)
{
	for (size_t k = 0; k < o->n; k++)
		if (!strcmp(o->v[k].path, path))
			return true;
	return false;
}

/*
 * Every file setup writes: the flow, its command sensors, then the agents
 * of the templates (a command sensor named like one, say `review`, takes
 * its place: the checks made sure the flow does not use both).
 */
void setup_render(const struct setup *s, struct out_files *o)
{
	struct al_strbuf sb = AL_STRBUF_INIT;

	render_flow(s, &sb);
	out_add(o, ".ai-loop/flow.yaml", &sb);
	for (int lv = 0; lv < s->nlevels && !s->test_command; lv++)
		for (size_t i = 0; i < s->levels[lv].sensors.n; i++) {
			const struct sensor *x = &s->levels[lv].sensors.v[i];

			if (!x->command || out_has(o, x->agent))
				continue;
			render_sensor(x, &sb);
			out_add(o, x->agent, &sb);
		}
	for (const struct al_template *t = al_templates; t->path; t++) {
		char *path;

		if (!al_starts_with(t->path, "agents/") || !strcmp(t->path, "agents/loop-sensor-tests.md"))
			continue;
		path = al_xprintf(".ai-loop/%s", t->path);
		if (!out_has(o, path)) {
			if (!strcmp(t->path, "agents/loop-actuator.md"))
				render_actuator(s, t, &sb);
			else
				al_strbuf_add(&sb, t->text, t->len);
			for_runner(s->runner, &sb);
			out_add(o, path, &sb);
		}
		free(path);
	}
	out_add(o, ".ai-loop/runs/.gitkeep", &sb);
}
