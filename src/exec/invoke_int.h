#ifndef AILOOP_INVOKE_INT_H
#define AILOOP_INVOKE_INT_H

/* What invoke.c (an agent's call) and invoke_prompt.c (its prompt) share. */
#include "ailoop/exec/invoke.h"

/* (invoke.c) `rel`, a path from the repository's root, as an absolute path. Caller frees. */
char *al_call_absolute(const struct al_exec *ex, const char *rel);
/* (invoke_prompt.c) The call's prompt (call->prompt): the agent file's body, its placeholders filled. */
void al_call_render_prompt(struct al_call *call, const struct al_exec *ex, const char *task_file);

/*
 * (invoke_usage.c) What the call's program printed, read (usage.h), and
 * what it cost: recorded in logs/agent-calls and as an agent_usage event,
 * summed for the next commit's [cost] line.
 */
void al_call_count_usage(struct al_call *call);

#endif
