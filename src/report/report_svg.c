#include "ailoop/report/report.h"
#include "ailoop/exec/invoke.h"
#include "ailoop/base/util.h"

#include <math.h>
#include <string.h>

#define W 640      /* chart width */
#define H 180      /* metric chart height */
#define PAD_L 48   /* room for the axis labels */
#define PAD_R 12
#define PAD_T 12
#define PAD_B 24

static const struct al_sensor_status *sensor_of(const struct al_report_step *s, const char *name)
{
	for (size_t k = 0; k < s->it.nsensors; k++)
		if (!strcmp(s->it.sensors[k].name, name))
			return &s->it.sensors[k];
	return NULL;
}

static const struct al_report_metric *metric_of(const struct al_report_step *s,
						const char *sensor, const char *name)
{
	for (size_t k = 0; k < s->nmetrics; k++)
		if (!strcmp(s->metrics[k].sensor, sensor) && !strcmp(s->metrics[k].name, name))
			return &s->metrics[k];
	return NULL;
}

static void text(struct al_strbuf *out, double x, double y, const char *anchor, const char *s)
{
	al_strbuf_addf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\">", x, y, anchor);
	al_report_escape(out, s);
	al_strbuf_adds(out, "</text>");
}

static void number_text(struct al_strbuf *out, double x, double y, double v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%g", v);
	text(out, x, y, "end", buf);
}

void al_report_svg_metric(struct al_strbuf *out, const struct al_report *r, const char *node,
			  const char *sensor, const char *metric)
{
	const struct al_report_step **pts = al_calloc(r->nsteps + 1, sizeof(*pts));
	const struct al_report_metric *m;
	double lo = INFINITY, hi = -INFINITY, target = NAN, half_span;
	size_t n = 0;

	for (size_t i = 0; i < r->nsteps; i++) {
		const struct al_report_step *s = &r->steps[i];
		const struct al_sensor_status *ss;

		if (strcmp(s->it.node_path, node) || !(m = metric_of(s, sensor, metric)))
			continue;
		pts[n++] = s;
		lo = m->value < lo ? m->value : lo;
		hi = m->value > hi ? m->value : hi;
		if ((ss = sensor_of(s, sensor)) && !strcmp(ss->status, "pass"))
			target = m->value; /* the value its sensor passed with */
	}
	if (!isnan(target)) {
		lo = target < lo ? target : lo;
		hi = target > hi ? target : hi;
	}
	/*
	 * Halves, divided before they are scaled: hi - lo of two finite values
	 * overflows past DBL_MAX (1e308 and -1e308), and the chart's every
	 * coordinate would be nan. A fraction of the span never does.
	 */
	half_span = hi > lo ? hi / 2 - lo / 2 : 0.5;
	al_strbuf_addf(out, "<svg class=\"chart metric\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
		       "role=\"img\">", W, H, W, H);
#define X(i) (PAD_L + (n > 1 ? (double)(i) * (W - PAD_L - PAD_R) / (double)(n - 1) : 0.0))
#define Y(v) (PAD_T + (hi / 2 - (v) / 2) / half_span * (H - PAD_T - PAD_B))
	al_strbuf_addf(out, "<line class=\"axis\" x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/>",
		       PAD_L, H - PAD_B, W - PAD_R, H - PAD_B);
	number_text(out, PAD_L - 4, Y(hi) + 4, hi);
	if (hi > lo)
		number_text(out, PAD_L - 4, Y(lo) + 4, lo);
	if (!isnan(target)) {
		al_strbuf_addf(out, "<line class=\"target\" x1=\"%d\" y1=\"%.1f\" x2=\"%d\" "
			       "y2=\"%.1f\"/>", PAD_L, Y(target), W - PAD_R, Y(target));
		text(out, W - PAD_R, Y(target) - 3, "end", "target (value when the sensor passed)");
	}
	al_strbuf_adds(out, "<polyline class=\"line\" points=\"");
	for (size_t i = 0; i < n; i++)
		al_strbuf_addf(out, "%s%.1f,%.1f", i ? " " : "", X(i),
			       Y(metric_of(pts[i], sensor, metric)->value));
	al_strbuf_adds(out, "\"/>");
	for (size_t i = 0; i < n && n <= 200; i++) { /* dots while they stay apart */
		const struct al_sensor_status *ss = sensor_of(pts[i], sensor);

		al_strbuf_addf(out, "<circle class=\"%s\" cx=\"%.1f\" cy=\"%.1f\" r=\"3\"><title>",
			       ss && !strcmp(ss->status, "pass") ? "pass" : "fail", X(i),
			       Y(metric_of(pts[i], sensor, metric)->value));
		al_report_escape(out, pts[i]->it.label);
		al_strbuf_addf(out, ": %g</title></circle>", metric_of(pts[i], sensor, metric)->value);
	}
	if (n) {
		text(out, X(0), H - 8, "start", pts[0]->it.label);
		if (n > 1)
			text(out, X(n - 1), H - 8, "end", pts[n - 1]->it.label);
	}
#undef X
#undef Y
	al_strbuf_adds(out, "</svg>\n");
	free(pts);
}

void al_report_svg_strip(struct al_strbuf *out, const struct al_report *r, const char *node,
			 const char *sensor)
{
	size_t n = 0, i = 0;
	double cell;

	for (size_t k = 0; k < r->nsteps; k++)
		n += !strcmp(r->steps[k].it.node_path, node) && sensor_of(&r->steps[k], sensor);
	cell = n ? (double)(W - PAD_L - PAD_R) / (double)n : 0;
	al_strbuf_addf(out, "<svg class=\"chart strip\" width=\"%d\" height=\"22\" "
		       "viewBox=\"0 0 %d 22\" role=\"img\">", W, W);
	for (size_t k = 0; k < r->nsteps; k++) {
		const struct al_report_step *s = &r->steps[k];
		const struct al_sensor_status *ss;

		if (strcmp(s->it.node_path, node) || !(ss = sensor_of(s, sensor)))
			continue;
		al_strbuf_addf(out, "<rect class=\"%s\" x=\"%.2f\" y=\"2\" width=\"%.2f\" "
			       "height=\"18\"><title>", !strcmp(ss->status, "pass") ? "pass"
			       : !strcmp(ss->status, "pending") ? "pending"
			       : !strcmp(ss->status, "partial") ? "partial" : "fail",
			       PAD_L + (double)i * cell, cell > 1.5 ? cell - 1 : cell);
		al_report_escape(out, s->it.label);
		al_strbuf_addf(out, ": %s</title></rect>", ss->status);
		i++;
	}
	al_strbuf_adds(out, "</svg>\n");
}

void al_report_svg_roles(struct al_strbuf *out, const struct al_report *r)
{
	int64_t max = 1;
	int h = 22 * AL_REPORT_ROLES + 4;

	for (int i = 0; i < AL_REPORT_ROLES; i++)
		if (r->role_ms[i] > max)
			max = r->role_ms[i];
	al_strbuf_addf(out, "<svg class=\"chart roles\" width=\"%d\" height=\"%d\" "
		       "viewBox=\"0 0 %d %d\" role=\"img\">", W, h, W, h);
	for (int i = 0; i < AL_REPORT_ROLES; i++) {
		struct al_strbuf label = AL_STRBUF_INIT;
		double w = (double)r->role_ms[i] * (W - 80 - 120) / (double)max;

		text(out, 76, 22 * i + 17, "end", al_role_names[i]);
		al_strbuf_addf(out, "<rect class=\"bar\" x=\"80\" y=\"%d\" width=\"%.1f\" "
			       "height=\"16\"/>", 22 * i + 4, w);
		al_report_duration(&label, r->role_ms[i]);
		text(out, 84 + w, 22 * i + 17, "start", label.buf);
		al_strbuf_release(&label);
	}
	al_strbuf_adds(out, "</svg>\n");
}
