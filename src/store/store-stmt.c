/* src/store/store-stmt.c — statements prepared once per connection; see store-stmt.h. */
#include "store-stmt.h"

typedef struct {
    sqlite3_stmt *st;
    bool out; /* given by store_stmt_get, not yet put back */
} Kept;

struct StoreStmts {
    sqlite3 *db;
    GHashTable *kept;    /* SQL text (owned) -> Kept */
    GHashTable *by_stmt; /* sqlite3_stmt -> its Kept (borrowed) */
};

static void kept_free(gpointer p)
{
    Kept *k = p;
    sqlite3_finalize(k->st);
    g_free(k);
}

StoreStmts *store_stmts_new(sqlite3 *db)
{
    StoreStmts *c = g_new0(StoreStmts, 1);
    c->db = db;
    c->kept = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, kept_free);
    c->by_stmt = g_hash_table_new(g_direct_hash, g_direct_equal);
    return c;
}

void store_stmts_free(StoreStmts *c)
{
    if (!c)
        return;
    g_hash_table_destroy(c->by_stmt);
    g_hash_table_destroy(c->kept);
    g_free(c);
}

static sqlite3_stmt *prepare(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &st, NULL) != SQLITE_OK) {
        sqlite3_finalize(st);
        return NULL;
    }
    return st;
}

sqlite3_stmt *store_stmt_get(StoreStmts *c, const char *sql)
{
    Kept *k = g_hash_table_lookup(c->kept, sql);
    if (k && !k->out) {
        k->out = true;
        return k->st;
    }
    sqlite3_stmt *st = prepare(c->db, sql);
    if (st && !k) {
        k = g_new0(Kept, 1);
        k->st = st;
        k->out = true;
        g_hash_table_insert(c->kept, g_strdup(sql), k);
        g_hash_table_insert(c->by_stmt, st, k);
    }
    return st; /* nested use: not kept, finalized by store_stmt_put */
}

void store_stmt_put(StoreStmts *c, sqlite3_stmt *st)
{
    if (!st)
        return;
    Kept *k = g_hash_table_lookup(c->by_stmt, st);
    if (!k) {
        sqlite3_finalize(st);
        return;
    }
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    k->out = false;
}
