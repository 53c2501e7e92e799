/* test_trainer_mf.c -- `proteus-trainer train --model mf` on a synthetic
 * low-rank set (tests/data/mf/mf_synth.py: noise sigma 0.5, the best
 * RMSE any model reaches) reaching a test RMSE within 1.2 sigma and far
 * under the mean's; bad ratings refused with exit 3 naming file:line;
 * what mf does not take refused with exit 2. */
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
				"--test-data", te, "--checkpoint", "x.pxc",
				NULL };
	const char *rank[] = { "train", "--model", "mlr", "--rank", "4", NULL };
	const char *const *cases[] = { cuda, nodata, local, rank };
	const char *want[] = { "does not take --device cuda",
			       "needs --train-data",
			       "does not take --checkpoint in a distributed",
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
