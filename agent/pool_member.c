/* pool_member.c -- what the pool knows of one job (pool_member.h,
 * docs/pool.md). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../bidbrain/instances.h"
#include "pool_member.h"

int64_t pm_type_vcpus(const char *name)
{
	const struct inst_type *t = inst_find(name);

	return t && t->vcpus > 0 ? t->vcpus : 1;
}

void pm_rates(struct pool_member *m, const struct pol_env *env,
	      const struct jobspec_profile *profile)
{
	const struct jobspec *job = env->job;
	double s_spot = env->types[env->ref_type].speed;
	int r = job->reliable.count;
	double s_tier = r * env->types[env->reliable_type].speed;

	for (int n = 0; n <= m->max; n++)
		m->rate[n] = r + n > 0 ? jobspec_rate(job, profile, r + n,
						      s_tier + n * s_spot)
				       : 0;
	for (int n = 0; n <= m->max; n++)
		m->seen[n] = m->rate[n] * m->calib;
}

enum px_err pm_init(struct pool_member *m, const struct pol_env *env,
		    const struct jobspec_profile *profile, double w,
		    struct px_error *err)
{
	const struct jobspec *job = env->job;
	int r = job->reliable.count;
	const char *tier = env->types[env->reliable_type].name;

	memset(m, 0, sizeof *m);
	m->weight = w;
	m->max = job->spot.max_instances;
	m->unit_vcpus = pm_type_vcpus(env->types[env->ref_type].name);
	m->group = pool_group_of(env->types[env->ref_type].name);
	m->min_vcpus = m->unit_vcpus;
	for (size_t k = 0; k < env->n_markets; k++) {
		int64_t v = pm_type_vcpus(env->types[env->markets[k].type].name);

		if (v < m->min_vcpus)
			m->min_vcpus = v;
	}
	m->tier_group = pool_group_of(tier);
	m->tier_vcpus = r * pm_type_vcpus(tier);
	m->tier_uusd = r * env->types[env->reliable_type].od_uusd;
	m->work_total_h = job->work_hours;
	m->restart_h = job->restart_seconds / 3600;
	m->calib = 1;
	m->usd_cap = -1;
	m->rate = px_calloc((size_t)m->max + 1, sizeof *m->rate);
	m->seen = px_calloc((size_t)m->max + 1, sizeof *m->seen);
	if (!m->rate || !m->seen) {
		pm_free(m);
		return px_errorf(err, PX_ENOMEM, "out of memory");
	}
	pm_rates(m, env, profile);
	return PX_OK;
}

void pm_free(struct pool_member *m)
{
	free(m->rate);
	free(m->seen);
	m->rate = m->seen = NULL;
}

static const struct market *env_market(const struct pol_env *env,
				       const struct market_set *ms, int k)
{
	return &ms->v[env->markets[k].market];
}

int64_t pm_fleet_uusd(const struct pol_env *env, const struct pol_fleet *f,
		      const struct market_set *ms, int64_t now,
		      bool spot_only)
{
	int64_t sum = 0;

	for (size_t k = 0; k < f->n; k++) {
		int64_t p = env->types[f->v[k].type].od_uusd;

		if (f->v[k].market >= 0) {
			if (!market_price_at(env_market(env, ms,
							f->v[k].market),
					     now, &p) && spot_only)
				continue;
		} else if (spot_only) {
			continue;
		}
		sum += p;
	}
	return sum;
}

const char *pm_admit(struct pool_member *m, const struct pool_limits *l,
		     const struct pool_use *u, const char *name, bool spot,
		     int64_t hour_uusd, int64_t spot_uusd)
{
	const char *why = NULL;
	int64_t v = pm_type_vcpus(name);
	struct pool_limits lt = *l;

	if (!spot && m->od_vcpus + v <= m->tier_vcpus)
		lt.uusd_per_hour = -1;   /* its tier, admitted whole */
	if (spot && m->shared &&
	    m->spot_vcpus + v > m->share * m->unit_vcpus)
		why = "the pool's share";
	else if (spot && m->usd_cap >= 0 && spot_uusd + hour_uusd > m->usd_cap)
		why = "the pool's share (pool_usd_per_hour)";
	else if (pool_fits(&lt, u, pool_group_of(name), spot, v, hour_uusd,
			   &why))
		return NULL;
	m->refused++;
	if (spot)
		m->lease_refused++;
	return why;
}

void pm_hold(struct pool_member *m, struct pool_use *u, const char *name,
	     bool spot, int sign)
{
	int64_t v = pm_type_vcpus(name);

	pool_use_add(u, pool_group_of(name), spot, v, 0, sign);
	if (!spot) {
		m->od_vcpus += sign * v;
		return;
	}
	m->spot_vcpus += sign * v;
	if (m->spot_vcpus > m->peak)
		m->peak = m->spot_vcpus;
	m->lease_refused = 0;
}

void pm_pass(struct pool_member *m, double dt)
{
	m->held_s += (double)m->spot_vcpus * dt;
}

int pm_spot_cap(const struct pool_member *m)
{
	int64_t n = m->share * m->unit_vcpus / m->min_vcpus;

	return n < m->max ? (int)n : m->max;
}

/* All it may (spot.max_instances) at first and after a lease in which it
 * reached its share or the pool refused it some; after one in which its
 * policy chose to hold fewer, a quarter more than the most it held (at
 * least two more), so that what it leaves goes to others and it can
 * grow. */
int pm_want(const struct pool_member *m)
{
	int more;
	int peak = (int)((m->peak + m->unit_vcpus - 1) / m->unit_vcpus);

	if (!m->shared || peak >= m->share || m->lease_refused)
		return m->max;
	more = peak / 4 > 2 ? peak / 4 : 2;
	return peak + more < m->max ? peak + more : m->max;
}

static int by_int64(const void *x, const void *y)
{
	int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;

	return a < b ? -1 : a > b;
}

int64_t pm_unit_price(const struct pool_member *m, const struct pol_env *env,
		      const struct pol_fleet *f,
		      const struct market_set *ms, int64_t now)
{
	int64_t v[JOBSPEC_TYPES_MAX * JOBSPEC_ZONES_MAX];
	double sum = 0, vc = 0;
	size_t n = 0;

	for (size_t k = 0; f && m->spot_vcpus > 0 && k < f->n; k++) {
		int64_t p;

		if (f->v[k].market < 0 ||
		    !market_price_at(env_market(env, ms, f->v[k].market), now,
				     &p))
			continue;
		sum += (double)p;
		vc += (double)pm_type_vcpus(env->types[f->v[k].type].name);
	}
	if (vc > 0)
		return llround(sum / vc * (double)m->unit_vcpus);
	for (size_t k = 0; k < env->n_markets && n < sizeof v / sizeof *v;
	     k++) {
		int64_t p;

		if (market_price_at(env_market(env, ms, (int)k), now, &p))
			v[n++] = p * m->unit_vcpus / pm_type_vcpus(
				env->types[env->markets[k].type].name);
	}
	if (!n)
		return 0;
	qsort(v, n, sizeof *v, by_int64);
	return v[n / 2];
}

double pm_rate_at(const struct pool_member *m, double units)
{
	int k = units > 0 ? (int)floor(units) : 0;
	double f;

	if (k >= m->max) {
		k = m->max;
		f = 0;
	} else {
		f = units > 0 ? units - k : 0;
	}
	return m->rate[k] + (k < m->max ? f * (m->rate[k + 1] - m->rate[k]) :
			     0);
}

/* The spec's rates times what the last lease measured of them, when it
 * ran long enough to tell (a tenth of an hour): the work it did over
 * what rate[] says of the spot it held meanwhile (evictions, startups,
 * re-forms and the types it chose all show there), clamped to [0.2,
 * 1.2] and smoothed over leases. */
void pm_measure(struct pool_member *m, int64_t now, double work_h,
		bool running)
{
	double dt = (double)(now - m->lease_t);

	if (running && dt >= 360) {
		double p = pm_rate_at(m, m->held_s / dt /
				      (double)m->unit_vcpus);
		double done = work_h - m->lease_work;

		if (p > 0 && done >= 0) {
			double c = done / (p * dt / 3600);

			c = c < 0.2 ? 0.2 : c > 1.2 ? 1.2 : c;
			m->calib = 0.5 * m->calib + 0.5 * c;
		}
	}
	for (int n = 0; n <= m->max; n++)
		m->seen[n] = m->rate[n] * m->calib;
	m->lease_t = now;
	m->lease_work = work_h;
	m->held_s = 0;
}

void pm_arb(const struct pool_member *m, double arrival_h, double work_h,
	    bool admitted, int64_t unit_uusd, struct arb_job *a)
{
	*a = (struct arb_job){
		.weight = m->weight, .arrival_h = arrival_h,
		.group = m->group, .unit_vcpus = m->unit_vcpus,
		.unit_uusd = unit_uusd,
		.tier_group = m->tier_group, .tier_vcpus = m->tier_vcpus,
		.tier_uusd = m->tier_uusd,
		.want = pm_want(m), .max = m->max, .rate = m->seen,
		.work_left_h = m->work_total_h - work_h,
		.work_total_h = m->work_total_h,
		.restart_h = m->restart_h,
		.admitted = admitted, .share = m->share,
	};
	if (a->work_left_h < 0)
		a->work_left_h = 0;
}

/* Each job may spend its share's and that beside it, so that a job alone
 * is not held to prices of the round's instant. */
int64_t pm_spare(const struct pool_limits *l, const struct arb_job *a,
		 size_t n)
{
	int64_t spare = l->uusd_per_hour;

	for (size_t k = 0; spare >= 0 && k < n; k++)
		if (a[k].admit)
			spare -= a[k].tier_uusd + a[k].share * a[k].unit_uusd;
	return spare < 0 && l->uusd_per_hour >= 0 ? 0 : spare;
}

void pm_take(struct pool_member *m, const struct pool_limits *l,
	     const struct arb_job *a, int64_t spare)
{
	int64_t own = a->share * a->unit_uusd;

	m->share = a->share;
	m->shared = true;
	m->peak = m->spot_vcpus;
	m->usd_cap = l->uusd_per_hour < 0 ? -1 :
		     own + (spare > own / 4 ? spare : own / 4);
}

const struct pol_instance *pm_shed_first(const struct pol_fleet *f,
					 enum billing_model billing)
{
	const struct pol_instance *best = NULL;
	bool legacy = billing == BILLING_LEGACY_HOURLY;

	for (size_t k = 0; k < f->n; k++) {
		const struct pol_instance *v = &f->v[k];

		if (v->market < 0 || v->warned)
			continue;
		if (!best || (legacy ? v->period_end_s < best->period_end_s
				     : v->launch_s > best->launch_s) ||
		    ((legacy ? v->period_end_s == best->period_end_s
			     : v->launch_s == best->launch_s) &&
		     v->id > best->id))
			best = v;
	}
	return best;
}

const struct pol_instance *pm_priciest(const struct pol_env *env,
				       const struct pol_fleet *f,
				       const struct market_set *ms,
				       int64_t now, int64_t *price)
{
	const struct pol_instance *best = NULL;

	for (size_t k = 0; k < f->n; k++) {
		int64_t p;

		if (f->v[k].market < 0 ||
		    !market_price_at(env_market(env, ms, f->v[k].market), now,
				     &p) || p <= *price)
			continue;
		*price = p;
		best = &f->v[k];
	}
	return best;
}
