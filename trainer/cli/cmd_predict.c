/* cmd_predict.c -- `proteus-trainer predict MODEL DATA`: each row's class
 * (or an mf model's rating) by a model taken away or a checkpoint, and
 * the accuracy (RMSE) against the data's labels.
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

/* predict's output for one batch: each row's label (and probabilities)
 * on f, or into the JSON arrays; the count of rows whose class is the
 * data's. */
static uint64_t predict_batch(const float *probs, const uint8_t *y, uint32_t n,
			      const struct data_prep *prep, bool proba,
			      FILE *f, json_t *jl, json_t *jp)
{
	uint32_t k = prep->n_classes;
	uint64_t ok = 0;

	for (uint32_t i = 0; i < n; i++) {
		const float *p = probs + (size_t)i * k;
		json_t *row = jp ? json_array() : NULL;
		uint32_t best = 0;

		/* the first of the largest: model_eval's argmax */
		for (uint32_t j = 1; j < k; j++)
			if (p[j] > p[best])
				best = j;
		ok += best == y[i];
		if (jl) {
			json_array_append_new(jl,
					      json_integer(prep->labels[best]));
			for (uint32_t j = 0; row && j < k; j++)
				json_array_append_new(row,
						      json_real(p[j]));
			if (row)
				json_array_append_new(jp, row);
			continue;
		}
		fprintf(f, "%d", prep->labels[best]);
		for (uint32_t j = 0; proba && j < k; j++)
			fprintf(f, "\t%.6g", (double)p[j]);
		fputc('\n', f);
	}
	return ok;
}

/* predict MODEL DATA of an mf model: the predicted rating of each
 * user,item row, and the RMSE when the rows have ratings. */
static int cmd_predict_mf(const struct subcmd *sc, const struct tcli *t,
			  const char *model, const char *data)
{
	struct mf_set set = { 0 };
	struct px_error err = { 0 };
	struct ckpt_meta m;
	json_t *jl = NULL;
	float *w = NULL;
	double sse = 0.0;
	bool rated = false;
	enum px_err e;

	if (t->p.proba)
		return tx_usage(sc, "--proba is for a classifier: an mf "
				"model predicts a rating");
	e = tx_load_mf(model, false, &m, &w, &err);
	if (e != PX_OK)
		return tx_exit_for(e);
	e = mf_load_pairs(data, 0, &set, &rated, &err);
	if (e != PX_OK) {
		px_error_prefix(&err, "data for mf model '%s' (user,item "
				"lines, a rating optional): ", model);
		goto out;
	}
	if (t->o.json && !(jl = json_array()))
		e = px_errorf(&err, PX_ENOMEM, "predict: out of memory");
	for (uint32_t i = 0; e == PX_OK && i < set.n; i++) {
		const struct mf_rating *r = &set.r[i];
		float y = mf_predict(&m.mf, w, NULL, r->user, r->item);
		double d = (double)r->r - y;

		sse += d * d;
		if (jl)
			json_array_append_new(jl, json_real(y));
		else
			printf("%.9g\n", (double)y);
	}
	if (e != PX_OK)
		goto out;
	if (t->o.json) {
		json_t *j = json_pack("{s:s, s:s, s:s, s:I, s:I, s:o, s:o}",
				      "model", model, "data", data, "kind",
				      "mf", "rank", (json_int_t)m.mf.rank,
				      "rows", (json_int_t)set.n,
				      "rmse", rated ? json_real(sqrt(sse /
							       set.n))
						    : json_null(),
				      "predictions", json_incref(jl));

		if (tx_print_json(stdout, j))
			e = px_errorf(&err, PX_EIO, "result: %s",
				      strerror(errno));
		json_decref(j);
	} else if (fflush(stdout) != 0) {
		e = px_errorf(&err, PX_EIO, "result: %s", strerror(errno));
	} else if (rated) {
		fprintf(stderr, "RMSE %.4f on %u rows, model mf (rank %u)\n",
			sqrt(sse / set.n), set.n, m.mf.rank);
	} else {
		fprintf(stderr, "%u rows predicted (no ratings to compare), "
			"model mf (rank %u)\n", set.n, m.mf.rank);
	}
out:
	if (e != PX_OK)
		log_err("%s", err.msg);
	json_decref(jl);
	mf_set_release(&set);
	free(w);
	return tx_exit_for(e);
}

/* predict's result once every row's label is out: --json's object, or
 * the accuracy on stderr.  PX_EIO when stdout fails. */
static enum px_err predict_result(const struct tcli *t, const char *model,
				  const char *data, const struct model_desc *d,
				  const struct data_prep *prep, uint32_t rows,
				  uint64_t correct, json_t *jl, json_t *jp,
				  struct px_error *err)
{
	enum px_err e = PX_OK;

	if (t->o.json) {
		json_t *j = json_pack("{s:s, s:s, s:s, s:I, s:I, s:f, s:o, "
				      "s:o}", "model", model, "data", data,
				      "kind", model_kind_name(d->kind),
				      "rows", (json_int_t)rows,
				      "correct", (json_int_t)correct,
				      "accuracy", (double)correct / rows,
				      "predictions", json_incref(jl),
				      "probabilities", jp ? json_incref(jp)
							  : json_null());
		json_t *l = json_array();

		for (uint32_t k = 0; l && k < prep->n_classes; k++)
			json_array_append_new(l,
					      json_integer(prep->labels[k]));
		json_object_set_new(j, "labels", l ? l : json_null());
		if (tx_print_json(stdout, j))
			e = px_errorf(err, PX_EIO, "result: %s",
				      strerror(errno));
		json_decref(j);
	} else if (fflush(stdout) != 0) {
		e = px_errorf(err, PX_EIO, "result: %s", strerror(errno));
	} else {
		fprintf(stderr, "accuracy %.2f%% (%" PRIu64 " of %u rows), "
			"model %s, %u classes\n", 100.0 * (double)correct / rows,
			correct, rows, model_kind_name(d->kind), d->n_out);
	}
	return e;
}

/* predict MODEL DATA: the label of each row by the model, and its
 * accuracy against the data's labels. */
int tx_cmd_predict(const struct subcmd *sc, int argc, char **argv)
{
	uint32_t idx[TRAIN_EVAL_BATCH];
	struct data_set set = { 0 };
	struct data_prep prep = { 0 };
	struct px_error err = { 0 };
	struct model_ctx *mc = NULL;
	struct model_desc d;
	struct data_spec spec;
	json_t *jl = NULL, *jp = NULL;
	float *w = NULL, *x = NULL, *probs = NULL;
	uint8_t *y = NULL;
	const char *model, *data;
	uint64_t correct = 0;
	struct tcli t;
	enum px_err e;
	int rc;

	tcli_default(&t, sc);
	rc = tx_parse(sc, argc, argv, &t, NULL, NULL);
	if (rc >= 0)
		return rc;
	model = argv[argc - 2];
	data = argv[argc - 1];
	if (t.o.train.model == MODEL_MF || export_kind(model) == MODEL_MF)
		return cmd_predict_mf(sc, &t, model, data);
	e = export_load(model, &d, &prep, &w, &err);
	if (e != PX_OK)
		goto out;
	spec = t.o.data;
	spec.train = NULL;
	spec.test = data;
	/* the data held to the model's width and labels */
	e = data_load_test(&spec, &prep, 0, &set, &err);
	if (e != PX_OK) {
		px_error_prefix(&err, "data for model '%s' (%u inputs, %u "
				"classes): ", model, d.n_in, d.n_out);
		goto out;
	}
	kern_cpu_set_threads(t.o.train.threads ? t.o.train.threads : 1);
	e = model_ctx_new(&d, &kern_cpu_ops, NULL, TRAIN_EVAL_BATCH, &mc,
			  &err);
	x = px_calloc((size_t)TRAIN_EVAL_BATCH * d.n_in, sizeof(float));
	probs = px_calloc((size_t)TRAIN_EVAL_BATCH * d.n_out, sizeof(float));
	y = px_calloc(TRAIN_EVAL_BATCH, 1);
	if (t.o.json) {
		jl = json_array();
		jp = t.p.proba ? json_array() : NULL;
	}
	if (e == PX_OK && (!x || !probs || !y || (t.o.json && !jl) ||
			   (t.p.proba && t.o.json && !jp)))
		e = px_errorf(&err, PX_ENOMEM, "predict: out of memory");
	for (uint32_t i = 0; e == PX_OK && i < set.n; i += TRAIN_EVAL_BATCH) {
		uint32_t n = set.n - i < TRAIN_EVAL_BATCH ? set.n - i
							  : TRAIN_EVAL_BATCH;

		for (uint32_t j = 0; j < n; j++)
			idx[j] = i + j;
		data_gather(&set, idx, n, x, y);
		e = model_probs(mc, w, x, y, n, probs, &err);
		if (e == PX_OK)
			correct += predict_batch(probs, y, n, &prep, t.p.proba,
						 stdout, jl, jp);
	}
	if (e != PX_OK)
		goto out;
	e = predict_result(&t, model, data, &d, &prep, set.n, correct, jl, jp,
			   &err);
out:
	if (e != PX_OK)
		log_err("%s", err.msg);
	json_decref(jl);
	json_decref(jp);
	model_ctx_free(mc);
	data_release(&set);
	data_prep_release(&prep);
	free(w);
	free(x);
	free(probs);
	free(y);
	return tx_exit_for(e);
}
