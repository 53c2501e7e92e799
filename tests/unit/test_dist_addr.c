/* test_dist_addr.c -- the trainer's addresses: a base address's three
 * endpoints (dist_endpoint) and a node's roles' base addresses
 * (dist_node_addr), with their bounds; the value of a leave's signal. */
#include <criterion/criterion.h>
#include <string.h>

#include "../../trainer/dist/dist.h"
#include "../../trainer/dist/dist_node.h"

Test(dist_addr, endpoints)
{
	char buf[256];
	struct px_error e = { 0 };

	cr_assert_eq(dist_endpoint("tcp://10.0.0.5:7000", DIST_EP_PUB, buf,
				   sizeof buf, &e), PX_OK);
	cr_assert_str_eq(buf, "tcp://10.0.0.5:7002");
	cr_assert_eq(dist_endpoint("ipc:///d/n4", DIST_EP_REP, buf,
				   sizeof buf, &e), PX_OK);
	cr_assert_str_eq(buf, "ipc:///d/n4.rep");
	cr_assert_eq(dist_endpoint("tcp://h:65534", DIST_EP_PUB, buf,
				   sizeof buf, &e), PX_EINVAL);
	cr_assert_eq(dist_endpoint("tcp://h:65533", DIST_EP_PUB, buf,
				   sizeof buf, &e), PX_OK);
	cr_assert_eq(dist_endpoint("tcp://h", DIST_EP_REP, buf, sizeof buf,
				   &e), PX_EINVAL);
	cr_assert(strstr(e.msg, "no port"), "%s", e.msg);
	cr_assert_eq(dist_endpoint("tcp://h:-5", DIST_EP_REP, buf,
				   sizeof buf, &e), PX_EINVAL);
	cr_assert_eq(dist_endpoint("tcp://h:99999999999999999999", DIST_EP_REP,
				   buf, sizeof buf, &e), PX_EINVAL);
	cr_assert_eq(dist_endpoint("udp://h:5", DIST_EP_REP, buf, sizeof buf,
				   &e), PX_EINVAL);
	cr_assert_eq(dist_endpoint("ipc:///d/n4", DIST_EP_REP, buf, 8, &e),
		     PX_ETOOBIG);
}

Test(dist_addr, node_roles)
{
	char buf[256];
	struct px_error e = { 0 };

	cr_assert_eq(dist_node_addr("ipc:///j/n400", 2, buf, sizeof buf, &e),
		     PX_OK);
	cr_assert_str_eq(buf, "ipc:///j/n400-2");
	cr_assert_eq(dist_node_addr("tcp://h:7000", 0, buf, sizeof buf, &e),
		     PX_OK);
	cr_assert_str_eq(buf, "tcp://h:7000");
	cr_assert_eq(dist_node_addr("tcp://h:7000", 16, buf, sizeof buf, &e),
		     PX_OK);
	cr_assert_str_eq(buf, "tcp://h:7048");
	/* role k's three ports must fit */
	cr_assert_eq(dist_node_addr("tcp://h:65531", 1, buf, sizeof buf, &e),
		     PX_EINVAL);
	cr_assert_eq(dist_node_addr("tcp://h:65530", 1, buf, sizeof buf, &e),
		     PX_OK);
	cr_assert_str_eq(buf, "tcp://h:65533");
	cr_assert_eq(dist_node_addr("http://h:1", 0, buf, sizeof buf, &e),
		     PX_EINVAL);
}

/* The value of a leave's SIGTERM: ms left and why, both read back; a
 * plain ms count (an older sender, a test) is an eviction notice; no
 * value at all leaves in the default time. */
Test(dist_addr, leave_signal_value)
{
	volatile sig_atomic_t v = 0;
	struct dist_opts o;
	int64_t left;

	dist_opts_default(&o);
	o.leave_ms = &v;
	v = dist_leave_sigval(2000, WIRE_LEAVE_RELEASE);
	cr_assert_gt(v, 0);
	cr_assert_eq(dist_leave_reason(&o), WIRE_LEAVE_RELEASE);
	left = dist_leave_deadline_us(&o) - px_now_wall_us();
	cr_assert(left > 1900000 && left <= 2000000, "%lld", (long long)left);
	v = 3000;
	cr_assert_eq(dist_leave_reason(&o), WIRE_LEAVE_EVICTION);
	left = dist_leave_deadline_us(&o) - px_now_wall_us();
	cr_assert(left > 2900000 && left <= 3000000, "%lld", (long long)left);
	v = dist_leave_sigval(INT64_MAX, WIRE_LEAVE_EVICTION);
	cr_assert_eq(v & DIST_LEAVE_MS_MASK, DIST_LEAVE_MS_MASK, "capped");
	v = 0;
	cr_assert_eq(dist_leave_reason(&o), WIRE_LEAVE_EVICTION);
	left = dist_leave_deadline_us(&o) - px_now_wall_us();
	cr_assert_gt(left, (DIST_LEAVE_DEFAULT_MS - 100) * 1000);
}
