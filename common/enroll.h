/* enroll.h -- how a node on an EC2 instance gets its job's key: the
 * messages and the cryptography that the node (trainer/dist/enroll_node.c)
 * and proteusd (agent/world/enroll_srv.c) share.  docs/security.md has
 * the scheme and what it defends against; in short:
 *
 *  - The job's enrollment key pair (X25519) is drawn from the job key
 *    (HKDF); its public half and a single-use ticket per instance
 *    (HMAC of the job key, the job and the instance's number) go in the
 *    instance's user data.  Neither gives the job key.
 *  - The node makes a fresh X25519 key pair, agrees a secret with the
 *    job's public key, and sends, sealed with AES-256-GCM under a key
 *    drawn from that secret (HKDF, both public keys as salt): its signed
 *    instance identity document (the PKCS#7 "rsa2048" signature, which
 *    holds the document) and the ticket.
 *  - proteusd opens it with the job's private key, checks the PKCS#7
 *    signature against the region's AWS certificate (certificates in the
 *    message are ignored), then the instance id and the ticket, and
 *    answers with the job key sealed under the reply key of the same
 *    secret: only the holder of the fresh private key can read it.
 *
 * The messages are JSON, bounded by ENROLL_MSG_MAX.  Nothing here logs;
 * error messages never hold a key, a ticket or a secret.
 */
#ifndef PX_ENROLL_H
#define PX_ENROLL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "px.h"

#define ENROLL_KEY_LEN 32         /* the job key */
#define ENROLL_PUB_LEN 32         /* an X25519 public key */
#define ENROLL_TICKET_LEN 32
#define ENROLL_MSG_MAX (64 * 1024) /* a request or a reply, bytes */
#define ENROLL_SIG_MAX (16 * 1024) /* the PKCS#7 signature, base64 */
#define ENROLL_WHY_MAX 160

/* What the user data gives the node (its environment). */
#define ENROLL_ENV_ADDR "PX_ENROLL_ADDR"     /* tcp://head:port */
#define ENROLL_ENV_JOB "PX_ENROLL_JOB"       /* the job's number */
#define ENROLL_ENV_PUB "PX_ENROLL_PUB"       /* 64 hex: the job's key */
#define ENROLL_ENV_TICKET "PX_ENROLL_TICKET" /* 64 hex */

/* The job's enrollment public key, drawn from its key. */
enum px_err enroll_job_pub(const uint8_t key[ENROLL_KEY_LEN],
			   uint8_t pub[ENROLL_PUB_LEN], struct px_error *err);

/* The ticket of the job's instance inst (the controller's number). */
enum px_err enroll_ticket(const uint8_t key[ENROLL_KEY_LEN], int64_t job,
			  uint64_t inst, uint8_t ticket[ENROLL_TICKET_LEN],
			  struct px_error *err);

/* ---- the primitives, shared with the program channel (pchan.h) ---- */

/* HKDF-SHA256(ikm, salt, info) -> out[n] (salt_len 0: none). */
bool px_hkdf(const uint8_t *ikm, size_t ikm_len, const uint8_t *salt,
	     size_t salt_len, const char *info, uint8_t *out, size_t n);
/* AES-256-GCM of in[n] under key, a 12-byte nonce and aad: out gets n
 * bytes and the 16-byte tag (seal), or n - 16 bytes (open: false when the
 * tag fails). */
bool px_gcm(bool seal, const uint8_t key[32], const uint8_t nonce[12],
	    const uint8_t *aad, size_t aad_len, const uint8_t *in, size_t n,
	    uint8_t *out);

/* ---- the node's side ---- */

/* What the node keeps between its request and the reply. */
struct enroll_pending {
	int64_t job;
	uint8_t pub[ENROLL_PUB_LEN];      /* its fresh public key */
	uint8_t k_reply[32];
};

/* The request of job's node: sig_b64 is the instance's PKCS#7 signature
 * (IMDS dynamic/instance-identity/rsa2048), base64.  *ret_msg (free())
 * is the message, *st what enroll_reply_open needs. */
enum px_err enroll_request_make(int64_t job,
				const uint8_t job_pub[ENROLL_PUB_LEN],
				const char *sig_b64,
				const uint8_t ticket[ENROLL_TICKET_LEN],
				struct enroll_pending *st, char **ret_msg,
				size_t *ret_len, struct px_error *err);

/* The daemon's reply: PX_OK and the key; PX_EPROTO for a reply that is
 * not one (or does not open); PX_EINVAL with the daemon's reason
 * ("enrollment refused: ...") when it refused, *ret_retry true when it
 * said that asking again later may do (the launch not yet known). */
enum px_err enroll_reply_open(const struct enroll_pending *st,
			      const char *msg, size_t len,
			      uint8_t key[ENROLL_KEY_LEN], bool *ret_retry,
			      struct px_error *err);

/* ---- proteusd's side ---- */

/* A request opened. */
struct enroll_request {
	int64_t job;
	uint8_t pub[ENROLL_PUB_LEN];      /* the node's fresh key */
	uint8_t ticket[ENROLL_TICKET_LEN];
	char *sig_b64;                    /* malloc'd */
	uint8_t k_reply[32];
};

/* The job a request is for (its outer part, not yet opened). */
enum px_err enroll_request_job(const char *msg, size_t len,
			       int64_t *ret_job, struct px_error *err);

/* Open msg with the job's key: PX_EINVAL (err says why) when it is not a
 * request sealed for this job.  enroll_request_clear frees and wipes. */
enum px_err enroll_request_open(const char *msg, size_t len,
				const uint8_t key[ENROLL_KEY_LEN],
				struct enroll_request *ret,
				struct px_error *err);
void enroll_request_clear(struct enroll_request *r);

/* The reply to r that gives the key. */
enum px_err enroll_reply_make(const struct enroll_request *r,
			      const uint8_t key[ENROLL_KEY_LEN],
			      char **ret_msg, size_t *ret_len,
			      struct px_error *err);
/* A refusal, why said to the node (a short reason, no secret); retry:
 * the node may ask again later. */
char *enroll_refusal_make(const char *why, bool retry, size_t *ret_len);

/* What the daemon reads of a verified identity document. */
struct enroll_identity {
	char instance_id[32];
	char region[32];
	char account_id[16];
	char instance_type[32];
	char zone[32];
	char pending_time[32];
};

/* The AWS certificate (PEM) that signs identity documents in a region. */
struct enroll_cert;
enum px_err enroll_cert_load(const char *path, struct enroll_cert **ret,
			     struct px_error *err);
void enroll_cert_free(struct enroll_cert *c);

/* Verify sig_b64 (base64 PKCS#7 signed data, the document inside) with
 * c alone (certificates in the message are ignored) and read the
 * document: PX_EINVAL (err says why) when it does not verify or is not
 * an identity document. */
enum px_err enroll_identity_verify(const struct enroll_cert *c,
				   const char *sig_b64,
				   struct enroll_identity *ret,
				   struct px_error *err);

/* Exactly 2n hex digits into n bytes (the other way: px_hex). */
bool enroll_unhex(const char *s, uint8_t *b, size_t n);

#endif
