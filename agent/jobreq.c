/* jobreq.c -- the submit request: job spec + trainer or program + world
 * (jobreq.h). */
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../bidbrain/policy.h"
#include "../cloudapi/fetch.h"
#include "../trainer/io/data_url.h"
#include "config.h"
#include "jobreq.h"
#include "workload.h"

#define KEY_SHOWN 64             /* bytes of a field's name in a message */

/* A field's name as a message shows it: terminal-safe, at most KEY_SHOWN
 * bytes and "..." (an unknown field may have any name). */
static const char *shown(const char *k, char *buf, size_t len)
{
	char tmp[KEY_SHOWN + 1];
	size_t n;

	snprintf(tmp, sizeof tmp, "%s", k);
	px_term_safe(tmp, buf, len);
	n = strlen(buf);
	if (strlen(k) > KEY_SHOWN && n + 4 <= len)
		memcpy(buf + n, "...", 4);
	return buf;
}

static enum px_err bad(struct px_error *err, const char *name,
		       const char *sec, const char *key, const char *what)
{
	char k[PX_TERM_SAFE_LEN(KEY_SHOWN) + 3];

	return px_errorf(err, PX_EINVAL, "%s: %s.%s: %s", name, sec,
			 shown(key, k, sizeof k), what);
}

/* A number in [lo, hi] (lo excluded when open_lo). */
static enum px_err num(json_t *v, const char *name, const char *sec,
		       const char *key, double lo, bool open_lo, double hi,
		       double *ret, struct px_error *err)
{
	double x;
	char what[128];

	if (!json_is_number(v))
		return bad(err, name, sec, key, "must be a number");
	x = json_number_value(v);
	if (!isfinite(x) || (open_lo ? x <= lo : x < lo) || x > hi) {
		snprintf(what, sizeof what, "%g is out of range (%s%g to %g)",
			 x, open_lo ? "above " : "", lo, hi);
		return bad(err, name, sec, key, what);
	}
	*ret = x;
	return PX_OK;
}

/* A whole number in [lo, hi]. */
static enum px_err whole64(json_t *v, const char *name, const char *sec,
			   const char *key, long long lo, long long hi,
			   int64_t *ret, struct px_error *err)
{
	char what[128];

	if (!json_is_integer(v))
		return bad(err, name, sec, key, "must be a whole number");
	json_int_t x = json_integer_value(v);
	if (x < lo || x > hi) {
		snprintf(what, sizeof what, "%lld is out of range (%lld to "
			 "%lld)", (long long)x, lo, hi);
		return bad(err, name, sec, key, what);
	}
	*ret = x;
	return PX_OK;
}

static enum px_err whole(json_t *v, const char *name, const char *sec,
			 const char *key, long lo, long hi, int *ret,
			 struct px_error *err)
{
	int64_t x = 0;
	enum px_err r = whole64(v, name, sec, key, lo, hi, &x, err);

	if (r == PX_OK)
		*ret = (int)x;
	return r;
}

/* A string of printable characters that fits len bytes. */
static enum px_err text(json_t *v, const char *name, const char *sec,
			const char *key, char *out, size_t len,
			struct px_error *err)
{
	const char *s;

	if (!json_is_string(v))
		return bad(err, name, sec, key, "must be a string");
	s = json_string_value(v);
	if (json_string_length(v) >= len) {
		char what[96];

		snprintf(what, sizeof what, "at most %zu bytes (this one has "
			 "%zu)", len - 1, json_string_length(v));
		return bad(err, name, sec, key, what);
	}
	if (strlen(s) != json_string_length(v) ||
	    px_ctrl_at(s, strlen(s)) >= 0)
		return bad(err, name, sec, key, "has a control character");
	snprintf(out, len, "%s", s);
	return PX_OK;
}

/* text() that must be a or b. */
static enum px_err either(json_t *v, const char *name, const char *sec,
			  const char *key, char *out, size_t len,
			  const char *a, const char *b, struct px_error *err)
{
	enum px_err r = text(v, name, sec, key, out, len, err);

	if (r == PX_OK && strcmp(out, a) && strcmp(out, b))
		return px_errorf(err, PX_EINVAL, "%s: %s.%s: must be \"%s\" "
				 "or \"%s\"", name, sec, key, a, b);
	return r;
}

/* trainer.data: {"train": PATH, "test": PATH, "format": ..., "scale":
 * ..., "label_column": N, "train_sha256": HEX, "test_sha256": HEX}; both
 * files absolute paths or URLs (s3://, https://, file://; a URL needs its
 * SHA-256, which the nodes check: trainer/io/data_url.h). */
static enum px_err parse_data(json_t *o, const char *name,
			      struct job_data *d, struct px_error *err)
{
	const char *k;
	json_t *v;
	enum px_err r = PX_OK;

	*d = (struct job_data){ .scale = "none", .label_column = 1 };
	if (!json_is_object(o))
		return px_errorf(err, PX_EINVAL, "%s: trainer.data: must be an "
				 "object", name);
	json_object_foreach(o, k, v) {
		if (!strcmp(k, "train") || !strcmp(k, "test")) {
			char *to = k[1] == 'r' ? d->train : d->test;

			r = text(v, name, "trainer.data", k, to,
				 sizeof d->train, err);
			if (r == PX_OK && to[0] != '/' && !data_is_url(to))
				r = bad(err, name, "trainer.data", k, "must be "
					"an absolute path (proteusctl submit "
					"makes it one) or a URL");
		} else if (!strcmp(k, "train_sha256") ||
			   !strcmp(k, "test_sha256")) {
			char *to = k[1] == 'r' ? d->train_sha256 :
				   d->test_sha256;

			r = text(v, name, "trainer.data", k, to,
				 sizeof d->train_sha256, err);
			if (r == PX_OK && !fetch_sha256_valid(to))
				r = bad(err, name, "trainer.data", k, "must be "
					"a SHA-256: 64 hex digits");
		} else if (!strcmp(k, "format")) {
			r = text(v, name, "trainer.data", k, d->format,
				 sizeof d->format, err);
			if (r == PX_OK && strcmp(d->format, "libsvm") &&
			    strcmp(d->format, "csv") && strcmp(d->format, "idx"))
				r = bad(err, name, "trainer.data", k, "must be "
					"\"libsvm\", \"csv\" or \"idx\"");
		} else if (!strcmp(k, "scale")) {
			r = either(v, name, "trainer.data", k, d->scale,
				   sizeof d->scale, "none", "standard", err);
		} else if (!strcmp(k, "label_column")) {
			r = whole(v, name, "trainer.data", k, 1, 65537,
				  &d->label_column, err);
		} else {
			r = bad(err, name, "trainer.data", k, "unknown field");
		}
		if (r != PX_OK)
			return r;
	}
	if (!d->train[0] || !d->test[0])
		return bad(err, name, "trainer.data", d->train[0] ? "test" :
			   "train", "missing (a training set and a test set, "
			   "each a file)");
	if (data_is_url(d->train) && !d->train_sha256[0])
		return bad(err, name, "trainer.data", "train_sha256", "missing "
			   "(a file named by URL is checked by its SHA-256)");
	if (data_is_url(d->test) && !d->test_sha256[0])
		return bad(err, name, "trainer.data", "test_sha256", "missing "
			   "(a file named by URL is checked by its SHA-256)");
	return PX_OK;
}

/* What a matrix factorization takes (docs/trainer.md, "Matrix
 * factorization"): ratings of its own, the CPU, no accuracy, no feature
 * scaling or label column; rank is its alone. */
static enum px_err check_mf(const char *name, const struct job_trainer *t,
			    struct px_error *err)
{
	const struct job_data *d = &t->data;

	if (strcmp(t->model, "mf"))
		return t->rank ? bad(err, name, "trainer", "rank", "only for "
				     "model \"mf\"") : PX_OK;
	if (!d->train[0])
		return bad(err, name, "trainer", "data", "model \"mf\" needs "
			   "its ratings: train and test files of "
			   "user,item,rating lines");
	if (strcmp(t->device, "cpu"))
		return bad(err, name, "trainer", "device", "model \"mf\" "
			   "trains on the CPU");
	if (t->target_accuracy > 0)
		return bad(err, name, "trainer", "target_accuracy", "model "
			   "\"mf\" has no accuracy (it reports an RMSE)");
	if (d->format[0] && strcmp(d->format, "csv"))
		return bad(err, name, "trainer.data", "format", "model \"mf\" "
			   "reads CSV ratings");
	if (strcmp(d->scale, "none"))
		return bad(err, name, "trainer.data", "scale", "not for model "
			   "\"mf\" (ratings are not scaled)");
	if (d->label_column != 1)
		return bad(err, name, "trainer.data", "label_column", "not for "
			   "model \"mf\" (user,item,rating columns)");
	return PX_OK;
}

static enum px_err parse_trainer(json_t *o, const char *name,
				 struct job_trainer *t, struct px_error *err)
{
	const char *k;
	json_t *v;
	enum px_err r = PX_OK;

	*t = (struct job_trainer){.model = "mlr", .epochs = 1, .batch = 128,
				  .lr = 0.05, .workers_per_instance = 1,
				  .device = "cpu"};
	if (!o)
		return PX_OK;
	if (!json_is_object(o))
		return px_errorf(err, PX_EINVAL, "%s: trainer: must be an "
				 "object", name);
	json_object_foreach(o, k, v) {
		if (!strcmp(k, "model")) {
			r = text(v, name, "trainer", k, t->model,
				 sizeof t->model, err);
			if (r == PX_OK && strcmp(t->model, "mlr") &&
			    strcmp(t->model, "mlp") && strcmp(t->model, "mf"))
				r = bad(err, name, "trainer", k, "must be "
					"\"mlr\", \"mlp\" or \"mf\"");
		} else if (!strcmp(k, "rank")) {
			r = whole(v, name, "trainer", k, 1, 1024, &t->rank,
				  err);
		} else if (!strcmp(k, "epochs")) {
			r = whole(v, name, "trainer", k, 1, 1000, &t->epochs,
				  err);
		} else if (!strcmp(k, "target_accuracy")) {
			r = num(v, name, "trainer", k, 0, true, 1,
				&t->target_accuracy, err);
		} else if (!strcmp(k, "batch")) {
			r = whole(v, name, "trainer", k, 1, 65536, &t->batch,
				  err);
		} else if (!strcmp(k, "lr")) {
			r = num(v, name, "trainer", k, 0, true, 10, &t->lr,
				err);
		} else if (!strcmp(k, "workers_per_instance")) {
			r = whole(v, name, "trainer", k, 1, 16,
				  &t->workers_per_instance, err);
		} else if (!strcmp(k, "device")) {
			r = either(v, name, "trainer", k, t->device,
				   sizeof t->device, "cpu", "cuda", err);
		} else if (!strcmp(k, "checkpoint_every")) {
			r = whole(v, name, "trainer", k, 0, 1000000,
				  &t->checkpoint_every, err);
		} else if (!strcmp(k, "checkpoint_budget")) {
			/* a record's fixed part and one parameter at least
			 * (ckpt.h) */
			r = whole(v, name, "trainer", k, 0, 1 << 30,
				  &t->checkpoint_budget, err);
			if (r == PX_OK && t->checkpoint_budget &&
			    t->checkpoint_budget < 104)
				r = bad(err, name, "trainer", k, "0 (every "
					"checkpoint full) or at least 104 bytes");
		} else if (!strcmp(k, "adapt")) {
			if (json_is_boolean(v))
				t->adapt = json_is_true(v);
			else
				r = bad(err, name, "trainer", k, "must be true "
					"or false");
		} else if (!strcmp(k, "data")) {
			r = parse_data(v, name, &t->data, err);
		} else {
			r = bad(err, name, "trainer", k, "unknown field");
		}
		if (r != PX_OK)
			return r;
	}
	return check_mf(name, t, err);
}

/* ---- program: the user's own program (jobreq.h, docs/jobspec.md) ---- */

/* Environment names the program may not set, one table: the node sets
 * the rendezvous and its own variables for every process it starts
 * (docs/programs.md), credentials never go in a job spec, and the
 * loader's variables would change what runs.  PATH and HOME are the
 * user's. */
static const struct {
	const char *name;
	bool prefix;                /* every name that starts so */
	const char *why;
} ENV_RESERVED[] = {
	{"PROTEUS_", true, "the node sets it"},
	{"PX_", true, "the node sets it"},
	{"PET_", true, "torchrun's: the node sets the rendezvous"},
	{"TORCHELASTIC_", true, "torchrun's: the node sets the rendezvous"},
	{"MASTER_ADDR", false, "the node sets the rendezvous"},
	{"MASTER_PORT", false, "the node sets the rendezvous"},
	{"RANK", false, "the node sets the rendezvous"},
	{"LOCAL_RANK", false, "the node sets the rendezvous"},
	{"WORLD_SIZE", false, "the node sets the rendezvous"},
	{"LOCAL_WORLD_SIZE", false, "the node sets the rendezvous"},
	{"GROUP_RANK", false, "the node sets the rendezvous"},
	{"ROLE_RANK", false, "the node sets the rendezvous"},
	{"ROLE_WORLD_SIZE", false, "the node sets the rendezvous"},
	{"NODE_RANK", false, "the node sets the rendezvous"},
	{"AWS_ACCESS_KEY_ID", false, "credentials never go in a job spec"},
	{"AWS_SECRET_ACCESS_KEY", false, "credentials never go in a job "
	 "spec"},
	{"AWS_SESSION_TOKEN", false, "credentials never go in a job spec"},
	{"LD_PRELOAD", false, "the loader's: it would change what runs"},
	{"LD_LIBRARY_PATH", false, "the loader's: it would change what "
	 "runs"},
};

/* Why name k is reserved, or NULL when the program may set it. */
static const char *env_reserved(const char *k)
{
	for (size_t i = 0; i < sizeof ENV_RESERVED / sizeof *ENV_RESERVED;
	     i++) {
		const char *n = ENV_RESERVED[i].name;

		if (ENV_RESERVED[i].prefix ? !strncmp(k, n, strlen(n)) :
					     !strcmp(k, n))
			return ENV_RESERVED[i].why;
	}
	return NULL;
}

/* A shell's name: [A-Za-z_][A-Za-z0-9_]*. */
static bool env_name_ok(const char *k)
{
	if (!k[0] || (k[0] >= '0' && k[0] <= '9'))
		return false;
	for (const char *c = k; *c; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
		      (*c >= '0' && *c <= '9') || *c == '_'))
			return false;
	return true;
}

/* n bytes of s and a NUL onto the packed strings at buf (*used of len
 * taken); false when they do not fit. */
static bool pack(char *buf, size_t len, size_t *used, const char *s,
		 size_t n)
{
	if (n + 1 > len - *used)
		return false;
	memcpy(buf + *used, s, n);
	buf[*used + n] = '\0';
	*used += n + 1;
	return true;
}

/* program.command: ["ARG0", ...], 1..PROGRAM_ARGS_MAX non-empty strings
 * without a NUL (an argv cannot hold one), packed into p->cmd. */
static enum px_err parse_command(json_t *a, const char *name,
				 struct job_program *p, struct px_error *err)
{
	size_t i, used = 0;
	json_t *v;

	if (!json_is_array(a) || !json_array_size(a) ||
	    json_array_size(a) > PROGRAM_ARGS_MAX)
		return px_errorf(err, PX_EINVAL, "%s: program.command: must be "
				 "an array of 1 to %d strings (the program "
				 "and its arguments)", name, PROGRAM_ARGS_MAX);
	json_array_foreach(a, i, v) {
		const char *s = json_string_value(v);
		size_t n = json_string_length(v);

		if (!json_is_string(v) || !n || strlen(s) != n)
			return px_errorf(err, PX_EINVAL, "%s: program.command"
					 "[%zu]: must be a non-empty string "
					 "without a NUL", name, i);
		if (!pack(p->cmd, sizeof p->cmd, &used, s, n))
			return px_errorf(err, PX_EINVAL, "%s: program.command"
					 "[%zu]: the command is over %d bytes "
					 "(each string with its NUL)", name,
					 i, PROGRAM_CMD_BYTES);
	}
	p->argc = (int)json_array_size(a);
	return PX_OK;
}

/* One program.env entry k: v, packed as "K=V" into p->env (*used of it
 * taken). */
static enum px_err env_entry(const char *k, json_t *v, const char *name,
			     struct job_program *p, size_t *used,
			     struct px_error *err)
{
	const char *why = env_reserved(k);
	size_t nk = strlen(k), nv = json_string_length(v);
	char what[128];

	if (!env_name_ok(k) || nk > PROGRAM_ENV_NAME_MAX) {
		snprintf(what, sizeof what, "a name is letters, digits and "
			 "'_', not first a digit, at most %d bytes",
			 PROGRAM_ENV_NAME_MAX);
		return bad(err, name, "program.env", k, what);
	}
	if (why) {
		snprintf(what, sizeof what, "reserved (%s)", why);
		return bad(err, name, "program.env", k, what);
	}
	if (!json_is_string(v) || strlen(json_string_value(v)) != nv)
		return bad(err, name, "program.env", k, "must be a string "
			   "without a NUL");
	if (nk + 1 + nv + 1 > sizeof p->env - *used) {
		snprintf(what, sizeof what, "the environment is over %d bytes "
			 "(each \"K=V\" with its NUL)", PROGRAM_ENV_BYTES);
		return bad(err, name, "program.env", k, what);
	}
	memcpy(p->env + *used, k, nk);
	p->env[*used + nk] = '=';
	memcpy(p->env + *used + nk + 1, json_string_value(v), nv + 1);
	*used += nk + 1 + nv + 1;
	p->nenv++;
	return PX_OK;
}

/* program.env: {"NAME": "VALUE", ...}, at most PROGRAM_ENV_MAX, in the
 * spec's order (jansson keeps it). */
static enum px_err parse_env(json_t *o, const char *name,
			     struct job_program *p, struct px_error *err)
{
	size_t used = 0;
	const char *k;
	json_t *v;
	enum px_err r;

	if (!json_is_object(o))
		return px_errorf(err, PX_EINVAL, "%s: program.env: must be an "
				 "object of names and string values", name);
	if (json_object_size(o) > PROGRAM_ENV_MAX)
		return px_errorf(err, PX_EINVAL, "%s: program.env: %zu "
				 "variables, more than the %d it may have",
				 name, json_object_size(o), PROGRAM_ENV_MAX);
	json_object_foreach(o, k, v) {
		r = env_entry(k, v, name, p, &used, err);
		if (r != PX_OK)
			return r;
	}
	return PX_OK;
}

/* program.nodes: {"min": A, "max": B}, 1 <= A <= B; the job's bound on
 * B is checked once the spec is read (check_program).  nodes_max 0:
 * not given. */
static enum px_err parse_nodes(json_t *o, const char *name,
			       struct job_program *p, struct px_error *err)
{
	const char *k;
	json_t *v;
	enum px_err r;

	if (!json_is_object(o))
		return px_errorf(err, PX_EINVAL, "%s: program.nodes: must be an "
				 "object {\"min\", \"max\"}", name);
	json_object_foreach(o, k, v) {
		if (!strcmp(k, "min"))
			r = whole(v, name, "program.nodes", k, 1, INT_MAX,
				  &p->nodes_min, err);
		else if (!strcmp(k, "max"))
			r = whole(v, name, "program.nodes", k, 1, INT_MAX,
				  &p->nodes_max, err);
		else
			r = bad(err, name, "program.nodes", k, "unknown field");
		if (r != PX_OK)
			return r;
	}
	if (p->nodes_max && p->nodes_min > p->nodes_max) {
		char what[96];

		snprintf(what, sizeof what, "%d is more than max (%d)",
			 p->nodes_min, p->nodes_max);
		return bad(err, name, "program.nodes", "min", what);
	}
	return PX_OK;
}

/* Whether URL u's path (its query and fragment left out) ends in
 * ".tar.gz" or ".tgz". */
static bool is_tarball(const char *u)
{
	size_t n = strcspn(u, "?#");

	return (n >= 7 && !strncmp(u + n - 7, ".tar.gz", 7)) ||
	       (n >= 4 && !strncmp(u + n - 4, ".tgz", 4));
}

/* program.code: an absolute path, or an http://, https:// or s3:// URL
 * of a .tar.gz; "": none. */
static enum px_err parse_code(json_t *v, const char *name,
			      struct job_program *p, struct px_error *err)
{
	enum px_err r = text(v, name, "program", "code", p->code,
			     sizeof p->code, err);

	if (r != PX_OK || !p->code[0] || p->code[0] == '/')
		return r;
	if (!data_is_url(p->code))
		return bad(err, name, "program", "code", "must be an absolute "
			   "path (proteusctl submit makes a relative one "
			   "absolute) or a URL");
	if (strncmp(p->code, "http://", 7) && strncmp(p->code, "https://", 8) &&
	    strncmp(p->code, "s3://", 5))
		return bad(err, name, "program", "code", "a URL must be "
			   "http://, https:// or s3://");
	if (!is_tarball(p->code))
		return bad(err, name, "program", "code", "a URL names a "
			   "tarball: its path ends in .tar.gz or .tgz");
	return PX_OK;
}

/* program.code_sha256: 64 hex digits, kept in lower case (as the cache
 * names files: cloudapi/fetch.h). */
static enum px_err parse_code_sha(json_t *v, const char *name,
				  struct job_program *p, struct px_error *err)
{
	enum px_err r = text(v, name, "program", "code_sha256",
			     p->code_sha256, sizeof p->code_sha256, err);

	if (r != PX_OK)
		return r;
	if (!fetch_sha256_valid(p->code_sha256))
		return bad(err, name, "program", "code_sha256", "must be a "
			   "SHA-256: 64 hex digits");
	for (char *c = p->code_sha256; *c; c++)
		if (*c >= 'A' && *c <= 'F')
			*c = (char)(*c - 'A' + 'a');
	return PX_OK;
}

/* program.checkpoint_store: "" (the head node's job folder) or
 * "s3://BUCKET/PREFIX", the bucket named. */
static enum px_err parse_store(json_t *v, const char *name,
			       struct job_program *p, struct px_error *err)
{
	char *s = p->checkpoint_store;
	enum px_err r = text(v, name, "program", "checkpoint_store", s,
			     sizeof p->checkpoint_store, err);

	if (r == PX_OK && s[0] &&
	    (strncmp(s, "s3://", 5) || !s[5] || s[5] == '/'))
		return bad(err, name, "program", "checkpoint_store", "must be "
			   "\"\" (the head node) or \"s3://BUCKET/PREFIX\"");
	return r;
}

/* One of program's whole-number fields k; false: k is none of them.
 * grace_seconds is never more than the notice allows (its 2 minutes less
 * the node's own margin). */
static bool program_number(const char *k, json_t *v, const char *name,
			   struct job_program *p, enum px_err *r,
			   struct px_error *err)
{
	if (!strcmp(k, "procs_per_node"))
		*r = whole(v, name, "program", k, 1, PROGRAM_PROCS_MAX,
			   &p->procs_per_node, err);
	else if (!strcmp(k, "grace_seconds"))
		*r = whole(v, name, "program", k, 1, PROGRAM_GRACE_DEFAULT_S,
			   &p->grace_seconds, err);
	else if (!strcmp(k, "max_restarts_on_errors"))
		*r = whole(v, name, "program", k, 0, PROGRAM_RESTARTS_MAX,
			   &p->max_restarts_on_errors, err);
	else if (!strcmp(k, "stall_seconds"))
		*r = whole(v, name, "program", k, 0, 604800,
			   &p->stall_seconds, err);
	else if (!strcmp(k, "reform_seconds"))
		*r = whole(v, name, "program", k, 5, 86400,
			   &p->reform_seconds, err);
	else if (!strcmp(k, "checkpoint_keep"))
		*r = whole(v, name, "program", k, 1, PROGRAM_KEEP_MAX,
			   &p->checkpoint_keep, err);
	else if (!strcmp(k, "checkpoint_max_mb"))
		*r = whole64(v, name, "program", k, 1, PROGRAM_CKPT_MB_MAX,
			     &p->checkpoint_max_mb, err);
	else if (!strcmp(k, "samples"))
		*r = whole64(v, name, "program", k, 0, INT64_MAX, &p->samples,
			     err);
	else
		return false;
	if (*r == PX_OK && !strcmp(k, "stall_seconds") &&
	    p->stall_seconds && p->stall_seconds < 10)
		*r = bad(err, name, "program", k, "0 (none) or 10 to 604800");
	return true;
}

/* program.membership: how the group changes (docs/programs.md,
 * "Membership"). */
static enum px_err parse_membership(json_t *v, const char *name,
				    struct job_program *p,
				    struct px_error *err)
{
	enum px_err r = text(v, name, "program", "membership", p->membership,
			     sizeof p->membership, err);

	if (r == PX_OK && strcmp(p->membership, "auto") &&
	    strcmp(p->membership, "elastic") && strcmp(p->membership, "fixed"))
		r = bad(err, name, "program", "membership", "must be "
			"\"auto\", \"elastic\" or \"fixed\"");
	return r;
}

static enum px_err parse_program(json_t *o, const char *name,
				 struct job_program *p, struct px_error *err)
{
	const char *k;
	json_t *v;
	enum px_err r = PX_OK;

	*p = (struct job_program){.on = true, .nodes_min = 1,
				  .membership = "auto",
				  .procs_per_node = 1,
				  .grace_seconds = PROGRAM_GRACE_DEFAULT_S,
				  .reform_seconds = PROGRAM_REFORM_DEFAULT_S,
				  .checkpoint_keep = PROGRAM_KEEP_DEFAULT,
				  .checkpoint_max_mb = PROGRAM_CKPT_MB_DEFAULT};
	if (!json_is_object(o))
		return px_errorf(err, PX_EINVAL, "%s: program: must be an "
				 "object", name);
	json_object_foreach(o, k, v) {
		if (!strcmp(k, "command"))
			r = parse_command(v, name, p, err);
		else if (!strcmp(k, "code"))
			r = parse_code(v, name, p, err);
		else if (!strcmp(k, "code_sha256"))
			r = parse_code_sha(v, name, p, err);
		else if (!strcmp(k, "env"))
			r = parse_env(v, name, p, err);
		else if (!strcmp(k, "nodes"))
			r = parse_nodes(v, name, p, err);
		else if (!strcmp(k, "checkpoint_store"))
			r = parse_store(v, name, p, err);
		else if (!strcmp(k, "membership"))
			r = parse_membership(v, name, p, err);
		else if (!program_number(k, v, name, p, &r, err))
			r = bad(err, name, "program", k, "unknown field");
		if (r != PX_OK)
			return r;
	}
	if (!p->argc)
		return bad(err, name, "program", "command", "missing (the "
			   "program and its arguments, e.g. [\"python3\", "
			   "\"train.py\"])");
	if (p->code_sha256[0] && !p->code[0])
		return bad(err, name, "program", "code_sha256", "only with "
			   "code (the SHA-256 is the code's)");
	if (data_is_url(p->code) && !p->code_sha256[0])
		return bad(err, name, "program", "code_sha256", "missing (code "
			   "named by URL is checked by its SHA-256)");
	return PX_OK;
}

/* program.nodes against the job's fleet, once the spec is read: at most
 * reliable.count + spot.max_instances, which max is when not given. */
static enum px_err check_program(struct job_request *ret, const char *name,
				 struct px_error *err)
{
	struct job_program *p = &ret->program;
	int most = ret->spec.reliable.count + ret->spec.spot.max_instances;
	bool given = p->nodes_max > 0;
	int n;
	char what[160];

	if (!p->on)
		return PX_OK;
	if (!given)
		p->nodes_max = most;
	n = given ? p->nodes_max : p->nodes_min;
	if (n <= most)
		return PX_OK;
	snprintf(what, sizeof what, "%d is more than the job's %d nodes at "
		 "most (reliable.count + spot.max_instances)", n, most);
	return bad(err, name, "program.nodes", given ? "max" : "min", what);
}

/* world.name: a world the registry has that runs the daemon's jobs. */
static enum px_err world_name(const char *buf, const char *name,
			      struct job_world *w, struct px_error *err)
{
	const struct world_ops *o = world_ops_by_name(buf);
	char names[128], what[160];

	if (o && o->create) {
		snprintf(w->name, sizeof w->name, "%s", o->name);
		return PX_OK;
	}
	world_daemon_names(names, sizeof names, "\"", " or ");
	snprintf(what, sizeof what, "must be %s", names);
	return bad(err, name, "world", "name", what);
}

static enum px_err parse_world(json_t *o, const char *name,
			       struct job_world *w, struct px_error *err)
{
	const struct world_ops *o2;
	const char *k;
	json_t *v;
	enum px_err r = PX_OK;
	char buf[64];

	memset(w, 0, sizeof *w);
	if (!o)
		return PX_OK;
	if (json_is_string(o)) {           /* "world": "local" */
		json_t *tmp = json_pack("{s:O}", "name", o);

		r = tmp ? parse_world(tmp, name, w, err) :
			  px_errorf(err, PX_ENOMEM, "out of memory");
		json_decref(tmp);
		return r;
	}
	if (!json_is_object(o))
		return px_errorf(err, PX_EINVAL, "%s: world: must be a name or "
				 "an object", name);
	json_object_foreach(o, k, v) {
		if (!strcmp(k, "name")) {
			w->named = true;
			r = text(v, name, "world", k, buf, sizeof buf, err);
			if (r == PX_OK)
				r = world_name(buf, name, w, err);
		} else if (!strcmp(k, "speedup")) {
			r = num(v, name, "world", k, 1, false,
				JOBREQ_SPEEDUP_MAX, &w->speedup, err);
		} else if (!strcmp(k, "start")) {
			r = text(v, name, "world", k, buf, sizeof buf, err);
			if (r == PX_OK && px_parse_time(buf, strlen(buf),
							&w->start_s) != PX_OK)
				r = bad(err, name, "world", k, "must be a "
					"time like 2016-03-01 or "
					"2016-03-01T12:00:00Z");
		} else if (!strcmp(k, "billing")) {
			r = text(v, name, "world", k, buf, sizeof buf, err);
			if (r == PX_OK) {
				struct px_error e2;

				if (billing_model_parse(buf, &w->billing,
							&e2) != PX_OK)
					r = bad(err, name, "world", k, e2.msg);
				w->have_billing = true;
			}
		} else if (!strcmp(k, "trace")) {
			r = text(v, name, "world", k, w->trace,
				 sizeof w->trace, err);
		} else if (!strcmp(k, "ondemand_prices")) {
			r = text(v, name, "world", k, w->ondemand,
				 sizeof w->ondemand, err);
		} else if (!strcmp(k, "rebalance")) {
			r = text(v, name, "world", k, buf, sizeof buf, err);
			if (r == PX_OK && (!strcmp(buf, "leave") ||
					   !strcmp(buf, "ignore")))
				w->rebalance_leave = !strcmp(buf, "leave");
			else if (r == PX_OK)
				r = bad(err, name, "world", k, "must be "
					"\"ignore\" or \"leave\"");
		} else {
			r = bad(err, name, "world", k, "unknown field");
		}
		if (r != PX_OK)
			return r;
	}
	/* the rules of the world it names are the world's (world.h) */
	o2 = w->named ? world_ops_by_name(w->name) : NULL;
	if (o2 && o2->spec_check)
		return o2->spec_check(w, name, err);
	return PX_OK;
}

/* "workload": one of the workloads proteusd knows; default trainer.  A
 * program section implies "program" and a program needs its section:
 * the name is the section's, known without the registry (the workload
 * that runs it registers as any other, workload.c). */
static enum px_err parse_workload(json_t *v, bool program, const char *name,
				  char *buf, size_t len, struct px_error *err)
{
	const char *s = json_string_value(v);
	char known[256], safe[PX_TERM_SAFE_LEN(64)];

	snprintf(buf, len, "%s", program ? "program" : workload_trainer.name);
	if (!v)
		return PX_OK;
	if (!json_is_string(v))
		return px_errorf(err, PX_EINVAL, "%s: workload: must be a "
				 "string", name);
	px_term_safe(s, safe, sizeof safe);
	if (program && strcmp(s, "program"))
		return px_errorf(err, PX_EINVAL, "%s: workload: '%s', but a "
				 "program section implies workload "
				 "\"program\"", name, safe);
	if (program)
		return PX_OK;
	if (!strcmp(s, "program"))
		return px_errorf(err, PX_EINVAL, "%s: program: needed with "
				 "workload \"program\" (the command the "
				 "nodes run)", name);
	if (!workload_of(s)) {
		workload_names(known, sizeof known);
		return px_errorf(err, PX_EINVAL, "%s: workload: unknown "
				 "workload '%s' (known: %s)", name, safe,
				 known);
	}
	snprintf(buf, len, "%s", s);
	return PX_OK;
}

/* What runs on the nodes: the workload and its section, the trainer's or
 * the program's, one or the other.  With a program the trainer keeps
 * the defaults parse_trainer(NULL) gives, unused. */
static enum px_err parse_work(json_t *wl, json_t *tr, json_t *pg,
			      const char *name, struct job_request *ret,
			      struct px_error *err)
{
	enum px_err r;

	if (tr && pg)
		return px_errorf(err, PX_EINVAL, "%s: program, trainer: one or "
				 "the other (a program is a workload of its "
				 "own, the trainer the built-in one)", name);
	r = parse_workload(wl, pg != NULL, name, ret->workload,
			   sizeof ret->workload, err);
	if (r == PX_OK)
		r = parse_trainer(tr, name, &ret->trainer, err);
	if (r == PX_OK && pg)
		r = parse_program(pg, name, &ret->program, err);
	return r;
}

/* "policy": one of the policies simulate knows; default bidbrain. */
static enum px_err parse_policy(json_t *v, const char *name, char *buf,
				size_t len, struct px_error *err)
{
	const struct policy_ops *p;
	struct px_error e2 = {0};

	snprintf(buf, len, "bidbrain");
	if (!v)
		return PX_OK;
	if (!json_is_string(v))
		return px_errorf(err, PX_EINVAL, "%s: policy: must be a "
				 "string", name);
	if (json_string_length(v) >= len)
		return px_errorf(err, PX_EINVAL, "%s: policy: at most %zu "
				 "bytes (this one has %zu)", name, len - 1,
				 json_string_length(v));
	if (px_ctrl_at(json_string_value(v), json_string_length(v)) >= 0)
		return px_errorf(err, PX_EINVAL, "%s: policy: has a control "
				 "character", name);
	if (policy_lookup(json_string_value(v), &p, &e2) != PX_OK)
		return px_errorf(err, PX_EINVAL, "%s: policy: %s", name,
				 e2.msg[0] ? e2.msg : "unknown policy");
	snprintf(buf, len, "%s", json_string_value(v));
	return PX_OK;
}

/* "notify_url": an http(s) URL without a user or password (the job's
 * events go there as JSON: agent/notify.h). */
static enum px_err parse_notify(json_t *v, const char *name, char *buf,
				size_t len, struct px_error *err)
{
	char why[256];

	buf[0] = 0;
	if (!v)
		return PX_OK;
	if (!json_is_string(v))
		return px_errorf(err, PX_EINVAL, "%s: notify_url: must be a "
				 "string", name);
	if (json_string_length(v) >= len)
		return px_errorf(err, PX_EINVAL, "%s: notify_url: at most %zu "
				 "bytes (this one has %zu)", name, len - 1,
				 json_string_length(v));
	if (strlen(json_string_value(v)) != json_string_length(v) ||
	    !config_url_check(json_string_value(v), why, sizeof why))
		return px_errorf(err, PX_EINVAL, "%s: notify_url: %s", name,
				 strlen(json_string_value(v)) !=
				 json_string_length(v) ? "has a NUL byte" :
				 why);
	snprintf(buf, len, "%s", json_string_value(v));
	return PX_OK;
}

/* "scaling_explore": true, false or {"start", "growth"} (docs/jobspec.md);
 * on by default where it can help: the measured scaling in use and a
 * policy that plans with it (BidBrain). */
static enum px_err parse_explore(json_t *o, const char *name,
				 struct job_request *ret, struct px_error *err)
{
	bool can = ret->scaling_measured && !strcmp(ret->policy, "bidbrain");
	const char *k;
	json_t *v;
	enum px_err r = PX_OK;

	ret->explore.on = can;
	ret->explore.start = JOBREQ_EXPLORE_START;
	ret->explore.growth = JOBREQ_EXPLORE_GROWTH;
	if (!o)
		return PX_OK;
	if (json_is_false(o)) {
		ret->explore.on = false;
		return PX_OK;
	}
	if (!json_is_true(o) && !json_is_object(o))
		return px_errorf(err, PX_EINVAL, "%s: scaling_explore: must be "
				 "true, false or an object {\"start\", "
				 "\"growth\"}", name);
	if (!ret->scaling_measured)
		return px_errorf(err, PX_EINVAL, "%s: scaling_explore: needs "
				 "the measured scaling, and scaling_measured "
				 "is false (the exploration is for it)", name);
	if (!can)
		return px_errorf(err, PX_EINVAL, "%s: scaling_explore: policy "
				 "'%s' does not plan with the measured "
				 "scaling; only bidbrain does", name,
				 ret->policy);
	json_object_foreach(o, k, v) {
		if (!strcmp(k, "start"))
			r = whole(v, name, "scaling_explore", k, 1,
				  JOBSPEC_MEASURED_MAX, &ret->explore.start,
				  err);
		else if (!strcmp(k, "growth"))
			r = num(v, name, "scaling_explore", k,
				JOBREQ_GROWTH_MIN, false, JOBREQ_GROWTH_MAX,
				&ret->explore.growth, err);
		else if (k[0] != '_')
			r = bad(err, name, "scaling_explore", k,
				"unknown field");
		if (r != PX_OK)
			return r;
	}
	return PX_OK;
}

/* Top-level fields whose name starts with '_' are comments (jobspec_parse
 * skips them): out of the spec before it is measured.  A name no field
 * has (too long, or with a control character) is refused here, shown
 * safely (jobspec_parse would print it whole). */
static enum px_err drop_comments(json_t *root, const char *name,
				 struct px_error *err)
{
	char shown_k[PX_TERM_SAFE_LEN(KEY_SHOWN) + 3];
	const char *k;
	json_t *v;
	void *tmp;

	json_object_foreach_safe(root, tmp, k, v) {
		if (k[0] == '_')
			json_object_del(root, k);
		else if (strlen(k) > KEY_SHOWN || px_ctrl_at(k, strlen(k)) >= 0)
			return px_errorf(err, PX_EINVAL, "%s: %s: unknown "
					 "field", name,
					 shown(k, shown_k, sizeof shown_k));
	}
	return PX_OK;
}

/* The spec, compact, is over JOBSPEC_FILE_MAX: name its largest field
 * (the one to cut), with the sizes. */
static enum px_err too_big(json_t *root, size_t n, const char *name,
			   struct px_error *err)
{
	char shown_k[PX_TERM_SAFE_LEN(KEY_SHOWN) + 3] = "?";
	size_t most = 0, m;
	const char *k;
	json_t *v;
	char *s;

	json_object_foreach(root, k, v) {
		s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
		m = s ? strlen(s) : 0;
		free(s);
		if (m > most) {
			most = m;
			shown(k, shown_k, sizeof shown_k);
		}
	}
	return px_errorf(err, PX_ETOOBIG, "%s: %s: %zu bytes once written as "
			 "compact JSON (numbers in up to 17 digits, a "
			 "scaling_profile file inlined), which makes the job "
			 "spec %zu, more than the %d it may have", name,
			 shown_k, most, n, JOBSPEC_FILE_MAX);
}

/* What a submitted spec holds that simulate's need not: the daemon reads
 * no file a job names by a relative path (whose folder would it be?),
 * and keeps no profile outside the job: proteusctl submit inlines the
 * profile and makes paths absolute.  A program's nodes fit the fleet. */
static enum px_err check_submitted(struct job_request *ret,
				   const char *name, struct px_error *err)
{
	if (ret->spec.profile_path[0])
		return px_errorf(err, PX_EINVAL, "%s: scaling_profile: a file "
				 "name ('%s') is for simulate; a submitted "
				 "job carries the profile itself (proteusctl "
				 "submit inlines the file)", name,
				 ret->spec.profile_path);
	if (ret->spec.spot_advisor[0] && ret->spec.spot_advisor[0] != '/')
		return px_errorf(err, PX_EINVAL, "%s: spot_advisor: '%s' must "
				 "be an absolute path here (proteusctl submit "
				 "makes it one)", name,
				 ret->spec.spot_advisor);
	return check_program(ret, name, err);
}

/* "weight": a number above 0 and at most JOBREQ_WEIGHT_MAX; 1 when
 * absent. */
static enum px_err parse_weight(json_t *v, const char *name, double *ret,
				struct px_error *err)
{
	double w = json_number_value(v);

	*ret = 1;
	if (!v)
		return PX_OK;
	if (!json_is_number(v) || !(w > 0) || w > JOBREQ_WEIGHT_MAX)
		return px_errorf(err, PX_EINVAL, "%s: weight: must be a number "
				 "above 0 and at most %g (the job's share of "
				 "the pool scales with it)", name,
				 JOBREQ_WEIGHT_MAX);
	*ret = w;
	return PX_OK;
}

enum px_err jobreq_parse(const char *buf, size_t len, const char *name,
			 struct job_request *ret, struct px_error *err)
{
	json_error_t je;
	json_t *root, *tr, *wo, *po, *nu, *sm, *ex, *wl, *pg, *wt;
	char *rest = NULL;
	enum px_err r;

	if (len > JOBREQ_SENT_MAX)
		return px_errorf(err, PX_ETOOBIG, "%s: %zu bytes, more than "
				 "the %d a submitted job may have", name, len,
				 JOBREQ_SENT_MAX);
	root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);
	if (!root)
		return px_errorf(err, PX_EINVAL, "%s:%d:%d: %s", name,
				 je.line, je.column, je.text);
	if (!json_is_object(root)) {
		json_decref(root);
		return px_errorf(err, PX_EINVAL, "%s: a job is a JSON object",
				 name);
	}
	memset(ret, 0, sizeof *ret);
	tr = json_incref(json_object_get(root, "trainer"));
	wo = json_incref(json_object_get(root, "world"));
	po = json_incref(json_object_get(root, "policy"));
	nu = json_incref(json_object_get(root, "notify_url"));
	sm = json_incref(json_object_get(root, "scaling_measured"));
	ex = json_incref(json_object_get(root, "scaling_explore"));
	wl = json_incref(json_object_get(root, "workload"));
	pg = json_incref(json_object_get(root, "program"));
	wt = json_incref(json_object_get(root, "weight"));
	json_object_del(root, "weight");
	json_object_del(root, "workload");
	json_object_del(root, "program");
	json_object_del(root, "notify_url");
	json_object_del(root, "scaling_measured");
	json_object_del(root, "scaling_explore");
	json_object_del(root, "trainer");
	json_object_del(root, "world");
	json_object_del(root, "policy");
	r = drop_comments(root, name, err);
	if (r == PX_OK)
		r = parse_policy(po, name, ret->policy, sizeof ret->policy,
				 err);
	if (r == PX_OK)
		r = parse_notify(nu, name, ret->notify_url,
				 sizeof ret->notify_url, err);
	ret->scaling_measured = !sm || json_is_true(sm);
	if (r == PX_OK && sm && !json_is_boolean(sm))
		r = px_errorf(err, PX_EINVAL, "%s: scaling_measured: must be "
			      "true or false", name);
	if (r == PX_OK)
		r = parse_weight(wt, name, &ret->weight, err);
	if (r == PX_OK)
		r = parse_explore(ex, name, ret, err);
	if (r == PX_OK)
		r = parse_work(wl, tr, pg, name, ret, err);
	if (r == PX_OK)
		r = parse_world(wo, name, &ret->world, err);
	if (r == PX_OK) {
		/* the rest is simulate's job spec, with its own checks */
		rest = json_dumps(root, JSON_COMPACT);
		r = !rest ? px_errorf(err, PX_ENOMEM, "out of memory") :
		    strlen(rest) > JOBSPEC_FILE_MAX ?
			    too_big(root, strlen(rest), name, err) :
			    jobspec_parse(rest, strlen(rest), name, &ret->spec,
					  err);
	}
	if (r == PX_OK)
		r = check_submitted(ret, name, err);
	free(rest);
	json_decref(tr);
	json_decref(wo);
	json_decref(po);
	json_decref(nu);
	json_decref(sm);
	json_decref(ex);
	json_decref(wl);
	json_decref(pg);
	json_decref(wt);
	json_decref(root);
	return r;
}
