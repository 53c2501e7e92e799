/* cli_status.c -- `proteusctl status` and `proteusctl ping`: ask a running
 * proteusd over its control socket (protocol in proto.h).
 *
 *   proteusctl status [--socket PATH] [--json]
 *   proteusctl ping [--socket PATH] [--json]
 */
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
			fputs(daemon_usage, stdout);
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
		json_object_del(r, "v");
		json_object_del(r, "ok");
		(void)px_json_dumpf(r, stdout, JSON_INDENT(2));
		putchar('\n');
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
