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

#include "../common/px.h"
#include "dataset.h"
#include "model.h"

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

#endif
