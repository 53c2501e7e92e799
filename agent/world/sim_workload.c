/* sim_workload.c -- several jobs, one pool, one clock (see
 * sim_workload.h and docs/pool.md). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../pool_member.h"
#include "sim_workload.h"

enum wj_state { WJ_PENDING = 0, WJ_WAITING, WJ_RUNNING, WJ_DONE };

struct wl;

/* One job of the workload, as the pool sees it. */
struct wjob {
	struct wl *w;
	size_t idx;
	const struct wl_job *in;
	enum wj_state st;
	int64_t arrival_s, admit_s, end_s;
	struct sim_plan *plan;
	struct sim_job *sj;
	struct ctrl_gate gate;
	struct pool_member pm;    /* what the arbiter is told; its share */
	bool sized;               /* pm is (arrive) */
	double present_s;         /* the jobs present, integrated over its
				   * life (for its 1/N ideal) */
};

struct wl {
	const struct wl_setup *s;
	enum arb_kind kind;
	struct wjob *v;
	size_t n;
	struct arb_job *aj;
	struct pool_use use;      /* vCPUs held (uusd_per_hour: pool_rate) */
	int64_t now, first_s, last_s, next_round;
	double util_s;            /* tightest limit's use, integrated */
	struct wl_result *res;
	struct px_error *err;
};

/* What the held instances of every running job cost an hour at now. */
static int64_t pool_rate(const struct wl *w, int64_t now)
{
	int64_t sum = 0;

	for (size_t i = 0; i < w->n; i++)
		if (w->v[i].st == WJ_RUNNING)
			sum += pm_fleet_uusd(sim_job_env(w->v[i].sj),
					     ctrl_fleet(sim_job_ctrl(w->v[i].sj)),
					     w->s->ms, now, false);
	return sum;
}

static struct pool_use use_now(const struct wl *w, int64_t now)
{
	struct pool_use u = w->use;

	u.uusd_per_hour = pool_rate(w, now);
	return u;
}

/* ---- the gate (controller.h): every job's requests, one pool ---- */

static const char *g_admit(void *ctx, int64_t now, int type, int market,
			   int64_t hour_uusd)
{
	struct wjob *j = ctx;
	const struct pol_env *env = sim_job_env(j->sj);
	struct pool_use u = use_now(j->w, now);

	return pm_admit(&j->pm, &j->w->s->limits, &u, env->types[type].name,
			market >= 0, hour_uusd,
			pm_fleet_uusd(env, ctrl_fleet(sim_job_ctrl(j->sj)),
				      j->w->s->ms, now, true));
}

static void g_hold(void *ctx, int type, int market, int sign)
{
	struct wjob *j = ctx;

	pm_hold(&j->pm, &j->w->use, sim_job_env(j->sj)->types[type].name,
		market >= 0, sign);
}

/* ---- jobs ---- */

static enum px_err job_plan(struct wl *w, struct wjob *j, int64_t start,
			    struct px_error *err)
{
	const struct wl_setup *s = w->s;
	struct sim_setup ss = {
		.ms = s->ms, .od = s->od, .job = j->in->job,
		.billing = s->billing, .start_s = start, .end_s = s->end_s,
		.trace_first_s = s->trace_first_s,
		.trace_last_s = s->trace_last_s, .seed = s->seed + j->idx,
		.advisor = s->advisor,
	};
	sim_plan_free(j->plan);
	j->plan = NULL;
	return sim_plan_new(&ss, &j->plan, err);
}

/* err's message, led by the job's name. */
static enum px_err named(const struct wjob *j, enum px_err e,
			 struct px_error *err)
{
	char msg[sizeof err->msg];

	if (e == PX_OK)
		return e;
	snprintf(msg, sizeof msg, "%s", err->msg);
	return px_errorf(err, e, "job %zu '%s': %s", j->idx + 1, j->in->name,
			 msg);
}

/* The job arrived: its plan (checked now), its sizes and rates. */
static enum px_err arrive(struct wl *w, struct wjob *j, struct px_error *err)
{
	enum px_err e = job_plan(w, j, j->arrival_s, err);

	if (e == PX_OK)
		e = pm_init(&j->pm, sim_plan_env(j->plan), NULL, j->in->weight,
			    err);
	if (e != PX_OK)
		return named(j, e, err);
	j->sized = true;
	j->st = WJ_WAITING;
	return PX_OK;
}

/* Its tier was admitted at now: its run starts here, at its share. */
static enum px_err start(struct wl *w, struct wjob *j, struct px_error *err)
{
	enum px_err e = PX_OK;

	if (sim_plan_start(j->plan) != w->now)
		e = job_plan(w, j, w->now, err);
	j->gate = (struct ctrl_gate){.admit = g_admit, .hold = g_hold,
				     .ctx = j};
	if (e == PX_OK)
		e = sim_job_new(j->plan, w->s->policy, &j->gate, &j->sj, err);
	if (e == PX_OK)
		e = sim_job_share(j->sj, pm_spot_cap(&j->pm),
				  j->pm.share * j->pm.unit_vcpus, err);
	j->st = WJ_RUNNING;
	j->admit_s = w->now;
	if (e == PX_OK)
		e = sim_job_start(j->sj, err);
	return named(j, e, err);
}

static enum px_err shed(struct wl *w, struct wjob *j, uint64_t id,
			const char *why, struct px_error *err)
{
	enum px_err e = ctrl_shed(sim_job_ctrl(j->sj), w->now, id, why);

	if (e != PX_OK) {
		px_errorf(err, e, "%s", ctrl_error(sim_job_ctrl(j->sj))->msg);
		return named(j, e, err);
	}
	j->pm.sheds++;
	return ctrl_wake(sim_job_ctrl(j->sj), w->now);
}

/* Spot vCPUs held above the share go back, the newest instances
 * first (those leaving are the provider's already). */
static enum px_err trim(struct wl *w, struct wjob *j, struct px_error *err)
{
	enum px_err e = PX_OK;

	while (e == PX_OK &&
	       j->pm.spot_vcpus > j->pm.share * j->pm.unit_vcpus) {
		const struct pol_instance *v = pm_shed_first(
			ctrl_fleet(sim_job_ctrl(j->sj)), w->s->billing);

		if (!v)
			break;
		e = shed(w, j, v->id, "the pool's share", err);
	}
	return e;
}

static void fill_arb(const struct wl *w, struct wjob *j, struct arb_job *a)
{
	const struct pol_env *env = j->sj ? sim_job_env(j->sj)
					  : sim_plan_env(j->plan);

	pm_arb(&j->pm, (double)(j->arrival_s - w->s->start_s) / 3600,
	       j->sj ? sim_job_work(j->sj) : 0, j->st == WJ_RUNNING,
	       pm_unit_price(&j->pm, env,
			     j->sj ? ctrl_fleet(sim_job_ctrl(j->sj)) : NULL,
			     w->s->ms, w->now), a);
}

/* The arbiter's decision at now, carried out. */
static enum px_err round_(struct wl *w, struct px_error *err)
{
	struct arb_setup as = {
		.kind = w->kind, .fairness = w->s->fairness,
		.now_h = (double)(w->now - w->s->start_s) / 3600,
		.limits = &w->s->limits,
	};
	size_t m = 0;
	int64_t spare;
	enum px_err e;

	for (size_t i = 0; i < w->n; i++) {
		struct wjob *j = &w->v[i];

		if (j->st != WJ_WAITING && j->st != WJ_RUNNING)
			continue;
		if (j->sj)
			sim_job_advance(j->sj, w->now);
		pm_measure(&j->pm, w->now, j->sj ? sim_job_work(j->sj) : 0,
			   j->sj != NULL);
		fill_arb(w, j, &w->aj[m++]);
	}
	if (!m)
		return PX_OK;
	e = arb_decide(&as, w->aj, m, err);
	spare = pm_spare(&w->s->limits, w->aj, m);
	m = 0;
	for (size_t i = 0; e == PX_OK && i < w->n; i++) {
		struct wjob *j = &w->v[i];
		const struct arb_job *a;

		if (j->st != WJ_WAITING && j->st != WJ_RUNNING)
			continue;
		a = &w->aj[m++];
		pm_take(&j->pm, &w->s->limits, a, spare);
		if (j->st == WJ_WAITING) {
			if (a->admit)
				e = start(w, j, err);
			continue;
		}
		e = sim_job_share(j->sj, pm_spot_cap(&j->pm),
				  j->pm.share * j->pm.unit_vcpus, err);
		if (e == PX_OK)
			e = trim(w, j, err);
	}
	w->res->rounds++;
	w->next_round = w->now + w->s->lease_s;
	return e;
}

/* A price rise took the held instances past pool_usd_per_hour: the spot
 * instance that costs the most an hour goes, until within it. */
static enum px_err enforce(struct wl *w, struct px_error *err)
{
	const struct pool_limits *l = &w->s->limits;
	enum px_err e = PX_OK;

	while (e == PX_OK && l->uusd_per_hour >= 0 &&
	       pool_rate(w, w->now) > l->uusd_per_hour) {
		struct wjob *bj = NULL;
		uint64_t bid = 0;
		int64_t bp = -1;

		for (size_t i = 0; i < w->n; i++) {
			struct wjob *j = &w->v[i];
			const struct pol_instance *v;

			if (j->st != WJ_RUNNING)
				continue;
			v = pm_priciest(sim_job_env(j->sj),
					ctrl_fleet(sim_job_ctrl(j->sj)),
					w->s->ms, w->now, &bp);
			if (v) {
				bj = j;
				bid = v->id;
			}
		}
		if (!bj)
			break;        /* on demand alone is past it */
		e = shed(w, bj, bid, "pool_usd_per_hour", err);
	}
	return e;
}

/* The pool's use against its tightest limit (0..1; 0: no limit). */
static double tightest(const struct wl *w, const struct pool_use *u)
{
	const struct pool_limits *l = &w->s->limits;
	const struct pool_limit *lim[2] = {&l->spot, &l->ondemand};
	const int64_t *used[2] = {u->spot, u->ondemand};
	const int64_t tot[2] = {u->spot_total, u->ondemand_total};
	double f = 0;

	for (int k = 0; k < 2; k++) {
		if (lim[k]->total > 0 && (double)tot[k] / lim[k]->total > f)
			f = (double)tot[k] / lim[k]->total;
		for (int g = 0; g < POOL_GROUPS; g++)
			if (lim[k]->group[g] > 0 &&
			    (double)used[k][g] / lim[k]->group[g] > f)
				f = (double)used[k][g] / lim[k]->group[g];
	}
	if (l->uusd_per_hour > 0 &&
	    (double)u->uusd_per_hour / l->uusd_per_hour > f)
		f = (double)u->uusd_per_hour / l->uusd_per_hour;
	return f > 1 ? 1 : f;
}

/* The clock moves from now to t: the integrals. */
static void pass(struct wl *w, int64_t t)
{
	size_t present = 0;
	double dt = (double)(t - w->now);

	if (!(dt > 0))
		return;
	for (size_t i = 0; i < w->n; i++)
		present += w->v[i].st == WJ_WAITING ||
			   w->v[i].st == WJ_RUNNING;
	if (!present)
		return;
	for (size_t i = 0; i < w->n; i++) {
		if (w->v[i].st == WJ_WAITING || w->v[i].st == WJ_RUNNING)
			w->v[i].present_s += (double)present * dt;
		if (w->v[i].st == WJ_RUNNING)
			pm_pass(&w->v[i].pm, dt);
	}
	struct pool_use u = use_now(w, w->now);
	w->util_s += tightest(w, &u) * dt;
}

static void observe(struct wl *w)
{
	struct pool_use u = use_now(w, w->now);
	struct wl_result *r = w->res;
	double usd = (double)u.uusd_per_hour / PX_UUSD_PER_USD;

	if (u.spot_total > r->peak_spot_vcpus)
		r->peak_spot_vcpus = u.spot_total;
	if (u.ondemand_total > r->peak_ondemand_vcpus)
		r->peak_ondemand_vcpus = u.ondemand_total;
	if (usd > r->peak_usd_per_hour)
		r->peak_usd_per_hour = usd;
	if (!pool_within(&w->s->limits, &u, NULL))
		r->over_limit++;
}

/* The job running whose next step is the soonest, and when. */
static struct wjob *soonest(struct wl *w, int64_t *ret)
{
	struct wjob *best = NULL;
	int64_t bt = INT64_MAX;

	for (size_t i = 0; i < w->n; i++) {
		int64_t t;

		if (w->v[i].st != WJ_RUNNING)
			continue;
		t = sim_job_next(w->v[i].sj);
		if (t < bt) {
			bt = t;
			best = &w->v[i];
		}
	}
	*ret = bt;
	return best;
}

static enum px_err loop(struct wl *w, struct px_error *err)
{
	bool due = false;
	enum px_err e = PX_OK;

	w->next_round = INT64_MAX;
	while (e == PX_OK) {
		int64_t tj, ta = INT64_MAX, t;
		struct wjob *j = soonest(w, &tj);
		bool present = false;

		for (size_t i = 0; i < w->n; i++) {
			if (w->v[i].st == WJ_PENDING &&
			    w->v[i].arrival_s < ta)
				ta = w->v[i].arrival_s;
			present |= w->v[i].st == WJ_WAITING ||
				   w->v[i].st == WJ_RUNNING;
		}
		/* the jobs' steps of an instant first, then its round */
		if (j && tj == w->now) {
			e = sim_job_step(j->sj, err);
			if (e != PX_OK)
				return named(j, e, err);
			if (sim_job_result(j->sj)) {
				j->st = WJ_DONE;
				j->end_s = w->now;
				due = true;
			}
			e = enforce(w, err);
			continue;
		}
		for (size_t i = 0; e == PX_OK && i < w->n; i++)
			if (w->v[i].st == WJ_PENDING &&
			    w->v[i].arrival_s == w->now) {
				e = arrive(w, &w->v[i], err);
				due = true;
			}
		if (e == PX_OK && present && w->now >= w->next_round)
			due = true;
		if (e == PX_OK && due) {
			due = false;
			e = round_(w, err);
			if (e == PX_OK)
				e = enforce(w, err);
			continue;
		}
		if (e != PX_OK)
			break;
		observe(w);
		t = tj < ta ? tj : ta;
		if (present && w->next_round < t)
			t = w->next_round;
		if (t == INT64_MAX || t > w->s->end_s)
			break;
		pass(w, t);
		w->now = t;
	}
	return e;
}

static int by_double(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;

	return a < b ? -1 : a > b;
}

static enum px_err results(struct wl *w, struct px_error *err)
{
	struct wl_result *r = w->res;
	double *c = px_calloc(w->n ? w->n : 1, sizeof *c), sum = 0;
	int64_t end = w->s->end_s;

	if (!c)
		return px_errorf(err, PX_ENOMEM, "out of memory");
	for (size_t i = 0; i < w->n; i++) {
		struct wjob *j = &w->v[i];
		struct wl_job_result *jr = &r->jobs[i];
		int64_t fin = j->st == WJ_DONE ? j->end_s : end;
		double life = (double)(fin - j->arrival_s);
		struct arb_job a;
		int alone;

		snprintf(jr->name, sizeof jr->name, "%s", j->in->name);
		jr->arrival_hours = j->in->arrival_hours;
		jr->completion_hours = life > 0 ? life / 3600 : 0;
		jr->wait_hours = (double)((j->sj ? j->admit_s : fin) -
					  j->arrival_s) / 3600;
		if (jr->wait_hours < 0)
			jr->wait_hours = 0;
		if (j->sj) {
			const struct sim_result *sr = sim_job_result(j->sj);

			jr->run = *sr;
			jr->run.series = NULL;
			jr->run.n_series = 0;
			jr->completed = sr->completed;
			jr->cost_usd = sr->cost_usd;
			jr->work_done_hours = sr->work_done_hours;
		}
		jr->sheds = j->pm.sheds;
		jr->refused = j->pm.refused;
		if (j->plan && j->sized) {
			fill_arb(w, j, &a);
			a.rate = j->pm.rate;   /* the ideal is the spec's */
			alone = arb_alone_max(&w->s->limits, NULL, &a);
			jr->alone_hours = arb_alone_hours(&a, life > 0 ?
				j->present_s / life : 1, alone);
		}
		jr->rho = jr->alone_hours > 0 ? jr->completion_hours /
						 jr->alone_hours : 0;
		if (jr->rho > r->max_rho)
			r->max_rho = jr->rho;
		r->cost_usd += jr->cost_usd;
		c[i] = jr->completion_hours;
		sum += c[i];
		if (fin > w->last_s)
			w->last_s = fin;
	}
	if (w->n) {
		size_t k;

		qsort(c, w->n, sizeof *c, by_double);
		r->mean_completion_hours = sum / (double)w->n;
		k = (size_t)ceil(0.95 * (double)w->n);
		r->p95_completion_hours = c[k ? k - 1 : 0];
	}
	if (w->last_s > w->first_s)
		r->utilisation = w->util_s / (double)(w->last_s - w->first_s);
	free(c);
	return PX_OK;
}

void wl_result_release(struct wl_result *r)
{
	if (!r)
		return;
	free(r->jobs);
	r->jobs = NULL;
	r->n_jobs = 0;
}

enum px_err wl_run(const struct wl_setup *s, enum arb_kind a,
		   struct wl_result *ret, struct px_error *err)
{
	struct wl w = {.s = s, .kind = a, .n = s->n_jobs, .err = err};
	struct wl_result res;
	enum px_err e = PX_OK;

	memset(&res, 0, sizeof res);
	if (!s->n_jobs || s->n_jobs > WL_JOBS_MAX || !(s->lease_s > 0) ||
	    !(s->fairness > 0 && s->fairness <= 1) || !s->policy)
		return px_errorf(err, PX_EINVAL, "a workload needs 1 to %d "
				 "jobs, a lease above 0 and a fairness in "
				 "(0, 1]", WL_JOBS_MAX);
	snprintf(res.arbiter, sizeof res.arbiter, "%s", arb_name(a));
	w.res = &res;
	w.v = px_calloc(w.n, sizeof *w.v);
	w.aj = px_calloc(w.n, sizeof *w.aj);
	res.jobs = px_calloc(w.n, sizeof *res.jobs);
	res.n_jobs = w.n;
	if (!w.v || !w.aj || !res.jobs) {
		e = px_errorf(err, PX_ENOMEM, "out of memory");
		goto out;
	}
	w.first_s = INT64_MAX;
	for (size_t i = 0; i < w.n; i++) {
		struct wjob *j = &w.v[i];

		j->w = &w;
		j->idx = i;
		j->in = &s->jobs[i];
		j->arrival_s = s->start_s +
			       (int64_t)llround(s->jobs[i].arrival_hours * 3600);
		if (j->arrival_s < w.first_s)
			w.first_s = j->arrival_s;
		if (!(s->jobs[i].weight > 0) ||
		    !(s->jobs[i].arrival_hours >= 0) ||
		    j->arrival_s >= s->end_s) {
			e = px_errorf(err, PX_EINVAL, "job %zu '%s': its "
				      "arrival must be within the window and "
				      "its weight above 0", i + 1,
				      s->jobs[i].name);
			goto out;
		}
	}
	w.now = w.first_s;
	e = loop(&w, err);
	if (e == PX_OK)
		e = results(&w, err);
out:
	for (size_t i = 0; w.v && i < w.n; i++) {
		sim_job_free(w.v[i].sj);
		sim_plan_free(w.v[i].plan);
		pm_free(&w.v[i].pm);
	}
	free(w.v);
	free(w.aj);
	if (e != PX_OK) {
		wl_result_release(&res);
		return e;
	}
	*ret = res;
	return PX_OK;
}
