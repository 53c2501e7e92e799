/* test_pchan.c -- the program channel's sealed messages (common/pchan.h):
 * what one end seals the other opens, with its header's session, counter
 * and direction; a flipped bit anywhere, another job's key, a cut
 * message, a foreign magic or version is refused; the size is bounded. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/pchan.h"

static void keys(struct pchan_key *a, struct pchan_key *b)
{
	uint8_t ka[32], kb[32];
	struct px_error e = {0};

	memset(ka, 7, sizeof ka);
	memset(kb, 7, sizeof kb);
	kb[31] ^= 1;
	cr_assert_eq(pchan_key_from_job(ka, sizeof ka, a, &e), PX_OK, "%s",
		     e.msg);
	cr_assert_eq(pchan_key_from_job(kb, sizeof kb, b, &e), PX_OK, "%s",
		     e.msg);
	/* the channel's key is not the job key itself */
	cr_assert(memcmp(a->k, ka, 32));
}

Test(pchan, what_is_sealed_opens_with_its_header)
{
	struct pchan_key k, other;
	struct px_error e = {0};
	json_t *m = json_pack("{s:s, s:I}", "op", "beat", "inst", 3), *got;
	uint8_t *buf;
	size_t n;
	enum pchan_dir dir;
	uint64_t s, c;

	keys(&k, &other);
	cr_assert_eq(pchan_seal(&k, PCHAN_REQUEST, 0x1122334455667788ull, 42,
				m, &buf, &n, &e), PX_OK, "%s", e.msg);
	/* encrypted: the text is not in it */
	cr_assert_null(memmem(buf, n, "beat", 4));
	cr_assert_eq(pchan_open(&k, buf, n, &dir, &s, &c, &got, &e), PX_OK,
		     "%s", e.msg);
	cr_assert_eq(dir, PCHAN_REQUEST);
	cr_assert_eq(s, 0x1122334455667788ull);
	cr_assert_eq(c, 42);
	cr_assert(json_equal(m, got));
	json_decref(got);
	/* another job's key */
	cr_assert_eq(pchan_open(&other, buf, n, &dir, &s, &c, &got, &e),
		     PX_EPROTO);
	cr_assert_null(got);
	/* every bit matters: header, body and tag */
	for (size_t i = 0; i < n; i++) {
		buf[i] ^= 0x10;
		cr_assert_neq(pchan_open(&k, buf, n, &dir, &s, &c, &got, &e),
			      PX_OK, "byte %zu flipped was taken", i);
		cr_assert_null(got);
		buf[i] ^= 0x10;
	}
	/* cut short */
	cr_assert_eq(pchan_open(&k, buf, n - 1, &dir, &s, &c, &got, &e),
		     PX_EPROTO);
	cr_assert_eq(pchan_open(&k, buf, 10, &dir, &s, &c, &got, &e),
		     PX_EPROTO);
	free(buf);
	json_decref(m);
}

Test(pchan, a_message_is_bounded_and_an_object)
{
	struct pchan_key k, other;
	struct px_error e = {0};
	char *big = malloc(PCHAN_MSG_MAX);
	json_t *m;
	uint8_t *buf;
	size_t n;

	keys(&k, &other);
	memset(big, 'a', PCHAN_MSG_MAX - 1);
	big[PCHAN_MSG_MAX - 1] = 0;
	m = json_pack("{s:s}", "data", big);
	cr_assert_eq(pchan_seal(&k, PCHAN_REPLY, 1, 1, m, &buf, &n, &e),
		     PX_ETOOBIG);
	cr_assert_null(buf);
	json_decref(m);
	free(big);
	cr_assert_neq(pchan_key_from_job((const uint8_t *)"short", 5, &k, &e),
		      PX_OK, "a 5-byte job key was taken");
}
