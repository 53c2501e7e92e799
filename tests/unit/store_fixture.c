/* store_fixture.c -- the store tests' fixture: a temporary folder and a
 * database path per test, the store opened asserted (store_fixture.h). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "store_fixture.h"

char db_dir[64];
char db_path[128];

void db_setup(void)
{
	snprintf(db_dir, sizeof(db_dir), "/tmp/px_store_XXXXXX");
	cr_assert_not_null(mkdtemp(db_dir));
	snprintf(db_path, sizeof(db_path), "%s/px.db", db_dir);
}

void db_teardown(void)
{
	static const char *const sfx[] = {"", "-wal", "-shm", "-journal"};
	char p[160];

	for (size_t i = 0; i < sizeof(sfx) / sizeof(sfx[0]); i++) {
		snprintf(p, sizeof(p), "%s%s", db_path, sfx[i]);
		unlink(p);
	}
	rmdir(db_dir);
}

struct store *db_open(const char *path)
{
	struct px_error err = {0};
	struct store *st = NULL;

	cr_assert_eq(store_open(path, &st, &err), PX_OK, "open '%s': %s",
		     path, err.msg);
	cr_assert_not_null(st);
	return st;
}

struct store *db_open_ro(const char *path)
{
	struct px_error err = {0};
	struct store *st = NULL;

	cr_assert_eq(store_open_readonly(path, &st, &err), PX_OK,
		     "open '%s' read-only: %s", path, err.msg);
	cr_assert_not_null(st);
	return st;
}
