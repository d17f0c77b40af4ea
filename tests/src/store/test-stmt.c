/* tests/src/store/test-stmt.c — statements kept per connection (src/store/store-stmt.h): the
 * same text gives the same statement back, reset and with its bindings cleared; a text asked
 * for while it is out gets one of its own; nothing is left for sqlite3_close to refuse. */
#include <criterion/criterion.h>
#include <string.h>

#include "../../../src/store/store-stmt.h"

static sqlite3 *db;

static void open_db(void)
{
    cr_assert_eq(sqlite3_open(":memory:", &db), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(db, "CREATE TABLE t(a, b)", NULL, NULL, NULL), SQLITE_OK);
}

static void close_db(void)
{
    cr_assert_eq(sqlite3_close(db), SQLITE_OK, "a statement was left unfinalized");
}

TestSuite(stmt, .init = open_db, .fini = close_db);

static const char insert[] = "INSERT INTO t(a, b) VALUES (?, ?)";

static int64_t count(const char *where)
{
    g_autofree char *sql = g_strdup_printf("SELECT count(*) FROM t WHERE %s", where);
    sqlite3_stmt *st = NULL;
    cr_assert_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
    int64_t n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return n;
}

Test(stmt, kept_and_reset)
{
    StoreStmts *c = store_stmts_new(db);
    sqlite3_stmt *a = store_stmt_get(c, insert);
    cr_assert_not_null(a);
    sqlite3_bind_int(a, 1, 1);
    sqlite3_bind_int(a, 2, 2);
    cr_assert_eq(sqlite3_step(a), SQLITE_DONE);
    store_stmt_put(c, a);
    /* the text copied, not the pointer: an equal text built elsewhere finds it */
    g_autofree char *again = g_strdup(insert);
    sqlite3_stmt *b = store_stmt_get(c, again);
    cr_assert_eq(b, a, "the kept statement is given again");
    sqlite3_bind_int(b, 1, 3); /* b left unbound: cleared, so NULL, not the 2 of before */
    cr_assert_eq(sqlite3_step(b), SQLITE_DONE);
    store_stmt_put(c, b);
    cr_assert_eq(count("a = 1 AND b = 2"), 1);
    cr_assert_eq(count("a = 3 AND b IS NULL"), 1);
    store_stmts_free(c);
}

Test(stmt, nested_use_gets_its_own)
{
    StoreStmts *c = store_stmts_new(db);
    sqlite3_stmt *a = store_stmt_get(c, insert);
    sqlite3_stmt *b = store_stmt_get(c, insert);
    cr_assert_not_null(b);
    cr_assert_neq(a, b, "a statement out is not given twice");
    sqlite3_bind_int(a, 1, 10);
    sqlite3_bind_int(b, 1, 20);
    cr_assert_eq(sqlite3_step(a), SQLITE_DONE);
    cr_assert_eq(sqlite3_step(b), SQLITE_DONE);
    store_stmt_put(c, b); /* not kept: finalized */
    store_stmt_put(c, a);
    cr_assert_eq(store_stmt_get(c, insert), a, "the kept one comes back");
    store_stmt_put(c, a);
    cr_assert_eq(count("a IN (10, 20)"), 2);
    store_stmts_free(c);
}

Test(stmt, bad_text_gives_null)
{
    StoreStmts *c = store_stmts_new(db);
    cr_assert_null(store_stmt_get(c, "INSERT INTO nowhere(x) VALUES (?)"));
    cr_assert(strstr(sqlite3_errmsg(db), "nowhere"), "SQLite's message stays: %s",
              sqlite3_errmsg(db));
    store_stmt_put(c, NULL);
    /* out when freed: still finalized */
    cr_assert_not_null(store_stmt_get(c, insert));
    store_stmts_free(c);
    store_stmts_free(NULL);
}
