/* test_notify.c -- proteusd's notifications (notify_url, a job's
 * notify_url, notify_command): a real daemon with a local-world job and a
 * loopback receiver (notify_receiver.py).  Every state change arrives once
 * and in order with its fields, at both URLs; a receiver that is down
 * while the job runs gets the retries once it is up, and the job ends
 * meanwhile (the loop is not held by them); the command gets the event
 * as JSON on its standard input and none of the daemon's secrets in its
 * environment; a command that hangs is killed at its timeout; URLs with
 * a user or password are refused. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../common/px.h"
#include "jobs_fixture.h"
#include "pxrun.h"

TestSuite(notify, .init = jobs_fixture_setup,
	  .fini = jobs_fixture_teardown, .timeout = 240);

static int receiver_as(int port, const char *out, const char *mode,
		       pid_t *ret);

/* The receiver on port (0: any), writing to out; its port. */
static int receiver(int port, const char *out, pid_t *ret)
{
	return receiver_as(port, out, NULL, ret);
}

/* The same, with notify_receiver.py's option mode (NULL: none). */
static int receiver_as(int port, const char *out, const char *mode,
		       pid_t *ret)
{
	char *script = px_src_path("tests/integration/notify_receiver.py");
	char ports[16], pf[4096], *text = NULL;
	struct px_error e = {0};
	size_t n;
	pid_t pid;

	snprintf(ports, sizeof ports, "%d", port);
	snprintf(pf, sizeof pf, "%s.port", out);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		execl("/usr/bin/python3", "python3", script, ports, out,
		      mode, (char *)NULL);
		_exit(127);
	}
	free(script);
	for (int i = 0; i < 200 && access(pf, R_OK); i++)
		sleep_ms(50);
	cr_assert_eq(px_read_file(pf, 64, &text, &n, &e), PX_OK,
		     "the receiver did not start: %s", e.msg);
	port = atoi(text);
	free(text);
	*ret = pid;
	return port;
}

static void receiver_stop(pid_t pid)
{
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
}

/* The events in file (one JSON object a line) as an array. */
static json_t *events_in(const char *file)
{
	json_t *a = json_array();
	char line[16384];
	FILE *f = fopen(file, "r");

	while (f && fgets(line, sizeof line, f)) {
		json_error_t je;
		json_t *o = json_loads(line, 0, &je);

		cr_assert_not_null(o, "%s: not JSON (%s): %s", file, je.text,
				   line);
		json_array_append_new(a, o);
	}
	if (f)
		fclose(f);
	return a;
}

static bool ends_with_state(json_t *a, const char *state)
{
	json_t *last = json_array_get(a, json_array_size(a) - 1);

	return last && !strcmp(json_string_value(json_object_get(last,
		"event")) ?: "", "state") && !strcmp(json_string_value(
		json_object_get(last, "state")) ?: "", state);
}

/* Wait (at most timeout_s) until file's last event is the job's end in
 * state; the events. */
static json_t *wait_events(const char *file, const char *state,
			   int timeout_s)
{
	json_t *a = NULL;

	for (int i = 0; i < timeout_s * 10; i++) {
		json_decref(a);
		a = events_in(file);
		if (ends_with_state(a, state))
			return a;
		sleep_ms(100);
	}
	cr_assert_fail("%s: no '%s' state event in %d s (%zu events); %s",
		       file, state, timeout_s, json_array_size(a),
		       daemon_said());
	return NULL;
}

/* Each event once and in order (seq 1, 2, ... of job id), with the
 * fields every event has; the state changes are queued, running, then
 * final; the last one's cost is status's. */
static void check_sequence(json_t *a, int64_t id, const char *final,
			   double cost)
{
	const char *want[] = { "queued", "running", final };
	size_t i, k = 0;
	json_t *o;

	cr_assert_geq(json_array_size(a), 3);
	json_array_foreach(a, i, o) {
		const char *ev = json_string_value(json_object_get(o, "event"));

		cr_assert_eq(json_integer_value(json_object_get(o, "job")), id);
		cr_assert_eq(json_integer_value(json_object_get(o, "seq")),
			     (json_int_t)i + 1, "event %zu is not in its "
			     "place (a repeat or a gap)", i);
		cr_assert_not_null(ev);
		cr_assert(json_is_string(json_object_get(o, "state")));
		cr_assert(json_is_string(json_object_get(o, "time")));
		cr_assert_eq(strlen(json_string_value(json_object_get(o,
			"time"))), 24, "RFC 3339 with milliseconds, UTC");
		cr_assert_str_eq(json_string_value(json_object_get(o, "name")),
				 "mlr-local");
		cr_assert_str_eq(json_string_value(json_object_get(o, "world")),
				 "local");
		cr_assert(json_is_number(json_object_get(o, "cost_usd")));
		if (strcmp(ev, "state"))
			continue;
		cr_assert_lt(k, 3, "more than three state changes");
		cr_assert_str_eq(json_string_value(json_object_get(o, "state")),
				 want[k]);
		k++;
	}
	cr_assert_eq(k, 3);
	o = json_array_get(a, json_array_size(a) - 1);
	cr_assert(json_is_string(json_object_get(o, "reason")));
	cr_assert_float_eq(json_number_value(json_object_get(o, "cost_usd")),
			   cost, 1e-6);
}

static double cost_of(json_t *st)
{
	return json_number_value(json_object_get(st, "cost_usd"));
}

Test(notify, every_state_change_arrives_once_in_order_at_both_urls)
{
	char *a_out, *b_out, conf[256], extra[256];
	pid_t ra, rb;
	int pa, pb;
	int64_t id;
	json_t *st, *ea, *eb;

	cr_assert(asprintf(&a_out, "%s/a.events", jt.tmp) > 0);
	cr_assert(asprintf(&b_out, "%s/b.events", jt.tmp) > 0);
	pa = receiver(0, a_out, &ra);
	pb = receiver(0, b_out, &rb);
	/* the job's own URL is one the operator allows */
	snprintf(conf, sizeof conf, "notify_url http://127.0.0.1:%d/hook\n"
		 "notify_url_allow http://127.0.0.1:%d\n", pa, pb);
	daemon_up_with(conf);
	snprintf(extra, sizeof extra, "{\"notify_url\": "
		 "\"http://127.0.0.1:%d/job?token=t0k3n\"}", pb);
	write_job(1, extra);
	id = submit();
	st = wait_end(id, 120);
	cr_assert_str_eq(state_of(st), "done", "%s", daemon_said());
	ea = wait_events(a_out, "done", 60);
	eb = wait_events(b_out, "done", 60);
	check_sequence(ea, id, "done", cost_of(st));
	cr_assert(json_equal(ea, eb), "both URLs got the same events");
	{
		/* the path of a URL (a webhook's token) is never logged */
		char *log = daemon_log();

		cr_assert_null(strstr(log, "t0k3n"));
		free(log);
	}
	receiver_stop(ra);
	receiver_stop(rb);
	json_decref(st);
	json_decref(ea);
	json_decref(eb);
	free(a_out);
	free(b_out);
}

/* /metrics' text (python3's urllib: the test needs no HTTP code here). */
static char *metrics(int port)
{
	const char *argv[] = { "python3", "-c", "import sys, urllib.request; "
			       "sys.stdout.write(urllib.request.urlopen("
			       "sys.argv[1]).read().decode())", NULL, NULL };
	char url[64];
	struct pxrun r;
	char *text;

	snprintf(url, sizeof url, "http://127.0.0.1:%d/metrics", port);
	argv[3] = url;
	cr_assert_eq(pxrun(&r, 30, "/usr/bin/python3", argv), 0);
	cr_assert_eq(r.status, 0, "%s", r.err);
	text = strdup(r.out);
	pxrun_free(&r);
	return text;
}

/* The value on the sample line that starts with what (its name and
 * labels, then a blank); NAN when there is none. */
static double sample(const char *text, const char *what)
{
	size_t n = strlen(what);

	for (const char *p = text; p; p = strchr(p, '\n'), p += !!p)
		if (!strncmp(p, what, n))
			return strtod(p + n, NULL);
	return NAN;
}

Test(notify, a_receiver_that_is_down_gets_the_retries_and_the_job_goes_on)
{
	char *out, conf[512], *log, *text;
	int port = free_port(), mport;
	struct pxrun r;
	pid_t rp;
	int64_t id;
	json_t *st, *ev;

	do
		mport = free_port();
	while (mport == port);
	cr_assert(asprintf(&out, "%s/events", jt.tmp) > 0);
	snprintf(conf, sizeof conf, "notify_url http://127.0.0.1:%d/hook\n"
		 "notify_backoff_ms 100\nnotify_attempts 20\n"
		 "metrics_listen 127.0.0.1:%d\n", port, mport);
	daemon_up_with(conf);
	write_job(1, NULL);
	id = submit();
	/* the whole job runs while nothing can be delivered: the retries
	 * wait on the loop's timers, never on the loop */
	st = wait_end(id, 120);
	cr_assert_str_eq(state_of(st), "done", "%s", daemon_said());
	cr_assert_neq(access(out, F_OK), 0, "nothing was delivered yet");
	cr_assert_eq(ctl(&r, 5, "ping", NULL, NULL, NULL), 0, "%s", r.err);
	pxrun_free(&r);
	log = daemon_log();
	cr_assert_not_null(strstr(log, "try 1 of 20 failed"), "%s", log);
	free(log);
	/* the text is made once a second: the job may have ended before
	 * the text of its first retry */
	text = NULL;
	for (int i = 0; i < 30; i++) {
		free(text);
		text = metrics(mport);
		if (sample(text, "proteus_notification_retries_total ") > 0)
			break;
		sleep_ms(100);
	}
	cr_assert_gt(sample(text, "proteus_notification_retries_total "), 0,
		     "%s", text);
	cr_assert_gt(sample(text, "proteus_notifications_pending "), 0, "%s",
		     text);
	free(text);
	/* up now, on the same port */
	cr_assert_eq(receiver(port, out, &rp), port);
	ev = wait_events(out, "done", 60);
	check_sequence(ev, id, "done", cost_of(st));
	/* the text is made once a second: until it has the last one */
	text = NULL;
	for (int i = 0; i < 100; i++) {
		free(text);
		text = metrics(mport);
		if (sample(text, "proteus_notifications_pending ") == 0)
			break;
		sleep_ms(100);
	}
	cr_assert_float_eq(sample(text, "proteus_notifications_total{result="
				  "\"delivered\"} "),
			   (double)json_array_size(ev), 1e-9, "%s", text);
	cr_assert_float_eq(sample(text, "proteus_notifications_total{result="
				  "\"failed\"} "), 0, 1e-9, "%s", text);
	free(text);
	receiver_stop(rp);
	json_decref(ev);
	json_decref(st);
	free(out);
}

/* A script in the test's dir: body after "#!/bin/sh\n". */
static char *script(const char *name, const char *body)
{
	char *path;
	FILE *f;

	cr_assert(asprintf(&path, "%s/%s", jt.tmp, name) > 0);
	f = fopen(path, "w");
	cr_assert_not_null(f);
	fprintf(f, "#!/bin/sh\n%s", body);
	fclose(f);
	cr_assert_eq(chmod(path, 0700), 0);
	return path;
}

Test(notify, the_command_gets_the_event_on_stdin_and_no_secrets)
{
	char *cmd, body[1024], conf[4200], *out, *env, *text = NULL, *log;
	struct px_error e = {0};
	size_t n;
	int64_t id;
	json_t *st, *ev;

	cr_assert(asprintf(&out, "%s/cmd.events", jt.tmp) > 0);
	cr_assert(asprintf(&env, "%s/cmd.env", jt.tmp) > 0);
	snprintf(body, sizeof body, "cat >> %s\nenv >> %s\n"
		 "echo \"said $PROTEUS_EVENT\"\n", out, env);
	cmd = script("notify.sh", body);
	snprintf(conf, sizeof conf, "notify_command %s\n", cmd);
	/* what the daemon's environment holds never reaches the command */
	setenv("AWS_SECRET_ACCESS_KEY", "not-for-the-command", 1);
	daemon_up_with(conf);
	unsetenv("AWS_SECRET_ACCESS_KEY");
	write_job(1, NULL);
	id = submit();
	st = wait_end(id, 120);
	cr_assert_str_eq(state_of(st), "done", "%s", daemon_said());
	ev = wait_events(out, "done", 60);
	check_sequence(ev, id, "done", cost_of(st));
	cr_assert_eq(px_read_file(env, 1 << 20, &text, &n, &e), PX_OK, "%s",
		     e.msg);
	cr_assert_null(strstr(text, "not-for-the-command"));
	cr_assert_not_null(strstr(text, "PROTEUS_EVENT=state"));
	free(text);
	log = daemon_log();
	cr_assert_not_null(strstr(log, "said: said state"), "its output is "
			   "logged");
	free(log);
	json_decref(st);
	json_decref(ev);
	free(cmd);
	free(out);
	free(env);
}

Test(notify, a_command_that_hangs_is_killed_at_its_timeout)
{
	char *cmd, body[1024], conf[4200], *starts, *log;
	int64_t id;
	json_t *st;
	int runs = 0, sleepers = -1, starts_n = 0;
	FILE *f;
	char line[64];

	cr_assert(asprintf(&starts, "%s/starts", jt.tmp) > 0);
	snprintf(body, sizeof body, "echo started >> %s\nexec sleep 987\n",
		 starts);
	cmd = script("hang.sh", body);
	snprintf(conf, sizeof conf, "notify_command %s\nnotify_timeout_ms "
		 "300\nnotify_attempts 1\n", cmd);
	daemon_up_with(conf);
	write_job(1, NULL);
	id = submit();
	st = wait_end(id, 120);
	cr_assert_str_eq(state_of(st), "done", "%s", daemon_said());
	/* three state changes at least, one run each, each killed at its
	 * timeout (and every one started so far killed or running) */
	for (int i = 0; i < 600 && runs < 3; i++) {
		log = daemon_log();
		runs = 0;
		for (const char *p = log; (p = strstr(p, "not delivered: "
			"killed after 300 ms")); p++)
			runs++;
		free(log);
		sleep_ms(100);
	}
	cr_assert_geq(runs, 3, "%s", daemon_said());
	/* events may keep coming (a job's evictions queue one each, run
	 * back to back), so some command may be running now: a stop of
	 * proteusd kills it too; none outlives the daemon (a loop that
	 * waited for a moment with none running raced the next start) */
	stop_daemon(SIGTERM);
	for (int i = 0; i < 100; i++) {
		sleepers = each_argv("sleep 987", NULL, NULL, NULL);
		if (!sleepers)
			break;
		sleep_ms(50);
	}
	cr_assert_eq(sleepers, 0, "a hung command outlived proteusd's stop");
	/* and every command started was killed at its timeout, but for
	 * the one the stop killed, if any */
	log = daemon_log();
	runs = 0;
	for (const char *p = log; (p = strstr(p, "not delivered: killed "
		"after 300 ms")); p++)
		runs++;
	free(log);
	f = fopen(starts, "r");
	while (f && fgets(line, sizeof line, f))
		starts_n++;
	if (f)
		fclose(f);
	cr_assert(starts_n == runs || starts_n == runs + 1, "%d started, %d "
		  "killed at their timeout", starts_n, runs);
	json_decref(st);
	free(cmd);
	free(starts);
}

Test(notify, urls_with_a_user_or_password_are_refused)
{
	const char *argv[] = { "proteusd", "--check-config", "--config",
			       jt.conf, NULL };
	struct pxrun r;
	FILE *f = fopen(jt.conf, "w");

	cr_assert_not_null(f);
	fprintf(f, "db %s\ncontrol_socket %s\nnotify_url "
		"https://hook:s3cret@example.com/x\n", jt.db, jt.sock);
	fclose(f);
	cr_assert_eq(pxrun(&r, 10, "proteusd", argv), 0);
	cr_assert_eq(r.status, 3, "%s", r.err);
	cr_assert_not_null(strstr(r.err, "'notify_url'"), "%s", r.err);
	cr_assert_null(strstr(r.err, "s3cret"), "%s", r.err);
	pxrun_free(&r);
	daemon_up_with("");
	write_job(1, "{\"notify_url\": \"http://u:pw@127.0.0.1:1/\"}");
	cr_assert_neq(ctl(&r, 10, "submit", jt.job, NULL, NULL), 0);
	cr_assert_not_null(strstr(r.err, "notify_url: the URL holds a user "
				  "or password"), "%s", r.err);
	pxrun_free(&r);
	write_job(1, "{\"notify_url\": \"ftp://127.0.0.1/\"}");
	cr_assert_neq(ctl(&r, 10, "submit", jt.job, NULL, NULL), 0);
	cr_assert_not_null(strstr(r.err, "notify_url: 'ftp://127.0.0.1/' is "
				  "not an http:// or https:// URL"), "%s",
			   r.err);
	pxrun_free(&r);
}

/* proteusctl submit of the job file as it is: its exit status, its
 * error in *ret_err (the caller's). */
static int submit_refused(char **ret_err)
{
	struct pxrun r;
	int st;

	st = ctl(&r, 20, "submit", jt.job, NULL, NULL);
	*ret_err = strdup(r.err);
	pxrun_free(&r);
	return st;
}

/* A job's own notify_url names what the operator allows, and never a
 * link-local or metadata address nor the daemon's own /metrics, whatever
 * the list says; a name is held to the rule by its addresses
 * ("localhost" is 127.0.0.1 and ::1).  Refused at submit, exit 3,
 * nothing stored. */
Test(notify, a_jobs_notify_url_is_held_to_the_operators_list)
{
	char conf[512], job[256], *err;
	int port = free_port(), mport;
	const struct {
		const char *url;      /* %d: port (p), or mport (m) */
		char which;
		const char *says;
	} bad[] = {
		{ "http://169.254.169.254/latest/meta-data/", 0, "169.254."
		  "169.254 is a link-local, metadata or unspecified address" },
		{ "http://[fd00:ec2::254]/latest/", 0, "fd00:ec2::254 is a "
		  "link-local" },
		{ "http://127.0.0.1:%d/metrics", 'm', "is this daemon's own "
		  "/metrics" },
		{ "http://localhost:%d/metrics", 'm', "is this daemon's own "
		  "/metrics" },
		{ "http://127.0.0.1:1/", 0, "http://127.0.0.1:1 is not "
		  "allowed by notify_url_allow" },
		{ "http://localhost:1/", 0, "is not allowed by "
		  "notify_url_allow" },
		{ "http://10.1.2.3:%d/", 'p', "http://10.1.2.3:" },
	};

	do
		mport = free_port();
	while (mport == port);
	/* even a list that names the metrics port does not open it */
	snprintf(conf, sizeof conf, "metrics_listen 127.0.0.1:%d\n"
		 "notify_url_allow http://127.0.0.1:%d, http://127.0.0.1:%d, "
		 "http://*\n", mport, port, mport);
	daemon_up_with(conf);
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char url[128], extra[300];

		snprintf(url, sizeof url, bad[i].url, bad[i].which == 'm' ?
			 mport : port);
		snprintf(extra, sizeof extra, "{\"notify_url\": \"%s\"}", url);
		write_job(1, extra);
		cr_assert_eq(submit_refused(&err), 3, "%s: %s", url, err);
		cr_assert_not_null(strstr(err, "notify_url: "), "%s", err);
		cr_assert_not_null(strstr(err, bad[i].says), "%s: %s", url,
				   err);
		free(err);
	}
	cr_assert_eq(sql_int("SELECT count(*) FROM jobs"), 0);
	/* the origin the list names is taken */
	snprintf(job, sizeof job, "{\"notify_url\": \"http://127.0.0.1:%d/x"
		 "\"}", port);
	write_job(1, job);
	cancel_job(submit(), 30);
}

/* Without notify_url_allow a job's own notify_url is refused. */
Test(notify, a_jobs_notify_url_needs_the_operators_list)
{
	char *err;

	daemon_up_with("");
	write_job(1, "{\"notify_url\": \"https://hooks.example.com/x\"}");
	cr_assert_eq(submit_refused(&err), 3, "%s", err);
	cr_assert_not_null(strstr(err, "notify_url: notify_url_allow is "
				  "empty on this daemon"), "%s", err);
	free(err);
	cr_assert_eq(sql_int("SELECT count(*) FROM jobs"), 0);
}

/* A receiver whose answer never ends: a few KiB of it are read, and its
 * status (200) makes each notification delivered, at the first try. */
Test(notify, an_endless_answer_is_cut_and_its_status_counts)
{
	char *out, *sent, conf[512], line[64], *text;
	int mport = free_port(), port;
	pid_t rp;
	int64_t id;
	json_t *st, *ev;
	FILE *f;
	int n = 0;

	cr_assert(asprintf(&out, "%s/events", jt.tmp) > 0);
	cr_assert(asprintf(&sent, "%s/events.sent", jt.tmp) > 0);
	port = receiver_as(0, out, "--endless", &rp);
	snprintf(conf, sizeof conf, "notify_url http://127.0.0.1:%d/hook\n"
		 "notify_timeout_ms 5000\nnotify_backoff_ms 100\n"
		 "metrics_listen 127.0.0.1:%d\n", port, mport);
	daemon_up_with(conf);
	write_job(1, NULL);
	id = submit();
	st = wait_end(id, 120);
	cr_assert_str_eq(state_of(st), "done", "%s", daemon_said());
	ev = wait_events(out, "done", 60);
	check_sequence(ev, id, "done", cost_of(st));
	/* the text is made once a second: until it has the last one */
	text = NULL;
	for (int i = 0; i < 100; i++) {
		free(text);
		text = metrics(mport);
		if (sample(text, "proteus_notifications_total{result="
			   "\"delivered\"} ") >= (double)json_array_size(ev))
			break;
		sleep_ms(100);
	}
	cr_assert_float_eq(sample(text, "proteus_notifications_total{result="
				  "\"delivered\"} "),
			   (double)json_array_size(ev), 1e-9, "%s", text);
	cr_assert_float_eq(sample(text, "proteus_notifications_total{result="
				  "\"failed\"} "), 0, 1e-9, "%s", text);
	cr_assert_float_eq(sample(text, "proteus_notification_retries_total "),
			   0, 1e-9, "%s", text);
	free(text);
	/* each answer ended once the daemon stopped reading it: what got
	 * out is what the sockets' buffers hold, not seconds of loopback */
	receiver_stop(rp);
	f = fopen(sent, "r");
	cr_assert_not_null(f);
	while (fgets(line, sizeof line, f)) {
		cr_assert_lt(atoll(line), 64LL << 20, "%s bytes sent", line);
		n++;
	}
	fclose(f);
	cr_assert_geq(n, 1);
	json_decref(ev);
	json_decref(st);
	free(out);
	free(sent);
}

/* What notify_command writes is logged escaped once (a backslash as
 * "\\", a tab as "\t"), not escaped again. */
Test(notify, the_commands_output_is_escaped_once)
{
	char *cmd, conf[4200], *log = NULL;
	int64_t id;
	json_t *st;

	cmd = script("say.sh", "printf 'back\\\\slash\\ttab\\033[31m\\n'\n");
	snprintf(conf, sizeof conf, "notify_command %s\n", cmd);
	daemon_up_with(conf);
	write_job(1, NULL);
	id = submit();
	st = wait_end(id, 120);
	cr_assert_str_eq(state_of(st), "done", "%s", daemon_said());
	for (int i = 0; i < 100; i++) {
		free(log);
		log = daemon_log();
		if (strstr(log, ") said: "))
			break;
		sleep_ms(100);
	}
	cr_assert_not_null(strstr(log, ") said: back\\\\slash\\ttab\\x1b[31m"),
			   "%s", log);
	cr_assert_null(strstr(log, "\\\\\\\\"), "escaped twice: %s", log);
	free(log);
	json_decref(st);
	free(cmd);
}
