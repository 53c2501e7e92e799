/* test_cli.c -- proteusctl's vocabulary: options given before the
 * command, old and new spellings of the same option, --json on import,
 * one-line usage errors with exit 2, and the bash completions. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../agent/ctl/cli.h"
#include "../../agent/proto.h"
#include "pxrun.h"

static char *tmp, *db, *trace2;

static void setup(void)
{
	FILE *f;

	tmp = px_tmpdir();
	cr_assert_not_null(tmp);
	cr_assert(asprintf(&db, "%s/c.db", tmp) > 0);
	cr_assert(asprintf(&trace2, "%s/c4.json", tmp) > 0);
	f = fopen(trace2, "w");
	cr_assert_not_null(f);
	fputs("{\"SpotPriceHistory\": [{\"AvailabilityZone\": \"us-east-1a\", "
	      "\"InstanceType\": \"c4.xlarge\", \"ProductDescription\": "
	      "\"Linux/UNIX\", \"SpotPrice\": \"0.050000\", \"Timestamp\": "
	      "\"2016-03-01T00:30:00.000Z\"}]}\n", f);
	fclose(f);
	/* nothing may fall back to a real default database or daemon */
	setenv("PROTEUS_DB", "/nonexistent/proteus-test/none.db", 1);
	setenv("PROTEUS_SOCKET", "/nonexistent/proteus-test/none.sock", 1);
}

static void teardown(void)
{
	px_rmtree(tmp);
	free(tmp);
	free(db);
	free(trace2);
}

TestSuite(cli, .init = setup, .fini = teardown, .timeout = 60);

/* proteusctl ARGS... (NULL-terminated); its exit status. */
static int ctl(struct pxrun *r, ...)
{
	const char *argv[32] = {"proteusctl"};
	int n = 1;
	va_list ap;
	const char *a;

	va_start(ap, r);
	while ((a = va_arg(ap, const char *)) && n < 31)
		argv[n++] = a;
	va_end(ap);
	argv[n] = NULL;
	cr_assert_eq(pxrun(r, 60, "proteusctl", argv), 0, "spawn failed");
	return r->status;
}

static json_t *parse(const char *text)
{
	json_error_t je;
	json_t *j = json_loads(text, 0, &je);

	cr_assert_not_null(j, "bad JSON (%s): %s", je.text, text);
	return j;
}

/* The number of lines in s. */
static int lines(const char *s)
{
	int n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

/* `market import --json`: one object per file, the counts the database
 * got; the on-demand tables by both spellings. */
Test(cli, import_json_and_ondemand_spellings)
{
	char *small = px_src_path("tests/data/ctl/small.json");
	char *od = px_src_path("tests/data/ctl/od.json");
	struct pxrun r;
	json_t *j, *f0, *f1;

	/* new spelling: tables and traces in one command */
	cr_assert_eq(ctl(&r, "market", "import", "--db", db, "--json",
			 "--ondemand-prices", od, small, NULL), 0, "%s", r.err);
	j = parse(r.out);
	pxrun_free(&r);
	cr_assert_eq(json_array_size(json_object_get(j, "files")), 2);
	f0 = json_array_get(json_object_get(j, "files"), 0);
	f1 = json_array_get(json_object_get(j, "files"), 1);
	cr_assert_str_eq(json_string_value(json_object_get(f0, "kind")),
			 "ondemand");
	cr_assert_eq(json_integer_value(json_object_get(f0, "prices")), 2);
	cr_assert_str_eq(json_string_value(json_object_get(f1, "kind")),
			 "spot");
	cr_assert_eq(json_integer_value(json_object_get(f1, "records")), 4);
	cr_assert_eq(json_integer_value(json_object_get(f1, "new")), 4);
	cr_assert_str_eq(json_string_value(json_object_get(f1, "first")),
			 "2016-03-01T00:00:00Z");
	json_decref(j);

	/* old spelling: a switch that makes every FILE a table */
	cr_assert_eq(ctl(&r, "--json", "market", "import", "--db", db,
			 "--ondemand", od, NULL), 0, "%s", r.err);
	j = parse(r.out);
	pxrun_free(&r);
	f0 = json_array_get(json_object_get(j, "files"), 0);
	cr_assert_str_eq(json_string_value(json_object_get(f0, "kind")),
			 "ondemand");
	cr_assert_eq(json_integer_value(json_object_get(f0, "prices")), 2);
	json_decref(j);

	/* the table is there: show has the on-demand price */
	cr_assert_eq(ctl(&r, "market", "--db", db, "--json", NULL), 0);
	j = parse(r.out);
	pxrun_free(&r);
	cr_assert_float_eq(json_real_value(json_object_get(
		json_array_get(j, 0), "ondemand_usd")), 0.067, 1e-9);
	json_decref(j);
	free(small);
	free(od);
}

/* --types takes a list; --type is its old spelling; the global --db
 * before the command is the command's --db. */
Test(cli, types_list_and_global_db)
{
	char *small = px_src_path("tests/data/ctl/small.json");
	struct pxrun r;
	json_t *j;

	cr_assert_eq(ctl(&r, "--db", db, "market", "import", small, trace2,
			 NULL), 0, "%s", r.err);
	pxrun_free(&r);
	cr_assert_eq(ctl(&r, "--db", db, "--json", "market", "show",
			 "--types", "m3.medium,c4.xlarge", NULL), 0, "%s",
		     r.err);
	j = parse(r.out);
	pxrun_free(&r);
	cr_assert_eq(json_array_size(j), 2);
	json_decref(j);
	cr_assert_eq(ctl(&r, "--db=", NULL), 2);
	pxrun_free(&r);
	cr_assert_eq(ctl(&r, "--db", db, "market", "--type", "c4.xlarge",
			 "--json", NULL), 0, "%s", r.err);
	j = parse(r.out);
	pxrun_free(&r);
	cr_assert_eq(json_array_size(j), 1);
	cr_assert_str_eq(json_string_value(json_object_get(json_array_get(j, 0),
							   "type")),
			 "c4.xlarge");
	json_decref(j);
	/* --zones, and --zone its old spelling */
	cr_assert_eq(ctl(&r, "market", "--db", db, "--zone", "us-east-1a",
			 "--types", "c4.xlarge", NULL), 0, "%s", r.err);
	cr_assert(strstr(r.out, "c4.xlarge"), "%s", r.out);
	pxrun_free(&r);
	cr_assert_eq(ctl(&r, "market", "--db", db, "--zones",
			 "us-east-1b,us-east-1c", NULL), 4);
	pxrun_free(&r);
	cr_assert_eq(ctl(&r, "market", "--db", db, "--types", "a,,b", NULL),
		     2);
	pxrun_free(&r);
	free(small);
}

/* Usage errors: one line naming the option and the command, with a hint,
 * nothing on stdout, exit 2; the help itself still exits 0. */
Test(cli, usage_errors_are_one_line)
{
	static const struct {
		const char *a[6];
		const char *msg;
	} cases[] = {
		{{"market", "show", "--x"},
		 "proteusctl: error: unknown option '--x' for 'market show' "
		 "(see 'proteusctl market show --help')\n"},
		{{"market", "--db"},
		 "proteusctl: error: option '--db' for 'market show' needs a "
		 "value (see 'proteusctl market show --help')\n"},
		{{"market", "import", "--nope", "f"},
		 "proteusctl: error: unknown option '--nope' for 'market "
		 "import' (see 'proteusctl market import --help')\n"},
		{{"market", "import"},
		 "proteusctl: error: no file named (see 'proteusctl market "
		 "import --help')\n"},
		{{"history", "--x"},
		 "proteusctl: error: unknown option '--x' for 'history' (see "
		 "'proteusctl history --help')\n"},
		{{"simulate", "-q"},
		 "proteusctl: error: unknown option '-q' for 'simulate' (see "
		 "'proteusctl simulate --help')\n"},
		{{"ping", "extra"},
		 "proteusctl: error: unexpected argument 'extra' (see "
		 "'proteusctl ping --help')\n"},
		{{"status", "--socket"},
		 "proteusctl: error: option '--socket' for 'status' needs a "
		 "value (see 'proteusctl status --help')\n"},
		{{"frobnicate"},
		 "proteusctl: error: unknown command 'frobnicate' (see "
		 "'proteusctl --help')\n"},
		{{"--bogus", "market"},
		 "proteusctl: error: unknown option '--bogus' before the "
		 "command (see 'proteusctl --help')\n"},
		{{NULL}, "proteusctl: error: no command given (see 'proteusctl "
			 "--help')\n"},
	};
	struct pxrun r;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *const *a = cases[i].a;

		cr_assert_eq(ctl(&r, a[0], a[1], a[2], a[3], a[4], a[5]), 2,
			     "case %zu: %s", i, r.err);
		cr_assert_str_eq(r.err, cases[i].msg, "case %zu", i);
		cr_assert_eq(lines(r.err), 1);
		cr_assert_str_empty(r.out);
		pxrun_free(&r);
	}
	cr_assert_eq(ctl(&r, "market", "show", "--help", NULL), 0);
	cr_assert(strstr(r.out, "usage: proteusctl market"), "%s", r.out);
	pxrun_free(&r);
	cr_assert_eq(ctl(&r, "--help", NULL), 0);
	cr_assert(strstr(r.out, "--socket PATH"), "%s", r.out);
	pxrun_free(&r);
}

/* Exit codes as docs/proteusctl.md lists them: 3 bad data (nothing
 * stored), 4 nothing matched, 1 no daemon. */
Test(cli, exit_codes)
{
	char *bad = px_src_path("tests/data/ctl/bad-price.json");
	struct pxrun r;

	cr_assert_eq(ctl(&r, "market", "import", "--db", db, bad, NULL), 3);
	pxrun_free(&r);
	cr_assert_eq(ctl(&r, "market", "--db", db, NULL), 4);
	pxrun_free(&r);
	cr_assert_eq(ctl(&r, "ping", NULL), 1);
	cr_assert(strstr(r.err, "/nonexistent/proteus-test/none.sock"), "%s",
		  r.err);
	pxrun_free(&r);
	free(bad);
}

/* A daemon that answers a submit after a while: listens on path, reads
 * one request line into got (the request, for the test to check), and
 * answers job 42 delay_s seconds later; its pid (it serves once). */
static pid_t slow_daemon(const char *path, int delay_s, const char *got)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	pid_t pid;

	cr_assert_geq(fd, 0);
	snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
	cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
	cr_assert_eq(listen(fd, 1), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		char buf[4096];
		size_t n = 0;
		ssize_t k = 1;
		int c = accept(fd, NULL, NULL);
		FILE *f;

		if (c < 0)
			_exit(1);
		while (n < sizeof buf - 1 && k > 0 && !memchr(buf, '\n', n))
			if ((k = read(c, buf + n, sizeof buf - 1 - n)) > 0)
				n += (size_t)k;
		f = fopen(got, "w");
		if (!f || fwrite(buf, 1, n, f) != n || fclose(f))
			_exit(1);
		sleep((unsigned)delay_s);
		dprintf(c, "{\"v\": 1, \"ok\": true, \"job\": 42}\n");
		close(c);
		_exit(0);
	}
	close(fd);
	return pid;
}

/* `submit` waits as long as the daemon may take to check a job's files
 * (PROTO_SUBMIT_LOAD_S and a margin), not the 5 s of other commands: a
 * daemon that answers after 7 s has its id printed, and a submit that
 * gave up early would leave a job the user then submits twice.  Not on a
 * terminal, no progress line. */
Test(cli, submit_waits_as_long_as_the_daemon_may_take)
{
	char *sock, *job, *got, *text = NULL;
	struct px_error e = {0};
	struct pxrun r;
	size_t n;
	pid_t pid;
	FILE *f;
	int st;

	cr_assert(asprintf(&sock, "%s/slow.sock", tmp) > 0);
	cr_assert(asprintf(&job, "%s/job.json", tmp) > 0);
	cr_assert(asprintf(&got, "%s/got", tmp) > 0);
	f = fopen(job, "w");
	cr_assert_not_null(f);
	fputs("{\"name\": \"slow\"}\n", f);
	fclose(f);
	/* the client's wait covers the daemon's bound, and 7 s is past
	 * the other commands' 5 s yet within it */
	cr_assert_gt(CLI_SUBMIT_TIMEOUT_MS, PROTO_SUBMIT_LOAD_S * 1000);
	cr_assert_gt(7000, CLI_DAEMON_TIMEOUT_MS);
	cr_assert_gt(PROTO_SUBMIT_LOAD_S, 7);
	pid = slow_daemon(sock, 7, got);
	cr_assert_eq(ctl(&r, "--socket", sock, "submit", job, NULL), 0,
		     "%s", r.err);
	cr_assert_str_eq(r.out, "42\n");
	cr_assert_null(strstr(r.err, "checking"), "%s", r.err);
	pxrun_free(&r);
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	cr_assert_eq(px_read_file(got, 1 << 20, &text, &n, &e), PX_OK, "%s",
		     e.msg);
	cr_assert_not_null(strstr(text, "\"cmd\":\"submit\""), "%s", text);
	free(text);
	free(sock);
	free(job);
	free(got);
}

/* What the completion function in etc/bash-completion/PROG offers for the
 * words (the last one is the word being completed), space-separated and
 * sorted, into out.  With bash-completion installed it is loaded first, as
 * in an interactive shell; the scripts also work without it. */
static void complete(const char *prog, const char *words, char *out,
		     size_t len)
{
	char *dir = px_src_path("etc/bash-completion"), *cmd;
	FILE *p;
	size_t n;

	cr_assert(asprintf(&cmd,
		"bash --norc --noprofile -c '"
		"bc=/usr/share/bash-completion/bash_completion; "
		"[ -r $bc ] && . $bc; . %s/%s || exit 9; "
		"COMP_WORDS=(%s); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); "
		"[ \"${COMP_WORDS[COMP_CWORD]+x}\" ] || COMP_WORDS+=(\"\"); "
		"cd %s && _%s; printf \"%%s\\n\" \"${COMPREPLY[@]}\" | sort | "
		"tr \"\\n\" \" \"'", dir, prog, words, tmp, prog) > 0);
	p = popen(cmd, "r");
	cr_assert_not_null(p);
	n = fread(out, 1, len - 1, p);
	out[n] = '\0';
	cr_assert_eq(pclose(p), 0, "%s", cmd);
	free(cmd);
	free(dir);
}

Test(cli, bash_completion)
{
	char got[4096];

	if (access("/bin/bash", X_OK))
		cr_skip_test("no bash");
	complete("proteusctl", "proteusctl \"\"", got, sizeof(got));
	cr_assert_str_eq(got, "cancel events help history jobs logs market "
			 "model ping plan pool report simulate status submit ");
	complete("proteusctl", "proteusctl plan job.json --dea", got,
		 sizeof(got));
	cr_assert_str_eq(got, "--deadlines ");
	complete("proteusctl", "proteusctl logs 3 --fo", got, sizeof(got));
	cr_assert_str_eq(got, "--follow ");
	complete("proteusctl", "proteusctl report 3 --pl", got, sizeof(got));
	cr_assert_str_eq(got, "--plot ");
	complete("proteusctl", "proteusctl model 3 --o", got, sizeof(got));
	cr_assert_str_eq(got, "--output ");
	complete("proteusctl", "proteusctl status 3 --wa", got, sizeof(got));
	cr_assert_str_eq(got, "--watch ");
	complete("proteusctl", "proteusctl events 3 --fo", got, sizeof(got));
	cr_assert_str_eq(got, "--follow ");
	complete("proteusctl", "proteusctl --db x.db ma", got, sizeof(got));
	cr_assert_str_eq(got, "market ");
	complete("proteusctl", "proteusctl market \"\"", got, sizeof(got));
	cr_assert_str_eq(got, "fetch import show ");
	complete("proteusctl", "proteusctl market import --onde", got,
		 sizeof(got));
	cr_assert_str_eq(got, "--ondemand --ondemand-prices ");
	complete("proteusctl", "proteusctl market fetch --ty", got,
		 sizeof(got));
	cr_assert_str_eq(got, "--types ");
	complete("proteusctl", "proteusctl simulate --policy bid", got,
		 sizeof(got));
	cr_assert_str_eq(got, "bidbrain ");
	complete("proteusctl", "proteusctl ping --", got, sizeof(got));
	cr_assert_str_eq(got, "--help --json --socket ");
	/* files after --db: the test's folder holds c.db's neighbour c4.json */
	complete("proteusctl", "proteusctl --db c4", got, sizeof(got));
	cr_assert_str_eq(got, "c4.json ");
	complete("proteusctl", "proteusctl model 3 -o c4", got, sizeof(got));
	cr_assert_str_eq(got, "c4.json ");
	complete("proteusd", "proteusd --print", got, sizeof(got));
	cr_assert_str_eq(got, "--print-config ");
}
