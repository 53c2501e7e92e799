/* pxrun.c -- spawn helpers for the integration tests. */
#include "pxrun.h"

#include "../../common/px.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <netinet/in.h>
#include <fcntl.h>
#include <limits.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

char *px_test_read_file(const char *path, size_t *len)
{
	const struct px_guard *g = px_guard_get();
	struct px_error err = { 0 };
	char *buf = NULL;
	size_t n = 0;
	enum px_err rc;

	px_guard_set(NULL);
	rc = px_read_file(path, (size_t)1 << 30, &buf, &n, &err);
	px_guard_set(g);
	if (rc != PX_OK)
		return NULL;
	if (len)
		*len = n;
	return buf;
}

/* What the program wrote to fd (a temporary file, unlinked: read anew
 * through /proc/self/fd, from its start). */
static char *captured(int fd)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	return px_test_read_file(path, NULL);
}

static int tmpfd(void)
{
	char path[] = "/tmp/pxrun.XXXXXX";
	int fd = mkstemp(path);

	if (fd >= 0)
		unlink(path);
	return fd;
}

/* The programs' environment: ours, except that under `make check`
 * PX_CHILD_LSAN_OPTIONS, when set, becomes their LSAN_OPTIONS (the
 * nanomsg suppression, tests/lsan-children.supp, is for the spawned
 * processes only: the in-process tests keep full leak checking). */
static char **child_env(void)
{
	const char *lsan = getenv("PX_CHILD_LSAN_OPTIONS");
	size_t n = 0, k = 0;
	char **envp;

	while (environ[n])
		n++;
	envp = calloc(n + 2, sizeof(char *));
	if (!envp)
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (!lsan || strncmp(environ[i], "LSAN_OPTIONS=", 13) != 0)
			envp[k++] = strdup(environ[i]);
	if (lsan && asprintf(&envp[k++], "LSAN_OPTIONS=%s", lsan) < 0)
		envp[k - 1] = NULL;
	for (size_t i = 0; i < k; i++) {
		if (!envp[i]) {
			for (size_t j = 0; j < k; j++)
				free(envp[j]);
			free(envp);
			return NULL;
		}
	}
	return envp;
}

static void free_env(char **envp)
{
	for (size_t i = 0; envp && envp[i]; i++)
		free(envp[i]);
	free(envp);
}

int pxrun(struct pxrun *r, int timeout_s, const char *prog,
	  const char *const *argv)
{
	const char *build = getenv("PX_BUILD");
	posix_spawn_file_actions_t fa;
	char path[4096];
	char **envp;
	int ofd = tmpfd(), efd = tmpfd(), st = 0;
	pid_t pid;
	time_t deadline = time(NULL) + timeout_s;

	memset(r, 0, sizeof(*r));
	if (prog[0] == '/') /* a program of the system's (python3) */
		snprintf(path, sizeof(path), "%s", prog);
	else
		snprintf(path, sizeof(path), "%s/%s", build ? build : "build",
			 prog);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, ofd, 1);
	posix_spawn_file_actions_adddup2(&fa, efd, 2);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	envp = child_env();
	if (!envp || posix_spawn(&pid, path, &fa, NULL, (char *const *)argv,
				 envp)) {
		posix_spawn_file_actions_destroy(&fa);
		free_env(envp);
		close(ofd);
		close(efd);
		return -1;
	}
	posix_spawn_file_actions_destroy(&fa);
	free_env(envp);
	for (;;) {
		pid_t w = waitpid(pid, &st, WNOHANG);
		if (w == pid)
			break;
		if (time(NULL) > deadline) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			break;
		}
		usleep(2000);
	}
	r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	r->out = captured(ofd);
	r->err = captured(efd);
	close(ofd);
	close(efd);
	return 0;
}

void pxrun_free(struct pxrun *r)
{
	free(r->out);
	free(r->err);
	r->out = r->err = NULL;
}

static char *join(const char *env, const char *dflt, const char *rel)
{
	const char *base = getenv(env);
	size_t n;
	char *p;

	if (!base)
		base = dflt;
	n = strlen(base) + strlen(rel) + 2;
	p = malloc(n);
	if (p)
		snprintf(p, n, "%s/%s", base, rel);
	return p;
}

char *px_src_path(const char *rel)
{
	return join("PX_SRC", ".", rel);
}

char *px_shared_path(const char *rel)
{
	return join("PX_SHARED", "../shared", rel);
}

int px_put_file(const char *root, const char *rel, const char *text)
{
	char path[PATH_MAX];
	FILE *f;
	int bad;

	for (const char *p = strchr(rel, '/'); p; p = strchr(p + 1, '/')) {
		snprintf(path, sizeof path, "%s/%.*s", root, (int)(p - rel),
			 rel);
		if (mkdir(path, 0700) != 0 && errno != EEXIST)
			return -1;
	}
	snprintf(path, sizeof path, "%s/%s", root, rel);
	f = fopen(path, "w");
	if (!f)
		return -1;
	bad = fputs(text, f) < 0;
	return fclose(f) != 0 || bad ? -1 : 0;
}

char *px_tmpdir(void)
{
	char *d = strdup("/tmp/pxtest.XXXXXX");

	if (d && !mkdtemp(d)) {
		free(d);
		return NULL;
	}
	return d;
}

void px_rmtree(const char *dir)
{
	char cmd[4200];

	if (!dir || strncmp(dir, "/tmp/pxtest.", 12))
		return;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "pxrun: could not remove %s\n", dir);
}

int px_test_cert(const char *path)
{
	EVP_PKEY *k = EVP_RSA_gen(2048);
	X509 *x = X509_new();
	X509_NAME *n;
	FILE *f = fopen(path, "w");
	int r = -1;

	if (!k || !x || !f)
		goto out;
	ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
	X509_gmtime_adj(X509_getm_notBefore(x), -3600);
	X509_gmtime_adj(X509_getm_notAfter(x), 3600);
	X509_set_pubkey(x, k);
	n = X509_get_subject_name(x);
	X509_NAME_add_entry_by_txt(n, "O", MBSTRING_ASC,
				   (const unsigned char *)"proteus test", -1,
				   -1, 0);
	X509_set_issuer_name(x, n);
	if (X509_sign(x, k, EVP_sha256()) > 0 && PEM_write_X509(f, x))
		r = 0;
out:
	if (f && fclose(f))
		r = -1;
	X509_free(x);
	EVP_PKEY_free(k);
	return r;
}

int px_test_reaches_as(unsigned uid, int port)
{
	pid_t pid = fork();
	int st = -1;

	if (pid == 0) {
		struct sockaddr_in a = { .sin_family = AF_INET,
					 .sin_port = htons((uint16_t)port),
					 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
		struct timeval tv = { 1, 0 };
		int fd;

		if (setgid((gid_t)uid) != 0 || setuid((uid_t)uid) != 0)
			_exit(2);
		fd = socket(AF_INET, SOCK_STREAM, 0);
		(void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
		_exit(connect(fd, (struct sockaddr *)&a, sizeof a) == 0 ? 0 :
		      1);
	}
	while (pid > 0 && waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (pid < 0 || !WIFEXITED(st) || WEXITSTATUS(st) > 1)
		return -1;
	return WEXITSTATUS(st) == 0;
}

json_t *px_json_parse(const char *s)
{
	json_error_t je;
	json_t *j = json_loads(s, 0, &je);

	cr_assert_not_null(j, "bad json: %s\n%s", je.text, s);
	return j;
}

double px_json_num(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);

	cr_assert(json_is_number(v), "field %s not a number", k);
	return json_number_value(v);
}
