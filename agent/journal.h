/* journal.h -- the controller's events as store rows, for `simulate --db`
 * and for proteusd's jobs alike (docs/schema.md, "What each event kind
 * stores").
 *
 *   decide-acquire  an allocation (market or on-demand, tier, bid, count)
 *                   and a "decision" event
 *   launch          an instance of the pending allocation (or one of its
 *                   own, for a launch no decision asked for: a replaced
 *                   reliable instance), with the controller's id
 *   release,        the instance ended (released / evicted), its event and
 *   eviction        one ledger line with the charge over its life
 *   others          an event row each, tied to the instance when there is
 *                   one
 * Every row of one controller event is written inside the caller's
 * transaction; nothing here begins or commits.
 */
#ifndef PX_JOURNAL_H
#define PX_JOURNAL_H

#include <stdint.h>

#include "../common/px.h"
#include "../db/store.h"
#include "controller.h"

/* The world's name for instance ctrl_id (e.g. "local-4242", "i-0ab..."):
 * writes at most len bytes to buf; NULL: "<world>-<ctrl_id>". */
typedef void (*journal_cloud_id_fn)(void *ctx, uint64_t ctrl_id, char *buf,
				    size_t len);

struct journal_setup {
	struct store *st;
	int64_t job_id;
	const char *region;       /* of the job's markets */
	const char *product;      /* e.g. "Linux/UNIX" */
	const char *world;        /* the world's name (world.h): default
				   * ids, WORLD-N; required */
	journal_cloud_id_fn cloud_id;
	void *ctx;
};

struct journal;

enum px_err journal_new(const struct journal_setup *s, struct journal **ret,
			struct px_error *err);
void journal_free(struct journal *j);
/* Write the rows of one controller event. */
enum px_err journal_event(struct journal *j, const struct ctrl_event *ev,
			  struct px_error *err);
/* The store's instance id of the controller's ctrl_id (0: none yet). */
int64_t journal_instance(const struct journal *j, uint64_t ctrl_id);

#endif
