/* cmd_local.c -- `proteus-trainer local`: a whole elastic parameter-server
 * job on this host (dist_local.c), its data checked once before any role
 * starts.
 */
#include <stdbool.h>
#include <stdlib.h>

#include "../../common/log.h"
#include "../../common/px.h"
#include "../io/data.h"
#include "../dist/dist.h"
#include "../compute/mf.h"
#include "../io/ratings.h"
#include "tcli.h"

/* local --model mf: both ratings files read and the model they fix
 * checked once, before any role starts.  -1: fine, else the exit
 * status. */
static int mf_check_sets(const struct dist_opts *o)
{
	struct px_error err = { 0 };
	struct mf_set train = { 0 }, test = { 0 };
	struct mf_desc d;
	enum px_err e;

	e = dist_mf_load(o, &train, &d, &err);
	if (e == PX_OK)
		e = mf_load(o->data.test, o->max_test, &test, &err);
	mf_set_release(&train);
	mf_set_release(&test);
	if (e == PX_OK)
		return -1;
	log_err("%s", err.msg);
	return tx_exit_for(e);
}

int tx_cmd_local(const struct subcmd *sc, int argc, char **argv)
{
	struct px_error err = { 0 };
	char **role_args = px_calloc((size_t)argc + 1, sizeof(char *));
	struct tcli t;
	int rc;

	if (!role_args) {
		log_err("out of memory");
		return TX_FAIL;
	}
	rc = tx_dist_start(sc, argc, argv, &t, role_args);
	if (rc >= 0)
		goto out;
	t.l.role_args = role_args;
	/* bad data is said once, here, before any role starts */
	if (t.o.train.model == MODEL_MF) {
		rc = mf_check_sets(&t.o);
		if (rc >= 0)
			goto out;
	} else if (t.o.data.train) {
		bool whole;

		if (data_check(&t.o.data, &whole, &err) != PX_OK) {
			log_err("%s", err.msg);
			rc = tx_exit_for(err.code);
			goto out;
		}
	}
	rc = dist_local_run(&t.o, &t.l, &err);
	if (rc != 0 && err.msg[0])
		log_err("%s", err.msg);
out:
	free(role_args);
	return rc;
}
