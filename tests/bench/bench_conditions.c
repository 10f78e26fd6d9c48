/*
 * Condition evaluation at run time (issue 9's goal: 10,000 evaluations over
 * a memory of 100,000 keys in under 50 ms in total). The conditions are
 * read from YAML as a flow's are; memory is a run's memory.jsonl of
 * 100,000 keys, read through al_memory as a run reads it. A second figure
 * is the cost of a command condition answered from the cache.
 *
 *   bench_conditions [EVALUATIONS]     prints the figures; exit 1 over budget
 */
#include "ailoop/model/check.h"
#include "ailoop/exec/condition_eval.h"
#include "ailoop/model/doc.h"
#include "ailoop/store/memory.h"
#include "ailoop/base/strbuf.h"
#include "ailoop/base/util.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NKEYS 50000 /* key.N and num.N: 100,000 keys, and the sensors' */
#define NCONDS 100
#define BUDGET_MS 50.0

/* One memory entry as the runner writes it. */
static void entry(FILE *f, const char *key, const char *value)
{
	json_t *e = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "timestamp", "2026-11-23T00:00:00Z",
			      "agent", "bench", "knowledge_type", "observation", "key", key,
			      "value", value, "confidence", "verified");
	char *line = json_dumps(e, JSON_COMPACT);

	fprintf(f, "%s\n", line);
	free(line);
	json_decref(e);
}

/* The i-th of a mix of every kind of memory check, over keys spread across the memory. */
static void condition_text(struct al_strbuf *sb, int i)
{
	int k = (int)((i * 7919L) % NKEYS);

	switch (i % 10) {
	case 0: al_strbuf_addf(sb, "{key: key.%d, operator: equals, value: value-%d}", k, k); break;
	case 1: al_strbuf_addf(sb, "{key: num.%d, operator: greater_or_equal, value: 50}", k); break;
	case 2: al_strbuf_addf(sb, "{key: key.%d, operator: contains, value: lue-}", k); break;
	case 3:
		al_strbuf_addf(sb, "{key: key.%d, operator: matches_regex, value: '^value-\\d+$'}", k);
		break;
	case 4:
		al_strbuf_addf(sb, "{type: test_result, key: s%d, operator: equals, value: passing}", i);
		break;
	case 5:
		al_strbuf_addf(sb, "{type: test_result, key: s%d.failed, operator: less_than, "
			       "value: 1}", i);
		break;
	case 6: al_strbuf_addf(sb, "{key: missing.%d, operator: not_exists}", k); break;
	case 7:
		al_strbuf_addf(sb, "{all: [{key: key.%d, operator: exists}, {not: {key: num.%d, "
			       "operator: less_than, value: 10}}]}", k, k);
		break;
	case 8:
		al_strbuf_addf(sb, "{any: [{key: missing.%d, operator: exists}, {key: key.%d, "
			       "operator: not_equals, value: x}]}", k, k);
		break;
	default: al_strbuf_addf(sb, "{key: num.%d, operator: less_or_equal, value: '1e9'}", k); break;
	}
}

static double ms_since(int64_t t0_ns)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((double)ts.tv_sec * 1e9 + (double)ts.tv_nsec - (double)t0_ns) / 1e6;
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 10000;
	struct al_diags diags = AL_DIAGS_INIT;
	struct al_strbuf text = AL_STRBUF_INIT;
	struct al_doc *doc;
	struct al_check check = { &diags, NULL, 0 };
	struct al_condition *conds[NCONDS], *cmd;
	struct al_cond_env env = { 0 };
	struct al_memory *memory;
	size_t truths = 0;
	char dir[] = "/tmp/ailoop-bench.XXXXXX", *cache_path, *memory_path, key[64], value[64];
	FILE *f;
	double ms, cached_ms;
	bool result;
	int64_t t0;

	/* 100,000 keys: key.N and num.N, and sensors.sN.status / .failed */
	if (!mkdtemp(dir))
		return perror("bench: mkdtemp"), 2;
	memory_path = al_xprintf("%s/%s", dir, AL_MEMORY_FILE);
	if (!(f = fopen(memory_path, "w")))
		return perror("bench: memory"), 2;
	for (int i = 0; i < NKEYS; i++) {
		snprintf(key, sizeof(key), "key.%d", i);
		snprintf(value, sizeof(value), "value-%d", i);
		entry(f, key, value);
		snprintf(key, sizeof(key), "num.%d", i);
		snprintf(value, sizeof(value), "%d", i % 100);
		entry(f, key, value);
	}
	for (int i = 0; i < NCONDS; i++) {
		snprintf(key, sizeof(key), "sensors.s%d.status", i);
		entry(f, key, i % 3 ? "pass" : "fail");
		snprintf(key, sizeof(key), "sensors.s%d.failed", i);
		entry(f, key, i % 3 ? "0" : "2");
	}
	fclose(f);
	if (al_memory_open(&memory, dir) < 0 || !al_memory_get(memory, "key.1"))
		return fprintf(stderr, "bench: %s\n", al_errmsg()), 2;
	env.memory = memory;

	al_strbuf_adds(&text, "c:\n");
	for (int i = 0; i < NCONDS; i++) {
		al_strbuf_adds(&text, "  - ");
		condition_text(&text, i);
		al_strbuf_addch(&text, '\n');
	}
	al_strbuf_adds(&text, "  - {type: command, command: ['true']}\n");
	if (al_doc_parse(&doc, &diags, "bench.yaml", text.buf, text.len, 0) < 0)
		return fprintf(stderr, "bench: cannot parse the conditions\n"), 2;
	check.doc = doc;
	for (int i = 0; i < NCONDS; i++)
		conds[i] = al_condition_parse(&check, al_val_get(doc->root, "c")->items[i]);
	cmd = al_condition_parse(&check, al_val_get(doc->root, "c")->items[NCONDS]);
	if (check.errors)
		return fprintf(stderr, "bench: bad conditions\n"), 2;

	t0 = now_ns();
	for (long i = 0; i < n; i++) {
		if (al_condition_eval(conds[i % NCONDS], &env, &result) < 0)
			return fprintf(stderr, "bench: %s\n", al_errmsg()), 2;
		truths += result;
	}
	ms = ms_since(t0);

	/* a command condition answered from the cache, after one real run */
	cache_path = al_xprintf("%s/%s", dir, AL_COND_CACHE_FILE);
	if (al_cond_cache_open(&env.cache, cache_path) < 0)
		return fprintf(stderr, "bench: %s\n", al_errmsg()), 2;
	env.node_path = "root/check";
	env.tree = "4b825dc642cb6eb9a060e54bf8d69288fbe4904b";
	al_condition_eval(cmd, &env, &result);
	t0 = now_ns();
	for (long i = 0; i < n; i++)
		al_condition_eval(cmd, &env, &result);
	cached_ms = ms_since(t0);

	printf("conditions: %ld evaluations over %d keys in %.2f ms (%.2f µs each; %zu true); "
	       "budget %.0f ms\n", n, 2 * NKEYS + 2 * NCONDS, ms, ms * 1000 / (double)n, truths,
	       BUDGET_MS);
	printf("conditions: %ld command conditions from the cache in %.2f ms (%.2f µs each)\n", n,
	       cached_ms, cached_ms * 1000 / (double)n);

	al_cond_cache_free(env.cache);
	al_memory_free(memory);
	unlink(cache_path);
	unlink(memory_path);
	rmdir(dir);
	free(cache_path);
	free(memory_path);
	for (int i = 0; i < NCONDS; i++)
		al_condition_free(conds[i]);
	al_condition_free(cmd);
	al_doc_free(doc);
	al_diags_release(&diags);
	al_strbuf_release(&text);
	return n == 10000 && ms > BUDGET_MS;
}
