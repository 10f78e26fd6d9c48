/*
 * libFuzzer target for reading an agent's output as a model writes it
 * (output.c): whatever the input, the reader does not crash, and an output
 * it rewrites is one the strict reader reads, with the key readable.
 */
#include "ailoop/model/md.h"
#include "ailoop/model/output.h"
#include "ailoop/base/util.h"

#include "fuzz.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	return 0;
}

static void check(const char *text, size_t size, const char *key)
{
	struct al_strbuf out = AL_STRBUF_INIT, why = AL_STRBUF_INIT;
	int rc = al_output_canonical(&out, &why, text, size, key);

	if (rc == 1) {
		struct al_md md = AL_MD_INIT;
		bool met;

		if (al_md_parse(&md, "out", al_strndup(out.buf, out.len), out.len) < 0 ||
		    (!strcmp(key, "target-met") ? !al_md_bool(&md, key, &met) : !al_md_str(&md, key)))
			abort(); /* a rewrite ailoop itself cannot read */
		al_md_release(&md);
	} else if (rc < 0 && !why.len) {
		abort(); /* an error must say why */
	}
	al_strbuf_release(&out);
	al_strbuf_release(&why);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	check((const char *)data, size, "target-met");
	check((const char *)data, size, "status");
	return 0;
}
