#include "ailoop/exec/budget.h"
#include "ailoop/model/flow.h"
#include "ailoop/base/strbuf.h"
#include "ailoop/base/util.h"

#include "unit.h"

#include <criterion/criterion.h>
#include <string.h>

/*
 * Every test runs in a fresh directory holding a few agent files; the flow
 * is written to .ai-loop/flow.yaml from a string and loaded from there.
 */
static struct al_diags diags = AL_DIAGS_INIT;
static struct al_flow *flow;

#define FLOW_FILE ".ai-loop/flow.yaml"
#define AGENTS ".ai-loop/agents/"

static void setup(void)
{
	unit_enter_tmpdir();
	unit_write(AGENTS "ctrl.md", "---\nname: ctrl\n---\nDecide.\n");
	unit_write(AGENTS "sensor-a.md", "---\nname: unit\ncommand: make test\n---\n");
	unit_write(AGENTS "sensor-b.md", "---\ncommand: [make, lint]\n---\n");
	unit_write(AGENTS "act.md", "Change the code.\n");
	unit_write(AGENTS "action.md", "Do the task.\n");
	unit_write(AGENTS "rspec-specialist.md", "Write specs.\n");
	unit_write(AGENTS "test-oracle.md", "Judge.\n");
}

static void teardown(void)
{
	al_flow_free(flow);
	flow = NULL;
	al_diags_release(&diags);
	unit_leave_tmpdir();
}

TestSuite(flow, .init = setup, .fini = teardown);

/* Loads `text` as the flow; returns what al_flow_load returned. */
static int load(const char *text)
{
	al_flow_free(flow);
	flow = NULL;
	al_diags_release(&diags);
	unit_write(FLOW_FILE, text);
	return al_flow_load(&flow, FLOW_FILE, &diags);
}

/* Loads `text`, which must be valid. */
static struct al_node *load_ok(const char *text)
{
	int rc = load(text);

	cr_assert_eq(rc, 0, "flow rejected:%s", unit_diags_text(&diags));
	unit_assert_ndiags(&diags, 0);
	cr_assert_not_null(flow);
	cr_assert_not_null(flow->root);
	return flow->root;
}

/* Loads `text`, which must be invalid; diagnostics are left sorted. */
static void load_bad(const char *text, int ndiags)
{
	cr_assert_eq(load(text), AL_EINVALID, "flow accepted");
	cr_assert_null(flow);
	al_diags_sort(&diags);
	unit_assert_ndiags(&diags, ndiags);
}

static struct al_node *find(const char *path)
{
	struct al_node *n = al_flow_find(flow, path);

	cr_assert_not_null(n, "no node %s", path);
	cr_assert_str_eq(n->path, path);
	return n;
}

/* --- node types ---------------------------------------------------------- */

Test(flow, sensor_form_loop)
{
	struct al_node *n = load_ok("version: 1\n"
				    "flow:\n"
				    "  id: delivery\n"
				    "  type: loop\n"
				    "  description: Deliver it\n"
				    "  controller: .ai-loop/agents/ctrl.md\n"
				    "  sensors:\n"
				    "    - .ai-loop/agents/sensor-a.md\n"
				    "    - .ai-loop/agents/sensor-b.md\n"
				    "  sensors_parallel: true\n"
				    "  actuator:\n"
				    "    strategy: direct\n"
				    "    agent: .ai-loop/agents/act.md\n"
				    "  termination:\n"
				    "    max_iterations: 5\n"
				    "    timeout_seconds: 120\n");

	cr_assert_eq(n->type, AL_NODE_LOOP);
	cr_assert(n->sensor_form);
	cr_assert_str_eq(n->id, "delivery");
	cr_assert_not(n->id_generated);
	cr_assert_str_eq(n->path, "delivery");
	cr_assert_null(n->parent);
	cr_assert_eq(n->depth, 0);
	cr_assert_eq(n->pos.line, 3);
	cr_assert_eq(n->pos.col, 3);
	cr_assert_str_eq(n->description, "Deliver it");
	cr_assert_str_eq(n->controller.path, ".ai-loop/agents/ctrl.md");
	cr_assert_eq(n->controller.pos.line, 6);
	cr_assert_eq(n->controller.pos.col, 15);
	cr_assert_not_null(n->controller.agent);
	cr_assert(n->controller.agent->loaded);
	cr_assert_not(n->builtin_all_pass);
	cr_assert_eq(n->nsensors, 2);
	cr_assert_str_eq(n->sensors[0].name, "unit", "the agent's name");
	cr_assert_str_eq(n->sensors[1].name, "sensor-b", "the file name without .md");
	cr_assert_str_eq(n->sensors[1].ref.path, ".ai-loop/agents/sensor-b.md");
	cr_assert_eq(n->sensors[1].ref.pos.line, 9);
	cr_assert_eq(n->sensors[1].ref.pos.col, 7);
	cr_assert(al_agent_is_command(n->sensors[1].ref.agent));
	cr_assert(n->sensors_parallel);
	cr_assert_eq(n->strategy, AL_STRATEGY_DIRECT);
	cr_assert_str_eq(n->actuator.path, ".ai-loop/agents/act.md");
	cr_assert(n->actuator.agent->loaded);
	cr_assert_null(n->child);
	cr_assert_eq(n->max_iterations, 5);
	cr_assert_eq(n->timeout_seconds, 120);
	cr_assert_eq(flow->node_count, 1);
	cr_assert_eq(flow->max_depth, 0);
	cr_assert_eq(flow->agents.n, 4);
	cr_assert_str_eq(flow->file, FLOW_FILE);
}

Test(flow, loop_strategy_is_inferred_from_child_or_agent)
{
	struct al_node *n = load_ok("flow:\n"
				    "  id: outer\n"
				    "  type: loop\n"
				    "  controller: builtin:all-pass\n"
				    "  sensors: [.ai-loop/agents/sensor-a.md]\n"
				    "  max_iterations: 3\n"
				    "  actuator:\n"
				    "    child:\n"
				    "      id: inner\n"
				    "      type: loop\n"
				    "      controller: .ai-loop/agents/ctrl.md\n"
				    "      sensors: [.ai-loop/agents/sensor-b.md]\n"
				    "      actuator: {agent: .ai-loop/agents/act.md}\n");
	struct al_node *inner;

	cr_assert_eq(n->strategy, AL_STRATEGY_COMPOSITE);
	cr_assert(n->builtin_all_pass);
	cr_assert_str_eq(n->controller.path, AL_BUILTIN_ALL_PASS);
	cr_assert_null(n->controller.agent);
	cr_assert_eq(n->max_iterations, 3);
	cr_assert_null(n->actuator.path);
	inner = n->child;
	cr_assert_not_null(inner);
	cr_assert_eq(inner->parent, n);
	cr_assert_eq(inner->depth, 1);
	cr_assert_str_eq(inner->path, "outer/inner");
	cr_assert_eq(inner->strategy, AL_STRATEGY_DIRECT);
	cr_assert_str_eq(inner->actuator.path, ".ai-loop/agents/act.md");
	cr_assert_eq(inner->max_iterations, AL_DEFAULT_MAX_ITERATIONS);
	cr_assert_eq(inner->timeout_seconds, 0);
	cr_assert_not(inner->sensors_parallel);
	cr_assert_eq(al_node_nkids(n), 1);
	cr_assert_eq(al_node_kid(n, 0), inner);
	cr_assert_null(al_node_kid(n, 1));
	cr_assert_eq(flow->node_count, 2);
	cr_assert_eq(flow->max_depth, 1);
	cr_assert_eq(find("outer/inner"), inner);
}

Test(flow, reactree_loop)
{
	struct al_node *n = load_ok("flow:\n"
				    "  type: LOOP\n"
				    "  id: retry\n"
				    "  condition: {key: tests.status, operator: equals, value: passing}\n"
				    "  exit_on: condition_false\n"
				    "  max_iterations: 3\n"
				    "  timeout_seconds: 60\n"
				    "  children:\n"
				    "    - {type: action, skill: fix}\n"
				    "    - {skill: break_loop}\n");

	cr_assert_eq(n->type, AL_NODE_LOOP);
	cr_assert_not(n->sensor_form);
	cr_assert_not_null(n->condition);
	cr_assert_str_eq(n->condition->key, "tests.status");
	cr_assert_eq(n->condition->pos.line, 4);
	cr_assert_eq(n->exit_on, AL_EXIT_CONDITION_FALSE);
	cr_assert_eq(n->max_iterations, 3);
	cr_assert_eq(n->timeout_seconds, 60);
	cr_assert_eq(n->nchildren, 2);
	cr_assert_eq(n->children[0]->type, AL_NODE_ACTION);
	cr_assert_str_eq(n->children[0]->id, "action-1");
	cr_assert(n->children[0]->id_generated);
	cr_assert_str_eq(n->children[0]->skill, "fix");
	cr_assert_str_eq(n->children[0]->action_agent.path, AL_DEFAULT_ACTION_AGENT);
	cr_assert_eq(n->children[1]->type, AL_NODE_ACTION, "a node with a skill is an action");
	cr_assert_str_eq(n->children[1]->id, "action-2");
	cr_assert(n->children[1]->break_loop);
	cr_assert_null(n->children[1]->action_agent.path, "break_loop runs no agent");
	cr_assert_str_eq(n->children[1]->path, "retry/action-2");
	/* only the default action agent was needed */
	cr_assert_eq(flow->agents.n, 1);
}

Test(flow, reactree_loop_exit_modes)
{
	struct al_node *n = load_ok("flow:\n"
				    "  type: loop\n"
				    "  exit_on: manual_break\n"
				    "  children: [{skill: a}]\n");

	cr_assert_not(n->sensor_form);
	cr_assert_eq(n->exit_on, AL_EXIT_MANUAL_BREAK);
	cr_assert_null(n->condition);
	cr_assert_str_eq(n->id, "loop-1");
	n = load_ok("flow: {type: loop, children: [{skill: a}], max_iterations: 2}\n");
	cr_assert_eq(n->exit_on, AL_EXIT_CONDITION_TRUE, "the default");
	cr_assert_eq(n->max_iterations, 2);

	load_bad("flow:\n  type: loop\n  exit_on: condition_true\n  children: [{skill: a}]\n", 1);
	unit_assert_diag(&diags, FLOW_FILE, 3, 12, "exit_on 'condition_true' needs a 'condition'");
	cr_assert_eq(load("flow:\n  type: loop\n  exit_on: until_done\n  children: [{skill: a}]\n"),
		     AL_EINVALID);
	unit_assert_diag(&diags, FLOW_FILE, 3, 12, "unknown exit_on 'until_done'");
}

Test(flow, parallel_isolation_defaults_to_worktree_when_a_child_can_write)
{
	load_ok("flow:\n"
		"  id: main\n"
		"  type: loop\n" /* around the break_loop actions */
		"  children:\n"
		"    - {id: acts, type: parallel, children: [{skill: x}, {skill: break_loop}]}\n"
		"    - id: deep\n"
		"      type: parallel\n"
		"      children:\n"
		"        - {id: seq, type: sequence, children: [{id: c, type: conditional,\n"
		"           condition: {type: file_exists, path: x}, then: {skill: y}}]}\n"
		"    - id: loop\n"
		"      type: parallel\n"
		"      children:\n"
		"        - {id: l, type: loop, controller: builtin:all-pass,\n"
		"           sensors: [" AGENTS "sensor-a.md],\n"
		"           actuator: {strategy: direct, agent: " AGENTS "act.md}}\n"
		"    - id: measures\n"
		"      type: parallel\n"
		"      children:\n"
		"        - {id: c1, type: conditional, condition: {type: file_exists, path: x}}\n"
		"        - {id: b, skill: break_loop}\n"
		"    - {id: pinned, type: parallel, isolation: shared, children: [{skill: z}]}\n"
		"    - {id: asked, type: parallel, isolation: worktree,\n"
		"       children: [{id: c2, type: conditional, condition: {type: file_exists, path: x}}]}\n");
	cr_assert_eq(find("main/acts")->isolation, AL_ISOLATION_WORKTREE, "an action writes");
	cr_assert_eq(find("main/deep")->isolation, AL_ISOLATION_WORKTREE, "an action deep down");
	cr_assert_eq(find("main/loop")->isolation, AL_ISOLATION_WORKTREE, "an actuator writes");
	cr_assert_eq(find("main/measures")->isolation, AL_ISOLATION_SHARED,
		     "conditions and break_loop only measure");
	cr_assert_eq(find("main/pinned")->isolation, AL_ISOLATION_SHARED, "the node's key wins");
	cr_assert_eq(find("main/asked")->isolation, AL_ISOLATION_WORKTREE, "the node's key wins");
	load_ok("defaults: {parallel_isolation: shared}\n"
		"flow: {id: p, type: parallel, children: [{skill: x}]}\n");
	cr_assert_eq(flow->root->isolation, AL_ISOLATION_SHARED, "the default's key wins");
	load_ok("defaults: {parallel_isolation: worktree}\n"
		"flow: {id: p, type: parallel, children: [{skill: x}]}\n");
	cr_assert_eq(flow->root->isolation, AL_ISOLATION_WORKTREE, "the default's key wins");
}

Test(flow, sequence_fallback_parallel_transaction)
{
	struct al_node *n = load_ok("flow:\n"
				    "  type: Sequence\n"
				    "  id: main\n"
				    "  children:\n"
				    "    - type: fallback\n"
				    "      id: fb\n"
				    "      children:\n"
				    "        - {id: a1, skill: s1}\n"
				    "        - {id: a2, skill: s2}\n"
				    "    - type: parallel\n"
				    "      id: par\n"
				    "      success_threshold: 2\n"
				    "      failure_threshold: 1\n"
				    "      max_concurrency: 2\n"
				    "      children: [{skill: x}, {skill: y}, {skill: z}]\n"
				    "    - type: TRANSACTION\n"
				    "      id: tx\n"
				    "      rollback_on: [failure, timeout]\n"
				    "      children: [{skill: t}]\n"
				    "    - type: transaction\n"
				    "      id: tx2\n"
				    "      children: [{skill: u}]\n"
				    "    - type: parallel\n"
				    "      children: [{skill: v}]\n");
	struct al_node *par;

	cr_assert_eq(n->type, AL_NODE_SEQUENCE);
	cr_assert_eq(n->nchildren, 5);
	cr_assert_eq(find("main/fb")->type, AL_NODE_FALLBACK);
	cr_assert_eq(find("main/fb")->nchildren, 2);
	cr_assert_str_eq(find("main/fb/a2")->skill, "s2");
	par = find("main/par");
	cr_assert_eq(par->type, AL_NODE_PARALLEL);
	cr_assert_eq(par->success_threshold, 2);
	cr_assert_eq(par->failure_threshold, 1);
	cr_assert_eq(par->max_concurrency, 2);
	cr_assert_eq(par->nchildren, 3);
	cr_assert_str_eq(par->children[2]->id, "action-3");
	cr_assert_eq(find("main/tx")->type, AL_NODE_TRANSACTION);
	cr_assert_eq(find("main/tx")->rollback_on, AL_ROLLBACK_FAILURE | AL_ROLLBACK_TIMEOUT);
	cr_assert_eq(find("main/tx2")->rollback_on, AL_ROLLBACK_FAILURE | AL_ROLLBACK_TIMEOUT,
		     "the default: failure and timeout");
	/* thresholds left out are 0: all, 1 and unbounded */
	par = find("main/parallel-5");
	cr_assert_eq(par->success_threshold, 0);
	cr_assert_eq(par->failure_threshold, 0);
	cr_assert_eq(par->max_concurrency, 0);
	cr_assert_eq(flow->node_count, 14);
	cr_assert_eq(flow->max_depth, 2);
}

Test(flow, conditional_with_then_and_else)
{
	struct al_node *n = load_ok("flow:\n"
				    "  type: conditional\n"
				    "  id: cond\n"
				    "  condition: {type: file_exists, path: 'README*'}\n"
				    "  then: {id: when-true, skill: a}\n"
				    "  else: {skill: b}\n");

	cr_assert_eq(n->type, AL_NODE_CONDITIONAL);
	cr_assert_eq(n->condition->type, AL_COND_FILE_EXISTS);
	cr_assert_eq(n->condition->op, AL_OP_EXISTS);
	cr_assert_str_eq(n->then_branch->id, "when-true");
	cr_assert_str_eq(n->then_branch->path, "cond/when-true");
	cr_assert_str_eq(n->else_branch->id, "action-2");
	cr_assert_eq(n->else_branch->parent, n);
	cr_assert_eq(al_node_nkids(n), 2);
	cr_assert_eq(al_node_kid(n, 0), n->then_branch);
	cr_assert_eq(al_node_kid(n, 1), n->else_branch);

	n = load_ok("flow:\n"
		    "  type: Conditional\n"
		    "  condition: {key: plan.ready, operator: equals, value: 'yes'}\n"
		    "  true_branch: {id: go, skill: a}\n"
		    "  false_branch: {id: stop, skill: b}\n");
	cr_assert_str_eq(n->id, "conditional-1");
	cr_assert_str_eq(n->then_branch->id, "go");
	cr_assert_str_eq(n->else_branch->id, "stop");
	cr_assert_str_eq(n->condition->value, "yes");

	n = load_ok("flow:\n"
		    "  type: conditional\n"
		    "  condition: {key: k, operator: exists}\n"
		    "  then: {skill: a}\n");
	cr_assert_not_null(n->then_branch);
	cr_assert_null(n->else_branch, "a missing branch is allowed");
}

Test(flow, conditional_mistakes)
{
	load_bad("flow:\n"
		 "  type: conditional\n"
		 "  then: {id: x, skill: a}\n"
		 "  true_branch: {id: y, skill: a}\n"
		 "  else: {id: x, skill: b}\n",
		 3);
	unit_assert_diag(&diags, FLOW_FILE, 2, 3, "conditional node needs a 'condition'");
	unit_assert_diag(&diags, FLOW_FILE, 4, 3, "'then' and 'true_branch' are the same: give one");
	unit_assert_diag(&diags, FLOW_FILE, 5, 14, "duplicate id 'x' among siblings (first at line 3)");
	load_bad("flow:\n"
		 "  type: conditional\n"
		 "  condition: {key: k, operator: exists}\n"
		 "  then: [a]\n",
		 1);
	unit_assert_diag(&diags, FLOW_FILE, 4, 9, "'then' must be a mapping, not a list");
}

Test(flow, break_loop_needs_a_loop_around_it)
{
	load_bad("flow:\n  id: s\n  type: sequence\n  children:\n    - {skill: a}\n"
		 "    - {skill: break_loop}\n", 1);
	unit_assert_diag(&diags, FLOW_FILE, 6, 7, "'break_loop' ends the nearest loop around it");
	load_ok("flow:\n  id: l\n  type: loop\n  children:\n    - id: p\n      type: parallel\n"
		"      children: [{skill: a}, {skill: break_loop}]\n");
}

Test(flow, action_fields)
{
	struct al_node *n = load_ok("flow:\n"
				    "  type: loop\n" /* break_loop needs a loop around it */
				    "  id: s\n"
				    "  children:\n"
				    "    - id: act\n"
				    "      type: action\n"
				    "      skill: write_tests\n"
				    "      args: '--fast'\n"
				    "      target: spec/models\n"
				    "      description: Write the specs\n"
				    "      message: add the specs\n"
				    "      feedback_enabled: true\n"
				    "      output_to_memory: tests.written\n"
				    "      agent: .ai-loop/agents/act.md\n"
				    "      timeout_seconds: 300\n"
				    "    - id: byname\n"
				    "      task: review\n"
				    "      agent: RSpec Specialist\n"
				    "    - id: camel\n"
				    "      skill: check\n"
				    "      agent: TestOracle\n"
				    "    - id: brk\n"
				    "      type: Action\n"
				    "      skill: break_loop\n");
	struct al_node *a = find("s/act");

	cr_assert_eq(n->nchildren, 4);
	cr_assert_eq(a->type, AL_NODE_ACTION);
	cr_assert_str_eq(a->skill, "write_tests");
	cr_assert_str_eq(a->args, "--fast");
	cr_assert_str_eq(a->target, "spec/models");
	cr_assert_str_eq(a->description, "Write the specs");
	cr_assert_str_eq(a->message, "add the specs");
	cr_assert(a->feedback_enabled);
	cr_assert_str_eq(a->output_to_memory, "tests.written");
	cr_assert_str_eq(a->action_agent.path, ".ai-loop/agents/act.md");
	cr_assert_eq(a->action_agent.pos.line, 14);
	cr_assert_eq(a->action_agent.pos.col, 14);
	cr_assert(a->action_agent.agent->loaded);
	cr_assert_eq(a->timeout_seconds, 300);
	cr_assert_not(a->break_loop);

	a = find("s/byname");
	cr_assert_str_eq(a->skill, "review", "task is a synonym of skill");
	cr_assert_str_eq(a->action_agent.path, ".ai-loop/agents/rspec-specialist.md");
	cr_assert(a->action_agent.agent->loaded);
	cr_assert_not(a->feedback_enabled);
	cr_assert_null(a->args);
	cr_assert_str_eq(find("s/camel")->action_agent.path, ".ai-loop/agents/test-oracle.md");
	a = find("s/brk");
	cr_assert(a->break_loop);
	cr_assert_null(a->action_agent.path);
	cr_assert_eq(flow->agents.n, 3, "act, rspec-specialist and test-oracle");
}

Test(flow, action_mistakes)
{
	load_bad("flow:\n"
		 "  type: sequence\n"
		 "  children:\n"
		 "    - {skill: a, task: b}\n"
		 "    - {skill: a, agent: Nobody Here}\n"
		 "    - {skill: a, agent: '  '}\n"
		 "    - {skill: a, feedback_enabled: maybe}\n"
		 "    - {skill: a, args: [x]}\n",
		 5);
	unit_assert_diag(&diags, FLOW_FILE, 4, 18, "'skill' and 'task' are the same: give one");
	unit_assert_diag(&diags, FLOW_FILE, 5, 25,
			 "agent file '.ai-loop/agents/nobody-here.md' does not exist");
	unit_assert_diag(&diags, FLOW_FILE, 6, 25, "agent name '  ' has no letters or digits");
	unit_assert_diag(&diags, FLOW_FILE, 7, 36, "'feedback_enabled' must be true or false");
	unit_assert_diag(&diags, FLOW_FILE, 8, 24, "'args' must be a string, not a list");
}

Test(flow, default_action_agent_comes_from_defaults)
{
	struct al_node *n = load_ok("defaults:\n"
				    "  action_agent: .ai-loop/agents/test-oracle.md\n"
				    "flow: {skill: judge}\n");

	cr_assert_eq(n->type, AL_NODE_ACTION);
	cr_assert_str_eq(n->id, "action-1");
	cr_assert_str_eq(n->action_agent.path, ".ai-loop/agents/test-oracle.md");
	cr_assert(n->action_agent.agent->loaded);
	/* a missing default agent is reported once, where it is written */
	load_bad("defaults:\n"
		 "  action_agent: .ai-loop/agents/none.md\n"
		 "flow:\n"
		 "  type: sequence\n"
		 "  children:\n"
		 "    - {skill: a}\n"
		 "    - {skill: b}\n",
		 1);
	unit_assert_diag(&diags, FLOW_FILE, 2, 17, "agent file '.ai-loop/agents/none.md' does not exist");
}

Test(flow, types_are_case_insensitive_and_checked)
{
	struct al_node *n = load_ok("flow:\n"
				    "  type: SEQUENCE\n"
				    "  children:\n"
				    "    - {type: FallBack, children: [{type: ACTION, skill: a}]}\n"
				    "    - {type: pArAlLeL, children: [{skill: b}]}\n");

	cr_assert_eq(n->type, AL_NODE_SEQUENCE);
	cr_assert_eq(n->children[0]->type, AL_NODE_FALLBACK);
	cr_assert_str_eq(n->children[0]->id, "fallback-1", "generated ids use the canonical name");
	cr_assert_eq(n->children[0]->children[0]->type, AL_NODE_ACTION);
	cr_assert_eq(n->children[1]->type, AL_NODE_PARALLEL);
	cr_assert_str_eq(al_node_type_name(AL_NODE_TRANSACTION), "transaction");

	load_bad("flow:\n"
		 "  type: sequence\n"
		 "  children:\n"
		 "    - {type: sequense, children: [{skill: a}]}\n"
		 "    - {type: Paralel, children: [{skill: a}]}\n"
		 "    - {type: banana}\n"
		 "    - {type: [loop]}\n"
		 "    - {id: x}\n",
		 5);
	unit_assert_diag(&diags, FLOW_FILE, 4, 14, "unknown node type 'sequense' (did you mean 'sequence'?)");
	unit_assert_diag(&diags, FLOW_FILE, 5, 14, "unknown node type 'Paralel' (did you mean 'parallel'?)");
	unit_assert_diag(&diags, FLOW_FILE, 6, 14, "unknown node type 'banana' (expected loop,");
	unit_assert_diag(&diags, FLOW_FILE, 7, 14, "'type' must be a string, not a list");
	unit_assert_diag(&diags, FLOW_FILE, 8, 7, "node needs a 'type'");
}

Test(flow, id_and_node_id_are_synonyms)
{
	struct al_node *n = load_ok("flow:\n"
				    "  node_id: root\n"
				    "  type: sequence\n"
				    "  children:\n"
				    "    - {node_id: first, skill: a}\n"
				    "    - {id: Second_2, skill: b}\n"
				    "    - {id: 3rd, skill: c}\n");

	cr_assert_str_eq(n->id, "root");
	cr_assert_str_eq(n->children[0]->path, "root/first");
	cr_assert_str_eq(n->children[1]->id, "Second_2");
	cr_assert_str_eq(n->children[2]->id, "3rd");
	cr_assert_not(n->children[2]->id_generated);
}

Test(flow, ids_are_checked)
{
	load_bad("flow:\n"
		 "  id: root\n"
		 "  node_id: root\n"
		 "  type: sequence\n"
		 "  children:\n"
		 "    - {id: a/b, skill: a}\n"
		 "    - {id: '..', skill: a}\n"
		 "    - {id: has space, skill: a}\n"
		 "    - {id: -x, skill: a}\n"
		 "    - {id: [x], skill: a}\n"
		 "    - {id: dup, skill: a}\n"
		 "    - {id: dup, skill: a}\n",
		 7);
	unit_assert_diag(&diags, FLOW_FILE, 3, 3, "'id' and 'node_id' are the same: give one");
	unit_assert_diag(&diags, FLOW_FILE, 6, 12, "invalid id 'a/b'");
	unit_assert_diag(&diags, FLOW_FILE, 7, 12, "invalid id '..'");
	unit_assert_diag(&diags, FLOW_FILE, 8, 12, "invalid id 'has space'");
	unit_assert_diag(&diags, FLOW_FILE, 9, 12, "invalid id '-x'");
	unit_assert_diag(&diags, FLOW_FILE, 10, 12, "'id' must be a string, not a list");
	unit_assert_diag(&diags, FLOW_FILE, 12, 12, "duplicate id 'dup' among siblings (first at line 11)");
}

Test(flow, generated_ids_use_type_and_position)
{
	struct al_node *n = load_ok("flow:\n"
				    "  type: sequence\n"
				    "  children:\n"
				    "    - {skill: a}\n"
				    "    - {type: sequence, children: [{skill: b}, {skill: c}]}\n"
				    "    - {id: named, skill: d}\n"
				    "    - type: loop\n"
				    "      controller: builtin:all-pass\n"
				    "      sensors: [.ai-loop/agents/sensor-a.md]\n"
				    "      actuator: {agent: .ai-loop/agents/act.md}\n");

	cr_assert_str_eq(n->id, "sequence-1");
	cr_assert(n->id_generated);
	cr_assert_str_eq(n->children[0]->id, "action-1");
	cr_assert_str_eq(n->children[1]->id, "sequence-2");
	cr_assert_str_eq(n->children[1]->children[1]->path, "sequence-1/sequence-2/action-2");
	cr_assert_str_eq(n->children[2]->id, "named");
	cr_assert_str_eq(n->children[3]->id, "loop-4");
	/* an invalid id is reported and replaced, so the rest still loads */
	load_bad("flow: {id: 'x y', type: sequence, children: [{skill: a}]}\n", 1);
}

/* --- the top level ------------------------------------------------------- */

Test(flow, root_node_and_workflow_name)
{
	struct al_node *n = load_ok("workflow_name: Ship it\n"
				    "workflow_type: reactree\n"
				    "description: a ReAcTree workflow file\n"
				    "root_node:\n"
				    "  node_id: root\n"
				    "  type: sequence\n"
				    "  children: [{skill: a}]\n");

	cr_assert_str_eq(flow->workflow_name, "Ship it");
	cr_assert_str_eq(n->id, "root");
	load_bad("flow: {skill: a}\nroot_node: {skill: b}\n", 1);
	unit_assert_diag(&diags, FLOW_FILE, 2, 1, "'flow' and 'root_node' are the same: give one");
}

Test(flow, defaults_models_limits_runners)
{
	const struct al_runner *r;

	load_ok("version: 1\n"
		"defaults:\n"
		"  runner: mine\n"
		"  agent_timeout_seconds: 900\n"
		"  action_agent: .ai-loop/agents/act.md\n"
		"  termination:\n"
		"    on_error: continue\n"
		"runners:\n"
		"  mine:\n"
		"    command: [my-agent, --model, '{model}']\n"
		"    prompt: file\n"
		"    install: pip install my-agent\n"
		"  claude:\n"
		"    command: [claude, -p]\n"
		"models:\n"
		"  converge: haiku\n"
		"limits:\n"
		"  max_agent_calls_per_hour: 60\n"
		"flow: {id: a, skill: x}\n");
	cr_assert_str_eq(flow->default_runner, "mine");
	cr_assert_eq(flow->default_runner_pos.line, 3);
	cr_assert_eq(flow->default_runner_pos.col, 11);
	cr_assert_eq(flow->agent_timeout_seconds, 900);
	cr_assert_str_eq(flow->action_agent, ".ai-loop/agents/act.md");
	cr_assert_eq(flow->on_error, AL_ON_ERROR_CONTINUE);
	cr_assert_str_eq(flow->converge_model, "haiku");
	cr_assert_eq(flow->max_agent_calls_per_hour, 60);
	cr_assert_str_eq(flow->root->action_agent.path, ".ai-loop/agents/act.md");
	r = al_runners_find(&flow->runners, "mine");
	cr_assert_not_null(r);
	cr_assert_str_eq(r->argv[0], "my-agent");
	cr_assert_str_eq(r->argv[2], "{model}");
	cr_assert_null(r->argv[3]);
	cr_assert_eq(r->prompt, AL_PROMPT_FILE);
	cr_assert_str_eq(r->install, "pip install my-agent");
	cr_assert_eq(r->pos.line, 9);
	r = al_runners_find(&flow->runners, "claude");
	cr_assert_str_eq(r->argv[1], "-p");
	cr_assert_null(r->argv[2], "overridden");
	cr_assert_not_null(al_runners_find(&flow->runners, "codex"), "built-ins stay");
}

Test(flow, a_runners_session)
{
	const struct al_runner *r;
	const struct al_runner_session *s;

	load_ok("runners:\n"
		"  mine:\n"
		"    command: [my-cli, '{session}']\n"
		"    output: claude-json\n"
		"    session:\n"
		"      fresh: []\n"
		"      start: [--session-id, '{session-id}']\n"
		"      resume: [--resume, '{session-id}']\n"
		"      cumulative_usage: true\n"
		"  claude:\n"
		"    session: {resume: [-r, '{session-id}']}\n"
		"flow: {id: a, skill: x}\n");
	r = al_runners_find(&flow->runners, "mine");
	s = al_runner_session(r);
	cr_assert_eq(s, &r->session);
	cr_assert_null(s->fresh[0], "given empty: nothing");
	cr_assert_str_eq(s->start[0], "--session-id");
	cr_assert_str_eq(s->start[1], "{session-id}");
	cr_assert_null(s->start[2]);
	cr_assert_str_eq(s->resume[0], "--resume");
	cr_assert(s->cumulative_usage);
	/* a preset's session replaced; what it does not say, it does not do */
	s = al_runner_session(al_runners_find(&flow->runners, "claude"));
	cr_assert_str_eq(s->resume[0], "-r");
	cr_assert_null(s->fresh);
	cr_assert_null(s->start);
	cr_assert_not(s->cumulative_usage);
	/* a runner without one: its output format's */
	s = al_runner_session(al_runners_find(&flow->runners, "codex"));
	cr_assert_str_eq(s->fresh[0], "--ephemeral");
	cr_assert(s->cumulative_usage);
}

Test(flow, a_runners_session_mistakes)
{
	load_bad("runners:\n"
		 "  mine:\n"
		 "    command: [my-cli, '{session}']\n"
		 "    session:\n"
		 "      fresh: ['--id={session-id}']\n"   /* 5 */
		 "      start: --new\n"                   /* 6 */
		 "      resume: [--resume]\n"             /* 7 */
		 "      cumulative_usage: often\n"        /* 8 */
		 "      restart: []\n"                    /* 9 */
		 "  plain:\n"
		 "    command: [my-cli]\n"
		 "    session: {}\n"                      /* 12 */
		 "  odd:\n"
		 "    command: [my-cli, '{session}']\n"
		 "    session: [--resume]\n"              /* 15 */
		 "flow: {id: a, skill: x}\n",
		 7);
	unit_assert_diag(&diags, FLOW_FILE, 5, 14, "runner 'mine': a fresh agent has no session, so "
			 "'fresh' cannot hold {session-id}");
	unit_assert_diag(&diags, FLOW_FILE, 6, 14, "'start'");
	unit_assert_diag(&diags, FLOW_FILE, 7, 15, "runner 'mine': 'resume' must hold {session-id}");
	unit_assert_diag(&diags, FLOW_FILE, 8, 25, "'cumulative_usage'");
	unit_assert_diag(&diags, FLOW_FILE, 9, 7, "unknown key 'restart' in session");
	unit_assert_diag(&diags, FLOW_FILE, 12, 14, "runner 'plain' has a 'session' but no {session} "
			 "argument in its command");
	unit_assert_diag(&diags, FLOW_FILE, 15, 14, "'session'");
}

Test(flow, defaults_when_absent)
{
	load_ok("flow: {id: a, skill: x}\n");
	cr_assert_str_eq(flow->default_runner, "claude");
	cr_assert_eq(flow->agent_timeout_seconds, AL_DEFAULT_AGENT_TIMEOUT);
	cr_assert_str_eq(flow->action_agent, AL_DEFAULT_ACTION_AGENT);
	cr_assert_eq(flow->on_error, AL_ON_ERROR_FAIL_FAST);
	cr_assert_null(flow->converge_model);
	cr_assert_eq(flow->max_agent_calls_per_hour, 0);
	cr_assert_null(flow->workflow_name);
	cr_assert_not_null(al_runners_find(&flow->runners, "aider"));
}

Test(flow, section_mistakes)
{
	unit_write(AGENTS "odd-runner.md", "---\nrunner: nosuch\n---\nprompt\n");
	load_bad("version: 1\n"
		 "defaults:\n"
		 "  runner: nope\n"                       /* 3 */
		 "  agent_timeout_seconds: 0\n"           /* 4 */
		 "  timeout: 5\n"                         /* 5 */
		 "  termination: {on_error: stop}\n"      /* 6 */
		 "runners:\n"
		 "  bad name: {command: [x]}\n"           /* 8 */
		 "  empty: {command: [], prompt: arg}\n"  /* 9 */
		 "  none: {prompt: stdin}\n"              /* 10 */
		 "  mode: {command: [x], prompt: pipe}\n" /* 11 */
		 "models: {converge: haiku, fast: x}\n"   /* 12 */
		 "limits: {max_agent_calls_per_hour: -1}\n" /* 13 */
		 "flow: {skill: a, agent: .ai-loop/agents/odd-runner.md}\n", /* 14 */
		 12);
	unit_assert_diag(&diags, FLOW_FILE, 3, 11, "unknown runner 'nope' (known: claude, codex");
	unit_assert_diag(&diags, FLOW_FILE, 4, 26, "'agent_timeout_seconds' must be between 1 and");
	unit_assert_diag(&diags, FLOW_FILE, 5, 3, "unknown key 'timeout' in defaults");
	unit_assert_diag(&diags, FLOW_FILE, 6, 27, "unknown on_error 'stop'");
	unit_assert_diag(&diags, FLOW_FILE, 8, 3, "invalid runner name 'bad name'");
	unit_assert_diag(&diags, FLOW_FILE, 9, 20, "runner command must not be empty");
	/* (and, having none, it also needs one) */
	unit_assert_diag(&diags, FLOW_FILE, 9, 3, "runner 'empty' needs a 'command'");
	unit_assert_diag(&diags, FLOW_FILE, 10, 3, "runner 'none' needs a 'command'");
	unit_assert_diag(&diags, FLOW_FILE, 11, 32, "unknown prompt 'pipe'");
	unit_assert_diag(&diags, FLOW_FILE, 12, 27, "unknown key 'fast' in models");
	unit_assert_diag(&diags, FLOW_FILE, 13, 36, "'max_agent_calls_per_hour' must not be negative");
	unit_assert_diag(&diags, ".ai-loop/agents/odd-runner.md", 2, 9, "unknown runner 'nosuch'");
}

Test(flow, top_level_mistakes)
{
	cr_assert_eq(load("version: 1\n"), AL_EINVALID);
	unit_assert_ndiags(&diags, 1);
	unit_assert_diag(&diags, FLOW_FILE, 1, 1, "the flow file needs a 'flow' (the root node)");
	cr_assert_eq(load("flow:\n"), AL_EINVALID);
	unit_assert_ndiags(&diags, 1);
	unit_assert_diag(&diags, FLOW_FILE, 1, 1, "'flow' is empty: it must be the root node");
	cr_assert_eq(load(""), AL_EINVALID);
	unit_assert_ndiags(&diags, 1);
	unit_assert_diag(&diags, FLOW_FILE, 1, 1, "flow file is empty");
	cr_assert_eq(load("# nothing\n"), AL_EINVALID);
	unit_assert_diag(&diags, FLOW_FILE, 1, 1, "flow file is empty");
	cr_assert_eq(load("- a\n- b\n"), AL_EINVALID);
	unit_assert_ndiags(&diags, 1);
	unit_assert_diag(&diags, FLOW_FILE, 1, 1, "a flow file must be a mapping of keys, not a list");
	cr_assert_eq(load("version: 2\nflwo: {skill: a}\n"), AL_EINVALID);
	unit_assert_ndiags(&diags, 3);
	unit_assert_diag(&diags, FLOW_FILE, 1, 10, "unsupported flow version '2'");
	unit_assert_diag(&diags, FLOW_FILE, 2, 1, "unknown key 'flwo' in the flow file (did you mean 'flow'?)");
	cr_assert_eq(load("version: \"1\"\nflow: {skill: a}\n"), AL_EINVALID);
	unit_assert_diag(&diags, FLOW_FILE, 1, 10, "'version' must be the whole number 1, not a string ('1')");
	cr_assert_eq(load("version: 1.0\nflow: {skill: a}\n"), AL_EINVALID);
	unit_assert_diag(&diags, FLOW_FILE, 1, 10,
			 "'version' must be the whole number 1, not a decimal number ('1.0')");
	cr_assert_eq(load("flow: [a]\n"), AL_EINVALID);
	unit_assert_ndiags(&diags, 1);
	unit_assert_diag(&diags, FLOW_FILE, 1, 7, "a node must be a mapping, not a list");
	cr_assert_eq(load("flow: {skill: a}\nflow: {skill: b}\n"), AL_EINVALID);
	unit_assert_diag(&diags, FLOW_FILE, 2, 1, "duplicate key 'flow'");
	cr_assert_eq(load("flow: {skill: a\n"), AL_EINVALID);
	unit_assert_ndiags(&diags, 1);
	cr_assert_null(flow);
}

Test(flow, a_missing_file_is_not_a_diagnostic)
{
	cr_assert_eq(al_flow_load(&flow, "nope.yaml", &diags), AL_ENOTFOUND);
	cr_assert_null(flow);
	unit_assert_ndiags(&diags, 0);
	cr_assert_str_eq(al_errmsg(), "no flow at 'nope.yaml'");
}

Test(flow, json_flows_load)
{
	struct al_node *n = load_ok("{\n"
				    "\t\"workflow_name\":\"json\",\n"
				    "\t\"root_node\":{\"node_id\":\"root\",\"type\":\"SEQUENCE\",\"children\":[\n"
				    "\t\t{\"type\":\"action\",\"skill\":\"a\",\"feedback_enabled\":false},\n"
				    "\t\t{\"type\":\"conditional\",\"condition\":{\"type\":\"custom\","
				    "\"expression\":\"true\"},\"then\":{\"skill\":\"b\"}}\n"
				    "\t]}\n"
				    "}\n");

	cr_assert_str_eq(n->id, "root");
	cr_assert_eq(n->nchildren, 2);
	cr_assert_eq(n->children[1]->condition->type, AL_COND_COMMAND);
	cr_assert_eq(n->children[0]->pos.line, 4);
	cr_assert_eq(n->children[0]->pos.col, 3);
}

/* --- loops: mistakes ----------------------------------------------------- */

Test(flow, sensor_form_mistakes)
{
	load_bad("flow:\n"
		 "  id: l\n"
		 "  type: loop\n"
		 "  controler: x\n"                                     /* 4 */
		 "  sensors:\n"
		 "    - .ai-loop/agents/sensor-a.md\n"
		 "    - .ai-loop/agents/sensor-a.md\n"                  /* 7 */
		 "    - [x]\n"                                          /* 8 */
		 "    - .ai-loop/agents/missing.md\n"                   /* 9 */
		 "  sensors_parallel: sometimes\n"                      /* 10 */
		 "  actuator:\n"
		 "    strategy: composite\n"                            /* 12 */
		 "    agent: .ai-loop/agents/act.md\n"                  /* 13 */
		 "  termination: {max_iterations: 0, timout_seconds: 5}\n", /* 14 */
		 10);
	unit_assert_diag(&diags, FLOW_FILE, 2, 3, "loop needs a 'controller'");
	unit_assert_diag(&diags, FLOW_FILE, 4, 3,
			 "unknown key 'controler' in a sensor-form loop node (did you mean 'controller'?)");
	unit_assert_diag(&diags, FLOW_FILE, 7, 7, "sensor name 'unit' is used twice in this loop");
	unit_assert_diag(&diags, FLOW_FILE, 8, 7, "each sensor must be the path of an agent file, not a list");
	unit_assert_diag(&diags, FLOW_FILE, 9, 7, "agent file '.ai-loop/agents/missing.md' does not exist");
	unit_assert_diag(&diags, FLOW_FILE, 10, 21, "'sensors_parallel' must be true or false");
	unit_assert_diag(&diags, FLOW_FILE, 12, 5, "a composite actuator needs a 'child' node");
	unit_assert_diag(&diags, FLOW_FILE, 13, 5, "a composite actuator runs its child, not an 'agent'");
	unit_assert_diag(&diags, FLOW_FILE, 14, 33, "'max_iterations' must be between 1 and 100000");
	unit_assert_diag(&diags, FLOW_FILE, 14, 36,
			 "unknown key 'timout_seconds' in termination (did you mean 'timeout_seconds'?)");
}

Test(flow, loop_termination_ranges)
{
	load_bad("flow:\n"
		 "  type: loop\n"
		 "  controller: builtin:all-pass\n"
		 "  actuator: {agent: .ai-loop/agents/act.md}\n"
		 "  termination: {max_iterations: 0, timeout_seconds: -1}\n",
		 2);
	unit_assert_diag(&diags, FLOW_FILE, 5, 33, "'max_iterations' must be between 1 and 100000 (got 0)");
	unit_assert_diag(&diags, FLOW_FILE, 5, 53, "'timeout_seconds' must not be negative");
}

Test(flow, actuator_mistakes)
{
	load_bad("flow:\n"
		 "  type: sequence\n"
		 "  children:\n"
		 "    - type: loop\n"                                            /* 4 */
		 "      controller: builtin:all-pass\n"
		 "      actuator: {strategy: direct, child: {skill: a}}\n"       /* 6 */
		 "    - type: loop\n"                                            /* 7 */
		 "      controller: builtin:everything\n"                        /* 8 */
		 "      actuator: {strategy: sideways, agent: x}\n"              /* 9 */
		 "    - type: loop\n"                                            /* 10 */
		 "      controller: builtin:all-pass\n"
		 "      actuator: {agent: .ai-loop/agents/act.md, extra: 1}\n"   /* 12 */
		 "    - type: loop\n"                                            /* 13 */
		 "      controller: builtin:all-pass\n",
		 6);
	unit_assert_diag(&diags, FLOW_FILE, 6, 17, "a direct actuator needs an 'agent'");
	unit_assert_diag(&diags, FLOW_FILE, 6, 36,
			 "a direct actuator runs an agent: use strategy composite for a 'child'");
	unit_assert_diag(&diags, FLOW_FILE, 8, 19, "unknown builtin controller 'builtin:everything'");
	unit_assert_diag(&diags, FLOW_FILE, 9, 28, "unknown strategy 'sideways'");
	unit_assert_diag(&diags, FLOW_FILE, 12, 49, "unknown key 'extra' in actuator");
	unit_assert_diag(&diags, FLOW_FILE, 13, 7, "loop needs an 'actuator'");
}

Test(flow, both_loop_forms_at_once)
{
	load_bad("flow:\n"
		 "  type: loop\n"
		 "  controller: builtin:all-pass\n"
		 "  actuator: {agent: .ai-loop/agents/act.md}\n"
		 "  children: [{skill: a}]\n",
		 1);
	/* said once: 'children' is not reported again as an unknown key */
	unit_assert_diag(&diags, FLOW_FILE, 2, 3, "a loop has either 'controller'/'sensors'/'actuator' or "
			 "'children'/'condition', not both");
	load_bad("flow:\n  type: loop\n  condition: {key: k, operator: exists}\n", 1);
	unit_assert_diag(&diags, FLOW_FILE, 2, 3, "loop needs 'controller', 'sensors' and 'actuator', or 'children'");
	load_bad("flow:\n  type: loop\n  children: []\n", 1);
	unit_assert_diag(&diags, FLOW_FILE, 3, 13, "loop has no children");
}

Test(flow, null_values_do_not_stand_in_for_required_keys)
{
	load_bad("flow:\n"
		 "  type: loop\n"
		 "  controller:\n"
		 "  actuator: {agent: .ai-loop/agents/act.md}\n",
		 1);
	unit_assert_diag(&diags, FLOW_FILE, 2, 3, "loop needs a 'controller'");
	load_bad("flow:\n  type: sequence\n  children: ~\n", 1);
	unit_assert_diag(&diags, FLOW_FILE, 2, 3, "sequence node needs 'children'");
	load_bad("flow:\n  type: loop\n  exit_on: manual_break\n  children:\n", 1);
	unit_assert_diag(&diags, FLOW_FILE, 2, 3, "loop needs");
}

Test(flow, composite_mistakes)
{
	load_bad("flow:\n"
		 "  type: sequence\n"
		 "  children:\n"
		 "    - {type: fallback}\n"                                      /* 4 */
		 "    - {type: parallel, children: []}\n"                        /* 5 */
		 "    - {type: parallel, success_threshold: 3, failure_threshold: 2, children: [{skill: a}]}\n" /* 6 */
		 "    - {type: parallel, max_concurrency: 0, children: [{skill: a}]}\n" /* 7 */
		 "    - {type: transaction, rollback_on: [failure, crash], children: [{skill: a}]}\n" /* 8 */
		 "    - {type: sequence, children: [{skill: a}], rollback_on: [failure]}\n" /* 9 */
		 "    - {type: sequence, children: [{skill: a}], termination: {max_iterations: 3}}\n", /* 10 */
		 8);
	unit_assert_diag(&diags, FLOW_FILE, 4, 7, "fallback node needs 'children'");
	unit_assert_diag(&diags, FLOW_FILE, 5, 34, "parallel node has no children");
	unit_assert_diag(&diags, FLOW_FILE, 6, 43, "success_threshold 3 is more than the 1 children");
	unit_assert_diag(&diags, FLOW_FILE, 6, 65, "failure_threshold 2 is more than the 1 children");
	unit_assert_diag(&diags, FLOW_FILE, 7, 41, "'max_concurrency' must be between 1 and 1024");
	unit_assert_diag(&diags, FLOW_FILE, 8, 50, "unknown rollback_on 'crash'");
	unit_assert_diag(&diags, FLOW_FILE, 9, 48, "unknown key 'rollback_on' in a sequence node");
	unit_assert_diag(&diags, FLOW_FILE, 10, 62,
			 "'max_iterations' is for loop nodes only (this is a sequence node)");
	cr_assert_null(strstr(diags.v[7].msg, "did you mean"), "%s", diags.v[7].msg);
}

Test(flow, nesting_deeper_than_the_limit_is_refused)
{
	struct al_strbuf text = AL_STRBUF_INIT;
	int levels = AL_FLOW_MAX_DEPTH + 6;

	al_strbuf_adds(&text, "flow: ");
	for (int i = 0; i < levels; i++)
		al_strbuf_adds(&text, "{type: sequence, children: [");
	al_strbuf_adds(&text, "{skill: a}");
	for (int i = 0; i < levels; i++)
		al_strbuf_adds(&text, "]}");
	al_strbuf_addch(&text, '\n');
	cr_assert_eq(load(text.buf), AL_EINVALID);
	unit_assert_ndiags(&diags, 1);
	cr_assert(strstr(diags.v[0].msg, "flow nesting deeper than 64 levels"), "%s",
		  unit_diags_text(&diags));
	al_strbuf_release(&text);

	/* exactly the limit loads */
	al_strbuf_adds(&text, "flow: ");
	for (int i = 0; i < AL_FLOW_MAX_DEPTH - 1; i++)
		al_strbuf_adds(&text, "{type: sequence, children: [");
	al_strbuf_adds(&text, "{skill: a}");
	for (int i = 0; i < AL_FLOW_MAX_DEPTH - 1; i++)
		al_strbuf_adds(&text, "]}");
	al_strbuf_addch(&text, '\n');
	cr_assert_eq(load(text.buf), 0, "%s", unit_diags_text(&diags));
	cr_assert_eq(flow->node_count, AL_FLOW_MAX_DEPTH);
	cr_assert_eq(flow->max_depth, AL_FLOW_MAX_DEPTH - 1);
	al_strbuf_release(&text);
}

/* --- every error, in order ----------------------------------------------- */

Test(flow, every_mistake_is_reported_in_line_order)
{
	load_bad("version: 2\n"                    /* 1: version */
		 "flow:\n"
		 "  id: main\n"
		 "  type: sequence\n"
		 "  children:\n"
		 "    - id: bad/id\n"                /* 6: id */
		 "      skill: x\n"
		 "    - id: t\n"
		 "      skill: y\n"
		 "      timeout_seconds: -5\n"       /* 10: negative */
		 "    - id: u\n"
		 "      skill: z\n"
		 "      agentt: foo\n"               /* 13: unknown key */
		 "limits:\n"
		 "  max_agent_calls_per_hour: lots\n", /* 15: found before the nodes */
		 5);
	cr_assert_eq(diags.v[0].pos.line, 1);
	cr_assert_eq(diags.v[1].pos.line, 6);
	cr_assert_eq(diags.v[2].pos.line, 10);
	cr_assert_eq(diags.v[3].pos.line, 13);
	cr_assert_eq(diags.v[4].pos.line, 15);
	unit_assert_diag(&diags, FLOW_FILE, 1, 10, "unsupported flow version '2'");
	unit_assert_diag(&diags, FLOW_FILE, 6, 11, "invalid id 'bad/id'");
	unit_assert_diag(&diags, FLOW_FILE, 10, 24, "'timeout_seconds' must not be negative (got -5)");
	unit_assert_diag(&diags, FLOW_FILE, 13, 7, "unknown key 'agentt' in an action node (did you mean 'agent'?)");
	unit_assert_diag(&diags, FLOW_FILE, 15, 29, "'max_agent_calls_per_hour' must be a whole number");
}

Test(flow, agent_file_errors_follow_the_flow_errors)
{
	unit_write(AGENTS "broken.md", "---\ntimeout: x\n---\nprompt\n");
	load_bad("flow:\n"
		 "  type: sequence\n"
		 "  children:\n"
		 "    - {skill: a, agent: .ai-loop/agents/broken.md}\n"
		 "    - {skill: a, agent: .ai-loop/agents/broken.md}\n"
		 "    - {skill: a, agent: .ai-loop/agents/gone.md}\n"
		 "    - {skill: a, agent: .ai-loop/agents/gone.md, extra: 1}\n",
		 4);
	/* the flow's own errors first, then each agent file's, each in line order */
	cr_assert_str_eq(diags.v[0].pos.file, FLOW_FILE);
	cr_assert_eq(diags.v[0].pos.line, 6);
	cr_assert_eq(diags.v[1].pos.line, 7);
	cr_assert_eq(diags.v[1].pos.col, 25);
	cr_assert_eq(diags.v[2].pos.line, 7);
	cr_assert_eq(diags.v[2].pos.col, 50);
	cr_assert_str_eq(diags.v[3].pos.file, AGENTS "broken.md");
	unit_assert_diag(&diags, AGENTS "broken.md", 2, 10, "'timeout' must be a whole number");
	unit_assert_diag(&diags, FLOW_FILE, 6, 25, "agent file '.ai-loop/agents/gone.md' does not exist");
	unit_assert_diag(&diags, FLOW_FILE, 7, 25, "agent file '.ai-loop/agents/gone.md' does not exist");
	unit_assert_diag(&diags, FLOW_FILE, 7, 50, "unknown key 'extra'");
}

/* --- conditions through flows -------------------------------------------- */

Test(flow, conditions_in_nodes)
{
	struct al_node *n = load_ok("flow:\n"
				    "  type: conditional\n"
				    "  condition:\n"
				    "    all:\n"
				    "      - {type: test_result, key: unit.failed, operator: equals, value: 0}\n"
				    "      - any:\n"
				    "          - {type: file_exists, path: 'spec/**/*_spec.rb'}\n"
				    "          - not: {type: command, command: [git, diff, --quiet]}\n"
				    "      - {type: custom, expression: 'test -s out.txt'}\n"
				    "      - {key: log, operator: matches_regex, value: '^ok \\d+$'}\n"
				    "  then: {skill: a}\n");
	const struct al_condition *c = n->condition;

	cr_assert_eq(c->kind, AL_COND_ALL);
	cr_assert_eq(c->nsubs, 4);
	cr_assert_eq(c->subs[0]->type, AL_COND_TEST_RESULT);
	cr_assert_eq(c->subs[1]->kind, AL_COND_ANY);
	cr_assert_eq(c->subs[1]->subs[0]->op, AL_OP_EXISTS, "file_exists defaults to exists");
	cr_assert_eq(c->subs[1]->subs[1]->kind, AL_COND_NOT);
	cr_assert_str_eq(c->subs[1]->subs[1]->subs[0]->argv[2], "--quiet");
	cr_assert_str_eq(c->subs[2]->expression, "test -s out.txt");
	cr_assert_null(c->subs[2]->argv);
	cr_assert_not_null(c->subs[3]->re, "compiled when the flow loads");

	load_bad("flow:\n"
		 "  type: conditional\n"
		 "  condition: {key: log, operator: matches_regex, value: 'ok (\\d+'}\n"
		 "  then: {skill: a}\n",
		 1);
	/* the end of the pattern, offset 7: the closing quote at column 65 */
	unit_assert_diag(&diags, FLOW_FILE, 3, 65, "invalid regular expression in 'value'");
	load_bad("flow:\n"
		 "  type: loop\n"
		 "  condition: {any: [{key: k, operater: exists}]}\n"
		 "  children: [{skill: a}]\n",
		 2);
	unit_assert_diag(&diags, FLOW_FILE, 3, 21, "condition needs an 'operator'");
	unit_assert_diag(&diags, FLOW_FILE, 3, 30, "unknown key 'operater' in condition");
}

/* --- walking and finding ------------------------------------------------- */

static void collect(struct al_node *n, void *data)
{
	struct al_strbuf *sb = data;

	al_strbuf_addf(sb, "%s%s", sb->len ? " " : "", n->path);
}

static const char walk_flow[] =
	"flow:\n"
	"  id: top\n"
	"  type: sequence\n"
	"  children:\n"
	"    - id: c\n"
	"      type: conditional\n"
	"      condition: {key: k, operator: exists}\n"
	"      else: {id: e, skill: a}\n"
	"      then: {id: t, skill: a}\n"
	"    - id: l\n"
	"      type: loop\n"
	"      controller: builtin:all-pass\n"
	"      actuator:\n"
	"        child:\n"
	"          id: p\n"
	"          type: parallel\n"
	"          children: [{id: x, skill: a}, {id: y, skill: b}]\n"
	"    - id: z\n"
	"      skill: c\n";

Test(flow, walk_visits_parents_before_children_in_order)
{
	struct al_strbuf sb = AL_STRBUF_INIT;

	load_ok(walk_flow);
	al_flow_walk(flow->root, collect, &sb);
	cr_assert_str_eq(sb.buf, "top top/c top/c/t top/c/e top/l top/l/p top/l/p/x top/l/p/y top/z");
	al_strbuf_release(&sb);
	al_flow_walk(NULL, collect, &sb);
	cr_assert_eq(sb.len, 0);
	cr_assert_eq(flow->node_count, 9);
	cr_assert_eq(flow->max_depth, 3);
}

Test(flow, find_by_path)
{
	load_ok(walk_flow);
	cr_assert_eq(al_flow_find(flow, "top"), flow->root);
	cr_assert_str_eq(find("top/c/e")->id, "e");
	cr_assert_str_eq(find("top/l/p/y")->skill, "b");
	cr_assert_eq(find("top/l/p")->parent, find("top/l"));
	cr_assert_null(al_flow_find(flow, "top/nope"));
	cr_assert_null(al_flow_find(flow, "other"));
	cr_assert_null(al_flow_find(flow, "to"));
	cr_assert_null(al_flow_find(flow, "top/"));
	cr_assert_null(al_flow_find(flow, "top//c"));
	cr_assert_null(al_flow_find(flow, "top/c/t/x"));
	cr_assert_null(al_flow_find(flow, "top/l/x"), "no skipping levels");
	cr_assert_null(al_flow_find(flow, ""));
}

/* --- what reaches a shell or the file system ------------------------------- */

/* A flow whose only runner `r` has `command`, run by one action. */
static int load_runner(const char *command)
{
	struct al_strbuf sb = AL_STRBUF_INIT;
	int rc;

	al_strbuf_addf(&sb, "version: 1\n"
			    "runners:\n"
			    "  r:\n"
			    "    command: %s\n"
			    "    prompt: arg\n"
			    "flow: {id: a, type: action, skill: s}\n", command);
	rc = load(sb.buf);
	al_strbuf_release(&sb);
	return rc;
}

Test(flow, prompt_in_a_shell_script_is_refused_where_it_is_written)
{
	static const char *const bad[] = {
		"[sh, -c, \"llm '{prompt}'\"]",
		"[/usr/bin/bash, -lc, \"llm {prompt}\"]",
		"[env, -u, HOME, A=1, dash, -ec, \"llm {task}\"]",
		"[timeout, '60', ksh, -o, errexit, -c, \"llm {prompt}\"]",
		"[zsh, -c, --, \"x{prompt}x\"]",
	};

	for (size_t i = 0; i < AL_ARRAY_SIZE(bad); i++) {
		cr_assert_eq(load_runner(bad[i]), AL_EINVALID, "accepted %s", bad[i]);
		unit_assert_ndiags(&diags, 1);
		cr_assert(strstr(diags.v[0].msg, "into a shell script"), "%s: %s", bad[i],
			  diags.v[0].msg);
		/* at the script: the one double-quoted string, in "    command: " */
		cr_assert_eq(diags.v[0].pos.line, 4);
		cr_assert_eq(diags.v[0].pos.col, 14 + (int)(strchr(bad[i], '"') - bad[i]), "%s",
			     bad[i]);
	}
}

Test(flow, a_bare_shell_dash_c_does_not_take_the_prompt_as_its_script)
{
	cr_assert_eq(load_runner("[sh, -ec]"), AL_EINVALID, "prompt: arg appended as the script");
	unit_assert_ndiags(&diags, 1);
	unit_assert_diag(&diags, NULL, 4, 14, "runs a shell with -c but no script");
	cr_assert_eq(load("version: 1\n"
			  "runners: {r: {command: [sh, -c], prompt: stdin}}\n"
			  "flow: {id: a, type: action, skill: s}\n"), 0,
		     "on standard input the prompt is not the script:%s", unit_diags_text(&diags));
}

Test(flow, prompt_as_an_argument_of_a_shell_is_accepted)
{
	static const char *const good[] = {
		"[sh, -c, 'llm \"$1\"', sh, \"{prompt}\"]",      /* an argument, not code */
		"[sh, -c, 'llm < \"$1\"', sh, \"{prompt-file}\"]",
		"[sh, -c, \"llm --model {model} {prompt-file}\"]", /* a path ailoop makes */
		"[sh, script.sh, \"{prompt}\"]",                   /* no -c: a file of code */
		"[llm, -c, \"{prompt}\"]",                         /* not a shell */
		"[bash, --norc, -c, 'llm \"$0\"', \"{prompt}\"]",
	};

	for (size_t i = 0; i < AL_ARRAY_SIZE(good); i++)
		cr_assert_eq(load_runner(good[i]), 0, "refused %s:%s", good[i],
			     unit_diags_text(&diags));
}

Test(flow, agent_paths_stay_in_the_repository)
{
	char outside[PATH_MAX];

	/* a file outside the repository (the test's directory), and links to it */
	cr_assert_eq(mkdir("repo", 0755), 0);
	unit_write("secret.md", "---\nname: secret\n---\nThe secret.\n");
	cr_assert_not_null(realpath("secret.md", outside));
	cr_assert_eq(chdir("repo"), 0);
	unit_write(AGENTS "act.md", "Change the code.\n");
	unit_write("docs/act.md", "Change the docs.\n");
	cr_assert_eq(symlink("../../../secret.md", AGENTS "linked.md"), 0);
	cr_assert_eq(symlink("../../docs", AGENTS "docs"), 0); /* inside: fine */
	cr_assert_eq(symlink("..", "up"), 0);
	load_bad("version: 1\n"
		 "flow:\n"
		 "  type: sequence\n"
		 "  children:\n"
		 "    - {id: a, agent: ../secret.md}\n"
		 "    - {id: b, agent: .ai-loop/../../secret.md}\n"
		 "    - {id: c, agent: /etc/passwd}\n"
		 "    - {id: d, agent: .ai-loop/agents/linked.md}\n"
		 "    - {id: e, agent: up/secret.md}\n"
		 "    - {id: f, agent: .ai-loop/agents/../agents/act.md}\n"
		 "    - {id: g, agent: .ai-loop/agents/docs/act.md}\n"
		 "    - {id: h, agent: ./.ai-loop/agents/act.md}\n",
		 5);
	unit_assert_diag(&diags, NULL, 5, 22, "agent file '../secret.md' is outside the repository");
	unit_assert_diag(&diags, NULL, 6, 22, "'.ai-loop/../../secret.md' is outside");
	unit_assert_diag(&diags, NULL, 7, 22, "'/etc/passwd' is outside");
	unit_assert_diag(&diags, NULL, 8, 22, "'.ai-loop/agents/linked.md' is a symbolic link to");
	cr_assert(strstr(diags.v[3].msg, outside), "names where it leads: %s", diags.v[3].msg);
	unit_assert_diag(&diags, NULL, 9, 22, "'up/secret.md' is a symbolic link to");
}

Test(flow, an_absolute_agent_path_inside_the_repository_is_accepted)
{
	char cwd[PATH_MAX];
	struct al_strbuf sb = AL_STRBUF_INIT;

	cr_assert_not_null(getcwd(cwd, sizeof(cwd)));
	al_strbuf_addf(&sb, "version: 1\nflow: {id: a, agent: %s/" AGENTS "act.md}\n", cwd);
	load_ok(sb.buf);
	al_strbuf_release(&sb);
}

Test(flow, ids_and_sensor_names_fit_in_a_file_name)
{
	char id64[AL_ID_MAX + 1], id65[AL_ID_MAX + 2], *text;

	memset(id64, 'a', sizeof(id64) - 1);
	id64[sizeof(id64) - 1] = '\0';
	memset(id65, 'b', sizeof(id65) - 1);
	id65[sizeof(id65) - 1] = '\0';
	text = al_xprintf("version: 1\nflow:\n  type: sequence\n  children:\n"
			  "    - {id: %s, skill: s}\n    - {id: %s, skill: s}\n", id64, id65);
	load_bad(text, 1);
	unit_assert_diag(&diags, NULL, 6, 12, "id is 65 characters long: at most 64");
	free(text);

	unit_write(AGENTS "long.md", "---\ncommand: 'true'\nname: "
		   "ssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssss\n---\n");
	load_bad("version: 1\n"
		 "flow:\n"
		 "  type: loop\n"
		 "  controller: builtin:all-pass\n"
		 "  sensors: [.ai-loop/agents/long.md]\n"
		 "  actuator: {agent: .ai-loop/agents/act.md}\n",
		 1);
	unit_assert_diag(&diags, NULL, 5, 13, "sensor name is 66 characters long: at most 64");
}

Test(flow, budget_limits)
{
	char sha[65];

	load_ok("limits:\n"
		"  max_agent_calls: 40\n"
		"  max_wall_seconds: 3600\n"
		"  rate_limit_pattern: '(?i)slow down'\n"
		"  rate_limit_backoff_seconds: 5\n"
		"flow: {id: a, skill: x}\n");
	cr_assert_eq(flow->max_agent_calls, 40);
	cr_assert_eq(flow->max_wall_seconds, 3600);
	cr_assert_eq(flow->rate_limit_backoff_seconds, 5);
	cr_assert_not_null(flow->rate_limit_re);
	memcpy(sha, al_flow_sha256_except_limits(flow), sizeof(sha));

	/* limits changed, and comments and layout: the same flow for resume */
	load_ok("# raised\nlimits: {max_agent_calls: 80}\nflow:\n  id: a\n  skill: x\n");
	cr_assert_str_eq(al_flow_sha256_except_limits(flow), sha);
	cr_assert_eq(flow->max_wall_seconds, 0);
	cr_assert_eq(flow->rate_limit_backoff_seconds, AL_RATE_LIMIT_BACKOFF_DEFAULT);
	cr_assert_not_null(flow->rate_limit_re, "the default pattern");
	load_ok("flow: {id: a, skill: y}\n");
	cr_assert_str_neq(al_flow_sha256_except_limits(flow), sha);
}

/* the hash runs recorded before stays the same: "<kind>:<length>:" before each value */
Test(flow, hash_except_limits_is_stable)
{
	load_ok("flow: {id: a, skill: x}\nversion: 1\nlimits: {max_agent_calls: 3}\n");
	cr_assert_str_eq(al_flow_sha256_except_limits(flow),
			 "b357bfc517d28b38bf14f32dfa42832ba811e41aa709b2fdb9639fbd4d3670d3");
}

Test(flow, budget_limit_mistakes)
{
	load_bad("limits:\n"
		 "  max_agent_calls: -1\n"                /* 2 */
		 "  max_wall_seconds: soon\n"             /* 3 */
		 "  rate_limit_pattern: 'rate (limit'\n"  /* 4 */
		 "  rate_limit_backoff_seconds: 0\n"      /* 5 */
		 "  max_calls: 3\n"                       /* 6 */
		 "flow: {id: a, skill: x}\n",
		 5);
	unit_assert_diag(&diags, FLOW_FILE, 2, 20, "'max_agent_calls' must not be negative");
	unit_assert_diag(&diags, FLOW_FILE, 3, 21, "'max_wall_seconds'");
	unit_assert_diag(&diags, FLOW_FILE, 4, 35,
			 "invalid regular expression in 'rate_limit_pattern': missing closing");
	unit_assert_diag(&diags, FLOW_FILE, 5, 31, "'rate_limit_backoff_seconds' must be between 1");
	unit_assert_diag(&diags, FLOW_FILE, 6, 3, "unknown key 'max_calls' in limits");
}

Test(flow, episodes_defaults_and_inheritance)
{
	struct al_node *root = load_ok("flow:\n"
				       "  type: sequence\n"
				       "  id: main\n"
				       "  children:\n"
				       "    - {id: a1, skill: s1}\n");

	cr_assert(flow->episodes.enabled);
	cr_assert_eq(flow->episodes.max_tokens, AL_EPISODES_MAX_TOKENS);
	cr_assert_eq(flow->episodes.roles, AL_EPISODES_CONTROLLER | AL_EPISODES_ACTION);
	cr_assert(flow->episodes.include_failures);
	cr_assert(al_episodes_enabled(flow, root));
	cr_assert(al_episodes_enabled(flow, NULL));

	load_ok("episodes: {max_tokens: 500, roles: [sensor]}\n"
		"flow:\n"
		"  type: sequence\n"
		"  id: main\n"
		"  children:\n"
		"    - type: sequence\n"
		"      id: off\n"
		"      episodes: {enabled: false, include_failures: false}\n"
		"      children:\n"
		"        - {id: a1, skill: s1}\n"
		"        - {id: a2, skill: s2, episodes: {enabled: true, roles: []}}\n"
		"    - {id: a3, skill: s3}\n");
	cr_assert_eq(find("main")->episodes.max_tokens, 500, "the top's keys at the root");
	cr_assert_eq(find("main")->episodes.roles, AL_EPISODES_SENSOR);
	cr_assert_not(al_episodes_enabled(flow, find("main/off")));
	cr_assert_not(al_episodes_enabled(flow, find("main/off/a1")), "a child inherits its parent's");
	cr_assert_not(find("main/off/a1")->episodes.include_failures);
	cr_assert_eq(find("main/off/a1")->episodes.max_tokens, 500);
	cr_assert(al_episodes_enabled(flow, find("main/off/a2")), "a node's own keys override");
	cr_assert_eq(find("main/off/a2")->episodes.roles, 0, "an empty list gives no role");
	cr_assert(al_episodes_enabled(flow, find("main/a3")));
	cr_assert(find("main/a3")->episodes.include_failures, "a sibling's keys are not inherited");
}
