/* model_desc.c -- a model's description and its flat parameter layout
 * (model.h): no kernel, no BLAS, so that what only reads or writes a
 * model's parameters (checkpoints, exports; proteusctl) links without
 * OpenBLAS.
 */
#include "model.h"

#include <string.h>

enum px_err model_kind_parse(const char *s, enum model_kind *ret,
			     struct px_error *err)
{
	if (!strcmp(s, "mlr"))
		*ret = MODEL_MLR;
	else if (!strcmp(s, "mlp"))
		*ret = MODEL_MLP;
	else if (!strcmp(s, "mf"))
		*ret = MODEL_MF;
	else
		return px_errorf(err, PX_EINVAL,
				 "unknown model '%s' (mlr, mlp or mf)", s);
	return PX_OK;
}

const char *model_kind_name(enum model_kind k)
{
	return k == MODEL_MLR ? "mlr" : k == MODEL_MLP ? "mlp" :
	       k == MODEL_MF ? "mf" : "?";
}

enum px_err model_desc_init(struct model_desc *d, enum model_kind kind,
			    uint32_t n_in, uint32_t n_out,
			    const uint32_t *hidden, uint32_t n_hidden,
			    struct px_error *err)
{
	struct model_desc t;
	uint64_t off = 0;

	memset(&t, 0, sizeof(t));
	if (kind == MODEL_MLR && n_hidden != 0)
		return px_errorf(err, PX_EINVAL, "model 'mlr' takes no hidden "
				 "layers (%u given)", n_hidden);
	if (kind == MODEL_MLP && n_hidden == 0)
		return px_errorf(err, PX_EINVAL,
				 "model 'mlp' needs a hidden layer");
	if (kind == MODEL_MF)
		return px_errorf(err, PX_EINVAL, "model 'mf' is a matrix "
				 "factorization, not layers (mf.h)");
	if (kind != MODEL_MLR && kind != MODEL_MLP)
		return px_errorf(err, PX_EINVAL, "bad model kind %d",
				 (int)kind);
	if (n_hidden + 1 > MODEL_MAX_LAYERS)
		return px_errorf(err, PX_ETOOBIG, "%u hidden layers, over %u",
				 n_hidden, MODEL_MAX_LAYERS - 1);
	if (n_out < 2 || n_out > 256)
		return px_errorf(err, PX_EINVAL, "%u classes, not in 2..256",
				 n_out);
	t.kind = kind;
	t.n_in = n_in;
	t.n_out = n_out;
	t.n_layers = n_hidden + 1;
	for (uint32_t l = 0; l < t.n_layers; l++) {
		struct model_layer *L = &t.layer[l];

		L->in = l == 0 ? n_in : hidden[l - 1];
		L->out = l == n_hidden ? n_out : hidden[l];
		L->relu = l != n_hidden;
		if (L->in == 0 || L->in > (l ? MODEL_MAX_WIDTH : MODEL_MAX_IN) ||
		    L->out == 0 || L->out > MODEL_MAX_WIDTH)
			return px_errorf(err, PX_ETOOBIG, "layer %u is %u x %u,"
					 " widths must be in 1..%u (inputs "
					 "1..%u)", l, L->in, L->out,
					 MODEL_MAX_WIDTH, MODEL_MAX_IN);
		L->w_off = (size_t)off;
		L->b_off = (size_t)(off + (uint64_t)L->in * L->out);
		off = L->b_off + (uint64_t)L->out;
		if (off > MODEL_MAX_PARAMS)
			return px_errorf(err, PX_ETOOBIG, "over %u parameters",
					 MODEL_MAX_PARAMS);
	}
	t.n_params = (size_t)off;
	*d = t;
	return PX_OK;
}
