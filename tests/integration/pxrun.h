/* pxrun.h -- run a built program for integration tests and capture its
 * exit status, standard output and standard error. */
#ifndef PX_PXRUN_H
#define PX_PXRUN_H

#include <jansson.h>
#include <stddef.h>

struct pxrun {
	int status;  /* exit code, or 128+signal */
	char *out;   /* captured stdout, NUL-terminated (free with pxrun_free) */
	char *err;   /* captured stderr */
};

/* Run $PX_BUILD/<prog> (prog itself when it is absolute) with argv (NULL-terminated, argv[0] included) and
 * wait for it, at most timeout_s seconds (then it is killed). */
int pxrun(struct pxrun *r, int timeout_s, const char *prog,
	  const char *const *argv);
void pxrun_free(struct pxrun *r);

/* The tests' one whole-file reader (scripts/check-tests refuses another):
 * the file at path, NUL-terminated in a malloc'd buffer (free it), its
 * length (the NUL not counted) in *len when len is not NULL; NULL when it
 * cannot be read (missing, a directory, over 1 GiB).  px_read_file, with
 * no guard on the thread while it reads (the test's own file). */
char *px_test_read_file(const char *path, size_t *len);

/* Write text into root/rel, the folders on the way made (0700); 0, or -1
 * with errno. */
int px_put_file(const char *root, const char *rel, const char *text);

/* Path helpers: $PX_SRC/<rel>, $PX_SHARED/<rel>, a fresh temp dir. */
char *px_src_path(const char *rel);
char *px_shared_path(const char *rel);
char *px_tmpdir(void);
void px_rmtree(const char *dir);
/* Write a self-signed RSA-2048 certificate (PEM) at path, as the
 * region's AWS certificate of identity documents would be (the ec2
 * world's ec2_identity_cert); 0, or -1. */
int px_test_cert(const char *path);

/* Whether uid (its gid the same number) can open a TCP connection to
 * 127.0.0.1:port, from a child that becomes it (refused, or no answer in
 * a second: false).  -1 when the child could not become uid. */
int px_test_reaches_as(unsigned uid, int port);

/* A command's JSON output parsed (the test fails, naming the text, when
 * it is not JSON), and a member that must be a number. */
json_t *px_json_parse(const char *s);
double px_json_num(json_t *o, const char *k);

#endif
