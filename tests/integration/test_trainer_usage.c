/* test_trainer_usage.c -- proteus-trainer's command line and the edges of
 * `local`: bad option values refused by the parser (exit 2, one line with
 * a hint, nothing started), --help and --version, checkpoint paths
 * checked before training, exit 3 for bad input files, a role that dies
 * at its start ending `local` at once with that role's own error, roles
 * stopped on purpose exiting quietly, a SIGKILLed `local` leaving neither
 * processes nor socket directories behind, values printed as typed, and
 * the bash completion. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../common/px.h"
#include "pxrun.h"

extern char **environ;

static char *tmp;

static void setup(void)
{
	tmp = px_tmpdir();
	cr_assert_not_null(tmp);
	/* local's own socket dirs go here, where the tests look */
	setenv("TMPDIR", tmp, 1);
}

static void teardown(void)
{
	px_rmtree(tmp);
	free(tmp);
}

TestSuite(trainer_usage, .init = setup, .fini = teardown, .timeout = 60);

#define SMALL "--model", "mlr", "--epochs", "1", "--max-train", "600", \
	"--max-test", "100", "--threads", "1"

/* proteus-trainer ARGS... (NULL-terminated) into *r; its exit status. */
static int trainer(struct pxrun *r, ...)
{
	const char *argv[64] = { "proteus-trainer" };
	int n = 1;
	va_list ap;
	const char *a;

	va_start(ap, r);
	while ((a = va_arg(ap, const char *)) && n < 63)
		argv[n++] = a;
	va_end(ap);
	argv[n] = NULL;
	cr_assert_eq(pxrun(r, 60, "proteus-trainer", argv), 0, "spawn");
	return r->status;
}

static int count_lines(const char *s)
{
	int n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

/* The last line of s (without its newline), into buf. */
static const char *last_line(const char *s, char *buf, size_t len)
{
	size_t n = strlen(s);
	const char *p;

	while (n && s[n - 1] == '\n')
		n--;
	p = s + n;
	while (p > s && p[-1] != '\n')
		p--;
	snprintf(buf, len, "%.*s", (int)(s + n - p), p);
	return buf;
}

/* Entries of tmp whose name starts with prefix. */
static int count_entries(const char *dir, const char *prefix)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	cr_assert_not_null(d);
	while ((e = readdir(d)))
		n += !strncmp(e->d_name, prefix, strlen(prefix));
	closedir(d);
	return n;
}

/* Live processes whose command line mentions s. */
static int count_procs(const char *s)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	int n = 0;

	cr_assert_not_null(d);
	while ((e = readdir(d))) {
		char path[300], buf[4096];
		ssize_t k;
		int fd;

		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/cmdline", e->d_name);
		fd = open(path, O_RDONLY);
		if (fd < 0)
			continue;
		k = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (k <= 0)
			continue;
		for (ssize_t i = 0; i < k; i++)
			if (!buf[i])
				buf[i] = ' ';
		buf[k] = 0;
		n += strstr(buf, s) != NULL;
	}
	closedir(d);
	return n;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A bad value, whatever the command: exit 2 at once, one line naming
 * the option, and a hint to that command's --help. */
static void refused(const char *cmd, const char *what, const char *a1,
		    const char *a2, const char *a3, const char *a4)
{
	char hint[80];
	struct pxrun r;

	snprintf(hint, sizeof(hint), "(see 'proteus-trainer %s --help')", cmd);
	cr_assert_eq(trainer(&r, cmd, a1, a2, a3, a4, NULL), 2,
		     "%s %s %s: status %d: %s", cmd, a1, a2 ? a2 : "",
		     r.status, r.err);
	cr_assert_eq(count_lines(r.err), 1, "%s %s: not one line:\n%s", cmd,
		     a1, r.err);
	cr_assert_not_null(strstr(r.err, what), "%s", r.err);
	cr_assert_not_null(strstr(r.err, hint), "%s", r.err);
	cr_assert_str_empty(r.out, "%s %s printed %s", cmd, a1, r.out);
	pxrun_free(&r);
}

/* Items 1, 2 and 4 of the hardening issue: values that crashed a job
 * (--batch 0: the coordinator died of SIGFPE), hung it (--ps 0: 61 s of
 * "clock 0") or failed it after loading the data (train --epochs 0) are
 * usage errors before anything starts, for local, train and the roles
 * alike; no socket dir is even made. */
Test(trainer_usage, bad_values_refused_before_anything_starts)
{
	refused("local", "--batch '0'", "--batch", "0", "--epochs", "1");
	refused("local", "--ps '0'", "--workers", "1", "--ps", "0");
	refused("local", "--workers '0'", "--workers", "0", NULL, NULL);
	refused("local", "--stage '0'", "--stage", "0", NULL, NULL);
	refused("local", "--stage '4'", "--stage", "4", NULL, NULL);
	refused("local", "--reliable 2 is more than --ps 1", "--reliable", "2",
		"--ps", "1");
	refused("local", "--shards '65'", "--shards", "65", NULL, NULL);
	refused("local", "--epochs '0'", "--epochs", "0", NULL, NULL);
	refused("local", "--lr '-1'", "--lr", "-1", NULL, NULL);
	refused("local", "--hb-timeout 100 must be more", "--hb-timeout",
		"100", "--heartbeat", "100");
	refused("local", "--stage-at '5:9'", "--stage-at", "5:9", NULL, NULL);
	refused("local", "--timeout 'x'", "--timeout", "x", NULL, NULL);
	refused("local", "--checkpoint-every needs --checkpoint",
		"--checkpoint-every", "10", NULL, NULL);
	refused("local", "unknown option '--node'", "--node", "3", NULL, NULL);
	/* a slowed worker: S:WORKER:FACTOR:SECONDS, a worker that is
	 * there, a factor in 1..1000; the worker's own form has no index */
	refused("local", "bad --slow-worker-at '1:0:3'", "--slow-worker-at",
		"1:0:3", NULL, NULL);
	refused("local", "bad --slow-worker-at '1:0:0.5:2'",
		"--slow-worker-at", "1:0:0.5:2", NULL, NULL);
	refused("local", "bad --slow-worker-at '1:0.5:3:2'",
		"--slow-worker-at", "1:0.5:3:2", NULL, NULL);
	refused("local", "bad --slow-worker-at '1:0:3:2:'",
		"--slow-worker-at", "1:0:3:2:", NULL, NULL);
	refused("local", "bad --slow-worker-at '-1:0:3:2'",
		"--slow-worker-at", "-1:0:3:2", NULL, NULL);
	refused("local", "--slow-worker-at: worker 2 of 2", "--workers", "2",
		"--slow-worker-at", "0:2:3:1");
	refused("worker", "bad --fault-slow '0:1:3:2'", "--fault-slow",
		"0:1:3:2", NULL, NULL);
	refused("train", "--epochs '0'", "--epochs", "0", NULL, NULL);
	refused("train", "--batch '0'", "--batch", "0", NULL, NULL);
	refused("train", "--batch '65537'", "--batch", "65537", NULL, NULL);
	refused("train", "--lr '0'", "--lr", "0", NULL, NULL);
	refused("train", "--momentum '1'", "--momentum", "1", NULL, NULL);
	refused("train", "unknown model 'cnn'", "--model", "cnn", NULL, NULL);
	refused("train", "unknown option '--bogus'", "--bogus", NULL, NULL,
		NULL);
	refused("train", "'--batch' for 'train' needs a value", "--batch",
		NULL, NULL, NULL);
	refused("train", "unexpected argument 'x'", "x", NULL, NULL, NULL);
	refused("eval", "needs a checkpoint FILE", NULL, NULL, NULL, NULL);
	/* the roles, as proteusd or local would start them */
	refused("ps", "--batch '0'", "--batch", "0", "--coord",
		"ipc:///nonexistent/n0");
	refused("worker", "--ps '0'", "--ps", "0", NULL, NULL);
	refused("coordinator", "--stage '0'", "--stage", "0", NULL, NULL);
	refused("coordinator", "needs --coord and --listen", "--node", "0",
		NULL, NULL);
	refused("worker", "--coord: address 'foo://x'", "--coord", "foo://x",
		NULL, NULL);
	cr_assert_eq(count_entries(tmp, "pxtrainer."), 0);
}

/* Numbers are decimal, as typed (hex read "--lr 0x10" as 16), finite,
 * with nothing before or after; every kind of numeric option alike
 * (integers, floats, seconds, --stage-at), and the range an error states
 * is the field's true one (--seed's said 0..18446744073709551616, one
 * past its largest). */
Test(trainer_usage, numbers_are_decimal_with_true_ranges)
{
	static const char *const bad[][2] = {
		{ "--lr", "0x10" }, { "--lr", "inf" }, { "--lr", "nan" },
		{ "--lr", " 1" }, { "--lr", "1e" }, { "--lr", "0.5x" },
		{ "--momentum", "0x0.8" }, { "--weight-decay", "infinity" },
		{ "--epochs", "0x10" }, { "--epochs", " 1" },
		{ "--epochs", "+1" }, { "--batch", "1e2" },
		{ "--seed", "0x1" }, { "--seed", "-1" },
		{ "--timeout", "0x10" }, { "--timeout", "inf" },
		{ "--kill-worker-at", "1e400" }, { "--pause-for", " 2" },
	};
	struct pxrun r;
	char what[80];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(what, sizeof(what), "bad %s '%s'", bad[i][0],
			 bad[i][1]);
		refused("local", what, bad[i][0], bad[i][1], NULL, NULL);
	}
	refused("train", "bad --lr '0x10'", "--lr", "0x10", NULL, NULL);
	refused("train", "bad --seed '18446744073709551616' (an integer in "
		"0..18446744073709551615)", "--seed", "18446744073709551616",
		NULL, NULL);
	refused("worker", "bad --job '0x2'", "--job", "0x2", NULL, NULL);
	refused("worker", "bad --job '18446744073709551616' (an integer in "
		"0..18446744073709551615)", "--job", "18446744073709551616",
		NULL, NULL);
	refused("local", "bad --stage-at '5:+2'", "--stage-at", "5:+2", NULL,
		NULL);
	refused("local", "bad --stage-at ' 5:2'", "--stage-at", " 5:2", NULL,
		NULL);
	refused("local", "bad --stage-at '0x5:2'", "--stage-at", "0x5:2",
		NULL, NULL);
	refused("train", "beyond what a float holds", "--lr", "1e-50", NULL,
		NULL);
	/* the largest seed is taken; decimals as people write them are */
	cr_assert_eq(trainer(&r, "train", SMALL, "--seed",
			     "18446744073709551615", "--lr", ".05", NULL), 0,
		     "%s", r.err);
	pxrun_free(&r);
	cr_assert_eq(trainer(&r, "train", SMALL, "--lr", "5E-2", NULL), 0,
		     "%s", r.err);
	pxrun_free(&r);
}

/* An epoch is one pass over the samples used, whatever the batch, the
 * clock's minibatches and the workers: --max-train 300 --batch 300
 * --epochs 1 trained a clock of 8 minibatches, 8 passes (2400 samples);
 * a batch over --max-train, sizes that do not divide, and two workers
 * whose partitions need different numbers of batches (65 and 64
 * examples, batch 64) each train exactly epochs x max-train samples. */
Test(trainer_usage, an_epoch_is_one_pass)
{
	static const struct {
		const char *max_train, *batch, *epochs, *workers, *kb;
	} c[] = {
		{ "300", "300", "1", "1", "8" },
		{ "300", "500", "2", "1", "8" },
		{ "300", "128", "1", "1", "8" },
		{ "301", "64", "3", "2", "4" },
		{ "129", "64", "3", "2", "3" },
		{ "1000", "32", "2", "3", "8" },
	};

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		struct pxrun r;
		json_t *j;
		double want = atof(c[i].max_train) * atof(c[i].epochs);

		cr_assert_eq(trainer(&r, "local", "--model", "mlr",
				     "--max-test", "100", "--threads", "1",
				     "--max-train", c[i].max_train, "--batch",
				     c[i].batch, "--epochs", c[i].epochs,
				     "--workers", c[i].workers,
				     "--clock-batches", c[i].kb, "--json",
				     NULL), 0, "%s", r.err);
		j = json_loads(r.out, 0, NULL);
		cr_assert_not_null(j, "%s", r.out);
		cr_assert_eq(json_number_value(json_object_get(j, "samples")),
			     want, "max-train %s, batch %s, epochs %s, %s "
			     "workers, clock of %s: %s", c[i].max_train,
			     c[i].batch, c[i].epochs, c[i].workers, c[i].kb,
			     r.out);
		cr_assert_eq(json_number_value(json_object_get(j,
							       "job_samples")),
			     want, "%s", r.out);
		json_decref(j);
		pxrun_free(&r);
	}
}

/* The roles take what proteusd gives them (agent/jobs.c role_argv): the
 * parser lets them through to the next check, the job key. */
Test(trainer_usage, roles_take_proteusd_arguments)
{
	static const char *const roles[] = { "coordinator", "ps", "worker" };
	char coord[600], agent[600], ck[600];
	struct pxrun r;

	snprintf(coord, sizeof(coord), "ipc://%s/n0", tmp);
	snprintf(agent, sizeof(agent), "ipc://%s/agent.pull", tmp);
	snprintf(ck, sizeof(ck), "%s/model.pxc", tmp);
	unsetenv("PX_JOB_KEY");
	for (size_t i = 0; i < 3; i++) {
		trainer(&r, roles[i], "--model", "mlp", "--epochs", "2",
			"--batch", "64", "--lr", "0.05", "--schedule",
			"cosine", "--threads", "1", "--workers", "1", "--ps",
			"1", "--job", "123", "--node", i ? "100" : "0",
			"--coord", coord, "--listen", coord, "--agent", agent,
			"--eval-epochs", "--checkpoint", ck,
			"--checkpoint-every", "50", i == 1 ? "--reliable"
							   : NULL, NULL);
		cr_assert_eq(r.status, 2, "%s: %d: %s", roles[i], r.status,
			     r.err);
		cr_assert_not_null(strstr(r.err, "no job key"), "%s: %s",
				   roles[i], r.err);
		pxrun_free(&r);
	}
}

/* Item 9: --version, --help listing the commands, and each command's
 * help: its synopsis, a line on what it is, every option's default. */
Test(trainer_usage, version_and_help)
{
	static const char *const cmds[] = { "train", "local", "eval",
					    "coordinator", "ps", "worker",
					    "fetch", "predict" };
	char want[64];
	struct pxrun r;

	cr_assert_eq(trainer(&r, "--version", NULL), 0);
	cr_assert_str_eq(r.out, "proteus-trainer " PX_VERSION "\n");
	pxrun_free(&r);
	cr_assert_eq(trainer(&r, "--help", NULL), 0);
	for (size_t i = 0; i < 8; i++) {
		snprintf(want, sizeof(want), "\n  %s ", cmds[i]);
		cr_assert_not_null(strstr(r.out, want), "%s: %s", cmds[i],
				   r.out);
	}
	cr_assert_not_null(strstr(r.out, "exit: 0 ok, 1 failure, 2 usage, 3 "
				  "bad input data"), "%s", r.out);
	pxrun_free(&r);
	for (size_t i = 0; i < 8; i++) {
		const char *p;
		int opts = 0, defaults = 0;

		cr_assert_eq(trainer(&r, cmds[i], "--help", NULL), 0);
		snprintf(want, sizeof(want), "usage: proteus-trainer %s ",
			 cmds[i]);
		cr_assert(!strncmp(r.out, want, strlen(want)), "%s", r.out);
		/* each option line (but --help's) says its default */
		for (p = strstr(r.out, "\n  --"); p; p = strstr(p + 1,
								  "\n  --")) {
			const char *next = strstr(p + 1, "\n  --");
			/* "default" ends a line where the help wraps */
			const char *d = strstr(p, "default ");
			const char *e = strstr(p, "default\n");

			if (!d || (e && e < d))
				d = e;

			opts++;
			defaults += d && (!next || d < next);
		}
		cr_assert_gt(opts, 3, "%s: %s", cmds[i], r.out);
		cr_assert_eq(defaults, opts - 1, "%s: an option without its "
			     "default:\n%s", cmds[i], r.out);
		pxrun_free(&r);
	}
	cr_assert_eq(trainer(&r, "train", "--help", NULL), 0);
	cr_assert_not_null(strstr(r.out, "--batch N"), "%s", r.out);
	cr_assert_not_null(strstr(r.out, "default 128)"), "%s", r.out);
	cr_assert_null(strstr(r.out, "--workers"), "%s", r.out);
	pxrun_free(&r);
	cr_assert_eq(trainer(&r, "help", "local", NULL), 0);
	cr_assert_not_null(strstr(r.out, "--max-restarts N"), "%s", r.out);
	pxrun_free(&r);
	cr_assert_eq(trainer(&r, "frob", NULL), 2);
	cr_assert_str_eq(r.err, "proteus-trainer: error: unknown command "
			 "'frob' (see 'proteus-trainer --help')\n");
	pxrun_free(&r);
}

/* Item 5: a checkpoint that could never be written fails the run before
 * training (it failed train after an epoch, and local went on without
 * it and exited 0), naming the path; a bad file to resume from is bad
 * input data, exit 3, like proteusctl's. */
Test(trainer_usage, checkpoint_paths_checked_first)
{
	char junk[600];
	struct pxrun r;
	FILE *f;

	cr_assert_eq(trainer(&r, "train", SMALL, "--checkpoint",
			     "/nonexistent/x.pxc", NULL), 2, "%s", r.err);
	cr_assert_not_null(strstr(r.err, "'/nonexistent/x.pxc'"), "%s", r.err);
	cr_assert_str_empty(r.out, "training began: %s", r.out);
	pxrun_free(&r);
	cr_assert_eq(trainer(&r, "local", SMALL, "--checkpoint",
			     "/nonexistent/x.pxc", NULL), 2, "%s", r.err);
	cr_assert_not_null(strstr(r.err, "'/nonexistent/x.pxc'"), "%s", r.err);
	cr_assert_null(strstr(r.err, "coordinator"), "a role ran: %s", r.err);
	pxrun_free(&r);
	cr_assert_eq(trainer(&r, "local", SMALL, "--checkpoint", tmp, NULL), 2,
		     "%s", r.err);
	cr_assert_not_null(strstr(r.err, "a directory"), "%s", r.err);
	pxrun_free(&r);
	cr_assert_eq(count_entries(tmp, ""), 2, "files left in %s", tmp);

	snprintf(junk, sizeof(junk), "%s/junk.pxc", tmp);
	f = fopen(junk, "w");
	cr_assert_not_null(f);
	fputs("not a checkpoint\n", f);
	fclose(f);
	cr_assert_eq(trainer(&r, "train", SMALL, "--resume", junk, NULL), 3,
		     "%s", r.err);
	cr_assert_str_empty(r.out, "training began: %s", r.out);
	pxrun_free(&r);
	cr_assert_eq(trainer(&r, "local", SMALL, "--resume", junk, NULL), 3,
		     "%s", r.err);
	cr_assert_not_null(strstr(r.err, "header, byte"), "%s", r.err);
	pxrun_free(&r);
	cr_assert_eq(trainer(&r, "eval", junk, NULL), 3, "%s", r.err);
	pxrun_free(&r);
	cr_assert_eq(trainer(&r, "train", SMALL, "--resume",
			     "/nonexistent/x.pxc", NULL), 3, "%s", r.err);
	cr_assert_not_null(strstr(r.err, "no such file"), "%s", r.err);
	pxrun_free(&r);
}

/* A data dir whose training images are cut short: the coordinator (test
 * set) and the PS (labels) start, each worker dies at once loading its
 * data. */
static void bad_train_images(char *dir, size_t len)
{
	static const char *const keep[] = { "t10k-images-idx3-ubyte.gz",
					    "t10k-labels-idx1-ubyte.gz",
					    "train-labels-idx1-ubyte.gz" };
	const char *src = "/usr/share/datasets/fashion-mnist";
	char from[600], to[1024], head[4096];
	size_t n;
	FILE *f, *g;

	snprintf(dir, len, "%s/data", tmp);
	cr_assert_eq(mkdir(dir, 0700), 0);
	for (size_t i = 0; i < 3; i++) {
		snprintf(from, sizeof(from), "%s/%s", src, keep[i]);
		snprintf(to, sizeof(to), "%s/%s", dir, keep[i]);
		cr_assert_eq(symlink(from, to), 0);
	}
	/* the first 4 KiB of the real file: its data ends too soon */
	snprintf(from, sizeof(from), "%s/train-images-idx3-ubyte.gz", src);
	snprintf(to, sizeof(to), "%s/train-images-idx3-ubyte.gz", dir);
	g = fopen(from, "rb");
	f = fopen(to, "wb");
	cr_assert(f && g);
	n = fread(head, 1, sizeof(head), g);
	cr_assert_eq(fwrite(head, 1, n, f), n);
	fclose(f);
	fclose(g);
}

/* Items 3 and 6: a worker that dies at its start (here its data is bad;
 * without a GPU, --device cuda did the same) ends `local` at once (it
 * waited 61 s and blamed "0 of 1 workers registered"), with the worker's
 * own error as the last line and its exit status (3: bad input data);
 * the roles local stops say nothing ("Interrupted system call" was one
 * line per role); nothing is left behind. */
Test(trainer_usage, dead_worker_fails_local_at_once)
{
	char data[600], line[2048];
	struct pxrun r;
	double t0;

	bad_train_images(data, sizeof(data));
	t0 = now_s();
	trainer(&r, "local", "--model", "mlr", "--epochs", "1", "--workers",
		"2", "--ps", "2", "--max-train", "600", "--max-test", "100",
		"--data", data, "--timeout", "50", NULL);
	cr_assert_lt(now_s() - t0, 10.0, "local took %.1f s", now_s() - t0);
	cr_assert_eq(r.status, 3, "status %d: %s", r.status, r.err);
	last_line(r.err, line, sizeof(line));
	cr_assert(!strncmp(line, "proteus-trainer: error: worker 10", 33),
		  "last line: %s", line);
	cr_assert_not_null(strstr(line, "train-images-idx3-ubyte.gz"), "%s",
			   line);
	cr_assert_not_null(strstr(line, "before the job started"), "%s", line);
	cr_assert_null(strstr(r.err, "Interrupted system call"), "%s", r.err);
	cr_assert_null(strstr(r.err, "ps: error"), "%s", r.err);
	cr_assert_null(strstr(r.err, "coordinator: error"), "%s", r.err);
	pxrun_free(&r);
	usleep(200000);
	cr_assert_eq(count_procs(tmp), 0, "processes left behind");
	cr_assert_eq(count_entries(tmp, "pxtrainer."), 0, "socket dir left");
}

/* Start a program of the build in the background, its stderr into the
 * file err, with extra (NAME=VALUE, NULL-terminated) in its environment. */
static pid_t spawn_bg(const char *const *argv, const char *const *extra,
		      const char *err)
{
	char path[4096], *envp[512];
	posix_spawn_file_actions_t fa;
	size_t n = 0;
	pid_t pid;

	snprintf(path, sizeof(path), "%s/%s", getenv("PX_BUILD"), argv[0]);
	for (char **e = environ; *e && n < 500; e++)
		envp[n++] = *e;
	for (; extra && *extra; extra++)
		envp[n++] = (char *)*extra;
	envp[n] = NULL;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 2, err, O_WRONLY | O_CREAT |
					 O_TRUNC, 0600);
	cr_assert_eq(posix_spawn(&pid, path, &fa, NULL, (char **)argv, envp),
		     0);
	posix_spawn_file_actions_destroy(&fa);
	return pid;
}

/* Item 6: a role stopped by its parent (SIGTERM) while it waits for the
 * coordinator (here: there is none) exits quietly; it printed "error:
 * ps 1: receive: Interrupted system call". */
Test(trainer_usage, stopped_role_exits_quietly)
{
	static const char *const key[] = {
		"PX_JOB_KEY=00112233445566778899aabbccddeeff"
		"00112233445566778899aabbccddeeff", NULL };
	static const char *const roles[] = { "ps", "worker" };
	char coord[600], listen[600], err[600];

	snprintf(coord, sizeof(coord), "ipc://%s/n0", tmp);
	snprintf(err, sizeof(err), "%s/role.err", tmp);
	for (size_t i = 0; i < 2; i++) {
		const char *argv[] = { "proteus-trainer", roles[i], SMALL,
				       "--job", "7", "--node", "5",
				       "--coord", coord, "--listen", listen,
				       NULL };
		char *text;
		pid_t pid;
		int st;

		snprintf(listen, sizeof(listen), "ipc://%s/n5", tmp);
		pid = spawn_bg(argv, key, err);
		sleep(2); /* into its registration, or past it */
		kill(pid, SIGTERM);
		cr_assert_eq(waitpid(pid, &st, 0), pid);
		text = px_test_read_file(err, NULL);
		cr_assert_not_null(text);
		cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0,
			  "%s: status %#x: %s", roles[i], st, text);
		cr_assert_null(strstr(text, "error"), "%s: %s", roles[i],
			       text);
		free(text);
	}
}

/* Item 7: `local` SIGKILLed mid-job: its roles die with it (none is
 * left), and the socket dir it could not remove is removed by the next
 * `local`, which leaves none of its own. */
Test(trainer_usage, killed_local_leaves_nothing, .timeout = 90)
{
	const char *argv[] = { "proteus-trainer", "local", "--model", "mlp",
			       "--epochs", "200", "--workers", "2", "--ps",
			       "2", "--max-train", "3000", "--max-test", "500",
			       "--threads", "1", "--json", NULL };
	char err[600];
	struct pxrun r;
	pid_t pid;
	char *text;
	int st, waited = 0;

	snprintf(err, sizeof(err), "%s/local.err", tmp);
	pid = spawn_bg(argv, NULL, err);
	/* mid-job: once the coordinator says it started (on stderr with
	 * --json) */
	for (;;) {
		text = px_test_read_file(err, NULL);
		cr_assert_not_null(text);
		if (strstr(text, "job started") || waited > 300)
			break;
		free(text);
		usleep(100000);
		waited++;
	}
	cr_assert_not_null(strstr(text, "job started"), "%s", text);
	free(text);
	cr_assert_eq(count_procs(tmp), 5, "the job's roles are not running");
	cr_assert_eq(count_entries(tmp, "pxtrainer."), 1);
	kill(pid, SIGKILL);
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	for (waited = 0; count_procs(tmp) && waited < 50; waited++)
		usleep(100000);
	cr_assert_eq(count_procs(tmp), 0, "roles outlived their local");
	/* the next run removes what the killed one left */
	cr_assert_eq(trainer(&r, "local", SMALL, NULL), 0, "%s", r.err);
	pxrun_free(&r);
	cr_assert_eq(count_entries(tmp, "pxtrainer."), 0, "socket dirs left");
}

/* Item 8: the options in train's JSON as the user typed them (a float32
 * widened to double printed 0.05000000074505806), and resumed_from null
 * when not resumed, as in local's. */
Test(trainer_usage, json_prints_values_as_typed)
{
	struct pxrun r;

	cr_assert_eq(trainer(&r, "train", SMALL, "--lr", "0.05", "--momentum",
			     "0.9", "--json", NULL), 0, "%s", r.err);
	cr_assert_not_null(strstr(r.out, "\"lr\":0.05,"), "%s", r.out);
	cr_assert_not_null(strstr(r.out, "\"momentum\":0.9,"), "%s", r.out);
	cr_assert_not_null(strstr(r.out, "\"resumed_from\":null"), "%s",
			   r.out);
	pxrun_free(&r);
	cr_assert_eq(trainer(&r, "local", SMALL, "--json", NULL), 0, "%s",
		     r.err);
	cr_assert_not_null(strstr(r.out, "\"resumed_from\":null"), "%s",
			   r.out);
	pxrun_free(&r);
}

/* What etc/bash-completion/proteus-trainer offers for the words (the
 * last one is being completed), sorted, space-separated (as test_cli.c
 * does for proteusctl's). */
static void complete(const char *words, char *out, size_t len)
{
	char *dir = px_src_path("etc/bash-completion"), *cmd;
	FILE *p;
	size_t n;

	cr_assert(asprintf(&cmd,
		"bash --norc --noprofile -c '"
		"bc=/usr/share/bash-completion/bash_completion; "
		"[ -r $bc ] && . $bc; . %s/proteus-trainer || exit 9; "
		"COMP_WORDS=(%s); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); "
		"[ \"${COMP_WORDS[COMP_CWORD]+x}\" ] || COMP_WORDS+=(\"\"); "
		"cd %s && _proteus_trainer; printf \"%%s\\n\" "
		"\"${COMPREPLY[@]}\" | sort | tr \"\\n\" \" \"'", dir, words,
		tmp) > 0);
	p = popen(cmd, "r");
	cr_assert_not_null(p);
	n = fread(out, 1, len - 1, p);
	out[n] = '\0';
	cr_assert_eq(pclose(p), 0, "%s", cmd);
	free(cmd);
	free(dir);
}

Test(trainer_usage, bash_completion)
{
	char got[4096];
	FILE *f;

	if (access("/bin/bash", X_OK))
		cr_skip_test("no bash");
	complete("proteus-trainer \"\"", got, sizeof(got));
	cr_assert_str_eq(got, "coordinator enroll eval fetch help local node "
			 "predict ps train worker ");
	complete("proteus-trainer enroll --k", got, sizeof(got));
	cr_assert_str_eq(got, "--key-file ");
	complete("proteus-trainer --", got, sizeof(got));
	cr_assert_str_eq(got, "--help --version ");
	complete("proteus-trainer local --max-r", got, sizeof(got));
	cr_assert_str_eq(got, "--max-restarts ");
	complete("proteus-trainer train --max-r", got, sizeof(got));
	cr_assert_str_eq(got, " "); /* none */
	complete("proteus-trainer train --ep", got, sizeof(got));
	cr_assert_str_eq(got, "--epochs ");
	complete("proteus-trainer local --model m", got, sizeof(got));
	cr_assert_str_eq(got, "mf mlp mlr ");
	complete("proteus-trainer train --device c", got, sizeof(got));
	cr_assert_str_eq(got, "cpu cuda ");
	complete("proteus-trainer local --schedule \"\"", got, sizeof(got));
	cr_assert_str_eq(got, "const cosine ");
	complete("proteus-trainer ps --rel", got, sizeof(got));
	cr_assert_str_eq(got, "--reliable ");
	/* files (in tmp, where complete() runs): after eval, and after
	 * --checkpoint */
	{
		char path[700];

		snprintf(path, sizeof(path), "%s/job.pxc", tmp);
		f = fopen(path, "w");
		cr_assert_not_null(f);
		fclose(f);
	}
	complete("proteus-trainer eval jo", got, sizeof(got));
	cr_assert_str_eq(got, "job.pxc ");
	complete("proteus-trainer local --checkpoint jo", got, sizeof(got));
	cr_assert_str_eq(got, "job.pxc ");
	complete("proteus-trainer predict jo", got, sizeof(got));
	cr_assert_str_eq(got, "job.pxc ");
	complete("proteus-trainer train --export jo", got, sizeof(got));
	cr_assert_str_eq(got, "job.pxc ");
	complete("proteus-trainer predict --pr", got, sizeof(got));
	cr_assert_str_eq(got, "--proba ");
	/* what every command offers is what it takes: its --help */
	{
		static const char *const cmds[] = { "train", "local", "eval",
						    "fetch", "coordinator",
						    "ps", "worker", "node",
						    "predict" };

		for (size_t i = 0; i < 9; i++) {
			char words[64], *p, *tok, *save = NULL;
			struct pxrun r;

			snprintf(words, sizeof(words), "proteus-trainer %s --",
				 cmds[i]);
			complete(words, got, sizeof(got));
			cr_assert_eq(trainer(&r, cmds[i], "--help", NULL), 0);
			p = strdup(got);
			for (tok = strtok_r(p, " ", &save); tok;
			     tok = strtok_r(NULL, " ", &save)) {
				char want[80];

				snprintf(want, sizeof(want), "  %s", tok);
				cr_assert_not_null(strstr(r.out, want),
						   "%s: %s completed, not in "
						   "--help", cmds[i], tok);
			}
			free(p);
			/* and the other way round */
			for (char *o = strstr(r.out, "\n  --"); o;
			     o = strstr(o + 1, "\n  --")) {
				char opt[80], want[90];

				sscanf(o + 3, "%79s", opt);
				snprintf(want, sizeof(want), "%s ", opt);
				cr_assert_not_null(strstr(got, want),
						   "%s: %s not completed",
						   cmds[i], opt);
			}
			pxrun_free(&r);
		}
	}
}
