/* src/store.h — the SQLite results database (schema in doc/database.md).
 *
 * One database accumulates runs. A run is written in ONE transaction: BEGIN IMMEDIATE when it
 * starts, COMMIT when its outcome is known; a process killed in between leaves no row of that
 * run (SQLite rolls the journal back). While the engine runs, op records stream to a writer
 * thread (libuv) through a bounded queue of fixed-size chunks, so simulation and inserts overlap
 * and memory stays bounded whatever the run length. Names are stored once per run in `names`
 * and op rows carry integer ids; the contract tables `ops` and `collectives` are views.
 *
 * Concurrency: WAL mode and a long busy timeout (5 minutes), so concurrent runs into one file
 * queue for the write lock instead of failing or losing rows. Errors are GErrors in STORE_ERROR
 * naming the database path and SQLite's message.
 */
#ifndef SRC_STORE_H
#define SRC_STORE_H

#include <glib.h>
#include <stdint.h>

#include "../model/memory.h"
#include "../sched/engine.h"

#define STORE_ERROR (store_error_quark())
GQuark store_error_quark(void);

/* Schema version kept in PRAGMA user_version. */
#define STORE_SCHEMA_VERSION 2

typedef struct Store Store;
typedef struct StoreRun StoreRun;

typedef struct {
    const char *name;
    const char *kind;     /* "program", later "model" */
    const char *path;     /* scenario path, may be NULL */
    const char *scenario; /* full scenario text, may be NULL */
    const char *timeline; /* "full", "collectives", "none" */
    const char *hardware; /* one-line fabric description, may be NULL */
} StoreRunInfo;

/* Opens (creating the file, its folder and the schema if needed) the database at `path`.
 * Returns NULL and sets `error` on failure, e.g. a database from a newer ranksim. */
Store *store_open(const char *path, GError **error);
void store_close(Store *s);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(Store, store_close)
const char *store_path(const Store *s);

/* Starts a run: opens its transaction, inserts the run row and the program's names, and starts
 * the writer thread. `p` may be NULL (no names). Returns NULL on failure. */
StoreRun *store_run_begin(Store *s, const StoreRunInfo *info, const SchedProgram *p,
                          GError **error);
/* A SchedRecordFn: queues one record for the writer thread. Blocks only while the bounded
 * queue is full. `run` is the StoreRun. */
void store_run_record(void *run, const SchedRecord *rec);
/* Drains the writer, inserts groups, ranks and diagnostics, completes the run row and commits.
 * Returns the run id, or -1 with `error` set (the transaction is rolled back then). Frees `r`
 * either way. */
int64_t store_run_finish(StoreRun *r, const SchedOutcome *o, const char *status, int exit_code,
                         double wall_ms, GError **error);
/* Attaches a memory plan (borrowed until store_run_finish) whose per-rank components and items
 * are written into `memory` and `memory_items` with the run. */
void store_run_set_memory(StoreRun *r, const ModelMemPlan *m);
/* Rolls the run back and frees it. */
void store_run_abort(StoreRun *r);
/* The id the run will have once committed. */
int64_t store_run_id(const StoreRun *r);

/* Records a run whose scenario was rejected: status 'invalid', exit code 2, and one `config`
 * diagnostic holding `message`. Returns the run id or -1 with `error` set. */
int64_t store_insert_invalid(Store *s, const StoreRunInfo *info, const char *message,
                             GError **error);

/* For tools and tests: the raw connection. */
struct sqlite3 *store_db(Store *s);

#endif
