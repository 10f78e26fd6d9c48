#include "ailoop/cli.h"
#include "ailoop/fsutil.h"
#include "ailoop/history.h"
#include "ailoop/run.h"
#include "ailoop/util.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

static bool in_subtree(const char *path, const char *node)
{
	size_t n = strlen(node);

	return !node[0] || (!strncmp(path, node, n) && (path[n] == '\0' || path[n] == '/'));
}

static void print_json(const struct al_iteration *its, size_t n, const char *node)
{
	json_t *arr = json_array();
	char *text;

	for (size_t i = 0; i < n; i++) {
		const struct al_iteration *it = &its[i];
		json_t *sensors = json_array();

		if (!in_subtree(it->node_path, node))
			continue;
		for (size_t k = 0; k < it->nsensors; k++)
			json_array_append_new(sensors, json_pack("{s:s, s:s, s:s?}", "name",
								 it->sensors[k].name, "status",
								 it->sensors[k].status, "detail",
								 it->sensors[k].detail));
		json_array_append_new(arr, json_pack("{s:s, s:s, s:s, s:i, s:s, s:b, s:s, s:s?, s:o, s:I}",
						     "commit", it->oid, "label", it->label,
						     "node_path", it->node_path, "level", it->level,
						     "status", it->status, "target_met", it->target_met,
						     "summary", it->summary, "action", it->action,
						     "sensors", sensors, "time", (json_int_t)it->time));
	}
	text = json_dumps(arr, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	printf("%s\n", text);
	free(text);
	json_decref(arr);
}

static void print_text(const struct al_iteration *its, size_t n, const char *node, bool oneline)
{
	for (size_t i = 0; i < n; i++) {
		const struct al_iteration *it = &its[i];
		int indent = it->level * 2;

		if (!in_subtree(it->node_path, node))
			continue;
		if (oneline) {
			printf("%.9s %*s%-*s %s — %s\n", it->oid, indent, "", 10 - indent > 0 ? 10 - indent : 1,
			       it->label, it->node_path, it->summary);
			continue;
		}
		printf("%*s%s  %s  [%s]%s\n", indent, "", it->label, it->node_path, it->status,
		       it->target_met ? " target met" : "");
		printf("%*s  %s\n", indent, "", it->summary);
		for (size_t k = 0; k < it->nsensors; k++)
			printf("%*s  sensor %s: %s%s%s%s\n", indent, "", it->sensors[k].name,
			       it->sensors[k].status, it->sensors[k].detail ? " (" : "",
			       it->sensors[k].detail ? it->sensors[k].detail : "",
			       it->sensors[k].detail ? ")" : "");
		printf("%*s  commit %.12s\n\n", indent, "", it->oid);
	}
}

int cmd_log(int argc, char **argv)
{
	static const struct option longs[] = {
		{ "branch", required_argument, NULL, 'b' },
		{ "node", required_argument, NULL, 'N' },
		{ "json", no_argument, NULL, 'j' },
		{ "oneline", no_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 0 },
		{ NULL, 0, NULL, 0 },
	};
	const char *branch = NULL, *node = "";
	bool json = false, oneline = false;
	struct al_iteration *its = NULL;
	struct al_git *git = NULL;
	struct al_run *run = NULL;
	char *rev = NULL, *found = NULL, *elsewhere = NULL;
	size_t n = 0;
	int c, rc, code = 0;

	while ((c = al_cli_getopt(argc, argv, "", longs, "log", &code)) != -1) {
		switch (c) {
		case '?': return code;
		case 'b': branch = optarg; break;
		case 'N': node = optarg; break;
		case 'j': json = true; break;
		case 'o': oneline = true; break;
		}
	}
	if ((code = al_cli_operands(argc, 0, branch ? 0 : 1, "log")) ||
	    (code = al_cli_enter_repo()))
		return code;
	if ((rc = al_git_open(&git)) < 0) {
		code = al_cli_fail(AL_EXIT_NOINPUT, "%s", al_errmsg());
		goto done;
	}
	if (optind < argc) {
		/* a run whose branch is not checked out is found on its branch */
		char *state = al_xprintf("%s/%s/run-state.md", AL_RUNS_DIR, argv[optind]);
		bool here = al_file_exists(state);

		free(state);
		if (!here)
			found = al_cli_run_on_branches(git, argv[optind], false, &elsewhere);
		if (found) {
			branch = elsewhere;
		} else if ((rc = al_run_open(&run, argv[optind])) < 0) {
			code = al_cli_fail(al_cli_exit_code(rc), "%s", al_errmsg());
			goto done;
		} else {
			branch = run->st.branch;
		}
	}
	rev = branch ? al_xprintf("refs/heads/%s", branch) : al_strdup("HEAD");
	if ((rc = al_history_load(git, rev, &its, &n)) < 0) {
		code = al_cli_fail(rc == AL_ENOTFOUND ? AL_EXIT_NOINPUT : AL_EXIT_SOFTWARE, "%s",
				   al_errmsg());
		goto done;
	}
	if (al_git_is_shallow(git) && (!n || its[0].level != 0 || strcmp(its[0].label, "0")))
		fprintf(stderr, "ailoop: note: this clone is shallow: the run's commits before the "
			"oldest one here are missing ('git fetch --unshallow' fetches them)\n");
	if (!n && !json) {
		code = al_cli_fail(AL_EXIT_NOINPUT, "no ailoop commits on %s", branch ? branch : "HEAD");
		if (!branch && optind >= argc &&
		    (found = al_cli_run_on_branches(git, NULL, false, &elsewhere)))
			fprintf(stderr, "ailoop: run %s is on branch %s: 'ailoop log %s' shows it\n",
				found, elsewhere, found);
		goto done;
	}
	if (json)
		print_json(its, n, node);
	else
		print_text(its, n, node, oneline);
done:
	al_history_free(its, n);
	al_run_free(run);
	al_git_free(git);
	free(rev);
	free(found);
	free(elsewhere);
	return code;
}
