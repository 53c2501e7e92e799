/* test_trainer_mf.c -- matrix factorization (trainer/compute/mf.h): the ratings
 * reader (trainer/io/ratings.h; a good file in every accepted shape, each
 * kind of bad input refused naming file:line and the field), the model's
 * bounds, the
 * prediction of unseen users and items, the sparse minibatch gradient
 * against finite differences, and an update touching only its rows. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "../../trainer/compute/mf.h"
#include "../../trainer/io/ratings.h"
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

TestSuite(trainer_mf, .init = setup, .fini = teardown, .timeout = 30);

/* tmp/name holding text (gzip for a .gz name); the path, static. */
static const char *file(const char *name, const char *text)
{
	static char p[512];
	size_t len = strlen(text);

	snprintf(p, sizeof(p), "%s/%s", tmp, name);
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

Test(trainer_mf, reads_ratings_with_a_header_blanks_crlf_and_gzip)
{
	static const char *const names[] = { "r.csv", "r.csv.gz" };

	for (int k = 0; k < 2; k++) {
		struct px_error err = { 0 };
		struct mf_set s;
		const char *p = file(names[k], "user,item,rating\r\n"
				     "0,3,4.5\r\n\n  \n 7 , 1 ,-1\n2,0,2.5\n");

		cr_assert_eq(mf_load(p, 0, &s, &err), PX_OK, "%s", err.msg);
		cr_assert_eq(s.n, 3);
		cr_assert_eq(s.n_users, 8);
		cr_assert_eq(s.n_items, 4);
		cr_assert_eq(s.r[1].user, 7);
		cr_assert_eq(s.r[1].item, 1);
		cr_assert_float_eq(s.r[1].r, -1.0f, 0);
		cr_assert_float_eq(s.mean, 2.0, 1e-9);
		mf_set_release(&s);
	}
}

Test(trainer_mf, reads_movielens_timestamps_and_max_n)
{
	struct px_error err = { 0 };
	struct mf_set s;
	const char *p = file("ml.csv", "userId,movieId,rating,timestamp\n"
			     "1,31,2.5,1260759144\n1,1029,3.0,1260759179\n"
			     "2,10,4.0,835355493\n");

	cr_assert_eq(mf_load(p, 2, &s, &err), PX_OK, "%s", err.msg);
	cr_assert_eq(s.n, 2);
	cr_assert_eq(s.n_items, 1030);
	mf_set_release(&s);
}

/* text refused with an error holding each of the words */
static void refused(const char *text, const char *w1, const char *w2)
{
	struct px_error err = { 0 };
	struct mf_set s = { 0 };
	const char *p = file("bad.csv", text);

	cr_assert_neq(mf_load(p, 0, &s, &err), PX_OK, "accepted: %s", text);
	cr_assert_not_null(strstr(err.msg, w1), "'%s' not in: %s", w1,
			   err.msg);
	if (w2)
		cr_assert_not_null(strstr(err.msg, w2), "'%s' not in: %s", w2,
				   err.msg);
	cr_assert_null(s.r);
}

Test(trainer_mf, refuses_each_kind_of_bad_line_naming_file_line_field)
{
	refused("0,1,2\n0,1\n", "bad.csv:2:", "2 fields");
	refused("0,1,2,3,4,5\n", "bad.csv:1:", "5 fields");
	refused("0,1,2\n0,1,2,99\n", "bad.csv:2:", "the first rating had 3");
	refused("0,1,2\n1.5,1,2\n", "bad.csv:2: field 1 (user)", "'1.5'");
	refused("0,1,2\n-1,1,2\n", "bad.csv:2: field 1 (user)", "not an id");
	refused("0,1,2\n10000001,1,2\n", "bad.csv:2: field 1 (user)",
		"0..10000000");
	refused("u,i,r\n0,x,2\n", "bad.csv:2: field 2 (item)", "'x'");
	refused("0,,2\n", "bad.csv:1: field 2 (item)", NULL);
	refused("0,1,abc\n", "bad.csv:1: field 3 (rating)", "not a number");
	refused("0,1,nan\n", "bad.csv:1: field 3 (rating)", "finite");
	refused("0,1,\n", "bad.csv:1: field 3 (rating)", "empty");
	refused("0,1,2e7\n", "bad.csv:1: field 3 (rating)", "bound");
	refused("", "bad.csv: no ratings", NULL);
	refused("user,item,rating\n\n", "bad.csv: no ratings", NULL);
}

Test(trainer_mf, refuses_a_long_line_and_a_missing_file)
{
	struct px_error err = { 0 };
	struct mf_set s;
	char *big = malloc(10000);

	cr_assert_not_null(big);
	memset(big, '1', 9998);
	big[9998] = '\n';
	big[9999] = '\0';
	refused(big, "bad.csv:1:", "longer than");
	free(big);
	cr_assert_neq(mf_load("/nonexistent/r.csv", 0, &s, &err), PX_OK);
	cr_assert_not_null(strstr(err.msg, "/nonexistent/r.csv"), "%s",
			   err.msg);
}

/* NUL bytes are bad text: a sparse file of them (4 GiB, no ratings) is
 * refused at its first line by the check, not read whole as blank
 * lines; a NUL tail after good ratings is refused naming its line. */
Test(trainer_mf, refuses_nul_bytes_at_their_line)
{
	struct px_error err = { 0 };
	const char *p = file("sparse.csv", "");
	struct mf_set s;
	int fd = open(p, O_WRONLY);

	cr_assert_geq(fd, 0);
	cr_assert_eq(ftruncate(fd, (off_t)4 << 30), 0);
	close(fd);
	cr_assert_neq(mf_check(p, &err), PX_OK);
	cr_assert(strstr(err.msg, "sparse.csv:1: a NUL byte"), "%s", err.msg);
	p = file("tail.csv", "0,1,5\n1,0,3\n");
	fd = open(p, O_WRONLY);
	cr_assert_geq(fd, 0);
	cr_assert_eq(ftruncate(fd, 1 << 20), 0);
	close(fd);
	cr_assert_neq(mf_load(p, 0, &s, &err), PX_OK);
	cr_assert(strstr(err.msg, "tail.csv:3: a NUL byte"), "%s", err.msg);
}

Test(trainer_mf, bounds_the_model)
{
	struct px_error err = { 0 };
	struct mf_desc d;

	cr_assert_eq(mf_desc_init(&d, 10, 20, 0, 3.0, &err), PX_EINVAL);
	cr_assert_eq(mf_desc_init(&d, 10, 20, MF_MAX_RANK + 1, 3.0, &err),
		     PX_EINVAL);
	cr_assert_eq(mf_desc_init(&d, 0, 20, 4, 3.0, &err), PX_EINVAL);
	cr_assert_eq(mf_desc_init(&d, MF_MAX_ID + 1, MF_MAX_ID + 1, 64, 3.0,
				  &err), PX_ETOOBIG);
	cr_assert_not_null(strstr(err.msg, "parameters"), "%s", err.msg);
	cr_assert_eq(mf_desc_init(&d, 10, 20, 4, 3.0, &err), PX_OK);
	cr_assert_eq(d.row, 5);
	cr_assert_eq(d.n_params, 30 * 5);
	cr_assert_eq(mf_item_row(&d, 2), 12);
}

Test(trainer_mf, predicts_the_mean_for_unseen_users_and_items)
{
	struct px_error err = { 0 };
	struct mf_rating r[] = { { 0, 0, 4.0f }, { 1, 1, 2.0f } };
	struct mf_set tr = { .r = r, .n = 2, .n_users = 3, .n_items = 2,
			     .mean = 3.0 };
	struct mf_desc d;
	float params[(3 + 2) * 3];
	uint8_t seen[5];

	cr_assert_eq(mf_desc_init(&d, 3, 2, 2, tr.mean, &err), PX_OK);
	for (size_t k = 0; k < sizeof(params) / sizeof(*params); k++)
		params[k] = 0.5f;
	mf_mark_seen(&d, &tr, seen);
	cr_assert_eq(seen[2], 0); /* user 2: no rating */
	/* seen both: 3 + 0.5 + 0.5 + 2 * 0.25 */
	cr_assert_float_eq(mf_predict(&d, params, seen, 0, 1), 4.5f, 1e-6);
	/* user 2 unseen, user 9 past the model: the item's side alone */
	cr_assert_float_eq(mf_predict(&d, params, seen, 2, 1), 3.5f, 1e-6);
	cr_assert_float_eq(mf_predict(&d, params, seen, 9, 0), 3.5f, 1e-6);
	/* neither: the mean */
	cr_assert_float_eq(mf_predict(&d, params, seen, 9, 7), 3.0f, 1e-6);
}

/* A small model with random parameters and ratings. */
#define NU 7
#define NI 5
#define RK 3
#define NR 12

static void small(struct mf_desc *d, float *params, struct mf_set *s,
		  struct mf_rating *r)
{
	struct px_error err = { 0 };

	for (uint32_t k = 0; k < NR; k++)
		r[k] = (struct mf_rating){ (k * 3) % NU, (k * 2 + 1) % NI,
					   1.0f + (float)(k % 5) };
	*s = (struct mf_set){ .r = r, .n = NR, .n_users = NU, .n_items = NI,
			      .mean = 2.5 };
	cr_assert_eq(mf_desc_init(d, NU, NI, RK, s->mean, &err), PX_OK);
	mf_init_params(d, params, 7);
	for (size_t k = 0; k < d->n_params; k++)
		params[k] *= 5.0f; /* factors of 0.5: products matter */
}

Test(trainer_mf, gradient_matches_finite_differences)
{
	struct px_error err = { 0 };
	struct mf_rating r[NR];
	struct mf_desc d;
	struct mf_set s;
	struct mf_grad *g;
	float params[(NU + NI) * (RK + 1)];
	uint32_t idx[NR];
	const float lambda = 0.1f, h = 1e-2f;
	double loss;
	int checked = 0;

	small(&d, params, &s, r);
	for (uint32_t k = 0; k < NR; k++)
		idx[k] = k;
	cr_assert_eq(mf_grad_new(&d, NR, &g, &err), PX_OK);
	cr_assert_eq(mf_batch_grad(&d, params, &s, idx, NR, lambda, g, &loss,
				   &err), PX_OK, "%s", err.msg);
	cr_assert(loss > 0);
	for (uint32_t k = 0; k < g->n_rows; k++)
		for (uint32_t j = 0; j < d.row; j++) {
			size_t at = (size_t)g->rows[k] * d.row + j;
			float keep = params[at];
			double lp, lm, fd, an = g->g[(size_t)k * d.row + j];
			struct mf_grad *g2;

			cr_assert_eq(mf_grad_new(&d, NR, &g2, &err), PX_OK);
			params[at] = keep + h;
			mf_batch_grad(&d, params, &s, idx, NR, lambda, g2, &lp,
				      &err);
			mf_grad_apply(&d, params, g2, 0.0f);
			params[at] = keep - h;
			mf_batch_grad(&d, params, &s, idx, NR, lambda, g2, &lm,
				      &err);
			params[at] = keep;
			mf_grad_free(g2);
			fd = (lp - lm) / (2.0 * h);
			cr_assert(fabs(fd - an) <= 2e-3 + 1e-2 * fabs(an),
				  "row %u col %u: analytic %g, finite "
				  "differences %g", g->rows[k], j, an, fd);
			checked++;
		}
	/* every rating's user and item row, and only those */
	cr_assert_gt(checked, 0);
	mf_grad_free(g);
}

Test(trainer_mf, an_update_moves_only_the_rows_touched)
{
	struct px_error err = { 0 };
	struct mf_rating r[NR];
	struct mf_desc d;
	struct mf_set s;
	struct mf_grad *g;
	float params[(NU + NI) * (RK + 1)], before[(NU + NI) * (RK + 1)];
	uint32_t idx[2] = { 0, 1 }; /* users 0, 3; items 1, 3 */
	double loss, l2;

	small(&d, params, &s, r);
	memcpy(before, params, sizeof(params));
	cr_assert_eq(mf_grad_new(&d, 2, &g, &err), PX_OK);
	cr_assert_eq(mf_batch_grad(&d, params, &s, idx, 2, 0.0f, g, &loss,
				   &err), PX_OK);
	cr_assert_eq(g->n_rows, 4);
	mf_grad_apply(&d, params, g, 0.05f);
	cr_assert_eq(g->n_rows, 0);
	for (uint32_t row = 0; row < NU + NI; row++) {
		bool touched = row == 0 || row == 3 ||
			       row == mf_item_row(&d, 1) ||
			       row == mf_item_row(&d, 3);
		bool moved = memcmp(params + row * d.row, before + row * d.row,
				    d.row * sizeof(float)) != 0;

		cr_assert_eq(moved, touched, "row %u", row);
	}
	/* a small step downhill lowers the loss */
	cr_assert_eq(mf_batch_grad(&d, params, &s, idx, 2, 0.0f, g, &l2,
				   &err), PX_OK);
	cr_assert_lt(l2, loss);
	/* a batch over the gradient's size, an id past the model's */
	idx[1] = 2;
	cr_assert_eq(mf_batch_grad(&d, params, &s, idx, 3, 0.0f, g, &l2,
				   &err), PX_EINVAL);
	r[0].user = NU;
	cr_assert_eq(mf_batch_grad(&d, params, &s, idx, 1, 0.0f, g, &l2,
				   &err), PX_EINVAL);
	cr_assert_not_null(strstr(err.msg, "past the model"), "%s", err.msg);
	mf_grad_free(g);
}
