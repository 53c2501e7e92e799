/* test_cli_workload.c -- proteusctl simulate --workload end to end: each
 * arbiter's JSON, the pool's limits held, a gang's wait, weights, bad
 * input, job files beside the workload, determinism and the plot, on
 * workloads the tests write (tests/data/sim's flat trace: c3.xlarge at
 * 0.10 spot, 0.50 on demand) and the shipped 2021 example. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pxrun.h"

static char *tmp;

static void setup(void)
{
	tmp = px_tmpdir();
	cr_assert_not_null(tmp);
}

static void teardown(void)
{
	px_rmtree(tmp);
	free(tmp);
}

TestSuite(cli_workload, .init = setup, .fini = teardown, .timeout = 120);

/* simulate --workload's arbiters, in the default order */
static const char *const arbs[] = {"fifo", "max-min", "finish-time",
				   "goodput"};
#define N_ARBS (sizeof arbs / sizeof *arbs)

/* p kept until 32 more are (a rotation of static slots) */
static const char *keep(char *p)
{
	static char *bufs[32];
	static int next;

	cr_assert_not_null(p);
	free(bufs[next]);
	bufs[next] = p;
	next = (next + 1) % 32;
	return p;
}

/* $PX_SRC/<rel>, absolute (a test may run proteusctl elsewhere) */
static const char *src(const char *rel)
{
	char *p = px_src_path(rel), *abs;

	cr_assert_not_null(p);
	abs = realpath(p, NULL);
	cr_assert_not_null(abs, "no %s", p);
	free(p);
	return keep(abs);
}

/* tmp/<rel> */
static const char *in_tmp(const char *rel)
{
	char *p;

	cr_assert(asprintf(&p, "%s/%s", tmp, rel) > 0);
	return keep(p);
}

static void put(const char *rel, const char *text)
{
	cr_assert_eq(px_put_file(tmp, rel, text), 0, "writing %s", rel);
}

/* A c3.xlarge job for the flat trace: work_h work-hours, a reliable tier
 * of rel instances on demand, at most max spot instances. */
static json_t *spec(const char *name, double work_h, int rel, int max)
{
	json_t *j = json_pack("{s:s, s:s, s:f, s:s, s:i, s:{s:s, s:i}, "
			      "s:{s:[s], s:i}, s:i, s:i, s:i}",
			      "name", name, "region", "us-east-1",
			      "work_hours", work_h,
			      "reference_type", "c3.xlarge",
			      "instances", max > 0 ? max : 1,
			      "reliable", "type", "c3.xlarge", "count", rel,
			      "spot", "types", "c3.xlarge",
			      "max_instances", max,
			      "scaling_efficiency", 1, "startup_seconds", 0,
			      "clock_seconds", 60);

	cr_assert_not_null(j);
	return j;
}

/* An entry of jobs[] (weight 0: no weight given). */
static json_t *entry(const char *name, double arrival, double weight,
		     json_t *job)
{
	json_t *e = json_pack("{s:s, s:f, s:o}", "name", name,
			      "arrival_hours", arrival, "job", job);

	cr_assert_not_null(e);
	if (weight > 0)
		cr_assert_eq(json_object_set_new(e, "weight",
						 json_real(weight)), 0);
	return e;
}

/* tmp/<rel>: {"pool": pool, "jobs": jobs} (pool NULL: no pool key); its
 * path.  Takes both references. */
static const char *workload(const char *rel, json_t *pool, json_t *jobs)
{
	json_t *w = json_pack("{s:o}", "jobs", jobs);
	char *text;

	cr_assert_not_null(w);
	if (pool)
		cr_assert_eq(json_object_set_new(w, "pool", pool), 0);
	text = json_dumps(w, JSON_INDENT(1) | JSON_SORT_KEYS);
	cr_assert_not_null(text);
	put(rel, text);
	free(text);
	json_decref(w);
	return in_tmp(rel);
}

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
	cr_assert_eq(pxrun(r, 100, "proteusctl", argv), 0, "spawn failed");
	return r->status;
}

/* simulate --workload path on the flat trace, plus extra args */
static int wl(struct pxrun *r, const char *path, const char *const *extra)
{
	const char *a[30] = {"simulate", "--workload", path, "--trace",
			     src("tests/data/sim/flat.json"),
			     "--ondemand-prices",
			     src("tests/data/sim/od.json")};
	int n = 7;

	for (int i = 0; extra && extra[i]; i++) {
		cr_assert_lt(n, 29);
		a[n++] = extra[i];
	}
	a[n] = NULL;
	return ctl(r, a);
}

/* wl with --json, which must succeed with nothing on stderr: the JSON */
static json_t *wl_json(const char *path, const char *arbiters)
{
	const char *x[] = {"--json", arbiters ? "--arbiter" : NULL, arbiters,
			   NULL};
	struct pxrun r;
	json_t *j;

	cr_assert_eq(wl(&r, path, x), 0, "%s", r.err);
	cr_assert_str_eq(r.err, "");
	j = px_json_parse(r.out);
	pxrun_free(&r);
	return j;
}

/* The shipped example on the shared 2021 trace, four days (every job
 * done by then); the test is skipped without the trace. */
static int shipped(struct pxrun *r, const char *const *extra)
{
	char *trace = px_shared_path("traces/us-east-1_2021-03_2021-05_linux"
				     ".json.gz");
	const char *a[30] = {
		"simulate", "--workload",
		src("docs/examples/workload-2021-team.json"), "--trace", trace,
		"--ondemand-prices",
		src("etc/ondemand/us-east-1_2021-03_2021-05.json"),
		"--start", "2021-03-22T00:00:00Z",
		"--end", "2021-03-26T00:00:00Z",
	};
	struct stat sb;
	int n = 11;

	if (!trace || stat(trace, &sb))
		cr_skip_test("no shared trace (PX_SHARED)");
	keep(trace);
	for (int i = 0; extra && extra[i]; i++) {
		cr_assert_lt(n, 29);
		a[n++] = extra[i];
	}
	a[n] = NULL;
	return ctl(r, a);
}

static json_t *result_of(json_t *top, const char *arbiter)
{
	json_t *arr = json_object_get(top, "results"), *v;
	size_t i;

	json_array_foreach(arr, i, v)
		if (!strcmp(json_string_value(json_object_get(v, "arbiter")),
			    arbiter))
			return v;
	cr_assert_fail("no result for %s", arbiter);
	return NULL;
}

static json_t *job_in(json_t *res, const char *name)
{
	json_t *arr = json_object_get(res, "jobs"), *v;
	size_t i;

	json_array_foreach(arr, i, v)
		if (!strcmp(json_string_value(json_object_get(v, "name")),
			    name))
			return v;
	cr_assert_fail("no job %s in %s", name,
		       json_string_value(json_object_get(res, "arbiter")));
	return NULL;
}

/* A member that must be a finite number. */
static double num(json_t *o, const char *k)
{
	double v = px_json_num(o, k);

	cr_assert(isfinite(v), "%s is %g", k, v);
	return v;
}

static double jnum(json_t *res, const char *job, const char *k)
{
	return num(job_in(res, job), k);
}

static bool near(double a, double b)
{
	return fabs(a - b) <= 1e-6 * fmax(1, fmax(fabs(a), fabs(b)));
}

/* One arbiter's result: every number finite and not negative, its jobs
 * the names given, each done with its work_h, its totals its jobs'. */
static void check_result(json_t *res, const char *const *names,
			 const double *work_h, size_t n)
{
	static const char *const top[] = {
		"max_rho", "mean_completion_hours", "p95_completion_hours",
		"cost_usd", "utilisation", "rounds", "peak_spot_vcpus",
		"peak_ondemand_vcpus", "peak_usd_per_hour", "over_limit",
	};
	static const char *const per[] = {
		"rho", "completion_hours", "cost_usd", "arrival_hours",
		"wait_hours", "alone_hours", "work_done_hours", "evictions",
		"sheds", "refused",
	};
	json_t *jobs = json_object_get(res, "jobs"), *j;
	double rho = 0, cost = 0, sum = 0, lo = HUGE_VAL, hi = 0, c, p95;
	size_t i;

	for (size_t k = 0; k < sizeof top / sizeof *top; k++)
		cr_assert_geq(num(res, top[k]), 0, "%s", top[k]);
	cr_assert_leq(num(res, "utilisation"), 1);
	cr_assert_eq(num(res, "over_limit"), 0);
	cr_assert_eq(json_array_size(jobs), n);
	json_array_foreach(jobs, i, j) {
		cr_assert_str_eq(json_string_value(json_object_get(j, "name")),
				 names[i]);
		cr_assert(json_is_true(json_object_get(j, "completed")),
			  "%s not done", names[i]);
		for (size_t k = 0; k < sizeof per / sizeof *per; k++)
			cr_assert_geq(num(j, per[k]), 0, "%s.%s", names[i],
				      per[k]);
		cr_assert(near(num(j, "work_done_hours"), work_h[i]));
		c = num(j, "completion_hours");
		cr_assert_gt(c, 0);
		cr_assert_geq(c, num(j, "wait_hours"));
		cr_assert(near(num(j, "rho"), c / num(j, "alone_hours")),
			  "%s: rho %g", names[i], num(j, "rho"));
		rho = fmax(rho, num(j, "rho"));
		cost += num(j, "cost_usd");
		sum += c;
		lo = fmin(lo, c);
		hi = fmax(hi, c);
	}
	cr_assert(near(num(res, "max_rho"), rho));
	cr_assert(near(num(res, "cost_usd"), cost));
	cr_assert(near(num(res, "mean_completion_hours"), sum / n));
	p95 = num(res, "p95_completion_hours");
	cr_assert(p95 >= lo - 1e-9 && p95 <= hi + 1e-9, "p95 %g", p95);
}

/* 1. The shipped example: the echo of the run, and an object per arbiter
 * (all four by default, in order) with its totals and jobs. */
Test(cli_workload, json_of_every_arbiter)
{
	static const char *const names[] = {"mlr-big", "mf-medium",
					    "mlp-small"};
	static const double work[] = {768, 160, 40};
	const char *x[] = {"--json", NULL};
	struct pxrun r;
	json_t *j, *pool, *res;
	size_t i;

	cr_assert_eq(shipped(&r, x), 0, "%s", r.err);
	cr_assert_str_eq(r.err, "");
	j = px_json_parse(r.out);
	pxrun_free(&r);
	cr_assert_str_eq(json_string_value(json_object_get(j, "workload")),
			 "workload-2021-team.json");
	cr_assert_eq(num(j, "jobs"), 3);
	cr_assert_str_eq(json_string_value(json_object_get(j, "policy")),
			 "bidbrain");
	cr_assert_str_eq(json_string_value(json_object_get(j, "billing")),
			 "per-second");
	cr_assert_str_eq(json_string_value(json_object_get(j, "start")),
			 "2021-03-22T00:00:00Z");
	cr_assert_str_eq(json_string_value(json_object_get(j, "end")),
			 "2021-03-26T00:00:00Z");
	pool = json_object_get(j, "pool");
	cr_assert_str_eq(json_string_value(json_object_get(
				 pool, "pool_spot_vcpus")), "standard=128");
	cr_assert_str_eq(json_string_value(json_object_get(
				 pool, "pool_ondemand_vcpus")), "standard=32");
	cr_assert(json_is_null(json_object_get(pool, "pool_usd_per_hour")));
	cr_assert_eq(num(pool, "pool_lease_seconds"), 3600);
	cr_assert(near(num(pool, "pool_fairness"), 0.8));
	cr_assert_eq(json_array_size(json_object_get(j, "results")), N_ARBS);
	json_array_foreach(json_object_get(j, "results"), i, res) {
		cr_assert_str_eq(json_string_value(json_object_get(
					 res, "arbiter")), arbs[i]);
		check_result(res, names, work, 3);
		/* every type of the three jobs is of the standard group */
		cr_assert_leq(num(res, "peak_spot_vcpus"), 128);
		cr_assert_leq(num(res, "peak_ondemand_vcpus"), 32);
		cr_assert_gt(num(res, "rounds"), 0);
	}
	json_decref(j);
}

/* Three jobs of 6 work-hours, a reliable instance each (4 vCPUs) and
 * up to 4 spot, arriving at 0, 0.5 and 1 h, in pool (NULL: none). */
static const char *three_jobs(const char *rel, json_t *pool)
{
	json_t *jobs = json_pack("[o, o, o]",
				 entry("a", 0, 0, spec("a", 6, 1, 4)),
				 entry("b", 0.5, 0, spec("b", 6, 1, 4)),
				 entry("c", 1, 0, spec("c", 6, 1, 4)));

	cr_assert_not_null(jobs);
	return workload(rel, pool, jobs);
}

/* 2. A tight pool: two instances of spot, two on demand, 1.50 USD an
 * hour, for three jobs; no arbiter's peak is past a limit, and the
 * limits bind (a job waits under each). */
Test(cli_workload, no_limit_exceeded)
{
	static const char *const names[] = {"a", "b", "c"};
	static const double work[] = {6, 6, 6};
	json_t *pool = json_pack("{s:s, s:i, s:f}",
				 "pool_spot_vcpus", "standard=8",
				 "pool_ondemand_vcpus", 8,
				 "pool_usd_per_hour", 1.5);
	json_t *j, *p;

	j = wl_json(three_jobs("tight.json", pool), NULL);
	p = json_object_get(j, "pool");
	cr_assert_str_eq(json_string_value(json_object_get(
				 p, "pool_spot_vcpus")), "standard=8");
	cr_assert_str_eq(json_string_value(json_object_get(
				 p, "pool_ondemand_vcpus")), "8");
	cr_assert(near(num(p, "pool_usd_per_hour"), 1.5));
	for (size_t i = 0; i < N_ARBS; i++) {
		json_t *res = result_of(j, arbs[i]);
		double waits = 0;

		check_result(res, names, work, 3);
		cr_assert_leq(num(res, "peak_spot_vcpus"), 8, "%s", arbs[i]);
		cr_assert_leq(num(res, "peak_ondemand_vcpus"), 8, "%s",
			      arbs[i]);
		cr_assert_leq(num(res, "peak_usd_per_hour"), 1.5 + 1e-9,
			      "%s", arbs[i]);
		cr_assert_eq(num(res, "over_limit"), 0, "%s", arbs[i]);
		for (size_t k = 0; k < 3; k++)
			waits += jnum(res, names[k], "wait_hours");
		cr_assert_gt(waits, 0, "%s: nobody waited", arbs[i]);
	}
	json_decref(j);
}

/* 3. On-demand room for one reliable tier: the second job, come at the
 * same time, waits unstarted until the first is done. */
Test(cli_workload, gang_waits_for_its_tier)
{
	json_t *jobs = json_pack("[o, o]",
				 entry("a", 0, 0, spec("a", 4, 1, 2)),
				 entry("b", 0, 0, spec("b", 4, 1, 2)));
	json_t *pool = json_pack("{s:i, s:i}", "pool_spot_vcpus", 8,
				 "pool_ondemand_vcpus", 4);
	json_t *j = wl_json(workload("gang.json", pool, jobs), NULL);

	for (size_t i = 0; i < N_ARBS; i++) {
		json_t *res = result_of(j, arbs[i]);
		double done_a = jnum(res, "a", "completion_hours");
		double wait_b = jnum(res, "b", "wait_hours");

		cr_assert_eq(jnum(res, "a", "wait_hours"), 0, "%s", arbs[i]);
		cr_assert_gt(wait_b, 0, "%s", arbs[i]);
		cr_assert_geq(wait_b, done_a - 1e-6, "%s: b in at %g h, a "
			      "done at %g h", arbs[i], wait_b, done_a);
		cr_assert_gt(jnum(res, "b", "completion_hours"), done_a);
		cr_assert_leq(num(res, "peak_ondemand_vcpus"), 4);
		cr_assert_eq(num(res, "over_limit"), 0);
	}
	json_decref(j);
}

/* 4. No limits ("none", or no pool at all): every job gets what it
 * wants, the same under every arbiter. */
Test(cli_workload, no_limits_every_arbiter_the_same)
{
	json_t *pool = json_pack("{s:s, s:s}", "pool_spot_vcpus", "none",
				 "pool_ondemand_vcpus", "none");
	json_t *j = wl_json(three_jobs("none.json", pool), NULL);
	json_t *bare = wl_json(three_jobs("bare.json", NULL), NULL);
	json_t *first = result_of(j, "fifo"), *v;
	size_t k;

	cr_assert_str_eq(json_string_value(json_object_get(json_object_get(
				 j, "pool"), "pool_spot_vcpus")), "none");
	json_array_foreach(json_object_get(first, "jobs"), k, v) {
		cr_assert_eq(num(v, "wait_hours"), 0);
		cr_assert_eq(num(v, "refused"), 0);
		cr_assert_eq(num(v, "sheds"), 0);
		cr_assert(json_is_true(json_object_get(v, "completed")));
	}
	for (size_t i = 1; i < N_ARBS; i++) {
		json_t *res = result_of(j, arbs[i]);

		json_array_foreach(json_object_get(first, "jobs"), k, v)
			cr_assert(json_equal(v, json_array_get(json_object_get(
					     res, "jobs"), k)),
				  "%s: job %zu differs from fifo's", arbs[i],
				  k);
		cr_assert(near(num(res, "cost_usd"), num(first, "cost_usd")));
		cr_assert(near(num(res, "mean_completion_hours"),
			       num(first, "mean_completion_hours")));
	}
	cr_assert(json_equal(json_object_get(j, "results"),
			     json_object_get(bare, "results")),
		  "no pool key differs from \"none\"");
	json_decref(j);
	json_decref(bare);
}

/* Two jobs of 8 work-hours wanting 4 spot instances each in a pool of
 * 4: a with weight w. */
static json_t *weighted(const char *rel, double w)
{
	json_t *jobs = json_pack("[o, o]",
				 entry("a", 0, w, spec("a", 8, 0, 4)),
				 entry("b", 0, 0, spec("b", 8, 0, 4)));
	json_t *pool = json_pack("{s:i}", "pool_spot_vcpus", 16);

	return wl_json(workload(rel, pool, jobs), "max-min");
}

/* 5. Under max-min, weight 3 finishes a sooner than weight 1, b no
 * sooner; at weight 1 the two are even. */
Test(cli_workload, weight_buys_a_larger_share)
{
	json_t *one = weighted("w1.json", 1), *three = weighted("w3.json", 3);
	json_t *r1 = result_of(one, "max-min"), *r3 = result_of(three,
								"max-min");
	double a1 = jnum(r1, "a", "completion_hours");
	double a3 = jnum(r3, "a", "completion_hours");

	cr_assert_eq(json_array_size(json_object_get(one, "results")), 1);
	cr_assert(near(a1, jnum(r1, "b", "completion_hours")),
		  "equal weights, a %g h, b %g h", a1,
		  jnum(r1, "b", "completion_hours"));
	cr_assert_lt(a3, a1, "weight 3: %g h, weight 1: %g h", a3, a1);
	cr_assert_geq(jnum(r3, "b", "completion_hours"),
		      jnum(r1, "b", "completion_hours"));
	cr_assert_leq(num(r3, "peak_spot_vcpus"), 16);
	json_decref(one);
	json_decref(three);
}

struct bad_case {
	const char *file;   /* in tmp */
	const char *text;   /* NULL: no such file */
	const char *field;  /* what stderr names besides the file */
	const char *extra;  /* with --arbiter (NULL: none) */
	int rc;
};

#define TINY_JOB "{\"job\": \"tiny.json\"}"

static const struct bad_case bad_cases[] = {
	{"missing.json", NULL, "No such file", NULL, 3},
	{"malformed.json", "{\"pool\": {\n", "line ", NULL, 3},
	{"notobj.json", "[1, 2]", "an object", NULL, 3},
	{"topkey.json", "{\"jobz\": []}", "jobz: unknown key", NULL, 3},
	{"nojobs.json", "{\"jobs\": []}", "jobs: an array", NULL, 3},
	{"fair.json", "{\"pool\": {\"pool_fairness\": 2}, \"jobs\": ["
	 TINY_JOB "]}", "pool.pool_fairness", NULL, 3},
	{"lease.json", "{\"pool\": {\"pool_lease_seconds\": 5}, \"jobs\": ["
	 TINY_JOB "]}", "pool.pool_lease_seconds", NULL, 3},
	{"spot.json", "{\"pool\": {\"pool_spot_vcpus\": -4}, \"jobs\": ["
	 TINY_JOB "]}", "pool.pool_spot_vcpus", NULL, 3},
	{"group.json", "{\"pool\": {\"pool_ondemand_vcpus\": \"standard=x\"}"
	 ", \"jobs\": [" TINY_JOB "]}", "pool.pool_ondemand_vcpus", NULL, 3},
	{"usd.json", "{\"pool\": {\"pool_usd_per_hour\": -1}, \"jobs\": ["
	 TINY_JOB "]}", "pool.pool_usd_per_hour", NULL, 3},
	{"poolkey.json", "{\"pool\": {\"pool_spot\": 8}, \"jobs\": ["
	 TINY_JOB "]}", "pool.pool_spot: unknown key", NULL, 3},
	{"arrival.json", "{\"jobs\": [" TINY_JOB ", {\"arrival_hours\": -1, "
	 "\"job\": \"tiny.json\"}]}", "jobs[1].arrival_hours", NULL, 3},
	{"arrtext.json", "{\"jobs\": [{\"arrival_hours\": \"1\", "
	 "\"job\": \"tiny.json\"}]}", "jobs[0].arrival_hours", NULL, 3},
	{"weight.json", "{\"jobs\": [{\"weight\": 0, \"job\": \"tiny.json\"}"
	 "]}", "jobs[0].weight", NULL, 3},
	{"nojob.json", "{\"jobs\": [{\"arrival_hours\": 1}]}",
	 "jobs[0].job", NULL, 3},
	{"jobkey.json", "{\"jobs\": [{\"arival_hours\": 1, \"job\": "
	 "\"tiny.json\"}]}", "jobs[0].arival_hours: unknown key", NULL, 3},
	{"jobfile.json", "{\"jobs\": [{\"job\": \"nofile.json\"}]}",
	 "jobs[0].job: ", NULL, 3},
	{"spec.json", "{\"jobs\": [{\"job\": {\"name\": \"x\", "
	 "\"work_hours\": \"x\"}}]}", "jobs[0]", NULL, 3},
	{"ok.json", "{\"jobs\": [" TINY_JOB "]}", "unknown arbiter 'lottery'",
	 "fifo,lottery", 2},
	{"ok.json", "{\"jobs\": [" TINY_JOB "]}", "'fifo' named twice",
	 "fifo,max-min,fifo", 2},
	{"ok.json", "{\"jobs\": [" TINY_JOB "]}", "--arbiter: bad list",
	 "fifo,,goodput", 2},
};

/* 6. Bad input data: exit 3, stderr naming the workload file and the
 * field; a bad --arbiter: exit 2; nothing on stdout either way. */
Test(cli_workload, bad_input_names_file_and_field)
{
	char *tiny = px_test_read_file(src("tests/data/sim/job.json"), NULL);

	cr_assert_not_null(tiny);
	put("tiny.json", tiny);
	free(tiny);
	for (size_t i = 0; i < sizeof bad_cases / sizeof *bad_cases; i++) {
		const struct bad_case *c = &bad_cases[i];
		const char *x[] = {c->extra ? "--arbiter" : NULL, c->extra,
				   NULL};
		const char *path = in_tmp(c->file);
		struct pxrun r;

		if (c->text)
			put(c->file, c->text);
		cr_assert_eq(wl(&r, path, x), c->rc, "%s: exit %d: %s",
			     c->file, r.status, r.err);
		cr_assert_str_eq(r.out, "", "%s", c->file);
		if (c->rc == 3)
			cr_assert(strstr(r.err, path), "%s: %s", c->file,
				  r.err);
		cr_assert(strstr(r.err, c->field), "%s: want '%s': %s",
			  c->file, c->field, r.err);
		pxrun_free(&r);
	}
}

/* 6. Options that do not go with --workload: usage, exit 2. */
Test(cli_workload, workload_with_one_job_options_is_usage)
{
	const char *job = src("tests/data/sim/job.json");
	const char *path;
	const char *with_job[] = {"--job", job, NULL};
	const char *with_csv[] = {"--csv", NULL, NULL};
	const char *arb_alone[] = {"simulate", "--job", job, "--trace",
				   src("tests/data/sim/flat.json"),
				   "--ondemand-prices",
				   src("tests/data/sim/od.json"),
				   "--arbiter", "fifo", NULL};
	struct pxrun r;

	with_csv[1] = in_tmp("r.csv");
	path = workload("ok.json", NULL,
			json_pack("[o]", entry("a", 0, 0, spec("a", 4, 0, 2))));
	cr_assert_eq(wl(&r, path, with_job), 2, "%s", r.err);
	cr_assert(strstr(r.err, "--workload takes the place of --job"), "%s",
		  r.err);
	cr_assert_str_eq(r.out, "");
	pxrun_free(&r);
	cr_assert_eq(wl(&r, path, with_csv), 2, "%s", r.err);
	cr_assert(strstr(r.err, "--csv"), "%s", r.err);
	cr_assert(access(with_csv[1], F_OK) != 0, "the csv was written");
	pxrun_free(&r);
	cr_assert_eq(ctl(&r, arb_alone), 2, "%s", r.err);
	cr_assert(strstr(r.err, "--arbiter is for --workload"), "%s", r.err);
	pxrun_free(&r);
}

/* A job's arrival past the window's end is bad input too, named by the
 * file and the field; so is a name two jobs share. */
Test(cli_workload, arrival_past_the_window)
{
	json_t *jobs = json_pack("[o, o]",
				 entry("a", 0, 0, spec("a", 4, 0, 2)),
				 entry("b", 100, 0, spec("b", 4, 0, 2)));
	const char *path = workload("late.json", NULL, jobs);
	struct pxrun r;

	/* the flat trace: 48 hours */
	cr_assert_eq(wl(&r, path, NULL), 3, "%s", r.err);
	cr_assert(strstr(r.err, path), "%s", r.err);
	cr_assert(strstr(r.err, "jobs[1].arrival_hours"), "%s", r.err);
	cr_assert(strstr(r.err, "within the window"), "%s", r.err);
	cr_assert_str_eq(r.out, "");
	pxrun_free(&r);
	jobs = json_pack("[o, o]", entry("a", 0, 0, spec("a", 4, 0, 2)),
			 entry("a", 1, 0, spec("a", 4, 0, 2)));
	path = workload("twins.json", NULL, jobs);
	cr_assert_eq(wl(&r, path, NULL), 3, "%s", r.err);
	cr_assert(strstr(r.err, "jobs[1].name"), "%s", r.err);
	cr_assert(strstr(r.err, "jobs[0]'s too"), "%s", r.err);
	pxrun_free(&r);
}

/* No arrival_hours: the job comes at the window's start (workload.c's
 * default; the key is optional, as weight and name are). */
Test(cli_workload, arrival_defaults_to_the_start)
{
	json_t *e = entry("b", 0, 0, spec("b", 4, 0, 2));
	json_t *jobs, *j, *res;

	cr_assert_eq(json_object_del(e, "arrival_hours"), 0);
	jobs = json_pack("[o, o]", entry("a", 2, 0, spec("a", 4, 0, 2)), e);
	j = wl_json(workload("noarr.json", NULL, jobs), "fifo");
	res = result_of(j, "fifo");
	cr_assert_eq(jnum(res, "a", "arrival_hours"), 2);
	cr_assert_eq(jnum(res, "b", "arrival_hours"), 0);
	cr_assert(json_is_true(json_object_get(job_in(res, "b"),
					       "completed")));
	json_decref(j);
}

/* 7. Job files named relative to the workload's folder, run from another
 * folder with the workload itself named relative to that one. */
Test(cli_workload, job_files_beside_the_workload)
{
	static const char *const names[] = {"tiny", "t2"};
	static const double work[] = {4, 4};
	char *tiny = px_test_read_file(src("tests/data/sim/job.json"), NULL);
	const char *argv[] = {
		"sh", "-c", "cd \"$1\" && exec \"$2\" simulate --workload "
		"../wdir/w.json --trace \"$3\" --ondemand-prices \"$4\" --json",
		"sh", in_tmp("other"), NULL, src("tests/data/sim/flat.json"),
		src("tests/data/sim/od.json"), NULL,
	};
	char *ctl_path = NULL;
	struct pxrun r;
	json_t *j, *res;

	cr_assert(asprintf(&ctl_path, "%s/proteusctl", getenv("PX_BUILD") ?
			   getenv("PX_BUILD") : "build") > 0);
	argv[5] = keep(realpath(ctl_path, NULL));
	free(ctl_path);
	cr_assert_not_null(tiny);
	put("wdir/specs/tiny.json", tiny);
	put("top/tiny2.json", tiny);
	free(tiny);
	put("wdir/w.json", "{\"jobs\": [{\"job\": \"specs/tiny.json\"}, "
	    "{\"name\": \"t2\", \"arrival_hours\": 1, "
	    "\"job\": \"../top/tiny2.json\"}]}");
	cr_assert_eq(mkdir(in_tmp("other"), 0700), 0);
	cr_assert_eq(pxrun(&r, 100, "/bin/sh", argv), 0, "spawn failed");
	cr_assert_eq(r.status, 0, "%s", r.err);
	j = px_json_parse(r.out);
	pxrun_free(&r);
	cr_assert_str_eq(json_string_value(json_object_get(j, "workload")),
			 "w.json");
	cr_assert_eq(num(j, "jobs"), 2);
	for (size_t i = 0; i < N_ARBS; i++) {
		res = result_of(j, arbs[i]);
		check_result(res, names, work, 2);
		cr_assert_eq(jnum(res, "t2", "arrival_hours"), 1);
	}
	json_decref(j);
}

/* 8. Two runs, byte for byte the same JSON; an arbiter run alone gives
 * what it gave among the four (each runs on the same market and seeds);
 * the shipped example, when the shared trace is there, the same too. */
Test(cli_workload, deterministic)
{
	const char *path = three_jobs("det.json", json_pack(
		"{s:i, s:i}", "pool_spot_vcpus", 8, "pool_ondemand_vcpus", 8));
	const char *x[] = {"--json", NULL};
	char *trace = px_shared_path("traces/us-east-1_2021-03_2021-05_linux"
				     ".json.gz");
	struct pxrun r1, r2;
	json_t *all, *one;
	struct stat sb;

	cr_assert_eq(wl(&r1, path, x), 0, "%s", r1.err);
	cr_assert_eq(wl(&r2, path, x), 0, "%s", r2.err);
	cr_assert_str_eq(r1.out, r2.out);
	all = px_json_parse(r1.out);
	pxrun_free(&r1);
	pxrun_free(&r2);
	one = wl_json(path, "finish-time");
	cr_assert(json_equal(result_of(all, "finish-time"),
			     result_of(one, "finish-time")),
		  "finish-time alone differs from finish-time among four");
	json_decref(all);
	json_decref(one);
	if (trace && stat(trace, &sb) == 0) {
		cr_assert_eq(shipped(&r1, x), 0, "%s", r1.err);
		cr_assert_eq(shipped(&r2, x), 0, "%s", r2.err);
		cr_assert_str_eq(r1.out, r2.out);
		pxrun_free(&r1);
		pxrun_free(&r2);
	}
	free(trace);
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

/* 9. --plot FILE.svg: an SVG of each job under each arbiter named, the
 * table still on stdout. */
Test(cli_workload, plot_svg)
{
	const char *out = in_tmp("out.svg");
	const char *x[] = {"--arbiter", "fifo,max-min", "--plot", out, NULL};
	const char *path = three_jobs("plot.json", json_pack(
		"{s:i}", "pool_ondemand_vcpus", 8));
	struct pxrun r;
	size_t len;
	char *svg;

	if (!have_gnuplot())
		cr_skip_test("gnuplot is not installed");
	cr_assert_eq(wl(&r, path, x), 0, "%s", r.err);
	cr_assert(strstr(r.out, "ARBITER"), "%s", r.out);
	cr_assert(strstr(r.out, "max-min"), "%s", r.out);
	pxrun_free(&r);
	svg = px_test_read_file(out, &len);
	cr_assert_not_null(svg, "no plot at %s", out);
	cr_assert_gt(len, 1000, "plot too small: %zu bytes", len);
	cr_assert(!strncmp(svg, "<svg", 4) || !strncmp(svg, "<?xml", 5),
		  "not an SVG: %.40s", svg);
	cr_assert(strstr(svg, "<svg"));
	cr_assert(strstr(svg, "</svg>"));
	cr_assert(strstr(svg, ">fifo<"), "no fifo in the legend");
	cr_assert(strstr(svg, ">max-min<"), "no max-min in the legend");
	cr_assert(strstr(svg, ">c<"), "job c not on the axis");
	free(svg);
}
