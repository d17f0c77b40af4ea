/* src/store/store-private.h — the inside of store.h, for the modules of src/store/ (and tests)
 * only: a Store's fields and its SQLite connection, and what store.c, store-run.c and
 * store-stage.c share. Nothing outside src/store/ speaks SQL; the rest of the program reads and
 * writes the database through src/store/'s functions.
 */
#ifndef SRC_STORE_PRIVATE_H
#define SRC_STORE_PRIVATE_H

#include <sqlite3.h>

#include "store-ops.h"
#include "store-stmt.h"
#include "store.h"

/* A writer's wait for another's write lock (store.c). */
typedef struct {
    gint64 start_us;    /* monotonic, when the wait began */
    gint64 progress_us; /* when the holder was last seen making progress */
    gint64 stamp;       /* the -wal file's size and mtime, folded */
    gulong pause_us;    /* the next sleep */
    bool told;          /* the notice was given */
    gint64 give_up_us;  /* without progress for this long, the wait fails (BUSY_TIMEOUT_MS;
                           tests shorten it) */
    gint64 notice_us;   /* the notice after this long (NOTICE_AFTER_US; tests shorten it) */
    uint64_t handler_calls; /* calls of the busy handler so far */
} StoreWait;

struct Store {
    sqlite3 *db;
    StoreWait wait;
    StoreNoticeFn notice; /* may be NULL */
    void *notice_data;
    char *path;
    bool readonly;
    bool keyed_ops; /* op_rows has the (run_id, n) key; false in files from before */
    bool per_rank;  /* RANKSIM_OPS_PER_RANK: simulated runs' rows in op_rows, one per rank */
    StoreStmts *stmts; /* the writes' statements, kept (store_stmts); NULL until one is */
};

/* The connection of `s` (owned by `s`, closed by store_close). */
sqlite3 *store_db(Store *s);

/* The connection's kept statements (store-stmt.h), made at the first call. */
StoreStmts *store_stmts(Store *s);

/* Sets STORE_ERROR_FAILED "PATH: what: SQLite's message"; returns false. */
bool store_sql_error(GError **error, const Store *s, const char *what);
/* Runs `sql` (several statements allowed), retried while the file is locked (up to the busy
 * timeout). False with STORE_ERROR_FAILED naming the statement. */
bool store_exec(Store *s, const char *sql, GError **error);

/* Now as ISO-8601 UTC (runs.created_at). Caller frees. */
char *store_now_iso8601(void);
/* A copy of the program's name table (`p` may be NULL: empty). Caller unrefs. */
GPtrArray *store_copy_names(const SchedProgram *p);
/* One run's transaction (store-run.c): BEGIN IMMEDIATE, or, inside a transaction already open
 * (a sweep's batch, store-sweep.h), SAVEPOINT store_run; *nested says which. End it with
 * _commit (COMMIT / RELEASE) or _rollback (ROLLBACK / ROLLBACK TO and RELEASE: only that
 * run's rows are undone). */
bool store_run_txn_begin(Store *s, bool *nested, GError **error);
bool store_run_txn_commit(Store *s, bool nested, GError **error);
void store_run_txn_rollback(Store *s, bool nested);
/* Writes everything of one run in one transaction (store-run.c): the run row from `info`,
 * `names`, the op rows of `src` (as shared time lines when `lines`), the outcome, `memory`
 * (may be NULL), the serving rows. Returns the run id, or -1 with `error` (rolled back). */
int64_t store_commit_run(Store *s, const StoreRunInfo *info, const char *created_at,
                         GPtrArray *names, const StoreRecordSource *src, StoreTimelines *lines,
                         const SchedOutcome *o, const ModelMemPlan *memory, const char *status,
                         int exit_code, double wall_ms, GError **error);

#endif
