/* jobs_progress.c -- what a job's workload reports, and what the job
 * learns from it (docs/controller.md, "Measured scaling" and "Exploring
 * the scaling"): the progress part of the job (jobs_int.h), its one
 * writer.  A workload hands in a struct job_report (workload.h); the
 * controller gets work done, the rate and the scaling
 * (job_ctrl_progress), the policy the scaling as an input of each
 * decision (pol_input.scaling), never by a change of the job's spec. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/log.h"
#include "../trainer/compute/goodput.h"
#include "jobs_int.h"

#define SCALING_EVENT_MS 30000   /* a "scaling" event at most this often */

static void take_goodput(struct job *j, const struct job_report *r);

void job_progress_init(struct job *j)
{
	/* not evaluated yet: no figure (status null, /metrics absent),
	 * not a 0 that reads as a test */
	j->pg.acc = j->pg.loss = j->pg.sps = NAN;
	j->pg.scaling.spot_max = -1;    /* the spec's scaling, no limit */
}

void job_progress_start(struct job *j)
{
	/* a resumed job's total is its earlier lives' last (the
	 * workload's own, for its fleet then), not prepare's guess, until
	 * the workload reports again */
	if (j->pg.total_before > 0)
		j->pg.total_clocks = j->pg.total_before;
	j->pg.acc = j->pg.loss = NAN;
}

void job_progress_foresee(struct job *j, int64_t total_clocks)
{
	j->pg.total_clocks = total_clocks;
}

int64_t job_clocks_total(const struct job *j)
{
	return j->pg.total_clocks > j->pg.clock ? j->pg.total_clocks
						: j->pg.clock;
}

void job_progress_take(struct job *j, const struct job_report *r)
{
	const int max_slow = (int)(sizeof j->pg.slow / sizeof j->pg.slow[0]);
	double f = r->frac;

	j->pg.clock = r->clock;
	j->pg.sps = r->sps;
	/* evaluated: a classifier's accuracy and loss, an mf job's test
	 * RMSE in loss (its accuracy NaN) */
	if (isfinite(r->acc) || isfinite(r->loss)) {
		j->pg.acc = r->acc;
		j->pg.loss = r->loss;
	}
	j->pg.workers = r->workers;
	j->pg.ps = r->ps;
	j->pg.speed_median = r->speed_median;
	_Static_assert(sizeof j->pg.slow == sizeof r->slow, "one list");
	j->pg.n_slow = r->n_slow < 0 ? 0 : r->n_slow > max_slow ? max_slow :
		       r->n_slow;
	memcpy(j->pg.slow, r->slow, sizeof j->pg.slow);
	take_goodput(j, r);
	j->pg.stage = r->stage;
	if (r->total_clock > 0)
		j->pg.total_clocks = r->total_clock;
	/* the work only grows (a restarted driver reports from its
	 * checkpoint) */
	if (!(f >= 0))
		f = 0;
	if (f > 1)
		f = 1;
	if (f > j->pg.frac)
		j->pg.frac = f;
}

void job_progress_done(struct job *j)
{
	j->pg.frac = 1;
}

void job_progress_join(struct job *j)
{
	j->pg.joins++;
}

void job_progress_loss(struct job *j)
{
	j->pg.losses++;
}

int job_progress_restarted(struct job *j)
{
	return ++j->pg.restarts;
}

void job_progress_driver_anew(struct job *j)
{
	/* its judgement of the workers' speeds ended with the old driver:
	 * none is named slow until the new one judges */
	j->pg.n_slow = 0;
	j->pg.speed_median = 0;
}

void job_progress_resumed(struct job *j)
{
	j->pg.restarts = 1;
	/* the scaling measured in its earlier lives goes on */
	job_measured_apply(j);
}

void job_progress_resume_event(struct job *j, json_t *p)
{
	json_t *acc = json_object_get(p, "test_accuracy");
	json_t *loss = json_object_get(p, "test_loss");
	json_t *v;

	/* the job's figures so far: its later lives go on from them (each
	 * progress event carries the earlier lives') */
	v = json_object_get(p, "work_done");
	if (json_is_number(v) && json_number_value(v) >= 0 &&
	    json_number_value(v) <= 1)
		j->pg.frac = json_number_value(v);
	v = json_object_get(p, "clock");
	if (json_is_integer(v) && json_integer_value(v) >= 0)
		j->pg.clock = json_integer_value(v);
	v = json_object_get(p, "clocks_total");
	if (json_is_integer(v) && json_integer_value(v) > 0)
		j->pg.total_clocks = j->pg.total_before =
			json_integer_value(v);
	v = json_object_get(p, "joins");
	if (json_is_integer(v) && json_integer_value(v) >= 0)
		j->pg.joins = json_integer_value(v);
	v = json_object_get(p, "losses");
	if (json_is_integer(v) && json_integer_value(v) >= 0)
		j->pg.losses = json_integer_value(v);
	/* tested: a classifier's accuracy (and loss), an mf job's RMSE
	 * alone (its loss) */
	if (json_is_number(acc) || json_is_number(loss)) {
		j->pg.have_test_before = true;
		j->pg.acc_before = json_is_number(acc) ?
				   json_number_value(acc) : NAN;
		j->pg.loss_before = json_is_number(loss) ?
				    json_number_value(loss) : NAN;
	}
}

/* A report's goodput into the job's measured scaling, at its count of
 * instances; once that has enough points BidBrain plans with it
 * (pg.scaling, the input of each decision).  Only a steady fleet's: the
 * first GOODPUT_STEADY reports after the count changed are left out (a
 * worker that just joined is still loading and training its first
 * clocks, a departed one's samples still in the window: a count seen only
 * around an eviction measured low, docs/benchmarks.md). */
#define GOODPUT_STEADY 3

struct eff_now {
	double phi, m0;  /* the noise scale now, the job's batch */
};

static double eff_now(double batch, const void *arg)
{
	const struct eff_now *e = arg;

	return goodput_efficiency(e->phi, e->m0, batch);
}

static void take_goodput(struct job *j, const struct job_report *r)
{
	int n = r->instances;

	j->pg.goodput = r->goodput;
	j->pg.efficiency = r->efficiency;
	j->pg.noise_scale = r->noise_scale;
	j->pg.gp_batch = r->batch;
	j->pg.lr_scale = r->lr_scale;
	j->pg.gp_same = n == j->pg.gp_count ? j->pg.gp_same + 1 : 0;
	j->pg.gp_count = n;
	if (j->pg.gp_same >= GOODPUT_STEADY) {
		jobspec_measured_add(&j->pg.meas, n, r->goodput);
		/* Pollux: throughput and total batch kept apart, every count
		 * valued again at the efficiency of the noise scale now
		 * (which grows as the model trains: a count measured early
		 * at a large batch is worth more now than it measured) */
		if (r->efficiency > 0 && r->efficiency <= 1 &&
		    r->noise_scale > 0) {
			struct eff_now e = { r->noise_scale, r->base_batch };

			jobspec_measured_add_parts(&j->pg.meas, n, r->goodput /
						   r->efficiency,
						   r->total_batch);
			jobspec_measured_revalue(&j->pg.meas, eff_now, &e);
		}
		job_measured_apply(j);
	}
	job_explore(j, n);
}

void job_explore(struct job *j, int n)
{
	const struct jobspec *sp = &j->req.spec;
	struct jobspec_explore *x = &j->pg.explore;
	enum jobspec_explore_ev ev;

	j->pg.scaling.spot_max = -1;
	if (!j->req.explore.on || (j->wops && j->wops->no_explore))
		return;
	x->start = j->req.explore.start;
	x->growth = j->req.explore.growth;
	ev = jobspec_explore_step(x, &j->pg.meas, n, sp->reliable.count,
				  sp->spot.max_instances);
	if (ev != JOBSPEC_EXPLORE_SAME && j->run.c && j->run.w &&
	    ctrl_wake(j->run.c, j->wops->now(j->run.w)) != PX_OK)
		log_warn("job %" PRId64 ": the policy's wake after its "
			 "exploration's limit changed: %s", j->id,
			 ctrl_error(j->run.c)->msg);
	switch (ev) {
	case JOBSPEC_EXPLORE_LIMIT:
		log_info("job %" PRId64 ": exploring its scaling: at most %d "
			 "instances (the largest count measured: %d)", j->id,
			 x->limit, jobspec_measured_largest(&j->pg.meas));
		break;
	case JOBSPEC_EXPLORE_DONE_MAX:
		log_info("job %" PRId64 ": explored its scaling up to %d "
			 "instances: the spec's spot.max_instances from now",
			 j->id, jobspec_measured_largest(&j->pg.meas));
		break;
	case JOBSPEC_EXPLORE_DONE_IDLE:
		log_notice("job %" PRId64 ": held the instances it explores "
			   "for %d reports without measuring their goodput: "
			   "exploring its scaling ends (the spec's "
			   "spot.max_instances from now)", j->id,
			   JOBSPEC_EXPLORE_PATIENCE);
		break;
	case JOBSPEC_EXPLORE_SAME:
		break;
	}
	if (x->done) {
		if (!x->saved) {
			/* kept for a restarted daemon */
			x->saved = true;
			job_scaling_event(j, true);
		}
		return;
	}
	j->pg.scaling.spot_max = x->limit > sp->reliable.count ?
			      x->limit - sp->reliable.count : 0;
}

void job_measured_apply(struct job *j)
{
	struct jobspec_profile *pr = &j->pg.profile, got;
	bool first = !j->pg.measured_on;

	/* "scaling_measured": false keeps the spec's (a baseline) */
	if (!j->req.scaling_measured ||
	    !jobspec_measured_profile(&j->pg.meas, &got))
		return;
	*pr = got;
	j->pg.scaling.profile = pr;
	j->pg.measured_on = true;
	if (first) {
		log_notice("job %" PRId64 ": BidBrain plans with the measured "
			   "scaling from now on (%d points, %d to %d "
			   "instances)", j->id, pr->n, pr->workers[0],
			   pr->workers[pr->n - 1]);
		job_scaling_event(j, true);
	}
}

/* The model fitted to the measurements ({"goodput_1", "serial"}: the
 * goodput of one instance and the serial share, docs/controller.md),
 * null before two counts are measured. */
static json_t *fit_json(const struct job *j)
{
	double g1, serial;

	if (!jobspec_measured_fit(&j->pg.meas, &g1, &serial))
		return json_null();
	return json_pack("{s:f, s:f}", "goodput_1", g1, "serial", serial);
}

json_t *job_scaling_json(const struct job *j)
{
	json_t *n = json_array(), *g = json_array(), *r = json_array();
	json_t *t = json_array(), *b = json_array(), *pa = json_array();

	for (int i = 1; n && g && r && t && b && pa &&
	     i <= JOBSPEC_MEASURED_MAX; i++) {
		if (!j->pg.meas.reports[i])
			continue;
		json_array_append_new(n, json_integer(i));
		json_array_append_new(g, json_real(j->pg.meas.goodput[i]));
		json_array_append_new(r, json_integer(j->pg.meas.reports[i]));
		/* the factors (0 where none was reported) */
		json_array_append_new(t, json_real(j->pg.meas.throughput[i]));
		json_array_append_new(b, json_real(j->pg.meas.batch[i]));
		json_array_append_new(pa, json_integer(j->pg.meas.parts[i]));
	}
	return json_pack("{s:b, s:o*, s:o*, s:o*, s:o*, s:o*, s:o*, s:o, "
			 "s:o, s:b}", "measured", j->pg.measured_on, "instances",
			 n, "goodput", g, "reports", r, "throughput", t,
			 "total_batch", b, "parts", pa, "fit", fit_json(j),
			 "explore_limit", j->pg.scaling.spot_max >= 0 ?
			 json_integer(j->pg.explore.limit) : json_null(),
			 "explore_done", j->pg.explore.done);
}

void job_scaling_event(struct job *j, bool force)
{
	uint64_t now = px_now_mono_us();
	json_t *o;
	char *s;

	if (!force && now - j->pg.scaling_ev_us < SCALING_EVENT_MS * 1000ull)
		return;
	j->pg.scaling_ev_us = now;
	o = job_scaling_json(j);
	s = o ? json_dumps(o, JSON_COMPACT) : NULL;
	if (s)
		job_event(j, "scaling", s);
	free(s);
	json_decref(o);
}

/* The factors of count k at index i of a stored "scaling" event, when
 * the event has them (older ones do not) and they make sense. */
static void take_parts(struct job *j, json_t *o, size_t i, int k)
{
	json_t *t = json_array_get(json_object_get(o, "throughput"), i);
	json_t *b = json_array_get(json_object_get(o, "total_batch"), i);
	json_t *pa = json_array_get(json_object_get(o, "parts"), i);
	double tv = json_number_value(t), bv = json_number_value(b);

	if (!json_is_number(t) || !json_is_number(b) ||
	    !json_is_integer(pa) || !(tv > 0) || !isfinite(tv) ||
	    !(bv > 0) || !isfinite(bv) || json_integer_value(pa) < 1 ||
	    json_integer_value(pa) > UINT32_MAX)
		return;
	j->pg.meas.throughput[k] = tv;
	j->pg.meas.batch[k] = bv;
	j->pg.meas.parts[k] = (uint32_t)json_integer_value(pa);
}

void job_scaling_take(struct job *j, json_t *o)
{
	json_t *n = json_object_get(o, "instances");
	json_t *g = json_object_get(o, "goodput");
	json_t *r = json_object_get(o, "reports");
	size_t i;
	json_t *v;

	/* an exploration that ended (its limit reached, or the trainer
	 * reported no goodput at it) does not start again */
	if (json_is_true(json_object_get(o, "explore_done"))) {
		j->pg.explore.done = j->pg.explore.saved = true;
		j->pg.explore.limit = 0;
	}
	if (!json_is_array(n) || json_array_size(g) != json_array_size(n) ||
	    json_array_size(r) != json_array_size(n))
		return;
	json_array_foreach(n, i, v) {
		json_int_t k = json_integer_value(v);
		json_t *gv = json_array_get(g, i), *rv = json_array_get(r, i);

		if (!json_is_integer(v) || k < 1 || k > JOBSPEC_MEASURED_MAX ||
		    !json_is_number(gv) || !(json_number_value(gv) > 0) ||
		    !isfinite(json_number_value(gv)) ||
		    !json_is_integer(rv) || json_integer_value(rv) < 1 ||
		    json_integer_value(rv) > UINT32_MAX)
			continue;
		j->pg.meas.goodput[k] = json_number_value(gv);
		j->pg.meas.reports[k] = (uint32_t)json_integer_value(rv);
		take_parts(j, o, i, (int)k);
	}
}

/* What the controller sees: work done in reference hours, and the rate
 * measured over the last market hour of progress. */
void job_ctrl_progress(struct job *j, int64_t t, struct ctrl_progress *p)
{
	double w = j->pg.frac * j->req.spec.work_hours;

	if (t - j->pg.rate_t >= 3600 || !j->pg.rate_t) {
		if (j->pg.rate_t && t > j->pg.rate_t)
			j->pg.rate_h = (w - j->pg.rate_w) * 3600.0 /
				    (double)(t - j->pg.rate_t);
		j->pg.rate_t = t;
		j->pg.rate_w = w;
	}
	j->pg.work_h = w;
	p->work_done_h = w;
	p->rate_h = j->pg.rate_h > 0 ? j->pg.rate_h : 0;
	j->pg.seen = j->pg.scaling;
	job_pool_scaling(j, &j->pg.seen);
	p->scaling = &j->pg.seen;
}
