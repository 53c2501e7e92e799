/* ec2_adopt.c -- the ec2 world's instances of an earlier life: adopted
 * (ctrl_adopt) when EC2 lists them alive with the job's tag, and, when a
 * resumed job starts, the store's open ones EC2 no longer has closed at
 * EC2's time, then the controller's ids go on past every id the job used.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/log.h"
#include "../../db/store.h"
#include "ec2_world_int.h"

#pragma GCC diagnostic ignored "-Wformat-truncation"

/* The port slot instance i's tag keeps (-1: none).  The tag is EC2's
 * word, so anything but a whole number from -1 (what a node got when no
 * slot was free) to 65535 is refused, said, and the node gets a fresh
 * slot. */
static int tag_slot(const struct ec2w *w, const struct ec2_instance *i)
{
	const char *v = ec2w_tag_of(i, TAG_SLOT);
	char *end;
	long n;

	if (!v)
		return -1;
	errno = 0;
	n = strtol(v, &end, 10);
	if (errno || end == v || *end || n < -1 || n > 65535) {
		log_warn("job %" PRId64 ": instance %s: its %s tag is not a "
			 "port slot number: refused, it gets a fresh slot",
			 w->s.job_id, i->id, TAG_SLOT);
		return -1;
	}
	return (int)n;
}

struct rq_find {
	uint64_t id;
	struct store_ec2_request r;
	bool found;
	uint64_t max_id;
};

static enum px_err rq_each(const struct store_ec2_request *r, void *ctx)
{
	struct rq_find *f = ctx;

	if (r->ctrl_id == f->id) {
		f->r = *r;
		f->found = true;
	}
	if (r->ctrl_id > f->max_id)
		f->max_id = r->ctrl_id;
	return PX_OK;
}

/* Instance i (alive, the job's tag, id) becomes the controller's again. */
enum px_err ec2w_adopt(struct ec2w *w, const struct ec2_instance *i,
		       uint64_t id, struct px_error *err)
{
	const struct pol_env *env = w->s.env;
	struct rq_find f = { .id = id };
	struct world_req q = { .id = id, .market = -1, .type = -1 };
	struct inst *in;
	enum px_err e;

	e = store_ec2_requests_each(w->h->wh->st, w->s.job_id, false, rq_each,
				    &f, err);
	if (e != PX_OK)
		return e;
	for (size_t t = 0; t < env->n_types; t++)
		if (!strcmp(env->types[t].name, i->type))
			q.type = (int)t;
	if (!strcmp(i->lifecycle, "spot")) {
		for (size_t m = 0; m < env->n_markets; m++)
			if (!strcmp(env->markets[m].zone, i->zone) &&
			    env->markets[m].type == q.type)
				q.market = (int)m;
	}
	if (q.type < 0 || (!strcmp(i->lifecycle, "spot") && q.market < 0)) {
		ec2h_terminate(w->h, i->id, 0);
		return px_errorf(err, PX_EINVAL, "%s %s in %s is none of the "
				 "job's markets: terminated", i->id, i->type,
				 i->zone);
	}
	q.reliable = f.found ? f.r.reliable : q.market < 0;
	q.bid_uusd = f.found ? f.r.bid_uusd : 0;
	q.type_name = env->types[q.type].name;
	q.zone = q.market >= 0 ? env->markets[q.market].zone : NULL;
	if (!(in = ec2w_inst_add(w, id, err)))
		return err->code;
	in->market = q.market;
	in->type = q.type;
	in->reliable = q.reliable;
	in->bid_uusd = q.bid_uusd;
	snprintf(in->type_name, sizeof in->type_name, "%s", q.type_name);
	snprintf(in->zone, sizeof in->zone, "%s", q.zone ? q.zone : "");
	snprintf(in->iid, sizeof in->iid, "%s", i->id);
	snprintf(in->token, sizeof in->token, "%s", i->client_token);
	in->launch_s = i->launch_time_s > 0 ? i->launch_time_s : ec2w_clock(w);
	in->asked_s = in->launch_s;
	in->st = !strcmp(i->state, "running") ? I_RUNNING : I_PENDING;
	in->running_s = ec2w_clock(w);
	in->slot = ec2h_slot_take(w->h, w->node_slots, tag_slot(w, i));
	e = ctrl_adopt(w->c, ec2w_tell_t(w), &q, in->launch_s, false);
	if (e != PX_OK) {
		ec2h_slot_give(w->h, in->slot, w->node_slots);
		w->n--;
		return px_errorf(err, e, "%s", ctrl_error(w->c)->msg);
	}
	ec2w_enrolled_before(w, in);
	if (w->s.hooks.adopted)
		w->s.hooks.adopted(w->s.hooks.ctx, &q);
	log_notice("job %" PRId64 ": instance %" PRIu64 " (%s, %s %s%s) "
		   "adopted", w->s.job_id, id, i->id, i->type,
		   q.zone ? "spot in " : "on-demand", q.zone ? q.zone : "");
	if (ec2w_joined_early(w, id)) {
		/* its node is in already: the join clock must not run */
		in->ready = true;
		in->st = I_RUNNING;
		ec2w_tell(w, in, T_READY);
	}
	return PX_OK;
}

/* The store's open instance row of a resumed job that EC2 no longer runs
 * (listed as ended, or not listed at all): closed at EC2's end time, or
 * at the last instant the job recorded. */
struct close_ctx {
	struct ec2w *w;
	const struct ec2_instance_list *l;
	int64_t last_s;
};

static enum px_err close_open(const struct store_open_instance *oi, void *ctx)
{
	struct close_ctx *cc = ctx;
	struct ec2w *w = cc->w;
	const struct ec2_instance *seen = NULL;
	struct px_error err = {0};
	int64_t end_s = cc->last_s;
	struct billing_acct a;
	int64_t amount = 0, od = 0;
	int mi;

	for (size_t i = 0; i < cc->l->n; i++)
		if (!strcmp(cc->l->v[i].id, oi->cloud_id))
			seen = &cc->l->v[i];
	if (seen && ec2w_alive(seen->state))
		return PX_OK;            /* adopted */
	if (seen && seen->transition_s > 0)
		end_s = seen->transition_s;
	if (end_s < oi->start_us / 1000000)
		end_s = oi->start_us / 1000000;
	mi = oi->zone[0] ? market_set_find(w->s.ms, oi->zone, oi->type) : -1;
	for (size_t t = 0; t < w->s.env->n_types; t++)
		if (!strcmp(w->s.env->types[t].name, oi->type))
			od = w->s.env->types[t].od_uusd;
	if (mi >= 0 && w->s.ms->v[mi].n &&
	    w->s.ms->v[mi].t_s[0] <= oi->start_us / 1000000) {
		billing_acct_start(&a, w->s.env->billing, &w->s.ms->v[mi], 0,
				   oi->start_us / 1000000);
		amount = billing_acct_end(&a, end_s, seen &&
			 ec2w_ended_by_ec2(seen) ? BILLING_END_PROVIDER :
			 BILLING_END_USER);
	} else if (!oi->zone[0] && od > 0) {
		billing_acct_start(&a, w->s.env->billing, NULL, od,
				   oi->start_us / 1000000);
		amount = billing_acct_end(&a, end_s, BILLING_END_USER);
	}
	if (store_instance_end(w->h->wh->st, oi->id, end_s * 1000000, "lost",
			       &err) != PX_OK ||
	    store_ledger_add(w->h->wh->st, w->s.job_id, oi->id, oi->start_us,
			     end_s * 1000000, amount, "closed by a restarted "
			     "proteusd at EC2's end time", &err) != PX_OK ||
	    store_event_add(w->h->wh->st, w->s.job_id, oi->id, end_s * 1000000,
			    "lost", seen ? "EC2 ended it while proteusd was "
			    "down" : "EC2 no longer lists it", &err) != PX_OK)
		log_err("job %" PRId64 ": closing instance %s: %s", w->s.job_id,
			oi->cloud_id, err.msg);
	return PX_OK;
}

static enum px_err rq_close(const struct store_ec2_request *r, void *ctx)
{
	struct ec2w *w = ctx;
	struct px_error err = {0};

	/* a request with no instance alive now: it never launched, or its
	 * instance ended; a late listing of it is adopted then */
	if (!ec2w_inst_of(w, r->ctrl_id))
		(void)store_ec2_request_set(w->h->wh->st, r->client_token,
					    "closed", NULL, px_now_wall_us(),
					    &err);
	return PX_OK;
}

void ec2w_reconcile_done(enum px_err rc, struct ec2_instance_list *l,
			 const struct px_error *err,
			 const struct ec2_aws_error *aws, void *ctx)
{
	struct call *k = ctx;
	struct ec2w *w = k->w;
	struct rq_find f = {0};
	struct px_error e2 = {0};
	struct close_ctx cc;
	uint64_t max_ctrl = 0;
	enum px_err e = PX_OK;

	(void)aws;
	if (!w || rc == PX_ECANCELED) {
		ec2w_call_end(k);
		return;
	}
	w->describing = false;
	if (rc != PX_OK) {
		/* without the listing nothing can be adopted safely: try
		 * again at the next poll */
		log_warn("job %" PRId64 ": reconcile: DescribeInstances: %s",
			 w->s.job_id, err ? err->msg : "failed");
		ec2w_call_end(k);
		return;
	}
	for (size_t i = 0; i < l->n && e == PX_OK; i++) {
		const char *idt = ec2w_tag_of(&l->v[i], TAG_ID);
		uint64_t id = idt ? strtoull(idt, NULL, 10) : 0;

		if (!ec2w_alive(l->v[i].state))
			continue;
		if (!id) {
			ec2h_terminate(w->h, l->v[i].id, 0);
			continue;
		}
		if (ec2w_adopt(w, &l->v[i], id, &e2) != PX_OK)
			log_warn("job %" PRId64 ": %s", w->s.job_id, e2.msg);
	}
	cc = (struct close_ctx){ .w = w, .l = l, .last_s = w->s.t0_s };
	e = store_open_instances_each(w->h->wh->st, w->s.job_id, close_open,
				      &cc, &e2);
	if (e == PX_OK)
		e = store_ec2_requests_each(w->h->wh->st, w->s.job_id, true,
					    rq_close, w, &e2);
	if (e == PX_OK)
		e = store_ec2_requests_each(w->h->wh->st, w->s.job_id, false,
					    rq_each, &f, &e2);
	if (e == PX_OK)
		e = store_job_max_ctrl_id(w->h->wh->st, w->s.job_id, &max_ctrl,
					  &e2);
	if (e == PX_OK) {
		ctrl_ids_past(w->c, f.max_id > max_ctrl ? f.max_id : max_ctrl);
		e = ec2w_first_step(w, &e2);
	}
	if (e != PX_OK)
		snprintf(w->fatal, sizeof w->fatal, "resuming on EC2: %s",
			 e2.msg);
	ec2w_call_end(k);
}
