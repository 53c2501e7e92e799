/* test_config.c -- proteusd's config table: defaults, the parser (every
 * error collected, each naming file:line: 'key'), reload rules, formats. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../agent/config.h"
#include "../../agent/proto.h"
#include "../../agent/world/ec2_world.h"
#include "../../bidbrain/arbiter.h"
#include "../../common/log.h"
#include "../integration/pxrun.h"

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
	cr_assert_str_eq(c.world, "local");
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
	cr_assert_str_eq(c.world, "local");
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

/* `world` is the world of jobs whose spec names none: local or ec2;
 * sim is refused with its reason rather than accepted and ignored. */
Test(config, world_is_the_default_world_of_jobs)
{
	struct proteusd_config c;
	struct config_diag d = {0};

	cr_assert_eq(parse("world local\n", &c, &d), PX_OK);
	cr_assert_str_eq(c.world, "local");
	cr_assert_eq(parse("region eu-west-1\nworld ec2\n", &c, &d), PX_OK);
	cr_assert_str_eq(c.world, "ec2");
	cr_assert_eq(parse("world sim\n", &c, &d), PX_EINVAL);
	cr_assert(has_msg(&d, "t.conf:1: 'world': 'sim' is no world for "
			      "jobs"));
	config_diag_release(&d);
	cr_assert_eq(parse("world mars\n", &c, &d), PX_EINVAL);
	cr_assert_eq(d.n, 1);
	cr_assert_str_eq(d.msgs[0], "t.conf:1: 'world': 'mars' is not one of "
			 "local, ec2", "only what is accepted is listed");
	config_diag_release(&d);
	cr_assert_eq(parse("region eu-west-1\n", &c, &d), PX_OK);
	cr_assert_str_eq(c.world, "local", "the registry's first daemon world");
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

/* ---- the ec2 world's keys ---- */

/* A configuration the ec2 world runs with (the keys config_ec2_check
 * needs, and the optional ones). */
#define EC2_GOOD                                                          \
	"world ec2\n"                                                     \
	"region us-east-1\n"                                              \
	"ec2_ami ami-0123456789abcdef0\n"                                 \
	"ec2_subnets us-east-1a=subnet-0123456789abcdef0, "               \
	"us-east-1b=subnet-89abcdef\n"                                    \
	"ec2_security_groups sg-01234567,sg-0123456789abcdef0\n"          \
	"ec2_instance_profile proteus-node\n"                             \
	"ec2_key_name ops key 2024\n"                                     \
	"head_address localhost\n"                                         \
	"trainer_ports 40000-40063\n"                                     \
	"ec2_endpoint https://ec2.us-east-1.amazonaws.com\n"              \
	"ec2_node_trainer /opt/proteus/bin/proteus-trainer\n"             \
	"ec2_identity_cert /etc/proteus/aws-identity.pem\n"               \
	"ec2_price_poll_s 600\n"

/* A self-signed RSA-2048 certificate in PEM, written once per process
 * (as the region's AWS certificate would be); its path. */
static char cert_path[64];

static void cert_gone(void)
{
	if (cert_path[0])
		unlink(cert_path);
}

static const char *test_cert(void)
{
	char *path = cert_path;
	int fd;

	if (path[0])
		return path;
	snprintf(path, sizeof cert_path, "/tmp/px-config-cert-XXXXXX");
	fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	close(fd);
	atexit(cert_gone);
	cr_assert_eq(px_test_cert(path), 0);
	return path;
}

/* c, read from EC2_GOOD, with a certificate this process reads (the
 * file's path names none). */
static void cert_ready(struct proteusd_config *c)
{
	snprintf(c->ec2_identity_cert, sizeof c->ec2_identity_cert, "%s",
		 test_cert());
}

Test(config, ec2_keys_defaults)
{
	struct proteusd_config c;
	struct config_diag d = {0};
	struct px_error err = {0};

	cr_assert_eq(config_defaults(&c, &d), PX_OK);
	cr_assert_str_eq(c.ec2_ami, "");
	cr_assert_str_eq(c.ec2_subnets, "");
	cr_assert_eq(c.ec2_subnet_count, 0);
	cr_assert_eq(c.ec2_sg_count, 0);
	cr_assert_str_eq(c.ec2_instance_profile, "");
	cr_assert_str_eq(c.ec2_key_name, "");
	cr_assert_str_eq(c.head_address, "");
	cr_assert_str_eq(c.trainer_ports, "28000-28999");
	cr_assert_eq(c.trainer_port_lo, 28000);
	cr_assert_eq(c.trainer_port_hi, 28999);
	cr_assert_str_eq(c.ec2_endpoint, "");
	cr_assert_str_eq(c.ec2_node_trainer, "/usr/local/bin/proteus-trainer");
	cr_assert_eq(c.ec2_price_poll_s, 300);
	cr_assert_eq(c.ec2_call_timeout_s, 10);
	cr_assert_eq(c.ec2_clock_speedup, 1);
	cr_assert_eq(c.ec2_clock_origin, 0);
	/* string bounds match the fields they fill */
#define FIELD_FITS(key, f)                                                \
	cr_assert_eq(config_key_find(key)->max + 1, (int64_t)sizeof(c.f), key)
	FIELD_FITS("ec2_ami", ec2_ami);
	FIELD_FITS("ec2_subnets", ec2_subnets);
	FIELD_FITS("ec2_security_groups", ec2_security_groups);
	FIELD_FITS("ec2_instance_profile", ec2_instance_profile);
	FIELD_FITS("ec2_key_name", ec2_key_name);
	FIELD_FITS("head_address", head_address);
	FIELD_FITS("trainer_ports", trainer_ports);
	FIELD_FITS("ec2_endpoint", ec2_endpoint);
	FIELD_FITS("ec2_node_trainer", ec2_node_trainer);
	FIELD_FITS("ec2_identity_cert", ec2_identity_cert);
#undef FIELD_FITS
	/* the defaults are not enough for the ec2 world */
	cr_assert_eq(config_ec2_check(&c, &err), PX_EINVAL);
	cr_assert(!strncmp(err.msg, "ec2_ami is not set: the ec2 world needs "
			   "the image its instances boot; ", 70), "%s",
		  err.msg);
	cr_assert(strstr(err.msg, "; ec2_identity_cert is not set"), "%s",
		  err.msg);
}

Test(config, ec2_keys_good)
{
	struct proteusd_config c, copy;
	struct config_diag d = {0};
	struct px_error err = {0};
	enum px_err r = parse(EC2_GOOD, &c, &d);

	dump(&d);
	cr_assert_eq(r, PX_OK);
	cr_assert_str_eq(c.world, "ec2");
	cr_assert_str_eq(c.ec2_ami, "ami-0123456789abcdef0");
	cr_assert_eq(c.ec2_subnet_count, 2);
	cr_assert_str_eq(c.ec2_subnet[0].zone, "us-east-1a");
	cr_assert_str_eq(c.ec2_subnet[0].subnet, "subnet-0123456789abcdef0");
	cr_assert_str_eq(c.ec2_subnet[1].zone, "us-east-1b");
	cr_assert_str_eq(c.ec2_subnet[1].subnet, "subnet-89abcdef");
	cr_assert_str_eq(config_ec2_subnet(&c, "us-east-1b"),
			 "subnet-89abcdef");
	cr_assert_null(config_ec2_subnet(&c, "us-east-1c"));
	cr_assert_eq(c.ec2_sg_count, 2);
	cr_assert_str_eq(c.ec2_sg[0], "sg-01234567");
	cr_assert_str_eq(c.ec2_sg[1], "sg-0123456789abcdef0");
	cr_assert_str_eq(c.ec2_instance_profile, "proteus-node");
	cr_assert_not(c.ec2_instance_profile_is_arn);
	cr_assert_str_eq(c.ec2_key_name, "ops key 2024");
	cr_assert_str_eq(c.head_address, "localhost");
	cr_assert_eq(c.trainer_port_lo, 40000);
	cr_assert_eq(c.trainer_port_hi, 40063);
	cr_assert_str_eq(c.ec2_endpoint, "https://ec2.us-east-1.amazonaws.com");
	cr_assert_str_eq(c.ec2_node_trainer,
			 "/opt/proteus/bin/proteus-trainer");
	cr_assert_eq(c.ec2_price_poll_s, 600);
	cr_assert_str_eq(c.ec2_identity_cert, "/etc/proteus/aws-identity.pem");
	cert_ready(&c);
	cr_assert_eq(config_ec2_check(&c, &err), PX_OK, "%s", err.msg);
	/* plain values: a copy by assignment is whole */
	copy = c;
	cr_assert_str_eq(copy.ec2_subnet[1].subnet, "subnet-89abcdef");
	cr_assert_eq(config_ec2_check(&copy, &err), PX_OK, "%s", err.msg);

	/* more good values, one key at a time */
	static const char *const good[] = {
		"region us-gov-west-1\n",
		"region ap-southeast-2\n",
		"ec2_ami ami-89abcdef\n",
		"ec2_subnets us-west-2-lax-1a=subnet-01234567\n",
		"ec2_instance_profile arn:aws:iam::123456789012:"
		"instance-profile/proteus-node\n",
		"ec2_instance_profile arn:aws-cn:iam::123456789012:"
		"instance-profile/team/a/node+1@x\n",
		"head_address 10.0.0.5\n",
		"head_address fd00::5\n",
		"head_address localhost\n",
		"trainer_ports 1024-65535\n",
		"trainer_ports 65472-65535\n",
		"ec2_endpoint http://127.0.0.1:8080/\n",
		"ec2_endpoint http://[::1]:8080\n",
		"ec2_endpoint https://vpce-1.ec2.us-east-1.vpce.amazonaws.com"
		"/x/y\n",
		"ec2_price_poll_s 60\n",
		"ec2_price_poll_s 3600\n",
		"ec2_call_timeout_s 1\n",
		"ec2_call_timeout_s 300\n",
		"ec2_clock_speedup 1200\n",
		"ec2_clock_origin 1456790400\n",
		"ec2_key_name \"\"\n",
		"ec2_subnets \"\"\n",
	};
	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
		r = parse(good[i], &c, &d);
		dump(&d);
		cr_assert_eq(r, PX_OK, "%s", good[i]);
		config_diag_release(&d);
	}
	cr_assert_eq(parse(good[4], &c, &d), PX_OK);
	cr_assert(c.ec2_instance_profile_is_arn);
}

/* Every bad value: refused at load, the message naming the file, the
 * line, the key and the value. */
Test(config, ec2_keys_bad)
{
	static const struct {
		const char *line;
		const char *says;
	} bad[] = {
		{"region local", "'region': 'local' is not a region name"},
		{"region us-east", "'region': 'us-east' is not a region name"},
		{"region US-EAST-1", "'region': 'US-EAST-1' is not a region"},
		{"region us-east-1a", "'region': 'us-east-1a' is not a region"},
		{"ec2_ami ami-0123", "'ec2_ami': 'ami-0123' is not an image id"},
		{"ec2_ami ami-0123456789ABCDEF0", "'ec2_ami': "
		 "'ami-0123456789ABCDEF0' is not an image id"},
		{"ec2_ami img-01234567", "'ec2_ami': 'img-01234567' is not"},
		{"ec2_subnets us-east-1a", "'ec2_subnets': item 1 'us-east-1a' "
		 "is not ZONE=subnet-ID"},
		{"ec2_subnets us-east-1a=subnet-01234567,",
		 "'ec2_subnets': item 2 '' is not ZONE=subnet-ID"},
		{"ec2_subnets east=subnet-01234567", "'ec2_subnets': 'east' is "
		 "not a zone name"},
		{"ec2_subnets us-east-1a=subnet-0123",
		 "'ec2_subnets': 'subnet-0123' is not a subnet id"},
		{"ec2_subnets us-east-1a=subnet-01234567,us-east-1a="
		 "subnet-89abcdef", "'ec2_subnets': zone 'us-east-1a' is given "
		 "twice"},
		{"ec2_security_groups sg-01234567,default",
		 "'ec2_security_groups': 'default' is not a security group id"},
		{"ec2_security_groups sg-01234567,sg-01234567",
		 "'ec2_security_groups': 'sg-01234567' is given twice"},
		{"ec2_instance_profile my profile",
		 "'ec2_instance_profile': 'my profile' is not an instance "
		 "profile name"},
		{"ec2_instance_profile arn:aws:iam::1234:instance-profile/x",
		 "'ec2_instance_profile': 'arn:aws:iam::1234:instance-profile/x'"
		 " is not an instance profile ARN"},
		{"ec2_instance_profile arn:aws:iam::123456789012:role/x",
		 "is not an instance profile ARN"},
		{"ec2_key_name k\x01y", "'ec2_key_name': a key pair name is "
		 "printable ASCII; byte 1"},
		{"head_address -bad-.example", "'head_address': '-bad-.example' "
		 "is not a host name or an IP address"},
		{"head_address 10.0.0.256", "'head_address': '10.0.0.256' is "
		 "not a host name"},
		{"head_address [fd00::5]", "(an IPv6 address goes without "
		 "brackets)"},
		{"head_address 0.0.0.0", "'head_address': '0.0.0.0' is the "
		 "unspecified address"},
		{"head_address ::", "'head_address': '::' is the unspecified "
		 "address"},
		{"trainer_ports 40000", "'trainer_ports': '40000' is not a port "
		 "range LO-HI"},
		{"trainer_ports 80-1000", "'trainer_ports': '80-1000': ports "
		 "must be in 1024..65535"},
		{"trainer_ports 40000-39999", "'trainer_ports': '40000-39999': "
		 "ports must be"},
		{"trainer_ports 40000-40062", "'trainer_ports': '40000-40062' is "
		 "63 ports; it takes at least 64"},
		{"trainer_ports 65500-70000", "'trainer_ports': '65500-70000': "
		 "ports must be in 1024..65535"},
		{"ec2_endpoint ftp://x", "'ec2_endpoint': 'ftp://x' is not an "
		 "http:// or https:// URL"},
		{"ec2_endpoint https://", "'ec2_endpoint': 'https://': no host "
		 "name"},
		{"ec2_endpoint http://127.0.0.1:0", "'ec2_endpoint': "
		 "'http://127.0.0.1:0': the port is not in 1..65535"},
		{"ec2_endpoint http://127.0.0.1:99999",
		 "the port is not in 1..65535"},
		{"ec2_endpoint http://127.0.0.1:80a/", "the port is not in"},
		{"ec2_endpoint http://[::1", "'http://[::1': no host name"},
		{"ec2_endpoint http://[::1]x", "'http://[::1]x': no host name"},
		{"ec2_endpoint http://[nope]:80", "no host name"},
		{"ec2_endpoint https://AKIA:secret@ec2.example",
		 "'ec2_endpoint': the URL holds a user or password"},
		{"ec2_node_trainer bin/proteus-trainer", "'ec2_node_trainer': "
		 "'bin/proteus-trainer' is not an absolute path"},
		{"ec2_node_trainer /opt/x;reboot", "'ec2_node_trainer': "
		 "'/opt/x;reboot': only letters, digits and ._+-/"},
		{"ec2_price_poll_s 59", "'ec2_price_poll_s': 59 is outside "
		 "60..3600"},
		{"ec2_price_poll_s 3601", "'ec2_price_poll_s': 3601 is outside"},
		{"ec2_call_timeout_s 0", "'ec2_call_timeout_s': 0 is outside "
		 "1..300"},
		{"ec2_call_timeout_s 301", "'ec2_call_timeout_s': 301 is "
		 "outside"},
		{"ec2_clock_speedup 0", "'ec2_clock_speedup': 0 is outside "
		 "1..1200"},
		{"ec2_clock_speedup 1201", "'ec2_clock_speedup': 1201 is "
		 "outside"},
		{"ec2_clock_origin -1", "'ec2_clock_origin': -1 is outside 0.."},
		{"ec2_clock_origin soon", "'ec2_clock_origin': 'soon' is not an "
		 "integer"},
	};

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct proteusd_config c;
		struct config_diag d = {0};
		char text[512], want[600];

		/* on line 2, after a good line */
		snprintf(text, sizeof text, "log_level info\n%s\n",
			 bad[i].line);
		snprintf(want, sizeof want, "t.conf:2: ");
		cr_assert_eq(parse(text, &c, &d), PX_EINVAL, "%s",
			     bad[i].line);
		if (d.n != 1 || !strstr(d.msgs[0], bad[i].says) ||
		    strncmp(d.msgs[0], want, strlen(want)))
			dump(&d);
		cr_assert_eq(d.n, 1, "%s", bad[i].line);
		cr_assert(strstr(d.msgs[0], bad[i].says), "%s: got '%s'",
			  bad[i].line, d.msgs[0]);
		cr_assert(!strncmp(d.msgs[0], want, strlen(want)), "%s",
			  d.msgs[0]);
		config_diag_release(&d);
	}
}

/* "KEY item0,item1,...": n items of fmt, given the index twice. */
static const char *list_line(char *buf, size_t len, const char *key,
			     const char *fmt, int n)
{
	size_t off = (size_t)snprintf(buf, len, "%s ", key);

	for (int i = 0; i < n && off < len; i++) {
		if (i)
			buf[off++] = ',';
		off += (size_t)snprintf(buf + off, len - off, fmt, i, i);
	}
	snprintf(buf + off, len - off, "\n");
	return buf;
}

Test(config, ec2_lists_are_bounded)
{
	struct proteusd_config c;
	struct config_diag d = {0};
	char text[4096];

	list_line(text, sizeof text, "ec2_subnets",
		  "us-east-1-z%02d=subnet-%08x", CONFIG_EC2_SUBNETS_MAX);
	cr_assert_eq(parse(text, &c, &d), PX_OK);
	cr_assert_eq(c.ec2_subnet_count, CONFIG_EC2_SUBNETS_MAX);
	cr_assert_str_eq(c.ec2_subnet[15].zone, "us-east-1-z15");
	cr_assert_str_eq(c.ec2_subnet[15].subnet, "subnet-0000000f");
	list_line(text, sizeof text, "ec2_subnets",
		  "us-east-1-z%02d=subnet-%08x", CONFIG_EC2_SUBNETS_MAX + 1);
	cr_assert_eq(parse(text, &c, &d), PX_EINVAL);
	cr_assert(has_msg(&d, "t.conf:1: 'ec2_subnets': more than 16 zones"));
	config_diag_release(&d);

	list_line(text, sizeof text, "ec2_security_groups", "sg-%08x",
		  CONFIG_EC2_SGS_MAX);
	cr_assert_eq(parse(text, &c, &d), PX_OK);
	cr_assert_eq(c.ec2_sg_count, CONFIG_EC2_SGS_MAX);
	list_line(text, sizeof text, "ec2_security_groups", "sg-%08x",
		  CONFIG_EC2_SGS_MAX + 1);
	cr_assert_eq(parse(text, &c, &d), PX_EINVAL);
	cr_assert(has_msg(&d, "'ec2_security_groups': more than 8 security "
			      "groups"));
	config_diag_release(&d);
}

/* What the ec2 world needs, one key missing or wrong at a time: the
 * error names the key. */
Test(config, ec2_check_names_the_key)
{
	static const struct {
		const char *line; /* replaces the key's line of EC2_GOOD */
		const char *key;
		const char *says;
	} miss[] = {
		{"ec2_ami \"\"", "ec2_ami", "ec2_ami is not set: the ec2 world "
		 "needs the image its instances boot"},
		{"ec2_subnets \"\"", "ec2_subnets", "ec2_subnets is not set"},
		{"ec2_subnets eu-west-1a=subnet-01234567", "ec2_subnets",
		 "ec2_subnets: zone 'eu-west-1a' is not in region 'us-east-1'"},
		{"ec2_subnets us-east-1a=subnet-01234567,us-east-11a="
		 "subnet-89abcdef", "ec2_subnets", "zone 'us-east-11a' is not "
		 "in region 'us-east-1'"},
		{"ec2_security_groups \"\"", "ec2_security_groups",
		 "ec2_security_groups is not set"},
		{"ec2_instance_profile \"\"", "ec2_instance_profile",
		 "ec2_instance_profile is not set"},
		{"head_address \"\"", "head_address", "head_address is not set: "
		 "the ec2 world needs the address its nodes reach this head "
		 "node at"},
		{"ec2_identity_cert \"\"", "ec2_identity_cert",
		 "ec2_identity_cert is not set: the ec2 world needs the "
		 "region's AWS RSA-2048 certificate"},
		{"ec2_endpoint \"\"\nec2_clock_speedup 60", "ec2_endpoint",
		 "ec2_clock_speedup is 60: a clock speed-up is for a fake EC2 "
		 "only"},
		{"ec2_endpoint \"\"\nec2_clock_origin 1456790400",
		 "ec2_endpoint", "ec2_clock_origin is 1456790400: a clock "
		 "origin is for a fake EC2 only"},
	};

	unsetenv("AWS_ENDPOINT_URL_EC2");
	unsetenv("AWS_ENDPOINT_URL");
	for (size_t i = 0; i < sizeof miss / sizeof miss[0]; i++) {
		struct proteusd_config c;
		struct config_diag d = {0};
		struct px_error err = {0};
		char text[2048] = "", *line, *save = NULL, copy[2048];
		size_t klen = strlen(miss[i].key);

		/* EC2_GOOD without the key's line, then the replacement */
		snprintf(copy, sizeof copy, "%s", EC2_GOOD);
		for (line = strtok_r(copy, "\n", &save); line;
		     line = strtok_r(NULL, "\n", &save))
			if (strncmp(line, miss[i].key, klen) ||
			    line[klen] != ' ')
				snprintf(text + strlen(text),
					 sizeof text - strlen(text), "%s\n",
					 line);
		snprintf(text + strlen(text), sizeof text - strlen(text),
			 "%s\n", miss[i].line);
		cr_assert_eq(parse(text, &c, &d), PX_OK, "%s", text);
		cr_assert_eq(config_ec2_check(&c, &err), PX_EINVAL, "%s",
			     miss[i].line);
		cr_assert(strstr(err.msg, miss[i].says), "%s: got '%s'",
			  miss[i].line, err.msg);
	}
	/* the key is optional, the environment names the fake */
	{
		struct proteusd_config c;
		struct config_diag d = {0};
		struct px_error err = {0};

		cr_assert_eq(parse(EC2_GOOD "ec2_key_name \"\"\n", &c, &d),
			     PX_EINVAL, "ec2_key_name given twice");
		config_diag_release(&d);
		cr_assert_eq(parse(EC2_GOOD "ec2_clock_speedup 60\n", &c, &d),
			     PX_OK);
		cert_ready(&c);
		cr_assert_eq(config_ec2_check(&c, &err), PX_OK, "%s",
			     err.msg);
		c.ec2_endpoint[0] = '\0';
		c.ec2_key_name[0] = '\0';
		setenv("AWS_ENDPOINT_URL_EC2", "http://127.0.0.1:9", 1);
		cr_assert_eq(config_ec2_check(&c, &err), PX_OK, "%s",
			     err.msg);
		unsetenv("AWS_ENDPOINT_URL_EC2");
		cr_assert_eq(config_ec2_check(&c, &err), PX_EINVAL);
	}
}

/* Every problem of the ec2 world, not only the first: one round of
 * fixes.  The certificate is read (a missing, unreadable or non-PEM one
 * is a problem), head_address resolved and bound to (a name that does
 * not resolve, an address of another host). */
Test(config, ec2_check_lists_every_problem)
{
	static const char *const says[] = {
		"ec2_ami is not set", "ec2_subnets is not set",
		"ec2_security_groups is not set",
		"ec2_instance_profile is not set", "head_address is not set",
		"ec2_identity_cert is not set",
		"ec2_clock_speedup is 60: a clock speed-up is for a fake EC2",
	};
	struct proteusd_config c;
	struct config_diag d = {0};
	struct px_error err = {0};
	char dir[] = "/tmp/px-config-XXXXXX", path[64], bind[64];
	FILE *f;

	unsetenv("AWS_ENDPOINT_URL_EC2");
	unsetenv("AWS_ENDPOINT_URL");
	cr_assert_eq(parse("world ec2\nec2_clock_speedup 60\n", &c, &d),
		     PX_OK);
	cr_assert_eq(config_ec2_problems(&c, &d), 7);
	cr_assert_eq(config_ec2_check(&c, &err), PX_EINVAL);
	for (size_t i = 0; i < sizeof says / sizeof says[0]; i++) {
		cr_assert(has_msg(&d, says[i]), "%s", says[i]);
		cr_assert(strstr(err.msg, says[i]), "%s: %s", says[i],
			  err.msg);
	}
	config_diag_release(&d);

	/* the certificate is read, not only named */
	cr_assert_eq(parse(EC2_GOOD, &c, &d), PX_OK);
	cr_assert_eq(config_ec2_problems(&c, &d), 1);
	cr_assert(has_msg(&d, "ec2_identity_cert: /etc/proteus/aws-identity"
			  ".pem: "), "%s", d.msgs[0]);
	config_diag_release(&d);
	cr_assert_not_null(mkdtemp(dir));
	snprintf(c.ec2_identity_cert, sizeof c.ec2_identity_cert, "%s", dir);
	cr_assert_eq(config_ec2_check(&c, &err), PX_EINVAL);
	cr_assert(strstr(err.msg, "ec2_identity_cert: "), "%s", err.msg);
	snprintf(path, sizeof path, "%s/not.pem", dir);
	f = fopen(path, "w");
	cr_assert_not_null(f);
	fputs("-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydA==\n"
	      "-----END CERTIFICATE-----\n", f);
	fclose(f);
	snprintf(c.ec2_identity_cert, sizeof c.ec2_identity_cert, "%s", path);
	cr_assert_eq(config_ec2_check(&c, &err), PX_EINVAL);
	cr_assert(strstr(err.msg, "not.pem: not a PEM certificate"), "%s",
		  err.msg);
	/* unreadable to the daemon's user (as root: checked as nobody) */
	cert_ready(&c);
	cr_assert_eq(config_ec2_check(&c, &err), PX_OK, "%s", err.msg);
	if (geteuid() == 0) {
		snprintf(path, sizeof path, "%s/secret.pem", dir);
		cr_assert_eq(link(test_cert(), path), 0);
		cr_assert_eq(chmod(path, 0600), 0);
		snprintf(c.ec2_identity_cert, sizeof c.ec2_identity_cert,
			 "%s", path);
		cr_assert_eq(chmod(dir, 0755), 0);
		pid_t pid = fork();
		int st = 0;

		if (pid == 0) {
			struct px_error e2 = {0};

			if (setgid(65534) || setuid(65534))
				_exit(2);
			_exit(config_ec2_check(&c, &e2) == PX_EINVAL &&
			      strstr(e2.msg, "secret.pem: ") &&
			      strstr(e2.msg, "ermission denied") ? 0 : 1);
		}
		cr_assert_gt(pid, 0);
		cr_assert_eq(waitpid(pid, &st, 0), pid);
		cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0,
			  "as nobody: status %d", st);
		unlink(path);
		cert_ready(&c);
	}
	snprintf(path, sizeof path, "%s/not.pem", dir);
	unlink(path);
	rmdir(dir);

	/* head_address: resolved, and an address of this host */
	cr_assert_eq(config_head_bind(&c, bind, sizeof bind, &err), PX_OK,
		     "%s", err.msg);
	cr_assert_str_eq(bind, "127.0.0.1");
	snprintf(c.head_address, sizeof c.head_address, "127.0.0.1");
	cr_assert_eq(config_head_bind(&c, bind, sizeof bind, &err), PX_OK,
		     "%s", err.msg);
	cr_assert_str_eq(bind, "127.0.0.1");
	snprintf(c.head_address, sizeof c.head_address, "no-such-host.invalid");
	cr_assert_eq(config_ec2_check(&c, &err), PX_EINVAL);
	cr_assert(strstr(err.msg, "head_address 'no-such-host.invalid' does "
			 "not resolve to an IPv4 address here"), "%s",
		  err.msg);
	/* TEST-NET-1: no host's */
	snprintf(c.head_address, sizeof c.head_address, "192.0.2.1");
	cr_assert_eq(config_ec2_check(&c, &err), PX_EINVAL);
	cr_assert(strstr(err.msg, "head_address '192.0.2.1' is not an "
			 "address of this host"), "%s", err.msg);
}

/* metrics_listen on every interface is valid but likely not meant: a
 * warning (logged at start and by --check-config). */
Test(config, metrics_listen_everywhere_is_warned)
{
	static const struct {
		const char *line;
		size_t n;
	} cases[] = {
		{"metrics_listen 0.0.0.0:9464\n", 1},
		{"metrics_listen [::]:9464\n", 1},
		{"metrics_listen 127.0.0.1:9464\n", 0},
		{"metrics_listen 10.0.1.20:9464\n", 0},
		{"", 0},
	};

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct proteusd_config c;
		struct config_diag d = {0};

		cr_assert_eq(parse(cases[i].line, &c, &d), PX_OK, "%s",
			     cases[i].line);
		cr_assert_eq(config_warnings(&c, &d), cases[i].n, "%s",
			     cases[i].line);
		if (cases[i].n)
			cr_assert(has_msg(&d, "is served on every interface"),
				  "%s", cases[i].line);
		config_diag_release(&d);
	}
}

/* The ec2 keys need a restart, but the poll period; what a list parses
 * into stays with its string. */
Test(config, ec2_keys_reload)
{
	struct proteusd_config cur, next;
	struct config_diag d = {0};

	cr_assert_eq(parse(EC2_GOOD, &cur, &d), PX_OK);
	cr_assert_eq(parse("world ec2\nec2_ami ami-89abcdef\n"
			   "ec2_subnets us-east-1c=subnet-01234567\n"
			   "ec2_price_poll_s 120\n", &next, &d), PX_OK);
	cr_assert_eq(config_reload(&cur, &next, &d), 1, "the poll period");
	cr_assert_eq(cur.ec2_price_poll_s, 120);
	cr_assert_str_eq(cur.ec2_ami, "ami-0123456789abcdef0");
	cr_assert_eq(cur.ec2_subnet_count, 2);
	cr_assert_str_eq(cur.ec2_subnet[0].zone, "us-east-1a");
	cr_assert(has_msg(&d, "'ec2_ami' cannot change"));
	cr_assert(has_msg(&d, "'ec2_subnets' cannot change"));
	config_diag_release(&d);
}

/* --print-config's form of every ec2 key reads back the same, lists
 * and all. */
Test(config, ec2_keys_format_round_trip)
{
	struct proteusd_config a, b;
	struct config_diag d = {0};
	size_t n;
	const struct config_key *k = config_keys(&n);
	char text[16384], val[CONFIG_PATH_MAX];
	size_t len = 0;

	cr_assert_eq(parse(EC2_GOOD, &a, &d), PX_OK);
	for (size_t i = 0; i < n; i++) {
		config_format(&k[i], &a, val, sizeof(val));
		len += (size_t)snprintf(text + len, sizeof(text) - len,
					"%s %s\n", k[i].name, val);
	}
	cr_assert_eq(config_parse("fmt", text, len, &b, &d), PX_OK);
	for (size_t i = 0; i < n; i++)
		cr_assert(config_equal(&k[i], &a, &b), "'%s' differs",
			  k[i].name);
	cr_assert_eq(b.ec2_subnet_count, 2);
	cr_assert_eq(b.trainer_port_hi, 40063);
}

/* metrics_listen: off by default; a numeric address and a port, parsed
 * beside the text; anything else refused naming the key. */
Test(config, metrics_listen)
{
	static const struct {
		const char *val, *host;
		int port;
	} good[] = {
		{ "127.0.0.1:9464", "127.0.0.1", 9464 },
		{ "[::1]:9464", "::1", 9464 },
		{ "0.0.0.0:1", "0.0.0.0", 1 },
		{ "[fe80::1]:65535", "fe80::1", 65535 },
	};
	static const char *const bad[] = {
		"localhost:9464", "127.0.0.1", "127.0.0.1:", "127.0.0.1:0",
		"127.0.0.1:65536", "::1:9464", "[::1]", "[127.0.0.1]:80",
		"127.0.0.1:9464x", "1.2.3:80", "[::1]:123456",
	};
	struct proteusd_config c;
	struct config_diag d = {0};
	char text[128];

	cr_assert_eq(config_defaults(&c, &d), PX_OK);
	cr_assert_str_eq(c.metrics_listen, "");
	cr_assert_eq(c.metrics_port, 0);
	cr_assert_eq(c.metrics_timeout_ms, 10000);
	for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
		snprintf(text, sizeof text, "metrics_listen %s\n",
			 good[i].val);
		cr_assert_eq(parse(text, &c, &d), PX_OK, "%s", good[i].val);
		cr_assert_str_eq(c.metrics_host, good[i].host);
		cr_assert_eq(c.metrics_port, good[i].port);
	}
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		snprintf(text, sizeof text, "metrics_listen %s\n", bad[i]);
		cr_assert_eq(parse(text, &c, &d), PX_EINVAL, "%s", bad[i]);
		cr_assert(has_msg(&d, "t.conf:1: 'metrics_listen': "), "%s",
			  bad[i]);
		config_diag_release(&d);
	}
}

/* The pool's keys (docs/pool.md): no limits by default, the arbiter's
 * own defaults; the limits parsed beside their text into pool_limits. */
Test(config, pool_keys_defaults)
{
	struct proteusd_config c;
	struct config_diag d = {0};
	const struct config_key *k;

	cr_assert_eq(config_defaults(&c, &d), PX_OK);
	cr_assert_str_eq(c.pool_spot_vcpus, "none");
	cr_assert_str_eq(c.pool_ondemand_vcpus, "none");
	cr_assert_str_eq(c.pool_usd_per_hour, "none");
	cr_assert_not(pool_limits_any(&c.pool_limits));
	cr_assert_eq(c.pool_limits.uusd_per_hour, -1);
	cr_assert_eq(c.pool_lease_seconds, 3600);
	cr_assert_str_eq(c.pool_fairness, "0.8");
	cr_assert_eq(c.pool_fairness_f, ARB_FAIRNESS_DEFAULT);
	cr_assert_eq(c.pool_arbiter, ARB_FINISH_TIME);
	/* the choices are the arbiter's own names, every one of them */
	k = config_key_find("pool_arbiter");
	cr_assert_not_null(k);
	for (int i = 0; i < ARB_KINDS; i++) {
		cr_assert_str_eq(k->choices[i].name, arb_name(i));
		cr_assert_eq(k->choices[i].value, i);
	}
	cr_assert_null(k->choices[ARB_KINDS].name);
#define FIELD_FITS(key, f)                                                \
	cr_assert_eq(config_key_find(key)->max + 1, (int64_t)sizeof(c.f), key)
	FIELD_FITS("pool_spot_vcpus", pool_spot_vcpus);
	FIELD_FITS("pool_ondemand_vcpus", pool_ondemand_vcpus);
	FIELD_FITS("pool_usd_per_hour", pool_usd_per_hour);
	FIELD_FITS("pool_fairness", pool_fairness);
#undef FIELD_FITS
	/* every help says where the rest is */
	for (const char *const *n = (const char *const[]){
		     "pool_spot_vcpus", "pool_ondemand_vcpus",
		     "pool_usd_per_hour", "pool_lease_seconds",
		     "pool_fairness", "pool_arbiter", NULL}; *n; n++)
		cr_assert(strstr(config_key_find(*n)->help,
				 "(see docs/pool.md)"), "%s", *n);
}

Test(config, pool_keys_good)
{
	struct proteusd_config c;
	struct config_diag d = {0};
	char buf[CONFIG_POOL_LIMIT_MAX];
	enum px_err r;

	r = parse("pool_spot_vcpus 128,standard=64,g=16\n"
		  "pool_ondemand_vcpus p=0\n"
		  "pool_usd_per_hour 12.5\n"
		  "pool_lease_seconds 600\n"
		  "pool_fairness 0.5\n"
		  "pool_arbiter max-min\n", &c, &d);
	dump(&d);
	cr_assert_eq(r, PX_OK);
	cr_assert_str_eq(c.pool_spot_vcpus, "128,standard=64,g=16");
	cr_assert_eq(c.pool_limits.spot.total, 128);
	cr_assert_eq(c.pool_limits.spot.group[POOL_G_STANDARD], 64);
	cr_assert_eq(c.pool_limits.spot.group[POOL_G_G], 16);
	cr_assert_eq(c.pool_limits.spot.group[POOL_G_P], -1);
	cr_assert_eq(c.pool_limits.ondemand.total, -1);
	cr_assert_eq(c.pool_limits.ondemand.group[POOL_G_P], 0);
	cr_assert_eq(c.pool_limits.uusd_per_hour, 12500000);
	cr_assert_eq(c.pool_lease_seconds, 600);
	cr_assert_eq(c.pool_fairness_f, 0.5);
	cr_assert_eq(c.pool_arbiter, ARB_MAX_MIN);
	pool_limit_format(&c.pool_limits.spot, buf, sizeof buf);
	cr_assert_str_eq(buf, "128,standard=64,g=16");

	/* one key at a time, over the defaults: what it parses into */
	static const struct {
		const char *line;
		int64_t uusd;
		double f;
	} one[] = {
		{"pool_usd_per_hour 0\n", 0, 0.8},
		{"pool_usd_per_hour 0.000001\n", 1, 0.8},
		{"pool_usd_per_hour 1000000\n", INT64_C(1000000000000), 0.8},
		{"pool_usd_per_hour 1000000.000000\n", INT64_C(1000000000000),
		 0.8},
		{"pool_usd_per_hour 007.25\n", 7250000, 0.8},
		{"pool_usd_per_hour none\n", -1, 0.8},
		{"pool_usd_per_hour \"\"\n", -1, 0.8},
		{"pool_fairness 1\n", -1, 1},
		{"pool_fairness 1.000\n", -1, 1},
		{"pool_fairness .25\n", -1, 0.25},
		{"pool_fairness 0.001\n", -1, 0.001},
		{"pool_spot_vcpus \"\"\n", -1, 0.8},
		{"pool_spot_vcpus 0\n", -1, 0.8},
		{"pool_spot_vcpus other=1000000000\n", -1, 0.8},
		{"pool_ondemand_vcpus none\n", -1, 0.8},
		{"pool_lease_seconds 60\n", -1, 0.8},
		{"pool_lease_seconds 86400\n", -1, 0.8},
		{"pool_arbiter fifo\n", -1, 0.8},
		{"pool_arbiter goodput\n", -1, 0.8},
		{"pool_arbiter finish-time\n", -1, 0.8},
	};
	for (size_t i = 0; i < sizeof one / sizeof one[0]; i++) {
		r = parse(one[i].line, &c, &d);
		dump(&d);
		cr_assert_eq(r, PX_OK, "%s", one[i].line);
		cr_assert_eq(c.pool_limits.uusd_per_hour, one[i].uusd, "%s",
			     one[i].line);
		cr_assert_eq(c.pool_fairness_f, one[i].f, "%s", one[i].line);
		config_diag_release(&d);
	}
	cr_assert_eq(parse("pool_spot_vcpus 0\n", &c, &d), PX_OK);
	cr_assert(pool_limit_any(&c.pool_limits.spot), "0 is a limit");
	cr_assert_eq(parse("pool_spot_vcpus \"\"\n", &c, &d), PX_OK);
	cr_assert_not(pool_limit_any(&c.pool_limits.spot), "\"\" is none");
}

/* Each bad value: refused at load, naming the file, the line, the key
 * and the bad part; the configuration is not written. */
Test(config, pool_keys_bad)
{
	static const struct {
		const char *line, *says;
	} bad[] = {
		{"pool_spot_vcpus gpu=4", "t.conf:1: 'pool_spot_vcpus': "
		 "'gpu=4': unknown quota group 'gpu' (standard, f, g, inf, p, "
		 "x, dl, trn, other)"},
		{"pool_spot_vcpus g=1,g=2", "t.conf:1: 'pool_spot_vcpus': "
		 "'g=1,g=2': group 'g' given twice"},
		{"pool_spot_vcpus 64,128", "t.conf:1: 'pool_spot_vcpus': "
		 "'64,128': two totals"},
		{"pool_spot_vcpus 12x", "t.conf:1: 'pool_spot_vcpus': '12x': "
		 "'12x' is not a count of vCPUs (0 to 1000000000) nor "
		 "GROUP=COUNT"},
		{"pool_spot_vcpus -1", "'pool_spot_vcpus': '-1': '-1' is not "
		 "a count of vCPUs"},
		{"pool_spot_vcpus standard=2000000000", "'pool_spot_vcpus': "
		 "'standard=2000000000': '2000000000' is not a count"},
		{"pool_spot_vcpus standard=", "'pool_spot_vcpus': "
		 "'standard=': '' is not a count"},
		{"pool_spot_vcpus 64,", "'pool_spot_vcpus': '64,': an empty "
		 "element"},
		{"pool_spot_vcpus ,,", "'pool_spot_vcpus': ',,': an empty "
		 "element"},
		{"pool_spot_vcpus standard=64, g=16", "'pool_spot_vcpus': "
		 "'standard=64, g=16': unknown quota group ' g'"},
		{"pool_ondemand_vcpus p=x", "t.conf:1: 'pool_ondemand_vcpus': "
		 "'p=x': 'x' is not a count"},
		{"pool_usd_per_hour -1", "t.conf:1: 'pool_usd_per_hour': '-1' "
		 "is not US dollars an hour, 0 to 1000000 with at most 6 "
		 "decimals (such as 12.5), nor none"},
		{"pool_usd_per_hour 1000000.000001", "'pool_usd_per_hour': "
		 "'1000000.000001' is not US dollars"},
		{"pool_usd_per_hour 0.0000001", "'pool_usd_per_hour': "
		 "'0.0000001' is not US dollars"},
		{"pool_usd_per_hour 1e3", "'pool_usd_per_hour': '1e3' is not"},
		{"pool_usd_per_hour 12.", "'pool_usd_per_hour': '12.' is not"},
		{"pool_usd_per_hour .5", "'pool_usd_per_hour': '.5' is not"},
		{"pool_usd_per_hour 1,5", "'pool_usd_per_hour': '1,5' is not"},
		{"pool_usd_per_hour $12", "'pool_usd_per_hour': '$12' is not"},
		{"pool_usd_per_hour inf", "'pool_usd_per_hour': 'inf' is not"},
		{"pool_lease_seconds 59", "t.conf:1: 'pool_lease_seconds': 59 "
		 "is outside 60..86400"},
		{"pool_lease_seconds 86401", "'pool_lease_seconds': 86401 is "
		 "outside 60..86400"},
		{"pool_lease_seconds 1h", "'pool_lease_seconds': '1h' is not "
		 "an integer"},
		{"pool_fairness 0", "t.conf:1: 'pool_fairness': '0' is not a "
		 "share of the jobs above 0 and at most 1 (a decimal such as "
		 "0.8)"},
		{"pool_fairness 0.0", "'pool_fairness': '0.0' is not a share"},
		{"pool_fairness 1.01", "'pool_fairness': '1.01' is not"},
		{"pool_fairness -0.5", "'pool_fairness': '-0.5' is not"},
		{"pool_fairness 80%", "'pool_fairness': '80%' is not"},
		{"pool_fairness 1e-1", "'pool_fairness': '1e-1' is not"},
		{"pool_fairness nan", "'pool_fairness': 'nan' is not"},
		{"pool_fairness .", "'pool_fairness': '.' is not"},
		{"pool_fairness \"\"", "'pool_fairness': length 0 is outside"},
		{"pool_arbiter themis", "t.conf:1: 'pool_arbiter': 'themis' is "
		 "not one of fifo, max-min, finish-time, goodput"},
		{"pool_arbiter", "t.conf:1: 'pool_arbiter': no value"},
	};
	struct proteusd_config c;
	struct config_diag d = {0};

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		memset(&c, 0x5a, sizeof c);
		cr_assert_eq(parse(bad[i].line, &c, &d), PX_EINVAL, "%s",
			     bad[i].line);
		if (!has_msg(&d, bad[i].says))
			dump(&d);
		cr_expect(has_msg(&d, bad[i].says), "%s", bad[i].line);
		cr_assert_eq(d.n, 1, "%s", bad[i].line);
		cr_assert_eq(((unsigned char *)&c)[0], 0x5a);
		config_diag_release(&d);
	}
	/* every one at once: one message each */
	cr_assert_eq(parse("pool_spot_vcpus y=1\npool_ondemand_vcpus 1,2\n"
			   "pool_usd_per_hour -1\npool_lease_seconds 0\n"
			   "pool_fairness 2\npool_arbiter x\n", &c, &d),
		     PX_EINVAL);
	if (d.n != 6)
		dump(&d);
	cr_assert_eq(d.n, 6);
	for (int i = 1; i <= 6; i++) {
		char at[32];

		snprintf(at, sizeof at, "t.conf:%d: 'pool_", i);
		cr_assert(has_msg(&d, at), "%s", at);
	}
	config_diag_release(&d);
}

/* SIGHUP applies them all; what a limit parses into comes along. */
Test(config, pool_keys_reload)
{
	struct proteusd_config cur, next;
	struct config_diag d = {0};

	cr_assert_eq(parse("pool_spot_vcpus 64\n", &cur, &d), PX_OK);
	cr_assert_eq(parse("pool_spot_vcpus standard=32\n"
			   "pool_ondemand_vcpus 16\n"
			   "pool_usd_per_hour 3\npool_lease_seconds 120\n"
			   "pool_fairness 1\npool_arbiter goodput\n", &next,
			   &d), PX_OK);
	cr_assert_eq(config_reload(&cur, &next, &d), 6);
	cr_assert_eq(d.n, 0);
	cr_assert_str_eq(cur.pool_spot_vcpus, "standard=32");
	cr_assert_eq(cur.pool_limits.spot.total, -1);
	cr_assert_eq(cur.pool_limits.spot.group[POOL_G_STANDARD], 32);
	cr_assert_eq(cur.pool_limits.ondemand.total, 16);
	cr_assert_eq(cur.pool_limits.uusd_per_hour, 3000000);
	cr_assert_eq(cur.pool_lease_seconds, 120);
	cr_assert_eq(cur.pool_fairness_f, 1);
	cr_assert_eq(cur.pool_arbiter, ARB_GOODPUT);
	/* back to the defaults */
	cr_assert_eq(parse("", &next, &d), PX_OK);
	cr_assert_eq(config_reload(&cur, &next, &d), 6);
	cr_assert_not(pool_limits_any(&cur.pool_limits));
	cr_assert_eq(cur.pool_fairness_f, 0.8);
}

/* --print-config's form reads back the same, parsed parts and all. */
Test(config, pool_keys_format_round_trip)
{
	struct proteusd_config a, b;
	struct config_diag d = {0};
	size_t n;
	const struct config_key *k = config_keys(&n);
	char text[16384], val[CONFIG_PATH_MAX];
	size_t len = 0;
	json_t *j;

	cr_assert_eq(parse("pool_spot_vcpus g=16,128\n"
			   "pool_usd_per_hour 0.5\npool_fairness .5\n"
			   "pool_arbiter fifo\n", &a, &d), PX_OK);
	for (size_t i = 0; i < n; i++) {
		config_format(&k[i], &a, val, sizeof(val));
		len += (size_t)snprintf(text + len, sizeof(text) - len,
					"%s %s\n", k[i].name, val);
	}
	cr_assert(strstr(text, "\npool_spot_vcpus g=16,128\n"), "%s", text);
	cr_assert(strstr(text, "\npool_ondemand_vcpus none\n"), "%s", text);
	cr_assert(strstr(text, "\npool_arbiter fifo\n"), "%s", text);
	cr_assert_eq(config_parse("fmt", text, len, &b, &d), PX_OK);
	for (size_t i = 0; i < n; i++)
		cr_assert(config_equal(&k[i], &a, &b), "'%s' differs",
			  k[i].name);
	cr_assert(!memcmp(&a.pool_limits, &b.pool_limits,
			  sizeof a.pool_limits));
	cr_assert_eq(b.pool_fairness_f, 0.5);
	j = config_to_json(&a);
	cr_assert_str_eq(json_string_value(json_object_get(
				 j, "pool_usd_per_hour")), "0.5");
	cr_assert_eq(json_integer_value(json_object_get(
			     j, "pool_lease_seconds")), 3600);
	cr_assert_str_eq(json_string_value(json_object_get(
				 j, "pool_arbiter")), "fifo");
	json_decref(j);
}
