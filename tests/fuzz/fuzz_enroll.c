/* fuzz_enroll.c -- libFuzzer harness for what proteusd's enrollment
 * endpoint reads from the network (common/enroll.h): any bytes give a
 * job number or an error, a request opened (its signature and ticket
 * there) or an error, an identity signature verified or an error, and a
 * reply opened or an error; nothing crashes, leaks or reads past its
 * input.  The first byte picks the reader; the rest is the message. */
#ifndef _GNU_SOURCE           /* the Makefile defines it too */
#define _GNU_SOURCE
#endif
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../common/enroll.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const uint8_t KEY[ENROLL_KEY_LEN] = "fuzz-job-key-0123456789abcdefgh";

/* A certificate of a key of our own, made once. */
static struct enroll_cert *cert(void)
{
	static struct enroll_cert *c;
	char path[] = "/tmp/fuzz-enroll-XXXXXX";
	struct px_error err;
	EVP_PKEY *k;
	X509 *x;
	FILE *f;
	int fd;

	if (c)
		return c;
	k = EVP_RSA_gen(2048);
	x = X509_new();
	fd = mkstemp(path);
	if (!k || !x || fd < 0)
		abort();
	ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
	X509_gmtime_adj(X509_getm_notBefore(x), 0);
	X509_gmtime_adj(X509_getm_notAfter(x), 3600);
	X509_set_pubkey(x, k);
	X509_set_issuer_name(x, X509_get_subject_name(x));
	if (X509_sign(x, k, EVP_sha256()) <= 0 || !(f = fdopen(fd, "w")))
		abort();
	PEM_write_X509(f, x);
	fclose(f);
	if (enroll_cert_load(path, &c, &err) != PX_OK)
		abort();
	unlink(path);
	X509_free(x);
	EVP_PKEY_free(k);
	return c;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct px_error err = { 0 };
	char *msg;
	size_t n;

	if (size < 1)
		return 0;
	n = size - 1;
	msg = malloc(n + 1);
	if (!msg)
		abort();
	memcpy(msg, data + 1, n);
	msg[n] = 0;
	switch (data[0] % 4) {
	case 0: {
		int64_t job = 0;

		if (enroll_request_job(msg, n, &job, &err) == PX_OK &&
		    job <= 0)
			abort();
		break;
	}
	case 1: {
		struct enroll_request r;

		if (enroll_request_open(msg, n, KEY, &r, &err) == PX_OK) {
			if (!r.sig_b64 || strlen(r.sig_b64) > ENROLL_SIG_MAX)
				abort();
			enroll_request_clear(&r);
		}
		break;
	}
	case 2: {
		struct enroll_identity id;

		if (enroll_identity_verify(cert(), msg, &id, &err) == PX_OK &&
		    !id.instance_id[0])
			abort();
		break;
	}
	default: {
		struct enroll_pending st = { .job = 1 };
		uint8_t key[ENROLL_KEY_LEN];
		bool retry;

		(void)enroll_reply_open(&st, msg, n, key, &retry, &err);
		break;
	}
	}
	free(msg);
	return 0;
}
