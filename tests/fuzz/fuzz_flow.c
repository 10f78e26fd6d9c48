/*
 * libFuzzer target for the flow loader: the input is a flow file, loaded
 * and validated as `ailoop validate` does; a valid one is also drawn as
 * both graphs, and each of its runners' templates is expanded. It runs in tests/fixtures/flows (FUZZ_FLOWS_DIR), the root
 * of the corpus's flows, so that the agent files they name are loaded and
 * checked too; the flow itself is a file in a directory of its own.
 */
#include "ailoop/model/flow.h"
#include "ailoop/model/graph.h"
#include "ailoop/base/strbuf.h"

#include "fuzz.h"

#include <limits.h>
#include <unistd.h>

static char flow_path[PATH_MAX];
static char tmp_dir[PATH_MAX];

static void clean_up(void)
{
	unlink(flow_path);
	rmdir(tmp_dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *tmp = getenv("TMPDIR");

	snprintf(tmp_dir, sizeof(tmp_dir), "%s/ailoop-fuzz-flow.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(tmp_dir)) {
		perror(tmp_dir);
		abort();
	}
	fuzz_enter(FUZZ_FLOWS_DIR, argc, argv);
	snprintf(flow_path, sizeof(flow_path), "%s/flow.yaml", tmp_dir);
	atexit(clean_up);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct al_diags diags = AL_DIAGS_INIT;
	struct al_flow *flow = NULL;

	fuzz_write(flow_path, data, size);
	if (al_flow_load(&flow, flow_path, &diags) == 0) {
		struct al_strbuf sb = AL_STRBUF_INIT;

		al_graph_write(flow, AL_GRAPH_MERMAID, &sb);
		al_graph_write(flow, AL_GRAPH_DOT, &sb);
		al_strbuf_release(&sb);
		for (size_t i = 0; i < flow->runners.n; i++) {
			struct al_runner_vars vars = { .model = "model", .tools = "Read,Write",
						       .commands = true, .prompt = "the prompt",
						       .prompt_file = "prompt.md" };

			al_argv_free(al_runner_argv(&flow->runners.v[i], &vars));
		}
	}
	fuzz_print(&diags);
	al_flow_free(flow);
	al_diags_release(&diags);
	return 0;
}
