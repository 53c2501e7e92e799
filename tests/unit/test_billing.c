/* test_billing.c -- legacy-hourly and per-second bills, with expected
 * amounts computed by hand in the comments. */
#include <criterion/criterion.h>
#include <string.h>

#include "../../bidbrain/billing.h"

static struct market_set ms;

/* Price: 0.10 from t=0, 0.20 from 1800, 0.05 from 4000, 0.30 from 7300. */
static void setup(void)
{
	struct px_error e = {0};
	market_set_init(&ms);
	cr_assert_eq(market_set_add(&ms, "us-east-1a", "c3.xlarge", 0,
				    100000, &e), PX_OK);
	cr_assert_eq(market_set_add(&ms, "us-east-1a", "c3.xlarge", 1800,
				    200000, &e), PX_OK);
	cr_assert_eq(market_set_add(&ms, "us-east-1a", "c3.xlarge", 4000,
				    50000, &e), PX_OK);
	cr_assert_eq(market_set_add(&ms, "us-east-1a", "c3.xlarge", 7300,
				    300000, &e), PX_OK);
	cr_assert_eq(market_set_seal(&ms, &e), PX_OK);
}

static void teardown(void)
{
	market_set_release(&ms);
}

static int64_t bill(enum billing_model b, bool spot, int64_t od,
		    int64_t start, int64_t end, enum billing_end how,
		    int64_t *ret_free)
{
	struct billing_acct a;
	billing_acct_start(&a, b, spot ? &ms.v[0] : NULL, od, start);
	int64_t c = billing_acct_end(&a, end, how);
	cr_assert_eq(c, a.charged_uusd);
	if (ret_free)
		*ret_free = a.free_s;
	return c;
}

TestSuite(billing, .init = setup, .fini = teardown);

Test(billing, legacy_user_partial_hour_charged_in_full)
{
	int64_t fr = -1;
	/* hours start at 600 (0.10) and 4200 (0.05): 0.15 */
	cr_assert_eq(bill(BILLING_LEGACY_HOURLY, true, 0, 600, 5000,
			  BILLING_END_USER, &fr), 150000);
	cr_assert_eq(fr, 0);
	/* a third hour starts at 7800 (0.30): 0.45 */
	cr_assert_eq(bill(BILLING_LEGACY_HOURLY, true, 0, 600, 7801,
			  BILLING_END_USER, NULL), 450000);
	/* ended at once by the user: the first hour is still due */
	cr_assert_eq(bill(BILLING_LEGACY_HOURLY, true, 0, 600, 600,
			  BILLING_END_USER, NULL), 100000);
}

Test(billing, legacy_evicted_partial_hour_free)
{
	int64_t fr = -1;
	/* hour 4200-5000 ended by EC2: free, so only the 0.10 hour */
	cr_assert_eq(bill(BILLING_LEGACY_HOURLY, true, 0, 600, 5000,
			  BILLING_END_PROVIDER, &fr), 100000);
	cr_assert_eq(fr, 800);
	/* evicted inside the first hour: nothing at all */
	cr_assert_eq(bill(BILLING_LEGACY_HOURLY, true, 0, 600, 3000,
			  BILLING_END_PROVIDER, &fr), 0);
	cr_assert_eq(fr, 2400);
	/* evicted exactly at an hour boundary: no partial hour to forgive */
	cr_assert_eq(bill(BILLING_LEGACY_HOURLY, true, 0, 600, 7800,
			  BILLING_END_PROVIDER, &fr), 150000);
	cr_assert_eq(fr, 0);
}

Test(billing, legacy_ondemand_per_started_hour)
{
	/* 0.50/h, 3601 s: two started hours */
	cr_assert_eq(bill(BILLING_LEGACY_HOURLY, false, 500000, 0, 3601,
			  BILLING_END_USER, NULL), 1000000);
	cr_assert_eq(bill(BILLING_LEGACY_HOURLY, false, 500000, 0, 3600,
			  BILLING_END_USER, NULL), 500000);
}

Test(billing, legacy_advance_and_period_end)
{
	struct billing_acct a;
	billing_acct_start(&a, BILLING_LEGACY_HOURLY, &ms.v[0], 0, 600);
	cr_assert_eq(a.charged_uusd, 100000);
	cr_assert_eq(billing_acct_advance(&a, 4199), 100000);
	cr_assert_eq(billing_acct_advance(&a, 4200), 150000);
	cr_assert_eq(billing_period_end(&a, 600), 4200);
	cr_assert_eq(billing_period_end(&a, 4199), 4200);
	cr_assert_eq(billing_period_end(&a, 4200), 7800);
	/* evicted later in the second hour: it is refunded */
	cr_assert_eq(billing_acct_end(&a, 5000, BILLING_END_PROVIDER),
		     100000);
}

Test(billing, per_second_market_price_integral)
{
	/* [600,1800) 1200 s x 0.10 + [1800,4000) 2200 s x 0.20
	 * + [4000,5000) 1000 s x 0.05 = 610e6 uusd*s / 3600 = 169444.4 */
	cr_assert_eq(bill(BILLING_PER_SECOND, true, 0, 600, 5000,
			  BILLING_END_USER, NULL), 169444);
	/* interrupted after the first hour: charged as used */
	cr_assert_eq(bill(BILLING_PER_SECOND, true, 0, 600, 5000,
			  BILLING_END_PROVIDER, NULL), 169444);
}

Test(billing, per_second_first_hour_interruption_free)
{
	int64_t fr = -1;
	cr_assert_eq(bill(BILLING_PER_SECOND, true, 0, 600, 3000,
			  BILLING_END_PROVIDER, &fr), 0);
	cr_assert_eq(fr, 2400);
	/* the same span ended by the user is charged: 1200 x 0.1 +
	 * 1200 x 0.2 = 360e6 / 3600 = 100000 */
	cr_assert_eq(bill(BILLING_PER_SECOND, true, 0, 600, 3000,
			  BILLING_END_USER, &fr), 100000);
	cr_assert_eq(fr, 0);
}

Test(billing, per_second_60s_minimum)
{
	/* 30 s used, 60 s billed at 0.10/h: 6e6 / 3600 = 1666.7 */
	cr_assert_eq(bill(BILLING_PER_SECOND, true, 0, 600, 630,
			  BILLING_END_USER, NULL), 1667);
	/* on-demand 0.36/h: 100 s = 0.01; 10 s = 60 s = 0.006 */
	cr_assert_eq(bill(BILLING_PER_SECOND, false, 360000, 0, 100,
			  BILLING_END_USER, NULL), 10000);
	cr_assert_eq(bill(BILLING_PER_SECOND, false, 360000, 0, 10,
			  BILLING_END_USER, NULL), 6000);
	/* on-demand is never "interrupted by the provider" for free */
	cr_assert_eq(bill(BILLING_PER_SECOND, false, 360000, 0, 100,
			  BILLING_END_PROVIDER, NULL), 10000);
}

Test(billing, expected_hour)
{
	struct billing_expect x;
	billing_expect_hour(BILLING_LEGACY_HOURLY, 100000, 0.5, 600, false,
			    &x);
	cr_assert_float_eq(x.cost_uusd, 50000, 1e-6);
	cr_assert_float_eq(x.run_s, 2100, 1e-9);
	billing_expect_hour(BILLING_PER_SECOND, 100000, 0.5, 600, false, &x);
	cr_assert_float_eq(x.cost_uusd, 100000 * 2100.0 / 3600, 1e-6);
	billing_expect_hour(BILLING_PER_SECOND, 100000, 0.5, 600, true, &x);
	cr_assert_float_eq(x.cost_uusd, 50000, 1e-6);
}

Test(billing, model_names)
{
	enum billing_model b;
	struct px_error e = {0};
	cr_assert_eq(billing_model_parse("per-second", &b, &e), PX_OK);
	cr_assert_eq(b, BILLING_PER_SECOND);
	cr_assert_str_eq(billing_model_name(BILLING_LEGACY_HOURLY),
			 "legacy-hourly");
	cr_assert_eq(billing_model_parse("hourly", &b, &e), PX_EINVAL);
	cr_assert(strstr(e.msg, "'hourly'") && strstr(e.msg, "per-second"));
}
