/* ec2_sph.c -- DescribeSpotPriceHistory over every page and zone: an
 * asynchronous walk that chains NextToken through ec2_call_start() (for
 * the daemon's event loop) and the blocking wrappers built on it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ec2_int.h"

struct ec2_sph {
	struct ec2_client *c;
	char **types;
	size_t n_types;
	char **zones;
	size_t n_zones;
	char *product;
	int64_t start_s, end_s;
	int max_results;
	trace_record_fn fn;
	ec2_sph_done_fn done;
	void *ctx;
	size_t zone;      /* zone being walked (0 when there are none) */
	char *token;      /* NextToken of the next page, NULL for the first */
	uint64_t index;   /* records so far, for trace_record.index */
	struct ec2_sph_stats st;
};

static void strv_free(char **v, size_t n)
{
	for (size_t i = 0; i < n && v; i++)
		free(v[i]);
	free(v);
}

static enum px_err strv_dup(const char *const *src, size_t n, char ***ret,
			    const char *what, struct px_error *err)
{
	char **v;

	*ret = NULL;
	if (!n)
		return PX_OK;
	v = px_calloc(n, sizeof *v);
	if (!v)
		return px_errorf(err, PX_ENOMEM, "spot price query: %s", what);
	for (size_t i = 0; i < n; i++) {
		if (!src[i] || !*src[i] || strlen(src[i]) >= EC2_NAME_MAX) {
			strv_free(v, n);
			return px_errorf(err, PX_EINVAL, "spot price query: "
					 "%s %zu is empty or longer than %d "
					 "bytes", what, i + 1,
					 EC2_NAME_MAX - 1);
		}
		v[i] = strdup(src[i]);
		if (!v[i]) {
			strv_free(v, n);
			return px_errorf(err, PX_ENOMEM, "spot price query: "
					 "%s", what);
		}
	}
	*ret = v;
	return PX_OK;
}

static void sph_free(struct ec2_sph *w)
{
	strv_free(w->types, w->n_types);
	strv_free(w->zones, w->n_zones);
	free(w->product);
	free(w->token);
	free(w);
}

static void sph_finish(struct ec2_sph *w, enum px_err rc,
		       const struct px_error *err,
		       const struct ec2_aws_error *aws)
{
	w->done(rc, &w->st, err, aws, w->ctx);
	sph_free(w);
}

static void sph_page_done(enum px_err rc, struct ec2_response *resp,
			  const struct px_error *err,
			  const struct ec2_aws_error *aws, void *ctx);

/* Start the request for the current zone and token. */
static enum px_err sph_next(struct ec2_sph *w, struct px_error *err)
{
	struct ec2_params p;
	char b[32];

	ec2_params_init(&p, "DescribeSpotPriceHistory");
	for (size_t i = 0; i < w->n_types; i++)
		ec2_params_addf(&p, w->types[i], "InstanceType.%zu", i + 1);
	ec2_params_add(&p, "ProductDescription.1", w->product);
	if (w->n_zones)
		ec2_params_add(&p, "AvailabilityZone", w->zones[w->zone]);
	if (w->start_s)
		ec2_params_add(&p, "StartTime",
			       px_format_time(w->start_s, b, sizeof b));
	if (w->end_s)
		ec2_params_add(&p, "EndTime",
			       px_format_time(w->end_s, b, sizeof b));
	snprintf(b, sizeof b, "%d", w->max_results);
	ec2_params_add(&p, "MaxResults", b);
	if (w->token)
		ec2_params_add(&p, "NextToken", w->token);
	if (p.oom) {
		ec2_params_release(&p);
		return px_errorf(err, p.oom, "spot price query: request "
				 "parameters");
	}
	return ec2_call_start(w->c, &p, sph_page_done, w, err);
}

static enum px_err sph_record(const struct trace_record *r, void *ctx,
			      struct px_error *err)
{
	struct ec2_sph *w = ctx;
	enum px_err rc = w->fn(r, w->ctx, err);

	if (rc != PX_OK)
		return rc;
	w->st.records++;
	if (r->t_s < w->st.first_s)
		w->st.first_s = r->t_s;
	if (r->t_s > w->st.last_s)
		w->st.last_s = r->t_s;
	return PX_OK;
}

static void sph_page_done(enum px_err rc, struct ec2_response *resp,
			  const struct px_error *err,
			  const struct ec2_aws_error *aws, void *ctx)
{
	struct ec2_sph *w = ctx;
	struct px_error perr;
	struct ec2_aws_error none;
	char *next = NULL;

	if (rc != PX_OK) {
		sph_finish(w, rc, err, aws);
		return;
	}
	ec2_response_aws(resp, &none);
	memset(&perr, 0, sizeof perr);
	w->st.pages++;
	rc = ec2_parse_spot_prices(resp->root, &w->index, sph_record, w,
				   &perr);
	if (rc == PX_OK)
		rc = ec2_parse_next_token(resp->root, &next, &perr);
	if (rc == PX_OK && next[0] && w->st.pages >= EC2_SPH_PAGES_MAX)
		rc = px_errorf(&perr, PX_ETOOBIG, "spot price history: over "
			       "%d pages", EC2_SPH_PAGES_MAX);
	if (rc != PX_OK) {
		free(next);
		sph_finish(w, rc, &perr, &none);
		return;
	}
	free(w->token);
	w->token = NULL;
	if (next[0]) {
		w->token = next;
	} else {
		free(next);
		if (++w->zone >= w->n_zones) {
			sph_finish(w, PX_OK, NULL, NULL);
			return;
		}
	}
	rc = sph_next(w, &perr);
	if (rc != PX_OK)
		sph_finish(w, rc, &perr, &none);
}

enum px_err ec2_sph_start(struct ec2_client *c, const struct ec2_sph_query *q,
			  trace_record_fn fn, ec2_sph_done_fn done,
			  void *ctx, struct px_error *err)
{
	struct ec2_sph *w;
	enum px_err rc;

	if (!fn || !done)
		return px_errorf(err, PX_EINVAL, "spot price query: no "
				 "callback");
	if (q->max_results < 0 || q->max_results > 1000)
		return px_errorf(err, PX_EINVAL, "spot price query: "
				 "max_results %d is not 1..1000",
				 q->max_results);
	if (q->product && (!*q->product || strlen(q->product) >= 256))
		return px_errorf(err, PX_EINVAL, "spot price query: product "
				 "is empty or too long");
	w = px_calloc(1, sizeof *w);
	if (!w)
		return px_errorf(err, PX_ENOMEM, "spot price query");
	w->c = c;
	w->fn = fn;
	w->done = done;
	w->ctx = ctx;
	w->start_s = q->start_s;
	w->end_s = q->end_s;
	w->max_results = q->max_results ? q->max_results : 1000;
	w->st.first_s = INT64_MAX;
	w->st.last_s = INT64_MIN;
	rc = strv_dup(q->types, q->n_types, &w->types, "instance type", err);
	if (rc == PX_OK)
		w->n_types = q->n_types;
	if (rc == PX_OK)
		rc = strv_dup(q->zones, q->n_zones, &w->zones, "zone", err);
	if (rc == PX_OK)
		w->n_zones = q->n_zones;
	if (rc == PX_OK) {
		w->product = strdup(q->product ? q->product : "Linux/UNIX");
		if (!w->product)
			rc = px_errorf(err, PX_ENOMEM, "spot price query");
	}
	if (rc == PX_OK)
		rc = sph_next(w, err);
	if (rc != PX_OK)
		sph_free(w);
	return rc;
}

/* ------------------------------------------------------------ blocking */

struct sph_sync {
	struct ec2_sync sync; /* first: ec2_sync_done frees through it */
	struct ec2_sph_stats st;
	trace_record_fn fn;  /* the caller's */
	void *ctx;
};

static enum px_err sph_sync_record(const struct trace_record *r, void *ctx,
				   struct px_error *err)
{
	struct sph_sync *s = ctx;

	if (s->sync.abandoned)
		return px_errorf(err, PX_ECANCELED, "spot price query "
				 "abandoned");
	return s->fn(r, s->ctx, err);
}

static void sph_sync_done(enum px_err rc, const struct ec2_sph_stats *st,
			  const struct px_error *err,
			  const struct ec2_aws_error *aws, void *ctx)
{
	struct sph_sync *s = ctx;

	if (ec2_sync_done(&s->sync, rc, err, aws))
		s->st = *st;
}

enum px_err ec2_describe_spot_price_history(
	struct ec2_client *c, const struct ec2_sph_query *q,
	trace_record_fn fn, void *ctx, struct ec2_sph_stats *ret_stats,
	struct px_error *err, struct ec2_aws_error *ret_aws)
{
	struct sph_sync *s;
	enum px_err rc;

	if (ret_aws)
		memset(ret_aws, 0, sizeof *ret_aws);
	rc = ec2_check_blocking(c, err);
	if (rc != PX_OK)
		return rc;
	if (!fn)
		return px_errorf(err, PX_EINVAL, "spot price query: no "
				 "callback");
	s = px_calloc(1, sizeof *s);
	if (!s)
		return px_errorf(err, PX_ENOMEM, "spot price query");
	s->fn = fn;
	s->ctx = ctx;
	rc = ec2_sph_start(c, q, sph_sync_record, sph_sync_done, s, err);
	if (rc != PX_OK) {
		free(s);
		return rc;
	}
	rc = ec2_sync_wait(c, &s->sync, err, ret_aws);
	if (s->sync.abandoned)
		return rc;
	if (ret_stats)
		*ret_stats = s->st;
	free(s);
	return rc;
}

enum px_err ec2_describe_spot_price_history_all(
	struct ec2_client *c, const char *const *types, size_t n_types,
	const char *const *zones, size_t n_zones, const char *product,
	int64_t start_s, int64_t end_s, trace_record_fn fn, void *ctx,
	struct px_error *err, struct ec2_aws_error *ret_aws)
{
	struct ec2_sph_query q = {
		.types = types, .n_types = n_types, .zones = zones,
		.n_zones = n_zones, .product = product, .start_s = start_s,
		.end_s = end_s, .max_results = 1000,
	};

	return ec2_describe_spot_price_history(c, &q, fn, ctx, NULL, err,
					       ret_aws);
}
