/* plan.c -- a job resolved against its markets and prices (plan.h): the
 * policies' environment, built once, whatever world then runs it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../bidbrain/instances.h"
#include "plan.h"

#define LIST_MAX 40   /* names listed in an error message */

struct plan {
	struct plan_setup setup;
	struct pol_env env;
	struct pol_type *types;
	struct pol_market *markets;
	int64_t start_s, end_s;
};

/* ---- plan: the job resolved against markets and prices ---- */

static const struct ondemand_entry *od_find(const struct ondemand_table *t,
					    const char *region,
					    const char *type)
{
	for (size_t i = 0; t && i < t->n; i++)
		if (!strcmp(t->v[i].region, region) &&
		    !strcmp(t->v[i].type, type))
			return &t->v[i];
	return NULL;
}

/* Append name to a ", "-separated list in buf unless already there. */
static void list_add(char *buf, size_t len, int *count, const char *name)
{
	size_t n = strlen(buf), l = strlen(name);
	const char *p = buf;

	while ((p = strstr(p, name))) {
		if ((p == buf || p[-1] == ' ') && (p[l] == ',' || !p[l]))
			return;
		p++;
	}
	if (*count == LIST_MAX) {
		if (n + 5 < len)
			memcpy(buf + n, ", ...", 6);
		(*count)++;
		return;
	}
	if (*count > LIST_MAX)
		return;
	snprintf(buf + n, len - n, "%s%s", n ? ", " : "", name);
	(*count)++;
}

/* The job's own rate for type when it gives one; else the advisor
 * snapshot's hazard when the plan has one; else the instance table's
 * default.  PX_ENOENT when the snapshot lacks the type. */
static enum px_err interrupt_rate(const struct plan *p, const char *type,
				  double *ret, struct px_error *err)
{
	const struct jobspec *j = p->setup.job;
	const struct advisor *a = p->setup.advisor;
	const struct advisor_entry *e;

	for (size_t i = 0; i < j->n_rate; i++)
		if (!strcmp(j->rate[i].type, type)) {
			*ret = j->rate[i].v;
			return PX_OK;
		}
	if (j->rate_default >= 0 || !a) {
		*ret = jobspec_interrupt_rate(j, type);
		return PX_OK;
	}
	e = advisor_find(a, type);
	if (!e)
		return px_errorf(err, PX_ENOENT, "spot advisor snapshot '%s' "
				 "has no '%s' in region '%s': give the job "
				 "interruption_rates.%s, or another snapshot",
				 a->name, type, a->region, type);
	*ret = advisor_hazard(a, e->bucket);
	return PX_OK;
}

static enum px_err add_type(struct plan *p, const char *name,
			    int *ret_idx, struct px_error *err)
{
	const struct jobspec *j = p->setup.job;
	const struct ondemand_entry *e;
	char have[2048] = "";
	int cnt = 0;

	for (size_t i = 0; i < p->env.n_types; i++)
		if (!strcmp(p->types[i].name, name)) {
			*ret_idx = (int)i;
			return PX_OK;
		}
	e = od_find(p->setup.od, j->region, name);
	if (!e) {
		for (size_t i = 0; p->setup.od && i < p->setup.od->n; i++)
			if (!strcmp(p->setup.od->v[i].region, j->region))
				list_add(have, sizeof have, &cnt,
					 p->setup.od->v[i].type);
		return px_errorf(err, PX_ENOENT, "on-demand price table has "
				 "no price for '%s' in region '%s' "
				 "(it has: %s)",
				 name, j->region, cnt ? have : "none");
	}
	struct pol_type *t = &p->types[p->env.n_types];
	enum px_err r = interrupt_rate(p, name, &t->interrupt_per_h, err);

	if (r != PX_OK)
		return r;
	t->name = name;
	t->speed = jobspec_speed(j, name);
	t->od_uusd = e->uusd_per_hour;
	t->vcpus = inst_find(name) && inst_find(name)->vcpus > 0 ?
		   inst_find(name)->vcpus : 1;
	*ret_idx = (int)p->env.n_types++;
	return PX_OK;
}

static enum px_err plan_markets(struct plan *p, struct px_error *err)
{
	const struct jobspec *j = p->setup.job;
	const struct market_set *ms = p->setup.ms;
	const char *zones[MARKET_MAX];
	size_t nz = 0;
	char have[2048] = "";
	int cnt = 0;

	if (j->spot.n_zones) {
		for (size_t z = 0; z < j->spot.n_zones; z++) {
			bool found = false;
			for (size_t i = 0; i < ms->n && !found; i++)
				found = !strcmp(ms->v[i].zone,
						j->spot.zones[z]) &&
					ms->v[i].n > 0;
			if (!found) {
				for (size_t i = 0; i < ms->n; i++)
					list_add(have, sizeof have, &cnt,
						 ms->v[i].zone);
				return px_errorf(err, PX_ENOENT,
					"job '%s': spot.zones[%zu]: no market "
					"in zone '%s' in the trace (zones in "
					"the trace: %s)", j->name, z,
					j->spot.zones[z], cnt ? have : "none");
			}
			zones[nz++] = j->spot.zones[z];
		}
	} else {
		for (size_t i = 0; i < ms->n && nz < MARKET_MAX; i++) {
			if (strcmp(ms->v[i].region, j->region) ||
			    (nz && !strcmp(zones[nz - 1], ms->v[i].zone)))
				continue;
			zones[nz++] = ms->v[i].zone;
		}
		if (nz == 0) {
			for (size_t i = 0; i < ms->n; i++)
				list_add(have, sizeof have, &cnt,
					 ms->v[i].region);
			return px_errorf(err, PX_ENOENT, "job '%s': region "
					 "'%s' has no market in the trace "
					 "(regions in the trace: %s)", j->name,
					 j->region, cnt ? have : "none");
		}
	}
	p->markets = px_calloc(j->spot.n_types * nz, sizeof *p->markets);
	if (!p->markets)
		return px_errorf(err, PX_ENOMEM, "out of memory");
	for (size_t t = 0; t < j->spot.n_types; t++) {
		size_t before = p->env.n_markets;
		int ti = -1;
		enum px_err r;
		for (size_t z = 0; z < nz; z++) {
			int mi = market_set_find(ms, zones[z],
						 j->spot.types[t]);
			if (mi < 0 || ms->v[mi].n == 0)
				continue;
			struct pol_market *m = &p->markets[p->env.n_markets++];
			m->market = mi;
			m->zone = ms->v[mi].zone;
		}
		if (p->env.n_markets == before) {
			for (size_t i = 0; i < ms->n; i++)
				list_add(have, sizeof have, &cnt,
					 ms->v[i].type);
			return px_errorf(err, PX_ENOENT, "job '%s': "
					 "spot.types[%zu]: no market for '%s' "
					 "in the job's zones (types in the "
					 "trace: %s)", j->name, t,
					 j->spot.types[t], have);
		}
		r = add_type(p, j->spot.types[t], &ti, err);
		if (r != PX_OK)
			return r;
		for (size_t i = before; i < p->env.n_markets; i++)
			p->markets[i].type = ti;
	}
	return PX_OK;
}

enum px_err plan_new(const struct plan_setup *setup, struct plan **ret,
		     struct px_error *err)
{
	const struct market_set *ms = setup->ms;
	const struct jobspec *j = setup->job;
	struct plan *p;
	char a[32], b[32], c[32], d[32];
	int64_t first, last;
	enum px_err r;

	if (!ms->sealed || ms->records == 0)
		return px_errorf(err, PX_EINVAL, "the trace has no records");
	p = px_calloc(1, sizeof *p);
	if (!p)
		return px_errorf(err, PX_ENOMEM, "out of memory");
	p->setup = *setup;
	p->types = px_calloc(j->spot.n_types + 2, sizeof *p->types);
	if (!p->types) {
		r = px_errorf(err, PX_ENOMEM, "out of memory");
		goto out_free;
	}
	p->env.job = j;
	p->env.billing = setup->billing;
	p->env.types = p->types;
	p->env.warning_s = j->warning_seconds;
	p->env.seed = setup->seed;
	p->env.pool_share = j->pool_share > 0 ? j->pool_share :
			    JOBSPEC_POOL_SHARE;
	r = plan_markets(p, err);
	if (r != PX_OK)
		goto out_free;
	r = add_type(p, j->reference_type, &p->env.ref_type, err);
	if (r != PX_OK)
		goto out_free;
	r = add_type(p, j->reliable.type, &p->env.reliable_type, err);
	if (r != PX_OK)
		goto out_free;
	p->env.markets = p->markets;
	first = setup->trace_first_s ? setup->trace_first_s : ms->first_s;
	last = setup->trace_last_s ? setup->trace_last_s : ms->last_s;
	if (first > ms->first_s)
		first = ms->first_s;
	if (last < ms->last_s)
		last = ms->last_s;
	p->start_s = setup->start_s ? setup->start_s : first;
	p->end_s = setup->end_s ? setup->end_s : last;
	if (p->start_s < first || p->end_s > last ||
	    p->start_s >= p->end_s) {
		r = px_errorf(err, PX_EINVAL, "window %s to %s is outside the "
			      "trace or empty (the trace covers %s to %s)",
			      px_format_time(p->start_s, a, sizeof a),
			      px_format_time(p->end_s, b, sizeof b),
			      px_format_time(first, c, sizeof c),
			      px_format_time(last, d, sizeof d));
		goto out_free;
	}
	*ret = p;
	return PX_OK;
out_free:
	plan_free(p);
	return r;
}

void plan_free(struct plan *p)
{
	if (!p)
		return;
	free(p->types);
	free(p->markets);
	free(p);
}

int64_t plan_start(const struct plan *p)
{
	return p->start_s;
}

int64_t plan_end(const struct plan *p)
{
	return p->end_s;
}

const struct pol_env *plan_env(const struct plan *p)
{
	return &p->env;
}


const struct plan_setup *plan_setup(const struct plan *p)
{
	return &p->setup;
}

void plan_set_seed(struct plan *p, uint64_t seed)
{
	if (p)
		p->env.seed = seed;
}
