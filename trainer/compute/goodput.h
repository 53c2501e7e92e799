/* goodput.h -- the coordinator's goodput estimate and its co-adaptation
 * rule (docs/trainer.md, "Goodput and co-adaptation"), as Pollux (Qiao et
 * al., OSDI 2021) has them: the gradient noise scale from two squared
 * gradient norms at two batch sizes (McCandlish et al. 2018, appendix
 * A.1), the statistical efficiency of a total batch against the job's
 * own, goodput = throughput x efficiency; and on a change of workers the
 * per-worker batch that keeps the total near the critical batch, with
 * AdaScale's gain on the learning rate.  Pure functions: no I/O.
 */
#ifndef PX_GOODPUT_H
#define PX_GOODPUT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Smoothing of the two estimates (an exponential mean of each, from 0:
 * their ratio needs no correction for the start), and the measurements before the noise
 * scale counts as known. */
#define GNS_ALPHA 0.02
#define GNS_WARMUP 16
#define GNS_MAX 1e9          /* a noise scale this large: all noise
				 (gns_format writes "above 1e9") */

struct gns {
	double g2;           /* |G|^2: the true gradient's squared norm */
	double tr;           /* tr(Sigma): one example's gradient variance */
	uint32_t n;          /* measurements taken */
};

/* One measurement: sq_small, the mean squared norm of gradients over
 * b_small examples, and sq_big, that of one over b_big > b_small
 * examples.  Ignored when the sizes or values make no sense. */
void gns_add(struct gns *g, double b_small, double sq_small, double b_big,
	     double sq_big);
/* The noise scale tr(Sigma) / |G|^2 in examples (GNS_MAX when |G|^2 is
 * not above 0), or 0 before GNS_WARMUP measurements. */
double gns_scale(const struct gns *g);
/* A noise scale phi for a person: "above 1e9" at the bound (all noise:
 * a clamp, not a measured number), "not known yet" at 0 or below (or not
 * finite), else the whole number.  Into buf[len]; returns buf. */
const char *gns_format(double phi, char *buf, size_t len);

/* Statistical efficiency of a total batch m against the batch m0 the
 * learning rate was set for: the progress per example at m relative to
 * m0's, (phi + m0) / (phi + m), at most 1; 1 when phi is 0 (unknown). */
double goodput_efficiency(double phi, double m0, double m);

/* The co-adaptation rule for k workers of a job whose --batch is m0,
 * under noise scale phi (0: unknown): each worker's minibatch, the
 * critical batch max(m0, phi) shared among them (rounded up, to an even
 * number below m0), within [max(1, m0 / 8), m0] (m0 bounds the buffers the workers allocated);
 * and the lr factor, AdaScale's gain S x efficiency for the total batch
 * (S its ratio to m0): 1 to S for S >= 1.  phi 0: m0 and 1. */
void goodput_decide(double phi, uint32_t m0, uint32_t k,
		    uint32_t *ret_batch, double *ret_lr_scale);

/* The most minibatches in a clock (DIST_CLOCK_BATCHES_MAX). */
#define GP_CLOCK_BATCHES_MAX 4096

/* The clock's length for a worker minibatch b of a job whose --batch is
 * m0 and --clock-batches kb0: ceil(kb0 x m0 / b), so that a clock trains
 * about the examples it did at m0 and a push carries as many examples'
 * updates as the user chose (a quiet job's small minibatches would
 * otherwise push k times as often per example); kb0 where b >= m0, at
 * most GP_CLOCK_BATCHES_MAX. */
uint32_t goodput_clock_batches(uint32_t kb0, uint32_t m0, uint32_t b);

/* The coordinator's state: the estimate, the decision in force, and a
 * timeline of the reports for --json (at most GP_TIMELINE_MAX samples,
 * the later ones dropped; GP_EVENTS_MAX decisions likewise). */
#define GP_TIMELINE_MAX 4096
#define GP_EVENTS_MAX 256

struct gp_sample {
	double t;            /* s since the job's start */
	uint32_t workers, batch, clock_batches;
	double lr_scale, samples_per_s, efficiency, goodput, noise_scale;
	double test_accuracy;  /* the last evaluation's (NaN: none) */
	int64_t clock;
};

struct gp {
	struct gns gns;
	bool adapt;          /* co-adapt on joins and leaves (--adapt) */
	uint32_t m0;         /* the job's --batch */
	uint32_t batch;      /* each worker's minibatch now */
	double lr_scale;     /* the lr factor now */
	uint32_t kb0;        /* the job's --clock-batches */
	bool adapt_clock;    /* adapt the clock's length too */
	uint32_t kb;         /* minibatches in a clock now */
	uint32_t k;          /* workers of the last decision (0: none) */
	bool with_phi;       /* ... made with the noise scale known */
	/* the last report: throughput since the one before */
	uint64_t samples, us;
	double rate, efficiency, goodput;
	struct gp_sample *tl;
	uint32_t n_tl;
	struct gp_sample ev[GP_EVENTS_MAX];
	uint32_t n_ev;
};

/* adapt: co-adaptation on; m0: --batch; kb0: --clock-batches, adapted
 * with the batch where adapt_clock (goodput_clock_batches).
 * PX_ENOMEM-free: the timeline is allocated here and may stay NULL (then
 * nothing is kept). */
void gp_init(struct gp *g, uint32_t m0, uint32_t kb0, bool adapt,
	     bool adapt_clock);
void gp_free(struct gp *g);
/* One worker's CLOCK (its minibatch and measurements). */
void gp_clock(struct gp *g, uint32_t batch, uint32_t batches,
	      double sq_small, double sq_big);
/* Decide for k workers now (a join or a leave, or the noise scale just
 * known) when k or the knowledge changed; whether the batch, the lr
 * factor or the clock's length changed (the decision is then the last of
 * g->ev). */
bool gp_decide(struct gp *g, uint32_t k, int64_t clock, double t);
/* A report: the throughput since the last one (samples done in all,
 * now_us), its efficiency at k workers, into the timeline with the last
 * test accuracy (acc). */
void gp_report(struct gp *g, uint64_t samples, uint64_t now_us, double t,
	       uint32_t k, int64_t clock, double acc);
/* {"adapt", "noise_scale", "batch", "lr_scale", "clock_batches",
 * "efficiency", "goodput", "decisions": [...], "timeline": [...]}; NULL
 * on OOM. */
json_t *gp_json(const struct gp *g);

#endif
