/* test_jobs_model.c -- `proteusctl model ID -o FILE` against a real
 * proteusd: a finished local-world job's last checkpoint, exported, is a
 * model `proteus-trainer predict` applies with the job's own accuracy;
 * an unknown job and a job with no checkpoint exit 4 and say which; a
 * directory or a FIFO as FILE is refused (exit 2) before the daemon is
 * asked; an mf job (docs/jobspec.md) runs and its model is the mf
 * export. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "jobs_fixture.h"
#include "pxrun.h"

TestSuite(jobs_model, .init = jobs_fixture_setup,
	  .fini = jobs_fixture_teardown, .timeout = 240);

Test(jobs_model, a_finished_jobs_model_predicts_with_its_accuracy)
{
	char ids[24], out[600], dir[600], fifo[600], ck[700], want[64];
	char nodir[700];
	const char *pr[] = { "proteus-trainer", "predict", out,
			     "/usr/share/datasets/fashion-mnist/"
			     "t10k-images-idx3-ubyte.gz", "--json", NULL };
	struct pxrun r;
	struct stat st;
	json_t *s, *p;
	int64_t id;

	snprintf(out, sizeof out, "%s/job.safetensors", jt.tmp);
	snprintf(dir, sizeof dir, "%s/adir", jt.tmp);
	snprintf(fifo, sizeof fifo, "%s/fifo", jt.tmp);
	daemon_up();
	/* no such job */
	cr_assert_eq(ctl(&r, 10, "model", "999", "-o", out), 4, "%s", r.err);
	cr_assert(strstr(r.err, "no job 999"), "%s", r.err);
	pxrun_free(&r);
	write_job(4, NULL);
	id = submit();
	snprintf(ids, sizeof ids, "%lld", (long long)id);
	s = wait_end(id, 180);
	cr_assert_str_eq(state_of(s), "done");
	cr_assert_eq(ctl(&r, 20, "model", ids, "-o", out), 0, "%s", r.err);
	cr_assert(strstr(r.out, "written to") && strstr(r.out, "mlr"), "%s",
		  r.out);
	/* the job's total clocks are status's, not the checkpoint's (its
	 * shape's, at the fleet the job started with) */
	snprintf(want, sizeof want, " of %lld written to",
		 (long long)json_integer_value(json_object_get(s,
							"clocks_total")));
	cr_assert(strstr(r.out, want), "'%s' in '%s' (status %s)", want,
		  r.out, json_dumps(s, 0));
	cr_assert_geq(json_integer_value(json_object_get(s, "clocks_total")),
		      json_integer_value(json_object_get(s, "clock")));
	pxrun_free(&r);
	/* a folder it cannot write in: the write fails (1), not usage */
	snprintf(nodir, sizeof nodir, "%s/no/such/folder/m.safetensors",
		 jt.tmp);
	cr_assert_eq(ctl(&r, 20, "model", ids, "-o", nodir), 1, "%s", r.err);
	cr_assert(strstr(r.err, "cannot create a file in its folder"), "%s",
		  r.err);
	pxrun_free(&r);
	cr_assert_eq(stat(out, &st), 0);
	cr_assert(S_ISREG(st.st_mode));
	/* the model the job trained: its accuracy on the same test set (the
	 * job's is a float32 of the PROGRESS frame; a row is 1e-4) */
	cr_assert_eq(pxrun(&r, 60, "proteus-trainer", pr), 0);
	cr_assert_eq(r.status, 0, "%s", r.err);
	p = json_loads(r.out, 0, NULL);
	cr_assert_not_null(p, "%s", r.out);
	cr_assert_float_eq(json_number_value(json_object_get(p, "accuracy")),
			   json_number_value(json_object_get(s,
							     "test_accuracy")),
			   1e-6, "predict %.300s, the job %s", r.out,
			   json_dumps(s, 0));
	json_decref(p);
	json_decref(s);
	pxrun_free(&r);
	/* a directory, a FIFO: refused, nothing asked */
	cr_assert_eq(mkdir(dir, 0700), 0);
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	cr_assert_eq(ctl(&r, 10, "model", ids, "-o", dir), 2, "%s", r.err);
	cr_assert(strstr(r.err, "a directory"), "%s", r.err);
	pxrun_free(&r);
	cr_assert_eq(ctl(&r, 10, "model", ids, "-o", fifo), 2, "%s", r.err);
	cr_assert(strstr(r.err, "a FIFO"), "%s", r.err);
	pxrun_free(&r);
	/* its checkpoint gone (as before the first): exit 4, said so */
	snprintf(ck, sizeof ck, "%s.jobs/%s/model.pxc", jt.db, ids);
	cr_assert_eq(unlink(ck), 0, "%s", ck);
	cr_assert_eq(ctl(&r, 10, "model", ids, "-o", out), 4, "%s", r.err);
	cr_assert(strstr(r.err, "no checkpoint yet"), "%s", r.err);
	pxrun_free(&r);
	/* in the daemon's next life the job is the store's: cancel says it
	 * ended (3, as in the life it ended in), not "no job" (4) */
	cr_assert_eq(ctl(&r, 10, "cancel", ids, NULL, NULL), 3, "%s", r.err);
	pxrun_free(&r);
	stop_daemon(SIGTERM);
	start_daemon();
	cr_assert_eq(ctl(&r, 10, "cancel", ids, NULL, NULL), 3, "%s", r.err);
	cr_assert(strstr(r.err, "already ended (done)"), "%s", r.err);
	pxrun_free(&r);
	cr_assert_eq(ctl(&r, 10, "cancel", "999", NULL, NULL), 4, "%s",
		     r.err);
	pxrun_free(&r);
}

/* A matrix factorization job (trainer.model "mf", trainer.rank, ratings
 * in trainer.data) runs to its end in the local world; its model, taken
 * with `proteusctl model`, is the mf export (user_factors, ...), and
 * `predict` of it gives the test RMSE the job reported (its last
 * PROGRESS's test loss, a float32).  Bad ratings are refused at submit
 * naming file:line, and a field mf does not take at parse. */
Test(jobs_model, an_mf_job_runs_and_its_model_predicts)
{
	char ids[24], out[600], te[600], tr[600], want[800];
	char *gen = px_src_path("tests/data/mf/mf_synth.py");
	const char *mk[] = { "python3", gen, tr, te, "--users", "200",
			     "--items", "150", "--rank", "3", "--train",
			     "6000", "--test", "1000", "--sigma", "0.5",
			     NULL };
	const char *pr[] = { "proteus-trainer", "predict", out, te, "--json",
			     NULL };
	static const char job[] =
		"{\"trainer\": {\"model\": \"mf\", \"rank\": 3, \"epochs\": 4,"
		" \"batch\": 64, \"lr\": 0.04, \"data\": {\"train\": "
		"\"train.csv\", \"test\": \"%s\"}}}";
	char extra[400];
	struct pxrun r;
	json_t *s, *p;
	int64_t id;
	FILE *f;

	snprintf(tr, sizeof tr, "%s/train.csv", jt.tmp);
	snprintf(te, sizeof te, "%s/test.csv", jt.tmp);
	snprintf(out, sizeof out, "%s/mf.safetensors", jt.tmp);
	cr_assert_eq(pxrun(&r, 60, "/usr/bin/python3", mk), 0);
	cr_assert_eq(r.status, 0, "%s", r.err);
	pxrun_free(&r);
	free(gen);
	daemon_up();
	/* bad ratings: refused at submit, nothing started */
	snprintf(want, sizeof want, "%s/bad.csv", jt.tmp);
	f = fopen(want, "w");
	cr_assert_not_null(f);
	fputs("user,item,rating\n1,2,3\n4,x,5\n", f);
	fclose(f);
	snprintf(extra, sizeof extra, job, "bad.csv");
	write_job(1, extra);
	cr_assert_eq(ctl(&r, 20, "submit", jt.job, NULL, NULL), 3, "%s",
		     r.err);
	cr_assert(strstr(r.err, "trainer.data: ") &&
		  strstr(r.err, "bad.csv:3: field 2 (item)"), "%s", r.err);
	pxrun_free(&r);
	/* a field mf does not take */
	write_job(1, "{\"trainer\": {\"model\": \"mf\", \"target_accuracy\": "
		  "0.5, \"data\": {\"train\": \"train.csv\", \"test\": "
		  "\"test.csv\"}}}");
	cr_assert_eq(ctl(&r, 20, "submit", jt.job, NULL, NULL), 3, "%s",
		     r.err);
	cr_assert(strstr(r.err, "trainer.target_accuracy: model \"mf\" has "
			 "no accuracy"), "%s", r.err);
	pxrun_free(&r);

	snprintf(extra, sizeof extra, job, "test.csv");
	write_job(1, extra);
	id = submit();
	snprintf(ids, sizeof ids, "%lld", (long long)id);
	s = wait_end(id, 180);
	cr_assert_str_eq(state_of(s), "done", "%s",
			 json_string_value(json_object_get(s, "error")));
	cr_assert(json_is_number(json_object_get(s, "test_loss")), "%s",
		  json_dumps(s, 0));
	/* its text status and report say its RMSE, not "not evaluated" */
	cr_assert_eq(ctl(&r, 20, "status", ids, NULL, NULL), 0, "%s", r.err);
	cr_assert(!strstr(r.out, "not evaluated") &&
		  strstr(r.out, "test RMSE "), "%s", r.out);
	pxrun_free(&r);
	cr_assert_eq(ctl(&r, 20, "report", ids, NULL, NULL), 0, "%s", r.err);
	cr_assert(strstr(r.out, "\nrmse      "), "%s", r.out);
	pxrun_free(&r);
	cr_assert_eq(ctl(&r, 20, "report", ids, "--json", NULL), 0, "%s",
		     r.err);
	p = json_loads(r.out, 0, NULL);
	cr_assert_not_null(p, "%s", r.out);
	/* the progress event's, to its 4 decimals */
	cr_assert_float_eq(json_number_value(json_object_get(p, "test_rmse")),
			   json_number_value(json_object_get(s, "test_loss")),
			   1e-4, "%s", r.out);
	json_decref(p);
	pxrun_free(&r);
	cr_assert_eq(ctl(&r, 20, "model", ids, "-o", out), 0, "%s", r.err);
	cr_assert(strstr(r.out, "written to") && strstr(r.out, "mf") &&
		  strstr(r.out, "rank 3"), "%s", r.out);
	pxrun_free(&r);
	cr_assert_eq(pxrun(&r, 60, "proteus-trainer", pr), 0);
	cr_assert_eq(r.status, 0, "%s", r.err);
	p = json_loads(r.out, 0, NULL);
	cr_assert_not_null(p, "%s", r.out);
	cr_assert_eq(json_integer_value(json_object_get(p, "rows")), 1000);
	cr_assert_str_eq(json_string_value(json_object_get(p, "kind")), "mf");
	cr_assert_float_eq(json_number_value(json_object_get(p, "rmse")),
			   json_number_value(json_object_get(s, "test_loss")),
			   1e-6, "predict %g, the job %g",
			   json_number_value(json_object_get(p, "rmse")),
			   json_number_value(json_object_get(s, "test_loss")));
	json_decref(p);
	json_decref(s);
	pxrun_free(&r);
	cr_assert_eq(processes_after(2000), 0, "trainer processes left");
}

/* An mf job whose matrices are over the bound that holds (2^28 floats,
 * MF_MAX_PARAMS; docs/trainer.md) is refused at submit naming it, before
 * anything is charged; one whose ids need more shards than the four
 * proteusd asks for is not refused (the coordinator cuts more:
 * trainer_mf_cli/shards_follow_the_model). */
Test(jobs_model, an_mf_job_over_the_parameter_bound_is_refused_at_submit)
{
	static const char job[] =
		"{\"trainer\": {\"model\": \"mf\", %s\"epochs\": 1, \"batch\": "
		"64, \"data\": {\"train\": \"big.csv\", \"test\": "
		"\"big.csv\"}}}";
	char path[600], extra[400];
	struct pxrun r;
	FILE *f;

	snprintf(path, sizeof path, "%s/big.csv", jt.tmp);
	f = fopen(path, "w");
	cr_assert_not_null(f);
	/* ids at the documented bound, 10^7 */
	fputs("user,item,rating\n10000000,10000000,3\n1,2,4\n", f);
	fclose(f);
	daemon_up();
	/* the default rank, 16: (10^7 + 1) * 2 rows of 17 floats */
	snprintf(extra, sizeof extra, job, "");
	write_job(1, extra);
	cr_assert_eq(ctl(&r, 20, "submit", jt.job, NULL, NULL), 3, "%s",
		     r.err);
	cr_assert(strstr(r.err, "trainer.data: ") &&
		  strstr(r.err, "big.csv: 10000001 users and 10000001 items "
			 "of rank 16 are 340000034 parameters, over "
			 "268435456"), "%s", r.err);
	pxrun_free(&r);
	snprintf(extra, sizeof extra, job, "\"rank\": 1000, ");
	write_job(1, extra);
	cr_assert_eq(ctl(&r, 20, "submit", jt.job, NULL, NULL), 3, "%s",
		     r.err);
	cr_assert(strstr(r.err, "of rank 1000 are "), "%s", r.err);
	pxrun_free(&r);
	/* nothing was stored, nothing charged */
	cr_assert_neq(ctl(&r, 10, "status", "1", NULL, NULL), 0, "%s", r.out);
	cr_assert(strstr(r.err, "no job 1"), "%s", r.err);
	pxrun_free(&r);
}

/* An mf job at the documented id bound (user id 10^7, rank 8: 90M
 * parameters, more shards than the four proteusd asks for) runs to its
 * end: the setup of so large a model (its first clock: 360 MB to the PS
 * and back for the first checkpoint; 10-20 s on a loaded 2-core host or
 * under ASan) is not taken for a stall by a short watchdog (stall_seconds
 * 10, half a market hour in 1.5 s at speedup 1200); it failed "stalled"
 * at clock 0 before.  Not 2 s: the later clocks' shard moves (stage 2)
 * and checkpoints of 360 MB take more than that under load, and the
 * watchdog rightly stops a job slower than its operator allows. */
Test(jobs_model, an_mf_job_at_the_id_bound_runs_to_its_end)
{
	static const char job[] =
		"{\"spot\": {\"types\": [\"m3.large\"], \"zones\": "
		"[\"us-east-1a\"], \"max_instances\": 1}, \"instances\": 1, "
		"\"world\": {\"name\": \"local\", \"start\": "
		"\"2016-03-02T00:00:00Z\", \"speedup\": 1200}, "
		"\"trainer\": {\"model\": \"mf\", \"rank\": 8, \"epochs\": 1, "
		"\"batch\": 64, \"lr\": 0.04, \"data\": {\"train\": "
		"\"big.csv\", \"test\": \"big.csv\"}}}";
	char path[600];
	json_t *st;
	int64_t id;
	FILE *f;

	snprintf(path, sizeof path, "%s/big.csv", jt.tmp);
	f = fopen(path, "w");
	cr_assert_not_null(f);
	fputs("user,item,rating\n10000000,7,3\n", f);
	for (int i = 1; i < 2000; i++)
		fprintf(f, "%d,%d,%d\n", i * 4999 % 10000000, i % 50,
			1 + i % 5);
	fclose(f);
	daemon_up_with("stall_seconds 10\n");
	write_job(1, job);
	id = submit();
	st = wait_end(id, 240);
	cr_assert_str_eq(state_of(st), "done", "%s",
			 json_string_value(json_object_get(st, "error")));
	cr_assert(json_is_number(json_object_get(st, "test_loss")),
		  "no test RMSE");
	check_books(id, st);
	/* once for each start of the coordinator (a loaded machine's
	 * stall watchdog may have restarted it: stall_seconds 10) */
	cr_assert_eq(trainer_log_count(id, "shards, not the 4 asked"),
		     1 + json_integer_value(json_object_get(st, "restarts")),
		     "%s", json_dumps(st, 0));
	json_decref(st);
	cr_assert_eq(processes_after(3000), 0, "trainer processes left");
}
