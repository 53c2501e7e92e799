/* ec2_prices.c -- the ec2 world's spot prices: polled live while a job
 * runs (DescribeSpotPriceHistory every ec2_price_poll_s, appended to the
 * job's market and the store), and the history a job's markets start
 * from (the world's load_market, a blocking client of its own).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/log.h"
#include "../../db/store.h"
#include "ec2_world_int.h"

#pragma GCC diagnostic ignored "-Wformat-truncation"

static enum px_err price_record(const struct trace_record *r, void *ctx,
				struct px_error *rerr)
{
	struct call *k = ctx;
	struct ec2w *w = k->w;
	const struct pol_env *env;
	struct px_error err = {0};
	int64_t mid = 0;
	bool added = false;

	(void)rerr;
	if (!w)
		return PX_ECANCELED;
	env = w->s.env;
	for (size_t i = 0; i < env->n_markets; i++) {
		int mi = env->markets[i].market;
		struct market *m = &w->s.ms->v[mi];

		if (strcmp(m->zone, r->zone) || strcmp(m->type, r->type))
			continue;
		if (market_set_append(w->s.ms, mi, r->t_s, r->price_uusd,
				      &added, &err) != PX_OK)
			return PX_OK;     /* a bad record: skipped */
		if (!added)
			return PX_OK;
		if (store_market_get_or_add(w->h->wh->st, w->s.region, r->zone,
					    r->type, "Linux/UNIX", &mid,
					    &err) == PX_OK)
			(void)store_price_add(w->h->wh->st, mid, r->t_s,
					      r->price_uusd, NULL, &err);
		if (w->s.wants & POL_WHY_PRICE)
			(void)evq_push(&w->q, r->t_s > w->step_t ? r->t_s :
				       w->step_t, EW_PRICE, i, &err);
		if (r->t_s >= w->price_from_s)
			w->price_from_s = r->t_s;
		return PX_OK;
	}
	return PX_OK;
}

static void price_done(enum px_err rc, const struct ec2_sph_stats *st,
		       const struct px_error *err,
		       const struct ec2_aws_error *aws, void *ctx)
{
	struct call *k = ctx;
	struct ec2w *w = k->w;

	(void)st;
	(void)aws;
	if (w) {
		w->pricing = false;
		if (rc != PX_OK && rc != PX_ECANCELED)
			log_warn("job %" PRId64 ": DescribeSpotPriceHistory: "
				 "%s (asked again at the next poll)",
				 w->s.job_id, err ? err->msg : "failed");
	}
	ec2w_call_end(k);
}

int64_t ec2w_price_timer(struct loop *l, int64_t id, void *ctx)
{
	struct ec2w *w = ctx;
	const struct pol_env *env = w->s.env;
	const char *types[64], *zones[64];
	size_t nt = 0, nz = 0;
	struct ec2_sph_query q = {0};
	struct px_error err = {0};
	struct call *k;
	int64_t every = w->h->wh->cfg->ec2_price_poll_s;
	double sp = ec2h_clock_speedup(w->h->wh->cfg);

	(void)l;
	(void)id;
	if (w->pricing)
		goto again;
	for (size_t i = 0; i < env->n_markets; i++) {
		const struct market *m = &w->s.ms->v[env->markets[i].market];
		bool seen_t = false, seen_z = false;

		for (size_t a = 0; a < nt; a++)
			seen_t |= !strcmp(types[a], m->type);
		for (size_t a = 0; a < nz; a++)
			seen_z |= !strcmp(zones[a], m->zone);
		if (!seen_t && nt < 64)
			types[nt++] = m->type;
		if (!seen_z && nz < 64)
			zones[nz++] = m->zone;
	}
	q.types = types;
	q.n_types = nt;
	q.zones = zones;
	q.n_zones = nz;
	q.start_s = w->price_from_s;
	k = ec2w_call_new(w, 2, 0);
	if (k && ec2_sph_start(w->h->c, &q, price_record, price_done, k, &err)
	    == PX_OK)
		w->pricing = true;
	else if (k) {
		ec2w_call_end(k);
		log_warn("job %" PRId64 ": DescribeSpotPriceHistory: %s",
			 w->s.job_id, err.msg);
	}
again:
	/* market seconds between polls, in real ms under the fake's clock */
	return (int64_t)((double)(every > 0 ? every : 300) * 1000.0 / sp);
}

static enum px_err hist_record(const struct trace_record *r, void *ctx,
			       struct px_error *rerr)
{
	struct px_error err = {0};

	(void)rerr;
	if (market_set_add(ctx, r->zone, r->type, r->t_s, r->price_uusd,
			   &err) != PX_OK)
		return PX_OK;             /* a bad record: skipped */
	return PX_OK;
}

#define HISTORY_DAYS 7           /* what a job's policy learns from */
#define WINDOW_DAYS 3650         /* an ec2 job's window: open-ended */

enum px_err ec2_world_market_history(const struct proteusd_config *cfg,
				     const char *region,
				     const char *const *types, size_t n_types,
				     const char *const *zones, size_t n_zones,
				     struct market_set *ms, int64_t *ret_now_s,
				     int64_t *ret_last_s, struct px_error *err)
{
	struct awscred_opts co = {0};
	struct awscred_provider *creds = NULL;
	struct ec2_config ec = {0};
	struct ec2_client *c = NULL;
	const char *zv[CONFIG_EC2_SUBNETS_MAX];
	int64_t now = ec2_world_now(cfg);
	struct ec2_sph_query q = {
		.types = types, .n_types = n_types, .zones = zones,
		.n_zones = n_zones, .start_s = now - HISTORY_DAYS * 86400,
		.end_s = now,
	};
	struct ec2_aws_error aws = {0};
	enum px_err e;

	if (!n_zones) {           /* the zones the daemon has subnets in */
		for (int i = 0; i < cfg->ec2_subnet_count; i++)
			zv[i] = cfg->ec2_subnet[i].zone;
		q.zones = zv;
		q.n_zones = (size_t)cfg->ec2_subnet_count;
	}
	*ret_now_s = now;
	*ret_last_s = now + WINDOW_DAYS * (int64_t)86400;
	e = awscred_provider_new(&co, &creds, err);
	ec2h_client_config(cfg, region, creds, &ec);
	if (e == PX_OK)
		e = ec2_client_new(&ec, &c, err);
	if (e == PX_OK)
		e = ec2_describe_spot_price_history(c, &q, hist_record, ms,
						    NULL, err, &aws);
	ec2_client_free(c);
	awscred_provider_free(creds);
	return e;
}
