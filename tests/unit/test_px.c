/* test_px.c -- money/time parsing, error helpers, bounded file reads. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../common/px.h"

static int64_t usd(const char *s)
{
	int64_t v = -1;
	cr_assert_eq(px_parse_usd(s, strlen(s), &v), PX_OK, "parse '%s'", s);
	return v;
}

static void usd_bad(const char *s)
{
	int64_t v = 42;
	cr_assert_eq(px_parse_usd(s, strlen(s), &v), PX_EINVAL,
		     "'%s' accepted", s);
	cr_assert_eq(v, 42, "'%s' clobbered the result", s);
}

Test(px, parse_usd)
{
	cr_assert_eq(usd("0.230000"), 230000);
	cr_assert_eq(usd("21.000000"), 21000000);
	cr_assert_eq(usd("1.5"), 1500000);
	cr_assert_eq(usd("7"), 7000000);
	cr_assert_eq(usd(".25"), 250000);
	cr_assert_eq(usd("0.0071000000"), 7100);
	cr_assert_eq(usd("0"), 0);
	usd_bad("");
	usd_bad("-0.1");
	usd_bad("+1");
	usd_bad("1e3");
	usd_bad("abc");
	usd_bad("1.2.3");
	usd_bad(".");
	usd_bad("0.0000001");
	usd_bad("99999999999999");
	/* the bound, 10^9 USD, holds to the last digit */
	cr_assert_eq(usd("1000000000"), INT64_C(1000000000000000));
	cr_assert_eq(usd("1000000000.000000"), INT64_C(1000000000000000));
	cr_assert_eq(usd("999999999.999999"), INT64_C(999999999999999));
	usd_bad("1000000000.000001");
	usd_bad("1000000000.5");
	usd_bad("1000000001");
	usd_bad("1 ");
}

Test(px, term_safe)
{
	char b[64];

	cr_assert_str_eq(px_term_safe("c4.xlarge", b, sizeof b), "c4.xlarge");
	cr_assert_str_eq(px_term_safe("a\tb\nc\rd\\e", b, sizeof b),
			 "a\\tb\\nc\\rd\\\\e");
	cr_assert_str_eq(px_term_safe("x\x1b[31my\x7f", b, sizeof b),
			 "x\\x1b[31my\\x7f");
	/* UTF-8 passes, its C1 controls (U+009B, a CSI) do not */
	cr_assert_str_eq(px_term_safe("\xc3\xa9\xc2\x9b", b, sizeof b),
			 "\xc3\xa9\\x9b");
	/* cut whole: never half an escape */
	cr_assert_str_eq(px_term_safe("ab\x1b", b, 5), "ab");
	cr_assert_eq(px_ctrl_at("abc", 3), -1);
	cr_assert_eq(px_ctrl_at("ab\tc", 4), 2);
	cr_assert_eq(px_ctrl_at("a\xc2\x85", 3), 1);
	cr_assert_eq(px_ctrl_at("\xc3\xa9", 2), -1);
}

Test(px, format_usd)
{
	char b[32];
	cr_assert_str_eq(px_format_usd(230000, b, sizeof b), "0.230000");
	cr_assert_str_eq(px_format_usd(-1500000, b, sizeof b), "-1.500000");
	cr_assert_str_eq(px_format_usd(INT64_MIN, b, sizeof b),
			 "-9223372036854.775808");
}

static int64_t tm(const char *s)
{
	int64_t v = -1;
	cr_assert_eq(px_parse_time(s, strlen(s), &v), PX_OK, "parse '%s'", s);
	return v;
}

static void tm_bad(const char *s)
{
	int64_t v = 42;
	cr_assert_eq(px_parse_time(s, strlen(s), &v), PX_EINVAL,
		     "'%s' accepted", s);
	cr_assert_eq(v, 42);
}

Test(px, parse_time)
{
	/* date -u -d 2016-02-24T21:10:53Z +%s */
	cr_assert_eq(tm("2016-02-24T21:10:53.000Z"), 1456348253);
	cr_assert_eq(tm("2016-02-24T21:10:53Z"), 1456348253);
	cr_assert_eq(tm("2016-02-24T21:10:53"), 1456348253);
	cr_assert_eq(tm("2016-02-24 21:10:53"), 1456348253);
	cr_assert_eq(tm("2016-02-24T23:10:53+02:00"), 1456348253);
	cr_assert_eq(tm("2016-02-24T20:10:53-01:00"), 1456348253);
	cr_assert_eq(tm("2016-02-24"), 1456272000);
	cr_assert_eq(tm("2016-02-29"), 1456704000);
	cr_assert_eq(tm("1970-01-01T00:00:00Z"), 0);
	cr_assert_eq(tm("@1456348253"), 1456348253);
	cr_assert_eq(tm("1456348253"), 1456348253);
	tm_bad("");
	tm_bad("2015-02-29");
	tm_bad("2016-13-01");
	tm_bad("2016-00-10");
	tm_bad("2016-02-24T25:00:00Z");
	tm_bad("2016-02-24T21:10:53.Z");
	tm_bad("2016-02-24T21:10:53.000ZZ");
	tm_bad("2016-02-24T21:10:53+0200");
	tm_bad("yesterday");
	tm_bad("2016/02/24");
	tm_bad("@");
	tm_bad("@12x");
}

Test(px, format_time)
{
	char b[32];
	cr_assert_str_eq(px_format_time(1456348253, b, sizeof b),
			 "2016-02-24T21:10:53Z");
}

Test(px, errors)
{
	struct px_error e;
	px_error_clear(&e);
	cr_assert_eq(px_errorf(&e, PX_EINVAL, "field '%s'", "x"), PX_EINVAL);
	px_error_prefix(&e, "%s: ", "f.json");
	cr_assert_str_eq(e.msg, "f.json: field 'x'");
	cr_assert_eq(e.code, PX_EINVAL);
	cr_assert_eq(px_errorf(NULL, PX_EIO, "x"), PX_EIO);
	cr_assert_str_eq(px_strerror(PX_ENOMEM), "out of memory");
	cr_assert_str_eq(px_strerror(PX_ESYS | 2), "No such file or directory");
}

Test(px, read_file)
{
	char dir[] = "/tmp/pxread.XXXXXX", path[64];
	char *buf = NULL;
	size_t len = 0;
	struct px_error e = {0};
	FILE *f;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/f", dir);
	f = fopen(path, "w");
	cr_assert_not_null(f);
	fputs("0123456789", f);
	fclose(f);
	cr_assert_eq(px_read_file(path, 10, &buf, &len, &e), PX_OK, "%s",
		     e.msg);
	cr_assert_eq(len, 10);
	cr_assert_str_eq(buf, "0123456789");
	free(buf);
	buf = NULL;
	cr_assert_eq(px_read_file(path, 9, &buf, &len, &e), PX_ETOOBIG);
	cr_assert(strstr(e.msg, path) && strstr(e.msg, "limit of 9"), "%s",
		  e.msg);
	cr_assert_null(buf);
	cr_assert_eq(px_read_file(dir, 100, &buf, &len, &e), PX_ESYS | EISDIR);
	snprintf(path, sizeof(path), "%s/none", dir);
	cr_assert_eq(px_read_file(path, 100, &buf, &len, &e), PX_ENOENT);
	cr_assert(strstr(e.msg, "/none"), "%s", e.msg);
	/* a pipe has no size up front: the bound holds while reading */
	cr_assert_eq(px_read_file("/dev/zero", 4096, &buf, &len, &e),
		     PX_ETOOBIG);
	snprintf(path, sizeof(path), "%s/f", dir);
	unlink(path);
	rmdir(dir);
}
