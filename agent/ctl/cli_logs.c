/* cli_logs.c -- `proteusctl logs ID [--node I] [--follow] [--lines N]`:
 * each node's program output, from proteusd (docs/proteusctl.md,
 * "logs"), every line prefixed with its node, "[i3] ".
 *
 * The daemon sends the last bytes of each node's log (agent/jobs_logs.c:
 * the files are the daemon user's, in a 0700 folder); this prints the
 * last N lines of each, nodes in order.  --follow then asks every 500 ms
 * for what came after what it has (the "offset" of each file), printing
 * whole lines as they come, until the job has ended and nothing more
 * came, or SIGINT.  The text came from the job's programs: each line is
 * escaped for the terminal (px_term_safe) before it is printed.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../common/jsonout.h"
#include "../../common/log.h"
#include "../proto.h"
#include "cli.h"

#define LINES_DEFAULT 100
#define LINES_MAX 100000
#define NODES_MAX 1024          /* nodes followed */
#define PARTIAL_MAX (64 << 10)  /* a line without its end, printed then */
#define FOLLOW_MS 500

static const char logs_usage[] =
	"usage: proteusctl logs ID [--node I] [--follow] [--lines N] "
	"[--json] [--socket PATH]\n"
	"\n"
	"The output of job ID's programs, from proteusd: each node's last\n"
	"lines (its log, <job_dir>/ID/logs/iI.log, and the older iI.log.1),\n"
	"nodes in order, each line prefixed with its node ([i3] ...).\n"
	"Control characters are shown escaped (\\x1b), bytes that are not\n"
	"UTF-8 as '?'.\n"
	"\n"
	"  --node I       only instance I's\n"
	"  -n, --lines N  the last N lines of each node (default 100; the\n"
	"                 daemon sends at most 256 KiB of each)\n"
	"  -f, --follow   then print new lines as they come (every 500 ms),\n"
	"                 until the job has ended and nothing more comes, or\n"
	"                 SIGINT\n"
	"  --socket PATH  control socket (default: $PROTEUS_SOCKET, else\n"
	"                 proteusd's default)\n"
	"  --json         one {\"node\": I, \"line\": TEXT} object per line\n"
	"\n"
	"exit: 0 ok (SIGINT while following included), 1 the daemon is not\n"
	"running or failed, 2 usage, 4 no such job\n";

struct largs {
	char sock[CLI_SOCKET_MAX];
	int64_t id;
	int64_t node;           /* -1: every node */
	long lines;
	bool follow, json;
};

/* What a node's last chunk left without its newline, printed when the
 * rest comes (or at the end). */
struct pending {
	uint64_t node;
	char *buf;
	size_t n;
};

struct follow {
	struct pending p[NODES_MAX];
	size_t n;
	json_t *offsets;        /* {"iN.log": the next byte} */
};

static volatile sig_atomic_t stop;

static void on_sigint(int sig)
{
	(void)sig;
	stop = 1;
}

/* s as an integer in [lo, hi] into *ret; false when it is not one. */
static bool int_arg(const char *s, long long lo, long long hi, long long *ret)
{
	char *end;

	errno = 0;
	*ret = strtoll(s, &end, 10);
	return !errno && end != s && !*end && *ret >= lo && *ret <= hi;
}

static int largs_tail(struct largs *a, int argc, char **argv,
		      const char *sock)
{
	long long v;

	if (optind >= argc)
		return cli_usage("logs", "'logs' needs a job id");
	if (!int_arg(argv[optind], 1, INT64_MAX, &v))
		return cli_usage("logs", "'%s' is not a job id (a positive "
				 "integer)", argv[optind]);
	a->id = v;
	if (optind + 1 < argc)
		return cli_usage("logs", "unexpected argument '%s'",
				 argv[optind + 1]);
	if (sock) {
		if (strlen(sock) >= sizeof(a->sock))
			return cli_usage("logs", "--socket: path too long");
		snprintf(a->sock, sizeof(a->sock), "%s", sock);
		return -1;
	}
	return cli_socket_path(a->sock, sizeof(a->sock));
}

static int largs_parse(struct largs *a, int argc, char **argv)
{
	static const struct option opts[] = {
		{"follow", no_argument, NULL, 'f'},
		{"help", no_argument, NULL, 'h'},
		{"json", no_argument, NULL, 'j'},
		{"lines", required_argument, NULL, 'n'},
		{"node", required_argument, NULL, 'N'},
		{"socket", required_argument, NULL, 's'},
		{NULL, 0, NULL, 0},
	};
	const char *sock = NULL;
	long long v;
	int o;

	a->json = cli_g.json;
	a->node = -1;
	a->lines = LINES_DEFAULT;
	optind = 1;
	while ((o = getopt_long(argc, argv, ":hfn:", opts, NULL)) != -1) {
		switch (o) {
		case 'h':
			fputs(logs_usage, stdout);
			return CLI_EXIT_OK;
		case 'f':
			a->follow = true;
			break;
		case 'j':
			a->json = true;
			break;
		case 'n':
			if (!int_arg(optarg, 0, LINES_MAX, &v))
				return cli_usage("logs", "--lines: '%s' is not "
						 "a count of lines (an integer "
						 "from 0 to %d)", optarg,
						 LINES_MAX);
			a->lines = (long)v;
			break;
		case 'N':
			if (!int_arg(optarg, 0, INT64_MAX, &v))
				return cli_usage("logs", "--node: '%s' is not "
						 "an instance number (an "
						 "integer >= 0)", optarg);
			a->node = v;
			break;
		case 's':
			sock = optarg;
			break;
		default:
			return cli_bad_option("logs", argv, o);
		}
	}
	return largs_tail(a, argc, argv, sock);
}

/* Ask the daemon for job a->id's logs: the tails (offsets NULL), else
 * what came after offsets. */
static int ask_logs(const struct largs *a, json_t *offsets, json_t **ret)
{
	json_t *req = proto_request_new(PROTO_CMD_logs);
	long long max = (long long)a->lines * 512;
	int code;

	if (max < (64 << 10))
		max = 64 << 10;
	if (max > (256 << 10))
		max = 256 << 10;
	if (!req || json_object_set_new(req, "job", json_integer(a->id)) ||
	    json_object_set_new(req, "max", json_integer(max)) ||
	    (a->node >= 0 && json_object_set_new(req, "node",
						 json_integer(a->node))) ||
	    (offsets && json_object_set(req, "offset", offsets))) {
		json_decref(req);
		log_err("out of memory");
		return CLI_EXIT_FAIL;
	}
	code = cli_daemon_call(a->sock, req, ret);
	json_decref(req);
	return code;
}

/* One line of node's, n bytes (its newline not counted), printed. */
static void put_line(const struct largs *a, uint64_t node, const char *s,
		     size_t n)
{
	char *line, *safe;

	if (n && s[n - 1] == '\r')
		n--;
	line = strndup(s, n);
	safe = malloc(PX_TERM_SAFE_LEN(n));
	if (!line || !safe) {
		free(line);
		free(safe);
		log_err("out of memory");
		return;
	}
	if (a->json) {
		json_t *o = json_pack("{s:I, s:s}", "node", (json_int_t)node,
				      "line", line);

		if (o && !px_json_dumpf(o, stdout, JSON_COMPACT))
			putchar('\n');
		json_decref(o);
	} else {
		printf("[i%" PRIu64 "] %s\n", node,
		       px_term_safe(line, safe, PX_TERM_SAFE_LEN(n)));
	}
	free(line);
	free(safe);
}

/* The last `keep` lines of s[0..n) (keep < 0: all of them) printed; the
 * end without a newline is left in *ret_rest (its offset in s). */
static void put_lines(const struct largs *a, uint64_t node, const char *s,
		      size_t n, long keep, size_t *ret_rest)
{
	size_t i = 0, lines = 0, end = n;
	const char *nl;

	while (end > 0 && s[end - 1] != '\n')
		end--;
	for (size_t k = 0; k < end; k++)
		lines += s[k] == '\n';
	/* skip to the first of the last `keep` */
	for (; keep >= 0 && lines > (size_t)keep; lines--)
		i = (size_t)((const char *)memchr(s + i, '\n', end - i) - s) +
		    1;
	while (i < end && (nl = memchr(s + i, '\n', end - i))) {
		put_line(a, node, s + i, (size_t)(nl - s) - i);
		i = (size_t)(nl - s) + 1;
	}
	*ret_rest = end;
}

static struct pending *pending_of(struct follow *f, uint64_t node)
{
	for (size_t i = 0; i < f->n; i++)
		if (f->p[i].node == node)
			return &f->p[i];
	if (f->n == NODES_MAX)
		return NULL;
	f->p[f->n] = (struct pending){ .node = node };
	return &f->p[f->n++];
}

/* text (n bytes) after what node's last chunk left: its whole lines
 * printed, the rest kept.  keep >= 0 (the first answer): only the last
 * keep lines, the one without its end counted. */
static int node_text(const struct largs *a, struct follow *f, uint64_t node,
		     const char *text, size_t n, long keep)
{
	struct pending *p = pending_of(f, node);
	bool open_end = n && text[n - 1] != '\n', none = keep == 0;
	size_t rest;
	char *b;

	if (!p) {
		log_err("more than %d nodes", NODES_MAX);
		return CLI_EXIT_FAIL;
	}
	b = realloc(p->buf, p->n + n + 1);
	if (!b) {
		log_err("out of memory");
		return CLI_EXIT_FAIL;
	}
	memcpy(b + p->n, text, n);
	p->buf = b;
	p->n += n;
	if (keep > 0 && open_end)
		keep--;       /* the last line, printed when it ends */
	put_lines(a, node, b, p->n, keep, &rest);
	memmove(b, b + rest, p->n - rest);
	p->n -= rest;
	if (none && open_end)
		p->n = 0;     /* --lines 0: not even that one */
	/* a line without end: shown as it is when nothing more is awaited
	 * or it is too long to wait for */
	if (p->n > PARTIAL_MAX || (p->n && !a->follow)) {
		put_line(a, node, b, p->n);
		p->n = 0;
	}
	return CLI_EXIT_OK;
}

/* The lines nobody ended, printed (the logs end there). */
static void flush_pending(const struct largs *a, struct follow *f)
{
	for (size_t i = 0; i < f->n; i++) {
		if (f->p[i].n)
			put_line(a, f->p[i].node, f->p[i].buf, f->p[i].n);
		f->p[i].n = 0;
	}
}

/* The chunks of one node (the reply's files[i..), while they are of
 * that node: its .1's, then its log's) as one text into *ret_text
 * (malloc'd) and *ret_n, each file's next offset kept; the index after
 * them. */
static size_t node_chunks(struct follow *f, json_t *files, size_t i,
			  char **ret_text, size_t *ret_n)
{
	json_int_t node = json_integer_value(json_object_get(
		json_array_get(files, i), "node"));
	size_t n = 0, k;
	char *all = NULL;

	for (k = i; k < json_array_size(files); k++) {
		json_t *o = json_array_get(files, k);
		json_t *d = json_object_get(o, "data");
		const char *file = json_string_value(json_object_get(o,
								     "file"));
		size_t len = json_string_length(d);
		char *b;

		if (json_integer_value(json_object_get(o, "node")) != node)
			break;
		b = realloc(all, n + len + 1);
		if (!b) {
			free(all);
			*ret_text = NULL;
			return 0;
		}
		all = b;
		if (len)
			memcpy(all + n, json_string_value(d), len);
		n += len;
		if (file && !strstr(file, ".log.1"))
			json_object_set_new(f->offsets, file, json_integer(
				json_integer_value(json_object_get(o,
							"offset")) +
				(json_int_t)len));
	}
	*ret_text = all;
	*ret_n = n;
	return k;
}

/* A reply's files, in order: each node's text (keep >= 0: its last keep
 * lines; the first answer).  *ret_new: how many bytes came. */
static int take_reply(const struct largs *a, struct follow *f, json_t *r,
		      long keep, size_t *ret_new)
{
	json_t *files = json_object_get(r, "files");
	const char *note = json_string_value(json_object_get(r, "note"));

	*ret_new = 0;
	if (!json_is_array(files)) {
		log_err("proteusd's answer to 'logs' has no 'files'");
		return CLI_EXIT_FAIL;
	}
	for (size_t i = 0, k; i < json_array_size(files); i = k) {
		json_int_t node = json_integer_value(json_object_get(
			json_array_get(files, i), "node"));
		char *text = NULL;
		size_t n = 0;
		int code;

		k = node_chunks(f, files, i, &text, &n);
		if (!text) {
			log_err("out of memory");
			return CLI_EXIT_FAIL;
		}
		*ret_new += n;
		code = node_text(a, f, (uint64_t)node, text, n, keep);
		free(text);
		if (code != CLI_EXIT_OK)
			return code;
	}
	if (json_integer_value(json_object_get(r, "nodes_left_out")) > 0 &&
	    keep >= 0)
		log_notice("%lld more nodes not shown (--node I shows one)",
			   (long long)json_integer_value(json_object_get(r,
							"nodes_left_out")));
	if (note && keep >= 0) {
		char safe[PX_TERM_SAFE_LEN(256)];

		log_notice("%s", px_term_safe(note, safe, sizeof safe));
	}
	fflush(stdout);
	return CLI_EXIT_OK;
}

static bool job_ended(const struct largs *a, int *ret_code)
{
	json_t *req = proto_request_new(PROTO_CMD_job), *r = NULL;
	const char *s;
	bool end;

	*ret_code = CLI_EXIT_FAIL;
	if (!req || json_object_set_new(req, "job", json_integer(a->id))) {
		json_decref(req);
		log_err("out of memory");
		return true;
	}
	*ret_code = cli_daemon_call(a->sock, req, &r);
	json_decref(req);
	if (*ret_code != CLI_EXIT_OK)
		return true;
	s = json_string_value(json_object_get(r, "state"));
	end = s && (!strcmp(s, "done") || !strcmp(s, "failed") ||
		    !strcmp(s, "cancelled"));
	json_decref(r);
	return end;
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	/* SIGINT ends the sleep (and the following) */
	while (!stop && nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* --follow: what comes after f->offsets until the job has ended and
 * nothing more came, or SIGINT. */
static int follow(const struct largs *a, struct follow *f)
{
	struct sigaction sa = { .sa_handler = on_sigint };
	int code = CLI_EXIT_OK;

	sigemptyset(&sa.sa_mask);
	(void)sigaction(SIGINT, &sa, NULL);
	while (!stop) {
		json_t *r = NULL;
		size_t got = 0;
		bool end;

		sleep_ms(FOLLOW_MS);
		if (stop)
			break;
		/* the state first: what the job wrote before it ended comes
		 * in the answer after */
		end = job_ended(a, &code);
		if (code != CLI_EXIT_OK)
			return code;
		code = ask_logs(a, f->offsets, &r);
		if (code == CLI_EXIT_OK)
			code = take_reply(a, f, r, -1, &got);
		json_decref(r);
		if (code != CLI_EXIT_OK)
			return code;
		if (end && !got)
			break;
	}
	flush_pending(a, f);
	return CLI_EXIT_OK;
}

int cli_logs(int argc, char **argv)
{
	struct largs a = {0};
	struct follow *f;
	json_t *r = NULL;
	size_t got;
	int code = largs_parse(&a, argc, argv);

	if (code >= 0)
		return code;
	f = calloc(1, sizeof *f);
	if (f)
		f->offsets = json_object();
	if (!f || !f->offsets) {
		free(f);
		log_err("out of memory");
		return CLI_EXIT_FAIL;
	}
	code = ask_logs(&a, NULL, &r);
	if (code == CLI_EXIT_OK)
		code = take_reply(&a, f, r, a.lines, &got);
	json_decref(r);
	if (code == CLI_EXIT_OK && a.follow)
		code = follow(&a, f);
	else if (code == CLI_EXIT_OK)
		flush_pending(&a, f);
	for (size_t i = 0; i < f->n; i++)
		free(f->p[i].buf);
	json_decref(f->offsets);
	free(f);
	fflush(stdout);
	return code;
}
