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
 * project: for `ailoop setup`.
 */

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

