#ifndef AILOOP_GRAPH_H
#define AILOOP_GRAPH_H

#include "ailoop/model/flow.h"
#include "ailoop/base/strbuf.h"

/*
 * The flow tree as a Mermaid flowchart or a Graphviz digraph: every node
 * with its id, type and limits, each sensor-form loop's sensors, controller
 * and actuator, and edges from composite nodes to their children.
 */
/* TREE: the plain-text tree `ailoop setup` shows */
enum al_graph_format { AL_GRAPH_MERMAID, AL_GRAPH_DOT, AL_GRAPH_TREE };

void al_graph_write(const struct al_flow *flow, enum al_graph_format format,
		    struct al_strbuf *out);

#endif
