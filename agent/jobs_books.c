/* jobs_books.c -- a job's books (docs/jobs.md): the controller's events
 * into the store, the same fleet's on-demand bill beside the real one,
 * and the job's cost across the daemon's lives. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/log.h"
#include "jobs_int.h"

/* The journal's cloud ids: the world's. */
void job_cloud_id(void *ctx, uint64_t ctrl_id, char *buf, size_t len)
{
	struct job *j = ctx;

	if (j->run.w)
		j->wops->cloud_id(j->run.w, ctrl_id, buf, len);
	else
		snprintf(buf, len, "%s", "");
}

/* On-demand price of type name, micro-USD per hour (0: unknown). */
static int64_t od_price(struct job *j, const char *name)
{
	const struct pol_env *env = j->mk.plan ? plan_env(j->mk.plan) : NULL;

	for (size_t i = 0; env && name && i < env->n_types; i++)
		if (!strcmp(env->types[i].name, name))
			return env->types[i].od_uusd;
	return 0;
}

/* Keep the on-demand price of the fleet's instance-time. */
static void od_account(struct job *j, const struct ctrl_event *ev)
{
	if (ev->kind == CTRL_EV_LAUNCH) {
		if (j->bk.n_od_open == j->bk.cap_od_open) {
			size_t cap = j->bk.cap_od_open ? 2 * j->bk.cap_od_open : 16;
			struct od_run *a = px_reallocarray(j->bk.od_open, cap,
							   sizeof *a);

			if (!a)
				return; /* a figure short, nothing worse */
			j->bk.od_open = a;
			j->bk.cap_od_open = cap;
		}
		struct od_run *r = &j->bk.od_open[j->bk.n_od_open++];

		r->id = ev->instance;
		billing_acct_start(&r->a, j->mk.billing, NULL,
				   od_price(j, ev->type), ev->t_s);
		return;
	}
	if (ev->kind != CTRL_EV_RELEASE && ev->kind != CTRL_EV_EVICTION)
		return;
	for (size_t i = 0; i < j->bk.n_od_open; i++) {
		struct od_run *r = &j->bk.od_open[i];

		if (r->id != ev->instance)
			continue;
		/* on demand, nobody evicts it: we end it then */
		j->bk.od_fleet_uusd += billing_acct_end(&r->a, ev->t_s,
						     BILLING_END_USER);
		*r = j->bk.od_open[--j->bk.n_od_open];
		return;
	}
}

/* That figure up to market time t, in USD. */
double job_od_fleet_usd(struct job *j, int64_t t)
{
	int64_t u = j->bk.od_fleet_uusd;

	for (size_t i = 0; i < j->bk.n_od_open; i++)
		if (t >= j->bk.od_open[i].a.start_s)
			u += billing_acct_advance(&j->bk.od_open[i].a, t);
	return (double)u / 1e6 + j->bk.od_before_usd;
}

enum px_err job_books_record(struct job *j, const struct ctrl_event *ev,
			     struct px_error *err)
{
	struct store *st = j->js->s.st;
	enum px_err e = store_begin(st, err);

	od_account(j, ev);
	/* an on-demand instance's bill (no zone): /metrics splits the cost */
	if (!ev->zone && ev->instance && (ev->kind == CTRL_EV_RELEASE ||
	    ev->kind == CTRL_EV_EVICTION || ev->kind == CTRL_EV_BILL_END))
		j->bk.od_cost_uusd += ev->amount_uusd;
	if (e == PX_OK)
		e = journal_event(j->run.jn, ev, err);
	if (e == PX_OK)
		e = store_commit(st, err);
	else
		store_rollback(st);
	return e;
}

void job_books_resume(struct job *j, int64_t cost_before, int64_t od_cost)
{
	/* the ledger so far, closed bills only: this life's controller
	 * counts from 0 */
	j->bk.cost_before_uusd = cost_before;
	j->bk.od_cost_uusd = od_cost;
}

void job_books_resume_event(struct job *j, const char *kind, json_t *o)
{
	json_t *v = json_object_get(o, "fleet_ondemand_usd");

	if (!strcmp(kind, "eviction"))
		j->bk.evictions_before++;
	else if (!strcmp(kind, "progress") && json_is_number(v) &&
		 json_number_value(v) >= 0)
		j->bk.od_before_usd = json_number_value(v);
}

void job_books_close(struct job *j, int64_t cost)
{
	struct px_error err = {0};

	if (store_job_cost(j->js->s.st, j->id, &j->bk.cost_uusd, &err) !=
	    PX_OK)
		j->bk.cost_uusd = cost;
	if (j->run.c)
		j->bk.final_evictions = ctrl_stats(j->run.c)->evictions;
}

int64_t job_books_final(struct job *j)
{
	struct px_error err = {0};
	int64_t before = j->bk.cost_uusd;

	if (store_job_cost(j->js->s.st, j->id, &j->bk.cost_uusd, &err) !=
	    PX_OK)
		log_err("job %" PRId64 ": its cost: %s", j->id, err.msg);
	return j->bk.cost_uusd - before;
}

void job_books_free(struct job *j)
{
	free(j->bk.od_open);
	j->bk.od_open = NULL;
	j->bk.n_od_open = j->bk.cap_od_open = 0;
}

int64_t job_books_notified(struct job *j)
{
	return ++j->bk.notify_seq;
}

/* The on-demand price of the job's reference type in its region, from its
 * on-demand table (the daemon's when it names none), micro-USD per hour;
 * 0 when not known.  For a job without its plan (ended, or read from the
 * store): a table is a few kB. */
int64_t jobs_req_ref_od_uusd(struct jobs *js, const struct job_request *q)
{
	const char *path = q->world.ondemand[0] ? q->world.ondemand :
			   js->s.ondemand;
	const struct ondemand_entry *e;
	struct ondemand_table t;
	struct px_error err = {0};
	int64_t v = 0;

	/* on the loop's thread, a path a submitter named: a regular file
	 * only, opened without blocking, small (a FIFO put there since
	 * must not stop the daemon) */
	struct px_guard g = { .ngroups = -1, .max_bytes = 1 << 20,
			      .deadline_us = px_now_mono_us() + 1000000 };
	enum px_err r;

	memset(&t, 0, sizeof t);
	if (!path || !path[0])
		return 0;
	px_guard_set(&g);
	r = ondemand_table_load(path, &t, &err);
	px_guard_set(NULL);
	if (r != PX_OK)
		return 0;
	e = ondemand_table_find(&t, q->spec.region, q->spec.reference_type);
	if (e)
		v = e->uusd_per_hour;
	ondemand_table_release(&t);
	return v;
}

/* The on-demand price of the reference type: what the work would cost on
 * on-demand instances of that type, at one reference hour per hour. */
int64_t job_ref_od_uusd(struct job *j)
{
	const struct pol_env *env = j->mk.plan ? plan_env(j->mk.plan) : NULL;

	/* kept once known: a trimmed job reads no file again */
	if (env)
		j->bk.ref_od = env->types[env->ref_type].od_uusd;
	else if (!j->bk.ref_od)
		j->bk.ref_od = jobs_req_ref_od_uusd(j->js, &j->req);
	return j->bk.ref_od;
}

/* The whole job's cost: the ledger of the daemon's earlier lives and this
 * controller's bills while it runs; once ended, the ledger's sum. */
int64_t job_cost_uusd(struct job *j)
{
	if (j->run.c)
		return j->bk.cost_before_uusd + ctrl_cost(j->run.c, j->run.t);
	if (j->run.state == STORE_JOB_QUEUED || j->run.state == STORE_JOB_RUNNING)
		return j->bk.cost_before_uusd;
	return j->bk.cost_uusd;
}

/* Its evictions in every life: the store's events, else what this daemon
 * counted. */
int64_t job_evictions(struct job *j)
{
	const struct ctrl_stats *cs = j->run.c ? ctrl_stats(j->run.c) : NULL;
	struct px_error err = {0};
	int64_t n;

	if (store_event_count(j->js->s.st, j->id, "eviction", &n, &err) ==
	    PX_OK)
		return n;
	return j->bk.evictions_before + (cs ? cs->evictions : j->bk.final_evictions);
}
