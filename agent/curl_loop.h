/* curl_loop.h -- a client of curl's multi interface driven from
 * proteusd's event loop (loop.h): the EC2 client (cloudapi/ec2_api.h) and
 * the webhooks (notify.c).  The client's socket hook becomes loop fds,
 * its timer hook one loop timer.  Nothing here blocks or polls;
 * completion callbacks run from inside the loop's fd and timer callbacks.
 *
 * Order, for an EC2 client: curl_loop_new_ec2 (fills the config's
 * hooks), ec2_client_new from that config, curl_loop_bind_ec2, calls...;
 * at the end ec2_client_free, then curl_loop_free.
 */
#ifndef PX_CURL_LOOP_H
#define PX_CURL_LOOP_H

#include "../cloudapi/ec2_api.h"
#include "loop.h"

struct curl_loop;

/* Fill cfg's socket_fn/timer_fn/hook_ctx so that a client made from cfg
 * is driven by l; *ret lives until curl_loop_free (after
 * ec2_client_free). */
enum px_err curl_loop_new_ec2(struct loop *l, struct ec2_config *cfg,
			      struct curl_loop **ret, struct px_error *err);
/* The same adapter for any client of curl's multi interface whose hooks
 * have ec2_api.h's shapes (EC2_POLL_* for CURL_POLL_*): on_socket and
 * on_timeout are what ec2_client_on_socket/_on_timeout are to an EC2
 * client, called with the pointer given to curl_loop_bind.  The client
 * tells the adapter through curl_loop_socket_hook and curl_loop_timer_hook
 * with the adapter as ctx. */
struct curl_loop_ops {
	enum px_err (*on_socket)(void *c, int fd, int what);
	enum px_err (*on_timeout)(void *c);
};
enum px_err curl_loop_new(struct loop *l, const struct curl_loop_ops *ops,
			  struct curl_loop **ret, struct px_error *err);
void curl_loop_bind(struct curl_loop *el, void *c);
void curl_loop_socket_hook(int fd, int what, void *ctx);
void curl_loop_timer_hook(long ms, void *ctx);

/* Tell the adapter the client made from cfg (before any call).  NULL
 * unbinds: an fd or timer event that still comes is then dropped instead
 * of reaching a client. */
void curl_loop_bind_ec2(struct curl_loop *el, struct ec2_client *c);
/* Stop watching what the client still had (nothing, after
 * ec2_client_free) and free.  NULL is a no-op. */
void curl_loop_free(struct curl_loop *el);

/* Fds watched now (for tests and the daemon's status). */
size_t curl_loop_fds(const struct curl_loop *el);
/* Hook requests the loop refused (loop_fd_add or loop_timer_add failing,
 * out of memory); each such call waits for curl's own timeout instead. */
uint64_t curl_loop_errors(const struct curl_loop *el);

#endif
