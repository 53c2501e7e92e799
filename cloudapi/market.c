/* market.c -- spot-market replayer: per-(zone, type) price series with
 * binary-searched lookups, a block-max index for "first time above a bid"
 * and prefix integrals for per-second billing.
 */
#include <stdlib.h>
#include <string.h>

#include "market.h"

struct rec {
	int64_t t;
	int64_t p;
};

void market_set_init(struct market_set *ms)
{
	memset(ms, 0, sizeof *ms);
	ms->first_s = INT64_MAX;
	ms->last_s = INT64_MIN;
}

static void market_free_arrays(struct market *m)
{
	free(m->t_s);
	free(m->price_uusd);
	free(m->blockmax);
	free(m->cum);
	m->t_s = m->price_uusd = m->blockmax = m->cum = NULL;
}

void market_set_release(struct market_set *ms)
{
	if (!ms)
		return;
	for (size_t i = 0; i < ms->n; i++)
		market_free_arrays(&ms->v[i]);
	free(ms->v);
	free(ms->hash);
	market_set_init(ms);
}

static uint64_t name_hash(const char *zone, const char *type)
{
	uint64_t h = 1469598103934665603ull;
	for (const char *s = zone; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	h = (h ^ 0xff) * 1099511628211ull;
	for (const char *s = type; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

/* Region of a zone: the zone with its trailing letters removed. */
static void zone_region(const char *zone, char *buf, size_t len)
{
	size_t n = strlen(zone);
	while (n > 0 && zone[n - 1] >= 'a' && zone[n - 1] <= 'z')
		n--;
	if (n == 0)
		n = strlen(zone);
	if (n >= len)
		n = len - 1;
	memcpy(buf, zone, n);
	buf[n] = '\0';
}

static enum px_err hash_grow(struct market_set *ms)
{
	size_t cap = ms->hash_cap ? ms->hash_cap * 2 : 256;
	int *h = px_calloc(cap, sizeof *h);
	if (!h)
		return PX_ENOMEM;
	for (size_t i = 0; i < ms->n; i++) {
		size_t k = name_hash(ms->v[i].zone, ms->v[i].type) & (cap - 1);
		while (h[k])
			k = (k + 1) & (cap - 1);
		h[k] = (int)i + 1;
	}
	free(ms->hash);
	ms->hash = h;
	ms->hash_cap = cap;
	return PX_OK;
}

/* Index of (zone, type) while building, creating it when new. */
static enum px_err market_get_or_add(struct market_set *ms, const char *zone,
				     const char *type, size_t *ret,
				     struct px_error *err)
{
	if ((ms->n + 1) * 2 > ms->hash_cap && hash_grow(ms) != PX_OK)
		return px_errorf(err, PX_ENOMEM, "out of memory");
	size_t k = name_hash(zone, type) & (ms->hash_cap - 1);
	while (ms->hash[k]) {
		struct market *m = &ms->v[ms->hash[k] - 1];
		if (!strcmp(m->zone, zone) && !strcmp(m->type, type)) {
			*ret = (size_t)ms->hash[k] - 1;
			return PX_OK;
		}
		k = (k + 1) & (ms->hash_cap - 1);
	}
	if (ms->n >= MARKET_MAX)
		return px_errorf(err, PX_ETOOBIG,
				 "more than %d markets", MARKET_MAX);
	if (ms->n == ms->cap) {
		size_t cap = ms->cap ? ms->cap * 2 : 16;
		struct market *v = px_reallocarray(ms->v, cap, sizeof *v);
		if (!v)
			return px_errorf(err, PX_ENOMEM, "out of memory");
		ms->v = v;
		ms->cap = cap;
	}
	struct market *m = &ms->v[ms->n];
	memset(m, 0, sizeof *m);
	memcpy(m->zone, zone, strlen(zone) + 1);
	memcpy(m->type, type, strlen(type) + 1);
	zone_region(zone, m->region, sizeof m->region);
	ms->hash[k] = (int)ms->n + 1;
	*ret = ms->n++;
	return PX_OK;
}

enum px_err market_set_add(struct market_set *ms, const char *zone,
			   const char *type, int64_t t_s, int64_t price_uusd,
			   struct px_error *err)
{
	size_t i = 0;
	enum px_err r;

	if (ms->sealed)
		return px_errorf(err, PX_EINVAL, "market set already sealed");
	if (!zone[0] || strlen(zone) >= MARKET_NAME_MAX)
		return px_errorf(err, PX_EINVAL, "bad zone name '%.64s'", zone);
	if (!type[0] || strlen(type) >= MARKET_NAME_MAX)
		return px_errorf(err, PX_EINVAL, "bad type name '%.64s'", type);
	if (price_uusd < 0)
		return px_errorf(err, PX_EINVAL,
				 "market '%s' '%s': negative price", zone,
				 type);
	if (ms->records >= MARKET_RECORDS_MAX)
		return px_errorf(err, PX_ETOOBIG, "more than %u records",
				 MARKET_RECORDS_MAX);
	r = market_get_or_add(ms, zone, type, &i, err);
	if (r != PX_OK)
		return r;
	struct market *m = &ms->v[i];
	if (m->n == m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 64;
		int64_t *t = px_reallocarray(m->t_s, cap, sizeof *t);
		if (!t)
			return px_errorf(err, PX_ENOMEM, "out of memory");
		m->t_s = t;
		int64_t *p = px_reallocarray(m->price_uusd, cap, sizeof *p);
		if (!p)
			return px_errorf(err, PX_ENOMEM, "out of memory");
		m->price_uusd = p;
		m->cap = cap;
	}
	m->t_s[m->n] = t_s;
	m->price_uusd[m->n] = price_uusd;
	m->n++;
	ms->records++;
	if (t_s < ms->first_s)
		ms->first_s = t_s;
	if (t_s > ms->last_s)
		ms->last_s = t_s;
	return PX_OK;
}

static int rec_cmp(const void *a, const void *b)
{
	const struct rec *x = a, *y = b;
	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	return (x->p > y->p) - (x->p < y->p);
}

static int market_cmp(const void *a, const void *b)
{
	const struct market *x = a, *y = b;
	int c = strcmp(x->zone, y->zone);
	return c ? c : strcmp(x->type, y->type);
}

/* Build blockmax and cum for m->n records. */
static enum px_err market_index(struct market *m)
{
	size_t nb = (m->n + MARKET_BLOCK - 1) / MARKET_BLOCK;

	free(m->blockmax);
	free(m->cum);
	m->blockmax = px_calloc(nb ? nb : 1, sizeof *m->blockmax);
	m->cum = px_calloc(m->n ? m->n : 1, sizeof *m->cum);
	if (!m->blockmax || !m->cum)
		return PX_ENOMEM;
	m->idx_cap = m->n ? m->n : 1;
	for (size_t i = 0; i < m->n; i++) {
		size_t b = i / MARKET_BLOCK;
		if (i % MARKET_BLOCK == 0 || m->price_uusd[i] > m->blockmax[b])
			m->blockmax[b] = m->price_uusd[i];
		if (i > 0)
			m->cum[i] = m->cum[i - 1] + m->price_uusd[i - 1] *
				    (m->t_s[i] - m->t_s[i - 1]);
	}
	return PX_OK;
}

static enum px_err market_sort(struct market *m, struct px_error *err)
{
	bool sorted = true;
	size_t k = 0;
	char tb[32];

	for (size_t i = 1; i < m->n && sorted; i++)
		if (m->t_s[i] <= m->t_s[i - 1])
			sorted = false;
	if (!sorted) {
		struct rec *r = px_calloc(m->n, sizeof *r);
		if (!r)
			return px_errorf(err, PX_ENOMEM, "out of memory");
		for (size_t i = 0; i < m->n; i++) {
			r[i].t = m->t_s[i];
			r[i].p = m->price_uusd[i];
		}
		qsort(r, m->n, sizeof *r, rec_cmp);
		for (size_t i = 0; i < m->n; i++) {
			m->t_s[i] = r[i].t;
			m->price_uusd[i] = r[i].p;
		}
		free(r);
	}
	/* merge same-time duplicates, drop unchanged repeats */
	for (size_t i = 0; i < m->n; i++) {
		if (k > 0 && m->t_s[i] == m->t_s[k - 1]) {
			if (m->price_uusd[i] != m->price_uusd[k - 1]) {
				char a[32], b[32];

				return px_errorf(err, PX_EINVAL,
					"market '%s' '%s': two prices at %s: "
					"%s and %s (a different price for the "
					"same market and second is refused)",
					m->zone, m->type,
					px_format_time(m->t_s[i], tb,
						       sizeof tb),
					px_format_usd(m->price_uusd[k - 1], a,
						      sizeof a),
					px_format_usd(m->price_uusd[i], b,
						      sizeof b));
			}
			continue;
		}
		if (k > 0 && m->price_uusd[i] == m->price_uusd[k - 1])
			continue;
		m->t_s[k] = m->t_s[i];
		m->price_uusd[k] = m->price_uusd[i];
		k++;
	}
	m->n = k;
	return PX_OK;
}

enum px_err market_set_seal(struct market_set *ms, struct px_error *err)
{
	enum px_err r;

	if (ms->sealed)
		return PX_OK;
	for (size_t i = 0; i < ms->n; i++) {
		r = market_sort(&ms->v[i], err);
		if (r != PX_OK)
			return r;
		if (market_index(&ms->v[i]) != PX_OK)
			return px_errorf(err, PX_ENOMEM, "out of memory");
	}
	if (ms->n > 1)
		qsort(ms->v, ms->n, sizeof *ms->v, market_cmp);
	free(ms->hash);
	ms->hash = NULL;
	ms->hash_cap = 0;
	ms->sealed = true;
	return PX_OK;
}

enum px_err market_set_append(struct market_set *ms, int idx, int64_t t_s,
			      int64_t price_uusd, bool *ret_added,
			      struct px_error *err)
{
	struct market *m;
	size_t n, nb;

	*ret_added = false;
	if (!ms->sealed || idx < 0 || (size_t)idx >= ms->n)
		return px_errorf(err, PX_EINVAL, "no market %d to append to",
				 idx);
	if (price_uusd < 0)
		return px_errorf(err, PX_EINVAL, "market '%s' '%s': negative "
				 "price", ms->v[idx].zone, ms->v[idx].type);
	m = &ms->v[idx];
	n = m->n;
	if (n && (t_s <= m->t_s[n - 1] || price_uusd == m->price_uusd[n - 1]))
		return PX_OK;
	if (ms->records >= MARKET_RECORDS_MAX)
		return px_errorf(err, PX_ETOOBIG, "more than %u price records",
				 MARKET_RECORDS_MAX);
	if (n == m->cap) {
		size_t cap = n ? 2 * n : 16;
		int64_t *t = px_reallocarray(m->t_s, cap, sizeof *t);

		if (t)
			m->t_s = t;
		int64_t *p = t ? px_reallocarray(m->price_uusd, cap,
						  sizeof *p) : NULL;
		if (!p)
			return px_errorf(err, PX_ENOMEM, "out of memory");
		m->price_uusd = p;
		m->cap = cap;
	}
	if (n >= m->idx_cap) {
		int64_t *c = px_reallocarray(m->cum, m->cap, sizeof *c);

		if (c)
			m->cum = c;
		nb = (m->cap + MARKET_BLOCK - 1) / MARKET_BLOCK;
		int64_t *b = c ? px_reallocarray(m->blockmax, nb, sizeof *b)
			       : NULL;
		if (!b)
			return px_errorf(err, PX_ENOMEM, "out of memory");
		m->blockmax = b;
		m->idx_cap = m->cap;
	}
	m->t_s[n] = t_s;
	m->price_uusd[n] = price_uusd;
	m->cum[n] = n ? m->cum[n - 1] + m->price_uusd[n - 1] *
			(t_s - m->t_s[n - 1]) : 0;
	if (n % MARKET_BLOCK == 0 || price_uusd > m->blockmax[n / MARKET_BLOCK])
		m->blockmax[n / MARKET_BLOCK] = price_uusd;
	m->n = n + 1;
	ms->records++;
	if (t_s > ms->last_s)
		ms->last_s = t_s;
	if (t_s < ms->first_s)
		ms->first_s = t_s;
	*ret_added = true;
	return PX_OK;
}

enum px_err market_set_truncate(const struct market_set *src, int64_t t_s_max,
				struct market_set *ret, struct px_error *err)
{
	struct market_set ms;

	if (!src->sealed)
		return px_errorf(err, PX_EINVAL, "market set not sealed");
	market_set_init(&ms);
	ms.v = px_calloc(src->n ? src->n : 1, sizeof *ms.v);
	if (!ms.v)
		goto out_nomem;
	ms.cap = src->n;
	for (size_t i = 0; i < src->n; i++) {
		const struct market *s = &src->v[i];
		struct market *m = &ms.v[i];
		long last = market_index_at(s, t_s_max);
		size_t n = (size_t)(last + 1);

		memcpy(m->zone, s->zone, sizeof m->zone);
		memcpy(m->type, s->type, sizeof m->type);
		memcpy(m->region, s->region, sizeof m->region);
		ms.n = i + 1;
		m->t_s = px_calloc(n ? n : 1, sizeof *m->t_s);
		m->price_uusd = px_calloc(n ? n : 1, sizeof *m->price_uusd);
		if (!m->t_s || !m->price_uusd)
			goto out_nomem;
		if (n) {
			memcpy(m->t_s, s->t_s, n * sizeof *m->t_s);
			memcpy(m->price_uusd, s->price_uusd,
			       n * sizeof *m->price_uusd);
			if (m->t_s[0] < ms.first_s)
				ms.first_s = m->t_s[0];
			if (m->t_s[n - 1] > ms.last_s)
				ms.last_s = m->t_s[n - 1];
		}
		m->n = m->cap = n;
		ms.records += n;
		if (market_index(m) != PX_OK)
			goto out_nomem;
	}
	ms.sealed = true;
	*ret = ms;
	return PX_OK;
out_nomem:
	market_set_release(&ms);
	return px_errorf(err, PX_ENOMEM, "out of memory");
}

int market_set_find(const struct market_set *ms, const char *zone,
		    const char *type)
{
	size_t lo = 0, hi = ms->n;

	if (!ms->sealed) {
		for (size_t i = 0; i < ms->n; i++)
			if (!strcmp(ms->v[i].zone, zone) &&
			    !strcmp(ms->v[i].type, type))
				return (int)i;
		return -1;
	}
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(ms->v[mid].zone, zone);
		if (!c)
			c = strcmp(ms->v[mid].type, type);
		if (!c)
			return (int)mid;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

/* The last of t[0..n) at or before s, -1 when none: the first index
 * with t > s, minus one. */
static long index_le(const int64_t *t, size_t n, int64_t s)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (t[mid] <= s)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (long)lo - 1;
}

long market_index_at(const struct market *m, int64_t t)
{
	return index_le(m->t_s, m->n, t);
}

long market_index_from(const int64_t *t, size_t n, long h, int64_t s)
{
	if (h >= -1 && h < (long)n && (h < 0 || t[h] <= s)) {
		for (int step = 0; step < 8 && h + 1 < (long)n &&
				   t[h + 1] <= s; step++)
			h++;
		if (h + 1 >= (long)n || t[h + 1] > s)
			return h;
	}
	return index_le(t, n, s);
}

bool market_price_at(const struct market *m, int64_t t, int64_t *ret_uusd)
{
	long i = market_index_at(m, t);
	if (i < 0)
		return false;
	*ret_uusd = m->price_uusd[i];
	return true;
}

int64_t market_next_change(const struct market *m, int64_t t)
{
	size_t i = (size_t)(market_index_at(m, t) + 1);
	return i < m->n ? m->t_s[i] : MARKET_NONE;
}

int64_t market_first_above(const struct market *m, int64_t t,
			   int64_t bid_uusd)
{
	long i = market_index_at(m, t);
	size_t j;

	if (i >= 0 && m->price_uusd[i] > bid_uusd)
		return t;
	j = (size_t)(i + 1);
	/* finish the current block record by record */
	while (j < m->n && j % MARKET_BLOCK != 0) {
		if (m->price_uusd[j] > bid_uusd)
			return m->t_s[j];
		j++;
	}
	/* skip whole blocks whose maximum is not above the bid */
	while (j < m->n && m->blockmax[j / MARKET_BLOCK] <= bid_uusd)
		j += MARKET_BLOCK;
	for (; j < m->n; j++)
		if (m->price_uusd[j] > bid_uusd)
			return m->t_s[j];
	return MARKET_NONE;
}

static int64_t market_cum_at(const struct market *m, int64_t x)
{
	long i = market_index_at(m, x);
	if (i < 0)
		return 0;
	return m->cum[i] + m->price_uusd[i] * (x - m->t_s[i]);
}

int64_t market_integral(const struct market *m, int64_t a, int64_t b)
{
	if (b <= a)
		return 0;
	return market_cum_at(m, b) - market_cum_at(m, a);
}

/* market_index_at through the view's cursor: a few steps forward from the
 * hint, else a binary search; the hint is updated. */
static long view_index(const struct market_view *v, int idx)
{
	const struct market *m;
	struct market_cursor *c;
	long h, n;

	if (!v->cursor)
		return market_index_at(&v->ms->v[idx], v->now_s);
	c = &v->cursor[idx];
	if (market_cursor_holds(v, c))
		return c->i;
	m = &v->ms->v[idx];
	n = (long)m->n;
	/* a hint from a set that has grown since is not used */
	h = market_index_from(m->t_s, m->n,
			      c->records == v->ms->records ? c->i : -2,
			      v->now_s);
	c->i = h;
	c->price_uusd = h >= 0 ? m->price_uusd[h] : 0;
	c->lo_s = h >= 0 ? m->t_s[h] : INT64_MIN;
	c->hi_s = h + 1 < n ? m->t_s[h + 1] : INT64_MAX;
	c->records = v->ms->records;
	return h;
}

bool market_view_history(const struct market_view *v, int idx,
			 const int64_t **ret_t, const int64_t **ret_p,
			 size_t *ret_n)
{
	const struct market *m;
	long last;

	if (idx < 0 || (size_t)idx >= v->ms->n || market_view_hidden(v, idx))
		return false;
	m = &v->ms->v[idx];
	last = view_index(v, idx);
	if (last < 0)
		return false;
	*ret_t = m->t_s;
	*ret_p = m->price_uusd;
	*ret_n = (size_t)last + 1;
	return true;
}

bool market_view_price_at(const struct market_view *v, int idx,
			  int64_t *ret_uusd)
{
	long i;

	if (idx < 0 || (size_t)idx >= v->ms->n || market_view_hidden(v, idx))
		return false;
	i = view_index(v, idx);
	if (i < 0)
		return false;
	*ret_uusd = v->ms->v[idx].price_uusd[i];
	return true;
}
