#ifndef AILOOP_PROGRESS_H
#define AILOOP_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>

/*
 * Progress on stderr. Not on a terminal: one line per step. On a terminal:
 * a live line with node, label, role and elapsed time, redrawn while an
 * agent works, with the steps above it. Quiet: nothing but errors.
 */
struct al_progress {
	bool tty;
	bool quiet;
	bool color;
	bool live;       /* a live line is on screen */
	int64_t step_start;
	int64_t last_draw;
	char line[512];  /* the live line, without the clock */
};

void al_progress_init(struct al_progress *p, bool quiet);
/* A step begins: "1.2 delivery/implement actuator: running loop-actuator". */
void al_progress_step(struct al_progress *p, const char *label, const char *node_path,
		      const char *role, const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* A line that stays (results, notes). */
void al_progress_note(struct al_progress *p, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/*
 * On a terminal, `text` as the live line (a wait's countdown), cut to the
 * terminal's width with `tail` kept after it; elsewhere nothing.
 */
void al_progress_live(struct al_progress *p, const char *text, const char *tail);
/* Redraws the live line's clock; for al_proc_spec.tick. */
void al_progress_tick(void *p);
/* Clears the live line. */
void al_progress_end(struct al_progress *p);

#endif
