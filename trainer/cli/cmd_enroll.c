/* cmd_enroll.c -- `proteus-trainer enroll`: the job's key from proteusd
 * into a key file, as a node on an EC2 instance gets it.
 */
#include <stdio.h>

#include "../../common/log.h"
#include "../../common/px.h"
#include "../dist/enroll_node.h"
#include "tcli.h"

/* enroll: the job key into a key file, as a node gets it. */
int tx_cmd_enroll(const struct subcmd *sc, int argc, char **argv)
{
	struct px_error err = { 0 };
	char path[4096];
	struct tcli t;
	int rc;

	tcli_default(&t, sc);
	rc = tx_parse(sc, argc, argv, &t, NULL, NULL);
	if (rc >= 0)
		return rc;
	log_init("enroll", LOG_LVL_NOTICE);
	if (enroll_node(&t.en, path, sizeof path, &err) != PX_OK) {
		log_err("%s", err.msg);
		return TX_FAIL;
	}
	printf("enrolled: the job's key is in %s\n", path);
	return TX_OK;
}
