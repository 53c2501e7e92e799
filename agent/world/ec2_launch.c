/* ec2_launch.c -- the ec2 world's acquire: the controller's request as one
 * RunInstances call (its ClientToken, tags and user data, recorded in the
 * store before it is sent), and what EC2's answer tells the controller.
 */
#include <inttypes.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/log.h"
#include "../../db/store.h"
#include "ec2_userdata.h"
#include "ec2_world_int.h"

#pragma GCC diagnostic ignored "-Wformat-truncation"

/* The ClientToken of the job's instance id: the same for every retry and
 * every life of the daemon, different for every daemon, job and id.
 * Hex of SHA-256(daemon id, job, id), 32 digits. */
static void client_token(const struct ec2w *w, uint64_t id, char *buf,
			 size_t len)
{
	static const char hex[] = "0123456789abcdef";
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdn = 0;
	char in[128];
	int n = snprintf(in, sizeof in, "proteus/%s/%" PRId64 "/%" PRIu64,
			 w->h->daemon_id, w->s.job_id, id);
	size_t k = 0;

	(void)EVP_Digest(in, (size_t)n, md, &mdn, EVP_sha256(), NULL);
	for (unsigned i = 0; i < 16 && k + 2 < len; i++) {
		buf[k++] = hex[md[i] >> 4];
		buf[k++] = hex[md[i] & 15];
	}
	buf[k] = 0;
}

static void node_free(struct world_node *nd)
{
	for (char **p = nd->argv; p && *p; p++)
		free(*p);
	free(nd->argv);
	for (char **p = nd->env; p && *p; p++)
		free(*p);
	free(nd->env);
	nd->argv = nd->env = NULL;
}

/* Refusals no retry fixes: the operator's configuration or account. */
static bool fatal_code(const char *code)
{
	static const char *const v[] = {
		"AuthFailure", "UnauthorizedOperation", "InvalidAMIID",
		"InvalidSubnetID", "InvalidGroup", "InvalidKeyPair",
		"InvalidParameterValue", "InvalidParameterCombination",
		"InvalidInstanceType", "Blocked", "OptInRequired",
		"PendingVerification", "InvalidClientTokenId",
		"SignatureDoesNotMatch", "MissingParameter", "InvalidIAM",
		"IdempotentParameterMismatch", NULL,
	};

	for (const char *const *p = v; *p; p++)
		if (!strncmp(code, *p, strlen(*p)))
			return true;
	return false;
}

/* Refusals about a market's (or the account's) room. */
static bool capacity_code(const char *code)
{
	return !strcmp(code, "InsufficientInstanceCapacity") ||
	       !strcmp(code, "SpotMaxPriceTooLow") ||
	       !strcmp(code, "MaxSpotInstanceCountExceeded") ||
	       !strcmp(code, "VcpuLimitExceeded") ||
	       !strcmp(code, "InstanceLimitExceeded") ||
	       !strcmp(code, "Unsupported") ||
	       !strcmp(code, "InsufficientCapacity");
}

static void cool(struct ec2w *w, int market, int64_t until,
		 const char *why)
{
	if (market < 0 || !w->cool_s)
		return;
	w->cool_s[market] = until;
	snprintf(w->cool_why[market], sizeof w->cool_why[market], "%s", why);
	/* and the policy chooses among the others meanwhile */
	(void)ctrl_market_rests(w->c, market, until);
}

/* Whether a refusal (code, aws) may hide a launch: 5xx and the network
 * after the client's retries (the call may have been carried out, its
 * answer lost); a listing that shows the instance says. */
static bool answer_lost(const char *code, const struct ec2_aws_error *aws)
{
	return !code[0] || !strncmp(code, "Internal", 8) ||
	       !strcmp(code, "ServiceUnavailable") ||
	       (aws && (aws->http_status == 0 || aws->http_status >= 500) &&
		!capacity_code(code));
}

static void run_done(enum px_err rc, struct ec2_instance_list *l,
		     const struct px_error *err,
		     const struct ec2_aws_error *aws, void *ctx)
{
	struct call *k = ctx;
	struct ec2w *w = k->w;
	struct inst *in = w ? ec2w_inst_of(w, k->id) : NULL;
	struct px_error e2 = {0};
	int64_t now;

	if (rc == PX_ECANCELED) {
		ec2w_call_end(k);
		return;
	}
	if (rc == PX_OK && l->n >= 1) {
		(void)store_ec2_request_set(k->h->wh->st, k->token, "launched",
					    l->v[0].id, px_now_wall_us(), &e2);
		/* a job that ended, or let it go while it was asked for:
		 * EC2 bills it all the same, to its terminate */
		if (!in || in->released) {
			if (in && in->bill_late)
				ec2w_bill_late_seen(w, in, &l->v[0]);
			for (size_t i = 0; i < l->n; i++)
				ec2h_terminate_let_go(k->h, l->v[i].id,
						      k->type, k->spot);
			if (in)
				ec2w_inst_close(w, in);
			ec2w_call_end(k);
			return;
		}
		now = ec2w_clock(w);
		snprintf(in->iid, sizeof in->iid, "%s", l->v[0].id);
		in->launch_s = l->v[0].launch_time_s > 0 ?
			       l->v[0].launch_time_s : now;
		if (in->launch_s < in->asked_s)
			in->launch_s = in->asked_s;
		if (in->launch_s > now)
			in->launch_s = now;
		in->st = I_PENDING;
		for (size_t i = 1; i < l->n; i++)  /* never asked for */
			ec2h_terminate(k->h, l->v[i].id, 0);
		ec2w_tell(w, in, T_LAUNCHED);
		if (in->ready) {
			/* its node joined before the answer came */
			in->st = I_RUNNING;
			in->running_s = now;
			ec2w_tell(w, in, T_READY);
		}
		ec2w_call_end(k);
		return;
	}
	(void)store_ec2_request_set(k->h->wh->st, k->token, "rejected", NULL,
				    px_now_wall_us(), &e2);
	if (in && !in->released) {
		const char *code = aws && aws->code[0] ? aws->code : "";

		now = ec2w_clock(w);
		snprintf(in->why, sizeof in->why, "%s%s%s", code,
			 code[0] ? ": " : "", err ? err->msg : "failed");
		if (code[0] && fatal_code(code)) {
			snprintf(w->fatal, sizeof w->fatal, "EC2 refused to "
				 "launch %s: %s (check proteusd's ec2_* "
				 "settings and credentials)", in->type_name,
				 in->why);
		} else if (aws && ec2_retry_is_throttle(aws->code)) {
			w->h->throttled_until = now + THROTTLE_COOL_S;
		} else if (capacity_code(code)) {
			/* no room in this market: it rests, and the
			 * policy chooses among the others meanwhile */
			cool(w, in->market, now + COOL_S, in->why);
		}
		/* 5xx and the network after the client's retries: refused
		 * this time; the next decision asks again.  The call may
		 * have been carried out (its answer lost): a listing that
		 * shows the instance adopts it then */
		in->lost_answer = answer_lost(code, aws);
		in->refused_us = px_now_mono_us();
		in->st = I_DONE;
		ec2w_tell(w, in, T_REJECTED);
	} else if (in) {
		/* let go while asked, and refused: never launched, unless
		 * the answer may be lost (the next listing says) */
		in->lost_answer = answer_lost(aws && aws->code[0] ? aws->code :
					      "", aws);
		in->refused_us = px_now_mono_us();
		if (in->bill_late && !in->lost_answer)
			ec2w_bill_late(w, in, -1);
		ec2w_inst_close(w, in);
	}
	ec2w_call_end(k);
}

/* The user data of instance in (ec2_userdata.h): the node's command as
 * a script.  Nothing from which the job key can be drawn: the node
 * enrolls (ec2w_enroll_env: the job's public key and a single-use
 * ticket); the job key, or a file of it, in the owner's env is refused.
 * Into buf (EC2W_USERDATA_MAX bytes), *ret_n its length. */
static enum px_err user_data(const struct ec2w *w, const struct inst *in,
			     const struct world_node *nd,
			     const struct world_place *pl, char *buf,
			     size_t *ret_n, struct px_error *err)
{
	const struct proteusd_config *cfg = w->h->wh->cfg;
	char *enroll[ENROLL_ENV_MAX + 1];
	struct ec2w_userdata u = {
		.daemon_id = w->h->daemon_id,
		.job_id = w->s.job_id,
		.id = in->id,
		.type_name = in->type_name,
		.zone = in->zone,
		.node = nd,
		.place = pl,
		.enroll = enroll,
		.rebalance_leave = w->s.rebalance_leave,
		.clock_speedup = ec2h_clock_speedup(cfg),
		.clock_origin = cfg->ec2_clock_origin,
	};
	/* the node's environment is checked before the enrollment is
	 * drawn (the order of the refusals) */
	enum px_err rc = ec2w_userdata_check(nd, err);

	if (rc != PX_OK)
		return rc;
	rc = ec2w_enroll_env(w, in, enroll, err);
	if (rc == PX_OK)
		rc = ec2w_userdata(&u, buf, EC2W_USERDATA_MAX, ret_n, err);
	ec2w_enroll_env_free(enroll);
	return rc;
}

enum px_err ec2w_acquire(void *vw, const struct world_req *q,
			 struct px_error *err)
{
	struct ec2w *w = vw;
	const struct proteusd_config *cfg = w->h->wh->cfg;
	int64_t now = ec2w_clock(w);
	struct world_node nd = {0};
	struct world_place pl = {0};
	struct store_ec2_request sr = {0};
	struct ec2_tag tags[5];
	struct ec2_run_req rr = {0};
	const char *sgs[CONFIG_EC2_SGS_MAX];
	const char *subnet = NULL, *zone = q->zone;
	char idbuf[24], jobbuf[24], slotbuf[16];
	char *ud = NULL;
	size_t ud_n = 0;
	struct inst *in;
	struct call *k;
	enum px_err e;

	if (!(in = ec2w_inst_add(w, q->id, err)))
		return err->code;
	in->market = q->market;
	in->type = q->type;
	in->reliable = q->reliable;
	in->bid_uusd = q->bid_uusd;
	in->asked_s = now;
	snprintf(in->type_name, sizeof in->type_name, "%s", q->type_name);
	snprintf(in->zone, sizeof in->zone, "%s", q->zone ? q->zone : "");
	if (w->fatal[0]) {
		snprintf(in->why, sizeof in->why, "%s", w->fatal);
		in->st = I_DONE;
		ec2w_tell(w, in, T_REJECTED);
		return PX_OK;
	}
	/* a market resting after a refusal is not asked again yet */
	if (now < w->h->throttled_until ||
	    (q->market >= 0 && now < w->cool_s[q->market])) {
		snprintf(in->why, sizeof in->why, "resting after: %s",
			 now < w->h->throttled_until ? "throttling" :
			 w->cool_why[q->market]);
		in->st = I_DONE;
		ec2w_tell(w, in, T_REJECTED);
		return PX_OK;
	}
	/* on-demand: the first subnet's zone */
	for (int i = 0; i < cfg->ec2_subnet_count; i++)
		if (!zone || !strcmp(cfg->ec2_subnet[i].zone, zone)) {
			subnet = cfg->ec2_subnet[i].subnet;
			zone = cfg->ec2_subnet[i].zone;
			break;
		}
	if (!subnet) {
		snprintf(in->why, sizeof in->why, "no subnet for zone %s in "
			 "ec2_subnets", zone ? zone : "?");
		in->st = I_DONE;
		ec2w_tell(w, in, T_REJECTED);
		return PX_OK;
	}
	in->slot = ec2h_slot_take(w->h, w->node_slots, -1);
	if (in->slot < 0) {
		snprintf(in->why, sizeof in->why, "no free port range left in "
			 "trainer_ports");
		in->st = I_DONE;
		ec2w_tell(w, in, T_REJECTED);
		return PX_OK;
	}
	snprintf(pl.coord, sizeof pl.coord, "tcp://%s:%d", cfg->head_address,
		 ec2h_slot_port(w->h, w->coord_slot));
	snprintf(pl.listen, sizeof pl.listen, "tcp://" EC2W_LISTEN_HOST ":%d",
		 ec2h_slot_port(w->h, in->slot));
	pl.remote = true;
	e = w->s.hooks.command(w->s.hooks.ctx, q, &pl, &nd, err);
	if (e == PX_OK) {
		ud = malloc(EC2W_USERDATA_MAX);
		e = ud ? user_data(w, in, &nd, &pl, ud, &ud_n, err)
		       : px_errorf(err, PX_ENOMEM, "out of memory");
	}
	node_free(&nd);
	if (e != PX_OK) {
		free(ud);
		ec2h_slot_give(w->h, in->slot, w->node_slots);
		w->n--;
		return e;
	}
	client_token(w, q->id, in->token, sizeof in->token);
	/* recorded before it is sent: a restart finds it by its token or
	 * its tags, and never sends it twice */
	snprintf(sr.client_token, sizeof sr.client_token, "%s", in->token);
	sr.job_id = w->s.job_id;
	sr.ctrl_id = q->id;
	snprintf(sr.zone, sizeof sr.zone, "%s", q->zone ? q->zone : "");
	snprintf(sr.type, sizeof sr.type, "%s", q->type_name);
	sr.reliable = q->reliable;
	sr.bid_uusd = q->bid_uusd;
	sr.created_us = px_now_wall_us();
	e = store_ec2_request_add(w->h->wh->st, &sr, err);
	if (e != PX_OK) {
		free(ud);
		ec2h_slot_give(w->h, in->slot, w->node_slots);
		w->n--;
		return e;
	}
	snprintf(idbuf, sizeof idbuf, "%" PRIu64, q->id);
	snprintf(jobbuf, sizeof jobbuf, "%" PRId64, w->s.job_id);
	snprintf(slotbuf, sizeof slotbuf, "%d", in->slot);
	memset(tags, 0, sizeof tags);
	snprintf(tags[0].key, sizeof tags[0].key, TAG_DAEMON);
	snprintf(tags[0].value, sizeof tags[0].value, "%s", w->h->daemon_id);
	snprintf(tags[1].key, sizeof tags[1].key, TAG_JOB);
	snprintf(tags[1].value, sizeof tags[1].value, "%s", jobbuf);
	snprintf(tags[2].key, sizeof tags[2].key, TAG_ID);
	snprintf(tags[2].value, sizeof tags[2].value, "%s", idbuf);
	snprintf(tags[3].key, sizeof tags[3].key, TAG_SLOT);
	snprintf(tags[3].value, sizeof tags[3].value, "%s", slotbuf);
	snprintf(tags[4].key, sizeof tags[4].key, "Name");
	snprintf(tags[4].value, sizeof tags[4].value, "proteus job %s #%s",
		 jobbuf, idbuf);
	for (int i = 0; i < cfg->ec2_sg_count; i++)
		sgs[i] = cfg->ec2_sg[i];
	rr.spec.image_id = cfg->ec2_ami;
	rr.spec.instance_type = q->type_name;
	rr.spec.zone = zone;
	rr.spec.subnet_id = subnet;
	rr.spec.key_name = cfg->ec2_key_name[0] ? cfg->ec2_key_name : NULL;
	rr.spec.iam_profile_name = cfg->ec2_instance_profile[0] ?
				   cfg->ec2_instance_profile : NULL;
	rr.spec.security_group_ids = sgs;
	rr.spec.n_security_groups = (size_t)cfg->ec2_sg_count;
	rr.spec.user_data = ud;
	rr.spec.user_data_len = ud_n;
	rr.min_count = rr.max_count = 1;
	rr.spot = q->market >= 0;
	rr.max_price_uusd = rr.spot ? q->bid_uusd : 0;
	rr.client_token = in->token;
	rr.tags = tags;
	rr.n_tags = 5;
	k = ec2w_call_new(w, 0, q->id);
	if (!k) {
		free(ud);
		return px_errorf(err, PX_ENOMEM, "out of memory");
	}
	snprintf(k->token, sizeof k->token, "%s", in->token);
	snprintf(k->type, sizeof k->type, "%s", q->type_name);
	k->spot = q->market >= 0;
	e = ec2_run_instances_start(w->h->c, &rr, run_done, k, err);
	free(ud);
	if (e != PX_OK) {
		ec2w_call_end(k);
		snprintf(in->why, sizeof in->why, "%s", err->msg);
		in->st = I_DONE;
		ec2w_tell(w, in, T_REJECTED);
		return PX_OK;
	}
	in->st = I_ASKED;
	return PX_OK;
}
