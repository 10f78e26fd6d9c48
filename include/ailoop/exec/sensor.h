#ifndef AILOOP_SENSOR_H
#define AILOOP_SENSOR_H

#include "ailoop/exec/exec.h"
#include "ailoop/model/md.h"

/*
 * Measuring a node: each sensor writes nodes/<path>/sensor-<name>-output.md
 * whose front matter gives its status (pass, fail, partial, pending). A
 * sensor whose agent file has a `command` is run by ailoop itself: status
 * from the exit code or pass_if/fail_if, metrics extracted with their
 * patterns. Other sensors are agents that write their output themselves.
 */
struct al_reading {
	const char *name;
	char *status;
	char *detail; /* shown in the commit's [sensors] line; may be NULL */
};

struct al_readings {
	struct al_reading *v;
	size_t n;
	bool all_pass; /* at least one sensor, and every one passes */
};

/*
 * Runs every sensor of `node`, all at once if sensors_parallel. Returns 0,
 * AL_EINTR, or AL_EAGENT if an agent sensor failed (message set). A command
 * sensor whose command cannot run (exit 126 or 127, the shell's "not
 * found") is AL_ENORUNNER at the node's `first` measurement, AL_EAGENT later.
 * The sessions of sensors that continue theirs are kept in `sessions`.
 */
int al_sensors_measure(struct al_exec *ex, const struct al_node *node, const char *dir,
		       const char *label, const char *task, int64_t deadline, bool first,
		       struct al_node_state *sessions);
/* Working memory's sensors.<name>.* as the output files say (a measurement not run again). */
int al_sensors_remember(struct al_exec *ex, const struct al_node *node, const char *dir);
/* Writes "pending" outputs: a child entered without a baseline measurement. */
int al_sensors_stub(const struct al_node *node, const char *dir);
/* The statuses the output files record now. */
void al_sensors_read(const struct al_node *node, const char *dir, struct al_readings *out);
/*
 * A node's sensor outputs, read once and kept in `nr` until an agent may
 * change them: al_sensor_outputs_forget() before any of the node's agents
 * or sensors runs. Between a measurement and the next agent, the commit,
 * the breaker and a built-in controller read them several times.
 * al_sensor_output() returns sensor i's, parsed, with al_md_read()'s
 * result in *rc; al_sensors_read_kept() is al_sensors_read() from them.
 */
const struct al_md *al_sensor_output(struct al_node_run *nr, size_t i, int *rc);
void al_sensors_read_kept(struct al_node_run *nr, struct al_readings *out);
void al_sensor_outputs_forget(struct al_node_run *nr);
void al_readings_release(struct al_readings *r);
/* "name: status (detail), …" for the commit message. */
void al_readings_line(const struct al_readings *r, struct al_strbuf *out);

/* nodes/<path>/sensor-<name>-output.md. Caller frees. */
char *al_sensor_output_path(const char *dir, const char *name);

#endif
