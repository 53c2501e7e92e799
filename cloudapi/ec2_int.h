/* ec2_int.h -- the EC2 client's private half: retry classification and
 * quota, the XML helpers, the request encoder, the request builders and
 * response parsers, and the driver the blocking wrappers share.  Only
 * cloudapi/ec2*.c, cloudapi/fetch.c (the retry rules and the XML helpers,
 * for S3) and tests (unit tests, and the fake EC2's integration test)
 * include this; callers use ec2_api.h.
 */
#ifndef PX_EC2_INT_H
#define PX_EC2_INT_H

#include "ec2_api.h"

/* ------------------------------------------------------------ retries */

/* Standard-mode classification: throttling codes, transient codes, HTTP
 * 500/502/503/504 and transport failures (status 0) are retryable. */
bool ec2_retry_is_retryable(long http_status, const char *code,
			    bool retry_not_found);
/* Full-jitter delay before retry number attempt (1 = first retry):
 * rand[0,1) * min(base * 2^(attempt-1), cap).  *rng is a splitmix64
 * state, advanced. */
uint64_t ec2_retry_delay_us(int attempt, uint64_t base_us, uint64_t cap_us,
			    uint64_t *rng);
/* Retry quota (500 tokens; a retry costs 5, a timeout 10; success refunds
 * 1, or the retry's cost). */
#define EC2_QUOTA_MAX 500
#define EC2_QUOTA_RETRY_COST 5
#define EC2_QUOTA_TIMEOUT_COST 10
struct ec2_quota {
	int tokens;
};
void ec2_quota_init(struct ec2_quota *q);
/* Take the cost of one retry; false (nothing taken) when short. */
bool ec2_quota_acquire(struct ec2_quota *q, bool timeout, int *ret_cost);
void ec2_quota_success(struct ec2_quota *q, int retry_cost);

/* ------------------------------------------------------------ XML */

/* Parse an EC2 response body (XML_PARSE_NONET, no entities).  For a
 * success, *ret_doc is the caller's (xmlFreeDoc).  An <Response><Errors>
 * body is not a success: it fills aws and returns PX_EAWS. */
enum px_err ec2_xml_parse(const char *body, size_t len, long http_status,
			  xmlDoc **ret_doc, struct ec2_aws_error *aws,
			  struct px_error *err);
/* First child element named name (local name), or NULL. */
xmlNode *ec2_xml_child(const xmlNode *n, const char *name);
/* Copy the text of child name into buf; "" when absent.  PX_ETOOBIG when
 * it does not fit. */
enum px_err ec2_xml_text(const xmlNode *n, const char *name, char *buf,
			 size_t len, struct px_error *err);
/* The same for free text (messages, reasons): cut to fit instead of
 * failing, at a UTF-8 character boundary. */
void ec2_xml_text_cut(const xmlNode *n, const char *name, char *buf,
		      size_t len);

/* ------------------------------------------------------------ requests */

/* The form body ("Action=..&Version=2016-11-15&..") percent-encoded with
 * curl_easy_escape; caller frees *ret. */
enum px_err ec2_params_encode(const struct ec2_params *p, char **ret,
			      struct px_error *err);
/* dst = src (which stays), with NextToken=token appended when token is
 * non-empty. */
enum px_err ec2_params_copy(struct ec2_params *dst,
			    const struct ec2_params *src, const char *token,
			    struct px_error *err);

/* An ec2_aws_error with no AWS error in it, for a failure after a
 * response came (a page that does not parse): which response it was. */
void ec2_response_aws(const struct ec2_response *r,
		      struct ec2_aws_error *ret);

/* Request builders and response parsers behind the operations.  A builder
 * fills *p (which it initialises; released on failure); a parser appends
 * what resp->root holds to *ret. */
enum px_err ec2_build_run_instances(const struct ec2_run_req *req,
				    struct ec2_params *p,
				    struct px_error *err);
enum px_err ec2_build_request_spot(const struct ec2_spot_req *req,
				   struct ec2_params *p,
				   struct px_error *err);
/* A Describe* request (action, e.g. "DescribeInstances"; id_name, e.g.
 * "InstanceId") over ids, filters or both; MaxResults=max_results only
 * without ids (EC2 refuses the two together). */
enum px_err ec2_build_describe(const char *action, const char *id_name,
			       const char *const *ids, size_t n_ids,
			       const struct ec2_filter *filters,
			       size_t n_filters, int max_results,
			       struct ec2_params *p, struct px_error *err);
/* A request that names 1..1000 ids and nothing else (TerminateInstances,
 * CancelSpotInstanceRequests). */
enum px_err ec2_build_id_call(const char *action, const char *id_name,
			      const char *const *ids, size_t n_ids,
			      struct ec2_params *p, struct px_error *err);
/* CreateTags: 1..1000 resources, 1..50 tags. */
enum px_err ec2_build_create_tags(const char *const *resource_ids,
				  size_t n_ids, const struct ec2_tag *tags,
				  size_t n_tags, struct ec2_params *p,
				  struct px_error *err);
enum px_err ec2_parse_instances(const xmlNode *root,
				struct ec2_instance_list *ret,
				struct px_error *err);
enum px_err ec2_parse_spot_requests(const xmlNode *root,
				    struct ec2_spot_request_list *ret,
				    struct px_error *err);
/* The nextToken of a page; "" (empty) means the last page.  Caller frees. */
enum px_err ec2_parse_next_token(const xmlNode *root, char **ret,
				 struct px_error *err);
/* Parse one DescribeSpotPriceHistory page: fn for each record, *index
 * advanced per record (used as trace_record.index).  A record missing a
 * field or with a bad price or time is PX_EPROTO. */
enum px_err ec2_parse_spot_prices(const xmlNode *root, uint64_t *index,
				  trace_record_fn fn, void *ctx,
				  struct px_error *err);
/* The time in an instance's stateTransitionReason ("User initiated
 * (2026-11-27 04:00:00 GMT)"), in seconds since the epoch; -1 when there
 * is none or it does not parse. */
int64_t ec2_transition_time(const char *reason);

/* ------------------------------------------------------------ paging */

/* Describe* page size (MaxResults when no ids are given) and the most
 * pages one operation follows.  The defaults are EC2's largest page and
 * EC2_PAGES_MAX; tests shrink them to page over a handful of items. */
void ec2_client_set_paging(struct ec2_client *c, int max_results,
			   int pages_max);
void ec2_client_paging(const struct ec2_client *c, int *ret_max_results,
		       int *ret_pages_max);

/* ------------------------------------------------------------ blocking */

/* PX_EINVAL (said in err) when c is driven by an event loop: the blocking
 * wrappers must not drive a hooked client's multi handle themselves. */
enum px_err ec2_check_blocking(const struct ec2_client *c,
			       struct px_error *err);
/* What a blocking wrapper waits for: the first member of its state, which
 * is on the heap.  If driving the handle fails the call stays linked to
 * the client, and its completion (at the latest from ec2_client_free)
 * frees the state instead of writing to a stack frame long gone. */
struct ec2_sync {
	bool done;
	bool abandoned;    /* the waiter is gone: the completion frees */
	enum px_err rc;
	struct px_error err;
	struct ec2_aws_error aws;
};
/* Record a completion (err and aws may be NULL).  False when the waiter
 * gave up: s (and the state it begins) has been freed. */
bool ec2_sync_done(struct ec2_sync *s, enum px_err rc,
		   const struct px_error *err,
		   const struct ec2_aws_error *aws);
/* Drive a poll-mode client until s is done; returns s->rc, with err and
 * ret_aws (optional) filled from s on a failure.  When driving itself
 * fails, s is marked abandoned and that failure returned: the caller then
 * leaves s alone (s->abandoned says so); otherwise it frees s. */
enum px_err ec2_sync_wait(struct ec2_client *c, struct ec2_sync *s,
			  struct px_error *err,
			  struct ec2_aws_error *ret_aws);

#endif
