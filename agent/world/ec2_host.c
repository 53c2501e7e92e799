/* ec2_host.c -- the ec2 world's daemon-wide state (ec2_world_int.h):
 * one EC2 client for every job's world, the terminations it retries until
 * EC2 confirms, the trainer port slots, the enrollment endpoint, and the
 * start's sweep of the daemon's tagged instances.
 *
 * Terminations belong to the host: it retries them until EC2 confirms,
 * whatever happened to the job.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/log.h"
#include "../../db/store.h"
#include "../curl_loop.h"
#include "ec2_world_int.h"

#pragma GCC diagnostic ignored "-Wformat-truncation"

#define TERM_BATCH 500          /* ids per TerminateInstances */
#define TERM_RETRY_MS 5000      /* a failed termination is tried again */

static uint64_t mono_us(void)
{
	return px_now_mono_us();
}

/* Market seconds per real second: 1, or the fake's ec2_clock_speedup. */
double ec2h_clock_speedup(const struct proteusd_config *cfg)
{
	return cfg->ec2_clock_speedup > 1 ? (double)cfg->ec2_clock_speedup : 1;
}

/* A client's settings under cfg (the endpoint key, else the client's
 * environment fallback), for creds. */
void ec2h_client_config(const struct proteusd_config *cfg,
			const char *region, struct awscred_provider *creds,
			struct ec2_config *ec)
{
	ec->region = region;
	ec->endpoint = cfg->ec2_endpoint[0] ? cfg->ec2_endpoint : NULL;
	ec->creds = creds;
}

int64_t ec2_world_now(const struct proteusd_config *cfg)
{
	double k = ec2h_clock_speedup(cfg);
	double now = (double)px_now_wall_us() / 1e6;
	double o = cfg->ec2_clock_origin > 0 ? (double)cfg->ec2_clock_origin
					     : now;

	return (int64_t)floor(o + (now - o) * k);
}

static void host_term_arm(struct ec2_host *h);

static void term_done(enum px_err rc, const struct px_error *err,
		      const struct ec2_aws_error *aws, void *ctx);

struct term_call {
	struct ec2_host *h;
	char (*ids)[EC2_ID_MAX];
	size_t n;
};

/* Send what is due, TERM_BATCH ids per call. */
static void host_term_send(struct ec2_host *h)
{
	uint64_t now = mono_us();
	struct term_call *tc = NULL;
	const char *ids[TERM_BATCH];
	struct px_error err = {0};
	size_t n = 0;

	for (size_t i = 0; i < h->dn; i++) {
		struct doomed *d = &h->dv[i];

		if (d->in_flight || d->due_us > now)
			continue;
		if (!tc) {
			tc = calloc(1, sizeof *tc);
			if (tc)
				tc->ids = calloc(TERM_BATCH, sizeof *tc->ids);
			if (!tc || !tc->ids) {
				free(tc);
				return;
			}
			tc->h = h;
		}
		memcpy(tc->ids[n], d->id, sizeof tc->ids[n]);
		ids[n++] = tc->ids[tc->n++];
		d->in_flight = true;
		if (n == TERM_BATCH)
			break;
	}
	if (!tc)
		return;
	if (ec2_terminate_instances_start(h->c, ids, n, term_done, tc, &err)
	    != PX_OK) {
		log_err("ec2: TerminateInstances: %s (tried again in %d s)",
			err.msg, TERM_RETRY_MS / 1000);
		for (size_t i = 0; i < h->dn; i++)
			for (size_t k = 0; k < tc->n; k++)
				if (!strcmp(h->dv[i].id, tc->ids[k])) {
					h->dv[i].in_flight = false;
					h->dv[i].due_us = now + TERM_RETRY_MS *
							  1000ull;
				}
		free(tc->ids);
		free(tc);
	}
}

static int64_t term_timer(struct loop *l, int64_t id, void *ctx)
{
	struct ec2_host *h = ctx;

	(void)l;
	(void)id;
	h->term_timer = -1;
	host_term_send(h);
	host_term_arm(h);
	return LOOP_NOMORE;
}

/* The timer for the next termination due (none while every one is on the
 * wire). */
static void host_term_arm(struct ec2_host *h)
{
	uint64_t next = UINT64_MAX, now = mono_us();
	int64_t ms;

	for (size_t i = 0; i < h->dn; i++)
		if (!h->dv[i].in_flight && h->dv[i].due_us < next)
			next = h->dv[i].due_us;
	if (h->term_timer > 0)
		(void)loop_timer_del(h->wh->loop, h->term_timer);
	h->term_timer = -1;
	if (next == UINT64_MAX)
		return;
	ms = next > now ? (int64_t)((next - now + 999) / 1000) : 0;
	h->term_timer = loop_timer_add(h->wh->loop, ms, term_timer, h);
}

static void term_done(enum px_err rc, const struct px_error *err,
		      const struct ec2_aws_error *aws, void *ctx)
{
	struct term_call *tc = ctx;
	struct ec2_host *h = tc->h;
	/* an id EC2 does not know is as good as terminated */
	bool gone = rc == PX_OK || (aws && !strncmp(aws->code,
				    "InvalidInstanceID.NotFound", 26));

	if (rc == PX_ECANCELED) {   /* the client is being freed */
		free(tc->ids);
		free(tc);
		return;
	}
	if (!gone)
		log_warn("ec2: TerminateInstances of %zu instance%s: %s (tried "
			 "again in %d s)", tc->n, tc->n == 1 ? "" : "s",
			 err ? err->msg : "failed", TERM_RETRY_MS / 1000);
	for (size_t k = 0; k < tc->n; k++) {
		for (size_t i = 0; i < h->dn; i++) {
			if (strcmp(h->dv[i].id, tc->ids[k]))
				continue;
			if (gone) {
				h->dv[i] = h->dv[--h->dn];
			} else {
				h->dv[i].in_flight = false;
				h->dv[i].due_us = mono_us() + TERM_RETRY_MS *
						  1000ull;
			}
			break;
		}
	}
	free(tc->ids);
	free(tc);
	host_term_arm(h);
}

static struct doomed *doom(struct ec2_host *h, const char *id,
			   int64_t delay_ms);

/* Terminate instance id delay_ms from now (again and again until EC2
 * confirms).  Asking again for one already doomed brings it forward. */
void ec2h_terminate(struct ec2_host *h, const char *id,
		    int64_t delay_ms)
{
	(void)doom(h, id, delay_ms);
}

void ec2h_terminate_let_go(struct ec2_host *h, const char *id,
			   const char *type, bool spot)
{
	struct doomed *d = doom(h, id, 0);

	if (!d)
		return;
	snprintf(d->type, sizeof d->type, "%s", type);
	d->spot = spot;
}

/* The doomed entry of id (made, or brought forward), the timer armed;
 * NULL: none (no id, or out of memory). */
static struct doomed *doom(struct ec2_host *h, const char *id,
			   int64_t delay_ms)
{
	uint64_t due = mono_us() + (uint64_t)(delay_ms > 0 ? delay_ms : 0) *
				   1000ull;
	struct doomed *d;

	if (!id[0])
		return NULL;
	for (size_t i = 0; i < h->dn; i++)
		if (!strcmp(h->dv[i].id, id)) {
			if (due < h->dv[i].due_us)
				h->dv[i].due_us = due;
			host_term_arm(h);
			return &h->dv[i];
		}
	if (h->dn == h->dcap) {
		size_t cap = h->dcap ? 2 * h->dcap : 16;
		struct doomed *v = px_reallocarray(h->dv, cap, sizeof *v);

		if (!v) {
			log_err("ec2: out of memory: instance %s is not "
				"terminated", id);
			return NULL;
		}
		h->dv = v;
		h->dcap = cap;
	}
	d = &h->dv[h->dn++];
	memset(d, 0, sizeof *d);
	snprintf(d->id, sizeof d->id, "%s", id);
	d->due_us = due;
	host_term_arm(h);
	return d;
}

/* The enrollment endpoint, on trainer_ports' first port (slot 0, kept
 * from the nodes): the same in every life of the daemon, as the user
 * data of instances that outlive it says. */
static enum px_err host_enroll_start(struct ec2_host *h, struct px_error *err)
{
	const struct proteusd_config *cfg = h->wh->cfg;
	struct enroll_owner o = ec2w_enroll_owner;
	char url[CONFIG_HOST_MAX + 32];

	if (!h->n_slots)
		return px_errorf(err, PX_ETOOBIG, "trainer_ports: no port for "
				 "the enrollment endpoint");
	h->slots[0] = 1;
	o.ctx = h;
	snprintf(url, sizeof url, "tcp://%s:%d", h->bind, ec2h_slot_port(h, 0));
	return enroll_srv_new(h->wh->loop, url, cfg->ec2_identity_cert,
			      cfg->region, &o, &h->es, err);
}

/* The host's state, made on first use. */
enum px_err ec2h_get(struct world_host *wh, struct ec2_host **ret,
		     struct px_error *err)
{
	const struct proteusd_config *cfg = wh->cfg;
	struct awscred_opts co = {0};
	struct ec2_config ec = {0};
	struct ec2_host *h = wh->ec2;
	enum px_err e;

	if (h) {
		*ret = h;
		return PX_OK;
	}
	e = config_ec2_check(cfg, err);
	if (e != PX_OK)
		return e;
	h = calloc(1, sizeof *h);
	if (!h)
		return px_errorf(err, PX_ENOMEM, "out of memory");
	h->wh = wh;
	h->term_timer = -1;
	h->stride = 3;           /* a role's REP, PULL and PUB */
	h->n_slots = (size_t)(cfg->trainer_port_hi - cfg->trainer_port_lo +
			      1) / (size_t)h->stride;
	h->slots = calloc(h->n_slots ? h->n_slots : 1, 1);
	if (!h->slots) {
		free(h);
		return px_errorf(err, PX_ENOMEM, "out of memory");
	}
	e = config_head_bind(cfg, h->bind, sizeof h->bind, err);
	if (e == PX_OK)
		e = store_daemon_id(wh->st, h->daemon_id, sizeof h->daemon_id,
				    err);
	if (e == PX_OK)
		e = awscred_provider_new(&co, &h->creds, err);
	ec2h_client_config(cfg, cfg->region, h->creds, &ec);
	/* an attempt that has not answered in ec2_call_timeout_s (10 s) is
	 * given up and tried again (the SDKs' 30 s is for one caller
	 * waiting; a daemon has a fleet to tend) */
	ec.timeout_us = (uint64_t)cfg->ec2_call_timeout_s * 1000000ull;
	if (e == PX_OK)
		e = curl_loop_new_ec2(wh->loop, &ec, &h->el, err);
	if (e == PX_OK)
		e = ec2_client_new(&ec, &h->c, err);
	if (e == PX_OK)
		e = host_enroll_start(h, err);
	if (e != PX_OK) {
		ec2_client_free(h->c);
		curl_loop_free(h->el);
		awscred_provider_free(h->creds);
		free(h->slots);
		free(h);
		return e;
	}
	curl_loop_bind_ec2(h->el, h->c);
	wh->ec2 = h;
	*ret = h;
	log_notice("ec2: endpoint %s, region %s, daemon id %s",
		   ec2_client_endpoint(h->c), cfg->region, h->daemon_id);
	return PX_OK;
}

void ec2_world_host_free(struct world_host *wh)
{
	struct ec2_host *h = wh ? wh->ec2 : NULL;

	if (!h)
		return;
	if (h->dn)
		log_warn("ec2: %zu termination%s not confirmed at exit (the "
			 "next start terminates them: they carry this daemon's "
			 "tag)", h->dn, h->dn == 1 ? "" : "s");
	if (h->term_timer > 0)
		(void)loop_timer_del(wh->loop, h->term_timer);
	enroll_srv_free(h->es);
	ec2_client_free(h->c);   /* calls in flight: PX_ECANCELED */
	curl_loop_free(h->el);
	awscred_provider_free(h->creds);
	free(h->dv);
	free(h->slots);
	free(h);
	wh->ec2 = NULL;
}

/* n free port slots in a row (-1: none), taken; an adopted node asks
 * for its own (want) back.  Slot k's first port is lo + k * stride. */
int ec2h_slot_take(struct ec2_host *h, int n, int want)
{
	size_t run = 0;

	if (n < 1)
		n = 1;
	/* slot 0 is the enrollment endpoint's, whatever an earlier life
	 * kept */
	if (want > 0 && (size_t)want + (size_t)n <= h->n_slots) {
		for (int k = 0; k < n; k++)
			h->slots[want + k] = 1;
		return want;
	}
	for (size_t i = 0; i < h->n_slots; i++) {
		run = h->slots[i] ? 0 : run + 1;
		if (run == (size_t)n) {
			size_t first = i + 1 - (size_t)n;

			memset(h->slots + first, 1, (size_t)n);
			return (int)first;
		}
	}
	return -1;
}

void ec2h_slot_give(struct ec2_host *h, int slot, int n)
{
	for (int k = 0; k < n && slot >= 0; k++)
		if ((size_t)(slot + k) < h->n_slots)
			h->slots[slot + k] = 0;
}

int ec2h_slot_port(const struct ec2_host *h, int slot)
{
	return (int)h->wh->cfg->trainer_port_lo + slot * h->stride;
}

struct live_job {
	bool live;
};

static enum px_err job_state(const struct store_job *sj, void *ctx)
{
	struct live_job *lj = ctx;

	lj->live = sj->state == STORE_JOB_QUEUED ||
		   sj->state == STORE_JOB_RUNNING;
	return PX_OK;
}

struct sweep_call {
	struct world_host *wh;
};

static void sweep_done(enum px_err rc, struct ec2_instance_list *l,
		       const struct px_error *err,
		       const struct ec2_aws_error *aws, void *ctx)
{
	struct sweep_call *sc = ctx;
	struct ec2_host *h = sc->wh->ec2;
	size_t n = 0;

	(void)aws;
	if (rc == PX_ECANCELED || !h) {
		free(sc);
		return;
	}
	if (rc != PX_OK) {
		log_warn("ec2: the start's sweep: DescribeInstances: %s (the "
			 "daemon's instances of ended jobs stay until the next "
			 "start)", err ? err->msg : "failed");
		free(sc);
		return;
	}
	for (size_t i = 0; i < l->n; i++) {
		const char *job = ec2w_tag_of(&l->v[i], TAG_JOB);
		struct store_job_filter f = {
			.id = job ? strtoll(job, NULL, 10) : 0 };
		struct live_job lj = {0};
		struct px_error e2 = {0};

		if (!ec2w_alive(l->v[i].state) &&
		    strcmp(l->v[i].state, "stopped") &&
		    strcmp(l->v[i].state, "stopping"))
			continue;
		if (f.id > 0 && store_jobs_each(sc->wh->st, &f, job_state, &lj,
						&e2) == PX_OK && lj.live)
			continue;
		log_notice("ec2: instance %s (job %s) belongs to no running "
			   "job of this daemon: terminating it", l->v[i].id,
			   job ? job : "none");
		ec2h_terminate(h, l->v[i].id, 0);
		n++;
	}
	if (n)
		log_notice("ec2: the start's sweep terminates %zu instance%s",
			   n, n == 1 ? "" : "s");
	free(sc);
}

enum px_err ec2_world_sweep(struct world_host *wh, struct px_error *err)
{
	struct ec2_host *h;
	struct sweep_call *sc;
	const char *dv[1];
	struct ec2_filter f = { .name = "tag:" TAG_DAEMON, .n_values = 1 };
	enum px_err e = ec2h_get(wh, &h, err);

	if (e != PX_OK)
		return e;
	dv[0] = h->daemon_id;
	f.values = dv;
	sc = calloc(1, sizeof *sc);
	if (!sc)
		return px_errorf(err, PX_ENOMEM, "out of memory");
	sc->wh = wh;
	e = ec2_describe_instances_start(h->c, NULL, 0, &f, 1, false,
					 sweep_done, sc, err);
	if (e != PX_OK)
		free(sc);
	return e;
}
