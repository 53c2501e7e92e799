/* main_proteus-trainer.c -- the trainer program: `train` (single
 * process), the distributed roles `coordinator`, `ps` and `worker` (see
 * docs/trainer.md), and `local`, which starts a whole job on this host.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/log.h"
#include "../common/px.h"
#include "ckpt.h"
#include "data.h"
#include "dist.h"
#include "train_local.h"

#define PROG "proteus-trainer"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: " PROG " train [--model mlr|mlp] [--epochs N] "
		"[--batch N]\n"
		"                       [--lr X] [--momentum X] "
		"[--weight-decay X] [--threads N]\n"
		"                       [--schedule const|cosine] "
		"[--device cpu|cuda] [--seed N]\n"
		"                       [--data DIR] "
		"[--max-train N] [--max-test N] [--json]\n"
		"                       [--checkpoint FILE] [--resume FILE] "
		"[--fault-crash-after EPOCH]\n"
		"       " PROG " local --workers N --ps M [--reliable R] "
		"[--slack S] [--stage 1|2|3]\n"
		"                       [--stage-at CLOCK:STAGE] "
		"[--shards N] [--kill-worker-every S]\n"
		"                       [--kill-worker-at S]\n"
		"                       [--kill-ps-at S] [--leave-worker-at S] "
		"[--add-worker-at S]\n"
		"                       [--pause-worker-at S] "
		"[--pause-ps-at S] [--pause-for S]\n"
		"                       [--stall-timeout S] "
		"[--momentum-every N] [--fault-late-push MS]\n"
		"                       [--checkpoint FILE "
		"[--checkpoint-every CLOCKS]] [--resume FILE]\n"
		"                       [--max-restarts N] "
		"[--sole-copy-timeout S] [--fault-crash-at CLOCK]\n"
		"                       [--dir DIR] [--timeout S] "
		"[--heartbeat MS] [--hb-timeout MS]\n"
		"                       [--eval-epochs] + the train options\n"
		"       " PROG " eval FILE [--data DIR] [--max-test N] "
		"[--threads N] [--json]\n"
		"       " PROG " coordinator|ps|worker --node N --job ID "
		"--coord ADDR --listen ADDR\n"
		"                       [--agent ENDPOINT] (coordinator: "
		"PROGRESS to the agent)\n"
		"                       [--reliable] + the local options "
		"(job key in $" DIST_KEY_ENV ")\n");
}

static int parse_range(const char *name, const char *s, uint64_t min,
		       uint64_t max, uint64_t *ret)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || v < min || v > max) {
		log_err("bad --%s '%s' (an integer in %" PRIu64 "..%" PRIu64
			")", name, s, min, max);
		return -1;
	}
	*ret = v;
	return 0;
}

static int parse_u64(const char *name, const char *s, uint64_t max,
		     uint64_t *ret)
{
	return parse_range(name, s, 0, max, ret);
}

/* The distributed roles' plain numeric options, by table. */
struct u32_opt {
	int opt;
	const char *name;
	uint32_t min, max;
	uint32_t *dst;
};

struct secs_opt {
	int opt;
	const char *name;
	double *dst;
};

static int parse_float(const char *name, const char *s, float *ret)
{
	char *end;
	float v;

	errno = 0;
	v = strtof(s, &end);
	if (errno || end == s || *end || !(v >= 0.0f) || v > 1e6f) {
		log_err("bad --%s '%s' (a number >= 0)", name, s);
		return -1;
	}
	*ret = v;
	return 0;
}

static bool print_epoch(void *arg, const struct train_epoch *e)
{
	const bool *json = arg;

	fprintf(*json ? stderr : stdout,
		"epoch %u: train loss %.4f, test loss %.4f, test accuracy "
		"%.2f%%, %.1f s, %.0f samples/s\n", e->epoch, e->train_loss,
		e->test_loss, 100.0 * e->test_accuracy, e->train_seconds,
		e->samples_per_sec);
	return true;
}

static int print_json(const struct train_opts *o,
		      const struct train_result *r)
{
	json_t *j = json_pack("{s:s, s:s, s:I, s:i, s:f, s:f, s:I, s:I, "
			      "s:f, s:f, s:f, s:f, s:f, s:I}",
			      "model", model_kind_name(o->model),
			      "device", o->device == TRAIN_DEV_CUDA ? "cuda"
								   : "cpu",
			      "epochs", (json_int_t)r->epochs,
			      "threads", o->threads,
			      "lr", (double)o->lr,
			      "momentum", (double)o->momentum,
			      "batch", (json_int_t)o->batch,
			      "params", (json_int_t)r->n_params,
			      "test_accuracy", r->test_accuracy,
			      "test_loss", r->test_loss,
			      "samples_per_sec", r->samples_per_sec,
			      "train_seconds", r->train_seconds,
			      "wall_seconds", r->wall_seconds,
			      "resumed_from", (json_int_t)r->resumed_from);
	int rc = -1;

	if (j && json_dumpf(j, stdout, JSON_COMPACT) == 0) {
		fputc('\n', stdout);
		rc = 0;
	}
	json_decref(j);
	return rc;
}

static int cmd_train(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "batch", required_argument, NULL, 'b' },
		{ "checkpoint", required_argument, NULL, 'C' },
		{ "fault-crash-after", required_argument, NULL, 'F' },
		{ "resume", required_argument, NULL, 'R' },
		{ "data", required_argument, NULL, 'D' },
		{ "device", required_argument, NULL, 'd' },
		{ "epochs", required_argument, NULL, 'e' },
		{ "help", no_argument, NULL, 'h' },
		{ "json", no_argument, NULL, 'j' },
		{ "lr", required_argument, NULL, 'l' },
		{ "max-test", required_argument, NULL, 'T' },
		{ "max-train", required_argument, NULL, 'N' },
		{ "model", required_argument, NULL, 'm' },
		{ "momentum", required_argument, NULL, 'M' },
		{ "schedule", required_argument, NULL, 'S' },
		{ "seed", required_argument, NULL, 's' },
		{ "threads", required_argument, NULL, 't' },
		{ "weight-decay", required_argument, NULL, 'w' },
		{ NULL, 0, NULL, 0 },
	};
	struct data_set train = { 0 }, test = { 0 };
	struct train_result res;
	struct train_opts o;
	struct px_error err = { 0 };
	const char *dir = NULL;
	uint64_t v, max_train = 0, max_test = 0;
	bool json = false;
	int c, rc = 1;
	enum px_err e;

	train_opts_default(&o);
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'b':
			if (parse_u64("batch", optarg, MODEL_MAX_BATCH, &v))
				return 2;
			o.batch = (uint32_t)v;
			break;
		case 'C':
			o.checkpoint = optarg;
			break;
		case 'F':
			if (parse_u64("fault-crash-after", optarg, 100000, &v))
				return 2;
			o.fault_crash_after = (uint32_t)v;
			break;
		case 'R':
			o.resume = optarg;
			break;
		case 'D':
			dir = optarg;
			break;
		case 'd':
			if (train_device_parse(optarg, &o.device, &err)) {
				log_err("%s", err.msg);
				return 2;
			}
			break;
		case 'e':
			if (parse_u64("epochs", optarg, 100000, &v))
				return 2;
			o.epochs = (uint32_t)v;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'j':
			json = true;
			break;
		case 'l':
			if (parse_float("lr", optarg, &o.lr))
				return 2;
			break;
		case 'M':
			if (parse_float("momentum", optarg, &o.momentum))
				return 2;
			break;
		case 'm':
			if (model_kind_parse(optarg, &o.model, &err)) {
				log_err("%s", err.msg);
				return 2;
			}
			break;
		case 'N':
			if (parse_u64("max-train", optarg, DATA_IDX_MAX_ITEMS,
				      &max_train))
				return 2;
			break;
		case 'S':
			if (train_schedule_parse(optarg, &o.schedule, &err)) {
				log_err("%s", err.msg);
				return 2;
			}
			break;
		case 's':
			if (parse_u64("seed", optarg, UINT64_MAX, &o.seed))
				return 2;
			break;
		case 'T':
			if (parse_u64("max-test", optarg, DATA_IDX_MAX_ITEMS,
				      &max_test))
				return 2;
			break;
		case 't':
			if (parse_u64("threads", optarg, 1024, &v))
				return 2;
			o.threads = (int)v;
			break;
		case 'w':
			if (parse_float("weight-decay", optarg,
					&o.weight_decay))
				return 2;
			break;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	e = data_load_fashion_mnist(dir, true, (uint32_t)max_train, &train,
				    &err);
	if (e == PX_OK)
		e = data_load_fashion_mnist(dir, false, (uint32_t)max_test,
					    &test, &err);
	if (e != PX_OK) {
		log_err("%s", err.msg);
		goto out_release;
	}
	if (!json)
		printf("training %s on %u examples (%u test), device %s, "
		       "batch %u, lr %g, momentum %g\n",
		       model_kind_name(o.model), train.n, test.n,
		       o.device == TRAIN_DEV_CUDA ? "cuda" : "cpu", o.batch,
		       (double)o.lr, (double)o.momentum);
	e = train_local_run(&o, &train, &test, print_epoch, &json, &res,
			    &err);
	if (e != PX_OK) {
		log_err("training failed: %s", err.msg);
		goto out_release;
	}
	if (json)
		rc = print_json(&o, &res) ? 1 : 0;
	else {
		printf("test accuracy %.2f%%, %.0f samples/s, %.1f s\n",
		       100.0 * res.test_accuracy, res.samples_per_sec,
		       res.wall_seconds);
		rc = 0;
	}
out_release:
	data_release(&train);
	data_release(&test);
	return rc;
}

/* eval FILE: what a checkpoint is, and its accuracy on the test set. */
static int cmd_eval(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "data", required_argument, NULL, 'D' },
		{ "help", no_argument, NULL, 'h' },
		{ "json", no_argument, NULL, 'j' },
		{ "max-test", required_argument, NULL, 'T' },
		{ "threads", required_argument, NULL, 't' },
		{ NULL, 0, NULL, 0 },
	};
	struct data_set test = { 0 };
	struct model_ctx *mc = NULL;
	struct px_error err = { 0 };
	struct ckpt_meta m;
	float *w = NULL, *v = NULL;
	const char *dir = NULL, *file;
	uint64_t max_test = 0, threads = 1;
	double loss, acc;
	char when[32], widths[160];
	bool json = false;
	size_t off = 0;
	int c, rc = 1;

	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'D':
			dir = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'j':
			json = true;
			break;
		case 'T':
			if (parse_u64("max-test", optarg, DATA_IDX_MAX_ITEMS,
				      &max_test))
				return 2;
			break;
		case 't':
			if (parse_u64("threads", optarg, 1024, &threads))
				return 2;
			break;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc - 1) {
		usage(stderr);
		return 2;
	}
	file = argv[optind];
	if (ckpt_read(file, &m, &w, &v, &err) != PX_OK ||
	    data_load_fashion_mnist(dir, false, (uint32_t)max_test, &test,
				    &err) != PX_OK)
		goto out;
	if (test.dim != m.d.n_in || test.n_classes != m.d.n_out) {
		px_errorf(&err, PX_EINVAL, "checkpoint '%s' is of a model with "
			  "%u inputs and %u classes, the test set has %u and "
			  "%u", file, m.d.n_in, m.d.n_out, test.dim,
			  test.n_classes);
		goto out;
	}
	kern_cpu_set_threads(threads ? (int)threads : 1);
	if (model_ctx_new(&m.d, &kern_cpu_ops, NULL, TRAIN_EVAL_BATCH, &mc,
			  &err) != PX_OK ||
	    train_eval_host(mc, w, &test, &loss, &acc, &err) != PX_OK)
		goto out;
	off = (size_t)snprintf(widths, sizeof(widths), "%u", m.d.n_in);
	for (uint32_t i = 0; i < m.d.n_layers && off < sizeof(widths); i++)
		off += (size_t)snprintf(widths + off, sizeof(widths) - off,
					"-%u", m.d.layer[i].out);
	px_format_time(m.written_s, when, sizeof(when));
	if (json) {
		json_t *j = json_pack("{s:s, s:s, s:s, s:I, s:I, s:I, s:i, s:i, "
				      "s:i, s:i, s:o, s:s, s:f, s:f, s:i}",
				      "file", file,
				      "model", model_kind_name(m.d.kind),
				      "layers", widths,
				      "params", (json_int_t)m.d.n_params,
				      "clock", (json_int_t)m.clock,
				      "total", (json_int_t)m.total,
				      "workers", (int)m.workers,
				      "batch", (int)m.batch,
				      "epochs", (int)m.epochs,
				      "train_examples", (int)m.n_train,
				      "recorded_test_accuracy",
				      isnan(m.test_accuracy) ? json_null()
					      : json_real(m.test_accuracy),
				      "written", when,
				      "test_accuracy", acc, "test_loss", loss,
				      "test_examples", (int)test.n);
		char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;

		json_decref(j);
		if (!s) {
			px_errorf(&err, PX_ENOMEM, "result");
			goto out;
		}
		printf("%s\n", s);
		free(s);
	} else {
		printf("%s: %s %s (%zu parameters), clock %" PRId64 " of %"
		       PRId64 " (%u workers, batch %u, %u epochs, %u "
		       "examples), written %s\n"
		       "test accuracy %.2f%%, loss %.4f, on %u examples\n",
		       file, model_kind_name(m.d.kind), widths, m.d.n_params,
		       m.clock, m.total, m.workers, m.batch, m.epochs,
		       m.n_train, when, 100.0 * acc, loss, test.n);
	}
	rc = 0;
out:
	if (rc)
		log_err("%s", err.msg);
	model_ctx_free(mc);
	data_release(&test);
	free(w);
	free(v);
	return rc;
}

static volatile sig_atomic_t stop_flag;

static void on_stop(int sig)
{
	(void)sig;
	stop_flag = 1;
}

static void log_cb(void *arg, int level, const char *msg)
{
	(void)arg;
	log_msg((enum log_level)level, "%s", msg);
}

/* "CLOCK:STAGE" */
static int parse_stage_at(const char *s, struct dist_opts *o)
{
	char *end;
	long long c;
	unsigned long st;

	errno = 0;
	c = strtoll(s, &end, 10);
	if (errno || end == s || *end != ':' || c < 0)
		goto bad;
	st = strtoul(end + 1, &end, 10);
	if (errno || *end || st < 1 || st > 3)
		goto bad;
	o->stage_at = c;
	o->stage_to = (uint8_t)st;
	return 0;
bad:
	log_err("bad --stage-at '%s' (CLOCK:STAGE, stage 1..3)", s);
	return -1;
}

static int parse_secs(const char *name, const char *s, double *ret)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !(v >= 0.0) || v > 1e6) {
		log_err("bad --%s '%s' (seconds >= 0)", name, s);
		return -1;
	}
	*ret = v;
	return 0;
}

enum {
	O_LOCAL_ONLY = 0x100, /* not passed on to the roles */
	O_ADD_WORKER = 0x200, O_COORD, O_DIR, O_EVAL, O_HB, O_HBTO, O_JOB,
	O_KILL_PS, O_KILL_W, O_LEAVE_W, O_LISTEN, O_NODE, O_PS, O_RELIABLE,
	O_SHARDS, O_SLACK, O_STAGE, O_STAGE_AT, O_TIMEOUT, O_WORKERS,
	O_KILL_WAT, O_READY, O_STALL, O_PAUSE_W, O_PAUSE_FOR, O_AGENT,
	O_LATE_PUSH, O_PAUSE_PS, O_MOM_EVERY, O_CKPT, O_CKPT_EVERY, O_RESUME,
	O_CRASH_AT, O_RESTARTS, O_SOLE,
};

static bool local_only(int c)
{
	return c == O_ADD_WORKER || c == O_DIR || c == O_KILL_PS ||
	       c == O_KILL_W || c == O_KILL_WAT || c == O_LEAVE_W ||
	       c == O_RELIABLE || c == O_TIMEOUT || c == O_PAUSE_W ||
	       c == O_PAUSE_FOR || c == O_AGENT || c == O_PAUSE_PS ||
	       c == O_RESTARTS;
}

/* coordinator | ps | worker | local */
static int cmd_dist(const char *cmd, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "add-worker-at", required_argument, NULL, O_ADD_WORKER },
		{ "agent", required_argument, NULL, O_AGENT },
		{ "batch", required_argument, NULL, 'b' },
		{ "checkpoint", required_argument, NULL, O_CKPT },
		{ "checkpoint-every", required_argument, NULL, O_CKPT_EVERY },
		{ "coord", required_argument, NULL, O_COORD },
		{ "data", required_argument, NULL, 'D' },
		{ "device", required_argument, NULL, 'd' },
		{ "dir", required_argument, NULL, O_DIR },
		{ "epochs", required_argument, NULL, 'e' },
		{ "eval-epochs", no_argument, NULL, O_EVAL },
		{ "fault-crash-at", required_argument, NULL, O_CRASH_AT },
		{ "fault-late-push", required_argument, NULL, O_LATE_PUSH },
		{ "hb-timeout", required_argument, NULL, O_HBTO },
		{ "heartbeat", required_argument, NULL, O_HB },
		{ "help", no_argument, NULL, 'h' },
		{ "job", required_argument, NULL, O_JOB },
		{ "json", no_argument, NULL, 'j' },
		{ "kill-ps-at", required_argument, NULL, O_KILL_PS },
		{ "kill-worker-at", required_argument, NULL, O_KILL_WAT },
		{ "kill-worker-every", required_argument, NULL, O_KILL_W },
		{ "leave-worker-at", required_argument, NULL, O_LEAVE_W },
		{ "listen", required_argument, NULL, O_LISTEN },
		{ "lr", required_argument, NULL, 'l' },
		{ "max-restarts", required_argument, NULL, O_RESTARTS },
		{ "max-test", required_argument, NULL, 'T' },
		{ "max-train", required_argument, NULL, 'N' },
		{ "model", required_argument, NULL, 'm' },
		{ "momentum", required_argument, NULL, 'M' },
		{ "momentum-every", required_argument, NULL, O_MOM_EVERY },
		{ "node", required_argument, NULL, O_NODE },
		{ "pause-for", required_argument, NULL, O_PAUSE_FOR },
		{ "pause-ps-at", required_argument, NULL, O_PAUSE_PS },
		{ "pause-worker-at", required_argument, NULL, O_PAUSE_W },
		{ "ps", required_argument, NULL, O_PS },
		{ "ready-fd", required_argument, NULL, O_READY },
		{ "reliable", optional_argument, NULL, O_RELIABLE },
		{ "resume", required_argument, NULL, O_RESUME },
		{ "schedule", required_argument, NULL, 'S' },
		{ "seed", required_argument, NULL, 's' },
		{ "shards", required_argument, NULL, O_SHARDS },
		{ "slack", required_argument, NULL, O_SLACK },
		{ "sole-copy-timeout", required_argument, NULL, O_SOLE },
		{ "stage", required_argument, NULL, O_STAGE },
		{ "stage-at", required_argument, NULL, O_STAGE_AT },
		{ "stall-timeout", required_argument, NULL, O_STALL },
		{ "threads", required_argument, NULL, 't' },
		{ "timeout", required_argument, NULL, O_TIMEOUT },
		{ "weight-decay", required_argument, NULL, 'w' },
		{ "workers", required_argument, NULL, O_WORKERS },
		{ NULL, 0, NULL, 0 },
	};
	bool local = !strcmp(cmd, "local");
	struct dist_local l = { .self = "/proc/self/exe" };
	struct dist_opts o;
	struct px_error err = { 0 };
	char **role_args;
	size_t nargs = 0;
	uint64_t v;
	int c, rc = 2, prev = 1;
	enum px_err e;

	const struct u32_opt u32s[] = {
		{ 'e', "epochs", 1, 100000, &o.train.epochs },
		{ 'N', "max-train", 0, DATA_IDX_MAX_ITEMS, &o.max_train },
		{ 'T', "max-test", 0, DATA_IDX_MAX_ITEMS, &o.max_test },
		{ O_HB, "heartbeat", 1, 60000, &o.hb_ms },
		{ O_HBTO, "hb-timeout", 1, 600000, &o.hb_timeout_ms },
		{ O_NODE, "node", 0, UINT32_MAX - 1, &o.node.v },
		{ O_PS, "ps", 0, DIST_MAX_NODES, &o.ps },
		{ O_SHARDS, "shards", 0, DIST_MAX_SHARDS, &o.shards },
		{ O_STALL, "stall-timeout", 0, 86400, &o.stall_timeout_s },
		{ O_MOM_EVERY, "momentum-every", 0, 1000000,
		  &o.momentum_every },
		{ O_LATE_PUSH, "fault-late-push", 0, 90,
		  &o.fault_late_push_ms },
		{ O_CKPT_EVERY, "checkpoint-every", 0, INT32_MAX,
		  &o.checkpoint_every },
		{ O_SOLE, "sole-copy-timeout", 0, 86400,
		  &o.sole_copy_timeout_s },
		{ O_RESTARTS, "max-restarts", 0, 100, &l.max_restarts },
		{ O_WORKERS, "workers", 1, DIST_MAX_NODES, &o.workers },
	};
	const struct secs_opt secs[] = {
		{ O_ADD_WORKER, "add-worker-at", &l.add_worker_at },
		{ O_KILL_PS, "kill-ps-at", &l.kill_ps_at },
		{ O_KILL_W, "kill-worker-every", &l.kill_worker_every },
		{ O_KILL_WAT, "kill-worker-at", &l.kill_worker_at },
		{ O_LEAVE_W, "leave-worker-at", &l.leave_worker_at },
		{ O_TIMEOUT, "timeout", &l.timeout_s },
		{ O_PAUSE_W, "pause-worker-at", &l.pause_worker_at },
		{ O_PAUSE_FOR, "pause-for", &l.pause_for },
		{ O_PAUSE_PS, "pause-ps-at", &l.pause_ps_at },
	};

	dist_opts_default(&o);
	o.log = log_cb;
	o.stop = &stop_flag;
	role_args = px_calloc((size_t)argc + 1, sizeof(char *));
	if (!role_args)
		return 1;
	optind = 1;
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		const struct u32_opt *u = NULL;
		const struct secs_opt *t = NULL;

		for (size_t k = 0; k < sizeof(u32s) / sizeof(u32s[0]); k++)
			if (u32s[k].opt == c)
				u = &u32s[k];
		for (size_t k = 0; k < sizeof(secs) / sizeof(secs[0]); k++)
			if (secs[k].opt == c)
				t = &secs[k];
		if (u) {
			if (parse_range(u->name, optarg, u->min, u->max, &v))
				goto out;
			*u->dst = (uint32_t)v;
		} else if (t) {
			if (parse_secs(t->name, optarg, t->dst))
				goto out;
		} else switch (c) {
		case 'b':
			if (parse_u64("batch", optarg, MODEL_MAX_BATCH, &v))
				goto out;
			o.train.batch = (uint32_t)v;
			break;
		case 'D':
			o.data_dir = optarg;
			break;
		case 'd':
			if (train_device_parse(optarg, &o.train.device,
					       &err)) {
				log_err("%s", err.msg);
				goto out;
			}
			break;
		case 'h':
			usage(stdout);
			rc = 0;
			goto out;
		case 'j':
			o.json = true;
			break;
		case 'l':
			if (parse_float("lr", optarg, &o.train.lr))
				goto out;
			break;
		case 'M':
			if (parse_float("momentum", optarg,
					&o.train.momentum))
				goto out;
			break;
		case 'm':
			if (model_kind_parse(optarg, &o.train.model, &err)) {
				log_err("%s", err.msg);
				goto out;
			}
			break;
		case 'S':
			if (train_schedule_parse(optarg, &o.train.schedule,
						 &err)) {
				log_err("%s", err.msg);
				goto out;
			}
			break;
		case 's':
			if (parse_u64("seed", optarg, UINT64_MAX,
				      &o.train.seed))
				goto out;
			break;
		case 't':
			if (parse_u64("threads", optarg, 1024, &v))
				goto out;
			o.train.threads = (int)v;
			break;
		case 'w':
			if (parse_float("weight-decay", optarg,
					&o.train.weight_decay))
				goto out;
			break;
		case O_COORD:
		case O_LISTEN:
			if (strlen(optarg) > DIST_ADDR_MAX) {
				log_err("address '%s' too long", optarg);
				goto out;
			}
			snprintf(c == O_COORD ? o.coord : o.listen,
				 DIST_ADDR_MAX + 1, "%s", optarg);
			break;
		case O_DIR:
			l.dir = optarg;
			break;
		case O_EVAL:
			o.eval_epochs = true;
			break;
		case O_JOB:
			if (parse_u64("job", optarg, UINT64_MAX, &o.job))
				goto out;
			break;
		case O_READY:
			if (parse_u64("ready-fd", optarg, 1023, &v) || v < 3)
				goto out;
			o.ready_fd = (int)v;
			break;
		case O_RELIABLE:
			if (!local) {
				o.reliable = true;
			} else {
				/* an optional_argument only takes
				 * "--reliable=R"; accept "--reliable R" */
				if (!optarg && optind < argc)
					optarg = argv[optind++];
				if (!optarg) {
					log_err("local needs --reliable R");
					goto out;
				}
				if (parse_u64("reliable", optarg,
							 DIST_MAX_NODES, &v))
					goto out;
				l.reliable = (uint32_t)v;
			}
			break;
		case O_SLACK:
			if (parse_u64("slack", optarg, UINT16_MAX, &v))
				goto out;
			o.slack = (uint16_t)v;
			break;
		case O_STAGE:
			if (parse_u64("stage", optarg, 3, &v) || !v)
				goto out;
			o.stage = (uint8_t)v;
			break;
		case O_STAGE_AT:
			if (parse_stage_at(optarg, &o))
				goto out;
			break;
		case O_AGENT:
			if (local || strlen(optarg) > DIST_ADDR_MAX) {
				log_err("--agent: %s", local ? "local is the "
					"agent" : "endpoint too long");
				goto out;
			}
			snprintf(o.agent, sizeof(o.agent), "%s", optarg);
			break;
		case O_CKPT:
			o.checkpoint = optarg;
			break;
		case O_RESUME:
			o.resume = optarg;
			break;
		case O_CRASH_AT:
			if (parse_u64("fault-crash-at", optarg, INT32_MAX, &v))
				goto out;
			o.fault_crash_at = (int64_t)v;
			break;
		default:
			usage(stderr);
			goto out;
		}
		/* local gives the coordinator its --resume and
		 * --fault-crash-at itself (not to a restarted job) */
		if (!local_only(c) && c != 'h' &&
		    !(local && (c == O_RESUME || c == O_CRASH_AT)))
			for (int i = prev; i < optind; i++)
				role_args[nargs++] = argv[i];
		prev = optind;
	}
	if (optind != argc) {
		usage(stderr);
		goto out;
	}
	if (o.checkpoint_every && !o.checkpoint) {
		log_err("--checkpoint-every needs --checkpoint FILE");
		goto out;
	}
	if (l.max_restarts && !o.checkpoint) {
		log_err("--max-restarts needs --checkpoint FILE (a restart "
			"resumes from it)");
		goto out;
	}
	if (local) {
		if (l.reliable > o.ps) {
			log_err("--reliable %u is more than --ps %u",
				l.reliable, o.ps);
			goto out;
		}
		l.role_args = role_args;
		rc = dist_local_run(&o, &l, &err);
		if (rc != 0 && err.msg[0])
			log_err("%s", err.msg);
		goto out;
	}
	/* A role dies with whoever started it. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() == 1) {
		rc = 1;
		goto out;
	}
	signal(SIGTERM, on_stop);
	signal(SIGINT, on_stop);
	signal(SIGPIPE, SIG_IGN);
	if (!o.coord[0] || !o.listen[0]) {
		log_err("%s needs --coord and --listen", cmd);
		goto out;
	}
	if (dist_key_from_env(&o, &err) != PX_OK) {
		log_err("%s", err.msg);
		goto out;
	}
	log_init(cmd, strcmp(cmd, "coordinator") ? LOG_LVL_NOTICE
						 : LOG_LVL_INFO);
	if (!strcmp(cmd, "coordinator"))
		e = dist_coord_run(&o, &err);
	else if (!strcmp(cmd, "ps"))
		e = dist_ps_run(&o, &err);
	else
		e = dist_worker_run(&o, &err);
	rc = 0;
	if (e != PX_OK && !(e == PX_ECANCELED && strcmp(cmd, "coordinator"))) {
		log_err("%s %u: %s", cmd, o.node.v, err.msg);
		rc = 1;
	}
out:
	free(role_args);
	return rc;
}

int main(int argc, char **argv)
{
	log_init(PROG, LOG_LVL_INFO);
	kern_cpu_flush_denormals(); /* every role trains on this thread */
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "train"))
		return cmd_train(argc - 1, argv + 1);
	if (!strcmp(argv[1], "eval"))
		return cmd_eval(argc - 1, argv + 1);
	if (!strcmp(argv[1], "local") || !strcmp(argv[1], "coordinator") ||
	    !strcmp(argv[1], "ps") || !strcmp(argv[1], "worker"))
		return cmd_dist(argv[1], argc - 1, argv + 1);
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		usage(stdout);
		return 0;
	}
	log_err("unknown command '%s'", argv[1]);
	usage(stderr);
	return 2;
}
