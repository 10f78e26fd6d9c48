#ifndef AILOOP_TESTS_FUZZ_H
#define AILOOP_TESTS_FUZZ_H

/*
 * What the libFuzzer targets share: each input is written to a file, as
 * ailoop reads flows and agent files from files, and the diagnostics it
 * makes are sorted and printed (quoting the source line under a caret)
 * to /dev/null, so that every position reported is also used.
 */
#include "ailoop/base/diag.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static FILE *fuzz_devnull;

/* `arg` with relative path `path` (at its end) made absolute from `cwd`. */
static inline char *fuzz_absolute(const char *cwd, const char *arg, const char *path)
{
	size_t head = (size_t)(path - arg), len = head + strlen(cwd) + strlen(path) + 2;
	char *s = malloc(len);

	if (!s)
		abort();
	snprintf(s, len, "%.*s%s/%s", (int)head, arg, cwd, path);
	return s;
}

/*
 * Makes `dir` the current directory before libFuzzer reads its arguments
 * (LLVMFuzzerInitialize may rewrite them): corpus directories, inputs and
 * path options given relative to where it was started are made absolute,
 * and crash files go there too unless -artifact_prefix says otherwise.
 */
static inline void fuzz_enter(const char *dir, int *argc, char ***argv)
{
	static const char *const path_opts[] = { "-dict=", "-artifact_prefix=",
						 "-exact_artifact_path=" };
	static const char prefix_opt[] = "-artifact_prefix=";
	char cwd[PATH_MAX], **args = calloc((size_t)*argc + 2, sizeof(*args));
	int n = 0, prefix = 0;

	if (!args || !getcwd(cwd, sizeof(cwd)) || chdir(dir) < 0) {
		perror(dir);
		abort();
	}
	for (int i = 0; i < *argc; i++) {
		const char *a = (*argv)[i], *path = i && a[0] != '-' ? a : NULL;

		for (size_t k = 0; k < sizeof(path_opts) / sizeof(*path_opts) && !path; k++)
			if (!strncmp(a, path_opts[k], strlen(path_opts[k])))
				path = a + strlen(path_opts[k]);
		prefix |= !strncmp(a, prefix_opt, strlen(prefix_opt));
		args[n++] = path && *path && *path != '/' ? fuzz_absolute(cwd, a, path) : (char *)a;
	}
	if (!prefix)
		args[n++] = fuzz_absolute(cwd, prefix_opt, prefix_opt + strlen(prefix_opt));
	*argc = n;
	*argv = args;
}

/* Writes the input to `path` (replacing it); aborts if it cannot. */
static inline void fuzz_write(const char *path, const uint8_t *data, size_t size)
{
	FILE *f = fopen(path, "wb");

	if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0) {
		perror(path);
		abort();
	}
}

static inline void fuzz_print(struct al_diags *d)
{
	if (!fuzz_devnull && !(fuzz_devnull = fopen("/dev/null", "w")))
		abort();
	al_diags_sort(d);
	al_diags_print(d, fuzz_devnull, true);
}

#endif
