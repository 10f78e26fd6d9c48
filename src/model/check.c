#include "ailoop/model/check.h"
#include "ailoop/base/strbuf.h"
#include "ailoop/base/util.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void al_check_error(struct al_check *c, struct al_pos pos, const char *fmt, ...)
{
	struct al_strbuf sb = AL_STRBUF_INIT;
	va_list ap;

	va_start(ap, fmt);
	al_strbuf_vaddf(&sb, fmt, ap);
	va_end(ap);
	al_diags_add(c->diags, pos, "%s", sb.buf);
	al_strbuf_release(&sb);
	c->errors++;
}

void al_check_unknown_key(struct al_check *c, const struct al_val *key,
			  const char *const *known, size_t n, const char *where)
{
	const char *hint = al_closest(key->str, known, n);

	if (hint)
		al_check_error(c, key->pos, "unknown key '%s' in %s (did you mean '%s'?)",
			       key->str, where, hint);
	else
		al_check_error(c, key->pos, "unknown key '%s' in %s", key->str, where);
}

static const char *kind_name(enum al_val_kind kind)
{
	return kind == AL_VAL_MAP ? "a mapping" : kind == AL_VAL_SEQ ? "a list" : "a string";
}

bool al_check_kind(struct al_check *c, const struct al_val *v, enum al_val_kind kind,
		   const char *key)
{
	if (!v || al_val_is_null(v))
		return false;
	if (v->kind == kind)
		return true;
	al_check_error(c, v->pos, "'%s' must be %s, not %s", key, kind_name(kind),
		       al_val_describe(v));
	return false;
}

bool al_check_string(struct al_check *c, const struct al_val *v, const char *key,
		     const char **out)
{
	if (!al_check_kind(c, v, AL_VAL_SCALAR, key))
		return false;
	*out = v->str;
	return true;
}

bool al_check_int(struct al_check *c, const struct al_val *v, const char *key,
		  long long min, long long max, int *out)
{
	long long n;

	if (!v || al_val_is_null(v))
		return false;
	if (!al_val_int(v, &n)) {
		al_check_error(c, v->pos, "'%s' must be a whole number, not %s", key,
			       al_val_describe(v));
		return false;
	}
	if (n < min || n > max) {
		if (n < 0 && min >= 0)
			al_check_error(c, v->pos, "'%s' must not be negative (got %lld)", key, n);
		else
			al_check_error(c, v->pos, "'%s' must be between %lld and %lld (got %s)",
				       key, min, max, v->str);
		return false;
	}
	*out = (int)n;
	return true;
}

bool al_check_bool(struct al_check *c, const struct al_val *v, const char *key, bool *out)
{
	if (!v || al_val_is_null(v))
		return false;
	if (!al_val_bool(v, out)) {
		al_check_error(c, v->pos, "'%s' must be true or false, not %s", key,
			       al_val_describe(v));
		return false;
	}
	return true;
}

bool al_check_enum(struct al_check *c, const struct al_val *v, const char *key,
		   const char *const *names, size_t n, int *out)
{
	struct al_strbuf list = AL_STRBUF_INIT;
	const char *s, *hint;

	if (!al_check_string(c, v, key, &s))
		return false;
	for (size_t i = 0; i < n; i++) {
		if (!strcmp(s, names[i])) {
			*out = (int)i;
			return true;
		}
	}
	for (size_t i = 0; i < n; i++)
		al_strbuf_addf(&list, "%s%s", i ? ", " : "", names[i]);
	hint = al_closest(s, names, n);
	if (hint)
		al_check_error(c, v->pos, "unknown %s '%s' (did you mean '%s'?)", key, s, hint);
	else
		al_check_error(c, v->pos, "unknown %s '%s' (expected one of: %s)", key, s,
			       list.buf);
	al_strbuf_release(&list);
	return false;
}

bool al_check_string_list(struct al_check *c, const struct al_val *v, const char *key,
			  const char ***out, size_t *n)
{
	const char **list;
	size_t k = 0;

	if (!al_check_kind(c, v, AL_VAL_SEQ, key))
		return false;
	list = al_calloc(v->n + 1, sizeof(*list));
	for (size_t i = 0; i < v->n; i++) {
		const struct al_val *item = v->items[i];

		if (item->kind != AL_VAL_SCALAR || al_val_is_null(item)) {
			al_check_error(c, item->pos, "items of '%s' must be strings, not %s", key,
				       al_val_describe(item));
			continue;
		}
		list[k++] = item->str;
	}
	*out = list;
	*n = k;
	return true;
}

static pcre2_code *compile(struct al_check *c, const struct al_val *v, const char *key,
			   uint32_t options)
{
	const char *s;
	pcre2_code *re;
	PCRE2_SIZE off;
	int code;

	if (!al_check_string(c, v, key, &s))
		return NULL;
	re = pcre2_compile((PCRE2_SPTR)s, v->len, options, &code, &off, NULL);
	if (!re) {
		PCRE2_UCHAR msg[256];
		struct al_pos pos = v->pos;

		pcre2_get_error_message(code, msg, sizeof(msg));
		pos.col = al_val_col_at(c->doc, v, off);
		al_check_error(c, pos, "invalid regular expression in '%s': %s", key,
			       (const char *)msg);
	}
	return re;
}

pcre2_code *al_check_regex(struct al_check *c, const struct al_val *v, const char *key)
{
	/* output is bytes: what is not UTF-8 in it is skipped, not a failed match */
	return compile(c, v, key, PCRE2_UTF | PCRE2_MATCH_INVALID_UTF);
}

pcre2_code *al_check_regex_scan(struct al_check *c, const struct al_val *v, const char *key)
{
	return compile(c, v, key, PCRE2_UTF | PCRE2_AUTO_CALLOUT);
}

static bool id_char(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

bool al_id_valid(const char *s)
{
	if (!s || !id_char(*s))
		return false;
	for (; *s; s++)
		if (!id_char(*s) && *s != '_' && *s != '-')
			return false;
	return true;
}
