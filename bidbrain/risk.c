/* risk.c -- sliding-window eviction statistics per (market, bid delta). */
#include <stdlib.h>
#include <string.h>

#include "risk.h"

#define RING (RISK_WINDOW_S / RISK_STEP_S)
#define NOT_EVICTED UINT16_MAX

struct risk_market {
	int idx;                      /* in the market set */
	int64_t delta[RISK_DELTAS];   /* micro-USD */
	int64_t next_s;               /* next sample time; INT64_MIN: unset */
	uint16_t (*ring)[RISK_DELTAS]; /* tau or NOT_EVICTED per sample */
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
		if (!m->ring)
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
	for (size_t i = 0; r->m && i < r->n; i++)
		free(r->m[i].ring);
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

static void push_sample(struct risk_market *m, const uint16_t *tau)
{
	size_t slot;

	if (m->count == RING) {
		const uint16_t *old = m->ring[m->head];
		for (int k = 0; k < RISK_DELTAS; k++)
			if (old[k] != NOT_EVICTED) {
				m->evicted[k]--;
				m->tau_sum[k] -= old[k];
			}
		m->head = (m->head + 1) % RING;
		m->count--;
	}
	slot = (m->head + m->count) % RING;
	memcpy(m->ring[slot], tau, sizeof m->ring[slot]);
	m->count++;
	for (int k = 0; k < RISK_DELTAS; k++)
		if (tau[k] != NOT_EVICTED) {
			m->evicted[k]++;
			m->tau_sum[k] += tau[k];
		}
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

		for (int k = 0; k < RISK_DELTAS; k++)
			tau[k] = NOT_EVICTED;
		if (i0 >= 0) {
			int64_t p0 = p[i0];
			for (size_t j = (size_t)i0 + 1;
			     j < n && t[j] <= end && kk < RISK_DELTAS; j++)
				while (kk < RISK_DELTAS &&
				       p[j] > p0 + m->delta[kk]) {
					tau[kk] = (uint16_t)(t[j] - s);
					kk++;
				}
		}
		push_sample(m, tau);
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
