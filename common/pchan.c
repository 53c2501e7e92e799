/* pchan.c -- the program channel's sealed messages (pchan.h). */
#include <limits.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "enroll.h"
#include "pchan.h"

#define NONCE_AT 24

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

enum px_err pchan_key_from_job(const uint8_t *key, size_t key_len,
			       struct pchan_key *ret, struct px_error *err)
{
	if (!key || key_len < 16 ||
	    !px_hkdf(key, key_len, NULL, 0, "proteus program channel v1",
		     ret->k, sizeof ret->k))
		return px_errorf(err, PX_EIO, "the program channel's key "
				 "cannot be drawn from the job key");
	return PX_OK;
}

enum px_err pchan_folder_tag(const uint8_t *key, size_t key_len,
			     char tag[PCHAN_TAG_HEX], struct px_error *err)
{
	uint8_t t[8];

	if (!key || key_len < 16 ||
	    !px_hkdf(key, key_len, NULL, 0, "proteus program folder v1", t,
		     sizeof t))
		return px_errorf(err, PX_EIO, "the node folders' name cannot "
				 "be drawn from the job key");
	px_hex(t, sizeof t, tag);
	return PX_OK;
}

int pchan_b64_decode(const char *s, size_t len, uint8_t *out)
{
	int n;

	if (!len)
		return 0;
	if (len > INT_MAX)
		return -1;
	n = EVP_DecodeBlock(out, (const unsigned char *)s, (int)len);
	/* EVP_DecodeBlock counts the padding's zero bytes too */
	for (size_t q = len; n > 0 && q > 0 && s[q - 1] == '='; q--)
		n--;
	return n;
}

enum px_err pchan_seal(const struct pchan_key *k, enum pchan_dir dir,
		       uint64_t session, uint64_t counter, json_t *msg,
		       uint8_t **ret, size_t *ret_len, struct px_error *err)
{
	char *text = json_dumps(msg, JSON_COMPACT);
	size_t n = text ? strlen(text) : 0;
	size_t total = PCHAN_HDR_LEN + n + PCHAN_TAG_LEN;
	uint8_t *out;

	*ret = NULL;
	if (!text)
		return px_errorf(err, PX_ENOMEM, "out of memory");
	if (total > PCHAN_MSG_MAX) {
		free(text);
		return px_errorf(err, PX_ETOOBIG, "a program channel message "
				 "of %zu bytes (at most %u)", total,
				 PCHAN_MSG_MAX);
	}
	out = malloc(total);
	if (!out) {
		free(text);
		return px_errorf(err, PX_ENOMEM, "out of memory");
	}
	memcpy(out, PCHAN_MAGIC, 4);
	out[4] = PCHAN_VERSION;
	out[5] = (uint8_t)dir;
	out[6] = out[7] = 0;
	put64(out + 8, session);
	put64(out + 16, counter);
	if (RAND_bytes(out + NONCE_AT, 12) != 1 ||
	    !px_gcm(true, k->k, out + NONCE_AT, out, PCHAN_HDR_LEN,
		    (const uint8_t *)text, n, out + PCHAN_HDR_LEN)) {
		free(text);
		free(out);
		return px_errorf(err, PX_EIO, "sealing a program channel "
				 "message failed");
	}
	free(text);
	*ret = out;
	*ret_len = total;
	return PX_OK;
}

enum px_err pchan_open(const struct pchan_key *k, const uint8_t *buf,
		       size_t len, enum pchan_dir *ret_dir,
		       uint64_t *ret_session, uint64_t *ret_counter,
		       json_t **ret, struct px_error *err)
{
	size_t n;
	uint8_t *pt;
	json_t *o;

	*ret = NULL;
	if (len < PCHAN_HDR_LEN + PCHAN_TAG_LEN || len > PCHAN_MSG_MAX ||
	    memcmp(buf, PCHAN_MAGIC, 4) || buf[4] != PCHAN_VERSION ||
	    (buf[5] != PCHAN_REQUEST && buf[5] != PCHAN_REPLY))
		return px_errorf(err, PX_EPROTO, "not a program channel "
				 "message (%zu bytes)", len);
	n = len - PCHAN_HDR_LEN - PCHAN_TAG_LEN;
	pt = malloc(n + 1);
	if (!pt)
		return px_errorf(err, PX_ENOMEM, "out of memory");
	if (!px_gcm(false, k->k, buf + NONCE_AT, buf, PCHAN_HDR_LEN,
		    buf + PCHAN_HDR_LEN, n + PCHAN_TAG_LEN, pt)) {
		free(pt);
		return px_errorf(err, PX_EPROTO, "a program channel message "
				 "that does not open under the job's key");
	}
	o = json_loadb((const char *)pt, n, JSON_REJECT_DUPLICATES, NULL);
	free(pt);
	if (!json_is_object(o)) {
		json_decref(o);
		return px_errorf(err, PX_EPROTO, "a program channel message "
				 "that is not a JSON object");
	}
	*ret_dir = (enum pchan_dir)buf[5];
	*ret_session = get64(buf + 8);
	*ret_counter = get64(buf + 16);
	*ret = o;
	return PX_OK;
}
