/* test_fake_ec2_instances.c -- the fake EC2 (tests/fake_ec2/fake_ec2.py)
 * as a cloud that runs instances, driven through the project's EC2 and
 * IMDS clients: user data that really runs with its own IMDSv2 endpoint,
 * terminate (SIGTERM, then SIGKILL) and its bill, ClientToken idempotency,
 * SpotMaxPriceTooLow per zone, capacity errors and instance limits,
 * interruptions (notice, then termination; the first hour free), the
 * summary against a hand-computed schedule, bad signatures counted, a 60x
 * clock, terminated instances vanishing after an hour, legacy-hourly
 * billing, and no process outliving the fake.
 *
 * Most tests freeze the fake clock (--speedup 0) and move it with the
 * "advance" command, so that every time and bill is exact; the waits
 * below wait for events (a process started, a group gone), never for a
 * duration. */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../fake_ec2/fake.h"
#include "../../cloudapi/ec2_int.h"
#include "../../cloudapi/imds.h"
#include "pxrun.h"

#define T0 INT64_C(1700000000) /* 2023-11-14 22:13:20 UTC */
#define FROZEN "--speedup", "0", "--clock-origin", "1700000000", \
	"--boot-seconds", "0", "--shutdown-seconds", "0"

static struct fake F;
static struct awscred_provider *P;
static struct ec2_client *C;
static char *tmp, idir[512];

static void setup(void)
{
	tmp = px_tmpdir();
	cr_assert_not_null(tmp);
	snprintf(idir, sizeof idir, "%s/instances", tmp);
}

static void teardown(void)
{
	ec2_client_free(C);
	C = NULL;
	awscred_provider_free(P);
	P = NULL;
	fake_stop(&F);
	px_rmtree(tmp);
	free(tmp);
}

TestSuite(fake_ec2_instances, .init = setup, .fini = teardown,
	  .timeout = 60);

/* Start the fake with these options (NULL-terminated) and
 * --instance-dir TMP/instances, and a client on it. */
static void start(const char *first, ...)
{
	const char *args[40];
	size_t n = 0;
	va_list ap;

	va_start(ap, first);
	for (const char *a = first; a; a = va_arg(ap, const char *)) {
		cr_assert_lt(n, sizeof args / sizeof *args - 3);
		args[n++] = a;
	}
	va_end(ap);
	args[n++] = "--instance-dir";
	args[n++] = idir;
	args[n] = NULL;
	fake_start_args(&F, args);
	C = fake_client(&F, FAKE_AKID, FAKE_SECRET, NULL, &P);
}

static void ctlf(const char *fmt, ...)
{
	char buf[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	json_decref(fake_ctl(&F, buf));
}

static const char *sget(const json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));

	return s ? s : "";
}

static long long iget(const json_t *o, const char *k)
{
	return (long long)json_integer_value(json_object_get(o, k));
}

/* The fake's record of one instance (json_decref it). */
static json_t *inst(const char *id)
{
	json_t *a = fake_get_json(&F, "cmd=instances"), *o, *r = NULL;
	size_t i;

	json_array_foreach(a, i, o)
		if (!strcmp(sget(o, "id"), id))
			r = json_incref(o);
	json_decref(a);
	cr_assert_not_null(r, "the fake has no instance %s", id);
	return r;
}

static char *inst_str(const char *id, const char *key, char *buf,
		      size_t len)
{
	json_t *o = inst(id);

	snprintf(buf, len, "%s", sget(o, key));
	json_decref(o);
	return buf;
}

static long long inst_int(const char *id, const char *key)
{
	json_t *o = inst(id);
	long long v = iget(o, key);

	json_decref(o);
	return v;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* Wait for an event, 20 ms at a time, 20 s at most (then fail). */
#define WAIT_FOR(cond, ...) do { \
		int w_; \
		for (w_ = 0; w_ < 1000 && !(cond); w_++) \
			sleep_ms(20); \
		cr_assert(cond, __VA_ARGS__); \
	} while (0)

static bool state_is(const char *id, const char *want)
{
	char st[32];

	return !strcmp(inst_str(id, "state", st, sizeof st), want);
}

static bool exists(const char *path)
{
	struct stat sb;

	return stat(path, &sb) == 0;
}

static bool group_gone(pid_t pg)
{
	return kill(-pg, 0) == -1 && errno == ESRCH;
}

/* The process group the fake recorded for id's user data.  The user data
 * can write its first file before the fake's spawner records the group (the
 * spawner takes the lock after Popen returns), so wait for it: a pgid of 0
 * read too early would make kill(-0, 0) probe the test's own group. */
static pid_t group_of(const char *id)
{
	long long pg = 0;
	int i;

	for (i = 0; i < 1000 && (pg = inst_int(id, "pgid")) <= 1; i++)
		sleep_ms(20);
	cr_assert_gt(pg, 1, "%s: the fake recorded no process group", id);
	return (pid_t)pg;
}

struct launch {
	const char *type, *zone, *user_data, *token, *subnet;
	bool spot;
	int64_t max_uusd;
	const struct ec2_tag *tags;
	size_t n_tags;
};

/* RunInstances of one; its id into id (EC2_ID_MAX); the call's result. */
static enum px_err run(const struct launch *ln, char *id,
		       struct ec2_aws_error *aws)
{
	struct ec2_run_req r = {
		.spec = { .image_id = "ami-0abc", .instance_type = ln->type,
			  .zone = ln->zone, .subnet_id = ln->subnet,
			  .user_data = ln->user_data,
			  .user_data_len = ln->user_data ?
				  strlen(ln->user_data) : 0 },
		.spot = ln->spot, .max_price_uusd = ln->max_uusd,
		.client_token = ln->token, .tags = ln->tags,
		.n_tags = ln->n_tags,
	};
	struct ec2_instance_list l = { 0 };
	struct px_error err;
	enum px_err rc;

	memset(aws, 0, sizeof *aws);
	rc = ec2_run_instances(C, &r, &l, &err, aws);
	if (rc == PX_OK) {
		cr_assert_eq(l.n, 1);
		snprintf(id, EC2_ID_MAX, "%s", l.v[0].id);
	}
	ec2_instance_list_release(&l);
	return rc;
}

static void run_ok(const struct launch *ln, char *id)
{
	struct ec2_aws_error aws;

	cr_assert_eq(run(ln, id, &aws), PX_OK, "RunInstances: %s %s",
		     aws.code, aws.message);
}

static void terminate(const char *id)
{
	struct px_error err;

	cr_assert_eq(ec2_terminate_instances(C, &id, 1, &err, NULL), PX_OK,
		     "%s", err.msg);
}

/* DescribeInstances of one id: its state and state reason. */
static enum px_err describe(const char *id, struct ec2_instance *ret,
			    struct ec2_aws_error *aws)
{
	struct ec2_instance_list l = { 0 };
	struct px_error err;
	enum px_err rc = ec2_describe_instances(C, &id, 1, NULL, 0, false, &l,
						&err, aws);

	if (rc == PX_OK) {
		cr_assert_eq(l.n, 1);
		*ret = l.v[0];
		ret->tags = NULL;
		ret->n_tags = 0;
	}
	ec2_instance_list_release(&l);
	return rc;
}

static json_t *summary(void)
{
	return fake_get_json(&F, "cmd=summary");
}

/* ---- an instance runs its user data, with its own IMDSv2 */

static bool exited(const char *id)
{
	json_t *o = inst(id);
	bool r = json_is_integer(json_object_get(o, "exit_status"));

	json_decref(o);
	return r;
}

static bool console_has(const char *id, const char *needle)
{
	char q[128];
	long st = 0;
	char *c;
	bool r;

	snprintf(q, sizeof q, "cmd=console&id=%s", id);
	c = fake_get(&F, q, &st);
	r = st == 200 && strstr(c, needle);
	free(c);
	return r;
}

static const char probe_py[] =
	"#!/usr/bin/python3\n"
	"import json, os, urllib.request, urllib.error\n"
	"e = os.environ['AWS_EC2_METADATA_SERVICE_ENDPOINT']\n"
	"def get(path, tok=None):\n"
	"    h = {'X-aws-ec2-metadata-token': tok} if tok else {}\n"
	"    try:\n"
	"        return urllib.request.urlopen(urllib.request.Request(\n"
	"            e + path, headers=h), timeout=5).read().decode()\n"
	"    except urllib.error.HTTPError as x:\n"
	"        return 'HTTP %d' % x.code\n"
	"out = {'notoken': get('latest/meta-data/instance-id')}\n"
	"tok = urllib.request.urlopen(urllib.request.Request(\n"
	"    e + 'latest/api/token', method='PUT',\n"
	"    headers={'X-aws-ec2-metadata-token-ttl-seconds': '60'}),\n"
	"    timeout=5).read().decode()\n"
	"for k in ('instance-id', 'instance-type', 'local-ipv4',\n"
	"          'placement/availability-zone', 'instance-life-cycle',\n"
	"          'spot/instance-action'):\n"
	"    out[k] = get('latest/meta-data/' + k, tok)\n"
	"out['doc'] = json.loads(get(\n"
	"    'latest/dynamic/instance-identity/document', tok))\n"
	"# as exec'd (python itself adds LC_CTYPE to os.environ)\n"
	"out['env'] = dict(v.decode().split('=', 1) for v in\n"
	"    open('/proc/self/environ', 'rb').read().split(b'\\0') if v)\n"
	"out['cwd'] = os.getcwd()\n"
	"out['pid'], out['pgid'], out['sid'] = (os.getpid(), os.getpgid(0),\n"
	"                                       os.getsid(0))\n"
	"json.dump(out, open('out.tmp', 'w'))\n"
	"os.rename('out.tmp', 'out.json')\n"
	"print('probe done', flush=True)\n";

Test(fake_ec2_instances, user_data_runs_with_its_own_metadata)
{
	struct ec2_instance d;
	struct launch ln = { .type = "c5.large", .zone = "us-east-1b",
			     .user_data = probe_py };
	char id[EC2_ID_MAX], path[1024], dir[600], *ud;
	json_t *out, *doc, *env, *s;
	json_error_t je;
	long st;

	/* the fake's own environment must not reach the instance */
	setenv("AWS_SECRET_ACCESS_KEY", "canary-secret-of-the-fake", 1);
	setenv("PX_CANARY", "canary", 1);
	start("--speedup", "0", "--clock-origin", "1700000000",
	      "--boot-seconds", "30", NULL);
	run_ok(&ln, id);
	/* pending until the boot delay has passed on the fake clock */
	cr_assert_eq(describe(id, &d, NULL), PX_OK);
	cr_assert_str_eq(d.state, "pending");
	cr_assert_eq(d.launch_time_s, T0);
	ctlf("{\"advance\": 29}");
	cr_assert_eq(describe(id, &d, NULL), PX_OK);
	cr_assert_str_eq(d.state, "pending");
	ctlf("{\"advance\": 1}");
	cr_assert_eq(describe(id, &d, NULL), PX_OK);
	cr_assert_str_eq(d.state, "running");
	cr_assert_str_eq(d.private_ip, "127.0.0.1");

	inst_str(id, "dir", dir, sizeof dir);
	snprintf(path, sizeof path, "%s/%s", idir, id);
	cr_assert_str_eq(dir, path);
	snprintf(path, sizeof path, "%s/out.json", dir);
	WAIT_FOR(exists(path), "the user data did not finish (%s)", path);
	out = json_load_file(path, 0, &je);
	cr_assert_not_null(out, "%s: %s", path, je.text);
	cr_assert_str_eq(sget(out, "notoken"), "HTTP 401"); /* IMDSv2 only */
	cr_assert_str_eq(sget(out, "instance-id"), id);
	cr_assert_str_eq(sget(out, "instance-type"), "c5.large");
	cr_assert_str_eq(sget(out, "local-ipv4"), "127.0.0.1");
	cr_assert_str_eq(sget(out, "placement/availability-zone"),
			 "us-east-1b");
	cr_assert_str_eq(sget(out, "instance-life-cycle"), "on-demand");
	cr_assert_str_eq(sget(out, "spot/instance-action"), "HTTP 404");
	doc = json_object_get(out, "doc");
	cr_assert_str_eq(sget(doc, "instanceId"), id);
	cr_assert_str_eq(sget(doc, "availabilityZone"), "us-east-1b");
	cr_assert_str_eq(sget(doc, "region"), "us-east-1");
	cr_assert_str_eq(sget(doc, "imageId"), "ami-0abc");
	cr_assert_str_eq(sget(doc, "pendingTime"), "2023-11-14T22:13:20Z");
	cr_assert_str_eq(sget(doc, "privateIp"), "127.0.0.1");
	cr_assert_str_eq(sget(doc, "accountId"), "123456789012");
	/* its own session, in its directory, with four variables only */
	cr_assert_str_eq(sget(out, "cwd"), dir);
	cr_assert_eq(iget(out, "pid"), iget(out, "pgid"));
	cr_assert_eq(iget(out, "pid"), iget(out, "sid"));
	cr_assert_eq(iget(out, "pgid"), group_of(id));
	env = json_object_get(out, "env");
	cr_assert_eq(json_object_size(env), 4, "%s",
		     json_dumps(env, JSON_COMPACT));
	cr_assert_str_eq(sget(env, "HOME"), dir);
	cr_assert_str_eq(sget(env, "LANG"), "C");
	cr_assert(sget(env, "PATH")[0]);
	snprintf(path, sizeof path, "http://127.0.0.1:%lld/",
		 inst_int(id, "imds_port"));
	cr_assert_str_eq(sget(env, "AWS_EC2_METADATA_SERVICE_ENDPOINT"),
			 path);
	json_decref(out);
	/* the script was written 0700 and ran; its output is on the console */
	snprintf(path, sizeof path, "%s/user-data", dir);
	struct stat sb;
	cr_assert_eq(stat(path, &sb), 0);
	cr_assert_eq(sb.st_mode & 0777, 0700);
	WAIT_FOR(console_has(id, "probe done\n"), "nothing on the console");
	/* the user data is recorded as it was given */
	snprintf(path, sizeof path, "cmd=userdata&id=%s", id);
	ud = fake_get(&F, path, &st);
	cr_assert_eq(st, 200);
	cr_assert_str_eq(ud, probe_py);
	free(ud);
	/* an instance whose program exited keeps running (and billing) */
	WAIT_FOR(exited(id), "the program did not exit");
	cr_assert_eq(inst_int(id, "exit_status"), 0);
	cr_assert(state_is(id, "running"));
	s = summary();
	cr_assert_eq(iget(s, "still_running"), 1);
	json_decref(s);
	s = fake_finish(&F);
	cr_assert_eq(iget(s, "instances_launched"), 1);
	cr_assert_eq(iget(s, "still_running"), 1);
	json_decref(s);
}

/* ---- terminate: shutting-down, SIGTERM then SIGKILL, the bill */

/* TerminateInstances of one id; the currentState it answers. */
static const char *terminate_state(const char *id)
{
	static char name[32];
	struct ec2_params p;
	struct ec2_response r;
	struct px_error err;
	xmlNode *it;

	ec2_params_init(&p, "TerminateInstances");
	ec2_params_add(&p, "InstanceId.1", id);
	cr_assert_eq(ec2_call(C, &p, &r, &err, NULL), PX_OK, "%s", err.msg);
	it = ec2_xml_child(ec2_xml_child(r.root, "instancesSet"), "item");
	cr_assert_not_null(it);
	cr_assert_eq(ec2_xml_text(ec2_xml_child(it, "currentState"), "name",
				  name, sizeof name, &err), PX_OK);
	ec2_response_release(&r);
	return name;
}

Test(fake_ec2_instances, terminate_kills_the_group_and_bills_it)
{
	/* the whole group ignores SIGTERM: it takes the SIGKILL */
	struct launch ln = { .type = "m5.large", .zone = "us-east-1a",
			     .user_data = "trap '' TERM\n"
					  "sleep 1000 & sleep 1000 &\n"
					  "echo up > up\nwait\n" };
	char id[EC2_ID_MAX], path[1024], dir[600];
	struct ec2_instance d;
	json_t *o, *s;
	pid_t pg;

	start(FROZEN, "--ondemand-price", "0.36", NULL);
	run_ok(&ln, id);
	cr_assert_eq(describe(id, &d, NULL), PX_OK);
	cr_assert_str_eq(d.state, "running");
	snprintf(path, sizeof path, "%s/up", inst_str(id, "dir", dir,
						      sizeof dir));
	WAIT_FOR(exists(path), "the user data did not start");
	pg = group_of(id);
	cr_assert_not(group_gone(pg));
	ctlf("{\"advance\": 600}");
	/* shutting down: its processes live on (the SIGKILL is 2 s away) */
	cr_assert_str_eq(terminate_state(id), "shutting-down");
	WAIT_FOR(state_is(id, "terminated"), "not terminated");
	cr_assert(group_gone(pg), "its process group outlived it");
	cr_assert_eq(describe(id, &d, NULL), PX_OK);
	cr_assert_str_eq(d.state, "terminated");
	cr_assert_eq(d.state_code, 48);
	cr_assert_str_eq(d.state_reason_code, "Client.UserInitiatedShutdown");
	o = inst(id);
	cr_assert_str_eq(sget(o, "state_transition_reason"),
			 "User initiated (2023-11-14 22:23:20 GMT)");
	cr_assert_eq(iget(o, "bill_start"), T0);
	cr_assert_eq(iget(o, "bill_end"), T0 + 600);
	cr_assert_str_eq(sget(o, "ended_by"), "user");
	/* 600 s at 0.36 USD/h */
	cr_assert_eq(iget(o, "billed_uusd"), 60000);
	cr_assert_eq(iget(o, "exit_status"), -9);
	json_decref(o);
	/* terminating again is harmless; the bill does not move */
	ctlf("{\"advance\": 600}");
	terminate(id);
	cr_assert_eq(inst_int(id, "billed_uusd"), 60000);
	s = fake_finish(&F);
	cr_assert_eq(iget(s, "instances_launched"), 1);
	cr_assert_eq(iget(s, "still_running"), 0);
	cr_assert_eq(iget(s, "bad_signatures"), 0);
	cr_assert(json_is_real(json_object_get(s, "billed_usd")));
	cr_assert_eq(json_real_value(json_object_get(s, "billed_usd")), 0.06);
	json_decref(s);
}

/* ---- ClientToken idempotency */

Test(fake_ec2_instances, client_token_is_idempotent)
{
	struct launch ln = { .type = "c5.large", .zone = "us-east-1a",
			     .token = "job7-ctl3-42" };
	struct launch other = ln;
	char id1[EC2_ID_MAX], id2[EC2_ID_MAX], id3[EC2_ID_MAX];
	struct ec2_aws_error aws;
	json_t *s;

	start(FROZEN, NULL);
	run_ok(&ln, id1);
	run_ok(&ln, id2);
	cr_assert_str_eq(id1, id2);
	other.type = "m5.large";
	cr_assert_eq(run(&other, id3, &aws), PX_EAWS);
	cr_assert_str_eq(aws.code, "IdempotentParameterMismatch");
	/* a launch that failed did not record its token: its retry launches */
	ctlf("{\"capacity\": [{\"type\": \"c5.large\", \"zone\": "
	     "\"us-east-1b\"}]}");
	ln.token = "job7-ctl3-43";
	ln.zone = "us-east-1b";
	cr_assert_eq(run(&ln, id3, &aws), PX_EAWS);
	cr_assert_str_eq(aws.code, "InsufficientInstanceCapacity");
	ctlf("{\"capacity_clear\": true}");
	run_ok(&ln, id3);
	cr_assert_str_neq(id3, id1);
	/* by token, as a restarted daemon would look */
	const char *tok[] = { "job7-ctl3-42" };
	struct ec2_filter f = { "client-token", tok, 1 };
	struct ec2_instance_list l = { 0 };
	struct px_error err;
	cr_assert_eq(ec2_describe_instances(C, NULL, 0, &f, 1, false, &l, &err,
					    NULL), PX_OK);
	cr_assert_eq(l.n, 1);
	cr_assert_str_eq(l.v[0].id, id1);
	ec2_instance_list_release(&l);
	s = summary();
	cr_assert_eq(iget(s, "instances_launched"), 2);
	json_decref(s);
}

/* ---- spot prices per zone: SpotMaxPriceTooLow, the price history */

static enum px_err keep_rec(const struct trace_record *r, void *ctx,
			    struct px_error *err)
{
	struct trace_record *last = ctx;

	(void)err;
	last[0] = *r;
	return PX_OK;
}

Test(fake_ec2_instances, spot_max_price_too_low_per_zone)
{
	char market[600], id[EC2_ID_MAX];
	struct launch ln = { .type = "c5.large", .zone = "us-east-1a",
			     .spot = true, .max_uusd = 30000 };
	struct ec2_aws_error aws;
	struct trace_record last;
	const char *types[] = { "c5.large" }, *zones[] = { "us-east-1a" };
	struct px_error err;
	FILE *f;

	snprintf(market, sizeof market, "%s/market.json", tmp);
	f = fopen(market, "w");
	cr_assert_not_null(f);
	fputs("[{\"type\": \"c5.large\", \"zone\": \"us-east-1a\", "
	      "\"price\": \"0.05\"},\n {\"type\": \"c5.large\", \"zone\": "
	      "\"us-east-1b\", \"price\": 0.02}]\n", f);
	fclose(f);
	start(FROZEN, "--market", market, NULL);
	cr_assert_eq(run(&ln, id, &aws), PX_EAWS);
	cr_assert_str_eq(aws.code, "SpotMaxPriceTooLow");
	cr_assert_eq(aws.http_status, 400);
	cr_assert_eq(aws.attempts, 1);
	cr_assert(strstr(aws.message, "Your Spot request price of 0.03 is "
		  "lower than the minimum required Spot request fulfillment "
		  "price of 0.05."), "%s", aws.message);
	ln.zone = "us-east-1b";
	run_ok(&ln, id);
	/* a change is a record at its fake time; the market follows it */
	ctlf("{\"advance\": 100, \"set_price\": {\"type\": \"c5.large\", "
	     "\"zone\": \"us-east-1a\", \"price\": \"0.025\"}}");
	ln.zone = "us-east-1a";
	run_ok(&ln, id);
	cr_assert_eq(ec2_describe_spot_price_history_all(C, types, 1, zones,
		1, NULL, T0 - 10, T0 + 1000, keep_rec, &last, &err, NULL),
		PX_OK, "%s", err.msg);
	cr_assert_eq(last.t_s, T0); /* oldest last: the 0.05 at start */
	cr_assert_eq(last.price_uusd, 50000);
	cr_assert_eq(ec2_describe_spot_price_history_all(C, types, 1, zones,
		1, NULL, T0 + 50, T0 + 1000, keep_rec, &last, &err, NULL),
		PX_OK, "%s", err.msg);
	cr_assert_eq(last.t_s, T0 + 100);
	cr_assert_eq(last.price_uusd, 25000);
}

/* ---- capacity errors and instance limits */

Test(fake_ec2_instances, capacity_errors_and_limits)
{
	struct launch ln = { .type = "c5.large", .zone = "us-east-1a",
			     .spot = true, .max_uusd = 100000 };
	struct launch od = { .type = "c5.large", .zone = "us-east-1a" };
	char id[EC2_ID_MAX], id2[EC2_ID_MAX];
	struct ec2_aws_error aws;
	json_t *s;

	start(FROZEN, "--spot-limit", "1", "--ondemand-limit", "1", NULL);
	/* until cleared: every attempt of the call fails (a 500, retried) */
	ctlf("{\"capacity\": [{\"type\": \"c5.large\", \"zone\": "
	     "\"us-east-1a\", \"market\": \"spot\"}]}");
	cr_assert_eq(run(&ln, id, &aws), PX_EAWS);
	cr_assert_str_eq(aws.code, "InsufficientInstanceCapacity");
	cr_assert_eq(aws.http_status, 500);
	cr_assert_eq(aws.attempts, 3);
	cr_assert(strstr(aws.message, "us-east-1b, us-east-1c"), "%s",
		  aws.message);
	run_ok(&od, id); /* on-demand is not affected */
	ln.zone = "us-east-1b";
	run_ok(&ln, id2); /* nor another zone */
	/* limits: one spot, one on-demand */
	ln.zone = "us-east-1c";
	cr_assert_eq(run(&ln, id2 + 0, &aws), PX_EAWS);
	cr_assert_str_eq(aws.code, "MaxSpotInstanceCountExceeded");
	cr_assert_eq(run(&od, id2 + 0, &aws), PX_EAWS);
	cr_assert_str_eq(aws.code, "InstanceLimitExceeded");
	terminate(id);
	run_ok(&od, id);
	/* a count: the first attempt fails, the client's retry launches */
	ctlf("{\"capacity_clear\": true, \"limits\": {\"spot\": null}, "
	     "\"capacity\": [{\"type\": \"c5.large\", \"zone\": "
	     "\"us-east-1c\", \"count\": 1}]}");
	s = fake_ctl(&F, NULL);
	long before = (long)json_integer_value(json_object_get(
		json_object_get(s, "attempts"), "RunInstances"));
	json_decref(s);
	run_ok(&ln, id2);
	s = fake_ctl(&F, NULL);
	cr_assert_eq(json_integer_value(json_object_get(json_object_get(s,
		"attempts"), "RunInstances")), before + 2);
	json_decref(s);
	s = summary();
	cr_assert_eq(iget(s, "instances_launched"), 4);
	json_decref(s);
}

/* A market that holds so many: InsufficientInstanceCapacity past it,
 * room again once one of its instances ends; other markets, on-demand
 * included, are not held; the counts by state. */
Test(fake_ec2_instances, a_market_limit_and_the_counts)
{
	struct launch ln = { .type = "c5.large", .zone = "us-east-1a",
			     .spot = true, .max_uusd = 100000 };
	struct launch od = { .type = "c5.large", .zone = "us-east-1a" };
	char a[EC2_ID_MAX], b[EC2_ID_MAX], c[EC2_ID_MAX];
	struct ec2_aws_error aws;
	json_t *s, *cap;

	start(FROZEN, NULL);
	ctlf("{\"capacity\": [{\"type\": \"c5.large\", \"zone\": "
	     "\"us-east-1a\", \"market\": \"spot\", \"limit\": 2}]}");
	run_ok(&ln, a);
	run_ok(&ln, b);
	cr_assert_eq(run(&ln, c, &aws), PX_EAWS);
	cr_assert_str_eq(aws.code, "InsufficientInstanceCapacity");
	cr_assert_eq(aws.attempts, 3, "each attempt is refused");
	run_ok(&od, c);
	ln.zone = "us-east-1b";
	run_ok(&ln, c);
	ln.zone = "us-east-1a";
	terminate(a);
	WAIT_FOR(state_is(a, "terminated"), "%s did not end", a);
	run_ok(&ln, a);
	s = fake_get_json(&F, "cmd=counts");
	cr_assert_eq(iget(s, "running"), 4);
	cr_assert_eq(iget(s, "terminated"), 1);
	cr_assert_eq(iget(s, "pending") + iget(s, "shutting-down"), 0);
	cr_assert_eq(iget(s, "launched"), 5);
	json_decref(s);
	s = fake_ctl(&F, NULL);
	cap = json_array_get(json_object_get(s, "capacity"), 0);
	cr_assert_eq(iget(cap, "hits"), 3);
	cr_assert_eq(iget(cap, "limit"), 2);
	json_decref(s);
}

/* ---- interruptions: a notice in the instance's metadata, then the end */

static void imds_of(const char *id, struct imds_client **ret)
{
	char ep[64];
	struct px_error err;

	snprintf(ep, sizeof ep, "http://127.0.0.1:%lld",
		 inst_int(id, "imds_port"));
	cr_assert_eq(imds_client_new(ep, 2 * PX_USEC_PER_SEC, ret, &err),
		     PX_OK, "%s", err.msg);
}

Test(fake_ec2_instances, interruption_notice_then_termination)
{
	struct launch ln = { .type = "c5.large", .zone = "us-east-1a",
			     .spot = true, .max_uusd = 500000,
			     .user_data = "echo up > up; exec sleep 1000\n" };
	char a[EC2_ID_MAX], b[EC2_ID_MAX], path[1024], dir[600], *body;
	struct imds_client *ma, *mb;
	struct imds_spot_action act;
	struct imds_identity ident;
	struct ec2_instance d;
	bool present;
	int64_t notice;
	struct px_error err;
	size_t len;
	json_t *o, *r;
	pid_t pg;

	start(FROZEN, NULL);
	ctlf("{\"set_price\": {\"type\": \"c5.large\", \"zone\": \"*\", "
	     "\"price\": \"0.10\"}}");
	run_ok(&ln, a);
	run_ok(&ln, b);
	snprintf(path, sizeof path, "%s/up", inst_str(a, "dir", dir,
						      sizeof dir));
	WAIT_FOR(exists(path), "a did not start");
	pg = group_of(a);
	imds_of(a, &ma);
	imds_of(b, &mb);
	cr_assert_eq(imds_spot_action(ma, &act, &present, &err), PX_OK, "%s",
		     err.msg);
	cr_assert_not(present);
	cr_assert_eq(imds_get(ma, "/latest/meta-data/instance-life-cycle",
			      &body, &len, &err), PX_OK);
	cr_assert_str_eq(body, "spot");
	free(body);
	cr_assert_eq(imds_identity(mb, &ident, &err), PX_OK, "%s", err.msg);
	cr_assert_str_eq(ident.instance_id, b);

	ctlf("{\"advance\": 1000}");
	snprintf(path, sizeof path, "{\"interrupt\": {\"id\": \"%s\", "
		 "\"rebalance\": true}}", a);
	r = fake_ctl(&F, path);
	cr_assert_str_eq(json_string_value(json_array_get(json_object_get(r,
		"interrupted"), 0)), a);
	json_decref(r);
	cr_assert_eq(imds_spot_action(ma, &act, &present, &err), PX_OK);
	cr_assert(present);
	cr_assert_str_eq(act.action, "terminate");
	cr_assert_eq(act.time_s, T0 + 1000 + 120);
	cr_assert_eq(imds_rebalance(ma, &notice, &present, &err), PX_OK);
	cr_assert(present);
	cr_assert_eq(notice, T0 + 1000);
	cr_assert_eq(imds_spot_action(mb, &act, &present, &err), PX_OK);
	cr_assert_not(present, "b was not interrupted");
	/* two minutes later (fake) EC2 ends it */
	ctlf("{\"advance\": 119}");
	cr_assert(state_is(a, "running"));
	ctlf("{\"advance\": 1}");
	WAIT_FOR(state_is(a, "terminated"), "a was not terminated");
	cr_assert(group_gone(pg));
	cr_assert_eq(describe(a, &d, NULL), PX_OK);
	cr_assert_str_eq(d.state_reason_code, "Server.SpotInstanceTermination");
	o = inst(a);
	cr_assert_str_eq(sget(o, "ended_by"), "provider");
	cr_assert_eq(iget(o, "bill_end"), T0 + 1120);
	cr_assert_eq(iget(o, "billed_uusd"), 0); /* within its first hour */
	json_decref(o);

	/* b lives past its first hour; interrupted by market: charged */
	ctlf("{\"advance\": 2880}");
	r = fake_ctl(&F, "{\"interrupt\": {\"type\": \"c5.large\", "
		     "\"zone\": \"us-east-1a\", \"count\": 5}}");
	cr_assert_eq(json_array_size(json_object_get(r, "interrupted")), 1);
	cr_assert_str_eq(json_string_value(json_array_get(json_object_get(r,
		"interrupted"), 0)), b);
	json_decref(r);
	ctlf("{\"advance\": 120}");
	WAIT_FOR(state_is(b, "terminated"), "b was not terminated");
	/* 4120 s at 0.10 USD/h */
	cr_assert_eq(inst_int(b, "billed_uusd"), 114444);
	imds_client_free(ma);
	imds_client_free(mb);
	o = summary();
	cr_assert_eq(iget(o, "still_running"), 0);
	json_decref(o);
}

Test(fake_ec2_instances, random_interruptions_are_seeded)
{
	struct launch ln = { .type = "c5.large", .zone = "us-east-1a",
			     .spot = true };
	char id[EC2_ID_MAX];
	json_t *o;

	/* 3600 per instance-hour: one a second on average */
	start(FROZEN, "--interrupt-rate", "3600", "--seed", "7", NULL);
	run_ok(&ln, id);
	ctlf("{\"advance\": 60}");
	o = inst(id);
	cr_assert(json_is_object(json_object_get(o, "notice")));
	json_decref(o);
	ctlf("{\"advance\": 120}");
	WAIT_FOR(state_is(id, "terminated"), "not terminated");
	cr_assert_eq(inst_int(id, "billed_uusd"), 0);
}

/* ---- the summary against a schedule computed by hand */

Test(fake_ec2_instances, summary_matches_a_hand_computed_schedule)
{
	char od[600], a[EC2_ID_MAX], b[EC2_ID_MAX], c[EC2_ID_MAX], q[256];
	struct launch la = { .type = "c5.large", .zone = "us-east-1a",
			     .spot = true, .max_uusd = 500000 };
	struct launch lb = { .type = "m5.large", .zone = "us-east-1a" };
	struct launch lc = { .type = "c5.large", .zone = "us-east-1b",
			     .spot = true, .max_uusd = 500000 };
	long long sum = 0;
	json_t *s, *all, *o;
	size_t i;
	FILE *f;

	snprintf(od, sizeof od, "%s/od.json", tmp);
	f = fopen(od, "w");
	cr_assert_not_null(f);
	fputs("{\"_source\": \"test\", \"us-east-1\": {\"m5.large\": 0.096, "
	      "\"c5.large\": {\"usd_per_hour\": 0.085}}}\n", f);
	fclose(f);
	start(FROZEN, "--ondemand", od, NULL);
	ctlf("{\"set_price\": [{\"type\": \"c5.large\", \"zone\": "
	     "\"us-east-1a\", \"price\": \"0.10\"}, {\"type\": \"c5.large\", "
	     "\"zone\": \"us-east-1b\", \"price\": \"0.20\"}]}");
	run_ok(&la, a);
	run_ok(&lb, b);
	run_ok(&lc, c);
	/* b: user-terminated after 30 s: the 60 s minimum at 0.096 */
	ctlf("{\"advance\": 30}");
	terminate(b);
	/* t = 1800: a's market goes to 0.30; c gets a notice */
	snprintf(q, sizeof q, "{\"advance\": 1770, \"set_price\": {\"type\": "
		 "\"c5.large\", \"zone\": \"us-east-1a\", \"price\": "
		 "\"0.30\"}, \"interrupt\": {\"id\": \"%s\"}}", c);
	ctlf("%s", q);
	/* t = 1920: c ends, interrupted in its first hour: free */
	ctlf("{\"advance\": 120}");
	/* t = 3600: a ends: 1800 s at 0.10 + 1800 s at 0.30 */
	ctlf("{\"advance\": 1680}");
	terminate(a);
	cr_assert_eq(inst_int(b, "billed_uusd"), 1600);
	cr_assert_eq(inst_int(c, "billed_uusd"), 0);
	cr_assert(state_is(c, "terminated"));
	cr_assert_eq(inst_int(a, "billed_uusd"), 200000);
	all = fake_get_json(&F, "cmd=instances");
	json_array_foreach(all, i, o)
		sum += iget(o, "billed_uusd");
	json_decref(all);
	cr_assert_eq(sum, 201600);
	char *line = fake_get(&F, "cmd=summary", &(long){ 0 });
	cr_assert_str_eq(line, "{\"instances_launched\": 3, "
			 "\"still_running\": 0, \"bad_signatures\": 0, "
			 "\"billed_usd\": 0.201600, \"enrolled\": 0}");
	free(line);
	s = fake_finish(&F);
	cr_assert_eq(iget(s, "instances_launched"), 3);
	cr_assert_eq(iget(s, "still_running"), 0);
	cr_assert_eq(iget(s, "bad_signatures"), 0);
	cr_assert_eq((long long)(json_real_value(json_object_get(s,
		"billed_usd")) * 1e6 + 0.5), 201600);
	json_decref(s);
}

/* ---- a throttling storm for a while, then cleared */

Test(fake_ec2_instances, throttling_storm)
{
	struct launch ln = { .type = "c5.large", .zone = "us-east-1a" };
	char id[EC2_ID_MAX];
	struct ec2_aws_error aws;
	json_t *s;

	start(FROZEN, NULL);
	/* every call for 60 real seconds (no count: until it ends) */
	ctlf("{\"faults\": [{\"op\": \"RunInstances\", \"kind\": \"error\", "
	     "\"code\": \"RequestLimitExceeded\", \"status\": 503, "
	     "\"for_s\": 60}]}");
	cr_assert_eq(run(&ln, id, &aws), PX_EAWS);
	cr_assert_str_eq(aws.code, "RequestLimitExceeded");
	cr_assert_eq(aws.attempts, 3);
	cr_assert_eq(run(&ln, id, &aws), PX_EAWS);
	ctlf("{\"faults_clear\": true}");
	run_ok(&ln, id);
	s = summary();
	cr_assert_eq(iget(s, "instances_launched"), 1);
	json_decref(s);
	/* every attempt the storm took is counted, by action and code */
	s = fake_ctl(&F, NULL);
	cr_assert_eq(iget(json_object_get(json_object_get(s, "faulted"),
					  "RunInstances"),
			  "RequestLimitExceeded"), 6);
	json_decref(s);
}

/* ---- every request whose signature fails is counted */

Test(fake_ec2_instances, bad_signatures_are_counted)
{
	struct awscred_provider *p2;
	struct ec2_client *c2;
	struct ec2_instance_list l = { 0 };
	struct ec2_aws_error aws;
	struct px_error err;
	json_t *s;

	start(FROZEN, NULL);
	cr_assert_eq(ec2_describe_instances(C, NULL, 0, NULL, 0, false, &l,
					    &err, NULL), PX_OK);
	c2 = fake_client(&F, FAKE_AKID, "not-the-secret", NULL, &p2);
	cr_assert_eq(ec2_describe_instances(c2, NULL, 0, NULL, 0, false, &l,
					    &err, &aws), PX_EAWS);
	cr_assert_str_eq(aws.code, "SignatureDoesNotMatch");
	ec2_client_free(c2);
	awscred_provider_free(p2);
	c2 = fake_client(&F, "AKIDUNKNOWN", FAKE_SECRET, NULL, &p2);
	cr_assert_eq(ec2_describe_instances(c2, NULL, 0, NULL, 0, false, &l,
					    &err, &aws), PX_EAWS);
	cr_assert_str_eq(aws.code, "AuthFailure");
	ec2_client_free(c2);
	awscred_provider_free(p2);
	s = fake_finish(&F);
	cr_assert_eq(iget(s, "bad_signatures"), 2);
	cr_assert_eq(iget(s, "instances_launched"), 0);
	json_decref(s);
}

/* ---- a 60x clock bills one real second as (at least) 60 s */

static double wall(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

Test(fake_ec2_instances, speedup_bills_fake_seconds)
{
	struct launch ln = { .type = "m5.large", .zone = "us-east-1a" };
	char id[EC2_ID_MAX];
	double r0, r1;
	long long dur;
	json_t *c0, *c1, *o;

	start("--speedup", "60", "--boot-seconds", "0", "--ondemand-price",
	      "0.36", NULL);
	r0 = wall();
	c0 = fake_get_json(&F, "cmd=clock");
	run_ok(&ln, id);
	sleep_ms(1000);
	terminate(id);
	c1 = fake_get_json(&F, "cmd=clock");
	r1 = wall();
	cr_assert_geq(json_real_value(json_object_get(c1, "fake_now")) -
		      json_real_value(json_object_get(c0, "fake_now")), 60.0);
	json_decref(c0);
	json_decref(c1);
	o = inst(id);
	dur = iget(o, "bill_end") - iget(o, "bill_start");
	/* at least the real second slept, at most what the test saw pass */
	cr_assert_geq(dur, 60);
	cr_assert_leq(dur, (long long)((r1 - r0) * 60) + 1);
	/* 0.36 USD/h is 100 micro-USD a second */
	cr_assert_eq(iget(o, "billed_uusd"), dur * 100);
	json_decref(o);
}

/* ---- filters, and a terminated instance vanishes after an hour */

Test(fake_ec2_instances, filters_and_vanishing)
{
	struct ec2_tag t1[] = { { "proteus:job", "1" } },
		       t2[] = { { "proteus:job", "2" } };
	struct launch ln = { .type = "c5.large", .zone = "us-east-1a" };
	char ids[6][EC2_ID_MAX];
	const char *one[] = { "1" }, *key[] = { "proteus:job" },
		   *running[] = { "running" };
	struct ec2_filter by_tag = { "tag:proteus:job", one, 1 },
			  by_key = { "tag-key", key, 1 },
			  by_state = { "instance-state-name", running, 1 };
	struct ec2_instance_list l = { 0 };
	struct ec2_instance d;
	struct ec2_aws_error aws;
	struct px_error err;

	start(FROZEN, NULL);
	for (int i = 0; i < 6; i++) {
		ln.tags = i < 3 ? t1 : t2;
		ln.n_tags = 1;
		run_ok(&ln, ids[i]);
	}
	cr_assert_eq(ec2_describe_instances(C, NULL, 0, &by_tag, 1, false, &l,
					    &err, NULL), PX_OK);
	cr_assert_eq(l.n, 3);
	cr_assert_eq(l.v[0].n_tags, 1);
	cr_assert_str_eq(l.v[0].tags[0].value, "1");
	ec2_instance_list_release(&l);
	cr_assert_eq(ec2_describe_instances(C, NULL, 0, &by_key, 1, false, &l,
					    &err, NULL), PX_OK);
	cr_assert_eq(l.n, 6);
	ec2_instance_list_release(&l);
	terminate(ids[0]);
	cr_assert_eq(ec2_describe_instances(C, NULL, 0, &by_state, 1, false,
					    &l, &err, NULL), PX_OK);
	cr_assert_eq(l.n, 5);
	ec2_instance_list_release(&l);
	ctlf("{\"advance\": 3599}");
	cr_assert_eq(describe(ids[0], &d, NULL), PX_OK);
	cr_assert_str_eq(d.state, "terminated");
	ctlf("{\"advance\": 1}");
	cr_assert_eq(describe(ids[0], &d, &aws), PX_EAWS);
	cr_assert_str_eq(aws.code, "InvalidInstanceID.NotFound");
	cr_assert_eq(ec2_describe_instances(C, NULL, 0, NULL, 0, false, &l,
					    &err, NULL), PX_OK);
	cr_assert_eq(l.n, 5);
	ec2_instance_list_release(&l);
	/* the fake still has it on record */
	cr_assert(state_is(ids[0], "terminated"));
}

/* ---- a subnet places the instance in its zone */

Test(fake_ec2_instances, subnet_sets_the_zone)
{
	struct launch ln = { .type = "c5.large",
			     .subnet = "subnet-0000000000000000b" };
	char id[EC2_ID_MAX];
	struct ec2_instance d;
	struct ec2_aws_error aws;

	start(FROZEN, NULL);
	run_ok(&ln, id);
	cr_assert_eq(describe(id, &d, NULL), PX_OK);
	cr_assert_str_eq(d.zone, "us-east-1b");
	ln.zone = "us-east-1a";
	cr_assert_eq(run(&ln, id, &aws), PX_EAWS);
	cr_assert_str_eq(aws.code, "InvalidParameterValue");
	ln.zone = NULL;
	ln.subnet = "subnet-00000000000000099";
	cr_assert_eq(run(&ln, id, &aws), PX_EAWS);
	cr_assert_str_eq(aws.code, "InvalidSubnetID.NotFound");
}

/* ---- legacy-hourly billing */

Test(fake_ec2_instances, legacy_hourly_billing)
{
	struct launch ln = { .type = "c5.large", .zone = "us-east-1a",
			     .spot = true, .max_uusd = 500000 };
	char a[EC2_ID_MAX], b[EC2_ID_MAX], q[256];

	start(FROZEN, "--billing", "legacy-hourly", NULL);
	ctlf("{\"set_price\": {\"type\": \"c5.large\", \"zone\": "
	     "\"us-east-1a\", \"price\": \"0.10\"}}");
	run_ok(&ln, a);
	run_ok(&ln, b);
	ctlf("{\"advance\": 3000, \"set_price\": {\"type\": \"c5.large\", "
	     "\"zone\": \"us-east-1a\", \"price\": \"0.20\"}}");
	snprintf(q, sizeof q, "{\"advance\": 2280, \"interrupt\": "
		 "{\"id\": \"%s\"}}", b);
	ctlf("%s", q);
	terminate(a); /* at 5280 s: two started hours, 0.10 + 0.20 */
	ctlf("{\"advance\": 120}");
	WAIT_FOR(state_is(b, "terminated"), "b not terminated");
	cr_assert_eq(inst_int(a, "billed_uusd"), 300000);
	/* b: ended by EC2 at 5400 s: its partial second hour is free */
	cr_assert_eq(inst_int(b, "billed_uusd"), 100000);
}

/* ---- no instance process outlives the fake */

Test(fake_ec2_instances, nothing_outlives_the_fake)
{
	struct launch ln = { .type = "c5.large", .zone = "us-east-1a",
			     .user_data =
				"#!/bin/sh\n"
				"setsid sh -c 'echo $$ > esc.tmp; "
				"mv esc.tmp esc.pid; exec sleep 1000' &\n"
				"sleep 1000 &\n"
				"exec sleep 1000\n" };
	char id[EC2_ID_MAX], path[1024], dir[600], *txt;
	pid_t pg, esc;
	json_t *s;

	start(FROZEN, NULL);
	run_ok(&ln, id);
	snprintf(path, sizeof path, "%s/esc.pid", inst_str(id, "dir", dir,
							   sizeof dir));
	WAIT_FOR(exists(path), "the user data did not start");
	txt = px_test_read_file(path, NULL);
	cr_assert_not_null(txt, "%s", path);
	esc = (pid_t)atoi(txt);
	free(txt);
	pg = group_of(id);
	cr_assert_gt(esc, 1);
	cr_assert_neq(getpgid(esc), pg, "it left its group");
	cr_assert_not(group_gone(pg));
	s = fake_finish(&F);
	cr_assert_eq(iget(s, "still_running"), 1);
	json_decref(s);
	cr_assert(group_gone(pg), "the group outlived the fake");
	cr_assert(kill(esc, 0) == -1 && errno == ESRCH,
		  "the process that left its group outlived the fake");
}
