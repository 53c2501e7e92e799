/* goodput.c -- the goodput estimate and the co-adaptation rule
 * (goodput.h; docs/trainer.md, "Goodput and co-adaptation").
 */
#include "goodput.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

const char *gns_format(double phi, char *buf, size_t len)
{
	if (!isfinite(phi) || phi <= 0)
		snprintf(buf, len, "not known yet");
	else if (phi >= GNS_MAX)
		snprintf(buf, len, "above 1e9"); /* GNS_MAX */
	else
		snprintf(buf, len, "%.0f", phi);
	return buf;
}

void gns_add(struct gns *g, double b_small, double sq_small, double b_big,
	     double sq_big)
{
	double g2, tr;

	if (!(b_small >= 1 && b_big > b_small) || !isfinite(sq_small) ||
	    !isfinite(sq_big) || sq_small < 0 || sq_big < 0)
		return;
	/* unbiased each (McCandlish et al., A.1): E|G_b|^2 = |G|^2 +
	 * tr(Sigma) / b at both sizes, solved for the two unknowns; one
	 * measurement may make either negative, their means do not */
	g2 = (b_big * sq_big - b_small * sq_small) / (b_big - b_small);
	tr = (sq_small - sq_big) / (1.0 / b_small - 1.0 / b_big);
	g->g2 = (1 - GNS_ALPHA) * g->g2 + GNS_ALPHA * g2;
	g->tr = (1 - GNS_ALPHA) * g->tr + GNS_ALPHA * tr;
	g->n++;
}

double gns_scale(const struct gns *g)
{
	double phi;

	if (g->n < GNS_WARMUP)
		return 0;
	if (g->tr <= 0)
		return 1;  /* no noise to speak of: every batch is large */
	if (g->g2 <= 0)
		return GNS_MAX;
	phi = g->tr / g->g2;
	return phi < 1 ? 1 : phi > GNS_MAX ? GNS_MAX : phi;
}

double goodput_efficiency(double phi, double m0, double m)
{
	double e;

	if (phi <= 0 || m0 <= 0 || m <= 0)
		return 1;
	e = (phi + m0) / (phi + m);
	return e < 1 ? e : 1;
}

void goodput_decide(double phi, uint32_t m0, uint32_t k,
		    uint32_t *ret_batch, double *ret_lr_scale)
{
	double crit, s;
	uint32_t lo = m0 / 8 ? m0 / 8 : 1, b;

	*ret_batch = m0;
	*ret_lr_scale = 1;
	if (phi <= 0 || !k || !m0)
		return;
	crit = phi > m0 ? phi : m0;
	b = crit / k >= m0 ? m0 : (uint32_t)ceil(crit / k);
	b = b < lo ? lo : b;
	/* even, as the workers measure a minibatch's two halves */
	b += b % 2 && b < m0;
	s = (double)k * b / m0;
	*ret_batch = b;
	/* AdaScale's gain (Johnson et al. 2020): (tr/m0 + |G|^2) /
	 * (tr/m + |G|^2) = S x efficiency(m) */
	*ret_lr_scale = s * goodput_efficiency(phi, m0, (double)k * b);
}

uint32_t goodput_clock_batches(uint32_t kb0, uint32_t m0, uint32_t b)
{
	uint64_t kb;

	if (!b || b >= m0)
		return kb0;
	kb = ((uint64_t)kb0 * m0 + b - 1) / b;
	return kb > GP_CLOCK_BATCHES_MAX ? GP_CLOCK_BATCHES_MAX
					 : (uint32_t)kb;
}

void gp_init(struct gp *g, uint32_t m0, uint32_t kb0, bool adapt,
	     bool adapt_clock)
{
	*g = (struct gp){ .adapt = adapt, .m0 = m0, .batch = m0,
			  .lr_scale = 1, .kb0 = kb0, .kb = kb0,
			  .adapt_clock = adapt_clock };
	g->tl = calloc(GP_TIMELINE_MAX, sizeof(*g->tl));
}

void gp_free(struct gp *g)
{
	free(g->tl);
	g->tl = NULL;
}

void gp_clock(struct gp *g, uint32_t batch, uint32_t batches,
	      double sq_small, double sq_big)
{
	if (batches >= 2)
		gns_add(&g->gns, batch, sq_small, (double)batch * batches,
			sq_big);
}

static struct gp_sample sample(const struct gp *g, uint32_t k,
			       int64_t clock, double t)
{
	return (struct gp_sample){
		.t = t, .workers = k, .batch = g->batch,
		.clock_batches = g->kb,
		.lr_scale = g->lr_scale, .samples_per_s = g->rate,
		.efficiency = g->efficiency, .goodput = g->goodput,
		.noise_scale = gns_scale(&g->gns), .test_accuracy = NAN,
		.clock = clock };
}

bool gp_decide(struct gp *g, uint32_t k, int64_t clock, double t)
{
	double phi = gns_scale(&g->gns), lr;
	uint32_t b, kb;

	if (!g->adapt || !k || (k == g->k && (g->with_phi || phi <= 0)))
		return false;
	g->k = k;
	g->with_phi = phi > 0;
	goodput_decide(phi, g->m0, k, &b, &lr);
	kb = g->adapt_clock ? goodput_clock_batches(g->kb0, g->m0, b)
			    : g->kb0;
	if (b == g->batch && lr == g->lr_scale && kb == g->kb)
		return false;
	g->batch = b;
	g->lr_scale = lr;
	g->kb = kb;
	if (g->n_ev < GP_EVENTS_MAX) {
		/* the efficiency decided for; the rates are the last
		 * report's */
		g->ev[g->n_ev] = sample(g, k, clock, t);
		g->ev[g->n_ev++].efficiency = goodput_efficiency(
			phi, g->m0, (double)k * b);
	}
	return true;
}

void gp_report(struct gp *g, uint64_t samples, uint64_t now_us, double t,
	       uint32_t k, int64_t clock, double acc)
{
	double phi = gns_scale(&g->gns);

	if (g->us && now_us > g->us && samples >= g->samples)
		g->rate = (double)(samples - g->samples) * 1e6 /
			  (double)(now_us - g->us);
	g->samples = samples;
	g->us = now_us;
	/* the total batch of a clock's step: k workers' minibatches */
	g->efficiency = phi > 0 ? goodput_efficiency(phi, g->m0,
						     (double)k * g->batch) : 0;
	g->goodput = g->rate * g->efficiency;
	if (g->tl && g->n_tl < GP_TIMELINE_MAX) {
		g->tl[g->n_tl] = sample(g, k, clock, t);
		g->tl[g->n_tl++].test_accuracy = acc;
	}
}

static json_t *samples_json(const struct gp_sample *s, uint32_t n)
{
	json_t *a = json_array();

	for (uint32_t i = 0; a && i < n; i++)
		json_array_append_new(a, json_pack(
			"{s:f, s:I, s:i, s:i, s:i, s:f, s:f, s:f, s:f, s:f, "
			"s:o}",
			"t", s[i].t, "clock", (json_int_t)s[i].clock,
			"workers", (int)s[i].workers, "batch",
			(int)s[i].batch, "clock_batches",
			(int)s[i].clock_batches, "lr_scale", s[i].lr_scale,
			"samples_per_s", s[i].samples_per_s,
			"efficiency", s[i].efficiency,
			"goodput", s[i].goodput,
			"noise_scale", s[i].noise_scale, "test_accuracy",
			isnan(s[i].test_accuracy) ? json_null()
				: json_real(s[i].test_accuracy)));
	return a;
}

json_t *gp_json(const struct gp *g)
{
	return json_pack("{s:b, s:f, s:i, s:f, s:i, s:f, s:f, s:o, s:o}",
			 "adapt", g->adapt, "noise_scale", gns_scale(&g->gns),
			 "batch", (int)g->batch, "lr_scale", g->lr_scale,
			 "clock_batches", (int)g->kb,
			 "efficiency", g->efficiency, "goodput", g->goodput,
			 "decisions", samples_json(g->ev, g->n_ev),
			 "timeline", samples_json(g->tl, g->n_tl));
}
