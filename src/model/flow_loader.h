#ifndef AILOOP_FLOW_LOADER_H
#define AILOOP_FLOW_LOADER_H

/*
 * What flow.c (the file and its top-level sections) and flow_node.c (the
 * nodes) share while a flow loads; not part of the flow module's contract.
 */
#include "ailoop/model/check.h"
#include "ailoop/model/flow.h"

struct loader {
	struct al_check c;
	struct al_flow *flow;
	struct al_agent_ref default_action; /* defaults.action_agent, if given */
	char **owned; /* strings the flow allocated (resolved agent paths) */
	size_t nowned, owned_alloc;
};

/* Keeps `s` (allocated) for the flow's lifetime and returns it. */
const char *loader_own(struct loader *l, char *s);
void loader_error(struct loader *l, struct al_pos pos, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* A key whose value names an agent file: the file is loaded and checked. */
void loader_agent_key(struct loader *l, struct al_agent_ref *ref, const struct al_val *v,
		      const char *key);
/* A node and everything below it; NULL if it is not a node at all. */
struct al_node *loader_node(struct loader *l, const struct al_val *v, struct al_node *parent,
			    int position);
void loader_node_free(struct al_node *n);
/* (flow_episodes.c) An `episodes:` map, over what `cfg` holds (inherited or defaults). */
void loader_episodes(struct loader *l, const struct al_val *v, struct al_episodes_config *cfg);
/* A cost budget in dollars, a token budget: range-checked, or an error at `v`. */
void loader_read_money(struct loader *l, const struct al_val *v, const char *key, double *out);
void loader_read_tokens(struct loader *l, const struct al_val *v, const char *key,
			long long *out);
/* (flow_runner.c) A runner of `runners:`, named by `k`; its `session:` map into r->session. */
void loader_runner(struct loader *l, const struct al_val *k, const struct al_val *v);
void loader_runner_session(struct loader *l, struct al_runner *r, const struct al_val *v);
/* (flow_hooks.c) The `hooks:` section; loader_hooks_free() what it allocated. */
void loader_hooks(struct loader *l, const struct al_val *v);
void loader_hooks_free(struct al_hooks *hooks);

/*
 * (flow_fields.c) Reads key `k` of node `n` (its value `v`); max_iterations
 * and timeout_seconds are kept in *max_it and *timeout for the checks after.
 */
void loader_field(struct loader *l, struct al_node *n, const struct al_val *k,
		  const struct al_val *v, const struct al_val **max_it,
		  const struct al_val **timeout);
/* (flow_fields.c) The value of `key` unless it is absent or null: a null value reads as absent. */
const struct al_val *loader_given(const struct al_val *map, const char *key);
/*
 * (flow_fields.c) Node `v` has the same `id` as its sibling `first`: say so
 * at the id, or at the node when its id was generated (the user never wrote it).
 */
void loader_duplicate_id(struct loader *l, const char *id, const struct al_val *v,
			 const struct al_val *first);
/* (flow_fields.c) `ref` to the agent file at `path` (from the flow's directory), loaded. */
void loader_agent_ref(struct loader *l, struct al_agent_ref *ref, const char *path,
		      struct al_pos pos);
/* (flow_fields.c) Whether `key` is one of the `n` keys. */
bool loader_in_set(const char *key, const char *const *keys, size_t n);

#endif
