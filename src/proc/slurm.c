#include "ailoop/proc/slurm.h"
#include "ailoop/base/fsutil.h"
#include "ailoop/model/runner.h"
#include "ailoop/base/strbuf.h"
#include "ailoop/base/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* Writes the job id where ailoop and `ailoop status` find it, then is the agent. */
#define STEP_SCRIPT \
	"printf '%s %s\\n' \"$SLURM_JOB_ID\" \"$AILOOP_SLURM_WHAT\" >\"$AILOOP_SLURM_JOB_FILE\" " \
	"2>/dev/null; exec \"$@\""

char **al_slurm_argv(const struct al_slurm *s, char **argv, const char *job_name,
		     int timeout_s, const char *cwd)
{
	size_t n = 0, nextra = s->extra_args ? s->extra_args->n : 0, m = 0;
	char **out;

	while (argv[n])
		n++;
	out = al_calloc(n + nextra + 16, sizeof(*out));
	out[m++] = al_strdup("srun");
	out[m++] = al_xprintf("--job-name=%s", job_name);
	if (s->partition)
		out[m++] = al_xprintf("--partition=%s", s->partition);
	if (s->time)
		out[m++] = al_xprintf("--time=%s", s->time);
	else
		out[m++] = al_xprintf("--time=%d", timeout_s > 0 ? (timeout_s + 59) / 60 : 1);
	if (s->cpus_per_task)
		out[m++] = al_xprintf("--cpus-per-task=%d", s->cpus_per_task);
	if (s->mem_per_cpu)
		out[m++] = al_xprintf("--mem-per-cpu=%s", s->mem_per_cpu);
	for (size_t i = 0; i < nextra; i++)
		out[m++] = al_strdup(s->extra_args->items[i]->str);
	out[m++] = al_xprintf("--chdir=%s", cwd);
	out[m++] = al_strdup("--");
	out[m++] = al_strdup("sh");
	out[m++] = al_strdup("-c");
	out[m++] = al_strdup(STEP_SCRIPT);
	out[m++] = al_strdup("ailoop-step");
	for (size_t i = 0; i < n; i++)
		out[m++] = argv[i];
	out[m] = NULL;
	free(argv); /* its strings moved */
	return out;
}

/*
 * "<partition> <node>" lines from sinfo, one per node of each partition,
 * the default partition marked with '*'.
 */
static int partition_nodes(struct al_strbuf *out)
{
	FILE *p = popen("sinfo -h -N -o '%P %N' 2>&1", "r");
	char buf[512];
	size_t got;
	int status;

	if (!p)
		return al_err(AL_ERROR, "cannot run sinfo: %s", strerror(errno));
	while ((got = fread(buf, 1, sizeof(buf), p)) > 0)
		al_strbuf_add(out, buf, got);
	status = pclose(p);
	al_strbuf_rtrim(out);
	if (status != 0)
		return al_err(AL_ERROR, "cannot list the nodes of the slurm cluster: %s",
			      out->len ? out->buf : "sinfo failed");
	return 0;
}

/* Whether sinfo's partition `part` (a trailing '*': the default) is the one asked for. */
static bool partition_is(const char *part, size_t len, const struct al_slurm *s)
{
	bool is_default = len && part[len - 1] == '*';

	if (!s->partition)
		return is_default;
	len -= is_default;
	return len == strlen(s->partition) && !memcmp(part, s->partition, len);
}

int al_slurm_check_fs(const struct al_slurm *s, const char *dir)
{
	struct al_strbuf nodes = AL_STRBUF_INIT;
	char host[256] = "", *dot, *p, *other = NULL;
	const char *part = s->partition ? s->partition : "(default)";
	struct statfs fs;
	bool any = false;
	int rc;

	if (s->shared_fs)
		return 0;
	if ((rc = partition_nodes(&nodes)) < 0)
		goto done;
	gethostname(host, sizeof(host) - 1);
	if ((dot = strchr(host, '.')))
		*dot = '\0';
	for (p = nodes.buf; p && *p && !other;) {
		char *nl = strchr(p, '\n'), *sp;

		if (nl)
			*nl = '\0';
		sp = strchr(p, ' ');
		if (sp && partition_is(p, (size_t)(sp - p), s)) {
			any = true;
			if (strcmp(sp + 1, host))
				other = sp + 1;
		}
		p = nl ? nl + 1 : NULL;
	}
	if (!any) {
		rc = al_err(AL_EINVALID, "executor slurm: slurm partition '%s' has no nodes (is it "
			    "the cluster's?)", part);
		goto done;
	}
	if (!other)
		goto done; /* every node is this host: the work tree is theirs */
	if (statfs(dir, &fs) < 0) {
		rc = al_err(AL_ERROR, "cannot read the filesystem of '%s': %s", dir, strerror(errno));
		goto done;
	}
	if (!al_fs_type_shared((unsigned long)fs.f_type))
		rc = al_err(AL_EINVALID, "executor slurm: the work tree '%s' is on a local filesystem "
			    "(type 0x%lx), and slurm partition '%s' has nodes other than this host "
			    "('%s'): put the repository on a filesystem the nodes share, or say "
			    "'slurm: {shared_fs: true}' if it is one", dir,
			    (unsigned long)fs.f_type & 0xFFFFFFFFUL, part, other);
done:
	al_strbuf_release(&nodes);
	return rc;
}

bool al_slurm_failed(const struct al_proc_result *r, char *why, size_t size)
{
	/*
	 * What slurmstepd ("slurmstepd-<host>: error: *** STEP 1.0 ON host
	 * CANCELLED AT …", or "DUE TO NODE FAILURE", "DUE TO PREEMPTION") and
	 * srun say when Slurm, not the program, ended it; the first found names it.
	 */
	static const char *const marks[] = {
		"error: *** STEP ", "error: *** JOB ",
		"srun: error: Unable to allocate resources", "srun: error: Unable to create step",
		"srun: error: Node failure", "srun: Job step aborted", "srun: error: task launch failed",
		"srun: error: Application launch failed", "srun: error: Task launch for",
		"srun: Force Terminated", "srun: error: Job allocation",
	};
	const char *log = r->log.buf ? r->log.buf : "";

	if (!r->exit_code || r->timed_out || r->interrupted)
		return false;
	for (size_t i = 0; i < AL_ARRAY_SIZE(marks); i++) {
		const char *at = strstr(log, marks[i]);

		if (at) {
			const char *nl = strchr(at, '\n');
			int len;

			if (!strncmp(at, "error: ***", 10))
				at += 7;
			len = nl ? (int)(nl - at) : (int)strlen(at);

			snprintf(why, size, "%.*s", len, at);
			return true;
		}
	}
	return false;
}

long al_slurm_job_read(const char *file)
{
	FILE *f = fopen(file, "r");
	long job = 0;

	if (!f)
		return 0;
	if (fscanf(f, "%ld", &job) != 1 || job < 0)
		job = 0;
	fclose(f);
	return job;
}

void al_slurm_cancel(long job)
{
	char id[32];
	char *argv[] = { "scancel", "--quiet", id, NULL };
	posix_spawn_file_actions_t fa;
	pid_t pid;

	if (job <= 0)
		return;
	snprintf(id, sizeof(id), "%ld", job);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	if (posix_spawnp(&pid, "scancel", &fa, NULL, argv, environ) == 0)
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
	posix_spawn_file_actions_destroy(&fa);
}

int al_slurm_cancel_left(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d))) {
		char *path;

		if (e->d_name[0] == '.')
			continue;
		path = al_xprintf("%s/%s", dir, e->d_name);
		al_slurm_cancel(al_slurm_job_read(path));
		unlink(path);
		free(path);
		n++;
	}
	closedir(d);
	return n;
}
