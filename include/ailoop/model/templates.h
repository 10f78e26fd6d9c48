#ifndef AILOOP_TEMPLATES_H
#define AILOOP_TEMPLATES_H

#include <stddef.h>

/*
 * The flow and agent templates of flows/ and agents/, compiled into the
 * binary at build time (cmake/embed.cmake), for `ailoop setup`.
 */
struct al_template {
	const char *path; /* "flows/single.yaml", "agents/action.md", … */
	const char *text; /* NUL-terminated */
	size_t len;
};

/* Ends with an entry whose path is NULL. */
extern const struct al_template al_templates[];

/* The template at `path`, or NULL. */
const struct al_template *al_template_find(const char *path);

#endif
