#include "ailoop/model/detect.h"
#include "ailoop/base/fsutil.h"
#include "unit.h"

#include <stdio.h>
#include <string.h>

/* a package.json whose `npm test` runs something */
#define NPM_TESTED "{\"scripts\": {\"test\": \"node test.js\"}}"

static struct al_test_cmds found;

static void setup(void)
{
	unit_enter_tmpdir();
}

static void teardown(void)
{
	al_test_cmds_release(&found);
	unit_leave_tmpdir();
}

TestSuite(detect, .init = setup, .fini = teardown);

static void put(const char *path, const char *text)
{
	char dir[256];
	char *slash;

	snprintf(dir, sizeof(dir), "%s", path);
	if ((slash = strrchr(dir, '/'))) {
		*slash = '\0';
		cr_assert_eq(al_mkdirs(dir), 0);
	}
	cr_assert_eq(al_write_atomic(path, text, strlen(text)), 0);
}

Test(detect, nothing_in_an_empty_directory)
{
	al_detect_tests(&found);
	cr_assert_eq(found.n, 0);
}

Test(detect, a_makefile_target_test_before_check)
{
	put("Makefile", "check:\n\ttrue\ntest : all\n\ttrue\n");
	al_detect_tests(&found);
	cr_assert_eq(found.n, 1);
	cr_assert_str_eq(found.v[0].name, "tests");
	cr_assert_str_eq(found.v[0].command, "make test");
}

Test(detect, a_variable_is_not_a_target)
{
	put("Makefile", "test := x\ncheck ?= y\n");
	al_detect_tests(&found);
	cr_assert_eq(found.n, 0);
}

Test(detect, a_target_among_others_of_a_rule)
{
	put("Makefile", "all:\n\tcc x.c\nbuild check test: all\n\t./t\n");
	al_detect_tests(&found);
	cr_assert_eq(found.n, 1);
	cr_assert_str_eq(found.v[0].command, "make test");
}

Test(detect, neither_a_recipe_line_nor_an_assignment_is_a_rule)
{
	put("Makefile", "all:\n\ttest: not a rule\nX = test: nor this\ntests: x\ncheck::= y\n");
	al_detect_tests(&found);
	cr_assert_eq(found.n, 0);
}

Test(detect, one_pytest_for_all_python_markers)
{
	put("pyproject.toml", "");
	put("setup.py", "");
	put("pytest.ini", "");
	al_detect_tests(&found);
	cr_assert_eq(found.n, 1);
	cr_assert_str_eq(found.v[0].command, "pytest");
}

Test(detect, a_monorepo_names_sensors_after_directories)
{
	put("go.mod", "module x\n");
	put("web app/package.json", NPM_TESTED);
	put("svc/Cargo.toml", "");
	put("svc/Gemfile", "");
	put("node_modules/x/package.json", NPM_TESTED);
	put(".git/package.json", NPM_TESTED);
	put("a/b/package.json", NPM_TESTED);
	al_detect_tests(&found);
	cr_assert_eq(found.n, 4);
	cr_assert_str_eq(found.v[0].name, "go");
	cr_assert_str_eq(found.v[0].command, "go test ./...");
	cr_assert_str_eq(found.v[1].name, "svc-cargo");
	cr_assert_str_eq(found.v[1].command, "cd svc && cargo test");
	cr_assert_str_eq(found.v[2].name, "svc-rspec");
	cr_assert_str_eq(found.v[2].command, "cd svc && bundle exec rspec");
	cr_assert_str_eq(found.v[3].name, "web-app", "a name is letters, digits, '_' and '-'");
	cr_assert_str_eq(found.v[3].command, "cd 'web app' && npm test", "quoted for sh");
}

Test(detect, npm_only_with_a_test_script)
{
	put("none/package.json", "{\"name\": \"x\"}");
	put("placeholder/package.json", "{\"scripts\": {\"test\": \"echo \\\"Error: no test "
		"specified\\\" && exit 1\"}}");
	put("empty/package.json", "{\"scripts\": {\"test\": \" \"}}");
	put("broken/package.json", "{\"scripts\": ");
	put("tested/package.json", "{\"scripts\": {\"test\": \"vitest run\"}}");
	al_detect_tests(&found);
	cr_assert_eq(found.n, 1);
	cr_assert_str_eq(found.v[0].command, "cd tested && npm test");
}

Test(detect, a_quote_in_a_directory_name)
{
	put("it's/mix.exs", "");
	al_detect_tests(&found);
	cr_assert_eq(found.n, 1);
	cr_assert_str_eq(found.v[0].command, "cd 'it'\\''s' && mix test");
	cr_assert_str_eq(found.v[0].name, "tests");
}

Test(detect, a_directory_named_like_an_option_goes_as_a_path)
{
	put("-n/mix.exs", "");
	put("-x y/go.mod", "module x\n");
	al_detect_tests(&found);
	cr_assert_eq(found.n, 2);
	cr_assert_str_eq(found.v[0].command, "cd ./-n && mix test", "not cd's option -n");
	cr_assert_str_eq(found.v[1].command, "cd './-x y' && go test ./...");
}

Test(detect, a_directory_whose_name_is_not_text_is_not_looked_in)
{
	put("bad\xff/package.json", NPM_TESTED);
	put("tab\there/package.json", NPM_TESTED);
	al_detect_tests(&found);
	cr_assert_eq(found.n, 0);
}
