#include "ailoop/model/detect.h"
#include "ailoop/model/flow.h"
#include "ailoop/base/fsutil.h"
#include "ailoop/base/strbuf.h"
#include "ailoop/base/util.h"

#include <dirent.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/*
 * Which test commands a project has, from the files that mark each kind of
 * project, and the metrics that read what each runner prints: for
 * `ailoop setup`.
 */

/*
 * The `metrics:` block of a sensor agent file for each runner, each
 * pattern checked against what the runner printed (tests/fixtures/sensors).
 * pytest's summary line lists its counts ("1 failed, 3 passed in 0.03s")
 * and names no failures when none failed; cargo prints a `test result:`
 * line for each test binary, the doc-tests' too; `go test` prints no count
 * but a `--- FAIL:` line a failed test; ctest a line a test; jest, vitest,
 * `node --test` (its TAP and spec reporters) and mocha a total each; Maven's
 * Surefire a summary a module (the lines without a test class), rspec and
 * ExUnit (mix) one line of examples or tests and failures.
 */
static const struct {
	const char *tool, *metrics;
} runner_metrics[] = {
	{ "pytest", "metrics:\n"
		    "  passed: '(?m)^=*\\s*(?:\\d+ \\w+, )*(\\d+) passed\\b'\n"
		    "  failed: {pattern: '(?m)^=*\\s*(?:\\d+ \\w+, )*(\\d+) failed\\b', default: 0}\n"
		    "  errors: {pattern: '(?m)^=*\\s*(?:\\d+ \\w+, )*(\\d+) errors?\\b', default: 0}\n" },
	{ "cargo", "metrics:\n"
		   "  passed: {pattern: 'test result: \\w+\\. (\\d+) passed', sum: true}\n"
		   "  failed: {pattern: 'test result: \\w+\\. \\d+ passed; (\\d+) failed', sum: true}\n" },
	{ "go", "metrics:\n"
		"  failed: {pattern: '(?m)^\\s*--- FAIL:', count: true}\n"
		"  packages_ok: {pattern: '(?m)^ok\\s', count: true}\n"
		"  packages_failed: {pattern: '(?m)^FAIL\\t', count: true}\n" },
	{ "ctest", "metrics:\n"
		   "  passed: {pattern: '(?m)^\\s*\\d+/\\d+ Test +#\\d+: .*\\sPassed\\s', count: true}\n"
		   "  failed: '(\\d+) tests failed out of \\d+'\n"
		   "  total: 'tests failed out of (\\d+)'\n" },
	{ "mvn", "metrics:\n"
		 "  tests: {pattern: '(?m)^\\[\\w+\\] Tests run: (\\d+), Failures: \\d+, Errors: \\d+, Skipped: \\d+$', sum: true}\n"
		 "  failed: {pattern: '(?m)^\\[\\w+\\] Tests run: \\d+, Failures: (\\d+), Errors: \\d+, Skipped: \\d+$', sum: true}\n"
		 "  errors: {pattern: '(?m)^\\[\\w+\\] Tests run: \\d+, Failures: \\d+, Errors: (\\d+), Skipped: \\d+$', sum: true}\n" },
	{ "rspec", "metrics:\n"
		   "  examples: '(\\d+) examples?, \\d+ failures?'\n"
		   "  failed: '\\d+ examples?, (\\d+) failures?'\n" },
	{ "mix", "metrics:\n"
		 "  tests: '(\\d+) tests?, \\d+ failures?'\n"
		 "  failed: '\\d+ tests?, (\\d+) failures?'\n" },
	{ "npm", "metrics:\n"
		 "  passed: '(?m)(?|^\\s*Tests:?\\s+(?:.*\\D)?(\\d+) passed|^(?:# |\xe2\x84\xb9 )pass (\\d+)$|^\\s+(\\d+) passing)'\n"
		 "  failed: {pattern: '(?m)(?|^\\s*Tests:?\\s+(?:.*\\D)?(\\d+) failed|^(?:# |\xe2\x84\xb9 )fail (\\d+)$|^\\s+(\\d+) failing)', default: 0}\n" },
};

/* What other runners print, as most do ("3 passed, 1 failed"). */
static const char generic_metrics[] = "metrics:\n"
				      "  failed: '(\\d+) failed'\n"
				      "  passed: '(\\d+) passed'\n";

static const char *metrics_of(const char *tool)
{
	for (size_t i = 0; i < AL_ARRAY_SIZE(runner_metrics); i++)
		if (!strcmp(runner_metrics[i].tool, tool))
			return runner_metrics[i].metrics;
	return generic_metrics;
}

/*
 * The runner a command (or the Makefile it runs) names, by the words that
 * start each one: `python3 -m pytest`, `cargo test`, `npx jest`.
 */
static const char *runner_named(const char *text)
{
	static const struct {
		const char *word, *tool;
	} words[] = {
		{ "pytest", "pytest" },	  { "cargo test", "cargo" }, { "go test", "go" },
		{ "ctest", "ctest" },	  { "node --test", "npm" },  { "jest", "npm" },
		{ "vitest", "npm" },	  { "mocha", "npm" },	     { "npm test", "npm" },
		{ "npm run test", "npm" }, { "yarn test", "npm" },    { "pnpm test", "npm" },
		{ "mvn", "mvn" },	  { "mvnw", "mvn" },	     { "rspec", "rspec" },
		{ "mix test", "mix" },
	};
	const char *best = NULL, *at = NULL;

	for (size_t i = 0; i < AL_ARRAY_SIZE(words); i++) {
		size_t len = strlen(words[i].word);

		/* a word of its own: not a directory's name (cd pytest-plugin && cargo test) */
		for (const char *w = strstr(text, words[i].word); w; w = strstr(w + 1, words[i].word)) {
			if ((w == text || strchr(" \t\n/;&|(", w[-1])) && strchr(" \t\n;&|)", w[len]) &&
			    (!at || w < at)) {
				at = w;
				best = words[i].tool;
				break;
			}
		}
	}
	return best;
}

const char *al_test_metrics(const char *command)
{
	/* what runs, past a monorepo's `cd DIR && ` */
	const char *run = al_starts_with(command, "cd ") && strstr(command, "&& ")
				  ? strstr(command, "&& ") + 3 : command;
	const char *tool = runner_named(run);
	struct al_strbuf mk = AL_STRBUF_INIT;

	/* `make test`: what the Makefile runs (here, or where the command goes) */
	if (!tool && strstr(command, "make")) {
		const char *cd = al_starts_with(command, "cd ") ? command + 3 : NULL;
		size_t dl = cd ? strcspn(cd, " &;'") : 0;
		char *path = al_xprintf("%.*s%sMakefile", (int)dl, cd ? cd : "", dl ? "/" : "");

		if (al_strbuf_read_file(&mk, path, 1 << 20) == 0)
			tool = runner_named(mk.buf);
		free(path);
	}
	al_strbuf_release(&mk);
	return tool ? metrics_of(tool) : generic_metrics;
}

/*
 * Whether the Makefile `path` has a rule for `target`: a line (not a
 * recipe's) whose targets before its ':' name it ("test:", "test check:",
 * "test::"), not an assignment (":=", "::=", or an '=' before the ':').
 */
static bool make_has(const char *path, const char *target)
{
	struct al_strbuf sb = AL_STRBUF_INIT;
	size_t tl = strlen(target);
	bool found = false;

	if (al_strbuf_read_file(&sb, path, 1 << 20) < 0)
		return false;
	for (const char *p = sb.buf; p && *p && !found; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		size_t len = strcspn(p, "\n"), colon = strcspn(p, ":\n");

		if (*p == '\t' || *p == '#' || colon >= len || memchr(p, '=', colon) ||
		    p[colon + 1] == '=' || (p[colon + 1] == ':' && p[colon + 2] == '='))
			continue;
		for (size_t i = 0; i < colon && !found;) {
			size_t w;

			i += strspn(p + i, " \t");
			w = strcspn(p + i, " \t:");
			found = w == tl && !strncmp(p + i, target, tl);
			i += w;
		}
	}
	al_strbuf_release(&sb);
	return found;
}

/*
 * Whether the package.json `path` has a test script: `npm test` of one
 * without fails, and so does npm's placeholder (`npm init` writes `echo
 * "Error: no test specified" && exit 1`): a sensor that can never pass.
 */
static bool npm_has_test(const char *path)
{
	json_t *pkg = json_load_file(path, 0, NULL);
	const char *test = json_string_value(json_object_get(json_object_get(pkg, "scripts"),
							     "test"));
	bool found = test && test[strspn(test, " \t")] && !strstr(test, "no test specified");

	json_decref(pkg);
	return found;
}

static bool has_file(const char *dir, const char *name)
{
	char *p = al_xprintf("%s%s", dir, name);
	bool found = al_file_exists(p);

	free(p);
	return found;
}

static bool has_dir(const char *dir, const char *name)
{
	char *p = al_xprintf("%s%s", dir, name);
	struct stat st;
	bool found = stat(p, &st) == 0 && S_ISDIR(st.st_mode);

	free(p);
	return found;
}

struct found {
	const char *tool;
	char *command;
};

/* The test commands of the project in `dir` ("" or "sub/"), to run from the root. */
static size_t detect_dir(const char *dir, struct found *f, size_t max)
{
	static const struct {
		const char *file, *tool, *command;
	} kinds[] = {
		{ "CMakeLists.txt", "ctest", "ctest --test-dir build" },
		{ "package.json", "npm", "npm test" },
		{ "Cargo.toml", "cargo", "cargo test" },
		{ "go.mod", "go", "go test ./..." },
		{ "pyproject.toml", "pytest", "pytest" },
		{ "setup.py", "pytest", "pytest" },
		{ "pytest.ini", "pytest", "pytest" },
		{ "tox.ini", "pytest", "pytest" },
		{ "requirements.txt", "pytest", "pytest" }, /* with a tests/ or test/ directory */
		{ "pom.xml", "mvn", "mvn test" },
		{ "build.gradle", "gradle", "gradle test" },
		{ "build.gradle.kts", "gradle", "gradle test" },
		{ "Gemfile", "rspec", "bundle exec rspec" },
		{ "mix.exs", "mix", "mix test" },
	};
	size_t n = 0;
	char *mk = al_xprintf("%sMakefile", dir);
	const char *make = NULL;

	if (al_file_exists(mk))
		make = make_has(mk, "test") ? "make test" : make_has(mk, "check") ? "make check" : NULL;
	free(mk);
	if (make && n < max)
		f[n++] = (struct found){ "make", al_strdup(make) };
	for (size_t k = 0; k < AL_ARRAY_SIZE(kinds) && n < max; k++) {
		bool dup = false;

		if (!has_file(dir, kinds[k].file))
			continue;
		if (!strcmp(kinds[k].file, "requirements.txt") && !has_dir(dir, "tests") &&
		    !has_dir(dir, "test"))
			continue; /* the dependencies of something else than a tested package */
		if (!strcmp(kinds[k].tool, "npm")) {
			char *pkg = al_xprintf("%s%s", dir, kinds[k].file);
			bool test = npm_has_test(pkg);

			free(pkg);
			if (!test)
				continue;
		}
		for (size_t i = 0; i < n; i++)
			dup |= !strcmp(f[i].tool, kinds[k].tool);
		if (!dup)
			f[n++] = (struct found){ kinds[k].tool, al_strdup(kinds[k].command) };
	}
	for (size_t i = 0; *dir && i < n; i++) {
		struct al_strbuf sb = AL_STRBUF_INIT;
		size_t len = strlen(dir) - 1;
		/* a name cd would take for an option (-n) goes as a path (./-n) */
		const char *path = dir[0] == '-' ? "./" : "";

		al_strbuf_adds(&sb, "cd ");
		if (strspn(dir, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-+") == len) {
			al_strbuf_adds(&sb, path);
			al_strbuf_add(&sb, dir, len);
		} else { /* quoted for sh */
			al_strbuf_addch(&sb, '\'');
			al_strbuf_adds(&sb, path);
			for (size_t k = 0; k < len; k++)
				if (dir[k] == '\'')
					al_strbuf_adds(&sb, "'\\''");
				else
					al_strbuf_addch(&sb, dir[k]);
			al_strbuf_addch(&sb, '\'');
		}
		al_strbuf_addf(&sb, " && %s", f[i].command);
		free(f[i].command);
		f[i].command = al_strbuf_detach(&sb, NULL);
	}
	return n;
}

/* A sensor name from a directory name: letters, digits, '_' and '-'. */
static char *name_part(const char *s)
{
	char *n = al_strdup(s);

	for (char *p = n; *p; p++)
		if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
		      (*p >= '0' && *p <= '9') || *p == '_' || *p == '-'))
			*p = '-';
	return n;
}

static bool taken(const struct al_test_cmds *c, const char *name)
{
	for (size_t i = 0; i < c->n; i++)
		if (!strcmp(c->v[i].name, name))
			return true;
	return false;
}

static bool valid_name(const char *s)
{
	return al_id_valid(s) && strlen(s) <= AL_ID_MAX;
}

static void add(struct al_test_cmds *c, char *name, char *command)
{
	if (c->n == c->alloc) {
		c->alloc = c->alloc ? 2 * c->alloc : 8;
		c->v = al_realloc(c->v, c->alloc * sizeof(*c->v));
	}
	c->v[c->n].name = name;
	c->v[c->n].metrics = al_test_metrics(command);
	c->v[c->n++].command = command;
}

void al_test_cmds_release(struct al_test_cmds *c)
{
	for (size_t i = 0; i < c->n; i++) {
		free(c->v[i].name);
		free(c->v[i].command);
	}
	free(c->v);
	memset(c, 0, sizeof(*c));
}

/*
 * The root's test commands and those of each directory one level down (a
 * monorepo). One found in all is called "tests"; otherwise each is named
 * after its directory and tool.
 */
void al_detect_tests(struct al_test_cmds *out)
{
	static const char *const skip[] = { "node_modules", "build", "target", "vendor", "dist" };
	struct found f[64];
	const char *dirs_of[64];
	size_t n = 0;
	char **subs = NULL;
	size_t nsubs = 0, asubs = 0;
	DIR *d = opendir(".");
	struct dirent *e;

	n = detect_dir("", f, AL_ARRAY_SIZE(f));
	for (size_t i = 0; i < n; i++)
		dirs_of[i] = "";
	while (d && (e = readdir(d))) {
		struct stat st;
		bool skipped = e->d_name[0] == '.' || !al_utf8_valid(e->d_name, strlen(e->d_name));

		for (const char *c = e->d_name; *c; c++)
			skipped |= (unsigned char)*c < 0x20; /* not a name for a command line */

		for (size_t k = 0; k < AL_ARRAY_SIZE(skip); k++)
			skipped |= !strcmp(e->d_name, skip[k]);
		if (skipped || stat(e->d_name, &st) < 0 || !S_ISDIR(st.st_mode))
			continue;
		if (nsubs == asubs) {
			asubs = asubs ? 2 * asubs : 16;
			subs = al_realloc(subs, asubs * sizeof(*subs));
		}
		subs[nsubs++] = al_strdup(e->d_name);
	}
	if (d)
		closedir(d);
	al_strv_sort(subs, nsubs);
	for (size_t i = 0; i < nsubs && n < AL_ARRAY_SIZE(f); i++) {
		char *dir = al_xprintf("%s/", subs[i]);
		size_t k = detect_dir(dir, f + n, AL_ARRAY_SIZE(f) - n);

		for (size_t j = 0; j < k; j++)
			dirs_of[n + j] = subs[i];
		n += k;
		free(dir);
	}
	for (size_t i = 0; i < n; i++) {
		char *base, *name;

		if (n == 1)
			base = al_strdup("tests");
		else if (!*dirs_of[i])
			base = al_strdup(f[i].tool);
		else {
			char *part = name_part(dirs_of[i]);
			size_t same = 0;

			for (size_t j = 0; j < n; j++)
				same += dirs_of[j] == dirs_of[i];
			base = same > 1 ? al_xprintf("%s-%s", part, f[i].tool) : al_strdup(part);
			free(part);
		}
		name = al_strdup(base);
		for (int k = 2; taken(out, name) || !valid_name(name); k++) {
			free(name);
			name = al_xprintf("%s-%d", valid_name(base) ? base : "tests", k);
		}
		add(out, name, f[i].command);
		free(base);
	}
	for (size_t i = 0; i < nsubs; i++)
		free(subs[i]);
	free(subs);
}

