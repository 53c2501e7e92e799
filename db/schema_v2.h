/* schema_v2.h -- schema version 1 to 2 (private to store.c): jobs for
 * proteusd (issue 10).
 *
 * - jobs: states are the daemon's (queued, running, done, failed,
 *   cancelled; v1's submitted and canceled are renamed), a job has a world
 *   (sim, local, ec2), and a trigger refuses every illegal state change:
 *   the transitions live here and nowhere else (docs/schema.md).
 * - allocations: an on-demand request has no market (market_id NULL); the
 *   instance type is kept on the row for spot and on-demand alike.
 * - instances: ctrl_id, the controller's id of the instance in its job,
 *   so that a restarted daemon can adopt what still runs.
 *
 * Tables are rebuilt the way SQLite documents (create, copy, drop,
 * rename) with foreign keys off for this step (store.c's migrate() turns
 * them off around the transaction and runs foreign_key_check before the
 * commit).
 */
#ifndef PX_SCHEMA_V2_H
#define PX_SCHEMA_V2_H

static const char store_schema_v2[] =
	"CREATE TABLE jobs_v2 (\n"
	"  id INTEGER PRIMARY KEY,\n"
	"  name TEXT NOT NULL CHECK (length(name) > 0),\n"
	"  spec TEXT NOT NULL\n"
	"    CONSTRAINT spec_is_json CHECK (json_valid(spec)),\n"
	"  state TEXT NOT NULL CHECK (state IN\n"
	"    ('queued', 'running', 'done', 'failed', 'cancelled')),\n"
	"  world TEXT NOT NULL DEFAULT 'sim'\n"
	"    CHECK (world IN ('sim', 'local', 'ec2')),\n"
	"  created_us INTEGER NOT NULL CHECK (created_us >= 0),\n"
	"  updated_us INTEGER NOT NULL CHECK (updated_us >= 0)\n"
	") STRICT;\n"
	"INSERT INTO jobs_v2 (id, name, spec, state, world, created_us,\n"
	"    updated_us)\n"
	"  SELECT id, name, spec, CASE state WHEN 'submitted' THEN 'queued'\n"
	"    WHEN 'canceled' THEN 'cancelled' ELSE state END, 'sim',\n"
	"    created_us, updated_us FROM jobs;\n"
	"DROP TABLE jobs;\n"
	"ALTER TABLE jobs_v2 RENAME TO jobs;\n"
	"CREATE TRIGGER jobs_state_legal BEFORE UPDATE OF state ON jobs\n"
	"  WHEN NOT (OLD.state = NEW.state\n"
	"    OR (OLD.state = 'queued' AND NEW.state IN\n"
	"        ('running', 'failed', 'cancelled'))\n"
	"    OR (OLD.state = 'running' AND NEW.state IN\n"
	"        ('done', 'failed', 'cancelled')))\n"
	"  BEGIN SELECT RAISE(ABORT, 'illegal job state change'); END;\n"
	"CREATE TRIGGER jobs_final_states BEFORE UPDATE OF state ON jobs\n"
	"  WHEN OLD.state IN ('done', 'failed', 'cancelled')\n"
	"  BEGIN SELECT RAISE(ABORT, 'a finished job keeps its state'); END;\n"
	"CREATE TABLE allocations_v2 (\n"
	"  id INTEGER PRIMARY KEY,\n"
	"  job_id INTEGER NOT NULL REFERENCES jobs(id),\n"
	"  market_id INTEGER REFERENCES markets(id),\n"
	"  type TEXT NOT NULL CHECK (length(type) > 0),\n"
	"  tier TEXT NOT NULL CHECK (tier IN ('reliable', 'transient')),\n"
	"  bid_uusd INTEGER NOT NULL CHECK (bid_uusd >= 0),\n"
	"  count INTEGER NOT NULL CHECK (count > 0),\n"
	"  at_us INTEGER NOT NULL CHECK (at_us >= 0)\n"
	") STRICT;\n"
	"INSERT INTO allocations_v2 (id, job_id, market_id, type, tier,\n"
	"    bid_uusd, count, at_us)\n"
	"  SELECT a.id, a.job_id, a.market_id, m.type, a.tier, a.bid_uusd,\n"
	"    a.count, a.at_us FROM allocations a\n"
	"    JOIN markets m ON m.id = a.market_id;\n"
	"DROP TABLE allocations;\n"
	"ALTER TABLE allocations_v2 RENAME TO allocations;\n"
	"CREATE INDEX allocations_job ON allocations (job_id);\n"
	"CREATE INDEX allocations_market ON allocations (market_id);\n"
	"ALTER TABLE instances ADD COLUMN ctrl_id INTEGER\n"
	"  CHECK (ctrl_id IS NULL OR ctrl_id > 0);\n";

#endif
