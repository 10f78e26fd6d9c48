#include "ailoop/exec/hooks.h"
#include "ailoop/base/alloc.h"
#include "ailoop/base/progress.h"
#include "ailoop/base/strbuf.h"
#include "ailoop/base/util.h"
#include "ailoop/proc/proc.h"
#include "ailoop/store/run.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define HOOK_GRACE_MS 1000
/* an environment variable holds a line of text: the first, up to this many bytes */
#define HOOK_ENV_MAX 4096

/* The fields of the event that the environment carries too. */
static const char *const env_fields[][2] = {
	{ "node", "AILOOP_NODE" },       { "label", "AILOOP_LABEL" },
	{ "status", "AILOOP_STATUS" },   { "summary", "AILOOP_SUMMARY" },
	{ "commit", "AILOOP_COMMIT" },   { "reason", "AILOOP_REASON" },
};

/* "NAME=" and the first line of `value`, cut short at a UTF-8 character. */
static char *env_line(const char *name, const char *value)
{
	size_t n = strcspn(value, "\n");

	if (n > HOOK_ENV_MAX) {
		n = HOOK_ENV_MAX;
		while (n && ((unsigned char)value[n] & 0xc0) == 0x80)
			n--;
	}
	return al_xprintf("%s=%.*s", name, (int)n, value);
}

static void add_env(char ***env, size_t *n, const char *name, const char *value)
{
	*env = al_realloc(*env, (*n + 2) * sizeof(**env));
	(*env)[(*n)++] = env_line(name, value ? value : "");
	(*env)[*n] = NULL;
}

/* `s` as a JSON string, a byte that is not UTF-8 as U+FFFD (a task may hold any); NULL: null. */
static json_t *text(const char *s)
{
	struct al_strbuf sb = AL_STRBUF_INIT;
	json_t *v;

	if (!s)
		return json_null();
	al_utf8_repair(&sb, s, strlen(s));
	v = json_stringn(sb.buf, sb.len);
	al_strbuf_release(&sb);
	return v;
}

/*
 * What the hook is told: the run's fields and the event's (`fields` is
 * NULL if they could not be packed: text that is not UTF-8, which
 * ailoop's own state never holds).
 */
static json_t *event_json(const struct al_exec *ex, enum al_hook_event event, json_t *fields)
{
	const struct al_run_state *st = &ex->run->st;
	json_t *o = json_object();

	json_object_set_new(o, "hook", json_string(al_hook_names[event]));
	json_object_set_new(o, "run_id", text(st->run_id));
	json_object_set_new(o, "task", text(st->task));
	json_object_set_new(o, "branch", text(st->branch));
	json_object_set_new(o, "base_branch", text(st->base_branch));
	json_object_set_new(o, "run_dir", text(ex->run->abs_dir));
	if (fields)
		json_object_update(o, fields);
	return o;
}

/*
 * The hook's record in logs/hooks.log: what ran, how it ended, what it
 * printed. In the run's own directory (a parallel child's too, which runs
 * in its worktree), in one write: children append beside each other.
 */
static void log_run(const struct al_exec *ex, enum al_hook_event event, const char *what,
		    const struct al_proc_result *r, const char *ended)
{
	char *path = al_xprintf("%s/" AL_RUN_AGENTS_DIR "/hooks.log", ex->run->abs_dir);
	struct al_strbuf sb = AL_STRBUF_INIT;
	char ts[32];
	time_t now = time(NULL);
	struct tm tm;
	int fd;

	strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &tm));
	al_strbuf_addf(&sb, "=== %s %s: %s: %s (%lld ms)\n", ts, al_hook_names[event], what, ended,
		       (long long)r->duration_ms);
	al_strbuf_add(&sb, r->log.buf, r->log.len);
	if (r->log.len && r->log.buf[r->log.len - 1] != '\n')
		al_strbuf_addch(&sb, '\n');
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd >= 0) {
		ssize_t n = write(fd, sb.buf, sb.len);

		(void)n; /* a record lost is no failure of the run */
		close(fd);
	}
	al_strbuf_release(&sb);
	free(path);
}

void al_hook_run(struct al_exec *ex, enum al_hook_event event, const char *fmt, ...)
{
	const struct al_hooks *h = &ex->flow->hooks;
	struct al_proc_spec spec = { 0 };
	struct al_proc_result r = AL_PROC_RESULT_INIT;
	json_t *ev, *fields;
	char **env = NULL, *input, ended[96];
	size_t nenv = 0;
	va_list ap;
	int rc;

	if (!h->argv[event]) /* a commit's cost without hooks: this test */
		return;
	va_start(ap, fmt);
	fields = json_vpack_ex(NULL, 0, fmt, ap);
	va_end(ap);
	ev = event_json(ex, event, fields);
	input = json_dumps(ev, JSON_COMPACT | JSON_PRESERVE_ORDER);
	add_env(&env, &nenv, "AILOOP_HOOK", al_hook_names[event]);
	add_env(&env, &nenv, "AILOOP_RUN_ID", ex->run->st.run_id);
	add_env(&env, &nenv, "AILOOP_RUN_DIR", ex->run->abs_dir);
	add_env(&env, &nenv, "AILOOP_BRANCH", ex->run->st.branch);
	add_env(&env, &nenv, "AILOOP_TASK", ex->run->st.task);
	for (size_t i = 0; i < AL_ARRAY_SIZE(env_fields); i++) {
		const char *v = json_string_value(json_object_get(fields, env_fields[i][0]));

		if (v)
			add_env(&env, &nenv, env_fields[i][1], v);
	}
	spec.name = "hook";
	spec.argv = h->argv[event];
	spec.env = (const char *const *)env;
	spec.cwd = ex->root;
	spec.input = input;
	spec.input_len = strlen(input);
	spec.deadline_ms = al_now_ms() + (int64_t)h->timeout_seconds * 1000;
	spec.grace_ms = HOOK_GRACE_MS;
	/* a run paused by Ctrl-C or SIGTERM is told too: a second one stops the hook */
	spec.after_interrupt = event == AL_HOOK_RUN_END;
	rc = al_proc_run(&spec, &r);
	if (rc < 0 && rc != AL_EINTR)
		snprintf(ended, sizeof(ended), "could not start: %s", al_errmsg());
	else if (r.interrupted || rc == AL_EINTR)
		snprintf(ended, sizeof(ended), "stopped: the run was interrupted");
	else if (r.timed_out)
		snprintf(ended, sizeof(ended), "timed out after %d s, stopped", h->timeout_seconds);
	else if (r.exit_code == 127)
		snprintf(ended, sizeof(ended), "exit 127 (not found?)");
	else
		snprintf(ended, sizeof(ended), "exit %d", r.exit_code);
	log_run(ex, event, h->text[event], &r, ended);
	/* interrupted, the run is paused and says so: the hook did not fail */
	if (rc != AL_EINTR && !r.interrupted && (rc < 0 || r.timed_out || r.exit_code)) {
		al_run_event(ex->run, "hook_failed", "{s:s, s:s, s:i, s:b, s:s}", "hook",
			     al_hook_names[event], "command", h->text[event], "exit_code",
			     r.exit_code, "timed_out", r.timed_out, "reason", ended);
		al_progress_note(ex->progress, "ailoop: warning: hook %s ('%s') failed: %s (its "
				 "output: %s/" AL_RUN_AGENTS_DIR "/hooks.log)", al_hook_names[event],
				 h->text[event], ended, ex->run->dir);
	}
	al_proc_result_release(&r);
	for (size_t i = 0; i < nenv; i++)
		free(env[i]);
	free(env);
	free(input);
	json_decref(ev);
	json_decref(fields);
}
