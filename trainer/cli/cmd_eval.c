/* cmd_eval.c -- `proteus-trainer eval FILE`: what a checkpoint (or an
 * mf model file) is, and its accuracy or RMSE on the test set.
 */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/log.h"
#include "../../common/px.h"
#include "../io/ckpt.h"
#include "../io/data.h"
#include "../io/export.h"
#include "../compute/kern.h"
#include "../compute/mf.h"
#include "../io/ratings.h"
#include "../compute/model.h"
#include "../train_local.h"
#include "tcli.h"

/* eval --json: what a checkpoint says of itself (the keys the models
 * name otherwise given); the caller adds the evaluation.  NULL on OOM
 * (json_object_set_new on NULL fails, tx_print_json reports it). */
static json_t *eval_json(const char *file, const struct ckpt_meta *m,
			 const char *when, const char *n_key,
			 const char *recorded_key)
{
	return json_pack("{s:s, s:s, s:I, s:I, s:I, s:i, s:i, s:i, s:i, s:o, "
			 "s:s}", "file", file,
			 "model", model_kind_name(m->d.kind),
			 "params", (json_int_t)m->d.n_params,
			 "clock", (json_int_t)m->clock,
			 "total", (json_int_t)m->total,
			 "workers", (int)m->workers, "batch", (int)m->batch,
			 "epochs", (int)m->epochs, n_key, (int)m->n_train,
			 recorded_key, isnan(m->test_accuracy) ? json_null()
				 : json_real(m->test_accuracy),
			 "written", when);
}

/* eval FILE of an mf model: its test RMSE on --test-data's ratings. */
static int cmd_eval_mf(const struct subcmd *sc, const struct tcli *t,
		       const char *file)
{
	struct mf_set test = { 0 };
	struct px_error err = { 0 };
	struct ckpt_meta m;
	float *w = NULL;
	char when[32], shape[160];
	double rmse;
	enum px_err e;

	if (!t->o.data.test)
		return tx_usage(sc, "an mf model is evaluated on ratings: "
				"name --test-data FILE (user,item,rating "
				"lines)");
	e = tx_load_mf(file, true, &m, &w, &err);
	if (e != PX_OK)
		return tx_exit_for(e);
	e = mf_load(t->o.data.test, t->o.max_test, &test, &err);
	if (e != PX_OK) {
		log_err("%s", err.msg);
		goto out;
	}
	/* unseen rows are zeros in the file: no mask (mf_zero_unseen) */
	rmse = mf_rmse(&m.mf, w, NULL, &test);
	export_shape_text(&m, shape, sizeof(shape));
	px_format_time(m.written_s, when, sizeof(when));
	if (t->o.json) {
		json_t *j = eval_json(file, &m, when, "train_ratings",
				      "recorded_test_rmse");

		json_object_set_new(j, "users", json_integer(m.mf.n_users));
		json_object_set_new(j, "items", json_integer(m.mf.n_items));
		json_object_set_new(j, "rank", json_integer(m.mf.rank));
		json_object_set_new(j, "mean", json_real(m.mf.mean));
		json_object_set_new(j, "test_rmse", json_real(rmse));
		json_object_set_new(j, "test_ratings", json_integer(test.n));

		if (tx_print_json(stdout, j))
			e = px_errorf(&err, PX_EIO, "result: %s",
				      strerror(errno));
		json_decref(j);
	} else {
		printf("%s: mf %s (%zu parameters), clock %" PRId64 " of %"
		       PRId64 " (%u workers, batch %u, %u epochs, %u "
		       "ratings), written %s\n"
		       "test RMSE %.4f on %u ratings\n", file, shape,
		       m.d.n_params, m.clock, m.total, m.workers, m.batch,
		       m.epochs, m.n_train, when, rmse, test.n);
	}
	if (e != PX_OK)
		log_err("%s", err.msg);
out:
	mf_set_release(&test);
	free(w);
	return tx_exit_for(e);
}

/* eval FILE: what a checkpoint is, and its accuracy on the test set. */
int tx_cmd_eval(const struct subcmd *sc, int argc, char **argv)
{
	struct data_set test = { 0 };
	struct model_ctx *mc = NULL;
	struct px_error err = { 0 };
	struct ckpt_meta m;
	struct tcli t;
	float *w = NULL, *v = NULL;
	const char *file;
	double loss, acc;
	char when[32], widths[160];
	int rc;
	enum px_err e;

	rc = tx_options(sc, argc, argv, &t, NULL, NULL);
	if (rc >= 0)
		return rc;
	file = argv[argc - 1];
	if (t.o.train.model == MODEL_MF || export_kind(file) == MODEL_MF)
		return cmd_eval_mf(sc, &t, file);
	e = ckpt_read(file, &m, &w, &v, &err);
	if (e == PX_OK && m.prep.n_classes && !t.o.data.test)
		e = px_errorf(&err, PX_EINVAL, "checkpoint '%s' is of a model "
			      "of your own data (%u features, %u classes): "
			      "name its --test-data", file, m.d.n_in,
			      m.d.n_out);
	if (e == PX_OK && t.o.data.test && !m.prep.n_classes) {
		/* a Fashion-MNIST model's labels are its classes */
		m.prep.dim = m.d.n_in;
		m.prep.n_classes = m.d.n_out;
		for (uint32_t i = 0; i < m.d.n_out && i < DATA_MAX_CLASSES;
		     i++)
			m.prep.labels[i] = (int32_t)i;
	}
	if (e == PX_OK && t.o.data.test)
		e = data_load_test(&t.o.data, &m.prep, t.o.max_test, &test,
				   &err);
	else if (e == PX_OK)
		e = data_load_fashion_mnist(t.o.data_dir, false, t.o.max_test,
					    &test, &err);
	if (e != PX_OK)
		goto out;
	if (test.dim != m.d.n_in || test.n_classes != m.d.n_out) {
		e = px_errorf(&err, PX_EINVAL, "checkpoint '%s' is of a model "
			      "with %u inputs and %u classes, the test set has "
			      "%u and %u", file, m.d.n_in, m.d.n_out, test.dim,
			      test.n_classes);
		goto out;
	}
	kern_cpu_set_threads(t.o.train.threads ? t.o.train.threads : 1);
	e = model_ctx_new(&m.d, &kern_cpu_ops, NULL, TRAIN_EVAL_BATCH, &mc,
			  &err);
	if (e == PX_OK)
		e = train_eval_host(mc, w, &test, &loss, &acc, &err);
	if (e != PX_OK)
		goto out;
	export_shape_text(&m, widths, sizeof(widths));
	px_format_time(m.written_s, when, sizeof(when));
	if (t.o.json) {
		json_t *j = eval_json(file, &m, when, "train_examples",
				      "recorded_test_accuracy");

		json_object_set_new(j, "layers", json_string(widths));
		json_object_set_new(j, "test_accuracy", json_real(acc));
		json_object_set_new(j, "test_loss", json_real(loss));
		json_object_set_new(j, "test_examples", json_integer(test.n));

		json_object_set_new(j, "blas", tx_blas_json());
		if (tx_print_json(stdout, j))
			e = px_errorf(&err, PX_EIO, "result: %s",
				      strerror(errno));
		json_decref(j);
	} else {
		printf("%s: %s %s (%zu parameters), clock %" PRId64 " of %"
		       PRId64 " (%u workers, batch %u, %u epochs, %u "
		       "examples), written %s\n"
		       "test accuracy %.2f%%, loss %.4f, on %u examples\n",
		       file, model_kind_name(m.d.kind), widths, m.d.n_params,
		       m.clock, m.total, m.workers, m.batch, m.epochs,
		       m.n_train, when, 100.0 * acc, loss, test.n);
	}
out:
	if (e != PX_OK)
		log_err("%s", err.msg);
	model_ctx_free(mc);
	data_release(&test);
	data_prep_release(&m.prep);
	free(w);
	free(v);
	return tx_exit_for(e);
}
