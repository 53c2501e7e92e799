/* dist_opts.c -- the roles' default options and the size of the training
 * set.  Apart from dist_common.c because both reach the training code
 * (train_opts_default, the IDX reader and so the BLAS kernels): proteusd
 * links dist_common.o for its sockets and clock count, and must not load
 * OpenBLAS, whose threads start before main and would take the signals
 * the daemon blocks for its signalfd.
 */
#include "dist_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../io/data.h"
#include "../compute/mf.h"
#include "../io/ratings.h"

void dist_opts_default(struct dist_opts *o)
{
	memset(o, 0, sizeof(*o));
	train_opts_default(&o->train);
	o->workers = 1;
	o->ps = 1;
	o->stage = 1;
	o->hb_ms = 100;
	o->hb_timeout_ms = 800;
	o->clock_batches = DIST_CLOCK_BATCHES;
	o->stall_timeout_s = 60;
	o->sole_copy_timeout_s = 10;
	o->out_fd = 1;
	o->ready_fd = -1;
	o->data.label_col = 1;
}

enum px_err dist_data_shape(const struct dist_opts *o, uint32_t *ret_n,
			    struct data_prep *prep, struct px_error *err)
{
	char path[4096];
	uint8_t *labels = NULL;
	uint32_t items, bytes;
	const char *dir = o->data_dir ? o->data_dir : DATA_FASHION_MNIST_DIR;
	enum px_err e;

	memset(prep, 0, sizeof(*prep));
	if (o->data.train)
		return data_scan_train(&o->data, o->max_train, ret_n, prep,
				       err);
	if ((size_t)snprintf(path, sizeof(path),
			     "%s/train-labels-idx1-ubyte.gz", dir) >=
	    sizeof(path))
		return px_errorf(err, PX_EINVAL, "data dir '%s' too long",
				 dir);
	e = data_idx_read(path, 1, o->max_train, &labels, &items, &bytes,
			  err);
	if (e != PX_OK)
		return e;
	free(labels);
	*ret_n = items;
	return PX_OK;
}

bool dist_partition_only(const struct dist_opts *o)
{
	if (o->data_whole)
		return false;
	return o->data.train ? data_window_able(&o->data)
			     : o->data_memory_mb > 0;
}

enum px_err dist_model_desc(const struct dist_opts *o,
			    const struct data_prep *prep,
			    struct model_desc *d, struct px_error *err)
{
	const struct train_opts *t = &o->train;

	return model_desc_init(d, t->model, prep->n_classes ? prep->dim
			       : DATA_FASHION_MNIST_DIM, prep->n_classes
			       ? prep->n_classes : DATA_FASHION_MNIST_CLASSES,
			       t->hidden, t->model == MODEL_MLR ? 0
			       : t->n_hidden, err);
}

enum px_err dist_load_test(const struct dist_opts *o,
			   const struct data_prep *prep, struct data_set *ret,
			   struct px_error *err)
{
	if (o->data.train)
		return data_load_test(&o->data, prep, o->max_test, ret, err);
	return data_load_fashion_mnist(o->data_dir, false, o->max_test, ret,
				       err);
}

enum px_err dist_mf_load(const struct dist_opts *o, struct mf_set *ret,
			 struct mf_desc *d, struct px_error *err)
{
	enum px_err e;

	memset(d, 0, sizeof(*d));
	if (!o->data.train)
		return px_errorf(err, PX_EINVAL, "--model mf needs "
				 "--train-data (user,item,rating lines)");
	e = mf_load(o->data.train, o->max_train, ret, err);
	if (e == PX_OK)
		e = mf_desc_init(d, ret->n_users, ret->n_items,
				 o->train.rank, ret->mean, err);
	if (e != PX_OK)
		mf_set_release(ret);
	return e;
}
