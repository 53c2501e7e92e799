/* test_ctl_market.c -- proteusctl market import/show, end to end. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pxrun.h"

static char *tmp, *db;

static void setup(void)
{
	tmp = px_tmpdir();
	cr_assert_not_null(tmp);
	cr_assert(asprintf(&db, "%s/t.db", tmp) > 0);
}

static void teardown(void)
{
	px_rmtree(tmp);
	free(tmp);
	free(db);
}

/* Run proteusctl with up to 8 extra args after "--db DB" is appended. */
static int ctl(struct pxrun *r, const char *a1, const char *a2,
	       const char *a3, const char *a4, const char *a5)
{
	const char *argv[12] = {"proteusctl"};
	int n = 1;
	const char *in[] = {a1, a2, a3, a4, a5};

	for (int i = 0; i < 5 && in[i]; i++)
		argv[n++] = in[i];
	argv[n++] = "--db";
	argv[n++] = db;
	argv[n] = NULL;
	cr_assert_eq(pxrun(r, 60, "proteusctl", argv), 0, "spawn failed");
	return r->status;
}

static char *fixture(const char *name)
{
	char rel[256];

	snprintf(rel, sizeof(rel), "tests/data/ctl/%s", name);
	return px_src_path(rel);
}

static json_t *show_json(const char *zone, const char *at)
{
	struct pxrun r;
	json_error_t je;
	json_t *j;

	cr_assert_eq(ctl(&r, "market", "--zone", zone, "--json",
			 at ? at : "--at=2016-03-01T03:30:00Z"), 0,
		     "show failed: %s", r.err);
	j = json_loads(r.out, 0, &je);
	cr_assert_not_null(j, "bad json: %s\n%s", je.text, r.out);
	pxrun_free(&r);
	return j;
}

static double num(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);
	cr_assert(json_is_number(v), "field %s not a number", k);
	return json_number_value(v);
}

TestSuite(ctl_market, .init = setup, .fini = teardown, .timeout = 60);

Test(ctl_market, import_and_show_time_weighted)
{
	char *small = fixture("small.json.gz"), *od = fixture("od.json");
	struct pxrun r;
	json_t *j, *m;

	cr_assert_eq(ctl(&r, "market", "import", small, NULL, NULL), 0,
		     "%s", r.err);
	cr_assert(strstr(r.out, "4 records, 4 new"), "%s", r.out);
	pxrun_free(&r);
	cr_assert_eq(ctl(&r, "market", "import", "--ondemand", od, NULL), 0,
		     "%s", r.err);
	pxrun_free(&r);

	j = show_json("us-east-1a", NULL);
	cr_assert_eq(json_array_size(j), 1);
	m = json_array_get(j, 0);
	cr_assert_str_eq(json_string_value(json_object_get(m, "region")),
			 "us-east-1");
	cr_assert_str_eq(json_string_value(json_object_get(m, "type")),
			 "m3.medium");
	/* 0.01 for 1 h, 0.02 for 2 h, 0.10 for 1 h, then 0.01 (last) */
	cr_assert_float_eq(num(m, "price_usd"), 0.10, 1e-9);
	cr_assert_str_eq(json_string_value(json_object_get(m, "price_since")),
			 "2016-03-01T03:00:00Z");
	cr_assert_float_eq(num(m, "min_usd"), 0.01, 1e-9);
	cr_assert_float_eq(num(m, "median_usd"), 0.02, 1e-9);
	cr_assert_float_eq(num(m, "max_usd"), 0.10, 1e-9);
	cr_assert_float_eq(num(m, "ondemand_usd"), 0.067, 1e-9);
	cr_assert_float_eq(num(m, "above_ondemand_share"), 0.25, 1e-9);
	cr_assert_eq(num(m, "records"), 4);
	json_decref(j);

	/* before the first record there is no price in force */
	j = show_json("us-east-1a", "--at=2016-02-29T00:00:00Z");
	cr_assert(json_is_null(json_object_get(json_array_get(j, 0),
					       "price_usd")));
	json_decref(j);
	free(small);
	free(od);
}

Test(ctl_market, newest_first_and_twice_stores_once)
{
	char *nf = fixture("newest-first.json");
	struct pxrun r;
	json_t *j;

	cr_assert_eq(ctl(&r, "market", "import", nf, NULL, NULL), 0, "%s",
		     r.err);
	pxrun_free(&r);
	cr_assert_eq(ctl(&r, "market", "import", nf, NULL, NULL), 0, "%s",
		     r.err);
	cr_assert(strstr(r.out, "2 records, 0 new"), "%s", r.out);
	pxrun_free(&r);
	j = show_json("us-east-1b", "--at=2016-03-01T01:00:00Z");
	cr_assert_eq(num(json_array_get(j, 0), "records"), 2);
	cr_assert_float_eq(num(json_array_get(j, 0), "price_usd"), 0.012,
			   1e-9);
	cr_assert(json_is_null(json_object_get(json_array_get(j, 0),
					       "ondemand_usd")));
	json_decref(j);
	free(nf);
}

Test(ctl_market, bad_record_names_it_and_imports_nothing)
{
	char *small = fixture("small.json"), *bad = fixture("bad-price.json");
	struct pxrun r;
	json_t *j;

	cr_assert_eq(ctl(&r, "market", "import", small, NULL, NULL), 0);
	pxrun_free(&r);
	/* small.json again plus a bad file: all or nothing */
	cr_assert_eq(ctl(&r, "market", "import", bad, NULL, NULL), 3,
		     "status %d: %s", r.status, r.err);
	cr_assert(strstr(r.err, "bad-price.json"), "%s", r.err);
	cr_assert(strstr(r.err, "record 2"), "%s", r.err);
	cr_assert(strstr(r.err, "SpotPrice"), "%s", r.err);
	pxrun_free(&r);
	/* us-east-1c got nothing, us-east-1a still has its 4 records */
	cr_assert_eq(ctl(&r, "market", "--zone", "us-east-1c", NULL, NULL),
		     4);
	pxrun_free(&r);
	j = show_json("us-east-1a", NULL);
	cr_assert_eq(num(json_array_get(j, 0), "records"), 4);
	json_decref(j);
	free(small);
	free(bad);
}

Test(ctl_market, truncated_gzip_is_an_error)
{
	char *tr = fixture("truncated.json.gz");
	struct pxrun r;

	cr_assert_eq(ctl(&r, "market", "import", tr, NULL, NULL), 3,
		     "status %d: %s", r.status, r.err);
	cr_assert(strstr(r.err, "truncated.json.gz"), "%s", r.err);
	cr_assert(strstr(r.err, "nothing was imported"), "%s", r.err);
	pxrun_free(&r);
	free(tr);
}

Test(ctl_market, missing_file_and_usage)
{
	struct pxrun r;

	cr_assert_eq(ctl(&r, "market", "import", "/nonexistent/x.json", NULL,
			 NULL), 3);
	cr_assert(strstr(r.err, "/nonexistent/x.json"), "%s", r.err);
	pxrun_free(&r);
	cr_assert_eq(ctl(&r, "market", "import", NULL, NULL, NULL), 2);
	pxrun_free(&r);
	cr_assert_eq(ctl(&r, "market", "--at", "yesterday", NULL, NULL), 2);
	cr_assert(strstr(r.err, "--at"), "%s", r.err);
	pxrun_free(&r);
	cr_assert_eq(ctl(&r, "market", "--bogus", NULL, NULL, NULL), 2);
	pxrun_free(&r);
	cr_assert_eq(ctl(&r, "frobnicate", NULL, NULL, NULL, NULL), 2);
	pxrun_free(&r);
	cr_assert_eq(ctl(&r, "market", "--help", NULL, NULL, NULL), 0);
	cr_assert(strstr(r.out, "usage: proteusctl market"), "%s", r.out);
	pxrun_free(&r);
	cr_assert_eq(ctl(&r, "market", "import", "--help", NULL, NULL), 0);
	pxrun_free(&r);
}

Test(ctl_market, shipped_trace_imports)
{
	char *tr = px_shared_path("traces/us-east-1_2021-03_2021-05_linux.json.gz");
	struct pxrun r;

	if (access(tr, R_OK))
		cr_skip("shared traces not present");
	cr_assert_eq(ctl(&r, "market", "import", tr, NULL, NULL), 0, "%s",
		     r.err);
	cr_assert(strstr(r.out, "30310 records, 30310 new"), "%s", r.out);
	pxrun_free(&r);
	cr_assert_eq(ctl(&r, "market", "--type", "c4.xlarge", NULL, NULL), 0);
	cr_assert(strstr(r.out, "us-east-1f"), "%s", r.out);
	pxrun_free(&r);
	free(tr);
}
