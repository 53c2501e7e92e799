/* cmd_program.c -- `proteus-trainer program-node`: a program job's node
 * agent (trainer/dist/prog_node.h) on one instance.
 */
#include <string.h>

#include "../../common/log.h"
#include "../../common/px.h"
#include "../dist/dist.h"
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
	return prog_node_run(&po);
}
