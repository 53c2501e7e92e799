/* cli_simulate.c -- `proteusctl simulate`: replay spot-price traces and run
 * allocation policies (bidbrain, standard, ondemand, spread, EC2 Fleet's
 * strategies, uniform-progress, and the hindsight bounds) on a job spec
 * with the virtual-clock simulator (sim.h), then print a table, JSON, CSV
 * and/or a plot, and optionally store every run in the database so that
 * `proteusctl history` can show it.
 *
 * Everything is read and checked before the database is opened; all runs
 * are stored in one transaction, so bad input or a failed run leaves the
 * database as it was.  The job reader, the snapshot's path and the runs
 * side by side are simrun.c's, shared with `plan`.
 */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../cloudapi/trace.h"
#include "../../common/log.h"
#include "../../db/store.h"
#include "cli.h"
#include "../journal.h"
#include "../world/sim.h"
#include "simplot.h"
#include "simrun.h"
#include "workload.h"

#define SIM_TRACES_MAX 64
#define SIM_POLICIES_MAX 16
#define SIM_THREADS_MAX SIMRUN_THREADS_MAX
#define SEEN_MAX 16           /* distinct regions/products named in errors */
#define ZONE_CACHE 64
/* per-second billing started on 2017-10-02 */
#define PER_SECOND_FROM_S BILLING_PER_SECOND_FROM_S

static const char simulate_usage[] =
	"usage: proteusctl simulate --trace FILE [--trace FILE...]\n"
	"         --ondemand-prices FILE --job JOB.json\n"
	"         [--policy bidbrain,standard,ondemand,spread,oracle,...]\n"
	"         [--billing legacy-hourly|per-second] [--start TIME]\n"
	"         [--end TIME] [--seed N] [--spot-advisor FILE]\n"
	"         [--product P] [--json]\n"
	"         [--csv FILE] [--plot FILE.png|FILE.svg] [--db PATH]\n"
	"         [--threads N] [--allow-infeasible]\n"
	"       proteusctl simulate --trace FILE... --ondemand-prices FILE\n"
	"         --workload FILE [--arbiter fifo,max-min,finish-time,goodput]\n"
	"         [--policy P] [--billing M] [--start T] [--end T] [--seed N]\n"
	"         [--spot-advisor FILE] [--product P] [--json] [--plot FILE]\n"
	"\n"
	"Replays spot-price traces (the JSON of `aws ec2\n"
	"describe-spot-price-history`, plain or gzip) and runs each policy on\n"
	"the job (docs/jobspec.md) with a virtual clock, then prints per\n"
	"policy the cost, runtime, work done, evictions and the savings\n"
	"against ondemand and standard (docs/simulate.md).\n"
	"\n"
	"  --trace FILE        trace file; records of the job's region only\n"
	"  --ondemand-prices FILE\n"
	"                      {region: {type: usd_per_hour}} (etc/ondemand)\n"
	"  --job FILE          the job spec, or a daemon job file (its\n"
	"                      sections, trainer, program, world..., are\n"
	"                      not simulated)\n"
	"  --policy LIST       comma-separated (default: bidbrain,\n"
	"                      standard,ondemand,oracle; per-second adds\n"
	"                      spread and EC2 Fleet's lowest-price,\n"
	"                      capacity-optimized, price-capacity-optimized,\n"
	"                      diversified; a job with finish_by_hours\n"
	"                      adds uniform-progress, which needs it);\n"
	"                      oracle is the hindsight bound, oracle-paid\n"
	"                      the same without waived hours\n"
	"  --billing MODEL     default: legacy-hourly for windows starting\n"
	"                      before 2017-10-02, per-second after\n"
	"  --start, --end TIME window (ISO-8601 UTC or @unix-seconds; default\n"
	"                      the trace's first and last record)\n"
	"  --seed N            seed for per-second interruptions (default 1)\n"
	"  --spot-advisor FILE per-second: the Spot Instance Advisor snapshot\n"
	"                      the interruption hazards come from (default:\n"
	"                      the job's spot_advisor, else the shipped one\n"
	"                      of the window's start, etc/spot-advisor)\n"
	"  --product P         product description (default Linux/UNIX)\n"
	"  --json              print one JSON object instead of the table\n"
	"  --csv FILE          write the results, a row per policy\n"
	"  --plot FILE         cost and fleet size over time (.png or .svg;\n"
	"                      needs gnuplot)\n"
	"  --db PATH           store every run, decision and event\n"
	"                      (see `proteusctl history`)\n"
	"  --threads N         policies run at once, 1..64 (default: the\n"
	"                      online CPUs, at most one per policy; with\n"
	"                      --db one at a time); results do not depend\n"
	"                      on it\n"
	"  --allow-infeasible  run a job whose finish_by_hours cannot be met\n"
	"                      even on demand (refused by default, exit 3)\n"
	"  --workload FILE     several jobs arriving over time in one pool\n"
	"                      (docs/pool.md): {\"pool\": {...}, \"jobs\":\n"
	"                      [...]}; in place of --job\n"
	"  --arbiter LIST      with --workload: how the pool is divided\n"
	"                      (default: all four; finish-time is Themis's)\n"
	"\n"
	"For a job with finish_by_hours each policy's line says whether it\n"
	"met that deadline (DEADLINE, SLACK_H).\n"
	"\n"
	"exit: 0 ok, 1 failure, 2 usage, 3 bad input data\n";

/* ---- progress on stderr (only when it is a terminal) ---- */

struct progress {
	bool on;
	uint64_t last_us;
	bool shown;
};

static void progress(struct progress *pg, bool force, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void progress(struct progress *pg, bool force, const char *fmt, ...)
{
	uint64_t now;
	va_list ap;

	if (!pg->on)
		return;
	now = px_now_mono_us();
	if (!force && now - pg->last_us < 200000)
		return;
	pg->last_us = now;
	fputs("\rproteusctl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\033[K", stderr);
	fflush(stderr);
	pg->shown = true;
}

static void progress_clear(struct progress *pg)
{
	if (pg->on && pg->shown) {
		fputs("\r\033[K", stderr);
		fflush(stderr);
		pg->shown = false;
	}
}

/* ---- trace loading ---- */

struct seen {
	char v[SEEN_MAX][TRACE_FIELD_MAX];
	size_t n;
	bool more;
};

static void seen_add(struct seen *s, const char *name)
{
	for (size_t i = 0; i < s->n; i++)
		if (!strcmp(s->v[i], name))
			return;
	if (s->n == SEEN_MAX) {
		s->more = true;
		return;
	}
	snprintf(s->v[s->n++], TRACE_FIELD_MAX, "%s", name);
}

static void seen_list(const struct seen *s, char *buf, size_t len)
{
	size_t o = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < s->n && o < len; i++)
		o += (size_t)snprintf(buf + o, len - o, "%s%s", i ? ", " : "",
				      s->v[i]);
	if (s->more && o < len)
		snprintf(buf + o, len - o, ", ...");
	if (!s->n)
		snprintf(buf, len, "none");
}

struct zone_in {
	char zone[TRACE_FIELD_MAX];
	bool in;                 /* in the job's region */
};

struct load_ctx {
	struct market_set *ms;
	const char *region;
	const char *product;
	int64_t end_s;           /* records after it are dropped */
	struct zone_in zc[ZONE_CACHE];
	size_t nzc, next_zc;
	int64_t first_s, last_s; /* region's records, dropped ones too */
	uint64_t kept, total;
	struct seen regions, products;
	struct progress *pg;
	const char *path;
};

static enum px_err load_record(const struct trace_record *r, void *arg,
			       struct px_error *err)
{
	struct load_ctx *c = arg;
	struct zone_in *z = NULL;
	char reg[TRACE_FIELD_MAX];

	c->total++;
	if ((c->total & 0xffff) == 0)
		progress(c->pg, false, "reading %s: %llu records", c->path,
			 (unsigned long long)c->total);
	seen_add(&c->products, r->product);
	if (strcmp(r->product, c->product))
		return PX_OK;
	for (size_t i = 0; i < c->nzc && !z; i++)
		if (!strcmp(c->zc[i].zone, r->zone))
			z = &c->zc[i];
	if (!z) {
		z = &c->zc[c->nzc < ZONE_CACHE ? c->nzc++ :
			   c->next_zc++ % ZONE_CACHE];
		snprintf(z->zone, sizeof z->zone, "%s", r->zone);
		if (trace_zone_region(r->zone, reg, sizeof reg) != PX_OK)
			return px_errorf(err, PX_EINVAL, "field "
					 "'AvailabilityZone': no region in "
					 "'%s'", r->zone);
		z->in = !strcmp(reg, c->region);
		if (!z->in)
			seen_add(&c->regions, reg);
	}
	if (!z->in)
		return PX_OK;
	if (r->t_s < c->first_s)
		c->first_s = r->t_s;
	if (r->t_s > c->last_s)
		c->last_s = r->t_s;
	if (r->t_s > c->end_s)
		return PX_OK;
	c->kept++;
	return market_set_add(c->ms, r->zone, r->type, r->t_s, r->price_uusd,
			      err);
}

/* Load the job region's records of every trace into ms and seal it. */
static enum px_err load_traces(struct load_ctx *c, const char *const *paths,
			       size_t n, struct px_error *err)
{
	char a[1024], b[1024];
	enum px_err e;

	c->first_s = INT64_MAX;
	c->last_s = INT64_MIN;
	for (size_t i = 0; i < n; i++) {
		c->path = paths[i];
		e = trace_read_file_pipelined(paths[i], 0, load_record, c,
					      NULL, err);
		if (e != PX_OK)
			return e;
	}
	progress(c->pg, true, "sorting %llu records",
		 (unsigned long long)c->kept);
	if (c->first_s == INT64_MAX) {
		seen_list(&c->regions, a, sizeof a);
		seen_list(&c->products, b, sizeof b);
		return px_errorf(err, PX_ENOENT, "the trace%s %s no '%s' "
				 "record in region '%s' (regions in the "
				 "trace: %s; products: %s)", n > 1 ? "s" : "",
				 n > 1 ? "have" : "has", c->product,
				 c->region, a, b);
	}
	if (c->kept == 0) {
		char t[32];
		return px_errorf(err, PX_EINVAL, "--end %s is before the "
				 "trace's first record (%s)",
				 px_format_time(c->end_s, a, 32),
				 px_format_time(c->first_s, t, sizeof t));
	}
	return market_set_seal(c->ms, err);
}

/* ---- the database: one job row per policy run ---- */

struct db_ctx {
	struct store *st;         /* NULL: not storing */
	int64_t job_id;
	struct journal *jn;       /* this run's rows (agent/journal.c) */
	struct px_error err;      /* why the sink stopped the run */
	struct progress *pg;
	const char *policy;
	int64_t start_s, end_s;
};

static enum px_err sink(const struct ctrl_event *ev, void *arg)
{
	struct db_ctx *c = arg;

	if (c->pg->on && c->end_s > c->start_s)
		progress(c->pg, false, "simulating %s: %.0f%%", c->policy,
			 100.0 * (double)(ev->t_s - c->start_s) /
			 (double)(c->end_s - c->start_s));
	return c->jn ? journal_event(c->jn, ev, &c->err) : PX_OK;
}

/* ---- output ---- */

struct opts {
	const char *traces[SIM_TRACES_MAX];
	size_t n_traces;
	const char *od_path, *job_path, *policies, *billing, *csv, *plot;
	const char *db, *product, *advisor;
	const char *workload, *arbiters;
	bool have_billing, json;
	bool allow_infeasible;    /* --allow-infeasible */
	int64_t start_s, end_s;
	uint64_t seed;
	int threads;              /* --threads; 0: the online CPUs */
};

/* 1 - a/b for cost per work (runs that did not complete compare fairly
 * this way; completed runs of one job do the same work).  Undefined
 * (false) when either cost per work is, or b's is 0. */
static bool saving(const struct sim_result *a, const struct sim_result *b,
		   double *ret)
{
	double ca, cb, s;

	if (!b || a == b || !sim_result_cost_per_work(a, &ca) ||
	    !sim_result_cost_per_work(b, &cb) || cb <= 0)
		return false;
	s = 1.0 - ca / cb;
	if (!isfinite(s))
		return false;
	*ret = s;
	return true;
}

/* A figure for JSON: null when it is not a finite number (sim_run says
 * they all are; this keeps a bad one from failing the whole output). */
/* r's cost per work-hour, NAN when it is undefined (no work done). */
static double cpw(const struct sim_result *r)
{
	double c;

	return sim_result_cost_per_work(r, &c) ? c : NAN;
}

static const struct sim_result *find_res(const struct sim_result *r,
					 size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(r[i].policy, name))
			return &r[i];
	return NULL;
}

/* r's cost per work as a multiple of the oracle's bound (>= 1 for a run
 * that completed); undefined when either is. */
static bool oracle_ratio(const struct sim_result *r,
			 const struct sim_result *orc, double *ret)
{
	double a, b;

	if (!orc || !sim_result_cost_per_work(r, &a) ||
	    !sim_result_cost_per_work(orc, &b) || !(b > 0) ||
	    !isfinite(a / b))
		return false;
	*ret = a / b;
	return true;
}

/* A job with restart_seconds has its re-forms in the results (a job
 * without has none, and its output stays as it was). */
static bool shows_reforms(const struct jobspec *job)
{
	return job->restart_seconds > 0;
}

/* A job with finish_by_hours has each run's verdict on it in the results
 * (a job without has none, and its output stays as it was). */
static bool shows_deadline(const struct jobspec *job)
{
	return job->finish_by_hours > 0;
}

/* Whether r met the job's finish_by_hours: it completed within that many
 * hours of its start. */
static bool deadline_met(const struct jobspec *job,
			 const struct sim_result *r)
{
	return r->completed && r->runtime_hours <= job->finish_by_hours;
}

/* The hours r finished before finish_by_hours (negative: after);
 * undefined for a run that did not complete. */
static bool deadline_slack(const struct jobspec *job,
			   const struct sim_result *r, double *ret)
{
	if (!r->completed || !isfinite(r->runtime_hours))
		return false;
	*ret = job->finish_by_hours - r->runtime_hours;
	return true;
}

static json_t *result_json(const struct jobspec *job,
			   const struct sim_result *r,
			   const struct sim_result *all, size_t n)
{
	const struct sim_result *od = find_res(all, n, "ondemand");
	const struct sim_result *sd = find_res(all, n, "standard");
	const struct sim_result *orc = find_res(all, n, "oracle");
	double s;
	json_t *o = json_pack(
		"{s:s, s:b, s:s, s:o, s:o, s:o, s:o, s:I, s:I, s:o, s:o, s:I}",
		"policy", r->policy, "completed", r->completed, "stop",
		sim_stop_name(r->stop), "cost_usd",
		simrun_jnum(r->cost_usd), "runtime_hours",
		simrun_jnum(r->runtime_hours),
		"work_done_hours", simrun_jnum(r->work_done_hours),
		"cost_per_work_usd", simrun_jnum(cpw(r)),
		"evictions", (json_int_t)r->evictions,
		"instances_launched", (json_int_t)r->instances_launched,
		"instance_hours", simrun_jnum(r->instance_hours), "free_hours",
		simrun_jnum(r->free_hours), "decisions",
		(json_int_t)r->decisions);

	if (!o)
		return NULL;
	if ((shows_reforms(job) &&
	     (json_object_set_new(o, "reforms", json_integer(r->reforms)) ||
	      json_object_set_new(o, "reform_lost_hours",
				  simrun_jnum(r->reform_lost_hours)))) ||
	    (shows_deadline(job) &&
	     (json_object_set_new(o, "deadline_met",
				  json_boolean(deadline_met(job, r))) ||
	      json_object_set_new(o, "deadline_slack_hours",
				  deadline_slack(job, r, &s) ? simrun_jnum(s) :
				  json_null()))) ||
	    json_object_set_new(o, "savings_vs_ondemand", saving(r, od, &s) ?
				json_real(s) : json_null()) ||
	    json_object_set_new(o, "savings_vs_standard", saving(r, sd, &s) ?
				json_real(s) : json_null()) ||
	    (orc && json_object_set_new(o, "ratio_to_oracle",
					oracle_ratio(r, orc, &s) ?
					json_real(s) : json_null()))) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* The file name of path (the snapshot, named in the output). */
static int print_json(const struct jobspec *job, enum billing_model b,
		      const struct sim_plan *plan, uint64_t seed,
		      const char *adv, const struct sim_result *res,
		      size_t n)
{
	char s[32], e[32];
	json_t *arr = json_array(), *o;
	double odh = jobspec_ondemand_hours(job, NULL);

	for (size_t i = 0; arr && i < n; i++)
		if (json_array_append_new(arr, result_json(job, &res[i], res,
							   n))) {
			json_decref(arr);
			arr = NULL;
		}
	if (!arr) {
		log_err("out of memory");
		return CLI_EXIT_FAIL;
	}
	o = json_pack("{s:s, s:s, s:s, s:s, s:o, s:I, s:o}", "job", job->name,
		      "billing", billing_model_name(b), "start",
		      px_format_time(sim_plan_start(plan), s, sizeof s), "end",
		      px_format_time(sim_plan_end(plan), e, sizeof e),
		      "work_hours", simrun_jnum(job->work_hours), "seed",
		      (json_int_t)seed, "results", arr);
	if (o && ((adv[0] &&
		   json_object_set_new(o, "spot_advisor",
				       json_string(simrun_base_name(adv)))) ||
		  (shows_reforms(job) &&
		   json_object_set_new(o, "restart_seconds",
				       simrun_jnum(job->restart_seconds))) ||
		  (shows_deadline(job) &&
		   (json_object_set_new(o, "finish_by_hours",
					simrun_jnum(job->finish_by_hours)) ||
		    json_object_set_new(o, "ondemand_hours",
					simrun_jnum(odh)))))) {
		json_decref(o);
		o = NULL;
	}
	return simrun_json_out(o, "the results");
}

static void fmt_saving(char *buf, size_t len, const struct sim_result *r,
		       const struct sim_result *base)
{
	double s;

	if (saving(r, base, &s) && isfinite(100.0 * s))
		snprintf(buf, len, "%.1f%%", 100.0 * s);
	else
		snprintf(buf, len, "-");
}

static void print_table(const struct jobspec *job, enum billing_model b,
			const struct sim_plan *plan, uint64_t seed,
			const char *adv, const struct sim_result *res,
			size_t n)
{
	const struct sim_result *od = find_res(res, n, "ondemand");
	const struct sim_result *sd = find_res(res, n, "standard");
	const struct sim_result *orc = find_res(res, n, "oracle");
	char s[32], e[32], so[320], ss[320], f[8][320], ro[32], rf[352];
	char dl[352];
	int wn = 9;
	double x;

	for (size_t i = 0; i < n; i++)
		if ((int)strlen(res[i].policy) > wn)
			wn = (int)strlen(res[i].policy);

	printf("job '%s': %.6g work-hours of %s, %s billing, %s .. %s, "
	       "seed %llu", job->name, job->work_hours,
	       job->reference_type, billing_model_name(b),
	       px_format_time(sim_plan_start(plan), s, sizeof s),
	       px_format_time(sim_plan_end(plan), e, sizeof e),
	       (unsigned long long)seed);
	if (adv[0])
		printf(", interruptions from %s", simrun_base_name(adv));
	if (shows_reforms(job))
		printf(", re-forms cost %.6g s", job->restart_seconds);
	if (shows_deadline(job))
		printf(", finish by %.6g h (on demand needs %s h)",
		       job->finish_by_hours,
		       simrun_fmt(f[7], sizeof f[7], "%.2f",
			       jobspec_ondemand_hours(job, NULL), "-"));
	printf("\n\n");
	printf("%-*s %4s %8s %11s %9s %9s %10s %6s %6s %9s %8s %7s %7s%s%s"
	       "%s\n",
	       wn, "POLICY", "DONE", "STOP", "COST_USD", "HOURS", "WORK_H",
	       "USD/WORK_H",
	       "EVICT", "LAUNCH", "INST_H", "FREE_H", "VS_OD", "VS_STD",
	       orc ? "  X_ORACLE" : "",
	       shows_reforms(job) ? " REFORMS REFORM_H" : "",
	       shows_deadline(job) ? " DEADLINE SLACK_H" : "");
	for (size_t i = 0; i < n; i++) {
		const struct sim_result *r = &res[i];
		fmt_saving(so, sizeof so, r, od);
		fmt_saving(ss, sizeof ss, r, sd);
		if (!orc)
			ro[0] = '\0';
		else if (oracle_ratio(r, orc, &x))
			snprintf(ro, sizeof ro, " %9.2fx", x);
		else
			snprintf(ro, sizeof ro, " %10s", "-");
		rf[0] = '\0';
		if (shows_reforms(job))
			snprintf(rf, sizeof rf, " %7lld %8s",
				 (long long)r->reforms,
				 simrun_fmt(f[6], sizeof f[6], "%.2f",
					 r->reform_lost_hours, "-"));
		dl[0] = '\0';
		if (shows_deadline(job))
			snprintf(dl, sizeof dl, " %8s %7s",
				 deadline_met(job, r) ? "met" : "missed",
				 deadline_slack(job, r, &x) ?
				 simrun_fmt(f[7], sizeof f[7], "%.2f", x, "-") :
				 "-");
		printf("%-*s %4s %8s %11s %9s %9s %10s %6lld %6lld %9s %8s "
		       "%7s %7s%s%s%s\n", wn, r->policy,
		       r->completed ? "yes" : "no", sim_stop_name(r->stop),
		       simrun_fmt(f[0], sizeof f[0], "%.2f", r->cost_usd, "-"),
		       simrun_fmt(f[1], sizeof f[1], "%.2f", r->runtime_hours,
			       "-"),
		       simrun_fmt(f[2], sizeof f[2], "%.2f", r->work_done_hours,
			       "-"),
		       simrun_fmt(f[3], sizeof f[3], "%.5f", cpw(r), "-"),
		       (long long)r->evictions,
		       (long long)r->instances_launched,
		       simrun_fmt(f[4], sizeof f[4], "%.1f", r->instance_hours,
			       "-"),
		       simrun_fmt(f[5], sizeof f[5], "%.1f", r->free_hours,
				  "-"),
		       so, ss, ro, rf, dl);
	}
	printf("\nVS_OD/VS_STD: saving in cost per work-hour against the "
	       "ondemand/standard run (positive: cheaper)\n");
	if (orc)
		printf("X_ORACLE: cost per work-hour as a multiple of the "
		       "oracle's, a lower bound on any plan's (docs/simulate.md)"
		       "\n");
	if (shows_reforms(job))
		printf("REFORMS/REFORM_H: the fleet's re-forms (a join or a "
		       "leave) and the work-hours lost waiting restart_seconds "
		       "after each (docs/simulate.md, \"Re-forms\")\n");
	if (shows_deadline(job))
		printf("DEADLINE/SLACK_H: met when the run completed within "
		       "finish_by_hours (%.6g h) of its start; the hours to "
		       "spare (negative: late)\n", job->finish_by_hours);
}

static enum px_err write_csv(const char *path, const struct jobspec *job,
			     const struct sim_result *res, size_t n,
			     struct px_error *err)
{
	const struct sim_result *od = find_res(res, n, "ondemand");
	const struct sim_result *sd = find_res(res, n, "standard");
	const struct sim_result *orc = find_res(res, n, "oracle");
	FILE *f = fopen(path, "w");
	char v[6][320];
	double s;

	if (!f)
		return px_errorf(err, PX_ESYS | errno, "csv file '%s': %s",
				 path, strerror(errno));
	fputs("policy,completed,stop,cost_usd,runtime_hours,work_done_hours,"
	      "cost_per_work_usd,evictions,instances_launched,instance_hours,"
	      "free_hours,savings_vs_ondemand,savings_vs_standard", f);
	fputs(orc ? ",ratio_to_oracle" : "", f);
	fputs(shows_deadline(job) ? ",deadline_met,deadline_slack_hours\n" :
	      "\n", f);
	for (size_t i = 0; i < n; i++) {
		const struct sim_result *r = &res[i];
		fprintf(f, "%s,%s,%s,%s,%s,%s,%s,%lld,%lld,%s,%s,", r->policy,
			r->completed ? "true" : "false",
			sim_stop_name(r->stop),
			simrun_fmt(v[0], sizeof v[0], "%.6f", r->cost_usd, ""),
			simrun_fmt(v[1], sizeof v[1], "%.6f", r->runtime_hours,
				""),
			simrun_fmt(v[2], sizeof v[2], "%.6f",
				   r->work_done_hours, ""),
			simrun_fmt(v[3], sizeof v[3], "%.8f", cpw(r), ""),
			(long long)r->evictions,
			(long long)r->instances_launched,
			simrun_fmt(v[4], sizeof v[4], "%.6f", r->instance_hours,
				""),
			simrun_fmt(v[5], sizeof v[5], "%.6f", r->free_hours,
				   ""));
		if (saving(r, od, &s))
			fprintf(f, "%.6f", s);
		fputc(',', f);
		if (saving(r, sd, &s))
			fprintf(f, "%.6f", s);
		if (orc) {
			fputc(',', f);
			if (oracle_ratio(r, orc, &s))
				fprintf(f, "%.6f", s);
		}
		if (shows_deadline(job)) {
			fputs(deadline_met(job, r) ? ",true," : ",false,", f);
			if (deadline_slack(job, r, &s))
				fprintf(f, "%.6f", s);
		}
		fputc('\n', f);
	}
	if (fclose(f))
		return px_errorf(err, PX_ESYS | errno, "csv file '%s': %s",
				 path, strerror(errno));
	return PX_OK;
}

/* ---- arguments ---- */

static int parse_policies(const char *list, bool per_second,
			  const struct policy_ops **v, size_t *ret_n)
{
	const char *def = per_second ?
			  "bidbrain,standard,ondemand,spread,lowest-price,"
			  "capacity-optimized,price-capacity-optimized,"
			  "diversified,oracle" :
			  "bidbrain,standard,ondemand,oracle";
	const char *p = list ? list : def;
	struct px_error err = {0};
	size_t n = 0;

	while (*p) {
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : strlen(p);
		char name[32];

		if (len == 0 || len >= sizeof name) {
			log_err("--policy: bad list '%s' (want e.g. "
				"bidbrain,standard,ondemand)", list);
			return CLI_EXIT_USAGE;
		}
		memcpy(name, p, len);
		name[len] = '\0';
		if (!strcmp(name, sim_oracle_ops.name)) {
			v[n] = &sim_oracle_ops;
		} else if (!strcmp(name, sim_oracle_paid_ops.name)) {
			v[n] = &sim_oracle_paid_ops;
		} else if (policy_lookup(name, &v[n], &err) != PX_OK) {
			log_err("--policy: %s (simulate also has oracle, "
				"oracle-paid)", err.msg);
			return CLI_EXIT_USAGE;
		}
		for (size_t i = 0; i < n; i++)
			if (v[i] == v[n]) {
				log_err("--policy: '%s' named twice", name);
				return CLI_EXIT_USAGE;
			}
		if (++n == SIM_POLICIES_MAX && comma) {
			log_err("--policy: at most %d policies",
				SIM_POLICIES_MAX);
			return CLI_EXIT_USAGE;
		}
		p += len + (comma != NULL);
	}
	if (n == 0) {
		log_err("--policy: no policy named");
		return CLI_EXIT_USAGE;
	}
	*ret_n = n;
	return CLI_EXIT_OK;
}

static int parse_time_opt(const char *name, const char *s, int64_t *ret)
{
	if (px_parse_time(s, strlen(s), ret) == PX_OK && *ret > 0)
		return CLI_EXIT_OK;
	log_err("--%s: bad time '%s' (want e.g. 2016-03-01T12:00:00Z or "
		"@unix-seconds)", name, s);
	return CLI_EXIT_USAGE;
}

static int check_args(const struct opts *o);

static int parse_args(int argc, char **argv, struct opts *o)
{
	static const struct option lopts[] = {
		{"allow-infeasible", no_argument, NULL, 'I'},
		{"arbiter", required_argument, NULL, 'a'},
		{"billing", required_argument, NULL, 'b'},
		{"csv", required_argument, NULL, 'c'},
		{"db", required_argument, NULL, 'd'},
		{"end", required_argument, NULL, 'e'},
		{"help", no_argument, NULL, 'h'},
		{"job", required_argument, NULL, 'J'},
		{"json", no_argument, NULL, 'j'},
		{"ondemand-prices", required_argument, NULL, 'o'},
		{"plot", required_argument, NULL, 'P'},
		{"policy", required_argument, NULL, 'p'},
		{"product", required_argument, NULL, 'r'},
		{"seed", required_argument, NULL, 's'},
		{"spot-advisor", required_argument, NULL, 'A'},
		{"start", required_argument, NULL, 'S'},
		{"threads", required_argument, NULL, 'T'},
		{"trace", required_argument, NULL, 't'},
		{"workload", required_argument, NULL, 'W'},
		{0},
	};
	char *end;
	int c, rc;

	o->db = cli_g.db;
	o->json = cli_g.json;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":", lopts, NULL)) != -1) {
		switch (c) {
		case 'A': o->advisor = optarg; break;
		case 'a': o->arbiters = optarg; break;
		case 'W': o->workload = optarg; break;
		case 'b': o->billing = optarg; o->have_billing = true; break;
		case 'c': o->csv = optarg; break;
		case 'd': o->db = optarg; break;
		case 'e':
			if ((rc = parse_time_opt("end", optarg, &o->end_s)))
				return rc;
			break;
		case 'h': fputs(simulate_usage, stdout); return -1;
		case 'I': o->allow_infeasible = true; break;
		case 'J': o->job_path = optarg; break;
		case 'j': o->json = true; break;
		case 'o': o->od_path = optarg; break;
		case 'P': o->plot = optarg; break;
		case 'p': o->policies = optarg; break;
		case 'r': o->product = optarg; break;
		case 's':
			errno = 0;
			o->seed = strtoull(optarg, &end, 10);
			if (errno || end == optarg || *end || *optarg == '-') {
				log_err("--seed: want a non-negative integer, "
					"not '%s'", optarg);
				return CLI_EXIT_USAGE;
			}
			break;
		case 'S':
			if ((rc = parse_time_opt("start", optarg,
						 &o->start_s)))
				return rc;
			break;
		case 'T': {
			long v;

			errno = 0;
			v = strtol(optarg, &end, 10);
			if (errno || end == optarg || *end || v < 1 ||
			    v > SIM_THREADS_MAX) {
				log_err("--threads: want an integer in 1..%d, "
					"not '%s'", SIM_THREADS_MAX, optarg);
				return CLI_EXIT_USAGE;
			}
			o->threads = (int)v;
			break;
		}
		case 't':
			if (o->n_traces == SIM_TRACES_MAX) {
				log_err("--trace: at most %d files",
					SIM_TRACES_MAX);
				return CLI_EXIT_USAGE;
			}
			o->traces[o->n_traces++] = optarg;
			break;
		default:
			return cli_bad_option("simulate", argv, c);
		}
	}
	if (optind < argc)
		return cli_usage("simulate", "unexpected argument '%s'",
				 argv[optind]);
	return check_args(o);
}

/* What the options ask together. */
static int check_args(const struct opts *o)
{
	if (o->workload && (o->job_path || o->db || o->csv ||
			    o->allow_infeasible || o->threads)) {
		log_err("simulate: --workload takes the place of --job, and "
			"--db, --csv, --threads and --allow-infeasible are for "
			"one job");
		return CLI_EXIT_USAGE;
	}
	if (o->arbiters && !o->workload) {
		log_err("simulate: --arbiter is for --workload");
		return CLI_EXIT_USAGE;
	}
	if (!o->n_traces || !o->od_path || (!o->job_path && !o->workload)) {
		log_err("simulate: --trace, --ondemand-prices and --job (or "
			"--workload) are required (see 'proteusctl simulate "
			"--help')");
		return CLI_EXIT_USAGE;
	}
	if (o->start_s && o->end_s && o->start_s >= o->end_s) {
		log_err("--start must be before --end");
		return CLI_EXIT_USAGE;
	}
	return CLI_EXIT_OK;
}

/* ---- the deadline ---- */

/* What finish_by_hours asks, checked before any trace is read: a policy
 * named that needs it (uniform-progress) when the job has none, and a
 * deadline that even the job's fleet on demand cannot meet (unless
 * --allow-infeasible) are bad input data. */
static int check_finish_by(const struct opts *o, const struct jobspec *job,
			   const struct policy_ops *const *pols, size_t n)
{
	double need = 0, rate;

	for (size_t i = 0; i < n; i++)
		if (pols[i] == &pol_uniform_progress_ops &&
		    !shows_deadline(job)) {
			log_err("policy '%s': %s: it needs the job's "
				"finish_by_hours (the deadline it plans for)",
				pols[i]->name, o->job_path);
			return CLI_EXIT_DATA;
		}
	if (jobspec_finish_feasible(job, NULL, &need))
		return CLI_EXIT_OK;
	if (o->allow_infeasible) {
		log_notice("simulate: %s: finish_by_hours %.6g cannot be met "
			   "(on demand needs %.2f h): running anyway "
			   "(--allow-infeasible)", o->job_path,
			   job->finish_by_hours, need);
		return CLI_EXIT_OK;
	}
	rate = jobspec_fleet_rate(job, job->instances, job->instances *
				  jobspec_speed(job, job->reference_type));
	need = ceil(need * 100) / 100;  /* printed rounded up */
	log_err("%s: finish_by_hours %.6g cannot be met even on demand: "
		"%d on-demand %s need %.2f h (startup_seconds %d, then "
		"%.6g work-hours at %.6g an hour); give it %.2f h or more, "
		"or --allow-infeasible to run anyway", o->job_path,
		job->finish_by_hours, job->instances, job->reference_type,
		need, job->startup_seconds, job->work_hours, rate, need);
	return CLI_EXIT_DATA;
}

/* The policies --policy did not name: the billing model's default list
 * (unless it was made before the trace was read), and for a job with
 * finish_by_hours its peer, uniform-progress. */
static int default_policies(const struct opts *o, const struct jobspec *job,
			    bool per_second, const struct policy_ops **pols,
			    size_t *n)
{
	int rc = CLI_EXIT_OK;

	if (!*n)
		rc = parse_policies(NULL, per_second, pols, n);
	if (!rc && !o->policies && shows_deadline(job) &&
	    *n < SIM_POLICIES_MAX)
		pols[(*n)++] = &pol_uniform_progress_ops;
	return rc;
}

/* ---- storing the runs ---- */

static char *sim_params_json(const struct opts *o, const char *policy,
			     enum billing_model b,
			     const struct sim_plan *plan)
{
	char s[32], e[32];
	json_t *tr = json_array(), *obj;
	char *out;

	for (size_t i = 0; tr && i < o->n_traces; i++)
		json_array_append_new(tr, json_string(o->traces[i]));
	obj = json_pack("{s:s, s:s, s:s, s:s, s:I, s:s, s:s, s:s, s:o*}",
			"policy", policy, "billing", billing_model_name(b),
			"start", px_format_time(sim_plan_start(plan), s,
						sizeof s),
			"end", px_format_time(sim_plan_end(plan), e, sizeof e),
			"seed", (json_int_t)o->seed, "product", o->product,
			"job_file", o->job_path, "ondemand_prices", o->od_path,
			"traces", tr);
	if (!obj)
		return NULL;
	out = json_dumps(obj, JSON_COMPACT);
	json_decref(obj);
	return out;
}

static enum px_err db_begin_run(struct db_ctx *c, const struct opts *o,
				const struct jobspec *job,
				const char *job_text, const char *policy,
				enum billing_model b,
				const struct sim_plan *plan)
{
	int64_t now = px_now_wall_us();
	char *params;
	enum px_err e;

	e = store_job_add(c->st, job->name, job_text, sim_world_ops.name, now,
			  &c->job_id,
			  &c->err);
	if (e == PX_OK)
		e = store_job_set_state(c->st, c->job_id, STORE_JOB_RUNNING,
					now, &c->err);
	if (e != PX_OK)
		return e;
	journal_free(c->jn);
	c->jn = NULL;
	{
		struct journal_setup js = {
			.st = c->st, .job_id = c->job_id,
			.region = job->region, .product = o->product,
			.world = sim_world_ops.name,
		};

		e = journal_new(&js, &c->jn, &c->err);
		if (e != PX_OK)
			return e;
	}
	params = sim_params_json(o, policy, b, plan);
	if (!params)
		return px_errorf(&c->err, PX_ENOMEM, "out of memory");
	e = store_event_add(c->st, c->job_id, 0,
			    sim_plan_start(plan) * PX_USEC_PER_SEC,
			    "simulate", params, &c->err);
	free(params);
	return e;
}

static enum px_err db_end_run(struct db_ctx *c, const struct sim_result *r,
			      const struct sim_result *all, size_t n,
			      const struct sim_plan *plan)
{
	json_t *o = result_json(sim_plan_env(plan)->job, r, all, n);
	char *s = o ? json_dumps(o, JSON_COMPACT |
				 JSON_REAL_PRECISION(10)) : NULL;
	int64_t end_s = sim_plan_start(plan) +
			(int64_t)(r->runtime_hours * 3600.0 + 0.5);
	enum px_err e;

	json_decref(o);
	if (!s)
		return px_errorf(&c->err, PX_ENOMEM, "out of memory");
	e = store_event_add(c->st, c->job_id, 0, end_s * PX_USEC_PER_SEC,
			    "result", s, &c->err);
	free(s);
	if (e == PX_OK)
		e = store_job_set_state(c->st, c->job_id, r->completed ?
					STORE_JOB_DONE : STORE_JOB_FAILED,
					px_now_wall_us(), &c->err);
	return e;
}

/* Everything one command runs.  The "result" events are stored after all
 * runs, since the savings need the baselines' results. */
struct run_all {
	const struct opts *o;
	const struct jobspec *job;
	const char *job_text;
	enum billing_model billing;
	struct sim_plan *plan;
	const struct policy_ops **pols;
	size_t n_pols;
	struct sim_result *res;
	int64_t *job_ids;
	struct progress *pg;
	struct db_ctx *dc;        /* the plan's sink context */
	int threads;              /* > 1: runs side by side (no database) */
};

/* Runs side by side (simrun.h), without a database: each has its own
 * controller, market cursors, interruption draws (a hash of the seed and
 * the instance) and policy state, so each result is what the run gives
 * alone; no sink is set (a database stores one run at a time).  Their
 * outcomes in e and err, in the policies' order. */
static void run_side_by_side(struct run_all *ra, enum px_err *e,
			     struct px_error *err)
{
	struct simrun v[SIM_POLICIES_MAX];

	progress(ra->pg, true, "simulating %zu policies on %d threads",
		 ra->n_pols, ra->threads);
	for (size_t i = 0; i < ra->n_pols; i++)
		v[i] = (struct simrun){.plan = ra->plan, .policy = ra->pols[i],
				       .res = &ra->res[i]};
	simrun_parallel(v, ra->n_pols, ra->threads);
	for (size_t i = 0; i < ra->n_pols; i++) {
		e[i] = v[i].e;
		err[i] = v[i].err;
	}
}

/* Remove the database file at path and its companions: one this command
 * created for runs that failed, so that a failed run leaves no trace. */
static void remove_new_db(const char *path)
{
	static const char *const sfx[] = {"", "-wal", "-shm", "-journal"};
	char buf[4096];

	for (size_t i = 0; i < sizeof sfx / sizeof *sfx; i++)
		if ((size_t)snprintf(buf, sizeof buf, "%s%s", path, sfx[i]) <
		    sizeof buf)
			(void)unlink(buf);
}

static bool is_oracle(const struct policy_ops *p)
{
	return p == &sim_oracle_ops || p == &sim_oracle_paid_ops;
}

static int run_all(struct run_all *ra)
{
	struct db_ctx *dc = ra->dc;
	struct px_error err = {0}, perr[SIM_POLICIES_MAX];
	enum px_err pe[SIM_POLICIES_MAX];
	char *path = NULL;
	bool created = false;
	enum px_err e = PX_OK;
	int rc = CLI_EXIT_OK;

	if (ra->o->db) {
		struct stat sb;

		path = strdup(ra->o->db);
		if (!path) {
			log_err("out of memory");
			return CLI_EXIT_FAIL;
		}
		created = strcmp(path, ":memory:") && stat(path, &sb) != 0 &&
			  errno == ENOENT;
		e = store_open(path, &dc->st, &err);
		if (e != PX_OK) {
			log_err("database '%s': %s", path, err.msg);
			free(path);
			return CLI_EXIT_FAIL;
		}
		e = store_begin(dc->st, &dc->err);
	}
	dc->start_s = sim_plan_start(ra->plan);
	dc->end_s = sim_plan_end(ra->plan);
	if (!dc->st && ra->threads > 1)
		run_side_by_side(ra, pe, perr);
	for (size_t i = 0; i < ra->n_pols && e == PX_OK; i++) {
		dc->policy = ra->pols[i]->name;
		if (!dc->st && ra->threads > 1) {
			/* run above: its outcome, in the policies' order */
			e = pe[i];
			err = perr[i];
		} else {
			/* the oracles are bounds, not runs: not stored */
			if (dc->st && !is_oracle(ra->pols[i]))
				e = db_begin_run(dc, ra->o, ra->job,
						 ra->job_text, dc->policy,
						 ra->billing, ra->plan);
			if (e != PX_OK)
				break;
			ra->job_ids[i] = dc->job_id;
			progress(ra->pg, true, "simulating %s", dc->policy);
			e = sim_run(ra->plan, ra->pols[i], &ra->res[i], &err);
		}
		if (e != PX_OK) {
			bool ours = e == PX_ECANCELED && dc->err.msg[0];
			if (ours)
				err = dc->err;
			/* the controller names the policy that refused */
			if (strncmp(err.msg, "policy '", 8))
				log_err("policy '%s': %s", dc->policy,
					err.msg);
			else
				log_err("%s", err.msg);
			rc = ours || e == PX_ENOMEM ? CLI_EXIT_FAIL :
			     CLI_EXIT_DATA;
			e = PX_OK;
			goto out;
		}
	}
	for (size_t i = 0; dc->st && i < ra->n_pols && e == PX_OK; i++) {
		if (is_oracle(ra->pols[i]))
			continue;
		dc->job_id = ra->job_ids[i];
		e = db_end_run(dc, &ra->res[i], ra->res, ra->n_pols,
			       ra->plan);
	}
	if (dc->st && e == PX_OK)
		e = store_commit(dc->st, &dc->err);
	if (e != PX_OK) {
		log_err("database '%s': %s", path, dc->err.msg);
		rc = CLI_EXIT_FAIL;
	}
out:
	progress_clear(ra->pg);
	if (dc->st && rc != CLI_EXIT_OK) {
		store_rollback(dc->st);
		log_err("nothing was stored in '%s'", path);
	}
	created = created && dc->st && rc != CLI_EXIT_OK;
	store_close(dc->st);
	dc->st = NULL;
	if (created)
		remove_new_db(path);
	journal_free(dc->jn);
	free(path);
	return rc;
}

/* ---- several jobs, one pool (--workload) ---- */

static int parse_arbiters(const char *list, enum arb_kind *v, size_t *ret_n)
{
	const char *p = list ? list : "fifo,max-min,finish-time,goodput";
	struct px_error err = {0};
	size_t n = 0;

	while (*p) {
		size_t len = strcspn(p, ",");
		char name[32];

		if (len == 0 || len >= sizeof name || n == ARB_KINDS) {
			log_err("--arbiter: bad list '%s' (want e.g. "
				"fifo,finish-time)", list);
			return CLI_EXIT_USAGE;
		}
		memcpy(name, p, len);
		name[len] = 0;
		if (arb_lookup(name, &v[n], &err) != PX_OK) {
			log_err("--arbiter: %s", err.msg);
			return CLI_EXIT_USAGE;
		}
		for (size_t i = 0; i < n; i++)
			if (v[i] == v[n]) {
				log_err("--arbiter: '%s' named twice", name);
				return CLI_EXIT_USAGE;
			}
		n++;
		p += len + (p[len] == ',');
	}
	*ret_n = n;
	if (!n)
		log_err("--arbiter: an empty list (want one or more of fifo, "
			"max-min, finish-time, goodput, comma-separated)");
	return n ? CLI_EXIT_OK : CLI_EXIT_USAGE;
}

/* What a workload's runs read: the file, the prices, the snapshot. */
struct wl_input {
	struct workload w;
	struct ondemand_table od;
	struct market_set ms;
	struct load_ctx lc;
	struct advisor adv;
	bool have_adv;
	char adv_path[4096];
	enum billing_model billing;
};

static enum px_err wl_input_load(const struct opts *o, struct progress *pg,
				 struct wl_input *in, struct px_error *err)
{
	enum px_err e = workload_load(o->workload, &in->w, err);

	if (e == PX_OK)
		e = ondemand_table_load(o->od_path, &in->od, err);
	if (e == PX_OK) {
		in->lc = (struct load_ctx){
			.ms = &in->ms, .region = in->w.region,
			.product = o->product,
			.end_s = o->end_s ? o->end_s : INT64_MAX, .pg = pg,
		};
		e = load_traces(&in->lc, o->traces, o->n_traces, err);
		progress_clear(pg);
	}
	if (e != PX_OK)
		return e;
	if (!o->have_billing)
		in->billing = (o->start_s ? o->start_s : in->lc.first_s) >=
			      PER_SECOND_FROM_S ? BILLING_PER_SECOND
						: BILLING_LEGACY_HOURLY;
	if (in->billing != BILLING_PER_SECOND)
		return PX_OK;
	e = simrun_advisor_path(o->advisor, o->workload, &in->w.specs[0],
				o->start_s ? o->start_s : in->lc.first_s,
				in->adv_path, sizeof in->adv_path, err);
	if (e == PX_OK)
		e = advisor_load(in->adv_path, in->w.region, &in->adv, err);
	in->have_adv = e == PX_OK;
	return e;
}

static void wl_input_release(struct wl_input *in)
{
	advisor_release(&in->adv);
	ondemand_table_release(&in->od);
	market_set_release(&in->ms);
	workload_release(&in->w);
}

/* Every job of the workload under one policy (BidBrain unless --policy
 * names one), each arbiter in turn on the same market and seeds. */
static int simulate_workload(const struct opts *o)
{
	struct progress pg = {.on = isatty(STDERR_FILENO) == 1};
	struct wl_input in = {.billing = BILLING_LEGACY_HOURLY};
	enum arb_kind arbs[ARB_KINDS];
	struct wl_result res[ARB_KINDS];
	enum simplot_format pf = SIMPLOT_PNG;
	const struct policy_ops *pol = &pol_bidbrain_ops;
	struct px_error err = {0};
	size_t n_arbs = 0, n_done = 0;
	struct wl_setup su;
	enum px_err e;
	int rc;

	memset(res, 0, sizeof res);
	market_set_init(&in.ms);
	rc = parse_arbiters(o->arbiters, arbs, &n_arbs);
	if (rc)
		return rc;
	if (o->policies && (policy_lookup(o->policies, &pol, &err) != PX_OK ||
			    !strcmp(o->policies, "uniform-progress"))) {
		log_err("--policy: with --workload one policy of the "
			"registry for every job: %s", err.msg[0] ? err.msg :
			"uniform-progress needs every job's finish_by_hours");
		return CLI_EXIT_USAGE;
	}
	if (o->have_billing &&
	    billing_model_parse(o->billing, &in.billing, &err) != PX_OK) {
		log_err("--billing: %s", err.msg);
		return CLI_EXIT_USAGE;
	}
	if (o->plot && simplot_format_of(o->plot, &pf, &err) != PX_OK) {
		log_err("--plot: %s", err.msg);
		return CLI_EXIT_USAGE;
	}
	e = wl_input_load(o, &pg, &in, &err);
	if (e != PX_OK) {
		log_err("%s", err.msg);
		rc = e == PX_ENOMEM ? CLI_EXIT_FAIL : CLI_EXIT_DATA;
		goto out;
	}
	su = (struct wl_setup){
		.ms = &in.ms, .od = &in.od, .billing = in.billing,
		.start_s = o->start_s ? o->start_s : in.lc.first_s,
		.end_s = o->end_s ? o->end_s : in.lc.last_s,
		.trace_first_s = in.lc.first_s, .trace_last_s = in.lc.last_s,
		.seed = o->seed, .advisor = in.have_adv ? &in.adv : NULL,
		.policy = pol, .limits = in.w.limits, .lease_s = in.w.lease_s,
		.fairness = in.w.fairness, .jobs = in.w.jobs, .n_jobs = in.w.n,
	};
	for (size_t k = 0; k < in.w.n; k++)
		if (su.start_s + (int64_t)llround(in.w.jobs[k].arrival_hours *
						  3600) >= su.end_s) {
			log_err("%s: jobs[%zu].arrival_hours: %g is not within "
				"the window (%.1f hours from its start)",
				o->workload, k, in.w.jobs[k].arrival_hours,
				(double)(su.end_s - su.start_s) / 3600);
			rc = CLI_EXIT_DATA;
			goto out;
		}
	for (; n_done < n_arbs; n_done++) {
		progress(&pg, true, "simulating the workload under %s",
			 arb_name(arbs[n_done]));
		e = wl_run(&su, arbs[n_done], &res[n_done], &err);
		if (e != PX_OK) {
			progress_clear(&pg);
			log_err("arbiter %s: %s", arb_name(arbs[n_done]),
				err.msg);
			rc = e == PX_ENOMEM ? CLI_EXIT_FAIL : CLI_EXIT_DATA;
			goto out;
		}
	}
	progress_clear(&pg);
	if (o->json)
		rc = workload_print_json(o->workload, &in.w, &su, res, n_arbs);
	else
		workload_print(o->workload, &in.w, &su, res, n_arbs);
	if (o->plot && (e = workload_plot(o->plot, pf, o->workload, res,
					  n_arbs, &err)) != PX_OK) {
		log_err("%s", err.msg);
		rc = CLI_EXIT_FAIL;
	}
out:
	for (size_t i = 0; i < n_done; i++)
		wl_result_release(&res[i]);
	wl_input_release(&in);
	return rc;
}

int cli_simulate(int argc, char **argv)
{
	struct opts o = {.product = "Linux/UNIX", .seed = 1};
	const struct policy_ops *pols[SIM_POLICIES_MAX];
	struct progress pg = {.on = isatty(STDERR_FILENO) == 1};
	struct ondemand_table od = {0};
	struct market_set ms;
	struct jobspec job;
	struct load_ctx lc = {0};
	struct db_ctx dc = {.pg = &pg};
	struct sim_plan *plan = NULL;
	struct advisor adv = {0};
	bool have_adv = false;
	char adv_path[4096] = "";
	struct sim_result res[SIM_POLICIES_MAX];
	int64_t job_ids[SIM_POLICIES_MAX] = {0};
	struct px_error err = {0};
	enum billing_model billing = BILLING_LEGACY_HOURLY;
	enum simplot_format pf = SIMPLOT_PNG;
	char *job_text = NULL;
	size_t n_pols = 0;
	int threads = 1;
	enum px_err e;
	int rc;

	memset(res, 0, sizeof res);
	market_set_init(&ms);
	rc = parse_args(argc, argv, &o);
	if (rc)
		return rc < 0 ? CLI_EXIT_OK : rc;
	if (o.workload)
		return simulate_workload(&o);
	if (o.have_billing &&
	    billing_model_parse(o.billing, &billing, &err) != PX_OK) {
		log_err("--billing: %s", err.msg);
		return CLI_EXIT_USAGE;
	}
	if (o.plot && simplot_format_of(o.plot, &pf, &err) != PX_OK) {
		log_err("--plot: %s", err.msg);
		return CLI_EXIT_USAGE;
	}
	/* the default model follows the window's start; the policy list
	 * follows the model, so both wait for the trace when not given */
	if (!o.have_billing && o.start_s)
		billing = o.start_s >= PER_SECOND_FROM_S ? BILLING_PER_SECOND :
			  BILLING_LEGACY_HOURLY;
	if (o.policies || o.have_billing || o.start_s) {
		rc = parse_policies(o.policies, billing == BILLING_PER_SECOND,
				    pols, &n_pols);
		if (rc)
			return rc;
	}

	e = simrun_read_job("simulate", o.job_path, &job, &job_text, &err);
	if (e == PX_OK)
		e = ondemand_table_load(o.od_path, &od, &err);
	if (e != PX_OK) {
		log_err("%s", err.msg);
		rc = e == PX_ENOMEM ? CLI_EXIT_FAIL : CLI_EXIT_DATA;
		goto out;
	}
	rc = check_finish_by(&o, &job, pols, n_pols);
	if (rc)
		goto out;
	lc = (struct load_ctx){
		.ms = &ms, .region = job.region, .product = o.product,
		.end_s = o.end_s ? o.end_s : INT64_MAX, .pg = &pg,
	};
	e = load_traces(&lc, o.traces, o.n_traces, &err);
	progress_clear(&pg);
	if (e != PX_OK) {
		log_err("%s", err.msg);
		rc = e == PX_ENOMEM ? CLI_EXIT_FAIL : CLI_EXIT_DATA;
		goto out;
	}
	if (!o.have_billing && !o.start_s)
		billing = lc.first_s >= PER_SECOND_FROM_S ?
			  BILLING_PER_SECOND : BILLING_LEGACY_HOURLY;
	rc = default_policies(&o, &job, billing == BILLING_PER_SECOND, pols,
			      &n_pols);
	if (rc)
		goto out;
	/* per-second hazards from a snapshot, unless the job gives every
	 * rate itself */
	if (billing == BILLING_PER_SECOND && job.rate_default < 0) {
		e = simrun_advisor_path(o.advisor, o.job_path, &job,
					o.start_s ? o.start_s : lc.first_s,
					adv_path, sizeof adv_path, &err);
		if (e == PX_OK)
			e = advisor_load(adv_path, job.region, &adv, &err);
		if (e != PX_OK) {
			log_err("%s", err.msg);
			rc = e == PX_ENOMEM ? CLI_EXIT_FAIL : CLI_EXIT_DATA;
			goto out;
		}
		have_adv = true;
	}
	{
		struct sim_setup su = {
			.ms = &ms, .od = &od, .job = &job, .billing = billing,
			.start_s = o.start_s, .end_s = o.end_s,
			.trace_first_s = lc.first_s,
			.trace_last_s = lc.last_s, .seed = o.seed,
			.advisor = have_adv ? &adv : NULL,
			.series = o.plot != NULL,
		};
		/* runs side by side without a database; the progress of one
		 * run at a time comes through the sink */
		if (!o.db) {
			threads = o.threads ? o.threads :
				  simrun_threads(n_pols);
			if ((size_t)threads > n_pols)
				threads = (int)n_pols;
		}
		if (o.db || (pg.on && threads <= 1)) {
			su.sink = sink;
			su.sink_ctx = &dc;
		}
		e = sim_plan_new(&su, &plan, &err);
	}
	if (e != PX_OK) {
		log_err("%s", err.msg);
		rc = e == PX_ENOMEM ? CLI_EXIT_FAIL : CLI_EXIT_DATA;
		goto out;
	}
	{
		struct run_all ra = {
			.o = &o, .job = &job, .job_text = job_text,
			.billing = billing, .plan = plan, .pols = pols,
			.n_pols = n_pols, .res = res, .job_ids = job_ids,
			.pg = &pg, .dc = &dc, .threads = threads,
		};
		rc = run_all(&ra);
	}
	if (rc)
		goto out;
	if (o.json)
		rc = print_json(&job, billing, plan, o.seed, adv_path, res,
				n_pols);
	else
		print_table(&job, billing, plan, o.seed, adv_path, res,
			    n_pols);
	if (o.csv && (e = write_csv(o.csv, &job, res, n_pols, &err)) !=
	    PX_OK) {
		log_err("%s", err.msg);
		rc = CLI_EXIT_FAIL;
	}
	if (o.plot) {
		char title[160];
		snprintf(title, sizeof title, "job %s, %s billing", job.name,
			 billing_model_name(billing));
		e = simplot_draw(o.plot, pf, title, sim_plan_start(plan), res,
				 n_pols, &err);
		if (e != PX_OK) {
			log_err("%s", err.msg);
			rc = CLI_EXIT_FAIL;
		}
	}
out:
	for (size_t i = 0; i < SIM_POLICIES_MAX; i++)
		sim_result_release(&res[i]);
	sim_plan_free(plan);
	advisor_release(&adv);
	ondemand_table_release(&od);
	market_set_release(&ms);
	free(job_text);
	return rc;
}
