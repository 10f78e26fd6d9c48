#include "ailoop/model/templates.h"

#include <string.h>

const struct al_template *al_template_find(const char *path)
{
	for (const struct al_template *t = al_templates; t->path; t++)
		if (!strcmp(t->path, path))
			return t;
	return NULL;
}
