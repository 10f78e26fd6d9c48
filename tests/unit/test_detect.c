#include "ailoop/model/detect.h"
#include "ailoop/model/agent.h"
#include "ailoop/model/metric.h"
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

/* ---- metrics over what each runner printed ----------------------------- */

/*
 * The metrics setup writes for `command`, loaded from an agent file as a
 * run loads them, read over the fixture `out` (tests/fixtures/sensors/, the
 * output of the real runner): "name=value"
 * for each, "name=null" for none, joined by spaces.
 */
static char *metrics_over(const char *command, const char *out)
{
	struct al_agents agents = { 0 };
	struct al_diags diags = AL_DIAGS_INIT;
	struct al_strbuf text = AL_STRBUF_INIT, sb = AL_STRBUF_INIT;
	struct al_pos ref = { "flow.yaml", 1, 1 };
	struct al_agent *a;
	char *path = al_xprintf("%s/sensors/%s", FIXTURES, out);

	al_strbuf_addf(&sb, "---\nname: tests\ncommand: '%s'\n%s---\n", command,
		       al_test_metrics(command));
	put("sensor.md", sb.buf);
	al_strbuf_reset(&sb);
	a = al_agents_load(&agents, "sensor.md", ref, &diags);
	cr_assert(a->loaded, "the metrics of '%s' load: %s", command,
		  diags.n ? diags.v[0].msg : "");
	cr_assert_eq(al_strbuf_read_file(&text, path, 1 << 20), 0, "%s", path);
	for (size_t i = 0; i < a->nmetrics; i++) {
		char *v;

		cr_assert_eq(al_metric_read(&a->metrics[i], text.buf, text.len, &v), 0);
		al_strbuf_addf(&sb, "%s%s=%s", i ? " " : "", a->metrics[i].name, v ? v : "null");
		free(v);
	}
	free(path);
	al_strbuf_release(&text);
	al_agents_release(&agents);
	al_diags_release(&diags);
	return al_strbuf_detach(&sb, NULL);
}

static void assert_metrics(const char *command, const char *out, const char *want)
{
	char *got = metrics_over(command, out);

	cr_assert_str_eq(got, want, "'%s' over %s: %s", command, out, got);
	free(got);
}

Test(detect, pytest_metrics_say_failed_0_when_all_pass)
{
	assert_metrics("pytest", "pytest-pass.txt", "passed=3 failed=0 errors=0");
	assert_metrics("pytest", "pytest-fail.txt", "passed=3 failed=1 errors=0");
	/* a collection error: no test ran, none failed */
	assert_metrics("pytest", "pytest-error.txt", "passed=null failed=0 errors=1");
}

Test(detect, cargo_metrics_add_every_test_result_line)
{
	/* unit tests 2, the integration test 1, the doc-tests 2 */
	assert_metrics("cargo test", "cargo-pass.txt", "passed=5 failed=0");
	assert_metrics("cargo test", "cargo-fail.txt", "passed=4 failed=1");
}

Test(detect, node_test_metrics_read_tap_and_spec)
{
	assert_metrics("npm test", "node-test-pass.txt", "passed=5 failed=0");
	assert_metrics("npm test", "node-test-fail.txt", "passed=5 failed=1");
	assert_metrics("node --test", "node-test-spec-fail.txt", "passed=5 failed=1");
}

Test(detect, jest_and_vitest_metrics_read_the_tests_line)
{
	assert_metrics("npm test", "jest-pass.txt", "passed=3 failed=0");
	assert_metrics("npm test", "jest-fail.txt", "passed=2 failed=1");
	assert_metrics("npx vitest run", "vitest-pass.txt", "passed=3 failed=0");
	assert_metrics("npm test", "vitest-fail.txt", "passed=2 failed=1");
}

Test(detect, go_metrics_count_failed_tests_and_packages)
{
	assert_metrics("go test ./...", "go-test-pass.txt",
		       "failed=0 packages_ok=2 packages_failed=0");
	/* the test and its failed subtest */
	assert_metrics("go test ./...", "go-test-fail.txt",
		       "failed=2 packages_ok=1 packages_failed=1");
	assert_metrics("go test -v ./...", "go-test-v-fail.txt",
		       "failed=2 packages_ok=1 packages_failed=1");
}

Test(detect, ctest_metrics_count_passed_tests)
{
	assert_metrics("ctest --test-dir build", "ctest-pass.txt",
		       "passed=3 failed=0 total=3");
	assert_metrics("ctest --test-dir build", "ctest-fail.txt",
		       "passed=2 failed=1 total=3");
}

Test(detect, mvn_rspec_and_mix_metrics_read_their_summaries)
{
	/* mvn-*.txt and mix-*.txt are written by hand (README.md there) */
	assert_metrics("mvn test", "mvn-pass.txt", "tests=5 failed=0 errors=0");
	assert_metrics("mvn test", "mvn-fail.txt", "tests=5 failed=1 errors=0");
	assert_metrics("./mvnw -q test", "mvn-fail.txt", "tests=5 failed=1 errors=0");
	assert_metrics("bundle exec rspec", "rspec-pass.txt", "examples=3 failed=0");
	assert_metrics("bundle exec rspec", "rspec-fail.txt", "examples=3 failed=1");
	assert_metrics("mix test", "mix-pass.txt", "tests=3 failed=0");
	assert_metrics("mix test", "mix-fail.txt", "tests=3 failed=1");
}

Test(detect, make_metrics_are_those_of_the_runner_its_makefile_names)
{
	put("Makefile", "test:\n\tpython3 -m pytest -q tests\n");
	assert_metrics("make test", "pytest-pass.txt", "passed=3 failed=0 errors=0");
	put("sub/Makefile", "check:\n\tcargo test --workspace\n");
	assert_metrics("cd sub && make check", "cargo-pass.txt", "passed=5 failed=0");
	/* a directory named like a runner is not the runner */
	put("pytest-plugin/Makefile", "test:\n\tcargo test\n");
	assert_metrics("cd pytest-plugin && make test", "cargo-pass.txt", "passed=5 failed=0");
	assert_metrics("cd pytest-plugin && cargo test", "cargo-pass.txt", "passed=5 failed=0");
	/* a runner it does not name: what most print */
	put("Makefile", "test:\n\t./run-tests\n");
	assert_metrics("make test", "pytest-fail.txt", "failed=1 passed=3");
}

Test(detect, a_python_project_of_requirements_and_tests)
{
	put("requirements.txt", "requests\n");
	al_detect_tests(&found);
	cr_assert_eq(found.n, 0, "requirements alone are no tests");
	put("tests/test_x.py", "def test_x():\n    pass\n");
	al_detect_tests(&found);
	cr_assert_eq(found.n, 1);
	cr_assert_str_eq(found.v[0].command, "pytest");
	cr_assert(strstr(found.v[0].metrics, "failed: {pattern:"), "%s", found.v[0].metrics);
}
