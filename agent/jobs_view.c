/* jobs_view.c -- what status, jobs and events answer (docs/proteusd.md):
 * a job this daemon runs, live; another, from the store alone. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/jsonout.h"
#include "jobs_int.h"
#include "notify.h"
#include "prom.h"

/* {"tier": .., "type": .., "zone": .., "count": n} per group. */
static json_t *fleet_json(struct job *j)
{
	const struct pol_fleet *f = j->run.c ? ctrl_fleet(j->run.c) : NULL;
	const struct pol_env *env = j->mk.plan ? plan_env(j->mk.plan) : NULL;
	json_t *a = json_array();

	for (size_t i = 0; a && f && env && i < f->n; i++) {
		const struct pol_instance *in = &f->v[i];
		const char *type = env->types[in->type].name;
		const char *zone = in->market >= 0 ?
				   env->markets[in->market].zone : NULL;
		const char *tier = in->reliable ? "reliable" : "transient";
		json_t *g = NULL, *x;
		size_t k;

		json_array_foreach(a, k, x) {
			json_t *z = json_object_get(x, "zone");

			if (!strcmp(json_string_value(json_object_get(x,
				    "tier")), tier) &&
			    !strcmp(json_string_value(json_object_get(x,
				    "type")), type) &&
			    (zone ? json_is_string(z) &&
			     !strcmp(json_string_value(z), zone) :
			     json_is_null(z))) {
				g = x;
				break;
			}
		}
		if (g) {
			json_object_set_new(g, "count", json_integer(
				json_integer_value(json_object_get(g,
					"count")) + 1));
			continue;
		}
		json_array_append_new(a, json_pack("{s:s, s:s, s:o, s:i}",
			"tier", tier, "type", type, "zone",
			zone ? json_string(zone) : json_null(), "count", 1));
	}
	return a;
}

static double usd(int64_t uusd)
{
	return uusd < 0 ? 0 : px_usd(uusd);
}

static json_t *num_or_null(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

/* A dollar figure for JSON: to the micro-dollar, so that it prints as
 * that decimal (jsonout.h), never negative; null when not known. */
static json_t *money(double v)
{
	return isfinite(v) ? json_real(v > 0 ? px_usd_round(v) : 0.0) :
			     json_null();
}

/* The last event of a kind of a job (events are at most 1023 bytes). */
struct last_ev {
	bool found;
	int64_t at_us;
	char detail[1024];
};

static enum px_err take_last(const struct store_event *ev, void *ctx)
{
	struct last_ev *l = ctx;

	l->found = true;
	l->at_us = ev->at_us;
	snprintf(l->detail, sizeof l->detail, "%.*s", (int)ev->detail_len,
		 ev->detail);
	return PX_OK;
}

static bool last_event(struct store *st, int64_t id, const char *kind,
		       struct last_ev *l)
{
	struct px_error err = {0};

	memset(l, 0, sizeof *l);
	return store_event_last(st, id, kind, take_last, l, &err) == PX_OK &&
	       l->found;
}

/* Why a failed job failed: this daemon's reason, else the store's (the
 * last "error" event: job_end writes the reason as one).  Sets o's
 * "error"; nothing for a job that did not fail. */
static void set_error(json_t *o, struct store *st, int64_t id,
		      enum store_job_state state, const char *why)
{
	struct last_ev l;

	if (state != STORE_JOB_FAILED)
		return;
	if (why && *why)
		json_object_set_new(o, "error", json_string(why));
	else if (last_event(st, id, "error", &l))
		json_object_set_new(o, "error", json_string(l.detail));
	else
		json_object_set_new(o, "error", json_string("not recorded"));
}

/* The enrollments of a job whose world has them (its enrollments hook:
 * ec2): nodes that got the key over the network (in every life: the
 * store's events) and refusals (this life's count, else the ones
 * stored).  Nothing for the other worlds. */
static bool enrollments(struct store *st, int64_t id, const char *world,
			const struct job *j, int64_t *ok, int64_t *refused)
{
	const struct world_ops *o = world_ops_by_name(world);
	struct px_error err = {0};
	int64_t ok_now = 0;

	*ok = *refused = 0;
	if (!o || !o->enrollments)
		return false;
	(void)store_event_count(st, id, "enrolled", ok, &err);
	(void)store_event_count(st, id, "enroll_refused", refused, &err);
	if (j && j->run.w && j->wops->enrollments)
		j->wops->enrollments(j->run.w, &ok_now, refused);
	return true;
}

static void set_enrollments(json_t *o, struct store *st, int64_t id,
			    const char *world, const struct job *j)
{
	int64_t ok, refused;

	if (!enrollments(st, id, world, j, &ok, &refused))
		return;
	json_object_set_new(o, "enrolled", json_integer(ok));
	json_object_set_new(o, "enroll_refused", json_integer(refused));
}

/* The workers the trainer's last PROGRESS counts slow (below 2/3 of the
 * median speed; docs/trainer.md, "Stragglers"): node and minibatches/s. */
static json_t *slow_workers(const struct job *j)
{
	json_t *a = json_array();

	for (int i = 0; a && i < j->pg.n_slow; i++)
		json_array_append_new(a, json_pack("{s:I, s:f}", "node",
			(json_int_t)j->pg.slow[i].node, "speed",
			(double)j->pg.slow[i].speed));
	return a ? a : json_null();
}

/* A resumed job not tested in this life yet: the figures of its last
 * test in an earlier one (an mf job's is its RMSE, a loss alone). */
static bool tested_before(const struct job *j)
{
	return !isfinite(j->pg.acc) && !isfinite(j->pg.loss) && j->pg.have_test_before;
}

/* A figure in [lo, hi]: NaN (nothing known) is lo. */
static double clamp(double v, double lo, double hi)
{
	return !(v > lo) ? lo : v < hi ? v : hi;
}

/* Where a job stands against its finish_by_hours. */
struct dl_in {
	const struct jobspec *sp;
	const struct jobspec_profile *prof; /* the policy's scaling (NULL:
					     * the spec's) */
	double hours;            /* finish_by_hours as submitted */
	int64_t start;           /* market time it counts from */
	bool started;            /* start is the first start, not the one
				  * the job would have now */
	int64_t now;             /* market time of the figures */
	double frac;             /* of the work done */
	enum store_job_state state;
};

/* What finish_by_hours asks, where the job stands against it
 * (docs/proteusctl.md, "status"): the deadline's world time, the hours
 * left and the hours on demand needs for the work left (`instances` of
 * reference_type at the scaling the policy uses), the share of the work
 * Uniform Progress's line t C / D asks for by now and the share done;
 * its state.  On the world's clock (market time, status's market_time);
 * an ended job's as of its end.  No figure NaN, infinite or out of its
 * range. */
static json_t *deadline_make(const struct dl_in *in)
{
	const struct jobspec *sp = in->sp;
	double d = in->hours, ovh, rate, need, left, line, done;
	int64_t goal = in->start + llround(d * 3600);
	bool live = in->state == STORE_JOB_QUEUED ||
		    in->state == STORE_JOB_RUNNING;
	const char *state;
	char at[32];

	rate = jobspec_rate(sp, in->prof, sp->instances, sp->instances *
			    jobspec_speed(sp, sp->reference_type));
	done = in->state == STORE_JOB_DONE ? 1 : clamp(in->frac, 0, 1);
	need = done >= 1 ? 0 : rate > 0 ? (1 - done) * sp->work_hours / rate :
	       INFINITY;
	left = clamp((double)(goal - in->now) / 3600, 0, d);
	line = clamp((double)(in->now - in->start) / 3600 / d, 0, 1);
	/* a change of fleet costs the new one's boot and the group's
	 * re-forming (pol_uniform.c's d); two of them, as its safety net */
	ovh = 2 * (sp->startup_seconds + sp->restart_seconds) / 3600;
	if (!live)
		state = in->state == STORE_JOB_DONE && in->now <= goal ?
			"met" : "missed";
	else if (left < need)
		state = "cannot-meet";
	else if (left < need + ovh)
		state = "must-go-on-demand";
	else
		state = done >= line ? "ahead" : "behind";
	return json_pack("{s:f, s:s, s:I, s:b, s:f, s:o, s:f, s:f, s:f, s:s}",
			 "finish_by_hours", d, "finish_by",
			 px_format_time(goal, at, sizeof at), "finish_by_s",
			 (json_int_t)goal, "started", in->started,
			 "hours_left", left, "ondemand_hours_needed",
			 isfinite(need) ? json_real(need) : json_null(),
			 "line", line, "progress", done, "ahead", done - line,
			 "state", state);
}

/* A job this daemon holds: from its first start, in every life (not
 * started yet: from the start it would have now); NULL without
 * finish_by_hours. */
static json_t *deadline_json(const struct job *j)
{
	double d = job_finish_by_hours(j);
	struct dl_in in = {
		.sp = &j->req.spec, .prof = j->pg.scaling.profile,
		.hours = d, .start = job_finish_by_s(j) - llround(d * 3600),
		.started = j->run.first_s != 0,
		.now = j->run.t ? j->run.t : j->mk.start_s,
		.frac = j->pg.frac, .state = j->run.state,
	};

	return d > 0 ? deadline_make(&in) : NULL;
}

/* The earliest "start" event's market_start (events come by at_us):
 * the walk stops there (PX_ECANCELED). */
static enum px_err first_start(const struct store_event *ev, void *ctx)
{
	json_t *p, *v;

	if (strcmp(ev->kind, "start"))
		return PX_OK;
	p = json_loadb(ev->detail, ev->detail_len, 0, NULL);
	v = json_is_object(p) ? json_object_get(p, "market_start") : NULL;
	*(int64_t *)ctx = json_is_integer(v) ? (int64_t)json_integer_value(v) :
			  ev->at_us / 1000000;
	json_decref(p);
	return PX_ECANCELED;
}

/* A job of the store alone (it ended in an earlier life): its spec's
 * finish_by_hours from its first start to its last progress; nothing
 * for a job without one, or that never started (simulate's). */
static void stored_deadline(struct jobs *js, int64_t id, const char *spec,
			    enum store_job_state state, json_t *o)
{
	struct job_request *q = calloc(1, sizeof *q);
	struct px_error err = {0};
	struct last_ev l;
	struct dl_in in = { .state = state, .started = true };
	json_t *dl = NULL;

	if (q && spec && jobreq_parse(spec, strlen(spec), "the stored job", q,
				      &err) == PX_OK &&
	    q->spec.finish_by_hours > 0 &&
	    store_events_each(js->s.st, id, first_start, &in.start, &err) ==
	    PX_ECANCELED && in.start > 0) {
		in.sp = &q->spec;
		in.hours = q->spec.finish_by_hours;
		in.now = last_event(js->s.st, id, "progress", &l) ?
			 l.at_us / 1000000 : in.start;
		in.frac = json_number_value(json_object_get(o, "work_done"));
		dl = deadline_make(&in);
	}
	if (dl)
		json_object_set_new(o, "deadline", dl);
	free(q);
}

static json_t *status_live(struct job *j)
{
	int64_t cost = job_cost_uusd(j);
	double od = usd(job_ref_od_uusd(j));
	double proj = j->pg.frac > 0.02 ? usd(cost) / j->pg.frac : NAN;
	/* a resumed job: the last figures until the trainer tests again */
	bool before = tested_before(j);
	json_t *o;

	if (j->run.state == STORE_JOB_DONE)
		proj = usd(cost);
	o = json_pack("{s:I, s:s, s:s, s:s, s:i, s:I, s:I, s:o, s:o, s:f, "
		      "s:o, s:o, s:o, s:I, s:I, s:I, s:i, s:i, s:f, s:s}",
		      "job", (json_int_t)j->id, "name", j->req.spec.name,
		      "state", store_job_state_name(j->run.state),
		      "world", j->req.world.name,
		      "stage", j->run.c ? ctrl_stage(j->run.c) : j->run.final_stage,
		      "clock", (json_int_t)j->pg.clock,
		      "clocks_total", (json_int_t)job_clocks_total(j),
		      "test_accuracy", num_or_null(before ? j->pg.acc_before :
						   j->pg.acc),
		      "test_loss", num_or_null(before ? j->pg.loss_before :
					       j->pg.loss),
		      "work_done", j->pg.frac,
		      "fleet", fleet_json(j),
		      "cost_usd", money(usd(cost)),
		      "projected_cost_usd", money(proj),
		      "evictions", (json_int_t)job_evictions(j),
		      "joins", (json_int_t)j->pg.joins,
		      "losses", (json_int_t)j->pg.losses,
		      "workers", j->pg.workers, "ps", j->pg.ps,
		      "samples_per_s", isfinite(j->pg.sps) && j->pg.sps > 0 ?
				       j->pg.sps : 0.0,
		      "policy", j->req.policy);
	if (!o)
		return NULL;
	json_object_set_new(o, "ondemand_cost_usd",
			    money(od * j->pg.frac * j->req.spec.work_hours));
	json_object_set_new(o, "fleet_ondemand_usd",
			    money(job_od_fleet_usd(j, j->run.t ? j->run.t :
						   j->mk.start_s)));
	json_object_set_new(o, "trainer_stage", j->pg.stage ?
			    json_integer(j->pg.stage) : json_null());
	json_object_set_new(o, "market_time", json_integer(j->run.t ? j->run.t :
							  j->mk.start_s));
	json_object_set_new(o, "restarts", json_integer(j->pg.restarts));
	json_object_set_new(o, "slow_workers", slow_workers(j));
	json_object_set_new(o, "worker_speed_median", j->pg.speed_median > 0 ?
			    json_real(j->pg.speed_median) : json_null());
	/* the trainer's goodput, and the scaling measured from it
	 * (docs/controller.md, "Measured scaling") */
	json_object_set_new(o, "goodput", json_pack(
		"{s:f, s:f, s:f, s:i, s:f, s:o*}", "samples_per_s",
		j->pg.goodput, "efficiency", j->pg.efficiency, "noise_scale",
		j->pg.noise_scale, "batch", (int)j->pg.gp_batch, "lr_scale",
		j->pg.lr_scale, "scaling", job_scaling_json(j)));
	json_object_set_new(o, "billing",
			    json_string(billing_model_name(j->mk.billing)));
	/* ended, and every bill where the provider's ended (ec2: a few
	 * seconds after the job, docs/ec2-world.md) */
	json_object_set_new(o, "bills_final", json_boolean(
		j->run.state != STORE_JOB_QUEUED && j->run.state != STORE_JOB_RUNNING &&
		!j->run.closing_us));
	json_object_set_new(o, "spot_advisor", j->mk.adv_path[0] ?
			    json_string(j->mk.adv_path) : json_null());
	json_object_set_new(o, "workload", json_string(j->wlops ?
			    j->wlops->name : workload_trainer.name));
	if (j->wlops && j->wlops->view && j->wl) {
		json_t *v = j->wlops->view(j);

		if (v)
			json_object_set_new(o, j->wlops->name, v);
	}
	set_enrollments(o, j->js->s.st, j->id, j->req.world.name, j);
	set_error(o, j->js->s.st, j->id, j->run.state, j->run.why);
	/* its share of the pool and its rho (docs/pool.md) while it is
	 * queued or runs; done, its realized rho */
	{
		json_t *pl = job_pool_json(j);

		if (pl)
			json_object_set_new(o, "pool", pl);
	}
	{
		json_t *dl = deadline_json(j);

		if (dl)
			json_object_set_new(o, "deadline", dl);
	}
	return o;
}

/* A job this daemon has not run (it ended before this daemon started):
 * what the store says, which holds every life of the job. */
struct stored {
	json_t *o;
	char *spec;              /* as submitted */
	enum store_job_state state;
	char world[STORE_WORLD_MAX];
};

static enum px_err stored_job(const struct store_job *sj, void *ctx)
{
	struct stored *s = ctx;

	s->state = sj->state;
	snprintf(s->world, sizeof s->world, "%s", sj->world);
	s->o = json_pack("{s:I, s:s, s:s, s:s}", "job", (json_int_t)sj->id,
			 "name", sj->name, "state",
			 store_job_state_name(sj->state), "world",
			 sj->world);
	free(s->spec);
	s->spec = strndup(sj->spec_json, sj->spec_len);
	return s->o && s->spec ? PX_OK : PX_ENOMEM;
}

/* A member of JSON text o (a stored event's detail), or NULL. */
static json_t *detail_get(json_t *o, const char *k)
{
	return json_is_object(o) ? json_object_get(o, k) : NULL;
}

/* o (job, name, state, world) with the job's figures from the store
 * alone: the cost is the ledger's sum; evictions, the eviction events;
 * the run's figures, its last progress event (the whole job's since they
 * carry the earlier lives'); policy and billing, its last start (else the
 * parameters of a `simulate --db` run, else its spec); the on-demand
 * estimate, from its spec; why it failed, its last "error" event. */
static enum px_err stored_books(struct jobs *js, int64_t id,
				const struct stored *s, struct px_error *err)
{
	struct store *st = js->s.st;
	struct job_request *q = calloc(1, sizeof *q);
	struct px_error perr = {0};
	struct last_ev l;
	int64_t cost = 0, evictions = 0, starts = 0, at_s = 0;
	json_t *o = s->o, *p = NULL, *start = NULL, *v;
	double frac = 0, proj = NAN;
	bool have_q;
	const char *k;
	enum px_err e;

	if (!q)
		return px_errorf(err, PX_ENOMEM, "out of memory");
	e = store_job_cost(st, id, &cost, err);
	if (e == PX_OK)
		e = store_event_count(st, id, "eviction", &evictions, err);
	if (e == PX_OK)
		e = store_event_count(st, id, "start", &starts, err);
	if (e != PX_OK) {
		free(q);
		return e;
	}
	have_q = s->spec && jobreq_parse(s->spec, strlen(s->spec),
					 "the stored job", q, &perr) == PX_OK;
	if (last_event(st, id, "progress", &l)) {
		p = json_loads(l.detail, 0, NULL);
		at_s = l.at_us / 1000000;
	}
	/* a daemon's start, else `simulate --db`'s parameters: both name
	 * the policy and the billing */
	if (last_event(st, id, "start", &l) ||
	    last_event(st, id, "simulate", &l)) {
		start = json_loads(l.detail, 0, NULL);
		if (!at_s)
			at_s = l.at_us / 1000000;
	}
	json_object_set_new(o, "stage", json_integer(0));
	json_object_set_new(o, "clock", json_integer(0));
	json_object_set_new(o, "clocks_total", json_integer(0));
	json_object_set_new(o, "test_accuracy", json_null());
	json_object_set_new(o, "test_loss", json_null());
	json_object_set_new(o, "work_done", json_real(0));
	json_object_set_new(o, "fleet", json_array());
	json_object_set_new(o, "workers", json_integer(0));
	json_object_set_new(o, "ps", json_integer(0));
	json_object_set_new(o, "joins", json_integer(0));
	json_object_set_new(o, "losses", json_integer(0));
	json_object_set_new(o, "fleet_ondemand_usd", json_real(0));
	/* the figures of its last progress event, checked */
	if (json_is_object(p))
		json_object_foreach(p, k, v) {
			json_t *had = json_object_get(o, k);

			if (!had || !strcmp(k, "fleet") ||
			    (json_is_number(had) && !json_is_number(v)) ||
			    (json_is_number(v) && json_number_value(v) < 0))
				continue;
			json_object_set_new(o, k, json_is_integer(had) &&
					    json_is_real(v) ? json_integer(
					    (json_int_t)json_real_value(v)) :
					    json_incref(v));
		}
	/* never "clock 12 of 10": a total is at least the clock reached */
	if (json_integer_value(json_object_get(o, "clocks_total")) <
	    json_integer_value(json_object_get(o, "clock")))
		json_object_set(o, "clocks_total", json_object_get(o,
								   "clock"));
	frac = json_number_value(json_object_get(o, "work_done"));
	if (s->state == STORE_JOB_DONE)
		proj = usd(cost);
	else if (frac > 0.02)
		proj = usd(cost) / frac;
	json_object_set_new(o, "cost_usd", money(usd(cost)));
	json_object_set_new(o, "projected_cost_usd", money(proj));
	json_object_set_new(o, "evictions", json_integer(evictions));
	json_object_set_new(o, "samples_per_s", json_real(0));
	json_object_set_new(o, "fleet_ondemand_usd", money(json_number_value(
		json_object_get(o, "fleet_ondemand_usd"))));
	v = detail_get(start, "policy");
	json_object_set_new(o, "policy", json_is_string(v) ? json_copy(v) :
			    have_q ? json_string(q->policy) : json_null());
	v = detail_get(start, "billing");
	json_object_set_new(o, "billing", json_is_string(v) ? json_copy(v) :
			    have_q && q->world.have_billing ? json_string(
			    billing_model_name(q->world.billing)) :
			    json_null());
	/* an earlier daemon's: as final as they will be */
	json_object_set_new(o, "bills_final", json_boolean(
		s->state != STORE_JOB_QUEUED && s->state != STORE_JOB_RUNNING));
	{
		int64_t od = have_q ? jobs_req_ref_od_uusd(js, q) : 0;

		json_object_set_new(o, "ondemand_cost_usd", od > 0 ?
				    money(usd(od) * frac *
					  q->spec.work_hours) : json_null());
	}
	json_object_set_new(o, "trainer_stage", json_null());
	json_object_set_new(o, "market_time", at_s ? json_integer(at_s) :
			    json_null());
	json_object_set_new(o, "restarts", json_integer(starts > 1 ?
							 starts - 1 : 0));
	json_object_set_new(o, "spot_advisor", have_q &&
			    q->spec.spot_advisor[0] ?
			    json_string(q->spec.spot_advisor) : json_null());
	set_enrollments(o, st, id, s->world, NULL);
	set_error(o, st, id, s->state, NULL);
	json_decref(p);
	json_decref(start);
	free(q);
	return PX_OK;
}

static json_t *status_stored(struct jobs *js, int64_t id,
			     struct px_error *err)
{
	struct store_job_filter f = { .id = id };
	struct stored s = {0};

	if (store_jobs_each(js->s.st, &f, stored_job, &s, err) != PX_OK) {
		json_decref(s.o);
		free(s.spec);
		return NULL;
	}
	if (!s.o) {
		free(s.spec);
		return jobs_reply_err(err, PX_ENOENT, "no job %" PRId64, id);
	}
	if (stored_books(js, id, &s, err) != PX_OK) {
		json_decref(s.o);
		s.o = NULL;
	} else {
		stored_deadline(js, id, s.spec, s.state, s.o);
	}
	free(s.spec);
	return s.o;
}


int64_t jobs_clocks_total(struct jobs *js, int64_t id)
{
	struct job *j = job_find(js, id);
	int64_t total = 0, clock = 0;
	struct last_ev l;
	json_t *p;

	if (j)
		return job_clocks_total(j);
	if (!last_event(js->s.st, id, "progress", &l))
		return 0;
	p = json_loads(l.detail, 0, NULL);
	if (json_is_integer(detail_get(p, "clocks_total")))
		total = json_integer_value(detail_get(p, "clocks_total"));
	if (json_is_integer(detail_get(p, "clock")))
		clock = json_integer_value(detail_get(p, "clock"));
	json_decref(p);
	return total > clock ? total : clock;
}

json_t *jobs_cmd_status(struct jobs *js, json_t *req, struct px_error *err)
{
	struct job *j;
	int64_t id;

	if (!jobs_req_job(js, req, &id, &j, err))
		return NULL;
	return j ? status_live(j) : status_stored(js, id, err);
}

struct list {
	struct jobs *js;
	json_t *a;
	struct px_error *err;
};

/* A row of `jobs`: its cost, accuracy and work in every life; a job this
 * daemon runs, live, else the ledger and its last progress event. */
static enum px_err list_job(const struct store_job *sj, void *ctx)
{
	struct list *ls = ctx;
	struct job *j = job_find(ls->js, sj->id);
	int64_t cost = 0;
	double acc = NAN, frac = 0;
	struct last_ev l;
	enum px_err e;
	json_t *x;

	if (j) {
		bool before = tested_before(j);

		cost = job_cost_uusd(j);
		acc = before ? j->pg.acc_before : j->pg.acc;
		frac = j->pg.frac;
	} else {
		e = store_job_cost(ls->js->s.st, sj->id, &cost, ls->err);
		if (e != PX_OK)
			return e;
		if (last_event(ls->js->s.st, sj->id, "progress", &l)) {
			json_t *p = json_loads(l.detail, 0, NULL);

			acc = json_number_value(detail_get(p,
							   "test_accuracy"));
			if (!json_is_number(detail_get(p, "test_accuracy")))
				acc = NAN;
			frac = json_number_value(detail_get(p, "work_done"));
			json_decref(p);
		}
	}
	x = json_pack("{s:I, s:s, s:s, s:s, s:I, s:o, s:o, s:f}",
		      "job", (json_int_t)sj->id, "name", sj->name, "state",
		      store_job_state_name(j ? j->run.state : sj->state), "world",
		      sj->world, "created_us",
		      (json_int_t)sj->created_us, "cost_usd",
		      money(usd(cost)), "test_accuracy", num_or_null(acc),
		      "work_done", frac > 0 && frac <= 1 ? frac : 0.0);
	if (!x || json_array_append_new(ls->a, x))
		return px_errorf(ls->err, PX_ENOMEM, "out of memory");
	return PX_OK;
}

json_t *jobs_cmd_jobs(struct jobs *js, json_t *req, struct px_error *err)
{
	struct list ls = { .js = js, .a = json_array(), .err = err };

	(void)req;
	if (!ls.a)
		return jobs_reply_err(err, PX_ENOMEM, "out of memory");
	if (store_jobs_each(js->s.st, NULL, list_job, &ls, err) != PX_OK) {
		json_decref(ls.a);
		return NULL;
	}
	return json_pack("{s:o}", "jobs", ls.a);
}

struct ev_walk {
	json_t *a;
	int64_t after;       /* event ids <= this are skipped */
	size_t max;
};

static enum px_err walk_event(const struct store_event *ev, void *ctx)
{
	struct ev_walk *w = ctx;

	if (ev->id <= w->after)
		return PX_OK;
	if (json_array_size(w->a) >= w->max)
		return PX_OK;
	return json_array_append_new(w->a, json_pack("{s:I, s:I, s:I, s:s, "
		"s:s%}", "id", (json_int_t)ev->id, "at", (json_int_t)(
		ev->at_us / 1000000), "instance", (json_int_t)ev->instance_id,
		"kind", ev->kind, "detail", ev->detail, ev->detail_len)) ?
		PX_ENOMEM : PX_OK;
}

json_t *jobs_cmd_events(struct jobs *js, json_t *req, struct px_error *err)
{
	json_t *after = json_object_get(req, "after");
	struct store_job_filter f;
	struct stored s = {0};
	struct ev_walk w = { .after = 0, .max = 200 };
	struct job *j;
	int64_t id;

	if (!jobs_req_job(js, req, &id, &j, err))
		return NULL;
	if (after && !(json_is_integer(after) &&
		       json_integer_value(after) >= 0))
		return jobs_reply_err(err, PX_EINVAL, "'after': an event id "
				      "(an integer >= 0) is needed");
	w.after = after ? json_integer_value(after) : 0;
	f = (struct store_job_filter){ .id = id };
	if (store_jobs_each(js->s.st, &f, stored_job, &s, err) != PX_OK) {
		json_decref(s.o);
		free(s.spec);
		return NULL;
	}
	free(s.spec);
	if (!s.o)
		return jobs_reply_err(err, PX_ENOENT, "no job %" PRId64, id);
	w.a = json_array();
	if (!w.a || store_events_each(js->s.st, id, walk_event, &w, err) !=
		    PX_OK) {
		json_decref(w.a);
		json_decref(s.o);
		return NULL;
	}
	json_object_set_new(s.o, "events", w.a);
	if (j)
		json_object_set_new(s.o, "state", json_string(
			store_job_state_name(j->run.state)));
	return s.o;
}

/* ---- /metrics (docs/proteusd.md, "Metrics") ---- */

/* One job's figures, as status_live computes them. */
struct job_fig {
	char id[24];
	double cost, cost_od, od_equiv, acc, sps;
	int64_t evictions, enrolled, refused;
	bool ec2;
	int inst[2][2];          /* [on-demand][reliable] */
};

static void job_figures(struct job *j, struct job_fig *f)
{
	const struct pol_fleet *fl = j->run.c ? ctrl_fleet(j->run.c) : NULL;
	int64_t cost = job_cost_uusd(j), od = j->bk.od_cost_uusd;
	bool before = tested_before(j);

	snprintf(f->id, sizeof f->id, "%" PRId64, j->id);
	if (j->run.c)
		od += ctrl_cost_ondemand_open(j->run.c, j->run.t);
	if (od > cost)
		od = cost;
	f->cost = px_usd_round(usd(cost - od));
	f->cost_od = px_usd_round(usd(od));
	f->od_equiv = px_usd_round(fmax(0, job_od_fleet_usd(j, j->run.t ? j->run.t :
							    j->mk.start_s)));
	f->acc = before ? j->pg.acc_before : j->pg.acc;
	f->sps = isfinite(j->pg.sps) && j->pg.sps > 0 ? j->pg.sps : 0.0;
	f->evictions = job_evictions(j);
	f->ec2 = enrollments(j->js->s.st, j->id, j->req.world.name, j,
			     &f->enrolled, &f->refused);
	memset(f->inst, 0, sizeof f->inst);
	for (size_t i = 0; fl && i < fl->n; i++)
		f->inst[fl->v[i].market < 0][fl->v[i].reliable]++;
}

/* A program job's own figures (its workload's status view,
 * docs/programs.md): samples, loss, starts, restarts, the store's latest
 * checkpoint. */
static void program_metrics(struct jobs *js, struct prom *p)
{
	static const struct {
		const char *metric, *type, *help, *key;
	} fam[] = {
		{ "proteus_job_program_samples_total", "counter", "Samples a "
		  "program job trained (its progress lines' samples).",
		  "samples" },
		{ "proteus_job_program_loss", "gauge", "A program job's last "
		  "reported loss (absent until reported).", "loss" },
		{ "proteus_job_program_starts_total", "counter", "Starts of a "
		  "program job's group (re-forms, restarts, daemon lives).",
		  "start" },
		{ "proteus_job_program_restarts_total", "counter", "Restarts "
		  "of a program job after its program failed.",
		  "restarts_on_errors" },
	};
	char id[24];

	for (size_t f = 0; f < sizeof fam / sizeof fam[0]; f++) {
		prom_family(p, fam[f].metric, fam[f].type, fam[f].help);
		for (struct job *j = js->list; j; j = j->next) {
			json_t *v = j->wl && j->wlops && j->wlops->view ?
				    j->wlops->view(j) : NULL;
			json_t *x = json_object_get(v, fam[f].key);

			snprintf(id, sizeof id, "%" PRId64, j->id);
			if (json_is_number(x))
				prom_sample(p, fam[f].metric,
					    json_number_value(x), "job", id,
					    NULL);
			json_decref(v);
		}
	}
}

void jobs_metrics(struct jobs *js, struct prom *p)
{
	static const char *const market[2] = { "spot", "on-demand" };
	static const char *const tier[2] = { "transient", "reliable" };
	struct job_fig *f;
	size_t n = 0, k;
	int64_t by_state[STORE_JOB_STATE_MAX] = {0};

	for (struct job *j = js->list; j; j = j->next) {
		n++;
		if (j->run.state < STORE_JOB_STATE_MAX)
			by_state[j->run.state]++;
	}
	prom_family(p, "proteus_jobs", "gauge", "Jobs this daemon holds "
		    "(taken up at start, or submitted since), by state.");
	for (int s = 0; s < STORE_JOB_STATE_MAX; s++)
		prom_sample(p, "proteus_jobs", (double)by_state[s], "state",
			    store_job_state_name(s), NULL);
	notify_metrics(js->notify, p);
	f = n ? calloc(n, sizeof *f) : NULL;
	if (!f)
		return;
	k = 0;
	for (struct job *j = js->list; j; j = j->next)
		job_figures(j, &f[k++]);
#define EACH_JOB for (struct job *j = ((k = 0), js->list); j; \
		      j = j->next, k++)
	prom_family(p, "proteus_job_info", "gauge", "A job: its name, "
		    "world and policy (the value is 1).");
	EACH_JOB prom_sample(p, "proteus_job_info", 1, "job", f[k].id, "name",
			     j->req.spec.name, "world",
			     j->req.world.name, "policy",
			     j->req.policy, NULL);
	prom_family(p, "proteus_instances", "gauge", "Instances a job holds "
		    "now, by market (spot, on-demand) and tier (reliable, "
		    "transient).");
	EACH_JOB for (int o = 0; o < 2; o++)
		for (int r = 0; r < 2; r++)
			prom_sample(p, "proteus_instances", f[k].inst[o][r],
				    "job", f[k].id, "market", market[o],
				    "tier", tier[r], NULL);
	prom_family(p, "proteus_job_cost_dollars", "gauge", "What a job's "
		    "instances cost so far, every life of the daemon, by "
		    "market; the sum is status's cost_usd.");
	EACH_JOB {
		prom_sample(p, "proteus_job_cost_dollars", f[k].cost, "job",
			    f[k].id, "market", "spot", NULL);
		prom_sample(p, "proteus_job_cost_dollars", f[k].cost_od, "job",
			    f[k].id, "market", "on-demand", NULL);
	}
	prom_family(p, "proteus_job_ondemand_equivalent_dollars", "gauge",
		    "What the same instances for the same times would have "
		    "cost on demand (status's fleet_ondemand_usd).");
	EACH_JOB prom_sample(p, "proteus_job_ondemand_equivalent_dollars",
			     f[k].od_equiv, "job", f[k].id, NULL);
	prom_family(p, "proteus_job_evictions_total", "counter", "Instances "
		    "of a job the provider took back.");
	EACH_JOB prom_sample(p, "proteus_job_evictions_total",
			     (double)f[k].evictions, "job", f[k].id, NULL);
	prom_family(p, "proteus_job_joins_total", "counter", "Trainer nodes "
		    "that joined a job (status's joins).");
	EACH_JOB prom_sample(p, "proteus_job_joins_total", (double)j->pg.joins,
			     "job", f[k].id, NULL);
	prom_family(p, "proteus_job_losses_total", "counter", "Trainer nodes "
		    "a job lost without notice (status's losses).");
	EACH_JOB prom_sample(p, "proteus_job_losses_total", (double)j->pg.losses,
			     "job", f[k].id, NULL);
	prom_family(p, "proteus_job_samples_per_second", "gauge", "Training "
		    "samples a job's workers process per second, last report.");
	EACH_JOB prom_sample(p, "proteus_job_samples_per_second", f[k].sps,
			     "job", f[k].id, NULL);
	prom_family(p, "proteus_job_test_accuracy_ratio", "gauge", "A job's "
		    "last test accuracy, 0 to 1 (absent until tested).");
	EACH_JOB prom_sample(p, "proteus_job_test_accuracy_ratio", f[k].acc,
			     "job", f[k].id, NULL);
	prom_family(p, "proteus_job_work_done_ratio", "gauge", "The part of "
		    "a job's work done, 0 to 1.");
	EACH_JOB prom_sample(p, "proteus_job_work_done_ratio", j->pg.frac, "job",
			     f[k].id, NULL);
	prom_family(p, "proteus_job_enrollments_total", "counter", "Nodes of "
		    "an ec2 job that enrolled (got the job's key).");
	EACH_JOB if (f[k].ec2)
		prom_sample(p, "proteus_job_enrollments_total",
			    (double)f[k].enrolled, "job", f[k].id, NULL);
	prom_family(p, "proteus_job_enrollment_refusals_total", "counter",
		    "Enrollments of an ec2 job refused.");
	EACH_JOB if (f[k].ec2)
		prom_sample(p, "proteus_job_enrollment_refusals_total",
			    (double)f[k].refused, "job", f[k].id, NULL);
	program_metrics(js, p);
	jobs_pool_metrics(js, p);
#undef EACH_JOB
	free(f);
}
