/* test_jobreq.c -- the submit request: simulate's job spec plus the
 * trainer and world sections, strict, every error naming its field. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
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
	cr_assert_str_empty(r.world.name, "the daemon's default, at submit");
	cr_assert_not(r.world.named);
	cr_assert_eq(r.world.speedup, 0, "0: the daemon's default");
	cr_assert_not(r.world.have_billing);
	cr_assert_not(r.trainer.adapt, "co-adaptation is asked for");
	cr_assert(r.scaling_measured, "the measured scaling is off");
	/* BidBrain with the measured scaling explores, Pollux's way */
	cr_assert(r.explore.on, "the exploration is off");
	cr_assert_eq(r.explore.start, 1);
	cr_assert_float_eq(r.explore.growth, 2.0, 1e-12);
}

/* "scaling_explore": false, true or {"start", "growth"}; on by default
 * only where it can help (the measured scaling in use, BidBrain). */
Test(jobreq, scaling_explore)
{
	struct job_request r;
	struct px_error e = {0};

	cr_assert_eq(parse("{" BASE ", \"scaling_explore\": {\"start\": 2, "
			   "\"growth\": 1.5, \"_why\": \"x\"}}", &r, &e),
		     PX_OK, "%s", e.msg);
	cr_assert(r.explore.on);
	cr_assert_eq(r.explore.start, 2);
	cr_assert_float_eq(r.explore.growth, 1.5, 1e-12);
	cr_assert_eq(parse("{" BASE ", \"scaling_explore\": false}", &r, &e),
		     PX_OK, "%s", e.msg);
	cr_assert_not(r.explore.on);
	cr_assert_eq(parse("{" BASE ", \"scaling_explore\": true}", &r, &e),
		     PX_OK, "%s", e.msg);
	cr_assert(r.explore.on);
	/* off by default where nothing plans with what it measures */
	cr_assert_eq(parse("{" BASE ", \"scaling_measured\": false}", &r,
			   &e), PX_OK, "%s", e.msg);
	cr_assert_not(r.explore.on);
	cr_assert_eq(parse("{" BASE ", \"policy\": \"standard\"}", &r, &e),
		     PX_OK, "%s", e.msg);
	cr_assert_not(r.explore.on);
	/* an object with no fields: the defaults */
	cr_assert_eq(parse("{" BASE ", \"scaling_explore\": {}}", &r, &e),
		     PX_OK, "%s", e.msg);
}

/* A budget below one record's fixed part and a parameter is refused,
 * naming the field; 0 is every checkpoint full. */
Test(jobreq, checkpoint_budget_bounds)
{
	struct job_request r;
	struct px_error e = {0};

	cr_assert_eq(parse("{" BASE ", \"trainer\": {\"checkpoint_budget\": "
			   "103}}", &r, &e), PX_EINVAL);
	cr_assert_not_null(strstr(e.msg, "trainer.checkpoint_budget"), "%s",
			   e.msg);
	cr_assert_not_null(strstr(e.msg, "at least 104"), "%s", e.msg);
	cr_assert_eq(parse("{" BASE ", \"trainer\": {\"checkpoint_budget\": "
			   "0}}", &r, &e), PX_OK, "%s", e.msg);
	cr_assert_eq(r.trainer.checkpoint_budget, 0);
	cr_assert_eq(parse("{" BASE ", \"trainer\": {\"checkpoint_budget\": "
			   "104}}", &r, &e), PX_OK, "%s", e.msg);
}

Test(jobreq, every_field)
{
	struct job_request r;
	struct px_error e = {0};
	const char *js = "{" BASE ", \"trainer\": {\"model\": \"mlp\","
		" \"epochs\": 3, \"target_accuracy\": 0.85, \"batch\": 256,"
		" \"lr\": 0.1, \"workers_per_instance\": 2,"
		" \"checkpoint_every\": 50, \"checkpoint_budget\": 65536,"
		" \"adapt\": true},"
		" \"world\": {\"name\": \"local\","
		" \"speedup\": 600, \"start\": \"2016-03-02\","
		" \"billing\": \"per-second\", \"trace\": \"t.json.gz\","
		" \"ondemand_prices\": \"od.json\"},"
		" \"scaling_measured\": false}";

	cr_assert_eq(parse(js, &r, &e), PX_OK, "%s", e.msg);
	cr_assert_str_eq(r.trainer.model, "mlp");
	cr_assert_eq(r.trainer.epochs, 3);
	cr_assert_float_eq(r.trainer.target_accuracy, 0.85, 1e-12);
	cr_assert_eq(r.trainer.batch, 256);
	cr_assert_float_eq(r.trainer.lr, 0.1, 1e-12);
	cr_assert_eq(r.trainer.workers_per_instance, 2);
	cr_assert_eq(r.trainer.checkpoint_every, 50);
	cr_assert_eq(r.trainer.checkpoint_budget, 65536);
	cr_assert(r.trainer.adapt);
	cr_assert_not(r.scaling_measured);
	cr_assert_eq(r.world.speedup, 600);
	cr_assert_eq(r.world.start_s, 1456876800);
	cr_assert(r.world.have_billing);
	cr_assert_eq(r.world.billing, BILLING_PER_SECOND);
	cr_assert_str_eq(r.world.trace, "t.json.gz");
	cr_assert_str_eq(r.world.ondemand, "od.json");
	cr_assert_not(r.world.rebalance_leave, "the default: ignore");
	cr_assert_eq(r.trainer.data.train[0], '\0', "no data: Fashion-MNIST");
	cr_assert_eq(parse("{" BASE ", \"trainer\": {\"data\": {\"train\": "
			   "\"/d/a.csv\", \"test\": \"/d/b.csv.gz\", "
			   "\"format\": \"csv\", \"scale\": \"standard\", "
			   "\"label_column\": 3}}}", &r, &e), PX_OK, "%s",
		     e.msg);
	cr_assert_str_eq(r.trainer.data.train, "/d/a.csv");
	cr_assert_str_eq(r.trainer.data.test, "/d/b.csv.gz");
	cr_assert_str_eq(r.trainer.data.format, "csv");
	cr_assert_str_eq(r.trainer.data.scale, "standard");
	cr_assert_eq(r.trainer.data.label_column, 3);
	/* the world may be just a name */
	cr_assert_eq(parse("{" BASE ", \"world\": \"ec2\"}", &r, &e), PX_OK,
		     "%s", e.msg);
	cr_assert_str_eq(r.world.name, "ec2");
	cr_assert_not(r.world.rebalance_leave);
	cr_assert_eq(parse("{" BASE ", \"world\": {\"name\": \"ec2\", "
			   "\"rebalance\": \"leave\"}}", &r, &e), PX_OK, "%s",
		     e.msg);
	cr_assert(r.world.rebalance_leave);
	cr_assert_eq(parse("{" BASE ", \"world\": {\"name\": \"ec2\", "
			   "\"rebalance\": \"ignore\"}}", &r, &e), PX_OK, "%s",
		     e.msg);
	cr_assert_not(r.world.rebalance_leave);
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
		{"\"trainer\": {\"adapt\": 1}", "trainer.adapt: must be "
		 "true or false"},
		{"\"trainer\": {\"adapt\": \"yes\"}", "trainer.adapt"},
		{"\"trainer\": [1]", "trainer: must be an object"},
		{"\"world\": {\"name\": \"gcp\"}", "world.name"},
		{"\"world\": {\"speedup\": 0.5}", "world.speedup"},
		{"\"world\": {\"start\": \"yesterday\"}", "world.start"},
		{"\"world\": {\"billing\": \"monthly\"}", "world.billing"},
		{"\"world\": {\"trace\": \"a\\nb\"}", "world.trace"},
		{"\"world\": {\"zone\": \"x\"}", "world.zone: unknown"},
		{"\"world\": {\"name\": \"ec2\", \"rebalance\": \"drain\"}",
		 "world.rebalance: must be \"ignore\" or \"leave\""},
		{"\"world\": {\"name\": \"local\", \"rebalance\": \"leave\"}",
		 "world.rebalance: only the ec2 world"},
		{"\"world\": 3", "world: must be"},
		{"\"scaling_measured\": \"no\"", "scaling_measured: must be "
		 "true or false"},
		{"\"scaling_measured\": 0", "scaling_measured"},
		{"\"scaling_explore\": 1", "scaling_explore: must be true, "
		 "false or an object"},
		{"\"scaling_explore\": {\"start\": 0}",
		 "scaling_explore.start: 0 is out of range (1 to 64)"},
		{"\"scaling_explore\": {\"start\": 1.5}",
		 "scaling_explore.start: must be a whole number"},
		{"\"scaling_explore\": {\"growth\": 0.5}",
		 "scaling_explore.growth: 0.5 is out of range (1 to 16)"},
		{"\"scaling_explore\": {\"growth\": \"2\"}",
		 "scaling_explore.growth: must be a number"},
		{"\"scaling_explore\": {\"grow\": 2}",
		 "scaling_explore.grow: unknown field"},
		{"\"scaling_explore\": true, \"scaling_measured\": false",
		 "scaling_explore: needs the measured scaling"},
		{"\"scaling_explore\": {}, \"policy\": \"spread\"",
		 "scaling_explore: policy 'spread' does not plan with"},
		{"\"trainer\": {\"data\": {\"train\": \"a.svm\", "
		 "\"test\": \"/b.svm\"}}", "trainer.data.train: must be an "
		 "absolute path"},
		{"\"trainer\": {\"data\": {\"train\": \"/a.svm\"}}",
		 "trainer.data.test: missing"},
		{"\"trainer\": {\"data\": {\"train\": \"/a\", \"test\": "
		 "\"/b\", \"format\": \"arff\"}}", "trainer.data.format"},
		{"\"trainer\": {\"data\": {\"train\": \"/a\", \"test\": "
		 "\"/b\", \"scale\": \"minmax\"}}", "trainer.data.scale"},
		{"\"trainer\": {\"data\": {\"train\": \"/a\", \"test\": "
		 "\"/b\", \"label_column\": 0}}", "trainer.data.label_column"},
		{"\"trainer\": {\"data\": {\"train\": \"/a\", \"test\": "
		 "\"/b\", \"labels\": 1}}", "trainer.data.labels: unknown"},
		{"\"trainer\": {\"data\": \"/a\"}", "trainer.data: must be "
		 "an object"},
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
		     PX_EINVAL, "1 MiB of blanks is read (and is no JSON)");
	cr_assert(strstr(e.msg, "big.json:"), "%s", e.msg);
}

/* A job of n bytes: BASE, extra, then a '_' comment padding it out. */
static char *padded(const char *extra, size_t n)
{
	char *s = malloc(n + 1);
	int k;

	cr_assert_not_null(s);
	k = snprintf(s, n + 1, "{" BASE ", %s, \"_pad\": \"", extra);
	cr_assert(k > 0 && (size_t)k + 2 < n);
	memset(s + k, 'x', n - (size_t)k - 2);
	memcpy(s + n - 2, "\"}", 3);
	return s;
}

/* What the daemon reads of a job proteusctl accepted (a 1 MiB file, its
 * numbers written out with 17 digits) is more than 1 MiB: it is read,
 * and a bad field is named, not the size. */
Test(jobreq, a_submitted_job_is_bounded_by_what_submit_sends)
{
	struct job_request r;
	struct px_error e = {0};
	char *js = padded("\"trainer\": {\"epochs\": 0}",
			  5 * JOBSPEC_FILE_MAX / 2);

	cr_assert_eq(parse(js, &r, &e), PX_EINVAL, "%s", e.msg);
	cr_assert(strstr(e.msg, "job.json: trainer.epochs: 0 is out of "
			 "range"), "%s", e.msg);
	free(js);
	/* the comment was the bulk: without the bad field, the job parses */
	js = padded("\"trainer\": {\"epochs\": 3}", 2 * JOBSPEC_FILE_MAX);
	cr_assert_eq(parse(js, &r, &e), PX_OK, "%s", e.msg);
	cr_assert_eq(r.trainer.epochs, 3);
	free(js);
	/* past what proteusctl can send: refused on its size */
	js = padded("\"trainer\": {}", JOBREQ_SENT_MAX + 1);
	cr_assert_eq(parse(js, &r, &e), PX_ETOOBIG);
	cr_assert(strstr(e.msg, "more than the"), "%s", e.msg);
	free(js);
}

/* The spec proper (no comments) over 1 MiB of compact JSON: its largest
 * field is named, with the limit. */
Test(jobreq, an_oversized_spec_names_its_largest_field)
{
	struct job_request r;
	struct px_error e = {0};
	size_t n = 250000, k;
	char *js = malloc(4 * n + 256), *p = js;

	cr_assert_not_null(js);
	p += sprintf(p, "{\"name\": \"j\", \"speed\": {\"m3.large\": 1}, "
		     "\"spot\": {\"types\": [");
	for (k = 0; k < n; k++)
		p += sprintf(p, "%s0.1", k ? "," : "");
	sprintf(p, "]}}");
	cr_assert_lt(strlen(js), JOBSPEC_FILE_MAX + 64);
	cr_assert_eq(parse(js, &r, &e), PX_ETOOBIG, "%s", e.msg);
	cr_assert(strstr(e.msg, "job.json: spot: "), "%s", e.msg);
	cr_assert(strstr(e.msg, "more than the 1048576"), "%s", e.msg);
	free(js);
}

/* BASE less one of its fields */
#define F_N "\"name\": \"j\""
#define F_R "\"region\": \"us-east-1\""
#define F_RT "\"reference_type\": \"m3.large\""
#define F_REL "\"reliable\": {\"type\": \"m3.large\", \"count\": 1}"
#define F_SPOT "\"spot\": {\"types\": [\"m3.large\"], \"max_instances\": 4}"
#define F_WI "\"work_hours\": 8, \"instances\": 2"
#define REST_N F_R ", " F_RT ", " F_REL ", " F_SPOT ", " F_WI
#define REST_R F_N ", " F_RT ", " F_REL ", " F_SPOT ", " F_WI
#define REST_RT F_N ", " F_R ", " F_REL ", " F_SPOT ", " F_WI
#define REST_REL F_N ", " F_R ", " F_RT ", " F_SPOT ", " F_WI
#define REST_SPOT F_N ", " F_R ", " F_RT ", " F_REL ", " F_WI

/* Every string of the request has a bound; 100 KB in any one of them is
 * refused naming the field and the bound, as is a field of any name. */
Test(jobreq, every_string_has_a_bound)
{
	static const struct {
		const char *fmt, *want;
	} cases[] = {
		{"{\"name\": \"%s\", " REST_N "}", "name: longer than 63 bytes"},
		{"{\"region\": \"%s\", " REST_R "}",
		 "region: longer than 63 bytes"},
		{"{\"reference_type\": \"%s\", " REST_RT "}",
		 "reference_type: longer than 63 bytes"},
		{"{\"reliable\": {\"type\": \"%s\", \"count\": 1}, " REST_REL
		 "}", "reliable.type: longer than 63 bytes"},
		{"{\"spot\": {\"types\": [\"%s\"]}, " REST_SPOT "}",
		 "spot.types[0]: longer than 63 bytes"},
		{"{\"spot\": {\"types\": [\"m3.large\"], \"zones\": [\"%s\"]}, "
		 REST_SPOT "}", "spot.zones[0]: longer than 63"},
		{"{" BASE ", \"spot_advisor\": \"%s\"}",
		 "spot_advisor: longer than 1023 bytes"},
		{"{" BASE ", \"policy\": \"%s\"}", "policy: at most 31 bytes"},
		{"{" BASE ", \"trainer\": {\"model\": \"%s\"}}",
		 "trainer.model: at most 7 bytes"},
		{"{" BASE ", \"trainer\": {\"device\": \"%s\"}}",
		 "trainer.device: at most 7 bytes"},
		{"{" BASE ", \"world\": \"%s\"}", "world.name: at most 63 bytes"},
		{"{" BASE ", \"world\": {\"name\": \"%s\"}}",
		 "world.name: at most 63 bytes"},
		{"{" BASE ", \"world\": {\"start\": \"%s\"}}",
		 "world.start: at most 63 bytes"},
		{"{" BASE ", \"world\": {\"billing\": \"%s\"}}",
		 "world.billing: at most 63 bytes"},
		{"{" BASE ", \"world\": {\"trace\": \"%s\"}}",
		 "world.trace: at most 1023 bytes"},
		{"{" BASE ", \"world\": {\"ondemand_prices\": \"%s\"}}",
		 "world.ondemand_prices: at most 1023 bytes"},
		{"{" BASE ", \"speed\": {\"%s\": 1}}", "speed."},
		{"{" BASE ", \"interruption_rates\": {\"%s\": 1}}",
		 "interruption_rates."},
		{"{" BASE ", \"trainer\": {\"%s\": 1}}", "...: unknown field"},
		{"{" BASE ", \"world\": {\"%s\": 1}}", "...: unknown field"},
		{"{" BASE ", \"%s\": 1}", "...: unknown field"},
	};
	static char big[100001], js[110000];
	struct job_request r;
	struct px_error e = {0};

	memset(big, 'x', sizeof big - 1);
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		snprintf(js, sizeof js, cases[i].fmt, big);
		cr_assert_eq(parse(js, &r, &e), PX_EINVAL, "case %zu", i);
		cr_assert(strstr(e.msg, cases[i].want), "case %zu: '%s' does "
			  "not say '%s'", i, e.msg, cases[i].want);
		cr_assert(strstr(e.msg, "job.json: "), "%s", e.msg);
	}
}

/* A field's name in a message is terminal-safe and cut short. */
Test(jobreq, unknown_field_names_are_shown_safely)
{
	struct job_request r;
	struct px_error e = {0};

	cr_assert_eq(parse("{" BASE ", \"trainer\": {\"\\u001b[2Jx\": 1}}",
			   &r, &e), PX_EINVAL);
	cr_assert_str_eq(e.msg, "job.json: trainer.\\x1b[2Jx: unknown field");
	cr_assert_eq(parse("{" BASE ", \"\\u001b[2Jx\": 1}", &r, &e),
		     PX_EINVAL);
	cr_assert_str_eq(e.msg, "job.json: \\x1b[2Jx: unknown field");
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
	cr_assert(!r.world.named || !strcmp(r.world.name, "local"), "%s",
		  r.world.name);
	free(path);
}

#define DATA "\"data\": {\"train\": \"/r.csv\", \"test\": \"/t.csv\"}"

/* trainer.model "mf" with trainer.rank, its ratings in trainer.data; and
 * what it does not take, each naming the field. */
Test(jobreq, mf_fields)
{
	static const struct {
		const char *trainer, *want;
	} bad[] = {
		{"\"model\": \"mlp\", \"rank\": 4", "trainer.rank: only for "
		 "model \"mf\""},
		{"\"model\": \"mf\", \"rank\": 0", "trainer.rank: 0 is out of "
		 "range (1 to 1024)"},
		{"\"model\": \"mf\", \"rank\": 1025", "trainer.rank"},
		{"\"model\": \"mf\"", "trainer.data: model \"mf\" needs its "
		 "ratings"},
		{"\"model\": \"mf\", \"device\": \"cuda\", " DATA,
		 "trainer.device: model \"mf\" trains on the CPU"},
		{"\"model\": \"mf\", \"target_accuracy\": 0.9, " DATA,
		 "trainer.target_accuracy: model \"mf\" has no accuracy"},
		{"\"model\": \"mf\", \"data\": {\"train\": \"/r.svm\", "
		 "\"test\": \"/t.svm\", \"format\": \"libsvm\"}",
		 "trainer.data.format: model \"mf\" reads CSV"},
		{"\"model\": \"mf\", \"data\": {\"train\": \"/r.csv\", "
		 "\"test\": \"/t.csv\", \"scale\": \"standard\"}",
		 "trainer.data.scale: not for model \"mf\""},
		{"\"model\": \"mf\", \"data\": {\"train\": \"/r.csv\", "
		 "\"test\": \"/t.csv\", \"label_column\": 3}",
		 "trainer.data.label_column: not for model \"mf\""},
	};
	struct job_request r;
	struct px_error e = {0};
	char js[1024];

	snprintf(js, sizeof js, "{" BASE ", \"trainer\": {\"model\": \"mf\", "
		 "\"rank\": 8, %s}}", DATA);
	cr_assert_eq(parse(js, &r, &e), PX_OK, "%s", e.msg);
	cr_assert_str_eq(r.trainer.model, "mf");
	cr_assert_eq(r.trainer.rank, 8);
	cr_assert_str_eq(r.trainer.data.train, "/r.csv");
	snprintf(js, sizeof js, "{" BASE ", \"trainer\": {\"model\": \"mf\", "
		 "%s}}", DATA);
	cr_assert_eq(parse(js, &r, &e), PX_OK, "%s", e.msg);
	cr_assert_eq(r.trainer.rank, 0, "0: the trainer's default");
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		snprintf(js, sizeof js, "{" BASE ", \"trainer\": {%s}}",
			 bad[i].trainer);
		cr_assert_eq(parse(js, &r, &e), PX_EINVAL, "case %zu", i);
		cr_assert(strstr(e.msg, bad[i].want), "case %zu: '%s' not in "
			  "'%s'", i, bad[i].want, e.msg);
	}
}

/* ---- program: the user's own program ---- */

#define SHA_UP "0123456789ABCDEF0123456789abcdef0123456789ABCDEF0123456789abcdef"
#define SHA_LO "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

/* The i-th of the packed strings at s (each NUL-ended). */
static const char *packed(const char *s, int i)
{
	while (i-- > 0)
		s += strlen(s) + 1;
	return s;
}

Test(jobreq, program_every_field)
{
	struct job_request r;
	struct px_error e = {0};
	const char *js = "{" BASE ", \"workload\": \"program\", \"program\": {"
		"\"command\": [\"python3\", \"train.py\", \"--lr\", \"0.1\"],"
		" \"code\": \"https://h.example/c/code.tar.gz?X-Sig=1\","
		" \"code_sha256\": \"" SHA_UP "\","
		" \"env\": {\"B_FIRST\": \"1\", \"a2\": \"x=y\", \"PATH\": "
		"\"/opt/bin:/usr/bin\", \"HOME\": \"\"},"
		" \"nodes\": {\"min\": 2, \"max\": 5}, \"procs_per_node\": 8,"
		" \"grace_seconds\": 60, \"max_restarts_on_errors\": 3,"
		" \"stall_seconds\": 600, \"checkpoint_keep\": 5,"
		" \"checkpoint_max_mb\": 8192,"
		" \"checkpoint_store\": \"s3://bkt/runs/a\","
		" \"membership\": \"fixed\","
		" \"samples\": 6000000000}}";
	const struct job_program *p = &r.program;

	cr_assert_eq(parse(js, &r, &e), PX_OK, "%s", e.msg);
	cr_assert(p->on);
	cr_assert_str_eq(r.workload, "program");
	cr_assert_eq(p->argc, 4);
	cr_assert_str_eq(packed(p->cmd, 0), "python3");
	cr_assert_str_eq(packed(p->cmd, 1), "train.py");
	cr_assert_str_eq(packed(p->cmd, 2), "--lr");
	cr_assert_str_eq(packed(p->cmd, 3), "0.1");
	cr_assert_str_eq(p->code, "https://h.example/c/code.tar.gz?X-Sig=1");
	cr_assert_str_eq(p->code_sha256, SHA_LO, "kept in lower case");
	/* in the spec's order */
	cr_assert_eq(p->nenv, 4);
	cr_assert_str_eq(packed(p->env, 0), "B_FIRST=1");
	cr_assert_str_eq(packed(p->env, 1), "a2=x=y");
	cr_assert_str_eq(packed(p->env, 2), "PATH=/opt/bin:/usr/bin");
	cr_assert_str_eq(packed(p->env, 3), "HOME=");
	cr_assert_eq(p->nodes_min, 2);
	cr_assert_eq(p->nodes_max, 5);
	cr_assert_eq(p->procs_per_node, 8);
	cr_assert_eq(p->grace_seconds, 60);
	cr_assert_eq(p->max_restarts_on_errors, 3);
	cr_assert_eq(p->stall_seconds, 600);
	cr_assert_eq(p->checkpoint_keep, 5);
	cr_assert_eq(p->checkpoint_max_mb, 8192);
	cr_assert_str_eq(p->checkpoint_store, "s3://bkt/runs/a");
	cr_assert_eq(p->samples, 6000000000LL);
	cr_assert_str_eq(p->membership, "fixed");
	cr_assert_eq(parse("{" BASE ", \"program\": {\"command\": [\"./run\"],"
			   " \"membership\": \"sometimes\"}}", &r, &e),
		     PX_EINVAL);
	cr_assert(strstr(e.msg, "program.membership"), "%s", e.msg);
	/* a path, with a SHA-256 or without; an s3:// .tgz */
	cr_assert_eq(parse("{" BASE ", \"program\": {\"command\": [\"./run\"],"
			   " \"code\": \"/home/u/proj\"}}", &r, &e), PX_OK,
		     "%s", e.msg);
	cr_assert_str_eq(p->code, "/home/u/proj");
	cr_assert_str_empty(p->code_sha256);
	cr_assert_eq(parse("{" BASE ", \"program\": {\"command\": [\"./run\"],"
			   " \"code\": \"s3://b/k/c.tgz\", \"code_sha256\": \""
			   SHA_LO "\"}}", &r, &e), PX_OK, "%s", e.msg);
	cr_assert_str_eq(p->code, "s3://b/k/c.tgz");
}

/* Only the command is needed; the workload follows from the section. */
Test(jobreq, program_defaults)
{
	struct job_request r;
	struct px_error e = {0};
	const struct job_program *p = &r.program;

	cr_assert_eq(parse("{" BASE ", \"program\": {\"command\": "
			   "[\"/bin/true\"]}}", &r, &e), PX_OK, "%s", e.msg);
	cr_assert(p->on);
	cr_assert_str_eq(r.workload, "program");
	cr_assert_eq(p->argc, 1);
	cr_assert_str_eq(p->cmd, "/bin/true");
	cr_assert_str_empty(p->code, "none: the command is on the node");
	cr_assert_eq(p->nenv, 0);
	cr_assert_eq(p->nodes_min, 1);
	cr_assert_eq(p->nodes_max, 5, "reliable.count 1 + max_instances 4");
	cr_assert_eq(p->procs_per_node, 1);
	cr_assert_eq(p->grace_seconds, PROGRAM_GRACE_DEFAULT_S);
	cr_assert_eq(p->grace_seconds, 110);
	cr_assert_eq(p->max_restarts_on_errors, 0);
	cr_assert_eq(p->stall_seconds, 0);
	cr_assert_eq(p->reform_seconds, 120);
	cr_assert_eq(p->checkpoint_keep, PROGRAM_KEEP_DEFAULT);
	cr_assert_eq(p->checkpoint_max_mb, PROGRAM_CKPT_MB_DEFAULT);
	cr_assert_str_empty(p->checkpoint_store, "the head node");
	cr_assert_eq(p->samples, 0);
	/* the trainer keeps its defaults, unused */
	cr_assert_str_eq(r.trainer.model, "mlr");
	/* without a section: no program, the trainer */
	cr_assert_eq(parse("{" BASE "}", &r, &e), PX_OK, "%s", e.msg);
	cr_assert_not(p->on);
	cr_assert_str_eq(r.workload, "trainer");
	/* the bounds' ends */
	cr_assert_eq(parse("{" BASE ", \"program\": {\"command\": [\"x\"], "
			   "\"nodes\": {\"min\": 5}, \"grace_seconds\": 1, "
			   "\"stall_seconds\": 10, \"samples\": 0, "
			   "\"reform_seconds\": 5, "
			   "\"checkpoint_store\": \"\", \"code\": \"\"}}",
			   &r, &e), PX_OK, "%s", e.msg);
	cr_assert_eq(p->nodes_min, 5);
	cr_assert_eq(p->nodes_max, 5);
	cr_assert_eq(p->stall_seconds, 10);
	cr_assert_eq(p->reform_seconds, 5);
	cr_assert_eq(parse("{" BASE ", \"program\": {\"command\": [\"x\"], "
			   "\"reform_seconds\": 86400}}", &r, &e), PX_OK,
		     "%s", e.msg);
	cr_assert_eq(p->reform_seconds, 86400);
}

/* Each bad program field is refused with its path. */
Test(jobreq, program_errors_name_the_field)
{
	static const struct {
		const char *prog, *want;
	} cases[] = {
		{"", "program.command: missing"},
		{"\"command\": []", "program.command: must be an array of 1"},
		{"\"command\": \"python3 x.py\"", "program.command: must be"},
		{"\"command\": [\"a\", \"b\", \"\"]",
		 "program.command[2]: must be a non-empty string"},
		{"\"command\": [\"a\", 3]", "program.command[1]: must be"},
		{"\"command\": [\"x\"], \"cmd\": 1", "program.cmd: unknown "
		 "field"},
		{"\"command\": [\"x\"], \"code\": \"proj\"", "program.code: "
		 "must be an absolute path (proteusctl submit makes"},
		{"\"command\": [\"x\"], \"code\": \"./proj\"", "program.code: "
		 "must be an absolute path"},
		{"\"command\": [\"x\"], \"code\": \"https://h/c.tar.gz\"",
		 "program.code_sha256: missing"},
		{"\"command\": [\"x\"], \"code\": \"ftp://h/c.tar.gz\", "
		 "\"code_sha256\": \"" SHA_LO "\"", "program.code: a URL must "
		 "be http://, https:// or s3://"},
		{"\"command\": [\"x\"], \"code\": \"https://h/c.zip?a=.tgz\", "
		 "\"code_sha256\": \"" SHA_LO "\"", "program.code: a URL names "
		 "a tarball"},
		{"\"command\": [\"x\"], \"code\": 7", "program.code: must be a "
		 "string"},
		{"\"command\": [\"x\"], \"code\": \"/p\", \"code_sha256\": "
		 "\"abc\"", "program.code_sha256: must be a SHA-256"},
		{"\"command\": [\"x\"], \"code_sha256\": \"" SHA_LO "\"",
		 "program.code_sha256: only with code"},
		{"\"command\": [\"x\"], \"env\": [\"A=1\"]", "program.env: must "
		 "be an object"},
		{"\"command\": [\"x\"], \"env\": {\"1A\": \"x\"}",
		 "program.env.1A: a name is"},
		{"\"command\": [\"x\"], \"env\": {\"A-B\": \"x\"}",
		 "program.env.A-B: a name is"},
		{"\"command\": [\"x\"], \"env\": {\"\": \"x\"}",
		 "program.env.: a name is"},
		{"\"command\": [\"x\"], \"env\": {\"A\": 1}",
		 "program.env.A: must be a string"},
		{"\"command\": [\"x\"], \"nodes\": 2", "program.nodes: must be "
		 "an object"},
		{"\"command\": [\"x\"], \"nodes\": {\"min\": 0}",
		 "program.nodes.min: 0 is out of range"},
		{"\"command\": [\"x\"], \"nodes\": {\"max\": 0}",
		 "program.nodes.max: 0 is out of range"},
		{"\"command\": [\"x\"], \"nodes\": {\"min\": 1.5}",
		 "program.nodes.min: must be a whole number"},
		{"\"command\": [\"x\"], \"nodes\": {\"min\": 3, \"max\": 2}",
		 "program.nodes.min: 3 is more than max (2)"},
		{"\"command\": [\"x\"], \"nodes\": {\"min\": 1, \"most\": 2}",
		 "program.nodes.most: unknown field"},
		{"\"command\": [\"x\"], \"procs_per_node\": 0",
		 "program.procs_per_node: 0 is out of range (1 to 64)"},
		{"\"command\": [\"x\"], \"procs_per_node\": 65",
		 "program.procs_per_node"},
		{"\"command\": [\"x\"], \"grace_seconds\": 0",
		 "program.grace_seconds: 0 is out of range (1 to 110)"},
		{"\"command\": [\"x\"], \"grace_seconds\": 111",
		 "program.grace_seconds: 111 is out of range (1 to 110)"},
		{"\"command\": [\"x\"], \"max_restarts_on_errors\": -1",
		 "program.max_restarts_on_errors: -1 is out of range (0 to "
		 "100)"},
		{"\"command\": [\"x\"], \"max_restarts_on_errors\": 101",
		 "program.max_restarts_on_errors"},
		{"\"command\": [\"x\"], \"stall_seconds\": 9",
		 "program.stall_seconds: 0 (none) or 10 to 604800"},
		{"\"command\": [\"x\"], \"stall_seconds\": 604801",
		 "program.stall_seconds: 604801 is out of range"},
		{"\"command\": [\"x\"], \"reform_seconds\": 4",
		 "program.reform_seconds: 4 is out of range (5 to 86400)"},
		{"\"command\": [\"x\"], \"reform_seconds\": 86401",
		 "program.reform_seconds: 86401 is out of range"},
		{"\"command\": [\"x\"], \"checkpoint_keep\": 0",
		 "program.checkpoint_keep: 0 is out of range (1 to 100)"},
		{"\"command\": [\"x\"], \"checkpoint_keep\": 101",
		 "program.checkpoint_keep"},
		{"\"command\": [\"x\"], \"checkpoint_max_mb\": 0",
		 "program.checkpoint_max_mb: 0 is out of range (1 to 1048576)"},
		{"\"command\": [\"x\"], \"checkpoint_max_mb\": 1048577",
		 "program.checkpoint_max_mb"},
		{"\"command\": [\"x\"], \"checkpoint_store\": \"/mnt/ck\"",
		 "program.checkpoint_store: must be \"\" (the head node) or "
		 "\"s3://BUCKET/PREFIX\""},
		{"\"command\": [\"x\"], \"checkpoint_store\": \"s3://\"",
		 "program.checkpoint_store: must be"},
		{"\"command\": [\"x\"], \"checkpoint_store\": \"s3:///p\"",
		 "program.checkpoint_store: must be"},
		{"\"command\": [\"x\"], \"samples\": -1",
		 "program.samples: -1 is out of range"},
		{"\"command\": [\"x\"], \"samples\": 1e6",
		 "program.samples: must be a whole number"},
	};
	struct job_request r;
	struct px_error e0 = {0};

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char js[2048];
		struct px_error e = {0};

		snprintf(js, sizeof js, "{" BASE ", \"program\": {%s}}",
			 cases[i].prog);
		cr_assert_eq(parse(js, &r, &e), PX_EINVAL, "case %zu (%s)",
			     i, cases[i].prog);
		cr_assert(strstr(e.msg, cases[i].want), "case %zu: '%s' "
			  "does not name '%s'", i, e.msg, cases[i].want);
		cr_assert(strstr(e.msg, "job.json: "), "%s", e.msg);
	}
	cr_assert_eq(parse("{" BASE ", \"program\": [\"x\"]}", &r, &e0),
		     PX_EINVAL);
	cr_assert(strstr(e0.msg, "job.json: program: must be an object"),
		  "%s", e0.msg);
}

/* A NUL in an argument or a value (which no argv or environment can
 * hold) is refused where the JSON is read, at its line and column
 * (jansson without JSON_ALLOW_NUL; the fields' own length checks stay
 * behind it). */
Test(jobreq, program_nul_refused)
{
	static const char *const progs[] = {
		"\"command\": [\"a\", \"b\\u0000c\"]",
		"\"command\": [\"\\u0000\"]",
		"\"command\": [\"x\"], \"env\": {\"A\": \"a\\u0000b\"}",
	};
	struct job_request r;
	struct px_error e = {0};
	char js[1024];

	for (size_t i = 0; i < sizeof progs / sizeof *progs; i++) {
		snprintf(js, sizeof js, "{" BASE ", \"program\": {%s}}",
			 progs[i]);
		cr_assert_eq(parse(js, &r, &e), PX_EINVAL, "%s", progs[i]);
		cr_assert(strstr(e.msg, "job.json:1:"), "%s", e.msg);
		cr_assert(strstr(e.msg, "\\u0000"), "%s", e.msg);
	}
}

/* The program and the trainer are one or the other, and the workload
 * says the same as the section. */
Test(jobreq, program_workload_and_trainer)
{
	struct job_request r;
	struct px_error e = {0};

	cr_assert_eq(parse("{" BASE ", \"trainer\": {}, \"program\": "
			   "{\"command\": [\"x\"]}}", &r, &e), PX_EINVAL);
	cr_assert(strstr(e.msg, "job.json: program, trainer: one or the "
			 "other"), "%s", e.msg);
	cr_assert_eq(parse("{" BASE ", \"workload\": \"trainer\", \"program\": "
			   "{\"command\": [\"x\"]}}", &r, &e), PX_EINVAL);
	cr_assert(strstr(e.msg, "job.json: workload: 'trainer', but a "
			 "program section implies workload \"program\""),
		  "%s", e.msg);
	cr_assert_eq(parse("{" BASE ", \"workload\": 1, \"program\": "
			   "{\"command\": [\"x\"]}}", &r, &e), PX_EINVAL);
	cr_assert(strstr(e.msg, "workload: must be a string"), "%s", e.msg);
	cr_assert_eq(parse("{" BASE ", \"workload\": \"program\"}", &r, &e),
		     PX_EINVAL);
	cr_assert(strstr(e.msg, "job.json: program: needed with workload "
			 "\"program\""), "%s", e.msg);
	/* other names still go by the registry */
	cr_assert_eq(parse("{" BASE ", \"workload\": \"nope\"}", &r, &e),
		     PX_EINVAL);
	cr_assert(strstr(e.msg, "workload: unknown workload 'nope'"), "%s",
		  e.msg);
	cr_assert_eq(parse("{" BASE ", \"workload\": \"trainer\"}", &r, &e),
		     PX_OK, "%s", e.msg);
	cr_assert_str_eq(r.workload, "trainer");
}

/* Names the node sets, and credentials, are refused by name. */
Test(jobreq, program_env_reserved)
{
	static const char *const reserved[] = {
		"PROTEUS_X", "PET_NNODES", "MASTER_PORT",
		"AWS_SECRET_ACCESS_KEY", "PX_JOB", "TORCHELASTIC_RUN_ID",
		"MASTER_ADDR", "RANK", "LOCAL_RANK", "WORLD_SIZE",
		"LOCAL_WORLD_SIZE", "GROUP_RANK", "ROLE_RANK",
		"ROLE_WORLD_SIZE", "NODE_RANK", "AWS_ACCESS_KEY_ID",
		"AWS_SESSION_TOKEN", "LD_PRELOAD", "LD_LIBRARY_PATH",
	};
	struct job_request r;
	struct px_error e = {0};
	char js[1024], want[128];

	for (size_t i = 0; i < sizeof reserved / sizeof *reserved; i++) {
		snprintf(js, sizeof js, "{" BASE ", \"program\": {\"command\":"
			 " [\"x\"], \"env\": {\"OK\": \"1\", \"%s\": \"1\"}}}",
			 reserved[i]);
		snprintf(want, sizeof want, "job.json: program.env.%s: "
			 "reserved (", reserved[i]);
		cr_assert_eq(parse(js, &r, &e), PX_EINVAL, "%s", reserved[i]);
		cr_assert(strstr(e.msg, want), "'%s' does not say '%s'",
			  e.msg, want);
	}
	cr_assert(strstr(e.msg, "it would change what runs"), "%s", e.msg);
	/* a name that only looks like one is the user's */
	cr_assert_eq(parse("{" BASE ", \"program\": {\"command\": [\"x\"], "
			   "\"env\": {\"RANKS\": \"1\", \"MY_RANK\": \"2\", "
			   "\"PROTEUS\": \"3\", \"PATH\": \"/bin\"}}}", &r,
			   &e), PX_OK, "%s", e.msg);
	cr_assert_eq(r.program.nenv, 4);
}

/* A spec of a program with n env entries (or n command entries). */
static char *program_of(size_t n, bool env, const char *fill)
{
	size_t len = n * (strlen(fill) + 32) + 1024, k;
	char *s = malloc(len), *p = s;

	cr_assert_not_null(s);
	p += sprintf(p, "{" BASE ", \"program\": {\"command\": [%s",
		     env ? "\"x\"], \"env\": {" : "");
	for (k = 0; k < n; k++)
		p += env ? sprintf(p, "%s\"V%zu\": \"%s\"", k ? ", " : "", k,
				   fill) :
			   sprintf(p, "%s\"%s\"", k ? ", " : "", fill);
	sprintf(p, "%s}}", env ? "}" : "]");
	cr_assert_lt(strlen(s), len);
	return s;
}

/* env and command hold at most their counts and bytes. */
Test(jobreq, program_env_and_command_bounds)
{
	static char big[PROGRAM_ENV_BYTES];
	char nm[PROGRAM_ENV_NAME_MAX + 2], one[1024];
	struct job_request r;
	struct px_error e = {0};
	char *js;

	js = program_of(PROGRAM_ENV_MAX, true, "v");
	cr_assert_eq(parse(js, &r, &e), PX_OK, "%s", e.msg);
	cr_assert_eq(r.program.nenv, PROGRAM_ENV_MAX);
	cr_assert_str_eq(packed(r.program.env, PROGRAM_ENV_MAX - 1),
			 "V127=v");
	free(js);
	js = program_of(PROGRAM_ENV_MAX + 1, true, "v");
	cr_assert_eq(parse(js, &r, &e), PX_EINVAL);
	cr_assert(strstr(e.msg, "job.json: program.env: 129 variables, more "
			 "than the 128"), "%s", e.msg);
	free(js);
	/* 128 values of 300 bytes: over the environment's 32768 */
	memset(big, 'y', 300);
	js = program_of(PROGRAM_ENV_MAX, true, big);
	cr_assert_eq(parse(js, &r, &e), PX_EINVAL);
	cr_assert(strstr(e.msg, "program.env.V"), "%s", e.msg);
	cr_assert(strstr(e.msg, "over 32768 bytes"), "%s", e.msg);
	free(js);
	js = program_of(PROGRAM_ARGS_MAX, false, "a");
	cr_assert_eq(parse(js, &r, &e), PX_OK, "%s", e.msg);
	cr_assert_eq(r.program.argc, PROGRAM_ARGS_MAX);
	free(js);
	js = program_of(PROGRAM_ARGS_MAX + 1, false, "a");
	cr_assert_eq(parse(js, &r, &e), PX_EINVAL);
	cr_assert(strstr(e.msg, "program.command: must be an array of 1 to "
			 "256"), "%s", e.msg);
	free(js);
	/* 200 arguments of 100 bytes: over the command's 16384 */
	memset(big, 'z', sizeof big);
	big[100] = '\0';
	js = program_of(200, false, big);
	cr_assert_eq(parse(js, &r, &e), PX_EINVAL);
	cr_assert(strstr(e.msg, "job.json: program.command[162]: the command "
			 "is over 16384 bytes"), "%s", e.msg);
	free(js);
	/* a name of 129 bytes */
	memset(nm, 'N', sizeof nm - 1);
	nm[sizeof nm - 1] = '\0';
	snprintf(one, sizeof one, "{" BASE ", \"program\": {\"command\": "
		 "[\"x\"], \"env\": {\"%s\": \"1\"}}}", nm);
	cr_assert_eq(parse(one, &r, &e), PX_EINVAL);
	cr_assert(strstr(e.msg, "at most 128 bytes"), "%s", e.msg);
}

/* nodes.max is held to the job's fleet once the spec is read. */
Test(jobreq, program_nodes_fit_the_fleet)
{
	struct job_request r;
	struct px_error e = {0};

	cr_assert_eq(parse("{" BASE ", \"program\": {\"command\": [\"x\"], "
			   "\"nodes\": {\"max\": 6}}}", &r, &e), PX_EINVAL);
	cr_assert(strstr(e.msg, "job.json: program.nodes.max: 6 is more than "
			 "the job's 5 nodes at most (reliable.count + "
			 "spot.max_instances)"), "%s", e.msg);
	cr_assert_eq(parse("{" BASE ", \"program\": {\"command\": [\"x\"], "
			   "\"nodes\": {\"min\": 6}}}", &r, &e), PX_EINVAL);
	cr_assert(strstr(e.msg, "job.json: program.nodes.min: 6 is more than "
			 "the job's 5"), "%s", e.msg);
	cr_assert_eq(parse("{" BASE ", \"program\": {\"command\": [\"x\"], "
			   "\"nodes\": {\"min\": 5, \"max\": 5}}}", &r, &e),
		     PX_OK, "%s", e.msg);
	cr_assert_eq(r.program.nodes_max, 5);
}
