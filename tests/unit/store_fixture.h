/* store_fixture.h -- the store tests' fixture (test_store.c,
 * test_store_ec2.c, test_store_read.c, test_store_counts.c): a fresh
 * temporary folder per test with a database path in it (the file not
 * made: the test opens it), removed after with the database's -wal,
 * -shm and -journal; and the store opened, read-write or read-only,
 * with the open asserted.  Each test runs in its own process
 * (Criterion), so one pair of globals serves every suite. */
#ifndef PX_TESTS_STORE_FIXTURE_H
#define PX_TESTS_STORE_FIXTURE_H

#include "../../db/store.h"

extern char db_dir[64];    /* the test's folder */
extern char db_path[128];  /* <db_dir>/px.db */

/* The suites' .init and .fini. */
void db_setup(void);
void db_teardown(void);
/* store_open / store_open_readonly of path, asserted PX_OK. */
struct store *db_open(const char *path);
struct store *db_open_ro(const char *path);

#endif
