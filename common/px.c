/* px.c -- error strings, money and time parsing, checked allocation. */
#include "px.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static const char *const px_err_names[PX_ERR_MAX] = {
	[PX_OK] = "success",
	[PX_ENOMEM] = "out of memory",
	[PX_EINVAL] = "invalid input",
	[PX_EIO] = "input/output error",
	[PX_ENOENT] = "not found",
	[PX_EEXIST] = "already exists",
	[PX_ETOOBIG] = "too big",
	[PX_ETIMEDOUT] = "timed out",
	[PX_EHTTP] = "http failure",
	[PX_EAWS] = "aws error",
	[PX_EDB] = "database error",
	[PX_ECUDA] = "cuda error",
	[PX_EPROTO] = "protocol error",
	[PX_ECANCELED] = "canceled",
	[PX_EUNSUPP] = "not supported",
};

const char *px_strerror(enum px_err e)
{
	if (e & PX_ESYS)
		return strerror(e & ~PX_ESYS);
	if (e >= 0 && e < PX_ERR_MAX && px_err_names[e])
		return px_err_names[e];
	return "unknown error";
}

enum px_err px_errorf(struct px_error *e, enum px_err code,
		      const char *fmt, ...)
{
	va_list ap;

	if (!e)
		return code;
	e->code = code;
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	va_end(ap);
	return code;
}

void px_error_prefix(struct px_error *e, const char *fmt, ...)
{
	char pre[PX_ERRMSG_MAX], old[PX_ERRMSG_MAX];
	va_list ap;

	if (!e)
		return;
	va_start(ap, fmt);
	vsnprintf(pre, sizeof(pre), fmt, ap);
	va_end(ap);
	size_t n = strnlen(pre, sizeof(pre) - 1);

	memcpy(old, e->msg, sizeof(old));
	if (n >= sizeof(e->msg))
		n = sizeof(e->msg) - 1;
	memcpy(e->msg, pre, n);
	snprintf(e->msg + n, sizeof(e->msg) - n, "%s", old);
}

void px_error_clear(struct px_error *e)
{
	if (!e)
		return;
	e->code = PX_OK;
	e->msg[0] = '\0';
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

enum px_err px_parse_usd(const char *s, size_t len, int64_t *ret_uusd)
{
	int64_t whole = 0, frac = 0;
	size_t i = 0, nint = 0, nfrac = 0;

	while (i < len && is_digit(s[i])) {
		if (whole > INT64_C(1000000000))
			return PX_EINVAL;
		whole = whole * 10 + (s[i] - '0');
		i++;
		nint++;
	}
	if (i < len && s[i] == '.') {
		i++;
		while (i < len && is_digit(s[i])) {
			if (nfrac < 6)
				frac = frac * 10 + (s[i] - '0');
			else if (s[i] != '0')
				return PX_EINVAL; /* below a micro-dollar */
			nfrac++;
			i++;
		}
	}
	if (i != len || (nint == 0 && nfrac == 0))
		return PX_EINVAL;
	for (size_t k = nfrac; k < 6; k++)
		frac *= 10;
	/* the bound is 10^9 USD to the last micro-dollar */
	if (whole > INT64_C(1000000000) ||
	    (whole == INT64_C(1000000000) && frac > 0))
		return PX_EINVAL;
	*ret_uusd = whole * PX_UUSD_PER_USD + frac;
	return PX_OK;
}

char *px_format_usd(int64_t uusd, char *buf, size_t len)
{
	const char *sign = "";
	uint64_t u = (uint64_t)uusd;

	if (uusd < 0) {
		sign = "-";
		u = (uint64_t)0 - (uint64_t)uusd;
	}
	snprintf(buf, len, "%s%llu.%06llu", sign,
		 (unsigned long long)(u / 1000000),
		 (unsigned long long)(u % 1000000));
	return buf;
}

/* Days since 1970-01-01 for a proleptic Gregorian date (H. Hinnant). */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	unsigned yoe = (unsigned)(y - era * 400);
	unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (int64_t)doe - 719468;
}

static int num(const char *s, size_t n)
{
	int v = 0;

	for (size_t i = 0; i < n; i++) {
		if (!is_digit(s[i]))
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	return v;
}

static bool leap(int y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

enum px_err px_parse_time(const char *s, size_t len, int64_t *ret_s)
{
	static const int mdays[12] = {31, 28, 31, 30, 31, 30,
				      31, 31, 30, 31, 30, 31};
	int y, mo, d, h = 0, mi = 0, se = 0;
	int64_t off = 0, t;
	size_t i;

	if (len > 0 && (s[0] == '@' || is_digit(s[0]))) {
		size_t start = s[0] == '@';
		bool all = len > start;
		for (i = start; i < len; i++)
			all = all && is_digit(s[i]);
		if (all && (s[0] == '@' || len - start > 8)) {
			if (len - start > 12)
				return PX_EINVAL;
			t = 0;
			for (i = start; i < len; i++)
				t = t * 10 + (s[i] - '0');
			*ret_s = t;
			return PX_OK;
		}
	}
	if (len < 10 || s[4] != '-' || s[7] != '-')
		return PX_EINVAL;
	y = num(s, 4);
	mo = num(s + 5, 2);
	d = num(s + 8, 2);
	if (y < 1970 || y > 9999 || mo < 1 || mo > 12 || d < 1)
		return PX_EINVAL;
	if (d > mdays[mo - 1] + (mo == 2 && leap(y)))
		return PX_EINVAL;
	i = 10;
	if (i < len) {
		if ((s[i] != 'T' && s[i] != ' ') || len < i + 9 ||
		    s[i + 3] != ':' || s[i + 6] != ':')
			return PX_EINVAL;
		h = num(s + i + 1, 2);
		mi = num(s + i + 4, 2);
		se = num(s + i + 7, 2);
		if (h < 0 || h > 23 || mi < 0 || mi > 59 || se < 0 || se > 60)
			return PX_EINVAL;
		i += 9;
		if (i < len && s[i] == '.') {
			size_t f = ++i;
			while (i < len && is_digit(s[i]))
				i++;
			if (i == f || i - f > 9)
				return PX_EINVAL;
		}
		if (i < len && s[i] == 'Z') {
			i++;
		} else if (i < len && (s[i] == '+' || s[i] == '-')) {
			int oh, om;
			if (len != i + 6 || s[i + 3] != ':')
				return PX_EINVAL;
			oh = num(s + i + 1, 2);
			om = num(s + i + 4, 2);
			if (oh < 0 || oh > 23 || om < 0 || om > 59)
				return PX_EINVAL;
			off = (int64_t)(oh * 3600 + om * 60);
			if (s[i] == '-')
				off = -off;
			i += 6;
		}
		if (i != len)
			return PX_EINVAL;
	}
	t = days_from_civil(y, (unsigned)mo, (unsigned)d) * 86400 +
	    h * 3600 + mi * 60 + se - off;
	*ret_s = t;
	return PX_OK;
}

char *px_format_time(int64_t t_s, char *buf, size_t len)
{
	struct tm tm;
	time_t tt = (time_t)t_s;

	if (!gmtime_r(&tt, &tm)) {
		snprintf(buf, len, "@%lld", (long long)t_s);
		return buf;
	}
	strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
	return buf;
}

void *px_calloc(size_t n, size_t size)
{
	return calloc(n ? n : 1, size ? size : 1);
}

void *px_reallocarray(void *p, size_t n, size_t size)
{
	if (size && n > SIZE_MAX / size) {
		errno = ENOMEM;
		return NULL;
	}
	size_t bytes = n * size;

	return realloc(p, bytes ? bytes : 1);
}

ssize_t px_read_full(int fd, void *buf, size_t len)
{
	uint8_t *p = buf;
	size_t done = 0;

	while (done < len) {
		ssize_t k = read(fd, p + done, len - done);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -1;
		if (k == 0)
			break;
		done += (size_t)k;
	}
	return (ssize_t)done;
}

int px_fsync_parent(const char *path)
{
	char *copy = strdup(path);
	int fd, e;

	if (!copy) {
		errno = ENOMEM;
		return -1;
	}
	fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	free(copy);
	if (fd < 0)
		return -1;
	if (fsync(fd) != 0 && errno != EINVAL) {
		e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	close(fd);
	return 0;
}

int px_atomic_open(struct px_atomic *a, const char *path, mode_t mode)
{
	mode_t um;

	a->fd = -1;
	if ((size_t)snprintf(a->tmp, sizeof a->tmp, "%s.tmp.XXXXXX", path) >=
	    sizeof a->tmp) {
		a->tmp[0] = '\0';
		errno = ENAMETOOLONG;
		return -1;
	}
	a->fd = mkostemp(a->tmp, O_CLOEXEC | O_NOFOLLOW);
	if (a->fd < 0) {
		a->tmp[0] = '\0';
		return -1;
	}
	um = umask(0);
	umask(um);
	if (fchmod(a->fd, mode & ~um) != 0) {
		int e = errno;

		px_atomic_abort(a);
		errno = e;
		return -1;
	}
	return 0;
}

int px_atomic_commit(struct px_atomic *a, const char *path)
{
	int fd = a->fd, e;

	a->fd = -1;
	if (fd < 0) {
		errno = EBADF;
		return -1;
	}
	if (fsync(fd) != 0) {
		e = errno;
		close(fd);
		goto fail;
	}
	if (close(fd) != 0 || rename(a->tmp, path) != 0) {
		e = errno;
		goto fail;
	}
	a->tmp[0] = '\0';
	return px_fsync_parent(path);
fail:
	(void)unlink(a->tmp);
	a->tmp[0] = '\0';
	errno = e;
	return -1;
}

void px_atomic_abort(struct px_atomic *a)
{
	if (a->fd >= 0)
		close(a->fd);
	a->fd = -1;
	if (a->tmp[0])
		(void)unlink(a->tmp);
	a->tmp[0] = '\0';
}

static int float_cmp(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;

	return (x > y) - (x < y);
}

float px_median_f(float *v, size_t n)
{
	if (!n)
		return 0;
	qsort(v, n, sizeof *v, float_cmp);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int px_hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

void px_hex(const uint8_t *b, size_t n, char *out)
{
	static const char hex[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = hex[b[i] >> 4];
		out[2 * i + 1] = hex[b[i] & 15];
	}
	out[2 * n] = 0;
}

char *px_strndup(const char *s, size_t n)
{
	return strndup(s, n);
}

uint64_t px_now_mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

int64_t px_now_wall_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

long px_ctrl_at(const char *s, size_t len)
{
	const unsigned char *u = (const unsigned char *)s;

	for (size_t i = 0; i < len; i++) {
		if (u[i] < 0x20 || u[i] == 0x7f)
			return (long)i;
		if (u[i] == 0xc2 && i + 1 < len && u[i + 1] >= 0x80 &&
		    u[i + 1] <= 0x9f)
			return (long)i;
	}
	return -1;
}

char *px_term_safe(const char *s, char *buf, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *u = (const unsigned char *)s;
	size_t j = 0;

	if (!len)
		return buf;
	for (size_t i = 0; s && u[i]; i++) {
		char e[5];
		size_t n = 0;

		if (u[i] == '\t' || u[i] == '\n' || u[i] == '\r' ||
		    u[i] == '\\') {
			e[n++] = '\\';
			e[n++] = u[i] == '\t' ? 't' : u[i] == '\n' ? 'n' :
				 u[i] == '\r' ? 'r' : '\\';
		} else if (u[i] < 0x20 || u[i] == 0x7f ||
			   (u[i] == 0xc2 && u[i + 1] >= 0x80 &&
			    u[i + 1] <= 0x9f)) {
			unsigned char c = u[i] == 0xc2 ? u[++i] : u[i];

			e[n++] = '\\';
			e[n++] = 'x';
			e[n++] = hex[c >> 4];
			e[n++] = hex[c & 15];
		} else {
			e[n++] = (char)u[i];
		}
		if (j + n >= len)
			break;
		memcpy(buf + j, e, n);
		j += n;
	}
	buf[j] = '\0';
	return buf;
}

void px_exe_dir(char *buf, size_t len)
{
	ssize_t n = len ? readlink("/proc/self/exe", buf, len - 1) : -1;
	char *slash;

	if (n <= 0) {
		snprintf(buf, len, ".");
		return;
	}
	buf[n] = '\0';
	slash = strrchr(buf, '/');
	if (slash)
		*slash = '\0';
}
