/* journal.c -- controller events to store rows (journal.h). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/jsonout.h"
#include "journal.h"

struct jinst {
	int64_t row;              /* instances.id */
	int64_t launch_s;
};

struct journal {
	struct journal_setup s;
	struct jinst *v;          /* by controller id */
	size_t n;
	int64_t alloc_id;         /* the pending decide-acquire's */
	int alloc_left;           /* launches it may still account for */
	char alloc_type[64], alloc_zone[64];
};

enum px_err journal_new(const struct journal_setup *s, struct journal **ret,
			struct px_error *err)
{
	struct journal *j;

	if (!s->world)
		return px_errorf(err, PX_EINVAL, "journal: no world");
	j = px_calloc(1, sizeof *j);
	if (!j)
		return px_errorf(err, PX_ENOMEM, "out of memory");
	j->s = *s;
	*ret = j;
	return PX_OK;
}

void journal_free(struct journal *j)
{
	if (!j)
		return;
	free(j->v);
	free(j);
}

int64_t journal_instance(const struct journal *j, uint64_t id)
{
	return id < j->n ? j->v[id].row : 0;
}

static json_t *usd(int64_t uusd)
{
	return json_real(px_usd(uusd));
}

/* The event's detail as compact JSON (caller frees) or NULL on OOM. */
static char *event_detail(const struct ctrl_event *ev)
{
	json_t *o = json_object();
	char *s;

	if (!o)
		return NULL;
	if (ev->kind == CTRL_EV_DECIDE_ACQUIRE ||
	    ev->kind == CTRL_EV_DECIDE_RELEASE)
		json_object_set_new(o, "action", json_string(
			ev->kind == CTRL_EV_DECIDE_ACQUIRE ? "acquire" :
			"release"));
	else
		json_object_set_new(o, "event",
				    json_string(ctrl_event_name(ev->kind)));
	if (ev->instance)
		json_object_set_new(o, "instance",
				    json_integer((json_int_t)ev->instance));
	if (ev->kind == CTRL_EV_DECIDE_ACQUIRE)
		json_object_set_new(o, "count", json_integer(ev->count));
	if (ev->kind == CTRL_EV_STAGE)
		json_object_set_new(o, "stage", json_integer(ev->count));
	if (ev->type)
		json_object_set_new(o, "type", json_string(ev->type));
	if (ev->type || ev->zone) {
		json_object_set_new(o, "zone", ev->zone ?
				    json_string(ev->zone) : json_null());
		json_object_set_new(o, "market", json_string(
			ev->zone ? "spot" : "on-demand"));
		json_object_set_new(o, "reliable", json_boolean(ev->reliable));
	}
	if (ev->zone) {
		json_object_set_new(o, "bid_usd", usd(ev->bid_uusd));
		if (ev->kind != CTRL_EV_DECIDE_ACQUIRE)
			json_object_set_new(o, "price_usd",
					    usd(ev->price_uusd));
	}
	if (ev->kind == CTRL_EV_EVICTION || ev->kind == CTRL_EV_RELEASE ||
	    ev->kind == CTRL_EV_DONE || ev->kind == CTRL_EV_BILL_END)
		json_object_set_new(o, "charge_usd", usd(ev->amount_uusd));
	if (ev->kind == CTRL_EV_BILL_END)
		json_object_set_new(o, "ended_at", json_integer(ev->end_s));
	if (ev->detail)
		json_object_set_new(o, "reason", json_string(ev->detail));
	/* every figure exact: JSON_REAL_PRECISION(10) cut a charge of
	 * $12345.678901 to 12345.6789 */
	s = px_json_dumps(o, JSON_COMPACT);
	json_decref(o);
	return s;
}

/* The events table's kind for a controller event. */
static const char *event_kind(enum ctrl_event_kind k)
{
	switch (k) {
	case CTRL_EV_DECIDE_ACQUIRE:
	case CTRL_EV_DECIDE_RELEASE:
		return "decision";
	case CTRL_EV_LAUNCH: return "launch";
	case CTRL_EV_REJECT: return "reject";
	case CTRL_EV_READY: return "ready";
	case CTRL_EV_WARNING: return "warning";
	case CTRL_EV_EVICTION: return "eviction";
	case CTRL_EV_RELEASE: return "release";
	case CTRL_EV_DONE: return "done";
	case CTRL_EV_STAGE: return "stage";
	case CTRL_EV_ADOPT: return "adopt";
	case CTRL_EV_BILL_END: return "bill_end";
	default: return "other";
	}
}

static enum px_err slot(struct journal *j, uint64_t id, struct px_error *err)
{
	size_t n;
	struct jinst *v;

	if (id < j->n)
		return PX_OK;
	if (id > (uint64_t)1 << 40)
		return px_errorf(err, PX_EINVAL, "instance id %llu out of "
				 "range", (unsigned long long)id);
	n = j->n ? j->n : 64;
	while (n <= id)
		n *= 2;
	v = px_reallocarray(j->v, n, sizeof *v);
	if (!v)
		return px_errorf(err, PX_ENOMEM, "out of memory");
	memset(v + j->n, 0, (n - j->n) * sizeof *v);
	j->v = v;
	j->n = n;
	return PX_OK;
}

/* An allocation row for what ev describes (count instances). */
static enum px_err allocation(struct journal *j, const struct ctrl_event *ev,
			      int count, struct px_error *err)
{
	int64_t market = 0;
	enum px_err e = PX_OK;

	if (ev->zone)
		e = store_market_get_or_add(j->s.st, j->s.region, ev->zone,
					    ev->type, j->s.product, &market,
					    err);
	if (e == PX_OK)
		e = store_allocation_add(j->s.st, j->s.job_id, market,
					 ev->type ? ev->type : "?",
					 ev->reliable ? STORE_TIER_RELIABLE :
					 STORE_TIER_TRANSIENT, ev->bid_uusd,
					 count, ev->t_s * PX_USEC_PER_SEC,
					 &j->alloc_id, err);
	if (e == PX_OK) {
		j->alloc_left = count;
		snprintf(j->alloc_type, sizeof j->alloc_type, "%s",
			 ev->type ? ev->type : "");
		snprintf(j->alloc_zone, sizeof j->alloc_zone, "%s",
			 ev->zone ? ev->zone : "");
	}
	return e;
}

static bool alloc_matches(const struct journal *j,
			  const struct ctrl_event *ev)
{
	return j->alloc_left > 0 && ev->type &&
	       !strcmp(j->alloc_type, ev->type) &&
	       !strcmp(j->alloc_zone, ev->zone ? ev->zone : "");
}

static enum px_err launch(struct journal *j, const struct ctrl_event *ev,
			  struct px_error *err)
{
	char cid[128];
	enum px_err e = slot(j, ev->instance, err);

	if (e == PX_OK && !alloc_matches(j, ev))
		e = allocation(j, ev, 1, err);   /* no decision asked for it */
	if (e != PX_OK)
		return e;
	j->alloc_left--;
	if (j->s.cloud_id)
		j->s.cloud_id(j->s.ctx, ev->instance, cid, sizeof cid);
	else
		snprintf(cid, sizeof cid, "%s-%llu", j->s.world,
			 (unsigned long long)ev->instance);
	j->v[ev->instance].launch_s = ev->t_s;
	return store_instance_add(j->s.st, j->alloc_id, cid,
				  ev->t_s * PX_USEC_PER_SEC, ev->instance,
				  &j->v[ev->instance].row, err);
}

struct adopt_find {
	uint64_t ctrl_id;
	int64_t row;
};

static enum px_err adopt_row(const struct store_open_instance *in, void *ctx)
{
	struct adopt_find *f = ctx;

	if (in->ctrl_id == f->ctrl_id)
		f->row = in->id;
	return PX_OK;
}

/* An earlier life's instance taken up again: its open row, or (the row
 * was never written: the daemon died between the launch and the store)
 * a new one, as a launch. */
static enum px_err adopt(struct journal *j, const struct ctrl_event *ev,
			 struct px_error *err)
{
	struct adopt_find f = { .ctrl_id = ev->instance };
	enum px_err e = slot(j, ev->instance, err);

	if (e == PX_OK)
		e = store_open_instances_each(j->s.st, j->s.job_id, adopt_row,
					      &f, err);
	if (e != PX_OK)
		return e;
	if (!f.row)
		return launch(j, ev, err);
	j->v[ev->instance].launch_s = ev->t_s;
	j->v[ev->instance].row = f.row;
	return PX_OK;
}

/* The end of an instance: its row closed and its ledger line. */
static enum px_err ended(struct journal *j, const struct ctrl_event *ev,
			 int64_t row, struct px_error *err)
{
	bool evicted = ev->kind == CTRL_EV_EVICTION;
	/* an instance whose node failed on its own says so (ctrl_failed) */
	const char *how = evicted ? "evicted" : ev->detail &&
			  !strncmp(ev->detail, "failed", 6) ? ev->detail :
			  "released";
	int64_t from = ev->instance < j->n && row ?
		       j->v[ev->instance].launch_s : ev->t_s;
	char note[160];
	enum px_err e = PX_OK;

	/* let go while it was asked for, with nothing charged: it has no
	 * row and no line (a late launch gets both, ctrl_bill_late), not
	 * a $0 line that reads as a second one of the same instance */
	if (!row && !ev->amount_uusd)
		return PX_OK;
	if (row)
		e = store_instance_end(j->s.st, row, ev->t_s * PX_USEC_PER_SEC,
				       how, err);
	if (e != PX_OK)
		return e;
	snprintf(note, sizeof note, "instance %llu %s %s%s%s, %s",
		 (unsigned long long)ev->instance,
		 ev->type ? ev->type : "?", ev->zone ? "spot in " :
		 "on-demand", ev->zone ? ev->zone : "",
		 ev->reliable ? " (reliable)" : "", how);
	return store_ledger_add(j->s.st, j->s.job_id, row,
				from * PX_USEC_PER_SEC,
				ev->t_s * PX_USEC_PER_SEC, ev->amount_uusd,
				note, err);
}

/* The provider billed an instance we ended to its own end: its ledger
 * line and its row end there, the difference (the seconds after our
 * close, or what a provider's end before it took off) on the same line
 * (one line per instance). */
static enum px_err bill_end(struct journal *j, const struct ctrl_event *ev,
			    int64_t row, struct px_error *err)
{
	if (!row)
		return PX_OK;
	return store_instance_bill_end(j->s.st, row, ev->end_s *
				       PX_USEC_PER_SEC, ev->amount_uusd, err);
}

enum px_err journal_event(struct journal *j, const struct ctrl_event *ev,
			  struct px_error *err)
{
	int64_t row;
	char *detail;
	enum px_err e = PX_OK;

	if (ev->kind == CTRL_EV_DECIDE_ACQUIRE && ev->count > 0)
		e = allocation(j, ev, ev->count, err);
	else if (ev->kind == CTRL_EV_LAUNCH && ev->instance)
		e = launch(j, ev, err);
	else if (ev->kind == CTRL_EV_ADOPT && ev->instance)
		e = adopt(j, ev, err);
	if (e != PX_OK)
		return e;
	row = ev->instance ? journal_instance(j, ev->instance) : 0;
	detail = event_detail(ev);
	if (!detail)
		return px_errorf(err, PX_ENOMEM, "out of memory");
	e = store_event_add(j->s.st, j->s.job_id, row,
			    ev->t_s * PX_USEC_PER_SEC, event_kind(ev->kind),
			    detail, err);
	free(detail);
	if (e == PX_OK && (ev->kind == CTRL_EV_EVICTION ||
			   ev->kind == CTRL_EV_RELEASE))
		e = ended(j, ev, row, err);
	if (e == PX_OK && ev->kind == CTRL_EV_BILL_END)
		e = bill_end(j, ev, row, err);
	return e;
}
