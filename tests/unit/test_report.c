#include "ailoop/report/report.h"
#include "ailoop/base/strbuf.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

Test(report, escape_makes_markup_text)
{
	struct al_strbuf sb = AL_STRBUF_INIT;

	al_report_escape(&sb, "\"><img src=x onerror='alert(1)'>&<script>");
	cr_assert_str_eq(sb.buf, "&quot;&gt;&lt;img src=x onerror=&#39;alert(1)&#39;&gt;&amp;"
			 "&lt;script&gt;");
	al_strbuf_reset(&sb);
	al_report_escape(&sb, NULL);
	cr_assert_str_eq(sb.buf, "");
	al_strbuf_release(&sb);
}

Test(report, durations_read_at_a_glance)
{
	struct al_strbuf sb = AL_STRBUF_INIT;

	al_report_duration(&sb, 450);
	al_strbuf_adds(&sb, ", ");
	al_report_duration(&sb, 12345);
	al_strbuf_adds(&sb, ", ");
	al_report_duration(&sb, 185000);
	al_strbuf_adds(&sb, ", ");
	al_report_duration(&sb, 3720000);
	cr_assert_str_eq(sb.buf, "450 ms, 12.3s, 3m 05s, 1h 02m");
	al_strbuf_release(&sb);
}

Test(report, seconds_between_timestamps)
{
	cr_assert_eq(al_report_seconds("2026-11-21T10:00:00Z", "2026-11-21T11:01:05Z"), 3665);
	cr_assert_eq(al_report_seconds("2026-11-21T10:00:00Z", "garbage"), -1);
	cr_assert_eq(al_report_seconds(NULL, "2026-11-21T10:00:00Z"), -1);
	cr_assert_eq(al_report_seconds("2026-11-21T10:00:01Z", "2026-11-21T10:00:00Z"), -1);
}

Test(report, a_negative_duration_is_unknown)
{
	struct al_strbuf sb = AL_STRBUF_INIT;

	al_report_duration(&sb, -5000000);
	cr_assert_str_eq(sb.buf, "time unknown");
	al_strbuf_release(&sb);
}

Test(report, a_verdict_names_the_iteration_it_judged)
{
	static const char *const labels[][2] = {
		{ "1.3", "1.2" }, { "2", "1" }, { "1.2.10", "1.2.9" }, { "0", NULL }, { "1.0", NULL },
		{ "1.x", NULL }, { "", NULL },
	};

	for (size_t i = 0; i < sizeof(labels) / sizeof(*labels); i++) {
		struct al_report_step s = { 0 };
		char *judged;

		s.it.label = (char *)labels[i][0];
		judged = al_report_judged(&s);
		if (labels[i][1])
			cr_assert_str_eq(judged, labels[i][1], "%s", labels[i][0]);
		else
			cr_assert_null(judged, "%s", labels[i][0]);
		free(judged);
	}
}
