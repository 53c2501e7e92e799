/* risk.c -- sliding-window eviction statistics per (market, bid delta). */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "risk.h"

#define RING (RISK_WINDOW_S / RISK_STEP_S)
#define NOT_EVICTED UINT16_MAX
/* Side levels: at most RISK_SIDE_MAX, folded into the trees once queries
 * have scanned RISK_SIDE_WORK times as many levels as a rebuild touches
 * (a scanned level costs a few steps, a rebuilt one 17 sums). */
#define RISK_SIDE_MAX 64
#define RISK_SIDE_WORK 4

/* A Fenwick node: sums of n and, per delta, of evicted and tau_sum side
 * by side (a query's walk reads two deltas' pairs: 32 bytes). */
struct risk_node {
	uint64_t n;
	uint64_t et[RISK_DELTAS][2];
};

/* The samples taken at one price, and of them those taken when the
 * price had come there by a rise (_up). */
struct risk_level {
	int64_t p;                    /* micro-USD */
	uint32_t n, n_up;
	uint32_t evicted[RISK_DELTAS], evicted_up[RISK_DELTAS];
	uint64_t tau_sum[RISK_DELTAS], tau_up[RISK_DELTAS];
};

struct risk_market {
	int idx;                      /* in the market set */
	int64_t delta[RISK_DELTAS];   /* micro-USD */
	int64_t next_s;               /* next sample time; INT64_MIN: unset */
	long last_i;                  /* history index of the last sample's
				       * price record (a hint; -2: none) */
	uint16_t (*ring)[RISK_DELTAS]; /* tau or NOT_EVICTED per sample */
	int64_t *p0;                  /* price at each sample; -1: none */
	bool *up;                     /* each sample's price came by a rise */
	long now_i;                   /* history index of now_p; -1: none */
	int64_t now_p;                /* the price at the last update; -1 */
	bool now_up;                  /* ... and whether it came by a rise */
	/* Levels in the trees: by price, ascending; a level whose samples
	 * have all gone stays (n == 0, nempty of them) until the next
	 * rebuild, so that positions hold */
	struct risk_level *lv;
	int64_t *lvp;                 /* lv[i].p, dense for the searches */
	size_t nlv, caplv, nempty;
	/* Levels that came since the last rebuild, by price, ascending:
	 * queries scan them (side_work counts the levels scanned) until
	 * that costs more than a rebuild */
	struct risk_level *side;
	size_t nside, capside;
	uint64_t side_work;
	/* Fenwick trees over lv's positions (1-based) of n, evicted[k] and
	 * tau_sum[k], updated in place when a level's counts change; stale
	 * (fw_dirty) from a merge until a rebuild succeeds */
	struct risk_node *fw;
	size_t capfw;
	bool fw_dirty;
	size_t head, count;
	uint32_t evicted[RISK_DELTAS];
	uint64_t tau_sum[RISK_DELTAS];
};

struct risk {
	struct risk_market *m;
	size_t n;
	const struct market_view *mv; /* the last risk_update's */
};

static const double fracs[RISK_DELTAS] = RISK_DELTA_FRACS;

enum px_err risk_new(size_t n, const int *market_idx, const int64_t *od_uusd,
		     struct risk **ret, struct px_error *err)
{
	struct risk *r = px_calloc(1, sizeof *r);

	if (!r)
		goto out_nomem;
	r->m = px_calloc(n ? n : 1, sizeof *r->m);
	if (!r->m)
		goto out_nomem;
	r->n = n;
	for (size_t i = 0; i < n; i++) {
		struct risk_market *m = &r->m[i];
		m->idx = market_idx[i];
		m->next_s = INT64_MIN;
		for (int k = 0; k < RISK_DELTAS; k++)
			m->delta[k] = (int64_t)(fracs[k] *
						(double)od_uusd[i] + 0.5);
		m->now_i = -1;
		m->now_p = -1;
		m->last_i = -2;
		m->ring = px_calloc(RING, sizeof *m->ring);
		m->p0 = px_calloc(RING, sizeof *m->p0);
		m->up = px_calloc(RING, sizeof *m->up);
		if (!m->ring || !m->p0 || !m->up)
			goto out_nomem;
	}
	*ret = r;
	return PX_OK;
out_nomem:
	risk_free(r);
	return px_errorf(err, PX_ENOMEM, "out of memory");
}

void risk_free(struct risk *r)
{
	if (!r)
		return;
	for (size_t i = 0; r->m && i < r->n; i++) {
		free(r->m[i].ring);
		free(r->m[i].p0);
		free(r->m[i].up);
		free(r->m[i].lv);
		free(r->m[i].lvp);
		free(r->m[i].side);
		free(r->m[i].fw);
	}
	free(r->m);
	free(r);
}

/* Index of the last of t[0..n) (ascending) that is <= x (-1 if none);
 * branch-free: the queries' bids land anywhere, and a mispredicted
 * branch per step cost more than the step. */
static long last_le(const int64_t *t, size_t n, int64_t x)
{
	const int64_t *b = t;

	if (n == 0)
		return -1;
	while (n > 1) {
		size_t half = n / 2;

		b = b[half] <= x ? b + half : b;
		n -= half;
	}
	return (long)(b - t) + (*b <= x) - 1;
}

/* Where price p is in v[0..n) (by price): its index, or where it would
 * go (*ret_found false). */
static size_t level_find(const struct risk_level *v, size_t n, int64_t p,
			 bool *ret_found)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (v[mid].p < p)
			lo = mid + 1;
		else
			hi = mid;
	}
	*ret_found = lo < n && v[lo].p == p;
	return lo;
}

/* Count one sample in (sign 1) or out of (-1) level l. */
static void level_count(struct risk_level *l, const uint16_t *tau, bool up,
			int sign)
{
	l->n += (uint32_t)sign;
	l->n_up += up ? (uint32_t)sign : 0;
	for (int k = 0; k < RISK_DELTAS; k++)
		if (tau[k] != NOT_EVICTED) {
			l->evicted[k] += (uint32_t)sign;
			l->tau_sum[k] += (uint64_t)(int64_t)sign * tau[k];
			if (up) {
				l->evicted_up[k] += (uint32_t)sign;
				l->tau_up[k] += (uint64_t)(int64_t)sign *
						tau[k];
			}
		}
}

/* Fold the side levels into lv, dropping lv's empty levels; the trees
 * are rebuilt at the next query (false on OOM: nothing changed). */
static bool merge_side(struct risk_market *m)
{
	size_t keep = 0, i, j, out;

	if (m->nlv + m->nside > m->caplv) {
		size_t cap = (m->nlv + m->nside) * 2;
		struct risk_level *v = px_reallocarray(m->lv, cap, sizeof *v);
		int64_t *vp;

		if (!v)
			return false;
		m->lv = v;
		vp = px_reallocarray(m->lvp, cap, sizeof *vp);
		if (!vp)
			return false;
		m->lvp = vp;
		m->caplv = cap;
	}
	for (i = 0; i < m->nlv; i++)
		if (m->lv[i].n)
			m->lv[keep++] = m->lv[i];
	/* merge from the back: both runs are ascending, prices distinct */
	i = keep;
	j = m->nside;
	out = keep + m->nside;
	while (j > 0) {
		if (i > 0 && m->lv[i - 1].p > m->side[j - 1].p)
			m->lv[--out] = m->lv[--i];
		else
			m->lv[--out] = m->side[--j];
	}
	m->nlv = keep + m->nside;
	for (i = 0; i < m->nlv; i++)
		m->lvp[i] = m->lv[i].p;
	m->nside = 0;
	m->nempty = 0;
	m->side_work = 0;
	m->fw_dirty = true;
	return true;
}

/* Add (sign 1) or remove (-1) one sample at price p to its level: a
 * level in the trees is updated in place, a new one goes to the side
 * levels. */
static bool level_add(struct risk_market *m, int64_t p, const uint16_t *tau,
		      bool up, int sign)
{
	bool found;
	size_t i;
	long j0;
	struct risk_level *l;

	if (p < 0)
		return true;
	j0 = last_le(m->lvp, m->nlv, p);
	if (j0 >= 0 && m->lvp[j0] == p) {
		i = (size_t)j0;
		l = &m->lv[i];
		if (sign < 0 && l->n == 0)
			return true;
		m->nempty -= l->n == 0;
		level_count(l, tau, up, sign);
		m->nempty += l->n == 0;
		if (m->fw_dirty)
			return true;
		for (size_t j = i + 1; j <= m->nlv; j += j & (~j + 1)) {
			m->fw[j].n += (uint64_t)(int64_t)sign;
			for (int k = 0; k < RISK_DELTAS; k++)
				if (tau[k] != NOT_EVICTED) {
					m->fw[j].et[k][0] +=
						(uint64_t)(int64_t)sign;
					m->fw[j].et[k][1] +=
						(uint64_t)(int64_t)sign *
						tau[k];
				}
		}
		return true;
	}
	i = level_find(m->side, m->nside, p, &found);
	if (!found) {
		if (sign < 0)
			return true;
		if (m->nside == RISK_SIDE_MAX && merge_side(m))
			i = 0;
		if (m->nside == m->capside) {
			size_t cap = m->capside ? m->capside * 2 : 16;
			struct risk_level *v = px_reallocarray(m->side, cap,
							       sizeof *v);
			if (!v)
				return false;
			m->side = v;
			m->capside = cap;
		}
		memmove(&m->side[i + 1], &m->side[i],
			(m->nside - i) * sizeof *m->side);
		memset(&m->side[i], 0, sizeof m->side[i]);
		m->side[i].p = p;
		m->nside++;
	}
	l = &m->side[i];
	level_count(l, tau, up, sign);
	if (l->n == 0) {
		memmove(&m->side[i], &m->side[i + 1],
			(m->nside - i - 1) * sizeof *m->side);
		m->nside--;
	}
	return true;
}

static bool push_sample(struct risk_market *m, const uint16_t *tau,
			int64_t p0, bool up)
{
	size_t slot;

	if (m->count == RING) {
		const uint16_t *old = m->ring[m->head];
		for (int k = 0; k < RISK_DELTAS; k++)
			if (old[k] != NOT_EVICTED) {
				m->evicted[k]--;
				m->tau_sum[k] -= old[k];
			}
		level_add(m, m->p0[m->head], old, m->up[m->head], -1);
		m->head = (m->head + 1) % RING;
		m->count--;
	}
	slot = (m->head + m->count) % RING;
	memcpy(m->ring[slot], tau, sizeof m->ring[slot]);
	m->p0[slot] = p0;
	m->up[slot] = up;
	m->count++;
	for (int k = 0; k < RISK_DELTAS; k++)
		if (tau[k] != NOT_EVICTED) {
			m->evicted[k]++;
			m->tau_sum[k] += tau[k];
		}
	return level_add(m, p0, tau, up, 1);
}

/* Rebuild the Fenwick trees over lv (false on OOM: then queries count
 * the side levels only, and the next one tries again). */
static bool rebuild_cum(struct risk_market *m)
{
	if (m->nlv + 1 > m->capfw) {
		size_t cap = (m->nlv + 1) * 2;
		struct risk_node *v = px_reallocarray(m->fw, cap, sizeof *v);

		if (!v)
			return false;
		m->fw = v;
		m->capfw = cap;
	}
	for (size_t l = 0; l < m->nlv; l++) {
		struct risk_node *d = &m->fw[l + 1];

		d->n = m->lv[l].n;
		for (int k = 0; k < RISK_DELTAS; k++) {
			d->et[k][0] = m->lv[l].evicted[k];
			d->et[k][1] = m->lv[l].tau_sum[k];
		}
	}
	for (size_t j = 1; j <= m->nlv; j++) {
		size_t up = j + (j & (~j + 1));

		if (up > m->nlv)
			continue;
		m->fw[up].n += m->fw[j].n;
		for (int k = 0; k < RISK_DELTAS; k++) {
			m->fw[up].et[k][0] += m->fw[j].et[k][0];
			m->fw[up].et[k][1] += m->fw[j].et[k][1];
		}
	}
	m->fw_dirty = false;
	return true;
}

/* Whether the price of record i came by a rise: the last different
 * price before it was lower (looking back at most 64 records; false when
 * none is found). */
static bool came_up(const int64_t *p, long i)
{
	for (long j = i - 1; j >= 0 && j >= i - 64; j--)
		if (p[j] != p[i])
			return p[j] < p[i];
	return false;
}

/* The index of the last of t[0..n) at or before s (-1: none): samples
 * come 5 minutes apart, a few records at most, so it walks on from the
 * last sample's record (market_index_from). */
static long record_at(struct risk_market *m, const int64_t *t, size_t n,
		      int64_t s)
{
	return m->last_i = market_index_from(t, n, m->last_i, s);
}

static bool market_update(struct risk_market *m, const struct market_view *mv)
{
	const int64_t *t, *p;
	size_t n;
	bool changed = false;
	int64_t now = mv->now_s, oldest;

	/* no sample due: nothing to read (the price now is read when a
	 * query needs it, now_at) */
	if (m->next_s != INT64_MIN && m->next_s + RISK_HORIZON_S > now)
		return false;
	if (!market_view_history(mv, m->idx, &t, &p, &n))
		return false;
	if (m->next_s == INT64_MIN)
		m->next_s = (t[0] + RISK_STEP_S - 1) / RISK_STEP_S *
			    RISK_STEP_S;
	/* samples older than the window would be dropped at once */
	oldest = now - RISK_HORIZON_S - (int64_t)RING * RISK_STEP_S;
	if (m->next_s < oldest)
		m->next_s = (oldest + RISK_STEP_S - 1) / RISK_STEP_S *
			    RISK_STEP_S;
	while (m->next_s + RISK_HORIZON_S <= now) {
		int64_t s = m->next_s, end = s + RISK_HORIZON_S;
		long i0 = record_at(m, t, n, s);
		uint16_t tau[RISK_DELTAS];
		int kk = 0;
		int64_t pp = -1;
		bool up = false;

		for (int k = 0; k < RISK_DELTAS; k++)
			tau[k] = NOT_EVICTED;
		if (i0 >= 0) {
			int64_t p0 = p[i0];

			pp = p0;
			up = came_up(p, i0);
			for (size_t j = (size_t)i0 + 1;
			     j < n && t[j] <= end && kk < RISK_DELTAS; j++)
				while (kk < RISK_DELTAS &&
				       p[j] > p0 + m->delta[kk]) {
					tau[kk] = (uint16_t)(t[j] - s);
					kk++;
				}
		}
		/* a level that cannot grow (out of memory) only leaves the
		 * absolute estimate with fewer samples */
		(void)push_sample(m, tau, pp, up);
		m->next_s += RISK_STEP_S;
		changed = true;
	}
	return changed;
}

/* The price now in the last risk_update's view (its history ends at now)
 * and how it came, looked back for only when a record came. */
static void now_at(const struct risk *r, struct risk_market *m)
{
	const int64_t *t, *p;
	size_t n;

	if (!r->mv || !market_view_history(r->mv, m->idx, &t, &p, &n))
		return;
	if ((long)n - 1 != m->now_i) {
		m->now_i = (long)n - 1;
		m->now_p = p[n - 1];
		m->now_up = came_up(p, m->now_i);
	}
}

bool risk_update(struct risk *r, const struct market_view *mv,
		 bool *ret_changed)
{
	bool any = false;

	r->mv = mv;
	for (size_t i = 0; i < r->n; i++) {
		bool c = market_update(&r->m[i], mv);
		if (ret_changed)
			ret_changed[i] = c;
		any |= c;
	}
	return any;
}

void risk_get(const struct risk *r, size_t i, int k,
	      struct risk_estimate *ret)
{
	const struct risk_market *m = &r->m[i];
	uint32_t e = m->evicted[k];

	ret->samples = (uint32_t)m->count;
	ret->beta = (e + RISK_PRIOR_EVICTED) / (m->count + RISK_PRIOR_SAMPLES);
	ret->tau_s = e ? (double)m->tau_sum[k] / e : RISK_HORIZON_S / 2.0;
}

/* Levels with a price at most x. */
static size_t levels_upto(const struct risk_market *m, int64_t x)
{
	return (size_t)(last_le(m->lvp, m->nlv, x) + 1);
}

/* Of t[0..h) (ascending), how many are <= x, searching back from h:
 * the next delta's boundary is mostly a few levels below the last. */
static size_t upto_below(const int64_t *t, size_t h, int64_t x)
{
	size_t step = 1, lo;

	while (step <= h && t[h - step] > x)
		step *= 2;
	lo = step <= h ? h - step : 0;
	/* t[lo] <= x unless lo == 0; the answer is in [lo, h - step/2] */
	return lo + (size_t)(last_le(t + lo, h - step / 2 - lo, x) + 1);
}

/* The delta a sample at price p uses for a bid at b >= p: the largest k
 * with d_k <= b - p. */
static int level_delta(const struct risk_market *m, int64_t p, int64_t b)
{
	int k = 0;

	while (k + 1 < RISK_DELTAS && m->delta[k + 1] <= b - p)
		k++;
	return k;
}

void risk_get_at(struct risk *r, size_t i, int64_t bid_uusd,
		 struct risk_estimate *ret)
{
	struct risk_market *m = &r->m[i];
	uint64_t n = 0, ev = 0, ts = 0;

	/* the side levels cost a scan per query: once the scans have cost
	 * about what a rebuild does, fold them in (and drop empty levels
	 * once they are half of the trees') */
	if ((m->nside && m->side_work > RISK_SIDE_WORK * (m->nlv + m->nside)) ||
	    (m->nempty && 2 * m->nempty > m->nlv))
		(void)merge_side(m);
	if (m->fw_dirty)
		(void)rebuild_cum(m);
	if (m->nlv && !m->fw_dirty) {
		/* a level at p uses delta k when d_k <= B - p < d_k+1, i.e.
		 * p in (B - d_k+1, B - d_k]: with h_k the levels at most
		 * B - d_k, delta k's sums over the first h_k levels less
		 * those over the first h_k+1.  One walk per h_k adds delta
		 * k's and takes delta k-1's (modulo 2^64: the totals are
		 * right however the terms fall). */
		size_t h = levels_upto(m, bid_uusd);

		for (int k = 0; k < RISK_DELTAS && h > 0; k++) {
			for (size_t j = h; j > 0; j -= j & (~j + 1)) {
				const struct risk_node *d = &m->fw[j];

				ev += d->et[k][0];
				ts += d->et[k][1];
				if (k > 0) {
					ev -= d->et[k - 1][0];
					ts -= d->et[k - 1][1];
				} else {
					n += d->n;
				}
			}
			if (k + 1 < RISK_DELTAS)
				h = upto_below(m->lvp, h, bid_uusd -
					       m->delta[k + 1]);
		}
	}
	for (size_t j = 0; j < m->nside && m->side[j].p <= bid_uusd; j++) {
		const struct risk_level *l = &m->side[j];
		int k = level_delta(m, l->p, bid_uusd);

		n += l->n;
		ev += l->evicted[k];
		ts += l->tau_sum[k];
		m->side_work++;
	}
	ret->samples = (uint32_t)n;
	ret->beta = (ev + RISK_PRIOR_EVICTED) / (n + RISK_PRIOR_SAMPLES);
	ret->tau_s = ev ? (double)ts / (double)ev : RISK_HORIZON_S / 2.0;
}

/* Samples (n, evicted ev, tau sum ts) shrunk towards the estimate t with
 * the weight of w samples. */
static void shrink(double n, double ev, double ts, double w,
		   const struct risk_estimate *t, struct risk_estimate *ret)
{
	double wev = w * t->beta;

	ret->samples = (uint32_t)n;
	ret->beta = (ev + wev) / (n + w);
	ret->tau_s = ev + wev > 0 ? (ts + wev * t->tau_s) / (ev + wev) :
		     t->tau_s;
}

/* The level at price p (in the trees or the side list), NULL if none. */
static const struct risk_level *level_at(const struct risk_market *m,
					 int64_t p)
{
	size_t j = levels_upto(m, p);
	bool found;

	if (j > 0 && m->lvp[j - 1] == p)
		return &m->lv[j - 1];
	j = level_find(m->side, m->nside, p, &found);
	return found ? &m->side[j] : NULL;
}

/* risk_get_level for delta k >= 0 of market i at price p, whose level is
 * l (NULL: none; else now_at was called for this query). */
static void level_estimate(struct risk *r, size_t i, int64_t price_uusd,
			   const struct risk_level *l, int k,
			   struct risk_estimate *ret)
{
	struct risk_market *m = &r->m[i];
	struct risk_estimate pool, lev;
	double w = RISK_LEVEL_W;

	risk_get(r, i, k, &pool);
	if (!l) {
		*ret = pool;
		ret->samples = 0;
		return;
	}
	/* the level's own samples, shrunk towards the market's pooled
	 * estimate for the same delta */
	shrink(l->n, l->evicted[k], (double)l->tau_sum[k], w, &pool, &lev);
	if (price_uusd != m->now_p) {
		*ret = lev;
		return;
	}
	/* at the price now: the samples that came to it the way the price
	 * now did (by a rise, or not), shrunk towards the level's */
	if (m->now_up)
		shrink(l->n_up, l->evicted_up[k], (double)l->tau_up[k], w,
		       &lev, ret);
	else
		shrink(l->n - l->n_up, l->evicted[k] - l->evicted_up[k],
		       (double)(l->tau_sum[k] - l->tau_up[k]), w, &lev, ret);
	ret->samples = l->n;
}

void risk_get_level(struct risk *r, size_t i, int64_t price_uusd,
		    int64_t bid_uusd, struct risk_estimate *ret)
{
	int k = risk_delta_index(r, i, price_uusd, bid_uusd);
	const struct risk_level *l;

	if (k < 0) {
		risk_get_at(r, i, bid_uusd, ret);
		return;
	}
	l = level_at(&r->m[i], price_uusd);
	if (l)
		now_at(r, &r->m[i]);
	level_estimate(r, i, price_uusd, l, k, ret);
}

void risk_get_level_deltas(struct risk *r, size_t i, int64_t price_uusd,
			   struct risk_estimate *ret)
{
	struct risk_market *m = &r->m[i];
	const struct risk_level *l = level_at(m, price_uusd);

	if (l)
		now_at(r, m);
	for (int k = 0; k < RISK_DELTAS; k++) {
		/* risk_delta_index of price + d_k: the deltas ascend, so the
		 * last one equal to d_k */
		int kk = k;

		while (kk + 1 < RISK_DELTAS && m->delta[kk + 1] <= m->delta[k])
			kk++;
		level_estimate(r, i, price_uusd, l, kk, &ret[k]);
	}
}

/* ---- by the age of the price now (risk_get_age) ---- */

/* Completed levels looked at for risk_get_age's check (half of them must
 * have lasted a horizon or more). */
#define AGE_CHECK_LEVELS 8

/* The first record of the level that record j is in. */
static size_t level_start(const int64_t *p, size_t j)
{
	while (j > 0 && p[j - 1] == p[j])
		j--;
	return j;
}

/* The record after level j's last (the next price change), or n. */
static size_t level_end(const int64_t *p, size_t n, size_t j)
{
	size_t q = j + 1;

	while (q < n && p[q] == p[j])
		q++;
	return q;
}

/* Whether market history t, p (n records, the last at or before now)
 * moves in levels that last a horizon or more: of its last
 * AGE_CHECK_LEVELS completed levels (at least 2), at least half. */
static bool levels_last(const int64_t *t, const int64_t *p, size_t c)
{
	size_t seen = 0, long_ = 0;

	for (size_t e = c; e > 0 && seen < AGE_CHECK_LEVELS; seen++) {
		size_t j = level_start(p, e - 1);

		long_ += t[e] - t[j] >= RISK_HORIZON_S;
		e = j;
	}
	return seen >= 2 && 2 * long_ >= seen;
}

/* risk_get_age for the bids price now + d[k], k < nd. */
static bool age_estimate(const struct risk *r, size_t i, const int64_t *d,
			 int nd, struct risk_estimate *ret)
{
	const int64_t *t, *p;
	size_t n, c, samples = 0;
	int64_t now, a, lo;
	uint32_t ev[RISK_DELTAS] = {0};
	double tau[RISK_DELTAS] = {0};

	if (!r->mv || nd > RISK_DELTAS ||
	    !market_view_history(r->mv, r->m[i].idx, &t, &p, &n) || n < 2)
		return false;
	now = r->mv->now_s;
	c = level_start(p, n - 1);
	if (!levels_last(t, p, c))
		return false;
	a = now - t[c];
	lo = now - RISK_WINDOW_S;
	/* every level of the window that was still the price at age a, and
	 * whose hour from then is over by now: did a later price rise above
	 * its own price + d[k] within that hour, and when first */
	for (size_t e = c; e > 0;) {
		size_t j = level_start(p, e - 1), end;
		int64_t x0;
		bool hit[RISK_DELTAS] = {false};

		e = j;
		if (t[j] < lo)
			break;
		end = level_end(p, n, j);
		x0 = t[j] + a;
		if (end >= n || t[end] <= x0 || x0 + RISK_HORIZON_S > now)
			continue;
		samples++;
		for (size_t q = end; q < n && t[q] < x0 + RISK_HORIZON_S; q++)
			for (int k = 0; k < nd; k++)
				if (!hit[k] && p[q] > p[j] + d[k]) {
					hit[k] = true;
					ev[k]++;
					tau[k] += (double)(t[q] - x0);
				}
	}
	if (!samples)
		return false;
	for (int k = 0; k < nd; k++) {
		ret[k].samples = (uint32_t)samples;
		ret[k].beta = (ev[k] + RISK_PRIOR_EVICTED) /
			      (samples + RISK_PRIOR_SAMPLES);
		ret[k].tau_s = ev[k] ? tau[k] / ev[k] : RISK_HORIZON_S / 2.0;
	}
	return true;
}

bool risk_get_age(const struct risk *r, size_t i, int64_t price_uusd,
		  int64_t bid_uusd, struct risk_estimate *ret)
{
	int64_t d = bid_uusd - price_uusd;

	return d >= 0 && age_estimate(r, i, &d, 1, ret);
}

bool risk_get_age_deltas(const struct risk *r, size_t i,
			 struct risk_estimate *ret)
{
	return age_estimate(r, i, r->m[i].delta, RISK_DELTAS, ret);
}

int64_t risk_delta_uusd(const struct risk *r, size_t i, int k)
{
	return r->m[i].delta[k];
}

int risk_delta_index(const struct risk *r, size_t i, int64_t price_uusd,
		     int64_t bid_uusd)
{
	int best = -1;
	for (int k = 0; k < RISK_DELTAS; k++)
		if (price_uusd + r->m[i].delta[k] <= bid_uusd)
			best = k;
	return best;
}
