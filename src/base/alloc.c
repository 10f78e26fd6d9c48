#include "ailoop/base/alloc.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void al_die_oom(void)
{
	static const char msg[] = "ailoop: fatal: out of memory\n";

	if (write(2, msg, sizeof(msg) - 1) < 0)
		_exit(70);
	_exit(70);
}

void *al_malloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p)
		al_die_oom();
	return p;
}

void *al_calloc(size_t nmemb, size_t size)
{
	void *p = calloc(nmemb ? nmemb : 1, size ? size : 1);

	if (!p)
		al_die_oom();
	return p;
}

void *al_realloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		al_die_oom();
	return p;
}

char *al_strdup(const char *s)
{
	return al_strndup(s, strlen(s));
}

void al_set_str(char **field, const char *value)
{
	char *copy = value ? al_strdup(value) : NULL;

	free(*field);
	*field = copy;
}

char *al_strndup(const char *s, size_t n)
{
	char *p = al_malloc(n + 1);

	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}
