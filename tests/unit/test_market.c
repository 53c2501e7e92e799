/* test_market.c -- the market replayer (cloudapi/market.c). */
#include <criterion/criterion.h>
#include <string.h>

#include "../../cloudapi/market.h"

static void add(struct market_set *ms, const char *z, const char *ty,
		int64_t t, int64_t p)
{
	struct px_error e = {0};
	cr_assert_eq(market_set_add(ms, z, ty, t, p, &e), PX_OK, "%s", e.msg);
}

Test(market, unordered_records_sorted_and_queried)
{
	struct market_set ms;
	struct px_error e = {0};
	int64_t p = -1;

	market_set_init(&ms);
	/* out of order, two markets interleaved, one unchanged repeat */
	add(&ms, "us-east-1b", "c4.xlarge", 300, 30);
	add(&ms, "us-east-1a", "c4.xlarge", 100, 10);
	add(&ms, "us-east-1b", "c4.xlarge", 100, 50);
	add(&ms, "us-east-1b", "c4.xlarge", 200, 50); /* repeat: dropped */
	add(&ms, "us-east-1b", "c4.xlarge", 500, 70);
	cr_assert_eq(market_set_seal(&ms, &e), PX_OK, "%s", e.msg);
	cr_assert_eq(ms.n, 2);
	cr_assert_eq(ms.first_s, 100);
	cr_assert_eq(ms.last_s, 500);
	int a = market_set_find(&ms, "us-east-1a", "c4.xlarge");
	int b = market_set_find(&ms, "us-east-1b", "c4.xlarge");
	cr_assert(a >= 0 && b >= 0 && a != b);
	cr_assert_eq(market_set_find(&ms, "us-east-1c", "c4.xlarge"), -1);
	const struct market *m = &ms.v[b];
	cr_assert_str_eq(m->region, "us-east-1");
	cr_assert_eq(m->n, 3);
	cr_assert_not(market_price_at(m, 99, &p));
	cr_assert_eq(p, -1);
	cr_assert(market_price_at(m, 100, &p));
	cr_assert_eq(p, 50);
	cr_assert(market_price_at(m, 299, &p));
	cr_assert_eq(p, 50);
	cr_assert(market_price_at(m, 300, &p));
	cr_assert_eq(p, 30);
	cr_assert(market_price_at(m, 10000, &p));
	cr_assert_eq(p, 70);
	cr_assert_eq(market_next_change(m, 0), 100);
	cr_assert_eq(market_next_change(m, 100), 300);
	cr_assert_eq(market_next_change(m, 250), 300);
	cr_assert_eq(market_next_change(m, 500), MARKET_NONE);
	market_set_release(&ms);
}

Test(market, conflicting_duplicate_rejected)
{
	struct market_set ms;
	struct px_error e = {0};

	market_set_init(&ms);
	add(&ms, "us-east-1a", "m3.medium", 1456348253, 10);
	add(&ms, "us-east-1a", "m3.medium", 1456348253, 10); /* same: ok */
	add(&ms, "us-east-1a", "r3.large", 1456348253, 10);
	add(&ms, "us-east-1a", "r3.large", 1456348253, 11);
	cr_assert_eq(market_set_seal(&ms, &e), PX_EINVAL);
	cr_assert(strstr(e.msg, "'r3.large'"), "%s", e.msg);
	cr_assert(strstr(e.msg, "2016-02-24T21:10:53Z"), "%s", e.msg);
	/* both prices named, as market import names both */
	cr_assert(strstr(e.msg, "0.000010 and 0.000011"), "%s", e.msg);
	market_set_release(&ms);

	market_set_init(&ms);
	cr_assert_eq(market_set_add(&ms, "us-east-1a", "x", 1, -5, &e),
		     PX_EINVAL);
	cr_assert_eq(market_set_add(&ms, "", "x", 1, 5, &e), PX_EINVAL);
	market_set_release(&ms);
}

/* Reference: first time >= t with price > bid, by linear scan. */
static int64_t slow_first_above(const struct market *m, int64_t t, int64_t b)
{
	int64_t p;
	if (market_price_at(m, t, &p) && p > b)
		return t;
	for (size_t i = 0; i < m->n; i++)
		if (m->t_s[i] > t && m->price_uusd[i] > b)
			return m->t_s[i];
	return MARKET_NONE;
}

Test(market, first_above_matches_linear_scan)
{
	struct market_set ms;
	struct px_error e = {0};
	uint64_t x = 12345;

	market_set_init(&ms);
	/* 1000 records with a few spikes, over several index blocks */
	for (int i = 0; i < 1000; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		int64_t p = 100 + (int64_t)((x >> 33) % 50);
		if (i % 97 == 13)
			p = 1000 + i;
		add(&ms, "us-east-1a", "g2.2xlarge", 10 * i + 5, p);
	}
	cr_assert_eq(market_set_seal(&ms, &e), PX_OK);
	const struct market *m = &ms.v[0];
	int64_t bids[] = {90, 120, 149, 150, 999, 1500, 2100, 5000};
	for (int64_t t = 0; t < 10100; t += 37)
		for (size_t k = 0; k < sizeof bids / sizeof *bids; k++)
			cr_assert_eq(market_first_above(m, t, bids[k]),
				     slow_first_above(m, t, bids[k]),
				     "t %ld bid %ld", (long)t, (long)bids[k]);
	market_set_release(&ms);
}

Test(market, integral_exact)
{
	struct market_set ms;
	struct px_error e = {0};

	market_set_init(&ms);
	add(&ms, "us-east-1a", "c3.xlarge", 1000, 3600);
	add(&ms, "us-east-1a", "c3.xlarge", 2000, 7200);
	add(&ms, "us-east-1a", "c3.xlarge", 5000, 0);
	cr_assert_eq(market_set_seal(&ms, &e), PX_OK);
	const struct market *m = &ms.v[0];
	/* [1500, 2500): 500 s at 3600 + 500 s at 7200 */
	cr_assert_eq(market_integral(m, 1500, 2500),
		     500 * 3600 + 500 * 7200);
	cr_assert_eq(market_integral(m, 1000, 9000),
		     1000 * 3600 + 3000 * 7200);
	cr_assert_eq(market_integral(m, 6000, 7000), 0);
	cr_assert_eq(market_integral(m, 2500, 2500), 0);
	market_set_release(&ms);
}

Test(market, view_hides_future_and_truncate_keeps_prefix)
{
	struct market_set ms, tr;
	struct px_error e = {0};
	const int64_t *t, *p;
	size_t n;
	int64_t v;

	market_set_init(&ms);
	for (int i = 0; i < 10; i++) {
		add(&ms, "us-east-1a", "m1.small", 100 * i, 10 + i);
		add(&ms, "us-east-1c", "m1.small", 100 * i + 50, 20 + i);
	}
	cr_assert_eq(market_set_seal(&ms, &e), PX_OK);
	struct market_view mv = {.ms = &ms, .now_s = 449};
	cr_assert(market_view_history(&mv, 0, &t, &p, &n));
	cr_assert_eq(n, 5);
	cr_assert_eq(t[n - 1], 400);
	cr_assert(market_view_history(&mv, 1, &t, &p, &n));
	cr_assert_eq(n, 4);
	cr_assert(market_view_price(&mv, 1, &v));
	cr_assert_eq(v, 23);
	mv.now_s = 10;
	cr_assert_not(market_view_history(&mv, 1, &t, &p, &n));
	cr_assert_not(market_view_price(&mv, 1, &v));
	cr_assert_not(market_view_price(&mv, 7, &v));

	cr_assert_eq(market_set_truncate(&ms, 449, &tr, &e), PX_OK);
	cr_assert_eq(tr.n, 2);
	cr_assert_eq(tr.v[0].n, 5);
	cr_assert_eq(tr.v[1].n, 4);
	cr_assert_eq(tr.last_s, 400);
	cr_assert_eq(market_next_change(&tr.v[0], 400), MARKET_NONE);
	cr_assert_eq(market_first_above(&tr.v[0], 0, 13), 400);
	cr_assert_eq(market_first_above(&tr.v[0], 0, 14), MARKET_NONE);
	market_set_release(&tr);
	market_set_release(&ms);
}

/* The view's cursor is only a cache: forward, backward and random queries
 * with a cursor give what the plain binary search gives. */
Test(market, view_cursor_matches_plain_lookup)
{
	struct market_set ms;
	struct px_error e = {0};
	struct market_cursor cursor[2] = {{0}};
	uint64_t x = 42;

	market_set_init(&ms);
	for (int64_t t = 100; t < 100 + 50 * 37; t += 37) {
		add(&ms, "us-east-1a", "m3.large", t, t % 7);
		add(&ms, "us-east-1b", "m3.large", t + 5, t % 5);
	}
	cr_assert_eq(market_set_seal(&ms, &e), PX_OK, "%s", e.msg);
	for (int i = 0; i < 4000; i++) {
		int64_t now;
		if (i < 2000) {
			now = 50 + i; /* forward, from before the first */
		} else {
			x = x * 6364136223846793005ull + 1442695040888963407ull;
			now = 50 + (int64_t)((x >> 33) % 2100);
		}
		struct market_view plain = {.ms = &ms, .now_s = now};
		struct market_view fast = {.ms = &ms, .now_s = now,
					   .cursor = cursor};
		for (int m = 0; m < 2; m++) {
			int64_t a = -1, b = -1;
			const int64_t *t1, *p1, *t2, *p2;
			size_t n1 = 0, n2 = 0;
			bool ha = market_view_price(&plain, m, &a);
			bool hb = market_view_price(&fast, m, &b);
			cr_assert_eq(ha, hb, "now %lld market %d",
				     (long long)now, m);
			cr_assert_eq(a, b, "now %lld market %d", (long long)now,
				     m);
			ha = market_view_history(&plain, m, &t1, &p1, &n1);
			hb = market_view_history(&fast, m, &t2, &p2, &n2);
			cr_assert_eq(ha, hb);
			cr_assert_eq(n1, n2, "now %lld", (long long)now);
		}
	}
	market_set_release(&ms);
}

/* market_index_from answers what a binary search answers, whatever the
 * hint: none, an earlier answer (near or far), one past s, -1, or out of
 * range. */
Test(market, index_from_matches_binary_search)
{
	int64_t t[40];
	const long hints[] = {-2, -1, 0, 1, 5, 17, 38, 39, 40, 1000};

	for (int i = 0; i < 40; i++)
		t[i] = 100 + 7 * i + (i % 3);  /* ascending, uneven steps */
	for (int64_t s = 90; s < 400; s++) {
		long want = -1;

		for (int i = 0; i < 40; i++)
			if (t[i] <= s)
				want = i;
		for (size_t k = 0; k < sizeof hints / sizeof *hints; k++)
			cr_assert_eq(market_index_from(t, 40, hints[k], s), want,
				     "s %lld hint %ld", (long long)s,
				     hints[k]);
		cr_assert_eq(market_index_from(t, 0, -1, s), -1);
	}
}

/* A live market grows: appended records answer every query as if they
 * had been in the set when it was sealed (compared with a set built with
 * all of them), across block and capacity boundaries. */
Test(market, append_matches_a_set_sealed_with_everything)
{
	struct market_set live, all;
	struct px_error e = {0};
	bool added;
	int64_t t = 1000, p;

	market_set_init(&live);
	market_set_init(&all);
	add(&live, "us-east-1a", "m5.large", 1000, 50000);
	add(&all, "us-east-1a", "m5.large", 1000, 50000);
	add(&live, "us-east-1a", "c5.large", 900, 40000);
	cr_assert_eq(market_set_seal(&live, &e), PX_OK, "%s", e.msg);
	int i = market_set_find(&live, "us-east-1a", "m5.large");
	size_t rec0 = live.records;
	/* at or before the last record, or unchanged: ignored */
	cr_assert_eq(market_set_append(&live, i, 1000, 60000, &added, &e),
		     PX_OK);
	cr_assert_not(added);
	cr_assert_eq(market_set_append(&live, i, 1500, 50000, &added, &e),
		     PX_OK);
	cr_assert_not(added);
	cr_assert_eq(live.records, rec0);
	cr_assert_eq(market_set_append(&live, i, 2000, -1, &added, &e),
		     PX_EINVAL);
	cr_assert_eq(market_set_append(&live, 7, 2000, 1, &added, &e),
		     PX_EINVAL);
	for (int k = 1; k <= 300; k++) {
		t += 37 + k % 11;
		p = 50000 + (k * 7919) % 20000;
		cr_assert_eq(market_set_append(&live, i, t, p, &added, &e),
			     PX_OK, "%s", e.msg);
		add(&all, "us-east-1a", "m5.large", t, p);
	}
	cr_assert_gt(live.records, rec0);
	cr_assert_eq(live.last_s, t);
	cr_assert_eq(market_set_seal(&all, &e), PX_OK, "%s", e.msg);
	const struct market *a = &all.v[0], *l = &live.v[i];
	cr_assert_eq(a->n, l->n);
	for (int64_t x = 900; x < t + 100; x += 53) {
		int64_t pa = -1, pl = -1;

		cr_assert_eq(market_price_at(a, x, &pa),
			     market_price_at(l, x, &pl));
		cr_assert_eq(pa, pl, "price at %lld", (long long)x);
		cr_assert_eq(market_first_above(a, x, 60000),
			     market_first_above(l, x, 60000));
		if (x >= 1000)
			cr_assert_eq(market_integral(a, 1000, x),
				     market_integral(l, 1000, x));
	}
	market_set_release(&live);
	market_set_release(&all);
}
