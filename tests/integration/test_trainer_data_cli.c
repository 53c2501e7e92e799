/* test_trainer_data_cli.c -- proteus-trainer on the user's own data: `train`
 * on a LIBSVM set (labels -1/+1, sparse) and a CSV set (3 classes with a
 * header), each generated here with classes a linear model separates,
 * reaching a high accuracy; `local` with 2 workers on the LIBSVM set and
 * `eval` of its checkpoint (the scaling and labels it kept); bad data
 * refused before anything trains, exit 3, naming file:line. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "pxrun.h"

#define DIM 20

static char *tmp;
static char svm_tr[600], svm_te[600], csv_tr[600], csv_te[600];

/* Deterministic draws: splitmix64, a normal by Box-Muller. */
static uint64_t rng = 42;

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

/* n rows of k classes: class c's mean is 3 on feature c (and offset 10
 * on feature DIM - 1, so that scaling matters), noise N(0, 1); features
 * of magnitude under 0.8 are left out of a LIBSVM row (sparse).  Labels
 * are those of labels[]. */
static void gen(const char *path, int n, int k, const int *labels, bool csv)
{
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f);
	if (csv) {
		fprintf(f, "label");
		for (int j = 0; j < DIM; j++)
			fprintf(f, ",f%d", j);
		fputc('\n', f);
	}
	for (int i = 0; i < n; i++) {
		int c = (int)(uni() * k);

		fprintf(f, "%d", labels[c]);
		for (int j = 0; j < DIM; j++) {
			double x = normal() + (j == c ? 3 : 0) +
				   (j == DIM - 1 ? 10 : 0);

			if (csv)
				fprintf(f, ",%.4f", x);
			else if (fabs(x) >= 0.8)
				fprintf(f, " %d:%.4f", j + 1, x);
		}
		fputc('\n', f);
	}
	fclose(f);
}

static void setup(void)
{
	static const int pm[] = { -1, 1 }, three[] = { 0, 5, 9 };

	tmp = px_tmpdir();
	cr_assert_not_null(tmp);
	snprintf(svm_tr, sizeof svm_tr, "%s/train.svm", tmp);
	snprintf(svm_te, sizeof svm_te, "%s/test.svm", tmp);
	snprintf(csv_tr, sizeof csv_tr, "%s/train.csv", tmp);
	snprintf(csv_te, sizeof csv_te, "%s/test.csv", tmp);
	gen(svm_tr, 4000, 2, pm, false);
	gen(svm_te, 1000, 2, pm, false);
	gen(csv_tr, 4000, 3, three, true);
	gen(csv_te, 1000, 3, three, true);
}

static void teardown(void)
{
	px_rmtree(tmp);
	free(tmp);
}

TestSuite(trainer_data_cli, .init = setup, .fini = teardown, .timeout = 120);

/* proteus-trainer with argv (NULL-terminated, after the program); its
 * JSON on stdout when it exits 0. */
static json_t *run(struct pxrun *r, const char *const *args)
{
	const char *argv[40] = { "proteus-trainer" };
	size_t n = 1;

	for (size_t i = 0; args[i]; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	cr_assert_eq(pxrun(r, 100, "proteus-trainer", argv), 0);
	return r->status == 0 ? json_loads(r->out, 0, NULL) : NULL;
}

static double acc_of(json_t *j)
{
	return json_number_value(json_object_get(j, "test_accuracy"));
}

Test(trainer_data_cli, train_on_libsvm_and_csv)
{
	const char *svm[] = { "train", "--model", "mlr", "--epochs", "3",
			      "--threads", "1", "--scale", "standard",
			      "--train-data", svm_tr, "--test-data", svm_te,
			      "--json", NULL };
	const char *csv[] = { "train", "--model", "mlp", "--epochs", "3",
			      "--threads", "1", "--scale", "standard",
			      "--train-data", csv_tr, "--test-data", csv_te,
			      "--json", NULL };
	struct pxrun r;
	json_t *j, *l;

	j = run(&r, svm);
	cr_assert_not_null(j, "exit %d: %s", r.status, r.err);
	cr_assert_gt(acc_of(j), 0.97, "LIBSVM, MLR: %s", r.out);
	cr_assert_eq(json_integer_value(json_object_get(j, "inputs")), DIM);
	l = json_object_get(j, "labels");
	cr_assert_eq(json_array_size(l), 2);
	cr_assert_eq(json_integer_value(json_array_get(l, 0)), -1);
	cr_assert_eq(json_integer_value(json_array_get(l, 1)), 1);
	/* the mapping is said on stderr too, beside the progress */
	cr_assert(strstr(r.err, "-1->0 1->1"), "%s", r.err);
	json_decref(j);
	pxrun_free(&r);
	j = run(&r, csv);
	cr_assert_not_null(j, "exit %d: %s", r.status, r.err);
	cr_assert_gt(acc_of(j), 0.95, "CSV, MLP: %s", r.out);
	cr_assert_eq(json_integer_value(json_object_get(j, "classes")), 3);
	json_decref(j);
	pxrun_free(&r);
}

Test(trainer_data_cli, local_with_two_workers_then_eval)
{
	char ck[700];
	const char *loc[] = { "local", "--model", "mlr", "--epochs", "4",
			      "--threads", "1", "--workers", "2", "--ps", "2",
			      "--scale", "standard", "--train-data", svm_tr,
			      "--test-data", svm_te, "--checkpoint", ck,
			      "--json", NULL };
	const char *ev[] = { "eval", ck, "--test-data", svm_te, "--json",
			     NULL };
	const char *ev_none[] = { "eval", ck, NULL };
	struct pxrun r;
	json_t *j;
	double acc;

	snprintf(ck, sizeof ck, "%s/job.pxc", tmp);
	j = run(&r, loc);
	cr_assert_not_null(j, "exit %d: %s%s", r.status, r.out, r.err);
	acc = acc_of(j);
	cr_assert_gt(acc, 0.97, "local, 2 workers: %s", r.out);
	json_decref(j);
	pxrun_free(&r);
	/* eval applies the checkpoint's scaling and labels: the same
	 * accuracy as the job's last evaluation */
	j = run(&r, ev);
	cr_assert_not_null(j, "exit %d: %s", r.status, r.err);
	cr_assert_float_eq(acc_of(j), acc, 1e-9, "eval %s, the job %g",
			   r.out, acc);
	json_decref(j);
	pxrun_free(&r);
	/* without its data: told what to name, exit 3 */
	run(&r, ev_none);
	cr_assert_eq(r.status, 3, "%s", r.err);
	cr_assert(strstr(r.err, "--test-data"), "%s", r.err);
	pxrun_free(&r);
}

Test(trainer_data_cli, bad_data_exits_3_naming_file_and_line)
{
	char bad[700], want[800];
	const char *tr[] = { "train", "--train-data", svm_tr, "--test-data",
			     bad, NULL };
	const char *loc[] = { "local", "--workers", "2", "--train-data",
			      svm_tr, "--test-data", bad, NULL };
	const char *mix[] = { "train", "--train-data", svm_tr, NULL };
	struct pxrun r;
	FILE *f;

	snprintf(bad, sizeof bad, "%s/bad.svm", tmp);
	f = fopen(bad, "w");
	cr_assert_not_null(f);
	fprintf(f, "1 1:0.5\n-1 2:1 0:4\n");
	fclose(f);
	snprintf(want, sizeof want, "%s:2: field 3: index 0", bad);
	run(&r, tr);
	cr_assert_eq(r.status, 3, "%s", r.err);
	cr_assert(strstr(r.err, want), "%s", r.err);
	pxrun_free(&r);
	/* local says it once, before any role starts */
	run(&r, loc);
	cr_assert_eq(r.status, 3, "%s", r.err);
	cr_assert(strstr(r.err, want), "%s", r.err);
	cr_assert_null(strstr(r.err, "registered"), "a role started: %s",
		       r.err);
	pxrun_free(&r);
	run(&r, mix);
	cr_assert_eq(r.status, 2, "%s", r.err);
	cr_assert(strstr(r.err, "--test-data"), "%s", r.err);
	pxrun_free(&r);
}

/* Worker node's "data:" line in err: its rows [lo, hi) of n and the
 * most it held at once; false when there is none. */
static bool worker_rows(const char *err, unsigned node, unsigned *lo,
			unsigned *hi, unsigned *n, unsigned *held)
{
	char key[64];
	const char *p;

	snprintf(key, sizeof key, "worker %u data: ", node);
	p = strstr(err, key);
	return p && (p = strstr(p, "rows [")) &&
	       sscanf(p, "rows [%u, %u) of %u last, at most %u held", lo, hi,
		      n, held) == 4;
}

/* `local` with 2 workers on an unscaled LIBSVM set: sparse batches, and
 * each worker holds only its half of the rows (what it reports), yet
 * the job trains as well as ever. */
Test(trainer_data_cli, local_workers_read_their_partition_only)
{
	const char *loc[] = { "local", "--model", "mlr", "--epochs", "3",
			      "--threads", "1", "--workers", "2", "--ps", "2",
			      "--sparse", "on", "--train-data", svm_tr,
			      "--test-data", svm_te, "--json", NULL };
	unsigned lo[2], hi[2], n[2], held[2];
	struct pxrun r;
	json_t *j;

	j = run(&r, loc);
	cr_assert_not_null(j, "exit %d: %s%s", r.status, r.out, r.err);
	cr_assert_gt(acc_of(j), 0.97, "%s", r.out);
	for (unsigned w = 0; w < 2; w++) {
		cr_assert(worker_rows(r.err, 1000 + w, &lo[w], &hi[w], &n[w],
				      &held[w]), "worker %u: %s", 1000 + w,
			  r.err);
		cr_assert_eq(n[w], 4000);
		cr_assert_eq(hi[w] - lo[w], 2000, "[%u, %u)", lo[w], hi[w]);
		cr_assert_leq(held[w], 2000, "worker %u held %u rows",
			      1000 + w, held[w]);
		cr_assert(strstr(r.err, "data: sparse batches"), "%s", r.err);
	}
	cr_assert(lo[0] == hi[1] || lo[1] == hi[0], "[%u, %u) [%u, %u)",
		  lo[0], hi[0], lo[1], hi[1]);
	json_decref(j);
	pxrun_free(&r);
}

/* `train` on a set over its --data-memory (1 MiB; the rows take ~2.6):
 * read in chunks each epoch, to the accuracy of the same run in
 * memory, and sparse batches give the dense ones' accuracy. */
Test(trainer_data_cli, streaming_trains_as_in_memory)
{
	static const int pm[] = { -1, 1 };
	char big[700];
	const char *base[] = { "train", "--model", "mlr", "--epochs", "2",
			       "--threads", "1", "--train-data", big,
			       "--test-data", svm_te, "--json" };
	const char *extra[3][3] = { { "--data-memory", "1", "--sparse" },
				    { "--data-memory", "0", "--sparse" },
				    { "--data-memory", "0", "--sparse" } };
	const char *mode[3] = { "on", "on", "off" };
	double acc[3];

	snprintf(big, sizeof big, "%s/big.svm", tmp);
	gen(big, 20000, 2, pm, false);
	for (int k = 0; k < 3; k++) {
		const char *argv[20];
		struct pxrun r;
		json_t *j, *reads;
		size_t n = 0;

		for (size_t i = 0; i < sizeof base / sizeof base[0]; i++)
			argv[n++] = base[i];
		for (int i = 0; i < 3; i++)
			argv[n++] = extra[k][i];
		argv[n++] = mode[k];
		argv[n] = NULL;
		j = run(&r, argv);
		cr_assert_not_null(j, "exit %d: %s", r.status, r.err);
		acc[k] = acc_of(j);
		cr_assert_gt(acc[k], 0.97, "%s", r.out);
		cr_assert_eq(json_is_true(json_object_get(j, "sparse")),
			     k < 2, "%s", r.out);
		reads = json_object_get(j, "data_reads");
		/* 2 epochs of 2 chunks or more (the last of one may be the
		 * first of the next: held still) */
		if (k == 0) {
			cr_assert_geq(json_integer_value(reads), 3, "%s",
				      r.out);
			cr_assert_lt(json_integer_value(json_object_get(
				     j, "rows_held_max")), 20000, "%s", r.out);
		} else {
			cr_assert_null(reads, "%s", r.out);
		}
		json_decref(j);
		pxrun_free(&r);
	}
	cr_assert_float_eq(acc[0], acc[1], 0.01, "streamed %g, in memory %g",
			   acc[0], acc[1]);
	cr_assert_float_eq(acc[1], acc[2], 0.005, "sparse %g, dense %g",
			   acc[1], acc[2]);
}

/* An IDX pair (gzip) of n images of 2 x 5 in dir/prefix-*: class c of
 * 3 (labels 1, 4, 6) has pixel c bright over a noise.  The images
 * file's path into img. */
static void gen_idx(const char *prefix, int n, char *img, size_t len)
{
	static const uint8_t labels[] = { 1, 4, 6 };
	uint8_t hi[16] = { 0, 0, 8, 3 }, hl[8] = { 0, 0, 8, 1 };
	char lab[700];
	gzFile fi, fl;

	snprintf(img, len, "%s/%s-images-idx3-ubyte.gz", tmp, prefix);
	snprintf(lab, sizeof lab, "%s/%s-labels-idx1-ubyte.gz", tmp, prefix);
	fi = gzopen(img, "wb");
	fl = gzopen(lab, "wb");
	cr_assert(fi && fl);
	for (int k = 0; k < 4; k++)
		hi[4 + k] = hl[4 + k] = (uint8_t)((unsigned)n >> (24 - 8 * k));
	hi[11] = 2;
	hi[15] = 5;
	cr_assert_eq(gzwrite(fi, hi, 16), 16);
	cr_assert_eq(gzwrite(fl, hl, 8), 8);
	for (int i = 0; i < n; i++) {
		int c = (int)(uni() * 3);
		uint8_t px[10];

		for (int j = 0; j < 10; j++)
			px[j] = (uint8_t)(uni() * 90 + (j == c ? 150 : 0));
		cr_assert_eq(gzwrite(fi, px, 10), 10);
		cr_assert_eq(gzwrite(fl, &labels[c], 1), 1);
	}
	cr_assert_eq(gzclose(fi), Z_OK);
	cr_assert_eq(gzclose(fl), Z_OK);
}

/* Each of 2 workers' "data:" lines says it read only its half of n rows
 * (held at most `held` at once), the halves side by side. */
static void halves(const char *err, unsigned n_want, unsigned held_max)
{
	unsigned lo[2], hi[2], n[2], held[2];

	for (unsigned w = 0; w < 2; w++) {
		cr_assert(worker_rows(err, 1000 + w, &lo[w], &hi[w], &n[w],
				      &held[w]), "worker %u: %s", 1000 + w,
			  err);
		cr_assert_eq(n[w], n_want);
		cr_assert_eq(hi[w] - lo[w], n_want / 2, "[%u, %u)", lo[w],
			     hi[w]);
		cr_assert_leq(held[w], held_max, "worker %u held %u rows",
			      1000 + w, held[w]);
	}
	cr_assert(lo[0] == hi[1] || lo[1] == hi[0], "[%u, %u) [%u, %u)",
		  lo[0], hi[0], lo[1], hi[1]);
}

/* `local` with 2 workers on the user's IDX pair (gzip) and on
 * Fashion-MNIST with --data-memory: each worker holds only its half (in
 * chunks of ~1 MiB for Fashion-MNIST: 1,328 rows) and relief is said to
 * be off; Fashion-MNIST without --data-memory is loaded whole by every
 * worker, relief on (issue 27). */
Test(trainer_data_cli, local_workers_read_their_idx_partition_only)
{
	char itr[700], ite[700];
	const char *idx[] = { "local", "--model", "mlr", "--epochs", "3",
			      "--threads", "1", "--workers", "2", "--ps", "1",
			      "--train-data", itr, "--test-data", ite,
			      "--json", NULL };
	const char *fm[] = { "local", "--model", "mlr", "--epochs", "1",
			     "--threads", "1", "--workers", "2", "--ps", "1",
			     "--max-train", "6000", "--max-test", "1000",
			     "--json", "--data-memory", "1", NULL };
	struct pxrun r;
	json_t *j;

	gen_idx("tr", 4000, itr, sizeof itr);
	gen_idx("te", 1000, ite, sizeof ite);
	j = run(&r, idx);
	cr_assert_not_null(j, "exit %d: %s%s", r.status, r.out, r.err);
	cr_assert_gt(acc_of(j), 0.95, "%s", r.out);
	halves(r.err, 4000, 2000);
	cr_assert(strstr(r.err, "straggler relief off"), "%s", r.err);
	json_decref(j);
	pxrun_free(&r);
	j = run(&r, fm);
	cr_assert_not_null(j, "exit %d: %s%s", r.status, r.out, r.err);
	halves(r.err, 6000, 1328);
	cr_assert(strstr(r.err, "relief off: each worker holds only its "
			 "partition of Fashion-MNIST"), "%s", r.err);
	json_decref(j);
	pxrun_free(&r);
	fm[16] = NULL; /* no --data-memory: whole, relief on */
	j = run(&r, fm);
	cr_assert_not_null(j, "exit %d: %s%s", r.status, r.out, r.err);
	cr_assert_null(strstr(r.err, " data: "), "%s", r.err);
	cr_assert_null(strstr(r.err, "relief off"), "%s", r.err);
	json_decref(j);
	pxrun_free(&r);
}
