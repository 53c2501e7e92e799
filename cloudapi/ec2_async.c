/* ec2_async.c -- the typed EC2 operations.  Each is asynchronous: one
 * ec2_call_start per page, the next page (NextToken) started from the
 * previous page's completion, the items of every page gathered into one
 * list handed to done.  The blocking forms, for CLIs and tests, start the
 * same operation and drive the client until it is done.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ec2_int.h"

enum op_kind {
	OP_INSTANCES,      /* done.inst with an ec2_instance_list */
	OP_SPOT_REQUESTS,  /* done.sir with an ec2_spot_request_list */
	OP_SIMPLE,         /* done.simple: the answer is only success */
};

struct ec2_op {
	struct ec2_client *c;
	enum op_kind kind;
	struct ec2_params req; /* the request, without NextToken */
	bool paged;            /* follow nextToken */
	int pages;             /* responses parsed */
	int pages_max;
	union {
		ec2_instances_done_fn inst;
		ec2_spot_requests_done_fn sir;
		ec2_done_simple_fn simple;
	} done;
	void *ctx;
	struct ec2_instance_list il;
	struct ec2_spot_request_list sl;
};

static void op_free(struct ec2_op *op)
{
	ec2_params_release(&op->req);
	ec2_instance_list_release(&op->il);
	ec2_spot_request_list_release(&op->sl);
	free(op);
}

static void op_finish(struct ec2_op *op, enum px_err rc,
		      const struct px_error *err,
		      const struct ec2_aws_error *aws)
{
	if (rc == PX_OK) {
		err = NULL;
		aws = NULL;
	} else {
		/* the pages before a failure are not the answer */
		ec2_instance_list_release(&op->il);
		ec2_spot_request_list_release(&op->sl);
	}
	switch (op->kind) {
	case OP_INSTANCES:
		op->done.inst(rc, &op->il, err, aws, op->ctx);
		break;
	case OP_SPOT_REQUESTS:
		op->done.sir(rc, &op->sl, err, aws, op->ctx);
		break;
	case OP_SIMPLE:
		op->done.simple(rc, err, aws, op->ctx);
		break;
	}
	op_free(op);
}

static const char *op_action(const struct ec2_op *op)
{
	return op->req.kv[1];
}

static void op_page_done(enum px_err rc, struct ec2_response *resp,
			 const struct px_error *err,
			 const struct ec2_aws_error *aws, void *ctx);

/* Start the request for one page: the first (token NULL) or the one
 * after the page whose nextToken is token. */
static enum px_err op_send(struct ec2_op *op, const char *token,
			   struct px_error *err)
{
	struct ec2_params p;
	enum px_err rc = ec2_params_copy(&p, &op->req, token, err);

	if (rc != PX_OK)
		return rc;
	return ec2_call_start(op->c, &p, op_page_done, op, err);
}

static enum px_err op_parse(struct ec2_op *op, const xmlNode *root,
			    struct px_error *err)
{
	switch (op->kind) {
	case OP_INSTANCES:
		return ec2_parse_instances(root, &op->il, err);
	case OP_SPOT_REQUESTS:
		return ec2_parse_spot_requests(root, &op->sl, err);
	case OP_SIMPLE:
		break;
	}
	return PX_OK;
}

static void op_page_done(enum px_err rc, struct ec2_response *resp,
			 const struct px_error *err,
			 const struct ec2_aws_error *aws, void *ctx)
{
	struct ec2_op *op = ctx;
	struct ec2_aws_error none;
	struct px_error perr;
	char *next = NULL;

	if (rc != PX_OK) {
		op_finish(op, rc, err, aws);
		return;
	}
	/* What can fail from here on is no AWS error; say which response it
	 * was. */
	ec2_response_aws(resp, &none);
	px_error_clear(&perr);
	op->pages++;
	rc = op_parse(op, resp->root, &perr);
	if (rc == PX_OK && op->paged)
		rc = ec2_parse_next_token(resp->root, &next, &perr);
	if (rc == PX_OK && next && next[0]) {
		if (op->pages >= op->pages_max)
			rc = px_errorf(&perr, PX_ETOOBIG, "more than %d pages",
				       op->pages_max);
		else
			rc = op_send(op, next, &perr);
		if (rc == PX_OK) {
			free(next);
			return; /* the next page's completion goes on */
		}
	}
	free(next);
	if (rc != PX_OK)
		px_error_prefix(&perr, "%s: ", op_action(op));
	op_finish(op, rc, &perr, &none);
}

static enum px_err op_new(struct ec2_client *c, enum op_kind kind,
			  bool has_done, void *ctx, struct ec2_op **ret,
			  struct px_error *err)
{
	struct ec2_op *op = NULL;

	if (!has_done)
		return px_errorf(err, PX_EINVAL, "ec2 operation without a "
				 "completion callback");
	op = px_calloc(1, sizeof *op);
	if (!op)
		return px_errorf(err, PX_ENOMEM, "ec2 operation");
	op->c = c;
	op->kind = kind;
	op->ctx = ctx;
	op->pages_max = 1;
	*ret = op;
	return PX_OK;
}

/* rc: how building op->req went.  Starts the first page, or frees op. */
static enum px_err op_go(struct ec2_op *op, enum px_err rc,
			 struct px_error *err)
{
	if (rc == PX_OK)
		rc = op_send(op, NULL, err);
	if (rc != PX_OK)
		op_free(op);
	return rc;
}

enum px_err ec2_run_instances_start(struct ec2_client *c,
				    const struct ec2_run_req *req,
				    ec2_instances_done_fn done, void *ctx,
				    struct px_error *err)
{
	struct ec2_op *op = NULL;
	enum px_err rc = op_new(c, OP_INSTANCES, done != NULL, ctx, &op, err);

	if (rc != PX_OK)
		return rc;
	op->done.inst = done;
	return op_go(op, ec2_build_run_instances(req, &op->req, err), err);
}

static enum px_err request_spot_start(struct ec2_client *c,
				      const struct ec2_spot_req *req,
				      ec2_spot_requests_done_fn done,
				      void *ctx, struct px_error *err)
{
	struct ec2_op *op = NULL;
	enum px_err rc = op_new(c, OP_SPOT_REQUESTS, done != NULL, ctx, &op, err);

	if (rc != PX_OK)
		return rc;
	op->done.sir = done;
	return op_go(op, ec2_build_request_spot(req, &op->req, err), err);
}

/* A Describe* operation over every page. */
static enum px_err describe_go(struct ec2_op *op, const char *action,
			       const char *id_name, const char *const *ids,
			       size_t n_ids, const struct ec2_filter *filters,
			       size_t n_filters, bool retry_not_found,
			       struct px_error *err)
{
	int max_results;
	enum px_err rc;

	ec2_client_paging(op->c, &max_results, &op->pages_max);
	op->paged = true;
	rc = ec2_build_describe(action, id_name, ids, n_ids, filters,
				n_filters, max_results, &op->req, err);
	op->req.retry_not_found = retry_not_found;
	return op_go(op, rc, err);
}

enum px_err ec2_describe_instances_start(struct ec2_client *c,
					 const char *const *ids, size_t n_ids,
					 const struct ec2_filter *filters,
					 size_t n_filters,
					 bool retry_not_found,
					 ec2_instances_done_fn done, void *ctx,
					 struct px_error *err)
{
	struct ec2_op *op = NULL;
	enum px_err rc = op_new(c, OP_INSTANCES, done != NULL, ctx, &op, err);

	if (rc != PX_OK)
		return rc;
	op->done.inst = done;
	return describe_go(op, "DescribeInstances", "InstanceId", ids, n_ids,
			   filters, n_filters, retry_not_found, err);
}

enum px_err ec2_describe_spot_requests_start(
	struct ec2_client *c, const char *const *ids, size_t n_ids,
	const struct ec2_filter *filters, size_t n_filters,
	bool retry_not_found, ec2_spot_requests_done_fn done, void *ctx,
	struct px_error *err)
{
	struct ec2_op *op = NULL;
	enum px_err rc = op_new(c, OP_SPOT_REQUESTS, done != NULL, ctx, &op, err);

	if (rc != PX_OK)
		return rc;
	op->done.sir = done;
	return describe_go(op, "DescribeSpotInstanceRequests",
			   "SpotInstanceRequestId", ids, n_ids, filters,
			   n_filters, retry_not_found, err);
}

static enum px_err id_call_start(struct ec2_client *c, const char *action,
				 const char *id_name, const char *const *ids,
				 size_t n_ids, ec2_done_simple_fn done,
				 void *ctx, struct px_error *err)
{
	struct ec2_op *op = NULL;
	enum px_err rc = op_new(c, OP_SIMPLE, done != NULL, ctx, &op, err);

	if (rc != PX_OK)
		return rc;
	op->done.simple = done;
	return op_go(op, ec2_build_id_call(action, id_name, ids, n_ids,
					   &op->req, err), err);
}

enum px_err ec2_terminate_instances_start(struct ec2_client *c,
					  const char *const *ids,
					  size_t n_ids,
					  ec2_done_simple_fn done, void *ctx,
					  struct px_error *err)
{
	return id_call_start(c, "TerminateInstances", "InstanceId", ids,
			     n_ids, done, ctx, err);
}

enum px_err ec2_cancel_spot_requests_start(struct ec2_client *c,
					   const char *const *ids,
					   size_t n_ids,
					   ec2_done_simple_fn done, void *ctx,
					   struct px_error *err)
{
	return id_call_start(c, "CancelSpotInstanceRequests",
			     "SpotInstanceRequestId", ids, n_ids, done, ctx,
			     err);
}

enum px_err ec2_create_tags_start(struct ec2_client *c,
				  const char *const *resource_ids,
				  size_t n_ids, const struct ec2_tag *tags,
				  size_t n_tags, ec2_done_simple_fn done,
				  void *ctx, struct px_error *err)
{
	struct ec2_op *op = NULL;
	enum px_err rc = op_new(c, OP_SIMPLE, done != NULL, ctx, &op, err);

	if (rc != PX_OK)
		return rc;
	op->done.simple = done;
	return op_go(op, ec2_build_create_tags(resource_ids, n_ids, tags,
					       n_tags, &op->req, err), err);
}

/* ------------------------------------------------------------ blocking */

struct op_sync {
	struct ec2_sync sync; /* first: ec2_sync_done frees through it */
	struct ec2_instance_list il;
	struct ec2_spot_request_list sl;
};

static void sync_instances(enum px_err rc, struct ec2_instance_list *l,
			   const struct px_error *err,
			   const struct ec2_aws_error *aws, void *ctx)
{
	struct op_sync *s = ctx;

	if (!ec2_sync_done(&s->sync, rc, err, aws))
		return;
	s->il = *l;
	l->v = NULL;
	l->n = 0;
}

static void sync_spot_requests(enum px_err rc,
			       struct ec2_spot_request_list *l,
			       const struct px_error *err,
			       const struct ec2_aws_error *aws, void *ctx)
{
	struct op_sync *s = ctx;

	if (!ec2_sync_done(&s->sync, rc, err, aws))
		return;
	s->sl = *l;
	l->v = NULL;
	l->n = 0;
}

static void sync_simple(enum px_err rc, const struct px_error *err,
			const struct ec2_aws_error *aws, void *ctx)
{
	struct op_sync *s = ctx;

	(void)ec2_sync_done(&s->sync, rc, err, aws);
}

static enum px_err sync_new(struct ec2_client *c, struct op_sync **ret,
			    struct px_error *err)
{
	enum px_err rc = ec2_check_blocking(c, err);

	if (rc != PX_OK)
		return rc;
	*ret = px_calloc(1, sizeof **ret);
	if (!*ret)
		return px_errorf(err, PX_ENOMEM, "ec2 operation");
	return PX_OK;
}

/* started: what the _start call returned.  Drives c until the operation
 * is done, then hands its list (if any) to ret_il or ret_sl. */
static enum px_err sync_end(struct ec2_client *c, struct op_sync *s,
			    enum px_err started,
			    struct ec2_instance_list *ret_il,
			    struct ec2_spot_request_list *ret_sl,
			    struct px_error *err,
			    struct ec2_aws_error *ret_aws)
{
	enum px_err rc = started;

	if (rc == PX_OK)
		rc = ec2_sync_wait(c, &s->sync, err, ret_aws);
	if (s->sync.abandoned)
		return rc; /* its completion frees s */
	if (rc == PX_OK && ret_il)
		*ret_il = s->il;
	if (rc == PX_OK && ret_sl)
		*ret_sl = s->sl;
	free(s);
	return rc;
}

enum px_err ec2_run_instances(struct ec2_client *c,
			      const struct ec2_run_req *req,
			      struct ec2_instance_list *ret,
			      struct px_error *err,
			      struct ec2_aws_error *ret_aws)
{
	struct op_sync *s = NULL;
	enum px_err rc = sync_new(c, &s, err);

	if (rc != PX_OK)
		return rc;
	rc = ec2_run_instances_start(c, req, sync_instances, s, err);
	return sync_end(c, s, rc, ret, NULL, err, ret_aws);
}

enum px_err ec2_request_spot_instances(struct ec2_client *c,
				       const struct ec2_spot_req *req,
				       struct ec2_spot_request_list *ret,
				       struct px_error *err,
				       struct ec2_aws_error *ret_aws)
{
	struct op_sync *s = NULL;
	enum px_err rc = sync_new(c, &s, err);

	if (rc != PX_OK)
		return rc;
	rc = request_spot_start(c, req, sync_spot_requests, s, err);
	return sync_end(c, s, rc, NULL, ret, err, ret_aws);
}

enum px_err ec2_describe_instances(struct ec2_client *c,
				   const char *const *ids, size_t n_ids,
				   const struct ec2_filter *filters,
				   size_t n_filters, bool retry_not_found,
				   struct ec2_instance_list *ret,
				   struct px_error *err,
				   struct ec2_aws_error *ret_aws)
{
	struct op_sync *s = NULL;
	enum px_err rc = sync_new(c, &s, err);

	if (rc != PX_OK)
		return rc;
	rc = ec2_describe_instances_start(c, ids, n_ids, filters, n_filters,
					  retry_not_found, sync_instances, s,
					  err);
	return sync_end(c, s, rc, ret, NULL, err, ret_aws);
}

enum px_err ec2_describe_spot_requests(struct ec2_client *c,
				       const char *const *ids, size_t n_ids,
				       const struct ec2_filter *filters,
				       size_t n_filters, bool retry_not_found,
				       struct ec2_spot_request_list *ret,
				       struct px_error *err,
				       struct ec2_aws_error *ret_aws)
{
	struct op_sync *s = NULL;
	enum px_err rc = sync_new(c, &s, err);

	if (rc != PX_OK)
		return rc;
	rc = ec2_describe_spot_requests_start(c, ids, n_ids, filters,
					      n_filters, retry_not_found,
					      sync_spot_requests, s, err);
	return sync_end(c, s, rc, NULL, ret, err, ret_aws);
}

static enum px_err id_call(struct ec2_client *c, const char *action,
			   const char *id_name, const char *const *ids,
			   size_t n_ids, struct px_error *err,
			   struct ec2_aws_error *ret_aws)
{
	struct op_sync *s = NULL;
	enum px_err rc = sync_new(c, &s, err);

	if (rc != PX_OK)
		return rc;
	rc = id_call_start(c, action, id_name, ids, n_ids, sync_simple, s,
			   err);
	return sync_end(c, s, rc, NULL, NULL, err, ret_aws);
}

enum px_err ec2_terminate_instances(struct ec2_client *c,
				    const char *const *ids, size_t n_ids,
				    struct px_error *err,
				    struct ec2_aws_error *ret_aws)
{
	return id_call(c, "TerminateInstances", "InstanceId", ids, n_ids,
		       err, ret_aws);
}

enum px_err ec2_cancel_spot_requests(struct ec2_client *c,
				     const char *const *ids, size_t n_ids,
				     struct px_error *err,
				     struct ec2_aws_error *ret_aws)
{
	return id_call(c, "CancelSpotInstanceRequests",
		       "SpotInstanceRequestId", ids, n_ids, err, ret_aws);
}

enum px_err ec2_create_tags(struct ec2_client *c,
			    const char *const *resource_ids, size_t n_ids,
			    const struct ec2_tag *tags, size_t n_tags,
			    struct px_error *err,
			    struct ec2_aws_error *ret_aws)
{
	struct op_sync *s = NULL;
	enum px_err rc = sync_new(c, &s, err);

	if (rc != PX_OK)
		return rc;
	rc = ec2_create_tags_start(c, resource_ids, n_ids, tags, n_tags,
				   sync_simple, s, err);
	return sync_end(c, s, rc, NULL, NULL, err, ret_aws);
}
