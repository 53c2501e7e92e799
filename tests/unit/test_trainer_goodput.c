/* test_trainer_goodput.c -- the goodput estimate and the co-adaptation
 * rule (trainer/compute/goodput.h): the noise scale recovered from norms of known
 * |G|^2 and tr(Sigma), the efficiency, the rule's batch and lr factor,
 * and the coordinator's state deciding only on a change. */
#include <criterion/criterion.h>
#include <math.h>

#include "../../trainer/compute/goodput.h"
#include "../../trainer/compute/kern.h"

/* E|G_b|^2 = |G|^2 + tr / b: the norms a gradient of b examples has on
 * average. */
static double sq(double g2, double tr, double b)
{
	return g2 + tr / b;
}

Test(goodput, noise_scale_recovered)
{
	struct gns g = {0};
	double g2 = 0.25, tr = 100.0;

	for (int i = 0; i < GNS_WARMUP - 1; i++)
		gns_add(&g, 32, sq(g2, tr, 32), 64, sq(g2, tr, 64));
	cr_assert_eq(gns_scale(&g), 0, "known before the warm-up");
	/* another pair of sizes measures the same */
	gns_add(&g, 10, sq(g2, tr, 10), 80, sq(g2, tr, 80));
	cr_assert_float_eq(gns_scale(&g), tr / g2, 1e-6 * tr / g2);
	/* nonsense is ignored: sizes not increasing, not finite, < 0 */
	gns_add(&g, 64, 1, 32, 1);
	gns_add(&g, 32, NAN, 64, 1);
	gns_add(&g, 32, -1, 64, 1);
	cr_assert_eq(g.n, GNS_WARMUP);
	cr_assert_float_eq(gns_scale(&g), tr / g2, 1e-6 * tr / g2);
}

Test(goodput, noise_scale_bounds)
{
	struct gns g = {0};

	/* all noise: the small batch's norm far above, |G|^2 <= 0 */
	for (int i = 0; i < GNS_WARMUP; i++)
		gns_add(&g, 32, 10, 64, 4);
	cr_assert_eq(gns_scale(&g), GNS_MAX);
	/* no noise: both norms equal */
	g = (struct gns){0};
	for (int i = 0; i < GNS_WARMUP; i++)
		gns_add(&g, 32, 2, 64, 2);
	cr_assert_eq(gns_scale(&g), 1);
}

Test(goodput, efficiency)
{
	cr_assert_float_eq(goodput_efficiency(100, 64, 64), 1, 1e-12);
	cr_assert_float_eq(goodput_efficiency(100, 64, 256), 164.0 / 356,
			   1e-12);
	cr_assert_eq(goodput_efficiency(100, 64, 32), 1, "at most 1");
	cr_assert_eq(goodput_efficiency(0, 64, 256), 1, "unknown: 1");
}

Test(goodput, decide_rule)
{
	uint32_t b;
	double lr;

	/* unknown noise scale: the job's batch and lr */
	goodput_decide(0, 64, 4, &b, &lr);
	cr_assert_eq(b, 64);
	cr_assert_eq(lr, 1);
	/* noise scale above k x m0: every worker keeps m0, the lr grows by
	 * AdaScale's gain S x E (S = 4) */
	goodput_decide(1000, 64, 4, &b, &lr);
	cr_assert_eq(b, 64);
	cr_assert_float_eq(lr, 4 * 1064.0 / 1256, 1e-12);
	cr_assert(lr > 1 && lr < 4);
	/* noise scale between: the critical batch shared, rounded up to
	 * even: 196 / 4 = 49 -> 50, S = 200/64 */
	goodput_decide(196, 64, 4, &b, &lr);
	cr_assert_eq(b, 50);
	cr_assert_float_eq(lr, 200.0 / 64 * 260.0 / 396, 1e-12);
	/* below m0: the total stays m0, the lr too */
	goodput_decide(20, 64, 2, &b, &lr);
	cr_assert_eq(b, 32);
	cr_assert_float_eq(lr, 1, 1e-12);
	/* not below m0 / 8 */
	goodput_decide(20, 64, 16, &b, &lr);
	cr_assert_eq(b, 8);
	cr_assert_float_eq(lr, 2 * 84.0 / 148, 1e-12);
	/* one worker: m0 and 1 whatever the noise */
	goodput_decide(5000, 64, 1, &b, &lr);
	cr_assert_eq(b, 64);
	cr_assert_float_eq(lr, 1, 1e-12);
}

Test(goodput, state_decides_on_changes_only)
{
	struct gp g;

	gp_init(&g, 64, 8, true, true);
	cr_assert_not(gp_decide(&g, 2, 0, 0), "nothing known: no change");
	for (int i = 0; i < GNS_WARMUP; i++)
		gp_clock(&g, 32, 2, sq(1, 1000, 32), sq(1, 1000, 64));
	cr_assert(gp_decide(&g, 2, 5, 0.1), "the noise scale now known");
	cr_assert_eq(g.batch, 64);
	cr_assert_float_eq(g.lr_scale, 2 * 1064.0 / 1128, 1e-9);
	cr_assert_eq(g.n_ev, 1);
	cr_assert_not(gp_decide(&g, 2, 6, 0.2), "no join, no leave");
	cr_assert(gp_decide(&g, 1, 7, 0.3), "a leave");
	cr_assert_eq(g.lr_scale, 1);
	cr_assert_eq(g.ev[1].workers, 1);
	cr_assert_eq(g.ev[1].clock, 7);
	/* a report: throughput since the last, the efficiency at k x b */
	gp_report(&g, 1000, 1000000, 1, 1, 7, NAN);
	gp_report(&g, 3000, 2000000, 2, 2, 8, 0.5);
	cr_assert_float_eq(g.rate, 2000, 1e-9);
	cr_assert_float_eq(g.efficiency, 1064.0 / 1128, 1e-9);
	cr_assert_float_eq(g.goodput, 2000 * 1064.0 / 1128, 1e-6);
	cr_assert_eq(g.n_tl, 2);
	cr_assert(isnan(g.tl[0].test_accuracy));
	cr_assert_eq(g.tl[1].test_accuracy, 0.5);
	gp_free(&g);
	/* off: measured, never decided */
	gp_init(&g, 64, 8, false, true);
	for (int i = 0; i < GNS_WARMUP; i++)
		gp_clock(&g, 32, 2, sq(1, 1000, 32), sq(1, 1000, 64));
	cr_assert_not(gp_decide(&g, 4, 5, 0.1));
	cr_assert_eq(g.batch, 64);
	cr_assert_gt(gns_scale(&g.gns), 0);
	gp_free(&g);
}

Test(goodput, sqnorm)
{
	float x[5] = { 1, -2, 3, 0.5f, 0 };

	cr_assert_float_eq(kern_sqnorm(x, 5), 14.25, 1e-12);
	cr_assert_eq(kern_sqnorm(x, 0), 0);
}

/* The CPU table's sqnorm is kern_sqnorm (the CUDA one: gpu/sqnorm_vs_cpu);
 * a noise scale at its bound is shown as a bound, not as a number. */
Test(goodput, sqnorm_op_and_format)
{
	float x[3] = { 3, 4, 0 };
	struct px_error err = { 0 };
	double r = -1;
	char b[32];

	cr_assert_eq(kern_cpu_ops.sqnorm(NULL, x, 3, &r, &err), PX_OK);
	cr_assert_float_eq(r, 25.0, 1e-12);
	cr_assert_str_eq(gns_format(GNS_MAX, b, sizeof b), "above 1e9");
	cr_assert_str_eq(gns_format(2 * GNS_MAX, b, sizeof b), "above 1e9");
	cr_assert_str_eq(gns_format(0, b, sizeof b), "not known yet");
	cr_assert_str_eq(gns_format(NAN, b, sizeof b), "not known yet");
	cr_assert_str_eq(gns_format(1234.4, b, sizeof b), "1234");
}

/* A smaller minibatch makes a clock of more of them: as many examples a
 * push as at --batch (rounded up), bounded (--adapt-clock); without it
 * the clock stays. */
Test(goodput, clock_batches_follow_the_batch)
{
	struct gp g;

	cr_assert_eq(goodput_clock_batches(8, 128, 128), 8);
	cr_assert_eq(goodput_clock_batches(8, 128, 256), 8);
	cr_assert_eq(goodput_clock_batches(8, 128, 64), 16);
	cr_assert_eq(goodput_clock_batches(1, 128, 48), 3);
	cr_assert_eq(goodput_clock_batches(4096, 128, 16), GP_CLOCK_BATCHES_MAX);
	cr_assert_eq(goodput_clock_batches(3, 128, 0), 3);

	/* a quiet job (noise scale 1: the critical batch is m0) on 4
	 * workers: each trains m0 / 4 = 16, four times the minibatches */
	gp_init(&g, 64, 2, true, true);
	for (int i = 0; i < GNS_WARMUP; i++)
		gp_clock(&g, 32, 2, sq(1, 0, 32), sq(1, 0, 64));
	cr_assert(gp_decide(&g, 4, 5, 0.1));
	cr_assert_eq(g.batch, 16);
	cr_assert_eq(g.kb, 8);
	cr_assert_eq(g.ev[0].clock_batches, 8);
	cr_assert(gp_decide(&g, 1, 6, 0.2), "a leave");
	cr_assert_eq(g.batch, 64);
	cr_assert_eq(g.kb, 2);
	gp_free(&g);
	gp_init(&g, 64, 2, true, false);
	for (int i = 0; i < GNS_WARMUP; i++)
		gp_clock(&g, 32, 2, sq(1, 0, 32), sq(1, 0, 64));
	cr_assert(gp_decide(&g, 4, 5, 0.1));
	cr_assert_eq(g.batch, 16);
	cr_assert_eq(g.kb, 2, "without --adapt-clock");
	gp_free(&g);
}
