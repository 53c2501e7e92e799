/* test_cli_plan.c -- proteusctl plan end to end through the real binary:
 * a store made with `market import` of a fixture trace (the shipped 7-day
 * slice, tests/data/sim, the shared 2021 trace), then the frontier's
 * rows, deadlines, the prices and hazards header, and the refusals. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pxrun.h"

static char *tmp, *db;

static void setup(void)
{
	tmp = px_tmpdir();
	cr_assert_not_null(tmp);
	cr_assert(asprintf(&db, "%s/p.db", tmp) > 0);
}

static void teardown(void)
{
	px_rmtree(tmp);
	free(tmp);
	free(db);
}

TestSuite(cli_plan, .init = setup, .fini = teardown, .timeout = 60);

/* The shipped slice (legacy-hourly, 2016-02-29 .. 2016-03-07) and its
 * era's on-demand prices. */
#define SLICE "docs/examples/traces/us-east-1_2016-03-01_7d_linux.json.gz"
#define SLICE_OD "etc/ondemand/us-east-1_2016-02_2016-04.json"

/* 24 work-hours of m3.large on 4 on demand: 7.44 h; spot in three types */
static const char small_job[] =
	"{\"name\": \"small\", \"region\": \"us-east-1\", \"work_hours\": 24,"
	" \"reference_type\": \"m3.large\", \"instances\": 4,"
	" \"reliable\": {\"type\": \"m3.large\", \"count\": 0},"
	" \"spot\": {\"types\": [\"m3.large\", \"m3.medium\", \"r3.large\"],"
	" \"max_instances\": 8}, \"scaling_efficiency\": 0.9,"
	" \"startup_seconds\": 120, \"clock_seconds\": 60}\n";

/* The same with at most 2 spot instances: below the baselines' 4, so
 * BidBrain without a deadline is slower than on demand (13.97 h) and the
 * deadlines chosen run on both sides of its own hours (with 8 it keeps
 * the 4's rate, 6.11 h, and every chosen deadline is looser than that) */
static const char capped_job[] =
	"{\"name\": \"small\", \"region\": \"us-east-1\", \"work_hours\": 24,"
	" \"reference_type\": \"m3.large\", \"instances\": 4,"
	" \"reliable\": {\"type\": \"m3.large\", \"count\": 0},"
	" \"spot\": {\"types\": [\"m3.large\", \"m3.medium\", \"r3.large\"],"
	" \"max_instances\": 2}, \"scaling_efficiency\": 0.9,"
	" \"startup_seconds\": 120, \"clock_seconds\": 60}\n";

/* proteusctl <args...> (NULL-terminated, at most 30) */
static int ctl(struct pxrun *r, const char *const *args)
{
	const char *argv[32] = {"proteusctl"};
	int n = 1;

	for (int i = 0; args[i]; i++) {
		cr_assert_lt(n, 31);
		argv[n++] = args[i];
	}
	argv[n] = NULL;
	cr_assert_eq(pxrun(r, 30, "proteusctl", argv), 0, "spawn failed");
	return r->status;
}

/* market import into db of trace (may be NULL) and on-demand table od
 * (may be NULL), both paths relative to the source tree or absolute */
static void import(const char *trace, const char *od)
{
	char *t = trace ? (trace[0] == '/' ? strdup(trace) :
			   px_src_path(trace)) : NULL;
	char *o = od ? px_src_path(od) : NULL;
	const char *a[8] = {"market", "import", "--db", db};
	int n = 4;
	struct pxrun r;

	if (o) {
		a[n++] = "--ondemand-prices";
		a[n++] = o;
	}
	if (t)
		a[n++] = t;
	a[n] = NULL;
	cr_assert_eq(ctl(&r, a), 0, "%s", r.err);
	pxrun_free(&r);
	free(t);
	free(o);
}

/* the job text at tmp/name; its path (caller frees) */
static char *job_file(const char *name, const char *text)
{
	char *p;

	cr_assert_eq(px_put_file(tmp, name, text), 0);
	cr_assert(asprintf(&p, "%s/%s", tmp, name) > 0);
	return p;
}

/* proteusctl plan JOB --db db [extra...] */
static int plan(struct pxrun *r, const char *job, const char *const *extra)
{
	const char *a[30] = {"plan", job, "--db", db};
	int n = 4;

	for (int i = 0; extra && extra[i]; i++)
		a[n++] = extra[i];
	a[n] = NULL;
	return ctl(r, a);
}

static bool flag(json_t *o, const char *k)
{
	return json_is_true(json_object_get(o, k));
}

static const char *str(json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));

	cr_assert_not_null(s, "field %s not a string", k);
	return s;
}

/* No figure printed is a fake one: no word of out is nan, inf or a
 * negative amount. */
static void no_fake_figures(const char *out)
{
	const char *p = out;

	while (*p) {
		size_t n;
		char w[64];

		p += strspn(p, " \t\n,:()\"[]{}");
		n = strcspn(p, " \t\n,:()\"[]{}");
		if (!n)
			break;
		snprintf(w, sizeof w, "%.*s", (int)(n < 63 ? n : 63), p);
		cr_assert(strcasecmp(w, "nan") && strcasecmp(w, "-nan") &&
			  strcasecmp(w, "inf") && strcasecmp(w, "-inf") &&
			  strcasecmp(w, "infinity") &&
			  !(w[0] == '-' && w[1] >= '0' && w[1] <= '9'),
			  "'%s' in:\n%s", w, out);
		p += n;
	}
}

/* a dominates b: no dearer, no slower, and better in one */
static bool dominates(json_t *a, json_t *b)
{
	double ca = px_json_num(a, "cost_usd"), cb = px_json_num(b, "cost_usd");
	double ha = px_json_num(a, "runtime_hours"), hb = px_json_num(b, "runtime_hours");

	return ca <= cb && ha <= hb && (ca < cb || ha < hb);
}

Test(cli_plan, frontier_is_sorted_and_not_dominated)
{
	const char *x[] = {"--days", "3", "--max-instances", "2,4", "--json",
			   NULL};
	const char *text[] = {"--days", "3", NULL};
	char *job = job_file("job.json", capped_job);
	json_t *j, *rows, *r, *s, *p;
	double prev_h = -1, prev_c = INFINITY, lo, hi, odh;
	size_t i, k, n_front = 0, n_chosen = 0;
	struct pxrun pr;
	bool have_cheapest = false, have_od = false;

	import(SLICE, SLICE_OD);
	cr_assert_eq(plan(&pr, job, x), 0, "%s", pr.err);
	no_fake_figures(pr.out);
	j = px_json_parse(pr.out);
	rows = json_object_get(j, "rows");
	odh = px_json_num(j, "ondemand_hours");
	cr_assert_float_eq(odh, 7.44, 0.01);
	/* the window: 3 days up to the newest stored price of the job's
	 * markets (r3.large in us-east-1a/c) */
	p = json_object_get(j, "prices");
	cr_assert_str_eq(str(p, "first"), "2016-02-29T16:56:23Z");
	cr_assert_str_eq(str(p, "last"), "2016-03-07T23:59:52Z");
	cr_assert_str_eq(str(p, "start"), "2016-03-04T23:59:52Z");
	cr_assert_str_eq(str(p, "end"), "2016-03-07T23:59:52Z");
	cr_assert_str_eq(str(p, "store"), db);
	cr_assert(!flag(p, "short_store"));
	cr_assert_eq(json_array_size(json_object_get(p, "markets")), 8);
	cr_assert_str_eq(str(json_object_get(j, "hazards"), "billing"),
			 "legacy-hourly");
	json_array_foreach(rows, i, r) {
		const char *kind = str(r, "row");

		have_cheapest |= !strcmp(kind, "cheapest");
		have_od |= !strcmp(kind, "ondemand");
		if (!strcmp(kind, "deadline") && flag(r, "chosen"))
			n_chosen++;
		/* a deadline row met its deadline, or says it missed it */
		if (!strcmp(kind, "deadline"))
			cr_assert_eq(flag(r, "deadline_met"),
				     flag(r, "completed") &&
				     px_json_num(r, "runtime_hours") <=
				     px_json_num(r, "deadline_hours"));
		if (!flag(r, "frontier"))
			continue;
		n_front++;
		cr_assert(flag(r, "completed"));
		/* the frontier in order: sooner first, each later one
		 * cheaper (or the same run's figures) */
		cr_assert_geq(px_json_num(r, "runtime_hours"), prev_h);
		cr_assert_leq(px_json_num(r, "cost_usd"), prev_c);
		prev_h = px_json_num(r, "runtime_hours");
		prev_c = px_json_num(r, "cost_usd");
		cr_assert_geq(px_json_num(r, "extra_usd"), 0);
		json_array_foreach(rows, k, s)
			if (flag(s, "completed"))
				cr_assert(!dominates(s, r), "row %zu beats "
					  "frontier row %zu", k, i);
	}
	cr_assert(have_cheapest && have_od);
	cr_assert_geq(n_front, 1);
	/* every finished row off the frontier is beaten by one on it */
	json_array_foreach(rows, i, r) {
		bool beaten = false;

		if (!flag(r, "completed") || flag(r, "frontier"))
			continue;
		json_array_foreach(rows, k, s)
			beaten |= flag(s, "frontier") && dominates(s, r);
		cr_assert(beaten, "row %zu neither on nor beaten", i);
	}
	/* 4 deadlines chosen from on demand's hours x1.1 to the later of
	 * BidBrain's own and on demand's x3 (within the 72 h replayed) */
	cr_assert_eq(n_chosen, 4);
	lo = ceil(odh * 1.1 * 100 - 1e-9) / 100;
	json_array_foreach(rows, i, r) {
		if (strcmp(str(r, "row"), "cheapest"))
			continue;
		hi = fmax(px_json_num(r, "runtime_hours"),
			  floor(odh * 3 * 100 + 1e-9) / 100);
		json_array_foreach(rows, k, s)
			if (flag(s, "chosen"))
				cr_assert(px_json_num(s, "deadline_hours") >=
					  lo - 1e-9 &&
					  px_json_num(s, "deadline_hours") < hi,
					  "deadline %g outside %g..%g",
					  px_json_num(s, "deadline_hours"), lo, hi);
	}
	/* the header names BidBrain's own hours (the cheapest row's, which
	 * the frontier's order need not put first) */
	pxrun_free(&pr);
	cr_assert_eq(plan(&pr, job, text), 0, "%s", pr.err);
	json_array_foreach(rows, i, r) {
		char want[96];

		if (strcmp(str(r, "row"), "cheapest"))
			continue;
		snprintf(want, sizeof want, "BidBrain without one takes %.2f h",
			 px_json_num(r, "runtime_hours"));
		cr_assert(strstr(pr.out, want), "no '%s' in %s", want, pr.out);
	}
	/* the spot caps ran as asked */
	k = 0;
	json_array_foreach(rows, i, r)
		if (!strcmp(str(r, "row"), "spot-cap"))
			k += (size_t)px_json_num(r, "spot_cap");
	cr_assert_eq(k, 6);
	json_decref(j);
	pxrun_free(&pr);
	free(job);
}

Test(cli_plan, infeasible_deadline_is_refused_with_its_reason)
{
	const char *x[] = {"--days", "2", "--deadlines", "1,30", NULL};
	const char *xj[] = {"--days", "2", "--deadlines", "1,30", "--json",
			    NULL};
	char *job = job_file("job.json", small_job);
	struct pxrun r;
	json_t *j, *v;
	size_t i, n = 0;

	import(SLICE, SLICE_OD);
	cr_assert_eq(plan(&r, job, x), 0, "%s", r.err);
	cr_assert(strstr(r.out, "deadline 1.00 h: infeasible, not run: on "
			 "demand needs 7.44 h (4 m3.large)"), "%s", r.out);
	cr_assert(strstr(r.out, "ROW"), "%s", r.out);
	cr_assert(strstr(r.out, "FRONTIER"), "%s", r.out);
	/* deadlines given: none chosen */
	cr_assert_null(strstr(r.out, "deadlines: 4 from"), "%s", r.out);
	no_fake_figures(r.out);
	pxrun_free(&r);

	cr_assert_eq(plan(&r, job, xj), 0, "%s", r.err);
	j = px_json_parse(r.out);
	json_array_foreach(json_object_get(j, "rows"), i, v) {
		if (strcmp(str(v, "row"), "deadline"))
			continue;
		n++;
		if (px_json_num(v, "deadline_hours") == 1) {
			cr_assert(flag(v, "infeasible"));
			cr_assert(!flag(v, "ran"));
			cr_assert_float_eq(px_json_num(v, "ondemand_hours"), 7.44,
					   0.01);
			cr_assert_null(json_object_get(v, "cost_usd"));
		} else {
			cr_assert_float_eq(px_json_num(v, "deadline_hours"), 30, 0);
			cr_assert(flag(v, "ran"));
			cr_assert_eq(flag(v, "deadline_met"),
				     flag(v, "completed") &&
				     px_json_num(v, "runtime_hours") <= 30);
		}
	}
	cr_assert_eq(n, 2);
	json_decref(j);
	pxrun_free(&r);
	free(job);
}

/* A store with 2 days: the replay starts a day after the oldest price,
 * the header says so and names the store's first and last time. */
Test(cli_plan, short_store_header_names_prices)
{
	char *job = px_src_path("tests/data/sim/job.json");
	struct pxrun r;

	import("tests/data/sim/flat.json", "tests/data/sim/od.json");
	cr_assert_eq(plan(&r, job, NULL), 0, "%s", r.err);
	cr_assert(strstr(r.out, "1 market") || strstr(r.out, "2 markets"),
		  "%s", r.out);
	cr_assert(strstr(r.out, db), "%s", r.out);
	cr_assert(strstr(r.out, "stored 2016-03-01T00:00:00Z .. "
			 "2016-03-03T00:00:00Z"), "%s", r.out);
	cr_assert(strstr(r.out, "replay: 2016-03-02T00:00:00Z .. "
			 "2016-03-03T00:00:00Z (24.0 h); the store has 2.00 "
			 "days, less than --days 7"), "%s", r.out);
	cr_assert(strstr(r.out, "on-demand prices (the store): c3.xlarge "
			 "0.5000"), "%s", r.out);
	cr_assert(strstr(r.out, "interruptions: none modelled"), "%s",
		  r.out);
	/* bidbrain on flat prices is as fast as on demand: the deadlines
	 * go up to on demand's x3 (the looser ones may buy a slower fleet) */
	cr_assert(strstr(r.out, "deadlines: 4 from 2.20 h (on demand's x1.1) "
			 "up to 6.00 h (on demand's x3 or the replay's end: "
			 "BidBrain without one takes 2.00 h"), "%s", r.out);
	cr_assert(strstr(r.out, "cheapest bidbrain"), "%s", r.out);
	no_fake_figures(r.out);
	pxrun_free(&r);
	free(job);
}

/* 100 work-hours on 2 on demand need 50 h: nothing finishes in the day
 * replayed, and no row has a cost per work or an extra cost made up. */
Test(cli_plan, not_done_rows_say_the_work_done)
{
	const char *x[] = {"--json", NULL};
	char *job = job_file("long.json",
		"{\"name\": \"long\", \"region\": \"us-east-1\","
		" \"work_hours\": 100, \"reference_type\": \"c3.xlarge\","
		" \"instances\": 2, \"reliable\": {\"type\": \"c3.xlarge\","
		" \"count\": 0}, \"spot\": {\"types\": [\"c3.xlarge\"],"
		" \"max_instances\": 2}, \"scaling_efficiency\": 1,"
		" \"startup_seconds\": 0, \"clock_seconds\": 60}\n");
	struct pxrun r;
	json_t *j, *v;
	size_t i;

	import("tests/data/sim/flat.json", "tests/data/sim/od.json");
	cr_assert_eq(plan(&r, job, NULL), 0, "%s", r.err);
	cr_assert(strstr(r.out, "cheapest bidbrain: not done in the replay: "),
		  "%s", r.out);
	cr_assert(strstr(r.out, " of 100 work-hours done (stop: window)"),
		  "%s", r.out);
	/* on demand x1.1 (55 h) is past the replay's 24 h */
	cr_assert(strstr(r.out, "deadlines: none to try: BidBrain without one "
			 "takes 24.00 h, within on demand's x1.1 (55.00 h)"),
		  "%s", r.out);
	no_fake_figures(r.out);
	pxrun_free(&r);
	cr_assert_eq(plan(&r, job, x), 0, "%s", r.err);
	j = px_json_parse(r.out);
	json_array_foreach(json_object_get(j, "rows"), i, v) {
		json_t *cpw = json_object_get(v, "cost_per_work_usd");

		cr_assert(!flag(v, "completed"));
		cr_assert(!flag(v, "frontier"));
		cr_assert(json_is_null(json_object_get(v, "extra_usd")));
		cr_assert_lt(px_json_num(v, "work_done_hours"), 100);
		cr_assert(json_is_null(cpw) || (json_number_value(cpw) >= 0 &&
						isfinite(json_number_value(cpw))));
	}
	json_decref(j);
	pxrun_free(&r);
	free(job);
}

/* Per-second: the hazards header names the advisor snapshot and each
 * type's rate (the shared 2021 trace, a one-day job). */
Test(cli_plan, per_second_hazards_name_the_snapshot)
{
	char *trace = px_shared_path("traces/us-east-1_2021-03_2021-05_linux"
				     ".json.gz");
	char *job = job_file("j21.json",
		"{\"name\": \"j21\", \"region\": \"us-east-1\","
		" \"work_hours\": 8, \"reference_type\": \"c4.xlarge\","
		" \"instances\": 2, \"reliable\": {\"type\": \"c4.xlarge\","
		" \"count\": 0}, \"spot\": {\"types\": [\"c4.xlarge\","
		" \"m5.xlarge\"], \"max_instances\": 4},"
		" \"scaling_efficiency\": 0.9, \"startup_seconds\": 120,"
		" \"clock_seconds\": 60}\n");
	const char *x[] = {"--days", "2", "--json", NULL};
	struct pxrun r;
	json_t *j, *h, *rates;
	struct stat sb;

	if (!trace || stat(trace, &sb))
		cr_skip_test("no shared trace (PX_SHARED)");
	import(trace, "etc/ondemand/us-east-1_2021-03_2021-05.json");
	cr_assert_eq(plan(&r, job, NULL), 0, "%s", r.err);
	cr_assert(strstr(r.out, "per-second billing"), "%s", r.out);
	cr_assert(strstr(r.out, "interruptions: per-second hazards from "
			 "linux_2021-02.json: c4.xlarge "), "%s", r.out);
	pxrun_free(&r);
	cr_assert_eq(plan(&r, job, x), 0, "%s", r.err);
	j = px_json_parse(r.out);
	h = json_object_get(j, "hazards");
	cr_assert_str_eq(str(h, "spot_advisor"), "linux_2021-02.json");
	rates = json_object_get(h, "per_instance_hour");
	cr_assert_gt(px_json_num(rates, "c4.xlarge"), 0);
	cr_assert_gt(px_json_num(rates, "m5.xlarge"), 0);
	cr_assert_str_eq(str(json_object_get(j, "prices"), "last"),
			 "2021-05-31T01:45:44Z");
	json_decref(j);
	pxrun_free(&r);
	free(job);
	free(trace);
}

Test(cli_plan, empty_or_short_store_is_bad_data)
{
	char *job = px_src_path("tests/data/sim/job.json");
	char *job2 = job_file("m3.json",
		"{\"name\": \"m3\", \"region\": \"us-east-1\","
		" \"work_hours\": 1, \"reference_type\": \"m3.medium\","
		" \"instances\": 1, \"reliable\": {\"type\": \"m3.medium\","
		" \"count\": 0}, \"spot\": {\"types\": [\"m3.medium\"],"
		" \"max_instances\": 1}, \"scaling_efficiency\": 1,"
		" \"startup_seconds\": 0, \"clock_seconds\": 60}\n");
	struct pxrun r;

	/* no database at all */
	cr_assert_eq(plan(&r, job, NULL), 3);
	cr_assert(strstr(r.err, "no prices to plan on"), "%s", r.err);
	pxrun_free(&r);
	/* on-demand prices only: no spot price of the job's */
	import(NULL, "tests/data/sim/od.json");
	cr_assert_eq(plan(&r, job, NULL), 3);
	cr_assert(strstr(r.err, "no Linux/UNIX spot price of c3.xlarge in "
			 "region 'us-east-1'"), "%s", r.err);
	cr_assert_str_eq(r.out, "");
	pxrun_free(&r);
	/* three hours of prices */
	import("tests/data/ctl/small.json", "tests/data/ctl/od.json");
	cr_assert_eq(plan(&r, job2, NULL), 3, "%s", r.out);
	cr_assert(strstr(r.err, "plan needs 2 days or more"), "%s", r.err);
	pxrun_free(&r);
	free(job);
	free(job2);
}

Test(cli_plan, ondemand_prices_from_the_store_or_the_file)
{
	char *job = px_src_path("tests/data/sim/job.json");
	char *od = px_src_path("tests/data/sim/od.json");
	const char *x[] = {"--ondemand-prices", od, NULL};
	struct pxrun r;

	import("tests/data/sim/flat.json", NULL);
	cr_assert_eq(plan(&r, job, NULL), 3);
	cr_assert(strstr(r.err, "no on-demand price for c3.xlarge"), "%s",
		  r.err);
	cr_assert(strstr(r.err, "--ondemand-prices"), "%s", r.err);
	pxrun_free(&r);
	cr_assert_eq(plan(&r, job, x), 0, "%s", r.err);
	cr_assert(strstr(r.out, "on-demand prices ("), "%s", r.out);
	cr_assert(strstr(r.out, "sim/od.json): c3.xlarge 0.5000"), "%s",
		  r.out);
	pxrun_free(&r);
	free(job);
	free(od);
}

Test(cli_plan, bad_options_and_job_files)
{
	static const char *const bad[][3] = {
		{"--days", "0", "--days"}, {"--days", "x", "--days"},
		{"--deadlines", "abc", "--deadlines"},
		{"--deadlines", "2,,3", "--deadlines"},
		{"--max-instances", "0", "--max-instances"},
		{"--seed", "-1", "--seed"}, {"--billing", "yearly", "--billing"},
		{"--plot", "x.gif", "--plot"}, {"--bogus", "1", "--bogus"},
	};
	char *job = px_src_path("tests/data/sim/job.json");
	char *fifo;
	struct pxrun r;

	import("tests/data/sim/flat.json", "tests/data/sim/od.json");
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		const char *x[] = {bad[i][0], bad[i][1], NULL};

		cr_assert_eq(plan(&r, job, x), 2, "%s %s: %d", bad[i][0],
			     bad[i][1], r.status);
		cr_assert(strstr(r.err, bad[i][2]), "%s", r.err);
		cr_assert_str_eq(r.out, "");
		pxrun_free(&r);
	}
	/* no job, two jobs */
	{
		const char *a[] = {"plan", "--db", db, NULL};
		const char *b[] = {"plan", job, job, "--db", db, NULL};

		cr_assert_eq(ctl(&r, a), 2);
		cr_assert(strstr(r.err, "no job file"), "%s", r.err);
		pxrun_free(&r);
		cr_assert_eq(ctl(&r, b), 2);
		pxrun_free(&r);
	}
	/* a directory and a FIFO are no job files */
	cr_assert_eq(plan(&r, tmp, NULL), 3);
	cr_assert(strstr(r.err, "a directory, not a job file"), "%s", r.err);
	pxrun_free(&r);
	cr_assert(asprintf(&fifo, "%s/fifo.json", tmp) > 0);
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	cr_assert_eq(plan(&r, fifo, NULL), 3);
	cr_assert(strstr(r.err, "a FIFO, not a job file"), "%s", r.err);
	pxrun_free(&r);
	free(fifo);
	free(job);
}

Test(cli_plan, help_and_dispatch)
{
	const char *a[] = {"plan", "--help", NULL};
	const char *b[] = {"--help", NULL};
	struct pxrun r;

	cr_assert_eq(ctl(&r, a), 0);
	cr_assert(strstr(r.out, "usage: proteusctl plan JOB.json"), "%s",
		  r.out);
	pxrun_free(&r);
	cr_assert_eq(ctl(&r, b), 0);
	cr_assert(strstr(r.out, "  plan "), "%s", r.out);
	pxrun_free(&r);
}

static bool have_gnuplot(void)
{
	const char *path = getenv("PATH");
	char buf[4096];

	while (path && *path) {
		size_t n = strcspn(path, ":");

		snprintf(buf, sizeof buf, "%.*s/gnuplot", (int)n, path);
		if (access(buf, X_OK) == 0)
			return true;
		path += n + (path[n] == ':');
	}
	return false;
}

/* --plot: an SVG with the frontier and each finished run drawn */
Test(cli_plan, plot_svg)
{
	char *job = job_file("job.json", small_job), *out, *svg;
	const char *x[] = {"--days", "2", "--plot", NULL, NULL};
	struct pxrun r;

	if (!have_gnuplot())
		cr_skip_test("gnuplot is not installed");
	cr_assert(asprintf(&out, "%s/f.svg", tmp) > 0);
	x[3] = out;
	import(SLICE, SLICE_OD);
	cr_assert_eq(plan(&r, job, x), 0, "%s", r.err);
	pxrun_free(&r);
	svg = px_test_read_file(out, NULL);
	cr_assert_not_null(svg, "no plot at %s", out);
	cr_assert(strstr(svg, "<svg"), "not an SVG");
	cr_assert(strstr(svg, "frontier"), "no frontier in the plot");
	cr_assert(strstr(svg, "ondemand"), "no ondemand point");
	free(svg);
	free(out);
	free(job);
}
