/* test_advisor.c -- the Spot Instance Advisor's buckets as hazards: the
 * shipped snapshots, the choice of one by date, bad files, and the two
 * fitted numbers of the interruption model (the instance life and the
 * share of a pool one capacity event takes) recomputed from the measured
 * availability traces they were fitted to, with the model's error per
 * trace kept within what docs/simulate.md reports. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../bidbrain/jobspec.h"
#include "../../cloudapi/advisor.h"
#include "../integration/pxrun.h"

static struct advisor load_shipped(const char *snap)
{
	char rel[128];
	char *p;
	struct advisor a;
	struct px_error e = {0};

	snprintf(rel, sizeof rel, "etc/spot-advisor/linux_%s.json", snap);
	p = px_src_path(rel);
	cr_assert_eq(advisor_load(p, "us-east-1", &a, &e), PX_OK, "%s", e.msg);
	free(p);
	return a;
}

Test(advisor, shipped_snapshots)
{
	struct advisor a = load_shipped("2021-02");
	const struct advisor_entry *c4 = advisor_find(&a, "c4.xlarge");
	const struct advisor_entry *p3 = advisor_find(&a, "p3.2xlarge");
	const struct advisor_entry *g4 = advisor_find(&a, "g4dn.xlarge");

	cr_assert_eq(a.n_buckets, 5);
	cr_assert_not_null(c4);
	cr_assert_not_null(p3);
	cr_assert_not_null(g4);
	cr_assert_eq(c4->bucket, 0);
	cr_assert_eq(g4->bucket, 1);
	cr_assert_eq(p3->bucket, 4);
	cr_assert_float_eq(advisor_share(&a, 0), 0.025, 1e-12);
	cr_assert_float_eq(advisor_share(&a, 1), 0.08, 1e-12);
	cr_assert_float_eq(advisor_share(&a, 3), 0.19, 1e-12);
	cr_assert_float_eq(advisor_share(&a, 4), ADVISOR_TOP_SHARE, 1e-12);
	/* -ln(1 - f) / life: c4.xlarge about one interruption in 49 h */
	cr_assert_float_eq(advisor_hazard(&a, 0),
			   -log(0.975) / ADVISOR_LIFE_H, 1e-12);
	cr_assert_float_eq(advisor_hazard(&a, 0), 0.0206, 0.0001);
	cr_assert_float_eq(advisor_hazard(&a, 4), 0.2901, 0.0001);
	cr_assert_eq(advisor_hazard(&a, 5), 0);
	cr_assert_eq(advisor_hazard(&a, -1), 0);
	cr_assert_null(advisor_find(&a, "x9.nothing"));
	for (int b = 1; b < a.n_buckets; b++)
		cr_assert_gt(advisor_hazard(&a, b), advisor_hazard(&a, b - 1));
	advisor_release(&a);
	/* buckets drift between snapshots */
	a = load_shipped("2025-06");
	cr_assert_eq(advisor_find(&a, "m5.xlarge")->bucket, 4);
	cr_assert_null(advisor_find(&a, "g2.2xlarge"));
	advisor_release(&a);
	a = load_shipped("2021-02");
	cr_assert_eq(advisor_find(&a, "m5.xlarge")->bucket, 0);
	advisor_release(&a);
}

/* The shipped files are the Linux entries of AWS's file, unchanged: the
 * original in ../shared parses to the same buckets. */
Test(advisor, shipped_subset_equals_the_original)
{
	static const char *const regions[] = {"us-east-1", "us-west-2",
					       "eu-west-1"};
	char *orig = px_shared_path("traces/current-era/"
				    "spot-advisor-2021-02.json");
	FILE *f = fopen(orig, "r");

	if (!f)
		cr_skip_test("no %s", orig);
	fclose(f);
	for (size_t r = 0; r < 3; r++) {
		struct advisor a, b;
		struct px_error e = {0};
		char *p = px_src_path("etc/spot-advisor/linux_2021-02.json");

		cr_assert_eq(advisor_load(p, regions[r], &a, &e), PX_OK, "%s",
			     e.msg);
		cr_assert_eq(advisor_load(orig, regions[r], &b, &e), PX_OK,
			     "%s", e.msg);
		cr_assert_eq(a.n, b.n);
		for (size_t i = 0; i < a.n; i++) {
			cr_assert_str_eq(a.v[i].type, b.v[i].type);
			cr_assert_eq(a.v[i].bucket, b.v[i].bucket);
		}
		advisor_release(&a);
		advisor_release(&b);
		free(p);
	}
	free(orig);
}

Test(advisor, pick_by_date)
{
	char *dir = px_src_path("etc/spot-advisor"), buf[4096];
	struct px_error e = {0};
	int64_t t;

	cr_assert_eq(px_parse_time("2021-03-16", 10, &t), PX_OK);
	cr_assert_eq(advisor_pick(dir, t, buf, sizeof buf, &e), PX_OK, "%s",
		     e.msg);
	cr_assert(strstr(buf, "/linux_2021-02.json"), "%s", buf);
	/* before every snapshot: the earliest */
	cr_assert_eq(px_parse_time("2016-03-01", 10, &t), PX_OK);
	cr_assert_eq(advisor_pick(dir, t, buf, sizeof buf, &e), PX_OK);
	cr_assert(strstr(buf, "/linux_2021-02.json"), "%s", buf);
	/* the month of a snapshot counts as after it */
	cr_assert_eq(px_parse_time("2025-06-01", 10, &t), PX_OK);
	cr_assert_eq(advisor_pick(dir, t, buf, sizeof buf, &e), PX_OK);
	cr_assert(strstr(buf, "/linux_2025-06.json"), "%s", buf);
	cr_assert_eq(px_parse_time("2025-05-31", 10, &t), PX_OK);
	cr_assert_eq(advisor_pick(dir, t, buf, sizeof buf, &e), PX_OK);
	cr_assert(strstr(buf, "/linux_2021-02.json"), "%s", buf);
	cr_assert_neq(advisor_pick("/nonexistent/x", t, buf, sizeof buf, &e),
		      PX_OK);
	cr_assert(strstr(e.msg, "/nonexistent/x"), "%s", e.msg);
	free(dir);
}

Test(advisor, bad_files_name_the_field)
{
	static const struct {
		const char *json, *needle;
	} bad[] = {
		{ "{", "x.json:" },
		{ "[1]", "x.json: not a JSON object" },
		{ "{\"spot_advisor\": {}}", "ranges" },
		{ "{\"ranges\": [{\"index\": 0, \"max\": 5}, {\"index\": 1, "
		  "\"max\": 4}], \"spot_advisor\": {}}", "ranges[1].max" },
		{ "{\"ranges\": [{\"index\": 1, \"max\": 5}]}", "ranges[0].index" },
		{ "{\"ranges\": [{\"index\": 0, \"max\": 100}], \"spot_advisor\": "
		  "{\"eu-west-1\": {}}}", "spot_advisor.us-east-1.Linux" },
		{ "{\"ranges\": [{\"index\": 0, \"max\": 100}], \"spot_advisor\": "
		  "{\"us-east-1\": {\"Linux\": {\"c4.large\": {\"r\": 1}}}}}",
		  "spot_advisor.us-east-1.Linux.c4.large.r" },
		{ "{\"ranges\": [{\"index\": 0, \"max\": 100}], \"spot_advisor\": "
		  "{\"us-east-1\": {\"Linux\": {\"c4.large\": {\"r\": 0, "
		  "\"s\": 300}}}}}", "spot_advisor.us-east-1.Linux.c4.large.s" },
		{ "{\"ranges\": [{\"index\": 0, \"max\": 100}], \"spot_advisor\": "
		  "{\"us-east-1\": {\"Linux\": {\"c4.large\": 3}}}}",
		  "spot_advisor.us-east-1.Linux.c4.large: an object" },
		{ "{\"ranges\": [{\"index\": 0, \"max\": 100}], \"spot_advisor\": "
		  "{\"us-east-1\": {\"Linux\": {\"a\\u001bb\": {\"r\": 0}}}}}",
		  "control" },
	};

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct advisor a;
		struct px_error e = {0};

		cr_assert_neq(advisor_parse(bad[i].json, strlen(bad[i].json),
					    "x.json", "us-east-1", &a, &e),
			      PX_OK, "%s", bad[i].json);
		cr_assert(strstr(e.msg, bad[i].needle), "%s: %s", bad[i].json,
			  e.msg);
	}
}

/* ---- the measured traces ---- */

#define GROUP_MAX 512

/* One trace: instance-hours, interruptions, and the groups they came in
 * (interruptions within 60 s of a group's first; with the running count
 * when the group began). */
struct meas {
	const char *type;
	double ih, drops;
	int gk[GROUP_MAX], gn[GROUP_MAX];
	size_t ng;
};

static FILE *open_trace(const char *file)
{
	char rel[256], *p;
	FILE *f;

	snprintf(rel, sizeof rel, "traces/current-era/%s", file);
	p = px_shared_path(rel);
	f = fopen(p, "r");
	free(p);
	if (!f)
		cr_skip_test("no %s (../shared/traces/current-era)", file);
	return f;
}

static void add_group(struct meas *m, int k, int n)
{
	cr_assert_lt(m->ng, GROUP_MAX);
	m->gk[m->ng] = k;
	m->gn[m->ng] = n;
	m->ng++;
}

/* A series "time,count" (time in seconds * unit): a step down is a group
 * of interruptions. */
static void series(struct meas *m, const char *file, double unit)
{
	FILE *f = open_trace(file);
	char line[128];
	double t0 = 0, n0 = -1;

	while (fgets(line, sizeof line, f)) {
		double t, n;

		cr_assert_eq(sscanf(line, "%lf,%lf", &t, &n), 2, "%s", line);
		t *= unit;
		if (n0 >= 0) {
			m->ih += n0 * (t - t0) / 3600;
			if (n < n0) {
				m->drops += n0 - n;
				add_group(m, (int)(n0 - n), (int)n0);
			}
		}
		t0 = t;
		n0 = n;
	}
	fclose(f);
}

/* An event trace "ms,add|remove,node". */
static void events(struct meas *m, const char *file)
{
	FILE *f = open_trace(file);
	char line[128], kind[16];
	double last = -1, live = 0, g0 = -1e18;
	int gk = 0, gn = 0;

	while (fgets(line, sizeof line, f)) {
		double ms;

		cr_assert_eq(sscanf(line, "%lf,%15[a-z],", &ms, kind), 2, "%s",
			     line);
		if (last >= 0)
			m->ih += live * (ms - last) / 3.6e6;
		last = ms;
		if (!strcmp(kind, "add")) {
			live++;
			continue;
		}
		m->drops += 1;
		if (ms - g0 <= 60000) {
			gk++;
		} else {
			if (gk)
				add_group(m, gk, gn);
			g0 = ms;
			gk = 1;
			gn = (int)live;
		}
		live--;
	}
	if (gk)
		add_group(m, gk, gn);
	fclose(f);
}

static void measured(struct meas *m)
{
	memset(m, 0, 6 * sizeof *m);
	m[0].type = m[1].type = m[5].type = "g4dn.xlarge";
	m[2].type = m[3].type = "p2.xlarge";
	m[4].type = "p3.2xlarge";
	series(&m[0], "bamboo_aws-spot-instances-g4dn-xlarge-us-east-1c-"
	       "2020-11-20-1930-to-2020-11-21-2200.csv", 1);
	series(&m[1], "bamboo_aws-spot-instances-g4dn-xlarge-us-east-1d-"
	       "2020-11-23-1730-to-2020-11-24-1530.csv", 1);
	series(&m[2], "bamboo_aws-spot-instances-p2-xlarge-us-east-1e-"
	       "2020-11-23-1700-to-2020-11-24-0700.csv", 1);
	series(&m[3], "bamboo_aws-spot-instances-p2-xlarge-2020-11-20-to-"
	       "2020-11-23.csv", 3600);
	events(&m[4], "bamboo_p3-trace.csv");
	events(&m[5], "bamboo_g4dn-trace.csv");
}

/* ADVISOR_LIFE_H is the life that makes the model predict the measured
 * count over all six traces with the 2021-02 buckets; per trace the model
 * is off by the factors docs/simulate.md lists (0.05x to 24x: the bucket
 * says little about one type at one time), and that stays so. */
Test(advisor, life_fitted_to_the_measured_traces)
{
	struct advisor a = load_shipped("2021-02");
	struct meas m[6];
	double ih = 0, drops = 0, unit_h = 0;
	/* measured / predicted per trace, as docs/simulate.md lists them */
	static const double ratio[6] = {6.28, 23.89, 0.05, 0.45, 2.11, 8.04};

	measured(m);
	for (int i = 0; i < 6; i++) {
		int b = advisor_find(&a, m[i].type)->bucket;

		ih += m[i].ih;
		drops += m[i].drops;
		/* the hazard at a life of one hour */
		unit_h += m[i].ih * advisor_hazard(&a, b) * ADVISOR_LIFE_H;
	}
	cr_assert_float_eq(drops, 558, 0.5, "the traces changed? %f", drops);
	cr_assert_float_eq(ih, 2204.5, 0.1, "%f", ih);
	cr_assert_float_eq(unit_h / drops, ADVISOR_LIFE_H, 0.0005,
			   "fitted life %.4f h", unit_h / drops);
	for (int i = 0; i < 6; i++) {
		double pred = m[i].ih * advisor_hazard(&a, advisor_find(
			&a, m[i].type)->bucket);

		cr_assert_float_eq(m[i].drops / pred, ratio[i], 0.01,
				   "trace %d (%s): measured %.0f, model %.1f",
				   i, m[i].type, m[i].drops, pred);
	}
	advisor_release(&a);
}

/* The share one event takes: the maximum-likelihood q over the measured
 * groups, each k of n running taken with chance q given at least one
 * (a binomial truncated at 0), is JOBSPEC_POOL_SHARE. */
Test(advisor, pool_share_fitted_to_the_measured_groups)
{
	struct meas m[6];
	double best = -INFINITY, q_best = 0;
	size_t groups = 0;

	measured(m);
	for (int qi = 1; qi < 1000; qi++) {
		double q = qi / 1000.0, ll = 0;

		for (int i = 0; i < 6; i++)
			for (size_t g = 0; g < m[i].ng; g++) {
				int k = m[i].gk[g], n = m[i].gn[g];

				if (n <= 0 || k > n)
					continue;
				ll += k * log(q) + (n - k) * log(1 - q) -
				      log(1 - pow(1 - q, n));
			}
		if (ll > best) {
			best = ll;
			q_best = q;
		}
	}
	for (int i = 0; i < 6; i++)
		groups += m[i].ng;
	cr_assert_gt(groups, 250, "%zu groups", groups);
	cr_assert_float_eq(q_best, JOBSPEC_POOL_SHARE, 0.0005, "q %.3f",
			   q_best);
	/* interruptions are correlated: fewer groups than interruptions */
	cr_assert_lt((double)groups, 0.6 * 558);
}
