/* export.c -- a model as an nn.Sequential's state dict in safetensors, and
 * back (export.h).
 */
#include "export.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckpt.h"
#include "safetensors.h"

/* ---- writing ---- */

/* The JSON text of a list of n numbers (ints, or floats with 9 digits:
 * enough for a float32 to read back exact); NULL on OOM. */
static json_t *list_text(const int32_t *iv, const float *fv, uint32_t n)
{
	json_t *a = json_array(), *s = NULL;
	char *text;

	for (uint32_t i = 0; a && i < n; i++)
		if (json_array_append_new(a, iv ? json_integer(iv[i])
						: json_real((double)fv[i]))) {
			json_decref(a);
			return NULL;
		}
	if (!a)
		return NULL;
	text = json_dumps(a, JSON_COMPACT | JSON_REAL_PRECISION(9));
	json_decref(a);
	if (text)
		s = json_string(text);
	free(text);
	return s;
}

static json_t *metadata(const struct model_desc *d,
			const struct data_prep *prep, double acc)
{
	int32_t widths[MODEL_MAX_LAYERS + 1], labels[DATA_MAX_CLASSES];
	const int32_t *lab = labels;
	char num[40];
	json_t *m;

	widths[0] = (int32_t)d->n_in;
	for (uint32_t l = 0; l < d->n_layers; l++)
		widths[l + 1] = (int32_t)d->layer[l].out;
	if (prep && prep->n_classes)
		lab = prep->labels;
	else /* Fashion-MNIST's: class k is label k */
		for (uint32_t k = 0; k < d->n_out && k < DATA_MAX_CLASSES; k++)
			labels[k] = (int32_t)k;
	snprintf(num, sizeof(num), "%d", EXPORT_VERSION);
	m = json_pack("{s:s, s:s, s:s, s:o, s:s, s:s, s:o, s:s}",
		      "format", EXPORT_FORMAT, "format_version", num,
		      "model", model_kind_name(d->kind),
		      "widths", list_text(widths, NULL, d->n_layers + 1),
		      "activation", "relu", "output", "softmax",
		      "labels", list_text(lab, NULL, d->n_out),
		      "scale", prep && prep->mean ? "standard" : "none");
	if (m && prep && prep->mean &&
	    (json_object_set_new(m, "scale_mean",
				 list_text(NULL, prep->mean, d->n_in)) ||
	     json_object_set_new(m, "scale_std",
				 list_text(NULL, prep->std, d->n_in)))) {
		json_decref(m);
		return NULL;
	}
	return m ? export_meta_number(m, "test_accuracy", acc) : NULL;
}

json_t *export_meta_number(json_t *m, const char *key, double v)
{
	char num[40];

	if (isnan(v))
		return m;
	snprintf(num, sizeof(num), "%.6f", v);
	if (json_object_set_new(m, key, json_string(num))) {
		json_decref(m);
		return NULL;
	}
	return m;
}

enum px_err export_write(const char *path, const struct model_desc *d,
			 const struct data_prep *prep, const float *params,
			 double test_accuracy, struct px_error *err)
{
	struct st_tensor t[2 * MODEL_MAX_LAYERS];
	float *wt[MODEL_MAX_LAYERS] = { 0 };
	json_t *meta = metadata(d, prep, test_accuracy);
	enum px_err e = meta ? PX_OK : PX_ENOMEM;

	memset(t, 0, sizeof(t));
	for (uint32_t l = 0; e == PX_OK && l < d->n_layers; l++) {
		const struct model_layer *L = &d->layer[l];
		const float *w = params + L->w_off;
		struct st_tensor *tw = &t[2 * l], *tb = &t[2 * l + 1];

		wt[l] = px_calloc((size_t)L->in * L->out, sizeof(float));
		if (!wt[l]) {
			e = PX_ENOMEM;
			break;
		}
		/* W [in, out] as the trainer has it, to [out, in] */
		for (size_t i = 0; i < L->in; i++)
			for (size_t o = 0; o < L->out; o++)
				wt[l][o * L->in + i] = w[i * L->out + o];
		snprintf(tw->name, sizeof(tw->name), "%u.weight", 2 * l);
		tw->ndim = 2;
		tw->shape[0] = L->out;
		tw->shape[1] = L->in;
		tw->n = (uint64_t)L->in * L->out;
		tw->data = wt[l];
		snprintf(tb->name, sizeof(tb->name), "%u.bias", 2 * l);
		tb->ndim = 1;
		tb->shape[0] = L->out;
		tb->n = L->out;
		tb->data = params + L->b_off;
	}
	if (e == PX_ENOMEM)
		px_errorf(err, e, "model file '%s': out of memory", path);
	else
		e = st_write(path, t, 2 * d->n_layers, meta, err);
	for (uint32_t l = 0; l < MODEL_MAX_LAYERS; l++)
		free(wt[l]);
	json_decref(meta);
	return e;
}

enum px_err export_checkpoint(const char *ckpt, const char *path,
			      struct px_error *err)
{
	struct ckpt_meta m;
	float *w, *v;
	enum px_err e = ckpt_read(ckpt, &m, &w, &v, err);

	if (e != PX_OK)
		return e;
	e = export_ckpt_write(path, &m, w, err);
	data_prep_release(&m.prep);
	free(w);
	free(v);
	return e;
}

/* ---- reading ---- */

/* Whether path holds a checkpoint (its first byte is '{'; a safetensors
 * file's is its header's length).  Anything else is left to the reader
 * that follows to say. */
static bool is_checkpoint(const char *path)
{
	struct stat st;
	char c = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	bool r;

	if (fd < 0)
		return false;
	r = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
	    read(fd, &c, 1) == 1 && c == '{';
	close(fd);
	return r;
}

static enum px_err from_checkpoint(const char *path, struct model_desc *d,
				   struct data_prep *prep, float **ret_params,
				   struct px_error *err)
{
	struct ckpt_meta m;
	float *v;
	enum px_err e = ckpt_read(path, &m, ret_params, &v, err);

	if (e != PX_OK)
		return e;
	free(v);
	if (m.d.kind == MODEL_MF) {
		free(*ret_params);
		*ret_params = NULL;
		return px_errorf(err, PX_EINVAL, "checkpoint '%s' is of a "
				 "matrix factorization (mf), not layers",
				 path);
	}
	*d = m.d;
	*prep = m.prep;
	if (!prep->n_classes) { /* Fashion-MNIST's: class k is label k */
		prep->dim = d->n_in;
		prep->n_classes = d->n_out;
		for (uint32_t k = 0; k < d->n_out; k++)
			prep->labels[k] = (int32_t)k;
	}
	return PX_OK;
}

/* Metadata key, when there: a JSON list of n numbers (*ret; NULL when
 * the key is absent). */
static enum px_err meta_list(const struct st_file *f, const char *path,
			     const char *key, size_t n, json_t **ret,
			     struct px_error *err)
{
	const char *s = st_meta(f, key);
	json_t *a;

	*ret = NULL;
	if (!s)
		return PX_OK;
	a = json_loads(s, 0, NULL);
	if (!json_is_array(a) || json_array_size(a) != n) {
		json_decref(a);
		return px_errorf(err, PX_EINVAL, "model file '%s': metadata "
				 "'%s': not a JSON list of %zu numbers", path,
				 key, n);
	}
	for (size_t i = 0; i < n; i++)
		if (!json_is_number(json_array_get(a, i)) ||
		    !isfinite(json_number_value(json_array_get(a, i)))) {
			json_decref(a);
			return px_errorf(err, PX_EINVAL, "model file '%s': "
					 "metadata '%s': item %zu is not a "
					 "finite number", path, key, i);
		}
	*ret = a;
	return PX_OK;
}

/* The layers' widths from the tensors: every tensor is "2l.weight"
 * [out, in] or "2l.bias" [out] of layer l, and each layer takes what
 * the one before gives. */
static enum px_err layers_of(const struct st_file *f, const char *path,
			     uint32_t *widths, uint32_t *ret_n,
			     struct px_error *err)
{
	const struct st_tensor *w, *b, *prev = NULL;
	char name[32];
	uint32_t n = 0;

	for (;; n++) {
		snprintf(name, sizeof(name), "%u.weight", 2 * n);
		w = st_find(f, name);
		if (!w)
			break;
		if (n == MODEL_MAX_LAYERS)
			return px_errorf(err, PX_EINVAL, "model file '%s': over "
					 "%u layers", path, MODEL_MAX_LAYERS);
		snprintf(name, sizeof(name), "%u.bias", 2 * n);
		b = st_find(f, name);
		if (w->ndim != 2 || !w->shape[0] || !w->shape[1] ||
		    w->shape[0] > MODEL_MAX_WIDTH ||
		    w->shape[1] > (prev ? MODEL_MAX_WIDTH : MODEL_MAX_IN))
			return px_errorf(err, PX_EINVAL, "model file '%s': "
					 "tensor '%s': not a Linear's weight "
					 "[out, in], each in 1..%u (the "
					 "first's in 1..%u)", path, w->name,
					 MODEL_MAX_WIDTH, MODEL_MAX_IN);
		if (!b)
			return px_errorf(err, PX_EINVAL, "model file '%s': no "
					 "tensor '%s' for '%s'", path, name,
					 w->name);
		if (b->ndim != 1 || b->shape[0] != w->shape[0])
			return px_errorf(err, PX_EINVAL, "model file '%s': "
					 "tensor '%s': not [%" PRIu64 "], the "
					 "outputs of '%s'", path, b->name,
					 w->shape[0], w->name);
		if (prev && w->shape[1] != prev->shape[0])
			return px_errorf(err, PX_EINVAL, "model file '%s': the "
					 "shapes do not chain: tensor '%s' "
					 "takes %" PRIu64 " inputs, '%s' gives "
					 "%" PRIu64, path, w->name, w->shape[1],
					 prev->name, prev->shape[0]);
		if (!prev)
			widths[0] = (uint32_t)w->shape[1];
		widths[n + 1] = (uint32_t)w->shape[0];
		prev = w;
	}
	if (!n)
		return px_errorf(err, PX_EINVAL, "model file '%s': no tensor "
				 "'0.weight': not an nn.Sequential of Linear "
				 "and ReLU (0.weight, 0.bias, 2.weight, ...)",
				 path);
	for (uint32_t i = 0; i < f->n; i++) {
		bool ours = false;

		for (uint32_t l = 0; !ours && l < n; l++) {
			char wn[32], bn[32];

			snprintf(wn, sizeof(wn), "%u.weight", 2 * l);
			snprintf(bn, sizeof(bn), "%u.bias", 2 * l);
			ours = !strcmp(f->t[i].name, wn) ||
			       !strcmp(f->t[i].name, bn);
		}
		if (!ours)
			return px_errorf(err, PX_EINVAL, "model file '%s': "
					 "tensor '%s' is not one of the %u "
					 "layers that chain from '0.weight' "
					 "(2l.weight, 2l.bias)", path,
					 f->t[i].name, n);
	}
	*ret_n = n;
	return PX_OK;
}

/* What the metadata says of the model (each key optional) against what
 * the tensors make: the kind, the widths, the format's version. */
static enum px_err check_meta_model(const struct st_file *f, const char *path,
				    const uint32_t *widths, uint32_t n,
				    enum model_kind *kind,
				    struct px_error *err)
{
	const char *ver = st_meta(f, "format_version");
	const char *model = st_meta(f, "model");
	enum px_err e;
	json_t *w;

	*kind = n == 1 ? MODEL_MLR : MODEL_MLP;
	if (ver && strcmp(ver, "1"))
		return px_errorf(err, PX_EINVAL, "model file '%s': metadata "
				 "'format_version' \"%s\": this build reads "
				 "%d", path, ver, EXPORT_VERSION);
	if (model) {
		e = model_kind_parse(model, kind, err);
		if (e != PX_OK) {
			px_error_prefix(err, "model file '%s': metadata "
					"'model': ", path);
			return e;
		}
		if ((*kind == MODEL_MLR) != (n == 1))
			return px_errorf(err, PX_EINVAL, "model file '%s': "
					 "metadata 'model' \"%s\", but the "
					 "tensors make %u layers", path, model,
					 n);
	}
	e = meta_list(f, path, "widths", n + 1, &w, err);
	for (uint32_t i = 0; e == PX_OK && w && i <= n; i++)
		if (json_number_value(json_array_get(w, i)) != widths[i])
			e = px_errorf(err, PX_EINVAL, "model file '%s': "
				      "metadata 'widths' item %u is %g, the "
				      "tensors make %u", path, i,
				      json_number_value(json_array_get(w, i)),
				      widths[i]);
	json_decref(w);
	return e;
}

/* The labels and scaling the metadata gives (none: class k is label k,
 * no scaling). */
static enum px_err meta_prep(const struct st_file *f, const char *path,
			     const struct model_desc *d,
			     struct data_prep *prep, struct px_error *err)
{
	const char *scale = st_meta(f, "scale");
	json_t *lab, *mean = NULL, *sd = NULL;
	enum px_err e;

	prep->dim = d->n_in;
	prep->n_classes = d->n_out;
	e = meta_list(f, path, "labels", d->n_out, &lab, err);
	for (uint32_t k = 0; e == PX_OK && k < d->n_out; k++) {
		double v = lab ? json_number_value(json_array_get(lab, k)) : k;

		/* the loaders find a label by bisection */
		if (v != floor(v) || v < INT32_MIN || v > INT32_MAX ||
		    (k && v <= prep->labels[k - 1]))
			e = px_errorf(err, PX_EINVAL, "model file '%s': "
				      "metadata 'labels' item %u: not a "
				      "32-bit integer above the one before",
				      path, k);
		else
			prep->labels[k] = (int32_t)v;
	}
	json_decref(lab);
	if (e != PX_OK || !scale || !strcmp(scale, "none"))
		return e;
	if (strcmp(scale, "standard"))
		return px_errorf(err, PX_EINVAL, "model file '%s': metadata "
				 "'scale' \"%s\": not \"none\" or "
				 "\"standard\"", path, scale);
	e = meta_list(f, path, "scale_mean", d->n_in, &mean, err);
	if (e == PX_OK)
		e = meta_list(f, path, "scale_std", d->n_in, &sd, err);
	if (e == PX_OK && (!mean || !sd))
		e = px_errorf(err, PX_EINVAL, "model file '%s': metadata "
			      "'scale' is \"standard\" without 'scale_mean' "
			      "and 'scale_std'", path);
	if (e == PX_OK) {
		prep->mean = px_calloc(d->n_in, sizeof(float));
		prep->std = px_calloc(d->n_in, sizeof(float));
		if (!prep->mean || !prep->std)
			e = px_errorf(err, PX_ENOMEM, "model file '%s': "
				      "scaling", path);
	}
	for (uint32_t i = 0; e == PX_OK && i < d->n_in; i++) {
		prep->mean[i] = (float)json_number_value(json_array_get(mean,
									i));
		prep->std[i] = (float)json_number_value(json_array_get(sd, i));
		if (!(prep->std[i] > 0) || !isfinite(prep->std[i]) ||
		    !isfinite(prep->mean[i]))
			e = px_errorf(err, PX_EINVAL, "model file '%s': "
				      "metadata 'scale_std' item %u: not a "
				      "deviation above 0", path, i);
	}
	json_decref(mean);
	json_decref(sd);
	return e;
}

/* The tensors into the trainer's layout, each number finite. */
static enum px_err unpack(const struct st_file *f, const char *path,
			  const struct model_desc *d, float *params,
			  struct px_error *err)
{
	for (uint32_t l = 0; l < d->n_layers; l++) {
		const struct model_layer *L = &d->layer[l];
		const struct st_tensor *w, *b;
		char name[32];

		snprintf(name, sizeof(name), "%u.weight", 2 * l);
		w = st_find(f, name);
		snprintf(name, sizeof(name), "%u.bias", 2 * l);
		b = st_find(f, name);
		for (size_t o = 0; o < L->out; o++)
			for (size_t i = 0; i < L->in; i++)
				params[L->w_off + i * L->out + o] =
					w->data[o * L->in + i];
		memcpy(params + L->b_off, b->data, L->out * sizeof(float));
		for (uint64_t i = 0; i < w->n + b->n; i++) {
			const struct st_tensor *t = i < w->n ? w : b;
			uint64_t k = i < w->n ? i : i - w->n;

			if (!isfinite(t->data[k]))
				return px_errorf(err, PX_EINVAL, "model file "
						 "'%s': tensor '%s': element %"
						 PRIu64 " is not a finite "
						 "number", path, t->name, k);
		}
	}
	return PX_OK;
}

static enum px_err from_safetensors(const char *path, struct model_desc *d,
				    struct data_prep *prep, float **ret_params,
				    struct px_error *err)
{
	uint32_t widths[MODEL_MAX_LAYERS + 1], n = 0;
	struct st_file f;
	enum model_kind kind;
	float *params = NULL;
	enum px_err e;

	e = st_read(path, MODEL_MAX_PARAMS, &f, err);
	if (e != PX_OK)
		return e;
	e = layers_of(&f, path, widths, &n, err);
	if (e == PX_OK)
		e = check_meta_model(&f, path, widths, n, &kind, err);
	if (e == PX_OK && (widths[n] < 2 || widths[n] > DATA_MAX_CLASSES))
		e = px_errorf(err, PX_EINVAL, "model file '%s': %u classes "
			      "(the last layer's outputs), not in 2..%u", path,
			      widths[n], DATA_MAX_CLASSES);
	if (e == PX_OK) {
		e = model_desc_init(d, kind, widths[0], widths[n], widths + 1,
				    n - 1, err);
		if (e != PX_OK)
			px_error_prefix(err, "model file '%s': ", path);
	}
	if (e == PX_OK) {
		params = px_calloc(d->n_params, sizeof(float));
		if (!params)
			e = px_errorf(err, PX_ENOMEM, "model file '%s': %zu "
				      "parameters", path, d->n_params);
	}
	if (e == PX_OK)
		e = unpack(&f, path, d, params, err);
	if (e == PX_OK)
		e = meta_prep(&f, path, d, prep, err);
	st_file_release(&f);
	if (e != PX_OK) {
		data_prep_release(prep);
		free(params);
		return e;
	}
	*ret_params = params;
	return PX_OK;
}

enum px_err export_load(const char *path, struct model_desc *d,
			struct data_prep *prep, float **ret_params,
			struct px_error *err)
{
	memset(prep, 0, sizeof(*prep));
	*ret_params = NULL;
	if (is_checkpoint(path))
		return from_checkpoint(path, d, prep, ret_params, err);
	return from_safetensors(path, d, prep, ret_params, err);
}
