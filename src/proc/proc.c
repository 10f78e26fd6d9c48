#include "ailoop/proc/proc.h"
#include "proc_int.h"
#include "ailoop/base/fsutil.h"
#include "ailoop/base/signals.h"
#include "ailoop/base/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/random.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
extern char **environ;

/*
 * The environment: ours, with the spec's NAME=value entries on top, and
 * the agent key for a recorded child.
 */
static char **make_env(const char *const *extra, bool keyed)
{
	size_t n = 0, k = 0, m = 0;
	char **env;

	while (environ[n])
		n++;
	while (extra && extra[m])
		m++;
	env = al_calloc(n + m + 2, sizeof(*env));
	for (size_t i = 0; i < n; i++) {
		const char *eq = strchr(environ[i], '=');
		size_t len = eq ? (size_t)(eq - environ[i]) + 1 : strlen(environ[i]);
		bool replaced = false;

		for (size_t j = 0; j < m && !replaced; j++)
			replaced = !strncmp(extra[j], environ[i], len);
		replaced |= keyed && !strncmp(environ[i], KEY_VAR "=", sizeof(KEY_VAR));
		if (!replaced)
			env[k++] = environ[i];
	}
	for (size_t j = 0; j < m; j++)
		env[k++] = (char *)extra[j];
	if (keyed)
		env[k++] = (char *)proc_agent_key();
	return env;
}

/*
 * The path of a program named without a slash, looked up in PATH once:
 * posix_spawnp would try every PATH entry at every spawn. NULL if not found
 * (posix_spawnp then reports it as usual).
 */
static const char *resolve(const char *prog)
{
	static struct al_strmap cache = AL_STRMAP_INIT;
	static const char *cached_path;
	const char *path = getenv("PATH");
	char *found;

	if (strchr(prog, '/'))
		return prog;
	if (path != cached_path) { /* PATH changed: forget what was found */
		for (size_t i = 0; i < cache.cap; i++) {
			free((char *)cache.slots[i].key);
			free(cache.slots[i].val);
		}
		al_strmap_release(&cache);
		cached_path = path;
	}
	found = al_strmap_get(&cache, prog);
	if (found)
		return found;
	found = al_proc_find(prog);
	if (found)
		al_strmap_put(&cache, al_strdup(prog), found);
	return found;
}

static void spawn_failed(struct child *c, int err)
{
	al_strbuf_addf(&c->res->log, "ailoop: cannot run '%s': %s\n", c->spec->argv[0],
		       strerror(err));
	c->res->exit_code = 127;
	c->done = true;
}

/*
 * The signals a child gets at their default action: all but those ailoop
 * found ignored as it started (`nohup`, a shell's background job), which
 * stay ignored across the exec, as a shell leaves them. The ones ailoop
 * itself handles or ignores go back to the default whatever it found.
 * Named, each costs the child one system call before its exec: glibc asks
 * after every other one first, and then sets it again.
 */
static const sigset_t *child_defaults(void)
{
	static sigset_t defaults;
	static bool known;

	if (known)
		return &defaults;
	sigfillset(&defaults);
	for (int sig = 1; sig < NSIG; sig++) {
		struct sigaction sa;

		if (sig != SIGPIPE && sig != SIGINT && sig != SIGTERM && sig != SIGHUP &&
		    sigaction(sig, NULL, &sa) == 0 && sa.sa_handler == SIG_IGN)
			sigdelset(&defaults, sig);
	}
	known = true;
	return &defaults;
}

int proc_spawn(struct child *c)
{
	int out[2] = { -1, -1 }, err[2] = { -1, -1 }, in[2] = { -1, -1 }, rc = 0, e;
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t mask;
	const char *path;
	char **env;

	c->out_fd = c->err_fd = c->in_fd = c->pidfd = -1;
	c->start = al_now_ms();
	if (pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0 ||
	    (c->spec->input && pipe2(in, O_CLOEXEC) < 0)) {
		rc = al_err(AL_ERROR, "cannot create pipes: %s", strerror(errno));
		goto done;
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, out[1], 1);
	posix_spawn_file_actions_adddup2(&fa, err[1], 2);
	if (c->spec->input)
		posix_spawn_file_actions_adddup2(&fa, in[0], 0);
	else
		posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	if (c->spec->cwd)
		posix_spawn_file_actions_addchdir_np(&fa, c->spec->cwd);
	posix_spawnattr_init(&attr);
	sigemptyset(&mask);
	posix_spawnattr_setsigmask(&attr, &mask);
	posix_spawnattr_setsigdefault(&attr, child_defaults());
	/*
	 * A session of its own, which is a process group of its own too: no
	 * controlling terminal, so an agent that asks on /dev/tty (git for a
	 * password, an editor, a confirmation) fails at once instead of being
	 * stopped by the terminal, unseen, until its deadline or forever.
	 */
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK |
				 POSIX_SPAWN_SETSIGDEF);
	env = make_env(c->spec->env, c->spec->record != NULL);
	path = resolve(c->spec->argv[0]);
	if (path)
		e = posix_spawn(&c->pid, path, &fa, &attr, (char *const *)c->spec->argv, env);
	else
		e = posix_spawnp(&c->pid, c->spec->argv[0], &fa, &attr,
				 (char *const *)c->spec->argv, env);
	free(env);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	if (e) {
		if (e == ENOENT || e == EACCES || e == ENOEXEC || e == E2BIG)
			spawn_failed(c, e);
		else
			rc = al_err(AL_ERROR, "cannot start '%s': %s", c->spec->argv[0], strerror(e));
		goto done;
	}
	c->pidfd = (int)pidfd_open(c->pid, 0);
	c->out_fd = out[0];
	c->err_fd = err[0];
	out[0] = err[0] = -1;
	if (c->spec->input) {
		c->in_fd = in[1];
		in[1] = -1;
		fcntl(c->in_fd, F_SETFL, O_NONBLOCK);
	}
done:
	close_fd(&out[0]);
	close_fd(&out[1]);
	close_fd(&err[0]);
	close_fd(&err[1]);
	close_fd(&in[0]);
	close_fd(&in[1]);
	return rc;
}

int al_proc_run(const struct al_proc_spec *spec, struct al_proc_result *result)
{
	return al_proc_run_all(spec, result, 1);
}

void al_proc_result_release(struct al_proc_result *r)
{
	al_strbuf_release(&r->out);
	al_strbuf_release(&r->log);
}

char *al_proc_find(const char *prog)
{
	const char *path = getenv("PATH"), *p;
	struct al_strbuf sb = AL_STRBUF_INIT;
	struct stat st;

	if (strchr(prog, '/'))
		return access(prog, X_OK) == 0 ? al_strdup(prog) : NULL;
	for (p = path ? path : "/usr/bin:/bin"; *p;) {
		size_t len = strcspn(p, ":");

		al_strbuf_reset(&sb);
		al_strbuf_addf(&sb, "%.*s/%s", (int)len, len ? p : ".", prog);
		if (stat(sb.buf, &st) == 0 && S_ISREG(st.st_mode) && access(sb.buf, X_OK) == 0)
			return al_strbuf_detach(&sb, NULL);
		p += len + (p[len] == ':');
	}
	al_strbuf_release(&sb);
	return NULL;
}

bool al_proc_in_path(const char *prog)
{
	char *found = al_proc_find(prog);

	free(found);
	return found != NULL;
}
