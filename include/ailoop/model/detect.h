#ifndef AILOOP_DETECT_H
#define AILOOP_DETECT_H

#include <stddef.h>

/*
 * The test commands of the project in the current directory, found from
 * the files that mark each kind of project (Makefile with a test or check
 * target, CMakeLists.txt, package.json, Cargo.toml, go.mod, pyproject.toml,
 * setup.py, pytest.ini, tox.ini,
 * requirements.txt beside a tests/ or test/ directory, pom.xml, build.gradle, Gemfile, mix.exs), here and
 * in each directory one level down (a monorepo: run as "cd DIR && ...";
 * hidden directories, node_modules, build, target, vendor and dist, and
 * names that are not UTF-8 text, are not looked in). One command found in all is named "tests"; otherwise each is
 * named after its tool (here) or its directory (and tool, when the
 * directory has several). Names are unique sensor names.
 */
struct al_test_cmd {
	char *name;
	char *command;
	const char *metrics; /* al_test_metrics() of the command */
};

struct al_test_cmds {
	struct al_test_cmd *v;
	size_t n, alloc;
};

void al_detect_tests(struct al_test_cmds *out);
void al_test_cmds_release(struct al_test_cmds *c);

/*
 * The `metrics:` block (static YAML text, ending in a newline) of a sensor
 * agent file running `command`, for what its test runner prints: pytest,
 * cargo test, go test, ctest, and jest, vitest, `node --test` or mocha (by
 * npm test or any other name); for `make test`, the runner its Makefile
 * names; else the "N passed" and "N failed" most runners print.
 */
const char *al_test_metrics(const char *command);

#endif
