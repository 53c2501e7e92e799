/* cmd_role.c -- `proteus-trainer coordinator`, `ps` and `worker`: one
 * role of a distributed job (dist_coord.c, dist_ps.c, dist_worker.c),
 * started by local, a node or proteusd.
 */
#include <errno.h>
#include <malloc.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>

#include "../../common/log.h"
#include "../../common/px.h"
#include "../dist/dist.h"
#include "tcli.h"

/* coordinator | ps | worker, once the options are checked. */
static int run_role(const struct subcmd *sc, struct dist_opts *o)
{
	struct px_error err = { 0 };
	bool coord = !strcmp(sc->name, "coordinator");
	enum px_err e;

	if (!tx_watch_parent())
		return TX_FAIL;
	tx_take_stop_signals();
	signal(SIGPIPE, SIG_IGN);
	/* A role sends and receives frames of megabytes every clock, each
	 * a nanomsg message allocated and freed: keep such blocks in the
	 * heap (glibc would mmap and munmap each, a page fault per 4 KiB
	 * touched: a fifth of a job's time in the kernel) and the heap's
	 * top where it is. */
	(void)mallopt(M_MMAP_THRESHOLD, 32 << 20);
	(void)mallopt(M_TRIM_THRESHOLD, 256 << 20);
	if (dist_key_from_env(o, &err) != PX_OK) {
		log_err("%s", err.msg);
		return TX_USAGE;
	}
	log_init(sc->name, coord ? LOG_LVL_INFO : LOG_LVL_NOTICE);
	tx_log_blas(o->train.threads > 0 ? o->train.threads : 1);
	/* workers that hold their partition only cannot help stragglers
	 * (docs/trainer.md, "Who reads what") */
	if (coord && dist_partition_only(o) && !o->no_reassign) {
		log_info("straggler relief off: each worker holds only its "
			 "partition of %s (%s)", o->data.train ? o->data.train
			 : "Fashion-MNIST", o->data.train ? "--data-whole: "
			 "each holds all, and relief works" : "without "
			 "--data-memory each holds all, and relief works");
		o->no_reassign = true;
	}
	if (coord)
		e = dist_coord_run(o, &err);
	else if (!strcmp(sc->name, "ps"))
		e = dist_ps_run(o, &err);
	else
		e = dist_worker_run(o, &err);
	if (e == PX_OK)
		return TX_OK;
	/* Stopped on purpose (SIGTERM from local or the agent): no error
	 * of its own, whatever call the signal cut short.  The coordinator
	 * has said "stopped by a signal"; its job did not end. */
	if (e == PX_ECANCELED ||
	    (tx_stop_flag && e == (enum px_err)(PX_ESYS | EINTR)))
		return coord ? TX_FAIL : TX_OK;
	log_err("%s %u: %s", sc->name, o->node.v, err.msg);
	return tx_exit_for(e);
}

int tx_cmd_role(const struct subcmd *sc, int argc, char **argv)
{
	struct tcli t;
	int rc = tx_dist_start(sc, argc, argv, &t, NULL);

	return rc >= 0 ? rc : run_role(sc, &t.o);
}
