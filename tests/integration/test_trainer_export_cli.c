/* test_trainer_export_cli.c -- the model taken away: `train --export` and
 * `local --export` write a safetensors file that Python loads without
 * PyPI (tests/export/predict_ref.py: the standard library's struct and
 * json for the file, an nn.Sequential with load_state_dict from Debian's
 * python3-torch, or numpy), whose predictions on the test set are
 * `proteus-trainer predict`'s, whose accuracy is the trainer's: on
 * Fashion-MNIST (an MLP) and on a LIBSVM set standardized by the
 * scaling in the metadata (MLR); predict's bad input (a damaged file,
 * a data set of another width) exits 3 naming the file and field; an
 * export path that is a directory or a FIFO is refused before training.
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pxrun.h"

#define DIM 20
#define FMNIST "/usr/share/datasets/fashion-mnist/"
#define PY "/usr/bin/python3"

static char *tmp;
static char svm_tr[600], svm_te[600];

static uint64_t rng = 7;

static double uni(void)
{
	uint64_t z = (rng += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	z ^= z >> 31;
	return ((double)(z >> 11) + 0.5) / 9007199254740992.0;
}

static double normal(void)
{
	return sqrt(-2 * log(uni())) * cos(2 * M_PI * uni());
}

/* n LIBSVM rows of 3 classes (labels 3, 8, 20): class c's mean is 2.5
 * on feature c; every feature is offset by 40 + 5j and scaled by 1 + j
 * (so that the model is only good on standardized features); values
 * under 0.8 in magnitude left out. */
static void gen(const char *path, int n)
{
	static const int labels[] = { 3, 8, 20 };
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f);
	for (int i = 0; i < n; i++) {
		int c = (int)(uni() * 3);

		fprintf(f, "%d", labels[c]);
		for (int j = 0; j < DIM; j++) {
			double x = (normal() + (j == c ? 2.5 : 0)) * (1 + j) +
				   (j % 2 ? 40 + 5 * j : 0);

			if (fabs(x) >= 0.8)
				fprintf(f, " %d:%.5f", j + 1, x);
		}
		fputc('\n', f);
	}
	fclose(f);
}

static void setup(void)
{
	tmp = px_tmpdir();
	cr_assert_not_null(tmp);
	snprintf(svm_tr, sizeof svm_tr, "%s/train.svm", tmp);
	snprintf(svm_te, sizeof svm_te, "%s/test.svm", tmp);
	gen(svm_tr, 3000);
	gen(svm_te, 1000);
}

static void teardown(void)
{
	px_rmtree(tmp);
	free(tmp);
}

TestSuite(trainer_export_cli, .init = setup, .fini = teardown, .timeout = 240);

/* prog (the trainer, or python3 when it is PY) with args; its JSON on
 * stdout when it exits 0. */
static json_t *run(struct pxrun *r, const char *prog, const char *const *args)
{
	const char *argv[40] = { prog[0] == '/' ? "python3" :
				 "proteus-trainer" };
	size_t n = 1;

	for (size_t i = 0; args[i]; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	cr_assert_eq(pxrun(r, 200, prog, argv), 0);
	return r->status == 0 ? json_loads(r->out, 0, NULL) : NULL;
}

static double num(json_t *j, const char *k)
{
	return json_number_value(json_object_get(j, k));
}

/* model's predictions on data by `predict --json` and by Python agree
 * (but for rows whose best two logits tie within 1e-4), and the
 * accuracy of each is the trainer's acc. */
static void check_predictions(const char *model, const char *data,
			      const char *fmt, double acc, int rows)
{
	char *script = px_src_path("tests/export/predict_ref.py");
	const char *pr[] = { "predict", model, data, "--json", NULL };
	const char *py[] = { script, model, data, fmt, NULL };
	struct pxrun r, q;
	json_t *a, *b, *pa, *pb, *amb;
	size_t diff = 0, n_amb;

	a = run(&r, "proteus-trainer", pr);
	cr_assert_not_null(a, "predict: exit %d: %s", r.status, r.err);
	cr_assert_eq(num(a, "rows"), rows);
	/* the same forward, the same argmax: the trainer's own figure */
	cr_assert_float_eq(num(a, "accuracy"), acc, 1e-12,
			   "predict %g, the trainer %g", num(a, "accuracy"),
			   acc);
	b = run(&q, PY, py);
	cr_assert_not_null(b, "python: exit %d: %s%s", q.status, q.out, q.err);
	pa = json_object_get(a, "predictions");
	pb = json_object_get(b, "predictions");
	amb = json_object_get(b, "ambiguous");
	n_amb = json_array_size(amb);
	cr_assert_eq(json_array_size(pa), (size_t)rows);
	cr_assert_eq(json_array_size(pb), (size_t)rows);
	cr_assert_leq(n_amb, 10, "%zu near ties: a reading error?", n_amb);
	for (size_t i = 0, k = 0; i < (size_t)rows; i++) {
		bool tie = k < n_amb &&
			   json_integer_value(json_array_get(amb, k)) ==
				   (json_int_t)i;

		k += tie;
		if (json_integer_value(json_array_get(pa, i)) ==
		    json_integer_value(json_array_get(pb, i)))
			continue;
		cr_assert(tie, "row %zu: predict says %lld, %s says %lld", i,
			  json_integer_value(json_array_get(pa, i)),
			  json_string_value(json_object_get(b, "backend")),
			  json_integer_value(json_array_get(pb, i)));
		diff++;
	}
	cr_assert_leq(fabs(num(b, "accuracy") - acc), (double)diff / rows +
		      1e-12, "python %g, the trainer %g",
		      num(b, "accuracy"), acc);
	json_decref(a);
	json_decref(b);
	pxrun_free(&r);
	pxrun_free(&q);
	free(script);
}

Test(trainer_export_cli, fashion_mnist_mlp_loads_in_python)
{
	char m[700];
	const char *tr[] = { "train", "--model", "mlp", "--epochs", "1",
			     "--max-train", "6000", "--threads", "1",
			     "--export", m, "--json", NULL };
	struct pxrun r;
	struct stat st;
	json_t *j;

	snprintf(m, sizeof m, "%s/fmnist.safetensors", tmp);
	j = run(&r, "proteus-trainer", tr);
	cr_assert_not_null(j, "exit %d: %s", r.status, r.err);
	cr_assert_eq(stat(m, &st), 0);
	cr_assert(S_ISREG(st.st_mode));
	check_predictions(m, FMNIST "t10k-images-idx3-ubyte.gz", "idx",
			  num(j, "test_accuracy"), 10000);
	json_decref(j);
	pxrun_free(&r);
}

Test(trainer_export_cli, scaled_libsvm_train_and_local_load_in_python)
{
	char m[700], l[700];
	const char *tr[] = { "train", "--model", "mlr", "--epochs", "3",
			     "--threads", "1", "--scale", "standard",
			     "--train-data", svm_tr, "--test-data", svm_te,
			     "--export", m, "--json", NULL };
	const char *loc[] = { "local", "--model", "mlr", "--epochs", "3",
			      "--threads", "1", "--workers", "2", "--ps", "2",
			      "--scale", "standard", "--train-data", svm_tr,
			      "--test-data", svm_te, "--export", l, "--json",
			      NULL };
	const char *proba[] = { "predict", m, svm_te, "--proba", NULL };
	struct pxrun r;
	json_t *j;
	double acc;

	snprintf(m, sizeof m, "%s/svm.safetensors", tmp);
	snprintf(l, sizeof l, "%s/local.safetensors", tmp);
	j = run(&r, "proteus-trainer", tr);
	cr_assert_not_null(j, "exit %d: %s", r.status, r.err);
	acc = num(j, "test_accuracy");
	cr_assert_gt(acc, 0.9, "scaled MLR: %s", r.out);
	check_predictions(m, svm_te, "libsvm", acc, 1000);
	json_decref(j);
	pxrun_free(&r);
	/* the final parameters the coordinator has */
	j = run(&r, "proteus-trainer", loc);
	cr_assert_not_null(j, "exit %d: %s%s", r.status, r.out, r.err);
	acc = num(j, "test_accuracy");
	cr_assert_gt(acc, 0.9, "local: %s", r.out);
	check_predictions(l, svm_te, "libsvm", acc, 1000);
	json_decref(j);
	pxrun_free(&r);
	/* --proba: the label, then a probability per class, summing to 1 */
	run(&r, "proteus-trainer", proba);
	cr_assert_eq(r.status, 0, "%s", r.err);
	{
		int lab;
		double p[3];

		cr_assert_eq(sscanf(r.out, "%d %lf %lf %lf", &lab, &p[0],
				    &p[1], &p[2]), 4, "%.200s", r.out);
		cr_assert(lab == 3 || lab == 8 || lab == 20, "label %d", lab);
		cr_assert_float_eq(p[0] + p[1] + p[2], 1.0, 1e-4);
	}
	cr_assert(strstr(r.err, "accuracy "), "%s", r.err);
	pxrun_free(&r);
}

Test(trainer_export_cli, bad_input_exits_3_naming_the_file_and_field)
{
	char m[700], bad[700], dir[700], fifo[700];
	const char *tr[] = { "train", "--model", "mlr", "--epochs", "1",
			     "--threads", "1", "--train-data", svm_tr,
			     "--test-data", svm_te, "--export", m, NULL };
	const char *wide[] = { "predict", m, FMNIST
			       "t10k-images-idx3-ubyte.gz", NULL };
	const char *dmg[] = { "predict", bad, svm_te, NULL };
	const char *to_dir[] = { "train", "--epochs", "1", "--export", dir,
				 NULL };
	const char *to_fifo[] = { "local", "--epochs", "1", "--export", fifo,
				  NULL };
	struct pxrun r;
	FILE *f;

	snprintf(m, sizeof m, "%s/svm.safetensors", tmp);
	snprintf(bad, sizeof bad, "%s/bad.safetensors", tmp);
	snprintf(dir, sizeof dir, "%s/adir", tmp);
	snprintf(fifo, sizeof fifo, "%s/fifo", tmp);
	run(&r, "proteus-trainer", tr);
	cr_assert_eq(r.status, 0, "%s", r.err);
	pxrun_free(&r);
	/* Fashion-MNIST's 784 features for a model of 20 */
	run(&r, "proteus-trainer", wide);
	cr_assert_eq(r.status, 3, "%s", r.err);
	cr_assert(strstr(r.err, "784 features") && strstr(r.err, m) &&
		  strstr(r.err, "20 inputs"), "%s", r.err);
	pxrun_free(&r);
	/* a header length past the end of the file */
	f = fopen(bad, "wb");
	cr_assert_not_null(f);
	fwrite("\xff\x00\x00\x00\x00\x00\x00\x00{}", 1, 10, f);
	fclose(f);
	run(&r, "proteus-trainer", dmg);
	cr_assert_eq(r.status, 3, "%s", r.err);
	cr_assert(strstr(r.err, bad) && strstr(r.err, "header length"), "%s",
		  r.err);
	pxrun_free(&r);
	/* a directory or a FIFO: refused before anything trains */
	cr_assert_eq(mkdir(dir, 0700), 0);
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	run(&r, "proteus-trainer", to_dir);
	cr_assert_eq(r.status, 2, "%s", r.err);
	cr_assert(strstr(r.err, "--export") && strstr(r.err, "a directory"),
		  "%s", r.err);
	cr_assert_null(strstr(r.out, "epoch"), "it trained: %s", r.out);
	pxrun_free(&r);
	run(&r, "proteus-trainer", to_fifo);
	cr_assert_eq(r.status, 2, "%s", r.err);
	cr_assert(strstr(r.err, "a FIFO"), "%s", r.err);
	pxrun_free(&r);
}
