/* tests/src/store/store-test.h — helpers the store's Criterion tests share: a database path in
 * a fresh temporary folder and one integer read back with SQL. Header-only (each test is its
 * own executable). */
#ifndef TESTS_STORE_TEST_H
#define TESTS_STORE_TEST_H

#include <criterion/criterion.h>
#include <sqlite3.h>

#include "../../../src/store/store-private.h"

/* DIR/NAME in a new folder made from the template `dir_template` (…XXXXXX); the caller frees. */
static inline char *store_test_path(const char *dir_template, const char *name)
{
    g_autofree char *dir = g_dir_make_tmp(dir_template, NULL);
    cr_assert_not_null(dir);
    return g_build_filename(dir, name, NULL);
}

/* The first column of the first row `sql` gives, as an integer; the test fails without a row. */
static inline int64_t store_test_scalar(Store *s, const char *sql)
{
    sqlite3_stmt *st = NULL;
    cr_assert_eq(sqlite3_prepare_v2(store_db(s), sql, -1, &st, NULL), SQLITE_OK, "%s: %s", sql,
                 sqlite3_errmsg(store_db(s)));
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
    int64_t v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

#endif
