/* model.h -- the trainer's models: multinomial logistic regression (MLR)
 * and a ReLU MLP, as a description, a flat parameter layout, and forward /
 * backward / evaluation over a kern_ops table (CPU or CUDA).
 *
 * Parameters live in ONE flat float array.  Layer l owns W_l [in, out]
 * (row-major, y = x W + b) at layer[l].w_off, then b_l [out] at
 * layer[l].b_off = w_off + in * out; layers follow each other with no gap.
 * A parameter-server shard is therefore a contiguous range [lo, hi) of
 * this array, and gradients use the same layout.
 */
#ifndef PX_MODEL_H
#define PX_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../../common/px.h"
#include "kern.h"

#define MODEL_MAX_LAYERS 8
#define MODEL_MAX_WIDTH 65536u           /* any layer's in or out ... */
#define MODEL_MAX_IN (1u << 20)          /* ... but the inputs: a sparse set's
					    features (LIBSVM), up to 2^20 */
#define MODEL_MAX_PARAMS (1u << 28)      /* floats in the flat array */
#define MODEL_MAX_BATCH 65536u

enum model_kind {
	MODEL_MLR, /* one affine layer + softmax */
	MODEL_MLP, /* affine + ReLU per hidden layer, affine + softmax */
	MODEL_MF,  /* matrix factorization: not layered, mf.h (the
		      model_* calls below refuse it) */
	MODEL_KIND_MAX
};

struct model_layer {
	uint32_t in;  /* input width */
	uint32_t out; /* output width */
	size_t w_off; /* W [in, out] starts here (floats) */
	size_t b_off; /* b [out] starts here (floats) */
	bool relu;    /* ReLU on the output (every layer but the last) */
};

struct model_desc {
	enum model_kind kind;
	uint32_t n_in;     /* input features */
	uint32_t n_out;    /* classes */
	uint32_t n_layers; /* affine layers */
	struct model_layer layer[MODEL_MAX_LAYERS];
	size_t n_params;   /* floats in the flat array */
};

/* "mlr", "mlp" or "mf"; PX_EINVAL naming s otherwise. */
enum px_err model_kind_parse(const char *s, enum model_kind *ret,
			     struct px_error *err);
const char *model_kind_name(enum model_kind k);

/* Describe a model: n_in -> hidden[0] -> ... -> n_out.  MLR takes no
 * hidden layers, MLP at least one.  Widths are bounded by
 * MODEL_MAX_WIDTH (n_in by MODEL_MAX_IN), the layer count by MODEL_MAX_LAYERS and the total by
 * MODEL_MAX_PARAMS; n_out is at most 256 (labels are bytes). */
enum px_err model_desc_init(struct model_desc *d, enum model_kind kind,
			    uint32_t n_in, uint32_t n_out,
			    const uint32_t *hidden, uint32_t n_hidden,
			    struct px_error *err);

/* Initialise params[d->n_params] on the host: He normal (std
 * sqrt(2/in)) for layers followed by ReLU, Xavier uniform (limit
 * sqrt(6/(in+out))) for the output layer, biases zero.  Deterministic for
 * a seed. */
void model_init_params(const struct model_desc *d, float *params,
		       uint64_t seed);

/* Workspace for batches of up to max_batch examples on one device.
 * Opaque; the ops table and its ctx are borrowed and must outlive it. */
struct model_ctx;

enum px_err model_ctx_new(const struct model_desc *d,
			  const struct kern_ops *ops, void *kctx,
			  uint32_t max_batch, struct model_ctx **ret,
			  struct px_error *err);
/* NULL is a no-op. */
void model_ctx_free(struct model_ctx *c);

/* In the calls below params, x [n, n_in], y [n] and grad are in the ops
 * table's memory (host for CPU, device for CUDA); 1 <= n <= max_batch. */

/* Forward and backward on a batch: grad[n_params] = gradient of the mean
 * cross-entropy loss over the batch.  With ret_loss non-NULL the mean
 * loss is computed too (on CUDA this waits for the device). */
enum px_err model_grad(struct model_ctx *c, const float *params,
		       const float *x, const uint8_t *y, uint32_t n,
		       float *grad, double *ret_loss, struct px_error *err);

/* Forward only: adds the batch's summed loss to *loss_sum and its count of
 * correct argmax predictions to *correct (both accumulate). */
enum px_err model_eval(struct model_ctx *c, const float *params,
		       const float *x, const uint8_t *y, uint32_t n,
		       double *loss_sum, uint64_t *correct,
		       struct px_error *err);

/* The same with the batch's inputs as sparse rows (host memory, the CPU
 * ops only; PX_EINVAL on another table): the first layer computes on
 * the non-zeros (docs/trainer.md, "Sparse data"), the rest as above.
 * The gradient of the first layer's W is set on the rows (features)
 * the batch touches and zero on the others: the context remembers the
 * rows it set in grad and zeroes them at its next call, so grad must not
 * be written by anything else between two calls (a grad it has not seen
 * before is zeroed whole).  1 <= x->n <= max_batch; y [x->n]. */
enum px_err model_grad_csr(struct model_ctx *c, const float *params,
			   const struct kern_csr *x, const uint8_t *y,
			   float *grad, double *ret_loss, struct px_error *err);
enum px_err model_eval_csr(struct model_ctx *c, const float *params,
			   const struct kern_csr *x, const uint8_t *y,
			   double *loss_sum, uint64_t *correct,
			   struct px_error *err);

/* Forward only: the class probabilities of the batch into probs[n, n_out]
 * on the host (`predict`).  y feeds only the loss the forward computes
 * beside them: any classes do.  The argmax is the class model_eval
 * counts. */
enum px_err model_probs(struct model_ctx *c, const float *params,
			const float *x, const uint8_t *y, uint32_t n,
			float *probs, struct px_error *err);

#endif
