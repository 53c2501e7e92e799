/* ec2_world.h -- the `ec2` world: instances are EC2 instances rented
 * through the Query API (cloudapi/ec2_api.h), driven asynchronously on
 * proteusd's loop.
 *
 * One client per daemon (struct world_host's ec2 state) serves every job's
 * world.  A job's world:
 *   acquire   records the request in the store (its ClientToken, derived
 *             from the daemon's id, the job and the controller's id), then
 *             RunInstances (spot with the controller's max price, or
 *             on-demand), tagged with the daemon, the job and the id; the
 *             answer becomes ctrl_launched at EC2's launch time, or
 *             ctrl_rejected (capacity, price, limits, throttling, 5xx: the
 *             market cools down; a refusal that no retry can fix, such as
 *             a bad AMI or credentials, fails the job instead);
 *   release   the node is told to leave, and its instance terminated
 *             release_ms later (at once once the run ends), by the host,
 *             which retries until EC2 confirms;
 *   watch     DescribeInstances of the job's tag every few seconds: an
 *             instance terminated by EC2 is gone (ctrl_gone at EC2's
 *             time), one whose node never joined is failed; live prices
 *             from DescribeSpotPriceHistory every ec2_price_poll_s grow the
 *             job's market (market_set_append);
 *   restart   (setup.resume) the instances that carry the job's tag are
 *             adopted (ctrl_adopt), the store's open ones EC2 no longer
 *             has are closed at EC2's time, and the controller's ids go on
 *             past every id the job used.
 * docs/ec2-world.md has the whole of it.
 */
#ifndef PX_WORLD_EC2_WORLD_H
#define PX_WORLD_EC2_WORLD_H

#include "../config.h"
#include "../../cloudapi/market.h"
#include "../world.h"

extern const struct world_ops ec2_world_ops;

/* The ec2 world's clock under cfg: market (Unix) seconds now, real time
 * unless the fake's speed-up is configured (ec2_clock_speedup). */
int64_t ec2_world_now(const struct proteusd_config *cfg);

/* At the daemon's start: terminate every instance tagged with this
 * daemon whose job the store does not have queued or running (a job that
 * ended while the daemon was down, or unknown).  Asynchronous; starts
 * the host's client.  PX_OK when there is nothing to do. */
enum px_err ec2_world_sweep(struct world_host *wh, struct px_error *err);
/* Free the host's ec2 state (after every world of it is freed). */
void ec2_world_host_free(struct world_host *wh);

/* The job's markets from EC2 (the world's load_market): the spot-price
 * history of (types x zones; no zones: the zones of ec2_subnets) in
 * region over the last 7 days, into *ms (records added, not sealed);
 * *ret_now_s the world's clock now, *ret_last_s the end of an ec2 job's
 * window (ten years on: open-ended).  A client of its own, blocking (for
 * a job's load thread).  PX_EAWS/PX_EHTTP with EC2's message. */
enum px_err ec2_world_market_history(const struct proteusd_config *cfg,
				     const char *region,
				     const char *const *types, size_t n_types,
				     const char *const *zones, size_t n_zones,
				     struct market_set *ms, int64_t *ret_now_s,
				     int64_t *ret_last_s, struct px_error *err);

struct config_diag;

/* Whether the ec2 world can run with c: every key it needs is set and
 * the keys agree (each subnet's zone in the region; a clock speed-up or
 * origin only against an endpoint other than AWS's), head_address is an
 * address of this host or a name that resolves to one
 * (config_head_bind), ec2_identity_cert is a PEM certificate this
 * process reads.  config_ec2_problems adds each problem to d, naming
 * the key and what is wrong ("ec2_ami is not set: the ec2 world needs
 * the image its instances boot"), and returns how many;
 * config_ec2_check is PX_EINVAL with all of them in err, "; " between.
 * The values themselves were checked when the file was read.  proteusd
 * calls it at start when world is ec2 (and --check-config: the world's
 * config_problems hook), and for a job that names ec2 (its check hook). */
size_t config_ec2_problems(const struct proteusd_config *c,
			   struct config_diag *d);
enum px_err config_ec2_check(const struct proteusd_config *c,
			     struct px_error *err);

/* The ec2 world's rules on a spec that names it (world_ops.spec_check):
 * its market is EC2's, now, so no trace, speedup or start. */
struct job_world;
enum px_err ec2_world_spec_check(const struct job_world *w, const char *file,
				 struct px_error *err);

#endif
