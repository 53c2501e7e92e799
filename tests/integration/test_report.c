/* test_report.c -- `proteusctl report ID` and `status ID --watch` on a
 * real daemon with a local-world job: the report's cost is the ledger's
 * sum and status's, its groups add up to it, --plot draws a PNG, bad
 * arguments are usage errors; a running job's report takes the cost
 * status gives; --watch into a pipe prints plain lines. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../common/px.h"
#include "jobs_fixture.h"
#include "pxrun.h"

TestSuite(report, .init = jobs_fixture_setup,
	  .fini = jobs_fixture_teardown, .timeout = 240);

static double num(json_t *o, const char *k)
{
	return json_number_value(json_object_get(o, k));
}

/* report ID --json, parsed. */
static json_t *report(int64_t id)
{
	char ids[24];
	struct pxrun r;
	json_error_t je;
	json_t *o;

	snprintf(ids, sizeof ids, "%lld", (long long)id);
	cr_assert_eq(ctl(&r, 30, "report", ids, "--json", NULL), 0, "%s",
		     r.err);
	o = json_loads(r.out, 0, &je);
	cr_assert_not_null(o, "%s: %s", je.text, r.out);
	pxrun_free(&r);
	return o;
}

/* The costs of a grouping add up to the whole. */
static void sums_to(json_t *g, double cost)
{
	const char *k;
	json_t *v;
	double s = 0;

	json_object_foreach(g, k, v)
		s += num(v, "cost_usd");
	cr_assert_float_eq(s, cost, 1e-6);
}

static bool have_gnuplot(void)
{
	return access("/usr/bin/gnuplot", X_OK) == 0 ||
	       access("/usr/local/bin/gnuplot", X_OK) == 0;
}

/* The report of done job id counts some hours of work. */
static void worked_some(int64_t id)
{
	json_t *o = report(id), *h = json_object_get(o, "hours");

	cr_assert_gt(num(h, "worked"), 0, "0 hours of work for a done job");
	cr_assert_leq(num(h, "worked"), num(h, "rented"));
	json_decref(o);
}

/* The daemon hears an instance is ready from the trainer's report that
 * names it first; a job whose work fits between two reports has its
 * ready events at the instant of done.  The report still counts the work
 * those instances did (since the last progress event before), not 0;
 * also where that event already had the final clock. */
static void ready_at_done(int64_t id)
{
	char q[512];

	snprintf(q, sizeof q, "UPDATE events SET at_us = (SELECT max(at_us) "
		 "FROM events WHERE job_id = %lld) WHERE job_id = %lld AND "
		 "kind = 'ready'", (long long)id, (long long)id);
	sql_exec(q);
	worked_some(id);
	/* and on a loaded host, the report before the last already had the
	 * final clock: the work was done between two reports before it */
	snprintf(q, sizeof q, "UPDATE events SET detail = json_set(detail, "
		 "'$.clock', (SELECT max(json_extract(detail, '$.clock')) FROM "
		 "events WHERE job_id = %lld AND kind = 'progress')) WHERE id = "
		 "(SELECT max(id) FROM events WHERE job_id = %lld AND kind = "
		 "'progress' AND at_us < (SELECT max(at_us) FROM events WHERE "
		 "job_id = %lld))", (long long)id, (long long)id,
		 (long long)id);
	sql_exec(q);
	worked_some(id);
	/* and a short job whose every report had the final clock (its
	 * first came after the work): since the launch */
	snprintf(q, sizeof q, "UPDATE events SET detail = json_set(detail, "
		 "'$.clock', (SELECT max(json_extract(detail, '$.clock')) FROM "
		 "events WHERE job_id = %lld AND kind = 'progress')) WHERE "
		 "job_id = %lld AND kind = 'progress'", (long long)id,
		 (long long)id);
	sql_exec(q);
	worked_some(id);
}

/* proteusctl with PATH set to path alone (the teardown needs ours) */
static int ctl_path(struct pxrun *r, const char *path, const char *a1,
		    const char *a2, const char *a3, const char *a4)
{
	char *old = strdup(getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
	int rc;

	cr_assert_not_null(old);
	cr_assert_eq(setenv("PATH", path, 1), 0);
	rc = ctl(r, 60, a1, a2, a3, a4);
	cr_assert_eq(setenv("PATH", old, 1), 0);
	free(old);
	return rc;
}

/* path's text (px_test_read_file, asserted). */
static char *text_of(const char *path)
{
	char *buf = px_test_read_file(path, NULL);

	cr_assert_not_null(buf, "cannot read %s", path);
	return buf;
}

/* --plot FILE: a temporary file renamed over FILE, as model -o writes
 * (a symlink there replaced, not written through); gnuplot missing from
 * PATH (proteusctl finds it with posix_spawnp) or failing: exit 1, the
 * file there kept.  A stand-in gnuplot prints the "plot". */
static void plot_failures(const char *ids)
{
	char *bin, *exe, *victim, *out, *got;
	struct pxrun r;
	struct stat sb;
	FILE *f;

	cr_assert(asprintf(&bin, "%s/bin", jt.tmp) > 0);
	cr_assert(asprintf(&exe, "%s/gnuplot", bin) > 0);
	cr_assert(asprintf(&victim, "%s/victim.txt", jt.tmp) > 0);
	cr_assert(asprintf(&out, "%s/plot.svg", jt.tmp) > 0);
	cr_assert_eq(mkdir(bin, 0700), 0);
	f = fopen(exe, "w");
	cr_assert_not_null(f);
	fputs("#!/bin/sh\necho drawn\n", f);
	fclose(f);
	cr_assert_eq(chmod(exe, 0700), 0);
	f = fopen(victim, "w");
	cr_assert_not_null(f);
	fputs("keep me\n", f);
	fclose(f);
	cr_assert_eq(symlink(victim, out), 0);
	cr_assert_eq(ctl_path(&r, bin, "report", ids, "--plot", out), 0,
		     "%s", r.err);
	pxrun_free(&r);
	got = text_of(victim);
	cr_assert_str_eq(got, "keep me\n", "written through the symlink");
	free(got);
	cr_assert_eq(lstat(out, &sb), 0);
	cr_assert(S_ISREG(sb.st_mode), "the symlink is not replaced");
	got = text_of(out);
	cr_assert_str_eq(got, "drawn\n");
	free(got);
	/* no gnuplot: 1 (not 4, "no such job"), the plot there kept */
	cr_assert_eq(ctl_path(&r, "/nonexistent", "report", ids, "--plot",
			      out), 1, "%s", r.err);
	cr_assert(strstr(r.err, "gnuplot not found"), "%s", r.err);
	pxrun_free(&r);
	/* gnuplot fails: 1, the plot there kept */
	f = fopen(exe, "w");
	cr_assert_not_null(f);
	fputs("#!/bin/sh\necho half; exit 1\n", f);
	fclose(f);
	cr_assert_eq(ctl_path(&r, bin, "report", ids, "--plot", out), 1,
		     "%s", r.err);
	pxrun_free(&r);
	got = text_of(out);
	cr_assert_str_eq(got, "drawn\n", "a failed plot took the old one");
	free(got);
	free(bin);
	free(exe);
	free(victim);
	free(out);
}

Test(report, cost_is_the_ledgers_and_status_and_the_plot_is_a_png)
{
	static const unsigned char sig[8] = { 0x89, 'P', 'N', 'G', '\r',
					      '\n', 0x1a, '\n' };
	char q[128], *png, ids[24];
	unsigned char head[8];
	struct pxrun r;
	struct stat sb;
	json_t *st, *o, *h;
	int64_t id, ledger;
	FILE *f;

	daemon_up();
	write_job(3, NULL);
	id = submit();
	st = wait_end(id, 120);
	cr_assert_str_eq(state_of(st), "done", "%s", daemon_said());
	o = report(id);
	snprintf(q, sizeof q, "SELECT sum(amount_uusd) FROM ledger WHERE "
		 "job_id = %lld", (long long)id);
	ledger = sql_int(q);
	cr_assert_gt(ledger, 0);
	cr_assert_float_eq(num(o, "cost_usd"), (double)ledger / 1e6, 1e-9);
	cr_assert_float_eq(num(o, "cost_usd"), num(st, "cost_usd"), 1e-9);
	cr_assert_str_eq(json_string_value(json_object_get(o, "cost_from")),
			 "ledger");
	cr_assert_float_eq(num(o, "unbilled_usd"), 0, 1e-12);
	cr_assert_float_eq(num(o, "other_usd"), 0, 1e-12);
	sums_to(json_object_get(o, "by_tier"), num(o, "cost_usd"));
	sums_to(json_object_get(o, "by_market"), num(o, "cost_usd"));
	sums_to(json_object_get(o, "by_type"), num(o, "cost_usd"));
	h = json_object_get(o, "hours");
	snprintf(q, sizeof q, "SELECT count(*) FROM instances i JOIN "
		 "allocations a ON a.id = i.alloc_id WHERE a.job_id = %lld",
		 (long long)id);
	cr_assert_eq(json_integer_value(json_object_get(h, "instances")),
		     sql_int(q));
	cr_assert_gt(num(h, "rented"), 0);
	cr_assert_gt(num(h, "worked"), 0);
	cr_assert_leq(num(h, "worked"), num(h, "rented"));
	cr_assert_eq(json_integer_value(json_object_get(json_object_get(o,
		"evictions"), "count")), json_integer_value(json_object_get(st,
		"evictions")));
	cr_assert_float_eq(num(json_object_get(o, "ondemand"), "fleet_usd"),
			   num(st, "fleet_ondemand_usd"), 1e-6);
	cr_assert_gt(json_integer_value(json_object_get(json_object_get(o,
		"decisions"), "acquire")), 0);
	json_decref(o);
	/* the text says the same cost */
	snprintf(ids, sizeof ids, "%lld", (long long)id);
	cr_assert_eq(ctl(&r, 30, "report", ids, NULL, NULL), 0, "%s", r.err);
	snprintf(q, sizeof q, "cost      $%.4f\n", num(st, "cost_usd"));
	cr_assert_not_null(strstr(r.out, q), "%s", r.out);
	cr_assert_not_null(strstr(r.out, "by tier"), "%s", r.out);
	pxrun_free(&r);
	json_decref(st);
	ready_at_done(id);
	plot_failures(ids);
	if (!have_gnuplot())
		cr_skip_test("gnuplot is not installed");
	cr_assert(asprintf(&png, "%s/report.png", jt.tmp) > 0);
	cr_assert_eq(ctl(&r, 60, "report", ids, "--plot", png), 0, "%s",
		     r.err);
	pxrun_free(&r);
	cr_assert_eq(stat(png, &sb), 0);
	cr_assert_gt(sb.st_size, 8);
	f = fopen(png, "rb");
	cr_assert_not_null(f);
	cr_assert_eq(fread(head, 1, 8, f), 8);
	fclose(f);
	cr_assert_arr_eq(head, sig, 8, "a PNG's signature");
	free(png);
}

Test(report, bad_arguments_are_usage_errors)
{
	struct pxrun r;

	daemon_up();
	cr_assert_eq(ctl(&r, 10, "report", NULL, NULL, NULL), 2);
	cr_assert_not_null(strstr(r.err, "no job id"), "%s", r.err);
	pxrun_free(&r);
	cr_assert_eq(ctl(&r, 10, "report", "x1", NULL, NULL), 2);
	pxrun_free(&r);
	cr_assert_eq(ctl(&r, 10, "report", "1", "--plot", "a.gif"), 2);
	cr_assert_not_null(strstr(r.err, ".png or .svg"), "%s", r.err);
	pxrun_free(&r);
	cr_assert_eq(ctl(&r, 10, "report", "99", NULL, NULL), 4, "%s", r.err);
	cr_assert_not_null(strstr(r.err, "no job 99"), "%s", r.err);
	pxrun_free(&r);
}

/* A running job's report costs what status says at that moment: between
 * the status just before it and the one just after.  An eviction between
 * them may make its instance's partial hour free (the cost goes down:
 * docs/jobs.md, cost_usd; docs/controller.md, ctrl_gone), so a pair with
 * an eviction between is taken again, up to 20 times (st: a running
 * status, kept). */
static void live_cost_is_status(int64_t id, json_t *st)
{
	json_t *before = json_incref(st), *after = NULL, *o = NULL;
	int tries = 0;

	for (;;) {
		o = report(id);
		after = status(id);
		cr_assert_str_eq(json_string_value(json_object_get(o,
				 "cost_from")), "status");
		cr_assert_geq(num(o, "cost_usd") + 1e-9, num(o, "billed_usd"));
		if (num(after, "evictions") == num(before, "evictions") &&
		    !strcmp(state_of(after), "running"))
			break;
		cr_assert_lt(++tries, 20, "an eviction between every pair");
		json_decref(o);
		json_decref(before);
		before = after;
	}
	cr_assert_geq(num(o, "cost_usd"), num(before, "cost_usd"));
	cr_assert_leq(num(o, "cost_usd"), num(after, "cost_usd"));
	json_decref(o);
	json_decref(before);
	json_decref(after);
}

Test(report, a_running_job_costs_what_status_says_and_watch_is_plain)
{
	char ids[24];
	struct pxrun r;
	json_t *st = NULL;
	int64_t id;
	int lines = 0;

	daemon_up();
	write_job(200, NULL);
	id = submit();
	snprintf(ids, sizeof ids, "%lld", (long long)id);
	for (int i = 0; i < 600; i++) {
		json_decref(st);
		st = status(id);
		if (!strcmp(state_of(st), "running") && num(st, "cost_usd") > 0)
			break;
		sleep_ms(100);
	}
	cr_assert_str_eq(state_of(st), "running", "%s", daemon_said());
	live_cost_is_status(id, st);
	json_decref(st);
	cr_assert_eq(ctl(&r, 30, "cancel", ids, NULL, NULL), 0, "%s", r.err);
	pxrun_free(&r);
	st = wait_end(id, 60);
	json_decref(st);
	/* into a pipe: plain lines, no terminal codes, the end last */
	cr_assert_eq(ctl(&r, 30, "status", ids, "--watch", NULL), 1,
		     "a cancelled job: %s", r.err);
	cr_assert_null(strchr(r.out, '\033'), "%s", r.out);
	for (const char *p = r.out; *p; p = strchr(p, '\n') + 1) {
		cr_assert_eq(strncmp(p, "job ", 4), 0, "%s", r.out);
		cr_assert_not_null(strchr(p, '\n'));
		lines++;
	}
	cr_assert_geq(lines, 1);
	cr_assert_not_null(strstr(r.out, " cancelled "), "%s", r.out);
	pxrun_free(&r);
}
