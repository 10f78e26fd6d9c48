#!/usr/bin/env bash
# `ailoop setup` without a terminal: detects each kind of project's test
# command, writes .ai-loop/ from every template so that it validates and
# plans, is idempotent, keeps files the user changed unless --force, refuses
# bad input, and the flow it writes runs.
. "$(dirname "$0")/lib.sh"

# A stand-in for the claude CLI, so that `run --dry-run` can plan.
mkdir -p "$TEST_TMP/bin"
printf '#!/bin/sh\nexit 0\n' >"$TEST_TMP/bin/claude"
cp "$TEST_TMP/bin/claude" "$TEST_TMP/bin/codex"
chmod +x "$TEST_TMP/bin/claude" "$TEST_TMP/bin/codex"

# detect DIR FILE [CONTENT] EXPECTED: a project holding FILE gets EXPECTED
detect() {
	local dir=$TEST_TMP/detect/$1 file=$2 content=$3 want=$4
	new_repo "$dir"
	mkdir -p "$(dirname "$dir/$file")"
	printf '%s' "$content" >"$dir/$file"
	cd "$dir"
	run "$AILOOP" setup
	expect_rc 0 "setup in a project with $file"
	expect_in "$err" "detected test command: $want" "$file is detected as '$want'"
	expect_in "$(cat .ai-loop/agents/loop-sensor-tests.md 2>/dev/null)" "command: '$want'" \
		"the sensor of a project with $file runs '$want'"
	cd "$TEST_TMP"
}
detect make Makefile $'all:\n\tcc x.c\ntest: all\n\t./t\n' "make test"
detect make-check Makefile $'check:\n\t./t\n' "make check"
detect cmake CMakeLists.txt 'project(x C)' "ctest --test-dir build"
detect npm package.json '{"scripts": {"test": "node test.js"}}' "npm test"
detect cargo Cargo.toml '[package]' "cargo test"
detect go go.mod 'module x' "go test ./..."
detect pyproject pyproject.toml '[project]' "pytest"
detect setup-py setup.py '' "pytest"
detect pytest-ini pytest.ini '[pytest]' "pytest"
detect maven pom.xml '<project/>' "mvn test"
detect gradle build.gradle '' "gradle test"
detect ruby Gemfile '' "bundle exec rspec"
detect mix mix.exs '' "mix test"

# A package.json without a test script, or with the one `npm init` writes
# (which fails), is not a test command.
for pkg in '{"name": "x"}' '{"scripts": {"test": "echo \"Error: no test specified\" && exit 1"}}'; do
	R=$TEST_TMP/npm-untested
	rm -rf "$R" && new_repo "$R"
	printf '%s' "$pkg" >"$R/package.json"
	cd "$R"
	run "$AILOOP" setup
	expect_rc 64 "setup with package.json $pkg"
	expect_in "$err" "no test command detected" "package.json $pkg has no test command"
done

# A Makefile without a test or check target is not a test command.
R=$TEST_TMP/no-target
new_repo "$R"
printf 'all:\n\tcc x.c\ntestdata := x\n' >"$R/Makefile"
cd "$R"
run "$AILOOP" setup
expect_rc 64 "setup with no test command"
expect_in "$err" "no test command detected" "setup says it found no test command"
expect_in "$err" "ailoop: error: no test command: give one with --sensor NAME=COMMAND" \
	"setup says how to give one"
expect_eq "$(ls -A "$R/.ai-loop" 2>/dev/null)" "" "nothing is written without a test command"

# A monorepo: the root and each directory one level down are projects.
R=$TEST_TMP/mono
new_repo "$R"
printf 'test:\n\ttrue\n' >"$R/Makefile"
mkdir -p "$R/web" "$R/api" "$R/tools/deep" "$R/node_modules/x" "$R/.hidden"
printf '{"scripts": {"test": "jest"}}' >"$R/web/package.json"
printf 'module api' >"$R/api/go.mod"
printf '[package]' >"$R/api/Cargo.toml"
printf '{}' >"$R/node_modules/x/package.json"
printf '{}' >"$R/.hidden/package.json"
printf '{}' >"$R/tools/deep/package.json"
cd "$R"
run "$AILOOP" setup --yes
expect_rc 0 "setup in a monorepo"
expect_in "$err" "detected test commands: make test, cd api && cargo test, cd api && go test ./..., cd web && npm test" \
	"setup finds the root's and each subproject's test command"
expect_in "$err" "sensor web: \$ cd web && npm test" "a subproject's sensor is named after its directory"
expect_in "$err" "sensor api-cargo: \$ cd api && cargo test" \
	"a directory with two projects names each sensor after the tool too"
expect_in "$err" "sensor make: \$ make test" "the root's sensor is named after its tool"
expect_in "$(cat .ai-loop/agents/loop-sensor-web.md)" "command: 'cd web && npm test'" \
	"each sensor has its agent file"
expect_in "$(cat .ai-loop/flow.yaml)" "    - .ai-loop/agents/loop-sensor-api-go.md" \
	"each sensor is in the flow"
expect_not_in "$err" "node_modules" "node_modules is not a project"
expect_not_in "$err" "hidden" "hidden directories are not projects"
expect_not_in "$err" "deep" "projects two levels down are not looked for"
run "$AILOOP" validate
expect_rc 0 "the monorepo's flow validates"

# Every template validates and plans.
for t in single nested three-level tdd reactree-tdd demo; do
	R=$TEST_TMP/tpl-$t
	new_repo "$R"
	printf 'test:\n\ttrue\n' >"$R/Makefile"
	cd "$R"
	run "$AILOOP" setup --template "$t"
	expect_rc 0 "setup --template $t"
	expect_in "$err" "flow (template $t, runner claude):" "setup shows the $t flow"
	run "$AILOOP" validate
	expect_rc 0 "template $t validates"
	git add -A && git commit -qm "ailoop setup"
	run env PATH="$TEST_TMP/bin:$PATH" "$AILOOP" run --dry-run "make the tests pass"
	expect_rc 0 "template $t plans"
	expect_in "$out" "make test" "template $t runs the detected test command"
done
expect_in "$(cat "$TEST_TMP/tpl-reactree-tdd/.ai-loop/flow.yaml")" \
	"condition: {type: command, expression: 'make test'}" "reactree-tdd loops until the tests pass"
test ! -e "$TEST_TMP/tpl-reactree-tdd/.ai-loop/agents/loop-sensor-tests.md" && pass ||
	fail "reactree-tdd writes no sensor it does not use"
expect_in "$(cat "$TEST_TMP/tpl-demo/.ai-loop/flow.yaml")" "controller: builtin:all-pass" \
	"the demo is judged by ailoop itself"
tdd=$(cat "$TEST_TMP/tpl-tdd/.ai-loop/flow.yaml")
expect_in "$tdd" $'id: red-green\n      type: loop\n      controller: .ai-loop/agents/loop-controller-inner.md\n      sensors:\n        - .ai-loop/agents/loop-sensor-tests.md' \
	"tdd runs the fast tests in the inner loop"
expect_in "$tdd" $'id: acceptance\n  type: loop\n  controller: .ai-loop/agents/loop-controller-outer.md\n  sensors:\n    - .ai-loop/agents/loop-sensor-review.md' \
	"tdd runs the slow review in the outer loop"

# Flags: --sensor, --levels, --runner, --max-iterations.
R=$TEST_TMP/flags
new_repo "$R"
printf 'test:\n\ttrue\n' >"$R/Makefile"
cd "$R"
run "$AILOOP" setup --sensor unit='make unit' --sensor "lint=sh -c 'exit 0' # it's fine" \
	--levels 2 --runner codex --max-iterations 7
expect_rc 0 "setup with every flag"
flow=$(cat .ai-loop/flow.yaml)
expect_in "$flow" "runner: codex" "--runner sets the default runner"
expect_in "$flow" "id: implement" "--levels 2 writes two loops"
expect_eq "$(grep -c 'max_iterations: 7' .ai-loop/flow.yaml)" 2 "--max-iterations sets every loop's limit"
expect_in "$flow" $'    - .ai-loop/agents/loop-sensor-unit.md\n    - .ai-loop/agents/loop-sensor-lint.md' \
	"--sensor replaces the detected sensors"
expect_not_in "$flow" "loop-sensor-tests.md" "the detected sensor is not used with --sensor"
expect_in "$(cat .ai-loop/agents/loop-sensor-lint.md)" "command: 'sh -c ''exit 0'' # it''s fine'" \
	"a command is quoted for YAML"
run "$AILOOP" validate
expect_rc 0 "the flow of every flag validates"
run env PATH="$TEST_TMP/bin:$PATH" "$AILOOP" run --dry-run --allow-dirty "x"
expect_in "$out" "\$ sh -c 'sh -c '\\''exit 0'\\'' # it'\\''s fine'" "the quoted command runs as given"

# A sensor named like a template's agent (review) is that sensor's file.
R=$TEST_TMP/named-review
new_repo "$R"
cd "$R"
run "$AILOOP" setup --sensor review='make review'
expect_rc 0 "a command sensor named review"
expect_in "$(cat .ai-loop/agents/loop-sensor-review.md)" "command: 'make review'" \
	"the command sensor named review is written, not the LLM reviewer"
run env PATH="$TEST_TMP/bin:$PATH" "$AILOOP" run --dry-run --allow-dirty "x"
expect_in "$out" "\$ sh -c 'make review'" "the flow runs the command sensor named review"

# A level's sensor repeated in its child is warned about; so is a command twice.
R=$TEST_TMP/overlap
new_repo "$R"
cd "$R"
run "$AILOOP" setup --template three-level --sensor a='make test' --sensor b='make test'
expect_rc 0 "overlapping sensors are allowed"
expect_in "$err" "ailoop: warning: sensors 'a' and 'b' of level 'delivery' run the same command 'make test'" \
	"the same command twice is warned about"
run "$AILOOP" setup --template nested --sensor review='make test'
expect_rc 64 "a sensor named like the template's own in another level"
expect_in "$err" "ailoop: error: sensor name 'review' names two different sensors (levels 'delivery' and 'implement')" \
	"two sensors with one name are refused"
run "$AILOOP" setup --sensor a=x --sensor a=y
expect_rc 64 "a sensor name given twice"
expect_in "$err" "ailoop: error: sensor name 'a' is given twice in level 'deliver'" "says which name"

# Idempotence, and files the user changed.
R=$TEST_TMP/idem
new_repo "$R"
printf 'test:\n\ttrue\n' >"$R/Makefile"
cd "$R"
run "$AILOOP" setup --template nested
expect_rc 0 "first setup"
expect_in "$out" "Created   .ai-loop/flow.yaml" "the first setup creates the flow"
expect_in "$out" "Created   .ai-loop/agents/loop-actuator.md" "the first setup creates the agents"
expect_in "$out" "Created   .ai-loop/runs/.gitkeep" "the first setup creates runs/.gitkeep"
test -f .ai-loop/.setup-manifest && pass || fail "setup records what it wrote"
git add -A && git commit -qm "ailoop setup"
run "$AILOOP" setup --template nested
expect_rc 0 "second setup"
expect_not_in "$out" "Created" "a second setup creates nothing"
expect_not_in "$out" "Updated" "a second setup updates nothing"
expect_in "$out" "Unchanged .ai-loop/flow.yaml" "a second setup reports the flow unchanged"
expect_eq "$(git status --porcelain)" "" "a second setup with the same answers changes nothing"
run "$AILOOP" setup --template nested --max-iterations 3
expect_rc 0 "setup with another answer"
expect_in "$out" "Updated   .ai-loop/flow.yaml" "another answer updates the flow setup wrote"
expect_in "$out" "Unchanged .ai-loop/agents/loop-actuator.md" "and leaves the rest"
printf '\nMy own rule.\n' >>.ai-loop/agents/loop-actuator.md
run "$AILOOP" setup --template nested
expect_rc 0 "setup over a changed file"
expect_in "$out" "Kept      .ai-loop/agents/loop-actuator.md (changed since setup wrote it; --force overwrites it)" \
	"setup keeps a file the user changed"
expect_in "$err" "kept 1 file you changed; 'ailoop setup --force' overwrites it" "and says so"
expect_in "$out" "Updated   .ai-loop/flow.yaml" "the other files are still updated"
expect_in "$(cat .ai-loop/agents/loop-actuator.md)" "My own rule." "the user's change is still there"
run "$AILOOP" setup --template nested
expect_in "$out" "Kept      .ai-loop/agents/loop-actuator.md" "the changed file is kept again"
run "$AILOOP" setup --template nested --force
expect_rc 0 "setup --force"
expect_in "$out" "Updated   .ai-loop/agents/loop-actuator.md" "--force overwrites the changed file"
expect_not_in "$(cat .ai-loop/agents/loop-actuator.md)" "My own rule." "the change is gone"
run "$AILOOP" setup --template nested
expect_in "$out" "Unchanged .ai-loop/agents/loop-actuator.md" "after --force the file is setup's again"
# a file that was there before setup ever ran is not setup's to replace
R=$TEST_TMP/preexisting
new_repo "$R"
mkdir -p "$R/.ai-loop/agents"
printf 'version: 1\n# mine\n' >"$R/.ai-loop/flow.yaml"
cd "$R"
run "$AILOOP" setup --sensor t=true
expect_rc 0 "setup beside an existing flow"
expect_in "$out" "Kept      .ai-loop/flow.yaml (not written by setup; --force overwrites it)" \
	"setup keeps a flow it did not write"
expect_eq "$(cat .ai-loop/flow.yaml)" $'version: 1\n# mine' "the user's flow is untouched"

# Bad input.
R=$TEST_TMP/bad
new_repo "$R"
printf 'test:\n\ttrue\n' >"$R/Makefile"
cd "$R"
bad() {
	local what=$1 msg=$2
	shift 2
	run "$AILOOP" setup "$@"
	expect_rc 64 "$what"
	expect_in "$err" "$msg" "$what: the message"
	test ! -e .ai-loop && pass || fail "$what: nothing is written"
}
bad "an unknown template" "ailoop: error: unknown template 'nestd': did you mean 'nested'? (templates: single, nested, three-level, tdd, reactree-tdd, demo)" --template nestd
bad "an unknown runner" "ailoop: error: unknown runner 'gpt' (runners: claude, codex, gemini, aider, opencode)" --runner gpt
bad "a sensor without =" "ailoop: error: --sensor 'tests': give NAME=COMMAND" --sensor tests
bad "a sensor without a command" "ailoop: error: --sensor 'tests= ': give NAME=COMMAND" --sensor 'tests= '
bad "a sensor without a name" "ailoop: error: --sensor '=make': give NAME=COMMAND" --sensor =make
bad "a sensor with a bad name" "ailoop: error: --sensor: name 'a b' must be letters, digits, '_' and '-'" --sensor 'a b=make'
bad "a command of two lines" "ailoop: error: --sensor 't': the command must be one line of UTF-8 text" --sensor $'t=make\nrm -rf /'
bad "a command that is not UTF-8" "ailoop: error: --sensor 't': the command must be one line of UTF-8 text" --sensor $'t=echo \xff'
bad "--levels 0" "ailoop: error: --levels '0': give 1, 2 or 3" --levels 0
bad "--levels 4" "ailoop: error: --levels '4': give 1, 2 or 3" --levels 4
bad "--levels x" "ailoop: error: --levels 'x': give 1, 2 or 3" --levels x
bad "--levels against the template" "ailoop: error: --levels 2 does not fit template 'single', which has 1 level" --template single --levels 2
bad "--max-iterations 0" "ailoop: error: --max-iterations '0': give a number from 1 to 1000" --max-iterations 0
bad "an unknown option" "ailoop: error: unknown option '--bogus'" --bogus
bad "an operand" "usage: ailoop setup" extra
run "$AILOOP" setup --help
expect_rc 0 "setup --help"
expect_in "$out" "usage: ailoop setup [--template NAME] [--sensor NAME=COMMAND]..." "the help shows the usage"
run "$AILOOP" --help
expect_in "$out" "  setup      write .ai-loop/" "the command list has setup"

# Outside a git repository setup writes the files and says what run needs.
R=$TEST_TMP/nogit
mkdir -p "$R"
printf 'test:\n\ttrue\n' >"$R/Makefile"
cd "$R"
run "$AILOOP" setup
expect_rc 0 "setup outside git"
expect_in "$err" "note: this is not a git repository; 'ailoop run' needs one with a commit" \
	"setup outside git says run needs git"
test -f .ai-loop/flow.yaml && pass || fail "setup outside git writes the flow"
# From a subdirectory, setup writes at the repository root.
R=$TEST_TMP/subdir
new_repo "$R"
printf 'test:\n\ttrue\n' >"$R/Makefile"
mkdir -p "$R/src/x"
cd "$R/src/x"
run "$AILOOP" setup
expect_rc 0 "setup from a subdirectory"
test -f "$R/.ai-loop/flow.yaml" && pass || fail "setup from a subdirectory writes at the root"
expect_not_in "$err" "note: this is not a git repository" "a subdirectory of a repository is in git"

# Without setup, run says to run it.
R=$TEST_TMP/nosetup
new_repo "$R"
cd "$R"
run "$AILOOP" run "x"
expect_rc 66 "run before setup"
expect_in "$err" "ailoop: error: no flow at '.ai-loop/flow.yaml': run 'ailoop setup' first" \
	"run before setup says to run setup"

# The flow setup writes runs: the detected test command is the sensor; an
# actuator (here a script instead of the LLM) fixes the code until it passes.
R=$TEST_TMP/e2e
new_repo "$R"
cat >"$R/Makefile" <<'MK'
test:
	@sh check.sh
MK
cat >"$R/check.sh" <<'SH'
if grep -q fixed code.txt; then echo "1 passed, 0 failed"; else echo "0 passed, 1 failed"; exit 1; fi
SH
echo broken >"$R/code.txt"
cd "$R"
run "$AILOOP" setup --template demo --max-iterations 3
expect_rc 0 "setup of the project to fix"
cat >.ai-loop/agents/loop-actuator.md <<'MD'
---
name: loop-actuator
command: "echo fixed >code.txt && echo 'fixed code.txt' >\"$AILOOP_OUTPUT\""
---
MD
git add -A && git commit -qm "ailoop setup"
run "$AILOOP" run "fix the code"
expect_rc 0 "the flow setup wrote converges"
expect_eq "$(cat code.txt)" "fixed" "the actuator fixed the code"
expect_eq "$(labels "$R")" "0 1 2" "one measurement, one fix, the target met"
expect_in "$(git log -1 --format=%B)" "[sensors] tests: pass (failed=0; passed=1)" \
	"the command sensor ran the detected test command"
first=$(git log --reverse --format=%B | grep -m1 '^\[sensors\]')
expect_eq "$first" "[sensors] tests: fail (failed=1; passed=0)" "the first measurement fails"
sensor_out=$(git show HEAD:.ai-loop/runs/$(ls .ai-loop/runs | grep run_)/nodes/fix/sensor-tests-output.md)
expect_in "$sensor_out" "make test" "the sensor output names the command"
expect_in "$sensor_out" "1 passed, 0 failed" "the sensor output holds the test output"
run "$AILOOP" setup --template demo --max-iterations 3
expect_in "$out" "Kept      .ai-loop/agents/loop-actuator.md" "setup keeps the replaced actuator"

# The reactree-tdd flow runs too: a test is written, the tests fail, the
# code is fixed, and the loop ends when the detected test command passes.
R=$TEST_TMP/e2e-reactree
new_repo "$R"
printf 'test:\n\t@sh check.sh\n' >"$R/Makefile"
echo 'grep -q fixed code.txt' >"$R/check.sh"
echo broken >"$R/code.txt"
cd "$R"
run "$AILOOP" setup --template reactree-tdd --max-iterations 3
expect_rc 0 "setup of reactree-tdd"
cat >.ai-loop/agents/loop-actuator.md <<'MD'
---
name: loop-actuator
command: "echo fixed >code.txt && echo 'fixed code.txt' >\"$AILOOP_OUTPUT\""
---
MD
cat >.ai-loop/agents/action.md <<'MD'
---
name: action
command: "echo 'a test' >>tests.txt && echo 'wrote a test' >\"$AILOOP_OUTPUT\""
---
MD
git add -A && git commit -qm "ailoop setup"
run "$AILOOP" run "fix the code"
expect_rc 0 "the reactree-tdd flow setup wrote converges"
expect_in "$err" "tdd/green: \$ make test: false" "the conditional runs the detected test command"
expect_eq "$(git log --format=%s -3 | tac | tr '\n' '|')" \
	"ai-loop[tdd > red]: iteration 1 — wrote a test|ai-loop[tdd > green > implement]: iteration 1 — fixed code.txt|ai-loop[tdd]: iteration 1 — exit condition met after 1 iteration|" \
	"red, then green, then the loop ends"

# a file where setup puts a directory: named, exit 66, and nothing written
for obstacle in agents runs; do
	R=$TEST_TMP/obstacle-$obstacle
	new_repo "$R"
	mkdir "$R/.ai-loop"
	echo "my notes" >"$R/.ai-loop/$obstacle"
	cd "$R"
	run "$AILOOP" setup --yes --sensor t=true
	expect_rc 66 "setup with .ai-loop/$obstacle a file"
	expect_in "$err" "'.ai-loop/$obstacle' is in the way: setup puts a directory there" \
		"the obstacle is named"
	expect_eq "$(ls -A .ai-loop)" "$obstacle" "nothing of setup's was written beside it"
	expect_eq "$(cat ".ai-loop/$obstacle")" "my notes" "the user's file is left as it was"
done

# several sensors' commands: each in a shell of its own, so that one's
# operators (`|| true`) cannot make the others' failure pass
R=$TEST_TMP/joined
new_repo "$R"
cd "$R"
run "$AILOOP" setup --template reactree-tdd --max-iterations 1 --sensor unit=false \
	--sensor 'lint=false || true'
expect_rc 0 "setup of reactree-tdd with two sensors"
expect_in "$err" "loop until 'sh -c 'false' && sh -c 'false || true'' passes" \
	"each sensor's command runs in a shell of its own"
for f in action loop-actuator; do
	printf -- '---\nname: %s\ncommand: "echo did nothing >\\"$AILOOP_OUTPUT\\""\n---\n' "$f" \
		>".ai-loop/agents/$f.md"
done
git add -A && git commit -qm "ailoop setup"
run "$AILOOP" run --quiet "make the unit tests pass"
expect_rc 1 "the loop does not end while the unit command fails"

# --- the scratch copy setup validates lives under $TMPDIR ------------------------
R=$TEST_TMP/scratch
new_repo "$R"
cd "$R"
mkdir "$TEST_TMP/tmpdir"
TMPDIR=$TEST_TMP/tmpdir run "$AILOOP" setup --yes --sensor t=true
expect_rc 0 "setup with its own TMPDIR"
expect_eq "$(ls -A "$TEST_TMP/tmpdir")" "" "its scratch copy is made there and removed"
rm -rf .ai-loop
TMPDIR=$TEST_TMP/no-such-dir run "$AILOOP" setup --yes --sensor t=true
expect_rc 70 "setup where no scratch directory can be made"
expect_in "$err" "cannot make a scratch directory '$TEST_TMP/no-such-dir/ailoop-setup." \
	"says where it tried"
expect_eq "$(ls -A .ai-loop 2>/dev/null)" "" "and writes nothing"

finish
