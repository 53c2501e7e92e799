/* ec2_userdata.h -- the user data of an ec2 world's instance: the node's
 * command as a shell script, written from plain inputs into a bounded
 * buffer (ec2_userdata.c; tests/unit/test_ec2_userdata.c).
 *
 * The script finds the instance's own address (IMDSv2, asked again for a
 * minute), then runs the node: on an image with the proteus-node unit (no
 * metadata endpoint set by hand) as that unit, its arguments and
 * environment in /etc/proteus/node.env (only when every one is free of
 * blanks, quotes, `$` and backslashes: the file is split at blanks);
 * otherwise itself, again after a failure, a few times.  Every argument
 * and environment entry reaches the shell single-quoted ('\'' for a
 * quote), but the node's listen address, whose EC2W_LISTEN_HOST becomes
 * the shell's $ip inside double quotes.
 */
#ifndef PX_WORLD_EC2_USERDATA_H
#define PX_WORLD_EC2_USERDATA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../../common/px.h"
#include "../world.h"

#define EC2W_USERDATA_MAX 16384  /* EC2's limit on user data */
/* In the node's listen address (world_place.listen): the instance's own
 * address, which only the script learns. */
#define EC2W_LISTEN_HOST "@PRIVATE_IP@"

/* What the script is made of.  Strings are borrowed for the call. */
struct ec2w_userdata {
	const char *daemon_id;          /* for the script's comment line */
	int64_t job_id;
	uint64_t id;                    /* the controller's id */
	const char *type_name;
	const char *zone;               /* "": on-demand */
	const struct world_node *node;  /* what to run */
	const struct world_place *place;/* its listen address */
	char *const *enroll;            /* the node's enrollment, "K=V",
					 * NULL-ended (may be NULL) */
	bool rebalance_leave;           /* a spot node leaves on a
					 * rebalance recommendation */
	double clock_speedup;           /* 1: EC2's own clock */
	int64_t clock_origin;           /* with a speed-up: Unix s */
};

/* Whether nd's environment may reach user data: PX_EINVAL for the job
 * key or a file of it (PX_JOB_KEY=, PX_JOB_KEY_FILE=), or an entry with
 * no name before its `=`. */
enum px_err ec2w_userdata_check(const struct world_node *nd,
				struct px_error *err);

/* The script of u into buf (cap bytes, its end included), *ret_len its
 * length.  PX_EINVAL as ec2w_userdata_check; PX_ETOOBIG when it does not
 * fit (buf then holds a truncated prefix). */
enum px_err ec2w_userdata(const struct ec2w_userdata *u, char *buf,
			  size_t cap, size_t *ret_len, struct px_error *err);

#endif
