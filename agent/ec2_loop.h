/* ec2_loop.h -- drive an EC2 client (cloudapi/ec2.h) from proteusd's event
 * loop (loop.h): the client's socket hook becomes loop fds, its timer
 * hook one loop timer.  Nothing here blocks or polls; completion
 * callbacks run from inside the loop's fd and timer callbacks.
 *
 * Order: ec2_loop_new (fills the config's hooks), ec2_client_new from
 * that config, ec2_loop_bind, calls...; at the end ec2_client_free, then
 * ec2_loop_free.
 */
#ifndef PX_EC2_LOOP_H
#define PX_EC2_LOOP_H

#include "../cloudapi/ec2.h"
#include "loop.h"

struct ec2_loop;

/* Fill cfg's socket_fn/timer_fn/hook_ctx so that a client made from cfg
 * is driven by l; *ret lives until ec2_loop_free (after
 * ec2_client_free). */
enum px_err ec2_loop_new(struct loop *l, struct ec2_config *cfg,
			 struct ec2_loop **ret, struct px_error *err);
/* The same adapter for any client of curl's multi interface whose hooks
 * have ec2.h's shapes (EC2_POLL_* for CURL_POLL_*): on_socket and
 * on_timeout are what ec2_client_on_socket/_on_timeout are to an EC2
 * client, called with the pointer given to ec2_loop_bind_to.  The client
 * tells the adapter through ec2_loop_socket_hook and ec2_loop_timer_hook
 * with the adapter as ctx. */
struct ec2_loop_ops {
	enum px_err (*on_socket)(void *c, int fd, int what);
	enum px_err (*on_timeout)(void *c);
};
enum px_err ec2_loop_new_for(struct loop *l, const struct ec2_loop_ops *ops,
			     struct ec2_loop **ret, struct px_error *err);
void ec2_loop_bind_to(struct ec2_loop *el, void *c);
void ec2_loop_socket_hook(int fd, int what, void *ctx);
void ec2_loop_timer_hook(long ms, void *ctx);

/* Tell the adapter the client made from cfg (before any call).  NULL
 * unbinds: an fd or timer event that still comes is then dropped instead
 * of reaching a client. */
void ec2_loop_bind(struct ec2_loop *el, struct ec2_client *c);
/* Stop watching what the client still had (nothing, after
 * ec2_client_free) and free.  NULL is a no-op. */
void ec2_loop_free(struct ec2_loop *el);

/* Fds watched now (for tests and the daemon's status). */
size_t ec2_loop_fds(const struct ec2_loop *el);
/* Hook requests the loop refused (loop_fd_add or loop_timer_add failing,
 * out of memory); each such call waits for curl's own timeout instead. */
uint64_t ec2_loop_errors(const struct ec2_loop *el);

#endif
