/* enroll_srv.c -- proteusd's enrollment endpoint (enroll_srv.h). */
#include <errno.h>
#include <inttypes.h>
#include <nanomsg/nn.h>
#include <nanomsg/reqrep.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/log.h"
#include "../loop.h"
#include "enroll_srv.h"

#define BATCH 32   /* requests handled per wake-up: the loop has others */

struct enroll_srv {
	struct loop *l;
	int sock, fd;
	struct enroll_cert *cert;
	char region[64];
	struct enroll_owner o;
	uint64_t n_ok, n_refused;
	uint64_t n_later;        /* told to ask again */
};

void enroll_srv_counts(const struct enroll_srv *s, uint64_t *ret_ok,
		       uint64_t *ret_refused)
{
	*ret_ok = s ? s->n_ok : 0;
	*ret_refused = s ? s->n_refused : 0;
}

/* A refusal: counted, logged (the first ones, then one in
 * ENROLL_LOG_EVERY: a flood must not flood the log), told to the owner
 * when the request was the job's, and answered.  One the node is told to
 * ask again (retry: the daemon does not know the instance yet) is no
 * refusal: only counted apart and logged at info. */
static char *refuse(struct enroll_srv *s, int64_t job, bool opened,
		    const char *instance, const char *why, bool retry,
		    size_t *ret_len)
{
	char safe[PX_TERM_SAFE_LEN(64)];

	if (retry) {
		if (s->n_later++ < ENROLL_LOG_FIRST)
			log_info("enroll: job %" PRId64 ": %s: asked to try "
				 "again", job, why);
		return enroll_refusal_make(why, retry, ret_len);
	}
	s->n_refused++;
	if (s->n_refused <= ENROLL_LOG_FIRST ||
	    s->n_refused % ENROLL_LOG_EVERY == 0)
		log_warn("enroll: refused (job %" PRId64 ", instance %s): %s "
			 "[%" PRIu64 " refused so far]", job,
			 instance[0] ? px_term_safe(instance, safe,
						    sizeof safe) : "unknown",
			 why, s->n_refused);
	if (opened && s->o.refused)
		s->o.refused(s->o.ctx, job, instance, why);
	return enroll_refusal_make(why, retry, ret_len);
}

/* The answer to the request msg[len] (malloc'd). */
static char *answer(struct enroll_srv *s, const char *msg, size_t len,
		    size_t *ret_len)
{
	uint8_t key[ENROLL_KEY_LEN];
	struct enroll_request r = {0};
	struct enroll_identity id = {0};
	struct px_error err = {0};
	char why[ENROLL_WHY_MAX] = "", *out = NULL;
	int64_t job = 0;
	bool retry = false;

	if (enroll_request_job(msg, len, &job, &err) != PX_OK)
		return refuse(s, 0, false, "", err.msg, false, ret_len);
	if (!s->o.key_of(s->o.ctx, job, key))
		/* a job between two lives of the daemon comes back */
		return refuse(s, job, false, "", "no such ec2 job runs here "
			      "now", true, ret_len);
	if (enroll_request_open(msg, len, key, &r, &err) != PX_OK) {
		out = refuse(s, job, false, "", err.msg, false, ret_len);
	} else if (enroll_identity_verify(s->cert, r.sig_b64, &id, &err)
		   != PX_OK) {
		out = refuse(s, job, true, "", err.msg, false, ret_len);
	} else if (strcmp(id.region, s->region)) {
		snprintf(why, sizeof why, "the identity document is of "
			 "region %s, this daemon's is %s", id.region,
			 s->region);
		out = refuse(s, job, true, id.instance_id, why, false,
			     ret_len);
	} else if (s->o.admit(s->o.ctx, &r, &id, why, sizeof why, &retry)
		   != PX_OK) {
		out = refuse(s, job, true, id.instance_id, why, retry,
			     ret_len);
	} else if (enroll_reply_make(&r, key, &out, ret_len, &err) != PX_OK) {
		out = NULL;
		log_err("enroll: %s", err.msg);
	} else {
		s->n_ok++;
		log_info("enroll: job %" PRId64 ": instance %s enrolled", job,
			 id.instance_id);
	}
	enroll_request_clear(&r);
	OPENSSL_cleanse(key, sizeof key);
	return out;
}

static void readable(struct loop *l, int fd, int mask, void *ctx)
{
	struct enroll_srv *s = ctx;

	(void)l;
	(void)fd;
	(void)mask;
	for (int k = 0; k < BATCH; k++) {
		void *buf = NULL;
		int n = nn_recv(s->sock, &buf, NN_MSG, NN_DONTWAIT);
		size_t rn = 0;
		char *reply;

		if (n < 0)
			return;   /* EAGAIN, or too big (dropped by nanomsg) */
		reply = answer(s, buf, (size_t)n, &rn);
		nn_freemsg(buf);
		if (reply && nn_send(s->sock, reply, rn, NN_DONTWAIT) < 0)
			log_warn("enroll: a reply was not sent: %s",
				 nn_strerror(nn_errno()));
		free(reply);
	}
}

enum px_err enroll_srv_new(struct loop *l, const char *url,
			   const char *cert_path, const char *region,
			   const struct enroll_owner *o,
			   struct enroll_srv **ret, struct px_error *err)
{
	struct enroll_srv *s = calloc(1, sizeof *s);
	int max = ENROLL_MSG_MAX, zero = 0;
	size_t sz = sizeof s->fd;
	enum px_err e;

	if (!s)
		return px_errorf(err, PX_ENOMEM, "out of memory");
	s->l = l;
	s->o = *o;
	s->fd = -1;
	snprintf(s->region, sizeof s->region, "%s", region);
	e = enroll_cert_load(cert_path, &s->cert, err);
	if (e != PX_OK) {
		px_error_prefix(err, "ec2_identity_cert: ");
		free(s);
		return e;
	}
	s->sock = nn_socket(AF_SP, NN_REP);
	if (s->sock < 0 ||
	    nn_setsockopt(s->sock, NN_SOL_SOCKET, NN_RCVMAXSIZE, &max,
			  sizeof max) < 0 ||
	    nn_setsockopt(s->sock, NN_SOL_SOCKET, NN_LINGER, &zero,
			  sizeof zero) < 0 ||
	    nn_bind(s->sock, url) < 0 ||
	    nn_getsockopt(s->sock, NN_SOL_SOCKET, NN_RCVFD, &s->fd, &sz) < 0) {
		e = px_errorf(err, PX_EIO, "enrollment endpoint %s: %s", url,
			      nn_strerror(nn_errno()));
		enroll_srv_free(s);
		return e;
	}
	e = loop_fd_add(l, s->fd, LOOP_READABLE, readable, s);
	if (e != PX_OK) {
		px_errorf(err, e, "enrollment endpoint: the loop refused its "
			  "descriptor");
		s->fd = -1;
		enroll_srv_free(s);
		return e;
	}
	log_notice("enroll: nodes enroll at %s", url);
	*ret = s;
	return PX_OK;
}

void enroll_srv_free(struct enroll_srv *s)
{
	if (!s)
		return;
	if (s->fd >= 0)
		loop_fd_del(s->l, s->fd);
	if (s->sock >= 0)
		nn_close(s->sock);
	enroll_cert_free(s->cert);
	free(s);
}
