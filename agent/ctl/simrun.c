/* simrun.c -- the job, snapshot, side-by-side runs and stored prices that
 * `proteusctl simulate` and `proteusctl plan` share (simrun.h).
 */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../common/log.h"
#include "cli.h"
#include "simrun.h"

/* ---- the job ---- */

/* A daemon job file (agent/jobreq.h: what `proteusctl submit` sends) is
 * simulate's job spec plus these sections and top-level fields, which
 * simulate and plan do not simulate: they are dropped before the spec is
 * checked.  A program's group re-forms on every join and leave (torchrun
 * restarts its workers from the last checkpoint), so a program job
 * without restart_seconds gets PROGRAM_RESTART_S (docs/simulate.md,
 * "Re-forms"). */
static const char *const daemon_keys[] = {
	"trainer", "program", "world", "policy", "workload", "notify_url",
	"scaling_measured", "scaling_explore", "weight",
};
#define PROGRAM_RESTART_S 60.0

struct daemon_part {
	char names[160];          /* the keys dropped, ", "-separated */
	bool program;             /* a program section */
	bool has_restart;         /* the spec gives restart_seconds */
	char *rest;               /* the spec without them (compact JSON);
				   * NULL: none was there, parse the file */
};

/* Drop the daemon's keys from the job file buf (n bytes) into *d.  A
 * file that is not a JSON object is left to jobspec_parse's errors. */
static enum px_err drop_daemon_keys(const char *buf, size_t n,
				    struct daemon_part *d,
				    struct px_error *err)
{
	json_t *root = json_loadb(buf, n, JSON_REJECT_DUPLICATES, NULL);
	size_t o = 0;

	memset(d, 0, sizeof *d);
	if (!json_is_object(root)) {
		json_decref(root);
		return PX_OK;
	}
	for (size_t i = 0; i < sizeof daemon_keys / sizeof *daemon_keys; i++) {
		if (!json_object_get(root, daemon_keys[i]))
			continue;
		if (o < sizeof d->names)
			o += (size_t)snprintf(d->names + o,
					      sizeof d->names - o, "%s%s",
					      o ? ", " : "", daemon_keys[i]);
		d->program |= !strcmp(daemon_keys[i], "program");
		json_object_del(root, daemon_keys[i]);
	}
	d->has_restart = json_object_get(root, "restart_seconds") != NULL;
	if (d->names[0])
		d->rest = json_dumps(root, JSON_COMPACT);
	json_decref(root);
	if (d->names[0] && !d->rest)
		return px_errorf(err, PX_ENOMEM, "out of memory");
	return PX_OK;
}

enum px_err simrun_read_job(const char *cmd, const char *path,
			    struct jobspec *job, char **ret_text,
			    struct px_error *err)
{
	struct daemon_part d;
	char *buf, pr[128] = "";
	size_t n;
	enum px_err e;

	e = px_read_file(path, JOBSPEC_FILE_MAX, &buf, &n, err);
	if (e != PX_OK)
		return e;
	e = drop_daemon_keys(buf, n, &d, err);
	if (e == PX_OK)
		e = d.rest ? jobspec_parse(d.rest, strlen(d.rest), path, job,
					   err)
			   : jobspec_parse(buf, n, path, job, err);
	free(d.rest);
	if (e != PX_OK) {
		free(buf);
		return e;
	}
	if (d.program && !d.has_restart)
		job->restart_seconds = PROGRAM_RESTART_S;
	if (d.program)
		snprintf(pr, sizeof pr, "; program: re-forms cost "
			 "restart_seconds %.6g (%s)", job->restart_seconds,
			 d.has_restart ? "the job's" :
			 "the default for programs");
	if (d.names[0])
		log_notice("%s: %s: the daemon's sections (%s) are not "
			   "simulated%s", cmd, path, d.names, pr);
	if (job->profile_path[0]) {
		char pp[4096];

		cli_file_relative(path, job->profile_path, pp, sizeof pp);
		e = jobspec_profile_load(pp, job, err);
		if (e != PX_OK) {
			free(buf);
			return e;
		}
	}
	*ret_text = buf;
	return PX_OK;
}


/* ---- the per-second interruption model ---- */

enum px_err simrun_advisor_path(const char *opt, const char *job_path,
				const struct jobspec *job, int64_t start_s,
				char *buf, size_t len, struct px_error *err)
{
	if (opt) {
		snprintf(buf, len, "%s", opt);
		return PX_OK;
	}
	if (job->spot_advisor[0]) {
		cli_file_relative(job_path, job->spot_advisor, buf, len);
		return PX_OK;
	}
	return advisor_shipped(start_s, buf, len, err);
}

/* ---- runs side by side ---- */

struct par_ctx {
	struct simrun *v;
	size_t n;
	pthread_mutex_t mu;
	size_t next;
};

static void *par_worker(void *arg)
{
	struct par_ctx *p = arg;

	for (;;) {
		struct simrun *r;
		size_t i;

		pthread_mutex_lock(&p->mu);
		i = p->next++;
		pthread_mutex_unlock(&p->mu);
		if (i >= p->n)
			return NULL;
		r = &p->v[i];
		r->e = sim_run(r->plan, r->policy, r->res, &r->err);
	}
}

void simrun_parallel(struct simrun *v, size_t n, int threads)
{
	struct par_ctx p = {.v = v, .n = n};
	pthread_t th[SIMRUN_THREADS_MAX];
	int k = 0;

	if (threads > SIMRUN_THREADS_MAX)
		threads = SIMRUN_THREADS_MAX;
	pthread_mutex_init(&p.mu, NULL);
	while (k < threads - 1 &&
	       pthread_create(&th[k], NULL, par_worker, &p) == 0)
		k++;
	par_worker(&p);
	while (k > 0)
		pthread_join(th[--k], NULL);
	pthread_mutex_destroy(&p.mu);
}

int simrun_threads(size_t n)
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	int t = ncpu > SIMRUN_THREADS_MAX ? SIMRUN_THREADS_MAX :
		ncpu > 0 ? (int)ncpu : 1;

	if ((size_t)t > n)
		t = n ? (int)n : 1;
	return t;
}

/* ---- prices from the store ---- */

struct mk_ctx {
	const struct jobspec *job;
	struct simrun_prices *p;
	struct store *st;
	struct px_error *err;
	enum px_err e;
};

static bool job_has_spot_type(const struct jobspec *job, const char *type)
{
	for (size_t i = 0; i < job->spot.n_types; i++)
		if (!strcmp(job->spot.types[i], type))
			return true;
	return false;
}

static bool job_has_zone(const struct jobspec *job, const char *zone)
{
	if (!job->spot.n_zones)
		return true;
	for (size_t i = 0; i < job->spot.n_zones; i++)
		if (!strcmp(job->spot.zones[i], zone))
			return true;
	return false;
}

static enum px_err collect_market(const struct store_market *m, void *arg)
{
	struct mk_ctx *c = arg;
	struct simrun_market *x;
	enum px_err e;

	if (!job_has_spot_type(c->job, m->type) ||
	    !job_has_zone(c->job, m->zone))
		return PX_OK;
	if (c->p->n == SIMRUN_MARKETS_MAX) {
		c->p->more = true;
		return PX_OK;
	}
	x = &c->p->v[c->p->n];
	x->id = m->id;
	snprintf(x->zone, sizeof x->zone, "%s", m->zone);
	snprintf(x->type, sizeof x->type, "%s", m->type);
	e = store_price_range(c->st, m->id, &x->first_s, &x->last_s,
			      &x->count, c->err);
	if (e == PX_ENOENT)
		return PX_OK;     /* a market with no record yet */
	if (e != PX_OK) {
		c->e = e;
		return e;
	}
	c->p->n++;
	if (x->first_s < c->p->first_s)
		c->p->first_s = x->first_s;
	if (x->last_s > c->p->last_s)
		c->p->last_s = x->last_s;
	c->p->stored += x->count;
	return PX_OK;
}

enum px_err simrun_store_markets(struct store *st, const struct jobspec *job,
				 const char *product,
				 struct simrun_prices *ret,
				 struct px_error *err)
{
	struct store_market_filter f = {.region = job->region,
					.product = product};
	struct mk_ctx c = {.job = job, .p = ret, .st = st, .err = err};
	enum px_err e;

	memset(ret, 0, sizeof *ret);
	ret->first_s = INT64_MAX;
	ret->last_s = INT64_MIN;
	e = store_markets_each(st, &f, collect_market, &c, err);
	return c.e != PX_OK ? c.e : e;
}

struct ld_ctx {
	struct market_set *ms;
	const struct simrun_market *m;
	struct px_error *err;
	int64_t n;
};

static enum px_err load_price(int64_t t_s, int64_t price_uusd, void *arg)
{
	struct ld_ctx *c = arg;
	enum px_err e;

	e = market_set_add(c->ms, c->m->zone, c->m->type, t_s, price_uusd,
			   c->err);
	if (e == PX_OK)
		c->n++;
	return e;
}

enum px_err simrun_store_load(struct store *st, struct simrun_prices *p,
			      int64_t to_s, struct market_set *ms,
			      struct px_error *err)
{
	struct ld_ctx c = {.ms = ms, .err = err};
	struct px_error werr = {0};
	enum px_err e;

	for (size_t i = 0; i < p->n; i++) {
		c.m = &p->v[i];
		e = store_prices_each(st, p->v[i].id, INT64_MIN,
				      to_s == INT64_MAX ? INT64_MAX : to_s + 1,
				      load_price, &c, &werr);
		if (e != PX_OK) {
			/* load_price's own error is in err already */
			if (werr.msg[0])
				*err = werr;
			return e;
		}
	}
	p->loaded = c.n;
	return market_set_seal(ms, err);
}

static int od_cmp(const void *a, const void *b)
{
	const struct ondemand_entry *x = a, *y = b;

	return strcmp(x->type, y->type);
}

/* Add type's price to t (v sized for it) unless it is there. */
static enum px_err od_add(struct store *st, const struct jobspec *job,
			  const char *type, const struct ondemand_table *file,
			  struct ondemand_table *t, size_t *from_store,
			  char *missing, size_t mlen, struct px_error *err)
{
	const struct ondemand_entry *f;
	struct ondemand_entry *x;
	int64_t uusd = 0;
	enum px_err e;

	if (!type[0])
		return PX_OK;
	for (size_t i = 0; i < t->n; i++)
		if (!strcmp(t->v[i].type, type))
			return PX_OK;
	e = store_ondemand_get(st, job->region, type, &uusd, err);
	if (e == PX_OK) {
		++*from_store;
	} else if (e != PX_ENOENT) {
		return e;
	} else if (file && (f = ondemand_table_find(file, job->region,
						    type))) {
		uusd = f->uusd_per_hour;
	} else {
		size_t o = strlen(missing);

		snprintf(missing + o, mlen - o, "%s%s", o ? ", " : "", type);
		return PX_OK;
	}
	x = &t->v[t->n++];
	snprintf(x->region, sizeof x->region, "%s", job->region);
	snprintf(x->type, sizeof x->type, "%s", type);
	x->uusd_per_hour = uusd;
	return PX_OK;
}

enum px_err simrun_store_ondemand(struct store *st, const struct jobspec *job,
				  const struct ondemand_table *file,
				  struct ondemand_table *ret,
				  size_t *ret_from_store,
				  struct px_error *err)
{
	struct ondemand_table t = {0};
	char missing[1024] = "";
	size_t from_store = 0;
	enum px_err e;

	t.v = calloc(job->spot.n_types + 2, sizeof *t.v);
	if (!t.v)
		return px_errorf(err, PX_ENOMEM, "out of memory");
	e = od_add(st, job, job->reference_type, file, &t, &from_store,
		   missing, sizeof missing, err);
	if (e == PX_OK)
		e = od_add(st, job, job->reliable.type, file, &t, &from_store,
			   missing, sizeof missing, err);
	for (size_t i = 0; e == PX_OK && i < job->spot.n_types; i++)
		e = od_add(st, job, job->spot.types[i], file, &t,
			   &from_store, missing, sizeof missing, err);
	if (e == PX_OK && missing[0])
		e = px_errorf(err, PX_ENOENT, "no on-demand price for %s in "
			      "region '%s' %s (import a table with `proteusctl "
			      "market import --ondemand-prices FILE`, or give "
			      "--ondemand-prices FILE)", missing, job->region,
			      file ? "in the store or the --ondemand-prices "
			      "table" : "in the store");
	if (e != PX_OK) {
		ondemand_table_release(&t);
		return e;
	}
	qsort(t.v, t.n, sizeof *t.v, od_cmp);
	*ret = t;
	*ret_from_store = from_store;
	return PX_OK;
}

const char *simrun_fmt(char *buf, size_t len, const char *fmt, double x,
		       const char *undef)
{
	if (!isfinite(x))
		return undef;
	snprintf(buf, len, fmt, x);
	return buf;
}

json_t *simrun_jnum(double x)
{
	return isfinite(x) ? json_real(x) : json_null();
}

int simrun_json_out(json_t *o, const char *what)
{
	int rc = CLI_EXIT_OK;

	if (!o) {
		log_err("out of memory");
		return CLI_EXIT_FAIL;
	}
	if (json_dumpf(o, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(10))) {
		log_err("writing %s: %s", what, strerror(errno));
		rc = CLI_EXIT_FAIL;
	} else {
		putchar('\n');
	}
	json_decref(o);
	return rc;
}

const char *simrun_base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}
