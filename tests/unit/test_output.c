#include "ailoop/model/output.h"
#include "ailoop/model/md.h"
#include "unit.h"

/*
 * Outputs as language models write them: each is read, and what it becomes
 * is read again by the strict reader every later reader uses.
 */
struct shape {
	const char *what;
	const char *key;
	const char *text;
	int rc;            /* 0 canonical, 1 rewritten, AL_EINVALID */
	const char *value; /* the key's text once read; or a word of the reason */
	const char *body;  /* a word the body keeps, or NULL */
};

static const struct shape shapes[] = {
	{ "canonical", "target-met", "---\ntarget-met: true\n---\n## Assessment\nok\n", 0,
	  "true", "Assessment" },
	{ "canonical with CRLF", "target-met", "---\r\ntarget-met: false\r\n---\r\nok\r\n", 0,
	  "false", "ok" },
	{ "canonical sensor", "status", "---\nstatus: pass\n---\n# Sensor\n", 0, "pass",
	  "Sensor" },
	{ "prose first", "target-met",
	  "Here is my assessment.\n---\ntarget-met: false\n---\n## Action Plan\nfix it\n", 1,
	  "false", "Here is my assessment." },
	{ "blank lines first", "target-met", "\n\n---\ntarget-met: true\n---\nbody\n", 1, "true",
	  "body" },
	{ "two lines of prose", "status",
	  "I ran the tests.\nThey pass.\n\n---\nstatus: pass\nsummary: 3 passed\n---\nreport\n",
	  1, "pass", "They pass." },
	{ "yaml fence", "target-met",
	  "```yaml\n---\ntarget-met: false\n---\n```\n## Action Plan\nadd a test\n", 1, "false",
	  "add a test" },
	{ "yaml fence without rules", "target-met",
	  "```yaml\ntarget-met: true\nsummary: done\n```\nAll good.\n", 1, "true", "All good." },
	{ "yml fence", "status", "```yml\nstatus: fail\n```\n", 1, "fail", NULL },
	{ "markdown fence around it all", "target-met",
	  "```markdown\n---\ntarget-met: false\n---\n## Assessment\nnot yet\n```\n", 1, "false",
	  "not yet" },
	{ "md fence", "status", "```md\n---\nstatus: partial\n---\nhalf\n```\n", 1, "partial",
	  "half" },
	{ "bare fence", "target-met", "```\n---\ntarget-met: true\n---\nok\n```\n", 1, "true",
	  "ok" },
	{ "bare fence of yaml", "status", "Result:\n```\nstatus: pass\n```\n", 1, "pass",
	  "Result:" },
	{ "tilde fence", "status", "~~~yaml\nstatus: fail\n~~~\n", 1, "fail", NULL },
	{ "indented as the prompt shows it", "target-met",
	  "   ---\n   target-met: false\n   ---\n   ## Action Plan\n", 1, "false", "Action Plan" },
	{ "indented by a tab", "status", "\t---\n\tstatus: pass\n\t---\n", 1, "pass", NULL },
	{ "indented in a fence", "target-met",
	  "Assessment:\n  ```yaml\n  ---\n  target-met: true\n  ---\n  ```\n", 1, "true",
	  "Assessment:" },
	{ "snake case", "target-met", "---\ntarget_met: false\n---\nplan\n", 1, "false", "plan" },
	{ "camel case", "target-met", "---\ntargetMet: true\n---\n", 1, "true", NULL },
	{ "title case", "target-met", "---\nTarget-Met: true\n---\n", 1, "true", NULL },
	{ "upper snake", "target-met", "---\nTARGET_MET: no\n---\n", 1, "no", NULL },
	{ "quoted key", "target-met", "---\n\"target_met\": false\n---\n", 1, "false", NULL },
	{ "sensor status spelled so", "status", "---\nStatus: pass\nexit_code: 0\n---\n", 1,
	  "pass", NULL },
	{ "yes", "target-met", "---\ntarget-met: Yes\n---\n", 0, "Yes", NULL },
	{ "NO in capitals", "target-met", "---\ntarget-met: NO\n---\n", 0, "NO", NULL },
	{ "False", "target-met", "---\ntarget-met: False\n---\n", 0, "False", NULL },
	{ "the same answer twice", "target-met",
	  "---\ntarget-met: true\ntarget_met: true\n---\n", 0, "true", NULL },
	{ "a rule in the prose first", "target-met",
	  "Thinking\n---\nI looked at it.\n---\ntarget-met: false\n---\n", 1, "false", NULL },
	{ "a code block before", "target-met",
	  "```c\nint x;\n```\n---\ntarget-met: true\n---\n", 1, "true", "int x;" },
	{ "a BOM-free unicode body", "status", "Résumé ✓\n---\nstatus: pass\n---\n", 1, "pass",
	  "Résumé" },
	/* and what must stay an error */
	{ "no front matter", "target-met", "The target is met.\n", AL_EINVALID,
	  "no front matter", NULL },
	{ "empty", "status", "", AL_EINVALID, "no front matter", NULL },
	{ "true or false", "target-met", "---\ntarget-met: true or false\n---\n", AL_EINVALID,
	  "neither true nor false", NULL },
	{ "two answers", "target-met", "---\ntarget-met: true\ntarget_met: false\n---\n",
	  AL_EINVALID, "twice", NULL },
	{ "quoted true", "target-met", "---\ntarget-met: \"maybe\"\n---\n", AL_EINVALID,
	  "neither", NULL },
	{ "key missing", "target-met", "---\nsummary: done\n---\n", AL_EINVALID, "no 'target-met'",
	  NULL },
	{ "status empty", "status", "---\nstatus:\n---\n", AL_EINVALID, "status", NULL },
	{ "status a list", "status", "---\nstatus: [pass]\n---\n", AL_EINVALID, "a list", NULL },
	{ "never closed", "target-met", "---\ntarget-met: true\n", AL_EINVALID, "no front matter",
	  NULL },
	{ "broken yaml", "status", "---\nstatus: [pass\n---\n", AL_EINVALID, "not valid YAML",
	  NULL },
	{ "a python fence", "status", "```python\nstatus: pass\n```\n", AL_EINVALID,
	  "no front matter", NULL },
	{ "a rule of prose only", "target-met", "One\n---\nTwo\n---\n", AL_EINVALID,
	  "no front matter", NULL },
};

Test(output, shapes_models_write)
{
	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		const struct shape *s = &shapes[i];
		struct al_strbuf out = AL_STRBUF_INIT, why = AL_STRBUF_INIT;
		struct al_md md = AL_MD_INIT;
		int rc = al_output_canonical(&out, &why, s->text, strlen(s->text), s->key);

		cr_assert_eq(rc, s->rc, "%s: returned %d (%s), expected %d", s->what, rc, why.buf,
			     s->rc);
		if (rc == AL_EINVALID) {
			cr_assert(strstr(why.buf, s->value), "%s: the reason '%s' lacks '%s'", s->what,
				  why.buf, s->value);
		} else {
			const char *text = rc ? out.buf : s->text;
			size_t len = rc ? out.len : strlen(s->text);

			cr_assert_eq(al_md_parse(&md, "out", al_strndup(text, len), len), 0,
				     "%s: %s", s->what, al_errmsg());
			cr_assert_str_eq(al_md_str(&md, s->key), s->value, "%s", s->what);
			if (s->body)
				cr_assert(memmem(md.body, md.body_len, s->body, strlen(s->body)),
					  "%s: the body lost '%s': [%.*s]", s->what, s->body,
					  (int)md.body_len, md.body);
			cr_assert(!memmem(md.body, md.body_len, "```\n", 4) || !strstr(s->what, "fence"),
				  "%s: a fence left in the body", s->what);
		}
		al_md_release(&md);
		al_strbuf_release(&out);
		al_strbuf_release(&why);
	}
	cr_assert_geq(sizeof(shapes) / sizeof(shapes[0]), 30);
}

Test(output, keys_spelled_as_ailoop_spells_them)
{
	const char *in[] = { "target_met", "targetMet", "Target-Met", "TARGET_MET", "exit code",
			     "target-met" };

	for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
		char *k = al_output_key(in[i], strlen(in[i]));

		cr_assert_str_eq(k, i == 4 ? "exit-code" : "target-met", "%s", in[i]);
		free(k);
	}
}

Test(output, settle_rewrites_the_file_once)
{
	struct al_strbuf why = AL_STRBUF_INIT, text = AL_STRBUF_INIT;

	unit_enter_tmpdir();
	unit_write("out.md", "Sure.\n```yaml\ntarget_met: true\n```\n");
	cr_assert_eq(al_output_settle("out.md", "target-met", &why), 0, "%s", why.buf);
	cr_assert_eq(al_strbuf_read_file(&text, "out.md", 0), 0);
	cr_assert_str_eq(text.buf, "---\ntarget-met: true\n---\nSure.\n");
	cr_assert_eq(al_output_settle("out.md", "target-met", &why), 0);
	cr_assert_eq(al_output_settle("none.md", "target-met", &why), AL_ENOTFOUND);
	al_strbuf_release(&why);
	al_strbuf_release(&text);
	unit_leave_tmpdir();
}
