/* interim, not committed */
#include "ailoop/condition.h"
#include "ailoop/memory.h"
#include "ailoop/util.h"
#include <stdlib.h>
__attribute__((weak)) int al_memory_open(struct al_memory **out, const char *d) { (void)d; *out = NULL; return 0; }
__attribute__((weak)) void al_memory_free(struct al_memory *m) { (void)m; }
__attribute__((weak)) const char *al_memory_get(struct al_memory *m, const char *k) { (void)m; (void)k; return NULL; }
__attribute__((weak)) int al_memory_set(struct al_memory *m, const char *key, const char *value, bool json, const char *agent, const char *kt) { (void)m;(void)key;(void)value;(void)json;(void)agent;(void)kt; return 0; }
