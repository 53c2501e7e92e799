/* test_trainer_data.c -- the IDX reader on generated files (good, gzip,
 * bad magic, truncated, oversized, missing, corrupt), partitioning,
 * shuffling, and the installed Fashion-MNIST when present. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "../../trainer/io/data.h"

static char tmpdir[64];

static void mk_tmp(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/px_data_XXXXXX");
	cr_assert_not_null(mkdtemp(tmpdir));
}

static void rm_tmp(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	cr_assert_eq(system(cmd), 0);
}

TestSuite(trainer_data, .init = mk_tmp, .fini = rm_tmp);

static void put_be32(uint8_t *b, uint32_t v)
{
	b[0] = v >> 24;
	b[1] = v >> 16;
	b[2] = v >> 8;
	b[3] = v;
}

/* Write an IDX file: magic, dims, then `have` payload bytes (value i % 251
 * for byte i, or labels i % 10 when label_mod).  Gzip when gz.  Returns
 * the path (static storage per call slot). */
static const char *write_idx(const char *name, bool gz, uint32_t magic,
			     const uint32_t *dims, int ndims, size_t have,
			     bool label_mod)
{
	static char paths[4][128];
	static int slot;
	char *path = paths[slot++ % 4];
	uint8_t hdr[20];
	size_t hn = 4 + 4 * (size_t)ndims;
	uint8_t *body = malloc(have ? have : 1);

	snprintf(path, 128, "%s/%s", tmpdir, name);
	put_be32(hdr, magic);
	for (int i = 0; i < ndims; i++)
		put_be32(hdr + 4 + 4 * i, dims[i]);
	for (size_t i = 0; i < have; i++)
		body[i] = label_mod ? i % 10 : i % 251;
	if (gz) {
		gzFile f = gzopen(path, "wb");

		cr_assert_not_null(f);
		cr_assert_eq(gzwrite(f, hdr, hn), (int)hn);
		if (have)
			cr_assert_eq(gzwrite(f, body, have), (int)have);
		cr_assert_eq(gzclose(f), Z_OK);
	} else {
		FILE *f = fopen(path, "wb");

		cr_assert_not_null(f);
		cr_assert_eq(fwrite(hdr, 1, hn, f), hn);
		cr_assert_eq(fwrite(body, 1, have, f), have);
		cr_assert_eq(fclose(f), 0);
	}
	free(body);
	return path;
}

Test(trainer_data, idx_reads_plain_and_gzip)
{
	const uint32_t dims[3] = { 5, 3, 4 };

	for (int gz = 0; gz < 2; gz++) {
		const char *p = write_idx("img", gz, 0x803, dims, 3, 60, false);
		uint8_t *data = NULL;
		uint32_t items = 0, ib = 0;
		struct px_error err = { 0 };

		cr_assert_eq(data_idx_read(p, 3, 0, &data, &items, &ib, &err),
			     PX_OK, "%s", err.msg);
		cr_assert_eq(items, 5);
		cr_assert_eq(ib, 12);
		for (int i = 0; i < 60; i++)
			cr_assert_eq(data[i], i % 251);
		free(data);
		/* max_items reads a prefix */
		cr_assert_eq(data_idx_read(p, 3, 2, &data, &items, &ib, &err),
			     PX_OK);
		cr_assert_eq(items, 2);
		cr_assert_eq(data[23], 23);
		free(data);
	}
}

static void idx_bad(const char *p, uint32_t ndims, enum px_err want,
		    const char *needle)
{
	uint8_t *data = (uint8_t *)"untouched";
	uint32_t items = 77, ib = 77;
	struct px_error err = { 0 };

	cr_assert_eq(data_idx_read(p, ndims, 0, &data, &items, &ib, &err),
		     want, "'%s': got '%s'", needle, err.msg);
	cr_assert_eq(err.code, want);
	cr_assert(strstr(err.msg, p), "message '%s' does not name the file",
		  err.msg);
	cr_assert(strstr(err.msg, needle), "message '%s' lacks '%s'", err.msg,
		  needle);
	cr_assert_eq(items, 77, "items clobbered on error");
	cr_assert_str_eq((const char *)data, "untouched");
}

Test(trainer_data, idx_rejects_bad_files)
{
	const uint32_t d3[3] = { 5, 3, 4 }, d1[1] = { 5 };
	const uint32_t big[3] = { 5, 5000, 4 }, zero[3] = { 0, 3, 4 };
	const uint32_t many[3] = { 20000000, 1, 1 };
	const uint32_t huge[3] = { 9000000, 4096, 4096 };

	idx_bad(write_idx("m", true, 0x0d03, d3, 3, 60, false), 3,
		PX_EINVAL, "bad magic");
	idx_bad(write_idx("t", true, 0x0803, d3, 3, 60, false), 1, PX_EINVAL,
		"bad magic");
	idx_bad(write_idx("l", true, 0x0801, d1, 1, 5, false), 3, PX_EINVAL,
		"bad magic");
	idx_bad(write_idx("s", true, 0x0803, d3, 3, 59, false), 3, PX_EINVAL,
		"truncated");
	idx_bad(write_idx("h", false, 0x0803, d3, 2, 0, false), 3, PX_EINVAL,
		"truncated");
	idx_bad(write_idx("e", false, 0x0803, NULL, 0, 0, false), 3, PX_EINVAL,
		"truncated");
	idx_bad(write_idx("b", true, 0x0803, big, 3, 0, false), 3,
		PX_ETOOBIG, "dimension 1");
	idx_bad(write_idx("z", true, 0x0803, zero, 3, 0, false), 3,
		PX_ETOOBIG, "item count 0");
	idx_bad(write_idx("n", true, 0x0803, many, 3, 0, false), 3,
		PX_ETOOBIG, "item count");
	idx_bad(write_idx("g", true, 0x0803, huge, 3, 0, false), 3,
		PX_ETOOBIG, "byte bound");
}

Test(trainer_data, idx_missing_and_corrupt)
{
	char path[160];
	struct px_error err = { 0 };
	uint8_t *data;
	uint32_t items, ib;

	snprintf(path, sizeof(path), "%s/nope.gz", tmpdir);
	cr_assert_eq(data_idx_read(path, 1, 0, &data, &items, &ib, &err),
		     PX_ENOENT);
	cr_assert(strstr(err.msg, path), "%s", err.msg);

	/* flip bytes in the deflate stream of a valid gzip file */
	const uint32_t d1[1] = { 4000 };
	const char *p = write_idx("c", true, 0x0801, d1, 1, 4000, false);
	FILE *f = fopen(p, "r+b");

	cr_assert_not_null(f);
	fseek(f, 20, SEEK_SET);
	fputs("garbage garbage garbage", f);
	fclose(f);
	enum px_err r = data_idx_read(p, 1, 0, &data, &items, &ib, &err);

	cr_assert(r == PX_EIO || r == PX_EINVAL, "corrupt file read: %d", r);
	cr_assert(strstr(err.msg, p), "%s", err.msg);
}

Test(trainer_data, load_checks_labels)
{
	const uint32_t d3[3] = { 4, 2, 2 }, d1[1] = { 4 }, d1b[1] = { 3 };
	const char *img = write_idx("i", true, 0x0803, d3, 3, 16, false);
	const char *lab = write_idx("l", true, 0x0801, d1, 1, 4, true);
	struct data_set ds = { 0 };
	struct px_error err = { 0 };

	cr_assert_eq(data_load(img, lab, 10, 0, &ds, &err), PX_OK, "%s",
		     err.msg);
	cr_assert_eq(ds.n, 4);
	cr_assert_eq(ds.dim, 4);
	cr_assert_eq(ds.y[3], 3);
	cr_assert_null(ds.x, "kept as bytes");
	cr_assert_eq(ds.xb[5], 5);
	{
		/* gathered as floats: byte / 255, exactly as before */
		uint32_t idx[2] = { 1, 0 };
		float x[8];
		uint8_t y[2];

		data_gather(&ds, idx, 2, x, y);
		cr_assert_eq(x[1], 5.0f * (1.0f / 255.0f));
		cr_assert_eq(x[4], 0.0f);
		cr_assert_eq(y[0], 1);
		cr_assert_eq(y[1], 0);
	}
	data_release(&ds);
	data_release(&ds); /* twice is harmless */

	/* a label of 3 is out of range for 3 classes */
	cr_assert_eq(data_load(img, lab, 3, 0, &ds, &err), PX_EINVAL);
	cr_assert(strstr(err.msg, "label 3"), "%s", err.msg);
	/* 3 labels for 4 images */
	lab = write_idx("l3", true, 0x0801, d1b, 1, 3, true);
	cr_assert_eq(data_load(img, lab, 10, 0, &ds, &err), PX_EINVAL);
	cr_assert(strstr(err.msg, "3 labels for 4 images"), "%s", err.msg);
}

Test(trainer_data, partition_covers_evenly)
{
	struct px_error err = { 0 };
	uint32_t lo, hi;

	for (uint32_t n = 0; n < 40; n += 7)
		for (uint32_t parts = 1; parts <= 9; parts++) {
			uint32_t next = 0, mn = UINT32_MAX, mx = 0;

			for (uint32_t p = 0; p < parts; p++) {
				cr_assert_eq(data_partition(n, parts, p, &lo,
							    &hi, &err), PX_OK);
				cr_assert_eq(lo, next, "gap at part %u", p);
				next = hi;
				mn = hi - lo < mn ? hi - lo : mn;
				mx = hi - lo > mx ? hi - lo : mx;
			}
			cr_assert_eq(next, n);
			cr_assert_leq(mx - mn, 1, "n %u parts %u", n, parts);
		}
	cr_assert_eq(data_partition(10, 0, 0, &lo, &hi, &err), PX_EINVAL);
	cr_assert_eq(data_partition(10, 3, 3, &lo, &hi, &err), PX_EINVAL);
}

Test(trainer_data, shuffle_is_a_seeded_permutation)
{
	enum { N = 1000 };
	uint32_t a[N], b[N], seen[N] = { 0 };
	int moved = 0, same = 0;

	data_shuffle(a, N, 50, 9);
	data_shuffle(b, N, 50, 9);
	cr_assert_eq(memcmp(a, b, sizeof(a)), 0);
	for (int i = 0; i < N; i++) {
		cr_assert(a[i] >= 50 && a[i] < 50 + N);
		seen[a[i] - 50]++;
		moved += a[i] != (uint32_t)(50 + i);
	}
	for (int i = 0; i < N; i++)
		cr_assert_eq(seen[i], 1);
	cr_assert_gt(moved, N / 2);
	data_shuffle(b, N, 50, 10);
	for (int i = 0; i < N; i++)
		same += a[i] == b[i];
	cr_assert_lt(same, N / 10);
}

Test(trainer_data, gather_copies_rows)
{
	float x[3 * 2] = { 0, 1, 10, 11, 20, 21 }, bx[2 * 2];
	uint8_t y[3] = { 7, 8, 9 }, by[2];
	struct data_set ds = { .n = 3, .dim = 2, .n_classes = 10, .x = x,
			       .y = y };
	const uint32_t idx[2] = { 2, 0 };

	data_gather(&ds, idx, 2, bx, by);
	cr_assert_eq(bx[0], 20);
	cr_assert_eq(bx[1], 21);
	cr_assert_eq(bx[2], 0);
	cr_assert_eq(by[0], 9);
	cr_assert_eq(by[1], 7);
}

Test(trainer_data, fashion_mnist_installed)
{
	struct data_set ds = { 0 };
	struct px_error err = { 0 };
	char path[256];
	int counts[10] = { 0 };

	snprintf(path, sizeof(path), "%s/train-images-idx3-ubyte.gz",
		 DATA_FASHION_MNIST_DIR);
	if (access(path, R_OK) != 0)
		cr_skip_test("dataset-fashion-mnist is not installed");
	cr_assert_eq(data_load_fashion_mnist(NULL, false, 1000, &ds, &err),
		     PX_OK, "%s", err.msg);
	cr_assert_eq(ds.n, 1000);
	cr_assert_eq(ds.dim, 784);
	{
		float *x = malloc((size_t)ds.dim * sizeof(float));
		uint8_t y;

		for (uint32_t i = 0; i < ds.n; i++) {
			data_gather(&ds, &i, 1, x, &y);
			for (uint32_t j = 0; j < ds.dim; j++)
				cr_assert(x[j] >= 0.0f && x[j] <= 1.0f);
			cr_assert_eq(y, ds.y[i]);
		}
		free(x);
	}
	for (uint32_t i = 0; i < ds.n; i++)
		counts[ds.y[i]]++;
	for (int c = 0; c < 10; c++)
		cr_assert_gt(counts[c], 50, "class %d: %d", c, counts[c]);
	data_release(&ds);
}

Test(trainer_data, fashion_mnist_missing_dir_names_package)
{
	struct data_set ds = { 0 };
	struct px_error err = { 0 };

	cr_assert_eq(data_load_fashion_mnist(tmpdir, true, 10, &ds, &err),
		     PX_ENOENT);
	cr_assert(strstr(err.msg, "train-images-idx3-ubyte.gz"), "%s",
		  err.msg);
	cr_assert(strstr(err.msg, "dataset-fashion-mnist"), "%s", err.msg);
}
