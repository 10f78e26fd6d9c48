#ifndef AILOOP_INVOKE_INT_H
#define AILOOP_INVOKE_INT_H

/* What invoke.c (an agent's call) and invoke_prompt.c (its prompt) share. */
#include "ailoop/exec/invoke.h"

/* (invoke.c) `rel`, a path from the repository's root, as an absolute path. Caller frees. */
char *al_call_absolute(const struct al_exec *ex, const char *rel);
/* (invoke_prompt.c) The call's prompt (call->prompt): the agent file's body, its placeholders filled. */
void al_call_render_prompt(struct al_call *call, const struct al_exec *ex, const char *task_file);

#endif
