/* billing.c -- legacy-hourly and per-second bills of one instance. */
#include <string.h>

#include "billing.h"

static const char *const model_names[BILLING_MODEL_MAX] = {
	[BILLING_LEGACY_HOURLY] = "legacy-hourly",
	[BILLING_PER_SECOND] = "per-second",
};

const char *billing_model_name(enum billing_model b)
{
	return (unsigned)b < BILLING_MODEL_MAX ? model_names[b] : "?";
}

enum px_err billing_model_parse(const char *s, enum billing_model *ret,
				struct px_error *err)
{
	for (int i = 0; i < BILLING_MODEL_MAX; i++)
		if (!strcmp(s, model_names[i])) {
			*ret = (enum billing_model)i;
			return PX_OK;
		}
	return px_errorf(err, PX_EINVAL,
			 "unknown billing model '%s' (known: legacy-hourly, "
			 "per-second)", s);
}

/* Price per hour in force at t. */
static int64_t acct_price(const struct billing_acct *a, int64_t t)
{
	int64_t p = 0;
	if (!a->m)
		return a->od_uusd;
	if (!market_price_at(a->m, t, &p))
		p = 0;
	return p;
}

/* Micro-USD for [a->start_s, t): price x seconds / 3600, rounded. */
static int64_t accrued(const struct billing_acct *a, int64_t t)
{
	int64_t x;
	if (t <= a->start_s)
		return 0;
	if (a->m)
		x = market_integral(a->m, a->start_s, t);
	else
		x = a->od_uusd * (t - a->start_s);
	return (x + BILLING_HOUR_S / 2) / BILLING_HOUR_S;
}

/* Legacy: charge every hour with start < limit (or <= when inclusive). */
static void charge_hours(struct billing_acct *a, int64_t limit,
			 bool inclusive)
{
	for (;;) {
		int64_t h = a->start_s + a->hours * BILLING_HOUR_S;
		if (h > limit || (h == limit && !inclusive))
			break;
		a->last_hour_uusd = acct_price(a, h);
		a->charged_uusd += a->last_hour_uusd;
		a->hours++;
	}
}

void billing_acct_start(struct billing_acct *a, enum billing_model model,
			const struct market *m, int64_t od_uusd,
			int64_t start_s)
{
	memset(a, 0, sizeof *a);
	a->model = model;
	a->m = m;
	a->od_uusd = od_uusd;
	a->start_s = start_s;
	if (model == BILLING_LEGACY_HOURLY)
		charge_hours(a, start_s, true);
}

int64_t billing_acct_advance(struct billing_acct *a, int64_t t_s)
{
	if (a->ended)
		return a->charged_uusd;
	if (a->model == BILLING_LEGACY_HOURLY)
		charge_hours(a, t_s, true);
	else
		a->charged_uusd = accrued(a, t_s);
	return a->charged_uusd;
}

int64_t billing_acct_end(struct billing_acct *a, int64_t end_s,
			 enum billing_end how)
{
	int64_t dur;

	if (a->ended)
		return a->charged_uusd;
	if (end_s < a->start_s)
		end_s = a->start_s;
	dur = end_s - a->start_s;
	a->ended = true;
	if (a->model == BILLING_LEGACY_HOURLY) {
		/* the first hour is always started (charged at launch) */
		charge_hours(a, end_s, false);
		if (how == BILLING_END_PROVIDER && a->m &&
		    (dur % BILLING_HOUR_S != 0 || dur == 0)) {
			int64_t last = a->start_s +
				       (a->hours - 1) * BILLING_HOUR_S;
			a->charged_uusd -= a->last_hour_uusd;
			a->free_s = end_s - last;
		}
		return a->charged_uusd;
	}
	if (how == BILLING_END_PROVIDER && a->m && dur < BILLING_HOUR_S) {
		a->charged_uusd = 0;
		a->free_s = dur;
		return 0;
	}
	if (dur < BILLING_MIN_S)
		end_s = a->start_s + BILLING_MIN_S;
	a->charged_uusd = accrued(a, end_s);
	return a->charged_uusd;
}

int64_t billing_period_end(const struct billing_acct *a, int64_t t_s)
{
	int64_t k;
	if (t_s < a->start_s)
		return a->start_s + BILLING_HOUR_S;
	k = (t_s - a->start_s) / BILLING_HOUR_S + 1;
	return a->start_s + k * BILLING_HOUR_S;
}

void billing_expect_hour(enum billing_model model, int64_t price_uusd,
			 double beta, double tau_s, bool first_hour,
			 struct billing_expect *ret)
{
	double p = (double)price_uusd;

	if (beta < 0)
		beta = 0;
	if (beta > 1)
		beta = 1;
	ret->run_s = (1 - beta) * BILLING_HOUR_S + beta * tau_s;
	if (model == BILLING_LEGACY_HOURLY || first_hour)
		ret->cost_uusd = p * (1 - beta);
	else
		ret->cost_uusd = p * ret->run_s / BILLING_HOUR_S;
}
