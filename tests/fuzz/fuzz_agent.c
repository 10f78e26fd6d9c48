/*
 * libFuzzer target for the agent file parser: the input is an agent file
 * (Markdown with YAML front matter), loaded as a flow loads the agents it
 * names, from a directory of its own that is the current one, so the path
 * is inside it as agent paths must be.
 */
#include "ailoop/model/agent.h"

#include "fuzz.h"

#include <limits.h>
#include <unistd.h>

static char tmp_dir[PATH_MAX];

static void clean_up(void)
{
	if (chdir(tmp_dir) == 0)
		unlink("agent.md");
	if (chdir("/") == 0)
		rmdir(tmp_dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *tmp = getenv("TMPDIR");

	snprintf(tmp_dir, sizeof(tmp_dir), "%s/ailoop-fuzz-agent.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(tmp_dir)) {
		perror(tmp_dir);
		abort();
	}
	fuzz_enter(tmp_dir, argc, argv);
	atexit(clean_up);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct al_diags diags = AL_DIAGS_INIT;
	struct al_agents agents = { 0 };
	struct al_pos ref = { "flow.yaml", 1, 1 };

	ref.file = al_diags_source(&diags, "flow.yaml", NULL, 0);
	fuzz_write("agent.md", data, size);
	al_agents_load(&agents, "agent.md", ref, &diags);
	fuzz_print(&diags);
	al_agents_release(&agents);
	al_diags_release(&diags);
	return 0;
}
