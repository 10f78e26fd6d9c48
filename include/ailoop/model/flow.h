#ifndef AILOOP_FLOW_H
#define AILOOP_FLOW_H

#include "ailoop/model/agent.h"
#include "ailoop/model/condition.h"
#include "ailoop/base/diag.h"
#include "ailoop/model/price.h"
#include "ailoop/model/runner.h"
#include "ailoop/model/executor.h"

#include <pcre2.h>
#include <stdbool.h>
#include <stddef.h>

/*
 * The flow: `.ai-loop/flow.yaml` (YAML, or JSON) as ailoop's own tree.
 * Loading validates everything that can be known before a run: keys, types,
 * ids, agent files, patterns, runner names. Strings point into the parsed
 * document, which the flow keeps alive, so every value keeps its position.
 */
#define AL_FLOW_MAX_BYTES (1024 * 1024)
#define AL_FLOW_MAX_DEPTH 64
/*
 * A node id names a directory (nodes/<node-path>/) and goes into commit
 * subjects; a sensor name names a file. 64 characters say anything an id
 * needs to and keep a file name far below NAME_MAX (255); the node path, 64
 * levels of such ids at most, is held to 1024 so that a file's full path
 * stays well below PATH_MAX (4096) wherever the repository is.
 */
#define AL_ID_MAX 64
#define AL_NODE_PATH_MAX 1024
#define AL_DEFAULT_MAX_ITERATIONS 10
#define AL_DEFAULT_AGENT_TIMEOUT 1800
#define AL_DEFAULT_ACTION_AGENT ".ai-loop/agents/action.md"
#define AL_BUILTIN_ALL_PASS "builtin:all-pass"

enum al_node_type {
	AL_NODE_LOOP,
	AL_NODE_SEQUENCE,
	AL_NODE_FALLBACK,
	AL_NODE_PARALLEL,
	AL_NODE_CONDITIONAL,
	AL_NODE_ACTION,
	AL_NODE_TRANSACTION,
};

enum al_exit_on { AL_EXIT_CONDITION_TRUE, AL_EXIT_CONDITION_FALSE, AL_EXIT_MANUAL_BREAK };
enum al_on_error { AL_ON_ERROR_FAIL_FAST, AL_ON_ERROR_CONTINUE };
enum al_strategy { AL_STRATEGY_DIRECT, AL_STRATEGY_COMPOSITE };
/* parallel: where the children work (SPEC §3.1); DEFAULT: defaults.parallel_isolation */
enum al_isolation { AL_ISOLATION_DEFAULT, AL_ISOLATION_SHARED, AL_ISOLATION_WORKTREE };
enum al_on_conflict { AL_CONFLICT_FAIL, AL_CONFLICT_SKIP, AL_CONFLICT_AGENT };

/*
 * `episodes:` (top level and per node): past episodes given to a node's
 * agents (store/episode_recall.h). roles is a set of AL_EPISODES_* bits;
 * a loop's actuator (and a parallel node's conflict resolver) counts as
 * an action.
 */
enum { AL_EPISODES_SENSOR = 1, AL_EPISODES_CONTROLLER = 2, AL_EPISODES_ACTION = 4 };
#define AL_EPISODES_MAX_TOKENS 2000
#define AL_EPISODES_MAX_TOKENS_LIMIT 1000000
struct al_episodes_config {
	bool enabled;          /* default true */
	int max_tokens;        /* the section's budget, counted as bytes / 4 */
	unsigned roles;        /* default controller and action */
	bool include_failures; /* default true: failures too, after successes at equal score */
};
/* The names of the roles, by bit number. */
extern const char *const al_episodes_role_names[3];
void al_episodes_config_init(struct al_episodes_config *cfg);

/* A reference to an agent file, where the flow names it. */
struct al_agent_ref {
	const char *path;      /* as resolved, relative to the repository root */
	struct al_pos pos;
	struct al_agent *agent; /* owned by the flow's agent table */
};

struct al_sensor {
	struct al_agent_ref ref;
	const char *name; /* agent `name`, else file name without `.md` */
};

struct al_node {
	enum al_node_type type;
	const char *id;
	bool id_generated;
	struct al_pos pos;
	struct al_node *parent;
	int depth;      /* root is 0 */
	char *path;     /* ids from the root joined by '/' */
	const char *description;

	/* every type: 0 = no deadline */
	int timeout_seconds;
	double max_cost_usd;    /* termination: what its subtree's calls may cost; 0 = no limit */
	long long max_tokens;   /* and how many tokens they may use */
	/* every type: `executor` and `slurm`, as given here or inherited (slurm.h) */
	struct al_slurm slurm;
	/* every type: `episodes:`, as given here or inherited (the parent's, else the flow's) */
	struct al_episodes_config episodes;

	/* loop, sensor form (sensors != NULL or controller set) */
	bool sensor_form;
	struct al_agent_ref controller; /* path AL_BUILTIN_ALL_PASS: no agent */
	bool builtin_all_pass;
	struct al_sensor *sensors;
	size_t nsensors;
	bool sensors_parallel;
	enum al_strategy strategy;
	struct al_agent_ref actuator; /* strategy direct */
	struct al_node *child;        /* strategy composite */
	int max_iterations;
	bool exit_gate_dual; /* termination.exit_gate: dual: target met only if every sensor passes */

	/* loop, either form: the circuit breaker's limits (breaker.h), 0 = off */
	int no_progress_limit;
	int same_error_limit;

	/* loop, ReAcTree form */
	struct al_condition *condition; /* also conditional */
	enum al_exit_on exit_on;

	/* sequence, fallback, parallel, transaction, ReAcTree loop */
	struct al_node **children;
	size_t nchildren;

	/* parallel: 0 = default (all / 1 / unbounded) */
	int success_threshold;
	int failure_threshold;
	int max_concurrency;
	enum al_isolation isolation; /* never DEFAULT once loaded */
	enum al_on_conflict on_conflict;
	struct al_agent_ref resolver; /* on_conflict AGENT: {agent: PATH} */

	/* conditional */
	struct al_node *then_branch;
	struct al_node *else_branch;

	/* action */
	struct al_agent_ref action_agent; /* path NULL for break_loop */
	const char *skill;
	const char *args;
	const char *target;
	const char *message;
	bool feedback_enabled;
	const char *output_to_memory;
	bool break_loop;

	/* transaction: what makes it roll back (failure, timeout, error) */
	unsigned rollback_on;
};

enum { AL_ROLLBACK_FAILURE = 1, AL_ROLLBACK_TIMEOUT = 2, AL_ROLLBACK_ERROR = 4 };

/*
 * `hooks:`: a command for each of these events of a run (exec/hooks.h
 * runs them), and how long each may take.
 */
enum al_hook_event { AL_HOOK_ITERATION, AL_HOOK_NODE_END, AL_HOOK_BLOCKED, AL_HOOK_RUN_END,
		     AL_HOOK_EVENTS };
extern const char *const al_hook_names[AL_HOOK_EVENTS]; /* "on_iteration", … */
#define AL_HOOK_TIMEOUT_DEFAULT 10
#define AL_HOOK_TIMEOUT_MAX 3600

struct al_hooks {
	/* NULL-terminated; NULL: no hook. A string is run as `sh -c STRING`. */
	const char **argv[AL_HOOK_EVENTS];
	const char *text[AL_HOOK_EVENTS]; /* the command as the flow gives it, for messages */
	int timeout_seconds;
};

struct al_flow {
	char *file; /* as the user named it */
	struct al_diags *diags;
	struct al_doc *doc;
	char *text;
	size_t text_len;

	const char *workflow_name;
	const char *default_runner;
	struct al_pos default_runner_pos;
	int agent_timeout_seconds;
	int format_retries;    /* defaults.format_retries: an agent's unless it says otherwise */
	const char *action_agent;
	enum al_on_error on_error;
	enum al_isolation parallel_isolation; /* defaults.parallel_isolation: DEFAULT if not given */
	int no_progress_limit; /* defaults.termination: each loop's unless it says otherwise */
	int same_error_limit;
	bool breaker_limits_given; /* defaults.termination names either limit */
	double max_cost_usd;       /* limits: what the run's calls may cost; 0 = no limit */
	long long max_tokens;
	bool unknown_cost_blocks;  /* limits.unknown_cost: block */
	struct al_price *prices; /* prices: per model, over the built-in table (price.h) */
	size_t nprices;
	const char *converge_model; /* for every runner, NULL if none or per runner */
	struct al_agent_model *converge_models; /* models.converge as a map by runner */
	size_t nconverge_models;
	struct al_pos converge_pos;
	/* limits: (0 = unlimited); see budget.h */
	int max_agent_calls;
	int max_wall_seconds;
	int max_agent_calls_per_hour;
	pcre2_code *rate_limit_re; /* an agent's failure that is a rate limit */
	int rate_limit_backoff_seconds;
	int rate_limit_max_wait_seconds; /* the longest wait for a provider's reset */
	/* al_flow_sha256_except_limits(), once asked for ("" until then) */
	char sha256_except_limits[65];

	struct al_runners runners;
	struct al_agents agents;
	struct al_slurm slurm; /* defaults.executor and defaults.slurm */
	struct al_episodes_config episodes; /* the top-level `episodes:` */
	struct al_hooks hooks;

	struct al_node *root;
	size_t node_count;
	int max_depth;

	char **owned; /* strings made while loading (resolved agent paths) */
	size_t nowned;
};

/*
 * Loads and validates the flow in `file` (relative to the current directory,
 * which is the repository root). Every problem found goes to `diags`.
 * Returns 0 with *out set, AL_ENOTFOUND if the file does not exist (message
 * in al_errmsg(), nothing in diags), or AL_EINVALID with diagnostics.
 * Free with al_flow_free(); `diags` must outlive the flow.
 */
/* termination: the circuit breakers' limits unless the flow gives them (exec/breaker.h) */
#define AL_DEFAULT_NO_PROGRESS_LIMIT 3
#define AL_DEFAULT_SAME_ERROR_LIMIT 5

/*
 * `limits:`: rate_limit_backoff_seconds defaults to, and is at most, these
 * (exec/budget.h spends the budgets); an agent's failure whose output
 * matches rate_limit_pattern, by default this one, is a rate limit.
 */
#define AL_RATE_LIMIT_BACKOFF_DEFAULT 60
#define AL_RATE_LIMIT_BACKOFF_MAX 900
/* rate_limit_max_wait_seconds: its default, and at most a week */
#define AL_RATE_LIMIT_MAX_WAIT_DEFAULT (6 * 3600)
#define AL_RATE_LIMIT_MAX_WAIT_MAX (7 * 24 * 3600)
#define AL_RATE_LIMIT_PATTERN \
	"(?i)rate[ _-]?limit|usage[ _-]?limit|hit your (?:\\w+ )?limit|\\b429\\b|overloaded|" \
	"too many requests"

/* The default rate_limit_pattern, compiled. */
pcre2_code *al_rate_limit_default(void);

int al_flow_load(struct al_flow **out, const char *file, struct al_diags *diags);

/* The SHA-256 of the flow's tree without its `limits:` (resume may raise them). */
const char *al_flow_sha256_except_limits(struct al_flow *f);
void al_flow_free(struct al_flow *flow);

/*
 * models.converge for `controller`: the entry for its runner, else the one
 * model (NULL: none, the agent's own model stays). *pos, if not NULL, is
 * where the flow gives it.
 */
const char *al_flow_converge_model(const struct al_flow *flow, const struct al_agent *controller,
				   struct al_pos *pos);

/*
 * Adds to `warnings` what a valid flow asks that its runners cannot do: an
 * agent's tools or disallowedTools that its runner has no way to enforce.
 */
void al_flow_warnings(const struct al_flow *flow, struct al_diags *warnings);

const char *al_node_type_name(enum al_node_type type);

/*
 * Whether past episodes are on for `node` (NULL: for the flow as a
 * whole): its `episodes.enabled`, as given or inherited.
 */
bool al_episodes_enabled(const struct al_flow *flow, const struct al_node *node);

/* Calls `fn` for every node, parents before children. */
void al_flow_walk(struct al_node *root, void (*fn)(struct al_node *, void *), void *data);

/* The node at `path` ("a/b/c"), or NULL. */
struct al_node *al_flow_find(const struct al_flow *flow, const char *path);

/* The children of a node in order: composite child, branches, children. */
size_t al_node_nkids(const struct al_node *n);
struct al_node *al_node_kid(const struct al_node *n, size_t i);

#endif
