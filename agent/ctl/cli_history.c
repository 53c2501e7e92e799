/* cli_history.c -- `proteusctl history`: list the runs stored in the
 * database (by `proteusctl simulate --db`, later by the daemon) and show
 * one run's events in time order with its cost.
 *
 *   proteusctl history [--db PATH] [--job ID|NAME] [--json]
 *
 * It only reads, through the store's read-only API (db/store.h), which
 * also checks that the file is a Proteus store this build knows.
 */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/jsonout.h"
#include "../../common/log.h"
#include "../../db/store.h"
#include "cli.h"

static const char history_usage[] =
	"usage: proteusctl history [--db PATH] [--job ID|NAME] [--json]\n"
	"\n"
	"Without --job: one line per stored run (job): id, name, policy,\n"
	"state, billing, simulated window, runtime, cost (the sum of its\n"
	"ledger) and number of events.  With --job: the run with that id, or\n"
	"every run with that name, each with its events in time order and\n"
	"its cost.\n"
	"\n"
	"  --db PATH   database (default $PROTEUS_DB or\n"
	"              ~/.local/share/proteus/proteus.db)\n"
	"  --json      {\"runs\": [...]}; with --job each run has \"events\"\n"
	"\n"
	"exit: 0 ok, 1 failure, 2 usage, 4 no such database or job\n";

struct hrun {
	int64_t id;
	char name[STORE_NAME_MAX];
	const char *state;       /* store_job_state_name() */
	int64_t created_us;
	json_t *sim;             /* the first "simulate" event's detail */
	int64_t sim_id;          /* that event's id, 0: none */
	json_t *result;          /* the last "result" event's detail */
	int64_t result_id;       /* that event's id, 0: none */
	json_t *start;           /* a daemon run's first "start" event's
				  * detail (policy, billing, market_start) */
	int64_t start_id;        /* that event's id, 0: none */
	int64_t done_us;         /* its last "done" event's time (market
				  * time, as the events'); 0: none */
	int64_t done_id;         /* that event's id, 0: none */
	int64_t cost_uusd;
	int64_t n_events;
};

static int open_db(const char *arg, struct store **ret)
{
	char *path = arg ? strdup(arg) : cli_default_db();
	struct px_error err = {0};
	enum px_err e;

	if (!path)
		return CLI_EXIT_FAIL;
	e = store_open_readonly(path, ret, &err);
	free(path);
	if (e == PX_ENOENT) {
		log_err("%s (nothing stored yet?)", err.msg);
		return CLI_EXIT_NOTFOUND;
	}
	if (e != PX_OK) {
		log_err("%s", err.msg);
		return CLI_EXIT_FAIL;
	}
	return CLI_EXIT_OK;
}

static void runs_free(struct hrun *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		json_decref(v[i].sim);
		json_decref(v[i].result);
		json_decref(v[i].start);
	}
	free(v);
}

/* Count a run's events and keep the details of its first "simulate" and
 * last "result" event (simulate --db), of its first "start" and the time
 * of its last "done" event (proteusd's jobs; docs/jobs.md), by insertion
 * order; a detail that is not JSON reads as NULL. */
static enum px_err summarize_event(const struct store_event *ev, void *arg)
{
	struct hrun *r = arg;

	r->n_events++;
	if (!strcmp(ev->kind, "simulate") &&
	    (!r->sim_id || ev->id < r->sim_id)) {
		json_decref(r->sim);
		r->sim = json_loads(ev->detail, 0, NULL);
		r->sim_id = ev->id;
	} else if (!strcmp(ev->kind, "result") && ev->id > r->result_id) {
		json_decref(r->result);
		r->result = json_loads(ev->detail, 0, NULL);
		r->result_id = ev->id;
	} else if (!strcmp(ev->kind, "start") &&
		   (!r->start_id || ev->id < r->start_id)) {
		json_decref(r->start);
		r->start = json_loads(ev->detail, 0, NULL);
		r->start_id = ev->id;
	} else if (!strcmp(ev->kind, "done") && ev->id > r->done_id) {
		r->done_us = ev->at_us;
		r->done_id = ev->id;
	}
	return PX_OK;
}

struct load_ctx {
	struct store *st;
	struct px_error *err;
	struct hrun *v;
	size_t n, cap;
};

/* One job: its row, then (in the same snapshot) its events and cost. */
static enum px_err collect_run(const struct store_job *j, void *arg)
{
	struct load_ctx *c = arg;
	struct hrun *r;
	enum px_err e;

	if (c->n == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 32;
		struct hrun *w = px_reallocarray(c->v, cap, sizeof *w);

		if (!w)
			return px_errorf(c->err, PX_ENOMEM, "out of memory");
		c->v = w;
		c->cap = cap;
	}
	r = &c->v[c->n++];
	memset(r, 0, sizeof *r);
	r->id = j->id;
	snprintf(r->name, sizeof r->name, "%s", j->name);
	r->state = store_job_state_name(j->state);
	r->created_us = j->created_us;
	e = store_events_each(c->st, j->id, summarize_event, r, c->err);
	if (e == PX_OK)
		e = store_job_cost(c->st, j->id, &r->cost_uusd, c->err);
	return e;
}

/* Runs matching id (> 0) or name (non-NULL), or all. */
static int load_runs(struct store *st, int64_t id, const char *name,
		     struct hrun **ret, size_t *ret_n)
{
	struct store_job_filter f = {.id = id, .name = name};
	struct px_error err = {0};
	struct load_ctx c = {.st = st, .err = &err};

	if (store_jobs_each(st, &f, collect_run, &c, &err) != PX_OK) {
		log_err("database: %s", err.msg);
		runs_free(c.v, c.n);
		return CLI_EXIT_FAIL;
	}
	*ret = c.v;
	*ret_n = c.n;
	return CLI_EXIT_OK;
}

static const char *jstr(json_t *o, const char *k, const char *def)
{
	const char *s = json_string_value(json_object_get(o, k));
	return s ? s : def;
}

/* A run's policy or billing model: simulate's "simulate" event says it,
 * a daemon's "start" event too; def when neither does. */
static const char *run_field(const struct hrun *r, const char *k,
			     const char *def)
{
	return jstr(r->sim, k, jstr(r->start, k, def));
}

/* Where the run started in market time: simulate's window start, or the
 * daemon's market_start (Unix seconds); def when unknown. */
static const char *run_start(const struct hrun *r, char *buf, size_t len,
			     const char *def)
{
	json_t *t = json_object_get(r->start, "market_start");

	if (json_string_value(json_object_get(r->sim, "start")))
		return jstr(r->sim, "start", def);
	if (json_is_integer(t) && json_integer_value(t) > 0)
		return px_format_time(json_integer_value(t), buf, len);
	return def;
}

/* How long the run ran, in hours: simulate's result, or from the daemon's
 * first start to its "done" event (both market time).  false: unknown
 * (still running, or it never started). */
static bool run_hours(const struct hrun *r, double *ret)
{
	json_t *h = json_object_get(r->result, "runtime_hours");
	json_t *t = json_object_get(r->start, "market_start");
	double x;

	if (json_is_number(h)) {
		*ret = json_number_value(h);
		return isfinite(*ret) && *ret >= 0;
	}
	if (!json_is_integer(t) || !r->done_id)
		return false;
	x = ((double)r->done_us / PX_USEC_PER_SEC -
	     (double)json_integer_value(t)) / 3600.0;
	if (!isfinite(x) || x < 0)
		return false;
	*ret = x;
	return true;
}

/* s made terminal-safe (px_term_safe) into a buffer that lives until the
 * next call with the same slot; long strings are cut at 255 bytes. */
static const char *safe(int slot, const char *s)
{
	static char buf[6][PX_TERM_SAFE_LEN(255)];

	return px_term_safe(s, buf[slot], sizeof(buf[slot]));
}

/* Print s terminal-safe, whatever its length. */
static void put_safe(const char *s)
{
	size_t n = strlen(s);
	char *b = px_calloc(1, PX_TERM_SAFE_LEN(n));

	if (!b) {
		fputs("?", stdout);
		return;
	}
	fputs(px_term_safe(s, b, PX_TERM_SAFE_LEN(n)), stdout);
	free(b);
}

static void fmt_us(int64_t us, char *buf, size_t len)
{
	px_format_time(us / PX_USEC_PER_SEC, buf, len);
}

static void print_runs_table(const struct hrun *v, size_t n)
{
	char c[32], cost[32], rt[32];

	printf("%5s %-16s %-9s %-9s %-13s %-20s %9s %12s %7s  %s\n", "ID",
	       "NAME", "POLICY", "STATE", "BILLING", "START", "HOURS",
	       "COST_USD", "EVENTS", "STORED");
	for (size_t i = 0; i < n; i++) {
		const struct hrun *r = &v[i];
		char st[32];
		double h;

		fmt_us(r->created_us, c, sizeof c);
		if (run_hours(r, &h))
			snprintf(rt, sizeof rt, "%.2f", h);
		else
			snprintf(rt, sizeof rt, "-");
		printf("%5lld %-16s %-9s %-9s %-13s %-20s %9s %12s %7lld  %s\n",
		       (long long)r->id, safe(0, r->name),
		       safe(1, run_field(r, "policy", "-")), safe(2, r->state),
		       safe(3, run_field(r, "billing", "-")),
		       safe(4, run_start(r, st, sizeof st, "-")), rt,
		       px_format_usd(r->cost_uusd, cost, sizeof cost),
		       (long long)r->n_events, c);
	}
}

static json_t *run_json(const struct hrun *r)
{
	char c[32];

	fmt_us(r->created_us, c, sizeof c);
	json_t *o = json_pack("{s:I, s:s, s:s, s:s, s:f, s:I}", "id",
			      (json_int_t)r->id, "name", r->name, "state",
			      r->state, "stored", c, "cost_usd",
			      px_usd(r->cost_uusd), "events",
			      (json_int_t)r->n_events);
	if (!o)
		return NULL;
	json_object_set_new(o, "policy", run_field(r, "policy", NULL) ?
			    json_string(run_field(r, "policy", "")) :
			    json_null());
	json_object_set(o, "simulation", r->sim ? r->sim : json_null());
	json_object_set(o, "result", r->result ? r->result : json_null());
	return o;
}

/* One detail value, terminal-safe: a string bare, anything else as
 * compact JSON with the shortest reals. */
static void put_value(json_t *v)
{
	char *txt = NULL;
	size_t len = 0;
	FILE *m;

	if (json_is_string(v)) {
		put_safe(json_string_value(v));
		return;
	}
	m = open_memstream(&txt, &len);
	if (!m) {
		fputs("?", stdout);
		return;
	}
	(void)px_json_put(m, v);
	if (fclose(m) == 0 && txt)
		put_safe(txt);
	else
		fputs("?", stdout);
	free(txt);
}

/* One event, one line: time, kind, then its detail: a JSON object as
 * key=value pairs (strings bare, other values as compact JSON, numbers in
 * their shortest form), anything else as its text; all terminal-safe.
 * The event's instance row (instance_id, as in --json) only when the
 * detail does not name the instance itself: each is printed once. */
static void print_event(const char *t, const struct store_event *ev)
{
	json_t *d = json_loads(ev->detail, JSON_DECODE_ANY, NULL);
	const char *k;
	json_t *v;

	printf("%-20s %-9s", t, safe(0, ev->kind));
	if (ev->instance_id > 0 && !json_object_get(d, "instance"))
		printf(" instance_id=%lld", (long long)ev->instance_id);
	if (json_is_object(d)) {
		json_object_foreach(d, k, v) {
			printf(" %s=", safe(1, k));
			put_value(v);
		}
	} else if (ev->detail[0]) {
		putchar(' ');
		put_safe(ev->detail);
	}
	putchar('\n');
	json_decref(d);
}

struct events_ctx {
	json_t *arr; /* NULL: print a table */
};

static enum px_err show_event(const struct store_event *ev, void *arg)
{
	struct events_ctx *c = arg;
	char t[32];

	fmt_us(ev->at_us, t, sizeof t);
	if (!c->arr) {
		print_event(t, ev);
		return PX_OK;
	}
	json_t *d = json_loads(ev->detail, 0, NULL);
	json_t *e = json_pack("{s:s, s:s}", "at", t, "kind", ev->kind);
	if (!e || json_array_append_new(c->arr, e)) {
		json_decref(d);
		return PX_ENOMEM;
	}
	if (ev->instance_id > 0)
		json_object_set_new(e, "instance_id",
				    json_integer(ev->instance_id));
	json_object_set_new(e, "detail", d ? d : json_string(ev->detail));
	return PX_OK;
}

/* The events of run r, printed (table) or added to o as "events". */
static int show_events(struct store *st, const struct hrun *r, json_t *o)
{
	struct events_ctx c = {.arr = o ? json_array() : NULL};
	struct px_error err = {0};
	char cost[32];
	int rc = CLI_EXIT_OK;

	if (o && !c.arr)
		return CLI_EXIT_FAIL;
	if (!o) {
		printf("run %lld: job '%s', policy %s, %s, cost %s USD "
		       "(ledger), %lld events\n\n", (long long)r->id,
		       safe(0, r->name), safe(1, run_field(r, "policy", "-")),
		       safe(2, r->state),
		       px_format_usd(r->cost_uusd, cost, sizeof cost),
		       (long long)r->n_events);
		printf("%-20s %-9s %s\n", "TIME", "KIND",
		       "DETAIL (key=value)");
	}
	if (store_events_each(st, r->id, show_event, &c, &err) != PX_OK) {
		if (err.msg[0])
			log_err("database: %s", err.msg);
		rc = CLI_EXIT_FAIL;
	}
	if (o)
		json_object_set_new(o, "events", c.arr);
	else
		printf("\n");
	return rc;
}

int cli_history(int argc, char **argv)
{
	static const struct option opts[] = {
		{"db", required_argument, NULL, 'd'},
		{"help", no_argument, NULL, 'h'},
		{"job", required_argument, NULL, 'J'},
		{"json", no_argument, NULL, 'j'},
		{0},
	};
	const char *dbpath = NULL, *job = NULL, *name = NULL;
	struct store *st = NULL;
	struct hrun *v = NULL;
	size_t n = 0;
	int64_t id = 0;
	bool json = cli_g.json;
	json_t *out = NULL, *arr;
	int c, rc;

	optind = 1;
	while ((c = getopt_long(argc, argv, ":", opts, NULL)) != -1) {
		switch (c) {
		case 'd': dbpath = optarg; break;
		case 'h': fputs(history_usage, stdout); return CLI_EXIT_OK;
		case 'J': job = optarg; break;
		case 'j': json = true; break;
		default: return cli_bad_option("history", argv, c);
		}
	}
	if (optind < argc)
		return cli_usage("history", "unexpected argument '%s'",
				 argv[optind]);
	if (job) {
		char *end;
		errno = 0;
		long long x = strtoll(job, &end, 10);
		if (!*job) {
			log_err("--job: empty");
			return CLI_EXIT_USAGE;
		}
		if (!errno && !*end && x > 0)
			id = x;
		else
			name = job;
	}
	rc = open_db(dbpath, &st);
	if (rc)
		return rc;
	rc = load_runs(st, id, name, &v, &n);
	if (rc)
		goto out;
	if (job && n == 0) {
		log_err("no run with %s '%s' (see 'proteusctl history')",
			id ? "id" : "name", job);
		rc = CLI_EXIT_NOTFOUND;
		goto out;
	}
	if (!json) {
		if (!job)
			print_runs_table(v, n);
		for (size_t i = 0; job && i < n && !rc; i++)
			rc = show_events(st, &v[i], NULL);
		goto out;
	}
	arr = json_array();
	out = json_pack("{s:o*}", "runs", arr);
	if (!out) {
		rc = CLI_EXIT_FAIL;
		goto out;
	}
	for (size_t i = 0; i < n && !rc; i++) {
		json_t *o = run_json(&v[i]);
		if (!o || json_array_append_new(arr, o)) {
			rc = CLI_EXIT_FAIL;
			break;
		}
		if (job)
			rc = show_events(st, &v[i], o);
	}
	if (!rc && px_json_dumpf(out, stdout, JSON_INDENT(2)))
		rc = CLI_EXIT_FAIL;
	if (!rc)
		putchar('\n');
out:
	json_decref(out);
	runs_free(v, n);
	store_close(st);
	return rc;
}
