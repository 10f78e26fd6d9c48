#include "ailoop/base/progress.h"
#include "ailoop/base/strbuf.h"
#include "ailoop/base/util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void al_progress_init(struct al_progress *p, bool quiet)
{
	const char *no = getenv("NO_COLOR");

	memset(p, 0, sizeof(*p));
	p->quiet = quiet;
	p->tty = isatty(2);
	p->color = p->tty && !(no && *no);
}

static void clear_live(struct al_progress *p)
{
	if (p->live)
		fputs("\r\033[K", stderr);
	p->live = false;
}

static void draw(struct al_progress *p, int64_t now)
{
	int64_t s = (now - p->step_start) / 1000;

	fprintf(stderr, "\r\033[K%s%s %lld:%02lld%s", p->color ? "\033[1m" : "", p->line,
		(long long)(s / 60), (long long)(s % 60), p->color ? "\033[0m" : "");
	fflush(stderr);
	p->live = true;
	p->last_draw = now;
}

void al_progress_step(struct al_progress *p, const char *label, const char *node_path,
		      const char *role, const char *fmt, ...)
{
	char what[256];
	va_list ap;

	if (p->quiet)
		return;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	snprintf(p->line, sizeof(p->line), "ailoop: [%s] %s %s: %s", label, node_path, role, what);
	p->step_start = al_now_ms();
	if (p->tty) {
		draw(p, p->step_start);
	} else {
		fprintf(stderr, "%s\n", p->line);
		fflush(stderr);
	}
}

void al_progress_note(struct al_progress *p, const char *fmt, ...)
{
	struct al_strbuf line = AL_STRBUF_INIT;
	va_list ap;

	if (p->quiet)
		return;
	clear_live(p);
	va_start(ap, fmt);
	al_strbuf_vaddf(&line, fmt, ap);
	va_end(ap);
	/* one write: parallel children's lines do not run into each other */
	al_strbuf_adds(&line, "\n");
	fwrite(line.buf, 1, line.len, stderr);
	fflush(stderr);
	al_strbuf_release(&line);
}

void al_progress_tick(void *data)
{
	struct al_progress *p = data;
	int64_t now;

	if (!p || p->quiet || !p->tty || !p->live)
		return;
	now = al_now_ms();
	if (now - p->last_draw >= 1000)
		draw(p, now);
}

void al_progress_end(struct al_progress *p)
{
	clear_live(p);
}
