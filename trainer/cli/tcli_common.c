/* tcli_common.c -- what more than one proteus-trainer command needs:
 * exit codes, the stop signals, every option's default, the data fetched
 * and the files checked before a run, JSON results, the BLAS lines, an
 * mf model read, the parent watched, the distributed commands' start.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "../../common/jsonout.h"
#include "../../common/log.h"
#include "../../common/px.h"
#include "../../cloudapi/fetch.h"
#include "../compute/blas_pick.h"
#include "../io/ckpt.h"
#include "../io/data.h"
#include "../io/data_url.h"
#include "../dist/dist.h"
#include "../io/export.h"
#include "../io/safetensors.h"
#include "tcli.h"

/* The exit status for a run's error: bad input files are TX_DATA, as
 * proteusctl's cli_exit_for has it. */
int tx_exit_for(enum px_err e)
{
	switch (e) {
	case PX_OK:
		return TX_OK;
	case PX_EINVAL:
	case PX_ETOOBIG:
	case PX_ENOENT:
		return TX_DATA;
	default:
		return TX_FAIL;
	}
}

volatile sig_atomic_t tx_stop_flag;
static volatile sig_atomic_t leave_ms; /* a sigqueue'd SIGTERM's value:
					  ms left and why (dist_leave_sigval) */

static void on_stop(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	if (sig == SIGTERM && si && si->si_code == SI_QUEUE &&
	    si->si_value.sival_int > 0)
		leave_ms = si->si_value.sival_int;
	tx_stop_flag = 1;
}

/* SIGTERM and SIGINT ask a role to leave; a SIGTERM sent with sigqueue
 * says by when (proteusd: the eviction's real deadline). */
void tx_take_stop_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_stop;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
}

void tx_log_cb(void *arg, enum log_level level, const char *msg)
{
	(void)arg;
	log_msg(level, "%s", msg);
}

/* Every option at its default for command sc (eval: one thread). */
void tcli_default(struct tcli *t, const struct subcmd *sc)
{
	memset(t, 0, sizeof(*t));
	dist_opts_default(&t->o);
	t->o.log = tx_log_cb;
	t->o.stop = &tx_stop_flag;
	t->o.leave_ms = &leave_ms;
	t->n.workers = 1;
	t->n.imds_margin_ms = DIST_NODE_IMDS_MARGIN_MS;
	t->n.clock_speedup = 1;
	t->l.self = "/proc/self/exe";
	t->l.churn_max = 4;
	t->f.max_bytes = FETCH_MAX_BYTES_DEFAULT;
	if (sc->mask & (C_EVAL | C_PREDICT))
		t->o.train.threads = 1;
}

/* The data named by URL fetched into the cache and checked, and a local
 * file with a SHA-256 checked, before anything reads them (data_url.h).
 * -1: fine, else the exit status. */
int tx_fetch_data(struct tcli *t)
{
	struct px_error err = { 0 };

	if (data_fetch_urls(&t->o.data, t->o.train_sha256, t->o.test_sha256,
			    &err) == PX_OK)
		return -1;
	log_err("%s", err.msg);
	/* data that cannot be had after the fetch's own tries (refused, not
	 * found, the network) is the job's input failing: exit 3, whose
	 * message the daemon makes the job's error, rather than a restart
	 * that would fetch the same */
	switch (err.code) {
	case PX_EINVAL:
	case PX_ETOOBIG:
	case PX_ENOENT:
	case PX_EHTTP:
	case PX_EAWS:
		return TX_DATA;
	default:
		return tx_exit_for(err.code);
	}
}

/* The files named on the command line, before anything starts: a
 * checkpoint or a model to write must be writable (exit 2), a checkpoint
 * to resume from must read back whole (exit 3).  -1: fine, else the exit
 * status. */
int tx_check_files(const char *ckpt, const char *resume,
		   const char *export_path)
{
	struct px_error err = { 0 };
	struct ckpt_meta m;
	float *w, *v;
	enum px_err e;

	if (ckpt && ckpt_check_writable(ckpt, &err) != PX_OK) {
		log_err("--checkpoint: %s", err.msg);
		return TX_USAGE;
	}
	if (export_path && st_check_writable(export_path, &err) != PX_OK) {
		log_err("--export: %s", err.msg);
		return TX_USAGE;
	}
	if (!resume)
		return -1;
	e = ckpt_read(resume, &m, &w, &v, &err);
	if (e != PX_OK) {
		log_err("--resume: %s", err.msg);
		return e == PX_ENOMEM ? TX_FAIL : TX_DATA;
	}
	data_prep_release(&m.prep);
	free(w);
	free(v);
	return -1;
}

/* ---- results ---- */

/* A flat JSON object and a newline, each real in its shortest form. */
int tx_print_json(FILE *f, json_t *j)
{
	if (!j || px_json_put(f, j) < 0)
		return -1;
	fputc('\n', f);
	return fflush(f) == 0 ? 0 : -1;
}

/* One line for a role's or a node's log: the kernels it computes with. */
void tx_log_blas(int threads)
{
	char d[256];

	blas_describe(blas_state(), threads, d, sizeof(d));
	log_notice("blas: %s", d);
}

/* The "blas" object of --json: the kernels, how chosen, the threads. */
json_t *tx_blas_json(void)
{
	const struct blas_state *st = blas_state();

	return json_pack("{s:s, s:s, s:s, s:s?, s:s?, s:i, s:f}", "library",
			 st->version, "core", st->core, "chosen",
			 blas_how_name(st->how), "library_core",
			 st->library[0] ? st->library : NULL, "rejected",
			 st->rejected[0] ? st->rejected : NULL, "threads",
			 blas_threads(), "check_error", st->check_error);
}

/* An mf model from file (a checkpoint with ckpt, a model file without),
 * --model mf or not; the message printed on an error. */
enum px_err tx_load_mf(const char *file, bool ckpt, struct ckpt_meta *m,
		       float **ret_params, struct px_error *err)
{
	float *v = NULL;
	enum px_err e;

	memset(m, 0, sizeof(*m));
	if (ckpt) {
		e = ckpt_read(file, m, ret_params, &v, err);
		free(v);
		if (e == PX_OK && m->d.kind != MODEL_MF)
			e = px_errorf(err, PX_EINVAL, "checkpoint '%s' is of an "
				      "%s model, not mf (--model mf)", file,
				      model_kind_name(m->d.kind));
	} else {
		m->d.kind = MODEL_MF;
		e = export_mf_load(file, &m->mf, ret_params,
				   &m->test_accuracy, err);
		if (e == PX_OK)
			ckpt_meta_mf(m, &m->mf);
	}
	if (e != PX_OK) {
		log_err("%s", err->msg);
		data_prep_release(&m->prep);
		free(*ret_params);
		*ret_params = NULL;
	}
	return e;
}

/* With DIST_PARENT_ENV set, a role dies with whoever started it: it
 * exits if that one is gone already (it died before PR_SET_PDEATHSIG
 * took effect).  The variable names the parent's pid (local, a node), or
 * is 1 (proteusd): then being adopted by init means gone.  Unset (a role
 * started by systemd, cloud-init or by hand), a role outlives its parent.
 * Whether to go on. */
bool tx_watch_parent(void)
{
	const char *w = getenv(DIST_PARENT_ENV);
	char *end;
	long long p = 0;

	if (!w || !*w)
		return true;
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	errno = 0;
	p = strtoll(w, &end, 10);
	if (!errno && end != w && !*end && p > 1)
		return getppid() == (pid_t)p;
	return getppid() != 1;
}

int tx_options(const struct subcmd *sc, int argc, char **argv,
	       struct tcli *t, char **role_args, size_t *nargs)
{
	int rc;

	tcli_default(t, sc);
	rc = tx_parse(sc, argc, argv, t, role_args, nargs);
	if (rc < 0)
		rc = tx_check_combination(sc, t);
	if (rc < 0)
		rc = tx_fetch_data(t);
	return rc;
}

int tx_dist_start(const struct subcmd *sc, int argc, char **argv,
		  struct tcli *t, char **role_args)
{
	size_t nargs = 0;
	int rc = tx_options(sc, argc, argv, t, role_args, &nargs);

	if (rc < 0 && (sc->mask == C_LOCAL || !strcmp(sc->name, "coordinator")))
		rc = tx_check_files(t->o.checkpoint, t->o.resume,
				    t->o.export_path);
	if (rc >= 0)
		return rc;
	/* mf: no straggler relief (docs/trainer.md, "Matrix
	 * factorization") */
	if (t->o.train.model == MODEL_MF)
		t->o.no_reassign = true;
	return -1;
}
