/* test_arbiter.c -- dividing a pool among jobs (bidbrain/arbiter.c): each
 * arbiter's rule on small pools worked out by hand in the comments, gang
 * admission of the reliable tiers, weights, and a property: whatever the
 * jobs and limits, the shares never take the pool past a limit. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../bidbrain/arbiter.h"

#define MAXU 64

/* rates[j][n]: the tier does `tier` work an hour, each spot unit adds
 * eff^k (a concave fleet) */
static double rates[8][MAXU + 1];

static struct arb_job mk(int slot, double tier, double eff, int max,
			 double work)
{
	double r = tier, add = 1;

	for (int n = 0; n <= max; n++) {
		rates[slot][n] = r;
		r += add;
		add *= eff;
	}
	return (struct arb_job){
		.weight = 1, .arrival_h = 0, .group = POOL_G_STANDARD,
		.unit_vcpus = 4, .unit_uusd = 100000,
		.tier_group = POOL_G_STANDARD, .tier_vcpus = 4,
		.tier_uusd = 200000, .want = max, .max = max,
		.rate = rates[slot], .work_left_h = work,
		.work_total_h = work,
	};
}

static struct pool_limits spot_only(int64_t vcpus)
{
	struct pool_limits l;

	pool_limits_none(&l);
	l.spot.total = vcpus;
	return l;
}

static void decide(enum arb_kind k, const struct pool_limits *l,
		   struct arb_job *v, size_t n)
{
	struct arb_setup s = {.kind = k, .fairness = 1, .limits = l};
	struct px_error err = {0};

	cr_assert_eq(arb_decide(&s, v, n, &err), PX_OK, "%s", err.msg);
}

Test(arbiter, names_round_trip)
{
	struct px_error err = {0};
	enum arb_kind k;

	for (int i = 0; i < ARB_KINDS; i++) {
		cr_assert_eq(arb_lookup(arb_name(i), &k, &err), PX_OK);
		cr_assert_eq(k, (enum arb_kind)i);
	}
	cr_assert_eq(arb_lookup("themis", &k, &err), PX_EINVAL);
	cr_assert(strstr(err.msg, "finish-time"));
}

/* Room for every want: every arbiter gives each job all it wants. */
Test(arbiter, wants_that_fit_are_met)
{
	struct pool_limits l = spot_only(1000);

	for (int k = 0; k < ARB_KINDS; k++) {
		struct arb_job v[2] = {mk(0, 1, 0.9, 8, 100),
				       mk(1, 1, 0.9, 5, 10)};

		v[1].want = 3;
		decide(k, &l, v, 2);
		cr_assert(v[0].admit && v[1].admit);
		cr_assert_eq(v[0].share, 8, "%s", arb_name(k));
		cr_assert_eq(v[1].share, 3, "%s", arb_name(k));
	}
}

/* 16 spot vCPUs = 4 units.  fifo: the first to come takes its 4; the
 * other none.  max-min: 2 and 2; with weight 3 against 1: 3 and 1. */
Test(arbiter, fifo_and_max_min)
{
	struct pool_limits l = spot_only(16);
	struct arb_job v[2] = {mk(0, 1, 0.9, 4, 50), mk(1, 1, 0.9, 4, 50)};

	v[1].arrival_h = 1;
	decide(ARB_FIFO, &l, v, 2);
	cr_assert_eq(v[0].share, 4);
	cr_assert_eq(v[1].share, 0);
	v[0].share = v[1].share = 0;
	decide(ARB_MAX_MIN, &l, v, 2);
	cr_assert_eq(v[0].share, 2);
	cr_assert_eq(v[1].share, 2);
	v[0].share = v[1].share = 0;
	v[1].weight = 3;
	decide(ARB_MAX_MIN, &l, v, 2);
	cr_assert_eq(v[0].share, 1);
	cr_assert_eq(v[1].share, 3);
}

/* goodput: job 0's units add 1, 0.9, 0.81, 0.73...; job 1's 1, 0.2,
 * 0.04...  4 units: job 0's first (the tie goes to the first to come),
 * job 1's first (1 > 0.9), then job 0's 0.9 and 0.81. */
Test(arbiter, goodput_goes_where_it_adds_most)
{
	struct pool_limits l = spot_only(16);
	struct arb_job v[2] = {mk(0, 1, 0.9, 8, 50), mk(1, 1, 0.2, 8, 50)};

	decide(ARB_GOODPUT, &l, v, 2);
	cr_assert_eq(v[0].share, 3);
	cr_assert_eq(v[1].share, 1);
}

/* finish-time: job 0 has 4x the work left of job 1, both came at 0 and
 * do the same work alone.  Equal shares would leave job 0 with 4x the
 * finish time; min-max rho gives it more, and its max rho is no worse
 * than max-min's allocation's. */
Test(arbiter, finish_time_lowers_the_worst_rho)
{
	struct pool_limits l = spot_only(32);    /* 8 units */
	struct arb_job v[2] = {mk(0, 1, 0.95, 8, 100), mk(1, 1, 0.95, 8, 100)};
	struct arb_job m[2];
	double ft, mm;

	v[0].work_left_h = 100;
	v[1].work_left_h = 25;
	memcpy(m, v, sizeof m);
	decide(ARB_FINISH_TIME, &l, v, 2);
	decide(ARB_MAX_MIN, &l, m, 2);
	cr_assert_gt(v[0].share, v[1].share);
	cr_assert_eq(v[0].share + v[1].share, 8);
	ft = fmax(v[0].rho, v[1].rho);
	mm = fmax(m[0].rho, m[1].rho);
	cr_assert_leq(ft, mm + 1e-12, "finish-time %g, max-min %g", ft, mm);
	/* and it is the best integer split: no other does better */
	for (int a = 0; a <= 8; a++) {
		struct arb_job x[2];
		double worst;

		memcpy(x, v, sizeof x);
		worst = fmax(arb_rho(&x[0], a, 0, 2, 8),
			     arb_rho(&x[1], 8 - a, 0, 2, 8));
		cr_assert_geq(worst + 1e-12, fmax(arb_rho(&v[0], v[0].share,
							 0, 2, 8),
						 arb_rho(&v[1], v[1].share,
							 0, 2, 8)));
	}
}

/* Gang: the tiers need 4 on-demand vCPUs each and the pool has 8: the
 * third job to come waits (no share), the first two run.  A tier
 * admitted before stays admitted, and comes before a newcomer's. */
Test(arbiter, tiers_are_admitted_whole_in_arrival_order)
{
	struct pool_limits l = spot_only(64);
	struct arb_job v[3] = {mk(0, 1, 0.9, 4, 50), mk(1, 1, 0.9, 4, 50),
			       mk(2, 1, 0.9, 4, 50)};

	l.ondemand.total = 8;
	v[0].arrival_h = 2;      /* came last, but runs already */
	v[0].admitted = true;
	v[1].arrival_h = 0;
	v[2].arrival_h = 1;
	decide(ARB_FINISH_TIME, &l, v, 3);
	cr_assert(v[0].admit);
	cr_assert(v[1].admit);
	cr_assert(!v[2].admit);
	cr_assert_eq(v[2].share, 0);
	cr_assert(isinf(v[2].rho) || v[2].rho > 0);
}

/* finish-time reserves room for the first tier that waits (EASY
 * backfilling).  On demand 12 vCPUs: A and B run (tiers of 4), C (a tier
 * of 8, came at 1) waits for A's end; D (a tier of 4, came at 2) fits now.
 * A ends first (20 work-hours at 3 an hour with one unit: ~7 h) and
 * frees 4, enough for C beside B.  A long D (500 work-hours) would end
 * after that and has no room beside C then: it waits, where the other
 * arbiters let it pass C.  A short D (2 work-hours) ends before A and
 * starts. */
Test(arbiter, finish_time_reserves_room_for_the_first_tier_that_waits)
{
	struct pool_limits l = spot_only(8);

	l.ondemand.total = 12;
	for (int k = 0; k < ARB_KINDS; k++)
		for (int shortd = 0; shortd < 2; shortd++) {
			struct arb_job v[4] = {mk(0, 2, 0.9, 4, 20),
					       mk(1, 2, 0.9, 4, 500),
					       mk(2, 2, 0.9, 4, 50),
					       mk(3, 2, 0.9, 4, shortd ? 2 :
						  500)};

			v[0].admitted = v[1].admitted = true;
			v[0].share = v[1].share = 1;
			v[2].tier_vcpus = 8;
			v[2].arrival_h = 1;
			v[3].arrival_h = 2;
			decide((enum arb_kind)k, &l, v, 4);
			cr_assert(v[0].admit && v[1].admit && !v[2].admit);
			if (k == ARB_FINISH_TIME && !shortd)
				cr_assert(!v[3].admit, "D passed C");
			else
				cr_assert(v[3].admit, "%s: D (short %d) waits",
					  arb_name((enum arb_kind)k), shortd);
		}
}

/* And the job whose end makes that room counts the waiting job's rho:
 * with C waiting for A's end, A gets more of the spot than it does with
 * nothing waiting (B and A alike otherwise). */
Test(arbiter, the_job_a_tier_waits_on_gets_units_to_end_sooner)
{
	struct pool_limits l = spot_only(16);
	int alone_a;

	l.ondemand.total = 8;
	{
		struct arb_job v[2] = {mk(0, 1, 0.9, 4, 40),
				       mk(1, 1, 0.9, 4, 60)};

		v[0].admitted = v[1].admitted = true;
		v[0].share = v[1].share = 2;
		decide(ARB_FINISH_TIME, &l, v, 2);
		alone_a = v[0].share;
	}
	{
		struct arb_job v[3] = {mk(0, 1, 0.9, 4, 40),
				       mk(1, 1, 0.9, 4, 60),
				       mk(2, 1, 0.9, 4, 5)};

		v[0].admitted = v[1].admitted = true;
		v[0].share = v[1].share = 2;
		v[2].arrival_h = -10;    /* it has waited 10 h */
		decide(ARB_FINISH_TIME, &l, v, 3);
		cr_assert(!v[2].admit);
		cr_assert_gt(v[0].share, alone_a, "A %d, without C %d",
			     v[0].share, alone_a);
		cr_assert_eq(v[0].share + v[1].share, 4);
	}
}

/* A job whose tier does no work is admitted only with room for one spot
 * unit beside it: else it would pay its tier for nothing. */
Test(arbiter, a_tier_with_no_room_to_work_waits)
{
	struct pool_limits l = spot_only(0);
	struct arb_job v[1] = {mk(0, 0, 0.9, 4, 50)};

	decide(ARB_FIFO, &l, v, 1);
	cr_assert(!v[0].admit);
	l.spot.total = 4;
	decide(ARB_FIFO, &l, v, 1);
	cr_assert(v[0].admit);
	cr_assert_eq(v[0].share, 1);
}

/* USD an hour: tiers 0.2 each, units 0.1 each; a 1.0 budget leaves 0.6
 * for 6 units after two tiers. */
Test(arbiter, the_budget_per_hour_is_divided_too)
{
	struct pool_limits l;
	struct arb_job v[2] = {mk(0, 1, 0.9, 8, 50), mk(1, 1, 0.9, 8, 50)};

	pool_limits_none(&l);
	l.uusd_per_hour = 1000000;
	decide(ARB_MAX_MIN, &l, v, 2);
	cr_assert_eq(v[0].share + v[1].share, 6);
	cr_assert_eq(v[0].share, 3);
}

/* f: with fairness 0.5 of 2 jobs only the worse takes part in the
 * auction; the other keeps what it held up to 1/N of the pool. */
Test(arbiter, left_out_jobs_keep_up_to_their_1_over_n)
{
	struct pool_limits l = spot_only(32);
	struct arb_job v[2] = {mk(0, 1, 0.95, 8, 100), mk(1, 1, 0.95, 8, 100)};
	struct arb_setup s = {.kind = ARB_FINISH_TIME, .fairness = 0.5,
			      .limits = &l};
	struct px_error err = {0};

	v[0].work_left_h = 10;   /* nearly done: the better rho */
	v[0].share = 8;          /* held all of it */
	v[0].admitted = v[1].admitted = true;
	cr_assert_eq(arb_decide(&s, v, 2, &err), PX_OK);
	cr_assert_leq(v[0].share, 4);
	cr_assert_geq(v[1].share, 4);
	cr_assert_eq(v[0].share + v[1].share, 8);
}

/* A job's 1/N is of the pool, then held to what it can use (Themis's
 * and Gavel's "1/N of the cluster"): 32 spot vCPUs are 8 of its units;
 * with 2 jobs its 1/N is 4 units, its max.  (Counting the pool only up to
 * its max first gave floor(4 / 2) = 2: a job of a small max looked twice
 * as well off as it was.) */
Test(arbiter, one_over_n_is_of_the_pool_then_held_to_the_max)
{
	struct pool_limits l = spot_only(32 + 4);   /* and its tier */
	struct arb_job j = mk(0, 1, 0.9, 4, 100);

	l.spot.total = 32;
	cr_assert_eq(arb_alone_max(&l, NULL, &j), 8);
	cr_assert_float_eq(arb_alone_hours(&j, 2, arb_alone_max(&l, NULL,
								 &j)),
			   100 / rates[0][4], 1e-9);
	/* 4 jobs: 2 units each */
	cr_assert_float_eq(arb_alone_hours(&j, 4, 8), 100 / rates[0][2],
			   1e-9);
	/* no limit at all: its max */
	pool_limits_none(&l);
	cr_assert_float_eq(arb_alone_hours(&j, 3, arb_alone_max(&l, NULL,
								 &j)),
			   100 / rates[0][4], 1e-9);
}

/* Two tiers wait and room frees for one: finish-time admits the one
 * whose rho would be the worse if it started now, a short job that came
 * an hour after a long one (its rho grows 20 times as fast while it
 * waits); fifo and max-min admit the first to come. */
Test(arbiter, finish_time_admits_the_waiting_tier_of_the_worst_rho)
{
	struct pool_limits l = spot_only(16);

	l.ondemand.total = 4;
	for (int k = 0; k < ARB_KINDS; k++) {
		struct arb_job v[2] = {mk(0, 1, 0.9, 4, 200),
				       mk(1, 1, 0.9, 4, 10)};
		struct arb_setup s = {.kind = (enum arb_kind)k, .fairness = 1,
				      .now_h = 2, .limits = &l};
		struct px_error err = {0};

		v[1].arrival_h = 1;
		cr_assert_eq(arb_decide(&s, v, 2, &err), PX_OK, "%s", err.msg);
		if (k == ARB_FINISH_TIME)
			cr_assert(v[1].admit && !v[0].admit, "the long one "
				  "went first");
		else if (k != ARB_GOODPUT)
			cr_assert(v[0].admit && !v[1].admit, "%s",
				  arb_name((enum arb_kind)k));
	}
}

/* A job at its want whose rho is the worst (it waited 50 h, and holds
 * the 2 units it can use) is no reason to bring the others' rho up to
 * its own: the two that more units would still help keep their even
 * split of the rest (3 and 3), where trimming both up to that rho and
 * giving the units to the one that ends sooner left the long one with
 * almost none. */
Test(arbiter, a_job_at_its_want_sets_no_ones_rho)
{
	struct pool_limits l = spot_only(32);
	struct arb_job v[3] = {mk(0, 1, 0.9, 2, 100), mk(1, 1, 0.9, 8, 100),
			       mk(2, 1, 0.9, 8, 20)};
	struct arb_setup s = {.kind = ARB_FINISH_TIME, .fairness = 1,
			      .now_h = 50, .limits = &l};
	struct px_error err = {0};

	v[0].arrival_h = 0;
	v[1].arrival_h = v[2].arrival_h = 50;
	for (int k = 0; k < 3; k++)
		v[k].admitted = true;
	cr_assert_eq(arb_decide(&s, v, 3, &err), PX_OK, "%s", err.msg);
	cr_assert_eq(v[0].share, 2);
	cr_assert_eq(v[1].share + v[2].share, 6);
	cr_assert_geq(v[1].share, 3, "the long job: %d units", v[1].share);
	cr_assert_gt(v[0].rho, v[1].rho);
}

/* docs/pool.md's worked example, round 1: 4 units of 4 vCPUs; A (60
 * work-hours, 40 left, held all 4), B (24) and C (12) came at hour 4;
 * rate[n] = 1 + n.  The auction and its second phase reach (1, 1, 2),
 * worst rho 1.000; max-min's (2, 1, 1) has the same worst, so
 * finish-time, whose own must be ARB_GAIN (15%) lower to stand, keeps
 * max-min's.  With C come at hour 0, max-min's (2, 1, 1) leaves C at
 * 1.667 and finish-time's own (1, 1, 2) has 1.333 at worst: 20% lower,
 * it stands.  With C come at -6, its own (C taking all 4) has 2.067
 * against max-min's (1, 1, 2), 2.333: 11% lower, not enough. */
Test(arbiter, finish_time_keeps_max_min_s_split_unless_its_own_is_better)
{
	static const double came[3] = {4, 0, -6};
	static const int split[3][3] = {{2, 1, 1}, {1, 1, 2}, {1, 1, 2}};
	static const double want[3][2] = {
		{1.0, 1.0}, {1.3333, 1.6667}, {2.3333, 2.3333}};
	struct pool_limits l = spot_only(16);

	for (int c = 0; c < 3; c++) {
		struct arb_job v[2][3];
		double worst[2];

		for (int k = 0; k < 2; k++) {
			struct arb_setup s = {.kind = k ? ARB_MAX_MIN :
					      ARB_FINISH_TIME, .fairness = 0.8,
					      .now_h = 4, .limits = &l};
			struct px_error err = {0};

			v[k][0] = mk(0, 1, 1, 4, 60);
			v[k][1] = mk(1, 1, 1, 4, 24);
			v[k][2] = mk(2, 1, 1, 4, 12);
			v[k][0].work_left_h = 40;
			v[k][0].share = 4;
			v[k][0].admitted = true;
			v[k][1].arrival_h = 4;
			v[k][2].arrival_h = came[c];
			cr_assert_eq(arb_decide(&s, v[k], 3, &err), PX_OK, "%s",
				     err.msg);
			worst[k] = fmax(fmax(v[k][0].rho, v[k][1].rho),
					v[k][2].rho);
		}
		for (int i = 0; i < 3; i++)
			cr_assert_eq(v[0][i].share, split[c][i], "C came at "
				     "%g: job %d has %d", came[c], i,
				     v[0][i].share);
		cr_assert_float_eq(worst[0], want[c][0], 1e-3, "C at %g: %f",
				   came[c], worst[0]);
		cr_assert_float_eq(worst[1], want[c][1], 1e-3, "C at %g: %f",
				   came[c], worst[1]);
	}
}

Test(arbiter, bad_jobs_are_refused)
{
	struct pool_limits l = spot_only(16);
	struct arb_job v[1] = {mk(0, 1, 0.9, 4, 50)};
	struct arb_setup s = {.kind = ARB_FIFO, .fairness = 1, .limits = &l};
	struct px_error err = {0};

	v[0].weight = 0;
	cr_assert_eq(arb_decide(&s, v, 1, &err), PX_EINVAL);
	v[0].weight = 1;
	v[0].rate = NULL;
	cr_assert_eq(arb_decide(&s, v, 1, &err), PX_EINVAL);
}

/* Property: random jobs (sizes, groups, prices, tiers, arrivals,
 * weights) and random limits; with every job at its share the pool is
 * within every limit, every share is within [0, want], and a job not
 * admitted has none. */
Test(arbiter, shares_never_pass_a_limit)
{
	srand(41);
	for (int round = 0; round < 400; round++) {
		struct pool_limits l;
		struct pool_use u;
		struct arb_job v[8];
		size_t n = 1 + (size_t)(rand() % 8);
		struct arb_setup s = {.kind = rand() % ARB_KINDS,
				      .fairness = 0.25 + (rand() % 4) * 0.25,
				      .now_h = rand() % 20, .limits = &l};
		struct px_error err = {0};

		pool_limits_none(&l);
		if (rand() % 2)
			l.spot.total = rand() % 200;
		if (rand() % 2)
			l.spot.group[POOL_G_STANDARD] = rand() % 100;
		if (rand() % 2)
			l.spot.group[POOL_G_G] = rand() % 40;
		if (rand() % 2)
			l.ondemand.total = rand() % 60;
		if (rand() % 3 == 0)
			l.uusd_per_hour = rand() % 5000000;
		for (size_t i = 0; i < n; i++) {
			v[i] = mk((int)i, rand() % 2, 0.5 + (rand() % 50) /
				  100.0, 1 + rand() % 40, 1 + rand() % 500);
			v[i].group = rand() % 3 ? POOL_G_STANDARD : POOL_G_G;
			v[i].unit_vcpus = 1 + rand() % 16;
			v[i].unit_uusd = rand() % 900000;
			v[i].tier_vcpus = rand() % 16;
			v[i].tier_uusd = rand() % 900000;
			v[i].want = rand() % (v[i].max + 1);
			v[i].arrival_h = rand() % 20;
			v[i].weight = 1 + rand() % 3;
			v[i].share = rand() % (v[i].max + 1);
			v[i].work_left_h = v[i].work_total_h *
					   (rand() % 100) / 100.0;
			v[i].restart_h = rand() % 2 ? 0.1 : 0;
		}
		cr_assert_eq(arb_decide(&s, v, n, &err), PX_OK, "%s",
			     err.msg);
		memset(&u, 0, sizeof u);
		for (size_t i = 0; i < n; i++) {
			cr_assert_geq(v[i].share, 0);
			cr_assert_leq(v[i].share, v[i].want);
			if (!v[i].admit) {
				cr_assert_eq(v[i].share, 0);
				continue;
			}
			cr_assert(!(v[i].rho < 0));
			pool_use_add(&u, v[i].tier_group, false,
				     v[i].tier_vcpus, v[i].tier_uusd, 1);
			for (int k = 0; k < v[i].share; k++)
				pool_use_add(&u, v[i].group, true,
					     v[i].unit_vcpus, v[i].unit_uusd,
					     1);
		}
		const char *why = NULL;
		cr_assert(pool_within(&l, &u, &why), "round %d: past %s",
			  round, why);
	}
}
