#include "ailoop/exec/breaker.h"
#include "ailoop/exec/exec.h"
#include "ailoop/model/md.h"
#include "ailoop/exec/sensor.h"
#include "ailoop/base/sha256.h"
#include "ailoop/base/util.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/* The circuit breaker of a loop node: see breaker.h. */

static bool reached(int count, int limit)
{
	return limit > 0 && count >= limit;
}

enum al_breaker_change al_breaker_count(struct al_breaker *b, int no_progress_limit,
					int same_error_limit, bool progress, const char *error)
{
	enum al_breaker_state was = b->state, now;

	b->no_progress = progress ? 0 : b->no_progress + 1;
	b->same_error = error && b->error && !strcmp(error, b->error) ? b->same_error + 1 : 0;
	al_set_str(&b->error, error);
	if (reached(b->no_progress, no_progress_limit) || reached(b->same_error, same_error_limit))
		now = AL_BREAKER_OPEN;
	else if ((b->no_progress && reached(b->no_progress + 1, no_progress_limit)) ||
		 (b->same_error && reached(b->same_error + 1, same_error_limit)))
		now = AL_BREAKER_HALF_OPEN;
	else
		now = AL_BREAKER_CLOSED;
	b->state = now;
	if (now == was)
		return AL_BREAKER_SAME;
	return now == AL_BREAKER_OPEN ? AL_BREAKER_TO_OPEN
	     : now == AL_BREAKER_HALF_OPEN ? AL_BREAKER_TO_HALF_OPEN : AL_BREAKER_TO_CLOSED;
}

void al_breaker_reset(struct al_breaker *b)
{
	b->state = AL_BREAKER_CLOSED;
	b->no_progress = b->same_error = 0;
	al_set_str(&b->reason, NULL);
}

/* The line of sensor `name` in a measurement, without its name; NULL if absent. */
static const char *sensor_line(const char *m, const char *name, size_t *len)
{
	size_t n = strlen(name);

	for (const char *p = m; p && *p;) {
		const char *nl = strchr(p, '\n'), *end = nl ? nl : p + strlen(p);

		if ((size_t)(end - p) > n && !strncmp(p, name, n) && p[n] == ' ') {
			*len = (size_t)(end - p - n - 1);
			return p + n + 1;
		}
		p = nl ? nl + 1 : NULL;
	}
	return NULL;
}

/* The value of `metric=` among the words of `line`, as a length; NULL if absent. */
static const char *metric_in(const char *line, size_t len, const char *metric, size_t mlen,
			     size_t *vlen)
{
	const char *end = line + len;

	for (const char *p = line; p < end;) {
		const char *sp = memchr(p, ' ', (size_t)(end - p)), *w = sp ? sp : end;

		if ((size_t)(w - p) > mlen && !memcmp(p, metric, mlen) && p[mlen] == '=') {
			*vlen = (size_t)(w - p - mlen - 1);
			return p + mlen + 1;
		}
		p = sp ? sp + 1 : end;
	}
	return NULL;
}

bool al_breaker_sensors_progress(const char *before, const char *now)
{
	if (!before)
		return true;
	for (const char *p = now; p && *p;) {
		const char *nl = strchr(p, '\n'), *end = nl ? nl : p + strlen(p);
		const char *sp = memchr(p, ' ', (size_t)(end - p));
		char *name = al_strndup(p, sp ? (size_t)(sp - p) : (size_t)(end - p));
		const char *was;
		size_t was_len = 0;

		was = sensor_line(before, name, &was_len);
		free(name);
		if (sp && was) {
			const char *words = sp + 1, *w;
			bool pass_now = !strncmp(words, "pass", 4) && (words + 4 == end || words[4] == ' ');
			bool pass_was = !strncmp(was, "pass", 4) && (was_len == 4 || was[4] == ' ');

			if (pass_now && !pass_was)
				return true;
			/* metrics: every word after the status */
			for (w = memchr(words, ' ', (size_t)(end - words)); w && w < end;) {
				const char *ws = w + 1, *we = memchr(ws, ' ', (size_t)(end - ws));
				const char *eq, *old;
				size_t olen;

				we = we ? we : end;
				eq = memchr(ws, '=', (size_t)(we - ws));
				if (eq && (old = metric_in(was, was_len, ws, (size_t)(eq - ws), &olen)) &&
				    (olen != (size_t)(we - eq - 1) || memcmp(old, eq + 1, olen)))
					return true;
				w = we < end ? we : NULL;
			}
		}
		p = nl ? nl + 1 : NULL;
	}
	return false;
}

static bool word_char(char c)
{
	return isalnum((unsigned char)c) || c == '_';
}

/* A unit of time at `p` (then no letter follows): its length, else 0. */
static size_t time_unit(const char *p, const char *end)
{
	static const char *const units[] = {
		"seconds", "second", "minutes", "minute", "hours", "hour", "secs", "sec", "mins",
		"min", "hrs", "hr", "ms", "us", "ns", "\xc2\xb5s", "s", "m", "h",
	};

	for (size_t i = 0; i < AL_ARRAY_SIZE(units); i++) {
		size_t n = strlen(units[i]);

		if ((size_t)(end - p) >= n && !memcmp(p, units[i], n) &&
		    (p + n == end || !isalpha((unsigned char)p[n])))
			return n;
	}
	return 0;
}

void al_breaker_normalise(struct al_strbuf *out, const char *text, size_t len)
{
	const char *p = text, *end = text + len;

	while (p < end) {
		const char *w = p, *q;
		size_t hex = 0, digits = 0;

		if (!word_char(*p) || (p > text && word_char(p[-1]))) {
			if (*p == '\n') /* trailing blanks of the line go */
				while (out->len && (out->buf[out->len - 1] == ' ' ||
						    out->buf[out->len - 1] == '\t'))
					out->buf[--out->len] = '\0';
			al_strbuf_addch(out, *p++);
			continue;
		}
		while (w < end && word_char(*w)) {
			hex += isxdigit((unsigned char)*w) != 0;
			digits += isdigit((unsigned char)*w) != 0;
			w++;
		}
		if (w - p > 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X') &&
		    hex == (size_t)(w - p) - 1) { /* 0x7ffd1234 */
			al_strbuf_adds(out, "0x#");
			p = w;
			continue;
		}
		if (w - p >= 8 && hex == (size_t)(w - p) && digits) { /* hashes, addresses */
			al_strbuf_addch(out, '#');
			p = w;
			continue;
		}
		if (!isdigit((unsigned char)*p)) {
			al_strbuf_add(out, p, (size_t)(w - p));
			p = w;
			continue;
		}
		/* a number: digits, and more of them after '.', ':' or (a date) '-' */
		q = p;
		while (q < end && isdigit((unsigned char)*q))
			q++;
		if (q - p == 4 && end - q >= 6 && q[0] == '-' && isdigit((unsigned char)q[1]) &&
		    isdigit((unsigned char)q[2]) && q[3] == '-' && isdigit((unsigned char)q[4]) &&
		    isdigit((unsigned char)q[5])) { /* 2026-11-23, and a time after it */
			q += 6;
			if (q < end && (*q == 'T' || *q == ' ') && q + 1 < end &&
			    isdigit((unsigned char)q[1])) {
				const char *t = q + 1;

				while (t < end && (isdigit((unsigned char)*t) || *t == ':' || *t == '.'))
					t++;
				if (memchr(q + 1, ':', (size_t)(t - q - 1)))
					q = t;
			}
			if (q < end && *q == 'Z')
				q++;
			al_strbuf_addch(out, '#');
			p = q;
			continue;
		}
		{
			bool clock = false;
			const char *u;
			size_t ulen;

			while (q + 1 < end && (*q == '.' || *q == ':') && isdigit((unsigned char)q[1])) {
				clock |= *q == ':';
				q++;
				while (q < end && isdigit((unsigned char)*q))
					q++;
			}
			u = q < end && *q == ' ' ? q + 1 : q;
			if (word_char(*q) && !time_unit(q, end)) { /* 3rd, 64bit: a word */
				al_strbuf_add(out, p, (size_t)(w - p));
				p = w;
				continue;
			}
			ulen = u < end ? time_unit(u, end) : 0;
			if (clock || ulen) {
				al_strbuf_addch(out, '#');
				al_strbuf_add(out, q, (size_t)(u + ulen - q));
				p = u + ulen;
			} else {
				al_strbuf_add(out, p, (size_t)(q - p));
				p = q;
			}
		}
	}
	while (out->len && (out->buf[out->len - 1] == ' ' || out->buf[out->len - 1] == '\t'))
		out->buf[--out->len] = '\0';
}

/* One sensor's line of a measurement: "name status metric=value …". */
static void measurement_line(struct al_strbuf *sig, const char *name, const char *status,
			     const struct al_md *md)
{
	const struct al_val *metrics = md ? al_md_get(md, "metrics") : NULL;

	al_strbuf_addf(sig, "%s %s", name, status);
	for (size_t i = 0; metrics && metrics->kind == AL_VAL_MAP && i < metrics->n; i++) {
		const struct al_val *k = AL_VAL_KEY(metrics, i), *v = AL_VAL_VALUE(metrics, i);

		if (k->kind != AL_VAL_SCALAR || v->kind != AL_VAL_SCALAR || al_val_is_null(v))
			continue;
		al_strbuf_addf(sig, " %s=", k->str);
		for (size_t c = 0; c < v->len; c++) /* one word: the line's separators are out */
			al_strbuf_addch(sig, v->str[c] == ' ' || v->str[c] == '\n' ? '_' : v->str[c]);
	}
	al_strbuf_addch(sig, '\n');
}

/* The node's measurement as its sensor outputs say, and the hash of what failed. */
static void measurement(struct al_node_run *nr, struct al_strbuf *sig, char **error)
{
	struct al_strbuf failing = AL_STRBUF_INIT;
	struct al_readings r;

	*error = NULL;
	al_sensors_read_kept(nr, &r);
	for (size_t i = 0; i < r.n; i++) {
		int rc;
		const struct al_md *md = al_sensor_output(nr, i, &rc);
		bool read = rc == 0;

		measurement_line(sig, r.v[i].name, r.v[i].status, read ? md : NULL);
		if (strcmp(r.v[i].status, "pass") && strcmp(r.v[i].status, "pending")) {
			char *out = read ? al_md_section(md->body, md->body_len, "Output") : NULL;
			const char *text = out ? out : read ? md->body : "";

			al_strbuf_addf(&failing, "%s %s\n", r.v[i].name, r.v[i].status);
			al_breaker_normalise(&failing, text, out ? strlen(out) : read ? md->body_len : 0);
			al_strbuf_addch(&failing, '\n');
			free(out);
		}
	}
	if (failing.len) {
		char hex[65];

		al_sha256_hex(failing.buf, failing.len, hex);
		*error = al_strdup(hex);
	}
	al_strbuf_release(&failing);
	al_readings_release(&r);
}

/* ReAcTree form: how each child ended in iteration `label` ("-": it did not run). */
static void children_line(const struct al_node_run *nr, struct al_strbuf *out)
{
	const char *label = nr->st.label;
	size_t ll = strlen(label);

	for (size_t i = 0; i < nr->n->nchildren; i++) {
		const struct al_node *c = nr->n->children[i];
		char *dir = al_run_node_dir(nr->ex->run, c->path);
		char *path = al_xprintf("%s/orchestrator-output.md", dir);
		struct al_node_state st;

		if (al_node_state_read(&st, path) == 0 &&
		    (!strcmp(st.label, label) || (!strncmp(st.label, label, ll) && st.label[ll] == '.')))
			al_strbuf_addf(out, "%s%s", i ? " " : "", st.status);
		else
			al_strbuf_addf(out, "%s-", i ? " " : "");
		al_node_state_release(&st);
		free(path);
		free(dir);
	}
}

static const char *reason_text(const struct al_breaker *b, int npl)
{
	return reached(b->no_progress, npl) ? "no progress" : "the same error";
}

/* "no progress in 3 iterations (2 to 4): …" */
static char *describe(const struct al_node_run *nr, const struct al_breaker *b)
{
	const struct al_node *n = nr->n;
	bool stuck = reached(b->no_progress, n->no_progress_limit);
	int count = stuck ? b->no_progress : b->same_error;
	char *first = al_label_for(nr->parent_label, nr->st.iteration - count + 1), *msg;

	if (stuck)
		msg = al_xprintf("no progress in %d iteration%s (%s to %s): %s", count,
				 count == 1 ? "" : "s", first, nr->st.label,
				 n->nsensors ? "no sensor turned pass, no sensor metric changed and "
					       "no file changed"
				 : n->sensor_form ? "no file changed"
						  : "no file changed and every child ended as before");
	else
		msg = al_xprintf("the same failing sensor output %d iteration%s in a row (%s to %s)",
				 count, count == 1 ? "" : "s", first, nr->st.label);
	free(first);
	return msg;
}

int al_breaker_iteration(struct al_node_run *nr, bool count)
{
	struct al_exec *ex = nr->ex;
	const struct al_node *n = nr->n;
	struct al_breaker *b = &nr->st.breaker;
	struct al_strbuf sig = AL_STRBUF_INIT, kids = AL_STRBUF_INIT;
	enum al_breaker_change change;
	char tree[65], *error = NULL;
	bool have_tree = al_git_code_id(ex->git, tree) == 0, progress;
	int rc = 0;

	if (n->nsensors)
		measurement(nr, &sig, &error);
	if (!n->sensor_form && count)
		children_line(nr, &kids);
	progress = !have_tree || !b->tree || strcmp(tree, b->tree) ||
		   (n->nsensors && al_breaker_sensors_progress(b->sensors, sig.buf)) ||
		   (!n->sensor_form && b->children && strcmp(b->children, kids.buf));
	al_set_str(&b->tree, have_tree ? tree : NULL);
	if (n->nsensors)
		al_set_str(&b->sensors, sig.buf);
	if (!n->sensor_form && count) /* at the start no child has run */
		al_set_str(&b->children, kids.buf);
	if (!count) {
		al_set_str(&b->error, error);
		goto done;
	}
	change = al_breaker_count(b, n->no_progress_limit, n->same_error_limit, progress, error);
	if (change == AL_BREAKER_TO_HALF_OPEN) {
		al_run_event(ex->run, "breaker_half_open", "{s:s, s:s, s:i, s:i}", "node", n->path,
			     "label", nr->st.label, "no_progress", b->no_progress, "same_error",
			     b->same_error);
		al_progress_note(ex->progress, "ailoop: [%s] %s: circuit breaker half-open: %d "
				 "iteration%s without progress, %d with the same error",
				 nr->st.label, n->path, b->no_progress, b->no_progress == 1 ? "" : "s",
				 b->same_error);
	} else if (change == AL_BREAKER_TO_CLOSED) {
		al_run_event(ex->run, "breaker_closed", "{s:s, s:s}", "node", n->path, "label",
			     nr->st.label);
		al_progress_note(ex->progress, "ailoop: [%s] %s: circuit breaker closed again",
				 nr->st.label, n->path);
	} else if (change == AL_BREAKER_TO_OPEN) {
		char *why = describe(nr, b);

		al_set_str(&b->reason, why);
		al_run_event(ex->run, "breaker_open", "{s:s, s:s, s:s, s:s, s:i, s:i}", "node",
			     n->path, "label", nr->st.label, "reason",
			     reason_text(b, n->no_progress_limit), "message", why, "no_progress",
			     b->no_progress, "same_error", b->same_error);
		rc = al_err(AL_EBLOCKED, "circuit breaker open at node '%s': %s; see what the agents "
			    "did in %s and their logs, change the agents, the flow or the code "
			    "(or raise termination.%s), then 'ailoop resume %s' resets the breaker "
			    "and goes on", n->path, why, nr->dir,
			    reached(b->no_progress, n->no_progress_limit) ? "no_progress_limit"
									  : "same_error_limit",
			    ex->run->st.run_id);
		free(why);
	}
done:
	free(error);
	al_strbuf_release(&sig);
	al_strbuf_release(&kids);
	return rc;
}

int al_breaker_resume(struct al_node_run *nr)
{
	struct al_exec *ex = nr->ex;

	if (strcmp(nr->st.status, "blocked"))
		return 0;
	al_progress_note(ex->progress, "ailoop: [%s] %s: circuit breaker reset (it opened: %s): "
			 "acting again", nr->st.label, nr->n->path,
			 nr->st.breaker.reason ? nr->st.breaker.reason : "-");
	al_run_event(ex->run, "breaker_reset", "{s:s, s:s, s:s}", "node", nr->n->path, "label",
		     nr->st.label, "was", nr->st.breaker.reason ? nr->st.breaker.reason : "");
	al_breaker_reset(&nr->st.breaker);
	al_set_str(&nr->st.status, "running");
	return al_node_save(nr);
}
