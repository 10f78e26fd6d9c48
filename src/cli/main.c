#include "ailoop/cli/cli.h"
#include "ailoop/base/fsutil.h"
#include "ailoop/git/git.h"
#include "ailoop/base/util.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <pcre2.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <yaml.h>

const struct al_command al_commands[] = {
	{ "setup", cmd_setup,
	  "[--template NAME] [--sensor NAME=COMMAND]... [--levels N] [--runner NAME]\n"
	  "                    [--max-iterations N] [--yes] [--force]",
	  "write .ai-loop/: a flow and its agents, for this project",
	  "Detects the project's test commands (Makefile: make test or make check;\n"
	  "CMakeLists.txt: ctest --test-dir build; package.json: npm test; Cargo.toml:\n"
	  "cargo test; go.mod: go test ./...; pyproject.toml, setup.py, pytest.ini: pytest;\n"
	  "pom.xml: mvn test; build.gradle: gradle test; Gemfile: bundle exec rspec;\n"
	  "mix.exs: mix test), in the repository root and in each directory one level down\n"
	  "(a monorepo: one sensor each, run as 'cd DIR && ...'). Then writes\n"
	  ".ai-loop/flow.yaml from a template, .ai-loop/agents/*.md (the controllers,\n"
	  "actuator, LLM sensor and action agent, and one command sensor per test command:\n"
	  "ailoop runs it itself, no LLM) and .ai-loop/runs/.gitkeep, and checks that the\n"
	  "flow validates.\n\n"
	  "On a terminal it asks for the number of levels, each level's id, sensors\n"
	  "(name, command, target) and max iterations, and the runner, suggesting what it\n"
	  "detected (Enter accepts each default); it warns about sensors that overlap,\n"
	  "shows the flow as a tree and asks before writing. Otherwise, or with --yes, it\n"
	  "takes the defaults and the options.\n\n"
	  "options:\n"
	  "  --template NAME      single (1 level, the default), nested (2), three-level (3),\n"
	  "                       tdd (fast inner tests, slow outer review), reactree-tdd\n"
	  "                       (a loop-until with a conditional, no sensors), demo (one\n"
	  "                       loop judged by ailoop itself: builtin:all-pass)\n"
	  "  --sensor NAME=COMMAND  a test command, instead of the detected ones\n"
	  "                       (repeatable)\n"
	  "  --levels N           1, 2 or 3: picks single, nested or three-level\n"
	  "  --runner NAME        claude (default), codex, gemini, aider or opencode\n"
	  "  --max-iterations N   every loop's limit (1-1000)\n"
	  "  -y, --yes            ask nothing\n"
	  "  --force              overwrite files you changed\n\n"
	  "Each file is reported as Created, Updated or Unchanged. Setup records what it\n"
	  "wrote in .ai-loop/.setup-manifest (commit it) and never overwrites a file\n"
	  "changed since then (or not written by setup) unless --force: it says which it\n"
	  "kept. Setup works outside a git repository too (it only writes files), but\n"
	  "'ailoop run' needs one.\n\n"
	  "exit status: 0 written; 1 cancelled at the question; 64 usage error (unknown\n"
	  "template or runner, bad --sensor, --levels not 1-3 or not the template's, no\n"
	  "test command found or given); 70 internal error (also: a flow that does not\n"
	  "validate).\n" },
	{ "validate", cmd_validate, "[--flow PATH]",
	  "check a flow and its agent files, reporting every error",
	  "Reads .ai-loop/flow.yaml (or PATH) and every agent file it names. Each problem\n"
	  "is printed as FILE:LINE:COL: error: MESSAGE with the source line, then how many\n"
	  "errors there are in which files; a warning (something that works, but maybe\n"
	  "not as meant) as FILE:LINE:COL: warning: MESSAGE. A valid flow prints a\n"
	  "one-line summary.\n\n"
	  "options:\n"
	  "  -f, --flow PATH   the flow (default .ai-loop/flow.yaml)\n\n"
	  "exit status: 0 valid (warnings too); 64 usage error; 65 an error in the flow or\n"
	  "an agent file; 66 the flow does not exist.\n" },
	{ "graph", cmd_graph, "[--flow PATH] [--format mermaid|dot|tree]",
	  "print the flow tree as a Mermaid flowchart, a Graphviz graph or plain text",
	  "Every node with its id, type and limits, each loop's sensors, controller and\n"
	  "actuator, and the edges to children.\n\n"
	  "options:\n"
	  "  -f, --flow PATH   the flow (default .ai-loop/flow.yaml)\n"
	  "  --format FORMAT   mermaid (the default), dot (render it with\n"
	  "                    `ailoop graph --format dot | dot -Tsvg > flow.svg`), or tree:\n"
	  "                    the plain-text tree setup shows\n\n"
	  "exit status: 0 printed; 64 usage error; 65 invalid flow; 66 no flow.\n" },
	{ "run", cmd_run,
	  "[--flow PATH] [--new] [--no-branch] [--allow-dirty] [--dry-run] [--json] [--quiet]\n"
	  "                  [--from-here] (TASK | --task-file PATH | -)",
	  "run the flow on a task until its target is met",
	  "Creates the branch ai-loop/<slug> (unless --no-branch), then runs the flow's root\n"
	  "node with TASK as its setpoint: sensors measure, the controller decides, the\n"
	  "actuator acts, and every iteration is committed. TASK is one operand: quote it\n"
	  "(ailoop run \"fix the parser\"). When an interrupted run can be resumed, asks on\n"
	  "a terminal and otherwise refuses: use 'ailoop resume' or --new. One live ailoop\n"
	  "per work tree. Started on another run's branch, the new run says so and starts\n"
	  "from that run's base branch (checked out first), unless --from-here.\n\n"
	  "options:\n"
	  "  -f, --flow PATH       the flow (default .ai-loop/flow.yaml)\n"
	  "  --task-file PATH      the task from a file; - as TASK: from standard input\n"
	  "  --new                 start a new run though one can be resumed\n"
	  "  --no-branch           commit on the current branch\n"
	  "  --allow-dirty         start with uncommitted changes (the first commit has them)\n"
	  "  -n, --dry-run         print the plan, limits and command lines; run nothing\n"
	  "  --json                print the outcome (or the plan) as JSON on stdout\n"
	  "  -q, --quiet           print no progress\n"
	  "  --from-here           start from the branch checked out, though it is another\n"
	  "                        run's\n\n"
	  "exit status: 0 target met; 1 finished without success, an agent's error, or\n"
	  "paused by what an agent did; 2 a node's timeout; 3 interrupted (resumable); 4\n"
	  "blocked by a breaker or a budget (resumable); 64 usage error; 65 invalid flow;\n"
	  "66 no flow; 69 a runner is not installed; 70 internal error or a full disk;\n"
	  "75 another live ailoop holds the work tree (nothing written).\n" },
	{ "resume", cmd_resume, "[RUN-ID] [--force] [--json] [--quiet]",
	  "continue an interrupted run exactly where it stopped",
	  "Takes the newest run that is running, paused or blocked and that no live ailoop\n"
	  "holds (or RUN-ID), checks out its branch and continues at the step it was in.\n"
	  "A run that an agent's error ended (fail-fast) is retried when named: the step\n"
	  "that failed runs again as its node's next iteration. A run a circuit breaker\n"
	  "blocked has that breaker reset, and its loop acts again.\n"
	  "A flow.yaml changed since the run started is refused unless --force.\n\n"
	  "options:\n"
	  "  --force       resume though flow.yaml changed since the run started\n"
	  "  --json        print the outcome as JSON on stdout\n"
	  "  -q, --quiet   print no progress\n\n"
	  "exit status: 0 target met; otherwise as 'ailoop run' (1, 2, 3, 4, 64, 69, 70,\n"
	  "75); 65 damaged run state or a changed flow.yaml; 66 no run to resume.\n" },
	{ "status", cmd_status, "[RUN-ID] [--json] [--watch [--interval S]]",
	  "show a run's state and every node's iteration and status",
	  "Reads run-state.md and each node's orchestrator-output.md of the run (RUN-ID,\n"
	  "or the one picked below); each loop's circuit breaker is shown after its\n"
	  "status. A run whose branch is not checked out is read from that branch's last\n"
	  "commit.\n"
	  "Without RUN-ID, status, log, report and land pick the same run: the newest\n"
	  "run whose state here names the checked-out branch as its own (the run HEAD is\n"
	  "on), else the newest run of the repository, here or on its branch.\n\n"
	  "options:\n"
	  "  --json         print it as JSON (times in ISO 8601, UTC)\n"
	  "  --watch        show it again every S seconds until no ailoop works on the\n"
	  "                 run (on a terminal the screen is redrawn, elsewhere each new\n"
	  "                 state is printed once); Ctrl-C stops watching, not the run\n"
	  "  --interval S   the seconds between two looks (default 1)\n\n"
	  "exit status: 0 shown; 64 usage error; 65 damaged run state; 66 no run.\n"
	  "With --watch, as the run ended: 0 complete, 1 failed, 2 timeout, 3 paused or\n"
	  "killed, 4 blocked.\n" },
	{ "log", cmd_log,
	  "[RUN-ID | --branch NAME] [--node PATH] [--json] [--oneline]\n"
	  "                  [--follow [--interval S]]",
	  "show the run tree rebuilt from the git history alone",
	  "Walks the commits of the run's branch (RUN-ID's or the one picked as\n"
	  "'ailoop help status' says, or NAME) back to the run's first commit and prints\n"
	  "each iteration indented by level: label, node, summary and sensors.\n\n"
	  "options:\n"
	  "  --branch NAME   read the history of branch NAME\n"
	  "  --node PATH     keep one node and its children\n"
	  "  --json          print the iterations as JSON (times in ISO 8601, UTC)\n"
	  "  --oneline       one line an iteration\n"
	  "  --follow        then print each new iteration as its commit lands, until no\n"
	  "                  ailoop works on the run\n"
	  "  --interval S    the seconds between two looks of --follow (default 1)\n\n"
	  "exit status: 0 shown; 64 usage error; 66 no run or branch.\n" },
	{ "report", cmd_report, "[RUN-ID] [-o FILE] [--format html|md]",
	  "write one self-contained page of a run: its tree, iterations and charts",
	  "Builds the page of the run (RUN-ID, or the one picked below) from its commits,\n"
	  "run-state.md, the nodes' states and events.jsonl, and prints where it wrote it\n"
	  "(by default "
	  ".ai-loop/runs/RUN-ID/report.html, or report.md). The HTML page needs nothing\n"
	  "else: styles and SVG charts inline, no script, no link. --format md writes the\n"
	  "same content as Markdown tables, without charts, for a pull request.\n"
	  "Without RUN-ID, status, log, report and land pick the same run, as\n"
	  "'ailoop help status' says.\n\n"
	  "options:\n"
	  "  -o, --output FILE   write it to FILE\n"
	  "  --format FORMAT     html (the default) or md\n\n"
	  "exit status: 0 written; 64 usage error; 65 damaged run state; 66 no run; 70\n"
	  "the page cannot be written.\n" },
	{ "land", cmd_land, "[RUN-ID] [--merge]",
	  "put a finished run's change on its base branch, without its run files",
	  "Commits the run's net change (RUN-ID, or the run picked as 'ailoop help status'\n"
	  "says) on its base branch as one commit: the base branch's tree with the\n"
	  "run's change to everything outside .ai-loop/runs, merged three-way when the\n"
	  "base branch moved on. The message is the task's first line, then the run,\n"
	  "how it ended, its iterations, and its sensors before and after. With the\n"
	  "base branch checked out, the work tree follows (it must be clean). The run's\n"
	  "branch stays; 'ailoop clean' removes it.\n\n"
	  "options:\n"
	  "  --merge   a merge commit of the run's branch instead, keeping its history\n"
	  "            (still without .ai-loop/runs in the base branch's tree)\n\n"
	  "exit status: 0 landed, or the base branch has the change already; 1 the\n"
	  "change conflicts with the base branch's (nothing written); 64 the run is not\n"
	  "finished, committed on its base branch (--no-branch), the work tree is not\n"
	  "clean, or the base branch is checked out in another worktree; 66 no such run\n"
	  "or branch; 75 another ailoop is at work here.\n" },
	{ "agent", cmd_agent,
	  "[--flow PATH] [--node PATH] [--task TEXT] [--input FILE] [--keep] FILE",
	  "run one agent of the flow once, as a run would, to try it",
	  "Runs the agent file FILE (its path from the repository's root, as the flow\n"
	  "names it) once, in the role it has in the first node that uses it (or in node\n"
	  "PATH): the same prompt, environment, command line and output file as in a run,\n"
	  "and the output read as the run reads it (a sensor's status and metrics, a\n"
	  "controller's target-met and action plan, the summary that would be the commit\n"
	  "subject), which it prints. Nothing is committed and no run's state changes:\n"
	  "the call has a directory of its own in $TMPDIR, removed after it. What the\n"
	  "agent changes in the work tree stays there.\n\n"
	  "options:\n"
	  "  -f, --flow PATH   the flow (default .ai-loop/flow.yaml)\n"
	  "  --node PATH       the node whose agent it is (a path of node ids: outer/inner)\n"
	  "  --task TEXT       the task the prompt gives it (default: 'try this agent')\n"
	  "  --input FILE      its input: a controller's or actuator's last output\n"
	  "  --keep            keep the call's directory (prompt, log, output) and say where\n\n"
	  "exit status: 0 the agent ran and its output reads; 1 the agent failed or its\n"
	  "output cannot be read (the message says which); 3 interrupted; 64 usage error\n"
	  "(no node uses FILE); 65 invalid flow or agent file; 69 its runner is not\n"
	  "installed.\n" },
	{ "runs", cmd_runs, "[--json]",
	  "list every run of the repository, whether or not its branch is checked out",
	  "One line a run, oldest first: its id, status, the root node's iterations, the\n"
	  "agent calls it made, when it started, its branch and its task. A run whose\n"
	  "branch exists is read from that branch's last commit; another (--no-branch,\n"
	  "or its branch gone) from the work tree. The agent calls come from the run's\n"
	  "logs, which stay in the work tree (- when they are not here).\n\n"
	  "options:\n"
	  "  --json    an array of objects: run_id, task, status, branch, base_branch,\n"
	  "            started_at, updated_at, iterations, agent_calls, read_from (the\n"
	  "            branch, or null: the work tree)\n\n"
	  "exit status: 0 listed (also none); 64 usage error; 66 not a git repository;\n"
	  "70 the runs cannot be read.\n" },
	{ "clean", cmd_clean, "[--older-than DAYS] [--dry-run] [--force]",
	  "remove finished runs: their branches, worktrees and run directories",
	  "Removes each finished run that has landed (its base branch has its change:\n"
	  "'ailoop land', or a merge): its branch, its parallel children's branches\n"
	  "(those set aside too) and worktrees, and its directory in the work tree. A\n"
	  "run that is running, paused or blocked, or whose change is not on its base\n"
	  "branch, is kept and named, unless --force; so is the run whose branch is\n"
	  "checked out, always.\n\n"
	  "options:\n"
	  "  --older-than DAYS  only runs last updated more than DAYS days ago\n"
	  "  -n, --dry-run      list what would be removed, remove nothing\n"
	  "  --force            remove runs not finished or not landed too\n\n"
	  "exit status: 0 done; 64 usage error; 66 not a git repository; 70 a removal\n"
	  "failed; 75 another ailoop is at work here.\n" },
	{ "memory", cmd_memory, "get KEY | set KEY VALUE [--json] | list [--json]",
	  "read and write the working memory of the run (for agents)",
	  "Agents share facts through the run's working memory (memory.jsonl in the run's\n"
	  "directory, found through AILOOP_RUN_DIR, which ailoop sets for every agent).\n"
	  "  get KEY          print the newest value of KEY; exit 1, printing nothing, if\n"
	  "                   it has none\n"
	  "  set KEY VALUE    store VALUE as a string, or with --json as the JSON value\n"
	  "                   it is (checked); the last write of a key wins\n"
	  "  list             print every key and its value, key<TAB>value, in key order;\n"
	  "                   --json prints one JSON object\n"
	  "A key is 1 to 256 bytes of UTF-8 without control characters. A VALUE that\n"
	  "begins with '-' follows '--' (ailoop memory set n --json -- -1). Values that\n"
	  "are not strings print as JSON. Any number of agents may write at once; each\n"
	  "entry names its writer, AILOOP_AGENT (set for agents) or 'ailoop memory'.\n\n"
	  "exit status: 0 done; 1 get: the key has no value; 64 usage error (also a bad\n"
	  "key or bad JSON, and outside a run: AILOOP_RUN_DIR not set); 66 the run\n"
	  "directory does not exist; 70 the memory file cannot be read or written.\n" },
	{ "episodes", cmd_episodes,
	  "list [--node PATH] [--json] | show ID | search TEXT... [--json] [--limit N] |\n"
	  "                  forget ID... | forget --before DATE | forget --run RUN-ID",
	  "list, show, search and forget the episodes of finished nodes, kept across runs",
	  "Each node that ends (a loop at its verdict, an action at its result) leaves an\n"
	  "episode: its goal, the run's task, its outcome, steps, summaries, commits and\n"
	  "cost. They are kept in git under refs/ailoop/episodes, on no branch: deleting\n"
	  "a run's branch loses none, and git push origin 'refs/ailoop/*' shares them.\n"
	  "  list             one line per episode, oldest first: id, date, outcome,\n"
	  "                   node, run, goal; --node PATH only that node's; --json\n"
	  "  show ID          the whole episode, as JSON\n"
	  "  search TEXT...   the episodes ranked for TEXT as agents are given them (BM25\n"
	  "                   over goal, node and root task; successes first at equal\n"
	  "                   score, then the newest), with their scores: the best N\n"
	  "                   (--limit, default 20); --json\n"
	  "  forget ID...     takes episodes out (a new commit on the ref; git's history\n"
	  "                   of the ref keeps them until it is pruned); --before DATE\n"
	  "                   those that ended before DATE (2026-11-28), --run RUN-ID a\n"
	  "                   run's\n\n"
	  "exit status: 0 done; 64 usage error; 65 the episodes' ref is damaged; 66 no\n"
	  "such episode (show, or an ID of forget: then nothing is forgotten) or not in a\n"
	  "git repository; 70 the ref cannot be written.\n" },
	{ NULL, NULL, NULL, NULL, NULL },
};


static void print_main_help(FILE *out)
{
	fputs("usage: ailoop <command> [options]\n\n"
	      "Runs AI coding agents (or any command) in nested feedback loops described by\n"
	      ".ai-loop/flow.yaml; every iteration is a git commit.\n\ncommands:\n", out);
	for (const struct al_command *c = al_commands; c->name; c++)
		fprintf(out, "  %-10s %s\n", c->name, c->summary);
	fputs("  help       show help for a command\n\n"
	      "options:\n"
	      "  -h, --help     show this help\n"
	      "      --version  print the version and those of the libraries\n\n"
	      "exit status:\n"
	      "   0  target met / flow succeeded\n"
	      "   1  flow finished without success (max iterations, failed fallbacks, ...),\n"
	      "      or an agent moved HEAD off the run's branch (the run is paused),\n"
	      "      or removed the run's untracked files, as git clean -x does (paused),\n"
	      "      or your change conflicts with a parallel child's worktree (paused)\n"
	      "   2  a node's timeout expired\n"
	      "   3  interrupted (SIGINT/SIGTERM); the run is paused and resumable\n"
	      "   4  blocked by the circuit breaker or a spent budget (limits:); resumable\n"
	      "  64  usage error\n"
	      "  65  invalid flow or agent file\n"
	      "  66  a needed file is missing, or a file is in the way of one\n"
	      "  69  an agent runner's program is not installed\n"
	      "  70  internal error, or a full disk (an agent's too); the run is paused\n"
	      "  75  the run is locked by another live ailoop process\n\n"
	      "Run 'ailoop help <command>' for a command's options.\n", out);
}

const struct al_command *al_command_find(const char *name)
{
	for (const struct al_command *c = al_commands; c->name; c++)
		if (!strcmp(c->name, name))
			return c;
	return NULL;
}

/* The libraries' versions as loaded at run time, not as compiled against. */
static void print_version(void)
{
	int major = 0, minor = 0, rev = 0;
	char pcre[64] = "";

	al_git_lib_version(&major, &minor, &rev);
	if (pcre2_config(PCRE2_CONFIG_VERSION, NULL) > (int)sizeof(pcre) ||
	    pcre2_config(PCRE2_CONFIG_VERSION, pcre) < 0)
		snprintf(pcre, sizeof(pcre), "unknown");
	printf("ailoop %s\n"
	       "libgit2 %d.%d.%d\n"
	       "libyaml %s\n"
	       "PCRE2 %s\n"
	       "jansson %s\n",
	       AILOOP_VERSION, major, minor, rev, yaml_get_version_string(), pcre,
	       jansson_version_str());
}

/* An unknown command, with the one meant if a typo away (`ailoop stauts`). */
static int unknown_command(const char *name)
{
	const char *names[AL_ARRAY_SIZE(al_commands)];
	const char *near;
	size_t n = 0;

	for (const struct al_command *c = al_commands; c->name; c++)
		names[n++] = c->name;
	names[n++] = "help";
	near = al_closest(name, names, n);
	if (near)
		fprintf(stderr, "ailoop: error: unknown command '%s' (did you mean '%s'?)\n", name,
			near);
	else
		fprintf(stderr, "ailoop: error: unknown command '%s'\n", name);
	fputs("usage: ailoop <command> [options]   (see 'ailoop --help')\n", stderr);
	return AL_EXIT_USAGE;
}

/*
 * Standard descriptors the caller closed get /dev/null, as git does: else
 * the first files ailoop opens take their numbers, and its messages are
 * written into them (with stderr closed, into the work tree's lock).
 */
static void std_fds_open(void)
{
	int fd;

	while ((fd = open("/dev/null", O_RDWR)) >= 0 && fd <= 2)
		;
	if (fd > 2)
		close(fd);
}

/*
 * What a command printed reached its reader: on a full disk, or a file
 * that cannot be written, the command failed (a reader that closed the
 * pipe, as `head` does, wanted no more).
 */
static int output_written(int code)
{
	int e = fflush(stdout) ? errno : ferror(stdout) ? EIO : 0;

	if (!e || e == EPIPE || code)
		return code;
	return al_cli_fail(AL_EXIT_SOFTWARE, "cannot write the output: %s", strerror(e));
}

int main(int argc, char **argv)
{
	const struct al_command *cmd;
	int code;

	std_fds_open();
	if (argc < 2) {
		print_main_help(stderr);
		return AL_EXIT_USAGE;
	}
	if ((!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
	     !strcmp(argv[1], "--version")) && argc > 2) {
		fprintf(stderr, "ailoop: error: unexpected operand '%s' after %s\n", argv[2], argv[1]);
		fputs("usage: ailoop <command> [options]   (see 'ailoop --help')\n", stderr);
		return AL_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		print_main_help(stdout);
		return AL_EXIT_OK;
	}
	if (!strcmp(argv[1], "--version")) {
		print_version();
		return AL_EXIT_OK;
	}
	if (!strcmp(argv[1], "help")) {
		if (argc == 2) {
			print_main_help(stdout);
			return AL_EXIT_OK;
		}
		if (argc > 3) {
			fprintf(stderr, "ailoop: error: unexpected operand '%s'\n", argv[3]);
			fputs("usage: ailoop help [COMMAND]\n", stderr);
			return AL_EXIT_USAGE;
		}
		/* `ailoop help --help`, `ailoop help help`: help's own help is the list */
		if (!strcmp(argv[2], "--help") || !strcmp(argv[2], "-h") ||
		    !strcmp(argv[2], "help")) {
			print_main_help(stdout);
			return AL_EXIT_OK;
		}
		cmd = al_command_find(argv[2]);
		if (!cmd)
			return unknown_command(argv[2]);
		al_cli_help(stdout, cmd);
		return AL_EXIT_OK;
	}
	if (argv[1][0] == '-') {
		fprintf(stderr, "ailoop: error: unknown option '%s'\n", argv[1]);
		fputs("usage: ailoop <command> [options]   (see 'ailoop --help')\n", stderr);
		return AL_EXIT_USAGE;
	}
	cmd = al_command_find(argv[1]);
	if (!cmd)
		return unknown_command(argv[1]);
	al_cli_running(cmd);
	code = cmd->fn(argc - 1, argv + 1);
	/* what the command wrote last (a run's final state) survives a power loss */
	if (al_durable_point() < 0)
		code = al_cli_fail(code ? code : AL_EXIT_SOFTWARE, "%s", al_errmsg());
	return output_written(code);
}
