/* ec2_config.c -- whether the daemon's settings let the ec2 world run
 * (ec2_world.h): every ec2_* key it needs set, and the keys agreeing.
 * config.c reads and checks each value; the world says which it needs. */
#include <arpa/inet.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/enroll.h"
#include "../config.h"
#include "../jobreq.h"
#include "ec2_world.h"

#define diag_add config_diag_add  /* one problem more (config.h) */

/* Whether an EC2 endpoint other than AWS's is named: the key, or the
 * environment the client falls back on. */
static bool endpoint_named(const struct proteusd_config *c)
{
	const char *e1 = getenv("AWS_ENDPOINT_URL_EC2");
	const char *e2 = getenv("AWS_ENDPOINT_URL");

	return c->ec2_endpoint[0] || (e1 && *e1) || (e2 && *e2);
}

size_t config_ec2_problems(const struct proteusd_config *c,
			   struct config_diag *d)
{
	struct px_error e = {0};
	struct enroll_cert *cert = NULL;
	char num[INET6_ADDRSTRLEN];
	size_t n0 = d->n + d->dropped;

	if (!c->ec2_ami[0])
		diag_add(d, "ec2_ami is not set: the ec2 world needs the image "
			 "its instances boot");
	if (!c->ec2_subnet_count)
		diag_add(d, "ec2_subnets is not set: the ec2 world needs the "
			 "subnet of each zone it launches in "
			 "(ZONE=subnet-ID,...)");
	for (int i = 0; i < c->ec2_subnet_count; i++) {
		const char *z = c->ec2_subnet[i].zone;

		if (!config_zone_in_region(z, c->region))
			diag_add(d, "ec2_subnets: zone '%s' is not in region "
				 "'%s' (the 'region' key)", z, c->region);
	}
	if (!c->ec2_sg_count)
		diag_add(d, "ec2_security_groups is not set: the ec2 world "
			 "needs the security groups of its instances "
			 "(sg-ID,...)");
	if (!c->ec2_instance_profile[0])
		diag_add(d, "ec2_instance_profile is not set: the ec2 world "
			 "needs the IAM instance profile of its instances");
	if (!c->head_address[0])
		diag_add(d, "head_address is not set: the ec2 world needs the "
			 "address its nodes reach this head node at");
	else if (config_head_bind(c, num, sizeof num, &e) != PX_OK)
		diag_add(d, "%s", e.msg);
	if (!c->ec2_identity_cert[0])
		diag_add(d, "ec2_identity_cert is not set: the ec2 world needs "
			 "the region's AWS RSA-2048 certificate to check its "
			 "nodes' identity documents (docs/operations.md)");
	else if (enroll_cert_load(c->ec2_identity_cert, &cert, &e) != PX_OK)
		diag_add(d, "ec2_identity_cert: %s", e.msg);
	enroll_cert_free(cert);
	if (c->ec2_clock_speedup != 1 && !endpoint_named(c))
		diag_add(d, "ec2_clock_speedup is %" PRId64 ": a clock "
			 "speed-up is for a fake EC2 only; set ec2_endpoint "
			 "(or $AWS_ENDPOINT_URL_EC2) to the fake's URL, or "
			 "ec2_clock_speedup to 1", c->ec2_clock_speedup);
	if (c->ec2_clock_origin != 0 && !endpoint_named(c))
		diag_add(d, "ec2_clock_origin is %" PRId64 ": a clock origin "
			 "is for a fake EC2 only; set ec2_endpoint (or "
			 "$AWS_ENDPOINT_URL_EC2) to the fake's URL, or "
			 "ec2_clock_origin to 0", c->ec2_clock_origin);
	return d->n + d->dropped - n0;
}

enum px_err config_ec2_check(const struct proteusd_config *c,
			     struct px_error *err)
{
	struct config_diag d = {0};
	char all[PX_ERRMSG_MAX] = "";
	size_t n = config_ec2_problems(c, &d), at = 0;

	if (!n)
		return PX_OK;
	for (size_t i = 0; i < d.n && at < sizeof all; i++)
		at += (size_t)snprintf(all + at, sizeof all - at, "%s%s",
				       i ? "; " : "", d.msgs[i]);
	if (!d.n)
		snprintf(all, sizeof all, "out of memory");
	config_diag_release(&d);
	return px_errorf(err, PX_EINVAL, "%s", all);
}


enum px_err ec2_world_spec_check(const struct job_world *w, const char *file,
				 struct px_error *err)
{
	if (w->trace[0] || w->speedup > 0 || w->start_s)
		return px_errorf(err, PX_EINVAL, "%s: world.%s: only the local "
				 "world replays a trace (the ec2 world's "
				 "market is EC2's, now)", file,
				 w->trace[0] ? "trace" : w->speedup > 0 ?
				 "speedup" : "start");
	return PX_OK;
}
