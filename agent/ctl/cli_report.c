/* cli_report.c -- `proteusctl report ID`: a job's money and fleet, read
 * from the store (its ledger and events: docs/schema.md), after the job
 * or while it runs.
 *
 *   proteusctl report ID [--db PATH] [--json] [--plot FILE]
 *
 * The cost is the ledger's: each line of an instance goes to that
 * instance's tier, market and type (its launch event says which).  A job
 * still running has bills still open, which the ledger does not hold
 * yet: its cost is then status's (the daemon's; the last progress event's
 * when the daemon does not answer), the difference shown as "not billed
 * yet".  Hours run from each instance's launch to its end (the last event
 * of the job for one still running); those that did work from its ready
 * event.
 */
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/jsonout.h"
#include "../../common/log.h"
#include "../../db/store.h"
#include "../proto.h"
#include "cli.h"
#include "simplot.h"

static const char report_usage[] =
	"usage: proteusctl report ID [--db PATH] [--json] [--plot FILE]\n"
	"\n"
	"A job's money and fleet, from the store: cost by tier, market and\n"
	"instance type, hours rented and hours that did work, what evictions\n"
	"cost (their bills, the replacements' start-up, work rolled back),\n"
	"what the same instances would have cost on demand, and the policy's\n"
	"decisions.  Works after the job and while it runs.\n"
	"\n"
	"  --db PATH    database (default: proteusd's, as for history)\n"
	"  --json       one JSON object; its cost_usd is status --json's\n"
	"  --plot FILE  draw cost, the fleet by tier and the test accuracy\n"
	"               over time to FILE (.png or .svg; needs gnuplot)\n"
	"\n"
	"exit: 0 ok, 1 failure, 2 usage, 4 no such database or job\n";

#define GROUPS_MAX 64            /* instance types (and markets) kept */

struct inst {
	int64_t id;                  /* the store's instance id */
	char type[STORE_NAME_MAX];
	bool spot, reliable;
	int64_t start_us, ready_us, end_us; /* 0: not (yet) */
	/* the last progress event before its ready one, and the clock it
	 * gave (0: none); and the last one before the clock last moved */
	int64_t before_us, before_clock, step_us, step_clock;
	int64_t start_clock;      /* the job's clock at its launch */
	bool evicted, warned;
	int64_t cost_uusd;           /* its ledger lines */
};

struct point {
	double h;                    /* hours since the job's start */
	double cost, acc;            /* acc NaN: not tested yet */
	int reliable, transient;     /* instances then */
};

struct report {
	int64_t id;
	char name[STORE_NAME_MAX];
	const char *state;
	bool final;
	struct inst *in;
	size_t n_in, cap_in;
	int64_t first_us, last_us;   /* the job's events */
	/* the last two instants of progress events, and their clocks; the
	 * last progress event before the clock last moved, and its clock */
	int64_t prog_us, prog_clock, prog_prev_us, prog_prev_clock;
	int64_t step_us, step_clock;
	int64_t ledger_uusd, other_uusd; /* other: lines of no instance */
	double od_fleet_usd;         /* the last progress event's */
	int64_t samples;             /* a program's (progress' samples) */
	double progress_cost_usd;    /* NaN: none */
	double acc;
	double rmse;                 /* an mf job's test RMSE (its loss) */
	int64_t clock, clocks_lost, losses;
	int64_t acquires, asked, releases, starts, stage_changes;
	int stage;
	json_t *rejects;             /* reason -> count */
	struct point *pts;
	size_t n_pts, cap_pts;
};

static struct inst *inst_of(struct report *r, int64_t id, bool add)
{
	for (size_t i = 0; i < r->n_in; i++)
		if (r->in[i].id == id)
			return &r->in[i];
	if (!add)
		return NULL;
	if (r->n_in == r->cap_in) {
		size_t cap = r->cap_in ? 2 * r->cap_in : 64;
		struct inst *v = px_reallocarray(r->in, cap, sizeof *v);

		if (!v)
			return NULL;
		r->in = v;
		r->cap_in = cap;
	}
	memset(&r->in[r->n_in], 0, sizeof r->in[0]);
	r->in[r->n_in].id = id;
	return &r->in[r->n_in++];
}

/* Instances up now, by tier. */
static void fleet_now(const struct report *r, int *rel, int *tr)
{
	*rel = *tr = 0;
	for (size_t i = 0; i < r->n_in; i++)
		if (!r->in[i].end_us)
			(r->in[i].reliable ? (*rel)++ : (*tr)++);
}

static void add_point(struct report *r, int64_t at_us, double cost,
		      double acc)
{
	struct point *p;

	if (r->n_pts == r->cap_pts) {
		size_t cap = r->cap_pts ? 2 * r->cap_pts : 256;
		struct point *v = px_reallocarray(r->pts, cap, sizeof *v);

		if (!v)
			return;  /* a plot with fewer points */
		r->pts = v;
		r->cap_pts = cap;
	}
	p = &r->pts[r->n_pts++];
	p->h = (double)(at_us - r->first_us) / 3.6e9;
	p->cost = cost;
	p->acc = acc;
	fleet_now(r, &p->reliable, &p->transient);
}

static double num(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);

	return json_is_number(v) ? json_number_value(v) : NAN;
}

static void take_progress(struct report *r, json_t *d, int64_t at_us)
{
	double clock = num(d, "clock"), cost = num(d, "cost_usd");

	if (isfinite(clock)) {
		if ((int64_t)clock < r->clock)   /* a checkpoint's rollback */
			r->clocks_lost += r->clock - (int64_t)clock;
		if ((int64_t)clock != r->clock && r->prog_us &&
		    r->prog_us < at_us) {
			r->step_us = r->prog_us;
			r->step_clock = r->clock;
		}
		r->clock = (int64_t)clock;
	}
	if (at_us > r->prog_us) {
		r->prog_prev_us = r->prog_us;
		r->prog_prev_clock = r->prog_clock;
		r->prog_us = at_us;
	}
	r->prog_clock = r->clock;
	/* a program job's own count of its work */
	if (isfinite(num(d, "samples")) && num(d, "samples") > r->samples)
		r->samples = (int64_t)num(d, "samples");
	if (isfinite(num(d, "test_accuracy")))
		r->acc = num(d, "test_accuracy");
	else if (isfinite(num(d, "test_loss")))  /* mf: no accuracy */
		r->rmse = num(d, "test_loss");
	if (isfinite(num(d, "fleet_ondemand_usd")))
		r->od_fleet_usd = num(d, "fleet_ondemand_usd");
	if (isfinite(num(d, "losses")))
		r->losses = (int64_t)num(d, "losses");
	if (isfinite(cost))
		r->progress_cost_usd = cost;
	add_point(r, at_us, isfinite(cost) ? cost : 0,
		  num(d, "test_accuracy"));
}

static void take_instance(struct report *r, const struct store_event *ev,
			  json_t *d)
{
	struct inst *in = inst_of(r, ev->instance_id,
				  !strcmp(ev->kind, "launch") ||
				  !strcmp(ev->kind, "adopt"));
	const char *type = json_string_value(json_object_get(d, "type"));

	if (!in)
		return;
	if (!strcmp(ev->kind, "launch") || !strcmp(ev->kind, "adopt")) {
		snprintf(in->type, sizeof in->type, "%s", type ? type : "?");
		in->spot = json_is_string(json_object_get(d, "zone"));
		in->reliable = json_is_true(json_object_get(d, "reliable"));
		if (!in->start_us) {
			in->start_us = ev->at_us;
			in->start_clock = r->clock;
		}
		if (!strcmp(ev->kind, "adopt"))
			in->ready_us = ev->at_us;
	} else if (!strcmp(ev->kind, "ready") && !in->ready_us) {
		bool last = r->prog_us && r->prog_us < ev->at_us;

		in->ready_us = ev->at_us;
		in->before_us = last ? r->prog_us : r->prog_prev_us;
		in->before_clock = last ? r->prog_clock : r->prog_prev_clock;
		in->step_us = r->step_us;
		in->step_clock = r->step_clock;
	} else if (!strcmp(ev->kind, "warning")) {
		in->warned = true;
	} else if (!strcmp(ev->kind, "eviction") ||
		   !strcmp(ev->kind, "release") || !strcmp(ev->kind, "lost")) {
		in->end_us = ev->at_us;
		in->evicted = !strcmp(ev->kind, "eviction");
	} else if (!strcmp(ev->kind, "bill_end") &&
		   isfinite(num(d, "ended_at"))) {
		in->end_us = (int64_t)num(d, "ended_at") * 1000000;
	} else {
		return;
	}
	/* the fleet changed: a point, at the cost last reported */
	add_point(r, ev->at_us, isfinite(r->progress_cost_usd) ?
		  r->progress_cost_usd : 0, NAN);
}

static void take_decision(struct report *r, const struct store_event *ev,
			  json_t *d)
{
	if (!strcmp(ev->kind, "decision")) {
		const char *a = json_string_value(json_object_get(d,
								  "action"));

		if (a && !strcmp(a, "acquire")) {
			r->acquires++;
			r->asked += (int64_t)fmax(0, num(d, "count"));
		} else if (a && !strcmp(a, "release")) {
			r->releases++;
		}
	} else if (!strcmp(ev->kind, "reject")) {
		const char *why = json_string_value(json_object_get(d,
								    "reason"));
		json_t *c;

		if (!why)
			why = "?";
		c = json_object_get(r->rejects, why);
		if (c)
			json_integer_set(c, json_integer_value(c) + 1);
		else if (json_object_size(r->rejects) < GROUPS_MAX)
			json_object_set_new(r->rejects, why,
					    json_integer(1));
	} else if (!strcmp(ev->kind, "stage")) {
		r->stage_changes++;
		r->stage = (int)num(d, "stage");
	} else if (!strcmp(ev->kind, "start")) {
		r->starts++;
	}
}

static enum px_err on_event(const struct store_event *ev, void *ctx)
{
	struct report *r = ctx;
	json_t *d = json_loadb(ev->detail, ev->detail_len, 0, NULL);

	if (!r->first_us || ev->at_us < r->first_us)
		r->first_us = ev->at_us;
	if (ev->at_us > r->last_us)
		r->last_us = ev->at_us;
	if (!strcmp(ev->kind, "progress") && json_is_object(d))
		take_progress(r, d, ev->at_us);
	else if (ev->instance_id > 0)
		take_instance(r, ev, json_is_object(d) ? d : NULL);
	else if (json_is_object(d))
		take_decision(r, ev, d);
	json_decref(d);
	return PX_OK;
}

static enum px_err on_line(const struct store_ledger_line *l, void *ctx)
{
	struct report *r = ctx;
	struct inst *in = l->instance_id > 0 ? inst_of(r, l->instance_id,
						       false) : NULL;

	r->ledger_uusd += l->amount_uusd;
	if (in)
		in->cost_uusd += l->amount_uusd;
	else
		r->other_uusd += l->amount_uusd;
	return PX_OK;
}

static enum px_err on_job(const struct store_job *j, void *ctx)
{
	struct report *r = ctx;

	snprintf(r->name, sizeof r->name, "%s", j->name);
	r->state = store_job_state_name(j->state);
	r->final = j->state != STORE_JOB_QUEUED &&
		   j->state != STORE_JOB_RUNNING;
	return PX_OK;
}

/* ---- the figures ---- */

static double hours(int64_t from, int64_t to)
{
	return from && to > from ? (double)(to - from) / 3.6e9 : 0;
}

/* When instance in began to work, up to its end: its ready event.  The
 * daemon hears a node is ready from the trainer's report naming it; one
 * heard only at its end (a job whose work fit between two reports: the
 * ready comes with done) while the job's clock moved on since the last
 * progress event before, worked since that event (or its launch, if
 * later): not "0 hours of work" for a job that did it all.  Where the
 * clock stood still since that event (a loaded host: the work was all
 * done by the report before the last), since the report before the
 * clock last moved; where no report had a clock below the last one (a
 * short job whose first report came at its end), since its launch. */
static int64_t work_from(const struct report *r, const struct inst *in,
			 int64_t end)
{
	int64_t from = 0;

	if (!in->ready_us || in->ready_us < end)
		return in->ready_us;
	if (in->before_us && r->clock > in->before_clock)
		from = in->before_us;
	else if (in->step_us && r->clock > in->step_clock)
		from = in->step_us;
	else if (r->clock > in->start_clock)
		from = in->start_us;    /* every report had the final clock */
	if (!from)
		return in->ready_us;
	return from > in->start_us ? from : in->start_us;
}

/* {key: {cost_usd, instances, hours}} for one grouping of the fleet. */
static void group_add(json_t *g, const char *key, const struct inst *in,
		      double h)
{
	json_t *o = json_object_get(g, key);

	if (!o) {
		if (json_object_size(g) >= GROUPS_MAX)
			return;
		o = json_pack("{s:I, s:I, s:f}", "cost_uusd", (json_int_t)0,
			      "instances", (json_int_t)0, "hours", 0.0);
		json_object_set_new(g, key, o);
	}
	json_object_set_new(o, "cost_uusd", json_integer(json_integer_value(
		json_object_get(o, "cost_uusd")) + in->cost_uusd));
	json_object_set_new(o, "instances", json_integer(json_integer_value(
		json_object_get(o, "instances")) + 1));
	json_object_set_new(o, "hours", json_real(num(o, "hours") + h));
}

/* cost_uusd -> cost_usd, hours rounded, in every group. */
static void group_finish(json_t *g)
{
	const char *k;
	json_t *o;

	json_object_foreach(g, k, o) {
		json_object_set_new(o, "cost_usd", json_real(px_usd(
			json_integer_value(json_object_get(o,
							   "cost_uusd")))));
		json_object_del(o, "cost_uusd");
		json_object_set_new(o, "hours", json_real(round(
			num(o, "hours") * 1e4) / 1e4));
	}
}

/* Evictions: their bills and hours; each one's replacement, the next
 * launch of the same tier after it, and that one's start-up (hours
 * rented before it was ready). */
static json_t *evictions_of(const struct report *r, int64_t now)
{
	int64_t n = 0, bills = 0;
	double rented = 0, worked = 0, start_h = 0;
	int64_t repl = 0;
	bool *taken = calloc(r->n_in + 1, sizeof *taken);

	for (size_t i = 0; i < r->n_in; i++) {
		const struct inst *e = &r->in[i];
		size_t best = r->n_in;

		if (!e->evicted)
			continue;
		n++;
		bills += e->cost_uusd;
		rented += hours(e->start_us, e->end_us);
		worked += hours(work_from(r, e, e->end_us), e->end_us);
		for (size_t k = 0; taken && k < r->n_in; k++)
			if (!taken[k] && r->in[k].reliable == e->reliable &&
			    r->in[k].start_us >= e->end_us &&
			    (best == r->n_in || r->in[k].start_us <
			     r->in[best].start_us))
				best = k;
		if (best < r->n_in) {
			const struct inst *b = &r->in[best];

			taken[best] = true;
			repl++;
			start_h += hours(b->start_us, b->ready_us ?
					 b->ready_us : b->end_us ? b->end_us :
					 now);
		}
	}
	free(taken);
	return json_pack("{s:I, s:f, s:f, s:f, s:I, s:f, s:I, s:I}",
			 "count", (json_int_t)n, "cost_usd", px_usd(bills),
			 "hours_rented", round(rented * 1e4) / 1e4,
			 "hours_worked", round(worked * 1e4) / 1e4,
			 "replacements", (json_int_t)repl,
			 "replacement_startup_hours", round(start_h * 1e4) /
			 1e4, "clocks_rolled_back", (json_int_t)r->clocks_lost,
			 "losses", (json_int_t)r->losses);
}

/* A running job's cost as status gives it (NaN: the daemon did not
 * answer). */
static double status_cost(int64_t id)
{
	char sock[CLI_SOCKET_MAX];
	json_t *req, *rep = NULL;
	double c = NAN;

	if (cli_socket_path(sock, sizeof sock) >= 0)
		return NAN;
	req = proto_request_new(PROTO_CMD_job);
	if (req && !json_object_set_new(req, "job", json_integer(id)) &&
	    cli_daemon_call(sock, req, &rep) == CLI_EXIT_OK)
		c = num(rep, "cost_usd");
	json_decref(req);
	json_decref(rep);
	return c;
}

static json_t *build(struct report *r, const char **ret_cost_from)
{
	json_t *tier = json_object(), *market = json_object(),
	       *type = json_object(), *o;
	int64_t now = r->last_us;
	double rented = 0, worked = 0, cost = px_usd(r->ledger_uusd), live;

	*ret_cost_from = "ledger";
	if (!r->final) {
		live = status_cost(r->id);
		if (isfinite(live)) {
			cost = live;
			*ret_cost_from = "status";
		} else if (isfinite(r->progress_cost_usd) &&
			   r->progress_cost_usd > cost) {
			cost = r->progress_cost_usd;
			*ret_cost_from = "progress";
		}
	}
	for (size_t i = 0; i < r->n_in; i++) {
		const struct inst *in = &r->in[i];
		int64_t end = in->end_us ? in->end_us : now;
		double h = hours(in->start_us, end);

		rented += h;
		worked += hours(work_from(r, in, end), end);
		group_add(tier, in->reliable ? "reliable" : "transient", in,
			  h);
		group_add(market, in->spot ? "spot" : "on-demand", in, h);
		group_add(type, in->type, in, h);
	}
	group_finish(tier);
	group_finish(market);
	group_finish(type);
	o = json_pack("{s:I, s:s, s:s, s:f, s:f, s:f, s:f, s:o, s:o, s:o, "
		      "s:{s:I, s:f, s:f}, s:o, s:{s:f, s:o*}, "
		      "s:{s:I, s:I, s:I, s:I, s:i, s:I, s:o}}",
		      "job", (json_int_t)r->id, "name", r->name, "state",
		      r->state, "cost_usd", px_usd_round(cost), "billed_usd",
		      px_usd(r->ledger_uusd), "unbilled_usd",
		      px_usd_round(fmax(0, cost - px_usd(r->ledger_uusd))),
		      "other_usd", px_usd(r->other_uusd), "by_tier", tier,
		      "by_market", market, "by_type", type, "hours",
		      "instances", (json_int_t)r->n_in, "rented",
		      round(rented * 1e4) / 1e4, "worked",
		      round(worked * 1e4) / 1e4, "evictions",
		      evictions_of(r, now), "ondemand",
		      "fleet_usd", px_usd_round(r->od_fleet_usd), "saved_ratio",
		      r->od_fleet_usd > 0 ? json_real(round((1 - cost /
		      r->od_fleet_usd) * 1e4) / 1e4) : NULL, "decisions",
		      "acquire", (json_int_t)r->acquires, "instances_asked",
		      (json_int_t)r->asked, "release", (json_int_t)r->releases,
		      "stage_changes", (json_int_t)r->stage_changes,
		      "stage", r->stage, "starts", (json_int_t)r->starts,
		      "rejects", json_incref(r->rejects));
	if (o && r->samples > 0)
		json_object_set_new(o, "samples", json_integer(r->samples));
	if (o && isfinite(r->acc))
		json_object_set_new(o, "test_accuracy", json_real(r->acc));
	else if (o && isfinite(r->rmse))
		json_object_set_new(o, "test_rmse", json_real(r->rmse));
	return o;
}

/* ---- text ---- */

static void print_groups(const char *what, json_t *g)
{
	const char *k;
	json_t *o;
	char safe[PX_TERM_SAFE_LEN(STORE_NAME_MAX)];

	printf("%-10s", what);
	json_object_foreach(g, k, o) {
		px_term_safe(k, safe, sizeof safe);
		printf(" %s $%.4f (%lld, %.2f h);", safe, num(o, "cost_usd"),
		       (long long)json_integer_value(json_object_get(o,
			"instances")), num(o, "hours"));
	}
	printf("%s\n", json_object_size(g) ? "" : " none");
}

static void print_report(json_t *o, const char *cost_from)
{
	json_t *h = json_object_get(o, "hours"),
	       *ev = json_object_get(o, "evictions"),
	       *od = json_object_get(o, "ondemand"),
	       *dc = json_object_get(o, "decisions");
	char safe[PX_TERM_SAFE_LEN(STORE_NAME_MAX)];
	const char *k;
	json_t *v;

	px_term_safe(json_string_value(json_object_get(o, "name")), safe,
		     sizeof safe);
	printf("job %lld %s: %s\n", (long long)json_integer_value(
		json_object_get(o, "job")), safe,
	       json_string_value(json_object_get(o, "state")));
	printf("cost      $%.4f", num(o, "cost_usd"));
	if (num(o, "unbilled_usd") > 0)
		printf(" ($%.4f billed, $%.4f not billed yet, from %s)",
		       num(o, "billed_usd"), num(o, "unbilled_usd"), cost_from);
	printf("\n");
	print_groups("by tier", json_object_get(o, "by_tier"));
	print_groups("by market", json_object_get(o, "by_market"));
	print_groups("by type", json_object_get(o, "by_type"));
	printf("hours     %.2f rented by %lld instances, %.2f of them doing "
	       "work (%.0f%%)\n", num(h, "rented"),
	       (long long)json_integer_value(json_object_get(h, "instances")),
	       num(h, "worked"), num(h, "rented") > 0 ? 100 * num(h, "worked")
	       / num(h, "rented") : 0.0);
	printf("evictions %lld cost $%.4f (%.2f h rented, %.2f h worked); %lld "
	       "replacements took %.2f h to start; %lld clocks rolled back, "
	       "%lld nodes lost\n", (long long)json_integer_value(
		json_object_get(ev, "count")), num(ev, "cost_usd"),
	       num(ev, "hours_rented"), num(ev, "hours_worked"),
	       (long long)json_integer_value(json_object_get(ev,
							     "replacements")),
	       num(ev, "replacement_startup_hours"),
	       (long long)json_integer_value(json_object_get(ev,
							"clocks_rolled_back")),
	       (long long)json_integer_value(json_object_get(ev, "losses")));
	printf("ondemand  $%.4f for the same instances and hours", num(od,
	       "fleet_usd"));
	if (isfinite(num(od, "saved_ratio")))
		printf(" (%.0f%% %s)", fabs(100 * num(od, "saved_ratio")),
		       num(od, "saved_ratio") >= 0 ? "saved" : "more");
	printf("\npolicy    %lld acquisitions (%lld instances asked), %lld "
	       "releases, %lld stage changes (stage %d now), %lld start%s\n",
	       (long long)json_integer_value(json_object_get(dc, "acquire")),
	       (long long)json_integer_value(json_object_get(dc,
							"instances_asked")),
	       (long long)json_integer_value(json_object_get(dc, "release")),
	       (long long)json_integer_value(json_object_get(dc,
							"stage_changes")),
	       (int)json_integer_value(json_object_get(dc, "stage")),
	       (long long)json_integer_value(json_object_get(dc, "starts")),
	       json_integer_value(json_object_get(dc, "starts")) == 1 ? "" :
	       "s");
	json_object_foreach(json_object_get(dc, "rejects"), k, v) {
		char why[PX_TERM_SAFE_LEN(256)], cut[257];

		snprintf(cut, sizeof cut, "%s", k);
		px_term_safe(cut, why, sizeof why);
		printf("rejected  %lld: %s\n",
		       (long long)json_integer_value(v), why);
	}
	if (json_is_integer(json_object_get(o, "samples")))
		printf("samples   %lld (the program's)\n", (long long)
		       json_integer_value(json_object_get(o, "samples")));
	if (isfinite(num(o, "test_accuracy")))
		printf("accuracy  %.2f%%\n", 100 * num(o, "test_accuracy"));
	else if (isfinite(num(o, "test_rmse")))
		printf("rmse      %.4f (test)\n", num(o, "test_rmse"));
}

/* ---- the plot ---- */

static void plot_script(FILE *f, enum simplot_format fmt, void *ctx)
{
	const struct report *r = ctx;
	char t[STORE_NAME_MAX + 32];

	snprintf(t, sizeof t, "job %" PRId64 " %s", r->id, r->name);
	simplot_safe_title(t, t, sizeof t);
	simplot_terminal(f, fmt, 1200);
	fputs("$d << EOD\n", f);
	for (size_t i = 0; i < r->n_pts; i++) {
		const struct point *p = &r->pts[i];

		fprintf(f, "%.5f %.6f %d %d ", p->h, p->cost, p->reliable,
			p->transient);
		if (isfinite(p->acc))
			fprintf(f, "%.5f\n", 100 * p->acc);
		else
			fputs("NaN\n", f);
	}
	fputs("EOD\n", f);
	fprintf(f, "set multiplot layout 3,1 title '%s' font 'sans,13'\n", t);
	fputs("set grid\nset key left top box opaque\n"
	      "set xlabel 'hours since the job started'\n"
	      "set xrange [0:*]\nset yrange [0:*]\n"
	      "set ylabel 'USD'\nset title 'cost so far'\n"
	      "plot $d using 1:2 with steps lw 2 title 'cost'\n"
	      "set ylabel 'instances'\nset title 'fleet by tier'\n"
	      "plot $d using 1:3 with steps lw 2 title 'reliable', "
	      "$d using 1:4 with steps lw 2 title 'transient'\n"
	      "set ylabel 'percent'\nset title 'test accuracy'\n"
	      "set yrange [0:100]\nset datafile missing 'NaN'\n"
	      "plot $d using 1:5 with lines lw 2 title 'accuracy'\n"
	      "unset multiplot\n", f);
}

/* ---- the command ---- */

static int run(int64_t id, const char *db, bool json, const char *plot)
{
	struct report r = { .id = id, .acc = NAN, .rmse = NAN,
			    .progress_cost_usd = NAN };
	struct store_job_filter flt = { .id = id };
	struct px_error err = {0};
	enum simplot_format fmt = SIMPLOT_PNG;
	char *path = db ? strdup(db) : cli_default_db();
	const char *from;
	struct store *st = NULL;
	enum px_err e;
	json_t *o = NULL;
	int code = CLI_EXIT_FAIL;

	if (plot && simplot_format_of(plot, &fmt, &err) != PX_OK) {
		free(path);
		return cli_usage("report", "%s", err.msg);
	}
	if (!path)
		return CLI_EXIT_FAIL;
	r.rejects = json_object();
	e = store_open_readonly(path, &st, &err);
	if (e == PX_OK)
		e = store_jobs_each(st, &flt, on_job, &r, &err);
	if (e == PX_OK && !r.state) {
		log_err("no job %" PRId64 " in %s", id, path);
		code = CLI_EXIT_NOTFOUND;
		goto out;
	}
	if (e == PX_OK)
		e = store_events_each(st, id, on_event, &r, &err);
	if (e == PX_OK)
		e = store_ledger_each(st, id, on_line, &r, &err);
	if (e != PX_OK) {
		log_err("%s", err.msg);
		code = e == PX_ENOENT ? CLI_EXIT_NOTFOUND : CLI_EXIT_FAIL;
		goto out;
	}
	o = build(&r, &from);
	if (!o) {
		log_err("out of memory");
		goto out;
	}
	if (json) {
		json_object_set_new(o, "cost_from", json_string(from));
		code = px_json_dumpf(o, stdout, JSON_INDENT(2)) ? CLI_EXIT_FAIL
								: CLI_EXIT_OK;
		putchar('\n');
	} else {
		print_report(o, from);
		code = CLI_EXIT_OK;
	}
	/* gnuplot missing or failed, the file not written: 1 (4 says
	 * "no such job") */
	if (plot && simplot_render(plot, fmt, plot_script, &r, &err) != PX_OK) {
		log_err("%s", err.msg);
		code = CLI_EXIT_FAIL;
	}
out:
	json_decref(o);
	json_decref(r.rejects);
	free(r.in);
	free(r.pts);
	store_close(st);
	free(path);
	return code;
}

int cli_report(int argc, char **argv)
{
	static const struct option opts[] = {
		{"db", required_argument, NULL, 'd'},
		{"json", no_argument, NULL, 'j'},
		{"plot", required_argument, NULL, 'p'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0}
	};
	const char *db = cli_g.db, *plot = NULL;
	bool json = cli_g.json;
	char *end;
	long long id;
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (c) {
		case 'd': db = optarg; break;
		case 'j': json = true; break;
		case 'p': plot = optarg; break;
		case 'h':
			fputs(report_usage, stdout);
			return CLI_EXIT_OK;
		default:
			return cli_bad_option("report", argv, c);
		}
	}
	if (optind == argc)
		return cli_usage("report", "no job id given");
	if (optind != argc - 1)
		return cli_usage("report", "one job id, not %d arguments",
				 argc - optind);
	id = strtoll(argv[optind], &end, 10);
	if (*end || end == argv[optind] || id <= 0)
		return cli_usage("report", "'%s' is not a job id",
				 argv[optind]);
	return run(id, db, json, plot);
}
