/* world.c -- what the worlds share (world.h): the registry of worlds by
 * name, the event driver their run_due share, and when a spot instance
 * gets its eviction notice: the trace's price against its bid, and
 * per-second capacity events per pool. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ec2_world.h"
#include "local.h"
#include "sim.h"
#include "../controller.h"
#include "../evq.h"
#include "../world.h"

/* ---- the registry ---- */

/* The one table of worlds: the built-in ones, then the added. */
static const struct world_ops *const builtin[] = {
	&sim_world_ops, &lworld_ops, &ec2_world_ops,
};
#define N_BUILTIN (sizeof builtin / sizeof builtin[0])
static const struct world_ops *added[WORLD_REGISTER_MAX];
static size_t n_added;

const struct world_ops *world_ops_at(size_t i)
{
	if (i < N_BUILTIN)
		return builtin[i];
	return i - N_BUILTIN < n_added ? added[i - N_BUILTIN] : NULL;
}

const struct world_ops *world_ops_by_name(const char *name)
{
	const struct world_ops *o;

	for (size_t i = 0; name && (o = world_ops_at(i)) != NULL; i++)
		if (!strcmp(o->name, name))
			return o;
	return NULL;
}

static bool good_name(const char *s)
{
	size_t n = s ? strlen(s) : 0;

	if (n == 0 || n >= WORLD_NAME_MAX)
		return false;
	for (; *s; s++)
		if (!strchr("abcdefghijklmnopqrstuvwxyz0123456789_", *s))
			return false;
	return true;
}

enum px_err world_register(const struct world_ops *o, struct px_error *err)
{
	if (!o || !good_name(o->name))
		return px_errorf(err, PX_EINVAL, "world_register: a world's "
				 "name is 1 to %d of [a-z0-9_]",
				 WORLD_NAME_MAX - 1);
	if (world_ops_by_name(o->name))
		return px_errorf(err, PX_EINVAL, "world_register: '%s' is "
				 "taken", o->name);
	if (n_added == WORLD_REGISTER_MAX)
		return px_errorf(err, PX_ETOOBIG, "world_register: at most %d "
				 "worlds added", WORLD_REGISTER_MAX);
	added[n_added++] = o;
	return PX_OK;
}

size_t world_daemon_names(char *buf, size_t len, const char *quote,
			  const char *last)
{
	const struct world_ops *o;
	size_t n = 0, total = 0, at = 0;

	for (size_t i = 0; (o = world_ops_at(i)) != NULL; i++)
		total += o->create != NULL;
	if (len)
		buf[0] = 0;
	for (size_t i = 0; (o = world_ops_at(i)) != NULL; i++) {
		if (!o->create)
			continue;
		if (at < len)
			at += (size_t)snprintf(buf + at, len - at, "%s%s%s%s",
					       !n ? "" : n + 1 == total ?
					       last : ", ", quote, o->name,
					       quote);
		n++;
	}
	return n;
}

/* ---- the event driver ---- */

enum px_err world_drive_instant(const struct world_drive *d, int64_t t,
				struct ctrl_progress *p, struct px_error *err)
{
	enum px_err e = PX_OK;
	unsigned why = 0;

	ctrl_take_changed(d->c);
	while (e == PX_OK && d->q->n && (evq_top(d->q)->t == t ||
					 (d->retime && evq_top(d->q)->t <= t))) {
		struct evq_ev ev = evq_pop(d->q);

		ev.t = t;
		e = d->handle(d->w, &ev, &why, err);
	}
	if (e != PX_OK)
		return e;
	if (d->step_t)
		*d->step_t = t;
	if (d->progress)
		d->progress(d->w, p);
	e = ctrl_step(d->c, t, why, p);
	if (e != PX_OK) {
		if (err)
			px_errorf(err, e, "%s", ctrl_error(d->c)->msg);
		return e;
	}
	if (!ctrl_take_changed(d->c) && !(why & POL_WHY_TICK))
		return PX_OK;
	if (d->books)
		return d->books(d->w, t, err);
	ctrl_cost(d->c, t);
	return PX_OK;
}

enum px_err world_drive_due(const struct world_drive *d, int64_t now,
			    const struct ctrl_progress *p, int64_t *ret_t,
			    int *ret_stop, struct px_error *err)
{
	struct ctrl_progress pg = *p;
	enum px_err e = PX_OK;

	*ret_stop = CTRL_RUN;
	while (e == PX_OK && d->q->n && evq_top(d->q)->t <= now) {
		int64_t t = evq_top(d->q)->t;

		if (d->retime)
			t = d->step_t && *d->step_t > now ? *d->step_t : now;
		e = world_drive_instant(d, t, &pg, err);
		*ret_t = t;
		if (e == PX_OK) {
			*ret_stop = ctrl_stop(d->c, t, p);
			if (*ret_stop != CTRL_RUN)
				return PX_OK;
		}
	}
	return e;
}

/* Buckets of pool events: the mean count per bucket stays at most this,
 * so that drawing it by inversion is short and exact. */
#define POOL_BUCKET_MEAN 4.0

static uint64_t splitmix(uint64_t x)
{
	x += 0x9E3779B97F4A7C15ull;
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
	x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
	return x ^ (x >> 31);
}

/* Uniform in (0, 1]. */
static double unit(uint64_t x)
{
	return ((x >> 11) + 1.0) / 9007199254740993.0;
}

/* A pool's key: its zone and type (not a market index, which depends on
 * the job). */
static uint64_t pool_key(const struct market *m)
{
	uint64_t h = 1469598103934665603ull;

	for (const char *p = m->zone; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ull;
	h = (h ^ '/') * 1099511628211ull;
	for (const char *p = m->type; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ull;
	return h;
}

/* The pool process of one market under env: events per second, bucket
 * length and the per-bucket mean. */
struct pool {
	uint64_t seed;           /* env seed mixed with the pool's key */
	int64_t bucket_s;
	double mean;             /* events per bucket */
	double share;            /* chance an event takes a given instance */
};

static bool pool_of(const struct pol_env *env, const struct market *m,
		    int type, struct pool *ret)
{
	double rate = env->types[type].interrupt_per_h, q = env->pool_share;
	double ev_h, per;

	if (env->billing != BILLING_PER_SECOND || !(rate > 0))
		return false;
	if (!(q > 0) || q > 1)
		q = 1;
	ev_h = rate / q;
	if (!isfinite(ev_h))
		return false;
	per = ceil(ev_h / POOL_BUCKET_MEAN);
	ret->bucket_s = per > BILLING_HOUR_S ? 1 :
			(int64_t)(BILLING_HOUR_S / per);
	ret->mean = ev_h * (double)ret->bucket_s / BILLING_HOUR_S;
	ret->seed = splitmix(env->seed ^ splitmix(pool_key(m)));
	ret->share = q;
	return true;
}

/* Events of bucket b: their count, and the j-th one's time. */
static int pool_count(const struct pool *pl, int64_t b)
{
	double u = unit(splitmix(pl->seed ^ splitmix((uint64_t)b * 2 + 1)));
	double pk = exp(-pl->mean), cum = pk;
	int k = 0;

	while (u > cum && k < 1000) {
		k++;
		pk *= pl->mean / k;
		cum += pk;
	}
	return k;
}

static uint64_t event_hash(const struct pool *pl, int64_t b, int j)
{
	return splitmix(pl->seed ^ splitmix((uint64_t)b * 2 + 2) ^
			splitmix((uint64_t)j + 0x51ull));
}

static int64_t pool_time(const struct pool *pl, int64_t b, int j)
{
	double u = unit(event_hash(pl, b, j));
	int64_t off = (int64_t)((1 - u) * (double)pl->bucket_s);

	if (off >= pl->bucket_s)
		off = pl->bucket_s - 1;
	return b * pl->bucket_s + off;
}

static bool pool_takes(const struct pool *pl, int64_t b, int j, uint64_t id)
{
	return unit(splitmix(event_hash(pl, b, j) ^ splitmix(id))) <=
	       pl->share;
}

static int64_t floor_div(int64_t a, int64_t b)
{
	return a / b - (a % b != 0 && (a < 0) != (b < 0));
}

int64_t world_notice_at(const struct pol_env *env, const struct market *m,
			int type, uint64_t id, int64_t now, int64_t bid_uusd)
{
	int64_t at = market_first_above(m, now, bid_uusd);
	int64_t last = m->n ? m->t_s[m->n - 1] : now;
	struct pool pl;

	if (!pool_of(env, m, type, &pl))
		return at;
	/* no world runs past the trace's last record */
	if (last < now)
		last = now;
	for (int64_t b = floor_div(now, pl.bucket_s);
	     b * pl.bucket_s < at && b * pl.bucket_s <= last; b++) {
		int n = pool_count(&pl, b);
		int64_t first = MARKET_NONE;

		for (int j = 0; j < n; j++) {
			int64_t t = pool_time(&pl, b, j);

			if (t > now && t < first && pool_takes(&pl, b, j, id))
				first = t;
		}
		if (first != MARKET_NONE)
			return first < at ? first : at;
	}
	return at;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

enum px_err world_pool_events(const struct pol_env *env,
			      const struct market *m, int type, int64_t from,
			      int64_t to, int64_t **ret, size_t *ret_n,
			      struct px_error *err)
{
	int64_t *v = NULL;
	size_t n = 0, cap = 0;
	struct pool pl;

	*ret = NULL;
	*ret_n = 0;
	if (!pool_of(env, m, type, &pl) || to <= from)
		return PX_OK;
	for (int64_t b = floor_div(from, pl.bucket_s); b * pl.bucket_s <= to;
	     b++) {
		int k = pool_count(&pl, b);
		size_t n0 = n;

		for (int j = 0; j < k; j++) {
			int64_t t = pool_time(&pl, b, j);

			if (t <= from || t > to)
				continue;
			if (n == cap) {
				size_t c = cap ? cap * 2 : 256;
				int64_t *a = px_reallocarray(v, c, sizeof *a);

				if (!a) {
					free(v);
					return px_errorf(err, PX_ENOMEM,
							 "out of memory");
				}
				v = a;
				cap = c;
			}
			v[n++] = t;
		}
		if (n > n0)
			qsort(v + n0, n - n0, sizeof *v, cmp_i64);
	}
	*ret = v;
	*ret_n = n;
	return PX_OK;
}
