/* cli_model.c -- `proteusctl model ID -o FILE`: a job's last checkpoint,
 * from proteusd, exported as safetensors (docs/proteusctl.md, "model";
 * the format: docs/trainer.md, "Take the model away").
 *
 * The daemon sends the checkpoint's bytes a chunk at a time
 * (agent/jobs_model.c: the file is the daemon user's, in a 0700
 * directory); they go to a memfd, which ckpt_read then checks whole
 * (size, every field, SHA-256) as the trainer would, and export_write
 * (export_mf_write for an mf model) writes FILE atomically.  A download that meets a newer checkpoint
 * (the job wrote one meanwhile) starts again, a few times at most.
 *
 * A program job's checkpoint is its program's own (docs/programs.md,
 * "Take the checkpoint away"): the tar the store keeps, which the daemon
 * says ("format": "tar", with LATEST's name, seq and SHA-256); it is
 * checked against that SHA-256 and written as it is.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../../common/jsonout.h"
#include "../../common/log.h"
#include "../../trainer/io/ckpt.h"
#include "../../trainer/io/export.h"
#include "../../trainer/io/safetensors.h"
#include "../proto.h"
#include "cli.h"

#define RESTARTS_MAX 3 /* a job writing checkpoints faster than we read */

static const char model_usage[] =
	"usage: proteusctl model ID -o FILE [--json] [--socket PATH]\n"
	"\n"
	"The last checkpoint of job ID, from proteusd, written to FILE as\n"
	"safetensors: the tensors of a PyTorch nn.Sequential of Linear and\n"
	"ReLU (0.weight [out, in], 0.bias, 2.weight, ...), with the model,\n"
	"its widths, the label of each class and the feature scaling in the\n"
	"header's __metadata__ (docs/trainer.md, \"Take the model away\");\n"
	"of a matrix factorization (model mf): user_factors, item_factors,\n"
	"user_bias, item_bias and the global mean (docs/trainer.md,\n"
	"\"Matrix factorization\").\n"
	"A program job's is its latest complete checkpoint, the tar of what\n"
	"the program wrote in PROTEUS_CKPT_DIR (docs/programs.md), checked\n"
	"against the store's SHA-256 and written as it is.\n"
	"FILE is written whole or not at all (a temporary file beside it,\n"
	"renamed over it), mode 0644 less the umask.\n"
	"\n"
	"  -o, --output FILE  where to write the model (needed)\n"
	"  --socket PATH      control socket (default: $PROTEUS_SOCKET, else\n"
	"                     proteusd's default)\n"
	"  --json             say what was written as JSON\n"
	"\n"
	"exit: 0 written, 1 the daemon is not running or failed, 2 usage (FILE\n"
	"a directory or a FIFO), 3 a damaged checkpoint, 4 no such job or no\n"
	"checkpoint yet\n";

struct margs {
	char sock[CLI_SOCKET_MAX];
	const char *out;
	bool json;
	int64_t id;
	int64_t total;       /* the job's total clocks, status's (0: not
			      * said: the checkpoint's) */
	bool tar;            /* a program's checkpoint (a tar, as is) */
	char name[256], sha256[65];
	int64_t seq;
};

static int margs_parse(struct margs *a, int argc, char **argv)
{
	static const struct option opts[] = {
		{"help", no_argument, NULL, 'h'},
		{"json", no_argument, NULL, 'j'},
		{"output", required_argument, NULL, 'o'},
		{"socket", required_argument, NULL, 's'},
		{NULL, 0, NULL, 0},
	};
	const char *sock = NULL;
	char *end;
	int o;

	a->json = cli_g.json;
	optind = 1;
	while ((o = getopt_long(argc, argv, ":ho:", opts, NULL)) != -1) {
		switch (o) {
		case 'h':
			fputs(model_usage, stdout);
			return CLI_EXIT_OK;
		case 'j':
			a->json = true;
			break;
		case 'o':
			a->out = optarg;
			break;
		case 's':
			sock = optarg;
			break;
		default:
			return cli_bad_option("model", argv, o);
		}
	}
	if (optind >= argc)
		return cli_usage("model", "'model' needs a job id");
	errno = 0;
	a->id = strtoll(argv[optind], &end, 10);
	if (errno || end == argv[optind] || *end || a->id <= 0)
		return cli_usage("model", "'%s' is not a job id (a positive "
				 "integer)", argv[optind]);
	if (optind + 1 < argc)
		return cli_usage("model", "unexpected argument '%s'",
				 argv[optind + 1]);
	if (!a->out || !a->out[0])
		return cli_usage("model", "'model' needs -o FILE (where to "
				 "write the model)");
	if (sock) {
		if (strlen(sock) >= sizeof(a->sock))
			return cli_usage("model", "--socket: path too long");
		snprintf(a->sock, sizeof(a->sock), "%s", sock);
		return -1;
	}
	return cli_socket_path(a->sock, sizeof(a->sock));
}

/* One chunk: base64 to bytes at off in fd.  Its length in *ret_len. */
static int put_chunk(int fd, const char *b64, uint64_t off, uint64_t want,
		     uint64_t *ret_len)
{
	size_t n = strlen(b64);
	unsigned char *raw = malloc(n / 4 * 3 + 3);
	int len;

	if (!raw) {
		log_err("out of memory");
		return CLI_EXIT_FAIL;
	}
	len = n % 4 ? -1 : EVP_DecodeBlock(raw, (const unsigned char *)b64,
					   (int)n);
	/* EVP_DecodeBlock counts the padding's zero bytes */
	for (size_t i = n; len > 0 && i > 0 && b64[i - 1] == '='; i--)
		len--;
	if (len < 0 || (uint64_t)len != want) {
		free(raw);
		log_err("proteusd's answer: 'data' is not %" PRIu64 " bytes "
			"of base64", want);
		return CLI_EXIT_FAIL;
	}
	if (len && pwrite(fd, raw, (size_t)len, (off_t)off) != len) {
		free(raw);
		log_err("cannot keep the checkpoint in memory: %s",
			strerror(errno));
		return CLI_EXIT_FAIL;
	}
	free(raw);
	*ret_len = (uint64_t)len;
	return CLI_EXIT_OK;
}

/* The job's checkpoint into fd, chunk by chunk; its size in *ret, the
 * job's total clocks in a->total. */
static int download(struct margs *a, int fd, uint64_t *ret)
{
	char version[128] = "";
	uint64_t off = 0, total = 0, len;
	int restarts = 0, code;

	do {
		json_t *req = proto_request_new(PROTO_CMD_model), *r = NULL;
		const char *v, *data;
		json_int_t bytes, at, want;

		if (!req || json_object_set_new(req, "job", json_integer(a->id))
		    || json_object_set_new(req, "offset",
					   json_integer((json_int_t)off))) {
			json_decref(req);
			log_err("out of memory");
			return CLI_EXIT_FAIL;
		}
		code = cli_daemon_call(a->sock, req, &r);
		json_decref(req);
		if (code != CLI_EXIT_OK)
			return code;
		v = json_string_value(json_object_get(r, "version"));
		data = json_string_value(json_object_get(r, "data"));
		bytes = json_integer_value(json_object_get(r, "bytes"));
		at = json_integer_value(json_object_get(r, "offset"));
		want = json_integer_value(json_object_get(r, "length"));
		if (!v || !data || bytes < 0 ||
		    (uint64_t)bytes > CKPT_MAX_BYTES || at != (json_int_t)off ||
		    want < 0 || (uint64_t)(at + want) > (uint64_t)bytes ||
		    (want == 0 && off < (uint64_t)bytes)) {
			json_decref(r);
			log_err("proteusd's answer to 'model' is not a chunk "
				"of a checkpoint at offset %" PRIu64, off);
			return CLI_EXIT_FAIL;
		}
		if (version[0] && strcmp(version, v)) {
			/* the job wrote a newer checkpoint meanwhile */
			json_decref(r);
			if (++restarts > RESTARTS_MAX) {
				log_err("job %" PRId64 " wrote %d checkpoints "
					"while this one was read: try again",
					a->id, restarts);
				return CLI_EXIT_FAIL;
			}
			version[0] = '\0';
			off = 0;
			continue;
		}
		snprintf(version, sizeof(version), "%s", v);
		total = (uint64_t)bytes;
		a->tar = !strcmp(json_string_value(json_object_get(r,
				"format")) ?: "", "tar");
		if (a->tar) {
			const char *sha = json_string_value(json_object_get(r,
							"sha256"));

			snprintf(a->sha256, sizeof a->sha256, "%s",
				 sha && strlen(sha) == 64 ? sha : "");
			snprintf(a->name, sizeof a->name, "%s",
				 json_string_value(json_object_get(r, "name"))
				 ?: "");
			a->seq = json_integer_value(json_object_get(r, "seq"));
		}
		if (json_is_integer(json_object_get(r, "clocks_total")))
			a->total = json_integer_value(json_object_get(r,
							"clocks_total"));
		code = put_chunk(fd, data, off, (uint64_t)want, &len);
		json_decref(r);
		if (code != CLI_EXIT_OK)
			return code;
		off += len;
	} while (off < total || !version[0]);
	if (ftruncate(fd, (off_t)total) != 0) {
		log_err("cannot keep the checkpoint in memory: %s",
			strerror(errno));
		return CLI_EXIT_FAIL;
	}
	*ret = total;
	return CLI_EXIT_OK;
}

/* o (taken) on a line of stdout. */
static int print_json(json_t *o)
{
	int bad = !o || px_json_dumpf(o, stdout, JSON_COMPACT);

	json_decref(o);
	if (bad) {
		log_err("cannot write the output");
		return CLI_EXIT_FAIL;
	}
	putchar('\n');
	return CLI_EXIT_OK;
}

static int report(const struct margs *a, const struct ckpt_meta *m)
{
	/* the job's total, as `status` says it (one figure for both);
	 * the checkpoint's is of the fleet the job started with */
	int64_t total = a->total > 0 ? a->total : m->total;
	char widths[160];

	if (total < m->clock)
		total = m->clock;

	export_shape_text(m, widths, sizeof(widths));
	if (a->json) {
		json_t *o = json_pack("{s:I, s:s, s:s, s:s, s:I, s:I, s:I, "
				      "s:o}", "job", (json_int_t)a->id,
				      "file", a->out,
				      "model", model_kind_name(m->d.kind),
				      m->d.kind == MODEL_MF ? "shape"
							    : "layers", widths,
				      "params", (json_int_t)m->d.n_params,
				      "clock", (json_int_t)m->clock,
				      "total", (json_int_t)total,
				      m->d.kind == MODEL_MF ? "test_rmse"
							    : "test_accuracy",
				      isnan(m->test_accuracy) ? json_null()
					      : json_real(m->test_accuracy));
		return print_json(o);
	}
	printf("job %" PRId64 ": %s %s (%zu parameters) at clock %" PRId64
	       " of %" PRId64 " written to %s\n", a->id,
	       model_kind_name(m->d.kind), widths, m->d.n_params, m->clock,
	       total, a->out);
	return CLI_EXIT_OK;
}

/* A program's checkpoint (fd, bytes long): its SHA-256 the store's,
 * then written to a->out as it is, atomically. */
static int write_tar(const struct margs *a, int fd, uint64_t bytes)
{
	unsigned char d[EVP_MAX_MD_SIZE], buf[1 << 16];
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	struct px_atomic at;
	unsigned dl = 0;
	char hex[65];
	uint64_t off = 0;
	bool ok;

	ok = md && EVP_DigestInit_ex(md, EVP_sha256(), NULL) == 1 &&
	     px_atomic_open(&at, a->out, 0644) == 0;
	if (!ok) {
		EVP_MD_CTX_free(md);
		log_err("-o: %s: %s", a->out, strerror(errno));
		return CLI_EXIT_FAIL;
	}
	while (ok && off < bytes) {
		ssize_t n = pread(fd, buf, sizeof buf, (off_t)off);

		ok = n > 0 && EVP_DigestUpdate(md, buf, (size_t)n) == 1 &&
		     write(at.fd, buf, (size_t)n) == n;
		off += n > 0 ? (uint64_t)n : 0;
	}
	ok = ok && EVP_DigestFinal_ex(md, d, &dl) == 1;
	EVP_MD_CTX_free(md);
	if (!ok) {
		px_atomic_abort(&at);
		log_err("-o: %s: %s", a->out, strerror(errno));
		return CLI_EXIT_FAIL;
	}
	px_hex(d, 32, hex);
	if (strcmp(hex, a->sha256)) {
		px_atomic_abort(&at);
		log_err("job %" PRId64 "'s checkpoint %" PRId64 " (%" PRIu64
			" bytes from proteusd): SHA-256 %s, not the store's %s",
			a->id, a->seq, bytes, hex, a->sha256[0] ? a->sha256 :
			"(none said)");
		return CLI_EXIT_DATA;
	}
	if (px_atomic_commit(&at, a->out) != 0) {
		log_err("-o: %s: %s", a->out, strerror(errno));
		return CLI_EXIT_FAIL;
	}
	if (a->json) {
		json_t *o = json_pack("{s:I, s:s, s:s, s:s, s:I, s:I, s:s}",
				      "job", (json_int_t)a->id, "file", a->out,
				      "format", "tar", "name", a->name, "seq",
				      (json_int_t)a->seq, "bytes",
				      (json_int_t)bytes, "sha256", hex);
		return print_json(o);
	}
	printf("job %" PRId64 ": checkpoint %" PRId64 " '%s' (%" PRIu64
	       " bytes, a tar of what the program wrote) written to %s\n",
	       a->id, a->seq, a->name, bytes, a->out);
	return CLI_EXIT_OK;
}

int cli_model(int argc, char **argv)
{
	struct px_error err = {0};
	struct margs a = {0};
	struct ckpt_meta m;
	char proc[64];
	float *w = NULL, *v = NULL;
	uint64_t bytes = 0;
	enum px_err e;
	int code = margs_parse(&a, argc, argv), fd;

	if (code >= 0)
		return code;
	/* a directory, a FIFO: refused before anything is asked (usage);
	 * a folder it cannot write in fails as the write would (1) */
	if (st_check_writable(a.out, &err) != PX_OK) {
		log_err("-o: %s", err.msg);
		return err.code == PX_EINVAL || err.code == PX_ETOOBIG ?
		       CLI_EXIT_USAGE : CLI_EXIT_FAIL;
	}
	fd = memfd_create("proteus-checkpoint", MFD_CLOEXEC);
	if (fd < 0) {
		log_err("memfd_create: %s", strerror(errno));
		return CLI_EXIT_FAIL;
	}
	code = download(&a, fd, &bytes);
	if (code != CLI_EXIT_OK)
		goto out;
	if (a.tar) {
		code = write_tar(&a, fd, bytes);
		goto out;
	}
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	e = ckpt_read(proc, &m, &w, &v, &err);
	if (e != PX_OK) {
		log_err("job %" PRId64 "'s checkpoint (%" PRIu64 " bytes from "
			"proteusd): %s", a.id, bytes, err.msg);
		code = cli_exit_for(e);
		goto out;
	}
	e = export_ckpt_write(a.out, &m, w, &err);
	if (e != PX_OK) {
		log_err("%s", err.msg);
		code = cli_exit_for(e);
	} else {
		code = report(&a, &m);
	}
	data_prep_release(&m.prep);
out:
	free(w);
	free(v);
	close(fd);
	return code;
}
