#!/usr/bin/env bash
# Every ReAcTree example of seeds 000 and 001 (tests/fixtures/flows/valid/
# seed*.json) runs with scripted agents: the actions that ran, in order,
# with their agents; the iterations of each loop; the exit code and the
# run's status. The agents' behaviour (working memory they report, files
# they make, failures) is each case's plan, chosen so that the example
# takes its interesting path. An example that begins with a condition
# runs after an action `setup` (in a sequence `given`) that writes the
# memory the condition reads, since a run's memory starts empty.
. "$(dirname "$0")/lib.sh"

VALID=$FIXTURES/flows/valid
AGENTS=(action backend-lead database-lead database-specialist deployment-engineer
	devops-specialist qa-specialist rspec-specialist test-oracle ui-specialist)

# seed NAME [given]: a repository for the example NAME, whose plan is read
# from standard input; "given" puts the action `setup` before it
seed() {
	local src=$VALID/$1.json
	R=$TEST_TMP/$1
	new_repo "$R"
	scripted_agents "$R" "${AGENTS[@]}"
	if [ -n "${2:-}" ]; then
		jq '{root_node: {type: "SEQUENCE", node_id: "given", children:
			[{type: "ACTION", node_id: "setup", skill: "setup"}, .root_node]}}' \
			"$src" >"$R/.ai-loop/flow.yaml"
	else
		cp "$src" "$R/.ai-loop/flow.yaml"
	fi
	export TRAIL=$TEST_TMP/$1.trail PLAN=$TEST_TMP/$1.plan
	: >"$TRAIL"
	cat >"$PLAN"
}

# go: runs the example; $path is the actions that ran, in order
go() {
	[ -z "$(git -C "$R" status --porcelain)" ] || commit_all "$R"
	cd "$R" || exit 1
	run "$AILOOP" run --quiet "build the payment feature"
	path=$(tr '\n' ' ' <"$TRAIL" | sed 's/ $//')
}

# commits_of NODE-PATH: "label status" of each commit of that node
commits_of() {
	triples "$R" | awk -v p="$1" '$2 == p { printf "%s%s %s", sep, $1, $3; sep = "," }'
}

# expect_run RC STATUS WHAT: the exit code and the run's final status
expect_run() {
	expect_rc "$1" "$3: exit code"
	expect_eq "$(run_status)" "$2" "$3: the run's status"
	expect_eq "$(git status --porcelain)" "" "$3: the work tree is clean"
}

# --- seed 000: the three node structures

seed seed000-01-loop-structure <<'PLAN'
case $skill in run_tests) [ "$n" -lt 2 ] && mem tests.status failing || mem tests.status passing ;; esac
PLAN
go
expect_eq "$path" "run_tests@rspec-specialist fix_code@backend-lead run_tests@rspec-specialist" \
	"seed000 loop: failing tests are fixed, then break_loop (no agent) ends the loop"
expect_eq "$(commits_of loop-tdd-cycle)" "1 running,2 complete" "seed000 loop: two iterations"
expect_run 0 complete "seed000 loop"

seed seed000-02-conditional-structure given <<'PLAN'
case $skill in setup) mem integration_tests.status passing ;; esac
PLAN
go
expect_eq "$path" "setup deploy@deployment-engineer" "seed000 conditional: passing tests deploy"
expect_run 0 complete "seed000 conditional"

seed seed000-03-transaction-structure <<'PLAN'
case $skill in
db_migrate) creates db/migrate/001_create_payments.rb ;;
deploy_code) creates deployed.txt; says_fail ;;
esac
PLAN
commit_all "$R"
before=$(code_tree "$R")
go
expect_eq "$path" "db_migrate deploy_code" "seed000 transaction: a failing deploy stops it"
expect_run 1 failed "seed000 transaction"
expect_eq "$(code_tree "$R")" "$before" "seed000 transaction: rolled back to its start"
[ ! -e db/migrate/001_create_payments.rb ] && [ ! -e deployed.txt ] && pass ||
	fail "seed000 transaction: the files its actions made are gone"
expect_eq "$(commits_of txn-deploy)" "0 failed" "seed000 transaction: one rollback commit"
expect_in "$(git log -1 --format=%s)" "rollback" "seed000 transaction: the rollback commit says so"

# --- seed 001: LOOP patterns

# the loop's condition is a test_result (memory sensors.payment_service_spec.status),
# the conditional's an observation_check of the memory key payment_service_spec
seed seed001-01-tdd-cycle <<'PLAN'
case $skill in rspec_run) mem sensors.payment_service_spec.status failing; mem payment_service_spec failing ;; esac
PLAN
go
expect_eq "$path" "$(printf 'rspec_run@rspec-specialist fix_failing_specs@backend-lead %.0s' 1 2 3 | sed 's/ $//')" \
	"tdd cycle: specs that keep failing are fixed each iteration"
expect_eq "$(commits_of tdd-payment-service)" "1 running,2 running,3 max-iterations-reached" \
	"tdd cycle: three iterations, then max iterations"
expect_run 1 max-iterations-reached "tdd cycle"

seed seed001-02-performance-optimization <<'PLAN'
case $skill:$n in
measure_query_performance:1) mem query.duration_ms 250 ;;
measure_query_performance:2) mem query.duration_ms 180 ;;
measure_query_performance:*) mem query.duration_ms 90 ;;
esac
PLAN
go
expect_eq "$path" "measure_query_performance@database-specialist apply_optimization@backend-lead \
measure_query_performance@database-specialist apply_optimization@backend-lead \
measure_query_performance@database-specialist" "performance: optimized until under 100 ms"
expect_eq "$(commits_of optimize-query-performance)" "1 running,2 running,3 complete" \
	"performance: three iterations"
expect_run 0 complete "performance"

seed seed001-03-error-recovery <<'PLAN'
case $skill:$n in
deploy_to_staging:1) mem deployment.status failed ;;
deploy_to_staging:*) mem deployment.status success ;;
diagnose_and_fix:1) fails ;;
esac
PLAN
go
expect_eq "$path" "deploy_to_staging@deployment-engineer diagnose_and_fix@devops-specialist \
deploy_to_staging@deployment-engineer" "error recovery: a failed deploy is diagnosed, then retried"
expect_eq "$(commits_of deploy-with-retry)" "1 running,2 complete" \
	"error recovery: the failing fix does not stop the loop"
expect_in "$(triples "$R" | tr '\n' ,)" "1 deploy-with-retry/conditional-2/action-1 failed" \
	"error recovery: the failed action is committed as failed"
expect_run 0 complete "error recovery"

seed seed001-04-nested-loop <<'PLAN'
case $skill:$n in run_tests:1) mem tests.status failing ;; run_tests:*) mem tests.status passing ;; esac
PLAN
go
one="implement_feature_phase@backend-lead run_tests fix_if_failing"
expect_eq "$path" "$one run_tests fix_if_failing verify_phase_complete $one verify_phase_complete \
$one verify_phase_complete" "nested loop: the inner loop until tests pass, in each outer iteration"
expect_eq "$(commits_of outer-feature-implementation)" "1 running,2 running,3 complete" \
	"nested loop: the outer loop runs its three iterations"
expect_eq "$(commits_of outer-feature-implementation/inner-tdd-cycle)" \
	"1.1 running,1.2 complete,2.1 complete,3.1 complete" "nested loop: inner labels nest"
expect_run 0 complete "nested loop"

# --- seed 001: CONDITIONAL patterns

seed seed001-05-deployment-decision given <<'PLAN'
case $skill in
setup) mem sensors.integration_tests.status passing ;;
run_smoke_tests) says_fail ;;
esac
PLAN
go
expect_eq "$path" "setup deploy_to_staging@deployment-engineer run_smoke_tests@qa-specialist" \
	"deployment decision: passing integration tests deploy, then smoke tests"
expect_run 1 failed "deployment decision (smoke tests fail)"

seed seed001-06-feature-flag given <<'PLAN'
case $skill in setup) mem feature_flags.new_ui_enabled true ;; esac
PLAN
go
expect_eq "$path" "setup implement_new_ui_components@ui-specialist" "feature flag: on"
expect_run 0 complete "feature flag"

seed seed001-07-environment-based <<'PLAN'
PLAN
go
expect_eq "$path" "enable_debug_logging disable_asset_compression" \
	"environment: not production (memory empty)"
expect_run 0 complete "environment"

seed seed001-08-file-existence <<'PLAN'
case $skill in
skip_migration_creation) grep -q "Migration already exists" "$AILOOP_TASK_FILE" || fails ;;
esac
PLAN
creates() { mkdir -p "$(dirname "$1")" && echo "$2" >"$1"; }
creates "$R/db/migrate/20240101000000_add_stripe_fields_to_payments.rb" "class AddStripeFields; end"
go
expect_eq "$path" "skip_migration_creation" "file existence: the migration's glob matches"
expect_run 0 complete "file existence (the action's message is in its task)"

seed seed001-09-nested-conditional given <<'PLAN'
case $skill in setup) mem sensors.all_tests.status passing; mem coverage.percentage 70 ;; esac
PLAN
go
expect_eq "$path" "setup request_more_tests@rspec-specialist" \
	"nested conditional: tests pass, coverage too low"
expect_run 0 complete "nested conditional"

seed seed001-10-performance-based given <<'PLAN'
case $skill:$n in
setup:*) mem query.duration_ms 250 ;;
apply_optimization:1) mem query.duration_ms 150 ;;
apply_optimization:*) mem query.duration_ms 80 ;;
esac
PLAN
go
expect_eq "$path" "setup measure_performance apply_optimization measure_performance apply_optimization" \
	"performance-based: slow, so the optimization loop runs until fast"
expect_eq "$(commits_of given/check-query-performance/optimization-loop)" "1 running,2 complete" \
	"performance-based: two iterations"
expect_run 0 complete "performance-based"

seed seed001-11-error-handling given <<'PLAN'
case $skill in setup) mem error.type "Faraday::NetworkError" ;; esac
PLAN
go
expect_eq "$path" "setup retry_request retry_request retry_request" \
	"error handling: a network error (regex) retries three times"
expect_eq "$(triples "$R" | awk '$3 == "complete" && $2 ~ /\/loop-1$/ { print $1 }' | tr '\n' ' ')" \
	"3 " "error handling: the retry loop completes its three iterations"
expect_run 0 complete "error handling"

# --- seed 001: FEEDBACK patterns

seed seed001-12-test-driven-feedback <<'PLAN'
case $skill in
rails_generate_model)
	grep -q "Arguments: Payment amount:decimal status:string" "$AILOOP_TASK_FILE" || fails
	creates app/models/payment.rb ;;
esac
PLAN
go
expect_eq "$path" "rails_generate_model rspec_run_model" "test-driven feedback: generate, then test"
expect_run 0 complete "test-driven feedback (args reach the task)"
git cat-file -e HEAD:app/models/payment.rb 2>/dev/null && pass || fail "test-driven feedback: the model is committed"

seed seed001-13-dependency-discovery <<'PLAN'
case $skill in implement_service) creates app/services/payment_processor_service.rb ;; esac
PLAN
go
expect_eq "$path" "implement_service" "dependency discovery: one action"
expect_eq "$(triples "$R" | tr '\n' ,)" "0 sequence-1/create-payment-processor complete,0 sequence-1 complete," \
	"dependency discovery: the action's commit and the run's end"
expect_run 0 complete "dependency discovery"

seed seed001-14-architecture-correction <<'PLAN'
case $skill in implement_service) fails ;; esac
PLAN
go
expect_eq "$path" "implement_service" "architecture correction: one action"
expect_run 1 failed "architecture correction (the agent exits 1)"

seed seed001-15-context-request <<'PLAN'
case $skill in implement_service) says_fail ;; esac
PLAN
go
expect_eq "$path" "implement_service" "context request: the sequence stops at the failing action"
expect_run 1 failed "context request"

seed seed001-16-multi-round-feedback <<'PLAN'
case $skill:$n in test-feature:2) fails ;; esac
PLAN
go
expect_eq "$path" "implement-feature test-feature implement-feature test-feature implement-feature test-feature" \
	"multi-round feedback: three rounds (actions without a skill are named by id)"
expect_eq "$(commits_of loop-1)" "1 running,2 running,3 complete" \
	"multi-round feedback: a failing round does not stop the loop"
expect_run 0 complete "multi-round feedback"

seed seed001-17-red-green-refactor <<'PLAN'
case $skill:$n in
rspec_run_all:1) mem sensors.all_specs.status failing ;;
rspec_run_all:*) mem sensors.all_specs.status passing ;;
esac
PLAN
go
expect_eq "$path" "test_oracle_generate implement_to_pass_tests rspec_run_all analyze_failures \
test_oracle_generate implement_to_pass_tests rspec_run_all refactor_code" "red-green-refactor: red, then green"
expect_eq "$(commits_of tdd-cycle)" "1 running,2 complete" "red-green-refactor: two iterations"
expect_run 0 complete "red-green-refactor"

seed seed001-18-coverage-driven-expansion <<'PLAN'
case $skill:$n in
run_coverage_analysis:1) mem coverage.percentage 60 ;;
run_coverage_analysis:2) mem coverage.percentage 80 ;;
run_coverage_analysis:*) mem coverage.percentage 90 ;;
esac
PLAN
go
gaps="run_coverage_analysis identify_coverage_gaps generate_additional_tests run_rspec"
expect_eq "$path" "$gaps $gaps run_coverage_analysis" \
	"coverage expansion: gaps filled until above 85 (no false branch: nothing runs)"
expect_eq "$(commits_of coverage-expansion)" "1 running,2 running,3 complete" "coverage expansion: three iterations"
expect_run 0 complete "coverage expansion"

seed seed001-19-test-first-integration <<'PLAN'
case $skill in rspec_run_all) fails ;; esac
PLAN
go
expect_eq "$path" "generate_test_plan@test-oracle create_test_files@test-oracle \
implement_feature rspec_run_all implement_feature rspec_run_all implement_feature rspec_run_all" \
	"test-first integration: TestOracle plans, then three rounds"
expect_eq "$(commits_of sequence-1/loop-3)" "1 running,2 running,3 complete" \
	"test-first integration: the loop runs its three iterations"
expect_run 0 complete "test-first integration"

# --- seed 001: the exit conditions of a LOOP

seed seed001-20-exit-on-condition-true <<'PLAN'
case $skill:$n in run_tests:1) mem tests.status failing ;; run_tests:*) mem tests.status passing ;; esac
PLAN
go
expect_eq "$path" "run_tests run_tests" "exit on condition_true: until tests pass"
expect_eq "$(commits_of loop-1)" "1 running,2 complete" "exit on condition_true: two iterations"
expect_run 0 complete "exit on condition_true"

seed seed001-21-exit-on-condition-false <<'PLAN'
case $skill:$n in run_tests:1) mem errors.count 2 ;; run_tests:*) mem errors.count 0 ;; esac
PLAN
go
expect_eq "$path" "run_tests run_tests" "exit on condition_false: while there are errors"
expect_eq "$(commits_of loop-1)" "1 running,2 complete" "exit on condition_false: two iterations"
expect_run 0 complete "exit on condition_false"

seed seed001-22-exit-on-manual-break <<'PLAN'
case $skill:$n in run_tests:2) mem loop.loop-1.break true ;; esac
PLAN
go
expect_eq "$path" "run_tests run_tests" "exit on manual_break: the agent sets loop.<id>.break"
expect_eq "$(commits_of loop-1)" "1 running,2 complete" "exit on manual_break: two iterations"
expect_run 0 complete "exit on manual_break"

finish
