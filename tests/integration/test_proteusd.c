/* test_proteusd.c -- the real proteusd, end to end: sd_notify on a socket
 * the test owns, ping/status through proteusctl, SIGHUP reload, config
 * errors, bad clients, the socket's mode, SIGTERM, the watchdog. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../agent/config.h"
#include "../../bidbrain/jobspec.h"
#include "../../agent/proto.h"
#include "../../db/store.h"
#include "pxrun.h"

extern char **environ;

/* One daemon under test; each Criterion test runs in its own process. */
static struct {
	char *tmp, *conf, *sock, *db, *notify, *log;
	int nfd;   /* our NOTIFY_SOCKET, bound at notify */
	pid_t pid; /* 0 when not running */
	char last[4096]; /* last notification received */
} t = {.nfd = -1};

static void setup(void)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};

	t.tmp = px_tmpdir();
	cr_assert_not_null(t.tmp);
	cr_assert(asprintf(&t.conf, "%s/p.conf", t.tmp) > 0);
	cr_assert(asprintf(&t.sock, "%s/p.sock", t.tmp) > 0);
	cr_assert(asprintf(&t.db, "%s/p.db", t.tmp) > 0);
	cr_assert(asprintf(&t.notify, "%s/notify", t.tmp) > 0);
	cr_assert(asprintf(&t.log, "%s/log", t.tmp) > 0);
	t.nfd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	cr_assert_geq(t.nfd, 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", t.notify);
	cr_assert_eq(bind(t.nfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
}

static void teardown(void)
{
	if (t.pid > 0) {
		kill(t.pid, SIGKILL);
		waitpid(t.pid, NULL, 0);
		t.pid = 0;
	}
	if (t.nfd >= 0)
		close(t.nfd);
	px_rmtree(t.tmp);
	free(t.tmp);
	free(t.conf);
	free(t.sock);
	free(t.db);
	free(t.notify);
	free(t.log);
}

TestSuite(proteusd, .init = setup, .fini = teardown, .timeout = 30);

/* Write the config: our db and socket, world local unless extra sets it
 * (4 lines), then extra lines. */
static void write_conf(const char *extra)
{
	FILE *f = fopen(t.conf, "w");

	cr_assert_not_null(f);
	extra = extra ? extra : "";
	fprintf(f, "# test config\ndb %s\ncontrol_socket %s\n%s%s", t.db,
		t.sock, strstr(extra, "world ") ? "" : "world local\n", extra);
	fclose(f);
}

/* Start build/proteusd --config conf with NOTIFY_SOCKET (and env1, a
 * "NAME=value" or NULL), stdout and stderr to t.log. */
static void start(const char *env1)
{
	const char *build = getenv("PX_BUILD");
	char path[4096], notify_env[4200];
	char *argv[] = {"proteusd", "--config", t.conf, "--foreground", NULL};
	char **env;
	size_t n = 0, k = 0;
	posix_spawn_file_actions_t fa;

	snprintf(path, sizeof(path), "%s/proteusd", build ? build : "build");
	snprintf(notify_env, sizeof(notify_env), "NOTIFY_SOCKET=%s",
		 t.notify);
	while (environ[n])
		n++;
	env = calloc(n + 3, sizeof(*env));
	cr_assert_not_null(env);
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], "NOTIFY_SOCKET=", 14) &&
		    strncmp(environ[i], "WATCHDOG_", 9) &&
		    strncmp(environ[i], "JOURNAL_STREAM=", 15))
			env[k++] = environ[i];
	env[k++] = notify_env;
	if (env1)
		env[k++] = (char *)env1;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, t.log,
					 O_WRONLY | O_CREAT | O_APPEND, 0644);
	posix_spawn_file_actions_adddup2(&fa, 1, 2);
	cr_assert_eq(posix_spawn(&t.pid, path, &fa, NULL, argv, env), 0,
		     "cannot start %s", path);
	posix_spawn_file_actions_destroy(&fa);
	free(env);
}

/* Wait up to timeout_ms for a notification containing needle. */
static bool wait_notify(const char *needle, int timeout_ms)
{
	uint64_t end = px_now_mono_us() + (uint64_t)timeout_ms * 1000;
	struct pollfd p = {.fd = t.nfd, .events = POLLIN};
	ssize_t k;

	for (;;) {
		uint64_t now = px_now_mono_us();

		if (now >= end)
			return false;
		if (poll(&p, 1, (int)((end - now) / 1000) + 1) <= 0)
			continue;
		k = recv(t.nfd, t.last, sizeof(t.last) - 1, MSG_DONTWAIT);
		if (k <= 0)
			continue;
		t.last[k] = '\0';
		if (strstr(t.last, needle))
			return true;
	}
}

static void start_ready(const char *extra, const char *env1)
{
	write_conf(extra);
	start(env1);
	cr_assert(wait_notify("READY=1", 10000), "no READY=1; log:\n%s",
		  "(see log)");
}

/* Wait up to timeout_ms for the daemon to exit; its exit code or -1. */
static int wait_exit(int timeout_ms)
{
	uint64_t end = px_now_mono_us() + (uint64_t)timeout_ms * 1000;
	int st;

	while (px_now_mono_us() < end) {
		if (waitpid(t.pid, &st, WNOHANG) == t.pid) {
			t.pid = 0;
			return WIFEXITED(st) ? WEXITSTATUS(st)
					     : 128 + WTERMSIG(st);
		}
		usleep(2000);
	}
	return -1;
}

/* The daemon's log so far ("" while there is none). */
static char *read_log(void)
{
	char *buf = px_test_read_file(t.log, NULL);

	if (!buf)
		buf = strdup("");
	cr_assert_not_null(buf);
	return buf;
}

/* One request through the shared client code. */
static json_t *call(enum proto_cmd cmd)
{
	struct px_error err = {0};
	json_t *req = proto_request_new(cmd), *reply = NULL;

	cr_assert_eq(proto_call(t.sock, req, 5000, &reply, &err), PX_OK,
		     "%s", err.msg);
	json_decref(req);
	cr_assert(json_is_true(json_object_get(reply, "ok")));
	return reply;
}

static int ctl(struct pxrun *r, const char *cmd, const char *a1)
{
	const char *argv[] = {"proteusctl", cmd, "--socket", t.sock, a1, NULL};

	cr_assert_eq(pxrun(r, 20, "proteusctl", argv), 0);
	return r->status;
}

static int64_t sql_count(const char *table)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *s = NULL;
	char sql[64];
	int64_t n = -1;

	cr_assert_eq(sqlite3_open_v2(t.db, &db, SQLITE_OPEN_READONLY, NULL),
		     SQLITE_OK);
	snprintf(sql, sizeof(sql), "SELECT count(*) FROM %s", table);
	cr_assert_eq(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK);
	if (sqlite3_step(s) == SQLITE_ROW)
		n = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	sqlite3_close(db);
	return n;
}

Test(proteusd, ready_then_ping_and_status)
{
	char *trace = px_src_path("tests/data/ctl/small.json");
	const char *imp[] = {"proteusctl", "market", "import", "--db", t.db,
			     trace, NULL};
	struct pxrun r;
	json_error_t je;
	json_t *j;

	cr_assert_eq(pxrun(&r, 30, "proteusctl", imp), 0);
	cr_assert_eq(r.status, 0, "import: %s", r.err);
	pxrun_free(&r);
	free(trace);

	start_ready("log_level info\n", NULL);
	cr_assert_eq(ctl(&r, "ping", NULL), 0, "ping: %s", r.err);
	cr_assert(strstr(r.out, "answers"), "%s", r.out);
	pxrun_free(&r);

	cr_assert_eq(ctl(&r, "status", "--json"), 0, "status: %s", r.err);
	j = json_loads(r.out, 0, &je);
	cr_assert_not_null(j, "%s: %s", je.text, r.out);
	pxrun_free(&r);
	cr_assert_eq(json_integer_value(json_object_get(j, "pid")), t.pid);
	cr_assert_str_eq(json_string_value(json_object_get(j, "db")), t.db);
	cr_assert_str_eq(json_string_value(json_object_get(j, "world")),
			 "local");
	cr_assert_eq(json_integer_value(json_object_get(j, "schema_version")),
		     STORE_SCHEMA_VERSION);
	cr_assert_eq(json_integer_value(json_object_get(j, "reloads")), 0);
	cr_assert_eq(json_integer_value(json_object_get(j, "clients")), 1);
	cr_assert_gt(json_integer_value(json_object_get(j, "prices")), 0);
	cr_assert_eq(json_integer_value(json_object_get(j, "prices")),
		     sql_count("prices"));
	cr_assert_eq(json_integer_value(json_object_get(j, "markets")),
		     sql_count("markets"));
	cr_assert_eq(json_integer_value(json_object_get(j, "jobs")), 0);
	cr_assert_geq(json_integer_value(json_object_get(j, "uptime_s")), 0);
	json_decref(j);

	cr_assert_eq(ctl(&r, "status", NULL), 0);
	cr_assert(strstr(r.out, t.sock), "%s", r.out);
	cr_assert(strstr(r.out, "world    local"), "%s", r.out);
	pxrun_free(&r);

	/* each peer's credentials are logged (SO_PEERCRED) */
	{
		char want[128], *log = read_log();

		snprintf(want, sizeof(want), " uid %ld gid %ld",
			 (long)getuid(), (long)getgid());
		cr_assert(strstr(log, "client 1 connected: pid "), "%s", log);
		cr_assert(strstr(log, want), "%s", log);
		free(log);
	}
}

Test(proteusd, ctl_says_which_socket_when_down)
{
	struct pxrun r;
	char *none;

	cr_assert(asprintf(&none, "%s/none.sock", t.tmp) > 0);
	{
		const char *argv[] = {"proteusctl", "ping", "--socket", none,
				      NULL};

		cr_assert_eq(pxrun(&r, 20, "proteusctl", argv), 0);
	}
	cr_assert_eq(r.status, 1);
	cr_assert(strstr(r.err, none), "%s", r.err);
	cr_assert(strstr(r.err, "is proteusd running"), "%s", r.err);
	pxrun_free(&r);
	free(none);
}

static void hup_and_wait(void)
{
	cr_assert_eq(kill(t.pid, SIGHUP), 0);
	cr_assert(wait_notify("RELOADING=1", 5000), "no RELOADING=1");
	cr_assert(strstr(t.last, "MONOTONIC_USEC="), "%s", t.last);
	cr_assert(wait_notify("READY=1", 5000), "no READY=1 after reload");
}

static const char *cfg_str(json_t *reply, const char *key)
{
	return json_string_value(
		json_object_get(json_object_get(reply, "config"), key));
}

/* `config` is for any socket user: the operator's notify_url is shown
 * without its secret part (a webhook's token is its path or query); the
 * file, the operator's, holds it whole. */
Test(proteusd, config_hides_the_notify_urls_token)
{
	json_t *j;

	start_ready("notify_url https://hooks.example.com:8443/services/"
		    "T0/B0/s3cr3tT0ken?sig=abc\n", NULL);
	j = call(PROTO_CMD_config);
	cr_assert_str_eq(cfg_str(j, "notify_url"),
			 "https://hooks.example.com:8443/[redacted]");
	cr_assert_null(strstr(json_dumps(j, 0), "s3cr3t"));
	cr_assert_null(strstr(json_dumps(j, 0), "sig=abc"));
	json_decref(j);
}

Test(proteusd, sighup_reload)
{
	json_t *j;
	char *log;

	start_ready("log_level notice\n", NULL);
	j = call(PROTO_CMD_config);
	cr_assert_str_eq(cfg_str(j, "log_level"), "notice");
	json_decref(j);

	/* a reloadable key takes effect */
	write_conf("log_level debug\n");
	hup_and_wait();
	j = call(PROTO_CMD_config);
	cr_assert_str_eq(cfg_str(j, "log_level"), "debug");
	json_decref(j);

	/* an immutable one is refused, the reloadable ones still apply */
	write_conf("log_level info\nregion eu-west-1\n");
	hup_and_wait();
	j = call(PROTO_CMD_config);
	cr_assert_str_eq(cfg_str(j, "region"), "us-east-1");
	cr_assert_str_eq(cfg_str(j, "log_level"), "info");
	json_decref(j);

	/* a bad file keeps the configuration in force */
	write_conf("log_level loud\n");
	hup_and_wait();
	j = call(PROTO_CMD_config);
	cr_assert_str_eq(cfg_str(j, "log_level"), "info");
	json_decref(j);
	/* so does a world that is no world for jobs */
	write_conf("log_level debug\nworld sim\n");
	hup_and_wait();
	j = call(PROTO_CMD_config);
	cr_assert_str_eq(cfg_str(j, "log_level"), "info");
	cr_assert_str_eq(cfg_str(j, "world"), "local");
	json_decref(j);
	/* another world needs a restart; the rest applies */
	write_conf("log_level debug\nworld ec2\n");
	hup_and_wait();
	j = call(PROTO_CMD_config);
	cr_assert_str_eq(cfg_str(j, "log_level"), "debug");
	cr_assert_str_eq(cfg_str(j, "world"), "local");
	json_decref(j);
	j = call(PROTO_CMD_status);
	cr_assert_eq(json_integer_value(json_object_get(j, "reloads")), 3);
	json_decref(j);

	log = read_log();
	cr_assert(strstr(log, "'log_level' changed from 'notice' to 'debug'"),
		  "%s", log);
	cr_assert(strstr(log, "'region' cannot change from 'us-east-1' to "
			      "'eu-west-1' without a restart"), "%s", log);
	cr_assert(strstr(log, ":5: 'world': 'sim' is no world for jobs"),
		  "%s", log);
	cr_assert(strstr(log, "'world' cannot change from 'local' to 'ec2' "
			      "without a restart"), "%s", log);
	cr_assert(strstr(log, ":5: 'log_level': 'loud' is not one of"), "%s",
		  log);
	cr_assert(strstr(log, "configuration in force is kept"), "%s", log);
	free(log);
}

Test(proteusd, bad_config_lists_every_error)
{
	const char *check[] = {"proteusd", "--config", t.conf,
			       "--check-config", NULL};
	const char *run[] = {"proteusd", "--config", t.conf, NULL};
	char want[512];
	struct pxrun r;

	write_conf("bogus 1\nlog_level loud\ncontrol_socket_mode 0666\n"
		   "max_clients 0\n");
	cr_assert_eq(pxrun(&r, 20, "proteusd", check), 0);
	cr_assert_eq(r.status, 3, "status %d: %s", r.status, r.err);
	snprintf(want, sizeof(want), "%s:5: 'bogus': unknown key", t.conf);
	cr_assert(strstr(r.err, want), "%s", r.err);
	snprintf(want, sizeof(want), "%s:6: 'log_level': 'loud'", t.conf);
	cr_assert(strstr(r.err, want), "%s", r.err);
	snprintf(want, sizeof(want), "%s:7: 'control_socket_mode': mode 0666 "
		 "lets any user write (o+w)", t.conf);
	cr_assert(strstr(r.err, want), "%s", r.err);
	snprintf(want, sizeof(want), "%s:8: 'max_clients'", t.conf);
	cr_assert(strstr(r.err, want), "%s", r.err);
	cr_assert(strstr(r.err, "4 errors"), "%s", r.err);
	pxrun_free(&r);

	/* starting with it fails the same way and creates nothing */
	cr_assert_eq(pxrun(&r, 20, "proteusd", run), 0);
	cr_assert_eq(r.status, 3);
	cr_assert_neq(access(t.sock, F_OK), 0);
	pxrun_free(&r);

	/* a world other than local: refused, not recorded and ignored */
	write_conf("world sim\n");
	cr_assert_eq(pxrun(&r, 20, "proteusd", run), 0);
	cr_assert_eq(r.status, 3, "%s", r.err);
	snprintf(want, sizeof(want), "%s:4: 'world': 'sim' is no world for "
		 "jobs", t.conf);
	cr_assert(strstr(r.err, want), "%s", r.err);
	pxrun_free(&r);

	write_conf("max_clients 8\n");
	cr_assert_eq(pxrun(&r, 20, "proteusd", check), 0);
	cr_assert_eq(r.status, 0, "%s", r.err);
	pxrun_free(&r);
}

/* world ec2: the daemon checks the ec2 world's keys at start and refuses
 * to start (exit 3, nothing created) naming every problem (one round of
 * fixes, not one per run); --check-config says the same, reads the
 * certificate, resolves head_address, and passes a complete
 * configuration. */
Test(proteusd, ec2_world_needs_its_keys)
{
	const char *check[] = {"proteusd", "--config", t.conf,
			       "--check-config", NULL};
	const char *run[] = {"proteusd", "--config", t.conf, NULL};
	char full[1024], cert[600];
	char want[512], text[2048];
	struct pxrun r;

	snprintf(cert, sizeof cert, "%s/identity.pem", t.tmp);
	cr_assert_eq(px_test_cert(cert), 0);
	snprintf(full, sizeof full,
		 "world ec2\n"
		 "ec2_ami ami-0123456789abcdef0\n"
		 "ec2_subnets us-east-1a=subnet-01234567\n"
		 "ec2_security_groups sg-01234567\n"
		 "ec2_instance_profile proteus-node\n"
		 "head_address localhost\n"
		 "ec2_identity_cert %s\n", cert);
	write_conf("world ec2\n");
	cr_assert_eq(pxrun(&r, 20, "proteusd", run), 0);
	cr_assert_eq(r.status, 3, "status %d: %s", r.status, r.err);
	snprintf(want, sizeof(want), "bad configuration in %s: world ec2: "
		 "ec2_ami is not set: the ec2 world needs the image its "
		 "instances boot", t.conf);
	cr_assert(strstr(r.err, want), "%s", r.err);
	/* and the five others, each on its own line */
	cr_assert(strstr(r.err, "world ec2: ec2_subnets is not set"), "%s",
		  r.err);
	cr_assert(strstr(r.err, "world ec2: ec2_security_groups is not set"),
		  "%s", r.err);
	cr_assert(strstr(r.err, "world ec2: ec2_instance_profile is not "
			 "set"), "%s", r.err);
	cr_assert(strstr(r.err, "world ec2: head_address is not set"), "%s",
		  r.err);
	cr_assert(strstr(r.err, "world ec2: ec2_identity_cert is not set"),
		  "%s", r.err);
	cr_assert(strstr(r.err, "world ec2: 6 problems"), "%s", r.err);
	cr_assert_neq(access(t.sock, F_OK), 0);
	cr_assert_neq(access(t.db, F_OK), 0);
	pxrun_free(&r);

	/* all but head_address */
	snprintf(text, sizeof text, "%.*s", (int)(strstr(full, "head_") -
						  full), full);
	write_conf(text);
	cr_assert_eq(pxrun(&r, 20, "proteusd", check), 0);
	cr_assert_eq(r.status, 3, "%s", r.err);
	cr_assert(strstr(r.err, "head_address is not set"), "%s", r.err);
	pxrun_free(&r);
	/* all but the identity documents' certificate */
	snprintf(text, sizeof text, "%.*s", (int)(strstr(full, "ec2_ident") -
						  full), full);
	write_conf(text);
	cr_assert_eq(pxrun(&r, 20, "proteusd", check), 0);
	cr_assert_eq(r.status, 3, "%s", r.err);
	cr_assert(strstr(r.err, "ec2_identity_cert is not set"), "%s", r.err);
	pxrun_free(&r);
	/* a certificate that is not there, a head_address of no host's */
	snprintf(text, sizeof text, "%.*shead_address 192.0.2.1\n"
		 "ec2_identity_cert %s.gone\n", (int)(strstr(full, "head_") -
						  full), full, cert);
	write_conf(text);
	cr_assert_eq(pxrun(&r, 20, "proteusd", check), 0);
	cr_assert_eq(r.status, 3, "%s", r.err);
	cr_assert(strstr(r.err, "world ec2: ec2_identity_cert: "), "%s",
		  r.err);
	cr_assert(strstr(r.err, "identity.pem.gone: "), "%s", r.err);
	cr_assert(strstr(r.err, "world ec2: head_address '192.0.2.1' is not "
			 "an address of this host"), "%s", r.err);
	pxrun_free(&r);

	/* a name: resolved, and good; /metrics on every interface warned */
	snprintf(text, sizeof text, "%smetrics_listen 0.0.0.0:9464\n", full);
	write_conf(text);
	cr_assert_eq(pxrun(&r, 20, "proteusd", check), 0);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert(strstr(r.err, "metrics_listen 0.0.0.0:9464: /metrics is "
			 "served on every interface"), "%s", r.err);
	pxrun_free(&r);

	write_conf(full);
	cr_assert_eq(pxrun(&r, 20, "proteusd", check), 0);
	cr_assert_eq(r.status, 0, "%s", r.err);
	pxrun_free(&r);
}

Test(proteusd, print_config_names_every_key)
{
	const char *argv[] = {"proteusd", "--config", t.conf,
			      "--print-config", NULL};
	const struct config_key *k;
	struct pxrun r;
	char want[256];
	size_t n;

	write_conf("max_clients 8\n");
	cr_assert_eq(pxrun(&r, 20, "proteusd", argv), 0);
	cr_assert_eq(r.status, 0, "%s", r.err);
	k = config_keys(&n);
	for (size_t i = 0; i < n; i++) {
		snprintf(want, sizeof(want), "\n%s ", k[i].name);
		cr_assert(strstr(r.out, want), "no '%s' in:\n%s", k[i].name,
			  r.out);
	}
	cr_assert(strstr(r.out, "max_clients          8"), "%s", r.out);
	cr_assert(strstr(r.out, "# default 64; reloadable"), "%s", r.out);
	cr_assert(strstr(r.out, "# default local; restart needed"), "%s",
		  r.out);
	pxrun_free(&r);
}

Test(proteusd, socket_mode)
{
	struct stat sb;

	start_ready(NULL, NULL);
	cr_assert_eq(stat(t.sock, &sb), 0);
	cr_assert(S_ISSOCK(sb.st_mode));
	cr_assert_eq(sb.st_mode & 0777, 0660, "mode %o", sb.st_mode & 0777);
	kill(t.pid, SIGTERM);
	cr_assert_eq(wait_exit(2000), 0);

	start_ready("control_socket_mode 0600\n", NULL);
	cr_assert_eq(stat(t.sock, &sb), 0);
	cr_assert_eq(sb.st_mode & 0777, 0600, "mode %o", sb.st_mode & 0777);
}

Test(proteusd, socket_mode_o_plus_w_refused)
{
	const char *argv[] = {"proteusd", "--config", t.conf, NULL};
	struct pxrun r;

	write_conf("control_socket_mode 0662\n");
	cr_assert_eq(pxrun(&r, 20, "proteusd", argv), 0);
	cr_assert_eq(r.status, 3);
	cr_assert(strstr(r.err, "(o+w)"), "%s", r.err);
	cr_assert_neq(access(t.sock, F_OK), 0);
	pxrun_free(&r);
}

/* A raw connection to the daemon. */
static int raw_connect(void)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	cr_assert_geq(fd, 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", t.sock);
	cr_assert_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0,
		     "connect: %s", strerror(errno));
	return fd;
}

/* Read everything until the daemon closes (EOF or reset), up to
 * timeout_ms; returns what came, NUL-terminated (caller frees). */
static char *read_until_closed(int fd, int timeout_ms, bool *ret_closed)
{
	uint64_t end = px_now_mono_us() + (uint64_t)timeout_ms * 1000;
	struct pollfd p = {.fd = fd, .events = POLLIN};
	char *buf = calloc(1, 8192);
	size_t n = 0;
	ssize_t k;

	*ret_closed = false;
	while (px_now_mono_us() < end && n < 8191) {
		if (poll(&p, 1, 50) <= 0)
			continue;
		k = recv(fd, buf + n, 8191 - n, 0);
		if (k <= 0) {
			*ret_closed = k == 0 || errno == ECONNRESET;
			break;
		}
		n += (size_t)k;
	}
	buf[n] = '\0';
	return buf;
}

/* Send a ping on fd and check the answer. */
static void raw_ping(int fd)
{
	const char *req = "{\"v\":1,\"cmd\":\"ping\"}\n";
	char buf[512];
	struct pollfd p = {.fd = fd, .events = POLLIN};
	ssize_t k;

	cr_assert_eq(send(fd, req, strlen(req), MSG_NOSIGNAL),
		     (ssize_t)strlen(req));
	cr_assert_eq(poll(&p, 1, 5000), 1);
	k = recv(fd, buf, sizeof(buf) - 1, 0);
	cr_assert_gt(k, 0);
	buf[k] = '\0';
	cr_assert(strstr(buf, "\"ok\":true"), "%s", buf);
	cr_assert(strstr(buf, "\"pong\":true"), "%s", buf);
}

static void expect_dropped(int fd, const char *why, int timeout_ms)
{
	bool closed;
	char *got = read_until_closed(fd, timeout_ms, &closed);

	cr_assert(closed, "not disconnected; got '%s'", got);
	cr_assert(strstr(got, "\"ok\":false"), "%s", got);
	cr_assert(strstr(got, why), "want '%s' in '%s'", why, got);
	free(got);
	close(fd);
}

Test(proteusd, bad_clients_are_dropped_others_go_on)
{
	size_t big = PROTO_LINE_MAX + 6000;
	char *junk = malloc(big);
	int good, bad;
	uint64_t t0;
	struct pxrun r;

	start_ready("client_timeout_ms 400\n", NULL);
	good = raw_connect();
	raw_ping(good);

	/* a line over the limit */
	bad = raw_connect();
	memset(junk, 'a', big);
	(void)send(bad, junk, big, MSG_NOSIGNAL);
	{
		char why[64];

		snprintf(why, sizeof why, "request line is over %d bytes",
			 PROTO_LINE_MAX);
		expect_dropped(bad, why, 5000);
	}
	free(junk);
	raw_ping(good);

	/* garbage */
	bad = raw_connect();
	(void)send(bad, "hello there\n", 12, MSG_NOSIGNAL);
	expect_dropped(bad, "request is not JSON", 5000);

	/* another protocol version */
	bad = raw_connect();
	(void)send(bad, "{\"v\":99,\"cmd\":\"ping\"}\n", 22, MSG_NOSIGNAL);
	expect_dropped(bad, "protocol version 99 not supported", 5000);

	/* an unknown command is an error but not a reason to hang up */
	{
		const char *req = "{\"v\":1,\"cmd\":\"fly\"}\n";
		char buf[256];
		ssize_t k;

		cr_assert_eq(send(good, req, strlen(req), MSG_NOSIGNAL),
			     (ssize_t)strlen(req));
		k = recv(good, buf, sizeof(buf) - 1, 0);
		cr_assert_gt(k, 0);
		buf[k] = '\0';
		cr_assert(strstr(buf, "unknown command 'fly'"), "%s", buf);
	}
	raw_ping(good);
	close(good);

	/* a client stuck mid-request (last: the same timeout ends idle
	 * connections, so 'good' could not have waited through it) */
	bad = raw_connect();
	t0 = px_now_mono_us();
	(void)send(bad, "{\"v\":1,", 7, MSG_NOSIGNAL);
	expect_dropped(bad, "no complete request in 400 ms", 5000);
	cr_assert_geq(px_now_mono_us() - t0, 350000);

	cr_assert_eq(ctl(&r, "ping", NULL), 0, "%s", r.err);
	pxrun_free(&r);
}

/* Write the shipped local example to path, with trainer.epochs set to
 * epochs, name to a string of name_len 'n's when name_len > 0, and padded
 * to exactly size bytes (when size > 0) by a '_pad' comment of "0.1"s
 * (each 4 bytes in the file, 20 once jansson writes it out) and blanks. */
static void write_job(const char *path, int epochs, size_t name_len,
		      size_t size)
{
	char *src = px_src_path("docs/examples/job-local-mlr.json"), *s;
	json_t *j = json_load_file(src, 0, NULL);
	FILE *f;
	size_t n;

	cr_assert_not_null(j, "%s", src);
	json_object_set_new(json_object_get(j, "trainer"), "epochs",
			    json_integer(epochs));
	if (name_len) {
		char *name = malloc(name_len + 1);

		memset(name, 'n', name_len);
		name[name_len] = '\0';
		json_object_set_new(j, "name", json_string(name));
		free(name);
	}
	s = json_dumps(j, JSON_COMPACT);
	n = strlen(s);
	f = fopen(path, "w");
	cr_assert_not_null(f);
	if (size) {
		const char *pad = ",\"_pad\":[0.1";

		cr_assert_lt(n + strlen(pad) + 2, size);
		fwrite(s, 1, n - 1, f); /* without its '}' */
		fputs(pad, f);
		n += strlen(pad) + 1;   /* with "]}" */
		for (; n + 4 + 1 <= size; n += 4)
			fputs(",0.1", f);
		fputs("]", f);
		for (; n < size; n++)
			fputc(' ', f);
		fputs("}", f);
	} else {
		fputs(s, f);
	}
	fclose(f);
	free(s);
	free(src);
	json_decref(j);
	if (size) {
		struct stat st;

		cr_assert_eq(stat(path, &st), 0);
		cr_assert_eq((size_t)st.st_size, size);
	}
}

/* The documented limits hold end to end: a job file of up to 1 MiB
 * reaches the daemon, whatever it grows to in the request, and is
 * answered on its fields; one byte more is refused by proteusctl before
 * it connects; a field too long is named (docs/proteusctl.md, "Jobs"). */
Test(proteusd, submit_limits_are_the_documented_ones)
{
	struct pxrun r;
	char *job;
	const char *argv[] = {"proteusctl", "submit", "--socket", NULL, NULL,
			      NULL};

	cr_assert(asprintf(&job, "%s/job.json", t.tmp) > 0);
	start_ready("world local\n", NULL);
	/* 100 KB of name: the field's error, exit 3 */
	write_job(job, 1, 100000, 0);
	cr_assert_eq(ctl(&r, "submit", job), 3, "%s", r.err);
	cr_assert(strstr(r.err, "job.json: name: longer than 63 bytes"), "%s",
		  r.err);
	pxrun_free(&r);
	/* 1 MiB, 5 MiB as sent: read, and answered on its one bad field */
	write_job(job, 0, 0, JOBSPEC_FILE_MAX);
	cr_assert_eq(ctl(&r, "submit", job), 3, "%s", r.err);
	cr_assert(strstr(r.err, "job.json: trainer.epochs: 0 is out of "
			 "range"), "%s", r.err);
	pxrun_free(&r);
	/* one byte more: refused before any connection (no daemon here) */
	write_job(job, 0, 0, JOBSPEC_FILE_MAX + 1);
	argv[3] = "/nonexistent/p.sock";
	argv[4] = job;
	cr_assert_eq(pxrun(&r, 20, "proteusctl", argv), 0);
	cr_assert_eq(r.status, 3, "%s", r.err);
	cr_assert(strstr(r.err, "job.json: 1048577 bytes, over the limit of "
			 "1048576"), "%s", r.err);
	pxrun_free(&r);
	cr_assert_eq(ctl(&r, "ping", NULL), 0, "%s", r.err);
	pxrun_free(&r);
	cr_assert_eq(sql_count("jobs"), 0);
	free(job);
}

Test(proteusd, many_clients_at_once)
{
	enum { N = 40 };
	int fds[N];
	const char *req = "{\"v\":1,\"cmd\":\"status\"}\n"
			  "{\"v\":1,\"cmd\":\"ping\"}\n";
	json_t *j;

	start_ready(NULL, NULL);
	for (int i = 0; i < N; i++)
		fds[i] = raw_connect();
	for (int i = 0; i < N; i++)
		cr_assert_eq(send(fds[i], req, strlen(req), MSG_NOSIGNAL),
			     (ssize_t)strlen(req));
	for (int i = 0; i < N; i++) {
		char buf[2048];
		size_t n = 0;
		ssize_t k;

		/* two replies, two lines */
		while (n < sizeof(buf) - 1 &&
		       (!memchr(buf, '\n', n) ||
			memchr(buf, '\n', n) == memrchr(buf, '\n', n))) {
			k = recv(fds[i], buf + n, sizeof(buf) - 1 - n, 0);
			cr_assert_gt(k, 0);
			n += (size_t)k;
		}
		buf[n] = '\0';
		cr_assert(strstr(buf, "\"clients\":"), "%s", buf);
		cr_assert(strstr(buf, "\"pong\":true"), "%s", buf);
	}
	j = call(PROTO_CMD_status);
	cr_assert_eq(json_integer_value(json_object_get(j, "clients")), N + 1);
	json_decref(j);
	for (int i = 0; i < N; i++)
		close(fds[i]);
}

Test(proteusd, max_clients)
{
	int a, b, c;

	start_ready("max_clients 2\n", NULL);
	a = raw_connect();
	b = raw_connect();
	raw_ping(a);
	raw_ping(b);
	c = raw_connect();
	expect_dropped(c, "too many clients (max_clients 2)", 5000);
	close(b);
	raw_ping(a);
	close(a);
}

Test(proteusd, sigterm_stops_within_a_second)
{
	uint64_t t0;
	int code;

	start_ready(NULL, NULL);
	t0 = px_now_mono_us();
	cr_assert_eq(kill(t.pid, SIGTERM), 0);
	cr_assert(wait_notify("STOPPING=1", 1000), "no STOPPING=1");
	code = wait_exit(1000);
	cr_assert_eq(code, 0, "exit %d", code);
	cr_assert_lt(px_now_mono_us() - t0, 1000000);
	cr_assert_neq(access(t.sock, F_OK), 0, "socket file left behind");
}


/* The loop takes SIGTERM, SIGINT and SIGHUP through a signalfd, which
 * works only while every thread blocks them: a thread a library starts
 * before main (OpenBLAS starts one per core when it is loaded) would get
 * a process-directed signal at its default action and kill the daemon.
 * Checked on the local world, the one that runs jobs. */
Test(proteusd, every_thread_blocks_the_loop_signals)
{
	char dir[64], path[512], line[256];
	unsigned long long mask = (1ull << (SIGTERM - 1)) |
				  (1ull << (SIGINT - 1)) |
				  (1ull << (SIGHUP - 1));
	struct dirent *e;
	unsigned threads = 0;
	DIR *d;

	start_ready("world local\n", NULL);
	snprintf(dir, sizeof dir, "/proc/%d/task", (int)t.pid);
	d = opendir(dir);
	cr_assert_not_null(d);
	while ((e = readdir(d))) {
		unsigned long long blk = 0;
		bool seen = false;
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof path, "%s/%s/status", dir, e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue; /* the thread ended meanwhile */
		while (fgets(line, sizeof line, f))
			if (sscanf(line, "SigBlk: %llx", &blk) == 1)
				seen = true;
		fclose(f);
		cr_assert(seen, "no SigBlk in %s", path);
		cr_assert_eq(blk & mask, mask, "thread %s blocks %llx only",
			     e->d_name, blk);
		threads++;
	}
	closedir(d);
	cr_assert_geq(threads, 1);
	cr_assert_eq(kill(t.pid, SIGTERM), 0);
	cr_assert_eq(wait_exit(2000), 0);
}
Test(proteusd, stale_socket_replaced_live_one_kept)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	const char *argv[] = {"proteusd", "--config", t.conf, NULL};
	struct pxrun r;
	int fd;

	/* a socket file nobody listens on, as a crash leaves it */
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", t.sock);
	cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	close(fd);
	start_ready(NULL, NULL);
	json_decref(call(PROTO_CMD_ping));

	/* a second daemon on a live socket (with a database of its own,
	 * else the database lock refuses it first) refuses to start */
	{
		const char *argv2[] = {"proteusd", "--config", NULL, NULL};
		char *conf2;
		FILE *f;

		cr_assert(asprintf(&conf2, "%s/p2.conf", t.tmp) > 0);
		f = fopen(conf2, "w");
		cr_assert_not_null(f);
		fprintf(f, "db %s/p2.db\ncontrol_socket %s\nworld local\n",
			t.tmp, t.sock);
		fclose(f);
		argv2[2] = conf2;
		cr_assert_eq(pxrun(&r, 20, "proteusd", argv2), 0);
		cr_assert_eq(r.status, 1);
		cr_assert(strstr(r.err, "another proteusd is listening"),
			  "%s", r.err);
		pxrun_free(&r);
		free(conf2);
	}
	json_decref(call(PROTO_CMD_ping));

	/* a file that is not a socket is never removed */
	kill(t.pid, SIGTERM);
	cr_assert_eq(wait_exit(2000), 0);
	fd = open(t.sock, O_CREAT | O_WRONLY, 0600);
	close(fd);
	cr_assert_eq(pxrun(&r, 20, "proteusd", argv), 0);
	cr_assert_eq(r.status, 1);
	cr_assert(strstr(r.err, "exists and is not a socket"), "%s", r.err);
	cr_assert_eq(access(t.sock, F_OK), 0);
	pxrun_free(&r);
}

Test(proteusd, watchdog_pings)
{
	uint64_t t0;

	start_ready(NULL, "WATCHDOG_USEC=200000");
	t0 = px_now_mono_us();
	for (int i = 0; i < 3; i++)
		cr_assert(wait_notify("WATCHDOG=1", 1000), "no WATCHDOG=1");
	/* three pings, 100 ms apart (the first may come at once) */
	cr_assert_geq(px_now_mono_us() - t0, 150000);
	cr_assert_lt(px_now_mono_us() - t0, 1000000);
}

/* ---- the default paths, shared by proteusd and proteusctl ---- */

/* A fresh environment of HOME and XDG folders under t.tmp, without any of
 * the variables that name a database or a socket. */
static void clean_env(void)
{
	char *p;

	unsetenv("PROTEUS_DB");
	unsetenv("PROTEUS_SOCKET");
	unsetenv("STATE_DIRECTORY");
	unsetenv("RUNTIME_DIRECTORY");
	unsetenv("XDG_DATA_HOME");
	cr_assert(asprintf(&p, "%s/home", t.tmp) > 0);
	cr_assert_eq(mkdir(p, 0700), 0);
	setenv("HOME", p, 1);
	free(p);
	cr_assert(asprintf(&p, "%s/xdg-run", t.tmp) > 0);
	cr_assert_eq(mkdir(p, 0700), 0);
	setenv("XDG_RUNTIME_DIR", p, 1);
	free(p);
}

/* The README's path: import with no --db, start proteusd with the
 * defaults, and `proteusctl status` (no --socket) shows the markets. */
Test(proteusd, default_db_and_socket_meet)
{
	char *trace = px_src_path("tests/data/ctl/small.json");
	const char *imp[] = {"proteusctl", "market", "import", trace, NULL};
	const char *st[] = {"proteusctl", "status", "--json", NULL};
	char *want_db, *want_sock;
	struct pxrun r;
	json_t *j;
	FILE *f;

	clean_env();
	if (geteuid() == 0) {
		/* root's default is /var/lib/proteus: test the systemd
		 * branch instead, with what the unit sets */
		char *state, *rt;

		cr_assert(asprintf(&state, "%s/state", t.tmp) > 0);
		cr_assert(asprintf(&rt, "%s/rt", t.tmp) > 0);
		setenv("STATE_DIRECTORY", state, 1);
		setenv("RUNTIME_DIRECTORY", rt, 1);
		cr_assert(asprintf(&want_db, "%s/proteus.db", state) > 0);
		cr_assert(asprintf(&want_sock, "%s/proteusd.sock", rt) > 0);
		free(state);
		free(rt);
	} else {
		cr_assert(asprintf(&want_db,
				   "%s/home/.local/share/proteus/proteus.db",
				   t.tmp) > 0);
		cr_assert(asprintf(&want_sock, "%s/xdg-run/proteusd.sock",
				   t.tmp) > 0);
	}
	cr_assert_eq(pxrun(&r, 30, "proteusctl", imp), 0);
	cr_assert_eq(r.status, 0, "import: %s", r.err);
	pxrun_free(&r);
	cr_assert_eq(access(want_db, F_OK), 0, "no %s", want_db);

	f = fopen(t.conf, "w");
	cr_assert_not_null(f);
	fputs("# the defaults\n", f);
	fclose(f);
	start(NULL);
	cr_assert(wait_notify("READY=1", 10000), "no READY=1");

	cr_assert_eq(pxrun(&r, 20, "proteusctl", st), 0);
	cr_assert_eq(r.status, 0, "status: %s", r.err);
	j = json_loads(r.out, 0, NULL);
	cr_assert_not_null(j, "%s", r.out);
	pxrun_free(&r);
	cr_assert_str_eq(json_string_value(json_object_get(j, "db")), want_db);
	cr_assert_eq(json_integer_value(json_object_get(j, "markets")), 1);
	cr_assert_eq(json_integer_value(json_object_get(j, "prices")), 4);
	json_decref(j);
	cr_assert_eq(access(want_sock, F_OK), 0, "no %s", want_sock);
	free(want_db);
	free(want_sock);
	free(trace);
}

/* proteusctl without --db or $PROTEUS_DB uses the running daemon's
 * database, found on $PROTEUS_SOCKET. */
Test(proteusd, ctl_uses_the_daemons_db)
{
	char *trace = px_src_path("tests/data/ctl/small.json");
	const char *imp[] = {"proteusctl", "market", "import", trace, NULL};
	char *elsewhere;
	struct pxrun r;

	start_ready(NULL, NULL);
	clean_env();
	cr_assert(asprintf(&elsewhere, "%s/elsewhere", t.tmp) > 0);
	setenv("STATE_DIRECTORY", elsewhere, 1); /* the fallback, unused */
	setenv("PROTEUS_SOCKET", t.sock, 1);
	cr_assert_eq(pxrun(&r, 30, "proteusctl", imp), 0);
	cr_assert_eq(r.status, 0, "import: %s", r.err);
	pxrun_free(&r);
	cr_assert_eq(sql_count("markets"), 1);
	cr_assert_eq(sql_count("prices"), 4);
	cr_assert_neq(access(elsewhere, F_OK), 0);
	free(elsewhere);
	free(trace);
}

/* ping --json; the socket from --socket (before or after the command),
 * else $PROTEUS_SOCKET; --socket wins over the variable. */
Test(proteusd, ping_json_and_socket_precedence)
{
	const char *g[] = {"proteusctl", "--socket", t.sock, "--json", "ping",
			   NULL};
	const char *plain[] = {"proteusctl", "ping", NULL};
	char *none;
	struct pxrun r;
	json_t *j;

	start_ready(NULL, NULL);
	cr_assert_eq(pxrun(&r, 20, "proteusctl", g), 0);
	cr_assert_eq(r.status, 0, "%s", r.err);
	j = json_loads(r.out, 0, NULL);
	cr_assert_not_null(j, "%s", r.out);
	pxrun_free(&r);
	cr_assert_eq(json_integer_value(json_object_get(j, "pid")), t.pid);
	cr_assert_str_eq(json_string_value(json_object_get(j, "socket")),
			 t.sock);
	cr_assert_geq(json_real_value(json_object_get(j, "ms")), 0.0);
	json_decref(j);

	setenv("PROTEUS_SOCKET", t.sock, 1);
	cr_assert_eq(pxrun(&r, 20, "proteusctl", plain), 0);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert(strstr(r.out, t.sock), "%s", r.out);
	pxrun_free(&r);
	cr_assert(asprintf(&none, "%s/none.sock", t.tmp) > 0);
	{
		const char *a[] = {"proteusctl", "ping", "--socket", none,
				   NULL};

		cr_assert_eq(pxrun(&r, 20, "proteusctl", a), 0);
	}
	cr_assert_eq(r.status, 1);
	cr_assert(strstr(r.err, none), "%s", r.err);
	pxrun_free(&r);
	free(none);
}

/* --print-config --json; a bad option is one line, exit 2. */
Test(proteusd, print_config_json_and_usage_errors)
{
	const char *argv[] = {"proteusd", "--config", t.conf,
			      "--print-config", "--json", NULL};
	const char *bad[] = {"proteusd", "--bogus", NULL};
	const char *lone[] = {"proteusd", "--json", NULL};
	struct pxrun r;
	json_t *j, *k;

	write_conf("max_clients 8\n");
	cr_assert_eq(pxrun(&r, 20, "proteusd", argv), 0);
	cr_assert_eq(r.status, 0, "%s", r.err);
	j = json_loads(r.out, 0, NULL);
	cr_assert_not_null(j, "%s", r.out);
	pxrun_free(&r);
	k = json_object_get(j, "keys");
	cr_assert_str_eq(json_string_value(json_object_get(j, "from")),
			 t.conf);
	cr_assert_eq(json_integer_value(json_object_get(
		json_object_get(k, "max_clients"), "value")), 8);
	cr_assert_str_eq(json_string_value(json_object_get(
		json_object_get(k, "max_clients"), "default")), "64");
	cr_assert(json_is_true(json_object_get(
		json_object_get(k, "max_clients"), "reloadable")));
	cr_assert_str_eq(json_string_value(json_object_get(
		json_object_get(k, "db"), "value")), t.db);
	cr_assert(json_is_false(json_object_get(json_object_get(k, "db"),
						"reloadable")));
	json_decref(j);

	cr_assert_eq(pxrun(&r, 20, "proteusd", bad), 0);
	cr_assert_eq(r.status, 2);
	cr_assert_str_eq(r.err, "proteusd: error: unknown option '--bogus' "
			 "(see 'proteusd --help')\n");
	pxrun_free(&r);
	cr_assert_eq(pxrun(&r, 20, "proteusd", lone), 0);
	cr_assert_eq(r.status, 2);
	cr_assert(strstr(r.err, "--json goes with --print-config"), "%s",
		  r.err);
	pxrun_free(&r);
}

static int count_lines_with(const char *text, const char *needle)
{
	int n = 0;

	for (const char *p = text; (p = strstr(p, needle)); p++)
		n++;
	return n;
}

/* A flood of refused clients logs the first refusal, then one summary
 * line per window with the count, not one line per client. */
Test(proteusd, refused_clients_are_logged_rate_limited, .timeout = 40)
{
	enum { N = 300 };
	uint64_t end;
	char *log;
	int a, fd, lines;

	start_ready("max_clients 1\n", NULL);
	a = raw_connect();
	raw_ping(a);
	for (int i = 0; i < N; i++) {
		fd = raw_connect();
		close(fd);
	}
	raw_ping(a); /* the daemon has handled the flood */
	/* the summary comes at the end of the window (5 s) */
	end = px_now_mono_us() + 15 * 1000000ull;
	do {
		usleep(100000);
		log = read_log();
		lines = count_lines_with(log, "more clients refused");
		if (lines > 0 || px_now_mono_us() > end)
			break;
		free(log);
	} while (1);
	cr_assert_geq(lines, 1, "no summary line; log:\n%s", log);
	lines = count_lines_with(log, "too many clients");
	cr_assert_leq(lines, 4, "%d lines for %d refused clients:\n%s", lines,
		      N, log);
	/* the counts add up to the clients refused (first one + summaries) */
	{
		long sum = 1;
		const char *p = log;

		while ((p = strstr(p, " more client"))) {
			const char *q = p;

			while (q > log && q[-1] >= '0' && q[-1] <= '9')
				q--;
			sum += strtol(q, NULL, 10);
			p++;
		}
		cr_assert_eq(sum, N, "counted %ld of %d:\n%s", sum, N, log);
	}
	free(log);
	raw_ping(a);
	close(a);
}

/* One daemon per database: a second one with the same db and another
 * socket refuses, naming the holder; after a kill -9 of the first, a
 * new one starts at once. */
Test(proteusd, second_daemon_on_one_database_refused)
{
	char *conf2, *sock2;
	const char *argv[] = {"proteusd", "--config", NULL, "--foreground",
			      NULL};
	char pid[32];
	struct pxrun r;
	FILE *f;

	cr_assert(asprintf(&conf2, "%s/p2.conf", t.tmp) > 0);
	cr_assert(asprintf(&sock2, "%s/p2.sock", t.tmp) > 0);
	f = fopen(conf2, "w");
	cr_assert_not_null(f);
	fprintf(f, "db %s\ncontrol_socket %s\nworld local\n", t.db, sock2);
	fclose(f);
	argv[2] = conf2;

	start_ready(NULL, NULL);
	cr_assert_eq(pxrun(&r, 20, "proteusd", argv), 0);
	cr_assert_eq(r.status, 1, "second daemon: status %d: %s", r.status,
		     r.err);
	snprintf(pid, sizeof(pid), "pid %ld", (long)t.pid);
	cr_assert(strstr(r.err, "in use by another proteusd"), "%s", r.err);
	cr_assert(strstr(r.err, pid), "want '%s' in: %s", pid, r.err);
	cr_assert_neq(access(sock2, F_OK), 0, "second socket created");
	pxrun_free(&r);
	json_decref(call(PROTO_CMD_ping));

	/* kill -9: the kernel drops the lock; a restart is not blocked */
	kill(t.pid, SIGKILL);
	waitpid(t.pid, NULL, 0);
	t.pid = 0;
	start_ready(NULL, NULL);
	json_decref(call(PROTO_CMD_ping));
	free(conf2);
	free(sock2);
}

/* Both units (the head node's proteusd, an instance's proteus-node), as
 * `make install` writes them: systemd-analyze accepts them.  Skipped where
 * systemd-analyze is not installed. */
Test(proteusd, units_verify)
{
	static const char *const units[] = { "proteusd.service",
					     "proteus-node.service" };
	char dir[] = "/tmp/pxunit.XXXXXX", cmd[4096];
	const char *b = getenv("PX_BUILD"), *src = getenv("PX_SRC");

	if (system("command -v systemd-analyze >/dev/null 2>&1") != 0)
		cr_skip_test("systemd-analyze is not installed");
	cr_assert_not_null(b);
	cr_assert_not_null(src);
	cr_assert_not_null(mkdtemp(dir));
	for (size_t i = 0; i < sizeof units / sizeof *units; i++) {
		snprintf(cmd, sizeof cmd, "mkdir -p '%s/bin' && "
			 "ln -sf '%s/proteusd' '%s/proteus-trainer' '%s/bin/' "
			 "&& sed 's|@PREFIX@|%s|g' '%s/etc/%s' > '%s/%s' && "
			 "systemd-analyze verify --man=no '%s/%s' 2>&1",
			 dir, b, b, dir, dir, src, units[i], dir, units[i],
			 dir, units[i]);
		cr_assert_eq(system(cmd), 0, "%s does not verify", units[i]);
	}
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
}
