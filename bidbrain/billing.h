/* billing.h -- what an instance costs under EC2's two billing models.
 *
 * legacy-hourly (spot before October 2017): billed per started hour at the
 *   market price at the start of that hour; a partial hour ended by the
 *   provider (an eviction) is free, one ended by the user is charged in
 *   full.  On-demand: per started hour at the on-demand price.
 * per-second: billed per second at the market price (on-demand: at the
 *   on-demand price) with a 60 s minimum; a spot instance interrupted by
 *   the provider within its first hour is not charged at all.
 * Money is micro-USD; per-second amounts are rounded to the nearest
 * micro-USD once, on the total.  Pure code: no I/O, no logging.
 */
#ifndef PX_BILLING_H
#define PX_BILLING_H

#include <stdbool.h>
#include <stdint.h>

#include "../cloudapi/market.h"
#include "../common/px.h"

#define BILLING_HOUR_S 3600
#define BILLING_MIN_S 60      /* per-second minimum charge */

enum billing_model {
	BILLING_LEGACY_HOURLY = 0,
	BILLING_PER_SECOND,
	BILLING_MODEL_MAX
};

/* "legacy-hourly" / "per-second". */
/* EC2 bills Linux instances by the second from 2017-10-02 00:00 UTC: the
 * default model of a run that starts there or later. */
#define BILLING_PER_SECOND_FROM_S INT64_C(1506902400)

const char *billing_model_name(enum billing_model b);
/* Parse a model name; PX_EINVAL names the input and the known models. */
enum px_err billing_model_parse(const char *s, enum billing_model *ret,
				struct px_error *err);

enum billing_end {
	BILLING_END_USER = 0,     /* released by us (or the job ended) */
	BILLING_END_PROVIDER      /* evicted / interrupted by EC2 */
};

/* The running bill of one instance.  Fields are read-only for callers. */
struct billing_acct {
	enum billing_model model;
	const struct market *m;   /* spot market; NULL for on-demand */
	int64_t od_uusd;          /* on-demand USD/h in micro-USD (m NULL) */
	int64_t start_s;          /* launch time; billing starts here */
	int64_t hours;            /* legacy: hours started and charged */
	int64_t last_hour_uusd;   /* legacy: charge of the latest hour */
	int64_t charged_uusd;     /* total so far (final once ended) */
	int64_t free_s;           /* once ended: seconds not charged */
	bool ended;
};

/* Open the bill at start_s; under legacy-hourly the first hour is charged
 * at once.  For spot, m must have a price at start_s. */
void billing_acct_start(struct billing_acct *a, enum billing_model model,
			const struct market *m, int64_t od_uusd,
			int64_t start_s);

/* Bring the bill up to t_s (>= start) and return the total so far:
 * legacy-hourly charges every hour that started at or before t_s;
 * per-second accrues up to t_s (provisional: a first-hour interruption
 * refunds it).  Call it only after deciding whether to release at t_s. */
int64_t billing_acct_advance(struct billing_acct *a, int64_t t_s);

/* Close the bill at end_s and return the final total.  Hours that started
 * before end_s are charged; the rules above decide what is free. */
int64_t billing_acct_end(struct billing_acct *a, int64_t end_s,
			 enum billing_end how);

/* End of the billing hour running at t_s: the first start + k*3600 that is
 * > t_s (per-second billing uses the same hour grid for decisions). */
int64_t billing_period_end(const struct billing_acct *a, int64_t t_s);

/* Expected charge and running time of one billing hour of a spot instance
 * at price_uusd, evicted within the hour with probability beta after a mean
 * of tau_s seconds when it is; first_hour says whether this is the
 * instance's first hour (per-second: an interrupted first hour is free). */
struct billing_expect {
	double cost_uusd;
	double run_s;
};
void billing_expect_hour(enum billing_model model, int64_t price_uusd,
			 double beta, double tau_s, bool first_hour,
			 struct billing_expect *ret);

#endif
