/* spawnattr.h -- how proteusd starts a child (a trainer's coordinator, a
 * local node, a notification command): in a process group of its own
 * (killed as a whole), every signal unblocked and at its default (the
 * daemon blocks the ones its loop takes through a signalfd, and a child
 * inherits the mask). */
#ifndef PX_SPAWNATTR_H
#define PX_SPAWNATTR_H

#include <spawn.h>

/* Init at so; the caller destroys it (posix_spawnattr_destroy). */
void px_spawnattr_own_group(posix_spawnattr_t *at);

#endif
