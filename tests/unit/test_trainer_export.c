/* test_trainer_export.c -- the safetensors container and the model's
 * export: a round trip bit for bit (the trainer's [in, out] weights as
 * [out, in] tensors and back, the labels and scaling in the metadata),
 * the bytes the format fixes (length, '{', space padding to 8, contiguous
 * offsets in header order), the atomic write (mode 0644, no temporary
 * left, a directory or FIFO refused), and every malformed header
 * refused with the file and field named. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <endian.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../trainer/io/ckpt.h"
#include "../../trainer/io/export.h"
#include "../../trainer/io/safetensors.h"
#include "../integration/pxrun.h"

static char dir[64];
static char path[128];

static void mk_tmp(void)
{
	snprintf(dir, sizeof(dir), "/tmp/px_export_XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/m.safetensors", dir);
}

static void rm_tmp(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
}

TestSuite(trainer_export, .init = mk_tmp, .fini = rm_tmp);

/* A 5 -> 3 -> 4 MLP with labels -7, 0, 2, 9 and a scaling. */
static void model(struct model_desc *d, struct data_prep *p, float *w)
{
	static const uint32_t hidden[] = { 3 };
	static const int32_t labels[] = { -7, 0, 2, 9 };

	cr_assert_eq(model_desc_init(d, MODEL_MLP, 5, 4, hidden, 1, NULL),
		     PX_OK);
	for (size_t i = 0; i < d->n_params; i++)
		w[i] = (float)i * 0.37f - 4.1f;
	memset(p, 0, sizeof(*p));
	p->dim = 5;
	p->n_classes = 4;
	memcpy(p->labels, labels, sizeof(labels));
	p->mean = calloc(5, sizeof(float));
	p->std = calloc(5, sizeof(float));
	for (int i = 0; i < 5; i++) {
		p->mean[i] = 0.1f * (float)i - 1.0f / 3.0f;
		p->std[i] = 1.0f + 0.7f * (float)i;
	}
}

Test(trainer_export, round_trip_bit_for_bit_with_torch_names_and_shapes)
{
	struct model_desc d, d2;
	struct data_prep p, p2;
	struct st_file f;
	struct stat st;
	float w[64], *w2 = NULL;
	const struct st_tensor *t;
	struct px_error err = { 0 };
	struct dirent *e;
	DIR *dh;
	int files = 0;

	model(&d, &p, w);
	cr_assert_eq(export_write(path, &d, &p, w, 0.5, &err), PX_OK, "%s",
		     err.msg);
	/* names, shapes, [out, in]: element (o, i) of 0.weight is W[i, o] */
	cr_assert_eq(st_read(path, 1000, &f, &err), PX_OK, "%s", err.msg);
	cr_assert_eq(f.n, 4);
	t = st_find(&f, "0.weight");
	cr_assert_not_null(t);
	cr_assert_eq(t->ndim, 2);
	cr_assert_eq(t->shape[0], 3);
	cr_assert_eq(t->shape[1], 5);
	for (int o = 0; o < 3; o++)
		for (int i = 0; i < 5; i++)
			cr_assert_eq(t->data[o * 5 + i], w[i * 3 + o]);
	t = st_find(&f, "2.weight");
	cr_assert_not_null(t);
	cr_assert_eq(t->shape[0], 4);
	cr_assert_eq(t->shape[1], 3);
	cr_assert_eq(st_find(&f, "2.bias")->shape[0], 4);
	cr_assert_str_eq(st_meta(&f, "model"), "mlp");
	cr_assert_str_eq(st_meta(&f, "widths"), "[5,3,4]");
	cr_assert_str_eq(st_meta(&f, "labels"), "[-7,0,2,9]");
	cr_assert_str_eq(st_meta(&f, "scale"), "standard");
	cr_assert_str_eq(st_meta(&f, "format_version"), "1");
	st_file_release(&f);
	/* and back: the same parameters, labels and scaling, exactly */
	cr_assert_eq(export_load(path, &d2, &p2, &w2, &err), PX_OK, "%s",
		     err.msg);
	cr_assert_eq(d2.kind, MODEL_MLP);
	cr_assert_eq(d2.n_params, d.n_params);
	cr_assert_eq(memcmp(w2, w, d.n_params * sizeof(float)), 0);
	cr_assert(data_prep_equal(&p, &p2));
	/* mode 0644 less the umask; no temporary left */
	cr_assert_eq(stat(path, &st), 0);
	{
		mode_t um = umask(0);

		umask(um);
		cr_assert_eq(st.st_mode & 0777, 0644 & ~um, "mode %o",
			     st.st_mode & 0777);
	}
	dh = opendir(dir);
	while ((e = readdir(dh)))
		files += e->d_name[0] != '.';
	closedir(dh);
	cr_assert_eq(files, 1);
	free(w2);
	data_prep_release(&p);
	data_prep_release(&p2);
}

Test(trainer_export, the_bytes_are_the_formats)
{
	struct model_desc d;
	struct data_prep p = { 0 };
	struct px_error err = { 0 };
	float w[20];
	uint64_t n;
	size_t len;
	uint8_t *b;
	json_t *h, *v;
	const char *k;
	uint64_t at = 0;

	cr_assert_eq(model_desc_init(&d, MODEL_MLR, 4, 3, NULL, 0, NULL),
		     PX_OK);
	for (int i = 0; i < 15; i++)
		w[i] = (float)i;
	cr_assert_eq(export_write(path, &d, &p, w, NAN, &err), PX_OK);
	b = (uint8_t *)px_test_read_file(path, &len);
	cr_assert_not_null(b);
	memcpy(&n, b, 8);
	n = le64toh(n);
	cr_assert_eq(n % 8, 0, "header of %llu bytes", (unsigned long long)n);
	cr_assert_eq(b[8], '{');
	cr_assert_eq(len, 8 + n + 15 * 4);
	/* padding: spaces after the JSON, as the reference writer pads */
	for (size_t i = 8 + n - 1; b[i] != '}'; i--)
		cr_assert_eq(b[i], ' ');
	h = json_loadb((const char *)b + 8, n, 0, NULL);
	cr_assert_not_null(h);
	/* Fashion-MNIST's: labels are the classes, no scaling; no accuracy */
	v = json_object_get(h, "__metadata__");
	cr_assert_str_eq(json_string_value(json_object_get(v, "labels")),
			 "[0,1,2]");
	cr_assert_str_eq(json_string_value(json_object_get(v, "scale")),
			 "none");
	cr_assert_null(json_object_get(v, "test_accuracy"));
	/* contiguous, in header order: 0.weight then 0.bias */
	json_object_foreach(h, k, v) {
		json_t *o = json_object_get(v, "data_offsets");

		if (!strcmp(k, "__metadata__"))
			continue;
		cr_assert_str_eq(json_string_value(json_object_get(v, "dtype")),
				 "F32");
		cr_assert_eq(json_integer_value(json_array_get(o, 0)), at, "%s",
			     k);
		at = json_integer_value(json_array_get(o, 1));
	}
	cr_assert_eq(at, 15 * 4);
	/* little-endian float32: 0.weight[0][1] is W[1][0], w[1 * 3 + 0] */
	{
		uint32_t u;
		float f;

		memcpy(&u, b + 8 + n + 4, 4);
		u = le32toh(u);
		memcpy(&f, &u, 4);
		cr_assert_eq(f, 3.0f);
	}
	json_decref(h);
	free(b);
}

Test(trainer_export, a_directory_or_fifo_is_refused)
{
	struct model_desc d;
	struct data_prep p = { 0 };
	struct px_error err = { 0 };
	char fifo[160];
	float w[20] = { 0 }, *w2 = NULL;

	cr_assert_eq(model_desc_init(&d, MODEL_MLR, 4, 3, NULL, 0, NULL),
		     PX_OK);
	cr_assert_eq(st_check_writable(dir, &err), PX_EINVAL);
	cr_assert(strstr(err.msg, "a directory"), "%s", err.msg);
	cr_assert_eq(export_write(dir, &d, &p, w, NAN, &err), PX_EINVAL);
	snprintf(fifo, sizeof fifo, "%s/fifo", dir);
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	cr_assert_eq(export_write(fifo, &d, &p, w, NAN, &err), PX_EINVAL);
	cr_assert(strstr(err.msg, "a FIFO"), "%s", err.msg);
	/* and not read either: no hang on open */
	cr_assert_neq(export_load(fifo, &d, &p, &w2, &err), PX_OK);
	cr_assert_null(w2);
	cr_assert(strstr(err.msg, "not a regular file"), "%s", err.msg);
	cr_assert_eq(st_check_writable(path, &err), PX_OK, "%s", err.msg);
}

/* A file of header h (padded to 8 unless raw) and data bytes of data. */
static void put(const char *h, size_t data, bool raw)
{
	FILE *f = fopen(path, "wb");
	size_t n = strlen(h), pad = raw ? 0 : (8 - n % 8) % 8;
	uint64_t le = htole64(n + pad);

	cr_assert_not_null(f);
	fwrite(&le, 8, 1, f);
	fwrite(h, 1, n, f);
	for (size_t i = 0; i < pad; i++)
		fputc(' ', f);
	for (size_t i = 0; i < data; i++)
		fputc(0, f);
	fclose(f);
}

/* path refused (st_read, then export_load), the message naming the
 * file and holding want. */
static void refused(const char *want)
{
	struct px_error err = { 0 };
	struct model_desc d;
	struct data_prep p;
	struct st_file f;
	float *w = NULL;

	if (st_read(path, 1u << 20, &f, &err) == PX_OK) {
		st_file_release(&f);
		cr_assert_neq(export_load(path, &d, &p, &w, &err), PX_OK,
			      "accepted, wanted '%s'", want);
	}
	cr_assert(strstr(err.msg, path), "no file named: %s", err.msg);
	cr_assert(strstr(err.msg, want), "wanted '%s': %s", want, err.msg);
	cr_assert_null(w);
}

#define T(name, shape, b, e) \
	"\"" name "\":{\"dtype\":\"F32\",\"shape\":" shape \
	",\"data_offsets\":[" #b "," #e "]}"

Test(trainer_export, every_malformed_header_is_refused)
{
	FILE *f;
	uint64_t big = htole64(UINT64_C(1) << 40);

	/* shorter than the length; a length past the end; too large */
	f = fopen(path, "wb");
	fwrite("abc", 1, 3, f);
	fclose(f);
	refused("shorter than the header's 8-byte length");
	put("{}", 0, true);
	cr_assert_eq(truncate(path, 9), 0);
	refused("past the end of the file");
	f = fopen(path, "wb");
	fwrite(&big, 8, 1, f);
	fwrite("{}      ", 1, 8, f);
	fclose(f);
	refused("not in 2..100000000");
	/* not JSON; not beginning with '{'; not an object; duplicates */
	put("{\"a\":", 0, false);
	refused("header, byte");
	put(" {}", 0, false);
	refused("does not begin with '{'");
	put("{\"a\":1,\"a\":2}", 0, false);
	refused("header, byte");
	/* a tensor entry: not an object, dtype, shape, offsets, fields */
	put("{\"0.weight\":3}", 0, false);
	refused("tensor '0.weight': not an object");
	put("{\"0.weight\":{\"dtype\":\"F16\",\"shape\":[1],"
	    "\"data_offsets\":[0,2]}}", 2, false);
	refused("dtype 'F16': this reader takes F32 only");
	put("{\"0.weight\":{\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
	    false);
	refused("field 'dtype' missing");
	put("{" T("0.weight", "[-1]", 0, 4) "}", 4, false);
	refused("field 'shape[0]'");
	put("{" T("0.weight", "[1,2,3,4,5,6,7,8,9]", 0, 4) "}", 4, false);
	refused("field 'shape': not an array");
	put("{" T("0.weight", "[2]", 0, 4) "}", 4, false);
	refused("its shape makes 8");
	put("{" T("0.weight", "[1]", 4, 0) "}", 4, false);
	refused("field 'data_offsets': not [begin, end]");
	put("{\"0.weight\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":"
	    "[0,4],\"extra\":1}}", 4, false);
	refused("unknown field 'extra'");
	/* tiling: a gap, an overlap, bytes after, too few */
	put("{" T("0.weight", "[1]", 4, 8) "}", 8, false);
	refused("a gap");
	put("{" T("0.weight", "[2]", 0, 8) "," T("0.bias", "[1]", 4, 8) "}",
	    8, false);
	refused("an overlap");
	put("{" T("0.weight", "[1]", 0, 4) "}", 8, false);
	refused("bytes after the last");
	put("{" T("0.weight", "[2]", 0, 8) "}", 4, false);
	refused("truncated");
	/* metadata: not an object, a value not a string */
	put("{\"__metadata__\":[]}", 0, false);
	refused("'__metadata__': not an object");
	put("{\"__metadata__\":{\"scale\":1}}", 0, false);
	refused("'__metadata__.scale': not a string");
	/* a name over ST_NAME_MAX - 1 bytes */
	{
		char h[600], name[200];

		memset(name, 'x', 150);
		name[150] = '\0';
		snprintf(h, sizeof h, "{\"%s\":{\"dtype\":\"F32\",\"shape\":"
			 "[1],\"data_offsets\":[0,4]}}", name);
		put(h, 4, false);
		refused("a tensor's name of 150 bytes");
	}
}

Test(trainer_export, a_model_whose_shapes_do_not_chain_is_refused)
{
	/* the layers: a Linear's weight is [out, in], its bias [out], and
	 * layer l + 1 takes what layer l gives */
	put("{" T("1.weight", "[2,2]", 0, 16) "}", 16, false);
	refused("no tensor '0.weight'");
	put("{" T("0.weight", "[2,3]", 0, 24) "}", 24, false);
	refused("no tensor '0.bias' for '0.weight'");
	put("{" T("0.weight", "[2,3]", 0, 24) "," T("0.bias", "[3]", 24, 36)
	    "}", 36, false);
	refused("tensor '0.bias': not [2]");
	put("{" T("0.weight", "[6]", 0, 24) "}", 24, false);
	refused("not a Linear's weight");
	put("{" T("0.weight", "[4,3]", 0, 48) "," T("0.bias", "[4]", 48, 64)
	    "," T("2.weight", "[2,5]", 64, 104) "," T("2.bias", "[2]", 104, 112)
	    "}", 112, false);
	refused("the shapes do not chain: tensor '2.weight' takes 5 inputs, "
		"'0.weight' gives 4");
	put("{" T("0.weight", "[2,3]", 0, 24) "," T("0.bias", "[2]", 24, 32)
	    "," T("1.weight", "[2,2]", 32, 48) "}", 48, false);
	refused("tensor '1.weight' is not one of the 1 layers");
	/* the metadata against the tensors */
	put("{\"__metadata__\":{\"model\":\"mlp\"}," T("0.weight", "[2,3]", 0,
	    24) "," T("0.bias", "[2]", 24, 32) "}", 32, false);
	refused("metadata 'model' \"mlp\", but the tensors make 1 layers");
	put("{\"__metadata__\":{\"widths\":\"[3,3]\"}," T("0.weight", "[2,3]",
	    0, 24) "," T("0.bias", "[2]", 24, 32) "}", 32, false);
	refused("metadata 'widths' item 1 is 3, the tensors make 2");
	put("{\"__metadata__\":{\"labels\":\"[4,1]\"}," T("0.weight", "[2,3]",
	    0, 24) "," T("0.bias", "[2]", 24, 32) "}", 32, false);
	refused("metadata 'labels' item 1");
	put("{\"__metadata__\":{\"scale\":\"standard\"}," T("0.weight",
	    "[2,3]", 0, 24) "," T("0.bias", "[2]", 24, 32) "}", 32, false);
	refused("without 'scale_mean'");
	put("{\"__metadata__\":{\"format_version\":\"2\"}," T("0.weight",
	    "[2,3]", 0, 24) "," T("0.bias", "[2]", 24, 32) "}", 32, false);
	refused("'format_version' \"2\": this build reads 1");
	put("{" T("0.weight", "[1,3]", 0, 12) "," T("0.bias", "[1]", 12, 16)
	    "}", 16, false);
	refused("1 classes");
}

Test(trainer_export, a_plain_state_dict_loads_with_labels_as_classes)
{
	struct px_error err = { 0 };
	struct model_desc d;
	struct data_prep p;
	float *w = NULL;

	/* what torch's safetensors save_file writes for a Linear(3, 2):
	 * no metadata */
	put("{" T("0.bias", "[2]", 24, 32) "," T("0.weight", "[2,3]", 0, 24)
	    "}", 32, false);
	cr_assert_eq(export_load(path, &d, &p, &w, &err), PX_OK, "%s",
		     err.msg);
	cr_assert_eq(d.kind, MODEL_MLR);
	cr_assert_eq(d.n_in, 3);
	cr_assert_eq(d.n_out, 2);
	cr_assert_eq(p.labels[1], 1);
	cr_assert_null(p.mean);
	free(w);
}

Test(trainer_export, a_checkpoint_exports_and_loads)
{
	struct ckpt_meta m = { 0 };
	struct px_error err = { 0 };
	struct model_desc d;
	struct data_prep p;
	char ck[160];
	float w[64], v[64] = { 0 }, *w2 = NULL;

	snprintf(ck, sizeof ck, "%s/job.pxc", dir);
	model(&m.d, &m.prep, w);
	m.clock = 3;
	m.total = 10;
	m.workers = m.batch = m.epochs = 1;
	m.n_train = 8;
	m.test_accuracy = 0.75;
	cr_assert_eq(ckpt_write(ck, &m, w, v, &err), PX_OK, "%s", err.msg);
	/* predict reads a checkpoint as it is */
	cr_assert_eq(export_load(ck, &d, &p, &w2, &err), PX_OK, "%s",
		     err.msg);
	cr_assert_eq(memcmp(w2, w, d.n_params * sizeof(float)), 0);
	cr_assert(data_prep_equal(&p, &m.prep));
	free(w2);
	data_prep_release(&p);
	/* and exported: the same model in the safetensors file */
	cr_assert_eq(export_checkpoint(ck, path, &err), PX_OK, "%s", err.msg);
	cr_assert_eq(export_load(path, &d, &p, &w2, &err), PX_OK, "%s",
		     err.msg);
	cr_assert_eq(memcmp(w2, w, d.n_params * sizeof(float)), 0);
	cr_assert(data_prep_equal(&p, &m.prep));
	free(w2);
	data_prep_release(&p);
	data_prep_release(&m.prep);
}
