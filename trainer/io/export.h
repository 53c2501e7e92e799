/* export.h -- a trained model taken away (docs/trainer.md, "Take the model
 * away"): the parameters as the state dict of a PyTorch nn.Sequential of
 * nn.Linear and nn.ReLU in a safetensors file (safetensors.h), with what
 * a user needs to apply it in the header's "__metadata__": the model,
 * its widths, the label of each class and the feature scaling.
 *
 * Layer l of the model is the Sequential's module 2l (a Linear; 2l + 1
 * is the ReLU after it): tensors "2l.weight" [out, in] and "2l.bias"
 * [out].  The trainer keeps W as [in, out] (model.h, y = x W + b), so
 * the weights are transposed on the way out and back.  The metadata's
 * values are strings, as the format has them; the lists among them are
 * JSON text ("[0, 1, 2]"):
 *
 *   format          "proteus-model"
 *   format_version  "1"
 *   model           "mlr" | "mlp"
 *   widths          "[784, 256, 256, 10]": inputs, hidden, classes
 *   activation      "relu" (between the layers)
 *   output          "softmax" (of the last layer: the class
 *                   probabilities; the class is the argmax)
 *   labels          "[-1, 1]": class k's label in the data
 *   scale           "none" | "standard": x' = (x - mean) / std
 *   scale_mean, scale_std   with "standard": "[...]", a float32 per
 *                   feature, written with 9 digits (exact)
 *   test_accuracy   when known: the test set's, as the trainer had it
 */
#ifndef PX_EXPORT_H
#define PX_EXPORT_H

#include <jansson.h>

#include "../../common/px.h"
#include "dataset.h"
#include "../compute/mf.h"
#include "../compute/model.h"

#define EXPORT_FORMAT "proteus-model"
#define EXPORT_VERSION 1

/* Write params (d's layout) with prep's labels and scaling (n_classes
 * 0: Fashion-MNIST's, class k is label k, no scaling) to path as
 * safetensors, atomically (st_write).  test_accuracy NaN: not said. */
enum px_err export_write(const char *path, const struct model_desc *d,
			 const struct data_prep *prep, const float *params,
			 double test_accuracy, struct px_error *err);

/* A checkpoint (ckpt.h, read with all its checks) exported to path. */
enum px_err export_checkpoint(const char *ckpt, const char *path,
			      struct px_error *err);
/* (an mf checkpoint too: export_mf_write's tensors) */

/* A model to predict with, from path: a checkpoint (a file that begins
 * with '{') or a safetensors file of an nn.Sequential of Linear and
 * ReLU (export_write's, or one of F32 tensors "0.weight", "0.bias",
 * "2.weight", ... saved elsewhere: then class k is label k, no scaling,
 * unless its metadata says).  The shapes must chain, every tensor must
 * be a layer's and every number finite; metadata present must agree
 * with the tensors.  On success *d, *prep (its scaling allocated:
 * data_prep_release; labels always set) and *ret_params (d's layout,
 * malloc'd).  Errors (PX_EINVAL) name the file and the tensor or field. */
enum px_err export_load(const char *path, struct model_desc *d,
			struct data_prep *prep, float **ret_params,
			struct px_error *err);

/*
 * A matrix factorization (--model mf; export_mf.c) is four tensors:
 *
 *   user_factors  [users, rank]   p_u, row u for user id u
 *   item_factors  [items, rank]   q_i, row i for item id i
 *   user_bias     [users]         b_u
 *   item_bias     [items]         b_i
 *
 * and in "__metadata__": format, format_version, model "mf", rank,
 * users, items, global_mean (the training ratings' mean, 9 digits:
 * exact), ids "identity" (row = id: the model's only map of ids to
 * rows), prediction (the formula below, as text), unseen (what a row of
 * a user or item with no training rating holds) and test_rmse when
 * known.  A rating is predicted as
 *
 *	global_mean + user_bias[u] + item_bias[i] + user_factors[u] .
 *	item_factors[i]
 *
 * where a user u >= users (an item i >= items) counts as zeros; the
 * rows of users and items the training set has no rating of are zeros,
 * so they predict as such ids do.
 */
#define EXPORT_MF_IDS "identity"
#define EXPORT_MF_PREDICTION "global_mean + user_bias[u] + item_bias[i] + " \
	"user_factors[u] . item_factors[i]; a u or i past the tensors: zeros"
#define EXPORT_MF_UNSEEN "zeros: a user or item with no training rating"

struct ckpt_meta;

/* params (d's rows) to path (st_write, atomically), the rows whose seen
 * is 0 written as zeros (seen NULL: every row as it is).  test_rmse NaN:
 * not said. */
enum px_err export_mf_write(const char *path, const struct mf_desc *d,
			    const float *params, const uint8_t *seen,
			    double test_rmse, struct px_error *err);

/* An mf model from a checkpoint or an export_mf_write file (or one of the
 * same four tensors written elsewhere, with global_mean in its
 * metadata): *d and *ret_params (d's rows, malloc'd); *ret_test_rmse
 * what the file says, NaN if nothing.  Shapes must agree, every number
 * be finite.  Errors (PX_EINVAL) name the file and the tensor or
 * field. */
enum px_err export_mf_load(const char *path, struct mf_desc *d,
			   float **ret_params, double *ret_test_rmse,
			   struct px_error *err);

/* Whether path holds an mf model (MODEL_MF: a checkpoint saying "model":
 * "mf", a safetensors file with a tensor "user_factors") or not
 * (MODEL_MLP: anything else, a file that cannot be read included: the
 * layered models' loader names what is wrong). */
enum model_kind export_kind(const char *path);

/* A checkpoint's state (m: ckpt_read's) exported, whatever its model. */
enum px_err export_ckpt_write(const char *path, const struct ckpt_meta *m,
			      const float *params, struct px_error *err);

/* "784-256-10" (the widths), or an mf model's shape, into buf. */
void export_shape_text(const struct ckpt_meta *m, char *buf, size_t n);

/* Metadata m (a JSON object of strings) with key = v in "%.6f" where v is
 * a number; m as it was where v is NaN; NULL (m released) when it cannot
 * be set. */
json_t *export_meta_number(json_t *m, const char *key, double v);

#endif
