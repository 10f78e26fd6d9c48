#ifndef AILOOP_ALLOC_H
#define AILOOP_ALLOC_H

#include <stddef.h>

/*
 * Memory, the lowest of the base: allocations never return NULL, ailoop
 * exits 70 ("out of memory") instead, so no caller has a path for it.
 * strbuf.h builds on these; util.h includes this header.
 */
__attribute__((noreturn)) void al_die_oom(void);
void *al_malloc(size_t n);
void *al_calloc(size_t nmemb, size_t size);
void *al_realloc(void *p, size_t n);
char *al_strdup(const char *s);
/* Replaces the string *field owns with a copy of `value` (NULL: none); `value` may be *field. */
void al_set_str(char **field, const char *value);
char *al_strndup(const char *s, size_t n);

#define AL_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
/* Grows `v` (of `alloc` elements) so that index `n` is valid. */
#define AL_GROW(v, n, alloc)                                                 \
	do {                                                                 \
		if ((size_t)(n) >= (alloc)) {                                \
			(alloc) = (alloc) ? (alloc) * 2 : 8;                 \
			if ((alloc) <= (size_t)(n))                          \
				(alloc) = (size_t)(n) + 1;                   \
			(v) = al_realloc((v), (alloc) * sizeof(*(v)));       \
		}                                                            \
	} while (0)

#endif
