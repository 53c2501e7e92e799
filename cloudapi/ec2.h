/* ec2.h -- EC2 Query API client over libcurl's multi interface.
 *
 * Requests are form-encoded POSTs signed by libcurl itself
 * (CURLOPT_AWS_SIGV4 "aws:amz:REGION:ec2"); responses are parsed with
 * libxml2.  The core is asynchronous: ec2_call_start() queues a call and an
 * event loop drives the multi handle (socket/timer hooks, or
 * ec2_client_step()).  Retries follow the AWS SDKs' standard mode and are
 * timers, never sleeps.  Blocking wrappers (ec2_call() and the typed
 * operations) drive the handle until their call is done; they are for CLIs
 * and tests, and must not be used from inside a completion callback.
 * This module does not log; secrets never enter an error message.
 */
#ifndef PX_EC2_H
#define PX_EC2_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <libxml/tree.h>

#include "../common/px.h"
#include "awscred.h"
#include "trace.h"

#define EC2_API_VERSION "2016-11-15"
#define EC2_RESPONSE_MAX (16u * 1024 * 1024) /* default response bound */
#define EC2_ID_MAX 64        /* i-..., sir-..., r-..., ami-... */
#define EC2_NAME_MAX 64      /* instance type, zone, state, code */
#define EC2_TAG_KEY_MAX 128
#define EC2_TAG_VALUE_MAX 256
#define EC2_TOKEN_MAX 64     /* ClientToken */

/* ------------------------------------------------------------ errors */

/* What AWS (or the transport) said about a failed call. */
struct ec2_aws_error {
	char code[128];       /* AWS error code, "" when none (transport) */
	char message[1024];   /* AWS message */
	char request_id[128]; /* RequestID, "" when none */
	long http_status;     /* 0 when no response came */
	int attempts;         /* attempts made, retries included */
};

/* ------------------------------------------------------------ client */

/* Event-loop hooks (optional).  socket_fn is told which events fd wants
 * (EC2_POLL_IN|EC2_POLL_OUT, or EC2_POLL_REMOVE); timer_fn is told after
 * how many ms to call ec2_client_on_timeout() (-1: no timer). */
enum ec2_poll {
	EC2_POLL_IN = 1 << 0,
	EC2_POLL_OUT = 1 << 1,
	EC2_POLL_REMOVE = 1 << 2,
};
typedef void (*ec2_socket_fn)(int fd, int what, void *ctx);
typedef void (*ec2_timer_fn)(long timeout_ms, void *ctx);
/* Transport trace lines for debugging (curl's verbose output with the
 * Authorization and X-Amz-Security-Token values and the credentials
 * redacted).  text is not NUL-terminated. */
typedef void (*ec2_debug_fn)(const char *text, size_t len, void *ctx);

struct ec2_config {
	const char *region;        /* required, e.g. "us-east-1" */
	/* Endpoint URL.  NULL: $AWS_ENDPOINT_URL_EC2, then $AWS_ENDPOINT_URL,
	 * then https://ec2.REGION.amazonaws.com/ (the config key of the
	 * daemon is passed here). */
	const char *endpoint;
	struct awscred_provider *creds; /* borrowed; required */
	int max_attempts;          /* total tries per call; 0: 3 */
	uint64_t backoff_base_us;  /* 0: 1 s */
	uint64_t backoff_cap_us;   /* 0: 20 s */
	bool no_retry_quota;       /* disable the 500-token retry bucket */
	uint64_t timeout_us;       /* per attempt; 0: 30 s */
	uint64_t connect_timeout_us; /* 0: 10 s */
	size_t response_max;       /* bytes; 0: EC2_RESPONSE_MAX */
	uint64_t seed;             /* jitter RNG seed; 0: from the clock */
	ec2_socket_fn socket_fn;   /* both hooks or neither */
	ec2_timer_fn timer_fn;
	void *hook_ctx;
	ec2_debug_fn debug_fn;     /* optional */
	void *debug_ctx;
};

struct ec2_client;

/* Create a client; *ret is freed with ec2_client_free. */
enum px_err ec2_client_new(const struct ec2_config *cfg,
			   struct ec2_client **ret, struct px_error *err);
/* Cancels calls still in flight (their callbacks run with PX_ECANCELED).
 * NULL is a no-op. */
void ec2_client_free(struct ec2_client *c);
/* The endpoint URL in use. */
const char *ec2_client_endpoint(const struct ec2_client *c);
/* Whether the client is driven through socket/timer hooks (then the
 * blocking calls are refused). */
bool ec2_client_hooked(const struct ec2_client *c);
/* Calls started and not yet completed. */
size_t ec2_client_pending(const struct ec2_client *c);

/* Event-loop integration, hook mode: call on socket readiness (what as
 * EC2_POLL_IN/OUT) and when the timer fires.  Completion callbacks run from
 * inside these. */
enum px_err ec2_client_on_socket(struct ec2_client *c, int fd, int what);
enum px_err ec2_client_on_timeout(struct ec2_client *c);
/* Poll mode (no hooks): wait up to timeout_ms for activity, then make
 * progress and run callbacks. */
enum px_err ec2_client_step(struct ec2_client *c, int timeout_ms);

/* ------------------------------------------------------------ calls */

/* Request parameters: Action, Version and wire name/value pairs in order.
 * Values are copied. */
struct ec2_params {
	char **kv;     /* 2*n strings: name, value */
	size_t n;
	size_t cap;
	bool retry_not_found; /* also retry *.NotFound (eventual consistency) */
	enum px_err oom;      /* sticky: first allocation failure */
};
void ec2_params_init(struct ec2_params *p, const char *action);
void ec2_params_add(struct ec2_params *p, const char *name,
		    const char *value);
void ec2_params_addf(struct ec2_params *p, const char *value,
		     const char *name_fmt, ...)
	__attribute__((format(printf, 3, 4)));
void ec2_params_release(struct ec2_params *p);
/* The form body ("Action=..&Version=2016-11-15&..") percent-encoded with
 * curl_easy_escape; caller frees *ret. */
enum px_err ec2_params_encode(const struct ec2_params *p, char **ret,
			      struct px_error *err);

/* A completed call.  doc/root are the parsed success document. */
struct ec2_response {
	long http_status;
	xmlDoc *doc;
	xmlNode *root;       /* <OpResponse> */
	char request_id[128];
	int attempts;
};
void ec2_response_release(struct ec2_response *r);

/* Completion callback: rc PX_OK and resp filled, or rc an error with err
 * and aws filled.  resp is borrowed (released after the callback returns
 * unless the callback takes resp->doc and sets it to NULL). */
typedef void (*ec2_done_fn)(enum px_err rc, struct ec2_response *resp,
			    const struct px_error *err,
			    const struct ec2_aws_error *aws, void *ctx);

/* Start a call; takes ownership of *params (emptied) whatever the result.
 * done runs later, from the event loop, never from inside this call. */
enum px_err ec2_call_start(struct ec2_client *c, struct ec2_params *params,
			   ec2_done_fn done, void *ctx, struct px_error *err);

/* Blocking: start and drive until done.  ret is released by the caller;
 * ret_aws (optional) is filled on PX_EAWS/PX_EHTTP failures. */
enum px_err ec2_call(struct ec2_client *c, struct ec2_params *params,
		     struct ec2_response *ret, struct px_error *err,
		     struct ec2_aws_error *ret_aws);

/* ------------------------------------------------------------ retries */

/* Standard-mode classification: throttling codes, transient codes, HTTP
 * 500/502/503/504 and transport failures (status 0) are retryable. */
bool ec2_retry_is_throttle(const char *code);
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

/* ------------------------------------------------------------ operations */

struct ec2_tag {
	char key[EC2_TAG_KEY_MAX + 1];
	char value[EC2_TAG_VALUE_MAX + 1];
};

struct ec2_filter {
	const char *name;            /* e.g. "instance-state-name", "tag:job" */
	const char *const *values;
	size_t n_values;
};

/* Where and what to launch (RunInstances and RequestSpotInstances). */
struct ec2_launch_spec {
	const char *image_id;         /* required */
	const char *instance_type;    /* required */
	const char *zone;             /* Placement.AvailabilityZone, optional */
	const char *key_name;         /* optional */
	const char *subnet_id;        /* optional */
	const char *iam_profile_name; /* optional */
	const char *const *security_group_ids;
	size_t n_security_groups;
	const void *user_data;        /* raw bytes, base64-encoded here */
	size_t user_data_len;
};

/* A ClientToken: 32 random hex digits.  buf >= EC2_TOKEN_MAX + 1. */
enum px_err ec2_client_token(char *buf, size_t len, struct px_error *err);

struct ec2_instance {
	char id[EC2_ID_MAX];
	char image_id[EC2_ID_MAX];
	char type[EC2_NAME_MAX];
	char zone[EC2_NAME_MAX];
	int state_code;                /* 0 pending, 16 running, 48 ... */
	char state[EC2_NAME_MAX];      /* pending, running, terminated ... */
	char state_reason[EC2_NAME_MAX * 2]; /* e.g. Server.SpotInstanceTermination */
	char private_ip[EC2_NAME_MAX];
	char public_ip[EC2_NAME_MAX];
	char lifecycle[16];            /* "spot", "" for on-demand */
	char spot_request_id[EC2_ID_MAX];
	char client_token[EC2_TOKEN_MAX + 1];
	int64_t launch_time_s;
	struct ec2_tag *tags;
	size_t n_tags;
};

struct ec2_instance_list {
	struct ec2_instance *v;
	size_t n;
};
void ec2_instance_list_release(struct ec2_instance_list *l);

struct ec2_spot_request {
	char id[EC2_ID_MAX];
	char state[EC2_NAME_MAX];       /* open, active, closed, ... */
	char status_code[EC2_NAME_MAX]; /* e.g. price-too-low, fulfilled */
	char status_message[512];
	char fault_code[EC2_NAME_MAX * 2];
	char instance_id[EC2_ID_MAX];   /* "" until fulfilled */
	char type[EC2_NAME_MAX];        /* launchSpecification.instanceType */
	char zone[EC2_NAME_MAX];        /* launchedAvailabilityZone */
	int64_t price_uusd;             /* spotPrice (the bid), -1 if absent */
	int64_t create_time_s;
	int64_t update_time_s;
	struct ec2_tag *tags;
	size_t n_tags;
};

struct ec2_spot_request_list {
	struct ec2_spot_request *v;
	size_t n;
};
void ec2_spot_request_list_release(struct ec2_spot_request_list *l);

/* DescribeSpotPriceHistory.  types/zones may be empty (all); product NULL
 * means "Linux/UNIX"; start_s/end_s 0 mean unset; max_results is the page
 * size (MaxResults, 1..1000; 0: 1000).  The API takes one
 * AvailabilityZone, so each zone is its own chain of pages, walked one
 * after the other in the order given. */
struct ec2_sph_query {
	const char *const *types;
	size_t n_types;
	const char *const *zones;
	size_t n_zones;
	const char *product;
	int64_t start_s;
	int64_t end_s;
	int max_results;
};

/* What a walk delivered. */
struct ec2_sph_stats {
	uint64_t records;  /* records passed to fn */
	uint64_t pages;    /* responses parsed */
	int64_t first_s;   /* earliest record time (INT64_MAX if none) */
	int64_t last_s;    /* latest record time (INT64_MIN if none) */
};

#define EC2_SPH_PAGES_MAX 100000 /* bound on pages per walk */

/* Completion of an asynchronous walk: rc PX_OK after the last page of the
 * last zone, else the first failure (a call's, with aws filled for AWS
 * errors; the parser's; or fn's own return, with fn's err).  st counts
 * what was delivered before the failure.  Runs once, from the event loop;
 * the walk's memory is freed after it returns. */
typedef void (*ec2_sph_done_fn)(enum px_err rc, const struct ec2_sph_stats *st,
				const struct px_error *err,
				const struct ec2_aws_error *aws, void *ctx);

/* Start an asynchronous walk over every page (NextToken chaining, one
 * ec2_call_start per page) for event-loop users such as the daemon.  The
 * query is copied.  fn is called once per record from inside the event
 * loop (strings borrowed for the call; index counts from 0 across pages
 * and zones); its non-PX_OK return stops the walk.  fn must not block on
 * this client.  On PX_OK done runs later, exactly once (PX_ECANCELED when
 * the client is freed first); on an error return nothing was started and
 * done never runs. */
enum px_err ec2_sph_start(struct ec2_client *c, const struct ec2_sph_query *q,
			  trace_record_fn fn, ec2_sph_done_fn done,
			  void *ctx, struct px_error *err);

/* The same, blocking (poll-mode clients only).  ret_stats and ret_aws may
 * be NULL. */
enum px_err ec2_describe_spot_price_history(
	struct ec2_client *c, const struct ec2_sph_query *q,
	trace_record_fn fn, void *ctx, struct ec2_sph_stats *ret_stats,
	struct px_error *err, struct ec2_aws_error *ret_aws);

/* Blocking walk with 1000-record pages (the original interface, kept for
 * the trace import path). */
enum px_err ec2_describe_spot_price_history_all(
	struct ec2_client *c, const char *const *types, size_t n_types,
	const char *const *zones, size_t n_zones, const char *product,
	int64_t start_s, int64_t end_s, trace_record_fn fn, void *ctx,
	struct px_error *err, struct ec2_aws_error *ret_aws);

/* Parse one DescribeSpotPriceHistory page: fn for each record, *index
 * advanced per record (used as trace_record.index).  A record missing a
 * field or with a bad price or time is PX_EPROTO. */
enum px_err ec2_parse_spot_prices(const xmlNode *root, uint64_t *index,
				  trace_record_fn fn, void *ctx,
				  struct px_error *err);

struct ec2_run_req {
	struct ec2_launch_spec spec;
	int min_count;                /* 0: 1 */
	int max_count;                /* 0: min_count */
	bool spot;                    /* InstanceMarketOptions.MarketType=spot */
	int64_t max_price_uusd;       /* spot only; <= 0: none (on-demand cap) */
	const char *client_token;     /* NULL: one is generated */
	const struct ec2_tag *tags;   /* instance tags (TagSpecification) */
	size_t n_tags;
};
/* RunInstances.  *ret is the caller's (ec2_instance_list_release). */
enum px_err ec2_run_instances(struct ec2_client *c,
			      const struct ec2_run_req *req,
			      struct ec2_instance_list *ret,
			      struct px_error *err,
			      struct ec2_aws_error *ret_aws);

struct ec2_spot_req {
	struct ec2_launch_spec spec;
	int64_t bid_uusd;             /* SpotPrice; <= 0: none */
	int count;                    /* 0: 1 */
	const char *client_token;     /* NULL: generated */
	const struct ec2_tag *tags;   /* spot-instances-request tags */
	size_t n_tags;
};
/* RequestSpotInstances (one-time). */
enum px_err ec2_request_spot_instances(struct ec2_client *c,
				       const struct ec2_spot_req *req,
				       struct ec2_spot_request_list *ret,
				       struct px_error *err,
				       struct ec2_aws_error *ret_aws);

/* DescribeSpotInstanceRequests over every page.  With retry_not_found,
 * InvalidSpotInstanceRequestID.NotFound is retried like a transient
 * error (use right after a create). */
enum px_err ec2_describe_spot_requests(struct ec2_client *c,
				       const char *const *ids, size_t n_ids,
				       const struct ec2_filter *filters,
				       size_t n_filters, bool retry_not_found,
				       struct ec2_spot_request_list *ret,
				       struct px_error *err,
				       struct ec2_aws_error *ret_aws);

/* CancelSpotInstanceRequests (running instances are not terminated). */
enum px_err ec2_cancel_spot_requests(struct ec2_client *c,
				     const char *const *ids, size_t n_ids,
				     struct px_error *err,
				     struct ec2_aws_error *ret_aws);

/* DescribeInstances over every page (MaxResults 1000 unless ids given). */
enum px_err ec2_describe_instances(struct ec2_client *c,
				   const char *const *ids, size_t n_ids,
				   const struct ec2_filter *filters,
				   size_t n_filters, bool retry_not_found,
				   struct ec2_instance_list *ret,
				   struct px_error *err,
				   struct ec2_aws_error *ret_aws);

/* TerminateInstances; idempotent. */
enum px_err ec2_terminate_instances(struct ec2_client *c,
				    const char *const *ids, size_t n_ids,
				    struct px_error *err,
				    struct ec2_aws_error *ret_aws);

/* CreateTags on resources (instances, spot requests). */
enum px_err ec2_create_tags(struct ec2_client *c,
			    const char *const *resource_ids, size_t n_ids,
			    const struct ec2_tag *tags, size_t n_tags,
			    struct px_error *err,
			    struct ec2_aws_error *ret_aws);

/* Request builders and response parsers behind the blocking operations,
 * for asynchronous use with ec2_call_start().  A builder fills *p (which
 * it initialises); a parser reads resp->root into *ret. */
enum px_err ec2_build_run_instances(const struct ec2_run_req *req,
				    struct ec2_params *p,
				    struct px_error *err);
enum px_err ec2_build_request_spot(const struct ec2_spot_req *req,
				   struct ec2_params *p,
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

#endif
