/* cli_common.c -- helpers shared by proteusctl's commands. */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/log.h"
#include "cli.h"
#include "../proto.h"

/* How long `proteusctl` waits for the daemon when it asks which database
 * it uses: a daemon that does not answer this fast is not asked. */
#define CLI_DB_ASK_TIMEOUT_MS 1000

struct cli_globals cli_g;

int cli_exit_for(enum px_err e)
{
	switch (e) {
	case PX_OK:
		return CLI_EXIT_OK;
	case PX_EINVAL:
	case PX_ETOOBIG:
		return CLI_EXIT_DATA;
	case PX_ENOENT:
		return CLI_EXIT_NOTFOUND;
	default:
		return CLI_EXIT_FAIL;
	}
}

int cli_usage(const char *cmd, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	log_err("%s (see 'proteusctl %s --help')", msg, cmd);
	return CLI_EXIT_USAGE;
}

int cli_bad_option(const char *cmd, char **argv, int c)
{
	const char *arg = optind > 0 ? argv[optind - 1] : "?";
	char shortopt[3] = {'-', (char)optopt, '\0'};
	const char *name = arg;

	/* a short option in a cluster (-xv): name the letter, not the word */
	if (strncmp(arg, "--", 2) && optopt > 0 && optopt < 128)
		name = shortopt;
	if (c == ':')
		return cli_usage(cmd, "option '%s' for '%s' needs a value",
				 name, cmd);
	return cli_usage(cmd, "unknown option '%s' for '%s'", name, cmd);
}

int cli_split_list(const char *flag, const char *arg, char **ret_buf,
		   char **v, size_t *ret_n)
{
	char *buf, *p, *save = NULL;
	size_t n = 0;

	*ret_buf = NULL;
	*ret_n = 0;
	if (!arg)
		return -1;
	if (!*arg || arg[0] == ',' || arg[strlen(arg) - 1] == ',' ||
	    strstr(arg, ",,")) {
		log_err("%s: empty item in '%s'", flag, arg);
		return CLI_EXIT_USAGE;
	}
	buf = strdup(arg);
	if (!buf) {
		log_err("out of memory");
		return CLI_EXIT_FAIL;
	}
	for (p = strtok_r(buf, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
		if (n == CLI_LIST_MAX) {
			log_err("%s: more than %d items", flag, CLI_LIST_MAX);
			free(buf);
			return CLI_EXIT_USAGE;
		}
		v[n++] = p;
	}
	*ret_buf = buf;
	*ret_n = n;
	return -1;
}

/* The database the daemon on the default socket uses, if one answers
 * there quickly: an absolute path, malloc'd; NULL otherwise. */
static char *daemon_db(void)
{
	char sock[CLI_SOCKET_MAX];
	struct px_error err = {0};
	json_t *req, *reply = NULL;
	const char *db;
	char *path = NULL;

	if (cli_g.socket)
		snprintf(sock, sizeof(sock), "%s", cli_g.socket);
	else if (proto_default_socket(sock, sizeof(sock)) != PX_OK)
		return NULL;
	req = proto_request_new(PROTO_CMD_status);
	if (!req)
		return NULL;
	if (proto_call(sock, req, CLI_DB_ASK_TIMEOUT_MS, &reply, &err) ==
		    PX_OK &&
	    json_is_true(json_object_get(reply, "ok"))) {
		db = json_string_value(json_object_get(reply, "db"));
		if (db && db[0] == '/') {
			path = strdup(db);
			log_info("database '%s', from proteusd at '%s'", db,
				 sock);
		}
	}
	json_decref(req);
	json_decref(reply);
	return path;
}

char *cli_default_db(void)
{
	char buf[4096];
	struct px_error err = {0};
	const char *env = getenv("PROTEUS_DB");
	char *path;
	enum px_err e;

	if (cli_g.db)
		return strdup(cli_g.db);
	if (env && *env)
		return strdup(env);
	path = daemon_db();
	if (path)
		return path;
	e = proto_default_db(buf, sizeof(buf));
	if (e == PX_ENOENT) {
		log_err("no database path: set PROTEUS_DB or HOME, or pass "
			"--db");
		return NULL;
	}
	if (e != PX_OK) {
		log_err("the default database path is too long: pass --db");
		return NULL;
	}
	if (proto_make_parents(buf, 0700, &err) != PX_OK) {
		log_err("%s", err.msg);
		return NULL;
	}
	path = strdup(buf);
	if (!path)
		log_err("out of memory");
	return path;
}

int cli_socket_path(char *buf, size_t len)
{
	const char *sock = cli_g.socket;

	if (sock) {
		if (strlen(sock) >= len) {
			log_err("socket path '%s' is too long", sock);
			return CLI_EXIT_USAGE;
		}
		memcpy(buf, sock, strlen(sock) + 1);
	} else if (proto_default_socket(buf, len) != PX_OK) {
		log_err("the default socket path is too long; use --socket");
		return CLI_EXIT_USAGE;
	}
	return -1;
}

int cli_daemon_call(const char *sock, json_t *req, json_t **ret)
{
	return cli_daemon_call_waiting(sock, req, CLI_DAEMON_TIMEOUT_MS, NULL,
				       NULL, NULL, ret);
}

int cli_daemon_call_waiting(const char *sock, json_t *req, int timeout_ms,
			    void (*waiting)(void *ctx, int64_t waited_ms),
			    void *ctx, const char *hint, json_t **ret)
{
	struct px_error err = {0};
	json_t *reply = NULL;
	const char *e, *kind;
	enum px_err r;
	int code;

	r = proto_call_waiting(sock, req, timeout_ms, waiting, ctx, &reply,
			       &err);
	if (r != PX_OK) {
		bool down = r == PX_ENOENT || r == (PX_ESYS | ECONNREFUSED);

		log_err("%s%s%s", err.msg,
			down ? " (is proteusd running?)" : "",
			r == PX_ETIMEDOUT && hint ? hint : "");
		return CLI_EXIT_FAIL;
	}
	if (!json_is_true(json_object_get(reply, "ok"))) {
		e = json_string_value(json_object_get(reply, "error"));
		kind = json_string_value(json_object_get(reply, "kind"));
		log_err("%s", e ? e : "proteusd answered an error without a "
			"message");
		code = CLI_EXIT_FAIL;
		if (kind && !strcmp(kind, "notfound"))
			code = CLI_EXIT_NOTFOUND;
		else if (kind && !strcmp(kind, "invalid"))
			code = CLI_EXIT_DATA;
		json_decref(reply);
		return code;
	}
	json_object_del(reply, "v");
	json_object_del(reply, "ok");
	*ret = reply;
	return CLI_EXIT_OK;
}

void cli_file_relative(const char *file, const char *name, char *buf,
		       size_t len)
{
	const char *slash = strrchr(file, '/');

	if (name[0] == '/' || !slash)
		snprintf(buf, len, "%s", name);
	else
		snprintf(buf, len, "%.*s/%s", (int)(slash - file), file, name);
}

const char *cli_term_str(json_t *o, const char *k, const char *none)
{
	static char buf[4][PX_TERM_SAFE_LEN(256)];
	static int slot;
	const char *s = json_string_value(json_object_get(o, k));

	slot = (slot + 1) % 4;
	return px_term_safe(s ? s : none, buf[slot], sizeof buf[slot]);
}
