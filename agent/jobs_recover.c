/* jobs_recover.c -- restart (docs/jobs.md, "Restart"): the store's queued
 * and running jobs of every world this daemon runs are taken up again;
 * where a world's instances end with the daemon, those the store has
 * open are closed and charged up to the job's last recorded instant. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/log.h"
#include "jobs_int.h"

struct recover {
	struct job *j;
	int64_t first_us, last_us;
	int64_t first_start_s;   /* the earliest "start" event's market_start */
	double spent_uusd;
};

/* A "start" event: the job's market time when a life of it started
 * (its market_start, else the event's own time).  The earliest is the
 * first start, which finish_by_hours counts from in every life: kept,
 * so that a restarted daemon does not move the goal. */
static void rec_start(struct recover *r, const struct store_event *ev)
{
	json_t *p = json_loadb(ev->detail, ev->detail_len, 0, NULL);
	json_t *v = json_is_object(p) ? json_object_get(p, "market_start") :
		    NULL;
	int64_t s = json_is_integer(v) && json_integer_value(v) > 0 ?
		    (int64_t)json_integer_value(v) : ev->at_us / 1000000;

	json_decref(p);
	if (s > 0 && (!r->first_start_s || s < r->first_start_s)) {
		r->first_start_s = s;
		job_first_start_at(r->j, s);
	}
}

static enum px_err rec_event(const struct store_event *ev, void *ctx)
{
	struct recover *r = ctx;

	if (!strcmp(ev->kind, "progress") || !strcmp(ev->kind, "scaling")) {
		json_t *p = json_loads(ev->detail, 0, NULL);

		/* each progress event carries the earlier lives' figures,
		 * the last scaling event the measured scaling so far */
		if (!strcmp(ev->kind, "scaling"))
			job_scaling_take(r->j, p);
		else
			job_progress_resume_event(r->j, p);
		job_books_resume_event(r->j, ev->kind, p);
		json_decref(p);
	} else if (!strcmp(ev->kind, "eviction")) {
		job_books_resume_event(r->j, ev->kind, NULL);
	} else if (!strcmp(ev->kind, "start")) {
		rec_start(r, ev);
	} else if (!strcmp(ev->kind, "lease")) {
		json_t *p = json_loads(ev->detail, 0, NULL);

		/* the pool's: the job's share (what the pool learnt is
		 * its own event's, jobs_pool_recover) */
		if (p)
			job_pool_resume_event(r->j, ev->kind, p);
		json_decref(p);
	}
	if (!r->first_us || ev->at_us < r->first_us)
		r->first_us = ev->at_us;
	if (ev->at_us > r->last_us)
		r->last_us = ev->at_us;
	return PX_OK;
}

/* An instance a killed daemon left open, of a world whose instances end
 * with the daemon: ended at the job's last recorded instant, charged
 * under the job's billing for its run, and what is left of it ended by
 * its world. */
static enum px_err rec_instance(const struct store_open_instance *in,
				void *ctx)
{
	struct recover *r = ctx;
	struct job *j = r->j;
	struct store *st = j->js->s.st;
	struct billing_acct a;
	struct px_error err = {0};
	int64_t end_s = r->last_us / 1000000, start_s = in->start_us / 1000000;
	int mi = in->zone[0] ? market_set_find(&j->mk.ms, in->zone, in->type) : -1;
	const struct ondemand_entry *od = ondemand_table_find(&j->mk.od,
		j->req.spec.region, in->type);
	int64_t amount = 0;
	enum px_err e;

	if (j->wops->end_orphan)
		j->wops->end_orphan(in->cloud_id);
	if (end_s < start_s)
		end_s = start_s;
	if (in->zone[0] && mi >= 0) {
		billing_acct_start(&a, j->mk.billing, &j->mk.ms.v[mi], 0, start_s);
		amount = billing_acct_end(&a, end_s, BILLING_END_USER);
	} else if (!in->zone[0] && od) {
		billing_acct_start(&a, j->mk.billing, NULL, od->uusd_per_hour,
				   start_s);
		amount = billing_acct_end(&a, end_s, BILLING_END_USER);
	}
	e = store_instance_end(st, in->id, end_s * 1000000, "lost", &err);
	if (e == PX_OK)
		e = store_ledger_add(st, j->id, in->id, in->start_us,
				     end_s * 1000000, amount,
				     "closed by a restarted proteusd", &err);
	if (e == PX_OK)
		e = store_event_add(st, j->id, in->id, end_s * 1000000, "lost",
				    "its node died with proteusd", &err);
	if (e != PX_OK)
		log_err("job %" PRId64 ": instance %" PRId64 ": %s", j->id,
			in->id, err.msg);
	return e;
}

struct rec_list {
	struct jobs *js;
	int64_t ids[1024];
	size_t n;
};

static enum px_err rec_job(const struct store_job *sj, void *ctx)
{
	struct rec_list *l = ctx;

	const struct world_ops *o = world_ops_by_name(sj->world);

	/* jobs of every world the daemon runs (not simulate's) */
	if (!o || !o->create ||
	    (sj->state != STORE_JOB_QUEUED && sj->state != STORE_JOB_RUNNING))
		return PX_OK;
	if (l->n < sizeof l->ids / sizeof l->ids[0])
		l->ids[l->n++] = sj->id;
	return PX_OK;
}

struct rec_spec {
	char *text;
	enum store_job_state state;
	char world[STORE_WORLD_MAX];
	int64_t created_us;
};

static enum px_err rec_spec(const struct store_job *sj, void *ctx)
{
	struct rec_spec *r = ctx;

	r->state = sj->state;
	r->created_us = sj->created_us;
	snprintf(r->world, sizeof r->world, "%s", sj->world);
	r->text = strndup(sj->spec_json, sj->spec_len);
	return r->text ? PX_OK : PX_ENOMEM;
}

static void recover_one(struct jobs *js, int64_t id)
{
	struct store_job_filter f = { .id = id };
	struct rec_spec rs = {0};
	struct recover r = {0};
	struct px_error err = {0};
	int64_t spent = 0, od_cost = 0;
	char name[32];
	struct job *j;
	enum px_err e = PX_ENOMEM;

	snprintf(name, sizeof name, "job %" PRId64, id);
	j = job_new(js, name);
	if (!j) {
		log_err("job %" PRId64 ": out of memory", id);
		return;
	}
	j->id = id;
	e = store_jobs_each(js->s.st, &f, rec_spec, &rs, &err);
	if (e == PX_OK)
		e = jobreq_parse(rs.text, strlen(rs.text), name, &j->req, &err);
	/* the world it ran on is the store's (a spec that names none ran
	 * on the daemon's default of its day) */
	snprintf(j->req.world.name, sizeof j->req.world.name, "%s", rs.world);
	job_pool_came(j, rs.created_us);
	if (e == PX_OK)
		e = job_world(j, name, &err);
	if (e == PX_OK)
		e = job_fit(j, name, &err);
	free(rs.text);
	job_take_state(j, rs.state);
	/* the files it names are read from the daemon's copies, made at
	 * submit with the submitter's rights (jobs_inputs.c): never the
	 * submitter's paths again, with the daemon's rights */
	if (e == PX_OK)
		e = job_inputs_use_kept(j, j->run.state == STORE_JOB_QUEUED ||
					j->run.state == STORE_JOB_RUNNING,
					&err);
	else
		(void)job_inputs_use_kept(j, false, &err);
	if (e == PX_OK) {
		/* regular files, bounded; its copies are the daemon's own */
		struct px_guard g;

		job_guard(&g);
		g.own_ok = true;
		px_guard_set(&g);
		e = job_load_market(j, &err);
		px_guard_set(NULL);
	}
	r.j = j;
	if (e == PX_OK)
		e = store_events_each(js->s.st, id, rec_event, &r, &err);
	/* instances that end with the daemon are closed here; a world whose
	 * instances outlive it takes them up itself (world_setup.resume) */
	if (e == PX_OK && j->run.state == STORE_JOB_RUNNING &&
	    !j->wops->instances_outlive_daemon) {
		if (!r.last_us)
			r.last_us = j->mk.start_s * 1000000;
		e = store_begin(js->s.st, &err);
		if (e == PX_OK)
			e = store_open_instances_each(js->s.st, id,
						      rec_instance, &r, &err);
		if (e == PX_OK)
			e = store_commit(js->s.st, &err);
		else
			store_rollback(js->s.st);
	}
	if (e == PX_OK)
		e = store_job_cost(js->s.st, id, &spent, &err);
	if (e == PX_OK)
		e = store_job_cost_ondemand(js->s.st, id, &od_cost, &err);
	job_books_resume(j, spent, od_cost);
	j->next = js->list;
	js->list = j;
	if (e != PX_OK) {
		job_set_why(j, "cannot resume: %s", err.msg);
		if (j->run.state == STORE_JOB_RUNNING || j->run.state ==
		    STORE_JOB_QUEUED)
			job_end(j, STORE_JOB_FAILED, j->run.why);
		job_trim(j);
		return;
	}
	if (j->run.state == STORE_JOB_RUNNING) {
		/* what is left of the budget and the deadline */
		if (j->req.spec.budget_uusd >= 0)
			j->req.spec.budget_uusd = j->req.spec.budget_uusd >
				spent ? j->req.spec.budget_uusd - spent : 0;
		if (j->req.spec.deadline_hours > 0) {
			double used = (double)(r.last_us - r.first_us) / 3.6e9;

			j->req.spec.deadline_hours = j->req.spec.deadline_hours
				> used + 1.0 / 3600 ?
				j->req.spec.deadline_hours - used : 1.0 / 3600;
		}
		/* back to queued, started by the pump like a new one, its
		 * workload's driver restarted, its measured scaling on */
		job_resume_at(j, r.last_us / 1000000);
		job_progress_resumed(j);
		log_notice("job %" PRId64 ": resuming at market time %"
			   PRId64 " after a restart", id, j->run.t);
	}
	job_notify(j, "recovered", "proteusd restarted and took the job up "
		   "again", NULL);
	pump_soon(js);
}

enum px_err jobs_recover(struct jobs *js, struct px_error *err)
{
	struct rec_list *l = calloc(1, sizeof *l);

	if (!l)
		return px_errorf(err, PX_ENOMEM, "out of memory");
	jobs_pool_recover(js);
	if (store_jobs_each(js->s.st, NULL, rec_job, l, err) != PX_OK) {
		free(l);
		return err->code;
	}
	for (size_t i = 0; i < l->n; i++)
		recover_one(js, l->ids[i]);
	free(l);
	/* then each world the daemon is set up for looks at what it left
	 * (ec2: instances of jobs that are over are terminated) */
	for (size_t k = 0; world_ops_at(k); k++) {
		const struct world_ops *o = world_ops_at(k);
		struct px_error e2 = {0};

		if (!o->host_start || (o->check &&
		    o->check(js->s.cfg, &e2) != PX_OK))
			continue;
		if (o->host_start(&js->host, &e2) != PX_OK)
			log_warn("the %s world's start: %s", o->name, e2.msg);
	}
	return PX_OK;
}
