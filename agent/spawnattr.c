/* spawnattr.c -- how proteusd starts a child (spawnattr.h). */
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "spawnattr.h"

extern char **environ;

void px_spawnattr_own_group(posix_spawnattr_t *at)
{
	sigset_t none, all;

	sigemptyset(&none);
	sigfillset(&all);
	posix_spawnattr_init(at);
	posix_spawnattr_setpgroup(at, 0);
	posix_spawnattr_setsigmask(at, &none);
	posix_spawnattr_setsigdefault(at, &all);
	posix_spawnattr_setflags(at, POSIX_SPAWN_SETPGROUP |
				 POSIX_SPAWN_SETSIGMASK |
				 POSIX_SPAWN_SETSIGDEF);
}

int px_spawn_close_from(posix_spawn_file_actions_t *fa, int from)
{
	/* glibc 2.34: close_range in the child, whatever the number of
	 * descriptors; a failure fails the spawn (never a silent leak) */
	return posix_spawn_file_actions_addclosefrom_np(fa, from);
}

int px_spawn(pid_t *pid, const char *path, posix_spawn_file_actions_t *fa,
	     char *const argv[], char *const envp[])
{
	posix_spawnattr_t at;
	int rc = px_spawn_close_from(fa, 3);

	if (rc)
		return rc;
	px_spawnattr_own_group(&at);
	rc = posix_spawn(pid, path, fa, &at, argv, envp);
	posix_spawnattr_destroy(&at);
	return rc;
}

/* ---- the environment ---- */

/* What a child may have of ours: names, and prefixes ending in '_' (or
 * "GOTO", OpenBLAS's old names).  Locale, time zone, temporary folder,
 * the search paths, the state folder (the trainer's data cache under
 * systemd), the BLAS/OpenMP/CUDA knobs an operator sets for speed, the
 * sanitizers' options (make check) and the trainer's test hooks (they
 * change what is decided, never a credential). */
static const char *const keep_name[] = {
	"PATH", "HOME", "LANG", "LANGUAGE", "TZ", "TMPDIR", "LD_LIBRARY_PATH",
	"STATE_DIRECTORY", "PROTEUS_CUDA_LIB", "ASAN_OPTIONS",
	"UBSAN_OPTIONS", "LSAN_OPTIONS", "TSAN_OPTIONS",
	"PX_BLAS_TEST_LIBRARY", "PX_BLAS_TEST_BAD_CORE", NULL,
};
static const char *const keep_prefix[] = {
	"LC_", "OPENBLAS_", "OMP_", "GOTO", "CUDA_", NULL,
};

/* What a trainer role gets when the daemon's credentials are not for it:
 * a chain that finds none (cloudapi/awscred.c reads these). */
static char *const no_aws_chain[] = {
	"AWS_SHARED_CREDENTIALS_FILE=/dev/null", "AWS_CONFIG_FILE=/dev/null",
	"AWS_EC2_METADATA_DISABLED=true", NULL,
};

/* The length of e's name ("K=V": K; no '=': all of it). */
static size_t name_len(const char *e)
{
	const char *eq = strchr(e, '=');

	return eq ? (size_t)(eq - e) : strlen(e);
}

static bool same_name(const char *a, const char *b)
{
	size_t n = name_len(a);

	return n == name_len(b) && !strncmp(a, b, n);
}

static bool kept(const char *e, unsigned flags)
{
	size_t n = name_len(e);

	if (!e[n])
		return false;           /* no '=': not a variable */
	if ((flags & PX_SPAWN_ENV_TRAINER) &&
	    (flags & PX_SPAWN_ENV_DAEMON_AWS) && !strncmp(e, "AWS_", 4))
		return true;
	for (const char *const *k = keep_name; *k; k++)
		if (strlen(*k) == n && !strncmp(e, *k, n))
			return true;
	for (const char *const *p = keep_prefix; *p; p++)
		if (n > strlen(*p) && !strncmp(e, *p, strlen(*p)))
			return true;
	return false;
}

static bool in(char *const *v, size_t n, const char *e)
{
	for (size_t i = 0; i < n; i++)
		if (same_name(v[i], e))
			return true;
	return false;
}

char **px_spawn_env(char *const *add, unsigned flags)
{
	char *const *chain = (flags & PX_SPAWN_ENV_TRAINER) &&
			     !(flags & PX_SPAWN_ENV_DAEMON_AWS) ?
			     no_aws_chain : NULL;
	size_t ne = 0, na = 0, nc = 0, k = 0;
	char **v;

	while (environ && environ[ne])
		ne++;
	while (add && add[na])
		na++;
	while (chain && chain[nc])
		nc++;
	v = calloc(ne + nc + na + 1, sizeof *v);
	if (!v)
		return NULL;
	/* add[] wins over the chain's, which wins over ours */
	for (size_t i = 0; i < ne; i++)
		if (kept(environ[i], flags) && !in(add, na, environ[i]) &&
		    !in(chain, nc, environ[i]) && !in(v, k, environ[i]))
			v[k++] = environ[i];
	for (size_t i = 0; i < nc; i++)
		if (!in(add, na, chain[i]))
			v[k++] = chain[i];
	for (size_t i = 0; i < na; i++)
		if (!in(v, k, add[i]))
			v[k++] = add[i];
	return v;
}
