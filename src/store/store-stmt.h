/* src/store/store-stmt.h — statements prepared once per connection (src/store/ only).
 *
 * A sweep stores runs by the thousand, each with the same dozen INSERTs: preparing them again
 * for every run was a quarter of the writer thread's time on the README's 204-variant sweep
 * (perf), time the single writer cannot share with the workers. A statement asked for here is
 * prepared the first time its text is seen and kept, reset, until the connection closes.
 */
#ifndef SRC_STORE_STMT_H
#define SRC_STORE_STMT_H

#include <glib.h>
#include <sqlite3.h>
#include <stdbool.h>

typedef struct StoreStmts StoreStmts;

StoreStmts *store_stmts_new(sqlite3 *db);
/* Finalizes every kept statement (before sqlite3_close). NULL is a no-op. */
void store_stmts_free(StoreStmts *c);

/* The statement of `sql` (one statement), ready to bind: the kept one, or prepared now. NULL
 * when SQLite cannot prepare it (its message is the connection's). Give it back with
 * store_stmt_put; a text asked for again before that (nested use) gets a statement of its own,
 * finalized when given back. */
sqlite3_stmt *store_stmt_get(StoreStmts *c, const char *sql);
/* Gives `st` back (NULL: nothing): reset, its bindings cleared, kept for the next run. */
void store_stmt_put(StoreStmts *c, sqlite3_stmt *st);

#endif
