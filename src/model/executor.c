#include "ailoop/model/executor.h"
#include "ailoop/base/util.h"

#include <stdio.h>
#include <string.h>

bool al_slurm_read_executor(struct al_check *c, const struct al_val *v, struct al_slurm *s)
{
	static const char *const names[] = { "local", "slurm" };
	int e;

	if (!al_check_enum(c, v, "executor", names, 2, &e))
		return false;
	s->on = e == 1;
	return true;
}

/* [A-Za-z0-9_.-]+ : a partition name, safe on any command line. */
static bool plain_name(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!(('a' <= *s && *s <= 'z') || ('A' <= *s && *s <= 'Z') ||
		      ('0' <= *s && *s <= '9') || *s == '_' || *s == '-' || *s == '.'))
			return false;
	return true;
}

/* Slurm's time formats: minutes, m:s, h:m:s, d-h, d-h:m, d-h:m:s. */
static bool slurm_time(const char *s)
{
	int colons = 0, dash = 0;
	bool digit = false;

	for (; *s; s++) {
		if ('0' <= *s && *s <= '9') {
			digit = true;
			continue;
		}
		if (!digit)
			return false;
		digit = false;
		if (*s == '-' && !dash && !colons)
			dash = 1;
		else if (*s == ':' && colons < 2)
			colons++;
		else
			return false;
	}
	return digit;
}

/* A size as Slurm takes it: digits and one of K, M, G, T (M if none). */
static bool slurm_size(const char *s)
{
	const char *p = s;

	while ('0' <= *p && *p <= '9')
		p++;
	if (p == s)
		return false;
	return !*p || (strchr("KMGT", *p) && !p[1]);
}

/* A scalar quoted, anything else described, for messages. */
static const char *shown(const struct al_val *v, char *buf, size_t size)
{
	if (v->kind == AL_VAL_SCALAR && !al_val_is_null(v)) {
		snprintf(buf, size, "'%.80s'", v->str);
		return buf;
	}
	return al_val_describe(v);
}

void al_slurm_read(struct al_check *c, const struct al_val *v, struct al_slurm *s)
{
	static const char *const keys[] = { "partition", "time", "cpus_per_task", "mem_per_cpu",
					    "extra_args", "shared_fs" };

	if (!al_check_kind(c, v, AL_VAL_MAP, "slurm"))
		return;
	for (size_t i = 0; i < v->n; i++) {
		const struct al_val *k = AL_VAL_KEY(v, i), *val = AL_VAL_VALUE(v, i);
		const char *str;
		char q[96];

		if (!strcmp(k->str, "partition")) {
			if (!al_check_string(c, val, k->str, &str))
				continue;
			if (plain_name(str))
				s->partition = str;
			else
				al_check_error(c, val->pos, "slurm partition '%s' is not a name "
					       "(letters, digits, '_', '-', '.')", str);
		} else if (!strcmp(k->str, "time")) {
			if (val->kind != AL_VAL_SCALAR || al_val_is_null(val) || !slurm_time(val->str))
				al_check_error(c, val->pos, "'time' must be a Slurm time limit "
					       "(minutes, or [days-]hours:minutes:seconds), not %s",
					       shown(val, q, sizeof(q)));
			else
				s->time = val->str;
		} else if (!strcmp(k->str, "cpus_per_task")) {
			al_check_int(c, val, k->str, 1, 4096, &s->cpus_per_task);
		} else if (!strcmp(k->str, "mem_per_cpu")) {
			if (val->kind != AL_VAL_SCALAR || al_val_is_null(val) || !slurm_size(val->str))
				al_check_error(c, val->pos, "'mem_per_cpu' must be a size such as "
					       "500M or 2G, not %s", shown(val, q, sizeof(q)));
			else
				s->mem_per_cpu = val->str;
		} else if (!strcmp(k->str, "extra_args")) {
			bool ok = al_check_kind(c, val, AL_VAL_SEQ, k->str);

			for (size_t j = 0; ok && j < val->n; j++)
				if (val->items[j]->kind != AL_VAL_SCALAR || al_val_is_null(val->items[j])) {
					al_check_error(c, val->items[j]->pos, "'extra_args' must be a "
						       "list of strings, not one with %s",
						       al_val_describe(val->items[j]));
					ok = false;
				}
			if (ok)
				s->extra_args = val;
		} else if (!strcmp(k->str, "shared_fs")) {
			al_check_bool(c, val, k->str, &s->shared_fs);
		} else {
			al_check_unknown_key(c, k, keys, AL_ARRAY_SIZE(keys), "slurm");
		}
	}
}
