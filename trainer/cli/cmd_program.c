/* cmd_program.c -- `proteus-trainer program-node`: a program job's node
 * agent (trainer/dist/prog_node.h) on one instance.
 */
#include <string.h>

#include "../../common/log.h"
#include "../../common/px.h"
#include "../dist/dist.h"
#include "../dist/enroll_node.h"
#include "../dist/prog_node.h"
#include "tcli.h"

int tx_cmd_program(const struct subcmd *sc, int argc, char **argv)
{
	struct px_error err = { 0 };
	struct prog_node_opts po = { 0 };
	struct tcli t;
	int rc;

	tcli_default(&t, sc);
	rc = tx_parse(sc, argc, argv, &t, NULL, NULL);
	if (rc >= 0)
		return rc;
	if (!t.g.hub || !t.g.inst)
		return tx_usage(sc, "--hub and --inst are needed");
	if (t.n.clock_speedup > 1 && !t.n.clock_origin_s)
		return tx_usage(sc, "--clock-speedup %u needs --clock-origin "
				"(the fake EC2's)", t.n.clock_speedup);
	if (enroll_node_wanted()) {
		struct enroll_node_opts eo = { 0 };
		char path[4096];

		/* on an EC2 instance: the job key by enrollment */
		if (enroll_node(&eo, path, sizeof path, &err) != PX_OK) {
			log_err("program-node %llu: %s",
				(unsigned long long)t.g.inst, err.msg);
			return TX_FAIL;
		}
	}
	if (dist_key_from_env(&t.o, &err) != PX_OK) {
		log_err("%s", err.msg);
		return TX_USAGE;
	}
	if (t.o.key_len > sizeof po.key) {
		log_err("the job key is longer than %zu bytes", sizeof po.key);
		return TX_USAGE;
	}
	memcpy(po.key, t.o.key, t.o.key_len);
	po.key_len = t.o.key_len;
	po.hub = t.g.hub;
	po.inst = t.g.inst;
	po.log = t.g.log;
	po.work = t.g.work;
	po.listen = t.g.listen;
	po.imds = t.n.imds;
	po.imds_poll_ms = t.n.imds_poll_ms;
	po.imds_margin_ms = t.n.imds_margin_ms;
	po.clock_speedup = t.n.clock_speedup;
	po.clock_origin_s = t.n.clock_origin_s;
	return prog_node_run(&po);
}
