#ifndef AILOOP_SIGNALS_H
#define AILOOP_SIGNALS_H

/*
 * SIGINT, SIGTERM and SIGHUP while a run is going: the handler only counts
 * and wakes the process loop through a self-pipe, which then stops the
 * agents (SIGTERM, SIGKILL after the grace period; at once on the second
 * signal). SIGPIPE is ignored so a child that stops reading its input
 * cannot kill ailoop.
 */
void al_signals_install(void);
/*
 * In a process just forked (a parallel child): a self-pipe of its own, so
 * that no other process drains its wake-ups, and no signal counted yet.
 */
void al_signals_forked(void);
/* Read end of the self-pipe, for poll(); -1 before al_signals_install(). */
int al_signals_fd(void);
/* How many interrupting signals have arrived since install. */
int al_signals_count(void);
/* Empties the self-pipe after a wake-up. */
void al_signals_drain(void);

#endif
