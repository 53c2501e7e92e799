/* test_sim_prop.c -- property test of the simulator (agent/world/sim.c) through
 * the API `proteusctl simulate` uses (plan, sim_run, the journal into a
 * store): random valid job specs (sizes, types, zones, speeds, budgets,
 * deadlines, rates, extreme values at the spec's bounds included), random
 * billing models, seeds and windows, over the shipped 7-day slice and
 * small random traces.  For every policy and every run:
 *  - no figure is negative, infinite or NaN; free-hours <= instance-hours;
 *  - the cost the run reports equals the sum of the ledger lines its
 *    journal wrote to the store, to the micro-dollar;
 *  - a run that says done did exactly its work_hours, one that does not
 *    did less, within the window and the deadline;
 *  - the oracle's bound (and oracle-paid's) has finite figures, and no
 *    completed run of a policy that keeps the reliable tier (all but
 *    ondemand) costs less than the bound (per-second bills round each
 *    instance to the micro-dollar: one per instance of slack).
 * Seeded and reproducible: PX_PROP_SEED=N (default below) and
 * PX_PROP_CASES=N (default 48) choose the cases; a failure prints the
 * case's seed, the spec and the window. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../agent/journal.h"
#include "../../agent/world/sim.h"
#include "../../cloudapi/trace.h"
#include "../../db/store.h"
#include "../integration/pxrun.h"

#define PROP_SEED_DEFAULT 20240611ull
#define PROP_CASES_DEFAULT 48
#define SLICE "docs/examples/traces/us-east-1_2016-03-01_7d_linux.json.gz"
#define OD "etc/ondemand/us-east-1_2016-02_2016-04.json"

/* The slice's types and zones; the random traces use them too (the
 * on-demand table has them all). */
static const char *const types[] = {
	"c1.xlarge", "d2.xlarge", "g2.8xlarge", "m1.large", "m3.large",
	"m3.medium", "m4.10xlarge", "r3.large",
};
#define N_TYPES (sizeof types / sizeof *types)
static const char *const zones[] = {"us-east-1a", "us-east-1b",
				    "us-east-1c"};
#define N_ZONES (sizeof zones / sizeof *zones)

static uint64_t mix(uint64_t x)
{
	x += 0x9E3779B97F4A7C15ull;
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
	x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
	return x ^ (x >> 31);
}

static uint64_t next(uint64_t *s)
{
	*s += 0x9E3779B97F4A7C15ull;
	return mix(*s);
}

static double unif(uint64_t *s)
{
	return (double)(next(s) >> 11) / 9007199254740992.0;
}

static int irand(uint64_t *s, int lo, int hi)
{
	return lo + (int)(next(s) % (uint64_t)(hi - lo + 1));
}

static bool chance(uint64_t *s, double p)
{
	return unif(s) < p;
}

/* Log-uniform in [lo, hi]; each bound itself one time in eight. */
static double logu(uint64_t *s, double lo, double hi)
{
	double u = unif(s);

	if (u < 0.125)
		return lo;
	if (u > 0.875)
		return hi;
	return exp(log(lo) + unif(s) * (log(hi) - log(lo)));
}

/* ---- markets ---- */

struct slice_ctx {
	struct market_set *ms;
};

static enum px_err slice_record(const struct trace_record *r, void *arg,
				struct px_error *err)
{
	struct slice_ctx *c = arg;

	if (strcmp(r->product, "Linux/UNIX") || strncmp(r->zone,
							"us-east-1", 9))
		return PX_OK;
	return market_set_add(c->ms, r->zone, r->type, r->t_s, r->price_uusd,
			      err);
}

static void load_slice(struct market_set *ms)
{
	char *path = px_src_path(SLICE);
	struct slice_ctx c = {.ms = ms};
	struct px_error e = {0};

	market_set_init(ms);
	cr_assert_eq(trace_read_file(path, slice_record, &c, NULL, &e), PX_OK,
		     "%s", e.msg);
	cr_assert_eq(market_set_seal(ms, &e), PX_OK, "%s", e.msg);
	free(path);
}

/* 1-3 zones x 1-8 types over 1-4 days from 2016-03-01: random walks around
 * a base price with spikes above on-demand, records every 5 min to 6 h;
 * some markets start late (no price before). */
static void random_trace(uint64_t *s, struct market_set *ms,
			 const struct ondemand_table *od)
{
	int64_t t0 = 1456790400, days = irand(s, 1, 4);
	int nz = irand(s, 1, (int)N_ZONES), nt = irand(s, 1, (int)N_TYPES);
	struct px_error e = {0};

	market_set_init(ms);
	for (int z = 0; z < nz; z++)
		for (int t = 0; t < nt; t++) {
			int64_t odp = 100000, p, ts = t0;

			for (size_t i = 0; i < od->n; i++)
				if (!strcmp(od->v[i].type, types[t]))
					odp = od->v[i].uusd_per_hour;
			p = (int64_t)(odp * (0.05 + 0.5 * unif(s)));
			if (z + t > 0 && chance(s, 0.2))
				ts += irand(s, 0, 20 * 3600);
			for (; ts <= t0 + days * 86400;
			     ts += chance(s, 0.9) ? irand(s, 300, 3600) :
				   irand(s, 3600, 6 * 3600)) {
				double u = unif(s);

				if (u < 0.03)
					p = odp * irand(s, 2, 10);
				else if (u < 0.4)
					p = (int64_t)(odp * (0.01 +
							     0.6 * unif(s)));
				if (p < 1)
					p = 1;
				cr_assert_eq(market_set_add(ms, zones[z],
							    types[t], ts, p,
							    &e), PX_OK, "%s",
					     e.msg);
			}
		}
	cr_assert_eq(market_set_seal(ms, &e), PX_OK, "%s", e.msg);
}

/* ---- job specs ---- */

/* The zones that have a market in ms. */
static size_t zones_in(const struct market_set *ms, const char **out)
{
	size_t n = 0;

	for (size_t i = 0; i < N_ZONES; i++)
		for (size_t m = 0; m < ms->n; m++)
			if (!strcmp(ms->v[m].zone, zones[i]) && ms->v[m].n) {
				out[n++] = zones[i];
				break;
			}
	return n;
}

/* The types that have a market in one of the zones of za (a JSON array;
 * NULL: any zone). */
static size_t types_in(const struct market_set *ms, json_t *za,
		       const char **out)
{
	size_t n = 0;

	for (size_t i = 0; i < N_TYPES; i++) {
		bool found = false;

		for (size_t m = 0; m < ms->n && !found; m++) {
			if (strcmp(ms->v[m].type, types[i]) || !ms->v[m].n)
				continue;
			found = !za;
			for (size_t z = 0; za && z < json_array_size(za); z++) {
				json_t *zn = json_array_get(za, z);

				found |= !strcmp(ms->v[m].zone,
						 json_string_value(zn));
			}
		}
		if (found)
			out[n++] = types[i];
	}
	return n;
}

/* A random subset (at least one) of v[0..n), in random order. */
static json_t *subset(uint64_t *s, const char **v, size_t n)
{
	json_t *a = json_array();
	bool used[16] = {false};
	int k = irand(s, 1, (int)n);

	for (int i = 0; i < k; i++) {
		size_t j = next(s) % n;

		while (used[j])
			j = (j + 1) % n;
		used[j] = true;
		json_array_append_new(a, json_string(v[j]));
	}
	return a;
}

/* A random valid spec for the markets of ms, as JSON text (caller frees). */
static char *random_spec(uint64_t *s, const struct market_set *ms)
{
	const char *tv[N_TYPES], *zv[N_ZONES];
	size_t nz = zones_in(ms, zv), nt;
	json_t *spot = json_object(), *j = json_object(), *st, *za = NULL;
	char *text;

	cr_assert(nz > 0);
	if (chance(s, 0.5)) {
		za = subset(s, zv, nz);
		json_object_set_new(spot, "zones", za);
	}
	nt = types_in(ms, za, tv);
	cr_assert(nt > 0);
	st = subset(s, tv, nt);
	json_object_set_new(spot, "types", st);
	json_object_set_new(spot, "max_instances", json_integer(
		chance(s, 0.1) ? 0 : chance(s, 0.1) ? irand(s, 50, 200) :
		irand(s, 1, 24)));
	json_object_set_new(j, "name", json_string("prop"));
	json_object_set_new(j, "region", json_string("us-east-1"));
	json_object_set_new(j, "work_hours", json_real(
		chance(s, 0.3) ? logu(s, 0.001, 1e7) : logu(s, 1, 500)));
	/* mostly one of the spot types, sometimes one without a market */
	json_object_set_new(j, "reference_type", json_string(
		chance(s, 0.85) ? json_string_value(json_array_get(st,
			next(s) % json_array_size(st))) :
		types[next(s) % N_TYPES]));
	json_object_set_new(j, "instances", json_integer(
		chance(s, 0.1) ? irand(s, 50, 200) : irand(s, 1, 16)));
	json_object_set_new(j, "reliable", json_pack("{s:s, s:i}", "type",
		types[next(s) % N_TYPES], "count", chance(s, 0.3) ? 0 :
		irand(s, 1, 4)));
	json_object_set_new(j, "spot", spot);
	if (chance(s, 0.4)) {
		json_t *sp = json_object();

		for (int k = irand(s, 1, 3); k > 0; k--)
			json_object_set_new(sp, types[next(s) % N_TYPES],
					    json_real(logu(s, 0.001, 1000)));
		json_object_set_new(j, "speed", sp);
	}
	if (chance(s, 0.5)) {
		json_object_set_new(j, "scaling_efficiency",
				    json_real(chance(s, 0.2) ? 0.5 :
					      chance(s, 0.2) ? 1 :
					      0.5 + 0.5 * unif(s)));
	} else if (chance(s, 0.4)) {
		/* a measured profile: 1..4 points, throughput and accuracy
		 * per sample anywhere in their ranges (superlinear too) */
		json_t *pr = json_object(), *w = json_array(),
		       *sps = json_array(), *aps = json_array();
		int np = irand(s, 1, 4);

		for (int k = 0; k < np; k++) {
			json_array_append_new(w, json_integer(1 << k));
			json_array_append_new(sps, json_real(
				logu(s, 1e-3, 1e9)));
			json_array_append_new(aps, json_real(
				logu(s, 1e-12, 1)));
		}
		json_object_set_new(pr, "workers", w);
		json_object_set_new(pr, "samples_per_s", sps);
		json_object_set_new(pr, "accuracy_per_sample", aps);
		json_object_set_new(j, "scaling_profile", pr);
	}
	if (chance(s, 0.4))
		json_object_set_new(j, "startup_seconds", json_integer(
			chance(s, 0.2) ? 86400 : irand(s, 0, 600)));
	if (chance(s, 0.4))
		json_object_set_new(j, "clock_seconds", json_integer(
			chance(s, 0.2) ? 86400 : irand(s, 0, 600)));
	if (chance(s, 0.4))
		json_object_set_new(j, "warning_seconds", json_integer(
			chance(s, 0.3) ? 0 : irand(s, 0, 3600)));
	if (chance(s, 0.4))
		json_object_set_new(j, "tick_seconds", json_integer(
			irand(s, 60, 86400)));
	if (chance(s, 0.3))
		json_object_set_new(j, "budget_usd",
				    json_real(logu(s, 0.000001, 1e9)));
	if (chance(s, 0.3))
		json_object_set_new(j, "deadline_hours",
				    json_real(logu(s, 0.001, 1e6)));
	if (chance(s, 0.3))
		json_object_set_new(j, "interruption_rates", json_pack(
			"{s:f}", "default", chance(s, 0.2) ? 0 :
			logu(s, 1e-300, 100)));
	text = json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(17));
	json_decref(j);
	cr_assert_not_null(text);
	return text;
}

/* ---- one case ---- */

static uint64_t env_u64(const char *name, uint64_t def)
{
	const char *v = getenv(name);
	char *end;
	unsigned long long x;

	if (!v || !*v)
		return def;
	x = strtoull(v, &end, 10);
	cr_assert(!*end, "%s: not a number: '%s'", name, v);
	return x;
}


struct ledger_sum {
	int64_t sum;
	bool bad;
};

static enum px_err add_line(const struct store_ledger_line *l, void *arg)
{
	struct ledger_sum *s = arg;

	s->sum += l->amount_uusd;
	s->bad |= l->amount_uusd < 0 || l->from_us > l->to_us;
	return PX_OK;
}

static enum px_err sink(const struct ctrl_event *ev, void *arg)
{
	struct px_error err = {0};

	return journal_event(arg, ev, &err);
}

static bool ok_figure(double x)
{
	return isfinite(x) && x >= 0;
}

static void check_run(const char *ctx, const struct jobspec *job,
		      const struct sim_plan *plan, const struct sim_result *r,
		      struct store *st, int64_t job_id)
{
	double win_h = (double)(sim_plan_end(plan) - sim_plan_start(plan)) /
		       3600.0, cpw;
	struct ledger_sum ls = {0};
	struct px_error e = {0};
	int64_t cost = -1;

	cr_assert(ok_figure(r->cost_usd) && ok_figure(r->runtime_hours) &&
		  ok_figure(r->work_done_hours) &&
		  ok_figure(r->cost_per_work_usd) &&
		  ok_figure(r->instance_hours) && ok_figure(r->free_hours),
		  "%s: a figure is negative or not finite: cost %g runtime %g "
		  "work %g cpw %g inst_h %g free_h %g", ctx, r->cost_usd,
		  r->runtime_hours, r->work_done_hours, r->cost_per_work_usd,
		  r->instance_hours, r->free_hours);
	cr_assert(r->cost_uusd >= 0 && r->evictions >= 0 &&
		  r->instances_launched >= 0 && r->decisions >= 0,
		  "%s: a count is negative", ctx);
	cr_assert(r->cost_usd == (double)r->cost_uusd / PX_UUSD_PER_USD,
		  "%s: cost_usd %.17g vs %lld uusd", ctx, r->cost_usd,
		  (long long)r->cost_uusd);
	cr_assert(r->free_hours <= r->instance_hours + 1e-9,
		  "%s: free %g > instance %g hours", ctx, r->free_hours,
		  r->instance_hours);
	cr_assert(r->runtime_hours <= win_h + 1e-9, "%s: runtime %g > window "
		  "%g h", ctx, r->runtime_hours, win_h);
	if (job->deadline_hours > 0)
		cr_assert(r->runtime_hours <= job->deadline_hours + 1e-9,
			  "%s: runtime %g past the deadline", ctx,
			  r->runtime_hours);
	/* the budget is a cap (docs/jobspec.md): never passed, and a run
	 * is done exactly when it completed */
	if (job->budget_uusd >= 0)
		cr_assert(r->cost_uusd <= job->budget_uusd, "%s: cost %lld "
			  "uusd past the budget %lld", ctx,
			  (long long)r->cost_uusd,
			  (long long)job->budget_uusd);
	cr_assert(r->completed == (r->stop == SIM_STOP_DONE), "%s: completed "
		  "%d, stop %s", ctx, r->completed, sim_stop_name(r->stop));
	if (r->stop == SIM_STOP_BUDGET)
		cr_assert(job->budget_uusd >= 0, "%s: stopped by no budget",
			  ctx);
	if (r->completed)
		cr_assert(r->work_done_hours == job->work_hours, "%s: done "
			  "with %.17g of %.17g work-hours", ctx,
			  r->work_done_hours, job->work_hours);
	else
		cr_assert(r->work_done_hours < job->work_hours, "%s: not done "
			  "with %.17g of %.17g work-hours", ctx,
			  r->work_done_hours, job->work_hours);
	if (sim_result_cost_per_work(r, &cpw))
		cr_assert(r->work_done_hours > 0 && ok_figure(cpw), "%s", ctx);
	else
		cr_assert(r->work_done_hours == 0, "%s: work %g without a cost "
			  "per work", ctx, r->work_done_hours);
	cr_assert_eq(store_ledger_each(st, job_id, add_line, &ls, &e), PX_OK,
		     "%s: %s", ctx, e.msg);
	cr_assert_eq(store_job_cost(st, job_id, &cost, &e), PX_OK, "%s", e.msg);
	cr_assert(!ls.bad, "%s: a bad ledger line", ctx);
	cr_assert(ls.sum == r->cost_uusd && cost == r->cost_uusd,
		  "%s: cost %lld uusd, ledger lines %lld, job cost %lld", ctx,
		  (long long)r->cost_uusd, (long long)ls.sum,
		  (long long)cost);
	for (size_t i = 1; i < r->n_series; i++)
		cr_assert(r->series[i].t_s >= r->series[i - 1].t_s &&
			  r->series[i].cost_uusd >= 0 &&
			  ok_figure(r->series[i].work_done_h), "%s: series "
			  "point %zu", ctx, i);
}

/* What the cases covered (PX_PROP_VERBOSE=1 prints it). */
static struct {
	long runs, completed, refused, no_work, decisions, evictions;
} tally;

/* Whether some type is interrupted more than once an hour. */
static bool churns(const struct jobspec *j)
{
	if (j->rate_default > 1)
		return true;
	for (size_t i = 0; i < j->n_rate; i++)
		if (j->rate[i].v > 1)
			return true;
	return false;
}

static void run_case(uint64_t seed, const struct market_set *slice,
		     const struct ondemand_table *od, struct store *st)
{
	uint64_t s = seed;
	struct market_set rnd;
	const struct market_set *ms = slice;
	bool own = !chance(&s, 0.3);
	enum billing_model b = chance(&s, 0.5) ? BILLING_PER_SECOND :
			       BILLING_LEGACY_HOURLY;
	struct jobspec job;
	struct px_error e = {0};
	struct sim_plan *plan = NULL;
	char *spec, ctx[4096];
	int64_t start = 0, end = 0, bound = 0, paid = 0;
	bool oracle_done = false;

	if (own) {
		random_trace(&s, &rnd, od);
		ms = &rnd;
	}
	spec = random_spec(&s, ms);
	cr_assert_eq(jobspec_parse(spec, strlen(spec), "prop.json", &job, &e),
		     PX_OK, "seed %llu: the generator made a bad spec: %s",
		     (unsigned long long)seed, e.msg);
	/* a window of 1 h up to the whole trace; sometimes the defaults.
	 * Interruptions at up to 100/h churn thousands of instances a day
	 * (each with its store rows): at most 6 h of those, for speed. */
	if (chance(&s, 0.8) || (b == BILLING_PER_SECOND && churns(&job))) {
		int64_t span = ms->last_s - ms->first_s, most;

		start = ms->first_s + (int64_t)(unif(&s) * (double)(span -
								    3600));
		most = ms->last_s - start - 3600;
		if (b == BILLING_PER_SECOND && churns(&job) && most > 5 * 3600)
			most = 5 * 3600;
		end = start + 3600 + (int64_t)(unif(&s) * (double)most);
	}
	{
		struct sim_setup su = {
			.ms = ms, .od = od, .job = &job, .billing = b,
			.start_s = start, .end_s = end, .seed = s % 1000,
		};
		struct sim_result r;

		snprintf(ctx, sizeof ctx, "PX_PROP_SEED=%llu PX_PROP_CASES=1 "
			 "(this case): the oracle, %s billing, window "
			 "%lld..%lld, spec %s", (unsigned long long)seed,
			 billing_model_name(b), (long long)start,
			 (long long)end, spec);
		cr_assert_eq(sim_plan_new(&su, &plan, &e), PX_OK, "%s: %s",
			     ctx, e.msg);
		cr_assert_eq(sim_run(plan, &sim_oracle_paid_ops, &r, &e),
			     PX_OK, "%s: %s", ctx, e.msg);
		/* a bound past the budget is a run stopped by it, at 0 */
		paid = r.completed ? r.cost_uusd : INT64_MAX;
		sim_result_release(&r);
		cr_assert_eq(sim_run(plan, &sim_oracle_ops, &r, &e), PX_OK,
			     "%s: %s", ctx, e.msg);
		cr_assert(ok_figure(r.cost_usd) && ok_figure(r.runtime_hours) &&
			  ok_figure(r.instance_hours) &&
			  ok_figure(r.free_hours) &&
			  ok_figure(r.cost_per_work_usd) &&
			  (r.completed || r.work_done_hours == 0) &&
			  r.cost_uusd <= paid, "%s: cost %g runtime %g inst_h "
			  "%g free_h %g, paid %lld", ctx, r.cost_usd,
			  r.runtime_hours, r.instance_hours, r.free_hours,
			  (long long)paid);
		bound = r.cost_uusd;
		oracle_done = r.completed;
		sim_result_release(&r);
		sim_plan_free(plan);
		plan = NULL;
	}
	for (size_t p = 0; p < policy_count(); p++) {
		const struct policy_ops *pol = policy_at(p);
		struct journal *jn = NULL;
		struct journal_setup js = {
			.st = st, .region = "us-east-1",
			.product = "Linux/UNIX", .world = "sim",
		};
		struct sim_setup su = {
			.ms = ms, .od = od, .job = &job, .billing = b,
			.start_s = start, .end_s = end,
			.seed = next(&s) % 1000, .series = true, .sink = sink,
		};
		struct sim_result r;
		uint64_t t0;
		enum px_err rc;

		snprintf(ctx, sizeof ctx, "PX_PROP_SEED=%llu PX_PROP_CASES=1 "
			 "(this case): policy %s, %s billing, %s trace, window "
			 "%lld..%lld, seed %llu, spec %s",
			 (unsigned long long)seed, pol->name,
			 billing_model_name(b), own ? "random" : "slice",
			 (long long)start, (long long)end,
			 (unsigned long long)su.seed, spec);
		cr_assert_eq(store_job_add(st, "prop", spec, "sim",
					   1, &js.job_id, &e), PX_OK, "%s",
			     e.msg);
		cr_assert_eq(journal_new(&js, &jn, &e), PX_OK, "%s", e.msg);
		/* a plan per policy: it holds the sink's context */
		su.sink_ctx = jn;
		cr_assert_eq(sim_plan_new(&su, &plan, &e), PX_OK, "%s: %s",
			     ctx, e.msg);
		t0 = px_now_mono_us();
		rc = sim_run(plan, pol, &r, &e);
		journal_free(jn);
		if (env_u64("PX_PROP_VERBOSE", 0) &&
		    px_now_mono_us() - t0 > 1000000)
			fprintf(stderr, "sim_prop: %.1f s: %s\n",
				(double)(px_now_mono_us() - t0) / 1e6, ctx);
		if (rc == PX_EINVAL && !strcmp(pol->name, "standard") &&
		    strstr(e.msg, "needs a spot market for reference_type")) {
			sim_plan_free(plan);
			tally.refused++;
			continue;      /* refused, as documented */
		}
		cr_assert_eq(rc, PX_OK, "%s: %s", ctx, e.msg);
		check_run(ctx, &job, plan, &r, st, js.job_id);
		/* no plan finishes when the oracle says none can */
		cr_assert(!r.completed || oracle_done || !strcmp(pol->name,
			  "ondemand"), "%s: completed where the oracle says "
			  "no plan can", ctx);
		if (r.completed && strcmp(pol->name, "ondemand"))
			cr_assert(r.cost_uusd + r.instances_launched >= bound,
				  "%s: cost %lld below the oracle's bound %lld",
				  ctx, (long long)r.cost_uusd,
				  (long long)bound);
		tally.runs++;
		tally.completed += r.completed;
		tally.no_work += r.work_done_hours == 0;
		tally.decisions += r.decisions;
		tally.evictions += r.evictions;
		sim_result_release(&r);
		sim_plan_free(plan);
	}
	free(spec);
	if (own)
		market_set_release(&rnd);
}

TestSuite(sim_prop, .timeout = 120);

Test(sim_prop, random_specs_windows_and_policies)
{
	uint64_t seed = env_u64("PX_PROP_SEED", PROP_SEED_DEFAULT);
	uint64_t cases = env_u64("PX_PROP_CASES", PROP_CASES_DEFAULT);
	char *odp = px_src_path(OD);
	struct ondemand_table od = {0};
	struct market_set slice;
	struct store *st = NULL;
	struct px_error e = {0};

	cr_assert_eq(ondemand_table_load(odp, &od, &e), PX_OK, "%s", e.msg);
	load_slice(&slice);
	cr_assert_eq(store_open(":memory:", &st, &e), PX_OK, "%s", e.msg);
	/* case i's seed is seed + i: PX_PROP_SEED=<that> PX_PROP_CASES=1
	 * reruns it alone */
	for (uint64_t i = 0; i < cases; i++) {
		uint64_t t0 = px_now_mono_us();

		run_case(seed + i, &slice, &od, st);
		if (env_u64("PX_PROP_VERBOSE", 0) &&
		    px_now_mono_us() - t0 > 1000000)
			fprintf(stderr, "sim_prop: case %llu took %.1f s\n",
				(unsigned long long)(seed + i),
				(double)(px_now_mono_us() - t0) / 1e6);
	}
	if (env_u64("PX_PROP_VERBOSE", 0))
		fprintf(stderr, "sim_prop: %llu cases from seed %llu: %ld runs "
			"(%ld completed, %ld without work), %ld refused, %ld "
			"decisions, %ld evictions\n",
			(unsigned long long)cases, (unsigned long long)seed,
			tally.runs, tally.completed, tally.no_work,
			tally.refused, tally.decisions, tally.evictions);
	store_close(st);
	market_set_release(&slice);
	ondemand_table_release(&od);
	free(odp);
}
