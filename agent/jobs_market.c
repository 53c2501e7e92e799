/* jobs_market.c -- the market of a job (docs/jobs.md): its trace, its
 * on-demand prices and, per-second, its Spot Instance Advisor snapshot,
 * read under a guard, and the plan checked against them. */
#include <stdio.h>
#include <string.h>

#include "../cloudapi/market_load.h"
#include "../trainer/compute/kern_cuda.h"
#include "jobs_int.h"
#include "server.h"

/* The files a submitter names (trace, prices, snapshot) are read with
 * the submitter's rights, regular files only, at most this big, within
 * this long. */
#define JOB_FILE_MAX_BYTES (UINT64_C(1) << 30)
#define JOB_LOAD_S PROTO_SUBMIT_LOAD_S    /* proto.h: the client waits */

/* The guard a job's files are read under (px.h): the submitter's rights
 * when a client's request is being served (else the daemon's), regular
 * files of at most JOB_FILE_MAX_BYTES, within JOB_LOAD_S from now. */
void job_guard(struct px_guard *g)
{
	if (!server_peer(g))
		*g = (struct px_guard){ .ngroups = -1 };
	g->max_bytes = JOB_FILE_MAX_BYTES;
	g->deadline_us = px_now_mono_us() + JOB_LOAD_S * UINT64_C(1000000);
}

/* The files a job's spec names are read with the submitter's rights (the
 * thread's guard, set by whoever loads the job); the daemon's own (its
 * configured or shipped trace, prices and snapshot) with its own rights,
 * still bounded and stopped with it: own is sub without the user.  Sets
 * the thread's guard for a file the spec names (yes) or not; nothing
 * without a guard (sub NULL). */
static void rights_for(const struct px_guard *sub, const struct px_guard *own,
		       bool named_by_spec)
{
	if (sub)
		px_guard_set(named_by_spec ? sub : own);
}

/* The markets of a job whose world has them from the provider (ec2):
 * the history of its spot types in its zones, up to now, sealed; the
 * job's window runs from now to the far future. */
static enum px_err job_provider_market(struct job *j, struct px_error *err)
{
	const struct jobspec *sp = &j->req.spec;
	const char *types[JOBSPEC_TYPES_MAX], *zones[JOBSPEC_ZONES_MAX];
	int64_t now = 0, last = 0;
	enum px_err e;

	for (size_t i = 0; i < sp->spot.n_types; i++)
		types[i] = sp->spot.types[i];
	for (size_t i = 0; i < sp->spot.n_zones; i++)
		zones[i] = sp->spot.zones[i];
	if (j->req.world.have_billing &&
	    j->req.world.billing != BILLING_PER_SECOND)
		return px_errorf(err, PX_EINVAL, "%s: world.billing: the %s "
				 "world is billed per second", j->src,
				 j->wops->name);
	e = j->wops->load_market(j->js->s.cfg, sp->region, types,
				 sp->spot.n_types, zones, sp->spot.n_zones,
				 &j->mk.ms, &now, &last, err);
	if (e == PX_OK)
		e = market_set_seal(&j->mk.ms, err);
	if (e != PX_OK)
		return e;
	if (!j->mk.ms.records)
		return px_errorf(err, PX_ENOENT, "%s: EC2 has no spot price of "
				 "the job's types in its zones in the last "
				 "days", j->src);
	j->mk.now_s = now;
	j->mk.ld.first_s = j->mk.ms.first_s;
	j->mk.ld.last_s = last;
	return PX_OK;
}

enum px_err job_load_market(struct job *j, struct px_error *err)
{
	const struct jobs_setup *s = &j->js->s;
	/* what the spec names: at submit the file itself (pinned), after
	 * a restart the daemon's copy of it (jobs_inputs.c) */
	char tbuf[JOB_PATH_MAX + 600], obuf[JOB_PATH_MAX + 600],
	     abuf[JOB_PATH_MAX + 600];
	const char *trace = j->req.world.trace[0] ?
			    job_file(j, JIN_TRACE, j->req.world.trace, tbuf,
				     sizeof tbuf) : s->trace;
	const char *od = j->req.world.ondemand[0] ?
			 job_file(j, JIN_ONDEMAND, j->req.world.ondemand, obuf,
				  sizeof obuf) : s->ondemand;
	const struct px_guard *sub = px_guard_get();
	struct px_guard own = { .ngroups = -1 };
	enum px_err e;

	if (sub) {
		own = *sub;
		own.as_user = false;
		own.parent = sub;       /* stopped when it is */
	}
	/* the GPU path needs a device here (the local world's nodes run on
	 * this host): refused now, not with every node failing at start.
	 * On this thread: the first check loads the CUDA library. */
	if (j->wops->on_this_host && !strcmp(j->req.trainer.device, "cuda")) {
		struct px_error why = {0};

		if (kern_cuda_check(&why) != PX_OK)
			return px_errorf(err, PX_EUNSUPP, "job '%s': "
					 "trainer.device: 'cuda', but this "
					 "host cannot run it: %s",
					 j->req.spec.name, why.msg);
	}
	market_set_init(&j->mk.ms);
	j->mk.ld = (struct market_load){ .region = j->req.spec.region,
				      .product = PRODUCT };
	rights_for(sub, &own, j->req.world.trace[0]);
	if (j->wops->load_market)
		e = job_provider_market(j, err);
	else
		e = market_load_files(&j->mk.ms, &trace, 1, &j->mk.ld, err);
	rights_for(sub, &own, j->req.world.ondemand[0]);
	if (e == PX_OK)
		e = ondemand_table_load(od, &j->mk.od, err);
	rights_for(sub, &own, true);
	if (e != PX_OK)
		return e;
	j->mk.start_s = j->req.world.start_s ? j->req.world.start_s :
		     j->mk.ld.first_s;
	if (j->req.world.start_s && (j->mk.start_s < j->mk.ld.first_s ||
				     j->mk.start_s >= j->mk.ld.last_s)) {
		char at[32], first[32], last[32];

		return px_errorf(err, PX_EINVAL, "%s: world.start: %s is "
				 "outside the trace %s (it covers %s to %s)",
				 j->src, px_format_time(j->mk.start_s, at,
							sizeof at), trace,
				 px_format_time(j->mk.ld.first_s, first,
						sizeof first),
				 px_format_time(j->mk.ld.last_s, last,
						sizeof last));
	}
	if (j->wops->load_market)      /* the market starts now */
		j->mk.start_s = j->mk.now_s;
	if (j->req.world.have_billing)
		j->mk.billing = j->req.world.billing;
	else
		j->mk.billing = j->mk.start_s >= BILLING_PER_SECOND_FROM_S ?
			     BILLING_PER_SECOND : BILLING_LEGACY_HOURLY;
	j->mk.speedup = j->req.world.speedup > 0 ? j->req.world.speedup :
		     (double)s->cfg->local_speedup;
	/* per-second hazards from a snapshot (as simulate), unless the job
	 * gives every rate itself: the job's, else the daemon's, else the
	 * shipped one of the start's month */
	if (j->mk.billing == BILLING_PER_SECOND && j->req.spec.rate_default < 0) {
		const char *p = j->req.spec.spot_advisor[0] ?
				job_file(j, JIN_ADVISOR,
					 j->req.spec.spot_advisor, abuf,
					 sizeof abuf) : j->mk.adv_cfg;

		rights_for(sub, &own, j->req.spec.spot_advisor[0]);
		if (p[0])
			snprintf(j->mk.adv_path, sizeof j->mk.adv_path, "%s", p);
		else
			e = advisor_shipped(j->mk.start_s, j->mk.adv_path,
					    sizeof j->mk.adv_path, err);
		if (e == PX_OK)
			e = advisor_load(p[0] ? p : j->mk.adv_path,
					 j->req.spec.region, &j->mk.adv, err);
		/* status names the file the spec named, not its copy */
		if (e == PX_OK && j->req.spec.spot_advisor[0])
			snprintf(j->mk.adv_path, sizeof j->mk.adv_path, "%s",
				 j->req.spec.spot_advisor);
		rights_for(sub, &own, true);
		if (e != PX_OK)
			return e;
		j->mk.have_adv = true;
	}
	{
		struct plan_setup su = {
			.ms = &j->mk.ms, .od = &j->mk.od, .job = &j->req.spec,
			.billing = j->mk.billing, .start_s = j->mk.start_s,
			.trace_first_s = j->mk.ld.first_s,
			.trace_last_s = j->mk.ld.last_s, .seed = (uint64_t)j->id,
			.advisor = j->mk.have_adv ? &j->mk.adv : NULL,
		};
		e = plan_new(&su, &j->mk.plan, err);
	}
	return e;
}

void job_market_init(struct job *j, const char *adv_cfg)
{
	market_set_init(&j->mk.ms);
	snprintf(j->mk.adv_cfg, sizeof j->mk.adv_cfg, "%s", adv_cfg);
}

struct market_set *job_market_lend(struct job *j)
{
	return &j->mk.ms;
}

void job_market_trim(struct job *j)
{
	plan_free(j->mk.plan);
	j->mk.plan = NULL;
	market_set_release(&j->mk.ms);
	market_set_init(&j->mk.ms);
	ondemand_table_release(&j->mk.od);
	memset(&j->mk.od, 0, sizeof j->mk.od);
	if (j->mk.have_adv)
		advisor_release(&j->mk.adv);
	j->mk.have_adv = false;
}
