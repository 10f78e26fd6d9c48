#include "ailoop/cli/cli.h"
#include "ailoop/model/graph.h"

#include <string.h>

int cmd_graph(int argc, char **argv)
{
	static const struct option longs[] = {
		{ "flow", required_argument, NULL, 'f' },
		{ "format", required_argument, NULL, 'F' },
		{ "help", no_argument, NULL, 0 },
		{ NULL, 0, NULL, 0 },
	};
	struct al_diags diags = AL_DIAGS_INIT;
	struct al_strbuf out = AL_STRBUF_INIT;
	enum al_graph_format format = AL_GRAPH_MERMAID;
	struct al_flow *flow = NULL;
	const char *flow_arg = NULL;
	int c, code = 0;

	while ((c = al_cli_getopt(argc, argv, "f:", longs, &code)) != -1) {
		if (c == '?')
			return code;
		if (c == 'f') {
			flow_arg = optarg;
		} else if (c == 'F') {
			if (!strcmp(optarg, "mermaid"))
				format = AL_GRAPH_MERMAID;
			else if (!strcmp(optarg, "dot"))
				format = AL_GRAPH_DOT;
			else if (!strcmp(optarg, "tree"))
				format = AL_GRAPH_TREE;
			else
				return al_cli_fail(AL_EXIT_USAGE, "unknown format '%s' (use mermaid, "
						   "dot or tree)", optarg);
		}
	}
	if ((code = al_cli_operands(argc, argv, 0, 0)))
		return code;
	code = al_cli_load_flow(flow_arg, &diags, &flow);
	if (!code) {
		al_graph_write(flow, format, &out);
		fwrite(out.buf, 1, out.len, stdout);
	}
	al_strbuf_release(&out);
	al_flow_free(flow);
	al_diags_release(&diags);
	return code;
}
