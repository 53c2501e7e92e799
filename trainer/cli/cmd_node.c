/* cmd_node.c -- `proteus-trainer node`: the roles of one instance (a
 * parameter server and K workers, dist_node.c) started, signalled and
 * stopped together, or with --stub no role at all.
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>

#include "../../common/log.h"
#include "../../common/px.h"
#include "../dist/dist.h"
#include "../dist/dist_node.h"
#include "../dist/enroll_node.h"
#include "tcli.h"

/* node --stub: registers as node N with no role, then heartbeats. */
static int run_stub(struct dist_opts *o)
{
	struct px_error err = { 0 };
	enum px_err e;

	tx_take_stop_signals();
	signal(SIGPIPE, SIG_IGN);
	if (dist_key_from_env(o, &err) != PX_OK) {
		log_err("%s", err.msg);
		return TX_USAGE;
	}
	e = dist_node_stub(o, &err);
	if (e == PX_OK || e == PX_ECANCELED ||
	    (tx_stop_flag && e == (enum px_err)(PX_ESYS | EINTR)))
		return TX_OK;
	log_err("stub %u: %s", o->node.v, err.msg);
	return tx_exit_for(e);
}

/* node: its roles, with the options it was given (less its own). */
static int run_node(const struct subcmd *sc, struct tcli *t,
		    char **role_args)
{
	struct px_error err = { 0 };
	int rc;

	if (!tx_watch_parent())
		return TX_FAIL;
	log_init("node", LOG_LVL_NOTICE);
	tx_log_blas(t->o.train.threads > 0 ? t->o.train.threads : 1);
	if (enroll_node_wanted()) {
		struct enroll_node_opts eo = { 0 };
		char path[4096];

		/* on an EC2 instance: the key by enrollment, before any
		 * role starts (they read it from the key file) */
		if (enroll_node(&eo, path, sizeof path, &err) != PX_OK) {
			log_err("node %u: %s", t->o.node.v, err.msg);
			return TX_FAIL;
		}
	}
	t->n.exe = "/proc/self/exe";
	t->n.base = t->o.node.v;
	t->n.listen = t->o.listen;
	t->n.reliable = t->o.reliable;
	t->n.role_args = role_args;
	if (t->n.stub)
		return run_stub(&t->o);
	if (!t->n.ps && !t->n.workers)
		return tx_usage(sc, "a node needs "
				"--with-ps or --node-workers K");
	if ((uint64_t)t->n.base + t->n.workers >= UINT32_MAX - 1)
		return tx_usage(sc, "--node %u: its "
				"workers' ids are past the last", t->n.base);
	if (t->n.leave_on_rebalance && !t->n.imds)
		return tx_usage(sc, "--leave-on-rebalance "
				"needs --imds-notices");
	if (t->n.clock_speedup > 1 && !t->n.clock_origin_s)
		return tx_usage(sc, "--clock-speedup %u "
				"needs --clock-origin (the fake EC2's)",
				t->n.clock_speedup);
	t->n.log = tx_log_cb;
	rc = dist_node_run(&t->n, &err);
	if (rc != 0 && err.msg[0])
		log_err("node %u: %s", t->n.base, err.msg);
	return rc;
}

int tx_cmd_node(const struct subcmd *sc, int argc, char **argv)
{
	char **role_args = px_calloc((size_t)argc + 1, sizeof(char *));
	struct tcli t;
	int rc;

	if (!role_args) {
		log_err("out of memory");
		return TX_FAIL;
	}
	rc = tx_dist_start(sc, argc, argv, &t, role_args);
	if (rc < 0)
		rc = run_node(sc, &t, role_args);
	free(role_args);
	return rc;
}
