/* cmd_train.c -- `proteus-trainer train`: a model trained in this one
 * process (train_local.c; --model mf: train_mf.c), tested after each
 * epoch, its result as text or --json.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/log.h"
#include "../../common/px.h"
#include "../compute/blas_pick.h"
#include "../io/data.h"
#include "../dist/dist.h"
#include "../compute/mf.h"
#include "../io/ratings.h"
#include "../train_local.h"
#include "../train_mf.h"
#include "tcli.h"

static bool print_epoch(void *arg, const struct train_epoch *e)
{
	const bool *json = arg;

	fprintf(*json ? stderr : stdout,
		"epoch %u: train loss %.4f, test loss %.4f, test accuracy "
		"%.2f%%, %.1f s, %.0f samples/s\n", e->epoch, e->train_loss,
		e->test_loss, 100.0 * e->test_accuracy, e->train_seconds,
		e->samples_per_sec);
	return true;
}

/* What the training set fixed: on stdout as a line (json: stderr), or
 * into j as "inputs", "classes" and "labels" (label values, class by
 * class). */
static void say_data(const struct data_prep *p, bool json, json_t *j)
{
	FILE *f = json ? stderr : stdout;
	json_t *l;

	if (!p->n_classes)
		return;
	if (j) {
		l = json_array();
		for (uint32_t i = 0; l && i < p->n_classes; i++)
			json_array_append_new(l, json_integer(p->labels[i]));
		json_object_set_new(j, "inputs", json_integer(p->dim));
		json_object_set_new(j, "classes", json_integer(p->n_classes));
		json_object_set_new(j, "labels", l ? l : json_null());
		json_object_set_new(j, "scale", json_string(p->mean ?
				    "standard" : "none"));
		return;
	}
	fprintf(f, "data: %u features, %u classes, labels in sorted order "
		"(label -> class):", p->dim, p->n_classes);
	for (uint32_t i = 0; i < p->n_classes && i < 8; i++)
		fprintf(f, " %d->%u", p->labels[i], i);
	fprintf(f, "%s; scaling %s\n", p->n_classes > 8 ? " ..." : "",
		p->mean ? "standard (the training set's mean and deviation)"
			: "none");
}

/* The training and test sets the options name: the user's own (prep
 * what the training set fixes) or Fashion-MNIST's. */
static enum px_err load_sets(const struct dist_opts *o,
			     struct data_set *train, struct data_set *test,
			     struct data_prep *prep, struct px_error *err)
{
	uint64_t budget = (uint64_t)o->data_memory_mb << 20;
	enum px_err e;

	if (o->data.train && o->data_memory_mb &&
	    data_window_able(&o->data))
		e = data_window_open(&o->data, o->max_train, budget, train,
				     prep, err);
	else if (o->data_memory_mb && !o->data.train)
		e = data_window_fashion_mnist(o->data_dir, o->max_train,
					      budget, train, err);
	else if (o->data.train)
		e = data_load_train(&o->data, o->max_train, train, prep, err);
	else
		e = data_load_fashion_mnist(o->data_dir, true, o->max_train,
					    train, err);
	return e != PX_OK ? e : dist_load_test(o, prep, test, err);
}

/* train's result: the options as given, resumed_from the epochs done
 * before --resume (null without). */
static int print_train_json(const struct train_opts *o,
			    const struct data_prep *prep,
			    const struct train_result *r)
{
	json_t *j = json_pack("{s:s, s:s, s:I, s:i, s:o, s:o, s:I, s:I, "
			      "s:f, s:f, s:f, s:f, s:f, s:o}",
			      "model", model_kind_name(o->model),
			      "device", o->device == TRAIN_DEV_CUDA ? "cuda"
								   : "cpu",
			      "epochs", (json_int_t)r->epochs,
			      "threads", o->threads,
			      "lr", json_real(tx_float_as_typed(o->lr)),
			      "momentum",
			      json_real(tx_float_as_typed(o->momentum)),
			      "batch", (json_int_t)o->batch,
			      "params", (json_int_t)r->n_params,
			      "test_accuracy", r->test_accuracy,
			      "test_loss", r->test_loss,
			      "samples_per_sec", r->samples_per_sec,
			      "train_seconds", r->train_seconds,
			      "wall_seconds", r->wall_seconds,
			      "resumed_from", o->resume
				      ? json_integer(r->resumed_from)
				      : json_null());
	int rc;

	say_data(prep, true, j);
	json_object_set_new(j, "sparse", json_boolean(r->sparse));
	if (r->data_reads) { /* read in chunks (--data-memory) */
		json_object_set_new(j, "data_reads",
				    json_integer((json_int_t)r->data_reads));
		json_object_set_new(j, "rows_held_max",
				    json_integer(r->data_held));
	}
	json_object_set_new(j, "blas", tx_blas_json());
	rc = tx_print_json(stdout, j);

	json_decref(j);
	return rc;
}

/* What --model mf does not take, as the option that asked for it, or
 * NULL. */
static const char *mf_refused(const struct subcmd *sc, const struct tcli *t)
{
	const struct train_opts *o = &t->o.train;
	const struct data_spec *ds = &t->o.data;
	struct tcli d;

	tcli_default(&d, sc);
	return o->device != TRAIN_DEV_CPU ? "--device cuda" :
	       o->momentum != d.o.train.momentum ? "--momentum" :
	       ds->scale != DATA_SCALE_NONE ? "--scale" :
	       ds->label_col != d.o.data.label_col ? "--label-column" :
	       ds->format != DATA_FMT_AUTO && ds->format != DATA_FMT_CSV
	       ? "--data-format (ratings are CSV)" : NULL;
}

static bool mf_print_epoch(void *arg, const struct mf_epoch *e)
{
	json_t *curve = arg; /* NULL: text on stdout */

	fprintf(curve ? stderr : stdout, "epoch %u: train RMSE %.4f, test "
		"RMSE %.4f, %.2f s, %.0f ratings/s\n", e->epoch, e->train_rmse,
		e->test_rmse, e->train_seconds, e->ratings_per_sec);
	if (curve)
		json_array_append_new(curve, json_pack("{s:i, s:f, s:f, s:f}",
				      "epoch", (int)e->epoch, "train_seconds",
				      e->train_seconds, "train_rmse",
				      e->train_rmse, "test_rmse",
				      e->test_rmse));
	return true;
}

/* train --model mf: ratings from --train-data and --test-data. */
static int cmd_train_mf(const struct subcmd *sc, struct tcli *t)
{
	const struct train_opts *o = &t->o.train;
	struct mf_set train = { 0 }, test = { 0 };
	struct px_error err = { 0 };
	struct mf_result res;
	const char *bad = mf_refused(sc, t);
	json_t *curve = NULL, *j;
	enum px_err e;
	int rc;

	if (bad)
		return tx_usage(sc, "--model mf does not take %s (it trains "
				"on the CPU with plain SGD from CSV "
				"ratings)", bad);
	if (!t->o.data.train)
		return tx_usage(sc, "--model mf needs --train-data and "
				"--test-data: CSV files of "
				"user,item,rating");
	rc = tx_check_files(o->checkpoint, o->resume, o->export_path);
	if (rc >= 0)
		return rc;
	e = mf_load(t->o.data.train, t->o.max_train, &train, &err);
	if (e == PX_OK)
		e = mf_load(t->o.data.test, t->o.max_test, &test, &err);
	if (e != PX_OK) {
		log_err("%s", err.msg);
		goto out;
	}
	if (t->o.json)
		curve = json_array();
	else
		printf("training mf rank %u on %u ratings (%u users, %u items, "
		       "mean %.4f; %u test), batch %u, lr %g, L2 %g\n",
		       o->rank, train.n, train.n_users, train.n_items,
		       train.mean, test.n, o->batch, tx_float_as_typed(o->lr),
		       tx_float_as_typed(o->weight_decay));
	e = train_mf_run(o, &train, &test, mf_print_epoch, curve, &res,
			 &err);
	if (e != PX_OK) {
		log_err("training failed: %s", err.msg);
		goto out;
	}
	if (!t->o.json) {
		if (o->resume)
			printf("resumed from %s after epoch %u\n", o->resume,
			       res.resumed_from);
		printf("test RMSE %.4f (%u of %u test ratings of a user or item "
		       "unseen in training), train RMSE %.4f, %.0f ratings/s, "
		       "%.1f s\n", res.test_rmse, res.test_unseen, test.n,
		       res.train_rmse, res.ratings_per_sec, res.wall_seconds);
		goto out;
	}
	j = json_pack("{s:s, s:I, s:I, s:f, s:f, s:I, s:I, s:I, s:I, s:I, "
		      "s:I, s:I, s:f, s:f, s:f, s:f, s:f, s:f, s:O}",
		      "model", "mf", "rank", (json_int_t)o->rank,
		      "epochs", (json_int_t)res.epochs,
		      "lr", tx_float_as_typed(o->lr),
		      "weight_decay", tx_float_as_typed(o->weight_decay),
		      "batch", (json_int_t)o->batch,
		      "params", (json_int_t)res.d.n_params,
		      "users", (json_int_t)res.d.n_users,
		      "items", (json_int_t)res.d.n_items,
		      "train_ratings", (json_int_t)train.n,
		      "test_ratings", (json_int_t)test.n,
		      "test_unseen", (json_int_t)res.test_unseen,
		      "mean", (double)res.d.mean,
		      "train_rmse", res.train_rmse,
		      "test_rmse", res.test_rmse,
		      "ratings_per_sec", res.ratings_per_sec,
		      "train_seconds", res.train_seconds,
		      "wall_seconds", res.wall_seconds,
		      "curve", curve);
	json_object_set_new(j, "resumed_from", o->resume
			    ? json_integer(res.resumed_from) : json_null());
	if (tx_print_json(stdout, j)) {
		e = px_errorf(&err, PX_EIO, "result: %s", strerror(errno));
		log_err("%s", err.msg);
	}
	json_decref(j);
out:
	json_decref(curve);
	mf_set_release(&train);
	mf_set_release(&test);
	return tx_exit_for(e);
}

int tx_cmd_train(const struct subcmd *sc, int argc, char **argv)
{
	struct data_set train = { 0 }, test = { 0 };
	struct data_prep prep = { 0 };
	struct px_error err = { 0 };
	struct train_result res;
	struct tcli t;
	struct train_opts *o = &t.o.train;
	int rc;
	enum px_err e;

	rc = tx_options(sc, argc, argv, &t, NULL, NULL);
	if (rc < 0 && o->model == MODEL_MF)
		return cmd_train_mf(sc, &t);
	if (rc < 0 && o->rank != TRAIN_MF_RANK)
		rc = tx_usage(sc, "--rank is for --model mf");
	if (rc < 0)
		rc = tx_check_files(o->checkpoint, o->resume, o->export_path);
	if (rc >= 0)
		return rc;
	e = load_sets(&t.o, &train, &test, &prep, &err);
	if (e != PX_OK) {
		log_err("%s", err.msg);
		goto out_release;
	}
	say_data(&prep, t.o.json, NULL);
	if (!t.o.json)
		printf("training %s on %u examples (%u test), device %s, "
		       "batch %u, lr %g, momentum %g\n",
		       model_kind_name(o->model), train.n, test.n,
		       o->device == TRAIN_DEV_CUDA ? "cuda" : "cpu", o->batch,
		       tx_float_as_typed(o->lr), tx_float_as_typed(o->momentum));
	if (!t.o.json && o->device == TRAIN_DEV_CPU) {
		char d[256];

		blas_describe(blas_state(), o->threads, d, sizeof(d));
		printf("blas: %s\n", d);
	}
	e = train_local_run(o, &train, &test, print_epoch, &t.o.json, &res,
			    &err);
	if (e != PX_OK) {
		log_err("training failed: %s", err.msg);
		goto out_release;
	}
	if (t.o.json) {
		if (print_train_json(o, &prep, &res)) {
			e = px_errorf(&err, PX_EIO, "result: %s",
				      strerror(errno));
			log_err("%s", err.msg);
		}
	} else {
		printf("test accuracy %.2f%%, %.0f samples/s, %.1f s\n",
		       100.0 * res.test_accuracy, res.samples_per_sec,
		       res.wall_seconds);
	}
out_release:
	data_release(&train);
	data_release(&test);
	data_prep_release(&prep);
	return tx_exit_for(e);
}
