/* spawnattr.h -- how proteusd starts a child (a trainer's coordinator, a
 * local node, a notification command), the one way every spawn site
 * takes:
 * - in a process group of its own (killed as a whole), every signal
 *   unblocked and at its default (the daemon blocks the ones its loop
 *   takes through a signalfd, and a child inherits the mask);
 * - with the descriptors it is meant to have (0, 1 and 2, as the site's
 *   file actions make them) and no other of the daemon's: every one from
 *   3 up is closed in the child, close-on-exec or not (libcurl's wake-up
 *   socket pair, nanomsg's eventfds and the like have none);
 * - with an environment built from an allow-list (px_spawn_env), never
 *   the daemon's whole: no AWS_* credential, no job key but the one the
 *   site adds, no NOTIFY_SOCKET. */
#ifndef PX_SPAWNATTR_H
#define PX_SPAWNATTR_H

#include <spawn.h>
#include <sys/types.h>

/* Init at so; the caller destroys it (posix_spawnattr_destroy). */
void px_spawnattr_own_group(posix_spawnattr_t *at);

/* Append to fa (after the site's own actions: their dup2 sources are
 * closed too) the closing of every descriptor from `from` up in the
 * child.  0 or an errno value. */
int px_spawn_close_from(posix_spawn_file_actions_t *fa, int from);

/* posix_spawn path with argv and envp in a group of its own
 * (px_spawnattr_own_group), its 0, 1 and 2 as fa's actions make them
 * (those fa leaves alone: ours) and nothing else of ours
 * (px_spawn_close_from(fa, 3), appended here).  The caller inits and
 * destroys fa.  0 or an errno value (posix_spawn's). */
int px_spawn(pid_t *pid, const char *path, posix_spawn_file_actions_t *fa,
	     char *const argv[], char *const envp[]);

/* px_spawn_env's flags. */
/* A trainer role on this host (the coordinator, a local world's node):
 * its AWS credential chain is pointed at nothing (AWS_SHARED_CREDENTIALS_
 * FILE and AWS_CONFIG_FILE /dev/null, AWS_EC2_METADATA_DISABLED true), so
 * that it finds neither the daemon's ~/.aws nor the head node's instance
 * role for a URL a submitter named. */
#define PX_SPAWN_ENV_TRAINER 0x1u
/* With PX_SPAWN_ENV_TRAINER: the operator allows s3:// data with the
 * daemon's own credentials (a config key, off by default): the daemon's
 * AWS_* variables pass as they are and its chain is left alone.  Never
 * for a process the submitter controls, never for a notify command. */
#define PX_SPAWN_ENV_DAEMON_AWS 0x2u

/* A child's environment: the variables of ours on the allow-list
 * (spawnattr.c: PATH, HOME, LANG, LC_*, TZ, TMPDIR, the BLAS, OpenMP,
 * CUDA and sanitizer settings, ...), what flags add, then add[] ("K=V"
 * each, NULL-ended, may be NULL), which replaces ours of the same name.
 * Pointers into environ, add and static strings: free the array only.
 * NULL: out of memory. */
char **px_spawn_env(char *const *add, unsigned flags);

#endif
