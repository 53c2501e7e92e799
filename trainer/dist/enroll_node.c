/* enroll_node.c -- a node's enrollment (enroll_node.h). */
#include "enroll_node.h"

#include <errno.h>
#include <inttypes.h>
#include <nanomsg/nn.h>
#include <nanomsg/reqrep.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../../cloudapi/imds.h"
#include "../../common/enroll.h"
#include "../../common/keyfile.h"
#include "../../common/log.h"
#include "dist.h"

#define IMDS_SIG "/latest/dynamic/instance-identity/rsa2048"
#define IMDS_TRIES 30         /* the metadata service at boot */
#define RETRY_MS 2000         /* between two requests */

bool enroll_node_wanted(void)
{
	return getenv(ENROLL_ENV_ADDR) && !getenv(DIST_KEY_ENV) &&
	       !getenv(DIST_KEY_FILE_ENV);
}

static void sleep_ms(int64_t ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* The key file's path: o's, else $STATE_DIRECTORY/job-N.key, else
 * $HOME/.proteus/job-N.key (the folder made, 0700). */
static enum px_err key_path(const struct enroll_node_opts *o, int64_t job,
			    char *buf, size_t len, struct px_error *err)
{
	const char *sd = getenv("STATE_DIRECTORY"), *home = getenv("HOME");
	char dir[4096];
	int n;

	if (o->key_path) {
		n = snprintf(buf, len, "%s", o->key_path);
		return n > 0 && (size_t)n < len ? PX_OK :
		       px_errorf(err, PX_ETOOBIG, "the key file's path is too "
				 "long");
	}
	/* systemd's StateDirectory= may list several, colon-separated */
	if (sd && *sd)
		n = snprintf(dir, sizeof dir, "%.*s", (int)strcspn(sd, ":"),
			     sd);
	else if (home && *home)
		n = snprintf(dir, sizeof dir, "%s/.proteus", home);
	else
		return px_errorf(err, PX_EINVAL, "no place for the job's key: "
				 "neither $STATE_DIRECTORY nor $HOME is set");
	if (n <= 0 || (size_t)n >= sizeof dir)
		return px_errorf(err, PX_ETOOBIG, "the key's folder's path is "
				 "too long");
	if (mkdir(dir, 0700) != 0 && errno != EEXIST)
		return px_errorf(err, PX_ESYS | errno, "mkdir %s: %s", dir,
				 strerror(errno));
	n = snprintf(buf, len, "%s/job-%" PRId64 ".key", dir, job);
	return n > 0 && (size_t)n < len ? PX_OK :
	       px_errorf(err, PX_ETOOBIG, "the key file's path is too long");
}

/* The instance's PKCS#7 signature of its identity document. */
static enum px_err identity_sig(const struct enroll_node_opts *o,
				char **ret, struct px_error *err)
{
	struct imds_client *c = NULL;
	size_t n = 0;
	enum px_err e;

	if (o->sig_file)
		return px_read_file(o->sig_file, ENROLL_SIG_MAX, ret, &n, err);
	e = imds_client_new(NULL, 0, &c, err);
	for (int k = 0; e == PX_OK && k < IMDS_TRIES; k++) {
		e = imds_get(c, IMDS_SIG, ret, &n, err);
		if (e == PX_OK || e == PX_ENOENT || o->once ||
		    k + 1 == IMDS_TRIES)
			break;
		sleep_ms(RETRY_MS);
		e = PX_OK;
	}
	imds_client_free(c);
	if (e != PX_OK)
		px_error_prefix(err, "the instance identity signature: ");
	return e;
}

/* One exchange on sock: msg out, the reply in (nn_freemsg). */
static int exchange(int sock, const char *msg, size_t len, void **ret)
{
	if (nn_send(sock, msg, len, 0) < 0)
		return -1;
	return nn_recv(sock, ret, NN_MSG, 0);
}

/* Ask the daemon at addr until it answers, refuses for good, or the
 * time is out. */
static enum px_err ask(const struct enroll_node_opts *o, const char *addr,
		       const struct enroll_pending *st, const char *msg,
		       size_t len, uint8_t key[ENROLL_KEY_LEN],
		       struct px_error *err)
{
	int64_t wait = o->wait_ms > 0 ? o->wait_ms : ENROLL_WAIT_MS;
	uint64_t until = px_now_mono_us() + (uint64_t)wait * 1000;
	int sock = nn_socket(AF_SP, NN_REQ);
	int tmo = ENROLL_TRY_MS, max = ENROLL_MSG_MAX;
	enum px_err e = PX_ETIMEDOUT;
	bool retry = true;
	unsigned tries = 0;

	if (sock < 0 ||
	    nn_setsockopt(sock, NN_SOL_SOCKET, NN_RCVTIMEO, &tmo,
			  sizeof tmo) < 0 ||
	    nn_setsockopt(sock, NN_SOL_SOCKET, NN_SNDTIMEO, &tmo,
			  sizeof tmo) < 0 ||
	    nn_setsockopt(sock, NN_REQ, NN_REQ_RESEND_IVL, &tmo,
			  sizeof tmo) < 0 ||
	    nn_setsockopt(sock, NN_SOL_SOCKET, NN_RCVMAXSIZE, &max,
			  sizeof max) < 0 ||
	    nn_connect(sock, addr) < 0) {
		e = px_errorf(err, PX_EIO, "enrollment at %s: %s", addr,
			      nn_strerror(nn_errno()));
		if (sock >= 0)
			nn_close(sock);
		return e;
	}
	px_errorf(err, PX_ETIMEDOUT, "enrollment at %s: no answer", addr);
	while (retry) {
		void *buf = NULL;
		int n = exchange(sock, msg, len, &buf);

		tries++;
		if (n >= 0) {
			e = enroll_reply_open(st, buf, (size_t)n, key, &retry,
					      err);
			nn_freemsg(buf);
			if (e == PX_OK || e == PX_EPROTO)
				break;
			log_warn("%s%s", err->msg, retry && !o->once ?
				 " (asking again)" : "");
		} else {
			e = px_errorf(err, PX_ETIMEDOUT, "enrollment at %s: no "
				      "answer in %d ms (%s)", addr, tmo,
				      nn_strerror(nn_errno()));
			if (tries == 1 || tries % 10 == 0)
				log_warn("%s; asking again", err->msg);
		}
		if (o->once || px_now_mono_us() >= until)
			break;
		if (n >= 0)
			sleep_ms(RETRY_MS);
	}
	nn_close(sock);
	return e;
}

/* The PX_ENROLL_* of the environment, checked. */
static enum px_err enroll_env(int64_t *job, uint8_t pub[ENROLL_PUB_LEN],
			      uint8_t ticket[ENROLL_TICKET_LEN],
			      const char **addr, struct px_error *err)
{
	const char *j = getenv(ENROLL_ENV_JOB);
	char *end = NULL;

	*addr = getenv(ENROLL_ENV_ADDR);
	if (!*addr || strncmp(*addr, "tcp://", 6))
		return px_errorf(err, PX_EINVAL, "%s: a tcp:// address "
				 "expected", ENROLL_ENV_ADDR);
	errno = 0;
	*job = j ? strtoll(j, &end, 10) : 0;
	if (!j || errno || *end || *job <= 0)
		return px_errorf(err, PX_EINVAL, "%s: a job number expected",
				 ENROLL_ENV_JOB);
	if (!enroll_unhex(getenv(ENROLL_ENV_PUB), pub, ENROLL_PUB_LEN))
		return px_errorf(err, PX_EINVAL, "%s: 64 hex digits expected",
				 ENROLL_ENV_PUB);
	if (!enroll_unhex(getenv(ENROLL_ENV_TICKET), ticket,
			  ENROLL_TICKET_LEN))
		return px_errorf(err, PX_EINVAL, "%s: 64 hex digits expected",
				 ENROLL_ENV_TICKET);
	return PX_OK;
}

static void env_clear(void)
{
	char *t = getenv(ENROLL_ENV_TICKET);

	if (t)
		OPENSSL_cleanse(t, strlen(t));
	unsetenv(ENROLL_ENV_TICKET);
	unsetenv(ENROLL_ENV_ADDR);
	unsetenv(ENROLL_ENV_JOB);
	unsetenv(ENROLL_ENV_PUB);
}

enum px_err enroll_node(const struct enroll_node_opts *o, char *ret_path,
			size_t len, struct px_error *err)
{
	uint8_t pub[ENROLL_PUB_LEN], ticket[ENROLL_TICKET_LEN];
	uint8_t key[ENROLL_KEY_LEN];
	struct enroll_pending st;
	const char *addr = NULL;
	char *sig = NULL, *msg = NULL;
	size_t mlen = 0;
	int64_t job = 0;
	enum px_err e;

	e = enroll_env(&job, pub, ticket, &addr, err);
	if (e == PX_OK)
		e = key_path(o, job, ret_path, len, err);
	if (e != PX_OK)
		goto out;
	/* enrolled before on this instance (the node started again) */
	e = px_keyfile_read(ret_path, false, key, err);
	if (e == PX_OK) {
		log_notice("enroll: the job's key from %s (enrolled before)",
			   ret_path);
		goto have;
	}
	if (e != PX_ENOENT)
		goto out;
	e = identity_sig(o, &sig, err);
	if (e == PX_OK)
		e = enroll_request_make(job, pub, sig, ticket, &st, &msg,
					&mlen, err);
	if (e == PX_OK)
		e = ask(o, addr, &st, msg, mlen, key, err);
	if (e == PX_OK) {
		e = px_keyfile_write(ret_path, key, err);
		if (e == PX_EEXIST)   /* another node here was first */
			e = px_keyfile_read(ret_path, false, key, err);
	}
	if (e != PX_OK)
		goto out;
	log_notice("enroll: job %" PRId64 ": enrolled at %s", job, addr);
have:
	if (setenv(DIST_KEY_FILE_ENV, ret_path, 1) != 0)
		e = px_errorf(err, PX_ENOMEM, "setenv");
out:
	env_clear();
	OPENSSL_cleanse(key, sizeof key);
	OPENSSL_cleanse(ticket, sizeof ticket);
	OPENSSL_cleanse(&st, sizeof st);
	free(sig);
	free(msg);
	return e;
}
