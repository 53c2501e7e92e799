/* risk.h -- eviction-risk estimator for bids of "current price + delta",
 * learnt from price history before now only.
 *
 * For each market it keeps samples taken every RISK_STEP_S seconds: a
 * sample at time s looks at the price p(s) and the prices over the next
 * RISK_HORIZON_S (one billing hour) and records, for every delta d_k in the
 * documented set, whether the price rose strictly above p(s) + d_k in that
 * hour and after how long.  A sample is taken only once s + horizon <= now,
 * so nothing after now is ever read; the last RISK_WINDOW_S of samples are
 * kept.  From them: beta_k = P(evicted within the hour | bid p + d_k) with
 * a prior ((evicted + RISK_PRIOR_EVICTED) / (samples + RISK_PRIOR_SAMPLES)),
 * and tau_k = the mean time
 * to eviction when evicted.  Deltas are fractions of the type's on-demand
 * price: RISK_DELTA_FRACS.  The small ones matter: legacy-era prices move
 * by 0.0001 USD steps (0.02-0.05% of on-demand), so with 1% as the
 * smallest step above 0 a bid a few steps above a price that fell was
 * read as a bid at the price, and its eviction risk overstated.
 *
 * risk_get_at answers for a bid at an absolute level B instead: of the
 * samples whose price p(s) was at most B (an instance bidding B could
 * have been launched then), the share whose price rose above B within
 * the hour, and after how long.  Spot prices revert to a base rather
 * than drift, so a bid at the current price when that price is low is
 * evicted far sooner than one when it is high; the relative estimate
 * cannot tell them apart.  A sample's rise above B is read from its
 * largest delta d_k <= B - p(s) (so it errs towards evictions).  The
 * samples are counted per distinct price in Fenwick trees, updated in
 * place as samples come and go; a level that empties keeps its place,
 * and a new level waits in a short sorted side list that queries scan,
 * folded into the trees once the scans have cost about a rebuild or the
 * list is full (risk.c).  A query costs 8 searches, 8 tree walks and the
 * side scan.  Pure code, no I/O, no logging.
 */
#ifndef PX_RISK_H
#define PX_RISK_H

#include <stddef.h>
#include <stdint.h>

#include "../cloudapi/market.h"
#include "../common/px.h"

#define RISK_DELTAS 13
#define RISK_DELTA_FRACS {0.0, 0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0}
#define RISK_STEP_S 300
#define RISK_HORIZON_S 3600
#define RISK_WINDOW_S (14 * 86400)
/* Prior of beta: as if RISK_PRIOR_SAMPLES samples had been seen, of which
 * RISK_PRIOR_EVICTED were evicted (about 4%): with no history BidBrain does
 * not count on free evicted hours. */
#define RISK_PRIOR_EVICTED 0.5
#define RISK_PRIOR_SAMPLES 12.0
/* risk_get_level's weight of the pooled estimate, in samples: 8 hours of
 * them, so a price level seen for less than that leans on the pooled
 * estimate and one seen for a day or more speaks for itself.  Chosen on
 * windows outside the benchmark (tests/bench/sim_windows.py; 208 wide
 * and 48 unseen ones), since BidBrain picks by the fleet it fills
 * (docs/benchmarks.md): 96 samples (8 h) gave the best mean saving on
 * both, ahead of 144, 288 (a day, the value before), 64 and 48; an hour
 * (12) loses much, 4 days (1152) some. */
#ifndef RISK_LEVEL_W
#define RISK_LEVEL_W (8 * 3600.0 / RISK_STEP_S)
#endif

struct risk;

/* Estimator for n markets: market_idx[i] is the i-th one's index in the
 * market set, od_uusd[i] its type's on-demand price (the delta unit). */
enum px_err risk_new(size_t n, const int *market_idx, const int64_t *od_uusd,
		     struct risk **ret, struct px_error *err);
void risk_free(struct risk *r);

/* Take every sample that has become complete by mv->now_s.  Returns true
 * when any market's estimates changed (*ret_changed[i] set per market when
 * ret_changed is not NULL).  risk_get_level reads the price now from mv
 * when it needs it: mv must stay valid, at the same instant, until the
 * queries that follow are done (a policy's decision). */
bool risk_update(struct risk *r, const struct market_view *mv,
		 bool *ret_changed);

struct risk_estimate {
	double beta;         /* P(evicted within the hour) */
	double tau_s;        /* mean seconds to eviction, when evicted */
	uint32_t samples;    /* samples behind the estimate */
};
void risk_get(const struct risk *r, size_t i, int k,
	      struct risk_estimate *ret);

/* The estimate for market i and a bid at bid_uusd (see above).  Not
 * const: it may rebuild the market's trees first. */
void risk_get_at(struct risk *r, size_t i, int64_t bid_uusd,
		 struct risk_estimate *ret);

/* The estimate for market i and a bid at bid_uusd when the price is
 * price_uusd: the samples taken at exactly that price, with the delta
 * d_k <= bid - price (the largest), shrunk towards risk_get(k), the
 * market's samples at every price for the same delta, with the weight of
 * RISK_LEVEL_W samples (a level seen rarely gets the pooled estimate).
 * Spot prices of the legacy era move in small steps around a level, and
 * the chance that the price rises above a bid within the hour depends on
 * the price now.  risk_get_at(bid) is not the shrink target: it pools
 * samples at lower prices, most of which needed a larger rise, and so
 * predicted about 0.2 where 0.47-0.56 of bids at the price were evicted
 * within the hour on the 2015 and 2016 traces (docs/benchmarks.md).
 * At the market's price now (as of the last risk_update), the level's
 * samples taken when the price had come there the same way (by a rise,
 * or not) are shrunk in turn towards the level's estimate, with the same
 * weight: prices often fall back after a rise and rise after a fall (of
 * bids at the price on the 2015 job's markets, 0.39-0.67 were evicted
 * within the hour after a rise against 0.53-0.83 after a fall, one market
 * the other way round).  A bid below the price gets risk_get_at's
 * answer. */
void risk_get_level(struct risk *r, size_t i, int64_t price_uusd,
		    int64_t bid_uusd, struct risk_estimate *ret);

/* risk_get_level for the bids price_uusd + d_k of every delta k, at once
 * (one level lookup): ret[RISK_DELTAS]. */
void risk_get_level_deltas(struct risk *r, size_t i, int64_t price_uusd,
			   struct risk_estimate *ret);

/* The estimate for market i and a bid at bid_uusd >= the price now
 * (price_uusd), conditioned on how long the price now has held (its age
 * a) instead of on its level: of the market's price levels in the
 * window that were still the price at age a, and whose following hour
 * is over by now, the share in which a later price rose strictly above
 * that level's price + (bid - price) within that hour, with the prior
 * above; tau the mean time to that rise.  Today's spot prices (the 2021
 * trace) move in levels that hold for at least 4.8 hours (median 6.4):
 * no price rises within an hour of a change, and 30-45% of levels end
 * in each hour from their fifth to their seventh.  A price that has just
 * changed is not about to rise: of 837 of BidBrain's decisions at a
 * price less than an hour old none saw a rise within the hour, and
 * risk_get_level, blind to the age, predicted 11% for 287 decisions of
 * which none came true (docs/benchmarks.md, issue 40, "Session 32").
 * False (use risk_get_level) where the market moves faster: fewer than
 * half of its last 8 completed levels (at least 2) held an hour, as on
 * the 2015 and 2016 traces; or where no level of the window reached age
 * a. */
bool risk_get_age(const struct risk *r, size_t i, int64_t price_uusd,
		  int64_t bid_uusd, struct risk_estimate *ret);

/* risk_get_age for the bids price now + d_k of every delta k at once:
 * ret[RISK_DELTAS]. */
bool risk_get_age_deltas(const struct risk *r, size_t i,
			 struct risk_estimate *ret);

/* Delta k of market i in micro-USD. */
int64_t risk_delta_uusd(const struct risk *r, size_t i, int k);

/* The largest k whose delta is <= bid - price, or -1 when bid < price. */
int risk_delta_index(const struct risk *r, size_t i, int64_t price_uusd,
		     int64_t bid_uusd);

#endif
