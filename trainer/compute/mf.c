/* mf.c -- matrix factorization: the model and its sparse minibatch
 * gradient (mf.h; the ratings reader is ratings.c).
 */
#include "mf.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kern.h"

/* ---- a ratings set ---- */

void mf_set_release(struct mf_set *s)
{
	free(s->r);
	memset(s, 0, sizeof(*s));
}

/* ---- the model ---- */

enum px_err mf_desc_init(struct mf_desc *d, uint32_t n_users,
			 uint32_t n_items, uint32_t rank, double mean,
			 struct px_error *err)
{
	uint64_t rows = (uint64_t)n_users + n_items;

	memset(d, 0, sizeof(*d));
	if (rank < 1 || rank > MF_MAX_RANK)
		return px_errorf(err, PX_EINVAL, "rank %u, not in 1..%u", rank,
				 MF_MAX_RANK);
	if (!n_users || !n_items || n_users > MF_MAX_ID + 1 ||
	    n_items > MF_MAX_ID + 1)
		return px_errorf(err, PX_EINVAL, "%u users and %u items: each "
				 "must be in 1..%u", n_users, n_items,
				 MF_MAX_ID + 1);
	if (rows * (rank + 1) > MF_MAX_PARAMS)
		return px_errorf(err, PX_ETOOBIG, "%u users and %u items of "
				 "rank %u are %llu parameters, over %u",
				 n_users, n_items, rank,
				 (unsigned long long)(rows * (rank + 1)),
				 MF_MAX_PARAMS);
	if (!isfinite(mean))
		return px_errorf(err, PX_EINVAL, "the mean rating is not "
				 "finite");
	d->rank = rank;
	d->row = rank + 1;
	d->n_users = n_users;
	d->n_items = n_items;
	d->n_params = (size_t)rows * d->row;
	d->mean = (float)mean;
	return PX_OK;
}

void mf_init_params(const struct mf_desc *d, float *params, uint64_t seed)
{
	struct kern_rng rng;
	size_t rows = (size_t)d->n_users + d->n_items;

	kern_rng_seed(&rng, seed);
	for (size_t k = 0; k < rows; k++) {
		float *p = params + k * d->row;

		for (uint32_t j = 0; j < d->rank; j++)
			p[j] = 0.1f * kern_rng_normal(&rng);
		p[d->rank] = 0.0f;
	}
}

void mf_mark_seen(const struct mf_desc *d, const struct mf_set *train,
		  uint8_t *seen)
{
	memset(seen, 0, (size_t)d->n_users + d->n_items);
	for (uint32_t k = 0; k < train->n; k++) {
		const struct mf_rating *r = &train->r[k];

		if (r->user < d->n_users)
			seen[mf_user_row(d, r->user)] = 1;
		if (r->item < d->n_items)
			seen[mf_item_row(d, r->item)] = 1;
	}
}

void mf_zero_unseen(const struct mf_desc *d, float *params,
		    const uint8_t *seen)
{
	size_t rows = (size_t)d->n_users + d->n_items;

	for (size_t k = 0; k < rows; k++)
		if (!seen[k])
			memset(params + k * d->row, 0, d->row * sizeof(float));
}

float mf_predict(const struct mf_desc *d, const float *params,
		 const uint8_t *seen, uint32_t u, uint32_t i)
{
	bool hu = u < d->n_users && (!seen || seen[mf_user_row(d, u)]);
	bool hi = i < d->n_items && (!seen || seen[mf_item_row(d, i)]);
	const float *p = params + mf_user_row(d, u) * d->row;
	const float *q = params + mf_item_row(d, i) * d->row;
	float y = d->mean;

	if (hu)
		y += p[d->rank];
	if (hi)
		y += q[d->rank];
	if (hu && hi)
		for (uint32_t j = 0; j < d->rank; j++)
			y += p[j] * q[j];
	return y;
}

double mf_rmse(const struct mf_desc *d, const float *params,
	       const uint8_t *seen, const struct mf_set *set)
{
	double sse = 0.0;

	for (uint32_t k = 0; k < set->n; k++) {
		const struct mf_rating *r = &set->r[k];
		double e = (double)r->r - mf_predict(d, params, seen, r->user,
						      r->item);

		sse += e * e;
	}
	return set->n ? sqrt(sse / set->n) : 0.0;
}

/* ---- the sparse gradient ---- */

enum px_err mf_grad_new(const struct mf_desc *d, uint32_t max_batch,
			struct mf_grad **ret, struct px_error *err)
{
	size_t rows = (size_t)d->n_users + d->n_items;
	struct mf_grad *g = calloc(1, sizeof(*g));

	if (max_batch < 1 || max_batch > MODEL_MAX_BATCH) {
		free(g);
		return px_errorf(err, PX_EINVAL, "batch %u, not in 1..%u",
				 max_batch, MODEL_MAX_BATCH);
	}
	if (g) {
		g->cap = 2 * max_batch;
		g->rows = px_calloc(g->cap, sizeof(*g->rows));
		g->g = px_calloc((size_t)g->cap * d->row, sizeof(*g->g));
		g->slot = px_calloc(rows, sizeof(*g->slot));
	}
	if (!g || !g->rows || !g->g || !g->slot) {
		mf_grad_free(g);
		return px_errorf(err, PX_ENOMEM, "the gradient of %u ratings",
				 max_batch);
	}
	memset(g->slot, 0xff, rows * sizeof(*g->slot)); /* -1 */
	*ret = g;
	return PX_OK;
}

void mf_grad_free(struct mf_grad *g)
{
	if (!g)
		return;
	free(g->rows);
	free(g->g);
	free(g->slot);
	free(g);
}

/* Row `row`'s gradient, added to the list (zeroed) when new. */
static float *grad_row(const struct mf_desc *d, struct mf_grad *g,
		       size_t row)
{
	int32_t k = g->slot[row];

	if (k < 0) {
		k = (int32_t)g->n_rows++;
		g->slot[row] = k;
		g->rows[k] = (uint32_t)row;
		memset(g->g + (size_t)k * d->row, 0, d->row * sizeof(float));
	}
	return g->g + (size_t)k * d->row;
}

enum px_err mf_batch_grad(const struct mf_desc *d, const float *params,
			  const struct mf_set *set, const uint32_t *idx,
			  uint32_t n, float lambda, struct mf_grad *g,
			  double *ret_loss, struct px_error *err)
{
	double loss = 0.0;

	if (n > g->cap / 2)
		return px_errorf(err, PX_EINVAL, "a batch of %u ratings, over "
				 "%u", n, g->cap / 2);
	for (uint32_t k = 0; k < n; k++) {
		const struct mf_rating *r = &set->r[idx[k]];
		const float *p, *q;
		float *gp, *gq, e;
		double reg = 0.0;

		if (r->user >= d->n_users || r->item >= d->n_items)
			return px_errorf(err, PX_EINVAL, "rating %u: user %u "
					 "or item %u past the model's %u users "
					 "and %u items", idx[k], r->user,
					 r->item, d->n_users, d->n_items);
		p = params + mf_user_row(d, r->user) * d->row;
		q = params + mf_item_row(d, r->item) * d->row;
		e = r->r - mf_predict(d, params, NULL, r->user, r->item);
		gp = grad_row(d, g, mf_user_row(d, r->user));
		gq = grad_row(d, g, mf_item_row(d, r->item));
		for (uint32_t j = 0; j < d->rank; j++) {
			gp[j] += -e * q[j] + lambda * p[j];
			gq[j] += -e * p[j] + lambda * q[j];
			reg += (double)p[j] * p[j] + (double)q[j] * q[j];
		}
		gp[d->rank] += -e + lambda * p[d->rank];
		gq[d->rank] += -e + lambda * q[d->rank];
		reg += (double)p[d->rank] * p[d->rank] +
		       (double)q[d->rank] * q[d->rank];
		loss += 0.5 * (double)e * e + 0.5 * lambda * reg;
	}
	*ret_loss = loss;
	return PX_OK;
}

void mf_grad_apply(const struct mf_desc *d, float *params,
		   struct mf_grad *g, float lr)
{
	for (uint32_t k = 0; k < g->n_rows; k++) {
		float *p = params + (size_t)g->rows[k] * d->row;
		const float *v = g->g + (size_t)k * d->row;

		for (uint32_t j = 0; j < d->row; j++)
			p[j] -= lr * v[j];
		g->slot[g->rows[k]] = -1;
	}
	g->n_rows = 0;
}
