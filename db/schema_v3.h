/* schema_v3.h -- schema version 2 to 3 (private to store.c): what a
 * restarted daemon needs to reconcile EC2 (issue 24).
 *
 * - daemon: one row, the daemon's id (16 lower-case hex digits), made on
 *   first use and kept for the life of the database; it tags every EC2
 *   resource the daemon launches and is part of each ClientToken.
 * - ec2_requests: every launch request, recorded before it is sent (its
 *   ClientToken, job, controller id and what it asked for), then what
 *   became of it.  A trigger refuses every illegal state change, as for
 *   jobs: sent -> launched | rejected | closed, launched -> closed; a
 *   request's instance id, once known, never changes.
 *
 * Only new tables: nothing is rebuilt, old rows are untouched.
 */
#ifndef PX_SCHEMA_V3_H
#define PX_SCHEMA_V3_H

static const char store_schema_v3[] =
	"CREATE TABLE daemon (\n"
	"  one INTEGER PRIMARY KEY CHECK (one = 1),\n"
	"  daemon_id TEXT NOT NULL CONSTRAINT daemon_id_is_hex CHECK (\n"
	"    length(daemon_id) = 16 AND daemon_id NOT GLOB '*[^0-9a-f]*'),\n"
	"  created_us INTEGER NOT NULL CHECK (created_us >= 0)\n"
	") STRICT;\n"
	"CREATE TABLE ec2_requests (\n"
	"  client_token TEXT PRIMARY KEY CONSTRAINT token_is_ascii CHECK (\n"
	"    length(client_token) BETWEEN 1 AND 64\n"
	"    AND client_token NOT GLOB '*[^!-~]*'),\n"
	"  job_id INTEGER NOT NULL REFERENCES jobs(id),\n"
	"  ctrl_id INTEGER NOT NULL CHECK (ctrl_id > 0),\n"
	"  zone TEXT NOT NULL,\n"
	"  type TEXT NOT NULL CHECK (length(type) > 0),\n"
	"  reliable INTEGER NOT NULL CHECK (reliable IN (0, 1)),\n"
	"  bid_uusd INTEGER NOT NULL CHECK (bid_uusd >= 0),\n"
	"  created_us INTEGER NOT NULL CHECK (created_us >= 0),\n"
	"  instance_id TEXT CHECK (length(instance_id) > 0),\n"
	"  state TEXT NOT NULL CHECK (state IN\n"
	"    ('sent', 'launched', 'rejected', 'closed')),\n"
	"  updated_us INTEGER NOT NULL CHECK (updated_us >= 0),\n"
	"  CONSTRAINT launched_has_instance CHECK (\n"
	"    state <> 'launched' OR instance_id IS NOT NULL),\n"
	"  UNIQUE (job_id, ctrl_id)\n"
	") STRICT, WITHOUT ROWID;\n"
	"CREATE INDEX ec2_requests_state ON ec2_requests (state);\n"
	"CREATE TRIGGER ec2_requests_state_legal\n"
	"  BEFORE UPDATE OF state ON ec2_requests\n"
	"  WHEN NOT (OLD.state = NEW.state\n"
	"    OR (OLD.state = 'sent' AND NEW.state IN\n"
	"        ('launched', 'rejected', 'closed'))\n"
	"    OR (OLD.state = 'launched' AND NEW.state = 'closed'))\n"
	"  BEGIN SELECT RAISE(ABORT, 'illegal ec2 request state change');\n"
	"  END;\n"
	"CREATE TRIGGER ec2_requests_instance_kept\n"
	"  BEFORE UPDATE OF instance_id ON ec2_requests\n"
	"  WHEN OLD.instance_id IS NOT NULL\n"
	"    AND NEW.instance_id IS NOT OLD.instance_id\n"
	"  BEGIN SELECT RAISE(ABORT, 'a request keeps its instance id');\n"
	"  END;\n";

#endif
