/*
 * The cost of working memory: N sets (each an flock, a write and an index
 * update, fsync off unless AILOOP_FSYNC=1), then reading the file afresh
 * into a new handle, then M lookups of random keys.
 *
 *   cmake --build build --target bench_memory && build/tests/bench_memory [N [M]]
 */
#include "ailoop/store/memory.h"
#include "ailoop/base/util.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 100000, gets = argc > 2 ? atol(argv[2]) : 10000;
	char dir[] = "/tmp/ailoop-bench-memory.XXXXXX", key[64], value[64], *path;
	struct al_memory *w, *r;
	int64_t t0, t1, t2, t3, t4;
	struct stat st;
	long found = 0;
	int fd;

	if (!getenv("AILOOP_FSYNC"))
		setenv("AILOOP_FSYNC", "0", 1);
	if (!mkdtemp(dir) || al_memory_open(&w, dir) < 0) {
		fprintf(stderr, "bench_memory: %s\n", al_errmsg());
		return 1;
	}
	t0 = al_now_ms();
	for (long i = 0; i < n; i++) {
		snprintf(key, sizeof(key), "bench.key.%ld", i);
		snprintf(value, sizeof(value), "value %ld", i);
		if (al_memory_set(w, key, value, false, "bench", NULL) < 0) {
			fprintf(stderr, "bench_memory: %s\n", al_errmsg());
			return 1;
		}
	}
	t1 = al_now_ms();
	if (al_memory_open(&r, dir) < 0)
		return 1;
	al_memory_version(r); /* reads the whole file */
	t2 = al_now_ms();
	for (long i = 0; i < gets; i++) {
		snprintf(key, sizeof(key), "bench.key.%ld", (long)(((unsigned long)i * 2654435761u) % (unsigned long)n));
		found += al_memory_get(r, key) != NULL;
	}
	t3 = al_now_ms();
	/* the one system call each get makes: how much of the time it is */
	path = al_xprintf("%s/" AL_MEMORY_FILE, dir);
	fd = open(path, O_RDONLY);
	for (long i = 0; i < gets; i++)
		fstat(fd, &st);
	t4 = al_now_ms();
	close(fd);
	printf("%ld sets: %lld ms (%.1f us each)\n", n, (long long)(t1 - t0),
	       1000.0 * (double)(t1 - t0) / (double)n);
	printf("reading the file afresh (%zu entries): %lld ms\n", al_memory_count(r),
	       (long long)(t2 - t1));
	printf("%ld gets: %lld ms (%ld found), of which %lld ms are the fstat(2) of each get\n",
	       gets, (long long)(t3 - t2), found, (long long)(t4 - t3));
	al_memory_free(w);
	al_memory_free(r);
	unlink(path);
	rmdir(dir);
	free(path);
	return found == gets ? 0 : 1;
}
