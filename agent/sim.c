/* sim.c -- the virtual-clock simulator: one policy, one replayed market,
 * event to event (see sim.h and docs/simulate.md). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../bidbrain/instances.h"
#include "sim.h"

#define LIST_MAX 40   /* names listed in an error message */
#define FLEET_MAX 100000

struct sim_plan {
	struct sim_setup setup;
	struct pol_env env;
	struct pol_type *types;
	struct pol_market *markets;
	int64_t start_s, end_s;
};

static const char *const ev_names[SIM_EV_MAX] = {
	[SIM_EV_DECIDE_ACQUIRE] = "decide-acquire",
	[SIM_EV_DECIDE_RELEASE] = "decide-release",
	[SIM_EV_LAUNCH] = "launch",
	[SIM_EV_REJECT] = "reject",
	[SIM_EV_READY] = "ready",
	[SIM_EV_WARNING] = "warning",
	[SIM_EV_EVICTION] = "eviction",
	[SIM_EV_RELEASE] = "release",
	[SIM_EV_DONE] = "done",
};

const char *sim_event_name(enum sim_event_kind k)
{
	return (unsigned)k < SIM_EV_MAX ? ev_names[k] : "?";
}

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

static enum px_err add_type(struct sim_plan *p, const char *name,
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
	t->name = name;
	t->speed = jobspec_speed(j, name);
	t->od_uusd = e->uusd_per_hour;
	t->interrupt_per_h = jobspec_interrupt_rate(j, name);
	*ret_idx = (int)p->env.n_types++;
	return PX_OK;
}

static enum px_err plan_markets(struct sim_plan *p, struct px_error *err)
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

enum px_err sim_plan_new(const struct sim_setup *setup, struct sim_plan **ret,
			 struct px_error *err)
{
	const struct market_set *ms = setup->ms;
	const struct jobspec *j = setup->job;
	struct sim_plan *p;
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
	sim_plan_free(p);
	return r;
}

void sim_plan_free(struct sim_plan *p)
{
	if (!p)
		return;
	free(p->types);
	free(p->markets);
	free(p);
}

int64_t sim_plan_start(const struct sim_plan *p)
{
	return p->start_s;
}

int64_t sim_plan_end(const struct sim_plan *p)
{
	return p->end_s;
}

const struct pol_env *sim_plan_env(const struct sim_plan *p)
{
	return &p->env;
}

/* ---- the run ---- */

enum ev_kind { EV_PRICE, EV_READY, EV_WARN, EV_EVICT, EV_HOUR, EV_TICK };

struct ev {
	int64_t t;
	uint64_t seq;
	enum ev_kind kind;
	uint64_t id;             /* instance, or env market for EV_PRICE */
};

struct inst {
	struct billing_acct bill;
	int64_t warn_s;          /* MARKET_NONE when not scheduled */
	int64_t evict_s;
	bool ready;
};

struct run {
	const struct sim_plan *p;
	long *cursor;                /* market_view index hints */
	const struct pol_env *env;
	const struct policy_ops *ops;
	void *pstate;
	struct pol_instance *pub;    /* live instances, compact */
	struct inst *priv;
	size_t n, cap;
	struct ev *h;
	size_t hn, hcap;
	uint64_t seq, next_id;
	int64_t now;
	double work, rate, s_contrib;
	int n_contrib;
	int64_t cost_ended, cost_now;
	struct pol_actions acts;
	uint64_t *hour;              /* instances whose hour ends now */
	size_t n_hour, cap_hour;
	bool fleet_changed;
	struct sim_result *res;
	struct px_error *err;
};

static bool ev_less(const struct ev *a, const struct ev *b)
{
	return a->t != b->t ? a->t < b->t : a->seq < b->seq;
}

static enum px_err heap_push(struct run *r, int64_t t, enum ev_kind k,
			     uint64_t id)
{
	size_t i;

	if (t > r->p->end_s)
		return PX_OK;
	if (r->hn == r->hcap) {
		size_t cap = r->hcap ? r->hcap * 2 : 256;
		struct ev *v = px_reallocarray(r->h, cap, sizeof *v);
		if (!v)
			return px_errorf(r->err, PX_ENOMEM, "out of memory");
		r->h = v;
		r->hcap = cap;
	}
	i = r->hn++;
	r->h[i] = (struct ev){.t = t, .seq = r->seq++, .kind = k, .id = id};
	while (i > 0) {
		size_t up = (i - 1) / 2;
		if (!ev_less(&r->h[i], &r->h[up]))
			break;
		struct ev tmp = r->h[i];
		r->h[i] = r->h[up];
		r->h[up] = tmp;
		i = up;
	}
	return PX_OK;
}

static struct ev heap_pop(struct run *r)
{
	struct ev top = r->h[0];
	size_t i = 0;

	r->h[0] = r->h[--r->hn];
	for (;;) {
		size_t l = 2 * i + 1, m = i;
		if (l < r->hn && ev_less(&r->h[l], &r->h[m]))
			m = l;
		if (l + 1 < r->hn && ev_less(&r->h[l + 1], &r->h[m]))
			m = l + 1;
		if (m == i)
			break;
		struct ev tmp = r->h[i];
		r->h[i] = r->h[m];
		r->h[m] = tmp;
		i = m;
	}
	return top;
}

static enum px_err emit(struct run *r, enum sim_event_kind k, size_t slot,
			const char *detail, int64_t amount)
{
	const struct pol_instance *v = slot < r->n ? &r->pub[slot] : NULL;
	struct sim_event e = {
		.t_s = r->now, .kind = k, .detail = detail,
		.amount_uusd = amount,
	};

	if (!r->p->setup.sink)
		return PX_OK;
	if (v) {
		e.instance = v->id;
		e.reliable = v->reliable;
		e.type = r->env->types[v->type].name;
		e.bid_uusd = v->bid_uusd;
		if (v->market >= 0) {
			const struct market *m = &r->p->setup.ms->v[
				r->env->markets[v->market].market];
			e.zone = m->zone;
			market_price_at(m, r->now, &e.price_uusd);
		}
	}
	if (r->p->setup.sink(&e, r->p->setup.sink_ctx) != PX_OK)
		return px_errorf(r->err, PX_ECANCELED, "event sink stopped "
				 "the run at %s", sim_event_name(k));
	return PX_OK;
}

static long find_slot(const struct run *r, uint64_t id)
{
	for (size_t i = 0; i < r->n; i++)
		if (r->pub[i].id == id)
			return (long)i;
	return -1;
}

static void update_rate(struct run *r)
{
	r->rate = jobspec_fleet_rate(r->env->job, r->n_contrib, r->s_contrib);
}

/* The instance in slot stops contributing; lose its unsynced work. */
static void stop_contrib(struct run *r, size_t slot, bool lose)
{
	struct pol_instance *v = &r->pub[slot];
	double sp = r->env->types[v->type].speed;

	if (!r->priv[slot].ready)
		return;
	if (lose && r->s_contrib > 0) {
		double share = r->rate * sp / r->s_contrib;
		double lost_s = pol_loss_s(r->env);
		if (lost_s > r->now - v->ready_s)
			lost_s = (double)(r->now - v->ready_s);
		r->work -= share * lost_s / BILLING_HOUR_S;
		if (r->work < 0)
			r->work = 0;
	}
	r->priv[slot].ready = false;
	r->n_contrib--;
	r->s_contrib -= sp;
	if (r->n_contrib == 0)
		r->s_contrib = 0;
	update_rate(r);
}

/* End the instance in slot now; provider says who ended it. */
static enum px_err end_inst(struct run *r, size_t slot, bool provider,
			    const char *why)
{
	struct inst *in = &r->priv[slot];
	struct pol_instance *v = &r->pub[slot];
	int64_t c;
	enum px_err e;

	stop_contrib(r, slot, provider);
	c = billing_acct_end(&in->bill, r->now, provider ?
			     BILLING_END_PROVIDER : BILLING_END_USER);
	r->cost_ended += c;
	r->res->instance_hours += (double)(r->now - v->launch_s) /
				  BILLING_HOUR_S;
	r->res->free_hours += (double)in->bill.free_s / BILLING_HOUR_S;
	if (provider)
		r->res->evictions++;
	e = emit(r, provider ? SIM_EV_EVICTION : SIM_EV_RELEASE, slot, why,
		 c);
	r->n--;
	if (slot != r->n) {
		r->pub[slot] = r->pub[r->n];
		r->priv[slot] = r->priv[r->n];
	}
	r->fleet_changed = true;
	return e;
}

static uint64_t splitmix(uint64_t x)
{
	x += 0x9E3779B97F4A7C15ull;
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
	x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
	return x ^ (x >> 31);
}

static enum px_err launch(struct run *r, int market, int type, bool reliable,
			  int64_t bid)
{
	const struct pol_env *env = r->env;
	const struct market *m = NULL;
	struct pol_instance *v;
	struct inst *in;
	int64_t p = 0;
	enum px_err e;

	if (r->n == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 64;
		struct pol_instance *a = px_reallocarray(r->pub, cap,
							 sizeof *a);
		if (!a)
			return px_errorf(r->err, PX_ENOMEM, "out of memory");
		r->pub = a;
		struct inst *b = px_reallocarray(r->priv, cap, sizeof *b);
		if (!b)
			return px_errorf(r->err, PX_ENOMEM, "out of memory");
		r->priv = b;
		r->cap = cap;
	}
	v = &r->pub[r->n];
	in = &r->priv[r->n];
	memset(v, 0, sizeof *v);
	memset(in, 0, sizeof *in);
	v->id = ++r->next_id;
	v->reliable = reliable;
	v->type = type;
	v->market = market;
	v->bid_uusd = market >= 0 ? bid : 0;
	v->launch_s = r->now;
	v->ready_s = r->now + env->job->startup_seconds;
	v->period_end_s = r->now + BILLING_HOUR_S;
	in->warn_s = in->evict_s = MARKET_NONE;
	if (market >= 0) {
		m = &r->p->setup.ms->v[env->markets[market].market];
		market_price_at(m, r->now, &p);
		in->warn_s = market_first_above(m, r->now, bid);
		if (env->billing == BILLING_PER_SECOND &&
		    env->types[type].interrupt_per_h > 0) {
			uint64_t x = splitmix(env->seed ^
					      splitmix(v->id));
			double u = ((x >> 11) + 1.0) / 9007199254740993.0;
			double h = -log(u) / env->types[type].interrupt_per_h;
			int64_t t = r->now + (int64_t)ceil(h * 3600);
			if (h < 1e9 && t < in->warn_s)
				in->warn_s = t;
		}
	}
	billing_acct_start(&in->bill, env->billing, m,
			   env->types[type].od_uusd, r->now);
	v->hour_uusd = m ? p : env->types[type].od_uusd;
	r->n++;
	r->res->instances_launched++;
	r->fleet_changed = true;
	e = emit(r, SIM_EV_LAUNCH, r->n - 1, NULL, 0);
	if (e != PX_OK)
		return e;
	if (v->ready_s <= r->now) {
		in->ready = true;
		r->n_contrib++;
		r->s_contrib += env->types[type].speed;
		update_rate(r);
	} else if ((e = heap_push(r, v->ready_s, EV_READY, v->id)) != PX_OK) {
		return e;
	}
	e = heap_push(r, v->period_end_s, EV_HOUR, v->id);
	if (e == PX_OK && in->warn_s != MARKET_NONE)
		e = heap_push(r, in->warn_s, EV_WARN, v->id);
	return e;
}

static int live_spot(const struct run *r)
{
	int n = 0;
	for (size_t i = 0; i < r->n; i++)
		if (r->pub[i].market >= 0 && !r->pub[i].warned)
			n++;
	return n;
}

static enum px_err reject(struct run *r, const char *why)
{
	return emit(r, SIM_EV_REJECT, SIZE_MAX, why, 0);
}

static enum px_err apply(struct run *r)
{
	const struct pol_env *env = r->env;
	enum px_err e = PX_OK;

	for (size_t i = 0; i < r->acts.n && e == PX_OK; i++) {
		const struct pol_action *a = &r->acts.v[i];
		if (a->kind == POL_RELEASE) {
			long s = find_slot(r, a->instance);
			e = emit(r, SIM_EV_DECIDE_RELEASE, s < 0 ? SIZE_MAX :
				 (size_t)s, NULL, 0);
			if (e == PX_OK && s >= 0)
				e = end_inst(r, (size_t)s, false, "policy");
			continue;
		}
		if (r->p->setup.sink) {
			struct sim_event ev = {
				.t_s = r->now, .kind = SIM_EV_DECIDE_ACQUIRE,
				.reliable = a->reliable, .count = a->count,
				.bid_uusd = a->bid_uusd,
			};
			if (a->market >= 0 && (size_t)a->market <
			    env->n_markets) {
				ev.zone = env->markets[a->market].zone;
				ev.type = env->types[
					env->markets[a->market].type].name;
			} else if (a->type >= 0 &&
				   (size_t)a->type < env->n_types) {
				ev.type = env->types[a->type].name;
			}
			if (r->p->setup.sink(&ev, r->p->setup.sink_ctx) !=
			    PX_OK)
				return px_errorf(r->err, PX_ECANCELED,
						 "event sink stopped the run");
		}
		for (int c = 0; c < a->count && e == PX_OK; c++) {
			if (a->market < 0) {
				if (a->type < 0 || (size_t)a->type >=
				    env->n_types || r->n >= FLEET_MAX)
					e = reject(r, "bad on-demand request");
				else
					e = launch(r, -1, a->type, true, 0);
				continue;
			}
			if ((size_t)a->market >= env->n_markets) {
				e = reject(r, "no such market");
				continue;
			}
			const struct market *m = &r->p->setup.ms->v[
				env->markets[a->market].market];
			int64_t p;
			int cap = env->job->spot.max_instances >
				  env->job->instances ?
				  env->job->spot.max_instances :
				  env->job->instances;
			if (live_spot(r) >= cap)
				e = reject(r, "spot.max_instances reached");
			else if (!market_price_at(m, r->now, &p) ||
				 p > a->bid_uusd)
				e = reject(r, "bid below the market price");
			else
				e = launch(r, a->market,
					   env->markets[a->market].type,
					   false, a->bid_uusd);
		}
	}
	return e;
}

static int64_t cost_now(struct run *r)
{
	int64_t c = r->cost_ended;
	for (size_t i = 0; i < r->n; i++)
		c += billing_acct_advance(&r->priv[i].bill, r->now);
	r->cost_now = c;
	return c;
}

static enum px_err record(struct run *r)
{
	struct sim_result *res = r->res;
	struct sim_point *pt;
	int spot = 0, od = 0;

	cost_now(r);
	if (!r->p->setup.series)
		return PX_OK;
	if (res->n_series && res->series[res->n_series - 1].t_s == r->now) {
		pt = &res->series[res->n_series - 1];
	} else {
		if ((res->n_series & (res->n_series - 1)) == 0) {
			size_t cap = res->n_series ? res->n_series * 2 : 64;
			struct sim_point *v = px_reallocarray(res->series,
							      cap, sizeof *v);
			if (!v)
				return px_errorf(r->err, PX_ENOMEM,
						 "out of memory");
			res->series = v;
		}
		pt = &res->series[res->n_series++];
	}
	for (size_t i = 0; i < r->n; i++) {
		spot += r->pub[i].market >= 0 && !r->pub[i].warned;
		od += r->pub[i].market < 0;
	}
	pt->t_s = r->now;
	pt->cost_uusd = r->cost_now;
	pt->spot = spot;
	pt->ondemand = od;
	pt->work_done_h = r->work;
	return PX_OK;
}

static enum px_err decide(struct run *r, unsigned why)
{
	struct market_view mv = {.ms = r->p->setup.ms, .now_s = r->now,
				 .cursor = r->cursor};
	struct pol_fleet f = {.v = r->pub, .n = r->n};
	struct pol_progress pr = {
		.start_s = r->p->start_s, .work_done_h = r->work,
		.work_total_h = r->env->job->work_hours, .rate_h = r->rate,
		.cost_uusd = r->cost_now,
	};
	struct pol_input in = {
		.now_s = r->now, .why = why, .mv = &mv, .fleet = &f,
		.progress = &pr,
	};
	enum px_err e;

	r->acts.n = 0;
	r->res->decisions++;
	e = r->ops->decide(r->pstate, &in, &r->acts, r->err);
	if (e != PX_OK)
		return e;
	return apply(r);
}

/* Handle one popped event; sets bits in *why. */
static enum px_err handle(struct run *r, const struct ev *ev, unsigned *why)
{
	const struct pol_env *env = r->env;
	long s;

	switch (ev->kind) {
	case EV_PRICE: {
		const struct market *m = &r->p->setup.ms->v[
			env->markets[ev->id].market];
		*why |= POL_WHY_PRICE;
		return heap_push(r, market_next_change(m, r->now), EV_PRICE,
				 ev->id);
	}
	case EV_TICK:
		*why |= POL_WHY_TICK;
		return heap_push(r, r->now + env->job->tick_seconds, EV_TICK,
				 0);
	default:
		break;
	}
	s = find_slot(r, ev->id);
	if (s < 0)
		return PX_OK;
	struct pol_instance *v = &r->pub[s];
	struct inst *in = &r->priv[s];
	switch (ev->kind) {
	case EV_READY:
		if (in->ready || v->warned)
			return PX_OK;
		in->ready = true;
		r->n_contrib++;
		r->s_contrib += env->types[v->type].speed;
		update_rate(r);
		return emit(r, SIM_EV_READY, (size_t)s, NULL, 0);
	case EV_WARN:
		if (v->warned || in->warn_s != r->now)
			return PX_OK;
		if (env->warning_s <= 0) {
			*why |= POL_WHY_EVICTION;
			return end_inst(r, (size_t)s, true, "no warning");
		}
		v->warned = true;
		*why |= POL_WHY_WARNING;
		stop_contrib(r, (size_t)s, true);
		in->evict_s = r->now + env->warning_s;
		r->fleet_changed = true;
		enum px_err e = emit(r, SIM_EV_WARNING, (size_t)s, NULL, 0);
		if (e != PX_OK)
			return e;
		if (in->evict_s > r->p->end_s)
			return PX_OK;
		return heap_push(r, in->evict_s, EV_EVICT, v->id);
	case EV_EVICT:
		if (in->evict_s != r->now)
			return PX_OK;
		*why |= POL_WHY_EVICTION;
		return end_inst(r, (size_t)s, true, "price above bid or "
				"capacity");
	case EV_HOUR:
		if (v->period_end_s != r->now)
			return PX_OK;
		*why |= POL_WHY_HOUR_END;
		if (r->n_hour == r->cap_hour) {
			size_t cap = r->cap_hour ? r->cap_hour * 2 : 16;
			uint64_t *a = px_reallocarray(r->hour, cap, sizeof *a);
			if (!a)
				return px_errorf(r->err, PX_ENOMEM,
						 "out of memory");
			r->hour = a;
			r->cap_hour = cap;
		}
		r->hour[r->n_hour++] = v->id;
		return PX_OK;
	default:
		return PX_OK;
	}
}

/* Charge the new hour of instances whose hour ended now and kept going. */
static enum px_err next_hours(struct run *r)
{
	for (size_t i = 0; i < r->n_hour; i++) {
		long s = find_slot(r, r->hour[i]);
		if (s < 0)
			continue;
		struct pol_instance *v = &r->pub[s];
		struct inst *in = &r->priv[s];
		billing_acct_advance(&in->bill, r->now);
		v->hour_uusd = in->bill.model == BILLING_LEGACY_HOURLY ?
			       in->bill.last_hour_uusd : v->hour_uusd;
		if (v->market >= 0 && in->bill.model != BILLING_LEGACY_HOURLY)
			market_price_at(in->bill.m, r->now, &v->hour_uusd);
		v->period_end_s = r->now + BILLING_HOUR_S;
		enum px_err e = heap_push(r, v->period_end_s, EV_HOUR, v->id);
		if (e != PX_OK)
			return e;
	}
	r->n_hour = 0;
	return PX_OK;
}

static enum px_err finish(struct run *r, bool completed)
{
	enum px_err e = PX_OK;
	struct sim_result *res = r->res;

	while (r->n > 0 && e == PX_OK)
		e = end_inst(r, r->n - 1, false, completed ? "job done" :
			     "run ended");
	if (e != PX_OK)
		return e;
	e = record(r);
	if (e != PX_OK)
		return e;
	res->completed = completed;
	res->cost_uusd = r->cost_ended;
	res->cost_usd = (double)r->cost_ended / PX_UUSD_PER_USD;
	res->runtime_hours = (double)(r->now - r->p->start_s) /
			     BILLING_HOUR_S;
	res->work_done_hours = r->work;
	res->cost_per_work_usd = r->work > 0 ? res->cost_usd / r->work : 0;
	return emit(r, SIM_EV_DONE, SIZE_MAX, completed ? "completed" :
		    "not completed", r->cost_ended);
}

static enum px_err run_loop(struct run *r)
{
	const struct sim_plan *p = r->p;
	const struct jobspec *j = r->env->job;
	int64_t end = p->end_s;
	enum px_err e;
	unsigned wants = r->ops->wants;

	if (j->deadline_hours > 0 &&
	    p->start_s + (int64_t)(j->deadline_hours * 3600) < end)
		end = p->start_s + (int64_t)(j->deadline_hours * 3600);
	r->now = p->start_s;
	for (size_t i = 0; (wants & POL_WHY_PRICE) && i < r->env->n_markets;
	     i++) {
		const struct market *m = &p->setup.ms->v[
			r->env->markets[i].market];
		e = heap_push(r, market_next_change(m, r->now), EV_PRICE, i);
		if (e != PX_OK)
			return e;
	}
	e = heap_push(r, r->now + j->tick_seconds, EV_TICK, 0);
	if (e == PX_OK)
		e = decide(r, POL_WHY_START);
	if (e == PX_OK)
		e = record(r);
	while (e == PX_OK) {
		int64_t tn = r->hn ? r->h[0].t : INT64_MAX;
		int64_t lim = tn < end ? tn : end;
		unsigned why = 0;

		if (r->rate > 0) {
			double left = j->work_hours - r->work;
			/* tolerance for rounding in the accumulated work */
			int64_t td = r->now + (int64_t)ceil(left * 3600 /
							    r->rate - 1e-6);
			if (left <= 0)
				td = r->now;
			if (td <= lim) {
				r->work = j->work_hours;
				r->now = td;
				return finish(r, true);
			}
		}
		if (tn > end) {
			r->work += r->rate * (double)(end - r->now) / 3600;
			r->now = end;
			return finish(r, false);
		}
		r->work += r->rate * (double)(tn - r->now) / 3600;
		r->now = tn;
		r->fleet_changed = false;
		while (e == PX_OK && r->hn && r->h[0].t == r->now) {
			struct ev ev = heap_pop(r);
			e = handle(r, &ev, &why);
		}
		if (e == PX_OK && (why & wants))
			e = decide(r, why);
		if (e == PX_OK && r->n_hour)
			e = next_hours(r);
		if (e == PX_OK && (r->fleet_changed || (why & POL_WHY_TICK)))
			e = record(r);
		if (e == PX_OK && j->budget_uusd > 0 &&
		    r->cost_now >= j->budget_uusd)
			return finish(r, false);
	}
	return e;
}

enum px_err sim_run(const struct sim_plan *plan,
		    const struct policy_ops *policy, struct sim_result *ret,
		    struct px_error *err)
{
	struct run r;
	struct sim_result res;
	enum px_err e;

	memset(&r, 0, sizeof r);
	memset(&res, 0, sizeof res);
	snprintf(res.policy, sizeof res.policy, "%s", policy->name);
	r.p = plan;
	r.env = &plan->env;
	r.ops = policy;
	r.res = &res;
	r.err = err;
	r.cursor = px_calloc(plan->setup.ms->n ? plan->setup.ms->n : 1,
			     sizeof *r.cursor);
	if (!r.cursor)
		return px_errorf(err, PX_ENOMEM, "out of memory");
	e = policy->init(&plan->env, &r.pstate, err);
	if (e != PX_OK) {
		free(r.cursor);
		px_error_prefix(err, "policy '%s': ", policy->name);
		return e;
	}
	e = run_loop(&r);
	policy->fini(r.pstate);
	free(r.pub);
	free(r.priv);
	free(r.h);
	free(r.hour);
	free(r.cursor);
	pol_actions_release(&r.acts);
	if (e != PX_OK) {
		sim_result_release(&res);
		return e;
	}
	*ret = res;
	return PX_OK;
}

void sim_result_release(struct sim_result *r)
{
	if (!r)
		return;
	free(r->series);
	r->series = NULL;
	r->n_series = 0;
}
