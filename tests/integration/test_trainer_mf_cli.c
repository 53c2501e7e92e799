/* test_trainer_mf_cli.c -- `proteus-trainer train --model mf` on a synthetic
 * low-rank set (tests/data/mf/mf_synth.py: noise sigma 0.5, the best
 * RMSE any model reaches) reaching a test RMSE within 1.2 sigma and far
 * under the mean's; bad ratings refused with exit 3 naming file:line;
 * what mf does not take refused with exit 2; checkpoints and resume (one
 * process and distributed, a coordinator crash and a worker SIGKILL
 * survived), eval, export and predict, the export read in Python. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pxrun.h"

#define SIGMA 0.5

static char *tmp;
static char tr[600], te[600];

static void setup(void)
{
	char *gen = px_src_path("tests/data/mf/mf_synth.py");
	const char *argv[] = { "python3", gen, tr, te, "--users", "400",
			       "--items", "300", "--rank", "4", "--train",
			       "60000", "--test", "5000", "--sigma", "0.5",
			       NULL };
	struct pxrun r;

	tmp = px_tmpdir();
	cr_assert_not_null(tmp);
	snprintf(tr, sizeof(tr), "%s/train.csv", tmp);
	snprintf(te, sizeof(te), "%s/test.csv", tmp);
	cr_assert_eq(pxrun(&r, 60, "/usr/bin/python3", argv), 0);
	cr_assert_eq(r.status, 0, "mf_synth.py: %s", r.err);
	pxrun_free(&r);
	free(gen);
}

static void teardown(void)
{
	px_rmtree(tmp);
	free(tmp);
}

TestSuite(trainer_mf_cli, .init = setup, .fini = teardown, .timeout = 120);

/* proteus-trainer with args (NULL-terminated, after the program). */
static void run(struct pxrun *r, const char *const *args)
{
	const char *argv[40] = { "proteus-trainer" };
	int n = 1;

	for (int i = 0; args[i]; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	cr_assert_eq(pxrun(r, 100, "proteus-trainer", argv), 0);
}

Test(trainer_mf_cli, train_reaches_the_noise_floor)
{
	const char *args[] = { "train", "--model", "mf", "--rank", "4",
			       "--train-data", tr, "--test-data", te,
			       "--epochs", "12", "--batch", "64", "--lr",
			       "0.02", "--weight-decay", "0.02", "--json",
			       NULL };
	struct pxrun r;
	json_t *j, *curve;
	double test, train, first;

	run(&r, args);
	cr_assert_eq(r.status, 0, "%s", r.err);
	j = json_loads(r.out, 0, NULL);
	cr_assert_not_null(j, "%s", r.out);
	test = json_real_value(json_object_get(j, "test_rmse"));
	train = json_real_value(json_object_get(j, "train_rmse"));
	cr_assert_str_eq(json_string_value(json_object_get(j, "model")),
			 "mf");
	cr_assert_eq(json_integer_value(json_object_get(j, "users")), 400);
	cr_assert_eq(json_integer_value(json_object_get(j, "params")),
		     (400 + 300) * 5);
	cr_assert_eq(json_integer_value(json_object_get(j, "epochs")), 12);
	curve = json_object_get(j, "curve");
	cr_assert_eq(json_array_size(curve), 12);
	first = json_real_value(json_object_get(json_array_get(curve, 0),
						"test_rmse"));
	/* the floor is sigma; the mean alone is sqrt(1 + sigma^2) = 1.12 */
	cr_assert(test < 1.2 * SIGMA, "test RMSE %g, floor %g", test, SIGMA);
	cr_assert(test > 0.9 * SIGMA, "test RMSE %g under the floor %g",
		  test, SIGMA);
	cr_assert(train < test + 0.1, "train %g test %g", train, test);
	cr_assert(first > test, "no progress: %g then %g", first, test);
	json_decref(j);
	pxrun_free(&r);
}

/* tmp/name holding text; the path, static. */
static const char *tmp_file(const char *name, const char *text)
{
	static char p[600];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", tmp, name);
	f = fopen(p, "w");
	cr_assert_not_null(f);
	fputs(text, f);
	fclose(f);
	return p;
}

Test(trainer_mf_cli, text_output_and_unseen_users)
{
	const char *args[] = { "train", "--model", "mf", "--rank", "2",
			       "--train-data", tr, "--test-data", NULL,
			       "--epochs", "1", NULL };
	struct pxrun r;

	/* user 999999 and item 5000: neither in training */
	args[8] = tmp_file("odd.csv", "1,1,3\n999999,1,3\n1,5000,3\n");
	run(&r, args);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_not_null(strstr(r.out, "epoch 1: train RMSE"), "%s", r.out);
	cr_assert_not_null(strstr(r.out, "(2 of 3 test ratings of a user or "
				  "item unseen"), "%s", r.out);
	pxrun_free(&r);
}

Test(trainer_mf_cli, bad_ratings_exit_3_naming_the_line)
{
	const char *args[] = { "train", "--model", "mf", "--train-data", tr,
			       "--test-data", NULL, NULL };
	struct pxrun r;

	args[6] = tmp_file("bad.csv", "user,item,rating\n1,2,3\n1,two,3\n");
	run(&r, args);
	cr_assert_eq(r.status, 3, "%d: %s", r.status, r.err);
	cr_assert_not_null(strstr(r.err, "bad.csv:3: field 2 (item)"), "%s",
			   r.err);
	pxrun_free(&r);
}

Test(trainer_mf_cli, refuses_what_mf_does_not_take)
{
	const char *cuda[] = { "train", "--model", "mf", "--device", "cuda",
			       "--train-data", tr, "--test-data", te, NULL };
	const char *nodata[] = { "train", "--model", "mf", NULL };
	const char *local[] = { "local", "--model", "mf", "--train-data", tr,
				"--test-data", te, "--momentum", "0.5",
				NULL };
	const char *rank[] = { "train", "--model", "mlr", "--rank", "4", NULL };
	const char *const *cases[] = { cuda, nodata, local, rank };
	const char *want[] = { "does not take --device cuda",
			       "needs --train-data",
			       "does not take --momentum in a distributed",
			       "--rank is for --model mf" };
	struct pxrun r;

	for (int k = 0; k < 4; k++) {
		run(&r, cases[k]);
		cr_assert_eq(r.status, 2, "case %d: %d %s", k, r.status,
			     r.err);
		cr_assert_not_null(strstr(r.err, want[k]), "%s", r.err);
		pxrun_free(&r);
	}
}

/* The last line of out that is a JSON object, parsed (NULL: none). */
static json_t *last_json(const char *out)
{
	const char *p = out, *last = NULL;

	for (; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (*p == '{')
			last = p;
	return last ? json_loadb(last, strcspn(last, "\n"), 0, NULL) : NULL;
}

static double num(json_t *j, const char *k)
{
	json_t *v = json_object_get(j, k);

	cr_assert(json_is_number(v), "no number '%s'", k);
	return json_number_value(v);
}

/* `local --model mf` with 2 workers and 2 PS on the same set: a test RMSE
 * within 10% of the one-process run (same epochs, batch and lr; the
 * parallel SGD sums the workers' updates) and within 20% of the noise
 * floor; the RMSE of both sets on the progress lines. */
Test(trainer_mf_cli, distributed_matches_one_process)
{
	const char *one[] = { "train", "--model", "mf", "--rank", "4",
			      "--train-data", tr, "--test-data", te,
			      "--epochs", "12", "--batch", "64", "--lr", "0.04",
			      "--weight-decay", "0.02", "--json", NULL };
	const char *dist[] = { "local", "--model", "mf", "--rank", "4",
			       "--train-data", tr, "--test-data", te,
			       "--epochs", "12", "--batch", "64", "--lr",
			       "0.04", "--weight-decay", "0.02", "--workers",
			       "2", "--ps", "2", "--eval-epochs", "--json",
			       NULL };
	struct pxrun r;
	json_t *j;
	double single, test, train;

	run(&r, one);
	cr_assert_eq(r.status, 0, "%s", r.err);
	j = json_loads(r.out, 0, NULL);
	cr_assert_not_null(j, "%s", r.out);
	single = num(j, "test_rmse");
	json_decref(j);
	pxrun_free(&r);

	run(&r, dist);
	cr_assert_eq(r.status, 0, "%s", r.err);
	j = last_json(r.out);
	cr_assert_not_null(j, "%s", r.out);
	test = num(j, "test_rmse");
	train = num(j, "train_rmse");
	cr_assert_str_eq(json_string_value(json_object_get(j, "model")),
			 "mf");
	cr_assert(json_is_null(json_object_get(j, "test_accuracy")));
	cr_assert_eq(num(j, "samples"), 12 * 60000);
	cr_assert(test < 1.1 * single, "2 workers: test RMSE %g, one "
		  "process %g", test, single);
	cr_assert(test < 1.2 * SIGMA, "test RMSE %g, floor %g", test, SIGMA);
	cr_assert(train < test + 0.1, "train %g test %g", train, test);
	cr_assert_not_null(strstr(r.err, "train RMSE"), "%s", r.err);
	cr_assert_not_null(strstr(r.err, "test RMSE"), "%s", r.err);
	json_decref(j);
	pxrun_free(&r);
}

/* What the sparse pulls and pushes take on the wire (the coordinator's
 * row_bytes, from the workers' CLOCKs) is the touched rows' and the
 * frames' and nothing else: a row of rank + 1 floats costs its id in the
 * PULL_ROWS, its id and floats in the reply and again in the push (52
 * bytes at rank 4), a frame its header and tag (80) and its fixed part
 * (24 for a PULL_ROWS, 32 for a ROWS).  With one minibatch of 16
 * ratings a clock a worker moves at most 32 rows, a fraction of the
 * matrices (700 rows): no frame carries a whole shard. */
Test(trainer_mf_cli, wire_bytes_follow_the_rows_touched)
{
	const char *dist[] = { "local", "--model", "mf", "--rank", "4",
			       "--train-data", tr, "--test-data", te,
			       "--max-train", "4000", "--epochs", "1",
			       "--batch", "16", "--clock-batches", "1",
			       "--workers", "2", "--ps", "2", "--json", NULL };
	struct pxrun r;
	json_t *j;
	double bytes, rows, frames, clocks, params, lo, hi;

	run(&r, dist);
	cr_assert_eq(r.status, 0, "%s", r.err);
	j = last_json(r.out);
	cr_assert_not_null(j, "%s", r.out);
	bytes = num(j, "row_bytes");
	rows = num(j, "rows_touched");
	frames = num(j, "row_frames");
	params = num(j, "params");
	clocks = num(j, "samples") / 16;  /* worker clocks: 4000 / 16 */
	cr_assert_eq(clocks, 250);
	cr_assert(rows > 0 && rows <= 32 * clocks, "%g rows", rows);
	lo = rows * 52 + frames * (80 + 24);
	hi = rows * 52 + frames * (80 + 32);
	cr_assert(bytes >= lo && bytes <= hi, "%g bytes for %g rows in %g "
		  "frames: not in [%g, %g]", bytes, rows, frames, lo, hi);
	/* 2 shards: a PULL_ROWS, its reply and a push each, at most */
	cr_assert(frames <= 6 * clocks, "%g frames", frames);
	cr_assert(bytes / clocks < params * 4 / 4, "%g bytes a clock, the "
		  "matrices are %g", bytes / clocks, params * 4);
	cr_assert_eq(num(j, "row_bytes_per_rating"), bytes / 4000);
	json_decref(j);
	pxrun_free(&r);
}

/* ---- checkpoints, resume, eval, export, predict ---- */

/* tmp/name, static (one at a time per slot). */
static const char *tmp_path(int slot, const char *name)
{
	static char p[4][600];

	snprintf(p[slot], sizeof(p[slot]), "%s/%s", tmp, name);
	return p[slot];
}

/* `train --checkpoint` killed after epoch 2 (--fault-crash-after) and
 * `--resume`d ends where a run never stopped ends, to the bit; a
 * checkpoint of another rank or other ratings is refused (exit 3),
 * naming the field. */
Test(trainer_mf_cli, train_resumes_to_the_same_result)
{
	const char *ck = tmp_path(0, "mf.pxc");
	const char *base[] = { "train", "--model", "mf", "--rank", "4",
			       "--train-data", tr, "--test-data", te,
			       "--max-train", "20000", "--epochs", "4",
			       "--batch", "64", "--lr", "0.04", "--json",
			       NULL, NULL, NULL, NULL, NULL, NULL };
	struct pxrun r;
	json_t *j;
	double whole, resumed;

	run(&r, base);
	cr_assert_eq(r.status, 0, "%s", r.err);
	j = json_loads(r.out, 0, NULL);
	cr_assert_not_null(j, "%s", r.out);
	whole = num(j, "test_rmse");
	cr_assert(json_is_null(json_object_get(j, "resumed_from")));
	json_decref(j);
	pxrun_free(&r);

	base[18] = "--checkpoint";
	base[19] = ck;
	base[20] = "--fault-crash-after";
	base[21] = "2";
	run(&r, base);
	cr_assert_eq(r.status, 128 + 9, "%d: %s", r.status, r.err);
	pxrun_free(&r);
	base[20] = "--resume";
	base[21] = ck;
	run(&r, base);
	cr_assert_eq(r.status, 0, "%s", r.err);
	j = json_loads(r.out, 0, NULL);
	cr_assert_not_null(j, "%s", r.out);
	resumed = num(j, "test_rmse");
	cr_assert_eq(num(j, "resumed_from"), 2);
	cr_assert_eq(json_array_size(json_object_get(j, "curve")), 2);
	cr_assert_eq(resumed, whole, "resumed %.17g, whole %.17g", resumed,
		     whole);
	json_decref(j);
	pxrun_free(&r);

	/* the finished run's checkpoint with another rank: refused */
	base[18] = "--resume";
	base[19] = ck;
	base[20] = base[21] = NULL;
	base[4] = "5";
	run(&r, base);
	cr_assert_eq(r.status, 3, "%d: %s", r.status, r.err);
	cr_assert_not_null(strstr(r.err, "4 factors a row (--rank), this one "
				  "has 5"), "%s", r.err);
	pxrun_free(&r);
	/* ... and of other ratings (the test set's) */
	base[4] = "4";
	base[6] = te;
	run(&r, base);
	cr_assert_eq(r.status, 3, "%d: %s", r.status, r.err);
	cr_assert_not_null(strstr(r.err, ck), "%s", r.err);
	cr_assert_not_null(strstr(r.err, "is of a job with"), "%s", r.err);
	pxrun_free(&r);
}

/* The model taken away: `train --export` and `--checkpoint`; `eval`
 * of the checkpoint gives the run's test RMSE, `predict` of the export
 * and of the checkpoint the same predictions and RMSE, and Python
 * (tests/export/predict_mf_ref.py: struct, json, numpy) reading the
 * safetensors computes every prediction to the bit. */
Test(trainer_mf_cli, eval_export_and_predict_agree_with_python)
{
	const char *ck = tmp_path(0, "m.pxc"), *st = tmp_path(1, "m.st");
	const char *tra[] = { "train", "--model", "mf", "--rank", "4",
			      "--train-data", tr, "--test-data", te,
			      "--max-train", "20000", "--epochs", "3",
			      "--batch", "64", "--lr", "0.04", "--json",
			      "--checkpoint", ck, "--export", st, NULL };
	const char *ev[] = { "eval", ck, "--model", "mf", "--test-data", te,
			     "--json", NULL };
	const char *pr[] = { "predict", st, te, "--json", NULL };
	const char *prc[] = { "predict", ck, te, "--json", NULL };
	char *script = px_src_path("tests/export/predict_mf_ref.py");
	const char *py[] = { "python3", script, st, te, NULL };
	struct pxrun r;
	json_t *j, *p, *q, *c, *pa, *pb;
	double rmse;

	run(&r, tra);
	cr_assert_eq(r.status, 0, "%s", r.err);
	j = json_loads(r.out, 0, NULL);
	cr_assert_not_null(j, "%s", r.out);
	rmse = num(j, "test_rmse");
	json_decref(j);
	pxrun_free(&r);

	run(&r, ev);
	cr_assert_eq(r.status, 0, "%s", r.err);
	j = json_loads(r.out, 0, NULL);
	cr_assert_not_null(j, "%s", r.out);
	cr_assert_eq(num(j, "test_rmse"), rmse, "eval %.17g, train %.17g",
		     num(j, "test_rmse"), rmse);
	cr_assert_eq(num(j, "recorded_test_rmse"), rmse);
	cr_assert_eq(num(j, "users"), 400);
	cr_assert_eq(num(j, "rank"), 4);
	cr_assert_eq(num(j, "test_ratings"), 5000);
	json_decref(j);
	pxrun_free(&r);

	run(&r, pr);
	cr_assert_eq(r.status, 0, "%s", r.err);
	p = json_loads(r.out, 0, NULL);
	cr_assert_not_null(p, "%s", r.out);
	cr_assert_float_eq(num(p, "rmse"), rmse, 1e-12);
	pxrun_free(&r);
	run(&r, prc);
	cr_assert_eq(r.status, 0, "%s", r.err);
	c = json_loads(r.out, 0, NULL);
	cr_assert_not_null(c, "%s", r.out);
	cr_assert(json_equal(json_object_get(c, "predictions"),
			     json_object_get(p, "predictions")),
		  "the checkpoint and its export predict otherwise");
	pxrun_free(&r);

	cr_assert_eq(pxrun(&r, 100, "/usr/bin/python3", py), 0);
	cr_assert_eq(r.status, 0, "python: %s%s", r.out, r.err);
	q = json_loads(r.out, 0, NULL);
	cr_assert_not_null(q, "%s", r.out);
	pa = json_object_get(p, "predictions");
	pb = json_object_get(q, "predictions");
	cr_assert_eq(json_array_size(pa), 5000);
	cr_assert_eq(json_array_size(pb), 5000);
	for (size_t i = 0; i < 5000; i++)
		cr_assert_eq(json_number_value(json_array_get(pa, i)),
			     json_number_value(json_array_get(pb, i)),
			     "row %zu: predict %.9g, python %.9g", i,
			     json_number_value(json_array_get(pa, i)),
			     json_number_value(json_array_get(pb, i)));
	cr_assert_float_eq(num(q, "rmse"), rmse, 1e-9);
	cr_assert_str_eq(json_string_value(json_object_get(
				 json_object_get(q, "meta"), "users")), "400");
	json_decref(p);
	json_decref(q);
	json_decref(c);
	pxrun_free(&r);
	free(script);
}

/* A worker SIGKILLed in a distributed mf run: lost when its process
 * ends, its partition re-split, a replacement joins, and the job ends
 * with the RMSE a job without the loss reaches. */
Test(trainer_mf_cli, distributed_worker_sigkill_survived)
{
	/* 150 epochs of 20,000 ratings (~3 s here): the replacement
	 * registers well before the end (see trainer_dist's test) */
	const char *dist[] = { "local", "--model", "mf", "--rank", "4",
			       "--train-data", tr, "--test-data", te,
			       "--max-train", "20000", "--epochs", "150",
			       "--batch", "64", "--lr", "0.04", "--workers",
			       "2", "--ps", "1", "--kill-worker-at", "0.8",
			       "--json", NULL };
	struct pxrun r;
	json_t *j;

	run(&r, dist);
	cr_assert_eq(r.status, 0, "%s", r.err);
	j = last_json(r.out);
	cr_assert_not_null(j, "%s", r.out);
	cr_assert_eq(num(j, "losses"), 1, "%s", r.err);
	cr_assert_eq(num(j, "joins"), 1, "the replacement joins: %s", r.err);
	cr_assert_gt(num(j, "recovery_ms_max"), 0);
	cr_assert(num(j, "test_rmse") < 1.2 * SIGMA, "test RMSE %g",
		  num(j, "test_rmse"));
	cr_assert(strstr(r.err, "lost: its process ended"), "%s", r.err);
	json_decref(j);
	pxrun_free(&r);
}

/* The coordinator SIGKILLed (--fault-crash-at) in a distributed mf run
 * with checkpoints: `local --max-restarts 1` resumes from the last one
 * and the job ends; its final checkpoint evaluates (`eval`) to the
 * job's test RMSE and its export predicts it. */
Test(trainer_mf_cli, distributed_coordinator_crash_resumes)
{
	const char *ck = tmp_path(0, "d.pxc"), *st = tmp_path(1, "d.st");
	const char *dist[] = { "local", "--model", "mf", "--rank", "4",
			       "--train-data", tr, "--test-data", te,
			       "--max-train", "20000", "--epochs", "12",
			       "--batch", "64", "--lr", "0.04", "--workers",
			       "2", "--ps", "2", "--checkpoint", ck,
			       "--checkpoint-every", "20", "--fault-crash-at",
			       "60", "--max-restarts", "1", "--export", st,
			       "--json", NULL };
	const char *ev[] = { "eval", ck, "--test-data", te, "--json", NULL };
	const char *pr[] = { "predict", st, te, "--json", NULL };
	struct pxrun r;
	json_t *j, *e;
	double rmse;

	run(&r, dist);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_not_null(strstr(r.err, "coordinator was killed by signal 9"),
			   "%s", r.err);
	cr_assert_not_null(strstr(r.err, "restart 1 of 1 from the checkpoint "
				  "of clock"), "%s", r.err);
	cr_assert_not_null(strstr(r.err, "test RMSE"), "%s", r.err);
	j = last_json(r.out);
	cr_assert_not_null(j, "%s", r.out);
	/* the crash comes at the first clock at or past 60 the coordinator
	 * sees (the minimum may move by more than one at a time), right
	 * after that clock's checkpoint */
	{
		const char *at = strstr(r.err, "SIGKILLs itself at clock ");
		long long crash;

		cr_assert_not_null(at, "%s", r.err);
		cr_assert_eq(sscanf(at, "SIGKILLs itself at clock %lld",
				    &crash), 1);
		cr_assert_geq(crash, 60);
		cr_assert_geq(num(j, "resumed_from"), 20);
		cr_assert_leq(num(j, "resumed_from"), (double)crash);
		cr_assert_geq(num(j, "resumed_from"), (double)crash - 20);
	}
	/* 12 epochs of 20,000 ratings, 2 workers, 64 a minibatch */
	cr_assert_eq(num(j, "clocks"), 236);
	rmse = num(j, "test_rmse");
	cr_assert(rmse < 0.9, "test RMSE %g", rmse);
	pxrun_free(&r);

	run(&r, ev);
	cr_assert_eq(r.status, 0, "%s", r.err);
	e = json_loads(r.out, 0, NULL);
	cr_assert_not_null(e, "%s", r.out);
	cr_assert_eq(num(e, "clock"), 236);
	cr_assert_eq(num(e, "workers"), 2);
	cr_assert_eq(num(e, "test_rmse"), rmse, "eval %.17g, the job %.17g",
		     num(e, "test_rmse"), rmse);
	json_decref(e);
	pxrun_free(&r);
	run(&r, pr);
	cr_assert_eq(r.status, 0, "%s", r.err);
	e = json_loads(r.out, 0, NULL);
	cr_assert_not_null(e, "%s", r.out);
	cr_assert_float_eq(num(e, "rmse"), rmse, 1e-12);
	json_decref(e);
	json_decref(j);
	pxrun_free(&r);
}

/* A shard travels whole in one frame (64 MiB): with ids at the bound
 * (10^7) a rank-1 model is 2 * 10^7 floats, over one frame, and the
 * coordinator cuts the shards it takes rather than the --shards asked
 * (once "shards ... do not fit a frame: use more", after proteusd had
 * charged the job: it asks for 4).  The job trains to its end. */
Test(trainer_mf_cli, shards_follow_the_model)
{
	char big[600], bigte[600];
	const char *dist[] = { "local", "--model", "mf", "--rank", "1",
			       "--train-data", big, "--test-data", bigte,
			       "--epochs", "1", "--batch", "64", "--workers",
			       "1", "--ps", "1", "--shards", "1", "--json",
			       NULL };
	struct pxrun r;
	json_t *j;
	FILE *f;

	snprintf(big, sizeof big, "%s/big.csv", tmp);
	snprintf(bigte, sizeof bigte, "%s/bigte.csv", tmp);
	f = fopen(big, "w");
	cr_assert_not_null(f);
	fputs("10000000,3,4.5\n", f);
	for (int i = 0; i < 500; i++)
		fprintf(f, "%d,%d,%d\n", i * 19997, i % 40, 1 + i % 5);
	fclose(f);
	f = fopen(bigte, "w");
	cr_assert_not_null(f);
	for (int i = 0; i < 50; i++)
		fprintf(f, "%d,%d,%d\n", i * 19997, i % 40, 1 + i % 5);
	fclose(f);
	run(&r, dist);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert(strstr(r.err, "2 shards, not the 1 asked"), "%s", r.err);
	j = last_json(r.out);
	cr_assert_not_null(j, "%s", r.out);
	cr_assert_eq(num(j, "samples"), 501);
	cr_assert(json_is_number(json_object_get(j, "test_rmse")), "%s",
		  r.out);
	json_decref(j);
	pxrun_free(&r);
}
