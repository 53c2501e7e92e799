/* cli_plan.c -- `proteusctl plan`: before renting, replay the job on the
 * last days of the spot prices in the store under BidBrain without a
 * deadline, at a few deadlines and spot caps, and on demand, with the
 * simulator `simulate` uses (sim.h), and print the cost-time frontier:
 * what finishing sooner would cost (docs/proteusctl.md, "plan").
 *
 * Everything is read and checked before anything runs; the store is only
 * read.
 */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../../common/log.h"
#include "../../db/store.h"
#include "cli.h"
#include "simplot.h"
#include "simrun.h"

#define PLAN_PRODUCT "Linux/UNIX"
#define PLAN_DAYS_DEFAULT 7
#define PLAN_DAYS_MAX 3650
#define PLAN_AUTO_DEADLINES 4
/* the least deadline chosen: on demand's hours times this */
#define PLAN_MIN_FACTOR 1.1
#define PLAN_MAX_FACTOR 3.0
#define PLAN_ROWS_MAX (2 + 2 * CLI_LIST_MAX)
#define DAY_S 86400

static const char plan_usage[] =
	"usage: proteusctl plan JOB.json [--db PATH] [--days N]\n"
	"         [--deadlines H,H,...] [--max-instances N,N,...]\n"
	"         [--seed N] [--billing legacy-hourly|per-second]\n"
	"         [--ondemand-prices FILE] [--spot-advisor FILE]\n"
	"         [--json] [--plot FILE.png|FILE.svg]\n"
	"\n"
	"Before renting: replays the job (docs/jobspec.md, or a daemon job\n"
	"file) on the last days of the spot prices in the store (`market\n"
	"import` or `market fetch`) with simulate's controller and work\n"
	"model, under BidBrain without a deadline (the cheapest), BidBrain at\n"
	"a few deadlines (finish_by_hours) and spot caps, and on demand (the\n"
	"fast reference), then prints the cost-time frontier: what finishing\n"
	"sooner would cost.  A header names the prices and interruption\n"
	"hazards it assumed.\n"
	"\n"
	"  --db PATH           the store (default: $PROTEUS_DB, else the\n"
	"                      running proteusd's, else as proteusd's)\n"
	"  --days N            the replay: the N days (default 7) up to the\n"
	"                      newest stored price of the job's markets; a\n"
	"                      store with less starts one day after its\n"
	"                      oldest price (the estimator's history); 2\n"
	"                      days or more of prices are needed\n"
	"  --deadlines LIST    BidBrain at these finish_by_hours (default:\n"
	"                      4 from on demand's hours x1.1 up to the\n"
	"                      hours of BidBrain without a deadline); one\n"
	"                      on demand cannot meet is reported, not run\n"
	"  --max-instances LIST\n"
	"                      also BidBrain at these spot caps\n"
	"                      (spot.max_instances), without a deadline\n"
	"  --seed N            seed for per-second interruptions (default 1)\n"
	"  --billing MODEL     default: legacy-hourly for a replay starting\n"
	"                      before 2017-10-02, per-second after\n"
	"  --ondemand-prices FILE\n"
	"                      {region: {type: usd_per_hour}} for the types\n"
	"                      the store has no on-demand price of\n"
	"  --spot-advisor FILE per-second: the Spot Instance Advisor snapshot\n"
	"                      of the interruption hazards (default: the\n"
	"                      job's spot_advisor, else the shipped one of\n"
	"                      the replay's start, etc/spot-advisor)\n"
	"  --json              one JSON object: prices, hazards, rows\n"
	"  --plot FILE         cost against hours, the frontier joined (.png\n"
	"                      or .svg; needs gnuplot)\n"
	"\n"
	"FRONTIER: a row no other finished row beats in both cost and hours.\n"
	"EXTRA_USD: its cost over the cheapest finished row's.\n"
	"\n"
	"exit: 0 ok, 1 failure, 2 usage, 3 bad input data (no prices, a job\n"
	"that cannot be planned)\n";

struct plan_opts {
	const char *job_path, *db, *od_path, *advisor, *billing, *plot;
	bool have_billing, json;
	int days;
	double deadlines[CLI_LIST_MAX];
	size_t n_deadlines;
	int caps[CLI_LIST_MAX];
	size_t n_caps;
	uint64_t seed;
};

enum row_kind { ROW_CHEAPEST = 0, ROW_DEADLINE, ROW_ONDEMAND, ROW_CAP };

struct row {
	enum row_kind kind;
	const struct policy_ops *pol;
	struct jobspec job;       /* the base job, with what varies */
	double deadline_h;        /* ROW_DEADLINE */
	bool chosen;              /* a deadline plan chose (not given) */
	int cap;                  /* ROW_CAP */
	bool infeasible;          /* a deadline on demand cannot meet */
	double need_h;            /* what on demand needs */
	bool ran;
	struct sim_plan *plan;
	struct sim_result res;
	bool frontier;
};

struct plan_ctx {
	struct plan_opts o;
	struct jobspec job;       /* as read, finish_by_hours cleared */
	double job_finish_by;     /* the file's finish_by_hours */
	char *job_text;
	char *db_path;
	struct store *st;
	struct simrun_prices *pr;
	struct market_set ms;
	struct ondemand_table od, od_file;
	bool have_od_file;
	size_t od_from_store;
	struct advisor adv;
	bool have_adv;
	char adv_path[4096];
	enum billing_model billing;
	int64_t start_s, end_s;
	bool short_store;         /* less than --days stored */
	double odh;               /* on demand's hours */
	double lo_h, hi_h;        /* the range deadlines were chosen in */
	double own_h;             /* BidBrain's hours without one (or the
				     window's); hi_h is past it when on
				     demand's x3 is later */
	bool auto_deadlines;
	struct row *rows;
	size_t n_rows;
};

/* ---- arguments ---- */

static int parse_deadlines(const char *arg, struct plan_opts *o)
{
	char *buf, *v[CLI_LIST_MAX], *end;
	size_t n;
	int rc = cli_split_list("--deadlines", arg, &buf, v, &n);

	if (rc >= 0)
		return rc;
	for (size_t i = 0; i < n; i++) {
		double h;

		errno = 0;
		h = strtod(v[i], &end);
		if (errno || end == v[i] || *end || !isfinite(h) ||
		    h < JOBSPEC_HOURS_MIN || h > 1e6) {
			log_err("--deadlines: '%s' is not a number of hours "
				"(want e.g. 12,24.5: each in %g..1e6)", v[i],
				JOBSPEC_HOURS_MIN);
			free(buf);
			return CLI_EXIT_USAGE;
		}
		o->deadlines[i] = h;
	}
	o->n_deadlines = n;
	free(buf);
	return -1;
}

static int parse_caps(const char *arg, struct plan_opts *o)
{
	char *buf, *v[CLI_LIST_MAX], *end;
	size_t n;
	int rc = cli_split_list("--max-instances", arg, &buf, v, &n);

	if (rc >= 0)
		return rc;
	for (size_t i = 0; i < n; i++) {
		long c;

		errno = 0;
		c = strtol(v[i], &end, 10);
		if (errno || end == v[i] || *end || c < 1 || c > 10000) {
			log_err("--max-instances: '%s' is not a spot cap (want "
				"integers in 1..10000, e.g. 2,4,8)", v[i]);
			free(buf);
			return CLI_EXIT_USAGE;
		}
		o->caps[i] = (int)c;
	}
	o->n_caps = n;
	free(buf);
	return -1;
}

static int parse_days(const char *arg, struct plan_opts *o)
{
	char *end;
	long d;

	errno = 0;
	d = strtol(arg, &end, 10);
	if (errno || end == arg || *end || d < 1 || d > PLAN_DAYS_MAX) {
		log_err("--days: want a whole number of days in 1..%d, not "
			"'%s'", PLAN_DAYS_MAX, arg);
		return CLI_EXIT_USAGE;
	}
	o->days = (int)d;
	return -1;
}

static int parse_seed(const char *arg, struct plan_opts *o)
{
	char *end;

	errno = 0;
	o->seed = strtoull(arg, &end, 10);
	if (errno || end == arg || *end || *arg == '-') {
		log_err("--seed: want a non-negative integer, not '%s'", arg);
		return CLI_EXIT_USAGE;
	}
	return -1;
}

static int parse_args(int argc, char **argv, struct plan_opts *o)
{
	static const struct option lopts[] = {
		{"billing", required_argument, NULL, 'b'},
		{"days", required_argument, NULL, 'D'},
		{"db", required_argument, NULL, 'd'},
		{"deadlines", required_argument, NULL, 'L'},
		{"help", no_argument, NULL, 'h'},
		{"json", no_argument, NULL, 'j'},
		{"max-instances", required_argument, NULL, 'M'},
		{"ondemand-prices", required_argument, NULL, 'o'},
		{"plot", required_argument, NULL, 'P'},
		{"seed", required_argument, NULL, 's'},
		{"spot-advisor", required_argument, NULL, 'A'},
		{0},
	};
	int c, rc = -1;

	o->db = cli_g.db;
	o->json = cli_g.json;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":", lopts, NULL)) != -1) {
		switch (c) {
		case 'A': o->advisor = optarg; break;
		case 'b': o->billing = optarg; o->have_billing = true; break;
		case 'D': rc = parse_days(optarg, o); break;
		case 'd': o->db = optarg; break;
		case 'h': fputs(plan_usage, stdout); return 0;
		case 'j': o->json = true; break;
		case 'L': rc = parse_deadlines(optarg, o); break;
		case 'M': rc = parse_caps(optarg, o); break;
		case 'o': o->od_path = optarg; break;
		case 'P': o->plot = optarg; break;
		case 's': rc = parse_seed(optarg, o); break;
		default:
			return cli_bad_option("plan", argv, c);
		}
		if (rc >= 0)
			return rc;
	}
	if (optind >= argc)
		return cli_usage("plan", "no job file named (proteusctl plan "
				 "JOB.json)");
	o->job_path = argv[optind++];
	if (optind < argc)
		return cli_usage("plan", "unexpected argument '%s'",
				 argv[optind]);
	return -1;
}

/* ---- the job and the prices ---- */

/* The job file: a regular file (a FIFO would block, a directory is no
 * job), then read as simulate reads it. */
static int read_plan_job(struct plan_ctx *c)
{
	struct px_error err = {0};
	struct stat sb;
	enum px_err e;

	if (stat(c->o.job_path, &sb) == 0 && !S_ISREG(sb.st_mode)) {
		log_err("job file '%s': %s, not a job file", c->o.job_path,
			S_ISDIR(sb.st_mode) ? "a directory" :
			S_ISFIFO(sb.st_mode) ? "a FIFO" :
			"not a regular file");
		return CLI_EXIT_DATA;
	}
	e = simrun_read_job("plan", c->o.job_path, &c->job, &c->job_text,
			    &err);
	if (e != PX_OK) {
		log_err("%s", err.msg);
		return e == PX_ENOMEM ? CLI_EXIT_FAIL : CLI_EXIT_DATA;
	}
	c->job_finish_by = c->job.finish_by_hours;
	c->job.finish_by_hours = 0;
	c->odh = jobspec_ondemand_hours(&c->job, NULL);
	if (!isfinite(c->odh)) {
		log_err("%s: the job's fleet on demand does no work: nothing "
			"to plan", c->o.job_path);
		return CLI_EXIT_DATA;
	}
	return CLI_EXIT_OK;
}

static void spot_types(const struct jobspec *job, char *buf, size_t len)
{
	size_t o = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < job->spot.n_types && o < len; i++)
		o += (size_t)snprintf(buf + o, len - o, "%s%s", i ? "," : "",
				      job->spot.types[i]);
}

/* The replay's window from the stored range (the header says which). */
static int choose_window(struct plan_ctx *c)
{
	const struct simrun_prices *p = c->pr;
	char a[32], b[32], t[512];

	if (p->last_s - p->first_s < 2 * DAY_S) {
		spot_types(&c->job, t, sizeof t);
		log_err("%s: %.2f days of %s spot prices of %s in '%s' (%s .. "
			"%s): plan needs 2 days or more (the first one is the "
			"estimator's history; proteusctl market fetch --days "
			"N)", c->db_path,
			(double)(p->last_s - p->first_s) / DAY_S, PLAN_PRODUCT,
			t, c->job.region, px_format_time(p->first_s, a,
							 sizeof a),
			px_format_time(p->last_s, b, sizeof b));
		return CLI_EXIT_DATA;
	}
	c->end_s = p->last_s;
	c->start_s = p->last_s - (int64_t)c->o.days * DAY_S;
	if (c->start_s < p->first_s + DAY_S) {
		c->start_s = p->first_s + DAY_S;
		c->short_store = true;
	}
	return CLI_EXIT_OK;
}

static int open_prices(struct plan_ctx *c)
{
	struct px_error err = {0};
	char t[512];
	enum px_err e;

	c->db_path = c->o.db ? strdup(c->o.db) : cli_default_db();
	c->pr = calloc(1, sizeof *c->pr);
	if (!c->db_path || !c->pr) {
		log_err("out of memory");
		return CLI_EXIT_FAIL;
	}
	e = store_open_readonly(c->db_path, &c->st, &err);
	if (e == PX_ENOENT) {
		log_err("%s (no prices to plan on: proteusctl market import "
			"or market fetch first)", err.msg);
		return CLI_EXIT_DATA;
	}
	if (e == PX_OK)
		e = simrun_store_markets(c->st, &c->job, PLAN_PRODUCT, c->pr,
					 &err);
	if (e != PX_OK) {
		log_err("%s", err.msg);
		return CLI_EXIT_FAIL;
	}
	if (!c->pr->n) {
		spot_types(&c->job, t, sizeof t);
		log_err("%s: no %s spot price of %s in region '%s'%s (import "
			"them: proteusctl market import or market fetch)",
			c->db_path, PLAN_PRODUCT, t, c->job.region,
			c->job.spot.n_zones ? " in the job's zones" : "");
		return CLI_EXIT_DATA;
	}
	return choose_window(c);
}

static int load_prices(struct plan_ctx *c)
{
	struct px_error err = {0};
	enum px_err e;

	e = simrun_store_load(c->st, c->pr, c->end_s, &c->ms, &err);
	if (e == PX_OK && c->o.od_path) {
		e = ondemand_table_load(c->o.od_path, &c->od_file, &err);
		c->have_od_file = e == PX_OK;
	}
	if (e == PX_OK)
		e = simrun_store_ondemand(c->st, &c->job, c->have_od_file ?
					  &c->od_file : NULL, &c->od,
					  &c->od_from_store, &err);
	if (e != PX_OK) {
		log_err("%s", err.msg);
		return e == PX_ENOMEM || e == PX_EDB ? CLI_EXIT_FAIL :
		       CLI_EXIT_DATA;
	}
	return CLI_EXIT_OK;
}

/* The billing model (--billing's, else the replay's start's) and,
 * per-second, the snapshot of the hazards. */
static int load_hazards(struct plan_ctx *c)
{
	struct px_error err = {0};
	enum px_err e;

	/* --billing was parsed with the other options */
	if (!c->o.have_billing)
		c->billing = c->start_s >= BILLING_PER_SECOND_FROM_S ?
			     BILLING_PER_SECOND : BILLING_LEGACY_HOURLY;
	if (c->billing != BILLING_PER_SECOND || c->job.rate_default >= 0)
		return CLI_EXIT_OK;
	e = simrun_advisor_path(c->o.advisor, c->o.job_path, &c->job,
				c->start_s, c->adv_path, sizeof c->adv_path,
				&err);
	if (e == PX_OK)
		e = advisor_load(c->adv_path, c->job.region, &c->adv, &err);
	if (e != PX_OK) {
		log_err("%s", err.msg);
		return e == PX_ENOMEM ? CLI_EXIT_FAIL : CLI_EXIT_DATA;
	}
	c->have_adv = true;
	return CLI_EXIT_OK;
}

/* ---- the rows ---- */

static struct row *add_row(struct plan_ctx *c, enum row_kind kind,
			   const struct policy_ops *pol)
{
	struct row *r = &c->rows[c->n_rows++];

	memset(r, 0, sizeof *r);
	r->kind = kind;
	r->pol = pol;
	r->job = c->job;
	return r;
}

static void add_deadline(struct plan_ctx *c, const struct policy_ops *bb,
			 double h, bool chosen)
{
	struct row *r;

	for (size_t i = 0; i < c->n_rows; i++)
		if (c->rows[i].kind == ROW_DEADLINE &&
		    c->rows[i].deadline_h == h)
			return;             /* named twice */
	r = add_row(c, ROW_DEADLINE, bb);
	r->deadline_h = h;
	r->chosen = chosen;
	r->job.finish_by_hours = h;
	r->infeasible = !jobspec_finish_feasible(&r->job, NULL, &r->need_h);
}

/* The deadlines between on demand's hours x1.1 and the later of the hours
 * of BidBrain without one (the window's, when that did not finish) and on
 * demand's x3 (within the window): a deadline looser than BidBrain's own
 * runtime can buy a slower, cheaper fleet (docs/simulate.md, "Deadlines").
 * PLAN_AUTO_DEADLINES evenly spaced from the low end, to the hundredth of
 * an hour. */
static void choose_deadlines(struct plan_ctx *c, const struct policy_ops *bb)
{
	const struct row *cheap = &c->rows[0];
	double lo = ceil(c->odh * PLAN_MIN_FACTOR * 100 - 1e-9) / 100, hi;
	double window = (double)(c->end_s - c->start_s) / 3600.0;
	double far = floor(c->odh * PLAN_MAX_FACTOR * 100 + 1e-9) / 100;

	hi = cheap->res.completed ? cheap->res.runtime_hours : window;
	if (far > window)
		far = window;
	c->own_h = hi;
	if (far > hi)
		hi = far;
	c->lo_h = lo;
	c->hi_h = hi;
	c->auto_deadlines = true;
	if (!(hi > lo))
		return;
	for (int k = 0; k < PLAN_AUTO_DEADLINES; k++) {
		double h = lo + (hi - lo) * k / PLAN_AUTO_DEADLINES;

		add_deadline(c, bb, ceil(h * 100 - 1e-9) / 100, true);
	}
}

static enum px_err row_plan(struct plan_ctx *c, struct row *r,
			    struct px_error *err)
{
	struct sim_setup su = {
		.ms = &c->ms, .od = &c->od, .job = &r->job,
		.billing = c->billing, .start_s = c->start_s,
		.end_s = c->end_s, .trace_first_s = c->pr->first_s,
		.trace_last_s = c->pr->last_s, .seed = c->o.seed,
		.advisor = c->have_adv ? &c->adv : NULL,
	};

	return sim_plan_new(&su, &r->plan, err);
}

/* Run rows [from, n_rows) that are to run, side by side. */
static int run_rows(struct plan_ctx *c, size_t from)
{
	struct simrun v[PLAN_ROWS_MAX];
	struct row *w[PLAN_ROWS_MAX];
	struct px_error err = {0};
	size_t n = 0;
	enum px_err e;

	for (size_t i = from; i < c->n_rows; i++) {
		struct row *r = &c->rows[i];

		if (r->infeasible)
			continue;
		e = row_plan(c, r, &err);
		if (e != PX_OK) {
			log_err("%s", err.msg);
			return e == PX_ENOMEM ? CLI_EXIT_FAIL : CLI_EXIT_DATA;
		}
		w[n] = r;
		v[n++] = (struct simrun){.plan = r->plan, .policy = r->pol,
					 .res = &r->res};
	}
	simrun_parallel(v, n, simrun_threads(n));
	for (size_t i = 0; i < n; i++) {
		if (v[i].e != PX_OK) {
			if (strncmp(v[i].err.msg, "policy '", 8))
				log_err("policy '%s': %s", w[i]->pol->name,
					v[i].err.msg);
			else
				log_err("%s", v[i].err.msg);
			return v[i].e == PX_ENOMEM ? CLI_EXIT_FAIL :
			       CLI_EXIT_DATA;
		}
		w[i]->ran = true;
	}
	return CLI_EXIT_OK;
}

static int run_plan(struct plan_ctx *c)
{
	const struct policy_ops *bb, *od;
	struct px_error err = {0};
	size_t first;
	int rc;

	if (policy_lookup("bidbrain", &bb, &err) != PX_OK ||
	    policy_lookup("ondemand", &od, &err) != PX_OK) {
		log_err("%s", err.msg);
		return CLI_EXIT_FAIL;
	}
	c->rows = calloc(PLAN_ROWS_MAX, sizeof *c->rows);
	if (!c->rows) {
		log_err("out of memory");
		return CLI_EXIT_FAIL;
	}
	add_row(c, ROW_CHEAPEST, bb);
	add_row(c, ROW_ONDEMAND, od);
	for (size_t i = 0; i < c->o.n_caps; i++) {
		struct row *r = add_row(c, ROW_CAP, bb);

		r->cap = c->o.caps[i];
		r->job.spot.max_instances = r->cap;
	}
	/* the job's own deadline, and those asked for */
	if (c->job_finish_by > 0)
		add_deadline(c, bb, c->job_finish_by, false);
	for (size_t i = 0; i < c->o.n_deadlines; i++)
		add_deadline(c, bb, c->o.deadlines[i], false);
	rc = run_rows(c, 0);
	if (rc || c->o.n_deadlines)
		return rc;
	first = c->n_rows;
	choose_deadlines(c, bb);
	return run_rows(c, first);
}

/* ---- the frontier ---- */

static bool finished(const struct row *r)
{
	return r->ran && r->res.completed;
}

/* Finished rows first, by hours then cost; then the rest as they ran;
 * the infeasible last. */
static int row_cmp(const void *pa, const void *pb)
{
	const struct row *a = pa, *b = pb;
	int ga = finished(a) ? 0 : a->ran ? 1 : 2;
	int gb = finished(b) ? 0 : b->ran ? 1 : 2;

	if (ga != gb)
		return ga - gb;
	if (ga == 0 && a->res.runtime_hours != b->res.runtime_hours)
		return a->res.runtime_hours < b->res.runtime_hours ? -1 : 1;
	if (ga == 0 && a->res.cost_usd != b->res.cost_usd)
		return a->res.cost_usd < b->res.cost_usd ? -1 : 1;
	if (a->kind != b->kind)
		return (int)a->kind - (int)b->kind;
	if (a->deadline_h != b->deadline_h)
		return a->deadline_h < b->deadline_h ? -1 : 1;
	return a->cap - b->cap;
}

/* Sort the rows and mark the finished ones no other finished row beats
 * in both cost and hours.  The cheapest finished row's cost in *ret
 * (false: none finished). */
static bool mark_frontier(struct plan_ctx *c, double *ret)
{
	bool any = false;

	qsort(c->rows, c->n_rows, sizeof *c->rows, row_cmp);
	for (size_t i = 0; i < c->n_rows; i++) {
		struct row *r = &c->rows[i];

		if (!finished(r))
			continue;
		if (!any || r->res.cost_usd < *ret)
			*ret = r->res.cost_usd;
		any = true;
		r->frontier = true;
		for (size_t k = 0; k < c->n_rows && r->frontier; k++) {
			const struct row *s = &c->rows[k];

			if (s == r || !finished(s))
				continue;
			if (s->res.cost_usd <= r->res.cost_usd &&
			    s->res.runtime_hours <= r->res.runtime_hours &&
			    (s->res.cost_usd < r->res.cost_usd ||
			     s->res.runtime_hours < r->res.runtime_hours))
				r->frontier = false;
		}
	}
	return any;
}

/* ---- output ---- */

/* The cost per work-hour of a run that did some work, else NAN. */
static double row_cpw(const struct row *r)
{
	double x;

	return r->ran && sim_result_cost_per_work(&r->res, &x) &&
	       isfinite(x) && x >= 0 ? x : NAN;
}

static bool row_met(const struct row *r)
{
	return r->res.completed && r->res.runtime_hours <= r->deadline_h;
}

static const char *row_name(const struct row *r)
{
	static const char *const names[] = {
		[ROW_CHEAPEST] = "cheapest", [ROW_DEADLINE] = "deadline",
		[ROW_ONDEMAND] = "ondemand", [ROW_CAP] = "spot-cap",
	};

	return names[r->kind];
}

/* Where the on-demand prices came from. */
static void od_source(const struct plan_ctx *c, char *buf, size_t len)
{
	size_t nf = c->od.n - c->od_from_store;

	if (!nf)
		snprintf(buf, len, "the store");
	else if (!c->od_from_store)
		snprintf(buf, len, "%s", c->o.od_path);
	else
		snprintf(buf, len, "the store (%zu), %s (%zu)",
			 c->od_from_store, c->o.od_path, nf);
}

/* The environment every row shares (the first row that ran has it). */
static const struct pol_env *shared_env(const struct plan_ctx *c)
{
	for (size_t i = 0; i < c->n_rows; i++)
		if (c->rows[i].plan)
			return sim_plan_env(c->rows[i].plan);
	return NULL;
}

static void print_hazards(const struct plan_ctx *c)
{
	const struct pol_env *env = shared_env(c);

	if (c->billing != BILLING_PER_SECOND) {
		printf("interruptions: none modelled apart from the prices "
		       "(legacy-hourly: an instance is evicted when the price "
		       "passes its bid)\n");
		return;
	}
	printf("interruptions: per-second hazards from %s",
	       c->have_adv ? simrun_base_name(c->adv_path) :
	       "the job's interruption_rates");
	for (size_t i = 0; env && i < env->n_types; i++)
		printf("%s %s %.4f", i ? "," : ":", env->types[i].name,
		       env->types[i].interrupt_per_h);
	printf(" per instance-hour\n");
}

static void print_header(const struct plan_ctx *c)
{
	const struct simrun_prices *p = c->pr;
	char a[32], b[32], s[32], e[32], src[4200];

	printf("plan for job '%s': %.6g work-hours of %s, %s billing, seed "
	       "%llu; on demand needs %.2f h\n", c->job.name,
	       c->job.work_hours, c->job.reference_type,
	       billing_model_name(c->billing),
	       (unsigned long long)c->o.seed, c->odh);
	printf("prices: %s: %s %s, %zu market%s%s (", c->db_path,
	       c->job.region, PLAN_PRODUCT, p->n, p->n == 1 ? "" : "s",
	       p->more ? ", more not read" : "");
	/* the markets come by type: each type and its zones */
	for (size_t i = 0, k; i < p->n; i = k) {
		for (k = i + 1; k < p->n && !strcmp(p->v[k].type,
						    p->v[i].type); k++)
			;
		printf("%s%s in %zu zone%s", i ? ", " : "", p->v[i].type,
		       k - i, k - i == 1 ? "" : "s");
	}
	printf("), %lld records stored %s .. %s, %lld read\n",
	       (long long)p->stored, px_format_time(p->first_s, a, sizeof a),
	       px_format_time(p->last_s, b, sizeof b), (long long)p->loaded);
	printf("replay: %s .. %s (%.1f h)",
	       px_format_time(c->start_s, s, sizeof s),
	       px_format_time(c->end_s, e, sizeof e),
	       (double)(c->end_s - c->start_s) / 3600.0);
	if (c->short_store)
		printf("; the store has %.2f days, less than --days %d: the "
		       "replay starts a day after its oldest price",
		       (double)(p->last_s - p->first_s) / DAY_S, c->o.days);
	printf("\n");
	od_source(c, src, sizeof src);
	printf("on-demand prices (%s):", src);
	for (size_t i = 0; i < c->od.n; i++)
		printf("%s %s %.4f", i ? "," : "", c->od.v[i].type,
		       (double)c->od.v[i].uusd_per_hour / 1e6);
	printf(" USD/h\n");
	print_hazards(c);
	if (c->auto_deadlines && c->hi_h > c->lo_h && c->hi_h > c->own_h)
		printf("deadlines: %d from %.2f h (on demand's x%.1f) up to "
		       "%.2f h (on demand's x%.0f or the replay's end: "
		       "BidBrain without one takes %.2f h, a looser "
		       "deadline may buy a slower, cheaper fleet)\n",
		       PLAN_AUTO_DEADLINES, c->lo_h, PLAN_MIN_FACTOR, c->hi_h,
		       PLAN_MAX_FACTOR, c->own_h);
	else if (c->auto_deadlines && c->hi_h > c->lo_h)
		printf("deadlines: %d from %.2f h (on demand's x%.1f) up to "
		       "%.2f h (BidBrain without one)\n", PLAN_AUTO_DEADLINES,
		       c->lo_h, PLAN_MIN_FACTOR, c->hi_h);
	else if (c->auto_deadlines)
		printf("deadlines: none to try: BidBrain without one takes "
		       "%.2f h, within on demand's x%.1f (%.2f h)\n", c->hi_h,
		       PLAN_MIN_FACTOR, c->lo_h);
	printf("\n");
}

#define ROW_FMT "%-8s %-8s %10s %8s %4s %10s %9s %8s %8s %10s %7s %9s %s"

/* A line of the table, without trailing blanks. */
static void put_line(char *line)
{
	size_t n = strlen(line);

	while (n && line[n - 1] == ' ')
		line[--n] = '\0';
	puts(line);
}

static void print_row(const struct row *r, bool have_min, double min_cost)
{
	char f[8][64], dl[32], cap[16], line[1024];

	snprintf(dl, sizeof dl, "-");
	if (r->kind == ROW_DEADLINE)
		snprintf(dl, sizeof dl, "%.2f", r->deadline_h);
	snprintf(cap, sizeof cap, "-");
	if (r->kind == ROW_CAP)
		snprintf(cap, sizeof cap, "%d", r->cap);
	if (!r->ran)
		snprintf(line, sizeof line, ROW_FMT, row_name(r),
			 r->pol->name, dl, cap, "no", "infeasible", "-", "-",
			 "-", "-", "-", "-", "");
	else
		snprintf(line, sizeof line, ROW_FMT, row_name(r),
			 r->pol->name, dl, cap,
			 r->res.completed ? "yes" : "no",
			 sim_stop_name(r->res.stop),
			 simrun_fmt(f[0], sizeof f[0], "%.2f",
				    r->res.cost_usd, "-"),
			 simrun_fmt(f[1], sizeof f[1], "%.2f",
				    r->res.runtime_hours, "-"),
			 simrun_fmt(f[2], sizeof f[2], "%.2f",
				    r->res.work_done_hours, "-"),
			 simrun_fmt(f[3], sizeof f[3], "%.5f", row_cpw(r),
				    "-"),
			 r->kind != ROW_DEADLINE ? "-" :
			 row_met(r) ? "met" : "missed",
			 finished(r) && have_min ?
			 simrun_fmt(f[4], sizeof f[4], "%.2f",
				    r->res.cost_usd - min_cost, "-") : "-",
			 r->frontier ? "*" : "");
	put_line(line);
}

static void print_table(const struct plan_ctx *c, bool have_min,
			double min_cost)
{
	print_header(c);
	printf(ROW_FMT "\n", "ROW", "POLICY", "DEADLINE_H", "SPOT_CAP",
	       "DONE", "STOP", "COST_USD", "HOURS", "WORK_H", "USD/WORK_H",
	       "MET", "EXTRA_USD", "FRONTIER");
	for (size_t i = 0; i < c->n_rows; i++)
		print_row(&c->rows[i], have_min, min_cost);
	printf("\n");
	for (size_t i = 0; i < c->n_rows; i++) {
		const struct row *r = &c->rows[i];

		if (r->infeasible)
			printf("deadline %.2f h: infeasible, not run: on "
			       "demand needs %.2f h (%d %s)\n", r->deadline_h,
			       r->need_h, r->job.instances,
			       r->job.reference_type);
		else if (r->ran && !r->res.completed)
			printf("%s %s: not done in the replay: %.2f of "
			       "%.6g work-hours done (stop: %s)\n",
			       row_name(r), r->pol->name,
			       r->res.work_done_hours, r->job.work_hours,
			       sim_stop_name(r->res.stop));
	}
	printf("FRONTIER (*): no other finished row is both cheaper and "
	       "sooner; EXTRA_USD: the cost over the cheapest finished row; "
	       "MET: finished within DEADLINE_H\n");
}

static json_t *prices_json(const struct plan_ctx *c)
{
	const struct simrun_prices *p = c->pr;
	char a[32], b[32], s[32], e[32], src[4200];
	json_t *mk = json_array(), *od = json_object();

	for (size_t i = 0; mk && i < p->n; i++) {
		json_array_append_new(mk, json_pack(
			"{s:s, s:s, s:I, s:s, s:s}", "zone", p->v[i].zone,
			"type", p->v[i].type, "records",
			(json_int_t)p->v[i].count, "first",
			px_format_time(p->v[i].first_s, a, sizeof a), "last",
			px_format_time(p->v[i].last_s, b, sizeof b)));
	}
	for (size_t i = 0; od && i < c->od.n; i++)
		json_object_set_new(od, c->od.v[i].type, json_real(
			(double)c->od.v[i].uusd_per_hour / 1e6));
	od_source(c, src, sizeof src);
	return json_pack("{s:s, s:s, s:s, s:o, s:I, s:I, s:s, s:s, s:s, s:s,"
			 " s:b, s:i, s:o, s:s}", "store", c->db_path,
			 "region", c->job.region, "product", PLAN_PRODUCT,
			 "markets", mk, "records_stored",
			 (json_int_t)p->stored, "records_read",
			 (json_int_t)p->loaded, "first",
			 px_format_time(p->first_s, a, sizeof a), "last",
			 px_format_time(p->last_s, b, sizeof b), "start",
			 px_format_time(c->start_s, s, sizeof s), "end",
			 px_format_time(c->end_s, e, sizeof e),
			 "short_store", c->short_store, "days", c->o.days,
			 "ondemand_usd_per_hour", od, "ondemand_from", src);
}

static json_t *hazards_json(const struct plan_ctx *c)
{
	const struct pol_env *env = shared_env(c);
	json_t *rates = json_object();
	bool ps = c->billing == BILLING_PER_SECOND;

	for (size_t i = 0; ps && rates && env && i < env->n_types; i++)
		json_object_set_new(rates, env->types[i].name,
				    simrun_jnum(env->types[i].interrupt_per_h));
	return json_pack("{s:s, s:s?, s:o}", "billing",
			 billing_model_name(c->billing), "spot_advisor",
			 c->have_adv ? simrun_base_name(c->adv_path) : NULL,
			 "per_instance_hour", rates);
}

static json_t *row_json(const struct row *r, bool have_min, double min_cost)
{
	json_t *o = json_pack("{s:s, s:s, s:o, s:o, s:b}", "row", row_name(r),
			      "policy", r->pol->name, "deadline_hours",
			      r->kind == ROW_DEADLINE ?
			      simrun_jnum(r->deadline_h) : json_null(),
			      "spot_cap", r->kind == ROW_CAP ?
			      json_integer(r->cap) : json_null(), "ran",
			      r->ran);

	if (!o)
		return NULL;
	if (r->infeasible) {
		json_object_set_new(o, "infeasible", json_true());
		json_object_set_new(o, "ondemand_hours",
				    simrun_jnum(r->need_h));
		return o;
	}
	if (r->kind == ROW_DEADLINE)
		json_object_set_new(o, "deadline_met",
				    json_boolean(row_met(r)));
	json_object_set_new(o, "chosen", json_boolean(r->chosen));
	json_object_set_new(o, "completed", json_boolean(r->res.completed));
	json_object_set_new(o, "stop", json_string(sim_stop_name(r->res.stop)));
	json_object_set_new(o, "cost_usd", simrun_jnum(r->res.cost_usd));
	json_object_set_new(o, "runtime_hours",
			    simrun_jnum(r->res.runtime_hours));
	json_object_set_new(o, "work_done_hours",
			    simrun_jnum(r->res.work_done_hours));
	json_object_set_new(o, "cost_per_work_usd", simrun_jnum(row_cpw(r)));
	json_object_set_new(o, "evictions", json_integer(r->res.evictions));
	json_object_set_new(o, "extra_usd", finished(r) && have_min ?
			    simrun_jnum(r->res.cost_usd - min_cost) :
			    json_null());
	json_object_set_new(o, "frontier", json_boolean(r->frontier));
	return o;
}

static int print_json(const struct plan_ctx *c, bool have_min,
		      double min_cost)
{
	json_t *rows = json_array(), *o;

	for (size_t i = 0; rows && i < c->n_rows; i++)
		json_array_append_new(rows, row_json(&c->rows[i], have_min,
						     min_cost));
	o = json_pack("{s:s, s:o, s:o, s:I, s:o, s:o, s:o, s:o}", "job",
		      c->job.name, "work_hours", simrun_jnum(c->job.work_hours),
		      "ondemand_hours", simrun_jnum(c->odh), "seed",
		      (json_int_t)c->o.seed, "prices", prices_json(c),
		      "hazards", hazards_json(c), "job_finish_by_hours",
		      c->job_finish_by > 0 ? simrun_jnum(c->job_finish_by) :
		      json_null(), "rows", rows);
	return simrun_json_out(o, "the plan");
}

/* cost against hours: every finished row a point, the frontier a line */
static void plot_script(FILE *f, enum simplot_format fmt, void *ctx)
{
	const struct plan_ctx *c = ctx;
	char t[160];

	snprintf(t, sizeof t, "plan for job %s, %s billing", c->job.name,
		 billing_model_name(c->billing));
	simplot_safe_title(t, t, sizeof t);
	simplot_terminal(f, fmt, 700);
	fputs("$all << EOD\n", f);
	for (size_t i = 0; i < c->n_rows; i++) {
		const struct row *r = &c->rows[i];

		if (!finished(r))
			continue;
		fprintf(f, "%.6f %.6f \"%s", r->res.runtime_hours,
			r->res.cost_usd, r->pol->name);
		if (r->kind == ROW_DEADLINE)
			fprintf(f, " %.2fh", r->deadline_h);
		else if (r->kind == ROW_CAP)
			fprintf(f, " cap %d", r->cap);
		fputs("\"\n", f);
	}
	fputs("EOD\n$front << EOD\n", f);
	for (size_t i = 0; i < c->n_rows; i++)
		if (c->rows[i].frontier)
			fprintf(f, "%.6f %.6f\n", c->rows[i].res.runtime_hours,
				c->rows[i].res.cost_usd);
	fprintf(f, "EOD\nset title '%s' font 'sans,13'\n", t);
	fputs("set grid\nset key right top box opaque\n"
	      "set xlabel 'hours to finish'\nset ylabel 'cost, USD'\n"
	      "set xrange [0:*]\nset yrange [0:*]\n"
	      "plot $front using 1:2 with linespoints lw 2 pt 7 "
	      "title 'frontier', $all using 1:2 with points pt 6 ps 1.5 "
	      "title 'runs', $all using 1:2:3 with labels offset 1,1 left "
	      "notitle\n", f);
}

/* ---- the command ---- */

static void plan_release(struct plan_ctx *c)
{
	for (size_t i = 0; c->rows && i < c->n_rows; i++) {
		sim_result_release(&c->rows[i].res);
		sim_plan_free(c->rows[i].plan);
	}
	free(c->rows);
	advisor_release(&c->adv);
	ondemand_table_release(&c->od);
	ondemand_table_release(&c->od_file);
	market_set_release(&c->ms);
	store_close(c->st);
	free(c->pr);
	free(c->db_path);
	free(c->job_text);
}

int cli_plan(int argc, char **argv)
{
	struct plan_ctx c = {.o = {.days = PLAN_DAYS_DEFAULT, .seed = 1}};
	enum simplot_format pf = SIMPLOT_PNG;
	struct px_error err = {0};
	double min_cost = 0;
	bool have_min;
	int rc;

	market_set_init(&c.ms);
	rc = parse_args(argc, argv, &c.o);
	if (rc >= 0)
		return rc;
	if (c.o.plot && simplot_format_of(c.o.plot, &pf, &err) != PX_OK) {
		log_err("--plot: %s", err.msg);
		return CLI_EXIT_USAGE;
	}
	if (c.o.have_billing &&
	    billing_model_parse(c.o.billing, &c.billing, &err) != PX_OK) {
		log_err("--billing: %s", err.msg);
		return CLI_EXIT_USAGE;
	}
	rc = read_plan_job(&c);
	if (!rc)
		rc = open_prices(&c);
	if (!rc)
		rc = load_prices(&c);
	if (!rc)
		rc = load_hazards(&c);
	if (!rc)
		rc = run_plan(&c);
	if (rc)
		goto out;
	have_min = mark_frontier(&c, &min_cost);
	if (c.o.json)
		rc = print_json(&c, have_min, min_cost);
	else
		print_table(&c, have_min, min_cost);
	if (c.o.plot && simplot_render(c.o.plot, pf, plot_script, &c,
				       &err) != PX_OK) {
		log_err("%s", err.msg);
		rc = CLI_EXIT_FAIL;
	}
out:
	plan_release(&c);
	return rc;
}
