/* ec2.c -- the `ec2` world (ec2.h; docs/ec2-world.md).
 *
 * Everything here runs on proteusd's loop and never blocks on EC2: every
 * call is started with the client's asynchronous operations and answered
 * from the loop.  What an answer changes for the controller is queued
 * (struct evq) and handed over in run_due, in time order, like the local
 * world's events, so that the controller sees one instant at a time.
 *
 * Calls in flight outlive the world that made them (a job can end while
 * RunInstances is on the wire): each call's context is a struct call the
 * world lists; freeing the world detaches them (call->w = NULL), and a
 * detached RunInstances that succeeds has its instances terminated by the
 * host.  Terminations belong to the host: it retries them until EC2
 * confirms, whatever happened to the job.
 */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <netinet/in.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../cloudapi/awscred.h"
#include "../../cloudapi/ec2.h"
#include "../../common/log.h"
#include "../../db/store.h"
#include "../controller.h"
#include "../ec2_loop.h"
#include "../evq.h"
#include "../loop.h"
#include "ec2.h"
#include "enroll_srv.h"

#pragma GCC diagnostic ignored "-Wformat-truncation"

#define POLL_MS 3000            /* DescribeInstances of a job's tag */
#define JOIN_S 900              /* market s a running node has to join */
#define COOL_S 600              /* market s a market rests after a
				 * capacity or price refusal */
#define THROTTLE_COOL_S 60      /* every market, after throttling */
#define LOST_SLOT_S 300         /* real s a lost answer's ports stay
				 * taken (EC2 may list it yet) */
#define TERM_BATCH 500          /* ids per TerminateInstances */
#define TERM_RETRY_MS 5000      /* a failed termination is tried again */
#define TAG_DAEMON "proteus:daemon"
#define TAG_JOB "proteus:job"
#define TAG_ID "proteus:id"
#define TAG_SLOT "proteus:slot"
#define USER_DATA_MAX 16384     /* EC2's limit on user data */

/* ---------------------------------------------------------------- host */

struct doomed {
	char id[EC2_ID_MAX];
	uint64_t due_us;         /* monotonic */
	bool in_flight;
};

struct ec2_host {
	struct world_host *wh;
	struct awscred_provider *creds;
	struct ec2_loop *el;
	struct ec2_client *c;
	char daemon_id[40];
	struct doomed *dv;
	size_t dn, dcap;
	int64_t term_timer;      /* loop timer, -1 */
	uint8_t *slots;          /* trainer port slots in use */
	size_t n_slots;
	int stride;              /* ports per slot (a role's three) */
	int64_t throttled_until; /* market s: every acquire rests */
	struct enroll_srv *es;   /* nodes enroll here (slot 0's port) */
	struct ec2w *worlds;     /* the live ones, for enrollment */
	/* head_address as this host listens on it: the address a name
	 * resolved to when the host was made (nanomsg binds addresses
	 * only); nodes dial head_address itself */
	char bind[INET6_ADDRSTRLEN];
};

static uint64_t mono_us(void)
{
	return px_now_mono_us();
}

/* Market seconds per real second: 1, or the fake's ec2_clock_speedup. */
static double clock_speedup(const struct proteusd_config *cfg)
{
	return cfg->ec2_clock_speedup > 1 ? (double)cfg->ec2_clock_speedup : 1;
}

/* A client's settings under cfg (the endpoint key, else the client's
 * environment fallback), for creds. */
static void client_config(const struct proteusd_config *cfg,
			  const char *region, struct awscred_provider *creds,
			  struct ec2_config *ec)
{
	ec->region = region;
	ec->endpoint = cfg->ec2_endpoint[0] ? cfg->ec2_endpoint : NULL;
	ec->creds = creds;
}

int64_t ec2_world_now(const struct proteusd_config *cfg)
{
	double k = clock_speedup(cfg);
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

/* Terminate instance id delay_ms from now (again and again until EC2
 * confirms).  Asking again for one already doomed brings it forward. */
static void host_terminate(struct ec2_host *h, const char *id,
			   int64_t delay_ms)
{
	uint64_t due = mono_us() + (uint64_t)(delay_ms > 0 ? delay_ms : 0) *
				   1000ull;

	if (!id[0])
		return;
	for (size_t i = 0; i < h->dn; i++)
		if (!strcmp(h->dv[i].id, id)) {
			if (due < h->dv[i].due_us)
				h->dv[i].due_us = due;
			host_term_arm(h);
			return;
		}
	if (h->dn == h->dcap) {
		size_t cap = h->dcap ? 2 * h->dcap : 16;
		struct doomed *v = px_reallocarray(h->dv, cap, sizeof *v);

		if (!v) {
			log_err("ec2: out of memory: instance %s is not "
				"terminated", id);
			return;
		}
		h->dv = v;
		h->dcap = cap;
	}
	memset(&h->dv[h->dn], 0, sizeof h->dv[h->dn]);
	snprintf(h->dv[h->dn].id, sizeof h->dv[h->dn].id, "%s", id);
	h->dv[h->dn++].due_us = due;
	host_term_arm(h);
}

static const struct enroll_owner enroll_owner_of;
static int slot_port(const struct ec2_host *h, int slot);

/* The enrollment endpoint, on trainer_ports' first port (slot 0, kept
 * from the nodes): the same in every life of the daemon, as the user
 * data of instances that outlive it says. */
static enum px_err host_enroll_start(struct ec2_host *h, struct px_error *err)
{
	const struct proteusd_config *cfg = h->wh->cfg;
	struct enroll_owner o = enroll_owner_of;
	char url[CONFIG_HOST_MAX + 32];

	if (!h->n_slots)
		return px_errorf(err, PX_ETOOBIG, "trainer_ports: no port for "
				 "the enrollment endpoint");
	h->slots[0] = 1;
	o.ctx = h;
	snprintf(url, sizeof url, "tcp://%s:%d", h->bind, slot_port(h, 0));
	return enroll_srv_new(h->wh->loop, url, cfg->ec2_identity_cert,
			      cfg->region, &o, &h->es, err);
}

/* The host's state, made on first use. */
static enum px_err host_get(struct world_host *wh, struct ec2_host **ret,
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
	client_config(cfg, cfg->region, h->creds, &ec);
	/* an attempt that has not answered in ec2_call_timeout_s (10 s) is
	 * given up and tried again (the SDKs' 30 s is for one caller
	 * waiting; a daemon has a fleet to tend) */
	ec.timeout_us = (uint64_t)cfg->ec2_call_timeout_s * 1000000ull;
	if (e == PX_OK)
		e = ec2_loop_new(wh->loop, &ec, &h->el, err);
	if (e == PX_OK)
		e = ec2_client_new(&ec, &h->c, err);
	if (e == PX_OK)
		e = host_enroll_start(h, err);
	if (e != PX_OK) {
		ec2_client_free(h->c);
		ec2_loop_free(h->el);
		awscred_provider_free(h->creds);
		free(h->slots);
		free(h);
		return e;
	}
	ec2_loop_bind(h->el, h->c);
	wh->ec2 = h;
	*ret = h;
	log_notice("ec2: endpoint %s, region %s, daemon id %s",
		   ec2_client_endpoint(h->c), cfg->region, h->daemon_id);
	return PX_OK;
}

void ec2_host_free(struct world_host *wh)
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
	ec2_loop_free(h->el);
	awscred_provider_free(h->creds);
	free(h->dv);
	free(h->slots);
	free(h);
	wh->ec2 = NULL;
}

/* n free port slots in a row (-1: none), taken; an adopted node asks
 * for its own (want) back.  Slot k's first port is lo + k * stride. */
static int slot_take(struct ec2_host *h, int n, int want)
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

static void slot_give(struct ec2_host *h, int slot, int n)
{
	for (int k = 0; k < n && slot >= 0; k++)
		if ((size_t)(slot + k) < h->n_slots)
			h->slots[slot + k] = 0;
}

static int slot_port(const struct ec2_host *h, int slot)
{
	return (int)h->wh->cfg->trainer_port_lo + slot * h->stride;
}

/* ---------------------------------------------------------------- world */

enum ew_kind {
	EW_PRICE = 0,   /* a market's price changed (id: env market) */
	EW_TICK,
	EW_HOUR,        /* the controller's timer (id: instance) */
	EW_END,
	EW_START,       /* the first decision, after a reconcile */
	EW_ANSWER,      /* an instance's state moved (id: instance) */
};

enum ist {
	I_ASKED = 0,    /* RunInstances on the wire */
	I_PENDING,      /* launched, not yet running */
	I_RUNNING,
	I_DONE,         /* ended: nothing more to tell the controller */
};

/* What the next EW_ANSWER of an instance tells the controller. */
enum itell {
	T_NONE = 0,
	T_LAUNCHED,
	T_REJECTED,
	T_READY,
	T_GONE,
	T_FAILED,
	T_WARNED,
};

struct inst {
	uint64_t id;
	int market, type;        /* env's */
	bool reliable;
	int64_t bid_uusd;
	char type_name[EC2_NAME_MAX];
	char zone[EC2_NAME_MAX];
	char token[EC2_TOKEN_MAX + 1];
	char iid[EC2_ID_MAX];
	enum ist st;
	bool released;           /* the controller let it go */
	bool lost_answer;        /* refused by a failure after which EC2
				  * may have launched it all the same */
	bool ready;
	int slot;
	int64_t asked_s;         /* market s of the request */
	int64_t launch_s;        /* EC2's launch time */
	int64_t running_s;       /* first seen running (market s) */
	int64_t end_s;           /* EC2's end time */
	uint64_t refused_us;     /* monotonic, when a lost answer came */
	int64_t warn_s;          /* its node read a notice: gone then */
	bool enrolled;           /* its node has the job's key */
	uint8_t enroll_pub[ENROLL_PUB_LEN]; /* the key it was given under */
	bool bill_end_told;      /* EC2's end time seen once (we ended it) */
	bool bill_end_due;       /* ... and not yet told the controller */
	bool end_by_ec2;         /* ... and EC2 ended it first (its spot
				  * interruption, before our terminate) */
	bool bill_late;          /* let go while asked: the controller
				  * keeps its bill until the answer, or a
				  * listing, says whether EC2 launched it */
	unsigned tell;           /* bits 1 << enum itell, to hand over */
	char why[256];
};

struct call;

#define EARLY_MAX 32

struct ec2w {
	struct world_setup s;
	struct ec2_host *h;
	struct ctrl *c;
	struct evq q;
	struct inst *v;
	size_t n, cap;
	int64_t step_t;
	int64_t *cool_s;         /* per env market: rests until */
	char (*cool_why)[160];
	int64_t poll_timer, price_timer;
	bool describing, pricing, started;
	bool run_over;           /* the job's run ended (end_leaves, just
				  * before its releases): releases end at
				  * once, and nothing is adopted any more */
	int64_t price_from_s;    /* the next poll asks from here */
	struct call *calls;      /* in flight */
	struct ctrl_progress start_p;
	char fatal[512];         /* set: run_due fails the job */
	int coord_slot;
	int node_slots;          /* slots a node's roles take */
	int64_t seen_poll;       /* DescribeInstances answers */
	/* nodes that joined while their instance was none of the world's
	 * (its RunInstances answer lost, the listing not yet seen): the
	 * adoption that follows finds them joined */
	uint64_t early[EARLY_MAX];
	unsigned n_early;
	struct ec2w *next_w;     /* the host's list */
	int64_t n_enrolled, n_refused;
};

struct call {
	struct call *next;
	struct ec2w *w;          /* NULL: the world is gone */
	struct ec2_host *h;
	uint64_t id;             /* the instance, for RunInstances */
	char token[EC2_TOKEN_MAX + 1];
	int kind;                /* 0 run, 1 describe, 2 prices */
	uint64_t sent_us;        /* monotonic, when it was started */
};

static struct call *call_new(struct ec2w *w, int kind, uint64_t id)
{
	struct call *k = calloc(1, sizeof *k);

	if (!k)
		return NULL;
	k->w = w;
	k->h = w->h;
	k->kind = kind;
	k->id = id;
	k->sent_us = px_now_mono_us();
	k->next = w->calls;
	w->calls = k;
	return k;
}

/* Unlist k from its world (if it still has one) and free it. */
static void call_end(struct call *k)
{
	if (k->w)
		for (struct call **p = &k->w->calls; *p; p = &(*p)->next)
			if (*p == k) {
				*p = k->next;
				break;
			}
	free(k);
}

static int64_t w_now(const struct ec2w *w)
{
	return ec2_world_now(w->h->wh->cfg);
}

/* The instant the world tells the controller of something now: its
 * clock, never before the step it last took. */
static int64_t tell_t(const struct ec2w *w)
{
	int64_t now = w_now(w);

	return now > w->step_t ? now : w->step_t;
}

static struct inst *inst_of(struct ec2w *w, uint64_t id)
{
	for (size_t i = 0; i < w->n; i++)
		if (w->v[i].id == id)
			return &w->v[i];
	return NULL;
}

static void joined_early_add(struct ec2w *w, uint64_t id)
{
	w->early[w->n_early++ % EARLY_MAX] = id;
}

/* Whether id's node joined before its instance was the world's (taken
 * off the list). */
static bool joined_early(struct ec2w *w, uint64_t id)
{
	unsigned n = w->n_early < EARLY_MAX ? w->n_early : EARLY_MAX;

	for (unsigned k = 0; k < n; k++)
		if (w->early[k] == id) {
			w->early[k] = 0;
			return true;
		}
	return false;
}

static struct inst *inst_by_iid(struct ec2w *w, const char *iid)
{
	for (size_t i = 0; i < w->n; i++)
		if (!strcmp(w->v[i].iid, iid))
			return &w->v[i];
	return NULL;
}

/* ---- enrollment (enroll_srv.h; docs/security.md) ---- */

static struct ec2w *world_of_job(struct ec2_host *h, int64_t job)
{
	for (struct ec2w *w = h->worlds; w; w = w->next_w)
		if (w->s.job_id == job && w->s.job_key)
			return w;
	return NULL;
}

static bool enroll_key_of(void *ctx, int64_t job, uint8_t key[ENROLL_KEY_LEN])
{
	struct ec2w *w = world_of_job(ctx, job);

	if (!w)
		return false;
	memcpy(key, w->s.job_key, ENROLL_KEY_LEN);
	return true;
}

/* The enrollment lasts the instance's life: in the store (the job's
 * events), so that a restarted daemon still refuses a second one. */
static void enrolled_keep(struct ec2w *w, struct inst *in)
{
	struct px_error err = {0};
	char pub[2 * ENROLL_PUB_LEN + 1], d[256];

	/* the controller's id in the detail (the event's instance column
	 * is the store's row, which the world does not know) */
	enroll_hex(in->enroll_pub, ENROLL_PUB_LEN, pub);
	snprintf(d, sizeof d, "{\"instance\": \"%s\", \"id\": %" PRIu64
		 ", \"pub\": \"%s\"}", in->iid, in->id, pub);
	if (store_event_add(w->h->wh->st, w->s.job_id, 0, px_now_wall_us(),
			    "enrolled", d, &err) != PX_OK)
		log_err("job %" PRId64 ": enrollment of %s not stored: %s",
			w->s.job_id, in->iid, err.msg);
}

/* Whether a launch of w has no instance id yet: on the wire, or refused
 * by a failure after which EC2 may have launched it all the same (its
 * ports are kept LOST_SLOT_S for the listing that may name it). */
static bool unanswered(const struct ec2w *w)
{
	uint64_t now = px_now_mono_us();

	for (size_t i = 0; i < w->n; i++) {
		const struct inst *in = &w->v[i];

		if (in->iid[0] || in->released)
			continue;
		if (in->st != I_DONE || (in->lost_answer && now -
		    in->refused_us < (uint64_t)LOST_SLOT_S * 1000000))
			return true;
	}
	return false;
}

static enum px_err enroll_admit(void *ctx, const struct enroll_request *r,
				const struct enroll_identity *id, char *why,
				size_t len, bool *retry)
{
	struct ec2w *w = world_of_job(ctx, r->job);
	struct inst *in = w ? inst_by_iid(w, id->instance_id) : NULL;
	uint8_t t[ENROLL_TICKET_LEN];
	struct px_error err = {0};

	*retry = false;
	if (!w) {
		*retry = true;
		snprintf(why, len, "job %" PRId64 " runs no ec2 world here now",
			 r->job);
		return PX_ENOENT;
	}
	if (!in) {
		/* a launch whose answer is not in yet (or lost), or a world
		 * that has not reconciled after a restart: the listing that
		 * names the instance comes within seconds.  Otherwise it is
		 * none of the job's. */
		*retry = !w->started || unanswered(w);
		snprintf(why, len, *retry ? "instance %s is not known yet" :
			 "instance %s was not launched for job %" PRId64,
			 id->instance_id, r->job);
		return PX_ENOENT;
	}
	if (in->released || in->st == I_DONE) {
		snprintf(why, len, "instance %s has been let go", in->iid);
		return PX_EINVAL;
	}
	if (enroll_ticket(w->s.job_key, w->s.job_id, in->id, t, &err) != PX_OK
	    || CRYPTO_memcmp(t, r->ticket, sizeof t)) {
		OPENSSL_cleanse(t, sizeof t);
		snprintf(why, len, "the ticket is not instance %s's", in->iid);
		return PX_EINVAL;
	}
	OPENSSL_cleanse(t, sizeof t);
	if (in->enrolled) {
		/* the same request again (its answer lost): the same key
		 * sealed to the same public key; anything else is a second
		 * enrollment of one instance, a replay */
		if (!memcmp(in->enroll_pub, r->pub, ENROLL_PUB_LEN))
			return PX_OK;
		snprintf(why, len, "instance %s has enrolled already (a "
			 "replayed document or a second node)", in->iid);
		return PX_EEXIST;
	}
	in->enrolled = true;
	memcpy(in->enroll_pub, r->pub, ENROLL_PUB_LEN);
	w->n_enrolled++;
	enrolled_keep(w, in);
	return PX_OK;
}

static void enroll_refused(void *ctx, int64_t job, const char *instance,
			   const char *why)
{
	struct ec2w *w = world_of_job(ctx, job);
	struct px_error err = {0};
	json_t *d;
	char *s;

	if (!w)
		return;
	/* stored for the first refusals only: a flood must not fill the
	 * store (each is counted) */
	if (w->n_refused++ >= ENROLL_LOG_FIRST)
		return;
	d = json_pack("{s:s, s:s}", "instance", instance, "reason", why);
	s = d ? json_dumps(d, JSON_COMPACT) : NULL;
	if (s)
		(void)store_event_add(w->h->wh->st, job, 0, px_now_wall_us(),
				      "enroll_refused", s, &err);
	free(s);
	json_decref(d);
}

static const struct enroll_owner enroll_owner_of = {
	.key_of = enroll_key_of,
	.admit = enroll_admit,
	.refused = enroll_refused,
};

struct enrolled_find {
	uint64_t id;
	uint8_t pub[ENROLL_PUB_LEN];
	bool found;
};

static enum px_err enrolled_each(const struct store_event *ev, void *ctx)
{
	struct enrolled_find *f = ctx;
	json_t *d;

	if (strcmp(ev->kind, "enrolled"))
		return PX_OK;
	d = json_loadb(ev->detail, ev->detail_len, 0, NULL);
	if ((uint64_t)json_integer_value(json_object_get(d, "id")) == f->id)
		f->found = enroll_unhex(json_string_value(json_object_get(d,
					"pub")), f->pub, sizeof f->pub);
	json_decref(d);
	return PX_OK;
}

/* Whether instance in (adopted) enrolled in an earlier life. */
static void enrolled_before(struct ec2w *w, struct inst *in)
{
	struct enrolled_find f = { .id = in->id };
	struct px_error err = {0};

	if (store_events_each(w->h->wh->st, w->s.job_id, enrolled_each, &f,
			      &err) != PX_OK || !f.found)
		return;
	in->enrolled = true;
	memcpy(in->enroll_pub, f.pub, sizeof f.pub);
	w->n_enrolled++;
}

static void ec2w_enrollments(const void *vw, int64_t *ret_ok,
			     int64_t *ret_refused)
{
	const struct ec2w *w = vw;

	*ret_ok = w->n_enrolled;
	*ret_refused = w->n_refused;
}

static struct inst *inst_add(struct ec2w *w, uint64_t id,
			     struct px_error *err)
{
	struct inst *in;

	if (w->n == w->cap) {
		size_t cap = w->cap ? 2 * w->cap : 16;
		struct inst *v = px_reallocarray(w->v, cap, sizeof *v);

		if (!v) {
			px_errorf(err, PX_ENOMEM, "out of memory");
			return NULL;
		}
		w->v = v;
		w->cap = cap;
	}
	in = &w->v[w->n++];
	memset(in, 0, sizeof *in);
	in->id = id;
	in->slot = -1;
	in->market = -1;
	return in;
}

/* Queue what in must tell the controller, at now. */
static void tell(struct ec2w *w, struct inst *in, enum itell t)
{
	struct px_error err = {0};

	in->tell |= 1u << t;
	if (evq_push(&w->q, w_now(w), EW_ANSWER, in->id, &err) != PX_OK)
		snprintf(w->fatal, sizeof w->fatal, "%s", err.msg);
}

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

/* ---- user data: the node's command as a shell script ---- */

struct sbuf {
	char *p;
	size_t n, cap;
	bool over;
};

static void sb_add(struct sbuf *b, const char *s, size_t n)
{
	if (b->over || b->n + n + 1 > b->cap) {
		b->over = true;
		return;
	}
	memcpy(b->p + b->n, s, n);
	b->n += n;
	b->p[b->n] = 0;
}

static void sb_str(struct sbuf *b, const char *s)
{
	sb_add(b, s, strlen(s));
}

/* s single-quoted for sh ('\'' for a quote). */
static void sb_quoted(struct sbuf *b, const char *s)
{
	sb_add(b, "'", 1);
	for (; *s; s++) {
		if (*s == '\'')
			sb_add(b, "'\\''", 4);
		else
			sb_add(b, s, 1);
	}
	sb_add(b, "'", 1);
}

#define LISTEN_HOST "@PRIVATE_IP@"

/* Argument a, when it is the node's listen address: with the instance's
 * address, the script's $ip, in place of LISTEN_HOST (tcp://@PRIVATE_IP@:
 * PORT -> tcp://$ip:PORT).  False, nothing written: another argument. */
static bool sb_listen(struct sbuf *b, const char *a,
		      const struct world_place *pl)
{
	const char *at = strstr(a, LISTEN_HOST);

	if (!at || strcmp(a, pl->listen))
		return false;
	sb_add(b, a, (size_t)(at - a));
	sb_str(b, "$ip");
	sb_str(b, at + strlen(LISTEN_HOST));
	return true;
}

/* Whether every argument and environment entry of nd can go into a
 * systemd environment file unquoted and be split back at blanks
 * (ExecStart's $VAR): no blank, quote, backslash, `$` or backquote. */
static bool unit_safe(const struct world_node *nd)
{
	static const char ok[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOP"
				 "QRSTUVWXYZ0123456789._:/@=,+-%";

	for (char **a = nd->argv; a && *a; a++)
		if ((*a)[strspn(*a, ok)])
			return false;
	for (char **e = nd->env; e && *e; e++)
		if ((*e)[strspn(*e, ok)])
			return false;
	return true;
}

static void node_extra_args(const struct ec2w *w, const struct inst *in,
			    struct sbuf *b);

/* On an instance whose image has the proteus-node unit (a real EC2
 * instance: no metadata endpoint set by hand), the node runs as that
 * unit: its arguments and environment go to /etc/proteus/node.env and
 * the unit starts (the journal keeps its log, systemd restarts a failed
 * node, the shutdown's SIGTERM is its leave).  Elsewhere (the fake EC2,
 * an image without the unit) the script goes on to run the node itself. */
static void unit_branch(const struct ec2w *w, const struct inst *in,
			const struct world_node *nd,
			const struct world_place *pl, char *const *enroll,
			struct sbuf *b)
{
	sb_str(b, "if [ -z \"${AWS_EC2_METADATA_SERVICE_ENDPOINT:-}\" ] && "
		  "command -v systemctl >/dev/null 2>&1 && "
		  "systemctl cat proteus-node.service >/dev/null 2>&1; then\n"
		  "  umask 077\n  mkdir -p /etc/proteus\n"
		  "  cat > /etc/proteus/node.env <<PROTEUS_NODE_ENV\n");
	for (char **e = nd->env; e && *e; e++) {
		sb_str(b, *e);
		sb_str(b, "\n");
	}
	for (char *const *e = enroll; *e; e++) {
		sb_str(b, *e);
		sb_str(b, "\n");
	}
	sb_str(b, "PROTEUS_NODE_ARGS=");
	/* argv[0] is the trainer and argv[1] "node": the unit has both */
	for (char **a = nd->argv && nd->argv[0] && nd->argv[1] ?
			nd->argv + 2 : NULL; a && *a; a++) {
		if (a != nd->argv + 2)
			sb_str(b, " ");
		if (!sb_listen(b, *a, pl))
			sb_str(b, *a);
	}
	node_extra_args(w, in, b);
	sb_str(b, "\nPROTEUS_NODE_ENV\n"
		  "  exec systemctl start --no-block proteus-node.service\n"
		  "fi\n");
}

#define ENROLL_ENV_MAX 4

/* What the node of in needs to enroll (common/enroll.h): where, the
 * job, the job's enrollment public key and in's single-use ticket, as
 * "K=V" into v[ENROLL_ENV_MAX + 1] (NULL-ended; enroll_env_free). */
static enum px_err enroll_env(const struct ec2w *w, const struct inst *in,
			      char **v, struct px_error *err)
{
	uint8_t pub[ENROLL_PUB_LEN], t[ENROLL_TICKET_LEN];
	char hex[2 * ENROLL_TICKET_LEN + 1], buf[CONFIG_HOST_MAX + 64];
	enum px_err e;
	int k = 0;

	memset(v, 0, (ENROLL_ENV_MAX + 1) * sizeof *v);
	if (!w->s.job_key)
		return px_errorf(err, PX_EINVAL, "the job has no key to enroll "
				 "its nodes with");
	e = enroll_job_pub(w->s.job_key, pub, err);
	if (e == PX_OK)
		e = enroll_ticket(w->s.job_key, w->s.job_id, in->id, t, err);
	if (e != PX_OK)
		return e;
	snprintf(buf, sizeof buf, ENROLL_ENV_ADDR "=tcp://%s:%d",
		 w->h->wh->cfg->head_address, slot_port(w->h, 0));
	v[k++] = strdup(buf);
	snprintf(buf, sizeof buf, ENROLL_ENV_JOB "=%" PRId64, w->s.job_id);
	v[k++] = strdup(buf);
	enroll_hex(pub, sizeof pub, hex);
	snprintf(buf, sizeof buf, ENROLL_ENV_PUB "=%s", hex);
	v[k++] = strdup(buf);
	enroll_hex(t, sizeof t, hex);
	snprintf(buf, sizeof buf, ENROLL_ENV_TICKET "=%s", hex);
	v[k++] = strdup(buf);
	OPENSSL_cleanse(t, sizeof t);
	OPENSSL_cleanse(hex, sizeof hex);
	OPENSSL_cleanse(buf, sizeof buf);
	for (int i = 0; i < k; i++)
		if (!v[i])
			return px_errorf(err, PX_ENOMEM, "out of memory");
	return PX_OK;
}

static void enroll_env_free(char **v)
{
	for (int i = 0; i < ENROLL_ENV_MAX; i++) {
		if (v[i])
			OPENSSL_cleanse(v[i], strlen(v[i]));
		free(v[i]);
		v[i] = NULL;
	}
}

/* The user data of instance in: a script that finds the instance's own
 * address (IMDSv2) and runs the node's command (again after a failure, a
 * few times: a node that lost its coordinator, which a restarted daemon
 * brings back at the same address, registers anew).  Nothing from which
 * the job key can be drawn: the node enrolls (enroll_env: the job's
 * public key and a single-use ticket); the job key, or a file of it,
 * in the owner's env is refused here. */
static enum px_err user_data(const struct ec2w *w, const struct inst *in,
			     const struct world_node *nd,
			     const struct world_place *pl, struct sbuf *b,
			     struct px_error *err)
{
	char *enroll[ENROLL_ENV_MAX + 1];
	char line[256];
	enum px_err rc;

	sb_str(b, "#!/bin/sh\n");
	snprintf(line, sizeof line, "# proteusd %s: job %" PRId64 ", instance "
		 "%" PRIu64 " (%s%s%s)\n", w->h->daemon_id, w->s.job_id,
		 in->id, in->type_name, in->zone[0] ? " spot in " :
		 " on-demand", in->zone);
	sb_str(b, line);
	/* the metadata service may be slow at boot: asked again for a
	 * minute, not once (a lost answer cost the instance its join) */
	sb_str(b, "imds=${AWS_EC2_METADATA_SERVICE_ENDPOINT:-"
		  "http://169.254.169.254/}\nimds=${imds%/}\n"
		  "ip=; k=0\n"
		  "while [ -z \"$ip\" ] && [ $k -lt 30 ]; do\n"
		  "  k=$((k+1))\n"
		  "  tok=$(curl -sf -m 5 -X PUT -H "
		  "'X-aws-ec2-metadata-token-ttl-seconds: 300' "
		  "\"$imds/latest/api/token\")\n"
		  "  ip=$(curl -sf -m 5 -H \"X-aws-ec2-metadata-token: $tok\" "
		  "\"$imds/latest/meta-data/local-ipv4\")\n"
		  "  [ -n \"$ip\" ] || sleep 2\n"
		  "done\n"
		  "[ -n \"$ip\" ] || { echo 'proteus: no local-ipv4 from the "
		  "instance metadata' >&2; exit 1; }\n");
	for (char **e = nd->env; e && *e; e++) {
		if (!strncmp(*e, "PX_JOB_KEY=", 11) ||
		    !strncmp(*e, "PX_JOB_KEY_FILE=", 16))
			return px_errorf(err, PX_EINVAL, "the job key must not "
					 "reach an instance's user data");
		if (!strchr(*e, '=') || strchr(*e, '=') == *e)
			return px_errorf(err, PX_EINVAL, "bad environment "
					 "entry for a node");
	}
	rc = enroll_env(w, in, enroll, err);
	if (rc != PX_OK) {
		enroll_env_free(enroll);
		return rc;
	}
	if (unit_safe(nd))
		unit_branch(w, in, nd, pl, enroll, b);
	for (char **e = nd->env; e && *e; e++) {
		sb_str(b, "export ");
		sb_quoted(b, *e);
		sb_str(b, "\n");
	}
	for (char **e = enroll; *e; e++) {
		sb_str(b, "export ");
		sb_quoted(b, *e);
		sb_str(b, "\n");
	}
	enroll_env_free(enroll);
	sb_str(b, "n=0\nuntil");
	for (char **a = nd->argv; a && *a; a++) {
		sb_str(b, " ");
		if (!strcmp(*a, pl->listen) && strstr(*a, LISTEN_HOST)) {
			/* "tcp://$ip:PORT": the shell expands it */
			sb_add(b, "\"", 1);
			(void)sb_listen(b, *a, pl);
			sb_add(b, "\"", 1);
		} else {
			sb_quoted(b, *a);
		}
	}
	node_extra_args(w, in, b);
	sb_str(b, "; do n=$((n+1)); [ $n -lt 5 ] || exit 1; sleep 2; "
		  "done\n");
	if (b->over)
		return px_errorf(err, PX_ETOOBIG, "the node's command is past "
				 "EC2's %d bytes of user data", USER_DATA_MAX);
	return PX_OK;
}

/* What a node's arguments gain on EC2: a spot node reads its own
 * interruption notice (only the instance can), on EC2's clock (the
 * fake's runs K times faster from T0). */
static void node_extra_args(const struct ec2w *w, const struct inst *in,
			    struct sbuf *b)
{
	const struct proteusd_config *cfg = w->h->wh->cfg;
	double k = clock_speedup(cfg);
	char line[96];

	if (!in->zone[0])
		return;
	sb_str(b, " --imds-notices");
	if (w->s.rebalance_leave)
		sb_str(b, " --leave-on-rebalance");
	if (k != 1.0 && cfg->ec2_clock_origin > 0) {
		snprintf(line, sizeof line, " --clock-speedup %.9g "
			 "--clock-origin %" PRId64, k,
			 (int64_t)cfg->ec2_clock_origin);
		sb_str(b, line);
	}
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

/* ---- answers ---- */

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

static void inst_close(struct ec2w *w, struct inst *in);

/* The request in was for, as the controller asked it. */
static struct world_req req_of(const struct inst *in)
{
	return (struct world_req){
		.id = in->id, .market = in->market, .type = in->type,
		.reliable = in->reliable, .bid_uusd = in->bid_uusd,
		.type_name = in->type_name,
		.zone = in->zone[0] ? in->zone : NULL,
	};
}

/* in, which the controller no longer holds (let go before it heard the
 * launch, or refused as far as it heard), launched by EC2 at launched
 * (< 0: it never launched): billed from there to now, when it is
 * terminated (ctrl_bill_late; the listing's end time settles it).  EC2
 * bills it whether or not we wanted it. */
static void bill_late(struct ec2w *w, struct inst *in, int64_t launched)
{
	struct world_req q = req_of(in);

	in->bill_late = false;
	if (launched >= 0 && launched < in->asked_s)
		launched = in->asked_s;
	if (launched >= 0)
		in->launch_s = launched;
	if (ctrl_bill_late(w->c, tell_t(w), &q, launched) != PX_OK)
		log_err("job %" PRId64 ": instance %" PRIu64 " (%s), launched "
			"after it was let go: its bill: %s", w->s.job_id,
			in->id, in->iid, ctrl_error(w->c)->msg);
	else if (launched >= 0)
		log_notice("job %" PRId64 ": instance %" PRIu64 " (%s) was "
			   "launched after it was let go: billed from its "
			   "launch, terminated", w->s.job_id, in->id, in->iid);
}

/* The same, as EC2 answered or listed it (i). */
static void bill_late_seen(struct ec2w *w, struct inst *in,
			   const struct ec2_instance *i)
{
	snprintf(in->iid, sizeof in->iid, "%s", i->id);
	bill_late(w, in, i->launch_time_s > 0 ? i->launch_time_s : w_now(w));
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
	struct inst *in = w ? inst_of(w, k->id) : NULL;
	struct px_error e2 = {0};
	int64_t now;

	if (rc == PX_ECANCELED) {
		call_end(k);
		return;
	}
	if (rc == PX_OK && l->n >= 1) {
		(void)store_ec2_request_set(k->h->wh->st, k->token, "launched",
					    l->v[0].id, px_now_wall_us(), &e2);
		/* a job that ended, or let it go while it was asked for:
		 * EC2 bills it all the same, to its terminate */
		if (!in || in->released) {
			if (in && in->bill_late)
				bill_late_seen(w, in, &l->v[0]);
			for (size_t i = 0; i < l->n; i++)
				host_terminate(k->h, l->v[i].id, 0);
			if (in)
				inst_close(w, in);
			call_end(k);
			return;
		}
		now = w_now(w);
		snprintf(in->iid, sizeof in->iid, "%s", l->v[0].id);
		in->launch_s = l->v[0].launch_time_s > 0 ?
			       l->v[0].launch_time_s : now;
		if (in->launch_s < in->asked_s)
			in->launch_s = in->asked_s;
		if (in->launch_s > now)
			in->launch_s = now;
		in->st = I_PENDING;
		for (size_t i = 1; i < l->n; i++)  /* never asked for */
			host_terminate(k->h, l->v[i].id, 0);
		tell(w, in, T_LAUNCHED);
		if (in->ready) {
			/* its node joined before the answer came */
			in->st = I_RUNNING;
			in->running_s = now;
			tell(w, in, T_READY);
		}
		call_end(k);
		return;
	}
	(void)store_ec2_request_set(k->h->wh->st, k->token, "rejected", NULL,
				    px_now_wall_us(), &e2);
	if (in && !in->released) {
		const char *code = aws && aws->code[0] ? aws->code : "";

		now = w_now(w);
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
		tell(w, in, T_REJECTED);
	} else if (in) {
		/* let go while asked, and refused: never launched, unless
		 * the answer may be lost (the next listing says) */
		in->lost_answer = answer_lost(aws && aws->code[0] ? aws->code :
					      "", aws);
		in->refused_us = px_now_mono_us();
		if (in->bill_late && !in->lost_answer)
			bill_late(w, in, -1);
		inst_close(w, in);
	}
	call_end(k);
}

/* ---- the controller's half ---- */

static enum px_err ec2w_acquire(void *vw, const struct world_req *q,
				struct px_error *err)
{
	struct ec2w *w = vw;
	const struct proteusd_config *cfg = w->h->wh->cfg;
	int64_t now = w_now(w);
	struct world_node nd = {0};
	struct world_place pl = {0};
	struct store_ec2_request sr = {0};
	struct ec2_tag tags[5];
	struct ec2_run_req rr = {0};
	const char *sgs[CONFIG_EC2_SGS_MAX];
	const char *subnet = NULL, *zone = q->zone;
	char idbuf[24], jobbuf[24], slotbuf[16];
	struct sbuf ud = {0};
	struct inst *in;
	struct call *k;
	enum px_err e;

	if (!(in = inst_add(w, q->id, err)))
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
		tell(w, in, T_REJECTED);
		return PX_OK;
	}
	/* a market resting after a refusal is not asked again yet */
	if (now < w->h->throttled_until ||
	    (q->market >= 0 && now < w->cool_s[q->market])) {
		snprintf(in->why, sizeof in->why, "resting after: %s",
			 now < w->h->throttled_until ? "throttling" :
			 w->cool_why[q->market]);
		in->st = I_DONE;
		tell(w, in, T_REJECTED);
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
		tell(w, in, T_REJECTED);
		return PX_OK;
	}
	in->slot = slot_take(w->h, w->node_slots, -1);
	if (in->slot < 0) {
		snprintf(in->why, sizeof in->why, "no free port range left in "
			 "trainer_ports");
		in->st = I_DONE;
		tell(w, in, T_REJECTED);
		return PX_OK;
	}
	snprintf(pl.coord, sizeof pl.coord, "tcp://%s:%d", cfg->head_address,
		 slot_port(w->h, w->coord_slot));
	snprintf(pl.listen, sizeof pl.listen, "tcp://" LISTEN_HOST ":%d",
		 slot_port(w->h, in->slot));
	pl.remote = true;
	e = w->s.hooks.command(w->s.hooks.ctx, q, &pl, &nd, err);
	if (e == PX_OK) {
		ud.cap = USER_DATA_MAX;
		ud.p = malloc(ud.cap);
		e = ud.p ? user_data(w, in, &nd, &pl, &ud, err)
			 : px_errorf(err, PX_ENOMEM, "out of memory");
	}
	node_free(&nd);
	if (e != PX_OK) {
		free(ud.p);
		slot_give(w->h, in->slot, w->node_slots);
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
		free(ud.p);
		slot_give(w->h, in->slot, w->node_slots);
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
	rr.spec.user_data = ud.p;
	rr.spec.user_data_len = ud.n;
	rr.min_count = rr.max_count = 1;
	rr.spot = q->market >= 0;
	rr.max_price_uusd = rr.spot ? q->bid_uusd : 0;
	rr.client_token = in->token;
	rr.tags = tags;
	rr.n_tags = 5;
	k = call_new(w, 0, q->id);
	if (!k) {
		free(ud.p);
		return px_errorf(err, PX_ENOMEM, "out of memory");
	}
	snprintf(k->token, sizeof k->token, "%s", in->token);
	e = ec2_run_instances_start(w->h->c, &rr, run_done, k, err);
	free(ud.p);
	if (e != PX_OK) {
		call_end(k);
		snprintf(in->why, sizeof in->why, "%s", err->msg);
		in->st = I_DONE;
		tell(w, in, T_REJECTED);
		return PX_OK;
	}
	in->st = I_ASKED;
	return PX_OK;
}

/* The end of in on our side: its port range back, nothing more to say.
 * A lost answer keeps its ports: EC2 may have launched it, and its node
 * has them (lost_slots_back gives them back once no listing shows it). */
static void inst_close(struct ec2w *w, struct inst *in)
{
	if (!in->lost_answer) {
		slot_give(w->h, in->slot, w->node_slots);
		in->slot = -1;
	}
	in->st = I_DONE;
	in->tell = 0;
}

static enum px_err ec2w_release(void *vw, uint64_t id, struct px_error *err)
{
	struct ec2w *w = vw;
	struct inst *in = inst_of(w, id);
	int64_t ms = w->run_over ? 0 : w->s.release_ms;

	(void)err;
	if (!in || in->released)
		return PX_OK;
	in->released = true;
	if (in->st == I_ASKED) {
		/* terminated when it comes, and billed: the controller
		 * keeps its bill until then (ctrl_bill_late) */
		in->bill_late = true;
		return PX_OK;
	}
	/* the controller let it go before it heard what EC2 answered */
	if (in->tell & (1u << T_LAUNCHED))
		bill_late(w, in, in->launch_s);     /* launched */
	else if (in->st == I_DONE && in->lost_answer)
		in->bill_late = true;               /* the listing says */
	else if (in->st == I_DONE)
		bill_late(w, in, -1);               /* refused: nothing */
	/* the node is told to leave (the coordinator moves its work at
	 * once) and the instance terminated now: the controller's bill
	 * closed now, and EC2's closes when the call arrives; EC2's
	 * shutdown gives the node's processes their SIGTERM */
	if (in->st != I_DONE && ms > 0 && w->s.hooks.notice)
		w->s.hooks.notice(w->s.hooks.ctx, id, ms,
				  WORLD_LEAVE_RELEASE);
	host_terminate(w->h, in->iid, 0);
	inst_close(w, in);
	return PX_OK;
}

static enum px_err ec2w_timer(void *vw, int64_t t_s, enum ctrl_timer_kind kind,
			      uint64_t id, struct px_error *err)
{
	struct ec2w *w = vw;

	(void)kind;
	return evq_push(&w->q, t_s, EW_HOUR, id, err);
}

/* ---- watching the job's instances ---- */

static const char *tag_of(const struct ec2_instance *i, const char *k)
{
	for (size_t t = 0; t < i->n_tags; t++)
		if (!strcmp(i->tags[t].key, k))
			return i->tags[t].value;
	return NULL;
}

/* The port slot instance i's tag keeps (-1: none).  The tag is EC2's
 * word, so anything but a whole number from -1 (what a node got when no
 * slot was free) to 65535 is refused, said, and the node gets a fresh
 * slot. */
static int tag_slot(const struct ec2w *w, const struct ec2_instance *i)
{
	const char *v = tag_of(i, TAG_SLOT);
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

static bool alive(const char *state)
{
	return !strcmp(state, "pending") || !strcmp(state, "running");
}

/* Whether EC2 ended instance i itself (a spot interruption), not at
 * anyone's request: billed as the provider's end (a spot instance's first
 * hour free). */
static bool ended_by_ec2(const struct ec2_instance *i)
{
	/* Server.SpotInstanceTermination, or ...Shutdown (a stop) */
	return !strncmp(i->state_reason_code, "Server.Spot", 11);
}

/* EC2's end of an instance: its state transition's time, else now. */
static int64_t end_time(const struct ec2w *w, const struct ec2_instance *i,
			const struct inst *in)
{
	int64_t t = i->transition_s > 0 ? i->transition_s : w_now(w);

	if (t < in->launch_s)
		t = in->launch_s;
	return t;
}

static enum px_err adopt(struct ec2w *w, const struct ec2_instance *i,
			 uint64_t id, struct px_error *err);

/* One instance of the job's tag as EC2 sees it now. */
static void observe(struct ec2w *w, const struct ec2_instance *i)
{
	struct inst *in = inst_by_iid(w, i->id);
	const char *idt = tag_of(i, TAG_ID);
	uint64_t id = idt ? strtoull(idt, NULL, 10) : 0;
	struct px_error err = {0};
	int64_t now = w_now(w);

	if (!in && id)
		in = inst_of(w, id);
	if (!in) {
		/* a launch this life never saw answered (a restart between
		 * the call and its answer, EC2 slow to list it): the job's
		 * own, alive: adopted (once the run is over: terminated);
		 * else nothing to do */
		if (alive(i->state) && id && w->run_over)
			host_terminate(w->h, i->id, 0);
		else if (alive(i->state) && id && w->started &&
			 adopt(w, i, id, &err) != PX_OK)
			log_warn("job %" PRId64 ": instance %s: %s", w->s.job_id,
				 i->id, err.msg);
		return;
	}
	if (in->st == I_DONE && in->lost_answer && !in->released &&
	    !in->tell && alive(i->state) && id == in->id && w->started) {
		/* refused as we heard it (the answer lost, the retries
		 * spent), launched as EC2 says: it is ours and billed from
		 * its launch time; the controller takes it up again, or,
		 * once the run is over, it is billed to now and ended */
		int slot = in->slot;

		if (w->run_over) {
			in->released = true;
			bill_late_seen(w, in, i);
			host_terminate(w->h, i->id, 0);
			return;
		}

		if (in->ready)   /* its node joined while it was asked */
			joined_early_add(w, id);
		in->id = 0;
		in->slot = -1;   /* the adopted instance's, by its tag */
		if (adopt(w, i, id, &err) != PX_OK) {
			log_warn("job %" PRId64 ": instance %s: %s", w->s.job_id,
				 i->id, err.msg);
			host_terminate(w->h, i->id, 0);
			slot_give(w->h, slot, w->node_slots);
		}
		return;
	}
	if (in->released || in->st == I_DONE) {
		if (in->bill_late)       /* let go while asked, its answer
					  * lost: EC2 launched it */
			bill_late_seen(w, in, i);
		if (alive(i->state)) {   /* ours to end */
			host_terminate(w->h, i->id, 0);
		} else if (!in->bill_end_told && i->transition_s > 0) {
			/* EC2 billed it to here: the controller closed the
			 * bill at its decision, before the call arrived; or
			 * EC2 interrupted it before the call arrived (the
			 * job ended, or the policy let it go, between the
			 * interruption and the listing that would have told
			 * it): billed as EC2's end, free in its first hour */
			in->bill_end_told = in->bill_end_due = true;
			in->end_s = i->transition_s;
			in->end_by_ec2 = ended_by_ec2(i);
		}
		return;
	}
	/* its answer is on the way; or we ended it (the join clock, a
	 * rebalance leave) and the controller is yet to hear so: not EC2's
	 * end */
	if (in->st == I_ASKED || (in->tell & (1u << T_FAILED)))
		return;
	if (!in->iid[0])
		snprintf(in->iid, sizeof in->iid, "%s", i->id);
	if (!strcmp(i->state, "running") && in->st == I_PENDING) {
		in->st = I_RUNNING;
		in->running_s = now;
	}
	if (alive(i->state)) {
		if (in->st == I_RUNNING && !in->ready &&
		    now - in->running_s > JOIN_S) {
			snprintf(in->why, sizeof in->why, "its node did not "
				 "join within %d s of the instance running",
				 JOIN_S);
			if (w->s.hooks.start_failed)
				w->s.hooks.start_failed(w->s.hooks.ctx, in->id,
							in->why);
			in->end_s = now;
			host_terminate(w->h, in->iid, 0);
			tell(w, in, T_FAILED);
		}
		return;
	}
	/* ended, not by us: EC2 took it (a spot interruption) or it
	 * failed */
	in->end_s = end_time(w, i, in);
	snprintf(in->why, sizeof in->why, "%s%s%s", i->state,
		 i->state_reason_code[0] ? ": " : "", i->state_reason_code);
	if (strcmp(i->state, "terminated") && strcmp(i->state, "shutting-down"))
		host_terminate(w->h, i->id, 0);   /* stopped: not billed, but
						   * of no use */
	tell(w, in, T_GONE);
}

/* The ports of lost answers that no listing showed in LOST_SLOT_S: EC2
 * launched nothing (or will be told to end it: observe terminates
 * whatever of a closed request it lists). */
static void lost_slots_back(struct ec2w *w)
{
	uint64_t now = px_now_mono_us();

	for (size_t k = 0; k < w->n; k++) {
		struct inst *in = &w->v[k];

		if (in->st == I_DONE && in->lost_answer && in->slot >= 0 &&
		    now - in->refused_us > (uint64_t)LOST_SLOT_S * 1000000) {
			slot_give(w->h, in->slot, w->node_slots);
			in->slot = -1;
		}
	}
}

static void describe_done(enum px_err rc, struct ec2_instance_list *l,
			  const struct px_error *err,
			  const struct ec2_aws_error *aws, void *ctx)
{
	struct call *k = ctx;
	struct ec2w *w = k->w;

	(void)aws;
	if (w)
		w->describing = false;
	if (rc == PX_ECANCELED || !w) {
		call_end(k);
		return;
	}
	if (rc != PX_OK) {
		log_warn("job %" PRId64 ": DescribeInstances: %s (asked again "
			 "in %d s)", w->s.job_id, err ? err->msg : "failed",
			 POLL_MS / 1000);
	} else {
		w->seen_poll++;
		for (size_t i = 0; i < l->n; i++)
			observe(w, &l->v[i]);
		/* a lost answer of one let go, not in a listing asked after
		 * the refusal: EC2 never launched it */
		for (size_t i = 0; i < w->n; i++)
			if (w->v[i].bill_late && w->v[i].st == I_DONE &&
			    k->sent_us > w->v[i].refused_us)
				bill_late(w, &w->v[i], -1);
		lost_slots_back(w);
	}
	call_end(k);
}

/* The job's instances, by its tag. */
static enum px_err describe(struct ec2w *w, ec2_instances_done_fn done,
			    int kind, struct px_error *err)
{
	char job[24];
	const char *dv[1] = { w->h->daemon_id }, *jv[1] = { job };
	struct ec2_filter f[2] = {
		{ .name = "tag:" TAG_DAEMON, .values = dv, .n_values = 1 },
		{ .name = "tag:" TAG_JOB, .values = jv, .n_values = 1 },
	};
	struct call *k = call_new(w, kind, 0);
	enum px_err e;

	if (!k)
		return px_errorf(err, PX_ENOMEM, "out of memory");
	snprintf(job, sizeof job, "%" PRId64, w->s.job_id);
	e = ec2_describe_instances_start(w->h->c, NULL, 0, f, 2, false, done,
					 k, err);
	if (e != PX_OK)
		call_end(k);
	else
		w->describing = true;
	return e;
}

static int64_t poll_timer(struct loop *l, int64_t id, void *ctx)
{
	struct ec2w *w = ctx;
	struct px_error err = {0};

	(void)l;
	(void)id;
	if (w->started && !w->describing &&
	    describe(w, describe_done, 1, &err) != PX_OK)
		log_warn("job %" PRId64 ": DescribeInstances: %s", w->s.job_id,
			 err.msg);
	return POLL_MS;
}

/* ---- live prices ---- */

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
	call_end(k);
}

static int64_t price_timer(struct loop *l, int64_t id, void *ctx)
{
	struct ec2w *w = ctx;
	const struct pol_env *env = w->s.env;
	const char *types[64], *zones[64];
	size_t nt = 0, nz = 0;
	struct ec2_sph_query q = {0};
	struct px_error err = {0};
	struct call *k;
	int64_t every = w->h->wh->cfg->ec2_price_poll_s;
	double sp = clock_speedup(w->h->wh->cfg);

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
	k = call_new(w, 2, 0);
	if (k && ec2_sph_start(w->h->c, &q, price_record, price_done, k, &err)
	    == PX_OK)
		w->pricing = true;
	else if (k) {
		call_end(k);
		log_warn("job %" PRId64 ": DescribeSpotPriceHistory: %s",
			 w->s.job_id, err.msg);
	}
again:
	/* market seconds between polls, in real ms under the fake's clock */
	return (int64_t)((double)(every > 0 ? every : 300) * 1000.0 / sp);
}

/* ---- restart: adopt, close, go on ---- */

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
static enum px_err adopt(struct ec2w *w, const struct ec2_instance *i,
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
		host_terminate(w->h, i->id, 0);
		return px_errorf(err, PX_EINVAL, "%s %s in %s is none of the "
				 "job's markets: terminated", i->id, i->type,
				 i->zone);
	}
	q.reliable = f.found ? f.r.reliable : q.market < 0;
	q.bid_uusd = f.found ? f.r.bid_uusd : 0;
	q.type_name = env->types[q.type].name;
	q.zone = q.market >= 0 ? env->markets[q.market].zone : NULL;
	if (!(in = inst_add(w, id, err)))
		return err->code;
	in->market = q.market;
	in->type = q.type;
	in->reliable = q.reliable;
	in->bid_uusd = q.bid_uusd;
	snprintf(in->type_name, sizeof in->type_name, "%s", q.type_name);
	snprintf(in->zone, sizeof in->zone, "%s", q.zone ? q.zone : "");
	snprintf(in->iid, sizeof in->iid, "%s", i->id);
	snprintf(in->token, sizeof in->token, "%s", i->client_token);
	in->launch_s = i->launch_time_s > 0 ? i->launch_time_s : w_now(w);
	in->asked_s = in->launch_s;
	in->st = !strcmp(i->state, "running") ? I_RUNNING : I_PENDING;
	in->running_s = w_now(w);
	in->slot = slot_take(w->h, w->node_slots, tag_slot(w, i));
	e = ctrl_adopt(w->c, tell_t(w), &q, in->launch_s, false);
	if (e != PX_OK) {
		slot_give(w->h, in->slot, w->node_slots);
		w->n--;
		return px_errorf(err, e, "%s", ctrl_error(w->c)->msg);
	}
	enrolled_before(w, in);
	if (w->s.hooks.adopted)
		w->s.hooks.adopted(w->s.hooks.ctx, &q);
	log_notice("job %" PRId64 ": instance %" PRIu64 " (%s, %s %s%s) "
		   "adopted", w->s.job_id, id, i->id, i->type,
		   q.zone ? "spot in " : "on-demand", q.zone ? q.zone : "");
	if (joined_early(w, id)) {
		/* its node is in already: the join clock must not run */
		in->ready = true;
		in->st = I_RUNNING;
		tell(w, in, T_READY);
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
	if (seen && alive(seen->state))
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
			 ended_by_ec2(seen) ? BILLING_END_PROVIDER :
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
	if (!inst_of(w, r->ctrl_id))
		(void)store_ec2_request_set(w->h->wh->st, r->client_token,
					    "closed", NULL, px_now_wall_us(),
					    &err);
	return PX_OK;
}

static enum px_err first_step(struct ec2w *w, struct px_error *err);

static void reconcile_done(enum px_err rc, struct ec2_instance_list *l,
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
		call_end(k);
		return;
	}
	w->describing = false;
	if (rc != PX_OK) {
		/* without the listing nothing can be adopted safely: try
		 * again at the next poll */
		log_warn("job %" PRId64 ": reconcile: DescribeInstances: %s",
			 w->s.job_id, err ? err->msg : "failed");
		call_end(k);
		return;
	}
	for (size_t i = 0; i < l->n && e == PX_OK; i++) {
		const char *idt = tag_of(&l->v[i], TAG_ID);
		uint64_t id = idt ? strtoull(idt, NULL, 10) : 0;

		if (!alive(l->v[i].state))
			continue;
		if (!id) {
			host_terminate(w->h, l->v[i].id, 0);
			continue;
		}
		if (adopt(w, &l->v[i], id, &e2) != PX_OK)
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
		e = first_step(w, &e2);
	}
	if (e != PX_OK)
		snprintf(w->fatal, sizeof w->fatal, "resuming on EC2: %s",
			 e2.msg);
	call_end(k);
}

/* ---- the daemon's half ---- */

/* The coordinator's port slot, kept in the job's directory (-1: none). */
static int coord_slot_kept(const char *dir)
{
	char path[1100];
	int slot = -1;
	FILE *f;

	if (!dir)
		return -1;
	snprintf(path, sizeof path, "%s/ec2.coord-slot", dir);
	f = fopen(path, "re");
	if (f) {
		if (fscanf(f, "%d", &slot) != 1 || slot < 0 || slot > 65535)
			slot = -1;
		fclose(f);
	}
	return slot;
}

static void coord_slot_keep(const char *dir, int slot)
{
	char path[1100];
	FILE *f;

	if (!dir || slot < 0)
		return;
	snprintf(path, sizeof path, "%s/ec2.coord-slot", dir);
	f = fopen(path, "we");
	if (f) {
		fprintf(f, "%d\n", slot);
		fclose(f);
	}
}

static enum px_err ec2w_create(const struct world_setup *s, void **ret,
			       struct px_error *err)
{
	struct ec2w *w;
	struct ec2_host *h;
	enum px_err e = host_get(s->host, &h, err);

	if (e != PX_OK)
		return e;
	w = calloc(1, sizeof *w);
	if (!w)
		return px_errorf(err, PX_ENOMEM, "out of memory");
	w->s = *s;
	w->h = h;
	w->poll_timer = w->price_timer = -1;
	w->step_t = s->t0_s;
	w->price_from_s = s->ms->last_s > 0 ? s->ms->last_s : s->t0_s;
	w->cool_s = calloc(s->env->n_markets + 1, sizeof *w->cool_s);
	w->cool_why = calloc(s->env->n_markets + 1, sizeof *w->cool_why);
	w->node_slots = (s->node_ports + 2) / 3;
	/* the coordinator comes back at the same address in every life
	 * of the job: its nodes outlive the daemon and know only that */
	w->coord_slot = slot_take(h, 1, coord_slot_kept(s->job_dir));
	coord_slot_keep(s->job_dir, w->coord_slot);
	if (!w->cool_s || !w->cool_why || w->coord_slot < 0) {
		e = w->coord_slot < 0 ?
		    px_errorf(err, PX_ETOOBIG, "trainer_ports: no port range "
			      "left for the job's coordinator") :
		    px_errorf(err, PX_ENOMEM, "out of memory");
		slot_give(h, w->coord_slot, 1);
		free(w->cool_s);
		free(w->cool_why);
		free(w);
		return e;
	}
	w->next_w = h->worlds;
	h->worlds = w;
	*ret = w;
	return PX_OK;
}

static void ec2w_attach(void *vw, struct ctrl *c)
{
	((struct ec2w *)vw)->c = c;
	/* EC2 bills to the terminate call's arrival, after the decision:
	 * the listing's transition time brings each bill there */
	ctrl_keep_bills(c);
}

static enum px_err ctrl_e(struct ec2w *w, enum px_err e, struct px_error *err)
{
	if (e != PX_OK)
		return px_errorf(err, e, "%s", ctrl_error(w->c)->msg);
	return PX_OK;
}

/* The provider's end times learnt since the last call, to the controller
 * at t (bills closed at our decision end where EC2's did). */
static enum px_err bill_ends_at(struct ec2w *w, int64_t t,
				struct px_error *err)
{
	enum px_err e = PX_OK;

	for (size_t i = 0; i < w->n && e == PX_OK; i++) {
		struct inst *in = &w->v[i];

		if (!in->bill_end_due)
			continue;
		in->bill_end_due = false;
		e = ctrl_e(w, ctrl_bill_end(w->c, t, in->id, in->end_s,
					    in->end_by_ec2), err);
	}
	return e;
}

static enum px_err first_step(struct ec2w *w, struct px_error *err)
{
	int64_t t0 = w_now(w), end = ctrl_end(w->c);
	enum px_err e = PX_OK;

	if (t0 < w->step_t)
		t0 = w->step_t;
	w->step_t = t0;
	w->started = true;
	if (w->s.tick_s > 0)
		e = evq_push(&w->q, t0 + w->s.tick_s, EW_TICK, 0, err);
	if (e == PX_OK)
		e = ctrl_e(w, ctrl_step(w->c, t0, POL_WHY_START, &w->start_p),
			   err);
	if (e == PX_OK) {
		ctrl_take_changed(w->c);
		ctrl_cost(w->c, t0);
		e = evq_push(&w->q, end < w->s.end_s ? end : w->s.end_s,
			     EW_END, 0, err);
	}
	return e;
}

static enum px_err ec2w_start(void *vw, const struct ctrl_progress *p,
			      struct px_error *err)
{
	struct ec2w *w = vw;
	enum px_err e;

	w->start_p = *p;
	w->poll_timer = loop_timer_add(w->h->wh->loop, POLL_MS, poll_timer,
				       w);
	w->price_timer = loop_timer_add(w->h->wh->loop, 0, price_timer, w);
	if (w->poll_timer < 0 || w->price_timer < 0)
		return px_errorf(err, PX_ENOMEM, "timer");
	if (!w->s.resume)
		return first_step(w, err);
	/* an earlier life's instances first: the first decision comes
	 * with the listing (reconcile_done) */
	e = describe(w, reconcile_done, 1, err);
	return e;
}

static int64_t ec2w_now(const void *vw)
{
	return w_now(vw);
}

static int64_t ec2w_next_ms(const void *vw)
{
	const struct ec2w *w = vw;
	double sp = clock_speedup(w->h->wh->cfg);
	int64_t now = w_now(w), t;

	if (!w->q.n)
		return -1;
	t = evq_top(&w->q)->t;
	return t <= now ? 0 : (int64_t)ceil((double)(t - now) * 1000.0 / sp);
}

/* Hand over what in has to tell. */
static enum px_err answer(struct ec2w *w, struct inst *in, int64_t t,
			  struct px_error *err)
{
	unsigned tl = in->tell;
	enum px_err e = PX_OK;

	in->tell = 0;
	if (in->released)
		return PX_OK;
	if (tl & (1u << T_REJECTED)) {
		e = ctrl_e(w, ctrl_rejected(w->c, t, in->id, in->why), err);
		inst_close(w, in);
		return e;
	}
	if (tl & (1u << T_LAUNCHED))
		e = ctrl_e(w, ctrl_launched(w->c, in->launch_s, in->id), err);
	if (e == PX_OK && (tl & (1u << T_READY)))
		e = ctrl_e(w, ctrl_ready(w->c, t, in->id), err);
	if (e == PX_OK && (tl & (1u << T_WARNED)) &&
	    !(tl & ((1u << T_GONE) | (1u << T_FAILED))))
		e = ctrl_e(w, ctrl_warned(w->c, t, in->id, in->warn_s > t ?
					  in->warn_s : t), err);
	if (e == PX_OK && (tl & (1u << T_GONE))) {
		e = ctrl_e(w, ctrl_gone(w->c, in->end_s > t ? t : in->end_s,
					in->id, in->why), err);
		inst_close(w, in);
	} else if (e == PX_OK && (tl & (1u << T_FAILED))) {
		e = ctrl_e(w, ctrl_failed(w->c, t, in->id, in->why), err);
		inst_close(w, in);
	}
	return e;
}

static enum px_err handle(struct ec2w *w, const struct evq_ev *ev,
			  unsigned *why, struct px_error *err)
{
	struct inst *in;

	switch (ev->kind) {
	case EW_PRICE:
		*why |= POL_WHY_PRICE;
		return PX_OK;
	case EW_TICK:
		*why |= POL_WHY_TICK;
		return evq_push(&w->q, ev->t + w->s.tick_s, EW_TICK, 0, err);
	case EW_HOUR:
		return ctrl_e(w, ctrl_timer(w->c, ev->t, CTRL_TIMER_HOUR,
					    ev->id), err);
	case EW_ANSWER:
		in = inst_of(w, ev->id);
		return in && in->tell ? answer(w, in, ev->t, err) : PX_OK;
	case EW_END:
	default:
		return PX_OK;
	}
}

static enum px_err ec2w_run_due(void *vw, const struct ctrl_progress *p,
				int64_t *ret_t, int *ret_stop,
				struct px_error *err)
{
	struct ec2w *w = vw;
	int64_t now = w_now(w);
	enum px_err e = PX_OK;

	*ret_stop = CTRL_RUN;
	*ret_t = w->step_t > now ? w->step_t : now;
	if (w->fatal[0])
		return px_errorf(err, PX_EAWS, "%s", w->fatal);
	if (!w->started)
		return PX_OK;
	e = bill_ends_at(w, tell_t(w), err);
	while (e == PX_OK && w->q.n && evq_top(&w->q)->t <= now) {
		/* everything due is decided now, not at the instant it was
		 * due: the clock is EC2's, and a release decided "at" a past
		 * instant would close the bill before EC2's does (the loop
		 * late under load: seconds at the fake's speed-up) */
		int64_t t = now;
		unsigned why = 0;

		if (t < w->step_t)
			t = w->step_t;
		ctrl_take_changed(w->c);
		while (e == PX_OK && w->q.n && evq_top(&w->q)->t <= t) {
			struct evq_ev ev = evq_pop(&w->q);

			ev.t = t;
			e = handle(w, &ev, &why, err);
		}
		w->step_t = t;
		if (e == PX_OK)
			e = ctrl_e(w, ctrl_step(w->c, t, why, p), err);
		if (e == PX_OK && (ctrl_take_changed(w->c) ||
				   (why & POL_WHY_TICK)))
			ctrl_cost(w->c, t);
		*ret_t = t;
		if (e == PX_OK) {
			*ret_stop = ctrl_stop(w->c, t, p);
			if (*ret_stop != CTRL_RUN)
				return PX_OK;
		}
	}
	if (e == PX_OK && w->fatal[0])
		e = px_errorf(err, PX_EAWS, "%s", w->fatal);
	if (e == PX_OK && !*ret_stop)
		*ret_stop = ctrl_stop(w->c, *ret_t, p);
	return e;
}

static enum px_err ec2w_ready(void *vw, uint64_t id, struct px_error *err)
{
	struct ec2w *w = vw;
	struct inst *in = inst_of(w, id);

	(void)err;
	if (!in || (in->st == I_DONE && in->lost_answer && !in->released)) {
		/* a node of an instance the world may adopt yet */
		joined_early_add(w, id);
		return PX_OK;
	}
	if (in->ready || in->released || in->st == I_DONE)
		return PX_OK;
	in->ready = true;
	if (in->st == I_ASKED)   /* told after its launch (run_done) */
		return PX_OK;
	if (in->st == I_PENDING)
		in->st = I_RUNNING;
	tell(w, in, T_READY);
	return PX_OK;
}

/* The nodes run the user data's loop: a node that lost its coordinator
 * ends and starts again, and registers with the new one by itself. */
static enum px_err ec2w_restart_nodes(void *vw, struct px_error *err)
{
	struct ec2w *w = vw;
	int64_t now = w_now(w);

	(void)err;
	for (size_t i = 0; i < w->n; i++) {
		struct inst *in = &w->v[i];
		struct world_req q = req_of(in);

		if (in->st == I_DONE || in->released || in->st == I_ASKED)
			continue;
		/* the new coordinator admits only the nodes it is told of,
		 * and each has the join time anew to come back */
		in->ready = false;
		in->running_s = now;
		if (w->s.hooks.adopted)
			w->s.hooks.adopted(w->s.hooks.ctx, &q);
	}
	return PX_OK;
}

/* A spot node read its instance's interruption notice (only instance
 * metadata says it, which the daemon cannot read): the controller hears
 * it now, in market time, and may replace the node before it is gone;
 * the node leaves by itself (its PS hands its shards over).
 *
 * rebalance: the node left on a rebalance recommendation (the job's
 * world.rebalance "leave"), which EC2 may never follow with an end: the
 * instance is of no use from now and is ended now, as a release is (the
 * node's leave began; the shutdown's SIGTERM is the same leave), billed
 * as the user's end; the controller replaces it as its policy says. */
static void ec2w_node_warned(void *vw, uint64_t id, int64_t deadline_us,
			     bool rebalance)
{
	struct ec2w *w = vw;
	struct inst *in = inst_of(w, id);
	double left_s = (double)(deadline_us - (int64_t)px_now_wall_us()) /
			1e6;

	if (!in || in->released || in->st == I_DONE || in->warn_s)
		return;
	if (left_s < 0)
		left_s = 0;
	if (rebalance) {
		in->warn_s = in->end_s = w_now(w);
		snprintf(in->why, sizeof in->why, "rebalance recommendation: "
			 "its node left");
		log_notice("job %" PRId64 ": instance %" PRIu64 " (%s): its "
			   "node left on a rebalance recommendation: the "
			   "instance ends now", w->s.job_id, id, in->iid);
		host_terminate(w->h, in->iid, 0);
		tell(w, in, T_FAILED);
		return;
	}
	in->warn_s = w_now(w) + (int64_t)(left_s *
					  clock_speedup(w->h->wh->cfg));
	log_notice("job %" PRId64 ": instance %" PRIu64 " (%s): its node "
		   "read an interruption notice: gone in %.0f s", w->s.job_id,
		   id, in->iid, left_s);
	tell(w, in, T_WARNED);
}

static void ec2w_end_leaves(void *vw)
{
	((struct ec2w *)vw)->run_over = true;
}

static size_t ec2w_nodes(const void *vw)
{
	const struct ec2w *w = vw;
	size_t n = 0;

	for (size_t i = 0; i < w->n; i++)
		if (w->v[i].st != I_DONE && !w->v[i].released)
			n++;
	return n;
}

static size_t ec2w_host_load(const void *vw)
{
	(void)vw;
	return 0;
}

static void ec2w_cloud_id(const void *vw, uint64_t id, char *buf, size_t len)
{
	const struct ec2w *w = vw;

	buf[0] = 0;
	for (size_t i = 0; i < w->n; i++)
		if (w->v[i].id == id)
			snprintf(buf, len, "%s", w->v[i].iid);
}

static void ec2w_bill_ends(void *vw)
{
	struct ec2w *w = vw;
	struct px_error err = {0};

	if (bill_ends_at(w, tell_t(w), &err) != PX_OK)
		log_err("job %" PRId64 ": a bill to EC2's end: %s",
			w->s.job_id, err.msg);
}

/* The job's run is over (its releases went to the host) or the daemon
 * stops (its instances outlive it: the next start adopts them).  Calls in
 * flight are detached. */
static void ec2w_free(void *vw)
{
	struct ec2w *w = vw;

	if (!w)
		return;
	for (struct call *k = w->calls; k; k = k->next)
		k->w = NULL;
	for (struct ec2w **p = &w->h->worlds; *p; p = &(*p)->next_w)
		if (*p == w) {
			*p = w->next_w;
			break;
		}
	if (w->poll_timer > 0)
		(void)loop_timer_del(w->h->wh->loop, w->poll_timer);
	if (w->price_timer > 0)
		(void)loop_timer_del(w->h->wh->loop, w->price_timer);
	for (size_t i = 0; i < w->n; i++)
		slot_give(w->h, w->v[i].slot, w->node_slots);
	slot_give(w->h, w->coord_slot, 1);
	evq_release(&w->q);
	free(w->v);
	free(w->cool_s);
	free(w->cool_why);
	free(w);
}

static enum px_err ec2w_coordinator(const void *vw, char *buf, size_t len,
				    struct px_error *err)
{
	const struct ec2w *w = vw;
	/* where it binds (and proteusd, on this host, dials it): the
	 * address; its nodes dial head_address (plan.coord) */
	int n = snprintf(buf, len, "tcp://%s:%d", w->h->bind,
			 slot_port(w->h, w->coord_slot));

	if (n < 0 || (size_t)n >= len)
		return px_errorf(err, PX_ETOOBIG, "head_address too long");
	return PX_OK;
}


/* ---------------------------------------------------------------- sweep */

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
		const char *job = tag_of(&l->v[i], TAG_JOB);
		struct store_job_filter f = {
			.id = job ? strtoll(job, NULL, 10) : 0 };
		struct live_job lj = {0};
		struct px_error e2 = {0};

		if (!alive(l->v[i].state) && strcmp(l->v[i].state, "stopped") &&
		    strcmp(l->v[i].state, "stopping"))
			continue;
		if (f.id > 0 && store_jobs_each(sc->wh->st, &f, job_state, &lj,
						&e2) == PX_OK && lj.live)
			continue;
		log_notice("ec2: instance %s (job %s) belongs to no running "
			   "job of this daemon: terminating it", l->v[i].id,
			   job ? job : "none");
		host_terminate(h, l->v[i].id, 0);
		n++;
	}
	if (n)
		log_notice("ec2: the start's sweep terminates %zu instance%s",
			   n, n == 1 ? "" : "s");
	free(sc);
}

enum px_err ec2_host_sweep(struct world_host *wh, struct px_error *err)
{
	struct ec2_host *h;
	struct sweep_call *sc;
	const char *dv[1];
	struct ec2_filter f = { .name = "tag:" TAG_DAEMON, .n_values = 1 };
	enum px_err e = host_get(wh, &h, err);

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

/* ---------------------------------------------------------------- history */

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

enum px_err ec2_market_history(const struct proteusd_config *cfg,
			       const char *region, const char *const *types,
			       size_t n_types, const char *const *zones,
			       size_t n_zones, struct market_set *ms,
			       int64_t *ret_now_s, int64_t *ret_last_s,
			       struct px_error *err)
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
	client_config(cfg, region, creds, &ec);
	if (e == PX_OK)
		e = ec2_client_new(&ec, &c, err);
	if (e == PX_OK)
		e = ec2_describe_spot_price_history(c, &q, hist_record, ms,
						    NULL, err, &aws);
	ec2_client_free(c);
	awscred_provider_free(creds);
	return e;
}

static enum px_err host_start(struct world_host *wh, struct px_error *err)
{
	return ec2_host_sweep(wh, err);
}

const struct world_ops ec2_world_ops = {
	.name = "ec2",
	.kind = WORLD_EC2,
	.acquire = ec2w_acquire,
	.release = ec2w_release,
	.timer = ec2w_timer,
	.create = ec2w_create,
	.attach = ec2w_attach,
	.instances_outlive_daemon = true,
	.start = ec2w_start,
	.now = ec2w_now,
	.next_ms = ec2w_next_ms,
	.run_due = ec2w_run_due,
	.ready = ec2w_ready,
	.restart_nodes = ec2w_restart_nodes,
	.end_leaves = ec2w_end_leaves,
	.nodes = ec2w_nodes,
	.host_load = ec2w_host_load,
	.cloud_id = ec2w_cloud_id,
	.bill_ends = ec2w_bill_ends,
	.node_warned = ec2w_node_warned,
	.free_world = ec2w_free,
	.enrollments = ec2w_enrollments,
	.coordinator = ec2w_coordinator,
	.on_this_host = false,
	.real_clock = true,
	.load_market = ec2_market_history,
	.check = config_ec2_check,
	.host_start = host_start,
	.host_free = ec2_host_free,
};
