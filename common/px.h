/* px.h -- the project's one error type and small shared helpers.
 *
 * Library modules (db, cloudapi, bidbrain, trainer) return enum px_err and put
 * the detail (file, record, field, SQL or AWS message) in an optional
 * struct px_error out-param, and never exit; programs do.  db, cloudapi
 * and bidbrain never log.  trainer/ does in a few places, all run inside
 * proteus-trainer: the roles through the log callback their program gives
 * (dist.h, dist_log_fn), a node's enrollment and the fetch of a job's data
 * by URL through log.h, and the `local` launcher copies its roles' stderr
 * to its own.
 */
#ifndef PX_H
#define PX_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define PX_VERSION "0.1.0"

enum px_err {
	PX_OK = 0,
	PX_ENOMEM,     /* out of memory */
	PX_EINVAL,     /* bad input: file, spec, config, message */
	PX_EIO,        /* read or write failed */
	PX_ENOENT,     /* no such file, market, job, ... */
	PX_EEXIST,     /* already there */
	PX_ETOOBIG,    /* a size read from outside is over its bound */
	PX_ETIMEDOUT,  /* a deadline passed */
	PX_EHTTP,      /* transport-level HTTP failure */
	PX_EAWS,       /* AWS answered with an error code */
	PX_EDB,        /* SQLite failed */
	PX_ECUDA,      /* CUDA or cuBLAS failed, or no device */
	PX_EPROTO,     /* wire protocol violation */
	PX_ECANCELED,  /* stopped on request (a callback said stop) */
	PX_EUNSUPP,    /* not supported in this build or world */
	PX_ERR_MAX,
	PX_ESYS = 0x10000000 /* OR'ed with an errno value */
};

#define PX_ERRMSG_MAX 1024

/* Error detail.  code mirrors the returned value; msg is a lower-case
 * sentence without a full stop, naming the file/line/record/field. */
struct px_error {
	enum px_err code;
	char msg[PX_ERRMSG_MAX];
};

const char *px_strerror(enum px_err e);

/* Record an error in *e (which may be NULL) and return code, so that
 * callers can write: return px_errorf(err, PX_EINVAL, "bad '%s'", x); */
enum px_err px_errorf(struct px_error *e, enum px_err code,
		      const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Prepend context ("file 'x': ") to an existing message in *e. */
void px_error_prefix(struct px_error *e, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Clear *e (may be NULL). */
void px_error_clear(struct px_error *e);

/* Money and time units used across the project. */
#define PX_USEC_PER_SEC INT64_C(1000000)
#define PX_UUSD_PER_USD INT64_C(1000000)

/* Parse a decimal USD amount ("0.230000", "21", "1.5") into integer
 * micro-USD without going through floating point.  Rejects signs, exponents,
 * empty input, more than 6 non-zero decimals and values over 10^9 USD. */
enum px_err px_parse_usd(const char *s, size_t len, int64_t *ret_uusd);

/* Format micro-USD as "12.345678" into buf (at least 32 bytes). */
char *px_format_usd(int64_t uusd, char *buf, size_t len);

/* Parse an ISO-8601 UTC time: "YYYY-MM-DDTHH:MM:SS[.fff][Z|+HH:MM|-HH:MM]"
 * (also "YYYY-MM-DD" and a space instead of 'T') or an integer Unix time
 * ("@1456348253" or digits only), into Unix seconds. */
enum px_err px_parse_time(const char *s, size_t len, int64_t *ret_s);

/* Format Unix seconds as "YYYY-MM-DDTHH:MM:SSZ" into buf (>= 24 bytes). */
char *px_format_time(int64_t t_s, char *buf, size_t len);

/* Terminal-safe text.  px_ctrl_at: the offset of the first control
 * character in s[0..len) (a byte below 0x20, 0x7f, or a UTF-8 C1 control
 * U+0080..U+009F), or -1 when there is none.  px_term_safe: s as text
 * that cannot move the cursor or start an escape sequence, for every
 * table and message that prints a stored or read string: \t, \n, \r,
 * \\ and \xNN for the other control bytes; truncated to fit buf
 * (len >= 1), always terminated.  Returns buf. */
long px_ctrl_at(const char *s, size_t len);
char *px_term_safe(const char *s, char *buf, size_t len);
#define PX_TERM_SAFE_LEN(n) (4 * (n) + 1) /* room for n bytes escaped */

/* Overflow-checked allocation helpers; they return NULL only on OOM or
 * overflow.  px_strndup copies at most n bytes and terminates. */
void *px_calloc(size_t n, size_t size);
void *px_reallocarray(void *p, size_t n, size_t size);
char *px_strndup(const char *s, size_t n);

/* The value of hex digit c (either case), or -1. */
int px_hexval(char c);
/* b[n] as 2n lower-case hex digits and a NUL into out (2n + 1 bytes). */
void px_hex(const uint8_t *b, size_t n, char *out);

/* The median of v[n], sorting v in place: the middle value, the mean of
 * the two middle ones for an even n; 0 when n is 0. */
float px_median_f(float *v, size_t n);

/* Read len bytes from fd, again after EINTR: len, fewer at the end of
 * the file, or -1 (errno). */
ssize_t px_read_full(int fd, void *buf, size_t len);
/* fsync the folder that holds path (after a rename or link into it, so
 * that the name lasts): 0, or -1 (errno; EINVAL from a file system that
 * cannot is no error). */
int px_fsync_parent(const char *path);

/* A file written whole or not at all (`model -o`, plots): the bytes go
 * to a fresh temporary file beside path ("<path>.tmp.XXXXXX": O_EXCL and
 * O_NOFOLLOW, so nothing planted there, a symlink included, is written
 * through), which px_atomic_commit renames over path: a symlink at path
 * is replaced, never followed, and a failure leaves path as it was. */
struct px_atomic {
	int fd;                  /* the temporary file; -1: none */
	char tmp[4200];
};
/* Create the temporary file for path, mode (less the umask); a->fd is
 * open for writing.  0, or -1 (errno; ENAMETOOLONG for a path too long
 * for a->tmp). */
int px_atomic_open(struct px_atomic *a, const char *path, mode_t mode);
/* fsync and close a->fd, rename the file over path, fsync the folder.
 * 0, or -1 (errno) with the temporary file removed and path untouched.
 * a->fd is -1 after, whatever the result. */
int px_atomic_commit(struct px_atomic *a, const char *path);
/* Close and remove the temporary file (nothing else changes); a no-op
 * when there is none. */
void px_atomic_abort(struct px_atomic *a);

/* Read the whole file at path into a malloc'd buffer (*ret_buf, freed by
 * the caller; NUL-terminated, the NUL not counted in *ret_len).  Works for
 * pipes too.  Errors name path: PX_ENOENT, PX_ESYS|errno (open, read, and
 * EISDIR for a directory), PX_ETOOBIG for more than max bytes (checked
 * before reading when the size is known, and again while reading). */
enum px_err px_read_file(const char *path, size_t max, char **ret_buf,
			 size_t *ret_len, struct px_error *err);

/* Opening a file for someone else.  A daemon that reads a file a client
 * named (a job's trace, price table, snapshot, data) sets a guard on the
 * thread that reads it; every open through px_open_input (px_read_file,
 * the trace reader and the data readers use it) then obeys it:
 *  - the path is resolved once (an O_PATH descriptor), with the
 *    submitter's rights where it names a submitter, and refused at a
 *    /proc magic link anywhere on the way (/proc/self/fd/N, /dev/fd/N,
 *    /proc/PID/root: the daemon's own descriptors); then that very inode
 *    is opened for reading, never the path again;
 *  - regular files only, opened without blocking (a FIFO, a device, a
 *    socket or a directory is refused at once, named as what it is);
 *  - never one of the daemon's own files (px_own_add: by device and
 *    inode, so a hard link or a bind mount is known too, and anything
 *    in one of its own folders), unless own_ok (the daemon reading its
 *    own private copies).  Nothing is opened for reading before these
 *    checks, so no POSIX lock the daemon holds (SQLite's) is ever dropped
 *    by the close of a descriptor of that file;
 *  - at most max_bytes (fstat, and again while reading where the reader
 *    counts);
 *  - with the submitter's rights: uid/gid/groups become the thread's file
 *    system identity for the open (setfsuid/setfsgid/setgroups act on the
 *    calling thread only) where this process may take them; where it may
 *    not (proteusd not root), the file's mode must let that user read it,
 *    or the open is refused as EACCES, before a byte is read;
 *  - a path in pins is not resolved again: its pinned descriptor (opened
 *    under these rules before) is opened anew (/proc/self/fd: the same
 *    file, an offset of its own);
 *  - until deadline_us (monotonic; 0: none): px_guard_expired() says when
 *    a long read must stop.
 * Without a guard (the CLI reading its own user's files) px_open_input is a
 * plain open, pipes included. */
#define PX_GUARD_GROUPS_MAX 64
struct px_pin {
	const char *path;             /* as the readers will name it */
	int fd;                       /* opened by px_open_input */
};
struct px_guard {
	bool as_user;                 /* open with uid/gid/groups' rights */
	bool own_ok;                  /* the daemon's own files allowed */
	uint32_t uid, gid;
	uint32_t groups[PX_GUARD_GROUPS_MAX];
	int ngroups;                  /* -1: unknown (gid only) */
	uint64_t max_bytes;           /* 0: no bound */
	uint64_t deadline_us;         /* px_now_mono_us() bound, 0: none */
	const struct px_guard *parent; /* its deadline binds too (NULL) */
	const struct px_pin *pins;    /* npins of them (NULL) */
	int npins;
};
/* The guard of this thread: g itself (not a copy), which must outlive its
 * use; NULL clears it.  px_guard_stop: from another thread, make g's
 * reads stop now (a daemon shutting down). */
void px_guard_set(const struct px_guard *g);
void px_guard_stop(struct px_guard *g);
const struct px_guard *px_guard_get(void);
bool px_guard_expired(void);
/* open(path, O_RDONLY) under the thread's guard; the fd, or -1 with err
 * naming path.  Errors: PX_ENOENT, PX_ESYS|errno (EACCES, EISDIR, ...),
 * PX_EINVAL (not a regular file, a magic link, one of the daemon's own,
 * not the submitter's to read, under a guard), PX_ETOOBIG. */
int px_open_input(const char *path, struct px_error *err);
/* The daemon's own files (dir false: its database, -wal, -shm, lock,
 * configuration) and folders (dir true: its job folders), which no
 * guarded open may name (at most 32; the path is stat'ed at each check,
 * so a file made later, a -wal, counts once it exists).  px_own_clear:
 * none (tests). */
void px_own_add(const char *path, bool dir);
void px_own_clear(void);

/* The folder of the running program (/proc/self/exe without its last
 * component), where shipped files are looked for beside it; "." when the
 * link cannot be read. */
void px_exe_dir(char *buf, size_t len);

/* Monotonic and wall clocks in microseconds. */
uint64_t px_now_mono_us(void);
int64_t px_now_wall_us(void);

#endif
