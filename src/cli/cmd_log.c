#include "ailoop/cli/cli.h"
#include "ailoop/store/run_view.h"
#include "ailoop/base/fsutil.h"
#include "ailoop/store/history.h"
#include "ailoop/store/run.h"
#include "ailoop/base/util.h"

#include <jansson.h>
#include <stdlib.h>
#include <poll.h>
#include <string.h>
#include <time.h>

static bool in_subtree(const char *path, const char *node)
{
	size_t n = strlen(node);

	return !node[0] || (!strncmp(path, node, n) && (path[n] == '\0' || path[n] == '/'));
}

/* How the iterations are printed, one at a time as they are read. */
struct printer {
	const char *node;
	bool json, oneline;
	size_t printed; /* of the JSON array */
	char *root;     /* the root node's path, for a --node that names none */
};

static void print_json(struct printer *p, const struct al_iteration *it)
{
	json_t *sensors = json_array(), *o;
	char *text, when[32] = "";
	time_t t = (time_t)it->time;
	struct tm tm;

	for (size_t k = 0; k < it->nsensors; k++)
		json_array_append_new(sensors, json_pack("{s:s, s:s, s:s?}", "name",
							 it->sensors[k].name, "status",
							 it->sensors[k].status, "detail",
							 it->sensors[k].detail));
	/* the commit's time in ISO 8601, UTC, as `status` gives a run's */
	if (gmtime_r(&t, &tm))
		strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	o = json_pack("{s:s, s:s, s:s, s:i, s:s, s:b, s:s, s:s?, s:o, s:s}", "commit", it->oid,
		      "label", it->label, "node_path", it->node_path, "level", it->level,
		      "status", it->status, "target_met", it->target_met, "summary", it->summary,
		      "action", it->action, "sensors", sensors, "time", when);
	if (it->cost)
		json_object_set_new(o, "cost", json_string(it->cost));
	if (it->merge) /* a parallel node's merge of a child, not an iteration */
		json_object_update_new(o, json_pack("{s:s, s:s?}", "merge", it->merge,
						    "merge_branch", it->merge_branch));
	text = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	/* an element of the array json_dumps() would print: one level further in */
	fputs(p->printed ? ",\n  " : "[\n  ", stdout);
	for (const char *c = text; *c; c++) {
		putchar(*c);
		if (*c == '\n')
			fputs("  ", stdout);
	}
	free(text);
	json_decref(o);
}

static void print_one(struct printer *p, const struct al_iteration *it)
{
	int indent = it->level * 2;

	if (!p->root && it->node_path && !strchr(it->node_path, '/'))
		p->root = al_strdup(it->node_path);
	if (!in_subtree(it->node_path, p->node))
		return;
	if (p->json) {
		print_json(p, it);
	} else if (p->oneline) {
		printf("%.9s %*s%-*s %s — %s\n", it->oid, indent, "", 10 - indent > 0 ? 10 - indent : 1,
		       it->label, it->node_path, it->summary);
	} else if (it->merge) { /* a parallel node's merge of a child, not an iteration */
		printf("%*s%s  %s  [merge] child %s from branch %s\n", indent, "", it->label,
		       it->node_path, it->merge, it->merge_branch ? it->merge_branch : "-");
		printf("%*s  %s\n", indent, "", it->summary);
		printf("%*s  commit %.12s\n\n", indent, "", it->oid);
	} else {
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
	p->printed++;
}

/* The end of the output; 66 if --node named no node the log holds. */
static int print_end(const struct printer *p)
{
	if (p->json)
		fputs(p->printed ? "\n]\n" : "[]\n", stdout);
	if (!p->node[0] || p->printed || !p->root)
		return 0;
	return al_cli_fail(AL_EXIT_NOINPUT, "no commit of node '%s' in the run: a node's path is the "
			   "ids from the root down, joined by '/' (the root here is '%s'; "
			   "'ailoop log --oneline' shows every path)", p->node, p->root);
}

/*
 * The first commit of the run that ends at `rev` (or of run `wanted`, on
 * that branch), as its run-state.md there records it (start-commit):
 * found without a walk of the history. False if it is not recorded (older
 * versions; a run killed before its second commit) or not the run's first
 * commit (history rewritten).
 */
static bool find_start(struct al_git *git, const char *rev, const char *wanted,
		       struct al_iteration *start)
{
	struct al_iteration tip = { 0 };
	struct al_strbuf text = AL_STRBUF_INIT;
	struct al_run_state st = { 0 };
	char *msg = NULL, *path = NULL;
	const char *id = wanted;
	int64_t time = 0;
	bool found = false;

	if (al_git_is_shallow(git))
		goto done;
	if (!id && (al_git_message(git, rev, &msg) < 0 || !al_iteration_parse(&tip, msg)))
		goto done;
	if (!id)
		id = tip.run_id;
	if (id) {
		path = al_xprintf("%s/%s/run-state.md", AL_RUNS_DIR, id);
		if (al_git_read(git, rev, path, &text) == 0 &&
		    al_run_state_parse(&st, path, text.buf, text.len) == 0 && st.start_commit &&
		    strlen(st.start_commit) == AL_OID_HEX - 1) {
			free(msg);
			msg = NULL;
			if (al_git_message_time(git, st.start_commit, &msg, &time) == 0 &&
			    al_iteration_parse(start, msg)) {
				found = start->run_start && start->run_id &&
					!strcmp(start->run_id, id);
				if (found) {
					memcpy(start->oid, st.start_commit, AL_OID_HEX);
					start->time = time;
				} else {
					al_iteration_release(start);
				}
			}
		}
	}
	al_iteration_release(&tip);
done:
	al_run_state_release(&st);
	al_strbuf_release(&text);
	free(path);
	free(msg);
	return found;
}

struct commit_ref {
	char oid[AL_OID_HEX];
	int64_t time;
};

struct commit_refs {
	struct commit_ref *v;
	size_t n, alloc;
};

static int add_ref(const char *oid, const char *message, int64_t time, void *data)
{
	struct commit_refs *refs = data;

	(void)message;
	AL_GROW(refs->v, refs->n, refs->alloc);
	memcpy(refs->v[refs->n].oid, oid, AL_OID_HEX);
	refs->v[refs->n++].time = time;
	return 0;
}

/*
 * Prints run `run_id`'s commits after `hide` up to `rev`, oldest first,
 * each read as it is printed; another run's, merged in, are not its.
 */
static int print_after(struct al_git *git, const char *rev, const char *hide, struct printer *p,
		       const char *run_id)
{
	struct commit_refs refs = { NULL, 0, 0 };
	int rc = al_git_walk(git, rev, hide, add_ref, &refs);

	for (size_t i = refs.n; rc == 0 && i-- > 0;) {
		struct al_iteration it;
		char *msg = NULL;

		if (al_git_message(git, refs.v[i].oid, &msg) < 0) {
			rc = -1;
		} else if (al_iteration_parse(&it, msg)) {
			if (it.run_id && run_id && !strcmp(it.run_id, run_id)) {
				memcpy(it.oid, refs.v[i].oid, AL_OID_HEX);
				it.time = refs.v[i].time;
				print_one(p, &it);
			}
			al_iteration_release(&it);
		}
		free(msg);
	}
	free(refs.v);
	return rc;
}

/*
 * Prints the run from its first commit `start` on: that commit at once,
 * then the commits after it, oldest first, each read as it is printed.
 */
static int stream(struct al_git *git, const char *rev, struct printer *p,
		  const struct al_iteration *start)
{
	print_one(p, start);
	fflush(stdout);
	return print_after(git, rev, start->oid, p, start->run_id);
}

static int first_oid(const char *oid, const char *message, int64_t time, void *data)
{
	(void)message;
	(void)time;
	memcpy(data, oid, AL_OID_HEX);
	return 1;
}

/* The commit `rev` names now, into `oid`. */
static int tip_of(struct al_git *git, const char *rev, char oid[AL_OID_HEX])
{
	oid[0] = '\0';
	return al_git_walk(git, rev, NULL, first_oid, oid) < 0 || !oid[0] ? -1 : 0;
}

/*
 * log --follow: after what is printed, up to commit `tip`, the run's
 * commits on `rev` as they come, a look every `interval_ms`, until no
 * ailoop process holds the run's lock (its last commits printed then).
 * A run not in this work tree (read from another branch) has none.
 */
static int follow(struct al_git *git, const char *rev, const char *tip, struct printer *p,
		  const char *run_id, int interval_ms)
{
	char *dir = al_xprintf("%s/%s", AL_RUNS_DIR, run_id), last[AL_OID_HEX], now[AL_OID_HEX];
	int rc = 0;

	memcpy(last, tip, AL_OID_HEX);
	for (;;) {
		/* asked first: once it is gone, every commit of the run is there */
		char *holder = al_run_lock_holder(dir);

		if (tip_of(git, rev, now) == 0 && strcmp(now, last)) {
			if ((rc = print_after(git, now, last, p, run_id)) < 0) {
				free(holder);
				break;
			}
			memcpy(last, now, AL_OID_HEX);
			fflush(stdout);
		}
		if (!holder)
			break;
		free(holder);
		poll(NULL, 0, interval_ms);
	}
	free(dir);
	return rc;
}

int cmd_log(int argc, char **argv)
{
	static const struct option longs[] = {
		{ "branch", required_argument, NULL, 'b' },
		{ "node", required_argument, NULL, 'N' },
		{ "json", no_argument, NULL, 'j' },
		{ "oneline", no_argument, NULL, 'o' },
		{ "follow", no_argument, NULL, 'f' },
		{ "interval", required_argument, NULL, 'i' },
		{ "help", no_argument, NULL, 0 },
		{ NULL, 0, NULL, 0 },
	};
	const char *branch = NULL, *node = "", *wanted;
	bool json = false, oneline = false, following = false;
	char tip[AL_OID_HEX];
	const char *run_id = NULL;
	int interval_ms = AL_CLI_INTERVAL_MS;
	struct al_iteration *its = NULL;
	struct al_git *git = NULL;
	struct al_run *run = NULL;
	char *rev = NULL, *ref = NULL, *found = NULL, *elsewhere = NULL;
	struct al_iteration start = { 0 };
	struct printer p = { "", false, false, 0, NULL };
	size_t n = 0;
	int c, rc, code = 0;

	while ((c = al_cli_getopt(argc, argv, "", longs, &code)) != -1) {
		switch (c) {
		case '?': return code;
		case 'b': branch = optarg; break;
		case 'N': node = optarg; break;
		case 'j': json = true; break;
		case 'o': oneline = true; break;
		case 'f': following = true; break;
		case 'i':
			if ((code = al_cli_interval(optarg, &interval_ms)))
				return code;
			break;
		}
	}
	p.node = node;
	p.json = json;
	p.oneline = oneline;
	if (branch && optind < argc) {
		fprintf(stderr, "ailoop: error: a RUN-ID ('%s') and --branch cannot both be given: "
			"a run is found on its own branch\n", argv[optind]);
		al_cli_usage(stderr, al_command_find("log"));
		return AL_EXIT_USAGE;
	}
	if ((code = al_cli_operands(argc, argv, 0, 1)) ||
	    (code = al_cli_enter_repo()))
		return code;
	if ((rc = al_git_open(&git)) < 0) {
		code = al_cli_fail(AL_EXIT_NOINPUT, "%s", al_errmsg());
		goto done;
	}
	al_git_show_only(); /* what a log reads is shown, never built on */
	if (optind < argc) {
		/* a run whose branch is not checked out is found on its branch */
		char *state = al_xprintf("%s/%s/run-state.md", AL_RUNS_DIR, argv[optind]);
		bool here = al_file_exists(state);

		free(state);
		if (!here)
			found = al_run_on_branches(git, argv[optind], false, &elsewhere);
		if (found) {
			branch = elsewhere;
		} else if ((rc = al_run_open(&run, argv[optind])) < 0) {
			code = al_cli_fail(al_cli_exit_code(rc), "%s", al_errmsg());
			goto done;
		} else {
			branch = run->st.branch;
		}
	}
	wanted = optind < argc ? argv[optind] : NULL; /* runs may share a branch (--no-branch) */
	if (!wanted && !branch && (wanted = found = al_run_pick(git, &elsewhere)) && elsewhere)
		branch = elsewhere; /* the run status and report show, by the same rule */
	rev = branch ? al_xprintf("refs/heads/%s", branch) : al_strdup("HEAD");
	/* what --follow prints first ends at the commit the rest starts from */
	if (following && tip_of(git, rev, tip) == 0) {
		ref = rev;
		rev = al_strdup(tip);
	}
	if (find_start(git, rev, wanted, &start)) {
		if ((rc = stream(git, rev, &p, &start)) == 0 && ref)
			rc = follow(git, ref, tip, &p, start.run_id, interval_ms);
		if (rc < 0)
			code = al_cli_fail(AL_EXIT_SOFTWARE, "%s", al_errmsg());
		else
			code = print_end(&p);
		goto done;
	}
	if ((rc = al_history_load(git, rev, wanted, &its, &n)) < 0) {
		code = al_cli_fail(rc == AL_ENOTFOUND ? AL_EXIT_NOINPUT : AL_EXIT_SOFTWARE, "%s",
				   al_errmsg());
		goto done;
	}
	if (al_git_is_shallow(git) && (!n || its[0].level != 0 || strcmp(its[0].label, "0")))
		fprintf(stderr, "ailoop: note: this clone is shallow: the run's commits before the "
			"oldest one here are missing ('git fetch --unshallow' fetches them)\n");
	if (!n && !json) {
		code = al_cli_fail(AL_EXIT_NOINPUT, "no ailoop commits on %s", branch ? branch : "HEAD");
		goto done;
	}
	for (size_t i = 0; i < n; i++)
		print_one(&p, &its[i]);
	fflush(stdout);
	run_id = wanted ? wanted : n ? its[n - 1].run_id : NULL;
	if (ref && run_id &&
	    (rc = follow(git, ref, tip, &p, run_id, interval_ms)) < 0)
		code = al_cli_fail(AL_EXIT_SOFTWARE, "%s", al_errmsg());
	else
		code = print_end(&p);
done:
	free(p.root);
	al_iteration_release(&start);
	al_history_free(its, n);
	al_run_free(run);
	al_git_free(git);
	free(rev);
	free(ref);
	free(found);
	free(elsewhere);
	return code;
}
