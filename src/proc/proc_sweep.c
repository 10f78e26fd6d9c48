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

/* What /proc/<pid>/stat says of a process. */
struct pstat {
	char state;              /* 'Z' for a zombie */
	pid_t ppid, pgid;
	unsigned long long start; /* field 22: start time, in clock ticks since boot */
};

static bool read_stat(pid_t pid, struct pstat *out)
{
	char path[64], buf[1024], *p;
	long ppid, pgid;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	/* the name may hold anything, ')' too: the fields follow its last ')' */
	if (!(p = strrchr(buf, ')')) ||
	    sscanf(p + 1, " %c %ld %ld %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s "
		   "%*s %*s %llu", &out->state, &ppid, &pgid, &out->start) != 4)
		return false;
	out->ppid = (pid_t)ppid;
	out->pgid = (pid_t)pgid;
	return true;
}

struct pids {
	pid_t *v;
	size_t n, alloc;
};

static void pids_add(struct pids *l, pid_t pid)
{
	for (size_t i = 0; i < l->n; i++)
		if (l->v[i] == pid)
			return;
	AL_GROW(l->v, l->n + 1, l->alloc);
	l->v[l->n++] = pid;
}

static bool pids_has(const struct pids *l, pid_t pid)
{
	for (size_t i = 0; l && i < l->n; i++)
		if (l->v[i] == pid)
			return true;
	return false;
}

static pid_t *all_pids(void);

/*
 * Adds the children of `pid` to `out`: from /proc/<pid>/task/<tid>/children,
 * or, on kernels without it, by a scan of every process's parent.
 */
static void add_children(struct pids *out, pid_t pid)
{
	char dir[64];
	struct dirent *e;
	bool listed = false;
	pid_t *all;
	DIR *d;

	snprintf(dir, sizeof(dir), "/proc/%ld/task", (long)pid);
	for (d = opendir(dir); d && (e = readdir(d));) {
		char path[400], buf[4096], *p, *end;
		ssize_t n;
		int fd;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s/children", dir, e->d_name);
		if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
			continue;
		listed = true;
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		buf[n > 0 ? n : 0] = '\0';
		for (p = buf;; p = end) {
			long child = strtol(p, &end, 10);

			if (end == p)
				break;
			pids_add(out, (pid_t)child);
		}
	}
	if (d)
		closedir(d);
	if (listed || !(all = all_pids()))
		return;
	for (size_t i = 0; all[i]; i++) {
		struct pstat ps;

		if (read_stat(all[i], &ps) && ps.ppid == pid)
			pids_add(out, all[i]);
	}
	free(all);
}

/*
 * "AILOOP_AGENT_KEY=<random hex>", the same for every agent this process
 * starts, and in its record of them: after a kill, resume knows what
 * ailoop started by it even where no pid was recorded yet (a kill between
 * the start and the record), and no process that merely names the run.
 */
const char *proc_agent_key(void)
{
	static char entry[sizeof(KEY_VAR) + 33];
	unsigned char bytes[16];

	if (!*entry) {
		if (getrandom(bytes, sizeof(bytes), 0) != (ssize_t)sizeof(bytes)) {
			uint64_t seed = (uint64_t)al_now_ms() ^ ((uint64_t)getpid() << 32);

			for (size_t i = 0; i < sizeof(bytes); i++, seed = seed * 6364136223846793005ULL + 1)
				bytes[i] = (unsigned char)(seed >> 56);
		}
		memcpy(entry, KEY_VAR "=", sizeof(KEY_VAR));
		for (size_t i = 0; i < sizeof(bytes); i++)
			snprintf(entry + sizeof(KEY_VAR) + 2 * i, 3, "%02x", bytes[i]);
	}
	return entry;
}

/* Children ailoop had before it started any agent: not the agents' to answer for. */
static struct pids foreign;

void proc_note_foreign(void)
{
	add_children(&foreign, getpid());
}

/*
 * Once every agent of a batch has exited, kills what they left running out
 * of their process groups (setsid, a double fork). ailoop is a subreaper,
 * so those orphans are its children now, or below them: anything below
 * ailoop that is not one of the agents' zombies, nor in one of their groups
 * (check_exit killed those, al_proc_reap_group reaps them), is such a stray.
 * Returns how many; each is named in `log`.
 */
int proc_kill_strays(const struct child *cs, size_t n, struct al_strbuf *log)
{
	struct pids seen = { 0 };
	int found = 0;

	for (int64_t until = al_now_ms() + 2000; al_now_ms() < until;) {
		struct pids below = { 0 };
		struct timespec ms = { 0, 5000000 };
		bool left = false;

		add_children(&below, getpid());
		for (size_t i = 0; i < below.n; i++) { /* the list grows as it is walked */
			pid_t pid = below.v[i];
			bool agent = false, grouped = false;
			struct pstat ps;

			for (size_t k = 0; k < n; k++)
				agent |= cs[k].pid == pid;
			if (agent || pids_has(&foreign, pid) || !read_stat(pid, &ps))
				continue;
			add_children(&below, pid);
			for (size_t k = 0; k < n; k++)
				grouped |= cs[k].pid > 0 && ps.pgid == cs[k].pid;
			if (ps.state == 'Z') {
				if (ps.ppid == getpid())
					waitpid(pid, NULL, WNOHANG);
				continue;
			}
			if (grouped)
				continue;
			left = true;
			if (!pids_has(&seen, pid)) {
				char path[64], name[64] = "?";
				ssize_t len;
				int fd;

				pids_add(&seen, pid);
				found++;
				snprintf(path, sizeof(path), "/proc/%ld/comm", (long)pid);
				if ((fd = open(path, O_RDONLY | O_CLOEXEC)) >= 0) {
					len = read(fd, name, sizeof(name) - 1);
					name[len > 0 ? len : 0] = '\0';
					name[strcspn(name, "\n")] = '\0';
					close(fd);
				}
				al_strbuf_addf(log, "\nailoop: stopped process %ld (%s), which was left "
					       "running outside the agent's process group\n", (long)pid, name);
			}
			kill(pid, SIGKILL);
			if (ps.ppid == getpid())
				waitpid(pid, NULL, WNOHANG);
		}
		free(below.v);
		if (!left)
			break;
		nanosleep(&ms, NULL);
	}
	free(seen.v);
	return found;
}

/*
 * Writes the agent key ("key <hex>") and the agents' pids and start times,
 * for a resume after ailoop is killed; called before they start (the key,
 * written only the first time) and after. The file stays open and is
 * rewritten in place (down to the key once the agents are reaped): no file
 * is made or removed per step.
 */
void proc_record(const char *path, const struct child *cs, size_t n)
{
	static char *open_path;
	static int fd = -1;
	static off_t size = -1; /* what the file holds; -1: not known */
	struct al_strbuf sb = AL_STRBUF_INIT;

	if (!open_path || strcmp(open_path, path)) {
		if (fd >= 0)
			close(fd);
		free(open_path);
		open_path = al_strdup(path);
		fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644);
		size = -1;
	}
	al_strbuf_addf(&sb, "key %s\n", proc_agent_key() + sizeof(KEY_VAR));
	if (!n && size == (off_t)sb.len) { /* the key alone, there already */
		al_strbuf_release(&sb);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		struct pstat ps;

		if (cs[i].pid > 0 && read_stat(cs[i].pid, &ps))
			al_strbuf_addf(&sb, "%ld %llu\n", (long)cs[i].pid, ps.start);
	}
	/*
	 * Best effort: without it a resume finds fewer leftovers. A truncation
	 * costs ext4 a journalled orphan-list update: only when it shrinks.
	 */
	if (fd >= 0) {
		if (pwrite(fd, sb.buf, sb.len, 0) != (ssize_t)sb.len ||
		    ((size < 0 || size > (off_t)sb.len) && ftruncate(fd, (off_t)sb.len) < 0))
			size = -1;
		else
			size = (off_t)sb.len;
	}
	al_strbuf_release(&sb);
}

static bool environ_has(pid_t pid, const char *entry)
{
	struct al_strbuf path = AL_STRBUF_INIT, env = AL_STRBUF_INIT;
	size_t len = strlen(entry);
	bool found = false;

	al_strbuf_addf(&path, "/proc/%ld/environ", (long)pid);
	if (al_strbuf_read_file(&env, path.buf, 0) == 0) {
		for (const char *p = env.buf; p < env.buf + env.len; p += strlen(p) + 1) {
			if (!strncmp(p, entry, len) && p[len] == '\0') {
				found = true;
				break;
			}
		}
	}
	al_strbuf_release(&path);
	al_strbuf_release(&env);
	return found;
}

/* Pids of /proc, or NULL without /proc. Caller frees; ends with 0. */
static pid_t *all_pids(void)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	pid_t *pids = NULL;
	size_t n = 0, alloc = 0;

	if (!d)
		return NULL;
	while ((e = readdir(d))) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);

		if (*end || pid <= 0)
			continue;
		AL_GROW(pids, n + 1, alloc);
		pids[n++] = (pid_t)pid;
	}
	closedir(d);
	AL_GROW(pids, n, alloc);
	pids[n] = 0;
	return pids;
}

/* Whether process `pid` is still the one that started at `start`, and alive. */
static bool same_process(pid_t pid, unsigned long long start)
{
	struct pstat ps;

	return read_stat(pid, &ps) && ps.start == start && ps.state != 'Z';
}

int al_proc_kill_recorded(const char *record, const char *entry)
{
	struct al_strbuf text = AL_STRBUF_INIT, key = AL_STRBUF_INIT;
	struct pids victims = { 0 }, recorded = { 0 };
	pid_t *all, me = getpid();
	int found;

	if (al_strbuf_read_file(&text, record, 0) < 0) {
		al_strbuf_release(&text);
		return 0; /* none recorded: no agent was at work */
	}
	for (const char *p = text.buf; *p;) {
		char *end;
		long pid = strtol(p, &end, 10);
		unsigned long long start = strtoull(end, &end, 10);

		if (!strncmp(p, "key ", 4) && !key.len) {
			end = (char *)p + 4 + strcspn(p + 4, "\n");
			al_strbuf_addf(&key, KEY_VAR "=%.*s", (int)(end - p - 4), p + 4);
		} else if (pid > 0 && (pid_t)pid != me) {
			pids_add(&recorded, (pid_t)pid);
			if (same_process((pid_t)pid, start))
				pids_add(&victims, (pid_t)pid);
		}
		p = end + strcspn(end, "\n");
		p += *p == '\n';
	}
	/* each recorded agent still alive, whatever is below it, and its group */
	for (size_t i = 0; i < victims.n; i++)
		add_children(&victims, victims.v[i]);
	all = all_pids();
	for (size_t i = 0; all && all[i]; i++) {
		struct pstat ps;

		/*
		 * The group of an agent that died before it, and whatever holds
		 * the key (an agent started but not recorded yet): ours only if
		 * it names the run too
		 */
		if (all[i] != me && !pids_has(&victims, all[i]) && read_stat(all[i], &ps) &&
		    ps.state != 'Z' && environ_has(all[i], entry) &&
		    (pids_has(&recorded, ps.pgid) || (key.len && environ_has(all[i], key.buf))))
			pids_add(&victims, all[i]);
	}
	free(all);
	for (size_t i = 0; i < victims.n; i++) {
		struct pstat ps;

		/*
		 * A recorded agent's group at once, first: a process forked
		 * since the walk above is in it, and the kernel lets nothing
		 * fork out of a group being killed.
		 */
		if (read_stat(victims.v[i], &ps) && pids_has(&recorded, ps.pgid))
			kill(-ps.pgid, SIGKILL);
		kill(victims.v[i], SIGKILL);
	}
	found = (int)victims.n;
	/* wait (at most 2 s) until they are gone: dead, or zombies of another parent */
	for (int64_t until = al_now_ms() + 2000; al_now_ms() < until;) {
		struct timespec ms = { 0, 5000000 };
		bool left = false;

		for (size_t i = 0; i < victims.n && !left; i++) {
			struct pstat ps;

			left = read_stat(victims.v[i], &ps) && ps.state != 'Z';
		}
		if (!left)
			break;
		nanosleep(&ms, NULL);
	}
	unlink(record);
	free(victims.v);
	free(recorded.v);
	al_strbuf_release(&text);
	al_strbuf_release(&key);
	return found;
}

bool al_proc_remove_unheld(const char *path)
{
	return !al_proc_file_in_use(path) && unlink(path) == 0;
}

bool al_proc_file_in_use(const char *path)
{
	struct stat target;
	bool used = false;
	pid_t *pids;

	if (stat(path, &target) < 0)
		return false; /* no file: nobody holds it, and no walk of /proc */
	pids = all_pids();
	for (size_t i = 0; pids && pids[i] && !used; i++) {
		struct al_strbuf dir = AL_STRBUF_INIT;
		struct dirent *e;
		DIR *d;

		al_strbuf_addf(&dir, "/proc/%ld/fd", (long)pids[i]);
		d = opendir(dir.buf);
		while (d && (e = readdir(d)) && !used) {
			struct al_strbuf fd = AL_STRBUF_INIT;
			struct stat st;

			al_strbuf_addf(&fd, "%s/%s", dir.buf, e->d_name);
			used = stat(fd.buf, &st) == 0 && st.st_dev == target.st_dev &&
			       st.st_ino == target.st_ino;
			al_strbuf_release(&fd);
		}
		if (d)
			closedir(d);
		al_strbuf_release(&dir);
	}
	free(pids);
	return used;
}
