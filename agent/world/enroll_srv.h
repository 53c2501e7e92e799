/* enroll_srv.h -- proteusd's enrollment endpoint: where a node on an EC2
 * instance trades its signed identity document and ticket for its job's
 * key (common/enroll.h; docs/security.md).
 *
 * A nanomsg REP socket on tcp://ADDRESS:PORT (head_address, or the
 * address its name resolved to: config_head_bind), read on proteusd's
 * loop (never blocking it): each request is opened, its identity
 * document verified against the region's certificate, then handed to
 * the owner (the ec2 world), which says whether that instance of that
 * job may have the key.  Refusals are answered with a short reason,
 * logged (the first ones, then one in ENROLL_LOG_EVERY) and counted.
 */
#ifndef PX_ENROLL_SRV_H
#define PX_ENROLL_SRV_H

#include <stdint.h>

#include "../../common/enroll.h"
#include "../../common/px.h"

struct loop;
struct enroll_srv;

#define ENROLL_LOG_FIRST 50   /* refusals logged one by one */
#define ENROLL_LOG_EVERY 100  /* then one in so many */

/* What the owner says of requests. */
struct enroll_owner {
	/* The key of job (false: no such job runs here now). */
	bool (*key_of)(void *ctx, int64_t job, uint8_t key[ENROLL_KEY_LEN]);
	/* Whether instance id of r->job may have the key (r opened with the
	 * job's key, id verified): PX_OK, or a refusal with why (said to
	 * the node) and *retry when asking again later may succeed (an
	 * instance whose launch is not known yet). */
	enum px_err (*admit)(void *ctx, const struct enroll_request *r,
			     const struct enroll_identity *id, char *why,
			     size_t why_len, bool *retry);
	/* A refusal of a request that opened with job's key (the owner
	 * counts it for the job): job, instance (may be ""), why. */
	void (*refused)(void *ctx, int64_t job, const char *instance,
			const char *why);
	void *ctx;
};

/* Listen at url (tcp://HOST:PORT) with the certificate at cert_path;
 * region: the only region whose documents are taken. */
enum px_err enroll_srv_new(struct loop *l, const char *url,
			   const char *cert_path, const char *region,
			   const struct enroll_owner *o,
			   struct enroll_srv **ret, struct px_error *err);
void enroll_srv_free(struct enroll_srv *s);

/* Enrollments granted and refused since the start. */
void enroll_srv_counts(const struct enroll_srv *s, uint64_t *ret_ok,
		       uint64_t *ret_refused);

#endif
