/* fake.h -- start/stop tests/fake_ec2/fake_ec2.py (or tests/fake_s3) from a
 * Criterion test and talk to its control endpoint.  Test-only helpers
 * (test_ec2_fake.c). */
#ifndef PX_TEST_FAKE_H
#define PX_TEST_FAKE_H

#include <sys/types.h>

#include <jansson.h>

#include "../../cloudapi/ec2_api.h"

#define FAKE_AKID "AKIDEXAMPLE"
#define FAKE_SECRET "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"

struct fake {
	pid_t pid;
	int in_fd;   /* the fake's stdin: closing it stops the fake */
	int out_fd;  /* its stdout after "PORT n" (fake_start_args), or -1 */
	int port;
	char url[64];
};

/* Start the fake for API tests (asserts on failure): instances boot and
 * shut down at once and run nothing (--no-exec); it dies by itself after
 * 60 s. */
void fake_start(struct fake *f);
/* Start it with these options (NULL-terminated, after --timeout 60) and
 * keep its stdout for fake_finish. */
void fake_start_args(struct fake *f, const char *const *args);
/* Another fake of the same kind (script, relative to $PX_SRC, e.g.
 * tests/fake_s3/fake_s3.py): "--timeout 60" and args, "PORT n" read;
 * fake_get, fake_ctl and fake_stop work on it too. */
void fake_start_script(struct fake *f, const char *script,
		       const char *const *args);
void fake_stop(struct fake *f);
/* Stop it by closing its stdin and return the summary line it prints on
 * the way out ({"instances_launched", ...}); fake_start_args only. */
json_t *fake_finish(struct fake *f);
/* GET /_ctl?QUERY (e.g. "cmd=summary"): the reply, NUL-terminated (free
 * it); *status gets the HTTP status. */
char *fake_get(struct fake *f, const char *query, long *status);
/* The same, parsed as JSON (asserts a 200 and JSON). */
json_t *fake_get_json(struct fake *f, const char *query);
/* POST a JSON command to /_ctl; returns the state (json_decref it). */
json_t *fake_ctl(struct fake *f, const char *json);
/* A client on the fake with static keys and fast retries. */
struct ec2_client *fake_client(struct fake *f, const char *akid,
			       const char *secret, const char *token,
			       struct awscred_provider **ret_prov);
/* Count of fake state array key ("instances", "spot"). */
size_t fake_count(struct fake *f, const char *key);

#endif
