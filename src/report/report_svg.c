#include "ailoop/report/report.h"
#include "ailoop/exec/invoke.h"
#include "ailoop/base/util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
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

/*
 * A chart of class `kind`: a line over `n` points, `v[i]` labelled `label[i]` (its title), its dot
 * of class `cls[i]`, and a dashed line at `target` (NAN: none) named
 * `target_name`; the numbers written with `fmt`.
 */
static void line_chart(struct al_strbuf *out, const char *kind, size_t n, const double *v,
		       const char *const *label, const char *const *cls, double target,
		       const char *target_name, const char *fmt)
{
	double lo = INFINITY, hi = -INFINITY, half_span;
	char buf[64];

	for (size_t i = 0; i < n; i++) {
		lo = v[i] < lo ? v[i] : lo;
		hi = v[i] > hi ? v[i] : hi;
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
	al_strbuf_addf(out, "<svg class=\"chart %s\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
		       "role=\"img\">", kind, W, H, W, H);
#define X(i) (PAD_L + (n > 1 ? (double)(i) * (W - PAD_L - PAD_R) / (double)(n - 1) : 0.0))
#define Y(x) (PAD_T + (hi / 2 - (x) / 2) / half_span * (H - PAD_T - PAD_B))
	al_strbuf_addf(out, "<line class=\"axis\" x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/>",
		       PAD_L, H - PAD_B, W - PAD_R, H - PAD_B);
	snprintf(buf, sizeof(buf), fmt, hi);
	text(out, PAD_L - 4, Y(hi) + 4, "end", buf);
	if (hi > lo) {
		snprintf(buf, sizeof(buf), fmt, lo);
		text(out, PAD_L - 4, Y(lo) + 4, "end", buf);
	}
	if (!isnan(target)) {
		al_strbuf_addf(out, "<line class=\"target\" x1=\"%d\" y1=\"%.1f\" x2=\"%d\" "
			       "y2=\"%.1f\"/>", PAD_L, Y(target), W - PAD_R, Y(target));
		text(out, W - PAD_R, Y(target) - 3, "end", target_name);
	}
	al_strbuf_adds(out, "<polyline class=\"line\" points=\"");
	for (size_t i = 0; i < n; i++)
		al_strbuf_addf(out, "%s%.1f,%.1f", i ? " " : "", X(i), Y(v[i]));
	al_strbuf_adds(out, "\"/>");
	for (size_t i = 0; i < n && n <= 200; i++) { /* dots while they stay apart */
		al_strbuf_addf(out, "<circle class=\"%s\" cx=\"%.1f\" cy=\"%.1f\" r=\"3\"><title>",
			       cls[i], X(i), Y(v[i]));
		al_report_escape(out, label[i]);
		snprintf(buf, sizeof(buf), fmt, v[i]);
		al_strbuf_addf(out, ": %s</title></circle>", buf);
	}
	if (n) {
		text(out, X(0), H - 8, "start", label[0]);
		if (n > 1)
			text(out, X(n - 1), H - 8, "end", label[n - 1]);
	}
#undef X
#undef Y
	al_strbuf_adds(out, "</svg>\n");
}

size_t al_report_metric_points(const struct al_report *r, const char *node, const char *sensor,
			       const char *metric, double *last)
{
	const struct al_report_metric *m;
	size_t n = 0;

	for (size_t i = 0; i < r->nsteps; i++)
		if (!strcmp(r->steps[i].it.node_path, node) &&
		    (m = metric_of(&r->steps[i], sensor, metric))) {
			*last = m->value;
			n++;
		}
	return n;
}

void al_report_svg_metric(struct al_strbuf *out, const struct al_report *r, const char *node,
			  const char *sensor, const char *metric)
{
	double *v = al_calloc(r->nsteps + 1, sizeof(*v)), target = NAN;
	const char **label = al_calloc(r->nsteps + 1, sizeof(*label));
	const char **cls = al_calloc(r->nsteps + 1, sizeof(*cls));
	size_t n = 0;

	for (size_t i = 0; i < r->nsteps; i++) {
		const struct al_report_step *s = &r->steps[i];
		const struct al_report_metric *m;
		const struct al_sensor_status *ss;
		bool pass;

		if (strcmp(s->it.node_path, node) || !(m = metric_of(s, sensor, metric)))
			continue;
		pass = (ss = sensor_of(s, sensor)) && !strcmp(ss->status, "pass");
		if (pass)
			target = m->value; /* the value its sensor passed with */
		v[n] = m->value;
		label[n] = s->it.label;
		cls[n++] = pass ? "pass" : "fail";
	}
	line_chart(out, "metric", n, v, label, cls, target, "target (value when the sensor passed)",
		   "%g");
	free(v);
	free(label);
	free(cls);
}

void al_report_svg_cost(struct al_strbuf *out, const struct al_report *r)
{
	double *v = al_calloc(r->ncosts + 1, sizeof(*v));
	const char **label = al_calloc(r->ncosts + 1, sizeof(*label));
	const char **cls = al_calloc(r->ncosts + 1, sizeof(*cls));

	for (size_t i = 0; i < r->ncosts; i++) {
		v[i] = r->costs[i].usd;
		label[i] = r->costs[i].label ? r->costs[i].label : "-";
		cls[i] = "pass";
	}
	line_chart(out, "cost", r->ncosts, v, label, cls, NAN, NULL, "$%.4f");
	free(v);
	free(label);
	free(cls);
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
	int h = 4, row = 0;

	for (int i = 0; i < AL_REPORT_ROLES; i++) {
		if (r->role_ms[i] > max)
			max = r->role_ms[i];
		h += r->role_ms[i] > 0 ? 22 : 0;
	}
	al_strbuf_addf(out, "<svg class=\"chart roles\" width=\"%d\" height=\"%d\" "
		       "viewBox=\"0 0 %d %d\" role=\"img\">", W, h, W, h);
	for (int i = 0; i < AL_REPORT_ROLES; i++) {
		struct al_strbuf label = AL_STRBUF_INIT;
		double w = (double)r->role_ms[i] * (W - 80 - 120) / (double)max;

		if (r->role_ms[i] <= 0) /* a role no agent of the flow played */
			continue;
		text(out, 76, 22 * row + 17, "end", al_role_names[i]);
		al_strbuf_addf(out, "<rect class=\"bar\" x=\"80\" y=\"%d\" width=\"%.1f\" "
			       "height=\"16\"/>", 22 * row + 4, w);
		al_report_duration(&label, r->role_ms[i]);
		text(out, 84 + w, 22 * row + 17, "start", label.buf);
		al_strbuf_release(&label);
		row++;
	}
	al_strbuf_adds(out, "</svg>\n");
}
