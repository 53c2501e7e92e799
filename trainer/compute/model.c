/* model.c -- MLR and MLP: layout, initialisation, forward, backward and
 * evaluation, written once over struct kern_ops so that the CPU and CUDA
 * paths run the same sequence of kernels.
 */
#include "model.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct model_ctx {
	struct model_desc d;         /* a copy */
	const struct kern_ops *ops;  /* borrowed */
	void *kctx;                  /* borrowed */
	uint32_t max_batch;
	uint32_t max_width;          /* widest layer input or output */
	float *act[MODEL_MAX_LAYERS]; /* [max_batch, out_l]: layer outputs
				       * (after ReLU); the last is logits */
	float *probs;                /* [max_batch, n_out] */
	float *loss;                 /* [max_batch] per-row loss */
	float *delta[2];             /* [max_batch, max_width] ping-pong */
	float *h_probs;              /* host copies for eval and loss */
	float *h_loss;
	uint8_t *h_y;
	/* sparse input (model_grad_csr): the rows of the first layer's W
	 * the last call's batch touched in grad_last, zeroed at the next
	 * call (every other row of it is zero already) */
	float *grad_last;
	uint32_t *touched;           /* [n_in] */
	uint8_t *mark;               /* [n_in] */
	uint32_t n_touched;
};

void model_init_params(const struct model_desc *d, float *params,
		       uint64_t seed)
{
	struct kern_rng rng;

	kern_rng_seed(&rng, seed);
	for (uint32_t l = 0; l < d->n_layers; l++) {
		const struct model_layer *L = &d->layer[l];
		size_t nw = (size_t)L->in * L->out;
		float *w = params + L->w_off;

		if (L->relu) {
			float sd = sqrtf(2.0f / (float)L->in);

			for (size_t i = 0; i < nw; i++)
				w[i] = sd * kern_rng_normal(&rng);
		} else {
			float lim = sqrtf(6.0f / (float)(L->in + L->out));

			for (size_t i = 0; i < nw; i++)
				w[i] = lim * (2.0f * kern_rng_uniform(&rng) -
					      1.0f);
		}
		memset(params + L->b_off, 0, L->out * sizeof(float));
	}
}

void model_ctx_free(struct model_ctx *c)
{
	if (!c)
		return;
	for (uint32_t l = 0; l < MODEL_MAX_LAYERS; l++)
		c->ops->free(c->kctx, c->act[l]);
	c->ops->free(c->kctx, c->probs);
	c->ops->free(c->kctx, c->loss);
	c->ops->free(c->kctx, c->delta[0]);
	c->ops->free(c->kctx, c->delta[1]);
	free(c->h_probs);
	free(c->h_loss);
	free(c->h_y);
	free(c->touched);
	free(c->mark);
	free(c);
}

static enum px_err dev_floats(struct model_ctx *c, size_t n, float **ret,
			      struct px_error *err)
{
	void *p = NULL;
	enum px_err r = c->ops->alloc(c->kctx, n * sizeof(float), &p, err);

	if (r == PX_OK)
		*ret = p;
	return r;
}

enum px_err model_ctx_new(const struct model_desc *d,
			  const struct kern_ops *ops, void *kctx,
			  uint32_t max_batch, struct model_ctx **ret,
			  struct px_error *err)
{
	struct model_ctx *c;
	enum px_err r;
	size_t b;

	if (max_batch == 0 || max_batch > MODEL_MAX_BATCH)
		return px_errorf(err, PX_EINVAL, "batch size %u not in 1..%u",
				 max_batch, MODEL_MAX_BATCH);
	c = px_calloc(1, sizeof(*c));
	if (!c)
		return px_errorf(err, PX_ENOMEM, "cannot allocate a model");
	c->d = *d;
	c->ops = ops;
	c->kctx = kctx;
	c->max_batch = max_batch;
	b = max_batch;
	for (uint32_t l = 0; l < d->n_layers; l++) {
		if (d->layer[l].in > c->max_width)
			c->max_width = d->layer[l].in;
		if (d->layer[l].out > c->max_width)
			c->max_width = d->layer[l].out;
		r = dev_floats(c, b * d->layer[l].out, &c->act[l], err);
		if (r != PX_OK)
			goto out_free;
	}
	r = dev_floats(c, b * d->n_out, &c->probs, err);
	if (r == PX_OK)
		r = dev_floats(c, b, &c->loss, err);
	if (r == PX_OK)
		r = dev_floats(c, b * c->max_width, &c->delta[0], err);
	if (r == PX_OK)
		r = dev_floats(c, b * c->max_width, &c->delta[1], err);
	if (r != PX_OK)
		goto out_free;
	c->h_probs = px_calloc(b * d->n_out, sizeof(float));
	c->h_loss = px_calloc(b, sizeof(float));
	c->h_y = px_calloc(b, 1);
	if (!c->h_probs || !c->h_loss || !c->h_y) {
		r = px_errorf(err, PX_ENOMEM, "cannot allocate a model");
		goto out_free;
	}
	*ret = c;
	return PX_OK;

out_free:
	model_ctx_free(c);
	return r;
}

static enum px_err check_batch(const struct model_ctx *c, uint32_t n,
			       struct px_error *err)
{
	if (n == 0 || n > c->max_batch)
		return px_errorf(err, PX_EINVAL, "batch of %u, not in 1..%u",
				 n, c->max_batch);
	return PX_OK;
}

/* Sparse input: the CPU ops only (host memory, the loops of kern_cpu.c),
 * rows within the model's inputs. */
static enum px_err check_csr(const struct model_ctx *c,
			     const struct kern_csr *xs, struct px_error *err)
{
	if (c->ops != &kern_cpu_ops)
		return px_errorf(err, PX_EINVAL, "sparse input needs the CPU "
				 "(device %s)", c->ops->name);
	if (xs->n == 0 || xs->n > c->max_batch)
		return px_errorf(err, PX_EINVAL, "batch of %u, not in 1..%u",
				 xs->n, c->max_batch);
	for (uint64_t k = 0; k < xs->rp[xs->n]; k++)
		if (xs->ci[k] >= c->d.n_in)
			return px_errorf(err, PX_EINVAL, "sparse row feature "
					 "%u, the model has %u", xs->ci[k] + 1,
					 c->d.n_in);
	return PX_OK;
}

/* act[l] = relu?(in x W_l + b_l) for every layer, then probs and loss;
 * the first layer's input is x, or xs (sparse rows) when not NULL. */
static enum px_err forward(struct model_ctx *c, const float *params,
			   const float *x, const struct kern_csr *xs,
			   const uint8_t *y, int n, struct px_error *err)
{
	const struct kern_ops *o = c->ops;
	const float *in = x;
	enum px_err r;

	for (uint32_t l = 0; l < c->d.n_layers; l++) {
		const struct model_layer *L = &c->d.layer[l];
		int ni = (int)L->in, no = (int)L->out;

		if (l == 0 && xs) {
			kern_csr_affine(c->act[0], xs, params + L->w_off,
					params + L->b_off, no);
			r = PX_OK;
			goto act;
		}
		/* act[n, out] = in[n, in] * W[in, out] */
		r = o->gemm(c->kctx, false, false, n, no, ni, 1.0f, in, ni,
			    params + L->w_off, no, 0.0f, c->act[l], no, err);
		if (r == PX_OK)
			r = o->bias_add(c->kctx, c->act[l], params + L->b_off,
					n, no, err);
act:
		if (r == PX_OK && L->relu)
			r = o->relu_fwd(c->kctx, c->act[l], c->act[l],
					(size_t)n * no, err);
		if (r != PX_OK)
			return r;
		in = c->act[l];
	}
	return o->softmax_xent_fwd(c->kctx, c->probs, c->loss, in, y, n,
				   (int)c->d.n_out, err);
}

static enum px_err mean_loss(struct model_ctx *c, uint32_t n,
			     double *ret_loss, struct px_error *err)
{
	double s = 0.0;
	enum px_err r;

	r = c->ops->download(c->kctx, c->h_loss, c->loss, n * sizeof(float),
			     err);
	if (r != PX_OK)
		return r;
	for (uint32_t i = 0; i < n; i++)
		s += c->h_loss[i];
	*ret_loss = s / n;
	return PX_OK;
}

/* The first layer's dW from sparse rows: the rows the last batch set in
 * grad are zeroed (the whole of dW on a grad not seen before), then the
 * rows xs touches are set; the touched rows are kept for the next call. */
static enum px_err csr_wgrad(struct model_ctx *c, const struct kern_csr *xs,
			     const float *dy, float *grad,
			     struct px_error *err)
{
	const struct model_layer *L = &c->d.layer[0];
	float *dw = grad + L->w_off;
	size_t row = L->out * sizeof(float);

	if (!c->touched) {
		c->touched = px_calloc(L->in, sizeof(*c->touched));
		c->mark = px_calloc(L->in, 1);
		if (!c->touched || !c->mark)
			return px_errorf(err, PX_ENOMEM, "sparse gradient "
					 "rows");
	}
	if (grad != c->grad_last)
		memset(dw, 0, L->in * row);
	else
		for (uint32_t t = 0; t < c->n_touched; t++)
			memset(dw + (size_t)c->touched[t] * L->out, 0, row);
	for (uint32_t t = 0; t < c->n_touched; t++)
		c->mark[c->touched[t]] = 0;
	c->n_touched = 0;
	for (uint64_t k = 0; k < xs->rp[xs->n]; k++)
		if (!c->mark[xs->ci[k]]) {
			c->mark[xs->ci[k]] = 1;
			c->touched[c->n_touched++] = xs->ci[k];
		}
	kern_csr_wgrad(dw, xs, dy, (int)L->out);
	c->grad_last = grad;
	return PX_OK;
}

/* model_grad over x, or xs when not NULL. */
static enum px_err grad_of(struct model_ctx *c, const float *params,
			   const float *x, const struct kern_csr *xs,
			   const uint8_t *y, uint32_t n, float *grad,
			   double *ret_loss, struct px_error *err)
{
	const struct kern_ops *o = c->ops;
	int cur = 0, nn = (int)n;
	enum px_err r;

	r = xs ? check_csr(c, xs, err) : check_batch(c, n, err);
	if (r == PX_OK)
		r = forward(c, params, x, xs, y, nn, err);
	if (r == PX_OK)
		r = o->softmax_xent_bwd(c->kctx, c->delta[cur], c->probs, y, nn,
					(int)c->d.n_out, err);
	for (uint32_t l = c->d.n_layers; r == PX_OK && l-- > 0;) {
		const struct model_layer *L = &c->d.layer[l];
		const float *in = l == 0 ? x : c->act[l - 1];
		int ni = (int)L->in, no = (int)L->out;
		float *dy = c->delta[cur], *dx = c->delta[cur ^ 1];

		/* dW[in, out] = in^T [in, n] * dy[n, out] */
		if (l == 0 && xs)
			r = csr_wgrad(c, xs, dy, grad, err);
		else
			r = o->gemm(c->kctx, true, false, ni, no, nn, 1.0f, in,
				    ni, dy, no, 0.0f, grad + L->w_off, no,
				    err);
		/* db[out] = column sums of dy */
		if (r == PX_OK)
			r = o->bias_grad(c->kctx, grad + L->b_off, dy, nn, no,
					 err);
		if (r != PX_OK || l == 0)
			break;
		/* dx[n, in] = dy[n, out] * W^T [out, in], then through the
		 * previous layer's ReLU (its output is act[l - 1]). */
		r = o->gemm(c->kctx, false, true, nn, ni, no, 1.0f, dy, no,
			    params + L->w_off, no, 0.0f, dx, ni, err);
		if (r == PX_OK)
			r = o->relu_bwd(c->kctx, dx, dx, c->act[l - 1],
					(size_t)nn * ni, err);
		cur ^= 1;
	}
	if (r == PX_OK && ret_loss)
		r = mean_loss(c, n, ret_loss, err);
	return r;
}

enum px_err model_grad(struct model_ctx *c, const float *params,
		       const float *x, const uint8_t *y, uint32_t n,
		       float *grad, double *ret_loss, struct px_error *err)
{
	return grad_of(c, params, x, NULL, y, n, grad, ret_loss, err);
}

enum px_err model_grad_csr(struct model_ctx *c, const float *params,
			   const struct kern_csr *x, const uint8_t *y,
			   float *grad, double *ret_loss, struct px_error *err)
{
	return grad_of(c, params, NULL, x, y, x->n, grad, ret_loss, err);
}

/* model_eval over x, or xs when not NULL. */
static enum px_err eval_of(struct model_ctx *c, const float *params,
			   const float *x, const struct kern_csr *xs,
			   const uint8_t *y, uint32_t n, double *loss_sum,
			   uint64_t *correct, struct px_error *err)
{
	const struct kern_ops *o = c->ops;
	uint32_t k = c->d.n_out;
	uint64_t ok = 0;
	double s = 0.0;
	enum px_err r;

	r = xs ? check_csr(c, xs, err) : check_batch(c, n, err);
	if (r == PX_OK)
		r = forward(c, params, x, xs, y, (int)n, err);
	if (r == PX_OK)
		r = o->download(c->kctx, c->h_probs, c->probs,
				(size_t)n * k * sizeof(float), err);
	if (r == PX_OK)
		r = o->download(c->kctx, c->h_loss, c->loss, n * sizeof(float),
				err);
	if (r == PX_OK)
		r = o->download(c->kctx, c->h_y, y, n, err);
	if (r != PX_OK)
		return r;
	for (uint32_t i = 0; i < n; i++) {
		const float *p = c->h_probs + (size_t)i * k;
		uint32_t best = 0;

		for (uint32_t j = 1; j < k; j++)
			if (p[j] > p[best])
				best = j;
		ok += best == c->h_y[i];
		s += c->h_loss[i];
	}
	*loss_sum += s;
	*correct += ok;
	return PX_OK;
}

enum px_err model_eval(struct model_ctx *c, const float *params,
		       const float *x, const uint8_t *y, uint32_t n,
		       double *loss_sum, uint64_t *correct,
		       struct px_error *err)
{
	return eval_of(c, params, x, NULL, y, n, loss_sum, correct, err);
}

enum px_err model_eval_csr(struct model_ctx *c, const float *params,
			   const struct kern_csr *x, const uint8_t *y,
			   double *loss_sum, uint64_t *correct,
			   struct px_error *err)
{
	return eval_of(c, params, NULL, x, y, x->n, loss_sum, correct, err);
}

enum px_err model_probs(struct model_ctx *c, const float *params,
			const float *x, const uint8_t *y, uint32_t n,
			float *probs, struct px_error *err)
{
	enum px_err r = check_batch(c, n, err);

	if (r == PX_OK)
		r = forward(c, params, x, NULL, y, (int)n, err);
	if (r == PX_OK)
		r = c->ops->download(c->kctx, probs, c->probs,
				     (size_t)n * c->d.n_out * sizeof(float),
				     err);
	return r;
}
