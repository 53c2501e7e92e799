/* mf.h -- matrix factorization (--model mf), the Proteus paper's other
 * workload: ratings as user,item,rating triplets (CSV), a rating
 * predicted as
 *
 *	mean + b_u + b_i + p_u . q_i
 *
 * with user factors p_u [rank] and item factors q_i [rank], user and item
 * biases, and the training set's mean rating (fixed, not learned), fitted
 * by minibatch SGD on the squared error with L2 (docs/trainer.md,
 * "Matrix factorization").
 *
 * Parameters live in ONE flat float array of rows of rank + 1 floats (the
 * factors, then the bias): the users' rows 0..n_users-1 first, then the
 * items' rows.  A parameter-server shard is a contiguous range of it, as
 * for the layered models, and a minibatch touches only its ratings' rows:
 * the gradient is kept sparse (struct mf_grad), a list of rows and their
 * values, and applied to those rows alone.
 */
#ifndef PX_MF_H
#define PX_MF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../../common/px.h"
#include "model.h"

/* Bounds on a ratings file and a model (docs/trainer.md, "Bounds"). */
#define MF_MAX_ID 10000000u          /* user and item ids: 0..MF_MAX_ID */
#define MF_MAX_RANK 1024u
#define MF_MAX_RATINGS (1u << 28)    /* ratings in a file (3 GiB) */
#define MF_MAX_PARAMS MODEL_MAX_PARAMS /* floats in both matrices */
#define MF_RATING_MAX 1e6            /* |rating| */

struct mf_rating {
	uint32_t user;
	uint32_t item;
	float r;
};

/* A ratings file in memory (read by ratings.h). */
struct mf_set {
	struct mf_rating *r;
	uint32_t n;
	uint32_t n_users;  /* the largest user id + 1 */
	uint32_t n_items;  /* the largest item id + 1 */
	double mean;       /* of the ratings */
};

/* Safe on a zeroed set; zeroes it. */
void mf_set_release(struct mf_set *s);

/* The model's shape, fixed by the training set. */
struct mf_desc {
	uint32_t rank;
	uint32_t row;       /* floats a row: rank + 1 (the bias last) */
	uint32_t n_users;
	uint32_t n_items;
	size_t n_params;    /* (n_users + n_items) * row */
	float mean;         /* the training set's mean rating */
};

/* rank in 1..MF_MAX_RANK, the matrices' size within MF_MAX_PARAMS. */
enum px_err mf_desc_init(struct mf_desc *d, uint32_t n_users,
			 uint32_t n_items, uint32_t rank, double mean,
			 struct px_error *err);

/* The row of user u, of item i (row index: floats at row * d->row). */
static inline size_t mf_user_row(const struct mf_desc *d, uint32_t u)
{
	return u;
}
static inline size_t mf_item_row(const struct mf_desc *d, uint32_t i)
{
	return (size_t)d->n_users + i;
}

/* Factors normal with deviation 0.1, biases zero; deterministic for a
 * seed. */
void mf_init_params(const struct mf_desc *d, float *params, uint64_t seed);

/* Which rows the training set has ratings for: seen[n_users + n_items],
 * 1 for a row with at least one rating.  A rating of a user or item
 * without one (unseen, or an id past the training set's) is predicted
 * without that side: its factors and bias count as zero, so a rating of
 * an unseen user and an unseen item is the mean. */
void mf_mark_seen(const struct mf_desc *d, const struct mf_set *train,
		  uint8_t *seen);

/* Zero the factors and bias of every row not seen: what a checkpoint
 * or an export holds, so that its rows predict alike with no mask
 * (mf_predict with seen NULL gives what it gives with the mask).
 * Training never reads an unseen row, so zeroing it changes nothing
 * there. */
void mf_zero_unseen(const struct mf_desc *d, float *params,
		    const uint8_t *seen);

/* The predicted rating of (u, i); seen may be NULL (every row of the
 * model seen). */
float mf_predict(const struct mf_desc *d, const float *params,
		 const uint8_t *seen, uint32_t u, uint32_t i);

/* The root mean squared error of params on a set. */
double mf_rmse(const struct mf_desc *d, const float *params,
	       const uint8_t *seen, const struct mf_set *set);

/* A minibatch's gradient, sparse: n_rows distinct rows (rows[k], its
 * values at g[k * row]) in the order first touched.  slot maps a row to
 * its k (or -1) while the batch is built, reset when it is applied. */
struct mf_grad {
	uint32_t cap;       /* rows it holds at most: 2 * max_batch */
	uint32_t n_rows;
	uint32_t *rows;
	float *g;
	int32_t *slot;      /* [n_users + n_items] */
};

enum px_err mf_grad_new(const struct mf_desc *d, uint32_t max_batch,
			struct mf_grad **ret, struct px_error *err);
/* NULL is a no-op. */
void mf_grad_free(struct mf_grad *g);

/* The gradient of the batch's loss
 *
 *	sum over its ratings of  e^2 / 2 + lambda / 2 (|p_u|^2 + |q_i|^2
 *				  + b_u^2 + b_i^2),   e = r - prediction
 *
 * at params into g (the rows of ratings idx[0..n) of set; ids past the
 * model's are refused: PX_EINVAL), and the loss in *ret_loss.  A sum,
 * not a mean: each rating moves its own rows by lr as in one-rating SGD
 * whatever the batch (a row rarely has two ratings in one batch).
 * n <= max_batch.  On an error g may hold part of the batch: apply it
 * with lr 0 (which empties it) or free it. */
enum px_err mf_batch_grad(const struct mf_desc *d, const float *params,
			  const struct mf_set *set, const uint32_t *idx,
			  uint32_t n, float lambda, struct mf_grad *g,
			  double *ret_loss, struct px_error *err);

/* params[row] -= lr * g[row] for the gradient's rows; empties g. */
void mf_grad_apply(const struct mf_desc *d, float *params,
		   struct mf_grad *g, float lr);

#endif
