#include "ailoop/base/util.h"
#include "ailoop/base/strbuf.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

static struct al_strbuf last_error = AL_STRBUF_INIT;

int al_err(int code, const char *fmt, ...)
{
	struct al_strbuf msg = AL_STRBUF_INIT;
	va_list ap;

	/*
	 * Formatted into a fresh buffer, then swapped in: an argument may be
	 * al_errmsg() itself, as in al_err(..., "reading x: %s", al_errmsg()).
	 */
	va_start(ap, fmt);
	al_strbuf_vaddf(&msg, fmt, ap);
	va_end(ap);
	al_strbuf_release(&last_error);
	last_error = msg;
	return code;
}

const char *al_errmsg(void)
{
	return last_error.buf;
}

char *al_xprintf(const char *fmt, ...)
{
	struct al_strbuf sb = AL_STRBUF_INIT;
	va_list ap;

	va_start(ap, fmt);
	al_strbuf_vaddf(&sb, fmt, ap);
	va_end(ap);
	return al_strbuf_detach(&sb, NULL);
}

void al_strv_free(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

void al_strv_sort(char **v, size_t n)
{
	if (n > 1)
		qsort(v, n, sizeof(*v), cmp_str);
}

bool al_strv_has(char *const *v, size_t n, const char *s)
{
	return n && bsearch(&s, v, n, sizeof(*v), cmp_str);
}

bool al_has_line(const char *text, const char *line)
{
	size_t n = strlen(line);

	for (const char *p = text; p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (!strncmp(p, line, n) && (p[n] == '\n' || !p[n]))
			return true;
	return false;
}

bool al_starts_with(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

bool al_ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && memcmp(s + n - m, suffix, m) == 0;
}

size_t al_levenshtein(const char *a, const char *b)
{
	size_t n = strlen(a), m = strlen(b), i, j, *row, result;

	if (n > 64 || m > 64)
		return SIZE_MAX; /* hints are for short words only */
	row = al_malloc((m + 1) * sizeof(*row));
	for (j = 0; j <= m; j++)
		row[j] = j;
	for (i = 1; i <= n; i++) {
		size_t diag = row[0];

		row[0] = i;
		for (j = 1; j <= m; j++) {
			size_t up = row[j], best;

			best = diag + (a[i - 1] != b[j - 1]);
			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			diag = up;
			row[j] = best;
		}
	}
	result = row[m];
	free(row);
	return result;
}

const char *al_closest(const char *word, const char *const *candidates, size_t n)
{
	const char *best = NULL;
	size_t best_d = SIZE_MAX, i, limit;

	limit = strlen(word) / 3 + 1;
	if (limit > 3)
		limit = 3;
	for (i = 0; i < n; i++) {
		size_t d = al_levenshtein(word, candidates[i]);

		if (d < best_d) {
			best_d = d;
			best = candidates[i];
		}
	}
	return best_d <= limit ? best : NULL;
}

/* The length of the well-formed UTF-8 sequence at `p`, or 0 if there is none. */
static size_t utf8_seq(const unsigned char *p, const unsigned char *end)
{
	unsigned char b = *p;
	size_t need;
	uint32_t cp;

	if (b < 0x80)
		return 1;
	if ((b & 0xe0) == 0xc0) {
		need = 1;
		cp = b & 0x1f;
	} else if ((b & 0xf0) == 0xe0) {
		need = 2;
		cp = b & 0x0f;
	} else if ((b & 0xf8) == 0xf0) {
		need = 3;
		cp = b & 0x07;
	} else {
		return 0;
	}
	if ((size_t)(end - p) <= need)
		return 0;
	for (size_t k = 1; k <= need; k++) {
		if ((p[k] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (p[k] & 0x3f);
	}
	/* overlong forms, surrogates and values past U+10FFFF */
	if ((need == 1 && cp < 0x80) || (need == 2 && cp < 0x800) ||
	    (need == 3 && cp < 0x10000) || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return need + 1;
}

bool al_utf8_text(const char *s, size_t len, int *line, int *col)
{
	const unsigned char *p = (const unsigned char *)s, *end = p + len;
	int l = 1, c = 1;

	while (p < end) {
		unsigned char b = *p;
		size_t n = utf8_seq(p, end);

		if (!n || (b < 0x20 && b != '\t' && b != '\n' && b != '\r') || b == 0x7f) {
			*line = l;
			*col = c;
			return false;
		}
		p += n;
		if (b == '\n') {
			l++;
			c = 1;
		} else {
			c++;
		}
	}
	return true;
}

bool al_utf8_valid(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s, *end = p + len;

	while (p < end) {
		size_t n = utf8_seq(p, end);

		if (!n)
			return false;
		p += n;
	}
	return true;
}

size_t al_utf8_valid_len(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s, *end = p + len;
	size_t n;

	while (p < end && (n = utf8_seq(p, end)))
		p += n;
	return (size_t)(p - (const unsigned char *)s);
}

void al_utf8_repair(struct al_strbuf *out, const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s, *end = p + len;

	while (p < end) {
		size_t n = utf8_seq(p, end);

		if (n) {
			al_strbuf_add(out, p, n);
			p += n;
		} else {
			al_strbuf_adds(out, "\xef\xbf\xbd"); /* U+FFFD REPLACEMENT CHARACTER */
			p++;
		}
	}
}

void al_utf8_cut(char *s, size_t max)
{
	if (strlen(s) <= max)
		return;
	while (max && (s[max] & 0xc0) == 0x80)
		max--; /* s[max] continues a character: cut before the character */
	s[max] = '\0';
}

uint64_t al_hash(const char *s, size_t len)
{
	uint64_t h = 1469598103934665603ULL;

	for (size_t i = 0; i < len; i++) {
		h ^= (unsigned char)s[i];
		h *= 1099511628211ULL;
	}
	return h;
}

static size_t strmap_slot(const struct al_strmap_slot *slots, size_t cap, const char *key)
{
	size_t i = (size_t)al_hash(key, strlen(key)) & (cap - 1);

	while (slots[i].key && strcmp(slots[i].key, key))
		i = (i + 1) & (cap - 1);
	return i;
}

void *al_strmap_put(struct al_strmap *map, const char *key, void *val)
{
	size_t i;

	if ((map->n + 1) * 2 > map->cap) {
		size_t cap = map->cap ? map->cap * 2 : 16;
		struct al_strmap_slot *slots = al_calloc(cap, sizeof(*slots));

		for (size_t k = 0; k < map->cap; k++)
			if (map->slots[k].key)
				slots[strmap_slot(slots, cap, map->slots[k].key)] = map->slots[k];
		free(map->slots);
		map->slots = slots;
		map->cap = cap;
	}
	i = strmap_slot(map->slots, map->cap, key);
	if (!map->slots[i].key) {
		map->slots[i].key = key;
		map->slots[i].val = val;
		map->n++;
	}
	return map->slots[i].val;
}

void *al_strmap_get(const struct al_strmap *map, const char *key)
{
	return map->cap ? map->slots[strmap_slot(map->slots, map->cap, key)].val : NULL;
}

void al_strmap_release(struct al_strmap *map)
{
	free(map->slots);
	map->slots = NULL;
	map->n = map->cap = 0;
}

int64_t al_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void al_timestamp(char buf[32])
{
	time_t now = time(NULL);
	struct tm tm;

	gmtime_r(&now, &tm);
	strftime(buf, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* The crash points' state: `count` in memory shared with the forked processes of the run. */
static struct {
	bool ready;
	long at;
	const char *log;
	struct crash_shared {
		long count;
		pid_t root; /* the process that set it up: the run's top */
	} *shared;
} crash;

void al_crash_setup(void)
{
	const char *v;

	if (crash.ready)
		return;
	crash.ready = true;
	v = getenv("AILOOP_CRASH_AT");
	crash.at = v ? atol(v) : 0;
	crash.log = getenv("AILOOP_CRASH_LOG");
	if (!crash.at && !crash.log)
		return;
	crash.shared = mmap(NULL, sizeof(*crash.shared), PROT_READ | PROT_WRITE,
			    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (crash.shared == MAP_FAILED) {
		crash.shared = NULL;
		crash.at = 0;
		crash.log = NULL;
		fprintf(stderr, "ailoop: crash points are off: %s\n", strerror(errno));
		return;
	}
	crash.shared->root = getpid();
}

/* Adds the processes below those in pids[0..*n) to it, stopped; false when none was new. */
static bool stop_below(pid_t *pids, size_t *n, size_t cap)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	bool more = false;

	while (d && (e = readdir(d)) && *n < cap) {
		char path[64], buf[512], *paren;
		long pid = atol(e->d_name), ppid;
		ssize_t len;
		int fd;
		bool known = false, below = false;

		if (pid <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
		if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
			continue;
		len = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		/* "pid (comm) state ppid ...": comm may hold anything, up to the last ')' */
		if (len <= 0)
			continue;
		buf[len] = '\0';
		if (!(paren = strrchr(buf, ')')) || sscanf(paren + 1, " %*c %ld", &ppid) != 1)
			continue;
		for (size_t i = 0; i < *n; i++) {
			known |= pids[i] == (pid_t)pid;
			below |= pids[i] == (pid_t)ppid;
		}
		if (below && !known) {
			if ((pid_t)pid != getpid())
				kill((pid_t)pid, SIGSTOP);
			pids[(*n)++] = (pid_t)pid;
			more = true;
		}
	}
	if (d)
		closedir(d);
	return more;
}

/*
 * The crash: every process of the run stopped first (none starts another),
 * then killed, each process's children before it.
 */
static void crash_run(void)
{
	pid_t pids[1024];
	size_t n = 0;

	/*
	 * This process outlives all it kills: a parallel child dies with its
	 * parent (PDEATHSIG), and one of a nested parallel node kills its
	 * parent before the run's first process, which would stay stopped.
	 */
	prctl(PR_SET_PDEATHSIG, 0);
	pids[n++] = crash.shared->root;
	if (crash.shared->root != getpid())
		kill(crash.shared->root, SIGSTOP);
	while (stop_below(pids, &n, sizeof(pids) / sizeof(pids[0])))
		;
	/* children before their parents: a child process dies with its parent (PDEATHSIG) */
	for (size_t i = n; i-- > 0;)
		if (pids[i] != getpid())
			kill(pids[i], SIGKILL);
	raise(SIGKILL);
}

void al_crash_point(const char *name)
{
	long count;

	if (!crash.ready)
		al_crash_setup();
	if (!crash.shared)
		return;
	count = __atomic_add_fetch(&crash.shared->count, 1, __ATOMIC_SEQ_CST);
	if (crash.log) {
		char line[256];
		int fd = open(crash.log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
		int n = snprintf(line, sizeof(line), "%ld %s\n", count, name);

		if (fd >= 0) {
			if (write(fd, line, (size_t)n) < 0)
				n = 0;
			close(fd);
		}
	}
	if (count == crash.at)
		crash_run();
}
