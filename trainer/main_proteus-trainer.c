/* main_proteus-trainer.c -- the trainer program.  For now one subcommand,
 * `train`: single-process training on Fashion-MNIST (no workers or
 * parameter servers yet), printing progress per epoch and optionally one
 * JSON summary object on stdout.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/log.h"
#include "../common/px.h"
#include "data.h"
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
		"[--max-train N] [--max-test N] [--json]\n");
}

static int parse_u64(const char *name, const char *s, uint64_t max,
		     uint64_t *ret)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || v > max) {
		log_err("bad --%s '%s' (an integer in 0..%" PRIu64 ")", name,
			s, max);
		return -1;
	}
	*ret = v;
	return 0;
}

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
			      "s:f, s:f, s:f, s:f, s:f}",
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
			      "wall_seconds", r->wall_seconds);
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

int main(int argc, char **argv)
{
	log_init(PROG, LOG_LVL_INFO);
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "train"))
		return cmd_train(argc - 1, argv + 1);
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		usage(stdout);
		return 0;
	}
	log_err("unknown command '%s'", argv[1]);
	usage(stderr);
	return 2;
}
