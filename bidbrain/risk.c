/* risk.c -- sliding-window eviction statistics per (market, bid delta). */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "risk.h"

#define RING (RISK_WINDOW_S / RISK_STEP_S)
#define NOT_EVICTED UINT16_MAX

/* The samples taken at one price. */
struct risk_level {
	int64_t p;                    /* micro-USD */
	uint32_t n;
	uint32_t evicted[RISK_DELTAS];
	uint64_t tau_sum[RISK_DELTAS];
};

struct risk_market {
	int idx;                      /* in the market set */
	int64_t delta[RISK_DELTAS];   /* micro-USD */
	int64_t next_s;               /* next sample time; INT64_MIN: unset */
	uint16_t (*ring)[RISK_DELTAS]; /* tau or NOT_EVICTED per sample */
	int64_t *p0;                  /* price at each sample; -1: none */
	struct risk_level *lv;        /* by price, ascending */
	size_t nlv, caplv;
	/* Fenwick trees over lv's positions (1-based) of n, evicted[k] and
	 * tau_sum[k]: updated in place when a level's counts change, rebuilt
	 * when a level comes or goes (fw_dirty) */
	uint64_t *cum_n;
	uint64_t (*cum_ev)[RISK_DELTAS];
	uint64_t (*cum_tau)[RISK_DELTAS];
	size_t capcum;
	bool fw_dirty, fw_ok;
	size_t head, count;
	uint32_t evicted[RISK_DELTAS];
	uint64_t tau_sum[RISK_DELTAS];
};

struct risk {
	struct risk_market *m;
	size_t n;
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
		m->ring = px_calloc(RING, sizeof *m->ring);
		m->p0 = px_calloc(RING, sizeof *m->p0);
		if (!m->ring || !m->p0)
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
		free(r->m[i].lv);
		free(r->m[i].cum_n);
		free(r->m[i].cum_ev);
		free(r->m[i].cum_tau);
	}
	free(r->m);
	free(r);
}

/* Index of the last of t[0..n) that is <= x (-1 if none). */
static long last_le(const int64_t *t, size_t n, int64_t x)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (t[mid] <= x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (long)lo - 1;
}

/* The level of price p: its index, or where it would go (*ret_found). */
static size_t level_find(const struct risk_market *m, int64_t p,
			 bool *ret_found)
{
	size_t lo = 0, hi = m->nlv;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (m->lv[mid].p < p)
			lo = mid + 1;
		else
			hi = mid;
	}
	*ret_found = lo < m->nlv && m->lv[lo].p == p;
	return lo;
}

/* Add (sign 1) or remove (-1) one sample at price p to its level. */
static bool level_add(struct risk_market *m, int64_t p, const uint16_t *tau,
		      int sign)
{
	bool found;
	size_t i;
	struct risk_level *l;

	if (p < 0)
		return true;
	i = level_find(m, p, &found);
	if (!found) {
		if (sign < 0)
			return true;
		if (m->nlv == m->caplv) {
			size_t cap = m->caplv ? m->caplv * 2 : 16;
			struct risk_level *v = px_reallocarray(m->lv, cap,
							       sizeof *v);
			if (!v)
				return false;
			m->lv = v;
			m->caplv = cap;
		}
		memmove(&m->lv[i + 1], &m->lv[i],
			(m->nlv - i) * sizeof *m->lv);
		memset(&m->lv[i], 0, sizeof m->lv[i]);
		m->lv[i].p = p;
		m->nlv++;
	}
	l = &m->lv[i];
	l->n += (uint32_t)sign;
	for (int k = 0; k < RISK_DELTAS; k++)
		if (tau[k] != NOT_EVICTED) {
			l->evicted[k] += (uint32_t)sign;
			l->tau_sum[k] += (uint64_t)(int64_t)sign * tau[k];
		}
	if (!found || l->n == 0) {
		m->fw_dirty = true;
	} else if (!m->fw_dirty && m->fw_ok) {
		for (size_t j = i + 1; j <= m->nlv; j += j & (~j + 1)) {
			m->cum_n[j] += (uint64_t)(int64_t)sign;
			for (int k = 0; k < RISK_DELTAS; k++)
				if (tau[k] != NOT_EVICTED) {
					m->cum_ev[j][k] +=
						(uint64_t)(int64_t)sign;
					m->cum_tau[j][k] +=
						(uint64_t)(int64_t)sign *
						tau[k];
				}
		}
	}
	if (l->n == 0) {
		memmove(&m->lv[i], &m->lv[i + 1],
			(m->nlv - i - 1) * sizeof *m->lv);
		m->nlv--;
	}
	return true;
}

static bool push_sample(struct risk_market *m, const uint16_t *tau,
			int64_t p0)
{
	size_t slot;

	if (m->count == RING) {
		const uint16_t *old = m->ring[m->head];
		for (int k = 0; k < RISK_DELTAS; k++)
			if (old[k] != NOT_EVICTED) {
				m->evicted[k]--;
				m->tau_sum[k] -= old[k];
			}
		level_add(m, m->p0[m->head], old, -1);
		m->head = (m->head + 1) % RING;
		m->count--;
	}
	slot = (m->head + m->count) % RING;
	memcpy(m->ring[slot], tau, sizeof m->ring[slot]);
	m->p0[slot] = p0;
	m->count++;
	for (int k = 0; k < RISK_DELTAS; k++)
		if (tau[k] != NOT_EVICTED) {
			m->evicted[k]++;
			m->tau_sum[k] += tau[k];
		}
	return level_add(m, p0, tau, 1);
}

/* Rebuild the Fenwick trees over the levels (false on OOM: then queries
 * see no samples until the next rebuild). */
static bool rebuild_cum(struct risk_market *m)
{
	m->fw_dirty = false;
	m->fw_ok = false;
	if (m->nlv + 1 > m->capcum) {
		size_t cap = (m->nlv + 1) * 2;
		uint64_t *a = px_reallocarray(m->cum_n, cap, sizeof *a);
		uint64_t (*b)[RISK_DELTAS];

		if (!a)
			return false;
		m->cum_n = a;
		b = px_reallocarray(m->cum_ev, cap, sizeof *b);
		if (!b)
			return false;
		m->cum_ev = b;
		b = px_reallocarray(m->cum_tau, cap, sizeof *b);
		if (!b)
			return false;
		m->cum_tau = b;
		m->capcum = cap;
	}
	for (size_t l = 0; l < m->nlv; l++) {
		m->cum_n[l + 1] = m->lv[l].n;
		for (int k = 0; k < RISK_DELTAS; k++) {
			m->cum_ev[l + 1][k] = m->lv[l].evicted[k];
			m->cum_tau[l + 1][k] = m->lv[l].tau_sum[k];
		}
	}
	for (size_t j = 1; j <= m->nlv; j++) {
		size_t up = j + (j & (~j + 1));

		if (up > m->nlv)
			continue;
		m->cum_n[up] += m->cum_n[j];
		for (int k = 0; k < RISK_DELTAS; k++) {
			m->cum_ev[up][k] += m->cum_ev[j][k];
			m->cum_tau[up][k] += m->cum_tau[j][k];
		}
	}
	m->fw_ok = true;
	return true;
}

static bool market_update(struct risk_market *m, const struct market_view *mv)
{
	const int64_t *t, *p;
	size_t n;
	bool changed = false;
	int64_t now = mv->now_s, oldest;

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
		long i0 = last_le(t, n, s);
		uint16_t tau[RISK_DELTAS];
		int kk = 0;
		int64_t pp = -1;

		for (int k = 0; k < RISK_DELTAS; k++)
			tau[k] = NOT_EVICTED;
		if (i0 >= 0) {
			int64_t p0 = p[i0];

			pp = p0;
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
		(void)push_sample(m, tau, pp);
		m->next_s += RISK_STEP_S;
		changed = true;
	}
	return changed;
}

bool risk_update(struct risk *r, const struct market_view *mv,
		 bool *ret_changed)
{
	bool any = false;
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
	size_t lo = 0, hi = m->nlv;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (m->lv[mid].p <= x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Sums of the first j levels' n (k < 0) or evicted[k] / tau_sum[k]. */
static void fw_sum(const struct risk_market *m, size_t j, int k,
		   uint64_t *ret_a, uint64_t *ret_b)
{
	uint64_t a = 0, b = 0;

	for (; j > 0; j -= j & (~j + 1)) {
		if (k < 0) {
			a += m->cum_n[j];
		} else {
			a += m->cum_ev[j][k];
			b += m->cum_tau[j][k];
		}
	}
	*ret_a = a;
	*ret_b = b;
}

void risk_get_at(struct risk *r, size_t i, int64_t bid_uusd,
		 struct risk_estimate *ret)
{
	struct risk_market *m = &r->m[i];
	uint64_t n = 0, ev = 0, ts = 0, x, y, x0, y0;

	/* levels came or went since the trees were built: rebuild them now,
	 * once for the queries until the next change */
	if (m->fw_dirty)
		(void)rebuild_cum(m);
	if (m->nlv && m->fw_ok && !m->fw_dirty) {
		/* a level at p uses delta k when d_k <= B - p < d_k+1, i.e.
		 * p in (B - d_k+1, B - d_k] */
		size_t hi = levels_upto(m, bid_uusd);

		fw_sum(m, hi, -1, &n, &y);
		for (int k = 0; k < RISK_DELTAS && hi > 0; k++) {
			size_t lo = k + 1 < RISK_DELTAS ?
				    levels_upto(m, bid_uusd -
						m->delta[k + 1]) : 0;

			if (lo > hi)
				lo = hi;
			fw_sum(m, hi, k, &x, &y);
			fw_sum(m, lo, k, &x0, &y0);
			ev += x - x0;
			ts += y - y0;
			hi = lo;
		}
	}
	ret->samples = (uint32_t)n;
	ret->beta = (ev + RISK_PRIOR_EVICTED) / (n + RISK_PRIOR_SAMPLES);
	ret->tau_s = ev ? (double)ts / (double)ev : RISK_HORIZON_S / 2.0;
}

void risk_get_level(struct risk *r, size_t i, int64_t price_uusd,
		    int64_t bid_uusd, struct risk_estimate *ret)
{
	const struct risk_market *m = &r->m[i];
	struct risk_estimate at;
	double w = RISK_LEVEL_W, ev = 0, ts = 0, n = 0, wev;
	int k = risk_delta_index(r, i, price_uusd, bid_uusd);
	bool found;
	size_t l;

	risk_get_at(r, i, bid_uusd, &at);
	if (k < 0) {
		*ret = at;
		return;
	}
	l = level_find(m, price_uusd, &found);
	if (found) {
		n = m->lv[l].n;
		ev = m->lv[l].evicted[k];
		ts = (double)m->lv[l].tau_sum[k];
	}
	/* the level's own samples, shrunk towards the absolute estimate
	 * with the weight of RISK_LEVEL_W samples */
	wev = w * at.beta;
	ret->samples = (uint32_t)n;
	ret->beta = (ev + wev) / (n + w);
	ret->tau_s = (ts + wev * at.tau_s) / (ev + wev);
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
