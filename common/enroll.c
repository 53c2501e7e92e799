/* enroll.c -- enrollment's messages and cryptography (enroll.h).
 *
 * Keys: the job's X25519 private key is HKDF-SHA256(job key, info
 * "proteus enroll x25519 v1"); a ticket is HMAC-SHA256(job key,
 * "proteus enroll ticket v1/JOB/INST").  A request's secret s is
 * X25519(node's fresh key, job's public key); HKDF-SHA256(s, salt =
 * node pub || job pub, info "proteus enroll v1") gives 64 bytes: the
 * request's AES-256-GCM key, then the reply's.  Each key seals one
 * message, so a fixed nonce would do; a random one costs nothing.  The
 * associated data binds the job and the node's public key.
 *
 *   request: {"v":1,"job":N,"pub":HEX,"nonce":HEX,"ct":BASE64}
 *            sealed: {"sig":BASE64,"ticket":HEX}
 *   reply:   {"v":1,"ok":true,"nonce":HEX,"ct":BASE64} (the key, raw)
 *            {"v":1,"ok":false,"error":"..."}
 */
#include <inttypes.h>
#include <jansson.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/kdf.h>
#include <openssl/pem.h>
#include <openssl/pkcs7.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "enroll.h"

#define NONCE_LEN 12
#define TAG_LEN 16
#define VERSION 1
#define CERT_MAX (64 * 1024)
#define DOC_MAX (8 * 1024)

bool enroll_unhex(const char *s, uint8_t *b, size_t n)
{
	if (!s || strlen(s) != 2 * n)
		return false;
	for (size_t i = 0; i < n; i++) {
		int hi = px_hexval(s[2 * i]), lo = px_hexval(s[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return false;
		b[i] = (uint8_t)(hi << 4 | lo);
	}
	return true;
}

bool px_hkdf(const uint8_t *ikm, size_t ikm_len, const uint8_t *salt,
	     size_t salt_len, const char *info, uint8_t *out, size_t n)
{
	EVP_PKEY_CTX *c = EVP_PKEY_CTX_new_id(EVP_PKEY_HKDF, NULL);
	size_t got = n;
	bool ok;

	ok = c && EVP_PKEY_derive_init(c) > 0 &&
	     EVP_PKEY_CTX_set_hkdf_md(c, EVP_sha256()) > 0 &&
	     EVP_PKEY_CTX_set1_hkdf_key(c, ikm, (int)ikm_len) > 0 &&
	     (!salt_len ||
	      EVP_PKEY_CTX_set1_hkdf_salt(c, salt, (int)salt_len) > 0) &&
	     EVP_PKEY_CTX_add1_hkdf_info(c, (const unsigned char *)info,
					 (int)strlen(info)) > 0 &&
	     EVP_PKEY_derive(c, out, &got) > 0 && got == n;
	EVP_PKEY_CTX_free(c);
	return ok;
}

/* The job's X25519 key pair, from its key. */
static EVP_PKEY *job_keypair(const uint8_t key[ENROLL_KEY_LEN])
{
	uint8_t priv[32];
	EVP_PKEY *k = NULL;

	if (px_hkdf(key, ENROLL_KEY_LEN, NULL, 0, "proteus enroll x25519 v1",
		 priv, sizeof priv))
		k = EVP_PKEY_new_raw_private_key(EVP_PKEY_X25519, NULL, priv,
						 sizeof priv);
	OPENSSL_cleanse(priv, sizeof priv);
	return k;
}

static bool raw_pub(EVP_PKEY *k, uint8_t pub[ENROLL_PUB_LEN])
{
	size_t n = ENROLL_PUB_LEN;

	return EVP_PKEY_get_raw_public_key(k, pub, &n) == 1 &&
	       n == ENROLL_PUB_LEN;
}

enum px_err enroll_job_pub(const uint8_t key[ENROLL_KEY_LEN],
			   uint8_t pub[ENROLL_PUB_LEN], struct px_error *err)
{
	EVP_PKEY *k = job_keypair(key);
	bool ok = k && raw_pub(k, pub);

	EVP_PKEY_free(k);
	return ok ? PX_OK : px_errorf(err, PX_EIO, "enrollment: the job's "
				      "X25519 key could not be made");
}

enum px_err enroll_ticket(const uint8_t key[ENROLL_KEY_LEN], int64_t job,
			  uint64_t inst, uint8_t ticket[ENROLL_TICKET_LEN],
			  struct px_error *err)
{
	char msg[96];
	unsigned int n = 0;
	int len = snprintf(msg, sizeof msg, "proteus enroll ticket v1/%"
			   PRId64 "/%" PRIu64, job, inst);

	if (!HMAC(EVP_sha256(), key, ENROLL_KEY_LEN, (unsigned char *)msg,
		  (size_t)len, ticket, &n) || n != ENROLL_TICKET_LEN)
		return px_errorf(err, PX_EIO, "enrollment: HMAC failed");
	return PX_OK;
}

/* Both GCM keys of the secret between mine and peer's public key: the
 * request's (out[0..31]) and the reply's (out[32..63]).  node_pub and
 * job_pub, in that order, salt them. */
static bool session_keys(EVP_PKEY *mine, const uint8_t peer[ENROLL_PUB_LEN],
			 const uint8_t node_pub[ENROLL_PUB_LEN],
			 const uint8_t job_pub[ENROLL_PUB_LEN], uint8_t out[64])
{
	EVP_PKEY *p = EVP_PKEY_new_raw_public_key(EVP_PKEY_X25519, NULL,
						  peer, ENROLL_PUB_LEN);
	EVP_PKEY_CTX *c = p ? EVP_PKEY_CTX_new(mine, NULL) : NULL;
	uint8_t s[32], salt[2 * ENROLL_PUB_LEN];
	size_t n = sizeof s;
	bool ok;

	/* X25519 refuses a peer key of low order (an all-zero secret) */
	ok = c && EVP_PKEY_derive_init(c) > 0 &&
	     EVP_PKEY_derive_set_peer(c, p) > 0 &&
	     EVP_PKEY_derive(c, s, &n) > 0 && n == sizeof s;
	memcpy(salt, node_pub, ENROLL_PUB_LEN);
	memcpy(salt + ENROLL_PUB_LEN, job_pub, ENROLL_PUB_LEN);
	ok = ok && px_hkdf(s, sizeof s, salt, sizeof salt, "proteus enroll v1",
			out, 64);
	OPENSSL_cleanse(s, sizeof s);
	EVP_PKEY_CTX_free(c);
	EVP_PKEY_free(p);
	return ok;
}

bool px_gcm(bool seal, const uint8_t key[32], const uint8_t nonce[NONCE_LEN],
	    const uint8_t *aad, size_t aad_len, const uint8_t *in, size_t n,
	    uint8_t *out)
{
	EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
	size_t body = seal ? n : n - TAG_LEN;
	int k = 0;
	bool ok;

	if (!seal && n < TAG_LEN) {
		EVP_CIPHER_CTX_free(c);
		return false;
	}
	ok = c && EVP_CipherInit_ex(c, EVP_aes_256_gcm(), NULL, NULL, NULL,
				    seal) == 1 &&
	     EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_IVLEN, NONCE_LEN,
				 NULL) == 1 &&
	     EVP_CipherInit_ex(c, NULL, NULL, key, nonce, seal) == 1 &&
	     EVP_CipherUpdate(c, NULL, &k, aad, (int)aad_len) == 1 &&
	     EVP_CipherUpdate(c, out, &k, in, (int)body) == 1;
	if (ok && seal)
		ok = EVP_CipherFinal_ex(c, out + k, &k) == 1 &&
		     EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_GET_TAG, TAG_LEN,
					 out + body) == 1;
	else if (ok)
		ok = EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_TAG, TAG_LEN,
					 (void *)(in + body)) == 1 &&
		     EVP_CipherFinal_ex(c, out + k, &k) == 1;
	EVP_CIPHER_CTX_free(c);
	return ok;
}

/* Base64 of b[n] (malloc'd). */
static char *b64(const uint8_t *b, size_t n)
{
	char *s = malloc(4 * ((n + 2) / 3) + 1);

	if (s)
		EVP_EncodeBlock((unsigned char *)s, b, (int)n);
	return s;
}

/* s (base64; line breaks and blanks skipped, as IMDS may wrap it)
 * decoded into a malloc'd buffer. */
static uint8_t *unb64(const char *s, size_t *ret_n)
{
	size_t len = 0, pad;
	char *t = malloc(strlen(s) + 1);
	uint8_t *b = NULL;
	int n;

	if (!t)
		return NULL;
	for (; *s; s++)
		if (*s != '\n' && *s != '\r' && *s != ' ' && *s != '\t')
			t[len++] = *s;
	t[len] = 0;
	if (len && len % 4 == 0)
		b = malloc(len / 4 * 3 + 1);
	if (b) {
		pad = (size_t)(t[len - 1] == '=') + (t[len - 2] == '=');
		n = EVP_DecodeBlock(b, (unsigned char *)t, (int)len);
		if (n < 0 || (size_t)n < pad) {
			free(b);
			b = NULL;
		} else {
			*ret_n = (size_t)n - pad;
		}
	}
	free(t);
	return b;
}

/* Associated data: what the sealed part is bound to. */
static size_t aad_of(bool reply, int64_t job,
		     const uint8_t pub[ENROLL_PUB_LEN], uint8_t *out)
{
	int n = snprintf((char *)out, 64, "proteus enroll %s v1/%" PRId64 "/",
			 reply ? "reply" : "request", job);

	memcpy(out + n, pub, ENROLL_PUB_LEN);
	return (size_t)n + ENROLL_PUB_LEN;
}

/* {"v":1, ..., "nonce":HEX,"ct":B64} of plain sealed under key. */
static enum px_err seal_into(json_t *o, const uint8_t key[32], bool reply,
			     int64_t job, const uint8_t pub[ENROLL_PUB_LEN],
			     const uint8_t *plain, size_t n,
			     struct px_error *err)
{
	uint8_t nonce[NONCE_LEN], aad[64 + ENROLL_PUB_LEN];
	uint8_t *ct = malloc(n + TAG_LEN);
	char nh[2 * NONCE_LEN + 1], *s = NULL;
	size_t an = aad_of(reply, job, pub, aad);
	bool ok;

	ok = ct && RAND_bytes(nonce, sizeof nonce) == 1 &&
	     px_gcm(true, key, nonce, aad, an, plain, n, ct) &&
	     (s = b64(ct, n + TAG_LEN));
	if (ok) {
		px_hex(nonce, sizeof nonce, nh);
		ok = !json_object_set_new(o, "nonce", json_string(nh)) &&
		     !json_object_set_new(o, "ct", json_string(s));
	}
	free(s);
	free(ct);
	return ok ? PX_OK : px_errorf(err, PX_ENOMEM, "enrollment: sealing "
				      "failed");
}

/* The sealed part of o opened under key: *ret (malloc'd, NUL after) or
 * false. */
static bool open_from(const json_t *o, const uint8_t key[32], bool reply,
		      int64_t job, const uint8_t pub[ENROLL_PUB_LEN],
		      uint8_t **ret, size_t *ret_n)
{
	const char *nh = json_string_value(json_object_get(o, "nonce"));
	const char *cs = json_string_value(json_object_get(o, "ct"));
	uint8_t nonce[NONCE_LEN], aad[64 + ENROLL_PUB_LEN], *ct, *pt;
	size_t n = 0, an = aad_of(reply, job, pub, aad);

	if (!enroll_unhex(nh, nonce, sizeof nonce) || !cs ||
	    !(ct = unb64(cs, &n)))
		return false;
	pt = n >= TAG_LEN ? malloc(n - TAG_LEN + 1) : NULL;
	if (!pt || !px_gcm(false, key, nonce, aad, an, ct, n, pt)) {
		free(pt);
		free(ct);
		return false;
	}
	pt[n - TAG_LEN] = 0;
	free(ct);
	*ret = pt;
	*ret_n = n - TAG_LEN;
	return true;
}

static enum px_err dump(json_t *o, char **ret, size_t *ret_len,
			struct px_error *err)
{
	char *s = json_dumps(o, JSON_COMPACT);

	json_decref(o);
	if (!s)
		return px_errorf(err, PX_ENOMEM, "out of memory");
	*ret = s;
	*ret_len = strlen(s);
	return PX_OK;
}

/* msg as a JSON object of our version, or NULL. */
static json_t *parse(const char *msg, size_t len)
{
	json_t *o;

	if (len > ENROLL_MSG_MAX)
		return NULL;
	o = json_loadb(msg, len, JSON_REJECT_DUPLICATES, NULL);
	if (o && (!json_is_object(o) ||
		  json_integer_value(json_object_get(o, "v")) != VERSION)) {
		json_decref(o);
		o = NULL;
	}
	return o;
}

enum px_err enroll_request_make(int64_t job,
				const uint8_t job_pub[ENROLL_PUB_LEN],
				const char *sig_b64,
				const uint8_t ticket[ENROLL_TICKET_LEN],
				struct enroll_pending *st, char **ret_msg,
				size_t *ret_len, struct px_error *err)
{
	EVP_PKEY_CTX *kc = EVP_PKEY_CTX_new_id(EVP_PKEY_X25519, NULL);
	EVP_PKEY *mine = NULL;
	uint8_t keys[64];
	char th[2 * ENROLL_TICKET_LEN + 1], ph[2 * ENROLL_PUB_LEN + 1];
	json_t *o = NULL, *in = NULL;
	char *plain = NULL;
	enum px_err e = PX_OK;

	if (strlen(sig_b64) > ENROLL_SIG_MAX)
		return px_errorf(err, PX_ETOOBIG, "enrollment: the identity "
				 "signature is over %d bytes", ENROLL_SIG_MAX);
	memset(st, 0, sizeof *st);
	st->job = job;
	if (!kc || EVP_PKEY_keygen_init(kc) <= 0 ||
	    EVP_PKEY_keygen(kc, &mine) <= 0 || !raw_pub(mine, st->pub) ||
	    !session_keys(mine, job_pub, st->pub, job_pub, keys)) {
		e = px_errorf(err, PX_EIO, "enrollment: X25519 failed");
		goto out;
	}
	memcpy(st->k_reply, keys + 32, 32);
	px_hex(ticket, ENROLL_TICKET_LEN, th);
	px_hex(st->pub, ENROLL_PUB_LEN, ph);
	in = json_pack("{s:s, s:s}", "sig", sig_b64, "ticket", th);
	plain = in ? json_dumps(in, JSON_COMPACT) : NULL;
	o = json_pack("{s:i, s:I, s:s}", "v", VERSION, "job", (json_int_t)job,
		      "pub", ph);
	if (!plain || !o) {
		e = px_errorf(err, PX_ENOMEM, "out of memory");
		goto out;
	}
	e = seal_into(o, keys, false, job, st->pub, (uint8_t *)plain,
		      strlen(plain), err);
	if (e == PX_OK) {
		e = dump(o, ret_msg, ret_len, err);
		o = NULL;
	}
out:
	if (plain) {
		OPENSSL_cleanse(plain, strlen(plain));
		free(plain);
	}
	OPENSSL_cleanse(keys, sizeof keys);
	OPENSSL_cleanse(th, sizeof th);
	json_decref(in);
	json_decref(o);
	EVP_PKEY_free(mine);
	EVP_PKEY_CTX_free(kc);
	return e;
}

enum px_err enroll_reply_open(const struct enroll_pending *st,
			      const char *msg, size_t len,
			      uint8_t key[ENROLL_KEY_LEN], bool *ret_retry,
			      struct px_error *err)
{
	json_t *o = parse(msg, len);
	json_t *ok = o ? json_object_get(o, "ok") : NULL;
	uint8_t *pt = NULL;
	size_t n = 0;
	enum px_err e = PX_OK;

	*ret_retry = false;
	if (!ok || !json_is_boolean(ok)) {
		e = px_errorf(err, PX_EPROTO, "enrollment: the answer is not "
			      "an enrollment reply");
	} else if (!json_is_true(ok)) {
		const char *why = json_string_value(json_object_get(o,
								    "error"));
		char safe[ENROLL_WHY_MAX];
		size_t k = 0;

		/* the daemon's words, printable only */
		for (; why && *why && k + 1 < sizeof safe; why++)
			safe[k++] = *why >= 0x20 && *why < 0x7f ? *why : '?';
		safe[k] = 0;
		*ret_retry = json_is_true(json_object_get(o, "retry"));
		e = px_errorf(err, PX_EINVAL, "enrollment refused: %s",
			      k ? safe : "no reason given");
	} else if (!open_from(o, st->k_reply, true, st->job, st->pub, &pt,
			      &n) || n != ENROLL_KEY_LEN) {
		e = px_errorf(err, PX_EPROTO, "enrollment: the reply does not "
			      "open with this request's key");
	} else {
		memcpy(key, pt, ENROLL_KEY_LEN);
	}
	if (pt) {
		OPENSSL_cleanse(pt, n);
		free(pt);
	}
	json_decref(o);
	return e;
}

enum px_err enroll_request_job(const char *msg, size_t len,
			       int64_t *ret_job, struct px_error *err)
{
	json_t *o = parse(msg, len);
	json_t *j = o ? json_object_get(o, "job") : NULL;
	enum px_err e = PX_OK;

	if (!json_is_integer(j) || json_integer_value(j) <= 0)
		e = px_errorf(err, PX_EINVAL, "not an enrollment request "
			      "(version %d, with a job)", VERSION);
	else
		*ret_job = (int64_t)json_integer_value(j);
	json_decref(o);
	return e;
}

enum px_err enroll_request_open(const char *msg, size_t len,
				const uint8_t key[ENROLL_KEY_LEN],
				struct enroll_request *r,
				struct px_error *err)
{
	json_t *o = parse(msg, len), *in = NULL;
	EVP_PKEY *mine = NULL;
	uint8_t keys[64], job_pub[ENROLL_PUB_LEN], *pt = NULL;
	size_t n = 0;
	const char *sig, *tk;
	enum px_err e = PX_OK;

	memset(r, 0, sizeof *r);
	if (!o || enroll_request_job(msg, len, &r->job, err) != PX_OK ||
	    !enroll_unhex(json_string_value(json_object_get(o, "pub")),
			  r->pub, sizeof r->pub)) {
		e = px_errorf(err, PX_EINVAL, "not an enrollment request");
		goto out;
	}
	mine = job_keypair(key);
	if (!mine || !raw_pub(mine, job_pub) ||
	    !session_keys(mine, r->pub, r->pub, job_pub, keys)) {
		e = px_errorf(err, PX_EINVAL, "the node's public key is not "
			      "a usable X25519 key");
		goto out;
	}
	memcpy(r->k_reply, keys + 32, 32);
	if (!open_from(o, keys, false, r->job, r->pub, &pt, &n)) {
		e = px_errorf(err, PX_EINVAL, "the request does not open with "
			      "the job's key (not made from this job's user "
			      "data, or altered)");
		goto out;
	}
	in = json_loadb((char *)pt, n, JSON_REJECT_DUPLICATES, NULL);
	sig = json_string_value(json_object_get(in, "sig"));
	tk = json_string_value(json_object_get(in, "ticket"));
	if (!sig || strlen(sig) > ENROLL_SIG_MAX ||
	    !enroll_unhex(tk, r->ticket, sizeof r->ticket)) {
		e = px_errorf(err, PX_EINVAL, "the request holds no identity "
			      "signature (at most %d bytes) and ticket",
			      ENROLL_SIG_MAX);
		goto out;
	}
	if (!(r->sig_b64 = strdup(sig)))
		e = px_errorf(err, PX_ENOMEM, "out of memory");
out:
	if (e != PX_OK)
		enroll_request_clear(r);
	if (pt) {
		OPENSSL_cleanse(pt, n);
		free(pt);
	}
	OPENSSL_cleanse(keys, sizeof keys);
	EVP_PKEY_free(mine);
	json_decref(in);
	json_decref(o);
	return e;
}

void enroll_request_clear(struct enroll_request *r)
{
	free(r->sig_b64);
	OPENSSL_cleanse(r, sizeof *r);
}

enum px_err enroll_reply_make(const struct enroll_request *r,
			      const uint8_t key[ENROLL_KEY_LEN],
			      char **ret_msg, size_t *ret_len,
			      struct px_error *err)
{
	json_t *o = json_pack("{s:i, s:b}", "v", VERSION, "ok", 1);
	enum px_err e;

	if (!o)
		return px_errorf(err, PX_ENOMEM, "out of memory");
	e = seal_into(o, r->k_reply, true, r->job, r->pub, key,
		      ENROLL_KEY_LEN, err);
	if (e != PX_OK) {
		json_decref(o);
		return e;
	}
	return dump(o, ret_msg, ret_len, err);
}

char *enroll_refusal_make(const char *why, bool retry, size_t *ret_len)
{
	json_t *o = json_pack("{s:i, s:b, s:s, s:b}", "v", VERSION, "ok", 0,
			      "error", why, "retry", retry);
	char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;

	json_decref(o);
	*ret_len = s ? strlen(s) : 0;
	return s;
}

/* ---- the identity document ---- */

struct enroll_cert {
	X509 *x;
};

enum px_err enroll_cert_load(const char *path, struct enroll_cert **ret,
			     struct px_error *err)
{
	struct enroll_cert *c;
	char *buf = NULL;
	size_t n = 0;
	BIO *b;
	enum px_err e;

	e = px_read_file(path, CERT_MAX, &buf, &n, err);
	if (e != PX_OK)
		return e;
	c = calloc(1, sizeof *c);
	b = BIO_new_mem_buf(buf, (int)n);
	if (c && b)
		c->x = PEM_read_bio_X509(b, NULL, NULL, NULL);
	BIO_free(b);
	free(buf);
	if (!c || !c->x) {
		free(c);
		return px_errorf(err, PX_EINVAL, "%s: not a PEM certificate "
				 "(the region's AWS RSA-2048 certificate for "
				 "instance identity documents)", path);
	}
	*ret = c;
	return PX_OK;
}

void enroll_cert_free(struct enroll_cert *c)
{
	if (!c)
		return;
	X509_free(c->x);
	free(c);
}

/* The document's string field name into buf; false when it has none
 * that fits or it holds a byte an id never has. */
static bool doc_str(const json_t *doc, const char *name, char *buf,
		    size_t len)
{
	const char *s = json_string_value(json_object_get(doc, name));

	if (!s || !*s || strlen(s) >= len)
		return false;
	for (const char *p = s; *p; p++)
		if (*p < 0x21 || *p > 0x7e || *p == '"' || *p == '\\')
			return false;
	snprintf(buf, len, "%s", s);
	return true;
}

enum px_err enroll_identity_verify(const struct enroll_cert *c,
				   const char *sig_b64,
				   struct enroll_identity *ret,
				   struct px_error *err)
{
	STACK_OF(X509) *certs = sk_X509_new_null();
	BIO *in = NULL, *out = BIO_new(BIO_s_mem());
	PKCS7 *p7 = NULL;
	json_t *doc = NULL;
	uint8_t *der = NULL;
	const char *body;
	size_t n = 0;
	long bn;
	enum px_err e = PX_OK;

	memset(ret, 0, sizeof *ret);
	if (!certs || !out || !sk_X509_push(certs, c->x)) {
		e = px_errorf(err, PX_ENOMEM, "out of memory");
		goto done;
	}
	der = strlen(sig_b64) <= ENROLL_SIG_MAX ? unb64(sig_b64, &n) : NULL;
	in = der ? BIO_new_mem_buf(der, (int)n) : NULL;
	p7 = in ? d2i_PKCS7_bio(in, NULL) : NULL;
	if (!p7 || !PKCS7_type_is_signed(p7)) {
		e = px_errorf(err, PX_EINVAL, "the identity signature is not "
			      "PKCS#7 signed data");
		goto done;
	}
	/* only the region's certificate may have signed it: NOINTERN
	 * ignores certificates the message carries, NOVERIFY the chain
	 * (AWS's is self-signed, configured by the operator) */
	if (PKCS7_verify(p7, certs, NULL, NULL, out,
			 PKCS7_NOINTERN | PKCS7_NOVERIFY | PKCS7_BINARY) != 1) {
		e = px_errorf(err, PX_EINVAL, "the identity document's "
			      "signature does not verify with the region's "
			      "certificate");
		goto done;
	}
	bn = BIO_get_mem_data(out, &body);
	if (bn <= 0 || bn > DOC_MAX ||
	    !(doc = json_loadb(body, (size_t)bn, 0, NULL)) ||
	    !doc_str(doc, "instanceId", ret->instance_id,
		     sizeof ret->instance_id) ||
	    !doc_str(doc, "region", ret->region, sizeof ret->region) ||
	    !doc_str(doc, "accountId", ret->account_id,
		     sizeof ret->account_id)) {
		e = px_errorf(err, PX_EINVAL, "the signed document is not an "
			      "instance identity document (instanceId, "
			      "region, accountId)");
		goto done;
	}
	(void)doc_str(doc, "instanceType", ret->instance_type,
		      sizeof ret->instance_type);
	(void)doc_str(doc, "availabilityZone", ret->zone, sizeof ret->zone);
	(void)doc_str(doc, "pendingTime", ret->pending_time,
		      sizeof ret->pending_time);
done:
	json_decref(doc);
	PKCS7_free(p7);
	BIO_free(in);
	BIO_free(out);
	free(der);
	sk_X509_free(certs);
	return e;
}
