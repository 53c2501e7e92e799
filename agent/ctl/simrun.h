/* simrun.h -- what `proteusctl simulate` and `proteusctl plan` share:
 * reading the job (a spec or a daemon job file), the Spot Instance
 * Advisor snapshot it uses, runs of the simulator side by side, and one
 * region's spot and on-demand prices from the store into the structures
 * the simulator replays (simulate has them from trace files).
 */
#ifndef PX_SIMRUN_H
#define PX_SIMRUN_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "../../bidbrain/jobspec.h"
#include "../../cloudapi/market.h"
#include "../../cloudapi/ondemand.h"
#include "../../common/px.h"
#include "../../db/store.h"
#include "../world/sim.h"

/* Output helpers of both commands: a figure with printf format fmt
 * (e.g. "%.2f") in buf, or undef when it is not finite (never a printed
 * NaN or infinity); a JSON number, null when not finite; the last part of
 * a path. */
const char *simrun_fmt(char *buf, size_t len, const char *fmt, double x,
		       const char *undef) __attribute__((format(printf, 3, 0)));
json_t *simrun_jnum(double x);
/* o (taken; NULL: out of memory) printed to stdout, indented, reals to
 * 10 digits; what: for the error ("the results").  The exit code. */
int simrun_json_out(json_t *o, const char *what);
const char *simrun_base_name(const char *path);

/* Runs side by side, at most this many threads. */
#define SIMRUN_THREADS_MAX 64

/* Read the job file at path (bounded) and parse it, a daemon job file's
 * own keys dropped (said once on stderr, naming cmd); *ret_text is the
 * verbatim text (the caller frees it).  A job with a scaling_profile file
 * has it loaded (relative to path's folder). */
enum px_err simrun_read_job(const char *cmd, const char *path,
			    struct jobspec *job, char **ret_text,
			    struct px_error *err);

/* The snapshot a per-second run uses: opt (--spot-advisor) when not
 * NULL, else the job's spot_advisor (relative to job_path's folder),
 * else the shipped one for a run starting at start_s.  Into buf. */
enum px_err simrun_advisor_path(const char *opt, const char *job_path,
				const struct jobspec *job, int64_t start_s,
				char *buf, size_t len, struct px_error *err);

/* One run: policy on plan, its outcome in res, e and err. */
struct simrun {
	const struct sim_plan *plan;
	const struct policy_ops *policy;
	struct sim_result *res;
	enum px_err e;
	struct px_error err;
};

/* Run v[0..n) on threads threads (this one among them; a thread that
 * cannot start leaves its share to the others).  The runs share only
 * what does not change while they run (sim_run): results do not depend
 * on threads.  No plan of them may have a sink. */
void simrun_parallel(struct simrun *v, size_t n, int threads);

/* The threads for n runs: the online CPUs, at most SIMRUN_THREADS_MAX
 * and at most n (at least 1). */
int simrun_threads(size_t n);

/* ---- prices from the store ---- */

/* One stored market a job may use, and its stored range. */
struct simrun_market {
	int64_t id;
	char zone[STORE_NAME_MAX];
	char type[STORE_NAME_MAX];
	int64_t first_s, last_s, count;
};

#define SIMRUN_MARKETS_MAX 256

struct simrun_prices {
	struct simrun_market v[SIMRUN_MARKETS_MAX];
	size_t n;             /* markets with at least one record */
	bool more;            /* more than SIMRUN_MARKETS_MAX: not all kept */
	int64_t first_s;      /* the oldest record of them (INT64_MAX: none) */
	int64_t last_s;       /* the newest (INT64_MIN: none) */
	int64_t stored;       /* their records in the store */
	int64_t loaded;       /* records added to the market set */
};

/* The stored markets of region and product whose type is one of the
 * job's spot types (and zone one of its zones, when it names some),
 * with their ranges, into *ret. */
enum px_err simrun_store_markets(struct store *st, const struct jobspec *job,
				 const char *product,
				 struct simrun_prices *ret,
				 struct px_error *err);

/* The records of p's markets at or before to_s into ms (initialised by
 * the caller), which is sealed; p->loaded counts them. */
enum px_err simrun_store_load(struct store *st, struct simrun_prices *p,
			      int64_t to_s, struct market_set *ms,
			      struct px_error *err);

/* The on-demand prices of the job's types (reference, reliable and
 * spot), each from the store where it has one, else from file (NULL:
 * none), into *ret (the caller releases it).  *ret_from_store counts
 * those from the store.  PX_ENOENT naming the types neither has. */
enum px_err simrun_store_ondemand(struct store *st, const struct jobspec *job,
				  const struct ondemand_table *file,
				  struct ondemand_table *ret,
				  size_t *ret_from_store,
				  struct px_error *err);

#endif
