/* test_enroll.c -- enrollment's messages and cryptography (common/enroll.h):
 * a request opens only with its job's key, a reply only with the request's
 * fresh key, a changed byte anywhere is refused, tickets differ per job and
 * instance, and an identity document verifies only with the configured
 * certificate (never with one the message carries). */
#include <criterion/criterion.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/pkcs7.h>
#include <openssl/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../common/enroll.h"

static const uint8_t KEY[ENROLL_KEY_LEN] = "0123456789abcdef0123456789abcde";
static const uint8_t OTHER[ENROLL_KEY_LEN] = "fedcba9876543210fedcba987654321";

TestSuite(enroll);

/* A request of job 7 with ticket t and signature "c2ln" (base64 "sig"). */
static char *request(const uint8_t key[ENROLL_KEY_LEN], uint8_t *t,
		     struct enroll_pending *st, size_t *len)
{
	uint8_t pub[ENROLL_PUB_LEN];
	struct px_error err = {0};
	char *msg = NULL;

	cr_assert_eq(enroll_job_pub(key, pub, &err), PX_OK, "%s", err.msg);
	cr_assert_eq(enroll_ticket(key, 7, 3, t, &err), PX_OK);
	cr_assert_eq(enroll_request_make(7, pub, "c2ln", t, st, &msg, len,
					 &err), PX_OK, "%s", err.msg);
	return msg;
}

Test(enroll, a_request_opens_with_its_jobs_key_and_the_reply_with_its_own)
{
	uint8_t t[ENROLL_TICKET_LEN], key[ENROLL_KEY_LEN];
	struct enroll_pending st;
	struct enroll_request r;
	struct px_error err = {0};
	size_t len = 0, rlen = 0;
	char *msg = request(KEY, t, &st, &len), *reply = NULL;
	int64_t job = 0;
	bool retry = true;

	cr_assert_null(strstr(msg, "c2ln"), "the signature in the clear");
	cr_assert_eq(enroll_request_job(msg, len, &job, &err), PX_OK);
	cr_assert_eq(job, 7);
	cr_assert_eq(enroll_request_open(msg, len, KEY, &r, &err), PX_OK,
		     "%s", err.msg);
	cr_assert_str_eq(r.sig_b64, "c2ln");
	cr_assert_eq(memcmp(r.ticket, t, sizeof t), 0);
	cr_assert_eq(enroll_reply_make(&r, KEY, &reply, &rlen, &err), PX_OK);
	cr_assert_eq(enroll_reply_open(&st, reply, rlen, key, &retry, &err),
		     PX_OK, "%s", err.msg);
	cr_assert_eq(memcmp(key, KEY, sizeof key), 0);
	cr_assert_not(retry);
	/* another request's fresh key cannot read this reply */
	{
		struct enroll_pending st2;
		uint8_t t2[ENROLL_TICKET_LEN];
		size_t l2;
		char *m2 = request(KEY, t2, &st2, &l2);

		cr_assert_eq(enroll_reply_open(&st2, reply, rlen, key, &retry,
					       &err), PX_EPROTO);
		free(m2);
	}
	enroll_request_clear(&r);
	free(reply);
	free(msg);
}

Test(enroll, another_jobs_key_or_a_changed_byte_is_refused)
{
	uint8_t t[ENROLL_TICKET_LEN];
	struct enroll_pending st;
	struct enroll_request r;
	struct px_error err = {0};
	size_t len = 0;
	char *msg = request(KEY, t, &st, &len), *ct;

	cr_assert_eq(enroll_request_open(msg, len, OTHER, &r, &err),
		     PX_EINVAL);
	cr_assert(strstr(err.msg, "does not open"), "%s", err.msg);
	/* one byte of the sealed part changed */
	ct = strstr(msg, "\"ct\":\"");
	cr_assert_not_null(ct);
	ct[8] = ct[8] == 'A' ? 'B' : 'A';
	cr_assert_eq(enroll_request_open(msg, len, KEY, &r, &err), PX_EINVAL);
	/* the job number changed: the associated data no longer matches */
	free(msg);
	msg = request(KEY, t, &st, &len);
	ct = strstr(msg, "\"job\":7");
	cr_assert_not_null(ct);
	ct[6] = '8';
	cr_assert_eq(enroll_request_open(msg, len, KEY, &r, &err), PX_EINVAL);
	cr_assert_eq(enroll_request_job("{\"v\":1}", 7, &(int64_t){0}, &err),
		     PX_EINVAL);
	cr_assert_eq(enroll_request_job("[", 1, &(int64_t){0}, &err),
		     PX_EINVAL);
	free(msg);
}

Test(enroll, tickets_differ_per_job_and_instance_and_say_nothing_of_the_key)
{
	uint8_t a[ENROLL_TICKET_LEN], b[ENROLL_TICKET_LEN];
	uint8_t c[ENROLL_TICKET_LEN], p[ENROLL_PUB_LEN];
	struct px_error err = {0};

	cr_assert_eq(enroll_ticket(KEY, 1, 1, a, &err), PX_OK);
	cr_assert_eq(enroll_ticket(KEY, 1, 2, b, &err), PX_OK);
	cr_assert_eq(enroll_ticket(KEY, 2, 1, c, &err), PX_OK);
	cr_assert_neq(memcmp(a, b, sizeof a), 0);
	cr_assert_neq(memcmp(a, c, sizeof a), 0);
	cr_assert_neq(memcmp(a, KEY, sizeof a), 0);
	cr_assert_eq(enroll_job_pub(KEY, p, &err), PX_OK);
	cr_assert_neq(memcmp(p, KEY, sizeof p), 0);
	cr_assert_neq(memcmp(p, a, sizeof p), 0);
}

Test(enroll, a_refusal_says_why_and_whether_to_ask_again)
{
	struct enroll_pending st = { .job = 7 };
	uint8_t key[ENROLL_KEY_LEN];
	struct px_error err = {0};
	bool retry = false;
	size_t n = 0;
	char *m = enroll_refusal_make("not yet\x1b[2J", true, &n);

	cr_assert_eq(enroll_reply_open(&st, m, n, key, &retry, &err),
		     PX_EINVAL);
	cr_assert(retry);
	cr_assert(strstr(err.msg, "enrollment refused: not yet"), "%s",
		  err.msg);
	cr_assert_null(strchr(err.msg, '\x1b'), "a control byte passed");
	free(m);
	cr_assert_eq(enroll_reply_open(&st, "{}", 2, key, &retry, &err),
		     PX_EPROTO);
}

/* ---- identity documents ---- */

struct signer {
	EVP_PKEY *k;
	X509 *x;
};

static struct signer signer_new(const char *org)
{
	struct signer s = { EVP_RSA_gen(2048), X509_new() };
	X509_NAME *n;

	cr_assert(s.k && s.x);
	ASN1_INTEGER_set(X509_get_serialNumber(s.x), 1);
	X509_gmtime_adj(X509_getm_notBefore(s.x), -3600);
	X509_gmtime_adj(X509_getm_notAfter(s.x), 3600);
	X509_set_pubkey(s.x, s.k);
	n = X509_get_subject_name(s.x);
	X509_NAME_add_entry_by_txt(n, "O", MBSTRING_ASC,
				   (const unsigned char *)org, -1, -1, 0);
	X509_set_issuer_name(s.x, n);
	cr_assert(X509_sign(s.x, s.k, EVP_sha256()) > 0);
	return s;
}

static void signer_free(struct signer *s)
{
	EVP_PKEY_free(s->k);
	X509_free(s->x);
}

/* Base64 of PKCS#7 signed data holding doc, signed by s (its certificate
 * inside when with_cert). */
static char *sign_doc(struct signer *s, const char *doc, bool with_cert)
{
	BIO *in = BIO_new_mem_buf(doc, -1), *b64 = BIO_new(BIO_f_base64());
	BIO *mem = BIO_new(BIO_s_mem());
	PKCS7 *p7 = PKCS7_sign(s->x, s->k, NULL, in, PKCS7_BINARY |
			       (with_cert ? 0 : PKCS7_NOCERTS));
	char *out, *data;
	long n;

	cr_assert_not_null(p7);
	b64 = BIO_push(b64, mem);
	i2d_PKCS7_bio(b64, p7);
	(void)BIO_flush(b64);
	n = BIO_get_mem_data(mem, &data);
	out = strndup(data, (size_t)n);
	BIO_free_all(b64);
	BIO_free(in);
	PKCS7_free(p7);
	return out;
}

static struct enroll_cert *cert_of(struct signer *s)
{
	char path[] = "/tmp/px-enroll-cert-XXXXXX";
	struct enroll_cert *c = NULL;
	struct px_error err = {0};
	int fd = mkstemp(path);
	FILE *f = fdopen(fd, "w");

	cr_assert_not_null(f);
	PEM_write_X509(f, s->x);
	fclose(f);
	cr_assert_eq(enroll_cert_load(path, &c, &err), PX_OK, "%s", err.msg);
	unlink(path);
	return c;
}

static const char DOC[] = "{\n  \"accountId\" : \"123456789012\",\n"
	"  \"instanceId\" : \"i-0123456789abcdef0\",\n"
	"  \"region\" : \"us-east-1\",\n  \"instanceType\" : \"c5.large\"\n}";

Test(enroll, a_document_verifies_only_with_the_configured_certificate)
{
	struct signer aws = signer_new("AWS"), forger = signer_new("Not AWS");
	struct enroll_cert *c = cert_of(&aws);
	struct enroll_identity id;
	struct px_error err = {0};
	char *good = sign_doc(&aws, DOC, false);
	char *forged = sign_doc(&forger, DOC, true);

	cr_assert_eq(enroll_identity_verify(c, good, &id, &err), PX_OK, "%s",
		     err.msg);
	cr_assert_str_eq(id.instance_id, "i-0123456789abcdef0");
	cr_assert_str_eq(id.region, "us-east-1");
	cr_assert_str_eq(id.account_id, "123456789012");
	cr_assert_str_eq(id.instance_type, "c5.large");
	/* the forger's certificate rides in its message: ignored */
	cr_assert_eq(enroll_identity_verify(c, forged, &id, &err), PX_EINVAL);
	cr_assert(strstr(err.msg, "does not verify"), "%s", err.msg);
	cr_assert_eq(enroll_identity_verify(c, "bm90IHBrY3M3", &id, &err),
		     PX_EINVAL);
	cr_assert_eq(enroll_identity_verify(c, "", &id, &err), PX_EINVAL);
	free(good);
	/* signed, but no identity document inside */
	good = sign_doc(&aws, "{\"instanceId\": \"i-1\"}", false);
	cr_assert_eq(enroll_identity_verify(c, good, &id, &err), PX_EINVAL);
	cr_assert(strstr(err.msg, "not an instance identity"), "%s", err.msg);
	free(good);
	free(forged);
	enroll_cert_free(c);
	signer_free(&aws);
	signer_free(&forger);
}

Test(enroll, a_certificate_file_that_is_none_is_refused_by_name)
{
	struct enroll_cert *c = NULL;
	struct px_error err = {0};
	char path[] = "/tmp/px-enroll-cert-XXXXXX";
	int fd = mkstemp(path);

	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, "hello\n", 6), 6);
	close(fd);
	cr_assert_eq(enroll_cert_load(path, &c, &err), PX_EINVAL);
	cr_assert(strstr(err.msg, path), "%s", err.msg);
	unlink(path);
	cr_assert_neq(enroll_cert_load("/nonexistent/c.pem", &c, &err), PX_OK);
}
