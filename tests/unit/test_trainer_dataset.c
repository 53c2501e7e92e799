/* test_trainer_dataset.c -- the user's own data (trainer/io/dataset.h):
 * LIBSVM, CSV and IDX files read right (plain and gzip), labels mapped to
 * classes in sorted order, the scaling, the test set held to the
 * training set, every kind of bad input refused with file:line and the
 * field in the message, and checkpoints that keep the labels and the
 * scaling. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "../../trainer/io/ckpt.h"
#include "../../trainer/io/data.h"
#include "../../trainer/io/dataset.h"
#include "../integration/pxrun.h"

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

TestSuite(trainer_dataset, .init = setup, .fini = teardown, .timeout = 30);

/* tmp/name with text in it (gzip when the name ends in .gz); the path,
 * static. */
static const char *file(const char *name, const char *text, size_t len)
{
	static char paths[4][512];
	static int k;
	char *p = paths[k++ % 4];

	snprintf(p, 512, "%s/%s", tmp, name);
	if (strstr(name, ".gz")) {
		gzFile g = gzopen(p, "wb");

		cr_assert_not_null(g);
		cr_assert_eq(gzwrite(g, text, (unsigned)len), (int)len);
		gzclose(g);
	} else {
		FILE *f = fopen(p, "w");

		cr_assert_not_null(f);
		cr_assert_eq(fwrite(text, 1, len, f), len);
		fclose(f);
	}
	return p;
}

static const char *text_file(const char *name, const char *text)
{
	return file(name, text, strlen(text));
}

static const char *const svm_train =
	"# a comment line\n"
	"+1 1:0.5 3:2\r\n"
	"-1 2:1.5 # and a comment after\n"
	"\n"
	"3 1:-1 2:0 3:4\n"
	"-1 3:1e-1\n";

static void check_svm(const struct data_set *d, const struct data_prep *p)
{
	float x[4 * 3];
	uint8_t y[4];
	uint32_t idx[4] = { 0, 1, 2, 3 };
	const float want[4 * 3] = { 0.5f, 0, 2, 0, 1.5f, 0, -1, 0, 4,
				    0, 0, 0.1f };

	cr_assert_eq(d->n, 4);
	cr_assert_eq(p->dim, 3);
	cr_assert_eq(p->n_classes, 3);
	cr_assert_eq(p->labels[0], -1);
	cr_assert_eq(p->labels[1], 1);
	cr_assert_eq(p->labels[2], 3);
	cr_assert_null(p->mean);
	cr_assert_not_null(d->rp, "LIBSVM is kept sparse");
	cr_assert_eq(d->rp[4], 6, "the zero is not kept: %llu values",
		     (unsigned long long)d->rp[4]);
	data_gather(d, idx, 4, x, y);
	for (int i = 0; i < 12; i++)
		cr_assert_float_eq(x[i], want[i], 1e-7, "x[%d] = %g", i, x[i]);
	cr_assert_eq(y[0], 1);
	cr_assert_eq(y[1], 0);
	cr_assert_eq(y[2], 2);
	cr_assert_eq(y[3], 0);
}

Test(trainer_dataset, libsvm_plain_and_gzip_labels_in_sorted_order)
{
	const char *names[] = { "a.svm", "a.libsvm.gz" };

	for (int i = 0; i < 2; i++) {
		struct data_spec s = { .train = text_file(names[i],
							  svm_train) };
		struct data_set d = { 0 };
		struct data_prep p;
		struct px_error err = { 0 };

		cr_assert_eq(data_load_train(&s, 0, &d, &p, &err), PX_OK,
			     "%s", err.msg);
		check_svm(&d, &p);
		data_release(&d);
		data_prep_release(&p);
	}
}

Test(trainer_dataset, scan_gives_the_prep_of_a_load_and_max_n_cuts)
{
	struct data_spec s = { .train = text_file("a.svm", svm_train),
			       .scale = DATA_SCALE_STANDARD };
	struct data_set d = { 0 };
	struct data_prep p, q;
	struct px_error err = { 0 };
	uint32_t n;

	cr_assert_eq(data_load_train(&s, 0, &d, &p, &err), PX_OK, "%s",
		     err.msg);
	cr_assert_eq(data_scan_train(&s, 0, &n, &q, &err), PX_OK, "%s",
		     err.msg);
	cr_assert_eq(n, 4);
	cr_assert(data_prep_equal(&p, &q));
	data_prep_release(&q);
	cr_assert_eq(data_scan_train(&s, 2, &n, &q, &err), PX_OK, "%s",
		     err.msg);
	cr_assert_eq(n, 2);
	cr_assert_eq(q.n_classes, 2, "the first 2 rows have labels 1, -1");
	cr_assert_not(data_prep_equal(&p, &q));
	data_prep_release(&q);
	data_prep_release(&p);
	data_release(&d);
}

Test(trainer_dataset, standard_scaling_from_the_training_set)
{
	/* feature 1: 1, 3 (mean 2, std 1); feature 2: 5, 5 (constant) */
	struct data_spec s = {
		.train = text_file("s.csv", "y,a,b\n0,1,5\n1,3,5\n"),
		.scale = DATA_SCALE_STANDARD,
	};
	struct data_set d = { 0 };
	struct data_prep p;
	struct px_error err = { 0 };
	uint32_t idx[2] = { 0, 1 };
	float x[4];
	uint8_t y[2];

	cr_assert_eq(data_load_train(&s, 0, &d, &p, &err), PX_OK, "%s",
		     err.msg);
	cr_assert_not_null(p.mean);
	cr_assert_float_eq(p.mean[0], 2, 1e-6);
	cr_assert_float_eq(p.std[0], 1, 1e-6);
	cr_assert_float_eq(p.mean[1], 5, 1e-6);
	cr_assert_eq(p.std[1], 1.0f, "a constant feature's deviation is 1");
	data_gather(&d, idx, 2, x, y);
	cr_assert_float_eq(x[0], -1, 1e-6);
	cr_assert_float_eq(x[1], 0, 1e-6);
	cr_assert_float_eq(x[2], 1, 1e-6);
	cr_assert_float_eq(x[3], 0, 1e-6);
	data_release(&d);
	data_prep_release(&p);
}

Test(trainer_dataset, csv_header_label_column_and_the_test_set)
{
	struct data_spec s = {
		.train = text_file("t.csv", " a , b ,label\n1.5,2,7\n"
				   "0,-1e2,9\n"),
		.test = text_file("u.csv.gz", "3,4,9\n"),
		.label_col = 3,
	};
	struct data_set d = { 0 }, t = { 0 };
	struct data_prep p;
	struct px_error err = { 0 };

	cr_assert_eq(data_load_train(&s, 0, &d, &p, &err), PX_OK, "%s",
		     err.msg);
	cr_assert_eq(d.n, 2);
	cr_assert_eq(p.dim, 2);
	cr_assert_not_null(d.x, "CSV is kept dense");
	cr_assert_float_eq(d.x[0], 1.5, 1e-7);
	cr_assert_float_eq(d.x[3], -100, 1e-7);
	cr_assert_eq(p.labels[0], 7);
	cr_assert_eq(p.labels[1], 9);
	cr_assert_eq(data_load_test(&s, &p, 0, &t, &err), PX_OK, "%s",
		     err.msg);
	cr_assert_eq(t.n, 1);
	cr_assert_eq(t.y[0], 1);
	cr_assert_float_eq(t.x[1], 4, 1e-7);
	data_release(&t);
	data_release(&d);
	data_prep_release(&p);
}

/* An IDX pair: 3 images of 2 x 2, labels 4, 2, 4. */
static const char *idx_pair(const char *prefix)
{
	static const uint8_t img[] = {
		0, 0, 8, 3, 0, 0, 0, 3, 0, 0, 0, 2, 0, 0, 0, 2,
		0, 255, 0, 0, 1, 2, 3, 4, 255, 255, 255, 255,
	};
	static const uint8_t lab[] = { 0, 0, 8, 1, 0, 0, 0, 3, 4, 2, 4 };
	char a[128], b[128];
	const char *p;

	snprintf(a, sizeof a, "%s-images-idx3-ubyte.gz", prefix);
	snprintf(b, sizeof b, "%s-labels-idx1-ubyte.gz", prefix);
	file(b, (const char *)lab, sizeof lab);
	p = file(a, (const char *)img, sizeof img);
	return p;
}

Test(trainer_dataset, idx_images_name_their_labels_file)
{
	char lab[600];
	struct data_spec s = { 0 };
	struct data_set d = { 0 };
	struct data_prep p;
	struct px_error err = { 0 };
	enum data_format f;

	s.train = idx_pair("x");
	cr_assert_eq(data_format_of(s.train, &f, &err), PX_OK, "%s", err.msg);
	cr_assert_eq(f, DATA_FMT_IDX);
	cr_assert_eq(data_idx_labels_path("/d/train-images-idx3-ubyte.gz",
					  lab, sizeof lab, &err), PX_OK);
	cr_assert_str_eq(lab, "/d/train-labels-idx1-ubyte.gz");
	cr_assert_eq(data_load_train(&s, 0, &d, &p, &err), PX_OK, "%s",
		     err.msg);
	cr_assert_eq(d.n, 3);
	cr_assert_eq(p.dim, 4);
	cr_assert_eq(p.n_classes, 2);
	cr_assert_eq(p.labels[0], 2);
	cr_assert_eq(p.labels[1], 4);
	cr_assert_eq(d.y[0], 1);
	cr_assert_eq(d.y[1], 0);
	cr_assert_not_null(d.xb);
	data_release(&d);
	data_prep_release(&p);
	cr_assert_eq(data_idx_labels_path("/d/train-idx3-ubyte", lab,
					  sizeof lab, &err), PX_EINVAL);
	cr_assert(strstr(err.msg, "images"), "%s", err.msg);
}

Test(trainer_dataset, formats_from_names)
{
	enum data_format f;
	struct px_error err = { 0 };

	cr_assert_eq(data_format_of("a/b.svm.gz", &f, NULL), PX_OK);
	cr_assert_eq(f, DATA_FMT_LIBSVM);
	cr_assert_eq(data_format_of("b.csv", &f, NULL), PX_OK);
	cr_assert_eq(f, DATA_FMT_CSV);
	cr_assert_eq(data_format_of("b.txt", &f, &err), PX_EINVAL);
	cr_assert(strstr(err.msg, "'b.txt'") &&
		  strstr(err.msg, "--data-format"), "%s", err.msg);
	cr_assert_eq(data_format_parse("libsvm", &f, NULL), PX_OK);
	cr_assert_eq(data_format_parse("arff", &f, &err), PX_EINVAL);
}

/* A training file of text and the error its load gives. */
static const char *load_err(const char *name, const char *text,
			    enum px_err want)
{
	static struct px_error err;
	struct data_spec s = { .train = text_file(name, text) };
	struct data_set d = { 0 };
	struct data_prep p = { 0 };
	enum px_err e;

	memset(&err, 0, sizeof err);
	e = data_load_train(&s, 0, &d, &p, &err);
	cr_assert_eq(e, want, "%s: %d, not %d: %s", name, e, want, err.msg);
	data_release(&d);
	data_prep_release(&p);
	/* the message names the file first */
	cr_assert(strstr(err.msg, tmp), "%s", err.msg);
	return strstr(err.msg, name);
}

#define BAD(name, text, code, want)                                       \
	do {                                                              \
		const char *m_ = load_err(name, text, code);              \
		cr_assert(m_ && strstr(m_, want), "%s: want '%s' in '%s'", \
			  name, want, m_ ? m_ : "(no file name)");        \
	} while (0)

Test(trainer_dataset, bad_libsvm_says_file_line_and_field)
{
	BAD("i0.svm", "1 1:1\n1 0:2\n", PX_EINVAL,
	    "i0.svm:2: field 2: index 0 (indices start at 1)");
	BAD("inc.svm", "1 1:1\n2 3:1 2:1\n", PX_EINVAL,
	    "inc.svm:2: field 3: index 2 after 3 (indices must increase)");
	BAD("dup.svm", "1 1:1 1:2\n", PX_EINVAL,
	    "dup.svm:1: field 3: index 1 after 1");
	BAD("lab.svm", "1 1:1\nyes 1:1\n", PX_EINVAL,
	    "lab.svm:2: field 1 (label): 'yes' is not an integer");
	BAD("labf.svm", "1.5 1:1\n", PX_EINVAL,
	    "labf.svm:1: field 1 (label): '1.5' is not an integer");
	BAD("lab64.svm", "4294967296 1:1\n", PX_EINVAL,
	    "lab64.svm:1: field 1 (label)");
	BAD("num.svm", "1 1:1\n0 1:1 2:abc\n", PX_EINVAL,
	    "num.svm:2: field 3 (index 2): value 'abc': not a number");
	BAD("nan.svm", "1 1:nan\n", PX_EINVAL,
	    "nan.svm:1: field 2 (index 1): value 'nan': not a finite number");
	BAD("inf.svm", "1 1:1\n2 1:-inf\n", PX_EINVAL,
	    "inf.svm:2: field 2 (index 1): value '-inf': not a finite");
	BAD("big.svm", "1 1:1e39\n", PX_EINVAL,
	    "big.svm:1: field 2 (index 1): value '1e39': out of a float");
	BAD("wide.svm", "1 1048577:1\n", PX_EINVAL,
	    "wide.svm:1: field 2: index '1048577' is not a whole number in "
	    "1..1048576");
	BAD("pair.svm", "1 1:1 7\n", PX_EINVAL,
	    "pair.svm:1: field 3: '7' is not index:value");
	BAD("empty.svm", "", PX_EINVAL, "empty.svm: no rows (an empty file)");
	BAD("blank.svm", "\n# only a comment\n", PX_EINVAL,
	    "blank.svm: no rows");
	BAD("one.svm", "1 1:1\n1 2:1\n", PX_EINVAL,
	    "one.svm: every one of its 2 rows has label 1");
	BAD("zero.svm", "1\n2\n", PX_EINVAL, "zero.svm: no feature");
}

Test(trainer_dataset, bad_csv_says_file_line_and_field)
{
	BAD("rag.csv", "1,2,3\n0,1\n", PX_EINVAL,
	    "rag.csv:2: 2 fields, the first line has 3 (a ragged CSV)");
	BAD("rag2.csv", "a,b\n1,2\n0,1,2\n", PX_EINVAL,
	    "rag2.csv:3: 3 fields, the first line has 2");
	BAD("nn.csv", "1,2\n0,x2\n", PX_EINVAL,
	    "nn.csv:2: field 2: 'x2': not a number");
	BAD("emp.csv", "1,2,3\n0,,3\n", PX_EINVAL,
	    "emp.csv:2: field 2: '': empty, not a number");
	BAD("nan.csv", "1,2\n0,NaN\n", PX_EINVAL,
	    "nan.csv:2: field 2: 'NaN': not a finite number");
	BAD("hdr.csv", "label,2,3\n1,2,3\n", PX_EINVAL,
	    "hdr.csv:1: field 1: 'label' is not a number, and a header");
	BAD("labc.csv", "1,2\n0.5,1\n", PX_EINVAL,
	    "labc.csv:2: field 1 (label): '0.5' is not an integer");
	BAD("col.csv", "1\n2\n", PX_EINVAL, "col.csv:1: 1 field");
	BAD("none.csv", "a,b\n", PX_EINVAL, "none.csv: no rows");
}

Test(trainer_dataset, a_line_over_the_bound_is_refused)
{
	size_t n = DATA_LINE_MAX + 10;
	char *t = malloc(n + 2);

	cr_assert_not_null(t);
	memcpy(t, "1 1:1\n2 1:", 10);
	memset(t + 10, '1', n - 10);
	t[n] = '\n';
	t[n + 1] = '\0';
	BAD("long.svm", t, PX_ETOOBIG,
	    "long.svm:2: a line longer than 1048576 bytes");
	free(t);
}

/* path grown to size bytes with a hole (NUL bytes, no block written) */
static void nul_tail(const char *path, off_t size)
{
	int fd = open(path, O_WRONLY);

	cr_assert_geq(fd, 0);
	cr_assert_eq(ftruncate(fd, size), 0, "%s", strerror(errno));
	close(fd);
}

/* This process's bytes read so far (read(2) and the like). */
static uint64_t bytes_read(void)
{
	unsigned long long v = 0;
	char line[128];
	FILE *f = fopen("/proc/self/io", "r");

	cr_assert_not_null(f);
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "rchar: %llu", &v) == 1)
			break;
	fclose(f);
	return v;
}

/* NUL bytes in a text file: bad input naming file:line, and counted
 * toward the check's bound.  A 4 GiB sparse file (no text at all) is
 * refused by the check at its first line, having read less than the
 * bound, not read whole and called empty; a valid file with a NUL tail
 * is refused by the loader (and by the check), naming the line after
 * the last row; CSV alike. */
Test(trainer_dataset, nul_bytes_are_refused_and_bounded)
{
	struct data_spec s = { 0 };
	struct data_set d = { 0 };
	struct data_prep p = { 0 };
	struct px_error err = { 0 };
	bool whole = true;
	uint64_t before;

	s.train = s.test = text_file("sparse.svm", "");
	nul_tail(s.train, (off_t)4 << 30);
	before = bytes_read();
	cr_assert_eq(data_check(&s, &whole, &err), PX_EINVAL);
	cr_assert_lt(bytes_read() - before, DATA_CHECK_BYTES, "read %llu",
		     (unsigned long long)(bytes_read() - before));
	cr_assert(strstr(err.msg, "sparse.svm:1: a NUL byte (at byte 1 of "
			 "the line)"), "%s", err.msg);

	s.train = s.test = text_file("tail.svm", svm_train);
	nul_tail(s.train, (off_t)strlen(svm_train) + (8 << 20));
	cr_assert_eq(data_load_train(&s, 0, &d, &p, &err), PX_EINVAL);
	cr_assert(strstr(err.msg, "tail.svm:7: a NUL byte"), "%s", err.msg);
	data_release(&d);
	data_prep_release(&p);
	cr_assert_eq(data_check(&s, &whole, &err), PX_EINVAL);
	cr_assert(strstr(err.msg, "tail.svm:7: a NUL byte"), "%s", err.msg);

	s.train = s.test = file("mid.csv", "0,1,2\n1,2\0003\n", 12);
	cr_assert_eq(data_load_train(&s, 0, &d, &p, &err), PX_EINVAL);
	cr_assert(strstr(err.msg, "mid.csv:2: a NUL byte (at byte 4 of the "
			 "line)"), "%s", err.msg);
	data_release(&d);
	data_prep_release(&p);
}

Test(trainer_dataset, more_labels_than_classes_are_refused)
{
	char *t = malloc(300 * 16);
	size_t k = 0;

	cr_assert_not_null(t);
	for (int i = 0; i < 300; i++)
		k += (size_t)sprintf(t + k, "%d 1:1\n", i * 3);
	BAD("many.svm", t, PX_ETOOBIG,
	    "many.svm:257: label 768 is a 257th distinct label");
	free(t);
}

/* The test set against the training set's labels and width. */
Test(trainer_dataset, the_test_set_is_held_to_the_training_set)
{
	struct data_spec s = { .train = text_file("tr.svm", "-1 1:1\n1 2:1\n"),
			       .test = text_file("te.svm", "1 1:1\n5 2:1\n") };
	struct data_spec c = { .train = text_file("tr.csv", "0,1,2\n1,2,3\n"),
			       .test = text_file("te.csv", "0,1,2,3\n") };
	struct data_set d = { 0 }, t = { 0 };
	struct data_prep p;
	struct px_error err = { 0 };

	cr_assert_eq(data_load_train(&s, 0, &d, &p, &err), PX_OK);
	cr_assert_eq(data_load_test(&s, &p, 0, &t, &err), PX_EINVAL);
	cr_assert(strstr(err.msg, "te.svm:2: label 5 is not one of the "
			 "training set's 2 (-1 to 1)"), "%s", err.msg);
	s.test = text_file("te.svm", "1 1:1 3:1\n");
	cr_assert_eq(data_load_test(&s, &p, 0, &t, &err), PX_EINVAL);
	cr_assert(strstr(err.msg, "te.svm:1: field 3: index 3 is beyond the "
			 "training set's 2 features"), "%s", err.msg);
	data_release(&d);
	data_prep_release(&p);
	cr_assert_eq(data_load_train(&c, 0, &d, &p, &err), PX_OK);
	cr_assert_eq(data_load_test(&c, &p, 0, &t, &err), PX_EINVAL);
	cr_assert(strstr(err.msg, "te.csv:1: 3 features, the training set "
			 "has 2"), "%s", err.msg);
	data_release(&d);
	data_prep_release(&p);
	/* data_check finds the same, both files read whole */
	{
		bool whole = false;

		cr_assert_eq(data_check(&c, &whole, &err), PX_EINVAL);
		cr_assert(strstr(err.msg, "te.csv:1: 3 features"), "%s",
			  err.msg);
		c.test = text_file("te.csv", "0,1,2\n");
		cr_assert_eq(data_check(&c, &whole, &err), PX_OK, "%s",
			     err.msg);
		cr_assert(whole);
	}
}

/* A model of the user's data keeps its labels and scaling: written,
 * read back the same; a job of other data does not resume it. */
Test(trainer_dataset, checkpoints_keep_the_labels_and_the_scaling)
{
	struct data_spec s = {
		.train = text_file("c.csv", "-3,1,5\n8,3,5\n2,0,1\n"),
		.scale = DATA_SCALE_STANDARD,
	};
	struct data_set d = { 0 };
	struct data_prep p;
	struct ckpt_meta m = { 0 }, r;
	struct px_error err = { 0 };
	char path[600];
	float w[3 * 2 + 3] = { 0 }, v[9] = { 0 }, *rw, *rv;

	cr_assert_eq(data_load_train(&s, 0, &d, &p, &err), PX_OK, "%s",
		     err.msg);
	cr_assert_eq(model_desc_init(&m.d, MODEL_MLR, p.dim, p.n_classes,
				     NULL, 0, &err), PX_OK, "%s", err.msg);
	m.total = 10;
	m.workers = m.batch = m.epochs = 1;
	m.n_train = 3;
	m.test_accuracy = NAN;
	m.prep = p;
	snprintf(path, sizeof path, "%s/m.pxc", tmp);
	cr_assert_eq(ckpt_write(path, &m, w, v, &err), PX_OK, "%s", err.msg);
	cr_assert_eq(ckpt_read(path, &r, &rw, &rv, &err), PX_OK, "%s",
		     err.msg);
	cr_assert(data_prep_equal(&r.prep, &p));
	cr_assert_eq(r.prep.labels[0], -3);
	cr_assert_eq(r.prep.labels[2], 8);
	cr_assert_eq(ckpt_check_job(path, &r, &m, &err), PX_OK, "%s",
		     err.msg);
	m.prep.mean = NULL;
	cr_assert_eq(ckpt_check_job(path, &r, &m, &err), PX_EINVAL);
	cr_assert(strstr(err.msg, "other data"), "%s", err.msg);
	free(rw);
	free(rv);
	data_prep_release(&r.prep);
	data_prep_release(&p);
	data_release(&d);
}

/* A LIBSVM (or CSV, with a header) text of n rows over 7 features, with
 * comments and blank lines between some (malloc'd). */
static char *rows_text(uint32_t n, bool csv)
{
	size_t cap = (size_t)n * 120 + 64, len = 0;
	char *t = malloc(cap);

	cr_assert_not_null(t);
	if (csv)
		len += (size_t)snprintf(t, cap, "y,a,b,c,d,e,f,g\n");
	for (uint32_t i = 0; i < n; i++) {
		if (!csv && i % 97 == 0)
			len += (size_t)snprintf(t + len, cap - len,
						"# comment\n\n");
		len += (size_t)snprintf(t + len, cap - len, "%u", i % 3);
		for (uint32_t j = 0; j < 7; j++) {
			unsigned v = (i * 7 + j * 13) % 11;

			if (csv)
				len += (size_t)snprintf(t + len, cap - len,
							",%u", v);
			else if (v > 5)
				len += (size_t)snprintf(t + len, cap - len,
							" %u:%u", j + 1, v);
		}
		t[len++] = '\n';
	}
	t[len] = '\0';
	return t;
}

enum { WN = 3000, WLO = 1100, WHI = 2950 };

/* A window (win, from whole's file, ~100 rows' bytes a chunk) over rows
 * [lo, hi) gives what the whole load gives for every row of the range
 * (dense and, when sparse, sparse), reading chunk after chunk; a row
 * outside the range is refused.  Releases both. */
static void window_serves_its_range(struct data_set *whole,
				    struct data_set *win, bool sparse)
{
	struct px_error err = { 0 };
	struct data_csr xs = { 0 };
	static uint32_t idx[WHI - WLO];
	static float xw[(WHI - WLO) * 7], xv[(WHI - WLO) * 7];
	static uint8_t yw[WHI - WLO], yv[WHI - WLO];

	cr_assert_eq(win->n, WN);
	cr_assert_eq(whole->n, WN);
	cr_assert_eq(win->dim, 7);
	cr_assert_not_null(win->win);
	data_window_range(win, WLO, WHI, 64);
	cr_assert(win->win->chunk >= 64 && win->win->chunk < 200,
		  "chunk %u", win->win->chunk);
	data_shuffle_chunked(idx, WHI - WLO, WLO, win->win->chunk, 7);
	data_gather(whole, idx, WHI - WLO, xw, yw);
	cr_assert_eq(data_batch_gather(win, idx, WHI - WLO, xv, NULL, yv,
				       &err), PX_OK, "%s", err.msg);
	cr_assert_eq(memcmp(xw, xv, sizeof(xw)), 0);
	cr_assert_eq(memcmp(yw, yv, sizeof(yw)), 0);
	/* each chunk read once: the shuffle keeps a chunk's rows together */
	cr_assert_eq(win->win->reads, (WHI - WLO + win->win->chunk - 1) /
				      win->win->chunk);
	cr_assert_leq(win->win->max_held, win->win->chunk);
	if (sparse) {
		cr_assert_eq(data_batch_gather(win, idx, 200, NULL, &xs, yv,
					       &err), PX_OK, "%s", err.msg);
		cr_assert_eq(xs.csr.n, 200);
		for (uint32_t i = 0; i < 200; i++) {
			uint32_t r = idx[i];

			cr_assert_eq(xs.csr.rp[i + 1] - xs.csr.rp[i],
				     whole->rp[r + 1] - whole->rp[r]);
			cr_assert_eq(memcmp(xs.csr.ci + xs.csr.rp[i],
					    whole->ci + whole->rp[r],
					    (whole->rp[r + 1] - whole->rp[r]) *
					    4), 0);
		}
		cr_assert_float_eq(data_density(win), data_density(whole),
				   1e-12);
		data_csr_free(&xs);
	} else {
		cr_assert_not_null(data_csr_refused(win));
	}
	idx[0] = WLO - 1;
	cr_assert_eq(data_batch_gather(win, idx, 1, xv, NULL, yv, &err),
		     PX_EINVAL);
	data_release(win);
	data_release(whole);
}

/* A text file's window matches its whole load. */
static void window_matches_load(const char *name, bool csv)
{
	char *text = rows_text(WN, csv);
	struct data_spec s = { .train = file(name, text, strlen(text)) };
	struct data_set whole, win;
	struct data_prep p, q;
	struct px_error err = { 0 };

	free(text);
	cr_assert_eq(data_load_train(&s, 0, &whole, &p, &err), PX_OK, "%s",
		     err.msg);
	/* ~100 rows' bytes held at a time */
	cr_assert_eq(data_window_open(&s, 0, 100 * (csv ? 33 : 45), &win, &q,
				      &err), PX_OK, "%s", err.msg);
	cr_assert(data_prep_equal(&p, &q));
	window_serves_its_range(&whole, &win, !csv);
	data_prep_release(&p);
	data_prep_release(&q);
}

Test(trainer_dataset, a_window_reads_its_rows_only_in_chunks)
{
	window_matches_load("w.svm", false);
	window_matches_load("w.svm.gz", false);
	window_matches_load("w.csv", true);
}

/* An IDX pair in tmp, prefix-images-idx3-ubyte and its labels file
 * (name ends in ".gz": gzip): n_img images of 1 x 7 (byte j of item i
 * (i * 7 + j) * 37 % 256), `cut` bytes of them left out, and n_lab
 * labels, item i's labs[i % n_labs] (but item bad_at's, 1-based: 200).
 * The images file's path and (lab) the labels', static. */
struct idx_gen {
	uint32_t n_img, n_lab, magic; /* magic 0: 0x803 */
	size_t cut;
	const uint8_t *labs;
	uint32_t n_labs, bad_at;
};

static void put32(uint8_t *b, uint32_t v)
{
	b[0] = (uint8_t)(v >> 24);
	b[1] = (uint8_t)(v >> 16);
	b[2] = (uint8_t)(v >> 8);
	b[3] = (uint8_t)v;
}

static const char *idx_set(const char *prefix, const char *gz,
			   const struct idx_gen *g, const char **lab)
{
	static char ip[512], lp[512];
	size_t ni = 16 + (size_t)g->n_img * 7, nl = 8 + g->n_lab;
	uint8_t *b = malloc(ni > nl ? ni : nl);
	char name[128];

	cr_assert_not_null(b);
	b[0] = b[1] = 0;
	b[2] = 8;
	b[3] = 3;
	if (g->magic)
		put32(b, g->magic);
	put32(b + 4, g->n_img);
	put32(b + 8, 1);
	put32(b + 12, 7);
	for (size_t i = 16; i < ni; i++)
		b[i] = (uint8_t)((i - 16) * 37 % 256);
	snprintf(name, sizeof name, "%s-images-idx3-ubyte%s", prefix, gz);
	snprintf(ip, sizeof ip, "%s", file(name, (const char *)b,
					   ni - g->cut));
	put32(b, 0x801);
	put32(b + 4, g->n_lab);
	for (uint32_t i = 0; i < g->n_lab; i++)
		b[8 + i] = i + 1 == g->bad_at ? 200 : g->labs[i % g->n_labs];
	snprintf(name, sizeof name, "%s-labels-idx1-ubyte%s", prefix, gz);
	snprintf(lp, sizeof lp, "%s", file(name, (const char *)b, nl));
	free(b);
	if (lab)
		*lab = lp;
	return ip;
}

/* An IDX pair, plain and gzip, read in parts: its window gives the rows
 * of the whole load, both for the user's set (labels 3, 7, 9 mapped to
 * classes; the gzip one scaled, by the same sums) and for one whose labels are the classes (Fashion-MNIST's
 * loader, data_load); a chunk is a seek to its first item (plain) or a
 * pass to it (gzip). */
Test(trainer_dataset, an_idx_window_reads_its_rows_only_in_chunks)
{
	static const uint8_t user[] = { 9, 3, 7, 3 }, cls[] = { 2, 0, 1 };
	const char *gzs[] = { "", ".gz" }, *lab;

	for (int g = 0; g < 2; g++) {
		struct idx_gen gu = { .n_img = WN, .n_lab = WN, .labs = user,
				      .n_labs = 4 };
		struct idx_gen gc = { .n_img = WN, .n_lab = WN, .labs = cls,
				      .n_labs = 3 };
		struct data_spec s = { .train = idx_set("u", gzs[g], &gu,
							 NULL),
				       .scale = g ? DATA_SCALE_STANDARD
						  : DATA_SCALE_NONE };
		struct data_set whole, win;
		struct data_prep p, q;
		struct px_error err = { 0 };
		const char *img;

		cr_assert_eq(data_load_train(&s, 0, &whole, &p, &err), PX_OK,
			     "%s", err.msg);
		cr_assert_eq(data_window_open(&s, 0, 100 * 12, &win, &q, &err),
			     PX_OK, "%s", err.msg);
		cr_assert(data_prep_equal(&p, &q));
		cr_assert_eq(!q.mean, !g, "scaled (gzip) or not (plain)");
		cr_assert_eq(q.n_classes, 3);
		cr_assert_eq(q.labels[2], 9);
		cr_assert_eq(win.prep, &q);
		window_serves_its_range(&whole, &win, false);
		data_prep_release(&p);
		data_prep_release(&q);

		img = idx_set("c", gzs[g], &gc, &lab);
		cr_assert_eq(data_load(img, lab, 3, 0, &whole, &err), PX_OK,
			     "%s", err.msg);
		cr_assert_eq(data_window_open_idx(img, lab, 3, 0, 100 * 12,
						  &win, &err), PX_OK, "%s",
			     err.msg);
		cr_assert_null(win.prep);
		cr_assert_eq(win.n_classes, 3);
		window_serves_its_range(&whole, &win, false);
	}
}

/* The window's checked pass refuses what a whole load refuses, naming
 * the file and the field: images against labels, a cut images file, a
 * bad magic number, and (labels that are the classes) a label past them,
 * by its item. */
Test(trainer_dataset, a_bad_idx_pair_is_refused_naming_file_and_field)
{
	static const uint8_t cls[] = { 0, 1 };
	const struct {
		struct idx_gen g;
		const char *want;
		bool lab;          /* the labels file is named */
	} bad[] = {
		{ { 40, 39, 0, 0, cls, 2, 0 }, "39 labels for 40 images", true },
		{ { 40, 40, 0, 5, cls, 2, 0 }, "truncated", false },
		{ { 40, 40, 0x0c03, 0, cls, 2, 0 }, "bad magic", false },
		{ { 40, 40, 0, 0, cls, 2, 17 }, "item 17: label 200 is not "
		  "below 2", true },
	};
	const char *gzs[] = { "", ".gz" };

	for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++)
		for (int g = 0; g < 2; g++) {
			struct px_error err = { 0 };
			struct data_set d;
			struct data_prep p;
			const char *lab, *img = idx_set("b", gzs[g], &bad[k].g,
							&lab);
			struct data_spec s = { .train = img };
			const char *named = bad[k].lab ? lab : img;

			cr_assert_neq(data_window_open_idx(img, lab, 2, 0, 0,
							   &d, &err), PX_OK);
			cr_assert(strstr(err.msg, bad[k].want) &&
				  strstr(err.msg, named), "case %zu: %s", k,
				  err.msg);
			cr_assert_null(d.win);
			if (bad[k].g.bad_at) /* a label of the user's */
				continue;
			err = (struct px_error){ 0 };
			cr_assert_neq(data_window_open(&s, 0, 0, &d, &p, &err),
				      PX_OK, "case %zu", k);
			cr_assert(strstr(err.msg, bad[k].want) &&
				  strstr(err.msg, named), "case %zu: %s", k,
				  err.msg);
			err = (struct px_error){ 0 };
			cr_assert_neq(data_load_train(&s, 0, &d, &p, &err),
				      PX_OK);
			cr_assert(strstr(err.msg, bad[k].want), "case %zu: %s",
				  k, err.msg);
		}
}

Test(trainer_dataset, a_chunked_shuffle_is_a_permutation_by_chunks)
{
	enum { N = 1000, LO = 50, CH = 64 };
	static uint32_t idx[N], seen[N];
	uint32_t changes = 0, in_order = 0;

	data_shuffle_chunked(idx, N, LO, CH, 9);
	for (uint32_t i = 0; i < N; i++) {
		cr_assert(idx[i] >= LO && idx[i] < LO + N);
		cr_assert_eq(seen[idx[i] - LO]++, 0, "row %u twice", idx[i]);
		changes += i && (idx[i] - LO) / CH != (idx[i - 1] - LO) / CH;
		in_order += i && idx[i] == idx[i - 1] + 1;
	}
	/* each chunk's rows in one run: as many changes as chunks, less 1 */
	cr_assert_eq(changes, (N + CH - 1) / CH - 1);
	cr_assert_lt(in_order, N / 10, "rows not shuffled in their chunk");
}
