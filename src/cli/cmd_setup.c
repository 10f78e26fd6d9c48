#include "ailoop/cli.h"
#include "ailoop/detect.h"
#include "ailoop/diag.h"
#include "ailoop/flow.h"
#include "ailoop/fsutil.h"
#include "ailoop/runner.h"
#include "ailoop/sha256.h"
#include "ailoop/strbuf.h"
#include "ailoop/templates.h"
#include "ailoop/util.h"

#include <errno.h>
#include <stdarg.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/*
 * `ailoop setup`: detects the project's test commands, asks (on a terminal)
 * or takes the flags, fills a flow template's "# setup:" lines, checks the
 * flow with the loader, and writes .ai-loop/ idempotently: a file is only
 * replaced when it is still what setup wrote last (.ai-loop/.setup-manifest)
 * or with --force.
 */

#define MAX_LEVELS 3
#define TESTS_SLOT ".ai-loop/agents/loop-sensor-tests.md"
#define MANIFEST ".ai-loop/.setup-manifest"
#define SENSOR_TARGET "every test passes"

static const char *const template_names[] = {
	"single", "nested", "three-level", "tdd", "reactree-tdd", "demo",
};

struct sensor {
	char *name;
	char *command; /* NULL: an agent sensor of the template (`agent`) */
	char *target;
	char *agent;   /* the agent file's path in the flow */
};

struct sensors {
	struct sensor *v;
	size_t n, alloc;
};

struct level {
	char *id;
	int max_iterations;
	bool has_sensors;    /* the template marks its sensors */
	bool slot;           /* the template's sensors hold the test slot */
	struct sensors fixed; /* the template's own (agent) sensors */
	struct sensors sensors; /* what is written */
};

struct setup {
	const char *template_name;
	const struct al_template *flow;
	char *runner;
	int nlevels;
	bool test_command; /* the template checks the tests itself (a condition) */
	struct level levels[MAX_LEVELS];
	struct sensors detected;
};

struct out_file {
	char *path;
	struct al_strbuf text;
};

struct out_files {
	struct out_file *v;
	size_t n, alloc;
};

/* ---- small helpers ---------------------------------------------------- */

static void sensors_add(struct sensors *s, const char *name, const char *command,
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

static void sensors_release(struct sensors *s)
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

static void sensors_copy(struct sensors *to, const struct sensors *from)
{
	for (size_t i = 0; i < from->n; i++)
		sensors_add(to, from->v[i].name, from->v[i].command, from->v[i].target,
			    from->v[i].command ? NULL : from->v[i].agent);
}

static bool valid_id(const char *s)
{
	return al_id_valid(s) && strlen(s) <= AL_ID_MAX;
}

/* UTF-8 text on one line: no control characters (a tab is fine). */
static bool one_line(const char *s)
{
	if (!al_utf8_valid(s, strlen(s)))
		return false;
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 && *s != '\t')
			return false;
	return true;
}

static bool blank(const char *s)
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

static void out_release(struct out_files *o)
{
	for (size_t i = 0; i < o->n; i++) {
		free(o->v[i].path);
		al_strbuf_release(&o->v[i].text);
	}
	free(o->v);
}

static void setup_release(struct setup *s)
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
static void detect(struct sensors *out)
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
static void read_template(struct setup *s)
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

/* The test command of templates that check the tests themselves. */
static char *joined_commands(const struct level *l)
{
	struct al_strbuf sb = AL_STRBUF_INIT;

	for (size_t i = 0; i < l->sensors.n; i++)
		if (l->sensors.v[i].command) {
			if (sb.len)
				al_strbuf_adds(&sb, " && ");
			if (l->sensors.n > 1 && strstr(l->sensors.v[i].command, "&&"))
				al_strbuf_addf(&sb, "(%s)", l->sensors.v[i].command);
			else
				al_strbuf_adds(&sb, l->sensors.v[i].command);
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
				char *cmd = joined_commands(&s->levels[0]);

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

/* A command sensor's agent file, from the template agents/loop-sensor-tests.md. */
static void render_sensor(const struct sensor *x, struct al_strbuf *out)
{
	const char *p = al_template_find("agents/loop-sensor-tests.md")->text;

	while (*p) {
		const char *eol = strchr(p, '\n');
		size_t len = eol ? (size_t)(eol - p) : strlen(p);

		if (al_starts_with(p, "name:")) {
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
static void render(const struct setup *s, struct out_files *o)
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
			al_strbuf_add(&sb, t->text, t->len);
			out_add(o, path, &sb);
		}
		free(path);
	}
	out_add(o, ".ai-loop/runs/.gitkeep", &sb);
}

/* ---- checks, the tree, the dialogue ------------------------------------ */

static const char *level_label(const struct setup *s, int lv)
{
	return s->levels[lv].id;
}

/*
 * Errors (64) for sensors the flow cannot hold; warnings for sensors that
 * measure the same thing twice.
 */
static int check_sensors(const struct setup *s)
{
	for (int a = 0; a < s->nlevels; a++)
		for (size_t i = 0; i < s->levels[a].sensors.n; i++) {
			const struct sensor *x = &s->levels[a].sensors.v[i];

			for (size_t j = i + 1; j < s->levels[a].sensors.n; j++)
				if (!strcmp(x->name, s->levels[a].sensors.v[j].name))
					return al_cli_fail(AL_EXIT_USAGE, "sensor name '%s' is given twice "
							   "in level '%s'", x->name, level_label(s, a));
			for (int b = a + 1; b < s->nlevels; b++)
				for (size_t j = 0; j < s->levels[b].sensors.n; j++) {
					const struct sensor *y = &s->levels[b].sensors.v[j];

					if (!strcmp(x->name, y->name) &&
					    (!x->command != !y->command ||
					     (x->command && strcmp(x->command, y->command))))
						return al_cli_fail(AL_EXIT_USAGE, "sensor name '%s' names "
								   "two different sensors (levels '%s' and '%s'): "
								   "give them different names", x->name,
								   level_label(s, a), level_label(s, b));
				}
		}
	return 0;
}

static void warn_overlaps(const struct setup *s)
{
	for (int a = 0; a < s->nlevels; a++)
		for (size_t i = 0; i < s->levels[a].sensors.n; i++) {
			const struct sensor *x = &s->levels[a].sensors.v[i];

			for (size_t j = i + 1; x->command && j < s->levels[a].sensors.n; j++)
				if (s->levels[a].sensors.v[j].command &&
				    !strcmp(x->command, s->levels[a].sensors.v[j].command))
					fprintf(stderr, "ailoop: warning: sensors '%s' and '%s' of level "
						"'%s' run the same command '%s'\n", x->name,
						s->levels[a].sensors.v[j].name, level_label(s, a),
						x->command);
			for (int b = a + 1; b < s->nlevels; b++)
				for (size_t j = 0; j < s->levels[b].sensors.n; j++) {
					const struct sensor *y = &s->levels[b].sensors.v[j];
					bool same = x->command ? y->command && !strcmp(x->command, y->command)
							       : !y->command && !strcmp(x->agent, y->agent);

					if (!same)
						continue;
					if (b == a + 1)
						fprintf(stderr, "ailoop: warning: sensor '%s' of level '%s' is "
							"repeated in its child '%s': it runs in both loops\n",
							y->name, level_label(s, a), level_label(s, b));
					else
						fprintf(stderr, "ailoop: warning: sensor '%s' runs in levels "
							"'%s' and '%s'\n", y->name, level_label(s, a),
							level_label(s, b));
				}
		}
}

static void print_tree(const struct setup *s, FILE *out)
{
	fprintf(out, "flow (template %s, runner %s):\n", s->template_name, s->runner);
	for (int lv = 0; lv < s->nlevels; lv++) {
		const struct level *l = &s->levels[lv];
		int ind = 2 + 4 * lv;

		if (lv)
			fprintf(out, "%*s`-- ", ind - 4, "");
		else
			fprintf(out, "%*s", ind, "");
		if (s->test_command) {
			char *cmd = joined_commands(l);

			fprintf(out, "%s: loop until '%s' passes, at most %d iterations\n", l->id, cmd,
				l->max_iterations);
			free(cmd);
			continue;
		}
		fprintf(out, "%s: loop, at most %d iteration%s\n", l->id, l->max_iterations,
			l->max_iterations == 1 ? "" : "s");
		if (!l->sensors.n)
			fprintf(out, "%*s  no sensors: the controller judges the actuator's report\n", ind, "");
		for (size_t i = 0; i < l->sensors.n; i++) {
			const struct sensor *x = &l->sensors.v[i];

			if (x->command)
				fprintf(out, "%*s  sensor %s: $ %s  (target: %s)\n", ind, "", x->name,
					x->command, x->target ? x->target : SENSOR_TARGET);
			else
				fprintf(out, "%*s  sensor %s: LLM, %s\n", ind, "", x->name, x->agent);
		}
		if (lv + 1 == s->nlevels)
			fprintf(out, "%*s  actuator: .ai-loop/agents/loop-actuator.md\n", ind, "");
	}
}

/* One line from standard input, without its newline; NULL at the end. */
static char *read_line(void)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t n = getline(&line, &cap, stdin);

	if (n < 0) {
		free(line);
		return NULL;
	}
	while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
		line[--n] = '\0';
	return line;
}

/*
 * Asks on stderr; returns the answer, or a copy of `def` for an empty one
 * (and at the end of the input, after which *eof is set and every later
 * question takes its default).
 */
static char *ask(bool *eof, const char *def, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static char *ask(bool *eof, const char *def, const char *fmt, ...)
{
	va_list ap;
	char *line = NULL;

	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	if (def && *def)
		fprintf(stderr, " [%s]", def);
	fputs(": ", stderr);
	fflush(stderr);
	if (!*eof && !(line = read_line())) {
		*eof = true;
		fputc('\n', stderr);
	}
	if (line) {
		char *b = line + strspn(line, " \t"), *e = b + strlen(b);

		while (e > b && (e[-1] == ' ' || e[-1] == '\t'))
			e--;
		*e = '\0';
		if (*b) {
			char *ans = al_strdup(b);

			free(line);
			return ans;
		}
		free(line);
	}
	return al_strdup(def ? def : "");
}

static bool parse_count(const char *s, int min, int max, int *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max)
		return false;
	*out = (int)v;
	return true;
}

static bool known_runner(const char *name)
{
	struct al_runners rs;
	bool found;

	al_runners_init(&rs);
	found = al_runners_find(&rs, name) != NULL;
	al_runners_release(&rs);
	return found;
}

/* Asks for one level's id, sensors and iterations. */
static void ask_level(struct setup *s, int lv, bool *eof)
{
	struct level *l = &s->levels[lv];
	struct sensors old = l->sensors;
	char *a;

	for (;;) {
		a = ask(eof, l->id, "level %d of %d: id", lv + 1, s->nlevels);
		if (valid_id(a))
			break;
		fprintf(stderr, "  an id is letters, digits, '_' and '-' (at most %d)\n", AL_ID_MAX);
		free(a);
	}
	free(l->id);
	l->id = a;
	memset(&l->sensors, 0, sizeof(l->sensors));
	if (l->has_sensors || s->test_command) {
		fprintf(stderr, "  sensors of '%s' (Enter keeps each; '-' as a name drops one):\n", l->id);
		for (size_t i = 0;; i++) {
			const struct sensor *x = i < old.n ? &old.v[i] : NULL;
			char *name, *cmd = NULL, *target = NULL;

			if (x && !x->command) {
				char *keep = ask(eof, "Y", "  keep the LLM sensor '%s' (%s)? (Y/n)", x->name,
						 x->agent);

				if (*keep == 'y' || *keep == 'Y')
					sensors_add(&l->sensors, x->name, NULL, NULL, x->agent);
				free(keep);
				continue;
			}
			for (;;) {
				name = x ? ask(eof, x->name, "  sensor %zu name", i + 1)
					 : ask(eof, "", "  another sensor's name (Enter: no more)");
				if (!*name || !strcmp(name, "-") || valid_id(name))
					break;
				fprintf(stderr, "  a name is letters, digits, '_' and '-'\n");
				free(name);
			}
			if (!*name || !strcmp(name, "-")) {
				free(name);
				if (!x)
					break;
				continue;
			}
			while (!cmd || !*cmd || !one_line(cmd)) {
				if (cmd)
					fprintf(stderr, "  a command is one line of UTF-8 text\n");
				free(cmd);
				cmd = ask(eof, x ? x->command : "", "  command of '%s'", name);
				if (*eof && !*cmd)
					break;
			}
			while (*cmd && (!target || !one_line(target))) {
				if (target)
					fprintf(stderr, "  a target is one line of UTF-8 text\n");
				free(target);
				target = ask(eof, x && x->target ? x->target : SENSOR_TARGET,
					     "  target of '%s'", name);
			}
			if (*cmd)
				sensors_add(&l->sensors, name, cmd, target, NULL);
			free(name);
			free(cmd);
			free(target);
			if (!x && *eof)
				break;
		}
	}
	sensors_release(&old);
	for (;;) {
		char def[16];

		snprintf(def, sizeof(def), "%d", l->max_iterations);
		a = ask(eof, def, "  max iterations of '%s'", l->id);
		if (parse_count(a, 1, 1000, &l->max_iterations)) {
			free(a);
			break;
		}
		fprintf(stderr, "  a number from 1 to 1000\n");
		free(a);
	}
}

/* ---- validation and writing --------------------------------------------- */

/*
 * Loads the flow from a scratch copy of the files, before anything is
 * written: what setup writes must validate. Returns 0, or 70 after printing
 * the loader's errors.
 */
static int validate(const struct out_files *o)
{
	char tmpl[] = "/tmp/ailoop-setup.XXXXXX", cwd[PATH_MAX];
	struct al_diags diags = AL_DIAGS_INIT;
	struct al_flow *flow = NULL;
	int err = 0, code = 0;

	if (!getcwd(cwd, sizeof(cwd)) || !mkdtemp(tmpl))
		return al_cli_fail(AL_EXIT_SOFTWARE, "cannot make a scratch directory: %s",
				   strerror(errno));
	for (size_t i = 0; i < o->n && !err; i++) {
		char *path = al_xprintf("%s/%s", tmpl, o->v[i].path);
		char *slash = strrchr(path, '/');

		*slash = '\0';
		err = al_mkdirs(path);
		*slash = '/';
		if (!err)
			err = al_write_atomic(path, o->v[i].text.buf, o->v[i].text.len);
		free(path);
	}
	if (err < 0)
		code = al_cli_fail(AL_EXIT_SOFTWARE, "%s", al_errmsg());
	else if (chdir(tmpl) < 0)
		code = al_cli_fail(AL_EXIT_SOFTWARE, "cannot enter '%s': %s", tmpl, strerror(errno));
	else {
		if (al_flow_load(&flow, ".ai-loop/flow.yaml", &diags) < 0) {
			al_diags_sort(&diags);
			al_diags_print(&diags, stderr, false);
			code = al_cli_fail(AL_EXIT_SOFTWARE, "the flow setup made does not validate "
					   "(a bug in ailoop)");
		}
		if (chdir(cwd) < 0)
			code = al_cli_fail(AL_EXIT_SOFTWARE, "cannot go back to '%s': %s", cwd,
					   strerror(errno));
	}
	al_flow_free(flow);
	al_diags_release(&diags);
	al_remove_tree(tmpl);
	return code;
}

struct manifest {
	char **paths, **sums;
	size_t n, alloc;
};

static void manifest_add(struct manifest *m, const char *path, const char *sum)
{
	if (m->n == m->alloc) {
		m->alloc = m->alloc ? 2 * m->alloc : 16;
		m->paths = al_realloc(m->paths, m->alloc * sizeof(*m->paths));
		m->sums = al_realloc(m->sums, m->alloc * sizeof(*m->sums));
	}
	m->paths[m->n] = al_strdup(path);
	m->sums[m->n++] = al_strdup(sum);
}

static const char *manifest_get(const struct manifest *m, const char *path)
{
	for (size_t i = 0; i < m->n; i++)
		if (!strcmp(m->paths[i], path))
			return m->sums[i];
	return NULL;
}

static void manifest_release(struct manifest *m)
{
	al_strv_free(m->paths, m->n);
	al_strv_free(m->sums, m->n);
}

/* "SHA256  PATH" lines; anything else is skipped. */
static void manifest_read(struct manifest *m)
{
	struct al_strbuf sb = AL_STRBUF_INIT;

	if (al_strbuf_read_file(&sb, MANIFEST, 1 << 20) < 0) {
		al_strbuf_release(&sb);
		return;
	}
	for (char *p = sb.buf, *eol; p && *p; p = eol ? eol + 1 : NULL) {
		eol = strchr(p, '\n');
		if (eol)
			*eol = '\0';
		if (strlen(p) > 66 && strspn(p, "0123456789abcdef") == 64 && !strncmp(p + 64, "  ", 2)) {
			p[64] = '\0';
			manifest_add(m, p + 66, p);
		}
	}
	al_strbuf_release(&sb);
}

/*
 * Writes each file unless it is already as wanted, or the user changed it
 * since setup wrote it (kept, unless `force`); then the manifest. Says what
 * happened to each on stdout.
 */
static int write_files(const struct out_files *o, bool force, size_t *kept)
{
	struct manifest old = { 0 }, now = { 0 };
	struct al_strbuf man = AL_STRBUF_INIT;
	int err = 0;

	*kept = 0;
	manifest_read(&old);
	for (size_t i = 0; i < o->n && !err; i++) {
		const struct out_file *f = &o->v[i];
		struct al_strbuf disk = AL_STRBUF_INIT;
		const char *was = manifest_get(&old, f->path), *verb;
		char want[65], have[65];
		bool exists;

		al_sha256_hex(f->text.buf, f->text.len, want);
		exists = al_strbuf_read_file(&disk, f->path, 64 << 20) == 0;
		if (exists)
			al_sha256_hex(disk.buf, disk.len, have);
		al_strbuf_release(&disk);
		if (exists && !strcmp(have, want)) {
			verb = "Unchanged";
		} else if (exists && !force && !(was && !strcmp(was, have))) {
			printf("Kept      %s (%s; --force overwrites it)\n", f->path,
			       was ? "changed since setup wrote it" : "not written by setup");
			if (was)
				manifest_add(&now, f->path, was);
			(*kept)++;
			continue;
		} else {
			char *dir = al_strdup(f->path);

			*strrchr(dir, '/') = '\0';
			err = al_mkdirs(dir);
			free(dir);
			if (!err)
				err = al_write_atomic(f->path, f->text.buf, f->text.len);
			if (err)
				break;
			verb = exists ? "Updated" : "Created";
		}
		printf("%-9s %s\n", verb, f->path);
		manifest_add(&now, f->path, want);
	}
	if (!err) {
		al_strbuf_adds(&man, "# Written by 'ailoop setup': the sha256 of each file as setup last\n"
				     "# wrote it, so that it never overwrites a file you changed (unless\n"
				     "# --force). Commit it with the rest of .ai-loop/.\n");
		for (size_t i = 0; i < now.n; i++)
			al_strbuf_addf(&man, "%s  %s\n", now.sums[i], now.paths[i]);
		err = al_write_atomic(MANIFEST, man.buf, man.len);
	}
	al_strbuf_release(&man);
	manifest_release(&old);
	manifest_release(&now);
	return err < 0 ? al_cli_fail(AL_EXIT_SOFTWARE, "%s", al_errmsg()) : 0;
}

/* ---- the command ---------------------------------------------------------- */

static const struct al_template *flow_template(const char *name)
{
	char *path = al_xprintf("flows/%s.yaml", name);
	const struct al_template *t = al_template_find(path);

	free(path);
	return t;
}

static int bad_template(const char *name)
{
	struct al_strbuf sb = AL_STRBUF_INIT;
	const char *near = al_closest(name, template_names, AL_ARRAY_SIZE(template_names));

	for (size_t i = 0; i < AL_ARRAY_SIZE(template_names); i++)
		al_strbuf_addf(&sb, "%s%s", i ? ", " : "", template_names[i]);
	al_cli_fail(AL_EXIT_USAGE, "unknown template '%s'%s%s%s (templates: %s)", name,
		    near ? ": did you mean '" : "", near ? near : "", near ? "'?" : "", sb.buf);
	al_strbuf_release(&sb);
	return AL_EXIT_USAGE;
}

int cmd_setup(int argc, char **argv)
{
	enum { OPT_SENSOR = 1000, OPT_LEVELS, OPT_RUNNER, OPT_MAX, OPT_YES, OPT_FORCE, OPT_TEMPLATE };
	static const struct option longs[] = {
		{ "template", required_argument, NULL, OPT_TEMPLATE },
		{ "sensor", required_argument, NULL, OPT_SENSOR },
		{ "levels", required_argument, NULL, OPT_LEVELS },
		{ "runner", required_argument, NULL, OPT_RUNNER },
		{ "max-iterations", required_argument, NULL, OPT_MAX },
		{ "yes", no_argument, NULL, OPT_YES },
		{ "force", no_argument, NULL, OPT_FORCE },
		{ "help", no_argument, NULL, 0 },
		{ NULL, 0, NULL, 0 },
	};
	struct setup s = { 0 };
	struct sensors given = { 0 };
	struct out_files out = { 0 };
	const char *template_arg = NULL, *runner_arg = NULL;
	int c, code = 0, levels = 0, max_iter = 0;
	bool yes = false, force = false, tty, eof = false;
	size_t kept = 0;
	struct stat st;

	while ((c = al_cli_getopt(argc, argv, "y", longs, "setup", &code)) != -1) {
		char *eq;

		switch (c) {
		case '?':
			goto done;
		case OPT_TEMPLATE:
			template_arg = optarg;
			break;
		case OPT_SENSOR:
			eq = strchr(optarg, '=');
			if (!eq || eq == optarg || blank(eq + 1)) {
				code = al_cli_fail(AL_EXIT_USAGE, "--sensor '%s': give NAME=COMMAND", optarg);
				goto done;
			}
			*eq = '\0';
			if (!valid_id(optarg)) {
				code = al_cli_fail(AL_EXIT_USAGE, "--sensor: name '%s' must be letters, "
						   "digits, '_' and '-' (at most %d)", optarg, AL_ID_MAX);
				goto done;
			}
			if (!one_line(eq + 1)) {
				code = al_cli_fail(AL_EXIT_USAGE, "--sensor '%s': the command must be one "
						   "line of UTF-8 text", optarg);
				goto done;
			}
			sensors_add(&given, optarg, eq + 1, SENSOR_TARGET, NULL);
			break;
		case OPT_LEVELS:
			if (!parse_count(optarg, 1, MAX_LEVELS, &levels)) {
				code = al_cli_fail(AL_EXIT_USAGE, "--levels '%s': give 1, 2 or 3", optarg);
				goto done;
			}
			break;
		case OPT_RUNNER:
			runner_arg = optarg;
			break;
		case OPT_MAX:
			if (!parse_count(optarg, 1, 1000, &max_iter)) {
				code = al_cli_fail(AL_EXIT_USAGE, "--max-iterations '%s': give a number "
						   "from 1 to 1000", optarg);
				goto done;
			}
			break;
		case 'y':
		case OPT_YES:
			yes = true;
			break;
		case OPT_FORCE:
			force = true;
			break;
		}
	}
	if ((code = al_cli_operands(argc, 0, 0, "setup")))
		goto done;
	if (runner_arg && !known_runner(runner_arg)) {
		code = al_cli_fail(AL_EXIT_USAGE, "unknown runner '%s' (runners: claude, codex, gemini, "
				   "aider, opencode)", runner_arg);
		goto done;
	}
	if (template_arg && !flow_template(template_arg)) {
		code = bad_template(template_arg);
		goto done;
	}
	tty = !yes && isatty(STDIN_FILENO) && isatty(STDERR_FILENO);
	if ((code = al_cli_enter_repo()))
		goto done;
	detect(&s.detected);
	if (s.detected.n) {
		fprintf(stderr, "detected test command%s:", s.detected.n == 1 ? "" : "s");
		for (size_t i = 0; i < s.detected.n; i++)
			fprintf(stderr, "%s %s", i ? "," : "", s.detected.v[i].command);
		fputc('\n', stderr);
	} else if (!given.n) {
		fprintf(stderr, "no test command detected (no Makefile with a test or check target, "
			"CMakeLists.txt, package.json, Cargo.toml, go.mod, pyproject.toml, pom.xml, "
			"build.gradle, Gemfile or mix.exs here or one directory down)\n");
	}
	if (!template_arg && levels)
		template_arg = levels == 1 ? "single" : levels == 2 ? "nested" : "three-level";
	if (!template_arg && tty) {
		char *a;

		for (;;) {
			a = ask(&eof, "1", "how many levels of loops (1-3)");
			if (parse_count(a, 1, MAX_LEVELS, &levels)) {
				free(a);
				break;
			}
			fprintf(stderr, "  give 1, 2 or 3\n");
			free(a);
		}
		template_arg = levels == 1 ? "single" : levels == 2 ? "nested" : "three-level";
	}
	s.template_name = template_arg ? template_arg : "single";
	s.flow = flow_template(s.template_name);
	read_template(&s);
	if (levels && levels != s.nlevels) {
		code = al_cli_fail(AL_EXIT_USAGE, "--levels %d does not fit template '%s', which has "
				   "%d level%s", levels, s.template_name, s.nlevels,
				   s.nlevels == 1 ? "" : "s");
		goto done;
	}
	s.runner = al_strdup(runner_arg ? runner_arg : "claude");
	if (s.test_command)
		s.levels[0].slot = true;
	for (int lv = 0; lv < s.nlevels; lv++) {
		struct level *l = &s.levels[lv];

		if (max_iter)
			l->max_iterations = max_iter;
		if (l->slot)
			sensors_copy(&l->sensors, given.n ? &given : &s.detected);
		sensors_copy(&l->sensors, &l->fixed);
	}
	if (tty) {
		char *a;

		for (int lv = 0; lv < s.nlevels; lv++)
			ask_level(&s, lv, &eof);
		for (;;) {
			a = ask(&eof, s.runner, "runner (claude, codex, gemini, aider, opencode)");
			if (known_runner(a))
				break;
			fprintf(stderr, "  unknown runner '%s'\n", a);
			free(a);
		}
		free(s.runner);
		s.runner = a;
	}
	{
		bool any = false;

		for (int lv = 0; lv < s.nlevels; lv++)
			for (size_t i = 0; i < s.levels[lv].sensors.n; i++)
				any |= s.levels[lv].sensors.v[i].command != NULL;
		if (!any) {
			code = al_cli_fail(AL_EXIT_USAGE, "no test command: give one with --sensor "
					   "NAME=COMMAND (for example --sensor tests='make test')");
			goto done;
		}
	}
	if ((code = check_sensors(&s)))
		goto done;
	if (!s.test_command)
		warn_overlaps(&s);
	print_tree(&s, stderr);
	if (tty) {
		char *a = eof ? NULL : ask(&eof, "Y", "write .ai-loop/ with this flow? (Y/n)");
		bool no = !a || eof || (*a != 'y' && *a != 'Y');

		free(a);
		if (no) {
			fprintf(stderr, "setup cancelled: nothing written\n");
			code = AL_EXIT_FAILED;
			goto done;
		}
	}
	render(&s, &out);
	if ((code = validate(&out)) || (code = write_files(&out, force, &kept)))
		goto done;
	if (kept)
		fprintf(stderr, "kept %zu file%s you changed; 'ailoop setup --force' overwrites %s\n",
			kept, kept == 1 ? "" : "s", kept == 1 ? "it" : "them");
	fprintf(stderr, "next: 'ailoop validate', commit .ai-loop/, then 'ailoop run \"TASK\"'\n");
	if (stat(".git", &st) < 0)
		fprintf(stderr, "note: this is not a git repository; 'ailoop run' needs one with a "
			"commit (git init && git add -A && git commit)\n");
done:
	sensors_release(&given);
	out_release(&out);
	setup_release(&s);
	return code;
}
