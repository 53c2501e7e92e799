/* cli_status.c -- `proteusctl status`, `proteusctl ping` and `proteusctl
 * pool`: ask a running proteusd over its control socket (protocol in
 * proto.h).
 *
 *   proteusctl status [--socket PATH] [--json]
 *   proteusctl ping [--socket PATH] [--json]
 *   proteusctl pool [--socket PATH] [--json]
 */
#include <math.h>
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/jsonout.h"
#include "../../common/log.h"
#include "cli.h"
#include "../proto.h"

static const char daemon_usage[] =
	"usage: proteusctl status [--socket PATH] [--json]\n"
	"       proteusctl status ID [--watch] [--interval S] [--json]  (a job:\n"
	"         'submit --help'; --watch and --interval need the ID)\n"
	"       proteusctl ping [--socket PATH] [--json]\n"
	"\n"
	"status: the daemon's pid, uptime, database and schema, world,\n"
	"  reloads, connected clients and the store's market, price and job\n"
	"  counts.\n"
	"ping: check that the daemon answers.\n"
	"\n"
	"  --socket PATH  control socket (default: $PROTEUS_SOCKET, else as\n"
	"                 proteusd's: $RUNTIME_DIRECTORY/proteusd.sock, else\n"
	"                 /run/proteus/proteusd.sock for root, else\n"
	"                 $XDG_RUNTIME_DIR/proteusd.sock)\n"
	"  --json         print the daemon's reply as JSON\n"
	"\n"
	"exit: 0 ok, 1 the daemon is not running or answered an error, "
	"2 usage\n";

static const char pool_usage[] =
	"usage: proteusctl pool [--socket PATH] [--json]\n"
	"\n"
	"The pool proteusd's jobs share (docs/pool.md): its limits as\n"
	"configured (pool_spot_vcpus, pool_ondemand_vcpus, pool_usd_per_hour),\n"
	"as learned from EC2's quota errors and in force; what the jobs hold;\n"
	"the arbiter and its rounds; each queued or running job's share, what\n"
	"it holds, its finish-time fairness (rho) and why it waits.\n"
	"\n"
	"  --socket PATH  control socket (as for status)\n"
	"  --json         print the daemon's reply as JSON\n"
	"\n"
	"exit: 0 ok, 1 the daemon is not running or answered an error, "
	"2 usage\n";

/* Parse [--socket PATH] [--json] into buf; -1 to go on, else exit code. */
static int daemon_args(const char *cmd, int argc, char **argv, char *buf,
		       size_t len, bool *ret_json)
{
	static const struct option opts[] = {
		{"help", no_argument, NULL, 'h'},
		{"json", no_argument, NULL, 'j'},
		{"socket", required_argument, NULL, 's'},
		{NULL, 0, NULL, 0},
	};
	const char *sock = NULL;
	int o;

	*ret_json = cli_g.json;
	optind = 1;
	while ((o = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (o) {
		case 'h':
			fputs(strcmp(cmd, "pool") ? daemon_usage : pool_usage,
			      stdout);
			return CLI_EXIT_OK;
		case 'j':
			*ret_json = true;
			break;
		case 's':
			sock = optarg;
			break;
		default:
			return cli_bad_option(cmd, argv, o);
		}
	}
	if (optind < argc)
		return cli_usage(cmd, "unexpected argument '%s'",
				 argv[optind]);
	if (sock) {
		if (strlen(sock) >= len) {
			log_err("socket path '%s' is too long", sock);
			return CLI_EXIT_USAGE;
		}
		memcpy(buf, sock, strlen(sock) + 1);
		return -1;
	}
	return cli_socket_path(buf, len);
}

/* Send cmd; on success *ret is an "ok" reply.  Logs and returns the exit
 * code otherwise. */
static int daemon_call(const char *sock, enum proto_cmd cmd, json_t **ret)
{
	json_t *req = proto_request_new(cmd);
	int code;

	if (!req) {
		log_err("out of memory");
		return CLI_EXIT_FAIL;
	}
	code = cli_daemon_call(sock, req, ret);
	json_decref(req);
	return code;
}

/* A daemon's reply as JSON, without the protocol's own fields. */
static void print_reply(json_t *r)
{
	json_object_del(r, "v");
	json_object_del(r, "ok");
	(void)px_json_dumpf(r, stdout, JSON_INDENT(2));
	putchar('\n');
}

static json_int_t num(json_t *o, const char *k)
{
	return json_integer_value(json_object_get(o, k));
}

static const char *str(json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));

	return s ? s : "?";
}

int cli_status(int argc, char **argv)
{
	char sock[CLI_SOCKET_MAX];
	json_t *r = NULL;
	json_int_t up;
	bool json;
	int code;

	/* `status ID`: a job's (cli_jobs.c) */
	const char *job_opt = NULL;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--watch") ||
		    !strcmp(argv[i], "--interval") ||
		    !strncmp(argv[i], "--interval=", 11))
			job_opt = argv[i];
		if (!strcmp(argv[i], "--socket") || !strcmp(argv[i],
							    "--interval")) {
			i++;
			continue;
		}
		if (argv[i][0] != '-')
			return cli_job_status(argc, argv);
	}
	/* the daemon's own status is one reading: a job is what is
	 * watched */
	if (job_opt)
		return cli_usage("status", "'%.10s' needs a job id: "
				 "'proteusctl status ID --watch' (proteusctl "
				 "jobs lists them)", job_opt);
	code = daemon_args("status", argc, argv, sock, sizeof(sock), &json);
	if (code >= 0)
		return code;
	code = daemon_call(sock, PROTO_CMD_status, &r);
	if (code != CLI_EXIT_OK)
		return code;
	if (json) {
		print_reply(r);
	} else {
		up = num(r, "uptime_s");
		printf("proteusd %s, pid %lld, up %lldd %02lld:%02lld:%02lld\n"
		       "socket   %s\n"
		       "db       %s (schema %lld)\n"
		       "world    %s, region %s\n"
		       "log      %s; config reloaded %lld time%s\n"
		       "clients  %lld\n"
		       "store    %lld markets, %lld prices, %lld jobs\n",
		       str(r, "version"), (long long)num(r, "pid"),
		       (long long)(up / 86400), (long long)(up / 3600 % 24),
		       (long long)(up / 60 % 60), (long long)(up % 60), sock,
		       str(r, "db"), (long long)num(r, "schema_version"),
		       str(r, "world"), str(r, "region"), str(r, "log_level"),
		       (long long)num(r, "reloads"),
		       num(r, "reloads") == 1 ? "" : "s",
		       (long long)num(r, "clients"),
		       (long long)num(r, "markets"),
		       (long long)num(r, "prices"), (long long)num(r, "jobs"));
	}
	json_decref(r);
	return CLI_EXIT_OK;
}

int cli_ping(int argc, char **argv)
{
	char sock[CLI_SOCKET_MAX];
	uint64_t t0 = px_now_mono_us();
	json_t *r = NULL;
	double ms;
	bool json;
	int code;

	code = daemon_args("ping", argc, argv, sock, sizeof(sock), &json);
	if (code >= 0)
		return code;
	code = daemon_call(sock, PROTO_CMD_ping, &r);
	if (code != CLI_EXIT_OK)
		return code;
	ms = (double)(px_now_mono_us() - t0) / 1000.0;
	if (json) {
		json_t *o = json_pack("{s:s, s:I, s:s, s:f}", "socket", sock,
				      "pid", num(r, "pid"), "version",
				      str(r, "version"), "ms", ms);

		if (!o || px_json_dumpf(o, stdout, JSON_INDENT(2))) {
			json_decref(o);
			json_decref(r);
			log_err("out of memory");
			return CLI_EXIT_FAIL;
		}
		putchar('\n');
		json_decref(o);
	} else {
		printf("proteusd at '%s' answers: pid %lld, version %s, "
		       "%.1f ms\n",
		       sock, (long long)num(r, "pid"), str(r, "version"), ms);
	}
	json_decref(r);
	return CLI_EXIT_OK;
}

/* ---- pool ---- */

static const char *safe_str(json_t *o, const char *k)
{
	return cli_term_str(o, k, "-");
}

/* "12 (standard 8, g 4)" of a {"total": N, GROUP: N} object. */
static void fmt_use(json_t *o, char *buf, size_t len)
{
	const char *k;
	json_t *v;
	size_t n;
	bool first = true;

	n = (size_t)snprintf(buf, len, "%lld",
			     (long long)json_integer_value(
				     json_object_get(o, "total")));
	json_object_foreach(o, k, v) {
		if (!strcmp(k, "total") || n >= len)
			continue;
		n += (size_t)snprintf(buf + n, len - n, "%s%s %lld",
				      first ? " (" : ", ", k,
				      (long long)json_integer_value(v));
		first = false;
	}
	if (!first && n < len)
		snprintf(buf + n, len - n, ")");
}

static void print_pool(json_t *r)
{
	json_t *c = json_object_get(r, "configured");
	json_t *l = json_object_get(r, "learned");
	json_t *f = json_object_get(r, "in_force");
	json_t *u = json_object_get(r, "used"), *x;
	json_t *next = json_object_get(r, "next_round_s");
	json_t *usd = json_object_get(c, "usd_per_hour");
	char sp[160], od[160];
	size_t i;

	printf("arbiter   %s (fairness %.2f), leases of %lld s, %lld "
	       "round%s", safe_str(r, "arbiter"),
	       json_number_value(json_object_get(r, "fairness")),
	       (long long)num(r, "lease_seconds"),
	       (long long)num(r, "rounds"), num(r, "rounds") == 1 ? "" : "s");
	if (json_is_number(next))
		printf(", the next in %.0f s", json_number_value(next));
	printf("\n%-9s %-22s %-22s %s\n", "limits", "configured", "learned",
	       "in force");
	printf("%-9s %-22s %-22s %s\n", "spot", safe_str(c, "spot_vcpus"),
	       safe_str(l, "spot_vcpus"), safe_str(f, "spot_vcpus"));
	printf("%-9s %-22s %-22s %s\n", "on-demand",
	       safe_str(c, "ondemand_vcpus"), safe_str(l, "ondemand_vcpus"),
	       safe_str(f, "ondemand_vcpus"));
	if (json_is_number(usd))
		printf("%-9s $%.2f an hour\n", "budget", json_number_value(usd));
	fmt_use(json_object_get(u, "spot_vcpus"), sp, sizeof sp);
	fmt_use(json_object_get(u, "ondemand_vcpus"), od, sizeof od);
	printf("used      spot %s vCPUs; on demand %s vCPUs; $%.4f an hour\n",
	       sp, od, json_number_value(json_object_get(u, "usd_per_hour")));
	x = json_object_get(r, "releasing");
	if (num(x, "spot_vcpus") || num(x, "ondemand_vcpus"))
		printf("          of which let go, not yet ended by the "
		       "provider: spot %lld, on demand %lld\n",
		       (long long)num(x, "spot_vcpus"),
		       (long long)num(x, "ondemand_vcpus"));
	printf("%-6s %-20s %-8s %11s %5s %9s %7s %6s\n", "JOB", "NAME",
	       "STATE", "SHARE_VCPUS", "SPOT", "ON_DEMAND", "RHO", "WEIGHT");
	json_array_foreach(json_object_get(r, "jobs"), i, x) {
		json_t *sv = json_object_get(x, "share_vcpus");
		json_t *rho = json_object_get(x, "rho");
		char shs[24] = "-", rhos[24] = "-";

		if (json_is_integer(sv))
			snprintf(shs, sizeof shs, "%lld",
				 (long long)json_integer_value(sv));
		if (json_is_number(rho) && isfinite(json_number_value(rho)))
			snprintf(rhos, sizeof rhos, "%.3f",
				 json_number_value(rho));
		printf("%-6lld %-20.20s %-8s %11s %5lld %9lld %7s %6.3g\n",
		       (long long)num(x, "job"), safe_str(x, "name"),
		       safe_str(x, "state"), shs,
		       (long long)num(x, "spot_vcpus"),
		       (long long)num(x, "ondemand_vcpus"), rhos,
		       json_number_value(json_object_get(x, "weight")));
		if (json_is_string(json_object_get(x, "waiting")))
			printf("       waits: %s\n", safe_str(x, "waiting"));
	}
}

int cli_pool(int argc, char **argv)
{
	char sock[CLI_SOCKET_MAX];
	json_t *r = NULL;
	bool json;
	int code = daemon_args("pool", argc, argv, sock, sizeof(sock), &json);

	if (code >= 0)
		return code;
	code = daemon_call(sock, PROTO_CMD_pool, &r);
	if (code != CLI_EXIT_OK)
		return code;
	if (json)
		print_reply(r);
	else
		print_pool(r);
	json_decref(r);
	return CLI_EXIT_OK;
}
