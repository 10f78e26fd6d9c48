#include "ailoop/base/progress.h"
#include "ailoop/base/strbuf.h"
#include "ailoop/base/util.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
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

/* The terminal's width in columns, asked at each draw so a resize (SIGWINCH) counts; 0: unknown. */
static int columns(void)
{
	struct winsize ws;

	return ioctl(2, TIOCGWINSZ, &ws) == 0 ? ws.ws_col : 0;
}

/*
 * The columns code point `c` takes on a terminal: none for a combining
 * mark or a zero-width one, two for East Asian wide forms and emoji.
 */
static int cp_width(unsigned c)
{
	if ((c >= 0x300 && c <= 0x36f) || (c >= 0x200b && c <= 0x200f) ||
	    (c >= 0xfe00 && c <= 0xfe0f))
		return 0;
	if ((c >= 0x1100 && c <= 0x115f) || (c >= 0x2e80 && c <= 0xa4cf) ||
	    (c >= 0xac00 && c <= 0xd7a3) || (c >= 0xf900 && c <= 0xfaff) ||
	    (c >= 0xfe30 && c <= 0xfe4f) || (c >= 0xff00 && c <= 0xff60) ||
	    (c >= 0xffe0 && c <= 0xffe6) || (c >= 0x1f300 && c <= 0x1f64f) ||
	    (c >= 0x1f900 && c <= 0x1f9ff) || (c >= 0x20000 && c <= 0x3fffd))
		return 2;
	return 1;
}

/*
 * How many bytes of `s` fit in `room` columns, never splitting a UTF-8
 * sequence (a byte that starts none counts as one column of its own).
 */
static size_t fit(const char *s, int room)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t at = 0;
	int used = 0;

	while (u[at]) {
		unsigned c = u[at];
		size_t len = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3
			   : (c & 0xf8) == 0xf0 ? 4 : 1;
		int w;

		if (len > 1)
			c &= 0x3f >> (len - 1);
		for (size_t k = 1; k < len; k++) {
			if ((u[at + k] & 0xc0) != 0x80) /* cut short (the line's own limit) */
				return at;
			c = c << 6 | (u[at + k] & 0x3f);
		}
		w = len == 1 ? 1 : cp_width(c);
		if (used + w > room)
			break;
		used += w;
		at += len;
	}
	return at;
}

/*
 * `text` as the live line, cut to the terminal's width with `tail` (a
 * clock, a countdown) kept after it: a line wider than the screen wraps,
 * and "\r" then goes back to the start of its last row only, so each
 * redraw would leave a copy above. The last column stays empty, where
 * some terminals wrap at once.
 */
static void put_live(struct al_progress *p, const char *text, const char *tail)
{
	int width = columns(), room;
	size_t keep, len = strlen(text);
	bool cut = false;

	room = width > 0 ? width - 2 - (int)strlen(tail) : INT_MAX;
	keep = room > 0 ? fit(text, room) : 0;
	if (keep < len) {
		cut = room > 1;
		keep = cut ? fit(text, room - 1) : 0; /* and "…" */
	}
	fprintf(stderr, "\r\033[K%s%.*s%s%s%s%s", p->color ? "\033[1m" : "", (int)keep, text,
		cut ? "…" : "", keep || cut ? " " : "", room > 0 || width <= 0 ? tail : "",
		p->color ? "\033[0m" : "");
	fflush(stderr);
	p->live = true;
}

/* The step's line with its clock. */
static void draw(struct al_progress *p, int64_t now)
{
	int64_t s = (now - p->step_start) / 1000;
	char clock[32];

	snprintf(clock, sizeof(clock), "%lld:%02lld", (long long)(s / 60), (long long)(s % 60));
	put_live(p, p->line, clock);
	p->last_draw = now;
}

void al_progress_live(struct al_progress *p, const char *text, const char *tail)
{
	if (p->quiet || !p->tty)
		return;
	put_live(p, text, tail);
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
