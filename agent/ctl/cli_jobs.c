/* cli_jobs.c -- proteusctl's job commands, answered by a running proteusd
 * over its control socket (docs/proteusctl.md, "Jobs"):
 *
 *   proteusctl submit FILE [--json]        queue a job; prints its id
 *   proteusctl jobs [--json]               every job
 *   proteusctl status ID [--watch] [--interval S] [--json]
 *   proteusctl events ID [--follow] [--json]
 *   proteusctl cancel ID [--json]
 *
 * Every command also takes --socket PATH.  Text output escapes what came
 * from outside (names, event details) with px_term_safe.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../../bidbrain/jobspec.h"
#include "../../common/jsonout.h"
#include "../../common/log.h"
#include "../../trainer/io/data_url.h"
#include "../../trainer/compute/goodput.h"
#include "cli.h"
#include "../proto.h"

#define EVENTS_PAGE 200          /* the daemon's events per answer */

static const char jobs_usage[] =
	"usage: proteusctl submit FILE [--json] [--socket PATH]\n"
	"       proteusctl jobs [--json] [--socket PATH]\n"
	"       proteusctl status ID [--watch] [--interval S] [--json] "
	"[--socket PATH]\n"
	"       proteusctl events ID [--follow] [--json] [--socket PATH]\n"
	"       proteusctl cancel ID [--json] [--socket PATH]\n"
	"\n"
	"submit: send the job in FILE (a job spec with 'trainer' and 'world'\n"
	"  sections: docs/jobspec.md) to proteusd; prints the job's id (with\n"
	"  --json: {\"job\": ID}) as soon as it is queued.\n"
	"jobs: every job with its state and cost.\n"
	"status ID: the job's state, stage, clock, test accuracy, fleet, cost,\n"
	"  projected cost, what on-demand would cost, evictions, joins, losses.\n"
	"  --watch redraws it in place until the job ends, with the fleet by\n"
	"  market and the last events (one line per change when the output\n"
	"  is not a terminal); --interval S (default 1).\n"
	"events ID: the job's events; --follow waits for more until it ends.\n"
	"cancel ID: end the job now, releasing every instance.\n"
	"\n"
	"  --socket PATH  control socket (default: $PROTEUS_SOCKET, else\n"
	"                 proteusd's default)\n"
	"  --json         JSON (events: one object per line)\n"
	"\n"
	"exit: 0 ok (status --watch: the job is done), 1 the daemon is not\n"
	"running, failed, or the watched job failed or was cancelled, 2 usage,\n"
	"3 the job was refused (the message names the field), 4 no such job\n";

struct jargs {
	const char *cmd;
	char sock[CLI_SOCKET_MAX];
	bool json, watch, follow;
	double interval_s;
	const char *pos;         /* the one positional argument */
	int64_t id;
};

/* Parse the options every job command shares; -1 to go on, else the exit
 * code.  want_pos: the command takes one positional argument (an id,
 * unless it is submit's FILE). */
static int jargs_parse(struct jargs *a, int argc, char **argv, bool want_pos)
{
	static const struct option opts[] = {
		{"follow", no_argument, NULL, 'f'},
		{"help", no_argument, NULL, 'h'},
		{"interval", required_argument, NULL, 'i'},
		{"json", no_argument, NULL, 'j'},
		{"socket", required_argument, NULL, 's'},
		{"watch", no_argument, NULL, 'w'},
		{NULL, 0, NULL, 0},
	};
	const char *sock = NULL;
	char *end;
	int o;

	a->json = cli_g.json;
	a->interval_s = 1;
	optind = 1;
	while ((o = getopt_long(argc, argv, ":hfw", opts, NULL)) != -1) {
		switch (o) {
		case 'h':
			fputs(jobs_usage, stdout);
			return CLI_EXIT_OK;
		case 'f':
			if (strcmp(a->cmd, "events"))
				return cli_usage(a->cmd, "--follow goes with "
						 "'events'");
			a->follow = true;
			break;
		case 'w':
			if (strcmp(a->cmd, "status"))
				return cli_usage(a->cmd, "--watch goes with "
						 "'status ID'");
			a->watch = true;
			break;
		case 'i':
			errno = 0;
			a->interval_s = strtod(optarg, &end);
			if (errno || end == optarg || *end ||
			    !(a->interval_s >= 0.1 && a->interval_s <= 3600))
				return cli_usage(a->cmd, "--interval '%s': "
						 "seconds from 0.1 to 3600",
						 optarg);
			break;
		case 'j':
			a->json = true;
			break;
		case 's':
			sock = optarg;
			break;
		default:
			return cli_bad_option(a->cmd, argv, o);
		}
	}
	if (want_pos) {
		if (optind >= argc)
			return cli_usage(a->cmd, "'%s' needs %s", a->cmd,
					 strcmp(a->cmd, "submit") ? "a job id" :
					 "a job file");
		a->pos = argv[optind++];
		if (strcmp(a->cmd, "submit")) {
			errno = 0;
			a->id = strtoll(a->pos, &end, 10);
			if (errno || end == a->pos || *end || a->id <= 0)
				return cli_usage(a->cmd, "'%s' is not a job "
						 "id (a positive integer)",
						 a->pos);
		}
	}
	if (optind < argc)
		return cli_usage(a->cmd, "unexpected argument '%s'",
				 argv[optind]);
	if (sock) {
		if (strlen(sock) >= sizeof a->sock)
			return cli_usage(a->cmd, "socket path '%s' is too "
					 "long", sock);
		snprintf(a->sock, sizeof a->sock, "%s", sock);
		return -1;
	}
	return cli_socket_path(a->sock, sizeof a->sock);
}

/* Ask the daemon: a request for cmd with "job" set when id > 0. */
static int ask(struct jargs *a, enum proto_cmd cmd, int64_t id,
	       json_t *extra, json_t **ret)
{
	json_t *req = proto_request_new(cmd);
	int code;

	if (!req || (id > 0 && json_object_set_new(req, "job",
						   json_integer(id))) ||
	    (extra && json_object_update(req, extra))) {
		json_decref(req);
		json_decref(extra);
		log_err("out of memory");
		return CLI_EXIT_FAIL;
	}
	json_decref(extra);
	code = cli_daemon_call(a->sock, req, ret);
	json_decref(req);
	return code;
}

static int print_json(json_t *o, size_t flags)
{
	if (px_json_dumpf(o, stdout, flags)) {
		log_err("cannot write the output");
		return CLI_EXIT_FAIL;
	}
	putchar('\n');
	return CLI_EXIT_OK;
}

/* A string from the daemon, terminal-safe, in one of four rotating
 * buffers (enough for one printf). */
static const char *safe(json_t *o, const char *k)
{
	return cli_term_str(o, k, "?");
}

static double real_of(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);

	return json_is_number(v) ? json_number_value(v) : NAN;
}

static long long int_of(json_t *o, const char *k)
{
	return json_integer_value(json_object_get(o, k));
}

/* A figure that cannot be negative: never printed as such. */
static double nonneg(double v)
{
	return isfinite(v) && v > 0 ? v : 0;
}

/* ---- submit ---- */

/* A path the job file names, relative to the file's folder unless
 * absolute, made absolute (the daemon runs elsewhere).  false with the
 * error logged when it does not exist. */
static bool abs_path(const char *file, const char *field, const char *name,
		     char *buf, size_t len)
{
	char tmp[PATH_MAX + 1], *r;

	cli_file_relative(file, name, tmp, sizeof tmp);
	r = realpath(tmp, NULL);
	if (!r || strlen(r) >= len) {
		log_err("%s: %s: '%s': %s", file, field, tmp,
			r ? "path too long" : strerror(errno));
		free(r);
		return false;
	}
	snprintf(buf, len, "%s", r);
	free(r);
	return true;
}

/* obj's member key, when a non-empty string and no URL (scheme://),
 * made an absolute path. */
static bool abs_member(const char *file, json_t *obj, const char *key)
{
	json_t *v = json_object_get(obj, key);
	char buf[PATH_MAX + 1];

	if (!json_is_string(v) || !json_string_length(v) ||
	    data_is_url(json_string_value(v)))
		return true;
	return abs_path(file, key, json_string_value(v), buf, sizeof buf) &&
	       !json_object_set_new(obj, key, json_string(buf));
}

/* Make the files the job names travel with it: world.trace,
 * world.ondemand_prices, spot_advisor, trainer.data's train and test and
 * program.code (a folder; a URL stays one) as absolute paths, a
 * scaling_profile file inlined (the stored job then needs no file of the
 * submitter's).  false with the error logged. */
static bool resolve_files(const char *file, json_t *spec)
{
	json_t *w = json_object_get(spec, "world"), *v;
	json_t *d = json_object_get(json_object_get(spec, "trainer"), "data");
	json_t *p = json_object_get(spec, "program");
	char buf[PATH_MAX + 1];
	json_error_t je;

	if (!abs_member(file, w, "trace") ||
	    !abs_member(file, w, "ondemand_prices") ||
	    !abs_member(file, spec, "spot_advisor") ||
	    !abs_member(file, d, "train") || !abs_member(file, d, "test") ||
	    !abs_member(file, p, "code"))
		return false;
	v = json_object_get(spec, "scaling_profile");
	if (json_is_string(v)) {
		struct px_error err;
		json_t *prof;
		char *text;
		size_t n;

		if (!abs_path(file, "scaling_profile", json_string_value(v),
			      buf, sizeof buf))
			return false;
		/* bounded as the daemon bounds the job it is inlined into */
		if (px_read_file(buf, JOBSPEC_FILE_MAX, &text, &n, &err) !=
		    PX_OK) {
			log_err("%s: scaling_profile: %s", file, err.msg);
			return false;
		}
		prof = json_loadb(text, n, JSON_REJECT_DUPLICATES, &je);
		free(text);
		if (!prof) {
			log_err("%s: scaling_profile: %s:%d:%d: %s", file, buf,
				je.line, je.column, je.text);
			return false;
		}
		if (json_object_set_new(spec, "scaling_profile", prof))
			return false;
	}
	return true;
}

/* While proteusd checks a job's files (up to PROTO_SUBMIT_LOAD_S): after
 * a second without its answer, one line on the terminal, redrawn each
 * second; *ctx (bool) set once it is shown, to be cleared. */
static void submit_waiting(void *ctx, int64_t waited_ms)
{
	bool *shown = ctx;

	if (waited_ms < 1000)
		return;
	fprintf(stderr, "\rproteusctl: proteusd is checking the job's files: "
		"%" PRId64 " s (it takes at most %d s)", waited_ms / 1000,
		PROTO_SUBMIT_LOAD_S);
	fflush(stderr);
	*shown = true;
}

int cli_submit(int argc, char **argv)
{
	struct jargs a = { .cmd = "submit" };
	struct px_error err;
	json_error_t je;
	json_t *spec, *req, *r = NULL;
	bool shown = false;
	const char *base;
	char *text;
	size_t n;
	int code = jargs_parse(&a, argc, argv, true);
	enum px_err e;

	if (code >= 0)
		return code;
	/* bounded as the daemon bounds the job it receives */
	e = px_read_file(a.pos, JOBSPEC_FILE_MAX, &text, &n, &err);
	if (e != PX_OK) {
		log_err("%s", err.msg);
		return e == PX_ENOENT ? CLI_EXIT_NOTFOUND :
		       e == PX_ETOOBIG ? CLI_EXIT_DATA : CLI_EXIT_FAIL;
	}
	spec = json_loadb(text, n, JSON_REJECT_DUPLICATES, &je);
	free(text);
	if (!spec) {
		log_err("%s:%d:%d: %s", a.pos, je.line, je.column, je.text);
		return CLI_EXIT_DATA;
	}
	if (!json_is_object(spec)) {
		json_decref(spec);
		log_err("%s: a job is a JSON object", a.pos);
		return CLI_EXIT_DATA;
	}
	if (!resolve_files(a.pos, spec)) {
		json_decref(spec);
		return CLI_EXIT_DATA;
	}
	base = strrchr(a.pos, '/');
	base = base ? base + 1 : a.pos;
	req = proto_request_new(PROTO_CMD_submit);
	if (!req)
		json_decref(spec);
	if (!req || json_object_set_new(req, "spec", spec) ||
	    json_object_set_new(req, "file", json_string(base))) {
		json_decref(req);
		log_err("out of memory");
		return CLI_EXIT_FAIL;
	}
	/* as long as the daemon may take (cli.h), a line on a terminal
	 * saying so while it checks; stdout stays the id alone */
	code = cli_daemon_call_waiting(a.sock, req, CLI_SUBMIT_TIMEOUT_MS,
				       isatty(STDERR_FILENO) ? submit_waiting :
				       NULL, &shown, " (the job may still be "
				       "stored: see `proteusctl jobs` before "
				       "submitting it again)", &r);
	json_decref(req);
	if (shown)
		fputs("\r\033[K", stderr);
	if (code != CLI_EXIT_OK)
		return code;
	if (a.json)
		code = print_json(r, JSON_COMPACT);
	else
		printf("%lld\n", int_of(r, "job"));
	/* what the daemon changed to fit its host (stdout stays the id) */
	if (json_is_string(json_object_get(r, "note")))
		log_warn("job %lld: %s", int_of(r, "job"),
			 json_string_value(json_object_get(r, "note")));
	json_decref(r);
	return code;
}

/* ---- jobs ---- */

int cli_jobs(int argc, char **argv)
{
	struct jargs a = { .cmd = "jobs" };
	json_t *r = NULL, *list, *x;
	size_t i;
	int code = jargs_parse(&a, argc, argv, false);

	if (code >= 0)
		return code;
	code = ask(&a, PROTO_CMD_jobs, 0, NULL, &r);
	if (code != CLI_EXIT_OK)
		return code;
	if (a.json) {
		code = print_json(r, JSON_INDENT(2));
		json_decref(r);
		return code;
	}
	list = json_object_get(r, "jobs");
	printf("%-6s %-24s %-10s %-6s %10s %9s\n", "JOB", "NAME", "STATE",
	       "WORLD", "COST_USD", "ACCURACY");
	json_array_foreach(list, i, x) {
		double acc = real_of(x, "test_accuracy");
		char accs[16] = "-";
		json_t *c = json_object_get(x, "cost_usd");
		char costs[24] = "-";

		if (isfinite(acc))
			snprintf(accs, sizeof accs, "%.2f%%", 100 * acc);
		if (json_is_number(c))
			snprintf(costs, sizeof costs, "%.4f",
				 nonneg(json_number_value(c)));
		printf("%-6lld %-24.24s %-10s %-6s %10s %9s\n",
		       int_of(x, "job"), safe(x, "name"), safe(x, "state"),
		       safe(x, "world"), costs, accs);
	}
	json_decref(r);
	return CLI_EXIT_OK;
}

/* ---- status ---- */

static bool final_state(const char *s)
{
	return s && (!strcmp(s, "done") || !strcmp(s, "failed") ||
		     !strcmp(s, "cancelled"));
}

static void fmt_time(long long t, char *buf, size_t len)
{
	time_t tt = (time_t)t;
	struct tm tm;

	if (t <= 0 || !gmtime_r(&tt, &tm))
		snprintf(buf, len, "-");
	else
		strftime(buf, len, "%Y-%m-%d %H:%M UTC", &tm);
}

/* The fleet as "reliable m3.large x1; transient m3.large us-east-1a x2". */
static void fmt_fleet(json_t *fleet, char *buf, size_t len)
{
	size_t i, off = 0;
	json_t *g;

	buf[0] = 0;
	json_array_foreach(fleet, i, g) {
		json_t *z = json_object_get(g, "zone");
		int n = snprintf(buf + off, len - off, "%s%s %s%s%s x%lld",
				 i ? "; " : "", safe(g, "tier"),
				 safe(g, "type"), json_is_string(z) ? " " : "",
				 json_is_string(z) ? safe(g, "zone") : "",
				 int_of(g, "count"));

		if (n < 0 || (size_t)n >= len - off)
			break;
		off += (size_t)n;
	}
	if (!off)
		snprintf(buf, len, "none");
}

/* The status as lines; returns how many it printed. */
/* What on-demand would have cost: the same instance-time at on-demand
 * prices (and the saving), and the job spec's own estimate for the work
 * done (work_hours of its reference type). */
static void print_ondemand(json_t *r)
{
	double fleet = real_of(r, "fleet_ondemand_usd");
	double cost = nonneg(real_of(r, "cost_usd"));
	char saved[48] = "";

	if (isfinite(fleet) && fleet > 0)
		snprintf(saved, sizeof saved, " (%.0f%% %s)",
			 fabs(100 * (1 - cost / fleet)),
			 cost <= fleet ? "less" : "more");
	printf("ondemand $%.4f for the same instances and hours%s; $%.4f by the "
	       "job's estimate of its work\n",
	       isfinite(fleet) ? nonneg(fleet) : 0.0, saved,
	       nonneg(real_of(r, "ondemand_cost_usd")));
}

/* The trainer's goodput and the measured scaling (instances:goodput),
 * if any: a line or none. */
static int print_goodput(json_t *g)
{
	json_t *sc = json_object_get(g, "scaling");
	json_t *n = json_object_get(sc, "instances");
	json_t *gp = json_object_get(sc, "goodput");
	char pts[256] = "", phi[32];
	size_t k = 0, i;
	json_t *v;

	if (!json_is_object(g) || !(real_of(g, "samples_per_s") > 0 ||
				    json_array_size(n)))
		return 0;
	json_array_foreach(n, i, v)
		if (k + 24 < sizeof pts)
			k += (size_t)snprintf(pts + k, sizeof pts - k,
					      " %lld:%.0f",
					      (long long)json_integer_value(v),
					      nonneg(json_number_value(
						json_array_get(gp, i))));
	printf("goodput  %.0f samples/s (efficiency %.3f, noise scale %s, "
	       "batch %lld, lr x%.3f); scaling%s (%s)\n",
	       nonneg(real_of(g, "samples_per_s")),
	       nonneg(real_of(g, "efficiency")),
	       gns_format(real_of(g, "noise_scale"), phi, sizeof phi),
	       int_of(g, "batch"),
	       nonneg(real_of(g, "lr_scale")), k ? pts : " not measured yet",
	       json_is_true(json_object_get(sc, "measured"))
		       ? "measured: BidBrain plans with it"
		       : "the spec's until measured");
	return 1;
}

/* The workers the trainer counts slow, as its own progress lines name
 * them ("worker N at S, ... minibatches/s (median M)"): a line, or none
 * when none is. */
static int print_slow(json_t *r)
{
	json_t *a = json_object_get(r, "slow_workers"), *w;
	double med = real_of(r, "worker_speed_median");
	char buf[512] = "";
	size_t off = 0, i;

	if (!json_array_size(a))
		return 0;
	json_array_foreach(a, i, w) {
		int n = snprintf(buf + off, sizeof buf - off, "%sworker %lld "
				 "at %.1f", i ? ", " : "", int_of(w, "node"),
				 nonneg(real_of(w, "speed")));

		if (n < 0 || (size_t)n >= sizeof buf - off)
			break;
		off += (size_t)n;
	}
	if (isfinite(med))
		printf("slow     %s minibatches/s (median %.1f)\n", buf, med);
	else
		printf("slow     %s minibatches/s\n", buf);
	return 1;
}

/* The work done in whole percent, rounded down: 100% only when it is
 * all done (99.7% is not "100%" of a job still at clock 11310 of
 * 11725). */
static double work_pct(json_t *r)
{
	double w = nonneg(real_of(r, "work_done"));

	return floor(100 * (w < 1 ? w : 1) + 1e-9);
}

/* The checkpoint store's copy in S3, on the ckpt line: how far it is,
 * what it does, its last error (docs/programs.md, "The checkpoint store
 * in S3"). */
static void print_store(json_t *st)
{
	if (!json_is_object(st) || strcmp(json_string_value(json_object_get(
					   st, "where")) ?: "", "s3"))
		return;
	printf("; in %s", safe(st, "url"));
	if (json_is_integer(json_object_get(st, "mirrored_seq")))
		printf(" up to %lld", int_of(st, "mirrored_seq"));
	else
		printf(" none yet");
	printf(" (%s", safe(st, "state"));
	if (int_of(st, "failures") > 0)
		printf(", %lld failed: %s", int_of(st, "failures"),
		       safe(st, "last_error"));
	putchar(')');
}

/* A program job's own figures (docs/programs.md): its start, samples,
 * loss and latest checkpoint.  Lines printed. */
static int print_program(json_t *r)
{
	json_t *p = json_object_get(r, "program");
	json_t *c = json_object_get(p, "checkpoint");
	double loss = real_of(p, "loss");
	char ls[48] = "", cs[PX_TERM_SAFE_LEN(220)] = "none yet";

	if (!json_is_object(p))
		return 0;
	if (isfinite(loss))
		snprintf(ls, sizeof ls, ", loss %.4f", nonneg(loss));
	if (json_is_object(c))
		snprintf(cs, sizeof cs, "%lld '%s' (%lld bytes)",
			 int_of(c, "seq"), safe(c, "name"), int_of(c, "bytes"));
	printf("program  start %lld (%s), %lld samples", int_of(p, "start"),
	       safe(p, "membership"), int_of(p, "samples"));
	if (int_of(p, "samples_total") > 0)
		printf(" of %lld", int_of(p, "samples_total"));
	printf("%s, %lld restarts on errors\n", ls,
	       int_of(p, "restarts_on_errors"));
	printf("ckpt     %s", cs);
	print_store(json_object_get(p, "store"));
	putchar('\n');
	return 2;
}

/* A share in whole percent, rounded down (as work_pct). */
static double pct(double v)
{
	v = nonneg(v);
	return floor(100 * (v < 1 ? v : 1) + 1e-9);
}

/* The deadline line of a job with finish_by_hours (docs/proteusctl.md,
 * "status"): when, the hours left, the work done against Uniform
 * Progress's line, the state.  Lines printed. */
static int print_deadline(json_t *r)
{
	json_t *d = json_object_get(r, "deadline");
	double left = nonneg(real_of(d, "hours_left"));
	const char *state = safe(d, "state");
	char in[48];

	if (!json_is_object(d))
		return 0;
	if (!strcmp(state, "met") || !strcmp(state, "missed"))
		snprintf(in, sizeof in, "%s", "ended");
	else if (left > 0)
		snprintf(in, sizeof in, "in %.1f h%s", left,
			 json_is_true(json_object_get(d, "started")) ? "" :
			 " once started");
	else
		snprintf(in, sizeof in, "passed");
	printf("deadline finish by %s (%s): %.0f%% done, line %.0f%%: %s\n",
	       safe(d, "finish_by"), in, pct(real_of(d, "progress")),
	       pct(real_of(d, "line")), state);
	return 1;
}

/* The pool line of a job that shares a pool (docs/pool.md): its share,
 * what it holds, its rho, why it waits.  Lines printed. */
static int print_pool(json_t *r)
{
	json_t *p = json_object_get(r, "pool");
	json_t *sv = json_object_get(p, "share_vcpus");
	double rho = real_of(p, "rho");
	char shs[48] = "no limit", rhos[24] = "-";

	if (!json_is_object(p))
		return 0;
	if (json_is_integer(sv))
		snprintf(shs, sizeof shs, "%lld spot vCPUs",
			 (long long)json_integer_value(sv));
	if (isfinite(rho))
		snprintf(rhos, sizeof rhos, "%.3f", nonneg(rho));
	printf("pool     share %s; holds %lld spot, %lld on-demand vCPUs; "
	       "rho %s\n", shs, int_of(p, "spot_vcpus"),
	       int_of(p, "ondemand_vcpus"), rhos);
	if (!json_is_string(json_object_get(p, "waiting")))
		return 1;
	printf("         waits: %s\n", safe(p, "waiting"));
	return 2;
}

static int print_status(json_t *r)
{
	int lines = 7;
	double acc = real_of(r, "test_accuracy"), loss = real_of(r,
							       "test_loss");
	double proj = real_of(r, "projected_cost_usd");
	char fleet[1024], when[40], accs[64], projs[40];

	fmt_fleet(json_object_get(r, "fleet"), fleet, sizeof fleet);
	fmt_time(int_of(r, "market_time"), when, sizeof when);
	if (isfinite(acc))
		snprintf(accs, sizeof accs, "%.2f%% (loss %.4f)", 100 * acc,
			 nonneg(loss));
	else if (isfinite(loss))   /* an mf job: its test RMSE, no accuracy */
		snprintf(accs, sizeof accs, "none (mf); test RMSE %.4f",
			 nonneg(loss));
	else
		snprintf(accs, sizeof accs, "not evaluated yet");
	if (isfinite(proj))
		snprintf(projs, sizeof projs, "$%.4f", nonneg(proj));
	else
		snprintf(projs, sizeof projs, "not known yet");
	/* a program's clock is a liveness mark: its samples say more */
	if (json_is_object(json_object_get(r, "program")))
		printf("job %lld %s: %s, stage %lld (%.0f%% of the work)\n",
		       int_of(r, "job"), safe(r, "name"), safe(r, "state"),
		       int_of(r, "stage"), work_pct(r));
	else
		printf("job %lld %s: %s, stage %lld, clock %lld of %lld (%.0f%% "
		       "of the work)\n", int_of(r, "job"), safe(r, "name"),
		       safe(r, "state"), int_of(r, "stage"),
		       int_of(r, "clock"), int_of(r, "clocks_total"),
		       work_pct(r));
	printf("accuracy %s\n", accs);
	lines += print_program(r);
	printf("fleet    %s; %lld workers, %lld PS, %.0f samples/s\n", fleet,
	       int_of(r, "workers"), int_of(r, "ps"),
	       nonneg(real_of(r, "samples_per_s")));
	if (final_state(json_string_value(json_object_get(r, "state"))))
		printf("cost     $%.4f\n", nonneg(real_of(r, "cost_usd")));
	else
		printf("cost     $%.4f so far, projected %s\n",
		       nonneg(real_of(r, "cost_usd")), projs);
	print_ondemand(r);
	lines += print_goodput(json_object_get(r, "goodput"));
	printf("churn    %lld evictions, %lld joins, %lld losses\n",
	       int_of(r, "evictions"), int_of(r, "joins"),
	       int_of(r, "losses"));
	lines += print_slow(r);
	printf("market   %s (%s world, policy %s)\n", when, safe(r, "world"),
	       safe(r, "policy"));
	lines += print_deadline(r);
	lines += print_pool(r);
	/* an ec2 job's nodes got the key by enrollment (docs/security.md) */
	if (json_is_integer(json_object_get(r, "enrolled"))) {
		printf("enrolled %lld nodes, %lld enrollments refused\n",
		       int_of(r, "enrolled"), int_of(r, "enroll_refused"));
		lines++;
	}
	if (json_is_string(json_object_get(r, "error"))) {
		printf("error    %s\n", safe(r, "error"));
		lines++;
	}
	return lines;
}

/* One line, for a pipe. */
static void print_status_line(json_t *r)
{
	double acc = real_of(r, "test_accuracy");
	char accs[16] = "-";

	if (isfinite(acc))
		snprintf(accs, sizeof accs, "%.2f%%", 100 * acc);
	printf("job %lld %s stage %lld clock %lld work %.0f%% accuracy %s "
	       "workers %lld cost $%.4f evictions %lld joins %lld losses "
	       "%lld\n", int_of(r, "job"), safe(r, "state"),
	       int_of(r, "stage"), int_of(r, "clock"),
	       work_pct(r), accs,
	       int_of(r, "workers"), nonneg(real_of(r, "cost_usd")),
	       int_of(r, "evictions"), int_of(r, "joins"),
	       int_of(r, "losses"));
}

/* --watch on a terminal: the job's last events (progress reports
 * aside), newest last, each cut to fit a line. */
#define WATCH_EVENTS 5
#define WATCH_COLS 78

struct watch {
	long long after;                     /* the last event read */
	char ev[WATCH_EVENTS][WATCH_COLS + 1];
	size_t n, next;                      /* ring */
};

static void watch_take(struct watch *w, json_t *ev)
{
	char when[16], line[PX_TERM_SAFE_LEN(256)];
	time_t t = (time_t)int_of(ev, "at");
	struct tm tm;
	size_t n;

	w->after = int_of(ev, "id");
	if (!strcmp(safe(ev, "kind"), "progress"))
		return;
	if (!gmtime_r(&t, &tm) || !strftime(when, sizeof when, "%H:%M:%S",
					    &tm))
		snprintf(when, sizeof when, "-");
	snprintf(line, sizeof line, "  %s %-9s %s", when, safe(ev, "kind"),
		 safe(ev, "detail"));
	/* cut to a line: the text is escaped, printable ASCII */
	n = strnlen(line, WATCH_COLS);
	memcpy(w->ev[w->next], line, n);
	w->ev[w->next][n] = 0;
	w->next = (w->next + 1) % WATCH_EVENTS;
	if (w->n < WATCH_EVENTS)
		w->n++;
}

/* The events after the last one read; false when the daemon did not
 * answer (the view goes on without them). */
static bool watch_events(struct jargs *a, struct watch *w)
{
	for (;;) {
		json_t *r = NULL, *ev, *evs;
		size_t i, n;

		if (ask(a, PROTO_CMD_events, a->id, json_pack("{s:I}",
			"after", (json_int_t)w->after), &r) != CLI_EXIT_OK)
			return false;
		evs = json_object_get(r, "events");
		n = json_array_size(evs);
		json_array_foreach(evs, i, ev)
			watch_take(w, ev);
		json_decref(r);
		if (n < EVENTS_PAGE)
			return true;
	}
}

/* The fleet by market (spot: a group with a zone), then the events;
 * returns the lines printed. */
static int print_watch(json_t *r, const struct watch *w)
{
	long long by[2][2] = {{0, 0}, {0, 0}}; /* [spot][reliable] */
	size_t i;
	json_t *g;

	json_array_foreach(json_object_get(r, "fleet"), i, g)
		by[json_is_string(json_object_get(g, "zone"))]
		  [!strcmp(safe(g, "tier"), "reliable")] += int_of(g, "count");
	printf("markets  spot %lld (%lld reliable, %lld transient), on-demand "
	       "%lld (%lld reliable, %lld transient)\n",
	       by[1][0] + by[1][1], by[1][1], by[1][0], by[0][0] + by[0][1],
	       by[0][1], by[0][0]);
	printf("events%s\n", w->n ? " (the last, newest last)" : " none yet");
	for (size_t k = 0; k < w->n; k++)
		printf("%s\n", w->ev[(w->next + WATCH_EVENTS - w->n + k) %
				     WATCH_EVENTS]);
	return 2 + (int)w->n;
}

static void sleep_s(double s)
{
	struct timespec ts = { (time_t)s, (long)((s - (double)(time_t)s) *
						 1e9) };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

int cli_job_status(int argc, char **argv)
{
	struct jargs a = { .cmd = "status" };
	bool tty = isatty(STDOUT_FILENO);
	struct watch w = { .after = 0 };
	char last[4096] = "";
	int code = jargs_parse(&a, argc, argv, true), lines = 0;

	if (code >= 0)
		return code;
	for (;;) {
		json_t *r = NULL;
		const char *state;
		bool end;

		code = ask(&a, PROTO_CMD_job, a.id, NULL, &r);
		if (code != CLI_EXIT_OK)
			return code;
		state = json_string_value(json_object_get(r, "state"));
		end = final_state(state);
		if (a.json) {
			code = print_json(r, a.watch ? JSON_COMPACT :
					  JSON_INDENT(2));
		} else if (!a.watch) {
			print_status(r);
		} else if (tty) {
			/* back to the first line of the last drawing */
			(void)watch_events(&a, &w);
			if (lines)
				printf("\033[%dA\033[J", lines);
			lines = print_status(r);
			lines += print_watch(r, &w);
		} else {
			/* a line when something changed (json_dumps of a bare
			 * number is NULL without JSON_ENCODE_ANY: the clock was
			 * never part of this key, so piped output showed a line
			 * per state change only) */
			char key[4096];

			snprintf(key, sizeof key, "%s/%lld/%lld/%lld/%lld/%lld/"
				 "%lld", state, int_of(r, "stage"),
				 int_of(r, "clock"), int_of(r, "evictions"),
				 int_of(r, "workers"), int_of(r, "joins"),
				 int_of(r, "losses"));
			if (strcmp(key, last) || end)
				print_status_line(r);
			snprintf(last, sizeof last, "%s", key);
		}
		fflush(stdout);
		if (!a.watch) {
			json_decref(r);
			return code;
		}
		if (end) {
			code = !strcmp(state, "done") ? CLI_EXIT_OK :
			       CLI_EXIT_FAIL;
			json_decref(r);
			return code;
		}
		json_decref(r);
		sleep_s(a.interval_s);
	}
}

/* ---- events ---- */

static void print_event(json_t *ev, bool json)
{
	char when[40];
	time_t t = (time_t)int_of(ev, "at");
	struct tm tm;

	if (json) {
		(void)px_json_dumpf(ev, stdout, JSON_COMPACT);
		putchar('\n');
		return;
	}
	if (gmtime_r(&t, &tm))
		strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
	else
		snprintf(when, sizeof when, "-");
	printf("%-6lld %s  %-10s %s\n", int_of(ev, "id"), when,
	       safe(ev, "kind"), safe(ev, "detail"));
}

int cli_events(int argc, char **argv)
{
	struct jargs a = { .cmd = "events" };
	long long after = 0;
	int code = jargs_parse(&a, argc, argv, true);

	if (code >= 0)
		return code;
	for (;;) {
		json_t *r = NULL, *evs, *ev;
		size_t i, n;
		bool end;

		code = ask(&a, PROTO_CMD_events, a.id,
			   json_pack("{s:I}", "after", (json_int_t)after), &r);
		if (code != CLI_EXIT_OK)
			return code;
		evs = json_object_get(r, "events");
		n = json_array_size(evs);
		json_array_foreach(evs, i, ev) {
			print_event(ev, a.json);
			after = int_of(ev, "id");
		}
		fflush(stdout);
		end = final_state(json_string_value(json_object_get(r,
								   "state")));
		json_decref(r);
		if (n >= EVENTS_PAGE)
			continue;       /* more right away */
		if (!a.follow || end)
			return CLI_EXIT_OK;
		sleep_s(0.5);
	}
}

/* ---- cancel ---- */

int cli_cancel(int argc, char **argv)
{
	struct jargs a = { .cmd = "cancel" };
	json_t *r = NULL;
	int code = jargs_parse(&a, argc, argv, true);

	if (code >= 0)
		return code;
	code = ask(&a, PROTO_CMD_cancel, a.id, NULL, &r);
	if (code != CLI_EXIT_OK)
		return code;
	if (a.json)
		code = print_json(r, JSON_COMPACT);
	else
		printf("job %lld cancelled\n", int_of(r, "job"));
	json_decref(r);
	return code;
}
