/* test_awscred.c -- each source of the credential chain, its order, the
 * region lookup, the world-readable warning and IMDS role refresh. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../fake_ec2/fake.h"

static char dir[] = "/tmp/px_awscred_XXXXXX";
static char cred_path[256], conf_path[256];

static void write_file(const char *path, const char *text, mode_t mode)
{
	FILE *f = fopen(path, "w");

	cr_assert(f);
	fputs(text, f);
	fclose(f);
	chmod(path, mode);
}

static void setup(void)
{
	cr_assert(mkdtemp(dir));
	snprintf(cred_path, sizeof cred_path, "%s/credentials", dir);
	snprintf(conf_path, sizeof conf_path, "%s/config", dir);
	unsetenv("AWS_ACCESS_KEY_ID");
	unsetenv("AWS_SECRET_ACCESS_KEY");
	unsetenv("AWS_SESSION_TOKEN");
	unsetenv("AWS_SECURITY_TOKEN");
	unsetenv("AWS_PROFILE");
	unsetenv("AWS_DEFAULT_PROFILE");
	unsetenv("AWS_REGION");
	unsetenv("AWS_DEFAULT_REGION");
	setenv("HOME", dir, 1);
	setenv("AWS_SHARED_CREDENTIALS_FILE", cred_path, 1);
	setenv("AWS_CONFIG_FILE", conf_path, 1);
	setenv("AWS_EC2_METADATA_DISABLED", "true", 1);
}

static void teardown(void)
{
	unlink(cred_path);
	unlink(conf_path);
	rmdir(dir);
}

TestSuite(awscred, .init = setup, .fini = teardown, .timeout = 30);

static struct awscred get(enum px_err want)
{
	struct awscred_provider *p = NULL;
	struct awscred c;
	struct px_error err;

	memset(&c, 0, sizeof c);
	cr_assert_eq(awscred_provider_new(NULL, &p, &err), want, "%s",
		     err.msg);
	if (want == PX_OK) {
		cr_assert_eq(awscred_provider_get(p, 0, &c, &err), PX_OK);
		awscred_provider_free(p);
	}
	return c;
}

Test(awscred, env_first)
{
	struct awscred c;

	write_file(cred_path, "[default]\naws_access_key_id = FILEKEY\n"
		   "aws_secret_access_key = filesecret\n", 0600);
	setenv("AWS_ACCESS_KEY_ID", "ENVKEY", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "envsecret", 1);
	setenv("AWS_SESSION_TOKEN", "envtoken", 1);
	c = get(PX_OK);
	cr_assert_str_eq(c.access_key_id, "ENVKEY");
	cr_assert_str_eq(c.secret_access_key, "envsecret");
	cr_assert_str_eq(c.session_token, "envtoken");
	cr_assert_eq(c.source, AWSCRED_ENV);
	/* half an env pair is ignored: falls through to the file */
	unsetenv("AWS_SECRET_ACCESS_KEY");
	c = get(PX_OK);
	cr_assert_str_eq(c.access_key_id, "FILEKEY");
}

Test(awscred, profile_from_credentials_file)
{
	struct awscred c;

	write_file(cred_path, "# comment\n[default]\naws_access_key_id=DEF\n"
		   "aws_secret_access_key=defsecret\n\n[work]\r\n"
		   "  aws_access_key_id =  WORKKEY  \r\n"
		   "aws_secret_access_key= work/secret+x \r\n"
		   "aws_session_token = worktoken\n", 0600);
	c = get(PX_OK);
	cr_assert_str_eq(c.access_key_id, "DEF");
	cr_assert_eq(c.source, AWSCRED_FILE);
	setenv("AWS_PROFILE", "work", 1);
	c = get(PX_OK);
	cr_assert_str_eq(c.access_key_id, "WORKKEY");
	cr_assert_str_eq(c.secret_access_key, "work/secret+x");
	cr_assert_str_eq(c.session_token, "worktoken");
	setenv("AWS_PROFILE", "nope", 1);
	get(PX_ENOENT);
}

Test(awscred, config_file_and_region)
{
	struct awscred c;
	char region[64];
	struct px_error err;

	write_file(conf_path, "[default]\nregion = eu-west-1\n"
		   "[profile dev]\nregion=ap-south-1\naws_access_key_id=CFG\n"
		   "aws_secret_access_key=cfgsecret\n", 0600);
	cr_assert_eq(awscred_region(region, sizeof region, &err), PX_OK);
	cr_assert_str_eq(region, "eu-west-1");
	get(PX_ENOENT); /* default has no keys in config, IMDS disabled */
	setenv("AWS_PROFILE", "dev", 1);
	c = get(PX_OK);
	cr_assert_str_eq(c.access_key_id, "CFG");
	cr_assert_eq(c.source, AWSCRED_CONFIG);
	cr_assert_eq(awscred_region(region, sizeof region, &err), PX_OK);
	cr_assert_str_eq(region, "ap-south-1");
	setenv("AWS_REGION", "us-west-2", 1);
	cr_assert_eq(awscred_region(region, sizeof region, &err), PX_OK);
	cr_assert_str_eq(region, "us-west-2");
}

Test(awscred, world_readable_warning)
{
	struct awscred_provider *p;
	struct px_error err;

	write_file(cred_path, "[default]\naws_access_key_id=K\n"
		   "aws_secret_access_key=verysecret\n", 0644);
	cr_assert_eq(awscred_provider_new(NULL, &p, &err), PX_OK);
	cr_assert(awscred_provider_warning(p));
	cr_assert(strstr(awscred_provider_warning(p), cred_path));
	cr_assert_null(strstr(awscred_provider_warning(p), "verysecret"));
	awscred_provider_free(p);
	chmod(cred_path, 0600);
	cr_assert_eq(awscred_provider_new(NULL, &p, &err), PX_OK);
	cr_assert_null(awscred_provider_warning(p));
	awscred_provider_free(p);
}

Test(awscred, none_is_a_clear_error)
{
	struct awscred_provider *p;
	struct px_error err;

	cr_assert_eq(awscred_provider_new(NULL, &p, &err), PX_ENOENT);
	cr_assert(strstr(err.msg, "no aws credentials"), "%s", err.msg);
}

Test(awscred, imds_role_refreshed_before_expiry)
{
	struct fake f;
	struct awscred_provider *p;
	struct awscred c1, c2;
	struct awscred_opts o = { 0 };
	struct px_error err;
	char ep[64];
	int64_t now;

	fake_start(&f);
	unsetenv("AWS_EC2_METADATA_DISABLED");
	snprintf(ep, sizeof ep, "http://127.0.0.1:%d", f.port);
	setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", ep, 1);
	/* credentials that expire in 20 min: inside the 15 min window soon */
	json_decref(fake_ctl(&f, "{\"imds\":{\"cred_ttl\":1200}}"));
	cr_assert_eq(awscred_provider_new(&o, &p, &err), PX_OK, "%s", err.msg);
	now = px_now_wall_us() / PX_USEC_PER_SEC;
	cr_assert_eq(awscred_provider_get(p, now, &c1, &err), PX_OK);
	cr_assert_eq(c1.source, AWSCRED_IMDS);
	cr_assert(strncmp(c1.access_key_id, "ASIAFAKEROLE", 12) == 0);
	cr_assert(c1.session_token[0]);
	cr_assert(c1.expiration_s > now + 1000);
	/* unchanged while far from expiry */
	cr_assert_eq(awscred_provider_get(p, now, &c2, &err), PX_OK);
	cr_assert_str_eq(c2.access_key_id, c1.access_key_id);
	/* 6 minutes later: within 15 min of expiry, refreshed */
	cr_assert_eq(awscred_provider_get(p, now + 360, &c2, &err), PX_OK);
	cr_assert_str_neq(c2.access_key_id, c1.access_key_id);
	/* and the refreshed role keys sign EC2 calls the fake accepts */
	struct ec2_config cfg = { .region = "us-east-1", .endpoint = f.url,
				  .creds = p };
	struct ec2_client *c;
	struct ec2_instance_list l = { 0 };
	cr_assert_eq(ec2_client_new(&cfg, &c, &err), PX_OK);
	cr_assert_eq(ec2_describe_instances(c, NULL, 0, NULL, 0, false, &l,
					    &err, NULL), PX_OK, "%s", err.msg);
	ec2_client_free(c);
	awscred_provider_free(p);
	fake_stop(&f);
}
