/* test_jobs_books.c -- what proteusd shows of a job comes from the whole
 * job, not from the daemon's current life: cost, evictions, joins,
 * losses, accuracy, policy and the on-demand comparison across SIGTERM
 * and SIGKILL restarts, and for jobs that ended in an earlier life (read
 * from the store alone), a failed job's reason among them.  Money in
 * JSON prints as its micro-dollar decimal.  A real daemon and trainer, as
 * in test_jobs.c (jobs_fixture.c). */
#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <spawn.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../common/px.h"
#include "jobs_fixture.h"
#include "pxrun.h"

extern char **environ;

TestSuite(jobs_books, .init = jobs_fixture_setup,
	  .fini = jobs_fixture_teardown, .timeout = 300);


static int64_t ledger_uusd(int64_t id)
{
	char q[160];

	snprintf(q, sizeof q, "SELECT coalesce(sum(amount_uusd), 0) FROM "
		 "ledger WHERE job_id = %lld", (long long)id);
	return sql_int(q);
}

static int64_t events_of(int64_t id, const char *kind)
{
	char q[200];

	snprintf(q, sizeof q, "SELECT count(*) FROM events WHERE job_id = "
		 "%lld AND kind = '%s'", (long long)id, kind);
	return sql_int(q);
}

static double num(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);

	cr_assert(json_is_number(v), "'%s' is not a number", k);
	return json_number_value(v);
}

static int64_t integer(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);

	cr_assert(json_is_integer(v), "'%s' is not an integer", k);
	return json_integer_value(v);
}

/* Every dollar figure ("..._usd": X) in JSON text out has at most 6
 * decimals: micro-dollars, not 0.50609999999999999. */
static void money_is_exact(const char *out)
{
	int n = 0;

	for (const char *p = out; (p = strstr(p, "_usd\":")); p++) {
		const char *q = p + 6, *dot;
		size_t dec = 0;

		while (*q == ' ')
			q++;
		if (!strncmp(q, "null", 4))
			continue;
		dot = q + strspn(q, "-0123456789");
		if (*dot == '.')
			dec = strspn(dot + 1, "0123456789");
		cr_assert_leq(dec, 6, "a dollar figure with %zu decimals: "
			      "%.40s", dec, q);
		n++;
	}
	cr_assert_gt(n, 0, "no dollar figure in %s", out);
}

/* status ID --json, its text checked for money first. */
static json_t *status_checked(int64_t id)
{
	return status_with(id, money_is_exact);
}

/* Wait for the job to have cost something and trained a clock. */
static json_t *wait_spent(int64_t id)
{
	for (int i = 0; i < 600; i++) {
		json_t *o = status(id);

		cr_assert(!strcmp(state_of(o), "running") ||
			  !strcmp(state_of(o), "queued"),
			  "the job ended early: %s", state_of(o));
		if (num(o, "cost_usd") > 0 && integer(o, "clock") > 0)
			return o;
		json_decref(o);
		sleep_ms(50);
	}
	cr_assert_fail("no cost or clock in 30 s");
	return NULL;
}

/* The job's last progress event, as JSON. */
static json_t *last_progress(int64_t id)
{
	char q[200], *t;
	json_t *o;

	snprintf(q, sizeof q, "SELECT detail FROM events WHERE job_id = %lld "
		 "AND kind = 'progress' ORDER BY at_us DESC, id DESC LIMIT 1",
		 (long long)id);
	t = sql_text(q);
	o = json_loads(t, 0, NULL);
	free(t);
	cr_assert_not_null(o, "no progress event of job %lld", (long long)id);
	return o;
}

/* Right after a restart: the cost is at least the ledger's (the closed
 * bills of every life, read before), the evictions those stored; joins,
 * losses, work and the on-demand figure at least what the killed daemon
 * last stored. */
static void check_resumed(int64_t id, const char *how)
{
	int64_t ledger = ledger_uusd(id), ev0 = events_of(id, "eviction");
	json_t *was = last_progress(id);
	json_t *st = status_checked(id);
	int64_t ev1 = events_of(id, "eviction");

	cr_assert_gt(ledger, 0, "%s: nothing in the ledger", how);
	cr_assert_geq(num(st, "cost_usd") + 1e-9, (double)ledger / 1e6,
		      "%s: status says $%.6f, the ledger already holds $%.6f",
		      how, num(st, "cost_usd"), (double)ledger / 1e6);
	cr_assert(integer(st, "evictions") >= ev0 &&
		  integer(st, "evictions") <= ev1, "%s: %lld evictions, the "
		  "store has %lld", how, (long long)integer(st, "evictions"),
		  (long long)ev1);
	cr_assert_geq(integer(st, "joins"), integer(was, "joins"), "%s", how);
	cr_assert_geq(integer(st, "losses"), integer(was, "losses"), "%s",
		      how);
	cr_assert_geq(num(st, "work_done") + 1e-4, num(was, "work_done"),
		      "%s: work %.4f, was %.4f", how, num(st, "work_done"),
		      num(was, "work_done"));
	cr_assert_geq(num(st, "fleet_ondemand_usd") + 1e-6,
		      num(was, "fleet_ondemand_usd"), "%s", how);
	if (json_is_number(json_object_get(st, "projected_cost_usd")))
		cr_assert_geq(num(st, "projected_cost_usd") + 1e-6,
			      num(st, "cost_usd"), "%s", how);
	json_decref(st);
	json_decref(was);
}

/* The figures of an ended job, as a status (JSON) gives them, against the
 * store. */
static void check_ended(int64_t id, json_t *st, const char *how)
{
	cr_assert_str_eq(state_of(st), "done", "%s: %s", how,
			 json_string_value(json_object_get(st, "error")));
	cr_assert_gt(num(st, "cost_usd"), 0, "%s", how);
	cr_assert_float_eq(num(st, "cost_usd"), ledger_uusd(id) / 1e6, 1e-9,
			   "%s", how);
	cr_assert_eq(integer(st, "evictions"), events_of(id, "eviction"),
		     "%s", how);
	cr_assert_str_eq(json_string_value(json_object_get(st, "policy")),
			 "bidbrain", "%s", how);
	cr_assert_str_eq(json_string_value(json_object_get(st, "billing")),
			 "legacy-hourly", "%s", how);
	cr_assert_gt(num(st, "test_accuracy"), 0.5, "%s", how);
	cr_assert_gt(num(st, "test_loss"), 0, "%s", how);
	cr_assert_gt(num(st, "ondemand_cost_usd"), 0, "%s", how);
	cr_assert_gt(num(st, "fleet_ondemand_usd"), 0, "%s", how);
	cr_assert_float_eq(num(st, "projected_cost_usd"), num(st, "cost_usd"),
			   1e-9, "%s", how);
	cr_assert_float_eq(num(st, "work_done"), 1.0, 1e-9, "%s", how);
}

/* The job's row of `jobs --json`. */
static json_t *jobs_row(int64_t id)
{
	struct pxrun r;
	json_error_t je;
	json_t *o, *x, *row = NULL;
	size_t i;

	cr_assert_eq(ctl(&r, 10, "jobs", "--json", NULL, NULL), 0, "%s",
		     r.err);
	money_is_exact(r.out);
	o = json_loads(r.out, 0, &je);
	cr_assert_not_null(o, "%s: %s", je.text, r.out);
	pxrun_free(&r);
	json_array_foreach(json_object_get(o, "jobs"), i, x)
		if (json_integer_value(json_object_get(x, "job")) == id)
			row = json_incref(x);
	json_decref(o);
	cr_assert_not_null(row, "job %lld not listed", (long long)id);
	return row;
}

/* The same job, SIGTERM then SIGKILL of the daemon mid-run: after each
 * restart what status shows is the whole job's (the cost at least the
 * ledger, the evictions stored, ...); once done, the cost is the ledger's
 * sum and every figure is there; a daemon started after the end shows the
 * same figures from the store alone, in status and in jobs. */
Test(jobs_books, the_whole_job_across_restarts)
{
	json_t *was, *end, *st, *row;
	struct pxrun r;
	char ids[24];
	int64_t id;

	daemon_up();
	/* both kills come at a life's first charge and clock: the first
	 * at clock 0 of a 120-epoch job, measured; half that only has to
	 * end after them */
	write_job(60, NULL);
	id = submit();
	snprintf(ids, sizeof ids, "%lld", (long long)id);
	was = wait_spent(id);
	stop_daemon(SIGTERM);
	cr_assert_eq(processes_after(3000), 0, "nodes outlived the daemon");
	start_daemon();
	check_resumed(id, "after SIGTERM");
	json_decref(was);
	was = wait_spent(id);
	/* on until this life has launched and charged on its own */
	for (int i = 0; i < 600; i++) {
		json_decref(was);
		was = status(id);
		if (num(was, "cost_usd") > ledger_uusd(id) / 1e6 &&
		    integer(was, "clock") > 0)
			break;
		sleep_ms(50);
	}
	stop_daemon(SIGKILL);
	cr_assert_eq(processes_after(3000), 0, "nodes outlived the daemon");
	start_daemon();
	check_resumed(id, "after SIGKILL");
	json_decref(was);
	end = wait_end(id, 240);
	json_decref(end);
	end = status_checked(id);
	check_ended(id, end, "ended, this daemon");
	check_books(id, end);
	/* its last progress event (written as it ended) has the whole
	 * job's cost too */
	{
		json_t *p = last_progress(id);

		cr_assert_float_eq(num(p, "cost_usd"), ledger_uusd(id) / 1e6,
				   1e-6, "the last progress event says $%.6f",
				   num(p, "cost_usd"));
		json_decref(p);
	}
	/* a new daemon: the job from the store alone */
	stop_daemon(SIGTERM);
	start_daemon();
	st = status_checked(id);
	check_ended(id, st, "ended in an earlier life");
	cr_assert_float_eq(num(st, "test_accuracy"), num(end, "test_accuracy"),
			   1e-4);
	cr_assert_float_eq(num(st, "ondemand_cost_usd"),
			   num(end, "ondemand_cost_usd"),
			   1e-3 * num(end, "ondemand_cost_usd"));
	cr_assert_float_eq(num(st, "fleet_ondemand_usd"),
			   num(end, "fleet_ondemand_usd"), 1e-5);
	cr_assert_eq(integer(st, "joins"), integer(end, "joins"));
	cr_assert_eq(integer(st, "losses"), integer(end, "losses"));
	cr_assert_eq(integer(st, "clocks_total"), integer(end,
							  "clocks_total"));
	cr_assert_geq(integer(st, "restarts"), 2);
	cr_assert(!json_object_get(st, "error"));
	/* jobs: every column from the whole job */
	row = jobs_row(id);
	cr_assert_float_eq(num(row, "cost_usd"), ledger_uusd(id) / 1e6, 1e-9);
	cr_assert_float_eq(num(row, "test_accuracy"), num(end,
							  "test_accuracy"),
			   1e-4);
	cr_assert_float_eq(num(row, "work_done"), 1.0, 1e-9);
	json_decref(row);
	/* the text views */
	cr_assert_eq(ctl(&r, 10, "status", ids, NULL, NULL), 0, "%s", r.err);
	{
		char want[64];

		snprintf(want, sizeof want, "cost     $%.4f\n",
			 ledger_uusd(id) / 1e6);
		cr_assert(strstr(r.out, want), "no '%s' in %s", want, r.out);
	}
	cr_assert(strstr(r.out, "policy bidbrain)"), "%s", r.out);
	cr_assert(!strstr(r.out, "not evaluated"), "%s", r.out);
	cr_assert(!strstr(r.out, "ondemand $0.0000"), "%s", r.out);
	pxrun_free(&r);
	cr_assert_eq(ctl(&r, 10, "jobs", NULL, NULL, NULL), 0, "%s", r.err);
	{
		char want[64];

		snprintf(want, sizeof want, "%.4f", ledger_uusd(id) / 1e6);
		cr_assert(strstr(r.out, want), "no %s in %s", want, r.out);
	}
	cr_assert(strstr(r.out, "%"), "no accuracy: %s", r.out);
	pxrun_free(&r);
	json_decref(end);
	json_decref(st);
}

/* A job that fails at its start (a data_dir without Fashion-MNIST: its
 * coordinator exits 3): status --json has the reason in "error" and the
 * text view an "error" line, from this daemon and from the next, which
 * reads it from the store; a reason with control characters (as the
 * store may hold) is shown escaped. */
Test(jobs_books, a_failed_jobs_reason_in_every_life)
{
	/* the coordinator or the nodes fail first, each on the missing
	 * files: whichever reason the job got, every life shows it */
	char want[48];
	struct pxrun r;
	char *empty, ids[24], q[256];
	json_t *st;
	int64_t id;

	empty = daemon_without_data();
	write_job(1, NULL);
	id = submit();
	snprintf(ids, sizeof ids, "%lld", (long long)id);
	st = wait_end(id, 60);
	cr_assert_str_eq(state_of(st), "failed");
	{
		const char *e = json_string_value(json_object_get(st,
								  "error"));

		cr_assert(e && (strstr(e, "coordinator refused its input "
				       "(exit 3)") ||
				strstr(e, "nodes cannot start")), "%s",
			  e ? e : "-");
		snprintf(want, sizeof want, "%s", e);
	}
	json_decref(st);
	for (int life = 0; life < 2; life++) {
		cr_assert_eq(ctl(&r, 10, "status", ids, NULL, NULL), 0, "%s",
			     r.err);
		cr_assert(strstr(r.out, "\nerror    ") && strstr(r.out, want),
			  "life %d: %s", life, r.out);
		pxrun_free(&r);
		if (life)
			break;
		stop_daemon(SIGTERM);
		start_daemon();
		st = status_checked(id);
		cr_assert_str_eq(state_of(st), "failed");
		cr_assert(json_is_string(json_object_get(st, "error")),
			  "no error from the store");
		cr_assert(strstr(json_string_value(json_object_get(st,
				 "error")), want), "%s",
			  json_string_value(json_object_get(st, "error")));
		cr_assert_str_eq(json_string_value(json_object_get(st,
				 "policy")), "bidbrain");
		json_decref(st);
	}
	/* what the store holds is shown escaped */
	stop_daemon(SIGTERM);
	{
		sqlite3 *db;

		cr_assert_eq(sqlite3_open(jt.db, &db), SQLITE_OK);
		snprintf(q, sizeof q, "UPDATE events SET detail = 'bad' || "
			 "char(27) || '[2J' || char(10) || 'end' WHERE job_id "
			 "= %lld AND kind = 'error'", (long long)id);
		cr_assert_eq(sqlite3_exec(db, q, NULL, NULL, NULL), SQLITE_OK,
			     "%s", sqlite3_errmsg(db));
		sqlite3_close(db);
	}
	start_daemon();
	cr_assert_eq(ctl(&r, 10, "status", ids, NULL, NULL), 0, "%s", r.err);
	cr_assert(strstr(r.out, "error    bad\\x1b[2J\\nend\n"), "%s", r.out);
	pxrun_free(&r);
	free(empty);
}

/* --watch and --interval are a job's: without an id, a usage error that
 * says so (not "unknown option"). */
Test(jobs_books, status_watch_needs_a_job_id)
{
	static const char *const opts[] = { "--watch", "--interval=2",
					    "--interval" };
	struct pxrun r;

	for (size_t i = 0; i < sizeof opts / sizeof opts[0]; i++) {
		const char *argv[] = { "proteusctl", "--socket",
				       "/nonexistent/p.sock", "status",
				       opts[i], i == 2 ? "2" : NULL, NULL };

		cr_assert_eq(pxrun(&r, 10, "proteusctl", argv), 0);
		cr_assert_eq(r.status, 2, "%s: exit %d: %s", opts[i], r.status,
			     r.err);
		cr_assert(strstr(r.err, "needs a job id"), "%s: %s", opts[i],
			  r.err);
		cr_assert(!strstr(r.err, "unknown"), "%s", r.err);
		pxrun_free(&r);
	}
}

/* Two jobs running when the daemon is killed, one slot after the restart:
 * the job left queued shows its figures so far (the ledger's cost, the
 * accuracy, work and joins of its last progress event), not a fresh
 * job's zeros. */
Test(jobs_books, a_resumed_job_still_queued_shows_its_books)
{
	int64_t ids[2], queued = 0;
	json_t *st, *p;
	FILE *f;

	f = fopen(jt.conf, "w");
	cr_assert_not_null(f);
	fprintf(f, "db %s\ncontrol_socket %s\nmax_jobs 2\n%s", jt.db, jt.sock,
		data_dir_line());
	fclose(f);
	start_daemon();
	write_job(400, NULL);
	ids[0] = submit();
	ids[1] = submit();
	for (int k = 0; k < 2; k++) {
		for (int i = 0; i < 600; i++) {
			st = status(ids[k]);
			cr_assert_str_eq(state_of(st), "running");
			if (json_is_number(json_object_get(st,
							   "test_accuracy")) &&
			    num(st, "cost_usd") > 0)
				break;
			json_decref(st);
			st = NULL;
			sleep_ms(50);
		}
		cr_assert_not_null(st, "job %lld: no accuracy in 30 s",
				   (long long)ids[k]);
		json_decref(st);
	}
	/* a progress event of each with an accuracy */
	for (int k = 0; k < 2; k++) {
		bool tested = false;

		for (int i = 0; i < 600 && !tested; i++) {
			p = last_progress(ids[k]);
			tested = json_is_number(json_object_get(p,
							"test_accuracy"));
			json_decref(p);
			if (!tested)
				sleep_ms(50);
		}
		cr_assert(tested, "job %lld: no tested progress event",
			  (long long)ids[k]);
	}
	stop_daemon(SIGKILL);
	cr_assert_eq(processes_after(3000), 0, "nodes outlived the daemon");
	f = fopen(jt.conf, "w");
	cr_assert_not_null(f);
	fprintf(f, "db %s\ncontrol_socket %s\nmax_jobs 1\n%s", jt.db, jt.sock,
		data_dir_line());
	fclose(f);
	start_daemon();
	for (int k = 0; k < 2 && !queued; k++) {
		st = status(ids[k]);
		if (!strcmp(state_of(st), "queued"))
			queued = ids[k];
		json_decref(st);
	}
	cr_assert_gt(queued, 0, "neither job waits");
	p = last_progress(queued);
	st = status_checked(queued);
	cr_assert_str_eq(state_of(st), "queued");
	cr_assert_float_eq(num(st, "cost_usd"), ledger_uusd(queued) / 1e6,
			   1e-9);
	cr_assert_gt(num(st, "cost_usd"), 0);
	cr_assert_float_eq(num(st, "test_accuracy"), num(p, "test_accuracy"),
			   1e-9);
	cr_assert_float_eq(num(st, "test_loss"), num(p, "test_loss"), 1e-9);
	cr_assert_float_eq(num(st, "work_done"), num(p, "work_done"), 1e-9);
	cr_assert_gt(num(st, "work_done"), 0);
	cr_assert_eq(integer(st, "joins"), integer(p, "joins"));
	cr_assert_eq(integer(st, "losses"), integer(p, "losses"));
	cr_assert_eq(integer(st, "clock"), integer(p, "clock"));
	/* its total is the earlier life's (the trainer's, for its fleet),
	 * not a guess: "clock X of Y" as before the restart */
	cr_assert_gt(integer(p, "clocks_total"), 0);
	cr_assert_eq(integer(st, "clocks_total"), integer(p, "clocks_total"),
		     "%lld of %lld after the restart, %lld before",
		     (long long)integer(st, "clock"),
		     (long long)integer(st, "clocks_total"),
		     (long long)integer(p, "clocks_total"));
	cr_assert_eq(integer(st, "evictions"), events_of(queued, "eviction"));
	cr_assert_float_eq(num(st, "fleet_ondemand_usd"),
			   num(p, "fleet_ondemand_usd"), 1e-6);
	json_decref(st);
	json_decref(p);
}

/* A `simulate --db` run in the daemon's database: its status names the
 * policy it ran (from its parameters, not the spec's default) and its
 * cost is its ledger's sum, as in `jobs`. */
Test(jobs_books, a_simulated_run_read_by_the_daemon)
{
	char *trace = px_src_path(
		"docs/examples/traces/us-east-1_2016-03-01_7d_linux.json.gz");
	char *od = px_src_path("etc/ondemand/us-east-1_2016-02_2016-04.json");
	char *job = px_src_path("docs/examples/job-2016-7d-m3large.json");
	const char *argv[] = {"proteusctl", "simulate", "--trace", trace,
			      "--ondemand-prices", od, "--job", job,
			      "--policy", "ondemand", "--db", jt.db, NULL};
	struct pxrun r;
	json_t *st, *row;

	cr_assert_eq(pxrun(&r, 60, "proteusctl", argv), 0);
	cr_assert_eq(r.status, 0, "%s", r.err);
	pxrun_free(&r);
	daemon_up();
	st = status_checked(1);
	cr_assert_str_eq(json_string_value(json_object_get(st, "world")),
			 "sim");
	cr_assert_str_eq(json_string_value(json_object_get(st, "policy")),
			 "ondemand");
	cr_assert_gt(num(st, "cost_usd"), 0);
	cr_assert_float_eq(num(st, "cost_usd"), ledger_uusd(1) / 1e6, 1e-9);
	json_decref(st);
	row = jobs_row(1);
	cr_assert_float_eq(num(row, "cost_usd"), ledger_uusd(1) / 1e6, 1e-9);
	json_decref(row);
	free(trace);
	free(od);
	free(job);
}
