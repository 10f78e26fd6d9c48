#include "ailoop/cli/cli.h"
#include "ailoop/exec/exec.h"
#include "ailoop/model/flow.h"
#include "ailoop/base/strbuf.h"
#include "ailoop/base/util.h"

#include <stdlib.h>
#include <string.h>

/*
 * "ailoop: 3 errors in .ai-loop/agents/a.md (2), .ai-loop/flow.yaml (1)":
 * the files the errors are in, which are often the agent files and not
 * the flow. The diagnostics are sorted: a file's are together.
 */
static void print_summary(const struct al_diags *d, const char *flow_file)
{
	struct al_strbuf sb = AL_STRBUF_INIT;
	size_t files = 0;

	for (size_t i = 0, n; i < d->n; i += n) {
		const char *f = d->v[i].pos.file ? d->v[i].pos.file : flow_file;

		for (n = 1; i + n < d->n; n++) {
			const char *g = d->v[i + n].pos.file ? d->v[i + n].pos.file : flow_file;

			if (strcmp(f, g))
				break;
		}
		al_strbuf_addf(&sb, "%s%s (%zu)", files++ ? ", " : "", f, n);
	}
	if (files == 1)
		fprintf(stderr, "ailoop: %zu error%s in %s\n", d->n, d->n == 1 ? "" : "s",
			d->v[0].pos.file ? d->v[0].pos.file : flow_file);
	else
		fprintf(stderr, "ailoop: %zu errors in %s\n", d->n, files ? sb.buf : flow_file);
	al_strbuf_release(&sb);
}

/*
 * Loads the flow named by --flow (or the default) for a command. Prints the
 * diagnostics or the error and returns the exit status on failure, 0 with
 * *out set on success.
 */
int al_cli_load_flow(const char *flow_arg, struct al_diags *diags, struct al_flow **out)
{
	char *file;
	int err;

	if ((err = al_cli_enter_root(flow_arg, &file)) < 0)
		return al_cli_fail(al_cli_exit_code(err), "%s", al_errmsg());
	err = al_flow_load(out, file, diags);
	if (err == AL_ENOTFOUND) {
		if (flow_arg)
			al_cli_fail(AL_EXIT_NOINPUT, "%s", al_errmsg());
		else
			al_cli_fail(AL_EXIT_NOINPUT, "%s: run 'ailoop setup' first", al_errmsg());
	} else if (err < 0) {
		al_diags_sort(diags);
		al_diags_print(diags, stderr, al_cli_color(stderr));
		print_summary(diags, file);
	}
	free(file);
	return err < 0 ? al_cli_exit_code(err) : 0;
}

int cmd_validate(int argc, char **argv)
{
	static const struct option longs[] = {
		{ "flow", required_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 0 },
		{ NULL, 0, NULL, 0 },
	};
	struct al_diags diags = AL_DIAGS_INIT, warnings = AL_DIAGS_INIT;
	struct al_flow *flow = NULL;
	const char *flow_arg = NULL;
	int c, code = 0;

	while ((c = al_cli_getopt(argc, argv, "f:", longs, &code)) != -1) {
		if (c == '?')
			return code;
		if (c == 'f')
			flow_arg = optarg;
	}
	if ((code = al_cli_operands(argc, argv, 0, 0)))
		return code;
	code = al_cli_load_flow(flow_arg, &diags, &flow);
	if (!code) {
		al_exec_warnings(flow, &warnings);
		al_diags_sort(&warnings);
		al_diags_print_warnings(&warnings, stderr, al_cli_color(stderr));
	}
	if (!code)
		printf("%s: ok: %zu node%s, depth %d, %zu agent file%s\n", flow->file,
		       flow->node_count, flow->node_count == 1 ? "" : "s", flow->max_depth + 1,
		       flow->agents.n, flow->agents.n == 1 ? "" : "s");
	al_flow_free(flow);
	al_diags_release(&warnings);
	al_diags_release(&diags);
	return code;
}
