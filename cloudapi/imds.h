/* imds.h -- EC2 instance metadata (IMDSv2) client.
 *
 * Token flow: PUT /latest/api/token (TTL 21600 s), then every GET carries
 * X-aws-ec2-metadata-token; the token is reused until shortly before its
 * TTL ends, and fetched again once on a 401.  The endpoint is
 * $AWS_EC2_METADATA_SERVICE_ENDPOINT or http://169.254.169.254.  Calls are
 * blocking, bounded by a short timeout (default 1 s): they are meant for a
 * trainer node polling its own interruption notice every 5 s, and for the
 * rare credential refresh.  This module does not log.
 */
#ifndef PX_IMDS_H
#define PX_IMDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../common/px.h"
#include "awscred.h"

#define IMDS_BODY_MAX (64u * 1024)
#define IMDS_TOKEN_TTL_S 21600

struct imds_client;

/* endpoint NULL: environment, then the link-local default.  timeout_us 0:
 * 1 s. */
enum px_err imds_client_new(const char *endpoint, uint64_t timeout_us,
			    struct imds_client **ret, struct px_error *err);
void imds_client_free(struct imds_client *c);

/* GET path (e.g. "/latest/meta-data/instance-id").  PX_ENOENT on 404;
 * the body is NUL-terminated and the caller's (free). */
enum px_err imds_get(struct imds_client *c, const char *path, char **ret,
		     size_t *ret_len, struct px_error *err);

/* spot/instance-action: *ret_present false (and PX_OK) when there is no
 * notice (404). */
struct imds_spot_action {
	char action[16];  /* terminate, stop, hibernate */
	int64_t time_s;   /* when it will happen */
};
enum px_err imds_spot_action(struct imds_client *c,
			     struct imds_spot_action *ret, bool *ret_present,
			     struct px_error *err);

/* events/recommendations/rebalance: notice time, or *ret_present false. */
enum px_err imds_rebalance(struct imds_client *c, int64_t *ret_notice_s,
			   bool *ret_present, struct px_error *err);

struct imds_identity {
	char instance_id[64];
	char instance_type[64];
	char zone[64];
	char region[64];
	char account_id[32];
};
enum px_err imds_identity(struct imds_client *c, struct imds_identity *ret,
			  struct px_error *err);

/* Role credentials (iam/security-credentials/ then the role's JSON). */
enum px_err imds_role_credentials(struct imds_client *c, struct awscred *ret,
				  struct px_error *err);

/* Token PUTs made so far (tests check reuse). */
unsigned imds_token_fetches(const struct imds_client *c);

#endif
