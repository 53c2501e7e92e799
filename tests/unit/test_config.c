/* test_config.c -- proteusd's config table: defaults, the parser (every
 * error collected, each naming file:line: 'key'), reload rules, formats. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../agent/config.h"
#include "../../agent/proto.h"
#include "../../common/log.h"

static enum px_err parse(const char *text, struct proteusd_config *cfg,
			 struct config_diag *d)
{
	return config_parse("t.conf", text, strlen(text), cfg, d);
}

/* Whether some message in d contains needle. */
static bool has_msg(const struct config_diag *d, const char *needle)
{
	for (size_t i = 0; i < d->n; i++)
		if (strstr(d->msgs[i], needle))
			return true;
	return false;
}

static void dump(const struct config_diag *d)
{
	for (size_t i = 0; i < d->n; i++)
		fprintf(stderr, "  %s\n", d->msgs[i]);
}

Test(config, table_is_sane)
{
	size_t n;
	const struct config_key *k = config_keys(&n);
	static const char *const required[] = {
		"db", "world", "region", "log_level", "control_socket",
		"control_socket_mode",
	};

	cr_assert_geq(n, 6);
	for (size_t i = 0; i < n; i++) {
		bool r = k[i].flags & CONFIG_RELOADABLE;
		bool im = k[i].flags & CONFIG_IMMUTABLE;

		cr_assert(r != im, "'%s': exactly one of RELOADABLE and "
			  "IMMUTABLE", k[i].name);
		cr_assert(k[i].dflt || k[i].dflt_fn, "'%s': no default",
			  k[i].name);
		cr_assert(k[i].help && *k[i].help);
		cr_assert_leq(k[i].offset, sizeof(struct proteusd_config));
		cr_assert_eq(config_key_find(k[i].name), &k[i]);
		for (size_t j = 0; j < i; j++)
			cr_assert_str_neq(k[i].name, k[j].name);
		if (k[i].type == CONFIG_ENUM)
			cr_assert_not_null(k[i].choices);
	}
	for (size_t i = 0; i < sizeof(required) / sizeof(required[0]); i++)
		cr_assert_not_null(config_key_find(required[i]), "no '%s'",
				   required[i]);
	cr_assert_null(config_key_find("nope"));
	/* string bounds match the fields they fill */
	cr_assert_eq(config_key_find("db")->max + 1,
		     (int64_t)sizeof(((struct proteusd_config *)0)->db));
	cr_assert_eq(config_key_find("control_socket")->max + 1,
		     (int64_t)sizeof(((struct proteusd_config *)0)
					     ->control_socket));
	cr_assert_eq(config_key_find("region")->max + 1,
		     (int64_t)sizeof(((struct proteusd_config *)0)->region));
}

Test(config, defaults)
{
	struct proteusd_config c;
	struct config_diag d = {0};

	unsetenv("PROTEUS_DB");
	unsetenv("PROTEUS_SOCKET");
	setenv("STATE_DIRECTORY", "/var/lib/px-test:/var/lib/other", 1);
	setenv("RUNTIME_DIRECTORY", "/run/px-test:/run/other", 1);
	cr_assert_eq(config_defaults(&c, &d), PX_OK);
	cr_assert_str_eq(c.db, "/var/lib/px-test/proteus.db");
	cr_assert_eq(c.world, WORLD_LOCAL);
	cr_assert_str_eq(c.region, "us-east-1");
	cr_assert_eq(c.log_level, LOG_LVL_NOTICE);
	cr_assert_eq(c.control_socket_mode, 0660);
	cr_assert_str_eq(c.control_socket, "/run/px-test/proteusd.sock");
	unsetenv("RUNTIME_DIRECTORY");
	setenv("XDG_RUNTIME_DIR", "/run/user/4242", 1);
	cr_assert_eq(config_defaults(&c, &d), PX_OK);
	cr_assert_str_eq(c.control_socket,
			 geteuid() ? "/run/user/4242/proteusd.sock"
				   : "/run/proteus/proteusd.sock");
	cr_assert_eq(d.n, 0);
	config_diag_release(&d);
}

Test(config, default_socket_too_long)
{
	char longdir[200];
	struct proteusd_config c;
	struct config_diag d = {0};

	memset(longdir, 'x', sizeof(longdir) - 1);
	longdir[0] = '/';
	longdir[sizeof(longdir) - 1] = '\0';
	setenv("RUNTIME_DIRECTORY", longdir, 1);
	cr_assert_eq(config_defaults(&c, &d), PX_EINVAL);
	cr_assert(has_msg(&d, "'control_socket'"));
	config_diag_release(&d);
}

Test(config, parse_good)
{
	struct proteusd_config c;
	struct config_diag d = {0};
	const char *text = "# a comment\n"
			   "\n"
			   "   db   /tmp/x y/p.db   # spaces in the value\n"
			   "world local\n"
			   "region\teu-west-1\r\n"
			   "log_level debug\n"
			   "control_socket /tmp/s#1.sock\n"
			   "control_socket_mode 0640\n"
			   "max_clients 7\n"
			   "client_timeout_ms 250";
	enum px_err r = parse(text, &c, &d);

	dump(&d);
	cr_assert_eq(r, PX_OK);
	cr_assert_str_eq(c.db, "/tmp/x y/p.db");
	cr_assert_eq(c.world, WORLD_LOCAL);
	cr_assert_str_eq(c.region, "eu-west-1");
	cr_assert_eq(c.log_level, LOG_LVL_DEBUG);
	cr_assert_str_eq(c.control_socket, "/tmp/s#1.sock");
	cr_assert_eq(c.control_socket_mode, 0640);
	cr_assert_eq(c.max_clients, 7);
	cr_assert_eq(c.client_timeout_ms, 250);
	cr_assert_eq(d.n, 0);
}

Test(config, all_errors_collected)
{
	struct proteusd_config c;
	struct config_diag d = {0};
	const char *text = "db /ok.db\n"
			   "bogus 1\n"
			   "world mars\n"
			   "log_level\n"
			   "control_socket_mode 0666\n"
			   "max_clients 0\n"
			   "client_timeout_ms 12x\n"
			   "db /again.db\n"
			   "control_socket_mode 9\n";

	memset(&c, 0x5a, sizeof(c));
	cr_assert_eq(parse(text, &c, &d), PX_EINVAL);
	if (d.n != 8)
		dump(&d);
	cr_assert_eq(d.n, 8, "got %zu messages", d.n);
	cr_assert(has_msg(&d, "t.conf:2: 'bogus': unknown key"));
	cr_assert(has_msg(&d, "t.conf:3: 'world': 'mars' is not one of local"));
	cr_assert(has_msg(&d, "t.conf:4: 'log_level': no value"));
	cr_assert(has_msg(&d, "t.conf:5: 'control_socket_mode': mode 0666 "
			      "lets any user write (o+w)"));
	cr_assert(has_msg(&d, "t.conf:6: 'max_clients': 0 is outside 1.."));
	cr_assert(has_msg(&d, "t.conf:7: 'client_timeout_ms': '12x' is not "
			      "an integer"));
	cr_assert(has_msg(&d, "t.conf:8: 'db': given again (first on line "
			      "1)"));
	cr_assert(has_msg(&d, "t.conf:9: 'control_socket_mode': given "
			      "again"));
	/* *ret untouched on failure */
	cr_assert_eq(((unsigned char *)&c)[0], 0x5a);
	config_diag_release(&d);
	cr_assert_eq(d.n, 0);
}

Test(config, bounds)
{
	struct proteusd_config c;
	struct config_diag d = {0};
	char big[300];

	cr_assert_eq(parse("control_socket_mode 0600\nmax_clients 4096\n"
			   "client_timeout_ms 100\n", &c, &d), PX_OK);
	cr_assert_eq(parse("max_clients 4097\n", &c, &d), PX_EINVAL);
	cr_assert_eq(parse("client_timeout_ms 99\n", &c, &d), PX_EINVAL);
	cr_assert_eq(parse("max_clients 99999999999999999999\n", &c, &d),
		     PX_EINVAL);
	cr_assert_eq(parse("control_socket_mode 01660\n", &c, &d),
		     PX_EINVAL);
	cr_assert_eq(parse("control_socket_mode 0602\n", &c, &d),
		     PX_EINVAL);
	cr_assert_eq(parse("max_clients +5\n", &c, &d), PX_EINVAL);
	memset(big, 'a', sizeof(big) - 1);
	big[0] = '/';
	big[sizeof(big) - 1] = '\0';
	config_diag_release(&d);
	{
		char text[400];

		snprintf(text, sizeof(text), "control_socket %s\n", big);
		cr_assert_eq(parse(text, &c, &d), PX_EINVAL);
		cr_assert(has_msg(&d, "'control_socket': length 299 is "
				      "outside 1..107"));
	}
	config_diag_release(&d);
}

Test(config, many_errors_are_capped)
{
	struct proteusd_config c;
	struct config_diag d = {0};
	size_t cap = 200 * 16;
	char *text = malloc(cap), *p = text;

	for (int i = 0; i < 200; i++)
		p += snprintf(p, cap - (size_t)(p - text), "k%d 1\n", i);
	cr_assert_eq(parse(text, &c, &d), PX_EINVAL);
	cr_assert_eq(d.n, CONFIG_DIAG_MAX);
	cr_assert_eq(d.dropped, 200 - CONFIG_DIAG_MAX);
	config_diag_release(&d);
	free(text);
}

Test(config, load_missing_file)
{
	struct proteusd_config c;
	struct config_diag d = {0};

	cr_assert_neq(config_load("/nonexistent/p.conf", &c, &d), PX_OK);
	cr_assert(has_msg(&d, "/nonexistent/p.conf: cannot open"));
	config_diag_release(&d);
}

/* `world` is the world of jobs whose spec names none; the daemon runs
 * the local world only, so the others are refused, each with its reason,
 * rather than accepted and ignored. */
Test(config, world_is_the_default_world_of_jobs)
{
	struct proteusd_config c;
	struct config_diag d = {0};

	cr_assert_eq(parse("world local\n", &c, &d), PX_OK);
	cr_assert_eq(c.world, WORLD_LOCAL);
	cr_assert_eq(parse("region eu-west-1\nworld ec2\n", &c, &d),
		     PX_EINVAL);
	cr_assert(has_msg(&d, "t.conf:2: 'world': 'ec2' is not supported by "
			      "this daemon yet: it runs jobs in the local "
			      "world only"));
	config_diag_release(&d);
	cr_assert_eq(parse("world sim\n", &c, &d), PX_EINVAL);
	cr_assert(has_msg(&d, "t.conf:1: 'world': 'sim' is no world for "
			      "jobs"));
	config_diag_release(&d);
	cr_assert_eq(parse("world mars\n", &c, &d), PX_EINVAL);
	cr_assert_eq(d.n, 1);
	cr_assert_str_eq(d.msgs[0], "t.conf:1: 'world': 'mars' is not one of "
			 "local", "only what is accepted is listed");
	config_diag_release(&d);
	cr_assert_str_eq(config_world_name(WORLD_LOCAL), "local");
}

Test(config, reload_applies_reloadable_refuses_immutable)
{
	struct proteusd_config cur, next;
	struct config_diag d = {0};

	cr_assert_eq(parse("db /a.db\nlog_level notice\nmax_clients 5\n",
			   &cur, &d), PX_OK);
	cr_assert_eq(parse("db /b.db\nlog_level debug\nmax_clients 9\n"
			   "region eu-west-1\n", &next, &d), PX_OK);
	cr_assert_eq(config_reload(&cur, &next, &d), 2);
	cr_assert_eq(cur.log_level, LOG_LVL_DEBUG);
	cr_assert_eq(cur.max_clients, 9);
	cr_assert_str_eq(cur.db, "/a.db");
	cr_assert_str_eq(cur.region, "us-east-1");
	cr_assert_eq(d.n, 2);
	cr_assert(has_msg(&d, "'db' cannot change from '/a.db' to '/b.db' "
			      "without a restart"));
	cr_assert(has_msg(&d, "'region' cannot change"));
	config_diag_release(&d);
	/* the same file again changes nothing */
	cr_assert_eq(config_reload(&cur, &cur, &d), 0);
	cr_assert_eq(d.n, 0);
}

Test(config, format_round_trips)
{
	struct proteusd_config a, b;
	struct config_diag d = {0};
	size_t n;
	const struct config_key *k = config_keys(&n);
	char text[8192], val[CONFIG_PATH_MAX];
	size_t len = 0;

	cr_assert_eq(parse("db /x.db\nworld local\nlog_level warning\n"
			   "control_socket_mode 0600\nmax_clients 3\n",
			   &a, &d), PX_OK);
	for (size_t i = 0; i < n; i++) {
		config_format(&k[i], &a, val, sizeof(val));
		len += (size_t)snprintf(text + len, sizeof(text) - len,
					"%s %s\n", k[i].name, val);
	}
	cr_assert_eq(config_parse("fmt", text, len, &b, &d), PX_OK);
	for (size_t i = 0; i < n; i++)
		cr_assert(config_equal(&k[i], &a, &b), "'%s' differs",
			  k[i].name);
	config_format(config_key_find("control_socket_mode"), &a, val,
		      sizeof(val));
	cr_assert_str_eq(val, "0600");
	config_format_default(config_key_find("log_level"), val, sizeof(val));
	cr_assert_str_eq(val, "notice");
	/* an empty value is written "" and read back as empty; a key
	 * that may not be empty refuses it */
	config_format(config_key_find("job_dir"), &a, val, sizeof(val));
	cr_assert_str_eq(val, "\"\"");
	cr_assert_eq(parse("job_dir /j\ntrainer \"\"\n", &b, &d), PX_OK);
	cr_assert_str_eq(b.job_dir, "/j");
	cr_assert_str_eq(b.trainer, "");
	cr_assert_eq(parse("region \"\"\n", &b, &d), PX_EINVAL);
	cr_assert(has_msg(&d, "'region': length 0 is outside"));
	config_diag_release(&d);
}

Test(config, to_json)
{
	struct proteusd_config c;
	struct config_diag d = {0};
	json_t *j;
	size_t n;

	cr_assert_eq(parse("world local\nmax_clients 12\n", &c, &d), PX_OK);
	j = config_to_json(&c);
	cr_assert_not_null(j);
	config_keys(&n);
	cr_assert_eq(json_object_size(j), n);
	cr_assert_str_eq(json_string_value(json_object_get(j, "world")),
			 "local");
	cr_assert_eq(json_integer_value(json_object_get(j, "max_clients")),
		     12);
	cr_assert_str_eq(json_string_value(json_object_get(
				 j, "control_socket_mode")), "0660");
	json_decref(j);
}

Test(config, proto_request_checks)
{
	struct px_error err = {0};
	enum proto_cmd cmd;
	json_t *req = NULL;
	const char *good = "{\"v\":1,\"cmd\":\"status\"}";
	const char *unk = "{\"v\":1,\"cmd\":\"fly\"}";
	const char *oldv = "{\"v\":0,\"cmd\":\"ping\"}";

	cr_assert_eq(proto_request_parse(good, strlen(good), &req, &cmd,
					 &err), PX_OK);
	cr_assert_eq(cmd, PROTO_CMD_status);
	json_decref(req);
	cr_assert_eq(proto_request_parse(unk, strlen(unk), &req, &cmd, &err),
		     PX_OK);
	cr_assert_eq(cmd, PROTO_CMD_MAX);
	json_decref(req);
	cr_assert_eq(proto_request_parse(oldv, strlen(oldv), &req, &cmd,
					 &err), PX_EUNSUPP);
	cr_assert(strstr(err.msg, "version 0"));
	cr_assert_eq(proto_request_parse("[1]", 3, &req, &cmd, &err),
		     PX_EPROTO);
	cr_assert_eq(proto_request_parse("{\"cmd\":\"ping\"}", 14, &req, &cmd,
					 &err), PX_EPROTO);
	cr_assert_str_eq(proto_cmd_name(PROTO_CMD_ping), "ping");
	cr_assert_null(proto_cmd_name(PROTO_CMD_MAX));
}

/* The one rule both proteusd and proteusctl use (proto_default_db and
 * proto_default_socket), step by step. */
Test(config, default_db_and_socket_rule)
{
	struct proteusd_config c;
	struct config_diag d = {0};

	unsetenv("STATE_DIRECTORY");
	unsetenv("RUNTIME_DIRECTORY");
	setenv("HOME", "/home/px", 1);
	setenv("XDG_DATA_HOME", "/data/px", 1);
	setenv("XDG_RUNTIME_DIR", "/run/user/4242", 1);
	setenv("PROTEUS_DB", "/env/p.db", 1);
	setenv("PROTEUS_SOCKET", "/env/p.sock", 1);
	cr_assert_eq(config_defaults(&c, &d), PX_OK);
	cr_assert_str_eq(c.db, "/env/p.db");
	cr_assert_str_eq(c.control_socket, "/env/p.sock");

	unsetenv("PROTEUS_DB");
	unsetenv("PROTEUS_SOCKET");
	cr_assert_eq(config_defaults(&c, &d), PX_OK);
	cr_assert_str_eq(c.db, geteuid() ? "/data/px/proteus/proteus.db"
					 : "/var/lib/proteus/proteus.db");
	unsetenv("XDG_DATA_HOME");
	cr_assert_eq(config_defaults(&c, &d), PX_OK);
	cr_assert_str_eq(c.db, geteuid() ?
			 "/home/px/.local/share/proteus/proteus.db" :
			 "/var/lib/proteus/proteus.db");
	cr_assert_eq(d.n, 0);

	/* the file's value beats the default */
	cr_assert_eq(config_parse("t.conf", "db /f.db\n", 9, &c, &d), PX_OK);
	cr_assert_str_eq(c.db, "/f.db");

	/* no HOME and not root: no default, and a message saying so */
	if (geteuid()) {
		unsetenv("HOME");
		cr_assert_eq(config_defaults(&c, &d), PX_EINVAL);
		cr_assert(has_msg(&d, "'db': no default: set PROTEUS_DB or "
				  "HOME"));
	}
	config_diag_release(&d);
}
