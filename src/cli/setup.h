#ifndef AILOOP_CLI_SETUP_H
#define AILOOP_CLI_SETUP_H

/*
 * `ailoop setup` in three parts: the model and the template it fills
 * (setup_template.c), the dialogue and the command (cmd_setup.c), and the
 * files it validates and writes (setup_files.c).
 */

#include "ailoop/base/strbuf.h"
#include "ailoop/model/templates.h"

#include <stdbool.h>
#include <stddef.h>

#define MAX_LEVELS 3
#define TESTS_SLOT ".ai-loop/agents/loop-sensor-tests.md"
#define MANIFEST ".ai-loop/.setup-manifest"
#define SENSOR_TARGET "every test passes"


struct sensor {
	char *name;
	char *command; /* NULL: an agent sensor of the template (`agent`) */
	char *target;
	char *agent;   /* the agent file's path in the flow */
};

struct sensors {
	struct sensor *v;
	size_t n, alloc;
};

struct level {
	char *id;
	int max_iterations;
	bool has_sensors;    /* the template marks its sensors */
	bool slot;           /* the template's sensors hold the test slot */
	struct sensors fixed; /* the template's own (agent) sensors */
	struct sensors sensors; /* what is written */
};

struct setup {
	const char *template_name;
	const struct al_template *flow;
	char *runner;
	int nlevels;
	bool test_command; /* the template checks the tests itself (a condition) */
	struct level levels[MAX_LEVELS];
	struct sensors detected;
};

struct out_file {
	char *path;
	struct al_strbuf text;
};

struct out_files {
	struct out_file *v;
	size_t n, alloc;
};

/* setup_template.c */
void sensors_add(struct sensors *s, const char *name, const char *command, const char *target,
		 const char *agent);
void sensors_release(struct sensors *s);
void sensors_copy(struct sensors *to, const struct sensors *from);
bool setup_valid_id(const char *s);
bool setup_one_line(const char *s);
bool setup_blank(const char *s);
void setup_release(struct setup *s);
void setup_detect(struct sensors *out);
void setup_read_template(struct setup *s);
void setup_render(const struct setup *s, struct out_files *o);
char *setup_joined_commands(const struct level *l);
void setup_out_release(struct out_files *o);

/* setup_files.c */
int setup_validate(const struct out_files *o);
int setup_write_files(const struct out_files *o, bool force, size_t *kept);

#endif
