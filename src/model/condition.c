#include "ailoop/model/condition.h"
#include "ailoop/base/strbuf.h"
#include "ailoop/base/util.h"

#include <stdlib.h>
#include <string.h>

const char *const al_op_names[11] = {
	"equals", "not_equals", "contains", "not_contains", "greater_than", "less_than",
	"greater_or_equal", "less_or_equal", "matches_regex", "exists", "not_exists",
};

/* Index 4, "custom", is the seeds' name for a command condition. */
const char *const al_cond_type_names[5] = {
	"observation_check", "test_result", "file_exists", "command", "custom",
};

static const char *const check_keys[] = {
	"type", "key", "operator", "value", "path", "command", "expression",
	"cache_ttl_seconds", "description",
};

static struct al_condition *combination(struct al_check *c, const struct al_val *v,
					const struct al_val *k, const struct al_val *arg)
{
	struct al_condition *cond = al_calloc(1, sizeof(*cond));
	int errors = c->errors;

	cond->pos = v->pos;
	if (!strcmp(k->str, "not")) {
		cond->kind = AL_COND_NOT;
		if (!al_check_kind(c, arg, AL_VAL_MAP, "not")) {
			if (!arg || al_val_is_null(arg))
				al_check_error(c, k->pos, "'not' needs a condition");
		} else {
			cond->subs = al_calloc(1, sizeof(*cond->subs));
			cond->subs[0] = al_condition_parse(c, arg);
			cond->nsubs = 1;
		}
	} else {
		cond->kind = !strcmp(k->str, "all") ? AL_COND_ALL : AL_COND_ANY;
		if (!al_check_kind(c, arg, AL_VAL_SEQ, k->str) || !arg->n) {
			if (!arg || al_val_is_null(arg) || arg->kind == AL_VAL_SEQ)
				al_check_error(c, k->pos, "'%s' needs a list of conditions", k->str);
		} else {
			cond->subs = al_calloc(arg->n, sizeof(*cond->subs));
			for (size_t i = 0; i < arg->n; i++)
				cond->subs[cond->nsubs++] = al_condition_parse(c, arg->items[i]);
		}
	}
	for (size_t i = 0; i < v->n; i++) {
		if (AL_VAL_KEY(v, i) != k) { /* the first other key */
			al_check_error(c, AL_VAL_KEY(v, i)->pos,
				       "'%s' stands alone: put other checks inside it", k->str);
			break;
		}
	}
	if (c->errors != errors) {
		al_condition_free(cond);
		return NULL;
	}
	return cond;
}

static void check_value(struct al_check *c, struct al_condition *cond, const struct al_val *v)
{
	if (v->kind != AL_VAL_SCALAR) {
		al_check_error(c, v->pos, "'value' must be a string or a number, not %s",
			       al_val_describe(v));
		return;
	}
	cond->value = v->str;
	if (cond->op == AL_OP_MATCHES_REGEX)
		cond->re = al_check_regex(c, v, "value");
}

struct al_condition *al_condition_parse(struct al_check *c, const struct al_val *v)
{
	const struct al_val *type_v, *op_v, *value_v = NULL, *cmd_v = NULL;
	struct al_condition *cond;
	int errors = c->errors, t = 0, op = -1;

	if (!al_check_kind(c, v, AL_VAL_MAP, "condition")) {
		if (!v || al_val_is_null(v))
			return NULL;
		return NULL;
	}
	/* all, any or not, wherever it is written, makes a combination */
	for (size_t i = 0; i < v->n; i++) {
		const struct al_val *k = AL_VAL_KEY(v, i);

		if (!strcmp(k->str, "all") || !strcmp(k->str, "any") || !strcmp(k->str, "not"))
			return combination(c, v, k, AL_VAL_VALUE(v, i));
	}
	cond = al_calloc(1, sizeof(*cond));
	cond->kind = AL_COND_CHECK;
	cond->pos = v->pos;
	cond->cache_ttl_seconds = AL_COND_DEFAULT_TTL;

	type_v = al_val_get(v, "type");
	if (type_v && !al_val_is_null(type_v) &&
	    !al_check_enum(c, type_v, "condition type", al_cond_type_names, 5, &t))
		t = -1; /* unknown: what it needs cannot be known either */
	else if (t == 4)
		t = AL_COND_COMMAND;
	cond->type = t < 0 ? AL_COND_OBSERVATION : (enum al_cond_type)t;
	op_v = al_val_get(v, "operator");
	if (op_v && al_check_enum(c, op_v, "operator", al_op_names, 11, &op))
		cond->op = (enum al_op)op;

	for (size_t i = 0; i < v->n; i++) {
		const struct al_val *k = AL_VAL_KEY(v, i), *val = AL_VAL_VALUE(v, i);
		const char *key = k->str;

		if (!strcmp(key, "type") || !strcmp(key, "operator") || !strcmp(key, "description"))
			continue;
		if (!strcmp(key, "key"))
			al_check_string(c, val, key, &cond->key);
		else if (!strcmp(key, "value"))
			value_v = al_val_is_null(val) ? NULL : val; /* null reads as absent */
		else if (!strcmp(key, "path"))
			al_check_string(c, val, key, &cond->path);
		else if (!strcmp(key, "expression"))
			al_check_string(c, val, key, &cond->expression);
		else if (!strcmp(key, "command"))
			cmd_v = val;
		else if (!strcmp(key, "cache_ttl_seconds"))
			al_check_int(c, val, key, 0, 7 * 24 * 3600, &cond->cache_ttl_seconds);
		else
			al_check_unknown_key(c, k, check_keys, AL_ARRAY_SIZE(check_keys), "condition");
	}

	if (t < 0)
		goto done;
	switch (cond->type) {
	case AL_COND_OBSERVATION:
	case AL_COND_TEST_RESULT:
		if (!cond->key)
			al_check_error(c, v->pos, "condition needs a 'key' to check");
		if (op < 0 && !op_v)
			al_check_error(c, v->pos, "condition needs an 'operator'");
		if (op >= 0 && op != AL_OP_EXISTS && op != AL_OP_NOT_EXISTS) {
			if (value_v)
				check_value(c, cond, value_v);
			else
				al_check_error(c, v->pos, "operator '%s' needs a 'value'", al_op_names[op]);
		}
		break;
	case AL_COND_FILE_EXISTS:
		if (!cond->path)
			al_check_error(c, v->pos, "file_exists condition needs a 'path'");
		if (op < 0)
			cond->op = AL_OP_EXISTS;
		else if (op != AL_OP_EXISTS && op != AL_OP_NOT_EXISTS)
			al_check_error(c, op_v->pos,
				       "file_exists takes operator exists or not_exists, not '%s'",
				       al_op_names[op]);
		break;
	case AL_COND_COMMAND:
		if (cmd_v && !al_val_is_null(cmd_v)) {
			size_t n = 0;

			if (cmd_v->kind == AL_VAL_SCALAR)
				cond->expression = cmd_v->str;
			else if (al_check_string_list(c, cmd_v, "command", &cond->argv, &n) && !n)
				al_check_error(c, cmd_v->pos, "'command' must not be empty");
		}
		if (!cond->argv && !cond->expression)
			al_check_error(c, v->pos, "command condition needs a 'command' or an 'expression'");
		else if (cond->argv && cond->expression)
			al_check_error(c, v->pos, "give either 'command' or 'expression', not both");
		if (op_v)
			al_check_error(c, op_v->pos,
				       "a command condition is true when the command succeeds: "
				       "drop 'operator'");
		break;
	}
	if (cond->type != AL_COND_COMMAND && (cmd_v || cond->expression))
		al_check_error(c, (cmd_v ? cmd_v : al_val_get(v, "expression"))->pos,
			       "'command' and 'expression' belong to command conditions");
	if (cond->type != AL_COND_FILE_EXISTS && cond->path)
		al_check_error(c, al_val_get(v, "path")->pos,
			       "'path' belongs to file_exists conditions");
done:
	if (c->errors != errors) {
		al_condition_free(cond);
		return NULL;
	}
	return cond;
}

void al_condition_free(struct al_condition *cond)
{
	if (!cond)
		return;
	for (size_t i = 0; i < cond->nsubs; i++)
		al_condition_free(cond->subs[i]);
	free(cond->subs);
	free(cond->argv);
	pcre2_code_free(cond->re);
	free(cond);
}

void al_condition_describe(const struct al_condition *cond, struct al_strbuf *out)
{
	if (!cond)
		return;
	switch (cond->kind) {
	case AL_COND_NOT:
		al_strbuf_adds(out, "not (");
		al_condition_describe(cond->subs[0], out);
		al_strbuf_addch(out, ')');
		return;
	case AL_COND_ALL:
	case AL_COND_ANY:
		for (size_t i = 0; i < cond->nsubs; i++) {
			if (i)
				al_strbuf_adds(out, cond->kind == AL_COND_ALL ? " and " : " or ");
			al_strbuf_addch(out, '(');
			al_condition_describe(cond->subs[i], out);
			al_strbuf_addch(out, ')');
		}
		return;
	case AL_COND_CHECK:
		break;
	}
	switch (cond->type) {
	case AL_COND_FILE_EXISTS:
		al_strbuf_addf(out, "%s %s", cond->path, al_op_names[cond->op]);
		break;
	case AL_COND_COMMAND:
		if (cond->expression) {
			al_strbuf_addf(out, "$ %s", cond->expression);
		} else {
			al_strbuf_addch(out, '$');
			for (size_t i = 0; cond->argv[i]; i++)
				al_strbuf_addf(out, " %s", cond->argv[i]);
		}
		break;
	default:
		al_strbuf_addf(out, "%s%s %s", cond->type == AL_COND_TEST_RESULT ? "sensor " : "",
			       cond->key, al_op_names[cond->op]);
		if (cond->value)
			al_strbuf_addf(out, " %s", cond->value);
		break;
	}
}
