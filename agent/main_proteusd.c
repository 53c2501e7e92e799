/* proteusd -- the Proteus head-node daemon: the config, the store and its
 * lock, the control commands (the socket itself is server.c, the protocol
 * proto.h), sd_notify, SIGHUP reload and a clean SIGTERM, the /metrics
 * server (metrics.h), and the jobs (jobs.h: each run by its own
 * controller on its world), which the control commands reach and which
 * are taken up again at start and suspended at SIGTERM.
 *
 * Runs in the foreground only (Type=notify; it never forks) on one event
 * loop (loop.h).  Exit: 0 after SIGTERM/SIGINT or a good --check-config,
 * 1 on a runtime failure (database, socket), 2 usage, 3 bad config.
 */
#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/log.h"
#include "../db/store.h"
#include "config.h"
#include "jobs.h"
#include "../cloudapi/ec2_api.h"
#include "controller.h"
#include "loop.h"
#include "metrics.h"
#include "prom.h"
#include "proto.h"
#include "sdnotify.h"
#include "server.h"

#define METRICS_REBUILD_MS 1000

enum proteusd_exit {
	PROTEUSD_EXIT_OK = 0,
	PROTEUSD_EXIT_FAIL = 1,
	PROTEUSD_EXIT_USAGE = 2,
	PROTEUSD_EXIT_CONFIG = 3,
};

/* The daemon: main() owns the one instance and passes it down. */
struct proteusd {
	struct proteusd_config cfg;
	const char *config_path; /* --config, or NULL for built-in defaults */
	struct loop *loop;
	struct store *st;
	struct server *srv;      /* the control socket */
	uint64_t start_us;       /* monotonic */
	unsigned reloads;        /* successful SIGHUP reloads */
	int lockfd;              /* DB.lock, flock'd for our life; -1: none */
	struct jobs *jobs;
	struct metrics *metrics; /* /metrics' thread; NULL: off */
	int64_t start_wall_us;   /* Unix time of the start */
	/* what empty config values stand for (resolve_paths) */
	char trainer[CONFIG_PATH_MAX];
	char trace[CONFIG_PATH_MAX];
	char ondemand[CONFIG_PATH_MAX];
	char job_dir[CONFIG_PATH_MAX];
};

static json_t *cmd_ping(void *app, json_t *req,
			struct px_error *err)
{
	(void)app;
	return json_pack("{s:b, s:I, s:s}", "pong", 1, "pid",
			 (json_int_t)getpid(), "version", PX_VERSION);
}

static json_t *cmd_status(void *app, json_t *req,
			  struct px_error *err)
{
	struct proteusd *d = app;
	struct store_counts n;
	char level[32];
	const struct config_key *k = config_key_find("log_level");

	if (store_counts(d->st, &n, err) != PX_OK)
		return NULL;
	config_format(k, &d->cfg, level, sizeof(level));
	return json_pack("{s:s, s:I, s:I, s:s, s:i, s:s, s:s, s:s, s:s, s:i, "
			 "s:I, s:I, s:I, s:I, s:I}",
			 "version", PX_VERSION,
			 "pid", (json_int_t)getpid(),
			 "uptime_s",
			 (json_int_t)((px_now_mono_us() - d->start_us) /
				      1000000),
			 "db", d->cfg.db,
			 "schema_version", store_schema_version(d->st),
			 "world", d->cfg.world,
			 "region", d->cfg.region,
			 "log_level", level,
			 "socket", d->cfg.control_socket,
			 "reloads", (int)d->reloads,
			 "clients", (json_int_t)server_clients(d->srv),
			 "markets", (json_int_t)n.markets,
			 "prices", (json_int_t)n.prices,
			 "jobs", (json_int_t)n.jobs,
			 "jobs_running", (json_int_t)jobs_running(d->jobs));
}

/* What a socket user sees of a URL with a secret in it (a webhook's
 * token is its path or query): its scheme, host and port, the rest
 * "/[redacted]".  A URL libcurl cannot parse is redacted whole.  The
 * operator reads it whole in the file (or with --print-config). */
static json_t *url_redacted(const char *url)
{
	CURLU *h = curl_url();
	char *scheme = NULL, *host = NULL, *port = NULL, *buf = NULL;
	json_t *o;

	if (h && curl_url_set(h, CURLUPART_URL, url, 0) == CURLUE_OK &&
	    curl_url_get(h, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK &&
	    curl_url_get(h, CURLUPART_HOST, &host, 0) == CURLUE_OK) {
		(void)curl_url_get(h, CURLUPART_PORT, &port, 0);
		if (asprintf(&buf, "%s://%s%s%s/[redacted]", scheme, host,
			     port ? ":" : "", port ? port : "") < 0)
			buf = NULL;
	}
	o = json_string(buf ? buf : "[redacted]");
	free(buf);
	curl_free(scheme);
	curl_free(host);
	curl_free(port);
	curl_url_cleanup(h);
	return o;
}

static json_t *cmd_config(void *app, json_t *req,
			  struct px_error *err)
{
	const struct proteusd *d = app;
	json_t *cfg = config_to_json(&d->cfg);

	if (!cfg)
		return NULL;
	/* any socket user may ask: no token of the operator's webhook */
	if (d->cfg.notify_url[0])
		json_object_set_new(cfg, "notify_url",
				    url_redacted(d->cfg.notify_url));
	return json_pack("{s:o, s:s?}", "config", cfg, "file",
			 d->config_path);
}

#define JOBS_CMD(name)                                                    \
	static json_t *cmd_##name(void *app, json_t *req,                 \
				  struct px_error *err)                   \
	{                                                                 \
		return jobs_cmd_##name(((struct proteusd *)app)->jobs, req, \
				       err);                              \
	}
JOBS_CMD(submit)
JOBS_CMD(jobs)
JOBS_CMD(events)
JOBS_CMD(cancel)
JOBS_CMD(model)
JOBS_CMD(logs)
JOBS_CMD(pool)

static json_t *cmd_job(void *app, json_t *req, struct px_error *err)
{
	return jobs_cmd_status(((struct proteusd *)app)->jobs, req, err);
}

static server_cmd_fn *const cmd_handlers[PROTO_CMD_MAX] = {
#define PROTO_HANDLER(name, summary) [PROTO_CMD_##name] = cmd_##name,
	PROTO_COMMANDS(PROTO_HANDLER)
#undef PROTO_HANDLER
};

/* ---- the database lock ---- */

/* One daemon per database: an exclusive flock on "DB.lock", held for the
 * daemon's life.  The kernel drops it when the process dies, so a crash
 * or kill -9 never blocks a restart; the file (never removed: removing
 * it would let two daemons lock two different files) keeps the holder's
 * pid for the message. */
static bool db_lock(struct proteusd *d)
{
	char *path = NULL, holder[32] = "";
	ssize_t n;
	int fd;

	if (asprintf(&path, "%s.lock", d->cfg.db) < 0) {
		log_err("out of memory");
		return false;
	}
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0) {
		log_err("database lock '%s': %s", path, strerror(errno));
		goto out_fail;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
		if (errno != EWOULDBLOCK) {
			log_err("database lock '%s': %s", path,
				strerror(errno));
			goto out_fail;
		}
		n = pread(fd, holder, sizeof(holder) - 1, 0);
		holder[n > 0 ? n : 0] = '\0';
		holder[strcspn(holder, "\n")] = '\0';
		log_err("database '%s' is in use by another proteusd (pid %s, "
			"lock '%s'); one daemon per database", d->cfg.db,
			holder[0] ? holder : "unknown", path);
		goto out_fail;
	}
	n = snprintf(holder, sizeof(holder), "%ld\n", (long)getpid());
	if (ftruncate(fd, 0) != 0 || pwrite(fd, holder, (size_t)n, 0) != n)
		log_warn("database lock '%s': cannot record our pid: %s",
			 path, strerror(errno));
	d->lockfd = fd;
	free(path);
	return true;

out_fail:
	if (fd >= 0)
		close(fd);
	free(path);
	return false;
}

/* ---- the listening socket ---- */

/* ---- signals, watchdog, status ---- */

static void notify_status(struct proteusd *d)
{
	(void)sdnotifyf("STATUS=ready: world %s, region %s, socket %s",
			d->cfg.world, d->cfg.region,
			d->cfg.control_socket);
}

static void log_diag(const struct config_diag *dg, enum log_level lvl)
{
	for (size_t i = 0; i < dg->n; i++)
		log_msg(lvl, "%s", dg->msgs[i]);
	if (dg->dropped)
		log_msg(lvl, "... and %zu more", dg->dropped);
}

static void on_hup(struct loop *l, int signo, void *ctx)
{
	struct proteusd *d = ctx;
	struct proteusd_config next, old = d->cfg;
	struct config_diag dg = {0}, refused = {0};
	char was[CONFIG_PATH_MAX], now[CONFIG_PATH_MAX];
	const struct config_key *keys;
	size_t nkeys;
	unsigned changed;

	(void)sdnotifyf("RELOADING=1\nMONOTONIC_USEC=%" PRIu64,
			px_now_mono_us());
	if (!d->config_path) {
		log_notice("SIGHUP: no --config file, nothing to reload");
		goto out_ready;
	}
	if (config_load(d->config_path, &next, &dg) != PX_OK) {
		log_diag(&dg, LOG_LVL_ERR);
		log_err("reload of '%s' failed; the configuration in force "
			"is kept", d->config_path);
		goto out_ready;
	}
	changed = config_reload(&d->cfg, &next, &refused);
	log_diag(&refused, LOG_LVL_WARN);
	log_set_level((enum log_level)d->cfg.log_level);
	keys = config_keys(&nkeys);
	for (size_t i = 0; i < nkeys; i++) {
		if (config_equal(&keys[i], &old, &d->cfg))
			continue;
		config_format(&keys[i], &old, was, sizeof(was));
		config_format(&keys[i], &d->cfg, now, sizeof(now));
		log_notice("'%s' changed from '%s' to '%s'", keys[i].name, was,
			   now);
	}
	d->reloads++;
	log_notice("reloaded '%s': %u key%s changed, %zu refused",
		   d->config_path, changed, changed == 1 ? "" : "s",
		   refused.n + refused.dropped);
out_ready:
	config_diag_release(&dg);
	config_diag_release(&refused);
	(void)sdnotify("READY=1");
	notify_status(d);
}

static void on_term(struct loop *l, int signo, void *ctx)
{
	log_notice("%s received, stopping",
		   signo == SIGTERM ? "SIGTERM" : "SIGINT");
	(void)sdnotify("STOPPING=1");
	loop_stop(l);
}

static int64_t watchdog_timer(struct loop *l, int64_t id, void *ctx)
{
	const uint64_t *interval_us = ctx;

	(void)sdnotify("WATCHDOG=1");
	return (int64_t)(*interval_us / 2000 ? *interval_us / 2000 : 1);
}

/* ---- /metrics ---- */

/* The daemon's own families: build, start, control socket, EC2 calls,
 * decision time, the scrapes themselves. */
static void daemon_metrics(struct proteusd *d, struct prom *p)
{
	struct ec2_api_stat ec2[EC2_STATS_MAX];
	struct ctrl_decide_hist h;
	struct metrics_counts mc;
	size_t n;
	char le[32], code[8];

	prom_family(p, "proteus_build_info", "gauge", "The proteusd build "
		    "(the value is 1).");
	prom_sample(p, "proteus_build_info", 1, "version", PX_VERSION, NULL);
	prom_family(p, "proteus_start_time_seconds", "gauge", "When proteusd "
		    "started, Unix time.");
	prom_sample(p, "proteus_start_time_seconds",
		    (double)(d->start_wall_us / 1000000), NULL);
	prom_family(p, "proteus_control_requests_total", "counter",
		    "Requests on the control socket, by command (unknown: "
		    "one naming no command).");
	for (int c = 0; c <= PROTO_CMD_MAX; c++)
		prom_sample(p, "proteus_control_requests_total",
			    (double)server_requests(d->srv, c), "command",
			    c < PROTO_CMD_MAX ? proto_cmd_name(c) : "unknown",
			    NULL);
	prom_family(p, "proteus_control_clients", "gauge", "Control socket "
		    "connections now.");
	prom_sample(p, "proteus_control_clients",
		    (double)(d->srv ? server_clients(d->srv) : 0), NULL);
	prom_family(p, "proteus_control_refused_total", "counter", "Control "
		    "socket connections refused over max_clients.");
	prom_sample(p, "proteus_control_refused_total",
		    (double)server_refused(d->srv), NULL);
	n = ec2_api_stats(ec2, EC2_STATS_MAX);
	prom_family(p, "proteus_ec2_api_calls_total", "counter", "Requests "
		    "sent to the EC2 API, by action (each attempt, retries "
		    "included).");
	for (size_t i = 0; i < n; i++)
		prom_sample(p, "proteus_ec2_api_calls_total",
			    (double)ec2[i].calls, "action", ec2[i].action,
			    NULL);
	prom_family(p, "proteus_ec2_api_throttles_total", "counter",
		    "Requests the EC2 API throttled (RequestLimitExceeded "
		    "and the like), by action.");
	for (size_t i = 0; i < n; i++)
		prom_sample(p, "proteus_ec2_api_throttles_total",
			    (double)ec2[i].throttled, "action", ec2[i].action,
			    NULL);
	ctrl_decide_hist(&h);
	prom_family(p, "proteus_controller_decision_seconds", "histogram",
		    "How long the controllers' decisions took (the policy and "
		    "carrying out its actions), every job together.");
	for (size_t b = 0; b < CTRL_DECIDE_BUCKETS; b++) {
		snprintf(le, sizeof le, "%g", ctrl_decide_bounds[b]);
		prom_sample(p, "proteus_controller_decision_seconds_bucket",
			    (double)h.le[b], "le", le, NULL);
	}
	prom_sample(p, "proteus_controller_decision_seconds_bucket",
		    (double)h.count, "le", "+Inf", NULL);
	prom_sample(p, "proteus_controller_decision_seconds_sum", h.sum_s,
		    NULL);
	prom_sample(p, "proteus_controller_decision_seconds_count",
		    (double)h.count, NULL);
	metrics_counts(d->metrics, &mc);
	prom_family(p, "proteus_metrics_requests_total", "counter", "Answers "
		    "of this /metrics server, by HTTP status code.");
	for (size_t i = 0; i < 6; i++) {
		snprintf(code, sizeof code, "%d", metrics_codes[i]);
		prom_sample(p, "proteus_metrics_requests_total",
			    (double)mc.answered[i], "code", code, NULL);
	}
	prom_family(p, "proteus_metrics_timeouts_total", "counter", "/metrics "
		    "connections dropped at a deadline (metrics_timeout_ms).");
	prom_sample(p, "proteus_metrics_timeouts_total", (double)mc.timeouts,
		    NULL);
}

/* Build the text on the loop and hand it to the server thread: once a
 * second, so that a scrape sees figures at most that old and costs the
 * loop nothing. */
static int64_t metrics_timer(struct loop *l, int64_t id, void *ctx)
{
	struct proteusd *d = ctx;
	struct prom p = {0};
	size_t len;
	char *text;

	daemon_metrics(d, &p);
	jobs_metrics(d->jobs, &p);
	text = prom_take(&p, &len);
	if (!text)
		log_warn("metrics: out of memory; the last text is kept");
	metrics_publish(d->metrics, text, len);
	return METRICS_REBUILD_MS;
}

/* ---- main ---- */

static const char usage_text[] =
	"usage: proteusd [--check-config] [--config FILE] [--foreground]\n"
	"                [--print-config [--json]] [--help] [--version]\n"
	"\n"
	"The Proteus head-node daemon (see proteusd(8)).  It runs in the\n"
	"foreground, under systemd as Type=notify.\n"
	"\n"
	"  --config FILE    read \"key value\" lines from FILE (default: the\n"
	"                   built-in defaults)\n"
	"  --check-config   check the configuration and exit: 0 good, 3 bad\n"
	"  --print-config   print every key with its value, its default and\n"
	"                   whether SIGHUP reloads it, then exit\n"
	"  --json           with --print-config: as one JSON object\n"
	"  --foreground     accepted for clarity: the only mode\n"
	"\n"
	"exit: 0 ok, 1 failure, 2 usage, 3 bad configuration\n";

/* --print-config --json: {"version", "from", "keys": {name: {"value",
 * "default", "reloadable"}}}; values typed as in config_to_json. */
static int print_config_json(const struct proteusd *d)
{
	char dflt[CONFIG_PATH_MAX];
	const struct config_key *keys;
	json_t *vals = config_to_json(&d->cfg), *o = NULL, *ks = NULL;
	size_t n;
	int rc = PROTEUSD_EXIT_FAIL;

	keys = config_keys(&n);
	if (!vals || !(ks = json_object()))
		goto out;
	for (size_t i = 0; i < n; i++) {
		config_format_default(&keys[i], dflt, sizeof(dflt));
		if (json_object_set_new(ks, keys[i].name, json_pack(
			    "{s:O, s:s, s:b}", "value",
			    json_object_get(vals, keys[i].name), "default",
			    dflt, "reloadable",
			    (keys[i].flags & CONFIG_RELOADABLE) != 0)))
			goto out;
	}
	o = json_pack("{s:s, s:s?, s:O}", "version", PX_VERSION, "from",
		      d->config_path, "keys", ks);
	if (o && !json_dumpf(o, stdout, JSON_INDENT(2))) {
		putchar('\n');
		rc = PROTEUSD_EXIT_OK;
	}
out:
	if (rc != PROTEUSD_EXIT_OK)
		log_err("out of memory");
	json_decref(o);
	json_decref(ks);
	json_decref(vals);
	return rc;
}

static void print_config(const struct proteusd *d)
{
	char val[CONFIG_PATH_MAX], dflt[CONFIG_PATH_MAX];
	const struct config_key *keys;
	size_t n;

	keys = config_keys(&n);
	printf("# proteusd %s configuration, from %s\n", PX_VERSION,
	       d->config_path ? d->config_path : "the built-in defaults");
	for (size_t i = 0; i < n; i++) {
		config_format(&keys[i], &d->cfg, val, sizeof(val));
		config_format_default(&keys[i], dflt, sizeof(dflt));
		printf("%-20s %-30s # default %s; %s\n", keys[i].name, val,
		       dflt,
		       (keys[i].flags & CONFIG_RELOADABLE) ? "reloadable"
							    : "restart needed");
	}
}

/* Parse the command line and load the configuration into d.  Returns -1
 * to go on, or the exit code. */
/* The first of the candidates (relative to the folder proteusd runs
 * from) that exists, into buf; false when none does. */
static bool find_beside(const char *exe_dir, const char *const *cands,
			char *buf, size_t len)
{
	for (const char *const *c = cands; *c; c++) {
		snprintf(buf, len, "%s/%s", exe_dir, *c);
		if (access(buf, R_OK) == 0)
			return true;
	}
	return false;
}

/* What the empty job settings stand for: the trainer beside proteusd,
 * the shipped trace slice and price table (installed under
 * PREFIX/share/proteus, or in the source tree beside build/ or
 * build/asan/), and
 * <db>.jobs for the job directories. */
static bool resolve_paths(struct proteusd *d)
{
	static const char *const trainer[] = { "proteus-trainer", NULL };
	static const char *const trace[] = {
		"../share/proteus/traces/us-east-1_2016-03-01_7d_linux.json.gz",
		"../docs/examples/traces/us-east-1_2016-03-01_7d_linux.json.gz",
		/* a build folder one deeper: make check's build/asan */
		"../../docs/examples/traces/us-east-1_2016-03-01_7d_linux.json.gz",
		NULL };
	static const char *const od[] = {
		"../share/proteus/ondemand/us-east-1_2016-02_2016-04.json",
		"../etc/ondemand/us-east-1_2016-02_2016-04.json",
		"../../etc/ondemand/us-east-1_2016-02_2016-04.json", NULL };
	char exe[CONFIG_PATH_MAX];

	px_exe_dir(exe, sizeof exe);
#define PICK(key, cands, what)                                             \
	if (d->cfg.key[0])                                                 \
		snprintf(d->key, sizeof d->key, "%s", d->cfg.key);         \
	else if (!find_beside(exe, cands, d->key, sizeof d->key)) {        \
		log_warn("no %s found beside %s: set '%s' for jobs", what, \
			 exe, #key);                                       \
		d->key[0] = 0;                                             \
	}
	PICK(trainer, trainer, "proteus-trainer")
#undef PICK
	if (d->cfg.local_trace[0])
		snprintf(d->trace, sizeof d->trace, "%s", d->cfg.local_trace);
	else if (!find_beside(exe, trace, d->trace, sizeof d->trace))
		log_warn("no shipped trace beside %s: set 'local_trace' for "
			 "jobs", exe);
	if (d->cfg.local_ondemand_prices[0])
		snprintf(d->ondemand, sizeof d->ondemand, "%s",
			 d->cfg.local_ondemand_prices);
	else if (!find_beside(exe, od, d->ondemand, sizeof d->ondemand))
		log_warn("no shipped on-demand prices beside %s: set "
			 "'local_ondemand_prices' for jobs", exe);
	if (d->cfg.job_dir[0])
		snprintf(d->job_dir, sizeof d->job_dir, "%s", d->cfg.job_dir);
	else if (snprintf(d->job_dir, sizeof d->job_dir, "%s.jobs",
			  d->cfg.db) >= (int)sizeof d->job_dir) {
		log_err("'db' too long for its job directory; set 'job_dir'");
		return false;
	}
	return true;
}

static int setup(struct proteusd *d, int argc, char **argv)
{
	enum { OPT_CHECK = 1, OPT_PRINT, OPT_JSON };
	static const struct option opts[] = {
		{"check-config", no_argument, NULL, OPT_CHECK},
		{"config", required_argument, NULL, 'c'},
		{"foreground", no_argument, NULL, 'f'},
		{"help", no_argument, NULL, 'h'},
		{"json", no_argument, NULL, OPT_JSON},
		{"print-config", no_argument, NULL, OPT_PRINT},
		{"version", no_argument, NULL, 'V'},
		{NULL, 0, NULL, 0},
	};
	struct config_diag dg = {0};
	bool check = false, print = false, json = false;
	const struct world_ops *wo;
	enum px_err r;
	size_t n;
	int o;

	opterr = 0;
	while ((o = getopt_long(argc, argv, ":c:fh", opts, NULL)) != -1) {
		switch (o) {
		case OPT_CHECK:
			check = true;
			break;
		case 'c':
			d->config_path = optarg;
			break;
		case 'f':
			break;
		case 'h':
			fputs(usage_text, stdout);
			return PROTEUSD_EXIT_OK;
		case OPT_PRINT:
			print = true;
			break;
		case OPT_JSON:
			json = true;
			break;
		case 'V':
			printf("proteusd %s\n", PX_VERSION);
			return PROTEUSD_EXIT_OK;
		default:
			/* one line and a hint, not the whole help */
			log_err("%s '%s' (see 'proteusd --help')",
				o == ':' ? "missing value for option"
					 : "unknown option",
				argv[optind - 1]);
			return PROTEUSD_EXIT_USAGE;
		}
	}
	if (optind < argc) {
		log_err("unexpected argument '%s' (see 'proteusd --help')",
			argv[optind]);
		return PROTEUSD_EXIT_USAGE;
	}
	if (json && !print) {
		log_err("--json goes with --print-config (see 'proteusd "
			"--help')");
		return PROTEUSD_EXIT_USAGE;
	}
	r = d->config_path ? config_load(d->config_path, &d->cfg, &dg)
			   : config_defaults(&d->cfg, &dg);
	if (r != PX_OK) {
		log_diag(&dg, LOG_LVL_ERR);
		log_err("bad configuration%s%s: %zu error%s",
			d->config_path ? " in " : "",
			d->config_path ? d->config_path : "",
			dg.n + dg.dropped, dg.n + dg.dropped == 1 ? "" : "s");
		config_diag_release(&dg);
		return PROTEUSD_EXIT_CONFIG;
	}
	config_diag_release(&dg);
	if (print) {
		if (json)
			return print_config_json(d);
		print_config(d);
		return PROTEUSD_EXIT_OK;
	}
	/* the default world's keys agree and none it needs is missing
	 * (ec2's): at start, not at the first launch (--check-config says
	 * so too) */
	wo = world_ops_by_name(d->cfg.world);
	if (wo && wo->config_problems &&
	    (n = wo->config_problems(&d->cfg, &dg)) != 0) {
		/* each problem, not only the first: one round of fixes */
		for (size_t i = 0; i < dg.n; i++)
			log_err("bad configuration%s%s: world %s: %s",
				d->config_path ? " in " : "",
				d->config_path ? d->config_path : "",
				wo->name, dg.msgs[i]);
		if (n > 1)
			log_err("world %s: %zu problems", wo->name, n);
		config_diag_release(&dg);
		return PROTEUSD_EXIT_CONFIG;
	}
	/* what is valid but likely not meant: at start and in the check */
	config_warnings(&d->cfg, &dg);
	log_diag(&dg, LOG_LVL_WARN);
	config_diag_release(&dg);
	if (check) {
		log_notice("configuration '%s' is valid",
			   d->config_path ? d->config_path : "(defaults)");
		return PROTEUSD_EXIT_OK;
	}
	return -1;
}

/* This process's threads, from /proc/self/task (-1: not known). */
static int threads_now(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/* The files no job may name (px.h, px_own_add): the database with its
 * -wal, -shm, -journal and lock, the configuration, the job folders (the
 * jobs' keys, checkpoints, logs and private copies). */
static void own_files(const struct proteusd *d)
{
	static const char *const side[] = { "", "-wal", "-shm", "-journal",
					    ".lock" };
	char path[CONFIG_PATH_MAX + 16];

	for (size_t i = 0; i < sizeof side / sizeof side[0]; i++) {
		snprintf(path, sizeof path, "%s%s", d->cfg.db, side[i]);
		px_own_add(path, false);
	}
	if (d->config_path)
		px_own_add(d->config_path, false);
	px_own_add(d->job_dir, true);
}

int main(int argc, char **argv)
{
	struct proteusd d = {.lockfd = -1};
	struct px_error err = {0};
	uint64_t wd_us = 0;
	enum px_err r;
	int code, nthreads;

	log_init("proteusd", LOG_LVL_NOTICE);
	code = setup(&d, argc, argv);
	if (code >= 0)
		return code;
	code = PROTEUSD_EXIT_FAIL;
	log_set_level((enum log_level)d.cfg.log_level);
	d.start_us = px_now_mono_us();
	d.start_wall_us = px_now_wall_us();
	signal(SIGPIPE, SIG_IGN);
	/* a file-size limit (RLIMIT_FSIZE) must fail the write that passes
	 * it (EFBIG: the store reports a full disk), not kill the daemon */
	signal(SIGXFSZ, SIG_IGN);
	log_notice("proteusd %s starting: world %s, region %s, db '%s'",
		   PX_VERSION, d.cfg.world, d.cfg.region,
		   d.cfg.db);
	r = loop_new(&d.loop);
	if (r != PX_OK) {
		log_err("cannot create the event loop: %s", px_strerror(r));
		return PROTEUSD_EXIT_FAIL;
	}
	if (loop_signal_add(d.loop, SIGTERM, on_term, &d) != PX_OK ||
	    loop_signal_add(d.loop, SIGINT, on_term, &d) != PX_OK ||
	    loop_signal_add(d.loop, SIGHUP, on_hup, &d) != PX_OK) {
		log_err("cannot set up signal handling");
		goto out_loop;
	}
	/* The loop takes its signals from a signalfd, which needs every
	 * thread to block them; a thread started before (a library's
	 * constructor: OpenBLAS's did once) would take a SIGTERM and die of
	 * it, skipping the suspension of the jobs. */
	nthreads = threads_now();
	if (nthreads > 1) {
		log_err("%d threads before proteusd blocked its signals (a "
			"library linked in starts them): SIGTERM would kill "
			"it; not starting", nthreads);
		goto out_loop;
	}
	/* the default paths' folders may not exist outside systemd */
	if (proto_make_parents(d.cfg.db, 0700, &err) != PX_OK ||
	    proto_make_parents(d.cfg.control_socket, 0755, &err) != PX_OK) {
		log_err("%s", err.msg);
		goto out_loop;
	}
	if (!db_lock(&d))
		goto out_loop;
	if (store_open(d.cfg.db, &d.st, &err) != PX_OK) {
		log_err("%s", err.msg);
		goto out_loop;
	}
	{
		struct jobs_setup js = {
			.loop = d.loop, .st = d.st, .cfg = &d.cfg,
			.trainer = d.trainer, .trace = d.trace,
			.ondemand = d.ondemand, .dir = d.job_dir,
		};

		if (!resolve_paths(&d))
			goto out_listen;
		own_files(&d);
		if (jobs_new(&js, &d.jobs, &err) != PX_OK)
			goto out_listen;
		if (jobs_recover(d.jobs, &err) != PX_OK)
			log_err("taking up the stored jobs: %s", err.msg);
	}
	{
		struct server_setup ss = {.loop = d.loop, .cfg = &d.cfg,
					  .handlers = cmd_handlers, .app = &d};

		if (!server_open(&ss, &d.srv))
			goto out_listen;
	}
	if (d.cfg.metrics_port) {
		if (metrics_open(d.cfg.metrics_host, d.cfg.metrics_port,
				 d.cfg.metrics_timeout_ms, &d.metrics,
				 &err) != PX_OK) {
			log_err("%s", err.msg);
			goto out_listen;
		}
		(void)metrics_timer(d.loop, 0, &d);
		if (loop_timer_add(d.loop, METRICS_REBUILD_MS, metrics_timer,
				   &d) < 0)
			goto out_listen;
		log_notice("metrics: serving http://%s/metrics",
			   d.cfg.metrics_listen);
	}
	if (sdnotify_watchdog_usec(&wd_us)) {
		if (loop_timer_add(d.loop, 0, watchdog_timer, &wd_us) < 0)
			goto out_listen;
		log_info("watchdog: pinging every %" PRIu64 " ms",
			 wd_us / 2000);
	}
	if (sdnotify("READY=1") != PX_OK)
		log_warn("cannot notify '%s'", getenv("NOTIFY_SOCKET"));
	notify_status(&d);
	log_notice("ready");
	r = loop_run(d.loop);
	if (r != PX_OK) {
		log_err("event loop: %s", px_strerror(r));
		goto out_listen;
	}
	code = PROTEUSD_EXIT_OK;
	jobs_suspend(d.jobs);
out_listen:
	metrics_close(d.metrics);
	server_close(d.srv);
	jobs_free(d.jobs);
	store_close(d.st);
out_loop:
	loop_free(d.loop);
	if (d.lockfd >= 0)
		close(d.lockfd); /* drops the lock */
	if (code == PROTEUSD_EXIT_OK)
		log_notice("stopped");
	return code;
}
