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
/* [A-Za-z0-9][A-Za-z0-9_-]*: node ids, runner and sensor names. */
/* A key whose value names an agent file: the file is loaded and checked. */
void loader_agent_key(struct loader *l, struct al_agent_ref *ref, const struct al_val *v,
		      const char *key);
/* A node and everything below it; NULL if it is not a node at all. */
struct al_node *loader_node(struct loader *l, const struct al_val *v, struct al_node *parent,
			    int position);
void loader_node_free(struct al_node *n);

#endif
