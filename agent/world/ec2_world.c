/* ec2_world.c -- the `ec2` world (ec2_world.h; docs/ec2-world.md): a job's
 * world, its instances and the ops the controller and the daemon call.
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
 * host (ec2_host.c).  The other files of the world: ec2_world_int.h.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/log.h"
#include "../../db/store.h"
#include "ec2_world_int.h"

#pragma GCC diagnostic ignored "-Wformat-truncation"

struct call *ec2w_call_new(struct ec2w *w, int kind, uint64_t id)
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

/* Unlist k from its world (or the host's detached ones) and free it. */
void ec2w_call_end(struct call *k)
{
	for (struct call **p = k->w ? &k->w->calls : &k->h->detached; *p;
	     p = &(*p)->next)
		if (*p == k) {
			*p = k->next;
			break;
		}
	free(k);
}

int64_t ec2w_clock(const struct ec2w *w)
{
	return ec2_world_now(w->h->wh->cfg);
}

/* The instant the world tells the controller of something now: its
 * clock, never before the step it last took. */
int64_t ec2w_tell_t(const struct ec2w *w)
{
	int64_t now = ec2w_clock(w);

	return now > w->step_t ? now : w->step_t;
}

struct inst *ec2w_inst_of(struct ec2w *w, uint64_t id)
{
	for (size_t i = 0; i < w->n; i++)
		if (w->v[i].id == id)
			return &w->v[i];
	return NULL;
}

void ec2w_joined_early_add(struct ec2w *w, uint64_t id)
{
	w->early[w->n_early++ % EARLY_MAX] = id;
}

/* Whether id's node joined before its instance was the world's (taken
 * off the list). */
bool ec2w_joined_early(struct ec2w *w, uint64_t id)
{
	unsigned n = w->n_early < EARLY_MAX ? w->n_early : EARLY_MAX;

	for (unsigned k = 0; k < n; k++)
		if (w->early[k] == id) {
			w->early[k] = 0;
			return true;
		}
	return false;
}

struct inst *ec2w_inst_by_iid(struct ec2w *w, const char *iid)
{
	for (size_t i = 0; i < w->n; i++)
		if (!strcmp(w->v[i].iid, iid))
			return &w->v[i];
	return NULL;
}

struct inst *ec2w_inst_add(struct ec2w *w, uint64_t id,
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
void ec2w_tell(struct ec2w *w, struct inst *in, enum itell t)
{
	struct px_error err = {0};

	in->tell |= 1u << t;
	if (evq_push(&w->q, ec2w_clock(w), EW_ANSWER, in->id, &err) != PX_OK)
		snprintf(w->fatal, sizeof w->fatal, "%s", err.msg);
}

/* The request in was for, as the controller asked it. */
struct world_req ec2w_req_of(const struct inst *in)
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
void ec2w_bill_late(struct ec2w *w, struct inst *in, int64_t launched)
{
	struct world_req q = ec2w_req_of(in);

	in->bill_late = false;
	if (launched >= 0 && launched < in->asked_s)
		launched = in->asked_s;
	if (launched >= 0)
		in->launch_s = launched;
	if (ctrl_bill_late(w->c, ec2w_tell_t(w), &q, launched) != PX_OK)
		log_err("job %" PRId64 ": instance %" PRIu64 " (%s), launched "
			"after it was let go: its bill: %s", w->s.job_id,
			in->id, in->iid, ctrl_error(w->c)->msg);
	else if (launched >= 0)
		log_notice("job %" PRId64 ": instance %" PRIu64 " (%s) was "
			   "launched after it was let go: billed from its "
			   "launch, terminated", w->s.job_id, in->id, in->iid);
}

/* The same, as EC2 answered or listed it (i). */
void ec2w_bill_late_seen(struct ec2w *w, struct inst *in,
			 const struct ec2_instance *i)
{
	snprintf(in->iid, sizeof in->iid, "%s", i->id);
	ec2w_bill_late(w, in, i->launch_time_s > 0 ? i->launch_time_s :
		       ec2w_clock(w));
}

/* The end of in on our side: its port range back, nothing more to say.
 * A lost answer keeps its ports: EC2 may have launched it, and its node
 * has them (lost_slots_back gives them back once no listing shows it). */
void ec2w_inst_close(struct ec2w *w, struct inst *in)
{
	if (!in->lost_answer) {
		ec2h_slot_give(w->h, in->slot, w->node_slots);
		in->slot = -1;
	}
	in->st = I_DONE;
	in->tell = 0;
}

static enum px_err ec2w_release(void *vw, uint64_t id, struct px_error *err)
{
	struct ec2w *w = vw;
	struct inst *in = ec2w_inst_of(w, id);
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
		ec2w_bill_late(w, in, in->launch_s);     /* launched */
	else if (in->st == I_DONE && in->lost_answer)
		in->bill_late = true;               /* the listing says */
	else if (in->st == I_DONE)
		ec2w_bill_late(w, in, -1);               /* refused: nothing */
	/* the node is told to leave (the coordinator moves its work at
	 * once) and the instance terminated now: the controller's bill
	 * closed now, and EC2's closes when the call arrives; EC2's
	 * shutdown gives the node's processes their SIGTERM */
	if (in->st != I_DONE && ms > 0 && w->s.hooks.notice)
		w->s.hooks.notice(w->s.hooks.ctx, id, ms,
				  WORLD_LEAVE_RELEASE);
	ec2h_terminate_let_go(w->h, in->iid, in->type_name, in->market >= 0);
	ec2w_inst_close(w, in);
	return PX_OK;
}

static enum px_err ec2w_timer(void *vw, int64_t t_s, enum ctrl_timer_kind kind,
			      uint64_t id, struct px_error *err)
{
	struct ec2w *w = vw;

	(void)kind;
	return evq_push(&w->q, t_s, EW_HOUR, id, err);
}

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
	enum px_err e = ec2h_get(s->host, &h, err);

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
	w->coord_slot = ec2h_slot_take(h, 1, coord_slot_kept(s->job_dir));
	coord_slot_keep(s->job_dir, w->coord_slot);
	if (!w->cool_s || !w->cool_why || w->coord_slot < 0) {
		e = w->coord_slot < 0 ?
		    px_errorf(err, PX_ETOOBIG, "trainer_ports: no port range "
			      "left for the job's coordinator") :
		    px_errorf(err, PX_ENOMEM, "out of memory");
		ec2h_slot_give(h, w->coord_slot, 1);
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

enum px_err ec2w_first_step(struct ec2w *w, struct px_error *err)
{
	int64_t t0 = ec2w_clock(w), end = ctrl_end(w->c);
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
	w->poll_timer = loop_timer_add(w->h->wh->loop, POLL_MS, ec2w_poll_timer,
				       w);
	w->price_timer = loop_timer_add(w->h->wh->loop, 0, ec2w_price_timer, w);
	if (w->poll_timer < 0 || w->price_timer < 0)
		return px_errorf(err, PX_ENOMEM, "timer");
	if (!w->s.resume)
		return ec2w_first_step(w, err);
	/* an earlier life's instances first: the first decision comes
	 * with the listing (ec2w_reconcile_done) */
	e = ec2w_describe(w, ec2w_reconcile_done, 1, err);
	return e;
}

static int64_t ec2w_now(const void *vw)
{
	return ec2w_clock(vw);
}

static int64_t ec2w_next_ms(const void *vw)
{
	const struct ec2w *w = vw;
	double sp = ec2h_clock_speedup(w->h->wh->cfg);
	int64_t now = ec2w_clock(w), t;

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
		ec2w_inst_close(w, in);
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
		ec2w_inst_close(w, in);
	} else if (e == PX_OK && (tl & (1u << T_FAILED))) {
		e = ctrl_e(w, ctrl_failed(w->c, t, in->id, in->why), err);
		ec2w_inst_close(w, in);
	}
	return e;
}

/* One event, through the shared event driver (world.h). */
static enum px_err handle(void *vw, const struct evq_ev *ev, unsigned *why,
			  struct px_error *err)
{
	struct ec2w *w = vw;
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
		in = ec2w_inst_of(w, ev->id);
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
	int64_t now = ec2w_clock(w);
	/* everything due is decided now, not at the instant it was due:
	 * the clock is EC2's, and a release decided "at" a past instant
	 * would close the bill before EC2's does (the loop late under
	 * load: seconds at the fake's speed-up) */
	const struct world_drive d = {
		.c = w->c, .q = &w->q, .w = w, .handle = handle,
		.step_t = &w->step_t, .retime = true,
	};
	enum px_err e = PX_OK;

	*ret_stop = CTRL_RUN;
	*ret_t = w->step_t > now ? w->step_t : now;
	if (w->fatal[0])
		return px_errorf(err, PX_EAWS, "%s", w->fatal);
	if (!w->started)
		return PX_OK;
	e = bill_ends_at(w, ec2w_tell_t(w), err);
	if (e == PX_OK)
		e = world_drive_due(&d, now, p, ret_t, ret_stop, err);
	if (e == PX_OK && *ret_stop != CTRL_RUN)
		return PX_OK;
	if (e == PX_OK && w->fatal[0])
		e = px_errorf(err, PX_EAWS, "%s", w->fatal);
	if (e == PX_OK && !*ret_stop)
		*ret_stop = ctrl_stop(w->c, *ret_t, p);
	return e;
}

static enum px_err ec2w_ready(void *vw, uint64_t id, struct px_error *err)
{
	struct ec2w *w = vw;
	struct inst *in = ec2w_inst_of(w, id);

	(void)err;
	if (!in || (in->st == I_DONE && in->lost_answer && !in->released)) {
		/* a node of an instance the world may adopt yet */
		ec2w_joined_early_add(w, id);
		return PX_OK;
	}
	if (in->ready || in->released || in->st == I_DONE)
		return PX_OK;
	in->ready = true;
	if (in->st == I_ASKED)   /* told after its launch (run_done) */
		return PX_OK;
	if (in->st == I_PENDING)
		in->st = I_RUNNING;
	ec2w_tell(w, in, T_READY);
	return PX_OK;
}

/* The nodes run the user data's loop: a node that lost its coordinator
 * ends and starts again, and registers with the new one by itself. */
static enum px_err ec2w_restart_nodes(void *vw, struct px_error *err)
{
	struct ec2w *w = vw;
	int64_t now = ec2w_clock(w);

	(void)err;
	for (size_t i = 0; i < w->n; i++) {
		struct inst *in = &w->v[i];
		struct world_req q = ec2w_req_of(in);

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
	struct inst *in = ec2w_inst_of(w, id);
	double left_s = (double)(deadline_us - (int64_t)px_now_wall_us()) /
			1e6;

	if (!in || in->released || in->st == I_DONE || in->warn_s)
		return;
	if (left_s < 0)
		left_s = 0;
	if (rebalance) {
		in->warn_s = in->end_s = ec2w_clock(w);
		snprintf(in->why, sizeof in->why, "rebalance recommendation: "
			 "its node left");
		log_notice("job %" PRId64 ": instance %" PRIu64 " (%s): its "
			   "node left on a rebalance recommendation: the "
			   "instance ends now", w->s.job_id, id, in->iid);
		ec2h_terminate(w->h, in->iid, 0);
		ec2w_tell(w, in, T_FAILED);
		return;
	}
	in->warn_s = ec2w_clock(w) +
		    (int64_t)(left_s * ec2h_clock_speedup(w->h->wh->cfg));
	log_notice("job %" PRId64 ": instance %" PRIu64 " (%s): its node "
		   "read an interruption notice: gone in %.0f s", w->s.job_id,
		   id, in->iid, left_s);
	ec2w_tell(w, in, T_WARNED);
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

	if (bill_ends_at(w, ec2w_tell_t(w), &err) != PX_OK)
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
	/* detached: the host's until they end (a launch among them holds
	 * the account's quota until its instance is terminated) */
	while (w->calls) {
		struct call *k = w->calls;

		w->calls = k->next;
		k->w = NULL;
		k->next = w->h->detached;
		w->h->detached = k;
	}
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
		ec2h_slot_give(w->h, w->v[i].slot, w->node_slots);
	ec2h_slot_give(w->h, w->coord_slot, 1);
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
			 ec2h_slot_port(w->h, w->coord_slot));

	if (n < 0 || (size_t)n >= len)
		return px_errorf(err, PX_ETOOBIG, "head_address too long");
	return PX_OK;
}

/* world_ops.host_going: the let-go instances EC2 has not confirmed ended,
 * and those let go while their launch was on the wire. */
static void ec2w_host_going(const struct world_host *wh,
			    void (*each)(void *ctx, const char *type,
					 bool spot),
			    void *ctx)
{
	const struct ec2_host *h = wh->ec2;

	if (!h)
		return;
	for (size_t i = 0; i < h->dn; i++)
		if (h->dv[i].type[0])
			each(ctx, h->dv[i].type, h->dv[i].spot);
	for (const struct ec2w *w = h->worlds; w; w = w->next_w)
		for (size_t i = 0; i < w->n; i++)
			if (w->v[i].released && w->v[i].st == I_ASKED)
				each(ctx, w->v[i].type_name,
				     w->v[i].market >= 0);
	for (const struct call *k = h->detached; k; k = k->next)
		if (k->kind == 0 && k->type[0])
			each(ctx, k->type, k->spot);
}

const struct world_ops ec2_world_ops = {
	.name = "ec2",
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
	.load_market = ec2_world_market_history,
	.check = config_ec2_check,
	.config_problems = config_ec2_problems,
	.spec_check = ec2_world_spec_check,
	.host_start = ec2_world_sweep,
	.host_free = ec2_world_host_free,
	.host_going = ec2w_host_going,
};
