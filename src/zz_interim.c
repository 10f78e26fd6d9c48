/* interim, not committed */
#include "ailoop/condition.h"
#include "ailoop/memory.h"
#include "ailoop/util.h"
#include <stdlib.h>
__attribute__((weak)) int al_memory_open(struct al_memory **out, const char *d) { (void)d; *out = NULL; return 0; }
__attribute__((weak)) void al_memory_free(struct al_memory *m) { (void)m; }
__attribute__((weak)) const char *al_memory_get(struct al_memory *m, const char *k) { (void)m; (void)k; return NULL; }
__attribute__((weak)) int al_memory_set(struct al_memory *m, const char *key, const char *value, bool json, const char *agent, const char *kt) { (void)m;(void)key;(void)value;(void)json;(void)agent;(void)kt; return 0; }
__attribute__((weak)) int al_condition_eval(const struct al_condition *c, const struct al_cond_env *e, bool *r) { (void)c;(void)e; *r = false; return 0; }
__attribute__((weak)) int al_cond_cache_open(struct al_cond_cache **out, const char *p) { (void)p; *out = NULL; return 0; }
__attribute__((weak)) void al_cond_cache_free(struct al_cond_cache *c) { (void)c; }
