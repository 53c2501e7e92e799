/* oracle.c -- the hindsight bound (oracle.h; docs/simulate.md, "The
 * oracle").
 *
 * 1. Each spot market's cost per instance-hour c_m(t) over the window, as
 *    pieces: constant between candidate instants where a sliding window
 *    of the price series gains or loses a record.
 * 2. The window cut into slots at every piece boundary; in each slot the
 *    cheapest way to get any work rate w from at most C spot instances is
 *    the lower convex hull of the points (C * speed, C * c) of each type's
 *    cheapest market and the origin: convex and piecewise linear.  Under
 *    a flat scaling each hull segment is cut into pieces whose work is
 *    their speed times the fleet's slope g' at their start (struct scale).
 * 3. Hull segments cheaper per work than the best on-demand type, sorted
 *    by cost per work in a Fenwick tree, inserted slot by slot in time
 *    order: after slot k, the cheapest way F(X) to get X work-hours
 *    before the slot's end g_k+1 is the prefix of the tree holding X (the
 *    rest on demand).  A plan ending at T in (g_k, g_k+1] pays at least
 *    tier(T) + F(work - tier_work(T)).  Legacy: the tier's cost is one
 *    step within the interval (hour ends are grid points) and F falls as
 *    T grows, so T = g_k+1 gives the least.  Per-second: F's slope (at
 *    most the cheapest on-demand cost per work) times the tier's work
 *    rate is at most the tier's cost rate, so the sum grows with T and
 *    T = g_k + 1 s gives the least.
 */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "oracle.h"

/* The plan's end is looked at every ORACLE_GRID_S at least: the bound of
 * an end in (a, b] takes the tier's cost at a and its work at b, so a
 * coarser grid would loosen it by up to the tier's cost of a step. */
#define ORACLE_GRID_S 60

/* A market's cost per instance-hour from t on; INFINITY: no instance of
 * it can contribute then. */
struct piece {
	int64_t t;
	double c;
};

struct pieces {
	struct piece *v;
	size_t n, cap;
};

struct i64s {
	int64_t *v;
	size_t n, cap;
};

static enum px_err i64_push(struct i64s *a, int64_t x)
{
	if (a->n == a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 1024;
		int64_t *v = px_reallocarray(a->v, cap, sizeof *v);

		if (!v)
			return PX_ENOMEM;
		a->v = v;
		a->cap = cap;
	}
	a->v[a->n++] = x;
	return PX_OK;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/* Sort and drop repeats. */
static void sort_unique(struct i64s *a)
{
	size_t k = 0;

	qsort(a->v, a->n, sizeof *a->v, cmp_i64);
	for (size_t i = 0; i < a->n; i++)
		if (k == 0 || a->v[i] != a->v[k - 1])
			a->v[k++] = a->v[i];
	a->n = k;
}

static enum px_err piece_push(struct pieces *a, int64_t t, double c)
{
	if (a->n && a->v[a->n - 1].c == c)
		return PX_OK;
	if (a->n == a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 256;
		struct piece *v = px_reallocarray(a->v, cap, sizeof *v);

		if (!v)
			return PX_ENOMEM;
		a->v = v;
		a->cap = cap;
	}
	a->v[a->n++] = (struct piece){t, c};
	return PX_OK;
}

/* Extremum of p[lo..hi] for windows whose both ends only move right: a
 * monotone deque of indices. */
struct mono {
	const int64_t *p;
	size_t *q;
	size_t head, tail, next;
	bool max;
};

static int64_t mono_get(struct mono *m, size_t lo, size_t hi)
{
	while (m->next <= hi) {
		int64_t x = m->p[m->next];

		while (m->tail > m->head &&
		       (m->max ? m->p[m->q[m->tail - 1]] <= x :
				 m->p[m->q[m->tail - 1]] >= x))
			m->tail--;
		m->q[m->tail++] = m->next++;
	}
	while (m->q[m->head] < lo)
		m->head++;
	return m->p[m->q[m->head]];
}

/* Add x to the candidates when it lies in [S, E); false on OOM. */
static bool cand_add(struct i64s *c, int64_t x, int64_t S, int64_t E)
{
	return x < S || x >= E || i64_push(c, x) == PX_OK;
}

/* Index of the last record at or before x, moving forward from i. */
static long adv(const int64_t *t, size_t n, long i, int64_t x)
{
	while (i + 1 < (long)n && t[i + 1] <= x)
		i++;
	return i;
}

/* The pieces of env market mi over [start, end). */
static enum px_err market_pieces(const struct oracle_setup *s, size_t mi,
				 struct pieces *out, struct i64s *cand)
{
	const struct pol_env *env = s->env;
	const struct market *m = &s->ms->v[env->markets[mi].market];
	const int64_t *t = m->t_s, *p = m->price_uusd;
	const int64_t *ev = s->notices ? s->notices[mi] : NULL;
	size_t n = m->n, nev = ev ? s->n_notices[mi] : 0, jev = 0;
	bool legacy = env->billing == BILLING_LEGACY_HOURLY;
	int64_t su = env->job->startup_seconds, w = env->warning_s;
	int64_t S = s->start_s, E = s->end_s;
	/* a waived bill needs the end (notice + warning) within the hour of
	 * a start at or before x - su (per-second: the instance's start;
	 * legacy: the partial hour's, at or before x) */
	int64_t L = legacy ? BILLING_HOUR_S - w : BILLING_HOUR_S - w - su;
	int64_t fend = E - w;      /* a notice later than this ends nothing */
	long ix = -1, ib = -1, iff = -1, it = -1;
	struct mono bmax = {.p = p, .max = true};
	struct mono fmax = {.p = p, .max = true};
	struct mono tmin = {.p = p, .max = false};
	enum px_err r = PX_OK;
	bool ok;

	cand->n = 0;
	if (n == 0)
		return piece_push(out, S, INFINITY);
	bmax.q = px_calloc(n, sizeof *bmax.q);
	fmax.q = px_calloc(n, sizeof *fmax.q);
	tmin.q = px_calloc(n, sizeof *tmin.q);
	if (!bmax.q || !fmax.q || !tmin.q) {
		r = PX_ENOMEM;
		goto out;
	}
	ok = cand_add(cand, S, S, E) && cand_add(cand, fend, S, E) &&
	     cand_add(cand, fend - L, S, E);
	for (size_t i = 0; i < n && ok; i++)
		ok = cand_add(cand, t[i], S, E) &&
		     cand_add(cand, t[i] + su, S, E) &&
		     (L <= 0 || cand_add(cand, t[i] - L, S, E)) &&
		     (!legacy || cand_add(cand, t[i] + BILLING_HOUR_S, S, E));
	for (size_t i = 0; i < nev && L > 0 && ok; i++)
		ok = cand_add(cand, ev[i], S, E) &&
		     cand_add(cand, ev[i] - L, S, E);
	if (!ok) {
		r = PX_ENOMEM;
		goto out;
	}
	sort_unique(cand);
	for (size_t k = 0; k < cand->n; k++) {
		int64_t x = cand->v[k], fe = x + L < fend ? x + L : fend;
		int64_t bm, paid;
		bool free = false;
		double c;

		ix = adv(t, n, ix, x);
		ib = adv(t, n, ib, x - su);
		if (ib < 0) {
			/* nothing launched here can contribute yet */
			r = piece_push(out, x, INFINITY);
			if (r != PX_OK)
				goto out;
			continue;
		}
		bm = mono_get(&bmax, (size_t)ib, (size_t)ix);
		if (L > 0 && fe > x && !s->paid_only) {
			/* evicted for a price above every price since x - su:
			 * the price rises above that maximum by fe */
			iff = adv(t, n, iff < ix ? ix : iff, fe);
			free = mono_get(&fmax, (size_t)ix, (size_t)iff) > bm;
			/* a capacity notice by fe */
			while (jev < nev && ev[jev] <= x)
				jev++;
			free = free || (jev < nev && ev[jev] <= fe);
		}
		if (legacy) {
			it = adv(t, n, it, x - BILLING_HOUR_S);
			paid = mono_get(&tmin, it < 0 ? 0 : (size_t)it,
					(size_t)ix);
		} else {
			paid = p[ix];
		}
		c = free ? 0 : (double)paid;
		r = piece_push(out, x, c);
		if (r != PX_OK)
			goto out;
	}
out:
	free(bmax.q);
	free(fmax.q);
	free(tmin.q);
	return r;
}

/* ---- the greedy over hull segments ---- */

struct segs {
	double *slope;           /* micro-USD per work-hour */
	double *work;            /* work-hours */
	double *ih;              /* instance-hours per segment */
	size_t n, cap;
};

static enum px_err seg_push(struct segs *a, double slope, double work,
			    double ih)
{
	if (a->n == a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 4096;
		double *x = px_reallocarray(a->slope, cap, sizeof *x);

		if (!x)
			return PX_ENOMEM;
		a->slope = x;
		x = px_reallocarray(a->work, cap, sizeof *x);
		if (!x)
			return PX_ENOMEM;
		a->work = x;
		x = px_reallocarray(a->ih, cap, sizeof *x);
		if (!x)
			return PX_ENOMEM;
		a->ih = x;
		a->cap = cap;
	}
	a->slope[a->n] = slope;
	a->work[a->n] = work;
	a->ih[a->n] = ih;
	a->n++;
	return PX_OK;
}

struct fenwick {
	double *work, *cost, *ih;
	size_t n, top;           /* top: highest power of 2 <= n */
};

static void fw_add(struct fenwick *f, size_t i, double w, double c, double h)
{
	for (i++; i <= f->n; i += i & (~i + 1)) {
		f->work[i] += w;
		f->cost[i] += c;
		f->ih[i] += h;
	}
}

/* Sums over the first k ranks. */
static void fw_prefix(const struct fenwick *f, size_t k, double *w,
		      double *c, double *h)
{
	*w = *c = *h = 0;
	for (; k > 0; k -= k & (~k + 1)) {
		*w += f->work[k];
		*c += f->cost[k];
		*h += f->ih[k];
	}
}

/* The largest k with prefix work(k) < x, with that prefix's sums. */
static size_t fw_below(const struct fenwick *f, double x, double *w,
		       double *c, double *h)
{
	size_t k = 0;

	*w = *c = *h = 0;
	for (size_t b = f->top; b; b >>= 1)
		if (k + b <= f->n && *w + f->work[k + b] < x) {
			k += b;
			*w += f->work[k];
			*c += f->cost[k];
			*h += f->ih[k];
		}
	return k;
}

/* A segment's key for sorting by cost per work (ties: time order). */
struct rank_key {
	double slope;
	size_t i;
};

static int cmp_rank(const void *a, const void *b)
{
	const struct rank_key *x = a, *y = b;

	if (x->slope != y->slope)
		return x->slope < y->slope ? -1 : 1;
	return (x->i > y->i) - (x->i < y->i);
}

/* What a plan's spot and on-demand part costs for x work-hours. */
struct fill {
	double cost, free_w, spot_w, od_w, ih, free_h, spot_c, od_c;
};

static void fill_for(const struct fenwick *f, const struct segs *sg,
		     const size_t *by_rank, size_t n_free, double x,
		     double r_od, double s_od, struct fill *ret)
{
	double w, c, h, tw, tc, th;
	size_t k;

	memset(ret, 0, sizeof *ret);
	if (x <= 0)
		return;
	fw_prefix(f, f->n, &tw, &tc, &th);
	k = tw < x ? f->n : fw_below(f, x, &w, &c, &h);
	if (k >= f->n) {
		ret->spot_c = tc;
		ret->od_w = x > tw ? x - tw : 0;
		ret->od_c = ret->od_w * r_od;
		ret->ih = th + ret->od_w / s_od;
		w = tw;
	} else {
		/* rank k holds the segment that reaches x */
		size_t sidx = by_rank[k];
		double part = (x - w) / sg->work[sidx];

		ret->spot_c = c + (x - w) * sg->slope[sidx];
		ret->ih = h + part * sg->ih[sidx];
		w = x;
	}
	ret->cost = ret->spot_c + ret->od_c;
	/* free segments hold the first n_free ranks */
	fw_prefix(f, n_free, &tw, &tc, &th);
	ret->free_w = tw < w ? tw : w;
	ret->free_h = tw > 0 ? th * ret->free_w / tw : 0;
	ret->spot_w = w - ret->free_w;
}

/* Cost and work of the reliable tier over T seconds. */
static double tier_cost(const struct pol_env *env, int64_t T)
{
	double od = (double)env->types[env->reliable_type].od_uusd;
	int R = env->job->reliable.count;

	if (T <= 0 || R <= 0)
		return 0;
	if (env->billing == BILLING_LEGACY_HOURLY)
		return R * od * (double)((T + BILLING_HOUR_S - 1) /
					 BILLING_HOUR_S);
	if (T < BILLING_MIN_S)
		T = BILLING_MIN_S;
	return R * od * (double)T / BILLING_HOUR_S;
}

/* The fleet's scaling in the bound (docs/simulate.md, "The oracle", 1):
 * under a flat scaling_efficiency e the n instances of a fleet whose
 * speeds sum to S do S e^log2(n).  A fleet holding the tier (R instances,
 * speed St in all) and spot speed x has at least m(x) = R + x / smax
 * instances (smax: the fastest type of the job), so its work rate is at
 * most g(x) = (St + x) e^log2(m(x)), concave in x.  Without a flat
 * scaling (a profile, or e = 1) the bound keeps linear work. */
struct scale {
	bool on;
	double c;                /* log2(e), in [-1, 0) */
	double R, St, smax;
};

static double sc_m(const struct scale *k, double x)
{
	double m = k->R + x / k->smax;

	return m > 1 ? m : 1;
}

static double sc_eff(const struct scale *k, double m)
{
	return m > 1 ? pow(m, k->c) : 1;
}

/* g'(x): the work a unit of spot speed adds at spot speed x. */
static double sc_slope(const struct scale *k, double x)
{
	double m = k->R + x / k->smax;

	if (!k->on)
		return 1;
	if (m < 1)
		return 1;        /* no tier: the first instance alone */
	return sc_eff(k, m) * (1 + k->c * (k->St + x) / (m * k->smax));
}

/* The next piece boundary above x: m grows by sqrt 2 a piece, so the
 * slope at a piece's start (which bounds the piece's work from above,
 * g being concave) is within ~2.5% of its mean slope at e = 0.9. */
static double sc_next(const struct scale *k, double x)
{
	double m = k->R + x / k->smax;

	if (m < 1)
		return (1 - k->R) * k->smax;
	return (sc_m(k, x) * M_SQRT2 - k->R) * k->smax;
}

static void sc_init(const struct pol_env *env, struct scale *k)
{
	const struct jobspec *j = env->job;

	memset(k, 0, sizeof *k);
	if (j->profile.n > 0 || !(j->scaling_efficiency < 1) ||
	    !(j->scaling_efficiency > 0))
		return;
	k->R = j->reliable.count > 0 ? j->reliable.count : 0;
	k->St = k->R * env->types[env->reliable_type].speed;
	for (size_t i = 0; i < env->n_types; i++)
		if (env->types[i].speed > k->smax)
			k->smax = env->types[i].speed;
	if (!(k->smax > 0))
		return;
	k->c = log2(j->scaling_efficiency);
	k->on = k->c < 0 && k->c >= -1;
}

static double tier_work(const struct pol_env *env, const struct scale *k,
			int64_t T)
{
	int64_t d = T - env->job->startup_seconds;

	if (d <= 0 || env->job->reliable.count <= 0)
		return 0;
	return env->job->reliable.count *
	       env->types[env->reliable_type].speed * (double)d /
	       BILLING_HOUR_S * (k->on ? sc_eff(k, k->R) : 1);
}

/* Everything the computation allocates. */
struct work {
	struct pieces *pc;       /* per env market */
	size_t *cur;             /* per env market: current piece */
	struct i64s cand, g;
	struct segs sg;
	size_t *slot_end;        /* per slot: segments after it */
	size_t *by_rank, *rank;
	struct rank_key *keys;
	int *order;              /* types with markets, by speed */
	double *cmin;            /* per type */
	double *hx, *hy;         /* the hull */
	struct fenwick f;
	struct scale sc;
};

static void work_release(struct work *w, size_t n_markets)
{
	for (size_t i = 0; w->pc && i < n_markets; i++)
		free(w->pc[i].v);
	free(w->pc);
	free(w->cur);
	free(w->cand.v);
	free(w->g.v);
	free(w->sg.slope);
	free(w->sg.work);
	free(w->sg.ih);
	free(w->slot_end);
	free(w->by_rank);
	free(w->rank);
	free(w->keys);
	free(w->order);
	free(w->cmin);
	free(w->hx);
	free(w->hy);
	free(w->f.work);
	free(w->f.cost);
	free(w->f.ih);
}

/* The hull segments of slot [a, b), pushed to w->sg. */
static enum px_err slot_segments(const struct oracle_setup *s,
				 struct work *w, size_t n_order, int64_t a,
				 int64_t b, double C, double r_od)
{
	const struct pol_env *env = s->env;
	double d = (double)(b - a) / BILLING_HOUR_S;
	size_t nh = 1;

	for (size_t i = 0; i < env->n_markets; i++) {
		const struct pieces *pc = &w->pc[i];
		size_t k = w->cur[i];

		while (k + 1 < pc->n && pc->v[k + 1].t <= a)
			k++;
		w->cur[i] = k;
	}
	for (size_t j = 0; j < n_order; j++)
		w->cmin[w->order[j]] = INFINITY;
	for (size_t i = 0; i < env->n_markets; i++) {
		const struct pieces *pc = &w->pc[i];
		int ty = env->markets[i].type;
		double c;

		if (!pc->n || pc->v[w->cur[i]].t > a)
			continue;
		c = pc->v[w->cur[i]].c;
		if (c < w->cmin[ty])
			w->cmin[ty] = c;
	}
	/* lower hull from the origin over the types by speed */
	w->hx[0] = 0;
	w->hy[0] = 0;
	for (size_t j = 0; j < n_order; j++) {
		int ty = w->order[j];
		double x = C * env->types[ty].speed, y = C * w->cmin[ty];

		if (!isfinite(y))
			continue;
		if (w->hx[nh - 1] == x) {
			if (y >= w->hy[nh - 1])
				continue;
			nh--;
		}
		while (nh >= 2 &&
		       (w->hx[nh - 1] - w->hx[nh - 2]) * (y - w->hy[nh - 2]) -
		       (w->hy[nh - 1] - w->hy[nh - 2]) * (x - w->hx[nh - 2]) <=
		       0)
			nh--;
		w->hx[nh] = x;
		w->hy[nh] = y;
		nh++;
	}
	for (size_t k = 1; k < nh; k++) {
		double x0 = w->hx[k - 1], x1 = w->hx[k], dx = x1 - x0;
		double slope = (w->hy[k] - w->hy[k - 1]) / dx;
		/* the first segment adds C instances; later ones swap them
		 * for faster ones */
		double ih = k == 1 ? C * d : 0;

		/* under scaling, in pieces each at the work its first unit
		 * of speed adds (g is concave: never less than it does) */
		for (double p = x0, q; p < x1; p = q) {
			double gp = sc_slope(&w->sc, p);

			q = w->sc.on ? sc_next(&w->sc, p) : x1;
			if (!(q > p) || q > x1)
				q = x1;
			if (!(gp > 0) || !(slope / gp < r_od))
				return PX_OK;
			if (seg_push(&w->sg, slope / gp, gp * (q - p) * d,
				     ih * (q - p) / dx) != PX_OK)
				return PX_ENOMEM;
		}
	}
	return PX_OK;
}

enum px_err oracle_bound(const struct oracle_setup *s,
			 struct oracle_result *ret, struct px_error *err)
{
	const struct pol_env *env = s->env;
	const struct jobspec *job = env->job;
	int64_t S = s->start_s, E = s->end_s;
	int64_t su = job->startup_seconds;
	double C = job->spot.max_instances > job->instances ?
		   job->spot.max_instances : job->instances;
	double W = job->work_hours, r_od = INFINITY, s_od = 1;
	bool legacy = env->billing == BILLING_LEGACY_HOURLY;
	double best = INFINITY;
	size_t n_order = 0, n_free = 0, best_k = 0;
	struct work w;
	struct oracle_result res;
	enum px_err r = PX_OK;

	if (E <= S)
		return px_errorf(err, PX_EINVAL, "oracle: empty window");
	memset(&w, 0, sizeof w);
	memset(&res, 0, sizeof res);
	sc_init(env, &w.sc);
	for (size_t i = 0; i < env->n_types; i++) {
		const struct pol_type *ty = &env->types[i];
		double rt;

		if (!(ty->speed > 0))
			continue;
		rt = (double)ty->od_uusd / ty->speed;
		if (rt < r_od) {
			r_od = rt;
			s_od = ty->speed;
		}
	}
	if (!isfinite(r_od))
		return px_errorf(err, PX_EINVAL, "oracle: no type of the job "
				 "does any work");
	w.pc = px_calloc(env->n_markets + 1, sizeof *w.pc);
	w.cur = px_calloc(env->n_markets + 1, sizeof *w.cur);
	w.order = px_calloc(env->n_types + 1, sizeof *w.order);
	w.cmin = px_calloc(env->n_types + 1, sizeof *w.cmin);
	w.hx = px_calloc(env->n_types + 2, sizeof *w.hx);
	w.hy = px_calloc(env->n_types + 2, sizeof *w.hy);
	if (!w.pc || !w.cur || !w.order || !w.cmin || !w.hx || !w.hy)
		goto out_nomem;
	/* 1. pieces per market; slot boundaries */
	for (size_t i = 0; i < env->n_markets; i++) {
		r = market_pieces(s, i, &w.pc[i], &w.cand);
		if (r != PX_OK)
			goto out_nomem;
		for (size_t k = 0; k < w.pc[i].n; k++)
			if (i64_push(&w.g, w.pc[i].v[k].t) != PX_OK)
				goto out_nomem;
	}
	if (i64_push(&w.g, S) != PX_OK ||
	    (S + su < E && i64_push(&w.g, S + su) != PX_OK))
		goto out_nomem;
	for (int64_t h = S + ORACLE_GRID_S; h < E; h += ORACLE_GRID_S)
		if (i64_push(&w.g, h) != PX_OK)
			goto out_nomem;
	sort_unique(&w.g);
	if (i64_push(&w.g, E) != PX_OK)
		goto out_nomem;
	/* types that have markets, slowest first */
	for (size_t i = 0; i < env->n_types; i++) {
		bool has = false;

		for (size_t m = 0; m < env->n_markets && !has; m++)
			has = env->markets[m].type == (int)i;
		if (has && env->types[i].speed > 0)
			w.order[n_order++] = (int)i;
	}
	for (size_t a = 1; a < n_order; a++)
		for (size_t b = a; b > 0 && env->types[w.order[b]].speed <
		     env->types[w.order[b - 1]].speed; b--) {
			int t = w.order[b];

			w.order[b] = w.order[b - 1];
			w.order[b - 1] = t;
		}
	/* 2. hull segments per slot (none before anything can contribute) */
	w.slot_end = px_calloc(w.g.n, sizeof *w.slot_end);
	if (!w.slot_end)
		goto out_nomem;
	for (size_t k = 0; k + 1 < w.g.n; k++) {
		if (w.g.v[k] >= S + su &&
		    slot_segments(s, &w, n_order, w.g.v[k], w.g.v[k + 1], C,
				  r_od) != PX_OK)
			goto out_nomem;
		w.slot_end[k] = w.sg.n;
	}
	/* 3. ranks by cost per work; the sweep over the plan's end */
	w.by_rank = px_calloc(w.sg.n + 1, sizeof *w.by_rank);
	w.rank = px_calloc(w.sg.n + 1, sizeof *w.rank);
	w.f.n = w.sg.n;
	w.f.work = px_calloc(w.sg.n + 1, sizeof *w.f.work);
	w.f.cost = px_calloc(w.sg.n + 1, sizeof *w.f.cost);
	w.f.ih = px_calloc(w.sg.n + 1, sizeof *w.f.ih);
	if (!w.by_rank || !w.rank || !w.f.work || !w.f.cost || !w.f.ih)
		goto out_nomem;
	w.keys = px_calloc(w.sg.n + 1, sizeof *w.keys);
	if (!w.keys)
		goto out_nomem;
	for (size_t i = 0; i < w.sg.n; i++)
		w.keys[i] = (struct rank_key){w.sg.slope[i], i};
	qsort(w.keys, w.sg.n, sizeof *w.keys, cmp_rank);
	for (size_t i = 0; i < w.sg.n; i++)
		w.by_rank[i] = w.keys[i].i;
	free(w.keys);
	w.keys = NULL;
	for (size_t i = 0; i < w.sg.n; i++) {
		w.rank[w.by_rank[i]] = i;
		n_free += w.sg.slope[i] == 0;
	}
	for (w.f.top = 1; w.f.top * 2 <= w.f.n; w.f.top *= 2)
		;
	for (size_t k = 0, sj = 0; k + 1 < w.g.n; k++) {
		int64_t lo = w.g.v[k] - S, hi = w.g.v[k + 1] - S;
		struct fill fl;
		double lb;

		for (; sj < w.slot_end[k]; sj++)
			fw_add(&w.f, w.rank[sj], w.sg.work[sj],
			       w.sg.work[sj] * w.sg.slope[sj], w.sg.ih[sj]);
		/* nothing contributes before the startup is over */
		if (hi <= su)
			continue;
		fill_for(&w.f, &w.sg, w.by_rank, n_free,
			 W - tier_work(env, &w.sc, legacy ? hi : lo + 1), r_od, s_od,
			 &fl);
		lb = tier_cost(env, lo + 1) + fl.cost;
		if (lb < best) {
			int64_t T = legacy ? hi : lo + 1;

			best = lb;
			best_k = k;
			res.end_s = S + T;
			res.tier_uusd = tier_cost(env, lo + 1);
			res.spot_uusd = fl.spot_c;
			res.ondemand_uusd = fl.od_c;
			res.tier_work_h = tier_work(env, &w.sc, T);
			if (res.tier_work_h > W)
				res.tier_work_h = W;
			res.free_work_h = fl.free_w;
			res.spot_work_h = fl.spot_w;
			res.ondemand_work_h = fl.od_w;
			res.instance_hours = job->reliable.count *
					     (double)T / BILLING_HOUR_S +
					     fl.ih;
			res.free_hours = fl.free_h;
		}
	}
	(void)best_k;
	/* every bill is whole micro-dollars */
	res.done = isfinite(best);
	res.cost_uusd = res.done ? ceil(best - 1e-6) : 0;
	*ret = res;
	goto out;
out_nomem:
	r = px_errorf(err, PX_ENOMEM, "out of memory");
out:
	work_release(&w, env->n_markets);
	return r;
}
