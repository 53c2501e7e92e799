/* test_dist_addr.c -- the trainer's addresses: a base address's three
 * endpoints (dist_endpoint) and a node's roles' base addresses
 * (dist_node_addr), with their bounds. */
#include <criterion/criterion.h>
#include <string.h>

#include "../../trainer/dist.h"
#include "../../trainer/dist_node.h"

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
