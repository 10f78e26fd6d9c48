#ifndef AILOOP_DETECT_H
#define AILOOP_DETECT_H

#include <stddef.h>

/*
 * The test commands of the project in the current directory, found from
 * the files that mark each kind of project (Makefile with a test or check
 * target, CMakeLists.txt, package.json, Cargo.toml, go.mod, pyproject.toml,
 * setup.py, pytest.ini, pom.xml, build.gradle, Gemfile, mix.exs), here and
 * in each directory one level down (a monorepo: run as "cd DIR && ...";
 * hidden directories, node_modules, build, target, vendor and dist, and
 * names that are not UTF-8 text, are not looked in). One command found in all is named "tests"; otherwise each is
 * named after its tool (here) or its directory (and tool, when the
 * directory has several). Names are unique sensor names.
 */
struct al_test_cmd {
	char *name;
	char *command;
};

struct al_test_cmds {
	struct al_test_cmd *v;
	size_t n, alloc;
};

void al_detect_tests(struct al_test_cmds *out);
void al_test_cmds_release(struct al_test_cmds *c);

#endif
