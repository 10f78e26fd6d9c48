#include "ailoop/exec/sensor.h"
#include "ailoop/exec/budget.h"
#include "ailoop/exec/rate_wait.h"
#include "ailoop/model/check.h"
#include "ailoop/base/fsutil.h"
#include "ailoop/exec/invoke.h"
#include "ailoop/model/md.h"
#include "ailoop/model/metric.h"
#include "ailoop/store/memory.h"
#include "ailoop/base/signals.h"
#include "ailoop/base/util.h"

#include <stdlib.h>
#include <string.h>

#define OUTPUT_TAIL (64u << 10) /* of a command's output, in its output file */

char *al_sensor_output_path(const char *dir, const char *name)
{
	return al_xprintf("%s/sensor-%s-output.md", dir, name);
}

static bool matches(pcre2_code *re, const char *text, size_t len)
{
	pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, NULL);
	pcre2_match_context *mc = pcre2_match_context_create(NULL);
	bool hit;

	pcre2_set_match_limit(mc, AL_REGEX_MATCH_LIMIT);
	pcre2_set_depth_limit(mc, AL_REGEX_DEPTH_LIMIT);
	hit = pcre2_match(re, (PCRE2_SPTR)text, len, 0, 0, md, mc) > 0;
	pcre2_match_context_free(mc);
	pcre2_match_data_free(md);
	return hit;
}

/* A fence longer than any run of backticks in `text`, so nothing escapes it. */
static size_t fence_len(const char *text, size_t len)
{
	size_t longest = 0, run = 0;

	for (size_t i = 0; i < len; i++) {
		run = text[i] == '`' ? run + 1 : 0;
		if (run > longest)
			longest = run;
	}
	return longest < 3 ? 3 : longest + 1;
}

static void add_fence(struct al_strbuf *sb, size_t n)
{
	while (n--)
		al_strbuf_addch(sb, '`');
	al_strbuf_addch(sb, '\n');
}

/* `text` as it is, bytes that are not UTF-8 and NUL included */
static void add_fenced(struct al_strbuf *sb, const char *text, size_t len)
{
	size_t n = fence_len(text, len);

	add_fence(sb, n);
	al_strbuf_add(sb, text, len);
	if (len && text[len - 1] != '\n')
		al_strbuf_addch(sb, '\n');
	add_fence(sb, n);
}

static void describe_command(const struct al_agent *a, struct al_strbuf *out)
{
	if (a->command_sh) {
		al_strbuf_adds(out, a->command_sh);
		return;
	}
	for (size_t i = 0; a->command_argv[i]; i++)
		al_strbuf_addf(out, "%s%s", i ? " " : "", a->command_argv[i]);
}

/* Whether `line` is a shell's word that a command is not there: "sh: 1: x: not found". */
static bool shell_not_found(const char *line, size_t len)
{
	static const char *const shells[] = { "sh: ", "bash: ", "dash: ", "zsh: " };
	bool shell = false;

	for (size_t i = 0; i < AL_ARRAY_SIZE(shells); i++)
		shell |= len > strlen(shells[i]) && !memcmp(line, shells[i], strlen(shells[i]));
	return shell && (memmem(line, len, "not found", 9) || memmem(line, len, "No such file", 12) ||
			 memmem(line, len, "Permission denied", 17));
}

/*
 * Whether a command sensor's command could not run at all: it exited 126
 * (not executable) or 127 (not found), or its shell said a command was not
 * found. That is no test's failure, and no agent can fix it. `why` gets the
 * shell's words (the last such line, else the output's last line).
 */
static bool cannot_run(const struct al_proc_result *r, struct al_strbuf *why)
{
	const char *p = r->log.buf, *end = p + r->log.len, *last = NULL, *said = NULL;
	size_t last_len = 0, said_len = 0;

	if (r->timed_out || r->interrupted || !r->exit_code)
		return false;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p)), *eol = nl ? nl : end;

		if (eol > p) {
			last = p;
			last_len = (size_t)(eol - p);
			if (shell_not_found(p, last_len)) {
				said = p;
				said_len = last_len;
			}
		}
		p = nl ? nl + 1 : end;
	}
	if (!said && r->exit_code != 126 && r->exit_code != 127)
		return false;
	al_strbuf_reset(why);
	if (said || last)
		al_strbuf_add(why, said ? said : last, said ? said_len : last_len);
	else
		al_strbuf_addf(why, "exit %d, no output", r->exit_code);
	al_utf8_cut(why->buf, 300);
	al_strbuf_setlen(why, strlen(why->buf));
	return true;
}

/*
 * A command sensor that could not run: at the node's first measurement a
 * configuration error (AL_ENORUNNER: the run stops before any agent is
 * paid for, and resumes once the agent file is fixed); later (an agent
 * removed the tool) the sensor's error, AL_EAGENT. Its output is written
 * either way, as a failure the circuit breaker compares.
 */
static int check_command_ran(const struct al_sensor *s, const struct al_call *call,
			     bool first)
{
	struct al_strbuf why = AL_STRBUF_INIT, cmd = AL_STRBUF_INIT;
	int rc = 0;

	if (cannot_run(&call->res, &why)) {
		describe_command(s->ref.agent, &cmd);
		rc = al_err(first ? AL_ENORUNNER : AL_EAGENT,
			    "sensor '%s' cannot run its command '%s' (exit %d: %s)%s%s%s",
			    s->name, cmd.buf, call->res.exit_code, why.buf,
			    first ? ": fix the command in '" : "", first ? s->ref.agent->path : "",
			    first ? "' (or install what it runs), then 'ailoop resume'" : "");
	}
	al_strbuf_release(&why);
	al_strbuf_release(&cmd);
	return rc;
}

/* Writes a command sensor's output file from how its command ended. */
static int write_command_output(const struct al_sensor *s, const struct al_call *call)
{
	const struct al_agent *a = s->ref.agent;
	const struct al_proc_result *r = &call->res;
	struct al_strbuf sb = AL_STRBUF_INIT, summary = AL_STRBUF_INIT, cmd = AL_STRBUF_INIT;
	const char *text = r->log.buf, *status;
	size_t len = r->log.len;
	struct al_fm *fm;
	bool pass = r->exit_code == 0 && !r->timed_out;
	char **values = al_calloc(a->nmetrics + 1, sizeof(*values));
	int rc = 0;

	if (a->pass_if)
		pass = matches(a->pass_if, text, len) && !r->timed_out;
	if (a->fail_if && matches(a->fail_if, text, len))
		pass = false;
	status = pass ? "pass" : "fail";
	for (size_t i = 0; i < a->nmetrics; i++) {
		/* interrupted: nothing is written, and the resumed node measures again */
		if ((rc = al_metric_read(&a->metrics[i], text, len, &values[i])) == AL_EINTR)
			goto done;
		if (rc > 0)
			al_progress_note(call->progress, "ailoop: [%s] %s: sensor '%s': metric '%s' "
					 "is missing: its pattern took more than %d steps over the "
					 "output (%zu bytes), or more than %d at one match",
					 call->ctx->label, call->ctx->node->path, s->name,
					 a->metrics[i].name, AL_REGEX_SCAN_LIMIT, len,
					 AL_REGEX_MATCH_LIMIT);
		if (values[i])
			al_strbuf_addf(&summary, "%s%s=%s", summary.len ? "; " : "",
				       a->metrics[i].name, values[i]);
	}
	fm = al_fm_new();
	if (r->timed_out)
		al_strbuf_addf(&summary, "%stimed out", summary.len ? "; " : "");
	else if (!pass && !summary.len)
		al_strbuf_addf(&summary, "exit %d", r->exit_code);

	al_fm_str(fm, "sensor", s->name);
	al_fm_str(fm, "status", status);
	al_fm_int(fm, "exit-code", r->exit_code);
	al_fm_int(fm, "duration-ms", r->duration_ms);
	if (summary.len)
		al_fm_str(fm, "summary", summary.buf);
	if (a->nmetrics) {
		al_fm_begin_map(fm, "metrics");
		for (size_t i = 0; i < a->nmetrics; i++)
			al_fm_str(fm, a->metrics[i].name, values[i]);
		al_fm_end_map(fm);
	}
	al_fm_finish(fm, &sb);
	describe_command(a, &cmd);
	al_strbuf_addf(&sb, "\n# Sensor Output: %s\n\n## Command\n\n", s->name);
	add_fenced(&sb, cmd.buf, cmd.len);
	al_strbuf_adds(&sb, "\n## Output\n\n");
	if (len > OUTPUT_TAIL) {
		const char *tail = text + len - OUTPUT_TAIL;

		while (tail < text + len && (*tail & 0xc0) == 0x80)
			tail++; /* not in the middle of a character */
		al_strbuf_addf(&sb, "(the output was %zu bytes%s: the last 64 KiB follow)\n\n", len,
			       r->log_truncated ? " or more" : "");
		len -= (size_t)(tail - text);
		text = tail;
	}
	add_fenced(&sb, text, len);
	rc = al_write_in_place(call->ctx->output, sb.buf, sb.len);
done:
	for (size_t i = 0; i < a->nmetrics; i++)
		free(values[i]);
	free(values);
	al_strbuf_release(&sb);
	al_strbuf_release(&summary);
	al_strbuf_release(&cmd);
	return rc;
}

/* An agent sensor must leave a readable status in its output. */
static int check_agent_output(const struct al_sensor *s, const char *path)
{
	struct al_md md = AL_MD_INIT;
	int rc = al_md_read(&md, path);

	if (rc == 0 && !al_md_str(&md, "status"))
		rc = al_err(AL_EAGENT, "sensor '%s' wrote no 'status' in the front matter of '%s'",
			    s->name, path);
	else if (rc < 0)
		rc = al_err(AL_EAGENT, "sensor '%s': %s", s->name, al_errmsg());
	al_md_release(&md);
	return rc;
}

/* A metric's value as JSON: a number when it reads as one, else its text. */
static json_t *metric_json(const struct al_val *v)
{
	json_t *j;

	if (!v || al_val_is_null(v) || v->kind != AL_VAL_SCALAR)
		return json_null();
	j = json_loads(v->str, JSON_DECODE_ANY, NULL);
	if (json_is_number(j))
		return j;
	json_decref(j);
	j = json_stringn(v->str, v->len);
	return j ? j : json_null();
}

static int remember_one(struct al_exec *ex, const char *sensor, const char *what, json_t *value)
{
	char *key = al_xprintf("sensors.%s.%s", sensor, what);
	int rc = al_memory_set_json(ex->memory, key, value, "ailoop", "sensor");

	free(key);
	json_decref(value);
	/* a key too long to keep (a sensor or metric named so): its output file has it */
	return rc == AL_EINVALID ? 0 : rc;
}

/* `status` if it is one a sensor may report, else NULL. */
static const char *known_status(const char *status)
{
	static const char *const known[] = { "pass", "fail", "partial", "pending" };

	for (size_t k = 0; status && k < AL_ARRAY_SIZE(known); k++)
		if (!strcmp(status, known[k]))
			return known[k];
	return NULL;
}

/*
 * sensors.<name>.status and sensors.<name>.<metric> in working memory, from
 * the sensor's output: a metric a command sensor's output did not show is
 * null, not the value of an earlier measurement.
 */
static int remember_sensor(struct al_exec *ex, const struct al_sensor *s, const char *path)
{
	const struct al_agent *a = s->ref.agent;
	struct al_md md = AL_MD_INIT;
	const struct al_val *metrics;
	const char *status;
	int rc;

	if (!ex->memory)
		return 0;
	if ((rc = al_md_read(&md, path)) < 0) {
		al_md_release(&md);
		return 0; /* reported by whoever reads the output */
	}
	status = known_status(al_md_str(&md, "status"));
	rc = remember_one(ex, s->name, "status", json_string(status ? status : "fail"));
	metrics = al_md_get(&md, "metrics");
	if (metrics && metrics->kind != AL_VAL_MAP)
		metrics = NULL;
	for (size_t i = 0; metrics && i < metrics->n && rc == 0; i++) {
		const char *name = AL_VAL_KEY(metrics, i)->str;

		if (!strcmp(name, "status"))
			continue; /* not to be mistaken for the sensor's status */
		rc = remember_one(ex, s->name, name, metric_json(AL_VAL_VALUE(metrics, i)));
	}
	for (size_t i = 0; a && i < a->nmetrics && rc == 0; i++)
		if (!metrics || !al_val_get(metrics, a->metrics[i].name))
			rc = remember_one(ex, s->name, a->metrics[i].name, json_null());
	al_md_release(&md);
	return rc;
}

int al_sensors_measure(struct al_exec *ex, const struct al_node *node, const char *dir,
		       const char *label, const char *task, int64_t deadline, bool first,
		       struct al_node_state *sessions)
{
	size_t n = node->nsensors, batch = node->sensors_parallel ? n : 1;
	struct al_call_ctx *ctx = al_calloc(n + 1, sizeof(*ctx));
	struct al_call *calls = al_calloc(n + 1, sizeof(*calls));
	struct al_proc_spec *specs = al_calloc(n + 1, sizeof(*specs));
	struct al_proc_result *results = al_calloc(n + 1, sizeof(*results));
	char **outputs = al_calloc(n + 1, sizeof(*outputs));
	int rc = 0;

	for (size_t i = 0; i < n; i++) {
		const struct al_sensor *s = &node->sensors[i];

		outputs[i] = al_sensor_output_path(dir, s->name);
		ctx[i] = (struct al_call_ctx){
			.agent = s->ref.agent, .role = AL_ROLE_SENSOR, .name = s->name,
			.node = node, .label = label, .dir = dir, .output = outputs[i],
			.task = task, .deadline_ms = deadline,
			.keep_output = al_agent_is_command(s->ref.agent),
			.sessions = sessions,
		};
	}
	for (size_t start = 0; start < n && rc == 0; start += batch) {
		size_t m = start + batch > n ? n - start : batch, ready = 0;
		int blocked = 0;

		for (size_t i = start; i < start + m && rc == 0; i++) {
			if ((rc = al_call_prepare(&calls[i], ex, &ctx[i])) == 0)
				ready++;
			specs[i] = calls[i].spec;
		}
		if (rc == AL_EBLOCKED && ready) { /* the calls counted run, then the run blocks */
			blocked = rc;
			rc = 0;
			m = ready;
		}
		if (rc < 0)
			break;
		al_progress_step(ex->progress, label, node->path, "sensors", "measuring %s%s",
				 m == 1 ? node->sensors[start].name : "",
				 m == 1 ? "" : "all sensors at once");
		rc = al_proc_run_all(specs + start, results + start, m);
		for (size_t i = start; i < start + m; i++) {
			int frc, src;

			calls[i].res = results[i];
			results[i] = (struct al_proc_result)AL_PROC_RESULT_INIT;
			src = rc == 0 ? al_call_slurm_retry(ex, &calls[i]) : 0;
			if (src < 0 && src != AL_EINTR)
				frc = src;
			else if (rc == 0 && al_call_is_agent(&ctx[i]) &&
			    al_rate_limited(ex->flow, calls[i].stream, &calls[i].res, NULL))
				frc = al_call_retry(ex, &calls[i], 0);
			else
				frc = al_call_finish(&calls[i]);
			frc = al_call_refresh(ex, &calls[i], frc);
			frc = al_call_reformat(ex, &calls[i], frc);
			if (frc == 0 && ctx[i].keep_output &&
			    (frc = write_command_output(&node->sensors[i], &calls[i])) == 0)
				frc = check_command_ran(&node->sensors[i], &calls[i], first);
			else if (frc == 0)
				frc = check_agent_output(&node->sensors[i], outputs[i]);
			if (frc == 0)
				frc = remember_sensor(ex, &node->sensors[i], outputs[i]);
			if (rc == 0 && frc < 0)
				rc = frc; /* the first failure; an interrupt outranks it */
		}
		if (rc == 0)
			rc = blocked;
	}
	for (size_t i = 0; i < n; i++) {
		al_call_release(&calls[i]);
		al_proc_result_release(&results[i]);
		free(outputs[i]);
	}
	free(outputs);
	free(results);
	free(specs);
	free(calls);
	free(ctx);
	return rc;
}

int al_sensors_remember(struct al_exec *ex, const struct al_node *node, const char *dir)
{
	int rc = 0;

	for (size_t i = 0; i < node->nsensors && rc == 0; i++) {
		char *path = al_sensor_output_path(dir, node->sensors[i].name);

		rc = remember_sensor(ex, &node->sensors[i], path);
		free(path);
	}
	return rc;
}

int al_sensors_stub(const struct al_node *node, const char *dir)
{
	int rc = 0;

	for (size_t i = 0; i < node->nsensors && !rc; i++) {
		const char *name = node->sensors[i].name;
		struct al_strbuf sb = AL_STRBUF_INIT;
		struct al_fm *fm = al_fm_new();
		char *path = al_sensor_output_path(dir, name);

		al_fm_str(fm, "sensor", name);
		al_fm_str(fm, "status", "pending");
		al_fm_finish(fm, &sb);
		al_strbuf_addf(&sb, "# Sensor Output: %s\n\nNo baseline measurement — first "
			       "iteration after parent controller decision.\n", name);
		rc = al_write_atomic(path, sb.buf, sb.len);
		al_strbuf_release(&sb);
		free(path);
	}
	return rc;
}

/* Sensor `name`'s reading from its output file, read as `md` with result `rc`. */
static void reading_of(struct al_reading *r, const char *name, const struct al_md *md, int rc)
{
	const char *status = NULL, *detail = NULL;

	r->name = name;
	if (rc == 0) {
		status = known_status(al_md_str(md, "status"));
		detail = al_md_str(md, "summary");
	} else if (rc == AL_ENOTFOUND) {
		status = "pending"; /* not measured yet */
	}
	/* unreadable or unknown: not a pass */
	r->status = al_strdup(status ? status : "fail");
	r->detail = detail ? al_strdup(detail) : NULL;
}

/* out, for `n` sensors, filled in by add_reading(). */
static void readings_start(struct al_readings *out, size_t n)
{
	out->n = n;
	out->v = al_calloc(n + 1, sizeof(*out->v));
	out->all_pass = n > 0;
}

static void add_reading(struct al_readings *out, size_t i, const char *name,
			const struct al_md *md, int rc)
{
	reading_of(&out->v[i], name, md, rc);
	out->all_pass &= !strcmp(out->v[i].status, "pass");
}

void al_sensors_read(const struct al_node *node, const char *dir, struct al_readings *out)
{
	readings_start(out, node->nsensors);
	for (size_t i = 0; i < out->n; i++) {
		struct al_md md = AL_MD_INIT;
		char *path = al_sensor_output_path(dir, node->sensors[i].name);

		add_reading(out, i, node->sensors[i].name, &md, al_md_read(&md, path));
		al_md_release(&md);
		free(path);
	}
}

/* What a node keeps of its sensors' output files between two agents (al_sensor_output). */
struct al_sensor_outputs {
	struct al_md *md;
	int *rc;
};

const struct al_md *al_sensor_output(struct al_node_run *nr, size_t i, int *rc)
{
	struct al_sensor_outputs *o = nr->outputs;

	if (!o) {
		o = nr->outputs = al_calloc(1, sizeof(*o));
		o->md = al_calloc(nr->n->nsensors + 1, sizeof(*o->md));
		o->rc = al_calloc(nr->n->nsensors + 1, sizeof(*o->rc));
		for (size_t k = 0; k < nr->n->nsensors; k++) {
			char *path = al_sensor_output_path(nr->dir, nr->n->sensors[k].name);

			o->md[k] = (struct al_md)AL_MD_INIT;
			o->rc[k] = al_md_read(&o->md[k], path);
			free(path);
		}
	}
	*rc = o->rc[i];
	return &o->md[i];
}

void al_sensor_outputs_forget(struct al_node_run *nr)
{
	struct al_sensor_outputs *o = nr->outputs;

	if (!o)
		return;
	for (size_t k = 0; k < nr->n->nsensors; k++)
		al_md_release(&o->md[k]);
	free(o->md);
	free(o->rc);
	free(o);
	nr->outputs = NULL;
}

void al_sensors_read_kept(struct al_node_run *nr, struct al_readings *out)
{
	readings_start(out, nr->n->nsensors);
	for (size_t i = 0; i < out->n; i++) {
		int rc;
		const struct al_md *md = al_sensor_output(nr, i, &rc);

		add_reading(out, i, nr->n->sensors[i].name, md, rc);
	}
}

void al_readings_release(struct al_readings *r)
{
	for (size_t i = 0; i < r->n; i++) {
		free(r->v[i].status);
		free(r->v[i].detail);
	}
	free(r->v);
	memset(r, 0, sizeof(*r));
}

void al_readings_line(const struct al_readings *r, struct al_strbuf *out)
{
	for (size_t i = 0; i < r->n; i++)
		al_sensors_line_add(out, r->v[i].name, r->v[i].status,
				    strcmp(r->v[i].status, "pass") && strcmp(r->v[i].status, "fail")
					    ? NULL : r->v[i].detail);
}
