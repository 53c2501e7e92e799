/* test_ec2_userdata.c -- the ec2 world's user data script on its own
 * (agent/world/ec2_userdata.h): the whole script for a fixed node, every
 * argument and environment entry single-quoted, hostile values (quotes,
 * newlines, $( ), backquotes) inert when sh runs the script, the job key
 * refused, and the size bound exact, with nothing written past it. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../agent/world/ec2_userdata.h"
#include "../integration/pxrun.h"

TestSuite(ec2_userdata);

static char *ARGV[] = {
	"/opt/proteus/trainer", "node", "--coord", "tcp://head:7000",
	"--listen", "tcp://" EC2W_LISTEN_HOST ":7003", NULL,
};
static char *ENV[] = { "PX_LOG=info", NULL };
static char *ENROLL[] = { "PX_ENROLL_JOB=7", NULL };

/* The inputs of a spot node of job 7, instance 3, on the fake's clock. */
static struct ec2w_userdata spot_node(struct world_node *nd,
				      struct world_place *pl)
{
	nd->argv = ARGV;
	nd->env = ENV;
	memset(pl, 0, sizeof *pl);
	snprintf(pl->coord, sizeof pl->coord, "tcp://head:7000");
	snprintf(pl->listen, sizeof pl->listen, "tcp://%s:7003",
		 EC2W_LISTEN_HOST);
	pl->remote = true;
	return (struct ec2w_userdata){
		.daemon_id = "d0", .job_id = 7, .id = 3,
		.type_name = "m5.large", .zone = "us-east-1a",
		.node = nd, .place = pl, .enroll = ENROLL,
		.rebalance_leave = true, .clock_speedup = 60,
		.clock_origin = 1700000000,
	};
}

static const char IMDS[] =
	"imds=${AWS_EC2_METADATA_SERVICE_ENDPOINT:-http://169.254.169.254/}\n"
	"imds=${imds%/}\n"
	"ip=; k=0\n"
	"while [ -z \"$ip\" ] && [ $k -lt 30 ]; do\n"
	"  k=$((k+1))\n"
	"  tok=$(curl -sf -m 5 -X PUT -H 'X-aws-ec2-metadata-token-ttl-seconds:"
	" 300' \"$imds/latest/api/token\")\n"
	"  ip=$(curl -sf -m 5 -H \"X-aws-ec2-metadata-token: $tok\" "
	"\"$imds/latest/meta-data/local-ipv4\")\n"
	"  [ -n \"$ip\" ] || sleep 2\n"
	"done\n"
	"[ -n \"$ip\" ] || { echo 'proteus: no local-ipv4 from the instance "
	"metadata' >&2; exit 1; }\n";

#define EXTRA " --imds-notices --leave-on-rebalance --clock-speedup 60 " \
	      "--clock-origin 1700000000"

Test(ec2_userdata, a_fixed_node_gives_the_fixed_script)
{
	struct world_node nd;
	struct world_place pl;
	struct ec2w_userdata u = spot_node(&nd, &pl);
	struct px_error err = {0};
	static char buf[EC2W_USERDATA_MAX];
	char want[8192];
	size_t n = 0;

	snprintf(want, sizeof want, "#!/bin/sh\n"
		 "# proteusd d0: job 7, instance 3 (m5.large spot in "
		 "us-east-1a)\n%s"
		 "if [ -z \"${AWS_EC2_METADATA_SERVICE_ENDPOINT:-}\" ] && "
		 "command -v systemctl >/dev/null 2>&1 && systemctl cat "
		 "proteus-node.service >/dev/null 2>&1; then\n"
		 "  umask 077\n"
		 "  mkdir -p /etc/proteus\n"
		 "  cat > /etc/proteus/node.env <<PROTEUS_NODE_ENV\n"
		 "PX_LOG=info\n"
		 "PX_ENROLL_JOB=7\n"
		 "PROTEUS_NODE_ARGS=--coord tcp://head:7000 --listen "
		 "tcp://$ip:7003" EXTRA "\n"
		 "PROTEUS_NODE_ENV\n"
		 "  exec systemctl start --no-block proteus-node.service\n"
		 "fi\n"
		 "export 'PX_LOG=info'\n"
		 "export 'PX_ENROLL_JOB=7'\n"
		 "n=0\n"
		 "until '/opt/proteus/trainer' 'node' '--coord' "
		 "'tcp://head:7000' '--listen' \"tcp://$ip:7003\"" EXTRA
		 "; do n=$((n+1)); [ $n -lt 5 ] || exit 1; sleep 2; done\n",
		 IMDS);
	cr_assert_eq(ec2w_userdata(&u, buf, sizeof buf, &n, &err), PX_OK,
		     "%s", err.msg);
	cr_assert_str_eq(buf, want);
	cr_assert_eq(n, strlen(want));
}

Test(ec2_userdata, on_demand_says_so_and_reads_no_notices)
{
	struct world_node nd;
	struct world_place pl;
	struct ec2w_userdata u = spot_node(&nd, &pl);
	struct px_error err = {0};
	static char buf[EC2W_USERDATA_MAX];
	size_t n = 0;

	u.zone = "";
	cr_assert_eq(ec2w_userdata(&u, buf, sizeof buf, &n, &err), PX_OK,
		     "%s", err.msg);
	cr_assert(strstr(buf, "# proteusd d0: job 7, instance 3 (m5.large "
			 "on-demand)\n"), "%s", buf);
	cr_assert_null(strstr(buf, "--imds-notices"), "%s", buf);
	cr_assert(strstr(buf, "'--listen' \"tcp://$ip:7003\"; do "), "%s",
		  buf);
}

/* A value that is not plain: no unit branch (its environment file is
 * split at blanks), and every value single-quoted with '\'' for a
 * quote, a newline kept inside the quotes. */
Test(ec2_userdata, a_hostile_value_is_single_quoted_and_skips_the_unit)
{
	char *argv[] = { "/opt/proteus/trainer", "node", "it's $(reboot)",
			 "`reboot`", NULL };
	char *env[] = { "PX_X=a'b\nreboot", NULL };
	char *enroll[] = { "PX_E=x y", NULL };
	struct world_node nd;
	struct world_place pl;
	struct ec2w_userdata u = spot_node(&nd, &pl);
	struct px_error err = {0};
	static char buf[EC2W_USERDATA_MAX];
	size_t n = 0;

	nd.argv = argv;
	nd.env = env;
	u.enroll = enroll;
	u.zone = "";
	cr_assert_eq(ec2w_userdata(&u, buf, sizeof buf, &n, &err), PX_OK,
		     "%s", err.msg);
	cr_assert_null(strstr(buf, "PROTEUS_NODE_ENV"), "%s", buf);
	cr_assert(strstr(buf, "\nexport 'PX_X=a'\\''b\nreboot'\n"
			 "export 'PX_E=x y'\nn=0\n"), "%s", buf);
	cr_assert(strstr(buf, "\nuntil '/opt/proteus/trainer' 'node' "
			 "'it'\\''s $(reboot)' '`reboot`'; do "), "%s", buf);
}

/* What the node gets when sh runs the script: each value exactly as
 * given, none of its $( ), backquotes or lines run.  curl is a stand-in
 * that answers the instance's address; the metadata endpoint set by
 * hand keeps the unit branch out. */
Test(ec2_userdata, sh_runs_hostile_values_as_data)
{
	char *dir = px_tmpdir();
	char curl[512], script[512], pwned[128], arg[1024], envv[1024];
	char want[4096], path[1024], endpoint[600];
	char *argv[] = {
		"/bin/sh", "-c",
		"for a; do printf '[%s]\\n' \"$a\"; done; "
		"printf 'X=[%s]\\nE=[%s]\\n' \"$PX_X\" \"$PX_E\"",
		"node", arg, "tcp://" EC2W_LISTEN_HOST ":7003", NULL,
	};
	char *env[] = { envv, NULL };
	char *enroll[] = { "PX_E=it's", NULL };
	struct world_node nd;
	struct world_place pl;
	struct ec2w_userdata u = spot_node(&nd, &pl);
	struct px_error err = {0};
	static char buf[EC2W_USERDATA_MAX];
	struct pxrun r = {0};
	size_t n = 0;
	FILE *f;

	cr_assert_not_null(dir);
	snprintf(pwned, sizeof pwned, "%s/pwned", dir);
	snprintf(arg, sizeof arg, "it's \"$HOME\" $(touch %s1)\n`touch %s2`;"
		 "touch %s3", pwned, pwned, pwned);
	snprintf(envv, sizeof envv, "PX_X=a'b\n$(touch %s4)`touch %s5`",
		 pwned, pwned);
	nd.argv = argv;
	nd.env = env;
	u.enroll = enroll;
	u.zone = "";
	cr_assert_eq(ec2w_userdata(&u, buf, sizeof buf, &n, &err), PX_OK,
		     "%s", err.msg);
	snprintf(curl, sizeof curl, "%s/curl", dir);
	f = fopen(curl, "w");
	cr_assert_not_null(f);
	fputs("#!/bin/sh\necho 10.1.2.3\n", f);
	fclose(f);
	cr_assert_eq(chmod(curl, 0755), 0);
	snprintf(script, sizeof script, "%s/user-data", dir);
	f = fopen(script, "w");
	cr_assert_not_null(f);
	cr_assert_eq(fwrite(buf, 1, n, f), n);
	fclose(f);
	snprintf(path, sizeof path, "PATH=%s:/usr/bin:/bin", dir);
	snprintf(endpoint, sizeof endpoint,
		 "AWS_EC2_METADATA_SERVICE_ENDPOINT=http://%s/", "127.0.0.1:9");
	{
		const char *const av[] = { "env", path, endpoint, "/bin/sh",
					   script, NULL };

		cr_assert_eq(pxrun(&r, 30, "/usr/bin/env", av), 0);
	}
	cr_assert_eq(r.status, 0, "%s", r.err);
	snprintf(want, sizeof want, "[%s]\n[tcp://10.1.2.3:7003]\n"
		 "X=[%s]\nE=[it's]\n", arg, envv + strlen("PX_X="));
	cr_assert_str_eq(r.out, want);
	for (int k = 1; k <= 5; k++) {
		char p[600];

		snprintf(p, sizeof p, "%s%d", pwned, k);
		cr_assert_neq(access(p, F_OK), 0, "%s was created", p);
	}
	pxrun_free(&r);
	px_rmtree(dir);
	free(dir);
}

Test(ec2_userdata, the_job_key_and_nameless_entries_are_refused)
{
	static const char *const bad[] = {
		"PX_JOB_KEY=00", "PX_JOB_KEY_FILE=/k", "=v", "NOVALUE", NULL,
	};
	static char buf[EC2W_USERDATA_MAX];

	for (const char *const *b = bad; *b; b++) {
		char *env[] = { (char *)*b, NULL };
		struct world_node nd;
		struct world_place pl;
		struct ec2w_userdata u = spot_node(&nd, &pl);
		struct px_error err = {0};
		size_t n = 1;

		nd.env = env;
		cr_assert_eq(ec2w_userdata_check(&nd, &err), PX_EINVAL, "%s",
			     *b);
		cr_assert_eq(ec2w_userdata(&u, buf, sizeof buf, &n, &err),
			     PX_EINVAL, "%s", *b);
		cr_assert_eq(n, 0);
		cr_assert(strstr(err.msg, strncmp(*b, "PX_JOB_KEY", 10) ?
				 "bad environment entry" : "job key"), "%s",
			  err.msg);
	}
}

/* A script of L bytes fits a buffer of L + 1 (its end) and not one of
 * L; nothing is written past the buffer; EC2's limit refuses more. */
Test(ec2_userdata, the_bound_is_exact_and_never_overrun)
{
	struct world_node nd;
	struct world_place pl;
	struct ec2w_userdata u = spot_node(&nd, &pl);
	struct px_error err = {0};
	static char buf[EC2W_USERDATA_MAX + 64];
	static char big[EC2W_USERDATA_MAX];
	char *argv[] = { "/opt/proteus/trainer", "node", big, NULL };
	size_t n = 0, len;

	cr_assert_eq(ec2w_userdata(&u, buf, EC2W_USERDATA_MAX, &n, &err),
		     PX_OK, "%s", err.msg);
	len = n;
	memset(buf, 'Z', sizeof buf);
	cr_assert_eq(ec2w_userdata(&u, buf, len + 1, &n, &err), PX_OK);
	cr_assert_eq(n, len);
	cr_assert_eq(buf[len], 0);
	cr_assert_eq(buf[len + 1], 'Z');
	memset(buf, 'Z', sizeof buf);
	cr_assert_eq(ec2w_userdata(&u, buf, len, &n, &err), PX_ETOOBIG);
	cr_assert_eq(n, 0);
	cr_assert(strstr(err.msg, "past EC2's"), "%s", err.msg);
	for (size_t i = len; i < sizeof buf; i++)
		cr_assert_eq(buf[i], 'Z', "byte %zu written", i);
	memset(big, 'a', sizeof big - 1);
	nd.argv = argv;
	memset(buf, 'Z', sizeof buf);
	cr_assert_eq(ec2w_userdata(&u, buf, EC2W_USERDATA_MAX, &n, &err),
		     PX_ETOOBIG);
	cr_assert(strstr(err.msg, "16384 bytes"), "%s", err.msg);
	for (size_t i = EC2W_USERDATA_MAX; i < sizeof buf; i++)
		cr_assert_eq(buf[i], 'Z', "byte %zu written", i);
}
