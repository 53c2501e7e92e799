/* test_trainer_mf_io.c -- a matrix factorization kept and taken away:
 * its checkpoint (ckpt.h: the shape in the header, no momentum, read back
 * bit for bit, a job of another shape or mean refused naming the field,
 * a bad 'ids' or 'mean' refused), its safetensors export (export.h: the
 * unseen rows zeros, predicting with no mask what the trainer predicts
 * with it; read back from the export and from the checkpoint; what is
 * wrong in a file named), which model a file holds, and "user,item"
 * lines for predict. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../../trainer/io/ckpt.h"
#include "../../trainer/io/export.h"
#include "../../trainer/io/ratings.h"
#include "../../trainer/io/safetensors.h"
#include "../integration/pxrun.h"

#define NU 6
#define NI 4
#define RK 3

static char *tmp;
static char ck[600], st[600];
static struct mf_desc d;
static float params[(NU + NI) * (RK + 1)];
static uint8_t seen[NU + NI];

static void setup(void)
{
	struct px_error err = { 0 };

	tmp = px_tmpdir();
	cr_assert_not_null(tmp);
	snprintf(ck, sizeof(ck), "%s/m.pxc", tmp);
	snprintf(st, sizeof(st), "%s/m.safetensors", tmp);
	cr_assert_eq(mf_desc_init(&d, NU, NI, RK, 3.25, &err), PX_OK);
	mf_init_params(&d, params, 11);
	for (size_t k = 0; k < d.n_params; k++)
		params[k] = params[k] * 7.0f + 0.01f * (float)k;
	/* user 2 and item 3 have no training rating */
	memset(seen, 1, sizeof(seen));
	seen[mf_user_row(&d, 2)] = 0;
	seen[mf_item_row(&d, 3)] = 0;
}

static void teardown(void)
{
	px_rmtree(tmp);
	free(tmp);
}

TestSuite(trainer_mf_io, .init = setup, .fini = teardown, .timeout = 30);

static struct ckpt_meta meta(void)
{
	struct ckpt_meta m = { .clock = 4, .total = 10, .workers = 2,
			       .batch = 8, .epochs = 5, .n_train = 40,
			       .samples = 16, .test_accuracy = 0.875,
			       .written_s = 1795000000 };

	ckpt_meta_mf(&m, &d);
	return m;
}

Test(trainer_mf_io, checkpoint_round_trip_without_momentum)
{
	struct px_error err = { 0 };
	struct ckpt_meta m = meta(), h;
	float *w, *v;
	struct stat sb;
	FILE *f;
	char line[4096];

	cr_assert_eq(ckpt_write(ck, &m, params, NULL, &err), PX_OK, "%s",
		     err.msg);
	f = fopen(ck, "r");
	cr_assert_not_null(f);
	cr_assert_not_null(fgets(line, sizeof(line), f));
	fclose(f);
	cr_assert_not_null(strstr(line, "\"model\":\"mf\",\"users\":6,"
				  "\"items\":4,\"rank\":3,\"mean\":3.25,"
				  "\"ids\":\"identity\",\"params\":40,"), "%s",
			   line);
	cr_assert_not_null(strstr(line, "\"test_rmse\":0.875"), "%s", line);
	cr_assert_null(strstr(line, "inputs"), "%s", line);
	/* header, parameters, SHA-256: no momentum */
	cr_assert_eq(stat(ck, &sb), 0);
	cr_assert_eq((size_t)sb.st_size, strlen(line) + 4 * d.n_params + 32);
	cr_assert_eq(ckpt_read(ck, &h, &w, &v, &err), PX_OK, "%s", err.msg);
	cr_assert_eq(h.d.kind, MODEL_MF);
	cr_assert_eq(h.d.n_params, d.n_params);
	cr_assert_eq(h.mf.n_users, NU);
	cr_assert_eq(h.mf.n_items, NI);
	cr_assert_eq(h.mf.rank, RK);
	cr_assert_eq(h.mf.row, RK + 1);
	cr_assert_eq(h.mf.mean, 3.25f);
	cr_assert_eq(h.clock, 4);
	cr_assert_eq(h.samples, 16);
	cr_assert_eq(h.test_accuracy, 0.875);
	cr_assert_eq(memcmp(w, params, sizeof(params)), 0);
	for (size_t k = 0; k < d.n_params; k++)
		cr_assert_eq(v[k], 0.0f);
	cr_assert_eq(ckpt_check_job(ck, &h, &m, &err), PX_OK, "%s", err.msg);
	free(w);
	free(v);
}

/* A job of another rank, other users, other ratings (their mean) or
 * another model: refused, naming the field and both values. */
Test(trainer_mf_io, checkpoint_of_another_shape_refused)
{
	struct px_error err = { 0 };
	struct ckpt_meta m = meta(), want;
	struct mf_desc o;
	static const uint32_t hidden[] = { 3 };

	want = m;
	cr_assert_eq(mf_desc_init(&o, NU, NI, RK + 1, 3.25, &err), PX_OK);
	ckpt_meta_mf(&want, &o);
	cr_assert_eq(ckpt_check_job(ck, &m, &want, &err), PX_EINVAL);
	cr_assert_not_null(strstr(err.msg, "3 factors a row (--rank), this "
				  "one has 4"), "%s", err.msg);
	cr_assert_eq(mf_desc_init(&o, NU + 1, NI, RK, 3.25, &err), PX_OK);
	ckpt_meta_mf(&want, &o);
	cr_assert_eq(ckpt_check_job(ck, &m, &want, &err), PX_EINVAL);
	cr_assert_not_null(strstr(err.msg, "6 users (mf"), "%s", err.msg);
	cr_assert_eq(mf_desc_init(&o, NU, NI, RK, 3.5, &err), PX_OK);
	ckpt_meta_mf(&want, &o);
	cr_assert_eq(ckpt_check_job(ck, &m, &want, &err), PX_EINVAL);
	cr_assert_not_null(strstr(err.msg, "mean 3.25, this one's have 3.5"),
			   "%s", err.msg);
	memset(&want.d, 0, sizeof(want.d));
	memset(&want.mf, 0, sizeof(want.mf));
	cr_assert_eq(model_desc_init(&want.d, MODEL_MLP, 5, 2, hidden, 1,
				     NULL), PX_OK);
	cr_assert_eq(ckpt_check_job(ck, &m, &want, &err), PX_EINVAL);
	cr_assert_not_null(strstr(err.msg, "is of an mf model, this job "
				  "trains an mlp"), "%s", err.msg);
}

/* The checkpoint with one header text replaced by another (same length
 * or not: the SHA-256 is of the whole, so the header is checked
 * first). */
static enum px_err edited(const char *from, const char *to,
			  struct px_error *err)
{
	struct ckpt_meta m = meta(), h;
	float *w = NULL, *v = NULL;
	char *buf, *at, path[700];
	size_t len, fl = strlen(from), tl = strlen(to);
	FILE *f;
	enum px_err e;

	cr_assert_eq(ckpt_write(ck, &m, params, NULL, err), PX_OK);
	f = fopen(ck, "rb");
	cr_assert_not_null(f);
	buf = malloc(1 << 16);
	len = fread(buf, 1, 1 << 16, f);
	fclose(f);
	at = memmem(buf, len, from, fl);
	cr_assert_not_null(at, "%s not in the header", from);
	snprintf(path, sizeof(path), "%s/edited.pxc", tmp);
	f = fopen(path, "wb");
	cr_assert_not_null(f);
	fwrite(buf, 1, (size_t)(at - buf), f);
	fwrite(to, 1, tl, f);
	fwrite(at + fl, 1, len - (size_t)(at - buf) - fl, f);
	fclose(f);
	free(buf);
	e = ckpt_read(path, &h, &w, &v, err);
	free(w);
	free(v);
	return e;
}

Test(trainer_mf_io, checkpoint_header_fields_named)
{
	struct px_error err = { 0 };

	cr_assert_eq(edited("\"ids\":\"identity\"", "\"ids\":\"hashed\"",
			    &err), PX_EINVAL);
	cr_assert_not_null(strstr(err.msg, "header field 'ids': not "
				  "\"identity\""), "%s", err.msg);
	cr_assert_eq(edited("\"mean\":3.25", "\"mean\":\"x\"", &err),
		     PX_EINVAL);
	cr_assert_not_null(strstr(err.msg, "header field 'mean'"), "%s",
			   err.msg);
	cr_assert_eq(edited("\"rank\":3", "\"rank\":0", &err), PX_EINVAL);
	cr_assert_not_null(strstr(err.msg, "header field 'rank'"), "%s",
			   err.msg);
	cr_assert_eq(edited("\"users\":6,", "", &err), PX_EINVAL);
	cr_assert_not_null(strstr(err.msg, "header field 'users' missing"),
			   "%s", err.msg);
	/* a shape that does not make 'params' */
	cr_assert_eq(edited("\"items\":4", "\"items\":5", &err), PX_EINVAL);
	cr_assert_not_null(strstr(err.msg, "'params': 40, but the model it "
				  "names has 44"), "%s", err.msg);
}

/* The export: unseen rows zeros; read back (from it and from a
 * checkpoint), every prediction with no mask is the trainer's with
 * it, ids past the model's included. */
Test(trainer_mf_io, export_round_trip_predicts_as_the_trainer)
{
	struct px_error err = { 0 };
	struct ckpt_meta m = meta();
	struct mf_desc d2;
	float *w = NULL, *wc = NULL;
	double rmse = 0;
	struct st_file f;
	const struct st_tensor *t;

	cr_assert_eq(export_mf_write(st, &d, params, seen, 0.5, &err), PX_OK,
		     "%s", err.msg);
	cr_assert_eq(st_read(st, 1000, &f, &err), PX_OK, "%s", err.msg);
	cr_assert_eq(f.n, 4);
	t = st_find(&f, "user_factors");
	cr_assert(t && t->ndim == 2 && t->shape[0] == NU && t->shape[1] == RK);
	t = st_find(&f, "item_bias");
	cr_assert(t && t->ndim == 1 && t->shape[0] == NI);
	cr_assert_str_eq(st_meta(&f, "global_mean"), "3.25");
	cr_assert_str_eq(st_meta(&f, "ids"), "identity");
	cr_assert_str_eq(st_meta(&f, "model"), "mf");
	cr_assert_str_eq(st_meta(&f, "test_rmse"), "0.500000");
	st_file_release(&f);

	cr_assert_eq(export_mf_load(st, &d2, &w, &rmse, &err), PX_OK, "%s",
		     err.msg);
	cr_assert_eq(d2.n_params, d.n_params);
	cr_assert_eq(d2.mean, d.mean);
	cr_assert_eq(rmse, 0.5);
	for (uint32_t j = 0; j <= RK; j++) {
		cr_assert_eq(w[mf_user_row(&d, 2) * d.row + j], 0.0f);
		cr_assert_eq(w[mf_item_row(&d, 3) * d.row + j], 0.0f);
		cr_assert_eq(w[mf_user_row(&d, 1) * d.row + j],
			     params[mf_user_row(&d, 1) * d.row + j]);
	}
	for (uint32_t u = 0; u < NU + 2; u++)
		for (uint32_t i = 0; i < NI + 2; i++)
			cr_assert_eq(mf_predict(&d2, w, NULL, u, i),
				     mf_predict(&d, params, seen, u, i),
				     "user %u item %u", u, i);
	/* a checkpoint (written zeroed, as the trainer writes one) too */
	mf_zero_unseen(&d, params, seen);
	cr_assert_eq(ckpt_write(ck, &m, params, NULL, &err), PX_OK);
	cr_assert_eq(export_mf_load(ck, &d2, &wc, &rmse, &err), PX_OK, "%s",
		     err.msg);
	cr_assert_eq(memcmp(w, wc, sizeof(params)), 0);
	cr_assert_eq(rmse, 0.875);
	cr_assert_eq(export_kind(ck), MODEL_MF);
	cr_assert_eq(export_kind(st), MODEL_MF);
	free(w);
	free(wc);
}

/* What a layered model's file is, and what is wrong in an mf one. */
Test(trainer_mf_io, other_and_bad_files_named)
{
	struct px_error err = { 0 };
	struct model_desc md;
	struct data_prep p = { 0 };
	struct st_tensor t[4];
	float z[64] = { 0 };
	struct mf_desc d2;
	float *w = NULL;
	double rmse;
	json_t *meta_ok;
	char mlp[700];

	cr_assert_eq(model_desc_init(&md, MODEL_MLR, 3, 2, NULL, 0, NULL),
		     PX_OK);
	snprintf(mlp, sizeof(mlp), "%s/mlr.safetensors", tmp);
	cr_assert_eq(export_write(mlp, &md, &p, z, NAN, &err), PX_OK);
	cr_assert_eq(export_kind(mlp), MODEL_MLP);
	cr_assert_eq(export_mf_load(mlp, &d2, &w, &rmse, &err), PX_EINVAL);
	cr_assert_not_null(strstr(err.msg, "no tensor 'user_factors'"), "%s",
			   err.msg);
	cr_assert_eq(export_kind("/nonexistent"), MODEL_MLP);

	/* item_bias of the wrong length; then no global_mean */
	memset(t, 0, sizeof(t));
	snprintf(t[0].name, sizeof(t[0].name), "user_factors");
	t[0].ndim = 2, t[0].shape[0] = 2, t[0].shape[1] = 2, t[0].n = 4;
	snprintf(t[1].name, sizeof(t[1].name), "item_factors");
	t[1].ndim = 2, t[1].shape[0] = 3, t[1].shape[1] = 2, t[1].n = 6;
	snprintf(t[2].name, sizeof(t[2].name), "user_bias");
	t[2].ndim = 1, t[2].shape[0] = 2, t[2].n = 2;
	snprintf(t[3].name, sizeof(t[3].name), "item_bias");
	t[3].ndim = 1, t[3].shape[0] = 2, t[3].n = 2;
	for (int k = 0; k < 4; k++)
		t[k].data = z;
	meta_ok = json_pack("{s:s}", "global_mean", "3");
	cr_assert_eq(st_write(st, t, 4, meta_ok, &err), PX_OK, "%s", err.msg);
	cr_assert_eq(export_mf_load(st, &d2, &w, &rmse, &err), PX_EINVAL);
	cr_assert_not_null(strstr(err.msg, "the shapes do not agree"), "%s",
			   err.msg);
	t[3].shape[0] = 3, t[3].n = 3;
	cr_assert_eq(st_write(st, t, 4, NULL, &err), PX_OK, "%s", err.msg);
	cr_assert_eq(export_mf_load(st, &d2, &w, &rmse, &err), PX_EINVAL);
	cr_assert_not_null(strstr(err.msg, "metadata 'global_mean' missing"),
			   "%s", err.msg);
	/* with it: a model of 2 users, 3 items, rank 2, written elsewhere */
	cr_assert_eq(st_write(st, t, 4, meta_ok, &err), PX_OK, "%s", err.msg);
	cr_assert_eq(export_mf_load(st, &d2, &w, &rmse, &err), PX_OK, "%s",
		     err.msg);
	cr_assert(d2.n_users == 2 && d2.n_items == 3 && d2.rank == 2);
	cr_assert(isnan(rmse));
	cr_assert_eq(mf_predict(&d2, w, NULL, 1, 2), 3.0f);
	free(w);
	json_decref(meta_ok);
}

Test(trainer_mf_io, pairs_without_ratings_for_predict)
{
	struct px_error err = { 0 };
	struct mf_set s;
	bool rated = true;
	char p[700];
	FILE *f;

	snprintf(p, sizeof(p), "%s/pairs.csv", tmp);
	f = fopen(p, "w");
	cr_assert_not_null(f);
	fputs("user,item\n1,2\n3,4\n", f);
	fclose(f);
	cr_assert_eq(mf_load_pairs(p, 0, &s, &rated, &err), PX_OK, "%s",
		     err.msg);
	cr_assert_not(rated);
	cr_assert_eq(s.n, 2);
	cr_assert(s.r[1].user == 3 && s.r[1].item == 4 && s.r[1].r == 0.0f);
	mf_set_release(&s);
	/* training data must have ratings */
	cr_assert_eq(mf_load(p, 0, &s, &err), PX_EINVAL);
	cr_assert_not_null(strstr(err.msg, "pairs.csv:2: 2 fields, not "
				  "user,item,rating"), "%s", err.msg);
	/* a rating on one line and not the next: refused */
	f = fopen(p, "w");
	cr_assert_not_null(f);
	fputs("1,2,3.5\n3,4\n", f);
	fclose(f);
	cr_assert_eq(mf_load_pairs(p, 0, &s, &rated, &err), PX_EINVAL);
	cr_assert_not_null(strstr(err.msg, "pairs.csv:2: 2 fields, the first "
				  "rating had 3"), "%s", err.msg);
}
