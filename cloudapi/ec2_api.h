/* ec2_api.h -- the EC2 Query API client over libcurl's multi interface.
 *
 * Requests are form-encoded POSTs signed by libcurl itself
 * (CURLOPT_AWS_SIGV4 "aws:amz:REGION:ec2"); responses are parsed with
 * libxml2.  The core is asynchronous: ec2_call_start() queues a call and an
 * event loop drives the multi handle (socket/timer hooks, or
 * ec2_client_step()); every operation has an asynchronous form (_start,
 * and ec2_sph_start) for the daemon's loop (agent/curl_loop.h adapts the
 * hooks to it).  Retries follow the AWS SDKs' standard mode and are
 * timers, never sleeps.  Blocking wrappers (ec2_call() and the typed
 * operations) drive the handle until their call is done; they are for CLIs
 * and tests, refuse a hooked client, and must not be used from inside a
 * completion callback.  This module does not log; secrets never enter an
 * error message.  The private half (retries, XML, builders, parsers) is
 * ec2_int.h.
 */
#ifndef PX_EC2_API_H
#define PX_EC2_API_H

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
#define EC2_PAGES_MAX 1000   /* pages one Describe operation follows */

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
 * how many ms to call ec2_client_on_timeout() (-1: no timer).  A REMOVE
 * may come for an fd already closed (forget it; do not close it), and a
 * new fd may reuse the number of one that was removed.  Before
 * ec2_client_free returns it has removed every fd it asked for and the
 * timer (-1), so the loop never calls into a freed client. */
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

/* Whether an AWS error code is throttling (RequestLimitExceeded,
 * Throttling, ...): a caller whose call failed after the client's retries
 * backs off further. */
bool ec2_retry_is_throttle(const char *code);

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

/* Requests this process sent to EC2, by action (each attempt, retries
 * included, answered or failed in transport) and those AWS throttled
 * (ec2_retry_is_throttle's codes), since the start, every client
 * together: the first max into ret (in the order first sent); returns
 * how many.  Thread-safe. */
#define EC2_STATS_MAX 32
struct ec2_api_stat {
	char action[64];
	uint64_t calls, throttled;
};
size_t ec2_api_stats(struct ec2_api_stat *ret, size_t max);

/* Blocking: start and drive until done.  ret is released by the caller;
 * ret_aws (optional) is filled on PX_EAWS/PX_EHTTP failures. */
enum px_err ec2_call(struct ec2_client *c, struct ec2_params *params,
		     struct ec2_response *ret, struct px_error *err,
		     struct ec2_aws_error *ret_aws);

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
	const char *iam_profile_name; /* optional; "arn:...": by ARN */
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
	/* stateReason/code, e.g. Server.SpotInstanceTermination,
	 * Client.UserInitiatedShutdown; "" when EC2 gives none */
	char state_reason_code[EC2_NAME_MAX * 2];
	/* reason (StateTransitionReason), e.g. "User initiated (2026-11-27
	 * 04:00:00 GMT)", cut to fit; transition_s is the time in it (EC2's
	 * own time of the last state change: when a termination began), -1
	 * when there is none */
	char transition_reason[256];
	int64_t transition_s;
	char private_ip[EC2_NAME_MAX];
	char public_ip[EC2_NAME_MAX];
	char lifecycle[16];            /* "spot", "" for on-demand */
	char spot_request_id[EC2_ID_MAX];
	char client_token[EC2_TOKEN_MAX + 1]; /* clientToken, "" when none */
	int64_t launch_time_s;         /* launchTime; 0 when absent */
	struct ec2_tag *tags;          /* tagSet, in EC2's order */
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

/* DescribeInstances over every page (MaxResults 1000 unless ids given,
 * at most EC2_PAGES_MAX pages). */
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

/* ------------------------------------------------------------ async */

/* The operations above, asynchronous, for the daemon's event loop (the
 * blocking ones are these, driven to completion).  Each _start copies
 * all its inputs (ids, filters, tags, the request) before it returns.  On
 * PX_OK the operation runs and done runs later exactly once, from the
 * event loop (ec2_client_on_socket/on_timeout/step), never from inside
 * the _start call; PX_ECANCELED when the client is freed first.  On any
 * other return nothing was started and done never runs.  Retries
 * (throttling, 5xx, transport failures, *.NotFound with
 * retry_not_found) happen inside, per page, on the client's timers.
 *
 * The Describe operations follow NextToken page after page (one
 * ec2_call_start each, the next started from the previous one's
 * completion), with MaxResults 1000 when no ids are given (EC2 refuses
 * MaxResults with ids), at most EC2_PAGES_MAX (1000) pages: past that the
 * operation fails with PX_ETOOBIG.
 *
 * In done: rc PX_OK, err and aws NULL; or an error with err (what went
 * wrong, naming the action) and aws, never NULL then (aws->code is the AWS
 * error code, "" for transport and parse failures; http_status 0 when no
 * response came; attempts).  l is never NULL: on PX_OK it holds every
 * page's items, on an error it is empty.  l is the callback's to keep: it
 * may take l->v (set l->v = NULL, l->n = 0); what is left is released
 * after the callback returns.  done may start other operations; it must
 * not free the client. */
typedef void (*ec2_instances_done_fn)(enum px_err rc,
				      struct ec2_instance_list *l,
				      const struct px_error *err,
				      const struct ec2_aws_error *aws,
				      void *ctx);
typedef void (*ec2_spot_requests_done_fn)(enum px_err rc,
					  struct ec2_spot_request_list *l,
					  const struct px_error *err,
					  const struct ec2_aws_error *aws,
					  void *ctx);
typedef void (*ec2_done_simple_fn)(enum px_err rc, const struct px_error *err,
				   const struct ec2_aws_error *aws,
				   void *ctx);

/* RunInstances: l is the reservation's instances (usually pending). */
enum px_err ec2_run_instances_start(struct ec2_client *c,
				    const struct ec2_run_req *req,
				    ec2_instances_done_fn done, void *ctx,
				    struct px_error *err);
/* DescribeInstances by ids (at most 1000) or filters (tag:K, ...), or
 * both, over every page.  retry_not_found: InvalidInstanceID.NotFound is
 * retried (right after a RunInstances). */
enum px_err ec2_describe_instances_start(struct ec2_client *c,
					 const char *const *ids, size_t n_ids,
					 const struct ec2_filter *filters,
					 size_t n_filters,
					 bool retry_not_found,
					 ec2_instances_done_fn done, void *ctx,
					 struct px_error *err);
/* DescribeSpotInstanceRequests, the same way. */
enum px_err ec2_describe_spot_requests_start(
	struct ec2_client *c, const char *const *ids, size_t n_ids,
	const struct ec2_filter *filters, size_t n_filters,
	bool retry_not_found, ec2_spot_requests_done_fn done, void *ctx,
	struct px_error *err);
/* TerminateInstances (1..1000 ids); idempotent. */
enum px_err ec2_terminate_instances_start(struct ec2_client *c,
					  const char *const *ids,
					  size_t n_ids,
					  ec2_done_simple_fn done, void *ctx,
					  struct px_error *err);
/* CreateTags (1..1000 resources, 1..50 tags). */
enum px_err ec2_create_tags_start(struct ec2_client *c,
				  const char *const *resource_ids,
				  size_t n_ids, const struct ec2_tag *tags,
				  size_t n_tags, ec2_done_simple_fn done,
				  void *ctx, struct px_error *err);
/* CancelSpotInstanceRequests (1..1000 ids). */
enum px_err ec2_cancel_spot_requests_start(struct ec2_client *c,
					   const char *const *ids,
					   size_t n_ids,
					   ec2_done_simple_fn done, void *ctx,
					   struct px_error *err);

#endif
