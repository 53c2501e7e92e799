/* arbiter.c -- dividing the pool among jobs (see arbiter.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "arbiter.h"

static const char *const names[ARB_KINDS] = {
	[ARB_FIFO] = "fifo", [ARB_MAX_MIN] = "max-min",
	[ARB_FINISH_TIME] = "finish-time", [ARB_GOODPUT] = "goodput",
};

const char *arb_name(enum arb_kind k)
{
	return (unsigned)k < ARB_KINDS ? names[k] : "?";
}

enum px_err arb_lookup(const char *name, enum arb_kind *ret,
		       struct px_error *err)
{
	for (int k = 0; k < ARB_KINDS; k++)
		if (name && strcmp(name, names[k]) == 0) {
			*ret = (enum arb_kind)k;
			return PX_OK;
		}
	return px_errorf(err, PX_EINVAL, "unknown arbiter '%s' (fifo, "
			 "max-min, finish-time, goodput)", name ? name : "");
}

double arb_alone_hours(const struct arb_job *j, double n_jobs, int alone_max)
{
	int fair = n_jobs >= 1 ? (int)floor(alone_max / n_jobs + 1e-9)
			       : alone_max;

	if (fair < 1)
		fair = 1;
	if (fair > j->max)
		fair = j->max;
	return j->rate[fair] > 0 ? j->work_total_h / j->rate[fair] : 0;
}

/* arb_rho with the share held given. */
static double rho_held(const struct arb_job *j, int n, int held, double now_h,
		       size_t n_jobs, int alone_max)
{
	double alone = arb_alone_hours(j, (double)n_jobs, alone_max);
	double since = now_h - j->arrival_h;

	if (n < 0 || n > j->max || !(j->rate[n] > 0))
		return HUGE_VAL;
	if (!(alone > 0))
		return 0;
	if (since < 0)
		since = 0;
	return (since + (n != held ? j->restart_h : 0) +
		j->work_left_h / j->rate[n]) / alone;
}

double arb_rho(const struct arb_job *j, int n, double now_h, size_t n_jobs,
	       int alone_max)
{
	return rho_held(j, n, j->share, now_h, n_jobs, alone_max);
}

/* How far above the auction's worst rho finish-time lets a job's rho go
 * to end other jobs sooner (efficient). */
#ifndef ARB_SLACK
#define ARB_SLACK 0.02
#endif
/* How much lower than under max-min's division the worst estimated rho
 * must be for finish-time's own to stand (finish_time).  The estimates
 * err by more than a few percent: bench pool met every bar in 205 of 240
 * runs at 3%, 214 at 15%, 207 at 30% (docs/benchmarks.md, session 29). */
#ifndef ARB_GAIN
#define ARB_GAIN 0.15
#endif
/* How much more a unit a job holds counts in finish-time's auction. */
#ifndef ARB_KEEP
#define ARB_KEEP 0.1
#endif

struct arb {
	const struct arb_setup *s;
	struct arb_job *v;
	size_t n, n_in;           /* jobs; admitted ones */
	int *held;                /* the share each held (the lease ending) */
	int *alone;               /* its instances alone in the pool */
	size_t *order;            /* by arrival */
	bool srpt;                /* fill: shortest remaining time first */
	bool mm;                  /* fill: max-min's rule (finish-time's
				   * yardstick) */
	struct pool_use use;
	/* finish-time's reservation (reserve): the job that waits for it,
	 * its run once in (at its 1/N) and its time alone; the admitted
	 * jobs whose ends make its room (NULL: none) */
	long res;
	double res_run_h, res_alone_h;
	bool *blocker;
};

static bool unit_fits(const struct arb *a, const struct arb_job *j)
{
	return pool_fits(a->s->limits, &a->use, j->group, true, j->unit_vcpus,
			 j->unit_uusd, NULL);
}

static void unit_add(struct arb *a, struct arb_job *j, int sign)
{
	pool_use_add(&a->use, j->group, true, j->unit_vcpus, j->unit_uusd,
		     sign);
	j->share += sign;
}

/* Whether one more unit helps j at all. */
static bool can_grow(const struct arb *a, const struct arb_job *j)
{
	return j->admit && j->share < j->want &&
	       j->rate[j->share + 1] > j->rate[j->share] && unit_fits(a, j);
}

static void outside_use(const struct arb *a, struct pool_use *u)
{
	if (a->s->outside)
		*u = *a->s->outside;
	else
		memset(u, 0, sizeof *u);
}

int arb_alone_max(const struct pool_limits *l, const struct pool_use *outside,
		  const struct arb_job *j)
{
	struct pool_use u;
	int k = 0;

	if (outside)
		u = *outside;
	else
		memset(&u, 0, sizeof u);
	pool_use_add(&u, j->tier_group, false, j->tier_vcpus, j->tier_uusd,
		     1);
	while (k < j->max * ARB_ALONE_JOBS &&
	       pool_fits(l, &u, j->group, true, j->unit_vcpus, j->unit_uusd,
			 NULL)) {
		pool_use_add(&u, j->group, true, j->unit_vcpus, j->unit_uusd,
			     1);
		k++;
	}
	return k;
}

static int by_arrival(const void *x, const void *y, void *ctx)
{
	const struct arb_job *v = ctx;
	size_t i = *(const size_t *)x, k = *(const size_t *)y;

	if (v[i].arrival_h != v[k].arrival_h)
		return v[i].arrival_h < v[k].arrival_h ? -1 : 1;
	return i < k ? -1 : i > k;
}

/* When admitted job i ends at a share of n (HUGE_VAL: it cannot
 * progress at it). */
static double end_at(const struct arb *a, size_t i, int n)
{
	const struct arb_job *j = &a->v[i];

	if (n > j->max)
		n = j->max;
	if (n < 0)
		n = 0;
	return j->rate[n] > 0 ? a->s->now_h + j->work_left_h / j->rate[n]
			      : HUGE_VAL;
}

static double ends_h(const struct arb *a, size_t i)
{
	return end_at(a, i, a->held[i]);
}

/* Job i's 1/N of the pool with n_jobs in it: floor(alone / n_jobs)
 * units, at least 1 and at most its max (as arb_alone_hours counts). */
static int fair_of(const struct arb *a, size_t i, size_t n_jobs)
{
	int fair = a->alone[i] / (int)(n_jobs ? n_jobs : 1);

	return fair < 1 ? 1 : fair > a->v[i].max ? a->v[i].max : fair;
}

struct reserve {
	bool on;
	double at_h;              /* when the blocked job's tier fits */
	struct pool_use then;     /* the pool's tiers then, its in */
};

static int by_end(const void *x, const void *y, void *ctx)
{
	const double *e = ctx;
	size_t i = *(const size_t *)x, k = *(const size_t *)y;

	if (e[i] != e[k])
		return e[i] < e[k] ? -1 : 1;
	return i < k ? -1 : i > k;
}

/* finish-time's reservation for the first job in arrival order whose
 * tier does not fit (EASY backfilling): when the admitted jobs, ending
 * at their held shares in turn, leave room for it, and the tiers then
 * with its own in.  Without one, a big tier waits while small ones that
 * come later take each room as it frees, and its rho grows without
 * bound.  Not made where it would never fit, or out of memory.  Only
 * finish-time's (a->blocker is its). */
static void reserve(struct arb *a, const struct arb_job *b,
		    struct reserve *r)
{
	size_t bi = (size_t)(b - a->v);
	size_t *ids = px_calloc(a->n ? a->n : 1, sizeof *ids), m = 0;
	double *end = px_calloc(a->n ? a->n : 1, sizeof *end);
	struct pool_use u = a->use;

	r->on = false;
	for (size_t i = 0; ids && end && i < a->n; i++)
		if (a->v[i].admit) {
			end[i] = ends_h(a, i);
			ids[m++] = i;
		}
	if (ids && end)
		qsort_r(ids, m, sizeof *ids, by_end, end);
	for (size_t k = 0; ids && end && k < m && isfinite(end[ids[k]]);
	     k++) {
		const struct arb_job *j = &a->v[ids[k]];

		pool_use_add(&u, j->tier_group, false, j->tier_vcpus,
			     j->tier_uusd, -1);
		a->blocker[ids[k]] = true;
		if (pool_fits(a->s->limits, &u, b->tier_group, false,
			      b->tier_vcpus, b->tier_uusd, NULL)) {
			pool_use_add(&u, b->tier_group, false, b->tier_vcpus,
				     b->tier_uusd, 1);
			r->on = true;
			r->at_h = end[ids[k]];
			r->then = u;
			break;
		}
	}
	if (r->on) {
		int fair = fair_of(a, bi, a->n_in + 1);

		a->res = (long)bi;
		a->res_run_h = b->rate[fair] > 0 ? b->work_left_h /
			       b->rate[fair] : HUGE_VAL;
		a->res_alone_h = arb_alone_hours(b, (double)(a->n_in + 1),
						 a->alone[bi]);
	} else {
		memset(a->blocker, 0, a->n * sizeof *a->blocker);
	}
	free(ids);
	free(end);
}

/* Whether j, whose tier fits now, may start past the reservation r: it
 * ends (at its 1/N of the pool) before r's job starts, or its tier fits
 * beside r's then (and is counted there). */
static bool backfill(struct arb *a, size_t i, struct reserve *r)
{
	const struct arb_job *j = &a->v[i];
	int fair = fair_of(a, i, a->n_in + 1);

	if (!r->on)
		return true;
	if (j->rate[fair] > 0 &&
	    a->s->now_h + j->work_left_h / j->rate[fair] <= r->at_h)
		return true;
	if (!pool_fits(a->s->limits, &r->then, j->tier_group, false,
		       j->tier_vcpus, j->tier_uusd, NULL))
		return false;
	pool_use_add(&r->then, j->tier_group, false, j->tier_vcpus,
		     j->tier_uusd, 1);
	return true;
}

/* The order in which admit looks at the jobs: arrival; under
 * finish-time, the worst weighted rho first that each would have if it
 * started now at its 1/N (a short job's rho grows fastest while it
 * waits), ties to the earlier arrival.  into: n indices. */
static void admit_order(const struct arb *a, size_t *into)
{
	double *r = a->s->kind == ARB_FINISH_TIME ?
		    px_calloc(a->n ? a->n : 1, sizeof *r) : NULL;

	memcpy(into, a->order, a->n * sizeof *into);
	if (!r)
		return;
	for (size_t i = 0; i < a->n; i++) {
		const struct arb_job *j = &a->v[i];
		int fair = fair_of(a, i, a->n_in + 1);

		r[i] = rho_held(j, fair, 0, a->s->now_h, a->n_in + 1,
				a->alone[i]) * j->weight;
		if (isnan(r[i]))
			r[i] = 0;
	}
	for (size_t o = 0; o < a->n; o++)  /* stable: by arrival on ties */
		for (size_t k = o; k > 0 && r[into[k]] > r[into[k - 1]]; k--) {
			size_t t = into[k];

			into[k] = into[k - 1];
			into[k - 1] = t;
		}
	free(r);
}

/* Gang admission: the tiers admitted before stay; then, in admit_order,
 * a job whose whole tier fits, and that can do work with it (its tier
 * works, or one spot instance fits beside it); under finish-time, one
 * that does not delay the first that waits (reserve, backfill). */
static void admit(struct arb *a)
{
	struct reserve r = {.on = false};
	bool blocked = false;
	size_t *order = px_calloc(a->n ? a->n : 1, sizeof *order);
	const size_t *ord = order ? order : a->order;

	for (size_t i = 0; i < a->n; i++) {
		struct arb_job *j = &a->v[i];

		j->admit = j->admitted;
		if (j->admit)
			pool_use_add(&a->use, j->tier_group, false,
				     j->tier_vcpus, j->tier_uusd, 1);
		a->n_in += j->admit;
	}
	if (order)
		admit_order(a, order);
	for (size_t o = 0; o < a->n; o++) {
		struct arb_job *j = &a->v[ord[o]];
		struct pool_use u = a->use;

		if (j->admit)
			continue;
		if (!pool_fits(a->s->limits, &u, j->tier_group, false,
			       j->tier_vcpus, j->tier_uusd, NULL)) {
			if (!blocked && a->s->kind == ARB_FINISH_TIME)
				reserve(a, j, &r);
			blocked = true;
			continue;
		}
		pool_use_add(&u, j->tier_group, false, j->tier_vcpus,
			     j->tier_uusd, 1);
		if (!(j->rate[0] > 0) && !(j->max > 0 &&
		    pool_fits(a->s->limits, &u, j->group, true,
			      j->unit_vcpus, j->unit_uusd, NULL)))
			continue;
		if (!backfill(a, ord[o], &r))
			continue;
		a->use = u;
		j->admit = true;
		a->n_in++;
	}
	free(order);
}

/* finish-time's rho of admitted job i at a share of n: its own, or,
 * where it is the blocker whose end makes the reservation's room last,
 * the waiting job's rho (weighted) if it starts then, when that is
 * worse: units to it end the wait sooner. */
static double rho_of(const struct arb *a, size_t i, int n)
{
	const struct arb_job *j = &a->v[i];
	double r = rho_held(j, n, a->held[i], a->s->now_h, a->n_in,
			    a->alone[i]), e, w;
	const struct arb_job *b;

	if (a->res < 0 || !a->blocker[i] || !(a->res_alone_h > 0))
		return r;
	e = end_at(a, i, n);
	for (size_t k = 0; k < a->n; k++)
		if (k != i && a->blocker[k] &&
		    end_at(a, k, a->v[k].share) > e)
			return r;      /* another ends later */
	b = &a->v[a->res];
	w = (e - (a->s->now_h > b->arrival_h ? b->arrival_h : a->s->now_h) +
	     a->res_run_h) / a->res_alone_h * b->weight / j->weight;
	return w > r ? w : r;
}

/* The job that gets the next unit among those with flag set (NULL: all),
 * or -1: the one of greatest priority, ties to the earlier arrival. */
static double priority(const struct arb *a, const struct arb_job *j)
{
	if (a->srpt)
		return -j->work_left_h / j->rate[j->share];
	switch (a->mm ? ARB_MAX_MIN : a->s->kind) {
	case ARB_MAX_MIN:
		return -(double)(j->share * j->unit_vcpus) / j->weight;
	case ARB_GOODPUT:
		return (j->rate[j->share + 1] - j->rate[j->share]) /
		       (double)j->unit_vcpus * j->weight;
	case ARB_FINISH_TIME: {
		size_t i = (size_t)(j - a->v);
		double r = rho_of(a, i, j->share);

		/* no progress at all first, the fewest units first; a unit
		 * it holds already counts ARB_KEEP more (a share moves only
		 * for a real gain in fairness: each move sheds instances,
		 * a part-paid hour or a program's re-form) */
		if (isinf(r))
			return 1e300 - j->share;
		return r * j->weight * (j->share < a->held[i] ? 1 + ARB_KEEP
							       : 1);
	}
	default:
		return 0;
	}
}

static long pick(const struct arb *a, const bool *flag)
{
	long best = -1;
	double bp = 0;

	for (size_t o = 0; o < a->n; o++) {
		size_t i = a->order[o];
		const struct arb_job *j = &a->v[i];
		double p;

		if ((flag && !flag[i]) || !can_grow(a, j))
			continue;
		p = priority(a, j);
		if (best < 0 || p > bp) {
			best = (long)i;
			bp = p;
		}
	}
	return best;
}

static void fill(struct arb *a, const bool *flag)
{
	long i;

	while ((i = pick(a, flag)) >= 0)
		unit_add(a, &a->v[i], 1);
}

static int by_rho_desc(const void *x, const void *y, void *ctx)
{
	const double *r = ctx;
	size_t i = *(const size_t *)x, k = *(const size_t *)y;

	if (r[i] != r[k])
		return r[i] > r[k] ? -1 : 1;
	return i < k ? -1 : i > k;
}

/* The weighted rho of j at its share now. */
static double rho_now(const struct arb *a, const struct arb_job *j)
{
	size_t i = (size_t)(j - a->v);

	return rho_of(a, i, j->share) * j->weight;
}

/* The worst weighted rho of the admitted jobs at their shares now. */
static double worst_now(const struct arb *a)
{
	double w = 0;

	for (size_t i = 0; i < a->n; i++)
		if (a->v[i].admit && rho_now(a, &a->v[i]) > w)
			w = rho_now(a, &a->v[i]);
	return w;
}

/* After the auction: the worst rho it reached among the jobs that more
 * units would still help (share below want), R, is what fairness asks;
 * every job keeps the fewest units that hold it within ARB_SLACK of R
 * (never more than the auction gave it), and the units this frees go to
 * the jobs that end soonest (shortest remaining time first: what lowers
 * the mean completion), so the mean gains and the worst rho does not
 * move by more than ARB_SLACK.  A job at its want (its policy's, or its
 * max) that is worse than R is no reason to bring the others up to it:
 * their rho is an estimate, and the margin below it is what holds when
 * the estimate proves low.  When every job is at its want, R is the
 * worst of all. */
static void efficient(struct arb *a)
{
	double worst = worst_now(a), open = 0;

	for (size_t i = 0; i < a->n; i++) {
		const struct arb_job *j = &a->v[i];

		if (j->admit && j->share < j->want &&
		    j->rate[j->share + 1] > j->rate[j->share] &&
		    rho_now(a, j) > open)
			open = rho_now(a, j);
	}
	if (open > 0)
		worst = open;
	if (isinf(worst) || !(worst > 0))
		return;
	for (size_t i = 0; i < a->n; i++) {
		struct arb_job *j = &a->v[i];
		int got = j->share;

		if (!j->admit)
			continue;
		while (j->share > 0)
			unit_add(a, j, -1);
		while (j->share < got &&
		       !(rho_now(a, j) <= worst * (1 + ARB_SLACK)))
			unit_add(a, j, 1);
	}
	a->srpt = true;
	fill(a, NULL);
	a->srpt = false;
}

/* A division: every job's share, and the pool's use with them. */
static void split_save(const struct arb *a, int *share, struct pool_use *u)
{
	for (size_t i = 0; i < a->n; i++)
		share[i] = a->v[i].share;
	*u = a->use;
}

static void split_load(struct arb *a, const int *share,
		       const struct pool_use *u)
{
	for (size_t i = 0; i < a->n; i++)
		a->v[i].share = share[i];
	a->use = *u;
}

/* Themis's round: the worst `fairness` of the admitted jobs (by their
 * weighted rho at the share they held) take part in the auction; the
 * others keep their share up to 1/N of the pool, and have what is left
 * after the auction (fill, below). */
static enum px_err finish_time(struct arb *a, struct px_error *err)
{
	size_t *ids = px_calloc(a->n ? a->n : 1, sizeof *ids), m = 0, take;
	double *r = px_calloc(a->n ? a->n : 1, sizeof *r), w_mm;
	bool *part = px_calloc(a->n ? a->n : 1, sizeof *part);
	int *kept = px_calloc(a->n ? a->n : 1, sizeof *kept);
	int *mm = px_calloc(a->n ? a->n : 1, sizeof *mm);
	struct pool_use u_keep, u_mm;
	enum px_err e = PX_OK;

	if (!ids || !r || !part || !kept || !mm) {
		e = px_errorf(err, PX_ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < a->n; i++) {
		struct arb_job *j = &a->v[i];

		if (!j->admit)
			continue;
		r[i] = rho_of(a, i, a->held[i]);
		r[i] = isinf(r[i]) ? HUGE_VAL : r[i] * j->weight;
		ids[m++] = i;
	}
	qsort_r(ids, m, sizeof *ids, by_rho_desc, r);
	take = (size_t)ceil(a->s->fairness * (double)m - 1e-9);
	if (take < 1 && m)
		take = 1;
	for (size_t k = 0; k < m; k++)
		part[ids[k]] = k < take;
	/* the others keep what they held up to their 1/N of the pool (a
	 * lease of Themis's that has not ended: with one lease clock for
	 * all, a job left out of the auction would otherwise lose it all,
	 * and be the worst at the next round); the rest of theirs is in
	 * the auction */
	for (size_t k = take; k < m; k++) {
		struct arb_job *j = &a->v[ids[k]];
		int keep = a->held[ids[k]] < j->want ? a->held[ids[k]]
						     : j->want;
		int fair = a->alone[ids[k]] / (int)a->n_in;

		if (keep > fair)
			keep = fair;
		while (j->share < keep && unit_fits(a, j))
			unit_add(a, j, 1);
	}
	/* max-min's division of the same units (beside the keeps), the
	 * yardstick: the auction's stands only where, second phase done,
	 * it lowers the worst estimated rho by ARB_GAIN at least */
	split_save(a, kept, &u_keep);
	a->mm = true;
	fill(a, NULL);
	a->mm = false;
	w_mm = worst_now(a);
	split_save(a, mm, &u_mm);
	split_load(a, kept, &u_keep);
	fill(a, part);
	efficient(a);
	if (isfinite(w_mm) && !(worst_now(a) <= w_mm * (1 - ARB_GAIN)))
		split_load(a, mm, &u_mm);
out:
	free(ids);
	free(r);
	free(part);
	free(kept);
	free(mm);
	return e;
}

enum px_err arb_decide(const struct arb_setup *s, struct arb_job *jobs,
		       size_t n, struct px_error *err)
{
	struct arb a = {.s = s, .v = jobs, .n = n, .res = -1};
	enum px_err e = PX_OK;
	size_t sz = n ? n : 1;

	for (size_t i = 0; i < n; i++) {
		struct arb_job *j = &jobs[i];

		if (!j->rate || j->max < 0 || !(j->weight > 0) ||
		    j->unit_vcpus < 0 || j->tier_vcpus < 0)
			return px_errorf(err, PX_EINVAL, "job %zu: no rate, "
					 "a weight not above 0 or a negative "
					 "size", i);
		if (j->want > j->max)
			j->want = j->max;
		if (j->want < 0)
			j->want = 0;
	}
	a.held = px_calloc(sz, sizeof *a.held);
	a.alone = px_calloc(sz, sizeof *a.alone);
	a.order = px_calloc(sz, sizeof *a.order);
	if (s->kind == ARB_FINISH_TIME)
		a.blocker = px_calloc(sz, sizeof *a.blocker);
	if (!a.held || !a.alone || !a.order ||
	    (s->kind == ARB_FINISH_TIME && !a.blocker)) {
		e = px_errorf(err, PX_ENOMEM, "out of memory");
		goto out;
	}
	outside_use(&a, &a.use);
	for (size_t i = 0; i < n; i++) {
		a.order[i] = i;
		a.held[i] = jobs[i].share;
		a.alone[i] = arb_alone_max(s->limits, s->outside, &jobs[i]);
		jobs[i].share = 0;
	}
	qsort_r(a.order, n, sizeof *a.order, by_arrival, jobs);
	admit(&a);
	switch (s->kind) {
	case ARB_FIFO:
		for (size_t o = 0; o < n; o++) {
			struct arb_job *j = &jobs[a.order[o]];

			while (can_grow(&a, j))
				unit_add(&a, j, 1);
		}
		break;
	case ARB_FINISH_TIME:
		e = finish_time(&a, err);
		break;
	default:
		fill(&a, NULL);
		break;
	}
	/* what is left goes by the same rule to every admitted job */
	if (e == PX_OK)
		fill(&a, NULL);
	for (size_t i = 0; e == PX_OK && i < n; i++) {
		struct arb_job *j = &jobs[i];
		const int sh = j->share;

		/* rho at the new share: a change costs the re-form */
		j->rho = rho_held(j, sh, a.held[i], s->now_h,
				  a.n_in ? a.n_in : 1, a.alone[i]);
	}
out:
	free(a.held);
	free(a.alone);
	free(a.order);
	free(a.blocker);
	return e;
}
