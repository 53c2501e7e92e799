/* jobreq.c -- the submit request: job spec + trainer + world (jobreq.h). */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../bidbrain/policy.h"
#include "../cloudapi/fetch.h"
#include "../trainer/io/data_url.h"
#include "config.h"
#include "jobreq.h"
#include "workload.h"

#define KEY_SHOWN 64             /* bytes of a field's name in a message */

/* A field's name as a message shows it: terminal-safe, at most KEY_SHOWN
 * bytes and "..." (an unknown field may have any name). */
static const char *shown(const char *k, char *buf, size_t len)
{
	char tmp[KEY_SHOWN + 1];
	size_t n;

	snprintf(tmp, sizeof tmp, "%s", k);
	px_term_safe(tmp, buf, len);
	n = strlen(buf);
	if (strlen(k) > KEY_SHOWN && n + 4 <= len)
		memcpy(buf + n, "...", 4);
	return buf;
}

static enum px_err bad(struct px_error *err, const char *name,
		       const char *sec, const char *key, const char *what)
{
	char k[PX_TERM_SAFE_LEN(KEY_SHOWN) + 3];

	return px_errorf(err, PX_EINVAL, "%s: %s.%s: %s", name, sec,
			 shown(key, k, sizeof k), what);
}

/* A number in [lo, hi] (lo excluded when open_lo). */
static enum px_err num(json_t *v, const char *name, const char *sec,
		       const char *key, double lo, bool open_lo, double hi,
		       double *ret, struct px_error *err)
{
	double x;
	char what[128];

	if (!json_is_number(v))
		return bad(err, name, sec, key, "must be a number");
	x = json_number_value(v);
	if (!isfinite(x) || (open_lo ? x <= lo : x < lo) || x > hi) {
		snprintf(what, sizeof what, "%g is out of range (%s%g to %g)",
			 x, open_lo ? "above " : "", lo, hi);
		return bad(err, name, sec, key, what);
	}
	*ret = x;
	return PX_OK;
}

static enum px_err whole(json_t *v, const char *name, const char *sec,
			 const char *key, long lo, long hi, int *ret,
			 struct px_error *err)
{
	char what[128];

	if (!json_is_integer(v))
		return bad(err, name, sec, key, "must be a whole number");
	json_int_t x = json_integer_value(v);
	if (x < lo || x > hi) {
		snprintf(what, sizeof what, "%lld is out of range (%ld to %ld)",
			 (long long)x, lo, hi);
		return bad(err, name, sec, key, what);
	}
	*ret = (int)x;
	return PX_OK;
}

/* A string of printable characters that fits len bytes. */
static enum px_err text(json_t *v, const char *name, const char *sec,
			const char *key, char *out, size_t len,
			struct px_error *err)
{
	const char *s;

	if (!json_is_string(v))
		return bad(err, name, sec, key, "must be a string");
	s = json_string_value(v);
	if (json_string_length(v) >= len) {
		char what[96];

		snprintf(what, sizeof what, "at most %zu bytes (this one has "
			 "%zu)", len - 1, json_string_length(v));
		return bad(err, name, sec, key, what);
	}
	if (strlen(s) != json_string_length(v) ||
	    px_ctrl_at(s, strlen(s)) >= 0)
		return bad(err, name, sec, key, "has a control character");
	snprintf(out, len, "%s", s);
	return PX_OK;
}

/* text() that must be a or b. */
static enum px_err either(json_t *v, const char *name, const char *sec,
			  const char *key, char *out, size_t len,
			  const char *a, const char *b, struct px_error *err)
{
	enum px_err r = text(v, name, sec, key, out, len, err);

	if (r == PX_OK && strcmp(out, a) && strcmp(out, b))
		return px_errorf(err, PX_EINVAL, "%s: %s.%s: must be \"%s\" "
				 "or \"%s\"", name, sec, key, a, b);
	return r;
}

/* trainer.data: {"train": PATH, "test": PATH, "format": ..., "scale":
 * ..., "label_column": N, "train_sha256": HEX, "test_sha256": HEX}; both
 * files absolute paths or URLs (s3://, https://, file://; a URL needs its
 * SHA-256, which the nodes check: trainer/io/data_url.h). */
static enum px_err parse_data(json_t *o, const char *name,
			      struct job_data *d, struct px_error *err)
{
	const char *k;
	json_t *v;
	enum px_err r = PX_OK;

	*d = (struct job_data){ .scale = "none", .label_column = 1 };
	if (!json_is_object(o))
		return px_errorf(err, PX_EINVAL, "%s: trainer.data: must be an "
				 "object", name);
	json_object_foreach(o, k, v) {
		if (!strcmp(k, "train") || !strcmp(k, "test")) {
			char *to = k[1] == 'r' ? d->train : d->test;

			r = text(v, name, "trainer.data", k, to,
				 sizeof d->train, err);
			if (r == PX_OK && to[0] != '/' && !data_is_url(to))
				r = bad(err, name, "trainer.data", k, "must be "
					"an absolute path (proteusctl submit "
					"makes it one) or a URL");
		} else if (!strcmp(k, "train_sha256") ||
			   !strcmp(k, "test_sha256")) {
			char *to = k[1] == 'r' ? d->train_sha256 :
				   d->test_sha256;

			r = text(v, name, "trainer.data", k, to,
				 sizeof d->train_sha256, err);
			if (r == PX_OK && !fetch_sha256_valid(to))
				r = bad(err, name, "trainer.data", k, "must be "
					"a SHA-256: 64 hex digits");
		} else if (!strcmp(k, "format")) {
			r = text(v, name, "trainer.data", k, d->format,
				 sizeof d->format, err);
			if (r == PX_OK && strcmp(d->format, "libsvm") &&
			    strcmp(d->format, "csv") && strcmp(d->format, "idx"))
				r = bad(err, name, "trainer.data", k, "must be "
					"\"libsvm\", \"csv\" or \"idx\"");
		} else if (!strcmp(k, "scale")) {
			r = either(v, name, "trainer.data", k, d->scale,
				   sizeof d->scale, "none", "standard", err);
		} else if (!strcmp(k, "label_column")) {
			r = whole(v, name, "trainer.data", k, 1, 65537,
				  &d->label_column, err);
		} else {
			r = bad(err, name, "trainer.data", k, "unknown field");
		}
		if (r != PX_OK)
			return r;
	}
	if (!d->train[0] || !d->test[0])
		return bad(err, name, "trainer.data", d->train[0] ? "test" :
			   "train", "missing (a training set and a test set, "
			   "each a file)");
	if (data_is_url(d->train) && !d->train_sha256[0])
		return bad(err, name, "trainer.data", "train_sha256", "missing "
			   "(a file named by URL is checked by its SHA-256)");
	if (data_is_url(d->test) && !d->test_sha256[0])
		return bad(err, name, "trainer.data", "test_sha256", "missing "
			   "(a file named by URL is checked by its SHA-256)");
	return PX_OK;
}

/* What a matrix factorization takes (docs/trainer.md, "Matrix
 * factorization"): ratings of its own, the CPU, no accuracy, no feature
 * scaling or label column; rank is its alone. */
static enum px_err check_mf(const char *name, const struct job_trainer *t,
			    struct px_error *err)
{
	const struct job_data *d = &t->data;

	if (strcmp(t->model, "mf"))
		return t->rank ? bad(err, name, "trainer", "rank", "only for "
				     "model \"mf\"") : PX_OK;
	if (!d->train[0])
		return bad(err, name, "trainer", "data", "model \"mf\" needs "
			   "its ratings: train and test files of "
			   "user,item,rating lines");
	if (strcmp(t->device, "cpu"))
		return bad(err, name, "trainer", "device", "model \"mf\" "
			   "trains on the CPU");
	if (t->target_accuracy > 0)
		return bad(err, name, "trainer", "target_accuracy", "model "
			   "\"mf\" has no accuracy (it reports an RMSE)");
	if (d->format[0] && strcmp(d->format, "csv"))
		return bad(err, name, "trainer.data", "format", "model \"mf\" "
			   "reads CSV ratings");
	if (strcmp(d->scale, "none"))
		return bad(err, name, "trainer.data", "scale", "not for model "
			   "\"mf\" (ratings are not scaled)");
	if (d->label_column != 1)
		return bad(err, name, "trainer.data", "label_column", "not for "
			   "model \"mf\" (user,item,rating columns)");
	return PX_OK;
}

static enum px_err parse_trainer(json_t *o, const char *name,
				 struct job_trainer *t, struct px_error *err)
{
	const char *k;
	json_t *v;
	enum px_err r = PX_OK;

	*t = (struct job_trainer){.model = "mlr", .epochs = 1, .batch = 128,
				  .lr = 0.05, .workers_per_instance = 1,
				  .device = "cpu"};
	if (!o)
		return PX_OK;
	if (!json_is_object(o))
		return px_errorf(err, PX_EINVAL, "%s: trainer: must be an "
				 "object", name);
	json_object_foreach(o, k, v) {
		if (!strcmp(k, "model")) {
			r = text(v, name, "trainer", k, t->model,
				 sizeof t->model, err);
			if (r == PX_OK && strcmp(t->model, "mlr") &&
			    strcmp(t->model, "mlp") && strcmp(t->model, "mf"))
				r = bad(err, name, "trainer", k, "must be "
					"\"mlr\", \"mlp\" or \"mf\"");
		} else if (!strcmp(k, "rank")) {
			r = whole(v, name, "trainer", k, 1, 1024, &t->rank,
				  err);
		} else if (!strcmp(k, "epochs")) {
			r = whole(v, name, "trainer", k, 1, 1000, &t->epochs,
				  err);
		} else if (!strcmp(k, "target_accuracy")) {
			r = num(v, name, "trainer", k, 0, true, 1,
				&t->target_accuracy, err);
		} else if (!strcmp(k, "batch")) {
			r = whole(v, name, "trainer", k, 1, 65536, &t->batch,
				  err);
		} else if (!strcmp(k, "lr")) {
			r = num(v, name, "trainer", k, 0, true, 10, &t->lr,
				err);
		} else if (!strcmp(k, "workers_per_instance")) {
			r = whole(v, name, "trainer", k, 1, 16,
				  &t->workers_per_instance, err);
		} else if (!strcmp(k, "device")) {
			r = either(v, name, "trainer", k, t->device,
				   sizeof t->device, "cpu", "cuda", err);
		} else if (!strcmp(k, "checkpoint_every")) {
			r = whole(v, name, "trainer", k, 0, 1000000,
				  &t->checkpoint_every, err);
		} else if (!strcmp(k, "checkpoint_budget")) {
			/* a record's fixed part and one parameter at least
			 * (ckpt.h) */
			r = whole(v, name, "trainer", k, 0, 1 << 30,
				  &t->checkpoint_budget, err);
			if (r == PX_OK && t->checkpoint_budget &&
			    t->checkpoint_budget < 104)
				r = bad(err, name, "trainer", k, "0 (every "
					"checkpoint full) or at least 104 bytes");
		} else if (!strcmp(k, "adapt")) {
			if (json_is_boolean(v))
				t->adapt = json_is_true(v);
			else
				r = bad(err, name, "trainer", k, "must be true "
					"or false");
		} else if (!strcmp(k, "data")) {
			r = parse_data(v, name, &t->data, err);
		} else {
			r = bad(err, name, "trainer", k, "unknown field");
		}
		if (r != PX_OK)
			return r;
	}
	return check_mf(name, t, err);
}

/* world.name: a world the registry has that runs the daemon's jobs. */
static enum px_err world_name(const char *buf, const char *name,
			      struct job_world *w, struct px_error *err)
{
	const struct world_ops *o = world_ops_by_name(buf);
	char names[128], what[160];

	if (o && o->create) {
		snprintf(w->name, sizeof w->name, "%s", o->name);
		return PX_OK;
	}
	world_daemon_names(names, sizeof names, "\"", " or ");
	snprintf(what, sizeof what, "must be %s", names);
	return bad(err, name, "world", "name", what);
}

static enum px_err parse_world(json_t *o, const char *name,
			       struct job_world *w, struct px_error *err)
{
	const struct world_ops *o2;
	const char *k;
	json_t *v;
	enum px_err r = PX_OK;
	char buf[64];

	memset(w, 0, sizeof *w);
	if (!o)
		return PX_OK;
	if (json_is_string(o)) {           /* "world": "local" */
		json_t *tmp = json_pack("{s:O}", "name", o);

		r = tmp ? parse_world(tmp, name, w, err) :
			  px_errorf(err, PX_ENOMEM, "out of memory");
		json_decref(tmp);
		return r;
	}
	if (!json_is_object(o))
		return px_errorf(err, PX_EINVAL, "%s: world: must be a name or "
				 "an object", name);
	json_object_foreach(o, k, v) {
		if (!strcmp(k, "name")) {
			w->named = true;
			r = text(v, name, "world", k, buf, sizeof buf, err);
			if (r == PX_OK)
				r = world_name(buf, name, w, err);
		} else if (!strcmp(k, "speedup")) {
			r = num(v, name, "world", k, 1, false,
				JOBREQ_SPEEDUP_MAX, &w->speedup, err);
		} else if (!strcmp(k, "start")) {
			r = text(v, name, "world", k, buf, sizeof buf, err);
			if (r == PX_OK && px_parse_time(buf, strlen(buf),
							&w->start_s) != PX_OK)
				r = bad(err, name, "world", k, "must be a "
					"time like 2016-03-01 or "
					"2016-03-01T12:00:00Z");
		} else if (!strcmp(k, "billing")) {
			r = text(v, name, "world", k, buf, sizeof buf, err);
			if (r == PX_OK) {
				struct px_error e2;

				if (billing_model_parse(buf, &w->billing,
							&e2) != PX_OK)
					r = bad(err, name, "world", k, e2.msg);
				w->have_billing = true;
			}
		} else if (!strcmp(k, "trace")) {
			r = text(v, name, "world", k, w->trace,
				 sizeof w->trace, err);
		} else if (!strcmp(k, "ondemand_prices")) {
			r = text(v, name, "world", k, w->ondemand,
				 sizeof w->ondemand, err);
		} else if (!strcmp(k, "rebalance")) {
			r = text(v, name, "world", k, buf, sizeof buf, err);
			if (r == PX_OK && (!strcmp(buf, "leave") ||
					   !strcmp(buf, "ignore")))
				w->rebalance_leave = !strcmp(buf, "leave");
			else if (r == PX_OK)
				r = bad(err, name, "world", k, "must be "
					"\"ignore\" or \"leave\"");
		} else {
			r = bad(err, name, "world", k, "unknown field");
		}
		if (r != PX_OK)
			return r;
	}
	/* the rules of the world it names are the world's (world.h) */
	o2 = w->named ? world_ops_by_name(w->name) : NULL;
	if (o2 && o2->spec_check)
		return o2->spec_check(w, name, err);
	return PX_OK;
}

/* "workload": one of the workloads proteusd knows; default trainer. */
static enum px_err parse_workload(json_t *v, const char *name, char *buf,
				  size_t len, struct px_error *err)
{
	char known[256];

	snprintf(buf, len, "%s", workload_trainer.name);
	if (!v)
		return PX_OK;
	if (!json_is_string(v))
		return px_errorf(err, PX_EINVAL, "%s: workload: must be a "
				 "string", name);
	if (!workload_of(json_string_value(v))) {
		char safe[PX_TERM_SAFE_LEN(64)];

		px_term_safe(json_string_value(v), safe, sizeof safe);
		workload_names(known, sizeof known);
		return px_errorf(err, PX_EINVAL, "%s: workload: unknown "
				 "workload '%s' (known: %s)", name, safe,
				 known);
	}
	snprintf(buf, len, "%s", json_string_value(v));
	return PX_OK;
}

/* "policy": one of the policies simulate knows; default bidbrain. */
static enum px_err parse_policy(json_t *v, const char *name, char *buf,
				size_t len, struct px_error *err)
{
	const struct policy_ops *p;
	struct px_error e2 = {0};

	snprintf(buf, len, "bidbrain");
	if (!v)
		return PX_OK;
	if (!json_is_string(v))
		return px_errorf(err, PX_EINVAL, "%s: policy: must be a "
				 "string", name);
	if (json_string_length(v) >= len)
		return px_errorf(err, PX_EINVAL, "%s: policy: at most %zu "
				 "bytes (this one has %zu)", name, len - 1,
				 json_string_length(v));
	if (px_ctrl_at(json_string_value(v), json_string_length(v)) >= 0)
		return px_errorf(err, PX_EINVAL, "%s: policy: has a control "
				 "character", name);
	if (policy_lookup(json_string_value(v), &p, &e2) != PX_OK)
		return px_errorf(err, PX_EINVAL, "%s: policy: %s", name,
				 e2.msg[0] ? e2.msg : "unknown policy");
	snprintf(buf, len, "%s", json_string_value(v));
	return PX_OK;
}

/* "notify_url": an http(s) URL without a user or password (the job's
 * events go there as JSON: agent/notify.h). */
static enum px_err parse_notify(json_t *v, const char *name, char *buf,
				size_t len, struct px_error *err)
{
	char why[256];

	buf[0] = 0;
	if (!v)
		return PX_OK;
	if (!json_is_string(v))
		return px_errorf(err, PX_EINVAL, "%s: notify_url: must be a "
				 "string", name);
	if (json_string_length(v) >= len)
		return px_errorf(err, PX_EINVAL, "%s: notify_url: at most %zu "
				 "bytes (this one has %zu)", name, len - 1,
				 json_string_length(v));
	if (strlen(json_string_value(v)) != json_string_length(v) ||
	    !config_url_check(json_string_value(v), why, sizeof why))
		return px_errorf(err, PX_EINVAL, "%s: notify_url: %s", name,
				 strlen(json_string_value(v)) !=
				 json_string_length(v) ? "has a NUL byte" :
				 why);
	snprintf(buf, len, "%s", json_string_value(v));
	return PX_OK;
}

/* "scaling_explore": true, false or {"start", "growth"} (docs/jobspec.md);
 * on by default where it can help: the measured scaling in use and a
 * policy that plans with it (BidBrain). */
static enum px_err parse_explore(json_t *o, const char *name,
				 struct job_request *ret, struct px_error *err)
{
	bool can = ret->scaling_measured && !strcmp(ret->policy, "bidbrain");
	const char *k;
	json_t *v;
	enum px_err r = PX_OK;

	ret->explore.on = can;
	ret->explore.start = JOBREQ_EXPLORE_START;
	ret->explore.growth = JOBREQ_EXPLORE_GROWTH;
	if (!o)
		return PX_OK;
	if (json_is_false(o)) {
		ret->explore.on = false;
		return PX_OK;
	}
	if (!json_is_true(o) && !json_is_object(o))
		return px_errorf(err, PX_EINVAL, "%s: scaling_explore: must be "
				 "true, false or an object {\"start\", "
				 "\"growth\"}", name);
	if (!ret->scaling_measured)
		return px_errorf(err, PX_EINVAL, "%s: scaling_explore: needs "
				 "the measured scaling, and scaling_measured "
				 "is false (the exploration is for it)", name);
	if (!can)
		return px_errorf(err, PX_EINVAL, "%s: scaling_explore: policy "
				 "'%s' does not plan with the measured "
				 "scaling; only bidbrain does", name,
				 ret->policy);
	json_object_foreach(o, k, v) {
		if (!strcmp(k, "start"))
			r = whole(v, name, "scaling_explore", k, 1,
				  JOBSPEC_MEASURED_MAX, &ret->explore.start,
				  err);
		else if (!strcmp(k, "growth"))
			r = num(v, name, "scaling_explore", k,
				JOBREQ_GROWTH_MIN, false, JOBREQ_GROWTH_MAX,
				&ret->explore.growth, err);
		else if (k[0] != '_')
			r = bad(err, name, "scaling_explore", k,
				"unknown field");
		if (r != PX_OK)
			return r;
	}
	return PX_OK;
}

/* Top-level fields whose name starts with '_' are comments (jobspec_parse
 * skips them): out of the spec before it is measured.  A name no field
 * has (too long, or with a control character) is refused here, shown
 * safely (jobspec_parse would print it whole). */
static enum px_err drop_comments(json_t *root, const char *name,
				 struct px_error *err)
{
	char shown_k[PX_TERM_SAFE_LEN(KEY_SHOWN) + 3];
	const char *k;
	json_t *v;
	void *tmp;

	json_object_foreach_safe(root, tmp, k, v) {
		if (k[0] == '_')
			json_object_del(root, k);
		else if (strlen(k) > KEY_SHOWN || px_ctrl_at(k, strlen(k)) >= 0)
			return px_errorf(err, PX_EINVAL, "%s: %s: unknown "
					 "field", name,
					 shown(k, shown_k, sizeof shown_k));
	}
	return PX_OK;
}

/* The spec, compact, is over JOBSPEC_FILE_MAX: name its largest field
 * (the one to cut), with the sizes. */
static enum px_err too_big(json_t *root, size_t n, const char *name,
			   struct px_error *err)
{
	char shown_k[PX_TERM_SAFE_LEN(KEY_SHOWN) + 3] = "?";
	size_t most = 0, m;
	const char *k;
	json_t *v;
	char *s;

	json_object_foreach(root, k, v) {
		s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
		m = s ? strlen(s) : 0;
		free(s);
		if (m > most) {
			most = m;
			shown(k, shown_k, sizeof shown_k);
		}
	}
	return px_errorf(err, PX_ETOOBIG, "%s: %s: %zu bytes once written as "
			 "compact JSON (numbers in up to 17 digits, a "
			 "scaling_profile file inlined), which makes the job "
			 "spec %zu, more than the %d it may have", name,
			 shown_k, most, n, JOBSPEC_FILE_MAX);
}

enum px_err jobreq_parse(const char *buf, size_t len, const char *name,
			 struct job_request *ret, struct px_error *err)
{
	json_error_t je;
	json_t *root, *tr, *wo, *po, *nu, *sm, *ex, *wl;
	char *rest = NULL;
	enum px_err r;

	if (len > JOBREQ_SENT_MAX)
		return px_errorf(err, PX_ETOOBIG, "%s: %zu bytes, more than "
				 "the %d a submitted job may have", name, len,
				 JOBREQ_SENT_MAX);
	root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);
	if (!root)
		return px_errorf(err, PX_EINVAL, "%s:%d:%d: %s", name,
				 je.line, je.column, je.text);
	if (!json_is_object(root)) {
		json_decref(root);
		return px_errorf(err, PX_EINVAL, "%s: a job is a JSON object",
				 name);
	}
	memset(ret, 0, sizeof *ret);
	tr = json_incref(json_object_get(root, "trainer"));
	wo = json_incref(json_object_get(root, "world"));
	po = json_incref(json_object_get(root, "policy"));
	nu = json_incref(json_object_get(root, "notify_url"));
	sm = json_incref(json_object_get(root, "scaling_measured"));
	ex = json_incref(json_object_get(root, "scaling_explore"));
	wl = json_incref(json_object_get(root, "workload"));
	json_object_del(root, "workload");
	json_object_del(root, "notify_url");
	json_object_del(root, "scaling_measured");
	json_object_del(root, "scaling_explore");
	json_object_del(root, "trainer");
	json_object_del(root, "world");
	json_object_del(root, "policy");
	r = drop_comments(root, name, err);
	if (r == PX_OK)
		r = parse_policy(po, name, ret->policy, sizeof ret->policy,
				 err);
	if (r == PX_OK)
		r = parse_workload(wl, name, ret->workload,
				   sizeof ret->workload, err);
	if (r == PX_OK)
		r = parse_notify(nu, name, ret->notify_url,
				 sizeof ret->notify_url, err);
	ret->scaling_measured = !sm || json_is_true(sm);
	if (r == PX_OK && sm && !json_is_boolean(sm))
		r = px_errorf(err, PX_EINVAL, "%s: scaling_measured: must be "
			      "true or false", name);
	if (r == PX_OK)
		r = parse_explore(ex, name, ret, err);
	if (r == PX_OK)
		r = parse_trainer(tr, name, &ret->trainer, err);
	if (r == PX_OK)
		r = parse_world(wo, name, &ret->world, err);
	if (r == PX_OK) {
		/* the rest is simulate's job spec, with its own checks */
		rest = json_dumps(root, JSON_COMPACT);
		r = !rest ? px_errorf(err, PX_ENOMEM, "out of memory") :
		    strlen(rest) > JOBSPEC_FILE_MAX ?
			    too_big(root, strlen(rest), name, err) :
			    jobspec_parse(rest, strlen(rest), name, &ret->spec,
					  err);
	}
	/* the daemon reads no file a job names by a relative path (whose
	 * folder would it be?), and keeps no profile outside the job:
	 * proteusctl submit inlines the profile and makes paths absolute */
	if (r == PX_OK && ret->spec.profile_path[0])
		r = px_errorf(err, PX_EINVAL, "%s: scaling_profile: a file "
			      "name ('%s') is for simulate; a submitted job "
			      "carries the profile itself (proteusctl submit "
			      "inlines the file)", name,
			      ret->spec.profile_path);
	if (r == PX_OK && ret->spec.spot_advisor[0] &&
	    ret->spec.spot_advisor[0] != '/')
		r = px_errorf(err, PX_EINVAL, "%s: spot_advisor: '%s' must be "
			      "an absolute path here (proteusctl submit makes "
			      "it one)", name, ret->spec.spot_advisor);
	free(rest);
	json_decref(tr);
	json_decref(wo);
	json_decref(po);
	json_decref(nu);
	json_decref(sm);
	json_decref(ex);
	json_decref(wl);
	json_decref(root);
	return r;
}
