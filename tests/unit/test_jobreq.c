/* test_jobreq.c -- the submit request: simulate's job spec plus the
 * trainer and world sections, strict, every error naming its field. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "../../agent/jobreq.h"
#include "../integration/pxrun.h"

#define BASE \
	"\"name\": \"j\", \"region\": \"us-east-1\", \"work_hours\": 8," \
	" \"reference_type\": \"m3.large\", \"instances\": 2,"           \
	" \"reliable\": {\"type\": \"m3.large\", \"count\": 1},"          \
	" \"spot\": {\"types\": [\"m3.large\"], \"max_instances\": 4}"

static enum px_err parse(const char *js, struct job_request *r,
			 struct px_error *e)
{
	return jobreq_parse(js, strlen(js), "job.json", r, e);
}

Test(jobreq, defaults_without_sections)
{
	struct job_request r;
	struct px_error e = {0};

	cr_assert_eq(parse("{" BASE "}", &r, &e), PX_OK, "%s", e.msg);
	cr_assert_str_eq(r.spec.name, "j");
	cr_assert_str_eq(r.trainer.model, "mlr");
	cr_assert_eq(r.trainer.epochs, 1);
	cr_assert_eq(r.trainer.batch, 128);
	cr_assert_eq(r.world.kind, JOB_WORLD_LOCAL);
	cr_assert_eq(r.world.speedup, 0, "0: the daemon's default");
	cr_assert_not(r.world.have_billing);
}

Test(jobreq, every_field)
{
	struct job_request r;
	struct px_error e = {0};
	const char *js = "{" BASE ", \"trainer\": {\"model\": \"mlp\","
		" \"epochs\": 3, \"target_accuracy\": 0.85, \"batch\": 256,"
		" \"lr\": 0.1, \"workers_per_instance\": 2,"
		" \"checkpoint_every\": 50}, \"world\": {\"name\": \"local\","
		" \"speedup\": 600, \"start\": \"2016-03-02\","
		" \"billing\": \"per-second\", \"trace\": \"t.json.gz\","
		" \"ondemand_prices\": \"od.json\"}}";

	cr_assert_eq(parse(js, &r, &e), PX_OK, "%s", e.msg);
	cr_assert_str_eq(r.trainer.model, "mlp");
	cr_assert_eq(r.trainer.epochs, 3);
	cr_assert_float_eq(r.trainer.target_accuracy, 0.85, 1e-12);
	cr_assert_eq(r.trainer.batch, 256);
	cr_assert_float_eq(r.trainer.lr, 0.1, 1e-12);
	cr_assert_eq(r.trainer.workers_per_instance, 2);
	cr_assert_eq(r.trainer.checkpoint_every, 50);
	cr_assert_eq(r.world.speedup, 600);
	cr_assert_eq(r.world.start_s, 1456876800);
	cr_assert(r.world.have_billing);
	cr_assert_eq(r.world.billing, BILLING_PER_SECOND);
	cr_assert_str_eq(r.world.trace, "t.json.gz");
	cr_assert_str_eq(r.world.ondemand, "od.json");
	/* the world may be just a name */
	cr_assert_eq(parse("{" BASE ", \"world\": \"ec2\"}", &r, &e), PX_OK,
		     "%s", e.msg);
	cr_assert_eq(r.world.kind, JOB_WORLD_EC2);
}

/* Each bad value is refused with the path of its field. */
Test(jobreq, errors_name_the_field)
{
	static const struct {
		const char *extra, *want;
	} cases[] = {
		{"\"trainer\": {\"epochs\": 0}", "trainer.epochs"},
		{"\"trainer\": {\"epochs\": 2.5}", "trainer.epochs"},
		{"\"trainer\": {\"batch\": 0}", "trainer.batch"},
		{"\"trainer\": {\"batch\": \"9\"}", "trainer.batch"},
		{"\"trainer\": {\"lr\": 0}", "trainer.lr"},
		{"\"trainer\": {\"lr\": -1}", "trainer.lr"},
		{"\"trainer\": {\"model\": \"resnet\"}", "trainer.model"},
		{"\"trainer\": {\"target_accuracy\": 1.5}",
		 "trainer.target_accuracy"},
		{"\"trainer\": {\"workers_per_instance\": 0}",
		 "trainer.workers_per_instance"},
		{"\"trainer\": {\"epoch\": 2}", "trainer.epoch: unknown"},
		{"\"trainer\": [1]", "trainer: must be an object"},
		{"\"world\": {\"name\": \"gcp\"}", "world.name"},
		{"\"world\": {\"speedup\": 0.5}", "world.speedup"},
		{"\"world\": {\"start\": \"yesterday\"}", "world.start"},
		{"\"world\": {\"billing\": \"monthly\"}", "world.billing"},
		{"\"world\": {\"trace\": \"a\\nb\"}", "world.trace"},
		{"\"world\": {\"zone\": \"x\"}", "world.zone: unknown"},
		{"\"world\": 3", "world: must be"},
		{"\"work_hours\": -1", "work_hours"},
	};
	struct job_request r;

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char js[1024];
		struct px_error e = {0};

		if (!strncmp(cases[i].extra, "\"work_hours\"", 12))
			snprintf(js, sizeof js, "{\"name\": \"j\", \"region\":"
				 " \"us-east-1\", %s, \"reference_type\":"
				 " \"m3.large\", \"instances\": 2,"
				 " \"reliable\": {\"type\": \"m3.large\","
				 " \"count\": 1}, \"spot\": {\"types\":"
				 " [\"m3.large\"], \"max_instances\":"
				 " 4}}", cases[i].extra);
		else
			snprintf(js, sizeof js, "{" BASE ", %s}",
				 cases[i].extra);
		cr_assert_eq(parse(js, &r, &e), PX_EINVAL, "case %zu (%s)",
			     i, cases[i].extra);
		cr_assert(strstr(e.msg, cases[i].want), "case %zu: '%s' "
			  "does not name '%s'", i, e.msg, cases[i].want);
		cr_assert(strstr(e.msg, "job.json"), "%s", e.msg);
	}
}

Test(jobreq, not_json_duplicates_and_size)
{
	struct job_request r;
	struct px_error e = {0};
	static char big[JOBSPEC_FILE_MAX + 2];

	cr_assert_eq(parse("{" BASE ",", &r, &e), PX_EINVAL);
	cr_assert(strstr(e.msg, "job.json:1:"), "%s", e.msg);
	cr_assert_eq(parse("[1]", &r, &e), PX_EINVAL);
	cr_assert_eq(parse("{" BASE ", \"trainer\": {}, \"trainer\": {}}",
			   &r, &e), PX_EINVAL);
	memset(big, ' ', sizeof big - 1);
	cr_assert_eq(jobreq_parse(big, sizeof big - 1, "big.json", &r, &e),
		     PX_ETOOBIG);
}

/* The example the docs and the demo use parses. */
Test(jobreq, shipped_local_example)
{
	char *path = px_src_path("docs/examples/job-local-mlr.json");
	FILE *f = fopen(path, "rb");
	static char buf[65536];
	size_t n;
	struct job_request r;
	struct px_error e = {0};

	cr_assert_not_null(f, "%s", path);
	n = fread(buf, 1, sizeof buf, f);
	fclose(f);
	cr_assert_eq(jobreq_parse(buf, n, path, &r, &e), PX_OK, "%s", e.msg);
	cr_assert_str_eq(r.trainer.model, "mlr");
	cr_assert_gt(r.trainer.epochs, 0);
	cr_assert_eq(r.world.kind, JOB_WORLD_LOCAL);
	free(path);
}
