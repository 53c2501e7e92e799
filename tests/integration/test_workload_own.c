/* test_workload_own.c -- a workload of the test's own (workload.h: one
 * table, in this file) registered with workload_register and run through
 * the daemon's jobs code (jobs_new, jobs_cmd_submit, the loop) on the
 * local world: its nodes are real process groups (sleep), its driver is
 * nothing, its reports are a clock it counts.  The job runs to its end on
 * the workload's word alone, its books and status are the daemon's, and
 * the built-in trainer was never asked. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../agent/jobs_int.h"
#include "../../agent/loop.h"
#include "pxrun.h"

#define CLOCKS 40

static struct {
	int prepared, started, polls, stages, stopped, freed, commands;
	int64_t clock;
} own;

static enum px_err own_prepare(struct job *j, struct px_error *err)
{
	(void)err;
	j->wl = &own;
	own.prepared++;
	job_progress_foresee(j, CLOCKS);
	return PX_OK;
}

static int own_ports(const struct job *j)
{
	(void)j;
	return 1;
}

/* A node: sleep, in its own process group (the local world's). */
static enum px_err own_command(void *ctx, const struct world_req *q,
			       const struct world_place *pl,
			       struct world_node *ret, struct px_error *err)
{
	(void)ctx;
	(void)q;
	(void)pl;
	(void)err;
	ret->argv = calloc(3, sizeof *ret->argv);
	cr_assert_not_null(ret->argv);
	ret->argv[0] = strdup("/bin/sleep");
	ret->argv[1] = strdup("600");
	ret->env = NULL;
	own.commands++;
	return PX_OK;
}

static char log_path[512];

static void own_hooks(struct job *j, struct world_hooks *h)
{
	h->command = own_command;
	h->ctx = j;
	h->ready_on_report = false;
	h->log_path = log_path;
}

static enum px_err own_start(struct job *j, const char *coord, bool resume,
			     struct px_error *err)
{
	(void)j;
	(void)err;
	cr_assert(coord && coord[0], "the world gives the driver's address");
	cr_assert_not(resume);
	own.started++;
	return PX_OK;
}

/* One step a tick while the job holds a node, reported in the job's
 * terms. */
static void own_poll(struct job *j)
{
	struct job_report r = {
		.total_clock = CLOCKS, .acc = NAN, .loss = NAN, .stage = 1,
	};

	own.polls++;
	if (job_nodes(j) > 0 && own.clock < CLOCKS)
		own.clock++;
	r.clock = own.clock;
	r.frac = (double)own.clock / CLOCKS;
	r.workers = (int)job_nodes(j);
	r.sps = 10;
	job_progress_take(j, &r);
}

static void own_stage(struct job *j, int stage)
{
	(void)j;
	(void)stage;
	own.stages++;
}

static enum workload_end own_check(struct job *j, char *why, size_t len)
{
	(void)j;
	(void)why;
	(void)len;
	return own.clock >= CLOCKS ? WORKLOAD_DONE : WORKLOAD_RUNS;
}

static bool own_restart_stalled(struct job *j)
{
	(void)j;
	return false;
}

static void own_stop(struct job *j)
{
	(void)j;
	own.stopped++;
}

static void own_free(struct job *j)
{
	j->wl = NULL;
	own.freed++;
}

static const struct workload_ops own_ops = {
	.name = "own", .product = "own.out", .release_ms = 0,
	.prepare = own_prepare, .node_ports = own_ports, .hooks = own_hooks,
	.start = own_start, .poll = own_poll, .stage = own_stage,
	.check = own_check, .restart_stalled = own_restart_stalled,
	.stop = own_stop, .free = own_free,
};

static char *tmp, *trace, *od;
static struct loop *loop;
static struct store *st;
static struct proteusd_config cfg;
static struct jobs *js;
static int64_t id;

static void setup(void)
{
	struct px_error err = {0};
	struct config_diag d = {0};
	static char dir[512];
	char db[512];
	struct jobs_setup s = {0};

	/* the daemon's defaults, as proteusd finds them (borrowed by the
	 * jobs for their life) */
	trace = px_src_path(
		"docs/examples/traces/us-east-1_2016-03-01_7d_linux.json.gz");
	od = px_src_path("etc/ondemand/us-east-1_2016-02_2016-04.json");
	tmp = px_tmpdir();
	cr_assert(tmp && trace && od);
	snprintf(db, sizeof db, "%s/p.db", tmp);
	snprintf(dir, sizeof dir, "%s/jobs", tmp);
	snprintf(log_path, sizeof log_path, "%s/nodes.log", tmp);
	cr_assert_eq(config_defaults(&cfg, &d), PX_OK);
	config_diag_release(&d);
	cr_assert_eq(loop_new(&loop), PX_OK);
	cr_assert_eq(store_open(db, &st, &err), PX_OK, "%s", err.msg);
	s = (struct jobs_setup){ .loop = loop, .st = st, .cfg = &cfg,
				 .trainer = "/bin/false", .trace = trace,
				 .ondemand = od, .dir = dir };
	cr_assert_eq(jobs_new(&s, &js, &err), PX_OK, "%s", err.msg);
	if (!workload_of(own_ops.name))
		cr_assert_eq(workload_register(&own_ops, &err), PX_OK, "%s",
			     err.msg);
}

static void teardown(void)
{
	jobs_free(js);
	store_close(st);
	loop_free(loop);
	px_rmtree(tmp);
	free(tmp);
	free(trace);
	free(od);
}

TestSuite(workload_own, .init = setup, .fini = teardown, .timeout = 60);

static const char spec[] =
	"{\"name\": \"own\", \"region\": \"us-east-1\", \"work_hours\": 8,"
	" \"reference_type\": \"m3.large\", \"instances\": 2,"
	" \"reliable\": {\"type\": \"m3.large\", \"count\": 1},"
	" \"spot\": {\"types\": [\"m3.large\"], \"zones\": [\"us-east-1a\"],"
	" \"max_instances\": 2}, \"startup_seconds\": 60,"
	" \"policy\": \"standard\", \"workload\": \"own\","
	" \"world\": {\"name\": \"local\", \"start\": \"2016-03-02T00:00:00Z\","
	" \"speedup\": 240}}";

/* The loop ends with the job. */
static int64_t watch(struct loop *l, int64_t tid, void *ctx)
{
	struct job *j = job_find(js, id);

	(void)tid;
	(void)ctx;
	if (j && j->run.state != STORE_JOB_QUEUED &&
	    j->run.state != STORE_JOB_RUNNING && !j->run.closing_us) {
		loop_stop(l);
		return LOOP_NOMORE;
	}
	return 100;
}

static json_t *request(const char *fmt, ...)
{
	json_error_t je;
	json_t *o;
	va_list ap;

	va_start(ap, fmt);
	o = json_vpack_ex(&je, 0, fmt, ap);
	va_end(ap);
	cr_assert_not_null(o, "%s", je.text);
	return o;
}

Test(workload_own, a_job_runs_to_its_end_on_a_workload_of_its_own)
{
	struct px_error err = {0};
	json_t *sp = json_loads(spec, 0, NULL), *req, *reply, *status;
	struct job *j;

	cr_assert_not_null(sp);
	req = request("{s:o, s:s}", "spec", sp, "file", "own.json");
	reply = jobs_cmd_submit(js, req, &err);
	cr_assert_not_null(reply, "%s", err.msg);
	id = json_integer_value(json_object_get(reply, "job"));
	cr_assert_gt(id, 0);
	json_decref(reply);
	json_decref(req);
	j = job_find(js, id);
	cr_assert_not_null(j);
	cr_assert_eq(j->wlops, &own_ops, "the request chose the workload");
	cr_assert_geq(loop_timer_add(loop, 100, watch, NULL), 0);
	cr_assert_eq(loop_run(loop), PX_OK);

	cr_assert_eq(j->run.state, STORE_JOB_DONE, "%s: %s",
		     store_job_state_name(j->run.state), j->run.why);
	cr_assert_eq(own.prepared, 1);
	cr_assert_eq(own.started, 1);
	cr_assert_geq(own.commands, 1, "the world ran the workload's nodes");
	cr_assert_geq(own.polls, CLOCKS);
	cr_assert_geq(own.stopped, 1);
	/* the daemon's books and status, from the workload's reports */
	req = request("{s:I}", "job", (json_int_t)id);
	status = jobs_cmd_status(js, req, &err);
	cr_assert_not_null(status, "%s", err.msg);
	cr_assert_str_eq(json_string_value(json_object_get(status, "state")),
			 "done");
	cr_assert_eq(json_integer_value(json_object_get(status, "clock")),
		     CLOCKS);
	cr_assert_eq(json_integer_value(json_object_get(status,
							"clocks_total")),
		     CLOCKS);
	cr_assert_float_eq(json_number_value(json_object_get(status,
							     "work_done")),
			   1.0, 1e-9);
	cr_assert_gt(json_number_value(json_object_get(status, "cost_usd")),
		     0, "its instances were billed");
	cr_assert(json_is_null(json_object_get(status, "test_accuracy")),
		  "never evaluated: no figure");
	json_decref(status);
	json_decref(req);
}

/* A request naming a workload the daemon does not know is refused at
 * the field, naming the ones it knows. */
Test(workload_own, an_unknown_workload_is_refused_at_its_field)
{
	struct px_error err = {0};
	struct job_request *r = calloc(1, sizeof *r);
	const char *bad = "{\"name\": \"x\", \"region\": \"us-east-1\","
			  " \"work_hours\": 1, \"reference_type\": "
			  "\"m3.large\", \"instances\": 1, \"spot\": "
			  "{\"types\": [\"m3.large\"], \"max_instances\": 1},"
			  " \"workload\": \"torchrun\"}";

	cr_assert_not_null(r);
	cr_assert_eq(jobreq_parse(bad, strlen(bad), "x.json", r, &err),
		     PX_EINVAL);
	cr_assert_not_null(strstr(err.msg, "x.json: workload: unknown "
				  "workload 'torchrun' (known: trainer, program, own)"),
			   "%s", err.msg);
	/* and the table is refused twice, or without its ops */
	cr_assert_eq(workload_register(&own_ops, &err), PX_EINVAL);
	cr_assert_eq(workload_register(&(struct workload_ops){ .name = "x" },
				       &err), PX_EINVAL);
	free(r);
}
