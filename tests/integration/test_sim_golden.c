/* test_sim_golden.c -- `proteusctl simulate` keeps its results bit for bit
 * (issue 10: the controller is pulled out of agent/world/sim.c; nothing it
 * decides may change).  tests/data/golden/simulate/cases.tsv lists the
 * shipped examples and the benchmark windows; for each, NAME.json is the
 * exact `--json` text and NAME.sha the SHA-256 of each store table the run
 * writes with `--db` (integer micro-dollars and microseconds, so these pin
 * every charge and every instant, which the rounded JSON does not).
 *
 * With PX_GOLDEN_RECORD=1 the same code writes the files instead of
 * comparing: re-record only for a change meant to alter results. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pxrun.h"

#define GOLDEN "tests/data/golden/simulate/"

/* What each table must keep, in a stable order.  Wall-clock columns
 * (jobs.created_us/updated_us) are left out: they are when the test ran. */
static const struct {
	const char *table;
	const char *sql;
} tables[] = {
	{"jobs", "SELECT id, name, state, spec FROM jobs ORDER BY id"},
	{"allocations",
	 "SELECT a.id, a.job_id, m.zone, m.type, m.product, a.tier, "
	 "a.bid_uusd, a.count, a.at_us FROM allocations a JOIN markets m "
	 "ON m.id = a.market_id ORDER BY a.id"},
	{"instances", "SELECT id, alloc_id, cloud_id, start_us, end_us, "
		      "end_reason FROM instances ORDER BY id"},
	{"events", "SELECT id, job_id, instance_id, at_us, kind, detail "
		   "FROM events ORDER BY id"},
	/* the money, without the instance ids a journal may add */
	{"ledger", "SELECT job_id, from_us, to_us, amount_uusd, note "
		   "FROM ledger ORDER BY id"},
};

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

/* A path from the manifest: "shared:REL" under $PX_SHARED, else REL under
 * the source tree. */
static char *resolve(const char *p)
{
	return strncmp(p, "shared:", 7) ? px_src_path(p)
					: px_shared_path(p + 7);
}

static void spill(const char *path, const char *text)
{
	FILE *f = fopen(path, "wb");

	cr_assert_not_null(f, "cannot write %s", path);
	cr_assert_eq(fputs(text, f) >= 0 && fclose(f) == 0, 1);
}

/* v with every occurrence of the run's roots (the temp folder, the source
 * tree, shared/) replaced by a placeholder: event details name the files a
 * run read, and those paths differ between runs and checkouts. */
static char *unroot(const char *v)
{
	char *roots[3] = {tmp, px_src_path(""), px_shared_path("")};
	const char *names[3] = {"$TMP/", "$SRC/", "$SHARED/"};
	char *out = strdup(v);

	/* longest root first: one may lie inside another (shared/ given as
	 * SRC/../shared) */
	for (int i = 0; i < 3; i++)
		for (int k = i + 1; k < 3; k++)
			if (strlen(roots[k]) > strlen(roots[i])) {
				char *r = roots[i];
				const char *nm = names[i];

				roots[i] = roots[k], roots[k] = r;
				names[i] = names[k], names[k] = nm;
			}
	for (int i = 0; i < 3; i++) {
		char *root = roots[i], *hit;
		char pat[4096];

		snprintf(pat, sizeof pat, "%s%s", root,
			 root[strlen(root) - 1] == '/' ? "" : "/");
		while ((hit = strstr(out, pat))) {
			char *n;

			*hit = 0;
			cr_assert(asprintf(&n, "%s%s%s", out, names[i],
					   hit + strlen(pat)) > 0);
			free(out);
			out = n;
		}
		if (root != tmp)
			free(root);
	}
	return out;
}

/* "table sha256hex\n" for every table, into out (freed by the caller).
 * Each row is hashed as its columns' text (NULL as \N) joined by \t. */
static char *table_digests(const char *db)
{
	sqlite3 *h;
	char *out = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&out, &len);

	cr_assert_eq(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL),
		     SQLITE_OK);
	for (size_t t = 0; t < sizeof tables / sizeof tables[0]; t++) {
		sqlite3_stmt *st;
		EVP_MD_CTX *md = EVP_MD_CTX_new();
		unsigned char dig[EVP_MAX_MD_SIZE];
		unsigned int dl = 0;
		long rows = 0;
		int rc;

		cr_assert_eq(sqlite3_prepare_v2(h, tables[t].sql, -1, &st,
						NULL), SQLITE_OK, "%s",
			     sqlite3_errmsg(h));
		EVP_DigestInit_ex(md, EVP_sha256(), NULL);
		while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
			int nc = sqlite3_column_count(st);

			for (int c = 0; c < nc; c++) {
				const unsigned char *v =
					sqlite3_column_text(st, c);

				if (c)
					EVP_DigestUpdate(md, "\t", 1);
				if (v) {
					char *u = unroot((const char *)v);

					EVP_DigestUpdate(md, u, strlen(u));
					free(u);
				} else
					EVP_DigestUpdate(md, "\\N", 2);
			}
			EVP_DigestUpdate(md, "\n", 1);
			rows++;
		}
		cr_assert_eq(rc, SQLITE_DONE, "%s", sqlite3_errmsg(h));
		sqlite3_finalize(st);
		EVP_DigestFinal_ex(md, dig, &dl);
		EVP_MD_CTX_free(md);
		fprintf(m, "%s %ld ", tables[t].table, rows);
		for (unsigned int i = 0; i < dl; i++)
			fprintf(m, "%02x", dig[i]);
		fputc('\n', m);
	}
	sqlite3_close(h);
	fclose(m);
	return out;
}

/* The job with work_hours and spot.max_instances replaced where the
 * manifest says so (as the benchmark's jq does). */
static char *job_file(const char *name, const char *job, const char *wh,
		      const char *cap)
{
	char *src = resolve(job), *path;
	json_error_t je;
	json_t *j = json_load_file(src, 0, &je);

	cr_assert_not_null(j, "%s: %s", src, je.text);
	if (strcmp(wh, "-"))
		json_object_set_new(j, "work_hours",
				    json_integer(atoll(wh)));
	if (strcmp(cap, "-"))
		json_object_set_new(json_object_get(j, "spot"),
				    "max_instances", json_integer(atoll(cap)));
	cr_assert(asprintf(&path, "%s/%s.job.json", tmp, name) > 0);
	cr_assert_eq(json_dump_file(j, path, JSON_INDENT(1)), 0);
	json_decref(j);
	free(src);
	return path;
}

static void run_case(char **f)
{
	const char *name = f[0];
	char *trace = resolve(f[1]), *od = resolve(f[2]);
	char *job = job_file(name, f[3], f[7], f[8]);
	char *db, *rel, *want_json, *want_sha, *sha;
	const char *argv[] = {"proteusctl", "simulate", "--trace", trace,
			      "--ondemand-prices", od, "--job", job,
			      "--start", f[4], "--billing", f[5],
			      "--policy", f[6], "--json", "--db", NULL, NULL};
	struct pxrun r;
	bool record = getenv("PX_GOLDEN_RECORD") &&
		      !strcmp(getenv("PX_GOLDEN_RECORD"), "1");

	cr_assert(asprintf(&db, "%s/%s.db", tmp, name) > 0);
	argv[16] = db;
	cr_assert_eq(pxrun(&r, 100, "proteusctl", argv), 0);
	cr_assert_eq(r.status, 0, "%s: %s", name, r.err);
	sha = table_digests(db);

	cr_assert(asprintf(&rel, GOLDEN "%s.json", name) > 0);
	want_json = px_src_path(rel);
	free(rel);
	cr_assert(asprintf(&rel, GOLDEN "%s.sha", name) > 0);
	want_sha = px_src_path(rel);
	free(rel);
	if (record) {
		spill(want_json, r.out);
		spill(want_sha, sha);
	} else {
		char *wj = px_test_read_file(want_json, NULL);
		char *ws = px_test_read_file(want_sha, NULL);

		cr_assert_not_null(wj, "no golden %s (record it)", want_json);
		cr_assert_not_null(ws, "no golden %s (record it)", want_sha);
		cr_expect_str_eq(r.out, wj, "%s: simulate --json changed",
				 name);
		cr_expect_str_eq(sha, ws, "%s: store rows changed", name);
		free(wj);
		free(ws);
	}
	pxrun_free(&r);
	free(sha);
	free(want_json);
	free(want_sha);
	free(db);
	free(job);
	free(trace);
	free(od);
}

/* Every case of the manifest whose name starts with prefix; at least one. */
static void run_cases(const char *prefix)
{
	char *man = px_src_path(GOLDEN "cases.tsv");
	FILE *f = fopen(man, "r");
	char line[2048];
	int done = 0;

	cr_assert_not_null(f, "%s", man);
	while (fgets(line, sizeof line, f)) {
		char *fields[9], *save = NULL, *p = line;
		int n = 0;

		if (line[0] == '#' || line[0] == '\n')
			continue;
		line[strcspn(line, "\n")] = 0;
		while (n < 9 && (fields[n] = strtok_r(p, "\t", &save)))
			p = NULL, n++;
		cr_assert_eq(n, 9, "%s: a line of %d fields", man, n);
		if (strncmp(fields[0], prefix, strlen(prefix)))
			continue;
		run_case(fields);
		done++;
	}
	fclose(f);
	free(man);
	cr_assert_gt(done, 0, "no case starts with '%s'", prefix);
}

TestSuite(sim_golden, .init = setup, .fini = teardown, .timeout = 240);

Test(sim_golden, shipped_examples) { run_cases("ex-"); }
Test(sim_golden, bench_2015) { run_cases("bench-2015-"); }
Test(sim_golden, bench_2016) { run_cases("bench-2016-"); }
Test(sim_golden, bench_2021) { run_cases("bench-2021-"); }
