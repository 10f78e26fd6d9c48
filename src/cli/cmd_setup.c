#include "setup.h"

#include "ailoop/cli/cli.h"
#include "ailoop/model/flow.h"
#include "ailoop/model/runner.h"
#include "ailoop/base/strbuf.h"
#include "ailoop/model/templates.h"
#include "ailoop/base/util.h"

#include <errno.h>
#include <stdarg.h>
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

static const char *const template_names[] = {
	"single", "nested", "three-level", "tdd", "reactree-tdd", "demo",
};


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
			char *cmd = setup_joined_commands(l);

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
		if (setup_valid_id(a))
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
				if (!*name || !strcmp(name, "-") || setup_valid_id(name))
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
			while (!cmd || !*cmd || !setup_one_line(cmd)) {
				if (cmd)
					fprintf(stderr, "  a command is one line of UTF-8 text\n");
				free(cmd);
				cmd = ask(eof, x ? x->command : "", "  command of '%s'", name);
				if (*eof && !*cmd)
					break;
			}
			while (*cmd && (!target || !setup_one_line(target))) {
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

	while ((c = al_cli_getopt(argc, argv, "y", longs, &code)) != -1) {
		char *eq;

		switch (c) {
		case '?':
			goto done;
		case OPT_TEMPLATE:
			template_arg = optarg;
			break;
		case OPT_SENSOR:
			eq = strchr(optarg, '=');
			if (!eq || eq == optarg || setup_blank(eq + 1)) {
				code = al_cli_fail(AL_EXIT_USAGE, "--sensor '%s': give NAME=COMMAND", optarg);
				goto done;
			}
			*eq = '\0';
			if (!setup_valid_id(optarg)) {
				code = al_cli_fail(AL_EXIT_USAGE, "--sensor: name '%s' must be letters, "
						   "digits, '_' and '-' (at most %d)", optarg, AL_ID_MAX);
				goto done;
			}
			if (!setup_one_line(eq + 1)) {
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
	if ((code = al_cli_operands(argc, argv, 0, 0)))
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
	setup_detect(&s.detected);
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
	setup_read_template(&s);
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
	setup_render(&s, &out);
	if ((code = setup_validate(&out)) || (code = setup_write_files(&out, force, &kept)))
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
	setup_out_release(&out);
	setup_release(&s);
	return code;
}
